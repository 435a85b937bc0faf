//! Results from one turn shown together, under the head line of the turn's card.
//!
//! A result belongs to a turn when it is that turn's card, or an observation whose source is
//! the card (observations distilled by `cairn observe` name the card they came from). Groups
//! keep the order of their best-ranked result.

use std::collections::HashMap;

use super::Recalled;
use crate::index::{Index, Kind};

/// Card id → the head line shown above its turn's results.
pub type Heads = HashMap<String, String>;

/// The card a result belongs to, if any.
pub fn turn_of(r: &Recalled) -> Option<&str> {
    match r.kind {
        Kind::Card => Some(&r.id),
        Kind::Observation if r.source.starts_with("tc-") => Some(&r.source),
        _ => None,
    }
}

/// The head lines of the turns the results come from, looked up in the index.
pub fn heads(index: &Index, results: &[Recalled]) -> Heads {
    let mut out = Heads::new();
    for r in results {
        let Some(id) = turn_of(r) else { continue };
        if out.contains_key(id) {
            continue;
        }
        if let Ok(Some(doc)) = index.doc(id) {
            let day = crate::time::format(doc.time);
            out.insert(
                id.to_string(),
                format!(
                    "turn {} ({}, {}): {}",
                    doc.source,
                    &day[..10],
                    doc.status,
                    doc.title
                ),
            );
        }
    }
    out
}

/// The results in display order: each turn's results together, at the place of its first.
/// Only turns with a head line are grouped; others keep their place.
pub fn grouped<'a>(results: &'a [Recalled], heads: &Heads) -> Vec<(Option<&'a str>, &'a Recalled)> {
    let mut groups: Vec<(Option<&str>, Vec<&Recalled>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for r in results {
        match turn_of(r).filter(|t| heads.contains_key(*t)) {
            Some(t) => match at.get(t) {
                Some(&i) => groups[i].1.push(r),
                None => {
                    at.insert(t, groups.len());
                    groups.push((Some(t), vec![r]));
                }
            },
            None => groups.push((None, vec![r])),
        }
    }
    groups
        .into_iter()
        .flat_map(|(k, rs)| rs.into_iter().map(move |r| (k, r)))
        .collect()
}
