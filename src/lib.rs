//! cairn: a git-backed memory for AI coding agents and the people who run them.
//!
//! The crate map (ARCHITECTURE.md draws the data flow):
//!
//! - [`cli`]: clap types and one file per command noun; turns arguments into domain calls.
//! - [`output`]: the only code that prints; the JSON wire format is documented there.
//! - [`error`]: the error a command ends in, with its kind, fix and exit code.
//! - [`failpoint`]: the named points where tests kill or hold the process.
//! - [`config`]: `cairn.toml`, every key with a default.
//! - [`repo`]: finding the knowledge repository, its layout and its writer lock.
//! - [`git`]: the only importer of gix; commits of exactly the paths a command wrote.
//! - [`hooks`]: the git hook scripts and what `cairn hooks run` does (the pre-commit secret scan).
//! - [`files`]: atomic whole-file writes and locked one-line appends.
//! - [`journal`]: the write-ahead record that lets a killed decision be finished by the next run.
//! - [`slog`]: the append-only operational log.
//! - [`adr`]: numbered decision records, their frontmatter, lint and import.
//! - [`memory`]: MEMORY.md, parsed with comrak and edited in place.
//! - [`note`]: discovery notes in `vault/notes` (frontmatter, body, the LLM's title/tags/summary parser).
//! - [`library`]: the document library: manifest, HTML and PDF text (html2text, lopdf), chunks.
//! - [`cards`]: turn cards and episodes made from transcripts, in `vault/sessions`.
//! - [`store`]: observations and their update events, folded on read.
//! - [`observe`]: the write gate and the keyword categories.
//! - [`proposals`]: reflection proposals and their decisions, folded on read; applying one to MEMORY.md.
//! - [`forget`]: which records an argument names, the files without them, tombstones, the
//!   derived files scrubbed and the replace-text file for a history rewrite.
//! - [`triage`]: tier 1 rules and the tier 2 LLM prompt and parser of `cairn triage`.
//! - [`review`]: what `cairn review` shows (the diff, with similar) and its prompts (the only importer of dialoguer).
//! - [`maintain`]: the nightly pass over observations (dedup sweep by LSH candidates, stale, soft delete), planned as events.
//! - [`reflect`]: observations become proposals (built-in by vector, or one LLM call); proposal refs.
//! - [`index`]: the only importer of tantivy; every record indexed, kept up to date by checkpoints.
//! - [`sessions`]: reading Claude Code, Codex and pi transcripts into turns and episodes.
//! - [`recall`]: decay-weighted recall (with the LLM query rewrite of the balanced and deep
//!   profiles), plain search, the session briefing.
//! - [`embed`]: the built-in static embedding model, compiled in; int8 vector math.
//! - [`eval`]: retrieval quality on LoCoMo and LongMemEval files, through the same code paths.
//! - [`provider`]: the only HTTP code (reqwest): embeddings from Ollama, OpenAI-format, Voyage.
//! - [`redact`]: finding and redacting secrets (API keys, tokens, private keys, passwords).
//! - [`stats`]: what `cairn stats` counts: records per ISO week as a terminal chart, pipeline cost.
//! - [`telemetry`]: one event per pipeline step in `.cairn/telemetry.jsonl`.
//! - [`why`]: what became of a text or record, followed through the pipeline (`cairn why`).
//! - [`mcp`]: the MCP server of `cairn mcp` (the only importer of rmcp): tools that run
//!   the commands through the command layer, MEMORY.md and the ADRs as resources.
//! - [`serve`]: the console of `cairn serve` (the only importer of axum): pages and a JSON API
//!   over the same command layer, the token and origin rules.
//! - [`sync`]: `cairn sync`: fetch, union merge made right, ADR renumbering, push (git CLI).
//! - [`init`]: making or adopting a knowledge repository.
//! - [`doctor`]: health checks and repairs of the files.
//! - [`time`]: parsing the times and spans users type.
//! - [`user_config`]: the person's own `config.toml`: the default knowledge repository.

#![deny(unsafe_code)]

pub mod adr;
pub mod cards;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod embed;
pub mod error;
pub mod eval;
pub mod failpoint;
pub mod files;
pub mod forget;
pub mod git;
pub mod hooks;
pub mod index;
pub mod init;
pub mod journal;
pub mod jsonl;
pub mod library;
pub mod maintain;
pub mod mcp;
pub mod memory;
pub mod note;
pub mod observe;
pub mod output;
pub mod proposals;
pub mod provider;
pub mod recall;
pub mod redact;
pub mod reflect;
pub mod repo;
pub mod review;
pub mod serve;
pub mod sessions;
pub mod slog;
pub mod stats;
pub mod store;
pub mod sync;
pub mod telemetry;
pub mod time;
pub mod triage;
pub mod user_config;
pub mod why;

/// The architecture test (imports point down the layers of ARCHITECTURE.md).
#[cfg(test)]
mod layers;

/// Runs cairn with `args` (the first is the program name) and returns the exit code: the
/// command line, which hands `cairn mcp` and `cairn serve` to their servers.
pub fn run<I>(args: I) -> i32
where
    I: IntoIterator<Item = std::ffi::OsString>,
{
    cli::run(
        args,
        &cli::Servers {
            mcp: mcp::start,
            serve: serve::start,
        },
    )
}

pub use output::phase;
