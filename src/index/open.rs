//! Opening the index: up to date with the files, read-only, in a scratch folder, retried
//! when another process's write explains a failure, and caught up in place.

use std::collections::BTreeMap;
use std::path::Path;

use tantivy::ReloadPolicy;

use super::checkpoints::Payload;
use super::directory::StoreDir;
use super::present;
use super::schema::schema;
use super::{
    DIR, DOCSTORE_BLOCK, Index, Refresh, SCHEMA_VERSION, index_err, sources, tokenizer, vectors,
    writable,
};
use crate::error::{Error, Kind as ErrorKind, Result};
use crate::repo::Repo;

/// How many times an open of the index starts again after a failure another process's
/// write explains ([`transient`]); the waits between grow by 10 ms, 0.45 s in all.
const OPEN_RETRIES: u32 = 9;

/// Whether an error met while opening or updating the index is one that another process
/// changing the index explains, and that a new attempt from the last commit does not meet:
/// a file named by the commit read was removed (tantivy's garbage collection, a rebuild), or
/// a folder being removed got a new file meanwhile.
fn transient(e: &Error) -> bool {
    e.kind == ErrorKind::Io
        && [
            "FileDoesNotExist",
            "kind: NotFound",
            "os error 2)",
            "os error 39)",
            "Directory not empty",
        ]
        .iter()
        .any(|m| e.message.contains(m))
}

/// Removes the index folder `dir` for a build from nothing (under the build lock). A reader
/// of the old index may create a lock file in it meanwhile, which fails the removal with
/// "Directory not empty": it is tried again a few times.
fn remove_index_dir(dir: &Path) -> Result<()> {
    let mut attempt = 0;
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if attempt < OPEN_RETRIES => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)));
            }
            Err(e) => return Err(Error::io(dir.display(), &e)),
        }
    }
}

impl Index {
    /// Opens the index of `repo`, bringing it up to date with the files first; in a
    /// repository this process cannot write, opens it read-only ([`Index::open_read_only`]).
    pub fn open(repo: &Repo) -> Result<Index> {
        let dir = repo.path(DIR);
        // The probe is made in `.cairn/`, not in the index folder: a process building the
        // index from nothing removes that folder, and a probe at that moment would take a
        // writable repository for a read-only one.
        if writable(&repo.derived_dir()) {
            Index::open_at(repo, &dir, false)
        } else {
            Index::open_read_only(repo, &dir)
        }
    }

    /// Opens (or builds) the index in `dir`; `rebuild` throws away what is there.
    pub fn open_at(repo: &Repo, dir: &Path, rebuild: bool) -> Result<Index> {
        Index::open_in(repo, dir, rebuild, true)
    }

    /// Builds a throwaway index in `dir` from the files (for comparing), writing nothing else
    /// of the repository.
    pub fn build_scratch(repo: &Repo, dir: &Path) -> Result<Index> {
        Index::open_in(repo, dir, true, false)
    }

    /// The index of a repository this process cannot write: the one committed in `dir`, read
    /// as it is, with a warning saying whether the files moved on since; or, when there is
    /// none usable, one built in a temporary folder for this command.
    pub fn open_read_only(repo: &Repo, dir: &Path) -> Result<Index> {
        let (schema, fields) = schema();
        let committed = dir
            .join("meta.json")
            .is_file()
            .then(|| StoreDir::open(dir, true).ok())
            .flatten()
            .and_then(|d| tantivy::Index::open(d).ok())
            .and_then(|i| {
                let metas = i.load_metas().ok()?;
                let p = Payload::read(dir, &metas)?;
                (i.schema() == schema).then_some((i, p, metas.opstamp))
            });
        let Some((index, payload, opstamp)) = committed else {
            let scratch = tempfile::Builder::new()
                .prefix("cairn-index-")
                .tempdir()
                .map_err(|e| Error::io("a temporary folder", &e))?;
            let mut me = Index::open_in(repo, &scratch.path().join("index"), true, false)?;
            me._scratch = Some(scratch);
            me.refresh.read_only = true;
            me.refresh.warnings.insert(
                0,
                format!(
                    "{} cannot be written and holds no usable index: built one in a temporary folder for this command (not kept); recall counts are not recorded",
                    repo.derived_dir().display()
                ),
            );
            return Ok(me);
        };
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE)
            .try_into()
            .map_err(|e| index_err("cannot open a reader", e))?;
        let found = sources::list(repo)?;
        let plan = sources::plan(repo, &payload.files, &found)?;
        let model = vectors::model_id_for(&repo.config.embed);
        let changed = plan.whole.len() + plan.tail.len() + plan.removed.len();
        let warning = if changed > 0 {
            format!(
                "{} cannot be written: searched the index as last built there, which is behind the files ({changed} changed since); recall counts are not recorded",
                dir.display()
            )
        } else if payload.vectors.as_deref() != Some(model.as_str()) {
            format!(
                "{} cannot be written: searched the index as last built there, whose vectors are not all of {model}; recall counts are not recorded",
                dir.display()
            )
        } else {
            format!(
                "{} cannot be written: searched the index as last built there (it matches the files); recall counts are not recorded",
                dir.display()
            )
        };
        let refresh = Refresh {
            read_only: true,
            stale: changed > 0,
            warnings: vec![warning],
            ..Refresh::default()
        };
        Ok(Index {
            present: present::Present::new(&index),
            index,
            reader,
            fields,
            refresh,
            files: found.len(),
            vectorizer: std::sync::OnceLock::new(),
            embed_config: repo.config.embed.clone(),
            model,
            vectors_dir: vectors_dir(dir),
            store: std::sync::OnceLock::new(),
            committed: Some(opstamp),
            dir: dir.to_path_buf(),
            payload,
            notes: std::sync::Mutex::new(Vec::new()),
            early: std::sync::Mutex::new(None),
            _scratch: None,
        })
    }

    /// Whether this index was opened read-only (nothing of the repository may be written).
    pub fn read_only(&self) -> bool {
        self.refresh.read_only
    }

    /// Opens (or builds) the index in `dir`; `in_repo` when `dir` is the repository's own (its
    /// `.cairn/` gets its `.gitignore`).
    fn open_in(repo: &Repo, dir: &Path, rebuild: bool, in_repo: bool) -> Result<Index> {
        Index::open_checking(repo, dir, rebuild, in_repo, in_repo && !rebuild)
    }

    /// Opens the index of `repo` after looking at every source file, never at the glance
    /// alone (`cairn index`): what another program appended to an older log is folded in.
    pub fn open_thorough(repo: &Repo) -> Result<Index> {
        let dir = repo.path(DIR);
        if writable(&repo.derived_dir()) {
            Index::open_checking(repo, &dir, false, true, false)
        } else {
            Index::open_read_only(repo, &dir)
        }
    }

    /// [`Index::open_in`]; `glance` lets a read that finds the files as its glance describes
    /// them ([`sources::Glance`]) skip the `stat` of every log file.
    ///
    /// Another process may change the index while this one opens it: its garbage collection
    /// or a rebuild can remove a file named by the `meta.json` this one read (tantivy keeps
    /// the files of a commit a reader holds only within one process). Such a failure is not
    /// the user's: the open waits briefly and starts again from the last commit, a few times
    /// ([`transient`]), so that a read never fails because another process writes (issue 30:
    /// 63 of 6,514 recalls failed so with two writers and three readers).
    fn open_checking(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
        glance: bool,
    ) -> Result<Index> {
        let mut attempt = 0;
        loop {
            match Index::open_attempt(repo, dir, rebuild, in_repo, glance, attempt) {
                Err(e) if attempt < OPEN_RETRIES && transient(&e) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10 * u64::from(attempt)));
                }
                other => return other,
            }
        }
    }

    /// One attempt of [`Index::open_checking`]: `attempt` counts the ones before it.
    fn open_attempt(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
        glance: bool,
        attempt: u32,
    ) -> Result<Index> {
        // The freshness check (a glance, or a `stat` of every source file: 1,400 at 100,000
        // records) runs on a second thread while tantivy opens the index: neither needs the
        // other's result until the plan is made.
        let opened = std::thread::scope(|s| {
            let listing = s.spawn(|| {
                crate::failpoint::pausepoint("index-listing");
                if glance
                    && let Some(g) = sources::Glance::read(dir)
                    && g.holds(repo)?
                {
                    return Ok(Err(g));
                }
                sources::list_all(repo).map(Ok)
            });
            let opened = Index::open_unplanned(repo, dir, rebuild, in_repo);
            let found = listing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (opened, found)
        });
        // The build lock (when building from nothing) is held until the first commit.
        let (mut me, building) = opened.0?;
        let listing = match opened.1? {
            // The usual read: the files are as the glance of the last commit saw them.
            Err(g)
                if me.payload.name.as_deref() == Some(g.checkpoints.as_str())
                    && me.payload.vectors.as_deref() == Some(me.model.as_str()) =>
            {
                me.files = g.files;
                return Ok(me);
            }
            Err(_) => sources::list_all(repo)?,
            Ok(listing) => listing,
        };
        // The files are as the last commit left them: its checkpoints (one a file) need not
        // be read.
        if me
            .payload
            .matches(sources::Stamp::of_found(&listing.found), &me.model)
        {
            me.files = listing.found.len();
            if glance {
                me.keep_glance(&listing);
            }
            return Ok(me);
        }
        if !me.payload.load(dir) {
            // Its checkpoints file is gone: other processes committed twice since this one
            // read `meta.json` (a commit keeps its own file and the one it replaced). The
            // last commit names one that is there: open that. Rebuilding here removed the
            // folder under every other reader (issue 30). Only a commit that keeps failing
            // so (its file unreadable) is built again: the index is derived.
            drop((me, building));
            let rebuild = attempt >= OPEN_RETRIES;
            return Index::open_attempt(repo, dir, rebuild, in_repo, glance, attempt + 1);
        }
        me.update_with(repo, &listing.found)?;
        if in_repo && !me.refresh.stale {
            me.keep_glance(&listing);
        }
        drop(building);
        Ok(me)
    }

    /// Keeps the glance of the files as `listing` found them, for the commit this index
    /// holds, when its folders' times can be trusted; else removes any glance, so that the
    /// next read looks at every file.
    pub(super) fn keep_glance(&self, listing: &sources::Listing) {
        let glance = self
            .payload
            .name
            .as_deref()
            .filter(|_| self.payload.vectors.as_deref() == Some(self.model.as_str()))
            .and_then(|name| sources::Glance::of(name, listing, sources::now_ns()));
        match glance {
            Some(g) => g.write(&self.dir),
            None => sources::Glance::remove(&self.dir),
        }
    }

    /// [`Index::open_in`] up to the update; with the build lock when it builds from nothing,
    /// to be held until its first commit.
    fn open_unplanned(
        repo: &Repo,
        dir: &Path,
        rebuild: bool,
        in_repo: bool,
    ) -> Result<(Index, Option<std::fs::File>)> {
        let (schema, fields) = schema();
        let mut refresh = Refresh::default();
        let mut payload = Payload {
            schema: SCHEMA_VERSION,
            files: BTreeMap::new(),
            vectors: None,
            name: None,
            stamp: None,
            loaded: true,
        };
        let mut index = if rebuild {
            None
        } else {
            open_usable(dir, &schema, &mut refresh.warnings)
        };
        if index.is_some() {
            crate::failpoint::pausepoint("index-opened");
        }
        // Building from nothing removes the folder: one process at a time, or a second one
        // deletes the files the first is writing (many agents' first reads after `.cairn/` was
        // deleted failed so). Whoever waited opens what the first built.
        let _building = if index.is_none() && in_repo {
            let lock = repo.index_build_lock();
            if !rebuild {
                let mut warnings = Vec::new();
                index = open_usable(dir, &schema, &mut warnings);
                refresh.warnings = warnings;
            }
            lock
        } else {
            None
        };
        let mut committed = None;
        let index = match index {
            Some((i, p, opstamp)) => {
                payload = p;
                committed = Some(opstamp);
                i
            }
            None => {
                refresh.rebuilt = true;
                remove_index_dir(dir)?;
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
                if in_repo {
                    crate::repo::ignore_derived(repo)?;
                }
                // Small blocks in the document store: a read loads a few dozen scattered
                // documents, and each load decompresses its whole block (ADR 62).
                let settings = tantivy::IndexSettings {
                    docstore_blocksize: DOCSTORE_BLOCK,
                    ..tantivy::IndexSettings::default()
                };
                tantivy::Index::builder()
                    .schema(schema)
                    .settings(settings)
                    .create_in_dir(dir)
                    .map_err(|e| index_err("cannot create", e))?
            }
        };
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE)
            .try_into()
            .map_err(|e| index_err("cannot open a reader", e))?;
        let vectors_dir = vectors_dir(dir);
        let mut me = Index {
            present: present::Present::new(&index),
            index,
            reader,
            fields,
            refresh,
            files: 0,
            vectorizer: std::sync::OnceLock::new(),
            embed_config: repo.config.embed.clone(),
            model: vectors::model_id_for(&repo.config.embed),
            vectors_dir,
            store: std::sync::OnceLock::new(),
            notes: std::sync::Mutex::new(Vec::new()),
            early: std::sync::Mutex::new(None),
            payload,
            committed,
            dir: dir.to_path_buf(),
            _scratch: None,
        };
        if me.committed.is_none() {
            me.committed = me.index.load_metas().ok().map(|m| m.opstamp);
        }
        Ok((me, _building))
    }

    /// Whether this open index still matches the files and the last commit of the index on
    /// disk: no other process committed since, no source file changed (one `stat` each, as
    /// [`Index::open`] does), and every document has a vector of the configured model. A
    /// server asks this per request under a shared lock ([`Held`]).
    pub fn is_current(&self, repo: &Repo) -> Result<bool> {
        if self.refresh.read_only || vectors::model_id_for(&repo.config.embed) != self.model {
            return Ok(false);
        }
        // A `meta.json` another process is replacing (or a rebuild removed) is no error
        // here: the index is then not current, and the catch-up or a new open waits for it.
        let Ok(on_disk) = self.index.load_metas() else {
            return Ok(false);
        };
        if Some(on_disk.opstamp) != self.committed {
            return Ok(false);
        }
        let found = sources::list(repo)?;
        Ok(self
            .payload
            .matches(sources::Stamp::of_found(&found), &self.model))
    }

    /// Brings this open index up to date as [`Index::open`] would: the last commit on disk
    /// (another process may have updated the index) is read again, then what changed in the
    /// files is folded in. `refresh` then says what this catch-up did.
    pub fn catch_up(&mut self, repo: &Repo) -> Result<()> {
        if self.refresh.read_only || vectors::model_id_for(&repo.config.embed) != self.model {
            return Err(index_err(
                "it cannot be caught up in place",
                "opened read-only or for another embedding model",
            ));
        }
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        let metas = self
            .index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let payload = Payload::read(&self.dir, &metas)
            .ok_or_else(|| index_err("its last commit is of another schema", "reopen it"))?;
        self.payload = payload;
        self.committed = Some(metas.opstamp);
        self.refresh = Refresh::default();
        self.notes = std::sync::Mutex::new(Vec::new());
        // Another process may have appended vectors: map the store again when next asked.
        self.store = std::sync::OnceLock::new();
        self.update(repo)
    }

    /// Reads the last commit on disk again, and when it is not the one this index holds
    /// (another process committed since), takes its payload and reloads the reader; true
    /// then. Called under the writer lock, so that no commit can come between this read and
    /// this process's own commit.
    pub(super) fn moved_on(&mut self) -> Result<bool> {
        let metas = self
            .index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let name = metas
            .payload
            .as_deref()
            .and_then(Payload::read_str)
            .and_then(|p| p.name);
        if Some(metas.opstamp) == self.committed && name == self.payload.name {
            return Ok(false);
        }
        let payload = Payload::read(&self.dir, &metas).ok_or_else(|| {
            index_err(
                "its last commit is of another schema or lost its checkpoints",
                "run `cairn index --rebuild`",
            )
        })?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        self.payload = payload;
        self.committed = Some(metas.opstamp);
        // Another process may have appended vectors: map the store again when next asked.
        self.store = std::sync::OnceLock::new();
        Ok(true)
    }

    /// Number of source files the index covers.
    pub fn files(&self) -> usize {
        self.files
    }
}

/// Removes the `.tmp*` files of the index folder `dir`. tantivy writes `meta.json` and
/// `managed.json` through such a file and a rename, only while it holds the writer lock: with
/// the lock held by the caller, any one there was left by a writer killed mid-write (found by
/// the crash harness in forget).
pub(super) fn sweep_writer_temps(dir: &Path) {
    // And cairn's own staged files of a dead process (the checkpoints, the glance, the vector
    // store's).
    let _ = crate::files::sweep_dead_temps(dir, false);
    let _ = crate::files::sweep_dead_temps(&vectors_dir(dir), false);
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        if entry.file_name().to_string_lossy().starts_with(".tmp")
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The vector stores' folder beside the index folder `dir` (`.cairn/vectors`).
pub(super) fn vectors_dir(dir: &Path) -> std::path::PathBuf {
    dir.parent().unwrap_or(dir).join("vectors")
}

/// The index in `dir` when it is there, of this schema and committed at least once (a
/// payload), with the opstamp of that commit; else `None`, with a warning when it could not be
/// read.
fn open_usable(
    dir: &Path,
    schema: &tantivy::schema::Schema,
    warnings: &mut Vec<String>,
) -> Option<(tantivy::Index, Payload, u64)> {
    if !dir.join("meta.json").is_file() {
        return None;
    }
    let opened = StoreDir::open(dir, false).and_then(tantivy::Index::open);
    match opened {
        Ok(i) => {
            // The checkpoints are read only if the files' stamp differs ([`Index::open_in`]).
            let metas = i.load_metas().ok()?;
            let p = Payload::read_str(metas.payload.as_deref()?)?;
            (i.schema() == *schema).then_some((i, p, metas.opstamp))
        }
        Err(err) => {
            warnings.push(format!("index unreadable ({err}); rebuilt"));
            None
        }
    }
}

/// How many decompressed blocks of the document store a reader keeps (tantivy keeps 100): a
/// read loads a few dozen scattered documents, rarely two from one block, and each block kept
/// is fresh memory the process must fault in.
const DOC_STORE_CACHE: usize = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_files_another_process_removed() {
        for message in [
            "index: cannot open a reader: FileDoesNotExist(\"abc.term\")",
            "index: cannot open a reader: Failed to acquire Lockfile: IoError(Os { code: 2, kind: NotFound, message: \"No such file or directory\" }). None",
            ".cairn/index: Directory not empty (os error 39)",
            "slog/2026-12-06.jsonl: No such file or directory (os error 2)",
        ] {
            assert!(transient(&Error::new(ErrorKind::Io, message)), "{message}");
        }
        for (kind, message) in [
            (
                ErrorKind::Io,
                "index: cannot commit: Permission denied (os error 13)",
            ),
            (ErrorKind::BadInput, "FileDoesNotExist in a user's text"),
            (ErrorKind::Io, "index: cannot add: os error 28)"),
        ] {
            assert!(!transient(&Error::new(kind, message)), "{message}");
        }
    }
}
