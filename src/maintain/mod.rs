//! `cairn maintain`: the nightly pass over the observations — a dedup sweep, stale marking
//! and soft deletion — planned here as events, written by `cli/maintain.rs` in one append and
//! one commit.
//!
//! Everything is an event in `vault/observations/` (`supersede`, `stale`, `delete`); nothing
//! is removed from the files, and `cairn restore ID` undoes any of them. Planning is a pure
//! function of the folded store, the recall counts, the vectors and the time ([`plan`]), so a
//! second run over the result plans nothing:
//!
//! - **Dedup sweep.** Over the observations that are active and not superseded, and not
//!   [exempt](Input::restored): observations are taken strongest first ([`stronger`]); each
//!   one not yet taken is kept and scored exactly against the observations not yet taken that
//!   share a band of sign bits with it ([`lsh::Buckets`], from the stored int8 vectors); one at
//!   cosine ≥ `[maintain] dedup_cosine`, confirmed on its distinctive part
//!   ([`crate::observe::dedup::confirm_with`]: two error fixes of the built-in observer's
//!   template must be about the same program and error), is superseded by it, carrying its
//!   own merged count (`count`). Only the kept ones' neighbours are scored, so a cluster of k
//!   copies costs k comparisons, not k². The survivors are pairwise unconfirmed, and a chain
//!   A~B, B~C (not A~C) ends the same on every run: the strongest of the three takes its
//!   neighbours, and the third survives only if it is no neighbour of the survivor.
//!   The sweep scores every pair when the store holds fewer than [`lsh::EXACT_BELOW`]
//!   observations with a vector (all of them, whatever their state, not the swept ones), and
//!   uses the bands otherwise: the choice, the bands' centre and so the candidate pairs are the
//!   same on every run over the same store, so a second run finds no pair the first did not
//!   (ADR 77).
//! - **Stale.** An observation active and not superseded, never recalled (by `now`), and not
//!   cited by a pending proposal, that [entered](entered) the store (or was last confirmed)
//!   more than `stale_days` before now is marked `stale`. Entered is the day of the file its
//!   record was written to, not the time its record speaks of (a backfill of old transcripts is
//!   new to the store); confirmed is a later `merge` event, a restore, or a duplicate it took
//!   (ADR 76).
//! - **Delete.** A stale one whose stale mark (or a confirmation since) is more than
//!   `delete_days` old is soft-deleted (`delete`): never in the run that marks it, so a
//!   person has `delete_days` to see the mark. One a pending proposal cites is kept.
//! - **Restored** observations (a `restore` is their last event) are a person's decision: they
//!   take no part in the sweep until something changes them (a merge, another event), and
//!   their stale clock starts again at the restore.

pub mod lsh;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::Result;
use crate::observe::gate::Verdict;
use crate::recall::counts::Count;
use crate::store::{Event, Folded, Loaded, Op, State};

/// What a run is allowed to do.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dedup_cosine: f64,
    pub stale_days: u32,
    pub delete_days: u32,
    pub now: DateTime<Utc>,
}

/// An observation's vector as the store holds it: int8 numbers and their scale.
pub type Vector = (f32, Vec<i8>);

/// What planning reads.
pub struct Input<'a> {
    pub loaded: &'a Loaded,
    /// Recall counts by observation id (`.cairn/recalls.jsonl`).
    pub recalls: &'a HashMap<String, Count>,
    /// The vector of each observation in `loaded.folded`, by position (`None`: none known,
    /// the observation is left out of the sweep).
    pub vectors: &'a [Option<Vector>],
    /// The observations a pending proposal cites: never marked stale or soft-deleted while
    /// the proposal waits for a decision.
    pub cited: &'a HashSet<String>,
}

/// One planned event, with what a person needs to judge it.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub op: Op,
    pub id: String,
    /// The observation's text, shortened.
    pub text: String,
    pub category: String,
    /// For `supersede`: the observation that takes its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For `supersede`: the confirmed similarity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// For `supersede`: the merged count it carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// For `supersede`: the merged count of `by` once the run's events are folded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_merged_count: Option<u32>,
    pub why: String,
}

impl Change {
    /// The word a listing shows for it.
    pub fn op_word(&self) -> &'static str {
        match self.op {
            Op::Supersede => "merge",
            Op::Stale => "stale",
            Op::Delete => "delete",
            _ => "change",
        }
    }

    /// The event line to append.
    pub fn event(&self, now: DateTime<Utc>) -> Event {
        let mut e = Event::new(self.op, &self.id, &crate::time::format(now));
        e.by = self.by.clone();
        e.count = self.count;
        e
    }
}

/// What the sweep found, and how much work it took.
#[derive(Debug, Default, Serialize)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub merged: usize,
    pub stale: usize,
    pub deleted: usize,
    /// Observations the sweep compared (active, not superseded, with a vector, not exempt).
    pub swept: usize,
    /// Restored observations left out of the sweep.
    pub exempt: usize,
    /// Pairs scored exactly (a kept observation and one not yet taken that shares a band with
    /// it), and those at or above the threshold.
    pub candidates: usize,
    pub similar: usize,
    /// Similar pairs whose distinctive parts disagreed (template texts about other things).
    pub unconfirmed: usize,
    /// Observations old enough to mark stale or soft-delete that were kept because a pending
    /// proposal cites them.
    pub cited: usize,
}

/// What decides strength besides the record: its own merged count (its record's and its
/// `merge` events', not what it took from observations it superseded) and its recall count.
#[derive(Debug, Clone, Copy)]
pub struct Weight {
    pub own: u32,
    pub recalled: u64,
}

/// The ordering of strength: `Greater` when `a` is the stronger. Decided, in turn, by: allow
/// over hold; the higher own merged count; the more often recalled; the higher write
/// confidence; the newer time; the smaller id (so that any two differ). The own count, not the
/// folded one, so that what a run carries over cannot reorder the rest of that run when it is
/// finished after a crash.
pub fn stronger(a: &Folded, wa: Weight, b: &Folded, wb: Weight) -> Ordering {
    strength(a, wa).cmp(&strength(b, wb))
}

/// What [`stronger`] compares, as one key: the sweep sorts 100,000 of these side by side
/// instead of reaching into each observation at every comparison.
type Strength<'a> = (bool, u32, u64, i64, &'a str, std::cmp::Reverse<&'a str>);

fn strength(f: &Folded, w: Weight) -> Strength<'_> {
    // f64::total_cmp's order as an integer.
    let mut confidence = f.obs.write_confidence.to_bits() as i64;
    confidence ^= (((confidence >> 63) as u64) >> 1) as i64;
    (
        f.obs.write_verdict == Verdict::Allow,
        w.own,
        w.recalled,
        confidence,
        f.obs.timestamp.as_str(),
        std::cmp::Reverse(f.obs.id.as_str()),
    )
}

/// A text shortened for a listing: its first line, at most `max` characters.
pub fn shorten(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or(text);
    if first.chars().count() <= max && !text.contains('\n') {
        return first.to_string();
    }
    let cut: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// Plans the run. `similarity` gives the cosine of two distinctive parts (the built-in
/// observer's error fixes), for [`crate::observe::dedup::confirm_with`].
pub fn plan(
    input: &Input,
    settings: &Settings,
    similarity: &mut dyn FnMut(&str, &str) -> Result<f64>,
) -> Result<Plan> {
    let folded = &input.loaded.folded;
    let recalled = |f: &Folded| input.recalls.get(&f.obs.id).map_or(0, |c| c.count);
    let own = |f: &Folded| {
        f.obs
            .merged_count
            .saturating_sub(input.loaded.taken.get(&f.obs.id).copied().unwrap_or(0))
    };
    let weight = |f: &Folded| Weight {
        own: own(f),
        recalled: recalled(f),
    };
    let mut plan = Plan::default();

    // 1. The dedup sweep.
    let live = |f: &Folded| f.state == State::Active && f.superseded_by.is_none();
    let mut swept: Vec<usize> = Vec::new();
    for (i, f) in folded.iter().enumerate() {
        if !live(f) {
            continue;
        }
        if input.loaded.restored.contains_key(&f.obs.id) {
            plan.exempt += 1;
            continue;
        }
        if input
            .vectors
            .get(i)
            .is_some_and(|v| v.as_ref().is_some_and(|(s, _)| *s > 0.0))
        {
            swept.push(i);
        }
    }
    plan.swept = swept.len();
    let vecs: Vec<&[i8]> = swept
        .iter()
        .map(|&i| {
            input.vectors[i]
                .as_ref()
                .map_or(&[][..], |v| v.1.as_slice())
        })
        .collect();
    let scales: Vec<f32> = swept
        .iter()
        .map(|&i| input.vectors[i].as_ref().map_or(0.0, |v| v.0))
        .collect();
    // The centre of every observation's vector (not only the swept ones), so that a second
    // run, which sweeps fewer, bands them the same.
    let all: Vec<&[i8]> = input
        .vectors
        .iter()
        .flatten()
        .filter(|v| v.0 > 0.0)
        .map(|v| v.1.as_slice())
        .collect();
    // Below EXACT_BELOW every pair is scored (one band of no bits: one bucket), which costs
    // less than the bands and finds every pair. Counted over every observation's vector, not
    // the swept ones: a run that merges or marks enough to sweep fewer than EXACT_BELOW next
    // time would otherwise have the next run score pairs the bands kept apart, and merge
    // again (issue 30, point 14).
    let (bands, bits) = if all.len() < lsh::EXACT_BELOW {
        (1, 0)
    } else {
        (lsh::BANDS, lsh::BITS)
    };
    crate::output::phase("maintain: sweep begins");
    let center = lsh::center(&all);
    // Every swept vector's sign pattern: the bands' bits, and the cut below.
    let dims = vecs.iter().map(|v| v.len()).max().unwrap_or(0);
    let words = lsh::signature_words(dims);
    let signs = lsh::signatures(&vecs, &center, dims);
    let mut buckets = lsh::Buckets::of_signatures(&signs, dims, bands, bits);
    crate::output::phase("maintain: buckets made");
    let threshold = settings.dedup_cosine;
    let weights: Vec<Weight> = swept.iter().map(|&i| weight(&folded[i])).collect();
    // Strongest first; each one not yet taken keeps its place and takes every confirmed
    // neighbour not yet taken (all weaker: a stronger one was kept before it, and would have
    // taken it). Only the kept ones' neighbours are scored, so a cluster of k copies costs k
    // comparisons, not k².
    let mut keyed: Vec<(Strength, u32)> = swept
        .iter()
        .zip(&weights)
        .enumerate()
        .map(|(k, (&i, &w))| (strength(&folded[i], w), k as u32))
        .collect();
    // Ids differ, so no two keys are equal.
    keyed.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let order: Vec<u32> = keyed.into_iter().map(|(_, k)| k).collect();
    let mut taken: Vec<Option<(u32, f64)>> = vec![None; swept.len()];
    // out[y]: y is kept or taken (out of play); one small array the bucket walks read.
    let mut out = vec![false; swept.len()];
    // The swept vectors side by side, so a score reads one place, not a pointer first.
    let mut flat = vec![0i8; swept.len() * dims];
    for (k, v) in vecs.iter().enumerate() {
        flat[k * dims..k * dims + v.len()].copy_from_slice(v);
    }
    let row = |k: usize| &flat[k * dims..(k + 1) * dims];
    // With the bands, a candidate whose sign pattern is far from x's is not scored
    // ([`lsh::SIGN_CUT_EIGHTHS`]); below EXACT_BELOW every pair is.
    let sign = |k: usize| &signs[k * words..(k + 1) * words];
    let cut = if bits > 0 {
        (dims * lsh::SIGN_CUT_EIGHTHS / 8) as u32
    } else {
        u32::MAX
    };
    // seen[y] == x: y was already scored against x (it shares several bands with it).
    let mut seen = vec![u32::MAX; swept.len()];
    let mut scored: Vec<(usize, f64)> = Vec::new();
    // x's candidates, then those near enough by sign: each step is one loop over a list with
    // no branch on what it reads, so that the reads of scattered signatures and rows overlap
    // (a branch taken on each read made the processor wait for them one at a time).
    let mut near: Vec<u32> = Vec::new();
    let mut distance: Vec<u32> = Vec::new();
    for &x in &order {
        let x = x as usize;
        if out[x] {
            continue;
        }
        out[x] = true;
        scored.clear();
        near.clear();
        buckets.sharing(
            x,
            |y| !out[y],
            |y| {
                if seen[y] != x as u32 {
                    seen[y] = x as u32;
                    near.push(y as u32);
                }
            },
        );
        let compared = near.len();
        if cut != u32::MAX {
            distance.clear();
            distance.extend(
                near.iter()
                    .map(|&y| lsh::sign_distance(sign(x), sign(y as usize))),
            );
            let mut kept = 0;
            for k in 0..near.len() {
                near[kept] = near[k];
                kept += usize::from(distance[k] <= cut);
            }
            near.truncate(kept);
        }
        for &y in &near {
            let y = y as usize;
            let cos =
                f64::from(crate::embed::dot_i8(row(x), row(y)) as f32 * scales[x] * scales[y]);
            if cos >= threshold {
                scored.push((y, cos));
            }
        }
        plan.candidates += compared;
        scored.sort_by_key(|&(y, _)| y);
        for &(y, cos) in &scored {
            plan.similar += 1;
            let (fx, fy) = (&folded[swept[x]].obs, &folded[swept[y]].obs);
            match crate::observe::dedup::confirm_with(
                &fx.observation,
                &fy.observation,
                cos,
                threshold,
                similarity,
            )? {
                Some(sim) => {
                    taken[y] = Some((x as u32, sim));
                    out[y] = true;
                }
                None => plan.unconfirmed += 1,
            }
        }
    }
    crate::output::phase("maintain: swept");
    let taken: Vec<(u32, (u32, f64))> = taken
        .into_iter()
        .enumerate()
        .filter_map(|(y, t)| t.map(|t| (y as u32, t)))
        .collect();
    let mut superseded: Vec<(u32, (u32, f64))> = taken.into_iter().collect();
    superseded.sort_by_key(|(y, _)| swept[*y as usize]);
    let mut gone = std::collections::HashSet::new();
    // What each survivor holds once the run is folded: its count, plus each one it takes
    // with what that one had taken.
    let mut after: HashMap<u32, u32> = HashMap::new();
    for (y, (x, _)) in &superseded {
        let w = &folded[swept[*y as usize]];
        let s = &folded[swept[*x as usize]];
        // Saturating, as the fold's sums are: counts in the files may be hand-edited.
        let add = own(w)
            .max(1)
            .saturating_add(input.loaded.taken.get(&w.obs.id).copied().unwrap_or(0));
        let held = after.entry(*x).or_insert(s.obs.merged_count);
        *held = held.saturating_add(add);
    }
    for &(y, (x, sim)) in &superseded {
        let (w, s) = (&folded[swept[y as usize]], &folded[swept[x as usize]]);
        gone.insert(swept[y as usize]);
        plan.changes.push(Change {
            op: Op::Supersede,
            id: w.obs.id.clone(),
            text: shorten(&w.obs.observation, 80),
            category: w.obs.category_id.clone(),
            by: Some(s.obs.id.clone()),
            similarity: Some((sim * 1000.0).round() / 1000.0),
            count: Some(own(w).max(1)),
            by_merged_count: after.get(&x).copied(),
            why: format!(
                "duplicate of {} (cosine {:.3}): {}",
                s.obs.id,
                sim,
                shorten(&s.obs.observation, 60)
            ),
        });
        plan.merged += 1;
    }

    // 2. Stale and soft delete, by when each observation entered the store or was last
    // confirmed ([`entered`]): a survivor is confirmed by what it takes in this run too, as the
    // next run's fold will have it.
    let mut since = entered(input.loaded);
    for (y, (x, _)) in &superseded {
        let (w, s) = (swept[*y as usize], swept[*x as usize]);
        since[s] = since[s].max(since[w]);
    }
    let day_ms = 86_400_000i64;
    let now_ms = settings.now.timestamp_millis();
    let times = |i: usize| input.loaded.times.get(i);
    for (i, f) in folded.iter().enumerate() {
        if f.superseded_by.is_some() || f.state == State::Deleted || gone.contains(&i) {
            continue;
        }
        if recalled(f) > 0 || since[i] == i64::MIN {
            continue;
        }
        let base = |op: Op, why: String| Change {
            op,
            id: f.obs.id.clone(),
            text: shorten(&f.obs.observation, 80),
            category: f.obs.category_id.clone(),
            by: None,
            similarity: None,
            count: None,
            by_merged_count: None,
            why,
        };
        let days = (now_ms - since[i]) / day_ms;
        match f.state {
            State::Active if days > i64::from(settings.stale_days) => {
                if input.cited.contains(&f.obs.id) {
                    plan.cited += 1;
                    continue;
                }
                plan.changes.push(base(
                    Op::Stale,
                    format!(
                        "stored {days} days ago, never recalled (stale after {})",
                        settings.stale_days
                    ),
                ));
                plan.stale += 1;
            }
            // Soft-deleted only by a later run than the one that marked it, when the mark
            // (or a confirmation since) is older than delete_days: never in the run that marks.
            State::Stale => {
                let marked = times(i)
                    .and_then(|t| t.stale.as_deref())
                    .and_then(parse_time)
                    .map_or(since[i], |t| t.timestamp_millis().max(since[i]));
                let stale_days = (now_ms - marked) / day_ms;
                if stale_days <= i64::from(settings.delete_days) {
                    continue;
                }
                if input.cited.contains(&f.obs.id) {
                    plan.cited += 1;
                    continue;
                }
                plan.changes.push(base(
                    Op::Delete,
                    format!(
                        "stale for {stale_days} days, never recalled (deleted after {} days stale)",
                        settings.delete_days
                    ),
                ));
                plan.deleted += 1;
            }
            _ => {}
        }
    }
    Ok(plan)
}

/// When each observation of the fold (by position) entered the store or was last confirmed,
/// in milliseconds (`i64::MIN`: unknown, never aged): the day of the file its record was
/// written to (its own time when that falls within the day: a backfill of old turns counts
/// from the day it was stored, not from the turns), a later `merge` event (stored again), its
/// restore, and whatever it took from the observations it superseded (each one's own, along
/// chains): a duplicate stored today confirms the observation that took it.
pub fn entered(loaded: &Loaded) -> Vec<i64> {
    let folded = &loaded.folded;
    let mut own: Vec<i64> = folded
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let time = parse_time(&f.obs.timestamp).map(|t| t.timestamp_millis());
            let times = loaded.times.get(i);
            let mut at = match times.and_then(|t| t.day) {
                Some(day) => {
                    let start = day
                        .and_hms_opt(0, 0, 0)
                        .expect("midnight exists")
                        .and_utc()
                        .timestamp_millis();
                    time.map_or(start, |t| t.clamp(start, start + 86_400_000 - 1))
                }
                None => time.unwrap_or(i64::MIN),
            };
            let later = times
                .and_then(|t| t.stored_again.as_deref())
                .into_iter()
                .chain(loaded.restored.get(&f.obs.id).map(String::as_str));
            for t in later.filter_map(parse_time) {
                at = at.max(t.timestamp_millis());
            }
            at
        })
        .collect();
    // Along supersede chains (W → S → T: T holds all three), each one once.
    let at: HashMap<&str, usize> = folded
        .iter()
        .enumerate()
        .filter(|(_, f)| f.superseded_by.is_none())
        .map(|(i, f)| (f.obs.id.as_str(), i))
        .collect();
    let by: HashMap<&str, &str> = folded
        .iter()
        .filter_map(|f| Some((f.obs.id.as_str(), f.superseded_by.as_deref()?)))
        .collect();
    for (i, f) in folded.iter().enumerate() {
        let Some(mut next) = f.superseded_by.as_deref() else {
            continue;
        };
        // The chain's end: the one not superseded (a cycle, which only hand edits make,
        // ends nowhere).
        let mut steps = 0;
        while let Some(&n) = by.get(next) {
            next = n;
            steps += 1;
            if steps > by.len() {
                break;
            }
        }
        if let Some(&end) = at.get(next) {
            own[end] = own[end].max(own[i]);
        }
    }
    own
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Counts of the observations per category and per verdict, by state after the run would be
/// applied, for telemetry and the report: `{category: {verdict: {state: n}}}`.
pub fn breakdown(
    folded: &[Folded],
    changes: &[Change],
) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>> {
    // A stale mark and a delete of one observation: the delete, which comes later, counts.
    let by_id: HashMap<&str, Op> = changes.iter().map(|c| (c.id.as_str(), c.op)).collect();
    let mut out: BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>> = BTreeMap::new();
    for f in folded {
        let state = match (by_id.get(f.obs.id.as_str()), f.state, &f.superseded_by) {
            (Some(Op::Delete), ..) | (_, State::Deleted, _) => "deleted",
            (Some(Op::Supersede), ..) | (_, _, Some(_)) => "superseded",
            (Some(Op::Stale), ..) | (_, State::Stale, _) => "stale",
            _ => "active",
        };
        *out.entry(f.obs.category_id.clone())
            .or_default()
            .entry(f.obs.write_verdict.as_str().to_string())
            .or_default()
            .entry(state.to_string())
            .or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Folder, Observation};

    const NOW: &str = "2026-12-01T00:00:00Z";

    fn obs(id: &str, merged: u32, time: &str) -> Observation {
        serde_json::from_value(serde_json::json!({
            "id": id, "observation": format!("text of {id}"), "timestamp": time,
            "write_verdict": "allow", "category_id": "projects", "merged_count": merged,
        }))
        .unwrap()
    }

    /// A unit vector at `degrees` in the plane of the first two dims, quantized.
    fn at(degrees: f64) -> Option<Vector> {
        let mut v = vec![0f32; 256];
        v[0] = degrees.to_radians().cos() as f32;
        v[1] = degrees.to_radians().sin() as f32;
        let (q, s) = crate::embed::quantize(&v);
        Some((s, q))
    }

    fn settings() -> Settings {
        Settings {
            dedup_cosine: 0.85,
            stale_days: 90,
            delete_days: 180,
            now: crate::time::parse(NOW, Utc::now()).unwrap(),
        }
    }

    fn fold(records: &[Observation], events: &[Event]) -> Loaded {
        let mut f = Folder::default();
        for o in records {
            f.observation(o.clone());
        }
        for e in events {
            f.event(e.clone());
        }
        f.finish()
    }

    fn run(loaded: &Loaded, vectors: &[Option<Vector>]) -> Plan {
        run_at(loaded, vectors, &HashSet::new(), NOW)
    }

    fn run_at(
        loaded: &Loaded,
        vectors: &[Option<Vector>],
        cited: &HashSet<String>,
        now: &str,
    ) -> Plan {
        let recalls = HashMap::new();
        let input = Input {
            loaded,
            recalls: &recalls,
            vectors,
            cited,
        };
        let settings = Settings {
            now: crate::time::parse(now, Utc::now()).unwrap(),
            ..settings()
        };
        plan(&input, &settings, &mut |_, _| Ok(0.0)).unwrap()
    }

    fn events(p: &Plan) -> Vec<Event> {
        events_at(p, NOW)
    }

    fn events_at(p: &Plan, now: &str) -> Vec<Event> {
        let now = crate::time::parse(now, Utc::now()).unwrap();
        p.changes.iter().map(|c| c.event(now)).collect()
    }

    /// Records read from day files (`(record, the file's day)`), then events.
    fn fold_days(records: &[(Observation, &str)], events: &[Event]) -> Loaded {
        let mut f = Folder::default();
        for (o, day) in records {
            f.day(chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok());
            f.observation(o.clone());
        }
        for e in events {
            f.event(e.clone());
        }
        f.finish()
    }

    fn ops(p: &Plan) -> Vec<(String, Op)> {
        p.changes.iter().map(|c| (c.id.clone(), c.op)).collect()
    }

    /// `n` vectors of 256 numbers in chains of `chain`: each link is the one before turned
    /// by about 25 degrees in a random direction (cosine about 0.9 to its neighbours, about
    /// 0.8 two links apart), the chains at random directions from each other.
    fn chains(n: usize, chain: usize, seed: u64) -> Vec<Option<Vector>> {
        let mut x = seed;
        let mut random = move || {
            let mut v: Vec<f32> = (0..256)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 2001) as f32 / 1000.0 - 1.0
                })
                .collect();
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            v.iter_mut().for_each(|a| *a /= norm);
            v
        };
        let mut out = Vec::with_capacity(n);
        let mut prev = random();
        for i in 0..n {
            if i % chain == 0 {
                prev = random();
            } else {
                let noise = random();
                let next: Vec<f32> = prev.iter().zip(&noise).map(|(a, b)| a + 0.45 * b).collect();
                let norm = next.iter().map(|a| a * a).sum::<f32>().sqrt();
                prev = next.iter().map(|a| a / norm).collect();
            }
            let (q, s) = crate::embed::quantize(&prev);
            out.push(Some((s, q)));
        }
        out
    }

    #[test]
    fn a_sweep_over_the_bands_reaches_its_fixed_point_in_one_run() {
        // 2,400 observations in chains of three, a third of the chains stored long ago: the first
        // run sweeps them all through the bands; it merges and marks so many that the next
        // run sweeps fewer than EXACT_BELOW, and must still find nothing the first did not.
        let n = 2_400;
        let vectors = chains(n, 3, 0x2545_f491_4f6c_dd1d);
        let records: Vec<(Observation, &str)> = (0..n)
            .map(|i| {
                let day = if (i / 3) % 3 == 0 {
                    "2026-06-01"
                } else {
                    "2026-11-20"
                };
                (obs(&format!("o{i:04}"), 1 + (i % 4) as u32, RECENT), day)
            })
            .collect();
        let first = run(&fold_days(&records, &[]), &vectors);
        assert!(first.swept >= lsh::EXACT_BELOW, "{}", first.swept);
        assert!(
            first.swept - first.merged - first.stale < lsh::EXACT_BELOW,
            "the next run sweeps fewer: {} merged, {} stale",
            first.merged,
            first.stale
        );
        assert!(first.merged > 500 && first.stale > 100, "{first:?}");
        let all = events(&first);
        let after = fold_days(&records, &all);
        let second = run(&after, &vectors);
        assert!(
            second.changes.is_empty(),
            "a second run over the first's result: {:?}",
            ops(&second)
        );
        // Killed after any part of its append, the rerun plans exactly the rest.
        for k in [1, 511, 512, all.len() / 2, first.merged, all.len() - 1] {
            let rest = run(&fold_days(&records, &all[..k]), &vectors);
            assert_eq!(events(&rest), all[k..].to_vec(), "after {k} events");
        }
    }

    #[test]
    fn age_counts_from_the_day_the_record_was_stored_not_from_the_time_it_speaks_of() {
        // A backfill of year-old turns stored today; one stored in June the day its turn was.
        let records = vec![
            (obs("backfill", 1, "2025-11-01T09:00:00Z"), "2026-12-01"),
            (obs("june", 1, "2026-06-01T09:00:00Z"), "2026-06-01"),
        ];
        let vectors = [at(0.0), at(90.0)];
        let today = run(&fold_days(&records, &[]), &vectors);
        assert_eq!(ops(&today), [("june".into(), Op::Stale)], "{today:?}");
        assert!(today.changes[0].why.starts_with("stored 182 days ago"));

        // The backfill: stale 100 days on, deleted only once the stale mark is 180 days old.
        let records = &records[..1];
        let vectors = &vectors[..1];
        let mut evs = Vec::new();
        for (now, want) in [
            ("2026-12-01T10:00:00Z", vec![]),
            ("2027-03-11T10:00:00Z", vec![Op::Stale]),
            ("2027-03-11T10:00:00Z", vec![]),
            ("2027-09-01T10:00:00Z", vec![]),
            ("2027-09-09T10:00:00Z", vec![Op::Delete]),
            ("2028-09-09T10:00:00Z", vec![]),
        ] {
            let p = run_at(&fold_days(records, &evs), vectors, &HashSet::new(), now);
            assert_eq!(
                p.changes.iter().map(|c| c.op).collect::<Vec<_>>(),
                want,
                "at {now}"
            );
            evs.extend(events_at(&p, now));
        }
    }

    #[test]
    fn an_old_record_past_both_ages_is_only_marked_stale_in_one_run() {
        let records = vec![(obs("old", 1, "2025-01-01T00:00:00Z"), "2025-01-01")];
        let p = run(&fold_days(&records, &[]), &[at(0.0)]);
        assert_eq!(ops(&p), [("old".into(), Op::Stale)]);
        let again = run(&fold_days(&records, &events(&p)), &[at(0.0)]);
        assert!(again.changes.is_empty(), "{again:?}");
    }

    #[test]
    fn a_day_file_without_a_day_ages_by_the_records_time_and_a_merge_event_confirms() {
        let records = vec![
            (obs("a", 1, "2026-06-01T00:00:00Z"), "notes"),
            (obs("b", 1, "2026-06-01T00:00:00Z"), "2026-06-01"),
        ];
        let mut again = Event::new(Op::Merge, "b", "2026-11-30T00:00:00Z");
        again.timestamp = Some("2026-06-02T00:00:00Z".into());
        let p = run(&fold_days(&records, &[again]), &[at(0.0), at(90.0)]);
        assert_eq!(ops(&p), [("a".into(), Op::Stale)], "b was stored again");
    }

    #[test]
    fn a_duplicate_stored_today_confirms_the_old_one_that_takes_it() {
        // The old one is the stronger (merged more often) and takes the new one: it is not
        // marked stale, in this run or the next.
        let records = vec![
            (obs("old", 5, "2026-03-01T00:00:00Z"), "2026-03-01"),
            (obs("new", 1, "2026-11-30T00:00:00Z"), "2026-11-30"),
        ];
        let vectors = [at(0.0), at(10.0)];
        let first = run(&fold_days(&records, &[]), &vectors);
        assert_eq!(ops(&first), [("new".into(), Op::Supersede)]);
        let second = run(&fold_days(&records, &events(&first)), &vectors);
        assert!(second.changes.is_empty(), "{second:?}");
        // Restored, the new one gives its time back with its count.
        let mut evs = events(&first);
        evs.push(Event::new(Op::Restore, "new", NOW));
        let p = run(&fold_days(&records, &evs), &vectors);
        assert_eq!(ops(&p), [("old".into(), Op::Stale)]);
    }

    #[test]
    fn a_pending_proposal_keeps_what_it_cites_from_stale_and_delete() {
        let records = vec![
            (obs("cited", 1, "2026-01-01T00:00:00Z"), "2026-01-01"),
            (obs("free", 1, "2026-01-01T00:00:00Z"), "2026-01-01"),
        ];
        let vectors = [at(0.0), at(90.0)];
        let cited: HashSet<String> = ["cited".to_string()].into();
        let p = run_at(&fold_days(&records, &[]), &vectors, &cited, NOW);
        assert_eq!(ops(&p), [("free".into(), Op::Stale)]);
        assert_eq!(p.cited, 1);
        // Stale already when the proposal came: not deleted while it waits.
        let mut evs = events(&p);
        evs.push(Event::new(Op::Stale, "cited", NOW));
        let later = "2027-12-01T00:00:00Z";
        let p = run_at(&fold_days(&records, &evs), &vectors, &cited, later);
        assert_eq!(ops(&p), [("free".into(), Op::Delete)]);
        assert_eq!(p.cited, 1);
    }

    fn pairs(p: &Plan) -> Vec<(String, String)> {
        p.changes
            .iter()
            .map(|c| (c.id.clone(), c.by.clone().unwrap_or_default()))
            .collect()
    }

    const RECENT: &str = "2026-11-20T00:00:00Z";

    #[test]
    fn a_chain_ends_the_same_whichever_link_is_strongest_and_a_second_run_does_nothing() {
        // A~B and B~C (cosine 0.87), A and C apart (0.5).
        let vectors = [at(0.0), at(30.0), at(60.0)];
        for (merged, want) in [
            // B strongest: it takes both.
            ([1, 3, 1], vec![("a", "b"), ("c", "b")]),
            // A strongest: it takes B; C is no neighbour of A and survives.
            ([3, 2, 1], vec![("b", "a")]),
        ] {
            let records: Vec<Observation> = ["a", "b", "c"]
                .iter()
                .zip(merged)
                .map(|(id, m)| obs(id, m, RECENT))
                .collect();
            let loaded = fold(&records, &[]);
            let first = run(&loaded, &vectors);
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(w, s)| (w.to_string(), s.to_string()))
                .collect();
            assert_eq!(pairs(&first), want);
            let after = fold(&records, &events(&first));
            assert!(run(&after, &vectors).changes.is_empty(), "idempotent");
        }
    }

    #[test]
    fn the_stronger_takes_the_count_and_a_restore_gives_it_back() {
        let records = vec![obs("a", 1, RECENT), obs("b", 4, RECENT)];
        let vectors = [at(0.0), at(10.0)];
        let first = run(&fold(&records, &[]), &vectors);
        assert_eq!(first.changes[0].count, Some(1));
        assert_eq!(first.changes[0].by_merged_count, Some(5));
        let mut evs = events(&first);
        let folded = fold(&records, &evs);
        assert_eq!(folded.folded[1].obs.merged_count, 5);
        evs.push(Event::new(Op::Restore, "a", NOW));
        let restored = fold(&records, &evs);
        assert_eq!(restored.folded[1].obs.merged_count, 4);
        assert_eq!(restored.folded[0].superseded_by, None);
        // The restored one is exempt: the pair is left as the person left it.
        let again = run(&restored, &vectors);
        assert!(again.changes.is_empty());
        assert_eq!(again.exempt, 1);
    }

    #[test]
    fn a_run_finished_after_a_crash_plans_exactly_the_rest() {
        // Six observations in two chains, old enough to go stale: every prefix of the events
        // written, planned again, gives the rest.
        let old = "2026-07-01T00:00:00Z";
        let records: Vec<Observation> = (0..6)
            .map(|i| obs(&format!("o{i}"), 1 + (i % 3) as u32, old))
            .collect();
        let vectors = [at(0.0), at(25.0), at(50.0), at(120.0), at(140.0), at(160.0)];
        let full = run(&fold(&records, &[]), &vectors);
        let all = events(&full);
        assert!(full.merged >= 2 && full.stale >= 2, "{full:?}");
        for k in 0..all.len() {
            let rest = run(&fold(&records, &all[..k]), &vectors);
            assert_eq!(events(&rest), all[k..].to_vec(), "after {k} events");
        }
    }

    #[test]
    fn strength_goes_allow_then_count_recalls_confidence_time_id() {
        let w = |own, recalled| Weight { own, recalled };
        let a = Folded {
            obs: obs("a", 1, RECENT),
            state: State::Active,
            superseded_by: None,
            rejected: None,
        };
        let mut b = a.clone();
        b.obs.id = "b".into();
        assert_eq!(
            stronger(&a, w(1, 0), &b, w(1, 0)),
            Ordering::Greater,
            "smaller id"
        );
        assert_eq!(
            stronger(&a, w(1, 0), &b, w(2, 0)),
            Ordering::Less,
            "merged count"
        );
        assert_eq!(
            stronger(&a, w(1, 3), &b, w(1, 0)),
            Ordering::Greater,
            "recalls"
        );
        b.obs.timestamp = "2026-11-21T00:00:00Z".into();
        assert_eq!(stronger(&a, w(1, 0), &b, w(1, 0)), Ordering::Less, "newer");
        b.obs.write_verdict = Verdict::Hold;
        assert_eq!(
            stronger(&a, w(1, 0), &b, w(9, 9)),
            Ordering::Greater,
            "allow first"
        );
    }

    #[test]
    fn shorten_keeps_the_first_line_within_the_limit() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("a longer text here", 10), "a longer…");
        assert_eq!(shorten("first\nsecond", 40), "first…");
    }
}
