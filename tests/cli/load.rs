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
