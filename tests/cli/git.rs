use crate::support::*;

/// A person's staged and unstaged work survives every kind of cairn commit untouched.
#[test]
fn commit_next_to_staged_work_leaves_it_staged() {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("notes.txt"), "v1\n").unwrap();
    std::fs::write(repo.join("plan.txt"), "plan\n").unwrap();
    env.git(&repo, &["add", "notes.txt", "plan.txt"]);
    env.git(&repo, &["commit", "-qm", "person's files"]);
    std::fs::write(repo.join("notes.txt"), "v2 staged\n").unwrap();
    std::fs::write(repo.join("new.txt"), "brand new, staged\n").unwrap();
    env.git(&repo, &["add", "notes.txt", "new.txt"]);
    std::fs::write(repo.join("plan.txt"), "plan, unstaged edit\n").unwrap();
    std::fs::write(repo.join("scratch.txt"), "untracked\n").unwrap();
    let status = git_status(&env, &repo);
    let staged = env.git(&repo, &["diff", "--cached"]);
    let unstaged = env.git(&repo, &["diff"]);

    env.cairn_in(&repo, &["slog", "deploy", "caddy", "x"])
        .code(0);
    env.cairn_in(&repo, &["adr", "new", "Use caddy"]).code(0);
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "caddy reloads on SIGUSR1",
        ],
    )
    .code(0);
    env.cairn_in(&repo, &["adr", "status", "1", "shipped"])
        .code(0);

    assert_eq!(git_status(&env, &repo), status);
    assert_eq!(env.git(&repo, &["diff", "--cached"]), staged);
    assert_eq!(env.git(&repo, &["diff"]), unstaged);
    for rev in ["HEAD", "HEAD~1", "HEAD~2", "HEAD~3"] {
        let files = env.git(&repo, &["show", "--name-only", "--format=", rev]);
        for person in ["notes.txt", "new.txt", "plan.txt", "scratch.txt"] {
            assert!(!files.contains(person), "{rev} holds {person}: {files}");
        }
    }
    env.git(&repo, &["fsck", "--strict"]);
    // The person's commit still works as they meant it.
    env.git(&repo, &["commit", "-qm", "person commits"]);
    assert_eq!(env.git(&repo, &["show", "HEAD:notes.txt"]), "v2 staged\n");
    assert_eq!(env.git(&repo, &["show", "HEAD:plan.txt"]), "plan\n");
}

#[test]
fn knowledge_repository_inside_a_larger_git_repository() {
    let env = Env::new();
    let mono = env.path().join("mono");
    std::fs::create_dir_all(&mono).unwrap();
    env.git(&mono, &["init", "-q"]);
    let data = env
        .cairn_in(&mono, &["--json", "init", "memory"])
        .code(0)
        .data();
    assert_eq!(data["created_git"], false);
    let kb = mono.join("memory");
    env.cairn_in(&kb, &["slog", "fix", "dns", "inside"]).code(0);
    let files = env.git(&mono, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.starts_with("memory/slog/"), "{files}");
    assert_eq!(git_status(&env, &mono), "");
    assert!(!mono.join(".cairn").exists());
}

#[test]
fn every_commit_is_one_command_with_trailers() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &["adr", "new", "Use tantivy for the index", "--tags", "index"],
    )
    .code(0);
    env.cairn_in(&repo, &["adr", "new", "Use BM25 only", "--supersedes", "1"])
        .code(0);
    let log = env.git(
        &repo,
        &["log", "--format=%s|%(trailers:only,unfold,separator=%x2C)"],
    );
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines[0],
        "adr: 2 Use BM25 only|Cairn-Adr: 2,Cairn-Supersedes: 1"
    );
    assert_eq!(lines[1], "adr: 1 Use tantivy for the index|Cairn-Adr: 1");
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.lines().count(), 2, "{files}");
}

#[test]
fn slog_commits_its_own_line_not_earlier_no_commit_entries() {
    // A later slog used to commit every line an earlier `--no-commit` slog had left.
    let (env, repo) = Env::repo();
    let day = "slog/2026-11-30.jsonl";
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T10:00:00Z",
            "slog",
            "--no-commit",
            "deploy",
            "caddy",
            "left",
        ],
    )
    .code(0);
    let out = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-11-30T11:00:00Z",
                "slog",
                "deploy",
                "caddy",
                "committed",
            ],
        )
        .code(0);
    let data = out.data();
    let head = env.git(&repo, &["show", &format!("HEAD:{day}")]);
    let lines: Vec<serde_json::Value> = head
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{head}");
    assert_eq!(lines[0], data["entry"]);
    let now = read(&repo, day);
    assert!(
        now.contains("\"left\"") && now.contains("\"committed\""),
        "{now}"
    );
    assert_eq!(git_status(&env, &repo), format!(" M {day}\n"));
    assert_eq!(env.git(&repo, &["diff", "--cached", "--stat"]), "");
    // The next committed entry adds its own line to what HEAD holds, and no other.
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T12:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "third",
        ],
    )
    .code(0);
    let head = env.git(&repo, &["show", &format!("HEAD:{day}")]);
    assert_eq!(head.lines().count(), 2, "{head}");
    assert!(!head.contains("\"left\""), "{head}");
    assert_eq!(git_status(&env, &repo), format!(" M {day}\n"));
}

#[test]
fn remember_commits_its_observation_not_earlier_no_commit_ones() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T10:00:00Z",
            "remember",
            "--no-commit",
            "The user prefers tabs over spaces in every Python file",
        ],
    )
    .code(0);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T11:00:00Z",
            "remember",
            "Production deploys run through caddy on web-1 every night",
        ],
    )
    .code(0);
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    let rel = files.trim();
    assert!(rel.starts_with("vault/observations/"), "{files}");
    let head = env.git(&repo, &["show", &format!("HEAD:{rel}")]);
    assert_eq!(head.lines().count(), 1, "{head}");
    assert!(head.contains("caddy on web-1"), "{head}");
    assert!(read(&repo, rel).contains("tabs over spaces"));
    assert_eq!(git_status(&env, &repo), format!(" M {rel}\n"));
}

#[test]
fn commit_messages_never_carry_a_path_of_the_machine() {
    // `import: 3 observations from /home/…/obs.jsonl` put a local path into history.
    let (env, repo) = Env::repo();
    let outside = env.path().join("exports");
    std::fs::create_dir_all(&outside).unwrap();
    let file = outside.join("obs.jsonl");
    std::fs::write(
        &file,
        "{\"observation\":\"The staging database is restored from backups every Monday\"}\n",
    )
    .unwrap();
    env.cairn_in(&repo, &["import", "observations", file.to_str().unwrap()])
        .code(0);
    let adrs = fixtures().join("adr/adr-tools");
    env.cairn_in(&repo, &["adr", "import", adrs.to_str().unwrap()])
        .code(0);
    let sessions = fixtures().join("sessions/claude-code");
    env.cairn_in(&repo, &["sessions", "ingest", sessions.to_str().unwrap()]);
    let log = env.git(&repo, &["log", "--format=%B"]);
    assert!(
        log.contains("import: 1 observation from obs.jsonl"),
        "{log}"
    );
    assert!(log.contains("from adr-tools"), "{log}");
    for local in [
        env.path(),
        fixtures().as_path(),
        std::path::Path::new("/home"),
    ] {
        let local = local.to_str().unwrap();
        assert!(!log.contains(local), "history holds {local}:\n{log}");
    }
}

#[test]
fn import_reads_a_jsonl_file_that_starts_with_a_byte_order_mark() {
    // It used to say the first line is "not a JSON object".
    let (env, repo) = Env::repo();
    let file = env.path().join("bom.jsonl");
    std::fs::write(
        &file,
        "\u{feff}{\"observation\":\"The staging database is restored every Monday\"}\n{\"observation\":\"Caddy serves the docs site from web-2\"}\n",
    )
    .unwrap();
    let data = env
        .cairn_in(
            &repo,
            &["--json", "import", "observations", file.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["counts"]["read"], 2, "{data}");
    assert_eq!(data["counts"]["stored"], 2, "{data}");
}

#[test]
fn adr_status_commits_its_edit_not_the_persons_uncommitted_edit_of_the_record() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "adr",
            "new",
            "Use caddy",
            "--context",
            "We serve docs",
            "--decision",
            "Caddy",
        ],
    )
    .code(0);
    let rel = "decisions/0001-use-caddy.md";
    let committed = read(&repo, rel);
    std::fs::write(
        repo.join(rel),
        format!("{committed}\nA hand note, not for committing yet.\n"),
    )
    .unwrap();
    env.cairn_in(&repo, &["adr", "status", "1", "shipped"])
        .code(0);
    let head = env.git(&repo, &["show", &format!("HEAD:{rel}")]);
    assert!(head.contains("status: shipped"), "{head}");
    assert!(!head.contains("hand note"), "{head}");
    let now = read(&repo, rel);
    assert!(
        now.contains("status: shipped") && now.contains("hand note"),
        "{now}"
    );
    assert_eq!(git_status(&env, &repo), format!(" M {rel}\n"));
}
