//! The [`Builder`] every reader feeds: it cuts a stream of events into turns and episodes,
//! decides each turn's outcome (the rules are in the module docs of [`super`]) and hands each
//! to the [`Sink`] as soon as it is settled; the caps on what one open turn may hold.

use std::collections::{HashMap, HashSet};
use std::io;

use chrono::{DateTime, Utc};

use super::*;

/// What happened last in the open turn; decides its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    Answer,
    ToolCall,
    ToolOk,
    ToolError,
    ApiError,
}

/// The most bytes of a turn's prompt, and of its answer, kept while reading (cut on a
/// character boundary). Cards keep far less; this bounds what one turn costs.
pub const TURN_TEXT_BYTES: usize = 64 * 1024;

/// The most tools, files, commands and errors one turn lists while reading (cards keep 40).
pub const TURN_LIST_MAX: usize = 1000;

/// How many unreadable lines a read names; the rest are counted.
pub const ERRORS_KEPT: usize = 1000;

/// How many episodes one open turn may hold back (they wait for the turn to be handed over
/// first); more are unreadable lines.
const EPISODES_HELD_MAX: usize = 1000;

/// A key kept in place of a text (a call id, an entry id, a prompt, a card id) where only its
/// equality matters: 8 bytes, so a million of them cost numbers, not their texts. Stable within
/// a process (the hasher's keys are fixed), not meant to be stored.
pub(crate) fn hash64<T: std::hash::Hash + ?Sized>(value: &T) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A turn being read.
#[derive(Debug)]
struct Open {
    turn: Turn,
    last: Last,
    /// Tool calls waiting for their result, by call id; the value is the command's index.
    pending: HashMap<u64, Option<usize>>,
    /// Command index by call id, kept after the result so late exit codes find it.
    commands: HashMap<u64, usize>,
    /// Text already taken as answer, per reply id (hashed): a reply split over lines counts
    /// once.
    seen: HashSet<u64>,
    interrupted: bool,
}

impl Open {
    fn outcome(&self) -> Outcome {
        if self.interrupted {
            Outcome::Interrupted
        } else if matches!(self.last, Last::ApiError | Last::ToolError) {
            Outcome::Error
        } else if self.last == Last::Answer && self.pending.is_empty() {
            Outcome::Completed
        } else {
            Outcome::Unfinished
        }
    }
}

/// Cuts a stream of events into turns and episodes, handing each to the sink as soon as it is
/// settled; each reader feeds it.
pub(crate) struct Builder<'s> {
    agent: Agent,
    /// Session id found in the content.
    pub session: Option<String>,
    /// Working directory found in the content.
    pub cwd: Option<String>,
    preset: Preset,
    sink: &'s mut dyn Sink,
    /// The first error the sink returned; nothing more is handed over after it.
    failed: Option<io::Error>,
    /// Turns closed (and handed over) so far.
    closed: usize,
    /// Episodes read but not handed over yet: they wait for the open turn, whose line is before
    /// theirs, and the last may still get its text ([`Builder::compaction_text`]).
    held: std::collections::VecDeque<Episode>,
    /// Episodes handed over.
    episodes: usize,
    /// `last_turn` of the latest episode read, if any was.
    last_episode_turn: Option<Option<usize>>,
    earliest: Option<DateTime<Utc>>,
    errors: Vec<LineError>,
    bad_lines: usize,
    open: Option<Open>,
    /// Tool calls and answers seen while no turn was open.
    unattributed: usize,
    /// The longest line read, in bytes (named in the error for a longer one).
    pub(super) max_line: usize,
}

impl<'s> Builder<'s> {
    pub(super) fn new(
        agent: Agent,
        max_line: usize,
        preset: Preset,
        sink: &'s mut dyn Sink,
    ) -> Self {
        Builder {
            agent,
            max_line,
            session: preset.session.clone(),
            cwd: preset.cwd.clone(),
            preset,
            sink,
            failed: None,
            closed: 0,
            held: std::collections::VecDeque::new(),
            episodes: 0,
            last_episode_turn: None,
            earliest: None,
            errors: Vec::new(),
            bad_lines: 0,
            open: None,
            unattributed: 0,
        }
    }

    /// Starts over, for another pass from the first line: the sink forgets what it was given.
    pub fn restart(&mut self) -> io::Result<()> {
        self.sink.restart()?;
        self.session = self.preset.session.clone();
        self.cwd = self.preset.cwd.clone();
        self.failed = None;
        self.closed = 0;
        self.held.clear();
        self.episodes = 0;
        self.last_episode_turn = None;
        self.earliest = None;
        self.errors.clear();
        self.bad_lines = 0;
        self.open = None;
        self.unattributed = 0;
        Ok(())
    }

    /// A line that could not be read: named while fewer than [`ERRORS_KEPT`] are, counted.
    pub fn bad_line(&mut self, error: LineError) {
        self.bad_lines += 1;
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(error);
        }
    }

    /// Whether a turn has started.
    pub fn in_turn(&self) -> bool {
        self.open.is_some()
    }

    /// Whether the open turn would end `completed` if it ended now.
    pub fn completed(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|o| o.outcome() == Outcome::Completed)
    }

    /// Starts a turn at a real prompt, closing the one before.
    pub fn prompt(&mut self, line: &Line, time: Option<DateTime<Utc>>, prompt: String) {
        self.close();
        let prompt = if prompt.len() > TURN_TEXT_BYTES {
            cut_bytes(&prompt, TURN_TEXT_BYTES).to_string()
        } else {
            prompt
        };
        self.open = Some(Open {
            turn: Turn {
                index: self.closed,
                line: line.number,
                end_offset: line.end,
                started: time,
                ended: time,
                prompt,
                answer: String::new(),
                outcome: Outcome::Unfinished,
                files_written: Vec::new(),
                commands: Vec::new(),
                errors: Vec::new(),
                tools: Vec::new(),
            },
            last: Last::Nothing,
            pending: HashMap::new(),
            commands: HashMap::new(),
            seen: HashSet::new(),
            interrupted: false,
        });
    }

    /// Counts `line` (read at `time`) as part of the open turn, if any.
    pub fn touch(&mut self, line: &Line, time: Option<DateTime<Utc>>) {
        if let Some(open) = &mut self.open {
            open.turn.end_offset = open.turn.end_offset.max(line.end);
            if time.is_some() {
                open.turn.ended = time;
            }
        }
    }

    /// Assistant text. `reply` is the id of the message it belongs to, if the format has one:
    /// the same text seen again under the same id is a repeat, not more answer.
    pub fn answer(&mut self, reply: Option<&str>, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let Some(open) = &mut self.open else {
            self.unattributed += 1;
            return;
        };
        if let Some(id) = reply
            && !open.seen.insert(hash64(&(id, text)))
        {
            return;
        }
        let answer = &mut open.turn.answer;
        if answer.len() < TURN_TEXT_BYTES {
            if !answer.is_empty() {
                answer.push_str("\n\n");
            }
            let room = TURN_TEXT_BYTES.saturating_sub(answer.len());
            answer.push_str(cut_bytes(text, room));
        }
        open.last = Last::Answer;
    }

    /// A tool call: its id (for pairing), the tool's name, the shell command it runs if it is
    /// one, and the files it writes. A call id seen before in this turn is a repeat and ignored.
    pub fn tool_call<'p>(
        &mut self,
        id: &str,
        name: &str,
        command: Option<String>,
        files: impl IntoIterator<Item = Cow<'p, str>>,
    ) {
        let Some(open) = &mut self.open else {
            self.unattributed += 1;
            return;
        };
        let key = hash64(id);
        if !id.is_empty() && (open.pending.contains_key(&key) || open.commands.contains_key(&key)) {
            return;
        }
        let turn = &mut open.turn;
        if turn.tools.len() < TURN_LIST_MAX {
            turn.tools.push(name.to_string());
        }
        let index = command
            .filter(|_| turn.commands.len() < TURN_LIST_MAX)
            .map(|command| {
                turn.commands.push(CommandRun {
                    command,
                    exit: None,
                    output: String::new(),
                });
                turn.commands.len() - 1
            });
        if let Some(i) = index {
            open.commands.insert(key, i);
        }
        for file in files {
            if !file.is_empty()
                && turn.files_written.len() < TURN_LIST_MAX
                && !turn.files_written.iter().any(|f| f == file.as_ref())
            {
                turn.files_written.push(file.into_owned());
            }
        }
        open.pending.insert(key, index);
        open.last = Last::ToolCall;
    }

    /// The result of tool call `id`. A command's exit status is `exit` when given; a non-zero
    /// exit makes the result an error.
    pub fn tool_result(&mut self, id: &str, is_error: bool, exit: Option<i32>, output: &str) {
        let Some(open) = &mut self.open else { return };
        let key = hash64(id);
        if open.pending.remove(&key).is_none() && !open.commands.contains_key(&key) {
            // A result whose call is not in this turn (a repeat, or a call before the prompt).
            return;
        }
        let is_error = is_error || exit.is_some_and(|e| e != 0);
        // A failure already recorded by `command_exit` is not recorded twice.
        let mut recorded = false;
        if let Some(&i) = open.commands.get(&key) {
            let run = &mut open.turn.commands[i];
            recorded = run.exit.is_some_and(|e| e != 0);
            if exit.is_some() {
                run.exit = exit;
            }
            if run.output.is_empty() {
                run.output = snippet(output);
            }
        }
        if is_error && !recorded && open.turn.errors.len() < TURN_LIST_MAX {
            let message = snippet(output);
            open.turn.errors.push(if message.is_empty() {
                format!(
                    "{} failed",
                    open.turn.tools.last().map_or("tool", String::as_str)
                )
            } else {
                message
            });
        }
        open.last = if is_error {
            Last::ToolError
        } else {
            Last::ToolOk
        };
    }

    /// An exit status learnt after the result (codex `exec_command_end`, a finished background
    /// process). A newly known non-zero exit is recorded as an error.
    pub fn command_exit(&mut self, id: &str, exit: i32, output: &str) {
        let Some(open) = &mut self.open else { return };
        let Some(&i) = open.commands.get(&hash64(id)) else {
            return;
        };
        let run = &mut open.turn.commands[i];
        let known = run.exit.is_some();
        run.exit = Some(exit);
        if run.output.is_empty() {
            run.output = snippet(output);
        }
        if !known && exit != 0 && open.turn.errors.len() < TURN_LIST_MAX {
            let message = format!("exit {exit}: {}", run.command);
            open.turn.errors.push(snippet(&message));
        }
    }

    /// A shell command the user ran themselves (pi `!cmd`): not a tool call of the agent.
    pub fn user_command(&mut self, command: &str, exit: Option<i32>, output: &str) {
        let Some(open) = &mut self.open else { return };
        if open.turn.commands.len() >= TURN_LIST_MAX {
            return;
        }
        let output = snippet(output);
        open.turn.commands.push(CommandRun {
            command: command.to_string(),
            exit,
            output,
        });
    }

    /// An error from the model's API.
    pub fn api_error(&mut self, message: &str) {
        let Some(open) = &mut self.open else { return };
        if open.turn.errors.len() < TURN_LIST_MAX {
            open.turn.errors.push(snippet(message));
        }
        open.last = Last::ApiError;
    }

    /// The user interrupted the open turn (or the session was resumed in its middle).
    pub fn interrupt(&mut self) {
        if let Some(open) = &mut self.open {
            open.interrupted = true;
        }
    }

    /// A compaction note or summary read at `line`.
    pub fn episode(
        &mut self,
        kind: EpisodeKind,
        line: &Line,
        time: Option<DateTime<Utc>>,
        text: String,
    ) {
        let started = self.closed + usize::from(self.open.is_some());
        let last_turn = started.checked_sub(1);
        let after_previous = self.last_episode_turn.flatten().map_or(0, |t| t + 1);
        // Two episodes in one turn: the second covers (the rest of) that turn.
        let first_turn = after_previous.min(last_turn.unwrap_or(0));
        self.last_episode_turn = Some(last_turn);
        if self.open.is_none() {
            // No turn is open: every episode held is before any turn still to come.
            while let Some(e) = self.held.pop_front() {
                self.hand_episode(e);
            }
        } else if self.held.len() >= EPISODES_HELD_MAX {
            self.bad_line(LineError {
                line: line.number,
                message: format!(
                    "more than {EPISODES_HELD_MAX} compactions or summaries in one turn; skipped"
                ),
            });
            return;
        }
        let text = text.trim();
        self.held.push_back(Episode {
            kind,
            line: line.number,
            time,
            text: cut_bytes(text, TURN_TEXT_BYTES).to_string(),
            first_turn,
            last_turn,
        });
    }

    /// The text of the last episode, if it is a compaction still without one.
    pub fn compaction_text(&mut self) -> Option<&mut String> {
        self.held
            .back_mut()
            .filter(|e| e.kind == EpisodeKind::Compaction && e.text.is_empty())
            .map(|e| &mut e.text)
    }
}

/// The earlier of two times, either missing.
fn earlier(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Builder<'_> {
    /// Gives the sink something with what is known of the session, unless it failed before
    /// (its first error is kept for the end of the read).
    fn hand(&mut self, give: impl FnOnce(&mut dyn Sink, &Context<'_>) -> io::Result<()>) {
        if self.failed.is_some() {
            return;
        }
        let at = Context {
            agent: self.agent,
            session: self.session.as_deref(),
            cwd: self.cwd.as_deref(),
        };
        if let Err(e) = give(&mut *self.sink, &at) {
            self.failed = Some(e);
        }
    }

    fn hand_episode(&mut self, episode: Episode) {
        self.earliest = earlier(self.earliest, episode.time);
        self.episodes += 1;
        self.hand(|sink, at| sink.episode(at, episode));
    }

    fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let outcome = open.outcome();
        let mut turn = open.turn;
        turn.outcome = outcome;
        // The episodes read before this turn's prompt go first.
        while self.held.front().is_some_and(|e| e.line < turn.line) {
            let e = self.held.pop_front().expect("just looked");
            self.hand_episode(e);
        }
        self.earliest = earlier(self.earliest, turn.started);
        self.closed += 1;
        self.hand(|sink, at| sink.turn(at, turn));
    }

    pub(super) fn finish(mut self, fallback_session: &str) -> io::Result<Summary> {
        self.close();
        while let Some(e) = self.held.pop_front() {
            self.hand_episode(e);
        }
        if let Some(e) = self.failed {
            return Err(e);
        }
        Ok(Summary {
            agent: self.agent,
            session: self.session.unwrap_or_else(|| fallback_session.to_string()),
            cwd: self.cwd,
            errors: self.errors,
            bad_lines: self.bad_lines,
            unattributed: self.unattributed,
            turns: self.closed,
            episodes: self.episodes,
            earliest: self.earliest,
        })
    }
}
