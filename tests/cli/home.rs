//! One knowledge repository from every folder (issue 31, items 4 and 8): the default
//! repository in the person's `config.toml` (ADR 86), `cairn mcp install|uninstall`, and the
//! agents' hooks and registrations running cairn by its absolute path (ADR 87).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{BIN, Env};

/// A code project (a git work tree, no cairn.toml) and a knowledge repository at `<tmp>/kb`.
fn project_and_kb() -> (Env, PathBuf, PathBuf) {
    let env = Env::new();
    let kb = env.path().join("kb");
    env.cairn(&["init", kb.to_str().unwrap()]).code(0);
    let project = env.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q", "."]);
    (env, project, kb)
}

fn config_file(env: &Env) -> PathBuf {
    env.home().join(".config/cairn/config.toml")
}

// Issue 31 item 4: in a code project's folder every command failed "not inside a cairn
// repository" and suggested `cairn init` there; with `repo` set, the default serves.
#[test]
fn the_default_repository_serves_a_project_folder() {
    let (env, project, kb) = project_and_kb();
    let out = env
        .cairn_in(&project, &["slog", "deploy", "api", "from the project"])
        .code(2);
    assert!(
        out.stderr.contains("cairn config set repo DIR"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("`cairn init` here"), "{}", out.stderr);

    env.cairn_in(&project, &["config", "get", "repo"]).code(1);
    env.cairn_in(&project, &["config", "set", "repo", "../kb"])
        .code(0);
    assert_eq!(
        std::fs::read_to_string(config_file(&env)).unwrap(),
        format!("repo = {:?}\n", kb.to_str().unwrap())
    );
    let got = env
        .cairn_in(&project, &["config", "get", "repo", "--json"])
        .code(0);
    assert_eq!(got.data()["value"], json!(kb));

    env.cairn_in(&project, &["slog", "deploy", "api", "from the project"])
        .code(0);
    let log = env.git(&kb, &["log", "-1", "--format=%s"]);
    assert!(log.contains("slog"), "{log}");
    assert!(!project.join("cairn.toml").exists());
    assert!(!project.join("slog").exists());

    // Inside another knowledge repository, that one; --repo and CAIRN_REPO before both.
    let other = env.path().join("other");
    env.cairn(&["init", other.to_str().unwrap()]).code(0);
    let status = |cwd: &Path, extra: &[(&str, &Path)], args: &[&str]| -> Value {
        let mut cmd = env.command(BIN, cwd);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let out = cmd.args(args).args(["status", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["data"]["root"].clone()
    };
    assert_eq!(status(&project, &[], &[]), json!(kb));
    assert_eq!(status(&other, &[], &[]), json!(other));
    assert_eq!(
        status(&project, &[("CAIRN_REPO", &other)], &[]),
        json!(other)
    );
    assert_eq!(
        status(
            &project,
            &[("CAIRN_REPO", &other)],
            &["--repo", kb.to_str().unwrap()]
        ),
        json!(kb)
    );

    // XDG_CONFIG_HOME is where the file is when set.
    let xdg = env.path().join("xdg");
    assert_eq!(
        status(&other, &[("XDG_CONFIG_HOME", &xdg)], &[]),
        json!(other)
    );
    let out = env
        .command(BIN, &project)
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "no config.toml under XDG_CONFIG_HOME"
    );

    env.cairn_in(&project, &["config", "unset", "repo"]).code(0);
    env.cairn_in(&project, &["status"]).code(2);
}

#[test]
fn init_default_makes_the_repository_the_default() {
    let env = Env::new();
    let kb = env.path().join("kb");
    // Without a default, init says how to set one.
    let out = env.cairn(&["init", "first", "--json"]).code(0);
    let next = out.json()["next"].to_string();
    assert!(next.contains("cairn config set repo"), "{next}");
    let out = env.cairn(&["init", "kb", "--default", "--json"]).code(0);
    assert_eq!(out.data()["default"], json!(config_file(&env)));
    let got = env.cairn(&["config", "get", "repo"]).code(0);
    assert_eq!(got.stdout.trim(), kb.to_str().unwrap());
}

#[test]
fn config_refuses_what_it_cannot_use_and_names_the_line() {
    let (env, project, kb) = project_and_kb();
    // Not a repository: exit 2, nothing written.
    let out = env
        .cairn_in(&project, &["config", "set", "repo", "."])
        .code(2);
    assert!(
        out.stderr.contains("is not a cairn repository"),
        "{}",
        out.stderr
    );
    assert!(!config_file(&env).exists());
    env.cairn(&["config", "set", "colour", "x"]).code(2);
    // A person's comments and other keys keep their bytes.
    std::fs::create_dir_all(config_file(&env).parent().unwrap()).unwrap();
    std::fs::write(config_file(&env), "# mine\nrepo = \"/old\"\nfuture = 1\n").unwrap();
    env.cairn(&["config", "set", "repo", "kb"]).code(0);
    assert_eq!(
        std::fs::read_to_string(config_file(&env)).unwrap(),
        format!("# mine\nrepo = {:?}\nfuture = 1\n", kb.to_str().unwrap())
    );
    // A default that is gone, a file that is not TOML: the file named, exit 2.
    std::fs::write(config_file(&env), "# mine\nrepo = \"/nowhere/kb\"\n").unwrap();
    let out = env.cairn_in(&project, &["status"]).code(2);
    assert!(out.stderr.contains("/nowhere/kb"), "{}", out.stderr);
    assert!(out.stderr.contains("config.toml"), "{}", out.stderr);
    std::fs::write(config_file(&env), "# mine\nrepo = [\n").unwrap();
    let out = env.cairn_in(&project, &["status"]).code(2);
    assert!(out.stderr.contains("config.toml:2"), "{}", out.stderr);
    // ... which a command told its repository never reads.
    env.cairn_in(&project, &["--repo", kb.to_str().unwrap(), "status"])
        .code(0);
}

/// Sends `initialize` and `tools/list` to the server `command` started in `cwd` with a PATH
/// of system folders only; the names of the tools it lists.
fn tools_listed(env: &Env, cwd: &Path, command: &str, args: &[String]) -> Vec<String> {
    let mut child = env
        .command(command, cwd)
        .env("PATH", "/usr/bin:/bin")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    stdin.flush().unwrap();
    let mut names = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["id"] == 1 {
            for t in v["result"]["tools"].as_array().unwrap() {
                names.push(t["name"].as_str().unwrap().to_string());
            }
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    names
}

// Issue 31 item 4: an agent starts the server in the project's folder, where `cairn mcp`
// found no repository; what install registers serves from there, with no cairn on PATH.
#[test]
fn mcp_install_registers_a_server_that_starts_in_a_project_folder() {
    let (env, project, kb) = project_and_kb();
    let claude = env.home().join(".claude.json");
    let before = "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n      \"command\": \"x\",\n      \"args\": [],\n      \"env\": {}\n    }\n  }\n}";
    std::fs::write(&claude, before).unwrap();
    let codex_home = env.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let codex = codex_home.join("config.toml");
    let codex_before = "model = \"gpt-5\"\n# mine\n[projects.\"/x\"]\ntrust_level = \"trusted\"";
    std::fs::write(&codex, codex_before).unwrap();
    let kb_arg = kb.to_str().unwrap();

    let run = |args: &[&str]| {
        let out = env
            .command(BIN, &project)
            .env("PATH", "/usr/bin:/bin")
            .env("CODEX_HOME", &codex_home)
            .arg("--repo")
            .arg(kb_arg)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["data"].clone()
    };
    let data = run(&["mcp", "install", "--agent", "claude-code"]);
    assert_eq!(data["file"], json!(claude));
    let data = run(&["mcp", "install", "--agent", "codex"]);
    assert_eq!(data["file"], json!(codex));
    let line: Vec<String> = serde_json::from_value(data["command"].clone()).unwrap();
    assert_eq!(line[0], BIN, "the binary by its absolute path");
    assert_eq!(
        line[1..],
        ["--repo".to_string(), kb_arg.to_string(), "mcp".to_string()]
    );

    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    let entry = &settings["mcpServers"]["cairn"];
    assert_eq!(entry["type"], "stdio");
    assert_eq!(settings["mcpServers"]["other"]["command"], "x");
    assert_eq!(settings["numStartups"], 3);
    let args: Vec<String> = serde_json::from_value(entry["args"].clone()).unwrap();
    let tools = tools_listed(&env, &project, entry["command"].as_str().unwrap(), &args);
    assert!(tools.contains(&"recall".to_string()), "{tools:?}");
    let table: toml::Table = toml::from_str(&std::fs::read_to_string(&codex).unwrap()).unwrap();
    let server = &table["mcp_servers"]["cairn"];
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let tools = tools_listed(&env, &project, server["command"].as_str().unwrap(), &args);
    assert!(tools.contains(&"brief".to_string()), "{tools:?}");

    // Again: nothing changes.
    assert_eq!(
        run(&["mcp", "install", "--agent", "codex"])["changed"],
        false
    );
    // Uninstall gives each file back byte for byte.
    run(&["mcp", "uninstall", "--agent", "claude-code"]);
    run(&["mcp", "uninstall", "--agent", "codex"]);
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), codex_before);
    // pi has no MCP client: said, exit 2.
    let out = env
        .cairn_in(
            &project,
            &["--repo", kb_arg, "mcp", "install", "--agent", "pi"],
        )
        .code(2);
    assert!(out.stderr.contains("no MCP client"), "{}", out.stderr);
}

// The README's `claude mcp add cairn -- cairn mcp`, run in a project folder: with the
// default set, `cairn mcp` started there serves it.
#[test]
fn cairn_mcp_in_a_project_folder_serves_the_default() {
    let (env, project, _kb) = project_and_kb();
    env.cairn(&["config", "set", "repo", "kb"]).code(0);
    let tools = tools_listed(&env, &project, BIN, &["mcp".to_string()]);
    assert!(tools.contains(&"recall".to_string()), "{tools:?}");
}

/// The command of `event` in an installed settings.json.
fn installed_command(settings: &Path, event: &str) -> String {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(settings).unwrap()).unwrap();
    v["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string()
}

// Issue 31 item 8: the hooks ran `cairn` from PATH, and an agent whose PATH lacked it printed
// `/bin/sh: cairn: not found` and went on with nothing briefed or ingested.
#[test]
fn agent_hooks_run_with_no_cairn_on_path() {
    let (env, project, kb) = project_and_kb();
    env.cairn(&[
        "memory",
        "add",
        "--repo",
        kb.to_str().unwrap(),
        "--section",
        "operations",
        "Deploys go through the blue pipeline",
    ])
    .code(0);
    env.cairn(&["config", "set", "repo", "kb"]).code(0);
    // Installed from the project folder by a cairn run by its path, with no cairn on PATH.
    let out = env
        .command(BIN, &project)
        .env("PATH", "/usr/bin:/bin")
        .args(["hooks", "install", "--agent", "claude-code"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let command = installed_command(&project.join(".claude/settings.json"), "SessionStart");
    // The agent runs it through /bin/sh, in the project, with its own PATH.
    let mut child = env
        .command("/bin/sh", &project)
        .env("PATH", "/usr/bin:/bin")
        .args(["-c", &command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = json!({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup",
                       "cwd": project, "transcript_path": null});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("not found"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("blue pipeline"), "{context}");
    assert!(command.starts_with(BIN), "{command}");
}

// Issue 31 item 8: a binary moved after install is named by doctor, with the file that holds
// its path and the install to run again.
#[test]
fn doctor_names_a_hook_whose_binary_moved() {
    let (env, project, kb) = project_and_kb();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let moved = bin.join("cairn");
    std::fs::copy(BIN, &moved).unwrap();
    let kb_arg = kb.to_str().unwrap();
    for args in [
        &["hooks", "install", "--agent", "codex", "--global"][..],
        &["mcp", "install", "--agent", "claude-code"][..],
    ] {
        let out = env
            .command(moved.to_str().unwrap(), &project)
            .env("PATH", "/usr/bin:/bin")
            .arg("--repo")
            .arg(kb_arg)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    env.cairn_in(&project, &["--repo", kb_arg, "doctor"])
        .code(0);
    std::fs::remove_file(&moved).unwrap();
    let out = env
        .cairn_in(&project, &["--repo", kb_arg, "doctor", "--json"])
        .code(1);
    let findings = out.data()["findings"].as_array().unwrap().clone();
    let hooks = env.home().join(".codex/hooks.json");
    let claude = env.home().join(".claude.json");
    for (file, fix) in [
        (&hooks, "cairn hooks install --agent codex --global"),
        (&claude, "cairn mcp install --agent claude-code --global"),
    ] {
        let f = findings
            .iter()
            .find(|f| f["path"] == json!(file))
            .unwrap_or_else(|| panic!("{} in {findings:?}", file.display()));
        let problem = f["problem"].as_str().unwrap();
        assert!(problem.contains(moved.to_str().unwrap()), "{problem}");
        assert!(problem.contains(fix), "{problem}");
        assert_eq!(f["repaired"], false);
    }
}

#[test]
fn mcp_install_in_a_project_writes_its_mcp_json_and_uninstall_removes_it() {
    let (env, project, kb) = project_and_kb();
    let kb_arg = kb.to_str().unwrap();
    let out = env
        .cairn_in(
            &project,
            &[
                "--repo",
                kb_arg,
                "mcp",
                "install",
                "--agent",
                "claude-code",
                "--project",
                ".",
                "--json",
            ],
        )
        .code(0);
    let file = project.canonicalize().unwrap().join(".mcp.json");
    assert_eq!(out.data()["file"], json!(file));
    assert_eq!(out.data()["scope"], "project");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["cairn"]["command"], BIN);
    env.cairn_in(
        &project,
        &[
            "mcp",
            "uninstall",
            "--agent",
            "claude-code",
            "--project",
            ".",
        ],
    )
    .code(0);
    assert!(!file.exists());
    // Codex: the project's .codex/config.toml, made and then removed with its folder.
    let out = env
        .cairn_in(
            &project,
            &[
                "--repo",
                kb_arg,
                "mcp",
                "install",
                "--agent",
                "codex",
                "--project",
                ".",
                "--json",
            ],
        )
        .code(0);
    let codex = project.canonicalize().unwrap().join(".codex/config.toml");
    assert_eq!(out.data()["file"], json!(codex));
    assert!(
        std::fs::read_to_string(&codex)
            .unwrap()
            .starts_with("[mcp_servers.cairn]\n")
    );
    env.cairn_in(
        &project,
        &["mcp", "uninstall", "--agent", "codex", "--project", "."],
    )
    .code(0);
    assert!(!project.join(".codex").exists());
    // A server of that name the person wrote is theirs: refused, the file untouched.
    let theirs = "{\"mcpServers\": {\"cairn\": {\"command\": \"cairn\", \"args\": [\"mcp\"]}}}\n";
    std::fs::write(&file, theirs).unwrap();
    let out = env
        .cairn_in(
            &project,
            &[
                "--repo",
                kb_arg,
                "mcp",
                "install",
                "--agent",
                "claude-code",
                "--project",
                ".",
            ],
        )
        .code(2);
    assert!(
        out.stderr.contains("claude mcp remove cairn"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
}

// Issue 31 item 8, for pi: the extension ran `spawnSync("cairn", …)`, which fails where PATH
// has no cairn. Run by node (the extension is plain JavaScript inside) with a PATH holding only
// node, every handler it registered is called; one of them hands pi the briefing.
#[test]
fn the_pi_extension_briefs_with_no_cairn_on_path() {
    let Some(node) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("node"))
            .find(|n| n.is_file())
    }) else {
        eprintln!("node is not installed: the pi extension is not run here");
        return;
    };
    let node_dir = node.parent().unwrap().to_path_buf();
    if node_dir.join("cairn").exists() {
        eprintln!("cairn is beside node: this test needs a PATH without it");
        return;
    }
    let (env, project, kb) = project_and_kb();
    env.cairn(&[
        "--repo",
        kb.to_str().unwrap(),
        "memory",
        "add",
        "--section",
        "operations",
        "Releases wait for the amber light",
    ])
    .code(0);
    env.cairn(&["config", "set", "repo", "kb"]).code(0);
    let out = env
        .command(BIN, &project)
        .env("PATH", "/usr/bin:/bin")
        .args(["hooks", "install", "--agent", "pi"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let module = env.path().join("cairn-extension.mjs");
    std::fs::copy(project.join(".pi/extensions/cairn.ts"), &module).unwrap();
    let driver = format!(
        r#"const ext = (await import({module})).default;
const handlers = {{}};
ext({{ on: (name, fn) => {{ handlers[name] = fn; }} }});
const ctx = {{ cwd: {cwd}, sessionManager: {{ getSessionId: () => "s1", getSessionFile: () => undefined }} }};
const results = {{}};
for (const name of Object.keys(handlers).filter((n) => !/shutdown|compact/.test(n))) {{
  results[name] = await handlers[name]({{ type: name, reason: "startup", systemPrompt: "", prompt: "hi" }}, ctx);
}}
console.log(JSON.stringify(results));
"#,
        module = json!(module),
        cwd = json!(project),
    );
    let out = env
        .command(node.to_str().unwrap(), &project)
        .env("PATH", &node_dir)
        .args(["--input-type=module", "-e", &driver])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("amber light"), "{stdout}");
}

// The README's old `claude mcp add cairn -- cairn mcp` (local scope, which failed to connect)
// wins over the user scope in its folder: install names it, with the command that removes it.
#[test]
fn mcp_install_names_a_local_scope_cairn_that_would_shadow_it() {
    let (env, project, kb) = project_and_kb();
    let claude = env.home().join(".claude.json");
    let local = json!({"projects": {project.to_str().unwrap(): {"mcpServers": {"cairn": {
        "type": "stdio", "command": "cairn", "args": ["mcp"], "env": {}}}}}});
    std::fs::write(&claude, serde_json::to_string_pretty(&local).unwrap()).unwrap();
    let out = env
        .cairn_in(
            &project,
            &[
                "--repo",
                kb.to_str().unwrap(),
                "mcp",
                "install",
                "--agent",
                "claude-code",
            ],
        )
        .code(0);
    assert!(
        out.stderr.contains(&format!(
            "in {}, Claude Code starts the local-scope server",
            project.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("claude mcp remove cairn --scope local"),
        "{}",
        out.stderr
    );
}
