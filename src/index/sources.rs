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

use chrono::{DateTime, NaiveDate, Utc};

use super::{Checkpoint, Doc, Kind, hash};
use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::store::{self, Event, Line, Op};
use crate::{adr, memory, slog};

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
}

/// Every source file, with its size and mtime, and each log folder's time ([`Glance`]).
pub fn list_all(repo: &Repo) -> Result<Listing> {
    // One `stat` a file is most of a read's time at 100,000 records (1,400 files, about
    // 4 µs each on a virtual machine): the observations' folder, the biggest, is listed on
    // a thread of its own while this one lists the rest.
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
    let (mut out, mut folders) = rest?;
    let (observations, more) = observations?;
    out.extend(observations);
    folders.extend(more);
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    folders.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(Listing {
        found: out,
        folders,
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
fn list_rest(repo: &Repo) -> Result<(Vec<Found>, Vec<Folder>)> {
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
    Ok((out, folders))
}

/// The source files a person edits in place (ADRs, MEMORY.md, notes) and the library's chunk
/// files: a [`Glance`] looks at each of these.
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
    // Library chunks are sources while the manifest names their document (a removed entry's
    // chunks leave the index even if its chunk file stays behind). A manifest that cannot be
    // read leaves the library out of the index; `cairn library list` names the line.
    if let Ok(entries) = crate::library::load(repo) {
        for e in entries {
            let rel = crate::library::cache_rel(&e.id);
            if let Ok(meta) = std::fs::symlink_metadata(repo.path(&rel))
                && meta.is_file()
            {
                push(rel, &meta);
            }
        }
    }
    Ok(out)
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// What the source files look like to a freshness check: the count of files and two
/// independent sums of a hash of each one's (path, size, modification time). Equal stamps
/// mean what [`plan`] compares is equal file by file (the same paths, each with the same size
/// and time), so a read whose files have the stamp the index committed with has nothing to
/// fold in and need not read the checkpoints at all. The sums do not depend on the order the
/// files were listed in, and the hash is cairn's own, so a stamp means the same across builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub files: u64,
    pub a: u64,
    pub b: u64,
}

impl Stamp {
    /// Adds one file.
    pub fn add(&mut self, rel: &str, size: u64, mtime_ns: i128) {
        let h = fnv1a(rel.as_bytes());
        // The time in two halves: an i128 does not fit one word.
        let t = mtime_ns as u128;
        let (lo, hi) = (t as u64, (t >> 64) as u64);
        self.files += 1;
        self.a = self.a.wrapping_add(mix(h ^ mix(size ^ mix(lo ^ mix(hi)))));
        self.b =
            self.b
                .wrapping_add(mix(h.rotate_left(29)
                    ^ mix(lo.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ mix(size ^ hi))));
    }

    /// The stamp of the files as found.
    pub fn of_found(found: &[Found]) -> Stamp {
        let mut s = Stamp::default();
        for f in found {
            s.add(&f.rel, f.size, f.mtime_ns);
        }
        s
    }

    /// The stamp of the files as their checkpoints describe them.
    pub fn of_checkpoints(checkpoints: &BTreeMap<String, Checkpoint>) -> Stamp {
        let mut s = Stamp::default();
        for (rel, cp) in checkpoints {
            s.add(rel, cp.size, cp.mtime_ns);
        }
        s
    }

    /// As text, for the index's commit payload.
    pub fn to_hex(self) -> String {
        format!("{:016x}{:016x}{:016x}", self.files, self.a, self.b)
    }

    /// [`Stamp::to_hex`] read back.
    pub fn from_hex(s: &str) -> Option<Stamp> {
        if s.len() != 48 || !s.is_ascii() {
            return None;
        }
        let word = |i: usize| u64::from_str_radix(&s[i * 16..(i + 1) * 16], 16).ok();
        Some(Stamp {
            files: word(0)?,
            a: word(1)?,
            b: word(2)?,
        })
    }
}

/// How many of a log folder's files a [`Glance`] looks at one by one: its most recently
/// changed (today's logs, the session being ingested), where an append by another program
/// would most likely go; and the last by name (today's, for logs named by their day).
const WATCHED_PER_FOLDER: usize = 3;

/// A folder whose time is this close to the clock (or ahead of it) is not trusted: file
/// systems stamp a folder from a coarse clock, so a file made in the same tick as the
/// listing would leave its time as read.
const RACY_NS: i128 = 2_000_000_000;

/// What a read needs to see that nothing changed since the index's commit, without a `stat`
/// of every log file: the time of each folder of logs (making, removing or renaming a file
/// moves it, and cairn moves it after every append, [`crate::files::append_lines`]), the
/// stamp of each folder's newest logs, and the stamp of every file a person edits in place
/// (ADRs, MEMORY.md, notes), which are looked at one by one. An append to an older log by a
/// program other than cairn, which moves no folder's time, is seen at the next change in
/// its folder or by `cairn index` (ADR 62).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Glance {
    /// The name of the checkpoints of the index commit it describes.
    pub checkpoints: String,
    /// The source files then.
    pub files: usize,
    pub folders: Vec<Folder>,
    /// The log files looked at one by one.
    pub newest: Vec<String>,
    /// The [`Stamp`] of `newest` and of the files a person edits, as hex.
    pub watched: String,
}

/// The glance's file in the index folder (derived, like everything there).
const GLANCE_FILE: &str = "cairn-glance.json";

impl Glance {
    /// The glance of the files as `listing` found them, for the commit whose checkpoints are
    /// `checkpoints`; `None` when a folder's time is too recent to be trusted.
    pub fn of(checkpoints: &str, listing: &Listing, now_ns: i128) -> Option<Glance> {
        if listing
            .folders
            .iter()
            .any(|f| f.mtime_ns >= 0 && f.mtime_ns > now_ns - RACY_NS)
        {
            return None;
        }
        let mut newest = Vec::new();
        for folder in &listing.folders {
            let prefix = format!("{}/", folder.rel);
            let mut files: Vec<&Found> = listing
                .found
                .iter()
                .filter(|f| {
                    in_log_folder(f.kind)
                        && f.rel
                            .strip_prefix(&prefix)
                            .is_some_and(|name| !name.contains('/'))
                })
                .collect();
            files.sort_by(|a, b| b.mtime_ns.cmp(&a.mtime_ns).then(a.rel.cmp(&b.rel)));
            newest.extend(files.iter().take(WATCHED_PER_FOLDER).map(|f| f.rel.clone()));
            // Logs are named by their day: the last by name is where the next append goes,
            // even when files written in one burst leave it no newer than the others.
            if let Some(last) = files.iter().max_by(|a, b| a.rel.cmp(&b.rel)) {
                newest.push(last.rel.clone());
            }
        }
        newest.sort();
        newest.dedup();
        let mut watched = Stamp::default();
        for f in &listing.found {
            if !in_log_folder(f.kind) || newest.binary_search(&f.rel).is_ok() {
                watched.add(&f.rel, f.size, f.mtime_ns);
            }
        }
        Some(Glance {
            checkpoints: checkpoints.to_string(),
            files: listing.found.len(),
            folders: listing.folders.clone(),
            newest,
            watched: watched.to_hex(),
        })
    }

    /// Whether the files still look as they did: every log folder's time unchanged, and the
    /// newest logs and the files a person edits with the stamp they had.
    pub fn holds(&self, repo: &Repo) -> Result<bool> {
        for f in &self.folders {
            if folder_time(repo, &f.rel) != f.mtime_ns {
                return Ok(false);
            }
        }
        let mut watched = Stamp::default();
        for rel in &self.newest {
            match std::fs::symlink_metadata(repo.path(rel)) {
                Ok(meta) if meta.is_file() => watched.add(rel, meta.len(), mtime_ns(&meta)),
                _ => return Ok(false),
            }
        }
        for f in list_by_hand(repo)? {
            watched.add(&f.rel, f.size, f.mtime_ns);
        }
        Ok(watched.to_hex() == self.watched)
    }

    /// The glance kept in the index folder `dir`, if there is a readable one.
    pub fn read(dir: &Path) -> Option<Glance> {
        let bytes = std::fs::read(dir.join(GLANCE_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps this glance in the index folder `dir`. It is derived and checked against the
    /// commit it names, so it is renamed into place without a sync; a failure leaves reads
    /// to look at every file, as they did before it.
    pub fn write(&self, dir: &Path) {
        let bytes = serde_json::to_vec(self).expect("a glance serializes");
        if let Ok(mut tmp) = tempfile::Builder::new()
            .prefix(".cairn-glance")
            .tempfile_in(dir)
        {
            use std::io::Write;
            if tmp.write_all(&bytes).is_ok() {
                let _ = tmp.persist(dir.join(GLANCE_FILE));
            }
        }
    }

    /// Removes the glance kept in `dir` (a read then looks at every file).
    pub fn remove(dir: &Path) {
        let _ = std::fs::remove_file(dir.join(GLANCE_FILE));
    }
}

/// Now, in nanoseconds since the epoch (a folder's time is compared with it).
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64's finalizer: every input bit moves about half of the output bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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

/// The status of an observation a person rejected in review (ADR 105): kept in the index,
/// lowered by `[recall] stale_factor` as a stale one is, left out of the briefing.
pub const REJECTED: &str = "rejected";

/// Applies an observation event to its indexed document.
pub fn apply_event(doc: &mut Doc, event: &Event) {
    match event.op {
        Op::Merge => {
            if let Some(t) = event.timestamp.as_deref().and_then(parse_time) {
                doc.time = t;
            }
        }
        Op::Supersede => {
            if doc.status != "deleted" {
                doc.status = "superseded".into();
            }
        }
        Op::Stale => {
            if doc.status == "active" {
                doc.status = "stale".into();
            }
        }
        Op::Delete => doc.status = "deleted".into(),
        Op::Restore => doc.status = "active".into(),
        Op::Reject => {
            if doc.status == "active" {
                doc.status = REJECTED.into();
            }
        }
        Op::Reopen => {
            if doc.status == REJECTED {
                doc.status = "active".into();
            }
        }
        Op::Observed => {}
    }
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn date_time(date: &str, fallback: DateTime<Utc>) -> DateTime<Utc> {
    NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
        .unwrap_or(fallback)
}

/// The document of a discovery note (its id is the file name without `.md`).
pub fn note_doc(n: &crate::note::Note, rel: &str, fallback: DateTime<Utc>) -> Doc {
    let id = rel
        .rsplit('/')
        .next()
        .unwrap_or(rel)
        .trim_end_matches(".md")
        .to_string();
    Doc {
        id,
        kind: Kind::Note,
        text: n.indexed_text(),
        title: n.front.title.clone(),
        context: String::new(),
        time: parse_time(&n.front.captured).unwrap_or(fallback),
        category: String::new(),
        verdict: String::new(),
        status: String::new(),
        session: n.front.session.clone().unwrap_or_default(),
        source: n.front.url.clone().unwrap_or_else(|| "note".into()),
        file: rel.to_string(),
    }
}

/// The document of a library chunk: the title is the document's title and the heading path,
/// so that both rank (the title field weighs double). Its time is when the document was
/// added, or `fallback` (the chunk file's time) for a chunk file that does not say.
pub fn library_doc(c: &crate::library::ChunkRecord, rel: &str, fallback: DateTime<Utc>) -> Doc {
    let mut title = c.title.clone();
    for h in &c.heading {
        title.push_str(" › ");
        title.push_str(h);
    }
    Doc {
        id: c.id.clone(),
        kind: Kind::Library,
        text: c.text.clone(),
        title,
        context: String::new(),
        time: parse_time(&c.added).unwrap_or(fallback),
        category: String::new(),
        verdict: String::new(),
        status: String::new(),
        session: String::new(),
        source: c.source.clone(),
        file: rel.to_string(),
    }
}

/// The document of a slog entry.
pub fn slog_doc(e: &slog::Entry, file: &str) -> Doc {
    let mut text = format!("{} {}: {}", e.action, e.tool, e.detail);
    if let Some(r) = &e.reason {
        text.push_str(&format!(" (because {r})"));
    }
    if !e.tags.is_empty() {
        text.push_str(&format!(" [{}]", e.tags.join(", ")));
    }
    Doc {
        id: e.id.clone(),
        kind: Kind::Slog,
        text,
        title: String::new(),
        context: String::new(),
        time: parse_time(&e.ts).unwrap_or_default(),
        category: "operations".into(),
        verdict: String::new(),
        status: String::new(),
        session: e.session.clone().unwrap_or_default(),
        source: e.actor.clone().unwrap_or_else(|| "slog".into()),
        file: file.to_string(),
    }
}

/// The document of a folded observation. Its text is the observation and, on the next line,
/// its narrative (the context it was written in: the prompt it answered, the segment it
/// came from), which is shown, embedded and searched with it; the narrative is also its
/// `context`, which the index searches in a field of its own ([`crate::index::CONTEXT_BOOST`]), so
/// that a record that says a thing outranks the one whose context says it.
pub fn observation_doc(f: &store::Folded, file: &str) -> Doc {
    let o = &f.obs;
    let mut text = o.observation.clone();
    let mut context = String::new();
    if let Some(n) = &o.narrative {
        text.push('\n');
        text.push_str(n);
        context = n.clone();
    }
    let status = match (f.state, &f.superseded_by) {
        (store::State::Deleted, _) => "deleted",
        (_, Some(_)) => "superseded",
        (store::State::Active, None) if f.rejected.is_some() => REJECTED,
        (state, None) => state.as_str(),
    };
    Doc {
        id: o.id.clone(),
        kind: Kind::Observation,
        text,
        title: String::new(),
        context,
        time: parse_time(&o.timestamp).unwrap_or_default(),
        category: o.category_id.clone(),
        verdict: o.write_verdict.as_str().into(),
        status: status.into(),
        session: o.session_id.clone().unwrap_or_default(),
        source: o.source.clone(),
        file: file.to_string(),
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

/// The document of a turn card: its head line as title, its whole text to search. A card of a
/// turn without content (`trivial`) is held: recalled only when asked (`--include-hold`).
pub fn card_doc(c: &crate::cards::Card, file: &str) -> Doc {
    Doc {
        id: c.id.clone(),
        kind: Kind::Card,
        text: c.text(),
        title: c.head(),
        context: String::new(),
        time: parse_time(&c.ts).unwrap_or_default(),
        category: String::new(),
        verdict: if c.trivial {
            "hold".into()
        } else {
            String::new()
        },
        status: c.outcome.clone(),
        session: format!("{}/{}", c.agent, c.session),
        source: format!("{}/{}#{}", c.agent, c.session, c.turn),
        file: file.to_string(),
    }
}

/// The document of an episode.
pub fn episode_doc(e: &crate::cards::Episode, file: &str) -> Doc {
    let turns = match e.last_turn {
        Some(last) => format!("turns {}–{}", e.first_turn, last),
        None => "before the first turn".to_string(),
    };
    Doc {
        id: e.id.clone(),
        kind: Kind::Episode,
        text: e.text.clone(),
        title: format!("{} of {}/{} ({turns})", e.kind, e.agent, e.session),
        context: String::new(),
        time: parse_time(&e.ts).unwrap_or_default(),
        category: String::new(),
        verdict: String::new(),
        status: e.kind.clone(),
        session: format!("{}/{}", e.agent, e.session),
        source: format!("{}/{}", e.agent, e.session),
        file: file.to_string(),
    }
}

/// What follows the title in the text of an ADR that is only its template ([`adr_doc`]).
const TITLE_ONLY: &str = "\nstatus: ";

/// Whether an ADR's indexed text is only its title, status and tags: a draft that says nothing
/// yet, found by its title but never offered as a decision (`cairn brief` leaves it out).
pub fn is_title_only(title: &str, text: &str) -> bool {
    text.strip_prefix(title)
        .is_some_and(|rest| rest.starts_with(TITLE_ONLY))
}

/// The document of an ADR: its text without template sections (`adr::indexed_text`); of a
/// record that is only its template, its title and status, so that a record is always found
/// by its title, tags and status (issue 32).
pub fn adr_doc(a: &adr::Adr, fallback: DateTime<Utc>) -> Option<Doc> {
    let mut text = adr::indexed_text(a)
        .unwrap_or_else(|| format!("{}{TITLE_ONLY}{}", a.title, a.status.trim()));
    if !a.tags.is_empty() {
        text.push_str(&format!("\ntags: {}", a.tags.join(", ")));
    }
    Some(Doc {
        id: format!("adr-{}", a.number),
        kind: Kind::Adr,
        text,
        title: a.title.clone(),
        context: String::new(),
        time: date_time(&a.date, fallback),
        category: "system-architecture".into(),
        verdict: String::new(),
        status: a.status.trim().to_ascii_lowercase(),
        session: String::new(),
        source: a.path.clone(),
        file: a.path.clone(),
    })
}

/// The documents of MEMORY.md's entries.
pub fn memory_docs(text: &str, rel: &str, fallback: DateTime<Utc>) -> Vec<Doc> {
    let parsed = memory::parse(text);
    let mut docs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let sections = parsed
        .sections
        .iter()
        .map(|s| (s.title.as_str(), s.category, &s.entries));
    let loose = std::iter::once(("", None, &parsed.loose));
    for (title, category, entries) in loose.chain(sections) {
        for e in entries {
            let id = format!(
                "mem-{}",
                &hash(format!("{title}\0{}", e.text).as_bytes())[..12]
            );
            if !seen.insert(id.clone()) {
                continue;
            }
            docs.push(Doc {
                id,
                kind: Kind::Memory,
                text: e.text.clone(),
                title: title.to_string(),
                context: String::new(),
                time: e
                    .date
                    .as_deref()
                    .map_or(fallback, |d| date_time(d, fallback)),
                category: category.unwrap_or("").to_string(),
                verdict: String::new(),
                status: String::new(),
                session: String::new(),
                source: format!("{rel}:{}", e.line),
                file: rel.to_string(),
            });
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
