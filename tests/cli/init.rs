use crate::support::*;

#[test]
fn init_makes_the_layout_and_commits_it() {
    let env = Env::new();
    let repo = env.path().join("kb");
    let data = env.cairn(&["--json", "init", "kb"]).code(0).data();
    assert_eq!(data["created_git"], true);
    for dir in [
        "decisions",
        "slog",
        "vault/observations",
        "vault/sessions",
        "vault/proposals",
        "vault/notes",
        "hooks",
    ] {
        assert!(repo.join(dir).is_dir(), "{dir}");
    }
    assert!(read(&repo, "cairn.toml").contains("[git]\n# Commit every change"));
    assert!(read(&repo, "MEMORY.md").starts_with("# Memory\n"));
    assert_eq!(read(&repo, ".gitignore"), ".cairn/\n");
    assert_eq!(
        env.git(&repo, &["check-attr", "merge", "slog/2026-11-30.jsonl"])
            .trim(),
        "slog/2026-11-30.jsonl: merge: union"
    );
    assert_eq!(
        env.git(
            &repo,
            &["check-attr", "merge", "vault/observations/2026-11-30.jsonl"]
        )
        .trim(),
        "vault/observations/2026-11-30.jsonl: merge: union"
    );
    assert_eq!(
        env.git(&repo, &["log", "--format=%s"]).trim(),
        "init: cairn knowledge repository"
    );
    assert_eq!(git_status(&env, &repo), "");
    assert_eq!(env.git(&repo, &["branch", "--show-current"]).trim(), "main");
}

#[test]
fn init_twice_changes_nothing() {
    let (env, repo) = Env::repo();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let out = env.cairn_in(&repo, &["--json", "init"]).code(0);
    assert_eq!(out.data()["written"], serde_json::json!([]));
    assert!(out.data()["commit"].is_null());
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    env.cairn_in(&repo, &["init"])
        .code(0)
        .stdout_has("nothing changed");
}

#[test]
fn init_adopts_a_code_project_without_touching_its_files() {
    let env = Env::new();
    let proj = env.path().join("proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    env.git(&proj, &["init", "-q", "-b", "trunk"]);
    std::fs::write(proj.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(proj.join(".gitignore"), "/target").unwrap();
    std::fs::write(proj.join("README.md"), "# proj\n").unwrap();
    env.git(&proj, &["add", "."]);
    env.git(&proj, &["commit", "-qm", "start"]);
    // A person's work in progress: one change staged, one not.
    std::fs::write(
        proj.join("src/main.rs"),
        "fn main() { println!(\"hi\"); }\n",
    )
    .unwrap();
    env.git(&proj, &["add", "src/main.rs"]);
    std::fs::write(proj.join("README.md"), "# proj\n\nunstaged words\n").unwrap();

    let data = env.cairn_in(&proj, &["--json", "init"]).code(0).data();
    assert_eq!(data["created_git"], false);
    assert_eq!(
        read(&proj, "src/main.rs"),
        "fn main() { println!(\"hi\"); }\n"
    );
    assert_eq!(read(&proj, "README.md"), "# proj\n\nunstaged words\n");
    assert_eq!(read(&proj, ".gitignore"), "/target\n.cairn/\n");
    assert_eq!(git_status(&env, &proj), " M README.md\nM  src/main.rs\n");
    let committed = env.git(&proj, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(
        !committed.contains("src/main.rs") && !committed.contains("README.md"),
        "{committed}"
    );
    assert!(
        committed.contains("cairn.toml") && committed.contains(".gitignore"),
        "{committed}"
    );
    assert_eq!(
        env.git(&proj, &["branch", "--show-current"]).trim(),
        "trunk"
    );
}

#[test]
fn repository_is_found_like_git_finds_its_own() {
    let (env, repo) = Env::repo();
    let deep = repo.join("decisions/sub/deeper");
    std::fs::create_dir_all(&deep).unwrap();
    env.cairn_in(&deep, &["slog", "--no-commit", "fix", "dns", "from deep"])
        .code(0);
    // --repo and CAIRN_REPO from outside.
    env.cairn(&["--repo", repo.to_str().unwrap(), "slog", "query", "deep"])
        .code(0);
    let out = env
        .command(BIN, env.path())
        .env("CAIRN_REPO", &repo)
        .args(["slog", "query", "deep"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Outside any repository: a clear error saying how to name one (not `cairn init` here,
    // which would make a code project a knowledge repository: ADR 86).
    let out = env.cairn(&["--json", "slog", "query"]).code(2);
    let err = out.json();
    assert_eq!(err["data"]["kind"], "not_a_repository");
    assert!(
        err["data"]["fix"]
            .as_str()
            .unwrap()
            .contains("cairn init DIR --default")
    );
    let out = env.cairn(&["slog", "query"]).code(2);
    assert!(
        out.stderr.contains("`cairn config set repo DIR`"),
        "{}",
        out.stderr
    );
    env.cairn(&["--repo", env.path().to_str().unwrap(), "slog", "query"])
        .code(2);
}

#[test]
fn commits_use_git_identity_else_the_fallback() {
    let (env, repo) = Env::repo();
    // No identity anywhere in the scrubbed environment: the fallback from cairn.toml.
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%an <%ae>"]).trim(),
        "cairn <cairn@localhost>"
    );
    env.git(&repo, &["config", "user.name", "Ana Lima"]);
    env.git(&repo, &["config", "user.email", "ana@example.com"]);
    env.cairn_in(&repo, &["slog", "fix", "dns", "x"]).code(0);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%an <%ae>|%cn"])
            .trim(),
        "Ana Lima <ana@example.com>|Ana Lima"
    );
}

#[test]
fn malformed_config_names_its_line() {
    let (env, repo) = Env::repo();
    let toml = read(&repo, "cairn.toml").replace("commit = true", "comit = true");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    let err = env
        .cairn_in(&repo, &["--json", "slog", "query"])
        .code(2)
        .json();
    assert_eq!(err["data"]["kind"], "config");
    let message = err["data"]["message"].as_str().unwrap();
    assert!(message.contains("cairn.toml: line "), "{message}");
    assert!(message.contains("comit"), "{message}");
}

// Issue 10, point 24: `CAIRN_REPO=` was an error about `--repo`; empty means unset.
#[test]
fn an_empty_cairn_repo_is_unset() {
    let (env, repo) = Env::repo();
    for var in ["CAIRN_REPO", "CAIRN_NOW", "CAIRN_NO_COMMIT"] {
        let out = env
            .command(BIN, &repo)
            .env(var, "")
            .args(["slog", "fix", "dns", "with an empty variable"])
            .output()
            .unwrap();
        let run = Run::from(out).code(0);
        assert!(run.stdout.contains("commit "), "{var}: {}", run.stdout);
    }
}

// Issue 10, point 24: `CAIRN_REPO=/nonexistent cairn init` initialised the current directory.
#[test]
fn init_makes_the_repository_that_cairn_repo_or_repo_names() {
    let env = Env::new();
    let here = env.path().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let target = env.path().join("new/kb");
    let out = env
        .command(BIN, &here)
        .env("CAIRN_REPO", &target)
        .args(["init"])
        .output()
        .unwrap();
    Run::from(out).code(0).stdout_has("new/kb");
    assert!(target.join("cairn.toml").is_file());
    assert_eq!(std::fs::read_dir(&here).unwrap().count(), 0, "cwd touched");
    // Then every other command finds it the same way.
    let out = env
        .command(BIN, &here)
        .env("CAIRN_REPO", &target)
        .args(["slog", "fix", "dns", "x"])
        .output()
        .unwrap();
    Run::from(out).code(0);

    env.cairn_in(&here, &["--repo", "../other", "init"]).code(0);
    assert!(env.path().join("other/cairn.toml").is_file());
    // DIR beats CAIRN_REPO; --repo and a different DIR contradict each other.
    let out = env
        .command(BIN, &here)
        .env("CAIRN_REPO", &target)
        .args(["init", "third"])
        .output()
        .unwrap();
    Run::from(out).code(0);
    assert!(here.join("third/cairn.toml").is_file());
    env.cairn_in(&here, &["--repo", "../a", "init", "../b"])
        .code(2)
        .stderr_has("name different folders");
    assert!(!env.path().join("a").exists() && !env.path().join("b").exists());
    env.cairn_in(&here, &["--repo", "../other/", "init", "../other"])
        .code(0)
        .stdout_has("nothing changed");
}

/// Runs cairn under `sh` with the given umask.
fn cairn_with_umask(env: &Env, cwd: &std::path::Path, umask: &str, args: &[&str]) -> Run {
    let script = format!("umask {umask} && exec \"$0\" \"$@\"");
    let mut cmd = env.command("sh", cwd);
    cmd.arg("-c").arg(script).arg(BIN).args(args);
    Run::from(cmd.output().expect("run sh"))
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn new_files_follow_the_umask_as_git_makes_them() {
    // Every file cairn made was 0600 (tempfile's default) whatever the umask.
    let env = Env::new();
    let repo = env.path().join("repo");
    cairn_with_umask(&env, env.path(), "022", &["init", repo.to_str().unwrap()]).code(0);
    cairn_with_umask(&env, &repo, "022", &["adr", "new", "Use caddy"]).code(0);
    cairn_with_umask(
        &env,
        &repo,
        "022",
        &["--now", "2026-11-30", "slog", "deploy", "caddy", "x"],
    )
    .code(0);
    for rel in [
        "MEMORY.md",
        "cairn.toml",
        ".gitignore",
        "decisions/0001-use-caddy.md",
        "slog/2026-11-30.jsonl",
    ] {
        assert_eq!(mode(&repo.join(rel)), 0o644, "{rel}");
    }
    let other = env.path().join("private");
    cairn_with_umask(&env, env.path(), "077", &["init", other.to_str().unwrap()]).code(0);
    assert_eq!(mode(&other.join("MEMORY.md")), 0o600);
    // A file a person made executable keeps its mode when cairn rewrites it.
    std::fs::set_permissions(
        repo.join("MEMORY.md"),
        std::os::unix::fs::PermissionsExt::from_mode(0o664),
    )
    .unwrap();
    cairn_with_umask(
        &env,
        &repo,
        "022",
        &["memory", "add", "-s", "operations", "fact one"],
    )
    .code(0);
    assert_eq!(mode(&repo.join("MEMORY.md")), 0o664);
}
