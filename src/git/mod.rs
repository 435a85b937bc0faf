//! Everything cairn asks of git, and the only importer of gix.
//!
//! A command that changes files ends with one [`commit_changes`] of exactly what it wrote
//! ([`Change`]): for each path, HEAD's content with this command's change (an append, an edit,
//! a file made whole), so a person's uncommitted edit of the same file stays uncommitted. The
//! blobs are written, HEAD's tree is edited at those paths only, and the commit moves the
//! branch. The index (`.git/index`) is then updated at those paths only, with fresh stat data,
//! so that `git status` shows nothing of cairn's while whatever else a person staged or left
//! unstaged stays exactly as it was (ADR 2). Commits run under the repository lock; gix moves
//! the branch only if it still points where it did, so a writer that bypassed the lock makes
//! the commit fail instead of losing one.

//!
//! The parts: [`commit`] (commits of exactly what a command wrote, and git's index after
//! them), [`recovery`] (finishing a commit a killed process left), [`history`] (scans of
//! history: recent paths, a folder's files, a path's commits, commits holding a text),
//! [`rewrite`] (rewriting history without a text), [`staged`] (what git's index stages),
//! [`hooks_path`] (`core.hooksPath`) and [`refs`] (proposal refs and the packs they live in).
//! This file holds what they share: opening the work tree and paths inside it.

mod commit;
mod history;
mod hooks_path;
mod index_entries;
mod recovery;
mod refs;
mod reverts;
mod rewrite;
mod staged;

use std::path::{Path, PathBuf};

use crate::error::{Error, Kind, Result};
pub use commit::{
    Change, Committed, Identity, PreparedTail, commit, commit_changes, head_content, identity_of,
    prepare_tail,
};
pub use history::{
    FirstSeen, FolderHistory, Holding, PathCommit, commits_holding, content_at, folder_history,
    names_at, path_commits, recent_paths,
};
pub use hooks_path::{
    HooksPath, HooksState, Restored, hooks_state, restore_hooks_path, set_hooks_path,
};
pub use recovery::killed_commit;
pub use refs::{
    PROPOSAL_REFS, delete_proposal_refs, proposal_refs, set_proposal_ref, set_proposal_refs,
};
pub use reverts::{RevertedDecision, reverted_decisions};
pub use rewrite::{Rewritten, rewrite_history};
pub use staged::{StagedBlob, StagedFiles, Version, staged_blobs, staged_files};

pub(super) fn git_err(context: &str, err: impl std::fmt::Display) -> Error {
    Error::new(Kind::Git, format!("{context}: {err}"))
}

/// A commit message: a subject, then `Key: value` trailers.
pub fn message(subject: &str, trailers: &[(&str, String)]) -> String {
    let mut m = subject.to_string();
    if !trailers.is_empty() {
        m.push_str("\n\n");
        for (k, v) in trailers {
            m.push_str(&format!("{k}: {v}\n"));
        }
    }
    m
}

/// Whether `dir` is inside a git work tree, and where that work tree's root is.
pub fn work_tree_of(dir: &Path) -> Option<PathBuf> {
    let repo = gix::discover(dir).ok()?;
    repo.workdir().map(Path::to_path_buf)
}

/// The current branch's short name, if HEAD is on one.
pub fn current_branch(root: &Path) -> Option<String> {
    let repo = gix::discover(root).ok()?;
    let name = repo.head_name().ok()??;
    Some(name.shorten().to_string())
}

/// Makes a new git repository at `dir` (its first branch is `main`).
pub fn init(dir: &Path) -> Result<()> {
    gix::init(dir).map_err(|e| {
        git_err(
            &format!("cannot make a git repository in {}", dir.display()),
            e,
        )
    })?;
    Ok(())
}

pub(super) fn blob_at(
    repo: &gix::Repository,
    tree: &gix::Tree<'_>,
    git_path: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(id) = blob_id_at(tree, git_path)? else {
        return Ok(None);
    };
    let blob = repo
        .find_blob(id)
        .map_err(|e| git_err(&format!("cannot read HEAD's {git_path}"), e))?;
    Ok(Some(blob.data.clone()))
}

/// The id of the blob `tree` holds at `git_path`, if it holds one there.
pub(super) fn blob_id_at(tree: &gix::Tree<'_>, git_path: &str) -> Result<Option<gix::ObjectId>> {
    Ok(tree
        .lookup_entry_by_path(git_path)
        .map_err(|e| git_err("cannot read HEAD's tree", e))?
        .filter(|e| e.mode().is_blob())
        .map(|e| e.object_id()))
}

/// The repository holding `root`, its work tree, and `root`'s prefix inside it.
pub(super) fn open_work_tree(root: &Path) -> Result<(gix::Repository, PathBuf, String)> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let prefix = repo_prefix(&work_dir, root)?;
    Ok((repo, work_dir, prefix))
}

pub(super) fn tree_of<'r>(repo: &'r gix::Repository, rev: &str) -> Result<gix::Tree<'r>> {
    let id = gix::ObjectId::from_hex(rev.as_bytes())
        .map_err(|e| git_err(&format!("bad commit id {rev}"), e))?;
    repo.find_commit(id)
        .map_err(|e| git_err(&format!("cannot read commit {rev}"), e))?
        .tree()
        .map_err(|e| git_err(&format!("cannot read the tree of {rev}"), e))
}

/// The knowledge repository's path inside the git work tree, `/`-separated ("" at the root).
pub(super) fn repo_prefix(work_dir: &Path, root: &Path) -> Result<String> {
    let work_dir = work_dir
        .canonicalize()
        .map_err(|e| Error::io(work_dir.display(), &e))?;
    let root = root
        .canonicalize()
        .map_err(|e| Error::io(root.display(), &e))?;
    let rel = root.strip_prefix(&work_dir).map_err(|_| {
        Error::new(
            Kind::Git,
            format!("{} is outside its git work tree", root.display()),
        )
    })?;
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

pub(super) fn join_prefix(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() {
        rel.to_string()
    } else {
        format!("{prefix}/{rel}")
    }
}

pub(super) fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}
