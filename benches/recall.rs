//! Recall at scale: whole-process `cairn recall` on knowledge repositories of 10,000, 100,000
//! and 1,000,000 records, next to ripgrep scanning the same files for the same words.
//!
//! Run with `scripts/bench-recall` (or `cargo bench --bench recall -- [--runs N] [--sizes
//! 10000,100000]`; `CAIRN_BENCH_RUNS` and `CAIRN_BENCH_SIZES` set the defaults,
//! `CAIRN_BENCH_KEEP=1` keeps the repositories, `CAIRN_BENCH_NEW_DAY=0` skips the new-day
//! row). For each size the bench
//!
//! 1. builds a repository with `cairn init`, then writes its files directly and commits them
//!    with the git CLI in one commit: observations over two years (one file per day written,
//!    about 90% of the records), a year of slog (a tenth of the records, at most 70,000),
//!    300 ADRs as `cairn adr new` writes them and a MEMORY.md of 63 entries. The text comes
//!    from a small deterministic generator over word lists (a few thousand distinct words:
//!    tools, hosts, people, operations and everyday English), 15–60 words an observation;
//! 2. times the first index build, `cairn --repo R index` with no `.cairn/index` (median of
//!    3, or 1 run at 1,000,000 records), and its peak memory;
//! 3. times `cairn --repo R --json recall --mode words WORDS` (median over the timed runs, the
//!    queries rotated, after one warm-up run of each query), then `--mode words` against
//!    `--mode hybrid` (the default) in alternating runs, and the default's peak memory (max RSS of the
//!    child, from `/usr/bin/time -f %M` or python3's `getrusage(RUSAGE_CHILDREN)`);
//! 4. times one recall right after one observation was appended by hand to today's file
//!    (median of 10, each appending first);
//! 5. times `rg -i -c -e WORD…` (or `grep -r -i -c` without rg) over slog/,
//!    vault/observations/, decisions/ and MEMORY.md with the same words;
//! 6. (diagnostic) times one recall after the first observation of a new day, i.e. appended
//!    to a day file the index has not seen yet.
//!
//! The targets (issues 10 and 17): at 100,000 records the first build under 3 s, recall no
//! slower than ripgrep's scan of the same files, `--mode words` within 10 ms and hybrid within
//! 1.2x of it, peak memory under 60 MB; at 1,000,000 records hybrid within 25 ms and recall
//! within 2x its time at 100,000 (a scan grows 10x).

//!
//! The parts: `process` (the commands a run times, and their peak memory), `size` (one size's
//! runs), `build` (writing a repository), `text` (the generator and its word lists), `dates`
//! and `report`.

#[path = "recall/build.rs"]
mod build;
#[path = "recall/dates.rs"]
mod dates;
#[path = "recall/process.rs"]
mod process;
#[path = "recall/report.rs"]
mod report;
#[path = "recall/size.rs"]
mod size;
#[path = "recall/text.rs"]
mod text;

use std::fs::{self};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use process::BenchEnv;
use report::{load_average, print_report};
use size::bench_size;
use text::Vocab;

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const DEFAULT_SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];
const DEFAULT_RUNS: usize = 30;
/// Runs of the first index build: the median of 3, or 1 from this size up.
const BUILD_RUNS: usize = 3;
const BUILD_ONCE_FROM: usize = 1_000_000;
const APPEND_RUNS: usize = 10;
const RSS_RUNS: usize = 3;
const OBS_DAYS: i64 = 730;
const SLOG_DAYS: i64 = 365;
const SLOG_MAX: usize = 70_000;
const ADRS: usize = 300;
const MEMORY_PER_SECTION: usize = 9;
const MEMORY_SECTIONS: [&str; 7] = [
    "Preferences",
    "Rules and conventions",
    "System architecture",
    "Operations",
    "Memory system",
    "Projects",
    "People and relationships",
];
const MEMORY_ENTRIES: usize = MEMORY_PER_SECTION * MEMORY_SECTIONS.len();
const MIN_SIZE: usize = 2_000;

/// What an agent asks for, 1–3 words; rotated over the timed runs.
const QUERIES: &[&str] = &[
    "redis timeout",
    "postgres migration",
    "nfs mount root",
    "caddy certificate",
    "deploy rollback",
    "tabs",
    "backup retention",
    "grafana alert",
    "Melanie camping",
    "flaky test",
    "disk full",
    "release plan",
];

// The targets.
const TARGET_BUILD_100K: Duration = Duration::from_secs(3);
const TARGET_WORDS_100K: Duration = Duration::from_millis(10);
const TARGET_HYBRID_OVER_WORDS: f64 = 1.2;
const TARGET_HYBRID_1M: Duration = Duration::from_millis(25);
const TARGET_RSS_100K_MB: f64 = 60.0;
const TARGET_GROWTH_1M: f64 = 2.0;

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

fn main() {
    let setup = match parse_args() {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("{msg}");
            eprintln!(
                "usage: cargo bench --bench recall -- [--runs N | N] [--sizes 10000,100000,1000000]\n\
                 (defaults: {DEFAULT_RUNS} runs or CAIRN_BENCH_RUNS; all sizes or CAIRN_BENCH_SIZES)"
            );
            std::process::exit(2);
        }
    };
    let scratch = tempfile::Builder::new()
        .prefix("cairn-recall-bench-")
        .tempdir()
        .unwrap_or_else(|e| die(format!("cannot make a temporary directory: {e}")));
    let _ = SCRATCH.set(scratch.path().to_path_buf());
    let env = BenchEnv::new(scratch.path());
    let keep = std::env::var_os("CAIRN_BENCH_KEEP").is_some_and(|v| v != "0");
    let new_day = std::env::var_os("CAIRN_BENCH_NEW_DAY").is_none_or(|v| v != "0");
    let vocab = Vocab::new();
    eprintln!(
        "recall-bench: {} distinct words in the generator's lists; scanner: {}; peak memory: {}",
        vocab.distinct(),
        env.scanner.describe(),
        env.rss.describe()
    );

    let started = Instant::now();
    let load_start = load_average();
    let mut results = Vec::new();
    for &size in &setup.sizes {
        let dir = scratch.path().join(format!("r{size}"));
        let r = bench_size(&env, &vocab, &dir, size, setup.runs, new_day);
        results.push(r);
        if !keep {
            let _ = fs::remove_dir_all(&dir);
        }
    }
    let load = format!("{load_start} at the start, {} at the end", load_average());
    print_report(&env, &setup, &results, started.elapsed(), &load);
    if keep {
        eprintln!(
            "recall-bench: kept the repositories in {}",
            scratch.keep().display()
        );
    }
}

struct Setup {
    runs: usize,
    sizes: Vec<usize>,
}

fn parse_args() -> Result<Setup, String> {
    let mut runs = match std::env::var("CAIRN_BENCH_RUNS") {
        Ok(v) => parse_count(&v, "CAIRN_BENCH_RUNS")?,
        Err(_) => DEFAULT_RUNS,
    };
    let mut sizes = match std::env::var("CAIRN_BENCH_SIZES") {
        Ok(v) => parse_sizes(&v)?,
        Err(_) => DEFAULT_SIZES.to_vec(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            // cargo passes --bench to every bench target.
            "--bench" => {}
            "--runs" | "-n" => {
                runs = parse_count(&args.next().ok_or("--runs needs a number")?, "--runs")?
            }
            "--sizes" => sizes = parse_sizes(&args.next().ok_or("--sizes needs a list")?)?,
            "-h" | "--help" => return Err("cairn recall benchmark".into()),
            _ if arg.starts_with("--runs=") => {
                runs = parse_count(&arg["--runs=".len()..], "--runs")?
            }
            _ if arg.starts_with("--sizes=") => sizes = parse_sizes(&arg["--sizes=".len()..])?,
            _ if arg.parse::<usize>().is_ok() => runs = parse_count(&arg, "the number of runs")?,
            _ => return Err(format!("unknown argument `{arg}`")),
        }
    }
    Ok(Setup { runs, sizes })
}

fn parse_count(v: &str, what: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{what} must be a number of at least 1, not `{v}`")),
    }
}

fn parse_sizes(v: &str) -> Result<Vec<usize>, String> {
    let mut sizes = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n: usize = part
            .replace('_', "")
            .parse()
            .map_err(|_| format!("a size must be a number of records, not `{part}`"))?;
        if n < MIN_SIZE {
            return Err(format!(
                "a size must be at least {MIN_SIZE} records, not {n}"
            ));
        }
        sizes.push(n);
    }
    if sizes.is_empty() {
        return Err(format!("no sizes in `{v}`"));
    }
    Ok(sizes)
}

fn die(msg: impl std::fmt::Display) -> ! {
    eprintln!("recall-bench aborted: {msg}");
    if let Some(dir) = SCRATCH.get()
        && std::env::var_os("CAIRN_BENCH_KEEP").is_none()
    {
        let _ = fs::remove_dir_all(dir);
    }
    std::process::exit(1);
}
