//! `cairn why TEXT|ID`: what became of a text, followed through the pipeline.
//!
//! A target is an id when it is one word with a record id's shape (`ob-…`, `tc-…`, `ep-…`,
//! `sl-…`, `pr-…`, `mem-…`, `lib-…-N`, `adr-N`, `MEMORY.md:N`), or names a note (its id
//! `DAY-SLUG` or its path) or a library document (its id, path or URL), else a text. An id is looked up directly: in the
//! observation store (stored, or merged away: a `merge` event whose `from` is the id), the
//! session files, the proposals, and the index for every other kind. A text is found by exact
//! match (case-insensitive, the files scanned as `search --exact` scans them, deleted
//! observations included) and by nearest meaning among observations and turn cards (the
//! index's vectors, at least `[recall] relevance_cosine`), each found record saying which.
//!
//! Each observation and card found is then traced: its transcript (the card's session, agent
//! and turn, the transcript path `.cairn/sessions.json` knows and whether it still exists), the
//! observer's `observed` events and what it extracted from the turn, the gate's verdict and the
//! rule behind it (the record keeps the verdict, not the rule: the rule is named by running the
//! gate's rules again on the stored text, and said to be so), category and confidence, its
//! events (merge, supersede, stale, delete, restore) with their times, recall counts, the
//! score's decay now (the index's [`Decay`], as recall applies it), where it stands for a query
//! ([`crate::recall::standing`]: recall's own ranking), the proposals citing it and the
//! MEMORY.md entries that say it. A text is also put to the gate itself (what `remember` would
//! make of it) and to dedup (the id it would have had, merged away already; the stored
//! observation it would merge into).
//!
//! A note or a library chunk (or document) named by the target is traced on its own, by
//! [`documents`]: where it came from (URL or path, captured or added, session, commits).
//!
//! Nothing is written: `why` reads the files, the index and `.cairn/` as they are.

//! The parts: [`report`] (what a trace says, the types `--json` prints), [`lookup`] (the
//! observation store, cards and session files read once), [`standing`] (the gate's verdict,
//! the score's decay and a query's ranking of a record), [`documents`] (notes and library
//! documents) and [`text`] (the human rendering).

pub mod documents;
mod lookup;
mod report;
mod standing;
pub mod text;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::index::{Decay, Doc, Filter, Index, Kind};
use crate::observe::gate::Verdict;
use crate::repo::Repo;
use crate::store::{self};

/// How many observations and cards a text's trace follows in full (the rest are listed).
pub const TRACED: usize = 5;
/// How many records holding the target a trace lists (the rest are counted).
pub const LISTED: usize = 20;
/// How many records nearest in meaning a text's trace lists.
const NEAREST: usize = 3;

pub use documents::{ChunkRef, LibraryTrace, NoteTrace};
use documents::{library_trace, note_trace};
use lookup::{StoreView, all_cards};
pub use report::{
    Ask, CardTrace, EventAt, Found, GateCheck, MemoryRef, MergedAway, ObservationTrace, ObservedBy,
    OtherTrace, ProposalRef, QueryStanding, Score, Trace, TranscriptRef, WouldMerge,
};
pub use standing::gate_check;
use standing::{observation_doc, proposed_verdict, query_standing, score};

/// Whether `s` has the shape of a record id.
pub fn looks_like_id(s: &str) -> bool {
    let s = s.trim();
    if s.is_empty() || s.contains(char::is_whitespace) {
        return false;
    }
    let hex_after = |p: &str| {
        s.strip_prefix(p)
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let chunk = s
        .strip_prefix("lib-")
        .and_then(|r| r.rsplit_once('-'))
        .is_some_and(|(doc, n)| {
            !doc.is_empty()
                && doc.chars().all(|c| c.is_ascii_hexdigit())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
        });
    chunk
        || ["ob-", "tc-", "ep-", "sl-", "pr-", "mem-"]
            .iter()
            .any(|p| hex_after(p))
        || s.strip_prefix("adr-")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        || s.strip_prefix("MEMORY.md:")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Follows `ask.target` through the pipeline. `transcripts` maps each transcript path to the
/// session file it renders to (`.cairn/sessions.json`).
pub fn trace(
    repo: &Repo,
    index: &Index,
    ask: &Ask,
    transcripts: &BTreeMap<String, String>,
) -> Result<Trace> {
    let config = &repo.config;
    let store = StoreView::read(repo)?;
    let cards = all_cards(repo)?;
    let decay = Decay::from_config(&config.recall, ask.now);
    let target = ask.target.trim().to_string();
    let by_id = looks_like_id(&target);
    let mut trace = Trace {
        target: target.clone(),
        by: if by_id { "id" } else { "text" },
        found: Vec::new(),
        found_total: 0,
        merged_away: Vec::new(),
        gate: None,
        would_merge: None,
        observations: Vec::new(),
        cards: Vec::new(),
        others: Vec::new(),
        proposals: Vec::new(),
        note: None,
        library: None,
    };
    if let Some(n) = note_trace(repo, index, ask, &decay, &target)? {
        trace.by = "id";
        trace.found.push(Found {
            kind: "note".into(),
            id: n.id.clone(),
            how: "id",
            similarity: None,
            at: n.at.clone(),
            text: n.title.clone(),
        });
        trace.found_total = 1;
        trace.note = Some(n);
        return Ok(trace);
    }
    if let Some((l, text)) = library_trace(repo, index, ask, &decay, &target)? {
        trace.by = "id";
        trace.found.push(Found {
            kind: "library".into(),
            id: l
                .chunk
                .as_ref()
                .map_or_else(|| l.document.clone(), |c| c.id.clone()),
            how: "id",
            similarity: None,
            at: l.source.clone(),
            text,
        });
        trace.found_total = 1;
        trace.library = Some(l);
        return Ok(trace);
    }
    let proposals = crate::proposals::load(repo)?;
    // The observations and cards to trace in full, in the order found.
    let mut obs_ids: Vec<String> = Vec::new();
    let mut card_ids: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, id: &str| {
        if !v.iter().any(|x| x == id) {
            v.push(id.to_string());
        }
    };
    if by_id {
        if let Some(f) = store.get(&target) {
            trace.found.push(Found {
                kind: "observation".into(),
                id: target.clone(),
                how: "id",
                similarity: None,
                at: store.at.get(&target).cloned().unwrap_or_default(),
                text: f.obs.observation.clone(),
            });
            push(&mut obs_ids, &target);
        } else if let Some(m) = store.merged_from.get(&target) {
            trace.merged_away.push(m.clone());
            push(&mut obs_ids, &m.into);
        } else if let Some((rel, line, c)) = cards.iter().find(|(_, _, c)| c.id == target) {
            trace.found.push(Found {
                kind: "card".into(),
                id: c.id.clone(),
                how: "id",
                similarity: None,
                at: format!("{rel}:{line}"),
                text: c.head(),
            });
            push(&mut card_ids, &target);
        } else if let Some(p) = proposals.get(&target) {
            trace.found.push(Found {
                kind: "proposal".into(),
                id: target.clone(),
                how: "id",
                similarity: None,
                at: p.file.clone(),
                text: p.proposal.text.clone(),
            });
            trace.proposals.push(proposal_ref(p));
            for o in &p.proposal.observations {
                push(&mut obs_ids, o);
            }
        } else if let Some(doc) = match memory_line(&target) {
            Some(line) => memory_doc(repo, line, ask.now)?,
            None => index.doc(&target)?,
        } {
            trace.found.push(Found {
                kind: doc.kind.as_str().into(),
                id: doc.id.clone(),
                how: "id",
                similarity: None,
                at: doc.file.clone(),
                text: doc.text.lines().next().unwrap_or_default().to_string(),
            });
            let query = match &ask.query {
                Some(r) => Some(query_standing(index, config, r, &doc)?),
                None => None,
            };
            trace.others.push(OtherTrace {
                id: doc.id.clone(),
                kind: doc.kind,
                score: score(&decay, &doc, true),
                query,
            });
        }
    } else {
        let needle = target.to_lowercase();
        let min_chars = config.gate.min_chars;
        trace.gate = Some(gate_check(
            &target,
            Verdict::Allow,
            0.9,
            min_chars,
            "as-given",
        ));
        // Exact: observations as stored (deleted ones too), then every other kind as
        // `search --exact` scans them.
        for f in &store.folded {
            if f.obs.observation.to_lowercase().contains(&needle) {
                trace.found.push(Found {
                    kind: "observation".into(),
                    id: f.obs.id.clone(),
                    how: "exact",
                    similarity: None,
                    at: store.at.get(&f.obs.id).cloned().unwrap_or_default(),
                    text: f.obs.observation.clone(),
                });
                push(&mut obs_ids, &f.obs.id);
            }
        }
        let kinds = [
            Kind::Slog,
            Kind::Adr,
            Kind::Memory,
            Kind::Card,
            Kind::Episode,
        ];
        for hit in crate::recall::exact::scan(repo, &target, &kinds)? {
            if hit.kind == Kind::Card {
                push(&mut card_ids, &hit.id);
            }
            let text = snippet(&hit.text, &needle);
            trace.found.push(Found {
                kind: hit.kind.as_str().into(),
                id: hit.id,
                how: "exact",
                similarity: None,
                at: hit.at,
                text,
            });
        }
        // Nearest by meaning among observations and cards, past what was found exactly.
        let filter = Filter {
            kinds: vec![Kind::Observation, Kind::Card],
            category: None,
            include_hold: true,
        };
        let floor = config.recall.relevance_cosine;
        let hits = index.search_vectors(&target, &filter, NEAREST * 4, floor)?;
        let mut near = 0;
        for h in hits {
            if near >= NEAREST || trace.found.iter().any(|f| f.id == h.doc.id) {
                continue;
            }
            near += 1;
            match h.doc.kind {
                Kind::Card => push(&mut card_ids, &h.doc.id),
                _ => push(&mut obs_ids, &h.doc.id),
            }
            trace.found.push(Found {
                kind: h.doc.kind.as_str().into(),
                id: h.doc.id.clone(),
                how: "meaning",
                similarity: Some(h.raw),
                at: h.doc.file.clone(),
                text: h.doc.text.lines().next().unwrap_or_default().to_string(),
            });
        }
        // Dedup: the ids the text would have had (from `remember`, or from a card holding
        // it), merged into another already; and what a new copy would merge into.
        let mut sources: Vec<String> = vec!["cli".into()];
        sources.extend(card_ids.iter().cloned());
        for source in &sources {
            let id = store::observation_id(&target, source);
            if let Some(m) = store.merged_from.get(&id) {
                trace.merged_away.push(m.clone());
                push(&mut obs_ids, &m.into);
            }
        }
        let threshold = config.gate.dedup_threshold;
        if let Some(m) = crate::observe::dedup::nearest(index, &target, threshold, ask.now)? {
            trace.would_merge = Some(WouldMerge {
                into: m.into,
                similarity: m.similarity,
                threshold,
            });
        }
    }
    // Cards of the observations, so that each observation's turn is traced too.
    for id in obs_ids.iter().take(TRACED) {
        if let Some(f) = store.get(id)
            && f.obs.source.starts_with("tc-")
            && cards.iter().any(|(_, _, c)| c.id == f.obs.source)
        {
            push(&mut card_ids, &f.obs.source);
        }
    }
    trace.found_total = trace.found.len();
    trace.found.truncate(LISTED);
    let counts = crate::recall::counts::read(repo)?;
    let memory_text =
        crate::files::read_optional(&repo.path(crate::memory::FILE))?.unwrap_or_default();
    let memory = crate::memory::parse(&memory_text);
    let entries: Vec<&crate::memory::Entry> = memory
        .loose
        .iter()
        .chain(memory.sections.iter().flat_map(|s| s.entries.iter()))
        .collect();
    for id in obs_ids.iter().take(TRACED) {
        let Some(f) = store.get(id) else { continue };
        let observer = store
            .observed
            .get(&f.obs.source)
            .and_then(|o| o.last())
            .map(|o| o.observer.as_str());
        let mut gate = gate_check(
            &f.obs.observation,
            proposed_verdict(f, observer),
            f.obs.write_confidence,
            config.gate.min_chars,
            "re-run",
        );
        if gate.verdict != f.obs.write_verdict {
            gate.stored = Some(f.obs.write_verdict);
        }
        let file = store
            .at
            .get(id)
            .and_then(|a| a.rsplit_once(':'))
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        let (doc, indexed) = observation_doc(index, f, &file)?;
        let query = match &ask.query {
            Some(r) => Some(query_standing(index, config, r, &doc)?),
            None => None,
        };
        let citing: Vec<&crate::proposals::Folded> = proposals
            .proposals
            .iter()
            .filter(|p| p.proposal.observations.iter().any(|o| o == id))
            .collect();
        let said = crate::store::normalize(&f.obs.observation);
        let mut memory_refs = Vec::new();
        for e in &entries {
            let entry = crate::store::normalize(&e.text);
            let how = if !said.is_empty() && entry.contains(&said) {
                Some("exact".to_string())
            } else {
                citing
                    .iter()
                    .filter(|p| p.state == crate::proposals::State::Promoted)
                    .find(|p| {
                        let text = p.final_text.as_deref().unwrap_or(&p.proposal.text);
                        crate::store::normalize(text) == entry
                    })
                    .map(|p| p.proposal.id.clone())
            };
            if let Some(how) = how {
                memory_refs.push(MemoryRef {
                    line: e.line,
                    text: e.text.clone(),
                    how,
                });
            }
        }
        let count = counts.get(id);
        trace.observations.push(ObservationTrace {
            id: id.clone(),
            text: f.obs.observation.clone(),
            at: store.at.get(id).cloned().unwrap_or_default(),
            state: f.state,
            superseded_by: f.superseded_by.clone(),
            time: f.obs.timestamp.clone(),
            source: f.obs.source.clone(),
            session_id: f.obs.session_id.clone(),
            card: f
                .obs
                .source
                .starts_with("tc-")
                .then(|| f.obs.source.clone()),
            observation_type: f.obs.observation_type.clone(),
            priority: f.obs.priority.clone(),
            gate,
            write_confidence: f.obs.write_confidence,
            category: f.obs.category_id.clone(),
            category_confidence: f.obs.category_confidence,
            taxonomy_version: f.obs.taxonomy_version,
            merged_count: f.obs.merged_count,
            events: store.events.get(id).cloned().unwrap_or_default(),
            recalls: count.map_or(0, |c| c.count),
            last_recall: count.map(|c| c.last.clone()),
            score: score(&decay, &doc, indexed),
            query,
            proposals: citing.into_iter().map(proposal_ref).collect(),
            memory: memory_refs,
        });
    }
    let existing: HashSet<&str> = store.folded.iter().map(|f| f.obs.id.as_str()).collect();
    for id in card_ids.iter().take(TRACED) {
        let Some((rel, line, c)) = cards.iter().find(|(_, _, c)| c.id == *id) else {
            continue;
        };
        let paths: Vec<TranscriptRef> = transcripts
            .iter()
            .filter(|(_, file)| *file == rel)
            .map(|(path, _)| TranscriptRef {
                path: path.clone(),
                exists: Path::new(path).exists(),
            })
            .collect();
        let extracted: Vec<String> = store
            .folded
            .iter()
            .filter(|f| f.obs.source == c.id && existing.contains(f.obs.id.as_str()))
            .map(|f| f.obs.id.clone())
            .collect();
        let (doc, indexed) = match index.doc(&c.id)? {
            Some(d) => (d, true),
            None => (crate::index::sources::card_doc(c, rel), false),
        };
        let query = match &ask.query {
            Some(r) => Some(query_standing(index, config, r, &doc)?),
            None => None,
        };
        trace.cards.push(CardTrace {
            id: c.id.clone(),
            agent: c.agent.clone(),
            session: c.session.clone(),
            turn: c.turn,
            ts: c.ts.clone(),
            outcome: c.outcome.clone(),
            asked: c.head(),
            trivial: c.trivial,
            at: format!("{rel}:{line}"),
            transcripts: paths,
            observed: store.observed.get(&c.id).cloned().unwrap_or_default(),
            extracted,
            score: score(&decay, &doc, indexed),
            query,
        });
    }
    Ok(trace)
}

/// The line of a `MEMORY.md:N` id.
fn memory_line(id: &str) -> Option<usize> {
    id.strip_prefix("MEMORY.md:")?.parse().ok()
}

/// The document of the MEMORY.md entry at `line` (as the index makes it), if one is there.
fn memory_doc(repo: &Repo, line: usize, now: DateTime<Utc>) -> Result<Option<Doc>> {
    let Some(text) = crate::files::read_optional(&repo.path(crate::memory::FILE))? else {
        return Ok(None);
    };
    let memory = crate::memory::parse(&text);
    let Some(entry) = memory
        .loose
        .iter()
        .chain(memory.sections.iter().flat_map(|s| s.entries.iter()))
        .find(|e| e.line == line)
    else {
        return Ok(None);
    };
    Ok(
        crate::index::sources::memory_docs(&text, crate::memory::FILE, now)
            .into_iter()
            .find(|d| d.text == entry.text)
            .map(|mut d| {
                d.file = format!("{}:{line}", crate::memory::FILE);
                d
            }),
    )
}

fn proposal_ref(p: &crate::proposals::Folded) -> ProposalRef {
    ProposalRef {
        id: p.proposal.id.clone(),
        state: p.state,
        tier: p.tier.map(|t| t.as_str()),
        reason: p.reason.clone(),
        section: p.proposal.section.clone(),
        text: p
            .final_text
            .clone()
            .unwrap_or_else(|| p.proposal.text.clone()),
        commit: p.commit.clone(),
    }
}

/// The line of `text` that holds `needle` (lower case), else its first line.
fn snippet(text: &str, needle: &str) -> String {
    text.lines()
        .find(|l| l.to_lowercase().contains(needle))
        .or_else(|| text.lines().next())
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_told_from_texts_by_their_shape() {
        for id in [
            "ob-73f7559fdcb0df01",
            "tc-787e50bcbd65",
            "ep-0a1b",
            "sl-00ff",
            "mem-0a1b2c3d4e5f",
            "pr-1234abcd",
            "adr-7",
            "MEMORY.md:12",
            "lib-0a1b2c3d4e5f6789-12",
        ] {
            assert!(looks_like_id(id), "{id}");
        }
        for text in [
            "don't overcomplicate",
            "ob-",
            "ob-notahash",
            "adr-seven",
            "tc-12 and more",
            "ok",
            "lib-0a1b-",
            "lib-notahex-3",
        ] {
            assert!(!looks_like_id(text), "{text}");
        }
    }
}
