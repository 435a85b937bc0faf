//! Reading the transcripts coding agents write: Claude Code, Codex CLI and pi.
//!
//! Pure parsing: bytes in, a [`Transcript`] out. No file is opened or written here; `cairn
//! sessions ingest` opens the files, hands them to [`read`] and stores the turn cards and
//! episodes. A transcript is streamed, a line at a time ([`read`] over any `BufRead + Seek`;
//! [`parse`] is the same code over a slice): the memory it costs is its longest line, at most
//! [`MAX_LINE_BYTES`], plus what the [`Transcript`] keeps, whatever the size of the file. Each agent has its
//! reader ([`claude`], [`codex`], [`pi`]); they share the model below and the [`Builder`] that
//! cuts a stream of events into turns, so the outcome rules are written once.
//!
//! # Lines
//!
//! Every format is JSON Lines. Blank lines are ignored. A line that is not JSON (or not the
//! shape its type needs), or longer than the line cap (read to its newline without being
//! kept), is a [`LineError`] with its 1-based number, and the rest of the file is still read. A last line without its newline that is not JSON is a write in progress: it
//! is ignored, not an error, and no turn's `end_offset` passes it, so a growing transcript read
//! again later picks it up. Line types a reader does not know are skipped silently.
//!
//! # Turns
//!
//! A turn starts at a real prompt (each reader says what counts) and holds every line up to the
//! next real prompt, but for lines its reader knows belong to the next one (Claude Code writes
//! a run's opening lines before its prompt: see [`claude`]); `ended` is the time of its last
//! line and `end_offset` the byte just past it (its last active-branch entry for a pi tree), so
//! a turn read once reads the same however the transcript grows. Lines before the first prompt belong to no turn. The answer is the
//! assistant's text, pieces joined with a blank line; thinking is not kept.
//!
//! # Outcomes
//!
//! Decided from the last thing that happened in the turn:
//!
//! - `interrupted`: the user interrupted (claude `[Request interrupted by user…]`, codex
//!   `turn_aborted`, pi `stopReason: "aborted"`), or the session was resumed mid-turn (codex: a
//!   new `session_meta` while the turn was not completed). This wins over the rules below.
//! - `error`: the last event was an API error (claude `isApiErrorMessage`, codex `error` event,
//!   pi `stopReason: "error"`) or a tool result flagged as an error, with no answer after it.
//! - `completed`: the last event was assistant text and no tool call is waiting for its result.
//! - `unfinished`: anything else: the next prompt (or the end of the file) came before an
//!   answer, or while tool calls were pending, or after tool results with no reply to them.
//!
//! # Episodes
//!
//! A compaction note or a session summary, in file order. `first_turn` is one past the
//! `last_turn` of the episode before (or 0); `last_turn` is the latest turn started before the
//! episode's line (`None` when none was), so an automatic compaction in the middle of a turn
//! covers that turn.

pub mod claude;
pub mod codex;
pub mod memories;
pub mod pi;

mod builder;
mod content;
mod lines;

pub(crate) use builder::{Builder, hash64};
pub use builder::{ERRORS_KEPT, TURN_LIST_MAX, TURN_TEXT_BYTES};
pub(crate) use content::{Content, Snippet, SnippetVisitor, Text, exit_code_in, snippet, time};
pub(crate) use lines::{Line, Lines, parse_line};

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Seek};
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest transcript line read (256 MiB). A transcript is streamed, a line at a time,
/// so a file may be of any size; one line is held whole while it is parsed, so this bounds the
/// memory a line costs. A longer line is read to its newline without being kept and is a
/// [`LineError`] (the rest of the file is read). The largest real lines seen are tens of MB (a
/// tool's output); the issue's 100 MB line is read.
pub const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// How many characters of a command output or an error message are kept.
pub const SNIPPET_CHARS: usize = 300;

/// How many non-blank lines [`detect`] looks at.
const DETECT_LINES: usize = 10;

/// The coding agent that wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`~/.claude/projects/*/<session>.jsonl`).
    Claude,
    /// OpenAI Codex CLI (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
    /// pi (`~/.pi/agent/sessions/*/<time>_<uuid>.jsonl`).
    Pi,
}

impl Agent {
    /// Every agent, in the order they are documented.
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Pi];

    /// The lowercase name used in flags and records.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Pi => "pi",
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Agent {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "claude" | "claude-code" => Ok(Agent::Claude),
            "codex" => Ok(Agent::Codex),
            "pi" => Ok(Agent::Pi),
            _ => Err(Error::UnknownAgent(s.to_string())),
        }
    }
}

/// What parsing can fail on; everything else is reported inside the [`Transcript`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The first lines match none of the known formats.
    #[error(
        "cannot tell which agent wrote this transcript; to fix: name the agent with --agent claude, --agent codex or --agent pi"
    )]
    UnknownFormat,
    /// An agent name that is not one of ours.
    #[error("unknown agent `{0}`; expected claude, codex or pi")]
    UnknownAgent(String),
    /// The input could not be read.
    #[error("cannot read it: {0}")]
    Read(#[from] io::Error),
}

/// One session transcript, read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transcript {
    /// Who wrote it.
    pub agent: Agent,
    /// The session id found in the content, else the caller's fallback.
    pub session: String,
    /// The working directory the session ran in, when the transcript says.
    pub cwd: Option<String>,
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// Compaction notes and session summaries, in order.
    pub episodes: Vec<Episode>,
    /// Lines that could not be read.
    pub errors: Vec<LineError>,
    /// Tool calls and answers read outside any turn (before the first prompt). A transcript
    /// with some and no turn is one whose prompts this reader did not find.
    pub unattributed: usize,
}

/// One prompt and everything the agent did about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// 0-based position in the session (in the active branch of a pi tree).
    pub index: usize,
    /// 1-based line of the prompt.
    pub line: usize,
    /// Byte offset just past the last line that belongs to this turn.
    pub end_offset: u64,
    /// Time of the prompt.
    pub started: Option<DateTime<Utc>>,
    /// Time of the last line of the turn that has one.
    pub ended: Option<DateTime<Utc>>,
    /// What the user asked (text only; an image is `[image]`).
    pub prompt: String,
    /// The assistant's text replies, joined with a blank line.
    pub answer: String,
    /// How the turn ended.
    pub outcome: Outcome,
    /// Paths written or edited, deduplicated, in order of first write.
    pub files_written: Vec<String>,
    /// Shell commands the agent ran.
    pub commands: Vec<CommandRun>,
    /// Tool results flagged as errors and API errors, each cut to [`SNIPPET_CHARS`].
    pub errors: Vec<String>,
    /// Names of the tools called, in order, duplicates kept.
    pub tools: Vec<String>,
}

/// A shell command run during a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRun {
    /// The command line.
    pub command: String,
    /// Its exit status, when the transcript tells.
    pub exit: Option<i32>,
    /// The start of its output, cut to [`SNIPPET_CHARS`].
    pub output: String,
}

/// How a turn ended; the rules are in the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The turn ended with an assistant answer.
    Completed,
    /// The turn ended in an API error or a failed tool call.
    Error,
    /// The next prompt, or the end of the file, came before an answer.
    Unfinished,
    /// The user interrupted, or the session was resumed mid-turn.
    Interrupted,
}

impl Outcome {
    /// The lowercase name used in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Error => "error",
            Outcome::Unfinished => "unfinished",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// A compaction note or session summary, covering the turns since the one before.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    /// Which kind of note.
    pub kind: EpisodeKind,
    /// 1-based line it was read from.
    pub line: usize,
    /// When it was written, if the line says.
    pub time: Option<DateTime<Utc>>,
    /// The summary text.
    pub text: String,
    /// First turn it covers.
    pub first_turn: usize,
    /// Last turn it covers; `None` when no turn precedes it.
    pub last_turn: Option<usize>,
}

/// The kinds of [`Episode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EpisodeKind {
    /// The agent compacted its context and wrote what it kept.
    Compaction,
    /// A summary of the session (claude `summary` lines, pi branch summaries).
    Summary,
}

impl EpisodeKind {
    /// The lowercase name used in records.
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeKind::Compaction => "compaction",
            EpisodeKind::Summary => "summary",
        }
    }
}

/// A line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub message: String,
}

/// Which agent wrote `bytes`, judged from the `type` of its first JSON lines.
pub fn detect(bytes: &[u8]) -> Option<Agent> {
    let mut lines = Lines::new(io::Cursor::new(bytes), MAX_LINE_BYTES);
    detect_lines(&mut lines).unwrap_or(None)
}

/// [`detect`] over the next [`DETECT_LINES`] non-blank lines of `lines`.
fn detect_lines<R: BufRead + Seek>(lines: &mut Lines<R>) -> io::Result<Option<Agent>> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<Cow<'a, str>>,
    }
    for _ in 0..DETECT_LINES {
        let Some(line) = lines.next_line()? else {
            break;
        };
        if line.over.is_some() {
            continue;
        }
        let Ok(probe) = serde_json::from_slice::<Probe>(line.text) else {
            continue;
        };
        match probe.kind.as_deref() {
            Some(
                "user"
                | "assistant"
                | "summary"
                | "system"
                | "file-history-snapshot"
                | "queue-operation",
            ) => return Ok(Some(Agent::Claude)),
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted") => {
                return Ok(Some(Agent::Codex));
            }
            Some("session" | "message" | "model_change" | "thinking_level_change") => {
                return Ok(Some(Agent::Pi));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Reads a transcript held in memory: [`read`] over `bytes`, lines capped at
/// [`MAX_LINE_BYTES`]. `agent` forces the format; without it the content decides. The session
/// id comes from the content, else `fallback_session` (the file name, say).
pub fn parse(
    bytes: &[u8],
    agent: Option<Agent>,
    fallback_session: &str,
) -> Result<Transcript, Error> {
    read(
        io::Cursor::new(bytes),
        agent,
        fallback_session,
        MAX_LINE_BYTES,
    )
}

/// Reads a transcript from `input` (a file, say), streamed, into a [`Transcript`]: [`stream`]
/// with the turns and episodes collected. What the transcript keeps grows with its turns; a
/// caller that must not hold them all (ingest) streams them to a [`Sink`] instead.
pub fn read<R: BufRead + Seek>(
    input: R,
    agent: Option<Agent>,
    fallback_session: &str,
    max_line: usize,
) -> Result<Transcript, Error> {
    let mut collected = Collected::default();
    let summary = stream(
        input,
        agent,
        fallback_session,
        max_line,
        Preset::default(),
        &mut collected,
    )?;
    Ok(Transcript {
        agent: summary.agent,
        session: summary.session,
        cwd: summary.cwd,
        turns: collected.turns,
        episodes: collected.episodes,
        errors: summary.errors,
        unattributed: summary.unattributed,
    })
}

/// Reads a transcript from `input`, streamed: one line is held at a time, at most `max_line`
/// bytes of it, and each turn goes to `sink` when it closes, each episode when no turn can
/// come before it any more, so memory is bounded by the longest line plus one open turn (its
/// texts cut to [`TURN_TEXT_BYTES`], its lists to [`TURN_LIST_MAX`]), whatever the size of
/// the input. Detection reads the first lines, then the input is read from its start again; a
/// Codex rollout whose prompts are in another stream is read twice (the sink is told to
/// [`Sink::restart`]), a pi tree twice (ids first, then its active branch). `agent` forces the
/// format; without it the content decides. The session id comes from the content, else
/// `fallback_session`; `preset` gives the session and working directory before any line is
/// read (what an earlier pass found).
pub fn stream<R: BufRead + Seek>(
    input: R,
    agent: Option<Agent>,
    fallback_session: &str,
    max_line: usize,
    preset: Preset,
    sink: &mut dyn Sink,
) -> Result<Summary, Error> {
    let mut lines = Lines::new(input, max_line);
    let agent = match agent {
        Some(agent) => agent,
        None => {
            let found = detect_lines(&mut lines)?;
            lines.rewind()?;
            found.ok_or(Error::UnknownFormat)?
        }
    };
    let mut builder = Builder::new(agent, max_line, preset, sink);
    match agent {
        Agent::Claude => claude::read(&mut lines, &mut builder)?,
        Agent::Codex => codex::read(&mut lines, &mut builder)?,
        Agent::Pi => pi::read(&mut lines, &mut builder)?,
    }
    Ok(builder.finish(fallback_session)?)
}

/// What a transcript's session is known to be before it is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preset {
    /// The session id.
    pub session: Option<String>,
    /// The working directory.
    pub cwd: Option<String>,
}

/// What a streamed read found, besides the turns and episodes it gave its sink.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Who wrote it.
    pub agent: Agent,
    /// The session id found in the content, else the caller's fallback.
    pub session: String,
    /// The working directory the session ran in, when the transcript says.
    pub cwd: Option<String>,
    /// Lines that could not be read: the first [`ERRORS_KEPT`] of them.
    pub errors: Vec<LineError>,
    /// How many lines could not be read, all of them.
    pub bad_lines: usize,
    /// Tool calls and answers read outside any turn.
    pub unattributed: usize,
    /// Turns given to the sink.
    pub turns: usize,
    /// Episodes given to the sink.
    pub episodes: usize,
    /// The earliest time of a turn's start or an episode.
    pub earliest: Option<DateTime<Utc>>,
}

/// What the session is known to be when a turn or an episode is handed over: the session id
/// and working directory read so far (a later line may still name them).
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub agent: Agent,
    pub session: Option<&'a str>,
    pub cwd: Option<&'a str>,
}

/// Where a streamed read puts what it reads, in the order a session's records are kept: an
/// episode comes before every turn whose prompt is on a later line.
pub trait Sink {
    /// A turn, closed.
    fn turn(&mut self, at: &Context<'_>, turn: Turn) -> io::Result<()>;
    /// A compaction note or summary.
    fn episode(&mut self, at: &Context<'_>, episode: Episode) -> io::Result<()>;
    /// The reader starts over from the first line: forget everything given so far.
    fn restart(&mut self) -> io::Result<()>;
}

/// A [`Sink`] that keeps everything, for [`read`].
#[derive(Debug, Default)]
struct Collected {
    turns: Vec<Turn>,
    episodes: Vec<Episode>,
}

impl Sink for Collected {
    fn turn(&mut self, _: &Context<'_>, turn: Turn) -> io::Result<()> {
        self.turns.push(turn);
        Ok(())
    }
    fn episode(&mut self, _: &Context<'_>, episode: Episode) -> io::Result<()> {
        self.episodes.push(episode);
        Ok(())
    }
    fn restart(&mut self) -> io::Result<()> {
        *self = Collected::default();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sessions");

    /// Every fixture transcript: agent, file, turns and episodes counted by
    /// `tests/fixtures/sessions/count_prompts.py` (see the README there).
    pub(crate) const COUNTS: [(Agent, &str, usize, usize); 9] = [
        // A real Claude Code 2.1.332 session: `claude -p`, then `--resume` with a question,
        // then `--resume` with `/compact` (made by record.mjs there).
        (Agent::Claude, "claude/resumed.jsonl", 3, 1),
        (
            Agent::Claude,
            "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
            1,
            0,
        ),
        (
            Agent::Claude,
            "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
            1,
            0,
        ),
        (
            Agent::Claude,
            "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            2,
            1,
        ),
        (Agent::Claude, "claude-code/session-624a4a58.jsonl", 15, 1),
        (Agent::Claude, "claude-code/session-9eda1058.jsonl", 3, 16),
        (
            Agent::Codex,
            "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
            2,
            0,
        ),
        (
            Agent::Codex,
            "codex-event-prompts/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5dd0e01.jsonl",
            2,
            0,
        ),
        (Agent::Pi, "pi/before-compaction.jsonl", 55, 2),
    ];

    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{name}")).expect("the fixture is in the repository")
    }

    #[test]
    fn every_fixture_has_the_independently_counted_turns_and_episodes() {
        for (agent, name, turns, episodes) in COUNTS {
            let t = parse(&fixture(name), None, "fallback").unwrap();
            assert_eq!(t.agent, agent, "{name}");
            assert_eq!(t.turns.len(), turns, "{name}: turns");
            assert_eq!(t.episodes.len(), episodes, "{name}: episodes");
            assert!(t.errors.is_empty(), "{name}: {:?}", t.errors);
            assert_ne!(
                t.session, "fallback",
                "{name}: the session id is in the content"
            );
            assert!(t.cwd.is_some(), "{name}: cwd");
            for (i, turn) in t.turns.iter().enumerate() {
                assert_eq!(turn.index, i);
                assert!(!turn.prompt.is_empty(), "{name}: turn {i} has a prompt");
            }
        }
    }

    #[test]
    fn detection_names_the_agent_of_every_fixture() {
        for (agent, name, _, _) in COUNTS {
            assert_eq!(detect(&fixture(name)), Some(agent), "{name}");
        }
        assert_eq!(detect(b"not json\n{\"a\":1}\n"), None);
        assert!(matches!(
            parse(b"{\"type\":\"weird\"}\n", None, "x"),
            Err(Error::UnknownFormat)
        ));
    }

    #[test]
    fn a_wrong_forced_agent_reads_no_turns_and_does_not_panic() {
        for (agent, name, _, _) in COUNTS {
            let bytes = fixture(name);
            for wrong in Agent::ALL.into_iter().filter(|a| *a != agent) {
                let t = parse(&bytes, Some(wrong), "x").unwrap();
                assert!(
                    t.turns.is_empty(),
                    "{name} read as {wrong}: {} turns",
                    t.turns.len()
                );
            }
        }
    }

    #[test]
    fn a_transcript_cut_at_a_turn_end_reads_as_a_prefix_of_the_whole() {
        for (_, name, _, _) in COUNTS {
            let bytes = fixture(name);
            let whole = parse(&bytes, None, "x").unwrap();
            for cut in whole.turns.iter().map(|t| t.end_offset as usize) {
                let part = parse(&bytes[..cut], None, "x").unwrap();
                assert_eq!(
                    part.turns[..],
                    whole.turns[..part.turns.len()],
                    "{name} cut at {cut}"
                );
                assert!(part.errors.is_empty());
            }
            // A cut in the middle of a line: the torn line is neither an error nor a turn's.
            let middle = bytes.len() / 2;
            let part = parse(&bytes[..middle], None, "x").unwrap();
            assert!(part.errors.is_empty(), "{name}: {:?}", part.errors);
            assert!(part.turns.iter().all(|t| t.end_offset as usize <= middle));
        }
    }

    #[test]
    fn a_garbage_line_is_one_error_and_the_lines_after_it_are_read() {
        for (_, name, turns, _) in COUNTS {
            let bytes = fixture(name);
            let whole = parse(&bytes, None, "x").unwrap();
            let Some(second) = whole.turns.get(1) else {
                continue;
            };
            // Put the garbage just before the second prompt (the start of its line).
            let at = bytes
                .split_inclusive(|&b| b == b'\n')
                .take(second.line - 1)
                .map(<[u8]>::len)
                .sum::<usize>();
            let mut spoiled = bytes[..at].to_vec();
            spoiled.extend_from_slice(b"this is {not json\n\n{\"type\":\"from-the-future\"}\n");
            spoiled.extend_from_slice(&bytes[at..]);
            let t = parse(&spoiled, None, "x").unwrap();
            assert_eq!(t.turns.len(), turns, "{name}");
            assert_eq!(t.errors.len(), 1, "{name}");
            assert_eq!(t.errors[0].line, second.line, "{name}");
            assert_eq!(t.turns[1].line, second.line + 3, "{name}");
            assert_eq!(t.turns[1].prompt, second.prompt, "{name}");
        }
    }

    #[test]
    fn exit_codes_are_read_from_the_texts_agents_write() {
        let cases = [
            ("Exit code 2\nboom", Some(2)),
            ("...\n\nCommand exited with code 1", Some(1)),
            ("Process exited with code 0\nOutput:", Some(0)),
            ("Exit code: 127", Some(127)),
            ("all good", None),
        ];
        for (text, want) in cases {
            assert_eq!(exit_code_in(text), want, "{text}");
        }
    }

    #[test]
    fn snippets_keep_the_start_of_long_texts() {
        let long = "é".repeat(1000);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
        let parsed: Snippet =
            serde_json::from_str(&format!("\"{}\\n\"", "x".repeat(5000))).unwrap();
        assert!(parsed.0.len() <= SNIPPET_CHARS + 1);
        let blocks: Snippet =
            serde_json::from_str(r#"[{"type":"text","text":"a"},{"type":"image"}]"#).unwrap();
        assert_eq!(blocks.0, "a\n[image]");
    }

    /// A line as the tests see it: (number, start, end, text, complete, over).
    type Seen = (usize, u64, u64, Vec<u8>, bool, Option<u64>);

    /// Every line `Lines` gives for `bytes` read `chunk` bytes at a time, capped at `max`.
    fn read_lines(bytes: &[u8], chunk: usize, max: usize) -> Vec<Seen> {
        let input = io::BufReader::with_capacity(chunk, io::Cursor::new(bytes));
        let mut lines = Lines::new(input, max);
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push((
                l.number,
                l.start,
                l.end,
                l.text.to_vec(),
                l.complete,
                l.over,
            ));
        }
        out
    }

    #[test]
    fn the_line_reader_numbers_lines_and_keeps_their_ends_whatever_its_buffer() {
        let text = b"{\"a\":1}\r\n\n  \r\n{\"b\":22}\n\n{\"c\":3}";
        let want = vec![
            (1, 0, 9, b"{\"a\":1}\r".to_vec(), true, None),
            (4, 14, 23, b"{\"b\":22}".to_vec(), true, None),
            (6, 24, 31, b"{\"c\":3}".to_vec(), false, None),
        ];
        for chunk in [1, 2, 3, 7, 64] {
            assert_eq!(read_lines(text, chunk, 100), want, "chunk {chunk}");
        }
        // A final newline ends the last line: no empty line after it.
        let lines = read_lines(b"{}\n{}\n", 4, 100);
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[1].2, lines[1].4), (6, true));
        assert!(read_lines(b"", 4, 100).is_empty());
        assert!(read_lines(b"\n \n\t\n", 1, 100).is_empty());
    }

    #[test]
    fn a_line_at_the_cap_is_kept_and_a_longer_one_is_dropped_to_its_newline() {
        let at_cap = "x".repeat(10);
        let over = "y".repeat(11);
        let text = format!("{at_cap}\n{over}\n{{}}\n{over}");
        for chunk in [1, 3, 8, 64] {
            let lines = read_lines(text.as_bytes(), chunk, 10);
            assert_eq!(lines.len(), 4, "chunk {chunk}");
            assert_eq!(lines[0].3, at_cap.as_bytes());
            assert_eq!(lines[0].5, None);
            assert_eq!((lines[1].0, lines[1].2), (2, 23));
            assert_eq!((lines[1].3.len(), lines[1].5), (0, Some(11)));
            assert_eq!((lines[2].0, lines[2].3.as_slice()), (3, &b"{}"[..]));
            assert_eq!((lines[3].4, lines[3].5), (false, Some(11)));
            assert_eq!(lines[3].2, text.len() as u64);
        }
        // A long run of blanks is still a blank line, over the cap or not.
        let blanks = format!("{}\n{{}}", " ".repeat(50));
        let lines = read_lines(blanks.as_bytes(), 4, 10);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].0, 2);
    }

    #[test]
    fn a_line_over_the_cap_is_an_error_naming_it_and_the_rest_is_read() {
        for (agent, name, _, _) in COUNTS {
            let bytes = fixture(name);
            let whole = parse(&bytes, None, "x").unwrap();
            let longest = bytes.split(|&b| b == b'\n').map(<[u8]>::len).max().unwrap();
            // At the longest line: the same transcript as without a cap.
            let at = read(io::Cursor::new(&bytes[..]), None, "x", longest).unwrap();
            assert_eq!(at, whole, "{name}");
            // Under it: each longer line is one error with its number; the file is still read.
            let cap = 2000;
            let long: Vec<usize> = bytes
                .split(|&b| b == b'\n')
                .enumerate()
                .filter(|(_, l)| l.len() > cap)
                .map(|(i, _)| i + 1)
                .collect();
            let capped = read(io::Cursor::new(&bytes[..]), Some(agent), "x", cap).unwrap();
            let named: Vec<usize> = capped.errors.iter().map(|e| e.line).collect();
            assert_eq!(named, long, "{name}");
            assert!(
                capped
                    .errors
                    .iter()
                    .all(|e| e.message.contains("over the 2000 bytes")),
                "{name}: {:?}",
                capped.errors
            );
            assert!(!capped.turns.is_empty(), "{name}");
        }
    }

    #[test]
    fn a_big_transcript_read_in_small_pieces_is_the_one_read_whole() {
        // Many turns of every format, read from a buffer of 5 bytes (lines cut across reads,
        // pi's entries found again by a second pass) and from the whole slice at once.
        for (agent, name, _, _) in COUNTS {
            let bytes = fixture(name);
            let whole = parse(&bytes, None, "x").unwrap();
            let input = io::BufReader::with_capacity(5, io::Cursor::new(&bytes[..]));
            let streamed = read(input, Some(agent), "x", MAX_LINE_BYTES).unwrap();
            assert_eq!(streamed, whole, "{name}");
            assert!(!whole.turns.is_empty(), "{name}");
        }
    }
}
