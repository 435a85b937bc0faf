//! The fuzz driver: every parser of outside input (`targets.rs` says which entry point each
//! target calls) fed mutated copies of a seed corpus, on the stable toolchain (ADR text in the
//! closing note of issue 14: no nightly, so no cargo-fuzz; no coverage feedback either).
//!
//! ```text
//! scripts/fuzz [TARGET…] [--secs N] [--runs N] [--seed S] [--timeout-ms MS] [--rss-mb MB]
//!              [--replay] [--list] [--write-seeds]
//! ```
//!
//! Each target first replays its whole corpus (`fuzz/corpus/TARGET/`, where the inputs of
//! fixed crashes stay as regression seeds), then runs for `--secs` seconds (default 60) or
//! `--runs` executions (both given: whichever comes first), each input a seed with 1 to 16 stacked mutations (`mutate.rs`). An
//! execution fails when it panics (caught, the input saved to `fuzz/crashes/TARGET/`, the
//! run goes on), runs longer than `--timeout-ms` of CPU time or ten times that of wall time (a
//! hang: a watchdog thread saves the input and stops the process, exit 3) or lifts the
//! process's resident memory over `--rss-mb` (sampled every 10 ms by the same watchdog; saved,
//! exit 4). Inputs are capped in size per
//! target, so memory stays bounded by the cap times the parser's blow-up. Printed per target:
//! executions, seconds, executions a second, distinct crashes (by panic location), peak
//! resident memory. Exit 0 when nothing failed, 1 when something panicked.

mod console;
mod documents;
mod mutate;
mod reply;
mod targets;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// What the watchdog needs to know about the execution under way.
struct Running {
    target: &'static str,
    input: Vec<u8>,
    crashes: PathBuf,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);
/// Milliseconds since `EPOCH` when the current execution started; 0 between executions.
static STARTED_MS: AtomicU64 = AtomicU64::new(0);
/// How many executions have started: tells the watchdog one execution from the next.
static EXECS: AtomicU64 = AtomicU64::new(0);
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

struct Options {
    names: Vec<String>,
    secs: f64,
    /// `--secs` was given: with `--runs`, a cap on each target's time too.
    secs_given: bool,
    runs: Option<u64>,
    seed: u64,
    timeout: Duration,
    rss_mb: u64,
    replay_only: bool,
    list: bool,
    write_seeds: bool,
    root: PathBuf,
}

fn usage() -> ! {
    eprintln!(
        "usage: scripts/fuzz [TARGET…] [--secs N] [--runs N] [--seed S] [--timeout-ms MS] \
         [--rss-mb MB] [--replay] [--list] [--write-seeds]"
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut o = Options {
        names: Vec::new(),
        secs: 60.0,
        secs_given: false,
        runs: None,
        seed: 0x0c41_2a5e,
        timeout: Duration::from_secs(10),
        rss_mb: 2048,
        replay_only: false,
        list: false,
        write_seeds: false,
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |flag: &str| -> String {
            args.next().unwrap_or_else(|| {
                eprintln!("{flag} takes a value");
                usage()
            })
        };
        fn num<T: std::str::FromStr>(flag: &str, v: String) -> T {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{flag}: `{v}` is not a number");
                usage()
            })
        }
        match a.as_str() {
            "--secs" => {
                o.secs = num("--secs", value("--secs"));
                o.secs_given = true;
            }
            "--runs" => o.runs = Some(num("--runs", value("--runs"))),
            "--seed" => o.seed = num("--seed", value("--seed")),
            "--timeout-ms" => {
                o.timeout = Duration::from_millis(num("--timeout-ms", value("--timeout-ms")))
            }
            "--rss-mb" => o.rss_mb = num("--rss-mb", value("--rss-mb")),
            "--replay" => o.replay_only = true,
            "--list" => o.list = true,
            "--write-seeds" => o.write_seeds = true,
            "--bench" => {} // `cargo bench` passes it
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => {
                eprintln!("unknown option {s}");
                usage()
            }
            name => o.names.push(name.to_string()),
        }
    }
    o
}

fn main() {
    let o = options();
    let all = targets::all();
    if o.write_seeds {
        // Seeds made by code rather than kept by hand: the PDFs of the library tests' generator.
        let dir = o.root.join("corpus").join("pdf");
        for (name, bytes) in documents::pdf_seeds() {
            let path = dir.join(name);
            if let Err(e) =
                std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &bytes))
            {
                eprintln!("could not write {}: {e}", path.display());
                std::process::exit(2);
            }
            println!("{} ({} bytes)", path.display(), bytes.len());
        }
        return;
    }
    if o.list {
        for t in &all {
            println!("{:<14} {}", t.name, t.calls);
        }
        return;
    }
    for n in &o.names {
        if !all.iter().any(|t| t.name == n) {
            eprintln!("no target {n}: run with --list to see them");
            std::process::exit(2);
        }
    }
    panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{at}\t{payload}"));
        }
    }));
    watchdog(o.timeout, o.rss_mb);
    println!(
        "fuzz: seed {}, per input at most {} ms of CPU and {} MiB resident; load {}",
        o.seed,
        o.timeout.as_millis(),
        o.rss_mb,
        load()
    );
    println!(
        "{:<14} {:>10} {:>8} {:>9} {:>8} {:>9} {:>6}",
        "target", "execs", "secs", "execs/s", "crashes", "peak MiB", "seeds"
    );
    let mut total_execs = 0u64;
    let mut total_crashes = 0usize;
    let mut ran = 0;
    for t in all
        .iter()
        .filter(|t| o.names.is_empty() || o.names.iter().any(|n| n == t.name))
    {
        let (execs, crashes) = run_target(t, &o);
        total_execs += execs;
        total_crashes += crashes;
        ran += 1;
    }
    println!("{ran} targets, {total_execs} executions, {total_crashes} crashes");
    if total_crashes > 0 {
        std::process::exit(1);
    }
}

/// Runs one target; returns its executions and distinct crashes.
fn run_target(t: &targets::Target, o: &Options) -> (u64, usize) {
    let seeds = read_corpus(&o.root.join("corpus").join(t.name));
    let crashes_dir = o.root.join("crashes").join(t.name);
    reset_peak_rss();
    let started = Instant::now();
    let mut execs = 0u64;
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    let exec = |input: &[u8], found: &mut BTreeMap<String, PathBuf>| {
        if let Some(at) = execute(t, input, &crashes_dir) {
            let key = at.split('\t').next().unwrap_or_default().to_string();
            found.entry(key).or_insert_with(|| {
                let path = save(&crashes_dir, "crash", input);
                eprintln!(
                    "{}: panicked at {at}\n  input saved to {}",
                    t.name,
                    path.display()
                );
                path
            });
        }
    };
    for seed in &seeds {
        exec(seed, &mut found);
        execs += 1;
    }
    if !o.replay_only {
        let mut m = mutate::Mutator::new(o.seed ^ hash64(t.name), t.dict, t.max_len);
        let budget = Duration::from_secs_f64(o.secs);
        let empty = vec![Vec::new()];
        let pool = if seeds.is_empty() { &empty } else { &seeds };
        let mut input = Vec::with_capacity(t.max_len);
        loop {
            match o.runs {
                Some(runs) if execs >= runs => break,
                Some(_) if o.secs_given && started.elapsed() >= budget => break,
                None if started.elapsed() >= budget => break,
                _ => {}
            }
            m.next(pool, &mut input);
            exec(&input, &mut found);
            execs += 1;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{:<14} {:>10} {:>8.1} {:>9.0} {:>8} {:>9.0} {:>6}",
        t.name,
        execs,
        secs,
        execs as f64 / secs.max(1e-9),
        found.len(),
        peak_rss_mb(),
        seeds.len()
    );
    let _ = std::io::stdout().flush();
    (execs, found.len())
}

/// Runs one input; the panic's location and message when it panicked.
fn execute(t: &targets::Target, input: &[u8], crashes: &Path) -> Option<String> {
    if let Ok(mut running) = RUNNING.lock() {
        match running.as_mut() {
            Some(r) if r.target == t.name => {
                r.input.clear();
                r.input.extend_from_slice(input);
            }
            _ => {
                *running = Some(Running {
                    target: t.name,
                    input: input.to_vec(),
                    crashes: crashes.to_path_buf(),
                })
            }
        }
    }
    EXECS.fetch_add(1, Ordering::SeqCst);
    STARTED_MS.store(now_ms(), Ordering::SeqCst);
    let result = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(input)));
    STARTED_MS.store(0, Ordering::SeqCst);
    match result {
        Ok(()) => None,
        Err(_) => Some(
            LAST_PANIC
                .lock()
                .ok()
                .and_then(|mut p| p.take())
                .unwrap_or_else(|| "unknown\t".into()),
        ),
    }
}

/// A thread that stops the process when an execution runs past `timeout` of CPU time (the
/// main thread's, so that a loaded machine does not make a slow input a hang) or past ten
/// times `timeout` of wall time (an input that blocks), or the resident memory passes
/// `rss_mb`, after saving the input.
fn watchdog(timeout: Duration, rss_mb: u64) {
    std::thread::spawn(move || {
        // The execution last seen, and the main thread's CPU time when it was first seen.
        let mut seen = (0u64, Duration::ZERO);
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let started = STARTED_MS.load(Ordering::SeqCst);
            if started == 0 {
                continue;
            }
            let cpu = main_thread_cpu();
            let exec = EXECS.load(Ordering::SeqCst);
            if seen.0 != exec {
                seen = (exec, cpu);
            }
            let ran_cpu = cpu.saturating_sub(seen.1);
            let ran = Duration::from_millis(now_ms().saturating_sub(started));
            let rss = rss_mb_now();
            let (kind, code) = if ran_cpu > timeout || ran > timeout * 10 {
                ("hang", 3)
            } else if rss > rss_mb as f64 {
                ("oom", 4)
            } else {
                continue;
            };
            let Ok(running) = RUNNING.lock() else {
                std::process::exit(code)
            };
            if let Some(r) = running.as_ref() {
                let path = save(&r.crashes, kind, &r.input);
                eprintln!(
                    "{}: {kind}: an input ran {} ms ({} ms of CPU) with {:.0} MiB resident (limits {} ms of CPU, {} MiB)\n  input saved to {}",
                    r.target,
                    ran.as_millis(),
                    ran_cpu.as_millis(),
                    rss,
                    timeout.as_millis(),
                    rss_mb,
                    path.display()
                );
                println!("{}: stopped by a {kind}", r.target);
            }
            std::process::exit(code);
        }
    });
}

/// The CPU time (user and system) of the main thread, from /proc (in clock ticks of 10 ms).
fn main_thread_cpu() -> Duration {
    let pid = std::process::id();
    std::fs::read_to_string(format!("/proc/self/task/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command name, which is in parentheses and may hold spaces.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(Duration::from_millis(ticks * 10))
        })
        .unwrap_or_default()
}

fn save(dir: &Path, kind: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let hex: String = Sha256::digest(input)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join(format!("{kind}-{hex}"));
    let _ = std::fs::write(&path, input);
    path
}

fn read_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths
        .iter()
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

fn hash64(s: &str) -> u64 {
    let d = Sha256::digest(s.as_bytes());
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// A field of /proc/self/status in MiB (its values are in kB).
fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn rss_mb_now() -> f64 {
    status_mb("VmRSS:")
}

fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// Starts the peak resident memory (VmHWM) again from the current, so that each target's
/// peak is its own (Linux: writing 5 to clear_refs).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
