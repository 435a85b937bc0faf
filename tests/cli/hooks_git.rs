//! The git hooks beyond the secret scan, with real `git commit`s and `git merge`s: pre-commit
//! lints the STAGED ADRs, MEMORY.md and JSON Lines; post-commit and post-merge bring the index up
//! to date in the background, after the hooks that ran before cairn's.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::hooks::{git_commit, head, hook, installed};
use crate::support::*;

/// `git commit` that must be refused; returns its stderr.
#[track_caller]
fn refused(env: &Env, repo: &Path, args: &[&str]) -> String {
    let before = head(env, repo);
    let out = git_commit(env, repo, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the commit went through: {stderr}");
    assert_eq!(head(env, repo), before);
    stderr
}

/// `git commit` that must go through.
#[track_caller]
fn commits(env: &Env, repo: &Path, args: &[&str]) -> String {
    let before = head(env, repo);
    let out = git_commit(env, repo, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the commit was refused: {stderr}");
    assert_ne!(head(env, repo), before);
    stderr
}

fn write(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A record `cairn adr new` wrote, not committed; returns its path.
fn new_adr(env: &Env, repo: &Path, title: &str, extra: &[&str]) -> String {
    let mut args = vec!["--json", "adr", "new", title, "--no-commit"];
    args.extend(extra);
    let data = env.cairn_in(repo, &args).code(0).data();
    data["adr"]["path"]
        .as_str()
        .or(data["path"].as_str())
        .unwrap_or_else(|| panic!("no path in {data}"))
        .to_string()
}

#[test]
fn a_staged_adr_with_a_bad_status_is_refused_by_path_and_line() {
    let (env, repo) = installed();
    let rel = new_adr(&env, &repo, "Use tantivy", &[]);
    let good = read(&repo, &rel);
    write(
        &repo,
        &rel,
        &good.replace("status: proposed", "status: maybe"),
    );
    env.git(&repo, &["add", &rel]);
    let stderr = refused(&env, &repo, &["-m", "adr"]);
    assert!(
        stderr.contains(&format!("{rel}:4: status `maybe` is not one of")),
        "{stderr}"
    );
    assert!(
        stderr.contains("cairn: 1 problem; the commit is refused"),
        "{stderr}"
    );

    // What counts is what is staged: fixed in the working tree only, still refused.
    write(&repo, &rel, &good);
    let stderr = refused(&env, &repo, &["-m", "adr"]);
    assert!(stderr.contains(&format!("{rel}:4:")), "{stderr}");
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "run", "pre-commit"])
        .code(1)
        .data();
    assert_eq!(data["problems"][0]["path"], rel.as_str());
    assert_eq!(data["problems"][0]["line"], 4);

    // Staged fixed, the working file broken again: the commit holds the good one and goes.
    env.git(&repo, &["add", &rel]);
    write(
        &repo,
        &rel,
        &good.replace("status: proposed", "status: maybe"),
    );
    commits(&env, &repo, &["-m", "adr"]);
    assert_eq!(env.git(&repo, &["show", &format!("HEAD:{rel}")]), good);
}

#[test]
fn a_staged_adr_that_breaks_another_record_is_refused() {
    let (env, repo) = installed();
    let first = new_adr(&env, &repo, "Use tantivy", &[]);
    env.git(&repo, &["add", "decisions"]);
    commits(&env, &repo, &["-m", "first"]);

    // A second record claims to supersede the first, but the first does not say so.
    let second = new_adr(&env, &repo, "Use sqlite", &[]);
    let text = read(&repo, &second).replace("supersedes: []", "supersedes: [1]");
    write(&repo, &second, &text);
    env.git(&repo, &["add", &second]);
    let stderr = refused(&env, &repo, &["-m", "second"]);
    assert!(
        stderr.contains(&format!(
            "{first}:9: ADR 2 supersedes 1, but 1 does not list 2 in superseded-by"
        )),
        "{stderr}"
    );

    // A link to a record that is not staged (only in the working tree) does not resolve.
    env.git(&repo, &["restore", "--staged", &second]);
    let text = read(&repo, &first).replace(
        "## Decision\n",
        "## Decision\n\nSee [the other](0002-use-sqlite.md).\n",
    );
    write(&repo, &first, &text);
    env.git(&repo, &["add", &first]);
    let stderr = refused(&env, &repo, &["-m", "link"]);
    assert!(
        stderr.contains("does not resolve: there is no decisions/0002-use-sqlite.md"),
        "{stderr}"
    );
    // Staging the record it links to makes it whole (and the supersession, answered).
    let second_text = read(&repo, &second).replace("supersedes: [1]", "supersedes: []");
    write(&repo, &second, &second_text);
    env.git(&repo, &["add", &second]);
    commits(&env, &repo, &["-m", "link"]);
}

#[test]
fn a_problem_head_already_holds_does_not_block_later_commits() {
    let (env, repo) = installed();
    let rel = new_adr(&env, &repo, "Use tantivy", &[]);
    let text = read(&repo, &rel).replace("date: ", "date: someday ");
    write(&repo, &rel, &text);
    env.git(&repo, &["add", &rel]);
    refused(&env, &repo, &["-m", "bad date"]);
    // Committed past the hook on purpose: now it is HEAD's problem, not the next commit's.
    commits(&env, &repo, &["--no-verify", "-m", "bad date"]);
    let text = read(&repo, &rel).replace("What is the issue", "The issue");
    write(&repo, &rel, &text);
    env.git(&repo, &["add", &rel]);
    commits(&env, &repo, &["-m", "edit the context"]);
    // A second bad record is this commit's.
    let other = new_adr(&env, &repo, "Use sqlite", &[]);
    let text = read(&repo, &other).replace("status: proposed", "status: later");
    write(&repo, &other, &text);
    env.git(&repo, &["add", &other]);
    let stderr = refused(&env, &repo, &["-m", "other"]);
    assert!(
        stderr.contains(&format!("{other}:4: status `later`")),
        "{stderr}"
    );
    assert!(!stderr.contains(&format!("{rel}:")), "{stderr}");
}

#[test]
fn staged_memory_md_is_linted_and_its_size_is_only_advice() {
    let (env, repo) = installed();
    let template = read(&repo, "MEMORY.md");
    let lines = template.lines().count();
    write(
        &repo,
        "MEMORY.md",
        &format!(
            "{template}\n## Operations\n\n- (2026-11-30) reload caddy after edits\n- restart redis weekly\n"
        ),
    );
    // `git commit -a` stages into a temporary index (GIT_INDEX_FILE): that is what is read.
    let stderr = refused(&env, &repo, &["-a", "-m", "memory"]);
    let undated = lines + 5;
    assert!(
        stderr.contains(&format!("MEMORY.md:{undated}: undated entry")),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&format!("MEMORY.md:{}:", undated - 1)),
        "{stderr}"
    );

    // Over 200 entries: said, and the commit goes.
    let mut text = format!("{template}\n## Operations\n\n");
    for i in 0..201 {
        text.push_str(&format!("- (2026-11-30) fact number {i}\n"));
    }
    write(&repo, "MEMORY.md", &text);
    env.git(&repo, &["add", "MEMORY.md"]);
    let stderr = commits(&env, &repo, &["-m", "memory"]);
    assert!(
        stderr.contains("warning: MEMORY.md: 201 entries (more than 200): time to prune"),
        "{stderr}"
    );
}

#[test]
fn staged_jsonl_lines_must_be_records_of_their_file() {
    let (env, repo) = installed();
    // A real entry, written by cairn and left for git to commit.
    env.cairn_in(
        &repo,
        &[
            "slog",
            "deploy",
            "caddy",
            "reload the proxy",
            "--no-commit",
            "--now",
            "2026-11-15T10:00:00Z",
        ],
    )
    .code(0);
    let day = "slog/2026-11-15.jsonl";
    let entry = read(&repo, day);
    let wrong_shape =
        r#"{"id":"sl-x","ts":"2026-11-15T11:00:00Z","action":"fix","detail":"no tool"}"#;
    write(&repo, day, &format!("{entry}{wrong_shape}\n"));
    write(
        &repo,
        "vault/observations/2026-11-15.jsonl",
        "[\"not\", \"an object\"]\n",
    );
    write(
        &repo,
        "vault/proposals/2026-11-15.jsonl",
        "{\"event\":\"decision\"}\n",
    );
    write(
        &repo,
        "vault/sessions/claude/s1.jsonl",
        "{\"type\":\"card\",\"id\":\"c1\"",
    );
    env.git(&repo, &["add", "slog", "vault"]);
    let stderr = refused(&env, &repo, &["-m", "lines"]);
    for want in [
        format!("{day}:2: not a valid record: missing field `tool`"),
        "vault/observations/2026-11-15.jsonl:1: not a JSON object".to_string(),
        "vault/proposals/2026-11-15.jsonl:1: not a valid proposal or event".to_string(),
        "vault/sessions/claude/s1.jsonl:1: the last line has no newline".to_string(),
    ] {
        assert!(stderr.contains(&want), "no {want:?} in {stderr}");
    }
    assert!(!stderr.contains(&format!("{day}:1:")), "{stderr}");
    assert!(
        stderr.contains("cairn: 4 problems; the commit is refused"),
        "{stderr}"
    );

    env.git(
        &repo,
        &[
            "rm",
            "-rq",
            "--cached",
            "vault/observations",
            "vault/proposals",
            "vault/sessions",
        ],
    );
    write(&repo, day, &entry);
    env.git(&repo, &["add", day]);
    commits(&env, &repo, &["-m", "slog"]);
}

#[test]
fn a_knowledge_repository_in_a_subfolder_names_paths_as_git_does() {
    let env = Env::new();
    let project = env.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q"]);
    env.cairn_in(&project, &["init", "kb"]).code(0);
    let kb = project.join("kb");
    env.cairn_in(&kb, &["hooks", "install"]).code(0);
    assert_eq!(
        env.git(&project, &["config", "core.hooksPath"]).trim(),
        "kb/hooks"
    );
    write(&kb, "slog/2026-11-15.jsonl", "{\"id\":1}\n");
    // A file of the same name outside the knowledge repository is not cairn's to check.
    write(&project, "slog/2026-11-15.jsonl", "not json\n");
    env.git(&project, &["add", "-A"]);
    let stderr = refused(&env, &project, &["-m", "kb"]);
    assert!(
        stderr.contains("kb/slog/2026-11-15.jsonl:1: not a valid record"),
        "{stderr}"
    );
    assert!(!stderr.contains("\nslog/2026-11-15.jsonl"), "{stderr}");
    assert!(stderr.contains("cairn: 1 problem;"), "{stderr}");
}

/// The committed index's checkpoints: the file that the payload of tantivy's meta.json names
/// (ADR 10, and the checkpoints file beside it); empty when there is none yet.
fn committed_checkpoints(repo: &Path) -> String {
    let dir = repo.join(".cairn/index");
    let name = std::fs::read_to_string(dir.join("meta.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|m| {
            let payload: serde_json::Value = serde_json::from_str(m["payload"].as_str()?).ok()?;
            Some(payload["checkpoints"].as_str()?.to_string())
        });
    name.and_then(|n| std::fs::read_to_string(dir.join(format!("cairn-checkpoints-{n}.json"))).ok())
        .unwrap_or_default()
}

/// Waits until the committed index's checkpoints name `rel`: the background update has
/// committed it. Reading the files updates nothing.
#[track_caller]
fn wait_for_index_of(repo: &Path, rel: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if committed_checkpoints(repo).contains(rel) {
            return;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(repo.join(".cairn/index-hook.log"));
            panic!("the background index never took in {rel}; its log: {log:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// After the background update: a foreground update finds nothing left to do (once the
/// background one has let go of the writer lock), search finds `word`, and verify passes.
#[track_caller]
fn index_is_up_to_date(env: &Env, repo: &Path, word: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let refresh = loop {
        let data = env.cairn_in(repo, &["--json", "index"]).code(0).data();
        if data["refresh"]["stale"] == false || Instant::now() > deadline {
            break data["refresh"].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(refresh["stale"], false, "{refresh}");
    for key in ["added", "appended", "reindexed", "removed"] {
        assert_eq!(refresh[key], 0, "{key} in {refresh}");
    }
    env.cairn_in(repo, &["search", word])
        .code(0)
        .stdout_has(word);
    env.cairn_in(repo, &["index", "--verify"]).code(0);
}

/// Waits for the background process `pid` to end (it is no child of the test: its parent, the
/// hook, is gone), so that nothing writes into the test's folder after the test.
fn wait_exit(pid: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            // A zombie waiting to be reaped has ended.
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')) =>
            {
                return;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("the background index {pid} is still running after 60 s");
}

#[test]
fn post_commit_updates_the_index_in_the_background_after_the_previous_hook() {
    let (env, repo) = Env::repo();
    let marker = env.path().join("husky-post-commit");
    hook(
        &repo.join(".husky/post-commit"),
        &format!("git rev-parse HEAD > '{}'", marker.display()),
    );
    env.git(&repo, &["add", ".husky"]);
    env.git(&repo, &["commit", "-qm", "husky"]);
    env.git(&repo, &["config", "core.hooksPath", ".husky"]);
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["chained"], serde_json::json!(["post-commit"]));
    assert_eq!(data["written"], serde_json::json!([]), "init wrote them");
    env.cairn_in(&repo, &["index"]).code(0);

    env.cairn_in(
        &repo,
        &[
            "slog",
            "deploy",
            "zookeeper",
            "rolled the quorum",
            "--no-commit",
            "--now",
            "2026-11-15T10:00:00Z",
        ],
    )
    .code(0);
    env.git(&repo, &["add", "slog"]);
    let started = Instant::now();
    commits(&env, &repo, &["-m", "slog"]);
    let took = started.elapsed();
    wait_for_index_of(&repo, "slog/2026-11-15.jsonl");
    // The husky hook ran, after the commit was made.
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        head(&env, &repo).trim()
    );
    index_is_up_to_date(&env, &repo, "zookeeper");
    eprintln!("git commit with the hooks took {took:?}");

    // By hand, the hook returns at once with the background process's id.
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "run", "post-commit"])
        .code(0)
        .data();
    let pid = data["index_pid"].as_u64().expect("a process id");
    assert!(
        data["chained"]["hook"]
            .as_str()
            .unwrap()
            .ends_with(".husky/post-commit")
    );
    wait_exit(pid);
}

#[test]
fn post_merge_updates_the_index_in_the_background() {
    let (env, repo) = Env::repo();
    let main = env.git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]);
    env.cairn_in(&repo, &["index"]).code(0);
    // A branch's commit, made before the hooks are installed: only the merge runs a hook.
    env.git(&repo, &["checkout", "-qb", "side"]);
    env.cairn_in(
        &repo,
        &[
            "slog",
            "fix",
            "haproxy",
            "raised the maxconn ceiling",
            "--now",
            "2026-11-16T09:00:00Z",
        ],
    )
    .code(0);
    env.git(&repo, &["checkout", "-q", main.trim()]);
    env.cairn_in(&repo, &["hooks", "install"]).code(0);
    // A real `git merge`, with cairn on PATH as the hook needs it.
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .command("git", &repo)
        .env("PATH", path)
        .args(["merge", "-q", "side"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_index_of(&repo, "slog/2026-11-16.jsonl");
    index_is_up_to_date(&env, &repo, "haproxy");
}

#[test]
fn uninstall_leaves_exactly_what_was_there_with_post_hooks_chained() {
    let (env, repo) = Env::repo();
    let marker = env.path().join("merged");
    hook(
        &repo.join(".git/hooks/post-merge"),
        &format!("echo \"$1\" > '{}'", marker.display()),
    );
    let config_before = read(&repo, ".git/config");
    let hooks_before = std::fs::read_dir(repo.join(".git/hooks")).unwrap().count();
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "install"])
        .code(0)
        .data();
    assert_eq!(data["chained"], serde_json::json!(["post-merge"]));
    // git passes post-merge its squash flag; the chained hook gets it.
    let data = env
        .cairn_in(&repo, &["--json", "hooks", "run", "post-merge", "0"])
        .code(0)
        .data();
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "0\n");
    wait_exit(data["index_pid"].as_u64().expect("a process id"));
    env.cairn_in(&repo, &["hooks", "uninstall"]).code(0);
    assert_eq!(read(&repo, ".git/config"), config_before);
    assert_eq!(
        std::fs::read_dir(repo.join(".git/hooks")).unwrap().count(),
        hooks_before
    );
    assert!(repo.join(".git/hooks/post-merge").exists());
}
