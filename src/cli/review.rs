//! `cairn review`: a person decides the proposals that wait (tier 3).
//!
//! On a terminal, one proposal at a time with its sources and diff, then approve / edit /
//! reject / skip / quit ([`crate::review::prompt`]). For scripts and agents the same decisions
//! are flags: `--list`, `--show ID`, `--approve ID [--text TEXT]`, `--reject ID --why TEXT`.
//! Each decision takes the lock, reads the proposals again (another process may have decided
//! it), and is one commit; a decided proposal's ref `refs/cairn/proposals/<id>` is deleted.

use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::git;
use crate::output::{self, Next, Report};
use crate::proposals::{self, Decision, Folded, Tier};
use crate::repo::Repo;
use crate::review::{self, View, prompt, sources};

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("action").args(["list", "show", "approve", "reject"])
))]
pub struct Args {
    /// List the proposals that wait for review
    #[arg(long)]
    pub list: bool,
    /// Show a proposal (its id, or a unique start of it) with its sources and the diff of
    /// MEMORY.md
    #[arg(long, value_name = "ID")]
    pub show: Option<String>,
    /// Approve a proposal: its change to MEMORY.md becomes one commit
    #[arg(long, value_name = "ID")]
    pub approve: Option<String>,
    /// With --approve: the entry's text, in place of the proposal's
    #[arg(long, value_name = "TEXT", requires = "approve")]
    pub text: Option<String>,
    /// Reject a proposal (give the reason with --why)
    #[arg(long, value_name = "ID", requires = "why")]
    pub reject: Option<String>,
    /// With --reject: why it is rejected
    #[arg(long, value_name = "TEXT", requires = "reject")]
    pub why: Option<String>,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let repo = ctx.repo()?;
    if args.list {
        return list(&repo);
    }
    if let Some(id) = &args.show {
        return show(ctx, &repo, id);
    }
    let writes = args.approve.is_some() || args.reject.is_some() || ctx.interactive;
    // What an interrupted decision left is finished before anything else is decided.
    let (done, finished) = if writes {
        let _lock = repo.lock()?;
        ctx.finish_interrupted(&repo)?
    } else {
        Default::default()
    };
    if let Some(id) = &args.approve {
        return Ok(approve(ctx, &repo, id, args.text.as_deref(), &done)?.warnings(finished));
    }
    if let (Some(id), Some(why)) = (&args.reject, &args.why) {
        return Ok(reject(ctx, &repo, id, why, &done)?.warnings(finished));
    }
    if !ctx.interactive {
        return Err(Error::bad_input(
            "`cairn review` prompts, and stdin or stderr is not a terminal",
        )
        .with_fix(
            "use `cairn review --list`, `--show ID`, `--approve ID [--text TEXT]` or \
             `--reject ID --why TEXT` (add --json for one JSON object)",
        ));
    }
    Ok(interactive(ctx, &repo)?.warnings(finished))
}

fn list(repo: &Repo) -> Result<Report> {
    let loaded = proposals::load(repo)?;
    let pending: Vec<&Folded> = loaded.pending().collect();
    let mut human = String::new();
    for f in &pending {
        let p = &f.proposal;
        human.push_str(&format!(
            "{}  {:<7}  {}: {}\n",
            p.id,
            p.op.as_str(),
            p.section,
            review::summary(&p.text)
        ));
    }
    let data = json!({ "pending": pending.len(), "proposals": pending });
    let empty = pending.is_empty();
    let mut report = Report::new("review_list", data, human)
        .warnings(loaded.warnings.clone())
        .empty_when(empty, "no proposals wait for review");
    if let Some(first) = pending.first() {
        report = report.next(Next::new(
            format!("cairn review --show {}", first.proposal.id),
            "see the first one with its diff",
        ));
    }
    Ok(report)
}

fn show(ctx: &Ctx, repo: &Repo, query: &str) -> Result<Report> {
    let loaded = proposals::load(repo)?;
    let f = review::find(&loaded.proposals, query)?;
    let memory = read_memory(repo)?;
    let found = sources::lookup(repo, &f.proposal.observations)?;
    let view = View::new(f, &memory, None, found, ctx.now.date_naive());
    let position = loaded
        .pending()
        .position(|p| p.proposal.id == f.proposal.id)
        .map(|i| (i + 1, loaded.pending().count()));
    let human = view.render(position, ctx.stdout_terminal && !ctx.json);
    let id = f.proposal.id.clone();
    let pending = f.state == proposals::State::Pending;
    let mut report = Report::new(
        "review_show",
        serde_json::to_value(&view).expect("view serializes"),
        human,
    )
    .warnings(loaded.warnings.clone());
    if pending {
        report = report
            .next(Next::new(
                format!("cairn review --approve {id}"),
                "make this change, one commit",
            ))
            .next(Next::new(
                format!("cairn review --reject {id} --why \"REASON\""),
                "never propose it again from these observations",
            ));
    }
    Ok(report)
}

/// `approve` or `reject` run again after it was killed: the interrupted run's journal was
/// finished just now, so the proposal is decided as asked and the rerun says so.
fn finished_now(done: &[String], id: &str, kind: &'static str, verb: &str) -> Option<Report> {
    done.iter().any(|d| d == id).then(|| {
        let data = json!({ "id": id, verb: true, "finished_interrupted": true });
        Report::new(
            kind,
            data,
            format!("{verb} {id} (the interrupted run's decision, finished now)"),
        )
    })
}

fn approve(
    ctx: &Ctx,
    repo: &Repo,
    query: &str,
    text: Option<&str>,
    done: &[String],
) -> Result<Report> {
    let started = Instant::now();
    let text = text.map(|t| person_text(repo, t)).transpose()?;
    let id = {
        let loaded = proposals::load(repo)?;
        review::find(&loaded.proposals, query)?.proposal.id.clone()
    };
    if let Some(report) = finished_now(done, &id, "review_approve", "approved") {
        return Ok(report);
    }
    let outcome = approve_one(ctx, repo, &id, text.as_deref())?;
    let warnings: Vec<String> = telemetry(ctx, repo, "approve", started, &outcome)
        .into_iter()
        .collect();
    Ok(match outcome {
        Approval::Done {
            commit,
            memory_changed,
            text,
            edited,
        } => {
            let human = approved_line(ctx, &id, memory_changed, &commit);
            let data = json!({
                "id": id, "approved": true, "text": text, "edited": edited,
                "memory_changed": memory_changed, "commit": commit, "pending": false,
            });
            Report::new("review_approve", data, human).warnings(warnings)
        }
        Approval::Gone(message) => {
            let data = json!({
                "id": id, "approved": false, "pending": true, "cannot_apply": message,
            });
            Report::new("review_approve", data, String::new())
                .warnings(warnings)
                .empty_when(true, message)
                .next(Next::new(
                    format!("cairn review --reject {id} --why \"REASON\""),
                    "reject it if the entry was removed on purpose",
                ))
        }
    })
}

fn reject(ctx: &Ctx, repo: &Repo, query: &str, why: &str, done: &[String]) -> Result<Report> {
    let started = Instant::now();
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    if why.is_empty() {
        return Err(Error::bad_input("--why is empty").with_fix("say why it is rejected"));
    }
    let id = {
        let loaded = proposals::load(repo)?;
        review::find(&loaded.proposals, query)?.proposal.id.clone()
    };
    if let Some(report) = finished_now(done, &id, "review_reject", "rejected") {
        return Ok(report);
    }
    let commit = reject_one(ctx, repo, &id, &why)?;
    let warnings: Vec<String> = crate::telemetry::emit(
        repo,
        ctx.now,
        "review",
        "reject",
        true,
        started,
        json!({ "id": id }),
    )
    .into_iter()
    .collect();
    let human = format!("rejected {id} ({})", ctx.short(&commit));
    let data = json!({ "id": id, "rejected": true, "reason": why, "commit": commit });
    Ok(Report::new("review_reject", data, human).warnings(warnings))
}

/// What came of an approval.
enum Approval {
    Done {
        commit: Option<git::Committed>,
        memory_changed: bool,
        text: String,
        edited: bool,
    },
    /// The entry it changes is gone from MEMORY.md: it stays pending; the message says so.
    Gone(String),
}

/// Approves pending proposal `id` (with `text` in place of its own): the change spliced into
/// the current MEMORY.md and the decision, in one commit; then its ref goes.
fn approve_one(ctx: &Ctx, repo: &Repo, id: &str, text: Option<&str>) -> Result<Approval> {
    let _lock = repo.lock()?;
    let loaded = proposals::load(repo)?;
    let f = pending_by_id(&loaded, id)?;
    let p = &f.proposal;
    let text = text.filter(|t| *t != p.text);
    let decided =
        match proposals::decide(repo, p, Decision::Promote, Tier::Human, "", text, ctx.now)? {
            Ok(d) => d,
            Err(e) => return Ok(Approval::Gone(review::gone_message(id, &e))),
        };
    let final_text = text.unwrap_or(&p.text).to_string();
    let subject = review::subject(p, &final_text, text.is_some());
    let trailers = decision_trailers(p, &[]);
    let commit = ctx.commit_journaled(
        repo,
        &crate::journal::Journal {
            message: super::message(&subject, &trailers),
            steps: decided.steps,
            refs: vec![id.to_string()],
        },
    )?;
    Ok(Approval::Done {
        commit,
        memory_changed: decided.memory_changed,
        text: final_text,
        edited: text.is_some(),
    })
}

/// Rejects pending proposal `id` for `why`: the decision event and a `reject` event for each
/// observation it stood on (they leave the briefing, rank lower in recall and are never
/// proposed again: ADR 105), one commit, so that a `git revert` of it undoes both; its ref goes.
fn reject_one(ctx: &Ctx, repo: &Repo, id: &str, why: &str) -> Result<Option<git::Committed>> {
    let _lock = repo.lock()?;
    let loaded = proposals::load(repo)?;
    let f = pending_by_id(&loaded, id)?;
    let p = &f.proposal;
    let mut decided =
        proposals::decide(repo, p, Decision::Reject, Tier::Human, why, None, ctx.now)?
            .map_err(|e| Error::new(Kind::Io, e.to_string()))?;
    decided
        .steps
        .extend(review::reject_observations(repo, p, ctx.now));
    let subject = format!("review: reject {}: {}", p.id, review::summary(&p.text));
    let trailers = decision_trailers(p, &[("Cairn-Reason", why.to_string())]);
    ctx.commit_journaled(
        repo,
        &crate::journal::Journal {
            message: super::message(&subject, &trailers),
            steps: decided.steps,
            refs: vec![id.to_string()],
        },
    )
}

/// The trailers of a person's decision about `p`, the same for every decision (README:
/// review): `Cairn-Proposal`, `Cairn-Observations` (when it stands on any), `Cairn-Tier:
/// human`, then `more`.
fn decision_trailers(
    p: &proposals::Proposal,
    more: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    let mut trailers = vec![("Cairn-Proposal", p.id.clone())];
    if !p.observations.is_empty() {
        trailers.push(("Cairn-Observations", p.observations.join(", ")));
    }
    trailers.push(("Cairn-Tier", Tier::Human.as_str().to_string()));
    trailers.extend(more.iter().cloned());
    trailers
}

fn pending_by_id<'a>(loaded: &'a proposals::Loaded, id: &str) -> Result<&'a Folded> {
    let f = loaded
        .get(id)
        .ok_or_else(|| review::Error::NotFound(id.to_string()))?;
    Ok(review::pending(f)?)
}

/// A text a person gave for an entry: one line, within the entry limit, redacted.
fn person_text(repo: &Repo, text: &str) -> Result<String> {
    let text = review::clean_text(text)?;
    let redacted = crate::redact::redact_one(&repo.config.redact.patterns, &text)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
    Ok(redacted.into_owned())
}

fn read_memory(repo: &Repo) -> Result<String> {
    Ok(crate::files::read_optional(&repo.path(crate::memory::FILE))?.unwrap_or_default())
}

fn approved_line(
    ctx: &Ctx,
    id: &str,
    memory_changed: bool,
    commit: &Option<git::Committed>,
) -> String {
    if memory_changed {
        format!("approved {id} ({})", ctx.short(commit))
    } else {
        format!(
            "approved {id}: MEMORY.md already said it ({})",
            ctx.short(commit)
        )
    }
}

fn telemetry(
    ctx: &Ctx,
    repo: &Repo,
    action: &str,
    started: Instant,
    outcome: &Approval,
) -> Option<String> {
    let meta = match outcome {
        Approval::Done { edited, .. } => json!({ "approved": true, "edited": edited }),
        Approval::Gone(_) => json!({ "approved": false, "gone": true }),
    };
    crate::telemetry::emit(repo, ctx.now, "review", action, true, started, meta)
}

/// The decisions of one interactive session.
#[derive(Default, serde::Serialize)]
struct Tally {
    approved: Vec<String>,
    edited: Vec<String>,
    rejected: Vec<String>,
    skipped: Vec<String>,
    /// Approved, but the entry it changes was gone: still pending.
    cannot_apply: Vec<String>,
}

fn interactive(ctx: &Ctx, repo: &Repo) -> Result<Report> {
    let started = Instant::now();
    let loaded = proposals::load(repo)?;
    for w in &loaded.warnings {
        output::notice(&format!("warning: {w}"));
    }
    let queue: Vec<String> = loaded.pending().map(|p| p.proposal.id.clone()).collect();
    drop(loaded);
    let total = queue.len();
    let colours = prompt::colours();
    let mut tally = Tally::default();
    let mut quit = false;
    for (i, id) in queue.iter().enumerate() {
        // Read again: another process (triage, a second review) may have decided it.
        let loaded = proposals::load(repo)?;
        let Some(f) = loaded
            .get(id)
            .filter(|f| f.state == proposals::State::Pending)
        else {
            continue;
        };
        let found = sources::lookup(repo, &f.proposal.observations)?;
        let mut edited: Option<String> = None;
        loop {
            let memory = read_memory(repo)?;
            let view = View::new(
                f,
                &memory,
                edited.as_deref(),
                found.clone(),
                ctx.now.date_naive(),
            );
            prompt::show(&format!(
                "\n{}\n",
                view.render(Some((i + 1, total)), colours)
            ))?;
            match prompt::choose()? {
                prompt::Choice::Approve => {
                    match approve_one(ctx, repo, id, edited.as_deref())? {
                        Approval::Done {
                            commit,
                            memory_changed,
                            ..
                        } => {
                            output::notice(&approved_line(ctx, id, memory_changed, &commit));
                            if edited.is_some() {
                                tally.edited.push(id.clone());
                            } else {
                                tally.approved.push(id.clone());
                            }
                        }
                        Approval::Gone(message) => {
                            output::notice(&message);
                            tally.cannot_apply.push(id.clone());
                        }
                    }
                    break;
                }
                prompt::Choice::Edit => {
                    let current = edited.as_deref().unwrap_or(&f.proposal.text);
                    match prompt::edit(current, &f.proposal.section) {
                        Ok(Some(t)) => match person_text(repo, &t) {
                            Ok(t) => edited = (t != f.proposal.text).then_some(t),
                            Err(e) => output::notice(&format!("error: {}", e.message)),
                        },
                        Ok(None) => {
                            output::notice("nothing but comments left: the text is unchanged")
                        }
                        Err(e) => output::notice(&format!("error: {}", e.message)),
                    }
                }
                prompt::Choice::Reject => {
                    // Ctrl-C at the reason: nothing rejected, the session ends as after quit.
                    let Some(why) = prompt::reason()? else {
                        quit = true;
                        break;
                    };
                    let commit = reject_one(ctx, repo, id, &why)?;
                    output::notice(&format!("rejected {id} ({})", ctx.short(&commit)));
                    tally.rejected.push(id.clone());
                    break;
                }
                prompt::Choice::Skip => {
                    tally.skipped.push(id.clone());
                    break;
                }
                prompt::Choice::Quit => {
                    quit = true;
                    break;
                }
            }
        }
        if quit {
            break;
        }
    }
    let left = proposals::load(repo)?.pending().count();
    let human = format!(
        "{} approved, {} edited, {} rejected, {} skipped; {} left",
        tally.approved.len(),
        tally.edited.len(),
        tally.rejected.len(),
        tally.skipped.len(),
        output::count(left, "proposal")
    );
    let meta = json!({
        "approved": tally.approved.len(), "edited": tally.edited.len(),
        "rejected": tally.rejected.len(), "skipped": tally.skipped.len(), "left": left,
    });
    let warnings: Vec<String> =
        crate::telemetry::emit(repo, ctx.now, "review", "session", true, started, meta)
            .into_iter()
            .collect();
    let data = json!({ "decisions": tally, "pending": left });
    Ok(Report::new("review", data, human)
        .warnings(warnings)
        .empty_when(total == 0, "no proposals wait for review"))
}
