//! `cairn eval`: the figures it reports beside recall's quality.

use serde_json::Value;

use crate::support::*;

#[test]
fn eval_reports_the_time_per_question() {
    let env = Env::new();
    let file = locomo_file(env.path());
    let file = file.to_str().unwrap();
    let data = env
        .cairn(&["--json", "eval", "locomo", file])
        .code(0)
        .data();
    assert_eq!(data["questions"], 4);
    let time = &data["time"];
    assert_eq!(time["questions"], 4, "{time}");
    let (median, p95) = (
        time["median_ms"].as_f64().unwrap(),
        time["p95_ms"].as_f64().unwrap(),
    );
    assert!(median > 0.0 && p95 >= median, "{time}");
    env.cairn(&["eval", "locomo", file])
        .code(0)
        .stdout_has("time per question: median ")
        .stdout_has("(4 questions)");
}

#[test]
fn eval_names_the_settings_it_measured() {
    let env = Env::new();
    let file = locomo_file(env.path());
    let file = file.to_str().unwrap();
    let data = env
        .cairn(&[
            "--json",
            "eval",
            "locomo",
            file,
            "--diversity",
            "0.7",
            "--time-boost",
            "1.5",
        ])
        .code(0)
        .data();
    assert_eq!(data["diversity"].as_f64(), Some(0.7), "{data}");
    assert_eq!(data["time_boost"].as_f64(), Some(1.5), "{data}");
    assert_ne!(data["results"], Value::Null);
    env.cairn(&["eval", "locomo", file, "--diversity", "1.5"])
        .code(2)
        .stderr_has("--diversity");
}
