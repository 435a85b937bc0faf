//! Peak resident memory of a process: a command run once under GNU time (`/usr/bin/time -f
//! %M`, a run of its own so that the timed runs stay unwrapped), or a running server's high
//! water mark (`VmHWM` in /proc/PID/status).

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Whether GNU time is there to measure a command's peak.
pub fn available() -> bool {
    std::path::Path::new("/usr/bin/time").exists()
}

/// The peak resident memory of `cmd` run once (with `stdin` written to it), in MiB; NaN when
/// it cannot be measured.
pub fn peak_mib(cmd: &Command, stdin: Option<&str>) -> f64 {
    if !available() {
        return f64::NAN;
    }
    let Ok(report) = tempfile::NamedTempFile::new() else {
        return f64::NAN;
    };
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    let Ok(mut child) = timed.spawn() else {
        return f64::NAN;
    };
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.unwrap_or_default().as_bytes());
    }
    let _ = child.wait();
    std::fs::read_to_string(report.path())
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse::<f64>().ok()))
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// The high water mark of process `pid`'s resident memory so far, in MiB; NaN when unknown.
pub fn high_water_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}
