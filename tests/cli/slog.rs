use std::process::Stdio;

use crate::support::*;

#[test]
fn slog_appends_one_entry_and_commits_it() {
    let (env, repo) = Env::repo();
    let out = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-11-30T10:00:00Z",
                "slog",
                "deploy",
                "caddy",
                "reloaded web-1",
                "--reason",
                "new certs",
                "--tags",
                "infra,web",
            ],
        )
        .code(0);
    let data = out.data();
    assert_eq!(data["path"], "slog/2026-11-30.jsonl");
    let entry = &data["entry"];
    assert_eq!(entry["action"], "deploy");
    assert_eq!(entry["tool"], "caddy");
    assert_eq!(entry["detail"], "reloaded web-1");
    assert_eq!(entry["reason"], "new certs");
    assert_eq!(entry["tags"], serde_json::json!(["infra", "web"]));
    assert_eq!(entry["ts"], "2026-11-30T10:00:00.000Z");
    let lines = jsonl_lines(&repo.join("slog"));
    assert_eq!(lines, vec![entry.clone()]);

    let id = entry["id"].as_str().unwrap();
    let msg = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(msg.starts_with("slog: deploy caddy\n"), "{msg}");
    assert!(msg.contains(&format!("Cairn-Slog: {id}")), "{msg}");
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "slog/2026-11-30.jsonl");
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn slog_day_file_is_the_utc_day_of_writing() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T23:30:00-02:00",
            "slog",
            "fix",
            "dns",
            "late fix",
        ],
    )
    .code(0);
    assert!(repo.join("slog/2026-12-01.jsonl").is_file());
}

#[test]
fn slog_no_commit_leaves_the_change_in_the_tree() {
    let (env, repo) = Env::repo();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let out = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-11-30",
                "slog",
                "--no-commit",
                "fix",
                "dns",
                "x",
            ],
        )
        .code(0);
    assert!(out.data()["commit"].is_null());
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git_status(&env, &repo), "?? slog/2026-11-30.jsonl\n");
}

#[test]
fn slog_config_commit_false_leaves_the_change_in_the_tree() {
    let (env, repo) = Env::repo();
    let toml = read(&repo, "cairn.toml").replace("commit = true", "commit = false");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(&repo, &["commit", "-qam", "no commits"]);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.cairn_in(&repo, &["slog", "fix", "dns", "x"]).code(0);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
}

#[test]
fn slog_rejects_bad_input_and_writes_nothing() {
    let (env, repo) = Env::repo();
    for args in [
        &["slog", "fix", "dns", "two\nlines"][..],
        &["slog", "", "dns", "empty action"],
        &["slog", "fix", "dns"],
    ] {
        let out = env.cairn_in(&repo, args).code(2);
        assert!(!out.stderr.is_empty());
    }
    let err = env
        .cairn_in(&repo, &["--json", "slog", "fix", "dns", "a\u{7}b"])
        .code(2)
        .json();
    assert_eq!(err["type"], "error");
    assert_eq!(err["data"]["kind"], "bad_input");
    assert_eq!(
        std::fs::read_dir(repo.join("slog")).unwrap().count(),
        1,
        "only .gitkeep"
    );
}

/// Eight processes appending a hundred entries each, all committing: every entry lands once,
/// the repository stays sound and clean.
#[test]
fn slog_concurrent_appends_lose_nothing() {
    let (env, repo) = Env::repo();
    let mut children = Vec::new();
    for p in 0..8 {
        let script = format!(
            "for i in $(seq 1 100); do \"{bin}\" slog test worker{p} \"entry {p} $i\" >/dev/null || exit 1; done",
            bin = BIN
        );
        let child = env
            .command("sh", &repo)
            .args(["-c", &script])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        children.push(child);
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let lines = jsonl_lines(&repo.join("slog"));
    assert_eq!(lines.len(), 800);
    let mut details: Vec<String> = lines
        .iter()
        .map(|l| l["detail"].as_str().unwrap().to_string())
        .collect();
    details.sort();
    details.dedup();
    assert_eq!(details.len(), 800, "every entry exactly once");
    let ids: std::collections::HashSet<&str> =
        lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 800, "ids are unique");
    env.git(&repo, &["fsck", "--strict"]);
    assert_eq!(git_status(&env, &repo), "");
    let commits = env.git(&repo, &["rev-list", "--count", "HEAD"]);
    assert_eq!(commits.trim(), "801", "one commit per entry plus init");
}

fn write_torn(repo: &std::path::Path) {
    let day = repo.join("slog/2026-11-30.jsonl");
    let mut text = std::fs::read_to_string(&day).unwrap();
    text.push_str("{\"id\":\"sl-torn\",\"ts\":\"2026-11-30T1");
    std::fs::write(&day, text).unwrap();
}

#[test]
fn slog_query_skips_a_torn_last_line_with_a_warning() {
    let (env, repo) = Env::repo();
    for d in ["first deploy", "second deploy"] {
        env.cairn_in(
            &repo,
            &[
                "--now",
                "2026-11-30T10:00:00Z",
                "slog",
                "deploy",
                "caddy",
                d,
            ],
        )
        .code(0);
    }
    write_torn(&repo);
    let out = env.cairn_in(&repo, &["--json", "slog", "query"]).code(0);
    let data = out.data();
    assert_eq!(data["entries"].as_array().unwrap().len(), 2);
    assert!(out.stderr.contains("torn last line"), "{}", out.stderr);
    assert!(
        out.stderr.contains("slog/2026-11-30.jsonl:3"),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["next"][0]["command"], "cairn doctor");
}

#[test]
fn doctor_repairs_a_torn_line_and_keeps_the_bytes() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T10:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "one",
        ],
    )
    .code(0);
    write_torn(&repo);
    let report = env
        .cairn_in(&repo, &["--json", "doctor", "--dry-run"])
        .code(1)
        .data();
    assert_eq!(report["findings"][0]["line"], 2);
    assert_eq!(report["findings"][0]["repaired"], false);

    let out = env.cairn_in(&repo, &["--json", "doctor"]).code(0);
    let finding = &out.data()["findings"][0];
    assert_eq!(finding["repaired"], true);
    let saved = finding["saved_to"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(saved).unwrap(),
        "{\"id\":\"sl-torn\",\"ts\":\"2026-11-30T1"
    );
    assert_eq!(jsonl_lines(&repo.join("slog")).len(), 1);
    assert_eq!(git_status(&env, &repo), "");
    env.cairn_in(&repo, &["doctor"])
        .code(0)
        .stdout_has("all well");
}

#[test]
fn slog_append_after_a_torn_line_does_not_glue_onto_it() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T10:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "one",
        ],
    )
    .code(0);
    write_torn(&repo);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T11:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "two",
        ],
    )
    .code(0)
    .stderr_has("torn line");
    let details: Vec<String> = jsonl_lines(&repo.join("slog"))
        .iter()
        .map(|l| l["detail"].as_str().unwrap().into())
        .collect();
    assert_eq!(details, ["one", "two"]);
    let recovered = std::fs::read_dir(repo.join(".cairn/recovered"))
        .unwrap()
        .count();
    assert_eq!(recovered, 1);
}

/// Logs `details` on 2026-11-30, then puts a line that is no JSON object after the first.
fn write_broken_middle_line(env: &Env, repo: &std::path::Path, details: &[&str]) {
    for (i, d) in details.iter().enumerate() {
        let now = format!("2026-11-30T1{i}:00:00Z");
        env.cairn_in(repo, &["--now", &now, "slog", "deploy", "caddy", d])
            .code(0);
    }
    let day = repo.join("slog/2026-11-30.jsonl");
    let text = std::fs::read_to_string(&day).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(&day, format!("{first}\n<<<<<<< HEAD\n{rest}")).unwrap();
}

#[test]
fn slog_query_skips_a_broken_middle_line_and_answers_for_the_rest_of_the_day() {
    // It used to exit 2 for the whole day on one bad line.
    let (env, repo) = Env::repo();
    write_broken_middle_line(&env, &repo, &["one", "two"]);
    let out = env.cairn_in(&repo, &["--json", "slog", "query"]).code(0);
    let data = out.data();
    let details: Vec<&str> = data["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details, ["two", "one"]);
    assert!(
        out.stderr
            .contains("slog/2026-11-30.jsonl:2: not a JSON object"),
        "{}",
        out.stderr
    );
    assert!(
        data["warnings"][0]
            .as_str()
            .unwrap()
            .contains("slog/2026-11-30.jsonl:2"),
        "{data}"
    );
    assert_eq!(out.json()["next"][0]["command"], "cairn doctor");
}

#[test]
fn slog_refuses_to_append_to_a_day_file_with_a_broken_line_and_points_to_doctor() {
    // The next slog used to commit the broken line with its own entry.
    let (env, repo) = Env::repo();
    write_broken_middle_line(&env, &repo, &["one"]);
    let day = repo.join("slog/2026-11-30.jsonl");
    let before = std::fs::read(&day).unwrap();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T12:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "two",
        ],
    )
    .code(2)
    .stderr_has("2026-11-30.jsonl:2: not a JSON object")
    .stderr_has("cairn doctor");
    assert_eq!(std::fs::read(&day).unwrap(), before, "nothing appended");
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD"]),
        head,
        "nothing committed"
    );
    // After doctor, the same command goes through.
    env.cairn_in(&repo, &["doctor"]).code(0);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T12:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "two",
        ],
    )
    .code(0);
    let show = env.git(&repo, &["show", "HEAD:slog/2026-11-30.jsonl"]);
    assert!(!show.contains("<<<<<<<"), "{show}");
    assert_eq!(show.lines().count(), 2, "{show}");
}

#[test]
fn doctor_moves_a_broken_middle_line_aside_and_keeps_its_bytes() {
    // Doctor used to report such a line and leave it.
    let (env, repo) = Env::repo();
    write_broken_middle_line(&env, &repo, &["one", "two"]);
    // The broken line is committed, as a hand edit committed by hand would be.
    env.git(&repo, &["commit", "-qam", "hand edit"]);
    let report = env
        .cairn_in(&repo, &["--json", "doctor", "--dry-run"])
        .code(1)
        .data();
    assert_eq!(report["findings"][0]["line"], 2);
    assert_eq!(report["findings"][0]["repaired"], false);

    let out = env.cairn_in(&repo, &["--json", "doctor"]).code(0);
    let finding = &out.data()["findings"][0];
    assert_eq!(finding["repaired"], true, "{finding}");
    let saved = finding["saved_to"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(saved).unwrap(), "<<<<<<< HEAD\n");
    let details: Vec<String> = jsonl_lines(&repo.join("slog"))
        .iter()
        .map(|l| l["detail"].as_str().unwrap().into())
        .collect();
    assert_eq!(details, ["one", "two"]);
    // One commit, naming the line it moved; the tree is clean.
    let message = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with("doctor: move 1 damaged line aside"),
        "{message}"
    );
    assert!(
        message.contains("Cairn-Repaired: slog/2026-11-30.jsonl:2 -> .cairn/recovered/"),
        "{message}"
    );
    assert_eq!(git_status(&env, &repo), "");
    env.cairn_in(&repo, &["doctor"])
        .code(0)
        .stdout_has("all well");
}

#[test]
fn status_reports_damaged_lines_by_file_and_line() {
    let (env, repo) = Env::repo();
    write_broken_middle_line(&env, &repo, &["one", "two"]);
    let out = env.cairn_in(&repo, &["--json", "status"]).code(0);
    let damaged = &out.data()["damaged_lines"];
    assert_eq!(damaged[0]["path"], "slog/2026-11-30.jsonl", "{damaged}");
    assert_eq!(damaged[0]["line"], 2);
    env.cairn_in(&repo, &["status"])
        .code(0)
        .stdout_has("damaged lines: 1")
        .stdout_has("slog/2026-11-30.jsonl:2: not a JSON object");
}

#[test]
fn recall_skips_a_broken_slog_line_with_its_file_and_line() {
    let (env, repo) = Env::repo();
    write_broken_middle_line(&env, &repo, &["reloaded caddy on web-1", "two"]);
    let out = env.cairn_in(&repo, &["recall", "caddy", "web-1"]).code(0);
    assert!(out.stdout.contains("web-1"), "{}", out.stdout);
    assert!(
        out.stderr.contains("slog/2026-11-30.jsonl:2"),
        "{}",
        out.stderr
    );
}

#[test]
fn slog_takes_its_detail_from_stdin_with_a_dash() {
    let (env, repo) = Env::repo();
    let mut child = env
        .command(BIN, &repo)
        .args(["--json", "slog", "deploy", "caddy", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        b"reloaded caddy from a pipe\n",
    )
    .unwrap();
    let out = Run::from(child.wait_with_output().unwrap()).code(0);
    assert_eq!(out.data()["entry"]["detail"], "reloaded caddy from a pipe");
}

#[test]
fn slog_help_states_the_detail_cap() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "--help"])
        .code(0)
        .stdout_has("at most 4000 characters")
        .stdout_has("`-` reads it from stdin");
    let long = "x".repeat(4001);
    env.cairn_in(&repo, &["slog", "deploy", "caddy", &long])
        .code(2)
        .stderr_has("longer than 4000 characters");
}

#[test]
fn slog_query_filters_and_orders_newest_first() {
    let (env, repo) = Env::repo();
    let log = |now: &str, action: &str, tool: &str, detail: &str| {
        env.cairn_in(
            &repo,
            &["--now", now, "slog", "--no-commit", action, tool, detail],
        )
        .code(0);
    };
    log(
        "2026-11-01T09:00:00Z",
        "deploy",
        "caddy",
        "web-1 first rollout",
    );
    log(
        "2026-11-10T09:00:00Z",
        "fix",
        "redis",
        "evictions on cache-2",
    );
    log(
        "2026-11-20T09:00:00Z",
        "deploy",
        "redis",
        "upgraded cache-2 to 8.0",
    );
    log(
        "2026-11-29T09:00:00Z",
        "deploy",
        "caddy",
        "web-1 second rollout",
    );
    let details = |args: &[&str]| -> Vec<String> {
        let mut full = vec!["--json", "--now", "2026-11-30T00:00:00Z", "slog", "query"];
        full.extend_from_slice(args);
        let out = env.cairn_in(&repo, &full);
        if out.code == 1 {
            return Vec::new();
        }
        out.code(0).data()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["detail"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        details(&[]),
        [
            "web-1 second rollout",
            "upgraded cache-2 to 8.0",
            "evictions on cache-2",
            "web-1 first rollout"
        ]
    );
    assert_eq!(
        details(&["--action", "deploy", "--tool", "redis"]),
        ["upgraded cache-2 to 8.0"]
    );
    assert_eq!(
        details(&["CACHE-2"]),
        ["upgraded cache-2 to 8.0", "evictions on cache-2"]
    );
    assert_eq!(
        details(&["--since", "2026-11-15"]),
        ["web-1 second rollout", "upgraded cache-2 to 8.0"]
    );
    assert_eq!(details(&["--since", "7d"]), ["web-1 second rollout"]);
    assert_eq!(details(&["--until", "2026-11-05"]), ["web-1 first rollout"]);
    assert_eq!(details(&["--limit", "1"]), ["web-1 second rollout"]);
    assert!(details(&["nothing-like-this"]).is_empty());
    env.cairn_in(&repo, &["slog", "query", "nothing-like-this"])
        .code(1);
    env.cairn_in(&repo, &["slog", "query", "--since", "someday"])
        .code(2);
}
