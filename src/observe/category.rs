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
    let mut look_up = |word: &str| {
        let b = word.as_bytes();
        if let [first @ b'a'..=b'z', second @ b'a'..=b'z', ..] = b {
            let head = usize::from(first - b'a') * 26 + usize::from(second - b'a');
            for &(cue, bit) in &cues.by_head[head] {
                if word.starts_with(cue) {
                    hit |= 1 << bit;
                }
            }
        }
        for &(cue, bit) in &cues.other {
            if word.starts_with(cue) {
                hit |= 1 << bit;
            }
        }
    };
    if lower.is_ascii() {
        // The same words, split byte by byte.
        let bytes = lower.as_bytes();
        let in_word = |b: u8| b.is_ascii_alphanumeric() || b == b'\'';
        let mut at = 0;
        while at < bytes.len() {
            while at < bytes.len() && !in_word(bytes[at]) {
                at += 1;
            }
            let start = at;
            while at < bytes.len() && in_word(bytes[at]) {
                at += 1;
            }
            if at > start {
                look_up(&lower[start..at]);
            }
        }
    } else {
        for word in lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
        {
            look_up(word);
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

/// [`CUES`] made ready to look words up: a word is compared only with the one-word cues that
/// start with its first two letters (a cue counts when it is the start of a word), where
/// comparing every word with every cue was a third of an import's time.
struct Cues {
    /// The one-word cues starting with each two lowercase ASCII letters (26 × first + second),
    /// with their bits.
    by_head: Vec<Vec<(&'static str, u32)>>,
    /// The one-word cues that do not, compared with every word.
    other: Vec<(&'static str, u32)>,
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
                by_head: vec![Vec::new(); 26 * 26],
                other: Vec::new(),
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
                        match cue.as_bytes() {
                            [first @ b'a'..=b'z', second @ b'a'..=b'z', ..] => {
                                let head =
                                    usize::from(first - b'a') * 26 + usize::from(second - b'a');
                                cues.by_head[head].push((cue, bit));
                            }
                            _ => cues.other.push((cue, bit)),
                        }
                    }
                    bit += 1;
                }
                cues.categories.push((id, mask));
            }
            assert!(bit <= 128, "a cue's bit fits in a u128");
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
