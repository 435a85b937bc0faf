//! An index a server keeps open for its whole run ([`Held`]), brought up to date per request
//! with the check every read of the command line makes ([`current`]: the index's last commit
//! on disk, then the glance of the files or a `stat` of each; then [`Index::catch_up`]), and what a command reads through ([`Opened`]: the held index or one
//! opened for the call).
//!
//! Reads share the index: each takes a read lock, and only a request that finds the files or
//! the index on disk moved on takes the write lock to catch up, so searches run side by side
//! and wait only while an update is folded in.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use super::{Index, Refresh, sources, vectors};
use crate::error::Result;
use crate::repo::Repo;

/// An open index shared by a server's requests.
pub struct Held {
    index: RwLock<Index>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held(index)")
    }
}

/// The index a command reads: opened for it (the command line), or a server's held one under
/// its read lock, with what this request's catch-up did.
pub enum Opened<'a> {
    Own(Box<Index>),
    Held {
        index: RwLockReadGuard<'a, Index>,
        refresh: Refresh,
    },
}

impl Deref for Opened<'_> {
    type Target = Index;

    fn deref(&self) -> &Index {
        match self {
            Opened::Own(index) => index,
            Opened::Held { index, .. } => index,
        }
    }
}

/// Whether this process ends once its one command is done (the command line; never a server).
static ENDS_AFTER_COMMAND: AtomicBool = AtomicBool::new(false);

/// Says that this process ends once its one command is done: [`Opened::finish`] then leaves
/// the index it opened to the exit.
pub fn ends_after_command() {
    ENDS_AFTER_COMMAND.store(true, Ordering::Relaxed);
}

/// Leaves `value` to the process's exit when the process ends after its one command, and
/// drops it otherwise: a command's large tables (100,000 observations with their vectors and
/// plan) are freed by the exit at once, where freeing them one allocation at a time was a
/// tenth of a `cairn maintain` at 100,000 observations.
pub fn leave_to_exit<T>(value: T) {
    if ENDS_AFTER_COMMAND.load(Ordering::Relaxed) {
        std::mem::forget(value);
    }
}

impl Opened<'_> {
    /// Ends a command's use of the index. In a process that ends after the command, an index
    /// opened for it is not closed but left to the exit: unmapping the vector store and the
    /// index's files one `munmap` at a time, with the threads that touched them still
    /// known to the kernel, was a tenth of a hybrid recall's time at 100,000 records (perf),
    /// and the exit frees the whole address space at once. A server's held index is released
    /// as usual, and an index built in a temporary folder is closed so that the folder goes.
    pub fn finish(self) {
        match self {
            Opened::Own(index)
                if index._scratch.is_none() && ENDS_AFTER_COMMAND.load(Ordering::Relaxed) =>
            {
                std::mem::forget(index);
            }
            other => drop(other),
        }
    }

    /// What bringing the index up to date did for this command.
    pub fn refresh(&self) -> &Refresh {
        match self {
            Opened::Own(index) => &index.refresh,
            Opened::Held { refresh, .. } => refresh,
        }
    }

    /// This command's refresh warnings, then those noted by reads since.
    pub fn warnings(&self) -> Vec<String> {
        match self {
            Opened::Own(index) => index.warnings(),
            Opened::Held { index, refresh } => {
                let mut all = refresh.warnings.clone();
                all.extend(index.noted());
                all
            }
        }
    }
}

impl Held {
    /// Opens the index of `repo` to keep; `None` when it opened read-only (a repository this
    /// process cannot write is opened again for each command, as the command line does).
    pub fn open(repo: &Repo) -> Result<Option<Held>> {
        let index = Index::open(repo)?;
        Ok((!index.read_only()).then(|| Held {
            index: RwLock::new(index),
        }))
    }

    /// The held index, up to date with the files of `repo` as [`Index::open`] would leave it.
    pub fn read(&self, repo: &Repo) -> Result<Opened<'_>> {
        {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            if current(&index, repo)? {
                let refresh = Refresh::default();
                return Ok(Opened::Held { index, refresh });
            }
        }
        let refresh = {
            let mut index = self.index.write().unwrap_or_else(|p| p.into_inner());
            // Another request may have caught up while this one waited.
            if current(&index, repo)? {
                Refresh::default()
            } else {
                if index.catch_up(repo).is_err() {
                    // Rebuilt by another process, another schema or model: open it again,
                    // as the command line would.
                    let fresh = Index::open(repo)?;
                    if fresh.read_only() {
                        return Ok(Opened::Own(Box::new(fresh)));
                    }
                    *index = fresh;
                }
                index.refresh.clone()
            }
        };
        let index = self.index.read().unwrap_or_else(|p| p.into_inner());
        Ok(Opened::Held { index, refresh })
    }
}

/// Whether `index` still matches the files and the last commit of the index on disk, by the
/// check [`Index::open`] makes: no other process committed since, and the files are as the
/// glance of this commit saw them ([`sources::Glance`]: the log folders' times, their newest
/// logs, every file a person edits), else as this commit's stamp says (a `stat` of every
/// source file, 1,400 at 100,000 records, and a thread: most of a held recall's time). A
/// full look that finds the files as committed keeps the glance of what it saw, so that the
/// next request glances; an append by another program to an older log is seen as the command
/// line sees it (ADR 62).
fn current(index: &Index, repo: &Repo) -> Result<bool> {
    if index.refresh.read_only || vectors::model_id_for(&repo.config.embed) != index.model {
        return Ok(false);
    }
    // A `meta.json` another process is replacing (or a rebuild removed) is no error here:
    // the index is then not current, and the catch-up or a new open waits for it.
    let Ok(on_disk) = index.index.load_metas() else {
        return Ok(false);
    };
    if Some(on_disk.opstamp) != index.committed {
        return Ok(false);
    }
    let vectors_current = index.payload.vectors.as_deref() == Some(index.model.as_str());
    if vectors_current
        && let Some(g) = sources::Glance::read(&index.dir)
        && index.payload.name.as_deref() == Some(g.checkpoints.as_str())
        && g.holds(repo)?
    {
        return Ok(true);
    }
    let listing = sources::list_all(repo)?;
    let matches = index
        .payload
        .matches(sources::Stamp::of_found(&listing.found), &index.model);
    if matches {
        index.keep_glance(&listing);
    }
    Ok(matches)
}
