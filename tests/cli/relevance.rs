//! What recall and search keep (issue 32, points 1–4): nonsense on a store of real transcripts,
//! ADRs found by their title and tags, a MEMORY.md entry with its source, and help and
//! `--explain` that say what they mean.

use crate::support::*;

/// A repository holding the real Claude Code transcripts of the fixtures as turn cards.
fn transcripts_repo() -> (Env, std::path::PathBuf) {
    let (env, repo) = Env::repo();
    let dir = fixtures().join("sessions/claude-code");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for f in &files {
        env.cairn_in(
            &repo,
            &["sessions", "ingest", "--agent", "claude", f.to_str().unwrap()],
        )
        .code(0);
    }
    (env, repo)
}

/// Issue 32, point 1: on real transcripts `recall qwertyuiop` gave an unrelated turn card with
/// exit 0, kept for a cosine the small model gives nearly anything. A query none of whose
/// words occurs in the store finds nothing, exit 1, by recall and search alike; a query
/// whose words are there still finds them.
#[test]
fn a_query_of_words_the_store_never_holds_finds_nothing() {
    let (env, repo) = transcripts_repo();
    for query in ["qwertyuiop", "ACME", "123456", "zxcvbnm qwertyuiop"] {
        for command in ["recall", "search"] {
            let run = env.cairn_in(&repo, &["--json", command, query]).code(1);
            assert_eq!(
                run.data()["results"],
                serde_json::json!([]),
                "{command} {query}"
            );
            env.cairn_in(&repo, &[command, query])
                .code(1)
                .stderr_has("nothing relevant");
        }
    }
    // A word of the transcripts (an identifier) is found, by both.
    for command in ["recall", "search"] {
        let data = env
            .cairn_in(&repo, &["--json", command, "conversationId"])
            .code(0)
            .data();
        let results = data["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{command}: {data}");
        assert_eq!(results[0]["shares_word"], true, "{data}");
    }
}
