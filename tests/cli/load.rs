//! Many writers at once: the repository lock's measured wait, and what concurrent agents must
//! never lose (the full 16-agent run is `scripts/load`; these are its fast, failing-first
//! cases).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::{BIN, Env};

/// The `lock`/`writer` telemetry events of `repo`.
fn lock_events(repo: &Path) -> Vec<Value> {
    std::fs::read_to_string(repo.join(".cairn/telemetry.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["component"] == "lock" && e["action"] == "writer")
        .collect()
}

#[test]
fn a_writer_records_how_long_it_waited_for_the_repository_lock_and_held_it() {
    let (env, repo) = Env::repo();
    let before = lock_events(&repo).len();
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "first entry"])
        .code(0);
    let events = lock_events(&repo);
    assert_eq!(events.len(), before + 1, "{events:?}");
    let uncontended = &events[events.len() - 1]["metadata"];
    assert_eq!(uncontended["contended"], false, "{uncontended}");
    assert!(
        uncontended["held_us"].as_u64().unwrap() > 0,
        "{uncontended}"
    );

    // Another writer (this test) holds the lock for two seconds while cairn asks for it.
    let lock = std::fs::File::options()
        .write(true)
        .open(repo.join(".git/cairn.lock"))
        .expect("the lock file exists after a write");
    lock.lock().unwrap();
    let child = env
        .command(BIN, &repo)
        .args(["slog", "deploy", "caddy", "second entry"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    lock.unlock().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = lock_events(&repo);
    let waited = &events[events.len() - 1];
    assert_eq!(waited["metadata"]["contended"], true, "{waited}");
    // It started well within the two seconds, so it waited for most of them.
    let wait_us = waited["metadata"]["wait_us"].as_u64().unwrap();
    assert!(wait_us >= 500_000, "{waited}");
    assert_eq!(waited["duration_ms"].as_u64().unwrap(), wait_us / 1000);
}

/// Runs `args` in `n` processes at once in `repo` and returns their outcomes.
fn at_once(env: &Env, repo: &Path, n: usize, args: &[&str]) -> Vec<std::process::Output> {
    let children: Vec<_> = (0..n)
        .map(|_| {
            env.command(BIN, repo)
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

#[test]
fn reads_that_all_find_no_index_build_one_without_failing() {
    // `.cairn/` may be deleted at any moment; the next reads (many agents at once) each find
    // no index and build it.
    let (env, repo) = Env::repo();
    for i in 0..30 {
        env.cairn_in(
            &repo,
            &[
                "slog",
                "deploy",
                "caddy",
                &format!("entry {i} about the caddy proxy"),
            ],
        )
        .code(0);
    }
    for round in 0..4 {
        let _ = std::fs::remove_dir_all(repo.join(".cairn"));
        for out in at_once(&env, &repo, 6, &["--json", "search", "caddy"]) {
            let code = out.status.code().unwrap_or(-1);
            assert!(
                code == 0 || code == 1,
                "round {round}: exit {code}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        env.cairn_in(&repo, &["--json", "index", "--verify"])
            .code(0);
        let found = env.cairn_in(&repo, &["--json", "search", "caddy", "--limit", "50"]);
        let found = found.code(0).data();
        assert_eq!(found["results"].as_array().unwrap().len(), 30, "{found}");
    }
}

/// Starts `args` in `repo` paused at the pause point `point` (`cairn::cli::pausepoint`), and
/// returns once it got there, with the file whose removal lets it go on.
fn paused_at(
    env: &Env,
    repo: &Path,
    point: &str,
    args: &[&str],
) -> (std::process::Child, std::path::PathBuf) {
    let file = env.path().join(format!("pause-{point}"));
    let child = env
        .command(BIN, repo)
        .args(args)
        .env("CAIRN_PAUSEPOINT", point)
        .env("CAIRN_PAUSEFILE", &file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !file.exists() {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "{args:?} never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    (child, file)
}

/// The ids of the documents `search` finds for `words`, sorted.
fn ids_found(env: &Env, repo: &Path, words: &str) -> Vec<String> {
    let found = env
        .cairn_in(repo, &["--json", "search", words, "--limit", "200"])
        .code(0)
        .data();
    let mut ids: Vec<String> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn an_update_planned_before_another_process_committed_folds_nothing_in_twice() {
    // Issue 30: a read planned its update from the commit it had read, then took the writer
    // lock after another process had folded in the same appended lines, and added them
    // again (`index --verify`: duplicate documents; a search returned one record twice).
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "first caddy entry"])
        .code(0);
    env.cairn_in(&repo, &["index"]).code(0);
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "second caddy entry"])
        .code(0);
    // This read plans to fold in the second entry, and waits there.
    let (reader, pause) = paused_at(&env, &repo, "index-planned", &["search", "caddy"]);
    // Another process folds it in and commits.
    env.cairn_in(&repo, &["index"]).code(0);
    std::fs::remove_file(&pause).unwrap();
    let out = reader.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.cairn_in(&repo, &["index", "--verify"]).code(0);
    let ids = ids_found(&env, &repo, "caddy");
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "a record found twice");
    assert_eq!(ids.len(), 2, "{ids:?}");

    // Planned again, the update still has work of its own (today's log grew after it looked
    // at it), and commits: with the checkpoints of the other process's commit, not the ones
    // it read first, which knew nothing of the log of January (its lines were folded in
    // again by the next update).
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-01-02T10:00:00Z",
            "slog",
            "deploy",
            "caddy",
            "caddy entry of january",
        ],
    )
    .code(0);
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "third caddy entry"])
        .code(0);
    let (reader, pause) = paused_at(&env, &repo, "index-planned", &["search", "caddy"]);
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "fourth caddy entry"])
        .code(0);
    env.cairn_in(&repo, &["index"]).code(0);
    std::fs::remove_file(&pause).unwrap();
    let out = reader.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids = ids_found(&env, &repo, "caddy");
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "a record found twice");
    assert_eq!(ids.len(), 5, "{ids:?}");
    env.cairn_in(&repo, &["index", "--verify"]).code(0);
}

#[test]
fn a_read_whose_checkpoints_went_under_two_commits_opens_the_last_one_without_rebuilding() {
    // Issue 30: a read that had read `meta.json` found its checkpoints file removed by two
    // commits of other processes, and rebuilt the index from nothing: it removed the folder
    // every other reader was opening ("cannot open a reader: FileDoesNotExist",
    // ".cairn/index: Directory not empty").
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "first caddy entry"])
        .code(0);
    env.cairn_in(&repo, &["index"]).code(0);
    // It reads the last commit while the look at the files waits (tantivy opens in
    // milliseconds; the commits below take longer).
    let (reader, pause) = paused_at(&env, &repo, "index-listing", &["--json", "index"]);
    for i in 0..2 {
        env.cairn_in(&repo, &["slog", "deploy", "caddy", &format!("entry {i}")])
            .code(0);
        env.cairn_in(&repo, &["index"]).code(0);
    }
    std::fs::remove_file(&pause).unwrap();
    let out = reader.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["data"]["refresh"]["rebuilt"], false,
        "{report}\n{stderr}"
    );
    assert_eq!(report["data"]["documents"], 3, "{report}");
    env.cairn_in(&repo, &["index", "--verify"]).code(0);
}

#[test]
fn a_read_whose_index_is_removed_while_it_opens_it_waits_and_opens_again() {
    // Issue 30: a read failed with exit 2 ("cannot open a reader: FileDoesNotExist(…)",
    // "cannot open the writer: FileDoesNotExist(meta.json)") when another process removed
    // the files of the commit it had just read (a rebuild, tantivy's garbage collection, or
    // `.cairn/` deleted). Here the index goes between its `meta.json` and its reader.
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["slog", "deploy", "caddy", "first caddy entry"])
        .code(0);
    env.cairn_in(&repo, &["index"]).code(0);
    let (reader, pause) = paused_at(&env, &repo, "index-opened", &["--json", "search", "caddy"]);
    std::fs::remove_dir_all(repo.join(".cairn/index")).unwrap();
    std::fs::remove_file(&pause).unwrap();
    let out = reader.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        found["data"]["results"].as_array().unwrap().len(),
        1,
        "{found}"
    );
    env.cairn_in(&repo, &["index", "--verify"]).code(0);
}

/// What one process of [`mixed_load`] did.
struct Outcome {
    command: &'static str,
    code: i32,
    stdout: String,
    stderr: String,
}

/// `workers` processes at once for `seconds`, each cycling through slog, remember, note,
/// recall, search, brief and `index`; every outcome.
fn mixed_load(env: &Env, repo: &Path, workers: usize, seconds: u64) -> Vec<(String, Outcome)> {
    let until = std::time::Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    let mut step = 0;
                    while std::time::Instant::now() < until {
                        step += 1;
                        let marker = format!("mlw{w}s{step}");
                        let (command, args): (&'static str, Vec<String>) = match (w + step) % 7 {
                            0 => (
                                "slog",
                                vec![
                                    "--json".into(),
                                    "slog".into(),
                                    "deploy".into(),
                                    "caddy".into(),
                                    format!("{marker} caddy proxy restarted"),
                                ],
                            ),
                            1 => (
                                "remember",
                                vec![
                                    "--json".into(),
                                    "remember".into(),
                                    format!("{marker} the caddy proxy step {step} of agent {w} needs a reload"),
                                ],
                            ),
                            2 => (
                                "note",
                                vec![
                                    "--json".into(),
                                    "note".into(),
                                    format!("{marker} caddy note"),
                                ],
                            ),
                            3 => ("recall", vec!["recall".into(), "caddy proxy".into()]),
                            4 => ("search", vec!["search".into(), "caddy".into()]),
                            5 => ("brief", vec!["brief".into()]),
                            _ => ("index", vec!["index".into()]),
                        };
                        let out = env.command(BIN, repo).args(&args).output().unwrap();
                        done.push((
                            marker,
                            Outcome {
                                command,
                                code: out.status.code().unwrap_or(-1),
                                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                            },
                        ));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn a_short_mixed_load_loses_nothing_doubles_nothing_and_fails_no_read() {
    // Issue 30: 16 processes mixing writes, reads and `cairn index` left duplicate documents
    // (`index --verify` exit 1) and failed reads with exit 2. Here 6 processes for a few
    // seconds; the full run is `scripts/load --mix`.
    let (env, repo) = Env::repo();
    let outcomes = mixed_load(&env, &repo, 6, 8);
    let mut failed = Vec::new();
    let mut written = Vec::new();
    for (marker, o) in &outcomes {
        let ok = match o.command {
            "slog" | "remember" | "note" | "index" => o.code == 0,
            // A read that found nothing exits 1.
            _ => o.code == 0 || o.code == 1,
        };
        if !ok {
            failed.push(format!(
                "{} {marker}: exit {}\n{}",
                o.command, o.code, o.stderr
            ));
        }
        if o.code == 0 && matches!(o.command, "slog" | "note") {
            written.push((o.command, marker.clone()));
        }
        if o.code == 0 && o.command == "remember" && o.stdout.contains("\"stored\":true") {
            written.push((o.command, marker.clone()));
        }
    }
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(outcomes.len() >= 12, "only {} commands ran", outcomes.len());
    // Every slog, note and stored remember that exited 0 is in the files exactly once.
    let lines_of = |dir: &str| -> Vec<String> {
        std::fs::read_dir(repo.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .flat_map(|e| {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                text.lines().map(str::to_string).collect::<Vec<_>>()
            })
            .collect()
    };
    let slog = lines_of("slog");
    let observations = lines_of("vault/observations");
    let notes: Vec<String> = std::fs::read_dir(repo.join("vault/notes"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for (command, marker) in &written {
        let needle = format!("{marker} ");
        let count = match *command {
            "slog" => slog.iter().filter(|l| l.contains(&needle)).count(),
            "remember" => observations
                .iter()
                .filter(|l| l.contains(&needle) && !l.contains("\"op\""))
                .count(),
            _ => notes
                .iter()
                .filter(|n| n.contains(&format!("-{marker}-")))
                .count(),
        };
        assert_eq!(count, 1, "{command} {marker}");
    }
    // The index holds each record once: what `--verify` compares with a rebuild.
    let verify = env.cairn_in(&repo, &["--json", "index", "--verify"]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
}
