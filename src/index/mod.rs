//! The index: one tantivy index in `.cairn/index` over every record, the only importer of
//! tantivy.
//!
//! One document per record (slog entry, ADR, MEMORY.md entry, observation), with the fields
//! id, kind, text, title, time, category, verdict, status, session, source and file (the
//! source file it came from). Two fast fields feed ranking: `time` (Unix milliseconds) and
//! `class` (which decay rate applies; see [`Class`]). Rates themselves come from the
//! configuration at query time, so changing them needs no rebuild.
//!
//! The index is derived and revocable. It is brought up to date at the start of every read
//! ([`Index::open`]): each source file has a checkpoint (size, mtime, byte offset indexed, and
//! the hash of the last indexed line) kept in a file beside the index that tantivy's commit
//! names in its payload (`cairn-checkpoints-HASH.json`, written before the commit), so the
//! checkpoints and the documents they describe change together, atomically. An unchanged file
//! costs one `stat`, made on a second thread while tantivy opens the index; an appended JSONL
//! file is folded in from its offset; anything else (edited in the middle, truncated,
//! rewritten) is re-indexed whole; a file gone has its documents deleted; a schema version
//! mismatch rebuilds everything. Updates take tantivy's writer lock; a reader that finds it
//! held searches the last committed state instead of waiting (ADR 9). Readers never see a
//! half-committed index.
//!
//! A repository this process cannot write (another user's, a read-only mount) is searched
//! read-only ([`Index::open`]): the committed index in `.cairn/index` as it is, through a
//! directory that takes no lock files, with a warning when the files moved on since; with no
//! usable index there, one is built in a temporary folder for the command and thrown away.

//! The parts: [`schema`] (the fields, a [`Doc`] to and from tantivy's document),
//! [`checkpoints`] (what a commit says about the files it holds), [`directory`] (the folder as
//! tantivy reads it), [`open`] (opening and catching up), [`write`] (folding the files in,
//! embedding, deleting) and [`read`] (searches and lookups).

mod checkpoints;
mod directory;
mod held;
mod open;
mod present;
mod read;
mod schema;
pub mod sources;
pub mod tokenizer;
mod top;
pub mod vectors;
mod write;

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tantivy::IndexReader;

use crate::error::{Error, Kind as ErrorKind};

pub use checkpoints::Checkpoint;
use checkpoints::Payload;
use schema::Fields;

pub use held::{Held, Opened, ends_after_command, leave_to_exit};

/// Bumped whenever the schema or what goes into a document changes: a mismatch rebuilds.
pub const SCHEMA_VERSION: u32 = 9;

/// The weight in BM25 of the `context` field (a record's context, [`Doc::context`]: an
/// observation's narrative, the turn a turn answers) beside `record` (the record's own words,
/// weight one) and `title` (weight two): a record that says a thing ranks above the one whose
/// context says it (the next turn of a conversation, which holds the question as its
/// narrative). Each word is indexed once, in one of the two fields (ADR 62; ADR 61 indexed the
/// whole text and the record again, which doubled the postings and the first build's time).
/// On the LoCoMo dev split (R@10, categories 1-4, ADR 62): hybrid 0.738 at 0.5 (0.736 with
/// ADR 61's fields); words 0.675 at 0.5, 0.670 at 0.3, 0.648 at 1.0 (0.701 with ADR 61's).
pub const CONTEXT_BOOST: f32 = 0.5;

/// The document store's block size in bytes (tantivy's default is 16 KiB).
const DOCSTORE_BLOCK: usize = 4096;

/// Where the index lives, relative to the repository root.
pub const DIR: &str = ".cairn/index";

/// The kind of record a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Slog,
    Adr,
    Memory,
    Observation,
    /// A turn card from an agent's transcript.
    Card,
    /// A compaction note or session summary.
    Episode,
    /// A discovery note (`vault/notes`).
    Note,
    /// A chunk of a library document: a separate collection, searched only when asked.
    Library,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Slog,
        Kind::Adr,
        Kind::Memory,
        Kind::Observation,
        Kind::Card,
        Kind::Episode,
        Kind::Note,
        Kind::Library,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Slog => "slog",
            Kind::Adr => "adr",
            Kind::Memory => "memory",
            Kind::Observation => "observation",
            Kind::Card => "card",
            Kind::Episode => "episode",
            Kind::Note => "note",
            Kind::Library => "library",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim().to_ascii_lowercase())
    }
}

/// Which decay applies to a document; stored as a fast field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Slog = 0,
    Observation = 1,
    /// Accepted and shipped ADRs: they do not decay.
    AdrCurrent = 2,
    AdrOther = 3,
    Memory = 4,
    Card = 5,
    Episode = 6,
    Note = 7,
    Library = 8,
}

impl Class {
    pub const COUNT: usize = 9;

    fn from_u64(v: u64) -> Class {
        match v {
            0 => Class::Slog,
            1 => Class::Observation,
            2 => Class::AdrCurrent,
            3 => Class::AdrOther,
            5 => Class::Card,
            6 => Class::Episode,
            7 => Class::Note,
            8 => Class::Library,
            _ => Class::Memory,
        }
    }
}

/// One record as the index holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    pub id: String,
    pub kind: Kind,
    /// What is shown and embedded: the record, and its context after it when it has one.
    pub text: String,
    pub title: String,
    /// The part at the end of `text` that is the record's context rather than the record (an
    /// observation's narrative): searched in a field of its own ([`CONTEXT_BOOST`]); empty for
    /// most kinds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context: String,
    pub time: DateTime<Utc>,
    pub category: String,
    pub verdict: String,
    /// ADR status, or an observation's state (`active`, `stale`, `deleted`, `superseded`).
    pub status: String,
    pub session: String,
    pub source: String,
    /// The source file, relative to the repository root.
    pub file: String,
}

impl Doc {
    /// The text without its context: the record itself.
    pub fn record(&self) -> &str {
        match self.text.strip_suffix(self.context.as_str()) {
            Some(record) if !self.context.is_empty() => record.strip_suffix('\n').unwrap_or(record),
            _ => &self.text,
        }
    }

    /// Which decay rate applies.
    pub fn class(&self) -> Class {
        match self.kind {
            Kind::Slog => Class::Slog,
            Kind::Observation => Class::Observation,
            Kind::Memory => Class::Memory,
            Kind::Card => Class::Card,
            Kind::Episode => Class::Episode,
            Kind::Note => Class::Note,
            Kind::Library => Class::Library,
            Kind::Adr if matches!(self.status.as_str(), "accepted" | "shipped") => {
                Class::AdrCurrent
            }
            Kind::Adr => Class::AdrOther,
        }
    }

    /// Whether the stale factor applies (superseded or deprecated ADRs, stale, superseded or
    /// rejected observations).
    pub fn is_stale(&self) -> bool {
        match self.kind {
            Kind::Adr => matches!(self.status.as_str(), "superseded" | "deprecated"),
            Kind::Observation => {
                matches!(
                    self.status.as_str(),
                    "stale" | "superseded" | sources::REJECTED
                )
            }
            _ => false,
        }
    }
}

/// The decay applied at query time: `(floor + (1 - floor) × exp(-rate × days)) × (stale ?
/// stale_factor : 1)`. The floor keeps recency a preference among matches of like strength
/// rather than a sentence on old ones: with `exp` alone at 0.01 a day, a fact from eight months
/// ago kept a tenth of its score and lost to any recent weak match.
#[derive(Debug, Clone)]
pub struct Decay {
    pub now: DateTime<Utc>,
    pub rates: [f64; Class::COUNT],
    pub floor: f64,
    pub stale_factor: f64,
}

impl Decay {
    /// From the `[recall]` configuration.
    pub fn from_config(config: &crate::config::Recall, now: DateTime<Utc>) -> Decay {
        let rate = |k: &str| config.decay.get(k).copied().unwrap_or(0.0);
        let mut rates = [0.0; Class::COUNT];
        rates[Class::Slog as usize] = rate("slog");
        rates[Class::Observation as usize] = rate("observation");
        rates[Class::AdrCurrent as usize] = 0.0;
        rates[Class::AdrOther as usize] = rate("adr");
        rates[Class::Memory as usize] = rate("memory");
        rates[Class::Card as usize] = rate("card");
        rates[Class::Episode as usize] = rate("episode");
        rates[Class::Note as usize] = rate("note");
        // Reference documents do not age unless the configuration says so.
        rates[Class::Library as usize] = rate("library");
        Decay {
            now,
            rates,
            floor: config.decay_floor.clamp(0.0, 1.0),
            stale_factor: config.stale_factor,
        }
    }

    /// The factor for a record of `class` at `time_ms`.
    pub fn factor(&self, class: Class, time_ms: i64, stale: bool) -> f64 {
        let f = self.time_factor(class, time_ms);
        if stale { f * self.stale_factor } else { f }
    }

    /// The part of the factor that comes from age alone.
    pub fn time_factor(&self, class: Class, time_ms: i64) -> f64 {
        let rate = self.rate(class);
        if rate == 0.0 {
            1.0
        } else {
            self.floor + (1.0 - self.floor) * (-rate * self.days(time_ms)).exp()
        }
    }

    /// The decay rate per day of `class`.
    pub fn rate(&self, class: Class) -> f64 {
        self.rates[class as usize]
    }

    /// A record's age in days at `now` (never negative).
    pub fn days(&self, time_ms: i64) -> f64 {
        ((self.now.timestamp_millis() - time_ms) as f64 / 86_400_000.0).max(0.0)
    }
}

/// What to leave out of a search.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only these kinds (all when empty).
    pub kinds: Vec<Kind>,
    pub category: Option<String>,
    pub include_hold: bool,
}

/// A search result: the document, its score before decay, and the decay factor.
#[derive(Debug, Clone)]
pub struct Hit {
    pub doc: Doc,
    pub raw: f64,
    pub decay: f64,
    pub score: f64,
}

/// How the last refresh went.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Refresh {
    /// Files folded in from their checkpoint.
    pub appended: usize,
    /// Files indexed whole (new, or no longer matching their checkpoint).
    pub reindexed: usize,
    /// Files gone, their documents deleted.
    pub removed: usize,
    /// Documents added.
    pub added: usize,
    /// The index was rebuilt from nothing (missing, or another schema).
    pub rebuilt: bool,
    /// Another process held the writer lock: this read saw the last committed state.
    pub stale: bool,
    /// Texts embedded for the vector store.
    pub embedded: usize,
    /// The repository could not be written: the index was read as it is (or built in a
    /// temporary folder), and may be behind the files.
    pub read_only: bool,
    pub warnings: Vec<String>,
}

/// An open, up-to-date index.
pub struct Index {
    index: tantivy::Index,
    reader: IndexReader,
    fields: Fields,
    /// Which text fields each segment has words in ([`present`]).
    present: std::sync::Arc<present::Present>,
    pub refresh: Refresh,
    files: usize,
    /// Made on first use: most reads never embed anything.
    vectorizer: std::sync::OnceLock<Box<dyn vectors::Vectorizer>>,
    embed_config: crate::config::Embed,
    /// The vectorizer's model id, known without making it.
    model: String,
    vectors_dir: std::path::PathBuf,
    store: std::sync::OnceLock<Option<vectors::Store>>,
    /// The payload of the last commit, read once (it holds a checkpoint per source file).
    payload: Payload,
    /// The opstamp of the commit `payload` was read from or written in (see [`Index::is_current`]).
    committed: Option<u64>,
    /// The index folder (where the checkpoints files are).
    dir: std::path::PathBuf,
    /// What reads after the refresh had to warn about (a vector list left out).
    notes: std::sync::Mutex<Vec<String>>,
    /// A search of the vectors started before this index was opened ([`Index::search_early`]).
    early: std::sync::Mutex<Option<std::thread::JoinHandle<Option<Early>>>>,
    /// The temporary folder of an index built for one read of a read-only repository; last,
    /// so that it is removed after the index that reads it is closed.
    _scratch: Option<tempfile::TempDir>,
}

/// Whether this process can write in `dir` (made when missing): probed with a temporary file
/// that is gone when the probe ends.
pub fn writable(dir: &Path) -> bool {
    std::fs::create_dir_all(dir).is_ok() && tempfile::tempfile_in(dir).is_ok()
}

fn index_err(context: &str, err: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("index: {context}: {err}")).with_fix(
        "run the command again; if it fails the same way, run `cairn index --rebuild` (the index is derived from the files)",
    )
}

/// How many pairs of stored texts [`Index::chance_cosine`] measures.
pub const CHANCE_PAIRS: usize = 1000;

/// The fewest pairs that make a distribution of chance cosines worth reading.
pub const CHANCE_MIN: usize = 20;

/// How many rows the vector list reads from the store for `limit` hits: twice as many (a
/// text held by a deleted or filtered record finds nothing). When a filter leaves out so many
/// of them that fewer than `limit` pass, the list searches again for
/// [`wider_candidates`]: a filter asks for more only when its records are few in the store,
/// not every time (a library search, whose chunks are most of the store, read four times the
/// rows it needed; ADR 146).
pub fn vector_candidates(limit: usize) -> usize {
    limit * 2
}

/// How many rows the vector list reads from the store when the first [`vector_candidates`]
/// left it short.
pub fn wider_candidates(limit: usize) -> usize {
    limit * 8
}

/// A search of the vector store made before the index was opened ([`Index::search_early`]).
pub struct Early {
    query: String,
    /// The query's vector, for a wider search when the filter leaves the list short.
    vector: Vec<f32>,
    k: usize,
    /// The store file's length when it was searched.
    len: u64,
    store: vectors::Store,
    nearest: Vec<(u64, f32)>,
}

/// Whether a document passes a filter (the vector list is filtered after its scan).
fn passes(doc: &Doc, filter: &Filter) -> bool {
    doc.status != "deleted"
        && !(doc.kind == Kind::Observation && doc.status == "superseded")
        && (filter.include_hold || doc.verdict != "hold")
        && (if filter.kinds.is_empty() {
            doc.kind != Kind::Library
        } else {
            filter.kinds.contains(&doc.kind)
        })
        && filter.category.as_ref().is_none_or(|c| *c == doc.category)
}

/// Hex of a SHA-256, for checkpoints.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn decay_by_class_and_staleness() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap();
        let decay = Decay::from_config(&crate::config::Recall::default(), now);
        let day = 86_400_000i64;
        let t = now.timestamp_millis();
        // Half the score decays (the default floor is 0.5), the other half never does.
        assert!(
            (decay.factor(Class::Observation, t - 100 * day, false)
                - (0.5 + 0.5 * (-1.0f64).exp()))
            .abs()
                < 1e-9
        );
        assert!((decay.factor(Class::Observation, t - 10_000 * day, false) - 0.5).abs() < 1e-9);
        assert_eq!(decay.factor(Class::AdrCurrent, t - 1000 * day, false), 1.0);
        assert_eq!(decay.factor(Class::Memory, t - 1000 * day, false), 1.0);
        assert_eq!(decay.factor(Class::AdrCurrent, t, true), 0.5);
        assert_eq!(
            decay.factor(Class::Slog, t + day, false),
            1.0,
            "future times do not boost"
        );
        let plain = crate::config::Recall {
            decay_floor: 0.0,
            ..crate::config::Recall::default()
        };
        let decay = Decay::from_config(&plain, now);
        assert!(
            (decay.factor(Class::Observation, t - 100 * day, false) - (-1.0f64).exp()).abs() < 1e-9
        );
        assert_eq!(
            decay.factor(Class::Observation, t - 100 * day, true),
            0.5 * (-1.0f64).exp()
        );
    }

    #[test]
    fn a_record_is_its_text_without_its_context() {
        let doc = |text: &str, context: &str| Doc {
            id: "o".into(),
            kind: Kind::Observation,
            text: text.into(),
            title: String::new(),
            context: context.into(),
            time: Utc::now(),
            category: String::new(),
            verdict: String::new(),
            status: String::new(),
            session: String::new(),
            source: String::new(),
            file: String::new(),
        };
        assert_eq!(
            doc("in the bucket\nwhere is it kept", "where is it kept").record(),
            "in the bucket"
        );
        assert_eq!(doc("no context", "").record(), "no context");
        // A context that is not the end of the text is not cut out.
        assert_eq!(doc("in the bucket", "elsewhere").record(), "in the bucket");
        // A narrative that repeats the observation leaves the observation.
        assert_eq!(doc("same\nsame", "same").record(), "same");
    }
}
