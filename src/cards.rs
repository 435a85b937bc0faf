//! Turn cards and episodes: `vault/sessions/AGENT/SESSION.jsonl`.
//!
//! A card (DESIGN section 2, L1) is made in code from one turn of a transcript and costs
//! nothing: what was asked, how the turn ended and how long it took, the files written, the
//! commands run with their exit status, errors, and the start of the answer. An episode (L2)
//! is a compaction note or session summary. Both are JSON lines, `{"type":"card",…}` and
//! `{"type":"episode",…}`, in the order the transcript holds them, every text field redacted
//! before it is rendered.
//!
//! A session's file is always the rendering of its whole transcript, so ingesting again is a
//! comparison: the same lines change nothing, more lines after the same lines are appended,
//! and anything else (a transcript rewritten in its middle) rewrites the file.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::redact::Redactor;
use crate::sessions::{Agent, Transcript, Turn};

/// The folder, relative to the repository root.
pub const DIR: &str = "vault/sessions";

/// How much of an answer a card keeps, in characters.
const ANSWER_CHARS: usize = 600;
/// How much of a prompt a card keeps, in characters.
const PROMPT_CHARS: usize = 2000;
/// How much of an episode's text is kept, in characters.
const EPISODE_CHARS: usize = 4000;
/// How many commands, files and errors a card lists at most.
const LIST_MAX: usize = 40;

/// One line of a session's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    Card(Card),
    Episode(Episode),
}

impl Record {
    pub fn id(&self) -> &str {
        match self {
            Record::Card(c) => &c.id,
            Record::Episode(e) => &e.id,
        }
    }
}

/// A turn card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub id: String,
    pub agent: String,
    pub session: String,
    /// The turn's position in the session, from 0.
    pub turn: usize,
    /// When the turn started (RFC 3339), or when it was ingested if the transcript has no times.
    pub ts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// completed | error | unfinished | interrupted
    pub outcome: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandRun>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The start of the answer.
    #[serde(default)]
    pub answer: String,
}

/// A command a turn ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// The start of its output, kept when it failed (to say what went wrong).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// An episode: a compaction note or a session summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub id: String,
    pub agent: String,
    pub session: String,
    /// compaction | summary
    pub kind: String,
    pub ts: String,
    /// The turns it covers, from 0; none when no turn came before it.
    pub first_turn: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<usize>,
    pub text: String,
}

/// The id of a turn's card: stable for the same agent, session and position.
pub fn card_id(agent: &str, session: &str, turn: usize) -> String {
    format!("tc-{}", short_hash(&[agent, session, &turn.to_string()]))
}

fn short_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    d[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// Cuts `text` to at most `max` characters, on a character boundary, marking the cut.
pub fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
    }
}

/// The path of a session's file, relative to the repository root.
pub fn file_of(agent: Agent, session: &str) -> String {
    let safe: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.');
    format!(
        "{DIR}/{}/{}.jsonl",
        agent.as_str(),
        if safe.is_empty() { "session" } else { safe }
    )
}

/// The records of a transcript, in order: each turn's card, each episode after the turns it
/// covers. A record without a time of its own takes the time of the record before it (the
/// first, the transcript's earliest time); `fallback` (the file's mtime) dates a transcript
/// with no times at all. The rendering depends on the transcript alone, so ingesting it again
/// renders the same lines.
pub fn records(t: &Transcript, redactor: &Redactor, fallback: &str) -> Vec<Record> {
    let red = |s: &str| redactor.redact(s).into_owned();
    let mut episodes: Vec<&crate::sessions::Episode> = t.episodes.iter().collect();
    episodes.sort_by_key(|e| e.line);
    let mut out = Vec::with_capacity(t.turns.len() + episodes.len());
    let mut next_episode = episodes.into_iter().peekable();
    let earliest = t
        .turns
        .iter()
        .filter_map(|x| x.started)
        .chain(t.episodes.iter().filter_map(|e| e.time))
        .min();
    let mut last_ts = earliest
        .map(crate::time::format)
        .unwrap_or_else(|| fallback.to_string());
    for turn in &t.turns {
        while let Some(e) = next_episode.peek() {
            if e.line < turn.line {
                out.push(Record::Episode(episode(t, e, &red, &last_ts)));
                next_episode.next();
            } else {
                break;
            }
        }
        let card = card(t, turn, &red, &last_ts);
        last_ts = card.ts.clone();
        out.push(Record::Card(card));
    }
    for e in next_episode {
        out.push(Record::Episode(episode(t, e, &red, &last_ts)));
    }
    out
}

fn card(t: &Transcript, turn: &Turn, red: &dyn Fn(&str) -> String, fallback_ts: &str) -> Card {
    let agent = t.agent.as_str();
    let duration_ms = match (turn.started, turn.ended) {
        (Some(a), Some(b)) if b >= a => Some((b - a).num_milliseconds() as u64),
        _ => None,
    };
    let mut commands: Vec<CommandRun> = turn
        .commands
        .iter()
        .take(LIST_MAX)
        .map(|c| CommandRun {
            command: red(&cut(&c.command, 300)),
            exit: c.exit,
            output: if c.exit.is_some_and(|e| e != 0) {
                red(&cut(&c.output, 300))
            } else {
                String::new()
            },
        })
        .collect();
    commands.dedup();
    Card {
        id: card_id(agent, &t.session, turn.index),
        agent: agent.to_string(),
        session: t.session.clone(),
        turn: turn.index,
        ts: turn
            .started
            .map(crate::time::format)
            .unwrap_or_else(|| fallback_ts.to_string()),
        duration_ms,
        outcome: turn.outcome.as_str().to_string(),
        prompt: red(&cut(&turn.prompt, PROMPT_CHARS)),
        files: turn
            .files_written
            .iter()
            .take(LIST_MAX)
            .map(|f| red(f))
            .collect(),
        commands,
        errors: turn
            .errors
            .iter()
            .take(LIST_MAX)
            .map(|e| red(&cut(e, 300)))
            .collect(),
        answer: red(&cut(&turn.answer, ANSWER_CHARS)),
    }
}

fn episode(
    t: &Transcript,
    e: &crate::sessions::Episode,
    red: &dyn Fn(&str) -> String,
    fallback_ts: &str,
) -> Episode {
    let agent = t.agent.as_str();
    let text = red(&cut(&e.text, EPISODE_CHARS));
    Episode {
        id: format!(
            "ep-{}",
            short_hash(&[agent, &t.session, e.kind.as_str(), &e.line.to_string()])
        ),
        agent: agent.to_string(),
        session: t.session.clone(),
        kind: e.kind.as_str().to_string(),
        ts: e
            .time
            .map(crate::time::format)
            .unwrap_or_else(|| fallback_ts.to_string()),
        first_turn: e.first_turn,
        last_turn: e.last_turn,
        text,
    }
}

/// The line of a record, without its newline.
pub fn line(r: &Record) -> String {
    serde_json::to_string(r).expect("records serialize")
}

impl Card {
    /// The head line: how the card is named in lists (the first line of the prompt, cut).
    pub fn head(&self) -> String {
        let first = self
            .prompt
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        cut(first, 100)
    }

    /// The text the index holds and the observer reads.
    pub fn text(&self) -> String {
        let mut s = format!("asked: {}\nended: {}", self.prompt, self.outcome);
        if let Some(ms) = self.duration_ms {
            s.push_str(&format!(" after {}", span(ms)));
        }
        if !self.files.is_empty() {
            s.push_str(&format!("\nfiles written: {}", self.files.join(", ")));
        }
        for c in &self.commands {
            match c.exit {
                Some(code) => s.push_str(&format!("\nran `{}` (exit {code})", c.command)),
                None => s.push_str(&format!("\nran `{}`", c.command)),
            }
            if !c.output.is_empty() {
                s.push_str(&format!(": {}", c.output.lines().next().unwrap_or("")));
            }
        }
        for e in &self.errors {
            s.push_str(&format!("\nerror: {e}"));
        }
        if !self.answer.is_empty() {
            s.push_str(&format!("\nanswer: {}", self.answer));
        }
        s
    }
}

/// A duration the way a person says it: `40 s`, `3 min`, `2 h 5 min`.
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// What to do with a session's file, given its current lines and the transcript's.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    Same,
    /// Append the lines from this index of the new rendering.
    Append(usize),
    Rewrite,
}

/// Compares the lines a file holds with the lines a transcript renders to.
pub fn compare(old: &[&str], new: &[String]) -> Change {
    if old.len() <= new.len() && old.iter().zip(new).all(|(a, b)| *a == b) {
        if old.len() == new.len() {
            Change::Same
        } else {
            Change::Append(old.len())
        }
    } else {
        Change::Rewrite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_marks_the_cut_on_a_char_boundary() {
        assert_eq!(cut("  short  ", 10), "short");
        assert_eq!(cut("ééééé", 3), "ééé…");
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(card_id("claude", "s1", 0), card_id("claude", "s1", 0));
        assert_ne!(card_id("claude", "s1", 0), card_id("claude", "s1", 1));
        assert_ne!(card_id("claude", "s1", 0), card_id("codex", "s1", 0));
        assert!(card_id("pi", "x", 3).starts_with("tc-"));
    }

    #[test]
    fn compare_appends_only_after_the_same_lines() {
        let new: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(compare(&["a", "b", "c"], &new), Change::Same);
        assert_eq!(compare(&["a"], &new), Change::Append(1));
        assert_eq!(compare(&[], &new), Change::Append(0));
        assert_eq!(compare(&["a", "x"], &new), Change::Rewrite);
        assert_eq!(compare(&["a", "b", "c", "d"], &new), Change::Rewrite);
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(
            file_of(Agent::Claude, "abc-1"),
            "vault/sessions/claude/abc-1.jsonl"
        );
        assert_eq!(file_of(Agent::Pi, "../x/y"), "vault/sessions/pi/_x_y.jsonl");
    }
}
