//! `cairn maintain [--dry-run]` (the nightly pass, planned by [`crate::maintain`]) and `cairn
//! restore ID…` (undo what it, or anyone, marked).
//!
//! Maintain writes every event of a run in one append to today's observations file (the path
//! noted in `.cairn/pending.json` first) and makes one commit. A run killed after some of the
//! append, or before the commit, is finished by the next: the events written are folded in,
//! planning over them plans exactly the rest (strength does not depend on what a run carries
//! over, see [`crate::maintain::stronger`]), and the commit takes the pending file whole.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::index::{Index, Opened, vectors};
use crate::maintain::{self, Change, Input, Settings};
use crate::output::{Next, Report, Status};
use crate::store::{self, Op, State};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing: list what would be merged, marked stale and soft-deleted, and why
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The observations to restore (superseded, stale or soft-deleted ones)
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Events per append: each is whole lines, so a run killed between two leaves whole events.
const CHUNK: usize = 512;

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let config = &repo.config.maintain;
    if !(config.dedup_cosine > 0.0 && config.dedup_cosine <= 1.0) {
        return Err(Error::new(
            Kind::Config,
            format!(
                "cairn.toml: [maintain] dedup_cosine = {} is not in (0, 1]",
                config.dedup_cosine
            ),
        )
        .with_fix("set [maintain] dedup_cosine between 0 and 1 (0.85 by default)"));
    }
    let _lock = if args.dry_run {
        None
    } else {
        Some(repo.lock()?)
    };
    // The index brings the vector store up to date: every observation's text has its row.
    let index = Index::open(&repo)?;
    crate::output::phase("maintain: index open");
    let mut warnings = index.warnings();
    let loaded = store::load(&repo)?;
    crate::output::phase("maintain: observations loaded");
    for t in &loaded.torn {
        warnings.push(format!(
            "{}:{}: a torn last line ({} bytes) was skipped; `cairn doctor` repairs it",
            t.path.display(),
            t.line,
            t.bytes
        ));
    }
    let recalls = recalls_until(&repo, ctx.now)?;
    crate::output::phase("maintain: recalls read");
    let vectors = vectors_of(&index, &loaded.folded)?;
    crate::output::phase("maintain: vectors read");
    let (cited, orphans) = cited(&repo, &loaded.folded)?;
    crate::output::phase("maintain: proposals read");
    if !orphans.is_empty() {
        let shown: Vec<String> = orphans
            .iter()
            .take(5)
            .map(|(p, o)| format!("{p} cites {o}"))
            .collect();
        warnings.push(format!(
            "{} a soft-deleted observation ({}{}): `cairn restore ID` brings one back, `cairn review` decides the proposal",
            if orphans.len() == 1 {
                "a pending proposal cites".to_string()
            } else {
                format!("{} pending proposals cite", orphans.len())
            },
            shown.join(", "),
            if orphans.len() > 5 { ", …" } else { "" }
        ));
    }
    let settings = Settings {
        dedup_cosine: config.dedup_cosine,
        stale_days: config.stale_days,
        delete_days: config.delete_days,
        now: ctx.now,
    };
    let mut cache: HashMap<String, Vec<f32>> = HashMap::new();
    let mut similarity = |a: &str, b: &str| -> Result<f64> {
        for t in [a, b] {
            if !cache.contains_key(t) {
                let v = index.embed_documents(&[t])?.pop().unwrap_or_default();
                cache.insert(t.to_string(), v);
            }
        }
        Ok(f64::from(crate::embed::cosine(&cache[a], &cache[b])))
    };
    let input = Input {
        loaded: &loaded,
        recalls: &recalls,
        vectors: &vectors,
        cited: &cited,
    };
    let plan = maintain::plan(&input, &settings, &mut similarity)?;
    crate::output::phase("maintain: planned");
    let breakdown = maintain::breakdown(&loaded.folded, &plan.changes);
    let mut kinds = BTreeMap::new();
    // The library is reference documents, not memory: its chunks are not counted here.
    for k in crate::index::Kind::ALL.map(crate::index::Kind::as_str) {
        if k != crate::index::Kind::Library.as_str() {
            kinds.insert(k, index.count("kind", k)?);
        }
    }
    let counts = json!({
        "observations": loaded.folded.len(),
        "swept": plan.swept,
        "exempt": plan.exempt,
        "candidates": plan.candidates,
        "similar": plan.similar,
        "unconfirmed": plan.unconfirmed,
        "cited": plan.cited,
        "merged": plan.merged,
        "stale": plan.stale,
        "deleted": plan.deleted,
    });

    if args.dry_run {
        let human = listing("would", &plan);
        let data = json!({
            "dry_run": true,
            "counts": counts,
            "changes": plan.changes,
            "kinds": kinds,
            "categories": breakdown,
        });
        crate::index::leave_to_exit((loaded, vectors, plan, cache, recalls, cited));
        Opened::Own(Box::new(index)).finish();
        return Ok(Report::new("maintain", data, human).warnings(warnings));
    }

    let subject = format!(
        "maintain: {} merged, {} stale, {} deleted",
        plan.merged, plan.stale, plan.deleted
    );
    let trailers = trailers(&plan.changes);
    let message = super::message(&subject, &trailers);
    // A rerun continues a killed run: its commit takes the killed run's appended events and
    // its message (the counts the uninterrupted run would have given).
    let work = super::Work::rerun("maintain", "");
    let mut path = None;
    let mut written = Vec::new();
    if !plan.changes.is_empty() {
        let lines: Vec<String> = plan
            .changes
            .iter()
            .map(|c| serde_json::to_string(&c.event(ctx.now)).expect("event serializes"))
            .collect();
        let rel = store::current_file(&repo, ctx.now);
        ctx.begin_writes(&repo, &work, std::slice::from_ref(&rel), Some(&message))?;
        for (n, chunk) in lines.chunks(CHUNK).enumerate() {
            if n > 0 {
                super::failpoint("maintain-mid-append");
                store::append_more(&repo, chunk, ctx.now)?;
            } else {
                store::append(&repo, chunk, ctx.now)?;
            }
        }
        super::failpoint("maintain-after-append");
        written.push(rel.clone());
        path = Some(rel);
    }
    // With nothing planned this still commits what a killed run left (its pending entry).
    crate::output::phase("maintain: written");
    let commit = ctx.commit_with_pending(&repo, &work, &written, &message)?;
    crate::output::phase("maintain: committed");
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "maintain",
        "run",
        true,
        started,
        json!({
            "counts": counts,
            "kinds": kinds,
            "categories": breakdown,
            "merged": plan.merged,
            "stale": plan.stale,
            "deleted": plan.deleted,
        }),
    ));
    crate::output::phase("maintain: telemetry");
    let mut human = listing("did", &plan);
    if !plan.changes.is_empty() || commit.is_some() {
        human.push_str(&format!("\n{}", ctx.short(&commit)));
    }
    let data = json!({
        "dry_run": false,
        "counts": counts,
        "changes": plan.changes,
        "kinds": kinds,
        "categories": breakdown,
        "path": path,
        "commit": commit,
    });
    crate::output::phase("maintain: reported");
    let mut report = Report::new("maintain", data, human).warnings(warnings);
    if !plan.changes.is_empty() {
        report = report.next(Next::new(
            "cairn restore ID",
            "undo any of these (superseded, stale or deleted)",
        ));
    }
    crate::index::leave_to_exit((loaded, vectors, plan, cache, recalls, cited));
    Opened::Own(Box::new(index)).finish();
    Ok(report)
}

/// The recall counts of `.cairn/recalls.jsonl`, of the recalls made at or before `now`: a
/// run pinned to a time (`--now`) does not count recalls made after it, so what it plans is a
/// function of that time.
fn recalls_until(
    repo: &crate::repo::Repo,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<HashMap<String, crate::recall::counts::Count>> {
    let mut out: HashMap<String, crate::recall::counts::Count> = HashMap::new();
    for (id, ts) in crate::recall::counts::each(repo)? {
        let Ok(at) = chrono::DateTime::parse_from_rfc3339(&ts) else {
            continue;
        };
        if at > now {
            continue;
        }
        let c = out.entry(id).or_default();
        c.count += 1;
        if ts > c.last {
            c.last = ts;
        }
    }
    Ok(out)
}

/// The observations pending proposals cite, and the pairs (proposal, observation) where the
/// observation is soft-deleted already (by a run before this rule, or by hand).
type Orphans = Vec<(String, String)>;

fn cited(repo: &crate::repo::Repo, folded: &[store::Folded]) -> Result<(HashSet<String>, Orphans)> {
    let proposals = crate::proposals::load(repo)?;
    let cited: HashSet<String> = proposals
        .pending()
        .flat_map(|p| p.proposal.observations.iter().cloned())
        .collect();
    let mut orphans = Vec::new();
    if !cited.is_empty() {
        let deleted: HashSet<&str> = folded
            .iter()
            .filter(|f| f.state == State::Deleted && cited.contains(&f.obs.id))
            .map(|f| f.obs.id.as_str())
            .collect();
        for p in proposals.pending() {
            for o in &p.proposal.observations {
                if deleted.contains(o.as_str()) {
                    orphans.push((p.proposal.id.clone(), o.clone()));
                }
            }
        }
    }
    Ok((cited, orphans))
}

/// Every observation's vector from the store (rows keyed by the hash of the indexed text);
/// one the store lacks (its embedding failed earlier) is embedded now, whatever its state:
/// the sweep's bands are centred on every observation's vector, which must be the same set on
/// every run over the same store.
fn vectors_of(index: &Index, folded: &[store::Folded]) -> Result<Vec<Option<maintain::Vector>>> {
    let hashes: Vec<u64> = folded
        .iter()
        .map(|f| vectors::text_hash(&crate::index::sources::observation_doc(f, "").text))
        .collect();
    let want: HashSet<u64> = hashes.iter().copied().collect();
    let stored = index.stored_vectors(&want);
    let mut out: Vec<Option<maintain::Vector>> = hashes
        .iter()
        .map(|h| stored.get(h).map(|(s, v)| (*s, v.clone())))
        .collect();
    let missing: Vec<usize> = (0..folded.len()).filter(|&i| out[i].is_none()).collect();
    for chunk in missing.chunks(256) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|&i| crate::index::sources::observation_doc(&folded[i], "").text)
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vecs = index.embed_documents(&refs)?;
        for (&i, v) in chunk.iter().zip(vecs) {
            let (q, scale) = crate::embed::quantize(&v);
            out[i] = Some((scale, q));
        }
    }
    Ok(out)
}

/// Trailers naming what changed (the first 20 of each kind).
fn trailers(changes: &[Change]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (op, key) in [
        (Op::Supersede, "Cairn-Superseded"),
        (Op::Stale, "Cairn-Stale"),
        (Op::Delete, "Cairn-Deleted"),
    ] {
        let of: Vec<&Change> = changes.iter().filter(|c| c.op == op).collect();
        for c in of.iter().take(20) {
            let value = match &c.by {
                Some(by) => format!("{} by {by}", c.id),
                None => c.id.clone(),
            };
            out.push((key, value));
        }
        if of.len() > 20 {
            out.push((key, format!("and {} more", of.len() - 20)));
        }
    }
    out
}

/// What was (or would be) done, for people.
fn listing(verb: &str, plan: &maintain::Plan) -> String {
    let mut h = if verb == "would" {
        format!(
            "would merge {}, mark {} stale, soft-delete {} (of {} swept)",
            plan.merged, plan.stale, plan.deleted, plan.swept
        )
    } else {
        format!(
            "merged {}, marked {} stale, soft-deleted {} (of {} swept)",
            plan.merged, plan.stale, plan.deleted, plan.swept
        )
    };
    if plan.changes.is_empty() {
        h = "nothing to do".to_string();
    }
    if plan.cited > 0 {
        h.push_str(&format!(
            "\n  kept {} a pending proposal cites (decide them with `cairn review`)",
            crate::output::count(plan.cited, "old observation")
        ));
    }
    const SHOWN: usize = 200;
    for c in plan.changes.iter().take(SHOWN) {
        h.push_str(&format!(
            "\n  {} {} [{}] {} ({})",
            c.op_word(),
            c.id,
            c.category,
            c.text,
            c.why
        ));
    }
    if plan.changes.len() > SHOWN {
        h.push_str(&format!(
            "\n  … and {} more (--json lists them all)",
            plan.changes.len() - SHOWN
        ));
    }
    h
}

pub fn restore(ctx: &Ctx, args: RestoreArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let loaded = store::load(&repo)?;
    let at: HashMap<&str, &store::Folded> = loaded
        .folded
        .iter()
        .map(|f| (f.obs.id.as_str(), f))
        .collect();
    // Every id checked before anything is written.
    let mut seen = HashSet::new();
    let mut todo: Vec<(&store::Folded, &'static str)> = Vec::new();
    let mut active = Vec::new();
    for id in &args.ids {
        let Some(f) = at.get(id.as_str()) else {
            return Err(Error::new(Kind::NotFound, format!("no observation {id}"))
                .with_fix("name an observation id (ob-…); `cairn search --exact TEXT` finds one"));
        };
        if !seen.insert(id.as_str()) {
            continue;
        }
        let was = match (f.state, &f.superseded_by) {
            (State::Deleted, _) => "deleted",
            (_, Some(_)) => "superseded",
            (State::Stale, None) => "stale",
            (State::Active, None) => {
                active.push(id.clone());
                continue;
            }
        };
        todo.push((f, was));
    }
    let ts = crate::time::format(ctx.now);
    let lines: Vec<String> = todo
        .iter()
        .map(|(f, _)| {
            serde_json::to_string(&store::Event::new(Op::Restore, &f.obs.id, &ts))
                .expect("event serializes")
        })
        .collect();
    let subject = format!(
        "restore: {}",
        crate::output::count(todo.len(), "observation")
    );
    let trailers: Vec<(&str, String)> = todo
        .iter()
        .map(|(f, was)| ("Cairn-Restored", format!("{} (was {was})", f.obs.id)))
        .collect();
    let message = super::message(&subject, &trailers);
    let work = super::Work::rerun("restore", args.ids.join(" "));
    let mut written = Vec::new();
    if !lines.is_empty() {
        let rel = store::current_file(&repo, ctx.now);
        ctx.begin_writes(&repo, &work, std::slice::from_ref(&rel), Some(&message))?;
        store::append(&repo, &lines, ctx.now)?;
        written.push(rel);
    }
    let commit = ctx.commit_with_pending(&repo, &work, &written, &message)?;
    // The counts as they now fold: the restored one's own back, and what its superseder
    // holds without it.
    let after: HashMap<String, u32> = if todo.is_empty() {
        HashMap::new()
    } else {
        store::load(&repo)?
            .folded
            .into_iter()
            .map(|f| (f.obs.id, f.obs.merged_count))
            .collect()
    };
    let restored: Vec<serde_json::Value> = todo
        .iter()
        .map(|(f, was)| {
            let by = f
                .superseded_by
                .as_ref()
                .map(|b| json!({"id": b, "merged_count": after.get(b)}));
            json!({
                "id": f.obs.id,
                "was": was,
                "merged_count": after.get(&f.obs.id),
                "superseded_by": by,
            })
        })
        .collect();
    let mut human = String::new();
    for (f, was) in &todo {
        human.push_str(&format!(
            "restored {} (was {was}): {}\n",
            f.obs.id,
            maintain::shorten(&f.obs.observation, 80)
        ));
    }
    for id in &active {
        human.push_str(&format!("{id} is already active: nothing to restore\n"));
    }
    if !todo.is_empty() {
        human.push_str(&ctx.short(&commit));
    }
    let data = json!({
        "restored": restored,
        "already_active": active,
        "commit": commit,
    });
    let mut report = Report::new("restore", data, human.trim_end().to_string());
    if todo.is_empty() {
        report = report.status(Status::NothingOrFailed);
    }
    Ok(report)
}
