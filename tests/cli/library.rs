//! `cairn library` and `cairn search --library`: Markdown with nested headings, a PDF made in
//! the test, an HTML page from a local server; a separate collection that recall leaves out
//! unless asked; re-adding unchanged, changed and removed documents.

use std::path::Path;

use serde_json::{Value, json};

use crate::pdfgen::{Carried, pdf, pdf_carrying};
use crate::support::{Env, git_status, read};

const GUIDE: &str = "# Storage guide\n\nThis guide covers the cluster's storage.\n\n## Install\n\nFetch the packages first.\n\n### On Linux\n\nUse apt to install nfs-common and the quokkafs driver.\n\n### On macOS\n\nUse brew to install the client.\n\n## Operate\n\nRotate the keys monthly.\n";

fn search(env: &Env, repo: &Path, words: &str) -> Value {
    let r = env.cairn_in(repo, &["search", "--library", words, "--json"]);
    assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
    r.data()
}

fn manifest(repo: &Path) -> Vec<Value> {
    read(repo, "vault/library.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn markdown_chunks_carry_their_heading_paths_and_only_the_manifest_is_committed() {
    let (env, repo) = Env::repo();
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), GUIDE).unwrap();
    let r = env
        .cairn_in(
            &repo,
            &[
                "library",
                "add",
                docs.join("guide.md").to_str().unwrap(),
                "--tags",
                "storage",
                "--json",
            ],
        )
        .code(0);
    let added = &r.data()["added"][0];
    assert_eq!(added["title"], "Storage guide");
    assert_eq!(added["format"], "markdown");
    assert_eq!(added["chunks"], 5);
    assert_eq!(added["tags"], json!(["storage"]));
    let m = manifest(&repo);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0]["path"], docs.join("guide.md").to_str().unwrap());
    assert_eq!(m[0]["sha256"].as_str().unwrap().len(), 64);
    // One commit holding the manifest alone; the document stays where it is.
    let files = env.git(&repo, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert_eq!(
        files.trim(),
        "library: add Storage guide\n\nvault/library.jsonl"
    );
    assert_eq!(git_status(&env, &repo), "");

    let found = search(&env, &repo, "quokkafs driver");
    let first = &found["results"][0];
    assert_eq!(first["kind"], "library");
    assert_eq!(
        first["cite"]["heading"],
        json!(["Storage guide", "Install", "On Linux"])
    );
    assert_eq!(first["cite"]["page"], Value::Null);
    assert_eq!(
        first["cite"]["text"],
        "Storage guide, Storage guide › Install › On Linux"
    );
    assert!(first["text"].as_str().unwrap().contains("quokkafs"));
    let human = env
        .cairn_in(&repo, &["search", "--library", "rotate keys"])
        .code(0);
    assert!(
        human.stdout.contains("Storage guide › Operate"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_pdf_cites_its_pages_and_one_without_text_is_reported_not_failed() {
    let (env, repo) = Env::repo();
    let pages = vec![
        vec![
            "Chapter one: the wombat protocol.".to_string(),
            "It opens a session.".into(),
        ],
        vec![
            "Chapter two: retries.".to_string(),
            "A lost packet is sent again after backoff.".into(),
        ],
        vec!["Chapter three: closing the session politely.".to_string()],
    ];
    let file = env.path().join("manual.pdf");
    std::fs::write(&file, pdf(&pages)).unwrap();
    let data = env
        .cairn_in(&repo, &["library", "add", file.to_str().unwrap(), "--json"])
        .code(0)
        .data();
    assert_eq!(data["added"][0]["pages"], 3);
    assert_eq!(data["added"][0]["chunks"], 3);
    assert_eq!(data["added"][0]["format"], "pdf");
    let found = search(&env, &repo, "lost packet backoff");
    assert_eq!(found["results"][0]["cite"]["page"], 2, "{found}");
    assert!(
        found["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Chapter two")
    );
    let found = search(&env, &repo, "politely");
    assert_eq!(found["results"][0]["cite"]["page"], 3);
    assert_eq!(found["results"][0]["cite"]["text"], "manual, p. 3");

    // A scanned PDF (pages without text) is added, reported, and exits 0.
    let scanned = env.path().join("scan.pdf");
    std::fs::write(&scanned, pdf(&[vec![], vec![]])).unwrap();
    let r = env
        .cairn_in(
            &repo,
            &["library", "add", scanned.to_str().unwrap(), "--json"],
        )
        .code(0);
    assert!(r.stderr.contains("no text found"), "{}", r.stderr);
    let data = r.data();
    assert_eq!(data["no_text"], json!([scanned.to_str().unwrap()]));
    assert_eq!(data["added"][0]["pages"], 2);
    assert_eq!(data["added"][0]["chunks"], 0);
    // A file that is not a PDF at all is refused, and nothing is written.
    let broken = env.path().join("broken.pdf");
    std::fs::write(&broken, "%PDF-1.4 nothing else").unwrap();
    let before = read(&repo, "vault/library.jsonl");
    env.cairn_in(&repo, &["library", "add", broken.to_str().unwrap()])
        .code(2);
    assert_eq!(read(&repo, "vault/library.jsonl"), before);
}

#[test]
fn an_html_page_from_a_local_server_is_cut_by_its_headings() {
    let mut server = mockito::Server::new();
    let _m = server
        .mock("GET", "/spec.html")
        .with_status(200)
        .with_header("content-type", "text/html")
        .with_body("<html><head><title>Frobnicator spec</title><script>var x='ignored';</script></head><body><h1>Frobnicator</h1><p>The frobnicator turns widgets.</p><h2>Limits</h2><p>At most nine hundred widgets a second.</p></body></html>")
        .create();
    let (env, repo) = Env::repo();
    let url = format!("{}/spec.html", server.url());
    let data = env
        .cairn_in(&repo, &["library", "add", &url, "--json"])
        .code(0)
        .data();
    assert_eq!(data["added"][0]["title"], "Frobnicator spec");
    assert_eq!(data["added"][0]["format"], "html");
    assert_eq!(manifest(&repo)[0]["url"], url.as_str());
    let found = search(&env, &repo, "nine hundred widgets");
    let first = &found["results"][0];
    assert_eq!(first["cite"]["heading"], json!(["Frobnicator", "Limits"]));
    assert_eq!(first["cite"]["source"], url.as_str());
    assert!(
        !search(&env, &repo, "ignored")["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["text"].as_str().unwrap().contains("ignored"))
    );
}

#[test]
fn recall_and_search_leave_the_library_out_unless_asked() {
    let (env, repo) = Env::repo();
    let file = env.path().join("guide.md");
    std::fs::write(&file, GUIDE).unwrap();
    env.cairn_in(&repo, &["library", "add", file.to_str().unwrap()])
        .code(0);
    env.cairn_in(
        &repo,
        &[
            "slog",
            "deploy",
            "storage",
            "rolled out the quokkafs driver",
        ],
    )
    .code(0);
    let kinds = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let plain = env
        .cairn_in(&repo, &["recall", "quokkafs", "--json"])
        .code(0)
        .data();
    assert_eq!(kinds(&plain), vec!["slog"]);
    let searched = env
        .cairn_in(&repo, &["search", "quokkafs", "--json"])
        .code(0)
        .data();
    assert_eq!(kinds(&searched), vec!["slog"]);
    let brief = env.cairn_in(&repo, &["brief", "--json"]).code(0).stdout;
    assert!(!brief.contains("apt to install"), "{brief}");
    let asked = env
        .cairn_in(&repo, &["recall", "quokkafs", "--library", "--json"])
        .code(0)
        .data();
    let k = kinds(&asked);
    assert!(
        k.contains(&"library".to_string()) && k.contains(&"slog".to_string()),
        "{k:?}"
    );
    let lib = search(&env, &repo, "quokkafs");
    assert_eq!(kinds(&lib), vec!["library"]);
}

#[test]
fn unchanged_costs_a_stat_changed_is_cut_again_removed_leaves_the_index() {
    let (env, repo) = Env::repo();
    let file = env.path().join("guide.md");
    std::fs::write(&file, GUIDE).unwrap();
    let f = file.to_str().unwrap();
    env.cairn_in(&repo, &["library", "add", f]).code(0);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let again = env
        .cairn_in(&repo, &["library", "add", f, "--json"])
        .code(0)
        .data();
    assert_eq!(again["unchanged"], 1);
    assert_eq!(again["commit"], Value::Null);
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD"]),
        head,
        "no commit for nothing"
    );
    // Only the stat is consulted: the same size and mtime with other bytes is not read (as
    // git's index and make trust a stat); a different stat is.
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, GUIDE.replace("quokkafs", "quokkaFS")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let same_stat = env
        .cairn_in(&repo, &["library", "add", f, "--json"])
        .code(0)
        .data();
    assert_eq!(same_stat["unchanged"], 1, "{same_stat}");
    // A changed size is read again and cut again.
    std::fs::write(&file, GUIDE.replace("quokkafs", "platypusfs")).unwrap();
    let changed = env
        .cairn_in(&repo, &["library", "add", f, "--json"])
        .code(0)
        .data();
    assert_eq!(changed["updated"].as_array().unwrap().len(), 1, "{changed}");
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s"]).trim(),
        "library: update Storage guide"
    );
    let texts = |words: &str| -> Vec<String> {
        search(&env, &repo, words)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(texts("platypusfs")[0].contains("platypusfs"));
    // The old chunks left the index with the old text: no chunk holds it, and the document
    // still has its five.
    assert!(!texts("quokkafs").iter().any(|t| t.contains("quokkafs")));
    let status = env.cairn_in(&repo, &["status", "--json"]).code(0).data();
    assert_eq!(status["kinds"]["library"], 5, "{status}");
    // New tags on an unchanged file change the manifest only.
    let tagged = env
        .cairn_in(&repo, &["library", "add", f, "--tags", "ops", "--json"])
        .code(0)
        .data();
    assert_eq!(tagged["updated"][0]["tags"], json!(["ops"]));
    // Removed: out of the manifest and the index.
    let id = manifest(&repo)[0]["id"].as_str().unwrap().to_string();
    env.cairn_in(&repo, &["library", "remove", &id]).code(0);
    assert_eq!(read(&repo, "vault/library.jsonl"), "");
    env.cairn_in(&repo, &["search", "--library", "platypusfs"])
        .code(1);
    env.cairn_in(&repo, &["library", "list"]).code(1);
    env.cairn_in(&repo, &["library", "remove", &id]).code(2);
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn deleting_the_derived_state_loses_nothing_and_copy_commits_the_file() {
    let (env, repo) = Env::repo();
    let dir = env.path().join("docs");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("guide.md"), GUIDE).unwrap();
    std::fs::write(
        dir.join("sub/notes.txt"),
        "Plain words about the emu cache.\n\nSecond paragraph.",
    )
    .unwrap();
    std::fs::write(dir.join("skip.bin"), "not a document").unwrap();
    let data = env
        .cairn_in(
            &repo,
            &["library", "add", dir.to_str().unwrap(), "--copy", "--json"],
        )
        .code(0)
        .data();
    assert_eq!(
        data["added"].as_array().unwrap().len(),
        2,
        "a folder adds what it can read"
    );
    let m = manifest(&repo);
    for e in &m {
        assert_eq!(e["copied"], true);
        let path = e["path"].as_str().unwrap();
        assert!(path.starts_with("vault/library/"), "{path}");
        let committed = env.git(&repo, &["ls-files", path]);
        assert_eq!(committed.trim(), path);
    }
    std::fs::remove_dir_all(repo.join(".cairn")).unwrap();
    let found = search(&env, &repo, "emu cache");
    assert_eq!(found["results"][0]["cite"]["title"], "notes");
    // A file of a format the library does not read is refused whole.
    env.cairn_in(
        &repo,
        &["library", "add", dir.join("skip.bin").to_str().unwrap()],
    )
    .code(2)
    .stderr_has("not a format the library reads");
}

#[test]
fn exact_search_finds_library_chunks_only_when_asked_and_cites_them() {
    let (env, repo) = Env::repo();
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let guide = docs.join("guide.md");
    std::fs::write(&guide, GUIDE).unwrap();
    let manual = docs.join("manual.pdf");
    std::fs::write(
        &manual,
        pdf(&[
            vec!["Chapter one: the wombat protocol.".to_string()],
            vec!["A lost packet is sent again after backoff.".to_string()],
        ]),
    )
    .unwrap();
    for f in [&guide, &manual] {
        env.cairn_in(&repo, &["library", "add", f.to_str().unwrap()])
            .code(0);
    }
    env.cairn_in(
        &repo,
        &["slog", "install", "quokkafs", "driver 2.1 on the nas"],
    )
    .code(0);
    let exact = |args: &[&str]| {
        let mut all = vec!["--json", "search", "--exact"];
        all.extend_from_slice(args);
        let r = env.cairn_in(&repo, &all);
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        r.data()["results"].as_array().unwrap().clone()
    };
    // Any case; the chunk cites its document and heading path.
    let found = exact(&["--library", "QUOKKAFS DRIVER"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["kind"], "library");
    assert!(found[0]["id"].as_str().unwrap().starts_with("lib-"));
    assert_eq!(found[0]["at"], guide.to_str().unwrap());
    assert_eq!(
        found[0]["cite"]["heading"],
        json!(["Storage guide", "Install", "On Linux"])
    );
    assert_eq!(found[0]["cite"]["page"], Value::Null);
    // A PDF chunk cites its page.
    let found = exact(&["--library", "lost packet"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["cite"]["page"], 2);
    assert_eq!(found[0]["cite"]["text"], "manual, p. 2");
    // Without --library the library stays out; the slog entry is found.
    let found = exact(&["quokkafs"]);
    let kinds: Vec<&str> = found.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["slog"], "{found:?}");
    // Nothing found exits 1; --library with --kind is bad input.
    env.cairn_in(&repo, &["search", "--exact", "--library", "wombat carrier"])
        .code(1);
    env.cairn_in(
        &repo,
        &[
            "search",
            "--exact",
            "--library",
            "--kind",
            "slog",
            "quokkafs",
        ],
    )
    .code(2);
    let human = env
        .cairn_in(&repo, &["search", "--exact", "--library", "quokkafs"])
        .code(0)
        .stdout;
    assert!(
        human.contains(&format!(
            "Storage guide, Storage guide › Install › On Linux  ({})",
            guide.display()
        )),
        "{human}"
    );
    // A chunk file deleted with `.cairn/`: made again from the document before the scan.
    std::fs::remove_dir_all(repo.join(".cairn/library")).unwrap();
    assert_eq!(exact(&["--library", "lost packet"]).len(), 1);
}

// No secret reaches the repository through `library add --copy`: a text document's copy is
// its redacted text (the whole secret corpus), and a PDF holding a secret, whose bytes cannot
// be redacted, is listed by its path and not copied; search never shows a secret either.
#[test]
fn a_copy_never_commits_a_secret_text_is_redacted_and_a_pdf_holding_one_is_not_copied() {
    use crate::support::{secret_corpus, secret_of};
    let (env, repo) = Env::repo();
    let corpus = secret_corpus();
    let mut doc = String::from("# Runbook\n\n");
    for (kind, text) in &corpus {
        doc.push_str(&format!(
            "## The {kind} step\n\nWhile deploying the osprey service, {text}.\n\n"
        ));
    }
    let md = env.path().join("runbook.md");
    std::fs::write(&md, &doc).unwrap();
    env.cairn_in(&repo, &["library", "add", md.to_str().unwrap(), "--copy"])
        .code(0)
        .stderr_has("its copy has")
        .stderr_has("secrets redacted");
    let m = manifest(&repo);
    let copy = m[0]["path"].as_str().unwrap().to_string();
    assert!(copy.starts_with("vault/library/"), "{copy}");
    let copied = read(&repo, &copy);
    assert!(
        copied.contains("osprey service"),
        "the words stay: {copied}"
    );

    let line = &corpus.iter().find(|(k, _)| k == "github-token").unwrap().1;
    let pdf_path = env.path().join("handbook.pdf");
    std::fs::write(
        &pdf_path,
        pdf(&[
            vec!["The osprey handbook, first page.".into()],
            vec![format!("Page two keeps {line}")],
        ]),
    )
    .unwrap();
    env.cairn_in(
        &repo,
        &["library", "add", pdf_path.to_str().unwrap(), "--copy"],
    )
    .code(0)
    .stderr_has("handbook.pdf: not copied: it holds 1 secret(s) (github-token)");
    let entry = manifest(&repo)
        .into_iter()
        .find(|e| e["format"] == "pdf")
        .unwrap();
    assert_ne!(entry["copied"], true, "{entry}");
    assert!(
        !entry["path"].as_str().unwrap().starts_with("vault/"),
        "{entry}"
    );
    assert!(
        env.git(&repo, &["ls-files", "vault/library"])
            .lines()
            .all(|l| !l.ends_with(".pdf"))
    );
    assert_eq!(git_status(&env, &repo), "");

    let history = env.git(&repo, &["log", "-p", "--all"]);
    let found = env
        .cairn_in(
            &repo,
            &["search", "--library", "osprey", "--json", "--limit", "50"],
        )
        .stdout;
    let exact = env
        .cairn_in(
            &repo,
            &["search", "--library", "--exact", "osprey", "--json"],
        )
        .stdout;
    for (kind, text) in &corpus {
        let secret = secret_of(text);
        assert!(!copied.contains(&secret), "{kind} in the copy");
        assert!(!history.contains(&secret), "{kind} in git history");
        assert!(!found.contains(&secret), "{kind} in search results");
        assert!(!exact.contains(&secret), "{kind} in exact search results");
    }
}

/// The AWS key of the secret corpus, and a database password known only by its name.
fn pdf_secrets() -> (String, String) {
    use crate::support::{secret_corpus, secret_of};
    let line = secret_corpus()
        .into_iter()
        .find(|(k, _)| k == "aws-access-key-id")
        .unwrap()
        .1;
    (secret_of(&line), "correcthorsebatterystaple".to_string())
}

// Regression (issue 30): `library add --copy` copied a PDF verbatim though its information
// dictionary held an AWS key and a database password: only the pages' text was scanned. Every
// place a PDF keeps text is scanned now, and a secret in any of them keeps the file from being
// copied, as one in its pages does.
#[test]
fn a_secret_in_a_pdfs_metadata_annotation_form_field_or_outline_keeps_it_from_being_copied() {
    let (env, repo) = Env::repo();
    let (aws, password) = pdf_secrets();
    let pages = [vec![
        "The osprey handbook, a page without secrets.".to_string(),
    ]];
    let places = [
        (
            "info",
            Carried {
                info: vec![
                    ("Author", format!("ops team {aws}")),
                    ("Subject", format!("DB_PASSWORD={password}")),
                    ("Keywords", "osprey, handbook".into()),
                ],
                ..Carried::default()
            },
        ),
        (
            "xmp",
            Carried {
                xmp: Some(format!("uploaded with {aws}")),
                ..Carried::default()
            },
        ),
        (
            "annotation",
            Carried {
                annotation: Some(format!("the db password is: {password}")),
                ..Carried::default()
            },
        ),
        (
            "field",
            Carried {
                field: Some(format!("mysql -u root -p{password}")),
                ..Carried::default()
            },
        ),
        (
            "outline",
            Carried {
                outline: Some(format!("Keys: {aws}")),
                ..Carried::default()
            },
        ),
    ];
    for (place, carried) in &places {
        let file = env.path().join(format!("{place}.pdf"));
        std::fs::write(&file, pdf_carrying(&pages, carried)).unwrap();
        env.cairn_in(&repo, &["library", "add", file.to_str().unwrap(), "--copy"])
            .code(0)
            .stderr_has(&format!("{place}.pdf: not copied: it holds"));
    }
    // The same places holding harmless text: the file is copied.
    let clean = Carried {
        info: vec![("Author", "Ann Lee".into()), ("Keywords", "osprey".into())],
        xmp: Some("the osprey handbook".into()),
        annotation: Some("check this page".into()),
        field: Some("Ann".into()),
        outline: Some("Chapter one".into()),
        ..Carried::default()
    };
    let file = env.path().join("clean.pdf");
    std::fs::write(&file, pdf_carrying(&pages, &clean)).unwrap();
    env.cairn_in(&repo, &["library", "add", file.to_str().unwrap(), "--copy"])
        .code(0);
    let m = manifest(&repo);
    assert_eq!(m.len(), places.len() + 1);
    for e in &m {
        let copied = e["copied"] == true;
        assert_eq!(
            copied,
            e["path"].as_str().unwrap().ends_with("clean.pdf"),
            "{e}"
        );
    }
    assert_eq!(git_status(&env, &repo), "");
    let history = env
        .command("git", &repo)
        .args(["log", "-p", "--all", "--text"])
        .output()
        .unwrap();
    let history = String::from_utf8_lossy(&history.stdout);
    assert!(history.contains("clean.pdf"), "the clean copy is committed");
    assert!(!history.contains(&aws), "the key is in git history");
    assert!(
        !history.contains(&password),
        "the password is in git history"
    );
}

// Regression (issue 30): `forget` said "nothing matches" for a secret inside a copied PDF's
// metadata (a copy made before the metadata was scanned). Its texts are searched now: the
// document goes, with its copy.
#[test]
fn forget_finds_a_secret_in_a_copied_pdfs_metadata() {
    let (env, repo) = Env::repo();
    let (aws, _) = pdf_secrets();
    let pages = [vec!["The heron runbook, page one.".to_string()]];
    let file = env.path().join("heron.pdf");
    std::fs::write(&file, pdf(&pages)).unwrap();
    env.cairn_in(&repo, &["library", "add", file.to_str().unwrap(), "--copy"])
        .code(0);
    let copy = manifest(&repo)[0]["path"].as_str().unwrap().to_string();
    assert!(copy.ends_with(".pdf"), "{copy}");
    // The copy as an older cairn left it: the author's key in the information dictionary.
    let carrying = Carried {
        info: vec![("Author", format!("ops {aws}"))],
        ..Carried::default()
    };
    std::fs::write(repo.join(&copy), pdf_carrying(&pages, &carrying)).unwrap();
    env.git(
        &repo,
        &["commit", "-qam", "library: the copy an older cairn made"],
    );
    let data = env
        .cairn_in(&repo, &["--json", "forget", &aws, "--yes"])
        .code(0)
        .data();
    let found = data["forgotten"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{data}");
    assert_eq!(found[0]["kind"], "library");
    assert!(!repo.join(&copy).exists(), "the copy is gone");
    assert_eq!(read(&repo, "vault/library.jsonl"), "");
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn a_pdf_is_titled_by_its_info_or_xmp_title_and_a_placeholder_is_not_a_title() {
    let (env, repo) = Env::repo();
    let pages = [vec![
        "Clients renew their leases every ninety seconds.".to_string(),
    ]];
    let add = |name: &str, carried: &Carried| {
        let file = env.path().join(name);
        std::fs::write(&file, pdf_carrying(&pages, carried)).unwrap();
        let data = env
            .cairn_in(&repo, &["library", "add", file.to_str().unwrap(), "--json"])
            .code(0)
            .data();
        data["added"][0]["title"].as_str().unwrap().to_string()
    };
    let info = Carried {
        info: vec![("Title", "NFS  Lease Renewal\nGuide".into())],
        ..Carried::default()
    };
    assert_eq!(add("nfs-leases.pdf", &info), "NFS Lease Renewal Guide");
    let xmp = Carried {
        xmp_title: Some("Lock Recovery &amp; Grace Periods".into()),
        ..Carried::default()
    };
    assert_eq!(add("nfs-grace.pdf", &xmp), "Lock Recovery & Grace Periods");
    // The information dictionary's title wins over the XMP packet's.
    let both = Carried {
        info: vec![("Title", "Delegations".into())],
        xmp_title: Some("Something else".into()),
        ..Carried::default()
    };
    assert_eq!(add("nfs-deleg.pdf", &both), "Delegations");
    // A generator's placeholder or a file name is no title: the file's name is.
    let placeholder = Carried {
        info: vec![("Title", "Microsoft Word - draft3.docx".into())],
        ..Carried::default()
    };
    assert_eq!(add("nfs-draft.pdf", &placeholder), "nfs-draft");
    // The title is what search cites.
    let found = search(&env, &repo, "renew leases");
    let cites: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cite"]["text"].as_str().unwrap())
        .collect();
    assert!(
        cites.contains(&"NFS Lease Renewal Guide, p. 1"),
        "{cites:?}"
    );
}

#[test]
fn library_results_carry_the_time_their_document_was_added() {
    let (env, repo) = Env::repo();
    let file = env.path().join("guide.md");
    std::fs::write(&file, GUIDE).unwrap();
    env.cairn_in(
        &repo,
        &[
            "library",
            "add",
            file.to_str().unwrap(),
            "--now",
            "2026-11-20T08:30:00Z",
        ],
    )
    .code(0);
    let added = "2026-11-20T08:30:00.000Z";
    assert_eq!(manifest(&repo)[0]["added"], added);
    let found = search(&env, &repo, "quokkafs driver");
    let results = found["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{found}");
    for r in results {
        assert_eq!(r["time"], added, "{r}");
    }
    // Recall with the library, and the human form's day, say the same.
    let data = env
        .cairn_in(&repo, &["recall", "quokkafs", "--library", "--json"])
        .code(0)
        .data();
    let lib: Vec<&Value> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "library")
        .collect();
    assert!(!lib.is_empty(), "{data}");
    assert!(lib.iter().all(|r| r["time"] == added), "{data}");
    // A chunk file written before chunks kept the time (none in it) gives the file's time,
    // never 1970.
    let cache = std::fs::read_dir(repo.join(".cairn/library"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a chunk file");
    let old: String = std::fs::read_to_string(&cache)
        .unwrap()
        .replace(&format!(",\"added\":\"{added}\""), "");
    assert!(!old.contains("\"added\""), "{old}");
    std::fs::write(&cache, old).unwrap();
    let found = search(&env, &repo, "quokkafs driver");
    let time = found["results"][0]["time"].as_str().unwrap().to_string();
    assert!(!time.starts_with("1970"), "{found}");
}

/// Moves a folder's time an hour back, as a folder nobody touched for a while has it (a
/// glance trusts only folders older than two seconds).
fn age(path: &Path) {
    if let Ok(f) = std::fs::File::open(path) {
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        f.set_modified(hour_ago).unwrap();
    }
}

#[test]
fn a_chunk_file_removed_behind_a_settled_index_is_made_again_and_a_removed_entry_goes() {
    let (env, repo) = Env::repo();
    let docs = env.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("alpha.md"),
        "# Alpha\n\nThe emu cache keeps the alpha figures warm.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("beta.md"),
        "# Beta\n\nThe wombat ledger records every beta transfer.\n",
    )
    .unwrap();
    env.cairn_in(&repo, &["library", "add", docs.to_str().unwrap()])
        .code(0);
    for dir in [
        ".cairn/library",
        "slog",
        "vault/observations",
        "vault/sessions",
    ] {
        age(&repo.join(dir));
    }
    // The first search indexes the chunks; its index commit keeps a glance that says every
    // document's chunk file was there.
    assert_eq!(
        search(&env, &repo, "wombat ledger")["results"][0]["cite"]["title"],
        "Beta"
    );
    let glance = read(&repo, ".cairn/index/cairn-glance.json");
    assert!(glance.contains("\"library_complete\":true"), "{glance}");
    assert_eq!(
        search(&env, &repo, "wombat ledger")["results"][0]["cite"]["title"],
        "Beta",
        "found again through the settled index"
    );
    // Beta's chunk file goes behind the index's back: the folder's time moves, the search
    // makes it again from the document and still finds it.
    let beta = manifest(&repo)
        .into_iter()
        .find(|e| e["title"] == "Beta")
        .unwrap();
    let chunk = repo.join(format!(
        ".cairn/library/{}.jsonl",
        beta["id"].as_str().unwrap()
    ));
    std::fs::remove_file(&chunk).unwrap();
    assert_eq!(
        search(&env, &repo, "wombat ledger")["results"][0]["cite"]["title"],
        "Beta"
    );
    assert!(chunk.is_file(), "the chunk file is made again");
    // Beta leaves the manifest: its chunks leave the results, though its file stays.
    let kept: String = read(&repo, "vault/library.jsonl")
        .lines()
        .filter(|l| !l.contains("\"Beta\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(repo.join("vault/library.jsonl"), kept).unwrap();
    let found = search(&env, &repo, "wombat ledger");
    assert!(
        found["results"]
            .as_array()
            .is_none_or(|r| r.iter().all(|x| x["cite"]["title"] != "Beta")),
        "{found}"
    );
}

#[test]
fn a_recall_in_a_store_mostly_of_library_chunks_still_finds_records_by_meaning() {
    // 150 chunks nearer the query by meaning than any record: the vector list's first read
    // of the store (twice the rows it needs) holds library chunks only, which recall leaves
    // out; it must read wider rather than come back empty (ADR 146).
    let (env, repo) = Env::repo();
    let numbers = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let mut doc = String::from("# Storage notes\n\n");
    for i in 0..150 {
        doc.push_str(&format!(
            "## Part {i}\n\nnfs storage mount {} {}\n\n",
            numbers[i % 10],
            numbers[i / 10 % 10]
        ));
    }
    let file = env.path().join("notes.md");
    std::fs::write(&file, doc).unwrap();
    env.cairn_in(&repo, &["library", "add", file.to_str().unwrap()])
        .code(0);
    for detail in [
        "the nfs share hung while mounting the storage volume",
        "remounted the storage volume after the nfs server came back",
    ] {
        env.cairn_in(&repo, &["slog", "fix", "storage", detail])
            .code(0);
    }
    let found = env
        .cairn_in(
            &repo,
            &["recall", "nfs storage mount", "--mode", "vectors", "--json"],
        )
        .code(0)
        .data();
    let kinds: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["slog", "slog"], "{found}");
    // The library search of the same store finds its chunks from the first read.
    let lib = search(&env, &repo, "nfs storage mount");
    assert!(lib["results"].as_array().unwrap().len() >= 5, "{lib}");
}
