//! `cairn why TEXT|ID`: a real Claude Code transcript ingested and observed, then followed back
//! from an observation's id and from its text; texts the gate discarded; a merged duplicate; the
//! events that supersede, stale, delete and restore an observation.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// A copy of a real transcript fixture in the test's folder (so that it can be removed).
fn transcript(env: &Env, name: &str) -> PathBuf {
    let from = fixtures().join("sessions/claude-code").join(name);
    let to = env.path().join("transcripts").join(name);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&from, &to).unwrap();
    to
}

/// A repository with `name` ingested and observed by the built-in observer; the observations.
fn observed(name: &str) -> (Env, PathBuf, PathBuf, Vec<Value>) {
    let (env, repo) = Env::repo();
    let t = transcript(&env, name);
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let data = env
        .cairn_in(
            &repo,
            &["--json", "observe", "--all", "--observer", "builtin"],
        )
        .code(0)
        .data();
    let obs = data["observations"].as_array().unwrap().clone();
    (env, repo, t, obs)
}

fn by_text<'a>(obs: &'a [Value], text: &str) -> &'a Value {
    obs.iter()
        .find(|o| o["observation"] == text)
        .unwrap_or_else(|| panic!("no observation {text:?} in {obs:?}"))
}

const SESSION: &str = "624a4a58-b34c-462d-a70d-13421c8125a8";

#[test]
fn why_follows_an_observation_back_to_its_turn_and_forward_to_its_rank() {
    let (env, repo, t, obs) = observed("session-624a4a58.jsonl");
    let o = by_text(&obs, "don't overcomplicate");
    let id = o["id"].as_str().unwrap();
    let card = o["source"].as_str().unwrap();
    assert!(card.starts_with("tc-"), "{o}");

    for target in [id, "don't overcomplicate", "DON'T OVERCOMPLICATE"] {
        let run = env
            .cairn_in(
                &repo,
                &[
                    "--json",
                    "why",
                    target,
                    "--query",
                    "overcomplicate the notes",
                ],
            )
            .code(0);
        let trace = run.data()["trace"].clone();
        let found = &trace["found"][0];
        assert_eq!(found["id"], id, "{trace}");
        let how = if target == id { "id" } else { "exact" };
        assert_eq!(found["how"], how, "{trace}");

        let c = trace["cards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == card)
            .unwrap_or_else(|| panic!("the observation's card is traced: {trace}"));
        assert_eq!(c["session"], SESSION);
        assert_eq!(c["agent"], "claude");
        assert_eq!(c["turn"], 11, "the fixture's 11th prompt says it");
        assert_eq!(c["transcripts"][0]["path"], t.to_str().unwrap());
        assert_eq!(c["transcripts"][0]["exists"], true);
        assert_eq!(c["observed"][0]["observer"], "builtin");
        assert!(
            c["extracted"].as_array().unwrap().iter().any(|x| x == id),
            "{c}"
        );

        let ob = &trace["observations"][0];
        assert_eq!(ob["id"], id);
        assert_eq!(ob["card"], card);
        assert_eq!(ob["gate"]["verdict"], "allow");
        assert_eq!(ob["gate"]["rule"], "as proposed");
        assert_eq!(ob["gate"]["from"], "re-run");
        assert_eq!(ob["category"], o["category_id"]);
        assert_eq!(ob["category"], "rules-conventions");
        assert_eq!(ob["state"], "active");
        assert_eq!(ob["score"]["kind"], "observation");
        let q = &ob["query"];
        assert_eq!(q["standing"]["standing"], "ranked", "{q}");
        let rank = q["standing"]["rank"].as_u64().unwrap();
        let limit = q["standing"]["limit"].as_u64().unwrap();
        assert!(rank >= 1 && rank <= q["standing"]["relevant"].as_u64().unwrap());
        assert_eq!(q["recalled"], rank <= limit, "{q}");
    }

    // For a person: each step a line.
    let run = env
        .cairn_in(&repo, &["why", id, "--query", "overcomplicate the notes"])
        .code(0);
    for want in [
        &format!("turn card {card}"),
        &format!("claude session {SESSION}, turn 11"),
        "(still there)",
        "observer: builtin read it",
        &format!("extracted: {id}"),
        "gate: allow",
        "named by re-running the rules",
        "category: rules-conventions",
        "score now: decay",
        "query \"overcomplicate the notes\": rank ",
    ] {
        assert!(
            run.stdout.contains(want),
            "{want:?} not in:\n{}",
            run.stdout
        );
    }

    // The recall the rank speaks of recalls it exactly when why says it does.
    let ranked = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "why",
                id,
                "--query",
                "overcomplicate the notes",
                "--profile",
                "deep",
            ],
        )
        .code(0)
        .data();
    let q = &ranked["trace"]["observations"][0]["query"];
    let recalled = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "recall",
                "overcomplicate the notes",
                "--profile",
                "deep",
            ],
        )
        .data();
    let ids: Vec<&str> = recalled["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(q["recalled"], ids.contains(&id), "{q} vs {ids:?}");
    if q["recalled"] == true {
        let rank = q["standing"]["rank"].as_u64().unwrap() as usize;
        assert_eq!(ids[rank - 1], id, "why's rank is recall's: {ids:?}");
    }

    // The transcript removed: said so.
    std::fs::remove_file(&t).unwrap();
    env.cairn_in(&repo, &["why", id])
        .code(0)
        .stdout_has("(gone)");
}

#[test]
fn a_query_sharing_no_word_is_explained() {
    let (env, repo, _, obs) = observed("session-624a4a58.jsonl");
    let id = by_text(&obs, "don't overcomplicate")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let data = env
        .cairn_in(&repo, &["--json", "why", &id, "--query", "zebra migration"])
        .code(0)
        .data();
    let q = &data["trace"]["observations"][0]["query"];
    assert_eq!(q["recalled"], false, "{q}");
    let why_not = q["why_not"][0].as_str().unwrap();
    assert!(
        why_not.contains("no word in common") || why_not.contains("not among the first"),
        "{why_not}"
    );
}

#[test]
fn a_prompt_the_observer_left_and_the_gate_discards_is_explained() {
    // "what else?" is the third prompt of a real Claude Code session: too short to keep.
    let (env, repo, _, _) = observed("session-9eda1058.jsonl");
    let run = env
        .cairn_in(&repo, &["--json", "why", "what else?"])
        .code(0);
    let trace = run.data()["trace"].clone();
    assert_eq!(trace["gate"]["verdict"], "discard", "{trace}");
    assert_eq!(trace["gate"]["rule"], "too short");
    let card = trace["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["turn"] == 3 && c["asked"] == "what else?")
        .unwrap_or_else(|| panic!("the turn's card: {trace}"));
    assert_eq!(card["observed"][0]["observer"], "builtin");
    assert_eq!(card["extracted"].as_array().unwrap().len(), 0);
    env.cairn_in(&repo, &["why", "what else?"])
        .code(0)
        .stdout_has("extracted: nothing from this turn")
        .stdout_has("gate, on this text as given: discard")
        .stdout_has("shorter than 12 characters");
}

#[test]
fn a_remembered_text_the_gate_discarded_is_found_nowhere_and_the_rule_named() {
    let (env, repo) = Env::repo();
    env.cairn_in(&repo, &["remember", "use tabs"])
        .code(1)
        .stdout_has("discarded");
    let run = env.cairn_in(&repo, &["--json", "why", "use tabs"]).code(1);
    let v = run.json();
    assert_eq!(v["data"]["trace"]["gate"]["verdict"], "discard");
    assert_eq!(v["data"]["trace"]["gate"]["rule"], "too short");
    let next: Vec<&str> = v["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["command"].as_str().unwrap())
        .collect();
    assert!(
        next.iter().any(|c| c.starts_with("cairn search --exact")),
        "{next:?}"
    );
    assert!(next.contains(&"cairn stats --since 7d"), "{next:?}");
    env.cairn_in(&repo, &["why", "use tabs"])
        .code(1)
        .stdout_has("discard")
        .stdout_has("shorter than 12 characters")
        .stderr_has("nothing holds \"use tabs\"");
    // An id that nothing holds.
    env.cairn_in(&repo, &["why", "ob-0123456789abcdef"]).code(1);
}

#[test]
fn a_merged_duplicate_names_what_it_merged_into() {
    let (env, repo) = Env::repo();
    let first = "The billing worker deploys with the blue-green script in ops/deploy.sh";
    let again = "the billing worker deploys with the blue green script in ops/deploy.sh!";
    let kept = env
        .cairn_in(&repo, &["--json", "remember", first])
        .code(0)
        .data();
    let into = kept["id"].as_str().unwrap_or_default().to_string();
    let merged = env.cairn_in(&repo, &["remember", again]).code(0).stdout;
    assert!(merged.contains("merged"), "{merged}");
    let data = env
        .cairn_in(&repo, &["--json", "why", again])
        .code(0)
        .data();
    let m = &data["trace"]["merged_away"][0];
    assert_eq!(m["into"], into, "{data}");
    let from = m["from"].as_str().unwrap().to_string();
    assert_eq!(data["trace"]["observations"][0]["id"], into);
    assert_eq!(data["trace"]["observations"][0]["merged_count"], 2);
    // The id it would have had, looked up: never stored, merged.
    env.cairn_in(&repo, &["why", &from])
        .code(0)
        .stdout_has(&format!("{from} was never stored: merged into {into}"));
}

/// Appends event lines to today's observations file, as `cairn maintain` writes them.
fn append_events(repo: &Path, lines: &[String]) {
    let dir = repo.join("vault/observations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let path = files.last().unwrap();
    let mut text = std::fs::read_to_string(path).unwrap();
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn supersede_stale_delete_and_restore_events_are_named_with_their_times() {
    let (env, repo) = Env::repo();
    let old = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "remember",
                "The staging database runs on postgres 14",
            ],
        )
        .code(0)
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let new = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "remember",
                "Redis keeps the session cache for the shop",
            ],
        )
        .code(0)
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    append_events(
        &repo,
        &[
            format!(
                r#"{{"op":"supersede","id":"{old}","ts":"2026-11-20T10:00:00.000Z","by":"{new}"}}"#
            ),
            format!(r#"{{"op":"stale","id":"{old}","ts":"2026-11-21T10:00:00.000Z"}}"#),
            format!(r#"{{"op":"delete","id":"{old}","ts":"2026-11-22T10:00:00.000Z"}}"#),
        ],
    );
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "why",
                &old,
                "--query",
                "staging database postgres",
            ],
        )
        .code(0)
        .data();
    let o = &data["trace"]["observations"][0];
    assert_eq!(o["state"], "deleted", "{o}");
    assert_eq!(o["superseded_by"], new.as_str());
    let ops: Vec<(&str, &str)> = o["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["op"].as_str().unwrap(), e["ts"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops,
        [
            ("supersede", "2026-11-20T10:00:00.000Z"),
            ("stale", "2026-11-21T10:00:00.000Z"),
            ("delete", "2026-11-22T10:00:00.000Z"),
        ]
    );
    let why_not = o["query"]["why_not"].as_array().unwrap();
    assert!(
        why_not[0].as_str().unwrap().starts_with("deleted"),
        "{why_not:?}"
    );
    env.cairn_in(&repo, &["why", &old])
        .code(0)
        .stdout_has(&format!("state: deleted, superseded by {new}"))
        .stdout_has(&format!(
            "event: supersede by {new} at 2026-11-20T10:00:00.000Z"
        ))
        .stdout_has("event: stale at 2026-11-21T10:00:00.000Z")
        .stdout_has("event: delete at 2026-11-22T10:00:00.000Z");

    // Restored: active again, recalled for its words, the stale factor gone.
    append_events(
        &repo,
        &[format!(
            r#"{{"op":"restore","id":"{old}","ts":"2026-11-23T10:00:00.000Z"}}"#
        )],
    );
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "why",
                &old,
                "--query",
                "staging database postgres",
            ],
        )
        .code(0)
        .data();
    let o = &data["trace"]["observations"][0];
    assert_eq!(o["state"], "active");
    assert_eq!(o["events"].as_array().unwrap().len(), 4);
    assert_eq!(o["score"]["stale_factor"], 1.0);
    assert_eq!(o["query"]["recalled"], true, "{o}");
    assert_eq!(o["query"]["standing"]["rank"], 1);
}

#[test]
fn a_held_observation_ranks_with_its_hold_named() {
    let (env, repo) = Env::repo();
    let id = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "remember",
                "--hold",
                "The user seems to like short answers",
            ],
        )
        .code(0)
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let data = env
        .cairn_in(&repo, &["--json", "why", &id, "--query", "short answers"])
        .code(0)
        .data();
    let q = &data["trace"]["observations"][0]["query"];
    assert_eq!(q["recalled"], false);
    assert!(
        q["why_not"][0]
            .as_str()
            .unwrap()
            .starts_with("held by the gate"),
        "{q}"
    );
    assert_eq!(
        q["standing"]["rank"], 1,
        "ranked as --include-hold would: {q}"
    );
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "why",
                &id,
                "--query",
                "short answers",
                "--include-hold",
            ],
        )
        .code(0)
        .data();
    assert_eq!(data["trace"]["observations"][0]["query"]["recalled"], true);
}

#[test]
fn the_proposals_citing_an_observation_and_its_memory_entry_are_named() {
    let (env, repo) = Env::repo();
    let rule = "Never force-push to the main branch of the shop repository";
    let chore = "Releases are tagged from the main branch only";
    let mut ids = Vec::new();
    for text in [rule, chore] {
        let data = env
            .cairn_in(&repo, &["--json", "remember", text])
            .code(0)
            .data();
        ids.push(data["id"].as_str().unwrap().to_string());
    }
    let proposed = env.cairn_in(&repo, &["--json", "reflect"]).code(0).data();
    let proposal_of = |ob: &str| {
        proposed["proposals"]
            .as_array()
            .unwrap_or_else(|| panic!("{proposed}"))
            .iter()
            .find(|p| {
                p["observations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|o| o == ob)
            })
            .unwrap_or_else(|| panic!("a proposal cites {ob}: {proposed}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (promote, reject) = (proposal_of(&ids[0]), proposal_of(&ids[1]));
    env.cairn_in(&repo, &["review", "--approve", &promote])
        .code(0);
    env.cairn_in(
        &repo,
        &["review", "--reject", &reject, "--why", "a person's chore"],
    )
    .code(0);

    let o = &env
        .cairn_in(&repo, &["--json", "why", &ids[0]])
        .code(0)
        .data()["trace"]["observations"][0];
    assert_eq!(o["proposals"][0]["id"], promote.as_str());
    assert_eq!(o["proposals"][0]["state"], "promoted");
    assert_eq!(o["proposals"][0]["tier"], "human");
    assert_eq!(o["memory"][0]["text"], rule, "{o}");
    let line = o["memory"][0]["line"].as_u64().unwrap() as usize;
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.lines().nth(line - 1).unwrap().contains(rule),
        "{memory}"
    );

    // A proposal looked up by its id: its decision, and the observation it cites traced.
    env.cairn_in(&repo, &["why", &reject])
        .code(0)
        .stdout_has("rejected by human: a person's chore")
        .stdout_has(&format!("observation {}", ids[1]));
}

const NOW: &str = "2026-12-01T12:00:00Z";
/// [`NOW`] as cairn writes a time.
const NOW_WRITTEN: &str = "2026-12-01T12:00:00.000Z";

#[test]
fn why_says_where_a_note_came_from_and_a_hand_edit_shows() {
    let (env, repo) = Env::repo();
    let url = "http://127.0.0.1:9/nfs-locking";
    let data = env
        .cairn_in(
            &repo,
            &[
                "--now",
                NOW,
                "--json",
                "note",
                url,
                "--offline",
                "--context",
                "why the quokka mounts hang",
                "--tags",
                "nfs",
                "--session",
                SESSION,
            ],
        )
        .code(0)
        .data();
    let id = data["id"].as_str().unwrap().to_string();
    let rel = data["path"].as_str().unwrap().to_string();
    let why = |target: &str| {
        env.cairn_in(&repo, &["--now", NOW, "--json", "why", target])
            .code(0)
            .data()["trace"]
            .clone()
    };
    let t = why(&id);
    assert_eq!(t["by"], "id", "{t}");
    assert_eq!(t["found"][0]["kind"], "note");
    let n = &t["note"];
    assert_eq!(n["at"], rel.as_str());
    assert_eq!(n["url"], url);
    assert_eq!(n["captured"], NOW_WRITTEN);
    assert_eq!(n["session"], SESSION);
    assert_eq!(n["relevance"], "why the quokka mounts hang");
    assert_eq!(n["tags"], serde_json::json!(["nfs"]));
    let added = &n["added_in"];
    assert!(
        added["subject"].as_str().unwrap().starts_with("note: "),
        "{added}"
    );
    let head = env.git(&repo, &["rev-parse", "--short=8", "HEAD"]);
    assert_eq!(added["commit"], head.trim());
    assert!(n.get("changed_in").is_none(), "{n}");
    assert_eq!(n["uncommitted"], false);
    assert_eq!(n["score"]["kind"], "note");
    assert_eq!(n["score"]["indexed"], true);
    assert!(n["score"]["rate"].as_f64().unwrap() > 0.0, "notes decay");
    // By its path too, the same trace.
    assert_eq!(why(&rel)["note"]["id"], id.as_str());

    // Edited by hand and committed with git: the last change is named; then edited again and
    // not committed.
    let text = read(&repo, &rel);
    std::fs::write(repo.join(&rel), format!("{text}\nRemount with nolock.\n")).unwrap();
    env.git(&repo, &["commit", "-qam", "note: remount advice"]);
    let n = why(&id)["note"].clone();
    assert_eq!(n["added_in"], *added);
    assert_eq!(n["changed_in"]["subject"], "note: remount advice");
    std::fs::write(repo.join(&rel), format!("{text}\nNot yet.\n")).unwrap();
    assert_eq!(why(&id)["note"]["uncommitted"], true);
    let human = env
        .cairn_in(&repo, &["--now", NOW, "why", &id])
        .code(0)
        .stdout;
    for line in [
        format!("from: {url}"),
        format!("captured: {NOW_WRITTEN}, by session {SESSION}"),
        "why it mattered: why the quokka mounts hang".to_string(),
        "last changed in: ".to_string(),
        "edited and not committed".to_string(),
    ] {
        assert!(human.contains(&line), "{line}\n{human}");
    }
}

#[test]
fn why_cites_a_library_chunks_document_page_and_the_commit_that_added_it() {
    let (env, repo) = Env::repo();
    let file = env.path().join("manual.pdf");
    let pages = vec![
        vec!["Quokka manual".to_string(), "Read this first.".to_string()],
        vec![
            "Mounting".to_string(),
            "Mount the quokkafs volume with the nolock option.".to_string(),
        ],
    ];
    std::fs::write(&file, crate::pdfgen::pdf(&pages)).unwrap();
    env.cairn_in(
        &repo,
        &[
            "--now",
            NOW,
            "library",
            "add",
            file.to_str().unwrap(),
            "--tags",
            "ops",
        ],
    )
    .code(0);
    let hit = env
        .cairn_in(&repo, &["--json", "search", "--library", "quokkafs nolock"])
        .code(0)
        .data()["results"][0]
        .clone();
    let chunk = hit["id"].as_str().unwrap().to_string();
    let t = env
        .cairn_in(
            &repo,
            &[
                "--now",
                NOW,
                "--json",
                "why",
                &chunk,
                "--query",
                "quokkafs nolock",
            ],
        )
        .code(0)
        .data()["trace"]
        .clone();
    assert_eq!(t["by"], "id", "{t}");
    assert_eq!(t["found"][0]["kind"], "library");
    let l = &t["library"];
    assert_eq!(l["source"], file.to_str().unwrap());
    assert_eq!(l["format"], "pdf");
    assert_eq!(l["pages"], 2);
    assert_eq!(l["added"], NOW_WRITTEN);
    assert_eq!(l["tags"], serde_json::json!(["ops"]));
    assert_eq!(l["document_now"], "as read");
    assert_eq!(l["copied"], false);
    assert!(
        l["added_in"]["subject"]
            .as_str()
            .unwrap()
            .starts_with("library: add "),
        "{l}"
    );
    assert_eq!(l["chunk"]["id"], chunk.as_str());
    assert_eq!(l["chunk"]["page"], 2);
    assert_eq!(l["chunk"]["cite"], hit["cite"]["text"]);
    assert_eq!(
        l["chunk"]["score"]["rate"], 0.0,
        "the library does not decay"
    );
    assert_eq!(l["chunk"]["query"]["recalled"], true, "{l}");
    // The document by its path; changed on disk since it was read.
    std::fs::write(&file, crate::pdfgen::pdf(&pages[..1])).unwrap();
    let t = env
        .cairn_in(
            &repo,
            &["--now", NOW, "--json", "why", file.to_str().unwrap()],
        )
        .code(0)
        .data()["trace"]
        .clone();
    assert_eq!(t["library"]["document"], l["document"]);
    assert_eq!(t["library"]["document_now"], "changed since");
    assert!(t["library"].get("chunk").is_none());
    let human = env
        .cairn_in(&repo, &["--now", NOW, "why", &chunk])
        .code(0)
        .stdout;
    assert!(
        human.contains(&format!("from: {}", file.display())),
        "{human}"
    );
    assert!(human.contains("p. 2"), "{human}");
    assert!(human.contains("library does not decay"), "{human}");
}
