//! `cairn note`: discovery notes from a page served by a local server, offline, from the LLM
//! (a mock), from stdin; redaction; list, show and recall.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{BIN, Env, Run, git_status, read, secret_corpus, secret_of};

const NOW: &str = "2026-12-01T10:00:00Z";
/// NOW as the note writes it.
const CAPTURED: &str = "2026-12-01T10:00:00.000Z";

const PAGE: &str = r#"<!doctype html><html><head><title>NFS locking, explained</title>
<style>body { font-family: serif }</style><script>var tracker = "do-not-keep";</script></head>
<body><nav>Home | Blog</nav><h1>How NFS locks files</h1>
<p>The lock manager grants advisory locks to clients and recovers them after a server restart.</p>
<h2>Leases in NFSv4</h2><p>Version 4 replaces the lock manager with leases that clients renew.</p>
</body></html>"#;

fn page_server() -> (mockito::ServerGuard, mockito::Mock) {
    let mut server = mockito::Server::new();
    let mock = server
        .mock("GET", "/nfs")
        .with_status(200)
        .with_header("content-type", "text/html; charset=utf-8")
        .with_body(PAGE)
        .create();
    (server, mock)
}

fn note_file(repo: &Path, data: &Value) -> String {
    read(repo, data["path"].as_str().expect("a path"))
}

/// A port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn head_subject(env: &Env, repo: &Path) -> String {
    env.git(repo, &["log", "-1", "--format=%s"])
        .trim()
        .to_string()
}

#[test]
fn a_fetched_page_gives_the_note_its_title_headings_and_main_text() {
    let (server, mock) = page_server();
    let (env, repo) = Env::repo();
    let url = format!("{}/nfs", server.url());
    let r = env
        .cairn_in(
            &repo,
            &[
                "note",
                &url,
                "--context",
                "explains our stale lock bug",
                "--tags",
                "NFS,locks",
                "--now",
                NOW,
                "--json",
            ],
        )
        .code(0);
    mock.assert();
    let data = r.data();
    assert_eq!(data["id"], "2026-12-01-nfs-locking-explained");
    assert_eq!(
        data["path"],
        "vault/notes/2026-12-01-nfs-locking-explained.md"
    );
    assert_eq!(data["fetched"], true);
    assert_eq!(data["described_by"], "page");
    let text = note_file(&repo, &data);
    let front = format!(
        "---\nurl: {url}\ntitle: NFS locking, explained\ntags:\n- nfs\n- locks\nrelevance: explains our stale lock bug\ncaptured: {CAPTURED}\n---\n# NFS locking, explained\n\n"
    );
    assert!(text.starts_with(&front), "{text}");
    // The summary: the first paragraph, then the headings it covers.
    assert!(
        text.contains("The lock manager grants advisory locks to clients and recovers them after a server restart. (Covers: How NFS locks files; Leases in NFSv4.)"),
        "{text}"
    );
    assert!(text.contains("## Page\n\n"), "{text}");
    assert!(text.contains("# How NFS locks files"), "{text}");
    assert!(
        text.contains("Version 4 replaces the lock manager with leases"),
        "{text}"
    );
    assert!(
        !text.contains("do-not-keep") && !text.contains("font-family"),
        "{text}"
    );
    // One commit, of this file only; the tree is clean.
    assert_eq!(head_subject(&env, &repo), "note: NFS locking, explained");
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        files.trim(),
        "vault/notes/2026-12-01-nfs-locking-explained.md"
    );
    assert_eq!(git_status(&env, &repo), "");

    // list, show, and recall find it.
    let list = env
        .cairn_in(&repo, &["note", "list", "--json"])
        .code(0)
        .data();
    assert_eq!(list["notes"][0]["id"], "2026-12-01-nfs-locking-explained");
    assert_eq!(list["notes"][0]["tags"], json!(["nfs", "locks"]));
    let shown = env
        .cairn_in(&repo, &["note", "show", "2026-12-01-nfs-locking-explained"])
        .code(0);
    assert_eq!(shown.stdout.trim_end(), text.trim_end());
    let recalled = env
        .cairn_in(
            &repo,
            &["recall", "lease renewal nfsv4", "--now", NOW, "--json"],
        )
        .code(0)
        .data();
    let first = &recalled["results"][0];
    assert_eq!(first["kind"], "note", "{recalled}");
    assert_eq!(first["id"], "2026-12-01-nfs-locking-explained");
    assert_eq!(first["source"], url.as_str());
}

#[test]
fn offline_the_note_holds_the_context_alone_and_exits_0() {
    let (env, repo) = Env::repo();
    let url = format!("http://127.0.0.1:{}/gone", closed_port());
    let r = env
        .cairn_in(
            &repo,
            &[
                "note",
                &url,
                "--context",
                "the retry budget table",
                "--now",
                NOW,
                "--json",
            ],
        )
        .code(0);
    assert!(
        r.stderr.contains("could not fetch the page"),
        "{}",
        r.stderr
    );
    let data = r.data();
    assert_eq!(data["fetched"], false);
    assert_eq!(data["described_by"], "context");
    let text = note_file(&repo, &data);
    assert!(text.contains(&format!("url: {url}\n")), "{text}");
    assert!(
        text.contains("relevance: the retry budget table\n"),
        "{text}"
    );
    assert!(!text.contains("## Page"), "{text}");
    assert_eq!(git_status(&env, &repo), "");
    // --offline does not even try.
    let r = env
        .cairn_in(
            &repo,
            &[
                "note",
                "https://example.invalid/x",
                "--offline",
                "--context",
                "later",
                "--json",
            ],
        )
        .code(0);
    assert!(!r.stderr.contains("could not fetch"), "{}", r.stderr);
}

fn chat_reply(text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}
    }))
    .unwrap()
}

fn configure_llm(env: &Env, repo: &Path, base_url: &str) {
    let toml = read(repo, "cairn.toml").replacen(
        "provider = \"\"\nbase_url = \"\"\nmodel = \"\"",
        &format!("provider = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"test-model\""),
        1,
    );
    assert!(toml.contains("provider = \"openai\""), "{toml}");
    std::fs::write(repo.join("cairn.toml"), toml).unwrap();
    env.git(repo, &["commit", "-qam", "llm"]);
}

#[test]
fn the_llm_gives_title_tags_and_summary_from_the_page() {
    let (mut server, page) = page_server();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen2 = seen.clone();
    let chat = server
        .mock("POST", "/v1/chat/completions")
        .with_status(200)
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            *seen2.lock().unwrap() = String::from_utf8_lossy(req.body().unwrap()).into_owned();
            chat_reply("<note>\n<title>NFS lock recovery</title>\n<tags>storage, NFS</tags>\n<summary>How NFS clients keep and recover locks, and how v4 leases differ.</summary>\n</note>")
        })
        .create();
    let (env, repo) = Env::repo();
    configure_llm(&env, &repo, &server.url());
    let url = format!("{}/nfs", server.url());
    let data = env
        .cairn_in(
            &repo,
            &[
                "note",
                &url,
                "--tags",
                "locks",
                "--context",
                "stale locks",
                "--now",
                NOW,
                "--json",
            ],
        )
        .code(0)
        .data();
    page.assert();
    chat.assert();
    // The LLM saw the page's text and why it mattered, not its script.
    let prompt = seen.lock().unwrap().clone();
    assert!(
        prompt.contains("Version 4 replaces the lock manager"),
        "{prompt}"
    );
    assert!(prompt.contains("stale locks"), "{prompt}");
    assert!(!prompt.contains("do-not-keep"), "{prompt}");
    assert_eq!(data["described_by"], "llm");
    assert_eq!(data["id"], "2026-12-01-nfs-lock-recovery");
    assert_eq!(data["note"]["tags"], json!(["locks", "storage", "nfs"]));
    let text = note_file(&repo, &data);
    assert!(
        text.contains("# NFS lock recovery\n\nHow NFS clients keep and recover locks, and how v4 leases differ.\n"),
        "{text}"
    );
    // A telemetry event with the tokens.
    let tele = read(&repo, ".cairn/telemetry.jsonl");
    assert!(
        tele.contains("\"component\":\"note\",\"action\":\"describe\",\"success\":true"),
        "{tele}"
    );
}

#[test]
fn a_malformed_llm_reply_leaves_the_pages_own_title_with_a_warning() {
    let (mut server, _page) = page_server();
    let _chat = server
        .mock("POST", "/v1/chat/completions")
        .with_status(200)
        .with_header("content-type", "application/json")
        .with_body(chat_reply("Sure! The title is NFS."))
        .create();
    let (env, repo) = Env::repo();
    configure_llm(&env, &repo, &server.url());
    let url = format!("{}/nfs", server.url());
    let r = env
        .cairn_in(&repo, &["note", &url, "--now", NOW, "--json"])
        .code(0);
    assert!(r.stderr.contains("malformed LLM reply"), "{}", r.stderr);
    let data = r.data();
    assert_eq!(data["described_by"], "page");
    assert_eq!(data["note"]["title"], "NFS locking, explained");
}

#[test]
fn a_secret_in_a_note_never_reaches_the_repository() {
    let (env, repo) = Env::repo();
    let (_, line) = secret_corpus()
        .into_iter()
        .find(|(k, _)| k.contains("github") || k.contains("openai") || k.contains("aws"))
        .expect("a token in the corpus");
    let secret = secret_of(&line);
    let text = format!("Deploy notes for the mirror: {line}");
    let data = env
        .cairn_in(
            &repo,
            &[
                "note",
                &text,
                "--context",
                &format!("key was {secret}"),
                "--json",
            ],
        )
        .code(0)
        .data();
    let file = note_file(&repo, &data);
    assert!(!file.contains(&secret), "{file}");
    assert!(file.contains("Deploy notes for the mirror"), "{file}");
    let history = env.git(&repo, &["log", "-p", "--all"]);
    assert!(!history.contains(&secret), "the secret is in git history");
}

fn cairn_stdin(env: &Env, repo: &Path, args: &[&str], input: &str) -> Run {
    let mut cmd = env.command(BIN, repo);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    Run::from(child.wait_with_output().unwrap())
}

#[test]
fn a_note_from_stdin_and_a_hand_edit_is_recalled() {
    let (env, repo) = Env::repo();
    let data = cairn_stdin(
        &env,
        &repo,
        &["note", "-", "--tags", "ops", "--now", NOW, "--json"],
        "Backups of the wiki go to the cold bucket\nThey run nightly at two.\n",
    )
    .code(0)
    .data();
    assert_eq!(
        data["id"],
        "2026-12-01-backups-of-the-wiki-go-to-the-cold-bucket"
    );
    assert_eq!(data["note"]["url"], Value::Null);
    let path = data["path"].as_str().unwrap().to_string();
    let text = read(&repo, &path);
    assert!(text.contains("They run nightly at two."), "{text}");
    // Edited by hand: the index reads the new text.
    std::fs::write(
        repo.join(&path),
        text.replace("nightly at two", "hourly via quokkasync"),
    )
    .unwrap();
    let r = env
        .cairn_in(&repo, &["recall", "quokkasync", "--now", NOW, "--json"])
        .code(0)
        .data();
    assert_eq!(r["results"][0]["id"], data["id"]);
    assert_eq!(r["results"][0]["kind"], "note");
    // A second note of the same title the same day gets its own file.
    let again = cairn_stdin(
        &env,
        &repo,
        &["note", "-", "--now", NOW, "--json"],
        "Backups of the wiki go to the cold bucket",
    )
    .code(0)
    .data();
    assert_eq!(
        again["id"],
        "2026-12-01-backups-of-the-wiki-go-to-the-cold-bucket-2"
    );
}

#[test]
fn show_of_an_unknown_note_and_an_empty_note_are_errors() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["note", "show", "nope"])
        .code(2)
        .stderr_has("no note `nope`");
    env.cairn_in(&repo, &["note", "   "])
        .code(2)
        .stderr_has("the note is empty");
    env.cairn_in(&repo, &["note", "list"]).code(1);
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn exact_search_finds_a_note_by_any_line_and_after_a_hand_edit() {
    let (env, repo) = Env::repo();
    let data = env
        .cairn_in(
            &repo,
            &[
                "note",
                "https://example.invalid/retries",
                "--offline",
                "--context",
                "the retry budget table",
                "--now",
                NOW,
                "--json",
            ],
        )
        .code(0)
        .data();
    let id = data["id"].as_str().unwrap().to_string();
    let path = data["path"].as_str().unwrap().to_string();
    let exact = |words: &str, kind: Option<&str>| {
        let mut args = vec!["search", "--exact", words, "--json"];
        if let Some(k) = kind {
            args.extend(["--kind", k]);
        }
        let r = env.cairn_in(&repo, &args);
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        r.data()["results"].as_array().unwrap().clone()
    };
    let line_of = |needle: &str| {
        read(&repo, &path)
            .lines()
            .position(|l| l.contains(needle))
            .unwrap()
            + 1
    };
    let found = exact("RETRY BUDGET", None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["kind"], "note");
    assert_eq!(found[0]["id"], id.as_str());
    assert_eq!(found[0]["time"], CAPTURED);
    assert_eq!(
        found[0]["at"],
        format!("{path}:{}", line_of("retry budget")).as_str()
    );
    assert_eq!(found[0]["text"], "relevance: the retry budget table");
    // The URL is a line too.
    assert_eq!(exact("example.invalid/retries", Some("note")).len(), 1);
    // Edited by hand: the new line is found where it is.
    let text = read(&repo, &path);
    std::fs::write(
        repo.join(&path),
        format!("{text}\nBudgets reset at the wombat hour.\n"),
    )
    .unwrap();
    let found = exact("wombat hour", None);
    assert_eq!(
        found[0]["at"],
        format!("{path}:{}", line_of("wombat hour")).as_str()
    );
    assert_eq!(exact("wombat hour", Some("slog")).len(), 0);
}

#[test]
fn a_url_noted_offline_gets_a_readable_slug_and_title_and_is_filled_from_its_page_later() {
    let mut server = mockito::Server::new();
    let (env, repo) = Env::repo();
    let url = format!("{}/blog/nfs-locking.html", server.url());
    let offline = env
        .cairn_in(
            &repo,
            &[
                "note",
                &url,
                "--offline",
                "--context",
                "explains our stale lock bug",
                "--tags",
                "nfs",
                "--now",
                NOW,
                "--json",
            ],
        )
        .code(0)
        .data();
    assert_eq!(offline["id"], "2026-12-01-nfs-locking");
    assert_eq!(offline["note"]["title"], "nfs locking (127.0.0.1)");
    assert_eq!(offline["filled"], false);
    // Online, the same URL fills that note: same file, the page's title and text, the context,
    // tags and time it was taken with.
    let page = server
        .mock("GET", "/blog/nfs-locking.html")
        .with_status(200)
        .with_header("content-type", "text/html; charset=utf-8")
        .with_body(PAGE)
        .create();
    let r = env
        .cairn_in(
            &repo,
            &[
                "note",
                &url,
                "--tags",
                "locks",
                "--now",
                "2026-12-03T09:00:00Z",
                "--json",
            ],
        )
        .code(0);
    page.assert();
    let filled = r.data();
    assert_eq!(filled["filled"], true, "{filled}");
    assert_eq!(filled["id"], offline["id"]);
    assert_eq!(filled["path"], offline["path"]);
    assert_eq!(filled["note"]["title"], "NFS locking, explained");
    assert_eq!(filled["note"]["relevance"], "explains our stale lock bug");
    assert_eq!(filled["note"]["tags"], json!(["nfs", "locks"]));
    assert_eq!(filled["note"]["captured"], CAPTURED);
    let text = note_file(&repo, &filled);
    assert!(text.contains("# NFS locking, explained\n"), "{text}");
    assert!(text.contains("## Page"), "{text}");
    assert!(text.contains("grants advisory locks"), "{text}");
    assert_eq!(
        head_subject(&env, &repo),
        "note: fill NFS locking, explained from its page"
    );
    let list = env
        .cairn_in(&repo, &["note", "list", "--json"])
        .code(0)
        .data();
    assert_eq!(list["matched"], 1, "{list}");
    assert_eq!(git_status(&env, &repo), "");
    // A note whose page was read is not filled again: a new note is taken.
    let again = env
        .cairn_in(&repo, &["note", &url, "--now", NOW, "--json"])
        .code(0)
        .data();
    assert_eq!(again["filled"], false);
    assert_eq!(again["id"], "2026-12-01-nfs-locking-explained");
}

#[test]
fn a_text_note_shows_its_text_once_in_search_and_recall() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "note",
            "The wiki backups go to the cold quokka bucket",
            "--now",
            NOW,
        ],
    )
    .code(0);
    let text = "The wiki backups go to the cold quokka bucket";
    for args in [
        vec!["search", "quokka", "--now", NOW],
        vec!["recall", "quokka", "--now", NOW],
    ] {
        let r = env.cairn_in(&repo, &args).code(0);
        assert_eq!(r.stdout.matches(text).count(), 1, "{args:?}:\n{}", r.stdout);
    }
    // A longer one: its first line (the title) once, the rest under it.
    cairn_stdin(
        &env,
        &repo,
        &["note", "-", "--now", NOW],
        "Wombat restarts need a drain\nDrain the wombat queue before the restart.\n",
    )
    .code(0);
    let r = env
        .cairn_in(&repo, &["search", "wombat", "--now", NOW])
        .code(0);
    assert_eq!(
        r.stdout.matches("Wombat restarts need a drain").count(),
        1,
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("    Drain the wombat queue before the restart."),
        "{}",
        r.stdout
    );
}
