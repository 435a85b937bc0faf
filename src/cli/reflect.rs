//! `cairn reflect [--since TIME] [--reflector auto|builtin|llm] [--dry-run]`.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::output::{Next, Report};
use crate::proposals::{self, Proposal};
use crate::provider::ask::ask;
use crate::provider::chat::ChatClient;
use crate::redact::Redactor;
use crate::reflect::{self, Input, Reflection, Since, builtin};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Reflect on the observations from this time on, whatever the last reflection read
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// builtin (offline, by vector), llm (the [llm] provider), or auto (llm when one is
    /// configured)
    #[arg(long, default_value = "auto")]
    pub reflector: String,
    /// Write nothing: list what would be proposed
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Output tokens allowed for the reply.
const MAX_TOKENS: u32 = 8192;

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    if !matches!(args.reflector.as_str(), "builtin" | "auto" | "llm") {
        return Err(Error::bad_input(format!(
            "--reflector {:?} is not builtin, llm or auto",
            args.reflector
        )));
    }
    let since = args
        .since
        .as_deref()
        .map(|t| crate::time::parse(t, ctx.now))
        .transpose()
        .map_err(Error::bad_input)?;
    let mut warnings = Vec::new();
    let client = if args.reflector == "builtin" {
        None
    } else {
        ChatClient::from_config(&repo.config.llm).map_err(provider_error)?
    };
    if client.is_none() && args.reflector == "llm" {
        return Err(
            Error::new(Kind::Config, "--reflector llm, but [llm] names no provider")
                .with_fix("set [llm] provider, base_url and model in cairn.toml"),
        );
    }
    let reflector = client
        .as_ref()
        .map_or(builtin::NAME.to_string(), |c| c.model().to_string());

    let _lock = if args.dry_run {
        None
    } else {
        Some(repo.lock()?)
    };
    if !args.dry_run {
        // A decision a killed triage or review left half done is finished first: reflecting
        // must see it decided and committed.
        warnings.extend(ctx.finish_interrupted(&repo)?.1);
    }
    let loaded = proposals::load(&repo)?;
    warnings.extend(loaded.warnings.iter().cloned());
    let since = since.map_or(Since::Mark, Since::Time);
    let input = reflect::read(&repo, &loaded, since, repo.config.reflect.min_confidence)?;
    let reflection = match &client {
        None => builtin::reflect(
            &input,
            &builtin::Settings {
                said_cosine: repo.config.reflect.said_cosine,
                join_cosine: repo.config.reflect.join_cosine,
                budget_tokens: repo.config.memory.budget_tokens,
                now: ctx.now,
            },
        ),
        Some(client) => match reflect_llm(client, &input, ctx, &repo.config) {
            Ok(r) => r,
            Err((message, tokens)) => {
                let meta = json!({
                    "reflector": reflector, "observations": input.read, "error": message,
                    "tokens_in": tokens.0, "tokens_out": tokens.1,
                });
                if let Some(w) =
                    crate::telemetry::emit(&repo, ctx.now, "reflect", "run", false, started, meta)
                {
                    crate::output::notice(&w);
                }
                return Err(Error::bad_input(message)
                    .with_fix("nothing was written; run again, or use --reflector builtin"));
            }
        },
    };
    // A proposal forgotten, or one that would bring a forgotten MEMORY.md entry back, is not
    // made again.
    let forgotten = crate::forget::tombstones(&repo)?;
    let mut reflection = reflection;
    reflection
        .proposals
        .retain(|p| !crate::forget::brings_back(&forgotten, p));
    let (lines, fresh) = reflect::lines(&loaded, &reflection, &input, &reflector, ctx.now);

    let mut by_op: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &fresh {
        *by_op.entry(p.op.as_str()).or_default() += 1;
    }
    let counts = json!({
        "reflector": reflector,
        "observations": input.read,
        "reflected": input.observations.len(),
        "not_allowed": input.not_allowed,
        "weak": input.weak,
        "already_cited": input.cited,
        "said": reflection.said,
        "joined": reflection.joined,
        "one_off": reflection.one_off,
        "unfit": reflection.unfit,
        "proposed": fresh.len(),
        "by_op": by_op,
        "tokens_in": reflection.tokens.0,
        "tokens_out": reflection.tokens.1,
        "llm_calls": reflection.calls,
    });

    if args.dry_run {
        let human = listing("would propose", &fresh, &input, &reflection);
        let data = json!({ "dry_run": true, "counts": counts, "proposals": fresh });
        return Ok(Report::new("reflect", data, human).warnings(warnings));
    }

    // The message is known before the first write and noted with it: a rerun that finds the
    // proposals already written commits them under it, not as "0 proposals".
    let subject = format!(
        "reflect: {} from {} ({reflector})",
        crate::output::count(fresh.len(), "proposal"),
        crate::output::count(input.read, "observation")
    );
    let trailers: Vec<(&str, String)> = fresh
        .iter()
        .take(20)
        .map(|p| ("Cairn-Proposal", p.id.clone()))
        .collect();
    let message = super::message(&subject, &trailers);
    let work = super::Work::rerun("reflect", format!("{:?}", args.since));
    let mut written = Vec::new();
    let mut path = None;
    if !lines.is_empty() {
        let rel = proposals::day_file(ctx.now);
        ctx.begin_writes(&repo, &work, std::slice::from_ref(&rel), Some(&message))?;
        written.push(proposals::append(&repo, &lines, ctx.now)?);
        super::failpoint("reflect-after-append");
        path = Some(rel);
    }
    let commit = ctx.commit_changes_with_pending(&repo, &work, &written, &message)?;
    super::failpoint("reflect-before-refs");
    // Refs stand on HEAD: without commits (--no-commit) there is nothing for them to show.
    let refs = if ctx.no_commit || !repo.config.git.commit {
        None
    } else {
        let identity = crate::git::Identity {
            fallback_name: &repo.config.git.fallback_name,
            fallback_email: &repo.config.git.fallback_email,
        };
        let synced = reflect::sync_refs(&repo, &identity)?;
        for f in &synced.failed {
            warnings.push(format!("no ref for proposal {f}"));
        }
        Some(synced)
    };
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "reflect",
        "run",
        true,
        started,
        json!({
            "counts": counts,
            "refs_made": refs.as_ref().map_or(0, |r| r.made),
            "refs_deleted": refs.as_ref().map_or(0, |r| r.deleted),
        }),
    ));
    let mut human = if input.read == 0 && fresh.is_empty() {
        "nothing new to reflect on".to_string()
    } else {
        listing("proposed", &fresh, &input, &reflection)
    };
    if !lines.is_empty() || commit.is_some() {
        human.push_str(&format!("\n{}", ctx.short(&commit)));
    }
    let data = json!({
        "dry_run": false,
        "counts": counts,
        "proposals": fresh,
        "path": path,
        "commit": commit,
        "refs": refs,
    });
    let mut report = Report::new("reflect", data, human).warnings(warnings);
    if !fresh.is_empty() {
        report = report.next(Next::new("cairn triage", "decide what the rules can"));
        report = report.next(Next::new("cairn review", "decide the rest yourself"));
    }
    Ok(report)
}

/// What was (or would be) proposed, for people.
fn listing(verb: &str, fresh: &[Proposal], input: &Input, r: &Reflection) -> String {
    let mut h = format!(
        "{verb} {} from {} ({} reflected on, {} already said in MEMORY.md, {} joined)",
        crate::output::count(fresh.len(), "change"),
        crate::output::count(input.read, "new observation"),
        input.observations.len(),
        r.said,
        r.joined
    );
    if r.unfit > 0 {
        // Counted apart: what made no clean MEMORY.md line (reflect::clean, ADR 117).
        h.insert_str(
            h.len() - 1,
            &format!(", {} made no clean MEMORY.md line", r.unfit),
        );
    }
    for p in fresh {
        h.push_str(&format!(
            "\n  {} {} [{}] {}",
            p.id,
            p.op.as_str(),
            p.section,
            p.text
        ));
    }
    if r.tokens != (0, 0) {
        h.push_str(&format!(
            "\n{} in, {} out",
            crate::output::count(r.tokens.0, "token"),
            crate::output::count(r.tokens.1, "token")
        ));
    }
    h
}

type Failed = (String, (u64, u64));

/// The model reads the observations in batches of `[reflect] llm_input_tokens` (one call each,
/// with MEMORY.md); a reply that does not parse whole, in any batch, is an error and nothing is
/// kept.
fn reflect_llm(
    client: &ChatClient,
    input: &Input,
    ctx: &Ctx,
    config: &crate::config::Config,
) -> std::result::Result<Reflection, Failed> {
    let mut out = Reflection::default();
    if input.observations.is_empty() {
        return Ok(out);
    }
    let redactor =
        Redactor::configured(&config.redact.patterns).map_err(|e| (e.to_string(), (0, 0)))?;
    let parsed_memory = crate::memory::parse(&input.memory);
    let entries: Vec<String> = parsed_memory
        .loose
        .iter()
        .chain(parsed_memory.sections.iter().flat_map(|s| s.entries.iter()))
        .map(|e| e.text.clone())
        .collect();
    let batches = reflect::batches(
        &input.observations,
        |o| o.observation.as_str(),
        config.reflect.llm_input_tokens.max(1),
    );
    let count = batches.len();
    for (n, batch) in batches.into_iter().enumerate() {
        let with_counts: Vec<_> = batch
            .iter()
            .map(|o| (o, input.recalls.get(&o.id).map_or(0, |c| c.count)))
            .collect();
        let (system, user) = reflect::llm::prompt(&with_counts, &input.memory);
        let ids: Vec<&str> = batch.iter().map(|o| o.id.as_str()).collect();
        let asked = ask(client, &system, &user, MAX_TOKENS, |text| {
            reflect::llm::parse(text, &ids, &entries)
        });
        let usage = match &asked {
            Ok((_, usage)) => Some(*usage),
            Err(e) => e.usage(),
        };
        if let Some(usage) = usage {
            out.calls += 1;
            out.tokens.0 += usage.input_tokens;
            out.tokens.1 += usage.output_tokens;
        }
        let call = if count > 1 {
            format!(" (call {} of {count})", n + 1)
        } else {
            String::new()
        };
        let (parsed, _) = asked.map_err(|e| (e.message(&call), out.tokens))?;
        let cited: std::collections::HashSet<&str> = parsed
            .iter()
            .flat_map(|p| p.sources.iter().map(String::as_str))
            .collect();
        for p in &parsed {
            out.proposals.push(Proposal::new(
                p.op,
                &p.section,
                &redactor.redact(&p.text),
                p.targets.clone(),
                &redactor.redact(&p.rationale),
                p.sources.clone(),
                p.confidence,
                client.model(),
                ctx.now,
            ));
        }
        out.joined += cited
            .len()
            .saturating_sub(parsed.iter().filter(|p| !p.sources.is_empty()).count());
    }
    Ok(out)
}

fn provider_error(e: crate::provider::Error) -> Error {
    let fix = e.fix();
    let err = Error::new(Kind::Config, e.to_string());
    match fix {
        Some(f) => err.with_fix(f),
        None => err,
    }
}
