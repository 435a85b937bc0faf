//! Git hooks at scale: what cairn's hooks add to a `git commit` in a year-old repository.
//!
//! Run with `scripts/bench-git-hooks` (or `cargo bench --bench hooks -- [--adrs N] [--days N]
//! [--runs N]`; `CAIRN_BENCH_ADRS`, `CAIRN_BENCH_DAYS` and `CAIRN_BENCH_RUNS` set the defaults,
//! `CAIRN_BENCH_KEEP=1` keeps the work folder). The bench
//!
//! 1. makes a repository with `--adrs` decision records (300 by default, each superseding the
//!    one before every tenth), `--days` slog day files of 20 entries (365), a MEMORY.md of 150
//!    entries, builds the index and installs the hooks;
//! 2. times, whole process, median of `--runs`: `cairn hooks run pre-commit` with one slog line
//!    staged, and with one ADR edited (the whole `decisions/` folder linted as staged and as in
//!    HEAD), beside `git diff --cached --stat` (git reading the same staged change);
//!    `git commit` of one slog line with cairn's hooks beside the same commit with no hooks;
//!    `cairn hooks run post-commit` (it starts the index update and returns) beside the
//!    foreground `cairn index` after a one-line append that it spares the next read.
//!
//! Between two timed runs the bench waits for the background index update to let go of the
//! index, so that no run is slowed by the one before.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{load, median_of as median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

fn main() {
    let adrs = setting("--adrs", "CAIRN_BENCH_ADRS", 300);
    let days = setting("--days", "CAIRN_BENCH_DAYS", 365);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 20);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-hooks-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn hooks bench: {adrs} ADRs, {days} slog days of 20 entries, 150 MEMORY.md entries, {runs} runs; load {}",
        load()
    );

    // 1. The repository.
    run(Command::new(CAIRN).arg("init").arg(&repo), "init");
    for n in 1..=adrs {
        let supersedes = if n % 10 == 0 {
            format!("[{}]", n - 1)
        } else {
            "[]".into()
        };
        let (status, by) = if n % 10 == 9 && n < adrs {
            ("superseded", format!("[{}]", n + 1))
        } else {
            ("accepted", "[]".into())
        };
        let text = format!(
            "---\nnumber: {n}\ntitle: Decision {n} about service {svc}\nstatus: {status}\n\
             date: 2026-01-{day:02}\ndeciders: []\ntags: [bench]\nsupersedes: {supersedes}\n\
             superseded-by: {by}\n---\n# {n}. Decision {n} about service {svc}\n\n## Context\n\n\
             Service {svc} needs a choice.\n\n## Decision\n\nWe use option {opt}.\n\n\
             ## Consequences\n\nEasier to run.\n",
            svc = n % 97,
            day = n % 28 + 1,
            opt = n % 5,
        );
        write(&repo, &format!("decisions/{n:04}-decision-{n}.md"), &text);
    }
    let day0 = chrono::NaiveDate::from_ymd_opt(2025, 11, 1).expect("date");
    for d in 0..days {
        let day = day0 + chrono::Days::new(d as u64);
        let mut text = String::new();
        for k in 0..20 {
            text.push_str(&format!(
                "{{\"id\":\"sl-{d}-{k}\",\"ts\":\"{day}T10:{k:02}:00Z\",\"action\":\"deploy\",\"tool\":\"svc-{}\",\"detail\":\"rolled release {d}.{k} to web-{}\"}}\n",
                k % 13,
                k % 7
            ));
        }
        write(&repo, &format!("slog/{day}.jsonl"), &text);
    }
    let mut memory = read(&repo, "MEMORY.md");
    for section in ["Operations", "Preferences", "Projects"] {
        memory.push_str(&format!("\n## {section}\n\n"));
        for k in 0..50 {
            memory.push_str(&format!("- (2026-11-01) {section} fact number {k}\n"));
        }
    }
    write(&repo, "MEMORY.md", &memory);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a year of records"]);
    run(&mut cairn(&repo, &["adr", "lint"]), "adr lint");
    run(&mut cairn(&repo, &["index"]), "index");
    run(&mut cairn(&repo, &["hooks", "install"]), "hooks install");

    // 2. The timings.
    let mut line = 0;
    let mut append = |repo: &Path| {
        line += 1;
        let rel = "slog/2026-12-01.jsonl";
        let mut text = std::fs::read_to_string(repo.join(rel)).unwrap_or_default();
        text.push_str(&format!(
            "{{\"id\":\"sl-new-{line}\",\"ts\":\"2026-12-01T10:00:00Z\",\"action\":\"fix\",\"tool\":\"caddy\",\"detail\":\"reload {line}\"}}\n"
        ));
        write(repo, rel, &text);
        rel
    };
    let rel = append(&repo);
    git(&repo, &["add", rel]);
    let pre_slog = median(runs, || {
        time(&mut cairn(&repo, &["hooks", "run", "pre-commit"]))
    });
    let git_slog = median(runs, || {
        time(git_cmd(&repo).args(["diff", "--cached", "--stat"]))
    });
    git(&repo, &["reset", "-q"]);

    let adr = format!("decisions/{:04}-decision-{}.md", adrs / 2, adrs / 2);
    let text = read(&repo, &adr).replace("Service", "The service");
    write(&repo, &adr, &text);
    git(&repo, &["add", &adr]);
    let pre_adr = median(runs, || {
        time(&mut cairn(&repo, &["hooks", "run", "pre-commit"]))
    });
    let git_adr = median(runs, || {
        time(git_cmd(&repo).args(["diff", "--cached", "--stat"]))
    });
    git(&repo, &["commit", "-q", "--no-verify", "-m", "adr edit"]);
    settle(&repo);

    let hooked = median(runs, || {
        let rel = append(&repo);
        git(&repo, &["add", rel]);
        let t = time(git_cmd(&repo).args(["commit", "-q", "-m", "slog line"]));
        settle(&repo);
        t
    });
    let bare = median(runs, || {
        let rel = append(&repo);
        git(&repo, &["add", rel]);
        let t = time(git_cmd(&repo).args([
            "-c",
            "core.hooksPath=/nonexistent",
            "commit",
            "-q",
            "-m",
            "slog line",
        ]));
        settle(&repo);
        t
    });

    let post = median(runs, || {
        append(&repo);
        let t = time(&mut cairn(&repo, &["hooks", "run", "post-commit"]));
        settle(&repo);
        t
    });
    let foreground = median(runs, || {
        append(&repo);
        time(&mut cairn(&repo, &["index"]))
    });

    println!();
    println!("{:<58} {:>10} {:>10}", "step", "median", "reference");
    let row = |what: &str, t: Duration, reference: Option<(&str, Duration)>| match reference {
        Some((name, r)) => println!("{what:<58} {:>8.1} ms {:>8.1} ms  ({name})", ms(t), ms(r)),
        None => println!("{what:<58} {:>8.1} ms", ms(t)),
    };
    row(
        "hooks run pre-commit, one slog line staged",
        pre_slog,
        Some(("git diff --cached --stat", git_slog)),
    );
    row(
        &format!("hooks run pre-commit, one ADR of {adrs} edited"),
        pre_adr,
        Some(("git diff --cached --stat", git_adr)),
    );
    row(
        "git commit of one slog line, cairn's hooks",
        hooked,
        Some(("the same commit, no hooks", bare)),
    );
    row(
        "hooks run post-commit (starts the index update, returns)",
        post,
        Some(("cairn index in the foreground", foreground)),
    );
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        println!("kept {}", work.keep().display());
    }
}

/// Waits until no background index update holds the index: `cairn index` gets the writer lock.
fn settle(repo: &Path) {
    // Time for a just-started update to take the lock before this one looks.
    std::thread::sleep(Duration::from_millis(100));
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let out = run(&mut cairn(repo, &["--json", "index"]), "index");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        if v["data"]["refresh"]["stale"] == false {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the index stayed locked for 2 minutes");
}

fn time(cmd: &mut Command) -> Duration {
    let started = Instant::now();
    let out = cmd.output().expect("run");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(CAIRN);
    cmd.args(args).current_dir(repo).env_remove("CAIRN_REPO");
    cmd
}

/// git in `repo`, with an identity and cairn on PATH (the hooks call it).
fn git_cmd(repo: &Path) -> Command {
    let bin = Path::new(CAIRN).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("git");
    cmd.current_dir(repo).env("PATH", path).args([
        "-c",
        "user.name=Bench",
        "-c",
        "user.email=bench@example.com",
    ]);
    cmd
}

fn git(repo: &Path, args: &[&str]) {
    run(git_cmd(repo).args(args), "git");
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().expect(what);
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn write(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn read(repo: &Path, rel: &str) -> String {
    std::fs::read_to_string(repo.join(rel)).expect("read")
}
