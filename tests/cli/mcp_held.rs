//! `cairn mcp` keeps its index open between calls (as the console does), and a call never
//! answers from before a write: what another process, the server's own tools or a person's
//! edit wrote is found by the next call, and an index another process rebuilt or removed is
//! caught up with (ADR 125).

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::mcp::ok;
use crate::support::*;

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// `cairn mcp` started in `repo`, connected and initialized, with its process id.
async fn connect(env: &Env, repo: &Path) -> (Client, u32) {
    let mut cmd = env.command(BIN, repo);
    cmd.arg("mcp");
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cairn mcp");
    let pid = transport.id().expect("the server's pid");
    (().serve(transport).await.expect("initialize"), pid)
}

/// The ids of a recall's or a search's results.
fn ids(answer: &Value) -> Vec<String> {
    answer["data"]["results"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// How many of the index's files process `pid` has mapped.
fn index_maps(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .expect("the server's maps")
        .lines()
        .filter(|l| l.contains("/.cairn/index/"))
        .count()
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn mcp_keeps_the_index_open_between_calls() {
    // Issue 34: each recall opened the index and closed it again when it was done.
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "api", "moved the nfs mount"])
        .code(0);
    let (client, pid) = connect(&env, &repo).await;
    // A write alone does not open it.
    ok(
        &client,
        "slog",
        json!({"action": "check", "tool": "api", "detail": "the nfs mount is up"}),
    )
    .await;
    assert_eq!(index_maps(pid), 0, "a write opened the index");
    let found = ok(&client, "recall", json!({"query": "nfs mount"})).await;
    assert_eq!(ids(&found).len(), 2, "{found}");
    assert!(index_maps(pid) > 0, "the index was closed after the recall");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn mcp_calls_find_what_was_written_since_the_last_call() {
    let (env, repo) = Env::repo();
    let (client, _) = connect(&env, &repo).await;
    let recall = |q: &'static str| {
        let client = &client;
        async move { ids(&ok(client, "recall", json!({"query": q})).await) }
    };
    let search = |q: &'static str| {
        let client = &client;
        async move { ids(&ok(client, "search", json!({"words": q})).await) }
    };
    assert!(recall("quokka").await.is_empty());

    // Another process's write.
    env.cairn_in(
        &repo,
        &["slog", "configure", "relay", "pinned the quokka relay"],
    )
    .code(0);
    assert_eq!(recall("quokka").await.len(), 1);

    // The server's own write.
    ok(
        &client,
        "slog",
        json!({"action": "configure", "tool": "relay", "detail": "moved the quokka relay"}),
    )
    .await;
    assert_eq!(recall("quokka").await.len(), 2);
    ok(
        &client,
        "remember",
        json!({"text": "The quokka relay listens on port 7070 behind the edge proxy."}),
    )
    .await;
    assert_eq!(search("quokka").await.len(), 3);

    // A person's edit of MEMORY.md, not committed.
    let memory = repo.join("MEMORY.md");
    let mut text = std::fs::read_to_string(&memory).expect("MEMORY.md");
    text.push_str("\n## Operations\n\n- (2026-12-01) The wombat gateway fronts every deploy.\n");
    std::fs::write(&memory, text).expect("edit MEMORY.md");
    assert_eq!(search("wombat").await.len(), 1);

    // Another process rebuilds the index, then a write comes after it.
    env.cairn_in(&repo, &["index", "--rebuild"]).code(0);
    env.cairn_in(&repo, &["slog", "deploy", "relay", "a third quokka relay"])
        .code(0);
    assert_eq!(recall("quokka").await.len(), 3);
    assert_eq!(search("quokka").await.len(), 4);

    // The index removed under the server.
    std::fs::remove_dir_all(repo.join(".cairn/index")).expect("remove the index");
    env.cairn_in(&repo, &["slog", "deploy", "relay", "a fourth quokka relay"])
        .code(0);
    assert_eq!(search("quokka").await.len(), 5);
    assert_eq!(search("wombat").await.len(), 1);
    client.cancel().await.expect("close");
}
