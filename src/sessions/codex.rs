//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).
//!
//! Each line is `{"timestamp","type","payload"}`. `session_meta` gives the session id and cwd;
//! `response_item` carries what the model saw and said; `event_msg` carries what the client
//! showed. Answers are read from `response_item` only, never from `agent_message` events.
//!
//! - **Prompts.** Versions differ in where the user's prompts are: older ones write each prompt
//!   both as a `response_item` message with role `user` and as an `event_msg` `user_message`;
//!   newer ones (Codex Desktop among them) write it only as the event, or as an `event_msg`
//!   `item_completed` whose item is a `UserMessage`. So the prompts are read from one stream,
//!   chosen per file ([`Stream`]): the `response_item` messages when they hold every prompt the
//!   user typed (what the events say), else the event stream with the most prompts. Never
//!   two streams, so never a prompt twice. In every stream, the context the client injects as
//!   user text is not a prompt: items starting `# AGENTS.md instructions`,
//!   `<environment_context>`, `<user_instructions>`, `<permissions instructions>`,
//!   `<INSTRUCTIONS>`, `<collaboration_mode>`, `<skills_instructions>`, `<user_shell_command>`
//!   or `<turn_aborted>` (the last one interrupts the turn, whichever stream is read), and
//!   `user_message` events whose `kind` is not `plain`. Role `developer` / `system` messages
//!   never are prompts. Images are `[image]`.
//! - **Answers.** `response_item` messages with role `assistant` (`output_text`).
//! - **Tools.** `function_call`, `custom_tool_call` and `local_shell_call` are paired with their
//!   outputs by `call_id`. `shell`, `exec_command`, `container.exec` and `local_shell` are
//!   commands; the exit code comes from the output (the JSON `metadata.exit_code` of older
//!   versions, or "Process exited with code N" / "Exit code: N"), from a later `write_stdin`
//!   output for a process that was still running, and from the `exec_command_end` event. A
//!   non-zero exit is an error. `apply_patch` (as a custom tool or a shell command) writes the
//!   files named by its `*** Add File:`, `*** Update File:` and `*** Move to:` lines.
//! - **Outcomes.** `event_msg` `turn_aborted` interrupts the turn, `error` is an API error. A
//!   second `session_meta` (the session was resumed) interrupts a turn that was not completed.
//! - **Episodes.** Each `compacted` line is a compaction; its `message` is the text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use std::io::{self, BufRead, Seek};

use super::{Builder, EpisodeKind, Lines, Snippet, Text, exit_code_in, parse_line, time};

/// How injected context starts, when the client sends it as a user message.
const INJECTED: [&str; 9] = [
    "# AGENTS.md instructions",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
];

/// The tools whose calls are shell commands.
const SHELLS: [&str; 4] = ["shell", "exec_command", "container.exec", "local_shell"];

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    cwd: Text<'a>,
    #[serde(borrow, default)]
    role: Text<'a>,
    #[serde(borrow, default)]
    content: Option<Vec<Item<'a>>>,
    #[serde(borrow, default)]
    name: Text<'a>,
    /// A function call's arguments, a JSON object in a string.
    #[serde(borrow, default)]
    arguments: Text<'a>,
    /// A custom tool call's input (the patch of `apply_patch`).
    #[serde(borrow, default)]
    input: Text<'a>,
    #[serde(borrow, default)]
    call_id: Text<'a>,
    #[serde(default)]
    output: Output,
    /// Event text (`error`, `user_message`…) and the summary of `compacted`.
    #[serde(borrow, default)]
    message: Text<'a>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    aggregated_output: Snippet,
    #[serde(default)]
    action: Option<Action>,
    /// A `user_message` event's kind in older versions: `plain` for what the user typed.
    #[serde(rename = "kind", borrow, default)]
    message_kind: Text<'a>,
    /// A `user_message` event's attached images (data URLs) and local image paths.
    #[serde(default)]
    images: Count,
    #[serde(default)]
    local_images: Count,
    /// The item of an `item_completed` event.
    #[serde(borrow, default)]
    item: Option<TurnItem<'a>>,
}

/// The item of an `item_completed` event; only `UserMessage` items are read.
#[derive(Deserialize)]
struct TurnItem<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    content: Option<Vec<Item<'a>>>,
}

/// How many elements a list has (anything but a list has none), without keeping them.
#[derive(Default)]
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

/// The stream a rollout's prompts are read from (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// `response_item` messages with role `user`.
    Response,
    /// `event_msg` `user_message` events.
    UserMessage,
    /// `event_msg` `item_completed` events with a `UserMessage` item.
    ItemCompleted,
}

/// The prompts each stream holds, as read by the first pass.
#[derive(Default)]
struct Prompts {
    response: Vec<u64>,
    user_message: Vec<u64>,
    item_completed: Vec<u64>,
}

impl Prompts {
    fn push(&mut self, stream: Stream, prompt: &str) {
        let list = match stream {
            Stream::Response => &mut self.response,
            Stream::UserMessage => &mut self.user_message,
            Stream::ItemCompleted => &mut self.item_completed,
        };
        // A hash of the prompt, so a rollout of a million prompts costs numbers.
        list.push(super::hash64(&comparable(prompt)));
    }

    /// The stream to read the prompts from: the responses when they hold every prompt the
    /// events say the user typed, else the event stream with the most.
    fn choice(&self) -> Stream {
        let (typed, stream) = if self.item_completed.len() > self.user_message.len() {
            (&self.item_completed, Stream::ItemCompleted)
        } else {
            (&self.user_message, Stream::UserMessage)
        };
        let mut left: HashMap<u64, usize> = HashMap::new();
        for p in &self.response {
            *left.entry(*p).or_default() += 1;
        }
        let all_there = typed.iter().all(|p| match left.get_mut(p) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        });
        if all_there { Stream::Response } else { stream }
    }
}

/// A prompt as the streams can be compared: images left out, whitespace collapsed.
fn comparable(prompt: &str) -> String {
    prompt
        .split_whitespace()
        .filter(|w| *w != "[image]")
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Text<'a>,
}

#[derive(Deserialize)]
struct Action {
    #[serde(default)]
    command: CommandLine,
}

/// What a tool call's output says: its start, and the exit code or the running process in it.
#[derive(Default)]
struct Output {
    text: Snippet,
    exit: Option<i32>,
    /// "Process running with session ID N": the command goes on in the background.
    process: Option<u64>,
}

/// The arguments of a shell-like call.
#[derive(Deserialize, Default)]
struct Args {
    #[serde(default)]
    cmd: CommandLine,
    #[serde(default)]
    command: CommandLine,
    #[serde(default)]
    session_id: Option<u64>,
}

/// A command given as a string or as argv; `bash -lc SCRIPT` reads as `SCRIPT`.
#[derive(Default)]
struct CommandLine {
    line: String,
    /// The patch, when the argv is `apply_patch PATCH`.
    patch: Option<String>,
}

impl<'de> Deserialize<'de> for Output {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OutputVisitor;
        impl<'de> Visitor<'de> for OutputVisitor {
            type Value = Output;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool output")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Output, E> {
                #[derive(Deserialize)]
                struct Wrapped {
                    #[serde(default)]
                    output: Snippet,
                    #[serde(default)]
                    metadata: Option<Metadata>,
                }
                #[derive(Deserialize)]
                struct Metadata {
                    exit_code: Option<i32>,
                }
                if v.starts_with('{')
                    && let Ok(w) = serde_json::from_str::<Wrapped>(v)
                {
                    let exit = w.metadata.and_then(|m| m.exit_code);
                    return Ok(Output {
                        text: w.output,
                        exit,
                        process: None,
                    });
                }
                let head = head(v, 400);
                let process = head
                    .split_once("Process running with session ID ")
                    .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok());
                let mut text = Snippet::default();
                // Past the `Output:` header of unified exec, the command's own output.
                text.push(v.split_once("\nOutput:\n").map_or(v, |(_, out)| out));
                Ok(Output {
                    text,
                    exit: exit_code_in(head),
                    process,
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Output, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Output::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Output, A::Error> {
                let text = super::SnippetVisitor.visit_seq(seq)?;
                Ok(Output {
                    text,
                    ..Output::default()
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Output, E> {
                Ok(Output::default())
            }
        }
        deserializer.deserialize_any(OutputVisitor)
    }
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CommandVisitor;
        impl<'de> Visitor<'de> for CommandVisitor {
            type Value = CommandLine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a command line or argv")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CommandLine, E> {
                Ok(CommandLine {
                    line: v.to_string(),
                    patch: None,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandLine, A::Error> {
                let mut argv: Vec<String> = Vec::new();
                while let Some(Text(arg)) = seq.next_element::<Text>()? {
                    argv.push(arg.into_owned());
                }
                let shell = |s: &str| matches!(s, "bash" | "sh" | "zsh") || s.ends_with("/bash");
                let shell = |s: &str| shell(s) || s.ends_with("/sh") || s.ends_with("/zsh");
                Ok(match argv.as_slice() {
                    [apply, patch] if apply == "apply_patch" => CommandLine {
                        line: format!("{apply} …"),
                        patch: Some(patch.clone()),
                    },
                    [sh, flag, script] if shell(sh) && flag.starts_with('-') => CommandLine {
                        line: script.clone(),
                        patch: None,
                    },
                    _ => CommandLine {
                        line: argv.join(" "),
                        patch: None,
                    },
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(CommandLine::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<CommandLine, E> {
                Ok(CommandLine::default())
            }
        }
        deserializer.deserialize_any(CommandVisitor)
    }
}

/// The first `n` bytes of `text`, or a little less, on a character boundary.
fn head(text: &str, n: usize) -> &str {
    let mut end = n.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The files an `apply_patch` patch writes.
fn patch_files(patch: &str) -> impl Iterator<Item = Cow<'_, str>> {
    patch.lines().filter_map(|l| {
        ["*** Add File: ", "*** Update File: ", "*** Move to: "]
            .iter()
            .find_map(|m| l.strip_prefix(m))
            .map(|path| Cow::Borrowed(path.trim()))
    })
}

/// What the reader remembers across lines about running processes.
#[derive(Default)]
struct Processes {
    /// The `exec_command` call of each process still running, by process id.
    running: HashMap<u64, String>,
    /// The process each `write_stdin` call talks to, by call id.
    stdin: HashMap<String, u64>,
}

/// Feeds the lines of a Codex rollout to `b`, its prompts from the stream that holds them: the
/// first pass reads the `response_item` prompts and notes every stream's; a second pass, from
/// a fresh builder, reads another stream when that one holds prompts the first lacked.
pub(crate) fn read<R: BufRead + Seek>(lines: &mut Lines<R>, b: &mut Builder) -> io::Result<()> {
    let mut prompts = Prompts::default();
    feed(lines, b, Stream::Response, &mut prompts)?;
    let stream = prompts.choice();
    if stream != Stream::Response {
        b.restart()?;
        lines.rewind()?;
        feed(lines, b, stream, &mut Prompts::default())?;
    }
    Ok(())
}

/// One pass over the lines: prompts from `stream`, every stream's prompts noted in `seen`.
fn feed<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    b: &mut Builder,
    stream: Stream,
    seen: &mut Prompts,
) -> io::Result<()> {
    let mut processes = Processes::default();
    let mut metas = 0;
    while let Some(line) = lines.next_line()? {
        let Some(entry) = parse_line::<Entry>(&line, b) else {
            continue;
        };
        let at = time(entry.timestamp.as_deref());
        if let Some(p) = &entry.payload {
            match entry.kind.as_ref() {
                "session_meta" => {
                    metas += 1;
                    if metas > 1 && b.in_turn() && !b.completed() {
                        b.interrupt();
                    }
                    if b.session.is_none() && !p.id.as_str().is_empty() {
                        b.session = Some(p.id.as_str().to_string());
                    }
                    if b.cwd.is_none() && !p.cwd.as_str().is_empty() {
                        b.cwd = Some(p.cwd.as_str().to_string());
                    }
                }
                "turn_context" if b.cwd.is_none() && !p.cwd.as_str().is_empty() => {
                    b.cwd = Some(p.cwd.as_str().to_string());
                }
                "response_item" => {
                    if let Some(prompt) = response_prompt(p, b) {
                        seen.push(Stream::Response, &prompt);
                        if stream == Stream::Response {
                            b.prompt(&line, at, prompt);
                        }
                    }
                    response_item(p, b, &mut processes);
                }
                "event_msg" => match p.kind.as_str() {
                    "user_message" => {
                        if let Some(prompt) = event_prompt(p) {
                            seen.push(Stream::UserMessage, &prompt);
                            if stream == Stream::UserMessage {
                                b.prompt(&line, at, prompt);
                            }
                        }
                    }
                    "item_completed" => {
                        if let Some(prompt) = item_prompt(p) {
                            seen.push(Stream::ItemCompleted, &prompt);
                            if stream == Stream::ItemCompleted {
                                b.prompt(&line, at, prompt);
                            }
                        }
                    }
                    "turn_aborted" => b.interrupt(),
                    "error" => b.api_error(p.message.as_str()),
                    "exec_command_end" => {
                        if let Some(exit) = p.exit_code {
                            b.command_exit(p.call_id.as_str(), exit, &p.aggregated_output.0);
                        }
                    }
                    _ => {}
                },
                "compacted" => {
                    let text = p.message.as_str().to_string();
                    b.episode(EpisodeKind::Compaction, &line, at, text);
                }
                _ => {}
            }
        }
        b.touch(&line, at);
    }
    Ok(())
}

/// Whether `text` is context the client injected, not what the user typed.
fn injected(text: &str) -> bool {
    INJECTED.iter().any(|m| text.starts_with(m))
}

/// The pieces of a user message joined with newlines, images as `[image]`, injected context
/// left out; `None` when nothing is left.
fn joined<'t>(pieces: impl IntoIterator<Item = &'t str>) -> Option<String> {
    let mut prompt = String::new();
    for piece in pieces {
        let piece = piece.trim();
        if piece.is_empty() || injected(piece) {
            continue;
        }
        if !prompt.is_empty() {
            prompt.push('\n');
        }
        prompt.push_str(piece);
    }
    (!prompt.is_empty()).then_some(prompt)
}

/// The prompt of a `response_item` user message, if it is one. A `<turn_aborted>` item in it
/// interrupts the open turn, whichever stream the prompts are read from.
fn response_prompt(p: &Payload, b: &mut Builder) -> Option<String> {
    if p.kind.as_str() != "message" || p.role.as_str() != "user" {
        return None;
    }
    let items = p.content.as_deref().unwrap_or(&[]);
    if items
        .iter()
        .any(|i| i.text.as_str().trim_start().starts_with("<turn_aborted>"))
    {
        b.interrupt();
    }
    joined(items.iter().map(|item| match item.kind.as_str() {
        "input_image" => "[image]",
        _ => item.text.as_str(),
    }))
}

/// The prompt of a `user_message` event, if it is one.
fn event_prompt(p: &Payload) -> Option<String> {
    let kind = p.message_kind.as_str();
    if !kind.is_empty() && kind != "plain" {
        return None;
    }
    let images = p.images.0 + p.local_images.0;
    joined(std::iter::once(p.message.as_str()).chain(std::iter::repeat_n("[image]", images)))
}

/// The prompt of an `item_completed` event whose item is a `UserMessage`, if it is one.
fn item_prompt(p: &Payload) -> Option<String> {
    let item = p.item.as_ref()?;
    if item.kind.as_str() != "UserMessage" {
        return None;
    }
    let content = item.content.as_deref().unwrap_or(&[]);
    joined(content.iter().map(|c| match c.kind.as_str() {
        "image" | "local_image" => "[image]",
        _ => c.text.as_str(),
    }))
}

/// Everything of a `response_item` but its prompt: answers, tool calls and their outputs.
fn response_item(p: &Payload, b: &mut Builder, processes: &mut Processes) {
    let call_id = p.call_id.as_str();
    match p.kind.as_str() {
        "message" if p.role.as_str() == "assistant" => {
            for item in p.content.as_deref().unwrap_or(&[]) {
                b.answer(None, item.text.as_str());
            }
        }
        "function_call" => {
            let name = p.name.as_str();
            let args: Args = serde_json::from_str(p.arguments.as_str()).unwrap_or_default();
            let argv = if args.cmd.line.is_empty() {
                args.command
            } else {
                args.cmd
            };
            if let Some(patch) = &argv.patch {
                b.tool_call(call_id, "apply_patch", None, patch_files(patch));
            } else if SHELLS.contains(&name) {
                b.tool_call(call_id, name, Some(argv.line), None);
            } else {
                if name == "write_stdin"
                    && let Some(process) = args.session_id
                {
                    processes.stdin.insert(call_id.to_string(), process);
                }
                b.tool_call(call_id, name, None, None);
            }
        }
        "local_shell_call" => {
            let command = p
                .action
                .as_ref()
                .map(|a| a.command.line.clone())
                .unwrap_or_default();
            b.tool_call(call_id, "local_shell", Some(command), None);
        }
        "custom_tool_call" => {
            let name = p.name.as_str();
            let files = (name == "apply_patch").then(|| patch_files(p.input.as_str()));
            b.tool_call(call_id, name, None, files.into_iter().flatten());
        }
        "web_search_call" => {
            // The search and its results are one item: no output follows to pair with.
            b.tool_call(call_id, "web_search", None, None);
            b.tool_result(call_id, false, None, "");
        }
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            let out = &p.output;
            if let Some(process) = processes.stdin.remove(call_id) {
                // The output of the process, not of `write_stdin`.
                b.tool_result(call_id, false, None, &out.text.0);
                if let Some(exit) = out.exit
                    && let Some(exec) = processes.running.remove(&process)
                {
                    b.command_exit(&exec, exit, &out.text.0);
                }
                return;
            }
            if let Some(process) = out.process {
                processes.running.insert(process, call_id.to_string());
            }
            b.tool_result(call_id, false, out.exit, &out.text.0);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::super::{Agent, Outcome, Transcript, parse};

    const ROLLOUT: &str =
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";
    const DERIVED: &str = "codex-event-prompts/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5dd0e01.jsonl";

    fn read(lines: &[&str]) -> Transcript {
        parse(lines.join("\n").as_bytes(), Some(Agent::Codex), "fallback").unwrap()
    }

    const META: &str = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"abc","cwd":"/w"}}"#;
    const CONTEXT: &str = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]}}"#;
    const PROMPT: &str = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}"#;
    const EVENT: &str =
        r#"{"type":"event_msg","payload":{"type":"user_message","message":"run the tests"}}"#;
    const ANSWER: &str = r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}"#;
    const AGENT_EVENT: &str =
        r#"{"type":"event_msg","payload":{"type":"agent_message","message":"Done."}}"#;

    #[test]
    fn one_stream_is_read_and_injected_context_is_not_a_prompt() {
        let t = read(&[META, CONTEXT, PROMPT, EVENT, ANSWER, AGENT_EVENT]);
        assert_eq!(t.session, "abc");
        assert_eq!(t.cwd.as_deref(), Some("/w"));
        assert_eq!(t.turns.len(), 1);
        assert_eq!(t.turns[0].prompt, "run the tests");
        assert_eq!(t.turns[0].answer, "Done.");
        assert_eq!(t.turns[0].outcome, Outcome::Completed);
    }

    #[test]
    fn prompts_only_in_events_are_read_once() {
        let t = read(&[META, CONTEXT, EVENT, ANSWER, AGENT_EVENT, EVENT, ANSWER]);
        let prompts: Vec<_> = t.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(prompts, ["run the tests", "run the tests"]);
        assert_eq!(t.turns[0].answer, "Done.");
        assert_eq!(t.turns[0].outcome, Outcome::Completed);
        assert_eq!(t.unattributed, 0);
    }

    #[test]
    fn prompts_only_in_completed_items_are_read_once() {
        let item = r#"{"type":"event_msg","payload":{"type":"item_completed","thread_id":"abc","turn_id":"1","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"run the tests","text_elements":[]},{"type":"local_image","path":"/tmp/a.png"}]}}}"#;
        let agent = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"a1","content":[{"type":"Text","text":"Done."}]}}}"#;
        let t = read(&[META, CONTEXT, item, ANSWER, agent]);
        assert_eq!(t.turns.len(), 1);
        assert_eq!(t.turns[0].prompt, "run the tests\n[image]");
        assert_eq!(t.turns[0].answer, "Done.");
    }

    #[test]
    fn injected_events_of_older_versions_are_not_prompts() {
        let context = r#"{"type":"event_msg","payload":{"type":"user_message","message":"<environment_context>/w</environment_context>","kind":"environment_context"}}"#;
        let plain = r#"{"type":"event_msg","payload":{"type":"user_message","message":"run the tests","kind":"plain","images":["data:image/png;base64,AAAA"]}}"#;
        let t = read(&[META, context, plain, ANSWER]);
        let prompts: Vec<_> = t.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(prompts, ["run the tests\n[image]"]);
    }

    #[test]
    fn responses_holding_every_typed_prompt_are_the_stream_read() {
        // Both streams hold the prompt: read once, at the response's line.
        let t = read(&[META, PROMPT, EVENT, ANSWER]);
        assert_eq!(t.turns.len(), 1);
        assert_eq!(t.turns[0].line, 2);
        // An injected block the reader does not know is in the responses, the typed prompts
        // only in the events (Codex Desktop): the events are read.
        let startup = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<app_context>desktop</app_context>"}]}}"#;
        let t = read(&[META, startup, EVENT, ANSWER]);
        let prompts: Vec<_> = t.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(prompts, ["run the tests"]);
    }

    #[test]
    fn activity_without_a_prompt_is_counted() {
        let call = r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#;
        let t = read(&[META, CONTEXT, call, ANSWER]);
        assert!(t.turns.is_empty());
        assert_eq!(t.unattributed, 2);
    }

    #[test]
    fn the_event_prompt_fixture_reads_as_the_original() {
        let original = parse(&fixture(ROLLOUT), None, "x").unwrap();
        let derived = parse(&fixture(DERIVED), None, "x").unwrap();
        assert_eq!(derived.session, "019e1625-789d-76c0-80ab-3724b5dd0e01");
        assert_eq!(derived.turns.len(), original.turns.len());
        for (d, o) in derived.turns.iter().zip(&original.turns) {
            assert_eq!(d.prompt, o.prompt);
            assert_eq!(d.answer, o.answer);
            assert_eq!(d.outcome, o.outcome);
            assert_eq!(d.commands, o.commands);
            assert_eq!(d.files_written, o.files_written);
        }
    }

    #[test]
    fn calls_pair_with_outputs_by_call_id_and_exit_codes_are_found() {
        let t = read(&[
            META,
            PROMPT,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cargo test\"]}","call_id":"c1"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sleep 9; false\"}","call_id":"c2"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"test result: ok\",\"metadata\":{\"exit_code\":0}}"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Chunk ID: 1\nProcess running with session ID 7\nOutput:\n"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"write_stdin","arguments":"{\"session_id\":7,\"chars\":\"\"}","call_id":"c3"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"Chunk ID: 2\nProcess exited with code 1\nOutput:\nboom"}}"#,
            r#"{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"c2","exit_code":1,"aggregated_output":"boom"}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c4","input":"*** Begin Patch\n*** Update File: src/a.rs\n@@\n*** Add File: b.rs\n*** End Patch"}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c4","output":"{\"output\":\"Success.\",\"metadata\":{\"exit_code\":0}}"}}"#,
        ]);
        let turn = &t.turns[0];
        assert_eq!(
            turn.tools,
            ["shell", "exec_command", "write_stdin", "apply_patch"]
        );
        let runs: Vec<_> = turn
            .commands
            .iter()
            .map(|c| (c.command.as_str(), c.exit, c.output.as_str()))
            .collect();
        assert_eq!(
            runs,
            [
                ("cargo test", Some(0), "test result: ok"),
                ("sleep 9; false", Some(1), "boom")
            ]
        );
        assert_eq!(turn.errors, ["exit 1: sleep 9; false"]);
        assert_eq!(turn.files_written, ["src/a.rs", "b.rs"]);
        assert_eq!(turn.outcome, Outcome::Unfinished);
    }

    #[test]
    fn an_aborted_turn_is_interrupted() {
        let aborted =
            r#"{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#;
        let t = read(&[META, PROMPT, ANSWER, aborted, PROMPT, ANSWER]);
        let outcomes: Vec<_> = t.turns.iter().map(|t| t.outcome).collect();
        assert_eq!(outcomes, [Outcome::Interrupted, Outcome::Completed]);
        let resumed = read(&[META, PROMPT, META, PROMPT, ANSWER]);
        assert_eq!(resumed.turns[0].outcome, Outcome::Interrupted);
    }

    #[test]
    fn the_fixture_turns_have_their_commands_and_patches() {
        let t = parse(&fixture(ROLLOUT), None, "x").unwrap();
        assert_eq!(t.session, "019e1625-789d-76c0-80ab-3724b5ddb799");
        let [first, second] = &t.turns[..] else {
            panic!("two turns")
        };
        assert_eq!(first.prompt, "show tools");
        assert_eq!(first.outcome, Outcome::Completed);
        assert_eq!(second.outcome, Outcome::Completed);
        assert_eq!(second.files_written.len(), 3, "{:?}", second.files_written);
        let commands = first.commands.len() + second.commands.len();
        assert_eq!(commands, 43);
        assert!(
            second.commands.iter().all(|c| c.exit.is_some()),
            "{:#?}",
            second.commands
        );
        assert!(
            second
                .answer
                .ends_with(&t.turns[1].answer[t.turns[1].answer.len() - 20..])
        );
    }
}
