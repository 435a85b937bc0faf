//! Forget at scale: `cairn forget ID --yes` of one record in a repository of 100,000.
//!
//! Run with `scripts/bench-forget` (or `cargo bench --bench forget -- [--records N] [--runs
//! N]`; `CAIRN_BENCH_RECORDS` and `CAIRN_BENCH_RUNS` set the defaults). The bench
//!
//! 1. writes a repository directly: `--records` records (100,000 by default), 70 % of them
//!    observations and 30 % slog entries, over 30 day files each, one observation holding a
//!    unique text; commits them and runs `cairn index` once (outside the timing);
//! 2. times, whole process, median over `--runs` fresh copies of that repository (each copied
//!    outside the timing): `cairn forget ID --yes` of that observation (find, rewrite its file,
//!    one commit, re-index, purge the deleted documents from their segments, drop its vector
//!    row, list the commits that hold its text); beside `rg -l TEXT` (or `grep -rl`) over the
//!    same record files, and `cairn index --rebuild` (what purging by a rebuild would cost
//!    instead of merging the segments that hold deleted documents).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

mod common;
use common::{load, median_of, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T12:00:00Z";
const UNIQUE: &str = "the retired host zz-forget-me-42 still answers on port 7070";

fn main() {
    let records = setting("--records", "CAIRN_BENCH_RECORDS", 100_000usize);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 5usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-forget-")
        .tempdir()
        .expect("temp dir");
    let base = work.path().join("base");
    println!(
        "cairn forget bench: {records} records (70 % observations, 30 % slog), {runs} runs; load {}",
        load()
    );
    run(Command::new(CAIRN).arg("init").arg(&base), "init");
    let id = write_records(&base, records);
    git(&base, &["add", "-A"]);
    git(&base, &["commit", "-q", "-m", "bench records"]);
    let started = Instant::now();
    run(&mut cairn(&base, &["index"]), "index");
    println!("  setup: cairn index once: {:.0} ms", ms(started.elapsed()));

    let mut n = 0;
    let mut copy = || {
        n += 1;
        let dir = work.path().join(format!("copy-{n}"));
        run(
            Command::new("cp").arg("-a").arg(&base).arg(&dir),
            "copy the repository",
        );
        dir
    };
    let forget = median_of(runs, || {
        let dir = copy();
        let t = Instant::now();
        let out = run(&mut cairn(&dir, &["forget", &id, "--yes"]), "forget");
        let took = t.elapsed();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("forgot 1 record"),
            "forget removed the record"
        );
        let _ = std::fs::remove_dir_all(&dir);
        took
    });
    let search = searcher();
    let reference = median_of(runs, || {
        let t = Instant::now();
        let flags = if search == "rg" { "-lF" } else { "-rlF" };
        let out = Command::new(search)
            .args([flags, UNIQUE])
            .arg(base.join("slog"))
            .arg(base.join("vault"))
            .stderr(Stdio::null())
            .output()
            .expect("search");
        assert!(!out.stdout.is_empty(), "the reference finds the text");
        t.elapsed()
    });
    let rebuild = median_of(runs.min(3), || {
        let dir = copy();
        let t = Instant::now();
        run(&mut cairn(&dir, &["index", "--rebuild"]), "rebuild");
        let took = t.elapsed();
        let _ = std::fs::remove_dir_all(&dir);
        took
    });
    println!(
        "  cairn forget ID --yes (one record of {records}): {:>8.1} ms",
        ms(forget)
    );
    println!(
        "  {search} -l TEXT over the same record files:   {:>8.1} ms",
        ms(reference)
    );
    println!(
        "  cairn index --rebuild (purge by rebuilding):    {:>8.1} ms",
        ms(rebuild)
    );
}

/// Writes the records as the commands would; returns the id of the observation to forget.
fn write_records(repo: &Path, records: usize) -> String {
    let obs = records * 7 / 10;
    let slog = records - obs;
    let days = 30;
    let mut target = String::new();
    let mut files: Vec<String> = vec![String::new(); days];
    for k in 0..obs {
        let text = if k == obs / 2 {
            UNIQUE.to_string()
        } else {
            format!(
                "Service {} needs {} before its deploy step; seen in run {k} on host build-{}",
                k % 97,
                [
                    "a warm cache",
                    "the VPN",
                    "root",
                    "a clean tree",
                    "the staging key"
                ][k % 5],
                k % 13
            )
        };
        let source = format!("session:bench-{}", k % 400);
        let id = cairn::store::observation_id(&text, &source);
        if k == obs / 2 {
            target = id.clone();
        }
        let line = serde_json::json!({
            "id": id,
            "session_id": format!("claude/bench-{}", k % 400),
            "observation": text,
            "observation_type": "fact",
            "source": source,
            "timestamp": format!("2026-11-{:02}T10:00:00.000Z", k % days + 1),
            "priority": "medium",
            "write_verdict": "allow",
            "write_confidence": 0.8,
            "category_id": "operations",
            "category_confidence": 0.7,
            "taxonomy_version": 1,
            "merged_count": 1,
        });
        files[k % days].push_str(&format!("{line}\n"));
    }
    let dir = repo.join("vault/observations");
    std::fs::create_dir_all(&dir).expect("observations folder");
    for (d, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("2026-11-{:02}.jsonl", d + 1)), text).expect("write");
    }
    let mut files: Vec<String> = vec![String::new(); days];
    for k in 0..slog {
        let action = ["deploy", "fix", "configure", "restart"][k % 4];
        let tool = ["caddy", "redis", "nfs", "postgres", "systemd"][k % 5];
        let line = serde_json::json!({
            "id": format!("sl-{k:012x}"),
            "ts": format!("2026-11-{:02}T09:00:00.000Z", k % days + 1),
            "action": action,
            "tool": tool,
            "detail": format!("step {k} of the rollout on host build-{} went through", k % 13),
        });
        files[k % days].push_str(&format!("{line}\n"));
    }
    for (d, text) in files.iter().enumerate() {
        std::fs::write(repo.join(format!("slog/2026-11-{:02}.jsonl", d + 1)), text).expect("write");
    }
    target
}

fn searcher() -> &'static str {
    let has = |p: &str| {
        Command::new(p)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has("rg") { "rg" } else { "grep" }
}

fn git(dir: &Path, args: &[&str]) {
    run(
        Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args),
        "git",
    );
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(CAIRN);
    cmd.env("CAIRN_NOW", NOW)
        .arg("--repo")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
