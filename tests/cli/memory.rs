use crate::support::*;

const HAND: &str = "# Memory\n\nA person wrote this intro.   Two spaces stay.\n\n## Operations\n\n* (2026-01-02) Restart caddy with `systemctl reload caddy`\n*   (2026-01-03)   odd   spacing kept\n\n<!-- a comment the person keeps -->\n\n## Preferences\n- (2026-02-01) tabs over spaces";

#[test]
fn memory_add_creates_the_section_and_commits() {
    let (env, repo) = Env::repo();
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-11-30",
                "memory",
                "add",
                "--section",
                "rules-conventions",
                "Never force-push main",
            ],
        )
        .code(0)
        .data();
    assert_eq!(data["added"]["section"], "Rules and conventions");
    assert_eq!(data["added"]["section_created"], true);
    assert!(
        read(&repo, "MEMORY.md")
            .ends_with("\n## Rules and conventions\n\n- (2026-11-30) Never force-push main\n")
    );
    let msg = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(
        msg.starts_with("memory: add to Rules and conventions\n"),
        "{msg}"
    );
    assert!(msg.contains("Cairn-Memory: Rules and conventions"), "{msg}");
    assert_eq!(git_status(&env, &repo), "");
    env.cairn_in(&repo, &["memory", "lint"]).code(0);
}

#[test]
fn memory_add_keeps_every_hand_written_byte() {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("MEMORY.md"), HAND).unwrap();
    env.git(&repo, &["commit", "-qam", "hand edit"]);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30",
            "memory",
            "add",
            "--section",
            "Operations",
            "NFS mounts need root to unmount",
        ],
    )
    .code(0);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30",
            "memory",
            "add",
            "--section",
            "preferences",
            "short commit subjects",
        ],
    )
    .code(0);
    let want = HAND
        .replace(
            "odd   spacing kept\n",
            "odd   spacing kept\n* (2026-11-30) NFS mounts need root to unmount\n",
        )
        .replace(
            "tabs over spaces",
            "tabs over spaces\n- (2026-11-30) short commit subjects\n",
        );
    assert_eq!(read(&repo, "MEMORY.md"), want);
    let numstat = env.git(&repo, &["diff", "--numstat", "HEAD~2", "HEAD"]);
    assert_eq!(
        numstat.trim(),
        "3\t1\tMEMORY.md",
        "two added lines, and the unterminated last line gained its newline"
    );
}

#[test]
fn memory_add_twice_is_one_entry_and_one_commit() {
    let (env, repo) = Env::repo();
    let add = || {
        env.cairn_in(
            &repo,
            &[
                "--json",
                "memory",
                "add",
                "-s",
                "projects",
                "cairn is written in Rust",
            ],
        )
        .code(0)
    };
    add();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(add().data()["added"]["duplicate"], true);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        read(&repo, "MEMORY.md")
            .matches("cairn is written in Rust")
            .count(),
        1
    );
}

#[test]
fn memory_add_rejects_bad_input() {
    let (env, repo) = Env::repo();
    let before = read(&repo, "MEMORY.md");
    env.cairn_in(&repo, &["memory", "add", "-s", "operations", "two\nlines"])
        .code(2);
    env.cairn_in(&repo, &["memory", "add", "-s", "operations", "   "])
        .code(2);
    env.cairn_in(&repo, &["memory", "add", "-s", "", "text here"])
        .code(2);
    assert_eq!(read(&repo, "MEMORY.md"), before);
}

#[test]
fn memory_add_to_a_section_that_is_no_category_is_refused_unless_new_section() {
    // It used to warn, write, commit, and leave `memory lint` failing.
    let (env, repo) = Env::repo();
    let before = read(&repo, "MEMORY.md");
    let add = [
        "memory",
        "add",
        "-s",
        "Misc stuff",
        "an entry in an unknown section",
    ];
    env.cairn_in(&repo, &add)
        .code(2)
        .stderr_has("`Misc stuff` is not a section")
        .stderr_has("Preferences, Rules and conventions, System architecture")
        .stderr_has("--new-section");
    assert_eq!(read(&repo, "MEMORY.md"), before);
    let mut forced = add.to_vec();
    forced.push("--new-section");
    env.cairn_in(&repo, &forced)
        .code(0)
        .stderr_has("not a category");
    assert!(read(&repo, "MEMORY.md").contains("## Misc stuff"));
    // A category by its id still works without the flag.
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "rules-conventions",
            "never force-push",
        ],
    )
    .code(0);
}

#[test]
fn memory_add_refuses_an_entry_over_its_length_cap() {
    let (env, repo) = Env::repo();
    let before = read(&repo, "MEMORY.md");
    let long = "word ".repeat(120_000 / 5);
    env.cairn_in(&repo, &["memory", "add", "-s", "operations", &long])
        .code(2)
        .stderr_has("more than 500");
    assert_eq!(read(&repo, "MEMORY.md"), before);
    env.cairn_in(&repo, &["memory", "add", "--help"])
        .code(0)
        .stdout_has("at most 500 characters");
}

#[test]
fn memory_add_commits_its_entry_but_not_the_persons_uncommitted_edit() {
    // `memory add` used to commit a hand edit of MEMORY.md under its own message.
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["memory", "add", "-s", "operations", "first fact"])
        .code(0);
    let committed = read(&repo, "MEMORY.md");
    let hand = committed.replace(
        "- (20",
        "- (2026-01-01) a hand edit, not for committing yet\n- (20",
    );
    assert_ne!(hand, committed);
    std::fs::write(repo.join("MEMORY.md"), &hand).unwrap();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30",
            "memory",
            "add",
            "-s",
            "preferences",
            "tabs over spaces",
        ],
    )
    .code(0);
    let head = env.git(&repo, &["show", "HEAD:MEMORY.md"]);
    assert_eq!(
        head,
        format!("{committed}\n## Preferences\n\n- (2026-11-30) tabs over spaces\n")
    );
    let now = read(&repo, "MEMORY.md");
    assert!(now.contains("a hand edit, not for committing yet"), "{now}");
    assert!(now.contains("tabs over spaces"), "{now}");
    assert_eq!(git_status(&env, &repo), " M MEMORY.md\n");
    // The index holds what was committed: nothing of the hand edit is staged.
    assert_eq!(env.git(&repo, &["diff", "--cached", "--stat"]), "");
}

#[test]
fn memory_lint_fails_over_the_token_budget() {
    let (env, repo) = Env::repo();
    for i in 0..30 {
        let text = format!("fact number {i} about the deploy of the web servers and caddy");
        env.cairn_in(&repo, &["memory", "add", "-s", "operations", &text])
            .code(0);
    }
    env.cairn_in(&repo, &["memory", "lint"]).code(0);
    let config = read(&repo, "cairn.toml").replace("budget_tokens = 3000", "budget_tokens = 300");
    std::fs::write(repo.join("cairn.toml"), config).unwrap();
    let out = env.cairn_in(&repo, &["--json", "memory", "lint"]).code(1);
    let data = out.data();
    assert_eq!(data["budget_tokens"], 300);
    assert!(data["tokens"].as_u64().unwrap() > 300, "{data}");
    let message = data["problems"][0]["message"].as_str().unwrap();
    assert!(message.contains("over the budget of 300"), "{message}");
}

#[test]
fn brief_prints_memory_within_its_budget_cutting_whole_entries_with_a_note() {
    // A 120 KB entry used to be printed whole by brief.
    let (env, repo) = Env::repo();
    for i in 0..40 {
        let text = format!("fact number {i} about the deploy of the web servers and caddy");
        env.cairn_in(&repo, &["memory", "add", "-s", "operations", &text])
            .code(0);
    }
    let config = read(&repo, "cairn.toml").replace("budget_tokens = 3000", "budget_tokens = 300");
    std::fs::write(repo.join("cairn.toml"), config).unwrap();
    let out = env.cairn_in(&repo, &["--json", "brief"]).code(0);
    let data = out.data();
    let memory = data["memory"].as_str().unwrap();
    assert!(memory.chars().count() <= 300 * 4, "{memory}");
    assert!(memory.contains("fact number 0 "), "{memory}");
    assert!(!memory.contains("fact number 39 "), "{memory}");
    // Whole entries: every entry line kept ends as it was written.
    for line in memory.lines().filter(|l| l.starts_with("- (")) {
        assert!(line.ends_with("and caddy"), "cut mid-entry: {line}");
    }
    let note = data["memory_cut"].as_str().unwrap();
    assert!(note.contains("over its budget of 300"), "{note}");
    assert!(note.contains("Operations ("), "{note}");
    let markdown = data["markdown"].as_str().unwrap();
    assert!(markdown.contains(note), "{markdown}");
    assert!(out.stderr.contains("left out"), "{}", out.stderr);
}

#[test]
fn remember_refuses_text_over_the_slog_cap() {
    let (env, repo) = Env::repo();
    let long = "the deploy uses caddy ".repeat(200);
    env.cairn_in(&repo, &["remember", &long])
        .code(2)
        .stderr_has("more than 4000");
    assert!(jsonl_files(&repo.join("vault/observations")).is_empty());
    env.cairn_in(&repo, &["remember", "--help"])
        .code(0)
        .stdout_has("at most 4000 characters");
}

fn jsonl_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn memory_lint_names_each_problem_line() {
    let (env, repo) = Env::repo();
    let text = "# Memory\n\n- (2026-01-01) loose entry\n\n## Misc\n\n- no date here\n- (2026-13-01) bad month\n\n## Operations\n\n- (2026-01-01) fine\n";
    std::fs::write(repo.join("MEMORY.md"), text).unwrap();
    let out = env.cairn_in(&repo, &["memory", "lint"]).code(1);
    for needle in [
        "MEMORY.md:3: entry outside",
        "MEMORY.md:5: unknown section `Misc`",
        "MEMORY.md:7: undated",
        "MEMORY.md:8: entry date",
    ] {
        assert!(out.stdout.contains(needle), "{needle}\n{}", out.stdout);
    }
    let mut long = String::from("# Memory\n\n## Operations\n\n");
    for i in 0..201 {
        long.push_str(&format!("- (2026-01-01) fact number {i}\n"));
    }
    std::fs::write(repo.join("MEMORY.md"), long).unwrap();
    let data = env
        .cairn_in(&repo, &["--json", "memory", "lint"])
        .code(1)
        .data();
    assert_eq!(data["entries"], 201);
    assert!(
        data["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("time to prune")
    );
}

#[test]
fn memory_show_prints_the_file_and_its_structure() {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("MEMORY.md"), HAND).unwrap();
    let out = env.cairn_in(&repo, &["memory", "show"]).code(0);
    assert_eq!(out.stdout, format!("{HAND}\n"));
    let data = env
        .cairn_in(&repo, &["--json", "memory", "show"])
        .code(0)
        .data();
    assert_eq!(data["text"], HAND);
    assert_eq!(data["memory"]["sections"][0]["title"], "Operations");
    assert_eq!(data["memory"]["sections"][0]["category"], "operations");
    assert_eq!(
        data["memory"]["sections"][0]["entries"][1]["text"],
        "odd   spacing kept"
    );
    assert_eq!(
        data["memory"]["sections"][1]["entries"][0]["date"],
        "2026-02-01"
    );
}

#[test]
fn a_memory_add_killed_before_its_commit_is_committed_by_its_rerun() {
    let (env, repo) = Env::repo();
    let args = [
        "--now",
        "2026-11-30",
        "memory",
        "add",
        "--section",
        "rules-conventions",
        "Never force-push main",
    ];
    let mut cmd = env.command(BIN, &repo);
    cmd.args(args)
        .env("CAIRN_FAILPOINT", "memory-add-after-write");
    assert!(!cmd.output().unwrap().status.success());
    // Killed after the write: the entry is in the working tree, not in HEAD.
    assert!(read(&repo, "MEMORY.md").contains("Never force-push main"));
    assert_ne!(git_status(&env, &repo), "");
    // The rerun finds the entry written and commits it, once.
    env.cairn_in(&repo, &args).code(0);
    assert_eq!(git_status(&env, &repo), "");
    let head = env.git(&repo, &["show", "HEAD:MEMORY.md"]);
    assert_eq!(head.matches("Never force-push main").count(), 1, "{head}");
    // A third run has nothing to do and makes no commit.
    let before = env.git(&repo, &["rev-parse", "HEAD"]);
    env.cairn_in(&repo, &args).code(0);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), before);
}

#[test]
fn memory_add_takes_a_section_the_file_has_even_when_it_is_no_category() {
    // "`Hard Rules` is not a section of MEMORY.md" while it was one.
    let (env, repo) = Env::repo();
    let text = "# Memory\n\n## Hard Rules\n\n- (2026-01-01) Never push to main on Fridays\n";
    std::fs::write(repo.join("MEMORY.md"), text).unwrap();
    env.git(&repo, &["commit", "-qam", "hard rules"]);
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-12-06",
            "memory",
            "add",
            "-s",
            "Hard Rules",
            "Never skip the review",
        ],
    )
    .code(0);
    assert_eq!(
        read(&repo, "MEMORY.md"),
        format!("{text}- (2026-12-06) Never skip the review\n")
    );
}

#[test]
fn memory_add_writes_a_date_given_in_the_text_once() {
    // It wrote `- (2026-12-06) (2026-12-01) Postgres…`.
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-12-06",
            "memory",
            "add",
            "-s",
            "operations",
            "(2026-12-01) Postgres runs on port 5433 here",
        ],
    )
    .code(0);
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.ends_with("\n- (2026-12-01) Postgres runs on port 5433 here\n"),
        "{memory}"
    );
    env.cairn_in(&repo, &["memory", "lint"]).code(0);
}

#[test]
fn memory_add_refuses_a_word_and_a_near_duplicate_in_another_case() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["memory", "add", "-s", "operations", "x"])
        .code(2)
        .stderr_has("too short");
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "operations",
            "Never deploy on Fridays",
        ],
    )
    .code(0);
    let before = read(&repo, "MEMORY.md");
    let commits = env.git(&repo, &["rev-list", "--count", "HEAD"]);
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "rules-conventions",
            "never deploy on  fridays.",
        ],
    )
    .code(0)
    .stdout_has("already in Operations");
    assert_eq!(read(&repo, "MEMORY.md"), before);
    assert_eq!(env.git(&repo, &["rev-list", "--count", "HEAD"]), commits);
}

#[test]
fn memory_lint_names_a_stray_line_that_is_no_entry() {
    let (env, repo) = Env::repo();
    let text = "# Memory\n\nAn introduction is fine.\n\n## Operations\n\n- (2026-01-01) Restart caddy after a config change\n\nremember to check the backups\n";
    std::fs::write(repo.join("MEMORY.md"), text).unwrap();
    env.cairn_in(&repo, &["memory", "lint"])
        .code(1)
        .stdout_has("MEMORY.md:9: `remember to check the backups` is not an entry");
}

#[test]
fn this_projects_memory_has_no_doubled_date() {
    let memory =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/MEMORY.md")).unwrap();
    for line in memory.lines() {
        let rest = line
            .strip_prefix("- (")
            .and_then(|l| l.get(11..))
            .unwrap_or("");
        assert!(!rest.trim_start().starts_with("(20"), "{line}");
    }
}
