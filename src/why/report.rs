//! What a trace says: the types `cairn why` reports (and prints with `--json`).

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::documents::{LibraryTrace, NoteTrace};
use crate::index::Kind;
use crate::observe::gate::Verdict;
use crate::recall::{Request, Standing};
use crate::store::{self, Op};

/// What to trace.
#[derive(Debug, Clone)]
pub struct Ask {
    pub target: String,
    /// A query to rank the records found against (`--query`).
    pub query: Option<Request>,
    pub now: DateTime<Utc>,
}

/// A record that holds the target.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The record's kind (`observation`, `card`, …, or `proposal`).
    pub kind: String,
    pub id: String,
    /// `id` (looked up), `exact` (holds the text, any case) or `meaning` (nearest by vector).
    pub how: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// `path:line` or the file, relative to the root.
    pub at: String,
    pub text: String,
}

/// The gate's verdict on a text and the rule that made it.
#[derive(Debug, Clone, Serialize)]
pub struct GateCheck {
    pub verdict: Verdict,
    pub confidence: f64,
    /// The rule, as `gate::decide` names it (`too short`, `instruction artifact`, …).
    pub rule: &'static str,
    /// The rule in a person's words.
    pub says: String,
    /// `re-run`: the stored record keeps no rule, so the gate's rules were run again on its
    /// text; `as-given`: the text given to `why`, put to the gate as `remember` would.
    pub from: &'static str,
    /// For a stored record: the verdict it was stored with, when the rules today say another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<Verdict>,
}

/// An event about an observation, as written.
#[derive(Debug, Clone, Serialize)]
pub struct EventAt {
    pub op: Op,
    pub ts: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `path:line`.
    pub at: String,
}

/// A record's decay now, as recall applies it.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub kind: Kind,
    pub age_days: f64,
    /// Per day; 0 for what does not decay.
    pub rate: f64,
    pub time_decay: f64,
    /// The stale factor when it applies (stale or superseded), else 1.
    pub stale_factor: f64,
    /// `time_decay × stale_factor`: what recall multiplies (or adds the log of).
    pub decay: f64,
    /// Whether the index holds the record (deleted ones it leaves out).
    pub indexed: bool,
}

/// Where a record stands for the query, and why when it is not recalled.
#[derive(Debug, Clone, Serialize)]
pub struct QueryStanding {
    pub query: String,
    pub recalled: bool,
    /// Recall's own standing (the lists read as deep as recall reads them).
    pub standing: Standing,
    /// When recall's lists did not reach it: its standing in a read of every record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_read: Option<Standing>,
    /// Why it is not recalled, in a person's words (empty when it is).
    pub why_not: Vec<String>,
}

/// A proposal citing an observation.
#[derive(Debug, Clone, Serialize)]
pub struct ProposalRef {
    pub id: String,
    pub state: crate::proposals::State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<&'static str>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub section: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A MEMORY.md entry.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryRef {
    pub line: usize,
    pub text: String,
    /// `exact` (holds the observation's text) or the id of the proposal that put it there.
    pub how: String,
}

/// An observation followed through the pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct ObservationTrace {
    pub id: String,
    pub text: String,
    /// `path:line` of the record.
    pub at: String,
    pub state: store::State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    pub time: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn card it came from (its source), when it came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    pub observation_type: String,
    pub priority: String,
    pub gate: GateCheck,
    pub write_confidence: f64,
    pub category: String,
    pub category_confidence: f64,
    pub taxonomy_version: u32,
    pub merged_count: u32,
    /// Merge, supersede, stale, delete and restore events about it, in the order written.
    pub events: Vec<EventAt>,
    pub recalls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_recall: Option<String>,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
    pub proposals: Vec<ProposalRef>,
    pub memory: Vec<MemoryRef>,
}

/// A transcript path the checkpoints know for a session file.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptRef {
    pub path: String,
    pub exists: bool,
}

/// An observer's reading of a turn.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedBy {
    pub observer: String,
    pub ts: String,
}

/// A turn card followed through the pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct CardTrace {
    pub id: String,
    pub agent: String,
    pub session: String,
    pub turn: usize,
    pub ts: String,
    pub outcome: String,
    pub asked: String,
    pub trivial: bool,
    /// `path:line` of the card.
    pub at: String,
    /// The transcripts `.cairn/sessions.json` knows for its session file.
    pub transcripts: Vec<TranscriptRef>,
    /// Each time an observer read the turn.
    pub observed: Vec<ObservedBy>,
    /// The observations whose source is this card.
    pub extracted: Vec<String>,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}

/// An id merged into another instead of being stored.
#[derive(Debug, Clone, Serialize)]
pub struct MergedAway {
    /// The id it would have had.
    pub from: String,
    pub into: String,
    pub ts: String,
    pub at: String,
}

/// The stored observation a new copy of the text would merge into.
#[derive(Debug, Clone, Serialize)]
pub struct WouldMerge {
    pub into: String,
    pub similarity: f64,
    pub threshold: f64,
}

/// Everything `why` found.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    pub target: String,
    /// `id` or `text`.
    pub by: &'static str,
    /// The records holding it, at most [`LISTED`].
    pub found: Vec<Found>,
    /// How many records hold it in all.
    pub found_total: usize,
    pub merged_away: Vec<MergedAway>,
    /// A text only: what the gate makes of the text itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateCheck>,
    /// A text only: the stored observation a new copy would merge into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_merge: Option<WouldMerge>,
    pub observations: Vec<ObservationTrace>,
    pub cards: Vec<CardTrace>,
    /// Other records looked up by id (slog, ADR, MEMORY.md, episode): decay and standing.
    pub others: Vec<OtherTrace>,
    /// Proposals looked up by id.
    pub proposals: Vec<ProposalRef>,
    /// A note looked up by id or path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<NoteTrace>,
    /// A library chunk or document looked up by id, path or URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryTrace>,
}

impl Trace {
    /// Whether nothing holds the target (by id or as written) nor absorbed it: records near
    /// it in meaning are shown, but they are not it.
    pub fn is_empty(&self) -> bool {
        self.found.iter().all(|f| f.how == "meaning") && self.merged_away.is_empty()
    }
}

/// A record of another kind, looked up by id.
#[derive(Debug, Clone, Serialize)]
pub struct OtherTrace {
    pub id: String,
    pub kind: Kind,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}
