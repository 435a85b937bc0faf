//! The console in headless Chromium (tests/browser/run.mjs, playwright-core driving Debian's
//! chromium): search (the kind filter with notes and library) and open a turn (the turn the
//! link names, in view, after a forgotten turn), page earlier and later, a script in a transcript that
//! does not run, an ADR chain both ways (labels inside their boxes, no arrow through a label), MEMORY.md's history, the stats charts (values, the cards' bars,
//! `/favicon.ico`), the review page
//! without the token (no form, a post refused), the `/?token=` login, approve and reject from
//! the review page with their commits, and a non-loopback request without the token refused; at desktop and phone widths, with screenshots in
//! `target/browser-screenshots/`.
//!
//! It needs chromium and tests/browser/node_modules: `.ci/run` installs both and sets
//! `CAIRN_BROWSER_TESTS=required`, under which their absence fails the test, saying how to
//! install them. Without that variable (a fresh machine running the README's `cargo test`, with
//! no browser and no network for npm) it says on stderr that it did not run, and why.

use std::path::{Path, PathBuf};

use crate::serve::{hostile_transcript, with_proposals};
use crate::support::*;

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

#[test]
fn console_in_headless_chromium() {
    let install = "run .ci/run's install step: `apt-get install -y chromium nodejs npm && npm ci \
                   --prefix tests/browser`";
    let missing = if !chromium().exists() {
        Some(format!("no chromium at {}", chromium().display()))
    } else if !browser_dir().join("node_modules/playwright-core").exists() {
        Some("no tests/browser/node_modules/playwright-core".to_string())
    } else {
        None
    };
    if let Some(missing) = missing {
        let required = std::env::var_os("CAIRN_BROWSER_TESTS").is_some_and(|v| v == "required");
        assert!(!required, "{missing}: {install}");
        eprintln!("console_in_headless_chromium did NOT run: {missing}; to run it, {install}");
        return;
    }

    let (env, repo) = with_proposals();
    adr_new(
        &env,
        &repo,
        "Use NFS v4.2 with pNFS",
        &["--supersedes", "2"],
    );
    let hostile = hostile_transcript(&env);
    // Its turns made today (the fixture's are of 2026-01-11), so the stats page's cards chart
    // has this week's bar whenever the test runs.
    let today = chrono::Utc::now().format("%Y-%m-%dT").to_string();
    let text = std::fs::read_to_string(&hostile).unwrap();
    std::fs::write(&hostile, text.replace("2026-01-11T", &today)).unwrap();
    let long = fixtures().join("sessions/pi/before-compaction.jsonl");
    for t in [hostile.as_path(), long.as_path()] {
        env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
            .code(0);
    }
    let session = "vault/sessions/pi/ffae836b-9420-4060-ac13-7745215f90ff.jsonl";
    assert!(
        repo.join(session).exists(),
        "the pi fixture's session moved"
    );
    // A turn forgotten before the window the test pages: turns keep their numbers.
    let fifth = read(&repo, session)
        .lines()
        .find(|l| l.starts_with("{\"type\":\"card\"") && l.contains("\"turn\":5,"))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .expect("turn 5's card");
    env.cairn_in(&repo, &["forget", "--yes", &fifth]).code(0);

    let token_file = env.path().join("secret/token");
    let s = serve(
        &env,
        &repo,
        &[
            "--bind",
            "0.0.0.0",
            "--token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let port = s.url.rsplit(':').next().unwrap();
    let outside = format!("http://{}:{port}", crate::serve::outside_address());
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-screenshots");
    let out = std::process::Command::new("node")
        .arg(browser_dir().join("run.mjs"))
        .args([
            s.url.as_str(),
            outside.as_str(),
            shots.to_str().unwrap(),
            session,
            s.token.as_str(),
        ])
        .env("CHROMIUM", chromium())
        .output()
        .expect("run node: install nodejs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "browser tests failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("passed, 0 failed"), "{stdout}");

    // What the pages did is what `cairn review` does: one commit each, nothing waits.
    let log = env.git(&repo, &["log", "-2", "--format=%s%n%b"]);
    assert!(
        log.contains("p-0aaaaaaaaaaa") && log.contains("p-1aaaaaaaaaaa"),
        "{log}"
    );
    assert!(read(&repo, "MEMORY.md").contains("always pin crate versions"));
    let list = env.cairn_in(&repo, &["--json", "review", "--list"]).json();
    assert_eq!(list["data"]["pending"], 0);
    for size in ["desktop", "phone"] {
        for name in [
            "search",
            "turn",
            "paging",
            "decisions",
            "adr",
            "memory",
            "refused",
            "current",
            "stats",
        ] {
            let shot = shots.join(format!("{size}-{name}.png"));
            assert!(shot.exists(), "no screenshot {}", shot.display());
        }
    }
}
