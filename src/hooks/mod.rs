//! Git hooks: the scripts in the knowledge repository's `hooks/` folder and what they run.
//!
//! `cairn hooks install` points git's `core.hooksPath` at `hooks/`, where [`PRE_COMMIT`] is a
//! two-line POSIX script that hands over to `cairn hooks run pre-commit`. That run scans what
//! is staged (the index blobs that differ from HEAD, read through [`crate::git`]) with the
//! built-in secret rules and the `[redact]` patterns of `cairn.toml`, and lints the staged
//! ADRs, MEMORY.md and JSON Lines ([`lint`]); the commit is refused when anything is found.
//! `hooks/post-commit` and `hooks/post-merge` start `cairn index` in the background
//! ([`background`]) and return at once. Agent session hooks (session-start, pre-compact,
//! session-end for Claude Code, Codex and pi) are in [`agents`].
//!
//! # Chaining
//!
//! Pointing core.hooksPath at `hooks/` would silence the hooks that ran before (a `.husky`
//! folder, or `.git/hooks` when core.hooksPath was unset). So install records the value it
//! replaces (`cairn.previousHooksPath` in `.git/config`, see [`crate::git::set_hooks_path`]),
//! writes a [`script`] in `hooks/` for every hook found in that folder, and `cairn hooks run
//! EVENT` runs the previous folder's hook of the same name first ([`run_chained`]), then
//! cairn's own check for the event, if any. A hook added to the previous folder later needs
//! `cairn hooks install` again (it writes the missing script); `cairn hooks uninstall` puts
//! core.hooksPath back as it was. Chaining happens only while core.hooksPath is cairn's, and
//! never from inside a chained hook ([`CHAIN_GUARD`]), so a previous hook that itself calls
//! `cairn hooks run` cannot loop.
//!
//! This module decides and never prints; `cli/hooks.rs` reports.

pub mod agents;
pub mod background;
pub mod lint;
pub mod schedule;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::files;
use crate::git;
use crate::redact::Redactor;
use crate::repo::Repo;

/// The pre-commit script, relative to the repository root.
pub const PRE_COMMIT_PATH: &str = "hooks/pre-commit";

/// The pre-commit script. It names the knowledge repository by the script's own place, so it
/// works from any directory git runs it in, whatever `CAIRN_REPO` says.
pub const PRE_COMMIT: &str = "#!/bin/sh\n\
# cairn: refuse a commit that stages a secret. `cairn hooks install` points core.hooksPath here.\n\
exec cairn --repo \"$(dirname \"$0\")/..\" hooks run pre-commit \"$@\"\n";

/// The line that makes an existing pre-commit script cairn's.
const PRE_COMMIT_CALL: &str = "hooks run pre-commit";

/// Hook events cairn itself does something on.
pub const EVENTS: &[&str] = &["pre-commit", "post-commit", "post-merge"];

/// Every hook git runs (githooks(5)): the events `cairn hooks run` accepts and chains.
pub const GIT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// Set in a chained hook's environment: a `cairn hooks run` inside it chains nothing.
pub const CHAIN_GUARD: &str = "CAIRN_HOOK_CHAINED";

/// The script that hands `event` to cairn (for pre-commit it is [`PRE_COMMIT`]).
pub fn script(event: &str) -> String {
    if event == "pre-commit" {
        return PRE_COMMIT.to_string();
    }
    if background::EVENTS.contains(&event) {
        return format!(
            "#!/bin/sh\n\
             # cairn: bring the index up to date in the background after {event} (returns at once).\n\
             exec cairn --repo \"$(dirname \"$0\")/..\" hooks run {event} \"$@\"\n"
        );
    }
    format!(
        "#!/bin/sh\n\
         # cairn: run the {event} hook that ran before `cairn hooks install` (see `cairn hooks uninstall`).\n\
         exec cairn --repo \"$(dirname \"$0\")/..\" hooks run {event} \"$@\"\n"
    )
}

/// The hooks in `dir` git would run: files named after a hook, executable.
pub fn chainable(dir: &Path) -> Vec<String> {
    GIT_HOOKS
        .iter()
        .filter(|name| is_executable_file(&dir.join(name)))
        .map(|name| name.to_string())
        .collect()
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What [`write_scripts`] did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Scripts {
    /// Scripts written, relative to the root.
    pub written: Vec<String>,
    /// Hooks whose script in `hooks/` is a person's own (it does not call cairn): the previous
    /// folder's hook of that name does not run unless that script calls it.
    pub own: Vec<String>,
}

/// Writes the script of every event in `events` that `hooks/` lacks (and makes them
/// executable); a script of a person's own is kept and named in [`Scripts::own`].
pub fn write_scripts(root: &Path, events: &[String]) -> Result<Scripts> {
    let mut out = Scripts::default();
    for event in events {
        let rel = format!("hooks/{event}");
        let path = root.join(&rel);
        match files::read_optional(&path)? {
            Some(text) if text.contains(&format!("hooks run {event}")) => {}
            Some(_) => {
                out.own.push(event.clone());
                continue;
            }
            None => {
                files::write_atomic(&path, script(event).as_bytes())?;
                out.written.push(rel);
            }
        }
        make_executable(&path)?;
    }
    Ok(out)
}

/// A previous hook that was run.
#[derive(Debug, Clone, Serialize)]
pub struct Chained {
    pub hook: PathBuf,
    /// Its exit code (`None`: killed by a signal).
    pub code: Option<i32>,
}

impl Chained {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `dir`'s hook for `event`, if it has one git would run, with `args` and cairn's stdin;
/// its output goes to stderr (as git does with hooks), so that cairn's stdout stays its own.
pub fn run_chained(dir: &Path, event: &str, args: &[String]) -> Result<Option<Chained>> {
    let hook = dir.join(event);
    if !is_executable_file(&hook) {
        return Ok(None);
    }
    let run = |program: &Path, first: Option<&Path>| {
        let mut cmd = std::process::Command::new(program);
        cmd.args(first).args(args).env(CHAIN_GUARD, "1");
        cmd.stdout(std::io::stderr()).status()
    };
    // A script without a `#!` line is run by sh, as git does.
    const ENOEXEC: i32 = 8;
    let status = match run(&hook, None) {
        Err(e) if e.raw_os_error() == Some(ENOEXEC) => run(Path::new("/bin/sh"), Some(&hook)),
        other => other,
    }
    .map_err(|e| Error::io(hook.display(), &e))?;
    Ok(Some(Chained {
        hook,
        code: status.code(),
    }))
}

/// Writes the pre-commit script if it is missing, and makes it executable. Returns the path
/// written (relative to the root), if any. An existing script that does not call cairn is a
/// person's own: it is an error, never overwritten.
pub fn write_pre_commit(root: &Path) -> Result<Option<String>> {
    let path = root.join(PRE_COMMIT_PATH);
    let mut written = None;
    match files::read_optional(&path)? {
        Some(text) if text.contains(PRE_COMMIT_CALL) => {}
        Some(_) => {
            return Err(Error::bad_input(format!(
                "{PRE_COMMIT_PATH} exists and does not run cairn"
            ))
            .with_fix(format!(
                "add the line `cairn {PRE_COMMIT_CALL}` to it, or move it away and run this again"
            )));
        }
        None => {
            files::write_atomic(&path, PRE_COMMIT.as_bytes())?;
            written = Some(PRE_COMMIT_PATH.to_string());
        }
    }
    make_executable(&path)?;
    Ok(written)
}

fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path.display(), &e))?;
    let mode = meta.permissions().mode();
    if mode & 0o111 != 0o111 {
        let mode = mode | 0o111 | 0o444;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(path.display(), &e))?;
    }
    Ok(())
}

/// A secret in a staged file. The secret itself is never kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StagedSecret {
    /// The path in the git work tree, as git shows it.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What it is (`github-token`, `password`, `custom`, …).
    pub kind: &'static str,
}

/// What a pre-commit scan looked at and found.
#[derive(Debug, Clone, Serialize)]
pub struct PreCommit {
    /// Staged files scanned (binary files, holding a NUL byte, are skipped as git does).
    pub scanned: usize,
    pub secrets: Vec<StagedSecret>,
}

/// Scans what is staged in the git repository holding `repo` for secrets.
pub fn pre_commit(repo: &Repo) -> Result<PreCommit> {
    let redactor = Redactor::new(&repo.config.redact.patterns)?;
    let mut scanned = 0;
    let mut secrets = Vec::new();
    for blob in git::staged_blobs(repo.root())? {
        if is_binary(&blob.bytes) {
            continue;
        }
        scanned += 1;
        let text = String::from_utf8_lossy(&blob.bytes);
        for f in redactor.findings(&text) {
            secrets.push(StagedSecret {
                path: blob.path.clone(),
                line: f.line,
                kind: f.kind,
            });
        }
    }
    Ok(PreCommit { scanned, secrets })
}

/// git's own test: a NUL byte in the first 8000 bytes.
fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_calls_cairn() {
        assert!(PRE_COMMIT.starts_with("#!/bin/sh\n"));
        assert!(PRE_COMMIT.contains(PRE_COMMIT_CALL));
    }

    #[test]
    fn every_script_calls_cairn_for_its_own_event() {
        for event in GIT_HOOKS {
            let text = script(event);
            assert!(text.starts_with("#!/bin/sh\n"), "{text}");
            assert!(
                text.contains(&format!("hooks run {event} \"$@\"\n")),
                "{text}"
            );
        }
    }

    #[test]
    fn binary_is_a_nul_byte() {
        assert!(is_binary(b"PNG\0\x01"));
        assert!(!is_binary(b"password=hunter2secret\n"));
    }
}
