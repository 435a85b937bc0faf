//! `cairn why` and `cairn stats` on a repository of a real size: what a person waits for.
//!
//! Run with `scripts/bench-why` (or `cargo bench --bench why -- [--obs N] [--runs N]`;
//! `CAIRN_BENCH_OBS` and `CAIRN_BENCH_RUNS` set the defaults, `CAIRN_BENCH_KEEP=1` keeps the
//! work folder). The bench
//!
//! 1. makes a repository with a real Codex transcript ingested and observed by the built-in
//!    observer, and `--obs` more observations imported (10,000 by default) and a recall log of
//!    a few thousand lines;
//! 2. times, whole process, median of `--runs`: `cairn why ID` (an observation from a turn),
//!    `cairn why TEXT` (its text: exact scan and nearest by meaning), `cairn why ID --query Q`
//!    (recall's ranking, read deep), `cairn stats` and `cairn stats --since 7d`; beside
//!    `grep -rc ID vault` (finding the id at all; rg is not on every machine) and `git status`
//!    in the same repository.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{load, median_of as median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T12:00:00Z";

fn main() {
    let obs = setting("--obs", "CAIRN_BENCH_OBS", 10_000);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 10);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-why-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn why / stats bench: {obs} imported observations, {runs} runs; load {}",
        load()
    );
    run(Command::new(CAIRN).arg("init").arg(&repo), "init");
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/sessions/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    );
    run(
        cairn(&repo, &["sessions", "ingest"]).arg(&transcript),
        "ingest",
    );
    let observed = data(
        &run(
            &mut cairn(
                &repo,
                &["--json", "observe", "--all", "--observer", "builtin"],
            ),
            "observe",
        ),
        "observe",
    );
    let first = &observed["observations"][0];
    let id = first["id"]
        .as_str()
        .expect("an observation from a turn")
        .to_string();
    let text = first["observation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let file = work.path().join("observations.jsonl");
    let mut lines = String::new();
    for k in 0..obs {
        let line = serde_json::json!({
            "observation": format!(
                "Service {} needs {} before its deploy step; seen in run {k} on host build-{}",
                k % 97, ["a warm cache", "the VPN", "root", "a clean tree", "the staging key"][k % 5], k % 13
            ),
            "session_id": format!("claude/bench-{:04}", k % 400),
            "timestamp": "2026-11-20T10:00:00Z",
        });
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&file, lines).expect("write observations");
    run(
        cairn(&repo, &["import", "observations", "--raw"]).arg(&file),
        "import",
    );
    // A recall log: recalls of the first observation over the past weeks.
    let mut recalls = String::new();
    for k in 0..3000 {
        recalls.push_str(&format!(
            "{{\"id\":\"{id}\",\"ts\":\"2026-11-{:02}T10:00:00.000Z\"}}\n",
            1 + k % 30
        ));
    }
    std::fs::write(repo.join(".cairn/recalls.jsonl"), recalls).expect("write recalls");
    // Warm: the index built once, as any earlier command would have.
    run(&mut cairn(&repo, &["why", &id]), "why");
    let words: String = text
        .split_whitespace()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ");
    println!("target: {id} ({text:.60})");

    let by_id = median(runs, || timed(cairn(&repo, &["why", &id]), "why ID"));
    let by_text = median(runs, || timed(cairn(&repo, &["why", &text]), "why TEXT"));
    let ranked = median(runs, || {
        timed(
            cairn(&repo, &["why", &id, "--query", &words]),
            "why --query",
        )
    });
    let stats = median(runs, || timed(cairn(&repo, &["stats"]), "stats"));
    let week = median(runs, || {
        timed(cairn(&repo, &["stats", "--since", "7d"]), "stats --since")
    });
    let grep = median(runs, || {
        let mut c = Command::new("grep");
        c.current_dir(&repo).args(["-rc", &id, "vault"]);
        timed_any(c)
    });
    let status = median(runs, || {
        let mut c = Command::new("git");
        c.current_dir(&repo).arg("status");
        timed_any(c)
    });
    println!();
    println!("{:<44} {:>9}", "step", "median");
    for (name, t) in [
        ("cairn why ID", by_id),
        ("cairn why TEXT", by_text),
        ("cairn why ID --query Q", ranked),
        ("cairn stats", stats),
        ("cairn stats --since 7d", week),
        ("grep -rc ID vault (reference)", grep),
        ("git status (reference)", status),
    ] {
        println!("{name:<44} {:>6.1} ms", ms(t));
    }
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(CAIRN);
    c.arg("--repo")
        .arg(repo)
        .arg("--now")
        .arg(NOW)
        .args(args)
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_NOW");
    c
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn data(out: &Output, what: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["data"].clone()
}

fn timed(mut cmd: Command, what: &str) -> Duration {
    let start = Instant::now();
    run(&mut cmd, what);
    start.elapsed()
}

/// A reference command's time, whatever its exit code (grep exits 1 when a file has no match).
fn timed_any(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let _ = cmd.output();
    start.elapsed()
}
