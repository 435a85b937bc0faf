//! The files a trace reads once: the observation store folded with its events by id, the turn
//! cards, and the session files.

use std::collections::HashMap;
use std::path::Path;

use super::report::{EventAt, MergedAway, ObservedBy};
use crate::cards::{Card, Record};
use crate::error::Result;
use crate::repo::Repo;
use crate::store::{self, Event, Folded, Op};

/// The observation store read once: folded records, where each is, and the events by id.
pub(super) struct StoreView {
    pub(super) folded: Vec<Folded>,
    pub(super) at: HashMap<String, String>,
    /// Update events (not `observed`) by the id they are about.
    pub(super) events: HashMap<String, Vec<EventAt>>,
    /// Merge events by the id they absorbed.
    pub(super) merged_from: HashMap<String, MergedAway>,
    /// `observed` events by card id.
    pub(super) observed: HashMap<String, Vec<ObservedBy>>,
}

impl StoreView {
    pub(super) fn read(repo: &Repo) -> Result<StoreView> {
        let (folded, _) = store::load_all(repo)?;
        let mut view = StoreView {
            folded,
            at: HashMap::new(),
            events: HashMap::new(),
            merged_from: HashMap::new(),
            observed: HashMap::new(),
        };
        for path in store::day_files(repo)? {
            let rel = rel_of(repo, &path);
            let (lines, _) = store::read_file(&path)?;
            for (line, l) in lines {
                let at = format!("{rel}:{line}");
                match l {
                    store::Line::Observation(o) => {
                        view.at.entry(o.id).or_insert(at);
                    }
                    store::Line::Event(e) => view.add(e, at),
                }
            }
        }
        Ok(view)
    }

    pub(super) fn add(&mut self, e: Event, at: String) {
        match e.op {
            Op::Observed => self.observed.entry(e.id).or_default().push(ObservedBy {
                observer: e.by.unwrap_or_default(),
                ts: e.ts,
            }),
            op => {
                if let (Op::Merge, Some(from)) = (op, &e.from) {
                    self.merged_from
                        .entry(from.clone())
                        .or_insert_with(|| MergedAway {
                            from: from.clone(),
                            into: e.id.clone(),
                            ts: e.ts.clone(),
                            at: at.clone(),
                        });
                }
                self.events.entry(e.id).or_default().push(EventAt {
                    op,
                    ts: e.ts,
                    by: e.by,
                    from: e.from,
                    at,
                });
            }
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&Folded> {
        self.folded.iter().find(|f| f.obs.id == id)
    }
}

fn rel_of(repo: &Repo, path: &Path) -> String {
    path.strip_prefix(repo.root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Every turn card of every session file, with its `path:line`.
pub(super) fn all_cards(repo: &Repo) -> Result<Vec<(String, usize, Card)>> {
    let mut out = Vec::new();
    for rel in session_files(repo)? {
        let Ok(text) = std::fs::read_to_string(repo.path(&rel)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if let Ok(Record::Card(c)) = serde_json::from_str::<Record>(line) {
                out.push((rel.clone(), i + 1, c));
            }
        }
    }
    Ok(out)
}

/// Every session file, relative to the root.
fn session_files(repo: &Repo) -> Result<Vec<String>> {
    Ok(crate::index::sources::list(repo)?
        .into_iter()
        .filter(|f| f.kind == crate::index::sources::SourceKind::Sessions)
        .map(|f| f.rel)
        .collect())
}
