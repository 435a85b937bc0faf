use crate::support::*;

/// Every command answers `--json` with exactly one v1 envelope of its own type.
#[test]
fn every_command_writes_one_json_envelope() {
    let (env, repo) = Env::repo();
    let cases: &[(&[&str], &str, i32)] = &[
        (&["init"], "init", 0),
        (&["slog", "deploy", "caddy", "x"], "slog", 0),
        (&["slog", "query"], "slog_query", 0),
        (&["adr", "new", "Use caddy"], "adr_new", 0),
        (&["adr", "new", "Use nginx"], "adr_new", 0),
        (&["adr", "list"], "adr_list", 0),
        (&["adr", "show", "1"], "adr_show", 0),
        (&["adr", "status", "1", "shipped"], "adr_status", 0),
        (&["adr", "supersede", "1", "2"], "adr_supersede", 0),
        (&["adr", "lint"], "adr_lint", 0),
        (
            &[
                "memory",
                "add",
                "-s",
                "operations",
                "caddy reloads on SIGUSR1",
            ],
            "memory_add",
            0,
        ),
        (&["memory", "show"], "memory_show", 0),
        (&["memory", "lint"], "memory_lint", 0),
        (&["doctor"], "doctor", 0),
    ];
    for (args, kind, code) in cases {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = env.cairn_in(&repo, &full).code(*code);
        let v = out.json();
        assert_eq!(v["type"], *kind, "{args:?}");
        assert!(v["next"].is_array(), "{args:?}");
    }
}

#[test]
fn usage_errors_are_json_errors_with_exit_2() {
    let (env, repo) = Env::repo();
    let out = env
        .cairn_in(&repo, &["--json", "adr", "show", "not-a-number"])
        .code(2);
    let v = out.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["data"]["kind"], "bad_input");
    env.cairn_in(&repo, &["no-such-command"]).code(2);
    env.cairn_in(&repo, &["--help"])
        .code(0)
        .stdout_has("Usage: cairn");
}

#[test]
fn human_output_is_text_on_stdout_and_words_on_stderr() {
    let (env, repo) = Env::repo();
    let out = env
        .cairn_in(&repo, &["slog", "deploy", "caddy", "reloaded"])
        .code(0);
    assert!(out.stdout.starts_with("logged sl-"), "{}", out.stdout);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = env.cairn_in(&repo, &["adr", "show", "42"]).code(2);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.starts_with("error: no ADR numbered 42"),
        "{}",
        out.stderr
    );
}

/// `cairn … | head` must not panic on the closed pipe: exit 0, nothing on stderr.
#[test]
fn closed_stdout_exits_quietly() {
    let (env, repo) = Env::repo();
    let day = repo.join("slog/2026-11-30.jsonl");
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!(
            "{{\"id\":\"sl-{i:012x}\",\"ts\":\"2026-11-30T10:00:00.000Z\",\"action\":\"deploy\",\"tool\":\"caddy\",\"detail\":\"rollout number {i} of the web tier\"}}\n"
        ));
    }
    std::fs::write(&day, text).unwrap();
    let out = env
        .command("bash", &repo)
        .args([
            "-c",
            &format!(
                "\"{BIN}\" slog query --limit 0 | head -n 1 >/dev/null; echo ${{PIPESTATUS[0]}}"
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

// Issue 10, point 24: `--no-commit` was a global flag, offered on read-only commands too.
#[test]
fn no_commit_is_offered_only_by_commands_that_commit() {
    let (env, repo) = Env::repo();
    for read_only in [
        &["slog", "query"][..],
        &["adr", "list"],
        &["memory", "show"],
        &["recall", "x"],
        &["search", "x"],
        &["status"],
        &["stats"],
        &["hooks", "uninstall"],
    ] {
        let mut args = read_only.to_vec();
        args.push("--no-commit");
        env.cairn_in(&repo, &args)
            .code(2)
            .stderr_has("unexpected argument '--no-commit'");
        let mut help = read_only[..read_only.len().min(2)].to_vec();
        help.retain(|a| *a != "x");
        help.push("--help");
        let out = env.cairn_in(&repo, &help).code(0);
        assert!(!out.stdout.contains("--no-commit"), "{help:?}");
    }
    env.cairn_in(&repo, &["slog", "--help"])
        .code(0)
        .stdout_has("--no-commit");
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.cairn_in(&repo, &["remember", "--no-commit", "we deploy with caddy"])
        .code(0)
        .stdout_has("not committed");
    env.cairn_in(&repo, &["adr", "new", "Use caddy", "--no-commit"])
        .code(0)
        .stdout_has("not committed");
    let out = env
        .command(BIN, &repo)
        .env("CAIRN_NO_COMMIT", "1")
        .args(["slog", "fix", "dns", "by the environment"])
        .output()
        .unwrap();
    Run::from(out).code(0).stdout_has("not committed");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    // The configuration still turns committing off for every writer.
    let toml = read(&repo, "cairn.toml").replace("commit = true", "commit = false");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.cairn_in(&repo, &["slog", "fix", "dns", "by the config"])
        .code(0)
        .stdout_has("not committed");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
}

// Issue 10, point 24: "1 observations".
#[test]
fn counts_of_one_are_singular() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "one"])
        .code(0);
    env.cairn_in(&repo, &["index"])
        .code(0)
        .stdout_has(" 1 document over ");
    env.cairn_in(
        &repo,
        &["memory", "add", "-s", "operations", "caddy reloads"],
    )
    .code(0);
    env.cairn_in(&repo, &["memory", "lint"])
        .code(0)
        .stdout_has("MEMORY.md: 1 entry, no problems");
    let file = env.path().join("one.jsonl");
    std::fs::write(
        &file,
        "{\"observation\":\"We always deploy the web tier with a caddy reload, never a restart.\"}\n",
    )
    .unwrap();
    let out = env
        .cairn_in(&repo, &["import", "observations", file.to_str().unwrap()])
        .code(0)
        .stdout_has("imported 1 of 1 observation (");
    assert!(out.stdout.contains("0 duplicates"), "{}", out.stdout);
    let subject = env.git(&repo, &["log", "-1", "--format=%s"]);
    assert!(
        subject.starts_with("import: 1 observation from "),
        "{subject}"
    );
    env.cairn_in(&repo, &["import", "observations", file.to_str().unwrap()])
        .code(0)
        .stdout_has("1 duplicate,");
    env.cairn_in(&repo, &["stats"])
        .code(0)
        .stdout_has("observations: 1 (0 sessions ingested)");
}

// Issue 10, point 24: a usage error with --json printed two error lines on stderr.
#[test]
fn a_usage_error_is_said_once() {
    let (env, repo) = Env::repo();
    let out = env.cairn_in(&repo, &["--json", "adr", "show", "x"]).code(2);
    let v = out.json();
    assert_eq!(v["type"], "error");
    let message = v["data"]["message"].as_str().unwrap();
    assert!(message.contains("invalid value 'x'"), "{message}");
    assert_eq!(out.stderr.matches("error:").count(), 1, "{}", out.stderr);
    let out = env.cairn_in(&repo, &["adr", "show", "x"]).code(2);
    assert_eq!(out.stderr.matches("error:").count(), 1, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let out = env.cairn_in(&repo, &["--json"]).code(2);
    assert_eq!(out.json()["type"], "error");
    assert_eq!(out.stderr.matches("error:").count(), 1, "{}", out.stderr);
}

// Issue 10, point 24: commands that found nothing printed nothing at all.
#[test]
fn commands_that_find_nothing_say_so_on_stderr() {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("MEMORY.md"), "").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["slog", "query"], "no slog entries found"),
        (&["slog", "query", "caddy"], "no slog entries found"),
        (&["adr", "list"], "no ADRs found"),
        (
            &["search", "caddy"],
            "nothing relevant to \"caddy\" was found",
        ),
        (&["search", "--exact", "caddy"], "no record holds \"caddy\""),
        (
            &["recall", "caddy"],
            "nothing relevant to \"caddy\" was found",
        ),
        (&["recall"], "nothing recalled"),
        (
            &["stats", "--telemetry", "--component", "none"],
            "no telemetry events",
        ),
        (&["memory", "show"], "MEMORY.md has no entries yet"),
    ];
    for (args, line) in cases {
        let out = env.cairn_in(&repo, args).code(1);
        assert_eq!(out.stderr, format!("{line}\n"), "{args:?}");
        let mut json = vec!["--json"];
        json.extend_from_slice(args);
        let out = env.cairn_in(&repo, &json).code(1);
        out.json();
        assert_eq!(out.stderr, "", "{args:?}: --json leaves stderr to problems");
    }
}

// Issue 10, point 24: a command that changed nothing said "(not committed)".
#[test]
fn a_no_op_says_nothing_changed() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["adr", "new", "Use caddy"]).code(0);
    env.cairn_in(&repo, &["adr", "status", "1", "shipped"])
        .code(0)
        .stdout_has("commit ");
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let out = env
        .cairn_in(&repo, &["adr", "status", "1", "shipped"])
        .code(0)
        .stdout_has("nothing changed");
    assert!(!out.stdout.contains("not committed"), "{}", out.stdout);
    let file = env.path().join("short.jsonl");
    std::fs::write(&file, "{\"observation\":\"ok\"}\n").unwrap();
    env.cairn_in(&repo, &["import", "observations", file.to_str().unwrap()])
        .code(0)
        .stdout_has("nothing changed)");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    env.cairn_in(&repo, &["adr", "status", "1", "accepted", "--no-commit"])
        .code(0)
        .stdout_has("not committed");
}
