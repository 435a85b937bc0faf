//! How much of a briefing each agent keeps, counted the way that agent counts it, and a
//! briefing fitted into it by priority (ADR 84).
//!
//! What the agents do with a session-start hook's output, read in their own code and measured
//! with the pinned agents run headless:
//!
//! - **Claude Code 2.1.332** (its bundled CLI, the function that stores hook output): an
//!   `additionalContext` whose JavaScript `length` (UTF-16 code units) is over 10,000 is written
//!   to a file, and the model is shown a preview of about 2 KB and the file's path. Measured:
//!   10,000 inline, 10,001 persisted.
//! - **Codex 0.171.0** (codex-rs `hooks/src/output_spill.rs`): an additional context whose
//!   `approx_token_count` is over `HOOK_OUTPUT_TOKEN_LIMIT` (2,500) is saved to a file and the
//!   model gets its head and tail around "…N tokens truncated…". 0.171.0 estimates a text's
//!   tokens as its UTF-8 bytes / 4, rounded up: 10,000 bytes arrived whole, 10,001 were cut
//!   ("original token count: 2501"), and 6,000 full stops (6,000 tokens to the lexical count
//!   of later Codex sources) arrived whole.
//! - **pi 0.73.1**: a `before_agent_start` handler's `systemPrompt` replaces the system prompt
//!   whole (`ExtensionRunner.emitBeforeAgentStart`); nothing is cut.
//!
//! The defaults in `[agents.NAME]` leave a margin under those limits (9,500 characters, 2,400
//! tokens): cairn counts exactly as the agent does, so the margin is not for error in the count
//! but for a nearby version that lowers its limit a little.
//!
//! [`fit`] fills a briefing by priority: MEMORY.md's entries in file order (what a person
//! curated), then the recalled results in rank order; never part of an entry or a result. The
//! caller renders the briefing for a number of each (with its note of what was left out), and
//! `fit` finds the most that stay within the limit. Pure: no files, no printing.

use crate::config::Config;
use crate::sessions::Agent;

/// The unit an agent measures its hook output in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Characters as JavaScript counts them (`String.length`: UTF-16 code units).
    Chars,
    /// Codex's token estimate: UTF-8 bytes / 4, rounded up.
    CodexTokens,
}

impl Unit {
    /// The size of `text` in this unit.
    pub fn measure(self, text: &str) -> usize {
        match self {
            Unit::Chars => text.encode_utf16().count(),
            Unit::CodexTokens => text.len().div_ceil(4),
        }
    }

    /// The unit's name, plural, for messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Chars => "characters",
            Unit::CodexTokens => "tokens",
        }
    }
}

/// The most an agent's session-start hook may print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub agent: Agent,
    pub unit: Unit,
    pub max: usize,
}

impl Limit {
    /// `agent`'s limit from `[agents.NAME]`, or `None` when it has none (0).
    pub fn of(agent: Agent, config: &Config) -> Option<Limit> {
        let a = &config.agents;
        let (unit, max) = match agent {
            Agent::Claude => (Unit::Chars, a.claude_code.briefing_chars),
            Agent::Codex => (Unit::CodexTokens, a.codex.briefing_tokens),
            Agent::Pi => (Unit::Chars, a.pi.briefing_chars),
        };
        (max > 0).then_some(Limit { agent, unit, max })
    }

    /// Every agent's limit, those that have one.
    pub fn all(config: &Config) -> Vec<Limit> {
        [Agent::Claude, Agent::Codex, Agent::Pi]
            .into_iter()
            .filter_map(|a| Limit::of(a, config))
            .collect()
    }

    /// The `cairn.toml` key that sets it.
    pub fn key(&self) -> String {
        let field = match self.unit {
            Unit::Chars => "briefing_chars",
            Unit::CodexTokens => "briefing_tokens",
        };
        format!("[agents.{}] {field}", super::name(self.agent))
    }

    /// "9,500 characters", "2,400 tokens".
    pub fn describe(&self) -> String {
        format!("{} {}", thousands(self.max), self.unit.name())
    }

    pub fn measure(&self, text: &str) -> usize {
        self.unit.measure(text)
    }
}

/// `n` with a comma between thousands: 11808 → "11,808".
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// MEMORY.md measured against one agent's limit, for `cairn memory lint`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Measured {
    pub agent: &'static str,
    pub unit: &'static str,
    pub limit: usize,
    pub size: usize,
    pub over: bool,
    /// What `memory lint` warns when it is over.
    #[serde(skip)]
    pub warning: Option<String>,
}

/// `memory` (MEMORY.md's text) against every agent's limit: MEMORY.md alone over a limit
/// means that agent's briefing leaves entries out (and every recalled result).
pub fn measure_memory(file: &str, memory: &str, config: &Config) -> Vec<Measured> {
    Limit::all(config)
        .into_iter()
        .map(|limit| {
            let size = limit.measure(memory);
            let over = size > limit.max;
            Measured {
                agent: super::name(limit.agent),
                unit: limit.unit.name(),
                limit: limit.max,
                size,
                over,
                warning: over.then(|| {
                    format!(
                        "{file} is {} {}, over {}'s limit of {} for its session-start briefing ({}): the briefing leaves out the entries that do not fit and every recalled result; prune or merge entries, or raise the limit",
                        thousands(size),
                        limit.unit.name(),
                        super::name(limit.agent),
                        limit.describe(),
                        limit.key()
                    )
                }),
            }
        })
        .collect()
}

/// What a fitted briefing left out, for the note it ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// MEMORY.md entries left out, of how many, from which line, in which sections.
    pub entries: usize,
    pub of_entries: usize,
    pub from_line: Option<usize>,
    pub sections: Vec<(String, usize)>,
    /// Recalled results left out.
    pub results: usize,
}

impl LeftOut {
    /// The line a fitted briefing ends with: what it left out and how to get it.
    pub fn note(&self, limit: &Limit) -> String {
        let mut parts = Vec::new();
        if self.entries > 0 {
            let mut part = format!(
                "{} of {} MEMORY.md {}",
                self.entries,
                self.of_entries,
                if self.of_entries == 1 {
                    "entry"
                } else {
                    "entries"
                }
            );
            if let Some(line) = self.from_line {
                part.push_str(&format!(", from line {line} on"));
            }
            if !self.sections.is_empty() {
                let sections: Vec<String> = self
                    .sections
                    .iter()
                    .map(|(s, n)| format!("{s} {n}"))
                    .collect();
                part.push_str(&format!(" ({})", sections.join(", ")));
            }
            parts.push(part);
        }
        if self.results > 0 {
            parts.push(crate::output::count(self.results, "recalled result"));
        }
        format!(
            "**Left out** to fit {}'s limit for this briefing ({}): {}. `cairn brief` prints the whole briefing; so does the MCP tool `brief`.",
            super::name(limit.agent),
            limit.describe(),
            parts.join(" and ")
        )
    }
}

/// A briefing fitted to a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub text: String,
    /// How many MEMORY.md entries and recalled results it holds.
    pub entries: usize,
    pub results: usize,
    /// Its size in the limit's unit, and the whole briefing's.
    pub size: usize,
    pub whole_size: usize,
    /// False only when not even the briefing with no entry and no result fits (a limit too
    /// small for its heading and note): that briefing is given all the same.
    pub fits: bool,
}

/// The briefing with the most of `entries` MEMORY.md entries and then the most of `results`
/// recalled results that `limit` holds. `render(e, r)` is the briefing with the first `e`
/// entries and the first `r` results, and its note of what it leaves out when it leaves out
/// anything. Entries come first: a result is given only when every entry is.
pub fn fit(
    limit: &Limit,
    entries: usize,
    results: usize,
    render: impl Fn(usize, usize) -> String,
) -> Fitted {
    let whole = render(entries, results);
    let whole_size = limit.measure(&whole);
    let done = |text: String, e: usize, r: usize| {
        let size = limit.measure(&text);
        Fitted {
            text,
            entries: e,
            results: r,
            size,
            whole_size,
            fits: size <= limit.max,
        }
    };
    if whole_size <= limit.max {
        return done(whole, entries, results);
    }
    let fits = |e: usize, r: usize| limit.measure(&render(e, r)) <= limit.max;
    let entries_kept = most(entries, |e| fits(e, 0));
    if entries_kept < entries {
        return done(render(entries_kept, 0), entries_kept, 0);
    }
    // Every entry fits: as many results as fit after them (fewer than all: all did not fit).
    let results_kept = most(results.saturating_sub(1), |r| fits(entries, r));
    done(render(entries, results_kept), entries, results_kept)
}

/// The largest `n` in `0..=upto` for which `fits(n)`, or 0. The size grows with `n` but for a
/// digit more or less in the note, so a binary search finds the edge and a step down makes sure.
fn most(upto: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, upto);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    while lo > 0 && !fits(lo) {
        lo -= 1;
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(unit: Unit, max: usize) -> Limit {
        Limit {
            agent: Agent::Claude,
            unit,
            max,
        }
    }

    /// A briefing of entries of 10 characters and results of 20, with a note of 8 when cut.
    fn render(e: usize, r: usize, total: (usize, usize)) -> String {
        let mut s = "H".repeat(5);
        s.push_str(&"e".repeat(10 * e));
        s.push_str(&"r".repeat(20 * r));
        if (e, r) != total {
            s.push_str("[note!!]");
        }
        s
    }

    #[test]
    fn units_count_as_the_agents_do() {
        // JavaScript's length: an emoji is two UTF-16 code units, an é one.
        assert_eq!(Unit::Chars.measure("é😀a"), 4);
        // Codex 0.171.0: bytes / 4 rounded up (é is 2 bytes, 😀 4).
        assert_eq!(Unit::CodexTokens.measure("é😀a"), 2);
        assert_eq!(Unit::CodexTokens.measure(&"x".repeat(10_000)), 2_500);
        assert_eq!(Unit::CodexTokens.measure(&"x".repeat(10_001)), 2_501);
        assert_eq!(Unit::CodexTokens.measure(""), 0);
    }

    #[test]
    fn fit_fills_entries_first_then_results() {
        let total = (10, 5);
        let r = |e, r| render(e, r, total);
        // Table: limit → (entries, results kept). Whole = 5 + 100 + 100 = 205.
        for (max, want) in [
            (205, (10, 5)),
            (204, (10, 4)), // 5 + 100 + 80 + 8 = 193
            (113, (10, 0)), // 5 + 100 + 8
            (112, (9, 0)),  // 5 + 90 + 8 = 103
            (14, (0, 0)),   // 5 + 8 = 13
        ] {
            let f = fit(&limit(Unit::Chars, max), total.0, total.1, r);
            assert_eq!((f.entries, f.results), want, "limit {max}");
            assert!(f.fits && f.size <= max, "limit {max}: {}", f.size);
            assert_eq!(f.text, r(want.0, want.1));
            assert_eq!(f.whole_size, 205);
        }
    }

    #[test]
    fn fit_never_takes_a_result_while_an_entry_is_left_out() {
        // Entries of 10, results of 3: at 112 the tenth entry does not fit (113), while nine
        // entries and a result would (5 + 90 + 3 + 8 = 106).
        let render = |e: usize, r: usize| {
            let mut s = "H".repeat(5) + &"e".repeat(10 * e) + &"r".repeat(3 * r);
            if (e, r) != (10, 5) {
                s.push_str("[note!!]");
            }
            s
        };
        let f = fit(&limit(Unit::Chars, 112), 10, 5, render);
        assert_eq!((f.entries, f.results), (9, 0));
    }

    #[test]
    fn a_limit_too_small_for_the_heading_gives_it_and_says_so() {
        let total = (3, 2);
        let f = fit(&limit(Unit::Chars, 4), 3, 2, |e, r| render(e, r, total));
        assert_eq!((f.entries, f.results, f.fits), (0, 0, false));
        assert_eq!(f.text, "HHHHH[note!!]");
    }

    #[test]
    fn a_note_that_grows_a_digit_is_still_within_the_limit() {
        // The note names how many were left out: 10 and more take a digit more than 9.
        let render = |e: usize, _r: usize| {
            let mut s = "e".repeat(e);
            if e < 20 {
                s.push_str(&format!("[{} left]", 20 - e));
            }
            s
        };
        for max in 8..30 {
            let f = fit(&limit(Unit::Chars, max), 20, 0, render);
            if f.fits {
                assert!(f.size <= max, "limit {max}");
                assert!(
                    f.entries == 20 || render(f.entries + 1, 0).len() > max,
                    "limit {max}: one more entry would fit"
                );
            }
        }
    }

    #[test]
    fn limits_come_from_the_configuration() {
        let mut config = Config::default();
        let claude = Limit::of(Agent::Claude, &config).unwrap();
        assert_eq!((claude.unit, claude.max), (Unit::Chars, 9_500));
        assert_eq!(claude.describe(), "9,500 characters");
        assert_eq!(claude.key(), "[agents.claude-code] briefing_chars");
        let codex = Limit::of(Agent::Codex, &config).unwrap();
        assert_eq!((codex.unit, codex.max), (Unit::CodexTokens, 2_400));
        assert_eq!(Limit::of(Agent::Pi, &config), None);
        config.agents.pi.briefing_chars = 50_000;
        assert_eq!(Limit::of(Agent::Pi, &config).unwrap().max, 50_000);
        assert_eq!(Limit::all(&config).len(), 3);
    }

    #[test]
    fn the_note_says_what_was_left_out_and_how_to_get_it() {
        let left = LeftOut {
            entries: 57,
            of_entries: 97,
            from_line: Some(45),
            sections: vec![("Operations".into(), 20), ("Projects".into(), 37)],
            results: 7,
        };
        let codex = Limit {
            agent: Agent::Codex,
            unit: Unit::CodexTokens,
            max: 2400,
        };
        assert_eq!(
            left.note(&codex),
            "**Left out** to fit codex's limit for this briefing (2,400 tokens): 57 of 97 \
             MEMORY.md entries, from line 45 on (Operations 20, Projects 37) and 7 recalled \
             results. `cairn brief` prints the whole briefing; so does the MCP tool `brief`."
        );
        let one = LeftOut {
            entries: 0,
            of_entries: 97,
            from_line: None,
            sections: Vec::new(),
            results: 1,
        };
        assert!(
            one.note(&codex)
                .contains("(2,400 tokens): 1 recalled result. `cairn brief`"),
            "{}",
            one.note(&codex)
        );
    }

    #[test]
    fn memory_over_an_agents_limit_is_named_with_its_figures() {
        let config = Config::default();
        let memory = "x".repeat(9_600);
        let m = measure_memory("MEMORY.md", &memory, &config);
        let by = |a: &str| m.iter().find(|x| x.agent == a).unwrap();
        assert!(by("claude-code").over);
        assert_eq!(
            by("claude-code").warning.as_deref().unwrap(),
            "MEMORY.md is 9,600 characters, over claude-code's limit of 9,500 characters for its \
             session-start briefing ([agents.claude-code] briefing_chars): the briefing leaves out \
             the entries that do not fit and every recalled result; prune or merge entries, or \
             raise the limit"
        );
        assert_eq!((by("codex").size, by("codex").over), (2_400, false));
        assert!(m.iter().all(|x| x.agent != "pi"));
        assert!(
            measure_memory("MEMORY.md", "short", &config)
                .iter()
                .all(|x| !x.over)
        );
    }

    #[test]
    fn thousands_are_grouped() {
        for (n, s) in [(0, "0"), (999, "999"), (1000, "1,000"), (11808, "11,808")] {
            assert_eq!(thousands(n), s);
        }
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
