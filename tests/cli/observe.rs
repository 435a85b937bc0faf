//! The built-in observer's noise and dedup by meaning, end to end: small pi sessions made in
//! the real format (`../shared/fixtures/sessions/pi/session-format.md`), ingested and observed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

/// A tool call in a made-up pi turn: (command, exit code, output); a command `edit PATH`
/// edits that file instead of running.
type Bash<'a> = (&'a str, i32, &'a str);

/// A pi session (version 3: a tree of entries, here one branch), one turn per
/// `(prompt, bash calls, answer)`.
fn pi_session(id: &str, turns: &[(&str, Vec<Bash>, &str)]) -> String {
    let mut lines = vec![json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/home/ana/shop"})];
    let mut parent: Option<String> = None;
    let mut push = |message: Value, lines: &mut Vec<Value>| {
        let n = lines.len();
        let id = format!("e{n:04}");
        lines.push(json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": format!("2026-11-20T10:{:02}:{:02}.000Z", n / 60, n % 60),
            "message": message}));
        parent = Some(id);
    };
    for (t, (prompt, calls, answer)) in turns.iter().enumerate() {
        push(json!({"role": "user", "content": prompt}), &mut lines);
        for (k, (command, exit, output)) in calls.iter().enumerate() {
            let call = format!("call_{t}_{k}");
            // `edit PATH` edits a file; anything else runs in bash.
            let (tool, arguments) = match command.strip_prefix("edit ") {
                Some(path) => (
                    "edit",
                    json!({"path": path, "oldText": "1.3.0", "newText": "1.4.0"}),
                ),
                None => ("bash", json!({"command": command})),
            };
            push(
                json!({"role": "assistant", "stopReason": "toolUse", "content": [
                    {"type": "toolCall", "id": call, "name": tool, "arguments": arguments}]}),
                &mut lines,
            );
            let text = if *exit == 0 {
                output.to_string()
            } else {
                format!("{output}\n\nCommand exited with code {exit}")
            };
            push(
                json!({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                    "content": [{"type": "text", "text": text}], "isError": *exit != 0}),
                &mut lines,
            );
        }
        push(
            json!({"role": "assistant", "stopReason": "stop",
                "content": [{"type": "text", "text": answer}]}),
            &mut lines,
        );
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// Ingests `sessions` one after the other, observing after each; the observations kept.
fn observe(sessions: &[&str]) -> Value {
    let (env, repo) = Env::repo();
    let mut kept = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let t = write(env.path(), &format!("t/{i}.jsonl"), s);
        env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
            .code(0);
        let data = env
            .cairn_in(
                &repo,
                &["--json", "observe", "--all", "--observer", "builtin"],
            )
            .code(0)
            .data();
        kept.extend(data["observations"].as_array().unwrap().iter().cloned());
    }
    Value::Array(kept)
}

/// Ingests every one of `sessions`, then observes them in one run; the run's `data`.
fn observe_together(sessions: &[&str]) -> Value {
    let (env, repo) = Env::repo();
    for (i, s) in sessions.iter().enumerate() {
        let t = write(env.path(), &format!("t/{i}.jsonl"), s);
        env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
            .code(0);
    }
    env.cairn_in(
        &repo,
        &["--json", "observe", "--all", "--observer", "builtin"],
    )
    .code(0)
    .data()
}

fn of_type<'a>(obs: &'a Value, kind: &str) -> Vec<&'a Value> {
    obs.as_array()
        .unwrap()
        .iter()
        .filter(|o| o["observation_type"] == kind)
        .collect()
}

const ID: &str = "0b5e7a00-1111-4222-8333-000000000001";

#[test]
fn a_search_that_found_nothing_is_not_an_error_that_a_later_search_fixed() {
    // grep exits 1 for "no match": it was recorded as a failure that the next grep "fixed".
    let s = pi_session(
        ID,
        &[(
            "where do we parse the config?",
            vec![
                ("grep -rn 'parse_config' src", 1, ""),
                ("test -f config.toml", 1, ""),
                ("grep -rn 'fn load' src", 0, "src/config.rs:12:pub fn load"),
                ("test -f cairn.toml", 0, ""),
            ],
            "In src/config.rs, `load`.",
        )],
    );
    let obs = observe(&[&s]);
    assert!(of_type(&obs, "error-fix").is_empty(), "{obs:?}");
}

#[test]
fn a_failure_is_quoted_by_the_line_that_names_the_error() {
    // The first stderr line was quoted, "Debugger attached.", which says nothing.
    let s = pi_session(
        ID,
        &[
            (
                "run the tests",
                vec![(
                    "npm test",
                    1,
                    "Debugger attached.\nWaiting for the debugger to disconnect...\n\
                     Error: Cannot find module 'zod'\n    at Module._resolveFilename (node:internal)",
                )],
                "The tests fail: zod is missing.",
            ),
            (
                "add it",
                vec![
                    ("npm install zod", 0, "added 1 package"),
                    ("npm test", 0, "Tests 12 passed"),
                ],
                "Installed zod; the tests pass.",
            ),
        ],
    );
    let obs = observe(&[&s]);
    let fixes = of_type(&obs, "error-fix");
    assert_eq!(fixes.len(), 1, "{obs:?}");
    let text = fixes[0]["observation"].as_str().unwrap();
    assert!(text.contains("Error: Cannot find module 'zod'"), "{text}");
    assert!(!text.contains("Debugger attached"), "{text}");
}

#[test]
fn bug_reports_and_one_off_requests_are_not_stored_as_rules() {
    // "make sure" made any request a high-priority rule.
    let s = pi_session(
        ID,
        &[
            (
                "the export button doesn't seem to work on the settings page",
                vec![],
                "Found it: the handler was never bound.",
            ),
            (
                "Please make sure the new retry helper is also used in the sync job.",
                vec![],
                "Done: the sync job uses it too.",
            ),
        ],
    );
    let obs = observe(&[&s]);
    let rules: Vec<&Value> = obs
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["priority"] == "high")
        .collect();
    assert!(rules.is_empty(), "{rules:?}");
    assert!(of_type(&obs, "rule").is_empty(), "{obs:?}");
}

#[test]
fn a_fragment_without_its_referent_is_not_kept() {
    // "don't" anywhere made "I don't think …" a rule, cut off from what it was about.
    let s = pi_session(
        ID,
        &[
            (
                "no, I don't think the second option will work",
                vec![],
                "Understood, the first one then.",
            ),
            ("the second option won't do", vec![], "Right."),
        ],
    );
    let obs = observe(&[&s]);
    let said: Vec<&Value> = obs
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["observation_type"] != "decision")
        .collect();
    assert!(said.is_empty(), "{said:?}");
}

#[test]
fn short_imperatives_without_a_rule_keyword_are_rules() {
    let s = pi_session(
        ID,
        &[
            ("no debug prints!", vec![], "Removed them."),
            (
                "use hex colours, not palette numbers!",
                vec![],
                "Switched the theme to hex.",
            ),
        ],
    );
    let obs = observe(&[&s]);
    let rules: Vec<&str> = of_type(&obs, "rule")
        .iter()
        .filter(|o| o["priority"] == "high")
        .map(|o| o["observation"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        ["no debug prints!", "use hex colours, not palette numbers!"],
        "{obs:?}"
    );
}

/// A release session where `command` failed with `error` and passed after the same edits.
fn release(id: &str, command: &str, error: &str) -> String {
    pi_session(
        id,
        &[
            (
                "cut the release",
                vec![(command, 1, error)],
                "It failed; looking into it.",
            ),
            (
                "go on",
                vec![
                    ("edit package.json", 0, "Edited"),
                    ("edit CHANGELOG.md", 0, "Edited"),
                    ("edit README.md", 0, "Edited"),
                    ("edit src/index.ts", 0, "Edited"),
                    ("edit src/version.ts", 0, "Edited"),
                    (command, 0, "ok"),
                ],
                "Fixed and done.",
            ),
        ],
    )
}

#[test]
fn different_failures_with_the_same_template_stay_apart() {
    // The template around an error fix ("`…` failed (exit 1: …); it passed on a later run
    // after changes to …") dominated the vector: a failed publish merged into an unrelated
    // release step's observation (cosine 0.93 with the built-in model).
    let data = observe_together(&[
        &release(
            "0b5e7a00-1111-4222-8333-000000000002",
            "npm version minor",
            "npm ERR! Git working directory not clean.",
        ),
        &release(
            "0b5e7a00-1111-4222-8333-000000000003",
            "npm publish --access public",
            "npm ERR! code E403 forbidden",
        ),
    ]);
    assert_eq!(
        of_type(&data["observations"], "error-fix").len(),
        2,
        "{data:#}"
    );
    assert_eq!(data["counts"]["deduped"], 0, "{data:#}");
}

#[test]
fn the_same_failure_seen_twice_still_merges() {
    let data = observe_together(&[
        &release(
            "0b5e7a00-1111-4222-8333-000000000004",
            "npm publish --access public",
            "npm ERR! code E403 forbidden",
        ),
        &release(
            "0b5e7a00-1111-4222-8333-000000000005",
            "npm publish",
            "npm ERR! code E403 forbidden",
        ),
    ]);
    assert_eq!(
        of_type(&data["observations"], "error-fix").len(),
        1,
        "{data:#}"
    );
    assert_eq!(data["counts"]["deduped"], 1, "{data:#}");
}

#[test]
fn remembered_fixes_of_different_failures_stay_apart_and_a_repeat_merges() {
    // The same confirmation on the `remember` path (dedup::nearest).
    let (env, repo) = Env::repo();
    let files =
        "after changes to package.json, CHANGELOG.md, README.md, src/index.ts, src/version.ts";
    let remember = |text: &str| {
        env.cairn_in(&repo, &["--json", "remember", text])
            .code(0)
            .data()
    };
    let a = remember(&format!(
        "`npm version minor` failed (exit 1: npm ERR! Git working directory not clean.); it \
         passed on a later run {files}"
    ));
    assert!(a["merged"].is_null(), "{a}");
    let b = remember(&format!(
        "`npm publish --access public` failed (exit 1: npm ERR! code E403 forbidden); it passed \
         on a later run {files}"
    ));
    assert!(b["merged"].is_null(), "{b}");
    let again = remember(&format!(
        "`npm publish` failed (exit 1: npm ERR! code E403 forbidden); it passed on a later run \
         {files}"
    ));
    assert_eq!(again["merged"]["into"], b["id"], "{again}");
}
