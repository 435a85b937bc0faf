//! `cairn doctor`: checks the files for what a crash or a hand edit can leave, and repairs
//! what can be repaired without guessing.
//!
//! Repaired: a torn last line of a JSONL file (bytes after the last newline, left by a write
//! cut short) is cut off under the file's lock and saved to `.cairn/recovered/`; missing
//! layout folders are made. Reported only: a line in the middle of a JSONL file that is not a
//! JSON object (a person must decide what it was), a malformed `cairn.toml` (reported by
//! opening the repository), missing `.gitignore` / `.gitattributes` lines.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::files;
use crate::init::{GITATTRIBUTES, GITIGNORE};
use crate::jsonl;
use crate::repo::{DIRS, Repo};

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Repository-relative path.
    pub path: String,
    pub line: Option<usize>,
    pub problem: String,
    pub repaired: bool,
    /// Where a cut torn tail was saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_to: Option<PathBuf>,
}

/// Checks the repository; with `repair`, repairs what is safe. Returns the findings and the
/// paths changed (for the commit). Run under the repository lock when repairing.
pub fn check(repo: &Repo, repair: bool) -> Result<(Vec<Finding>, Vec<String>)> {
    let mut findings = Vec::new();
    let mut changed = Vec::new();
    for rel in DIRS {
        let path = repo.path(rel);
        if !path.is_dir() {
            if repair {
                std::fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), &e))?;
            }
            findings.push(finding(rel, None, "layout folder missing".into(), repair));
        }
    }
    for (rel, lines) in [
        (".gitignore", &[GITIGNORE][..]),
        (".gitattributes", GITATTRIBUTES),
    ] {
        let text = files::read_optional(&repo.path(rel))?.unwrap_or_default();
        for line in lines {
            if !text.lines().any(|l| {
                l.trim() == *line || (*line == GITIGNORE && l.trim().trim_matches('/') == ".cairn")
            }) {
                findings.push(finding(
                    rel,
                    None,
                    format!("missing line `{line}` (run `cairn init` to add it)"),
                    false,
                ));
            }
        }
    }
    let mut jsonl_files = Vec::new();
    for top in ["slog", "vault"] {
        collect_jsonl(&repo.path(top), &mut jsonl_files)?;
    }
    jsonl_files.sort();
    for path in jsonl_files {
        let rel = path
            .strip_prefix(repo.root())
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        for (i, line) in text[..complete].lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if let Err(err) = jsonl::parse_line::<serde_json::Value>(&path, i + 1, line) {
                findings.push(finding(&rel, Some(i + 1), err.message, false));
            }
        }
        if complete < text.len() {
            let line = text[..complete].matches('\n').count() + 1;
            let problem = format!(
                "torn last line ({}, a write cut short)",
                crate::output::count(text.len() - complete, "byte")
            );
            let mut f = finding(&rel, Some(line), problem, false);
            if repair {
                f.saved_to = repair_torn(repo, &path)?;
                f.repaired = true;
                changed.push(rel.clone());
            }
            findings.push(f);
        }
    }
    Ok((findings, changed))
}

/// Cuts a torn tail under the file's lock (a writer may have finished it meanwhile).
fn repair_torn(repo: &Repo, path: &Path) -> Result<Option<PathBuf>> {
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    file.lock().map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let bytes = files::read_from(path, len.saturating_sub(1))?;
    if bytes.last() == Some(&b'\n') || len == 0 {
        return Ok(None);
    }
    let saved = files::cut_torn_tail(path, &file, len, &repo.recovered_dir())?;
    Ok(Some(saved))
}

fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io(dir.display(), &err)),
    };
    for entry in read {
        let path = entry.map_err(|e| Error::io(dir.display(), &e))?.path();
        if path.is_dir() {
            collect_jsonl(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

fn finding(path: &str, line: Option<usize>, problem: String, repaired: bool) -> Finding {
    Finding {
        path: path.to_string(),
        line,
        problem,
        repaired,
        saved_to: None,
    }
}
