//! Reflection at scale: `cairn reflect` (built-in reflector) over 10,000 observations.
//!
//! Run with `scripts/bench-reflect` (or `cargo bench --bench reflect -- [--observations N]
//! [--runs N]`; `CAIRN_BENCH_OBSERVATIONS` and `CAIRN_BENCH_RUNS` set the defaults,
//! `CAIRN_BENCH_KEEP=1` keeps the work folder). The bench
//!
//! 1. makes a repository with `--observations` observations (10,000 by default) in seven
//!    categories, imported with `cairn import observations --raw` (one commit): texts built from
//!    phrases of what coding sessions record (rules, preferences, hosts, modules, error fixes),
//!    one in eight a near-duplicate of an earlier one (other case, a word added, punctuation),
//!    a tenth held and a tenth below the confidence floor; MEMORY.md holds 40 entries, some of
//!    which the observations repeat;
//! 2. copies that prepared folder afresh for each run and times the whole `cairn reflect`
//!    process (proposals written, committed, one ref per proposal), median of `--runs`;
//! 3. times two references on the same copy: ripgrep (or grep) counting the observation lines
//!    and `git status`; and reflect's CPU time (user + system), which a loaded machine does not
//!    inflate as it does the wall time.
//!
//! Target (issue 11): under 2 s.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{copy_dir, git, load, median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T10:00:00Z";

fn main() {
    let n = setting("--observations", "CAIRN_BENCH_OBSERVATIONS", 10_000usize);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 5usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-reflect-")
        .tempdir()
        .expect("temp dir");
    let root = work.path().to_path_buf();
    println!(
        "cairn reflect bench: {n} observations, {runs} runs; load {}",
        load()
    );

    // 1. The prepared repository.
    let prepared = root.join("prepared");
    init(&prepared);
    std::fs::write(prepared.join("MEMORY.md"), memory()).expect("write MEMORY.md");
    git(&prepared, &["add", "MEMORY.md"]);
    git(&prepared, &["commit", "-qm", "memory"]);
    let file = root.join("observations.jsonl");
    std::fs::write(&file, observations(n)).expect("write observations");
    let (import_time, out) = timed(cairn(
        &prepared,
        &[
            "--json",
            "--now",
            NOW,
            "import",
            "observations",
            "--raw",
            file.to_str().unwrap(),
        ],
    ));
    assert!(
        out.status.success(),
        "import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "prepared: {n} observations imported in {:.2} s",
        import_time.as_secs_f64()
    );

    // 2. Reflect, each run on a fresh copy.
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut last = serde_json::Value::Null;
    let mut reference_rg = Vec::new();
    let mut reference_status = Vec::new();
    for r in 0..runs {
        let copy = root.join(format!("run{r}"));
        copy_dir(&prepared, &copy);
        let (rg, name) = rg_reference(&copy);
        reference_rg.push((rg, name));
        let mut status = Command::new("git");
        status.arg("-C").arg(&copy).args(["status", "--porcelain"]);
        reference_status.push(timed(status).0);
        let cpu_before = children_cpu();
        let (t, out) = timed(cairn(&copy, &["--json", "--now", NOW, "reflect"]));
        if let (Some(a), Some(b)) = (cpu_before, children_cpu()) {
            cpu.push(b.saturating_sub(a));
        }
        assert!(
            out.status.success(),
            "reflect: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        last = data_of(&out, "reflect");
        times.push(t);
        let _ = std::fs::remove_dir_all(&copy);
    }
    let median_reflect = median(&mut times);
    let rg_name = reference_rg.first().map_or("rg", |r| r.1);
    let mut rg_times: Vec<Duration> = reference_rg.iter().map(|r| r.0).collect();
    let rg = median(&mut rg_times);
    let status = median(&mut reference_status);
    let c = &last["counts"];

    println!();
    println!("measure                                        figure       target");
    println!(
        "reflect, builtin, {n} observations (median of {runs})  {:>8.0} ms   < 2000 ms  {}",
        ms(median_reflect),
        verdict(median_reflect < Duration::from_secs(2))
    );
    if !cpu.is_empty() {
        let cpu = median(&mut cpu);
        println!(
            "  reflect's CPU time, user + system (median)  {:>8.0} ms   < 2000 ms  {}",
            ms(cpu),
            verdict(cpu < Duration::from_secs(2))
        );
    }
    println!(
        "  {rg_name} over the observation files             {:>8.1} ms   ({:.0}x faster than reflect)",
        ms(rg),
        median_reflect.as_secs_f64() / rg.as_secs_f64().max(1e-9)
    );
    println!(
        "  git status on the same repository           {:>8.1} ms",
        ms(status)
    );
    println!(
        "  read {} observations: {} reflected on, {} not allowed, {} below the floor; {} already said, {} joined; {} proposals {} ({} refs made)",
        c["observations"],
        c["reflected"],
        c["not_allowed"],
        c["weak"],
        c["said"],
        c["joined"],
        c["proposed"],
        c["by_op"],
        last["refs"]["made"]
    );
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

/// Phrases per category: (category, subjects, claims).
const PHRASES: &[(&str, &[&str], &[&str])] = &[
    (
        "rules-conventions",
        &[
            "every commit",
            "the release branch",
            "pull requests",
            "migrations",
            "public APIs",
            "test names",
            "error messages",
            "log lines",
            "config keys",
            "feature flags",
        ],
        &[
            "must pass cargo clippy with -D warnings before merging",
            "are reviewed by two people when they touch {x}",
            "never use unwrap outside tests in {x}",
            "follow the naming of {x} in snake_case",
            "need a changelog entry naming {x}",
            "are written in lower case without a trailing period in {x}",
        ],
    ),
    (
        "preferences",
        &[
            "the user",
            "Ana",
            "the team",
            "the maintainer",
            "Bruno",
            "the reviewer",
        ],
        &[
            "prefers small commits with messages that say why in {x}",
            "likes tables over prose when comparing {x}",
            "wants answers without emoji and without filler about {x}",
            "prefers pnpm over npm for {x}",
            "prefers rg over grep when searching {x}",
        ],
    ),
    (
        "system-architecture",
        &[
            "src/git.rs",
            "src/index/",
            "the recall pipeline",
            "the vector store",
            "src/provider/",
            "the observation store",
            "the tokenizer",
            "the proposals file",
        ],
        &[
            "is the only importer of {x}",
            "keeps its state in .cairn/ and rebuilds it from {x}",
            "folds events over records when reading {x}",
            "talks to {x} through one trait",
            "stores int8 vectors with a scale per row for {x}",
        ],
    ),
    (
        "operations",
        &[
            "db2.internal",
            "the staging cluster",
            "the backup host",
            "nfs-01",
            "the CI runners",
            "the metrics stack",
            "the VPN gateway",
            "build-07",
        ],
        &[
            "needs root to unmount {x}",
            "restarts nightly at 02:00 after rotating {x}",
            "is reached only through the VPN from {x}",
            "runs out of disk when the logs of {x} are not pruned",
            "deploys go through {x} before production",
        ],
    ),
    (
        "memory-system",
        &[
            "cairn",
            "MEMORY.md",
            "the observer",
            "recall",
            "the briefing",
        ],
        &[
            "records decisions as ADRs under decisions/ about {x}",
            "is injected into every session and must stay under budget for {x}",
            "should recall {x} with the lean profile",
        ],
    ),
    (
        "projects",
        &[
            "issue 11",
            "the 1.0 release",
            "the sync command",
            "the review UI",
            "the eval harness",
        ],
        &[
            "ships after {x} is merged",
            "is blocked on {x}",
            "needs a benchmark beside {x}",
            "was split from {x}",
        ],
    ),
    (
        "people-relationships",
        &[
            "Ana",
            "Bruno",
            "Chen",
            "Dara",
            "the infra team",
            "the docs team",
        ],
        &[
            "owns {x} and decides its changes",
            "reviews everything that touches {x}",
            "is the contact for {x} on call",
        ],
    ),
];

const OBJECTS: &[&str] = &[
    "the importer",
    "the hooks",
    "the index",
    "the README",
    "the eval split",
    "the lockfile",
    "the Dockerfile",
    "the nightly job",
    "the schema",
    "the CLI",
    "the cache",
    "the API keys",
    "the telemetry",
    "the fixtures",
    "the benchmarks",
    "the proposals",
    "the MEMORY.md budget",
];

/// A deterministic pseudo-random sequence (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn observations(n: usize) -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut texts: Vec<(String, &str)> = Vec::with_capacity(n);
    let mut out = String::new();
    for i in 0..n {
        let (text, category) = if i > 50 && i % 8 == 0 {
            // A near-duplicate of an earlier observation.
            let (t, c) = &texts[(rng.next() % texts.len() as u64) as usize];
            let t = match rng.next() % 3 {
                0 => t.to_lowercase(),
                1 => format!("{t} as agreed"),
                _ => format!("{}.", t.trim_end_matches('.')),
            };
            (t, *c)
        } else if i % 23 == 0 {
            let program = rng.pick(&["cargo test", "npm publish", "make release", "pytest -x"]);
            let error = rng.pick(&[
                "error: linker `cc` not found",
                "npm ERR! code E403",
                "No rule to make target 'dist'",
                "ModuleNotFoundError: No module named 'yaml'",
            ]);
            (
                format!(
                    "`{program}` failed (exit 1: {error}); `{program}` then succeeded after changes to {}",
                    rng.pick(OBJECTS)
                ),
                "operations",
            )
        } else {
            let (category, subjects, claims) =
                PHRASES[(rng.next() % PHRASES.len() as u64) as usize];
            let claim = rng.pick(claims).replace("{x}", rng.pick(OBJECTS));
            (
                format!("{} {claim}", capitalize(rng.pick(subjects))),
                category,
            )
        };
        let verdict = if i % 10 == 3 { "hold" } else { "allow" };
        let confidence = if i % 10 == 7 {
            0.3
        } else {
            0.6 + (i % 4) as f64 * 0.1
        };
        let merged = 1 + (rng.next() % 5) as u32 * u32::from(i % 3 == 0);
        let line = serde_json::json!({
            "observation": text,
            "category_id": category,
            "write_verdict": verdict,
            "write_confidence": confidence,
            "merged_count": merged,
            "timestamp": format!("2026-11-{:02}T{:02}:{:02}:00Z", 1 + i % 28, i % 24, i % 60),
            "source": format!("bench:{i}"),
            "session_id": format!("claude/bench-{}", i / 40),
        });
        out.push_str(&line.to_string());
        out.push('\n');
        texts.push((text, category));
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// MEMORY.md with 40 entries over the sections, some of which the observations repeat.
fn memory() -> String {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut out = String::from("# Memory\n");
    for (category, subjects, claims) in PHRASES {
        let heading = match *category {
            "rules-conventions" => "Rules and conventions",
            "preferences" => "Preferences",
            "system-architecture" => "System architecture",
            "operations" => "Operations",
            "memory-system" => "Memory system",
            "projects" => "Projects",
            _ => "People and relationships",
        };
        out.push_str(&format!("\n## {heading}\n\n"));
        for _ in 0..6 {
            let claim = rng.pick(claims).replace("{x}", rng.pick(OBJECTS));
            out.push_str(&format!(
                "- (2026-10-{:02}) {} {claim}\n",
                1 + rng.next() % 28,
                capitalize(rng.pick(subjects))
            ));
        }
    }
    out
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

/// CPU time (user + system) of this process's waited-for children so far, from
/// /proc/self/stat (`cutime`, `cstime`, in clock ticks): on a loaded machine the wall time
/// measures the queue for the cores as much as cairn, and this does not.
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // cutime and cstime are fields 16 and 17 of the whole line: 13 and 14 after the name.
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    let hz = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(100);
    Some(Duration::from_secs_f64(ticks as f64 / hz as f64))
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

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

/// ripgrep (or grep) counting the observation lines: the floor of reading the same files.
fn rg_reference(repo: &Path) -> (Duration, &'static str) {
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let dir = repo.join("vault/observations");
    let cmd = if rg {
        let mut c = Command::new("rg");
        c.args(["-c", "--no-messages", "\"observation\""]).arg(dir);
        c
    } else {
        let mut c = Command::new("grep");
        c.args(["-r", "-c", "\"observation\""]).arg(dir);
        c
    };
    (timed(cmd).0, if rg { "rg -c" } else { "grep -rc" })
}
