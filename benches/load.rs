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
//!
//! The parts: `agents` (what each agent runs, and what its runs say they wrote), `count` (the
//! markers counted and the repository checked afterwards) and `figures` (the lock's wait and
//! hold).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "load/agents.rs"]
mod agents;
mod common;
#[path = "load/count.rs"]
mod count;
#[path = "load/figures.rs"]
mod figures;

use agents::{agent, failed, is_read, mix_agent};
use common::{git, load, ms, setting};
use count::{check_repository, count, count_commits, count_mix};
use figures::{lock_figures, pct};

/// The binary under load: cargo's build of it, or `CAIRN_LOAD_BIN` (a release binary run by a
/// harness built with another profile).
fn bin() -> PathBuf {
    std::env::var_os("CAIRN_LOAD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cairn")))
}

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
