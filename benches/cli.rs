//! Whole-process wall time of the cairn commands an agent runs all day, next to the git CLI
//! making the same commit, on a fresh repository and on a year's worth of repository.
//!
//! Run with `scripts/bench` (or `cargo bench --bench cli -- [--runs N]`; `CAIRN_BENCH_RUNS`
//! sets the default). Each row spawns the process, waits for it and measures with
//! [`Instant`]; the table shows the median, p90, min and max over the timed runs, after
//! three warm-up runs (p90 is nearest-rank). `CAIRN_BENCH_KEEP=1` keeps the repositories for a
//! look afterwards. Both repositories are built before the first timed run, so nothing
//! else runs between rows.
//!
//! The targets (from the issue): `cairn slog --no-commit` under 5 ms; `cairn slog` with its
//! commit faster than the git CLI making the same commit; both flat from a fresh repository
//! to a year-old one (70,000 slog entries in 365 day files, 500 ADRs).

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const DEFAULT_RUNS: usize = 30;
const WARMUP: usize = 3;
/// The year repository: day files, entries in them (today's included), entries today, ADRs.
const YEAR_DAYS: i64 = 365;
const YEAR_ENTRIES: usize = 70_000;
const TODAY_ENTRIES: usize = 200;
const YEAR_ADRS: usize = 500;
/// "Flat" for the verdict: the year repository's median at most this many times the fresh one's.
const FLAT_FACTOR: f64 = 1.25;

const SLOG_ACTION: &str = "deploy";
const SLOG_TOOL: &str = "caddy";
const SLOG_DETAIL: &str = "rolled out caddy 2.8.4 to both edge nodes with the new tls block";
const ADR_TITLE: &str = "Use caddy for tls termination on the edge nodes";

fn main() {
    let runs = match parse_args() {
        Ok(runs) => runs,
        Err(msg) => {
            eprintln!("{msg}");
            eprintln!(
                "usage: cargo bench --bench cli -- [--runs N | N]   (default {DEFAULT_RUNS}, or CAIRN_BENCH_RUNS)"
            );
            std::process::exit(2);
        }
    };
    let scratch = tempfile::Builder::new()
        .prefix("cairn-bench-")
        .tempdir()
        .unwrap_or_else(|e| die(format!("cannot make a temporary directory: {e}")));
    let _ = SCRATCH.set(scratch.path().to_path_buf());
    let env = BenchEnv::new(scratch.path());
    let today = utc_today();

    eprintln!("bench: building the fresh repository …");
    let fresh = scratch.path().join("fresh");
    env.cairn_ok(
        scratch.path(),
        &["init".as_ref(), fresh.as_os_str()],
        "cairn init (fresh)",
    );
    check_day_file(&env, &fresh, &today);

    eprintln!("bench: building the year repository (365 day files, 70,000 entries, 500 ADRs) …");
    let year = scratch.path().join("year");
    let year_commits = build_year_repo(&env, &year, &today);

    let load_before = load_average();
    let git_version = run_ok(
        env.command("git", scratch.path()).arg("--version"),
        "git --version",
    );
    let git_version = String::from_utf8_lossy(&git_version.stdout)
        .trim()
        .to_string();

    let repos = [("fresh", &fresh), ("year", &year)];
    let mut table: Vec<[Stats; 2]> = Vec::new();
    for row in Row::ALL {
        let mut cells = Vec::new();
        for (name, dir) in repos {
            eprintln!(
                "bench: {} in the {name} repository ({WARMUP} warm-up + {runs} runs) …",
                row.label()
            );
            cells.push(measure(&env, row, dir, &today, name, runs));
        }
        table.push([cells[0].clone(), cells[1].clone()]);
    }
    if utc_today() != today {
        eprintln!(
            "bench: warning: the UTC day changed during the run; late slog runs went to a new day file"
        );
    }

    print_report(
        &Header {
            runs,
            git_version,
            year_commits,
            today: &today,
            load: (load_before, load_average()),
        },
        &table,
    );
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        eprintln!(
            "bench: kept the repositories in {}",
            scratch.keep().display()
        );
    }
}

fn parse_args() -> Result<usize, String> {
    let mut runs = match std::env::var("CAIRN_BENCH_RUNS") {
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("CAIRN_BENCH_RUNS must be a number, not `{v}`"))?,
        Err(_) => DEFAULT_RUNS,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            // cargo passes --bench to every bench target.
            "--bench" => continue,
            "--runs" | "-n" => args.next().ok_or("--runs needs a number")?,
            _ if arg.starts_with("--runs=") => arg["--runs=".len()..].to_string(),
            _ if arg.parse::<usize>().is_ok() => arg,
            "-h" | "--help" => return Err("cairn CLI benchmark".into()),
            _ => return Err(format!("unknown argument `{arg}`")),
        };
        runs = value
            .parse()
            .map_err(|_| format!("the number of runs must be a number, not `{value}`"))?;
    }
    if runs == 0 {
        return Err("the number of runs must be at least 1".into());
    }
    Ok(runs)
}

fn die(msg: impl std::fmt::Display) -> ! {
    eprintln!("bench aborted: {msg}");
    if let Some(dir) = SCRATCH.get() {
        eprintln!(
            "bench: the repositories are left in {} for a look",
            dir.display()
        );
    }
    std::process::exit(1);
}

/// The scratch directory, named when the bench aborts (exiting skips its removal).
static SCRATCH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

// ---------------------------------------------------------------------------------------------
// Processes

/// The environment every child gets: nothing inherited but PATH (so no CAIRN_* or GIT_*), a
/// HOME of its own whose .gitconfig holds an identity, and no system git config. cairn (gix)
/// and the git CLI read the same identity from it.
struct BenchEnv {
    vars: Vec<(&'static str, OsString)>,
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
        BenchEnv { vars }
    }

    fn command(&self, program: &str, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null());
        cmd
    }

    fn cairn(&self, cwd: &Path, args: &[&std::ffi::OsStr]) -> Command {
        let mut cmd = self.command(CAIRN, cwd);
        cmd.args(args);
        cmd
    }

    /// git for building repositories, with the identity spelled out.
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

    fn cairn_ok(&self, cwd: &Path, args: &[&std::ffi::OsStr], what: &str) -> Output {
        run_ok(&mut self.cairn(cwd, args), what)
    }

    fn git_ok(&self, cwd: &Path, args: &[&str]) -> Output {
        run_ok(&mut self.git(cwd, args), &format!("git {}", args.join(" ")))
    }
}

/// Runs `cmd` to completion and aborts the bench if it failed.
fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| die(format!("`{what}` could not be started: {e}")));
    check(&out, what);
    out
}

fn check(out: &Output, what: &str) {
    if !out.status.success() {
        die(format!(
            "`{what}` failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim_end(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Rows

#[derive(Clone, Copy)]
enum Row {
    SlogNoCommit,
    SlogCommit,
    AdrNew,
    GitCli,
}

impl Row {
    const ALL: [Row; 4] = [Row::SlogNoCommit, Row::SlogCommit, Row::AdrNew, Row::GitCli];

    fn label(self) -> &'static str {
        match self {
            Row::SlogNoCommit => "1 cairn slog --no-commit",
            Row::SlogCommit => "2 cairn slog (+ gix commit)",
            Row::AdrNew => "3 cairn adr new (+ commit)",
            Row::GitCli => "4 git CLI: append+add+commit",
        }
    }
}

/// One process (or, for the git CLI, the append and both processes) timed end to end.
fn run_once(env: &BenchEnv, row: Row, repo: &Path, today: &str, n: usize, what: &str) -> Duration {
    let repo_os = repo.as_os_str();
    let cairn = |args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> = vec!["--repo".as_ref(), repo_os];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let mut cmd = env.cairn(repo, &all);
        let start = Instant::now();
        let out = cmd
            .output()
            .unwrap_or_else(|e| die(format!("{what}: cannot start cairn: {e}")));
        let took = start.elapsed();
        check(&out, &format!("{what}: cairn {}", args.join(" ")));
        took
    };
    match row {
        Row::SlogNoCommit => cairn(&["slog", SLOG_ACTION, SLOG_TOOL, SLOG_DETAIL, "--no-commit"]),
        Row::SlogCommit => cairn(&["slog", SLOG_ACTION, SLOG_TOOL, SLOG_DETAIL]),
        Row::AdrNew => cairn(&["adr", "new", ADR_TITLE]),
        Row::GitCli => {
            let rel = format!("slog/{today}.jsonl");
            let id = format!(
                "sl-{:012x}",
                (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
            );
            let line = format!(
                "{{\"id\":\"{id}\",\"ts\":\"{today}T12:00:00.000Z\",\"action\":\"{SLOG_ACTION}\",\"tool\":\"{SLOG_TOOL}\",\"detail\":\"{SLOG_DETAIL}\"}}\n"
            );
            let message = format!("slog: {SLOG_ACTION} {SLOG_TOOL}\n\nCairn-Slog: {id}\n");
            // The identity comes from HOME's .gitconfig, as it does for cairn.
            let mut add = env.command("git", repo);
            add.args(["add", "--", &rel]);
            let mut commit = env.command("git", repo);
            commit.args(["commit", "-q", "-m", &message]);
            let start = Instant::now();
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(repo.join(&rel))
                .unwrap_or_else(|e| die(format!("{what}: cannot open {rel}: {e}")));
            file.write_all(line.as_bytes())
                .unwrap_or_else(|e| die(format!("{what}: cannot append to {rel}: {e}")));
            drop(file);
            let added = add
                .output()
                .unwrap_or_else(|e| die(format!("{what}: cannot start git: {e}")));
            check(&added, &format!("{what}: git add"));
            let committed = commit
                .output()
                .unwrap_or_else(|e| die(format!("{what}: cannot start git: {e}")));
            let took = start.elapsed();
            check(&committed, &format!("{what}: git commit"));
            took
        }
    }
}

fn measure(
    env: &BenchEnv,
    row: Row,
    repo: &Path,
    today: &str,
    repo_name: &str,
    runs: usize,
) -> Stats {
    let what = format!("{} ({repo_name} repository)", row.label());
    for n in 0..WARMUP {
        run_once(env, row, repo, today, n, &what);
    }
    let times: Vec<Duration> = (0..runs)
        .map(|n| run_once(env, row, repo, today, WARMUP + n, &what))
        .collect();
    Stats::of(times)
}

#[derive(Clone)]
struct Stats {
    median: Duration,
    p90: Duration,
    min: Duration,
    max: Duration,
}

impl Stats {
    fn of(mut times: Vec<Duration>) -> Stats {
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
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Repositories

/// Runs one `cairn slog --no-commit --json` and checks it wrote to the day file this bench
/// computed as today (UTC), so the year repository's "today" is the one cairn appends to.
fn check_day_file(env: &BenchEnv, repo: &Path, today: &str) {
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["--json".as_ref(), "--repo".as_ref(), repo.as_os_str()];
    for a in [
        "slog",
        "configure",
        "cairn",
        "made the knowledge repository",
        "--no-commit",
    ] {
        args.push(a.as_ref());
    }
    let out = env.cairn_ok(repo, &args, "cairn --json slog (day-file check)");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        die(format!(
            "cairn --json slog did not print JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        ))
    });
    let want = format!("slog/{today}.jsonl");
    let path = json.pointer("/data/path").and_then(|p| p.as_str());
    if path != Some(want.as_str()) {
        die(format!(
            "cairn wrote to {path:?}, but the bench computed today's day file as {want}; output: {json}"
        ));
    }
}

/// Builds the year repository: `cairn init`, then 365 day files ending today (70,000 entries,
/// today's ~200) committed by the git CLI one month at a time, then 500 ADRs in one commit,
/// then `git gc` (a year-old repository has long been packed). Returns the commits made.
fn build_year_repo(env: &BenchEnv, year: &Path, today: &str) -> usize {
    let parent = year.parent().expect("the scratch directory");
    env.cairn_ok(
        parent,
        &["init".as_ref(), year.as_os_str()],
        "cairn init (year)",
    );
    let mut rng = Rng(0x00c0_ffee_cafe_f00d);
    let vocab = Vocab::new();
    let today_days = days_from_civil(today);
    let first = today_days - (YEAR_DAYS - 1);

    // Entries per day: 200 today; the rest shared by the other days, jittered in pairs so the
    // total stays exact.
    let others = (YEAR_DAYS - 1) as usize;
    let rest = YEAR_ENTRIES - TODAY_ENTRIES;
    let mut counts: Vec<usize> = (0..others)
        .map(|i| rest / others + usize::from(i < rest % others))
        .collect();
    for pair in counts.chunks_mut(2) {
        if let [a, b] = pair {
            let d = (rng.below(120) as usize).min(*b - 1);
            *a += d;
            *b -= d;
        }
    }
    counts.push(TODAY_ENTRIES);
    assert_eq!(counts.iter().sum::<usize>(), YEAR_ENTRIES);

    let slog_dir = year.join("slog");
    let mut commits = 0;
    let mut month_of_batch = String::new();
    let mut last_day = String::new();
    let commit_month = |month: &str, last_day: &str, commits: &mut usize| {
        env.git_ok(year, &["add", "--", "slog"]);
        let mut cmd = env.git(year, &["commit", "-q", "-m", &format!("slog: {month}")]);
        let date = format!("{last_day}T23:30:00Z");
        cmd.env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        run_ok(&mut cmd, &format!("git commit (slog {month})"));
        *commits += 1;
    };
    for (i, &count) in counts.iter().enumerate() {
        let day = civil_from_days(first + i as i64);
        let month = day[..7].to_string();
        if !month_of_batch.is_empty() && month != month_of_batch {
            commit_month(&month_of_batch, &last_day, &mut commits);
        }
        month_of_batch = month;
        // Today's entries end before now; other days spread over the whole day.
        let span_ms: u64 = if day == today {
            utc_ms_of_day().max(count as u64)
        } else {
            86_400_000
        };
        let mut text = String::with_capacity(count * 260);
        for k in 0..count {
            let ms = span_ms * k as u64 / count as u64 + rng.below(span_ms / count as u64);
            text.push_str(&slog_line(&vocab, &mut rng, &day, ms));
        }
        let path = slog_dir.join(format!("{day}.jsonl"));
        fs::write(&path, text)
            .unwrap_or_else(|e| die(format!("cannot write {}: {e}", path.display())));
        last_day = day;
    }
    commit_month(&month_of_batch, &last_day, &mut commits);

    let decisions = year.join("decisions");
    for n in 1..=YEAR_ADRS {
        let day = civil_from_days(first + (n as i64 * (YEAR_DAYS - 1)) / YEAR_ADRS as i64);
        let (title, slug) = adr_title(&vocab, &mut rng);
        let path = decisions.join(format!("{n:04}-{slug}.md"));
        fs::write(&path, adr_text(&vocab, &mut rng, n, &title, &day))
            .unwrap_or_else(|e| die(format!("cannot write {}: {e}", path.display())));
    }
    env.git_ok(year, &["add", "--", "decisions"]);
    env.git_ok(year, &["commit", "-q", "-m", "adr: 500 decisions"]);
    commits += 1;
    env.git_ok(year, &["gc", "-q"]);
    let status = env.git_ok(year, &["status", "--porcelain"]);
    if !status.stdout.is_empty() {
        die(format!(
            "the year repository is not clean after building it:\n{}",
            String::from_utf8_lossy(&status.stdout)
        ));
    }
    commits
}

/// Word lists for the generated slog entries and ADRs (`|` separates items).
const ACTIONS: &str = "deploy|deploy|deploy|fix|fix|configure|configure|restart|upgrade|rollback|\
    investigate|migrate|rotate|scale|backup|restore|install|remove|tune|test";
const TOOLS: &str = "caddy|redis|postgres|nginx|docker|systemd|grafana|prometheus|loki|k3s|terraform|\
    ansible|github-actions|cloudflare|minio|rabbitmq|vault|cron|letsencrypt|node-exporter|pgbouncer|\
    sentry|tailscale|wireguard|backup-script";
const WORDS: &str = "the|the|the|a|to|to|on|on|for|for|with|after|before|and|and|from|in|in|of|of|\
    staging|production|prod|edge|node|nodes|worker|primary|replica|cluster|config|service|container|\
    image|volume|disk|memory|cpu|timeout|limit|limits|pool|connections|certificate|cert|tls|dns|port|\
    health|check|checks|alert|alerts|dashboard|metrics|logs|retention|cache|queue|job|jobs|cron|\
    schedule|nightly|backup|snapshot|restore|migration|schema|index|query|slow|latency|p99|errors|5xx|\
    restart|restarted|loop|crash|oom|killed|bumped|raised|lowered|pinned|version|upgraded|rolled|back|\
    out|enabled|disabled|added|removed|rotated|secret|key|token|expired|renewed|fixed|typo|path|env|\
    variable|flag|rollout|canary|green|blue|traffic|load|balancer|upstream|proxy|header|rate|burst|\
    quota|firewall|rule|ssh|access|user|group|permissions|owner|mount|nfs|s3|bucket|lifecycle|policy|\
    because|was|is|now|again|still|failing|passing|v2|3.1|1.27|16|8.2|2.8|deploy|during|incident|by|\
    one|two";
const REASONS: &str = "alerts were firing overnight|requested in the weekly review|security advisory|\
    disk was at 91 percent|p99 latency regressed after the last release|\
    certificate expires in 7 days|the old version is end of life|customer reported timeouts|\
    cost reduction|flaky health checks during deploys|planned maintenance window|\
    follow-up to the incident review|memory leak in the worker|new region coming online|\
    compliance audit";
const ADR_VERBS: &str = "Use|Adopt|Prefer|Keep|Move to|Standardize on|Drop|Pin";
const ADR_THINGS: &str = "caddy|postgres|redis|k3s|terraform|ansible|loki|prometheus|minio|tailscale|\
    systemd timers|github actions|pgbouncer|sqlite|nats|restic|sops|renovate";
const ADR_PURPOSES: &str = "for tls termination|for the job queue|for session storage|for backups|\
    for secrets|for metrics|for log shipping|for config management|for service discovery|\
    for deploys|in staging|on the edge nodes|for the internal network|for database pooling|\
    for scheduled jobs";
const STATUSES: &str = "accepted|accepted|accepted|accepted|proposed|deprecated";
const PEOPLE: &str = "ana|ben|chen|dara|eli|claude|codex";

struct Vocab {
    actions: Vec<&'static str>,
    tools: Vec<&'static str>,
    words: Vec<&'static str>,
    reasons: Vec<&'static str>,
    adr_verbs: Vec<&'static str>,
    adr_things: Vec<&'static str>,
    adr_purposes: Vec<&'static str>,
    statuses: Vec<&'static str>,
    people: Vec<&'static str>,
}

impl Vocab {
    fn new() -> Vocab {
        let list = |s: &'static str| s.split('|').map(str::trim).collect::<Vec<_>>();
        Vocab {
            actions: list(ACTIONS),
            tools: list(TOOLS),
            words: list(WORDS),
            reasons: list(REASONS),
            adr_verbs: list(ADR_VERBS),
            adr_things: list(ADR_THINGS),
            adr_purposes: list(ADR_PURPOSES),
            statuses: list(STATUSES),
            people: list(PEOPLE),
        }
    }

    /// `min..=max` random words, space-separated.
    fn phrase(&self, rng: &mut Rng, min: u64, max: u64) -> String {
        let n = min + rng.below(max - min + 1);
        (0..n)
            .map(|_| rng.pick(&self.words))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One slog line in the exact shape cairn writes (reason present in about 60% of entries).
fn slog_line(v: &Vocab, rng: &mut Rng, day: &str, ms_of_day: u64) -> String {
    let ms = ms_of_day.min(86_399_999);
    let (h, m, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let ts = format!("{day}T{h:02}:{m:02}:{s:02}.{milli:03}Z");
    let id = format!("sl-{:012x}", rng.next() >> 16);
    let action = rng.pick(&v.actions);
    let tool = rng.pick(&v.tools);
    let detail = v.phrase(rng, 5, 20);
    let reason = if rng.below(10) < 6 {
        format!(",\"reason\":\"{}\"", rng.pick(&v.reasons))
    } else {
        String::new()
    };
    format!(
        "{{\"id\":\"{id}\",\"ts\":\"{ts}\",\"action\":\"{action}\",\"tool\":\"{tool}\",\
         \"detail\":\"{detail}\"{reason}}}\n"
    )
}

/// A title made of plain words (so the frontmatter holds it unquoted) and its slug.
fn adr_title(v: &Vocab, rng: &mut Rng) -> (String, String) {
    let title = format!(
        "{} {} {}",
        rng.pick(&v.adr_verbs),
        rng.pick(&v.adr_things),
        rng.pick(&v.adr_purposes)
    );
    let slug = title
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-");
    (title, slug)
}

/// An ADR in the shape `cairn adr new` writes, with its sections filled in.
fn adr_text(v: &Vocab, rng: &mut Rng, number: usize, title: &str, date: &str) -> String {
    let status = rng.pick(&v.statuses);
    let decider = rng.pick(&v.people);
    let tag = rng.pick(&v.tools);
    let mut para = || {
        (0..3)
            .map(|_| v.phrase(rng, 8, 19) + ".")
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (context, decision, consequences) = (para(), para(), para());
    format!(
        "---\nnumber: {number}\ntitle: {title}\nstatus: {status}\ndate: {date}\n\
         deciders: [{decider}]\ntags: [{tag}, ops]\nsupersedes: []\nsuperseded-by: []\n---\n\
         # {number}. {title}\n\n## Context\n\n{context}\n\n## Decision\n\n{decision}\n\n\
         ## Consequences\n\n{consequences}\n"
    )
}

/// splitmix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len() as u64) as usize]
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
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

/// `YYYY-MM-DD` of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn days_from_civil(date: &str) -> i64 {
    let part = |r: std::ops::Range<usize>| date[r].parse::<i64>().expect("a YYYY-MM-DD date");
    let (y, m, d) = (part(0..4), part(5..7), part(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// ---------------------------------------------------------------------------------------------
// Report

struct Header<'a> {
    runs: usize,
    git_version: String,
    year_commits: usize,
    today: &'a str,
    /// The 1-minute load average before the first and after the last timed run.
    load: (Option<f64>, Option<f64>),
}

/// The 1-minute load average (Linux), to tell a quiet run from a noisy one.
fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn print_report(h: &Header<'_>, table: &[[Stats; 2]]) {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let bin = PathBuf::from(CAIRN);
    let size = fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!();
    println!(
        "cairn CLI benchmark: whole-process wall time (spawn to exit), {} timed run{} per cell \
         after {WARMUP} warm-ups",
        h.runs,
        if h.runs == 1 { "" } else { "s" }
    );
    println!(
        "machine: {cores} cores (nproc), {} {}; {}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        h.git_version
    );
    let show = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.2}"));
    println!(
        "load:    1-minute load average {} before the first timed run, {} after the last{}",
        show(h.load.0),
        show(h.load.1),
        if [h.load.0, h.load.1]
            .into_iter()
            .flatten()
            .any(|l| l > cores as f64)
        {
            " (above the core count: other work competed, the times are noisy)"
        } else {
            ""
        }
    );
    println!(
        "binary:  {} ({:.1} MiB, {size} bytes)",
        bin.display(),
        size as f64 / (1024.0 * 1024.0)
    );
    println!("fresh:   `cairn init`");
    println!(
        "year:    365 day files, 70,000 slog entries ({TODAY_ENTRIES} already in today's slog/{}.jsonl), {YEAR_ADRS} ADRs,",
        h.today
    );
    println!(
        "         {} commits by the git CLI (one a month + one for the ADRs) on top of `cairn init`, then `git gc`",
        h.year_commits
    );
    println!(
        "targets (issue): slog --no-commit under 5 ms; slog with commit faster than the git CLI doing the same"
    );
    println!(
        "         commit; both flat from the fresh repo to the year repo (70,000 entries, 500 ADRs)"
    );
    println!();
    let rule = "-".repeat(107);
    println!(
        "{:<32} | {:^30} | {:^30} | {:>8}",
        "", "fresh repo", "year repo", "year/"
    );
    println!(
        "{:<32} | {:>7}{:>8}{:>8}{:>7} | {:>7}{:>8}{:>8}{:>7} | {:>8}",
        "command (times in ms)",
        "median",
        "p90",
        "min",
        "max",
        "median",
        "p90",
        "min",
        "max",
        "fresh"
    );
    println!("{rule}");
    for (row, cells) in Row::ALL.iter().zip(table) {
        let [f, y] = cells;
        println!(
            "{:<32} | {:>7}{:>8}{:>8}{:>7} | {:>7}{:>8}{:>8}{:>7} | {:>7.2}x",
            row.label(),
            ms(f.median),
            ms(f.p90),
            ms(f.min),
            ms(f.max),
            ms(y.median),
            ms(y.p90),
            ms(y.min),
            ms(y.max),
            ratio(y.median, f.median)
        );
    }
    println!("{rule}");
    let (no_commit, commit, adr, git) = (&table[0], &table[1], &table[2], &table[3]);
    for (label, a) in [
        ("ratio 2/4: slog+commit / git CLI", commit),
        ("ratio 3/4: adr new / git CLI", adr),
    ] {
        println!(
            "{:<32} | {:>7.2}x{:>22} | {:>7.2}x{:>22} |",
            label,
            ratio(a[0].median, git[0].median),
            "",
            ratio(a[1].median, git[1].median),
            ""
        );
    }
    println!();
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let under = no_commit
        .iter()
        .all(|s| s.median < Duration::from_millis(5));
    println!(
        "[{}] slog --no-commit under 5 ms (median): fresh {} ms, year {} ms",
        verdict(under),
        ms(no_commit[0].median),
        ms(no_commit[1].median)
    );
    let faster = (0..2).all(|i| commit[i].median < git[i].median);
    println!(
        "[{}] slog with commit faster than the git CLI (median): fresh {} vs {} ms, year {} vs {} ms",
        verdict(faster),
        ms(commit[0].median),
        ms(git[0].median),
        ms(commit[1].median),
        ms(git[1].median)
    );
    let flat = [no_commit, commit]
        .iter()
        .all(|r| ratio(r[1].median, r[0].median) <= FLAT_FACTOR);
    println!(
        "[{}] flat fresh -> year (year median <= {FLAT_FACTOR}x fresh): slog --no-commit {:.2}x, slog with commit {:.2}x",
        verdict(flat),
        ratio(no_commit[1].median, no_commit[0].median),
        ratio(commit[1].median, commit[0].median)
    );
}
