//! What forgetting does to `.cairn/`: derived files that may hold a forgotten text, the state
//! a killed run leaves for the next one, and the replace-text file.
//!
//! `.cairn/forget.json` (`{"stamp","ids","hashes","replace"}`: ids, text hashes and the
//! replace file's path, never a text) is written before the first record file is rewritten
//! and removed when the index and vectors are clean, so a rerun after a crash commits what is
//! pending and finishes the cleanup even when nothing is left to remove.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::repo::Repo;

/// The state of a forget not yet finished.
pub const STATE: &str = ".cairn/forget.json";
/// Where replace-text files are written (mode 0600).
pub const REPLACE_DIR: &str = ".cairn/forget";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub stamp: String,
    /// The ids forgotten (the commit's trailers).
    pub ids: BTreeSet<String>,
    /// Text hashes whose vector rows go once no live document has that text.
    pub hashes: BTreeSet<u64>,
    /// The replace-text file, relative to the root, if one was written.
    #[serde(default)]
    pub replace: Option<String>,
    /// MEMORY.md changed: pending proposal refs are made again from it.
    #[serde(default)]
    pub memory: bool,
}

/// The state a killed run left, if any.
pub fn load_state(repo: &Repo) -> Option<State> {
    crate::files::read_optional(&repo.path(STATE))
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
}

pub fn save_state(repo: &Repo, state: &State) -> Result<()> {
    crate::repo::ignore_derived(repo)?;
    let text = serde_json::to_string(state).expect("state serializes");
    crate::files::write_atomic(&repo.path(STATE), text.as_bytes())
}

pub fn clear_state(repo: &Repo) -> Result<()> {
    match std::fs::remove_file(repo.path(STATE)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(STATE, &e)),
    }
}

/// Writes the replace-text file `<REPLACE_DIR>/<stamp>.txt`, readable by its owner only;
/// returns its path relative to the root.
pub fn write_replace(repo: &Repo, stamp: &str, text: &str) -> Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let rel = format!("{REPLACE_DIR}/{stamp}.txt");
    let path = repo.path(&rel);
    crate::repo::ignore_derived(repo)?;
    let dir = repo.path(REPLACE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::io(tmp.display(), &e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io(tmp.display(), &e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(path.display(), &e))?;
    Ok(rel)
}

/// Removes every line holding one of `needles` (any case) from the derived text files of
/// `.cairn/` (telemetry, logs, the journal, `recovered/`); the index, the vectors and the
/// replace-text files are left to their own cleanup. Returns the files changed.
pub fn scrub(repo: &Repo, needles: &[String]) -> Result<Vec<String>> {
    let lower: Vec<String> = needles
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| n.to_lowercase())
        .collect();
    if lower.is_empty() {
        return Ok(Vec::new());
    }
    let mut changed = Vec::new();
    let derived = repo.derived_dir();
    let mut files = Vec::new();
    for dir in [derived.clone(), repo.recovered_dir()] {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files.dedup();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == "forget.json" || name.ends_with(".lock") {
            continue;
        }
        if scrub_file(&path, &lower)? {
            changed.push(
                path.strip_prefix(repo.root())
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    Ok(changed)
}

fn scrub_file(path: &Path, lower: &[String]) -> Result<bool> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(false);
    };
    let text = String::from_utf8_lossy(&bytes);
    let all = text.to_lowercase();
    if !lower.iter().any(|n| all.contains(n.as_str())) {
        return Ok(false);
    }
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| {
            let l = l.to_lowercase();
            !lower.iter().any(|n| l.contains(n.as_str()))
        })
        .collect();
    if kept.is_empty() {
        std::fs::remove_file(path).map_err(|e| Error::io(path.display(), &e))?;
    } else {
        crate::files::write_atomic(path, kept.as_bytes())?;
    }
    Ok(true)
}

/// The hashes of `hashes` that no live document of `index` has any more.
pub fn dead_hashes(index: &crate::index::Index, hashes: &BTreeSet<u64>) -> HashSet<u64> {
    hashes
        .iter()
        .copied()
        .filter(|h| !index.has_text_hash(*h))
        .collect()
}
