//! What a person's rejection in `cairn review` teaches (issue 32, point 6; ADR 105): the
//! observations the rejected proposal stood on leave the briefing, rank lower in recall (and
//! `--explain` says by how much) and are not proposed again; every decision commit carries
//! `Cairn-Observations` (point 7); and a `git revert` of a review commit leaves the proposal
//! pending again, consistent with MEMORY.md. Observations come from `cairn remember` and
//! proposals from the built-in reflector: the pipeline a user runs.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::review::inherit_pty;
use crate::support::*;

const NOW: &str = "2026-12-01T12:00:00Z";
const FRIDAYS: &str = "Never deploy on Fridays, releases are cut on Tuesdays";
const FMT: &str = "Always run cargo fmt before committing Rust code";

fn run(env: &Env, repo: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--now", NOW];
    all.extend_from_slice(args);
    env.cairn_in(repo, &all)
}

/// A repository with two remembered rules and the built-in reflector's proposal for each;
/// the ids of the pending proposals, in review's order, and the Fridays rule's proposal.
fn proposed() -> (Env, std::path::PathBuf, Vec<String>, Value) {
    let (env, repo) = Env::repo();
    for text in [FMT, FRIDAYS] {
        run(&env, &repo, &["remember", text]).code(0);
    }
    run(&env, &repo, &["reflect"]).code(0);
    let list = run(&env, &repo, &["review", "--list", "--json"])
        .code(0)
        .data();
    let proposals = list["proposals"].as_array().unwrap().clone();
    assert_eq!(proposals.len(), 2, "{list}");
    let ids = proposals
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    let fridays = proposals
        .into_iter()
        .find(|p| p["text"] == FRIDAYS)
        .expect("a proposal of the Fridays rule");
    (env, repo, ids, fridays)
}

fn brief(env: &Env, repo: &Path) -> String {
    run(env, repo, &["brief"]).code(0).stdout
}

/// The Fridays observation as `recall deploy fridays --json` ranks it.
fn recalled(env: &Env, repo: &Path, id: &str) -> Value {
    let data = run(env, repo, &["recall", "deploy", "fridays", "--json"])
        .code(0)
        .data();
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not recalled: {data}"))
}

fn pending(env: &Env, repo: &Path) -> Vec<String> {
    let data = run(env, repo, &["review", "--list", "--json"]).data();
    data["proposals"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| p["id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Rejects `id` at a real pseudo-terminal (skipping the others), as a person would.
fn reject_at_a_terminal(env: &Env, repo: &Path, ids: &[String], id: &str, why: &str) {
    use expectrl::{Eof, Expect, Session};
    let mut cmd = env.command(BIN, repo);
    cmd.args(["--now", NOW, "review"])
        .env("TERM", "xterm-256color");
    inherit_pty(&mut cmd);
    let mut p = Session::spawn(cmd).expect("spawn cairn review in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    let down = "\x1b[B";
    for (i, each) in ids.iter().enumerate() {
        p.expect(format!("proposal {} of {}", i + 1, ids.len()).as_str())
            .unwrap();
        p.expect("what now").unwrap();
        if each == id {
            p.send(format!("{down}{down}\r")).unwrap(); // reject
            p.expect("why reject it").unwrap();
            p.send(format!("{why}\r")).unwrap();
            p.expect(format!("rejected {id}").as_str()).unwrap();
        } else {
            p.send(format!("{down}{down}{down}\r")).unwrap(); // skip
        }
    }
    p.expect("0 approved, 0 edited, 1 rejected, 1 skipped; 1 proposal left")
        .unwrap();
    p.expect(Eof).unwrap();
}

#[test]
fn a_rejection_at_the_terminal_takes_its_observation_out_of_brief_recall_and_reflect() {
    let (env, repo, ids, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap().to_string();
    let ob = fridays["observations"][0].as_str().unwrap().to_string();
    assert!(brief(&env, &repo).contains(FRIDAYS), "briefed before");
    let before = recalled(&env, &repo, &ob);

    reject_at_a_terminal(&env, &repo, &ids, &pr, "not a rule for agents");

    // The commit carries every decision's trailers and the observation's reject event.
    let msg = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(
        msg.contains(&format!(
            "Cairn-Proposal: {pr}\nCairn-Observations: {ob}\nCairn-Tier: human\n\
             Cairn-Reason: not a rule for agents\n"
        )),
        "{msg}"
    );
    let changed = env.git(&repo, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(changed.contains("vault/observations/"), "{changed}");
    assert!(changed.contains("vault/proposals/"), "{changed}");
    assert_eq!(git_status(&env, &repo), "");

    // It leaves the briefing; the other rule stays.
    let briefed = brief(&env, &repo);
    assert!(!briefed.contains(FRIDAYS), "{briefed}");
    assert!(briefed.contains(FMT), "{briefed}");

    // It ranks lower in recall by the stale factor, and --explain says so and why.
    let after = recalled(&env, &repo, &ob);
    assert_eq!(after["status"], "rejected");
    let lost = before["score"].as_f64().unwrap() - after["score"].as_f64().unwrap();
    assert!((lost - 2f64.ln()).abs() < 1e-9, "{before} {after}");
    let explained = run(&env, &repo, &["recall", "deploy", "fridays", "--explain"])
        .code(0)
        .stdout;
    assert!(
        explained.contains(&format!(
            "rejected by a person in review (proposal {pr}): score ×0.5"
        )),
        "{explained}"
    );

    // Reflect proposes nothing from it again, from the mark or from the beginning.
    for args in [&["reflect"][..], &["reflect", "--since", "2020-01-01"]] {
        run(&env, &repo, args).code(0);
        let all = jsonl_lines(&repo.join("vault/proposals"));
        let citing: Vec<&Value> = all
            .iter()
            .filter(|l| l.get("event").is_none())
            .filter(|l| {
                l["observations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|o| o == &ob)
            })
            .collect();
        assert_eq!(
            citing.len(),
            1,
            "only the rejected one cites it: {citing:?}"
        );
    }

    // The same through the flags: the other proposal's observation leaves the briefing too.
    let other = ids.iter().find(|i| **i != pr).unwrap();
    run(
        &env,
        &repo,
        &["review", "--reject", other, "--why", "known"],
    )
    .code(0);
    let msg = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Cairn-Observations: ob-"), "{msg}");
    assert!(!brief(&env, &repo).contains(FMT));
}

#[test]
fn git_revert_of_a_reject_commit_leaves_the_proposal_pending_and_its_observation_briefed() {
    let (env, repo, _, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap();
    let ob = fridays["observations"][0].as_str().unwrap();
    run(
        &env,
        &repo,
        &["review", "--reject", pr, "--why", "not a rule"],
    )
    .code(0);
    assert!(!pending(&env, &repo).contains(&pr.to_string()));
    assert!(!brief(&env, &repo).contains(FRIDAYS));

    env.git(&repo, &["revert", "--no-edit", "HEAD"]);
    assert!(
        pending(&env, &repo).contains(&pr.to_string()),
        "pending again"
    );
    assert!(brief(&env, &repo).contains(FRIDAYS), "briefed again");
    assert_eq!(recalled(&env, &repo, ob)["status"], "active");
    run(&env, &repo, &["doctor"]).code(0);
}

#[test]
fn git_revert_of_an_accept_commit_leaves_the_proposal_pending_and_memory_without_it() {
    let (env, repo, _, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap();
    run(&env, &repo, &["review", "--approve", pr]).code(0);
    let msg = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Cairn-Observations: ob-"), "{msg}");
    assert!(read(&repo, "MEMORY.md").contains(FRIDAYS));
    assert!(!pending(&env, &repo).contains(&pr.to_string()));

    env.git(&repo, &["revert", "--no-edit", "HEAD"]);
    assert!(!read(&repo, "MEMORY.md").contains(FRIDAYS));
    assert!(
        pending(&env, &repo).contains(&pr.to_string()),
        "pending again"
    );
    // It can be decided again: approved, it is in MEMORY.md once.
    run(&env, &repo, &["review", "--approve", pr]).code(0);
    assert_eq!(read(&repo, "MEMORY.md").matches(FRIDAYS).count(), 1);
}

#[test]
fn doctor_makes_pending_again_a_decision_whose_revert_the_union_merge_left_half_done() {
    // The approval is not the last commit: git's union merge of the proposals file keeps the
    // decision's line (a later line touches it) while MEMORY.md's change is reverted.
    let (env, repo, ids, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap();
    let other = ids.iter().find(|i| *i != pr).unwrap();
    run(&env, &repo, &["review", "--approve", pr]).code(0);
    let approval = env.git(&repo, &["rev-parse", "HEAD"]);
    run(&env, &repo, &["review", "--reject", other, "--why", "no"]).code(0);
    env.git(&repo, &["revert", "--no-edit", approval.trim()]);
    assert!(!read(&repo, "MEMORY.md").contains(FRIDAYS));
    assert!(
        !pending(&env, &repo).contains(&pr.to_string()),
        "the kept line"
    );

    let short = &approval[..8];
    run(&env, &repo, &["doctor", "--dry-run"])
        .code(1)
        .stdout_has(&format!("reverts {short}, which approved proposal {pr}"))
        .stdout_has("`cairn doctor` makes it pending again");
    assert!(!pending(&env, &repo).contains(&pr.to_string()), "a dry run");
    run(&env, &repo, &["doctor"])
        .code(0)
        .stdout_has("repaired: vault/proposals/")
        .stdout_has("it is pending again: decide it with `cairn review`");
    assert_eq!(pending(&env, &repo), [pr.to_string()]);
    assert_eq!(git_status(&env, &repo), "");
    run(&env, &repo, &["doctor"]).code(0).stdout_has("all well");
    run(&env, &repo, &["review", "--approve", pr]).code(0);
    assert_eq!(read(&repo, "MEMORY.md").matches(FRIDAYS).count(), 1);
}

#[test]
fn doctor_makes_pending_again_a_rejection_whose_revert_kept_its_decision_line() {
    let (env, repo, ids, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap();
    let ob = fridays["observations"][0].as_str().unwrap();
    let other = ids.iter().find(|i| *i != pr).unwrap();
    run(&env, &repo, &["review", "--reject", pr, "--why", "no"]).code(0);
    let rejection = env.git(&repo, &["rev-parse", "HEAD"]);
    // A later decision appends to the proposals file, not to the observations file.
    run(&env, &repo, &["review", "--approve", other]).code(0);
    env.git(&repo, &["revert", "--no-edit", rejection.trim()]);
    // The observation's reject event went; the decision's line stayed.
    assert_eq!(recalled(&env, &repo, ob)["status"], "active");
    assert!(!pending(&env, &repo).contains(&pr.to_string()));
    run(&env, &repo, &["doctor"])
        .code(0)
        .stdout_has(&format!("which rejected proposal {pr}"));
    assert_eq!(pending(&env, &repo), [pr.to_string()]);
    assert_eq!(recalled(&env, &repo, ob)["status"], "active");
    assert!(brief(&env, &repo).contains(FRIDAYS));
}

#[test]
fn doctor_undoes_the_reject_mark_a_reverted_rejection_left_on_its_observation() {
    // After the rejection a remembered observation is appended to the same observations file:
    // the revert takes the decision's line away (pending again) but the union merge keeps the
    // observation's reject event.
    let (env, repo, _, fridays) = proposed();
    let pr = fridays["id"].as_str().unwrap();
    let ob = fridays["observations"][0].as_str().unwrap();
    run(&env, &repo, &["review", "--reject", pr, "--why", "no"]).code(0);
    let rejection = env.git(&repo, &["rev-parse", "HEAD"]);
    run(&env, &repo, &["remember", "Use RGB values in themes"]).code(0);
    env.git(&repo, &["revert", "--no-edit", rejection.trim()]);
    assert!(pending(&env, &repo).contains(&pr.to_string()));
    assert_eq!(
        recalled(&env, &repo, ob)["status"],
        "rejected",
        "the kept mark"
    );

    run(&env, &repo, &["doctor", "--dry-run"])
        .code(1)
        .stdout_has(&format!(
            "observation {ob} is marked rejected by proposal {pr}, which is no longer rejected"
        ));
    run(&env, &repo, &["doctor"])
        .code(0)
        .stdout_has("the mark is undone");
    assert_eq!(recalled(&env, &repo, ob)["status"], "active");
    assert!(brief(&env, &repo).contains(FRIDAYS));
    assert_eq!(git_status(&env, &repo), "");
    run(&env, &repo, &["doctor"]).code(0).stdout_has("all well");
}
