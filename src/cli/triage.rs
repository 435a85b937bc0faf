//! `cairn triage [--dry-run]`: decides the pending reflection proposals that rules (tier 1)
//! or the LLM (tier 2) can decide, and leaves the rest for `cairn review` (tier 3).
//!
//! Everything is decided before anything is written: a malformed or cut LLM reply stops the
//! run with nothing written (exit 2, a failed telemetry event). Then each promotion is its own
//! commit (subject naming the change, trailers `Cairn-Proposal`, `Cairn-Observations`,
//! `Cairn-Tier`), so `git revert` undoes one; the rejections, merges and the LLM's
//! needs-review verdicts are one commit for the run. A decided proposal's ref is deleted.

use std::time::Instant;

use serde::Serialize;
use serde_json::json;

use super::Ctx;
use crate::embed::Builtin;
use crate::error::{Error, Kind, Result};
use crate::output::{Next, Report};
use crate::proposals::{self, ApplyError, Decision, Proposal, Tier};
use crate::provider::ask;
use crate::provider::chat::ChatClient;
use crate::triage::{self, Ruling, llm};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// List every decision triage would make, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Output tokens allowed per LLM call (20 decisions with clean texts and reasons).
const MAX_TOKENS: u32 = 4000;

/// A proposal left for a person, and why.
#[derive(Debug, Serialize)]
struct Left {
    id: String,
    reason: String,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let settings = triage::Settings::from_config(&repo.config);
    let mut warnings = Vec::new();
    let client = ChatClient::from_config(&repo.config.llm).map_err(|e| {
        let fix = e.fix();
        let err = Error::new(Kind::Config, e.to_string());
        match fix {
            Some(f) => err.with_fix(f),
            None => err,
        }
    })?;
    let _lock = if args.dry_run {
        None
    } else {
        Some(repo.lock()?)
    };
    if !args.dry_run {
        warnings.extend(ctx.finish_interrupted(&repo)?.1);
    }
    let loaded = proposals::load(&repo)?;
    warnings.extend(loaded.warnings.iter().cloned());
    let pending: Vec<&proposals::Folded> = loaded.pending().collect();
    let proposals: Vec<&Proposal> = pending.iter().map(|f| &f.proposal).collect();
    let memory_path = repo.path(crate::memory::FILE);
    let memory = crate::files::read_optional(&memory_path)?.unwrap_or_default();

    // Tier 1.
    let ruled = triage::tier1(&proposals, &memory, Builtin::shared(), &settings);
    let mut rulings: Vec<Ruling> = Vec::new();
    let mut rest: Vec<&Proposal> = Vec::new();
    let mut left: Vec<Left> = Vec::new();
    for ((f, p), r) in pending.iter().zip(&proposals).zip(ruled) {
        match r {
            Some(r) => rulings.push(r),
            // The LLM (or a person) has seen it: it waits for a person.
            None if f.tier.is_some() => left.push(Left {
                id: p.id.clone(),
                reason: format!("left for a person by the {} tier", tier_name(f.tier)),
            }),
            None => rest.push(p),
        }
    }

    // Tier 2.
    let mut tokens = (0u64, 0u64);
    let mut calls = 0u64;
    match &client {
        Some(client) if !rest.is_empty() => {
            let redactor = crate::redact::Redactor::configured(&repo.config.redact.patterns)
                .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
            let batch_size = repo.config.triage.batch_size.max(1);
            for batch in rest.chunks(batch_size) {
                match ask(client, batch, &memory) {
                    Ok((decided, usage)) => {
                        tokens.0 += usage.0;
                        tokens.1 += usage.1;
                        calls += 1;
                        for p in batch {
                            match decided.iter().find(|d| d.id == p.id) {
                                Some(d) => {
                                    // The LLM's words go into MEMORY.md and the proposals
                                    // file: no secret it copied reaches the repository.
                                    let mut r = llm_ruling(d, p, &settings);
                                    r.reason = redactor.redact(&r.reason).into_owned();
                                    r.text = r.text.map(|t| redactor.redact(&t).into_owned());
                                    rulings.push(r);
                                }
                                None => {
                                    rulings.push(Ruling {
                                        id: p.id.clone(),
                                        decision: Decision::NeedsReview,
                                        tier: Tier::Llm,
                                        reason: "the LLM gave no decision".into(),
                                        text: None,
                                        into: None,
                                    });
                                }
                            }
                        }
                    }
                    Err(message) => {
                        let meta = json!({
                            "error": message, "calls": calls, "tokens_in": tokens.0,
                            "tokens_out": tokens.1, "pending": proposals.len(),
                            "dry_run": args.dry_run,
                        });
                        if let Some(w) = crate::telemetry::emit(
                            &repo, ctx.now, "triage", "run", false, started, meta,
                        ) {
                            crate::output::notice(&w);
                        }
                        return Err(Error::bad_input(format!("tier 2: {message}"))
                            .with_fix("nothing was written; run `cairn triage` again, or set [llm] provider = \"\" to leave the rest for `cairn review`"));
                    }
                }
            }
        }
        _ => {
            for p in rest {
                left.push(Left {
                    id: p.id.clone(),
                    reason: if client.is_none() {
                        "no rule decides it and [llm] names no provider".into()
                    } else {
                        "no rule decides it".into()
                    },
                });
            }
        }
    }

    // Write.
    let by_id = |id: &str| proposals.iter().find(|p| p.id == id).copied();
    let mut promoted: Vec<serde_json::Value> = Vec::new();
    let mut commits: Vec<crate::git::Committed> = Vec::new();
    let mut done: Vec<&Ruling> = Vec::new();
    let mut gone: Vec<Left> = Vec::new();
    if !args.dry_run {
        for r in rulings.iter().filter(|r| r.decision == Decision::Promote) {
            let Some(p) = by_id(&r.id) else { continue };
            let decided = proposals::decide(
                &repo,
                p,
                Decision::Promote,
                r.tier,
                &r.reason,
                r.text.as_deref(),
                ctx.now,
            )?;
            match decided {
                Ok(d) => {
                    let subject = format!(
                        "memory: promote {} ({} {} {})",
                        p.id,
                        p.op.as_str(),
                        if p.op == proposals::Op::Add {
                            "to"
                        } else {
                            "in"
                        },
                        p.section
                    );
                    let mut trailers = vec![("Cairn-Proposal", p.id.clone())];
                    if !p.observations.is_empty() {
                        trailers.push(("Cairn-Observations", p.observations.join(", ")));
                    }
                    trailers.push(("Cairn-Tier", r.tier.as_str().to_string()));
                    let commit = ctx.commit_journaled(
                        &repo,
                        &crate::journal::Journal {
                            message: super::message(&subject, &trailers),
                            steps: d.steps,
                            refs: vec![p.id.clone()],
                        },
                    )?;
                    promoted.push(json!({ "id": p.id, "commit": commit }));
                    commits.extend(commit);
                    done.push(r);
                }
                Err(e) => {
                    let why = match &e {
                        ApplyError::Gone(_) => format!("{}: {e}; it stays pending", p.id),
                        ApplyError::Memory(m) => {
                            format!("{}: cannot go into MEMORY.md ({m}); it stays pending", p.id)
                        }
                    };
                    warnings.push(why.clone());
                    gone.push(Left {
                        id: p.id.clone(),
                        reason: why,
                    });
                }
            }
        }
        let others: Vec<&Ruling> = rulings
            .iter()
            .filter(|r| r.decision != Decision::Promote)
            .collect();
        if !others.is_empty() {
            let ts = crate::time::format(ctx.now);
            let lines: Vec<String> = others
                .iter()
                .map(|r| {
                    proposals::line(&proposals::Event::Decision {
                        id: r.id.clone(),
                        decision: r.decision,
                        tier: r.tier,
                        reason: r.reason.clone(),
                        text: None,
                        commit: None,
                        ts: ts.clone(),
                    })
                })
                .collect();
            let count = |d: Decision| others.iter().filter(|r| r.decision == d).count();
            let mut parts = Vec::new();
            for (d, word) in [
                (Decision::Reject, "rejected"),
                (Decision::Merge, "merged"),
                (Decision::NeedsReview, "left for review"),
            ] {
                let n = count(d);
                if n > 0 {
                    parts.push(format!("{n} {word}"));
                }
            }
            let subject = format!("triage: {}", parts.join(", "));
            let mut trailers: Vec<(&str, String)> = Vec::new();
            for t in [Tier::Auto, Tier::Llm] {
                if others.iter().any(|r| r.tier == t) {
                    trailers.push(("Cairn-Tier", t.as_str().to_string()));
                }
            }
            trailers.extend(others.iter().map(|r| ("Cairn-Proposal", r.id.clone())));
            let decided: Vec<String> = others
                .iter()
                .filter(|r| r.decision != Decision::NeedsReview)
                .map(|r| r.id.clone())
                .collect();
            let commit = ctx.commit_journaled(
                &repo,
                &crate::journal::Journal {
                    message: super::message(&subject, &trailers),
                    steps: vec![proposals::append_step(&lines, ctx.now)],
                    refs: decided,
                },
            )?;
            commits.extend(commit);
            done.extend(others);
        }
    } else {
        done.extend(rulings.iter());
    }

    // Report.
    let count = |t: Tier, d: Decision| {
        done.iter()
            .filter(|r| r.tier == t && r.decision == d)
            .count()
    };
    let per_tier = |t: Tier| {
        json!({
            "promote": count(t, Decision::Promote),
            "reject": count(t, Decision::Reject),
            "merge": count(t, Decision::Merge),
            "needs-review": count(t, Decision::NeedsReview),
        })
    };
    let waiting = left.len()
        + gone.len()
        + done
            .iter()
            .filter(|r| r.decision == Decision::NeedsReview)
            .count();
    let counts = json!({
        "pending": proposals.len(),
        "auto": per_tier(Tier::Auto),
        "llm": per_tier(Tier::Llm),
        "human": waiting,
        "gone": gone.len(),
        "calls": calls,
        "tokens_in": tokens.0,
        "tokens_out": tokens.1,
        "dry_run": args.dry_run,
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "triage",
        "run",
        true,
        started,
        counts.clone(),
    ));
    let tier_list =
        |t: Tier| -> Vec<&Ruling> { done.iter().copied().filter(|r| r.tier == t).collect() };
    let mut human_left: Vec<&Left> = left.iter().collect();
    human_left.extend(gone.iter());
    let data = json!({
        "dry_run": args.dry_run,
        "counts": counts,
        "auto": tier_list(Tier::Auto),
        "llm": tier_list(Tier::Llm),
        "human": human_left,
        "promoted": promoted,
        "commits": commits,
    });
    let human = render(
        ctx,
        &args,
        &done,
        &human_left,
        proposals.len(),
        calls,
        tokens,
        &commits,
    );
    let mut report = Report::new("triage", data, human).warnings(warnings);
    if waiting > 0 {
        report = report.next(Next::new("cairn review", "decide what waits for a person"));
    }
    Ok(report)
}

fn tier_name(t: Option<Tier>) -> &'static str {
    t.map_or("auto", Tier::as_str)
}

/// Asks the LLM about `batch`: its decisions and (tokens in, tokens out), or why not.
fn ask(
    client: &ChatClient,
    batch: &[&Proposal],
    memory: &str,
) -> std::result::Result<(Vec<llm::LlmDecision>, (u64, u64)), String> {
    let (system, user) = llm::prompt(batch, memory);
    let known: Vec<&str> = batch.iter().map(|p| p.id.as_str()).collect();
    let (decided, usage) = ask::ask(client, &system, &user, MAX_TOKENS, |text| {
        llm::parse(text, &known)
    })
    .map_err(|e| e.message(""))?;
    Ok((decided, (usage.input_tokens, usage.output_tokens)))
}

fn llm_ruling(d: &llm::LlmDecision, p: &Proposal, s: &triage::Settings) -> Ruling {
    let reason = if d.reason.is_empty() {
        "the LLM gave no reason".to_string()
    } else {
        d.reason.clone()
    };
    let (decision, reason, text) = match d.verdict {
        llm::Verdict::Promote if !s.auto_promote => (
            Decision::NeedsReview,
            format!("the LLM would promote it ({reason}); [triage] auto_promote is off"),
            None,
        ),
        llm::Verdict::Promote => (
            Decision::Promote,
            reason,
            d.text.clone().filter(|t| t.trim() != p.text.trim()),
        ),
        llm::Verdict::Reject => (Decision::Reject, reason, None),
        llm::Verdict::NeedsReview => (Decision::NeedsReview, reason, None),
    };
    Ruling {
        id: p.id.clone(),
        decision,
        tier: Tier::Llm,
        reason,
        text,
        into: None,
    }
}

#[allow(clippy::too_many_arguments)]
fn render(
    ctx: &Ctx,
    args: &Args,
    done: &[&Ruling],
    left: &[&Left],
    pending: usize,
    calls: u64,
    tokens: (u64, u64),
    commits: &[crate::git::Committed],
) -> String {
    if pending == 0 {
        return "nothing to triage: no proposal is pending".to_string();
    }
    let mut out = String::new();
    let verb = if args.dry_run { "would " } else { "" };
    for r in done {
        let what = match r.decision {
            Decision::Promote => "promote",
            Decision::Reject => "reject",
            Decision::Merge => "merge",
            Decision::NeedsReview => "leave for review",
        };
        out.push_str(&format!(
            "{} {verb}{what} {}: {}\n",
            r.tier.as_str(),
            r.id,
            r.reason
        ));
    }
    for l in left {
        out.push_str(&format!("human {}: {}\n", l.id, l.reason));
    }
    let n = |d: Decision| done.iter().filter(|r| r.decision == d).count();
    out.push_str(&format!(
        "{}{} pending: {} promoted, {} rejected, {} merged, {} wait for a person",
        if args.dry_run {
            "dry run, nothing written; "
        } else {
            ""
        },
        pending,
        n(Decision::Promote),
        n(Decision::Reject),
        n(Decision::Merge),
        left.len() + n(Decision::NeedsReview)
    ));
    if !args.dry_run {
        let c = commits.len();
        out.push_str(&format!(
            " ({})",
            if c == 0 {
                ctx.short(&None)
            } else {
                crate::output::count(c, "commit")
            }
        ));
    }
    if calls > 0 {
        out.push_str(&format!(
            "\n{}, {} in, {} out",
            crate::output::count(calls, "LLM call"),
            crate::output::count(tokens.0, "token"),
            crate::output::count(tokens.1, "token")
        ));
    }
    out
}
