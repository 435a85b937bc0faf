//! The source files of the index, what changed in them, and the documents they hold.
//!
//! Sources: `slog/*.jsonl`, `vault/observations/*.jsonl` (append-only: folded in from their
//! checkpoint), `decisions/*.md` and `MEMORY.md` (read whole when they change). Reading for the
//! index is lenient where the commands are strict: a malformed line or record is skipped with a
//! warning, because recall must not fail on one bad line (`cairn doctor` and `adr lint` name
//! it).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use chrono::{DateTime, Utc};

use super::{Checkpoint, Doc, Kind, hash};
use crate::error::{Error, Result};
use crate::files::mtime_ns;
use crate::repo::Repo;
use crate::store::{self, Event, Line, Op};
use crate::{adr, memory, slog};

mod docs;
mod glance;

pub use docs::*;
pub use glance::{Glance, Stamp, now_ns};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Slog,
    Observations,
    Adr,
    Memory,
    /// `vault/sessions/AGENT/SESSION.jsonl`: turn cards and episodes.
    Sessions,
    /// `vault/notes/*.md`: discovery notes, read whole.
    Note,
    /// `.cairn/library/ID.jsonl`: a library document's chunks (derived from the document the
    /// manifest `vault/library.jsonl` names), read whole.
    Library,
}

impl SourceKind {
    fn appends(self) -> bool {
        matches!(
            self,
            SourceKind::Slog | SourceKind::Observations | SourceKind::Sessions
        )
    }
}

/// A source file as found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    pub rel: String,
    pub kind: SourceKind,
    pub size: u64,
    pub mtime_ns: i128,
}

fn kind_of(rel: &str) -> Option<SourceKind> {
    if rel == memory::FILE {
        Some(SourceKind::Memory)
    } else if rel.starts_with("slog/") && rel.ends_with(".jsonl") {
        Some(SourceKind::Slog)
    } else if rel.starts_with(store::DIR) && rel.ends_with(".jsonl") {
        Some(SourceKind::Observations)
    } else if rel.starts_with("decisions/") {
        Some(SourceKind::Adr)
    } else if rel.starts_with(crate::note::DIR) && rel.ends_with(".md") {
        Some(SourceKind::Note)
    } else if rel.starts_with(crate::library::CACHE) && rel.ends_with(".jsonl") {
        Some(SourceKind::Library)
    } else if rel.starts_with(crate::cards::DIR)
        && rel.ends_with(".jsonl")
        && rel.matches('/').count() == 3
    {
        Some(SourceKind::Sessions)
    } else {
        None
    }
}

/// Every source file, with its size and mtime.
pub fn list(repo: &Repo) -> Result<Vec<Found>> {
    Ok(list_all(repo)?.found)
}

/// A folder of append-only logs (`slog/`, the observations', each agent's sessions) and its
/// modification time as `stat` read it before the folder was listed (`-1`: no such folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folder {
    pub rel: String,
    pub mtime_ns: i128,
}

/// The source files, and the times of the folders of logs they were listed from.
#[derive(Debug, Default)]
pub struct Listing {
    pub found: Vec<Found>,
    pub folders: Vec<Folder>,
    /// The library manifest's size and time ([`manifest_stamp`]), read before the listing.
    pub manifest: Option<(u64, i128)>,
    /// How many documents the manifest names whose chunk file was not found.
    pub library_missing: usize,
}

/// Every source file, with its size and mtime, and each log folder's time ([`Glance`]).
pub fn list_all(repo: &Repo) -> Result<Listing> {
    // One `stat` a file is most of a read's time at 100,000 records (1,400 files, about
    // 4 µs each on a virtual machine): the observations' folder, the biggest, is listed on
    // a thread of its own while this one lists the rest.
    let manifest = manifest_stamp(repo);
    let (observations, rest) = std::thread::scope(|s| {
        let observations = s.spawn(|| {
            let mut folders = Vec::new();
            list_folder(repo, store::DIR, &mut folders).map(|found| (found, folders))
        });
        let rest = list_rest(repo);
        let observations = observations
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (observations, rest)
    });
    let (mut out, mut folders, library_missing) = rest?;
    let (observations, more) = observations?;
    out.extend(observations);
    folders.extend(more);
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    folders.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(Listing {
        found: out,
        folders,
        manifest,
        library_missing,
    })
}

/// A folder's modification time, `-1` when it is missing (or not a folder).
fn folder_time(repo: &Repo, rel: &str) -> i128 {
    match std::fs::symlink_metadata(repo.path(rel)) {
        Ok(meta) if meta.is_dir() => mtime_ns(&meta),
        _ => -1,
    }
}

/// Whether files of `kind` live in folders whose time a [`Glance`] trusts: logs that only
/// cairn appends to (a person edits an ADR, MEMORY.md or a note in place, which leaves its
/// folder's time alone, so those are always looked at one by one).
fn in_log_folder(kind: SourceKind) -> bool {
    kind.appends()
}

/// The source file `rel` as found, with its metadata.
fn found(rel: String, meta: &std::fs::Metadata) -> Option<Found> {
    let kind = kind_of(&rel)?;
    Some(Found {
        rel,
        kind,
        size: meta.len(),
        mtime_ns: mtime_ns(meta),
    })
}

/// The source files of one of the folders of records (slog, observations, ADRs); a folder of
/// logs has its time read first, into `folders`.
fn list_folder(repo: &Repo, dir: &str, folders: &mut Vec<Folder>) -> Result<Vec<Found>> {
    let mut out = Vec::new();
    if dir != adr::DIR {
        folders.push(Folder {
            rel: dir.to_string(),
            mtime_ns: folder_time(repo, dir),
        });
    }
    let path = repo.path(dir);
    let read = match crate::files::read_dir_real(&path) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(path.display(), &e)),
    };
    for entry in read {
        let entry = entry.map_err(|e| Error::io(path.display(), &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ok = if dir == adr::DIR {
            adr::is_record_file(&name)
        } else {
            name.ends_with(".jsonl")
        };
        if ok {
            let meta = entry
                .metadata()
                .map_err(|e| Error::io(entry.path().display(), &e))?;
            out.extend(found(format!("{dir}/{name}"), &meta));
        }
    }
    Ok(out)
}

/// The source files other than the observations', and the times of their log folders.
fn list_rest(repo: &Repo) -> Result<(Vec<Found>, Vec<Folder>, usize)> {
    let mut folders = Vec::new();
    let mut out = list_folder(repo, slog::DIR, &mut folders)?;
    // The sessions' folder's own time moves when an agent's folder is made or removed.
    folders.push(Folder {
        rel: crate::cards::DIR.to_string(),
        mtime_ns: folder_time(repo, crate::cards::DIR),
    });
    let sessions = repo.path(crate::cards::DIR);
    if let Ok(agents) = crate::files::read_dir_real(&sessions) {
        for agent in agents.flatten() {
            if !agent.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = agent.file_name().to_string_lossy().into_owned();
            let rel = format!("{}/{name}", crate::cards::DIR);
            folders.push(Folder {
                mtime_ns: folder_time(repo, &rel),
                rel: rel.clone(),
            });
            let read = crate::files::read_dir_real(&agent.path())
                .map_err(|e| Error::io(agent.path().display(), &e))?;
            for entry in read {
                let entry = entry.map_err(|e| Error::io(agent.path().display(), &e))?;
                let file = entry.file_name().to_string_lossy().into_owned();
                if file.ends_with(".jsonl") {
                    let meta = entry
                        .metadata()
                        .map_err(|e| Error::io(entry.path().display(), &e))?;
                    out.extend(found(format!("{rel}/{file}"), &meta));
                }
            }
        }
    }
    out.extend(list_by_hand(repo)?);
    let (library, missing) = list_library(repo, &mut folders);
    out.extend(library);
    Ok((out, folders, missing))
}

/// The source files a person edits in place (ADRs, MEMORY.md, notes): a [`Glance`] looks at
/// each of these.
fn list_by_hand(repo: &Repo) -> Result<Vec<Found>> {
    let mut out = list_folder(repo, adr::DIR, &mut Vec::new())?;
    let mut push = |rel: String, meta: &std::fs::Metadata| out.extend(found(rel, meta));
    // A MEMORY.md that is a link is not followed (files::confine).
    if let Ok(meta) = std::fs::symlink_metadata(repo.path(memory::FILE))
        && meta.is_file()
    {
        push(memory::FILE.to_string(), &meta);
    }
    if let Ok(read) = crate::files::read_dir_real(&repo.path(crate::note::DIR)) {
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md")
                && let Ok(meta) = entry.metadata()
                && meta.is_file()
            {
                push(format!("{}/{name}", crate::note::DIR), &meta);
            }
        }
    }
    Ok(out)
}

/// The library's chunk files, and the time of their folder (`.cairn/library`, which only
/// cairn writes, each file renamed into place): a [`Glance`] trusts that time and the
/// manifest's stamp ([`manifest_stamp`]) rather than a `stat` of every chunk file.
fn list_library(repo: &Repo, folders: &mut Vec<Folder>) -> (Vec<Found>, usize) {
    folders.push(Folder {
        rel: crate::library::CACHE.to_string(),
        mtime_ns: folder_time(repo, crate::library::CACHE),
    });
    let mut out = Vec::new();
    let mut missing = 0;
    // Library chunks are sources while the manifest names their document (a removed entry's
    // chunks leave the index even if its chunk file stays behind). A manifest that cannot be
    // read leaves the library out of the index; `cairn library list` names the line.
    if let Ok(entries) = crate::library::load(repo) {
        for e in entries {
            let rel = crate::library::cache_rel(&e.id);
            if let Ok(meta) = std::fs::symlink_metadata(repo.path(&rel))
                && meta.is_file()
            {
                out.extend(found(rel, &meta));
            } else {
                missing += 1;
            }
        }
    }
    (out, missing)
}

/// The library manifest's size and time (`None` when there is none), part of a [`Glance`]'s
/// stamp: which chunk files are sources is the manifest's to say.
fn manifest_stamp(repo: &Repo) -> Option<(u64, i128)> {
    let meta = std::fs::symlink_metadata(repo.path(crate::library::MANIFEST)).ok()?;
    Some((meta.len(), mtime_ns(&meta)))
}

/// What an update has to do.
#[derive(Debug, Default)]
pub struct Plan {
    /// Files to index whole (after deleting their documents).
    pub whole: Vec<String>,
    /// Files to fold in from an offset.
    pub tail: Vec<(String, u64)>,
    /// Files gone.
    pub removed: Vec<String>,
    /// Files whose checkpoint changes but whose documents do not (touched, same content).
    pub touched: Vec<(String, Checkpoint)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.whole.is_empty()
            && self.tail.is_empty()
            && self.removed.is_empty()
            && self.touched.is_empty()
    }
}

/// Compares the files with their checkpoints.
pub fn plan(
    repo: &Repo,
    checkpoints: &BTreeMap<String, Checkpoint>,
    found: &[Found],
) -> Result<Plan> {
    let mut plan = Plan::default();
    for f in found {
        let Some(cp) = checkpoints.get(&f.rel) else {
            // A new append-only file is read like a tail from its start: its lines are new
            // records and events, and events find their records in the index. Reading it
            // whole would re-fold every observations file.
            if f.kind.appends() {
                plan.tail.push((f.rel.clone(), 0));
            } else {
                plan.whole.push(f.rel.clone());
            }
            continue;
        };
        if cp.size == f.size && cp.mtime_ns == f.mtime_ns {
            continue;
        }
        if f.kind.appends() {
            if f.size > cp.size && tail_matches(&repo.path(&f.rel), cp)? {
                plan.tail.push((f.rel.clone(), cp.offset));
            } else {
                plan.whole.push(f.rel.clone());
            }
        } else {
            let bytes = std::fs::read(repo.path(&f.rel)).map_err(|e| Error::io(&f.rel, &e))?;
            if hash(&bytes) == cp.hash {
                let mut same = cp.clone();
                same.size = f.size;
                same.mtime_ns = f.mtime_ns;
                plan.touched.push((f.rel.clone(), same));
            } else {
                plan.whole.push(f.rel.clone());
            }
        }
    }
    let present: std::collections::HashSet<&str> = found.iter().map(|f| f.rel.as_str()).collect();
    plan.removed = checkpoints
        .keys()
        .filter(|k| !present.contains(k.as_str()))
        .cloned()
        .collect();
    // Events in one observations file change observations in others: when any of them must be
    // read whole, fold them all again.
    let obs_changed = plan
        .whole
        .iter()
        .chain(&plan.removed)
        .any(|r| kind_of(r) == Some(SourceKind::Observations));
    if obs_changed {
        plan.tail
            .retain(|(r, _)| kind_of(r) != Some(SourceKind::Observations));
        for f in found.iter().filter(|f| f.kind == SourceKind::Observations) {
            if !plan.whole.contains(&f.rel) {
                plan.whole.push(f.rel.clone());
            }
        }
    }
    Ok(plan)
}

/// Whether the line a checkpoint ends with is still where it was.
fn tail_matches(path: &Path, cp: &Checkpoint) -> Result<bool> {
    if cp.offset == 0 {
        return Ok(true);
    }
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path.display(), &e))?;
    let mut buf = vec![0u8; (cp.offset - cp.last_start) as usize];
    if file.read_exact_at(&mut buf, cp.last_start).is_err() {
        return Ok(false);
    }
    Ok(hash(&buf) == cp.hash)
}

/// The checkpoint of JSONL bytes read from `start`: offset after the last whole line.
fn jsonl_checkpoint(
    meta: &std::fs::Metadata,
    start: u64,
    bytes: &[u8],
    previous: Option<&Checkpoint>,
) -> Checkpoint {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (last_start, last_hash) = if complete == 0 {
        match previous {
            Some(p) => (p.last_start, p.hash.clone()),
            None => (start, String::new()),
        }
    } else {
        let body = &bytes[..complete - 1];
        let ls = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        (start + ls as u64, hash(&bytes[ls..complete]))
    };
    Checkpoint {
        size: meta.len(),
        mtime_ns: mtime_ns(meta),
        offset: start + complete as u64,
        last_start,
        hash: last_hash,
    }
}

/// The checkpoint of a JSON Lines source as it is now, read whole.
pub fn jsonl_checkpoint_now(repo: &Repo, rel: &str) -> Result<Checkpoint> {
    let path = repo.path(rel);
    let meta = std::fs::metadata(&path).map_err(|e| Error::io(path.display(), &e))?;
    let bytes = std::fs::read(&path).map_err(|e| Error::io(path.display(), &e))?;
    Ok(jsonl_checkpoint(&meta, 0, &bytes, None))
}

/// Whether `rel` is a JSON Lines source (slog, observations, sessions).
pub fn is_jsonl_source(rel: &str) -> bool {
    kind_of(rel).is_some_and(SourceKind::appends)
}

/// A line folded in from a file's tail.
#[derive(Debug)]
pub enum TailLine {
    Doc(Doc),
    Event(Event),
}

/// Documents waiting to be added, by id, so that events can still change them.
#[derive(Debug, Default)]
pub struct Batch {
    docs: Vec<Doc>,
    at: HashMap<String, usize>,
}

impl Batch {
    /// Adds a document; a second observation with an id already in the batch is dropped.
    pub fn add(&mut self, doc: Doc) {
        if doc.kind == Kind::Observation {
            if self.at.contains_key(&doc.id) {
                return;
            }
            self.at.insert(doc.id.clone(), self.docs.len());
        }
        self.docs.push(doc);
    }

    /// Applies an event to a document in the batch; false if it is not here.
    pub fn apply(&mut self, event: &Event) -> bool {
        match self.at.get(&event.id) {
            Some(&i) => {
                apply_event(&mut self.docs[i], event);
                true
            }
            None => false,
        }
    }

    pub fn into_docs(self) -> Vec<Doc> {
        self.docs
    }
}

fn file_time(repo: &Repo, rel: &str) -> DateTime<Utc> {
    std::fs::metadata(repo.path(rel))
        .ok()
        .and_then(|m| m.modified().ok())
        .map(DateTime::<Utc>::from)
        .unwrap_or_default()
}

/// Reads files whole: their new checkpoints and documents. Observation files are folded
/// together (events in one apply to records in another).
/// A file read whole: its path, new checkpoint and documents.
pub type WholeFile = (String, Checkpoint, Vec<Doc>);

pub fn read_whole(repo: &Repo, rels: &[String]) -> Result<(Vec<WholeFile>, Vec<String>)> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut obs_files = Vec::new();
    for rel in rels {
        let path = repo.path(rel);
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(path.display(), &e))?;
        let bytes = std::fs::read(&path).map_err(|e| Error::io(path.display(), &e))?;
        let kind = kind_of(rel).expect("planned files are sources");
        let text = String::from_utf8_lossy(&bytes);
        match kind {
            SourceKind::Slog => {
                let cp = jsonl_checkpoint(&meta, 0, &bytes, None);
                let docs = slog_lines(rel, &text[..cp.offset as usize], 1, &mut warnings);
                out.push((rel.clone(), cp, docs));
            }
            SourceKind::Observations => obs_files.push((
                rel.clone(),
                jsonl_checkpoint(&meta, 0, &bytes, None),
                text.into_owned(),
            )),
            SourceKind::Adr => {
                let cp = md_checkpoint(&meta, &bytes);
                let docs = match adr::parse(&path, rel, &text) {
                    Ok(a) => adr_doc(&a, file_time(repo, rel)).into_iter().collect(),
                    Err(e) => {
                        warnings.push(format!("not indexed: {e}"));
                        Vec::new()
                    }
                };
                out.push((rel.clone(), cp, docs));
            }
            SourceKind::Memory => {
                let cp = md_checkpoint(&meta, &bytes);
                out.push((
                    rel.clone(),
                    cp,
                    memory_docs(&text, rel, file_time(repo, rel)),
                ));
            }
            SourceKind::Sessions => {
                let cp = jsonl_checkpoint(&meta, 0, &bytes, None);
                let docs = session_lines(rel, &text[..cp.offset as usize], 1, &mut warnings);
                out.push((rel.clone(), cp, docs));
            }
            SourceKind::Note => {
                let cp = md_checkpoint(&meta, &bytes);
                let docs = match crate::note::Note::parse(&text) {
                    Ok(n) => vec![note_doc(&n, rel, file_time(repo, rel))],
                    Err(e) => {
                        warnings.push(format!("not indexed: {rel}:{}: {e}", e.line));
                        Vec::new()
                    }
                };
                out.push((rel.clone(), cp, docs));
            }
            SourceKind::Library => {
                let cp = md_checkpoint(&meta, &bytes);
                let fallback = file_time(repo, rel);
                let docs = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<crate::library::ChunkRecord>(l).ok())
                    .map(|c| library_doc(&c, rel, fallback))
                    .collect();
                out.push((rel.clone(), cp, docs));
            }
        }
    }
    if !obs_files.is_empty() {
        let mut folded: Vec<(store::Folded, usize)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut pending = Vec::new();
        for (n, (rel, cp, text)) in obs_files.iter().enumerate() {
            for (i, line) in text[..cp.offset as usize].lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match store::parse_line(Path::new(rel), i + 1, line) {
                    Ok(Line::Observation(o)) => {
                        if !at.contains_key(&o.id) {
                            at.insert(o.id.clone(), folded.len());
                            folded.push((
                                store::Folded {
                                    obs: o,
                                    state: store::State::Active,
                                    superseded_by: None,
                                    rejected: None,
                                },
                                n,
                            ));
                        }
                    }
                    Ok(Line::Event(e)) => match at.get(&e.id) {
                        Some(&k) => store::apply(&mut folded[k].0, &e),
                        None => pending.push(e),
                    },
                    Err(e) => warnings.push(format!("not indexed: {e}")),
                }
            }
        }
        for e in pending {
            if let Some(&k) = at.get(&e.id) {
                store::apply(&mut folded[k].0, &e);
            }
        }
        let mut per_file: Vec<Vec<Doc>> = vec![Vec::new(); obs_files.len()];
        for (f, n) in &folded {
            per_file[*n].push(observation_doc(f, &obs_files[*n].0));
        }
        for ((rel, cp, _), docs) in obs_files.into_iter().zip(per_file) {
            out.push((rel, cp, docs));
        }
    }
    Ok((out, warnings))
}

fn md_checkpoint(meta: &std::fs::Metadata, bytes: &[u8]) -> Checkpoint {
    Checkpoint {
        size: meta.len(),
        mtime_ns: mtime_ns(meta),
        offset: bytes.len() as u64,
        last_start: 0,
        hash: hash(bytes),
    }
}

fn slog_lines(rel: &str, text: &str, first_line: usize, warnings: &mut Vec<String>) -> Vec<Doc> {
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match crate::jsonl::parse_line::<slog::Entry>(Path::new(rel), first_line + i, line) {
            Ok(e) => docs.push(slog_doc(&e, rel)),
            Err(e) => warnings.push(format!("not indexed: {e}")),
        }
    }
    docs
}

fn session_lines(rel: &str, text: &str, first_line: usize, warnings: &mut Vec<String>) -> Vec<Doc> {
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match crate::jsonl::parse_line::<crate::cards::Record>(Path::new(rel), first_line + i, line)
        {
            Ok(crate::cards::Record::Card(c)) => docs.push(card_doc(&c, rel)),
            Ok(crate::cards::Record::Episode(e)) => docs.push(episode_doc(&e, rel)),
            Err(e) => warnings.push(format!("not indexed: {e}")),
        }
    }
    docs
}

/// Reads the lines appended to `rel` since `from`.
/// What [`read_tail`] read of a file: its new checkpoint, its new lines, and warnings.
pub type Tail = (Checkpoint, Vec<TailLine>, Vec<String>);

pub fn read_tail(repo: &Repo, rel: &str, previous: &Checkpoint, from: u64) -> Result<Tail> {
    let path = repo.path(rel);
    let meta = std::fs::metadata(&path).map_err(|e| Error::io(path.display(), &e))?;
    let bytes = crate::files::read_from(&path, from)?;
    let cp = jsonl_checkpoint(&meta, from, &bytes, Some(previous));
    let text = String::from_utf8_lossy(&bytes[..(cp.offset - from) as usize]).into_owned();
    let mut warnings = Vec::new();
    let mut lines = Vec::new();
    match kind_of(rel) {
        Some(SourceKind::Slog) => {
            // Warnings name the line in the file, not in the tail (a day file is small).
            let first_line = if from == 0 {
                1
            } else {
                let head = std::fs::read(&path).map_err(|e| Error::io(path.display(), &e))?;
                let end = (from as usize).min(head.len());
                head[..end].iter().filter(|&&b| b == b'\n').count() + 1
            };
            lines.extend(
                slog_lines(rel, &text, first_line, &mut warnings)
                    .into_iter()
                    .map(TailLine::Doc),
            );
        }
        Some(SourceKind::Observations) => {
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match store::parse_line(Path::new(rel), i + 1, line) {
                    Ok(Line::Observation(o)) => {
                        let f = store::Folded {
                            obs: o,
                            state: store::State::Active,
                            superseded_by: None,
                            rejected: None,
                        };
                        lines.push(TailLine::Doc(observation_doc(&f, rel)));
                    }
                    // Which turns were observed changes no document.
                    Ok(Line::Event(e)) if e.op == Op::Observed => {}
                    Ok(Line::Event(e)) => lines.push(TailLine::Event(e)),
                    Err(e) => warnings.push(format!("not indexed: {e}")),
                }
            }
        }
        Some(SourceKind::Sessions) => {
            lines.extend(
                session_lines(rel, &text, 0, &mut warnings)
                    .into_iter()
                    .map(TailLine::Doc),
            );
        }
        _ => {}
    }
    Ok((cp, lines, warnings))
}

/// The checkpoint of a file not read yet.
pub fn empty_checkpoint() -> Checkpoint {
    Checkpoint {
        size: 0,
        mtime_ns: 0,
        offset: 0,
        last_start: 0,
        hash: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_only_adr_text_is_told_from_a_filled_one() {
        assert!(is_title_only(
            "Use tantivy",
            "Use tantivy\nstatus: proposed"
        ));
        assert!(is_title_only(
            "Use tantivy",
            "Use tantivy\nstatus: proposed\ntags: index"
        ));
        assert!(!is_title_only(
            "Use tantivy",
            "Use tantivy\n# 1. Use tantivy\n\n## Decision\n\nstatus: kept"
        ));
        assert!(!is_title_only("Other", "Use tantivy\nstatus: proposed"));
    }

    /// Sets the times of a file or folder (a glance trusts only folders older than
    /// [`RACY_NS`], so the tests put them in the past).
    fn set_time(path: &Path, ns: i128) {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns as u64);
        std::fs::File::open(path).unwrap().set_modified(t).unwrap();
    }

    fn glance_repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("cairn.toml"), "").unwrap();
        std::fs::create_dir_all(root.join("slog")).unwrap();
        std::fs::create_dir_all(root.join("decisions")).unwrap();
        for day in 1..=6 {
            let line = format!("{{\"ts\":\"2026-11-0{day}T10:00:00Z\"}}\n");
            std::fs::write(root.join(format!("slog/2026-11-0{day}.jsonl")), line).unwrap();
        }
        std::fs::write(root.join("decisions/0001-use-git.md"), "# 1. Use git\n").unwrap();
        std::fs::write(root.join("MEMORY.md"), "# Memory\n").unwrap();
        // Day files last changed on their days, folders an hour after the last of them.
        let base: i128 = 1_793_000_000_000_000_000;
        let hour: i128 = 3_600_000_000_000;
        for day in 1..=6 {
            let p = root.join(format!("slog/2026-11-0{day}.jsonl"));
            set_time(&p, base + day * 24 * hour);
        }
        for d in ["slog", "decisions", "."] {
            set_time(&root.join(d), base + 7 * 24 * hour);
        }
        let repo = Repo::open(root.to_path_buf()).unwrap();
        (dir, repo)
    }

    #[test]
    fn a_glance_sees_what_moves_a_folder_or_a_watched_file_and_trusts_the_rest() {
        let (dir, repo) = glance_repo();
        let root = dir.path();
        let listing = list_all(&repo).unwrap();
        let now = now_ns();
        let g = Glance::of("c1", &listing, now).expect("old folders are trusted");
        assert_eq!(g.files, 8);
        // The three newest logs are watched; the others are trusted to their folder.
        assert_eq!(
            g.newest,
            [
                "slog/2026-11-04.jsonl",
                "slog/2026-11-05.jsonl",
                "slog/2026-11-06.jsonl"
            ]
        );
        assert!(g.holds(&repo).unwrap());
        // It reads back as written.
        let idx = root.join(".cairn/index");
        std::fs::create_dir_all(&idx).unwrap();
        g.write(&idx);
        assert_eq!(Glance::read(&idx).as_ref(), Some(&g));
        Glance::remove(&idx);
        assert_eq!(Glance::read(&idx), None);

        let slog = root.join("slog");
        let folder_time = mtime_ns(&std::fs::metadata(&slog).unwrap());
        let append = |rel: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(root.join(rel))
                .unwrap();
            f.write_all(b"{\"ts\":\"2026-11-06T11:00:00Z\"}\n").unwrap();
        };
        // Another program appends to the newest log: its folder's time stays, the glance
        // sees the file.
        append("slog/2026-11-06.jsonl");
        assert_eq!(mtime_ns(&std::fs::metadata(&slog).unwrap()), folder_time);
        assert!(!g.holds(&repo).unwrap());
        let g = Glance::of("c2", &list_all(&repo).unwrap(), now).unwrap();
        assert!(g.holds(&repo).unwrap());
        // Another program appends to an old log: the trade the glance makes (ADR 62), seen
        // at the next change in the folder or by a full listing.
        append("slog/2026-11-01.jsonl");
        assert!(
            g.holds(&repo).unwrap(),
            "an old log is trusted to its folder"
        );
        assert_ne!(
            Stamp::of_found(&list_all(&repo).unwrap().found),
            Stamp::of_found(&listing.found)
        );
        // cairn's own append to an old log moves the folder's time.
        crate::files::append_line(
            &root.join("slog/2026-11-02.jsonl"),
            b"{\"ts\":\"2026-11-02T11:00:00Z\"}\n",
            &root.join(".cairn/recovered"),
        )
        .unwrap();
        assert!(!g.holds(&repo).unwrap());
        set_time(&slog, folder_time);
        assert!(g.holds(&repo).unwrap());
        // A file made in the folder.
        std::fs::write(slog.join("2026-10-01.jsonl"), "").unwrap();
        assert!(!g.holds(&repo).unwrap());
        std::fs::remove_file(slog.join("2026-10-01.jsonl")).unwrap();
        set_time(&slog, folder_time);
        assert!(g.holds(&repo).unwrap());
        // An ADR or MEMORY.md saved in place (their folders' times stay): always looked at.
        let adr = root.join("decisions/0001-use-git.md");
        std::fs::write(&adr, "# 1. Use git, and gix\n").unwrap();
        assert!(!g.holds(&repo).unwrap());
        let g = Glance::of("c3", &list_all(&repo).unwrap(), now).unwrap();
        std::fs::write(root.join("MEMORY.md"), "# Memory!\n").unwrap();
        assert!(!g.holds(&repo).unwrap());
        // A folder changed within the last two seconds is not trusted: no glance.
        assert_eq!(
            Glance::of("c4", &list_all(&repo).unwrap(), folder_time + 1),
            None
        );
    }

    #[test]
    fn a_glance_watches_the_library_by_its_folder_and_manifest_not_file_by_file() {
        let (dir, repo) = glance_repo();
        let root = dir.path();
        let base: i128 = 1_793_000_000_000_000_000;
        let entry = |id: &str, size: u64| {
            format!(
                "{{\"id\":\"{id}\",\"path\":\"docs/{id}.md\",\"format\":\"markdown\",\"sha256\":\"00\",\"size\":{size},\"title\":\"{id}\",\"chunks\":1,\"added\":\"2026-11-01T10:00:00Z\"}}\n"
            )
        };
        std::fs::create_dir_all(root.join("vault")).unwrap();
        std::fs::write(root.join(crate::library::MANIFEST), entry("aaa", 10)).unwrap();
        let cache = root.join(crate::library::CACHE);
        std::fs::create_dir_all(&cache).unwrap();
        let chunk = cache.join("aaa.jsonl");
        std::fs::write(&chunk, "{}\n").unwrap();
        for p in [&chunk, &cache] {
            set_time(p, base);
        }
        set_time(&root.join(crate::library::MANIFEST), base);
        let listing = list_all(&repo).unwrap();
        assert!(listing.found.iter().any(|f| f.kind == SourceKind::Library));
        let g = Glance::of("c1", &listing, now_ns()).expect("old folders are trusted");
        assert!(g.holds(&repo).unwrap());
        // cairn rewrites a chunk file by renaming a new one into place: the folder's time moves.
        crate::files::write_atomic(&chunk, b"{\"id\":\"lib-aaa-0\"}\n").unwrap();
        assert!(!g.holds(&repo).unwrap(), "a chunk file renamed into place");
        set_time(&cache, base);
        assert!(g.holds(&repo).unwrap(), "only the folder's time told");
        // The manifest names another document (or one fewer): seen by its stamp.
        std::fs::write(
            root.join(crate::library::MANIFEST),
            entry("aaa", 10) + &entry("bbb", 20),
        )
        .unwrap();
        assert!(!g.holds(&repo).unwrap(), "the manifest changed");
        let g = Glance::of("c2", &list_all(&repo).unwrap(), now_ns()).unwrap();
        assert!(g.holds(&repo).unwrap());
        // A chunk file removed (a forgotten document): its folder's time moves.
        std::fs::remove_file(&chunk).unwrap();
        assert!(!g.holds(&repo).unwrap(), "a chunk file removed");
    }

    #[test]
    fn a_glance_watches_the_last_log_by_name_when_a_burst_left_them_all_one_time() {
        let (dir, repo) = glance_repo();
        let root = dir.path();
        // Written in one burst (an import, a restore): every day file has one time, and the
        // three "newest" by time are the first by name.
        let base: i128 = 1_793_000_000_000_000_000;
        for day in 1..=6 {
            set_time(&root.join(format!("slog/2026-11-0{day}.jsonl")), base);
        }
        let g = Glance::of("c1", &list_all(&repo).unwrap(), now_ns()).unwrap();
        assert!(
            g.newest.iter().any(|r| r == "slog/2026-11-06.jsonl"),
            "{:?}",
            g.newest
        );
        assert!(g.holds(&repo).unwrap());
        // Another program appends to today's log: seen.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("slog/2026-11-06.jsonl"))
            .unwrap()
            .write_all(b"{\"ts\":\"2026-11-06T11:00:00Z\"}\n")
            .unwrap();
        assert!(!g.holds(&repo).unwrap());
    }

    #[test]
    fn a_stamp_changes_with_any_file_and_not_with_the_listing_order() {
        let f = |rel: &str, size: u64, mtime_ns: i128| Found {
            rel: rel.into(),
            kind: SourceKind::Slog,
            size,
            mtime_ns,
        };
        let files = vec![
            f("slog/2026-11-01.jsonl", 100, 1_700_000_000_000_000_001),
            f("slog/2026-11-02.jsonl", 200, 1_700_000_000_000_000_002),
            f("MEMORY.md", 300, 1_700_000_000_000_000_003),
        ];
        let stamp = Stamp::of_found(&files);
        let mut reversed = files.clone();
        reversed.reverse();
        assert_eq!(Stamp::of_found(&reversed), stamp);
        // The checkpoints of the same files have the same stamp.
        let checkpoints: BTreeMap<String, Checkpoint> = files
            .iter()
            .map(|x| {
                let cp = Checkpoint {
                    size: x.size,
                    mtime_ns: x.mtime_ns,
                    offset: x.size,
                    last_start: 0,
                    hash: "h".into(),
                };
                (x.rel.clone(), cp)
            })
            .collect();
        assert_eq!(Stamp::of_checkpoints(&checkpoints), stamp);
        // A byte appended, a save in place (same size, new time), a file added, removed or
        // renamed, and two files swapping their sizes: each changes it.
        let mut changed = Vec::new();
        let mut v = files.clone();
        v[0].size += 1;
        changed.push(v);
        let mut v = files.clone();
        v[2].mtime_ns += 1;
        changed.push(v);
        let mut v = files.clone();
        v.push(f("slog/2026-11-03.jsonl", 1, 1));
        changed.push(v);
        changed.push(files[1..].to_vec());
        let mut v = files.clone();
        v[1].rel = "slog/2026-11-04.jsonl".into();
        changed.push(v);
        let mut v = files.clone();
        (v[0].size, v[1].size) = (v[1].size, v[0].size);
        changed.push(v);
        for (i, v) in changed.iter().enumerate() {
            assert_ne!(Stamp::of_found(v), stamp, "change {i}");
        }
        assert_eq!(Stamp::from_hex(&stamp.to_hex()), Some(stamp));
        assert_eq!(Stamp::from_hex("zz"), None);
        assert_eq!(Stamp::from_hex(""), None);
    }
}
