//! One size: its repository built and indexed, recall timed in each mode, after an append and
//! on a new day, the scan beside it, and the embedding rate.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use super::build::build_repo;
use super::dates::{civil_from_days, days_from_civil, utc_ms_of_day, utc_today};
use super::process::{BenchEnv, RssTool, json_of, timed};
use super::report::thousands;
use super::text::{Rng, Vocab, mix};
use super::{APPEND_RUNS, BUILD_ONCE_FROM, BUILD_RUNS, QUERIES, RSS_RUNS, die};

#[derive(Clone, Copy)]
pub(super) struct Stats {
    pub(super) median: Duration,
    pub(super) p90: Duration,
    pub(super) min: Duration,
    pub(super) max: Duration,
    pub(super) n: usize,
}

impl Stats {
    pub(super) fn of(mut times: Vec<Duration>) -> Stats {
        assert!(!times.is_empty());
        times.sort();
        let n = times.len();
        let median = if n % 2 == 1 {
            times[n / 2]
        } else {
            (times[n / 2 - 1] + times[n / 2]) / 2
        };
        // Nearest rank.
        let p90 = times[(n * 9).div_ceil(10).max(1) - 1];
        Stats {
            median,
            p90,
            min: times[0],
            max: times[n - 1],
            n,
        }
    }
}

pub(super) struct Built {
    pub(super) observations: usize,
    pub(super) slog: usize,
    pub(super) adrs: usize,
    pub(super) memory: usize,
    pub(super) obs_files: usize,
    pub(super) slog_files: usize,
    pub(super) obs_bytes: u64,
    pub(super) data_bytes: u64,
    pub(super) generate: Duration,
    pub(super) commit: Duration,
}

pub(super) struct SizeResult {
    pub(super) size: usize,
    pub(super) built: Built,
    pub(super) documents: u64,
    pub(super) index_bytes: u64,
    pub(super) build: Stats,
    pub(super) build_rss: Option<u64>,
    pub(super) recall: Stats,
    pub(super) recall_inproc: Option<Duration>,
    pub(super) recall_rss: Option<u64>,
    pub(super) empty_queries: Vec<&'static str>,
    pub(super) appended: Stats,
    pub(super) appended_inproc: Option<Duration>,
    pub(super) scan: Stats,
    pub(super) new_day: Option<(Duration, u64)>,
    /// `recall --mode words` and `--mode hybrid`, run alternately.
    pub(super) modes: (Stats, Stats),
    /// The built-in model in this process: (texts, their mean bytes, time to embed them all,
    /// one query's embedding); up to 100,000 records.
    pub(super) embedding: Option<(usize, usize, Duration, Duration)>,
}

pub(super) fn bench_size(
    env: &BenchEnv,
    vocab: &Vocab,
    dir: &Path,
    size: usize,
    runs: usize,
    new_day: bool,
) -> SizeResult {
    let label = thousands(size as u64);
    eprintln!("recall-bench: {label} records: building the repository …");
    let built = build_repo(env, vocab, dir, size);
    eprintln!(
        "recall-bench: {label} records: {} observations in {} files, {} slog entries, {} ADRs, {} MEMORY.md entries; \
         {:.0} MB written in {:.1} s, committed in {:.1} s",
        built.observations,
        built.obs_files,
        built.slog,
        built.adrs,
        built.memory,
        built.data_bytes as f64 / 1e6,
        built.generate.as_secs_f64(),
        built.commit.as_secs_f64()
    );

    // 1. The first build.
    let index_dir = dir.join(".cairn").join("index");
    let build_runs = if size >= BUILD_ONCE_FROM {
        1
    } else {
        BUILD_RUNS
    };
    let mut build_times = Vec::new();
    let mut build_rss: Option<u64> = None;
    let mut documents = 0;
    for i in 0..build_runs {
        eprintln!(
            "recall-bench: {label} records: first index build {}/{build_runs} …",
            i + 1
        );
        if index_dir.exists() {
            fs::remove_dir_all(&index_dir)
                .unwrap_or_else(|e| die(format!("cannot remove {}: {e}", index_dir.display())));
        }
        // Timed under /usr/bin/time only (its overhead is well under a millisecond); the
        // python wrapper's start-up would show in the time, so it is not used here.
        let cmd = env.cairn(dir, &["--json", "index"]);
        let (took, out, kib) = if matches!(env.rss, RssTool::GnuTime) {
            env.run_rss(cmd, &[0], "cairn index")
        } else {
            let mut cmd = cmd;
            let (t, o) = timed(&mut cmd, &[0], "cairn index");
            (t, o, None)
        };
        let json = json_of(&out, "cairn --json index");
        if json
            .pointer("/data/refresh/rebuilt")
            .and_then(|v| v.as_bool())
            != Some(true)
        {
            die(format!("cairn index did not build from nothing: {json}"));
        }
        documents = json
            .pointer("/data/documents")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        build_times.push(took);
        build_rss = build_rss.max(kib);
        eprintln!(
            "recall-bench:   {:.2} s, {documents} documents",
            took.as_secs_f64()
        );
    }
    if documents != size as u64 {
        eprintln!(
            "recall-bench: warning: the index holds {documents} documents, the repository {size} records"
        );
    }
    let index_bytes = dir_size(&index_dir);

    // 2. Recall, warm: one warm-up run of each query, then the timed runs.
    eprintln!(
        "recall-bench: {label} records: recall ({} warm-up + {runs} runs) …",
        QUERIES.len()
    );
    let mut empty_queries = Vec::new();
    for q in QUERIES {
        let out = recall(env, dir, q).1;
        let json = json_of(&out, "cairn --json recall");
        let n = json
            .pointer("/data/results")
            .and_then(|r| r.as_array())
            .map_or(0, Vec::len);
        if n == 0 {
            empty_queries.push(*q);
        }
        let added = json
            .pointer("/data/index/added")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        if added > 0 {
            eprintln!(
                "recall-bench: warning: recall `{q}` added {added} documents to a built index"
            );
        }
    }
    let before = telemetry_durations(dir).len();
    let times: Vec<Duration> = (0..runs)
        .map(|i| recall(env, dir, QUERIES[i % QUERIES.len()]).0)
        .collect();
    let recall_inproc = median_ms(&telemetry_durations(dir)[before..]);
    let recall_stats = Stats::of(times);
    let mut recall_rss = None;
    for i in 0..RSS_RUNS {
        let cmd = env.cairn(dir, &["--json", "recall", QUERIES[i % QUERIES.len()]]);
        let (_, _, kib) = env.run_rss(cmd, &[0, 1], "cairn recall (memory)");
        recall_rss = recall_rss.max(kib);
    }

    // 2b. Words only against hybrid (BM25 and vectors fused), alternately, same queries.
    eprintln!("recall-bench: {label} records: --mode words vs --mode hybrid ({runs} runs each) …");
    let mut words_t = Vec::new();
    let mut hybrid_t = Vec::new();
    for q in QUERIES {
        recall_mode(env, dir, q, "hybrid");
    }
    for i in 0..runs {
        let q = QUERIES[i % QUERIES.len()];
        words_t.push(recall_mode(env, dir, q, "words").0);
        hybrid_t.push(recall_mode(env, dir, q, "hybrid").0);
    }
    let modes = (Stats::of(words_t), Stats::of(hybrid_t));
    let embedding = (size <= 100_000).then(|| embedding(dir, size));

    // 3. Recall right after one appended observation, each run appending first.
    eprintln!(
        "recall-bench: {label} records: recall after one appended observation ({APPEND_RUNS} runs) …"
    );
    let today = utc_today();
    let mut rng = Rng(0xa99e_9d00 ^ size as u64);
    let before = telemetry_durations(dir).len();
    let mut appended = Vec::new();
    for i in 0..APPEND_RUNS {
        let rel = format!("vault/observations/{today}.jsonl");
        append_observation(
            vocab,
            &mut rng,
            &dir.join(&rel),
            &today,
            0xa000_0000 + i as u64,
        );
        let (took, out) = recall(env, dir, QUERIES[i % QUERIES.len()]);
        let json = json_of(&out, "cairn --json recall");
        let (added, reindexed) = (
            json.pointer("/data/index/added")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
            json.pointer("/data/index/reindexed")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        );
        if added != 1 || reindexed != 0 {
            eprintln!(
                "recall-bench: warning: after one append the index added {added} documents and reindexed {reindexed} files"
            );
        }
        appended.push(took);
    }
    let appended_inproc = median_ms(&telemetry_durations(dir)[before..]);
    let appended_stats = Stats::of(appended);

    // 4. The scan of the same files.
    eprintln!(
        "recall-bench: {label} records: {} ({} warm-up + {runs} runs) …",
        env.scanner.short(),
        QUERIES.len()
    );
    let scan_once = |q: &str| {
        let mut cmd = env.scan(dir, q);
        timed(&mut cmd, &[0, 1], &format!("{} {q}", env.scanner.short())).0
    };
    for q in QUERIES {
        scan_once(q);
    }
    let scan = Stats::of(
        (0..runs)
            .map(|i| scan_once(QUERIES[i % QUERIES.len()]))
            .collect(),
    );

    // 5. The first observation of a new day: a day file the index has not seen.
    let new_day = new_day.then(|| {
        eprintln!(
            "recall-bench: {label} records: recall after the first observation of a new day …"
        );
        let tomorrow = civil_from_days(days_from_civil(&today) + 1);
        let path = dir.join(format!("vault/observations/{tomorrow}.jsonl"));
        append_observation(vocab, &mut rng, &path, &tomorrow, 0xb000_0000);
        let (took, out) = recall(env, dir, QUERIES[0]);
        let json = json_of(&out, "cairn --json recall");
        let reindexed = json
            .pointer("/data/index/reindexed")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        (took, reindexed)
    });

    SizeResult {
        size,
        built,
        documents,
        index_bytes,
        build: Stats::of(build_times),
        build_rss,
        recall: recall_stats,
        recall_inproc,
        recall_rss,
        empty_queries,
        appended: appended_stats,
        appended_inproc,
        scan,
        new_day,
        modes,
        embedding,
    }
}

/// Embeds `count` of the repository's observation texts (repeated if there are fewer) with the
/// built-in model in this process, on one thread, then one query 1,000 times: (texts, mean
/// bytes, all of them, one query).
pub(super) fn embedding(dir: &Path, count: usize) -> (usize, usize, Duration, Duration) {
    use cairn::embed::Embedder;
    eprintln!(
        "recall-bench: {} records: embedding the texts with the built-in model …",
        thousands(count as u64)
    );
    let mut texts = Vec::new();
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("vault/observations"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    for file in files {
        for line in fs::read_to_string(&file).unwrap_or_default().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
                && let Some(t) = v.get("observation").and_then(|t| t.as_str())
            {
                texts.push(t.to_string());
            }
        }
    }
    if texts.is_empty() {
        die("no observation texts to embed");
    }
    let refs: Vec<&str> = texts
        .iter()
        .cycle()
        .take(count)
        .map(String::as_str)
        .collect();
    let bytes = refs.iter().map(|t| t.len()).sum::<usize>() / refs.len().max(1);
    let model = cairn::embed::Builtin::load();
    let start = Instant::now();
    let vectors = model.embed(&refs);
    let all = start.elapsed();
    assert_eq!(vectors.len(), refs.len());
    let start = Instant::now();
    for i in 0..1000 {
        std::hint::black_box(model.embed(&[std::hint::black_box(QUERIES[i % QUERIES.len()])]));
    }
    (refs.len(), bytes, all, start.elapsed() / 1000)
}

fn recall_mode(env: &BenchEnv, dir: &Path, query: &str, mode: &str) -> (Duration, Output) {
    let mut args = vec!["--json", "recall", "--mode", mode];
    args.extend(query.split_whitespace());
    let mut cmd = env.cairn(dir, &args);
    timed(
        &mut cmd,
        &[0, 1],
        &format!("cairn --json recall --mode {mode} {query}"),
    )
}

pub(super) fn recall(env: &BenchEnv, dir: &Path, query: &str) -> (Duration, Output) {
    let mut args = vec!["--json", "recall", "--mode", "words"];
    args.extend(query.split_whitespace());
    let mut cmd = env.cairn(dir, &args);
    // Exit 1 is "found nothing", not a failure.
    timed(
        &mut cmd,
        &[0, 1],
        &format!("cairn --json recall --mode words {query}"),
    )
}

/// The in-process durations cairn recorded for its recalls (`.cairn/telemetry.jsonl`).
fn telemetry_durations(dir: &Path) -> Vec<u64> {
    let Ok(text) = fs::read_to_string(dir.join(".cairn/telemetry.jsonl")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("action").and_then(|a| a.as_str()) == Some("recall"))
        .filter_map(|v| v.get("duration_ms").and_then(|d| d.as_u64()))
        .collect()
}

fn median_ms(ms: &[u64]) -> Option<Duration> {
    if ms.is_empty() {
        return None;
    }
    Some(Stats::of(ms.iter().map(|&m| Duration::from_millis(m)).collect()).median)
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(read) = fs::read_dir(dir) else {
        return 0;
    };
    read.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn append_observation(vocab: &Vocab, rng: &mut Rng, path: &Path, day: &str, n: u64) {
    let mut line = String::new();
    let ms = utc_ms_of_day().min(86_399_999);
    let session = Some(format!("ses-{:012x}", mix(n) >> 16));
    vocab.observation_line(&mut line, rng, n, day, ms, session.as_deref());
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| die(format!("cannot open {}: {e}", path.display())));
    file.write_all(line.as_bytes())
        .unwrap_or_else(|e| die(format!("cannot append to {}: {e}", path.display())));
}
