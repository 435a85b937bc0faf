//! Crash safety through the real binary: the crash harness's checker (`benches/crash_harness`,
//! the same code `scripts/crash` runs 200+ times) run on a few kills, and one regression test
//! per defect the harness found, each stopping the binary at a failpoint where a timer cannot
//! be made to land deterministically.

use std::path::Path;
use std::time::Duration;

use crate::support::BIN;

#[path = "../../benches/crash_harness/mod.rs"]
mod crash_harness;
use crash_harness::{Harness, Kill, Outcome, Scenario};

fn harness(work: &Path) -> Harness {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    Harness::new(Path::new(BIN), work, &fixtures)
}

fn scenario(name: &str) -> Scenario {
    crash_harness::scenarios()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

#[track_caller]
fn survived(label: &str, out: &Outcome) {
    assert!(out.failures.is_empty(), "{label}: {:#?}", out.failures);
}

/// The harness's own run in miniature: every failpoint of two scenarios, and timer kills at a
/// fixed spread of delays within the clean run's time. Each kill must pass every check
/// (fsck, the next command, doctor, index --verify, git status, the records).
#[test]
fn a_few_kill_and_rerun_trials_pass_every_check_of_the_harness() {
    let work = tempfile::tempdir().unwrap();
    let h = harness(work.path());
    let mut landed = 0;
    for name in ["slog", "remember"] {
        let s = scenario(name);
        let p = h.prepare(&s).unwrap_or_else(|e| panic!("{e}"));
        let mut kills: Vec<Kill> = s
            .failpoints
            .iter()
            .map(|f| Kill::Failpoint(f.to_string()))
            .collect();
        for share in [0.3, 0.7] {
            kills.push(Kill::Timer(p.clean.mul_f64(share)));
        }
        for (i, kill) in kills.iter().enumerate() {
            let out = h.trial(&p, kill, &format!("{name}-{i}"));
            survived(&format!("{name} {kill}"), &out);
            landed += usize::from(out.landed);
        }
    }
    // The failpoints at least stop the process mid-run.
    assert!(landed >= 2, "{landed} kills landed");
}

/// The checker fails a trial whose records are not what a clean run leaves: a kill that lost a
/// committed record is caught (here the loss is made by hand after the clean template).
#[test]
fn the_harness_reports_a_lost_record() {
    let work = tempfile::tempdir().unwrap();
    let h = harness(work.path());
    let s = scenario("slog");
    let p = h.prepare(&s).unwrap_or_else(|e| panic!("{e}"));
    // An entry of the template removed, as a crash that loses data would.
    let repo = p.template.join("repo");
    let day = repo.join("slog/2026-12-01.jsonl");
    let text = std::fs::read_to_string(&day).unwrap();
    let kept: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&day, kept).unwrap();
    h.git_ok(&repo, &["commit", "-qam", "lose an entry"]);
    let out = h.trial(&p, &Kill::Timer(Duration::ZERO), "lost");
    assert!(
        out.failures
            .iter()
            .any(|f| f.contains("differ from a clean run")),
        "{:#?}",
        out.failures
    );
}

/// A cairn commit killed while git's lock files were held (SIGKILL during the ref update, found
/// by `scripts/crash` in maintain) left `.git/HEAD.lock` and `.git/refs/heads/main.lock`, and
/// every later commit failed with "Could not prepare reference edit" until a person deleted
/// them. The leftovers are made here as the killed process left them.
#[test]
fn the_lock_files_of_a_commit_killed_mid_ref_update_do_not_block_the_next_command() {
    let (env, repo) = crate::support::Env::repo();
    let git_dir = repo.join(".git");
    let branch = env.git(&repo, &["symbolic-ref", "HEAD"]);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(git_dir.join("cairn-committing"), b"").unwrap();
    std::fs::write(git_dir.join("HEAD.lock"), head.as_bytes()).unwrap();
    std::fs::write(git_dir.join(format!("{}.lock", branch.trim())), b"").unwrap();
    // And `packed-refs.lock`, left by a review --approve killed while deleting refs.
    std::fs::write(git_dir.join("packed-refs.lock"), b"").unwrap();
    env.cairn_in(&repo, &["slog", "fix", "redis", "raise maxmemory"])
        .code(0);
    assert!(!git_dir.join("packed-refs.lock").exists());
    assert_eq!(crate::support::git_status(&env, &repo), "");
    assert!(
        env.git(&repo, &["log", "-1", "--format=%s"])
            .contains("slog: fix redis")
    );
    // A lock with no cairn commit cut short (a git command holding it now) is left alone.
    std::fs::write(git_dir.join("HEAD.lock"), head.as_bytes()).unwrap();
    env.cairn_in(&repo, &["slog", "fix", "redis", "again"])
        .code(2);
    assert!(git_dir.join("HEAD.lock").exists());
}

/// A slog killed after its append and before its commit left the line in the working file and
/// outside every later commit (each commits HEAD's file plus its own line): `git status` stayed
/// dirty and a sync never carried the entry. The path is now noted in `.cairn/pending.json`
/// first and the next writer commits it.
#[test]
fn a_slog_killed_before_its_commit_is_committed_by_the_next_one() {
    let (env, repo) = crate::support::Env::repo();
    let mut cmd = env.command(BIN, &repo);
    cmd.args([
        "--now",
        NOW,
        "slog",
        "deploy",
        "caddy",
        "killed before its commit",
    ])
    .env("CAIRN_FAILPOINT", "slog-after-append");
    assert!(!cmd.output().unwrap().status.success());
    env.cairn_in(
        &repo,
        &["--now", NOW, "slog", "fix", "redis", "the next one"],
    )
    .code(0);
    assert_eq!(crate::support::git_status(&env, &repo), "");
    let head = env.git(&repo, &["show", "HEAD:slog/2026-12-01.jsonl"]);
    assert!(head.contains("killed before its commit"), "{head}");
    assert!(head.contains("the next one"), "{head}");
}

/// The same for `remember` and `import observations`, whose rerun finds the record already
/// stored and so wrote nothing and committed nothing: the rerun now commits what the killed
/// run left.
#[test]
fn a_remember_or_import_killed_before_its_commit_is_committed_by_its_rerun() {
    let obs = "Always run cargo fmt before pushing to the main branch";
    let file = |env: &crate::support::Env| {
        let path = env.path().join("obs.jsonl");
        std::fs::write(&path, format!("{{\"observation\":\"{obs}\"}}\n")).unwrap();
        path.to_string_lossy().into_owned()
    };
    for (point, args) in [
        (
            "remember-after-append",
            vec!["remember".to_string(), obs.to_string()],
        ),
        (
            "import-after-append",
            vec!["import".into(), "observations".into(), String::new()],
        ),
    ] {
        let (env, repo) = crate::support::Env::repo();
        let mut args = args;
        if args.len() == 3 && args[2].is_empty() {
            args[2] = file(&env);
        }
        let mut all = vec!["--now".to_string(), NOW.to_string()];
        all.extend(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut cmd = env.command(BIN, &repo);
        cmd.args(&all).env("CAIRN_FAILPOINT", point);
        assert!(!cmd.output().unwrap().status.success(), "{point}");
        env.cairn_in(&repo, &all).code(0);
        assert_eq!(crate::support::git_status(&env, &repo), "", "{point}");
        let head = env.git(&repo, &["show", "HEAD:vault/observations/2026-12-01.jsonl"]);
        assert_eq!(head.matches(obs).count(), 1, "{point}: {head}");
    }
}

/// Imports `text` (`count` records, each its own id) with `--raw` and parts of `part` bytes,
/// killed by `kill` (environment settings naming a failpoint); checks that the kill stored some
/// of the records and not all, and that the rerun skips those, stores the rest and leaves every
/// record in the repository once, committed.
fn a_killed_import_is_finished_by_its_rerun(
    env: &crate::support::Env,
    repo: &std::path::Path,
    text: &str,
    count: usize,
    part: &str,
    kill: &[(&str, std::ffi::OsString)],
) {
    let path = env.path().join("import.jsonl");
    std::fs::write(&path, text).unwrap();
    // --raw: every record kept as given (no dedup by meaning), so the counts are exact.
    let args = [
        "--json",
        "--now",
        NOW,
        "import",
        "observations",
        "--raw",
        path.to_str().unwrap(),
    ];
    let mut cmd = env.command(BIN, repo);
    cmd.args(args).env("CAIRN_IMPORT_PART_BYTES", part);
    for (key, value) in kill {
        cmd.env(key, value);
    }
    assert!(!cmd.output().unwrap().status.success());
    let first = crate::support::jsonl_lines(&repo.join("vault/observations")).len();
    assert!(first > 0 && first < count, "{first} stored before the kill");
    let mut cmd = env.command(BIN, repo);
    cmd.args(args).env("CAIRN_IMPORT_PART_BYTES", part);
    let rerun = crate::support::Run::from(cmd.output().unwrap())
        .code(0)
        .data();
    assert_eq!(rerun["counts"]["duplicates"], first, "{rerun}");
    assert_eq!(rerun["counts"]["stored"], count - first, "{rerun}");
    assert_eq!(crate::support::git_status(env, repo), "");
    let lines = crate::support::jsonl_lines(&repo.join("vault/observations"));
    let ids: std::collections::HashSet<&str> =
        lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!((lines.len(), ids.len()), (count, count));
}

/// An import killed after some of its parts were committed (ADR 53): the rerun skips the ids
/// already stored, stores the rest, and every record is in the repository once, committed.
#[test]
fn an_import_killed_between_its_parts_is_finished_by_its_rerun_without_duplicates() {
    let (env, repo) = crate::support::Env::repo();
    let text: String = (0..3000)
        .map(|i| {
            format!(
                "{{\"observation\":\"the staging database {i} was restored from snapshot {}\",\"source\":\"s{i}\"}}\n",
                i * 3
            )
        })
        .collect();
    let kill = [("CAIRN_FAILPOINT", "import-next-part".into())];
    a_killed_import_is_finished_by_its_rerun(&env, &repo, &text, 3000, "50000", &kill);
}

/// An import killed while its first part's blob is being written and the next lines wait in
/// its spool (ADR 143): the spooled lines were never written, the rerun commits the noted part,
/// stores the rest, and every record is in the repository once, committed.
#[test]
fn an_import_killed_while_it_spools_is_finished_by_its_rerun_without_duplicates() {
    let (env, repo) = crate::support::Env::repo();
    let text: String = (0..2000)
        .map(|i| {
            format!(
                "{{\"observation\":\"the cache node {i} was drained before patch {}\",\"source\":\"c{i}\"}}\n",
                i * 5
            )
        })
        .collect();
    let kill = [
        ("CAIRN_PAUSEPOINT", "import-blob".into()),
        ("CAIRN_PAUSEFILE", env.path().join("pause").into_os_string()),
        ("CAIRN_FAILPOINT", "import-spooled".into()),
    ];
    a_killed_import_is_finished_by_its_rerun(&env, &repo, &text, 2000, "30000", &kill);
    env.git(&repo, &["fsck", "--strict"]);
}

/// `adr import` killed between two records: the rerun skipped the records already written, so
/// they stayed untracked for good. Every path is now noted before the first write.
#[test]
fn an_adr_import_killed_midway_is_committed_whole_by_its_rerun() {
    let (env, repo) = crate::support::Env::repo();
    let from = crate::support::fixtures().join("adr/adr-tools");
    let from = from.to_str().unwrap();
    let mut cmd = env.command(BIN, &repo);
    cmd.args(["--now", NOW, "adr", "import", from])
        .env("CAIRN_FAILPOINT", "adr-import-after-first");
    assert!(!cmd.output().unwrap().status.success());
    env.cairn_in(&repo, &["--now", NOW, "adr", "import", from])
        .code(0);
    assert_eq!(crate::support::git_status(&env, &repo), "");
    let tracked = env.git(&repo, &["ls-files", "decisions"]);
    assert!(tracked.lines().count() >= 2, "{tracked}");
}

const NOW: &str = "2026-12-01T12:00:00Z";
/// A whole-file write killed between its temporary file and the rename left
/// `decisions/.cairn-tmp-*` untracked for good (found by `scripts/crash` in adr import):
/// `cairn doctor` now removes such files (the file they were to replace is whole).
#[test]
fn doctor_removes_the_temporary_file_of_a_write_killed_before_its_rename() {
    let (env, repo) = crate::support::Env::repo();
    std::fs::write(
        repo.join("decisions/.cairn-tmp-Ab12Cd"),
        b"---\nnumber: 1\n",
    )
    .unwrap();
    std::fs::write(repo.join(".cairn-tmp-Xy34Zw"), b"# Memory\n").unwrap();
    env.cairn_in(&repo, &["doctor", "--dry-run"])
        .code(1)
        .stdout_has("decisions/.cairn-tmp-Ab12Cd: temporary file of a write cut short");
    env.cairn_in(&repo, &["doctor"]).code(0);
    assert_eq!(crate::support::git_status(&env, &repo), "");
    env.cairn_in(&repo, &["doctor", "--dry-run"]).code(0);
}

/// A commit killed after its branch moved and before the git index was written left the index
/// at the old blobs of the paths it committed (found by `scripts/crash` in sync's renumbering:
/// `git status` showed the renamed ADR renamed back, for good). The next commit now sets those
/// paths' index entries from HEAD. The stale entry and the marker naming its path are made here
/// as the killed process left them.
#[test]
fn the_index_a_commit_killed_before_writing_it_left_is_refreshed_by_the_next_commit() {
    let (env, repo) = crate::support::Env::repo();
    let day = "slog/2026-12-01.jsonl";
    env.cairn_in(&repo, &["--now", NOW, "slog", "fix", "redis", "one"])
        .code(0);
    env.cairn_in(&repo, &["--now", NOW, "slog", "fix", "redis", "two"])
        .code(0);
    let old = env.git(&repo, &["rev-parse", &format!("HEAD^:{day}")]);
    env.git(
        &repo,
        &[
            "update-index",
            "--cacheinfo",
            &format!("100644,{},{day}", old.trim()),
        ],
    );
    std::fs::write(repo.join(".git/cairn-committing"), day).unwrap();
    assert_ne!(crate::support::git_status(&env, &repo), "");
    env.cairn_in(
        &repo,
        &[
            "--now",
            NOW,
            "memory",
            "add",
            "-s",
            "Operations",
            "Restart caddy after a renewal",
        ],
    )
    .code(0);
    assert_eq!(crate::support::git_status(&env, &repo), "");
}

/// Runs `cairn --now NOW ARGS` in `repo` stopped at the failpoint `point`.
fn killed_at(env: &crate::support::Env, repo: &Path, point: &str, args: &[&str]) {
    let mut cmd = env.command(BIN, repo);
    cmd.args(["--now", NOW])
        .args(args)
        .env("CAIRN_FAILPOINT", point);
    let out = cmd.output().unwrap();
    assert!(!out.status.success(), "{point} was never reached");
}

/// Issue 30 point 11: a `library add --copy` killed after writing its manifest left the copies
/// and the manifest uncommitted; its rerun said "nothing changed" and committed nothing, and
/// the next `slog` committed all of them under "slog: deploy x". A pending write now records
/// the command that made it: another command leaves it alone, and the rerun commits it under
/// the killed run's own message.
#[test]
fn a_killed_library_add_is_committed_by_its_rerun_under_its_message_not_by_a_slog() {
    let (env, repo) = crate::support::Env::repo();
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let from = crate::support::fixtures().join("adr/madr-semantic-kernel");
    let mut names: Vec<_> = std::fs::read_dir(&from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    names.sort();
    for p in names.iter().take(5) {
        std::fs::copy(p, docs.join(p.file_name().unwrap())).unwrap();
    }
    let docs = docs.to_str().unwrap();
    let add = ["library", "add", "--copy", docs];
    // What an uninterrupted run commits, in a repository of its own.
    let (clean_env, clean) = crate::support::Env::repo();
    clean_env
        .cairn_in(&clean, &["--now", NOW, "library", "add", "--copy", docs])
        .code(0);
    let want = clean_env.git(&clean, &["log", "-1", "--format=%s"]);

    killed_at(&env, &repo, "library-before-commit", &add);
    env.cairn_in(
        &repo,
        &["--now", NOW, "slog", "deploy", "x", "an unrelated entry"],
    )
    .code(0);
    let files = env.git(&repo, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert_eq!(
        files.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>(),
        ["slog: deploy x", "slog/2026-12-01.jsonl"],
        "the slog commits only its own line"
    );
    env.cairn_in(&repo, &["--now", NOW, "library", "add", "--copy", docs])
        .code(0);
    assert_eq!(crate::support::git_status(&env, &repo), "");
    assert_eq!(env.git(&repo, &["log", "-1", "--format=%s"]), want);
    assert!(
        env.git(&repo, &["ls-files", "vault/library"])
            .lines()
            .count()
            >= 5
    );
    assert!(!repo.join(".cairn/pending.json").exists());
}

/// Issue 30 point 12: a `reflect` killed after writing its proposals and before its commit;
/// the rerun found them written and committed them as "reflect: 0 proposals from 0
/// observations". The message is now noted before the first write, and the harness compares
/// the history's subjects with a clean run's.
#[test]
fn a_reflect_killed_before_its_commit_is_committed_under_the_killed_runs_message() {
    let work = tempfile::tempdir().unwrap();
    let h = harness(work.path());
    let s = scenario("reflect");
    let p = h.prepare(&s).unwrap_or_else(|e| panic!("{e}"));
    let out = h.trial(
        &p,
        &Kill::Failpoint("reflect-after-append".into()),
        "reflect",
    );
    survived("reflect killed after its append", &out);
}

/// Issue 30 point 13: temporary files of a killed run stayed after a successful rerun
/// (`vault/sessions/.cairn-tmp-*` of ingest, `.cairn/index/.tmp*` of tantivy's meta file). The
/// staging file's name now carries its owner's process id: a rerun removes a dead owner's, and
/// leaves a live one's alone.
#[test]
fn a_rerun_removes_the_temporary_files_a_killed_run_left_and_keeps_a_live_ones() {
    let (env, repo) = crate::support::Env::repo();
    let transcript = crate::support::fixtures().join("sessions/claude-code/session-9eda1058.jsonl");
    let transcript = transcript.to_str().unwrap();
    env.cairn_in(&repo, &["--now", NOW, "sessions", "ingest", transcript])
        .code(0);
    // A process that has ended: its pid names a dead owner.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let sessions = repo.join("vault/sessions");
    let dead_tmp = sessions.join(format!(".cairn-tmp-{dead}-Ab12Cd"));
    let live_tmp = sessions.join(format!(".cairn-tmp-{}-Xy34Zw", std::process::id()));
    std::fs::write(&dead_tmp, b"{\"half\":").unwrap();
    std::fs::write(&live_tmp, b"{\"being written\":").unwrap();
    env.cairn_in(&repo, &["index"]).code(0);
    let index_tmp = repo.join(".cairn/index/.tmpQw9Er8");
    std::fs::write(&index_tmp, b"{\"segments\":").unwrap();
    env.cairn_in(&repo, &["--now", NOW, "sessions", "ingest", transcript])
        .code(0);
    assert!(!dead_tmp.exists(), "a dead run's staging file is removed");
    assert!(live_tmp.exists(), "a live run's staging file is kept");
    std::fs::remove_file(&live_tmp).unwrap();
    // The index's writer removes tantivy's leftovers once it holds the writer lock.
    env.cairn_in(
        &repo,
        &["--now", NOW, "slog", "fix", "redis", "raise maxmemory"],
    )
    .code(0);
    env.cairn_in(&repo, &["index"]).code(0);
    assert!(!index_tmp.exists(), "tantivy's temporary file is removed");
    env.cairn_in(&repo, &["doctor", "--dry-run"]).code(0);
}

/// Issue 30 point 16: `cairn doctor` moved a damaged line that HEAD holds intact aside to
/// `.cairn/recovered/` and left the file modified; the next `slog` then committed the
/// deletion. The line is now restored from HEAD (its damaged bytes still saved), the file
/// equals HEAD, and no later command commits a change it did not make.
#[test]
fn doctor_restores_from_head_a_damaged_line_head_holds_intact() {
    let (env, repo) = crate::support::Env::repo();
    env.cairn_in(&repo, &["--now", NOW, "slog", "deploy", "caddy", "first"])
        .code(0);
    env.cairn_in(&repo, &["--now", NOW, "slog", "fix", "redis", "second"])
        .code(0);
    let day = repo.join("slog/2026-12-01.jsonl");
    let head = std::fs::read_to_string(&day).unwrap();
    // The first line's opening brace lost, as a bad edit or a disk error would.
    let damaged = head.replacen('{', "", 1);
    std::fs::write(&day, &damaged).unwrap();
    env.cairn_in(&repo, &["doctor", "--dry-run"])
        .code(1)
        .stdout_has("restored from HEAD");
    env.cairn_in(&repo, &["doctor"]).code(0);
    assert_eq!(std::fs::read_to_string(&day).unwrap(), head);
    assert_eq!(crate::support::git_status(&env, &repo), "");
    assert!(
        std::fs::read_dir(repo.join(".cairn/recovered"))
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".bad")),
        "the damaged bytes are kept"
    );
    env.cairn_in(&repo, &["--now", NOW, "slog", "fix", "y", "third"])
        .code(0);
    let committed = env.git(&repo, &["show", "HEAD:slog/2026-12-01.jsonl"]);
    assert!(committed.contains("first"), "{committed}");
    assert_eq!(committed.lines().count(), 3);
}

/// `.cairn/pending.json` as an older cairn wrote it (a bare list of paths, no command): no
/// command commits those files any more, `cairn doctor --dry-run` names them and `cairn doctor`
/// commits them under a message of its own.
#[test]
fn an_older_pending_list_is_left_to_doctor() {
    let (env, repo) = crate::support::Env::repo();
    std::fs::create_dir_all(repo.join("vault/notes")).unwrap();
    std::fs::write(repo.join("vault/notes/left.md"), "# left by a killed run\n").unwrap();
    std::fs::create_dir_all(repo.join(".cairn")).unwrap();
    std::fs::write(
        repo.join(".cairn/pending.json"),
        r#"["vault/notes/left.md"]"#,
    )
    .unwrap();
    env.cairn_in(&repo, &["--now", NOW, "slog", "fix", "redis", "unrelated"])
        .code(0);
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "slog/2026-12-01.jsonl");
    env.cairn_in(&repo, &["doctor", "--dry-run"])
        .code(1)
        .stderr_has("interrupted before its commit");
    env.cairn_in(&repo, &["doctor"]).code(0);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s"]).trim(),
        "doctor: commit what an interrupted command wrote"
    );
}
