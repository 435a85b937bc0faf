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
            &[
                "sessions",
                "ingest",
                "--agent",
                "claude",
                f.to_str().unwrap(),
            ],
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

/// Issue 32, point 2: the README's own ADR, made without sections, could not be found by its
/// title (a record that is only its template was not indexed at all), and `status` counted
/// fewer ADRs than files without saying why.
#[test]
fn an_adr_is_found_by_its_title_and_tags_and_status_says_what_it_leaves_out() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "adr",
            "new",
            "Use tantivy for the index",
            "--tags",
            "index,search",
        ],
    )
    .code(0);
    for command in ["recall", "search"] {
        for query in ["tantivy", "search"] {
            let data = env
                .cairn_in(&repo, &["--json", command, query])
                .code(0)
                .data();
            assert_eq!(
                data["results"][0]["id"], "adr-1",
                "{command} {query}: {data}"
            );
        }
    }
    env.cairn_in(&repo, &["search", "proposed", "--kind", "adr"])
        .code(0)
        .stdout_has("Use tantivy for the index");
    // A record file that cannot be read is left out, and status says which.
    std::fs::write(
        repo.join("decisions/0002-broken.md"),
        "---\nnumber: 2\ntitle: [unclosed\n---\n\n# 2. Broken\n",
    )
    .unwrap();
    let run = env.cairn_in(&repo, &["status"]).code(0);
    assert!(
        run.stdout.contains(
            "adr 1 (2 files: decisions/0002-broken.md is not readable as a record, see `cairn adr lint`)"
        ),
        "{}",
        run.stdout
    );
    let data = env.cairn_in(&repo, &["--json", "status"]).code(0).data();
    assert_eq!(data["kinds"]["adr"], 1);
    assert_eq!(data["adr_files"]["files"], 2);
    assert_eq!(
        data["adr_files"]["unreadable"],
        serde_json::json!(["decisions/0002-broken.md"])
    );
}

/// `cairn remember TEXT`: the observation's data.
fn remember(env: &Env, repo: &std::path::Path, text: &str) -> serde_json::Value {
    env.cairn_in(repo, &["--json", "remember", text])
        .code(0)
        .data()
}

/// Issue 32, point 3: a MEMORY.md entry and the observation it came from were two results of
/// the same text. The entry is shown, its source once under it, by recall and search.
#[test]
fn an_entry_and_the_observation_it_came_from_are_one_result() {
    let (env, repo) = Env::repo();
    let obs = remember(&env, &repo, "Never deploy on Fridays")["id"]
        .as_str()
        .unwrap()
        .to_string();
    remember(&env, &repo, "deploy previews expire after a week");
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "operations",
            "Never deploy on Fridays",
        ],
    )
    .code(0);
    for command in ["recall", "search"] {
        let data = env
            .cairn_in(&repo, &["--json", command, "deploy", "fridays"])
            .code(0)
            .data();
        let results = data["results"].as_array().unwrap();
        let fridays: Vec<_> = results
            .iter()
            .filter(|r| r["text"] == "Never deploy on Fridays")
            .collect();
        assert_eq!(fridays.len(), 1, "{command}: {data}");
        assert_eq!(fridays[0]["kind"], "memory", "{data}");
        assert_eq!(fridays[0]["from"][0]["id"], obs.as_str(), "{data}");
        let run = env.cairn_in(&repo, &[command, "deploy", "fridays"]).code(0);
        assert_eq!(
            run.stdout.matches("Never deploy on Fridays").count(),
            1,
            "{}",
            run.stdout
        );
        assert_eq!(
            run.stdout
                .matches(&format!("↳ from observation {obs}"))
                .count(),
            1,
            "{}",
            run.stdout
        );
    }
}

/// Issue 32, point 4: `--explain` printed negative scores without saying what they mean;
/// `recall --help` listed kinds without `note` and `library`; `--help` sent users to a source
/// file for the JSON format.
#[test]
fn help_and_explain_say_what_they_mean() {
    let (env, repo) = Env::repo();
    for text in [
        "deploy caddy with the new certificates",
        "deploy previews expire after a week",
        "the deploy pipeline runs cargo test first",
        "deploy tokens live in the vault, never in the repo",
        "a deploy on friday broke billing once",
    ] {
        remember(&env, &repo, text);
    }
    let data = env
        .cairn_in(&repo, &["--json", "recall", "deploy", "caddy"])
        .code(0)
        .data();
    let scores: Vec<f64> = data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.iter().any(|s| *s < 0.0), "{scores:?}");
    let run = env
        .cairn_in(
            &repo,
            &["recall", "deploy", "caddy", "--explain", "--format", "text"],
        )
        .code(0);
    assert!(
        run.stdout.contains("a negative score is not a penalty"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("negative below it"), "{}", run.stdout);
    for command in ["recall", "search"] {
        let help = flat(&env.cairn_in(&repo, &[command, "--help"]).code(0).stdout);
        assert!(
            help.contains("slog, adr, memory, observation, card, episode, note, library"),
            "{help}"
        );
    }
    let help = flat(&env.cairn(&["--help"]).code(0).stdout);
    assert!(!help.contains("output.rs"), "{help}");
    assert!(help.contains("README, section \"Using it\""), "{help}");
}

/// Help text with its lines joined (clap wraps it to the terminal's width).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The chance cosine relevance compares meaning against (issue 34): measured once over the
/// vector store and kept beside it, for the store as it is; measured again when it changes.
#[test]
fn the_chance_cosine_is_kept_beside_the_store_until_the_store_changes() {
    let (env, repo) = transcripts_repo();
    let ids = |q: &str| -> Vec<String> {
        let run = env.cairn_in(&repo, &["--json", "recall", q]);
        run.data()["results"]
            .as_array()
            .map(|r| r.iter().map(|x| x["id"].to_string()).collect())
            .unwrap_or_default()
    };
    let kept = || -> (String, f64) {
        let dir = repo.join(".cairn/vectors");
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".chance"))
            .expect("the chance cosine kept beside the store");
        let text = std::fs::read_to_string(file).unwrap();
        let (key, value) = text.trim_end().split_once('\n').expect("key and value");
        (key.to_string(), value.parse().expect("a cosine"))
    };
    let first = ids("hook settings file");
    let (key, chance) = kept();
    assert!((-1.0..=1.0).contains(&chance), "{chance}");
    assert_eq!(
        ids("hook settings file"),
        first,
        "the kept figure ranks alike"
    );
    assert_eq!(kept().0, key, "read, not measured again");
    // A figure written under the same key is the one read: measuring again would replace it.
    let file = std::fs::read_dir(repo.join(".cairn/vectors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".chance"))
        .unwrap();
    let marked = format!("{key}\n0.123456789\n");
    std::fs::write(&file, &marked).unwrap();
    ids("hook settings file");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        marked,
        "the kept figure is read, not measured and written again"
    );
    std::fs::write(&file, format!("{key}\n{chance}\n")).unwrap();
    remember(
        &env,
        &repo,
        "the staging database moved to the new host in November",
    );
    ids("staging database host");
    assert_ne!(kept().0, key, "the store grew: measured again");
}
