//! `cairn review`: the flags scripts and agents use, the briefing's note, and a person at a
//! real pseudo-terminal (expectrl) approving, editing (with a fake `$EDITOR`), rejecting and
//! skipping. Proposals are written as `cairn reflect` writes them: `Proposal` JSON lines in
//! `vault/proposals/DAY.jsonl`, committed, each with its ref `refs/cairn/proposals/<id>`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

pub(crate) const NOW: &str = "2026-12-01T12:00:00Z";
const DAY_FILE: &str = "vault/proposals/2026-12-01.jsonl";

/// A proposal line as `src/proposals` stores it.
fn proposal(
    id: &str,
    op: &str,
    section: &str,
    text: &str,
    targets: &[&str],
    obs: &[&str],
) -> Value {
    json!({
        "id": id, "op": op, "section": section, "text": text, "targets": targets,
        "rationale": format!("observed {} times", obs.len().max(1)),
        "observations": obs, "confidence": 0.7, "reflector": "builtin",
        "created": "2026-12-01T10:00:00Z",
    })
}

/// Appends `lines` to today's proposals file, commits it, and points each proposal's ref at
/// the new HEAD (the commit `cairn reflect` makes has MEMORY.md changed; review only deletes
/// the ref, so where it points does not matter here).
fn propose(env: &Env, repo: &Path, lines: &[Value]) {
    let path = repo.join(DAY_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    for l in lines {
        text.push_str(&format!("{l}\n"));
    }
    std::fs::write(&path, text).unwrap();
    env.git(repo, &["add", DAY_FILE]);
    env.git(repo, &["commit", "-q", "-m", "reflect: proposals"]);
    // A pending proposal has a ref; a decided one had its ref deleted.
    let decided: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "decision")
        .map(|l| &l["id"])
        .collect();
    for l in lines.iter().filter(|l| l.get("event").is_none()) {
        if decided.contains(&&l["id"]) {
            continue;
        }
        let id = l["id"].as_str().unwrap();
        env.git(
            repo,
            &["update-ref", &format!("refs/cairn/proposals/{id}"), "HEAD"],
        );
    }
}

/// The ids that have a proposal ref.
pub(crate) fn refs(env: &Env, repo: &Path) -> Vec<String> {
    env.git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/cairn/proposals/",
        ],
    )
    .lines()
    .map(|l| l.trim_start_matches("refs/cairn/proposals/").to_string())
    .collect()
}

/// A repository whose MEMORY.md holds two entries, committed.
pub(crate) fn with_memory() -> (Env, PathBuf) {
    let (env, repo) = Env::repo();
    for (section, text) in [
        ("Rules and conventions", "Never deploy on Fridays"),
        ("Operations", "NFS mounts need root to unmount"),
    ] {
        env.cairn_in(&repo, &["--now", NOW, "memory", "add", "-s", section, text])
            .code(0);
    }
    (env, repo)
}

fn review(env: &Env, repo: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--now", NOW, "review"];
    all.extend_from_slice(args);
    env.cairn_in(repo, &all)
}

/// The decision events of the proposals files, by proposal id.
fn decisions(repo: &Path) -> Vec<Value> {
    jsonl_lines(&repo.join("vault/proposals"))
        .into_iter()
        .filter(|l| l["event"] == "decision")
        .collect()
}

fn last_message(env: &Env, repo: &Path) -> String {
    env.git(repo, &["log", "-1", "--format=%B"])
}

pub(crate) fn commit_count(env: &Env, repo: &Path) -> usize {
    env.git(repo, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

const ADD: &str = "pr-a1a1000000000001";
const REPLACE: &str = "pr-b2b2000000000002";
const DECIDED: &str = "pr-c3c3000000000003";

pub(crate) fn three(env: &Env, repo: &Path) {
    propose(
        env,
        repo,
        &[
            proposal(
                ADD,
                "add",
                "Rules and conventions",
                "Run cargo fmt before each commit",
                &[],
                &["ob-1"],
            ),
            proposal(
                REPLACE,
                "replace",
                "Rules and conventions",
                "Never deploy on Fridays or before a holiday",
                &["Never deploy on Fridays"],
                &["ob-2", "ob-3"],
            ),
            proposal(
                DECIDED,
                "add",
                "Operations",
                "Already decided",
                &[],
                &["ob-4"],
            ),
            json!({"event": "decision", "id": DECIDED, "decision": "reject", "tier": "auto",
                "reason": "too short", "ts": "2026-12-01T10:30:00Z"}),
        ],
    );
}

#[test]
fn list_names_the_pending_proposals_only() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let run = review(&env, &repo, &["--list"]).code(0);
    assert!(
        run.stdout.contains(ADD) && run.stdout.contains(REPLACE),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains(DECIDED), "{}", run.stdout);
    let data = review(&env, &repo, &["--list", "--json"]).code(0).data();
    assert_eq!(data["pending"], 2);
    let ids: Vec<&str> = data["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ADD, REPLACE]);
    assert_eq!(
        data["proposals"][1]["targets"][0],
        "Never deploy on Fridays"
    );
}

#[test]
fn list_with_nothing_pending_exits_1_saying_so() {
    let (env, repo) = with_memory();
    review(&env, &repo, &["--list"])
        .code(1)
        .stderr_has("no proposals wait for review");
    let data = review(&env, &repo, &["--list", "--json"]).code(1).data();
    assert_eq!(data["pending"], 0);
}

#[test]
fn show_prints_the_change_and_a_diff_that_git_applies() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let run = review(&env, &repo, &["--show", "pr-b2"]).code(0);
    assert!(
        run.stdout
            .starts_with(&format!("proposal 2 of 2 · {REPLACE}\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("replace · Rules and conventions"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("why: observed 2 times"),
        "{}",
        run.stdout
    );
    // Not a terminal: no colours.
    assert!(!run.stdout.contains('\x1b'));
    let data = review(&env, &repo, &["--show", REPLACE, "--json"])
        .code(0)
        .data();
    let diff = data["diff"].as_str().unwrap();
    assert!(
        diff.contains("\n-- (2026-12-01) Never deploy on Fridays\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+- (2026-12-01) Never deploy on Fridays or before a holiday\n"),
        "{diff}"
    );
    std::fs::write(env.path().join("p.diff"), diff).unwrap();
    let patch = env.path().join("p.diff");
    env.git(&repo, &["apply", "--check", patch.to_str().unwrap()]);
    // Showing writes nothing.
    assert_eq!(git_status(&env, &repo), "");
}

#[test]
fn show_names_each_source_observation_with_its_session_and_turn() {
    let (env, repo) = Env::repo();
    // A real Codex transcript, ingested and observed by the built-in observer.
    let t = fixtures().join(
        "sessions/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    );
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let observed = env
        .cairn_in(
            &repo,
            &["--json", "observe", "--all", "--observer", "builtin"],
        )
        .code(0)
        .data();
    let obs: Vec<&Value> = observed["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["source"].as_str().unwrap_or("").starts_with("tc-"))
        .take(2)
        .collect();
    assert!(
        !obs.is_empty(),
        "the fixture yields observations from turns: {observed}"
    );
    let ids: Vec<&str> = obs.iter().map(|o| o["id"].as_str().unwrap()).collect();
    let mut cited = ids.clone();
    cited.push("ob-0000000000000000");
    propose(
        &env,
        &repo,
        &[proposal(
            ADD,
            "add",
            "Operations",
            "A lesson from that session",
            &[],
            &cited,
        )],
    );
    let data = review(&env, &repo, &["--show", ADD, "--json"])
        .code(0)
        .data();
    let sources = data["sources"].as_array().unwrap();
    assert_eq!(sources.len(), cited.len());
    let cards = jsonl_lines(&repo.join("vault/sessions/codex"));
    for (s, o) in sources.iter().zip(&obs) {
        assert_eq!(s["id"], o["id"]);
        assert_eq!(s["text"], o["observation"]);
        assert_eq!(s["card"], o["source"]);
        assert_eq!(s["agent"], "codex");
        // The session and the turn number of the card the observation came from.
        let card = cards.iter().find(|c| c["id"] == o["source"]).unwrap();
        assert_eq!(s["session"], card["session"], "{s}");
        assert_eq!(s["turn"], card["turn"], "{s}");
        assert!(s["turn"].as_u64().unwrap() >= 1);
    }
    assert_eq!(sources[cited.len() - 1]["text"], Value::Null);
    let run = review(&env, &repo, &["--show", ADD]).code(0);
    let turn = sources[0]["turn"].as_u64().unwrap();
    let session = sources[0]["session"].as_str().unwrap();
    run.stdout_has(&format!(
        "{} (codex session {session}, turn {turn}): ",
        ids[0]
    ))
    .stdout_has("ob-0000000000000000: not in vault/observations");
}

#[test]
fn approve_is_one_commit_with_the_trailers_and_deletes_the_ref() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let before = commit_count(&env, &repo);
    let data = review(&env, &repo, &["--approve", "pr-b2b2", "--json"])
        .code(0)
        .data();
    assert_eq!(data["approved"], true);
    assert_eq!(data["id"], REPLACE);
    assert_eq!(commit_count(&env, &repo), before + 1);
    assert_eq!(
        last_message(&env, &repo),
        format!(
            "review: replace in Rules and conventions: Never deploy on Fridays or before a holiday\n\n\
             Cairn-Proposal: {REPLACE}\nCairn-Observations: ob-2, ob-3\nCairn-Tier: human\n\n"
        )
    );
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.contains("- (2026-12-01) Never deploy on Fridays or before a holiday\n"),
        "{memory}"
    );
    assert!(!memory.contains("Never deploy on Fridays\n"), "{memory}");
    // The commit holds MEMORY.md and the decision; nothing is left in the working tree.
    let files = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files, format!("MEMORY.md\n{DAY_FILE}\n"));
    assert_eq!(git_status(&env, &repo), "");
    assert_eq!(refs(&env, &repo), [ADD]);
    let d = decisions(&repo);
    let last = d.last().unwrap();
    assert_eq!(last["id"], REPLACE);
    assert_eq!(last["decision"], "promote");
    assert_eq!(last["tier"], "human");
    // Decided: not pending any more, and not approved twice.
    review(&env, &repo, &["--approve", REPLACE])
        .code(2)
        .stderr_has("already decided (promoted by tier human)");
    assert_eq!(
        review(&env, &repo, &["--list", "--json"]).code(0).data()["pending"],
        1
    );
}

#[test]
fn approve_with_text_puts_that_text_in_memory_and_says_it_was_edited() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let data = review(
        &env,
        &repo,
        &[
            "--approve",
            ADD,
            "--text",
            "Run `cargo fmt`\nbefore committing",
            "--json",
        ],
    )
    .code(0)
    .data();
    assert_eq!(data["edited"], true);
    assert_eq!(data["text"], "Run `cargo fmt` before committing");
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.contains("- (2026-12-01) Run `cargo fmt` before committing\n"),
        "{memory}"
    );
    assert!(!memory.contains("before each commit"), "{memory}");
    let msg = last_message(&env, &repo);
    assert!(
        msg.starts_with(
            "review: add to Rules and conventions: Run `cargo fmt` before committing (edited)\n"
        ),
        "{msg}"
    );
    let last = decisions(&repo).pop().unwrap();
    assert_eq!(last["text"], "Run `cargo fmt` before committing");
    review(&env, &repo, &["--approve", REPLACE, "--text", "  "])
        .code(2)
        .stderr_has("the entry text is empty");
}

#[test]
fn reject_records_the_reason_in_one_commit_and_deletes_the_ref() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let memory = read(&repo, "MEMORY.md");
    let before = commit_count(&env, &repo);
    let data = review(
        &env,
        &repo,
        &[
            "--reject",
            "a1a1",
            "--why",
            "we use the CI for that",
            "--json",
        ],
    )
    .code(0)
    .data();
    assert_eq!(data["rejected"], true);
    assert_eq!(commit_count(&env, &repo), before + 1);
    let msg = last_message(&env, &repo);
    assert!(
        msg.starts_with(&format!(
            "review: reject {ADD}: Run cargo fmt before each commit\n"
        )),
        "{msg}"
    );
    assert!(
        msg.contains("Cairn-Tier: human\nCairn-Reason: we use the CI for that\n"),
        "{msg}"
    );
    assert_eq!(read(&repo, "MEMORY.md"), memory);
    let last = decisions(&repo).pop().unwrap();
    assert_eq!(
        (
            last["id"].as_str(),
            last["decision"].as_str(),
            last["reason"].as_str()
        ),
        (Some(ADD), Some("reject"), Some("we use the CI for that"))
    );
    assert_eq!(refs(&env, &repo), [REPLACE]);
    assert_eq!(git_status(&env, &repo), "");
    // --reject needs --why.
    review(&env, &repo, &["--reject", REPLACE]).code(2);
}

#[test]
fn an_unknown_id_is_not_found() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    for args in [
        vec!["--show", "pr-ffff"],
        vec!["--approve", "ffff"],
        vec!["--reject", "pr-ffff", "--why", "x"],
    ] {
        let mut a = args.clone();
        a.push("--json");
        let run = review(&env, &repo, &a).code(2);
        let v = run.json();
        assert_eq!(v["data"]["kind"], "not_found", "{args:?}");
        assert!(
            v["data"]["message"]
                .as_str()
                .unwrap()
                .contains("no proposal has the id")
        );
    }
    assert_eq!(decisions(&repo).len(), 1);
}

#[test]
fn an_ambiguous_prefix_names_the_proposals_it_begins() {
    let (env, repo) = with_memory();
    propose(
        &env,
        &repo,
        &[
            proposal(
                "pr-abcd000000000001",
                "add",
                "Operations",
                "First thing to know",
                &[],
                &["ob-1"],
            ),
            proposal(
                "pr-abce000000000002",
                "add",
                "Operations",
                "Second thing to know",
                &[],
                &["ob-2"],
            ),
        ],
    );
    let run = review(&env, &repo, &["--approve", "pr-abc"]).code(2);
    assert!(
        run.stderr.contains(
            "the id pr-abc is ambiguous: it begins pr-abcd000000000001, pr-abce000000000002"
        ),
        "{}",
        run.stderr
    );
    assert!(decisions(&repo).is_empty());
    review(&env, &repo, &["--approve", "abce"]).code(0);
}

#[test]
fn a_remove_whose_entry_was_deleted_by_hand_stays_pending_with_a_message() {
    let (env, repo) = with_memory();
    let remove = "pr-d4d4000000000004";
    propose(
        &env,
        &repo,
        &[proposal(
            remove,
            "remove",
            "Operations",
            "NFS mounts need root to unmount",
            &["NFS mounts need root to unmount"],
            &["ob-9"],
        )],
    );
    // The person deletes the entry by hand, without committing.
    let memory =
        read(&repo, "MEMORY.md").replace("- (2026-12-01) NFS mounts need root to unmount\n", "");
    std::fs::write(repo.join("MEMORY.md"), &memory).unwrap();
    let before = commit_count(&env, &repo);
    let run = review(&env, &repo, &["--approve", remove]).code(1);
    assert!(
        run.stderr.contains(&format!(
            "{remove} not approved: the entry \"NFS mounts need root to unmount\" is no longer in MEMORY.md"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("it stays pending"), "{}", run.stderr);
    let data = review(&env, &repo, &["--approve", remove, "--json"])
        .code(1)
        .data();
    assert_eq!(
        (data["approved"].as_bool(), data["pending"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(commit_count(&env, &repo), before);
    assert!(decisions(&repo).is_empty());
    assert_eq!(read(&repo, "MEMORY.md"), memory);
    assert_eq!(refs(&env, &repo), [remove]);
    review(&env, &repo, &["--show", remove])
        .code(0)
        .stdout_has("cannot apply: the entry");
    assert_eq!(
        review(&env, &repo, &["--list", "--json"]).code(0).data()["pending"],
        1
    );
}

#[test]
fn a_hand_edit_survives_approval_and_stays_uncommitted() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    // An uncommitted hand edit in another section.
    let memory = read(&repo, "MEMORY.md").replace(
        "- (2026-12-01) NFS mounts need root to unmount\n",
        "- (2026-12-01) NFS mounts need root to unmount\n- (2026-12-01) Written by hand, not committed\n",
    );
    std::fs::write(repo.join("MEMORY.md"), &memory).unwrap();
    review(&env, &repo, &["--approve", REPLACE]).code(0);
    let now = read(&repo, "MEMORY.md");
    assert!(
        now.contains("- (2026-12-01) Written by hand, not committed\n"),
        "{now}"
    );
    assert!(
        now.contains("- (2026-12-01) Never deploy on Fridays or before a holiday\n"),
        "{now}"
    );
    let committed = env.git(&repo, &["show", "HEAD:MEMORY.md"]);
    assert!(
        committed.contains("Never deploy on Fridays or before a holiday"),
        "{committed}"
    );
    assert!(!committed.contains("Written by hand"), "{committed}");
    assert_eq!(git_status(&env, &repo), " M MEMORY.md\n");
    assert_eq!(
        now,
        memory.replace(
            "Never deploy on Fridays\n",
            "Never deploy on Fridays or before a holiday\n"
        )
    );
}

#[test]
fn without_a_terminal_review_never_prompts_and_exits_2_naming_the_flags() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let run = review(&env, &repo, &[]).code(2);
    assert!(run.stderr.contains("not a terminal"), "{}", run.stderr);
    assert!(
        run.stderr.contains("`cairn review --list`, `--show ID`, `--approve ID [--text TEXT]` or `--reject ID --why TEXT`"),
        "{}",
        run.stderr
    );
    let v = review(&env, &repo, &["--json"]).code(2).json();
    assert_eq!(v["data"]["kind"], "bad_input");
    assert!(decisions(&repo).len() == 1 && refs(&env, &repo).len() == 2);
}

#[test]
fn brief_says_how_many_proposals_wait_for_review() {
    let (env, repo) = with_memory();
    let brief = env.cairn_in(&repo, &["--now", NOW, "brief"]).code(0);
    assert!(
        !brief.stdout.contains("wait for review"),
        "{}",
        brief.stdout
    );
    three(&env, &repo);
    env.cairn_in(&repo, &["--now", NOW, "brief"])
        .code(0)
        .stdout_has("2 memory proposals wait for review: `cairn review`");
    let data = env
        .cairn_in(&repo, &["--now", NOW, "brief", "--json"])
        .code(0)
        .data();
    assert_eq!(data["proposals_waiting"], 2);
    assert_eq!(
        data["proposals_note"],
        "2 memory proposals wait for review: `cairn review`"
    );
    review(&env, &repo, &["--reject", ADD, "--why", "no"]).code(0);
    env.cairn_in(&repo, &["--now", NOW, "brief"])
        .code(0)
        .stdout_has("1 memory proposal waits for review: `cairn review`");
}

/// A fake `$EDITOR` of this test's own: replaces the file's text with `text` (the comment
/// lines that follow it are kept, so the template is read as cairn writes it).
fn fake_editor(env: &Env, text: &str) -> PathBuf {
    let path = env.path().join("fake-editor.sh");
    std::fs::write(
        &path,
        format!("#!/bin/sh\n{{ printf '%s\\n' '{text}'; grep '^#' \"$1\"; }} > \"$1.new\" && mv \"$1.new\" \"$1\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The child's stdio is the pseudo-terminal the session opens (the support's commands read
/// from /dev/null, which would keep cairn from prompting).
pub(crate) fn inherit_pty(cmd: &mut std::process::Command) {
    use std::process::Stdio;
    cmd.stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
}

#[test]
fn a_person_approves_edits_rejects_and_skips_at_a_terminal() {
    use expectrl::{Eof, Expect, Session};

    let (env, repo) = with_memory();
    let ids = [
        "pr-e1e1000000000001",
        "pr-e2e2000000000002",
        "pr-e3e3000000000003",
        "pr-e4e4000000000004",
    ];
    propose(
        &env,
        &repo,
        &[
            proposal(
                ids[0],
                "add",
                "Rules and conventions",
                "Run cargo fmt before each commit",
                &[],
                &["ob-1"],
            ),
            proposal(
                ids[1],
                "add",
                "Rules and conventions",
                "Use tabs in Makefiles",
                &[],
                &["ob-2", "ob-3"],
            ),
            proposal(
                ids[2],
                "add",
                "Operations",
                "Deploy only on Tuesdays",
                &[],
                &["ob-4"],
            ),
            proposal(
                ids[3],
                "add",
                "Operations",
                "The office plant needs water",
                &[],
                &["ob-5"],
            ),
        ],
    );
    let editor = fake_editor(&env, "Makefiles need tabs, not spaces");
    let before = commit_count(&env, &repo);

    let mut cmd = env.command(BIN, &repo);
    cmd.args(["--now", NOW, "review"])
        .env("EDITOR", &editor)
        .env("VISUAL", &editor)
        .env("TERM", "xterm-256color");
    inherit_pty(&mut cmd);
    let mut p = Session::spawn(cmd).expect("spawn cairn review in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    let down = "\x1b[B";

    p.expect("proposal 1 of 4").unwrap();
    p.expect("Run cargo fmt before each commit").unwrap();
    p.expect("what now").unwrap();
    p.send("\r").unwrap(); // approve
    p.expect(format!("approved {}", ids[0]).as_str()).unwrap();

    p.expect("proposal 2 of 4").unwrap();
    p.expect("what now").unwrap();
    p.send(down).unwrap();
    p.send("\r").unwrap(); // edit: the fake editor writes the new text
    p.expect("text (edited): Makefiles need tabs, not spaces")
        .unwrap();
    p.expect("+- (2026-12-01) Makefiles need tabs, not spaces")
        .unwrap();
    p.expect("what now").unwrap();
    p.send("\r").unwrap(); // approve the edited text
    p.expect(format!("approved {}", ids[1]).as_str()).unwrap();

    p.expect("proposal 3 of 4").unwrap();
    p.expect("what now").unwrap();
    p.send(format!("{down}{down}\r")).unwrap(); // reject
    p.expect("why reject it").unwrap();
    p.send("not a rule of ours\r").unwrap();
    p.expect(format!("rejected {}", ids[2]).as_str()).unwrap();

    p.expect("proposal 4 of 4").unwrap();
    p.expect("what now").unwrap();
    p.send(format!("{down}{down}{down}\r")).unwrap(); // skip
    p.expect("1 approved, 1 edited, 1 rejected, 1 skipped; 1 proposal left")
        .unwrap();
    p.expect(Eof).unwrap();
    let status = p.get_process().wait().unwrap();
    assert_eq!(
        format!("{status:?}").rsplit(", ").next(),
        Some("0)"),
        "{status:?}"
    );

    // MEMORY.md holds exactly the approved and the edited texts.
    let memory = read(&repo, "MEMORY.md");
    assert!(
        memory.contains("- (2026-12-01) Run cargo fmt before each commit\n"),
        "{memory}"
    );
    assert!(
        memory.contains("- (2026-12-01) Makefiles need tabs, not spaces\n"),
        "{memory}"
    );
    for absent in ["Use tabs in Makefiles", "Tuesdays", "office plant"] {
        assert!(!memory.contains(absent), "{absent}: {memory}");
    }
    // One commit per decision, with the trailers.
    assert_eq!(commit_count(&env, &repo), before + 3);
    let log = env.git(&repo, &["log", "-3", "--format=%s%n%(trailers:only)--"]);
    assert_eq!(
        log,
        format!(
            "review: reject {}: Deploy only on Tuesdays\nCairn-Proposal: {}\nCairn-Observations: ob-4\nCairn-Tier: human\nCairn-Reason: not a rule of ours\n--\n\
             review: add to Rules and conventions: Makefiles need tabs, not spaces (edited)\nCairn-Proposal: {}\nCairn-Observations: ob-2, ob-3\nCairn-Tier: human\n--\n\
             review: add to Rules and conventions: Run cargo fmt before each commit\nCairn-Proposal: {}\nCairn-Observations: ob-1\nCairn-Tier: human\n--\n",
            ids[2], ids[2], ids[1], ids[0]
        )
    );
    assert_eq!(git_status(&env, &repo), "");
    // The rejected one is decided; the skipped one waits, its ref kept.
    let states: Vec<(String, String)> =
        review(&env, &repo, &["--list", "--json"]).code(0).data()["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap().to_string(),
                    p["state"].as_str().unwrap().to_string(),
                )
            })
            .collect();
    assert_eq!(states, [(ids[3].to_string(), "pending".to_string())]);
    let shown = review(&env, &repo, &["--show", ids[2], "--json"])
        .code(0)
        .data();
    assert_eq!(
        (shown["state"].as_str(), shown["reason"].as_str()),
        (Some("rejected"), Some("not a rule of ours"))
    );
    assert_eq!(refs(&env, &repo), [ids[3]]);
}

#[test]
fn quit_at_a_terminal_leaves_the_rest_pending() {
    use expectrl::{Eof, Expect, Session};

    let (env, repo) = with_memory();
    three(&env, &repo);
    let before = commit_count(&env, &repo);
    let mut cmd = env.command(BIN, &repo);
    cmd.args(["--now", NOW, "review"])
        .env("TERM", "xterm-256color");
    inherit_pty(&mut cmd);
    let mut p = Session::spawn(cmd).expect("spawn cairn review in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    p.expect("proposal 1 of 2").unwrap();
    p.expect("what now").unwrap();
    p.send("q").unwrap();
    p.expect("0 approved, 0 edited, 0 rejected, 0 skipped; 2 proposals left")
        .unwrap();
    p.expect(Eof).unwrap();
    assert_eq!(commit_count(&env, &repo), before);
    assert_eq!(refs(&env, &repo).len(), 2);
}

// Issue 11, done means: the shared fixture transcripts → ingest → observe → reflect → triage →
// review at a real terminal (approve, edit, reject, skip), offline; then the rejected one is
// not proposed again and the skipped one is still a ref that git shows.
#[test]
fn the_fixture_transcripts_become_memory_through_reflect_triage_and_review() {
    use expectrl::{Eof, Expect, Session};

    let (env, repo) = Env::repo();
    let sessions = fixtures().join("sessions");
    for agent in ["claude-code", "codex", "pi"] {
        let dir = sessions.join(agent);
        env.cairn_in(
            &repo,
            &["--now", NOW, "sessions", "ingest", dir.to_str().unwrap()],
        )
        .code(0);
    }
    env.cairn_in(&repo, &["--now", NOW, "observe", "--all"])
        .code(0);
    // The fixtures' prompts hold one rule worth a line (ADR 117: the rest is not proposed);
    // a person's own words make up the rest of a review session.
    for text in [
        "Bo owns the billing service",
        "Never mock the database in integration tests",
        "Use RGB values in themes, not RGB indices",
    ] {
        env.cairn_in(&repo, &["--now", NOW, "remember", text])
            .code(0);
    }
    let reflected = env
        .cairn_in(&repo, &["--json", "--now", NOW, "reflect"])
        .code(0)
        .data();
    let proposed = reflected["counts"]["proposed"].as_u64().unwrap();
    env.cairn_in(&repo, &["--now", NOW, "triage"]).code(0);
    let listed = env
        .cairn_in(&repo, &["--json", "review", "--list"])
        .code(0)
        .data();
    let pending: Vec<(String, String)> = listed["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        pending.len() >= 4 && pending.len() as u64 <= proposed,
        "{proposed} proposed, {} pending",
        pending.len()
    );
    let n = pending.len();
    let editor = fake_editor(&env, "Keep changes simple: no separate documents");
    let before = commit_count(&env, &repo);

    let mut cmd = env.command(BIN, &repo);
    cmd.args(["--now", NOW, "review"])
        .env("EDITOR", &editor)
        .env("VISUAL", &editor)
        .env("TERM", "xterm-256color");
    inherit_pty(&mut cmd);
    let mut p = Session::spawn(cmd).expect("spawn cairn review in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    let down = "\x1b[B";
    p.expect(format!("proposal 1 of {n}").as_str()).unwrap();
    p.expect("what now").unwrap();
    p.send("\r").unwrap(); // approve
    p.expect(format!("approved {}", pending[0].0).as_str())
        .unwrap();
    p.expect(format!("proposal 2 of {n}").as_str()).unwrap();
    p.expect("what now").unwrap();
    p.send(down).unwrap();
    p.send("\r").unwrap(); // edit
    p.expect("what now").unwrap();
    p.send("\r").unwrap(); // approve the edited text
    p.expect(format!("approved {}", pending[1].0).as_str())
        .unwrap();
    p.expect(format!("proposal 3 of {n}").as_str()).unwrap();
    p.expect("what now").unwrap();
    p.send(format!("{down}{down}\r")).unwrap(); // reject
    p.expect("why reject it").unwrap();
    p.send("not a standing rule\r").unwrap();
    p.expect(format!("rejected {}", pending[2].0).as_str())
        .unwrap();
    p.expect(format!("proposal 4 of {n}").as_str()).unwrap();
    p.expect("what now").unwrap();
    p.send(format!("{down}{down}{down}\r")).unwrap(); // skip
    if n > 4 {
        p.expect(format!("proposal 5 of {n}").as_str()).unwrap();
        p.expect("what now").unwrap();
        p.send("q").unwrap();
    }
    p.expect("1 approved, 1 edited, 1 rejected, 1 skipped")
        .unwrap();
    p.expect(Eof).unwrap();

    // MEMORY.md holds exactly the approved and the edited texts; one commit each, trailers.
    let memory = read(&repo, "MEMORY.md");
    let entry = |t: &str| format!("- (2026-12-01) {}", t.trim());
    assert!(memory.contains(&entry(&pending[0].1)), "{memory}");
    assert!(
        memory.contains(&entry("Keep changes simple: no separate documents")),
        "{memory}"
    );
    for (_, text) in &pending[1..] {
        assert!(!memory.contains(&entry(text)), "{text}: {memory}");
    }
    assert_eq!(commit_count(&env, &repo), before + 3);
    let log = env.git(
        &repo,
        &["log", "-3", "--format=%(trailers:key=Cairn-Tier,valueonly)"],
    );
    assert_eq!(log.matches("human").count(), 3, "{log}");
    let proposals_of = env.git(
        &repo,
        &[
            "log",
            "-3",
            "--format=%(trailers:key=Cairn-Proposal,valueonly)",
        ],
    );
    for (id, _) in &pending[..3] {
        assert!(proposals_of.contains(id.as_str()), "{id}: {proposals_of}");
    }

    // Reflecting again proposes nothing: the rejected one is not proposed again.
    let again = env
        .cairn_in(&repo, &["--json", "--now", NOW, "reflect"])
        .code(0)
        .data();
    assert_eq!(again["counts"]["proposed"], 0, "{again}");
    let state = env.cairn_in(&repo, &["--json", "review", "--show", &pending[2].0]);
    assert!(state.stdout.contains("rejected"), "{}", state.stdout);
    // The skipped one is still a commit on its ref that any git tool shows.
    let on_refs = env.git(
        &repo,
        &[
            "log",
            "--no-walk",
            "--format=%B",
            "--glob=refs/cairn/proposals/*",
        ],
    );
    assert!(on_refs.contains(pending[3].0.as_str()), "{on_refs}");
    let names = env.git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/cairn/proposals/",
        ],
    );
    assert!(names.contains(pending[3].0.as_str()), "{names}");
    for (id, _) in &pending[..3] {
        assert!(
            !names.contains(id.as_str()),
            "{id} decided but still a ref: {names}"
        );
    }
}

/// The journal's steps, in order: a kill at each one must end, after the command is run
/// again, as one uninterrupted run (ADR 31).
const JOURNAL_POINTS: [&str; 4] = [
    "journal-written",
    "journal-first-step",
    "journal-before-commit",
    "journal-before-refs",
];

/// What a repository's decisions left: MEMORY.md in the tree and in HEAD, every commit
/// message, the proposals file, the refs and `git status`.
fn outcome(env: &Env, repo: &Path) -> Vec<String> {
    vec![
        read(repo, "MEMORY.md"),
        env.git(repo, &["show", "HEAD:MEMORY.md"]),
        env.git(repo, &["log", "--format=%B"]),
        read(repo, DAY_FILE),
        refs(env, repo).join(" "),
        git_status(env, repo),
    ]
}

#[test]
fn an_approval_killed_at_any_step_is_finished_by_running_it_again() {
    let run = |failpoint: Option<&str>| {
        let (env, repo) = with_memory();
        three(&env, &repo);
        // The person's own uncommitted line stays theirs, whatever happens.
        let mut memory = read(&repo, "MEMORY.md");
        memory.push_str("\nA note of my own\n");
        std::fs::write(repo.join("MEMORY.md"), &memory).unwrap();
        if let Some(point) = failpoint {
            let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
            cmd.args(["--now", NOW, "review", "--approve", REPLACE])
                .env("CAIRN_FAILPOINT", point);
            assert!(!cmd.output().unwrap().status.success(), "{point} stops it");
            assert!(repo.join(".cairn/journal.json").exists(), "{point}");
        }
        let data = review(&env, &repo, &["--approve", REPLACE, "--json"])
            .code(0)
            .data();
        assert_eq!(data["approved"], true, "{failpoint:?}");
        assert_eq!(
            data["finished_interrupted"] == true,
            failpoint.is_some(),
            "{failpoint:?}"
        );
        assert!(!repo.join(".cairn/journal.json").exists());
        review(&env, &repo, &["--reject", ADD, "--why", "said elsewhere"]).code(0);
        outcome(&env, &repo)
    };
    let clean = run(None);
    assert!(clean[0].contains("A note of my own"));
    assert!(!clean[1].contains("A note of my own"), "{}", clean[1]);
    assert_eq!(clean[2].matches("Cairn-Tier: human").count(), 2);
    for point in JOURNAL_POINTS {
        assert_eq!(run(Some(point)), clean, "killed at {point}");
    }
}

#[test]
fn a_rejection_killed_before_its_commit_is_finished_by_the_next_decision() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
    cmd.args(["--now", NOW, "review", "--reject", ADD, "--why", "no"])
        .env("CAIRN_FAILPOINT", "journal-before-commit");
    assert!(!cmd.output().unwrap().status.success());
    // The event is written but not committed: the next decision commits it first, on its own.
    assert!(git_status(&env, &repo).contains(DAY_FILE));
    review(&env, &repo, &["--approve", REPLACE])
        .code(0)
        .stderr_has("finished an interrupted command's \"review: reject");
    let log = env.git(&repo, &["log", "-2", "--format=%s"]);
    assert!(log.starts_with("review: replace"), "{log}");
    assert!(
        log.lines().nth(1).unwrap().starts_with("review: reject"),
        "{log}"
    );
    assert_eq!(git_status(&env, &repo), "");
    assert!(refs(&env, &repo).is_empty());
    assert_eq!(decisions(&repo).len(), 3, "one event each, none twice");
}

#[test]
fn doctor_names_an_interrupted_approval_and_finishes_it() {
    let (env, repo) = with_memory();
    three(&env, &repo);
    let mut cmd = env.command(env!("CARGO_BIN_EXE_cairn"), &repo);
    cmd.args(["--now", NOW, "review", "--approve", ADD])
        .env("CAIRN_FAILPOINT", "journal-first-step");
    assert!(!cmd.output().unwrap().status.success());
    env.cairn_in(&repo, &["doctor", "--dry-run"])
        .code(1)
        .stderr_has("a decision was interrupted before its commit");
    env.cairn_in(&repo, &["doctor"])
        .code(0)
        .stderr_has("finished an interrupted command's \"review: add");
    assert_eq!(git_status(&env, &repo), "");
    assert!(read(&repo, "MEMORY.md").contains("Run cargo fmt before each commit"));
    assert_eq!(refs(&env, &repo), [REPLACE]);
    assert!(last_message(&env, &repo).contains(&format!("Cairn-Proposal: {ADD}")));
}

// The text a person gives in place of a proposal's is redacted before MEMORY.md, the
// decision event and the commit message hold it.
#[test]
fn a_secret_in_the_text_of_an_approval_never_reaches_the_repository() {
    let token = "ghp_6TT0rTBoRiuAz4T0PSdGKVVKyIlBszRddiiG";
    let (env, repo) = with_memory();
    three(&env, &repo);
    review(
        &env,
        &repo,
        &["--approve", ADD, "--text", &format!("Clone with {token}")],
    )
    .code(0);
    assert!(read(&repo, "MEMORY.md").contains("Clone with [REDACTED:"));
    let history = env.git(&repo, &["log", "-p", "--all", "--format=%B"]);
    assert!(!history.contains(token), "{history}");
    assert!(!read(&repo, DAY_FILE).contains(token));
}
