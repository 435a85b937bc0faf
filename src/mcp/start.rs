//! Starting the MCP server (`cairn mcp` without an action): the repository found once, then
//! served until the client closes stdin.

use chrono::{DateTime, Utc};

use crate::cli::{Ctx, Served};
use crate::error::Result;

/// Serves until the client closes stdin.
pub fn start(ctx: &Ctx, now: Option<DateTime<Utc>>) -> Result<()> {
    let repo = ctx.repo()?;
    let served = Served::new(ctx, &repo, now);
    super::serve(served)
}
