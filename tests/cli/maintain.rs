//! `cairn maintain` and `cairn restore`, through the binary.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Env, git_status, read};

const NOW: &str = "2026-12-01T10:00:00Z";

/// Observations imported as given (no gate, no dedup), one commit.
fn import(env: &Env, repo: &Path, records: &[Value]) {
    let file = env.path().join("import.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, text).unwrap();
    env.cairn_in(
        repo,
        &[
            "--now",
            NOW,
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
    import(
        &env,
        &repo,
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
    // 181 days: soft-deleted, still in the files.
    let data = maintain(&env, &repo, "2026-11-29", &[]);
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
                "2026-11-29",
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
fn an_observation_past_both_ages_is_marked_stale_and_deleted_in_one_run() {
    let (env, repo) = Env::repo();
    import(&env, &repo, &[obs(HOST, "2026-01-01T00:00:00Z", 1)]);
    let data = maintain(&env, &repo, NOW, &[]);
    assert_eq!(
        (
            data["counts"]["stale"].clone(),
            data["counts"]["deleted"].clone()
        ),
        (json!(1), json!(1))
    );
    let again = maintain(&env, &repo, NOW, &[]);
    assert!(again["changes"].as_array().unwrap().is_empty(), "{again:#}");
}

/// A repository with a duplicate pair, an old observation and a recent unrelated one.
fn mixed() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    import(
        &env,
        &repo,
        &[
            obs(FMT, "2026-11-20T00:00:00Z", 2),
            obs(FMT2, "2026-11-21T00:00:00Z", 1),
            obs(HOST, "2026-05-01T00:00:00Z", 1),
            obs(
                "Prefer rebase over merge for feature branches",
                "2026-08-01T00:00:00Z",
                1,
            ),
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
    assert_eq!(first["counts"]["stale"], 2, "{first:#}");
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
        .stdout_has("would merge 1, mark 2 stale, soft-delete 1")
        .stdout_has(&format!("merge {weak}"))
        .stdout_has("never recalled");
    assert!(run.stdout.contains("duplicate of"), "{}", run.stdout);
    let data = maintain(&env, &repo, NOW, &["--dry-run"]);
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["changes"].as_array().unwrap().len(), 4, "{data:#}");
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
    // over 512 events (supersede, stale, delete), so the append is made in more than one part.
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
        .chain([
            obs(FMT, "2026-11-20T00:00:00Z", 2),
            obs(FMT2, "2026-11-21T00:00:00Z", 1),
        ])
        .collect();
    let run = |failpoint: Option<&str>| {
        let (env, repo) = Env::repo();
        import(&env, &repo, &records);
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
