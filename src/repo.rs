//! The knowledge repository: where it is, what it holds, and its lock.
//!
//! A knowledge repository is a directory holding `cairn.toml` (section 1 of DESIGN.md). It is
//! found like git finds its own: `--repo DIR`, else `CAIRN_REPO` (both arrive here as
//! `explicit`), else the nearest ancestor of the working directory holding `cairn.toml`.
//!
//! Writers serialize on the repository lock, an advisory lock on `cairn.lock` in the git
//! directory (not in `.cairn/`, which may be deleted at any moment; ADR 3). Readers never take
//! it. Each hold is measured: when the lock is released, a telemetry event `lock`/`writer`
//! records how long the writer waited for it (`duration_ms`, and `wait_us`) and how long it
//! held it (`held_us`), so contention between agents can be seen with `cairn stats
//! --telemetry` (and is reported by `scripts/load`).

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::{self, Config};
use crate::error::{Error, Kind, Result};

/// Folders of the layout, relative to the root.
pub const DIRS: &[&str] = &[
    "decisions",
    "slog",
    "vault/observations",
    "vault/sessions",
    "vault/proposals",
    "vault/notes",
    "hooks",
];

/// The derived-state folder (git-ignored, always safe to delete).
pub const DERIVED_DIR: &str = ".cairn";

#[derive(Debug, Clone)]
pub struct Repo {
    root: PathBuf,
    pub config: Config,
}

impl Repo {
    /// Finds the repository from an explicit path or by walking up from `cwd`.
    pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<Repo> {
        if let Some(dir) = explicit {
            let dir = absolute(dir, cwd);
            if !dir.join(config::FILE_NAME).is_file() {
                return Err(Error::new(
                    Kind::NotARepository,
                    format!(
                        "{} is not a cairn repository (no {})",
                        dir.display(),
                        config::FILE_NAME
                    ),
                )
                .with_fix(format!("run `cairn init {}` to make one", dir.display())));
            }
            return Repo::open(dir);
        }
        let mut dir = Some(cwd);
        while let Some(d) = dir {
            if d.join(config::FILE_NAME).is_file() {
                return Repo::open(d.to_path_buf());
            }
            dir = d.parent();
        }
        Err(Error::new(
            Kind::NotARepository,
            format!(
                "not inside a cairn repository (no {} in {} or any parent)",
                config::FILE_NAME,
                cwd.display()
            ),
        )
        .with_fix("run `cairn init` here, or pass `--repo DIR` (or set CAIRN_REPO)"))
    }

    /// Opens the repository rooted at `root`, reading its configuration.
    pub fn open(root: PathBuf) -> Result<Repo> {
        let config = Config::load(&root.join(config::FILE_NAME))?;
        crate::files::confine(&root);
        Ok(Repo { root, config })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a repository-relative path (`slog/2026-11-30.jsonl`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Where torn tails cut from JSONL files are kept.
    pub fn recovered_dir(&self) -> PathBuf {
        self.root.join(DERIVED_DIR).join("recovered")
    }

    /// Where derived state lives.
    pub fn derived_dir(&self) -> PathBuf {
        self.root.join(DERIVED_DIR)
    }

    /// Takes the repository's writer lock, waiting for other writers.
    pub fn lock(&self) -> Result<RepoLock> {
        let path = lock_path(&self.root);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(path.display(), &e))?;
        let asked = Instant::now();
        let contended = match file.try_lock() {
            Ok(()) => false,
            Err(TryLockError::WouldBlock) => {
                file.lock().map_err(|e| Error::io(path.display(), &e))?;
                true
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(path.display(), &e)),
        };
        // What a killed writer left staged where every writer writes (MEMORY.md at the root,
        // the derived files, the vector store): its owner is gone, so no live write is touched.
        let derived = self.derived_dir();
        for dir in [self.root.clone(), derived.join("vectors"), derived] {
            crate::files::sweep_dead_temps(&dir, false)?;
        }
        Ok(RepoLock {
            _file: file,
            repo: self.clone(),
            wait: asked.elapsed(),
            contended,
            taken: Instant::now(),
        })
    }
}

impl Repo {
    /// Takes the lock that lets one process at a time build the index from nothing (readers
    /// take it too, unlike the writer lock); beside the writer lock, in the git directory, so
    /// that deleting `.cairn/` never drops it while it is held. `None` where the lock file
    /// cannot be opened (a git directory this process cannot write): the build goes on
    /// without it, as a read there always did.
    pub fn index_build_lock(&self) -> Option<File> {
        let path = lock_path(&self.root).with_file_name("cairn-index.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.lock().ok()?;
        Some(file)
    }
}

/// Makes sure git ignores `.cairn/` even where `.gitignore` lost its line: the folder carries
/// its own `.gitignore` of `*`.
pub fn ignore_derived(repo: &Repo) -> Result<()> {
    let path = repo.derived_dir().join(".gitignore");
    if !path.exists() {
        crate::files::write_atomic(&path, b"*\n")?;
    }
    Ok(())
}

/// Held while a command writes; released on drop, which records the wait and the hold in
/// telemetry.
pub struct RepoLock {
    _file: File,
    repo: Repo,
    /// How long this process waited for the lock.
    wait: Duration,
    /// Another writer held the lock when it was asked for.
    contended: bool,
    taken: Instant,
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        // One small append, made while the lock is still held (the file is closed after this
        // body). The event's time is the clock's, not a pinned `--now`: it measures this
        // machine.
        let held = self.taken.elapsed();
        let meta = serde_json::json!({
            "wait_us": self.wait.as_micros() as u64,
            "held_us": held.as_micros() as u64,
            "contended": self.contended,
            "pid": std::process::id(),
        });
        if let Some(w) = crate::telemetry::record(
            &self.repo,
            chrono::Utc::now(),
            "lock",
            "writer",
            true,
            self.wait,
            meta,
        ) {
            crate::output::notice(&w);
        }
    }
}

/// The lock file: in the git directory when there is one (it outlives `.cairn/`), else in
/// `.cairn/`.
fn lock_path(root: &Path) -> PathBuf {
    for dir in root.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return dot_git.join("cairn.lock");
        }
        if let Ok(text) = std::fs::read_to_string(&dot_git)
            && let Some(git_dir) = text.strip_prefix("gitdir:")
        {
            let git_dir = absolute(Path::new(git_dir.trim()), dir);
            if git_dir.is_dir() {
                return git_dir.join("cairn.lock");
            }
        }
    }
    let derived = root.join(DERIVED_DIR);
    let _ = std::fs::create_dir_all(&derived);
    derived.join("lock")
}

fn absolute(path: &Path, base: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}
