//! Review at scale: how long until `cairn review` shows its first proposal when 1,000 wait.
//!
//! Run with `scripts/bench-review` (or `cargo bench --bench review -- [--pending N] [--obs N]
//! [--runs N]`; `CAIRN_BENCH_PENDING`, `CAIRN_BENCH_OBS` and `CAIRN_BENCH_RUNS` set the
//! defaults, `CAIRN_BENCH_KEEP=1` keeps the work folder). The bench
//!
//! 1. makes a repository whose MEMORY.md holds about 100 entries in the seven sections, with a
//!    real Codex transcript ingested and observed (so the first proposal cites an observation
//!    from a turn card, whose session and turn a review looks up) and `--obs` more
//!    observations imported (5,000 by default);
//! 2. writes `--pending` proposals (1,000 by default; adds, and replaces of existing entries,
//!    each citing two observations) as `cairn reflect` does, commits them and gives each its
//!    ref `refs/cairn/proposals/<id>`;
//! 3. times, whole process, median of `--runs`: `cairn review --show FIRST` (the first
//!    proposal with its sources and diff), `cairn review --list`, and `cairn review` in a
//!    pseudo-terminal until its first prompt is drawn; beside `git status` in the same
//!    repository.
//!
//! Target (issue 11): the first proposal shown in under 100 ms at 1,000 pending.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cairn::proposals::{self, Op, Proposal};

mod common;
use common::{load, median_of as median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");
const NOW: &str = "2026-12-01T12:00:00Z";

const SECTIONS: [&str; 7] = [
    "Preferences",
    "Rules and conventions",
    "System architecture",
    "Operations",
    "Memory system",
    "Projects",
    "People and relationships",
];

fn main() {
    let pending = setting("--pending", "CAIRN_BENCH_PENDING", 1000);
    let obs = setting("--obs", "CAIRN_BENCH_OBS", 5000);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 20);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-review-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn review bench: {pending} pending proposals, {obs} imported observations, {runs} runs; load {}",
        load()
    );

    // 1. MEMORY.md and the observations.
    run(Command::new(CAIRN).arg("init").arg(&repo), "init");
    let entries = memory(&repo);
    git(&repo, &["add", "MEMORY.md"]);
    git(&repo, &["commit", "-q", "-m", "memory: 100 entries"]);
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/sessions/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    );
    run(
        cairn(&repo, &["sessions", "ingest"]).arg(&transcript),
        "ingest",
    );
    let observed = data(
        &run(
            &mut cairn(
                &repo,
                &["--json", "observe", "--all", "--observer", "builtin"],
            ),
            "observe",
        ),
        "observe",
    );
    let mut ids: Vec<String> = observed["observations"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let from_turns = ids.len();
    let file = work.path().join("observations.jsonl");
    let mut lines = String::new();
    for k in 0..obs {
        let line = serde_json::json!({
            "observation": format!(
                "Service {} needs {} before its deploy step; seen in run {k} on host build-{}",
                k % 97, ["a warm cache", "the VPN", "root", "a clean tree", "the staging key"][k % 5], k % 13
            ),
            "session_id": format!("claude/bench-{:04}", k % 400),
            "timestamp": "2026-11-20T10:00:00Z",
        });
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&file, lines).expect("write observations");
    run(
        cairn(&repo, &["import", "observations", "--raw"]).arg(&file),
        "import",
    );
    let more: Vec<String> = stored_ids(&repo)
        .into_iter()
        .filter(|id| !ids.contains(id))
        .collect();
    ids.extend(more);

    // 2. The proposals, committed, each with its ref.
    let created = chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("time")
        .with_timezone(&chrono::Utc);
    let mut text = String::new();
    let mut first = String::new();
    let mut refs = String::new();
    for k in 0..pending {
        let cited = vec![
            ids[k % ids.len()].clone(),
            ids[(k * 7 + 1) % ids.len()].clone(),
        ];
        let section = SECTIONS[k % SECTIONS.len()];
        let p = if k % 5 == 4 {
            let (s, target) = &entries[k % entries.len()];
            Proposal::new(
                Op::Replace,
                s,
                &format!("{target}, checked again in review {k}"),
                vec![target.clone()],
                "observed again with more detail",
                cited,
                0.6,
                "builtin",
                created,
            )
        } else {
            Proposal::new(
                Op::Add,
                section,
                &format!(
                    "Proposal {k}: service {} needs {} before deploying",
                    k % 97,
                    k % 11
                ),
                vec![],
                "observed in two sessions",
                cited,
                0.5,
                "builtin",
                created,
            )
        };
        if first.is_empty() {
            first = p.id.clone();
        }
        refs.push_str(&format!("create refs/cairn/proposals/{} HEAD\n", p.id));
        text.push_str(&proposals::line(&p));
    }
    let rel = "vault/proposals/2026-12-01.jsonl";
    std::fs::create_dir_all(repo.join("vault/proposals")).expect("mkdir");
    std::fs::write(repo.join(rel), &text).expect("write proposals");
    git(&repo, &["add", rel]);
    git(&repo, &["commit", "-q", "-m", "reflect: proposals"]);
    let mut update = git_command(&repo);
    update.args(["update-ref", "--stdin"]).stdin(Stdio::piped());
    let mut child = update.spawn().expect("git update-ref");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(refs.as_bytes())
        .expect("write refs");
    assert!(child.wait().expect("update-ref").success());
    let listed = data(
        &run(&mut cairn(&repo, &["--json", "review", "--list"]), "list"),
        "list",
    );
    assert_eq!(listed["pending"].as_u64(), Some(pending as u64));
    let shown = data(
        &run(
            &mut cairn(&repo, &["--json", "review", "--show", &first]),
            "show",
        ),
        "show",
    );
    println!(
        "repository: MEMORY.md {} entries, {} observations ({from_turns} from turns), {} proposals ({} KB); the first cites {} (turn {})",
        entries.len(),
        ids.len(),
        pending,
        text.len() / 1000,
        shown["sources"][0]["id"],
        shown["sources"][0]["turn"],
    );

    // 3. The timings.
    let show = median(runs, || {
        timed(cairn(&repo, &["review", "--show", &first]), "show")
    });
    let list = median(runs, || timed(cairn(&repo, &["review", "--list"]), "list"));
    let status = median(runs, || {
        timed(git_command_in(&repo, &["status"]), "git status")
    });
    let prompt = median(runs, || first_prompt(&repo));
    println!();
    println!("{:<52} {:>9}   target", "step", "median");
    for (name, t, target) in [
        (
            "cairn review --show FIRST (whole process)",
            show,
            Some(100.0),
        ),
        ("cairn review --list (whole process)", list, None),
        (
            "cairn review in a pty, until the first prompt",
            prompt,
            Some(100.0),
        ),
        ("git status (reference)", status, None),
    ] {
        let (target, verdict) = match target {
            Some(limit) => (format!("< {limit} ms"), verdict(ms(t) < limit)),
            None => (String::new(), ""),
        };
        println!("{name:<52} {:>6.1} ms   {target:<10} {verdict}", ms(t));
    }
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

/// Writes MEMORY.md with 98 entries (14 in each of the seven sections) and returns each
/// entry's (section, text).
fn memory(repo: &Path) -> Vec<(String, String)> {
    let mut text = String::from("# Memory\n\n<!-- Curated memory, written for the bench -->\n");
    let mut entries = Vec::new();
    for (s, section) in SECTIONS.iter().enumerate() {
        text.push_str(&format!("\n## {section}\n\n"));
        for e in 0..14 {
            let entry = format!(
                "Entry {e} of {section}: the {} step of service {} runs with care",
                ["build", "deploy", "test", "release"][e % 4],
                s * 14 + e
            );
            text.push_str(&format!("- (2026-11-{:02}) {entry}\n", 1 + e));
            entries.push((section.to_string(), entry));
        }
    }
    std::fs::write(repo.join("MEMORY.md"), text).expect("write MEMORY.md");
    entries
}

/// The ids in the observation files.
fn stored_ids(repo: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let dir = repo.join("vault/observations");
    for e in std::fs::read_dir(dir).expect("observations") {
        let text = std::fs::read_to_string(e.expect("entry").path()).expect("read");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            if v.get("op").is_none()
                && let Some(id) = v["id"].as_str()
            {
                out.push(id.to_string());
            }
        }
    }
    out
}

/// `cairn review` in a pseudo-terminal: the time until its choice is drawn; then quits.
fn first_prompt(repo: &Path) -> Duration {
    use expectrl::{Eof, Expect, Session};
    let mut cmd = cairn(repo, &["review"]);
    cmd.env("TERM", "xterm-256color");
    let start = Instant::now();
    let mut p = Session::spawn(cmd).expect("spawn in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    p.expect("what now").expect("the first prompt");
    let t = start.elapsed();
    p.send("q").expect("quit");
    p.expect(Eof).expect("exit");
    t
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(CAIRN);
    c.arg("--repo")
        .arg(repo)
        .arg("--now")
        .arg(NOW)
        .args(args)
        .env_remove("CAIRN_REPO")
        .env_remove("CAIRN_NOW");
    c
}

fn git_command(repo: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(repo).args([
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
    ]);
    c
}

fn git_command_in(repo: &Path, args: &[&str]) -> Command {
    let mut c = git_command(repo);
    c.args(args);
    c
}

fn git(repo: &Path, args: &[&str]) {
    run(&mut git_command_in(repo, args), &format!("git {args:?}"));
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn data(out: &Output, what: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["data"].clone()
}

fn timed(mut cmd: Command, what: &str) -> Duration {
    let start = Instant::now();
    run(&mut cmd, what);
    start.elapsed()
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}
