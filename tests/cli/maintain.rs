//! `cairn maintain` and `cairn restore`, through the binary.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Env, git_status, read};

const NOW: &str = "2026-12-01T10:00:00Z";

/// Observations imported as given (no gate, no dedup), one commit, stored at NOW.
fn import(env: &Env, repo: &Path, records: &[Value]) {
    import_at(env, repo, NOW, records);
}

/// Observations imported as given, stored at `now` (into that day's file).
fn import_at(env: &Env, repo: &Path, now: &str, records: &[Value]) {
    let file = env.path().join("import.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, text).unwrap();
    env.cairn_in(
        repo,
        &[
            "--now",
            now,
            "import",
            "observations",
            "--raw",
            file.to_str().unwrap(),
        ],
    )
    .code(0);
}

fn obs(text: &str, time: &str, merged: u32) -> Value {
    json!({
        "observation": text,
        "timestamp": time,
        "category_id": "rules-conventions",
        "write_verdict": "allow",
        "write_confidence": 0.7,
        "merged_count": merged,
        "source": "test",
    })
}

fn maintain(env: &Env, repo: &Path, now: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "--now", now, "maintain"];
    args.extend(extra);
    env.cairn_in(repo, &args).code(0).data()
}

/// The id an observation text was imported under (from `search --exact`).
fn id_of(env: &Env, repo: &Path, text: &str) -> String {
    let data = env
        .cairn_in(repo, &["--json", "search", "--exact", text])
        .code(0)
        .data();
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["text"] == text)
        .unwrap_or_else(|| panic!("{text} not found: {data}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn head(env: &Env, repo: &Path) -> String {
    env.git(repo, &["rev-parse", "HEAD"])
}

fn subject(env: &Env, repo: &Path) -> String {
    env.git(repo, &["log", "-1", "--format=%s"])
        .trim()
        .to_string()
}

/// Every file of the observations folder, with its content.
fn vault(repo: &Path) -> Vec<(String, String)> {
    let dir = repo.join("vault/observations");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

const FMT: &str = "Always run cargo fmt before committing to the repository";
const FMT2: &str = "Always run cargo fmt before you commit to the repository";
const HOST: &str = "The staging deploy host is bravo-7 in the eu-west region";

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn near_duplicates_merge_into_the_stronger_which_takes_their_count() {
    let (env, repo) = Env::repo();
    import(
        &env,
        &repo,
        &[
            obs(FMT, "2026-11-20T00:00:00Z", 2),
            obs(FMT2, "2026-11-21T00:00:00Z", 1),
            obs(HOST, "2026-11-21T00:00:00Z", 1),
        ],
    );
    let (strong, weak) = (id_of(&env, &repo, FMT), id_of(&env, &repo, FMT2));
    let before = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                NOW,
                "recall",
                "cargo fmt before committing",
            ],
        )
        .code(0)
        .data();
    assert!(ids(&before["results"]).contains(&weak), "{before}");

    let data = maintain(&env, &repo, NOW, &[]);
    assert_eq!(data["counts"]["merged"], 1, "{data:#}");
    let change = &data["changes"][0];
    assert_eq!(change["op"], "supersede");
    assert_eq!(
        change["id"],
        weak.as_str(),
        "the one merged fewer times is the weaker"
    );
    assert_eq!(change["by"], strong.as_str());
    assert_eq!(change["count"], 1);
    assert_eq!(
        change["by_merged_count"], 3,
        "2 + 1: the stronger takes the count"
    );
    assert_eq!(
        subject(&env, &repo),
        "maintain: 1 merged, 0 stale, 0 deleted"
    );
    let body = env.git(&repo, &["log", "-1", "--format=%b"]);
    assert!(
        body.contains(&format!("Cairn-Superseded: {weak} by {strong}")),
        "{body}"
    );

    let after = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                NOW,
                "recall",
                "cargo fmt before committing",
            ],
        )
        .code(0)
        .data();
    let found = ids(&after["results"]);
    assert!(found.contains(&strong), "{after}");
    assert!(
        !found.contains(&weak),
        "the superseded one is not recalled: {after}"
    );
    assert!(git_status(&env, &repo).is_empty());
}

#[test]
fn error_fixes_of_different_commands_are_not_merged() {
    // Two fixes in the built-in observer's template whose whole texts are close (cosine 0.93
    // with the built-in model) but whose commands and errors differ.
    let (env, repo) = Env::repo();
    let files =
        "after changes to package.json, CHANGELOG.md, README.md, src/index.ts, src/version.ts";
    let a = format!(
        "`npm version minor` failed (exit 1: npm ERR! Git working directory not clean.); it \
         passed on a later run {files}"
    );
    let b = format!(
        "`npm publish --access public` failed (exit 1: npm ERR! code E403 forbidden); it passed \
         on a later run {files}"
    );
    import(
        &env,
        &repo,
        &[
            obs(&a, "2026-11-20T00:00:00Z", 1),
            obs(&b, "2026-11-20T00:00:00Z", 1),
        ],
    );
    let head_before = head(&env, &repo);
    let data = maintain(&env, &repo, NOW, &[]);
    assert_eq!(
        data["counts"]["similar"], 1,
        "the sweep compared them: {data:#}"
    );
    assert_eq!(data["counts"]["unconfirmed"], 1, "{data:#}");
    assert_eq!(data["counts"]["merged"], 0, "{data:#}");
    assert_eq!(head(&env, &repo), head_before, "nothing to do, no commit");
    env.cairn_in(&repo, &["--now", NOW, "maintain"])
        .code(0)
        .stdout_has("nothing to do");
}

#[test]
fn old_unrecalled_observations_go_stale_then_are_soft_deleted_and_a_recalled_one_never() {
    let (env, repo) = Env::repo();
    let recalled = "The release checklist lives in docs/RELEASING.md";
    import_at(
        &env,
        &repo,
        "2026-06-01T00:00:00Z",
        &[
            obs(HOST, "2026-06-01T00:00:00Z", 1),
            obs(recalled, "2026-06-01T00:00:00Z", 1),
        ],
    );
    let (host, kept) = (id_of(&env, &repo, HOST), id_of(&env, &repo, recalled));
    let r = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-06-02",
                "recall",
                "release checklist",
            ],
        )
        .code(0)
        .data();
    assert!(ids(&r["results"]).contains(&kept), "{r}");

    // 89 days: nothing yet.
    let data = maintain(&env, &repo, "2026-08-29", &[]);
    assert!(data["changes"].as_array().unwrap().is_empty(), "{data:#}");
    // 91 days: stale.
    let data = maintain(&env, &repo, "2026-08-31", &[]);
    assert_eq!(data["counts"]["stale"], 1, "{data:#}");
    assert_eq!(data["changes"][0]["id"], host.as_str());
    assert_eq!(data["changes"][0]["op"], "stale");
    // Searched (which counts nothing, unlike recall): still found, marked stale.
    let stale = env
        .cairn_in(&repo, &["--json", "search", "staging deploy host"])
        .code(0)
        .data();
    let hit = stale["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == host.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{stale}"));
    assert_eq!(hit["status"], "stale");
    // 180 days after the stale mark: still only stale.
    let data = maintain(&env, &repo, "2027-02-27", &[]);
    assert!(data["changes"].as_array().unwrap().is_empty(), "{data:#}");
    // 181 days after the mark: soft-deleted, still in the files.
    let data = maintain(&env, &repo, "2027-03-01", &[]);
    assert_eq!(data["counts"]["deleted"], 1, "{data:#}");
    assert_eq!(data["counts"]["stale"], 0, "{data:#}");
    assert_eq!(data["changes"][0]["op"], "delete");
    assert_eq!(
        subject(&env, &repo),
        "maintain: 0 merged, 0 stale, 1 deleted"
    );
    let gone = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2027-03-01",
                "recall",
                "staging deploy host",
            ],
        )
        .code(1)
        .data();
    assert!(!ids(&gone["results"]).contains(&host), "{gone}");
    let files: String = vault(&repo).into_iter().map(|f| f.1).collect();
    assert!(files.contains(HOST), "nothing is hard-deleted");
    // The recalled one never changed.
    assert!(
        !files.contains(&format!("\"id\":\"{kept}\",\"ts\"")),
        "{files}"
    );
}

#[test]
fn an_observation_past_both_ages_is_only_marked_stale_in_one_run() {
    let (env, repo) = Env::repo();
    import_at(
        &env,
        &repo,
        "2026-01-01T00:00:00Z",
        &[obs(HOST, "2026-01-01T00:00:00Z", 1)],
    );
    let data = maintain(&env, &repo, NOW, &[]);
    assert_eq!(
        (
            data["counts"]["stale"].clone(),
            data["counts"]["deleted"].clone()
        ),
        (json!(1), json!(0)),
        "a record is never marked stale and deleted in one run"
    );
    let again = maintain(&env, &repo, NOW, &[]);
    assert!(again["changes"].as_array().unwrap().is_empty(), "{again:#}");
}

/// A repository with a duplicate pair, a stale observation (marked by a run in May), an old
/// one and a recent unrelated one.
fn mixed() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    import_at(
        &env,
        &repo,
        "2026-01-01T00:00:00Z",
        &[obs(HOST, "2026-01-01T00:00:00Z", 1)],
    );
    maintain(&env, &repo, "2026-05-01T00:00:00Z", &[]);
    import_at(
        &env,
        &repo,
        "2026-08-01T00:00:00Z",
        &[obs(
            "Prefer rebase over merge for feature branches",
            "2026-08-01T00:00:00Z",
            1,
        )],
    );
    import(
        &env,
        &repo,
        &[
            obs(FMT, "2026-11-20T00:00:00Z", 2),
            obs(FMT2, "2026-11-21T00:00:00Z", 1),
            obs(
                "Benchmarks print medians beside an rg reference",
                "2026-11-25T00:00:00Z",
                1,
            ),
        ],
    );
    (env, repo)
}

#[test]
fn a_second_run_changes_nothing_and_makes_no_commit() {
    let (env, repo) = mixed();
    let first = maintain(&env, &repo, NOW, &[]);
    assert_eq!(first["counts"]["merged"], 1, "{first:#}");
    assert_eq!(first["counts"]["stale"], 1, "{first:#}");
    assert_eq!(first["counts"]["deleted"], 1, "{first:#}");
    let (head_after, files_after) = (head(&env, &repo), vault(&repo));
    let second = maintain(&env, &repo, NOW, &[]);
    assert!(
        second["changes"].as_array().unwrap().is_empty(),
        "{second:#}"
    );
    assert!(second["commit"].is_null());
    assert_eq!(head(&env, &repo), head_after);
    assert_eq!(vault(&repo), files_after);
}

#[test]
fn dry_run_lists_what_it_would_do_and_writes_nothing() {
    let (env, repo) = mixed();
    let (head_before, files_before) = (head(&env, &repo), vault(&repo));
    let weak = id_of(&env, &repo, FMT2);
    let run = env
        .cairn_in(&repo, &["--now", NOW, "maintain", "--dry-run"])
        .code(0)
        .stdout_has("would merge 1, mark 1 stale, soft-delete 1")
        .stdout_has(&format!("merge {weak}"))
        .stdout_has("never recalled");
    assert!(run.stdout.contains("duplicate of"), "{}", run.stdout);
    let data = maintain(&env, &repo, NOW, &["--dry-run"]);
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["changes"].as_array().unwrap().len(), 3, "{data:#}");
    assert_eq!(head(&env, &repo), head_before);
    assert_eq!(vault(&repo), files_before);
    assert!(git_status(&env, &repo).is_empty());
}

#[test]
fn restore_undoes_each_kind_and_a_later_maintain_keeps_the_decision() {
    let (env, repo) = mixed();
    let (strong, weak) = (id_of(&env, &repo, FMT), id_of(&env, &repo, FMT2));
    let old = id_of(&env, &repo, HOST);
    let stale = id_of(&env, &repo, "Prefer rebase over merge for feature branches");
    maintain(&env, &repo, NOW, &[]);

    // Unknown ids: exit 2 naming the id, nothing written.
    let head_before = head(&env, &repo);
    env.cairn_in(
        &repo,
        &["--now", NOW, "restore", &weak, "ob-0000000000000000"],
    )
    .code(2)
    .stderr_has("ob-0000000000000000");
    assert_eq!(head(&env, &repo), head_before);
    // Already active: said, exit 1.
    env.cairn_in(&repo, &["--now", NOW, "restore", &strong])
        .code(1)
        .stdout_has("already active");

    let data = env
        .cairn_in(
            &repo,
            &["--json", "--now", NOW, "restore", &weak, &old, &stale],
        )
        .code(0)
        .data();
    let was: Vec<(String, String)> = data["restored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().into(),
                r["was"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        was,
        [
            (weak.clone(), "superseded".to_string()),
            (old.clone(), "deleted".to_string()),
            (stale.clone(), "stale".to_string())
        ]
    );
    let back = &data["restored"][0];
    assert_eq!(back["merged_count"], 1);
    assert_eq!(
        back["superseded_by"],
        json!({"id": strong, "merged_count": 2}),
        "the count taken is given back"
    );
    assert_eq!(subject(&env, &repo), "restore: 3 observations");
    let r = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                NOW,
                "recall",
                "cargo fmt before you commit",
            ],
        )
        .code(0)
        .data();
    assert!(ids(&r["results"]).contains(&weak), "{r}");

    // The person's decision stands: the restored ones are left alone.
    let again = maintain(&env, &repo, NOW, &[]);
    assert!(again["changes"].as_array().unwrap().is_empty(), "{again:#}");
    assert_eq!(again["counts"]["exempt"], 3, "{again:#}");
    // Until they age again from the restore: 91 days later the unrecalled ones go stale.
    let later = maintain(&env, &repo, "2027-03-03T10:00:00Z", &[]);
    let staled: Vec<&str> = later["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["op"] == "stale")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(staled.contains(&old.as_str()), "{later:#}");
}

#[test]
fn a_maintain_killed_at_a_failpoint_ends_as_an_uninterrupted_one() {
    // 600 old observations of one template (many merge: close by meaning) and a recent pair:
    // over 512 events (supersede, stale), so the append is made in more than one part.
    let records: Vec<Value> = (0..600)
        .map(|i| {
            obs(
                &format!(
                    "Build agent {i} of rack {} uses the mirror at host-{i}.example",
                    i % 7
                ),
                "2026-01-01T00:00:00Z",
                1,
            )
        })
        .collect();
    let recent = [
        obs(FMT, "2026-11-20T00:00:00Z", 2),
        obs(FMT2, "2026-11-21T00:00:00Z", 1),
    ];
    let run = |failpoint: Option<&str>| {
        let (env, repo) = Env::repo();
        import_at(&env, &repo, "2026-01-01T00:00:00Z", &records);
        import(&env, &repo, &recent);
        if let Some(point) = failpoint {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", NOW, "maintain"])
                .env("CAIRN_FAILPOINT", point);
            assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
            assert!(repo.join(".cairn/pending.json").exists(), "{point}");
        }
        maintain(&env, &repo, NOW, &[]);
        assert!(!repo.join(".cairn/pending.json").exists());
        let file = "vault/observations/2026-12-01.jsonl";
        vec![
            read(&repo, file),
            env.git(&repo, &["show", &format!("HEAD:{file}")]),
            subject(&env, &repo),
            env.git(&repo, &["rev-list", "--count", "HEAD"]),
            git_status(&env, &repo),
        ]
    };
    let clean = run(None);
    assert!(clean[0].lines().count() > 512, "{}", clean[2]);
    assert!(clean[0].contains("\"op\":\"supersede\""), "{}", clean[2]);
    for point in ["maintain-mid-append", "maintain-after-append"] {
        assert_eq!(run(Some(point)), clean, "killed at {point}");
    }
}

/// A fake systemctl on PATH that records its arguments, one call a line.
fn fake_systemctl(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let bin = env.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path().join("systemctl.log");
    let script = bin.join("systemctl");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

fn with_path(env: &Env, repo: &Path, bin: &Path, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.command(env!("CARGO_BIN_EXE_cairn"), repo)
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn schedule_writes_a_systemd_user_timer_and_enables_it_then_uninstall_removes_it() {
    let (env, repo) = Env::repo();
    let (bin, log) = fake_systemctl(&env);
    let out = with_path(
        &env,
        &repo,
        &bin,
        &[
            "--json",
            "hooks",
            "install",
            "--schedule",
            "daily",
            "--scheduler",
            "systemd",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = &v["data"];
    assert_eq!(data["scheduler"], "systemd");
    let written: Vec<std::path::PathBuf> = data["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().into())
        .collect();
    let units = env.home().join(".config/systemd/user");
    assert_eq!(written.len(), 2);
    assert!(written.iter().all(|p| p.starts_with(&units)), "{written:?}");
    let service = std::fs::read_to_string(&written[0]).unwrap();
    let root = repo.canonicalize().unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_cairn"))
        .canonicalize()
        .unwrap();
    assert!(
        service.contains(&format!(
            "ExecStart={} maintain --repo {}\n",
            exe.display(),
            root.display()
        )),
        "{service}"
    );
    let timer = std::fs::read_to_string(&written[1]).unwrap();
    assert!(
        timer.contains("OnCalendar=daily\nPersistent=true\n"),
        "{timer}"
    );
    let name = written[1]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("cairn-maintain-repo-") && name.ends_with(".timer"));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls,
        format!("--user daemon-reload\n--user enable --now {name}\n")
    );
    let ran: Vec<&str> = data["ran"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        ran,
        [
            "systemctl --user daemon-reload".to_string(),
            format!("systemctl --user enable --now {name}")
        ]
    );

    let out = with_path(
        &env,
        &repo,
        &bin,
        &[
            "--json",
            "hooks",
            "uninstall",
            "--schedule",
            "--scheduler",
            "systemd",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(written.iter().all(|p| !p.exists()));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.ends_with(&format!(
            "--user disable --now {name}\n--user daemon-reload\n"
        )),
        "{calls}"
    );
    assert!(
        git_status(&env, &repo).is_empty(),
        "nothing in the repository"
    );
}

#[test]
fn schedule_without_systemd_prints_the_crontab_line_and_writes_nothing() {
    let (env, repo) = Env::repo();
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "hooks",
                "install",
                "--schedule",
                "daily",
                "--scheduler",
                "cron",
            ],
        )
        .code(0)
        .data();
    let line = data["crontab_line"].as_str().unwrap();
    let root = repo.canonicalize().unwrap();
    let fields: Vec<&str> = line.splitn(6, ' ').collect();
    assert!(fields[0].parse::<u8>().unwrap() < 60, "{line}");
    assert!(fields[1].parse::<u8>().unwrap() < 24, "{line}");
    assert_eq!(&fields[2..5], ["*", "*", "*"]);
    assert!(
        fields[5].contains(&format!("maintain --repo {} >> ", root.display())),
        "{line}"
    );
    assert!(line.ends_with("/.cairn/maintain.log 2>&1"), "{line}");
    assert_eq!(data["written"], json!([]));
    assert!(!env.home().join(".config").exists());
    env.cairn_in(
        &repo,
        &[
            "hooks",
            "install",
            "--schedule",
            "daily",
            "--scheduler",
            "cron",
        ],
    )
    .code(0)
    .stdout_has("crontab -e")
    .stdout_has(line);
    env.cairn_in(&repo, &["hooks", "install", "--schedule", "often"])
        .code(2)
        .stderr_has("hourly, daily or weekly");
}

/// The words (4 to 11 lower-case letters, seen at least three times) of the ADR fixtures.
fn fixture_words() -> Vec<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    let mut stack = vec![crate::support::fixtures().join("adr")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for word in text.split(|c: char| !c.is_ascii_alphabetic()) {
                    if (4..=11).contains(&word.len())
                        && word.bytes().all(|b| b.is_ascii_lowercase())
                    {
                        *counts.entry(word.to_string()).or_default() += 1;
                    }
                }
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= 3)
        .map(|(w, _)| w)
        .collect()
}

/// `n` observations in chains of near-duplicates: each chain starts from a sentence of 8 to
/// 14 fixture words, and each next link changes one or two words of the one before (so
/// neighbours are close, the ends of a long chain less so). Returned as (chain number, record).
fn near_duplicate_chains(n: usize, seed: u64) -> Vec<(usize, Value)> {
    let words = fixture_words();
    assert!(words.len() > 1_000, "{}", words.len());
    let mut x = seed;
    let mut below = move |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut out = Vec::with_capacity(n);
    let mut chain = 0;
    while out.len() < n {
        let mut sentence: Vec<&str> = (0..8 + below(7))
            .map(|_| words[below(words.len())].as_str())
            .collect();
        let links = if below(2) == 0 { 1 } else { 2 + below(4) };
        for _ in 0..links {
            out.push((
                chain,
                json!({
                    "observation": sentence.join(" "),
                    "timestamp": "2026-11-20T10:00:00Z",
                    "category_id": "projects",
                    "write_verdict": "allow",
                    "write_confidence": 0.5 + below(50) as f64 / 100.0,
                    "merged_count": 1 + below(3),
                    "source": "test",
                }),
            ));
            for _ in 0..1 + below(2) {
                let at = below(sentence.len());
                sentence[at] = words[below(words.len())].as_str();
            }
        }
        chain += 1;
    }
    out.truncate(n);
    out
}

/// A store of 3,000 observations in chains of near-duplicates: a third of the chains stored
/// in May, the rest in late November, each at the time its record names.
fn thousands(env: &Env, repo: &Path) {
    let records = near_duplicate_chains(3_000, 0x2545_f491_4f6c_dd1d);
    let (old, recent): (Vec<_>, Vec<_>) = records.into_iter().partition(|(c, _)| c % 3 == 0);
    let at = |v: Vec<(usize, Value)>, time: &str| {
        v.into_iter()
            .map(|(_, mut r)| {
                r["timestamp"] = json!(time);
                r
            })
            .collect::<Vec<_>>()
    };
    let (may, november) = ("2026-05-01T10:00:00Z", "2026-11-20T10:00:00Z");
    import_at(env, repo, may, &at(old, may));
    import_at(env, repo, november, &at(recent, november));
}

#[test]
fn a_second_run_over_thousands_of_near_duplicates_changes_nothing() {
    let (env, repo) = Env::repo();
    thousands(&env, &repo);
    let first = maintain(&env, &repo, NOW, &[]);
    let c = &first["counts"];
    // Swept through the sign-bit bands (2,000 or more), merging and marking so many that the
    // next run sweeps fewer than that.
    assert!(c["swept"].as_u64().unwrap() >= 2_000, "{c}");
    assert!(c["merged"].as_u64().unwrap() > 500, "{c}");
    assert!(c["stale"].as_u64().unwrap() > 300, "{c}");
    let (head_after, files_after) = (head(&env, &repo), vault(&repo));

    let second = maintain(&env, &repo, NOW, &[]);
    let c = &second["counts"];
    assert!(c["swept"].as_u64().unwrap() < 2_000, "{c}");
    assert_eq!(
        (
            c["merged"].clone(),
            c["stale"].clone(),
            c["deleted"].clone()
        ),
        (json!(0), json!(0), json!(0)),
        "{:#}",
        second["changes"]
    );
    assert!(second["commit"].is_null());
    assert_eq!(head(&env, &repo), head_after, "no commit");
    assert_eq!(vault(&repo), files_after);
    assert!(git_status(&env, &repo).is_empty());

    // 200 days on: the stale ones are soft-deleted, once.
    let later = "2027-06-19T10:00:00Z";
    let third = maintain(&env, &repo, later, &[]);
    assert!(
        third["counts"]["deleted"].as_u64().unwrap() > 300,
        "{third:#}"
    );
    let fourth = maintain(&env, &repo, later, &[]);
    assert!(
        fourth["changes"].as_array().unwrap().is_empty(),
        "{fourth:#}"
    );
}

#[test]
fn a_maintain_over_thousands_killed_at_a_failpoint_ends_as_a_clean_run() {
    let run = |failpoint: Option<&str>| {
        let (env, repo) = Env::repo();
        thousands(&env, &repo);
        if let Some(point) = failpoint {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", NOW, "maintain"])
                .env("CAIRN_FAILPOINT", point);
            assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
            assert!(repo.join(".cairn/pending.json").exists(), "{point}");
        }
        let rerun = maintain(&env, &repo, NOW, &[]);
        assert!(!repo.join(".cairn/pending.json").exists());
        let after = maintain(&env, &repo, NOW, &[]);
        assert!(
            after["changes"].as_array().unwrap().is_empty(),
            "{point:?}: {:#}",
            after["changes"],
            point = failpoint
        );
        let file = "vault/observations/2026-12-01.jsonl";
        (
            rerun["counts"]["swept"].clone(),
            vec![
                read(&repo, file),
                env.git(&repo, &["show", &format!("HEAD:{file}")]),
                env.git(&repo, &["log", "-1", "--format=%B"]),
                env.git(&repo, &["rev-list", "--count", "HEAD"]),
                git_status(&env, &repo),
            ],
        )
    };
    let (swept, clean) = run(None);
    assert!(swept.as_u64().unwrap() >= 2_000, "{swept}");
    assert!(
        clean[0].lines().count() > 1_024,
        "three parts: {}",
        clean[2]
    );
    for point in ["maintain-mid-append", "maintain-after-append"] {
        let killed = run(Some(point)).1;
        for (what, (a, b)) in ["file", "HEAD's file", "message", "commits", "status"]
            .iter()
            .zip(killed.iter().zip(&clean))
        {
            let first = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            assert!(
                a == b,
                "killed at {point}: {what} differs ({} lines vs {} clean; first at {first:?}: {:?} vs {:?})",
                a.lines().count(),
                b.lines().count(),
                first.and_then(|i| a.lines().nth(i)),
                first.and_then(|i| b.lines().nth(i)),
            );
        }
    }
}

/// The real transcripts of the fixtures (turns from 2025-12 to 2026-05) ingested and observed
/// on `day`: a first backfill.
fn backfill(env: &Env, repo: &Path, day: &str) -> Vec<String> {
    let sessions = crate::support::fixtures().join("sessions");
    env.cairn_in(
        repo,
        &[
            "--now",
            day,
            "sessions",
            "ingest",
            sessions.to_str().unwrap(),
        ],
    )
    .code(0);
    env.cairn_in(
        repo,
        &["--now", day, "observe", "--all", "--observer", "builtin"],
    )
    .code(0);
    let text: String = vault(repo).into_iter().map(|f| f.1).collect();
    let mut ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("op").is_none())
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn changed(data: &Value, op: &str) -> Vec<String> {
    let mut ids: Vec<String> = data["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["op"] == op)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_first_backfill_of_old_transcripts_ages_from_the_day_it_was_stored() {
    let (env, repo) = Env::repo();
    let ids = backfill(&env, &repo, NOW);
    assert!(ids.len() >= 10, "{ids:?}");
    // The day of the backfill: the turns are months old, the observations new.
    let today = maintain(&env, &repo, NOW, &[]);
    assert_eq!(changed(&today, "stale"), Vec::<String>::new(), "{today:#}");
    assert_eq!(changed(&today, "delete"), Vec::<String>::new(), "{today:#}");
    // 100 days on: every one stale, none deleted.
    let stale = maintain(&env, &repo, "2027-03-11T10:00:00Z", &[]);
    assert_eq!(changed(&stale, "stale"), ids, "{stale:#}");
    assert_eq!(stale["counts"]["deleted"], 0, "{stale:#}");
    // 300 days on: the stale marks are 200 days old, so soft-deleted; nothing marked again.
    let deleted = maintain(&env, &repo, "2027-09-27T10:00:00Z", &[]);
    assert_eq!(changed(&deleted, "delete"), ids, "{deleted:#}");
    assert_eq!(deleted["counts"]["stale"], 0, "{deleted:#}");
}

#[test]
fn a_pending_proposal_keeps_the_observations_it_cites() {
    let (env, repo) = Env::repo();
    let ids = backfill(&env, &repo, NOW);
    env.cairn_in(&repo, &["--now", NOW, "reflect", "--reflector", "builtin"])
        .code(0);
    let proposals: String = std::fs::read_dir(repo.join("vault/proposals"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let mut cited: Vec<String> = proposals
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| v["observations"].as_array().cloned())
        .flatten()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    cited.sort();
    cited.dedup();
    assert!(!cited.is_empty() && cited.len() < ids.len(), "{cited:?}");
    let free: Vec<String> = ids.iter().filter(|i| !cited.contains(i)).cloned().collect();

    let later = "2027-03-11T10:00:00Z";
    env.cairn_in(&repo, &["--now", later, "maintain", "--dry-run"])
        .code(0)
        .stdout_has(&format!(
            "kept {} a pending proposal cites",
            // The fixtures may give one proposal worth a line (ADR 117), or more.
            if cited.len() == 1 {
                "1 old observation".to_string()
            } else {
                format!("{} old observations", cited.len())
            }
        ));
    let stale = maintain(&env, &repo, later, &[]);
    assert_eq!(changed(&stale, "stale"), free, "{stale:#}");
    assert_eq!(stale["counts"]["cited"], cited.len(), "{stale:#}");
    let deleted = maintain(&env, &repo, "2027-09-27T10:00:00Z", &[]);
    assert_eq!(changed(&deleted, "delete"), free, "{deleted:#}");

    // One soft-deleted by hand (or by an older cairn) while a proposal cites it: said.
    let file = repo.join("vault/observations/2027-09-27.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!(
        "{}\n",
        json!({"op": "delete", "id": cited[0], "ts": "2027-09-27T11:00:00.000Z"})
    ));
    std::fs::write(&file, text).unwrap();
    env.git(&repo, &["commit", "-qam", "by hand"]);
    env.cairn_in(&repo, &["--now", "2027-09-27T12:00:00Z", "maintain"])
        .code(0)
        .stderr_has(&format!("cites {}", cited[0]))
        .stderr_has("`cairn restore ID` brings one back");
}
