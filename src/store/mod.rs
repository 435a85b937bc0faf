//! The observation store: `vault/observations/YYYY-MM-DD.jsonl`.
//!
//! Each line is either an observation (DESIGN section 2) or an update event about one,
//! `{"op":"merge"|"supersede"|"stale"|"delete"|"restore"|"reject","id",…,"ts"}`; events are folded
//! over the observations when read ([`fold`]). A file is named for the UTC day it was written,
//! not for the time its records speak of. Ids come from content: `ob-` and a hash of the
//! normalized text and its source, so writing the same observation twice stores it once.

pub mod tombstones;
pub mod verdict;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::files;
use crate::jsonl;
use crate::repo::Repo;
use verdict::Verdict;

/// The folder, relative to the repository root.
pub const DIR: &str = "vault/observations";

/// One observation, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub id: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub observation: String,
    #[serde(default = "default_type")]
    pub observation_type: String,
    #[serde(default)]
    pub source: String,
    pub timestamp: String,
    #[serde(default = "default_priority")]
    pub priority: String,
    pub write_verdict: Verdict,
    #[serde(default)]
    pub write_confidence: f64,
    pub category_id: String,
    #[serde(default)]
    pub category_confidence: f64,
    #[serde(default = "default_taxonomy")]
    pub taxonomy_version: u32,
    #[serde(default = "one")]
    pub merged_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrative: Option<String>,
}

fn default_type() -> String {
    "fact".to_string()
}
fn default_priority() -> String {
    "medium".to_string()
}
/// The version of the category taxonomy stored with every observation
/// ([`crate::observe::category`] assigns the categories).
pub const TAXONOMY_VERSION: u32 = 1;

fn default_taxonomy() -> u32 {
    TAXONOMY_VERSION
}
fn one() -> u32 {
    1
}

/// An update to an observation, appended beside the records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub op: Op,
    pub id: String,
    pub ts: String,
    /// For `merge`: the observation's new time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// For `supersede`: the id of the observation that replaces this one; for `observed`: the
    /// observer that read the turn; for `reject`: the proposal a person rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For `merge`: the id the merged-in observation would have had, so that writing it again
    /// merges nothing twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// For `observed`: the hash of the turn card's line as it was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// For `supersede` (written by `cairn maintain`): the superseded observation's own merged
    /// count, which the observation `by` takes while this one stays superseded ([`load_all`]
    /// adds it, and what this one had taken in turn; a `restore` gives it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

impl Event {
    /// An event of `op` about `id` at `ts`, with no other field.
    pub fn new(op: Op, id: &str, ts: &str) -> Event {
        Event {
            op,
            id: id.to_string(),
            ts: ts.to_string(),
            timestamp: None,
            by: None,
            from: None,
            hash: None,
            count: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Merge,
    Supersede,
    Stale,
    Delete,
    Restore,
    /// A proposal that stood on it (its id in `by`) was rejected by a person in review: the
    /// same commit holds the proposal's decision, so a `git revert` of it takes both away.
    Reject,
    /// The rejection by the proposal in `by` is undone (a `git revert` of it that git's union
    /// merge left half done, repaired by `cairn doctor`: ADR 106).
    Reopen,
    /// A turn card (its id in `id`) was read by an observer; changes no observation.
    Observed,
}

/// Where an observation stands after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Active,
    Stale,
    Deleted,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Stale => "stale",
            State::Deleted => "deleted",
        }
    }
}

/// An observation with its events folded in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Folded {
    #[serde(flatten)]
    pub obs: Observation,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The proposal a person rejected in review that stood on it (a `reject` event, ADR 105):
    /// it leaves the briefing, ranks lower in recall and is never proposed again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// One line of an observations file.
#[derive(Debug, Clone)]
pub enum Line {
    Observation(Observation),
    Event(Event),
}

/// Parses one line: an event if it has `op`, else an observation.
pub fn parse_line(
    path: &Path,
    line_no: usize,
    line: &str,
) -> std::result::Result<Line, jsonl::Malformed> {
    Ok(
        match jsonl::parse_tagged(path, line_no, line, "op", "observation or event")? {
            jsonl::Tagged::Event(e) => Line::Event(e),
            jsonl::Tagged::Record(r) => Line::Observation(r),
        },
    )
}

/// The normalized form hashed into an id: lower case, single spaces, no trailing punctuation.
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        return normalize_ascii(text);
    }
    // One string, not a string a word: an import hashes every line it reads.
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if word.is_ascii() {
            let start = out.len();
            out.push_str(word);
            out[start..].make_ascii_lowercase();
        } else {
            // str's own lower case (a final sigma is ς), word by word as ever.
            out.push_str(&word.to_lowercase());
        }
    }
    let kept = out.trim_end_matches(['.', '!', '?', ';', ',']).len();
    out.truncate(kept);
    out
}

/// [`normalize`] of an ASCII text, byte by byte: the whitespace `split_whitespace` splits on
/// is, in ASCII, tab to carriage return and space.
fn normalize_ascii(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut space = false;
    for &b in text.as_bytes() {
        if matches!(b, b'\t'..=b'\r' | b' ') {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(b' ');
            space = false;
        }
        out.push(b.to_ascii_lowercase());
    }
    while let Some(b'.' | b'!' | b'?' | b';' | b',') = out.last() {
        out.pop();
    }
    String::from_utf8(out).expect("ASCII in, ASCII out")
}

/// The id of an observation: a hash of its normalized text and its source.
pub fn observation_id(text: &str, source: &str) -> String {
    let mut h = Sha256::new();
    h.update(normalize(text).as_bytes());
    h.update([0]);
    h.update(source.as_bytes());
    let digest = h.finalize();
    let mut id = String::with_capacity(19);
    id.push_str("ob-");
    for b in digest.iter().take(8) {
        use std::fmt::Write as _;
        let _ = write!(id, "{b:02x}");
    }
    id
}

/// The day file written at `now`, relative to the root.
pub fn day_file(now: DateTime<Utc>) -> String {
    format!("{DIR}/{}.jsonl", now.format("%Y-%m-%d"))
}

/// How large an import lets a day file grow before it goes on in the day's next part
/// (`YYYY-MM-DD.2.jsonl`, …): a commit holds a file whole, so this bounds what committing an
/// import of any size holds in memory (ADR 53). Other writers append a few lines to the day
/// file itself.
pub const PART_BYTES: u64 = 64 * 1024 * 1024;

/// [`PART_BYTES`], or for tests only the number of bytes in `CAIRN_IMPORT_PART_BYTES` (so a
/// test of the parts needs no file of 64 MiB).
pub fn part_bytes() -> u64 {
    std::env::var("CAIRN_IMPORT_PART_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PART_BYTES)
}

/// Part `n` of the day file of `now`, relative to the root: part 1 is the day file itself.
pub fn part_file(now: DateTime<Utc>, n: u32) -> String {
    if n <= 1 {
        day_file(now)
    } else {
        format!("{DIR}/{}.{n}.jsonl", now.format("%Y-%m-%d"))
    }
}

/// The file written at `now`, relative to the root: the day's last part (the day file itself
/// unless an import went on in parts, ADR 53), so the store's files stay in the order written.
pub fn current_file(repo: &Repo, now: DateTime<Utc>) -> String {
    part_file(now, last_part(repo, now))
}

/// The number of the day's last part: parts are made in order, so the first missing one ends
/// them.
fn last_part(repo: &Repo, now: DateTime<Utc>) -> u32 {
    let mut n = 1;
    while repo.path(&part_file(now, n + 1)).exists() {
        n += 1;
    }
    n
}

/// The first part of the day file of `now`, from part `from` on, smaller than [`part_bytes`]:
/// its path relative to the root, its number and its size.
pub fn part_with_room(repo: &Repo, now: DateTime<Utc>, from: u32) -> Result<(String, u32, u64)> {
    let mut n = from.max(last_part(repo, now));
    loop {
        let rel = part_file(now, n);
        let path = repo.path(&rel);
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(Error::io(path.display(), &e)),
        };
        if size < part_bytes() {
            return Ok((rel, n, size));
        }
        n += 1;
    }
}

/// The UTC day an observations file holds (its name up to the first dot), and its part.
pub fn file_day(path: &Path) -> Option<(chrono::NaiveDate, u32)> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let (day, part) = match name.split_once('.') {
        Some((day, part)) => (day, part.parse().ok()?),
        None => (name, 1),
    };
    Some((
        chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?,
        part,
    ))
}

/// Every observations file, oldest first (a day's parts in their order).
pub fn day_files(repo: &Repo) -> Result<Vec<PathBuf>> {
    let dir = repo.path(DIR);
    let read = match crate::files::read_dir_real(&dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io(dir.display(), &err)),
    };
    let mut out = Vec::new();
    for entry in read {
        let path = entry.map_err(|e| Error::io(dir.display(), &e))?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out.sort_by_cached_key(|p| (file_day(p), p.clone()));
    Ok(out)
}

/// Parses a whole observations file (a torn tail is reported, not fatal).
/// The lines of a file with their numbers, and its torn tail if any.
pub type FileLines = (Vec<(usize, Line)>, Option<jsonl::TornTail>);

pub fn read_file(path: &Path) -> Result<FileLines> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), &e))?;
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    let mut lines = Vec::new();
    for (i, line) in text[..complete].lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        lines.push((i + 1, parse_line(path, i + 1, line).map_err(malformed)?));
    }
    let torn = (complete < text.len()).then(|| jsonl::TornTail {
        path: path.to_path_buf(),
        line: text[..complete].matches('\n').count() + 1,
        bytes: text.len() - complete,
    });
    Ok((lines, torn))
}

fn malformed(m: jsonl::Malformed) -> Error {
    Error::bad_input(m.to_string())
        .with_fix("fix or remove that line by hand; `cairn doctor` lists every such line")
}

/// Applies one event to a folded observation.
pub fn apply(folded: &mut Folded, event: &Event) {
    match event.op {
        Op::Merge => {
            // Saturating: a hand-edited count may already be the largest (found by fuzzing).
            folded.obs.merged_count = folded.obs.merged_count.saturating_add(1);
            if let Some(t) = &event.timestamp {
                folded.obs.timestamp = t.clone();
            }
        }
        Op::Supersede => folded.superseded_by = event.by.clone(),
        Op::Stale => {
            if folded.state == State::Active {
                folded.state = State::Stale;
            }
        }
        Op::Delete => folded.state = State::Deleted,
        Op::Restore => {
            folded.state = State::Active;
            folded.superseded_by = None;
            folded.rejected = None;
        }
        Op::Reject => folded.rejected = event.by.clone(),
        Op::Reopen => {
            if folded.rejected == event.by {
                folded.rejected = None;
            }
        }
        Op::Observed => {}
    }
}

/// Every observation with its events folded in, in the order written, and any torn tails.
pub fn load_all(repo: &Repo) -> Result<(Vec<Folded>, Vec<jsonl::TornTail>)> {
    let loaded = load(repo)?;
    Ok((loaded.folded, loaded.torn))
}

/// The store folded, with what `cairn maintain` needs beyond [`Folded`].
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every observation with its events folded in, in the order written; `merged_count`
    /// includes the counts taken from the observations it superseded.
    pub folded: Vec<Folded>,
    pub torn: Vec<jsonl::TornTail>,
    /// By id: how much of `merged_count` was taken from superseded observations (the rest is
    /// the observation's own: its record and its `merge` events).
    pub taken: HashMap<String, u32>,
    /// By id: the time of the `restore` that is an observation's last event (a person's
    /// decision that nothing changed since).
    pub restored: HashMap<String, String>,
    /// By position in `folded`: when each observation entered the store and when it was
    /// marked stale ([`Times`]); empty when the fold was made without them.
    pub times: Vec<Times>,
}

/// What `cairn maintain` ages an observation by, beside its fold (ADR 76): not the time its
/// record speaks of (a backfill of year-old transcripts stores year-old times today), but when
/// it entered the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Times {
    /// The UTC day of the file its record was first read from: the day it was written, since
    /// every writer appends to the file of the day it writes ([`current_file`]). `None` when
    /// the file's name holds no day.
    pub day: Option<chrono::NaiveDate>,
    /// The time of its last `merge` event: when it was stored again.
    pub stored_again: Option<String>,
    /// The time of the `stale` event that made it stale, while it is stale.
    pub stale: Option<String>,
}

/// The store folded ([`Loaded`]).
pub fn load(repo: &Repo) -> Result<Loaded> {
    let mut folder = Folder::default();
    let mut torn_tails = Vec::new();
    for path in day_files(repo)? {
        let (lines, torn) = read_file(&path)?;
        folder.day(file_day(&path).map(|(day, _)| day));
        torn_tails.extend(torn);
        for (_, line) in lines {
            match line {
                Line::Observation(obs) => folder.observation(obs),
                Line::Event(e) => folder.event(e),
            }
        }
    }
    let mut loaded = folder.finish();
    loaded.torn = torn_tails;
    Ok(loaded)
}

/// Folds observations and events, in the order they were written, into [`Loaded`].
#[derive(Debug, Default)]
pub struct Folder {
    out: Vec<Folded>,
    at: HashMap<String, usize>,
    /// Events that arrived (by a merge of two machines' files) before their observation.
    pending: Vec<Event>,
    /// Superseded id → (the id that took its count, the count).
    transfers: HashMap<String, (String, u32)>,
    restored: HashMap<String, String>,
    times: Vec<Times>,
    /// The day of the file whose lines come next.
    day: Option<chrono::NaiveDate>,
}

impl Folder {
    /// The day of the file whose lines come next ([`file_day`]), for [`Times::day`].
    pub fn day(&mut self, day: Option<chrono::NaiveDate>) {
        self.day = day;
    }

    pub fn observation(&mut self, obs: Observation) {
        if self.at.contains_key(&obs.id) {
            return;
        }
        self.at.insert(obs.id.clone(), self.out.len());
        self.times.push(Times {
            day: self.day,
            ..Times::default()
        });
        self.out.push(Folded {
            obs,
            state: State::Active,
            superseded_by: None,
            rejected: None,
        });
    }

    pub fn event(&mut self, e: Event) {
        match self.at.get(&e.id) {
            Some(&i) => self.apply_at(i, &e),
            None => self.pending.push(e),
        }
    }

    fn apply_at(&mut self, i: usize, e: &Event) {
        let was = self.out[i].state;
        apply(&mut self.out[i], e);
        let times = &mut self.times[i];
        match e.op {
            Op::Merge => times.stored_again = Some(e.ts.clone()),
            Op::Stale if was == State::Active => times.stale = Some(e.ts.clone()),
            Op::Restore => times.stale = None,
            _ => {}
        }
        match e.op {
            Op::Observed | Op::Reject | Op::Reopen => {}
            Op::Restore => {
                self.transfers.remove(&e.id);
                self.restored.insert(e.id.clone(), e.ts.clone());
            }
            Op::Supersede => {
                self.restored.remove(&e.id);
                match (&e.by, e.count) {
                    (Some(by), Some(n)) => {
                        self.transfers.insert(e.id.clone(), (by.clone(), n));
                    }
                    _ => {
                        self.transfers.remove(&e.id);
                    }
                }
            }
            Op::Merge | Op::Stale | Op::Delete => {
                self.restored.remove(&e.id);
            }
        }
    }

    /// The fold: pending events applied, then each superseded observation's count added to
    /// the one that took it (with what it had taken in turn, so a chain W → S → T gives T all
    /// three, and restoring W takes exactly W's part back).
    pub fn finish(mut self) -> Loaded {
        for e in std::mem::take(&mut self.pending) {
            if let Some(&i) = self.at.get(&e.id) {
                self.apply_at(i, &e);
            }
        }
        // Live transfers: the weaker is still superseded by the one named.
        let mut into: HashMap<usize, Vec<(usize, u32)>> = HashMap::new();
        for (weaker, (by, n)) in &self.transfers {
            if let (Some(&w), Some(&b)) = (self.at.get(weaker), self.at.get(by))
                && self.out[w].superseded_by.as_deref() == Some(by.as_str())
                && w != b
            {
                into.entry(b).or_default().push((w, *n));
            }
        }
        let mut taken: HashMap<usize, u32> = HashMap::new();
        let mut visiting = std::collections::HashSet::new();
        let ids: Vec<usize> = into.keys().copied().collect();
        for b in ids {
            taken_by(b, &into, &mut taken, &mut visiting);
        }
        let mut out = Loaded::default();
        for (&i, &n) in &taken {
            if n > 0 {
                self.out[i].obs.merged_count = self.out[i].obs.merged_count.saturating_add(n);
                out.taken.insert(self.out[i].obs.id.clone(), n);
            }
        }
        out.folded = self.out;
        out.restored = self.restored;
        out.times = self.times;
        out
    }
}

/// What observation `b` took from those it superseded: each one's count plus what that one
/// took in turn (memoized; a cycle, which only hand edits can make, counts once).
fn taken_by(
    b: usize,
    into: &HashMap<usize, Vec<(usize, u32)>>,
    taken: &mut HashMap<usize, u32>,
    visiting: &mut std::collections::HashSet<usize>,
) -> u32 {
    if let Some(&n) = taken.get(&b) {
        return n;
    }
    if !visiting.insert(b) {
        return 0;
    }
    let mut n = 0u32;
    for &(w, count) in into.get(&b).map(Vec::as_slice).unwrap_or_default() {
        n = n
            .saturating_add(count)
            .saturating_add(taken_by(w, into, taken, visiting));
    }
    taken.insert(b, n);
    n
}

/// Whether an observation with `id` is already stored, was merged into another (a scan of
/// the files for its id), or was forgotten.
pub fn contains(repo: &Repo, id: &str) -> Result<bool> {
    // A forgotten id counts as stored: remembering it again does not bring it back.
    if tombstones::tombstones(repo)?.contains(id) {
        return Ok(true);
    }
    let needle = format!("\"id\":\"{id}\"");
    let merged = format!("\"from\":\"{id}\"");
    for path in day_files(repo)? {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        if text
            .lines()
            .any(|l| (l.contains(&needle) && !l.contains("\"op\":")) || l.contains(&merged))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What the store already holds, for deduplicating a batch: every id stored or merged into
/// another, and the turn cards observed (card id → the hash of its line when observed).
#[derive(Debug, Default)]
pub struct Known {
    pub ids: Ids,
    pub observed: HashMap<String, String>,
}

/// A set of observation ids, compact (an import of millions of records checks each against
/// every id stored, ADR 53): an id of the shape cairn gives (`ob-` and 16 lowercase hex
/// digits) is held as its 64 bits, 8 bytes instead of a string's 40 or so; any other id (a
/// hand-written one, a tombstone's) as its text.
#[derive(Debug, Default, Clone)]
pub struct Ids {
    short: std::collections::HashSet<u64>,
    other: std::collections::HashSet<String>,
}

impl Ids {
    fn key(id: &str) -> Option<u64> {
        let hex = id.strip_prefix("ob-")?;
        if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    }

    /// Room for `more` ids without growing: a set that doubles while it fills holds its old
    /// table and its new one at once (19 MB more at an import's peak, at a million ids).
    pub fn reserve(&mut self, more: usize) {
        self.short.reserve(more);
    }

    /// Adds `id`; false if it was there.
    pub fn insert(&mut self, id: &str) -> bool {
        match Self::key(id) {
            Some(k) => self.short.insert(k),
            None => self.other.insert(id.to_string()),
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        match Self::key(id) {
            Some(k) => self.short.contains(&k),
            None => self.other.contains(id),
        }
    }

    pub fn len(&self) -> usize {
        self.short.len() + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Extend<String> for Ids {
    fn extend<I: IntoIterator<Item = String>>(&mut self, iter: I) {
        for id in iter {
            self.insert(&id);
        }
    }
}

/// [`Known`], in one read of every observations file. Ids forgotten (`cairn forget`'s
/// tombstones) count as known, so that observing the same turn again does not bring one back.
pub fn known(repo: &Repo) -> Result<Known> {
    let mut out = Known::default();
    out.ids.extend(tombstones::tombstones(repo)?);
    for path in day_files(repo)? {
        let (lines, _) = read_file(&path)?;
        for (_, line) in lines {
            match line {
                Line::Observation(o) => {
                    out.ids.insert(&o.id);
                }
                Line::Event(Event {
                    op: Op::Merge,
                    from: Some(from),
                    ..
                }) => {
                    out.ids.insert(&from);
                }
                Line::Event(Event {
                    op: Op::Observed,
                    id,
                    hash,
                    ..
                }) => {
                    out.observed.insert(id, hash.unwrap_or_default());
                }
                Line::Event(_) => {}
            }
        }
    }
    Ok(out)
}

/// Every id stored, and every id merged into another.
pub fn ids(repo: &Repo) -> Result<Ids> {
    Ok(known(repo)?.ids)
}

/// Appends lines (observations or events, serialized) to the day file of `now`, under its lock.
pub fn append(
    repo: &Repo,
    lines: &[String],
    now: DateTime<Utc>,
) -> Result<(String, Option<PathBuf>)> {
    append_chunks(repo, lines, now, true)
}

/// Appends more lines of a batch whose first lines [`append`] wrote to the same day file in
/// this run (under the repository lock): the file was checked for bad lines then, and is not
/// read again.
pub fn append_more(
    repo: &Repo,
    lines: &[String],
    now: DateTime<Utc>,
) -> Result<(String, Option<PathBuf>)> {
    append_chunks(repo, lines, now, false)
}

fn append_chunks(
    repo: &Repo,
    lines: &[String],
    now: DateTime<Utc>,
    check: bool,
) -> Result<(String, Option<PathBuf>)> {
    let rel = current_file(repo, now);
    let recovered = append_to(repo, &rel, lines, check)?;
    Ok((rel, recovered))
}

/// Appends lines to the observations file `rel` (relative to the root), under its lock; with
/// `check`, the file is checked for a torn last line first (see [`files::append_lines`]).
pub fn append_to<L: AsRef<str>>(
    repo: &Repo,
    rel: &str,
    lines: &[L],
    check: bool,
) -> Result<Option<PathBuf>> {
    let mut recovered = None;
    // Batches go in chunks so one write stays a reasonable size (at most [`CHUNK_BYTES`], or
    // one line); each chunk is whole lines, written and synced under the file's lock. The file
    // is checked for bad lines before the first chunk only.
    let (path, dir) = (repo.path(rel), repo.recovered_dir());
    let mut bytes = Vec::new();
    let mut first = true;
    let mut rest = lines;
    while !rest.is_empty() {
        let (mut take, mut size) = (0, 0);
        for l in rest {
            let b = l.as_ref().len() + 1;
            if take > 0 && size + b > CHUNK_BYTES {
                break;
            }
            take += 1;
            size += b;
        }
        // Sized once: a buffer grown by doubling held twice the chunk.
        bytes.clear();
        bytes.reserve_exact(size);
        for l in &rest[..take] {
            bytes.extend_from_slice(l.as_ref().as_bytes());
            bytes.push(b'\n');
        }
        rest = &rest[take..];
        let out = if check && first {
            files::append_lines(&path, &bytes, &dir)?
        } else {
            files::append_more(&path, &bytes, &dir)?
        };
        first = false;
        recovered = recovered.or(out.recovered);
    }
    Ok(recovered)
}

/// The most bytes of lines [`append_to`] writes (and syncs) at once: a sync a chunk, so an
/// import of millions of short lines makes hundreds of syncs, not tens of thousands (a chunk
/// was 512 lines).
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_the_words_lowered_and_joined() {
        let joined = |text: &str| {
            let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
            words
                .join(" ")
                .trim_end_matches(['.', '!', '?', ';', ','])
                .to_string()
        };
        for text in [
            "",
            "  ",
            "Deploy  the\tAPI\n now.",
            "ΣΑΣ ΟΔΟΣ; İstanbul Straße!?",
            "ends with spaces ,, ",
            "...",
            "MiXeD ascii and ÜMLAUT, déjà vu",
            "vertical\x0btab, form\x0cfeed\r\nand CR;",
            " . , ",
        ] {
            assert_eq!(normalize(text), joined(text), "{text:?}");
        }
        // ASCII texts take their own path: random ones, of every whitespace and trailing
        // punctuation, agree with the words joined.
        let alphabet = b"aZ \t\n\x0b\x0c\r.!?;,_-x";
        let mut x: u64 = 11;
        for _ in 0..5_000 {
            let text: String = (0..(x % 13))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(alphabet[(x % alphabet.len() as u64) as usize])
                })
                .collect();
            x = x.wrapping_add(1);
            assert_eq!(normalize(&text), joined(&text), "{text:?}");
        }
        assert_eq!(
            observation_id("Deploy the API", "manual"),
            observation_id("deploy   the api.", "manual")
        );
        assert!(observation_id("x", "y").starts_with("ob-"));
        assert_eq!(observation_id("x", "y").len(), 19);
    }

    #[test]
    fn a_merge_into_the_largest_count_saturates_instead_of_overflowing() {
        // Regression (fuzzing, fuzz/corpus/observations/regress-count-overflow.jsonl): a line
        // whose merged_count is u32::MAX and a merge event for it panicked in debug builds
        // (`attempt to add with overflow`) and wrapped to 0 in release.
        let obs = r#"{"id":"ob-1","session_id":"s","observation":"the user prefers tabs","observation_type":"preference","source":"cli","timestamp":"2026-11-30T10:00:00Z","priority":"high","write_verdict":"allow","write_confidence":0.9,"category_id":"preferences","category_confidence":0.8,"taxonomy_version":1,"merged_count":4294967295}"#;
        let Line::Observation(o) = parse_line(Path::new("o.jsonl"), 1, obs).unwrap() else {
            panic!("an observation");
        };
        let mut folded = Folded {
            obs: o,
            state: State::Active,
            superseded_by: None,
            rejected: None,
        };
        apply(
            &mut folded,
            &Event::new(Op::Merge, "ob-1", "2026-12-01T00:00:00Z"),
        );
        assert_eq!(folded.obs.merged_count, u32::MAX);
    }

    #[test]
    fn a_days_parts_sort_after_the_day_file_in_their_order_and_before_the_next_day() {
        let mut names: Vec<PathBuf> = [
            "2026-12-02.jsonl",
            "2026-12-01.10.jsonl",
            "2026-12-01.2.jsonl",
            "2026-12-01.jsonl",
            "2026-11-30.3.jsonl",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        names.sort_by_cached_key(|p| (file_day(p), p.clone()));
        let sorted: Vec<_> = names.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            sorted,
            [
                "2026-11-30.3.jsonl",
                "2026-12-01.jsonl",
                "2026-12-01.2.jsonl",
                "2026-12-01.10.jsonl",
                "2026-12-02.jsonl"
            ]
        );
        let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(file_day(Path::new("x/2026-12-01.jsonl")), Some((day, 1)));
        assert_eq!(file_day(Path::new("2026-12-01.7.jsonl")), Some((day, 7)));
        assert_eq!(file_day(Path::new("2026-12-01.x.jsonl")), None);
        assert_eq!(file_day(Path::new("notes.jsonl")), None);
        let now = DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(part_file(now, 1), "vault/observations/2026-12-01.jsonl");
        assert_eq!(part_file(now, 3), "vault/observations/2026-12-01.3.jsonl");
    }

    #[test]
    fn a_set_of_ids_holds_cairns_ids_as_numbers_and_any_other_as_text() {
        let mut ids = Ids::default();
        let a = observation_id("the user prefers tabs", "cli");
        assert!(ids.insert(&a));
        assert!(!ids.insert(&a));
        assert!(ids.contains(&a));
        // Ids of other shapes never meet a numeric one: upper case, a sign, other lengths.
        for other in [
            a.to_uppercase(),
            format!("ob-+{}", &a[4..]),
            format!("{a}0"),
            "ob-tomb".to_string(),
            "pr-0123456789abcdef".to_string(),
        ] {
            assert!(!ids.contains(&other), "{other}");
            assert!(ids.insert(&other), "{other}");
            assert!(ids.contains(&other), "{other}");
        }
        assert_eq!(ids.len(), 6);
        assert_eq!((ids.short.len(), ids.other.len()), (1, 5));
    }

    #[test]
    fn ids_come_from_normalized_text_and_source() {
        let a = observation_id("The user prefers tabs.", "cli");
        assert_eq!(a, observation_id("  the user   PREFERS tabs ", "cli"));
        assert_ne!(a, observation_id("The user prefers tabs.", "session:1"));
        assert_ne!(a, observation_id("The user prefers spaces.", "cli"));
        assert!(a.starts_with("ob-") && a.len() == 19);
    }

    #[test]
    fn events_fold_in_order() {
        let obs: Observation = serde_json::from_str(
            r#"{"id":"ob-1","observation":"x is y","timestamp":"2026-01-01T00:00:00.000Z","write_verdict":"allow","category_id":"projects"}"#,
        )
        .unwrap();
        assert_eq!(obs.merged_count, 1);
        let mut f = Folded {
            obs,
            state: State::Active,
            superseded_by: None,
            rejected: None,
        };
        let ev = |op, ts: Option<&str>| Event {
            op,
            id: "ob-1".into(),
            ts: "t".into(),
            timestamp: ts.map(Into::into),
            by: None,
            from: None,
            hash: None,
            count: None,
        };
        apply(&mut f, &ev(Op::Merge, Some("2026-02-01T00:00:00.000Z")));
        assert_eq!(
            (f.obs.merged_count, f.obs.timestamp.as_str()),
            (2, "2026-02-01T00:00:00.000Z")
        );
        apply(&mut f, &ev(Op::Stale, None));
        assert_eq!(f.state, State::Stale);
        apply(&mut f, &ev(Op::Delete, None));
        assert_eq!(f.state, State::Deleted);
        apply(&mut f, &ev(Op::Stale, None));
        assert_eq!(f.state, State::Deleted, "stale does not undelete");
        apply(&mut f, &ev(Op::Restore, None));
        assert_eq!(f.state, State::Active);
    }

    #[test]
    fn a_supersede_gives_its_count_along_a_chain_and_a_restore_takes_back_its_part() {
        let o = |id: &str, merged: u32| -> Observation {
            serde_json::from_value(serde_json::json!({
                "id": id, "observation": id, "timestamp": "2026-01-01T00:00:00.000Z",
                "write_verdict": "allow", "category_id": "projects", "merged_count": merged,
            }))
            .unwrap()
        };
        let sup = |id: &str, by: &str, count: u32| {
            let mut e = Event::new(Op::Supersede, id, "t");
            e.by = Some(by.into());
            e.count = Some(count);
            e
        };
        let fold = |events: &[Event], events_first: bool| {
            let mut f = Folder::default();
            // Events before their observations (a union merge of two machines' files) fold
            // the same.
            if events_first {
                events.iter().for_each(|e| f.event(e.clone()));
            }
            for (id, m) in [("w", 2), ("s", 3), ("t", 1)] {
                f.observation(o(id, m));
            }
            if !events_first {
                events.iter().for_each(|e| f.event(e.clone()));
            }
            let l = f.finish();
            let count = |id: &str| {
                l.folded
                    .iter()
                    .find(|x| x.obs.id == id)
                    .map(|x| x.obs.merged_count)
            };
            (count("w"), count("s"), count("t"))
        };
        let chain = [sup("w", "s", 2), sup("s", "t", 3)];
        assert_eq!(fold(&chain, false), (Some(2), Some(5), Some(6)));
        assert_eq!(fold(&chain, true), (Some(2), Some(5), Some(6)));
        let restored = [
            chain[0].clone(),
            chain[1].clone(),
            Event::new(Op::Restore, "w", "t2"),
        ];
        assert_eq!(fold(&restored, false), (Some(2), Some(3), Some(4)));
    }

    #[test]
    fn the_fold_notes_each_records_day_file_its_last_store_and_its_stale_mark() {
        let o: Observation = serde_json::from_str(
            r#"{"id":"ob-1","observation":"x is y","timestamp":"2025-01-01T00:00:00.000Z","write_verdict":"allow","category_id":"projects"}"#,
        )
        .unwrap();
        let day = |d: &str| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok();
        let mut f = Folder::default();
        f.day(day("2026-12-01"));
        f.observation(o.clone());
        f.day(day("2026-12-05"));
        // The same record again in a later file: the first keeps its day.
        f.observation(o);
        f.event(Event::new(Op::Merge, "ob-1", "2026-12-05T10:00:00.000Z"));
        f.event(Event::new(Op::Stale, "ob-1", "2027-04-01T00:00:00.000Z"));
        f.event(Event::new(Op::Stale, "ob-1", "2027-05-01T00:00:00.000Z"));
        let l = f.finish();
        assert_eq!(
            l.times,
            [Times {
                day: day("2026-12-01"),
                stored_again: Some("2026-12-05T10:00:00.000Z".into()),
                stale: Some("2027-04-01T00:00:00.000Z".into()),
            }],
            "the first stale mark counts"
        );
        let mut f = Folder::default();
        f.observation(serde_json::from_str(r#"{"id":"ob-1","observation":"x","timestamp":"t","write_verdict":"allow","category_id":"projects"}"#).unwrap());
        f.event(Event::new(Op::Stale, "ob-1", "2027-04-01T00:00:00.000Z"));
        f.event(Event::new(Op::Restore, "ob-1", "2027-04-02T00:00:00.000Z"));
        assert_eq!(f.finish().times, [Times::default()], "a restore clears it");
    }

    #[test]
    fn lines_are_told_apart_by_op() {
        let p = Path::new("o.jsonl");
        assert!(matches!(
            parse_line(p, 1, r#"{"op":"stale","id":"ob-1","ts":"t"}"#),
            Ok(Line::Event(_))
        ));
        assert!(parse_line(p, 1, r#"{"op":"explode","id":"ob-1","ts":"t"}"#).is_err());
        assert!(parse_line(p, 1, r#"{"observation":"no id"}"#).is_err());
    }
}
