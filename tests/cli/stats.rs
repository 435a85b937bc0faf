//! `cairn stats` for a person: records per ISO week as a chart with the time pinned, and
//! `--since` counting only its window (the gate's discards in and out of it).

use serde_json::Value;

use crate::support::*;

fn remember(env: &Env, repo: &std::path::Path, at: &str, text: &str, code: i32) {
    env.cairn_in(repo, &["--now", at, "remember", text])
        .code(code);
}

fn week<'a>(data: &'a Value, name: &str) -> &'a Value {
    data["weeks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["week"] == name)
        .unwrap_or_else(|| panic!("no week {name} in {data}"))
}

#[test]
fn stats_charts_the_weeks_up_to_now() {
    let (env, repo) = Env::repo();
    // 2026-11-03 is in ISO week 45, 2026-11-18 in 47, 2026-11-30 in 49.
    remember(
        &env,
        &repo,
        "2026-11-03T09:00:00Z",
        "The shop's API runs behind caddy on port 8443",
        0,
    );
    remember(
        &env,
        &repo,
        "2026-11-18T09:00:00Z",
        "Releases are tagged from the main branch only",
        0,
    );
    remember(
        &env,
        &repo,
        "2026-11-18T10:00:00Z",
        "The nightly backup goes to the NAS over rsync",
        0,
    );
    remember(
        &env,
        &repo,
        "2026-11-30T09:00:00Z",
        "Ana reviews every change to the billing code",
        0,
    );
    env.cairn_in(
        &repo,
        &["--now", "2026-11-19T09:00:00Z", "recall", "nightly backup"],
    )
    .code(0);
    // One proposal decided in week 49.
    let proposed = env
        .cairn_in(
            &repo,
            &["--json", "--now", "2026-11-30T10:00:00Z", "reflect"],
        )
        .code(0)
        .data();
    let first = proposed["proposals"][0]["id"].as_str().unwrap().to_string();
    env.cairn_in(
        &repo,
        &[
            "--now",
            "2026-11-30T11:00:00Z",
            "review",
            "--approve",
            &first,
        ],
    )
    .code(0);
    let data = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-12-01T12:00:00Z",
                "stats",
                "--weeks",
                "5",
            ],
        )
        .code(0)
        .data();
    let weeks: Vec<&str> = data["weeks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["week"].as_str().unwrap())
        .collect();
    assert_eq!(
        weeks,
        ["2026-W45", "2026-W46", "2026-W47", "2026-W48", "2026-W49"]
    );
    let obs: Vec<u64> = data["weeks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["observations"].as_u64().unwrap())
        .collect();
    assert_eq!(obs, [1, 0, 2, 0, 1]);
    assert!(
        week(&data, "2026-W47")["recalls"].as_u64().unwrap() >= 1,
        "{data}"
    );
    assert_eq!(week(&data, "2026-W49")["recalls"], 0);
    assert_eq!(week(&data, "2026-W49")["decided"], 1);
    assert_eq!(week(&data, "2026-W47")["decided"], 0);
    assert_eq!(week(&data, "2026-W45")["start"], "2026-11-02");
    let gate = &data["cost"]["gate"];
    assert_eq!(gate["runs"], 4, "{data}");

    let run = env
        .cairn_in(
            &repo,
            &["--now", "2026-12-01T12:00:00Z", "stats", "--weeks", "5"],
        )
        .code(0)
        .stdout_has("per ISO week, 2026-W45 to 2026-W49");
    let row = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{}", run.stdout))
            .to_string()
    };
    // The fullest week of a series has the full bar, half of it half.
    assert!(
        row("2026-W47").contains("██████████ 2"),
        "{}",
        row("2026-W47")
    );
    assert!(
        row("2026-W45").contains("█████      1"),
        "{}",
        row("2026-W45")
    );
    assert!(!row("2026-W46").contains('█'), "{}", row("2026-W46"));
    assert!(run.stdout.contains("cost per component"), "{}", run.stdout);
}

#[test]
fn since_counts_only_the_window() {
    let (env, repo) = Env::repo();
    // Discarded by the gate (too short): one before the window, two in it.
    remember(&env, &repo, "2026-11-10T09:00:00Z", "use tabs", 1);
    remember(&env, &repo, "2026-11-28T09:00:00Z", "ok thanks", 1);
    remember(&env, &repo, "2026-11-30T09:00:00Z", "no, later", 1);
    remember(
        &env,
        &repo,
        "2026-11-10T09:00:00Z",
        "The staging database runs on postgres 14",
        0,
    );
    remember(
        &env,
        &repo,
        "2026-11-29T09:00:00Z",
        "Ana reviews every change to the billing code",
        0,
    );
    let all = env
        .cairn_in(&repo, &["--json", "--now", "2026-12-01T12:00:00Z", "stats"])
        .code(0)
        .data();
    assert_eq!(all["discarded"]["total"], 3, "{all}");
    assert_eq!(all["observations"], 2);
    let week = env
        .cairn_in(
            &repo,
            &[
                "--json",
                "--now",
                "2026-12-01T12:00:00Z",
                "stats",
                "--since",
                "7d",
            ],
        )
        .code(0)
        .data();
    assert_eq!(week["discarded"]["total"], 2, "{week}");
    assert_eq!(week["discarded"]["by"]["gate remember"], 2);
    assert_eq!(week["observations"], 1);
    assert_eq!(week["cost"]["gate"]["runs"], 3);
    let weeks: Vec<&str> = week["weeks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["week"].as_str().unwrap())
        .collect();
    assert_eq!(weeks, ["2026-W48", "2026-W49"], "the weeks of the window");
    env.cairn_in(
        &repo,
        &["--now", "2026-12-01T12:00:00Z", "stats", "--since", "7d"],
    )
    .code(0)
    .stdout_has("discarded by the gate since 2026-11-24T12:00:00.000Z: 2");
}
