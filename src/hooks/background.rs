//! post-commit and post-merge: the index brought up to date in the background.
//!
//! git waits for a hook before it returns to the person, so the hook only starts `cairn index`
//! (the same incremental update every read does, [`crate::index::Index::open`]) as a detached
//! process and returns at once: its own process group (a Ctrl-C at the terminal after the
//! commit does not reach it), no terminal input or output, and its stderr kept in
//! `.cairn/index-hook.log` (the last run's words, read by a person who wonders). Nothing here
//! can fail the git command: a child that cannot start is a warning. If the update loses the
//! race for tantivy's writer lock to another one, the next read catches up (ADR 9).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::repo::Repo;

/// The hooks that start the background update.
pub const EVENTS: &[&str] = &["post-commit", "post-merge"];

/// Where the background update's stderr goes, relative to the repository root.
pub const LOG: &str = ".cairn/index-hook.log";

/// Starts `cairn --repo ROOT index` detached and returns its process id without waiting.
pub fn spawn_index(repo: &Repo) -> Result<u32> {
    let exe = std::env::current_exe().map_err(|e| Error::io("the cairn executable", &e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--repo")
        .arg(repo.root())
        .arg("index")
        .current_dir(repo.root())
        // `git commit -a` stages into a temporary index file that is gone by the time the
        // update runs; the update reads the files, not git's index.
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log(repo).map_or_else(Stdio::null, Stdio::from))
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(|e| Error::io("cairn index, in the background", &e))?;
    Ok(child.id())
}

/// The log file, truncated (it holds the last run), when `.cairn/` can be written.
fn log(repo: &Repo) -> Option<std::fs::File> {
    crate::repo::ignore_derived(repo).ok()?;
    let path: PathBuf = repo.path(LOG);
    std::fs::File::create(path).ok()
}
