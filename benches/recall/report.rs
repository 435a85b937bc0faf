//! The report: the table of every size's figures and the verdict on each target.

use std::fmt::Write as _;
use std::fs::{self};
use std::path::Path;
use std::time::Duration;

use super::process::BenchEnv;
use super::size::SizeResult;
use super::{
    CAIRN, QUERIES, Setup, TARGET_BUILD_100K, TARGET_GROWTH_1M, TARGET_HYBRID_1M,
    TARGET_HYBRID_OVER_WORDS, TARGET_RSS_100K_MB, TARGET_WORDS_100K,
};

pub(super) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn dur(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MB", k as f64 / 1024.0))
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

pub(super) fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

/// The 1-minute load average, where Linux tells it.
pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "n/a".into())
}

pub(super) fn print_report(
    env: &BenchEnv,
    setup: &Setup,
    results: &[SizeResult],
    total: Duration,
    load: &str,
) {
    let scanner = env.scanner.short();
    let mut o = String::new();
    let _ = writeln!(o, "\ncairn recall benchmark");
    let _ = writeln!(
        o,
        "  {} CPUs; {} timed runs per recall/{scanner} cell ({} queries rotated, after one warm-up run each); \
         whole-process wall time",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        setup.runs,
        QUERIES.len()
    );
    let _ = writeln!(
        o,
        "  queries: {}",
        QUERIES
            .iter()
            .map(|q| format!("\"{q}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(o, "  reference: {}", env.scanner.describe());
    let _ = writeln!(o, "  peak memory: {}", env.rss.describe());
    let _ = writeln!(
        o,
        "  total bench time {:.0} s; 1-minute load average {load}\n",
        total.as_secs_f64()
    );

    let _ = writeln!(o, "Repositories (one commit each; files written directly):");
    let _ = writeln!(
        o,
        "  {:>9}  {:>9} {:>7} {:>5} {:>4}  {:>11}  {:>8}  {:>6}  {:>7}  {:>8}",
        "records",
        "observ.",
        "slog",
        "ADRs",
        "mem",
        "files o/s",
        "data",
        "B/obs",
        "index",
        "indexed"
    );
    for r in results {
        let b = &r.built;
        let _ = writeln!(
            o,
            "  {:>9}  {:>9} {:>7} {:>5} {:>4}  {:>11}  {:>5} MB  {:>6}  {:>4} MB  {:>8}",
            thousands(r.size as u64),
            thousands(b.observations as u64),
            thousands(b.slog as u64),
            b.adrs,
            b.memory,
            format!("{} / {}", b.obs_files, b.slog_files),
            format!("{:.0}", b.data_bytes as f64 / 1e6),
            b.obs_bytes / b.observations.max(1) as u64,
            format!("{:.0}", r.index_bytes as f64 / 1e6),
            thousands(r.documents),
        );
    }

    let _ = writeln!(
        o,
        "\nTimes (median; p90 in brackets; in-process = cairn's own recorded duration_ms; recall = `--mode words`, the path the targets below were set for; recall RSS = the default mode, hybrid):"
    );
    let _ = writeln!(
        o,
        "  {:>9}  {:>20}  {:>9}  {:>20}  {:>10}  {:>9}  {:>20}  {:>18}  {:>9}",
        "records",
        "first build",
        "build RSS",
        "recall",
        "in-process",
        "recall RSS",
        "recall after append",
        format!("{scanner} -i -c"),
        "recall/rg"
    );
    for r in results {
        let _ = writeln!(
            o,
            "  {:>9}  {:>20}  {:>9}  {:>20}  {:>10}  {:>10}  {:>20}  {:>18}  {:>9}",
            thousands(r.size as u64),
            format!("{} (n={})", dur(r.build.median), r.build.n),
            mib(r.build_rss),
            format!("{} [{}]", dur(r.recall.median), dur(r.recall.p90)),
            r.recall_inproc.map_or("n/a".into(), dur),
            mib(r.recall_rss),
            format!(
                "{} (in-proc {})",
                dur(r.appended.median),
                r.appended_inproc.map_or("n/a".into(), dur)
            ),
            format!("{} [{}]", dur(r.scan.median), dur(r.scan.p90)),
            format!("{:.2}x", ratio(r.recall.median, r.scan.median)),
        );
    }
    let _ = writeln!(
        o,
        "\nWords only vs hybrid (the default: BM25, soft word matches and built-in vectors fused), alternating runs, median [p90]:"
    );
    for r in results {
        let (w, h) = &r.modes;
        let _ = writeln!(
            o,
            "  {:>9}  --mode words {} [{}]   --mode hybrid {} [{}]   hybrid/words {:.2}x (target <= 1.2x)",
            thousands(r.size as u64),
            dur(w.median),
            dur(w.p90),
            dur(h.median),
            dur(h.p90),
            ratio(h.median, w.median)
        );
    }
    for r in results {
        let _ = writeln!(
            o,
            "  {:>9}  recall min/max {} / {}; {scanner} min/max {} / {}; build min/max {} / {}",
            thousands(r.size as u64),
            dur(r.recall.min),
            dur(r.recall.max),
            dur(r.scan.min),
            dur(r.scan.max),
            dur(r.build.min),
            dur(r.build.max)
        );
        if !r.empty_queries.is_empty() {
            let _ = writeln!(
                o,
                "  {:>9}  queries that recalled nothing: {:?}",
                "", r.empty_queries
            );
        }
    }
    let new_day: Vec<String> = results
        .iter()
        .filter_map(|r| {
            r.new_day.map(|(t, files)| {
                format!(
                    "{}: {} ({} files reindexed)",
                    thousands(r.size as u64),
                    dur(t),
                    files
                )
            })
        })
        .collect();
    if !new_day.is_empty() {
        let _ = writeln!(
            o,
            "  recall after the first observation of a new day (a day file the index has not seen; 1 run): {}",
            new_day.join("; ")
        );
    }

    let at = |size: usize| results.iter().find(|r| r.size == size);
    let (r100k, r1m) = (at(100_000), at(1_000_000));
    if let (Some(a), Some(b)) = (r100k, r1m) {
        let _ = writeln!(
            o,
            "\n  recall(1M)/recall(100k) = {:.2}x   (recall after append: {:.2}x; {scanner}: {:.2}x; first build: {:.2}x)",
            ratio(b.recall.median, a.recall.median),
            ratio(b.appended.median, a.appended.median),
            ratio(b.scan.median, a.scan.median),
            ratio(b.build.median, a.build.median)
        );
    }

    let _ = writeln!(
        o,
        "\nEmbedding with the built-in model (in this process, one thread; the index build spreads it over every core):"
    );
    for r in results {
        if let Some((n, bytes, all, one)) = r.embedding {
            let _ = writeln!(
                o,
                "  {:>9}  {} observation texts ({bytes} B mean) in {} ({}; target < 5 s at 100,000)   one query {:.1} µs (target < 1 ms)",
                thousands(r.size as u64),
                thousands(n as u64),
                dur(all),
                verdict(n < 100_000 || all < Duration::from_secs(5)),
                one.as_secs_f64() * 1e6
            );
        }
    }
    let model: u64 = ["table.i8", "scales.f32", "vocab.txt"]
        .iter()
        .filter_map(|f| {
            fs::metadata(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("model/potion-base-8M")
                    .join(f),
            )
            .ok()
        })
        .map(|m| m.len())
        .sum();
    let binary = fs::metadata(CAIRN).map(|m| m.len()).unwrap_or(0);
    let _ = writeln!(
        o,
        "  binary {:.1} MB, of which the model (int8 table, scales, vocabulary) {:.2} MB",
        binary as f64 / 1e6,
        model as f64 / 1e6
    );
    let _ = writeln!(o, "\nTargets (from the issue):");
    match r100k {
        Some(r) => {
            let _ = writeln!(
                o,
                "  [{}] 100k: first index build under 3 s: {}",
                verdict(r.build.median < TARGET_BUILD_100K),
                dur(r.build.median)
            );
            let _ = writeln!(
                o,
                "  [{}] 100k: recall no slower than {scanner} over the same files: {} vs {} ({:.2}x)",
                verdict(r.recall.median <= r.scan.median),
                dur(r.recall.median),
                dur(r.scan.median),
                ratio(r.recall.median, r.scan.median)
            );
            let (words, hybrid) = &r.modes;
            let _ = writeln!(
                o,
                "  [{}] 100k: --mode words within 10 ms: {}",
                verdict(words.median <= TARGET_WORDS_100K),
                dur(words.median)
            );
            // The words: "<= 10 ms in words mode and <= 1.2x that in hybrid". Read
            // strictly, against the words time measured in the same go; read literally, 1.2x
            // the 10 ms target. Both are printed; the strict one is the one held to.
            let _ = writeln!(
                o,
                "  [{}] 100k: hybrid within 1.2x of words: {} ({:.2}x)",
                verdict(ratio(hybrid.median, words.median) <= TARGET_HYBRID_OVER_WORDS),
                dur(hybrid.median),
                ratio(hybrid.median, words.median)
            );
            let _ = writeln!(
                o,
                "  [{}] 100k: hybrid within 1.2x the words target (12 ms): {}",
                verdict(
                    hybrid.median.as_secs_f64()
                        <= TARGET_HYBRID_OVER_WORDS * TARGET_WORDS_100K.as_secs_f64()
                ),
                dur(hybrid.median)
            );
            match r.recall_rss {
                Some(k) => {
                    let _ = writeln!(
                        o,
                        "  [{}] 100k: recall peak memory under 60 MB: {}",
                        verdict((k as f64 / 1024.0) < TARGET_RSS_100K_MB),
                        mib(Some(k))
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        "  [n/a ] 100k: recall peak memory under 60 MB: not measurable here"
                    );
                }
            }
        }
        None => {
            let _ = writeln!(o, "  [----] 100k targets: 100,000 records not in this run");
        }
    }
    match (r100k, r1m) {
        (Some(a), Some(b)) => {
            let _ = writeln!(
                o,
                "  [{}] 1M: hybrid within 25 ms: {}",
                verdict(b.modes.1.median <= TARGET_HYBRID_1M),
                dur(b.modes.1.median)
            );
            let g = ratio(b.recall.median, a.recall.median);
            let _ = writeln!(
                o,
                "  [{}] 1M: recall within 2x of 100k: {} vs {} ({g:.2}x)",
                verdict(g <= TARGET_GROWTH_1M),
                dur(b.recall.median),
                dur(a.recall.median)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "  [----] 1M target: needs both 100,000 and 1,000,000 records in the run"
            );
        }
    }
    print!("{o}");
}
