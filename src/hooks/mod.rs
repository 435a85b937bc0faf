//! Git hooks: the scripts in the knowledge repository's `hooks/` folder and what they run.
//!
//! `cairn hooks install` points git's `core.hooksPath` at `hooks/`, where [`PRE_COMMIT`] is a
//! two-line POSIX script that hands over to `cairn hooks run pre-commit`. That run scans what
//! is staged (the index blobs that differ from HEAD, read through [`crate::git`]) with the
//! built-in secret rules and the `[redact]` patterns of `cairn.toml`, and the commit is refused
//! when anything is found. Agent session hooks (session-start, pre-compact) are not here yet.
//!
//! This module decides and never prints; `cli/hooks.rs` reports.

use std::path::Path;

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

/// Hook events `cairn hooks run` knows.
pub const EVENTS: &[&str] = &["pre-commit"];

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
    fn binary_is_a_nul_byte() {
        assert!(is_binary(b"PNG\0\x01"));
        assert!(!is_binary(b"password=hunter2secret\n"));
    }
}
