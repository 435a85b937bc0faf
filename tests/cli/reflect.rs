//! `cairn reflect`: observations become proposals (and proposal refs), end to end.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::*;

const NOW: &str = "2026-12-01T10:00:00Z";
const DAY_FILE: &str = "vault/proposals/2026-12-01.jsonl";

/// Imports observations (JSON objects) as they are (`--raw`: no gate, no dedup by meaning).
fn import(env: &Env, repo: &Path, records: &[Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    let file = env.path().join(format!("import-{}.jsonl", records.len()));
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

fn ob(text: &str, category: &str) -> Value {
    json!({"observation": text, "category_id": category, "write_verdict": "allow",
           "write_confidence": 0.9, "timestamp": "2026-11-30T12:00:00Z", "source": "test"})
}

fn reflect(env: &Env, repo: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "--now", NOW, "reflect"];
    args.extend_from_slice(extra);
    env.cairn_in(repo, &args).code(0).data()
}

fn commits(env: &Env, repo: &Path) -> usize {
    env.git(repo, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

fn ids_of(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn stored(repo: &Path) -> Vec<Value> {
    jsonl_lines(&repo.join("vault/observations"))
        .into_iter()
        .filter(|l| l.get("op").is_none())
        .collect()
}

fn proposal_lines(repo: &Path) -> Vec<Value> {
    if !repo.join("vault/proposals").exists() {
        return Vec::new();
    }
    jsonl_lines(&repo.join("vault/proposals"))
}

fn three(env: &Env, repo: &Path) {
    import(
        env,
        repo,
        &[
            ob(
                "Always run cargo fmt before committing",
                "rules-conventions",
            ),
            ob(
                "Always run cargo fmt before committing code",
                "rules-conventions",
            ),
            ob(
                "The staging database lives on db2.internal behind the VPN",
                "operations",
            ),
        ],
    );
}

#[test]
fn proposals_are_written_with_every_field_then_the_mark_in_one_commit() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let before = commits(&env, &repo);
    let data = reflect(&env, &repo, &[]);
    assert_eq!(data["counts"]["observations"], 3, "{data}");
    assert_eq!(data["counts"]["proposed"], 2, "{data}");
    assert_eq!(commits(&env, &repo), before + 1, "one commit");
    assert_eq!(git_status(&env, &repo), "");
    let lines = proposal_lines(&repo);
    assert_eq!(lines.len(), 3, "two proposals and the mark: {lines:?}");
    for p in &lines[..2] {
        for field in [
            "id",
            "op",
            "section",
            "text",
            "rationale",
            "observations",
            "confidence",
            "reflector",
            "created",
        ] {
            assert!(p.get(field).is_some(), "{field} missing: {p}");
        }
        assert_eq!(p["op"], "add");
        assert_eq!(p["reflector"], "builtin");
        assert_eq!(p["created"], "2026-12-01T10:00:00.000Z");
        assert!(p["id"].as_str().unwrap().starts_with("pr-"));
    }
    let mark = &lines[2];
    assert_eq!(mark["event"], "reflected", "{mark}");
    assert_eq!(mark["observations"], 3);
    assert_eq!(mark["proposed"], 2);
    let message = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with("reflect: 2 proposals from 3 observations"),
        "{message}"
    );
    assert!(message.contains("Cairn-Proposal: pr-"), "{message}");
}

#[test]
fn observations_that_say_the_same_thing_are_one_proposal_citing_all() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let obs = stored(&repo);
    let data = reflect(&env, &repo, &[]);
    let fmt = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["section"] == "Rules and conventions")
        .unwrap_or_else(|| panic!("{data}"))
        .clone();
    let mut cited: Vec<String> = fmt["observations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    cited.sort();
    let mut want = ids_of(&obs[..2]);
    want.sort();
    assert_eq!(cited, want, "{data}");
    assert_eq!(data["counts"]["joined"], 1);
    let ops = data["proposals"].as_array().unwrap();
    let staging = ops.iter().find(|p| p["section"] == "Operations").unwrap();
    assert_eq!(staging["observations"], json!([obs[2]["id"]]));
}

#[test]
fn nothing_memory_md_already_says_is_proposed() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "Rules and conventions",
            "Never deploy on Fridays",
        ],
    )
    .code(0);
    import(
        &env,
        &repo,
        &[
            ob("never deploy on fridays.", "rules-conventions"),
            ob("The release train leaves every Tuesday at noon", "projects"),
        ],
    );
    let data = reflect(&env, &repo, &[]);
    assert_eq!(data["counts"]["said"], 1, "{data}");
    let texts: Vec<&str> = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        vec!["The release train leaves every Tuesday at noon"]
    );
}

#[test]
fn reflecting_again_with_nothing_new_proposes_nothing() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    reflect(&env, &repo, &[]);
    let before = commits(&env, &repo);
    let lines = proposal_lines(&repo).len();
    let data = reflect(&env, &repo, &[]);
    assert_eq!(data["counts"]["observations"], 0, "{data}");
    assert_eq!(data["counts"]["proposed"], 0);
    assert_eq!(commits(&env, &repo), before, "no commit");
    assert_eq!(proposal_lines(&repo).len(), lines, "nothing appended");
    // A new observation is read, and only it.
    import(
        &env,
        &repo,
        &[ob("Backups of the wiki run nightly at 02:00", "operations")],
    );
    let data = reflect(&env, &repo, &[]);
    assert_eq!(data["counts"]["observations"], 1, "{data}");
    assert_eq!(data["counts"]["proposed"], 1);
}

#[test]
fn held_and_weak_observations_are_never_proposed() {
    let (env, repo) = Env::repo();
    let mut held = ob(
        "Maybe the cache should live in redis",
        "system-architecture",
    );
    held["write_verdict"] = json!("hold");
    let mut weak = ob("The build might need more memory on CI", "operations");
    weak["write_confidence"] = json!(0.2);
    import(&env, &repo, &[held, weak]);
    let data = reflect(&env, &repo, &[]);
    assert_eq!(data["counts"]["observations"], 2, "{data}");
    assert_eq!(data["counts"]["not_allowed"], 1);
    assert_eq!(data["counts"]["weak"], 1);
    assert_eq!(data["counts"]["proposed"], 0);
}

/// Appends a reject decision for `id` and commits it, as triage or review would.
fn reject(env: &Env, repo: &Path, id: &str) {
    let line = json!({"event": "decision", "id": id, "decision": "reject", "tier": "human",
                      "reason": "not true", "ts": "2026-12-01T11:00:00.000Z"});
    let path = repo.join(DAY_FILE);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("{line}\n"));
    std::fs::write(&path, text).unwrap();
    env.git(repo, &["add", DAY_FILE]);
    env.git(repo, &["commit", "-qm", "review: reject"]);
}

#[test]
fn a_rejected_proposal_is_not_proposed_again_from_the_same_observations() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let data = reflect(&env, &repo, &[]);
    let rejected = data["proposals"][0]["id"].as_str().unwrap().to_string();
    reject(&env, &repo, &rejected);
    // Read everything again, whatever the mark says.
    let again = reflect(&env, &repo, &["--since", "2026-01-01"]);
    assert_eq!(again["counts"]["observations"], 3, "{again}");
    assert_eq!(again["counts"]["already_cited"], 3, "{again}");
    assert_eq!(again["counts"]["proposed"], 0, "{again}");
    let all = proposal_lines(&repo);
    assert_eq!(
        all.iter()
            .filter(|l| l["id"] == rejected.as_str() && l.get("op").is_some())
            .count(),
        1
    );
    // Its ref went with the decision.
    let refs = env.git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/cairn/proposals/",
        ],
    );
    assert!(!refs.contains(&rejected), "{refs}");
    assert_eq!(refs.lines().count(), 1, "{refs}");
}

#[test]
fn an_over_budget_memory_gets_merge_and_remove_proposals() {
    let (env, repo) = Env::repo();
    for (text, section) in [
        ("The NFS mount needs root to unmount", "Operations"),
        ("The NFS mount needs root to unmount it", "Operations"),
        (
            "Backups run nightly at 02:00 on the storage host",
            "Operations",
        ),
        ("Deploys go through the staging cluster first", "Operations"),
    ] {
        env.cairn_in(&repo, &["memory", "add", "--section", section, text])
            .code(0);
    }
    let memory = read(&repo, "MEMORY.md");
    let budget = memory.chars().count().div_ceil(4) - 20;
    let toml = read(&repo, "cairn.toml")
        .replace("budget_tokens = 3000", &format!("budget_tokens = {budget}"));
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(&repo, &["commit", "-qam", "smaller budget"]);
    let data = reflect(&env, &repo, &[]);
    let ops: Vec<(&str, &str)> = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["op"].as_str().unwrap(), p["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops,
        vec![
            ("merge", "The NFS mount needs root to unmount it"),
            ("remove", "Backups run nightly at 02:00 on the storage host"),
        ],
        "{data}"
    );
    assert_eq!(data["counts"]["by_op"], json!({"merge": 1, "remove": 1}));
    // The merge's ref shows the two entries becoming one.
    let id = data["proposals"][0]["id"].as_str().unwrap();
    let proposed = env.git(
        &repo,
        &["show", &format!("refs/cairn/proposals/{id}:MEMORY.md")],
    );
    let nfs: Vec<&str> = proposed.lines().filter(|l| l.contains("NFS")).collect();
    assert_eq!(
        nfs,
        vec!["- (2026-12-01) The NFS mount needs root to unmount it"],
        "{proposed}"
    );
    assert_eq!(
        proposed.lines().count(),
        memory.lines().count() - 1,
        "only the merged entry's line goes"
    );
    // Reflecting again proposes the same changes no second time.
    let again = reflect(&env, &repo, &[]);
    assert_eq!(again["counts"]["proposed"], 0, "{again}");
}

#[test]
fn each_pending_proposal_is_a_commit_on_its_ref_changing_only_memory_md() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let data = reflect(&env, &repo, &[]);
    let head_after = env.git(&repo, &["rev-parse", "HEAD"]);
    assert_ne!(head, head_after);
    for p in data["proposals"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let r = format!("refs/cairn/proposals/{id}");
        let files = env.git(&repo, &["show", "--format=", "--name-only", &r]);
        assert_eq!(files, "MEMORY.md\n", "{id}");
        let parent = env.git(&repo, &["rev-parse", &format!("{r}^")]);
        assert_eq!(parent, head_after, "its parent is HEAD when proposed");
        let diff = env.git(&repo, &["diff", "HEAD", &r]);
        let added: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect();
        let want = format!("+- (2026-12-01) {}", p["text"].as_str().unwrap());
        assert!(added.contains(&want.as_str()), "{diff}");
        let message = env.git(&repo, &["log", "-1", "--format=%B", &r]);
        assert!(
            message.contains(&format!("Cairn-Proposal: {id}")),
            "{message}"
        );
    }
    let log = env.git(
        &repo,
        &["log", "--oneline", "--glob=refs/cairn/proposals/*"],
    );
    assert!(log.contains("memory: add in Operations"), "{log}");
    assert_eq!(git_status(&env, &repo), "", "the working tree is untouched");
}

#[test]
fn refs_deleted_by_hand_are_rebuilt_from_the_proposals_file() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let data = reflect(&env, &repo, &[]);
    let id = data["proposals"][0]["id"].as_str().unwrap();
    let r = format!("refs/cairn/proposals/{id}");
    let before = env.git(&repo, &["show", &format!("{r}:MEMORY.md")]);
    env.git(&repo, &["update-ref", "-d", &r]);
    let again = reflect(&env, &repo, &[]);
    assert_eq!(again["refs"]["made"], 1, "{again}");
    assert_eq!(env.git(&repo, &["show", &format!("{r}:MEMORY.md")]), before);
}

#[test]
fn no_commit_writes_proposals_but_no_refs() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    env.cairn_in(&repo, &["--now", NOW, "reflect", "--no-commit"])
        .code(0);
    assert!(git_status(&env, &repo).contains("vault/proposals"));
    let refs = env.git(&repo, &["for-each-ref", "refs/cairn/proposals/"]);
    assert_eq!(refs, "");
}

#[test]
fn dry_run_writes_nothing_and_lists_what_it_would_propose() {
    let (env, repo) = Env::repo();
    three(&env, &repo);
    let before = commits(&env, &repo);
    let out = env
        .cairn_in(&repo, &["--now", NOW, "reflect", "--dry-run"])
        .code(0);
    assert!(
        out.stdout.contains("would propose 2 changes"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("add [Operations] The staging database"),
        "{}",
        out.stdout
    );
    assert_eq!(commits(&env, &repo), before);
    assert_eq!(git_status(&env, &repo), "");
    assert!(proposal_lines(&repo).is_empty());
    assert_eq!(env.git(&repo, &["for-each-ref", "refs/cairn/"]), "");
    // The real run proposes the same.
    assert_eq!(reflect(&env, &repo, &[])["counts"]["proposed"], 2);
}

#[test]
fn a_reflect_killed_at_any_point_then_run_again_ends_as_an_uninterrupted_run() {
    let run = |failpoint: Option<&str>| {
        let (env, repo) = Env::repo();
        three(&env, &repo);
        if let Some(point) = failpoint {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", NOW, "reflect"])
                .env("CAIRN_FAILPOINT", point);
            assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
        }
        reflect(&env, &repo, &[]);
        assert_eq!(git_status(&env, &repo), "", "{failpoint:?}");
        // A third run finds nothing new.
        assert_eq!(reflect(&env, &repo, &[])["counts"]["proposed"], 0);
        let refs = env.git(
            &repo,
            &["for-each-ref", "--format=%(refname)", "refs/cairn/"],
        );
        let tree = env.git(&repo, &["ls-tree", "-r", "HEAD", "vault/proposals"]);
        (read(&repo, DAY_FILE), refs, tree)
    };
    let clean = run(None);
    for point in ["reflect-after-append", "reflect-before-refs"] {
        assert_eq!(run(Some(point)), clean, "killed at {point}");
    }
}

#[test]
fn the_fixture_transcripts_become_fewer_proposals_than_observations() {
    let (env, repo) = Env::repo();
    let dir = fixtures().join("sessions");
    env.cairn_in(&repo, &["sessions", "ingest", dir.to_str().unwrap()])
        .code(0);
    env.cairn_in(&repo, &["observe", "--all"]).code(0);
    let obs = stored(&repo);
    let allowed = obs.iter().filter(|o| o["write_verdict"] == "allow").count();
    let data = reflect(&env, &repo, &[]);
    let proposed = data["counts"]["proposed"].as_u64().unwrap() as usize;
    assert!(proposed > 0, "{data}");
    assert!(proposed <= allowed, "{proposed} of {allowed}: {data}");
    let ids: Vec<String> = ids_of(&obs);
    for p in data["proposals"].as_array().unwrap() {
        for cited in p["observations"].as_array().unwrap() {
            assert!(ids.contains(&cited.as_str().unwrap().to_string()), "{p}");
        }
        let section = p["section"].as_str().unwrap();
        assert!(
            [
                "Preferences",
                "Rules and conventions",
                "System architecture",
                "Operations",
                "Memory system",
                "Projects",
                "People and relationships"
            ]
            .contains(&section),
            "{p}"
        );
    }
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn the_llm_reflector_needs_a_provider() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["reflect", "--reflector", "llm"])
        .code(2)
        .stderr_has("[llm] names no provider");
    env.cairn_in(&repo, &["reflect", "--reflector", "magic"])
        .code(2);
}

// The LLM reflector against mock servers with the real reply shapes.

/// The observation ids a prompt names.
fn prompt_ids(prompt: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, _) in prompt.match_indices("ob-") {
        let id = &prompt[i..(i + 19).min(prompt.len())];
        // The system prompt's example id is no observation.
        if id.len() == 19
            && id != "ob-0123456789abcdef"
            && id[3..].chars().all(|c| c.is_ascii_hexdigit())
            && !out.iter().any(|o| o == id)
        {
            out.push(id.to_string());
        }
    }
    out
}

fn reflector_xml(prompt: &str) -> String {
    let sources: String = prompt_ids(prompt)
        .iter()
        .map(|id| format!("<source>{id}</source>"))
        .collect();
    format!(
        "<proposals>\n  <proposal op=\"add\" section=\"Rules and conventions\">\n    <text>Run cargo fmt before every commit; staging is db2.internal.</text>\n    <targets></targets>\n    <rationale>Three observations, one rule.</rationale>\n    <sources>{sources}</sources>\n    <confidence>0.85</confidence>\n  </proposal>\n</proposals>"
    )
}

fn chat_mock(
    server: &mut mockito::Server,
    provider: &str,
    reply: fn(&str) -> String,
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
            let text = reply(&body.to_string());
            let out = match provider.as_str() {
                "openai" => json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": "test-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
                }),
                _ => json!({
                    "id": "msg_01", "type": "message", "role": "assistant", "model": "test-model",
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 1234, "output_tokens": 56}
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
    assert!(toml.contains(&format!("provider = \"{provider}\"")));
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
}

#[test]
fn the_llm_reflector_makes_one_call_through_each_api() {
    for provider in ["openai", "anthropic"] {
        let mut server = mockito::Server::new();
        let mock = chat_mock(&mut server, provider, reflector_xml);
        let (env, repo) = Env::repo();
        configure_llm(&repo, provider, &server.url());
        env.git(&repo, &["commit", "-qam", "llm"]);
        three(&env, &repo);
        let obs = stored(&repo);
        let data = reflect(&env, &repo, &[]);
        mock.expect(1).assert();
        assert_eq!(
            data["counts"]["reflector"], "test-model",
            "{provider}: {data}"
        );
        assert_eq!(data["counts"]["tokens_in"], 1234, "{provider}");
        assert_eq!(data["counts"]["tokens_out"], 56, "{provider}");
        let p = &data["proposals"][0];
        assert_eq!(p["reflector"], "test-model");
        assert_eq!(p["confidence"], 0.85);
        assert_eq!(p["rationale"], "Three observations, one rule.");
        let mut cited: Vec<String> = p["observations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        cited.sort();
        let mut want = ids_of(&obs);
        want.sort();
        assert_eq!(cited, want, "{provider}");
        let stats = env
            .cairn_in(
                &repo,
                &["--json", "stats", "--telemetry", "--component", "reflect"],
            )
            .code(0)
            .data();
        assert_eq!(
            stats["events"][0]["metadata"]["counts"]["tokens_in"], 1234,
            "{provider}: {stats}"
        );
        assert_eq!(git_status(&env, &repo), "");
    }
}

#[test]
fn a_malformed_llm_reply_writes_nothing() {
    fn cut_off(prompt: &str) -> String {
        let xml = reflector_xml(prompt);
        xml[..xml.len() / 2].to_string()
    }
    fn unknown_source(_: &str) -> String {
        reflector_xml("ob-00000000deadbeef")
    }
    for reply in [cut_off as fn(&str) -> String, unknown_source] {
        let mut server = mockito::Server::new();
        let _mock = chat_mock(&mut server, "openai", reply);
        let (env, repo) = Env::repo();
        configure_llm(&repo, "openai", &server.url());
        env.git(&repo, &["commit", "-qam", "llm"]);
        three(&env, &repo);
        let before = commits(&env, &repo);
        let out = env.cairn_in(&repo, &["--now", NOW, "reflect"]).code(2);
        assert!(out.stderr.contains("malformed LLM reply"), "{}", out.stderr);
        assert_eq!(commits(&env, &repo), before);
        assert_eq!(git_status(&env, &repo), "");
        assert!(proposal_lines(&repo).is_empty());
        let stats = env
            .cairn_in(
                &repo,
                &["--json", "stats", "--telemetry", "--component", "reflect"],
            )
            .code(0)
            .data();
        assert_eq!(stats["events"][0]["success"], false, "{stats}");
        assert_eq!(stats["events"][0]["metadata"]["tokens_in"], 1234, "{stats}");
        // The built-in reflector still works, and reads the same observations.
        let data = reflect(&env, &repo, &["--reflector", "builtin"]);
        assert_eq!(data["counts"]["observations"], 3);
    }
}

/// `[reflect] llm_input_tokens` (12,000 by default) to `budget`, committed.
fn llm_budget(env: &Env, repo: &Path, budget: usize) {
    let toml = read(repo, "cairn.toml").replacen(
        "llm_input_tokens = 12000",
        &format!("llm_input_tokens = {budget}"),
        1,
    );
    assert!(toml.contains(&format!("llm_input_tokens = {budget}")));
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(repo, &["commit", "-qam", "llm budget"]);
}

#[test]
fn a_backlog_larger_than_one_call_goes_to_the_llm_in_batches() {
    let mut server = mockito::Server::new();
    let mock = chat_mock(&mut server, "anthropic", reflector_xml);
    let (env, repo) = Env::repo();
    configure_llm(&repo, "anthropic", &server.url());
    env.git(&repo, &["commit", "-qam", "llm"]);
    // Each observation costs about 50 estimated tokens: one per call.
    llm_budget(&env, &repo, 60);
    three(&env, &repo);
    let obs = stored(&repo);
    let data = reflect(&env, &repo, &[]);
    mock.expect(3).assert();
    assert_eq!(data["counts"]["llm_calls"], 3, "{data}");
    assert_eq!(data["counts"]["tokens_in"], 3 * 1234);
    // Every observation was read by one call and is cited by its proposal.
    let mut cited: Vec<String> = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["observations"].as_array().unwrap().clone())
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    cited.sort();
    let mut want = ids_of(&obs);
    want.sort();
    assert_eq!(cited, want);
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn a_bad_reply_to_any_batch_writes_nothing() {
    // The call that reads the staging observation gets a cut reply; the others are good.
    fn cut_for_staging(prompt: &str) -> String {
        let xml = reflector_xml(prompt);
        if prompt.contains("db2.internal behind") {
            xml[..xml.len() / 2].to_string()
        } else {
            xml
        }
    }
    let mut server = mockito::Server::new();
    let mock = chat_mock(&mut server, "openai", cut_for_staging);
    let (env, repo) = Env::repo();
    configure_llm(&repo, "openai", &server.url());
    env.git(&repo, &["commit", "-qam", "llm"]);
    llm_budget(&env, &repo, 60);
    three(&env, &repo);
    let before = commits(&env, &repo);
    env.cairn_in(&repo, &["--now", NOW, "reflect"])
        .code(2)
        .stderr_has("malformed LLM reply (call 3 of 3)");
    mock.expect(3).assert();
    assert_eq!(commits(&env, &repo), before);
    assert_eq!(git_status(&env, &repo), "");
    assert!(proposal_lines(&repo).is_empty());
}

fn reflector_copying_a_secret(prompt: &str) -> String {
    reflector_xml(prompt).replace(
        "staging is db2.internal.",
        "deploy with ghp_6TT0rTBoRiuAz4T0PSdGKVVKyIlBszRddiiG",
    )
}

// The LLM reflector may copy a secret it saw (or make one up): its text and rationale are
// redacted before the proposals file, the proposal refs and the commit hold them.
#[test]
fn a_secret_in_the_llm_reflectors_reply_never_reaches_the_repository() {
    let mut server = mockito::Server::new();
    let mock = chat_mock(&mut server, "openai", reflector_copying_a_secret);
    let (env, repo) = Env::repo();
    configure_llm(&repo, "openai", &server.url());
    env.git(&repo, &["commit", "-qam", "llm"]);
    three(&env, &repo);
    let data = reflect(&env, &repo, &[]);
    mock.expect(1).assert();
    let text = data["proposals"][0]["text"].as_str().unwrap();
    assert!(text.contains("deploy with [REDACTED:"), "{data}");
    let history = env.git(&repo, &["log", "-p", "--all", "--format=%B"]);
    assert!(!history.contains("ghp_6TT0rTBoRiuAz4T0PSdGKVVKyIlBszRddiiG"));
    for line in proposal_lines(&repo) {
        assert!(!line.to_string().contains("ghp_6TT0rTBo"), "{line}");
    }
}

#[test]
fn a_text_saying_all_an_entry_says_and_more_is_proposed_as_its_replace() {
    // Issue 32 item 7: the built-in reflector proposed an `add` of "Never deploy on Fridays;
    // releases are cut on …" beside the entry "Never deploy on Fridays".
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "rules-conventions",
            "Never deploy on Fridays",
        ],
    )
    .code(0);
    import(
        &env,
        &repo,
        &[ob(
            "Never deploy on Fridays; releases are cut on Tuesdays and Thursdays only",
            "rules-conventions",
        )],
    );
    let data = reflect(&env, &repo, &[]);
    let proposals = data["proposals"].as_array().unwrap();
    assert_eq!(proposals.len(), 1, "{data}");
    let p = &proposals[0];
    assert_eq!(p["op"], "replace", "{p}");
    assert_eq!(p["section"], "Rules and conventions");
    assert_eq!(p["targets"], json!(["Never deploy on Fridays"]));
    // Its ref holds MEMORY.md with the entry replaced, not one beside it.
    let id = p["id"].as_str().unwrap();
    let memory = env.git(
        &repo,
        &["show", &format!("refs/cairn/proposals/{id}:MEMORY.md")],
    );
    assert!(
        memory.contains("Never deploy on Fridays; releases are cut on Tuesdays and Thursdays only"),
        "{memory}"
    );
    assert_eq!(
        memory.matches("Never deploy on Fridays").count(),
        1,
        "{memory}"
    );
}

#[test]
fn what_reaches_review_is_a_clean_line_in_its_section_or_nothing() {
    // Issue 32 item 5: noise from real transcripts reached review verbatim (fragments,
    // remarks about the work in progress, dumps with home paths, redaction markers,
    // profanity), and facts landed in the wrong section.
    let (env, repo) = Env::repo();
    import(
        &env,
        &repo,
        &[
            ob("performance is crucial.", "preferences"),
            ob(
                "you havne't read @packages/coding-agent/src/tui/tui-renderer.ts in full i suppose",
                "projects",
            ),
            ob(
                "`cd /Users/badlogic/workspaces/pi-mono && npm run check` failed (exit 1: × expected a semicolon); it passed on a later run",
                "system-architecture",
            ),
            ob(
                "the deploy token is [REDACTED:github-token] for CI",
                "operations",
            ),
            ob(
                "omfg use fucking rgb values in the themes, no rgb indices!",
                "projects",
            ),
            ob("Bo owns the billing service", "system-architecture"),
            ob("CI caches keyed on Cargo.lock", "projects"),
        ],
    );
    let data = reflect(&env, &repo, &[]);
    let mut got: Vec<(String, String, String)> = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["op"].as_str().unwrap().to_string(),
                p["section"].as_str().unwrap().to_string(),
                p["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let want = |op: &str, s: &str, t: &str| (op.to_string(), s.to_string(), t.to_string());
    assert_eq!(
        got,
        vec![
            want("add", "Operations", "CI caches keyed on Cargo.lock"),
            want(
                "add",
                "People and relationships",
                "Bo owns the billing service"
            ),
            want(
                "add",
                "Rules and conventions",
                "Use RGB values in the themes, not RGB indices"
            ),
        ],
        "{data}"
    );
    assert_eq!(data["counts"]["unfit"], 4, "{data}");
}
