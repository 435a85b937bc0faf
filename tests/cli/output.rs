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
