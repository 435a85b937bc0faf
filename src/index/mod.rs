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

mod held;
pub mod sources;
pub mod tokenizer;
mod top;
pub mod vectors;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tantivy::collector::{Count, TopDocs};
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::TokenStream;
use tantivy::{DocAddress, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::error::{Error, Kind as ErrorKind, Result};
use crate::repo::Repo;

pub use held::{Held, Opened, ends_after_command};

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

struct Fields {
    id: Field,
    kind: Field,
    text: Field,
    title: Field,
    record: Field,
    context: Field,
    context_bytes: Field,
    time: Field,
    class: Field,
    stale: Field,
    chash: Field,
    category: Field,
    verdict: Field,
    status: Field,
    session: Field,
    source: Field,
    file: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_opts = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer::NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let searched = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer::NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        // Shown and embedded; searched through `record` and `context`, which split it.
        text: b.add_text_field("text", STORED),
        title: b.add_text_field("title", text_opts.clone()),
        record: b.add_text_field("record", searched.clone()),
        context: b.add_text_field("context", searched),
        context_bytes: b.add_u64_field("context_bytes", STORED),
        time: b.add_i64_field("time", FAST | STORED),
        class: b.add_u64_field("class", FAST),
        stale: b.add_u64_field("stale", FAST),
        chash: b.add_u64_field("chash", INDEXED | FAST),
        category: b.add_text_field("category", STRING | STORED),
        verdict: b.add_text_field("verdict", STRING | STORED),
        status: b.add_text_field("status", STRING | STORED),
        session: b.add_text_field("session", STRING | STORED),
        source: b.add_text_field("source", STRING | STORED),
        file: b.add_text_field("file", STRING | STORED),
    };
    (b.build(), fields)
}

/// A source file's checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub size: u64,
    pub mtime_ns: i128,
    /// Bytes folded in (for JSONL: up to the end of the last whole line).
    pub offset: u64,
    /// Where the last indexed line starts.
    pub last_start: u64,
    /// Hash of the last indexed line (JSONL) or of the whole file (Markdown).
    pub hash: String,
}

/// What a commit of the index says about the files it holds: the checkpoints and the vector
/// model. In the commit's payload (tantivy's `meta.json`) only `schema`, `vectors` and the
/// name of the checkpoints file go; the checkpoints themselves (one a source file, 200 KB at
/// 1,400 files) are in `CHECKPOINTS_PREFIX<hash>.json` beside it, named by the hash of its
/// bytes and written before the commit, so the commit still moves documents and checkpoints
/// together. tantivy parses `meta.json` three times on every open (open, reader, opstamp)
/// and the payload is a string inside it, escaped: with the checkpoints inside, that was a
/// fifth of a recall at 100,000 records.
#[derive(Debug, Clone, Default)]
struct Payload {
    schema: u32,
    files: BTreeMap<String, Checkpoint>,
    /// The model every document has a vector of; `None` when some may lack one (a provider
    /// failed, or the model changed), so that the next update embeds what is missing.
    vectors: Option<String>,
    /// The name of the checkpoints file this payload was read from or committed with.
    name: Option<String>,
    /// The files' stamp as committed (of `files`): a read that finds the files with this
    /// stamp has nothing to fold in ([`sources::Stamp`]).
    stamp: Option<sources::Stamp>,
    /// Whether `files` holds the checkpoints file's content: an index opened for a read is
    /// not read further than its stamp until the files are found to differ.
    loaded: bool,
}

/// The payload as committed in `meta.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Committed {
    schema: u32,
    #[serde(default)]
    vectors: Option<String>,
    /// The hash naming the checkpoints file.
    #[serde(default)]
    checkpoints: String,
    /// The stamp of the checkpoints' files ([`sources::Stamp::to_hex`]).
    #[serde(default)]
    stamp: String,
}

/// How the checkpoints files of an index folder begin.
const CHECKPOINTS_PREFIX: &str = "cairn-checkpoints-";

fn checkpoints_path(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(format!("{CHECKPOINTS_PREFIX}{name}.json"))
}

impl Payload {
    /// Writes the checkpoints file (unless one of the same bytes is there) and gives the
    /// payload to commit; call [`Payload::collect`] after the commit.
    fn prepare(&mut self, dir: &Path) -> Result<String> {
        let bytes = serde_json::to_vec(&self.files).expect("checkpoints serialize");
        let name = hash(&bytes);
        let path = checkpoints_path(dir, &name);
        if !path.is_file() {
            crate::files::write_atomic(&path, &bytes)?;
        }
        let stamp = sources::Stamp::of_checkpoints(&self.files);
        let json = serde_json::to_string(&Committed {
            schema: self.schema,
            vectors: self.vectors.clone(),
            checkpoints: name.clone(),
            stamp: stamp.to_hex(),
        })
        .expect("payload serializes");
        self.name = Some(name);
        self.stamp = Some(stamp);
        self.loaded = true;
        Ok(json)
    }

    /// The payload of the commit `metas` describes, with its checkpoints read from `dir`;
    /// `None` when it has none, is of another schema, or its checkpoints file is missing or
    /// unreadable (the index is then rebuilt: it is derived).
    fn read(dir: &Path, metas: &tantivy::IndexMeta) -> Option<Payload> {
        let mut payload = Payload::read_str(metas.payload.as_deref()?)?;
        payload.load(dir).then_some(payload)
    }

    /// The payload of a committed payload string, its checkpoints not read yet
    /// ([`Payload::load`]); `None` when it is of another schema or names no checkpoints.
    fn read_str(payload: &str) -> Option<Payload> {
        let committed: Committed = serde_json::from_str(payload).ok()?;
        if committed.schema != SCHEMA_VERSION || committed.checkpoints.is_empty() {
            return None;
        }
        Some(Payload {
            schema: committed.schema,
            files: BTreeMap::new(),
            vectors: committed.vectors,
            name: Some(committed.checkpoints),
            stamp: sources::Stamp::from_hex(&committed.stamp),
            loaded: false,
        })
    }

    /// Reads the checkpoints file this payload names (once); false when it is missing or
    /// unreadable (the index is then rebuilt: it is derived).
    fn load(&mut self, dir: &Path) -> bool {
        if self.loaded {
            return true;
        }
        let Some(name) = &self.name else {
            return false;
        };
        let Some(files) = std::fs::read(checkpoints_path(dir, name))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        else {
            return false;
        };
        self.files = files;
        self.loaded = true;
        true
    }

    /// Whether the files as `found` (their stamp) are what this payload's checkpoints
    /// describe, with a vector of `model` for every document: nothing to fold in.
    fn matches(&self, found: sources::Stamp, model: &str) -> bool {
        self.stamp == Some(found) && self.vectors.as_deref() == Some(model)
    }

    /// Removes the checkpoints files of `dir` other than this commit's and the one it
    /// replaced (a reader that read the last `meta.json` may be about to read that one; one
    /// that finds its file gone reopens under the build lock, [`Index::open`]).
    fn collect(dir: &Path, keep: &str, replaced: Option<&str>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(h) = name
                .strip_prefix(CHECKPOINTS_PREFIX)
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            if h != keep && Some(h) != replaced {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
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

/// The index's folder as tantivy maps it, but for the segments' document stores
/// ([`PreadFile`]). A read-only one's locks are no-ops and its syncs nothing, so that a reader
/// needs no write access (tantivy's reader takes a lock file while it opens segments, which
/// keeps a writer's garbage collection from deleting them; a read-only repository has no
/// writer).
#[derive(Clone, Debug)]
struct StoreDir {
    mapped: tantivy::directory::MmapDirectory,
    root: std::path::PathBuf,
    read_only: bool,
}

impl StoreDir {
    fn open(dir: &Path, read_only: bool) -> tantivy::Result<StoreDir> {
        Ok(StoreDir {
            mapped: tantivy::directory::MmapDirectory::open(dir)?,
            root: dir.to_path_buf(),
            read_only,
        })
    }
}

/// Whether `path` is one file name, the only kind of path tantivy makes in its folder. Paths
/// read from the folder's own files (`.managed.json` lists the files its garbage collection
/// deletes) may come from a clone that committed `.cairn/` (ADR 66): `../../victim/x` or an
/// absolute path there is never opened, written or deleted.
fn flat(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    )
}

fn not_flat(path: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "{}: not a file of the index's folder",
        path.display()
    ))
}

impl tantivy::Directory for StoreDir {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<Arc<dyn tantivy::directory::FileHandle>, OpenReadError> {
        if !flat(path) {
            return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
        }
        store_handle(&self.mapped, &self.root, path)
    }

    fn delete(&self, path: &Path) -> std::result::Result<(), DeleteError> {
        if !flat(path) {
            // Taken off the managed list as a file already gone.
            return Err(DeleteError::FileDoesNotExist(path.to_path_buf()));
        }
        self.mapped.delete(path)
    }

    fn exists(&self, path: &Path) -> std::result::Result<bool, OpenReadError> {
        if !flat(path) {
            return Ok(false);
        }
        self.mapped.exists(path)
    }

    fn open_write(
        &self,
        path: &Path,
    ) -> std::result::Result<tantivy::directory::WritePtr, OpenWriteError> {
        if !flat(path) {
            return Err(OpenWriteError::wrap_io_error(
                not_flat(path),
                path.to_path_buf(),
            ));
        }
        self.mapped.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> std::result::Result<Vec<u8>, OpenReadError> {
        if !flat(path) {
            return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
        }
        self.mapped.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        if !flat(path) {
            return Err(not_flat(path));
        }
        self.mapped.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        match self.read_only {
            true => Ok(()),
            false => self.mapped.sync_directory(),
        }
    }

    fn acquire_lock(
        &self,
        lock: &tantivy::directory::Lock,
    ) -> std::result::Result<tantivy::directory::DirectoryLock, LockError> {
        match self.read_only {
            true => Ok(tantivy::directory::DirectoryLock::from(Box::new(()))),
            false => self.mapped.acquire_lock(lock),
        }
    }

    fn watch(
        &self,
        callback: tantivy::directory::WatchCallback,
    ) -> tantivy::Result<tantivy::directory::WatchHandle> {
        self.mapped.watch(callback)
    }
}

/// The handle of `path` in `dir`: mapped, as tantivy does, but for a document store, whose
/// blocks are read one `pread` each ([`PreadFile`]).
fn store_handle(
    dir: &tantivy::directory::MmapDirectory,
    root: &Path,
    path: &Path,
) -> std::result::Result<Arc<dyn tantivy::directory::FileHandle>, OpenReadError> {
    use tantivy::Directory;
    let mapped = dir.get_file_handle(path)?;
    if path.extension().is_none_or(|e| e != "store") {
        return Ok(mapped);
    }
    match std::fs::File::open(root.join(path)) {
        Ok(file) => Ok(Arc::new(PreadFile { file, mapped })),
        Err(_) => Ok(mapped),
    }
}

/// A segment's document store: a recall loads a few dozen documents, each from a block of
/// its own somewhere in the file. Through the map each block is a page fault that maps
/// sixteen pages around it; a `pread` of the block is one call and one copy (ADR 64). Reads
/// longer than [`PREAD_MAX`] (a merge stacking whole stores) go through the map.
#[derive(Debug)]
struct PreadFile {
    file: std::fs::File,
    mapped: Arc<dyn tantivy::directory::FileHandle>,
}

/// The longest read [`PreadFile`] makes itself.
const PREAD_MAX: usize = 64 * 1024;

impl tantivy::HasLen for PreadFile {
    fn len(&self) -> usize {
        self.mapped.len()
    }
}

impl tantivy::directory::FileHandle for PreadFile {
    fn read_bytes(
        &self,
        range: std::ops::Range<usize>,
    ) -> std::io::Result<tantivy::directory::OwnedBytes> {
        if range.len() > PREAD_MAX {
            return self.mapped.read_bytes(range);
        }
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; range.len()];
        self.file.read_exact_at(&mut buf, range.start as u64)?;
        Ok(tantivy::directory::OwnedBytes::new(buf))
    }
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

/// How many times an open of the index starts again after a failure another process's
/// write explains ([`transient`]); the waits between grow by 10 ms, 0.45 s in all.
const OPEN_RETRIES: u32 = 9;

/// Whether an error met while opening or updating the index is one that another process
/// changing the index explains, and that a new attempt from the last commit does not meet:
/// a file named by the commit read was removed (tantivy's garbage collection, a rebuild), or
/// a folder being removed got a new file meanwhile.
fn transient(e: &Error) -> bool {
    e.kind == ErrorKind::Io
        && [
            "FileDoesNotExist",
            "kind: NotFound",
            "os error 2)",
            "os error 39)",
            "Directory not empty",
        ]
        .iter()
        .any(|m| e.message.contains(m))
}

/// Removes the index folder `dir` for a build from nothing (under the build lock). A reader
/// of the old index may create a lock file in it meanwhile, which fails the removal with
/// "Directory not empty": it is tried again a few times.
fn remove_index_dir(dir: &Path) -> Result<()> {
    let mut attempt = 0;
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if attempt < OPEN_RETRIES => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)));
            }
            Err(e) => return Err(Error::io(dir.display(), &e)),
        }
    }
}

impl Index {
    /// Opens the index of `repo`, bringing it up to date with the files first; in a
    /// repository this process cannot write, opens it read-only ([`Index::open_read_only`]).
    pub fn open(repo: &Repo) -> Result<Index> {
        let dir = repo.path(DIR);
        // The probe is made in `.cairn/`, not in the index folder: a process building the
        // index from nothing removes that folder, and a probe at that moment would take a
        // writable repository for a read-only one.
        if writable(&repo.derived_dir()) {
            Index::open_at(repo, &dir, false)
        } else {
            Index::open_read_only(repo, &dir)
        }
    }

    /// Opens (or builds) the index in `dir`; `rebuild` throws away what is there.
    pub fn open_at(repo: &Repo, dir: &Path, rebuild: bool) -> Result<Index> {
        Index::open_in(repo, dir, rebuild, true)
    }

    /// Builds a throwaway index in `dir` from the files (for comparing), writing nothing else
    /// of the repository.
    pub fn build_scratch(repo: &Repo, dir: &Path) -> Result<Index> {
        Index::open_in(repo, dir, true, false)
    }

    /// The index of a repository this process cannot write: the one committed in `dir`, read
    /// as it is, with a warning saying whether the files moved on since; or, when there is
    /// none usable, one built in a temporary folder for this command.
    pub fn open_read_only(repo: &Repo, dir: &Path) -> Result<Index> {
        let (schema, fields) = schema();
        let committed = dir
            .join("meta.json")
            .is_file()
            .then(|| StoreDir::open(dir, true).ok())
            .flatten()
            .and_then(|d| tantivy::Index::open(d).ok())
            .and_then(|i| {
                let metas = i.load_metas().ok()?;
                let p = Payload::read(dir, &metas)?;
                (i.schema() == schema).then_some((i, p, metas.opstamp))
            });
        let Some((index, payload, opstamp)) = committed else {
            let scratch = tempfile::Builder::new()
                .prefix("cairn-index-")
                .tempdir()
                .map_err(|e| Error::io("a temporary folder", &e))?;
            let mut me = Index::open_in(repo, &scratch.path().join("index"), true, false)?;
            me._scratch = Some(scratch);
            me.refresh.read_only = true;
            me.refresh.warnings.insert(
                0,
                format!(
                    "{} cannot be written and holds no usable index: built one in a temporary folder for this command (not kept); recall counts are not recorded",
                    repo.derived_dir().display()
                ),
            );
            return Ok(me);
        };
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| index_err("cannot open a reader", e))?;
        let found = sources::list(repo)?;
        let plan = sources::plan(repo, &payload.files, &found)?;
        let model = vectors::model_id_for(&repo.config.embed);
        let changed = plan.whole.len() + plan.tail.len() + plan.removed.len();
        let warning = if changed > 0 {
            format!(
                "{} cannot be written: searched the index as last built there, which is behind the files ({changed} changed since); recall counts are not recorded",
                dir.display()
            )
        } else if payload.vectors.as_deref() != Some(model.as_str()) {
            format!(
                "{} cannot be written: searched the index as last built there, whose vectors are not all of {model}; recall counts are not recorded",
                dir.display()
            )
        } else {
            format!(
                "{} cannot be written: searched the index as last built there (it matches the files); recall counts are not recorded",
                dir.display()
            )
        };
        let refresh = Refresh {
            read_only: true,
            stale: changed > 0,
            warnings: vec![warning],
            ..Refresh::default()
        };
        Ok(Index {
            index,
            reader,
            fields,
            refresh,
            files: found.len(),
            vectorizer: std::sync::OnceLock::new(),
            embed_config: repo.config.embed.clone(),
            model,
            vectors_dir: vectors_dir(dir),
            store: std::sync::OnceLock::new(),
            committed: Some(opstamp),
            dir: dir.to_path_buf(),
            payload,
            notes: std::sync::Mutex::new(Vec::new()),
            early: std::sync::Mutex::new(None),
            _scratch: None,
        })
    }

    /// Whether this index was opened read-only (nothing of the repository may be written).
    pub fn read_only(&self) -> bool {
        self.refresh.read_only
    }

    /// Opens (or builds) the index in `dir`; `in_repo` when `dir` is the repository's own (its
    /// `.cairn/` gets its `.gitignore`).
    fn open_in(repo: &Repo, dir: &Path, rebuild: bool, in_repo: bool) -> Result<Index> {
        Index::open_checking(repo, dir, rebuild, in_repo, in_repo && !rebuild)
    }

    /// Opens the index of `repo` after looking at every source file, never at the glance
    /// alone (`cairn index`): what another program appended to an older log is folded in.
    pub fn open_thorough(repo: &Repo) -> Result<Index> {
        let dir = repo.path(DIR);
        if writable(&repo.derived_dir()) {
            Index::open_checking(repo, &dir, false, true, false)
        } else {
            Index::open_read_only(repo, &dir)
        }
    }

    /// [`Index::open_in`]; `glance` lets a read that finds the files as its glance describes
    /// them ([`sources::Glance`]) skip the `stat` of every log file.
    ///
    /// Another process may change the index while this one opens it: its garbage collection
    /// or a rebuild can remove a file named by the `meta.json` this one read (tantivy keeps
    /// the files of a commit a reader holds only within one process). Such a failure is not
    /// the user's: the open waits briefly and starts again from the last commit, a few times
    /// ([`transient`]), so that a read never fails because another process writes (issue 30:
    /// 63 of 6,514 recalls failed so with two writers and three readers).
    fn open_checking(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
        glance: bool,
    ) -> Result<Index> {
        let mut attempt = 0;
        loop {
            match Index::open_attempt(repo, dir, rebuild, in_repo, glance, attempt) {
                Err(e) if attempt < OPEN_RETRIES && transient(&e) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)));
                }
                other => return other,
            }
        }
    }

    /// One attempt of [`Index::open_checking`]: `attempt` counts the ones before it.
    fn open_attempt(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
        glance: bool,
        attempt: u32,
    ) -> Result<Index> {
        // The freshness check (a glance, or a `stat` of every source file: 1,400 at 100,000
        // records) runs on a second thread while tantivy opens the index: neither needs the
        // other's result until the plan is made.
        let opened = std::thread::scope(|s| {
            let listing = s.spawn(|| {
                crate::failpoint::pausepoint("index-listing");
                if glance
                    && let Some(g) = sources::Glance::read(dir)
                    && g.holds(repo)?
                {
                    return Ok(Err(g));
                }
                sources::list_all(repo).map(Ok)
            });
            let opened = Index::open_unplanned(repo, dir, rebuild, in_repo);
            let found = listing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (opened, found)
        });
        // The build lock (when building from nothing) is held until the first commit.
        let (mut me, building) = opened.0?;
        let listing = match opened.1? {
            // The usual read: the files are as the glance of the last commit saw them.
            Err(g)
                if me.payload.name.as_deref() == Some(g.checkpoints.as_str())
                    && me.payload.vectors.as_deref() == Some(me.model.as_str()) =>
            {
                me.files = g.files;
                return Ok(me);
            }
            Err(_) => sources::list_all(repo)?,
            Ok(listing) => listing,
        };
        // The files are as the last commit left them: its checkpoints (one a file) need not
        // be read.
        if me
            .payload
            .matches(sources::Stamp::of_found(&listing.found), &me.model)
        {
            me.files = listing.found.len();
            if glance {
                me.keep_glance(&listing);
            }
            return Ok(me);
        }
        if !me.payload.load(dir) {
            // Its checkpoints file is gone: other processes committed twice since this one
            // read `meta.json` (a commit keeps its own file and the one it replaced). The
            // last commit names one that is there: open that. Rebuilding here removed the
            // folder under every other reader (issue 30). Only a commit that keeps failing
            // so (its file unreadable) is built again: the index is derived.
            drop((me, building));
            let rebuild = attempt >= OPEN_RETRIES;
            return Index::open_attempt(repo, dir, rebuild, in_repo, glance, attempt + 1);
        }
        me.update_with(repo, &listing.found)?;
        if in_repo && !me.refresh.stale {
            me.keep_glance(&listing);
        }
        drop(building);
        Ok(me)
    }

    /// Keeps the glance of the files as `listing` found them, for the commit this index
    /// holds, when its folders' times can be trusted; else removes any glance, so that the
    /// next read looks at every file.
    fn keep_glance(&self, listing: &sources::Listing) {
        let glance = self
            .payload
            .name
            .as_deref()
            .filter(|_| self.payload.vectors.as_deref() == Some(self.model.as_str()))
            .and_then(|name| sources::Glance::of(name, listing, sources::now_ns()));
        match glance {
            Some(g) => g.write(&self.dir),
            None => sources::Glance::remove(&self.dir),
        }
    }

    /// [`Index::open_in`] up to the update; with the build lock when it builds from nothing,
    /// to be held until its first commit.
    fn open_unplanned(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
    ) -> Result<(Index, Option<std::fs::File>)> {
        let (schema, fields) = schema();
        let mut refresh = Refresh::default();
        let mut payload = Payload {
            schema: SCHEMA_VERSION,
            files: BTreeMap::new(),
            vectors: None,
            name: None,
            stamp: None,
            loaded: true,
        };
        let mut index = if rebuild {
            None
        } else {
            open_usable(dir, &schema, &mut refresh.warnings)
        };
        if index.is_some() {
            crate::failpoint::pausepoint("index-opened");
        }
        // Building from nothing removes the folder: one process at a time, or a second one
        // deletes the files the first is writing (many agents' first reads after `.cairn/` was
        // deleted failed so). Whoever waited opens what the first built.
        let _building = if index.is_none() && in_repo {
            let lock = repo.index_build_lock();
            if !rebuild {
                let mut warnings = Vec::new();
                index = open_usable(dir, &schema, &mut warnings);
                refresh.warnings = warnings;
            }
            lock
        } else {
            None
        };
        let mut committed = None;
        let index = match index {
            Some((i, p, opstamp)) => {
                payload = p;
                committed = Some(opstamp);
                i
            }
            None => {
                refresh.rebuilt = true;
                remove_index_dir(dir)?;
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
                if in_repo {
                    crate::repo::ignore_derived(repo)?;
                }
                // Small blocks in the document store: a read loads a few dozen scattered
                // documents, and each load decompresses its whole block (ADR 62).
                let settings = tantivy::IndexSettings {
                    docstore_blocksize: DOCSTORE_BLOCK,
                    ..tantivy::IndexSettings::default()
                };
                tantivy::Index::builder()
                    .schema(schema)
                    .settings(settings)
                    .create_in_dir(dir)
                    .map_err(|e| index_err("cannot create", e))?
            }
        };
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| index_err("cannot open a reader", e))?;
        let vectors_dir = vectors_dir(dir);
        let mut me = Index {
            index,
            reader,
            fields,
            refresh,
            files: 0,
            vectorizer: std::sync::OnceLock::new(),
            embed_config: repo.config.embed.clone(),
            model: vectors::model_id_for(&repo.config.embed),
            vectors_dir,
            store: std::sync::OnceLock::new(),
            notes: std::sync::Mutex::new(Vec::new()),
            early: std::sync::Mutex::new(None),
            payload,
            committed,
            dir: dir.to_path_buf(),
            _scratch: None,
        };
        if me.committed.is_none() {
            me.committed = me.index.load_metas().ok().map(|m| m.opstamp);
        }
        Ok((me, _building))
    }

    /// Whether this open index still matches the files and the last commit of the index on
    /// disk: no other process committed since, no source file changed (one `stat` each, as
    /// [`Index::open`] does), and every document has a vector of the configured model. A
    /// server asks this per request under a shared lock ([`Held`]).
    pub fn is_current(&self, repo: &Repo) -> Result<bool> {
        if self.refresh.read_only || vectors::model_id_for(&repo.config.embed) != self.model {
            return Ok(false);
        }
        // A `meta.json` another process is replacing (or a rebuild removed) is no error
        // here: the index is then not current, and the catch-up or a new open waits for it.
        let Ok(on_disk) = self.index.load_metas() else {
            return Ok(false);
        };
        if Some(on_disk.opstamp) != self.committed {
            return Ok(false);
        }
        let found = sources::list(repo)?;
        Ok(self
            .payload
            .matches(sources::Stamp::of_found(&found), &self.model))
    }

    /// Brings this open index up to date as [`Index::open`] would: the last commit on disk
    /// (another process may have updated the index) is read again, then what changed in the
    /// files is folded in. `refresh` then says what this catch-up did.
    pub fn catch_up(&mut self, repo: &Repo) -> Result<()> {
        if self.refresh.read_only || vectors::model_id_for(&repo.config.embed) != self.model {
            return Err(index_err(
                "it cannot be caught up in place",
                "opened read-only or for another embedding model",
            ));
        }
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        let metas = self
            .index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let payload = Payload::read(&self.dir, &metas)
            .ok_or_else(|| index_err("its last commit is of another schema", "reopen it"))?;
        self.payload = payload;
        self.committed = Some(metas.opstamp);
        self.refresh = Refresh::default();
        self.notes = std::sync::Mutex::new(Vec::new());
        // Another process may have appended vectors: map the store again when next asked.
        self.store = std::sync::OnceLock::new();
        self.update(repo)
    }

    /// Reads the last commit on disk again, and when it is not the one this index holds
    /// (another process committed since), takes its payload and reloads the reader; true
    /// then. Called under the writer lock, so that no commit can come between this read and
    /// this process's own commit.
    fn moved_on(&mut self) -> Result<bool> {
        let metas = self
            .index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let name = metas
            .payload
            .as_deref()
            .and_then(Payload::read_str)
            .and_then(|p| p.name);
        if Some(metas.opstamp) == self.committed && name == self.payload.name {
            return Ok(false);
        }
        let payload = Payload::read(&self.dir, &metas).ok_or_else(|| {
            index_err(
                "its last commit is of another schema or lost its checkpoints",
                "run `cairn index --rebuild`",
            )
        })?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        self.payload = payload;
        self.committed = Some(metas.opstamp);
        // Another process may have appended vectors: map the store again when next asked.
        self.store = std::sync::OnceLock::new();
        Ok(true)
    }

    /// Number of source files the index covers.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Folds what changed in the files into the index.
    fn update(&mut self, repo: &Repo) -> Result<()> {
        self.update_with(repo, &sources::list(repo)?)
    }

    /// [`Index::update`] with the source files as `found` them.
    fn update_with(&mut self, repo: &Repo, found: &[sources::Found]) -> Result<()> {
        if !self.payload.load(&self.dir) {
            return Err(index_err(
                "its checkpoints file is missing",
                "run `cairn index --rebuild`",
            ));
        }
        let mut plan = sources::plan(repo, &self.payload.files, found)?;
        self.files = found.len();
        let model = self.model.clone();
        if plan.is_empty() && self.payload.vectors.as_deref() == Some(model.as_str()) {
            return Ok(());
        }
        crate::failpoint::pausepoint("index-planned");
        // Cloned only now: a read that finds nothing changed (the usual one) copies nothing.
        let mut payload = self.payload.clone();
        // A big first build gets every core; the usual few appended lines one thread.
        let big = plan.whole.len() + plan.tail.len() > 64 || self.payload.files.is_empty();
        let threads = if big {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
        } else {
            1
        };
        let mut writer: IndexWriter<TantivyDocument> = match self
            .index
            .writer_with_num_threads(threads, threads * 48_000_000)
        {
            Ok(w) => {
                sweep_writer_temps(&self.vectors_dir.with_file_name("index"));
                w
            }
            Err(tantivy::TantivyError::LockFailure(..)) => {
                self.refresh.stale = true;
                self.refresh.warnings.push(
                    "another process is updating the index; this read sees its last committed state".into(),
                );
                return Ok(());
            }
            Err(e) => return Err(index_err("cannot open the writer", e)),
        };
        // The plan was made from the commit this index read before it took the writer lock;
        // another process may have committed since, folding in the same appended lines.
        // Planned again from the last commit, read under the lock, they are folded in once
        // (issue 30: two processes each folded in one tail, and left its documents twice).
        if self.moved_on()? {
            plan = sources::plan(repo, &self.payload.files, found)?;
            if plan.is_empty() && self.payload.vectors.as_deref() == Some(model.as_str()) {
                return Ok(());
            }
            // The checkpoints to commit are that commit's, moved on by this plan: the old
            // ones would put back the offsets of files the other process folded in, and the
            // next update would fold them in again.
            payload = self.payload.clone();
        }
        let searcher = self.reader.searcher();
        let index_empty = searcher.num_docs() == 0;
        let mut batch = sources::Batch::default();
        for rel in &plan.removed {
            writer.delete_term(Term::from_field_text(self.fields.file, rel));
            payload.files.remove(rel);
            self.refresh.removed += 1;
        }
        for (rel, checkpoint) in &plan.touched {
            payload.files.insert(rel.clone(), checkpoint.clone());
        }
        for rel in &plan.whole {
            writer.delete_term(Term::from_field_text(self.fields.file, rel));
            self.refresh.reindexed += 1;
        }
        let (whole, warnings) = sources::read_whole(repo, &plan.whole)?;
        self.refresh.warnings.extend(warnings);
        for (rel, checkpoint, docs) in whole {
            for doc in docs {
                batch.add(doc);
            }
            payload.files.insert(rel, checkpoint);
        }
        // Each file's new lines are read and parsed on `threads` threads (files are
        // independent), then folded in file order (an event finds its record by then).
        let tails: Vec<Result<sources::Tail>> = {
            let read = |(rel, from): &(String, u64)| {
                let previous = payload
                    .files
                    .get(rel)
                    .cloned()
                    .unwrap_or_else(sources::empty_checkpoint);
                sources::read_tail(repo, rel, &previous, *from)
            };
            let part = plan.tail.len().div_ceil(threads).max(1);
            if threads == 1 {
                plan.tail.iter().map(read).collect()
            } else {
                std::thread::scope(|s| {
                    let handles: Vec<_> = plan
                        .tail
                        .chunks(part)
                        .map(|files| s.spawn(move || files.iter().map(read).collect::<Vec<_>>()))
                        .collect();
                    handles
                        .into_iter()
                        .flat_map(|h| {
                            h.join()
                                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                        })
                        .collect()
                })
            }
        };
        for ((rel, _), tail) in plan.tail.iter().zip(tails) {
            let (checkpoint, lines, warnings) = tail?;
            self.refresh.warnings.extend(warnings);
            for line in lines {
                match line {
                    sources::TailLine::Doc(doc) => {
                        // An observation id seen before (two machines wrote the same one) is
                        // stored once.
                        if doc.kind == Kind::Observation
                            && !index_empty
                            && self.exists(&searcher, &doc.id)
                        {
                            continue;
                        }
                        batch.add(doc);
                    }
                    sources::TailLine::Event(event) => {
                        if !batch.apply(&event)
                            && let Some(mut doc) = self.get(&searcher, &event.id)?
                        {
                            sources::apply_event(&mut doc, &event);
                            writer.delete_term(Term::from_field_text(self.fields.id, &doc.id));
                            batch.add(doc);
                        }
                    }
                }
            }
            payload.files.insert(rel.clone(), checkpoint);
            self.refresh.appended += 1;
        }
        let docs = batch.into_docs();
        // Vectors first: a crash after this leaves rows no document needs, never the reverse.
        let complete = payload.vectors.as_deref() == Some(model.as_str());
        let mut texts: Vec<(u64, &str)> = docs
            .iter()
            .map(|d| (vectors::text_hash(&d.text), d.text.as_str()))
            .collect();
        let mut all_texts = Vec::new();
        if !complete {
            // Every document must have a vector of this model: look at all of them.
            all_texts = self.all_docs()?;
            texts.extend(
                all_texts
                    .iter()
                    .map(|d| (vectors::text_hash(&d.text), d.text.as_str())),
            );
        }
        // The documents go to the writer (its threads index them in memory) while the vectors
        // are made on others: the two fill each other's idle cores. Nothing is committed
        // before the vectors are appended.
        let (embedded, added) = std::thread::scope(|s| {
            let me = &*self;
            let embedding = s.spawn(|| me.embed_missing(&texts));
            let mut added = 0;
            let mut failed = None;
            for doc in &docs {
                if let Err(e) = writer.add_document(me.to_tantivy(doc)) {
                    failed = Some(index_err("cannot add", e));
                    break;
                }
                added += 1;
            }
            let embedded = embedding
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match failed {
                Some(e) => Err(e),
                None => Ok((embedded, added)),
            }
        })?;
        // Another store was appended to: map it again when next asked.
        self.store = std::sync::OnceLock::new();
        self.refresh.added += added;
        match embedded {
            Ok(n) => {
                self.refresh.embedded = n;
                payload.vectors = Some(model);
            }
            Err(e) => {
                self.refresh.warnings.push(format!(
                    "vectors not updated ({e}); recall uses words until they are"
                ));
                payload.vectors = None;
            }
        }
        drop(all_texts);
        drop(docs);
        payload.schema = SCHEMA_VERSION;
        let replaced = self.payload.name.clone();
        let json = payload.prepare(&self.dir)?;
        let mut prepared = writer
            .prepare_commit()
            .map_err(|e| index_err("cannot commit", e))?;
        prepared.set_payload(&json);
        let opstamp = prepared
            .commit()
            .map_err(|e| index_err("cannot commit", e))?;
        if let Some(name) = &payload.name {
            Payload::collect(&self.dir, name, replaced.as_deref());
        }
        self.payload = payload;
        self.committed = Some(opstamp);
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        Ok(())
    }

    /// Embeds the texts the vector store lacks; returns how many were embedded.
    fn embed_missing(&self, texts: &[(u64, &str)]) -> Result<usize> {
        let path = vectors::path_for(&self.vectors_dir, &self.model);
        let mut store: Option<vectors::Store> = None;
        let mut have: HashSet<u64> = HashSet::new();
        let dims = vectors::dims_of(&path);
        if self.model == crate::embed::MODEL_ID
            && texts.len() <= 1024
            && let Some(dims) = dims
        {
            // A few new texts for the built-in model (free to embed), appended without reading
            // the store: a text seen before gets a second row, which search returns once. A
            // provider's store is always read first, so that nothing is paid for twice.
            store = Some(vectors::Store::appender(&path, dims));
        } else if let Ok(s) = vectors::Store::open(&path, dims.unwrap_or(crate::embed::DIMS)) {
            // The built-in model's dims; a provider's store is opened once its dims are known.
            if !s.is_empty() {
                // Only the hashes are needed: append without keeping a copy of the rows (a
                // store that keeps its rows copies them all at every append).
                have = s.hashes();
                store = Some(vectors::Store::appender(&path, s.dims()));
            }
        }
        let mut todo: Vec<(u64, &str)> = Vec::new();
        let mut queued = rustc_hash::FxHashSet::default();
        for (h, t) in texts {
            if !have.contains(h) && queued.insert(*h) {
                todo.push((*h, t));
            }
        }
        let mut done = 0;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        for chunk in todo.chunks(256 * threads) {
            let strs: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
            // Embedding is CPU-bound for the built-in model: one part per core.
            let part = strs.len().div_ceil(threads).max(1);
            let vectorizer = self.vectorizer()?;
            let parts: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
                let handles: Vec<_> = strs
                    .chunks(part)
                    .map(|p| scope.spawn(move || vectorizer.documents(p)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("embedding thread does not panic"))
                    .collect()
            });
            let mut vecs = Vec::with_capacity(strs.len());
            for p in parts {
                vecs.extend(p?);
            }
            let Some(dims) = vecs.first().map(Vec::len) else {
                continue;
            };
            let s = match &mut store {
                Some(s) if s.dims() == dims => s,
                _ => store.insert(vectors::Store::appender(&path, dims)),
            };
            let items: Vec<(u64, Vec<f32>)> = chunk.iter().map(|(h, _)| *h).zip(vecs).collect();
            s.append(&items)?;
            done += items.len();
        }
        Ok(done)
    }

    fn vectorizer(&self) -> Result<&dyn vectors::Vectorizer> {
        if let Some(v) = self.vectorizer.get() {
            return Ok(v.as_ref());
        }
        let v = vectors::for_config(&self.embed_config)?;
        Ok(self.vectorizer.get_or_init(|| v).as_ref())
    }

    fn store(&self) -> Option<&vectors::Store> {
        self.store
            .get_or_init(|| {
                let path = vectors::path_for(&self.vectors_dir, &self.model);
                let bytes = std::fs::metadata(&path).ok()?;
                if bytes.len() < 16 {
                    return None;
                }
                let dims = vectors::dims_of(&path)?;
                vectors::Store::open(&path, dims).ok()
            })
            .as_ref()
    }

    /// The documents nearest the query by meaning, best first, as hits whose raw score is the
    /// cosine (no decay yet).
    pub fn search_vectors(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        if query.trim().is_empty() {
            return Ok(Vec::new());
        }
        // Before the store is mapped here: the early search brings its own mapping.
        if let Some(nearest) = self.early_nearest(query, vector_candidates(limit, filter)) {
            return self.resolve_nearest(nearest, filter, limit, min_similarity);
        }
        if self.store().is_none() {
            return Ok(Vec::new());
        }
        let q = self.query_vector(query)?;
        self.search_by_vector(&q, filter, limit, min_similarity)
    }

    /// The query's vector, as [`Index::search_vectors`] makes it (the configured model).
    pub fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        self.vectorizer()?.query(query)
    }

    /// The stored vectors (scale, int8 numbers) of the texts whose [`vectors::text_hash`] is
    /// in `hashes`, as the index holds them (each indexed document's text has one once the
    /// index is up to date, unless embedding failed).
    pub fn stored_vectors(
        &self,
        hashes: &HashSet<u64>,
    ) -> std::collections::HashMap<u64, (f32, Vec<i8>)> {
        self.store().map(|s| s.lookup(hashes)).unwrap_or_default()
    }

    /// Vectors for texts about to be stored, from the configured model.
    pub fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.vectorizer()?.documents(texts)
    }

    /// [`Index::search_vectors`] for a vector already made.
    pub fn search_by_vector(
        &self,
        q: &[f32],
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        let Some(store) = self.store() else {
            return Ok(Vec::new());
        };
        let nearest = store.search(q, vector_candidates(limit, filter));
        self.resolve_nearest(nearest, filter, limit, min_similarity)
    }

    /// The search of the built-in model's vectors for `query`'s `k` nearest rows, which
    /// needs neither the index nor its freshness check: a recall starts it on a thread before
    /// it opens the index and hands it over ([`Index::take_early`]), and its vector list uses
    /// it when the store file is still as the search found it. `None` for a provider's model
    /// (its query vector is a call, made only when needed) or no store yet.
    pub fn search_early(repo: &Repo, query: &str, k: usize) -> Option<Early> {
        if vectors::model_id_for(&repo.config.embed) != crate::embed::MODEL_ID
            || query.trim().is_empty()
        {
            return None;
        }
        let path = vectors::path_for(&vectors_dir(&repo.path(DIR)), crate::embed::MODEL_ID);
        crate::phase("early: started");
        let len = std::fs::metadata(&path).ok()?.len();
        let store = vectors::Store::open(&path, vectors::dims_of(&path)?).ok()?;
        crate::phase("early: store open");
        if store.is_empty() {
            return None;
        }
        let model = crate::embed::Builtin::shared();
        crate::phase("early: model loaded");
        let q = crate::embed::Embedder::embed(model, &[query]).pop()?;
        crate::phase("early: embedded");
        let nearest = store.search(&q, k);
        crate::phase("early: searched");
        Some(Early {
            query: query.to_string(),
            k,
            len,
            store,
            nearest,
        })
    }

    /// Hands this index a search of its vectors started before it was opened.
    pub fn take_early(&self, early: std::thread::JoinHandle<Option<Early>>) {
        *self.early.lock().unwrap_or_else(|e| e.into_inner()) = Some(early);
    }

    /// The early search's rows for `query` and `k`, if it searched for exactly those and the
    /// store file has not changed since (this read's update appended nothing to it).
    fn early_nearest(&self, query: &str, k: usize) -> Option<Vec<(u64, f32)>> {
        let handle = self
            .early
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        let early = handle.join().ok()??;
        let path = vectors::path_for(&self.vectors_dir, &self.model);
        let same = early.query == query
            && early.k == k
            && self.model == crate::embed::MODEL_ID
            && std::fs::metadata(&path).is_ok_and(|m| m.len() == early.len);
        if !same {
            return None;
        }
        // Its store is the one this index would map: keep it for the other reads of vectors.
        let _ = self.store.set(Some(early.store));
        crate::phase("early search taken");
        Some(early.nearest)
    }

    /// The documents of the nearest rows (hash, cosine; best first) that pass `filter`, down
    /// to `min_similarity`, at most `limit`.
    fn resolve_nearest(
        &self,
        nearest: Vec<(u64, f32)>,
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let mut hits = Vec::new();
        let nearest: Vec<(u64, f32)> = nearest
            .into_iter()
            .take_while(|(_, cos)| f64::from(*cos) >= min_similarity)
            .collect();
        // The nearest rows are looked up `limit` at a time: most searches need no more than
        // the first `limit` (the rest are there for records a filter or a deletion leaves out).
        'chunks: for chunk in nearest.chunks(limit.max(1)) {
            let hashes: Vec<u64> = chunk.iter().map(|(h, _)| *h).collect();
            crate::phase("vectors: nearest in hand");
            let addresses = self.docs_of_hashes(&searcher, &hashes)?;
            crate::phase("vectors: documents found");
            for ((_, cos), docs) in chunk.iter().zip(addresses) {
                for addr in docs {
                    let doc = self.load(&searcher, addr)?;
                    if passes(&doc, filter) {
                        hits.push(Hit {
                            doc,
                            raw: f64::from(*cos),
                            decay: 1.0,
                            score: f64::from(*cos),
                        });
                    }
                }
                if hits.len() >= limit {
                    break 'chunks;
                }
            }
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// The live documents whose text has each hash of `hashes` (at most 16 a hash), in the
    /// order of `hashes`: one look-up in each segment's postings of `chash` a hash, no query
    /// to plan and score per hash.
    fn docs_of_hashes(
        &self,
        searcher: &tantivy::Searcher,
        hashes: &[u64],
    ) -> Result<Vec<Vec<DocAddress>>> {
        use tantivy::{DocSet, TERMINATED};
        let mut out = vec![Vec::new(); hashes.len()];
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let postings_of = segment
                .inverted_index(self.fields.chash)
                .map_err(|e| index_err("search", e))?;
            let alive = segment.alive_bitset();
            for (hash, docs) in hashes.iter().zip(out.iter_mut()) {
                let term = Term::from_field_u64(self.fields.chash, *hash);
                let Some(mut postings) = postings_of
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(|e| index_err("search", e))?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED && docs.len() < 16 {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        docs.push(DocAddress::new(ord as u32, doc));
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    fn exists(&self, searcher: &tantivy::Searcher, id: &str) -> bool {
        let q = TermQuery::new(
            Term::from_field_text(self.fields.id, id),
            IndexRecordOption::Basic,
        );
        searcher.search(&q, &Count).map(|n| n > 0).unwrap_or(false)
    }

    /// The document with `id`, if the index holds one.
    pub fn doc(&self, id: &str) -> Result<Option<Doc>> {
        self.get(&self.reader.searcher(), id)
    }

    fn get(&self, searcher: &tantivy::Searcher, id: &str) -> Result<Option<Doc>> {
        let q = TermQuery::new(
            Term::from_field_text(self.fields.id, id),
            IndexRecordOption::Basic,
        );
        let top = searcher
            .search(&q, &TopDocs::with_limit(1).order_by_score())
            .map_err(|e| index_err("search", e))?;
        match top.first() {
            Some((_, addr)) => Ok(Some(self.load(searcher, *addr)?)),
            None => Ok(None),
        }
    }

    fn to_tantivy(&self, doc: &Doc) -> TantivyDocument {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        d.add_text(f.id, &doc.id);
        d.add_text(f.kind, doc.kind.as_str());
        d.add_text(f.text, &doc.text);
        d.add_text(f.title, &doc.title);
        let record = doc.record();
        d.add_text(f.record, record);
        let context = doc.text.len() - record.len();
        if context > 0 {
            d.add_text(f.context, &doc.text[record.len()..]);
            d.add_u64(f.context_bytes, context as u64);
        }
        d.add_i64(f.time, doc.time.timestamp_millis());
        d.add_u64(f.class, doc.class() as u64);
        d.add_u64(f.stale, u64::from(doc.is_stale()));
        d.add_u64(f.chash, vectors::text_hash(&doc.text));
        d.add_text(f.category, &doc.category);
        d.add_text(f.verdict, &doc.verdict);
        d.add_text(f.status, &doc.status);
        d.add_text(f.session, &doc.session);
        d.add_text(f.source, &doc.source);
        d.add_text(f.file, &doc.file);
        d
    }

    fn load(&self, searcher: &tantivy::Searcher, addr: DocAddress) -> Result<Doc> {
        let d: TantivyDocument = searcher
            .doc(addr)
            .map_err(|e| index_err("cannot read a document", e))?;
        let f = &self.fields;
        let text = |field: Field| {
            d.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let millis = d.get_first(f.time).and_then(|v| v.as_i64()).unwrap_or(0);
        let full = text(f.text);
        let context_bytes = d
            .get_first(f.context_bytes)
            .and_then(|v| v.as_u64())
            .unwrap_or(0) as usize;
        let context = full
            .len()
            .checked_sub(context_bytes)
            .and_then(|at| full.get(at..))
            .map(|c| c.strip_prefix('\n').unwrap_or(c).to_string())
            .unwrap_or_default();
        Ok(Doc {
            id: text(f.id),
            kind: Kind::parse(&text(f.kind)).unwrap_or(Kind::Observation),
            text: full,
            title: text(f.title),
            context,
            time: Utc
                .timestamp_millis_opt(millis)
                .single()
                .unwrap_or_default(),
            category: text(f.category),
            verdict: text(f.verdict),
            status: text(f.status),
            session: text(f.session),
            source: text(f.source),
            file: text(f.file),
        })
    }

    /// The query for `words` under `filter` (everything matching the filter when empty).
    fn query(&self, words: &str, filter: &Filter) -> Box<dyn Query> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if words.trim().is_empty() {
            clauses.push((Occur::Must, Box::new(AllQuery)));
        } else {
            let mut parser =
                QueryParser::for_index(&self.index, vec![f.record, f.context, f.title]);
            parser.set_field_boost(f.title, 2.0);
            parser.set_field_boost(f.context, CONTEXT_BOOST);
            let (q, _errors) = parser.parse_query_lenient(&sanitize(words));
            clauses.push((Occur::Must, q));
        }
        let term = |field: Field, value: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, value),
                IndexRecordOption::Basic,
            ))
        };
        clauses.push((Occur::MustNot, term(f.status, "deleted")));
        // A superseded observation's place is taken by the one that superseded it (`cairn
        // maintain`); ADRs keep their superseded status in view.
        clauses.push((
            Occur::MustNot,
            Box::new(BooleanQuery::new(vec![
                (Occur::Must, term(f.kind, Kind::Observation.as_str())),
                (Occur::Must, term(f.status, "superseded")),
            ])),
        ));
        if !filter.include_hold {
            clauses.push((Occur::MustNot, term(f.verdict, "hold")));
        }
        if filter.kinds.is_empty() {
            // The library is a collection of its own: only a filter naming it searches it.
            clauses.push((Occur::MustNot, term(f.kind, Kind::Library.as_str())));
        } else {
            let kinds: Vec<(Occur, Box<dyn Query>)> = filter
                .kinds
                .iter()
                .map(|k| (Occur::Should, term(f.kind, k.as_str())))
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(kinds))));
        }
        if let Some(c) = &filter.category {
            clauses.push((Occur::Must, term(f.category, c)));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// The best `limit` matches of `words`, by BM25 × decay when `decay` is given, else by
    /// BM25 alone.
    pub fn search(
        &self,
        words: &str,
        filter: &Filter,
        limit: usize,
        decay: Option<&Decay>,
    ) -> Result<Vec<Hit>> {
        if !words.trim().is_empty() && self.query_terms(words).is_empty() {
            // Only stop words or punctuation: no term to match (the parser would make a query
            // of nothing, which matched every record).
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let query = self.query(words, filter);
        crate::phase("search: query made");
        let limit = limit.max(1);
        let scored: Vec<(f64, DocAddress)> = match decay {
            None => searcher
                .search(&query, &TopDocs::with_limit(limit).order_by_score())
                .map_err(|e| index_err("search", e))?
                .into_iter()
                .map(|(s, a)| (f64::from(s), a))
                .collect(),
            Some(decay) => searcher
                .search(
                    &query,
                    &top::DecayedTop {
                        limit,
                        decay: Arc::new(decay.clone()),
                    },
                )
                .map_err(|e| index_err("search", e))?,
        };
        crate::phase("search: collected");
        let mut hits = Vec::with_capacity(scored.len());
        for (score, addr) in scored {
            let doc = self.load(&searcher, addr)?;
            let factor = decay.map_or(1.0, |d| {
                d.factor(doc.class(), doc.time.timestamp_millis(), doc.is_stale())
            });
            let raw = if factor > 0.0 { score / factor } else { 0.0 };
            hits.push(Hit {
                doc,
                raw,
                decay: factor,
                score,
            });
        }
        // Equal scores in the order of their ids, not of where the index happens to keep them
        // (an index built in steps and one rebuilt at once must rank alike).
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.doc.id.cmp(&b.doc.id))
        });
        Ok(hits)
    }

    /// How many documents match a field's value (`kind`, `verdict`, `status`).
    pub fn count(&self, field: &str, value: &str) -> Result<usize> {
        self.count_all(&[(field, value)])
    }

    /// Documents matching every `(field, value)` (kind, verdict or status).
    pub fn count_all(&self, terms: &[(&str, &str)]) -> Result<usize> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (field, value) in terms {
            let f = match *field {
                "kind" => self.fields.kind,
                "verdict" => self.fields.verdict,
                "status" => self.fields.status,
                _ => return Ok(0),
            };
            let q = TermQuery::new(Term::from_field_text(f, value), IndexRecordOption::Basic);
            clauses.push((Occur::Must, Box::new(q)));
        }
        self.reader
            .searcher()
            .search(&BooleanQuery::new(clauses), &Count)
            .map_err(|e| index_err("count", e))
    }

    /// Every document, sorted by id, for comparing two indexes.
    pub fn all_docs(&self) -> Result<Vec<Doc>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc_id in segment.doc_ids_alive() {
                out.push(self.load(&searcher, DocAddress::new(ord as u32, doc_id))?);
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.file.cmp(&b.file)));
        Ok(out)
    }

    /// The BM25 inverse document frequency of a word in the text field,
    /// `ln(1 + (N - n + 0.5) / (n + 0.5))`, of the term the index makes of it (stemmed); 0 for
    /// a word the index drops (a stop word). Soft matching weighs a query's words by it.
    pub fn idf(&self) -> impl FnMut(&str) -> f64 + use<'_> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(tokenizer::NAME)
            .unwrap_or_else(tokenizer::analyzer);
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as f64;
        // Over what records say themselves: every record has its words there once.
        let field = self.fields.record;
        move |word| {
            let mut stream = analyzer.token_stream(word);
            let Some(token) = stream.next() else {
                return 0.0;
            };
            let df = searcher
                .doc_freq(&Term::from_field_text(field, &token.text))
                .unwrap_or(0) as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        }
    }

    /// The terms the index makes of a text (its tokenizer: code-aware, lowercased, stemmed,
    /// stop words dropped): what a query and a record must share to match by words.
    pub fn terms(&self) -> impl FnMut(&str) -> HashSet<String> + use<'_> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(tokenizer::NAME)
            .unwrap_or_else(tokenizer::analyzer);
        move |text| {
            let mut out = HashSet::new();
            let mut stream = analyzer.token_stream(text);
            while let Some(token) = stream.next() {
                out.insert(token.text.clone());
            }
            out
        }
    }

    /// The terms of a query, read as [`Index::search`] reads it.
    pub fn query_terms(&self, query: &str) -> HashSet<String> {
        (self.terms())(&sanitize(query))
    }

    /// Whether any of `terms` (as [`Index::query_terms`] makes them) occurs in a record, its
    /// context or its title, in any document of the index, the library's included.
    pub fn knows_any(&self, terms: &HashSet<String>) -> bool {
        let searcher = self.reader.searcher();
        let fields = [self.fields.record, self.fields.context, self.fields.title];
        terms.iter().any(|t| {
            fields.iter().any(|&f| {
                searcher
                    .doc_freq(&Term::from_field_text(f, t))
                    .is_ok_and(|n| n > 0)
            })
        })
    }

    /// The cosine that two unrelated texts of this store reach by chance with probability
    /// `1 - quantile`: that quantile of the cosines of [`CHANCE_PAIRS`] pairs of stored
    /// texts ([`vectors::Store::chance_cosines`]). `None` with too few texts to say
    /// ([`CHANCE_MIN`]) or no vectors.
    pub fn chance_cosine(&self, quantile: f64) -> Option<f64> {
        let mut cosines = self.store()?.chance_cosines(CHANCE_PAIRS);
        if cosines.len() < CHANCE_MIN {
            return None;
        }
        cosines.sort_by(f32::total_cmp);
        let at = ((cosines.len() - 1) as f64 * quantile.clamp(0.0, 1.0)).round() as usize;
        Some(f64::from(cosines[at]))
    }

    /// Notes a warning for the command's output (see [`Index::warnings`]).
    pub fn note(&self, warning: String) {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(warning);
    }

    /// The refresh's warnings, then those noted by reads since.
    pub fn warnings(&self) -> Vec<String> {
        let mut all = self.refresh.warnings.clone();
        all.extend(self.noted());
        all
    }

    /// The warnings noted by reads since the last refresh.
    pub fn noted(&self) -> Vec<String> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The documents taken from `file` (a source file, relative to the root).
    pub fn docs_of_file(&self, file: &str) -> Result<Vec<Doc>> {
        let searcher = self.reader.searcher();
        let q = TermQuery::new(
            Term::from_field_text(self.fields.file, file),
            IndexRecordOption::Basic,
        );
        let n = searcher
            .search(&q, &Count)
            .map_err(|e| index_err("cannot search", e))?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let top = searcher
            .search(&q, &TopDocs::with_limit(n).order_by_score())
            .map_err(|e| index_err("cannot search", e))?;
        top.into_iter()
            .map(|(_, addr)| self.load(&searcher, addr))
            .collect()
    }

    /// Whether a live document has a text of this hash ([`vectors::text_hash`]).
    pub fn has_text_hash(&self, hash: u64) -> bool {
        let q = TermQuery::new(
            Term::from_field_u64(self.fields.chash, hash),
            IndexRecordOption::Basic,
        );
        self.reader
            .searcher()
            .search(&q, &Count)
            .is_ok_and(|n| n > 0)
    }

    /// Deletes the documents `ids` from the index of `repo` and moves the checkpoints of
    /// `files` (JSON Lines sources rewritten without exactly those records' lines, each with
    /// its length before) to the files as they now are, in one commit: the next update need
    /// not read them again (an observations file read whole folds every observations file).
    /// A file whose checkpoint did not cover all of its old bytes is left to the next update,
    /// which reads it whole. Returns false when there was nothing to do it on (no index, a
    /// writer busy, another schema): the next update then does it all.
    pub fn drop_documents(repo: &Repo, ids: &[String], files: &[(String, u64)]) -> Result<bool> {
        let dir = repo.path(DIR);
        if !dir.join("meta.json").is_file() || !writable(&dir) {
            return Ok(false);
        }
        let (schema, fields) = schema();
        let index = tantivy::Index::open_in_dir(&dir).map_err(|e| index_err("cannot open", e))?;
        if index.schema() != schema {
            return Ok(false);
        }
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let mut writer: IndexWriter<TantivyDocument> =
            match index.writer_with_num_threads(1, 48_000_000) {
                Ok(w) => {
                    sweep_writer_temps(&dir);
                    w
                }
                Err(tantivy::TantivyError::LockFailure(..)) => return Ok(false),
                Err(e) => return Err(index_err("cannot open the writer", e)),
            };
        // The checkpoints are read under the writer lock: no commit comes between them and
        // this one.
        let metas = index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let Some(mut payload) = Payload::read(&dir, &metas) else {
            return Ok(false);
        };
        for id in ids {
            writer.delete_term(Term::from_field_text(fields.id, id));
        }
        for (rel, old_len) in files {
            let covered = payload
                .files
                .get(rel)
                .is_some_and(|cp| cp.size == *old_len && cp.offset == *old_len);
            if covered && sources::is_jsonl_source(rel) {
                payload
                    .files
                    .insert(rel.clone(), sources::jsonl_checkpoint_now(repo, rel)?);
            }
        }
        let replaced = payload.name.clone();
        let json = payload.prepare(&dir)?;
        let mut prepared = writer
            .prepare_commit()
            .map_err(|e| index_err("cannot commit", e))?;
        prepared.set_payload(&json);
        prepared
            .commit()
            .map_err(|e| index_err("cannot commit", e))?;
        if let Some(name) = &payload.name {
            Payload::collect(&dir, name, replaced.as_deref());
        }
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        Ok(true)
    }

    /// Makes deleted documents physically gone: tantivy only marks a deleted document, and
    /// keeps its stored text and its terms in the segment until the segment is merged. Merges
    /// each segment holding deleted documents (alone: the others are not rewritten), then
    /// removes the files no longer used. Returns how many segments were rewritten.
    pub fn purge_deleted(&mut self) -> Result<usize> {
        if self.read_only() {
            return Ok(0);
        }
        let searcher = self.reader.searcher();
        let dirty: Vec<tantivy::index::SegmentId> = searcher
            .segment_readers()
            .iter()
            .filter(|r| r.num_deleted_docs() > 0)
            .map(|r| r.segment_id())
            .collect();
        drop(searcher);
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(1, 48_000_000)
            .map_err(|e| index_err("cannot open the writer", e))?;
        sweep_writer_temps(&self.vectors_dir.with_file_name("index"));
        for id in &dirty {
            writer
                .merge(std::slice::from_ref(id))
                .wait()
                .map_err(|e| index_err("cannot merge", e))?;
        }
        writer
            .garbage_collect_files()
            .wait()
            .map_err(|e| index_err("cannot remove old segment files", e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        Ok(dirty.len())
    }

    /// Number of live documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// Whether a document passes a filter (the vector list is filtered after its scan).
/// The vector stores' folder beside the index folder `dir` (`.cairn/vectors`).
/// Removes the `.tmp*` files of the index folder `dir`. tantivy writes `meta.json` and
/// `managed.json` through such a file and a rename, only while it holds the writer lock: with
/// the lock held by the caller, any one there was left by a writer killed mid-write (found by
/// the crash harness in forget).
fn sweep_writer_temps(dir: &Path) {
    // And cairn's own staged files of a dead process (the checkpoints, the glance, the vector
    // store's).
    let _ = crate::files::sweep_dead_temps(dir, false);
    let _ = crate::files::sweep_dead_temps(&vectors_dir(dir), false);
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        if entry.file_name().to_string_lossy().starts_with(".tmp")
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn vectors_dir(dir: &Path) -> std::path::PathBuf {
    dir.parent().unwrap_or(dir).join("vectors")
}

/// How many pairs of stored texts [`Index::chance_cosine`] measures.
pub const CHANCE_PAIRS: usize = 1000;

/// The fewest pairs that make a distribution of chance cosines worth reading.
pub const CHANCE_MIN: usize = 20;

/// How many rows the vector list reads from the store for `limit` hits: twice as many (a
/// text held by a deleted or filtered record finds nothing), eight times when a filter may
/// drop many.
pub fn vector_candidates(limit: usize, filter: &Filter) -> usize {
    if filter.kinds.is_empty() && filter.category.is_none() {
        limit * 2
    } else {
        limit * 8
    }
}

/// A search of the vector store made before the index was opened ([`Index::search_early`]).
pub struct Early {
    query: String,
    k: usize,
    /// The store file's length when it was searched.
    len: u64,
    store: vectors::Store,
    nearest: Vec<(u64, f32)>,
}

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

/// The index in `dir` when it is there, of this schema and committed at least once (a
/// payload), with the opstamp of that commit; else `None`, with a warning when it could not be
/// read.
fn open_usable(
    dir: &Path,
    schema: &tantivy::schema::Schema,
    warnings: &mut Vec<String>,
) -> Option<(tantivy::Index, Payload, u64)> {
    if !dir.join("meta.json").is_file() {
        return None;
    }
    let opened = StoreDir::open(dir, false).and_then(tantivy::Index::open);
    match opened {
        Ok(i) => {
            // The checkpoints are read only if the files' stamp differs ([`Index::open_in`]).
            let metas = i.load_metas().ok()?;
            let p = Payload::read_str(metas.payload.as_deref()?)?;
            (i.schema() == *schema).then_some((i, p, metas.opstamp))
        }
        Err(err) => {
            warnings.push(format!("index unreadable ({err}); rebuilt"));
            None
        }
    }
}

/// Query text with the query language's operators neutralized: recall takes words, not syntax.
fn sanitize(words: &str) -> String {
    words
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c.is_whitespace() {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .to_lowercase()
}

/// Hex of a SHA-256, for checkpoints.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_document_store_is_read_with_pread_and_a_long_read_through_the_map() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("seg.store"), &bytes).unwrap();
        std::fs::write(dir.path().join("seg.idx"), &bytes[..1000]).unwrap();
        let mmap = tantivy::directory::MmapDirectory::open(dir.path()).unwrap();
        let store = store_handle(&mmap, dir.path(), Path::new("seg.store")).unwrap();
        assert!(format!("{store:?}").starts_with("PreadFile"), "{store:?}");
        assert_eq!(store.len(), bytes.len());
        for range in [
            0..10,
            4096..8192,
            150_000..200_000,
            1000..(1000 + PREAD_MAX + 1),
        ] {
            assert_eq!(
                store.read_bytes(range.clone()).unwrap().as_slice(),
                &bytes[range]
            );
        }
        assert!(store.read_bytes(199_990..200_010).is_err(), "past the end");
        // Other files are mapped as tantivy maps them.
        let idx = store_handle(&mmap, dir.path(), Path::new("seg.idx")).unwrap();
        assert!(!format!("{idx:?}").starts_with("PreadFile"), "{idx:?}");
        assert_eq!(idx.read_bytes(0..1000).unwrap().as_slice(), &bytes[..1000]);
    }
    use super::*;

    #[test]
    fn transient_errors_are_files_another_process_removed() {
        for message in [
            "index: cannot open a reader: FileDoesNotExist(\"abc.term\")",
            "index: cannot open a reader: Failed to acquire Lockfile: IoError(Os { code: 2, kind: NotFound, message: \"No such file or directory\" }). None",
            ".cairn/index: Directory not empty (os error 39)",
            "slog/2026-12-06.jsonl: No such file or directory (os error 2)",
        ] {
            assert!(transient(&Error::new(ErrorKind::Io, message)), "{message}");
        }
        for (kind, message) in [
            (
                ErrorKind::Io,
                "index: cannot commit: Permission denied (os error 13)",
            ),
            (ErrorKind::BadInput, "FileDoesNotExist in a user's text"),
            (ErrorKind::Io, "index: cannot add: os error 28)"),
        ] {
            assert!(!transient(&Error::new(kind, message)), "{message}");
        }
    }

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
    fn checkpoints_round_trip_through_their_file_and_old_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cp = |size| Checkpoint {
            size,
            mtime_ns: 4,
            offset: size,
            last_start: 0,
            hash: "ab".into(),
        };
        let mut p = Payload {
            schema: SCHEMA_VERSION,
            files: BTreeMap::from([("slog/a.jsonl".to_string(), cp(3))]),
            vectors: Some("m".into()),
            name: None,
            stamp: None,
            loaded: true,
        };
        let names = |dir: &Path| {
            let mut n: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        let mut committed = Vec::new();
        for size in [3, 9, 12] {
            p.files.insert("slog/a.jsonl".into(), cp(size));
            let replaced = p.name.clone();
            let json = p.prepare(dir.path()).unwrap();
            // The commit's payload is small: the checkpoints are in the file it names.
            assert!(!json.contains("slog/a.jsonl"), "{json}");
            let mut back = Payload::read_str(&json).unwrap();
            // The stamp is read without the checkpoints, and is theirs.
            assert!(!back.loaded && back.files.is_empty());
            assert_eq!(back.stamp, Some(sources::Stamp::of_checkpoints(&p.files)));
            assert!(back.load(dir.path()));
            assert_eq!(back.files, p.files);
            assert_eq!(back.vectors.as_deref(), Some("m"));
            Payload::collect(dir.path(), p.name.as_deref().unwrap(), replaced.as_deref());
            committed.push(json);
        }
        // This commit's file and the one it replaced stay; an older commit's is gone, and a
        // payload naming it reads as none (the index is then built again).
        assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
        assert!(!Payload::read_str(&committed[0]).unwrap().load(dir.path()));
        assert!(Payload::read_str(&committed[1]).unwrap().load(dir.path()));
        // Another schema's payload reads as none.
        let other = committed[2].replace(&format!("\"schema\":{SCHEMA_VERSION}"), "\"schema\":4");
        assert!(Payload::read_str(&other).is_none());
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

    #[test]
    fn sanitize_keeps_words_only() {
        assert_eq!(
            sanitize("nfs: \"mount\" -root +x AND (y)"),
            "nfs   mount   root  x and  y "
        );
    }
}
