//! Dedup by meaning: before an observation is stored, the nearest stored observation by vector;
//! above `[gate] dedup_threshold` (cosine, 0.85 by default) the new one is merged into it
//! (`{"op":"merge"}`: its merged_count grows and its time moves forward) and nothing new is
//! inserted.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Event, Op};
use crate::error::Result;
use crate::index::{Filter, Index, Kind};

/// The stored observation a new text would merge into.
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    pub into: String,
    pub similarity: f64,
    /// The merged observation's time after the merge.
    pub timestamp: String,
}

/// The nearest stored observation to `text`, if it is similar enough to merge into.
pub fn nearest(
    index: &Index,
    text: &str,
    threshold: f64,
    at: DateTime<Utc>,
) -> Result<Option<Merge>> {
    let filter = Filter {
        kinds: vec![Kind::Observation],
        category: None,
        include_hold: true,
    };
    let hits = index.search_vectors(text, &filter, 1, threshold)?;
    Ok(hits
        .into_iter()
        .next()
        .filter(|h| h.raw > threshold)
        .map(|h| Merge {
            into: h.doc.id,
            similarity: h.raw,
            timestamp: crate::time::format(h.doc.time.max(at)),
        }))
}

/// The event line that records a merge of the observation that would have been `from`.
pub fn merge_event(m: &Merge, from: &str, now: DateTime<Utc>) -> String {
    let e = Event {
        op: Op::Merge,
        id: m.into.clone(),
        ts: crate::time::format(now),
        timestamp: Some(m.timestamp.clone()),
        by: None,
        from: Some(from.to_string()),
        hash: None,
    };
    serde_json::to_string(&e).expect("event serializes")
}
