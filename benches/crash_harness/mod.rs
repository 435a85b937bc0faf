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

#![allow(dead_code)]

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

    /// Step 2: the next command (the victim again, or the scenario's next commands).
    fn after(&self, repo: &Path, plan: &Plan, failures: &mut Vec<String>) {
        match &plan.after {
            After::Again(also) => {
                let r = run(self.cairn_cmd(repo, &plan.victim));
                let accepted = r.code == 0
                    || also
                        .is_some_and(|(code, needle)| r.code == code && r.stderr.contains(needle));
                if !accepted {
                    failures.push(format!(
                        "the next run of `{}` exits {}: {}",
                        plan.victim.join(" "),
                        r.code,
                        r.stderr.trim()
                    ));
                }
            }
            After::Next(commands) => {
                for args in commands {
                    let r = run(self.cairn_cmd(repo, args));
                    if r.code != 0 {
                        failures.push(format!(
                            "the next command `{}` exits {}: {}",
                            args.join(" "),
                            r.code,
                            r.stderr.trim()
                        ));
                    }
                }
            }
        }
    }

    /// What the rerun left before any repair: the temporary files of writes cut short
    /// (anywhere in the repository, `.git` aside) and `cairn doctor --dry-run`'s exit code and
    /// report, the repository's path taken out.
    fn leftovers(&self, repo: &Path) -> Snapshot {
        let mut temps = Vec::new();
        let mut stack = vec![repo.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    if name != ".git" {
                        stack.push(path);
                    }
                    continue;
                }
                let in_index = dir.ends_with(".cairn/index");
                if name.starts_with(".cairn-tmp-") || (in_index && name.starts_with(".tmp")) {
                    let rel = path.strip_prefix(repo).unwrap_or(&path);
                    temps.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        temps.sort();
        let dry = self.cairn(repo, &["doctor", "--dry-run"]);
        let root = repo.to_string_lossy().into_owned();
        let mut report = vec![format!("exit {}", dry.code)];
        report.extend(
            dry.stdout
                .lines()
                .chain(dry.stderr.lines())
                .map(|l| l.replace(&root, "REPO")),
        );
        let mut snap = Snapshot::new();
        snap.insert("<temporary files after the rerun>".into(), temps);
        snap.insert("<doctor --dry-run after the rerun>".into(), report);
        snap
    }

    /// Steps 3 to 5.
    fn check(&self, repo: &Path, failures: &mut Vec<String>) {
        let doctor = self.cairn(repo, &["doctor"]);
        if doctor.code == 2 {
            failures.push(format!("`cairn doctor` fails: {}", doctor.stderr.trim()));
        }
        let dry = self.cairn(repo, &["doctor", "--dry-run"]);
        if dry.code != 0 {
            failures.push(format!(
                "`cairn doctor --dry-run` after a repair exits {}: {}{}",
                dry.code,
                dry.stdout.trim(),
                dry.stderr.trim()
            ));
        }
        let index = self.cairn(repo, &["index"]);
        if index.code != 0 {
            failures.push(format!(
                "`cairn index` exits {}: {}",
                index.code,
                index.stderr.trim()
            ));
        }
        let verify = self.cairn(repo, &["index", "--verify"]);
        if verify.code != 0 {
            failures.push(format!(
                "`cairn index --verify` exits {}: {}{}",
                verify.code,
                verify.stdout.trim(),
                verify.stderr.trim()
            ));
        }
        if let Some(f) = self.fsck(repo) {
            failures.push(format!("at the end: {f}"));
        }
        let status = self.git(repo, &["status", "--porcelain", "--untracked-files=all"]);
        if status.code != 0 || !status.stdout.trim().is_empty() {
            failures.push(format!(
                "`git status` shows what was not committed: {}{}",
                status.stdout.trim().replace('\n', ", "),
                status.stderr.trim()
            ));
        }
    }

    /// `git fsck --strict`; `None` when clean.
    fn fsck(&self, repo: &Path) -> Option<String> {
        let r = self.git(
            repo,
            &["fsck", "--strict", "--no-progress", "--no-dangling"],
        );
        (r.code != 0).then(|| format!("`git fsck` exits {}: {}", r.code, r.stderr.trim()))
    }

    /// The records of `DIR/repo` (and of the remote, when the plan has one).
    fn snapshot(&self, dir: &Path, plan: &Plan) -> Snapshot {
        let repo = dir.join("repo");
        let mut snap = Snapshot::new();
        let files = self.git(&repo, &["ls-files", "-z"]).stdout;
        for rel in files.split('\0').filter(|s| !s.is_empty()) {
            let bytes = std::fs::read(repo.join(rel)).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let entry = if rel.ends_with(".jsonl") {
                let slog = rel.starts_with("slog/");
                let mut lines: Vec<String> = text.lines().map(|l| normalise(l, slog)).collect();
                lines.sort();
                lines
            } else {
                vec![text]
            };
            snap.insert(rel.to_string(), entry);
        }
        // The history's subjects, oldest first (trailers hold ids that differ from run to run).
        let log = self.git(&repo, &["log", "--reverse", "--format=%s"]);
        snap.insert(
            "<commit subjects>".into(),
            log.stdout.lines().map(str::to_string).collect(),
        );
        let refs = self.git(
            &repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(tree)",
                "refs/cairn/proposals/",
            ],
        );
        snap.insert(
            "<proposal refs>".into(),
            refs.stdout.lines().map(str::to_string).collect(),
        );
        if plan.remote {
            let head = self.git(&repo, &["rev-parse", "HEAD^{tree}"]).stdout;
            let branch = self
                .git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"])
                .stdout;
            let remote = self.git(
                &dir.join("remote.git"),
                &["rev-parse", &format!("{}^{{tree}}", branch.trim())],
            );
            snap.insert(
                "<remote>".into(),
                vec![format!(
                    "the remote's branch holds HEAD's tree: {}",
                    remote.stdout == head
                )],
            );
        }
        snap
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

/// A JSON line with what legitimately differs between runs taken out: a slog entry's id is a
/// hash of the writer's process id.
fn normalise(line: &str, slog: bool) -> String {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(mut v) => {
            if slog && let Some(o) = v.as_object_mut() {
                o.remove("id");
            }
            v.to_string()
        }
        Err(_) => format!("NOT JSON: {line}"),
    }
}

/// The first differences between two snapshots, for a person; `None` when equal.
fn differ(want: &Snapshot, got: &Snapshot) -> Option<String> {
    let mut out = Vec::new();
    for (path, w) in want {
        match got.get(path) {
            None => out.push(format!("{path} missing")),
            Some(g) if g != w => {
                let lost: Vec<&String> = w.iter().filter(|l| !g.contains(l)).collect();
                let extra: Vec<&String> = g.iter().filter(|l| !w.contains(l)).collect();
                let short = |v: &[&String]| {
                    v.iter()
                        .take(2)
                        .map(|l| l.chars().take(160).collect::<String>())
                        .collect::<Vec<_>>()
                        .join(" | ")
                };
                out.push(format!(
                    "{path}: {} lines want {}, lost {} [{}], extra {} [{}]",
                    g.len(),
                    w.len(),
                    lost.len(),
                    short(&lost),
                    extra.len(),
                    short(&extra)
                ));
            }
            _ => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        out.push(format!("{path} unexpected"));
    }
    (!out.is_empty()).then(|| out.join("; "))
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

/// Observations made from the real prompts of `tests/fixtures/observer` (people's words to
/// coding agents), as `cairn import observations` reads them; `days_old` spreads their times
/// back from NOW when given, so maintain finds stale ones.
pub fn observations(h: &Harness, dup_every: usize, aged: bool) -> String {
    let mut out = String::new();
    let mut n = 0usize;
    for name in ["fresh", "heldout", "prompts"] {
        let path = h.fixtures.join("observer").join(format!("{name}.jsonl"));
        let text = std::fs::read_to_string(&path).expect("observer fixture");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("fixture line");
            let Some(prompt) = v["prompt"].as_str() else {
                continue;
            };
            let day = if aged { 1 + (n * 7) % 300 } else { 1 + n % 20 };
            let ts = chrono_free_day(day);
            let mut push = |text: &str| {
                out.push_str(
                    &serde_json::json!({
                        "observation": text, "timestamp": ts, "session_id": format!("s-{name}"),
                    })
                    .to_string(),
                );
                out.push('\n');
            };
            push(prompt);
            if dup_every > 0 && n.is_multiple_of(dup_every) {
                push(&format!("{prompt}!"));
            }
            n += 1;
        }
    }
    out
}

/// NOW less `days` days, as RFC 3339 (NOW is 2026-12-01; days counted back through 2026).
fn chrono_free_day(days: usize) -> String {
    const MONTHS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    // Day of the year of 2026-12-01 is 335 (1-based).
    let doy = 335usize.saturating_sub(days).max(1);
    let mut left = doy as u32;
    let mut month = 0usize;
    while left > MONTHS[month] {
        left -= MONTHS[month];
        month += 1;
    }
    format!("2026-{:02}-{:02}T09:00:00Z", month + 1, left)
}

/// `cairn init DIR/repo`.
fn init(h: &Harness, dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    let r = run({
        let mut c = h.command(&h.bin, dir);
        c.args(["--now", NOW, "init"]).arg(&repo);
        c
    });
    assert_eq!(r.code, 0, "cairn init: {}", r.stderr);
    repo
}

fn write_input(dir: &Path, name: &str, text: &str) -> String {
    let input = dir.join("input");
    std::fs::create_dir_all(&input).expect("input folder");
    std::fs::write(input.join(name), text).expect("input file");
    format!("../input/{name}")
}

/// The transcripts ingest reads: one of each agent's format, a large one among them.
fn transcripts(h: &Harness) -> Vec<String> {
    let s = h.fixtures.join("sessions");
    [
        "claude-code/session-9eda1058.jsonl",
        "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "pi",
    ]
    .iter()
    .map(|p| s.join(p).to_string_lossy().into_owned())
    .collect()
}

fn slog_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    for (a, t, d) in [
        ("deploy", "caddy", "reload after the certificate renewal"),
        ("fix", "redis", "raise maxmemory to 2gb"),
        ("configure", "nfs", "mount /srv/media with nconnect=8"),
    ] {
        h.cairn_ok(&repo, &["slog", a, t, d]);
    }
    Plan {
        victim: strings(&[
            "slog",
            "restart",
            "postgres",
            "after the kernel update",
            "--reason",
            "security",
        ]),
        after: After::Next(vec![strings(&[
            "slog",
            "rotate",
            "keys",
            "the deploy key of ci",
        ])]),
        remote: false,
    }
}

fn remember_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    let obs = observations(h, 0, false);
    let few: String = obs.lines().take(20).map(|l| format!("{l}\n")).collect();
    let file = write_input(dir, "few.jsonl", &few);
    h.cairn_ok(&repo, &["import", "observations", &file]);
    Plan {
        victim: strings(&[
            "remember",
            "Always run cargo fmt and clippy before pushing to the main branch",
        ]),
        after: After::Again(None),
        remote: false,
    }
}

fn import_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let file = write_input(dir, "obs.jsonl", &observations(h, 0, false));
    Plan {
        victim: strings(&["import", "observations", &file]),
        after: After::Again(None),
        remote: false,
    }
}

fn adr_import_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let from = h.fixtures.join("adr").join("madr-semantic-kernel");
    let to = dir.join("input").join("adr");
    std::fs::create_dir_all(&to).expect("adr input");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
        .expect("adr fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("00"))
        })
        .collect();
    names.sort();
    for p in names.iter().take(20) {
        std::fs::copy(p, to.join(p.file_name().expect("name"))).expect("copy adr");
    }
    Plan {
        victim: strings(&["adr", "import", "../input/adr"]),
        after: After::Again(None),
        remote: false,
    }
}

fn ingest_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let mut victim = strings(&["sessions", "ingest"]);
    victim.extend(transcripts(h));
    Plan {
        victim,
        after: After::Again(None),
        remote: false,
    }
}

fn observe_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    let mut args = vec!["sessions".to_string(), "ingest".to_string()];
    args.extend(transcripts(h));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    h.cairn_ok(&repo, &args);
    Plan {
        victim: strings(&["observe", "--all", "--observer", "builtin"]),
        after: After::Again(None),
        remote: false,
    }
}

fn with_observations(h: &Harness, dir: &Path, dup_every: usize, aged: bool, raw: bool) -> PathBuf {
    let repo = init(h, dir);
    h.cairn_ok(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "Rules and conventions",
            "Never deploy on Fridays",
        ],
    );
    let file = write_input(dir, "obs.jsonl", &observations(h, dup_every, aged));
    let mut args = vec!["import", "observations", file.as_str()];
    if raw {
        args.push("--raw");
    }
    if aged {
        // Maintain ages an observation from the day it was stored (ADR 76): aged ones are
        // imported as if 200 days before NOW, so that a run at NOW finds stale ones.
        let mut cmd = h.command(&h.bin, &repo);
        cmd.arg("--repo")
            .arg(&repo)
            .args(["--now", STORED_AGED])
            .args(&args);
        let r = run(cmd);
        assert_eq!(r.code, 0, "cairn {args:?}: {}", r.stderr);
    } else {
        h.cairn_ok(&repo, &args);
    }
    repo
}

/// When the aged observations are imported: 200 days before NOW.
const STORED_AGED: &str = "2026-05-15T12:00:00Z";

fn reflect_setup(h: &Harness, dir: &Path) -> Plan {
    with_observations(h, dir, 0, false, false);
    Plan {
        victim: strings(&["reflect", "--reflector", "builtin"]),
        after: After::Again(None),
        remote: false,
    }
}

fn review_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(&repo, &["reflect", "--reflector", "builtin"]);
    let list = h.cairn_ok(&repo, &["review", "--list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(list.trim()).expect("review --list --json");
    let id = v["data"]["proposals"][0]["id"]
        .as_str()
        .expect("a pending proposal")
        .to_string();
    Plan {
        victim: vec!["review".into(), "--approve".into(), id],
        after: After::Again(Some((2, "already decided"))),
        remote: false,
    }
}

fn triage_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(&repo, &["reflect", "--reflector", "builtin"]);
    Plan {
        victim: strings(&["triage"]),
        after: After::Again(None),
        remote: false,
    }
}

fn maintain_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 3, true, true);
    h.cairn_ok(&repo, &["index"]);
    Plan {
        victim: strings(&["maintain"]),
        after: After::Again(None),
        remote: false,
    }
}

fn forget_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(
        &repo,
        &[
            "slog",
            "configure",
            "vault",
            "the token lives in pass, not in env",
        ],
    );
    let text = std::fs::read_to_string(repo.join("vault/observations/2026-12-01.jsonl"))
        .expect("observations");
    let ids: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .take(3)
        .collect();
    let mut victim = vec!["forget".to_string()];
    victim.extend(ids);
    victim.extend(strings(&["the token lives in pass, not in env", "--yes"]));
    Plan {
        victim,
        // Run again, everything is already forgotten: "nothing matches", exit 1.
        after: After::Again(Some((1, "nothing matches"))),
        remote: false,
    }
}

fn index_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    let mut args = vec!["sessions".to_string(), "ingest".to_string()];
    args.extend(transcripts(h));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    h.cairn_ok(&repo, &args);
    h.cairn_ok(&repo, &["adr", "new", "Use tantivy for the index"]);
    Plan {
        victim: strings(&["index"]),
        after: After::Again(None),
        remote: false,
    }
}

fn sync_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    h.git_ok(dir, &["init", "-q", "--bare", "remote.git"]);
    let branch = h.git_ok(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let branch = branch.trim().to_string();
    h.git_ok(&repo, &["remote", "add", "origin", "../remote.git"]);
    h.git_ok(&repo, &["push", "-q", "-u", "origin", &branch]);
    // Another machine: a clone that pushes records of its own.
    h.git_ok(dir, &["clone", "-q", "-b", &branch, "remote.git", "other"]);
    let other = dir.join("other");
    h.cairn_ok(
        &other,
        &["slog", "deploy", "caddy", "from the other machine"],
    );
    h.cairn_ok(
        &other,
        &[
            "remember",
            "The staging database is wiped every night at 02:00",
        ],
    );
    h.cairn_ok(&other, &["adr", "new", "Keep the vault in git"]);
    h.git_ok(&other, &["push", "-q", "origin", &branch]);
    // This machine: records of its own, not pushed yet.
    h.cairn_ok(&repo, &["slog", "fix", "redis", "from this machine"]);
    h.cairn_ok(
        &repo,
        &[
            "remember",
            "Prefer small pull requests that change one thing at a time",
        ],
    );
    h.cairn_ok(&repo, &["adr", "new", "Use tantivy for the index"]);
    let _ = std::fs::remove_dir_all(&other);
    Plan {
        victim: strings(&["sync"]),
        after: After::Again(None),
        remote: true,
    }
}

fn library_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    // Real documents: the ADRs of a public project, as Markdown files a person adds.
    let from = h.fixtures.join("adr").join("madr-semantic-kernel");
    // One folder for every trial: a document's id is made from its absolute path.
    let to = h.work.join("library-docs");
    std::fs::create_dir_all(&to).expect("docs input");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
        .expect("adr fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    names.sort();
    for p in names.iter().take(40) {
        std::fs::copy(p, to.join(p.file_name().expect("name"))).expect("copy doc");
    }
    Plan {
        victim: strings(&["library", "add", "--copy", &to.to_string_lossy()]),
        after: After::Again(None),
        remote: false,
    }
}

fn note_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    h.cairn_ok(
        &repo,
        &[
            "note",
            "--offline",
            "--no-llm",
            "The staging cluster drains nodes before a kernel update",
        ],
    );
    Plan {
        victim: strings(&[
            "note",
            "--offline",
            "--no-llm",
            "--context",
            "found while debugging the nightly backup",
            "restic prunes with --keep-daily 7 on the backup host",
        ]),
        after: After::Next(vec![strings(&[
            "note",
            "--offline",
            "--no-llm",
            "caddy reloads without dropping connections",
        ])]),
        remote: false,
    }
}

/// Every scenario, in the order the issue names the commands.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "slog",
            failpoints: &["slog-after-append", "commit-before-index"],
            setup: slog_setup,
        },
        Scenario {
            name: "remember",
            failpoints: &["remember-after-append", "commit-before-index"],
            setup: remember_setup,
        },
        Scenario {
            name: "import-observations",
            failpoints: &["import-after-append"],
            setup: import_setup,
        },
        Scenario {
            name: "adr-import",
            failpoints: &["adr-import-after-first"],
            setup: adr_import_setup,
        },
        Scenario {
            name: "sessions-ingest",
            failpoints: &["ingest-before-commit"],
            setup: ingest_setup,
        },
        Scenario {
            name: "observe",
            failpoints: &["observe-after-append"],
            setup: observe_setup,
        },
        Scenario {
            name: "reflect",
            failpoints: &["reflect-after-append", "reflect-before-refs"],
            setup: reflect_setup,
        },
        Scenario {
            name: "review-approve",
            failpoints: &[
                "journal-written",
                "journal-first-step",
                "journal-before-commit",
                "journal-before-refs",
            ],
            setup: review_setup,
        },
        Scenario {
            name: "triage",
            failpoints: &[
                "journal-written",
                "journal-before-commit",
                "journal-before-refs",
            ],
            setup: triage_setup,
        },
        Scenario {
            name: "maintain",
            failpoints: &["maintain-after-append"],
            setup: maintain_setup,
        },
        Scenario {
            name: "forget",
            failpoints: &[
                "forget-tombstones",
                "forget-file",
                "forget-before-commit",
                "forget-before-cleanup",
            ],
            setup: forget_setup,
        },
        Scenario {
            name: "index",
            failpoints: &[],
            setup: index_setup,
        },
        Scenario {
            name: "library-add",
            failpoints: &["library-before-commit", "commit-before-index"],
            setup: library_setup,
        },
        Scenario {
            name: "note",
            failpoints: &["note-after-write", "commit-before-index"],
            setup: note_setup,
        },
        Scenario {
            name: "sync",
            failpoints: &["sync-renumber-mid", "commit-before-index"],
            setup: sync_setup,
        },
    ]
}
