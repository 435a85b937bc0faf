//! A MEMORY.md entry and the observation it was promoted from are one result, not two (issue
//! 32): the observation is folded into the entry, which takes the better of the two places and
//! names its source once, under it. An observation is an entry's source when a promoted
//! proposal citing it wrote the entry's text, or when it says what the entry says.

use std::collections::HashMap;

use serde::Serialize;

use super::Recalled;
use crate::index::Kind;
use crate::store::normalize;

/// An observation a MEMORY.md entry came from, shown under the entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub id: String,
    pub text: String,
    pub time: String,
}

/// The observations each entry was promoted from, by the entry's normalized text.
pub type Promotions = HashMap<String, Vec<String>>;

/// The promoted proposals' texts (as finally written) and the observations they cite.
pub fn promotions(repo: &crate::repo::Repo) -> crate::error::Result<Promotions> {
    let loaded = crate::proposals::load(repo)?;
    let mut out = Promotions::new();
    for p in loaded
        .proposals
        .iter()
        .filter(|p| p.state == crate::proposals::State::Promoted)
    {
        let text = p.final_text.as_deref().unwrap_or(&p.proposal.text);
        out.entry(normalize(text))
            .or_default()
            .extend(p.proposal.observations.iter().cloned());
    }
    Ok(out)
}

/// `results` with each observation that is the source of a MEMORY.md entry among them folded
/// into that entry (in its `from`); the entry takes the place of whichever of them ranked
/// first. Everything else keeps its order.
pub fn fold(results: Vec<Recalled>, promoted: &Promotions) -> Vec<Recalled> {
    let entries: Vec<(usize, String)> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind == Kind::Memory)
        .map(|(i, r)| (i, normalize(&r.text)))
        .collect();
    if entries.is_empty() {
        return results;
    }
    // Each observation's entry, by index.
    let mut into: HashMap<usize, usize> = HashMap::new();
    for (i, r) in results.iter().enumerate() {
        if r.kind != Kind::Observation {
            continue;
        }
        let said = normalize(&r.text);
        let of = entries.iter().find(|(_, entry)| {
            *entry == said || promoted.get(entry).is_some_and(|ids| ids.contains(&r.id))
        });
        if let Some((e, _)) = of {
            into.insert(i, *e);
        }
    }
    if into.is_empty() {
        return results;
    }
    let mut sources: HashMap<usize, Vec<Source>> = HashMap::new();
    for (&o, &e) in &into {
        let r = &results[o];
        sources.entry(e).or_default().push(Source {
            id: r.id.clone(),
            text: r.text.clone(),
            time: r.time.clone(),
        });
    }
    let mut slots: Vec<Option<Recalled>> = results.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        // An entry is placed where it or one of its sources first comes.
        let at = into.get(&i).copied().unwrap_or(i);
        if let Some(mut r) = slots[at].take() {
            if let Some(mut from) = sources.remove(&at) {
                from.sort_by(|a, b| a.id.cmp(&b.id));
                from.dedup_by(|a, b| a.id == b.id);
                r.from = from;
            }
            out.push(r);
        }
        if into.contains_key(&i) {
            slots[i] = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(kind: Kind, id: &str, text: &str) -> Recalled {
        let mut r = crate::recall::tests_support::recalled_of(kind);
        r.id = id.into();
        r.text = text.into();
        r
    }

    #[test]
    fn an_entry_takes_its_sources_place_and_names_them_once() {
        let results = vec![
            result(Kind::Observation, "obs-a", "Never deploy on Fridays."),
            result(Kind::Slog, "slog-1", "deployed"),
            result(Kind::Memory, "mem-1", "never deploy on fridays"),
            result(
                Kind::Observation,
                "obs-b",
                "no deploys at the end of the week",
            ),
            result(Kind::Observation, "obs-c", "something else"),
        ];
        let promoted = Promotions::from([("never deploy on fridays".into(), vec!["obs-b".into()])]);
        let out = fold(results, &promoted);
        let ids: Vec<&str> = out.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["mem-1", "slog-1", "obs-c"]);
        let from: Vec<&str> = out[0].from.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(from, ["obs-a", "obs-b"]);
        // Without an entry nothing moves.
        let alone = vec![result(Kind::Observation, "obs-a", "x")];
        assert_eq!(fold(alone, &Promotions::new()).len(), 1);
    }
}
