//! The built-in reflector scored on the labelled proposal sets in
//! `tests/fixtures/reflector/` (test only; see that folder's README for how the sets were made
//! and labelled). `cargo test --lib labelled_proposals -- --nocapture` prints the table.
//!
//! Each set is one JSON Lines file: a first line `{"memory": "..."}` (MEMORY.md as it stood),
//! then every observation the reflector read, as stored, with its label: `label` (`keep` or
//! `reject`), `why`, and for a keep the `section`, `op` (`add` or `replace`, with `target`) and
//! `text` a person would accept.
//!
//! Figures: precision is the share of proposals (what reaches a person) standing on a kept
//! observation; recall the share of kept observations some proposal cites; category accuracy
//! the share of recalled keeps proposed in their labelled section, and op accuracy with the
//! labelled op; clean the share of proposed texts that pass [`clean_line`], a check written
//! apart from the reflector's own cleaning.

use std::collections::HashMap;

use serde::Deserialize;

use super::Input;
use super::builtin::{Settings, reflect};
use crate::proposals::Op;
use crate::store::Observation;

#[derive(Deserialize)]
struct Labelled {
    #[serde(flatten)]
    obs: Observation,
    label: String,
    #[serde(default)]
    section: Option<String>,
    #[serde(default)]
    op: Option<String>,
}

/// The figures of one set.
#[derive(Debug, Default)]
struct Figures {
    observations: usize,
    keeps: usize,
    proposals: usize,
    good: usize,
    recalled: usize,
    right_section: usize,
    right_op: usize,
    clean: usize,
    noise: Vec<String>,
    missed: Vec<String>,
    misplaced: Vec<String>,
    unclean: Vec<String>,
    texts: Vec<String>,
}

impl Figures {
    fn precision(&self) -> f64 {
        ratio(self.good, self.proposals)
    }
    fn recall(&self) -> f64 {
        ratio(self.recalled, self.keeps)
    }
    fn category(&self) -> f64 {
        ratio(self.right_section, self.recalled)
    }
    fn op(&self) -> f64 {
        ratio(self.right_op, self.recalled)
    }
    fn clean_share(&self) -> f64 {
        ratio(self.clean, self.proposals)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Whether `text` is a clean MEMORY.md line, judged apart from the reflector's rules: at most
/// 200 characters, one line, no local home path, no redaction marker, no filler or profanity,
/// no question, and it opens like a sentence (a capital, a digit or a code span).
fn clean_line(text: &str) -> bool {
    const FILLER: &[&str] = &[
        "omfg",
        "fuck",
        "fucking",
        "shit",
        "shitty",
        "damn",
        "lol",
        "wtf",
        "ugh",
        "crap",
        "i suppose",
        "i guess",
        "please",
        "pls",
        "btw",
        "gonna",
    ];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let filler = FILLER.iter().any(|f| {
        if f.contains(' ') {
            lower.contains(f)
        } else {
            words.contains(f)
        }
    });
    let opens = text
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || c == '`');
    text.chars().count() <= 200
        && !text.contains('\n')
        && !text.contains("/Users/")
        && !text.contains("/home/")
        && !lower.contains("c:\\users\\")
        && !text.contains("[REDACTED")
        && !text.trim_end().ends_with('?')
        && !filler
        && opens
}

fn score(path: &str) -> Figures {
    let text = std::fs::read_to_string(path).expect("the labelled set is in tests/fixtures");
    let mut lines = text.lines();
    let head: serde_json::Value =
        serde_json::from_str(lines.next().expect("a memory line")).expect("the memory line");
    let memory = head["memory"].as_str().expect("memory").to_string();
    let labelled: Vec<Labelled> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a labelled observation"))
        .collect();
    let by_id: HashMap<&str, &Labelled> = labelled.iter().map(|l| (l.obs.id.as_str(), l)).collect();
    let input = Input {
        observations: labelled.iter().map(|l| l.obs.clone()).collect(),
        memory,
        ..Input::default()
    };
    let settings = Settings {
        said_cosine: 0.85,
        join_cosine: 0.8,
        budget_tokens: 3000,
        now: "2026-12-06T09:00:00Z".parse().expect("a time"),
    };
    let reflection = reflect(&input, &settings);
    let mut f = Figures {
        observations: labelled.len(),
        keeps: labelled.iter().filter(|l| l.label == "keep").count(),
        ..Figures::default()
    };
    let mut recalled: HashMap<&str, (bool, bool)> = HashMap::new();
    for p in reflection
        .proposals
        .iter()
        .filter(|p| matches!(p.op, Op::Add | Op::Replace))
    {
        f.proposals += 1;
        f.texts
            .push(format!("{} {} | {}", p.op.as_str(), p.section, p.text));
        if clean_line(&p.text) {
            f.clean += 1;
        } else {
            f.unclean.push(p.text.clone());
        }
        let keeps: Vec<&&Labelled> = p
            .observations
            .iter()
            .filter_map(|id| by_id.get(id.as_str()))
            .filter(|l| l.label == "keep")
            .collect();
        if keeps.is_empty() {
            f.noise.push(format!("{} | {}", p.section, p.text));
            continue;
        }
        f.good += 1;
        for l in keeps {
            let section = l.section.as_deref() == Some(p.section.as_str());
            let op = l.op.as_deref().unwrap_or("add") == p.op.as_str();
            if !section || !op {
                f.misplaced.push(format!(
                    "{} in {} (labelled {} in {}): {}",
                    p.op.as_str(),
                    p.section,
                    l.op.as_deref().unwrap_or("add"),
                    l.section.as_deref().unwrap_or("?"),
                    p.text
                ));
            }
            let e = recalled.entry(l.obs.id.as_str()).or_default();
            e.0 |= section;
            e.1 |= op;
        }
    }
    f.recalled = recalled.len();
    f.right_section = recalled.values().filter(|v| v.0).count();
    f.right_op = recalled.values().filter(|v| v.1).count();
    f.missed = labelled
        .iter()
        .filter(|l| l.label == "keep" && !recalled.contains_key(l.obs.id.as_str()))
        .map(|l| l.obs.observation.clone())
        .collect();
    f
}

fn print(name: &str, f: &Figures) {
    println!(
        "| {name} ({} observations, {} keeps) | {:.2} ({}/{}) | {:.2} ({}/{}) | {:.2} | {:.2} | {:.2} ({}/{}) |",
        f.observations,
        f.keeps,
        f.precision(),
        f.good,
        f.proposals,
        f.recall(),
        f.recalled,
        f.keeps,
        f.category(),
        f.op(),
        f.clean_share(),
        f.clean,
        f.proposals
    );
    if std::env::var_os("CAIRN_LABELLED_TEXTS").is_some() {
        for t in &f.texts {
            println!("    proposed: {t}");
        }
    }
    for n in &f.noise {
        println!("    noise: {n}");
    }
    for m in &f.missed {
        println!("    missed: {m}");
    }
    for m in &f.misplaced {
        println!("    misplaced: {m}");
    }
    for u in &f.unclean {
        println!("    unclean: {u}");
    }
}

#[test]
fn the_reflector_meets_its_targets_on_the_labelled_proposals() {
    println!("| set | precision | recall | category | op | clean |");
    println!("|---|---|---|---|---|---|");
    // Set C's figures are reported, never asserted, so that no rule is tuned to pass it (see
    // the README of the sets); set D was written and labelled before ADR 101's rules.
    for (name, file, held_out) in [
        ("A", "set-a.jsonl", false),
        ("B", "set-b.jsonl", false),
        ("C (seen once, report only)", "set-c.jsonl", true),
        ("D", "set-d.jsonl", false),
    ] {
        let path = format!(
            "{}/tests/fixtures/reflector/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        if !std::path::Path::new(&path).exists() {
            continue;
        }
        let f = score(&path);
        print(name, &f);
        if held_out {
            continue;
        }
        for (figure, value) in [
            ("precision", f.precision()),
            ("recall", f.recall()),
            ("category accuracy", f.category()),
        ] {
            assert!(value >= 0.8, "set {name}: {figure} {value:.2} below 0.8");
        }
        assert_eq!(
            f.clean, f.proposals,
            "set {name}: every proposed text is a clean line"
        );
    }
}

#[test]
fn the_clean_line_check_tells_the_issues_examples() {
    for dirty in [
        "omfg use fucking rgb values in the themes, no rgb indices!",
        "performance is crucial.",
        "the deploy token is [REDACTED:github-token] for CI",
        "`npm run check` failed in /Users/me/pi-mono",
        "you haven't read the renderer in full i suppose",
    ] {
        assert!(!clean_line(dirty), "{dirty}");
    }
    for clean in [
        "Use RGB values in themes, not RGB indices",
        "Bo owns the billing service",
        "`cargo fmt` runs before every commit",
    ] {
        assert!(clean_line(clean), "{clean}");
    }
}

#[test]
fn the_observers_labelled_rules_and_preferences_make_clean_lines() {
    // A recall check on wording written by others: every sentence the observer's labelled sets
    // (tests/fixtures/observer, heldout and fresh: written prompts) call a rule or a preference
    // must survive `clean::line` as a clean line. First contact: 23 of 30.
    let mut total = 0;
    let mut kept = 0;
    for f in ["heldout", "fresh"] {
        let path = format!(
            "{}/tests/fixtures/observer/{f}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("the observer's labelled set");
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(l).expect("a labelled prompt");
            if !matches!(v["label"].as_str(), Some("rule" | "preference")) {
                continue;
            }
            let sentence = v["sentence"]
                .as_str()
                .or(v["prompt"].as_str())
                .expect("a sentence");
            total += 1;
            match super::clean::line(sentence) {
                Ok(line) if clean_line(&line) => kept += 1,
                other => println!("    not kept: {sentence} => {other:?}"),
            }
        }
    }
    println!("observer's rules and preferences kept as clean lines: {kept} of {total}");
    assert!(kept as f64 >= 0.9 * total as f64, "{kept} of {total}");
}
