//! `.cairn/pending.json`: what a writing command noted before its first write and had not
//! committed yet when it stopped, so a kill at any point ends, after a rerun, in the state of
//! an uninterrupted run (ADR 74).
//!
//! Each entry records which command wrote its paths, what makes a later run a rerun of it (its
//! inputs), and the commit message the run will use. Only a run of the same command finishes
//! an entry, and under the entry's own message:
//!
//! - a rerun (same command, same inputs) continues the killed run: its commit holds the
//!   entry's paths whole and carries the killed run's message (the killed run planned the
//!   whole work; the rerun only does what was left of it);
//! - another run of the same command (other inputs, or a command whose every run is new work,
//!   like `slog`) first commits the entry on its own, under the entry's message;
//! - any other command leaves it alone: no command commits another command's files.
//!   `cairn doctor` finishes every entry, each under its own message.
//!
//! On disk: `{"entries": [{"id", "command", "key", "message", "paths"}]}`. A file written by an
//! older cairn (a bare list of paths) is one entry of no command, which only `doctor`
//! finishes.
//!
//! Every reader and writer of the file holds the repository lock, so an entry found there
//! belongs to a run that stopped.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::Ctx;
use crate::error::{Error, Result};
use crate::git;
use crate::repo::Repo;

/// Where the entries live, relative to the repository root (derived state, never committed).
pub(crate) const FILE: &str = ".cairn/pending.json";

/// One run's writes, as its rerun finds them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Entry {
    pub id: String,
    /// The command, as people type it: `slog`, `library add`, `import observations`.
    pub command: String,
    /// The command's inputs: a run with the same key is a rerun of this one. `None`: every
    /// run is new work.
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    pub paths: Vec<String>,
    /// Counts of what the run wrote, for a rerun's message when the run could not note one
    /// (a streamed ingest: turns and episodes so far).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tally: Vec<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entries {
    entries: Vec<Entry>,
}

/// Which command a run is and what makes another run a rerun of it.
#[derive(Debug, Clone)]
pub struct Work {
    command: &'static str,
    key: Option<String>,
}

impl Work {
    /// A command whose run with the same `key` (its inputs, in any stable text) redoes the
    /// same work: the rerun continues a killed run.
    pub fn rerun(command: &'static str, key: impl Into<String>) -> Work {
        Work {
            command,
            key: Some(key.into()),
        }
    }

    /// A command whose every run continues a killed one, whatever its inputs (a streamed
    /// ingest: each transcript is compared with what is already written).
    pub const fn any_rerun(command: &'static str) -> Work {
        Work {
            command,
            key: Some(String::new()),
        }
    }

    /// A command whose every run is new work (`slog`): a killed run's writes are committed on
    /// their own before the next run writes.
    pub fn each_new(command: &'static str) -> Work {
        Work { command, key: None }
    }
}

/// What this run knows of the file (one per [`Ctx`]).
#[derive(Debug, Default)]
pub(crate) struct State {
    /// This run's entry.
    own: Option<String>,
    /// The entries of killed runs this run continues were looked for.
    settled: bool,
    /// Their paths (committed whole) and the first message they noted.
    adopted: Vec<String>,
    adopted_ids: Vec<String>,
    adopted_message: Option<String>,
    adopted_tally: Vec<u64>,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn read(repo: &Repo) -> Result<Entries> {
    let mut entries = read_raw(repo)?;
    // A clone can carry this file (ADR 66): a path outside the repository is never committed.
    for e in &mut entries.entries {
        e.paths.retain(|p| crate::files::repo_relative(p));
    }
    Ok(entries)
}

fn read_raw(repo: &Repo) -> Result<Entries> {
    let Some(text) = crate::files::read_optional(&repo.path(FILE))? else {
        return Ok(Entries::default());
    };
    if let Ok(e) = serde_json::from_str::<Entries>(&text) {
        return Ok(e);
    }
    match serde_json::from_str::<Vec<String>>(&text) {
        Ok(paths) if paths.is_empty() => Ok(Entries::default()),
        Ok(paths) => Ok(Entries {
            entries: vec![Entry {
                id: "older-cairn".into(),
                command: String::new(),
                key: None,
                message: None,
                paths,
                tally: Vec::new(),
            }],
        }),
        Err(e) => Err(
            Error::bad_input(format!("{FILE}: not a cairn pending file: {e}"))
                .with_fix("run `cairn doctor`, or commit the files it names and delete it"),
        ),
    }
}

fn write(repo: &Repo, entries: &Entries) -> Result<()> {
    let path = repo.path(FILE);
    if entries.entries.is_empty() {
        return match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(FILE, &e)),
        };
    }
    crate::repo::ignore_derived(repo)?;
    let text = serde_json::to_string(entries).expect("entries serialize");
    crate::files::write_atomic(&path, text.as_bytes())
}

/// The message an entry is committed under when its run stopped before noting one.
fn fallback(entry: &Entry, by: &str) -> String {
    let command = if entry.command.is_empty() {
        "command"
    } else {
        &entry.command
    };
    format!("{by}: commit what an interrupted {command} wrote")
}

fn whole(paths: &[String]) -> Vec<git::Change> {
    paths.iter().cloned().map(git::Change::File).collect()
}

impl Ctx {
    pub(crate) fn committing(&self, repo: &Repo) -> bool {
        !self.no_commit && repo.config.git.commit
    }

    /// Looks once for what killed runs of `work`'s command left: a rerun's is adopted, any
    /// other run's is committed now, on its own, under its own message.
    fn settle(&self, repo: &Repo, work: &Work) -> Result<()> {
        if self.pending.borrow().settled || !self.committing(repo) {
            return Ok(());
        }
        self.pending.borrow_mut().settled = true;
        let mut entries = read(repo)?;
        let own = self.pending.borrow().own.clone();
        let mut keep = Vec::new();
        let mut changed = false;
        for e in std::mem::take(&mut entries.entries) {
            if e.command != work.command || Some(&e.id) == own.as_ref() {
                keep.push(e);
                continue;
            }
            if work.key.is_some() && e.key == work.key {
                let mut st = self.pending.borrow_mut();
                for p in &e.paths {
                    if !st.adopted.contains(p) {
                        st.adopted.push(p.clone());
                    }
                }
                st.adopted_ids.push(e.id.clone());
                if st.adopted_message.is_none() {
                    st.adopted_message = e.message.clone();
                }
                add(&mut st.adopted_tally, &e.tally);
                keep.push(e);
                continue;
            }
            let message = e
                .message
                .clone()
                .unwrap_or_else(|| fallback(&e, work.command));
            self.commit_changes(repo, &whole(&e.paths), &message)?;
            changed = true;
        }
        entries.entries = keep;
        if changed {
            write(repo, &entries)?;
        }
        Ok(())
    }

    /// Notes that `paths` are about to be written by `work` and, when known, the commit
    /// `message` the run will use (nothing to note when not committing). A killed run of the
    /// same command is settled first (see the module's rules).
    pub fn begin_writes(
        &self,
        repo: &Repo,
        work: &Work,
        paths: &[String],
        message: Option<&str>,
    ) -> Result<()> {
        if !self.committing(repo) || paths.is_empty() {
            return Ok(());
        }
        self.settle(repo, work)?;
        // What a killed run left staged next to the files this one writes.
        let mut dirs: Vec<std::path::PathBuf> = Vec::new();
        for p in paths {
            if let Some(dir) = repo.path(p).parent()
                && !dirs.iter().any(|d| d == dir)
            {
                dirs.push(dir.to_path_buf());
            }
        }
        for dir in &dirs {
            crate::files::sweep_dead_temps(dir, false)?;
        }
        let mut entries = read(repo)?;
        let st = &mut *self.pending.borrow_mut();
        entries.entries.retain(|e| !st.adopted_ids.contains(&e.id));
        let id = st.own.get_or_insert_with(|| {
            format!(
                "{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            )
        });
        let at = match entries.entries.iter().position(|e| e.id == *id) {
            Some(at) => at,
            None => {
                entries.entries.push(Entry {
                    id: id.clone(),
                    command: work.command.to_string(),
                    key: work.key.clone(),
                    message: None,
                    paths: Vec::new(),
                    tally: st.adopted_tally.clone(),
                });
                entries.entries.len() - 1
            }
        };
        let entry = &mut entries.entries[at];
        for p in st.adopted.iter().chain(paths) {
            if !entry.paths.contains(p) {
                entry.paths.push(p.clone());
            }
        }
        // The adopted ones are now this entry: a kill of this run leaves them to the next.
        st.adopted_ids.clear();
        if entry.message.is_none() {
            entry.message = st
                .adopted_message
                .clone()
                .or_else(|| message.map(str::to_string));
        }
        write(repo, &entries)
    }

    /// Notes (or updates) the commit message of a run that learns it only as it writes (a
    /// streamed ingest, an import's part), unless it continues a killed run, whose message
    /// is kept.
    pub fn note_message(&self, repo: &Repo, message: &str) -> Result<()> {
        let Some(id) = self.pending.borrow().own.clone() else {
            return Ok(());
        };
        if self.pending.borrow().adopted_message.is_some() {
            return Ok(());
        }
        let mut entries = read(repo)?;
        if let Some(e) = entries.entries.iter_mut().find(|e| e.id == id)
            && e.message.as_deref() != Some(message)
        {
            e.message = Some(message.to_string());
            write(repo, &entries)?;
        }
        Ok(())
    }

    /// Notes the counts of what this run wrote so far (see [`Entry::tally`]), added to those
    /// of the killed runs it continues.
    pub fn note_tally(&self, repo: &Repo, tally: &[u64]) -> Result<()> {
        let Some(id) = self.pending.borrow().own.clone() else {
            return Ok(());
        };
        let mut total = self.pending.borrow().adopted_tally.clone();
        add(&mut total, tally);
        let mut entries = read(repo)?;
        if let Some(e) = entries.entries.iter_mut().find(|e| e.id == id) {
            e.tally = total;
            write(repo, &entries)?;
        }
        Ok(())
    }

    /// What the killed runs this one continues wrote: their counts and their paths.
    pub fn continued(&self, repo: &Repo, work: &Work) -> Result<(Vec<u64>, Vec<String>)> {
        self.settle(repo, work)?;
        let st = self.pending.borrow();
        Ok((st.adopted_tally.clone(), st.adopted.clone()))
    }

    /// Commits `paths` (whole files) and what a killed run this one continues left.
    pub fn commit_with_pending(
        &self,
        repo: &Repo,
        work: &Work,
        paths: &[String],
        message: &str,
    ) -> Result<Option<git::Committed>> {
        self.commit_changes_with_pending(repo, work, &whole(paths), message)
    }

    /// Commits `changes` and what a killed run this one continues left (whole files: what it
    /// wrote is not known), under the killed run's message when it noted one; then clears
    /// this run's entry. A rerun that finds its work already written still ends with it
    /// committed.
    pub fn commit_changes_with_pending(
        &self,
        repo: &Repo,
        work: &Work,
        changes: &[git::Change],
        message: &str,
    ) -> Result<Option<git::Committed>> {
        self.settle(repo, work)?;
        let (own, adopted, adopted_message) = {
            let st = self.pending.borrow();
            (
                st.own.clone(),
                st.adopted.clone(),
                st.adopted_message.clone(),
            )
        };
        let mut entries = if self.committing(repo) {
            read(repo)?
        } else {
            Entries::default()
        };
        // A path a killed run wrote is committed whole; one only this run wrote, as this
        // run's change.
        let mut all: Vec<git::Change> = changes
            .iter()
            .filter(|c| !adopted.iter().any(|p| p == c.path()))
            .cloned()
            .collect();
        let mut left = adopted;
        if let Some(e) = own
            .as_ref()
            .and_then(|id| entries.entries.iter().find(|e| e.id == *id))
        {
            left.extend(e.paths.iter().cloned());
        }
        for p in &left {
            if !all.iter().any(|c| c.path() == p) {
                all.push(git::Change::File(p.clone()));
            }
        }
        let message = match adopted_message {
            Some(m) => m,
            None if message.is_empty() => {
                format!("{}: commit what an interrupted run wrote", work.command)
            }
            None => message.to_string(),
        };
        let committed = self.commit_changes(repo, &all, &message)?;
        if self.committing(repo) {
            let st = &mut *self.pending.borrow_mut();
            let before = entries.entries.len();
            entries
                .entries
                .retain(|e| Some(&e.id) != st.own.as_ref() && !st.adopted_ids.contains(&e.id));
            if entries.entries.len() != before {
                write(repo, &entries)?;
            }
            *st = State {
                settled: true,
                ..State::default()
            };
        }
        Ok(committed)
    }

    /// Finishes every entry, each under its own message (`cairn doctor`); the subjects of
    /// what it committed.
    pub(crate) fn finish_all_pending(&self, repo: &Repo) -> Result<Vec<String>> {
        let entries = read(repo)?;
        let mut done = Vec::new();
        let mut kept = Entries::default();
        for e in entries.entries {
            let message = e.message.clone().unwrap_or_else(|| fallback(&e, "doctor"));
            let subject = message.lines().next().unwrap_or_default().to_string();
            match self.commit_changes(repo, &whole(&e.paths), &message) {
                Ok(commit) => done.push(format!(
                    "finished an interrupted command's \"{subject}\" ({})",
                    self.short(&commit)
                )),
                // A path that cannot be committed (a link put in its place) stays pending,
                // named, for a person to fix; the other entries are still finished.
                Err(err) => {
                    done.push(format!(
                        "cannot finish an interrupted command's \"{subject}\": {err}; it stays in {FILE}"
                    ));
                    kept.entries.push(e);
                }
            }
        }
        if self.committing(repo) {
            write(repo, &kept)?;
        }
        Ok(done)
    }
}

/// Adds `more` to `to`, count by count.
fn add(to: &mut Vec<u64>, more: &[u64]) {
    if to.len() < more.len() {
        to.resize(more.len(), 0);
    }
    for (t, m) in to.iter_mut().zip(more) {
        *t += m;
    }
}

/// The entries a killed command left (`cairn doctor --dry-run` names them).
pub(crate) fn left(repo: &Repo) -> Vec<Entry> {
    read(repo).map(|e| e.entries).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_count_by_count() {
        let mut to = vec![1, 2];
        add(&mut to, &[10, 20, 30]);
        assert_eq!(to, [11, 22, 30]);
        add(&mut to, &[]);
        assert_eq!(to, [11, 22, 30]);
    }

    #[test]
    fn an_entry_round_trips_and_reads_without_its_optional_fields() {
        let e: Entry =
            serde_json::from_str(r#"{"id":"1-0","command":"slog","paths":["a"]}"#).unwrap();
        assert_eq!((&e.key, &e.message, e.tally.len()), (&None, &None, 0));
        let text = serde_json::to_string(&Entries { entries: vec![e] }).unwrap();
        assert!(!text.contains("tally"), "{text}");
    }
}
