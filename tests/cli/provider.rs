//! Embeddings from a provider, end to end: the real binary against a local mock server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::support::*;

/// A fake Ollama `/api/embed`: a 4-dim vector per text by topic, counting the texts it embeds.
fn ollama(server: &mut mockito::Server, texts: Arc<AtomicUsize>) -> mockito::Mock {
    server
        .mock("POST", "/api/embed")
        .with_status(200)
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let body: Value = serde_json::from_slice(req.body().unwrap()).unwrap();
            assert_eq!(body["model"], "test-embed");
            let inputs = body["input"].as_array().unwrap();
            texts.fetch_add(inputs.len(), Ordering::SeqCst);
            let vectors: Vec<Vec<f32>> = inputs
                .iter()
                .map(|t| {
                    let t = t.as_str().unwrap().to_lowercase();
                    if t.contains("nfs") || t.contains("network") {
                        vec![3.0, 0.2, 0.0, 0.0]
                    } else if t.contains("kitten") || t.contains("pet") {
                        vec![0.0, 2.0, 0.1, 0.0]
                    } else {
                        vec![0.0, 0.0, 1.0, 0.5]
                    }
                })
                .collect();
            serde_json::to_vec(&serde_json::json!({ "model": "test-embed", "embeddings": vectors }))
                .unwrap()
        })
        .create()
}

fn configure(repo: &std::path::Path, base_url: &str) {
    let toml = read(repo, "cairn.toml")
        .replace(
            "provider = \"builtin\"\nbase_url = \"\"\nmodel = \"\"",
            &format!("provider = \"ollama\"\nbase_url = \"{base_url}\"\nmodel = \"test-embed\""),
        )
        .replace("timeout_secs = 30\n\n[gate]", "timeout_secs = 1\n\n[gate]");
    assert!(toml.contains("provider = \"ollama\""), "{toml}");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
}

#[test]
fn provider_vectors_are_used_and_cached_by_content() {
    let mut server = mockito::Server::new();
    let texts = Arc::new(AtomicUsize::new(0));
    let _mock = ollama(&mut server, texts.clone());
    let (env, repo) = Env::repo();
    configure(&repo, &server.url());
    env.cairn_in(
        &repo,
        &[
            "remember",
            "--source",
            "a",
            "stale NFS handles need root to unmount",
        ],
    )
    .code(0);
    env.cairn_in(
        &repo,
        &[
            "remember",
            "--source",
            "b",
            "my sister adopted a kitten last weekend",
        ],
    )
    .code(0);
    // A query must share a word with the store to find anything at all (ADR 90): this record
    // holds "filesystem" and is on neither topic, so the NFS record still ranks by meaning.
    env.cairn_in(
        &repo,
        &[
            "remember",
            "--source",
            "c",
            "the build filesystem is full again",
        ],
    )
    .code(0);
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "recall",
                "--mode",
                "vectors",
                "network",
                "filesystem",
            ],
        )
        .code(0)
        .data();
    assert!(
        data["results"][0]["text"].as_str().unwrap().contains("NFS"),
        "{data}"
    );
    assert!(repo.join(".cairn/vectors/ollama_test-embed.bin").is_file());
    let before = texts.load(Ordering::SeqCst);
    // A rebuilt index embeds nothing again: vectors are cached by the text's hash.
    env.cairn_in(&repo, &["index", "--rebuild"]).code(0);
    env.cairn_in(&repo, &["recall", "--mode", "vectors", "kitten"])
        .code(0);
    assert_eq!(
        texts.load(Ordering::SeqCst),
        before + 1,
        "only the query was embedded"
    );
}

#[test]
fn words_still_work_when_the_provider_is_down() {
    // A port nothing listens on: connection refused, retried, then given up.
    let (env, repo) = Env::repo();
    configure(&repo, "http://127.0.0.1:9");
    env.cairn_in(
        &repo,
        &["--json", "import", "observations", "--raw", {
            let f = env.path().join("o.jsonl");
            std::fs::write(
                &f,
                "{\"observation\":\"stale NFS handles need root to unmount\",\"source\":\"a\"}\n",
            )
            .unwrap();
            Box::leak(f.to_str().unwrap().to_string().into_boxed_str())
        }],
    )
    .code(0);
    let out = env
        .cairn_in(&repo, &["--json", "recall", "--mode", "words", "nfs"])
        .code(0);
    assert_eq!(out.data()["results"].as_array().unwrap().len(), 1);
    assert!(out.stderr.contains("vectors not updated"), "{}", out.stderr);
    // No vectors yet: vector recall finds nothing (exit 1) and says why on stderr.
    let out = env
        .cairn_in(&repo, &["--json", "recall", "--mode", "vectors", "nfs"])
        .code(1);
    assert!(
        out.stderr.contains("embeddings provider: ollama"),
        "{}",
        out.stderr
    );
}

#[test]
fn hybrid_recall_degrades_to_words_when_the_provider_stops_answering() {
    let (env, repo) = Env::repo();
    let url;
    {
        let mut server = mockito::Server::new();
        let _mock = ollama(&mut server, Arc::new(AtomicUsize::new(0)));
        configure(&repo, &server.url());
        env.cairn_in(
            &repo,
            &[
                "remember",
                "--source",
                "a",
                "stale NFS handles need root to unmount",
            ],
        )
        .code(0);
        let data = env
            .cairn_in(&repo, &["--json", "recall", "nfs"])
            .code(0)
            .data();
        assert_eq!(data["results"][0]["ranks"]["vectors"], 1, "{data}");
        url = server.url();
    }
    // The server is gone: the query cannot be embedded, but the vectors exist. mockito hands a
    // dropped server to the next test that asks for one, so its address may answer again:
    // point the configuration at a port nothing listens on (the same provider and model).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let toml = read(&repo, "cairn.toml").replace(&url, &dead);
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    assert!(repo.join(".cairn/vectors/ollama_test-embed.bin").is_file());
    let out = env
        .cairn_in(&repo, &["--json", "recall", "nfs", "handles"])
        .code(0);
    let data = out.data();
    assert_eq!(data["mode"], "hybrid");
    assert!(
        data["results"][0]["text"].as_str().unwrap().contains("NFS"),
        "{data}"
    );
    assert!(
        data["results"][0]["ranks"].get("vectors").is_none(),
        "{data}"
    );
    assert!(
        out.stderr.contains("the vector list was left out"),
        "{}",
        out.stderr
    );
}
