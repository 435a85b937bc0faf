//! The crash harness's long run: every writing command killed with SIGKILL at random moments
//! and at its named failpoints, each kill checked (see `crash_harness/mod.rs` for the checks).
//!
//! Run with `scripts/crash` (or `cargo bench --bench crash -- [--trials N] [--seed S]
//! [--scenario NAME]`; `CAIRN_CRASH_TRIALS`, `CAIRN_CRASH_SEED` set the defaults,
//! `CAIRN_CRASH_KEEP=1` keeps the work folder). `--trials` is per scenario (20 by default: 13
//! scenarios, 260 trials). A failure prints its scenario, seed and kill; `--scenario NAME
//! --seed S --trials 1` replays that one trial (the seed fixes the kill's delay, not the
//! machine's timing, so a timer trial replays close to, not exactly at, the same step).

use std::path::Path;
use std::time::Instant;

mod common;
use common::{load, setting};

#[path = "crash_harness/mod.rs"]
mod crash_harness;
use crash_harness::{Harness, Kill, Rng};

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
    let h = Harness::new(Path::new(CAIRN), work.path(), &fixtures);
    println!(
        "cairn crash harness: {trials} trials a scenario, seed {seed}; load {}",
        load()
    );
    println!(
        "{:<20} {:>6} {:>6} {:>6} {:>8} {:>9} {:>9}",
        "scenario", "trials", "landed", "points", "survived", "never-ran", "clean ms"
    );
    let started = Instant::now();
    let (mut all, mut landed_all, mut survived_all) = (0u64, 0u64, 0u64);
    let mut failed = Vec::new();
    for (si, scenario) in crash_harness::scenarios().iter().enumerate() {
        if !only.is_empty() && scenario.name != only {
            continue;
        }
        let prepared = match h.prepare(scenario) {
            Ok(p) => p,
            Err(e) => {
                println!("{:<20} could not prepare: {e}", scenario.name);
                failed.push(format!("{}: {e}", scenario.name));
                continue;
            }
        };
        let (mut landed, mut points, mut survived, mut never) = (0u64, 0u64, 0u64, 0u64);
        let clean_us = prepared.clean.as_micros() as u64;
        for t in 0..trials {
            // One seed a trial, from the run's seed, the scenario and the trial number.
            let trial_seed = seed
                .wrapping_mul(1_000_003)
                .wrapping_add((si as u64) << 32)
                .wrapping_add(t);
            let mut rng = Rng::new(trial_seed);
            let kill = match scenario.failpoints.get(t as usize) {
                Some(point) => Kill::Failpoint(point.to_string()),
                None => Kill::Timer(std::time::Duration::from_micros(rng.below(clean_us))),
            };
            let label = format!("{}-{t}", scenario.name);
            let out = h.trial(&prepared, &kill, &label);
            all += 1;
            if out.landed {
                landed += 1;
                if matches!(kill, Kill::Failpoint(_)) {
                    points += 1;
                }
            }
            if out.as_if_never_ran {
                never += 1;
            }
            if out.failures.is_empty() {
                survived += 1;
            } else {
                let line = format!(
                    "{} trial {t} (--scenario {} --seed {seed}, trial seed {trial_seed}, {kill}): {}{}",
                    scenario.name,
                    scenario.name,
                    out.failures.join("; "),
                    out.kept
                        .as_ref()
                        .map(|p| format!(" [kept in {}]", p.display()))
                        .unwrap_or_default()
                );
                println!("  FAILED {line}");
                failed.push(line);
            }
        }
        landed_all += landed;
        survived_all += survived;
        println!(
            "{:<20} {:>6} {:>6} {:>6} {:>8} {:>9} {:>9.0}",
            scenario.name,
            trials,
            landed,
            points,
            survived,
            never,
            prepared.clean.as_secs_f64() * 1000.0
        );
    }
    println!(
        "total: {all} trials, {landed_all} kills landed mid-run, {survived_all} survived, {} failed; {:.0} s",
        all - survived_all,
        started.elapsed().as_secs_f64()
    );
    if keep || !failed.is_empty() {
        let path = work.keep();
        println!("work folder kept: {}", path.display());
    }
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
