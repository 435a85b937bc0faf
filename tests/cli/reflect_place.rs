//! The built-in reflector on words no rule lists: an unknown tool's rule is kept and placed,
//! and a near-duplicate in another grammatical number replaces its entry (ADR 101).

use std::path::Path;

use serde_json::Value;

use crate::support::*;

fn remember(env: &Env, repo: &Path, text: &str) {
    env.cairn_in(repo, &["remember", text]).code(0);
}

fn proposals(env: &Env, repo: &Path) -> Vec<Value> {
    let data = env
        .cairn_in(repo, &["--json", "reflect", "--reflector", "builtin"])
        .code(0)
        .data();
    data["proposals"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_rule_about_a_tool_no_list_names_is_proposed_as_a_rule() {
    let (env, repo) = Env::repo();
    remember(
        &env,
        &repo,
        "Plots in the reports are drawn with seaborn, never with raw matplotlib",
    );
    let ps = proposals(&env, &repo);
    let p = ps
        .iter()
        .find(|p| p["text"].as_str().unwrap_or("").contains("seaborn"))
        .unwrap_or_else(|| panic!("the seaborn rule is proposed: {ps:?}"));
    assert_eq!(p["op"], "add", "{p}");
    assert_eq!(p["section"], "Rules and conventions", "{p}");
}

#[test]
fn a_friday_replaces_the_entry_about_fridays() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "rules-conventions",
            "Never merge on Fridays",
        ],
    )
    .code(0);
    remember(
        &env,
        &repo,
        "Never merge on a Friday or on the day before a holiday",
    );
    let ps = proposals(&env, &repo);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(ps[0]["op"], "replace", "{ps:?}");
    assert_eq!(ps[0]["section"], "Rules and conventions", "{ps:?}");
    let targets = ps[0]["targets"].to_string();
    assert!(targets.contains("Never merge on Fridays"), "{ps:?}");
}
