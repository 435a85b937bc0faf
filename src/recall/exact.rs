//! `cairn search --exact`: the words as written, in any case, by scanning the files.
//!
//! No index, no ranking: every record whose text holds the phrase, newest first, with the file
//! and line it is on. Slog entries, observations (as folded: deleted ones are left out), ADRs
//! (any line of the file), MEMORY.md entries, turn cards and episodes
//! (`vault/sessions/AGENT/SESSION.jsonl`, their text as the index holds it) and notes (the
//! whole file, frontmatter included; one result a note) are scanned. Library chunks (`.cairn/library/ID.jsonl`, of the documents the
//! manifest names) only when [`Kind::Library`] is asked for by name, as every other search
//! leaves the library out; each cites its document, page and heading.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::index::{Kind, sources};
use crate::repo::Repo;
use crate::{adr, memory, slog, store};

#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub kind: Kind,
    pub id: String,
    pub text: String,
    pub time: String,
    /// `path:line`, relative to the repository root; for a library chunk, the document's
    /// path or URL as the manifest holds it.
    pub at: String,
    /// A library chunk's document, page and heading path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cite: Option<Cite>,
}

/// What a library chunk found by `search --exact --library` cites.
#[derive(Debug, Clone, Serialize)]
pub struct Cite {
    pub text: String,
    pub document: String,
    pub title: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub heading: Vec<String>,
}

/// Every record holding `phrase` (case-insensitive), newest first.
pub fn scan(repo: &Repo, phrase: &str, kinds: &[Kind]) -> Result<Vec<Found>> {
    let needle = phrase.to_lowercase();
    let wants = |k: Kind| (kinds.is_empty() && k != Kind::Library) || kinds.contains(&k);
    let hit = |text: &str| text.to_lowercase().contains(&needle);
    let rel = |p: &Path| {
        p.strip_prefix(repo.root())
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    let mut out = Vec::new();
    if wants(Kind::Slog) {
        for path in slog::day_files(repo)? {
            let parsed = slog::read_file(&path)?;
            for (line, e) in parsed.records {
                let doc = sources::slog_doc(&e, "");
                if hit(&doc.text) {
                    out.push(Found {
                        kind: Kind::Slog,
                        id: e.id,
                        text: doc.text,
                        time: e.ts,
                        at: format!("{}:{line}", rel(&path)),
                        cite: None,
                    });
                }
            }
        }
    }
    if wants(Kind::Observation) {
        for path in store::day_files(repo)? {
            let (lines, _) = store::read_file(&path)?;
            for (line, l) in lines {
                if let store::Line::Observation(o) = l
                    && hit(&o.observation)
                {
                    out.push(Found {
                        kind: Kind::Observation,
                        id: o.id,
                        text: o.observation,
                        time: o.timestamp,
                        at: format!("{}:{line}", rel(&path)),
                        cite: None,
                    });
                }
            }
        }
        // Leave out what was deleted since.
        let (folded, _) = store::load_all(repo)?;
        let deleted: std::collections::HashSet<&str> = folded
            .iter()
            .filter(|f| f.state == store::State::Deleted)
            .map(|f| f.obs.id.as_str())
            .collect();
        out.retain(|f| f.kind != Kind::Observation || !deleted.contains(f.id.as_str()));
    }
    if wants(Kind::Adr) {
        for rel_path in adr::record_files(repo)? {
            let text = std::fs::read_to_string(repo.path(&rel_path)).unwrap_or_default();
            let number = rel_path
                .rsplit('/')
                .next()
                .and_then(adr::number_of_file_name)
                .unwrap_or(0);
            let date = adr::parse(&repo.path(&rel_path), &rel_path, &text)
                .map(|a| a.date)
                .unwrap_or_default();
            for (i, line) in text.lines().enumerate() {
                if hit(line) {
                    out.push(Found {
                        kind: Kind::Adr,
                        id: format!("adr-{number}"),
                        text: line.trim().to_string(),
                        time: format!("{date}T00:00:00.000Z"),
                        at: format!("{rel_path}:{}", i + 1),
                        cite: None,
                    });
                }
            }
        }
    }
    if wants(Kind::Memory)
        && let Some(text) = crate::files::read_optional(&repo.path(memory::FILE))?
    {
        let parsed = memory::parse(&text);
        let entries = parsed
            .loose
            .iter()
            .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()));
        for e in entries {
            if hit(&e.text) {
                let date = e.date.clone().unwrap_or_default();
                out.push(Found {
                    kind: Kind::Memory,
                    id: format!("{}:{}", memory::FILE, e.line),
                    text: e.text.clone(),
                    time: format!("{date}T00:00:00.000Z"),
                    at: format!("{}:{}", memory::FILE, e.line),
                    cite: None,
                });
            }
        }
    }
    if wants(Kind::Card) || wants(Kind::Episode) {
        for f in sources::list(repo)?
            .into_iter()
            .filter(|f| f.kind == sources::SourceKind::Sessions)
        {
            // A session file that cannot be read, or a line that does not parse, is left to
            // the index and `cairn doctor` to report: a search scans what it can.
            let Ok(text) = std::fs::read_to_string(repo.path(&f.rel)) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                let Ok(record) = serde_json::from_str::<crate::cards::Record>(line) else {
                    continue;
                };
                let doc = match &record {
                    crate::cards::Record::Card(c) => sources::card_doc(c, &f.rel),
                    crate::cards::Record::Episode(e) => sources::episode_doc(e, &f.rel),
                };
                if wants(doc.kind) && (hit(&doc.text) || hit(&doc.title)) {
                    out.push(Found {
                        kind: doc.kind,
                        id: doc.id,
                        text: doc.text,
                        time: crate::time::format(doc.time),
                        at: format!("{}:{}", f.rel, i + 1),
                        cite: None,
                    });
                }
            }
        }
    }
    if wants(Kind::Note) {
        scan_notes(repo, &hit, &mut out)?;
    }
    if wants(Kind::Library) {
        scan_library(repo, &hit, &mut out)?;
    }
    out.sort_by(|a, b| b.time.cmp(&a.time).then(a.at.cmp(&b.at)));
    Ok(out)
}

/// Notes: each file holding the phrase (frontmatter included: the URL and the relevance are
/// what a person remembers), at its first line holding it, dated by when it was captured.
fn scan_notes(repo: &Repo, hit: &dyn Fn(&str) -> bool, out: &mut Vec<Found>) -> Result<()> {
    let Ok(read) = crate::files::read_dir_real(&repo.path(crate::note::DIR)) else {
        return Ok(());
    };
    let mut names: Vec<String> = read
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    for name in names {
        let rel = format!("{}/{name}", crate::note::DIR);
        // A note that cannot be read is left to the index and `cairn doctor` to report.
        let Ok(text) = std::fs::read_to_string(repo.path(&rel)) else {
            continue;
        };
        if !hit(&text) {
            continue;
        }
        let captured = crate::note::Note::parse(&text)
            .map(|n| n.front.captured)
            .unwrap_or_default();
        // One result a note (it is one record), at the first line holding the phrase.
        // (A phrase across a line break holds in the file and in no line: its first line.)
        let first = text.lines().enumerate().find(|(_, l)| hit(l));
        if let Some((i, line)) = first.or_else(|| text.lines().enumerate().next()) {
            out.push(Found {
                kind: Kind::Note,
                id: name.trim_end_matches(".md").to_string(),
                text: line.trim().to_string(),
                time: captured,
                at: format!("{rel}:{}", i + 1),
                cite: None,
            });
        }
    }
    Ok(())
}

/// Library chunks of the documents the manifest names, each citing its document.
fn scan_library(repo: &Repo, hit: &dyn Fn(&str) -> bool, out: &mut Vec<Found>) -> Result<()> {
    for entry in crate::library::load(repo)? {
        for c in crate::library::read_chunks(repo, &entry.id) {
            if !(hit(&c.text) || c.heading.iter().any(|h| hit(h))) {
                continue;
            }
            out.push(Found {
                kind: Kind::Library,
                id: c.id.clone(),
                time: entry.added.clone(),
                at: entry.source().to_string(),
                cite: Some(Cite {
                    text: crate::library::citation(&c),
                    document: c.doc.clone(),
                    title: c.title.clone(),
                    source: c.source.clone(),
                    page: c.page,
                    heading: c.heading.clone(),
                }),
                text: c.text,
            });
        }
    }
    Ok(())
}
