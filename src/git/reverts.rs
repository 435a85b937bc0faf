//! Reverted decisions: the commits `git revert` made of review or triage decisions (ADR 106).

use std::path::Path;

use gix::bstr::ByteSlice;

use super::{git_err, open_work_tree};
use crate::error::Result;

/// A commit of HEAD's history that `git revert` made of a commit carrying `Cairn-Proposal`
/// trailers (a review or triage decision): what `cairn doctor` checks against the proposals
/// files, whose union merge can keep a reverted decision's line (ADR 106).
#[derive(Debug, Clone, PartialEq)]
pub struct RevertedDecision {
    /// The short id of the reverting commit.
    pub commit: String,
    /// The short id of the decision's commit it reverts.
    pub reverted: String,
    /// Its full id.
    pub reverted_id: String,
    /// The full id of its first parent, when it has one.
    pub parent_id: Option<String>,
    /// The proposals the reverted commit's `Cairn-Proposal` trailers name.
    pub proposals: Vec<String>,
}

/// Every commit reachable from HEAD whose message says `This reverts commit <id>.` (git
/// revert's own words) of a commit with `Cairn-Proposal` trailers, newest first.
pub fn reverted_decisions(root: &Path) -> Result<Vec<RevertedDecision>> {
    let (repo, _, _) = open_work_tree(root)?;
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut out = Vec::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let message = commit
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_str_lossy()
            .into_owned();
        let Some(id) = reverts(&message) else {
            continue;
        };
        let Ok(oid) = gix::ObjectId::from_hex(id.as_bytes()) else {
            continue;
        };
        let Ok(reverted) = repo.find_commit(oid) else {
            continue;
        };
        let reverted_message = reverted
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_str_lossy()
            .into_owned();
        let proposals = proposal_trailers(&reverted_message);
        if proposals.is_empty() {
            continue;
        }
        let short = |id: String| id[..id.len().min(8)].to_string();
        out.push(RevertedDecision {
            commit: short(info.id.to_string()),
            reverted: short(id.to_string()),
            reverted_id: id.to_string(),
            parent_id: reverted.parent_ids().next().map(|p| p.to_string()),
            proposals,
        });
    }
    Ok(out)
}

/// The full id in `This reverts commit <id>.`, git revert's message.
fn reverts(message: &str) -> Option<&str> {
    let rest = message.split("This reverts commit ").nth(1)?;
    let id = rest.split(['.', ',', ' ', '\n']).next()?;
    (id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// The values of a message's `Cairn-Proposal:` trailers.
fn proposal_trailers(message: &str) -> Vec<String> {
    message
        .lines()
        .filter_map(|l| l.strip_prefix("Cairn-Proposal:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}
