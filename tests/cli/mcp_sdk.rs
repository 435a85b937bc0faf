//! `cairn mcp` with the official MCP Python SDK as its client (`mcp`, pinned in
//! tests/mcp-sdk/requirements.txt; tests/mcp-sdk/client.py): started over stdio in a project
//! folder that is not the knowledge repository, which is found as the person's default. The
//! client lists the tools (and the read tools' read-only annotation), remembers and recalls (the
//! caution first in `structuredContent`, the remembered text found), gets an empty `remember`'s
//! error naming `text`, and reads MEMORY.md as a resource.
//!
//! It needs python3 with that package: `.ci/run` installs it and sets
//! `CAIRN_MCP_SDK_TESTS=required`, under which its absence fails the test; without that
//! variable the test says on stderr that it did not run, and why.

use std::path::Path;

use crate::support::*;

#[test]
fn the_official_python_sdk_uses_cairn_mcp_from_a_project_folder() {
    let install = "run `pip install -r tests/mcp-sdk/requirements.txt`, as .ci/run does";
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_sdk {
        let required = std::env::var_os("CAIRN_MCP_SDK_TESTS").is_some_and(|v| v == "required");
        assert!(!required, "python3 cannot import mcp: {install}");
        eprintln!("the MCP SDK test did NOT run: python3 cannot import mcp; to run it, {install}");
        return;
    }
    let (env, repo) = Env::repo();
    env.cairn(&["config", "set", "repo", repo.to_str().unwrap()])
        .code(0);
    let project = env.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q"]);
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-sdk/client.py");
    let out = env
        .command("python3", &project)
        .arg(&client)
        .arg(BIN)
        .arg(&project)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK client failed:\n{stdout}\n{stderr}"
    );
    let seen: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(seen["server"], "cairn", "{seen}");
    assert_eq!(seen["recall_keys"][0], "caution", "{seen}");
    // What the client stored went into the default repository, not the project folder.
    assert!(!project.join("cairn.toml").exists());
    let day = std::fs::read_dir(repo.join("vault/observations"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(day.contains("retries webhooks three times"), "{day}");
}
