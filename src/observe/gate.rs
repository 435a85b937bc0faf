//! The write gate: what may become a recallable observation.
//!
//! The caller's (or the observer's) verdict comes first; rules then override it:
//! text shorter than `min_chars` or an instruction-text artifact ("Add after…", "Replace…")
//! is discarded; an ADR reference, a file path or an explicit command moves the verdict toward
//! allow (hold becomes allow; an explicit discard stays). `allow` is recalled by default,
//! `hold` is stored but recalled only when asked, `discard` is dropped and counted.

pub use crate::store::verdict::Verdict;

/// The gate's decision and the rule that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub confidence: f64,
    pub reason: &'static str,
}

/// Openings of text that is an instruction to an editor, not a fact.
const ARTIFACTS: &[&str] = &[
    "add after",
    "add before",
    "replace ",
    "insert ",
    "delete line",
    "remove line",
    "change line",
    "update the following",
    "in the file above",
];

/// At least as many characters as the longest of [`ARTIFACTS`].
const ARTIFACT_CHARS: usize = 32;

/// Applies the rules to `text` given the proposed `verdict` and `confidence`.
pub fn decide(text: &str, verdict: Verdict, confidence: f64, min_chars: usize) -> Decision {
    let trimmed = text.trim();
    if trimmed.chars().count() < min_chars {
        return Decision {
            verdict: Verdict::Discard,
            confidence: 1.0,
            reason: "too short",
        };
    }
    // Only the text's start can begin with an artifact: lowered, each character gives one or
    // more, so the first ARTIFACT_CHARS cover the longest.
    let head = trimmed
        .char_indices()
        .nth(ARTIFACT_CHARS)
        .map_or(trimmed, |(i, _)| &trimmed[..i]);
    let lower = head.to_lowercase();
    if ARTIFACTS.iter().any(|a| lower.starts_with(a)) {
        return Decision {
            verdict: Verdict::Discard,
            confidence: 1.0,
            reason: "instruction artifact",
        };
    }
    if verdict == Verdict::Hold && cites_something(trimmed) {
        return Decision {
            verdict: Verdict::Allow,
            confidence: confidence.max(0.7),
            reason: "cites an ADR, a path or a command",
        };
    }
    Decision {
        verdict,
        confidence,
        reason: "as proposed",
    }
}

/// An ADR reference, a file path or an explicit command.
pub fn cites_something(text: &str) -> bool {
    let lower = text.to_lowercase();
    if lower.contains("adr-")
        || lower.contains("adr ")
            && lower
                .split("adr ")
                .skip(1)
                .any(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    {
        return true;
    }
    if text.contains('`') || lower.contains("decisions/") {
        return true;
    }
    let commands = [
        "cargo ",
        "git ",
        "npm ",
        "docker ",
        "kubectl ",
        "systemctl ",
        "sudo ",
        "cairn ",
        "$ ",
    ];
    if commands
        .iter()
        .any(|c| lower.starts_with(c) || lower.contains(&format!(" {c}")))
    {
        return true;
    }
    // `make` is also an English verb ("can't we make this better"): a command only when the
    // text opens with it and a target.
    if lower.starts_with("make ")
        && lower.split_whitespace().nth(1).is_some_and(|t| {
            t.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                && !matches!(
                    t,
                    "sure" | "it" | "this" | "that" | "the" | "a" | "an" | "them" | "everything"
                )
        })
    {
        return true;
    }
    text.split_whitespace().any(is_path)
}

fn is_path(word: &str) -> bool {
    let word =
        word.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '"' | '\'' | '.'));
    if word.contains("://") {
        return false;
    }
    let has_ext = word.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    (word.contains('/')
        && word.len() > 2
        && (has_ext || word.starts_with('/') || word.starts_with("~/") || word.starts_with("./")))
        || (has_ext && word.contains('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_found_at_the_start_of_a_long_text_only() {
        assert!(
            ARTIFACTS
                .iter()
                .all(|a| a.chars().count() <= ARTIFACT_CHARS)
        );
        let long = format!("Update the following{}", " lines of the config".repeat(40));
        assert_eq!(
            decide(&long, Verdict::Allow, 0.9, 5).verdict,
            Verdict::Discard
        );
        let late = format!("{} update the following", "words ".repeat(40));
        assert_eq!(
            decide(&late, Verdict::Allow, 0.9, 5).verdict,
            Verdict::Allow
        );
        // Characters that lower to more than one still leave the artifact whole.
        let wide = format!("İnsert {}", "x".repeat(80));
        assert_eq!(decide(&wide, Verdict::Allow, 0.9, 5).reason, "as proposed");
    }

    #[test]
    fn rules_override_the_proposal() {
        let cases = [
            ("too short", Verdict::Allow, Verdict::Discard),
            (
                "Add after line 12: use tokio",
                Verdict::Allow,
                Verdict::Discard,
            ),
            (
                "Replace the mutex with a channel",
                Verdict::Allow,
                Verdict::Discard,
            ),
            (
                "per ADR-7 the index lives in .cairn",
                Verdict::Hold,
                Verdict::Allow,
            ),
            (
                "config lives in src/config.rs now",
                Verdict::Hold,
                Verdict::Allow,
            ),
            (
                "run `cargo test --locked` before pushing",
                Verdict::Hold,
                Verdict::Allow,
            ),
            (
                "the user seems to like short answers",
                Verdict::Hold,
                Verdict::Hold,
            ),
            (
                "like, can't we make this even better?",
                Verdict::Hold,
                Verdict::Hold,
            ),
            ("make test passes now", Verdict::Hold, Verdict::Allow),
            (
                "the user prefers tabs over spaces",
                Verdict::Allow,
                Verdict::Allow,
            ),
            (
                "the user said this is irrelevant chatter",
                Verdict::Discard,
                Verdict::Discard,
            ),
        ];
        for (text, proposed, want) in cases {
            assert_eq!(decide(text, proposed, 0.5, 12).verdict, want, "{text}");
        }
    }

    #[test]
    fn paths_and_not_paths() {
        for p in [
            "src/main.rs",
            "/etc/nginx/nginx.conf",
            "~/notes",
            "./run.sh",
            "test_utils.py",
        ] {
            assert!(is_path(p), "{p}");
        }
        for p in [
            "and/or",
            "https://example.com/a.html",
            "e.g.",
            "v1.2",
            "hello",
        ] {
            assert!(!is_path(p), "{p}");
        }
    }
}
