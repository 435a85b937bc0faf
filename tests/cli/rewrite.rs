//! The query rewrite of `cairn recall`, end to end: the real binary against local mock chat
//! servers that answer with a rewrite, give the query back, answer slowly, fail, or are gone.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// The key the OpenAI-format mock expects; it must never be printed or stored.
const KEY: &str = "sk-test-rewrite-4f9c2a7be1d04c3a";
const KEY_VAR: &str = "CAIRN_TEST_REWRITE_KEY";

/// `[llm]` pointed at `base_url` with `provider`, the key variable for openai, and the
/// rewrite budget `timeout_ms`.
fn configure(repo: &Path, provider: &str, base_url: &str, timeout_ms: u64) {
    let key_env = if provider == "openai" { KEY_VAR } else { "" };
    let toml = read(repo, "cairn.toml").replacen(
        "provider = \"\"\nbase_url = \"\"\nmodel = \"\"\n# Name of the environment variable that \
         holds the API key (never the key itself).\napi_key_env = \"\"\ntimeout_secs = 30\n\
         rewrite_timeout_ms = 2000",
        &format!(
            "provider = \"{provider}\"\nbase_url = \"{base_url}\"\nmodel = \"test-model\"\n\
             api_key_env = \"{key_env}\"\ntimeout_secs = 30\nrewrite_timeout_ms = {timeout_ms}"
        ),
        1,
    );
    assert!(
        toml.contains(&format!("provider = \"{provider}\"")),
        "{toml}"
    );
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
}

/// A chat mock in `provider`'s real reply shape, answering `reply(user message)`; the user
/// messages it was sent go to `seen`.
fn chat(
    server: &mut mockito::Server,
    provider: &str,
    reply: impl Fn(&str) -> String + Send + Sync + 'static,
    seen: Arc<Mutex<Vec<Value>>>,
) -> mockito::Mock {
    let (path, openai) = match provider {
        "openai" => ("/v1/chat/completions", true),
        _ => ("/api/chat", false),
    };
    let mut mock = server.mock("POST", path);
    if openai {
        mock = mock.match_header("authorization", format!("Bearer {KEY}").as_str());
    }
    mock.with_status(200)
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let body: Value = serde_json::from_slice(req.body().unwrap()).unwrap();
            let user = body["messages"][1]["content"].as_str().unwrap().to_string();
            let text = reply(&user);
            seen.lock().unwrap().push(body);
            let out = if openai {
                json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764590000,
                    "model": "test-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 180, "completion_tokens": 12, "total_tokens": 192}
                })
            } else {
                json!({
                    "model": "test-model", "created_at": "2026-12-01T12:00:00Z",
                    "message": {"role": "assistant", "content": text},
                    "done_reason": "stop", "done": true,
                    "prompt_eval_count": 180, "eval_count": 12
                })
            };
            serde_json::to_vec(&out).unwrap()
        })
        .create()
}

/// The query the prompt carried (`Query: …`).
fn asked(user: &str) -> &str {
    user.strip_prefix("Query: ").unwrap()
}

/// A repository holding two observations: one about point-in-time recovery that never says
/// "PITR", and one about NFS.
fn repo() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    for text in [
        "restore the database to a point in time with pg_basebackup and WAL replay",
        "stale NFS handles need root to unmount",
    ] {
        env.cairn_in(&repo, &["remember", text]).code(0);
    }
    (env, repo)
}

fn run(env: &Env, repo: &Path, args: &[&str]) -> Run {
    let mut cmd = env.command(BIN, repo);
    cmd.env(KEY_VAR, KEY).args(args);
    Run::from(cmd.output().expect("run cairn"))
}

/// The telemetry events of `component` / `action`.
fn events(repo: &Path, action: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo.join(".cairn/telemetry.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["component"] == "recall" && e["action"] == action)
        .collect()
}

fn texts(data: &Value) -> Vec<String> {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect()
}

/// Nothing the run printed or stored holds the key.
fn key_not_shown(repo: &Path, out: &Run) {
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    let telemetry = std::fs::read_to_string(repo.join(".cairn/telemetry.jsonl")).unwrap();
    assert!(!telemetry.contains(KEY));
}

#[test]
fn a_rewrite_with_the_name_a_record_uses_finds_what_the_query_alone_does_not() {
    let (env, repo) = repo();
    // Without a provider "PITR" finds nothing: no shared word, nothing close by meaning.
    run(
        &env,
        &repo,
        &["--json", "recall", "--profile", "balanced", "PITR"],
    )
    .code(1);
    let mut server = mockito::Server::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mock = chat(
        &mut server,
        "openai",
        |user| {
            format!(
                "<query>{} point-in-time recovery database restore</query>",
                asked(user)
            )
        },
        seen.clone(),
    );
    configure(&repo, "openai", &server.url(), 2000);
    let out = run(
        &env,
        &repo,
        &["--json", "recall", "--profile", "balanced", "PITR"],
    )
    .code(0);
    mock.assert();
    let data = out.data();
    assert_eq!(data["query"], "PITR");
    let rewrite = &data["rewrite"];
    assert_eq!(rewrite["status"], "used", "{data}");
    assert_eq!(rewrite["used"], true);
    assert_eq!(
        rewrite["query"],
        "PITR point-in-time recovery database restore"
    );
    let found = texts(&data);
    assert_eq!(found.len(), 1, "{data}");
    assert!(found[0].contains("pg_basebackup"), "{data}");
    let ranks = &data["results"][0]["rewrite"];
    assert_eq!(ranks["original"], Value::Null, "{data}");
    assert_eq!(ranks["rewritten"], 1, "{data}");
    // The prompt: a system message asking for the tagged form, the query as the user's.
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["temperature"], 0.0);
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("between <query> and </query>")
    );
    assert_eq!(sent["messages"][1]["content"], "Query: PITR");
    let event = &events(&repo, "rewrite")[0];
    assert_eq!(event["success"], true);
    let meta = &event["metadata"];
    assert_eq!(meta["status"], "used");
    assert_eq!(meta["timeout"], false);
    assert_eq!(meta["provider"], "openai");
    assert_eq!(meta["tokens_in"], 180);
    // The rewrite is a query: kept as its length unless `[telemetry] queries = true`.
    assert_eq!(meta["rewritten"]["words"], 5, "{meta}");
    assert!(meta["rewritten"].get("text").is_none(), "{meta}");
    key_not_shown(&repo, &out);
    // --explain says what the query became and where each result ranked for each query.
    let out = run(
        &env,
        &repo,
        &[
            "recall",
            "--profile",
            "balanced",
            "--explain",
            "--format",
            "text",
            "PITR",
        ],
    )
    .code(0);
    assert!(
        out.stdout.starts_with(
            "query rewritten by the LLM to \"PITR point-in-time recovery database restore\", \
             fused by rank with the query as written\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("query -, rewrite #1 → rank-fused"),
        "{}",
        out.stdout
    );
    key_not_shown(&repo, &out);
}

#[test]
fn both_queries_results_are_fused_and_agreement_ranks_first() {
    let (env, repo) = repo();
    env.cairn_in(
        &repo,
        &[
            "remember",
            "the NFS server exports /srv/share to the build hosts",
        ],
    )
    .code(0);
    let mut server = mockito::Server::new();
    let _mock = chat(
        &mut server,
        "ollama",
        |_| "<query>NFS unmount root network filesystem</query>".into(),
        Arc::default(),
    );
    configure(&repo, "ollama", &server.url(), 2000);
    let args = [
        "--json",
        "recall",
        "--profile",
        "deep",
        "stale",
        "NFS",
        "exports",
    ];
    let data = run(&env, &repo, &args).code(0).data();
    assert_eq!(data["rewrite"]["status"], "used", "{data}");
    let results = data["results"].as_array().unwrap();
    // Each result says where it ranked for each query; the order follows the fused score.
    let fused: Vec<f64> = results
        .iter()
        .map(|r| r["rewrite"]["fused"].as_f64().unwrap())
        .collect();
    assert!(fused.windows(2).all(|w| w[0] >= w[1]), "{data}");
    let both = results
        .iter()
        .find(|r| r["text"].as_str().unwrap().contains("stale NFS handles"))
        .unwrap();
    assert!(both["rewrite"]["original"].is_number(), "{data}");
    assert!(both["rewrite"]["rewritten"].is_number(), "{data}");
    // Without the rewrite: the original's ranking alone, no rank fusion.
    let plain = run(&env, &repo, &[&args[..], &["--no-rewrite"]].concat())
        .code(0)
        .data();
    assert_eq!(plain["rewrite"]["status"], "off");
    assert_eq!(plain["rewrite"]["reason"], "--no-rewrite");
    assert!(plain["results"][0].get("rewrite").is_none(), "{plain}");
}

#[test]
fn a_rewrite_that_gives_the_query_back_changes_nothing() {
    let (env, repo) = repo();
    env.cairn_in(
        &repo,
        &[
            "remember",
            "the NFS server exports /srv/share to the build hosts",
        ],
    )
    .code(0);
    let args = [
        "--json",
        "recall",
        "--now",
        "2026-12-31",
        "--profile",
        "balanced",
        "stale",
        "NFS",
        "handles",
    ];
    let before = run(&env, &repo, &args).code(0).data();
    assert_eq!(before["results"].as_array().unwrap().len(), 2, "{before}");
    let mut server = mockito::Server::new();
    let mock = chat(
        &mut server,
        "ollama",
        // The same words, in another case and spacing.
        |user| format!("<query> {} </query>", asked(user).to_uppercase()),
        Arc::default(),
    );
    configure(&repo, "ollama", &server.url(), 2000);
    let after = run(&env, &repo, &args).code(0).data();
    mock.assert();
    assert_eq!(after["rewrite"]["status"], "same", "{after}");
    assert_eq!(after["rewrite"]["used"], false);
    assert_eq!(
        after["results"], before["results"],
        "the same results, scores and all"
    );
}

#[test]
fn a_slow_provider_is_cut_off_at_rewrite_timeout_ms_and_recall_goes_on() {
    let (env, repo) = repo();
    let mut server = mockito::Server::new();
    let delay = Duration::from_secs(4);
    let mock = server
        .mock("POST", "/api/chat")
        // A reply that trickles in for 4 s (a sleep would hold mockito's one server thread;
        // writing stops when the client hangs up).
        .with_chunked_body(move |w| {
            let started = Instant::now();
            while started.elapsed() < delay {
                std::thread::sleep(Duration::from_millis(20));
                w.write_all(b" ")?;
            }
            w.write_all(br#"{"model":"m","message":{"role":"assistant","content":"<query>x</query>"},"done":true}"#)
        })
        .expect_at_least(1)
        .create();
    configure(&repo, "ollama", &server.url(), 300);
    let started = Instant::now();
    let out = run(
        &env,
        &repo,
        &[
            "--json",
            "recall",
            "--profile",
            "balanced",
            "stale",
            "NFS",
            "handles",
        ],
    )
    .code(0);
    // Not a speed measurement: the deadline holds, so the run ends long before the reply would.
    assert!(started.elapsed() < delay, "{:?}", started.elapsed());
    mock.assert();
    let data = out.data();
    assert_eq!(data["rewrite"]["status"], "timeout", "{data}");
    assert_eq!(data["rewrite"]["timeout_ms"], 300);
    assert!(
        data["rewrite"]["duration_ms"].as_u64().unwrap() < 2000,
        "{data}"
    );
    assert!(texts(&data)[0].contains("stale NFS handles"), "{data}");
    assert!(
        out.stderr.contains("query rewrite timed out after 300 ms"),
        "{}",
        out.stderr
    );
    let event = &events(&repo, "rewrite")[0];
    assert_eq!(event["success"], false);
    assert_eq!(event["metadata"]["timeout"], true, "{event}");
    assert_eq!(event["metadata"]["status"], "timeout");
    assert!(event["duration_ms"].as_u64().unwrap() < 2000, "{event}");
}

#[test]
fn a_failing_or_absent_provider_or_a_reply_out_of_form_falls_back_to_the_query() {
    let args = [
        "--json",
        "recall",
        "--profile",
        "balanced",
        "stale",
        "NFS",
        "handles",
    ];
    let (env, repo) = repo();
    let want = texts(&run(&env, &repo, &args).code(0).data());
    let check = |repo: &Path, out: Run, reason: &str| {
        let data = out.data();
        assert_eq!(data["rewrite"]["status"], "failed", "{data}");
        let why = data["rewrite"]["reason"].as_str().unwrap();
        assert!(why.contains(reason), "{why}");
        assert_eq!(
            texts(&data),
            want,
            "the original's results, as without a rewrite"
        );
        assert!(
            out.stderr.contains("query rewrite failed ("),
            "{}",
            out.stderr
        );
        key_not_shown(repo, &out);
        let last = events(repo, "rewrite").pop().unwrap();
        assert_eq!(last["success"], false);
        assert_eq!(last["metadata"]["timeout"], false);
        last
    };

    // HTTP 500, retried within the budget, then given up.
    let mut server = mockito::Server::new();
    let mock = server
        .mock("POST", "/v1/chat/completions")
        .with_status(500)
        .with_body(r#"{"error":{"message":"The server had an error","type":"server_error"}}"#)
        .expect_at_least(1)
        .create();
    configure(&repo, "openai", &server.url(), 2000);
    let event = check(&repo, run(&env, &repo, &args).code(0), "answered HTTP 500");
    assert_eq!(event["metadata"]["http_status"], 500);
    mock.assert();

    // A reply that is not one <query>…</query>.
    let mut server = mockito::Server::new();
    let _mock = chat(
        &mut server,
        "openai",
        |_| "Sure! A better query would be: NFS handles".into(),
        Arc::default(),
    );
    let toml = read(&repo, "cairn.toml");
    let old = toml
        .split("base_url = \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    std::fs::write(
        repo.join("cairn.toml"),
        toml.replacen(old, &server.url(), 1),
    )
    .unwrap();
    check(&repo, run(&env, &repo, &args).code(0), "not one <query>");

    // A port nothing listens on (mockito reuses dropped servers: bind one and close it).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (env, repo) = self::repo();
    configure(&repo, "ollama", &dead, 2000);
    check(&repo, run(&env, &repo, &args).code(0), "could not connect");

    // A key variable named but not set: the rewrite fails, the recall does not.
    let (env, repo) = self::repo();
    configure(&repo, "openai", "http://127.0.0.1:9", 2000);
    let out = env.cairn_in(&repo, &args).code(0);
    check(
        &repo,
        out,
        "CAIRN_TEST_REWRITE_KEY (named by api_key_env) is not set",
    );
}

#[test]
fn lean_no_rewrite_search_and_brief_make_no_call() {
    let (env, repo) = repo();
    let mut server = mockito::Server::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _mock = chat(
        &mut server,
        "ollama",
        |_| "<query>never asked</query>".into(),
        seen.clone(),
    );
    configure(&repo, "ollama", &server.url(), 2000);
    let lean = run(
        &env,
        &repo,
        &["--json", "recall", "--profile", "lean", "NFS", "handles"],
    )
    .code(0)
    .data();
    assert_eq!(lean["rewrite"]["status"], "off");
    assert_eq!(lean["rewrite"]["reason"], "profile lean does not rewrite");
    // auto gives a short query from an agent the lean budget.
    let auto = run(&env, &repo, &["--json", "recall", "NFS"])
        .code(0)
        .data();
    assert_eq!(auto["profile"], "lean");
    assert_eq!(auto["rewrite"]["status"], "off");
    let off = run(
        &env,
        &repo,
        &[
            "--json",
            "recall",
            "--profile",
            "deep",
            "--no-rewrite",
            "NFS",
        ],
    )
    .code(0)
    .data();
    assert_eq!(off["rewrite"]["reason"], "--no-rewrite");
    run(&env, &repo, &["--json", "search", "NFS", "handles"]).code(0);
    run(&env, &repo, &["--json", "brief"]).code(0);
    // A profile that turns it off in cairn.toml.
    let toml = read(&repo, "cairn.toml").replace(
        "[profiles.balanced]\nlimit = 7\nrewrite = true",
        "[profiles.balanced]\nlimit = 7\nrewrite = false",
    );
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    let data = run(
        &env,
        &repo,
        &["--json", "recall", "--profile", "balanced", "NFS"],
    )
    .code(0)
    .data();
    assert_eq!(
        data["rewrite"]["reason"],
        "profile balanced does not rewrite"
    );
    assert!(events(&repo, "rewrite").is_empty());
    assert!(seen.lock().unwrap().is_empty(), "no chat call was made");
}

#[test]
fn eval_with_a_rewrite_that_gives_each_question_back_scores_as_without_one() {
    let (env, repo) = Env::repo();
    let file = locomo_file(env.path());
    let file = file.to_str().unwrap();
    let plain = run(&env, &repo, &["--json", "eval", "locomo", file])
        .code(0)
        .data();
    assert_eq!(plain["questions"], 4);
    assert_eq!(plain["rewrite"], Value::Null);
    // A profile that rewrites needs a provider.
    run(
        &env,
        &repo,
        &["eval", "locomo", file, "--profile", "balanced"],
    )
    .code(2)
    .stderr_has("names no provider");

    let mut server = mockito::Server::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _mock = chat(
        &mut server,
        "ollama",
        |user| format!("<query>{}</query>", asked(user)),
        seen.clone(),
    );
    configure(&repo, "ollama", &server.url(), 2000);
    let args = ["--json", "eval", "locomo", file, "--profile", "balanced"];
    let same = run(&env, &repo, &args).code(0).data();
    assert_eq!(seen.lock().unwrap().len(), 4, "one rewrite per question");
    assert_eq!(same["rewrite"]["same"], 4, "{same}");
    assert_eq!(same["rewrite"]["used"], 0);
    // Against the same questions without the rewrite on the same indexes (a separate run
    // builds fresh indexes, which may order equal scores otherwise).
    assert_eq!(
        same["baseline"], same["results"],
        "every figure, at every k"
    );
    assert_eq!(plain["baseline"], Value::Null);
    // lean does not rewrite: no call.
    let lean = run(
        &env,
        &repo,
        &["--json", "eval", "locomo", file, "--profile", "lean"],
    )
    .code(0)
    .data();
    assert_eq!(lean["rewrite"], Value::Null);
    assert_eq!(seen.lock().unwrap().len(), 4);

    // A rewrite that names things: each question's rewrite is searched and fused.
    let mut server = mockito::Server::new();
    let _mock = chat(
        &mut server,
        "ollama",
        |user| {
            format!(
                "<query>{} point-in-time recovery restore database</query>",
                asked(user)
            )
        },
        Arc::default(),
    );
    let toml = read(&repo, "cairn.toml");
    let old = toml
        .split("base_url = \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    std::fs::write(
        repo.join("cairn.toml"),
        toml.replacen(old, &server.url(), 1),
    )
    .unwrap();
    let used = run(&env, &repo, &args).code(0);
    assert_eq!(used.data()["rewrite"]["used"], 4, "{}", used.stdout);
    let human = run(&env, &repo, &args[1..]).code(0).stdout;
    assert!(
        human.contains(
            "rewrite by ollama test-model (balanced): 4 used, 0 same, 0 timed out, 0 failed"
        ),
        "{human}"
    );
}
