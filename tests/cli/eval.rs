//! `cairn eval`: the figures it reports beside recall's quality.

use serde_json::{Value, json};

use crate::support::*;

/// A small conversation in LoCoMo's shape (made up here: LoCoMo's licence keeps it out of the
/// repository).
fn locomo_file(env: &Env) -> std::path::PathBuf {
    let turn = |id: &str, speaker: &str, text: &str| json!({"speaker": speaker, "dia_id": id, "text": text});
    let data = json!([{
        "sample_id": "conv-made-up",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("D1:1", "Ana", "I restored the production database last night with WAL replay."),
                turn("D1:2", "Ben", "Nice, how long did that take?"),
                turn("D1:3", "Ana", "About forty minutes, mostly downloading the base backup."),
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                turn("D2:1", "Ana", "We moved the build hosts to the new NFS server."),
                turn("D2:2", "Ben", "I am training for a marathon in October."),
            ],
        },
        "qa": [
            {"question": "How long did Ana's database restore take?", "answer": "forty minutes", "evidence": ["D1:3"], "category": 1},
            {"question": "Where did the build hosts move?", "answer": "the NFS server", "evidence": ["D2:1"], "category": 4},
            {"question": "Which race is Ben preparing for?", "answer": "a marathon", "evidence": ["D2:2"], "category": 2},
        ],
    }]);
    let path = env.path().join("made-up-locomo.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&data).unwrap()).unwrap();
    path
}

#[test]
fn eval_reports_the_time_per_question() {
    let env = Env::new();
    let file = locomo_file(&env);
    let file = file.to_str().unwrap();
    let data = env
        .cairn(&["--json", "eval", "locomo", file])
        .code(0)
        .data();
    assert_eq!(data["questions"], 3);
    let time = &data["time"];
    assert_eq!(time["questions"], 3, "{time}");
    let (median, p95) = (
        time["median_ms"].as_f64().unwrap(),
        time["p95_ms"].as_f64().unwrap(),
    );
    assert!(median > 0.0 && p95 >= median, "{time}");
    env.cairn(&["eval", "locomo", file])
        .code(0)
        .stdout_has("time per question: median ")
        .stdout_has("(3 questions)");
}

#[test]
fn eval_names_the_settings_it_measured() {
    let env = Env::new();
    let file = locomo_file(&env);
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
