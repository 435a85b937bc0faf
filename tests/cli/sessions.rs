//! Transcripts to turn cards, episodes and observations, end to end through the binary.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

/// A tool call in a made-up Claude Code turn: (tool, input, result text, is_error).
pub(crate) type Tool<'a> = (&'a str, Value, &'a str, bool);

/// Lines of a Claude Code 2.x transcript in its real shape (user line, assistant lines sharing a
/// message id, tool_use paired with tool_result by id), one turn per `(prompt, tools, answer)`.
pub fn claude_transcript(session: &str, turns: &[(&str, Vec<Tool>, &str)]) -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    let mut n = 0u32;
    let mut line = |v: Value, parent: &mut Option<String>, n: &mut u32| {
        *n += 1;
        let uuid = format!("00000000-0000-4000-8000-{:012}", *n);
        let mut v = v;
        let o = v.as_object_mut().unwrap();
        o.insert("parentUuid".into(), json!(parent.clone()));
        o.insert("isSidechain".into(), json!(false));
        o.insert("userType".into(), json!("external"));
        o.insert("cwd".into(), json!("/home/ana/shop"));
        o.insert("sessionId".into(), json!(session));
        o.insert("version".into(), json!("2.0.14"));
        o.insert("uuid".into(), json!(uuid.clone()));
        o.insert(
            "timestamp".into(),
            json!(format!("2026-11-20T10:{:02}:{:02}.000Z", *n / 60, *n % 60)),
        );
        *parent = Some(uuid);
        out.push_str(&v.to_string());
        out.push('\n');
    };
    for (t, (prompt, tools, answer)) in turns.iter().enumerate() {
        line(
            json!({"type": "user", "message": {"role": "user", "content": prompt}}),
            &mut parent,
            &mut n,
        );
        let msg = format!("msg_{session}_{t}");
        for (k, (tool, input, result, is_error)) in tools.iter().enumerate() {
            let id = format!("toolu_{t}_{k}");
            line(
                json!({"type": "assistant", "message": {"id": msg, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}], "stop_reason": null}}),
                &mut parent,
                &mut n,
            );
            line(
                json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result", "content": result, "is_error": is_error}]},
                    "toolUseResult": {"stdout": result, "stderr": "", "interrupted": false}}),
                &mut parent,
                &mut n,
            );
        }
        line(
            json!({"type": "assistant", "message": {"id": format!("{msg}_end"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"}}),
            &mut parent,
            &mut n,
        );
    }
    out
}

fn pnpm_session() -> String {
    claude_transcript(
        "5f0c7a1e-3b1d-4c8e-9f00-00000000a001",
        &[
            (
                "install the dependencies and run the tests",
                vec![
                    (
                        "Bash",
                        json!({"command": "npm install"}),
                        "added 312 packages",
                        false,
                    ),
                    (
                        "Bash",
                        json!({"command": "npm test"}),
                        "Error: Cannot find module 'vitest'\nExit code 1",
                        true,
                    ),
                ],
                "I installed the dependencies with npm, but the tests fail: vitest is missing.",
            ),
            (
                "no, never use npm here, use pnpm. The lockfile is pnpm-lock.yaml",
                vec![
                    (
                        "Bash",
                        json!({"command": "rm -rf node_modules package-lock.json && pnpm install"}),
                        "Done in 4.2s",
                        false,
                    ),
                    (
                        "Bash",
                        json!({"command": "pnpm test"}),
                        "Test Files  12 passed (12)",
                        false,
                    ),
                ],
                "Switched to pnpm: removed package-lock.json, installed with pnpm, and all 12 test files pass.",
            ),
        ],
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn commits(env: &Env, repo: &Path) -> u64 {
    env.git(repo, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

fn card_lines(repo: &Path) -> Vec<Value> {
    let dir = repo.join("vault/sessions");
    let mut out = Vec::new();
    for agent in std::fs::read_dir(&dir).unwrap() {
        let agent = agent.unwrap().path();
        if agent.is_dir() {
            out.extend(jsonl_lines(&agent));
        }
    }
    out
}

#[test]
fn a_correction_becomes_a_rule_that_recall_returns() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    let data = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["cards"], 2, "{data}");
    let cards = card_lines(&repo);
    assert_eq!(cards.len(), 2);
    assert_eq!(
        cards[1]["prompt"],
        "no, never use npm here, use pnpm. The lockfile is pnpm-lock.yaml"
    );
    assert_eq!(cards[0]["commands"][1]["command"], "npm test");
    assert_ne!(cards[0]["commands"][1]["exit"], 0, "{}", cards[0]);

    let data = env
        .cairn_in(&repo, &["--json", "observe", "--all"])
        .code(0)
        .data();
    assert_eq!(data["counts"]["observer"], "builtin");
    let obs = data["observations"].as_array().unwrap();
    let rule = obs
        .iter()
        .find(|o| {
            o["observation"]
                .as_str()
                .unwrap()
                .contains("never use npm here, use pnpm")
        })
        .unwrap_or_else(|| panic!("no rule in {data}"));
    assert_eq!(rule["write_verdict"], "allow");
    assert_eq!(rule["category_id"], "rules-conventions");
    assert_eq!(rule["source"], cards[1]["id"], "the fact names its turn");

    let out = env
        .cairn_in(&repo, &["--json", "recall", "pnpm"])
        .code(0)
        .data();
    let ids: Vec<&Value> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert!(ids.contains(&&rule["id"]), "{out}");
    // In Markdown, the turn's results sit under its card's head line.
    let md = env
        .cairn_in(&repo, &["recall", "--format", "md", "pnpm"])
        .code(0);
    assert!(
        md.stdout
            .contains("### turn claude/5f0c7a1e-3b1d-4c8e-9f00-00000000a001#2"),
        "{}",
        md.stdout
    );

    // Observing again writes nothing.
    let before = commits(&env, &repo);
    let again = env
        .cairn_in(&repo, &["--json", "observe", "--all"])
        .code(0)
        .data();
    assert_eq!(again["counts"]["turns"], 0, "{again}");
    assert_eq!(commits(&env, &repo), before);
    assert_eq!(git_status(&env, &repo), "");

    // Telemetry has both runs, and stats --telemetry shows them.
    let stats = env
        .cairn_in(
            &repo,
            &["--json", "stats", "--telemetry", "--component", "observe"],
        )
        .code(0)
        .data();
    let events = stats["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{stats}");
    assert!(events[0]["metadata"]["allowed"].as_u64().unwrap() >= 1);
    assert!(events[0]["metadata"].get("tokens_in").is_some());
    env.cairn_in(&repo, &["stats"])
        .code(0)
        .stdout_has("observe run: 2 runs");
}

#[test]
fn an_error_fixed_later_is_observed() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let data = env
        .cairn_in(&repo, &["--json", "observe", "--all"])
        .code(0)
        .data();
    let obs = data["observations"].as_array().unwrap();
    let fix = obs
        .iter()
        .find(|o| o["observation_type"] == "error-fix")
        .unwrap_or_else(|| panic!("{data}"));
    let text = fix["observation"].as_str().unwrap();
    assert!(text.starts_with("`npm test` failed"), "{text}");
    assert!(text.contains("`pnpm test` then succeeded"), "{text}");
}

#[test]
fn an_observe_killed_after_writing_is_finished_by_the_next() {
    let run = |crash: bool| {
        let (env, repo) = Env::repo();
        let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
        env.cairn_in(
            &repo,
            &[
                "--now",
                "2026-11-30T12:00:00Z",
                "sessions",
                "ingest",
                t.to_str().unwrap(),
            ],
        )
        .code(0);
        if crash {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", "2026-11-30T12:00:00Z", "observe", "--all"])
                .env("CAIRN_FAILPOINT", "observe-after-append");
            let status = cmd.output().unwrap().status;
            assert!(!status.success(), "the failpoint stops the process");
            assert_ne!(
                git_status(&env, &repo),
                "",
                "the crash left the append uncommitted"
            );
        }
        env.cairn_in(
            &repo,
            &["--now", "2026-11-30T12:00:00Z", "observe", "--all"],
        )
        .code(0);
        assert_eq!(git_status(&env, &repo), "");
        let obs = read(&repo, "vault/observations/2026-11-30.jsonl");
        (obs, commits(&env, &repo))
    };
    let (clean, _) = run(false);
    let (recovered, _) = run(true);
    assert_eq!(
        recovered, clean,
        "the same lines whether or not a run was killed"
    );
}

#[test]
fn an_ingest_killed_before_its_commit_is_committed_by_the_next() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
    cmd.args(["sessions", "ingest", t.to_str().unwrap()])
        .env("CAIRN_FAILPOINT", "ingest-before-commit");
    assert!(!cmd.output().unwrap().status.success());
    let data = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["cards"], 0, "nothing new: {data}");
    assert_eq!(git_status(&env, &repo), "", "the leftover was committed");
    assert_eq!(card_lines(&repo).len(), 2);
}

#[test]
fn secrets_in_a_transcript_never_reach_the_repository() {
    let corpus = std::fs::read_to_string(fixtures().join("secrets/corpus.txt")).unwrap();
    let secrets: Vec<(String, String)> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (kind, text) = l.split_once('\t').expect("kind<TAB>text");
            (kind.to_string(), text.replace("\\n", "\n"))
        })
        .collect();
    assert!(
        secrets.len() >= 20,
        "at least 20 secret shapes, got {}",
        secrets.len()
    );
    let turns: Vec<(String, String)> = secrets
        .iter()
        .map(|(kind, text)| {
            (
                format!("never paste this {kind} again: {text}"),
                format!("Noted; the value was {text}"),
            )
        })
        .collect();
    let turn_refs: Vec<(&str, Vec<Tool>, &str)> = turns
        .iter()
        .map(|(p, a)| {
            (
                p.as_str(),
                vec![(
                    "Bash",
                    json!({"command": format!("echo {a}")}),
                    a.as_str(),
                    false,
                )],
                a.as_str(),
            )
        })
        .collect();
    let (env, repo) = Env::repo();
    let t = write(
        env.path(),
        "t/secrets.jsonl",
        &claude_transcript("5f0c7a1e-0000-4000-8000-00000000beef", &turn_refs),
    );
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    env.cairn_in(&repo, &["observe", "--all"]).code(0);
    // The other writers redact too: the slog, remember, import.
    let mut import = String::new();
    for (kind, text) in &secrets {
        env.cairn_in(
            &repo,
            &[
                "slog",
                "rotate",
                "secrets",
                &format!("rotated the {kind}: {}", text.replace('\n', " ")),
            ],
        )
        .code(0);
        env.cairn_in(
            &repo,
            &[
                "remember",
                "--source",
                kind,
                &format!("the {kind} was leaked once: {text}"),
            ],
        )
        .code(0);
        import.push_str(&json!({"observation": format!("imported {kind}: {text}"), "source": format!("i-{kind}"), "narrative": text}).to_string());
        import.push('\n');
    }
    let file = write(env.path(), "import.jsonl", &import);
    env.cairn_in(&repo, &["import", "observations", file.to_str().unwrap()])
        .code(0);
    let recall = env.cairn_in(
        &repo,
        &["--json", "search", "never", "paste", "--limit", "100"],
    );
    // Every file cairn wrote, committed or derived, and what it printed.
    let mut written = String::new();
    for entry in walk(&repo) {
        if entry.components().any(|c| c.as_os_str() == ".git") {
            continue;
        }
        written.push_str(&String::from_utf8_lossy(&std::fs::read(&entry).unwrap()));
    }
    written.push_str(&recall.stdout);
    for (kind, text) in &secrets {
        let value = secret_of(text);
        assert!(!written.contains(&value), "{kind} leaked: {value}");
    }
    assert!(written.contains("[REDACTED:"), "redaction marks are there");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_bad_line_is_named_and_the_rest_is_read() {
    let (env, repo) = Env::repo();
    let mut text = pnpm_session();
    let at = text.find('\n').unwrap() + 1;
    text.insert_str(at, "{not json\n");
    let t = write(env.path(), "t/bad.jsonl", &text);
    let out = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0);
    // The good lines were written, the bad one is a warning naming file and line (stderr and
    // `data.warnings`): exit 0 under the output contract.
    assert!(out.stderr.contains("bad.jsonl:2:"), "{}", out.stderr);
    let data = out.data();
    assert_eq!(data["cards"], 2, "the other lines were read");
    assert!(
        data["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("bad.jsonl:2:")),
        "{data}"
    );
}

#[test]
fn observe_needs_sessions_named_or_all() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["observe"])
        .code(2)
        .stderr_has("--all");
    env.cairn_in(&repo, &["observe", "nope"])
        .code(2)
        .stderr_has("no ingested session");
}

/// The observer's XML for the turns named in a prompt: one rule from the last turn.
fn observer_xml(prompt: &str) -> String {
    let ids: Vec<&str> = prompt
        .match_indices("tc-")
        .map(|(i, _)| &prompt[i..i + 15])
        .filter(|id| id[3..].chars().all(|c| c.is_ascii_hexdigit()))
        .collect();
    let mut unique: Vec<&str> = Vec::new();
    for id in ids {
        if !unique.contains(&id) {
            unique.push(id);
        }
    }
    let last = unique.last().expect("the prompt names turns");
    format!(
        "<observations>\n  <segment turns=\"{}\">\n    <narrative>The user moved the project from npm to pnpm after the tests failed.</narrative>\n    <fact priority=\"high\" gate=\"allow\" confidence=\"0.92\" category=\"rules-conventions\" turn=\"{last}\">This repository uses pnpm, never npm (the lockfile is pnpm-lock.yaml).</fact>\n  </segment>\n</observations>",
        unique.join(" ")
    )
}

/// A mock of `provider`'s chat API answering `reply(prompt)` in that API's real shape.
fn chat_mock(
    server: &mut mockito::Server,
    provider: &str,
    reply: fn(&str) -> String,
) -> mockito::Mock {
    let path = match provider {
        "openai" => "/v1/chat/completions",
        "anthropic" => "/v1/messages",
        _ => "/api/chat",
    };
    let provider = provider.to_string();
    server
        .mock("POST", path)
        .with_status(200)
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let body: Value = serde_json::from_slice(req.body().unwrap()).unwrap();
            let prompt = body.to_string();
            let text = reply(&prompt);
            let out = match provider.as_str() {
                "openai" => json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": "test-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 812, "completion_tokens": 95, "total_tokens": 907}
                }),
                "anthropic" => json!({
                    "id": "msg_01", "type": "message", "role": "assistant", "model": "test-model",
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 812, "output_tokens": 95}
                }),
                _ => json!({
                    "model": "test-model", "created_at": "2026-11-30T12:00:00Z",
                    "message": {"role": "assistant", "content": text}, "done": true, "done_reason": "stop",
                    "prompt_eval_count": 812, "eval_count": 95
                }),
            };
            serde_json::to_vec(&out).unwrap()
        })
        .create()
}

fn configure_llm(repo: &Path, provider: &str, base_url: &str) {
    let toml = read(repo, "cairn.toml").replacen(
        "provider = \"\"\nbase_url = \"\"\nmodel = \"\"",
        &format!("provider = \"{provider}\"\nbase_url = \"{base_url}\"\nmodel = \"test-model\""),
        1,
    );
    assert!(
        toml.contains(&format!("provider = \"{provider}\"")),
        "{toml}"
    );
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
}

#[test]
fn the_llm_observer_works_through_each_api() {
    for provider in ["openai", "anthropic", "ollama"] {
        let mut server = mockito::Server::new();
        let mock = chat_mock(&mut server, provider, observer_xml);
        let (env, repo) = Env::repo();
        configure_llm(&repo, provider, &server.url());
        let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
        env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
            .code(0);
        let data = env
            .cairn_in(&repo, &["--json", "observe", "--all"])
            .code(0)
            .data();
        mock.assert();
        assert_eq!(data["counts"]["observer"], "llm", "{provider}: {data}");
        assert_eq!(data["counts"]["tokens_in"], 812, "{provider}: {data}");
        assert_eq!(data["counts"]["tokens_out"], 95, "{provider}: {data}");
        let obs = &data["observations"][0];
        assert_eq!(
            obs["category_id"], "rules-conventions",
            "{provider}: {data}"
        );
        assert_eq!(obs["write_verdict"], "allow");
        assert_eq!(
            obs["narrative"],
            "The user moved the project from npm to pnpm after the tests failed."
        );
        let cards = card_lines(&repo);
        assert_eq!(obs["source"], cards[1]["id"], "{provider}");
        let out = env
            .cairn_in(
                &repo,
                &["--json", "recall", "--kind", "observation", "pnpm"],
            )
            .code(0)
            .data();
        assert_eq!(out["results"][0]["id"], obs["id"], "{provider}: {out}");
        let stats = env
            .cairn_in(
                &repo,
                &["--json", "stats", "--telemetry", "--component", "observe"],
            )
            .code(0)
            .data();
        assert_eq!(
            stats["events"][0]["metadata"]["tokens_in"], 812,
            "{provider}"
        );
    }
}

#[test]
fn a_malformed_llm_reply_writes_nothing() {
    fn cut_off(prompt: &str) -> String {
        let xml = observer_xml(prompt);
        xml[..xml.len() / 2].to_string()
    }
    let mut server = mockito::Server::new();
    let _mock = chat_mock(&mut server, "openai", cut_off);
    let (env, repo) = Env::repo();
    configure_llm(&repo, "openai", &server.url());
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let before = commits(&env, &repo);
    let out = env.cairn_in(&repo, &["observe", "--all"]).code(2);
    assert!(out.stderr.contains("malformed LLM reply"), "{}", out.stderr);
    assert_eq!(commits(&env, &repo), before);
    assert!(
        !repo.join("vault/observations").exists()
            || jsonl_lines(&repo.join("vault/observations")).is_empty()
    );
    let stats = env
        .cairn_in(
            &repo,
            &["--json", "stats", "--telemetry", "--component", "observe"],
        )
        .code(0)
        .data();
    assert_eq!(stats["events"][0]["success"], false, "{stats}");
    assert!(
        stats["events"][0]["metadata"]["error"]
            .as_str()
            .unwrap()
            .contains("malformed")
    );
}

/// Card and episode lines per session file.
fn counts_per_session(repo: &Path) -> std::collections::BTreeMap<String, (usize, usize)> {
    let mut out = std::collections::BTreeMap::new();
    for r in card_lines(repo) {
        let key = format!(
            "{}/{}",
            r["agent"].as_str().unwrap(),
            r["session"].as_str().unwrap()
        );
        let e = out.entry(key).or_insert((0, 0));
        if r["type"] == "card" {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    out
}

#[test]
fn every_fixture_ingests_with_its_counted_turns_and_reingest_changes_nothing() {
    let (env, repo) = Env::repo();
    let dir = fixtures().join("sessions");
    let data = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", dir.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["transcripts"], 9, "{data}");
    assert_eq!(data["errors"].as_array().unwrap().len(), 0, "{data}");
    // The counts of tests/fixtures/sessions/README.md, made by count_prompts.py from the raw lines.
    let want: Vec<(&str, (usize, usize))> = vec![
        ("claude/1af7fc5e-8455-4414-9ccd-011d40f70b2a", (1, 0)),
        ("claude/5c0375b4-57a5-4f26-b12d-d022ee4e51b7", (1, 0)),
        ("claude/624a4a58-b34c-462d-a70d-13421c8125a8", (15, 1)),
        ("claude/9eda1058-9706-484a-b992-d03f9cfa2546", (3, 16)),
        ("claude/c3dfd0e6-ac71-4bba-a88f-dcdf5a3863aa", (3, 1)),
        ("claude/fe5e1c67-53e7-4862-81ae-d0e013e3270b", (2, 1)),
        ("codex/019e1625-789d-76c0-80ab-3724b5dd0e01", (2, 0)),
        ("codex/019e1625-789d-76c0-80ab-3724b5ddb799", (2, 0)),
        ("pi/ffae836b-9420-4060-ac13-7745215f90ff", (55, 2)),
    ];
    let got = counts_per_session(&repo);
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        want.into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Vec<_>>()
    );
    assert_eq!(data["cards"], 84);
    assert_eq!(data["episodes"], 21);
    assert_eq!(git_status(&env, &repo), "");

    // Again: every transcript unchanged, nothing written, no commit.
    let before = commits(&env, &repo);
    let again = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", dir.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(again["unchanged"], 9, "{again}");
    assert_eq!(again["cards"], 0);
    assert_eq!(commits(&env, &repo), before);
    // Without the checkpoints (a fresh clone), the comparison alone still writes nothing.
    std::fs::remove_file(repo.join(".cairn/sessions.json")).unwrap();
    let third = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", dir.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(
        (third["unchanged"].as_u64(), third["cards"].as_u64()),
        (Some(0), Some(0)),
        "{third}"
    );
    assert_eq!(commits(&env, &repo), before);

    // Cards and episodes are recalled and searched as kinds card and episode.
    let found = env
        .cairn_in(
            &repo,
            &["--json", "search", "--kind", "card", "processedRecordIds"],
        )
        .code(0)
        .data();
    assert_eq!(found["results"][0]["kind"], "card", "{found}");
    let found = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "search",
                "--kind",
                "episode",
                "compaction",
                "summary",
            ],
        )
        .code(0)
        .data();
    assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
}

#[test]
fn appending_turns_to_a_copy_adds_exactly_those_cards() {
    let (env, repo) = Env::repo();
    let original =
        std::fs::read_to_string(fixtures().join("sessions/claude-code/session-624a4a58.jsonl"))
            .unwrap();
    let lines: Vec<&str> = original.split_inclusive('\n').collect();
    // Line 106 is a real prompt ("I think that processedRecordIds…"): cut just before it.
    assert!(lines[105].contains("I think that processedRecordIds"));
    let copy = write(env.path(), "t/growing.jsonl", &lines[..105].concat());
    let first = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", copy.to_str().unwrap()],
        )
        .code(0)
        .data();
    let before = first["cards"].as_u64().unwrap();
    assert!(before > 0 && before < 15, "{first}");
    std::fs::write(&copy, &original).unwrap();
    let grown = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", copy.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(grown["cards"].as_u64().unwrap(), 15 - before, "{grown}");
    assert_eq!(
        grown["rewritten"], 0,
        "the new turns were appended: {grown}"
    );
    // The same file as ingesting the whole transcript at once.
    let (env2, repo2) = Env::repo();
    let whole = write(env2.path(), "t/whole.jsonl", &original);
    env2.cairn_in(&repo2, &["sessions", "ingest", whole.to_str().unwrap()])
        .code(0);
    let rel = "vault/sessions/claude/624a4a58-b34c-462d-a70d-13421c8125a8.jsonl";
    assert_eq!(read(&repo, rel), read(&repo2, rel));
}

#[test]
fn a_transcript_rewritten_in_its_middle_is_read_again_whole() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let edited = pnpm_session().replace(
        "install the dependencies and run the tests",
        "install the dependencies, then run every test",
    );
    std::fs::write(&t, edited).unwrap();
    let data = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["rewritten"], 1, "{data}");
    assert_eq!(data["cards"], 0, "same turns, same ids: {data}");
    let cards = card_lines(&repo);
    assert_eq!(cards.len(), 2);
    assert_eq!(
        cards[0]["prompt"],
        "install the dependencies, then run every test"
    );
    let found = env
        .cairn_in(
            &repo,
            &["--json", "search", "--kind", "card", "every", "test"],
        )
        .code(0)
        .data();
    assert_eq!(
        found["results"][0]["id"], cards[0]["id"],
        "the index was brought up to date: {found}"
    );
}

#[test]
fn ingest_all_reads_the_agents_default_folders() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let claude = home.join(".claude/projects/-home-ana-shop");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("5f0c7a1e-3b1d-4c8e-9f00-00000000a001.jsonl"),
        pnpm_session(),
    )
    .unwrap();
    let pi = home.join(".pi/agent/sessions/--home-ana-shop--");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::copy(
        fixtures().join("sessions/pi/before-compaction.jsonl"),
        pi.join("2025-12-09T00-53-29-825Z_ffae836b.jsonl"),
    )
    .unwrap();
    let data = env
        .cairn_in(&repo, &["--json", "sessions", "ingest", "--all"])
        .code(0)
        .data();
    assert_eq!(data["transcripts"], 2, "{data}");
    assert_eq!(data["cards"], 57, "{data}");
}

#[test]
fn a_secret_written_by_hand_is_redacted_when_shown() {
    let (env, repo) = Env::repo();
    let token = "ghp_6TT0rTBoRiuAz4T0PSdGKVVKyIlBszRddiiG";
    let line = json!({"id": "ob-0000000000000001", "observation": format!("the deploy bot token is {token}"),
        "timestamp": "2026-11-29T10:00:00.000Z", "write_verdict": "allow", "category_id": "operations"});
    write(
        &repo,
        "vault/observations/2026-11-29.jsonl",
        &format!("{line}\n"),
    );
    let json = env
        .cairn_in(&repo, &["--json", "recall", "deploy", "bot", "token"])
        .code(0);
    assert!(
        json.stdout.contains("[REDACTED:github-token]"),
        "{}",
        json.stdout
    );
    assert!(!json.stdout.contains(token));
    let md = env
        .cairn_in(
            &repo,
            &["recall", "--format", "md", "deploy", "bot", "token"],
        )
        .code(0);
    assert!(
        !md.stdout.contains(token) && md.stdout.contains("[REDACTED:github-token]"),
        "{}",
        md.stdout
    );
    let search = env.cairn_in(&repo, &["search", "deploy", "bot"]).code(0);
    assert!(!search.stdout.contains(token));
}

#[test]
fn an_ambiguous_category_is_asked_of_the_llm_when_one_is_configured() {
    fn answer(prompt: &str) -> String {
        assert!(
            prompt.contains("<text>"),
            "only categories are asked with --observer builtin: {prompt}"
        );
        "<category>projects</category>".to_string()
    }
    let mut server = mockito::Server::new();
    let mock = chat_mock(&mut server, "openai", answer);
    let (env, repo) = Env::repo();
    configure_llm(&repo, "openai", &server.url());
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let data = env
        .cairn_in(
            &repo,
            &["--json", "observe", "--all", "--observer", "builtin"],
        )
        .code(0)
        .data();
    assert_eq!(data["counts"]["observer"], "builtin", "{data}");
    // The rule's keywords are clear (never → rules-conventions): not asked. The decision
    // "Switched to pnpm…" has no cue word: asked, and the LLM's answer kept.
    let obs = data["observations"].as_array().unwrap();
    let rule = obs
        .iter()
        .find(|o| o["observation_type"] == "rule")
        .unwrap();
    assert_eq!(rule["category_id"], "rules-conventions");
    let decision = obs
        .iter()
        .find(|o| o["observation_type"] == "decision")
        .unwrap_or_else(|| panic!("{data}"));
    assert_eq!(decision["category_id"], "projects");
    assert!(data["counts"]["calls"].as_u64().unwrap() >= 1);
    assert!(mock.matched());
}

const EVENT_PROMPTS: &str = "sessions/codex-event-prompts/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5dd0e01.jsonl";

/// Issue 10, point 1: newer Codex builds write the prompts only as `event_msg` `user_message`
/// lines; they were read from `response_item` alone, so such a rollout gave 0 cards, silently.
#[test]
fn codex_prompts_written_only_as_events_become_cards() {
    let (env, repo) = Env::repo();
    let t = fixtures().join(EVENT_PROMPTS);
    let out = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0);
    assert_eq!(out.json()["type"], "sessions_ingest");
    let data = out.data();
    assert_eq!(data["cards"], 2, "{data}");
    let prompts: Vec<Value> = card_lines(&repo)
        .iter()
        .map(|c| c["prompt"].clone())
        .collect();
    assert_eq!(
        prompts,
        [
            "show tools",
            "let's update the defailt context compart to 90 in env var"
        ],
        "each prompt once"
    );
}

/// Issue 10, point 1: a transcript whose tool calls and answers were read but no prompt is
/// named in a warning (stderr and `data.warnings`) and reported skipped, not ingested.
#[test]
fn a_transcript_with_tool_calls_but_no_prompt_is_named_in_a_warning() {
    let (env, repo) = Env::repo();
    let derived = std::fs::read_to_string(fixtures().join(EVENT_PROMPTS)).unwrap();
    let no_prompts: String = derived
        .split_inclusive('\n')
        .filter(|l| !l.contains(r#""type":"user_message""#))
        .collect();
    let t = write(env.path(), "t/rollout-no-prompts.jsonl", &no_prompts);
    let out = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0);
    assert!(
        out.stderr.contains("rollout-no-prompts.jsonl: skipped:")
            && out.stderr.contains("but no prompt"),
        "{}",
        out.stderr
    );
    let data = out.data();
    assert_eq!(data["ingested"], 0, "{data}");
    assert_eq!(data["skipped"][0]["file"], t.to_str().unwrap(), "{data}");
    assert!(
        data["warnings"][0]
            .as_str()
            .unwrap()
            .contains("rollout-no-prompts.jsonl"),
        "{data}"
    );
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0)
        .stdout_has("ingested 0 transcripts (1 unchanged)");
}

/// The first `lines` lines of the real session-624a4a58 (15 turns), as a truncated copy.
fn cut_session(lines: usize) -> (String, String) {
    let original =
        std::fs::read_to_string(fixtures().join("sessions/claude-code/session-624a4a58.jsonl"))
            .unwrap();
    let cut: String = original.split_inclusive('\n').take(lines).collect();
    (original, cut)
}

const SESSION_624: &str = "vault/sessions/claude/624a4a58-b34c-462d-a70d-13421c8125a8.jsonl";

/// Issue 10, point 2: ingesting a truncated copy of a session (same id, fewer lines) rewrote
/// the session file: 14 cards became 2 and observations pointed at cards that were gone.
#[test]
fn a_shorter_copy_of_a_session_removes_no_card() {
    let (env, repo) = Env::repo();
    let (original, cut) = cut_session(130);
    let whole = write(env.path(), "t/whole.jsonl", &original);
    env.cairn_in(&repo, &["sessions", "ingest", whole.to_str().unwrap()])
        .code(0);
    env.cairn_in(&repo, &["observe", "--all"]).code(0);
    let before = read(&repo, SESSION_624);
    let commits_before = commits(&env, &repo);
    // The cut falls inside a turn: the copy renders fewer cards and a changed last one.
    let copy = write(env.path(), "backup/copy.jsonl", &cut);
    let out = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", copy.to_str().unwrap()],
        )
        .code(0);
    assert!(
        out.stderr
            .contains("copy.jsonl: an older or shorter copy of session"),
        "{}",
        out.stderr
    );
    assert_eq!(out.data()["behind"][0]["cards"], 15, "{}", out.stdout);
    assert_eq!(read(&repo, SESSION_624), before, "nothing removed");
    assert_eq!(commits(&env, &repo), commits_before, "nothing committed");
    // Every observation still cites a card that exists.
    let ids: Vec<Value> = card_lines(&repo).iter().map(|c| c["id"].clone()).collect();
    let obs = jsonl_lines(&repo.join("vault/observations"));
    assert!(!obs.is_empty());
    for o in obs
        .iter()
        .filter(|o| o["source"].as_str().is_some_and(|s| s.starts_with("tc-")))
    {
        assert!(ids.contains(&o["source"]), "{o} cites a card that is gone");
    }
    // A copy cut at a turn's end (a prefix of the rendering) is behind too.
    let lines: Vec<&str> = original.split_inclusive('\n').collect();
    assert!(lines[105].contains("I think that processedRecordIds"));
    std::fs::write(&copy, lines[..105].concat()).unwrap();
    env.cairn_in(&repo, &["sessions", "ingest", copy.to_str().unwrap()])
        .code(0)
        .stderr_has("nothing written");
    assert_eq!(read(&repo, SESSION_624), before);
}

/// Issue 10, point 2: the checkpoint of a transcript said "unchanged" though another path to
/// the same session had rewritten its file since, so the first transcript was never read again.
#[test]
fn a_second_path_to_a_session_does_not_hide_the_first() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let rel = "vault/sessions/claude/5f0c7a1e-3b1d-4c8e-9f00-00000000a001.jsonl";
    let first = read(&repo, rel);
    // Another copy of the same session, edited in its middle, rewrites the file.
    let edited = pnpm_session().replace(
        "install the dependencies and run the tests",
        "install the dependencies, then run every test",
    );
    let other = write(env.path(), "elsewhere/pnpm.jsonl", &edited);
    env.cairn_in(&repo, &["sessions", "ingest", other.to_str().unwrap()])
        .code(0);
    assert_ne!(read(&repo, rel), first);
    // The first transcript, unchanged itself, is read again: its file no longer renders it.
    let data = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", t.to_str().unwrap()],
        )
        .code(0)
        .data();
    assert_eq!(data["unchanged"], 0, "{data}");
    assert_eq!(read(&repo, rel), first);
}

/// Issue 10, point 2: after a truncated copy had been ingested, re-ingesting the whole
/// original said "unchanged" and the session stayed cut.
#[test]
fn the_whole_original_after_a_truncated_copy_holds_every_turn() {
    let (env, repo) = Env::repo();
    let (original, cut) = cut_session(130);
    let whole = write(env.path(), "t/whole.jsonl", &original);
    let copy = write(env.path(), "backup/copy.jsonl", &cut);
    for t in [&whole, &copy, &whole] {
        env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
            .code(0);
    }
    let (env2, repo2) = Env::repo();
    let alone = write(env2.path(), "t/whole.jsonl", &original);
    env2.cairn_in(&repo2, &["sessions", "ingest", alone.to_str().unwrap()])
        .code(0);
    assert_eq!(read(&repo, SESSION_624), read(&repo2, SESSION_624));
    let cards = card_lines(&repo);
    assert_eq!(cards.iter().filter(|r| r["type"] == "card").count(), 15);
}

/// Issue 10, point 16: a turn without content ("say hello" answered with a greeting) ranked in
/// recall for a question about the design.
#[test]
fn a_turn_without_content_is_recalled_only_when_asked() {
    let (env, repo) = Env::repo();
    let t = write(
        env.path(),
        "t/hello.jsonl",
        &claude_transcript(
            "5f0c7a1e-3b1d-4c8e-9f00-00000000b002",
            &[
                (
                    "say hello",
                    vec![],
                    "Hello! Happy to talk about the design whenever you like.",
                ),
                ("/clear", vec![], ""),
                (
                    "sketch the design of the cache layer in docs/cache.md",
                    vec![(
                        "Write",
                        json!({"file_path": "docs/cache.md", "content": "# Cache"}),
                        "File created",
                        false,
                    )],
                    "The design puts a read-through cache in front of the store.",
                ),
            ],
        ),
    );
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let cards = card_lines(&repo);
    assert_eq!(cards.len(), 3, "trivial turns stay cards");
    assert_eq!(cards[0]["trivial"], true);
    assert_eq!(cards[1]["trivial"], true);
    assert!(cards[2].get("trivial").is_none(), "{}", cards[2]);
    let ids = |out: &Value| -> Vec<Value> {
        out["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    let out = env
        .cairn_in(&repo, &["--json", "recall", "design"])
        .code(0)
        .data();
    assert_eq!(ids(&out), [cards[2]["id"].clone()], "{out}");
    let out = env
        .cairn_in(&repo, &["--json", "recall", "--include-hold", "design"])
        .code(0)
        .data();
    assert!(ids(&out).contains(&cards[0]["id"]), "{out}");
    let brief = env.cairn_in(&repo, &["brief"]).code(0);
    assert!(!brief.stdout.contains("say hello"), "{}", brief.stdout);
}

/// Issue 10, point 17: a card stored `"turn": 4` and every output showed `#5`.
#[test]
fn a_card_shows_the_turn_number_it_stores() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let cards = card_lines(&repo);
    assert_eq!(cards[0]["turn"], 1);
    assert_eq!(cards[1]["turn"], 2);
    for card in &cards {
        let shown = format!(
            "claude/5f0c7a1e-3b1d-4c8e-9f00-00000000a001#{}",
            card["turn"]
        );
        let words = card["prompt"].as_str().unwrap();
        let found = env
            .cairn_in(&repo, &["--json", "search", "--kind", "card", words])
            .code(0)
            .data();
        let hit = found["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == card["id"])
            .unwrap_or_else(|| panic!("{found}"));
        assert_eq!(hit["source"], shown.as_str(), "search");
        let explained = env
            .cairn_in(&repo, &["recall", "--explain", "--kind", "card", words])
            .code(0);
        assert!(
            explained.stdout.contains(&format!("### turn {shown} ")),
            "recall heads: {}",
            explained.stdout
        );
        assert!(
            explained.stdout.contains(&format!("{shown}, completed")),
            "explain: {}",
            explained.stdout
        );
    }
}

/// Issue 10, point 23: `sessions ingest DIR` walked into the knowledge repository itself and
/// warned about its own files; a file that is not a transcript was counted as ingested.
#[test]
fn ingest_of_a_folder_skips_the_repository_and_reports_what_is_not_a_transcript() {
    let (env, repo) = Env::repo();
    let t = write(env.path(), "t/pnpm.jsonl", &pnpm_session());
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    env.cairn_in(&repo, &["observe", "--all"]).code(0);
    env.cairn_in(&repo, &["slog", "deploy", "shop", "released 1.2"])
        .code(0);
    let notes = write(
        env.path(),
        "t/notes.jsonl",
        "{\"note\":\"not a transcript\"}\n",
    );
    write(&env.path().join("t/.git"), "x.jsonl", "{}\n");
    // The folder holds the repository (its vault and slog are JSON Lines too).
    let out = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", env.path().to_str().unwrap()],
        )
        .code(0);
    let data = out.data();
    assert_eq!(
        data["transcripts"], 2,
        "only t/pnpm.jsonl and t/notes.jsonl: {data}"
    );
    assert_eq!(data["skipped"].as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data["skipped"][0]["file"], notes.to_str().unwrap());
    assert!(!out.stderr.contains("vault"), "{}", out.stderr);
    assert!(!out.stderr.contains("slog/"), "{}", out.stderr);
    let human = env
        .cairn_in(&repo, &["sessions", "ingest", env.path().to_str().unwrap()])
        .code(0);
    assert!(
        human.stdout.contains("1 skipped") && !human.stdout.contains("ingested 2"),
        "{}",
        human.stdout
    );
    // Named on the command line, a file with nothing readable in it is an error.
    env.cairn_in(&repo, &["sessions", "ingest", notes.to_str().unwrap()])
        .code(2)
        .stderr_has("notes.jsonl: skipped: not a transcript");
    // Started inside the repository, the search skips its own records: nothing to ingest.
    env.cairn_in(&repo, &["sessions", "ingest", "."])
        .code(2)
        .stderr_has("no transcripts to ingest");
    let garbage = write(env.path(), "u/garbage.jsonl", "{not json\nnor this\n");
    env.cairn_in(
        &repo,
        &[
            "sessions",
            "ingest",
            "--agent",
            "claude",
            garbage.to_str().unwrap(),
        ],
    )
    .code(2)
    .stderr_has("garbage.jsonl: skipped: nothing readable");
}

/// Issue 10, point 24: "1 transcripts", "1 sessions" in what ingest and observe print.
#[test]
fn one_of_a_thing_is_counted_in_the_singular() {
    let (env, repo) = Env::repo();
    let t = write(
        env.path(),
        "t/one.jsonl",
        &claude_transcript(
            "5f0c7a1e-3b1d-4c8e-9f00-00000000c003",
            &[(
                "never commit generated files to the repository",
                vec![],
                "Understood: generated files stay out of commits.",
            )],
        ),
    );
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0)
        .stdout_has("ingested 1 transcript: 1 new turn card, 0 episodes; commit");
    env.cairn_in(&repo, &["observe", "--all"])
        .code(0)
        .stdout_has("observed 1 turn of 1 session (builtin): 1 fact, 1 allowed");
    let subject = env.git(&repo, &["log", "-2", "--format=%s"]);
    assert!(
        subject.contains("observe: 1 observation from 1 turn")
            && subject.contains("sessions: ingest 1 turn, 0 episodes from 1 transcript"),
        "{subject}"
    );
}

/// Every fixture's session file, ingested streamed (turns rendered as they close, the
/// comparison and the commit a line or a block at a time), holds exactly what rendering the
/// whole transcript read at once holds; the commit is the file, and git finds it sound.
#[test]
fn streamed_ingest_writes_what_a_whole_read_renders_and_commits_it_streamed() {
    let (env, repo) = Env::repo();
    let dir = fixtures().join("sessions");
    let mut cmd = env.command(BIN, &repo);
    // Every file goes to git streamed, as a big session's does.
    cmd.env("CAIRN_STREAMED_BLOB_BYTES", "1")
        .args(["--json", "sessions", "ingest"])
        .arg(&dir);
    Run::from(cmd.output().unwrap()).code(0);
    let redactor = cairn::redact::Redactor::configured(&[]).unwrap();
    let mut checked = 0;
    let mut todo = vec![dir.clone()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let t = cairn::sessions::parse(&bytes, None, &stem).unwrap();
            let mtime = chrono::DateTime::<chrono::Utc>::from(
                std::fs::metadata(&path).unwrap().modified().unwrap(),
            );
            let want: String = cairn::cards::records(&t, &redactor, &cairn::time::format(mtime))
                .iter()
                .map(|r| cairn::cards::line(r) + "\n")
                .collect();
            let rel = cairn::cards::file_of(t.agent, &t.session);
            let got = std::fs::read_to_string(repo.join(&rel)).unwrap();
            assert_eq!(got, want, "{rel}");
            assert_eq!(env.git(&repo, &["show", &format!("HEAD:{rel}")]), got);
            checked += 1;
        }
    }
    assert_eq!(checked, 9);
    env.git(&repo, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(git_status(&env, &repo), "");
}

/// A session id and a time first given after the first turn: the streamed ingest makes the
/// cards again with them, so every card names the session and the untimed first turn takes the
/// transcript's earliest time, as a whole read does.
#[test]
fn a_session_named_and_timed_only_after_its_first_turn_is_rendered_with_both() {
    let (env, repo) = Env::repo();
    let whole = claude_transcript(
        "late-named",
        &[
            ("first, with no id and no time", vec![], "Fine."),
            ("second, the real thing", vec![], "Done it."),
        ],
    );
    // Its first line loses the session id and the time; the lines after keep theirs.
    let mut lines: Vec<Value> = whole
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = lines[0].as_object_mut().unwrap();
    first.remove("sessionId");
    first.remove("timestamp");
    let text: String = lines.iter().map(|v| v.to_string() + "\n").collect();
    let home = env.home();
    let file = write(&home, "t/transcript-file-name.jsonl", &text);
    env.cairn_in(
        &repo,
        &["--json", "sessions", "ingest", file.to_str().unwrap()],
    )
    .code(0);
    let cards = jsonl_lines(&repo.join("vault/sessions/claude"));
    assert_eq!(cards.len(), 2, "{cards:?}");
    assert!(
        cards.iter().all(|c| c["session"] == "late-named"),
        "{cards:?}"
    );
    // The untimed first turn takes the earliest time of the transcript: the second's start.
    assert_eq!(cards[0]["ts"], cards[1]["ts"]);
    assert!(
        !repo
            .join("vault/sessions/claude/transcript-file-name.jsonl")
            .exists()
    );
    // As a whole read renders it.
    let t = cairn::sessions::parse(text.as_bytes(), None, "transcript-file-name").unwrap();
    let redactor = cairn::redact::Redactor::configured(&[]).unwrap();
    let want: Vec<Value> = cairn::cards::records(&t, &redactor, "2000-01-01T00:00:00.000Z")
        .iter()
        .map(|r| serde_json::from_str(&cairn::cards::line(r)).unwrap())
        .collect();
    assert_eq!(cards, want);
}

#[test]
fn a_resumed_claude_code_session_never_changes_the_cards_it_had() {
    // Issue 31: `claude -p`, then `claude -p --resume SID`, then `--resume SID /compact`
    // rewrote turn 1's and turn 2's cards (their durations grew by the time to the next run).
    // The fixture is the real Claude Code's transcript after each of the three runs.
    // The fixture is the real Claude Code's transcript; resumed.runs.json says where each of
    // the three runs ended in it (Claude Code only appends).
    let (env, repo) = Env::repo();
    let whole = std::fs::read(fixtures().join("sessions/claude/resumed.jsonl")).unwrap();
    let runs: Vec<usize> =
        serde_json::from_str(&read(&fixtures(), "sessions/claude/resumed.runs.json")).unwrap();
    let session = write(env.path(), "t/session.jsonl", "");
    let mut before = String::new();
    for (state, (end, cards)) in (1..).zip(runs.into_iter().zip([1, 2, 3])) {
        std::fs::write(&session, &whole[..end]).unwrap();
        let data = env
            .cairn_in(
                &repo,
                &["--json", "sessions", "ingest", session.to_str().unwrap()],
            )
            .code(0)
            .data();
        assert_eq!(data["rewritten"], 0, "state {state}: {data}");
        let file = std::fs::read_dir(repo.join("vault/sessions/claude"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let now = std::fs::read_to_string(&file).unwrap();
        assert!(
            now.starts_with(&before),
            "state {state}: an earlier card changed\nbefore:\n{before}\nnow:\n{now}"
        );
        let kept: Vec<Value> = now
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let n = kept.iter().filter(|r| r["type"] == "card").count();
        assert_eq!(n, cards, "state {state}: {now}");
        before = now;
    }
}
