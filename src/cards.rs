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
//! comparison ([`compare`]): the same lines change nothing, more lines after the same lines are
//! appended, a rendering with less than the file holds (an older backup, a cut copy) writes
//! nothing, and anything else (a transcript rewritten in its middle) rewrites the file. A
//! session only grows: no ingest removes a card, so no observation loses the card it cites.
//!
//! Turns are numbered from 1, in the file (`"turn": 5`) as in every output (`#5`); card ids
//! hash the position from 0, as they always did. A turn without content ([`trivial`]) is kept
//! as a card marked `"trivial": true`, which the index holds back from recall unless asked.

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
#[serde(from = "CardLine")]
pub struct Card {
    pub id: String,
    pub agent: String,
    pub session: String,
    /// The turn's number in the session, from 1: the number every output shows (`#5`).
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
    /// A turn without content ([`trivial`]): kept, but recalled only when asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trivial: bool,
    /// The project the session ran in: the name of the transcript's working folder (its last
    /// part, not the path), when the transcript says. What a search's project scope matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// A card's line as read, before [`Card`] corrects what older versions wrote.
#[derive(Deserialize)]
struct CardLine {
    id: String,
    agent: String,
    session: String,
    turn: usize,
    ts: String,
    #[serde(default)]
    duration_ms: Option<u64>,
    outcome: String,
    prompt: String,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    commands: Vec<CommandRun>,
    #[serde(default)]
    errors: Vec<String>,
    #[serde(default)]
    answer: String,
    #[serde(default)]
    trivial: bool,
    #[serde(default)]
    project: Option<String>,
}

impl From<CardLine> for Card {
    fn from(l: CardLine) -> Card {
        // Earlier versions stored the position from 0 and showed it from 1. The id is a hash
        // of the position from 0, so it tells which numbering a line uses.
        let turn = if l.id == card_id(&l.agent, &l.session, l.turn) {
            l.turn + 1
        } else {
            l.turn
        };
        Card {
            id: l.id,
            agent: l.agent,
            session: l.session,
            turn,
            ts: l.ts,
            duration_ms: l.duration_ms,
            outcome: l.outcome,
            prompt: l.prompt,
            files: l.files,
            commands: l.commands,
            errors: l.errors,
            answer: l.answer,
            trivial: l.trivial,
            project: l.project,
        }
    }
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
    /// The turns it covers, numbered from 1 as cards are; `last_turn` is none when no turn
    /// came before it.
    pub first_turn: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<usize>,
    pub text: String,
}

/// The id of a turn's card: stable for the same agent, session and position (`index`, from 0;
/// ids made before turns were numbered from 1 stay valid).
pub fn card_id(agent: &str, session: &str, index: usize) -> String {
    format!("tc-{}", short_hash(&[agent, session, &index.to_string()]))
}

/// Most words a prompt without content has ("ok", "say hello", "/clear").
const TRIVIAL_PROMPT_WORDS: usize = 3;
/// Most characters it has (a prompt in a language written without spaces is one word).
const TRIVIAL_PROMPT_CHARS: usize = 24;
/// Most words an answer to it has ("Hello! How can I help you today?").
const TRIVIAL_ANSWER_WORDS: usize = 40;

/// Whether a turn has no content worth recalling, judged by its shape alone: nothing was
/// done (no tool call, file, command or error) and either the prompt is a slash command left
/// without an answer (`/clear`, `/mode`), or both the prompt and the answer are trivially short
/// (one-letter prompts, "ok", "say hello" answered with a greeting). Such a card is kept and
/// observed, but recalled only when asked.
pub fn trivial(turn: &Turn) -> bool {
    if !(turn.tools.is_empty()
        && turn.files_written.is_empty()
        && turn.commands.is_empty()
        && turn.errors.is_empty())
    {
        return false;
    }
    let prompt = turn.prompt.trim();
    let answer = turn.answer.trim();
    let slash_command = prompt
        .split_whitespace()
        .next()
        .and_then(|w| w.strip_prefix('/'))
        .is_some_and(|name| {
            name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
        });
    let short_prompt = prompt.split_whitespace().count() <= TRIVIAL_PROMPT_WORDS
        && prompt.chars().count() <= TRIVIAL_PROMPT_CHARS;
    let short_answer = answer.split_whitespace().count() <= TRIVIAL_ANSWER_WORDS;
    (slash_command && answer.is_empty()) || (short_prompt && short_answer)
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
/// renders the same lines. [`Render`] makes the same records one at a time.
pub fn records(t: &Transcript, redactor: &Redactor, fallback: &str) -> Vec<Record> {
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
    let mut render = Render::new(
        redactor,
        earliest
            .map(crate::time::format)
            .unwrap_or_else(|| fallback.to_string()),
    );
    let (agent, session, cwd) = (t.agent, t.session.as_str(), t.cwd.as_deref());
    for turn in &t.turns {
        while let Some(e) = next_episode.peek() {
            if e.line < turn.line {
                out.push(Record::Episode(render.episode(agent, session, e)));
                next_episode.next();
            } else {
                break;
            }
        }
        out.push(Record::Card(render.card(agent, session, cwd, turn)));
    }
    for e in next_episode {
        out.push(Record::Episode(render.episode(agent, session, e)));
    }
    out
}

/// Renders a session's records one at a time, in their order, as [`records`] does: a record
/// without a time takes the time of the one before it, the first `first_ts`.
pub struct Render<'r> {
    redactor: &'r Redactor,
    first_ts: String,
    last_ts: Option<String>,
    /// Whether a record took `first_ts` (the session's first records have no time).
    pub took_first: bool,
}

impl<'r> Render<'r> {
    /// `first_ts`: the time of the first records when they have none (the transcript's
    /// earliest time, else the file's mtime).
    pub fn new(redactor: &'r Redactor, first_ts: String) -> Self {
        Render {
            redactor,
            first_ts,
            last_ts: None,
            took_first: false,
        }
    }

    /// The time a record without one takes (none needed for one with a time: only an untimed
    /// record may take the first time).
    fn fallback_ts(&mut self, has_time: bool) -> String {
        if has_time {
            return String::new();
        }
        match &self.last_ts {
            Some(ts) => ts.clone(),
            None => {
                self.took_first = true;
                self.first_ts.clone()
            }
        }
    }

    /// A turn's card.
    pub fn card(&mut self, agent: Agent, session: &str, cwd: Option<&str>, turn: &Turn) -> Card {
        let fallback = self.fallback_ts(turn.started.is_some());
        let redactor = self.redactor;
        let red = |s: &str| redactor.redact(s).into_owned();
        let card = card(agent, session, cwd, turn, &red, &fallback);
        self.last_ts = Some(card.ts.clone());
        card
    }

    /// An episode's record.
    pub fn episode(
        &mut self,
        agent: Agent,
        session: &str,
        e: &crate::sessions::Episode,
    ) -> Episode {
        let fallback = self.fallback_ts(e.time.is_some());
        let redactor = self.redactor;
        let red = |s: &str| redactor.redact(s).into_owned();
        episode(agent, session, e, &red, &fallback)
    }
}

fn card(
    agent: Agent,
    session: &str,
    cwd: Option<&str>,
    turn: &Turn,
    red: &dyn Fn(&str) -> String,
    fallback_ts: &str,
) -> Card {
    let agent = agent.as_str();
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
        id: card_id(agent, session, turn.index),
        agent: agent.to_string(),
        session: session.to_string(),
        turn: turn.index + 1,
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
        trivial: trivial(turn),
        project: cwd.and_then(project_of).map(|p| red(&p)),
    }
}

/// A working folder's project: its last part (`/home/ann/src/cairn` is `cairn`), on any
/// system's separators.
pub fn project_of(cwd: &str) -> Option<String> {
    cwd.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .filter(|n| !n.is_empty())
        .map(String::from)
}

fn episode(
    agent: Agent,
    session: &str,
    e: &crate::sessions::Episode,
    red: &dyn Fn(&str) -> String,
    fallback_ts: &str,
) -> Episode {
    let agent = agent.as_str();
    let text = red(&cut(&e.text, EPISODE_CHARS));
    Episode {
        id: format!(
            "ep-{}",
            short_hash(&[agent, session, e.kind.as_str(), &e.line.to_string()])
        ),
        agent: agent.to_string(),
        session: session.to_string(),
        kind: e.kind.as_str().to_string(),
        ts: e
            .time
            .map(crate::time::format)
            .unwrap_or_else(|| fallback_ts.to_string()),
        first_turn: e.first_turn + 1,
        last_turn: e.last_turn.map(|t| t + 1),
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
    /// Append the rendering's lines from byte `from` on: `cards` and `episodes` of them.
    Append {
        from: u64,
        cards: usize,
        episodes: usize,
    },
    /// Replace the file: the transcript changed in its middle, and its rendering keeps every
    /// card the file holds and has at least as many lines; `cards` and `episodes` of it are
    /// new to the file.
    Rewrite {
        cards: usize,
        episodes: usize,
    },
    /// Write nothing: the transcript renders to less than the file holds (an older backup, a
    /// cut copy), which would remove cards. `cards` the file holds, `renders` the transcript's.
    Behind {
        cards: usize,
        renders: usize,
    },
}

/// The id and kind of a record line, all a comparison needs of it.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: String,
    id: String,
}

/// Reads the next non-blank line into `buf` (newline kept); the bytes read, blank lines
/// included, or `None` at the end.
fn next_line(input: &mut impl std::io::BufRead, buf: &mut String) -> std::io::Result<Option<u64>> {
    let mut read = 0u64;
    loop {
        buf.clear();
        let n = input.read_line(buf)?;
        if n == 0 {
            return Ok(None);
        }
        read += n as u64;
        if !buf.trim().is_empty() {
            return Ok(Some(read));
        }
    }
}

/// Compares the lines a file holds (`None`: no file yet) with the lines a transcript renders
/// to, both read a line at a time. A session only grows: the same lines are
/// [`Change::Same`], more after them [`Change::Append`], a rendering that drops a card the file
/// holds or has fewer lines [`Change::Behind`], and anything else (a transcript rewritten in
/// its middle) [`Change::Rewrite`]. Only when the two differ in their middle are ids kept, as
/// hashes.
pub fn compare<O, N>(old: Option<O>, mut new: N) -> std::io::Result<Change>
where
    O: std::io::BufRead + std::io::Seek,
    N: std::io::BufRead + std::io::Seek,
{
    use std::io::SeekFrom;
    let (mut a, mut b) = (String::new(), String::new());
    let mut from = 0u64;
    let mut old = old;
    let mut prefix = true;
    if let Some(old) = &mut old {
        while next_line(old, &mut a)?.is_some() {
            let same = match next_line(&mut new, &mut b)? {
                Some(n) => {
                    from += n;
                    b.trim_end_matches(['\n', '\r']) == a.trim_end_matches(['\n', '\r'])
                }
                None => false,
            };
            if !same {
                prefix = false;
                break;
            }
        }
    }
    if prefix {
        let (mut cards, mut episodes) = (0, 0);
        while next_line(&mut new, &mut b)?.is_some() {
            // A rendering's lines are ours: a card's starts so (`line` writes its tag first).
            if b.starts_with(r#"{"type":"card""#) {
                cards += 1;
            } else {
                episodes += 1;
            }
        }
        return Ok(if cards + episodes == 0 {
            Change::Same
        } else {
            Change::Append {
                from,
                cards,
                episodes,
            }
        });
    }
    let Some(mut old) = old else {
        unreachable!("only a file can differ from the rendering")
    };
    old.seek(SeekFrom::Start(0))?;
    let (mut had_cards, mut had) = (
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    let mut old_len = 0usize;
    while next_line(&mut old, &mut a)?.is_some() {
        old_len += 1;
        if let Ok(head) = serde_json::from_str::<Head>(&a) {
            let id = crate::sessions::hash64(&head.id);
            had.insert(id);
            if head.kind == "card" {
                had_cards.insert(id);
            }
        }
    }
    new.seek(SeekFrom::Start(0))?;
    let (mut new_len, mut renders, mut kept) = (0usize, 0usize, 0usize);
    let (mut cards, mut episodes) = (0usize, 0usize);
    while next_line(&mut new, &mut b)?.is_some() {
        new_len += 1;
        let Ok(head) = serde_json::from_str::<Head>(&b) else {
            continue;
        };
        let id = crate::sessions::hash64(&head.id);
        let card = head.kind == "card";
        if card {
            renders += 1;
            kept += usize::from(had_cards.contains(&id));
        }
        if !had.contains(&id) {
            if card {
                cards += 1;
            } else {
                episodes += 1;
            }
        }
    }
    Ok(if new_len < old_len || kept < had_cards.len() {
        Change::Behind {
            cards: had_cards.len(),
            renders,
        }
    } else {
        Change::Rewrite { cards, episodes }
    })
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

    /// [`compare`] over lines held in memory: the file's (`None`: no file) and the rendering's.
    fn cmp(old: Option<&[&str]>, new: &[&str]) -> Change {
        let text = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let old = old.map(|o| std::io::Cursor::new(text(o)));
        compare(old, std::io::Cursor::new(text(new))).unwrap()
    }

    #[test]
    fn compare_appends_only_after_the_same_lines() {
        let new = ["a", "b", "c"];
        assert_eq!(cmp(Some(&["a", "b", "c"]), &new), Change::Same);
        let append = |from, episodes| Change::Append {
            from,
            cards: 0,
            episodes,
        };
        assert_eq!(cmp(Some(&["a"]), &new), append(2, 2));
        assert_eq!(cmp(Some(&[]), &new), append(0, 3));
        assert_eq!(cmp(None, &new), append(0, 3));
        assert_eq!(
            cmp(Some(&["a", "x"]), &new),
            Change::Rewrite {
                cards: 0,
                episodes: 0
            }
        );
        // Blank lines and a CRLF in the file are not differences.
        assert_eq!(cmp(Some(&["a", "", "b\r", "  "]), &new), append(4, 1));
    }

    fn card_line(index: usize, prompt: &str) -> String {
        let c = Card {
            id: card_id("claude", "s", index),
            agent: "claude".into(),
            session: "s".into(),
            turn: index + 1,
            ts: "2026-11-30T10:00:00.000Z".into(),
            duration_ms: None,
            outcome: "completed".into(),
            prompt: prompt.into(),
            files: vec![],
            commands: vec![],
            errors: vec![],
            answer: String::new(),
            trivial: false,
            project: None,
        };
        line(&Record::Card(c))
    }

    #[test]
    fn a_session_never_shrinks() {
        let whole: Vec<String> = (0..3).map(|i| card_line(i, "p")).collect();
        let old: Vec<&str> = whole.iter().map(String::as_str).collect();
        // A prefix (an older copy): behind, not a rewrite.
        assert_eq!(
            cmp(Some(&old), &old[..2]),
            Change::Behind {
                cards: 3,
                renders: 2
            }
        );
        // Cut in the middle of its last turn: fewer cards and a changed one, still behind.
        let changed = card_line(1, "p, cut");
        assert_eq!(
            cmp(Some(&old), &[old[0], &changed]),
            Change::Behind {
                cards: 3,
                renders: 2
            }
        );
        // The same turns, one edited: a rewrite, nothing new in it.
        let edited = card_line(1, "q");
        assert_eq!(
            cmp(Some(&old), &[old[0], &edited, old[2]]),
            Change::Rewrite {
                cards: 0,
                episodes: 0
            }
        );
        // Edited, and one more turn: a rewrite with one new card.
        let more = card_line(3, "r");
        assert_eq!(
            cmp(Some(&old), &[old[0], &edited, old[2], &more]),
            Change::Rewrite {
                cards: 1,
                episodes: 0
            }
        );
        // More turns after the same ones: their bytes on are appended.
        let from = old.iter().map(|l| l.len() as u64 + 1).sum();
        assert_eq!(
            cmp(Some(&old), &[old[0], old[1], old[2], &more]),
            Change::Append {
                from,
                cards: 1,
                episodes: 0
            }
        );
    }

    #[test]
    fn only_a_record_without_a_time_takes_the_first_time() {
        let redactor = Redactor::builtin();
        let mut timed = turn("p", "a", &[]);
        timed.started = Some(chrono::Utc::now());
        let mut render = Render::new(redactor, "2000-01-01T00:00:00.000Z".into());
        render.card(Agent::Claude, "s", None, &timed);
        render.card(Agent::Claude, "s", None, &turn("q", "b", &[]));
        // The untimed second card took the first's time, not the first time.
        assert!(!render.took_first);
        let mut render = Render::new(redactor, "2000-01-01T00:00:00.000Z".into());
        let card = render.card(Agent::Claude, "s", None, &turn("q", "b", &[]));
        assert!(render.took_first);
        assert_eq!(card.ts, "2000-01-01T00:00:00.000Z");
        // The card line starts with its tag, as `compare` counts on.
        assert!(line(&Record::Card(card)).starts_with(r#"{"type":"card""#));
    }

    #[test]
    fn turns_are_numbered_from_one_and_older_lines_are_read_so() {
        let line = card_line(4, "p");
        let Record::Card(c) = serde_json::from_str::<Record>(&line).unwrap() else {
            panic!("a card")
        };
        assert_eq!(c.turn, 5);
        assert!(line.contains("\"turn\":5"), "{line}");
        // A line written before: position 4 stored as `"turn":4`, under the same id.
        let legacy = line.replace("\"turn\":5", "\"turn\":4");
        let Record::Card(c) = serde_json::from_str::<Record>(&legacy).unwrap() else {
            panic!("a card")
        };
        assert_eq!(c.turn, 5);
    }

    fn turn(prompt: &str, answer: &str, tools: &[&str]) -> Turn {
        Turn {
            index: 0,
            line: 1,
            end_offset: 0,
            started: None,
            ended: None,
            prompt: prompt.into(),
            answer: answer.into(),
            outcome: crate::sessions::Outcome::Completed,
            files_written: vec![],
            commands: vec![],
            errors: vec![],
            tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn turns_without_content_are_trivial_by_their_shape() {
        let greeting = "Hello! I'm ready to help with your project. What would you like to do?";
        let long_answer = "word ".repeat(60);
        let cases = [
            ("/clear", "", &[][..], true),
            ("/mode plan", "", &[], true),
            ("y", "", &[], true),
            ("ok", "Done.", &[], true),
            ("say hello", greeting, &[], true),
            (
                "wow, it works",
                "Excellent! The new architecture",
                &[],
                true,
            ),
            ("ok", "", &["Bash"], false),
            ("/init", "", &["Write"], false),
            ("/review src/a.rs", long_answer.as_str(), &[], false),
            ("what else?", long_answer.as_str(), &[], false),
            ("no, never use npm here, use pnpm", "Noted.", &[], false),
            ("/home/ana/a.rs", "", &[], true),
            (
                "CLAUDE.mdを最新の状態にアップデートして、テストも全部実行してください",
                "",
                &[],
                false,
            ),
        ];
        for (prompt, answer, tools, want) in cases {
            assert_eq!(trivial(&turn(prompt, answer, tools)), want, "{prompt:?}");
        }
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(
            file_of(Agent::Claude, "abc-1"),
            "vault/sessions/claude/abc-1.jsonl"
        );
        assert_eq!(file_of(Agent::Pi, "../x/y"), "vault/sessions/pi/_x_y.jsonl");
    }

    #[test]
    fn a_project_is_its_folders_name() {
        assert_eq!(project_of("/Users/ann/src/cairn").as_deref(), Some("cairn"));
        assert_eq!(
            project_of("/Users/ann/src/cairn/").as_deref(),
            Some("cairn")
        );
        assert_eq!(project_of("C:\\work\\api").as_deref(), Some("api"));
        assert_eq!(project_of("/"), None);
        assert_eq!(project_of(""), None);
    }
}
