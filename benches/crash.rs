//! The crash harness's long run: every writing command killed with SIGKILL at random moments
//! and at its named failpoints, each kill checked (see `crash_harness/mod.rs` for the checks).
//!
//! Run with `scripts/crash` (or `cargo bench --bench crash -- [--trials N] [--seed S]
//! [--scenario NAME]`; `CAIRN_CRASH_TRIALS`, `CAIRN_CRASH_SEED` set the defaults,
//! `CAIRN_CRASH_KEEP=1` keeps the work folder, `CAIRN_CRASH_BIN` names another cairn binary). `--trials` is per scenario (20 by default: 15
//! scenarios, 300 trials). A failure prints its scenario, seed and kill; `--scenario NAME
//! --seed S --trials 1` replays that one trial (the seed fixes the kill's delay, not the
//! machine's timing, so a timer trial replays close to, not exactly at, the same step).

use std::path::{Path, PathBuf};

mod common;
use common::{load, setting};

#[path = "crash_harness/mod.rs"]
mod crash_harness;
use crash_harness::Harness;

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

fn main() {
    let trials: u64 = setting("--trials", "CAIRN_CRASH_TRIALS", 20u64);
    let seed: u64 = setting("--seed", "CAIRN_CRASH_SEED", 14u64);
    let only: String = setting("--scenario", "CAIRN_CRASH_SCENARIO", String::new());
    let work = tempfile::Builder::new()
        .prefix("cairn-crash-")
        .tempdir()
        .expect("temp dir");
    let keep = std::env::var_os("CAIRN_CRASH_KEEP").is_some();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    // CAIRN_CRASH_BIN: another cairn binary to kill (a copy, so a rebuild meanwhile does not
    // change the binary under a long run).
    let bin = std::env::var_os("CAIRN_CRASH_BIN").map_or_else(|| CAIRN.into(), PathBuf::from);
    let h = Harness::new(&bin, work.path(), &fixtures);
    println!(
        "cairn crash harness: {trials} trials a scenario, seed {seed}; load {}",
        load()
    );
    let failed = crash_harness::run_all(&h, trials, seed, &only);
    if keep || !failed.is_empty() {
        let path = work.keep();
        println!("work folder kept: {}", path.display());
    }
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
