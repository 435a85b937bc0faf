//! `cairn why TEXT|ID [--query Q]`: what became of a text, step by step through the pipeline
//! (see [`crate::why`]).

use serde_json::json;

use super::Ctx;
use crate::error::Result;
use crate::index::{Filter, Index};
use crate::output::{Next, Report};
use crate::recall::{self, Profile, Request};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A record id (ob-…, tc-…, pr-…, sl-…, ep-…, adr-N, MEMORY.md:N) or a text
    #[arg(required = true)]
    pub target: Vec<String>,
    /// Also say where each record found ranks for this recall query, and why it is not
    /// recalled when it is not
    #[arg(long, value_name = "Q")]
    pub query: Option<String>,
    /// The profile whose cap the query is ranked against [default: from cairn.toml]
    #[arg(long)]
    pub profile: Option<String>,
    /// Rank the query as `recall --include-hold` does
    #[arg(long)]
    pub include_hold: bool,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let repo = ctx.repo()?;
    let target = args.target.join(" ");
    let index = Index::open(&repo)?;
    let query = match args.query.as_deref().map(str::trim) {
        Some(q) if !q.is_empty() => {
            let asked = args
                .profile
                .clone()
                .unwrap_or_else(|| repo.config.recall.profile.clone());
            let profile = Profile::choose(&asked, q, ctx.stdout_terminal)?;
            let mode = recall::Mode::parse(&repo.config.recall.mode)?;
            Some(Request {
                // The query as written: a rank that an LLM's rewrite would move is not a
                // diagnosis anyone can repeat.
                query: q.to_string(),
                limit: profile.limit(&repo.config),
                filter: Filter {
                    kinds: Vec::new(),
                    category: None,
                    include_hold: args.include_hold,
                },
                now: ctx.now,
                mode,
            })
        }
        _ => None,
    };
    let ask = crate::why::Ask {
        target: target.clone(),
        query,
        now: ctx.now,
    };
    let transcripts = super::sessions::transcripts(&repo);
    let trace = crate::why::trace(&repo, &index, &ask, &transcripts)?;
    let empty = trace.is_empty();
    let mut human = crate::why::text::render(&trace);
    if empty {
        human.push_str(
            "no record holds it as written: not in a transcript ingested, not stored, not \
             merged into another\n",
        );
    }
    let data = json!({ "now": crate::time::format(ctx.now), "trace": trace });
    let mut report = Report::new("why", data, human)
        .warnings(index.warnings())
        .empty_when(empty, format!("nothing holds \"{target}\""));
    if empty {
        report = report
            .next(Next::new(
                format!("cairn search --exact \"{target}\""),
                "look for the words in any record, as written",
            ))
            .next(Next::new(
                "cairn stats --since 7d",
                "what the gate discarded is only counted, never stored",
            ));
    }
    Ok(report)
}
