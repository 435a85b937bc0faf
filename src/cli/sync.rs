//! `cairn sync [REMOTE]`.

use serde_json::json;

use super::Ctx;
use crate::error::Result;
use crate::output::{Next, Report};
use crate::sync::{self, Merge};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The git remote (a name or a URL) [default: the branch's upstream remote, else the only
    /// remote, else origin]
    pub remote: Option<String>,
    /// Stop any one git run (fetch, merge, push) that takes longer than this many seconds
    #[arg(
        long,
        env = "CAIRN_SYNC_TIMEOUT",
        default_value_t = 120,
        value_name = "SECS"
    )]
    pub timeout: u64,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let opts = sync::Options {
        remote: args.remote,
        timeout: std::time::Duration::from_secs(args.timeout.max(1)),
        identity: crate::git::Identity {
            fallback_name: &repo.config.git.fallback_name,
            fallback_email: &repo.config.git.fallback_email,
        },
    };
    let done = sync::sync(&repo, &opts)?;
    let mut human = format!(
        "synced {} with {} {}: ",
        done.branch, done.remote, done.remote_branch
    );
    let mut parts = Vec::new();
    if done.finished_merge {
        parts.push("the merge left in progress was committed".to_string());
    }
    parts.push(match done.merge {
        Merge::None => "nothing new came in".to_string(),
        Merge::FastForward => format!(
            "{} came in (fast-forward)",
            crate::output::count(done.incoming, "commit")
        ),
        Merge::Merge => format!(
            "{} came in and were merged",
            crate::output::count(done.incoming, "commit")
        ),
    });
    if done.duplicates_removed + done.lines_split > 0 {
        parts.push(format!(
            "{} both sides held kept once, {} split, in {}",
            crate::output::count(done.duplicates_removed, "record"),
            crate::output::count(done.lines_split, "glued line"),
            crate::output::count(done.repaired.len(), "file")
        ));
    } else if !done.repaired.is_empty() {
        parts.push(format!(
            "{} given its last newline",
            crate::output::count(done.repaired.len(), "file")
        ));
    }
    for m in &done.renumbered {
        parts.push(format!(
            "ADR {} renumbered to {} (the remote already has an ADR {}): {}",
            m.from, m.to, m.from, m.new_name
        ));
    }
    parts.push(if done.pushed {
        format!("{} pushed", crate::output::count(done.outgoing, "commit"))
    } else {
        "nothing to push".to_string()
    });
    human.push_str(&parts.join("; "));
    let mut warnings = Vec::new();
    if done.unrelated {
        warnings.push(format!(
            "this repository and {} shared no history (two `cairn init`s?); they were merged",
            done.remote
        ));
    }
    if !done.redacted.is_empty() {
        let secrets: usize = done.redacted.iter().map(|r| r.secrets).sum();
        let files: Vec<&str> = done.redacted.iter().map(|r| r.file.as_str()).collect();
        warnings.push(format!(
            "{} came in from {} and {} redacted before the merge was committed ({}); the \
             remote's own commits still hold {}: rotate {}",
            crate::output::count(secrets, "secret"),
            done.remote,
            if secrets == 1 { "was" } else { "were" },
            files.join(", "),
            if secrets == 1 { "it" } else { "them" },
            if secrets == 1 {
                "that key"
            } else {
                "those keys"
            },
        ));
    }
    let mut report = Report::new("sync", json!(done), human).warnings(warnings);
    if !done.renumbered.is_empty() {
        report = report.next(Next::new(
            "cairn adr lint",
            "check the renumbered records and the links to them",
        ));
    }
    Ok(report)
}
