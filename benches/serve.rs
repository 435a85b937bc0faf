//! The console under load: search requests through `cairn serve` at 100,000 records, and the
//! page of a turn in a 1,000-turn session.
//!
//! Run with `scripts/bench-serve` (or `cargo bench --bench serve -- [--records N] [--requests
//! N] [--runs N]`; `CAIRN_BENCH_RECORDS`, `CAIRN_BENCH_REQUESTS`, `CAIRN_BENCH_RUNS` set the
//! defaults). The bench
//!
//! 1. writes a repository directly: `--records` records (100,000 by default; 70 % observations,
//!    30 % slog entries over 30 day files) and one session of 1,000 turn cards; commits them
//!    and runs `cairn index` once (outside the timing);
//! 2. starts `cairn serve --port 0` and times, on the client, `--requests` sequential
//!    `GET /api/search?q=…` (a rotating set of two-word queries), then the same from 4 clients
//!    at once: p50 and p99 of each request's wall time;
//! 3. beside them, the same search as a whole process (`cairn search … --json`, median over
//!    `--runs`) and `rg -c` (or `grep -c`) of one word over the same record files;
//! 4. times the page of turn 500 of the 1,000-turn session (`/turn?file=…&turn=500`), the
//!    JSON window of 50 turns from the end (`/api/session?from=951&to=1000`), p50 and p99,
//!    beside `rg -c` of the session file;
//! 5. the server's peak resident memory (its `VmHWM` at the end) beside `cairn search`'s as a
//!    process (GNU time). Target (issue 34): the 4 clients' p99 at most 25 ms at 100,000
//!    records.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::repo::{CAIRN, NOW, cairn, commit_all, init, searcher, write_records};
use common::{load, median, median_of, ms, setting};
const QUERIES: &[&str] = &[
    "deploy cache",
    "staging key",
    "vpn service",
    "rollout redis",
    "clean tree",
    "postgres restart",
    "warm cache host",
    "nfs configure",
];
const SESSION: &str = "vault/sessions/claude/bench-long.jsonl";

fn main() {
    let records = setting("--records", "CAIRN_BENCH_RECORDS", 100_000usize);
    let requests = setting("--requests", "CAIRN_BENCH_REQUESTS", 400usize);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 9usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-serve-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn serve bench: {records} records (70 % observations, 30 % slog) + a 1,000-turn \
         session, {requests} requests, {runs} process runs; load {}",
        load()
    );
    init(&repo);
    write_records(&repo, records, None);
    write_session(&repo, 1000);
    commit_all(&repo, "bench records");
    let t = Instant::now();
    let out = cairn(&repo, &["index"]).output().expect("cairn index");
    assert!(out.status.success(), "cairn index");
    println!("  setup: cairn index once: {:.0} ms", ms(t.elapsed()));

    let config = work.path().join("config");
    let mut server = Command::new(CAIRN)
        .args(["--repo"])
        .arg(&repo)
        .args(["serve", "--port", "0"])
        .env("CAIRN_NOW", NOW)
        .env("CAIRN_CONFIG_DIR", &config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start cairn serve");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the URL line");
    let base = line.trim().trim_end_matches('/').to_string();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let get = |client: &reqwest::blocking::Client, path: &str| -> Duration {
        let t = Instant::now();
        let r = client.get(format!("{base}{path}")).send().expect("request");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        let body = r.bytes().expect("body");
        assert!(!body.is_empty());
        t.elapsed()
    };
    // The first request brings the index up to date, as the first command would.
    get(&client, "/api/search?q=warm+up");

    let mut sequential: Vec<Duration> = (0..requests)
        .map(|i| {
            let q = QUERIES[i % QUERIES.len()].replace(' ', "+");
            get(&client, &format!("/api/search?q={q}"))
        })
        .collect();
    let clients = 4;
    let mut concurrent: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let client = client.clone();
                let get = &get;
                s.spawn(move || {
                    (0..requests / clients)
                        .map(|i| {
                            let q = QUERIES[(i + c) % QUERIES.len()].replace(' ', "+");
                            get(&client, &format!("/api/search?q={q}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client thread"))
            .collect()
    });
    let process = median_of(runs, || {
        let t = Instant::now();
        let out = cairn(&repo, &["--json", "search", "deploy", "cache"])
            .output()
            .expect("cairn search");
        assert!(out.status.success(), "cairn search");
        t.elapsed()
    });
    let search = searcher();
    let reference = median_of(runs, || {
        let t = Instant::now();
        let mut cmd = Command::new(search);
        if search != "rg" {
            cmd.arg("-r");
        }
        let out = cmd
            .args(["-c", "cache"])
            .arg(repo.join("vault/observations"))
            .arg(repo.join("slog"))
            .stderr(Stdio::null())
            .output()
            .expect("search");
        assert!(!out.stdout.is_empty(), "the reference finds the word");
        t.elapsed()
    });

    let file = SESSION.replace('/', "%2F");
    let mut page: Vec<Duration> = (0..runs * 5)
        .map(|_| get(&client, &format!("/turn?file={file}&turn=500")))
        .collect();
    let mut window: Vec<Duration> = (0..runs * 5)
        .map(|_| {
            get(
                &client,
                &format!("/api/session?file={file}&from=951&to=1000"),
            )
        })
        .collect();
    let session_rg = median_of(runs, || {
        let t = Instant::now();
        let out = Command::new(search)
            .args(["-c", "\"type\":\"card\""])
            .arg(repo.join(SESSION))
            .output()
            .expect("search");
        assert!(!out.stdout.is_empty());
        t.elapsed()
    });
    let server_rss = common::rss::high_water_mib(server.id());
    let process_rss = common::rss::peak_mib(
        &cairn(&repo, &["--json", "search", "deploy", "cache"]),
        None,
    );
    let _ = server.kill();
    let _ = server.wait();

    let (s50, s99) = percentiles(&mut sequential);
    let (c50, c99) = percentiles(&mut concurrent);
    let (p50, p99) = percentiles(&mut page);
    let (w50, w99) = percentiles(&mut window);
    println!(
        "  GET /api/search, one client ({requests}):      p50 {s50:>7.1} ms   p99 {s99:>7.1} ms"
    );
    println!(
        "  GET /api/search, {clients} clients ({}):        p50 {c50:>7.1} ms   p99 {c99:>7.1} ms   target p99 <= 25 ms {}",
        concurrent.len(),
        if c99 <= 25.0 { "met" } else { "MISSED" }
    );
    println!(
        "  cairn search --json (whole process):       median {:>7.1} ms",
        ms(process)
    );
    println!(
        "  {search} -c WORD over the same record files:    median {:>7.1} ms",
        ms(reference)
    );
    println!("  GET /turn (turn 500 of 1,000):             p50 {p50:>7.1} ms   p99 {p99:>7.1} ms");
    println!("  GET /api/session (turns 951-1000):         p50 {w50:>7.1} ms   p99 {w99:>7.1} ms");
    println!(
        "  {search} -c over the session file:               median {:>7.1} ms",
        ms(session_rg)
    );
    println!(
        "  peak RSS: cairn serve {server_rss:>7.1} MiB   cairn search process {process_rss:>7.1} MiB"
    );
}

/// p50 and p99 in milliseconds.
fn percentiles(ts: &mut [Duration]) -> (f64, f64) {
    let p50 = ms(median(ts));
    let i = ((ts.len() as f64 * 0.99).ceil() as usize).clamp(1, ts.len()) - 1;
    (p50, ms(ts[i]))
}

/// A session of `turns` cards, as `cairn sessions ingest` renders them.
fn write_session(repo: &Path, turns: usize) {
    use cairn::cards::{Card, CommandRun, Record, card_id, line};
    let mut text = String::new();
    for i in 0..turns {
        let card = Card {
            id: card_id("claude", "bench-long", i),
            agent: "claude".into(),
            session: "bench-long".into(),
            turn: i + 1,
            ts: format!("2026-11-{:02}T10:{:02}:00Z", i / 60 % 28 + 1, i % 60),
            duration_ms: Some(30_000),
            outcome: "completed".into(),
            prompt: format!(
                "step {i}: make the deploy of service {} use the warm cache",
                i % 97
            ),
            files: vec![format!("src/service_{}.rs", i % 97)],
            commands: vec![CommandRun {
                command: format!("cargo test -p service-{}", i % 97),
                exit: Some(if i % 10 == 0 { 101 } else { 0 }),
                output: String::new(),
            }],
            errors: vec![],
            answer: "Done: the deploy step now reads the cache before it builds.".into(),
            trivial: false,
            project: Some("bench".into()),
        };
        text.push_str(&line(&Record::Card(card)));
        text.push('\n');
    }
    let path = repo.join(SESSION);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("sessions folder");
    std::fs::write(path, text).expect("write session");
}
