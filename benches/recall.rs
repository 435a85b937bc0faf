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

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

// ---------------------------------------------------------------------------------------------
// Processes

#[derive(Clone)]
enum Scanner {
    Rg(String),
    Grep(String),
}

impl Scanner {
    fn detect() -> Scanner {
        let version = |program: &str| {
            Command::new(program)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
        };
        match version("rg") {
            Some(v) => Scanner::Rg(v),
            None => Scanner::Grep(version("grep").unwrap_or_else(|| "grep".into())),
        }
    }

    fn describe(&self) -> String {
        match self {
            Scanner::Rg(v) => format!("{v} (`rg -i -c -e WORD…`)"),
            Scanner::Grep(v) => format!("rg not found: {v} (`grep -r -i -c -e WORD…`) instead"),
        }
    }

    fn short(&self) -> &'static str {
        match self {
            Scanner::Rg(_) => "rg",
            Scanner::Grep(_) => "grep",
        }
    }
}

#[derive(Clone)]
enum RssTool {
    GnuTime,
    Python(PathBuf),
    Unavailable,
}

impl RssTool {
    /// Only looks: installs nothing.
    fn detect(scratch: &Path) -> RssTool {
        let time = Path::new("/usr/bin/time");
        if time.is_file() {
            let out = scratch.join("time-check");
            let ok = Command::new(time)
                .args(["-f", "%M", "-o"])
                .arg(&out)
                .arg("true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            let parsed = fs::read_to_string(&out).ok().and_then(|t| last_number(&t));
            let _ = fs::remove_file(&out);
            if ok && parsed.is_some() {
                return RssTool::GnuTime;
            }
        }
        // The interpreter's own path, so that it runs under the bench's cleared environment.
        let python = Command::new("python3")
            .args(["-c", "import resource, sys; print(sys.executable)"])
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .filter(|p| p.is_file());
        match python {
            Some(p) => RssTool::Python(p),
            None => RssTool::Unavailable,
        }
    }

    fn describe(&self) -> String {
        match self {
            RssTool::GnuTime => "max RSS from `/usr/bin/time -f %M`".into(),
            RssTool::Python(p) => {
                format!("max RSS from {}: getrusage(RUSAGE_CHILDREN)", p.display())
            }
            RssTool::Unavailable => "n/a (neither /usr/bin/time nor python3 found)".into(),
        }
    }
}

fn last_number(text: &str) -> Option<u64> {
    text.lines().rev().find_map(|l| l.trim().parse().ok())
}

/// The environment every child gets: nothing inherited but PATH (so no CAIRN_* or GIT_*), a
/// HOME of its own whose .gitconfig holds an identity, and no system git config.
struct BenchEnv {
    vars: Vec<(&'static str, OsString)>,
    scratch: PathBuf,
    scanner: Scanner,
    rss: RssTool,
}

impl BenchEnv {
    fn new(scratch: &Path) -> BenchEnv {
        let home = scratch.join("home");
        fs::create_dir_all(&home)
            .unwrap_or_else(|e| die(format!("cannot make {}: {e}", home.display())));
        let gitconfig =
            "[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n";
        fs::write(home.join(".gitconfig"), gitconfig)
            .unwrap_or_else(|e| die(format!("cannot write .gitconfig: {e}")));
        let mut vars = vec![
            ("HOME", home.into_os_string()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
            ("LC_ALL", "C".into()),
        ];
        if let Some(path) = std::env::var_os("PATH") {
            vars.push(("PATH", path));
        }
        BenchEnv {
            vars,
            scratch: scratch.to_path_buf(),
            scanner: Scanner::detect(),
            rss: RssTool::detect(scratch),
        }
    }

    fn command(&self, program: impl AsRef<OsStr>, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null());
        cmd
    }

    fn cairn(&self, repo: &Path, args: &[&str]) -> Command {
        let mut cmd = self.command(CAIRN, repo);
        cmd.arg("--repo").arg(repo).args(args);
        cmd
    }

    fn git(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = self.command("git", cwd);
        cmd.args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args);
        cmd
    }

    /// The scan of the same files for the same words.
    fn scan(&self, repo: &Path, query: &str) -> Command {
        let mut cmd = match self.scanner {
            Scanner::Rg(_) => {
                let mut c = self.command("rg", repo);
                c.args(["-i", "-c"]);
                c
            }
            Scanner::Grep(_) => {
                let mut c = self.command("grep", repo);
                c.args(["-r", "-i", "-c"]);
                c
            }
        };
        for w in query.split_whitespace() {
            cmd.arg("-e").arg(w);
        }
        cmd.args(["slog", "vault/observations", "decisions", "MEMORY.md"]);
        cmd
    }

    /// `cmd` (a cairn command) wrapped to report its peak memory, if a way exists.
    fn with_rss(&self, cmd: &Command, out: &Path) -> Option<Command> {
        let mut wrapped = match &self.rss {
            RssTool::GnuTime => {
                let mut c = self.command(
                    "/usr/bin/time",
                    cmd.get_current_dir().unwrap_or(&self.scratch),
                );
                c.args(["-f", "%M", "-o"]).arg(out);
                c
            }
            RssTool::Python(py) => {
                let mut c = self.command(py, cmd.get_current_dir().unwrap_or(&self.scratch));
                c.args([
                    "-c",
                    "import resource, subprocess, sys\n\
                     r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n\
                     print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
                     sys.exit(r.returncode)",
                ]);
                c
            }
            RssTool::Unavailable => return None,
        };
        wrapped.arg(cmd.get_program()).args(cmd.get_args());
        Some(wrapped)
    }

    /// Runs `cmd` under the memory wrapper; returns its wall time, output and max RSS in KiB.
    fn run_rss(
        &self,
        cmd: Command,
        ok_codes: &[i32],
        what: &str,
    ) -> (Duration, Output, Option<u64>) {
        let file = self.scratch.join("rss.out");
        let _ = fs::remove_file(&file);
        match self.with_rss(&cmd, &file) {
            Some(mut wrapped) => {
                let (took, out) = timed(&mut wrapped, ok_codes, what);
                let kib = match self.rss {
                    RssTool::GnuTime => {
                        fs::read_to_string(&file).ok().and_then(|t| last_number(&t))
                    }
                    _ => last_number(&String::from_utf8_lossy(&out.stdout)),
                };
                (took, out, kib)
            }
            None => {
                let mut cmd = cmd;
                let (took, out) = timed(&mut cmd, ok_codes, what);
                (took, out, None)
            }
        }
    }
}

/// Runs `cmd` to completion, timing it; aborts unless it exits with one of `ok_codes`.
fn timed(cmd: &mut Command, ok_codes: &[i32], what: &str) -> (Duration, Output) {
    let start = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| die(format!("`{what}` could not be started: {e}")));
    let took = start.elapsed();
    if !out.status.code().is_some_and(|c| ok_codes.contains(&c)) {
        die(format!(
            "`{what}` failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stdout), 4000),
            tail(&String::from_utf8_lossy(&out.stderr), 4000)
        ));
    }
    (took, out)
}

fn tail(s: &str, max: usize) -> &str {
    let s = s.trim_end();
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

fn json_of(out: &Output, what: &str) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        die(format!(
            "{what} did not print JSON ({e}): {}",
            tail(&String::from_utf8_lossy(&out.stdout), 2000)
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// One size

#[derive(Clone, Copy)]
struct Stats {
    median: Duration,
    p90: Duration,
    min: Duration,
    max: Duration,
    n: usize,
}

impl Stats {
    fn of(mut times: Vec<Duration>) -> Stats {
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

struct Built {
    observations: usize,
    slog: usize,
    adrs: usize,
    memory: usize,
    obs_files: usize,
    slog_files: usize,
    obs_bytes: u64,
    data_bytes: u64,
    generate: Duration,
    commit: Duration,
}

struct SizeResult {
    size: usize,
    built: Built,
    documents: u64,
    index_bytes: u64,
    build: Stats,
    build_rss: Option<u64>,
    recall: Stats,
    recall_inproc: Option<Duration>,
    recall_rss: Option<u64>,
    empty_queries: Vec<&'static str>,
    appended: Stats,
    appended_inproc: Option<Duration>,
    scan: Stats,
    new_day: Option<(Duration, u64)>,
    /// `recall --mode words` and `--mode hybrid`, run alternately.
    modes: (Stats, Stats),
    /// The built-in model in this process: (texts, their mean bytes, time to embed them all,
    /// one query's embedding); up to 100,000 records.
    embedding: Option<(usize, usize, Duration, Duration)>,
}

fn bench_size(
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
fn embedding(dir: &Path, count: usize) -> (usize, usize, Duration, Duration) {
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

fn recall(env: &BenchEnv, dir: &Path, query: &str) -> (Duration, Output) {
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

// ---------------------------------------------------------------------------------------------
// Building a repository

fn build_repo(env: &BenchEnv, vocab: &Vocab, dir: &Path, size: usize) -> Built {
    let parent = dir.parent().expect("the scratch directory");
    let mut init = env.command(CAIRN, parent);
    init.arg("init").arg(dir);
    timed(&mut init, &[0], "cairn init");

    let started = Instant::now();
    let slog = (size / 10).min(SLOG_MAX);
    let adrs = ADRS;
    let memory = MEMORY_ENTRIES;
    let observations = size - slog - adrs - memory;
    let today = utc_today();
    let today_days = days_from_civil(&today);
    let now_ms = utc_ms_of_day();
    let mut rng = Rng(0x5eed_0000_0000_0000 ^ size as u64);
    let mut data_bytes = 0u64;

    // Observations: two years of day files ending today, more on weekdays and more lately.
    let obs_dir = dir.join("vault/observations");
    fs::create_dir_all(&obs_dir)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", obs_dir.display())));
    let first = today_days - (OBS_DAYS - 1);
    let weights: Vec<f64> = (0..OBS_DAYS)
        .map(|i| {
            let days = first + i;
            let weekday = (days + 4).rem_euclid(7); // 0 = Sunday
            let week = if weekday == 0 || weekday == 6 {
                0.3
            } else {
                1.0
            };
            let growth = 0.5 + i as f64 / OBS_DAYS as f64;
            let jitter = 0.6 + 0.8 * rng.unit();
            let part = if i == OBS_DAYS - 1 {
                now_ms as f64 / 86_400_000.0
            } else {
                1.0
            };
            week * growth * jitter * part
        })
        .collect();
    let mut counts = spread(observations, &weights);
    if counts[counts.len() - 1] == 0 {
        // Today's file exists: the appended records fold into a file the index knows.
        let from = counts
            .iter()
            .rposition(|&c| c > 1)
            .expect("enough observations");
        counts[from] -= 1;
        let last = counts.len() - 1;
        counts[last] += 1;
    }
    let mut n = 0u64;
    let mut session: Option<String> = None;
    let mut session_left = 0u32;
    let mut obs_files = 0;
    let mut buf = String::new();
    for (i, &count) in counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let day = civil_from_days(first + i as i64);
        let span = if i as i64 == OBS_DAYS - 1 {
            now_ms.max(count as u64)
        } else {
            86_400_000
        };
        buf.clear();
        for k in 0..count {
            let ms = span * k as u64 / count as u64 + rng.below((span / count as u64).max(1));
            if session_left == 0 {
                session_left = 3 + rng.below(40) as u32;
                // A fifth of the observations come from no agent session (the CLI, imports).
                session =
                    (rng.below(5) != 0).then(|| format!("ses-{:012x}", mix(0x5e55 + n) >> 16));
            }
            session_left -= 1;
            vocab.observation_line(&mut buf, &mut rng, n, &day, ms, session.as_deref());
            n += 1;
        }
        write_file(&obs_dir.join(format!("{day}.jsonl")), buf.as_bytes());
        data_bytes += buf.len() as u64;
        obs_files += 1;
    }
    let obs_bytes = data_bytes;

    // Slog: a year of day files ending today.
    let slog_dir = dir.join("slog");
    fs::create_dir_all(&slog_dir)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", slog_dir.display())));
    let first = today_days - (SLOG_DAYS - 1);
    let weights: Vec<f64> = (0..SLOG_DAYS)
        .map(|i| {
            let part = if i == SLOG_DAYS - 1 {
                now_ms as f64 / 86_400_000.0
            } else {
                1.0
            };
            (0.5 + rng.unit()) * part
        })
        .collect();
    let counts = spread(slog, &weights);
    let mut slog_files = 0;
    let mut k_all = 0u64;
    for (i, &count) in counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let day = civil_from_days(first + i as i64);
        let span = if i as i64 == SLOG_DAYS - 1 {
            now_ms.max(count as u64)
        } else {
            86_400_000
        };
        // A day file may already exist (cairn init logs itself): append to it.
        let path = slog_dir.join(format!("{day}.jsonl"));
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        let had = text.len();
        for k in 0..count {
            let ms = span * k as u64 / count as u64 + rng.below((span / count as u64).max(1));
            vocab.slog_line(&mut text, &mut rng, k_all, &day, ms);
            k_all += 1;
        }
        write_file(&path, text.as_bytes());
        data_bytes += (text.len() - had) as u64;
        slog_files += 1;
    }

    // ADRs, spread over the two years, some superseding earlier ones.
    let decisions = dir.join("decisions");
    fs::create_dir_all(&decisions)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", decisions.display())));
    let mut superseded_by = vec![None; adrs + 1];
    let mut supersedes = vec![None; adrs + 1];
    for n in (20..=adrs).step_by(20) {
        let old = n - 1 - rng.below(15) as usize;
        superseded_by[old] = Some(n);
        supersedes[n] = Some(old);
    }
    for n in 1..=adrs {
        let date = civil_from_days(
            today_days - (OBS_DAYS - 1) + (n as i64 * (OBS_DAYS - 1)) / adrs as i64,
        );
        let title = vocab.adr_title(&mut rng);
        let text = vocab.adr_text(&mut rng, n, &title, &date, supersedes[n], superseded_by[n]);
        let path = decisions.join(format!("{n:04}-{}.md", slug(&title)));
        write_file(&path, text.as_bytes());
        data_bytes += text.len() as u64;
    }

    // MEMORY.md: the header cairn init wrote, then the sections.
    let memory_path = dir.join("MEMORY.md");
    let mut text = fs::read_to_string(&memory_path).unwrap_or_else(|_| "# Memory\n".into());
    let had = text.len();
    for (s, section) in MEMORY_SECTIONS.iter().enumerate() {
        let _ = write!(text, "\n## {section}\n\n");
        for e in 0..MEMORY_PER_SECTION {
            let date = civil_from_days(today_days - 700 + (s * MEMORY_PER_SECTION + e) as i64 * 10);
            let _ = write!(text, "- ({date}) ");
            vocab.memory_entry(&mut text, &mut rng, s);
            text.push('\n');
        }
    }
    write_file(&memory_path, text.as_bytes());
    data_bytes += (text.len() - had) as u64;
    let generate = started.elapsed();

    let started = Instant::now();
    timed(&mut env.git(dir, &["add", "-A"]), &[0], "git add -A");
    timed(
        &mut env.git(dir, &["commit", "-q", "-m", "data"]),
        &[0],
        "git commit",
    );
    let commit = started.elapsed();
    let status = timed(
        &mut env.git(dir, &["status", "--porcelain"]),
        &[0],
        "git status",
    )
    .1;
    if !status.stdout.is_empty() {
        die(format!(
            "the repository is not clean after its commit:\n{}",
            String::from_utf8_lossy(&status.stdout)
        ));
    }
    Built {
        observations,
        slog,
        adrs,
        memory,
        obs_files,
        slog_files,
        obs_bytes,
        data_bytes,
        generate,
        commit,
    }
}

fn write_file(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| die(format!("cannot write {}: {e}", path.display())));
}

/// Splits `total` over days in proportion to `weights`, exactly.
fn spread(total: usize, weights: &[f64]) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    let mut counts: Vec<usize> = weights
        .iter()
        .map(|w| (total as f64 * w / sum).floor() as usize)
        .collect();
    let mut left = total - counts.iter().sum::<usize>();
    // The remainder to the heaviest days.
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
}

/// The file-name part of an ADR title: the library's own, as `cairn adr new` uses it.
fn slug(title: &str) -> String {
    cairn::adr::slug(title)
}

// ---------------------------------------------------------------------------------------------
// Text

/// splitmix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An index below `n`, the first ones more likely (word use is skewed).
    fn skewed(&mut self, n: usize) -> usize {
        let u = self.unit();
        ((u * u * n as f64) as usize).min(n - 1)
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        // Two thirds skewed, a third uniform: common words and a long tail.
        if self.below(3) < 2 {
            list[self.skewed(list.len())]
        } else {
            list[self.below(list.len() as u64) as usize]
        }
    }
}

/// splitmix64's finalizer: a bijection on u64, so distinct inputs give distinct ids.
fn mix(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A bijection on 48 bits, for slog ids (`sl-` and 12 hex).
fn mix48(x: u64) -> u64 {
    const M: u64 = (1 << 48) - 1;
    let mut z = x & M;
    z = z.wrapping_mul(0x5851_f42d_4c95_7f2d | 1) & M;
    z ^= z >> 24;
    z = z.wrapping_mul(0x1405_7b7e_f767_814f | 1) & M;
    z ^ (z >> 17)
}

const CATEGORIES: [(&str, u64); 7] = [
    ("operations", 30),
    ("system-architecture", 18),
    ("projects", 14),
    ("rules-conventions", 12),
    ("preferences", 10),
    ("people-relationships", 10),
    ("memory-system", 6),
];

/// Per category (in [`CATEGORIES`] order), the first sentence of an observation. Keys: N
/// person, T tool or technology, O operations noun, D engineering noun, L everyday noun, V
/// verb in the past, B verb, S verb with -s, G verb with -ing, A adjective, W adverb, X
/// project, H host, R version, K number, P ticket, Y role, Z when, M month, J weekday.
const TEMPLATES: [&[&str]; 7] = [
    &[
        "{V} {T} on {H} after the {O}; the {A} {D} was the cause.",
        "The {T} {O} on {H} {Z} was a {A} {D}, fixed by {N}.",
        "Disk full on {H} again: the {T} logs grew past {K} GB because retention was off.",
        "The nfs mount on {H} needs root to unmount, and {T} hangs until it is gone.",
        "Redis timeout errors on {H} went away after {N} raised the pool limit to {K}.",
        "Caddy certificate renewal failed on {H} because port 80 was blocked by {T}.",
        "Postgres migration {R} took {K} minutes on {H} and locked the {D} table.",
        "Deploy of {X} {R} was rolled back after the {A} health check failed on {H}.",
        "Backup retention for {X} is {K} days on {T}; restores were tested {Z}.",
        "Grafana alert for the {T} {O} fired {K} times {Z}, mostly {A} noise.",
        "{T} on {H} restarted itself {K} times {Z} after the {A} {O}.",
        "SSH key rotation for {H} is done by {N} every quarter through {T}.",
        "The {O} runbook for {T} says to {B} the {D} on {H} before anything else.",
        "{N} {V} the {T} {D} on {H} and the {O} stopped.",
    ],
    &[
        "The {D} in {X} is built on {T} and talks to {T} through a {A} {D}.",
        "{X} keeps its {D} in {T}, with a {A} cache in {T} in front of it.",
        "The {D} layer of {X} is {A}: every {D} goes through one {D}.",
        "{T} handles the {D} for {X}; {T} only stores the {A} {D}.",
        "The {D} schema for {X} has a {A} index on the {D} column since {R}.",
        "We split the {X} {D} into a {A} {D} and a {A} {D} to keep the API stable.",
        "The {X} {D} reads from {T} and writes through a {A} queue in {T}.",
    ],
    &[
        "{X} release {R} is planned for {M} with the {A} {D} feature.",
        "The {X} roadmap moves the {D} work to the next sprint because of {P}.",
        "Milestone {R} of {X} needs the {T} migration and a {A} {D} before {M}.",
        "{N} owns the {X} {D} project and reports on it every {J}.",
        "The issue {P} in {X} blocks the {A} release until {N} {V} the {D}.",
        "{X} version {R} shipped the {A} {D} and dropped support for {T}.",
        "The release plan for {X} puts the {A} {D} behind a flag until {M}.",
    ],
    &[
        "Never {B} the {D} on {H} without a {A} backup first.",
        "Always {B} the {D} before you {B} {T} in production.",
        "The team rule is that every {D} change needs a review from {N}.",
        "Do not force-push to main; {B} the branch and open a pull request instead.",
        "Commit messages start with the area, like {T}: {V} the {D}.",
        "Every {O} gets a ticket like {P} and a short note in the slog.",
        "Run the {A} test suite and the {T} lint before tagging release {R}.",
        "Secrets must never go into {T} config; use the {T} store on {H}.",
    ],
    &[
        "{N} prefers {A} {D} over {A} {D} when working on {X}.",
        "The user likes {T} for {D} work and finds {T} too {A}.",
        "{N} wants {A} commit messages and short {D} descriptions.",
        "The user prefers tabs over spaces in {T} files and {A} names for every {D}.",
        "{N} dislikes {A} {L} and would rather {B} the {D} {W}.",
        "For {X} the user prefers {T} with {A} defaults instead of {T}.",
        "The user likes to {B} the {D} first thing in the {L}, before coffee.",
        "{N} prefers {A} answers with a short summary and the exact {T} commands.",
    ],
    &[
        "{N} went camping with her kids and her husband {Z}.",
        "{N} is the {Y} on {X} and prefers {A} meetings in the {L}.",
        "{N} and {N} pair on the {X} {D} every {J}.",
        "The client {N} wants weekly updates on {X} by email.",
        "{N} is back from {L} leave {Z} and takes over the {T} work.",
        "{N}'s daughter started school, so {N} leaves early on {J}.",
        "{N} reports to {N}, who manages the {X} team.",
        "{N} {V} the {L} with the family {Z} and was {A} about it.",
    ],
    &[
        "cairn should recall {A} observations about {X} at session start.",
        "The memory for {X} was {A} until {N} {V} the stale observations.",
        "Recall misses {A} {D} notes when the query says {T} instead of {D}.",
        "Observations about {T} belong in the operations section of MEMORY.md.",
        "{N} asked cairn to remember that {T} {S} the {A} {D} on {H}.",
    ],
];

/// Second and third sentences.
const MORE: &[&str] = &[
    "{N} {V} the {A} {D} on {H} {Z}.",
    "It {V} again {Z} after the {O}.",
    "The {L} was {A} and the {D} stayed {A}.",
    "{N} {V} that the {T} {D} is {A}.",
    "This matters for {X} because the {D} is {A}.",
    "We {V} the {D} and {V} the {T} {O} {W}.",
    "Next time {B} the {T} {D} before the {O}.",
    "{N} thinks the {A} {D} should {B} {W}.",
    "The {T} docs say the {D} is {A} by default.",
    "See {P} for the {A} details.",
    "{N} {S} the {T} {D} {W} now.",
    "The {O} cost us {K} minutes of {L}.",
];

/// Clauses that lengthen a sentence.
const FILLERS: &[&str] = &[
    "because {N} {V} the {A} {O}",
    "on {H} during the {L}",
    "after {N} {V} the {D}",
    "which made the {O} {A}",
    "and {N} {V} it {Z}",
    "while the {T} {D} was {A}",
    "for the {X} {D}",
    "with the {A} {T} config",
    "before {G} the {D} on {H}",
    "so the {L} stayed {A}",
];

const SLOG_DETAILS: &[&str] = &[
    "{V} {U} on {H} with the {A} {D} config",
    "rolled out {X} {R} to {H} and {H}",
    "{V} the {U} {O} on {H}; {N} confirmed the {D} is {A}",
    "{V} {K} {D} entries from {U} on {H}",
    "{U} {D} on {H} {V} after the {A} {O}",
    "{V} {U} to {R} on {H}",
    "moved the {X} {D} from {H} to {H}",
    "{V} the {A} {D} in {U} for {X}",
];

const SLOG_REASONS: &[&str] = &[
    "the {O} on {H} was {A}",
    "{N} asked for it",
    "{P}",
    "{A} {D} after the {O}",
    "the {T} {D} was {A}",
    "planned {L} maintenance",
];

const SLOG_ACTIONS: &[&str] = &[
    "deploy",
    "deploy",
    "deploy",
    "fix",
    "fix",
    "configure",
    "configure",
    "restart",
    "upgrade",
    "rollback",
    "investigate",
    "migrate",
    "rotate",
    "scale",
    "backup",
    "restore",
    "install",
    "remove",
    "tune",
    "test",
];

const SLOG_TOOLS: &[&str] = &[
    "caddy",
    "redis",
    "postgres",
    "nginx",
    "docker",
    "systemd",
    "grafana",
    "prometheus",
    "loki",
    "k3s",
    "terraform",
    "ansible",
    "github-actions",
    "cloudflare",
    "minio",
    "rabbitmq",
    "vault",
    "cron",
    "letsencrypt",
    "node-exporter",
    "pgbouncer",
    "sentry",
    "tailscale",
    "wireguard",
    "backup-script",
];

const ADR_TITLES: &[&str] = &[
    "Use {T} for the {X} {D}",
    "Move the {D} from {T} to {T}",
    "Adopt {A} {D} in {X}",
    "Keep the {D} in {T}",
    "Drop {T} from the {X} stack",
    "Run {T} on {H}",
    "Store {X} {D} in {T}",
    "Replace {T} with {T} for {D}",
];

const PERSON_NAMES: &str = "Ana Ben Chen Dara Eli Melanie Caroline Jon Priya Omar Lena Tomas Yuki Sam Alex Maria \
    Jose Fatima Noah Emma Liam Olivia Lucas Mia Ethan Sofia Mateo Isabella Leo Amelia Hugo Chloe Arjun Ananya Wei \
    Mei Hiroshi Aiko Kofi Amara Diego Lucia Pavel Olga Sven Ingrid Pierre Camille Marco Giulia Hans Greta Ravi \
    Deepa Kwame Zara Ibrahim Layla Rafael Beatriz Nikos Eleni Jakub Zofia Mateus Ines Tariq Noor Felix Clara \
    Oskar Maja Emil Astrid Rosa Pablo Ada Grace Alan Linus Ken Dennis Barbara Margaret Edsger Donald Leslie \
    Frances Radia Tim Vint Bjarne Guido Rob Russ Brian Kim Taylor Jordan Casey Riley Morgan Jamie Avery Quinn \
    Harper Rowan Sage Robin Charlie Frankie Georgia Henry Iris Jack Kate Laura Mark Nina Owen Paula Rachel Steve \
    Tina Victor Wendy Xavier Yara Zoe Abel Bruno Celia Dmitri Esther Farid Gabriel Hana Ivan Julia Karim Lars \
    Marta Nils Otto Petra Rania Simon Tess Ulla Vera \
    Aaron Abigail Adrian Agnes Aidan Alice Amir Andrea Angela Anton Ariel Arthur Aurora Beatrix \
    Benedict Bianca Boris Caleb Carla Carmen Cecilia Cedric Cyrus Daisy Damian Daniel Daphne Darius \
    Delia Dominic Dora Edgar Edith Elena Elias Eliza Elliot Elsa Enzo Erik Erin Eva Ezra Fabian Fiona \
    Florian Freya Gideon Gloria Gustav Hannah Harvey Hazel Helena Hector Ida Ilse Isaac Ivy Jasper \
    Jenna Joel Jonas Josephine Jude Juliet Kai Karen Kenji Kira Klaus Lara Leon Lily Lorenzo Lotte Luca \
    Luna Magnus Malik Matilda Maxim Milo Mira Nadia Naomi Nathan Nora Olive Oscar Paolo Penelope \
    Quentin Rebecca Remy Rhea Ruben Ruth Selma Silas Stella Theo Thea Ursula Valentin Viola Walter \
    Willa Yusuf";

const TECH: &str = "redis postgres caddy nginx docker kubernetes systemd grafana prometheus loki terraform ansible git \
    github gitlab rust cargo tokio serde clap tantivy python django flask fastapi celery react typescript node npm \
    pnpm yarn webpack vite eslint prettier rustfmt clippy go java kotlin gradle maven spring postgresql mysql \
    sqlite mongodb elasticsearch opensearch kafka rabbitmq nats minio s3 cloudflare aws gcp azure ec2 lambda \
    fargate ecs eks k3s helm argocd fluxcd traefik haproxy envoy istio linkerd consul vault nomad packer vagrant \
    qemu kvm proxmox zfs btrfs ext4 lvm nfs samba rsync restic borg cron systemctl journald rsyslog fluentd \
    vector jaeger tempo opentelemetry sentry pagerduty opsgenie slack matrix zulip jira linear confluence notion \
    obsidian vim neovim emacs vscode zed tmux zsh bash fish ssh wireguard tailscale openvpn iptables nftables \
    ufw fail2ban letsencrypt certbot openssl gpg age sops pgbouncer patroni timescaledb clickhouse duckdb \
    parquet arrow pandas polars numpy jupyter pytorch onnx llama ollama openai anthropic claude codex copilot \
    cursor aider mcp json yaml toml markdown protobuf grpc graphql rest websocket http2 http3 quic dns dhcp \
    bgp ipv6 tls mtls oauth oidc saml ldap keycloak authelia bitwarden 1password memcached varnish cdn webhook \
    cloudinit ubuntu debian alpine fedora arch nixos macos windows wsl homebrew apt dnf nix flatpak snap \
    podman buildah skopeo containerd runc cgroups selinux apparmor ebpf bpftrace strace perf valgrind gdb lldb \
    pprof flamegraph criterion hyperfine ripgrep fd jq yq sed awk make cmake bazel ninja llvm clang gcc musl \
    glibc wasm wasmtime deno bun svelte vue angular nextjs remix astro hugo jekyll tailwind bootstrap sass \
    storybook playwright cypress selenium jest vitest pytest mypy ruff black poetry uv pip conda mkdocs sphinx \
    rabbit-queue node-exporter github-actions gitea forgejo drone woodpecker jenkins buildkite circleci \
    rocksdb leveldb lmdb sled foundationdb cockroachdb yugabyte cassandra scylla dynamodb bigquery \
    snowflake redshift airflow dagster prefect dbt spark flink beam hadoop hive presto trino superset \
    metabase tableau looker kibana graylog splunk datadog newrelic honeycomb lightstep zipkin statsd \
    telegraf influxdb victoriametrics thanos cortex mimir alertmanager blackbox-exporter uptime-kuma \
    healthchecks netdata glances htop btop iotop nmon sar vmstat iostat netstat ss tcpdump wireshark \
    mtr traceroute dig nslookup curl wget httpie postman insomnia ngrok frp cloudflared coredns unbound \
    bind pihole adguard dnsmasq kea radvd keepalived pacemaker corosync drbd ceph glusterfs longhorn \
    rook openebs velero stash kopia duplicati rclone syncthing nextcloud seafile gitea-runner renovate \
    dependabot semgrep trivy grype syft cosign sigstore notary harbor quay artifactory nexus verdaccio \
    devpi pypi crates-io npmjs rubygems bundler rails sinatra laravel symfony phoenix elixir erlang \
    haskell ocaml scala clojure zig nim crystal lua luajit perl php ruby swift objective-c dart flutter \
    electron tauri gtk qt wxwidgets sdl opengl vulkan metal webgpu cuda rocm tensorrt triton-server \
    vllm llamacpp gguf safetensors huggingface transformers tokenizers sentence-transformers faiss \
    qdrant weaviate milvus chroma pgvector lancedb tantivy-py meilisearch typesense solr lucene bleve";

const OPS_NOUNS: &str = "deploy deployment rollout rollback incident outage alert alerts pager dashboard \
    certificate renewal backup backups restore snapshot retention migration upgrade downgrade restart reboot \
    failover replica replication primary cluster node nodes pod pods container containers volume volumes disk \
    disks partition mount quota inode memory swap cpu load latency throughput timeout timeouts retry retries \
    queue queues worker workers job jobs cron schedule window maintenance runbook postmortem oncall rotation \
    key keys secret secrets token tokens password credentials firewall port ports proxy gateway ingress \
    egress route routes dns record zone subnet vlan bridge interface link bandwidth packet loss jitter healthcheck \
    probe liveness readiness metric metrics log logs trace traces span sampling scrape target exporter \
    threshold budget slo sla error errors crash crashloop oom panic leak deadlock lock locks contention spike \
    regression capacity scaling autoscaler limit limits request requests pool connections handshake \
    cert expiry rotation ticket page escalation freeze release hotfix patch image registry tag digest mirror \
    cache purge invalidation warmup traffic canary bluegreen drain cordon taint upgrade-window";

const DEV_NOUNS: &str = "function module crate package library binary test tests benchmark index schema query \
    queries migration API endpoint handler middleware router controller model view template component hook \
    state store reducer context type trait struct enum interface class method field column table row key \
    value map list vector array buffer stream iterator parser lexer tokenizer serializer format encoding \
    config setting option flag feature branch commit merge rebase diff patch review pull-request release \
    version tag changelog lint warning error panic exception stack trace log message output input argument \
    parameter return result callback future promise task thread process lock mutex channel signal event \
    queue scheduler worker pool connection session cookie header body payload response request client server \
    service daemon agent plugin extension script pipeline workflow build artifact cache layer image manifest \
    dependency lockfile toolchain compiler linter formatter debugger profiler allocator heap stack pointer \
    reference lifetime borrow macro generic closure snapshot fixture mock stub assertion coverage docs readme \
    comment naming convention style guide spec design architecture boundary abstraction refactor cleanup \
    rewrite prototype spike experiment benchmark-suite dataset embedding vector-store prompt context-window \
    token-budget memory-file observation decision record note summary briefing ranking score decay \
    checkpoint offset payload segment merge-policy writer reader searcher collector \
    invariant precondition postcondition contract protocol handshake-code state-machine transition \
    backoff jitter-code ratelimiter circuit-breaker bulkhead idempotency-key nonce checksum hash digest \
    signature certificate-chain keystore truststore keyring secret-file env-file dotfile makefile \
    dockerfile compose-file helm-chart values-file manifest-file crd operator controller-loop \
    reconciler webhook-handler admission-hook sidecar init-container cronjob daemonset statefulset \
    deployment-spec replicaset namespace label selector annotation finalizer owner-reference \
    migration-script seed-data fixture-file golden-file snapshot-test property-test fuzz-target \
    regression-test smoke-test load-test soak-test chaos-test canary-check feature-flag kill-switch";

const LIFE_NOUNS: &str = "morning afternoon evening night weekend holiday vacation trip flight train bus car \
    bike walk run hike camping beach mountain lake river park garden kitchen coffee tea breakfast lunch dinner \
    meal pizza pasta soup salad bread cake birthday party wedding concert movie book podcast music song guitar \
    piano game football soccer tennis basketball swim gym yoga doctor dentist school class teacher homework \
    exam kids family parents mother father sister brother daughter son baby grandmother grandfather cousin \
    friend neighbour dog cat puppy kitten house flat apartment office desk chair laptop phone monitor keyboard \
    headphones rain snow sun weather winter spring summer autumn storm heat cold flu cough sleep nap dream \
    news email calendar meeting call standup retro demo lunch-break coffee-break commute traffic city village \
    market shop grocery bakery library museum theatre restaurant cafe hotel airport station bridge street road \
    hill forest field farm island harbour boat ship sea ocean sky star moon sunrise sunset picnic barbecue \
    festival holiday-season new-year christmas easter move renovation furniture paint plant flower tree \
    moving-day anniversary graduation promotion interview offer contract salary budget taxes bank rent \
    insurance appointment errand chores laundry dishes cleaning shopping cooking baking reading writing \
    drawing painting photography running cycling climbing skiing sailing fishing knitting gardening chess \
    puzzle crossword sudoku volunteering choir band team-dinner offsite conference talk workshop meetup \
    hackathon course lesson language spanish french german japanese mandarin \
    apple orange banana lemon strawberry grape cherry peach pear plum melon tomato potato carrot onion \
    garlic pepper rice beans cheese butter milk sandwich burger noodles curry sushi tacos pancakes \
    waffles cereal yogurt juice wine beer water bottle cup mug plate bowl spoon fork knife table sofa \
    bed pillow blanket lamp window door roof wall floor stairs garage basement attic balcony yard fence \
    gate mailbox letter parcel delivery courier postcard ticket passport visa luggage suitcase backpack \
    map compass tent sleeping-bag campfire lantern torch battery charger adapter plug socket fridge \
    oven stove microwave kettle toaster dishwasher washing-machine dryer vacuum broom mop bucket sponge \
    soap shampoo towel toothbrush mirror shower bath sink umbrella raincoat jacket coat sweater scarf \
    gloves hat boots shoes sneakers socks shirt trousers jeans dress skirt suit tie belt wallet keys \
    watch glasses ring necklace bracelet earrings notebook pen pencil marker sticky-note whiteboard \
    printer paper envelope stamp diary journal magazine newspaper novel comic poem story essay article \
    blog newsletter recipe cookbook grocery-list receipt invoice bill refund discount coupon gift \
    present surprise card balloon candle cake-slice dessert ice-cream chocolate cookie biscuit muffin \
    croissant bagel toast jam honey cereal-bar snack popcorn chips nuts almonds olives hummus salsa \
    guacamole pizza-night takeaway leftovers brunch supper feast neighbourhood playground school-run \
    nursery kindergarten university campus dorm lecture seminar thesis deadline-week exam-season \
    report-card parent-evening sports-day swimming-lesson piano-lesson football-match tennis-club \
    chess-club book-club choir-practice rehearsal audition recital gallery exhibition zoo aquarium \
    circus fair carnival parade fireworks bonfire camp cabin cottage lodge hostel campsite trail summit \
    valley canyon cliff cave waterfall glacier desert meadow orchard vineyard";

const VERBS_PAST: &str = "restarted migrated upgraded fixed broke noticed found reported deployed reverted \
    rolled-back rotated renewed resized scaled drained cordoned rebooted patched tuned tested reviewed merged \
    rebased released tagged published documented removed added moved renamed split merged-in replaced \
    configured enabled disabled raised lowered increased decreased cleaned pruned archived restored backed-up \
    snapshotted mounted unmounted killed paused resumed retried debugged profiled traced measured benchmarked \
    refactored rewrote simplified deleted created wrote read checked verified confirmed approved rejected \
    postponed planned scheduled cancelled moved-up shipped announced explained asked answered suggested \
    proposed decided agreed disagreed escalated paged acknowledged resolved closed reopened triaged labelled \
    assigned handed-over took-over picked-up dropped kept switched chose preferred liked disliked wanted \
    needed used avoided forgot remembered learned taught showed shared sent received bought sold visited \
    called met cooked baked ran walked cycled drove flew travelled camped hiked swam played watched listened \
    painted built fixed-up cleaned-up sorted packed unpacked installed uninstalled updated pinned unpinned \
    vendored bumped locked unlocked exported imported indexed reindexed queried cached invalidated warmed \
    grepped tailed diffed staged committed pushed pulled fetched cloned bisected squashed signed \
    encrypted decrypted compressed rebuilt recompiled linted formatted stopped started watched \
    inspected audited hardened secured exposed hid throttled batched streamed sharded partitioned \
    replicated promoted demoted evicted expired refreshed reloaded redeployed reprovisioned \
    decommissioned provisioned bootstrapped seeded";

const VERBS_BASE: &str = "restart migrate upgrade fix check deploy revert rotate renew resize scale drain \
    reboot patch tune test review merge rebase release tag publish document remove add move rename split \
    replace configure enable disable raise lower increase clean prune archive restore back-up snapshot mount \
    unmount pause resume retry debug profile trace measure benchmark refactor rewrite simplify delete create \
    write read verify confirm approve plan schedule ship explain ask answer propose decide escalate page \
    resolve close triage assign keep switch choose use avoid remember learn share send update pin vendor bump \
    lock export import index query cache invalidate warm inspect tail grep diff stage commit push pull fetch \
    clone bisect squash sign encrypt decrypt compress rebuild recompile lint format run stop start watch";

const VERBS_S: &str = "prefers likes wants needs uses avoids keeps breaks fixes restarts checks runs \
    handles stores reads writes owns leads manages reviews expects blocks requires depends-on talks-to \
    calls sends receives caches indexes queries locks retries times-out fails crashes leaks hangs slows \
    drops rejects accepts returns logs warns reports tracks";

const VERBS_ING: &str = "restarting migrating upgrading fixing checking deploying reverting rotating \
    renewing scaling draining rebooting patching tuning testing reviewing merging rebasing releasing \
    tagging documenting removing moving renaming replacing configuring cleaning pruning archiving restoring \
    mounting debugging profiling tracing measuring refactoring rewriting deleting writing reading verifying \
    planning scheduling shipping indexing querying caching camping hiking cooking";

const ADJECTIVES: &str = "slow fast flaky stable noisy quiet broken stale fresh old new legacy modern \
    small large huge tiny simple complex clean messy safe unsafe risky critical minor major urgent \
    optional required default custom manual automatic nightly weekly daily hourly monthly primary secondary \
    local remote shared private public internal external read-only writable idle busy hot cold warm full \
    empty partial missing duplicate corrupt healthy unhealthy degraded green red yellow blocking \
    non-blocking async sync sequential parallel concurrent atomic durable expensive cheap free verbose \
    concise terse readable unreadable clear confusing obvious subtle strict lenient loose tight narrow wide \
    deep shallow short long brief detailed rough polished experimental production staging dev test \
    temporary permanent cached uncached compressed encrypted signed unsigned pinned floating outdated \
    deprecated current latest previous next first last better worse faster slower smaller bigger \
    happy tired busy relaxed excited worried careful calm sunny rainy snowy windy lovely great nice \
    terrible awful decent solid fragile robust predictable surprising weird odd strange familiar \
    bright dark heavy light soft hard smooth sharp blunt dull shiny dusty muddy sticky crowded \
    empty-handed lonely cheerful grumpy sleepy hungry thirsty sick healthy-ish brave shy proud honest \
    polite rude kind gentle strict-ish funny serious silly clever wise curious patient impatient \
    generous greedy lazy diligent punctual late early sudden gradual rapid steady shaky wobbly sturdy \
    flimsy bulky compact portable heavyweight lightweight ancient recent upcoming ongoing finished \
    unfinished pending approved rejected-ish blocked unblocked overdue ontime flawless buggy glitchy \
    laggy snappy sluggish chatty silent loud muted colourful grey pale vivid crisp blurry sharp-edged";

const ADVERBS: &str = "usually always never often rarely sometimes again twice quickly slowly carefully \
    manually automatically nightly weekly daily first last later soon now already still only mostly \
    partly fully barely clearly probably definitely eventually immediately gradually quietly";

const PROJECTS: &str = "atlas borealis cairn nimbus orion phoenix polaris quasar zephyr hermes apollo \
    artemis juno vesta ceres titan triton io europa ganymede callisto helios selene eos boreas notus \
    kestrel falcon heron osprey wren lark finch robin sparrow magpie raven condor pelican puffin \
    billing checkout search onboarding payments ledger inventory catalog gateway portal dashboard-v2 \
    mobile-app website docs-site data-platform ml-pipeline homelab infra";

const ROLES: &str = "tech lead manager product owner designer sre on-call engineer reviewer maintainer \
    architect director intern contractor consultant tester analyst founder cto ceo mentor";

const WHEN: &[&str] = &[
    "yesterday",
    "last week",
    "this morning",
    "last night",
    "on Monday",
    "on Friday",
    "over the weekend",
    "twice this month",
    "after lunch",
    "during the night",
    "last sprint",
    "two days ago",
    "earlier today",
    "at the end of the quarter",
];

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const WEEKDAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const HOST_PREFIXES: &[&str] = &[
    "web", "db", "cache", "edge", "build", "ci", "mail", "nfs", "backup", "worker", "gpu", "vpn",
    "proxy", "mon", "log", "git", "dev", "staging", "prod", "lb",
];

struct Vocab {
    names: Vec<&'static str>,
    tech: Vec<&'static str>,
    ops: Vec<&'static str>,
    dev: Vec<&'static str>,
    life: Vec<&'static str>,
    past: Vec<&'static str>,
    base: Vec<&'static str>,
    pres: Vec<&'static str>,
    ing: Vec<&'static str>,
    adj: Vec<&'static str>,
    adv: Vec<&'static str>,
    projects: Vec<&'static str>,
    roles: Vec<&'static str>,
    people_lower: Vec<String>,
}

impl Vocab {
    fn new() -> Vocab {
        let words = |s: &'static str| -> Vec<&'static str> { s.split_whitespace().collect() };
        let names = words(PERSON_NAMES);
        let v = Vocab {
            people_lower: names.iter().take(12).map(|n| n.to_lowercase()).collect(),
            names,
            tech: words(TECH),
            ops: words(OPS_NOUNS),
            dev: words(DEV_NOUNS),
            life: words(LIFE_NOUNS),
            past: words(VERBS_PAST),
            base: words(VERBS_BASE),
            pres: words(VERBS_S),
            ing: words(VERBS_ING),
            adj: words(ADJECTIVES),
            adv: words(ADVERBS),
            projects: words(PROJECTS),
            roles: words(ROLES),
        };
        // The generator writes JSON by hand: nothing may need escaping.
        for w in v.all_words() {
            assert!(
                !w.contains(['"', '\\']) && !w.chars().any(char::is_control),
                "word {w:?} needs escaping"
            );
        }
        v
    }

    fn all_words(&self) -> impl Iterator<Item = &&'static str> {
        [
            &self.names,
            &self.tech,
            &self.ops,
            &self.dev,
            &self.life,
            &self.past,
            &self.base,
            &self.pres,
            &self.ing,
            &self.adj,
            &self.adv,
            &self.projects,
            &self.roles,
        ]
        .into_iter()
        .flatten()
    }

    /// Distinct words in the lists (hosts, numbers, versions and tickets come on top).
    fn distinct(&self) -> usize {
        let mut all: Vec<String> = self.all_words().map(|w| w.to_lowercase()).collect();
        all.sort();
        all.dedup();
        all.len()
    }

    /// Appends the expansion of `template`.
    fn expand(&self, out: &mut String, rng: &mut Rng, template: &str, tool: &str) {
        let mut rest = template;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let end = i + rest[i..].find('}').expect("templates close their braces");
            self.fill(out, rng, &rest[i + 1..end], tool);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
    }

    fn fill(&self, out: &mut String, rng: &mut Rng, key: &str, tool: &str) {
        match key {
            "N" => out.push_str(rng.pick(&self.names)),
            "T" => out.push_str(rng.pick(&self.tech)),
            "U" => out.push_str(tool),
            "O" => out.push_str(rng.pick(&self.ops)),
            "D" => out.push_str(rng.pick(&self.dev)),
            "L" => out.push_str(rng.pick(&self.life)),
            "V" => out.push_str(rng.pick(&self.past)),
            "B" => out.push_str(rng.pick(&self.base)),
            "S" => out.push_str(rng.pick(&self.pres)),
            "G" => out.push_str(rng.pick(&self.ing)),
            "A" => out.push_str(rng.pick(&self.adj)),
            "W" => out.push_str(rng.pick(&self.adv)),
            "X" => out.push_str(rng.pick(&self.projects)),
            "Y" => out.push_str(rng.pick(&self.roles)),
            "Z" => out.push_str(rng.pick(WHEN)),
            "M" => out.push_str(rng.pick(MONTHS)),
            "J" => out.push_str(rng.pick(WEEKDAYS)),
            "H" => {
                let _ = write!(out, "{}-{}", rng.pick(HOST_PREFIXES), 1 + rng.skewed(24));
            }
            "R" => {
                let _ = write!(out, "{}.{}.{}", rng.skewed(5), rng.below(30), rng.below(12));
            }
            "K" => {
                let _ = write!(out, "{}", 2 + rng.skewed(200));
            }
            "P" => {
                let prefix = ["INC", "OPS", "PR", "BUG"][rng.below(4) as usize];
                let _ = write!(out, "{prefix}-{}", 100 + rng.below(9_900));
            }
            other => panic!("unknown template key {other}"),
        }
    }

    /// One sentence from `template`, capitalized.
    fn sentence(&self, out: &mut String, rng: &mut Rng, template: &str) {
        let start = out.len();
        self.expand(out, rng, template, "");
        if let Some(c) = out[start..].chars().next()
            && c.is_ascii_lowercase()
        {
            out.replace_range(start..start + 1, &c.to_ascii_uppercase().to_string());
        }
    }

    /// An observation's text: 1–3 sentences, 15–60 words.
    fn observation_text(&self, out: &mut String, rng: &mut Rng, category: usize) {
        let start = out.len();
        let target = 15 + rng.skewed(46);
        let first = rng_pick_str(rng, TEMPLATES[category]);
        self.sentence(out, rng, first);
        let mut sentences = 1;
        let mut words = out[start..].split_whitespace().count();
        while words < target {
            if sentences < 3 && target - words >= 8 {
                out.push(' ');
                let more = rng_pick_str(rng, MORE);
                self.sentence(out, rng, more);
                sentences += 1;
            } else {
                out.pop(); // the full stop
                out.push(' ');
                let filler = rng_pick_str(rng, FILLERS);
                self.expand(out, rng, filler, "");
                out.push('.');
            }
            words = out[start..].split_whitespace().count();
        }
        if words > 60 {
            let cut = out[start..]
                .split_whitespace()
                .take(60)
                .collect::<Vec<_>>()
                .join(" ");
            out.truncate(start);
            out.push_str(cut.trim_end_matches(['.', ',', ';', ':']));
            out.push('.');
        }
    }

    /// One observation line in the exact format of `store::Observation`.
    fn observation_line(
        &self,
        out: &mut String,
        rng: &mut Rng,
        n: u64,
        day: &str,
        ms: u64,
        session: Option<&str>,
    ) {
        let roll = rng.below(100);
        let mut acc = 0;
        let category = CATEGORIES
            .iter()
            .position(|(_, w)| {
                acc += w;
                roll < acc
            })
            .unwrap_or(0);
        let _ = write!(out, "{{\"id\":\"ob-{:016x}\",\"session_id\":", mix(n));
        match session {
            Some(s) => {
                let _ = write!(out, "\"{s}\"");
            }
            None => out.push_str("null"),
        }
        out.push_str(",\"observation\":\"");
        self.observation_text(out, rng, category);
        let kind = match (category, rng.below(10)) {
            (4, 0..=3) => "preference",
            (3, 0..=3) => "decision",
            (0, 0..=2) => "event",
            _ => "fact",
        };
        let source = match (session, rng.below(10)) {
            (Some(_), 0..=6) => "claude-code",
            (Some(_), _) => "codex",
            (None, 0..=6) => "cli",
            (None, _) => "import:notes.jsonl",
        };
        let priority = match rng.below(10) {
            0 => "high",
            1 | 2 => "low",
            _ => "medium",
        };
        let verdict = if rng.chance(5) { "hold" } else { "allow" };
        let write_confidence = (55 + rng.below(45)) as f64 / 100.0;
        let category_confidence = (30 + rng.below(70)) as f64 / 100.0;
        let merged = if rng.chance(3) { 2 + rng.below(3) } else { 1 };
        let _ = writeln!(
            out,
            "\",\"observation_type\":\"{kind}\",\"source\":\"{source}\",\"timestamp\":\"{}\",\"priority\":\"{priority}\",\
             \"write_verdict\":\"{verdict}\",\"write_confidence\":{write_confidence:?},\"category_id\":\"{}\",\
             \"category_confidence\":{category_confidence:?},\"taxonomy_version\":1,\"merged_count\":{merged}}}",
            timestamp(day, ms),
            CATEGORIES[category].0
        );
    }

    /// One slog line in the exact format of `slog::Entry`.
    fn slog_line(&self, out: &mut String, rng: &mut Rng, n: u64, day: &str, ms: u64) {
        let action = rng.pick(SLOG_ACTIONS);
        let tool = rng.pick(SLOG_TOOLS);
        let _ = write!(
            out,
            "{{\"id\":\"sl-{:012x}\",\"ts\":\"{}\",\"action\":\"{action}\",\"tool\":\"{tool}\",\"detail\":\"",
            mix48(n),
            timestamp(day, ms)
        );
        let detail = rng_pick_str(rng, SLOG_DETAILS);
        self.expand(out, rng, detail, tool);
        out.push('"');
        if rng.chance(40) {
            out.push_str(",\"reason\":\"");
            let reason = rng_pick_str(rng, SLOG_REASONS);
            self.expand(out, rng, reason, tool);
            out.push('"');
        }
        if rng.chance(30) {
            let _ = write!(
                out,
                ",\"session\":\"ses-{:012x}\"",
                mix(0x51_0000 + n / 20) >> 16
            );
        }
        if rng.chance(60) {
            let _ = write!(
                out,
                ",\"actor\":\"{}\"",
                self.people_lower[rng.skewed(self.people_lower.len())]
            );
        }
        if rng.chance(30) {
            let _ = write!(
                out,
                ",\"tags\":[\"{}\"",
                rng.pick(&["infra", "prod", "staging", "security", "cost"])
            );
            if rng.chance(30) {
                let _ = write!(out, ",\"{}\"", rng.pick(&self.projects));
            }
            out.push(']');
        }
        out.push_str("}\n");
    }

    fn adr_title(&self, rng: &mut Rng) -> String {
        let mut t = String::new();
        let template = rng_pick_str(rng, ADR_TITLES);
        self.sentence(&mut t, rng, template);
        t
    }

    /// An ADR as `cairn adr new` writes it (frontmatter, heading, three sections).
    fn adr_text(
        &self,
        rng: &mut Rng,
        number: usize,
        title: &str,
        date: &str,
        supersedes: Option<usize>,
        superseded_by: Option<usize>,
    ) -> String {
        let status = if superseded_by.is_some() {
            "superseded"
        } else {
            match rng.below(20) {
                0..=11 => "accepted",
                12..=14 => "shipped",
                15 | 16 => "proposed",
                17 | 18 => "deprecated",
                _ => "rejected",
            }
        };
        let mut deciders_list = (0..1 + rng.below(3))
            .map(|_| self.people_lower[rng.below(self.people_lower.len() as u64) as usize].as_str())
            .collect::<Vec<_>>();
        deciders_list.sort_unstable();
        deciders_list.dedup();
        let tag = rng.pick(SLOG_TOOLS);
        let list = |n: Option<usize>| n.map_or("[]".to_string(), |n| format!("[{n}]"));
        let paragraph = |rng: &mut Rng| {
            let mut p = String::new();
            for i in 0..2 + rng.below(3) {
                if i > 0 {
                    p.push(' ');
                }
                let template = rng_pick_str(rng, if i == 0 { TEMPLATES[1] } else { MORE });
                self.sentence(&mut p, rng, template);
            }
            p
        };
        let context = paragraph(rng);
        let decision = paragraph(rng);
        let consequences = paragraph(rng);
        format!(
            "---\nnumber: {number}\ntitle: {title}\nstatus: {status}\ndate: {date}\ndeciders: [{}]\n\
             tags: [{tag}, ops]\nsupersedes: {}\nsuperseded-by: {}\n---\n# {number}. {title}\n\n\
             ## Context\n\n{context}\n\n## Decision\n\n{decision}\n\n## Consequences\n\n{consequences}\n",
            deciders_list.join(", "),
            list(supersedes),
            list(superseded_by),
        )
    }

    /// A MEMORY.md entry's text for a section.
    fn memory_entry(&self, out: &mut String, rng: &mut Rng, section: usize) {
        // MEMORY_SECTIONS order, mapped to CATEGORIES order.
        let category = [4, 3, 1, 0, 6, 2, 5][section];
        let template = rng_pick_str(rng, TEMPLATES[category]);
        self.sentence(out, rng, template);
    }
}

fn rng_pick_str(rng: &mut Rng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len() as u64) as usize]
}

// ---------------------------------------------------------------------------------------------
// Dates (UTC, as cairn names day files)

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn utc_today() -> String {
    civil_from_days((now_unix().as_secs() / 86_400) as i64)
}

fn utc_ms_of_day() -> u64 {
    (now_unix().as_millis() % 86_400_000) as u64
}

fn timestamp(day: &str, ms: u64) -> String {
    let ms = ms.min(86_399_999);
    format!(
        "{day}T{:02}:{:02}:{:02}.{:03}Z",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to `YYYY-MM-DD` (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn days_from_civil(date: &str) -> i64 {
    let y: i64 = date[..4].parse().expect("year");
    let m: i64 = date[5..7].parse().expect("month");
    let d: i64 = date[8..10].parse().expect("day");
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// ---------------------------------------------------------------------------------------------
// The report

fn thousands(n: u64) -> String {
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

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

/// The 1-minute load average, where Linux tells it.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "n/a".into())
}

fn print_report(
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
            // The issue's words: "<= 10 ms in words mode and <= 1.2x that in hybrid". Read
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
