//! The binary an agent's hook and MCP registration run: the one `cairn … install` was run as,
//! by its absolute path, so that an agent whose PATH lacks cairn (a GUI's launcher, a service,
//! a shell without `~/.cargo/bin`) still runs it instead of printing `cairn: not found` and
//! going on with nothing ingested (issue 31, item 8; ADR 87).
//!
//! The path is the one the person ran, not the file it resolves to: `/usr/local/bin/cairn`
//! that links to `/usr/local/Cellar/cairn/1.2/bin/cairn` stays the link, which a package
//! manager keeps pointing at the current version, where the resolved path would be gone after
//! the next upgrade. So the name in `argv[0]` is followed as the shell followed it (a path as
//! it is, a bare name through PATH) and kept when it leads to the running binary; otherwise
//! (a name that PATH would resolve to another binary, an exec with an odd `argv[0]`) the
//! running binary's own path is written. `cargo install` puts the binary itself in
//! `~/.cargo/bin`, which the rule keeps as it is.
//!
//! Pure: the caller passes the process's `argv[0]`, `current_exe`, working folder and PATH.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The absolute path to write for the running binary `current` that was started as `argv0`.
pub fn invoked(argv0: &OsStr, current: &Path, cwd: &Path, path_var: Option<&OsStr>) -> PathBuf {
    let current = running(current);
    let Ok(real) = current.canonicalize() else {
        return current;
    };
    let named = Path::new(argv0);
    let candidate = if named.components().count() > 1 || argv0.as_encoded_bytes().contains(&b'/') {
        Some(cwd.join(named))
    } else if argv0.is_empty() {
        None
    } else {
        path_var.and_then(|p| {
            std::env::split_paths(p)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(named))
                .find(|c| is_executable(c))
        })
    };
    match candidate {
        Some(c) if c.canonicalize().is_ok_and(|r| r == real) => c.components().collect(),
        _ => current,
    }
}

/// `current_exe` of a binary replaced while it ran reads `PATH (deleted)` on Linux: the path
/// is the one a new binary now has.
fn running(current: &Path) -> PathBuf {
    let text = current.to_string_lossy();
    match text.strip_suffix(" (deleted)") {
        Some(path) if !current.exists() => PathBuf::from(path),
        _ => current.to_path_buf(),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The binary an installed command (a hook's, or an MCP registration's) runs: its first word,
/// unquoted, when that is an absolute path.
pub fn program_of(command: &str) -> Option<PathBuf> {
    let command = command.trim_start();
    let word = if let Some(rest) = command.strip_prefix('\'') {
        // shell_word's quoting: 'a'\''b' is a'b.
        let mut out = String::new();
        let mut rest = rest;
        loop {
            let end = rest.find('\'')?;
            out.push_str(&rest[..end]);
            rest = &rest[end + 1..];
            match rest.strip_prefix("\\''") {
                Some(r) => {
                    out.push('\'');
                    rest = r;
                }
                None => break,
            }
        }
        out
    } else {
        command.split_whitespace().next()?.to_string()
    };
    let path = PathBuf::from(word);
    path.is_absolute().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_run_is_kept_when_it_leads_to_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("cellar/cairn-1.2/cairn");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&real, bin.join("cairn")).unwrap();
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("cairn"), "").unwrap();
        std::fs::set_permissions(other.join("cairn"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = std::env::join_paths([&bin]).unwrap();
        let cwd = dir.path();
        // A bare name found through PATH: the link, not the versioned file.
        assert_eq!(
            invoked(OsStr::new("cairn"), &real, cwd, Some(&path)),
            bin.join("cairn")
        );
        // A relative path run from cwd.
        assert_eq!(
            invoked(OsStr::new("./bin/cairn"), &real, cwd, None),
            bin.join("cairn")
        );
        // PATH's first cairn is another binary: the running one's own path.
        let first_other = std::env::join_paths([&other, &bin]).unwrap();
        assert_eq!(
            invoked(OsStr::new("cairn"), &real, cwd, Some(&first_other)),
            real
        );
        // No PATH, an empty argv[0].
        assert_eq!(invoked(OsStr::new("cairn"), &real, cwd, None), real);
        assert_eq!(invoked(OsStr::new(""), &real, cwd, Some(&path)), real);
    }

    #[test]
    fn the_program_of_a_command_is_its_first_word() {
        let cases = [
            (
                "/usr/bin/cairn --repo /kb hooks run x",
                Some("/usr/bin/cairn"),
            ),
            (
                "'/home/a b/it'\\''s/cairn' --repo x",
                Some("/home/a b/it's/cairn"),
            ),
            ("cairn --repo /kb hooks run x", None),
            ("", None),
        ];
        for (command, want) in cases {
            assert_eq!(program_of(command), want.map(PathBuf::from), "{command}");
        }
    }
}
