//! The count afterwards: every marker in the files against what the commands said they wrote,
//! and the repository's own checks (fsck, the tree against HEAD, commits, doctor, the index).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{Expected, Mode, cairn};

/// Mix mode: each `adr new`, `memory add`, `note` and `library add` that exited 0 is in the
/// files exactly once (found by its marker).
pub(super) fn count_mix(repo: &Path, expected: &Expected) -> bool {
    let names = |dir: &str| -> Vec<String> {
        std::fs::read_dir(repo.join(dir))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_lowercase())
                    .collect()
            })
            .unwrap_or_default()
    };
    // A record's file name is its title's slug, cut short: the marker is looked for in the
    // text.
    let adrs: Vec<String> = names("decisions")
        .iter()
        .map(|f| std::fs::read_to_string(repo.join("decisions").join(f)).unwrap_or_default())
        .collect();
    let notes = names("vault/notes");
    let memory = std::fs::read_to_string(repo.join("MEMORY.md")).unwrap_or_default();
    let library = std::fs::read_to_string(repo.join("vault/library.jsonl")).unwrap_or_default();
    let mut wrong = 0usize;
    let mut check = |what: &str, markers: &[String], found: &dyn Fn(&str) -> usize| {
        for m in markers {
            let n = found(m);
            if n != 1 {
                wrong += 1;
                println!("FAIL {what} {m} exited 0 and is in the files {n} times");
            }
        }
    };
    check("adr new", &expected.adrs, &|m| {
        adrs.iter().filter(|f| f.contains(m)).count()
    });
    check("note", &expected.notes, &|m| {
        notes.iter().filter(|f| f.contains(m)).count()
    });
    check("memory add", &expected.memories, &|m| {
        memory.lines().filter(|l| l.contains(m)).count()
    });
    check("library add", &expected.library, &|m| {
        library.lines().filter(|l| l.contains(m)).count()
    });
    println!(
        "count: adr new {}, memory add {}, note {}, library add {} ok; wrong {wrong}",
        expected.adrs.len(),
        expected.memories.len(),
        expected.notes.len(),
        expected.library.len()
    );
    wrong == 0
}

/// Counts every marker in the files against what the commands said they wrote.
pub(super) fn count(repo: &Path, mode: Mode, expected: &Expected) -> bool {
    let tag = mode.tag();
    let mut ok = true;
    // slog: marker → ids of the lines holding it.
    let mut slog: HashMap<String, Vec<String>> = HashMap::new();
    for v in jsonl(&repo.join("slog")) {
        if let Some(m) = marker(v["detail"].as_str().unwrap_or(""), tag) {
            slog.entry(m)
                .or_default()
                .push(v["id"].as_str().unwrap_or("").to_string());
        }
    }
    // observations: marker → ids of observation lines; merge events: from-id → count.
    let mut observations: HashMap<String, Vec<String>> = HashMap::new();
    let mut merges: HashMap<String, usize> = HashMap::new();
    for v in jsonl(&repo.join("vault/observations")) {
        if let Some(text) = v["observation"].as_str() {
            if let Some(m) = marker(text, tag) {
                observations
                    .entry(m)
                    .or_default()
                    .push(v["id"].as_str().unwrap_or("").to_string());
            }
        } else if v["op"] == "merge"
            && let Some(from) = v["from"].as_str()
        {
            *merges.entry(from.to_string()).or_default() += 1;
        }
    }
    let (l, d) = count_once(
        &expected.slogs,
        &slog,
        |m, id| format!("FAIL slog {m} ({id}) exited 0 but is not in slog/"),
        |m, n| format!("FAIL slog {m} is in slog/ {n} times"),
    );
    let (l2, d2) = count_once(
        &expected.stored,
        &observations,
        |m, id| format!("FAIL remember {m} ({id}) was stored but is not in vault/observations/"),
        |m, n| format!("FAIL remember {m} is stored {n} times"),
    );
    let (mut lost, mut duplicated) = (l + l2, d + d2);
    for (m, id, into) in &expected.merged {
        match merges.get(id) {
            Some(1) => {}
            None => {
                lost += 1;
                println!("FAIL remember {m} ({id}) merged into {into} but no merge event holds it");
            }
            Some(n) => {
                duplicated += 1;
                println!("FAIL remember {m}'s merge event is there {n} times");
            }
        }
        if observations.contains_key(m) {
            duplicated += 1;
            println!("FAIL remember {m} merged but is also stored as an observation");
        }
    }
    // Markers in the files that no successful command wrote.
    let written: std::collections::HashSet<&str> = expected
        .slogs
        .iter()
        .map(|(m, _)| m.as_str())
        .chain(expected.stored.iter().map(|(m, _)| m.as_str()))
        .collect();
    let failed: std::collections::HashSet<&str> =
        expected.failed.iter().map(String::as_str).collect();
    let mut unexpected = 0usize;
    for m in slog.keys().chain(observations.keys()) {
        if !written.contains(m.as_str()) {
            if failed.contains(m.as_str()) {
                println!("note {m} is in the files; its command failed after writing it");
            } else {
                unexpected += 1;
                println!("FAIL {m} is in the files but no command reported writing it");
            }
        }
    }
    let slog_lines: usize = slog.values().map(Vec::len).sum();
    let obs_lines: usize = observations.values().map(Vec::len).sum();
    println!(
        "count: slog {} ok → {} lines; remember {} stored → {} lines, {} merged → {} merge \
         events, {} not written (gate or duplicate); lost {lost}, duplicated {duplicated}, \
         unexpected {unexpected}",
        expected.slogs.len(),
        slog_lines,
        expected.stored.len(),
        obs_lines,
        expected.merged.len(),
        expected
            .merged
            .iter()
            .filter(|(_, id, _)| merges.contains_key(id))
            .count(),
        expected.not_written.len(),
    );
    ok &= lost == 0 && duplicated == 0 && unexpected == 0;
    ok
}

/// git fsck, the tree equal to HEAD, the commits made, doctor and the index's verification.
pub(super) fn check_repository(
    home: &Path,
    repo: &Path,
    mode: Mode,
    commits_before: usize,
    expected: &Expected,
) -> bool {
    let mut ok = true;
    let fsck = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["fsck", "--strict"])
        .output()
        .expect("git fsck");
    if !fsck.status.success() {
        ok = false;
        println!(
            "FAIL git fsck: {}",
            String::from_utf8_lossy(&fsck.stderr).trim()
        );
    }
    let status = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain"])
        .output()
        .expect("git status");
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    if !status.trim().is_empty() {
        ok = false;
        println!("FAIL the tree differs from HEAD:\n{status}");
    }
    let commits = count_commits(repo) - commits_before;
    match mode {
        Mode::Commit | Mode::Mix => {
            let log = Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["log", "--format=%B"])
                .output()
                .expect("git log");
            let log = String::from_utf8_lossy(&log.stdout).into_owned();
            let slog_commits = log.matches("Cairn-Slog: ").count();
            let remember_commits =
                log.matches("\nremember: ").count() + usize::from(log.starts_with("remember: "));
            let want = expected.stored.len() + expected.merged.len();
            println!(
                "commits: {commits} made; {slog_commits} slog commits for {} slogs, \
                 {remember_commits} remember commits for {want} stored or merged",
                expected.slogs.len()
            );
            if slog_commits != expected.slogs.len() || remember_commits != want {
                ok = false;
                println!("FAIL a write without its own commit, or a commit too many");
            }
        }
        Mode::NoCommit => println!("commits: {commits} (the one at the end)"),
    }
    let doctor = cairn(home, repo, "doctor", &["--json", "doctor", "--dry-run"]);
    let findings = doctor.data()["findings"]
        .as_array()
        .map_or(usize::MAX, Vec::len);
    println!(
        "{}cairn doctor --dry-run: {findings} findings, exit {}{}",
        if doctor.code == 0 && findings == 0 {
            ""
        } else {
            "FAIL "
        },
        doctor.code,
        if doctor.code == 0 {
            String::new()
        } else {
            format!(": {}", doctor.stdout.trim())
        }
    );
    ok &= doctor.code == 0 && findings == 0;
    let verify = cairn(home, repo, "index", &["--json", "index", "--verify"]);
    println!(
        "{}cairn index --verify: exit {}{}",
        if verify.code == 0 { "" } else { "FAIL " },
        verify.code,
        if verify.code == 0 {
            String::new()
        } else {
            format!(": {}", verify.stdout.trim())
        }
    );
    ok &= verify.code == 0;
    ok
}

pub(super) fn count_commits(repo: &Path) -> usize {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-list", "--count", "HEAD"])
        .output()
        .expect("git rev-list");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// The marker (`lmc…`/`lmn…`, with its `r` for a remember) in a text.
fn marker(text: &str, tag: &str) -> Option<String> {
    let start = text.find(&format!("marker {tag}"))? + "marker ".len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Every JSON line of every `.jsonl` file under `dir`.
fn jsonl(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files.iter().flat_map(|f| jsonl_file(f)).collect()
}

pub(super) fn jsonl_file(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Each expected (marker, id) found exactly once in `found` (marker → ids of the lines holding
/// it): the lost and duplicated ones are printed and counted.
fn count_once(
    expected: &[(String, String)],
    found: &HashMap<String, Vec<String>>,
    missing: impl Fn(&str, &str) -> String,
    twice: impl Fn(&str, usize) -> String,
) -> (usize, usize) {
    let (mut lost, mut duplicated) = (0, 0);
    for (m, id) in expected {
        match found.get(m).map(Vec::as_slice) {
            Some([one]) if one == id => {}
            Some([]) | None => {
                lost += 1;
                println!("{}", missing(m, id));
            }
            Some(ids) => {
                duplicated += 1;
                println!("{}: {ids:?}", twice(m, ids.len()));
            }
        }
    }
    (lost, duplicated)
}
