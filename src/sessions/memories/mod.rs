//! The agents' own memories, read as they keep them: Claude Code's auto memory (a folder of
//! Markdown files with a `MEMORY.md` index: [`claude`]) and Codex's memories pipeline (the
//! `stage1_outputs` rows of `memories_1.sqlite`: [`codex`]). Formats as checked in Claude
//! Code 2.1.332 and Codex 0.171.0 (ADR 135).
//!
//! Reading only: each memory comes out as a [`Memory`] (its agent, where it lives, its text
//! and the agent's own time); `cairn sessions ingest` turns them into observations
//! (`cli/agent_memories.rs`). Nothing here writes, and no agent file is ever changed.

pub mod claude;
pub mod codex;

use chrono::{DateTime, Utc};

/// One memory an agent keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// `claude-code` or `codex`.
    pub agent: &'static str,
    /// Where it lives: a file's path, or `FILE#THREAD` for a Codex row. Stable while the
    /// memory is the same memory (an edit keeps it), so it names the observation's source.
    pub locator: String,
    /// The project it belongs to, when the agent says (Claude Code's project folder).
    pub project: Option<String>,
    /// The text to remember.
    pub text: String,
    /// The agent's own time for it (a file's mtime, a row's `generated_at`).
    pub time: DateTime<Utc>,
}

impl Memory {
    /// The observation source naming this memory: `AGENT-memory:LOCATOR`.
    pub fn source(&self) -> String {
        source(self.agent, &self.locator)
    }
}

/// The observation source of the memory of `agent` at `locator`.
pub fn source(agent: &str, locator: &str) -> String {
    format!("{agent}-memory:{locator}")
}

/// The prefix every agent-memory source starts with, for `agent`.
pub fn source_prefix(agent: &str) -> String {
    format!("{agent}-memory:")
}

/// Where an observation's source says its memory lives: `(agent, locator)`.
pub fn parse_source(source: &str) -> Option<(&str, &str)> {
    let (agent, locator) = source.split_once("-memory:")?;
    matches!(agent, "claude-code" | "codex").then_some((agent, locator))
}

/// A memory source that could not be read as this version knows it: skipped, named.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}
