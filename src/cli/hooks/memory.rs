//! `cairn hooks install|uninstall --agent claude-code --memory` and the memory part of the
//! Claude Code session-end hook (ADR 138): Claude Code's auto memory moved into the knowledge
//! repository (`agents/claude-code/<project key>/memory/`), its default folder's files
//! imported first, every change committed and read into observations at once.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::hooks::agents::memory as setting;
use crate::redact::Redactor;
use crate::repo::Repo;
use crate::sessions::memories::claude;

/// The work these commits belong to (a rerun continues a killed one).
const MEMORY: super::super::Work = super::super::Work::any_rerun("hooks memory");

/// Where the memory folders live in the knowledge repository.
pub const FOLDERS: &str = "agents/claude-code";

/// The record of the value `autoMemoryDirectory` had before install replaced it, beside the
/// folder: `{"file": SETTINGS, "value": JSON TEXT}`.
const BEFORE: &str = "setting-before.json";

/// The local settings file of the project at `dir` (never checked in; ADR 135, 138).
pub fn settings_file(project: &Path) -> PathBuf {
    project.join(".claude/settings.local.json")
}

/// The repository's memory folder for the project at `project`: `(relative, absolute)`.
fn folder(root: &Path, project: &Path) -> Result<(String, PathBuf)> {
    let key = claude::sanitize(&project.to_string_lossy()).ok_or_else(|| {
        Error::bad_input(format!(
            "{}: the project's path is too long for a folder name",
            project.display()
        ))
    })?;
    let rel = format!("{FOLDERS}/{key}/memory");
    Ok((rel.clone(), root.join(&rel)))
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Copies the memory files of `from` into `to`, each with its modification time (the memory's
/// time); a file `to` already holds is kept. Returns the files copied.
fn import(from: &Path, to: &Path) -> Result<Vec<PathBuf>> {
    let mut copied = Vec::new();
    for src in claude::files(from) {
        let dest = to.join(src.file_name().expect("a file has a name"));
        if dest.exists() {
            continue;
        }
        std::fs::create_dir_all(to).map_err(|e| Error::io(to.display(), &e))?;
        let bytes = std::fs::read(&src).map_err(|e| Error::io(src.display(), &e))?;
        crate::files::write_atomic(&dest, &bytes)?;
        if let Ok(t) = std::fs::metadata(&src).and_then(|m| m.modified())
            && let Ok(f) = std::fs::File::options().write(true).open(&dest)
        {
            let _ = f.set_modified(t);
        }
        copied.push(dest);
    }
    Ok(copied)
}

/// Install: import what Claude Code kept so far, point the setting at the repository's folder,
/// commit and read it. `project` is the project's folder (canonical).
pub fn install(ctx: &Ctx, repo: &Repo, root: &Path, project: &Path) -> Result<(String, Value)> {
    let (rel, dir) = folder(root, project)?;
    let dir_text = dir.to_string_lossy().into_owned();
    let home = home();
    let homes = super::super::agent_memories::Homes::from_env(&home);
    let before = super::super::agent_memories::claude_memory_folder(&homes, &home, project);
    let file = settings_file(project);
    let _lock = repo.lock()?;
    let mut written: Vec<String> = Vec::new();
    let imported = match before.as_deref().filter(|b| *b != dir) {
        Some(from) => import(from, &dir)?,
        None => Vec::new(),
    };
    written.extend(imported.iter().map(|p| rel_of(root, p)));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    let set = setting::set(&file, &dir_text)?;
    if let Some(previous) = &set.previous {
        let record = dir.parent().expect("the folder has a parent").join(BEFORE);
        let text = serde_json::to_string_pretty(&json!({"file": file, "value": previous}))
            .expect("a record serializes");
        crate::files::write_atomic(&record, format!("{text}\n").as_bytes())?;
        written.push(rel_of(root, &record));
    }
    let read = commit_and_read(
        ctx,
        repo,
        root,
        std::slice::from_ref(&dir),
        written,
        "install",
    )?;
    let mut human = if set.changed {
        format!(
            "Claude Code now keeps this project's memory in {} ({} in {})",
            dir.display(),
            setting::KEY,
            file.display()
        )
    } else {
        format!(
            "Claude Code already keeps this project's memory in {}",
            dir.display()
        )
    };
    for h in read["held"].as_array().into_iter().flatten() {
        human.push_str(&format!(
            "\n{}: holds a secret: not committed (its observation is redacted)",
            h.as_str().unwrap_or_default()
        ));
    }
    if let Some(from) = before.as_deref().filter(|_| !imported.is_empty()) {
        human.push_str(&format!(
            "\nimported {} from {} (left there)",
            crate::output::count(imported.len(), "memory file"),
            from.display()
        ));
    }
    let data = json!({
        "folder": dir,
        "folder_in_repo": rel,
        "settings_file": file,
        "changed": set.changed,
        "created": set.created,
        "previous": set.previous,
        "imported_from": before,
        "imported": imported,
        "observations": read,
    });
    Ok((human, data))
}

/// Uninstall: give the setting back as it was; the files stay in the repository.
pub fn uninstall(ctx: &Ctx, repo: &Repo, root: &Path, project: &Path) -> Result<(String, Value)> {
    let (rel, dir) = folder(root, project)?;
    let file = settings_file(project);
    let _lock = repo.lock()?;
    let record = dir.parent().expect("the folder has a parent").join(BEFORE);
    let previous: Option<String> = std::fs::read(&record)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(|v| v["file"].as_str() == Some(&*file.to_string_lossy()))
        .and_then(|v| v["value"].as_str().map(str::to_string));
    let unset = setting::unset(&file, &dir.to_string_lossy(), previous.as_deref())?;
    if unset.changed && record.exists() {
        std::fs::remove_file(&record).map_err(|e| Error::io(record.display(), &e))?;
        ctx.commit(
            repo,
            &[rel_of(root, &record)],
            "hooks: Claude Code's memory setting given back",
        )?;
    }
    let human = match (&unset.other, unset.changed) {
        (Some(v), _) => format!(
            "{} in {} is {v}, not cairn's folder: left as it is",
            setting::KEY,
            file.display()
        ),
        (None, false) => format!(
            "{} is not cairn's in {}; nothing changed",
            setting::KEY,
            file.display()
        ),
        (None, true) => format!(
            "{} in {} given back as it was; Claude Code's memories stay in {}",
            setting::KEY,
            file.display(),
            dir.display()
        ),
    };
    let data = json!({
        "settings_file": file,
        "changed": unset.changed,
        "deleted": unset.deleted,
        "other": unset.other,
        "folder": dir,
        "folder_in_repo": rel,
    });
    Ok((human, data))
}

/// The Claude Code memory folders `install --memory` made in the repository at `root`
/// (canonical), sorted.
pub fn folders(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(FOLDERS)) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join("memory"))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// A memory folder with its project key, as `agent_memories::ingest` takes extra folders.
pub fn with_key(dirs: &[PathBuf]) -> Vec<(PathBuf, Option<String>)> {
    dirs.iter()
        .map(|d| {
            let key = d.parent().and_then(|p| p.file_name());
            (d.clone(), key.map(|k| k.to_string_lossy().into_owned()))
        })
        .collect()
}

/// The session-end hook's part: commits what changed in the repository's Claude Code memory
/// folders and reads it into observations.
pub fn sync(ctx: &Ctx, repo: &Repo) -> Result<Value> {
    let root = repo
        .root()
        .canonicalize()
        .unwrap_or_else(|_| repo.root().to_path_buf());
    let dirs = folders(&root);
    if dirs.is_empty() {
        return Ok(Value::Null);
    }
    let _lock = repo.lock()?;
    commit_and_read(ctx, repo, &root, &dirs, Vec::new(), "session end")
}

/// Commits `written` and every change of the memory files of `dirs` (made, edited, deleted),
/// with the observations read from them, in one commit.
fn commit_and_read(
    ctx: &Ctx,
    repo: &Repo,
    root: &Path,
    dirs: &[PathBuf],
    mut written: Vec<String>,
    why: &str,
) -> Result<Value> {
    let redactor = Redactor::configured(&repo.config.redact.patterns)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
    // A memory file holding a secret is never committed (its observation is redacted).
    let mut held: Vec<String> = Vec::new();
    for d in dirs {
        let rel = rel_of(root, d);
        let mut paths: Vec<String> = claude::files(d).iter().map(|p| rel_of(root, p)).collect();
        paths.extend(tracked(root, &rel));
        for p in paths {
            let now = std::fs::read(root.join(&p)).ok();
            if now.as_deref().is_some_and(|b| {
                let text = String::from_utf8_lossy(b);
                matches!(redactor.redact(&text), std::borrow::Cow::Owned(_))
            }) {
                if !held.contains(&p) {
                    held.push(p);
                }
                continue;
            }
            if now != crate::git::head_content(root, &p)? && !written.contains(&p) {
                written.push(p);
            }
        }
    }
    written.retain(|p| !held.contains(p));
    let home = home();
    let homes = super::super::agent_memories::Homes::from_env(&home);
    let extra = with_key(dirs);
    let read = super::super::agent_memories::ingest(
        ctx,
        repo,
        &MEMORY,
        &[],
        &homes,
        &home,
        &extra,
        &redactor,
    )?;
    if let Some(f) = &read.file
        && !written.contains(f)
    {
        written.push(f.clone());
    }
    let subject = format!(
        "hooks: Claude Code's memory ({why}): {}, {} ({} merged, {} superseded, {} stale)",
        crate::output::count(
            written.iter().filter(|p| p.starts_with(FOLDERS)).count(),
            "file"
        ),
        crate::output::count(read.stored as usize, "agent memory"),
        read.merged,
        read.superseded,
        read.stale
    );
    let commit = ctx.commit_with_pending(repo, &MEMORY, &written, &subject)?;
    Ok(json!({
        "files": written,
        "stored": read.stored,
        "merged": read.merged,
        "superseded": read.superseded,
        "stale": read.stale,
        "skipped": read.skipped.iter().map(|s| format!("{}: {}", s.file, s.reason)).collect::<Vec<_>>(),
        "commit": commit.map(|c| c.id),
        "held": held,
    }))
}

/// The files git's HEAD holds under `rel` (to see the ones deleted since).
fn tracked(root: &Path, rel: &str) -> Vec<String> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-tree", "-r", "--name-only", "HEAD", "--", rel])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
