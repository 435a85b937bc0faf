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
