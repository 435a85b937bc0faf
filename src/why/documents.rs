//! Notes and library documents traced by `cairn why`: where each came from.
//!
//! A note ([`NoteTrace`]): its URL, when it was captured, the agent session that filed it, the
//! commit that added its file and the last that changed it (a hand edit shows there), whether
//! the working tree differs from HEAD, its decay and standing. A library chunk or document
//! ([`LibraryTrace`]): its document (path or URL, format, sha256 against the file now), when
//! it was added and in which commit, and the chunk's page, heading path, decay and standing
//! among the library's chunks.

use serde::Serialize;

use super::{Ask, QueryStanding, Score, query_standing, score};
use crate::error::Result;
use crate::index::{Decay, Index, Kind};
use crate::repo::Repo;

/// A discovery note: where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct NoteTrace {
    pub id: String,
    /// The file, relative to the root.
    pub at: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub tags: Vec<String>,
    pub relevance: String,
    pub captured: String,
    /// The agent session that filed it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The commit that added the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_in: Option<crate::git::PathCommit>,
    /// The last commit that changed it, when another did (an edit by hand, a redaction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_in: Option<crate::git::PathCommit>,
    /// Changed in the working tree since the last commit.
    pub uncommitted: bool,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}

/// A library chunk (or its document alone): where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryTrace {
    /// The document's id.
    pub document: String,
    pub title: String,
    /// The path (relative to the root when inside it) or URL the document was read from.
    pub source: String,
    pub format: crate::library::Format,
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    pub tags: Vec<String>,
    /// When it was added (the manifest's `added`).
    pub added: String,
    /// A copy in `vault/library/`, committed.
    pub copied: bool,
    /// The file now: `as read` (same sha256), `changed since` (re-add to read it again),
    /// `missing`, or `a URL` (not fetched by `why`).
    pub document_now: &'static str,
    /// The commit that added it to the manifest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_in: Option<crate::git::PathCommit>,
    pub chunks: usize,
    /// The chunk looked up, when the target was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ChunkRef>,
}

/// A library chunk: its place in its document.
#[derive(Debug, Clone, Serialize)]
pub struct ChunkRef {
    pub id: String,
    pub n: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub heading: Vec<String>,
    /// `title, p. N, Heading › Sub`, as search cites it.
    pub cite: String,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}

/// The note `target` names (its id, or its path relative to the root), traced.
pub(super) fn note_trace(
    repo: &Repo,
    index: &Index,
    ask: &Ask,
    decay: &Decay,
    target: &str,
) -> Result<Option<NoteTrace>> {
    let name = target.trim_start_matches("./");
    let name = name
        .strip_prefix(&format!("{}/", crate::note::DIR))
        .unwrap_or(name);
    let name = name.strip_suffix(".md").unwrap_or(name);
    if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
        return Ok(None);
    }
    let rel = format!("{}/{name}.md", crate::note::DIR);
    let Some(text) = crate::files::read_optional(&repo.path(&rel)).ok().flatten() else {
        return Ok(None);
    };
    // A note edited by hand into something that does not parse is still traced, as all body.
    let note = crate::note::Note::parse(&text).unwrap_or_else(|_| crate::note::Note {
        front: crate::note::Front::default(),
        body: text.clone(),
    });
    let commits = crate::git::path_commits(repo.root(), &rel, None).unwrap_or_default();
    let committed = crate::git::head_content(repo.root(), &rel).ok().flatten();
    let (doc, indexed) = match index.doc(name)? {
        Some(d) => (d, true),
        None => (crate::index::sources::note_doc(&note, &rel, ask.now), false),
    };
    let query = match &ask.query {
        Some(r) => Some(query_standing(index, &repo.config, r, &doc)?),
        None => None,
    };
    let added_in = commits.last().cloned();
    let changed_in = commits.first().filter(|_| commits.len() > 1).cloned();
    Ok(Some(NoteTrace {
        id: name.to_string(),
        at: rel,
        title: note.front.title.clone(),
        url: note.front.url.clone(),
        tags: note.front.tags.clone(),
        relevance: note.front.relevance.clone(),
        captured: note.front.captured.clone(),
        session: note.front.session.clone(),
        added_in,
        changed_in,
        uncommitted: committed.as_deref() != Some(text.as_bytes()),
        score: score(decay, &doc, indexed),
        query,
    }))
}

/// The library chunk or document `target` names (a chunk id, a document id, its path or
/// URL), traced; with the text `found` shows.
pub(super) fn library_trace(
    repo: &Repo,
    index: &Index,
    ask: &Ask,
    decay: &Decay,
    target: &str,
) -> Result<Option<(LibraryTrace, String)>> {
    let doc_of_chunk = target
        .strip_prefix("lib-")
        .and_then(|r| r.rsplit_once('-'))
        .map(|(d, _)| d);
    // A manifest that does not parse is not this trace's to report (`library list` does).
    let entries = crate::library::load(repo).unwrap_or_default();
    let Some(entry) = entries
        .iter()
        .find(|e| Some(e.id.as_str()) == doc_of_chunk || e.id == target || e.source() == target)
    else {
        return Ok(None);
    };
    let chunks = crate::library::read_chunks(repo, &entry.id);
    let chunk_rec = chunks.iter().find(|c| c.id == target);
    if doc_of_chunk.is_some() && chunk_rec.is_none() {
        return Ok(None);
    }
    let document_now = match (&entry.path, &entry.url) {
        (Some(p), _) => match std::fs::read(crate::library::resolve(repo, p)) {
            Ok(bytes) if crate::library::sha256(&bytes) == entry.sha256 => "as read",
            Ok(_) => "changed since",
            Err(_) => "missing",
        },
        _ => "a URL",
    };
    let needle = format!("\"id\":\"{}\"", entry.id);
    let added_in = crate::git::path_commits(
        repo.root(),
        crate::library::MANIFEST,
        Some(needle.as_bytes()),
    )
    .unwrap_or_default()
    .last()
    .cloned();
    let chunk = match chunk_rec {
        Some(c) => {
            let rel = crate::library::cache_rel(&entry.id);
            let (doc, indexed) = match index.doc(&c.id)? {
                Some(d) => (d, true),
                None => {
                    let added = chrono::DateTime::parse_from_rfc3339(&entry.added)
                        .map(|t| t.with_timezone(&chrono::Utc))
                        .unwrap_or_default();
                    (crate::index::sources::library_doc(c, &rel, added), false)
                }
            };
            let query = match &ask.query {
                Some(r) => {
                    // The library is its own collection: ranked among its chunks.
                    let mut r = r.clone();
                    r.filter.kinds = vec![Kind::Library];
                    Some(query_standing(index, &repo.config, &r, &doc)?)
                }
                None => None,
            };
            Some(ChunkRef {
                id: c.id.clone(),
                n: c.n,
                page: c.page,
                heading: c.heading.clone(),
                cite: crate::library::citation(c),
                score: score(decay, &doc, indexed),
                query,
            })
        }
        None => None,
    };
    let text = chunk_rec.map_or_else(
        || entry.title.clone(),
        |c| c.text.lines().next().unwrap_or_default().to_string(),
    );
    Ok(Some((
        LibraryTrace {
            document: entry.id.clone(),
            title: entry.title.clone(),
            source: entry.source().to_string(),
            format: entry.format,
            sha256: entry.sha256.clone(),
            pages: entry.pages,
            tags: entry.tags.clone(),
            added: entry.added.clone(),
            copied: entry.copied,
            document_now,
            added_in,
            chunks: chunks.len(),
            chunk,
        },
        text,
    )))
}
