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
    /// The observation, in a sentence or two (at most 4000 characters)
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
    #[command(flatten)]
    pub commit: super::CommitArgs,
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
        #[command(flatten)]
        commit: super::CommitArgs,
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
    let text = crate::redact::redact_one(&repo.config.redact.patterns, &args.text)
        .map_err(|e| {
            Error::new(
                crate::error::Kind::Config,
                format!("cairn.toml [redact]: {e}"),
            )
        })?
        .into_owned();
    let candidate = Candidate {
        observation: text,
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
    let judged = store::write::judge(
        &candidate,
        false,
        "cli",
        repo.config.gate.min_chars,
        ctx.now,
    );
    let duplicate = judged.observation.is_some() && store::contains(&repo, &judged.id)?;
    let commit;
    let mut path = None;
    let mut merged = None;
    let mut warnings = Vec::new();
    if let (Some(obs), false) = (&judged.observation, duplicate) {
        // Dedup by meaning against what is stored (the index is brought up to date first).
        let at = chrono::DateTime::parse_from_rfc3339(&obs.timestamp)
            .map_or(ctx.now, |t| t.with_timezone(&chrono::Utc));
        let index = crate::index::Index::open(&repo)?;
        warnings.extend(index.refresh.warnings.clone());
        merged = store::dedup::nearest(
            &index,
            &obs.observation,
            repo.config.gate.dedup_threshold,
            at,
        )?;
        let (line, subject, trailer) = match &merged {
            Some(m) => (
                store::dedup::merge_event(m, &obs.id, ctx.now),
                format!("remember: merged into {} ({:.2})", m.into, m.similarity),
                m.into.clone(),
            ),
            None => (
                serde_json::to_string(obs).expect("observation serializes"),
                format!("remember: {}", summary(&obs.observation)),
                obs.id.clone(),
            ),
        };
        let lines = [line];
        // Noted first: a kill before the commit leaves the line to the next writer's commit.
        ctx.begin_writes(&repo, &[store::day_file(ctx.now)])?;
        let (rel, _) = store::append(&repo, &lines, ctx.now)?;
        super::failpoint("remember-after-append");
        let msg = super::message(&subject, &[("Cairn-Observation", trailer)]);
        let change = crate::git::Change::appended_lines(&rel, &lines);
        commit = ctx.commit_changes_with_pending(&repo, &[change], &msg)?;
        path = Some(rel);
    } else {
        commit = ctx.commit_left_pending(&repo, "remember")?;
    }
    let inserted = !duplicate && merged.is_none();
    let counts = json!({
        "allowed": u8::from(judged.verdict == Verdict::Allow && inserted),
        "held": u8::from(judged.verdict == Verdict::Hold && inserted),
        "discarded": u8::from(judged.verdict == Verdict::Discard),
        "duplicates": u8::from(duplicate),
        "deduped": u8::from(merged.is_some()),
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "gate",
        "remember",
        true,
        started,
        counts.clone(),
    ));
    let stored = judged.observation.is_some() && inserted;
    let human = if judged.verdict == Verdict::Discard {
        format!(
            "not stored: the write gate discarded it ({})",
            judged.reason
        )
    } else if let Some(m) = &merged {
        format!(
            "merged into {} (similarity {:.2}; {})",
            m.into,
            m.similarity,
            ctx.short(&commit)
        )
    } else if duplicate {
        format!("already stored as {}; nothing changed", judged.id)
    } else {
        format!(
            "remembered {} ({}, {})",
            judged.id,
            judged.verdict.as_str(),
            ctx.short(&commit)
        )
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
    let status = if judged.verdict == Verdict::Discard {
        Status::NothingOrFailed
    } else {
        Status::Ok
    };
    Ok(Report::new("remember", data, human)
        .warnings(warnings)
        .status(status))
}

fn summary(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        format!("{}…", one_line.chars().take(60).collect::<String>())
    } else {
        one_line
    }
}

/// The largest file `import observations` reads (256 MiB; it is read whole and checked
/// before anything is written).
pub const MAX_IMPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Above this many records an import dedups by id only (comparing each with every other by
/// meaning grows with the square of the count).
const DEDUP_LIMIT: usize = 5000;

pub fn import(ctx: &Ctx, cmd: ImportCommand) -> Result<Report> {
    let ImportCommand::Observations { file, raw, .. } = cmd;
    let started = Instant::now();
    let repo = ctx.repo()?;
    let file = if file.is_absolute() {
        file
    } else {
        ctx.cwd.join(file)
    };
    // Read whole and checked before anything is written: the cap bounds what that costs.
    let size = std::fs::metadata(&file)
        .map_err(|e| Error::io(file.display(), &e))?
        .len();
    if size > MAX_IMPORT_BYTES {
        return Err(Error::bad_input(format!(
            "{} is {size} bytes, over the {MAX_IMPORT_BYTES} bytes an import may have; nothing was written",
            file.display()
        ))
        .with_fix(format!(
            "split it into parts of whole lines (`split -C 200M {} part-`) and import each",
            file.display()
        )));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(file.display(), &e))?;
    let redactor =
        crate::redact::Redactor::configured(&repo.config.redact.patterns).map_err(|e| {
            Error::new(
                crate::error::Kind::Config,
                format!("cairn.toml [redact]: {e}"),
            )
        })?;
    // Read and check every line before writing anything.
    let candidates =
        store::write::read_candidates(&text, &file.display().to_string(), raw, &redactor)
            .map_err(Error::bad_input)?;
    let source = format!("import:{}", super::file_name(&file));
    let _lock = repo.lock()?;
    let mut seen = store::ids(&repo)?;
    let bar = output::progress(candidates.len() as u64, ctx.interactive, "importing");
    let mut warnings = Vec::new();
    // Dedup by meaning (not with --raw): against what is stored and what this import keeps.
    let mut index = None;
    if !raw {
        if candidates.len() <= DEDUP_LIMIT {
            let opened = crate::index::Index::open(&repo)?;
            warnings.extend(opened.refresh.warnings.clone());
            index = Some(opened);
        } else {
            warnings.push(format!(
                "dedup by meaning skipped: {} records (more than {DEDUP_LIMIT}); ids still dedup exactly",
                candidates.len()
            ));
        }
    }
    let settings = store::admit::Settings {
        raw,
        default_source: &source,
        min_chars: repo.config.gate.min_chars,
        threshold: repo.config.gate.dedup_threshold,
        now: ctx.now,
    };
    let admitted = store::admit::admit(
        &candidates,
        &settings,
        &mut seen,
        index.as_ref(),
        &mut || bar.inc(1),
    )?;
    let store::admit::Admitted {
        lines,
        allowed,
        held,
        discarded,
        duplicates,
        merged,
        ..
    } = admitted;
    bar.finish_and_clear();
    let commit;
    let mut path = None;
    if !lines.is_empty() {
        // Noted first: a kill before the commit leaves the lines to the next writer's commit.
        ctx.begin_writes(&repo, &[store::day_file(ctx.now)])?;
        let (rel, _) = store::append(&repo, &lines, ctx.now)?;
        super::failpoint("import-after-append");
        let subject = format!(
            "import: {} from {}",
            output::count(lines.len() as u64 - merged, "observation"),
            super::file_name(&file)
        );
        commit = ctx.commit_changes_with_pending(
            &repo,
            &[crate::git::Change::appended_lines(&rel, &lines)],
            &super::message(&subject, &[]),
        )?;
        path = Some(rel);
    } else {
        commit = ctx.commit_left_pending(&repo, "import")?;
    }
    let counts = json!({
        "read": candidates.len(), "stored": lines.len() as u64 - merged, "allowed": allowed, "held": held,
        "discarded": discarded, "duplicates": duplicates, "deduped": merged, "raw": raw,
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "gate",
        "import",
        true,
        started,
        counts.clone(),
    ));
    let human = format!(
        "imported {} of {} ({allowed} allowed, {held} held, {discarded} discarded, {}, {merged} merged by meaning; {})",
        lines.len() as u64 - merged,
        output::count(candidates.len(), "observation"),
        output::count(duplicates, "duplicate"),
        ctx.short(&commit)
    );
    let data = json!({ "counts": counts, "path": path, "commit": commit });
    Ok(Report::new("import_observations", data, human)
        .warnings(warnings)
        .next(Next::new("cairn recall", "see what is recalled now")))
}
