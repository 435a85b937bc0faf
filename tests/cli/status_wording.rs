//! What `status`, `forget --redact`, `library`, `stats`, `sessions ingest`, `adr list` and
//! `eval` say (issue 32, points 9, 11 and 12).

use crate::support::*;

const NOW: &str = "2026-12-01T12:00:00Z";

fn cairn(env: &Env, repo: &std::path::Path, args: &[&str]) -> Run {
    let mut all = vec!["--now", NOW];
    all.extend_from_slice(args);
    env.cairn_in(repo, &all)
}

/// A Claude Code transcript of `turns` (prompt, answer), no tool calls.
fn transcript(turns: &[(&str, &str)]) -> String {
    let tools: Vec<(&str, Vec<crate::sessions::Tool>, &str)> = turns
        .iter()
        .map(|(prompt, answer)| (*prompt, vec![], *answer))
        .collect();
    crate::sessions::claude_transcript("5f0c7a1e-3b1d-4c8e-9f00-00000000c032", &tools)
}

#[test]
fn status_does_not_count_trivial_turn_cards_as_held_observations() {
    // "8 held" where 4 were: the trivial cards were counted with the held observations.
    let (env, repo) = Env::repo();
    let t = env.path().join("hello.jsonl");
    std::fs::write(
        &t,
        transcript(&[
            ("say hello", "Hello! Happy to help."),
            ("ok", "Sure."),
            (
                "why does the cache layer read through to the store?",
                "The design keeps the store the only source of truth, so the cache reads through.",
            ),
        ]),
    )
    .unwrap();
    cairn(&env, &repo, &["sessions", "ingest", t.to_str().unwrap()]).code(0);
    let data = cairn(&env, &repo, &["--json", "status"]).code(0).data();
    assert_eq!(data["observations"]["held"], 0, "{data}");
    assert_eq!(data["observations"]["trivial_cards"], 2, "{data}");
    cairn(&env, &repo, &["status"])
        .code(0)
        .stdout_has("0 allowed, 0 held")
        .stdout_has("turn cards: 2 turn cards held as trivial");
}

#[test]
fn forget_redact_says_it_redacts_and_counts_one_commit_in_the_singular() {
    let secret = "acme_tok_ABCDEFGHIJKLMNOP";
    let (env, repo) = Env::repo();
    cairn(
        &env,
        &repo,
        &[
            "slog",
            "rotate",
            "vault",
            &format!("new deploy token {secret} for staging"),
        ],
    )
    .code(0);
    let toml =
        read(&repo, "cairn.toml").replace("patterns = []", "patterns = ['acme_tok_[A-Z0-9]{16}']");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(&repo, &["commit", "-qam", "redact acme tokens"]);
    let dry = cairn(&env, &repo, &["forget", "--redact", "--dry-run"]).code(0);
    assert!(
        dry.stdout
            .starts_with("would redact the secrets in 1 record:"),
        "{}",
        dry.stdout
    );
    let done = cairn(&env, &repo, &["forget", "--redact", "--yes"]).code(0);
    assert!(
        done.stdout.starts_with("redacted the secrets in 1 record"),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains("forgot"), "{}", done.stdout);
    assert!(
        done.stdout
            .contains("history: 1 earlier commit still holds the text"),
        "{}",
        done.stdout
    );
}

#[test]
fn library_add_and_list_count_one_chunk_in_the_singular() {
    let (env, repo) = Env::repo();
    let doc = env.path().join("nfs.md");
    std::fs::write(
        &doc,
        "# NFS leases\n\nA client renews its lease every 30 seconds.\n",
    )
    .unwrap();
    let added = cairn(&env, &repo, &["library", "add", doc.to_str().unwrap()]).code(0);
    assert!(added.stdout.contains("(1 chunk)"), "{}", added.stdout);
    let list = cairn(&env, &repo, &["library", "list"]).code(0);
    assert!(list.stdout.contains(", 1 chunk)"), "{}", list.stdout);
    assert!(!list.stdout.contains("chunks)"), "{}", list.stdout);
}

#[test]
fn stats_sums_no_process_id_and_ends_no_line_with_a_semicolon() {
    let (env, repo) = Env::repo();
    // A write takes the lock, whose telemetry carries the writer's pid.
    cairn(
        &env,
        &repo,
        &["slog", "deploy", "api", "shipped 1.2.3 to production"],
    )
    .code(0);
    let stats = cairn(&env, &repo, &["stats"]).code(0);
    assert!(stats.stdout.contains("lock writer"), "{}", stats.stdout);
    assert!(!stats.stdout.contains("pid"), "{}", stats.stdout);
    for line in stats.stdout.lines() {
        assert!(!line.trim_end().ends_with(';'), "{line}");
    }
}

#[test]
fn ingesting_a_file_no_agent_wrote_names_the_agent_flag() {
    let (env, repo) = Env::repo();
    let t = env.path().join("notes.jsonl");
    std::fs::write(&t, "{\"hello\": \"world\"}\n").unwrap();
    cairn(&env, &repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(2)
        .stderr_has("--agent claude");
}

#[test]
fn adr_list_lists_the_records_beside_a_broken_one_and_names_it() {
    // One record with broken frontmatter made `adr list` exit 2 and list nothing.
    let (env, repo) = Env::repo();
    adr_adr(&env, &repo, "Use tantivy for the index");
    adr_adr(&env, &repo, "Keep one entry a line in MEMORY.md");
    let broken = "decisions/0002-keep-one-entry-a-line-in-memory-md.md";
    let text = read(&repo, broken).replacen("status: proposed", "status: [unclosed", 1);
    std::fs::write(repo.join(broken), text).unwrap();
    let out = cairn(&env, &repo, &["adr", "list"]).code(1);
    assert!(
        out.stdout.contains("Use tantivy for the index"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("Keep one entry"), "{}", out.stdout);
    assert!(out.stderr.contains(broken), "{}", out.stderr);
    let data = cairn(&env, &repo, &["--json", "adr", "list"])
        .code(1)
        .json();
    assert_eq!(data["data"]["adrs"].as_array().unwrap().len(), 1, "{data}");
}

fn adr_adr(env: &Env, repo: &std::path::Path, title: &str) {
    cairn(env, repo, &["adr", "new", title]).code(0);
}

#[test]
fn eval_locomo_on_an_empty_or_wrong_file_exits_2_with_the_reason() {
    let env = Env::new();
    let dir = env.path();
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "[]").unwrap();
    env.cairn(&["eval", "locomo", empty.to_str().unwrap()])
        .code(2)
        .stderr_has("holds no conversation");
    // A conversation whose questions name no turn it holds: nothing to measure.
    let wrong = dir.join("wrong.json");
    let data = serde_json::json!([{
        "sample_id": "conv-1",
        "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "hello"}],
        },
        "qa": [{"question": "what?", "evidence": ["D9:9"]}],
    }]);
    std::fs::write(&wrong, data.to_string()).unwrap();
    env.cairn(&["eval", "locomo", wrong.to_str().unwrap()])
        .code(2)
        .stderr_has("no question names an evidence turn");
}
