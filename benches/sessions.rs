//! Sessions at scale: `cairn sessions ingest` over the real fixture transcripts repeated to
//! 1 GB, the re-ingest of the unchanged set, and `cairn observe` with the built-in observer.
//!
//! Run with `scripts/bench-sessions` (or `cargo bench --bench sessions -- [--mb N] [--runs N]`;
//! `CAIRN_BENCH_MB` and `CAIRN_BENCH_RUNS` set the defaults, `CAIRN_BENCH_KEEP=1` keeps the
//! work folder). The bench
//!
//! 1. copies every transcript of `tests/fixtures/sessions` (Claude Code, Codex, pi) again and
//!    again, each copy with its session id replaced by a new one (so that every copy is a
//!    session of its own), until the set holds `--mb` megabytes (1,000 by default);
//! 2. times the first `cairn sessions ingest DIR` (whole process, one run) and reports MB/s,
//!    next to ripgrep (or grep) counting the user lines of the same files;
//! 3. times `cairn sessions ingest DIR` again with nothing changed (median of `--runs`);
//! 4. in a second repository, ingests copies until at least 1,000 turns, brings the index up
//!    to date (`cairn index`, timed apart), then times `cairn observe --all --observer
//!    builtin` (one run: a second has nothing to do) and reports it per 1,000 turns.
//!
//! Targets (issue 5): ingest at least 50 MB/s; an unchanged set in under 50 ms; observe 1,000
//! turns in under 1 s.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{load, median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

fn main() {
    let mb = setting("--mb", "CAIRN_BENCH_MB", 1000u64);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 10usize);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
    let originals = transcripts(&fixtures);
    assert!(
        !originals.is_empty(),
        "no transcripts under {}",
        fixtures.display()
    );
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-sessions-")
        .tempdir()
        .expect("temp dir");
    let root = work.path().to_path_buf();
    println!(
        "cairn sessions bench: {} fixture transcripts, target set {mb} MB, {runs} runs; load {}",
        originals.len(),
        load()
    );

    // 1. The transcript set.
    let set = root.join("transcripts");
    let (bytes, copies) = fill(&originals, &set, mb * 1_000_000);
    println!(
        "set: {} files, {:.1} MB ({copies} copies of the fixtures)",
        count_files(&set),
        bytes as f64 / 1e6
    );

    // 2. First ingest.
    let repo = root.join("repo");
    init(&repo);
    let (first, out) = timed(cairn(
        &repo,
        &["--json", "sessions", "ingest", set.to_str().unwrap()],
    ));
    let data = data_of(&out, "ingest");
    let cards = data["cards"].as_u64().unwrap_or(0);
    let mbps = bytes as f64 / 1e6 / first.as_secs_f64();
    let (rg_time, rg_name) = reference(&set);
    let rg_mbps = bytes as f64 / 1e6 / rg_time.as_secs_f64();

    // 3. Unchanged set.
    let mut again = Vec::new();
    for _ in 0..runs {
        let (t, out) = timed(cairn(
            &repo,
            &["--json", "sessions", "ingest", set.to_str().unwrap()],
        ));
        let d = data_of(&out, "re-ingest");
        assert_eq!(d["cards"], 0, "an unchanged set adds nothing");
        again.push(t);
    }
    let unchanged = median(&mut again);

    // 4. Observe 1,000+ turns with the built-in observer.
    let small = root.join("observe-set");
    let repo2 = root.join("repo2");
    init(&repo2);
    let mut turns = 0u64;
    let mut k = 0usize;
    while turns < 1000 {
        let dir = small.join(format!("batch{k}"));
        copy_once(&originals, &dir, 100_000 + k);
        let (_, out) = timed(cairn(
            &repo2,
            &["--json", "sessions", "ingest", dir.to_str().unwrap()],
        ));
        turns += data_of(&out, "ingest for observe")["cards"]
            .as_u64()
            .unwrap_or(0);
        k += 1;
    }
    let (index_time, _) = timed(cairn(&repo2, &["index"]));
    let (observe_time, out) = timed(cairn(
        &repo2,
        &["--json", "observe", "--all", "--observer", "builtin"],
    ));
    let od = data_of(&out, "observe");
    let observed = od["counts"]["turns"].as_u64().unwrap_or(0);
    let per_1000 = observe_time.as_secs_f64() * 1000.0 / observed.max(1) as f64;

    println!();
    println!("measure                                   figure          target       ");
    println!(
        "ingest, first run ({:.0} MB, {cards} cards)   {:>8.1} MB/s   >= 50 MB/s   {}  ({:.2} s; {rg_name} reads the same files at {:.0} MB/s, {:.2}x of cairn's time)",
        bytes as f64 / 1e6,
        mbps,
        verdict(mbps >= 50.0),
        first.as_secs_f64(),
        rg_mbps,
        rg_time.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "re-ingest, unchanged (median of {runs})          {:>8.1} ms     < 50 ms      {}",
        ms(unchanged),
        verdict(unchanged < Duration::from_millis(50))
    );
    println!(
        "observe, builtin ({observed} turns)              {:>8.1} ms     per 1,000 turns: {:.0} ms (< 1000 ms) {}",
        ms(observe_time),
        per_1000 * 1000.0,
        verdict(per_1000 < 1.0)
    );
    println!(
        "  (index brought up to date before observe: {:.1} ms; observe found {} facts: {} allowed, {} held, {} discarded, {} merged)",
        ms(index_time),
        od["counts"]["extracted"],
        od["counts"]["allowed"],
        od["counts"]["held"],
        od["counts"]["discarded"],
        od["counts"]["deduped"]
    );
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read fixtures") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn count_files(dir: &Path) -> usize {
    transcripts(dir).len()
}

/// The session id a transcript names (Claude Code `sessionId`, Codex `session_meta.payload.id`,
/// pi's header `id`).
fn session_id(text: &str) -> Option<String> {
    for line in text.lines().take(50) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(s) = v["sessionId"].as_str() {
            return Some(s.to_string());
        }
        if v["type"] == "session_meta" {
            return v["payload"]["id"].as_str().map(str::to_string);
        }
        if v["type"] == "session" {
            return v["id"].as_str().map(str::to_string);
        }
    }
    None
}

/// Writes one copy of every original under `dir`, each with a new session id numbered `n`.
fn copy_once(originals: &[PathBuf], dir: &Path, n: usize) -> u64 {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut bytes = 0;
    for (i, p) in originals.iter().enumerate() {
        let text = std::fs::read_to_string(p).expect("read fixture");
        let new_id = format!("bench{n:06}-{i:02}-4000-8000-000000000000");
        let text = match session_id(&text) {
            Some(id) => text.replace(&id, &new_id),
            None => text,
        };
        let name = format!("{new_id}.jsonl");
        std::fs::write(dir.join(name), &text).expect("write copy");
        bytes += text.len() as u64;
    }
    bytes
}

fn fill(originals: &[PathBuf], set: &Path, target: u64) -> (u64, usize) {
    let mut bytes = 0;
    let mut n = 0;
    while bytes < target {
        bytes += copy_once(originals, &set.join(format!("copy{n:04}")), n);
        n += 1;
    }
    (bytes, n)
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(CAIRN);
    c.arg("--repo")
        .arg(repo)
        .args(args)
        .env_remove("CAIRN_REPO");
    c
}

fn init(repo: &Path) {
    let out = Command::new(CAIRN)
        .arg("init")
        .arg(repo)
        .output()
        .expect("cairn init");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn timed(mut cmd: Command) -> (Duration, Output) {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    (start.elapsed(), out)
}

fn data_of(out: &Output, what: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["data"].clone()
}

/// ripgrep (or grep) counting the user lines of the same files: the floor of reading them.
fn reference(set: &Path) -> (Duration, &'static str) {
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut cmd = if rg {
        let mut c = Command::new("rg");
        c.args(["-c", "--no-messages", "\"type\":\"user\""])
            .arg(set);
        c
    } else {
        let mut c = Command::new("grep");
        c.args(["-r", "-c", "\"type\":\"user\""]).arg(set);
        c
    };
    let (t, _) = timed(std::mem::replace(&mut cmd, Command::new("true")));
    (t, if rg { "rg -c" } else { "grep -rc" })
}
