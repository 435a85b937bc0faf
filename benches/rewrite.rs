//! What the query rewrite adds to `cairn recall`: whole-process wall time with and without it.
//!
//! Run with `scripts/bench-rewrite` (or `cargo bench --bench rewrite -- [--obs N] [--runs N]
//! [--llm-ms N]`; `CAIRN_BENCH_OBS`, `CAIRN_BENCH_RUNS` and `CAIRN_BENCH_LLM_MS` set the
//! defaults). The bench
//!
//! 1. makes a repository with `--obs` observations (10,000 by default) imported raw, and an
//!    index built by a first recall;
//! 2. serves a mock LLM in this process (Ollama's `/api/chat` on 127.0.0.1) that answers every
//!    rewrite with the query plus three words, at once and after `--llm-ms` (300 by default:
//!    about what a small local model takes);
//! 3. times, whole process, median of `--runs` (20): `cairn recall --profile balanced Q`
//!    with `--no-rewrite`, with the instant LLM, with the slow one, with an LLM that gives the
//!    query back (no second search), and `rg` (or `grep -r` where there is no rg) for one of the query's words over the same files.
//!
//! The rewrite's call runs beside the original query's search, so a slow LLM costs about
//! `max(llm, search) + second search`, not their sum.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod common;
use common::{load, median_of as median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const QUERY: &str = "which hosts need root before the deploy of the billing service";

/// How the mock answers: 0 = the query plus three words, 1 = the query given back.
static ECHO: AtomicU64 = AtomicU64::new(0);

fn main() {
    let obs: usize = setting("--obs", "CAIRN_BENCH_OBS", 10_000);
    let runs: usize = setting("--runs", "CAIRN_BENCH_RUNS", 20);
    let llm_ms: u64 = setting("--llm-ms", "CAIRN_BENCH_LLM_MS", 300);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-rewrite-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn recall with the query rewrite: {obs} observations, {runs} runs, slow LLM {llm_ms} ms; load {}",
        load()
    );
    run(Command::new(CAIRN).arg("init").arg(&repo), "init");
    let file = work.path().join("observations.jsonl");
    let mut lines = String::new();
    for k in 0..obs {
        let line = serde_json::json!({
            "observation": format!(
                "Service {} needs {} before its deploy step; seen in run {k} on host build-{}",
                ["billing", "search", "auth", "mail", "queue", "web", "cron"][k % 7],
                ["a warm cache", "the VPN", "root", "a clean tree", "the staging key"][k % 5],
                k % 13
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

    let delay = Arc::new(AtomicU64::new(0));
    let url = serve(delay.clone());
    let toml = std::fs::read_to_string(repo.join("cairn.toml")).expect("cairn.toml");
    let toml = toml.replacen(
        "provider = \"\"\nbase_url = \"\"\nmodel = \"\"",
        &format!("provider = \"ollama\"\nbase_url = \"{url}\"\nmodel = \"bench\""),
        1,
    );
    std::fs::write(repo.join("cairn.toml"), toml).expect("write cairn.toml");
    let args = ["--json", "recall", "--profile", "balanced", QUERY];
    // The index is built by the first recall; check each variant does what it says.
    for (echo, want) in [(0, "used"), (1, "same")] {
        ECHO.store(echo, Ordering::SeqCst);
        let out = run(&mut cairn(&repo, &args), "recall");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(v["data"]["rewrite"]["status"], want, "{v}");
    }

    let recall = |extra: &[&str], llm: u64, echo: u64| {
        delay.store(llm, Ordering::SeqCst);
        ECHO.store(echo, Ordering::SeqCst);
        let mut a: Vec<&str> = args.to_vec();
        a.extend_from_slice(extra);
        median(runs, || timed(&mut cairn(&repo, &a)))
    };
    let plain = recall(&["--no-rewrite"], 0, 0);
    let instant = recall(&[], 0, 0);
    let slow = recall(&[], llm_ms, 0);
    let same = recall(&[], 0, 1);
    let word = QUERY.split_whitespace().nth(1).unwrap_or("hosts");
    // ripgrep where installed, else grep: a scan of the same files for one word.
    let scanner = if Command::new("rg").arg("--version").output().is_ok() {
        "rg"
    } else {
        "grep"
    };
    let rg = median(runs, || {
        let mut c = Command::new(scanner);
        if scanner == "grep" {
            c.arg("-r");
        }
        timed(c.args(["-c", "-i", word]).arg(repo.join("vault")))
    });
    let scan_name = format!("{scanner} -c -i WORD vault/ (reference)");
    println!();
    println!("{:<60} {:>9}", "run (whole process)", "median");
    let slow_name = format!("recall, LLM answers after {llm_ms} ms");
    for (name, t) in [
        ("recall --profile balanced --no-rewrite", plain),
        (
            "recall, LLM answers at once (a second search, fused)",
            instant,
        ),
        (slow_name.as_str(), slow),
        ("recall, LLM gives the query back (no second search)", same),
        (scan_name.as_str(), rg),
    ] {
        println!("{name:<60} {:>6.1} ms", ms(t));
    }
}

/// A mock Ollama `/api/chat` on a free port, answering each request on its own thread after
/// `delay` ms; its base URL.
fn serve(delay: Arc<AtomicU64>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let delay = delay.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let request: serde_json::Value = serde_json::from_slice(&body).expect("json");
                let query = request["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_start_matches("Query: ")
                    .to_string();
                let text = match ECHO.load(Ordering::SeqCst) {
                    1 => format!("<query>{query}</query>"),
                    _ => format!("<query>{query} superuser privileges payments</query>"),
                };
                std::thread::sleep(Duration::from_millis(delay.load(Ordering::SeqCst)));
                let reply = serde_json::json!({
                    "model": "bench", "message": {"role": "assistant", "content": text},
                    "done_reason": "stop", "done": true, "prompt_eval_count": 80, "eval_count": 12
                })
                .to_string();
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            });
        }
    });
    url
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(CAIRN);
    c.current_dir(repo).args(args);
    c
}

fn run(cmd: &mut Command, what: &str) -> Vec<u8> {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn timed(cmd: &mut Command) -> Duration {
    let started = Instant::now();
    let out = cmd.output().expect("run");
    let elapsed = started.elapsed();
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}
