//! Reflection: observations become proposed changes to MEMORY.md.
//!
//! [`read`] gathers what a reflection works on: the allowed, active observations not yet
//! reflected (after the last `reflected` mark of the proposals files, or since a time), without
//! those that a stored proposal already cites (whatever became of it: a rejected proposal is
//! never made again from the same observations), plus MEMORY.md and the recall counts. A
//! reflector turns that into [`Proposal`]s: [`builtin`] offline, by vector; [`llm`] in one
//! call to the configured model, its XML reply parsed strictly. [`lines`] gives what to append
//! in ONE write: the new proposals, then the `reflected` mark, so a run killed before the
//! append leaves nothing and one killed after it leaves a mark the next run starts after.
//!
//! Each pending proposal is also a commit on `refs/cairn/proposals/<id>` (HEAD plus the
//! proposal applied to HEAD's MEMORY.md); [`sync_refs`] makes the missing ones and deletes
//! those of decided proposals. The proposals files stay the truth.
//!
//! The mark: `until` is `vault/observations/DAY.jsonl:LINE`, the last line read. An
//! observation is new when its line, or a later `merge` or `restore` event about it (it was
//! observed again), comes after the mark.

pub mod builtin;
pub mod clean;
pub mod llm;
pub mod place;

#[cfg(test)]
mod labelled;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::Result;
use crate::memory;
use crate::observe::gate::Verdict;
use crate::proposals::{self, Event, Loaded, Proposal, State};
use crate::recall::counts::Count;
use crate::repo::Repo;
use crate::store::{self, Line, Observation};

/// What a reflection reads.
#[derive(Debug, Default)]
pub struct Input {
    /// The observations to reflect on, in the order written.
    pub observations: Vec<Observation>,
    /// MEMORY.md's text (the working file: what the person sees).
    pub memory: String,
    /// Recall counts by observation id.
    pub recalls: HashMap<String, Count>,
    /// How often each MEMORY.md entry (by its normalized text) was recalled: the recalls of
    /// the observations cited by the promoted proposal that wrote it.
    pub entry_recalls: HashMap<String, u64>,
    /// The last observation line read (`file:line`), for the mark; empty when none.
    pub until: String,
    /// New observations looked at, before the filters below.
    pub read: usize,
    /// Of those: held, discarded, stale, deleted or superseded.
    pub not_allowed: usize,
    /// Below `[reflect] min_confidence`, or of no category of MEMORY.md.
    pub weak: usize,
    /// Already cited by a stored proposal.
    pub cited: usize,
}

/// Where to start reading.
#[derive(Debug, Clone, Copy)]
pub enum Since {
    /// After the last `reflected` mark.
    Mark,
    /// Observations whose time is at or after this, whatever the mark says.
    Time(DateTime<Utc>),
}

/// A place in the store, comparable in the order its files are read (a day's parts in their
/// order, see [`store::day_files`]): (the file's day and part, the file, the line).
type Place = (Option<(chrono::NaiveDate, u32)>, String, usize);

fn place(file: &str, line: usize) -> Place {
    (
        store::file_day(std::path::Path::new(file)),
        file.to_string(),
        line,
    )
}

/// `vault/observations/DAY.jsonl:LINE` as a [`Place`].
fn parse_mark(mark: &str) -> Option<Place> {
    let (file, line) = mark.rsplit_once(':')?;
    Some(place(file, line.parse().ok()?))
}

/// The last `reflected` mark, if any.
pub fn last_mark(loaded: &Loaded) -> Option<String> {
    loaded.reflections.iter().rev().find_map(|e| match e {
        Event::Reflected { until, .. } if !until.is_empty() => Some(until.clone()),
        _ => None,
    })
}

/// Reads the observations to reflect on (see the module documentation).
pub fn read(repo: &Repo, loaded: &Loaded, since: Since, min_confidence: f64) -> Result<Input> {
    let mark = match since {
        Since::Mark => last_mark(loaded).and_then(|m| parse_mark(&m)),
        Since::Time(_) => None,
    };
    let after_mark = |file: &str, line: usize| match &mark {
        None => true,
        Some(m) => place(file, line) > *m,
    };
    let mut folded: Vec<store::Folded> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut fresh: HashSet<String> = HashSet::new();
    let mut early: Vec<store::Event> = Vec::new();
    let mut until = String::new();
    for path in store::day_files(repo)? {
        let rel = format!(
            "{}/{}",
            store::DIR,
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let (lines, _) = store::read_file(&path)?;
        for (n, line) in lines {
            until = format!("{rel}:{n}");
            let new = after_mark(&rel, n);
            match line {
                Line::Observation(obs) => {
                    if at.contains_key(&obs.id) {
                        continue;
                    }
                    if new {
                        fresh.insert(obs.id.clone());
                    }
                    at.insert(obs.id.clone(), folded.len());
                    folded.push(store::Folded {
                        obs,
                        state: store::State::Active,
                        superseded_by: None,
                        rejected: None,
                    });
                }
                Line::Event(e) => {
                    if new && matches!(e.op, store::Op::Merge | store::Op::Restore) {
                        fresh.insert(e.id.clone());
                    }
                    match at.get(&e.id) {
                        Some(&i) => store::apply(&mut folded[i], &e),
                        None => early.push(e),
                    }
                }
            }
        }
    }
    for e in early {
        if let Some(&i) = at.get(&e.id) {
            store::apply(&mut folded[i], &e);
        }
    }
    let cited: HashSet<&str> = loaded
        .proposals
        .iter()
        .flat_map(|p| p.proposal.observations.iter().map(String::as_str))
        .collect();
    let mut input = Input {
        until,
        ..Input::default()
    };
    for f in folded {
        let new = match since {
            Since::Mark => fresh.contains(&f.obs.id),
            Since::Time(t) => rfc3339(&f.obs.timestamp).is_some_and(|ts| ts >= t),
        };
        if !new {
            continue;
        }
        input.read += 1;
        if f.obs.write_verdict != Verdict::Allow
            || f.state != store::State::Active
            || f.superseded_by.is_some()
            // A person rejected a proposal that stood on it (ADR 105).
            || f.rejected.is_some()
        {
            input.not_allowed += 1;
            continue;
        }
        if f.obs.write_confidence < min_confidence || section_of(&f.obs.category_id).is_none() {
            input.weak += 1;
            continue;
        }
        if cited.contains(f.obs.id.as_str()) {
            input.cited += 1;
            continue;
        }
        input.observations.push(f.obs);
    }
    input.memory = crate::files::read_optional(&repo.path(memory::FILE))?.unwrap_or_default();
    input.recalls = crate::recall::counts::read(repo)?;
    for p in loaded
        .proposals
        .iter()
        .filter(|p| p.state == State::Promoted)
    {
        let text = p.final_text.as_deref().unwrap_or(&p.proposal.text);
        let n: u64 = p
            .proposal
            .observations
            .iter()
            .filter_map(|id| input.recalls.get(id))
            .map(|c| c.count)
            .sum();
        *input
            .entry_recalls
            .entry(store::normalize(text))
            .or_default() += n;
    }
    Ok(input)
}

fn rfc3339(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The MEMORY.md heading of a category id.
pub fn section_of(category: &str) -> Option<&'static str> {
    memory::CATEGORIES
        .iter()
        .find(|(id, _)| *id == category)
        .map(|(_, heading)| *heading)
}

/// What a reflector proposed, and what it left out.
#[derive(Debug, Default)]
pub struct Reflection {
    /// In the order a person should see them (the most important first).
    pub proposals: Vec<Proposal>,
    /// Observations left out because MEMORY.md already says them.
    pub said: usize,
    /// Observations joined into another's proposal (cited by it, not proposed alone).
    pub joined: usize,
    /// Error fixes seen once: a session's detail, not proposed.
    pub one_off: usize,
    /// Observations whose text makes no clean MEMORY.md line (`clean::line`), not proposed.
    pub unfit: usize,
    /// (tokens in, tokens out) of the LLM, when one was asked.
    pub tokens: (u64, u64),
    /// Calls made to the LLM (one per batch of observations).
    pub calls: usize,
}

/// Splits `observations` (in order) into batches of at most `budget` estimated tokens (four
/// characters each, plus the per-observation markup); an observation larger than the budget is
/// a batch of its own. So a large backlog goes to the LLM in several calls of bounded size.
pub fn batches<T>(observations: &[T], text: impl Fn(&T) -> &str, budget: usize) -> Vec<&[T]> {
    const MARKUP: usize = 40;
    let mut out = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, o) in observations.iter().enumerate() {
        let cost = text(o).len() / 4 + MARKUP;
        if i > start && used + cost > budget {
            out.push(&observations[start..i]);
            start = i;
            used = 0;
        }
        used += cost;
    }
    if start < observations.len() {
        out.push(&observations[start..]);
    }
    out
}

/// The lines to append in one write: the proposals not stored yet, then the mark. Returns the
/// lines and the proposals kept. Nothing at all when nothing was read and nothing is new.
pub fn lines(
    loaded: &Loaded,
    reflection: &Reflection,
    input: &Input,
    reflector: &str,
    now: DateTime<Utc>,
) -> (Vec<String>, Vec<Proposal>) {
    let stored: HashSet<&str> = loaded
        .proposals
        .iter()
        .map(|p| p.proposal.id.as_str())
        .collect();
    let mut seen = HashSet::new();
    let fresh: Vec<Proposal> = reflection
        .proposals
        .iter()
        .filter(|p| !stored.contains(p.id.as_str()) && seen.insert(p.id.clone()))
        .cloned()
        .collect();
    let mut out: Vec<String> = fresh.iter().map(proposals::line).collect();
    if input.read > 0 || !fresh.is_empty() {
        out.push(proposals::line(&Event::Reflected {
            ts: crate::time::format(now),
            reflector: reflector.to_string(),
            until: input.until.clone(),
            observations: input.read,
            proposed: fresh.len(),
        }));
    }
    (out, fresh)
}

/// The commit a proposal's ref points at: its MEMORY.md, and its message.
pub fn ref_commit(
    head_memory: &str,
    p: &Proposal,
) -> std::result::Result<(String, String), proposals::ApplyError> {
    let date = rfc3339(&p.created).map_or_else(|| Utc::now().date_naive(), |t| t.date_naive());
    let text = proposals::apply(head_memory, p, None, date)?;
    let mut subject = format!("memory: {} in {}: {}", p.op.as_str(), p.section, p.text);
    if subject.chars().count() > 72 {
        subject = subject.chars().take(71).collect::<String>() + "…";
    }
    let mut body = String::new();
    if !p.targets.is_empty() {
        for t in &p.targets {
            body.push_str(&format!("- was: {t}\n"));
        }
        body.push('\n');
    }
    if !p.rationale.is_empty() {
        body.push_str(&p.rationale);
        body.push_str("\n\n");
    }
    let mut message = subject;
    message.push_str("\n\n");
    message.push_str(&body);
    message.push_str(&format!("Cairn-Proposal: {}\n", p.id));
    if !p.observations.is_empty() {
        message.push_str(&format!(
            "Cairn-Observations: {}\n",
            p.observations.join(" ")
        ));
    }
    Ok((text, message))
}

/// What [`sync_refs`] did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Synced {
    /// Refs made for pending proposals that had none.
    pub made: usize,
    /// Refs deleted: their proposal was decided (or is not stored).
    pub deleted: usize,
    /// Pending proposals that HEAD's MEMORY.md cannot take (their entry is gone), with why.
    pub failed: Vec<String>,
}

/// Makes `refs/cairn/proposals/<id>` for every pending proposal that lacks one and deletes the
/// refs of proposals decided or not stored. The proposals files are the truth; the refs are
/// rebuilt from them. Run under the repository lock.
pub fn sync_refs(repo: &Repo, identity: &crate::git::Identity<'_>) -> Result<Synced> {
    let loaded = proposals::load(repo)?;
    sync_loaded(repo, &loaded, identity)
}

/// [`sync_refs`] with the proposals already loaded.
pub fn sync_loaded(
    repo: &Repo,
    loaded: &Loaded,
    identity: &crate::git::Identity<'_>,
) -> Result<Synced> {
    let root = repo.root();
    let existing: HashSet<String> = crate::git::proposal_refs(root)?.into_iter().collect();
    let pending: HashSet<&str> = loaded
        .proposals
        .iter()
        .filter(|p| p.state == State::Pending)
        .map(|p| p.proposal.id.as_str())
        .collect();
    let mut out = Synced::default();
    let decided: Vec<&str> = existing
        .iter()
        .map(String::as_str)
        .filter(|id| !pending.contains(id))
        .collect();
    crate::git::delete_proposal_refs(root, &decided)?;
    out.deleted += decided.len();
    let missing: Vec<&Proposal> = loaded
        .proposals
        .iter()
        .filter(|p| p.state == State::Pending && !existing.contains(&p.proposal.id))
        .map(|p| &p.proposal)
        .collect();
    if missing.is_empty() {
        return Ok(out);
    }
    let head = crate::git::head_content(root, memory::FILE)?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut batch = Vec::new();
    for p in missing {
        match ref_commit(&head, p) {
            Ok((text, message)) => batch.push((p.id.clone(), text.into_bytes(), message)),
            Err(e) => out.failed.push(format!("{}: {e}", p.id)),
        }
    }
    out.made = crate::git::set_proposal_refs(root, memory::FILE, &batch, identity)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_order_and_stay_within_the_budget() {
        let texts: Vec<String> = [40, 40, 40, 400, 8]
            .iter()
            .map(|n| "x".repeat(*n))
            .collect();
        let cut = batches(&texts, |t| t.as_str(), 100);
        let sizes: Vec<Vec<usize>> = cut
            .iter()
            .map(|b| b.iter().map(String::len).collect())
            .collect();
        // 50 tokens each for the first three (10 + 40 of markup): two fit in 100.
        assert_eq!(sizes, vec![vec![40, 40], vec![40], vec![400], vec![8]]);
        assert_eq!(batches(&texts, |t| t.as_str(), 100_000).len(), 1);
        assert!(batches(&Vec::<String>::new(), |t| t.as_str(), 100).is_empty());
    }

    #[test]
    fn marks_compare_in_file_then_line_order() {
        let a = parse_mark("vault/observations/2026-11-30.jsonl:12").unwrap();
        let b = parse_mark("vault/observations/2026-12-01.jsonl:3").unwrap();
        assert!(a < b);
        assert!(
            parse_mark("vault/observations/2026-11-30.jsonl:9").unwrap() < a,
            "line order within a file"
        );
        assert_eq!(parse_mark("nonsense"), None);
        // A day's parts (ADR 53) come after the day file and in their number's order.
        let part2 = parse_mark("vault/observations/2026-12-01.2.jsonl:1").unwrap();
        let part10 = parse_mark("vault/observations/2026-12-01.10.jsonl:1").unwrap();
        assert!(b < part2 && part2 < part10);
        assert!(part10 < parse_mark("vault/observations/2026-12-02.jsonl:1").unwrap());
    }

    #[test]
    fn a_ref_commit_names_the_change_and_the_proposal() {
        let p = Proposal::new(
            proposals::Op::Add,
            "Rules and conventions",
            "Never push to main",
            vec![],
            "observed 3 times",
            vec!["ob-1".into(), "ob-2".into()],
            0.8,
            "builtin",
            "2026-12-01T10:00:00Z".parse().unwrap(),
        );
        let (text, message) = ref_commit("# Memory\n", &p).unwrap();
        assert!(text.contains("- (2026-12-01) Never push to main"), "{text}");
        assert!(message.starts_with("memory: add in Rules and conventions: Never push"));
        assert!(message.contains(&format!("Cairn-Proposal: {}\n", p.id)));
        assert!(message.contains("Cairn-Observations: ob-1 ob-2\n"));
    }
}
