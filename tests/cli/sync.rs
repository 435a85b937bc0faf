//! `cairn sync`: two clones of one bare remote on this machine, written to at once, synced.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// A bare remote with `main`, clone A made by `cairn init` and pushed by `cairn sync`, and
/// clone B made by `git clone`.
fn remote_and_two_clones() -> (Env, PathBuf, PathBuf, PathBuf) {
    let env = Env::new();
    let bare = env.path().join("remote.git");
    env.git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let a = env.path().join("a");
    env.cairn(&["init", a.to_str().unwrap()]).code(0);
    env.git(&a, &["remote", "add", "origin", bare.to_str().unwrap()]);
    let data = env.cairn_in(&a, &["--json", "sync"]).code(0).data();
    assert_eq!(data["pushed"], true, "{data}");
    assert_eq!(data["new_remote_branch"], true, "{data}");
    env.git(env.path(), &["clone", "-q", bare.to_str().unwrap(), "b"]);
    let b = env.path().join("b");
    (env, bare, a, b)
}

/// Every line of every `.jsonl` file under `dir`, recursively, by file relative to `root`.
fn jsonl_tree(root: &Path, dir: &str) -> BTreeMap<String, Vec<Value>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&p).unwrap();
                assert!(
                    text.is_empty() || text.ends_with('\n'),
                    "{} lacks its last newline",
                    p.display()
                );
                let lines = text
                    .lines()
                    .map(|l| {
                        serde_json::from_str(l)
                            .unwrap_or_else(|e| panic!("{}: {e}: {l}", p.display()))
                    })
                    .collect();
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, lines);
            }
        }
    }
    out
}

/// The ids of the records (not events) in `dir`, each with how many times it occurs.
fn ids(root: &Path, dir: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for lines in jsonl_tree(root, dir).values() {
        for v in lines {
            if v.get("op").is_some() {
                continue;
            }
            if let Some(id) = v["id"].as_str() {
                *out.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    out
}

fn spawn(env: &Env, cwd: &Path, args: &[&str]) -> std::process::Child {
    let mut cmd = env.command(BIN, cwd);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("spawn cairn")
}

fn transcript(name: &str) -> String {
    fixtures()
        .join("sessions/claude-code")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The issue's test: slog, remember and sessions ingest at once on both clones, then sync A,
/// sync B, sync A: both hold every entry exactly once and `cairn index --verify` passes.
#[test]
fn concurrent_writes_on_two_clones_end_with_every_entry_once_on_both() {
    let (env, _bare, a, b) = remote_and_two_clones();
    let shared = transcript("5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl");
    let only_a = transcript("1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let only_b = transcript("session-9eda1058.jsonl");
    let mut children = Vec::new();
    for (side, root, own) in [("a", &a, &only_a), ("b", &b, &only_b)] {
        for i in 0..6 {
            let detail = format!("{side} entry {i}");
            children.push((
                "slog",
                spawn(&env, root, &["--json", "slog", "deploy", "caddy", &detail]),
            ));
        }
        let text = format!("on machine {side} the redis cache must be flushed before deploys");
        children.push((
            "remember",
            spawn(&env, root, &["--json", "remember", &text]),
        ));
        // The same fact at the same moment on both machines: one record, one id.
        children.push((
            "remember",
            spawn(
                &env,
                root,
                &[
                    "--json",
                    "--now",
                    "2026-12-01T09:00:00Z",
                    "remember",
                    "never restart the nats cluster during business hours",
                ],
            ),
        ));
        children.push((
            "ingest",
            spawn(&env, root, &["--json", "sessions", "ingest", own]),
        ));
        children.push((
            "ingest",
            spawn(&env, root, &["--json", "sessions", "ingest", &shared]),
        ));
    }
    let mut slog_ids = BTreeSet::new();
    for (what, child) in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{what}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if what == "slog" {
            let v: Value = serde_json::from_str(stdout.trim()).unwrap();
            slog_ids.insert(v["data"]["entry"]["id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(slog_ids.len(), 12);
    let before_a = ids(&a, "vault");
    let before_b = ids(&b, "vault");

    env.cairn_in(&a, &["sync"]).code(0);
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["merge"], "merge", "{data}");
    // Whether git's union kept the shared nats fact twice depends on the order the processes
    // ran in; either way it ends once (checked below).
    let data = env.cairn_in(&a, &["--json", "sync"]).code(0).data();
    assert_eq!(data["merge"], "fast-forward", "{data}");
    assert_eq!(data["pushed"], false, "{data}");

    for root in [&a, &b] {
        let slog = ids(root, "slog");
        assert_eq!(slog.keys().cloned().collect::<BTreeSet<_>>(), slog_ids);
        assert!(slog.values().all(|&n| n == 1), "{slog:?}");
        let vault = ids(root, "vault");
        assert!(vault.values().all(|&n| n == 1), "a record twice: {vault:?}");
        for id in before_a.keys().chain(before_b.keys()) {
            assert!(vault.contains_key(id), "{id} lost");
        }
        env.cairn_in(root, &["index", "--verify"]).code(0);
        assert_eq!(git_status(&env, root), "");
        env.git(root, &["fsck", "--strict", "--no-progress"]);
    }
    assert_eq!(jsonl_tree(&a, "vault"), jsonl_tree(&b, "vault"));
    assert_eq!(jsonl_tree(&a, "slog"), jsonl_tree(&b, "slog"));
    assert_eq!(
        env.git(&a, &["rev-parse", "HEAD"]),
        env.git(&b, &["rev-parse", "HEAD"])
    );
    // Each query finds every entry once.
    let found = env
        .cairn_in(&b, &["--json", "slog", "query", "--limit", "0"])
        .code(0)
        .data();
    assert_eq!(found["entries"].as_array().unwrap().len(), 12);
}

/// The same record appended on both sides, in an order git's union cannot line up (A: S
/// then P, B: Q then S): the merged file holds S twice until sync keeps it once.
#[test]
fn a_record_both_sides_appended_in_another_order_is_kept_once() {
    let (env, _bare, a, b) = remote_and_two_clones();
    let remember = |root: &Path, text: &str| {
        env.cairn_in(root, &["--now", "2026-12-01T09:00:00Z", "remember", text])
            .code(0);
    };
    let shared = "never restart the nats cluster during business hours";
    remember(&a, shared);
    remember(&a, "the caddy config lives in /etc/caddy on every host");
    remember(&b, "redis keeps its snapshots on the data volume");
    remember(&b, shared);
    env.cairn_in(&a, &["sync"]).code(0);
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["duplicates_removed"], 1, "{data}");
    assert_eq!(
        data["repaired"],
        serde_json::json!(["vault/observations/2026-12-01.jsonl"]),
        "{data}"
    );
    let vault = ids(&b, "vault");
    assert_eq!(vault.len(), 3, "{vault:?}");
    assert!(vault.values().all(|&n| n == 1), "{vault:?}");
    env.cairn_in(&b, &["index", "--verify"]).code(0);
    assert_eq!(git_status(&env, &b), "");
}

/// MEMORY.md edited on both sides: exit 2 naming it, the merge left as git leaves it, nothing
/// lost; resolved and committed by the person, the next sync pushes it.
#[test]
fn a_memory_conflict_stops_naming_the_file_and_leaves_the_merge_to_the_person() {
    let (env, _bare, a, b) = remote_and_two_clones();
    let add = |root: &Path, text: &str| {
        env.cairn_in(root, &["memory", "add", "--section", "operations", text])
            .code(0);
    };
    add(&a, "caddy reloads its config on SIGUSR1");
    env.cairn_in(&a, &["slog", "deploy", "caddy", "from a"])
        .code(0);
    add(&b, "redis restarts every night at three");
    env.cairn_in(&b, &["slog", "fix", "redis", "from b"])
        .code(0);
    env.cairn_in(&a, &["sync"]).code(0);
    let head_before = env.git(&b, &["rev-parse", "HEAD"]);

    let run = env.cairn_in(&b, &["--json", "sync"]).code(2);
    let err = run.json();
    assert_eq!(err["type"], "error");
    assert_eq!(err["data"]["kind"], "conflict", "{err}");
    let message = err["data"]["message"].as_str().unwrap();
    assert!(message.contains("MEMORY.md"), "{message}");
    let fix = err["data"]["fix"].as_str().unwrap();
    assert!(
        fix.contains("git commit") && fix.contains("cairn sync"),
        "{fix}"
    );
    // As git leaves a conflicted merge: MERGE_HEAD, markers, HEAD unmoved.
    assert!(b.join(".git/MERGE_HEAD").exists());
    assert_eq!(env.git(&b, &["rev-parse", "HEAD"]), head_before);
    let memory = read(&b, "MEMORY.md");
    assert!(
        memory.contains("<<<<<<<") && memory.contains(">>>>>>>"),
        "{memory}"
    );
    assert!(memory.contains("caddy reloads") && memory.contains("redis restarts"));
    assert!(git_status(&env, &b).contains("UU MEMORY.md"));
    // The log merged whole: both entries, nothing lost.
    let slog = ids(&b, "slog");
    assert_eq!(slog.len(), 2, "{slog:?}");
    // Running sync again while it is unresolved says so again and changes nothing.
    env.cairn_in(&b, &["sync"])
        .code(2)
        .stderr_has("MEMORY.md")
        .stderr_has("git mergetool");

    let resolved: String = memory
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<") && !l.starts_with("=======") && !l.starts_with(">>>>>>>")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(b.join("MEMORY.md"), resolved).unwrap();
    env.git(&b, &["add", "MEMORY.md"]);
    env.git(&b, &["commit", "-q", "--no-edit"]);
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["pushed"], true, "{data}");
    env.cairn_in(&a, &["sync"]).code(0);
    let memory = read(&a, "MEMORY.md");
    assert!(memory.contains("caddy reloads") && memory.contains("redis restarts"));
    for root in [&a, &b] {
        env.cairn_in(root, &["index", "--verify"]).code(0);
        env.cairn_in(root, &["memory", "lint"]).code(0);
        assert_eq!(git_status(&env, root), "");
    }
}

/// A person resolves the conflict and stages it but does not commit: the next sync commits
/// the merge it left.
#[test]
fn a_resolved_but_uncommitted_merge_is_finished_by_the_next_sync() {
    let (env, _bare, a, b) = remote_and_two_clones();
    env.cairn_in(
        &a,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "caddy reloads on SIGUSR1",
        ],
    )
    .code(0);
    env.cairn_in(
        &b,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "redis restarts nightly",
        ],
    )
    .code(0);
    env.cairn_in(&a, &["sync"]).code(0);
    env.cairn_in(&b, &["sync"]).code(2);
    std::fs::write(
        b.join("MEMORY.md"),
        read(&a, "MEMORY.md").replace(
            "caddy reloads on SIGUSR1\n",
            "caddy reloads on SIGUSR1\n- (2026-12-01) redis restarts nightly\n",
        ),
    )
    .unwrap();
    env.git(&b, &["add", "MEMORY.md"]);
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["finished_merge"], true, "{data}");
    assert!(!b.join(".git/MERGE_HEAD").exists());
    let parents = env.git(&b, &["log", "-1", "--format=%P", "HEAD"]);
    assert_eq!(parents.split_whitespace().count(), 2, "a merge commit");
    assert_eq!(git_status(&env, &b), "");
}

/// Both machines made ADR 1 (and B's ADR 2 supersedes its own 1): B's unpushed 1 becomes 3,
/// with the relation and the links to it rewritten, in a commit of its own.
#[test]
fn an_adr_number_taken_on_both_sides_is_renumbered_with_links_rewritten() {
    let (env, _bare, a, b) = remote_and_two_clones();
    env.cairn_in(&a, &["adr", "new", "Use caddy for TLS"])
        .code(0);
    env.cairn_in(&a, &["sync"]).code(0);
    env.cairn_in(&b, &["adr", "new", "Use nats for the bus"])
        .code(0);
    env.cairn_in(&b, &["adr", "new", "Use postgres", "--supersedes", "1"])
        .code(0);
    // A Markdown link to B's record from its other record and from MEMORY.md.
    let second = b.join("decisions/0002-use-postgres.md");
    let text = std::fs::read_to_string(&second).unwrap().replace(
        "## Context\n",
        "## Context\n\nReplaces [ADR 1](0001-use-nats-for-the-bus.md); unrelated to ADR 1 of others.\n",
    );
    std::fs::write(&second, text).unwrap();
    env.cairn_in(
        &b,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "the bus is nats, see [ADR 1](decisions/0001-use-nats-for-the-bus.md)",
        ],
    )
    .code(0);
    env.git(&b, &["commit", "-qam", "link to the bus record"]);
    let theirs = read(&a, "decisions/0001-use-caddy-for-tls.md");

    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    let moved = data["renumbered"].as_array().unwrap();
    assert_eq!(moved.len(), 1, "{data}");
    assert_eq!(moved[0]["from"], 1);
    assert_eq!(moved[0]["to"], 3);
    assert_eq!(moved[0]["new_name"], "0003-use-nats-for-the-bus.md");

    assert!(!b.join("decisions/0001-use-nats-for-the-bus.md").exists());
    let renamed = read(&b, "decisions/0003-use-nats-for-the-bus.md");
    assert!(renamed.contains("\nnumber: 3\n"), "{renamed}");
    assert!(
        renamed.contains("\n# 3. Use nats for the bus\n"),
        "{renamed}"
    );
    assert!(renamed.contains("superseded-by: [2]"), "{renamed}");
    assert!(
        renamed.contains("renumbered-from: 0001-use-nats-for-the-bus.md"),
        "{renamed}"
    );
    let second = read(&b, "decisions/0002-use-postgres.md");
    assert!(second.contains("supersedes: [3]"), "{second}");
    assert!(
        second.contains("[ADR 3](0003-use-nats-for-the-bus.md); unrelated to ADR 1 of others."),
        "{second}"
    );
    let memory = read(&b, "MEMORY.md");
    assert!(
        memory.contains("[ADR 3](decisions/0003-use-nats-for-the-bus.md)"),
        "{memory}"
    );
    // The remote's record is untouched.
    assert_eq!(read(&b, "decisions/0001-use-caddy-for-tls.md"), theirs);
    // Its own commit, after the merge.
    let subject = env.git(&b, &["log", "-1", "--format=%s"]);
    assert_eq!(
        subject.trim(),
        "sync: renumber ADR 1 to 3 (taken on the remote)"
    );
    let parents = env.git(&b, &["log", "-1", "--format=%P", "HEAD~1"]);
    assert_eq!(parents.split_whitespace().count(), 2, "HEAD~1 is the merge");
    env.cairn_in(&b, &["adr", "lint"]).code(0);
    env.cairn_in(&b, &["index", "--verify"]).code(0);
    assert_eq!(git_status(&env, &b), "");

    env.cairn_in(&a, &["sync"]).code(0);
    let list = env.cairn_in(&a, &["--json", "adr", "list"]).code(0).data();
    let numbers: Vec<u64> = list["adrs"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|r| r["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    env.cairn_in(&a, &["adr", "lint"]).code(0);
}

#[test]
fn no_remote_is_an_error_that_says_how_to_add_one() {
    let (env, repo) = Env::repo();
    let before = env.git(&repo, &["rev-parse", "HEAD"]);
    let err = env.cairn_in(&repo, &["--json", "sync"]).code(2).json();
    assert_eq!(err["data"]["kind"], "git");
    assert!(
        err["data"]["message"]
            .as_str()
            .unwrap()
            .contains("no git remote"),
        "{err}"
    );
    assert!(
        err["data"]["fix"]
            .as_str()
            .unwrap()
            .contains("git remote add origin"),
        "{err}"
    );
    env.cairn_in(&repo, &["sync", "upstream"])
        .code(2)
        .stderr_has("no git remote named upstream");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), before);
}

/// A day file committed on one side without its last newline (a hand edit): after the union
/// merge each record is on its own line and the file ends in a newline, so the next append
/// does not take the last record for a torn line.
#[test]
fn a_last_line_without_its_newline_is_neither_glued_nor_lost() {
    let (env, _bare, a, b) = remote_and_two_clones();
    let day = "slog/2026-12-01.jsonl";
    let pin = ["--now", "2026-12-01T08:00:00Z"];
    env.cairn_in(
        &a,
        &[&pin[..], &["slog", "deploy", "caddy", "from a"]].concat(),
    )
    .code(0);
    env.cairn_in(
        &b,
        &[&pin[..], &["slog", "fix", "redis", "from b"]].concat(),
    )
    .code(0);
    let text = read(&b, day);
    let by_hand = r#"{"id":"sl-byhand000001","ts":"2026-12-01T08:30:00Z","action":"note","tool":"vim","detail":"typed by hand"}"#;
    std::fs::write(b.join(day), format!("{text}{by_hand}")).unwrap();
    env.git(&b, &["commit", "-qam", "a line by hand"]);
    // B's file goes out first, so that in A's merge its unterminated line comes last.
    env.cairn_in(&b, &["sync"]).code(0);
    let data = env.cairn_in(&a, &["--json", "sync"]).code(0).data();
    assert_eq!(data["merge"], "merge", "{data}");
    assert_eq!(data["repaired"], serde_json::json!([day]), "{data}");
    env.cairn_in(&b, &["sync"]).code(0);
    for root in [&a, &b] {
        let merged = read(root, day);
        assert!(merged.ends_with('\n'), "{merged:?}");
        assert_eq!(merged.lines().count(), 3, "{merged}");
        for line in merged.lines() {
            serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        }
    }
    let run = env
        .cairn_in(
            &b,
            &[&pin[..], &["slog", "deploy", "nats", "after"]].concat(),
        )
        .code(0);
    assert!(!run.stderr.contains("torn"), "{}", run.stderr);
    assert_eq!(ids(&b, "slog").len(), 4);
    env.cairn_in(&b, &["index", "--verify"]).code(0);
}

/// Two `cairn init`s of one knowledge repository (the second machine did not clone): the
/// histories are joined once, with a warning.
#[test]
fn two_inits_pushed_to_one_remote_are_joined() {
    let env = Env::new();
    let bare = env.path().join("remote.git");
    env.git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let mut roots = Vec::new();
    for side in ["a", "b"] {
        let root = env.path().join(side);
        if side == "b" {
            // B adopted a repository with a commit of its own (two inits within one second
            // would otherwise make the very same commit).
            std::fs::create_dir_all(&root).unwrap();
            env.git(&root, &["init", "-q", "-b", "main"]);
            std::fs::write(root.join("notes.txt"), "b's own notes\n").unwrap();
            env.git(&root, &["add", "notes.txt"]);
            env.git(&root, &["commit", "-qm", "notes"]);
        }
        env.cairn(&["init", root.to_str().unwrap()]).code(0);
        env.git(&root, &["remote", "add", "origin", bare.to_str().unwrap()]);
        env.cairn_in(&root, &["slog", "configure", "cairn", side])
            .code(0);
        roots.push(root);
    }
    env.cairn_in(&roots[0], &["sync"]).code(0);
    env.cairn_in(&roots[1], &["sync"])
        .code(0)
        .stderr_has("shared no history");
    env.cairn_in(&roots[0], &["sync"]).code(0);
    for root in &roots {
        assert_eq!(ids(root, "slog").len(), 2);
        assert_eq!(read(root, "notes.txt"), "b's own notes\n");
        env.cairn_in(root, &["index", "--verify"]).code(0);
    }
}

/// A remote that never answers: the git run is stopped at the timeout, never a hang.
#[test]
fn a_remote_that_never_answers_is_stopped_at_the_timeout() {
    let (env, repo) = Env::repo();
    let ssh = env.path().join("slow-ssh");
    std::fs::write(&ssh, "#!/bin/sh\nexec sleep 60\n").unwrap();
    std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "ssh://git@remote.invalid/memory.git",
        ],
    );
    let mut cmd = env.command(BIN, &repo);
    cmd.args(["sync", "--timeout", "2"])
        .env("GIT_SSH_COMMAND", ssh.to_str().unwrap());
    let run = Run::from(cmd.output().unwrap());
    let run = run.code(2).stderr_has("did not finish within 2 s");
    assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
}

/// A sync killed while `git merge` was updating the working tree (found by `scripts/crash`):
/// git had changed files but not yet written `MERGE_HEAD`, so every later sync refused ("your
/// local changes would be overwritten by merge") and the files stayed changed for good. The
/// kill is made here at the failpoint after the sync notes its merge, and git's half-done
/// checkout is made by hand (the remote's version of the file it changes).
#[test]
fn a_sync_killed_inside_git_merge_is_undone_and_merged_by_the_next_sync() {
    let (env, bare, a, b) = remote_and_two_clones();
    const NOW: &str = "2026-12-01T12:00:00Z";
    env.cairn_in(&b, &["--now", NOW, "slog", "deploy", "caddy", "from b"])
        .code(0);
    env.git(&b, &["push", "-q", "origin", "main"]);
    env.cairn_in(&a, &["--now", NOW, "slog", "fix", "redis", "from a"])
        .code(0);
    let mut cmd = env.command(BIN, &a);
    cmd.args(["--now", NOW, "sync"])
        .env("CAIRN_FAILPOINT", "sync-merge-noted");
    assert!(!cmd.output().unwrap().status.success());
    // What git leaves when killed mid-checkout: the remote's file in the tree and the index.
    env.git(
        &a,
        &["checkout", "FETCH_HEAD", "--", "slog/2026-12-01.jsonl"],
    );
    env.cairn_in(&a, &["--now", NOW, "sync"]).code(0);
    assert_eq!(git_status(&env, &a), "");
    let head = env.git(&a, &["show", "HEAD:slog/2026-12-01.jsonl"]);
    assert!(head.contains("from a") && head.contains("from b"), "{head}");
    assert_eq!(
        env.git(&a, &["rev-parse", "HEAD"]),
        env.git(&bare, &["rev-parse", "main"])
    );
}

/// A sync killed while it renumbered ADRs (a file renamed, the links to it not yet rewritten,
/// nothing committed) left the rename half done, and the next sync picked the number after
/// the half-renamed file: `renumber_collisions` now notes its moves in
/// `.cairn/sync-renumber.json` before touching a file, and the next sync finishes them.
#[test]
fn a_sync_killed_while_renumbering_is_finished_by_the_next_sync() {
    let (env, _bare, a, b) = remote_and_two_clones();
    env.cairn_in(&a, &["adr", "new", "Use caddy for TLS"])
        .code(0);
    env.cairn_in(&a, &["sync"]).code(0);
    env.cairn_in(&b, &["adr", "new", "Use nats for the bus"])
        .code(0);
    env.cairn_in(&b, &["adr", "new", "Use postgres", "--supersedes", "1"])
        .code(0);
    env.cairn_in(
        &b,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "the bus is nats, see [ADR 1](decisions/0001-use-nats-for-the-bus.md)",
        ],
    )
    .code(0);
    let mut cmd = env.command(BIN, &b);
    cmd.args(["sync"])
        .env("CAIRN_FAILPOINT", "sync-renumber-mid");
    assert!(!cmd.output().unwrap().status.success());
    // Killed half way: the record renamed, the links to it not yet, nothing committed.
    assert!(b.join("decisions/0003-use-nats-for-the-bus.md").exists());
    assert!(!b.join("decisions/0001-use-nats-for-the-bus.md").exists());
    assert!(read(&b, "MEMORY.md").contains("decisions/0001-use-nats-for-the-bus.md"));
    assert_ne!(git_status(&env, &b), "");

    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    let moved = data["renumbered"].as_array().unwrap();
    assert_eq!(moved.len(), 1, "{data}");
    assert_eq!(moved[0]["to"], 3, "{data}");
    assert_eq!(data["pushed"], true, "{data}");
    assert_eq!(git_status(&env, &b), "");
    assert!(!b.join(".cairn/sync-renumber.json").exists());
    let names: BTreeSet<String> = std::fs::read_dir(b.join("decisions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("000"))
        .collect();
    let want: BTreeSet<String> = [
        "0001-use-caddy-for-tls.md",
        "0002-use-postgres.md",
        "0003-use-nats-for-the-bus.md",
    ]
    .map(String::from)
    .into();
    assert_eq!(names, want);
    let renamed = read(&b, "decisions/0003-use-nats-for-the-bus.md");
    assert!(renamed.contains("\nnumber: 3\n"), "{renamed}");
    assert!(renamed.contains("superseded-by: [2]"), "{renamed}");
    assert!(read(&b, "decisions/0002-use-postgres.md").contains("supersedes: [3]"));
    assert!(
        read(&b, "MEMORY.md").contains("[ADR 3](decisions/0003-use-nats-for-the-bus.md)"),
        "links follow the record"
    );
    let subject = env.git(&b, &["log", "-1", "--format=%s"]);
    assert_eq!(
        subject.trim(),
        "sync: renumber ADR 1 to 3 (taken on the remote)"
    );
    env.cairn_in(&b, &["adr", "lint"]).code(0);
    env.cairn_in(&b, &["doctor", "--dry-run"]).code(0);
    env.git(&b, &["fsck", "--no-progress"]);
}

/// What a sync killed during `git fetch` left (seed 15 of `scripts/crash --scenario sync`):
/// git runs in a process group of its own, which the kill did not reach, so the fetch ran on
/// beside the next sync's fetch ("cannot lock ref 'refs/remotes/origin/main': is at X but
/// expected Y"), or died leaving `refs/remotes/origin/main.lock`. Rebuilt by hand: a process
/// group still running from the repository, noted in `.cairn/sync-git.pid`, and the lock.
#[test]
fn a_sync_killed_during_git_fetch_leaves_nothing_in_the_next_syncs_way() {
    use std::os::unix::process::CommandExt;
    let (env, bare, a, b) = remote_and_two_clones();
    env.cairn_in(&b, &["slog", "deploy", "caddy", "from b"])
        .code(0);
    env.git(&b, &["push", "-q", "origin", "main"]);
    env.cairn_in(&a, &["slog", "fix", "redis", "from a"])
        .code(0);

    // A git that waits (on its stdin): sync stops only a noted process that is git, since
    // the note is derived state a clone may carry (ADR 66).
    let mut left = std::process::Command::new("git")
        .args(["cat-file", "--batch"])
        .stdin(std::process::Stdio::piped())
        .current_dir(&a)
        .process_group(0)
        .spawn()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", left.id())).unwrap();
    let started = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    std::fs::write(
        a.join(".cairn/sync-git.pid"),
        format!("{} {started}\n", left.id()),
    )
    .unwrap();
    let lock = a.join(".git/refs/remotes/origin/main.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "").unwrap();

    let data = env.cairn_in(&a, &["--json", "sync"]).code(0).data();
    assert_eq!(data["merge"], "merge", "{data}");
    assert_eq!(data["pushed"], true, "{data}");
    // The group left running was stopped, and the lock it held is gone.
    let status = left.try_wait().unwrap();
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    assert!(!lock.exists());
    assert!(!a.join(".cairn/sync-git.pid").exists());
    assert_eq!(
        env.git(&a, &["rev-parse", "HEAD"]),
        env.git(&bare, &["rev-parse", "main"])
    );
    assert_eq!(git_status(&env, &a), "");
    let head = env.git(&a, &["log", "-p", "-3"]);
    assert!(head.contains("from a") && head.contains("from b"), "{head}");
}

/// The note of a git run is only a hint: a pid that now names another process (or none) is
/// left alone, and the sync goes on.
#[test]
fn a_stale_git_note_naming_another_process_is_dropped() {
    use std::os::unix::process::CommandExt;
    let (env, _bare, a, _b) = remote_and_two_clones();
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&a)
        .process_group(0)
        .spawn()
        .unwrap();
    // Its pid with another start time: a pid the system gave to someone else since.
    std::fs::write(a.join(".cairn/sync-git.pid"), format!("{} 1\n", other.id())).unwrap();
    env.cairn_in(&a, &["sync"]).code(0);
    assert!(
        other.try_wait().unwrap().is_none(),
        "another process was killed"
    );
    assert!(!a.join(".cairn/sync-git.pid").exists());
    other.kill().unwrap();
    other.wait().unwrap();
}

/// Every text file of HEAD's tree in `root`, joined.
fn head_text(env: &Env, root: &Path) -> String {
    let mut out = String::new();
    for path in env
        .git(root, &["ls-tree", "-r", "--name-only", "HEAD"])
        .lines()
    {
        out.push_str(&env.git(root, &["show", &format!("HEAD:{path}")]));
        out.push('\n');
    }
    out
}

/// Secrets a remote writer let through (an older cairn, a hand edit committed with plain git):
/// the sync that brings them in redacts them before it commits, both when it would have been a
/// fast-forward and when it merges, says so, and pushes only the redacted tree; a sync killed
/// while redacting is finished by the next one.
#[test]
fn secrets_a_remote_brings_in_are_redacted_before_the_merge_is_committed() {
    let (env, bare, a, b) = remote_and_two_clones();
    const NOW: &str = "2026-12-01T12:00:00Z";
    let secrets = secret_corpus();
    assert!(secrets.len() >= 20);
    // B writes every secret by hand, in MEMORY.md, a slog day file and a vault note.
    let (first, second) = secrets.split_at(secrets.len() / 2);
    let by_hand = |batch: &[(String, String)], tag: &str| {
        let mut memory = read(&b, "MEMORY.md");
        let mut slog = String::new();
        let mut note = String::from("# notes\n\n");
        for (i, (kind, text)) in batch.iter().enumerate() {
            let line = text.replace('\n', " ");
            memory.push_str(&format!("- (2026-12-01) {tag} {kind} {i}: {line}\n"));
            slog.push_str(&format!(
                "{}\n",
                serde_json::json!({"id": format!("{tag}-{i}"), "ts": NOW, "action": "deploy",
                    "tool": "caddy", "detail": line})
            ));
            note.push_str(&format!("- {line}\n"));
        }
        std::fs::write(b.join("MEMORY.md"), memory).unwrap();
        std::fs::create_dir_all(b.join("vault/notes")).unwrap();
        std::fs::write(b.join(format!("vault/notes/{tag}.md")), note).unwrap();
        let day = b.join(format!(
            "slog/2026-11-0{}.jsonl",
            if tag == "one" { 1 } else { 2 }
        ));
        std::fs::write(&day, slog).unwrap();
        env.git(&b, &["add", "-A"]);
        env.git(&b, &["commit", "-q", "--no-verify", "-m", tag]);
        env.git(&b, &["push", "-q", "origin", "main"]);
    };
    let leaked = |text: &str, batch: &[(String, String)]| -> Vec<String> {
        batch
            .iter()
            .map(|(_, t)| secret_of(t))
            .filter(|v| text.contains(v.as_str()))
            .collect()
    };

    // A has nothing new: this would be a fast-forward, and is a merge that redacts.
    by_hand(first, "one");
    let done = env.cairn_in(&a, &["--json", "--now", NOW, "sync"]).code(0);
    let data = done.data();
    assert_eq!(data["merge"], "merge", "{data}");
    let files: Vec<&str> = data["redacted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"MEMORY.md"), "{data}");
    assert!(files.contains(&"vault/notes/one.md"), "{data}");
    assert!(files.contains(&"slog/2026-11-01.jsonl"), "{data}");
    assert!(done.stderr.contains("rotate"), "{}", done.stderr);
    let tree = head_text(&env, &a);
    assert_eq!(leaked(&tree, first), Vec::<String>::new());
    assert!(tree.contains("[REDACTED:"));
    // The slog lines are still JSON, each record once.
    assert_eq!(ids(&a, "slog").len(), first.len());
    assert_eq!(git_status(&env, &a), "");
    env.cairn_in(&a, &["index", "--verify"]).code(0);
    assert_eq!(
        env.git(&a, &["rev-parse", "HEAD"]),
        env.git(&bare, &["rev-parse", "main"]),
        "the redacted merge was pushed"
    );

    // Both sides wrote: a merge, killed after its first redacted file, then finished.
    env.git(&b, &["pull", "-q", "--no-rebase", "origin", "main"]);
    by_hand(second, "two");
    env.cairn_in(&a, &["--now", NOW, "remember", "caddy reloads on SIGUSR1"])
        .code(0);
    let mut cmd = env.command(BIN, &a);
    cmd.args(["--now", NOW, "sync"])
        .env("CAIRN_FAILPOINT", "sync-redact-mid");
    assert!(!cmd.output().unwrap().status.success());
    assert!(a.join(".git/MERGE_HEAD").exists());
    let data = env
        .cairn_in(&a, &["--json", "--now", NOW, "sync"])
        .code(0)
        .data();
    assert_eq!(data["finished_merge"], true, "{data}");
    let tree = head_text(&env, &a);
    assert_eq!(leaked(&tree, second), Vec::<String>::new(), "{data}");
    assert_eq!(ids(&a, "slog").len(), secrets.len());
    assert_eq!(git_status(&env, &a), "");
    env.cairn_in(&a, &["index", "--verify"]).code(0);
    env.git(&a, &["fsck", "--strict", "--no-progress"]);

    // B takes the redacted tree back: its next sync is a fast-forward with nothing to redact.
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["redacted"], serde_json::json!([]), "{data}");
    let tree = head_text(&env, &b);
    assert_eq!(
        leaked(&tree, &secrets),
        Vec::<String>::new(),
        "{data}\n{tree}"
    );
}

/// Seed 14, trial 5 of `scripts/crash --scenario sync`: a sync killed after its renumbering
/// commit moved the branch and before git's index was written. The rerun had nothing to
/// commit, so nothing finished the commit, and `git status` showed the renumbering undone
/// (`RD 0002 -> 0001`, `?? 0002`). Sync (and doctor) now finish a commit cut short first.
#[test]
fn a_sync_killed_between_its_commit_and_the_index_leaves_git_status_clean() {
    let (env, bare, a, b) = remote_and_two_clones();
    env.cairn_in(&a, &["adr", "new", "Use caddy for TLS"])
        .code(0);
    env.cairn_in(&a, &["sync"]).code(0);
    env.cairn_in(&b, &["adr", "new", "Use nats for the bus"])
        .code(0);
    let mut cmd = env.command(BIN, &b);
    cmd.args(["sync"])
        .env("CAIRN_FAILPOINT", "commit-before-index");
    assert!(!cmd.output().unwrap().status.success());
    assert!(b.join(".git/cairn-committing").exists());
    let subject = env.git(&b, &["log", "-1", "--format=%s"]);
    assert_eq!(
        subject.trim(),
        "sync: renumber ADR 1 to 2 (taken on the remote)"
    );
    assert_ne!(git_status(&env, &b), "", "the index is behind HEAD");
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["pushed"], true, "{data}");
    assert_eq!(git_status(&env, &b), "");
    assert!(!b.join(".git/cairn-committing").exists());
    assert_eq!(
        env.git(&b, &["rev-parse", "HEAD"]),
        env.git(&bare, &["rev-parse", "main"])
    );
    env.cairn_in(&b, &["doctor", "--dry-run"]).code(0);

    // doctor finishes one too, and says so.
    env.cairn_in(&a, &["sync"]).code(0);
    let mut cmd = env.command(BIN, &a);
    cmd.args(["adr", "new", "Use redis for the cache"])
        .env("CAIRN_FAILPOINT", "commit-before-index");
    assert!(!cmd.output().unwrap().status.success());
    assert_ne!(git_status(&env, &a), "");
    env.cairn_in(&a, &["doctor", "--dry-run"]).code(1);
    let done = env.cairn_in(&a, &["--json", "doctor"]).code(0).data();
    assert!(done.to_string().contains("cairn-committing"), "{done}");
    assert_eq!(git_status(&env, &a), "");
    env.cairn_in(&a, &["doctor", "--dry-run"]).code(0);
}

/// Found by `scripts/crash` (sync, seed 14): a sync killed while it wrote a record (a merged,
/// repaired or renumbered ADR) left `decisions/.cairn-tmp-PID-*` behind, and the rerun that
/// finished the job did not remove it. A rerun now sweeps every folder of the work tree of a
/// dead run's staging files, and keeps a live one's.
#[test]
fn a_sync_rerun_removes_what_a_killed_sync_left_staged() {
    let (env, _bare, a, _b) = remote_and_two_clones();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let dead_adr = a.join(format!("decisions/.cairn-tmp-{dead}-Ab12Cd"));
    let dead_card = a.join(format!(
        "vault/sessions/claude-code/.cairn-tmp-{dead}-Ef56Gh"
    ));
    let live = a.join(format!(
        "decisions/.cairn-tmp-{}-Xy34Zw",
        std::process::id()
    ));
    for f in [&dead_adr, &dead_card, &live] {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, b"---\nhalf").unwrap();
    }
    env.cairn_in(&a, &["sync"]).code(0);
    assert!(!dead_adr.exists(), "a dead sync's staged ADR is removed");
    assert!(
        !dead_card.exists(),
        "a dead run's staged file deeper down is removed"
    );
    assert!(live.exists(), "a live run's staging file is kept");
}
