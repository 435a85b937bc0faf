//! `cairn init [DIR]`.

use std::path::PathBuf;

use serde_json::json;

use super::{CommitArgs, Ctx};
use crate::error::{Error, Result};
use crate::output::{Next, Report};
use crate::repo::Repo;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to make the repository (made if missing) [default: --repo, else $CAIRN_REPO, else
    /// the current directory]
    pub dir: Option<PathBuf>,
    /// Also make it your default knowledge repository, the one every command, hook and `cairn
    /// mcp` uses from a folder outside any repository (`repo` in ~/.config/cairn/config.toml)
    #[arg(long)]
    pub default: bool,
    #[command(flatten)]
    pub commit: CommitArgs,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    // Absolute, without `.` parts or a trailing slash, so that two spellings compare equal.
    let absolute = |d: &PathBuf| -> PathBuf { ctx.cwd.join(d).components().collect() };
    // DIR names the place; else the repository the other commands would use, as they name it.
    let dir = match (
        args.dir.as_ref().map(absolute),
        ctx.repo_arg.as_ref().map(absolute),
    ) {
        (Some(dir), Some(repo)) if ctx.repo_flag && dir != repo => {
            return Err(Error::bad_input(format!(
                "--repo {} and DIR {} name different folders",
                repo.display(),
                dir.display()
            ))
            .with_fix("give one of them"));
        }
        (Some(dir), _) => dir,
        (None, Some(repo)) => repo,
        (None, None) => ctx.cwd.clone(),
    };
    let done = crate::init::init(&dir)?;
    let repo = Repo::open(done.root.clone())?;
    let _lock = repo.lock()?;
    let commit = ctx.commit(&repo, &done.written, "init: cairn knowledge repository")?;
    let human = if done.written.is_empty() {
        format!(
            "{} is already a cairn repository; nothing changed",
            done.root.display()
        )
    } else {
        format!(
            "{} {} ({}, {})",
            if done.created_git { "made" } else { "adopted" },
            done.root.display(),
            crate::output::count(done.written.len(), "file"),
            ctx.short(&commit)
        )
    };
    let mut human = human;
    let mut default_file = None;
    if args.default {
        let set = super::config::set_default(&done.root)?;
        human.push_str(&format!("\n{}", set.human));
        default_file = set.data.get("file").cloned();
    }
    let data = json!({
        "root": done.root,
        "created_git": done.created_git,
        "written": done.written,
        "commit": commit,
        "default": default_file,
    });
    let mut report = Report::new("init", data, human)
        .next(Next::new(
            "cairn slog configure cairn \"made the knowledge repository\"",
            "log what you do",
        ))
        .next(Next::new("cairn adr new \"TITLE\"", "record a decision"));
    // No default yet: say how to reach this one from a code project's folder (ADR 86).
    if !args.default && matches!(super::default_repo(), Ok(None)) {
        report = report.next(Next::new(
            format!(
                "cairn config set repo {}",
                crate::hooks::agents::shell_word(&done.root.to_string_lossy())
            ),
            "use it from every folder, where agents start their hooks and MCP server",
        ));
    }
    Ok(report)
}
