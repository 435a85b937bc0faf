//! The MCP server against a process per command: what an agent pays for a session of calls.
//!
//! Run with `scripts/bench-mcp` (or `cargo bench --bench mcp -- [--calls N] [--obs N]
//! [--runs N]`; `CAIRN_BENCH_CALLS`, `CAIRN_BENCH_OBS` and `CAIRN_BENCH_RUNS` set the
//! defaults; `cargo test --bench mcp -- --runs 3` runs it on the debug build). The bench
//!
//! 1. makes a repository with `--obs` observations imported (2,000 by default) and a few slog
//!    entries;
//! 2. times, whole process, median of `--runs`: `cairn mcp` started, initialized and closed;
//!    one session of `--calls` `recall` calls (20 by default) against as many
//!    `cairn recall --json` processes; one session of `--calls` `slog` writes (each a commit)
//!    against as many `cairn slog --json` processes; beside `git status` and as many
//!    `git commit --allow-empty` in the same repository;
//! 3. the steady state of one session (issue 34): after a first recall (which opens the
//!    index the server keeps), each of `--calls` recall calls timed on the client, p50 and
//!    p99, against a `cairn recall --json` process at the same size; the server's peak
//!    resident memory (its `VmHWM`) against the process's (GNU time).
//!
//! The client is a line exchange of JSON-RPC on the server's stdin and stdout (the tests use
//! rmcp's client; here only the server's time is wanted).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{load, median_of as median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T12:00:00Z";

const WORDS: [&str; 12] = [
    "nfs", "caddy", "redis", "deploy", "backup", "tokio", "tantivy", "certs", "staging",
    "postgres", "nightly", "snapshot",
];

fn main() {
    let calls = setting("--calls", "CAIRN_BENCH_CALLS", 20);
    let obs = setting("--obs", "CAIRN_BENCH_OBS", 2000);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 5);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-mcp-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn mcp bench: {calls} calls a session, {obs} observations, {runs} runs; load {}",
        load()
    );
    run(Command::new(CAIRN).arg("init").arg(&repo), "init");
    let file = work.path().join("obs.jsonl");
    let mut lines = String::new();
    for n in 0..obs {
        let (a, b) = (WORDS[n % WORDS.len()], WORDS[(n * 7 + 3) % WORDS.len()]);
        lines.push_str(&format!(
            "{{\"observation\":\"observation {n}: the {a} host needs {b} checked before a release\",\"timestamp\":\"2026-11-{:02}T10:00:00Z\"}}\n",
            1 + n % 28
        ));
    }
    std::fs::write(&file, lines).expect("write observations");
    run(
        cairn(&repo, &["import", "observations", "--raw"]).arg(&file),
        "import",
    );
    for w in &WORDS[..4] {
        run(
            &mut cairn(&repo, &["slog", "deploy", w, "rolled out"]),
            "slog",
        );
    }
    // The index is built once before anything is timed.
    run(&mut cairn(&repo, &["recall", "warm", "--json"]), "recall");

    let idle = median(runs, || {
        let start = Instant::now();
        Session::start(&repo).close();
        start.elapsed()
    });
    let status = median(runs, || {
        timed(git_command(&repo, &["status"]), "git status")
    });
    println!(
        "  cairn mcp start, initialize, close   {:>8.1} ms   git status {:>6.1} ms",
        ms(idle),
        ms(status)
    );

    let recall_mcp = median(runs, || {
        let start = Instant::now();
        let mut s = Session::start(&repo);
        for n in 0..calls {
            let query = WORDS[n % WORDS.len()];
            s.call("recall", &format!("{{\"query\":\"{query}\"}}"));
        }
        s.close();
        start.elapsed()
    });
    let recall_cli = median(runs, || {
        let start = Instant::now();
        for n in 0..calls {
            let query = WORDS[n % WORDS.len()];
            run(&mut cairn(&repo, &["recall", query, "--json"]), "recall");
        }
        start.elapsed()
    });
    println!(
        "  {calls} recalls: one MCP session      {:>8.1} ms   {calls} processes {:>8.1} ms   ({:.1} vs {:.1} ms a call)",
        ms(recall_mcp),
        ms(recall_cli),
        ms(recall_mcp) / calls as f64,
        ms(recall_cli) / calls as f64
    );

    let slog_mcp = median(runs, || {
        let start = Instant::now();
        let mut s = Session::start(&repo);
        for n in 0..calls {
            s.call(
                "slog",
                &format!("{{\"action\":\"check\",\"tool\":\"bench\",\"detail\":\"mcp {n}\"}}"),
            );
        }
        s.close();
        start.elapsed()
    });
    let slog_cli = median(runs, || {
        let start = Instant::now();
        for n in 0..calls {
            let detail = format!("cli {n}");
            run(
                &mut cairn(&repo, &["slog", "check", "bench", &detail, "--json"]),
                "slog",
            );
        }
        start.elapsed()
    });
    let commits = median(runs, || {
        let start = Instant::now();
        for _ in 0..calls {
            run(
                &mut git_command(&repo, &["commit", "-q", "--allow-empty", "-m", "bench"]),
                "git commit",
            );
        }
        start.elapsed()
    });
    println!(
        "  {calls} slog writes: one MCP session  {:>8.1} ms   {calls} processes {:>8.1} ms   {calls} git commits {:>8.1} ms",
        ms(slog_mcp),
        ms(slog_cli),
        ms(commits)
    );

    // The steady state: every call of a session after its first, each timed.
    let mut per_call = Vec::new();
    let mut server_rss = Vec::new();
    for _ in 0..runs {
        let mut s = Session::start(&repo);
        s.call("recall", r#"{"query":"warm"}"#);
        for n in 0..calls {
            let query = WORDS[n % WORDS.len()];
            let start = Instant::now();
            s.call("recall", &format!("{{\"query\":\"{query}\"}}"));
            per_call.push(start.elapsed());
        }
        server_rss.push(common::rss::high_water_mib(s.child.id()));
        s.close();
    }
    let mut one_cli: Vec<Duration> = (0..runs.max(5))
        .map(|n| {
            let query = WORDS[n % WORDS.len()];
            timed(cairn(&repo, &["recall", query, "--json"]), "recall")
        })
        .collect();
    let cli_rss = common::rss::peak_mib(&cairn(&repo, &["recall", "redis", "--json"]), None);
    let cli = ms(common::median(&mut one_cli));
    per_call.sort();
    let p = |q: f64| ms(per_call[((per_call.len() - 1) as f64 * q).round() as usize]);
    let (p50, p99) = (p(0.5), p(0.99));
    server_rss.sort_by(f64::total_cmp);
    println!(
        "  recall call, steady state ({} calls)  p50 {p50:>6.1} ms   p99 {p99:>6.1} ms   target p50 <= 5 ms {}   cairn recall process median {:>6.1} ms ({:.2}x)",
        per_call.len(),
        if p50 <= 5.0 { "met" } else { "MISSED" },
        cli,
        p50 / cli,
    );
    println!(
        "  peak RSS: cairn mcp after {} recalls {:>6.1} MiB   cairn recall process {:>6.1} MiB",
        calls + 1,
        server_rss[server_rss.len() / 2],
        cli_rss
    );
}

/// A `cairn mcp` child spoken to in JSON-RPC lines.
struct Session {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(repo: &Path) -> Session {
        let mut child = cairn(repo, &["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start cairn mcp");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Session {
            child,
            out,
            next_id: 0,
        };
        s.request(
            "initialize",
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#,
        );
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write to cairn mcp");
    }

    /// Sends a request and reads lines until its answer, which must not be an error.
    fn request(&mut self, method: &str, params: &str) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ));
        loop {
            let mut line = String::new();
            let n = self.out.read_line(&mut line).expect("read from cairn mcp");
            assert!(n > 0, "cairn mcp closed its stdout during {method}");
            let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, args: &str) {
        let v = self.request(
            "tools/call",
            &format!(r#"{{"name":"{tool}","arguments":{args}}}"#),
        );
        assert_eq!(v["result"]["isError"], false, "{tool}: {v}");
    }

    fn close(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().expect("cairn mcp exits");
        assert!(status.success(), "cairn mcp exited with {status}");
    }
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(CAIRN);
    cmd.current_dir(repo)
        .args(["--now", NOW])
        .args(args)
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com");
    cmd
}

fn git_command(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args);
    cmd
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect(what);
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn timed(mut cmd: Command, what: &str) -> Duration {
    let start = Instant::now();
    run(&mut cmd, what);
    start.elapsed()
}
