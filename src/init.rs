//! `cairn init`: making a knowledge repository, or adopting an existing git repository.
//!
//! Creates only what is missing: the folders of the layout (an empty one gets a `.gitkeep` so
//! git keeps it), `cairn.toml` with every default spelled out, `MEMORY.md`, a `.gitignore` line
//! for `.cairn/`, `.gitattributes` lines giving the JSONL folders `merge=union`, and the
//! `hooks/pre-commit`, `hooks/post-commit` and `hooks/post-merge` scripts (which run only once
//! `cairn hooks install` points git at them, so
//! that a plain `git commit` never needs `cairn` on PATH until a person asks for it). Existing
//! files are never rewritten; `.gitignore` and `.gitattributes` only gain the lines they lack
//! (as `cargo init` does). Running it twice changes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config;
use crate::error::{Error, Result};
use crate::files;
use crate::git;
use crate::hooks;
use crate::memory;
use crate::repo::{DERIVED_DIR, DIRS};

/// Lines `.gitattributes` must hold.
pub const GITATTRIBUTES: &[&str] = &["slog/*.jsonl merge=union", "vault/**/*.jsonl merge=union"];

/// The line `.gitignore` must hold.
pub const GITIGNORE: &str = ".cairn/";

#[derive(Debug, Serialize)]
pub struct Initialized {
    pub root: PathBuf,
    /// A new git repository was made (else an existing one was adopted).
    pub created_git: bool,
    /// Paths written, relative to the root; empty when everything was already there.
    pub written: Vec<String>,
}

/// Makes or adopts the knowledge repository at `dir`.
pub fn init(dir: &Path) -> Result<Initialized> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
    let root = dir
        .canonicalize()
        .map_err(|e| Error::io(dir.display(), &e))?;
    // Adopting a clone: nothing goes through a link it carries (ADR 66).
    files::confine(&root);
    if let Some(link) = crate::repo::derived_links(&root).first() {
        return Err(crate::repo::derived_link_error(&root, link));
    }
    let created_git = match git::work_tree_of(&root) {
        Some(_) => false,
        None => {
            git::init(&root)?;
            true
        }
    };
    let mut written = Vec::new();
    // Before the folders, so that hooks/ needs no .gitkeep. A script of a person's own is kept.
    if !root.join(hooks::PRE_COMMIT_PATH).exists() {
        written.extend(hooks::write_pre_commit(&root)?);
    }
    let background: Vec<String> = hooks::background::EVENTS
        .iter()
        .filter(|e| !root.join("hooks").join(e).exists())
        .map(|e| e.to_string())
        .collect();
    written.extend(hooks::write_scripts(&root, &background)?.written);
    for rel in DIRS {
        let path = root.join(rel);
        std::fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), &e))?;
        let empty = std::fs::read_dir(&path)
            .map_err(|e| Error::io(path.display(), &e))?
            .next()
            .is_none();
        if empty {
            let keep = format!("{rel}/.gitkeep");
            files::write_atomic(&root.join(&keep), b"")?;
            written.push(keep);
        }
    }
    create_if_missing(&root, config::FILE_NAME, config::DEFAULT_TOML, &mut written)?;
    create_if_missing(&root, memory::FILE, memory::TEMPLATE, &mut written)?;
    ensure_lines(&root, ".gitignore", &[GITIGNORE], &mut written)?;
    ensure_lines(&root, ".gitattributes", GITATTRIBUTES, &mut written)?;
    let derived = root.join(DERIVED_DIR);
    std::fs::create_dir_all(&derived).map_err(|e| Error::io(derived.display(), &e))?;
    Ok(Initialized {
        root,
        created_git,
        written,
    })
}

fn create_if_missing(root: &Path, rel: &str, text: &str, written: &mut Vec<String>) -> Result<()> {
    let path = root.join(rel);
    if !path.exists() {
        files::write_atomic(&path, text.as_bytes())?;
        written.push(rel.to_string());
    }
    Ok(())
}

/// Appends the `lines` a file lacks, keeping what it holds.
fn ensure_lines(root: &Path, rel: &str, lines: &[&str], written: &mut Vec<String>) -> Result<()> {
    let path = root.join(rel);
    let text = files::read_optional(&path)?.unwrap_or_default();
    let has = |line: &str| {
        text.lines().any(|l| {
            let l = l.trim();
            l == line || (line == GITIGNORE && (l == ".cairn" || l == "/.cairn/" || l == "/.cairn"))
        })
    };
    let missing: Vec<&str> = lines.iter().copied().filter(|l| !has(l)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut out = text.clone();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for line in missing {
        out.push_str(line);
        out.push('\n');
    }
    files::write_atomic(&path, out.as_bytes())?;
    written.push(rel.to_string());
    Ok(())
}
