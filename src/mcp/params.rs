//! The tools' arguments: JSON objects with a schema (their `///` comments are the
//! descriptions an agent reads), each turned into the arguments of the command it runs.
//!
//! A word the command line checks (a profile, a kind, a status) is an enum here, so that the
//! schema lists the choices and a wrong one is refused before the command runs. Defaults are
//! the command line's ([`tests`] holds them to clap's). Text that the command line reads from
//! stdin when it is `-` is refused: the server's stdin is the protocol.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use crate::cli::{Command, CommitArgs, adr, memory, note, recall, remember, review, slog};
use crate::error::{Error, Result};

/// An enum of lowercase words, with each word's text for the command it feeds.
macro_rules! words {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $word)] $variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }
    };
}

words! {
    /// How many results: lean (3), balanced (7), deep (15), or auto (chosen from the query)
    Profile { Lean = "lean", Balanced = "balanced", Deep = "deep", Auto = "auto" }
}

words! {
    /// Which ranked lists: words (BM25), vectors (meaning), or hybrid (both fused)
    Mode { Words = "words", Vectors = "vectors", Hybrid = "hybrid" }
}

words! {
    /// A kind of record
    RecordKind {
        Slog = "slog",
        Adr = "adr",
        Memory = "memory",
        Observation = "observation",
        Card = "card",
        Episode = "episode",
        Note = "note",
    }
}

words! {
    /// A category of taxonomy v1
    Category {
        Preferences = "preferences",
        RulesConventions = "rules-conventions",
        SystemArchitecture = "system-architecture",
        Operations = "operations",
        MemorySystem = "memory-system",
        Projects = "projects",
        PeopleRelationships = "people-relationships",
    }
}

words! {
    /// A decision record's status
    AdrStatus {
        Proposed = "proposed",
        Accepted = "accepted",
        Shipped = "shipped",
        Superseded = "superseded",
        Deprecated = "deprecated",
        Rejected = "rejected",
    }
}

words! {
    /// How much an observation matters
    Priority { High = "high", Medium = "medium", Low = "low" }
}

/// `search`'s default `limit`, as `cairn search`'s.
const SEARCH_LIMIT: usize = 20;
/// `slog_query`'s default `limit`, as `cairn slog query`'s.
const SLOG_LIMIT: usize = 50;
/// `remember`'s default `priority`, as `cairn remember`'s.
const PRIORITY: Priority = Priority::Medium;

fn strs<T: Copy>(items: Option<Vec<T>>, word: fn(T) -> &'static str) -> Vec<String> {
    items
        .unwrap_or_default()
        .into_iter()
        .map(|k| word(k).to_string())
        .collect()
}

/// Refuses `-`, which the command line reads as "the text is on stdin".
fn not_stdin(field: &str, text: Option<String>) -> Result<Option<String>> {
    match text.as_deref() {
        Some("-") => Err(Error::bad_input(format!(
            "`{field}` is `-`, which the command line reads from stdin; the server cannot"
        ))
        .with_fix(format!("give the text of `{field}` itself"))),
        _ => Ok(text),
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallParams {
    /// What to recall, in words (required; `brief` gives what matters at a session's start)
    pub query: String,
    /// Result budget [default: cairn.toml's recall profile]
    pub profile: Option<Profile>,
    /// At most this many results (overrides the profile)
    pub limit: Option<usize>,
    /// Only observations of this category
    pub category: Option<Category>,
    /// Only these kinds of record
    pub kind: Option<Vec<RecordKind>>,
    /// Include observations the write gate held back
    pub include_hold: Option<bool>,
    /// Ranked lists to use [default: cairn.toml's]
    pub mode: Option<Mode>,
    /// Add why each result ranks where it does (each list's rank and score, decay)
    pub explain: Option<bool>,
    /// false: use the query as written, without the LLM rewrite the profile may ask for
    /// (faster) [default: as the profile says]
    pub rewrite: Option<bool>,
    /// Include the document library's chunks (never recalled unless asked) [default: false]
    pub library: Option<bool>,
}

impl RecallParams {
    pub fn command(self) -> Result<Command> {
        // An empty recall ranks everything by time alone: an agent that sent no query meant
        // something else (issue 30).
        if self.query.trim().is_empty() {
            return Err(Error::bad_input("recall needs a query: `query` is empty").with_fix(
                "give `query` the words of what to recall; call `brief` for what matters at the start of a session",
            ));
        }
        Ok(Command::Recall(recall::RecallArgs {
            query: vec![self.query],
            profile: self.profile.map(|p| p.as_str().to_string()),
            limit: self.limit,
            category: self.category.map(|c| c.as_str().to_string()),
            kind: strs(self.kind, RecordKind::as_str),
            include_hold: self.include_hold.unwrap_or(false),
            format: recall::Format::Md,
            explain: self.explain.unwrap_or(false),
            mode: self.mode.map(|m| m.as_str().to_string()),
            no_rewrite: self.rewrite == Some(false),
            library: self.library.unwrap_or(false),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// The words to search for
    pub words: String,
    /// Only these kinds of record
    pub kind: Option<Vec<RecordKind>>,
    /// Find the words as written (any case) by scanning the files, newest first
    pub exact: Option<bool>,
    /// At most this many results [default: 20]
    pub limit: Option<usize>,
    /// Ranked lists to use [default: cairn.toml's]
    pub mode: Option<Mode>,
    /// Search the document library instead (reference documents: papers, specs, manuals),
    /// each result citing document, page and heading [default: false]
    pub library: Option<bool>,
}

impl SearchParams {
    pub fn command(self) -> Result<Command> {
        if self.words.trim().is_empty() {
            return Err(Error::bad_input("`words` is empty").with_fix("give words to search"));
        }
        Ok(Command::Search(recall::SearchArgs {
            words: vec![self.words],
            kind: strs(self.kind, RecordKind::as_str),
            exact: self.exact.unwrap_or(false),
            limit: self.limit.unwrap_or(SEARCH_LIMIT),
            mode: self.mode.map(|m| m.as_str().to_string()),
            library: self.library.unwrap_or(false),
            project: None,
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteParams {
    /// A URL found while working (its page is fetched and its main text kept), or a text
    pub what: String,
    /// Why it mattered
    pub context: Option<String>,
    /// Tags
    pub tags: Option<Vec<String>>,
    /// The agent session it was found in
    pub session: Option<String>,
    /// true: do not fetch the URL (the note holds the context alone) [default: false]
    pub offline: Option<bool>,
}

impl NoteParams {
    pub fn command(self) -> Result<Command> {
        let what = not_stdin("what", Some(self.what))?.unwrap_or_default();
        Ok(Command::Note(note::Args {
            sub: None,
            what: Some(what),
            context: self.context,
            tags: self.tags.unwrap_or_default(),
            session: self.session.or_else(|| env("CAIRN_SESSION")),
            offline: self.offline.unwrap_or(false),
            no_llm: false,
            commit: CommitArgs::default(),
        }))
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BriefParams {
    /// Result budget of the recall part [default: balanced]
    pub profile: Option<Profile>,
    /// Brief for the project in this folder [default: the git repository of the folder the
    /// server was started in, when that is not the knowledge repository]
    pub project: Option<String>,
}

impl BriefParams {
    pub fn command(self) -> Result<Command> {
        Ok(Command::Brief(recall::BriefArgs {
            profile: self.profile.map(|p| p.as_str().to_string()),
            project: self.project.map(Into::into),
            agent: None,
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberParams {
    /// The observation, in a sentence or two (at most 4000 characters)
    pub text: String,
    /// Its category [default: chosen by keywords]
    pub category: Option<Category>,
    /// When it was observed: RFC 3339, YYYY-MM-DD, or a span ago like 2h or 3d [default: now]
    pub at: Option<String>,
    /// The agent session it came from
    pub session: Option<String>,
    /// Where it came from (kept, and returned by recall) [default: mcp]
    pub source: Option<String>,
    /// How much it matters [default: medium]
    pub priority: Option<Priority>,
    /// Store it but recall it only when asked (recall's include_hold)
    pub hold: Option<bool>,
}

impl RememberParams {
    pub fn command(self) -> Result<Command> {
        Ok(Command::Remember(remember::RememberArgs {
            text: self.text,
            category: self.category.map(|c| c.as_str().to_string()),
            at: self.at,
            session: self.session.or_else(|| env("CAIRN_SESSION")),
            source: self.source.unwrap_or_else(|| "mcp".to_string()),
            priority: self.priority.unwrap_or(PRIORITY).as_str().to_string(),
            hold: self.hold.unwrap_or(false),
            commit: CommitArgs::default(),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlogParams {
    /// What was done: a verb (deploy, fix, configure, …)
    pub action: String,
    /// What it was done to: a noun (caddy, redis, …)
    pub tool: String,
    /// What happened, in one line of at most 4000 characters
    pub detail: String,
    /// Why it was done, in at most 4000 characters
    pub reason: Option<String>,
    /// The agent session this happened in
    pub session: Option<String>,
    /// Who did it (an agent's or a person's name)
    pub actor: Option<String>,
    /// Tags
    pub tags: Option<Vec<String>>,
}

impl SlogParams {
    pub fn command(self) -> Result<Command> {
        Ok(Command::Slog(slog::Args {
            query: None,
            action: Some(self.action),
            tool: Some(self.tool),
            detail: not_stdin("detail", Some(self.detail))?,
            reason: self.reason,
            session: self.session.or_else(|| env("CAIRN_SESSION")),
            actor: self.actor.or_else(|| env("CAIRN_ACTOR")),
            tags: self.tags.unwrap_or_default(),
            commit: CommitArgs::default(),
        }))
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlogQueryParams {
    /// Words that must all appear (any case), separated by spaces
    pub words: Option<String>,
    /// Only this action
    pub action: Option<String>,
    /// Only this tool
    pub tool: Option<String>,
    /// Only entries at or after this time (RFC 3339, YYYY-MM-DD, or 30m / 12h / 7d / 2w ago)
    pub since: Option<String>,
    /// Only entries at or before this time
    pub until: Option<String>,
    /// At most this many entries, 0 for all [default: 50]
    pub limit: Option<usize>,
}

impl SlogQueryParams {
    pub fn command(self) -> Result<Command> {
        let words = self
            .words
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        Ok(Command::Slog(slog::Args {
            query: Some(slog::Sub::Query(slog::QueryArgs {
                words,
                action: self.action,
                tool: self.tool,
                since: self.since,
                until: self.until,
                limit: self.limit.unwrap_or(SLOG_LIMIT),
            })),
            action: None,
            tool: None,
            detail: None,
            reason: None,
            session: None,
            actor: None,
            tags: Vec::new(),
            commit: CommitArgs::default(),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdrNewParams {
    /// The decision, as a short title
    pub title: String,
    /// Tags
    pub tags: Option<Vec<String>>,
    /// Numbers of the records this one supersedes (marked superseded in the same commit)
    pub supersedes: Option<Vec<u32>>,
    /// Initial status [default: accepted when context, decision and consequences are all
    /// given, else proposed]
    pub status: Option<AdrStatus>,
    /// Who decided
    pub deciders: Option<Vec<String>>,
    /// The Context section: the forces at play, what made a decision necessary
    pub context: Option<String>,
    /// The Decision section: what was decided
    pub decision: Option<String>,
    /// The Consequences section: what follows, good and bad
    pub consequences: Option<String>,
}

impl AdrNewParams {
    pub fn command(self) -> Result<Command> {
        Ok(Command::Adr(adr::Command::New(adr::NewArgs {
            title: self.title,
            tags: self.tags.unwrap_or_default(),
            supersedes: self.supersedes.unwrap_or_default(),
            status: self.status.map(|s| s.as_str().to_string()),
            deciders: self.deciders.unwrap_or_default(),
            context: not_stdin("context", self.context)?,
            decision: not_stdin("decision", self.decision)?,
            consequences: not_stdin("consequences", self.consequences)?,
            edit: false,
            commit: CommitArgs::default(),
        })))
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdrListParams {
    /// Only records with this status
    pub status: Option<AdrStatus>,
    /// Only records with this tag
    pub tag: Option<String>,
}

impl AdrListParams {
    pub fn command(self) -> Result<Command> {
        Ok(Command::Adr(adr::Command::List(adr::ListArgs {
            status: self.status.map(|s| s.as_str().to_string()),
            tag: self.tag,
        })))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdrShowParams {
    /// The record's number
    pub number: u32,
}

impl AdrShowParams {
    pub fn command(self) -> Result<Command> {
        Ok(adr_show(self.number))
    }
}

pub fn adr_show(number: u32) -> Command {
    Command::Adr(adr::Command::Show { number })
}

/// Every decision record (the resource list).
pub fn adr_list_all() -> Command {
    Command::Adr(adr::Command::List(adr::ListArgs {
        status: None,
        tag: None,
    }))
}

pub fn memory_show() -> Command {
    Command::Memory(memory::Command::Show)
}

pub fn review_list() -> Command {
    Command::Review(review::Args {
        list: true,
        show: None,
        approve: None,
        text: None,
        reject: None,
        why: None,
        commit: CommitArgs::default(),
    })
}

/// An environment setting the command line also reads for the same argument (its clap `env`).
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Command {
        Cli::try_parse_from(args)
            .expect("the command line parses")
            .command
    }

    #[test]
    fn defaults_are_the_command_lines() {
        let Command::Search(cli) = parse(&["cairn", "search", "x"]) else {
            panic!("search parses to Search");
        };
        assert_eq!(cli.limit, SEARCH_LIMIT);
        let Command::Slog(slog::Args {
            query: Some(slog::Sub::Query(cli)),
            ..
        }) = parse(&["cairn", "slog", "query"])
        else {
            panic!("slog query parses to a query");
        };
        assert_eq!(cli.limit, SLOG_LIMIT);
        let Command::Remember(cli) = parse(&["cairn", "remember", "x"]) else {
            panic!("remember parses to Remember");
        };
        assert_eq!(cli.priority, PRIORITY.as_str());
    }

    #[test]
    fn words_are_the_ones_the_commands_accept() {
        for (id, _) in crate::observe::category::CUES {
            let c: Category = serde_json::from_value(serde_json::json!(id)).expect("a category");
            assert_eq!(c.as_str(), *id);
        }
        for k in [
            "slog",
            "adr",
            "memory",
            "observation",
            "card",
            "episode",
            "note",
        ] {
            let kind: RecordKind = serde_json::from_value(serde_json::json!(k)).expect("a kind");
            assert!(crate::index::Kind::parse(kind.as_str()).is_some(), "{k}");
        }
        for s in crate::adr::Status::ALL {
            let status: AdrStatus =
                serde_json::from_value(serde_json::json!(s.as_str())).expect("a status");
            assert_eq!(status.as_str(), s.as_str());
        }
    }

    #[test]
    fn rewrite_false_is_the_command_lines_no_rewrite() {
        for (rewrite, want) in [(None, false), (Some(true), false), (Some(false), true)] {
            let p = RecallParams {
                query: "nfs".into(),
                rewrite,
                ..RecallParams::default()
            };
            let Ok(Command::Recall(args)) = p.command() else {
                panic!("recall params make a recall");
            };
            assert_eq!(args.no_rewrite, want, "{rewrite:?}");
        }
        let Command::Recall(cli) = parse(&["cairn", "recall", "x"]) else {
            panic!("recall parses to Recall");
        };
        assert!(!cli.no_rewrite, "the profile decides by default");
    }

    #[test]
    fn a_dash_is_refused_where_the_command_line_reads_stdin() {
        let p = SlogParams {
            action: "deploy".into(),
            tool: "caddy".into(),
            detail: "-".into(),
            reason: None,
            session: None,
            actor: None,
            tags: None,
        };
        let err = p.command().expect_err("`-` would read the protocol");
        assert!(err.message.contains("stdin"), "{}", err.message);
    }
}
