//! What git's index stages: the blobs a pre-commit hook checks, and the staged versions of
//! selected files.

use std::path::Path;

use super::{git_err, repo_prefix};
use crate::error::{Error, Kind, Result};

/// A file as it is staged in the index, with the content git would commit.
#[derive(Debug, Clone)]
pub struct StagedBlob {
    /// The path in the git work tree, `/`-separated, as git shows it.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Every staged file whose content differs from HEAD's (all of them before the first commit),
/// with its staged content: what the next commit would add. Deletions and submodules have no
/// content and are left out.
pub fn staged_blobs(root: &Path) -> Result<Vec<StagedBlob>> {
    use gix::index::entry::{Mode, Stage};
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let index = match repo.open_index() {
        Ok(index) => index,
        Err(_) if !repo.index_path().exists() => return Ok(Vec::new()),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let head_tree = repo
        .head_commit()
        .ok()
        .map(|c| c.tree_id().map(|id| id.detach()));
    let committed: std::collections::HashMap<gix::bstr::BString, gix::ObjectId> = match head_tree {
        Some(tree) => {
            let tree = tree.map_err(|e| git_err("cannot read HEAD's tree", e))?;
            let head = repo
                .index_from_tree(&tree)
                .map_err(|e| git_err("cannot read HEAD's tree", e))?;
            head.entries()
                .iter()
                .map(|e| (e.path(&head).to_owned(), e.id))
                .collect()
        }
        None => Default::default(),
    };
    let mut out = Vec::new();
    for entry in index.entries() {
        if entry.stage() != Stage::Unconflicted || entry.mode == Mode::COMMIT {
            continue;
        }
        let path = entry.path(&index);
        if committed.get(path) == Some(&entry.id) {
            continue;
        }
        let blob = repo
            .find_blob(entry.id)
            .map_err(|e| git_err(&format!("cannot read the staged {path}"), e))?;
        out.push(StagedBlob {
            path: path.to_string(),
            bytes: blob.data.clone(),
        });
    }
    Ok(out)
}

/// One file of the knowledge repository as the git index stages it or as HEAD holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Relative to the knowledge repository's root, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The knowledge repository's files that [`staged_files`] was asked for, on both sides of the
/// next commit.
#[derive(Debug, Clone, Default)]
pub struct StagedFiles {
    /// The knowledge repository's path in the git work tree with a trailing `/` (empty at the
    /// root): `prefix + path` is the path git shows.
    pub prefix: String,
    /// As staged: what the next commit would hold.
    pub staged: Vec<Version>,
    /// As HEAD holds them (nothing before the first commit).
    pub head: Vec<Version>,
}

/// The staged and HEAD content of the knowledge repository's files that `select` picks;
/// `select(path, changed)` gets the path relative to `root` and whether the index differs from
/// HEAD there (added, edited or deleted). Conflicted entries and submodules are left out.
pub fn staged_files(root: &Path, select: impl Fn(&str, bool) -> bool) -> Result<StagedFiles> {
    use gix::index::entry::{Mode, Stage};
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let prefix = match repo_prefix(&work_dir, root)? {
        p if p.is_empty() => p,
        p => format!("{p}/"),
    };
    let ids = |index: &gix::index::State| -> std::collections::BTreeMap<String, gix::ObjectId> {
        index
            .entries()
            .iter()
            .filter(|e| e.stage() == Stage::Unconflicted && e.mode != Mode::COMMIT)
            .filter_map(|e| {
                let path = e.path(index).to_string();
                let rel = path.strip_prefix(&prefix)?.to_string();
                Some((rel, e.id))
            })
            .collect()
    };
    let staged_ids = match repo.open_index() {
        Ok(index) => ids(&index),
        Err(_) if !repo.index_path().exists() => Default::default(),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let head_ids = match repo.head_commit().ok().map(|c| c.tree_id()) {
        Some(tree) => {
            let tree = tree.map_err(|e| git_err("cannot read HEAD's tree", e))?;
            let head = repo
                .index_from_tree(&tree)
                .map_err(|e| git_err("cannot read HEAD's tree", e))?;
            ids(&head)
        }
        None => Default::default(),
    };
    let read = |path: &str, id: &gix::ObjectId| -> Result<Version> {
        let blob = repo
            .find_blob(*id)
            .map_err(|e| git_err(&format!("cannot read {prefix}{path}"), e))?;
        Ok(Version {
            path: path.to_string(),
            bytes: blob.data.clone(),
        })
    };
    let mut out = StagedFiles {
        prefix: prefix.clone(),
        ..Default::default()
    };
    let paths: std::collections::BTreeSet<&String> =
        staged_ids.keys().chain(head_ids.keys()).collect();
    for path in paths {
        let (staged, head) = (staged_ids.get(path), head_ids.get(path));
        if !select(path, staged != head) {
            continue;
        }
        if let Some(id) = staged {
            out.staged.push(read(path, id)?);
        }
        if let Some(id) = head {
            out.head.push(read(path, id)?);
        }
    }
    Ok(out)
}
