//! pi sessions (`~/.pi/agent/sessions/--<path>--/<time>_<uuid>.jsonl`).
//!
//! The first line is the `session` header (id, cwd, version). Version 1 files are linear: every
//! entry is read in file order. Versions 2 and 3 are a tree (`id` / `parentId`): only the
//! active branch is read, found by walking `parentId` from the last entry back to the root,
//! then read from the root down; entries of abandoned branches are not part of any turn.
//!
//! - **Prompts.** A `message` entry with role `user` (text; images as `[image]`). `custom`,
//!   `hookMessage`, `bashExecution` and `custom_message` entries are not prompts; a
//!   `bashExecution` (the user's `!cmd`) is recorded as a command of the open turn.
//! - **Replies.** `assistant` messages: `text` blocks are the answer, `toolCall` blocks are
//!   paired with `toolResult` messages by `toolCallId`. `bash` is a command (exit 0 unless the
//!   result `isError`, then the N of "Command exited with code N"); `edit` and `write` write
//!   `path`.
//! - **Outcomes.** `stopReason: "aborted"` interrupts the turn; `stopReason: "error"` is an API
//!   error (`errorMessage`).
//! - **Episodes.** `compaction` entries are compactions, `branch_summary` entries summaries.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;

use std::io::{self, BufRead, Seek};

use super::{
    Builder, Content, EpisodeKind, Line, Lines, Snippet, Text, exit_code_in, parse_line, time,
};

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(rename = "parentId", borrow, default)]
    parent_id: Text<'a>,
    #[serde(borrow, default)]
    timestamp: Text<'a>,
    #[serde(borrow, default)]
    cwd: Text<'a>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: Text<'a>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Text<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(rename = "stopReason", borrow, default)]
    stop_reason: Text<'a>,
    #[serde(rename = "errorMessage", borrow, default)]
    error_message: Text<'a>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Text<'a>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    /// A `bashExecution`'s command, output and exit code.
    #[serde(borrow, default)]
    command: Text<'a>,
    #[serde(default)]
    output: Snippet,
    #[serde(rename = "exitCode", default)]
    exit_code: Option<i32>,
}

/// Where an entry is, and what places it in the tree: all the first pass keeps of it. Ids
/// are kept as hashes (`None` for none), so a tree of millions of entries costs numbers.
struct Node {
    id: Option<u64>,
    parent: Option<u64>,
    start: u64,
    number: usize,
}

/// An entry id as a [`Node`] keeps it.
fn id_key(id: &str) -> Option<u64> {
    (!id.is_empty()).then(|| super::hash64(id))
}

/// Feeds the entries of a pi session (its active branch) to `b`, in two passes over the
/// lines: the first checks every line and keeps each entry's [`Node`], the second reads the
/// entries of the active branch only (in one more pass when they are in file order, else by
/// seeking to each), so no more than one entry is held at a time.
pub(crate) fn read<R: BufRead + Seek>(lines: &mut Lines<R>, b: &mut Builder) -> io::Result<()> {
    let mut nodes: Vec<Node> = Vec::new();
    while let Some(line) = lines.next_line()? {
        let Some(entry) = parse_line::<Entry>(&line, b) else {
            continue;
        };
        if entry.kind == "session" {
            if b.session.is_none() && !entry.id.as_str().is_empty() {
                b.session = Some(entry.id.as_str().to_string());
            }
            if b.cwd.is_none() && !entry.cwd.as_str().is_empty() {
                b.cwd = Some(entry.cwd.as_str().to_string());
            }
            continue;
        }
        nodes.push(Node {
            id: id_key(entry.id.as_str()),
            parent: id_key(entry.parent_id.as_str()),
            start: line.start,
            number: line.number,
        });
    }
    let path = active_branch(&nodes);
    if path.windows(2).all(|w| w[0] < w[1]) {
        lines.rewind()?;
        let mut wanted = path.iter().map(|&i| nodes[i].number).peekable();
        while let Some(line) = lines.next_line()? {
            let Some(&number) = wanted.peek() else {
                break;
            };
            if line.number == number {
                wanted.next();
                entry(&line, b);
            }
        }
    } else {
        for &i in &path {
            lines.seek_line(nodes[i].start, nodes[i].number)?;
            if let Some(line) = lines.next_line()? {
                entry(&line, b);
            }
        }
    }
    Ok(())
}

/// Reads one entry of the active branch.
fn entry(line: &Line, b: &mut Builder) {
    let Some(entry) = parse_line::<Entry>(line, b) else {
        return;
    };
    let at = time(Some(entry.timestamp.as_str()));
    match (entry.kind.as_ref(), &entry.message) {
        ("message", Some(m)) => message(m, line, at, b),
        ("compaction", _) => {
            let text = entry.summary.as_str().to_string();
            b.episode(EpisodeKind::Compaction, line, at, text);
        }
        ("branch_summary", _) => {
            let text = entry.summary.as_str().to_string();
            b.episode(EpisodeKind::Summary, line, at, text);
        }
        _ => {}
    }
    b.touch(line, at);
}

/// The indices of the entries to read, in order: all of them for a linear (version 1) file,
/// else the path from the root to the last entry.
fn active_branch(nodes: &[Node]) -> Vec<usize> {
    let Some(leaf) = nodes.iter().rposition(|n| n.id.is_some()) else {
        return (0..nodes.len()).collect();
    };
    let by_id: HashMap<u64, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.id.map(|id| (id, i)))
        .collect();
    let mut path = vec![leaf];
    let mut at = leaf;
    // At most one step per entry, so a cycle in a damaged file cannot loop forever.
    while path.len() <= nodes.len() {
        let Some(&parent) = nodes[at].parent.and_then(|p| by_id.get(&p)) else {
            break;
        };
        path.push(parent);
        at = parent;
    }
    path.reverse();
    path
}

fn message(m: &Message, line: &Line, at: Option<chrono::DateTime<chrono::Utc>>, b: &mut Builder) {
    match m.role.as_str() {
        "user" => {
            let text = m.content.text();
            if !text.trim().is_empty() {
                b.prompt(line, at, text.trim().to_string());
            }
        }
        "assistant" => {
            for block in m.content.blocks() {
                match block.kind.as_ref() {
                    "text" => b.answer(None, block.text.as_deref().unwrap_or("")),
                    "toolCall" => {
                        let name = block.name.as_deref().unwrap_or("");
                        let args = block.arguments.as_ref();
                        let command = match name {
                            "bash" => args.and_then(|a| a.command.as_deref()).map(str::to_string),
                            _ => None,
                        };
                        let file = match name {
                            "edit" | "write" => args.and_then(|a| a.path.clone()),
                            _ => None,
                        };
                        b.tool_call(block.id.as_deref().unwrap_or(""), name, command, file);
                    }
                    _ => {}
                }
            }
            match m.stop_reason.as_str() {
                "aborted" => b.interrupt(),
                "error" => b.api_error(m.error_message.as_str()),
                _ => {}
            }
        }
        "toolResult" => {
            let output = m.content.text();
            let is_error = m.is_error.unwrap_or(false);
            let exit = if is_error {
                exit_code_in(&output)
            } else {
                Some(0)
            };
            b.tool_result(m.tool_call_id.as_str(), is_error, exit, &output);
        }
        "bashExecution" => b.user_command(m.command.as_str(), m.exit_code, &m.output.0),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::super::{Agent, EpisodeKind, Outcome, parse};

    #[test]
    fn only_the_active_branch_of_a_tree_is_read() {
        let text = [
            r#"{"type":"session","version":3,"id":"s-uuid","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}"#,
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"first"}}"#,
            r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"one"}],"stopReason":"stop"}}"#,
            r#"{"type":"message","id":"b1","parentId":"a2","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":"abandoned"}}"#,
            r#"{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-01-01T00:00:04Z","message":{"role":"assistant","content":[{"type":"text","text":"lost"}],"stopReason":"stop"}}"#,
            r#"{"type":"branch_summary","id":"c0","parentId":"a2","timestamp":"2026-01-01T00:00:05Z","fromId":"b2","summary":"tried b"}"#,
            r#"{"type":"message","id":"c1","parentId":"c0","timestamp":"2026-01-01T00:00:06Z","message":{"role":"user","content":[{"type":"text","text":"second"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
            r#"{"type":"message","id":"c2","parentId":"c1","timestamp":"2026-01-01T00:00:07Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"make"}}],"stopReason":"toolUse"}}"#,
            r#"{"type":"message","id":"c3","parentId":"c2","timestamp":"2026-01-01T00:00:08Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"boom\n\nCommand exited with code 2"}],"isError":true}}"#,
        ]
        .join("\n");
        let t = parse(text.as_bytes(), None, "x").unwrap();
        assert_eq!(t.agent, Agent::Pi);
        assert_eq!(t.session, "s-uuid");
        let prompts: Vec<_> = t.turns.iter().map(|t| t.prompt.as_str()).collect();
        assert_eq!(prompts, ["first", "second\n[image]"]);
        assert_eq!(t.turns[0].answer, "one");
        assert_eq!(t.turns[0].outcome, Outcome::Completed);
        assert_eq!(t.turns[1].commands[0].exit, Some(2));
        assert_eq!(t.turns[1].outcome, Outcome::Error);
        assert_eq!(t.episodes.len(), 1);
        assert_eq!(t.episodes[0].kind, EpisodeKind::Summary);
        assert_eq!(t.episodes[0].last_turn, Some(0));
    }

    #[test]
    fn the_legacy_fixture_has_its_compactions_aborts_and_error() {
        let t = parse(&fixture("pi/before-compaction.jsonl"), None, "x").unwrap();
        let kinds: Vec<_> = t.episodes.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EpisodeKind::Compaction, EpisodeKind::Compaction]);
        assert!(t.episodes[1].first_turn > 0);
        assert!(t.episodes.iter().all(|e| !e.text.is_empty()));
        let count = |o| t.turns.iter().filter(|t| t.outcome == o).count();
        assert!(count(Outcome::Interrupted) > 0);
        assert!(count(Outcome::Completed) > 0);
        let writes: usize = t.turns.iter().map(|t| t.files_written.len()).sum();
        assert!(writes > 0);
        let bash: usize = t.turns.iter().map(|t| t.commands.len()).sum();
        assert_eq!(bash, 206 + 3);
    }

    #[test]
    fn a_branch_written_out_of_file_order_is_read_in_tree_order() {
        // A damaged or merged file: a reply comes before its prompt in the file. The active
        // branch is read from the root down all the same (by seeking to each entry).
        let lines = [
            r#"{"type":"session","version":3,"id":"s-uuid","cwd":"/w"}"#,
            r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"one"}],"stopReason":"stop"}}"#,
            r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"first"}}"#,
            r#"{"type":"message","id":"a3","parentId":"a2","message":{"role":"user","content":"second"}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let t = parse(text.as_bytes(), None, "x").unwrap();
        let prompts: Vec<_> = t
            .turns
            .iter()
            .map(|t| (t.prompt.as_str(), t.line))
            .collect();
        assert_eq!(prompts, [("first", 3), ("second", 4)]);
        assert_eq!(t.turns[0].answer, "one");
        assert_eq!(t.turns[0].outcome, Outcome::Completed);
        // Its reply's line ends before its prompt's: the turn ends past the prompt's line.
        let prompt_end = lines[..3].iter().map(|l| l.len() + 1).sum::<usize>();
        assert_eq!(t.turns[0].end_offset, prompt_end as u64);
        assert_eq!(t.turns[1].outcome, Outcome::Unfinished);
    }
}
