//! Triage at scale: `cairn triage` over 1,000 pending proposals against a MEMORY.md of about
//! 100 entries.
//!
//! Run with `scripts/bench-triage` (or `cargo bench --bench triage -- [--proposals N]
//! [--runs N]`; `CAIRN_BENCH_PROPOSALS` and `CAIRN_BENCH_RUNS` set the defaults,
//! `CAIRN_BENCH_KEEP=1` keeps the work folder). The bench
//!
//! 1. makes a repository whose MEMORY.md holds ~100 entries over the seven sections, and
//!    `--proposals` proposals (1,000 by default) in `vault/proposals/DAY.jsonl`, each with its
//!    `refs/cairn/proposals/<id>` as reflect leaves them, committed; the texts are made from
//!    templates of the things agents note (commands, paths, services, preferences), and the
//!    mix is what tier 1 meets: artifacts and short texts, low confidence, exact and near
//!    duplicates of entries, texts citing paths and commands, and plain ones;
//! 2. sets `[triage] auto_promote = false` (so a real run is one commit of rejections and
//!    merges) and no LLM;
//! 3. times `cairn triage --dry-run` (whole process, median of `--runs`);
//! 4. times a real `cairn triage` (median of `--runs`), resetting the branch, the working
//!    tree and the proposal refs between runs;
//! 5. beside them, `git status` of the same repository and `rg` (or grep) counting the
//!    proposal lines (the floor of starting a process that reads the same files), and
//!    `git update-ref --stdin` deleting the refs a real run deletes, in one transaction.
//!
//! Target (issue 11): triage of 1,000 proposals under 1 s.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cairn::proposals::{Op, Proposal};

mod common;
use common::{load, median, ms, setting};

const CAIRN: &str = env!("CARGO_BIN_EXE_cairn");

fn main() {
    let n = setting("--proposals", "CAIRN_BENCH_PROPOSALS", 1000usize);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 10usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-triage-")
        .tempdir()
        .expect("temp dir");
    let repo = work.path().join("repo");
    println!(
        "cairn triage bench: {n} proposals, {runs} runs; load {}",
        load()
    );
    let setup = Instant::now();
    init(&repo);
    let (entries, memory) = memory_md();
    std::fs::write(repo.join("MEMORY.md"), &memory).expect("write MEMORY.md");
    let toml = std::fs::read_to_string(repo.join("cairn.toml")).expect("read cairn.toml");
    let toml = toml.replace("auto_promote = true", "auto_promote = false");
    assert!(
        toml.contains("auto_promote = false"),
        "cairn.toml has [triage]"
    );
    std::fs::write(repo.join("cairn.toml"), toml).expect("write cairn.toml");
    let proposals = proposals(n, &entries);
    let dir = repo.join("vault/proposals");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lines: String = proposals.iter().map(cairn::proposals::line).collect();
    std::fs::write(dir.join("2026-12-01.jsonl"), lines).expect("write proposals");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "bench: memory and proposals"]);
    let identity = cairn::git::Identity {
        fallback_name: "cairn",
        fallback_email: "cairn@localhost",
    };
    let day = "2026-12-01".parse().expect("date");
    for p in &proposals {
        let bytes = cairn::proposals::apply(&memory, p, None, day).unwrap_or(memory.clone());
        cairn::git::set_proposal_ref(&repo, &p.id, "MEMORY.md", bytes.as_bytes(), "p", &identity)
            .expect("proposal ref");
    }
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let refs = git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/cairn/proposals/",
        ],
    );
    println!(
        "repository: MEMORY.md {} entries, {} proposals, {} refs (made in {:.1} s)",
        entries.len(),
        proposals.len(),
        refs.lines().count(),
        setup.elapsed().as_secs_f64()
    );

    // Dry runs.
    let mut dry = Vec::new();
    let mut counts = serde_json::Value::Null;
    for _ in 0..runs {
        let (t, out) = timed(cairn(&repo, &["--json", "triage", "--dry-run"]));
        counts = data_of(&out, "triage --dry-run")["counts"].clone();
        dry.push(t);
    }
    let dry = median(&mut dry);

    // Real runs, reset between them.
    let mut real = Vec::new();
    let mut real_counts = serde_json::Value::Null;
    for _ in 0..runs {
        reset(&repo, &head, &refs);
        let before = git(&repo, &["rev-list", "--count", "HEAD"]);
        let (t, out) = timed(cairn(&repo, &["--json", "triage"]));
        real_counts = data_of(&out, "triage")["counts"].clone();
        let after = git(&repo, &["rev-list", "--count", "HEAD"]);
        let made =
            after.trim().parse::<u64>().unwrap_or(0) - before.trim().parse::<u64>().unwrap_or(0);
        assert_eq!(
            made, 1,
            "auto_promote off: one commit of rejections and merges"
        );
        real.push(t);
    }
    let real = median(&mut real);
    reset(&repo, &head, &refs);

    // References.
    let mut status = Vec::new();
    let mut grep = Vec::new();
    let (grep_cmd, grep_name) = reference(&dir);
    for _ in 0..runs {
        let mut c = Command::new("git");
        c.arg("-C").arg(&repo).args(["status", "--porcelain"]);
        status.push(timed(c).0);
        let mut g = Command::new(&grep_cmd[0]);
        g.args(&grep_cmd[1..]);
        grep.push(timed(g).0);
    }
    let status = median(&mut status);
    let grep = median(&mut grep);
    // git deleting the refs a real run deletes (the decided proposals'), in one transaction.
    let decided: Vec<String> = {
        let (_, out) = timed(cairn(&repo, &["--json", "triage", "--dry-run"]));
        let data = data_of(&out, "triage --dry-run");
        data["auto"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["id"].as_str())
                    .map(|id| format!("delete refs/cairn/proposals/{id}\n"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut deletes = Vec::new();
    for _ in 0..runs {
        reset(&repo, &head, &refs);
        let start = Instant::now();
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["update-ref", "--stdin"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("git update-ref");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(decided.concat().as_bytes())
            .expect("write");
        assert!(child.wait().expect("update-ref").success());
        deletes.push(start.elapsed());
    }
    let deletes = median(&mut deletes);
    reset(&repo, &head, &refs);

    println!();
    println!("measure (median of {runs}, whole process)          figure      target");
    println!(
        "triage --dry-run, {n} proposals               {:>8.1} ms   < 1000 ms  {}",
        ms(dry),
        verdict(dry < Duration::from_secs(1))
    );
    println!(
        "triage, auto_promote off (1 commit)           {:>8.1} ms   < 1000 ms  {}",
        ms(real),
        verdict(real < Duration::from_secs(1))
    );
    println!(
        "  reference: git status --porcelain            {:>8.1} ms",
        ms(status)
    );
    println!(
        "  reference: {grep_name} over the proposals          {:>8.1} ms",
        ms(grep)
    );
    println!(
        "  reference: git update-ref --stdin deleting the {} decided refs {:>8.1} ms",
        decided.len(),
        ms(deletes)
    );
    println!("  decisions (dry run): {counts}");
    println!("  decisions (real run): {real_counts}");
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

/// Back to the commit the bench made, with every proposal ref as it was and no telemetry.
fn reset(repo: &Path, head: &str, refs: &str) {
    git(repo, &["reset", "-q", "--hard", head]);
    let mut child = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["update-ref", "--stdin"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git update-ref");
    let mut input = String::new();
    for line in refs.lines() {
        if let Some((name, id)) = line.split_once(' ') {
            input.push_str(&format!("update {name} {id}\n"));
        }
    }
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write refs");
    assert!(child.wait().expect("update-ref").success());
    let _ = std::fs::remove_file(repo.join(".cairn/telemetry.jsonl"));
}

const TOOLS: &[&str] = &[
    "cargo",
    "pnpm",
    "docker compose",
    "kubectl",
    "terraform",
    "make",
    "pytest",
    "go",
];
const VERBS: &[&str] = &[
    "build",
    "test",
    "lint",
    "fmt --check",
    "apply",
    "migrate",
    "generate",
    "check",
];
const PATHS: &[&str] = &[
    "src/api/routes.rs",
    "deploy/helm/values.yaml",
    "scripts/release.sh",
    "docs/CHANGES.md",
    ".github/workflows/ci.yml",
    "config/prod.toml",
    "migrations/0042_users.sql",
    "web/src/App.tsx",
    "infra/modules/vpc/main.tf",
    "Makefile",
];
const SUBJECTS: &[&str] = &[
    "the staging database",
    "the billing service",
    "the CI runners",
    "the auth proxy",
    "the search index",
    "the nightly backup job",
    "the mobile app build",
    "the metrics pipeline",
    "the payment webhook handler",
    "the feature flag service",
];
const PREFS: &[&str] = &[
    "small pull requests with one change each",
    "explicit error types over strings",
    "tabs in Go files and spaces elsewhere",
    "squash merges on main",
    "integration tests against a real Postgres",
    "structured logs in JSON",
    "short commit subjects in the imperative",
];
const SECTIONS: &[&str] = &[
    "Preferences",
    "Rules and conventions",
    "System architecture",
    "Operations",
    "Memory system",
    "Projects",
    "People and relationships",
];

/// A text of template `t` over the parts picked by `k`.
fn text(t: usize, k: usize) -> String {
    let tool = TOOLS[k % TOOLS.len()];
    let verb = VERBS[(k / 3) % VERBS.len()];
    let path = PATHS[(k / 7) % PATHS.len()];
    let subject = SUBJECTS[(k / 11) % SUBJECTS.len()];
    let other = SUBJECTS[(k / 13 + 1) % SUBJECTS.len()];
    let pref = PREFS[(k / 5) % PREFS.len()];
    match t % 8 {
        0 => format!("Run `{tool} {verb}` before pushing changes to {path}"),
        1 => format!("{subject} reads its settings from {path}; restart it after editing them"),
        2 => format!("Never edit {path} by hand: `{tool} {verb}` generates it"),
        3 => format!(
            "Deploy {subject} after {other}, never before it, or requests fail for a minute"
        ),
        4 => format!("The team prefers {pref} when working on {subject}"),
        5 => {
            format!("When {subject} times out, check the connection pool size before scaling it up")
        }
        6 => format!(
            "{subject} is owned by the platform group; ask in #platform before changing {path}"
        ),
        _ => format!("Keep {subject} on the version pinned in {path} until the upgrade is planned"),
    }
}

/// MEMORY.md with about 100 entries: their texts, and the file.
fn memory_md() -> (Vec<String>, String) {
    let mut entries = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut k = 0;
    while entries.len() < 100 {
        let t = text(k, k * 7 + 3);
        if seen.insert(t.clone()) {
            entries.push(t);
        }
        k += 1;
    }
    let mut out =
        String::from("# Memory\n\n<!-- Curated memory, injected into every agent session. -->\n");
    for (s, section) in SECTIONS.iter().enumerate() {
        out.push_str(&format!("\n## {section}\n\n"));
        for (i, e) in entries.iter().enumerate() {
            if i % SECTIONS.len() == s {
                out.push_str(&format!("- (2026-11-{:02}) {e}\n", 1 + i % 28));
            }
        }
    }
    (entries, out)
}

/// `n` proposals in the mix tier 1 meets.
fn proposals(n: usize, entries: &[String]) -> Vec<Proposal> {
    let at = "2026-12-01T09:00:00Z".parse().expect("time");
    let mut out = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::new();
    let mut k = 0usize;
    while out.len() < n {
        let i = out.len();
        let (text, confidence) = match i % 10 {
            0 => ("Add after line 12: the new retry setting".to_string(), 0.7),
            1 => (format!("use {}", TOOLS[k % TOOLS.len()]), 0.8),
            2 => (text(k, k * 5 + 1), 0.2),
            3 => (entries[k % entries.len()].to_lowercase(), 0.85),
            4 => (
                format!("{}.", entries[k % entries.len()].replace("; ", ", ")),
                0.7,
            ),
            5 | 6 => (text(k, k * 3 + 2), 0.9),
            _ => (text(k + 3, k * 11 + 5), 0.6),
        };
        let section = SECTIONS[k % SECTIONS.len()];
        let p = Proposal::new(
            Op::Add,
            section,
            &text,
            Vec::new(),
            "observed in several sessions",
            vec![format!("ob-{k:08x}"), format!("ob-{:08x}", k * 31 + 7)],
            confidence,
            "builtin",
            at,
        );
        if seen.insert(p.id.clone()) {
            out.push(p);
        }
        k += 1;
    }
    out
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(CAIRN);
    c.arg("--repo")
        .arg(repo)
        .arg("--now")
        .arg("2026-12-01T12:00:00Z")
        .args(args)
        .env_remove("CAIRN_REPO");
    c
}

fn init(repo: &Path) {
    let out = Command::new(CAIRN)
        .arg("init")
        .arg(repo)
        .output()
        .expect("cairn init");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn timed(mut cmd: Command) -> (Duration, Output) {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    (start.elapsed(), out)
}

fn data_of(out: &Output, what: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["data"].clone()
}

/// ripgrep (or grep) counting the proposal lines.
fn reference(dir: &Path) -> (Vec<String>, &'static str) {
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let dir = dir.to_string_lossy().into_owned();
    if rg {
        (
            vec!["rg".into(), "-c".into(), "\"op\"".into(), dir],
            "rg -c",
        )
    } else {
        (
            vec!["grep".into(), "-rc".into(), "\"op\"".into(), dir],
            "grep -rc",
        )
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}
