//! `cairn mcp`: the knowledge repository served to agents over the Model Context Protocol.
//!
//! The server itself is [`crate::mcp`]; this finds the repository once, before serving, so a
//! server started in the wrong place fails at once with the fix on stderr, rather than
//! answering every call with the same error.

use chrono::{DateTime, Utc};

use super::{Ctx, Served};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Serves until the client closes stdin.
pub fn run(ctx: &Ctx, now: Option<DateTime<Utc>>) -> Result<()> {
    let repo = ctx.repo()?;
    let served = Served::new(ctx, &repo, now);
    crate::mcp::serve(served)
}
