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

use std::process::{Command, Stdio};
use std::time::Instant;

mod common;
use common::repo::{cairn, commit_all, init, run, searcher, write_records};
use common::{load, median_of, ms, setting};

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
    init(&base);
    let id = write_records(&base, records, Some(UNIQUE)).expect("the unique observation");
    commit_all(&base, "bench records");
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
