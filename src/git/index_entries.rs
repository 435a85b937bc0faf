//! Git's index (`.git/index`) after a commit: the entries of the committed paths pointed at
//! what was committed, with fresh stat data, every other entry (a person's staged work) left
//! as it was.

use std::collections::HashSet;
use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;

use super::git_err;
use crate::error::{Error, Result};

/// One path's new index entry: its committed blob (none: deleted), and whether the working
/// file holds exactly that blob.
pub(super) struct Staged {
    pub(super) path: String,
    pub(super) blob: Option<(gix::ObjectId, EntryKind)>,
    pub(super) matches_file: bool,
}

/// Points the index entries of `staged` at what was just committed, leaving every other entry
/// (a person's staged work) untouched.
pub(super) fn update_index(
    repo: &gix::Repository,
    work_dir: &Path,
    staged: &[Staged],
) -> Result<()> {
    use gix::index::entry::{Flags, Mode, Stage, Stat};
    let mut index = match repo.open_index() {
        Ok(index) => index,
        Err(_) if !repo.index_path().exists() => gix::index::File::from_state(
            gix::index::State::new(repo.object_hash()),
            repo.index_path(),
        ),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let mut pushed = false;
    let mut removed: HashSet<&str> = HashSet::new();
    for Staged {
        path,
        blob,
        matches_file,
    } in staged
    {
        let key: &BStr = path.as_bytes().as_bstr();
        match blob {
            Some((id, kind)) => {
                let stat = if *matches_file {
                    let abs = work_dir.join(path);
                    let meta = gix::index::fs::Metadata::from_path_no_follow(&abs)
                        .map_err(|e| Error::io(abs.display(), &e))?;
                    Stat::from_fs(&meta).map_err(|e| git_err("bad file time", e))?
                } else {
                    // No stat data: git compares the content, and shows the person's edit.
                    Stat::default()
                };
                let mode = if *kind == EntryKind::BlobExecutable {
                    Mode::FILE_EXECUTABLE
                } else {
                    Mode::FILE
                };
                if let Some(existing) = index.entry_mut_by_path_and_stage(key, Stage::Unconflicted)
                {
                    existing.id = *id;
                    existing.stat = stat;
                    existing.mode = mode;
                } else {
                    index.dangerously_push_entry(stat, *id, Flags::empty(), mode, key);
                    pushed = true;
                }
            }
            None => {
                removed.insert(path.as_str());
            }
        }
    }
    if !removed.is_empty() {
        index.remove_entries(|_, path, _| removed.contains(path.to_str_lossy().as_ref()));
    }
    if pushed {
        index.sort_entries();
    }
    // The cached tree extension no longer matches the entries we changed.
    index.remove_tree();
    index
        .write(gix::index::write::Options::default())
        .map_err(|e| git_err("cannot write the git index", e))?;
    // The index is written by rename like a ref: synced after, so a power loss cannot leave
    // git an empty index (ext4 already orders a rename over an old file after its data).
    let path = repo.index_path();
    if let Ok(file) = std::fs::File::open(&path) {
        file.sync_all().map_err(|e| Error::io(path.display(), &e))?;
    }
    Ok(())
}
