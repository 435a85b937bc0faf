//! The documents the index holds, one builder per kind of record: a slog entry, a folded
//! observation, a turn card and an episode, a note, a library chunk, an ADR and MEMORY.md's
//! entries (and the events that change an observation's document).

use chrono::{DateTime, NaiveDate, Utc};

use crate::index::{Doc, Kind, hash};
use crate::store::{self, Event, Op};
use crate::{adr, memory, slog};

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
