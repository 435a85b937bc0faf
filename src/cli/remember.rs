//! `cairn remember TEXT` and `cairn import observations FILE`.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::observe::gate::Verdict;
use crate::output::{self, Next, Report, Status};
use crate::store::{self, write::Candidate};

#[derive(Debug, clap::Args)]
pub struct RememberArgs {
    /// The observation, in a sentence or two
    pub text: String,
    /// Its category (preferences, rules-conventions, system-architecture, operations,
    /// memory-system, projects, people-relationships) [default: chosen by keywords]
    #[arg(long)]
    pub category: Option<String>,
    /// When it was observed [default: now]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// The agent session it came from
    #[arg(long, env = "CAIRN_SESSION")]
    pub session: Option<String>,
    /// Where it came from (kept, and returned by recall)
    #[arg(long, default_value = "cli")]
    pub source: String,
    /// high, medium or low
    #[arg(long, default_value = "medium")]
    pub priority: String,
    /// Store it but recall it only when asked (`--include-hold`)
    #[arg(long)]
    pub hold: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum ImportCommand {
    /// JSON Lines of observations (at least `observation`; optional `timestamp`, `session_id`,
    /// `source`, `category_id`, `write_verdict`, `priority`, `narrative`)
    Observations {
        file: PathBuf,
        /// Skip the write gate and keep every record as given (for backfills and benchmarks)
        #[arg(long)]
        raw: bool,
    },
}

pub fn remember(ctx: &Ctx, args: RememberArgs) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let at = args
        .at
        .as_deref()
        .map(|t| crate::time::parse(t, ctx.now))
        .transpose()
        .map_err(Error::bad_input)?;
    let candidate = Candidate {
        observation: args.text,
        timestamp: at.map(crate::time::format),
        session_id: args.session,
        source: Some(args.source),
        category_id: args.category,
        write_verdict: Some(if args.hold { "hold" } else { "allow" }.into()),
        priority: Some(args.priority),
        ..Candidate::default()
    };
    store::write::validate(&candidate, false).map_err(Error::bad_input)?;
    let _lock = repo.lock()?;
    let judged = store::write::judge(&candidate, false, "cli", repo.config.gate.min_chars, ctx.now);
    let duplicate = judged.observation.is_some() && store::contains(&repo, &judged.id)?;
    let mut commit = None;
    let mut path = None;
    let mut merged = None;
    let mut warnings = Vec::new();
    if let (Some(obs), false) = (&judged.observation, duplicate) {
        // Dedup by meaning against what is stored (the index is brought up to date first).
        let at = chrono::DateTime::parse_from_rfc3339(&obs.timestamp).map_or(ctx.now, |t| t.with_timezone(&chrono::Utc));
        let index = crate::index::Index::open(&repo)?;
        warnings.extend(index.refresh.warnings.clone());
        merged = store::dedup::nearest(&index, &obs.observation, repo.config.gate.dedup_threshold, at)?;
        let (line, subject, trailer) = match &merged {
            Some(m) => (
                store::dedup::merge_event(m, ctx.now),
                format!("remember: merged into {} ({:.2})", m.into, m.similarity),
                m.into.clone(),
            ),
            None => (
                serde_json::to_string(obs).expect("observation serializes"),
                format!("remember: {}", summary(&obs.observation)),
                obs.id.clone(),
            ),
        };
        let (rel, _) = store::append(&repo, &[line], ctx.now)?;
        let msg = super::message(&subject, &[("Cairn-Observation", trailer)]);
        commit = ctx.commit(&repo, std::slice::from_ref(&rel), &msg)?;
        path = Some(rel);
    }
    let inserted = !duplicate && merged.is_none();
    let counts = json!({
        "allowed": u8::from(judged.verdict == Verdict::Allow && inserted),
        "held": u8::from(judged.verdict == Verdict::Hold && inserted),
        "discarded": u8::from(judged.verdict == Verdict::Discard),
        "duplicates": u8::from(duplicate),
        "deduped": u8::from(merged.is_some()),
    });
    warnings.extend(crate::telemetry::emit(&repo, ctx.now, "gate", "remember", true, started, counts.clone()));
    let stored = judged.observation.is_some() && inserted;
    let human = if judged.verdict == Verdict::Discard {
        format!("not stored: the write gate discarded it ({})", judged.reason)
    } else if let Some(m) = &merged {
        format!("merged into {} (similarity {:.2}; {})", m.into, m.similarity, super::short(&commit))
    } else if duplicate {
        format!("already stored as {}; nothing changed", judged.id)
    } else {
        format!("remembered {} ({}, {})", judged.id, judged.verdict.as_str(), super::short(&commit))
    };
    let data = json!({
        "id": judged.id,
        "stored": stored,
        "duplicate": duplicate,
        "merged": merged,
        "verdict": judged.verdict.as_str(),
        "reason": judged.reason,
        "observation": judged.observation,
        "path": path,
        "commit": commit,
    });
    let status = if judged.verdict == Verdict::Discard { Status::NothingOrFailed } else { Status::Ok };
    Ok(Report::new("remember", data, human).warnings(warnings).status(status))
}

fn summary(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        format!("{}…", one_line.chars().take(60).collect::<String>())
    } else {
        one_line
    }
}

/// Above this many records an import dedups by id only (comparing each with every other by
/// meaning grows with the square of the count).
const DEDUP_LIMIT: usize = 5000;

pub fn import(ctx: &Ctx, cmd: ImportCommand) -> Result<Report> {
    let ImportCommand::Observations { file, raw } = cmd;
    let started = Instant::now();
    let repo = ctx.repo()?;
    let file = if file.is_absolute() { file } else { ctx.cwd.join(file) };
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(file.display(), &e))?;
    // Read and check every line before writing anything.
    let mut candidates = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", file.display(), i + 1);
        if !line.trim_start().starts_with('{') {
            return Err(Error::bad_input(format!("{}: not a JSON object", at())));
        }
        let c: Candidate = serde_json::from_str(line)
            .map_err(|e| Error::bad_input(format!("{}: not a valid observation: {e}", at())))?;
        store::write::validate(&c, raw).map_err(|m| Error::bad_input(format!("{}: {m}", at())))?;
        candidates.push(c);
    }
    let source = format!("import:{}", file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    let _lock = repo.lock()?;
    let mut seen = store::ids(&repo)?;
    let bar = output::progress(candidates.len() as u64, ctx.interactive, "importing");
    let (mut allowed, mut held, mut discarded, mut duplicates) = (0u64, 0u64, 0u64, 0u64);
    let mut lines = Vec::new();
    // Dedup by meaning (not with --raw): against what is stored and what this import keeps.
    let threshold = repo.config.gate.dedup_threshold;
    let mut merged = 0u64;
    let mut by_meaning = None;
    let mut warnings = Vec::new();
    if !raw {
        if candidates.len() <= DEDUP_LIMIT {
            let index = crate::index::Index::open(&repo)?;
            warnings.extend(index.refresh.warnings.clone());
            by_meaning = Some((index, Vec::<(String, String, Vec<f32>)>::new()));
        } else {
            warnings.push(format!(
                "dedup by meaning skipped: {} records (more than {DEDUP_LIMIT}); ids still dedup exactly",
                candidates.len()
            ));
        }
    }
    for c in &candidates {
        bar.inc(1);
        let judged = store::write::judge(c, raw, &source, repo.config.gate.min_chars, ctx.now);
        let Some(obs) = judged.observation else {
            discarded += 1;
            continue;
        };
        if !seen.insert(obs.id.clone()) {
            duplicates += 1;
            continue;
        }
        if let Some((index, kept)) = &mut by_meaning {
            let v = index.embed_documents(&[obs.observation.as_str()])?.pop().unwrap_or_default();
            let filter = crate::index::Filter { kinds: vec![crate::index::Kind::Observation], category: None, include_hold: true };
            let stored = index.search_by_vector(&v, &filter, 1, threshold)?;
            let stored = stored.into_iter().next().filter(|h| h.raw > threshold).map(|h| (h.doc.id, h.doc.time));
            let in_batch = kept
                .iter()
                .find(|(_, _, kv)| f64::from(crate::embed::cosine(kv, &v)) > threshold)
                .map(|(id, ts, _)| (id.clone(), ts.clone()));
            let at = obs.timestamp.clone();
            let target = match (stored, in_batch) {
                (Some((id, time)), _) => Some((id, crate::time::format(time).max(at))),
                (None, Some((id, ts))) => Some((id, ts.max(at))),
                (None, None) => None,
            };
            if let Some((into, timestamp)) = target {
                let m = store::dedup::Merge { into, similarity: threshold, timestamp };
                lines.push(store::dedup::merge_event(&m, ctx.now));
                merged += 1;
                continue;
            }
            kept.push((obs.id.clone(), obs.timestamp.clone(), v));
        }
        match obs.write_verdict {
            Verdict::Allow => allowed += 1,
            Verdict::Hold => held += 1,
            Verdict::Discard => discarded += 1,
        }
        lines.push(serde_json::to_string(&obs).expect("observation serializes"));
    }
    bar.finish_and_clear();
    let mut commit = None;
    let mut path = None;
    if !lines.is_empty() {
        let (rel, _) = store::append(&repo, &lines, ctx.now)?;
        let subject = format!("import: {} observations from {}", lines.len() as u64 - merged, file.display());
        commit = ctx.commit(&repo, std::slice::from_ref(&rel), &super::message(&subject, &[]))?;
        path = Some(rel);
    }
    let counts = json!({
        "read": candidates.len(), "stored": lines.len() as u64 - merged, "allowed": allowed, "held": held,
        "discarded": discarded, "duplicates": duplicates, "deduped": merged, "raw": raw,
    });
    warnings.extend(crate::telemetry::emit(&repo, ctx.now, "gate", "import", true, started, counts.clone()));
    let human = format!(
        "imported {} of {} observations ({allowed} allowed, {held} held, {discarded} discarded, {duplicates} duplicates, {merged} merged by meaning; {})",
        lines.len() as u64 - merged,
        candidates.len(),
        super::short(&commit)
    );
    let data = json!({ "counts": counts, "path": path, "commit": commit });
    Ok(Report::new("import_observations", data, human)
        .warnings(warnings)
        .next(Next::new("cairn recall", "see what is recalled now")))
}
