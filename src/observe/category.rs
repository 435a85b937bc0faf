//! Categories of taxonomy v1, chosen by keywords.
//!
//! Each category has a list of cue words; the text's words are matched against them (a cue
//! that is a prefix of a word counts, so `deploy` matches `deployed`). The category with most
//! cues wins; its confidence is its share of all cues found. No cue at all gives `projects` at
//! confidence 0: a guess, marked as one.

pub use crate::store::TAXONOMY_VERSION;

/// Category ids with their cue words.
pub const CUES: &[(&str, &[&str])] = &[
    (
        "preferences",
        &[
            "prefer",
            "like",
            "dislike",
            "want",
            "favorite",
            "favourite",
            "style",
            "tabs",
            "spaces",
            "verbose",
            "concise",
            "tone",
        ],
    ),
    (
        "rules-conventions",
        &[
            "never",
            "always",
            "must",
            "should",
            "don't",
            "do not",
            "convention",
            "rule",
            "policy",
            "lint",
            "format",
            "naming",
            "commit message",
            "review",
        ],
    ),
    (
        "system-architecture",
        &[
            "architecture",
            "design",
            "module",
            "component",
            "schema",
            "database",
            "index",
            "api",
            "service",
            "interface",
            "layer",
            "crate",
            "library",
            "protocol",
            "storage",
        ],
    ),
    (
        "operations",
        &[
            "deploy",
            "restart",
            "server",
            "nfs",
            "mount",
            "systemd",
            "docker",
            "kubernetes",
            "backup",
            "monitor",
            "incident",
            "outage",
            "dns",
            "certificate",
            "cron",
            "disk",
            "network",
            "ssh",
            "caddy",
            "nginx",
            "redis",
            "postgres",
        ],
    ),
    (
        "memory-system",
        &[
            "memory",
            "remember",
            "recall",
            "observation",
            "cairn",
            "slog",
            "forget",
            "reflect",
            "brief",
        ],
    ),
    (
        "projects",
        &[
            "project",
            "milestone",
            "release",
            "roadmap",
            "feature",
            "issue",
            "ticket",
            "deadline",
            "sprint",
            "version",
        ],
    ),
    (
        "people-relationships",
        &[
            "team",
            "colleague",
            "manager",
            "friend",
            "wife",
            "husband",
            "partner",
            "mother",
            "father",
            "sister",
            "brother",
            "daughter",
            "son",
            "kids",
            "family",
            "boss",
            "client",
            "customer",
        ],
    ),
];

/// The chosen category and how sure the choice is.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub id: &'static str,
    pub confidence: f64,
}

/// Whether `id` is a category of the taxonomy.
pub fn is_known(id: &str) -> bool {
    CUES.iter().any(|(c, _)| *c == id)
}

/// Picks the category of `text` by its cue words.
pub fn classify(text: &str) -> Choice {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let mut best = ("projects", 0usize);
    let mut total = 0usize;
    for (id, cues) in CUES {
        let hits = cues
            .iter()
            .filter(|cue| {
                if cue.contains(' ') {
                    lower.contains(*cue)
                } else {
                    words.iter().any(|w| w.starts_with(*cue))
                }
            })
            .count();
        total += hits;
        if hits > best.1 {
            best = (id, hits);
        }
    }
    if total == 0 {
        return Choice {
            id: "projects",
            confidence: 0.0,
        };
    }
    Choice {
        id: best.0,
        confidence: best.1 as f64 / total as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_by_cues() {
        let cases = [
            ("The user prefers tabs over spaces", "preferences"),
            (
                "Never force-push to main; always rebase",
                "rules-conventions",
            ),
            (
                "Restarted caddy on the web server after the outage",
                "operations",
            ),
            (
                "The index schema lives in one tantivy module",
                "system-architecture",
            ),
            (
                "Melanie went camping with her kids and her husband",
                "people-relationships",
            ),
            (
                "cairn should recall observations at session start",
                "memory-system",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(classify(text).id, want, "{text}");
        }
        assert_eq!(
            classify("zzz qqq"),
            Choice {
                id: "projects",
                confidence: 0.0
            }
        );
    }
}
