//! Secrets known only by what names them (issue 30): a URL's password without a user, the
//! password flags of common command lines, any `*PASSWORD*`/`*SECRET*`/`*TOKEN*` variable's
//! value, "the password is: …". Each shape of `tests/fixtures/secrets/shapes.txt` goes through
//! every writer, and neither the files, their names, the commit messages nor any commit of the
//! history holds it.

use std::path::Path;

use serde_json::json;

use crate::sessions::claude_transcript;
use crate::support::{Env, fixtures, git_status};

/// `(kind, secret, text)` of each line of `tests/fixtures/secrets/shapes.txt`.
fn shapes() -> Vec<(String, String, String)> {
    std::fs::read_to_string(fixtures().join("secrets/shapes.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let mut next = || parts.next().expect("kind<TAB>secret<TAB>text").to_string();
            (next(), next(), next())
        })
        .collect()
}

/// Everything the repository holds or ever held: every commit's message, changed file names
/// and patch, and the files of the working tree with their names.
fn everything(env: &Env, repo: &Path) -> String {
    let mut all = env.git(repo, &["log", "--all", "--format=%B", "--name-only", "-p"]);
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            all.push_str(&p.to_string_lossy());
            all.push('\n');
            if p.is_dir() {
                stack.push(p);
            } else {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    all
}

/// Asserts that no secret of `shapes` is anywhere in `repo` or its history, and that the
/// marks that replaced them are.
fn assert_redacted_everywhere(env: &Env, repo: &Path, shapes: &[(String, String, String)]) {
    assert_eq!(git_status(env, repo), "");
    let all = everything(env, repo);
    let lower = all.to_lowercase();
    let revs = env.git(repo, &["rev-list", "--all"]);
    for (kind, secret, text) in shapes {
        assert!(
            !lower.contains(&secret.to_lowercase()),
            "{kind} leaked from {text:?}: {secret}"
        );
        // Every commit's tree, searched by git itself.
        let mut args = vec!["grep", "-i", "-F", "-l", "-e", secret.as_str()];
        args.extend(revs.lines());
        let out = env.command("git", repo).args(&args).output().unwrap();
        assert!(
            out.stdout.is_empty(),
            "git grep finds {secret}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert!(all.contains("[REDACTED:password]"), "the marks are there");
    assert!(
        all.contains("[REDACTED:url-password]"),
        "the marks are there"
    );
    // The words around each secret stay.
    assert!(
        all.contains("mysql -u root -p[REDACTED:password] app_db"),
        "the command stays"
    );
    assert!(
        all.contains("DB_PASSWORD=[REDACTED:password]"),
        "the name stays"
    );
}

// Regression (issue 30): `redis://:PASSWORD@host`, `DB_PASSWORD=correcthorsebatterystaple`,
// `mysql -pSECRET`, `curl -u admin:PASSWORD`, "the passphrase is: …" and the like were
// written as given, because the rules wanted a user in a URL, a digit in a named value and knew
// no command line's flags. Here through the one-line writers, a process per shape.
#[test]
fn secrets_known_only_by_their_name_never_reach_the_slog_or_memory() {
    let shapes = shapes();
    assert!(shapes.len() >= 25);
    let (env, repo) = Env::repo();
    for (i, (_, _, text)) in shapes.iter().enumerate() {
        env.cairn_in(
            &repo,
            &["slog", "deploy", "shell", &format!("step {i}: {text}")],
        )
        .code(0);
        env.cairn_in(
            &repo,
            &[
                "memory",
                "add",
                "--section",
                "operations",
                &format!("step {i} uses {text}"),
            ],
        )
        .code(0);
    }
    assert_redacted_everywhere(&env, &repo, &shapes);
}

// The same shapes through the writers of longer texts, whose titles also become file names and
// commit subjects: remember, note, adr new, and a transcript ingested and observed.
#[test]
fn secrets_known_only_by_their_name_never_reach_notes_adrs_or_cards() {
    let shapes = shapes();
    let (env, repo) = Env::repo();
    let run = |args: &[&str]| {
        env.cairn_in(&repo, args).code(0);
    };
    let all_lines: String = shapes.iter().map(|(_, _, t)| format!("{t}\n")).collect();
    run(&[
        "remember",
        "--source",
        "runbook",
        &format!("The runbook:\n{all_lines}"),
    ]);
    for (i, (_, _, text)) in shapes.iter().enumerate().step_by(3) {
        run(&["note", &format!("{text}\n\nStep {i} of the runbook.")]);
        run(&["adr", "new", &format!("Connect with {text}")]);
    }
    run(&["note", &format!("The runbook\n\n{all_lines}")]);
    run(&[
        "adr",
        "new",
        "Keep the runbook's credentials out of the log",
        "--context",
        &all_lines,
        "--decision",
        &all_lines,
    ]);
    // Each shape in a prompt, a command the agent ran, its failing output and the answer.
    let turns: Vec<(String, String, String)> = shapes
        .iter()
        .map(|(_, _, t)| {
            (
                format!("set it up: {t}"),
                t.clone(),
                format!("done, I ran {t}"),
            )
        })
        .collect();
    let turn_refs: Vec<_> = turns
        .iter()
        .map(|(prompt, command, answer)| {
            (
                prompt.as_str(),
                vec![("Bash", json!({ "command": command }), answer.as_str(), true)],
                answer.as_str(),
            )
        })
        .collect();
    let transcript = env.path().join("t/shapes.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(
        &transcript,
        claude_transcript("7a1c0de5-0000-4000-8000-0000000f00d5", &turn_refs),
    )
    .unwrap();
    run(&["sessions", "ingest", transcript.to_str().unwrap()]);
    run(&["observe", "--all"]);
    assert_redacted_everywhere(&env, &repo, &shapes);
}
