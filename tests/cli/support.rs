//! A small builder for running the binary, after just's `tests/test.rs`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_cairn");

/// A temporary directory with a HOME of its own, where repositories are made.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Env { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A fresh knowledge repository at `<tmp>/repo`, made by `cairn init`.
    pub fn repo() -> (Env, PathBuf) {
        let env = Env::new();
        let repo = env.path().join("repo");
        env.cairn(&["init", repo.to_str().unwrap()]).code(0);
        (env, repo)
    }

    /// Runs cairn with the working directory at the temp root.
    pub fn cairn(&self, args: &[&str]) -> Run {
        self.cairn_in(self.path(), args)
    }

    pub fn cairn_in(&self, cwd: &Path, args: &[&str]) -> Run {
        let mut cmd = self.command(BIN, cwd);
        cmd.args(args);
        Run::from(cmd.output().expect("run cairn"))
    }

    /// A command with the scrubbed environment.
    pub fn command(&self, program: &str, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(cwd).stdin(Stdio::null());
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("GIT_")
                || key.starts_with("CAIRN_")
                || key == "HOME"
                || key == "XDG_CONFIG_HOME"
                || key == "CODEX_HOME"
                || key == "CLAUDE_CONFIG_DIR"
                || key == "EMAIL"
            {
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

    /// Runs git in `cwd` and returns its stdout; panics if git fails.
    pub fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self
            .command("git", cwd)
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(args)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// The outcome of one run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn code(self, want: i32) -> Run {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// stdout as the JSON envelope; checks it is exactly one object with the v1 fields.
    #[track_caller]
    pub fn json(&self) -> Value {
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "want one JSON line, got:\n{}", self.stdout);
        let v: Value = serde_json::from_str(lines[0]).expect("stdout is JSON");
        assert_eq!(v["v"], 1, "{v}");
        assert!(v["type"].is_string(), "{v}");
        assert!(v["data"].is_object(), "{v}");
        v
    }

    /// The `data` of the JSON envelope.
    #[track_caller]
    pub fn data(&self) -> Value {
        self.json()["data"].clone()
    }

    #[track_caller]
    pub fn stdout_has(self, needle: &str) -> Run {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.stdout
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(self, needle: &str) -> Run {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
        self
    }
}

/// Reads a file under `root`.
pub fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// Every JSON line of every file in `dir` (non-recursive), parsed.
pub fn jsonl_lines(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            out.push(
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}: {e}: {line}", f.display())),
            );
        }
    }
    out
}

/// `git status --porcelain` of `root`.
pub fn git_status(env: &Env, root: &Path) -> String {
    env.git(root, &["status", "--porcelain"])
}

/// The fixtures folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Fake secrets of the real formats, from `tests/fixtures/secrets/corpus.txt`: (kind, text).
pub fn secret_corpus() -> Vec<(String, String)> {
    std::fs::read_to_string(fixtures().join("secrets/corpus.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (kind, text) = l.split_once('\t').expect("kind<TAB>text");
            (kind.to_string(), text.replace("\\n", " "))
        })
        .collect()
}

/// The secret part of a corpus line: its longest token (split at spaces, quotes, brackets and
/// URL punctuation) that mixes cases or letters and digits.
pub fn secret_of(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || "\"'(),:@;/=".contains(c))
        .filter(|w| {
            w.len() >= 12
                && w.chars()
                    .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
                && w.chars()
                    .any(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        .max_by_key(|w| w.len())
        .unwrap_or_else(|| panic!("no secret in {text:?}"))
        .to_string()
}

/// A running `cairn serve`, stopped when dropped.
pub struct Server {
    child: Child,
    pub url: String,
    pub token: String,
    pub stderr_path: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cairn serve --port 0 EXTRA…` in `repo` with its token under `<env>/config`, and
/// waits for the URL line.
pub fn serve(env: &Env, repo: &Path, extra: &[&str]) -> Server {
    serve_with(env, repo, extra, |_| {})
}

/// [`serve`], with `setup` changing the command first (its environment).
pub fn serve_with(
    env: &Env,
    repo: &Path,
    extra: &[&str],
    setup: impl FnOnce(&mut Command),
) -> Server {
    let config = env.path().join("config");
    let stderr_path = env
        .path()
        .join(format!("serve-{}.stderr", std::process::id()));
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut cmd = env.command(BIN, repo);
    cmd.args(["serve", "--port", "0"])
        .args(extra)
        .env("CAIRN_CONFIG_DIR", &config)
        .stdout(Stdio::piped())
        .stderr(stderr);
    setup(&mut cmd);
    let mut child = cmd.spawn().expect("start cairn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().trim_end_matches('/').to_string();
    assert!(
        url.starts_with("http://"),
        "no URL line: {line:?}; stderr: {}",
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
    let token_file = extra
        .iter()
        .position(|a| *a == "--token-file")
        .map(|i| PathBuf::from(extra[i + 1]))
        .unwrap_or_else(|| config.join("token"));
    let token = std::fs::read_to_string(token_file)
        .unwrap()
        .trim()
        .to_string();
    Server {
        child,
        url,
        token,
        stderr_path,
    }
}

pub fn client() -> reqwest::blocking::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

/// `cairn adr new TITLE EXTRA…` with placeholder sections (context `c`, decision `d`,
/// consequences `e`), which must succeed.
pub fn adr_new(env: &Env, repo: &Path, title: &str, extra: &[&str]) {
    let mut args = vec!["adr", "new", title];
    args.extend_from_slice(extra);
    args.extend(["--context", "c", "--decision", "d", "--consequences", "e"]);
    env.cairn_in(repo, &args).code(0);
}

/// A small conversation in LoCoMo's shape (made up here: LoCoMo's licence keeps it out of the
/// repository), with four questions and their evidence.
pub fn locomo_file(dir: &Path) -> std::path::PathBuf {
    let turn = |id: &str, speaker: &str, text: &str| json!({"speaker": speaker, "dia_id": id, "text": text});
    let data = json!([{
        "sample_id": "conv-made-up",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("D1:1", "Ana", "I restored the production database to a point in time last night with WAL replay."),
                turn("D1:2", "Ben", "Nice, how long did that take?"),
                turn("D1:3", "Ana", "About forty minutes, mostly downloading the base backup."),
                turn("D1:4", "Ben", "I adopted a kitten named Miso this weekend."),
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                turn("D2:1", "Ana", "We moved the build hosts to the new NFS server."),
                turn("D2:2", "Ben", "Miso knocked my coffee onto the keyboard."),
                turn("D2:3", "Ana", "The stale NFS handles needed root to unmount."),
                turn("D2:4", "Ben", "I am training for a marathon in October."),
            ],
        },
        "qa": [
            {"question": "What did Ana do with PITR?", "answer": "restored the database", "evidence": ["D1:1"], "category": 1},
            {"question": "What is the name of Ben's pet?", "answer": "Miso", "evidence": ["D1:4", "D2:2"], "category": 1},
            {"question": "What needed root on the file server?", "answer": "unmounting stale handles", "evidence": ["D2:3"], "category": 4},
            {"question": "Which race is Ben preparing for?", "answer": "a marathon", "evidence": ["D2:4"], "category": 2},
        ],
    }]);
    let path = dir.join("made-up-locomo.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&data).unwrap()).unwrap();
    path
}
