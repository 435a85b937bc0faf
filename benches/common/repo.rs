//! Building the repositories the benchmarks measure: `cairn init`, records written directly as
//! the commands write them (observations and slog entries over 30 day files), one commit; the
//! `cairn` command with the time pinned; `rg` (or `grep`) as the reference.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::git;

pub const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
/// The time every command runs at (`CAIRN_NOW`).
pub const NOW: &str = "2026-12-01T12:00:00Z";
/// The day files the records are spread over (2026-11-01 to 2026-11-30).
const DAYS: usize = 30;

/// `cairn init REPO`; panics when it fails.
pub fn init(repo: &Path) {
    run(Command::new(CAIRN).arg("init").arg(repo), "cairn init");
}

/// `cairn --repo REPO ARGS…` at [`NOW`], stdin closed.
pub fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(CAIRN);
    cmd.env("CAIRN_NOW", NOW)
        .arg("--repo")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd` to its end; panics with its stderr when it fails.
pub fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `git add -A && git commit` of everything in `repo`.
pub fn commit_all(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
}

/// Writes `records` records as the commands would: 70 % observations, 30 % slog entries, over
/// 30 day files each. With `unique`, the middle observation says that text instead of the
/// generated one; its id is returned.
pub fn write_records(repo: &Path, records: usize, unique: Option<&str>) -> Option<String> {
    let obs = records * 7 / 10;
    let slog = records - obs;
    let mut target = None;
    let mut files: Vec<String> = vec![String::new(); DAYS];
    for k in 0..obs {
        let special = unique.filter(|_| k == obs / 2);
        let text = match special {
            Some(u) => u.to_string(),
            None => format!(
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
            ),
        };
        let source = format!("session:bench-{}", k % 400);
        let id = cairn::store::observation_id(&text, &source);
        if special.is_some() {
            target = Some(id.clone());
        }
        let line = serde_json::json!({
            "id": id,
            "session_id": format!("claude/bench-{}", k % 400),
            "observation": text,
            "observation_type": "fact",
            "source": source,
            "timestamp": format!("2026-11-{:02}T10:00:00.000Z", k % DAYS + 1),
            "priority": "medium",
            "write_verdict": "allow",
            "write_confidence": 0.8,
            "category_id": "operations",
            "category_confidence": 0.7,
            "taxonomy_version": 1,
            "merged_count": 1,
        });
        files[k % DAYS].push_str(&format!("{line}\n"));
    }
    let dir = repo.join("vault/observations");
    std::fs::create_dir_all(&dir).expect("observations folder");
    for (d, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("2026-11-{:02}.jsonl", d + 1)), text).expect("write");
    }
    let mut files: Vec<String> = vec![String::new(); DAYS];
    for k in 0..slog {
        let line = serde_json::json!({
            "id": format!("sl-{k:012x}"),
            "ts": format!("2026-11-{:02}T09:00:00.000Z", k % DAYS + 1),
            "action": (["deploy", "fix", "configure", "restart"][k % 4]),
            "tool": (["caddy", "redis", "nfs", "postgres", "systemd"][k % 5]),
            "detail": format!("step {k} of the rollout on host build-{} went through", k % 13),
        });
        files[k % DAYS].push_str(&format!("{line}\n"));
    }
    std::fs::create_dir_all(repo.join("slog")).expect("slog folder");
    for (d, text) in files.iter().enumerate() {
        std::fs::write(repo.join(format!("slog/2026-11-{:02}.jsonl", d + 1)), text).expect("write");
    }
    target
}

/// `rg` when it is installed, else `grep`.
pub fn searcher() -> &'static str {
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
