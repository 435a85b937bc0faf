//! What every benchmark shares: the machine's load (printed beside the figures, since this
//! machine is shared and noisy), milliseconds, and medians. Each bench uses some of it.
#![allow(dead_code)]

use std::time::Duration;

/// The load averages of /proc/loadavg (1, 5 and 15 minutes).
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of measured times (the upper one of an even count).
pub fn median(ts: &mut [Duration]) -> Duration {
    ts.sort();
    ts[ts.len() / 2]
}

/// The median of `runs` (at least one) calls of `f`, each returning its time.
pub fn median_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut ts: Vec<Duration> = (0..runs.max(1)).map(|_| f()).collect();
    median(&mut ts)
}
