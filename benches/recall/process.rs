//! The processes a run times: cairn, git, the scanner it is compared with (ripgrep or grep),
//! and the tool that reads a child's peak memory.

use std::ffi::{OsStr, OsString};
use std::fs::{self};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{CAIRN, die};

#[derive(Clone)]
pub(super) enum Scanner {
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

    pub(super) fn describe(&self) -> String {
        match self {
            Scanner::Rg(v) => format!("{v} (`rg -i -c -e WORD…`)"),
            Scanner::Grep(v) => format!("rg not found: {v} (`grep -r -i -c -e WORD…`) instead"),
        }
    }

    pub(super) fn short(&self) -> &'static str {
        match self {
            Scanner::Rg(_) => "rg",
            Scanner::Grep(_) => "grep",
        }
    }
}

#[derive(Clone)]
pub(super) enum RssTool {
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

    pub(super) fn describe(&self) -> String {
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
pub(super) struct BenchEnv {
    pub(super) vars: Vec<(&'static str, OsString)>,
    pub(super) scratch: PathBuf,
    pub(super) scanner: Scanner,
    pub(super) rss: RssTool,
}

impl BenchEnv {
    pub(super) fn new(scratch: &Path) -> BenchEnv {
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

    pub(super) fn command(&self, program: impl AsRef<OsStr>, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null());
        cmd
    }

    pub(super) fn cairn(&self, repo: &Path, args: &[&str]) -> Command {
        let mut cmd = self.command(CAIRN, repo);
        cmd.arg("--repo").arg(repo).args(args);
        cmd
    }

    pub(super) fn git(&self, cwd: &Path, args: &[&str]) -> Command {
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
    pub(super) fn scan(&self, repo: &Path, query: &str) -> Command {
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
    pub(super) fn run_rss(
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
pub(super) fn timed(cmd: &mut Command, ok_codes: &[i32], what: &str) -> (Duration, Output) {
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

pub(super) fn tail(s: &str, max: usize) -> &str {
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

pub(super) fn json_of(out: &Output, what: &str) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        die(format!(
            "{what} did not print JSON ({e}): {}",
            tail(&String::from_utf8_lossy(&out.stdout), 2000)
        ))
    })
}
