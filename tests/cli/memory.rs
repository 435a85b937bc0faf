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
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "Misc stuff",
            "an entry in an unknown section",
        ],
    )
    .code(0)
    .stderr_has("not a category");
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
