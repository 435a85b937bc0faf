//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, versions 1.x–2.x).
//!
//! Each line has a `type`: `user`, `assistant`, `system`, `summary`, and bookkeeping types
//! (`file-history-snapshot`, `queue-operation`) that are skipped.
//!
//! - **Prompts.** A real prompt is a `user` line that is not `isSidechain` (a subagent's
//!   conversation), not `isMeta` (the expansion of a slash command, the "Caveat:" line), not
//!   `isCompactSummary`, carries no `tool_result`, and whose text does not start with a wrapper
//!   the client injects: `<local-command-stdout>`, `<local-command-stderr>`, `<bash-input>`,
//!   `<bash-stdout>`, `<bash-stderr>`, `Caveat:` or `[Request interrupted`. A slash command the
//!   user typed (`<command-name>/init</command-name>…`) is a prompt, read as `/init args`; its
//!   output is not. A `!` shell command (`<bash-input>`) is not a prompt, as in pi.
//! - **Replies.** Claude Code writes one reply as several lines sharing `message.id`, one
//!   content block each; a text block seen again under the same id is not counted twice.
//!   Thinking is dropped. An `isApiErrorMessage` line is an API error, not an answer.
//! - **Tools.** `tool_use` is paired with its `tool_result` by `tool_use_id`. `Bash` is a
//!   command: exit 0 when its result is not `is_error` (unknown when it went to the
//!   background), else the number in "Exit code N" if the text has one. `Write`, `Edit`,
//!   `MultiEdit` write `file_path`, `NotebookEdit` writes `notebook_path`.
//! - **Interruptions.** A `user` text starting `[Request interrupted by user` interrupts the
//!   turn.
//! - **Episodes.** `system` / `compact_boundary` opens a compaction; the `isCompactSummary` user
//!   line after it gives its text. Each `summary` line is a summary episode (Claude Code writes
//!   them at the top of a resumed file, one per earlier leaf, so there can be many).
//! - `queue-operation` lines (a message typed while the agent worked) are not prompts: the
//!   text reaches the model inside the running turn.
//! - **What a turn's end is.** A turn ends at the last line of its own, not at whatever comes
//!   before the next prompt: Claude Code starts every run (`claude -p`, `--resume`) by writing
//!   `queue-operation` enqueue/dequeue lines, a `/compact` writes its `compact_boundary` and
//!   summary and the `isMeta` caveat before its own prompt line, and a session started again
//!   writes its SessionStart hooks' `attachment` lines. None of these extends the turn before
//!   it (its `ended`, its `end_offset`), so a card made before a session was resumed never
//!   changes after (issue 31: turn 1's duration went 168 → 3644 ms when a resumed run began).
//!   Nor does a bookkeeping line without a time of its own (`last-prompt`, `cost-state`,
//!   `mode`, `atis-latch`, …), which a run writes at its end and the next at its start alike.

use serde::Deserialize;
use std::borrow::Cow;

use std::io::{self, BufRead, Seek};

use super::{Builder, Content, EpisodeKind, Line, Lines, exit_code_in, parse_line, time};

/// Texts that start a `user` line the client wrote, not the person.
const WRAPPERS: [&str; 7] = [
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "Caveat:",
    "[Request interrupted",
];

/// What Claude Code writes when the user stops a turn (then ` by user]` or ` by user for tool
/// use]`).
const INTERRUPTED: &str = "[Request interrupted by user";

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: Option<Cow<'a, str>>,
    #[serde(default)]
    attachment: Option<Attachment>,
}

/// An `attachment` line's payload: only which hook event wrote it matters here; any other
/// shape is ignored, never an error.
#[derive(Deserialize)]
#[serde(untagged)]
enum Attachment {
    Hook {
        #[serde(rename = "hookEvent")]
        hook_event: String,
    },
    Other(serde::de::IgnoredAny),
}

impl Entry<'_> {
    /// Whether the line, read at `at`, is part of the open turn (see the module docs).
    fn extends_the_turn(&self, at: Option<chrono::DateTime<chrono::Utc>>) -> bool {
        let conversation = matches!(self.kind.as_ref(), "user" | "assistant" | "system");
        !self.opens_a_run() && (at.is_some() || conversation)
    }

    /// Whether the line is one a run writes before its prompt (or a session start writes),
    /// which is never part of the turn before it.
    fn opens_a_run(&self) -> bool {
        match self.kind.as_ref() {
            "queue-operation" => true,
            "system" => self.subtype.as_deref() == Some("compact_boundary"),
            "user" => self.compact_summary.unwrap_or(false) || self.meta.unwrap_or(false),
            "attachment" => matches!(
                &self.attachment,
                Some(Attachment::Hook { hook_event }) if hook_event == "SessionStart"
            ),
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

/// Feeds the lines of a Claude Code transcript to `b`.
pub(crate) fn read<R: BufRead + Seek>(lines: &mut Lines<R>, b: &mut Builder) -> io::Result<()> {
    while let Some(line) = lines.next_line()? {
        let Some(entry) = parse_line::<Entry>(&line, b) else {
            continue;
        };
        let at = time(entry.timestamp.as_deref());
        if b.session.is_none() {
            b.session = entry.session_id.as_deref().map(str::to_string);
        }
        if b.cwd.is_none() {
            b.cwd = entry.cwd.as_deref().map(str::to_string);
        }
        if !entry.sidechain.unwrap_or(false) {
            match entry.kind.as_ref() {
                "user" => user(&entry, &line, at, b),
                "assistant" => assistant(&entry, b),
                "summary" => {
                    let text = entry.summary.as_deref().unwrap_or("").to_string();
                    b.episode(EpisodeKind::Summary, &line, at, text);
                }
                "system" if entry.subtype.as_deref() == Some("compact_boundary") => {
                    b.episode(EpisodeKind::Compaction, &line, at, String::new());
                }
                _ => {}
            }
        }
        if entry.extends_the_turn(at) {
            b.touch(&line, at);
        }
    }
    Ok(())
}

fn user(entry: &Entry, line: &Line, at: Option<chrono::DateTime<chrono::Utc>>, b: &mut Builder) {
    let Some(message) = &entry.message else {
        return;
    };
    if entry.compact_summary.unwrap_or(false) {
        let text = message.content.text();
        match b.compaction_text() {
            Some(slot) => *slot = text.trim().to_string(),
            None => b.episode(EpisodeKind::Compaction, line, at, text),
        }
        return;
    }
    let mut tool_results = false;
    for block in message
        .content
        .blocks()
        .iter()
        .filter(|b| b.kind == "tool_result")
    {
        tool_results = true;
        let output = &block.content.0;
        let is_error = block.is_error.unwrap_or(false);
        let exit = if is_error {
            exit_code_in(output)
        } else if output.starts_with("Command running in background") {
            None
        } else {
            Some(0)
        };
        b.tool_result(
            block.tool_use_id.as_deref().unwrap_or(""),
            is_error,
            exit,
            output,
        );
    }
    let text = message.content.text();
    let text = text.trim();
    if text.starts_with(INTERRUPTED) {
        b.interrupt();
        return;
    }
    if tool_results || entry.meta.unwrap_or(false) || text.is_empty() {
        return;
    }
    if WRAPPERS.iter().any(|w| text.starts_with(w)) {
        return;
    }
    b.prompt(line, at, prompt_text(text));
}

/// A typed slash command reads as `/name args`; anything else as it is.
fn prompt_text(text: &str) -> String {
    match tag(text, "command-name") {
        Some(name) => {
            let args = tag(text, "command-args").unwrap_or("").trim();
            if args.is_empty() {
                name.to_string()
            } else {
                format!("{name} {args}")
            }
        }
        None => text.to_string(),
    }
}

/// The trimmed text inside `<name>…</name>`.
fn tag<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{name}>"))? + start;
    Some(text[start..end].trim())
}

fn assistant(entry: &Entry, b: &mut Builder) {
    let Some(message) = &entry.message else {
        return;
    };
    if entry.api_error.unwrap_or(false) {
        b.api_error(&message.content.text());
        return;
    }
    let reply = message.id.as_deref();
    for block in message.content.blocks() {
        match block.kind.as_ref() {
            "text" => b.answer(reply, block.text.as_deref().unwrap_or("")),
            "tool_use" => {
                let name = block.name.as_deref().unwrap_or("");
                let input = block.input.as_ref();
                let command = match name {
                    "Bash" => input.and_then(|i| i.command.as_deref()).map(str::to_string),
                    _ => None,
                };
                let file = match name {
                    "Write" | "Edit" | "MultiEdit" => input.and_then(|i| i.file_path.clone()),
                    "NotebookEdit" => input.and_then(|i| i.notebook_path.clone()),
                    _ => None,
                };
                b.tool_call(block.id.as_deref().unwrap_or(""), name, command, file);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::super::{Agent, Outcome, Transcript, parse};

    fn read(text: &str) -> Transcript {
        parse(text.as_bytes(), Some(Agent::Claude), "fallback").unwrap()
    }

    const PROMPT: &str = r#"{"type":"user","sessionId":"s1","cwd":"/w","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"fix it"}}"#;

    #[test]
    fn a_reply_split_over_lines_is_one_reply_and_repeats_are_not_counted() {
        let t = read(&[
            PROMPT,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"false"}}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Exit code 1"}]}}"#,
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"It fails."}]}}"#,
        ].join("\n"));
        let turn = &t.turns[0];
        assert_eq!(turn.answer, "Looking.\n\nIt fails.");
        assert_eq!(turn.tools, ["Bash"]);
        assert_eq!(turn.commands[0].command, "false");
        assert_eq!(turn.commands[0].exit, Some(1));
        assert_eq!(turn.errors, ["Exit code 1"]);
        assert_eq!(turn.outcome, Outcome::Completed);
        assert_eq!(t.session, "s1");
        assert_eq!(t.cwd.as_deref(), Some("/w"));
    }

    #[test]
    fn tool_results_pair_with_their_calls_by_id() {
        let t = read(&[
            PROMPT,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"b","name":"Write","input":{"file_path":"x.rs","content":"big"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b","content":"written"}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"src"}]}]}}"#,
        ].join("\n"));
        let turn = &t.turns[0];
        assert_eq!(turn.commands[0].output, "src");
        assert_eq!(turn.commands[0].exit, Some(0));
        assert_eq!(turn.files_written, ["x.rs"]);
        // Results but no reply to them.
        assert_eq!(turn.outcome, Outcome::Unfinished);
    }

    #[test]
    fn outcomes_follow_the_last_event_of_the_turn() {
        let answer =
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"ok"}]}}"#;
        let call = r#"{"type":"assistant","message":{"id":"n","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]}}"#;
        let failed = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":"no such file"}]}}"#;
        let stop = r#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#;
        let api = r#"{"type":"assistant","isApiErrorMessage":true,"message":{"id":"e","content":[{"type":"text","text":"API Error: 529 overloaded"}]}}"#;
        let cases: [(&[&str], Outcome); 6] = [
            (&[answer], Outcome::Completed),
            (&[call], Outcome::Unfinished),
            (&[], Outcome::Unfinished),
            (&[call, failed], Outcome::Error),
            (&[answer, api], Outcome::Error),
            (&[call, stop], Outcome::Interrupted),
        ];
        for (events, want) in cases {
            let mut lines = vec![PROMPT];
            lines.extend_from_slice(events);
            lines.push(PROMPT);
            let t = read(&lines.join("\n"));
            assert_eq!(t.turns.len(), 2);
            assert_eq!(t.turns[0].outcome, want, "{events:?}");
        }
    }

    #[test]
    fn client_wrappers_meta_and_sidechains_are_not_prompts() {
        let t = read(&[
            r#"{"type":"user","isMeta":true,"message":{"content":"Caveat: The messages below were generated by the user while running local commands."}}"#,
            r#"{"type":"user","message":{"content":"<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>src/</command-args>"}}"#,
            r#"{"type":"user","message":{"content":"<local-command-stdout>done</local-command-stdout>"}}"#,
            r#"{"type":"user","isSidechain":true,"message":{"content":"subagent task"}}"#,
            r#"{"type":"user","message":{"content":[{"type":"text","text":"look"},{"type":"image","source":{}}]}}"#,
        ].join("\n"));
        let prompts: Vec<_> = t.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(prompts, ["/review src/", "look\n[image]"]);
    }

    #[test]
    fn a_resumed_session_leaves_its_earlier_turns_as_they_were() {
        // The real Claude Code 2.1.332 session of tests/fixtures/sessions/claude/, read as it
        // was after each of its three runs: every turn read before reads the same after.
        let whole = fixture("claude/resumed.jsonl");
        let runs: Vec<usize> =
            serde_json::from_slice(&fixture("claude/resumed.runs.json")).unwrap();
        assert_eq!(runs.last(), Some(&whole.len()));
        let states: Vec<Transcript> = runs
            .iter()
            .map(|&end| parse(&whole[..end], None, "x").unwrap())
            .collect();
        assert_eq!(
            states.iter().map(|t| t.turns.len()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        for pair in states.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            assert_eq!(before.turns[..], after.turns[..before.turns.len()]);
        }
        let last = &states[2];
        assert_eq!(last.turns[2].prompt, "/compact");
        assert_eq!(last.turns[1].commands[0].command, "echo hello");
        assert_eq!(last.turns[1].outcome, Outcome::Completed);
        // The compaction `/compact` wrote before its own line covers the turns before it.
        assert_eq!(last.episodes[0].last_turn, Some(1));
        assert!(last.episodes[0].text.contains("both were answered"));
    }

    #[test]
    fn the_automatic_compaction_is_an_episode_with_its_summary() {
        let t = parse(&fixture("claude-code/session-624a4a58.jsonl"), None, "x").unwrap();
        let e = &t.episodes[0];
        assert_eq!(e.line, 158);
        assert!(
            e.text.starts_with("This session is being continued"),
            "{}",
            e.text
        );
        assert_eq!(e.first_turn, 0);
        assert!(e.last_turn.is_some());
        let interrupted = t
            .turns
            .iter()
            .filter(|t| t.outcome == Outcome::Interrupted)
            .count();
        assert_eq!(interrupted, 3);
    }
}
