//! Admitting candidates: the one path from "something says this is worth remembering" to lines
//! of the store, shared by `import observations` and `observe`.
//!
//! Each candidate passes the write gate (unless raw), gets its category and its id from its
//! content; an id already stored (or already merged into another) is a duplicate; then dedup by
//! meaning against what is stored and what this batch keeps: above the threshold the nearest
//! one gets a merge event naming the candidate's id (so admitting it again merges nothing
//! twice) and nothing new is inserted. Nothing is written here: the caller appends the lines.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use super::Observation;
use super::dedup::{self, Merge};
use super::write::{self, Candidate};
use crate::error::Result;
use crate::index::{Filter, Index, Kind};
use crate::observe::gate::Verdict;

/// The settings of one admission.
pub struct Settings<'a> {
    /// Skip the gate and dedup by meaning (ids still dedup).
    pub raw: bool,
    /// The source of candidates that name none.
    pub default_source: &'a str,
    pub min_chars: usize,
    pub threshold: f64,
    pub now: DateTime<Utc>,
}

/// What an admission decided.
#[derive(Debug, Default)]
pub struct Admitted {
    /// Observation and merge-event lines to append, in order.
    pub lines: Vec<String>,
    /// The observations inserted.
    pub kept: Vec<Observation>,
    pub allowed: u64,
    pub held: u64,
    pub discarded: u64,
    pub duplicates: u64,
    pub merged: u64,
}

/// Runs `candidates` through the gate, id dedup and (with `index`) dedup by meaning.
/// `seen` holds the ids stored so far and is extended with the ones admitted.
pub fn admit(
    candidates: &[Candidate],
    settings: &Settings,
    seen: &mut HashSet<String>,
    index: Option<&Index>,
    on_each: &mut dyn FnMut(),
) -> Result<Admitted> {
    let mut out = Admitted::default();
    let mut batch: Vec<(String, String, Vec<f32>)> = Vec::new();
    for c in candidates {
        on_each();
        let judged = write::judge(
            c,
            settings.raw,
            settings.default_source,
            settings.min_chars,
            settings.now,
        );
        let Some(obs) = judged.observation else {
            out.discarded += 1;
            continue;
        };
        if !seen.insert(obs.id.clone()) {
            out.duplicates += 1;
            continue;
        }
        if let (Some(index), false) = (index, settings.raw) {
            let v = index
                .embed_documents(&[obs.observation.as_str()])?
                .pop()
                .unwrap_or_default();
            let filter = Filter {
                kinds: vec![Kind::Observation],
                category: None,
                include_hold: true,
            };
            let stored = index.search_by_vector(&v, &filter, 1, settings.threshold)?;
            let stored = stored
                .into_iter()
                .next()
                .filter(|h| h.raw > settings.threshold)
                .map(|h| (h.doc.id, crate::time::format(h.doc.time), h.raw));
            let in_batch = batch
                .iter()
                .map(|(id, ts, kv)| (id, ts, f64::from(crate::embed::cosine(kv, &v))))
                .filter(|(_, _, sim)| *sim > settings.threshold)
                .max_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(id, ts, sim)| (id.clone(), ts.clone(), sim));
            if let Some((into, ts, similarity)) = stored.or(in_batch) {
                let m = Merge {
                    into,
                    similarity,
                    timestamp: ts.max(obs.timestamp.clone()),
                };
                out.lines
                    .push(dedup::merge_event(&m, &obs.id, settings.now));
                out.merged += 1;
                continue;
            }
            batch.push((obs.id.clone(), obs.timestamp.clone(), v));
        }
        match obs.write_verdict {
            Verdict::Allow => out.allowed += 1,
            Verdict::Hold => out.held += 1,
            Verdict::Discard => out.discarded += 1,
        }
        out.lines
            .push(serde_json::to_string(&obs).expect("observation serializes"));
        out.kept.push(obs);
    }
    Ok(out)
}
