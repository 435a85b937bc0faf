//! `cairn init [DIR]`.

use std::path::PathBuf;

use serde_json::json;

use super::Ctx;
use crate::error::Result;
use crate::output::{Next, Report};
use crate::repo::Repo;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to make the repository [default: the current directory]
    pub dir: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let dir = match args.dir {
        Some(d) if d.is_absolute() => d,
        Some(d) => ctx.cwd.join(d),
        None => ctx.cwd.clone(),
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
            "{} {} ({} files, {})",
            if done.created_git { "made" } else { "adopted" },
            done.root.display(),
            done.written.len(),
            super::short(&commit)
        )
    };
    let data = json!({
        "root": done.root,
        "created_git": done.created_git,
        "written": done.written,
        "commit": commit,
    });
    Ok(Report::new("init", data, human)
        .next(Next::new(
            "cairn slog configure cairn \"made the knowledge repository\"",
            "log what you do",
        ))
        .next(Next::new("cairn adr new \"TITLE\"", "record a decision")))
}
