//! A `git revert` of a decision's commit that git's union merge of the JSONL files left half
//! done (ADR 106): the decision's line stays in `vault/proposals/` (and a rejection's `reject`
//! events in the observation store) while the rest of the commit, MEMORY.md's change, is
//! undone. `cairn doctor` names each such proposal and makes it pending again: a `needs-review`
//! decision, and a `reopen` event for each observation a reverted rejection marked.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::proposals::{self, Decision, Event, Line, Tier};
use crate::repo::Repo;
use crate::store;

/// A proposal whose decision a `git revert` undid, though its line is still the last word.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Undone {
    pub proposal: String,
    pub decision: Decision,
    /// The reverting commit and the decision's commit (short ids).
    pub commit: String,
    pub reverted: String,
    /// The proposals file holding the decision's line.
    pub file: String,
    /// The observations the proposal stood on.
    pub observations: Vec<String>,
}

impl Undone {
    /// What happened and what to do, for `cairn doctor`.
    pub fn problem(&self, repaired: bool) -> String {
        let what = match self.decision {
            Decision::Promote => "approved",
            Decision::Reject => "rejected",
            Decision::Merge => "merged",
            Decision::NeedsReview => "left for review",
        };
        let then = if repaired {
            "it is pending again: decide it with `cairn review`".to_string()
        } else {
            "`cairn doctor` makes it pending again, then `cairn review` decides it".to_string()
        };
        format!(
            "commit {} reverts {}, which {what} proposal {}, but git's union merge of the JSONL \
             files kept that decision's line: {then}",
            self.commit, self.reverted, self.proposal
        )
    }
}

/// Every proposal whose last decision is a line that a reverted commit added.
pub fn undone(repo: &Repo) -> Result<Vec<Undone>> {
    let reverted = crate::git::reverted_decisions(repo.root())?;
    if reverted.is_empty() {
        return Ok(Vec::new());
    }
    let loaded = proposals::load(repo)?;
    let last = last_decisions(repo)?;
    let mut out: Vec<Undone> = Vec::new();
    for r in &reverted {
        let Some(parent) = &r.parent_id else {
            continue;
        };
        for name in crate::git::names_at(repo.root(), &r.reverted_id, proposals::DIR)? {
            let rel = format!("{}/{name}", proposals::DIR);
            let after = crate::git::content_at(repo.root(), &r.reverted_id, &rel)?;
            let before = crate::git::content_at(repo.root(), parent, &rel)?;
            let before =
                String::from_utf8_lossy(before.as_deref().unwrap_or_default()).into_owned();
            let had: HashSet<&str> = before.lines().collect();
            let after = String::from_utf8_lossy(after.as_deref().unwrap_or_default()).into_owned();
            for line in after.lines().filter(|l| !had.contains(l)) {
                let Some((id, decision)) = decision_of(&rel, line) else {
                    continue;
                };
                let still = last.get(&id).is_some_and(|(l, _)| l == line);
                if !still || !r.proposals.contains(&id) || out.iter().any(|u| u.proposal == id) {
                    continue;
                }
                let observations = loaded
                    .get(&id)
                    .map(|f| f.proposal.observations.clone())
                    .unwrap_or_default();
                out.push(Undone {
                    file: last.get(&id).map(|(_, f)| f.clone()).unwrap_or_default(),
                    proposal: id,
                    decision,
                    commit: r.commit.clone(),
                    reverted: r.reverted.clone(),
                    observations,
                });
            }
        }
    }
    Ok(out)
}

/// The repair of `undone`: a `needs-review` decision for each (today's proposals file) and,
/// for a rejection, a `reopen` event for each observation it marked (the store's current
/// file); as journal steps, with the commit's trailers.
pub fn repair(
    repo: &Repo,
    undone: &[Undone],
    now: DateTime<Utc>,
) -> (Vec<crate::journal::Step>, Vec<(&'static str, String)>) {
    let ts = crate::time::format(now);
    let mut decisions = Vec::new();
    let mut reopened = Vec::new();
    let mut trailers = Vec::new();
    for u in undone {
        let event = Event::Decision {
            id: u.proposal.clone(),
            decision: Decision::NeedsReview,
            tier: Tier::Human,
            reason: format!("commit {} reverted {}", u.commit, u.reverted),
            text: None,
            commit: None,
            ts: ts.clone(),
        };
        decisions.push(proposals::line(&event));
        trailers.push(("Cairn-Proposal", u.proposal.clone()));
        if u.decision == Decision::Reject {
            for o in &u.observations {
                let mut e = store::Event::new(store::Op::Reopen, o, &ts);
                e.by = Some(u.proposal.clone());
                let mut line = serde_json::to_string(&e).expect("events serialize");
                line.push('\n');
                reopened.push(line);
            }
        }
    }
    let mut steps = vec![proposals::append_step(&decisions, now)];
    if !reopened.is_empty() {
        steps.push(crate::journal::Step::Append {
            path: store::current_file(repo, now),
            bytes: reopened.concat(),
        });
    }
    (steps, trailers)
}

/// Each proposal's last decision line as the working files hold it, and its file.
fn last_decisions(repo: &Repo) -> Result<HashMap<String, (String, String)>> {
    let mut last = HashMap::new();
    for path in proposals::day_files(repo)? {
        let rel = format!(
            "{}/{}",
            proposals::DIR,
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let text = crate::files::read_optional(&path)?.unwrap_or_default();
        for line in text.lines() {
            if let Some((id, _)) = decision_of(&rel, line) {
                last.insert(id, (line.to_string(), rel.clone()));
            }
        }
    }
    Ok(last)
}

/// The proposal and decision of a decision event's line.
fn decision_of(rel: &str, line: &str) -> Option<(String, Decision)> {
    match proposals::parse_line(std::path::Path::new(rel), 1, line).ok()? {
        Line::Event(Event::Decision { id, decision, .. }) => Some((id, decision)),
        _ => None,
    }
}

/// An observation marked rejected by a proposal that no person's rejection decides now (a
/// `git revert` of the rejection that removed its decision's line but, by the union merge,
/// kept the observation's `reject` event).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stray {
    pub observation: String,
    pub proposal: String,
}

impl Stray {
    /// What happened and what to do, for `cairn doctor`.
    pub fn problem(&self, repaired: bool) -> String {
        format!(
            "observation {} is marked rejected by proposal {}, which is no longer rejected (a git \
             revert of its rejection?): {}",
            self.observation,
            self.proposal,
            if repaired {
                "the mark is undone"
            } else {
                "`cairn doctor` undoes the mark"
            }
        )
    }
}

/// Every observation marked rejected by a proposal that is not rejected by a person now,
/// leaving out those of `undone`'s rejections (their repair reopens them).
pub fn strays(repo: &Repo, undone: &[Undone]) -> Result<Vec<Stray>> {
    let (folded, _) = store::load_all(repo)?;
    let marked: Vec<(&str, &str)> = folded
        .iter()
        .filter_map(|f| Some((f.obs.id.as_str(), f.rejected.as_deref()?)))
        .collect();
    if marked.is_empty() {
        return Ok(Vec::new());
    }
    let loaded = proposals::load(repo)?;
    Ok(marked
        .into_iter()
        .filter(|(_, p)| {
            let rejected = loaded.get(p).is_some_and(|f| {
                f.state == proposals::State::Rejected && f.tier == Some(Tier::Human)
            });
            !rejected && !undone.iter().any(|u| u.proposal == *p)
        })
        .map(|(o, p)| Stray {
            observation: o.to_string(),
            proposal: p.to_string(),
        })
        .collect())
}

/// The journal step undoing each stray mark: a `reopen` event naming its proposal.
pub fn reopen(repo: &Repo, strays: &[Stray], now: DateTime<Utc>) -> crate::journal::Step {
    let ts = crate::time::format(now);
    let lines: Vec<String> = strays
        .iter()
        .map(|s| {
            let mut e = store::Event::new(store::Op::Reopen, &s.observation, &ts);
            e.by = Some(s.proposal.clone());
            let mut line = serde_json::to_string(&e).expect("events serialize");
            line.push('\n');
            line
        })
        .collect();
    crate::journal::Step::Append {
        path: store::current_file(repo, now),
        bytes: lines.concat(),
    }
}
