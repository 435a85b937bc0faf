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
    let cues = Cues::get();
    let lower = if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    };
    // Which cues the text holds, one bit a cue (in CUES' order).
    let mut hit = 0u128;
    for (bit, cue) in &cues.phrases {
        if lower.contains(cue) {
            hit |= 1 << bit;
        }
    }
    for word in lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
    {
        if !cues.starts[usize::from(word.as_bytes()[0])] {
            continue;
        }
        for &len in &cues.lengths {
            if len > word.len() {
                break;
            }
            if let Some(&bit) = word.get(..len).and_then(|head| cues.words.get(head)) {
                hit |= 1 << bit;
            }
        }
    }
    let mut best = ("projects", 0usize);
    let mut total = 0usize;
    for (id, range) in &cues.categories {
        let hits = (hit & range).count_ones() as usize;
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

/// [`CUES`] made ready to look words up: a text's words are looked up by their heads of each
/// length a one-word cue has (a cue counts when it is the start of a word), where comparing
/// every word with every cue was a third of an import's time.
struct Cues {
    /// One-word cue → its bit.
    words: rustc_hash::FxHashMap<&'static str, u32>,
    /// The lengths of one-word cues, shortest first.
    lengths: Vec<usize>,
    /// Whether some one-word cue starts with this byte.
    starts: [bool; 256],
    /// Cues of several words (matched anywhere in the text), with their bits.
    phrases: Vec<(u32, &'static str)>,
    /// Each category with the bits of its cues.
    categories: Vec<(&'static str, u128)>,
}

impl Cues {
    fn get() -> &'static Cues {
        static CUES_READY: std::sync::OnceLock<Cues> = std::sync::OnceLock::new();
        CUES_READY.get_or_init(|| {
            let mut cues = Cues {
                words: rustc_hash::FxHashMap::default(),
                lengths: Vec::new(),
                starts: [false; 256],
                phrases: Vec::new(),
                categories: Vec::new(),
            };
            let mut bit = 0u32;
            for (id, list) in CUES {
                let mut mask = 0u128;
                for cue in *list {
                    mask |= 1 << bit;
                    if cue.contains(' ') {
                        cues.phrases.push((bit, cue));
                    } else {
                        cues.words.insert(cue, bit);
                        cues.lengths.push(cue.len());
                        cues.starts[usize::from(cue.as_bytes()[0])] = true;
                    }
                    bit += 1;
                }
                cues.categories.push((id, mask));
            }
            assert!(bit <= 128, "a cue's bit fits in a u128");
            cues.lengths.sort_unstable();
            cues.lengths.dedup();
            cues
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word compared with every cue: what [`classify`] must agree with.
    fn classify_by_comparing(text: &str) -> Choice {
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
        Choice {
            id: if total == 0 { "projects" } else { best.0 },
            confidence: if total == 0 {
                0.0
            } else {
                best.1 as f64 / total as f64
            },
        }
    }

    #[test]
    fn the_lookup_agrees_with_comparing_every_cue() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "Don't commit message drafts; do not deploy on Fridays".into(),
            "SONG sonar Son sons' ÉCOLE über-deploy déploy redis-server".into(),
            "the kids' team, the client's database schema; API/interface".into(),
            "tab tabs tabsy prefer preferred préfer".into(),
        ];
        // Every cue alone, with a tail, cut short, and in a sentence of others.
        for (_, cues) in CUES {
            for cue in *cues {
                texts.push(cue.to_string());
                texts.push(format!("{cue}ing"));
                texts.push(cue[..cue.len() - 1].to_string());
                texts.push(format!("x{cue} {}", cue.to_uppercase()));
            }
        }
        let all: Vec<&str> = CUES.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let mut x: u64 = 7;
        for _ in 0..2_000 {
            let words: Vec<&str> = (0..12)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    all[(x % all.len() as u64) as usize]
                })
                .collect();
            texts.push(words.join(if x.is_multiple_of(3) { "-" } else { " " }));
        }
        for text in &texts {
            assert_eq!(classify(text), classify_by_comparing(text), "{text:?}");
        }
    }

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
