//! Huge and hostile inputs through the release binary, each made in a temporary folder
//! (streamed, never held in memory here) and deleted after: a 2 GB transcript and a 250 MB
//! one (both streamed by `sessions ingest`, a line at a time), a line of 100 MB, a 500 MB
//! observations file (streamed by `import observations`), a million files in a folder. For each: the exit code, whole-process wall time, peak resident memory (GNU time's
//! maximum RSS) and what cairn said on stderr, beside `wc -l` over the same input as the
//! reference for reading it once. Run with `scripts/hostile`; smaller sizes with flags:
//!
//! ```text
//! scripts/hostile --transcript-mb 2048 --big-mb 250 --line-mb 100 \
//!     --observations-mb 500 --files 1000000
//! ```
//!
//! A size of 0 leaves that input out (`--observations-mb 0 --files 0`: the transcripts only).

mod common;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const MIB: u64 = 1024 * 1024;

/// What one run of a command cost.
struct Cost {
    code: i32,
    wall_s: f64,
    peak_rss_mib: f64,
    said: String,
}

/// Runs `cmd` under GNU time and reads its maximum RSS; `said` is the last lines of stderr.
fn measure(cmd: Command) -> Cost {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().join("time");
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(program)
        .args(args);
    if let Some(cwd) = cmd.get_current_dir() {
        timed.current_dir(cwd);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    let started = Instant::now();
    let out = timed.output().expect("run /usr/bin/time (GNU time)");
    let wall_s = started.elapsed().as_secs_f64();
    let kib: f64 = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(f64::NAN);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("Command exited"))
        .collect();
    let said = said[said.len().saturating_sub(2)..].join(" | ");
    Cost {
        code: out.status.code().unwrap_or(-1),
        wall_s,
        peak_rss_mib: kib / 1024.0,
        said: said.chars().take(220).collect(),
    }
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(CAIRN);
    cmd.current_dir(repo)
        .args(args)
        .env("CAIRN_NOW", "2026-12-01T10:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    cmd
}

fn print(what: &str, input: &str, c: &Cost, reference: Option<&Cost>) {
    println!(
        "{what:<44} {input:>10}  exit {:>2}  {:>7.1} s  peak RSS {:>8.1} MiB{}",
        c.code,
        c.wall_s,
        c.peak_rss_mib,
        reference
            .map(|r| format!("  (wc -l: {:.1} s, {:.1} MiB)", r.wall_s, r.peak_rss_mib))
            .unwrap_or_default()
    );
    if !c.said.is_empty() {
        println!("    stderr: {}", c.said);
    }
}

fn wc(path: &Path) -> Cost {
    let mut cmd = Command::new("wc");
    cmd.arg("-l").arg(path);
    measure(cmd)
}

/// A Claude Code transcript of real shape, streamed to `path` until it holds `bytes`: turns
/// of a prompt, a Bash call, its result (`result_bytes` of output) and an answer. Each turn's
/// lines are made once by serde and numbered by `str::replace` (fast even unoptimized).
fn transcript(path: &Path, bytes: u64, result_bytes: usize) {
    let file = std::fs::File::create(path).expect("create transcript");
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let session = "5f0c7a1e-0000-4000-8000-00000000b16b";
    let common = |line: u8, v: serde_json::Value| {
        let mut v = v;
        let o = v.as_object_mut().expect("an object");
        o.insert(
            "uuid".into(),
            json!(format!("00000000-0000-4000-8000-@T@{line}")),
        );
        let parent = match line {
            0 => json!("00000000-0000-4000-8000-@P@3"),
            n => json!(format!("00000000-0000-4000-8000-@T@{}", n - 1)),
        };
        o.insert("parentUuid".into(), parent);
        o.insert("sessionId".into(), json!(session));
        o.insert("timestamp".into(), json!("2026-11-20T10:00:00.000Z"));
        o.insert("cwd".into(), json!("/home/ana/shop"));
        v.to_string()
    };
    let output = "x".repeat(result_bytes);
    let template = [
        common(0, json!({"type": "user", "message": {"role": "user", "content": "turn @N@: run the tests and never skip the linter"}})),
        common(1, json!({"type": "assistant", "message": {"id": "m@N@", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_@N@", "name": "Bash", "input": {"command": "cargo test"}}]}})),
        common(2, json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": "toolu_@N@", "type": "tool_result", "content": output, "is_error": false}]}})),
        common(3, json!({"type": "assistant", "message": {"id": "m@N@e", "role": "assistant", "content": [{"type": "text", "text": "All tests pass."}], "stop_reason": "end_turn"}})),
    ]
    .join("\n")
        + "\n";
    let mut written = 0u64;
    let mut turn = 0u64;
    while written < bytes {
        turn += 1;
        let text = template
            .replace("@N@", &turn.to_string())
            .replace("@T@", &format!("{turn:011}"))
            .replace("@P@", &format!("{:011}", turn - 1));
        w.write_all(text.as_bytes()).expect("write");
        written += text.len() as u64;
    }
    w.flush().expect("flush");
}

/// An observations file for `import observations`, streamed until it holds `bytes`.
fn observations(path: &Path, bytes: u64) {
    let file = std::fs::File::create(path).expect("create observations");
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut written = 0u64;
    let mut i = 0u64;
    while written < bytes {
        i += 1;
        let line = json!({"observation": format!("observation {i}: run the migrations before the deploy of service {i}"), "source": "bench"}).to_string();
        w.write_all(line.as_bytes()).expect("write");
        w.write_all(b"\n").expect("write");
        written += line.len() as u64 + 1;
    }
    w.flush().expect("flush");
}

fn new_repo(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    let out = Command::new(CAIRN)
        .arg("init")
        .arg(&repo)
        .output()
        .expect("cairn init");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo
}

fn main() {
    let transcript_mb: u64 = common::setting("--transcript-mb", "HOSTILE_TRANSCRIPT_MB", 2048);
    let big_mb: u64 = common::setting("--big-mb", "HOSTILE_BIG_MB", 250);
    let line_mb: u64 = common::setting("--line-mb", "HOSTILE_LINE_MB", 100);
    let observations_mb: u64 = common::setting("--observations-mb", "HOSTILE_OBSERVATIONS_MB", 500);
    let files: u64 = common::setting("--files", "HOSTILE_FILES", 1_000_000);
    println!("hostile inputs: cairn {CAIRN}; load {}", common::load());

    // A huge transcript: streamed, its peak memory bounded by its longest line plus what its
    // turns keep, not by its size.
    if transcript_mb > 0 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = new_repo(tmp.path());
        let t = tmp.path().join("huge.jsonl");
        transcript(&t, transcript_mb * MIB, 2000);
        let c = measure(cairn(
            &repo,
            &["sessions", "ingest", t.to_str().expect("utf-8")],
        ));
        print(
            "sessions ingest, huge transcript",
            &format!("{transcript_mb} MiB"),
            &c,
            Some(&wc(&t)),
        );
    }
    // A big transcript (the largest the old whole-file read took): streamed the same way.
    if big_mb > 0 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = new_repo(tmp.path());
        let t = tmp.path().join("big.jsonl");
        transcript(&t, big_mb * MIB, 2000);
        let c = measure(cairn(
            &repo,
            &["sessions", "ingest", t.to_str().expect("utf-8")],
        ));
        print(
            "sessions ingest, big transcript",
            &format!("{big_mb} MiB"),
            &c,
            Some(&wc(&t)),
        );
    }
    // One line of 100 MB (a tool's output) among ordinary turns: under the line cap, read.
    if line_mb > 0 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = new_repo(tmp.path());
        let t = tmp.path().join("line.jsonl");
        transcript(&t, line_mb * MIB, (line_mb * MIB) as usize);
        let c = measure(cairn(
            &repo,
            &["sessions", "ingest", t.to_str().expect("utf-8")],
        ));
        print(
            "sessions ingest, one line of the size",
            &format!("{line_mb} MiB"),
            &c,
            Some(&wc(&t)),
        );
        let c = measure(cairn(&repo, &["recall", "linter"]));
        print("recall after it", "", &c, None);
    }
    // A huge observations file: streamed (checked whole first, then admitted in batches and
    // committed a part of 64 MiB at a time), its peak memory bounded by a batch and a part.
    if observations_mb > 0 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = new_repo(tmp.path());
        let o = tmp.path().join("observations.jsonl");
        observations(&o, observations_mb * MIB);
        let c = measure(cairn(
            &repo,
            &["import", "observations", o.to_str().expect("utf-8")],
        ));
        print(
            "import observations, huge file",
            &format!("{observations_mb} MiB"),
            &c,
            Some(&wc(&o)),
        );
        // A line of 100 MB in an import: refused at its line.
        let l = tmp.path().join("line.jsonl");
        let mut w = BufWriter::new(std::fs::File::create(&l).expect("create"));
        writeln!(
            w,
            "{}",
            json!({"observation": "x".repeat((line_mb * MIB) as usize), "source": "bench"})
        )
        .expect("write");
        w.flush().expect("flush");
        drop(w);
        let c = measure(cairn(
            &repo,
            &["import", "observations", l.to_str().expect("utf-8")],
        ));
        print(
            "import observations, one line of the size",
            &format!("{line_mb} MiB"),
            &c,
            Some(&wc(&l)),
        );
    }
    // A million files in one folder: the walk of `sessions ingest DIR` and of `adr list` with
    // the same files in decisions/.
    if files > 0 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let repo = new_repo(tmp.path());
        let dir = tmp.path().join("many");
        std::fs::create_dir(&dir).expect("mkdir");
        let started = Instant::now();
        for i in 0..files {
            std::fs::File::create(dir.join(format!("{i:07}.txt"))).expect("create");
        }
        transcript(&dir.join("one.jsonl"), 64 * 1024, 200);
        println!(
            "    ({files} files made in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
        let c = measure(cairn(
            &repo,
            &["sessions", "ingest", dir.to_str().expect("utf-8")],
        ));
        let mut find = Command::new("find");
        find.arg(&dir).arg("-name").arg("*.jsonl");
        print(
            "sessions ingest, folder of files",
            &format!("{files}"),
            &c,
            None,
        );
        let f = measure(find);
        println!(
            "    (find -name '*.jsonl' over it: {:.1} s, {:.1} MiB)",
            f.wall_s, f.peak_rss_mib
        );
        let decisions = repo.join("decisions");
        std::fs::remove_dir_all(&decisions).expect("rm decisions");
        std::fs::rename(&dir, &decisions).expect("move into decisions/");
        let c = measure(cairn(&repo, &["adr", "list"]));
        print(
            "adr list, decisions/ of files",
            &format!("{files}"),
            &c,
            None,
        );
        let c = measure(cairn(&repo, &["recall", "linter"]));
        print("recall, decisions/ of files", &format!("{files}"), &c, None);
    }
}
