//! What `.cairn/telemetry.jsonl` keeps of what people typed: a query's length by default, its
//! text (redacted) only under `[telemetry] queries = true`, and every text redacted; through
//! recall, search, brief and the MCP server, with `cairn stats --telemetry` still reading it.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::*;

/// An AWS access key id's shape (AKIA and 16 upper-case letters and digits).
const AWS_KEY: &str = "AKIAZ7Q4R2M9XK3T8PLW";
/// A password in a URL.
const PASSWORD: &str = "Sup3rS3cretPassw0rd";

/// A query a person pastes a secret into, with a word of its own to find it by.
fn query() -> String {
    format!("quokkadeploy with {AWS_KEY} and postgres://deploy:{PASSWORD}@db.internal:5432/app")
}

fn telemetry(repo: &Path) -> String {
    std::fs::read_to_string(repo.join(".cairn/telemetry.jsonl")).unwrap_or_default()
}

fn events(repo: &Path, component: &str, action: &str) -> Vec<Value> {
    telemetry(repo)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["component"] == component && e["action"] == action)
        .collect()
}

fn assert_no_secret(repo: &Path) {
    let text = telemetry(repo);
    assert!(!text.is_empty(), "no telemetry at all");
    assert!(!text.contains(AWS_KEY), "the key is in telemetry: {text}");
    assert!(
        !text.contains(PASSWORD),
        "the password is in telemetry: {text}"
    );
}

/// A repository with something to recall, and a project beside it on a branch named like a key.
fn repo_and_project() -> (Env, std::path::PathBuf, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "slog",
            "deploy",
            "api",
            "the quokkadeploy pipeline moved to v2",
        ],
    )
    .code(0);
    let project = env.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q", "-b", AWS_KEY]);
    std::fs::write(project.join("README.md"), "# quokkadeploy tools\n").unwrap();
    env.git(&project, &["add", "README.md"]);
    env.git(&project, &["commit", "-q", "-m", "start"]);
    (env, repo, project)
}

#[test]
fn telemetry_keeps_no_query_text_by_default_and_no_secret_ever() {
    // Regression (issue 30): recall queries were stored verbatim in telemetry
    // (`"query":"AKIA…"`), secrets and all.
    let (env, repo, project) = repo_and_project();
    let q = query();
    env.cairn_in(&repo, &["recall", &q]).code(0);
    env.cairn_in(&repo, &["search", &q]);
    env.cairn_in(&repo, &["brief", "--project", project.to_str().unwrap()])
        .code(0);
    assert_no_secret(&repo);
    let text = telemetry(&repo);
    assert!(
        !text.contains("quokkadeploy"),
        "a query's text is kept: {text}"
    );
    let recall = events(&repo, "recall", "recall");
    assert_eq!(recall.len(), 1, "{text}");
    assert_eq!(recall[0]["metadata"]["query"]["words"], 5, "{text}");
    assert_eq!(
        recall[0]["metadata"]["query"]["chars"],
        q.chars().count(),
        "{text}"
    );
    assert!(recall[0]["metadata"]["query"].get("text").is_none());
    let brief = events(&repo, "recall", "brief");
    assert_eq!(brief.len(), 1, "{text}");
    assert!(brief[0]["metadata"]["query"]["words"].as_u64().unwrap() > 0);

    // `cairn stats --telemetry` reads the events as before.
    let stats = env
        .cairn_in(&repo, &["--json", "stats", "--telemetry"])
        .code(0)
        .data();
    let shown: Vec<&Value> = stats["events"].as_array().unwrap().iter().collect();
    assert!(
        shown
            .iter()
            .any(|e| e["component"] == "recall" && e["action"] == "recall"),
        "{stats}"
    );
    let human = env.cairn_in(&repo, &["stats", "--telemetry"]).code(0);
    assert!(human.stdout.contains("recall"), "{}", human.stdout);
    assert!(!human.stdout.contains(AWS_KEY));
    env.cairn_in(&repo, &["stats"]).code(0);
}

#[test]
fn telemetry_keeps_query_text_redacted_when_asked() {
    let (env, repo, project) = repo_and_project();
    let config = repo.join("cairn.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("[telemetry]\n"),
        "cairn init writes the section"
    );
    text = text.replace("queries = false", "queries = true");
    std::fs::write(&config, text).unwrap();
    let q = query();
    env.cairn_in(&repo, &["recall", &q]).code(0);
    env.cairn_in(&repo, &["brief", "--project", project.to_str().unwrap()])
        .code(0);
    assert_no_secret(&repo);
    let recall = events(&repo, "recall", "recall");
    let kept = recall[0]["metadata"]["query"]["text"].as_str().unwrap();
    assert!(kept.starts_with("quokkadeploy with [REDACTED:"), "{kept}");
    assert!(kept.contains("postgres://deploy:[REDACTED:"), "{kept}");
    let brief = events(&repo, "recall", "brief");
    let kept = brief[0]["metadata"]["query"]["text"].as_str().unwrap();
    assert!(kept.contains("quokkadeploy"), "{kept}");
    assert!(kept.contains("[REDACTED:"), "{kept}");
}

#[tokio::test]
async fn telemetry_of_an_mcp_recall_keeps_no_secret() {
    let (env, repo, _) = repo_and_project();
    let client = crate::mcp::connect(&env, &repo, &["mcp"]).await;
    let q = query();
    let recalled = crate::mcp::ok(&client, "recall", json!({ "query": q })).await;
    assert_eq!(recalled["type"], "recall");
    crate::mcp::ok(&client, "search", json!({ "words": q })).await;
    client.cancel().await.unwrap();
    assert_no_secret(&repo);
    let text = telemetry(&repo);
    assert!(!text.contains("quokkadeploy"), "{text}");
    assert_eq!(events(&repo, "recall", "recall").len(), 1, "{text}");
}
