//! `cairn triage`: tier 1 rules, tier 2 LLM (against mock servers in the providers' real reply
//! shapes), promotions as commits, dry runs. Proposals are written the way `cairn reflect`
//! writes them: `Proposal` lines (built by `cairn::proposals::Proposal::new`) in
//! `vault/proposals/DAY.jsonl`, committed, each with its `refs/cairn/proposals/<id>`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use cairn::proposals::{Op, Proposal};
use serde_json::{Value, json};

use crate::support::*;

const NOW: &str = "2026-12-01T12:00:00Z";

const MEMORY: &str = "# Memory\n\n<!-- kept by hand -->\n\n## Rules and conventions\n\n\
    - (2026-11-01) Never deploy on Fridays\n\
    - (2026-11-02) Run `cargo fmt` before committing\n\n\
    ## Operations\n\n\
    - (2026-11-03) NFS mounts need root to unmount\n";

fn proposal(op: Op, section: &str, text: &str, targets: &[&str], confidence: f64) -> Proposal {
    Proposal::new(
        op,
        section,
        text,
        targets.iter().map(|t| t.to_string()).collect(),
        "observed in two sessions",
        vec![format!("ob-{}", text.len()), "ob-7f3a".to_string()],
        confidence,
        "builtin",
        "2026-12-01T09:00:00Z".parse().unwrap(),
    )
}

fn add(text: &str, confidence: f64) -> Proposal {
    proposal(Op::Add, "Rules and conventions", text, &[], confidence)
}

/// A repository whose MEMORY.md is `MEMORY`, committed.
fn repo_with_memory() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    std::fs::write(repo.join("MEMORY.md"), MEMORY).unwrap();
    env.git(&repo, &["add", "MEMORY.md"]);
    env.git(&repo, &["commit", "-qm", "memory by hand"]);
    (env, repo)
}

/// Stores `proposals` as reflect does: lines in the day file, committed, one ref each.
fn propose(env: &Env, repo: &Path, proposals: &[Proposal]) {
    let dir = repo.join("vault/proposals");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("2026-12-01.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    for p in proposals {
        text.push_str(&cairn::proposals::line(p));
    }
    std::fs::write(&path, text).unwrap();
    env.git(repo, &["add", "vault/proposals"]);
    env.git(repo, &["commit", "-qm", "reflect: proposals"]);
    let identity = cairn::git::Identity {
        fallback_name: "cairn",
        fallback_email: "cairn@localhost",
    };
    let memory = read(repo, "MEMORY.md");
    for p in proposals {
        let day = "2026-12-01".parse().unwrap();
        let bytes =
            cairn::proposals::apply(&memory, p, None, day).unwrap_or_else(|_| memory.clone());
        cairn::git::set_proposal_ref(repo, &p.id, "MEMORY.md", bytes.as_bytes(), "p", &identity)
            .unwrap();
    }
}

fn triage(env: &Env, repo: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["--json", "--now", NOW, "triage"];
    args.extend_from_slice(extra);
    env.cairn_in(repo, &args)
}

fn commits(env: &Env, repo: &Path) -> u64 {
    env.git(repo, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

fn refs(env: &Env, repo: &Path) -> String {
    env.git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/cairn/proposals/",
        ],
    )
}

/// The decision events written, in order.
fn decisions(repo: &Path) -> Vec<Value> {
    jsonl_lines(&repo.join("vault/proposals"))
        .into_iter()
        .filter(|v| v["event"] == "decision")
        .collect()
}

/// The ruling of `id` in the `--json` output's `tier` list.
fn ruling<'a>(data: &'a Value, tier: &str, id: &str) -> &'a Value {
    data[tier]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {tier} ruling for {id}: {data}"))
}

#[test]
fn a_proposal_citing_a_path_with_high_confidence_is_promoted_in_its_own_commit() {
    let (env, repo) = repo_with_memory();
    let p = add("Release notes live in docs/CHANGES.md", 0.9);
    propose(&env, &repo, std::slice::from_ref(&p));
    let before = commits(&env, &repo);
    let data = triage(&env, &repo, &[]).code(0).data();
    assert_eq!(
        ruling(&data, "auto", &p.id)["decision"],
        "promote",
        "{data}"
    );
    assert_eq!(commits(&env, &repo), before + 1);
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.contains(
            "- (2026-11-02) Run `cargo fmt` before committing\n- (2026-12-01) Release notes live in docs/CHANGES.md\n"
        ),
        "{memory}"
    );
    let message = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with(&format!(
            "memory: promote {} (add to Rules and conventions)\n",
            p.id
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!("Cairn-Proposal: {}\n", p.id)),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "Cairn-Observations: {}\n",
            p.observations.join(", ")
        )),
        "{message}"
    );
    assert!(message.contains("Cairn-Tier: auto\n"), "{message}");
    assert_eq!(refs(&env, &repo), "", "the decided proposal's ref is gone");
    assert_eq!(
        git_status(&env, &repo),
        "",
        "everything written is committed"
    );
    let d = decisions(&repo);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["decision"], "promote");
    assert_eq!(d[0]["tier"], "auto");
    // Triaging again decides nothing new.
    let again = triage(&env, &repo, &[]).code(0).data();
    assert_eq!(again["counts"]["pending"], 0, "{again}");
    assert_eq!(commits(&env, &repo), before + 1);
}

#[test]
fn git_revert_of_a_promotion_restores_memory() {
    let (env, repo) = repo_with_memory();
    propose(
        &env,
        &repo,
        &[add("Deploys go through `make release`, see ADR 7", 0.95)],
    );
    triage(&env, &repo, &[]).code(0);
    assert_ne!(read(&repo, "MEMORY.md"), MEMORY);
    env.git(&repo, &["revert", "--no-edit", "HEAD"]);
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
}

#[test]
fn artifacts_short_texts_duplicates_and_low_confidence_are_rejected_in_one_commit() {
    let (env, repo) = repo_with_memory();
    let artifact = add("Replace the second paragraph with the text above", 0.9);
    let short = add("use tabs", 0.9);
    let duplicate = add("never deploy on fridays.", 0.9);
    let unsure = add("The staging cluster may use `kubectl` 1.29", 0.2);
    let all = [
        artifact.clone(),
        short.clone(),
        duplicate.clone(),
        unsure.clone(),
    ];
    propose(&env, &repo, &all);
    let before = commits(&env, &repo);
    let data = triage(&env, &repo, &[]).code(0).data();
    for (p, reason) in [
        (&artifact, "instruction artifact"),
        (&short, "too short"),
        (
            &duplicate,
            "exact duplicate of the MEMORY.md entry \"Never deploy on Fridays\"",
        ),
        (&unsure, "confidence 0.20 below 0.3"),
    ] {
        let r = ruling(&data, "auto", &p.id);
        assert_eq!(r["decision"], "reject", "{r}");
        assert!(r["reason"].as_str().unwrap().contains(reason), "{r}");
    }
    assert_eq!(data["counts"]["auto"]["reject"], 4, "{data}");
    assert_eq!(
        commits(&env, &repo),
        before + 1,
        "rejections are one commit"
    );
    let message = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(message.starts_with("triage: 4 rejected\n"), "{message}");
    assert!(message.contains("Cairn-Tier: auto\n"), "{message}");
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
    let d = decisions(&repo);
    assert_eq!(d.len(), 4);
    assert!(
        d.iter()
            .all(|e| e["tier"] == "auto" && e["decision"] == "reject")
    );
    assert_eq!(refs(&env, &repo), "");
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn a_text_similar_to_an_entry_is_merged_and_the_entry_kept() {
    let (env, repo) = repo_with_memory();
    let p = add("Never deploy on a Friday", 0.9);
    propose(&env, &repo, std::slice::from_ref(&p));
    let data = triage(&env, &repo, &[]).code(0).data();
    let r = ruling(&data, "auto", &p.id);
    assert_eq!(r["decision"], "merge", "{r}");
    assert_eq!(r["into"], "Never deploy on Fridays", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("\"Never deploy on Fridays\""),
        "{r}"
    );
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY, "the entry's text is kept");
    let d = decisions(&repo);
    assert_eq!(d[0]["decision"], "merge");
    let message = env.git(&repo, &["log", "-1", "--format=%s"]);
    assert_eq!(message.trim(), "triage: 1 merged");
}

#[test]
fn auto_promote_off_leaves_a_promotable_proposal_pending() {
    let (env, repo) = repo_with_memory();
    let toml = read(&repo, "cairn.toml").replace("auto_promote = true", "auto_promote = false");
    assert!(toml.contains("auto_promote = false"));
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(&repo, &["commit", "-qam", "auto_promote off"]);
    let p = add("Release notes live in docs/CHANGES.md", 0.95);
    let junk = add("use tabs", 0.9);
    propose(&env, &repo, &[p.clone(), junk.clone()]);
    let data = triage(&env, &repo, &[]).code(0).data();
    assert_eq!(data["counts"]["auto"]["promote"], 0, "{data}");
    assert_eq!(ruling(&data, "auto", &junk.id)["decision"], "reject");
    assert_eq!(
        ruling(&data, "human", &p.id)["reason"],
        "no rule decides it and [llm] names no provider"
    );
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
    assert!(refs(&env, &repo).contains(&p.id), "its ref stays");
    assert!(!refs(&env, &repo).contains(&junk.id));
}

#[test]
fn dry_run_lists_every_decision_and_writes_nothing() {
    let (env, repo) = repo_with_memory();
    let promote = add("Release notes live in docs/CHANGES.md", 0.9);
    let reject = add("use tabs", 0.9);
    let merge = add("Never deploy on a Friday", 0.9);
    let wait = add("The team prefers small pull requests", 0.6);
    propose(
        &env,
        &repo,
        &[promote.clone(), reject.clone(), merge.clone(), wait.clone()],
    );
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let file = read(&repo, "vault/proposals/2026-12-01.jsonl");
    let refs_before = refs(&env, &repo);
    let data = triage(&env, &repo, &["--dry-run"]).code(0).data();
    assert_eq!(data["dry_run"], true);
    assert_eq!(ruling(&data, "auto", &promote.id)["decision"], "promote");
    assert_eq!(ruling(&data, "auto", &reject.id)["decision"], "reject");
    assert_eq!(ruling(&data, "auto", &merge.id)["decision"], "merge");
    assert!(ruling(&data, "human", &wait.id)["reason"].is_string());
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(read(&repo, "vault/proposals/2026-12-01.jsonl"), file);
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
    assert_eq!(refs(&env, &repo), refs_before);
    assert_eq!(git_status(&env, &repo), "");
    // For people: one line per decision.
    env.cairn_in(&repo, &["--now", NOW, "triage", "--dry-run"])
        .code(0)
        .stdout_has(&format!("auto would promote {}", promote.id))
        .stdout_has(&format!("auto would reject {}", reject.id))
        .stdout_has(&format!("auto would merge {}", merge.id))
        .stdout_has(&format!("human {}", wait.id))
        .stdout_has("dry run, nothing written");
}

#[test]
fn an_uncommitted_hand_edit_of_memory_survives_a_promotion_uncommitted() {
    let (env, repo) = repo_with_memory();
    let p = add("Release notes live in docs/CHANGES.md", 0.9);
    propose(&env, &repo, std::slice::from_ref(&p));
    let edited = MEMORY.replace(
        "- (2026-11-03) NFS mounts need root to unmount\n",
        "- (2026-11-03) NFS mounts need root to unmount\n- (2026-11-30) Backups run at 02:00 UTC\n",
    );
    std::fs::write(repo.join("MEMORY.md"), &edited).unwrap();
    triage(&env, &repo, &[]).code(0);
    let working = read(&repo, "MEMORY.md");
    assert!(working.contains("Backups run at 02:00 UTC"), "{working}");
    assert!(
        working.contains("Release notes live in docs/CHANGES.md"),
        "{working}"
    );
    let head = env.git(&repo, &["show", "HEAD:MEMORY.md"]);
    assert!(
        head.contains("Release notes live in docs/CHANGES.md"),
        "{head}"
    );
    assert!(
        !head.contains("Backups"),
        "the hand edit is not committed: {head}"
    );
    assert_eq!(git_status(&env, &repo), " M MEMORY.md\n");
}

#[test]
fn a_promotion_whose_entry_is_gone_stays_pending() {
    let (env, repo) = repo_with_memory();
    let p = proposal(
        Op::Replace,
        "Rules and conventions",
        "Never deploy on Fridays or weekends (ADR 7)",
        &["Never deploy on Fridays"],
        0.9,
    );
    propose(&env, &repo, std::slice::from_ref(&p));
    let by_hand = MEMORY.replace("- (2026-11-01) Never deploy on Fridays\n", "");
    std::fs::write(repo.join("MEMORY.md"), &by_hand).unwrap();
    env.git(&repo, &["commit", "-qam", "removed by hand"]);
    let before = commits(&env, &repo);
    let out = triage(&env, &repo, &[]).code(0);
    assert!(
        out.stderr.contains("is no longer in MEMORY.md"),
        "{}",
        out.stderr
    );
    let data = out.data();
    assert!(
        ruling(&data, "human", &p.id)["reason"]
            .as_str()
            .unwrap()
            .contains("stays pending"),
        "{data}"
    );
    assert_eq!(commits(&env, &repo), before);
    assert_eq!(read(&repo, "MEMORY.md"), by_hand);
    assert!(decisions(&repo).is_empty());
    assert!(refs(&env, &repo).contains(&p.id));
}

#[test]
fn nothing_pending_is_nothing_to_triage() {
    let (env, repo) = repo_with_memory();
    env.cairn_in(&repo, &["triage"])
        .code(0)
        .stdout_has("nothing to triage");
}

/// A mock of `provider`'s chat API answering `reply(prompt)` in that API's real shape; the
/// prompts it was sent go to `seen`.
fn chat_mock(
    server: &mut mockito::Server,
    provider: &str,
    reply: impl Fn(&str) -> String + Send + Sync + 'static,
    seen: Arc<Mutex<Vec<String>>>,
) -> mockito::Mock {
    let path = match provider {
        "openai" => "/v1/chat/completions",
        _ => "/v1/messages",
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
            seen.lock().unwrap().push(prompt);
            let out = match provider.as_str() {
                "openai" => json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": "test-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1200, "completion_tokens": 150, "total_tokens": 1350}
                }),
                _ => json!({
                    "id": "msg_01", "type": "message", "role": "assistant", "model": "test-model",
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 1200, "output_tokens": 150}
                }),
            };
            serde_json::to_vec(&out).unwrap()
        })
        .create()
}

fn configure_llm(env: &Env, repo: &Path, provider: &str, base_url: &str) {
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
    env.git(repo, &["commit", "-qam", "llm"]);
}

/// Three proposals no rule decides, and one rule rejects.
fn undecided() -> [Proposal; 4] {
    [
        add("The team prefers small pull requests", 0.6),
        add("Someone said the build was slow yesterday", 0.5),
        add("Maybe the cache should be cleared weekly", 0.5),
        add("use tabs", 0.9),
    ]
}

fn llm_reply(ids: [String; 3]) -> impl Fn(&str) -> String + Send + Sync + 'static {
    move |_prompt| {
        format!(
            "<decisions>\n  <decision id=\"{}\" verdict=\"promote\">\n    <text>Keep pull requests small: one change each</text>\n    <reason>a team convention</reason>\n  </decision>\n  <decision id=\"{}\" verdict=\"reject\">\n    <reason>a passing remark, not a rule</reason>\n  </decision>\n  <decision id=\"{}\" verdict=\"needs-review\">\n    <reason>a person should decide</reason>\n  </decision>\n</decisions>",
            ids[0], ids[1], ids[2]
        )
    }
}

#[test]
fn the_llm_decides_what_the_rules_leave_through_each_api() {
    for provider in ["openai", "anthropic"] {
        let mut server = mockito::Server::new();
        let [a, b, c, junk] = undecided();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mock = chat_mock(
            &mut server,
            provider,
            llm_reply([a.id.clone(), b.id.clone(), c.id.clone()]),
            seen.clone(),
        );
        let (env, repo) = repo_with_memory();
        configure_llm(&env, &repo, provider, &server.url());
        propose(
            &env,
            &repo,
            &[a.clone(), b.clone(), c.clone(), junk.clone()],
        );
        let before = commits(&env, &repo);
        let data = triage(&env, &repo, &[]).code(0).data();
        mock.assert();
        let prompts = seen.lock().unwrap().clone();
        assert!(prompts[0].contains(&a.id), "{provider}");
        assert!(
            !prompts[0].contains(&junk.id),
            "{provider}: tier 1 decided it"
        );
        assert!(
            prompts[0].contains("NFS mounts need root"),
            "{provider}: MEMORY.md is sent"
        );
        assert_eq!(ruling(&data, "auto", &junk.id)["decision"], "reject");
        let r = ruling(&data, "llm", &a.id);
        assert_eq!(r["decision"], "promote", "{provider}: {data}");
        assert_eq!(r["text"], "Keep pull requests small: one change each");
        assert_eq!(
            ruling(&data, "llm", &b.id)["reason"],
            "a passing remark, not a rule"
        );
        assert_eq!(ruling(&data, "llm", &c.id)["decision"], "needs-review");
        assert_eq!(data["counts"]["tokens_in"], 1200, "{provider}");
        assert_eq!(data["counts"]["tokens_out"], 150, "{provider}");
        assert_eq!(data["counts"]["llm"]["promote"], 1);
        assert_eq!(data["counts"]["human"], 1);
        let memory = read(&repo, "MEMORY.md");
        assert!(
            memory.contains("- (2026-12-01) Keep pull requests small: one change each\n"),
            "{provider}: {memory}"
        );
        assert!(!memory.contains("The team prefers"), "{provider}");
        // One commit for the promotion, one for the rest.
        assert_eq!(commits(&env, &repo), before + 2, "{provider}");
        let log = env.git(&repo, &["log", "-2", "--format=%B%x00"]);
        assert!(log.contains("Cairn-Tier: llm\n"), "{provider}: {log}");
        assert!(
            log.contains(&format!("memory: promote {} (add to", a.id)),
            "{log}"
        );
        let events = decisions(&repo);
        assert_eq!(events.len(), 4, "{provider}: every decision is an event");
        let promote = events.iter().find(|e| e["id"] == a.id).unwrap();
        assert_eq!(promote["tier"], "llm");
        assert_eq!(promote["text"], "Keep pull requests small: one change each");
        let refs = refs(&env, &repo);
        assert!(
            refs.contains(&c.id),
            "{provider}: the needs-review one keeps its ref"
        );
        assert!(
            !refs.contains(&a.id) && !refs.contains(&b.id),
            "{provider}: {refs}"
        );
        let stats = env
            .cairn_in(
                &repo,
                &["--json", "stats", "--telemetry", "--component", "triage"],
            )
            .code(0)
            .data();
        let meta = &stats["events"][0]["metadata"];
        assert_eq!(meta["tokens_in"], 1200, "{stats}");
        assert_eq!(meta["auto"]["reject"], 1, "{stats}");
        assert_eq!(meta["llm"]["reject"], 1, "{stats}");
        // The one the LLM left for a person is not sent again.
        let again = triage(&env, &repo, &[]).code(0).data();
        assert_eq!(seen.lock().unwrap().len(), 1, "{provider}: one call in all");
        assert_eq!(
            ruling(&again, "human", &c.id)["reason"],
            "left for a person by the llm tier"
        );
    }
}

#[test]
fn a_malformed_llm_reply_writes_nothing() {
    for cut in [true, false] {
        let mut server = mockito::Server::new();
        let [a, b, c, junk] = undecided();
        let whole = llm_reply([a.id.clone(), b.id.clone(), c.id.clone()]);
        let c_id = c.id.clone();
        let reply = move |prompt: &str| {
            let xml = whole(prompt);
            if cut {
                xml[..xml.len() / 2].to_string()
            } else {
                xml.replace(&c_id, "pr-0000000000000000")
            }
        };
        let _mock = chat_mock(
            &mut server,
            "openai",
            reply,
            Arc::new(Mutex::new(Vec::new())),
        );
        let (env, repo) = repo_with_memory();
        configure_llm(&env, &repo, "openai", &server.url());
        propose(
            &env,
            &repo,
            &[a.clone(), b.clone(), c.clone(), junk.clone()],
        );
        let before = commits(&env, &repo);
        let file = read(&repo, "vault/proposals/2026-12-01.jsonl");
        let out = triage(&env, &repo, &[]).code(2);
        assert!(out.stdout.contains("malformed LLM reply"), "{}", out.stdout);
        assert_eq!(commits(&env, &repo), before);
        assert_eq!(read(&repo, "vault/proposals/2026-12-01.jsonl"), file);
        assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
        assert_eq!(git_status(&env, &repo), "");
        let stats = env
            .cairn_in(
                &repo,
                &["--json", "stats", "--telemetry", "--component", "triage"],
            )
            .code(0)
            .data();
        assert_eq!(stats["events"][0]["success"], false, "{stats}");
        let error = stats["events"][0]["metadata"]["error"].as_str().unwrap();
        let want = if cut { "cut off" } else { "not asked about" };
        assert!(error.contains(want), "{error}");
    }
}

#[test]
fn auto_promote_off_leaves_the_llms_promotion_for_a_person() {
    let mut server = mockito::Server::new();
    let [a, b, c, _] = undecided();
    let _mock = chat_mock(
        &mut server,
        "openai",
        llm_reply([a.id.clone(), b.id.clone(), c.id.clone()]),
        Arc::new(Mutex::new(Vec::new())),
    );
    let (env, repo) = repo_with_memory();
    let toml = read(&repo, "cairn.toml").replace("auto_promote = true", "auto_promote = false");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    configure_llm(&env, &repo, "openai", &server.url());
    propose(&env, &repo, &[a.clone(), b.clone(), c.clone()]);
    let data = triage(&env, &repo, &[]).code(0).data();
    let r = ruling(&data, "llm", &a.id);
    assert_eq!(r["decision"], "needs-review", "{data}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("auto_promote is off"),
        "{r}"
    );
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
    assert!(refs(&env, &repo).contains(&a.id));
}

/// The `--json` data of `cairn triage`, pinned: a change of the wire format is a test change.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TriageData {
    dry_run: bool,
    counts: Value,
    auto: Vec<RulingData>,
    llm: Vec<RulingData>,
    human: Vec<LeftData>,
    promoted: Vec<Value>,
    commits: Vec<Value>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RulingData {
    id: String,
    decision: String,
    tier: String,
    reason: String,
    text: Option<String>,
    into: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LeftData {
    id: String,
    reason: String,
}

#[test]
fn the_json_output_lists_decisions_per_tier_with_ids_and_reasons() {
    let (env, repo) = repo_with_memory();
    let promote = add("Release notes live in docs/CHANGES.md", 0.9);
    let merge = add("Never deploy on a Friday", 0.9);
    let wait = add("The team prefers small pull requests", 0.6);
    propose(&env, &repo, &[promote.clone(), merge.clone(), wait.clone()]);
    let data: TriageData = serde_json::from_value(triage(&env, &repo, &[]).code(0).data()).unwrap();
    assert!(!data.dry_run);
    let ids: Vec<&str> = data.auto.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [promote.id.as_str(), merge.id.as_str()]);
    assert!(
        data.auto
            .iter()
            .all(|r| r.tier == "auto" && !r.reason.is_empty())
    );
    assert_eq!(data.human.len(), 1);
    assert_eq!(data.human[0].id, wait.id);
    assert_eq!(data.promoted.len(), 1);
    assert_eq!(data.commits.len(), 2, "the promotion, then the merge");
    assert_eq!(data.counts["auto"]["merge"], 1);
}

/// A triage killed at any step between planning a decision and committing it ends, after the
/// next run, as one uninterrupted run: each decision committed once, with its trailers, and
/// the person's own uncommitted MEMORY.md line in no commit (the journal, ADR 31).
#[test]
fn a_triage_killed_at_any_step_ends_as_an_uninterrupted_one() {
    let promote = add("Release notes live in docs/CHANGES.md", 0.9);
    let reject = add("Prefer small commits when the change allows", 0.1);
    for (case, proposals) in [
        ("a promotion first", vec![promote.clone(), reject.clone()]),
        ("only rejections", vec![reject.clone()]),
    ] {
        let run = |failpoint: Option<&str>| {
            let (env, repo) = repo_with_memory();
            propose(&env, &repo, &proposals);
            let edited = format!("{MEMORY}- (2026-11-04) A note of my own\n");
            std::fs::write(repo.join("MEMORY.md"), &edited).unwrap();
            if let Some(point) = failpoint {
                let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
                cmd.args(["--now", NOW, "triage"])
                    .env("CAIRN_FAILPOINT", point);
                assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
                assert!(repo.join(".cairn/journal.json").exists(), "{point}");
            }
            triage(&env, &repo, &[]).code(0);
            assert!(!repo.join(".cairn/journal.json").exists());
            vec![
                read(&repo, "MEMORY.md"),
                env.git(&repo, &["show", "HEAD:MEMORY.md"]),
                env.git(&repo, &["log", "--format=%B"]),
                read(&repo, "vault/proposals/2026-12-01.jsonl"),
                refs(&env, &repo),
                git_status(&env, &repo),
            ]
        };
        let clean = run(None);
        assert!(
            !clean[1].contains("A note of my own"),
            "{case}: {}",
            clean[1]
        );
        assert!(clean[4].is_empty(), "{case}: every proposal decided");
        for point in [
            "journal-written",
            "journal-first-step",
            "journal-before-commit",
            "journal-before-refs",
        ] {
            assert_eq!(run(Some(point)), clean, "{case}: killed at {point}");
        }
    }
}

/// Regression: the LLM's clean text and reason went into MEMORY.md and the proposals file
/// unredacted, so a secret the LLM copied from a proposal's sources reached the repository.
#[test]
fn a_secret_the_llm_copies_into_a_promotion_never_reaches_the_repository() {
    let token = "ghp_6TT0rTBoRiuAz4T0PSdGKVVKyIlBszRddiiG";
    let mut server = mockito::Server::new();
    let [a, b, c, _] = undecided();
    let reply = move |_: &str| {
        format!(
            "<decisions>\n  <decision id=\"{}\" verdict=\"promote\">\n    <text>Deploy with the token {token}</text>\n    <reason>it worked with {token}</reason>\n  </decision>\n  <decision id=\"{}\" verdict=\"reject\">\n    <reason>old token {token}</reason>\n  </decision>\n  <decision id=\"{}\" verdict=\"needs-review\">\n    <reason>unsure</reason>\n  </decision>\n</decisions>",
            a.id, b.id, c.id
        )
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mock = chat_mock(&mut server, "openai", reply, seen);
    let (env, repo) = repo_with_memory();
    configure_llm(&env, &repo, "openai", &server.url());
    let [a, b, c, _] = undecided();
    propose(&env, &repo, &[a.clone(), b, c]);
    let out = triage(&env, &repo, &[]).code(0);
    mock.assert();
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.contains("Deploy with the token [REDACTED:"),
        "{memory}"
    );
    let everything = env.git(&repo, &["log", "-p", "--all", "--format=%B"]);
    let files = std::fs::read_to_string(repo.join("vault/proposals/2026-12-01.jsonl")).unwrap();
    for (what, text) in [
        ("history", &everything),
        ("proposals", &files),
        ("output", &out.stdout),
    ] {
        assert!(!text.contains(token), "{what} holds the token");
    }
}

#[test]
fn a_proposal_holding_a_secret_marker_or_a_home_path_is_rejected_by_tier_1_naming_the_rule() {
    // Issue 32: "the deploy token is [REDACTED:github-token] for CI" and failed-command dumps
    // with /Users/… paths reached review; tier 1 applies the reflector's own rule to every
    // proposal (an LLM reflector's or a hand-written one too).
    let (env, repo) = repo_with_memory();
    let secret = add("The deploy token is [REDACTED:github-token] for CI", 0.9);
    let home = proposal(
        Op::Add,
        "Operations",
        "`npm run check` fails in /Users/badlogic/workspaces/pi-mono until `npm ci` ran",
        &[],
        0.95,
    );
    let windows = add("Builds read their cache from C:\\Users\\ana\\cache", 0.9);
    let fine = add("The billing service is owned by the payments team", 0.9);
    propose(
        &env,
        &repo,
        &[secret.clone(), home.clone(), windows.clone(), fine.clone()],
    );
    let data = triage(&env, &repo, &[]).code(0).data();
    for (p, rule) in [
        (&secret, "holds a redaction marker"),
        (&home, "holds a local home path"),
        (&windows, "holds a local home path"),
    ] {
        let r = ruling(&data, "auto", &p.id);
        assert_eq!(r["decision"], "reject", "{r}");
        assert!(r["reason"].as_str().unwrap().starts_with(rule), "{r}");
    }
    assert_eq!(data["counts"]["auto"]["reject"], 3, "{data}");
    assert_eq!(read(&repo, "MEMORY.md"), MEMORY);
    assert!(
        refs(&env, &repo).contains(&fine.id),
        "the clean one waits for a person"
    );
}
