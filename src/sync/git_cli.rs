//! The git command line, for what gix does not do: fetch, merge with git's own merge drivers
//! (`merge=union`), commit a merge, push.
//!
//! Every run is non-interactive and bounded: stdin is closed, `GIT_TERMINAL_PROMPT=0` and
//! `GCM_INTERACTIVE=never` stop credential prompts, ssh runs with `BatchMode=yes` (unless the
//! person configured their own ssh command), and a run that outlives the timeout is killed
//! together with its children (it runs in a process group of its own). Commits are made as the
//! identity cairn's own commits use, so a machine with no git identity still merges.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{Error, Kind, Result};

/// The outcome of one git run that ended on its own.
#[derive(Debug)]
pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// git's own words, for an error message: its stderr, else its stdout, trimmed.
    pub fn words(&self) -> String {
        let text = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        text.trim().to_string()
    }
}

/// git run in one work tree.
pub struct Git {
    dir: PathBuf,
    timeout: Duration,
    name: String,
    email: String,
    /// ssh is run in batch mode (set when the person has no ssh command of their own).
    batch_ssh: bool,
    /// Where the running git's process group is noted ([`Git::stop_left_running`]).
    running_note: Option<PathBuf>,
}

impl Git {
    pub fn new(dir: &Path, timeout: Duration, name: String, email: String) -> Git {
        let mut git = Git {
            dir: dir.to_path_buf(),
            timeout,
            name,
            email,
            batch_ssh: false,
            running_note: None,
        };
        let own_ssh = std::env::var_os("GIT_SSH_COMMAND").is_some()
            || std::env::var_os("GIT_SSH").is_some()
            || git
                .run(&["config", "--get", "core.sshCommand"])
                .is_ok_and(|o| o.success);
        git.batch_ssh = !own_ssh;
        git
    }

    /// Notes each run's process group in `path` while it runs, so that the next run can stop
    /// what a killed cairn left behind ([`Git::stop_left_running`]).
    pub fn with_running_note(mut self, path: PathBuf) -> Git {
        self.running_note = Some(path);
        self
    }

    /// A git run runs in a process group of its own (so that a timeout stops its ssh too),
    /// which SIGKILL to cairn (or to cairn's group) does not reach: a killed sync's `git fetch`
    /// or `git push` runs on, and races the next sync's fetch over
    /// `refs/remotes/ORIGIN/BRANCH` ("cannot lock ref …: is at X but expected Y"), or dies
    /// later leaving its `.lock` files. When the note of a run that never finished is there,
    /// its group is killed (when the process is still the one noted: same pid and start time)
    /// and waited for; true then, and the caller clears the lock files it may have left.
    pub fn stop_left_running(&self) -> Result<bool> {
        let Some(note) = &self.running_note else {
            return Ok(false);
        };
        let text = match std::fs::read_to_string(note) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(note.display(), &e)),
        };
        let mut words = text.split_whitespace();
        let pid = words.next().and_then(|w| w.parse::<u32>().ok());
        let started = words.next().and_then(|w| w.parse::<u64>().ok());
        // The note is derived state a clone may carry (ADR 66): only a git process is stopped.
        if let (Some(pid), Some(started)) = (pid, started)
            && process_start(pid) == Some(started)
            && is_git(pid)
        {
            kill_group(pid);
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while process_start(pid) == Some(started) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        remove_note(note)?;
        Ok(true)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.dir)
            .arg("-c")
            .arg(format!("user.name={}", self.name))
            .arg("-c")
            .arg(format!("user.email={}", self.email))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GCM_INTERACTIVE", "never")
            .env("SSH_ASKPASS_REQUIRE", "never")
            // git's words are parsed (conflict lists, rejected pushes): keep them in English.
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C");
        if self.batch_ssh {
            cmd.env(
                "GIT_SSH_COMMAND",
                format!(
                    "ssh -o BatchMode=yes -o ConnectTimeout={}",
                    self.timeout.as_secs().clamp(1, 60)
                ),
            );
        }
        cmd
    }

    /// Runs `git ARGS`; an error only when git could not be started or outlived the timeout.
    pub fn run(&self, args: &[&str]) -> Result<Output> {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command(args);
        cmd.process_group(0);
        let child = cmd.spawn().map_err(|e| {
            Error::new(Kind::Git, format!("cannot run git: {e}"))
                .with_fix("install git (cairn sync uses it to fetch, merge and push)")
        })?;
        let pid = child.id();
        if let Some(note) = &self.running_note {
            let started = process_start(pid)
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            // A hint for the next run, not a record: a lost note costs only the cleanup.
            let _ = std::fs::write(note, format!("{pid}{started}\n"));
        }
        let out = self.wait(child, args);
        // A run stopped at the timeout keeps its note: killed, it may have left lock files
        // that the next sync clears.
        if let (Some(note), Ok(_)) = (&self.running_note, &out) {
            remove_note(note)?;
        }
        out
    }

    fn wait(&self, child: std::process::Child, args: &[&str]) -> Result<Output> {
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(self.timeout) {
            Ok(out) => out,
            Err(_) => {
                // The whole group: git and the ssh (or helper) it started.
                kill_group(pid);
                let _ = rx.recv_timeout(Duration::from_secs(5));
                return Err(Error::new(
                    Kind::Git,
                    format!(
                        "git {} did not finish within {} s and was stopped",
                        args.first().copied().unwrap_or_default(),
                        self.timeout.as_secs()
                    ),
                )
                .with_fix(
                    "check that the remote answers (`git fetch` by hand), or allow more time \
                     with --timeout SECS",
                ));
            }
        };
        let out = out.map_err(|e| Error::new(Kind::Git, format!("cannot run git: {e}")))?;
        Ok(Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs `git ARGS` and fails with git's words unless it succeeded.
    pub fn ok(&self, args: &[&str], what: &str) -> Result<Output> {
        let out = self.run(args)?;
        if !out.success {
            return Err(Error::new(Kind::Git, format!("{what}: {}", out.words())));
        }
        Ok(out)
    }

    /// The trimmed stdout of a query that must succeed.
    pub fn text(&self, args: &[&str], what: &str) -> Result<String> {
        Ok(self.ok(args, what)?.stdout.trim().to_string())
    }

    /// A config value, `None` when unset.
    pub fn config(&self, key: &str) -> Result<Option<String>> {
        let out = self.run(&["config", "--get", key])?;
        Ok(out
            .success
            .then(|| out.stdout.trim().to_string())
            .filter(|v| !v.is_empty()))
    }
}

/// SIGKILL to the process group `pid` leads.
fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// When the live (not zombie) process `pid` started, in clock ticks since boot (Linux's
/// `/proc/PID/stat`, field 22): with the pid, it names one process, not a reused pid.
/// `None` when there is no such process or no `/proc`.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may hold spaces): field 3 on.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Whether process `pid` runs git (its command name, as the kernel keeps it).
fn is_git(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|name| name.trim() == "git" || name.trim().starts_with("git-"))
}

fn remove_note(note: &Path) -> Result<()> {
    match std::fs::remove_file(note) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(note.display(), &e)),
    }
}
