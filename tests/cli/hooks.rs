//! `cairn hooks install` and `cairn hooks run pre-commit`, with real `git commit`s.

use std::path::Path;
use std::process::Output;

use crate::support::*;

/// The first corpus line of `kind` (tests/fixtures/secrets/corpus.txt) and its secret: the
/// word that starts with `prefix`.
fn corpus_secret(kind: &str, prefix: &str) -> (String, String) {
    let corpus = std::fs::read_to_string(fixtures().join("secrets/corpus.txt")).unwrap();
    let line = corpus
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{kind}\t")))
        .unwrap_or_else(|| panic!("no {kind} line in the corpus"));
    let secret = line
        .split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .find(|w| w.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} word in {line}"));
    (line.to_string(), secret.to_string())
}

/// Runs a real `git commit`, with `cairn` on PATH as the hook needs it.
fn git_commit(env: &Env, repo: &Path, args: &[&str]) -> Output {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.command("git", repo)
        .env("PATH", path)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "commit",
        ])
        .args(args)
        .output()
        .expect("run git commit")
}

fn head(env: &Env, repo: &Path) -> String {
    env.git(repo, &["rev-parse", "HEAD"])
}

/// A repository made by `cairn init`, with the hooks installed.
fn installed() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["hooks", "install"]).code(0);
    (env, repo)
}

#[test]
fn init_writes_the_pre_commit_script_and_install_points_git_at_it() {
    let (env, repo) = Env::repo();
    let script = read(&repo, "hooks/pre-commit");
    assert!(
        script.starts_with("#!/bin/sh\n") && script.contains("cairn --repo"),
        "{script}"
    );
    let staged = env.git(&repo, &["ls-files", "-s", "hooks"]);
    assert!(
        staged.starts_with("100755 ") && staged.trim_end().ends_with("hooks/pre-commit"),
        "{staged}"
    );
    assert!(!repo.join("hooks/.gitkeep").exists());

    let config_before = read(&repo, ".git/config");
    let head_before = head(&env, &repo);
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["written"], serde_json::json!([]));
    assert_eq!(data["hooks_path"], "hooks");
    assert_eq!(data["config_changed"], true);
    assert_eq!(
        env.git(&repo, &["config", "core.hooksPath"]).trim(),
        "hooks"
    );
    assert_eq!(head(&env, &repo), head_before);
    // Only the one key was added; every other line of .git/config is as it was.
    let config_after = read(&repo, ".git/config");
    let before: Vec<&str> = config_before.lines().collect();
    let after: Vec<&str> = config_after
        .lines()
        .filter(|l| !l.contains("hooksPath"))
        .collect();
    assert_eq!(before, after, "{config_after}");
    assert_eq!(
        config_after.lines().count(),
        config_before.lines().count() + 1
    );

    // Again: nothing changes.
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["config_changed"], false);
    assert_eq!(read(&repo, ".git/config"), config_after);
    assert_eq!(head(&env, &repo), head_before);
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn install_writes_a_missing_script_and_commits_it() {
    let (env, repo) = Env::repo();
    env.git(&repo, &["rm", "-q", "hooks/pre-commit"]);
    env.git(&repo, &["commit", "-qm", "no hook"]);
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["written"], serde_json::json!(["hooks/pre-commit"]));
    assert!(data["commit"]["id"].is_string(), "{data}");
    let staged = env.git(&repo, &["ls-files", "-s", "hooks/pre-commit"]);
    assert!(staged.starts_with("100755 "), "{staged}");
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn install_keeps_a_pre_commit_script_of_a_persons_own() {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("hooks/pre-commit"), "#!/bin/sh\nmake lint\n").unwrap();
    env.cairn_in(&repo, &["hooks", "install"])
        .code(2)
        .stderr_has("does not run cairn");
    assert_eq!(read(&repo, "hooks/pre-commit"), "#!/bin/sh\nmake lint\n");
}

#[test]
fn a_staged_secret_is_refused_by_a_real_git_commit() {
    let (env, repo) = installed();
    let (line, secret) = corpus_secret("github-token", "ghp_");
    std::fs::write(
        repo.join("notes.txt"),
        format!("what we did today\n{line}\n"),
    )
    .unwrap();
    env.git(&repo, &["add", "notes.txt"]);
    let before = head(&env, &repo);

    let out = git_commit(&env, &repo, &["-m", "add notes"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the commit went through: {stderr}");
    assert_eq!(head(&env, &repo), before);
    assert!(stderr.contains("notes.txt:2: github-token"), "{stderr}");
    assert!(stderr.contains("cairn never commits a secret"), "{stderr}");
    assert!(!stderr.contains(&secret), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&secret));

    // The same check, run by hand.
    let run = env.cairn_in(&repo, &["hooks", "run", "pre-commit"]).code(1);
    assert!(
        run.stderr.contains("notes.txt:2: github-token"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(&secret) && !run.stdout.contains(&secret));
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "run", "pre-commit"])
        .code(1)
        .data();
    assert_eq!(
        data["secrets"],
        serde_json::json!([{ "path": "notes.txt", "line": 2, "kind": "github-token" }])
    );
}

#[test]
fn a_secret_staged_by_commit_all_is_refused() {
    // `git commit -a` stages into a temporary index (GIT_INDEX_FILE), not .git/index.
    let (env, repo) = installed();
    std::fs::write(
        repo.join("MEMORY.md"),
        format!("# Memory\n\n{}\n", corpus_secret("password", "DB_").0),
    )
    .unwrap();
    let before = head(&env, &repo);
    let out = git_commit(&env, &repo, &["-a", "-m", "edit memory"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("MEMORY.md:3: password"), "{stderr}");
    assert_eq!(head(&env, &repo), before);
}

#[test]
fn a_clean_file_commits() {
    let (env, repo) = installed();
    std::fs::write(
        repo.join("notes.txt"),
        "the password field is hashed; rotate the token monthly\n",
    )
    .unwrap();
    env.git(&repo, &["add", "notes.txt"]);
    let run = env.cairn_in(&repo, &["hooks", "run", "pre-commit"]).code(0);
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    let before = head(&env, &repo);
    let out = git_commit(&env, &repo, &["-m", "add notes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(head(&env, &repo), before);
}

#[test]
fn redact_patterns_from_cairn_toml_are_refused_too() {
    let (env, repo) = installed();
    let toml = read(&repo, "cairn.toml").replace("patterns = []", "patterns = [\"ACME-[0-9]{6}\"]");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    std::fs::write(
        repo.join("ticket.md"),
        "see ACME-482913 for the vault entry\n",
    )
    .unwrap();
    env.git(&repo, &["add", "cairn.toml", "ticket.md"]);
    env.cairn_in(&repo, &["hooks", "run", "pre-commit"])
        .code(1)
        .stderr_has("ticket.md:1: custom");
    assert!(!git_commit(&env, &repo, &["-m", "ticket"]).status.success());

    let toml = read(&repo, "cairn.toml").replace("ACME-[0-9]{6}", "ACME-(");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.cairn_in(&repo, &["hooks", "run", "pre-commit"])
        .code(2)
        .stderr_has("\"ACME-(\"");
}

#[test]
fn an_unknown_hook_event_is_an_error() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["hooks", "run", "post-frobnicate"])
        .code(2)
        .stderr_has("unknown hook event \"post-frobnicate\"")
        .stderr_has("pre-commit");
}
