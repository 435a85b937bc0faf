//! The crash harness: the real cairn binary killed with SIGKILL at a random moment (or stopped
//! at a named failpoint) while it writes, then checked the way a person would find the
//! repository the next morning.
//!
//! Shared by the long run (`benches/crash.rs`, `scripts/crash`) and the short deterministic
//! test in the suite (`tests/cli/crash.rs`), so the checker the long run trusts is itself run
//! in CI.
//!
//! A scenario prepares a template once (a repository, and a bare remote or input files where
//! the command needs them) and names the command to kill, the victim. A trial copies the
//! template, starts the victim in a process group of its own and either kills the group after
//! a random delay within the victim's measured clean duration, or lets `CAIRN_FAILPOINT` stop
//! it at a named step. Then, in order:
//!
//! 1. `git fsck` is clean right after the kill;
//! 2. the next command succeeds: the victim again when it is idempotent, or the scenario's next
//!    command when it is not (a second `cairn slog` would log a second entry); then, before
//!    any repair, the temporary files left (`.cairn-tmp-*`, `.cairn/index/.tmp*`) and what
//!    `cairn doctor --dry-run` says are noted (a rerun must leave what a clean run leaves);
//! 3. `cairn doctor` repairs, and `cairn doctor --dry-run` then exits 0;
//! 4. `cairn index` catches up and `cairn index --verify` exits 0;
//! 5. `git fsck` is clean again and `git status` shows nothing uncommitted;
//! 6. the records equal an uninterrupted run's: every file HEAD tracks, JSON Lines compared as
//!    a multiset of records (ids that hold a process id taken out), Markdown as text, the
//!    proposal refs by name and tree, a remote's branch against HEAD, the commit subjects of
//!    the history, the temporary files and `doctor --dry-run`'s report. A command that is not
//!    idempotent may also end as if it never ran (all or nothing), never half or twice.
//!
//! A failure names the scenario, the seed and the kill, which `--scenario NAME --seed N`
//! replays.
//!
//! The parts: this file (the harness, a trial and the run of them all), `check` (the checks
//! after a kill and the snapshots they compare) and `scenarios` (each command to kill and its
//! template).

#![allow(dead_code)]

mod check;
mod scenarios;

use check::differ;
pub use scenarios::scenarios;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The time every command runs at: records are the same from run to run.
pub const NOW: &str = "2026-12-01T12:00:00Z";

/// Where the harness works and which binary it kills.
pub struct Harness {
    pub bin: PathBuf,
    pub work: PathBuf,
    pub fixtures: PathBuf,
}

/// What a scenario's setup leaves in its template folder: the command to kill and what
/// follows it.
pub struct Plan {
    /// Arguments after `cairn --repo REPO --now NOW`.
    pub victim: Vec<String>,
    pub after: After,
    /// The template holds `remote.git`, a bare remote whose branch must end equal to HEAD.
    pub remote: bool,
}

/// What runs after the victim, in the killed trial and in the clean run alike.
pub enum After {
    /// The victim again (it is idempotent). Besides exit 0, `(code, needle)` is accepted when
    /// stderr holds the needle (an approval already made says so and exits 2).
    Again(Option<(i32, &'static str)>),
    /// These commands; the victim is not idempotent, so its records may be absent (the kill
    /// came before its write) but never half there or there twice.
    Next(Vec<Vec<String>>),
}

/// One command to kill.
pub struct Scenario {
    pub name: &'static str,
    /// The named failpoints on the victim's path (each gets trials of its own).
    pub failpoints: &'static [&'static str],
    /// Builds the template in the given folder (`DIR/repo`, and what else the plan needs).
    pub setup: fn(&Harness, &Path) -> Plan,
}

/// A scenario with its template made and its clean outcome known.
pub struct Prepared<'a> {
    pub scenario: &'a Scenario,
    pub template: PathBuf,
    pub plan: Plan,
    /// The victim's uninterrupted wall time (the range the timer draws from).
    pub clean: Duration,
    expected: Snapshot,
    /// For a victim that is not idempotent: the state had it never run.
    without: Option<Snapshot>,
}

/// How a trial stops the victim.
#[derive(Debug, Clone)]
pub enum Kill {
    /// SIGKILL to the process group after this long.
    Timer(Duration),
    /// `CAIRN_FAILPOINT=NAME`: the process aborts at that step.
    Failpoint(String),
}

impl std::fmt::Display for Kill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kill::Timer(d) => write!(f, "SIGKILL at {} ms", d.as_millis()),
            Kill::Failpoint(p) => write!(f, "failpoint {p}"),
        }
    }
}

/// What one trial found.
#[derive(Debug)]
pub struct Outcome {
    /// The victim was still running when it was killed (or it stopped at its failpoint).
    pub landed: bool,
    /// The state equalled the one of a run that never happened (a victim that is not
    /// idempotent, killed before its write).
    pub as_if_never_ran: bool,
    /// Problems found; empty when the trial survived.
    pub failures: Vec<String>,
    /// Where the trial's copy is kept when it failed.
    pub kept: Option<PathBuf>,
}

/// The records of a repository, by path, normalised for comparison.
type Snapshot = BTreeMap<String, Vec<String>>;

/// A small deterministic generator (splitmix64), so a seed replays a trial.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// The output of one command.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Harness {
    pub fn new(bin: &Path, work: &Path, fixtures: &Path) -> Harness {
        let h = Harness {
            bin: bin.to_path_buf(),
            work: work.to_path_buf(),
            fixtures: fixtures.to_path_buf(),
        };
        std::fs::create_dir_all(h.home()).expect("harness home");
        h
    }

    fn home(&self) -> PathBuf {
        self.work.join("home")
    }

    /// A command with a scrubbed environment (no HOME, GIT_* or CAIRN_* of the caller).
    pub fn command(&self, program: &Path, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(cwd).stdin(Stdio::null());
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("GIT_") || key.starts_with("CAIRN_") || key == "HOME" {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home().join(".gitconfig"))
            .env("EDITOR", "false")
            .env("VISUAL", "false");
        cmd
    }

    /// `cairn --repo REPO --now NOW ARGS…`, prepared but not run.
    pub fn cairn_cmd(&self, repo: &Path, args: &[String]) -> Command {
        let mut cmd = self.command(&self.bin, repo);
        cmd.arg("--repo").arg(repo).args(["--now", NOW]).args(args);
        cmd
    }

    /// Runs cairn in `repo` and returns what it printed.
    pub fn cairn(&self, repo: &Path, args: &[&str]) -> Ran {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        run(self.cairn_cmd(repo, &args))
    }

    /// Runs cairn and panics unless it exits 0 (for setups).
    pub fn cairn_ok(&self, repo: &Path, args: &[&str]) -> String {
        let r = self.cairn(repo, args);
        assert_eq!(r.code, 0, "cairn {args:?}: {}", r.stderr);
        r.stdout
    }

    /// Runs git in `dir` with an identity of its own.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Ran {
        let mut cmd = self.command(Path::new("git"), dir);
        cmd.args(["-c", "user.name=crash", "-c", "user.email=crash@localhost"])
            .args(args);
        run(cmd)
    }

    /// Runs git and panics unless it exits 0 (for setups).
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let r = self.git(dir, args);
        assert_eq!(r.code, 0, "git {args:?}: {}", r.stderr);
        r.stdout
    }

    /// Makes the scenario's template, measures the victim's clean run, and records the state
    /// an uninterrupted run ends in (checked twice, so a scenario that is not deterministic is
    /// caught before any kill).
    pub fn prepare<'a>(&self, scenario: &'a Scenario) -> Result<Prepared<'a>, String> {
        let template = self.work.join("templates").join(scenario.name);
        let _ = std::fs::remove_dir_all(&template);
        std::fs::create_dir_all(&template).map_err(|e| e.to_string())?;
        let plan = (scenario.setup)(self, &template);
        let mut times = Vec::new();
        let mut expected = None;
        for round in 0..3 {
            let dir = self.copy(&template, &format!("{}-clean-{round}", scenario.name));
            let repo = dir.join("repo");
            let started = Instant::now();
            let r = run(self.cairn_cmd(&repo, &plan.victim));
            times.push(started.elapsed());
            if r.code != 0 {
                return Err(format!(
                    "{}: the clean run exits {}: {}",
                    scenario.name, r.code, r.stderr
                ));
            }
            let mut failures = Vec::new();
            self.after(&repo, &plan, &mut failures);
            let before_repair = self.leftovers(&repo);
            self.check(&repo, &mut failures);
            if !failures.is_empty() {
                return Err(format!(
                    "{}: the clean run: {}",
                    scenario.name,
                    failures.join("; ")
                ));
            }
            let mut snap = self.snapshot(&dir, &plan);
            snap.extend(before_repair);
            match &expected {
                None => expected = Some(snap),
                Some(first) => {
                    if let Some(diff) = differ(first, &snap) {
                        return Err(format!(
                            "{}: two clean runs differ (not deterministic): {diff}",
                            scenario.name
                        ));
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        times.sort();
        let without = match &plan.after {
            After::Again(_) => None,
            After::Next(_) => {
                let dir = self.copy(&template, &format!("{}-without", scenario.name));
                let repo = dir.join("repo");
                let mut failures = Vec::new();
                self.after(&repo, &plan, &mut failures);
                let before_repair = self.leftovers(&repo);
                self.check(&repo, &mut failures);
                if !failures.is_empty() {
                    return Err(format!(
                        "{}: the run without the victim: {}",
                        scenario.name,
                        failures.join("; ")
                    ));
                }
                let mut snap = self.snapshot(&dir, &plan);
                snap.extend(before_repair);
                let _ = std::fs::remove_dir_all(&dir);
                Some(snap)
            }
        };
        Ok(Prepared {
            scenario,
            template,
            plan,
            clean: times[times.len() / 2],
            expected: expected.expect("three rounds ran"),
            without,
        })
    }

    /// One trial: copy, start, kill, then every check of the module's list.
    pub fn trial(&self, p: &Prepared<'_>, kill: &Kill, label: &str) -> Outcome {
        let dir = self.copy(&p.template, label);
        let repo = dir.join("repo");
        let mut failures = Vec::new();
        let mut cmd = self.cairn_cmd(&repo, &p.plan.victim);
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        if let Kill::Failpoint(name) = kill {
            cmd.env("CAIRN_FAILPOINT", name);
        }
        let mut child = cmd.spawn().expect("start cairn");
        let landed = match kill {
            Kill::Timer(delay) => {
                let deadline = Instant::now() + *delay;
                loop {
                    if let Ok(Some(_)) = child.try_wait() {
                        break false;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        // The whole group: a git the victim started dies with it.
                        let _ = Command::new("kill")
                            .args(["-KILL", "--", &format!("-{}", child.id())])
                            .status();
                        break true;
                    }
                    std::thread::sleep((deadline - now).min(Duration::from_millis(1)));
                }
            }
            Kill::Failpoint(_) => false,
        };
        let status = child.wait().expect("wait for cairn");
        let landed = match kill {
            Kill::Timer(_) => landed && status.code().is_none(),
            Kill::Failpoint(name) => {
                if status.success() {
                    failures.push(format!("failpoint {name} was never reached"));
                }
                status.code().is_none()
            }
        };
        if let Some(f) = self.fsck(&repo) {
            failures.push(format!("right after the kill: {f}"));
        }
        self.after(&repo, &p.plan, &mut failures);
        let before_repair = self.leftovers(&repo);
        self.check(&repo, &mut failures);
        let mut snap = self.snapshot(&dir, &p.plan);
        snap.extend(before_repair);
        let mut as_if_never_ran = false;
        if let Some(diff) = differ(&p.expected, &snap) {
            match &p.without {
                Some(without) if differ(without, &snap).is_none() => as_if_never_ran = true,
                _ => failures.push(format!("the records differ from a clean run's: {diff}")),
            }
        }
        let kept = if failures.is_empty() {
            let _ = std::fs::remove_dir_all(&dir);
            None
        } else {
            Some(dir)
        };
        Outcome {
            landed,
            as_if_never_ran,
            failures,
            kept,
        }
    }

    /// Copies a template to a fresh trial folder.
    fn copy(&self, template: &Path, label: &str) -> PathBuf {
        let dir = self.work.join("trials").join(label);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.parent().expect("trials folder")).expect("trials folder");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(template)
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cp -a {}", template.display());
        dir
    }
}

/// Runs `trials` trials of every scenario (or of `only`), printing a row a scenario and the
/// totals; returns the failures, each with what replays it.
pub fn run_all(h: &Harness, trials: u64, seed: u64, only: &str) -> Vec<String> {
    println!(
        "{:<20} {:>6} {:>6} {:>6} {:>8} {:>9} {:>9}",
        "scenario", "trials", "landed", "points", "survived", "never-ran", "clean ms"
    );
    let started = Instant::now();
    let (mut all, mut landed_all, mut survived_all) = (0u64, 0u64, 0u64);
    let mut failed = Vec::new();
    for (si, scenario) in scenarios().iter().enumerate() {
        if !only.is_empty() && scenario.name != only {
            continue;
        }
        let prepared = match h.prepare(scenario) {
            Ok(p) => p,
            Err(e) => {
                println!("{:<20} could not prepare: {e}", scenario.name);
                failed.push(format!("{}: {e}", scenario.name));
                continue;
            }
        };
        let (mut landed, mut points, mut survived, mut never) = (0u64, 0u64, 0u64, 0u64);
        let clean_us = prepared.clean.as_micros() as u64;
        for t in 0..trials {
            // One seed a trial, from the run's seed, the scenario and the trial number.
            let trial_seed = seed
                .wrapping_mul(1_000_003)
                .wrapping_add((si as u64) << 32)
                .wrapping_add(t);
            let mut rng = Rng::new(trial_seed);
            let kill = match scenario.failpoints.get(t as usize) {
                Some(point) => Kill::Failpoint(point.to_string()),
                None => Kill::Timer(std::time::Duration::from_micros(rng.below(clean_us))),
            };
            let label = format!("{}-{t}", scenario.name);
            let out = h.trial(&prepared, &kill, &label);
            all += 1;
            if out.landed {
                landed += 1;
                if matches!(kill, Kill::Failpoint(_)) {
                    points += 1;
                }
            }
            if out.as_if_never_ran {
                never += 1;
            }
            if out.failures.is_empty() {
                survived += 1;
            } else {
                let line = format!(
                    "{} trial {t} (--scenario {} --seed {seed}, trial seed {trial_seed}, {kill}): {}{}",
                    scenario.name,
                    scenario.name,
                    out.failures.join("; "),
                    out.kept
                        .as_ref()
                        .map(|p| format!(" [kept in {}]", p.display()))
                        .unwrap_or_default()
                );
                println!("  FAILED {line}");
                failed.push(line);
            }
        }
        landed_all += landed;
        survived_all += survived;
        println!(
            "{:<20} {:>6} {:>6} {:>6} {:>8} {:>9} {:>9.0}",
            scenario.name,
            trials,
            landed,
            points,
            survived,
            never,
            prepared.clean.as_secs_f64() * 1000.0
        );
    }
    println!(
        "total: {all} trials, {landed_all} kills landed mid-run, {survived_all} survived, {} failed; {:.0} s",
        all - survived_all,
        started.elapsed().as_secs_f64()
    );
    failed
}

fn run(mut cmd: Command) -> Ran {
    let out = cmd.output().expect("run a command");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}
