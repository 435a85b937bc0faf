//! `cairn doctor`: checks the files for what a crash or a hand edit can leave, and repairs
//! what can be repaired without guessing.
//!
//! Repaired: a torn last line of a JSONL file (bytes after the last newline, left by a write
//! cut short) is cut off under the file's lock and saved to `.cairn/recovered/`; a line in the
//! middle of a JSONL file that is not a JSON object (a hand edit gone wrong, a bad merge) is
//! moved aside the same way, its bytes saved whole so a person can decide what it was, and
//! the file rewritten without it (by rename, under its lock); missing layout folders are made.
//! A damaged line that HEAD holds intact (the working file is HEAD's with lines damaged, and
//! perhaps lines appended) is restored from HEAD instead, its damaged bytes still saved: the
//! file then differs from HEAD by nothing a command did not write.
//! The commit holds HEAD's content with the same repair, so it never takes in lines a person
//! left uncommitted. Reported only: a malformed `cairn.toml` (reported by opening the
//! repository), missing `.gitignore` / `.gitattributes` lines.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::files;
use crate::git;
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
    /// A damaged line put back from HEAD, which holds it intact (no commit needed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restored: bool,
}

/// Checks the repository; with `repair`, repairs what is safe. Returns the findings and what
/// the commit holds (HEAD's content with the same repairs). Run under the repository lock when
/// repairing.
pub fn check(repo: &Repo, repair: bool) -> Result<(Vec<Finding>, Vec<git::Change>)> {
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
    // Links are never followed (files::confine): each is named, for a person to replace.
    for link in links(repo) {
        let rel = link
            .strip_prefix(repo.root())
            .unwrap_or(&link)
            .to_string_lossy()
            .into_owned();
        let target = std::fs::read_link(&link)
            .map(|t| format!(" to {}", t.display()))
            .unwrap_or_default();
        findings.push(finding(
            &rel,
            None,
            format!(
                "a symbolic link{target}: cairn neither reads nor writes through it; replace it with the file or folder itself, or remove it"
            ),
            false,
        ));
    }
    // Names that are not UTF-8 (a clone can carry them): cairn leaves them out.
    for path in names_not_utf8(repo) {
        let rel = path
            .strip_prefix(repo.root())
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        findings.push(finding(
            &crate::output::inert(&rel),
            None,
            "a file name that is not UTF-8: cairn neither reads nor indexes it; rename it".into(),
            false,
        ));
    }
    // A cairn commit killed between moving the branch and writing git's index (or holding
    // git's lock files): the next commit finishes it, and so does this.
    if git::killed_commit(repo.root(), repair)? {
        findings.push(finding(
            ".git/cairn-committing",
            None,
            "a commit cut short: git's lock files and the index entries of what it committed"
                .into(),
            repair,
        ));
    }
    // Temporary files of a whole-file write killed before its rename (found by the crash
    // harness: `.cairn-tmp-*` left untracked in decisions/). The file they would have replaced
    // is whole; they are removed. Only when repairing, under the repository lock that every
    // such writer holds, so none of them is in use.
    let mut temps = Vec::new();
    collect_temps(repo.root(), false, &mut temps)?;
    for top in ["decisions", "slog", "vault", "hooks"] {
        collect_temps(&repo.path(top), true, &mut temps)?;
    }
    for path in temps {
        let rel = path
            .strip_prefix(repo.root())
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if repair {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(path.display(), &e)),
            }
        }
        findings.push(finding(
            &rel,
            None,
            "temporary file of a write cut short (the file it was to replace is whole)".into(),
            repair,
        ));
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
        let bytes = std::fs::read(&path).map_err(|e| Error::io(path.display(), &e))?;
        let damage = jsonl::damage(&bytes);
        if damage.is_empty() {
            continue;
        }
        let head = git::head_content(repo.root(), &rel).ok().flatten();
        let restorable = restorable(&bytes, head.as_deref(), &damage);
        let saved = if repair {
            let saved = repair_file(repo, &path, head.as_deref())?;
            // A file HEAD lacks has nothing committed to repair; one HEAD holds whole, none.
            if let Some(head) = &head {
                let kept = jsonl::damage(head);
                if !kept.is_empty() {
                    changed.push(git::Change::Content {
                        path: rel.clone(),
                        bytes: kept.kept,
                    });
                }
            }
            saved
        } else {
            Vec::new()
        };
        let saved_at = |offset: u64| {
            saved
                .iter()
                .find(|(o, _)| *o == offset)
                .map(|(_, p)| p.clone())
        };
        for (line, offset, bad) in &damage.bad {
            let problem = match jsonl::parse_line::<serde::de::IgnoredAny>(
                &path,
                *line,
                String::from_utf8_lossy(bad).trim_end_matches(['\n', '\r']),
            ) {
                Err(err) => err.message,
                Ok(_) => "not a JSON object".to_string(),
            };
            let restored = restorable.contains(line);
            let problem = if restored {
                format!("{problem} (HEAD holds the line intact: it is restored from HEAD)")
            } else {
                problem
            };
            let mut f = finding(&rel, Some(*line), problem, false);
            f.saved_to = saved_at(*offset);
            f.repaired = f.saved_to.is_some();
            f.restored = restored && f.repaired;
            findings.push(f);
        }
        if let Some((line, offset, tail)) = &damage.torn {
            let problem = format!(
                "torn last line ({}, a write cut short)",
                crate::output::count(tail.len(), "byte")
            );
            let mut f = finding(&rel, Some(*line), problem, false);
            f.saved_to = saved_at(*offset);
            f.repaired = repair;
            findings.push(f);
        }
    }
    Ok((findings, changed))
}

/// Moves the damaged lines of a JSONL file aside under its lock (a writer may have appended or
/// finished a torn line meanwhile): each bad line and a torn tail is saved to
/// `.cairn/recovered/NAME.OFFSET.bad` / `.torn`, and the file is rewritten without them.
/// Returns the offsets saved and where.
fn repair_file(repo: &Repo, path: &Path, head: Option<&[u8]>) -> Result<Vec<(u64, PathBuf)>> {
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    let file = files::open_locked(path)?;
    let len = file.metadata().map_err(io)?.len();
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0).map_err(io)?;
    let damage = jsonl::damage(&bytes);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut saved = Vec::new();
    if damage.bad.is_empty() {
        // Only a torn tail: cut it in place.
        if damage.torn.is_some() {
            let at = files::cut_torn_tail(path, &file, len, &repo.recovered_dir())?;
            saved.push((damage.torn.as_ref().map_or(0, |t| t.1), at));
        }
        return Ok(saved);
    }
    for (_, offset, line) in &damage.bad {
        let at = repo.recovered_dir().join(format!("{name}.{offset}.bad"));
        files::write_atomic(&at, line)?;
        saved.push((*offset, at));
    }
    if let Some((_, offset, tail)) = &damage.torn {
        let at = repo.recovered_dir().join(format!("{name}.{offset}.torn"));
        files::write_atomic(&at, tail)?;
        saved.push((*offset, at));
    }
    // A rename, while the old file's lock is held: readers see the old file or the new one,
    // and appenders waiting for the lock open the new one (files::open_locked).
    files::write_atomic(path, &repaired(&bytes, head, &damage))?;
    drop(file);
    Ok(saved)
}

/// The bad lines (1-based) that HEAD holds intact: the file's whole lines are HEAD's, line for
/// line, but for bad ones (and perhaps lines appended after them), and HEAD's line at each of
/// those places is a JSON object. Empty when the file is not HEAD's with lines damaged.
fn restorable(bytes: &[u8], head: Option<&[u8]>, damage: &jsonl::Damage) -> Vec<usize> {
    let Some(head) = head else {
        return Vec::new();
    };
    let head_lines: Vec<&[u8]> = head.split_inclusive(|&b| b == b'\n').collect();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let lines: Vec<&[u8]> = bytes[..complete].split_inclusive(|&b| b == b'\n').collect();
    let bad = |n: usize| damage.bad.iter().any(|(l, _, _)| *l == n);
    // A line cut short at HEAD's end is not whole in HEAD.
    if lines.len() < head_lines.len() || !head.ends_with(b"\n") && !head.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, h) in head_lines.iter().enumerate() {
        if bad(i + 1) {
            if !jsonl::damage(h).is_empty() {
                return Vec::new();
            }
            out.push(i + 1);
        } else if lines[i] != *h {
            return Vec::new();
        }
    }
    out
}

/// The file repaired: each bad line HEAD holds intact put back from HEAD, the other bad lines
/// and a torn tail left out.
fn repaired(bytes: &[u8], head: Option<&[u8]>, damage: &jsonl::Damage) -> Vec<u8> {
    let back = restorable(bytes, head, damage);
    if back.is_empty() {
        return damage.kept.clone();
    }
    let head_lines: Vec<&[u8]> = head
        .unwrap_or_default()
        .split_inclusive(|&b| b == b'\n')
        .collect();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut out = Vec::with_capacity(bytes.len());
    for (i, line) in bytes[..complete]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        if back.contains(&(i + 1)) {
            out.extend_from_slice(head_lines[i]);
        } else if !damage.bad.iter().any(|(l, _, _)| *l == i + 1) {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The damaged lines of the JSONL files (bad lines and torn tails), found without repairing.
pub fn damaged_lines(repo: &Repo) -> Result<Vec<Finding>> {
    let (findings, _) = check(repo, false)?;
    Ok(findings.into_iter().filter(|f| f.line.is_some()).collect())
}

/// Every symbolic link among the repository's records: MEMORY.md, cairn.toml and what is
/// under `decisions/`, `slog/` and `vault/` (the links themselves, not what they point to).
fn links(repo: &Repo) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for top in ["MEMORY.md", "cairn.toml", "decisions", "slog", "vault"] {
        stack.push(repo.path(top));
    }
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            out.push(path);
        } else if meta.is_dir()
            && let Ok(read) = std::fs::read_dir(&path)
        {
            stack.extend(read.flatten().map(|e| e.path()));
        }
    }
    out.sort();
    out
}

/// The files and folders under the record folders whose names are not UTF-8 (not entered).
fn names_not_utf8(repo: &Repo) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["decisions", "slog", "vault"]
        .iter()
        .map(|d| repo.path(d))
        .collect();
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            if entry.file_name().to_str().is_none() {
                out.push(entry.path());
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    collect(
        dir,
        true,
        &|path| path.extension().is_some_and(|e| e == "jsonl"),
        out,
    )
}

/// The `.cairn-tmp-*` files of [`files::write_atomic`] in `dir` (and below it, when `deep`).
fn collect_temps(dir: &Path, deep: bool, out: &mut Vec<PathBuf>) -> Result<()> {
    let temp = |path: &Path| {
        path.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(files::TEMP_PREFIX))
    };
    collect(dir, deep, &temp, out)
}

/// The files in `dir` (and its folders, when `deep`) that `keep` picks, never through a link.
fn collect(
    dir: &Path,
    deep: bool,
    keep: &dyn Fn(&Path) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<()> {
    let read = match files::read_dir_real(dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io(dir.display(), &err)),
    };
    for entry in read {
        let entry = entry.map_err(|e| Error::io(dir.display(), &e))?;
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if deep {
                collect(&path, true, keep, out)?;
            }
        } else if keep(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// The links in `.cairn/` (or a `.cairn` that is a link or no folder), each with its fix:
/// commands refuse to run while one is there ([`crate::repo::Repo::open`], ADR 66).
pub fn derived_findings(repo: &Repo) -> Vec<Finding> {
    crate::repo::derived_links(repo.root())
        .into_iter()
        .map(|link| {
            let rel = link
                .strip_prefix(repo.root())
                .unwrap_or(&link)
                .to_string_lossy()
                .into_owned();
            let what = match std::fs::read_link(&link) {
                Ok(t) => format!("a symbolic link to {}", t.display()),
                Err(_) => "not a folder".to_string(),
            };
            finding(
                &rel,
                None,
                format!(
                    "{what}: cairn refuses to run while its derived state goes through a link; \
                     remove it (`rm {rel}`; if a commit holds it, `git rm --cached {rel}` and \
                     commit) and the next command rebuilds .cairn/"
                ),
                false,
            )
        })
        .collect()
}

fn finding(path: &str, line: Option<usize>, problem: String, repaired: bool) -> Finding {
    Finding {
        path: path.to_string(),
        line,
        problem,
        repaired,
        saved_to: None,
        restored: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_line_is_restored_from_head_only_where_head_holds_it_whole() {
        let head = b"{\"a\":1}\n{\"b\":2}\n";
        let cases: [(&[u8], &[u8], Vec<usize>); 5] = [
            // The first line damaged, a line appended: restored, the tail kept.
            (b"\"a\":1}\n{\"b\":2}\n{\"c\":3}\n", head, vec![1]),
            // Another good line changed too: not HEAD's file with damage.
            (b"\"a\":1}\n{\"x\":9}\n", head, vec![]),
            // The damaged line is past HEAD's end: nothing to restore.
            (b"{\"a\":1}\n{\"b\":2}\nbad\n", head, vec![]),
            // HEAD holds the same damage: nothing whole to restore.
            (b"bad\n{\"b\":2}\n", b"bad\n{\"b\":2}\n", vec![]),
            // Shorter than HEAD: lines were removed, not damaged.
            (b"bad\n", head, vec![]),
        ];
        for (now, head, want) in cases {
            let damage = jsonl::damage(now);
            assert_eq!(
                restorable(now, Some(head), &damage),
                want,
                "{}",
                String::from_utf8_lossy(now)
            );
        }
        let now = b"\"a\":1}\n{\"b\":2}\n{\"c\":3}\nbad\n";
        let damage = jsonl::damage(now);
        assert_eq!(
            repaired(now, Some(head), &damage),
            b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
        );
        assert_eq!(repaired(now, None, &damage), b"{\"b\":2}\n{\"c\":3}\n");
    }
}
