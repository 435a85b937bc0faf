//! A repository is untrusted input (DESIGN.md section 10, issue 30 points 1 and 2): a clone
//! whose committed files include links (`.cairn` itself, links inside `.cairn/`, links in
//! decisions/, slog/, vault/), odd names and derived-looking files (`.cairn/pending.json`,
//! `.cairn/journal.json`, a garbage index, a huge telemetry file). Every command runs in it;
//! the folder around the clone must be byte for byte the same afterwards (ADR 66).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{BIN, Env, Run};

/// Every entry under `dir` (links not followed): path -> `dir`, `link TARGET` or the file's
/// bytes, leaving out the folders in `skip`.
fn snapshot(dir: &Path, skip: &[&Path]) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if skip.iter().any(|s| path == *s) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path);
                "dir".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            out.insert(rel, what);
        }
    }
    out
}

/// Runs cairn with a time limit: a command may fail, never hang or panic.
#[track_caller]
fn run_bounded(env: &Env, cwd: &Path, args: &[&str]) -> Run {
    let mut cmd = env.command(BIN, cwd);
    cmd.args(args);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(cmd.output());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(180))
        .unwrap_or_else(|_| panic!("cairn {args:?} still running after 180 s"))
        .expect("run cairn");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        [0, 1, 2].contains(&run.code) && !run.stderr.contains("panicked"),
        "cairn {args:?} exited {}:\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
    run
}

/// A bare remote, the knowledge repository `origin` made by `cairn init` with one slog entry
/// (it pushes to the remote) and a place for `clone`.
fn origin() -> (Env, PathBuf, PathBuf) {
    let env = Env::new();
    env.git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let bare = env.path().join("remote.git");
    let origin = env.path().join("origin");
    env.cairn(&["init", origin.to_str().unwrap()]).code(0);
    env.git(
        &origin,
        &["remote", "add", "origin", bare.to_str().unwrap()],
    );
    env.cairn_in(&origin, &["slog", "deploy", "api", "went out at noon"])
        .code(0);
    (env, bare, origin)
}

/// Commits everything `origin` holds now (ignored `.cairn/` files too, as `git add -f`
/// does), pushes it and clones the remote into `<tmp>/NAME`.
fn commit_and_clone(env: &Env, origin: &Path, bare: &Path, name: &str) -> PathBuf {
    env.git(origin, &["add", "-A"]);
    env.git(origin, &["add", "-f", ".cairn"]);
    env.git(origin, &["commit", "-q", "-m", "hostile"]);
    env.git(origin, &["push", "-q", "origin", "HEAD:main"]);
    env.git(env.path(), &["clone", "-q", bare.to_str().unwrap(), name]);
    env.path().join(name)
}

/// Commands that open the repository: each must refuse a derived folder that is a link.
const REFUSED: &[&[&str]] = &[
    &["recall", "anything"],
    &["search", "deploy"],
    &["slog", "deploy", "api", "again"],
    &["slog", "query"],
    &["index"],
    &["index", "--rebuild"],
    &["status"],
    &["brief"],
    &["remember", "the api listens on port 8080"],
    &["maintain"],
    &["sync"],
];

/// Issue 30 point 1: `.cairn -> ../victim` committed with `git add -f` and cloned made recall
/// delete `../victim/index/precious.txt` and write tantivy segments, telemetry and vectors
/// there (files.rs skipped `.cairn` in its link check). The same for a real `.cairn` holding
/// `index -> ../../victim` or `telemetry.jsonl -> ../../victim/telemetry.jsonl`.
#[test]
fn a_committed_link_in_the_derived_folder_is_refused_and_nothing_outside_changes() {
    for (name, link, target) in [
        ("dot-cairn", ".cairn", "../victim"),
        ("index", ".cairn/index", "../../victim"),
        (
            "telemetry",
            ".cairn/telemetry.jsonl",
            "../../victim/telemetry.jsonl",
        ),
    ] {
        let (env, bare, origin) = origin();
        let at = origin.join(link);
        if at.is_dir() {
            std::fs::remove_dir_all(&at).unwrap();
        } else {
            let _ = std::fs::remove_file(&at);
        }
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &at).unwrap();
        let clone = commit_and_clone(&env, &origin, &bare, "clone");
        assert!(
            std::fs::symlink_metadata(clone.join(link))
                .unwrap()
                .file_type()
                .is_symlink(),
            "{name}: the clone holds the link"
        );
        let victim = env.path().join("victim");
        std::fs::create_dir_all(victim.join("index")).unwrap();
        std::fs::write(victim.join("index/precious.txt"), "precious\n").unwrap();
        std::fs::write(victim.join("telemetry.jsonl"), "{\"mine\":1}\n").unwrap();
        let skip = [clone.as_path(), bare.as_path(), &env.home()];
        let before = snapshot(env.path(), &skip);
        for args in REFUSED {
            let run = run_bounded(&env, &clone, args);
            assert_eq!(run.code, 2, "{name}: cairn {args:?}:\n{}", run.stderr);
            assert!(
                run.stderr.contains(link) && run.stderr.contains("symbolic link"),
                "{name}: cairn {args:?} names the link:\n{}",
                run.stderr
            );
            assert!(run.stderr.contains(&format!("rm {link}")), "{}", run.stderr);
        }
        for args in [&["doctor"][..], &["doctor", "--dry-run"]] {
            let run = run_bounded(&env, &clone, args);
            assert_eq!(run.code, 1, "{name}: {}{}", run.stdout, run.stderr);
            assert!(
                run.stdout.contains(link) && run.stdout.contains(&format!("rm {link}")),
                "{name}: doctor names the link and its fix:\n{}",
                run.stdout
            );
        }
        assert_eq!(
            snapshot(env.path(), &skip),
            before,
            "{name}: nothing outside the clone changed"
        );
        // The fix the error gives works: the link removed, the next command rebuilds.
        std::fs::remove_file(clone.join(link)).unwrap();
        run_bounded(&env, &clone, &["recall", "deploy"]).code(0);
        assert_eq!(snapshot(env.path(), &skip), before, "{name}");
    }
}

/// The same link arriving through `cairn sync`: a remote commit adds `.cairn -> ../victim`
/// to a clone that has a real `.cairn/`. The sync merges nothing and stops with exit 2,
/// naming the link and its fix (git itself stopped on "cannot rmdir '.cairn'", and cairn's
/// text told the person to stash changes); were it merged, every later command refuses it.
#[test]
fn a_derived_link_brought_by_sync_is_refused_and_nothing_outside_changes() {
    let (env, bare, origin) = origin();
    env.git(&origin, &["push", "-q", "origin", "HEAD:main"]);
    env.git(
        env.path(),
        &["clone", "-q", bare.to_str().unwrap(), "clone"],
    );
    let clone = env.path().join("clone");
    run_bounded(&env, &clone, &["recall", "deploy"]).code(0);
    assert!(clone.join(".cairn/index").is_dir());
    std::fs::remove_dir_all(origin.join(".cairn")).unwrap();
    std::os::unix::fs::symlink("../victim", origin.join(".cairn")).unwrap();
    env.git(&origin, &["add", "-f", ".cairn"]);
    env.git(&origin, &["commit", "-q", "-m", "link"]);
    env.git(&origin, &["push", "-q", "origin", "HEAD:main"]);
    let victim = env.path().join("victim");
    std::fs::create_dir_all(victim.join("index")).unwrap();
    std::fs::write(victim.join("index/precious.txt"), "precious\n").unwrap();
    let skip = [clone.as_path(), bare.as_path(), &env.home()];
    let before = snapshot(env.path(), &skip);
    let run = run_bounded(&env, &clone, &["sync"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("holds .cairn as a symbolic link")
            && run.stderr.contains("git rm --cached .cairn"),
        "{}",
        run.stderr
    );
    // Nothing was merged: the clone's own `.cairn/` is still a folder and commands go on.
    assert_eq!(env.git(&clone, &["ls-files", ".cairn"]), "");
    assert!(clone.join(".cairn").is_dir());
    for args in [
        &["recall", "deploy"][..],
        &["slog", "deploy", "api", "again"],
    ] {
        run_bounded(&env, &clone, args).code(0);
    }
    assert_eq!(snapshot(env.path(), &skip), before);
}

/// ADR 144: a clean look at `.cairn/` is noted in the git folder so that the next command stats
/// its folders instead of listing every file. A link put under `.cairn/` afterwards (a pull of a
/// commit that adds one, here made by hand), in the folder itself or one deeper, or a folder
/// swapped for another, is still refused by the next command; with the link gone, commands go
/// on.
#[test]
fn a_link_put_under_the_derived_folder_after_a_clean_command_is_still_refused() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "api", "first"])
        .code(0);
    env.cairn_in(&repo, &["recall", "deploy"]).code(0);
    let victim = env.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "precious\n").unwrap();
    let planted = [
        repo.join(".cairn/evil"),
        repo.join(".cairn/index/evil.json"),
    ];
    for link in &planted {
        // A clean command first: the note is written, and used.
        env.cairn_in(&repo, &["recall", "deploy"]).code(0);
        std::os::unix::fs::symlink(victim.join("precious.txt"), link).unwrap();
        let run = env.cairn_in(&repo, &["recall", "deploy"]).code(2);
        assert!(run.stderr.contains("is a symbolic link"), "{}", run.stderr);
        std::fs::remove_file(link).unwrap();
    }
    // A folder swapped for another of the same name (its inode differs).
    env.cairn_in(&repo, &["recall", "deploy"]).code(0);
    let index = repo.join(".cairn/index");
    let moved = env.path().join("index-moved");
    std::fs::rename(&index, &moved).unwrap();
    std::fs::create_dir(&index).unwrap();
    std::os::unix::fs::symlink(&victim, index.join("evil")).unwrap();
    let run = env.cairn_in(&repo, &["recall", "deploy"]).code(2);
    assert!(run.stderr.contains("is a symbolic link"), "{}", run.stderr);
    std::fs::remove_file(index.join("evil")).unwrap();
    env.cairn_in(&repo, &["slog", "deploy", "api", "again"])
        .code(0);
    assert_eq!(
        std::fs::read_to_string(victim.join("precious.txt")).unwrap(),
        "precious\n"
    );
}

/// A committed index whose `.managed.json` lists files outside its folder: tantivy's garbage
/// collection deletes every managed file no segment uses, so a commit of the index deleted
/// `../../../victim/precious.txt` (and an absolute path) until the index's folder refused any
/// path that is not one file name.
#[test]
fn a_committed_index_never_deletes_files_outside_its_folder() {
    let (env, bare, origin) = origin();
    env.cairn_in(&origin, &["recall", "deploy"]).code(0);
    let victim = env.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "precious\n").unwrap();
    std::fs::write(victim.join("absolute.txt"), "precious too\n").unwrap();
    let managed = origin.join(".cairn/index/.managed.json");
    let mut list: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&managed).unwrap()).unwrap();
    list.push("../../../victim/precious.txt".into());
    list.push(victim.join("absolute.txt").to_string_lossy().into_owned());
    std::fs::write(&managed, serde_json::to_string(&list).unwrap()).unwrap();
    let clone = commit_and_clone(&env, &origin, &bare, "clone");
    let skip = [
        clone.as_path(),
        bare.as_path(),
        &env.home(),
        origin.as_path(),
    ];
    let before = snapshot(env.path(), &skip);
    for args in [
        &["slog", "deploy", "web", "went out"][..],
        &["recall", "deploy"],
        &["index"],
        &["forget", "went out", "--yes"],
        &["index", "--rebuild"],
    ] {
        run_bounded(&env, &clone, args);
    }
    assert_eq!(snapshot(env.path(), &skip), before);
}

/// Issue 30 point 2: `adr import DIR` read `0003-link.md -> ../outside/0001-secret.md` and
/// committed what it points at; a file named with ESC and BEL was committed under that name.
#[test]
fn adr_import_skips_links_out_of_the_folder_and_commits_no_control_bytes_in_names() {
    let (env, repo) = Env::repo();
    let record = |n: u32, title: &str, body: &str| {
        format!(
            "# {n}. {title}\n\nDate: 2026-11-02\n\n## Status\n\nAccepted\n\n## Context\n\n{body}\n\n## Decision\n\nDo it.\n\n## Consequences\n\nNone.\n"
        )
    };
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("0001-secret.md"),
        record(1, "Secret", "only-outside-text"),
    )
    .unwrap();
    let adrs = env.path().join("adrs");
    std::fs::create_dir_all(&adrs).unwrap();
    std::fs::write(adrs.join("0002-real.md"), record(2, "Real", "inside")).unwrap();
    std::os::unix::fs::symlink("../outside/0001-secret.md", adrs.join("0003-link.md")).unwrap();
    std::fs::write(
        adrs.join("0004-\x1b[31mred\x07.md"),
        record(4, "Red alert", "coloured"),
    )
    .unwrap();
    let data = env
        .cairn_in(&repo, &["--json", "adr", "import", adrs.to_str().unwrap()])
        .code(0)
        .data();
    let skipped = data["skipped"].as_array().unwrap();
    let link = skipped
        .iter()
        .find(|s| s["from"] == "0003-link.md")
        .unwrap_or_else(|| panic!("the link is reported as skipped: {data}"));
    assert!(
        link["reason"].as_str().unwrap().contains("symbolic link"),
        "{link}"
    );
    assert_eq!(data["imported"].as_array().unwrap().len(), 2, "{data}");
    let names = env.git(&repo, &["ls-files", "-z"]);
    assert!(
        names.bytes().all(|b| b == 0 || (b >= 0x20 && b != 0x7f)),
        "no control byte in a committed name: {names:?}"
    );
    assert!(names.contains("decisions/0004-red-alert.md"), "{names:?}");
    let history = env.git(&repo, &["log", "-p", "--format=%B"]);
    assert!(!history.contains("only-outside-text"), "{history}");
    assert!(!history.contains('\x1b') && !history.contains('\x07'));
}

/// `library add DIR` never reads a link under DIR and says so; a copied file's committed name
/// carries no control byte.
#[test]
fn library_add_skips_links_in_a_folder_and_copies_under_a_clean_name() {
    let (env, repo) = Env::repo();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "# Secret\n\nonly-outside-text\n").unwrap();
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "# Guide\n\nhow to deploy\n").unwrap();
    std::fs::write(docs.join("bell\x07\x1b[2Jname.md"), "# Bell\n\nring\n").unwrap();
    std::os::unix::fs::symlink("../outside/secret.md", docs.join("linked.md")).unwrap();
    let run = env
        .cairn_in(
            &repo,
            &["--json", "library", "add", "--copy", docs.to_str().unwrap()],
        )
        .code(0);
    assert!(
        run.stderr.contains("linked.md") && run.stderr.contains("not followed"),
        "the link is named as skipped: {}",
        run.stderr
    );
    let names = env.git(&repo, &["ls-files", "-z"]);
    assert!(
        names.bytes().all(|b| b == 0 || (b >= 0x20 && b != 0x7f)),
        "{names:?}"
    );
    assert!(names.contains("bell__[2Jname.md"), "{names:?}");
    let history = env.git(&repo, &["log", "-p"]);
    assert!(!history.contains("only-outside-text"), "{history}");
}

/// The hostile-repository set: a clone whose committed files hold links out of it in
/// decisions/, slog/ and vault/, odd names (control characters, a leading dash, a very long
/// name, bytes that are not UTF-8), a garbage `.cairn/index/meta.json`, a large
/// `.cairn/telemetry.jsonl`, `.cairn/pending.json` and `.cairn/journal.json` naming paths
/// outside, and `.cairn/sync-git.pid` naming a process that is not git. Every command runs;
/// any may fail with a clear error, none may panic, hang, write or delete outside the clone,
/// stop that process, or commit what a link points at.
#[test]
fn a_hostile_clone_changes_nothing_outside_under_any_command() {
    let (env, bare, origin) = origin();
    let victim = env.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "precious-victim-text\n").unwrap();
    std::fs::write(
        victim.join("log.jsonl"),
        "{\"id\":\"v\",\"text\":\"precious-victim-text\"}\n",
    )
    .unwrap();
    std::fs::write(
        victim.join("0009-creds.md"),
        "---\nnumber: 9\ntitle: creds\nstatus: accepted\ndate: 2026-11-02\n---\n\nprecious-victim-text\n",
    )
    .unwrap();
    let symlink = |target: &str, at: &str| {
        let at = origin.join(at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    symlink("../../victim/0009-creds.md", "decisions/0009-creds.md");
    symlink("../../victim/log.jsonl", "slog/2026-11-01.jsonl");
    symlink("../../../victim", "vault/notes/linked");
    symlink(
        victim.join("log.jsonl").to_str().unwrap(),
        "vault/observations/2026-11-01.jsonl",
    );
    symlink("../../victim/precious.txt", "vault/library.jsonl");
    let write = |rel: &[u8], bytes: &[u8]| {
        let at = origin.join(std::ffi::OsStr::from_bytes(rel));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    };
    let note = b"---\ntitle: odd\n---\n\nan odd note\n";
    write(b"vault/notes/2026-11-01-\x1b[31mred\x07.md", note);
    write(b"vault/notes/--help.md", note);
    write(b"vault/notes/-rf.md", note);
    write(b"vault/notes/2026-11-01-\xff\xfe.md", note);
    let long = format!("vault/notes/2026-11-01-{}.md", "l".repeat(240));
    write(long.as_bytes(), note);
    write(
        b"decisions/0010-\x1b]0;title\x07.md",
        b"# 10. Odd\n\n## Status\n\nAccepted\n",
    );
    write(
        b".cairn/index/meta.json",
        b"{\"segments\": [garbage\x00\xff",
    );
    let line = "{\"event\":\"recall\",\"ok\":true,\"query\":\"x\"}\n";
    write(b".cairn/telemetry.jsonl", line.repeat(200_000).as_bytes());
    let abs = victim.join("abs.txt");
    write(
        b".cairn/pending.json",
        serde_json::to_string(&[
            "../victim/log.jsonl",
            victim.join("precious.txt").to_str().unwrap(),
            abs.to_str().unwrap(),
            "MEMORY.md",
        ])
        .unwrap()
        .as_bytes(),
    );
    let journal = serde_json::json!({
        "message": "memory: owned",
        "steps": [
            {"kind": "append", "path": abs.to_str().unwrap(), "bytes": "{}\n"},
            {"kind": "write", "path": "../victim/precious.txt", "before": "precious-victim-text\n",
             "after": "owned\n", "commit": "owned\n", "head": null}
        ],
        "refs": ["../../heads/main"]
    });
    write(b".cairn/journal.json", journal.to_string().as_bytes());
    // A process that is not git, noted as a git run a killed sync left.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("600")
        .process_group(0)
        .spawn()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", sleeper.id())).unwrap();
    let started = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    write(
        b".cairn/sync-git.pid",
        format!("{} {started}\n", sleeper.id()).as_bytes(),
    );
    let clone = commit_and_clone(&env, &origin, &bare, "clone");
    let start = env.git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
    let skip = [
        clone.as_path(),
        bare.as_path(),
        &env.home(),
        origin.as_path(),
    ];
    let before = snapshot(env.path(), &skip);
    let commands: &[&[&str]] = &[
        &["sync"],
        &["recall", "deploy"],
        &["search", "deploy"],
        &["search", "--exact", "deploy"],
        &["brief"],
        &["slog", "deploy", "api", "again"],
        &["slog", "query"],
        &["remember", "the api listens on port 8080"],
        &["adr", "list"],
        &["memory", "show"],
        &["note", "list"],
        &["index"],
        &["index", "--rebuild"],
        &["index", "--verify"],
        &["status"],
        &["stats"],
        &["doctor", "--dry-run"],
        &["doctor"],
        &["maintain"],
        &["reflect"],
        &["triage"],
        &["forget", "deploy", "--yes"],
        &["sync"],
        &["recall", "deploy"],
    ];
    for args in commands {
        run_bounded(&env, &clone, args);
    }
    // The journal naming paths outside is refused with its fix (remove it); then the commands
    // it stopped run too.
    let run = run_bounded(&env, &clone, &["triage"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("remove .cairn/journal.json"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(clone.join(".cairn/journal.json")).unwrap();
    for args in [
        &["doctor"][..],
        &["reflect"],
        &["triage"],
        &["forget", "deploy", "--yes"],
        &["maintain"],
        &["sync"],
    ] {
        run_bounded(&env, &clone, args);
    }
    // A name that is not UTF-8 stopped every read of the index ("No such file or directory"
    // for its lossy spelling): it is left out, and doctor names it.
    for args in [&["recall", "api"][..], &["index"], &["status"]] {
        run_bounded(&env, &clone, args).code(0);
    }
    let doctor = run_bounded(&env, &clone, &["doctor", "--dry-run"]);
    assert!(doctor.stdout.contains("not UTF-8"), "{}", doctor.stdout);
    assert_eq!(snapshot(env.path(), &skip), before);
    // (A killed child stays in /proc as a zombie until waited for: ask the child itself.)
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "the noted process that is not git was left alone"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let history = env.git(&clone, &["log", "-p", &format!("{start}..HEAD")]);
    assert!(
        !history.contains("precious-victim-text") && !history.contains("owned"),
        "no commit holds what a link or a derived file pointed at"
    );
}

/// cairn's lock and marker files in `.git/` are never opened through a link (git never puts
/// one there from a commit; a local process can): opening `cairn.lock` would have created or
/// locked the file it names.
#[test]
fn a_lock_file_in_the_git_folder_that_is_a_link_is_refused() {
    let (env, repo) = Env::repo();
    let victim = env.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let skip = [repo.as_path(), &env.home()];
    let before = snapshot(env.path(), &skip);
    let _ = std::fs::remove_file(repo.join(".git/cairn.lock"));
    std::os::unix::fs::symlink(victim.join("cairn.lock"), repo.join(".git/cairn.lock")).unwrap();
    let run = run_bounded(&env, &repo, &["slog", "deploy", "api", "went out"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cairn.lock is a symbolic link"),
        "{}",
        run.stderr
    );
    assert_eq!(snapshot(env.path(), &skip), before);
}
