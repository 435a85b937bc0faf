//! A write-ahead journal for decisions that change several files and end in one commit
//! (`cairn triage`, `cairn review`): the exact change to each file and the commit message are
//! written to `.cairn/journal.json` before any file is touched, and the journal is removed once
//! the commit is made. A run killed anywhere in between leaves the journal; the next decision
//! command (or `cairn reflect`, `cairn doctor`) finishes it, so the repository ends as an
//! uninterrupted run would have left it, with no step done twice (ADR 31).
//!
//! Unlike `.cairn/pending.json` (which commits whole files), the journal knows what the
//! interrupted command wrote, so a person's own uncommitted edit of MEMORY.md never rides
//! along in cairn's commit.
//!
//! On disk: one JSON object `{"message": "...", "steps": [...], "refs": [...]}`. A step is
//! `{"kind":"write","path","before","after","commit","head"}` (a whole-file rewrite of the
//! working file from `before` to `after`; the commit holds `commit`, HEAD's content `head`
//! with the same edit) or `{"kind":"append","path","bytes"}` (whole lines appended).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::git::{Change, Committed};
use crate::repo::Repo;

/// Where the journal lives, relative to the repository root (derived state, never committed).
pub const FILE: &str = ".cairn/journal.json";

/// One command's writes and the commit that holds them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Journal {
    pub message: String,
    pub steps: Vec<Step>,
    /// Proposal refs to delete once the commit is made.
    #[serde(default)]
    pub refs: Vec<String>,
}

/// One file's change.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// The working file goes from `before` to `after`; the commit holds `commit` at `path`
    /// (HEAD's content `head`, when it was read, with the same edit).
    Write {
        path: String,
        before: String,
        after: String,
        commit: String,
        head: Option<String>,
    },
    /// Whole lines appended to the working file (and to HEAD's content for the commit).
    Append { path: String, bytes: String },
}

impl Step {
    fn path(&self) -> &str {
        match self {
            Step::Write { path, .. } | Step::Append { path, .. } => path,
        }
    }
}

/// What finishing an interrupted journal did.
#[derive(Debug, Default)]
pub struct Finished {
    /// The interrupted commit's message subject, when there was a journal.
    pub subject: Option<String>,
    pub commit: Option<Committed>,
    /// The proposals whose refs it deleted: the ones the interrupted command decided.
    pub refs: Vec<String>,
    pub warnings: Vec<String>,
}

/// Writes `journal`, does its steps, commits them with `commit` (which returns `None` when
/// committing is off or nothing changed) and deletes the proposal refs it names, then removes
/// the journal. Run under the repository lock.
pub fn run(
    repo: &Repo,
    journal: &Journal,
    commit: impl FnOnce(&[Change], &str) -> Result<Option<Committed>>,
) -> Result<Option<Committed>> {
    crate::repo::ignore_derived(repo)?;
    sweep(repo, &journal.steps)?;
    let text = serde_json::to_string(journal).expect("a journal serializes");
    crate::files::write_atomic(&repo.path(FILE), text.as_bytes())?;
    crate::failpoint::failpoint("journal-written");
    for (i, step) in journal.steps.iter().enumerate() {
        apply(repo, step, false)?;
        if i == 0 {
            crate::failpoint::failpoint("journal-first-step");
        }
    }
    crate::failpoint::failpoint("journal-before-commit");
    let changes: Vec<Change> = journal.steps.iter().map(change).collect();
    let committed = commit(&changes, &journal.message)?;
    crate::failpoint::failpoint("journal-before-refs");
    delete_refs(repo, &journal.refs)?;
    remove(repo)?;
    Ok(committed)
}

fn delete_refs(repo: &Repo, refs: &[String]) -> Result<()> {
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    crate::git::delete_proposal_refs(repo.root(), &refs)
}

/// Finishes a journal an interrupted run left: each step not yet done is done, and what HEAD
/// does not hold yet is committed with the journal's message. Nothing when there is no
/// journal. Run under the repository lock.
pub fn finish(
    repo: &Repo,
    commit: impl FnOnce(&[Change], &str) -> Result<Option<Committed>>,
) -> Result<Finished> {
    let path = repo.path(FILE);
    let Some(text) = crate::files::read_optional(&path)? else {
        return Ok(Finished::default());
    };
    let journal: Journal = match serde_json::from_str(&text) {
        Ok(j) => j,
        Err(e) => {
            // write_atomic never leaves half a journal; one that does not parse was not ours.
            return Err(
                Error::bad_input(format!("{FILE}: not a cairn journal: {e}"))
                    .with_fix(format!("move {FILE} aside and run again")),
            );
        }
    };
    // A clone can carry `.cairn/journal.json` (ADR 66): a step outside the repository, or a
    // ref that is not a proposal's, is refused before anything is done.
    let foreign = journal
        .steps
        .iter()
        .map(Step::path)
        .find(|p| !crate::files::repo_relative(p))
        .or(journal.refs.iter().map(String::as_str).find(|r| {
            r.is_empty()
                || r.contains("..")
                || !r
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        }));
    if let Some(bad) = foreign {
        return Err(Error::bad_input(format!(
            "{FILE}: not a cairn journal: it names `{}`, not a path or proposal inside the \
             repository; nothing was done",
            crate::output::inert(bad)
        ))
        .with_fix(format!("remove {FILE} (derived state) and run again")));
    }
    sweep(repo, &journal.steps)?;
    let mut out = Finished {
        subject: journal.message.lines().next().map(str::to_string),
        refs: journal.refs.clone(),
        ..Finished::default()
    };
    for step in &journal.steps {
        if let Some(w) = apply(repo, step, true)? {
            out.warnings.push(w);
        }
    }
    let mut changes = Vec::new();
    for step in &journal.steps {
        let head = crate::git::head_content(repo.root(), step.path())?
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        match step {
            Step::Write {
                path,
                commit,
                head: planned,
                ..
            } => {
                if head.as_deref() == Some(commit.as_str()) {
                    continue; // committed before the kill
                }
                if head != *planned {
                    out.warnings.push(format!(
                        "{path} changed in HEAD after the interrupted command read it: its \
                         change is in the working file but not committed; commit it yourself"
                    ));
                    continue;
                }
                changes.push(change(step));
            }
            Step::Append { bytes, .. } => {
                if head.is_some_and(|h| contains_lines(&h, bytes)) {
                    continue;
                }
                changes.push(change(step));
            }
        }
    }
    if !changes.is_empty() {
        out.commit = commit(&changes, &journal.message)?;
    }
    delete_refs(repo, &journal.refs)?;
    remove(repo)?;
    Ok(out)
}

/// Removes what a killed run left staged next to the files the steps write (MEMORY.md's
/// `.cairn-tmp-*` at the root).
fn sweep(repo: &Repo, steps: &[Step]) -> Result<()> {
    let mut dirs: Vec<std::path::PathBuf> = vec![repo.root().to_path_buf()];
    for s in steps {
        if let Some(dir) = repo.path(s.path()).parent()
            && !dirs.iter().any(|d| d == dir)
        {
            dirs.push(dir.to_path_buf());
        }
    }
    for dir in &dirs {
        crate::files::sweep_dead_temps(dir, false)?;
    }
    Ok(())
}

/// The commit's change for a step.
fn change(step: &Step) -> Change {
    match step {
        Step::Write { path, commit, .. } => Change::Content {
            path: path.clone(),
            bytes: commit.clone().into_bytes(),
        },
        Step::Append { path, bytes } => Change::Appended {
            path: path.clone(),
            bytes: bytes.clone().into_bytes(),
        },
    }
}

/// Does `step` to the working file unless it is done already (finishing: the file may hold
/// its result). Returns a warning when the file holds neither what the step expected nor its
/// result (a person edited it since): the file is then left as it is.
fn apply(repo: &Repo, step: &Step, finishing: bool) -> Result<Option<String>> {
    match step {
        Step::Write {
            path,
            before,
            after,
            ..
        } => {
            let file = repo.path(path);
            let now = crate::files::read_optional(&file)?.unwrap_or_default();
            if now == *after {
                return Ok(None);
            }
            if finishing && now != *before {
                return Ok(Some(format!(
                    "{path} was edited after an interrupted command planned its change: the \
                     file is kept as it is, and the commit holds the change"
                )));
            }
            crate::files::write_atomic(&file, after.as_bytes())?;
            Ok(None)
        }
        Step::Append { path, bytes } => {
            let file = repo.path(path);
            if finishing {
                let now = crate::files::read_optional(&file)?.unwrap_or_default();
                if contains_lines(&now, bytes) {
                    return Ok(None);
                }
            }
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
            }
            crate::files::append_lines(&file, bytes.as_bytes(), &repo.recovered_dir())?;
            Ok(None)
        }
    }
}

/// `text` holds every line of `lines` as a whole line.
fn contains_lines(text: &str, lines: &str) -> bool {
    let have: std::collections::HashSet<&str> = text.lines().collect();
    lines.lines().all(|l| have.contains(l))
}

fn remove(repo: &Repo) -> Result<()> {
    match std::fs::remove_file(repo.path(FILE)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(FILE, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_found_whole_not_as_parts() {
        assert!(contains_lines("a\nbc\n", "bc\n"));
        assert!(contains_lines("a\nbc\n", "a\nbc\n"));
        assert!(!contains_lines("a\nbcd\n", "bc\n"));
        assert!(!contains_lines("a\n", "a\nb\n"));
    }

    #[test]
    fn a_journal_round_trips_through_json() {
        let j = Journal {
            message: "memory: promote x\n\nCairn-Proposal: x\n".into(),
            steps: vec![
                Step::Write {
                    path: "MEMORY.md".into(),
                    before: "a\n".into(),
                    after: "a\nb\n".into(),
                    commit: "b\n".into(),
                    head: None,
                },
                Step::Append {
                    path: "vault/proposals/2026-12-01.jsonl".into(),
                    bytes: "{}\n".into(),
                },
            ],
            refs: vec!["x".into()],
        };
        let text = serde_json::to_string(&j).unwrap();
        assert!(text.contains(r#""kind":"write""#));
        assert_eq!(serde_json::from_str::<Journal>(&text).unwrap(), j);
    }
}
