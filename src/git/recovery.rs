//! Recovery: finishing what a cairn commit killed midway left (git's lock files, the index
//! entries of the paths it committed).

use std::path::Path;

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use super::index_entries::{Staged, update_index};
use super::{git_err, open_work_tree};
use crate::error::{Error, Result};

/// Finishes what a cairn commit killed midway left (its lock files, the index entries of the
/// paths it committed), when its marker says one was; else nothing. Commits do this first
/// themselves; a command that moves HEAD with the git command line (`cairn sync`) or repairs
/// (`cairn doctor`) calls it under the repository lock, or git's index stays behind HEAD
/// (found by the crash harness: a sync killed right after its renumbering commit, rerun, left
/// `git status` showing the renumbering undone).
/// Returns whether one was left; with `finish` false it only tells.
pub fn killed_commit(root: &Path, finish: bool) -> Result<bool> {
    let (repo, _, _) = open_work_tree(root)?;
    if !repo.git_dir().join(COMMITTING).exists() {
        return Ok(false);
    }
    if finish {
        clear_locks_of_a_killed_commit(&repo)?;
    }
    Ok(true)
}

/// A file in the git directory that says a cairn process is between taking git's lock files
/// (HEAD's, its branch's, the index's, packed-refs') and releasing them. A process killed there leaves the
/// lock files behind, and git and gix refuse every later commit until someone deletes them.
pub(super) const COMMITTING: &str = "cairn-committing";

/// Removes the lock files a killed cairn commit left (found by the crash harness: a SIGKILL
/// during the ref update left `HEAD.lock` and `refs/heads/main.lock`, and every later command
/// failed with "Could not prepare reference edit"). Only when the marker says a cairn commit
/// was cut short (the caller holds the repository lock, so that process is gone), and only the
/// lock files made within seconds of the marker: a lock a git command holds now is younger.
pub(super) fn clear_locks_of_a_killed_commit(repo: &gix::Repository) -> Result<()> {
    let git_dir = repo.git_dir();
    let marker = git_dir.join(COMMITTING);
    let Some(since) = std::fs::metadata(&marker).and_then(|m| m.modified()).ok() else {
        return Ok(());
    };
    let paths = std::fs::read_to_string(&marker).unwrap_or_default();
    let mut locks = vec![
        git_dir.join("HEAD.lock"),
        git_dir.join("index.lock"),
        git_dir.join("packed-refs.lock"),
    ];
    if let Ok(Some(name)) = repo.head_name() {
        let rel = name.as_bstr().to_str_lossy().into_owned();
        locks.push(git_dir.join(format!("{rel}.lock")));
    }
    let window = std::time::Duration::from_secs(10);
    for lock in locks {
        let Some(made) = std::fs::metadata(&lock).and_then(|m| m.modified()).ok() else {
            continue;
        };
        let near = match made.duration_since(since) {
            Ok(after) => after <= window,
            Err(before) => before.duration() <= std::time::Duration::from_secs(1),
        };
        if near {
            remove_if_there(&lock)?;
        }
    }
    refresh_index_from_head(repo, paths.lines().filter(|p| !p.is_empty()))?;
    remove_if_there(&marker)
}

/// Sets the index entries of `paths` to HEAD's blobs (removed where HEAD has none), with stat
/// data only where the working file holds exactly that blob.
fn refresh_index_from_head<'a>(
    repo: &gix::Repository,
    paths: impl Iterator<Item = &'a str>,
) -> Result<()> {
    let Some(work_dir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(());
    };
    let Ok(head) = repo.head_commit() else {
        return Ok(());
    };
    let tree = head
        .tree()
        .map_err(|e| git_err("cannot read HEAD's tree", e))?;
    let mut staged = Vec::new();
    for path in paths {
        let entry = tree
            .lookup_entry_by_path(path)
            .map_err(|e| git_err("cannot read HEAD's tree", e))?;
        let blob = entry.map(|e| {
            let kind = if e.mode().is_executable() {
                EntryKind::BlobExecutable
            } else {
                EntryKind::Blob
            };
            (e.object_id(), kind)
        });
        let matches_file = match &blob {
            Some((id, _)) => {
                let committed = repo
                    .find_object(*id)
                    .map_err(|e| git_err("cannot read a blob", e))?;
                std::fs::read(work_dir.join(path)).is_ok_and(|now| now == committed.data)
            }
            None => false,
        };
        staged.push(Staged {
            path: path.to_string(),
            blob,
            matches_file,
        });
    }
    if staged.is_empty() {
        return Ok(());
    }
    update_index(repo, &work_dir, &staged)
}

pub(super) fn remove_if_there(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path.display(), &e)),
    }
}
