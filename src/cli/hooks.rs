//! `cairn hooks install` and `cairn hooks run EVENT`.

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::git;
use crate::hooks;
use crate::output::{self, Next, Report, Status};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the git hook scripts into hooks/ and point git's core.hooksPath there
    Install,
    /// Run the hook for EVENT (pre-commit: refuse a commit that stages a secret)
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The hook event: pre-commit
    pub event: String,
    /// What git passes to the hook (unused by pre-commit)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Install => install(ctx),
        Command::Run(args) => match args.event.as_str() {
            "pre-commit" => pre_commit(ctx),
            other => Err(Error::bad_input(format!("unknown hook event {other:?}"))
                .with_fix(format!("the events are: {}", hooks::EVENTS.join(", ")))),
        },
    }
}

fn install(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let written: Vec<String> = hooks::write_pre_commit(repo.root())?.into_iter().collect();
    let commit = ctx.commit(
        &repo,
        &written,
        "hooks: install the pre-commit secret check",
    )?;
    let path = git::set_hooks_path(repo.root())?;
    let mut warnings = Vec::new();
    if let Some(previous) = &path.previous {
        warnings.push(format!(
            "core.hooksPath was {previous}; the hooks there no longer run (call them from {} if they should)",
            hooks::PRE_COMMIT_PATH
        ));
    }
    let human = if written.is_empty() && !path.changed {
        format!("hooks already installed (core.hooksPath = {})", path.value)
    } else {
        format!(
            "installed {} (core.hooksPath = {}, {})",
            hooks::PRE_COMMIT_PATH,
            path.value,
            super::short(&commit)
        )
    };
    let data = json!({
        "written": written,
        "hooks_path": path.value,
        "config_changed": path.changed,
        "previous_hooks_path": path.previous,
        "commit": commit,
    });
    Ok(Report::new("hooks_install", data, human).warnings(warnings))
}

fn pre_commit(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let scan = hooks::pre_commit(&repo)?;
    let data = json!({ "event": "pre-commit", "scanned": scan.scanned, "secrets": scan.secrets });
    if scan.secrets.is_empty() {
        return Ok(Report::new("hooks_run", data, ""));
    }
    // Words for the person at `git commit`, on stderr; the secrets themselves never appear.
    output::notice(&format!(
        "cairn: {} staged secret{}; the commit is refused",
        scan.secrets.len(),
        if scan.secrets.len() == 1 { "" } else { "s" }
    ));
    for s in &scan.secrets {
        output::notice(&format!("{}:{}: {}", s.path, s.line, s.kind));
    }
    output::notice("  to fix: unstage it, or redact it; cairn never commits a secret");
    Ok(Report::new("hooks_run", data, "")
        .status(Status::NothingOrFailed)
        .next(Next::new(
            "git restore --staged PATH",
            "unstage a file that holds a secret",
        )))
}
