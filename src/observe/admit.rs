//! Admitting candidates into the store: the one path from "something says this is worth remembering" to lines
//! of the store, shared by `import observations` and `observe`.
//!
//! Each candidate passes the write gate (unless raw), gets its category and its id from its
//! content; an id already stored (or already merged into another) is a duplicate; then dedup by
//! meaning against what is stored and what this batch keeps: above the threshold, and confirmed
//! on what is distinctive ([`dedup::confirm`]), the nearest one gets a merge event naming the
//! candidate's id (so admitting it again merges nothing twice) and nothing new is inserted.
//! Nothing is written here: the caller appends the lines.

use chrono::{DateTime, Utc};

use super::dedup::{self, Merge};
use super::gate::Verdict;
use super::write::{self, Candidate};
use crate::error::Result;
use crate::index::{Filter, Index, Kind};
use crate::store::{Ids, Observation};

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
    seen: &mut Ids,
    index: Option<&Index>,
    on_each: &mut dyn FnMut(),
) -> Result<Admitted> {
    let mut out = Admitted::default();
    // Kept so far in this batch: (id, time, text, vector).
    let mut batch: Vec<(String, String, String, Vec<f32>)> = Vec::new();
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
        if !seen.insert(&obs.id) {
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
            let text = obs.observation.as_str();
            let threshold = settings.threshold;
            // Near neighbours by the whole text, each confirmed on what is distinctive
            // (dedup::confirm): stored ones first, then this batch's.
            let mut near: Vec<(String, String, String, f64)> = index
                .search_by_vector(&v, &filter, dedup::CANDIDATES, threshold)?
                .into_iter()
                .filter(|h| h.raw > threshold)
                .map(|h| (h.doc.id, crate::time::format(h.doc.time), h.doc.text, h.raw))
                .collect();
            let mut in_batch: Vec<(String, String, String, f64)> = batch
                .iter()
                .map(|(id, ts, t, kv)| {
                    let sim = f64::from(crate::embed::cosine(kv, &v));
                    (id.clone(), ts.clone(), t.clone(), sim)
                })
                .filter(|(.., sim)| *sim > threshold)
                .collect();
            in_batch.sort_by(|a, b| b.3.total_cmp(&a.3));
            near.extend(in_batch);
            let mut found = None;
            for (id, ts, other, raw) in near {
                if let Some(sim) = dedup::confirm(index, text, &other, raw, threshold)? {
                    found = Some((id, ts, sim));
                    break;
                }
            }
            if let Some((into, ts, similarity)) = found {
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
            batch.push((
                obs.id.clone(),
                obs.timestamp.clone(),
                obs.observation.clone(),
                v,
            ));
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
