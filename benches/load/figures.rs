//! The figures beside the wall times: the repository lock's wait and hold, and percentiles.

use std::path::Path;
use std::time::Duration;

use super::common::ms;
use super::count::jsonl_file;

/// The repository lock's wait and hold, from the writers' telemetry.
pub(super) fn lock_figures(repo: &Path) {
    let mut waits = Vec::new();
    let mut holds = Vec::new();
    let mut contended = 0usize;
    for v in jsonl_file(&repo.join(".cairn/telemetry.jsonl")) {
        if v["component"] == "lock" && v["action"] == "writer" {
            let m = &v["metadata"];
            waits.push(Duration::from_micros(m["wait_us"].as_u64().unwrap_or(0)));
            holds.push(Duration::from_micros(m["held_us"].as_u64().unwrap_or(0)));
            contended += usize::from(m["contended"] == true);
        }
    }
    if waits.is_empty() {
        println!("lock: no `lock` telemetry events");
        return;
    }
    waits.sort();
    holds.sort();
    println!(
        "lock wait {:>5} takes {:>9.1} {:>8.1} {:>8.1}   ({contended} found it held)",
        waits.len(),
        ms(pct(&waits, 50.0)),
        ms(pct(&waits, 99.0)),
        ms(*waits.last().expect("not empty"))
    );
    println!(
        "lock hold {:>5} takes {:>9.1} {:>8.1} {:>8.1}",
        holds.len(),
        ms(pct(&holds, 50.0)),
        ms(pct(&holds, 99.0)),
        ms(*holds.last().expect("not empty"))
    );
}

/// The `p`th percentile of sorted times (nearest rank).
pub(super) fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
