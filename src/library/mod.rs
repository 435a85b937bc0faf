//! The document library: reference documents (Markdown, plain text, HTML, PDF) searched as a
//! collection of their own, never recalled unasked.
//!
//! On disk:
//! - `vault/library.jsonl` (committed, the truth): one [`Entry`] a line, sorted by source: the
//!   document's path (relative to the repository root when inside it, else absolute) or URL,
//!   its sha256 and size, title, tags, pages, chunk count, format and when it was added. The
//!   documents themselves are not copied unless asked (`--copy`: into `vault/library/`, and
//!   committed).
//! - `.cairn/library/ID.jsonl` (derived): the document's chunks ([`ChunkRecord`]), what the
//!   index reads (kind `library`). A missing one is made again from the document
//!   ([`ensure_chunks`]); an entry removed from the manifest takes its chunks out of the index
//!   (its file is no longer a source).
//! - `.cairn/library/stat.json` (derived): the size and mtime each document had when its
//!   sha256 was last computed, so re-adding an unchanged file costs a stat.

pub mod chunk;
pub mod extract;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::repo::Repo;

pub const MANIFEST: &str = "vault/library.jsonl";
/// Where `--copy` puts documents (committed).
pub const COPIES: &str = "vault/library";
/// The derived chunk files.
pub const CACHE: &str = ".cairn/library";
const STAT: &str = ".cairn/library/stat.json";

/// A document larger than this is refused (a file or a fetched URL).
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// How long a URL may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// One document of the library, as the manifest holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub format: Format,
    pub sha256: String,
    pub size: u64,
    pub title: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    pub chunks: usize,
    pub added: String,
    /// The file is a copy in `vault/library/`, committed with the manifest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copied: bool,
}

impl Entry {
    /// The path or URL, as given.
    pub fn source(&self) -> &str {
        self.path.as_deref().or(self.url.as_deref()).unwrap_or("")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Text,
    Html,
    Pdf,
}

impl Format {
    /// From a file name's extension.
    pub fn of_name(name: &str) -> Option<Format> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" | "mdx" => Some(Format::Markdown),
            "txt" | "text" | "rst" | "adoc" => Some(Format::Text),
            "html" | "htm" | "xhtml" => Some(Format::Html),
            "pdf" => Some(Format::Pdf),
            _ => None,
        }
    }

    /// From a reply's content type, else the URL's name, else HTML.
    pub fn of_reply(content_type: &str, url: &str) -> Format {
        match content_type {
            "application/pdf" => Format::Pdf,
            "text/markdown" | "text/x-markdown" => Format::Markdown,
            "text/plain" => Format::of_name(url).unwrap_or(Format::Text),
            "text/html" | "application/xhtml+xml" => Format::Html,
            _ => Format::of_name(url).unwrap_or(Format::Html),
        }
    }
}

/// One chunk as `.cairn/library/ID.jsonl` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// `lib-DOCID-N`.
    pub id: String,
    pub doc: String,
    pub n: usize,
    /// The document's title.
    pub title: String,
    /// The document's path or URL.
    pub source: String,
    pub heading: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub text: String,
    /// When the document was added (the manifest's `added`); empty in a chunk file written
    /// before it was kept, whose chunks take the chunk file's time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub added: String,
}

/// A document read and cut.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub title: String,
    pub pages: Option<u32>,
    pub chunks: Vec<chunk::Chunk>,
    /// PDF pages that gave no text.
    pub empty_pages: u32,
}

/// The id of a document: from its source (path or URL), so a changed file keeps its id.
pub fn id_of(source: &str) -> String {
    let h = Sha256::digest(source.as_bytes());
    h.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads and cuts a document; `name` gives the title when the document has none.
pub fn prepare(bytes: &[u8], format: Format, name: &str) -> std::result::Result<Prepared, String> {
    let fallback = name
        .rsplit('/')
        .next()
        .unwrap_or(name)
        .rsplit_once('.')
        .map_or(name, |(stem, _)| stem)
        .to_string();
    let text = || String::from_utf8_lossy(bytes).into_owned();
    Ok(match format {
        Format::Markdown => {
            let t = text();
            let chunks = chunk::markdown(&t);
            let title = first_heading(&t).unwrap_or(fallback);
            Prepared {
                title,
                pages: None,
                chunks,
                empty_pages: 0,
            }
        }
        Format::Text => Prepared {
            title: fallback,
            pages: None,
            chunks: chunk::plain(&text(), None),
            empty_pages: 0,
        },
        Format::Html => {
            let page = extract::html(bytes);
            Prepared {
                title: page
                    .title
                    .or_else(|| page.headings.first().cloned())
                    .unwrap_or(fallback),
                pages: None,
                chunks: chunk::marked_text(&page.text, None),
                empty_pages: 0,
            }
        }
        Format::Pdf => {
            let pdf = extract::pdf_read(bytes).map_err(|e| e.to_string())?;
            let pages = pdf.pages;
            let mut chunks = Vec::new();
            let mut empty = 0;
            for (i, p) in pages.iter().enumerate() {
                if p.trim().is_empty() {
                    empty += 1;
                }
                chunks.extend(chunk::plain(p, Some(i as u32 + 1)));
            }
            Prepared {
                title: pdf.title.unwrap_or(fallback),
                pages: Some(pages.len() as u32),
                chunks,
                empty_pages: empty,
            }
        }
    })
}

fn first_heading(md: &str) -> Option<String> {
    md.lines()
        .filter_map(extract::heading_line)
        .find(|(l, _)| *l == 1)
        .map(|(_, t)| t.to_string())
}

/// The manifest, in order. A line that is not an entry is bad input naming `file:line`.
pub fn load(repo: &Repo) -> Result<Vec<Entry>> {
    let Some(text) = crate::files::read_optional(&repo.path(MANIFEST))? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(line).map_err(|e| {
            Error::bad_input(format!("{MANIFEST}:{}: not a library entry ({e})", i + 1))
                .with_fix(format!("correct or remove line {} of {MANIFEST}", i + 1))
        })?;
        out.push(entry);
    }
    Ok(out)
}

/// The manifest's bytes for `entries` (sorted by source).
pub fn render(entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.source().cmp(b.source()));
    let mut out = String::new();
    for e in sorted {
        out.push_str(&serde_json::to_string(e).expect("an entry serializes"));
        out.push('\n');
    }
    out
}

/// The derived chunk file of a document, relative to the root.
pub fn cache_rel(id: &str) -> String {
    format!("{CACHE}/{id}.jsonl")
}

/// Writes a document's chunk file (atomically).
pub fn write_chunks(repo: &Repo, entry: &Entry, chunks: &[chunk::Chunk]) -> Result<()> {
    let dir = repo.path(CACHE);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    crate::repo::ignore_derived(repo)?;
    let mut out = String::new();
    for (n, c) in chunks.iter().enumerate() {
        let rec = ChunkRecord {
            id: format!("lib-{}-{n}", entry.id),
            doc: entry.id.clone(),
            n,
            title: entry.title.clone(),
            source: entry.source().to_string(),
            heading: c.heading.clone(),
            page: c.page,
            text: c.text.clone(),
            added: entry.added.clone(),
        };
        out.push_str(&serde_json::to_string(&rec).expect("a chunk serializes"));
        out.push('\n');
    }
    crate::files::write_atomic(&repo.path(&cache_rel(&entry.id)), out.as_bytes())
}

/// A document's chunks as its chunk file holds them (none when it is missing).
pub fn read_chunks(repo: &Repo, id: &str) -> Vec<ChunkRecord> {
    std::fs::read_to_string(repo.path(&cache_rel(id)))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// What a document was when its sha256 was last computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i128,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            size: meta.len(),
            mtime_ns: crate::files::mtime_ns(meta),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stats {
    /// Document id → (stat, the sha256 it had then).
    #[serde(default)]
    pub files: BTreeMap<String, (Stat, String)>,
}

pub fn load_stats(repo: &Repo) -> Stats {
    std::fs::read_to_string(repo.path(STAT))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

pub fn save_stats(repo: &Repo, stats: &Stats) -> Result<()> {
    let dir = repo.path(CACHE);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    let text = serde_json::to_string(stats).expect("stats serialize");
    crate::files::write_atomic(&repo.path(STAT), text.as_bytes())
}

/// How a path is written in the manifest: relative to the root when inside it.
pub fn source_path(repo: &Repo, path: &Path) -> String {
    match path.strip_prefix(repo.root()) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// The file a manifest path names.
pub fn resolve(repo: &Repo, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        repo.root().join(p)
    }
}

/// Makes the chunk file of every entry that lacks one (after `.cairn/` was deleted) from its
/// document; returns warnings for the documents that could not be read.
pub fn ensure_chunks(repo: &Repo, entries: &[Entry]) -> Vec<String> {
    let mut warnings = Vec::new();
    // One listing of the cache folder, not a `stat` a document: a search of a library of
    // 5,000 documents spent most of its time here.
    let present = chunk_files(repo);
    for e in entries {
        if present.contains(&format!("{}.jsonl", e.id)) || repo.path(&cache_rel(&e.id)).is_file() {
            continue;
        }
        let bytes = match (&e.path, &e.url) {
            (Some(p), _) => std::fs::read(resolve(repo, p)).map_err(|err| err.to_string()),
            (None, Some(u)) => crate::provider::fetch::get(u, FETCH_TIMEOUT, MAX_BYTES)
                .map(|f| f.body)
                .map_err(|err| err.to_string()),
            (None, None) => Err("no path or URL".to_string()),
        };
        let made = bytes
            .and_then(|b| prepare(&b, e.format, e.source()))
            .and_then(|p| write_chunks(repo, e, &p.chunks).map_err(|err| err.to_string()));
        if let Err(err) = made {
            warnings.push(format!(
                "library: {} could not be read again ({err}); its chunks are not searchable until `cairn library add` reads it",
                e.source()
            ));
        }
    }
    warnings
}

/// The names of the regular files in the cache folder (a link is looked at on its own).
fn chunk_files(repo: &Repo) -> std::collections::HashSet<String> {
    std::fs::read_dir(repo.path(CACHE))
        .map(|read| {
            read.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The time a document was added, as the manifest writes it.
pub fn stamp(now: DateTime<Utc>) -> String {
    crate::time::format(now)
}

/// The chunks behind search results (ids `lib-DOC-N`), by id: what a result cites (document,
/// heading path, page). Each document's chunk file is read once.
pub fn chunks_of<'a>(
    repo: &Repo,
    ids: impl IntoIterator<Item = &'a str>,
) -> std::collections::HashMap<String, ChunkRecord> {
    let mut docs: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for id in ids {
        if let Some((doc, _)) = id.strip_prefix("lib-").and_then(|r| r.rsplit_once('-')) {
            docs.entry(doc.to_string()).or_default().push(id);
        }
    }
    let mut out = std::collections::HashMap::new();
    for (doc, wanted) in docs {
        let Ok(text) = std::fs::read_to_string(repo.path(&cache_rel(&doc))) else {
            continue;
        };
        // Only a line that holds a wanted id is parsed (a search cites a few chunks of
        // documents of tens): the id, JSON-quoted, is in the line as written.
        let quoted: Vec<String> = wanted
            .iter()
            .map(|w| serde_json::to_string(w).unwrap_or_default())
            .collect();
        for line in text.lines() {
            if !quoted.iter().any(|q| line.contains(q.as_str())) {
                continue;
            }
            if let Ok(c) = serde_json::from_str::<ChunkRecord>(line)
                && wanted.contains(&c.id.as_str())
            {
                out.insert(c.id.clone(), c);
            }
        }
    }
    out
}

/// How a result cites its chunk: `title, p. 3, Install › On Linux`.
pub fn citation(c: &ChunkRecord) -> String {
    let mut s = c.title.clone();
    if let Some(p) = c.page {
        s.push_str(&format!(", p. {p}"));
    }
    if !c.heading.is_empty() {
        s.push_str(&format!(", {}", c.heading.join(" › ")));
    }
    s
}

/// Removes the chunk files (and the stat lines) of documents the manifest no longer names:
/// what `forget` and a killed `library remove` leave behind. Returns the files removed,
/// relative to the root.
pub fn drop_orphans(repo: &Repo) -> Result<Vec<String>> {
    let named: std::collections::HashSet<String> =
        crate::files::read_optional(&repo.path(MANIFEST))?
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
            .map(|e| e.id)
            .collect();
    let Ok(read) = std::fs::read_dir(repo.path(CACHE)) else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if named.contains(id) {
            continue;
        }
        let rel = cache_rel(id);
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed.push(rel),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&rel, &e)),
        }
    }
    let mut stats = load_stats(repo);
    let before = stats.files.len();
    stats.files.retain(|id, _| named.contains(id));
    if stats.files.len() != before {
        save_stats(repo, &stats)?;
    }
    removed.sort();
    Ok(removed)
}
