//! Sync at scale: `cairn sync` of 1,000 new entries on each of two clones.
//!
//! Run with `scripts/bench-sync` (or `cargo bench --bench sync -- [--entries N] [--runs N]`;
//! `CAIRN_BENCH_ENTRIES` and `CAIRN_BENCH_RUNS` set the defaults, `CAIRN_BENCH_KEEP=1` keeps the
//! work folder). The bench
//!
//! 1. makes a bare remote, clone A by `cairn init` + `cairn sync`, clone B by `git clone`;
//! 2. logs `--entries` slog entries on each side (1,000 by default: one `cairn slog` and one
//!    commit each, all in the same day file) and brings both indexes up to date;
//! 3. for each of `--runs` runs, copies that state afresh (not timed) and times, whole process:
//!    `cairn sync` in A (pushes A's commits), then `cairn sync` in B (fetches A's, union-merges
//!    the day file, repairs it, updates the index, pushes); beside the same two steps done by
//!    `git pull --no-rebase --no-edit && git push` on another fresh copy. Medians are printed.
//!
//! After the timed runs it checks the last cairn copy: B holds every entry of both sides once
//! and `cairn index --verify` passes.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{load, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T12:00:00Z";

fn main() {
    let entries = setting("--entries", "CAIRN_BENCH_ENTRIES", 1000);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 5);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-sync-")
        .tempdir()
        .expect("temp dir");
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    println!(
        "cairn sync bench: {entries} new slog entries on each of two clones, {runs} runs; load {}",
        load()
    );

    // 1. The remote and the two clones.
    let template = work.path().join("template");
    std::fs::create_dir_all(&template).expect("template");
    git(
        &home,
        &template,
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let a = template.join("a");
    run(cairn(&home, &template, &["init", "a"]), "init");
    git(&home, &a, &["remote", "add", "origin", "../remote.git"]);
    run(cairn(&home, &a, &["sync"]), "first sync");
    git(&home, &template, &["clone", "-q", "remote.git", "b"]);
    let b = template.join("b");
    // A relative URL, so that each copy of the three pushes to its own remote.
    git(&home, &b, &["remote", "set-url", "origin", "../remote.git"]);

    // 2. The entries, one command and one commit each.
    let started = Instant::now();
    for (side, root) in [("a", &a), ("b", &b)] {
        for k in 0..entries {
            let detail = format!(
                "{side} deployed build {k} of service-{} to host-{}",
                k % 37,
                k % 11
            );
            run(
                cairn(&home, root, &["slog", "deploy", "caddy", &detail]),
                "slog",
            );
        }
        run(cairn(&home, root, &["index"]), "index");
    }
    println!(
        "  setup: {} entries on each side in {:.1} s",
        entries,
        started.elapsed().as_secs_f64()
    );

    // 3. Timed runs on fresh copies.
    let copy = |name: &str| -> std::path::PathBuf {
        let to = work.path().join(name);
        let _ = std::fs::remove_dir_all(&to);
        run(
            {
                let mut c = Command::new("cp");
                c.arg("-a").arg(&template).arg(&to);
                c
            },
            "copy",
        );
        to
    };
    let (mut push_a, mut merge_b, mut git_a, mut git_b) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs.max(1) {
        let c = copy("cairn-run");
        push_a.push(timed(cairn(&home, &c.join("a"), &["sync"]), "sync a"));
        merge_b.push(timed(cairn(&home, &c.join("b"), &["sync"]), "sync b"));
        let g = copy("git-run");
        let pull_push = |root: &Path| {
            let start = Instant::now();
            git(&home, root, &["pull", "-q", "--no-rebase", "--no-edit"]);
            git(&home, root, &["push", "-q"]);
            start.elapsed()
        };
        git_a.push(pull_push(&g.join("a")));
        git_b.push(pull_push(&g.join("b")));
    }
    let last = work.path().join("cairn-run").join("b");
    let day = std::fs::read_to_string(last.join("slog/2026-12-01.jsonl")).expect("day file");
    let mut ids = std::collections::HashSet::new();
    for line in day.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(
            ids.insert(v["id"].as_str().unwrap_or_default().to_string()),
            "an entry twice"
        );
    }
    assert_eq!(ids.len(), 2 * entries, "every entry of both sides, once");
    run(cairn(&home, &last, &["index", "--verify"]), "verify");

    println!(
        "  cairn sync in A (push {entries} commits)              median {:>8.1} ms",
        ms(median(push_a))
    );
    println!(
        "  cairn sync in B (fetch, merge, repair, index, push)  median {:>8.1} ms",
        ms(median(merge_b))
    );
    println!(
        "  git pull && git push in A (reference)               median {:>8.1} ms",
        ms(median(git_a))
    );
    println!(
        "  git pull && git push in B (reference)               median {:>8.1} ms",
        ms(median(git_b))
    );
    println!(
        "  checked: B holds all {} entries once; index --verify passes",
        2 * entries
    );
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("  kept {}", kept.display());
    }
}

/// A command with an environment of its own: no person's git configuration, a pinned time.
fn scrubbed(program: &str, home: &Path, dir: &Path) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("GIT_") || key.starts_with("CAIRN_") {
            c.env_remove(&key);
        }
    }
    c.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("CAIRN_NOW", NOW);
    c
}

fn cairn(home: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut c = scrubbed(CAIRN, home, dir);
    c.args(args);
    c
}

fn git(home: &Path, dir: &Path, args: &[&str]) {
    let mut c = scrubbed("git", home, dir);
    c.args([
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
    ])
    .args(args);
    run(c, &format!("git {args:?}"));
}

fn run(mut cmd: Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn timed(cmd: Command, what: &str) -> Duration {
    let start = Instant::now();
    run(cmd, what);
    start.elapsed()
}

fn median(mut ts: Vec<Duration>) -> Duration {
    ts.sort();
    ts[ts.len() / 2]
}
