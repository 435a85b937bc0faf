//! Load: many agents writing and reading one knowledge repository at once, through the real
//! binary.
//!
//! Run with `scripts/load` (or `cargo bench --bench load -- [--agents 16] [--seconds 60]
//! [--mode both|commit|no-commit|mix|all]`; `CAIRN_LOAD_AGENTS`, `CAIRN_LOAD_SECONDS`,
//! `CAIRN_LOAD_MODE` set the defaults, `CAIRN_LOAD_KEEP=1` keeps the work folder,
//! `CAIRN_LOAD_BIN` names another cairn binary to load).
//!
//! For each mode, a fresh repository made by `cairn init`, then for `--seconds`:
//!
//! - `--agents` agents, each a thread running the binary in a loop: `cairn slog`, `cairn
//!   remember`, `cairn recall`, `cairn search`. Every slog detail and every remembered text
//!   carries a marker unique to the agent and step (`lm<mode>a<agent>n<step>`).
//! - one `cairn sessions ingest` of the real transcripts in `tests/fixtures/sessions` (Claude
//!   Code, Codex, pi), and one `cairn observe --all` (the built-in observer, no network) over
//!   what is ingested, both started with the agents.
//!
//! Then the count: every slog that exited 0 must be in the files exactly once (found by its
//! marker and id); every remember that stored must have its observation line exactly once,
//! every one that merged its `merge` event exactly once; no marker may appear that no
//! successful command wrote. Every failed command is printed with its exit code and stderr.
//! With commits on (`[git] commit = true`, the default), every slog and every stored
//! remember has its own commit, and the tree equals HEAD at the end. With `[git] commit =
//! false`, nothing is committed during the run, and one `git add -A && git commit` at the end
//! takes everything. In both: `git fsck` clean, `cairn doctor` finds nothing, `cairn index
//! --verify` passes.
//!
//! `--mode mix` (issue 30): each agent cycles through every writing command (`slog`,
//! `remember`, `adr new`, `memory add`, `note`, `library add`, `sessions ingest` of one
//! transcript, `observe --all`, `reflect`, `triage`, `maintain`, `index`) and the reads
//! (`recall`, `brief`, `search`), each agent from its own place in the cycle, with commits.
//! Afterwards, besides the counts above, every `adr new`, `memory add`, `note` and `library
//! add` that exited 0 is in the files exactly once (by its marker), no read failed (the read
//! failures are counted and must be 0), and `git fsck --strict`, `cairn doctor --dry-run` (no
//! finding) and `cairn index --verify` pass.
//!
//! Figures: each command's whole-process wall time (p50, p99, max), and the repository lock's
//! wait and hold (from the `lock`/`writer` telemetry events each writer records when it
//! releases the lock).
//!
//! The machine is shared (2 cores here, with other work running): the load average is printed
//! beside the figures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{git, load, ms, setting};

/// The binary under load: cargo's build of it, or `CAIRN_LOAD_BIN` (a release binary run by a
/// harness built with another profile).
fn bin() -> PathBuf {
    std::env::var_os("CAIRN_LOAD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cairn")))
}

/// Words the remembered texts are made of, so that they differ in meaning as well as marker
/// (dedup by meaning merges texts that say the same thing).
const SUBJECTS: &[&str] = &[
    "the nginx proxy",
    "postgres replication",
    "the redis cache",
    "our deploy script",
    "the kafka consumer",
    "terraform state",
    "the CI runner",
    "the grafana dashboard",
    "systemd timers",
    "the backup job",
    "dns resolution",
    "the s3 bucket policy",
    "cargo workspace builds",
    "the auth middleware",
    "docker image layers",
    "the cron scheduler",
];
const VERBS: &[&str] = &[
    "must always be restarted after",
    "should never be touched during",
    "breaks silently when we change",
    "is pinned to avoid",
    "needs a manual check before",
    "prefers explicit flags over",
    "was moved off the shared host because of",
    "logs every failure of",
];
const OBJECTS: &[&str] = &[
    "certificate rotation",
    "schema migrations",
    "kernel upgrades",
    "the monthly billing export",
    "failover drills",
    "dependency bumps",
    "a full disk on the build box",
    "timezone changes",
    "password resets by the support team",
    "load balancer health checks",
    "weekend release freezes",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Commit,
    NoCommit,
    /// Every writing command beside the reads ([`mix_agent`]), with commits.
    Mix,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Commit => "commit",
            Mode::NoCommit => "no-commit",
            Mode::Mix => "mix",
        }
    }

    /// What the markers of this mode begin with.
    fn tag(self) -> &'static str {
        match self {
            Mode::Commit => "lmc",
            Mode::NoCommit => "lmn",
            Mode::Mix => "lmx",
        }
    }
}

/// One command run: which, how long, how it ended.
#[derive(Debug, Clone)]
struct Run {
    command: &'static str,
    wall: Duration,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn data(&self) -> Value {
        serde_json::from_str::<Value>(&self.stdout)
            .map(|v| v["data"].clone())
            .unwrap_or(Value::Null)
    }
}

/// What an agent's successful writes should have left in the files.
#[derive(Debug, Default)]
struct Expected {
    /// slog marker → entry id.
    slogs: Vec<(String, String)>,
    /// remember marker → observation id stored.
    stored: Vec<(String, String)>,
    /// remember marker → (observation id merged away, the id it merged into).
    merged: Vec<(String, String, String)>,
    /// Markers of remembers the gate discarded or found already stored.
    not_written: Vec<String>,
    /// Markers of commands that failed: they may or may not have written.
    failed: Vec<String>,
    /// Searches for the agent's own earlier slog entry, and how many found it.
    searches: usize,
    found_own: usize,
    /// Mix mode: markers of `adr new`, `memory add`, `note` and `library add` runs that
    /// exited 0 (each must be in the files once).
    adrs: Vec<String>,
    memories: Vec<String>,
    notes: Vec<String>,
    library: Vec<String>,
}

fn main() {
    let agents = setting("--agents", "CAIRN_LOAD_AGENTS", 16usize);
    let seconds = setting("--seconds", "CAIRN_LOAD_SECONDS", 60u64);
    let mode: String = setting("--mode", "CAIRN_LOAD_MODE", "both".to_string());
    let modes = match mode.as_str() {
        "commit" => vec![Mode::Commit],
        "no-commit" => vec![Mode::NoCommit],
        "mix" => vec![Mode::Mix],
        "all" => vec![Mode::Commit, Mode::NoCommit, Mode::Mix],
        _ => vec![Mode::Commit, Mode::NoCommit],
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let work = tempfile::Builder::new()
        .prefix("cairn-load-")
        .tempdir()
        .expect("temp dir");
    println!("binary: {}", bin().display());
    println!(
        "cairn load: {agents} agents × {seconds} s, modes {:?}; {cores} cores, shared with other \
         work (load {})",
        modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        load()
    );
    let mut ok = true;
    for m in modes {
        ok &= run_mode(work.path(), m, agents, Duration::from_secs(seconds));
    }
    if std::env::var_os("CAIRN_LOAD_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
    if !ok {
        println!("\nFAILED: see the lines marked FAIL above");
        std::process::exit(1);
    }
    println!("\nall checks passed");
}

/// The environment every cairn and git process of the run gets: a HOME of its own, no git or
/// cairn settings from the machine.
fn command(program: &Path, home: &Path, repo: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("GIT_") || key.starts_with("CAIRN_") || key == "HOME" {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(repo)
        .stdin(Stdio::null())
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env("CAIRN_REPO", repo);
    cmd
}

fn cairn(home: &Path, repo: &Path, name: &'static str, args: &[&str]) -> Run {
    let started = Instant::now();
    let out: Output = command(&bin(), home, repo)
        .args(args)
        .output()
        .expect("run cairn");
    Run {
        command: name,
        wall: started.elapsed(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run_mode(work: &Path, mode: Mode, agents: usize, span: Duration) -> bool {
    println!("\n== mode {} ==", mode.name());
    let dir = work.join(mode.name());
    let home = dir.join("home");
    let repo = dir.join("repo");
    std::fs::create_dir_all(&home).expect("home");
    let init = cairn(
        &home,
        &dir,
        "init",
        &["init", repo.to_str().expect("utf-8")],
    );
    assert_eq!(init.code, 0, "cairn init: {}", init.stderr);
    if mode == Mode::NoCommit {
        let path = repo.join("cairn.toml");
        let text = std::fs::read_to_string(&path).expect("cairn.toml");
        assert!(
            text.contains("commit = true"),
            "cairn.toml has no `commit = true`"
        );
        std::fs::write(&path, text.replacen("commit = true", "commit = false", 1))
            .expect("write cairn.toml");
        git(&repo, &["commit", "-qam", "config: commit = false"]);
    }
    let commits_before = count_commits(&repo);

    // Transcripts outside the repository (ingest never reads inside it).
    let transcripts = dir.join("transcripts");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
    let mut bytes = 0u64;
    for agent in ["claude-code", "codex", "pi"] {
        let to = transcripts.join(agent);
        std::fs::create_dir_all(&to).expect("transcripts dir");
        for entry in std::fs::read_dir(fixtures.join(agent)).expect("fixtures") {
            let p = entry.expect("entry").path();
            if p.extension().is_some_and(|e| e == "jsonl") {
                bytes += std::fs::copy(&p, to.join(p.file_name().expect("name"))).expect("copy");
            }
        }
    }
    // One session is ingested before the load so that observe has work from the start.
    let first = transcripts.join("claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let pre = cairn(
        &home,
        &repo,
        "ingest",
        &[
            "--json",
            "sessions",
            "ingest",
            first.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(pre.code, 0, "first ingest: {}", pre.stderr);

    let runs: Arc<Mutex<Vec<Run>>> = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + span;
    let started = Instant::now();
    let mut handles = Vec::new();
    for a in 0..agents {
        let (home, repo, runs) = (home.clone(), repo.clone(), runs.clone());
        let transcripts = dir.join("transcripts");
        handles.push(std::thread::spawn(move || match mode {
            Mode::Mix => mix_agent(a, &home, &repo, &transcripts, deadline, &runs),
            _ => agent(a, mode, &home, &repo, deadline, &runs),
        }));
    }
    let pipeline = {
        let (home, repo, runs, transcripts) = (
            home.clone(),
            repo.clone(),
            runs.clone(),
            transcripts.clone(),
        );
        std::thread::spawn(move || {
            let ingest = std::thread::spawn({
                let (home, repo, transcripts) = (home.clone(), repo.clone(), transcripts.clone());
                move || {
                    cairn(
                        &home,
                        &repo,
                        "ingest",
                        &[
                            "--json",
                            "sessions",
                            "ingest",
                            transcripts.to_str().expect("utf-8"),
                        ],
                    )
                }
            });
            let observe = cairn(
                &home,
                &repo,
                "observe",
                &["--json", "observe", "--all", "--observer", "builtin"],
            );
            let ingest = ingest.join().expect("ingest thread");
            let mut r = runs.lock().expect("runs");
            r.push(ingest);
            r.push(observe);
        })
    };
    let mut expected = Expected::default();
    for h in handles {
        let e = h.join().expect("agent thread");
        expected.slogs.extend(e.slogs);
        expected.stored.extend(e.stored);
        expected.merged.extend(e.merged);
        expected.not_written.extend(e.not_written);
        expected.failed.extend(e.failed);
        expected.searches += e.searches;
        expected.found_own += e.found_own;
        expected.adrs.extend(e.adrs);
        expected.memories.extend(e.memories);
        expected.notes.extend(e.notes);
        expected.library.extend(e.library);
    }
    pipeline.join().expect("pipeline thread");
    let elapsed = started.elapsed();
    let runs = Arc::try_unwrap(runs)
        .expect("threads done")
        .into_inner()
        .expect("runs");

    let mut ok = true;
    // Failed commands, each with its code and stderr.
    let failures: Vec<&Run> = runs.iter().filter(|r| failed(r)).collect();
    println!(
        "ran {} commands in {:.1} s ({} transcripts bytes ingested); failed: {}",
        runs.len(),
        elapsed.as_secs_f64(),
        bytes,
        failures.len()
    );
    let read_failures = failures.iter().filter(|r| is_read(r.command)).count();
    println!("read failures: {read_failures} (must be 0)");
    for f in &failures {
        ok = false;
        println!(
            "FAIL {} exit {} after {:.0} ms: {}",
            f.command,
            f.code,
            ms(f.wall),
            f.stderr.trim()
        );
    }
    // The pipeline's one ingest and observe (the mix runs many: their times are below).
    for r in runs
        .iter()
        .filter(|r| mode != Mode::Mix && matches!(r.command, "ingest" | "observe"))
    {
        let d = r.data();
        let what = if r.command == "ingest" {
            format!("cards {} episodes {}", d["cards"], d["episodes"])
        } else {
            format!("{}", d["counts"])
        };
        println!(
            "{:<8} exit {} in {:.1} s: {what}",
            r.command,
            r.code,
            r.wall.as_secs_f64()
        );
    }

    // The one commit at the end when committing is off.
    if mode == Mode::NoCommit {
        let made = count_commits(&repo) - commits_before;
        if made != 0 {
            ok = false;
            println!("FAIL {made} commits were made with `[git] commit = false`");
        }
        let t = Instant::now();
        git(&repo, &["add", "-A"]);
        git(
            &repo,
            &["commit", "-qm", "load: everything the agents wrote"],
        );
        println!(
            "one commit at the end (git add -A && git commit): {:.0} ms",
            ms(t.elapsed())
        );
    }

    ok &= count(&repo, mode, &expected);
    if mode == Mode::Mix {
        ok &= count_mix(&repo, &expected);
    }
    ok &= check_repository(&home, &repo, mode, commits_before, &expected);

    println!();
    println!("command   runs    p50 ms   p99 ms   max ms");
    for name in [
        "slog", "remember", "adr", "memory", "note", "library", "ingest", "observe", "reflect",
        "triage", "maintain", "index", "recall", "brief", "search",
    ] {
        let mut ts: Vec<Duration> = runs
            .iter()
            .filter(|r| r.command == name)
            .map(|r| r.wall)
            .collect();
        if ts.is_empty() {
            continue;
        }
        ts.sort();
        println!(
            "{name:<9} {:>5} {:>9.0} {:>8.0} {:>8.0}",
            ts.len(),
            ms(pct(&ts, 50.0)),
            ms(pct(&ts, 99.0)),
            ms(*ts.last().expect("not empty"))
        );
    }
    lock_figures(&repo);
    if mode != Mode::Mix {
        println!(
            "searches that found the agent's own previous slog entry: {} of {} (a search that \
             finds the index writer busy reads the last committed state, ADR 9)",
            expected.found_own, expected.searches
        );
    }
    ok
}

/// A command failed: exit 2 or worse, or a write command that did not exit 0 (remember exits
/// 1 when the gate discards; recall and search exit 1 when they find nothing).
impl Expected {
    /// Notes what a `remember` that carried `rmarker` reported: stored, merged, failed or not
    /// written.
    fn remembered(&mut self, r: &Run, rmarker: String) {
        let d = r.data();
        let id = || d["id"].as_str().unwrap_or("").to_string();
        if failed(r) {
            self.failed.push(rmarker);
        } else if d["stored"] == true {
            self.stored.push((rmarker, id()));
        } else if d["merged"].is_object() {
            let into = d["merged"]["into"].as_str().unwrap_or("").to_string();
            self.merged.push((rmarker, id(), into));
        } else {
            self.not_written.push(rmarker);
        }
    }
}

fn failed(r: &Run) -> bool {
    match r.command {
        "slog" | "ingest" | "observe" | "adr" | "memory" | "note" | "library" | "reflect"
        | "triage" | "maintain" | "index" => r.code != 0,
        "remember" => !(r.code == 0 || (r.code == 1 && r.data()["verdict"] == "discard")),
        _ => r.code != 0 && r.code != 1,
    }
}

fn agent(
    a: usize,
    mode: Mode,
    home: &Path,
    repo: &Path,
    deadline: Instant,
    runs: &Mutex<Vec<Run>>,
) -> Expected {
    let mut e = Expected::default();
    let mut mine = Vec::new();
    let tag = match mode {
        Mode::NoCommit => "n",
        _ => "c",
    };
    let mut n = 0usize;
    let mut last_slog: Option<String> = None;
    while Instant::now() < deadline {
        let marker = format!("lm{tag}a{a:02}n{n:05}");
        // slog
        let detail = format!("agent {a} finished step {n} of the load run, marker {marker}");
        let r = cairn(
            home,
            repo,
            "slog",
            &[
                "--json",
                "slog",
                "load",
                &format!("agent-{a}"),
                &detail,
                "--tags",
                "load",
            ],
        );
        if r.code == 0 {
            let id = r.data()["entry"]["id"].as_str().unwrap_or("").to_string();
            e.slogs.push((marker.clone(), id));
            last_slog = Some(marker.clone());
        } else {
            e.failed.push(marker.clone());
        }
        mine.push(r);

        // remember
        let text = format!(
            "{} {} {} (agent {a}, step {n}, marker {marker}r)",
            SUBJECTS[(a * 7 + n) % SUBJECTS.len()],
            VERBS[(a + n * 3) % VERBS.len()],
            OBJECTS[(a * 5 + n * 7) % OBJECTS.len()],
        );
        let r = cairn(home, repo, "remember", &["--json", "remember", &text]);
        e.remembered(&r, format!("{marker}r"));
        mine.push(r);

        // recall: what another agent's texts talk about
        let query = format!(
            "{} {}",
            SUBJECTS[(a + n) % SUBJECTS.len()],
            OBJECTS[n % OBJECTS.len()]
        );
        mine.push(cairn(
            home,
            repo,
            "recall",
            &["--json", "recall", &query, "--profile", "lean"],
        ));

        // search: this agent's own last slog entry, by its marker
        if let Some(m) = &last_slog {
            let r = cairn(home, repo, "search", &["--json", "search", m]);
            e.searches += 1;
            if r.stdout.contains(m.as_str()) {
                e.found_own += 1;
            }
            mine.push(r);
        }
        n += 1;
    }
    runs.lock().expect("runs").extend(mine);
    e
}

/// Whether `command` only reads (a failure of one is a failed read).
fn is_read(command: &str) -> bool {
    matches!(command, "recall" | "brief" | "search")
}

/// The mix: each agent runs, one after another, a command of the cycle below, starting at a
/// place of its own in it so that every kind runs at once somewhere: the writes (slog,
/// remember, adr new, memory add, note, library add, sessions ingest, observe, reflect,
/// triage, maintain, index) and the reads (recall, brief, search).
fn mix_agent(
    a: usize,
    home: &Path,
    repo: &Path,
    transcripts: &Path,
    deadline: Instant,
    runs: &Mutex<Vec<Run>>,
) -> Expected {
    const CYCLE: &[&str] = &[
        "slog", "recall", "remember", "search", "adr", "brief", "memory", "index", "note",
        "recall", "library", "ingest", "search", "observe", "slog", "reflect", "recall", "triage",
        "remember", "maintain", "brief",
    ];
    let mut e = Expected::default();
    let mut mine = Vec::new();
    let sessions: Vec<PathBuf> = ["claude-code", "codex", "pi"]
        .iter()
        .flat_map(|agent| {
            std::fs::read_dir(transcripts.join(agent))
                .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    let library = home.join(format!("library-{a}"));
    std::fs::create_dir_all(&library).expect("library folder");
    let mut n = 0usize;
    while Instant::now() < deadline {
        let marker = format!("lmxa{a:02}n{n:05}");
        let command = CYCLE[(a * 5 + n) % CYCLE.len()];
        let subject = SUBJECTS[(a * 7 + n) % SUBJECTS.len()];
        let object = OBJECTS[(a * 5 + n * 7) % OBJECTS.len()];
        let r = match command {
            "slog" => {
                let detail = format!("agent {a} finished step {n} of the mix, marker {marker}");
                let r = cairn(
                    home,
                    repo,
                    "slog",
                    &["--json", "slog", "load", &format!("agent-{a}"), &detail],
                );
                if r.code == 0 {
                    let id = r.data()["entry"]["id"].as_str().unwrap_or("").to_string();
                    e.slogs.push((marker.clone(), id));
                }
                r
            }
            "remember" => {
                let verb = VERBS[(a + n * 3) % VERBS.len()];
                let text = format!("{subject} {verb} {object} (agent {a}, marker {marker}r)");
                let r = cairn(home, repo, "remember", &["--json", "remember", &text]);
                e.remembered(&r, format!("{marker}r"));
                r
            }
            "adr" => {
                let title = format!("Pin {subject} for {object} {marker}");
                let r = cairn(
                    home,
                    repo,
                    "adr",
                    &[
                        "--json",
                        "adr",
                        "new",
                        &title,
                        "--context",
                        "the load run needs a decision",
                        "--decision",
                        "pin it",
                        "--consequences",
                        "one more record",
                    ],
                );
                if r.code == 0 {
                    e.adrs.push(marker.clone());
                }
                r
            }
            "memory" => {
                let text = format!("{subject} needs care around {object} ({marker})");
                let r = cairn(
                    home,
                    repo,
                    "memory",
                    &["--json", "memory", "add", "--section", "operations", &text],
                );
                if r.code == 0 && r.data()["added"]["duplicate"] != true {
                    e.memories.push(marker.clone());
                }
                r
            }
            "note" => {
                let text = format!("{marker} {subject} and {object}");
                let r = cairn(home, repo, "note", &["--json", "note", &text]);
                if r.code == 0 {
                    e.notes.push(marker.clone());
                }
                r
            }
            "library" => {
                let file = library.join(format!("{marker}.md"));
                std::fs::write(
                    &file,
                    format!("# Runbook {marker}\n\nHow {subject} behaves during {object}.\n"),
                )
                .expect("library file");
                let r = cairn(
                    home,
                    repo,
                    "library",
                    &["--json", "library", "add", file.to_str().expect("utf-8")],
                );
                if r.code == 0 {
                    e.library.push(marker.clone());
                }
                r
            }
            "ingest" => {
                let session = &sessions[(a + n) % sessions.len().max(1)];
                cairn(
                    home,
                    repo,
                    "ingest",
                    &[
                        "--json",
                        "sessions",
                        "ingest",
                        session.to_str().expect("utf-8"),
                    ],
                )
            }
            "observe" => cairn(
                home,
                repo,
                "observe",
                &["--json", "observe", "--all", "--observer", "builtin"],
            ),
            "reflect" => cairn(home, repo, "reflect", &["--json", "reflect"]),
            "triage" => cairn(home, repo, "triage", &["--json", "triage"]),
            "maintain" => cairn(home, repo, "maintain", &["--json", "maintain"]),
            "index" => cairn(home, repo, "index", &["--json", "index"]),
            "recall" => cairn(
                home,
                repo,
                "recall",
                &["--json", "recall", &format!("{subject} {object}")],
            ),
            "brief" => cairn(home, repo, "brief", &["--json", "brief"]),
            _ => cairn(home, repo, "search", &["--json", "search", subject]),
        };
        if failed(&r) && r.command != "remember" {
            e.failed.push(marker.clone());
        }
        mine.push(r);
        n += 1;
    }
    runs.lock().expect("runs").extend(mine);
    e
}

/// Mix mode: each `adr new`, `memory add`, `note` and `library add` that exited 0 is in the
/// files exactly once (found by its marker).
fn count_mix(repo: &Path, expected: &Expected) -> bool {
    let names = |dir: &str| -> Vec<String> {
        std::fs::read_dir(repo.join(dir))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_lowercase())
                    .collect()
            })
            .unwrap_or_default()
    };
    // A record's file name is its title's slug, cut short: the marker is looked for in the
    // text.
    let adrs: Vec<String> = names("decisions")
        .iter()
        .map(|f| std::fs::read_to_string(repo.join("decisions").join(f)).unwrap_or_default())
        .collect();
    let notes = names("vault/notes");
    let memory = std::fs::read_to_string(repo.join("MEMORY.md")).unwrap_or_default();
    let library = std::fs::read_to_string(repo.join("vault/library.jsonl")).unwrap_or_default();
    let mut wrong = 0usize;
    let mut check = |what: &str, markers: &[String], found: &dyn Fn(&str) -> usize| {
        for m in markers {
            let n = found(m);
            if n != 1 {
                wrong += 1;
                println!("FAIL {what} {m} exited 0 and is in the files {n} times");
            }
        }
    };
    check("adr new", &expected.adrs, &|m| {
        adrs.iter().filter(|f| f.contains(m)).count()
    });
    check("note", &expected.notes, &|m| {
        notes.iter().filter(|f| f.contains(m)).count()
    });
    check("memory add", &expected.memories, &|m| {
        memory.lines().filter(|l| l.contains(m)).count()
    });
    check("library add", &expected.library, &|m| {
        library.lines().filter(|l| l.contains(m)).count()
    });
    println!(
        "count: adr new {}, memory add {}, note {}, library add {} ok; wrong {wrong}",
        expected.adrs.len(),
        expected.memories.len(),
        expected.notes.len(),
        expected.library.len()
    );
    wrong == 0
}

/// Counts every marker in the files against what the commands said they wrote.
fn count(repo: &Path, mode: Mode, expected: &Expected) -> bool {
    let tag = mode.tag();
    let mut ok = true;
    // slog: marker → ids of the lines holding it.
    let mut slog: HashMap<String, Vec<String>> = HashMap::new();
    for v in jsonl(&repo.join("slog")) {
        if let Some(m) = marker(v["detail"].as_str().unwrap_or(""), tag) {
            slog.entry(m)
                .or_default()
                .push(v["id"].as_str().unwrap_or("").to_string());
        }
    }
    // observations: marker → ids of observation lines; merge events: from-id → count.
    let mut observations: HashMap<String, Vec<String>> = HashMap::new();
    let mut merges: HashMap<String, usize> = HashMap::new();
    for v in jsonl(&repo.join("vault/observations")) {
        if let Some(text) = v["observation"].as_str() {
            if let Some(m) = marker(text, tag) {
                observations
                    .entry(m)
                    .or_default()
                    .push(v["id"].as_str().unwrap_or("").to_string());
            }
        } else if v["op"] == "merge"
            && let Some(from) = v["from"].as_str()
        {
            *merges.entry(from.to_string()).or_default() += 1;
        }
    }
    let (l, d) = count_once(
        &expected.slogs,
        &slog,
        |m, id| format!("FAIL slog {m} ({id}) exited 0 but is not in slog/"),
        |m, n| format!("FAIL slog {m} is in slog/ {n} times"),
    );
    let (l2, d2) = count_once(
        &expected.stored,
        &observations,
        |m, id| format!("FAIL remember {m} ({id}) was stored but is not in vault/observations/"),
        |m, n| format!("FAIL remember {m} is stored {n} times"),
    );
    let (mut lost, mut duplicated) = (l + l2, d + d2);
    for (m, id, into) in &expected.merged {
        match merges.get(id) {
            Some(1) => {}
            None => {
                lost += 1;
                println!("FAIL remember {m} ({id}) merged into {into} but no merge event holds it");
            }
            Some(n) => {
                duplicated += 1;
                println!("FAIL remember {m}'s merge event is there {n} times");
            }
        }
        if observations.contains_key(m) {
            duplicated += 1;
            println!("FAIL remember {m} merged but is also stored as an observation");
        }
    }
    // Markers in the files that no successful command wrote.
    let written: std::collections::HashSet<&str> = expected
        .slogs
        .iter()
        .map(|(m, _)| m.as_str())
        .chain(expected.stored.iter().map(|(m, _)| m.as_str()))
        .collect();
    let failed: std::collections::HashSet<&str> =
        expected.failed.iter().map(String::as_str).collect();
    let mut unexpected = 0usize;
    for m in slog.keys().chain(observations.keys()) {
        if !written.contains(m.as_str()) {
            if failed.contains(m.as_str()) {
                println!("note {m} is in the files; its command failed after writing it");
            } else {
                unexpected += 1;
                println!("FAIL {m} is in the files but no command reported writing it");
            }
        }
    }
    let slog_lines: usize = slog.values().map(Vec::len).sum();
    let obs_lines: usize = observations.values().map(Vec::len).sum();
    println!(
        "count: slog {} ok → {} lines; remember {} stored → {} lines, {} merged → {} merge \
         events, {} not written (gate or duplicate); lost {lost}, duplicated {duplicated}, \
         unexpected {unexpected}",
        expected.slogs.len(),
        slog_lines,
        expected.stored.len(),
        obs_lines,
        expected.merged.len(),
        expected
            .merged
            .iter()
            .filter(|(_, id, _)| merges.contains_key(id))
            .count(),
        expected.not_written.len(),
    );
    ok &= lost == 0 && duplicated == 0 && unexpected == 0;
    ok
}

/// git fsck, the tree equal to HEAD, the commits made, doctor and the index's verification.
fn check_repository(
    home: &Path,
    repo: &Path,
    mode: Mode,
    commits_before: usize,
    expected: &Expected,
) -> bool {
    let mut ok = true;
    let fsck = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["fsck", "--strict"])
        .output()
        .expect("git fsck");
    if !fsck.status.success() {
        ok = false;
        println!(
            "FAIL git fsck: {}",
            String::from_utf8_lossy(&fsck.stderr).trim()
        );
    }
    let status = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain"])
        .output()
        .expect("git status");
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    if !status.trim().is_empty() {
        ok = false;
        println!("FAIL the tree differs from HEAD:\n{status}");
    }
    let commits = count_commits(repo) - commits_before;
    match mode {
        Mode::Commit | Mode::Mix => {
            let log = Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["log", "--format=%B"])
                .output()
                .expect("git log");
            let log = String::from_utf8_lossy(&log.stdout).into_owned();
            let slog_commits = log.matches("Cairn-Slog: ").count();
            let remember_commits =
                log.matches("\nremember: ").count() + usize::from(log.starts_with("remember: "));
            let want = expected.stored.len() + expected.merged.len();
            println!(
                "commits: {commits} made; {slog_commits} slog commits for {} slogs, \
                 {remember_commits} remember commits for {want} stored or merged",
                expected.slogs.len()
            );
            if slog_commits != expected.slogs.len() || remember_commits != want {
                ok = false;
                println!("FAIL a write without its own commit, or a commit too many");
            }
        }
        Mode::NoCommit => println!("commits: {commits} (the one at the end)"),
    }
    let doctor = cairn(home, repo, "doctor", &["--json", "doctor", "--dry-run"]);
    let findings = doctor.data()["findings"]
        .as_array()
        .map_or(usize::MAX, Vec::len);
    println!(
        "{}cairn doctor --dry-run: {findings} findings, exit {}{}",
        if doctor.code == 0 && findings == 0 {
            ""
        } else {
            "FAIL "
        },
        doctor.code,
        if doctor.code == 0 {
            String::new()
        } else {
            format!(": {}", doctor.stdout.trim())
        }
    );
    ok &= doctor.code == 0 && findings == 0;
    let verify = cairn(home, repo, "index", &["--json", "index", "--verify"]);
    println!(
        "{}cairn index --verify: exit {}{}",
        if verify.code == 0 { "" } else { "FAIL " },
        verify.code,
        if verify.code == 0 {
            String::new()
        } else {
            format!(": {}", verify.stdout.trim())
        }
    );
    ok &= verify.code == 0;
    ok
}

/// The repository lock's wait and hold, from the writers' telemetry.
fn lock_figures(repo: &Path) {
    let mut waits = Vec::new();
    let mut holds = Vec::new();
    let mut contended = 0usize;
    for v in jsonl_file(&repo.join(".cairn/telemetry.jsonl")) {
        if v["component"] == "lock" && v["action"] == "writer" {
            let m = &v["metadata"];
            waits.push(Duration::from_micros(m["wait_us"].as_u64().unwrap_or(0)));
            holds.push(Duration::from_micros(m["held_us"].as_u64().unwrap_or(0)));
            contended += usize::from(m["contended"] == true);
        }
    }
    if waits.is_empty() {
        println!("lock: no `lock` telemetry events");
        return;
    }
    waits.sort();
    holds.sort();
    println!(
        "lock wait {:>5} takes {:>9.1} {:>8.1} {:>8.1}   ({contended} found it held)",
        waits.len(),
        ms(pct(&waits, 50.0)),
        ms(pct(&waits, 99.0)),
        ms(*waits.last().expect("not empty"))
    );
    println!(
        "lock hold {:>5} takes {:>9.1} {:>8.1} {:>8.1}",
        holds.len(),
        ms(pct(&holds, 50.0)),
        ms(pct(&holds, 99.0)),
        ms(*holds.last().expect("not empty"))
    );
}

/// The `p`th percentile of sorted times (nearest rank).
fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn count_commits(repo: &Path) -> usize {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-list", "--count", "HEAD"])
        .output()
        .expect("git rev-list");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// The marker (`lmc…`/`lmn…`, with its `r` for a remember) in a text.
fn marker(text: &str, tag: &str) -> Option<String> {
    let start = text.find(&format!("marker {tag}"))? + "marker ".len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Every JSON line of every `.jsonl` file under `dir`.
fn jsonl(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files.iter().flat_map(|f| jsonl_file(f)).collect()
}

fn jsonl_file(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Each expected (marker, id) found exactly once in `found` (marker → ids of the lines holding
/// it): the lost and duplicated ones are printed and counted.
fn count_once(
    expected: &[(String, String)],
    found: &HashMap<String, Vec<String>>,
    missing: impl Fn(&str, &str) -> String,
    twice: impl Fn(&str, usize) -> String,
) -> (usize, usize) {
    let (mut lost, mut duplicated) = (0, 0);
    for (m, id) in expected {
        match found.get(m).map(Vec::as_slice) {
            Some([one]) if one == id => {}
            Some([]) | None => {
                lost += 1;
                println!("{}", missing(m, id));
            }
            Some(ids) => {
                duplicated += 1;
                println!("{}: {ids:?}", twice(m, ids.len()));
            }
        }
    }
    (lost, duplicated)
}
