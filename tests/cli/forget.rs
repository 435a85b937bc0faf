//! `cairn forget`: records removed from the files, the index and the vectors in one commit,
//! kept forgotten, and gone from a copy's history after the printed command.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Env, Run, fixtures, git_status, read};

const NOW: &str = "2026-12-01T12:00:00Z";
/// A token of a made-up format: no built-in pattern finds it, so it was stored as written.
const SECRET: &str = "acme_tok_Q7ZK2M9XW4PL8R3T";
/// A fact that turned out wrong.
const WRONG: &str = "db-old.internal";
const TRANSCRIPT: &str = "sessions/claude-code/session-624a4a58.jsonl";

fn cairn(env: &Env, repo: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--now", NOW];
    all.extend_from_slice(args);
    env.cairn_in(repo, &all)
}

/// A repository holding the secret in a slog entry, the wrong fact as an observation and a
/// MEMORY.md entry, a transcript's cards and episode, and an index with vectors.
fn seeded() -> (Env, PathBuf) {
    let (env, repo) = Env::repo();
    cairn(
        &env,
        &repo,
        &[
            "slog",
            "rotate",
            "vault",
            &format!("new deploy token {SECRET} for staging"),
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &[
            "remember",
            &format!("The staging database lives on {WRONG} and answers on port 5432"),
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "Operations",
            &format!("The staging database lives on {WRONG}"),
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &[
            "sessions",
            "ingest",
            fixtures().join(TRANSCRIPT).to_str().unwrap(),
        ],
    )
    .code(0);
    cairn(&env, &repo, &["index"]).code(0);
    // Telemetry and recall counts of the texts, to be scrubbed.
    cairn(&env, &repo, &["recall", "staging database"]);
    (env, repo)
}

/// Every file under `dir` (recursively, `.git` left out) whose bytes hold `needle` in any case.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let needle = needle.to_lowercase().into_bytes();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap().to_ascii_lowercase();
                if bytes.windows(needle.len()).any(|w| w == needle.as_slice()) {
                    out.push(p.display().to_string());
                }
            }
        }
    }
    out
}

/// `git grep -i` in HEAD's tree: the paths holding `needle`.
fn head_holding(env: &Env, repo: &Path, needle: &str) -> String {
    let out = env
        .command("git", repo)
        .args(["grep", "-il", "-F", needle, "HEAD"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn history_holding(env: &Env, repo: &Path, needle: &str) -> bool {
    let log = env.git(repo, &["log", "--all", "-p"]);
    log.to_lowercase().contains(&needle.to_lowercase())
}

fn ids_in(repo: &Path, rel: &str, pick: impl Fn(&Value) -> bool) -> Vec<String> {
    read(repo, rel)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| pick(v))
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect()
}

fn session_file(repo: &Path) -> String {
    let dir = repo.join("vault/sessions/claude");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    format!("vault/sessions/claude/{}", name.to_string_lossy())
}

#[test]
fn a_secret_and_a_wrong_fact_are_forgotten_everywhere_and_the_printed_command_cleans_a_copy() {
    let (env, repo) = seeded();
    assert!(history_holding(&env, &repo, SECRET));
    let run = cairn(&env, &repo, &["--json", "forget", SECRET, WRONG, "--yes"]).code(0);
    let data = run.data();
    let kinds: Vec<&str> = data["forgotten"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["slog", "observation", "memory"], "{data}");
    let subject = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(subject.starts_with("forget: 3 records\n"), "{subject}");
    assert!(subject.contains("Cairn-Forgotten: "), "{subject}");
    assert!(!subject.contains(SECRET) && !subject.contains(WRONG));
    assert_eq!(
        git_status(&env, &repo),
        "",
        "one commit of everything written"
    );
    // The commits that still hold them, and the command that rewrites them.
    let commits = data["history"]["commits"].as_array().unwrap();
    let subjects: Vec<&str> = commits
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert!(
        subjects.iter().any(|s| s.starts_with("slog: rotate vault")),
        "{subjects:?}"
    );
    assert!(
        subjects.iter().any(|s| s.starts_with("remember: ")),
        "{subjects:?}"
    );
    assert!(
        subjects.iter().any(|s| s.starts_with("memory: add")),
        "{subjects:?}"
    );
    let replace = PathBuf::from(data["history"]["replace_text"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&replace).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let command = data["history"]["commands"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        command,
        format!(
            "cairn forget --rewrite-history --replace-text {}",
            replace.display()
        )
    );

    // Gone from every file of the working tree, `.cairn/` (index and vectors included) and
    // HEAD's tree; only the replace-text file holds them, until it is deleted (below).
    for needle in [SECRET, WRONG] {
        let holding: Vec<String> = files_holding(&repo, needle)
            .into_iter()
            .filter(|p| Path::new(p) != replace)
            .collect();
        assert_eq!(holding, Vec::<String>::new(), "{needle}");
        assert_eq!(head_holding(&env, &repo, needle), "", "{needle} in HEAD");
    }

    // Gone from recall and search, whatever the case. (These queries name the texts, so
    // their own telemetry does too: the files were checked before them, above.)
    for needle in [SECRET, WRONG] {
        cairn(&env, &repo, &["search", "--exact", &needle.to_uppercase()]).code(1);
        let recall = cairn(
            &env,
            &repo,
            &["--json", "recall", needle, "--profile", "deep"],
        );
        let results = recall.data()["results"].to_string().to_lowercase();
        assert!(!results.contains(&needle.to_lowercase()), "{results}");
    }
    cairn(&env, &repo, &["index", "--verify"]).code(0);

    // The printed command, run in a copy made by `git clone`.
    let copy = env.path().join("copy");
    env.git(
        env.path(),
        &[
            "clone",
            "-q",
            repo.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    assert!(history_holding(&env, &copy, SECRET));
    let mut args: Vec<String> = command.split(' ').skip(1).map(str::to_string).collect();
    args.push("--yes".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.cairn_in(&copy, &args)
        .code(0)
        .stdout_has("history rewritten");
    // What the advice says to do once the result is checked: the backups go.
    let backups = env.git(
        &copy,
        &[
            "for-each-ref",
            "--format=delete %(refname)",
            "refs/cairn/backup/",
        ],
    );
    assert!(!backups.is_empty(), "backup refs were written first");
    let mut update = env.command("git", &copy);
    update
        .args(["update-ref", "--stdin"])
        .stdin(std::process::Stdio::piped());
    let mut child = update.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), backups.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    for needle in [SECRET, WRONG] {
        assert!(
            !history_holding(&env, &copy, needle),
            "{needle} in the copy's history"
        );
    }
    env.git(&copy, &["fsck", "--strict"]);
    assert_eq!(git_status(&env, &copy), "");

    // The replace-text file deleted, as the advice says.
    std::fs::remove_file(&replace).unwrap();
    assert!(!replace.exists());
}

#[test]
fn every_kind_of_record_is_forgotten_by_its_id() {
    let (env, repo) = seeded();
    // A pending proposal (with its ref) and a note.
    let proposal = cairn::proposals::Proposal::new(
        cairn::proposals::Op::Add,
        "Rules and conventions",
        "Release notes live in docs/CHANGES.md",
        vec![],
        "observed twice",
        vec!["ob-1".into()],
        0.5,
        "builtin",
        NOW.parse().unwrap(),
    );
    std::fs::create_dir_all(repo.join("vault/proposals")).unwrap();
    std::fs::write(
        repo.join("vault/proposals/2026-12-01.jsonl"),
        cairn::proposals::line(&proposal),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("vault/notes")).unwrap();
    std::fs::write(
        repo.join("vault/notes/2026-12-01-nfs.md"),
        "# NFS\n\nurl: https://example.com/nfs\n\nmounts need root\n",
    )
    .unwrap();
    env.git(&repo, &["add", "-A", "vault"]);
    env.git(&repo, &["commit", "-qm", "a proposal and a note"]);
    let identity = cairn::git::Identity {
        fallback_name: "cairn",
        fallback_email: "cairn@localhost",
    };
    let memory_md = read(&repo, "MEMORY.md");
    cairn::git::set_proposal_ref(
        &repo,
        &proposal.id,
        "MEMORY.md",
        memory_md.as_bytes(),
        "p",
        &identity,
    )
    .unwrap();
    let refs = || {
        env.git(
            &repo,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/cairn/proposals/",
            ],
        )
    };
    assert!(refs().contains(&proposal.id), "{}", refs());

    let slog = ids_in(&repo, "slog/2026-12-01.jsonl", |_| true)[0].clone();
    let obs = ids_in(&repo, "vault/observations/2026-12-01.jsonl", |v| {
        v.get("op").is_none()
    })[0]
        .clone();
    let session = session_file(&repo);
    let card = ids_in(&repo, &session, |v| v["type"] == "card")[2].clone();
    let episode = ids_in(&repo, &session, |v| v["type"] == "episode")[0].clone();
    let memory = cairn(&env, &repo, &["--json", "forget", WRONG, "--dry-run"]).data()["forgotten"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "memory")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(memory.starts_with("mem-"), "{memory}");
    let cases = [
        ("slog", slog.clone()),
        ("observation", obs.clone()),
        ("card", card.clone()),
        ("episode", episode.clone()),
        ("memory", memory.clone()),
        ("proposal", proposal.id.clone()),
        ("note", "2026-12-01-nfs".to_string()),
    ];
    for (kind, id) in &cases {
        let before = read(&repo, "vault/observations/2026-12-01.jsonl");
        let data = cairn(&env, &repo, &["--json", "forget", id, "--yes"])
            .code(0)
            .data();
        let found = data["forgotten"].as_array().unwrap();
        assert_eq!(found.len(), 1, "{kind}: {data}");
        assert_eq!(found[0]["kind"], *kind, "{data}");
        assert_eq!(found[0]["id"], id.as_str());
        let subject = env.git(&repo, &["log", "-1", "--format=%s%n%b"]);
        assert!(subject.starts_with("forget: 1 record\n"), "{subject}");
        assert!(
            subject.contains(&format!("Cairn-Forgotten: {id}")),
            "{subject}"
        );
        assert_eq!(git_status(&env, &repo), "", "{kind}");
        // The index dropped exactly that record: it matches one built from the files.
        cairn(&env, &repo, &["index", "--verify"]).code(0);
        if *kind == "memory" {
            // The pending proposal's ref was made again: its MEMORY.md lacks the entry.
            let at_ref = env.git(
                &repo,
                &[
                    "show",
                    &format!("refs/cairn/proposals/{}:MEMORY.md", proposal.id),
                ],
            );
            assert!(!at_ref.contains(WRONG), "{at_ref}");
            assert!(at_ref.contains("Release notes live in docs/CHANGES.md"));
        }
        // Only that record went.
        if *kind != "observation" {
            assert_eq!(read(&repo, "vault/observations/2026-12-01.jsonl"), before);
        }
        cairn(&env, &repo, &["forget", id, "--yes"]).code(1);
    }
    assert!(!read(&repo, "slog/2026-12-01.jsonl").contains(&slog));
    assert!(!read(&repo, "vault/observations/2026-12-01.jsonl").contains(&obs));
    let cards = read(&repo, &session);
    assert!(!cards.contains(&card) && !cards.contains(&episode));
    assert!(cards.lines().count() > 10, "the other cards stay");
    assert!(!read(&repo, "MEMORY.md").contains(WRONG));
    assert!(!read(&repo, "vault/proposals/2026-12-01.jsonl").contains(&proposal.id));
    assert!(!refs().contains(&proposal.id), "its ref is deleted");
    assert!(!repo.join("vault/notes/2026-12-01-nfs.md").exists());
    let tombstones = read(&repo, "vault/forgotten.jsonl");
    for (_, id) in &cases {
        assert!(tombstones.contains(&format!("\"id\":\"{id}\"")), "{id}");
    }
    assert!(!tombstones.contains(WRONG), "ids only, never the text");
}

#[test]
fn what_is_forgotten_stays_forgotten() {
    let (env, repo) = seeded();
    let session = session_file(&repo);
    let card = ids_in(&repo, &session, |v| v["type"] == "card")[1].clone();
    let text = format!("The staging database lives on {WRONG} and answers on port 5432");
    // A near copy, merged into the observation (a `merge` event naming its id).
    let variant = format!("the staging database lives on {WRONG}, answering on port 5432");
    cairn(&env, &repo, &["remember", &variant])
        .code(0)
        .stdout_has("merged into");
    cairn(&env, &repo, &["forget", &card, WRONG, "--yes"]).code(0);
    let after = read(&repo, &session);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    // The same transcript ingested again, the same observation remembered again.
    cairn(
        &env,
        &repo,
        &[
            "sessions",
            "ingest",
            fixtures().join(TRANSCRIPT).to_str().unwrap(),
        ],
    )
    .code(0);
    assert_eq!(read(&repo, &session), after, "the card is not back");
    cairn(&env, &repo, &["remember", &text]);
    cairn(&env, &repo, &["remember", &variant]);
    cairn(&env, &repo, &["search", "--exact", WRONG]).code(1);
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD"]),
        head,
        "nothing new committed"
    );
    // A proposal that would write the forgotten MEMORY.md entry back is not made.
    let forgotten: std::collections::HashSet<String> = read(&repo, "vault/forgotten.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let again = cairn::proposals::Proposal::new(
        cairn::proposals::Op::Add,
        "Operations",
        &format!("The staging database lives on {WRONG}"),
        vec![],
        "",
        vec![],
        0.9,
        "builtin",
        NOW.parse().unwrap(),
    );
    assert!(cairn::forget::brings_back(&forgotten, &again));
}

#[test]
fn without_a_terminal_or_yes_nothing_is_written_and_dry_run_only_lists() {
    let (env, repo) = seeded();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let snapshot = || {
        (
            read(&repo, "slog/2026-12-01.jsonl"),
            read(&repo, "MEMORY.md"),
            read(&repo, "vault/observations/2026-12-01.jsonl"),
            repo.join("vault/forgotten.jsonl").exists(),
            repo.join(".cairn/forget").exists(),
            repo.join(".cairn/forget.json").exists(),
        )
    };
    let before = snapshot();
    let run = cairn(&env, &repo, &["forget", WRONG]).code(2);
    assert!(
        run.stderr.contains("no terminal to confirm on"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("MEMORY.md:"),
        "the matches are shown: {}",
        run.stderr
    );
    let json = cairn(&env, &repo, &["--json", "forget", WRONG]).code(2);
    assert_eq!(json.json()["data"]["kind"], "bad_input");
    let dry = cairn(&env, &repo, &["--json", "forget", WRONG, "--dry-run"]).code(0);
    assert_eq!(dry.data()["forgotten"].as_array().unwrap().len(), 2);
    assert_eq!(dry.data()["dry_run"], true);
    cairn(&env, &repo, &["forget", "no such text anywhere", "--yes"]).code(1);
    assert_eq!(snapshot(), before);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
}

#[test]
fn redact_applies_patterns_added_later_to_what_is_stored() {
    let (env, repo) = seeded();
    let toml =
        read(&repo, "cairn.toml").replace("patterns = []", "patterns = ['acme_tok_[A-Z0-9]{16}']");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(&repo, &["commit", "-qam", "redact acme tokens"]);
    assert!(read(&repo, "slog/2026-12-01.jsonl").contains(SECRET));
    let data = cairn(&env, &repo, &["--json", "forget", "--redact", "--yes"])
        .code(0)
        .data();
    assert_eq!(data["forgotten"].as_array().unwrap().len(), 1, "{data}");
    let slog = read(&repo, "slog/2026-12-01.jsonl");
    assert!(
        slog.contains("new deploy token [REDACTED:custom] for staging"),
        "{slog}"
    );
    let subject = env.git(&repo, &["log", "-1", "--format=%s"]);
    assert_eq!(subject, "forget: redact 1 record\n");
    assert_eq!(git_status(&env, &repo), "");
    assert!(
        !data["history"]["commits"].as_array().unwrap().is_empty(),
        "the slog commit still holds it"
    );
    std::fs::remove_file(data["history"]["replace_text"].as_str().unwrap()).unwrap();
    assert_eq!(files_holding(&repo, SECRET), Vec::<String>::new());
    // Nothing left to redact.
    cairn(&env, &repo, &["forget", "--redact", "--yes"]).code(1);
}

#[test]
fn a_forget_killed_at_any_step_ends_as_an_uninterrupted_one() {
    let run = |failpoint: Option<&str>| {
        let (env, repo) = seeded();
        let args = ["forget", SECRET, WRONG, "--yes"];
        if let Some(point) = failpoint {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", NOW])
                .args(args)
                .env("CAIRN_FAILPOINT", point);
            assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
            assert!(repo.join(".cairn/forget.json").exists(), "{point}");
        }
        cairn(&env, &repo, &args).code(0);
        assert!(!repo.join(".cairn/forget.json").exists());
        // Slog ids are random: named alike in every run.
        let slog_id = env
            .git(&repo, &["log", "-1", "--format=%b"])
            .split_whitespace()
            .find(|w| w.starts_with("sl-"))
            .unwrap()
            .to_string();
        let same = |s: String| s.replace(&slog_id, "sl-X");
        let replace = repo.join(".cairn/forget/20261201T120000Z.txt");
        let replace_text = read(&repo, ".cairn/forget/20261201T120000Z.txt");
        std::fs::remove_file(replace).unwrap();
        let mut holding = files_holding(&repo, SECRET);
        holding.extend(files_holding(&repo, WRONG));
        vec![
            read(&repo, "slog/2026-12-01.jsonl"),
            read(&repo, "MEMORY.md"),
            read(&repo, "vault/observations/2026-12-01.jsonl"),
            same(read(&repo, "vault/forgotten.jsonl")),
            same(env.git(&repo, &["log", "--format=%B"])),
            env.git(&repo, &["ls-tree", "-r", "HEAD"])
                .lines()
                .filter(|l| !l.ends_with("vault/forgotten.jsonl"))
                .collect::<Vec<_>>()
                .join("\n"),
            same(env.git(&repo, &["show", "HEAD:vault/forgotten.jsonl"])),
            git_status(&env, &repo),
            replace_text,
            holding.join("\n"),
        ]
    };
    let clean = run(None);
    assert_eq!(clean[9], "", "nothing holds the texts");
    for point in [
        "forget-tombstones",
        "forget-file",
        "forget-before-commit",
        "forget-before-cleanup",
    ] {
        assert_eq!(run(Some(point)), clean, "killed at {point}");
    }
}

#[test]
fn a_person_at_a_terminal_is_asked_and_no_keeps_everything() {
    use expectrl::{Eof, Expect, Session};
    use std::process::Stdio;
    use std::time::Duration;

    let (env, repo) = seeded();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let ask = |answer: &str| {
        let mut cmd = env.command(crate::support::BIN, &repo);
        cmd.args(["--now", NOW, "forget", WRONG])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        let mut p = Session::spawn(cmd).expect("spawn cairn forget in a pty");
        p.set_expect_timeout(Some(Duration::from_secs(60)));
        p.expect("observation (1):").unwrap();
        p.expect("MEMORY.md:").unwrap();
        p.expect("forget them").unwrap();
        p.send(answer).unwrap();
        p.expect(Eof).unwrap();
        let status = p.get_process().wait().unwrap();
        format!("{status:?}")
    };
    let no = ask("n");
    assert!(no.ends_with(", 1)"), "nothing forgotten exits 1: {no}");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    assert!(read(&repo, "MEMORY.md").contains(WRONG));
    let yes = ask("y");
    assert!(yes.ends_with(", 0)"), "{yes}");
    assert!(!read(&repo, "MEMORY.md").contains(WRONG));
    assert_ne!(env.git(&repo, &["rev-parse", "HEAD"]), head);
}

/// Deletes the backup refs a history rewrite keeps, as its advice says once the result is
/// checked: `git log --all` reads them too.
fn drop_backups(env: &Env, repo: &Path) {
    let backups = env.git(
        repo,
        &[
            "for-each-ref",
            "--format=delete %(refname)",
            "refs/cairn/backup/",
        ],
    );
    assert!(!backups.is_empty(), "backup refs were written first");
    let mut update = env.command("git", repo);
    update
        .args(["update-ref", "--stdin"])
        .stdin(std::process::Stdio::piped());
    let mut child = update.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), backups.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

/// The replace-text file a forget wrote (the only file allowed to hold the text).
fn replace_file(data: &Value) -> PathBuf {
    PathBuf::from(data["history"]["replace_text"].as_str().unwrap())
}

#[test]
fn a_note_edited_by_hand_to_hold_secrets_is_forgotten_by_its_path_and_leaves_history() {
    let (env, repo) = Env::repo();
    let corpus = crate::support::secret_corpus();
    let picked: Vec<&(String, String)> = ["github-token", "aws-secret-key", "url-password"]
        .iter()
        .map(|k| corpus.iter().find(|(kind, _)| kind == k).unwrap())
        .collect();
    // A text note (offline), then a person pastes what they were looking at into it by hand
    // and commits it with git: `cairn note` would have redacted it, a hand edit is not.
    let data = cairn(
        &env,
        &repo,
        &[
            "--json",
            "note",
            "Runbook for the quokka storage cluster",
            "--context",
            "how the nightly backup logs in",
            "--offline",
        ],
    )
    .code(0)
    .data();
    let id = data["id"].as_str().unwrap().to_string();
    let rel = data["path"].as_str().unwrap().to_string();
    let mut text = read(&repo, &rel);
    for (_, line) in &picked {
        text.push_str(&format!("\n{line}\n"));
    }
    std::fs::write(repo.join(&rel), &text).unwrap();
    env.git(&repo, &["add", &rel]);
    env.git(
        &repo,
        &["commit", "-qm", "runbook: the credentials it uses"],
    );
    let secrets: Vec<String> = picked
        .iter()
        .map(|(_, l)| crate::support::secret_of(l))
        .collect();
    for s in &secrets {
        assert!(history_holding(&env, &repo, s), "{s}");
    }
    // Indexed: found by exact search and by recall before.
    cairn(&env, &repo, &["search", "--exact", &secrets[0]]).code(0);
    cairn(&env, &repo, &["index"]).code(0);

    // Named by its path, as the shell completes it from inside the folder.
    let run = env.cairn_in(
        &repo.join("vault/notes"),
        &[
            "--now",
            NOW,
            "--json",
            "forget",
            rel.rsplit('/').next().unwrap(),
            "--yes",
            "--rewrite-history",
        ],
    );
    let data = run.code(0).data();
    let found = data["forgotten"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{data}");
    assert_eq!(found[0]["kind"], "note");
    assert_eq!(found[0]["id"], id.as_str());
    assert_eq!(found[0]["text"], "Runbook for the quokka storage cluster");
    assert!(!repo.join(&rel).exists());
    assert_eq!(git_status(&env, &repo), "");
    let replace = replace_file(&data);
    for s in &secrets {
        let holding: Vec<String> = files_holding(&repo, s)
            .into_iter()
            .filter(|p| Path::new(p) != replace)
            .collect();
        assert_eq!(holding, Vec::<String>::new(), "{s}");
        assert_eq!(head_holding(&env, &repo, s), "", "{s} in HEAD");
        cairn(&env, &repo, &["search", "--exact", s]).code(1);
    }
    // The index dropped it: it matches one built from the files, and recall has no note.
    cairn(&env, &repo, &["index", "--verify"]).code(0);
    let recalled = cairn(&env, &repo, &["--json", "recall", "quokka storage runbook"]);
    assert!(!recalled.stdout.contains(&id), "{}", recalled.stdout);
    // History rewritten in place: once the backups go, no commit holds a secret.
    drop_backups(&env, &repo);
    for s in &secrets {
        assert!(!history_holding(&env, &repo, s), "{s} in history");
    }
    env.git(&repo, &["fsck", "--strict"]);
    let tombstones = read(&repo, "vault/forgotten.jsonl");
    assert!(
        tombstones.contains(&format!("\"id\":\"{id}\"")),
        "{tombstones}"
    );
}

#[test]
fn a_library_document_goes_with_its_manifest_line_chunks_and_copy() {
    let (env, repo) = Env::repo();
    let corpus = crate::support::secret_corpus();
    let (_, stripe) = corpus.iter().find(|(k, _)| k == "stripe-key").unwrap();
    let (_, slack) = corpus.iter().find(|(k, _)| k == "slack-webhook").unwrap();
    let secret = crate::support::secret_of(stripe);
    let hook = crate::support::secret_of(slack);
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // A payments runbook copied into the repository (committed), holding a live key, and a
    // storage guide left where it is.
    let payments_text = format!(
        "# Payments runbook\n\n## Keys\n\n### Live\n\nThe charge job uses {stripe}.\n\n## Alerts\n\nFailures {slack}.\n\n## Refunds\n\nRefunds go through the quokka queue.\n"
    );
    std::fs::write(docs.join("payments.md"), &payments_text).unwrap();
    std::fs::write(
        docs.join("storage.md"),
        "# Storage guide\n\n## Install\n\nUse apt to install the quokkafs driver.\n",
    )
    .unwrap();
    cairn(
        &env,
        &repo,
        &[
            "library",
            "add",
            docs.join("payments.md").to_str().unwrap(),
            "--copy",
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &["library", "add", docs.join("storage.md").to_str().unwrap()],
    )
    .code(0);
    let manifest: Vec<Value> = read(&repo, "vault/library.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let doc_of = |title: &str| {
        manifest
            .iter()
            .find(|e| e["title"] == title)
            .unwrap()
            .clone()
    };
    let payments = doc_of("Payments runbook");
    let storage = doc_of("Storage guide");
    let payments_id = payments["id"].as_str().unwrap().to_string();
    let copy = payments["path"].as_str().unwrap().to_string();
    assert!(copy.starts_with("vault/library/"), "{copy}");
    // The copy is redacted (library add never commits a secret); a person puts the keys back
    // by hand and commits with git, so the repository and its history hold them.
    assert!(!read(&repo, &copy).contains(&secret));
    std::fs::write(repo.join(&copy), &payments_text).unwrap();
    env.git(&repo, &["commit", "-qam", "runbook: the real keys"]);
    assert!(
        history_holding(&env, &repo, &secret),
        "the copy was committed"
    );
    let hits = |args: &[&str]| -> Vec<String> {
        let r = cairn(&env, &repo, args);
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        r.data()["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!hits(&["--json", "search", "--library", "quokka queue refunds"]).is_empty());

    // Forgotten by the text it holds: the whole document goes, not the one chunk.
    let data = cairn(
        &env,
        &repo,
        &["--json", "forget", &secret, "--yes", "--rewrite-history"],
    )
    .code(0)
    .data();
    let found = data["forgotten"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{data}");
    assert_eq!(found[0]["kind"], "library");
    assert_eq!(found[0]["id"], payments_id.as_str());
    assert!(
        found[0]["at"]
            .as_str()
            .unwrap()
            .starts_with("vault/library.jsonl:")
    );
    let left = read(&repo, "vault/library.jsonl");
    assert!(!left.contains(&payments_id), "{left}");
    assert!(
        left.contains(storage["id"].as_str().unwrap()),
        "the other stays"
    );
    assert!(!repo.join(&copy).exists(), "the copy goes");
    assert!(
        !repo
            .join(format!(".cairn/library/{payments_id}.jsonl"))
            .exists(),
        "its chunks go"
    );
    assert!(!read(&repo, ".cairn/library/stat.json").contains(&payments_id));
    assert_eq!(git_status(&env, &repo), "");
    let subject = env.git(&repo, &["log", "-1", "--format=%s%n%b"]);
    assert!(subject.starts_with("forget: 1 record\n"), "{subject}");
    let replace = replace_file(&data);
    for s in [&secret, &hook] {
        let holding: Vec<String> = files_holding(&repo, s)
            .into_iter()
            .filter(|p| Path::new(p) != replace)
            .collect();
        // The webhook was in the same document: it went with it (its text was not asked
        // for, so history still holds it: a rewrite replaces what was named).
        assert_eq!(holding, Vec::<String>::new(), "{s}");
    }
    assert_eq!(
        hits(&["--json", "search", "--exact", "--library", &secret]),
        Vec::<String>::new()
    );
    assert_eq!(
        hits(&["--json", "search", "--library", "quokka queue refunds"])
            .iter()
            .filter(|id| id.contains(&payments_id))
            .count(),
        0
    );
    assert!(!hits(&["--json", "search", "--library", "quokkafs driver"]).is_empty());
    cairn(&env, &repo, &["index", "--verify"]).code(0);
    drop_backups(&env, &repo);
    assert!(
        !history_holding(&env, &repo, &secret),
        "the key is out of history"
    );
    env.git(&repo, &["fsck", "--strict"]);

    // The other document, named by one of its chunks' ids: the manifest line and the chunks
    // go, the file (not cairn's) stays and the output says so.
    let chunk = hits(&["--json", "search", "--library", "quokkafs driver"])[0].clone();
    assert!(chunk.starts_with("lib-"), "{chunk}");
    let run = cairn(&env, &repo, &["--json", "forget", &chunk, "--yes"]).code(0);
    let data = run.data();
    assert_eq!(data["forgotten"][0]["id"], storage["id"]);
    assert!(
        data["warnings"].to_string().contains("stays where it is"),
        "{data}"
    );
    assert!(docs.join("storage.md").exists());
    assert_eq!(read(&repo, "vault/library.jsonl"), "");
    assert_eq!(
        hits(&["--json", "search", "--library", "quokkafs driver"]),
        Vec::<String>::new()
    );
    cairn(&env, &repo, &["index", "--verify"]).code(0);
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn a_text_in_an_adr_title_or_body_is_taken_out_in_the_same_commit_and_named() {
    // Regression (issue 30): forget left ADR bodies alone ("ADRs are not forgotten; edit the
    // record by hand"), so a secret pasted into a decision's context stayed in HEAD.
    let (env, repo) = Env::repo();
    cairn(
        &env,
        &repo,
        &[
            "slog",
            "rotate",
            "vault",
            &format!("new deploy token {SECRET} for staging"),
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &[
            "adr",
            "new",
            "Rotate the deploy token every month",
            "--context",
            &format!("The staging deploy token {SECRET} leaked in a log."),
            "--decision",
            "Rotate it monthly.",
            "--consequences",
            "A calendar entry.",
        ],
    )
    .code(0);
    cairn(
        &env,
        &repo,
        &[
            "adr",
            "new",
            &format!("Move the database off {WRONG}"),
            "--context",
            "c",
            "--decision",
            "d",
            "--consequences",
            "e",
        ],
    )
    .code(0);
    let adr1 = "decisions/0001-rotate-the-deploy-token-every-month.md";
    assert!(read(&repo, adr1).contains(SECRET));
    cairn(&env, &repo, &["search", "--exact", SECRET]).code(0);
    cairn(&env, &repo, &["index"]).code(0);
    let before = env.git(&repo, &["rev-parse", "HEAD"]);

    // The listing names the ADR with its line, and nothing is written.
    let dry = cairn(&env, &repo, &["forget", SECRET, "--dry-run"]).code(0);
    assert!(dry.stdout.contains("adr (1):"), "{}", dry.stdout);
    assert!(dry.stdout.contains(&format!("{adr1}:")), "{}", dry.stdout);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), before);

    let data = cairn(&env, &repo, &["--json", "forget", SECRET, "--yes"])
        .code(0)
        .data();
    let found = data["forgotten"].as_array().unwrap();
    let kinds: Vec<&str> = found.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["slog", "adr"], "{data}");
    let adr = &found[1];
    assert_eq!(adr["id"], "adr-1");
    assert!(
        adr["at"].as_str().unwrap().starts_with(&format!("{adr1}:")),
        "{adr}"
    );
    // One commit holds both changes.
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD~1"]),
        before,
        "more than one commit"
    );
    let changed = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(
        changed.contains(adr1) && changed.contains("slog/"),
        "{changed}"
    );
    // The record stays, valid, with the text taken out.
    let text = read(&repo, adr1);
    assert!(
        !text.to_lowercase().contains(&SECRET.to_lowercase()),
        "{text}"
    );
    assert!(
        text.contains("The staging deploy token (forgotten) leaked in a log."),
        "{text}"
    );
    cairn(&env, &repo, &["adr", "lint"]).code(0);
    let shown = cairn(&env, &repo, &["--json", "adr", "show", "1"])
        .code(0)
        .data();
    assert_eq!(
        shown["adr"]["title"], "Rotate the deploy token every month",
        "{shown}"
    );
    assert_eq!(head_holding(&env, &repo, SECRET), "");
    cairn(&env, &repo, &["search", "--exact", SECRET]).code(1);
    cairn(&env, &repo, &["index", "--verify"]).code(0);
    assert_eq!(git_status(&env, &repo), "");
    // ADRs are not tombstoned: the record is still one.
    let tombstones = read(&repo, "vault/forgotten.jsonl");
    assert!(!tombstones.contains("adr-1"), "{tombstones}");
    // History: the commit that wrote the ADR still holds it, and is named with its path.
    let commits = data["history"]["commits"].as_array().unwrap();
    assert!(
        commits
            .iter()
            .any(|c| c["paths"].as_array().unwrap().iter().any(|p| p == adr1)),
        "{data}"
    );
    assert!(!data["history"]["commands"].as_array().unwrap().is_empty());

    // A text in a title: the title line loses it, the record still parses.
    let data = cairn(&env, &repo, &["--json", "forget", WRONG, "--yes"])
        .code(0)
        .data();
    assert_eq!(data["forgotten"][0]["kind"], "adr", "{data}");
    assert_eq!(data["forgotten"][0]["id"], "adr-2", "{data}");
    let shown = cairn(&env, &repo, &["--json", "adr", "show", "2"])
        .code(0)
        .data();
    assert_eq!(
        shown["adr"]["title"], "Move the database off (forgotten)",
        "{shown}"
    );
    cairn(&env, &repo, &["adr", "lint"]).code(0);
    cairn(&env, &repo, &["search", "--exact", WRONG]).code(1);
    cairn(&env, &repo, &["index", "--verify"]).code(0);
    assert_eq!(git_status(&env, &repo), "");
}
