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
pub(crate) fn git_commit(env: &Env, repo: &Path, args: &[&str]) -> Output {
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

pub(crate) fn head(env: &Env, repo: &Path) -> String {
    env.git(repo, &["rev-parse", "HEAD"])
}

/// A repository made by `cairn init`, with the hooks installed.
pub(crate) fn installed() -> (Env, std::path::PathBuf) {
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
    // The background index update's scripts, committed executable beside it.
    for name in ["post-commit", "post-merge"] {
        assert!(
            staged
                .lines()
                .any(|l| l.starts_with("100755 ") && l.ends_with(&format!("hooks/{name}"))),
            "{staged}"
        );
        let script = read(&repo, &format!("hooks/{name}"));
        assert!(
            script.contains(&format!("hooks run {name} \"$@\"")),
            "{script}"
        );
    }

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

/// Writes an executable hook script at `path`.
pub(crate) fn hook(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A secret line from the corpus, staged in `notes.txt`.
fn stage_secret(env: &Env, repo: &Path) {
    let (line, _) = corpus_secret("github-token", "ghp_");
    std::fs::write(repo.join("notes.txt"), format!("{line}\n")).unwrap();
    env.git(repo, &["add", "notes.txt"]);
}

// Issue 10, point 21: install set core.hooksPath over `.husky` with only a warning, and the
// husky hooks stopped running.
#[test]
fn install_over_husky_chains_its_hooks_and_uninstall_puts_it_back() {
    let (env, repo) = Env::repo();
    let markers = env.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    hook(
        &repo.join(".husky/pre-commit"),
        &format!(
            "echo husky was here >&2\ntouch '{}/pre-commit'",
            markers.display()
        ),
    );
    hook(
        &repo.join(".husky/commit-msg"),
        &format!("cp \"$1\" '{}/commit-msg'", markers.display()),
    );
    env.git(&repo, &["add", ".husky"]);
    env.git(&repo, &["commit", "-qm", "husky"]);
    env.git(&repo, &["config", "core.hooksPath", ".husky"]);
    let config_before = read(&repo, ".git/config");

    let out = env.cairn_in(&repo, &["--json", "hooks", "install"]).code(0);
    let data = out.data();
    assert_eq!(data["previous_hooks_path"], ".husky");
    assert_eq!(
        data["chained"],
        serde_json::json!(["pre-commit", "commit-msg"])
    );
    assert_eq!(data["written"], serde_json::json!(["hooks/commit-msg"]));
    assert!(out.stderr.is_empty(), "no warning now: {}", out.stderr);
    assert_eq!(git_status(&env, &repo), "");
    // Again: the record still names .husky, not cairn's own folder.
    let again = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(again["config_changed"], false);
    assert_eq!(again["previous_hooks_path"], ".husky");

    // A clean commit runs husky's pre-commit and commit-msg.
    std::fs::write(repo.join("clean.txt"), "nothing to hide\n").unwrap();
    env.git(&repo, &["add", "clean.txt"]);
    let out = git_commit(&env, &repo, &["-m", "clean work"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("husky was here"), "{stderr}");
    assert!(markers.join("pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(markers.join("commit-msg")).unwrap(),
        "clean work\n"
    );

    // A secret: husky's hook still runs, and cairn still refuses the commit.
    std::fs::remove_file(markers.join("pre-commit")).unwrap();
    stage_secret(&env, &repo);
    let before = head(&env, &repo);
    let out = git_commit(&env, &repo, &["-m", "oops"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("notes.txt:1: github-token"), "{stderr}");
    assert!(markers.join("pre-commit").exists());
    assert_eq!(head(&env, &repo), before);

    // Uninstall puts .git/config back byte for byte.
    env.cairn_in(&repo, &["hooks", "uninstall"])
        .code(0)
        .stdout_has("core.hooksPath = .husky");
    assert_eq!(read(&repo, ".git/config"), config_before);
    env.cairn_in(&repo, &["hooks", "uninstall"])
        .code(0)
        .stdout_has("nothing changed");
    assert_eq!(read(&repo, ".git/config"), config_before);
}

// Issue 10, point 21: with core.hooksPath unset, git ran .git/hooks; install silenced them.
#[test]
fn hooks_in_dot_git_hooks_still_run_after_install() {
    let (env, repo) = Env::repo();
    let marker = env.path().join("marker");
    hook(
        &repo.join(".git/hooks/pre-commit"),
        &format!("touch '{}'", marker.display()),
    );
    let config_before = read(&repo, ".git/config");
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["previous_hooks_path"], serde_json::Value::Null);
    assert_eq!(data["chained"], serde_json::json!(["pre-commit"]));

    stage_secret(&env, &repo);
    let out = git_commit(&env, &repo, &["-m", "oops"]);
    assert!(!out.status.success());
    assert!(marker.exists(), "the .git/hooks pre-commit did not run");
    env.git(&repo, &["rm", "-q", "--cached", "notes.txt"]);
    std::fs::remove_file(&marker).unwrap();
    std::fs::write(repo.join("clean.txt"), "clean\n").unwrap();
    env.git(&repo, &["add", "clean.txt"]);
    let out = git_commit(&env, &repo, &["-m", "clean"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(marker.exists());

    env.cairn_in(&repo, &["hooks", "uninstall"])
        .code(0)
        .stdout_has("core.hooksPath unset");
    assert_eq!(read(&repo, ".git/config"), config_before);
}

#[test]
fn a_failing_previous_hook_refuses_the_commit() {
    let (env, repo) = Env::repo();
    hook(
        &repo.join(".git/hooks/pre-commit"),
        "echo lint failed >&2\nexit 3",
    );
    env.cairn_in(&repo, &["hooks", "install"]).code(0);
    std::fs::write(repo.join("clean.txt"), "clean\n").unwrap();
    env.git(&repo, &["add", "clean.txt"]);
    let before = head(&env, &repo);
    let out = git_commit(&env, &repo, &["-m", "clean"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("lint failed"), "{stderr}");
    assert!(
        stderr.contains(".git/hooks/pre-commit failed (exit status 3)"),
        "{stderr}"
    );
    assert_eq!(head(&env, &repo), before);
}

/// A previous hook that itself calls `cairn hooks run pre-commit` (as the old advice said) must
/// not chain back into itself.
#[test]
fn a_previous_hook_calling_cairn_does_not_loop() {
    let (env, repo) = Env::repo();
    let count = env.path().join("count");
    hook(
        &repo.join(".git/hooks/pre-commit"),
        &format!(
            "echo run >> '{}'\nexec cairn hooks run pre-commit",
            count.display()
        ),
    );
    env.cairn_in(&repo, &["hooks", "install"]).code(0);
    std::fs::write(repo.join("clean.txt"), "clean\n").unwrap();
    env.git(&repo, &["add", "clean.txt"]);
    let out = git_commit(&env, &repo, &["-m", "clean"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "run\n");
}

#[test]
fn every_git_hook_name_is_an_event_and_runs_its_chained_hook() {
    let (env, repo) = Env::repo();
    let marker = env.path().join("pushed");
    hook(
        &repo.join(".git/hooks/pre-push"),
        &format!("cat > '{}'", marker.display()),
    );
    env.cairn_in(&repo, &["hooks", "install"]).code(0);
    assert!(read(&repo, "hooks/pre-push").contains("hooks run pre-push"));
    // By hand, with what git would pass on stdin.
    let out = env
        .command(BIN, &repo)
        .args(["hooks", "run", "pre-push", "origin", "url"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"refs/heads/main 1 refs/heads/main 0\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "refs/heads/main 1 refs/heads/main 0\n"
    );
    env.cairn_in(&repo, &["hooks", "run", "commit-msg", "x"])
        .code(0);
}
