//! History scans: the paths recent commits changed, the files a folder ever held, the commits
//! of one path, and the commits that still hold a text.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use gix::bstr::ByteSlice;

use super::{blob_at, git_err, join_prefix, open_work_tree, tree_of};
use crate::error::Result;

/// The paths (relative to the work tree, `/`-separated) changed by the last `commits` commits
/// reachable from HEAD, newest first, each once, at most `max`; empty when there is no
/// history. What a briefing asks about a project it is run in.
pub fn recent_paths(root: &Path, commits: usize, max: usize) -> Result<Vec<String>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut out: Vec<String> = Vec::new();
    for info in walk.take(commits) {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree_id()
            .map_err(|e| git_err("cannot read a commit", e))?
            .detach();
        let parent = info
            .parent_ids()
            .next()
            .and_then(|p| p.object().ok())
            .and_then(|o| o.try_into_commit().ok())
            .and_then(|c| c.tree_id().ok())
            .map(gix::Id::detach);
        let mut changed = Vec::new();
        tree_changes(&repo, parent, Some(tree), "", &mut changed, max)?;
        for path in changed {
            if out.len() >= max {
                return Ok(out);
            }
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// The entries of a tree: name → (is a tree, object id).
fn tree_entries(
    repo: &gix::Repository,
    id: Option<gix::ObjectId>,
) -> Result<BTreeMap<String, (bool, gix::ObjectId)>> {
    let mut out = BTreeMap::new();
    let Some(id) = id else { return Ok(out) };
    let tree = repo
        .find_object(id)
        .map_err(|e| git_err("cannot read a tree", e))?
        .try_into_tree()
        .map_err(|e| git_err("cannot read a tree", e))?;
    let decoded = tree
        .decode()
        .map_err(|e| git_err("cannot read a tree", e))?;
    for e in &decoded.entries {
        out.insert(e.filename.to_string(), (e.mode.is_tree(), e.oid.to_owned()));
    }
    Ok(out)
}

/// The paths that differ between two trees (either may be absent), at most `max`.
fn tree_changes(
    repo: &gix::Repository,
    old: Option<gix::ObjectId>,
    new: Option<gix::ObjectId>,
    prefix: &str,
    out: &mut Vec<String>,
    max: usize,
) -> Result<()> {
    if old == new {
        return Ok(());
    }
    let (a, b) = (tree_entries(repo, old)?, tree_entries(repo, new)?);
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        if out.len() >= max {
            break;
        }
        let (before, after) = (a.get(name), b.get(name));
        if before.map(|e| e.1) == after.map(|e| e.1) {
            continue;
        }
        let path = format!("{prefix}{name}");
        let tree_of = |e: Option<&(bool, gix::ObjectId)>| e.filter(|e| e.0).map(|e| e.1);
        if tree_of(before).is_some() || tree_of(after).is_some() {
            tree_changes(
                repo,
                tree_of(before),
                tree_of(after),
                &format!("{path}/"),
                out,
                max,
            )?;
        }
        if before.is_some_and(|e| !e.0) || after.is_some_and(|e| !e.0) {
            out.push(path);
        }
    }
    Ok(())
}

/// The content of `rel` (relative to the knowledge repository `root`) in commit `rev` (a full
/// hex id), or `None` when that commit lacks it.
pub fn content_at(root: &Path, rev: &str, rel: &str) -> Result<Option<Vec<u8>>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let tree = tree_of(&repo, rev)?;
    blob_at(&repo, &tree, &join_prefix(&prefix, rel))
}

/// The names of the files directly in `folder` (relative to the knowledge repository `root`)
/// in commit `rev` (a full hex id); empty when the folder is missing there.
pub fn names_at(root: &Path, rev: &str, folder: &str) -> Result<Vec<String>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let tree = tree_of(&repo, rev)?;
    let Some(entry) = tree
        .lookup_entry_by_path(join_prefix(&prefix, folder))
        .map_err(|e| git_err("cannot read a tree", e))?
    else {
        return Ok(Vec::new());
    };
    let Ok(sub) = entry
        .object()
        .map_err(|e| git_err("cannot read a tree", e))?
        .try_into_tree()
    else {
        return Ok(Vec::new());
    };
    let decoded = sub.decode().map_err(|e| git_err("cannot read a tree", e))?;
    Ok(decoded
        .entries
        .iter()
        .filter(|e| e.mode.is_blob())
        .map(|e| e.filename.to_string())
        .collect())
}

/// What history says about one folder: every file name it ever held, with the commit that
/// first (oldest) held it.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct FolderHistory {
    /// The commit the scan started from (HEAD then), if any.
    pub head: Option<String>,
    /// File name → the oldest commit seen holding it.
    pub names: BTreeMap<String, FirstSeen>,
}

/// The oldest commit known to hold a file name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstSeen {
    pub commit: String,
    /// Its commit time, in seconds since the epoch.
    pub time: i64,
}

/// Scans history from HEAD for the file names ever held by `folder` (relative to the knowledge
/// repository `root`). With `known`, the scan stops at commits `known.head` already covered and
/// merges into it, so a repeated scan costs only the commits made since.
pub fn folder_history(
    root: &Path,
    folder: &str,
    known: Option<FolderHistory>,
) -> Result<FolderHistory> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let folder_path = join_prefix(&prefix, folder);
    let Ok(head) = repo.head_id() else {
        return Ok(FolderHistory::default());
    };
    let head = head.detach();
    let mut out = known.unwrap_or_default();
    let hidden: Vec<gix::ObjectId> = out
        .head
        .as_deref()
        .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
        .filter(|id| repo.find_object(*id).is_ok())
        .into_iter()
        .collect();
    if hidden.is_empty() {
        out.names.clear();
    }
    if hidden.first() == Some(&head) {
        return Ok(out);
    }
    let walk = repo
        .rev_walk([head])
        .with_hidden(hidden)
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut seen_trees = HashSet::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree()
            .map_err(|e| git_err("cannot read a tree", e))?;
        let Some(entry) = tree
            .lookup_entry_by_path(&folder_path)
            .map_err(|e| git_err("cannot read a tree", e))?
        else {
            continue;
        };
        if !seen_trees.insert(entry.object_id()) {
            continue;
        }
        let sub = entry
            .object()
            .map_err(|e| git_err("cannot read a tree", e))?;
        let Ok(sub) = sub.try_into_tree() else {
            continue;
        };
        let decoded = sub.decode().map_err(|e| git_err("cannot read a tree", e))?;
        let seen = FirstSeen {
            commit: info.id.to_string(),
            time: commit.time().map(|t| t.seconds).unwrap_or(0),
        };
        for e in &decoded.entries {
            let name = e.filename.to_string();
            let older = out
                .names
                .get(&name)
                .is_none_or(|known| seen.time <= known.time);
            if older {
                out.names.insert(name, seen.clone());
            }
        }
    }
    out.head = Some(head.to_string());
    Ok(out)
}

/// A commit that changed one path.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathCommit {
    /// The short commit id.
    pub commit: String,
    /// Its commit time, RFC 3339 UTC.
    pub time: String,
    pub subject: String,
}

/// A commit as a listing shows it: its short id, its time and its subject (the message's
/// first line).
fn summary(
    commit: &gix::Commit<'_>,
    id: gix::ObjectId,
) -> Result<(String, Option<chrono::DateTime<chrono::Utc>>, String)> {
    let seconds = commit.time().map(|t| t.seconds).unwrap_or(0);
    let message = commit
        .message_raw()
        .map_err(|e| git_err("cannot read a commit", e))?;
    let subject = message
        .lines()
        .next()
        .map(|l| l.to_str_lossy().into_owned())
        .unwrap_or_default();
    let id = id.to_string();
    Ok((
        id[..id.len().min(8)].to_string(),
        chrono::DateTime::from_timestamp(seconds, 0),
        subject,
    ))
}

/// The commits reachable from HEAD whose blob at `rel` (relative to the knowledge repository
/// `root`) differs from their first parent's and, with `needle`, holds it: newest first. What
/// `cairn why` says a note or a library document came in with.
pub fn path_commits(root: &Path, rel: &str, needle: Option<&[u8]>) -> Result<Vec<PathCommit>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let path = join_prefix(&prefix, rel);
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let blob_at = |commit: &gix::Commit<'_>| -> Result<Option<gix::ObjectId>> {
        let tree = commit
            .tree()
            .map_err(|e| git_err("cannot read a tree", e))?;
        Ok(tree
            .lookup_entry_by_path(&path)
            .map_err(|e| git_err("cannot read a tree", e))?
            .map(|e| e.object_id()))
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
        let Some(blob) = blob_at(&commit)? else {
            continue;
        };
        let before = match commit.parent_ids().next() {
            Some(p) => blob_at(
                &repo
                    .find_commit(p)
                    .map_err(|e| git_err("cannot read a commit", e))?,
            )?,
            None => None,
        };
        if before == Some(blob) {
            continue;
        }
        if let Some(n) = needle {
            let data = repo
                .find_blob(blob)
                .map_err(|e| git_err("cannot read a blob", e))?;
            if !holds_any(&data.data, &[n.to_vec()]) {
                continue;
            }
        }
        let (commit_id, at, subject) = summary(&commit, info.id)?;
        out.push(PathCommit {
            commit: commit_id,
            time: at.map(crate::time::format).unwrap_or_default(),
            subject,
        });
    }
    Ok(out)
}

/// Where a rewrite leaves its backups, which keep the old history.
const BACKUP_REFS: &str = "refs/cairn/backup/";

/// A commit of history that still holds one of the texts searched for.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Holding {
    /// The short commit id.
    pub commit: String,
    /// Its commit day, `YYYY-MM-DD` (UTC).
    pub date: String,
    pub subject: String,
    /// The paths (in the git work tree) whose blob the commit added or changed holding a text.
    pub paths: Vec<String>,
    /// Whether the commit message holds a text.
    pub message: bool,
}

/// The refs that history scans and rewrites start from: every direct ref (name, the object it
/// points to) but the backups a rewrite left (`refs/cairn/backup/`), which exist to keep the old
/// history. Symbolic refs (HEAD) are followed through the refs they name.
pub(super) fn rewrite_roots(
    repo: &gix::Repository,
) -> Result<Vec<(gix::refs::FullName, gix::ObjectId)>> {
    let platform = repo
        .references()
        .map_err(|e| git_err("cannot list references", e))?;
    let mut out = Vec::new();
    for r in platform
        .all()
        .map_err(|e| git_err("cannot list references", e))?
    {
        let r = r.map_err(|e| git_err("cannot read a reference", e))?;
        let name = r.name().as_bstr().to_str_lossy().into_owned();
        if name.starts_with(BACKUP_REFS) {
            continue;
        }
        if let Some(id) = r.try_id() {
            out.push((r.name().to_owned(), id.detach()));
        }
    }
    Ok(out)
}

/// The commit an object is or points to (through annotated tags), if any.
fn peel_commit(repo: &gix::Repository, mut id: gix::ObjectId) -> Option<gix::ObjectId> {
    for _ in 0..16 {
        let object = repo.find_object(id).ok()?;
        match object.kind {
            gix::object::Kind::Commit => return Some(id),
            gix::object::Kind::Tag => id = object.into_tag().target_id().ok()?.detach(),
            _ => return None,
        }
    }
    None
}

/// An owned tree's entries.
pub(super) fn owned_entries(
    repo: &gix::Repository,
    id: gix::ObjectId,
) -> Result<Vec<gix::objs::tree::Entry>> {
    let tree = repo
        .find_tree(id)
        .map_err(|e| git_err("cannot read a tree", e))?;
    let decoded = tree
        .decode()
        .map_err(|e| git_err("cannot read a tree", e))?;
    Ok(decoded.entries.iter().map(|e| (*e).into()).collect())
}

/// The blobs `new` holds that `old` does not hold at the same path, with their paths.
fn changed_blobs(
    repo: &gix::Repository,
    new: gix::ObjectId,
    old: Option<gix::ObjectId>,
    prefix: &str,
    out: &mut Vec<(String, gix::ObjectId)>,
) -> Result<()> {
    if Some(new) == old {
        return Ok(());
    }
    let old_entries = match old {
        Some(o) => owned_entries(repo, o)?,
        None => Vec::new(),
    };
    for e in owned_entries(repo, new)? {
        let before = old_entries.iter().find(|o| o.filename == e.filename);
        if before.is_some_and(|b| b.oid == e.oid) {
            continue;
        }
        let path = if prefix.is_empty() {
            e.filename.to_string()
        } else {
            format!("{prefix}/{}", e.filename)
        };
        if e.mode.is_tree() {
            let old_sub = before.filter(|b| b.mode.is_tree()).map(|b| b.oid);
            changed_blobs(repo, e.oid, old_sub, &path, out)?;
        } else if e.mode.is_blob() || e.mode.is_link() {
            out.push((path, e.oid));
        }
    }
    Ok(())
}

fn holds_any(data: &[u8], needles: &[Vec<u8>]) -> bool {
    needles
        .iter()
        .any(|n| !n.is_empty() && data.as_bstr().find(n.as_slice()).is_some())
}

/// The commits reachable from any ref (backups left out) that hold one of `needles` (exact
/// bytes): in a blob they added or changed against their first parent, or in their message.
/// Newest first.
pub fn commits_holding(root: &Path, needles: &[Vec<u8>]) -> Result<Vec<Holding>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let tips: Vec<gix::ObjectId> = rewrite_roots(&repo)?
        .into_iter()
        .filter_map(|(_, id)| peel_commit(&repo, id))
        .collect();
    if tips.is_empty() || needles.iter().all(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let walk = repo
        .rev_walk(tips)
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut checked: std::collections::HashMap<gix::ObjectId, bool> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree_id()
            .map_err(|e| git_err("cannot read a tree", e))?
            .detach();
        let parent_tree = match commit.parent_ids().next() {
            Some(p) => Some(
                repo.find_commit(p)
                    .map_err(|e| git_err("cannot read a commit", e))?
                    .tree_id()
                    .map_err(|e| git_err("cannot read a tree", e))?
                    .detach(),
            ),
            None => None,
        };
        let mut blobs = Vec::new();
        changed_blobs(&repo, tree, parent_tree, "", &mut blobs)?;
        let mut paths = Vec::new();
        for (path, oid) in blobs {
            let holds = match checked.get(&oid) {
                Some(&h) => h,
                None => {
                    let blob = repo
                        .find_blob(oid)
                        .map_err(|e| git_err("cannot read a blob", e))?;
                    let h = holds_any(&blob.data, needles);
                    checked.insert(oid, h);
                    h
                }
            };
            if holds {
                paths.push(path);
            }
        }
        let message_bytes = commit
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_vec();
        let message = holds_any(&message_bytes, needles);
        if paths.is_empty() && !message {
            continue;
        }
        let (commit_id, at, subject) = summary(&commit, info.id)?;
        out.push(Holding {
            commit: commit_id,
            date: at
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            subject,
            paths,
            message,
        });
    }
    Ok(out)
}
