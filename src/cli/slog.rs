//! `cairn slog ACTION TOOL DETAIL` and `cairn slog query`.

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::output::{Next, Report, Status};
use crate::slog::{self, NewEntry, Query};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub query: Option<Sub>,

    /// What was done: a verb (deploy, fix, configure, …)
    #[arg(required = true)]
    pub action: Option<String>,
    /// What it was done to: a noun (caddy, redis, …)
    #[arg(required = true)]
    pub tool: Option<String>,
    /// What happened, in one line of at most 4000 characters (`-` reads it from stdin)
    #[arg(required = true)]
    pub detail: Option<String>,
    /// Why it was done, in at most 4000 characters
    #[arg(long)]
    pub reason: Option<String>,
    /// The agent session this happened in
    #[arg(long, env = "CAIRN_SESSION")]
    pub session: Option<String>,
    /// Who did it (an agent's or a person's name)
    #[arg(long, env = "CAIRN_ACTOR")]
    pub actor: Option<String>,
    /// Tags, comma-separated or repeated
    #[arg(long = "tags", alias = "tag", value_name = "TAGS")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Query the log, newest first
    Query(QueryArgs),
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// Words that must all appear (any case)
    pub words: Vec<String>,
    /// Only this action
    #[arg(long)]
    pub action: Option<String>,
    /// Only this tool
    #[arg(long)]
    pub tool: Option<String>,
    /// Only entries at or after this time (RFC 3339, YYYY-MM-DD, or 30m / 12h / 7d / 2w ago)
    #[arg(long)]
    pub since: Option<String>,
    /// Only entries at or before this time
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many entries (0 for all)
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    if let Some(Sub::Query(q)) = args.query {
        return query(ctx, q);
    }
    let repo = ctx.repo()?;
    // No secret reaches the repository: the free text is redacted before it is written.
    let patterns = &repo.config.redact.patterns;
    let red = |s: String| -> Result<String> {
        crate::redact::redact_one(patterns, &s)
            .map(|c| c.into_owned())
            .map_err(|e| {
                crate::error::Error::new(
                    crate::error::Kind::Config,
                    format!("cairn.toml [redact]: {e}"),
                )
            })
    };
    let detail = match args.detail.as_deref() {
        Some("-") => {
            // Four bytes a character at most, and the newline a pipe adds.
            let max = crate::slog::MAX_DETAIL_CHARS as u64 * 4 + 2;
            let text = super::read_stdin("a detail", max)?;
            // A piped line ends in a newline; that is not part of the detail.
            text.trim_end_matches(['\n', '\r']).to_string()
        }
        _ => args.detail.unwrap_or_default(),
    };
    let new = NewEntry {
        action: args.action.unwrap_or_default(),
        tool: args.tool.unwrap_or_default(),
        detail: red(detail)?,
        reason: args.reason.map(red).transpose()?,
        session: args.session,
        actor: args.actor,
        tags: args.tags,
    };
    let committing = !ctx.no_commit && repo.config.git.commit;
    // Appends are atomic on their own (the day file's lock); the repository lock is needed
    // only to make this entry's commit hold exactly this entry.
    let _lock = if committing { Some(repo.lock()?) } else { None };
    // A kill between the append and the commit would leave the line out of every later commit
    // (each commits HEAD's file plus its own line): the path is noted first, and the next
    // writer commits what a killed one left (found by the crash harness).
    // Every slog is new work: a killed one's line is committed first, under its own subject.
    let work = super::Work::each_new("slog");
    let subject = format!("slog: {} {}", new.action, new.tool);
    ctx.begin_writes(&repo, &work, &[slog::day_file(ctx.now)], Some(&subject))?;
    let appended = slog::append(&repo, new, ctx.now)?;
    super::failpoint("slog-after-append");
    let e = &appended.entry;
    let msg = super::message(&subject, &[("Cairn-Slog", e.id.clone())]);
    let change = crate::git::Change::Appended {
        path: appended.rel_path.clone(),
        bytes: appended.line.clone(),
    };
    let commit = ctx.commit_changes_with_pending(&repo, &work, &[change], &msg)?;
    let mut warnings = Vec::new();
    if let Some(saved) = &appended.recovered {
        warnings.push(format!(
            "{} ended in a torn line (a write cut short); it was cut and saved to {}",
            appended.rel_path,
            saved.display()
        ));
    }
    let human = format!(
        "logged {} {} {} ({}, {})",
        e.id,
        e.action,
        e.tool,
        appended.rel_path,
        ctx.short(&commit)
    );
    let data = json!({ "entry": e, "path": appended.rel_path, "commit": commit });
    Ok(Report::new("slog", data, human).warnings(warnings))
}

fn query(ctx: &Ctx, args: QueryArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let time = |t: &Option<String>| {
        t.as_deref()
            .map(|t| crate::time::parse(t, ctx.now))
            .transpose()
            .map_err(Error::bad_input)
    };
    let q = Query {
        action: args.action,
        tool: args.tool,
        since: time(&args.since)?,
        until: time(&args.until)?,
        words: args.words,
        limit: args.limit,
    };
    let found = slog::query(&repo, &q)?;
    let mut warnings: Vec<String> = found.bad.iter().map(|m| m.warning()).collect();
    warnings.extend(found.torn.iter().map(|t| t.warning()));
    let mut human = String::new();
    for e in &found.entries {
        human.push_str(&format!(
            "{}  {:<10} {:<14} {}",
            e.ts, e.action, e.tool, e.detail
        ));
        if let Some(r) = &e.reason {
            human.push_str(&format!("  (because {r})"));
        }
        human.push('\n');
    }
    if found.entries.len() < found.matched {
        human.push_str(&format!(
            "… {} more; raise --limit to see them\n",
            found.matched - found.entries.len()
        ));
    }
    let status = if found.entries.is_empty() {
        Status::NothingOrFailed
    } else {
        Status::Ok
    };
    let mut report = Report::new(
        "slog_query",
        json!({
            "entries": found.entries,
            "matched": found.matched,
            "warnings": warnings,
        }),
        human,
    )
    .warnings(warnings)
    .status(status)
    .empty_when(found.entries.is_empty(), "no slog entries found");
    if !found.torn.is_empty() || !found.bad.is_empty() {
        report = report.next(Next::new(
            "cairn doctor",
            "move the damaged lines aside to .cairn/recovered/",
        ));
    }
    Ok(report)
}
