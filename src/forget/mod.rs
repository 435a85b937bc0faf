//! Forgetting for real: which records an argument names, the files without them, tombstones,
//! and the replace-text file for a history rewrite.
//!
//! An argument is an id of a record (slog entry, observation, turn card, episode, a MEMORY.md
//! entry as the index names it (`mem-…`) or as `search --exact` shows it (`MEMORY.md:LINE`),
//! proposal, note, library document) when some record has that id, and otherwise a query: the
//! words as written, in any case, anywhere in any text of a record (every string of its JSON
//! line; a MEMORY.md entry's lines; a note's file; a library document's manifest line, chunks
//! and copied file; an ADR's title and body, see [`adr`]). A note is also named by its path (`vault/notes/DAY-SLUG.md`); a library
//! document by its path or URL as the manifest holds it, by its copy's path and by the id of
//! any of its chunks (`lib-ID-N`: the whole document goes, never one chunk). Never ranked,
//! never fuzzy: what matches is exactly what is shown and removed.
//!
//! Removal ([`plan`]) gives each affected file's new bytes: JSONL files keep every other line
//! byte for byte (an observation goes with its events and with any `merge` event whose `from`
//! names it; a proposal with its decision events; a library document with its manifest line
//! only); MEMORY.md loses the entry's lines and nothing else; a note's file goes, and so does
//! a library document's `--copy` in `vault/library/` (a document added without `--copy` is
//! not cairn's: it stays where it is, named in [`Plan::kept_documents`]); an ADR keeps its
//! record with the text replaced by [`adr::MARKER`] and is not tombstoned. A document's chunks
//! are derived (`.cairn/library/ID.jsonl`): the command removes them once the manifest no longer
//! names it ([`crate::library::drop_orphans`]). The ids forgotten are kept as tombstones in
//! [`TOMBSTONES`] (`{"id","ts"}` a line, never the text), which ingest, admission and reflection
//! consult so that a record forgotten is not made again.
//!
//! Nothing here prints or commits; `cli/forget.rs` does, under the repository lock.

pub mod adr;
pub mod derived;
pub mod redact;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::{memory, proposals, slog, store};

pub use crate::store::tombstones::{TOMBSTONES, Tombstone, tombstones};
/// Discovery notes, one Markdown file each.
pub const NOTES: &str = "vault/notes";
/// What a history rewrite replaces a forgotten text with.
pub const REMOVED: &str = "***REMOVED***";
/// A text shorter than this is not replaced in history: it would hit unrelated files.
const MIN_LITERAL: usize = 8;

/// The kinds of record forget removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum What {
    Slog,
    Observation,
    Card,
    Episode,
    Memory,
    Proposal,
    Note,
    /// A library document: its manifest line, its chunks and a `--copy`'d file.
    Library,
    /// A decision record holding a query: the text is taken out, the record stays
    /// ([`adr`]); `--redact` redacts ADRs as it does every file.
    Adr,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::Slog => "slog",
            What::Observation => "observation",
            What::Card => "card",
            What::Episode => "episode",
            What::Memory => "memory",
            What::Proposal => "proposal",
            What::Note => "note",
            What::Library => "library",
            What::Adr => "adr",
        }
    }
}

/// A record an argument matched.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub kind: What,
    pub id: String,
    /// `path:line`, relative to the repository root.
    pub at: String,
    /// The record's text, one line, cut.
    pub text: String,
    /// The argument that matched it.
    #[serde(rename = "by")]
    pub arg: String,
    /// Its main texts, whole (what a history rewrite replaces when it was named by id).
    #[serde(skip)]
    pub texts: Vec<String>,
}

/// What the arguments matched.
#[derive(Debug, Default)]
pub struct Matches {
    pub found: Vec<Found>,
    /// Arguments that matched nothing.
    pub unmatched: Vec<String>,
    /// The exact texts to look for in history and replace there (each case a query took in
    /// the records, the whole texts of records named by id).
    pub literals: Vec<String>,
    /// ADR files whose name holds a query (the text is taken out of the record, but a file
    /// name is its slug, which other records link to: named for a person to rename).
    pub adr_names: Vec<String>,
}

/// One record as read for matching.
struct Record {
    kind: What,
    id: String,
    rel: String,
    line: usize,
    /// Every string of the record, for queries.
    strings: Vec<String>,
    texts: Vec<String>,
    /// An event about the record `id` (a proposal decision): matched by query, never by id.
    event: bool,
    /// Other names that name the record as its id does (a note's path; a library document's
    /// path or URL, its copy and its chunks' ids).
    aliases: Vec<String>,
    /// What a listing shows, when not its first text.
    shown: Option<String>,
}

/// An argument: a query (lower-cased) and, once known, whether it is an id.
struct Arg {
    raw: String,
    lower: String,
    /// The query as it appears in a JSON line (escaped), lower-cased, to skip lines cheaply.
    in_json: String,
}

fn strings_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The main texts of a record of `kind` (its JSON line parsed).
fn texts_of(kind: What, v: &Value) -> Vec<String> {
    let keys: &[&str] = match kind {
        What::Slog => &["detail", "reason"],
        What::Observation => &["observation", "narrative"],
        What::Card => &["prompt", "answer"],
        What::Episode => &["text"],
        What::Proposal => &["text"],
        What::Memory | What::Note | What::Library | What::Adr => &[],
    };
    keys.iter().filter_map(|k| str_field(v, k)).collect()
}

/// A JSON string's escaped form, without its quotes.
pub fn json_escaped(text: &str) -> String {
    let s = serde_json::to_string(text).expect("a string serializes");
    s[1..s.len() - 1].to_string()
}

fn rel_of(repo: &Repo, path: &Path) -> String {
    path.strip_prefix(repo.root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The JSONL files of the record kinds, with the kind their record lines are.
fn jsonl_files(repo: &Repo) -> Result<Vec<(String, Option<What>)>> {
    let mut out = Vec::new();
    for p in slog::day_files(repo).map_err(|e| Error::bad_input(e.to_string()))? {
        out.push((rel_of(repo, &p), Some(What::Slog)));
    }
    for p in store::day_files(repo)? {
        out.push((rel_of(repo, &p), Some(What::Observation)));
    }
    for f in crate::index::sources::list(repo)? {
        if f.kind == crate::index::sources::SourceKind::Sessions {
            // Card or episode: told by the line's `type`.
            out.push((f.rel, None));
        }
    }
    for p in proposals::day_files(repo)? {
        out.push((rel_of(repo, &p), Some(What::Proposal)));
    }
    Ok(out)
}

/// Reads the records a line may hold for `args` (the cheap test first: an id or a query must
/// appear in the line as written for the line to be parsed).
fn read_jsonl(
    repo: &Repo,
    rel: &str,
    kind: Option<What>,
    args: &[Arg],
    out: &mut Vec<Record>,
) -> Result<()> {
    let path = repo.path(rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path.display(), &e)),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let lower = line.to_lowercase();
        if !args
            .iter()
            .any(|a| line.contains(&a.raw) || lower.contains(&a.in_json))
        {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(id) = str_field(&v, "id") else {
            continue;
        };
        let (kind, event) = match kind {
            Some(What::Observation) if v.get("op").is_some() => continue,
            Some(What::Proposal) if v.get("event").is_some() => (What::Proposal, true),
            Some(k) => (k, false),
            None => match v.get("type").and_then(Value::as_str) {
                Some("card") => (What::Card, false),
                Some("episode") => (What::Episode, false),
                _ => continue,
            },
        };
        let mut strings = Vec::new();
        strings_of(&v, &mut strings);
        out.push(Record {
            kind,
            texts: texts_of(kind, &v),
            id,
            rel: rel.to_string(),
            line: i + 1,
            strings,
            event,
            aliases: Vec::new(),
            shown: None,
        });
    }
    Ok(())
}

/// MEMORY.md's entries as records: the index's id (`mem-…`), their lines as strings.
fn memory_records(repo: &Repo, now: DateTime<Utc>, out: &mut Vec<Record>) -> Result<()> {
    let Some(text) = crate::files::read_optional(&repo.path(memory::FILE))? else {
        return Ok(());
    };
    let lines: Vec<&str> = text.lines().collect();
    let parsed = memory::parse(&text);
    let docs = crate::index::sources::memory_docs(&text, memory::FILE, now);
    let entries = parsed
        .loose
        .iter()
        .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()));
    for e in entries {
        let source = format!("{}:{}", memory::FILE, e.line);
        let id = docs
            .iter()
            .find(|d| d.source == source)
            .map_or_else(|| source.clone(), |d| d.id.clone());
        let end = e.end.max(e.line);
        let body: Vec<String> = lines
            .get(e.line - 1..end.min(lines.len()))
            .unwrap_or_default()
            .iter()
            .map(|l| l.to_string())
            .collect();
        let mut strings = body;
        strings.push(e.text.clone());
        out.push(Record {
            kind: What::Memory,
            id,
            rel: memory::FILE.to_string(),
            line: e.line,
            strings,
            texts: vec![e.text.clone()],
            event: false,
            aliases: Vec::new(),
            shown: None,
        });
    }
    Ok(())
}

/// The notes, one record a file (id: the file's name without `.md`).
fn note_records(repo: &Repo, out: &mut Vec<Record>) -> Result<()> {
    let dir = repo.path(NOTES);
    let Ok(read) = crate::files::read_dir_real(&dir) else {
        return Ok(());
    };
    let mut paths: Vec<_> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for p in paths {
        let text = std::fs::read_to_string(&p).map_err(|e| Error::io(p.display(), &e))?;
        let id = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let texts = text
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 16)
            .map(str::to_string)
            .collect();
        let rel = rel_of(repo, &p);
        let shown = crate::note::Note::parse(&text)
            .ok()
            .map(|n| n.front.title)
            .filter(|t| !t.is_empty());
        out.push(Record {
            kind: What::Note,
            id,
            aliases: vec![rel.clone()],
            rel,
            line: 1,
            strings: vec![text],
            texts,
            event: false,
            shown,
        });
    }
    Ok(())
}

/// The library's documents, one record a manifest line (id: the document's id). Its strings
/// are the manifest line's and, when an argument appears in them (the cheap test first, as for
/// JSONL records), its chunks' texts and a copied document's own text (for when `.cairn/` was
/// deleted; a PDF's with its metadata, annotations, form fields and outline); it is also named by its path or URL and its copy's path (aliases) and by its
/// chunks' ids ([`chunk_of`]). A line that is not an entry is left to `cairn library list`.
fn library_records(repo: &Repo, args: &[Arg], out: &mut Vec<Record>) -> Result<()> {
    let Some(text) = crate::files::read_optional(&repo.path(crate::library::MANIFEST))? else {
        return Ok(());
    };
    let holds = |text: &str| {
        let lower = text.to_lowercase();
        args.iter().any(|a| {
            !a.lower.trim().is_empty() && (lower.contains(&a.lower) || lower.contains(&a.in_json))
        })
    };
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Ok(entry) = serde_json::from_value::<crate::library::Entry>(v.clone()) else {
            continue;
        };
        let mut strings = Vec::new();
        strings_of(&v, &mut strings);
        let chunks = std::fs::read_to_string(repo.path(&crate::library::cache_rel(&entry.id)))
            .unwrap_or_default();
        if holds(&chunks) {
            strings.extend(
                chunks
                    .lines()
                    .filter_map(|l| serde_json::from_str::<crate::library::ChunkRecord>(l).ok())
                    .flat_map(|c| std::iter::once(c.text).chain(c.heading)),
            );
        }
        let mut aliases = vec![entry.source().to_string()];
        let mut texts = Vec::new();
        if let Some(p) = &entry.path
            && entry.copied
        {
            aliases.push(p.clone());
            // A copied PDF: every text it carries (pages, metadata, annotations, form fields,
            // outline), so a secret an older cairn copied inside one is found.
            if entry.format == crate::library::Format::Pdf
                && let Ok(bytes) = std::fs::read(repo.path(p))
            {
                let mut own = crate::library::extract::pdf(&bytes).unwrap_or_default();
                own.extend(crate::library::extract::pdf_carried(&bytes).unwrap_or_default());
                if own.iter().any(|t| holds(t)) {
                    strings.extend(own);
                }
            }
            if entry.format != crate::library::Format::Pdf
                && let Ok(own) = std::fs::read(repo.path(p))
            {
                let own = String::from_utf8_lossy(&own).into_owned();
                // Named by id, the copy's lines are what a history rewrite replaces (as a
                // note's are).
                texts.extend(
                    own.lines()
                        .map(str::trim)
                        .filter(|l| l.len() >= 16)
                        .map(str::to_string),
                );
                if holds(&own) {
                    strings.push(own);
                }
            }
        }
        aliases.dedup();
        out.push(Record {
            kind: What::Library,
            id: entry.id.clone(),
            rel: crate::library::MANIFEST.to_string(),
            line: i + 1,
            strings,
            texts,
            event: false,
            aliases,
            shown: Some(format!("{} ({})", entry.title, entry.source())),
        });
    }
    Ok(())
}

/// The document id of a chunk id (`lib-DOC-N`).
fn chunk_of(id: &str) -> Option<&str> {
    let (doc, n) = id.strip_prefix("lib-")?.rsplit_once('-')?;
    (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).then_some(doc)
}

/// The case a query takes in `haystack`, each time it appears.
fn cases_in(haystack: &str, lower_query: &str, out: &mut BTreeSet<String>) {
    let lower = haystack.to_lowercase();
    if lower.len() != haystack.len() {
        // Lower-casing changed the byte lengths: positions do not carry over.
        return;
    }
    let mut from = 0;
    while let Some(i) = lower[from..].find(lower_query) {
        let at = from + i;
        let end = at + lower_query.len();
        if haystack.is_char_boundary(at) && haystack.is_char_boundary(end) {
            out.insert(haystack[at..end].to_string());
        }
        from = at + lower_query.len().max(1);
    }
}

/// The records `args` name (see the module comment); `now` dates MEMORY.md entries without
/// a date (it changes no id).
pub fn find(repo: &Repo, args: &[String], now: DateTime<Utc>) -> Result<Matches> {
    let prepared: Vec<Arg> = args
        .iter()
        .map(|a| Arg {
            raw: a.clone(),
            lower: a.to_lowercase(),
            in_json: json_escaped(&a.to_lowercase()),
        })
        .collect();
    let mut records = Vec::new();
    for (rel, kind) in jsonl_files(repo)? {
        read_jsonl(repo, &rel, kind, &prepared, &mut records)?;
    }
    memory_records(repo, now, &mut records)?;
    note_records(repo, &mut records)?;
    library_records(repo, &prepared, &mut records)?;

    let mut out = Matches::default();
    let mut literals: BTreeSet<String> = BTreeSet::new();
    let mut chosen: BTreeMap<(What, String), Found> = BTreeMap::new();
    for arg in &prepared {
        let memory_line = arg.raw.strip_prefix("MEMORY.md:");
        let by_id: Vec<&Record> = records
            .iter()
            .filter(|r| !r.event)
            .filter(|r| {
                r.id == arg.raw
                    || r.aliases.contains(&arg.raw)
                    || (r.kind == What::Library && chunk_of(&arg.raw) == Some(r.id.as_str()))
                    || (r.kind == What::Memory
                        && memory_line.is_some_and(|l| l == r.line.to_string()))
            })
            .collect();
        let named = !by_id.is_empty();
        let hits: Vec<&Record> = if named {
            for r in &by_id {
                literals.extend(r.texts.iter().filter(|t| t.len() >= MIN_LITERAL).cloned());
            }
            by_id
        } else if arg.lower.trim().is_empty() {
            Vec::new()
        } else {
            let hits: Vec<&Record> = records
                .iter()
                .filter(|r| {
                    r.strings
                        .iter()
                        .any(|s| s.to_lowercase().contains(&arg.lower))
                })
                .collect();
            for r in &hits {
                for s in &r.strings {
                    cases_in(s, &arg.lower, &mut literals);
                }
            }
            if !hits.is_empty() {
                literals.insert(arg.raw.clone());
            }
            hits
        };
        // An ADR that holds a query in its title or body loses the text (see [`adr`]).
        let mut in_adrs = false;
        if !named && !arg.lower.trim().is_empty() {
            for rel in crate::adr::record_files(repo)? {
                let text = crate::files::read_optional(&repo.path(&rel))?.unwrap_or_default();
                let found = adr::occurrences(&text, &arg.lower);
                if rel.to_lowercase().contains(&arg.lower) {
                    out.adr_names.push(rel.clone());
                }
                let Some(first) = found.first() else {
                    continue;
                };
                in_adrs = true;
                for r in &found {
                    literals.insert(text[r.clone()].to_string());
                }
                literals.insert(arg.raw.clone());
                let parsed = crate::adr::parse(&repo.path(&rel), &rel, &text).ok();
                let id = parsed
                    .as_ref()
                    .map_or_else(|| rel.clone(), |a| format!("adr-{}", a.number));
                let title = parsed.map(|a| a.title).unwrap_or_default();
                chosen.entry((What::Adr, id.clone())).or_insert(Found {
                    kind: What::Adr,
                    id,
                    at: format!("{rel}:{}", adr::line_at(&text, first.start)),
                    text: crate::cards::cut(&title, 100),
                    arg: arg.raw.clone(),
                    texts: Vec::new(),
                });
            }
        }
        if hits.is_empty() && !in_adrs {
            out.unmatched.push(arg.raw.clone());
        }
        for r in hits {
            // A decision event that holds the query forgets its proposal.
            let key = (r.kind, r.id.clone());
            if chosen.contains_key(&key) {
                continue;
            }
            let main = records
                .iter()
                .find(|x| !x.event && x.kind == r.kind && x.id == r.id)
                .unwrap_or(r);
            let shown = main
                .shown
                .as_ref()
                .or(main.texts.first())
                .or(main.strings.first())
                .map(|t| {
                    crate::cards::cut(&t.split_whitespace().collect::<Vec<_>>().join(" "), 100)
                })
                .unwrap_or_default();
            chosen.insert(
                key,
                Found {
                    kind: r.kind,
                    id: r.id.clone(),
                    at: format!("{}:{}", main.rel, main.line),
                    text: shown,
                    arg: arg.raw.clone(),
                    texts: main.texts.clone(),
                },
            );
        }
    }
    out.found = chosen.into_values().collect();
    out.found
        .sort_by(|a, b| a.kind.cmp(&b.kind).then(a.at.cmp(&b.at)));
    out.literals = literals.into_iter().filter(|l| !l.is_empty()).collect();
    Ok(out)
}

/// What removing the records found does to the files.
#[derive(Debug, Default)]
pub struct Plan {
    /// Each file's new bytes (`None`: the file goes), relative to the root.
    pub writes: Vec<(String, Option<Vec<u8>>)>,
    /// The ids to tombstone: the records, and the ids merged into a forgotten observation.
    pub ids: BTreeSet<String>,
    /// Proposal ids whose ref goes.
    pub proposals: Vec<String>,
    /// MEMORY.md changes (pending proposal refs must be made again from it).
    pub memory: bool,
    /// A record not forgotten changes too (a merge event into it was removed): the index
    /// must fold its file again rather than only drop documents.
    pub others: bool,
    /// Library documents forgotten whose file is not cairn's (added without `--copy`): they
    /// stay where they are, and the person is told.
    pub kept_documents: Vec<String>,
}

/// The library manifest's entries as they parse (a line that does not is skipped: `cairn
/// library list` names it).
fn library_entries(repo: &Repo) -> Result<Vec<crate::library::Entry>> {
    let Some(text) = crate::files::read_optional(&repo.path(crate::library::MANIFEST))? else {
        return Ok(Vec::new());
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Removes lines holding the ids in `gone` from a JSONL text: a record or event whose `id` is
/// in it, and a `merge` event whose `from` is. Returns the new text (None when unchanged) and
/// the `from` ids of removed merge events into a forgotten record.
fn without_lines(text: &str, gone: &HashSet<&str>) -> (Option<String>, Vec<String>, bool) {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut merged = Vec::new();
    let mut others = false;
    for line in text.split_inclusive('\n') {
        let mentions = gone.iter().any(|id| line.contains(id));
        if mentions && let Ok(v) = serde_json::from_str::<Value>(line.trim_end()) {
            let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
            let from = v.get("from").and_then(Value::as_str);
            let is_merge = v.get("op").and_then(Value::as_str) == Some("merge");
            if gone.contains(id) {
                if is_merge && let Some(f) = from {
                    merged.push(f.to_string());
                }
                changed = true;
                continue;
            }
            if is_merge && from.is_some_and(|f| gone.contains(f)) {
                changed = true;
                others = true;
                continue;
            }
        }
        out.push_str(line);
    }
    (changed.then_some(out), merged, others)
}

/// The new bytes of every file the records `found` are in (see the module comment).
pub fn plan(repo: &Repo, found: &[Found]) -> Result<Plan> {
    let mut plan = Plan::default();
    let ids_of = |k: &[What]| -> HashSet<&str> {
        found
            .iter()
            .filter(|f| k.contains(&f.kind))
            .map(|f| f.id.as_str())
            .collect()
    };
    let files_of = |k: &[What]| -> BTreeSet<String> {
        found
            .iter()
            .filter(|f| k.contains(&f.kind))
            .filter_map(|f| f.at.rsplit_once(':').map(|(p, _)| p.to_string()))
            .collect()
    };
    let jsonl = |rels: Vec<String>, gone: &HashSet<&str>, plan: &mut Plan| -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        for rel in rels {
            let path = repo.path(&rel);
            let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
            let (new, merged, others) = without_lines(&text, gone);
            plan.ids.extend(merged);
            plan.others |= others;
            if let Some(new) = new {
                plan.writes.push((rel, Some(new.into_bytes())));
            }
        }
        Ok(())
    };
    // Slog entries and session records live in the files they were found in; observation
    // and proposal events may be in any day's file.
    jsonl(
        files_of(&[What::Slog]).into_iter().collect(),
        &ids_of(&[What::Slog]),
        &mut plan,
    )?;
    jsonl(
        files_of(&[What::Card, What::Episode]).into_iter().collect(),
        &ids_of(&[What::Card, What::Episode]),
        &mut plan,
    )?;
    let all = |files: Vec<std::path::PathBuf>| files.iter().map(|p| rel_of(repo, p)).collect();
    jsonl(
        all(store::day_files(repo)?),
        &ids_of(&[What::Observation]),
        &mut plan,
    )?;
    jsonl(
        all(proposals::day_files(repo)?),
        &ids_of(&[What::Proposal]),
        &mut plan,
    )?;
    let lines: BTreeSet<usize> = found
        .iter()
        .filter(|f| f.kind == What::Memory)
        .filter_map(|f| f.at.rsplit_once(':').and_then(|(_, l)| l.parse().ok()))
        .collect();
    if !lines.is_empty()
        && let Some(text) = crate::files::read_optional(&repo.path(memory::FILE))?
    {
        let parsed = memory::parse(&text);
        let mut cut: BTreeSet<usize> = BTreeSet::new();
        for e in parsed
            .loose
            .iter()
            .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()))
        {
            if lines.contains(&e.line) {
                cut.extend(e.line..=e.end.max(e.line));
            }
        }
        let kept: String = text
            .split_inclusive('\n')
            .enumerate()
            .filter(|(i, _)| !cut.contains(&(i + 1)))
            .map(|(_, l)| l)
            .collect();
        if kept != text {
            plan.writes
                .push((memory::FILE.to_string(), Some(kept.into_bytes())));
            plan.memory = true;
        }
    }
    for f in found.iter().filter(|f| f.kind == What::Note) {
        if let Some((rel, _)) = f.at.rsplit_once(':') {
            plan.writes.push((rel.to_string(), None));
        }
    }
    let documents = ids_of(&[What::Library]);
    if !documents.is_empty() {
        let entries = library_entries(repo)?;
        for e in entries.iter().filter(|e| documents.contains(e.id.as_str())) {
            match (&e.path, e.copied) {
                (Some(p), true) => plan.writes.push((p.clone(), None)),
                (Some(p), false) => plan.kept_documents.push(p.clone()),
                (None, _) => {}
            }
        }
        jsonl(
            vec![crate::library::MANIFEST.to_string()],
            &documents,
            &mut plan,
        )?;
    }
    // ADRs: each loses the texts of the queries that found it, and stays a record.
    let mut adr_queries: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in found.iter().filter(|f| f.kind == What::Adr) {
        if let Some((rel, _)) = f.at.rsplit_once(':') {
            adr_queries
                .entry(rel.to_string())
                .or_default()
                .push(f.arg.to_lowercase());
        }
    }
    for (rel, queries) in adr_queries {
        let path = repo.path(&rel);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        let (new, n) = adr::without(&text, &queries);
        if n == 0 {
            continue;
        }
        if crate::adr::parse(&path, &rel, &text).is_ok()
            && let Err(e) = crate::adr::parse(&path, &rel, &new)
        {
            return Err(Error::bad_input(format!(
                "{rel}: taking the text out would leave the record malformed ({e})"
            ))
            .with_fix(format!(
                "edit {rel} by hand (`cairn adr lint` checks it), then run `cairn forget` again"
            )));
        }
        plan.writes.push((rel, Some(new.into_bytes())));
        // The record stays: the index reads its file again.
        plan.others = true;
    }
    // A record forgotten is tombstoned; an ADR that lost a text is still a record.
    plan.ids.extend(
        found
            .iter()
            .filter(|f| f.kind != What::Adr)
            .map(|f| f.id.clone()),
    );
    plan.proposals = found
        .iter()
        .filter(|f| f.kind == What::Proposal)
        .map(|f| f.id.clone())
        .collect();
    Ok(plan)
}

/// The tombstone lines to append for `ids` not yet tombstoned.
pub fn tombstone_lines(
    known: &HashSet<String>,
    ids: &BTreeSet<String>,
    now: DateTime<Utc>,
) -> Vec<String> {
    ids.iter()
        .filter(|id| !known.contains(*id))
        .map(|id| {
            serde_json::to_string(&Tombstone {
                id: id.clone(),
                ts: crate::time::format(now),
            })
            .expect("a tombstone serializes")
        })
        .collect()
}

/// The id a MEMORY.md entry of `section` with `text` gets (as the index names it), so that
/// reflection can tell a proposal that would bring a forgotten entry back.
pub fn memory_entry_id(section: &str, text: &str) -> String {
    format!(
        "mem-{}",
        &crate::index::hash(format!("{section}\0{}", text.trim()).as_bytes())[..12]
    )
}

/// Whether a proposal was forgotten, or would bring a forgotten MEMORY.md entry back.
pub fn brings_back(forgotten: &HashSet<String>, p: &proposals::Proposal) -> bool {
    if forgotten.is_empty() {
        return false;
    }
    forgotten.contains(&p.id)
        || (p.op != proposals::Op::Remove
            && forgotten.contains(&memory_entry_id(&p.section, &p.text)))
}

/// The replace-text file for `git filter-repo --replace-text` (and `cairn forget
/// --rewrite-history --replace-text`): a line `TEXT==>***REMOVED***` for each text, and for
/// its JSON-escaped form when that differs (JSON Lines files hold that form). A text with a
/// line break has only its escaped form; one holding `==>` cannot be written and is skipped.
pub fn replace_text(literals: &[String]) -> String {
    let mut lines: BTreeSet<String> = BTreeSet::new();
    for l in literals {
        for form in [l.clone(), json_escaped(l)] {
            if form.is_empty() || form.contains('\n') || form.contains("==>") {
                continue;
            }
            // filter-repo reads a `regex:` or `glob:` start as a kind of pattern.
            let form = if form.starts_with("regex:")
                || form.starts_with("glob:")
                || form.starts_with("literal:")
            {
                format!("literal:{form}")
            } else {
                form
            };
            lines.insert(format!("{form}==>{REMOVED}"));
        }
    }
    lines.into_iter().map(|l| l + "\n").collect()
}

/// One replacement: the bytes to find, the bytes to put instead.
pub type Replacement = (Vec<u8>, Vec<u8>);

/// The replacements a replace-text file asks for (literal lines only; `regex:` and `glob:`
/// lines are refused by the caller).
pub fn parse_replace_text(text: &str) -> std::result::Result<Vec<Replacement>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (from, to) = match line.split_once("==>") {
            Some((f, t)) => (f, t),
            None => (line, REMOVED),
        };
        let from = if let Some(rest) = from.strip_prefix("literal:") {
            rest
        } else if from.starts_with("regex:") || from.starts_with("glob:") {
            return Err(format!(
                "line {}: only literal replacements are supported; use git filter-repo for patterns",
                i + 1
            ));
        } else {
            from
        };
        if from.is_empty() {
            return Err(format!("line {}: nothing to replace", i + 1));
        }
        out.push((from.as_bytes().to_vec(), to.as_bytes().to_vec()));
    }
    // Longer texts first, so that a text inside another is not replaced before it.
    out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_go_with_their_events_and_merges() {
        let text = concat!(
            "{\"id\":\"ob-1\",\"observation\":\"x\"}\n",
            "{\"id\":\"ob-2\",\"observation\":\"y\"}\n",
            "{\"op\":\"merge\",\"id\":\"ob-1\",\"from\":\"ob-9\",\"ts\":\"t\"}\n",
            "{\"op\":\"merge\",\"id\":\"ob-2\",\"from\":\"ob-1\",\"ts\":\"t\"}\n",
            "{\"op\":\"stale\",\"id\":\"ob-2\",\"ts\":\"t\"}\n",
            "torn {\"id\":\"ob-1\"",
        );
        let gone: HashSet<&str> = ["ob-1"].into_iter().collect();
        let (new, merged, others) = without_lines(text, &gone);
        assert_eq!(
            new.unwrap(),
            concat!(
                "{\"id\":\"ob-2\",\"observation\":\"y\"}\n",
                "{\"op\":\"stale\",\"id\":\"ob-2\",\"ts\":\"t\"}\n",
                "torn {\"id\":\"ob-1\"",
            )
        );
        assert_eq!(merged, vec!["ob-9".to_string()]);
        assert!(others, "ob-2 lost a merge");
        let none: HashSet<&str> = ["ob-7"].into_iter().collect();
        assert_eq!(without_lines(text, &none).0, None);
    }

    #[test]
    fn a_chunk_id_names_its_document() {
        assert_eq!(
            chunk_of("lib-0a1b2c3d4e5f6789-12"),
            Some("0a1b2c3d4e5f6789")
        );
        assert_eq!(chunk_of("lib-0a1b-"), None);
        assert_eq!(chunk_of("lib-0a1b-x"), None);
        assert_eq!(chunk_of("ob-0a1b-3"), None);
    }

    #[test]
    fn a_query_keeps_each_case_it_took() {
        let mut out = BTreeSet::new();
        cases_in("Token ABC-1 and abc-1 and aBc-1", "abc-1", &mut out);
        let got: Vec<&str> = out.iter().map(String::as_str).collect();
        assert_eq!(got, vec!["ABC-1", "aBc-1", "abc-1"]);
    }

    #[test]
    fn replace_text_round_trips_with_escaped_forms() {
        let file = replace_text(&[
            "say \"hi\"".to_string(),
            "line\nbreak".to_string(),
            "regex:x".to_string(),
        ]);
        assert_eq!(
            file,
            "line\\nbreak==>***REMOVED***\nliteral:regex:x==>***REMOVED***\nsay \"hi\"==>***REMOVED***\nsay \\\"hi\\\"==>***REMOVED***\n"
        );
        let parsed = parse_replace_text(&file).unwrap();
        assert_eq!(parsed.len(), 4);
        assert!(parsed.iter().any(|(f, _)| f == b"regex:x"));
        assert!(parse_replace_text("regex:a.*==>b\n").is_err());
    }

    #[test]
    fn memory_ids_match_the_index() {
        let text = "# Memory\n\n## Operations\n\n- (2026-11-01) Deploys go through the queue\n";
        let docs = crate::index::sources::memory_docs(text, "MEMORY.md", Utc::now());
        assert_eq!(
            docs[0].id,
            memory_entry_id("Operations", "Deploys go through the queue")
        );
    }
}
