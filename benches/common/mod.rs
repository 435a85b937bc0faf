//! What every benchmark shares: the machine's load (printed beside the figures, since this
//! machine is shared and noisy), milliseconds, and medians. Each bench uses some of it.
#![allow(dead_code)]

pub mod repo;
pub mod rss;
pub mod texts;

use std::path::Path;
use std::process::Command;
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

/// A bench's setting: `--FLAG VALUE` on its command line, else the environment variable
/// `env`, else `default`. A value that does not parse stops the bench naming the flag.
pub fn setting<T: std::str::FromStr>(flag: &str, env: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == flag) {
        return args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{flag} takes a value"));
    }
    std::env::var(env)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs git in `dir` with a bench identity; panics with git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies `from` to `to` with `cp -a` (times kept, so the copy's index stays up to date).
pub fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp -a");
    assert!(status.success(), "cp -a failed");
}

/// What one whole-process run cost: wall time, peak resident memory and its output.
pub struct Measured {
    pub wall: Duration,
    pub peak_mib: f64,
    pub out: std::process::Output,
}

/// Runs `cmd` under GNU time (`/usr/bin/time -f %M`) for its maximum resident set size; the
/// wall time is the whole run's, GNU time's own start (about a millisecond) included.
pub fn measured(cmd: &Command) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().join("time");
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(std::process::Stdio::null());
    if let Some(cwd) = cmd.get_current_dir() {
        timed.current_dir(cwd);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    let started = std::time::Instant::now();
    let out = timed.output().expect("run /usr/bin/time (GNU time)");
    let wall = started.elapsed();
    let kib: f64 = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(f64::NAN);
    Measured {
        wall,
        peak_mib: kib / 1024.0,
        out,
    }
}

/// The cairn binary a bench runs: `CAIRN_BENCH_BIN` (an earlier build kept aside, to measure
/// before and after with the same bench), else the one cargo built with the bench.
pub fn bin() -> String {
    std::env::var("CAIRN_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_cairn").to_string())
}
