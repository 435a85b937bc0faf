//! The person's own configuration: `config.toml` in `$CAIRN_CONFIG_DIR`, else
//! `$XDG_CONFIG_HOME/cairn`, else `~/.config/cairn` (the folder of the console's token).
//!
//! It holds one key, `repo`: the person's default knowledge repository, used when neither
//! `--repo`, `CAIRN_REPO` nor the working directory names one (ADR 86), so that a command run
//! in a code project's folder, an agent's hook and `cairn mcp` started there all find it.
//!
//! ```toml
//! repo = "/home/me/kb"
//! ```
//!
//! `cairn config set` edits the file by replacing the `repo` line (or adding one at the top),
//! so the person's comments and anything else in it keep their bytes. Reading is lenient about
//! keys cairn does not know (a newer cairn's settings), strict about the one it uses: `repo`
//! must be a string holding an absolute path (`~/` stands for HOME), else the error names the
//! file and line. This module reads no environment: the caller passes the variables in.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files;

/// The file's name, in the configuration folder.
pub const FILE_NAME: &str = "config.toml";

/// The keys `cairn config` knows.
pub const KEYS: &[&str] = &["repo"];

/// The environment the configuration's place depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    pub cairn_config_dir: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Vars {
    /// Where the configuration file is, or None when no variable names a place.
    pub fn file(&self) -> Option<PathBuf> {
        let dir = if let Some(dir) = &self.cairn_config_dir {
            dir.clone()
        } else if let Some(xdg) = self.xdg_config_home.as_ref().filter(|x| x.is_absolute()) {
            // The XDG spec: a relative XDG_CONFIG_HOME is invalid and ignored.
            xdg.join("cairn")
        } else {
            self.home.as_ref()?.join(".config").join("cairn")
        };
        Some(dir.join(FILE_NAME))
    }
}

/// The default knowledge repository, with the file that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultRepo {
    pub dir: PathBuf,
    pub file: PathBuf,
}

/// `repo` of the configuration file `file`, if the file exists and sets it.
pub fn default_repo(file: &Path, home: Option<&Path>) -> Result<Option<DefaultRepo>> {
    let Some(text) = files::read_optional(file)? else {
        return Ok(None);
    };
    let Some((line, value)) = repo_line(file, &text)? else {
        return Ok(None);
    };
    let dir = expand(&value, home).ok_or_else(|| {
        Error::bad_input(format!(
            "{}:{line}: repo = {value:?} is not an absolute path",
            file.display()
        ))
        .with_fix("set it with `cairn config set repo DIR`")
    })?;
    Ok(Some(DefaultRepo {
        dir,
        file: file.to_path_buf(),
    }))
}

/// The line (1-based) and string value of the top-level `repo` key of `text`.
fn repo_line(file: &Path, text: &str) -> Result<Option<(usize, String)>> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
            .unwrap_or(1);
        Error::bad_input(format!(
            "{}:{line}: not TOML: {}",
            file.display(),
            e.message()
        ))
        .with_fix("fix the file, or remove it and run `cairn config set repo DIR`")
    })?;
    let Some(value) = table.get("repo") else {
        return Ok(None);
    };
    let line = key_line(text).map_or(1, |(i, _)| i + 1);
    match value.as_str() {
        Some(s) => Ok(Some((line, s.to_string()))),
        None => Err(Error::bad_input(format!(
            "{}:{line}: repo must be a string (a folder's path)",
            file.display()
        ))
        .with_fix("set it with `cairn config set repo DIR`")),
    }
}

/// `~/…` with HOME, an absolute path as it is; anything else is None.
fn expand(value: &str, home: Option<&Path>) -> Option<PathBuf> {
    let path = match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        (Some(_), None) => return None,
        (None, _) if value == "~" => home?.to_path_buf(),
        (None, _) => PathBuf::from(value),
    };
    path.is_absolute().then_some(path)
}

/// The index and text of the top-level line that sets `repo` (before any table header).
fn key_line(text: &str) -> Option<(usize, &str)> {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            return None;
        }
        let key = t.split('=').next().unwrap_or_default().trim();
        if t.contains('=') && (key == "repo" || key == "\"repo\"" || key == "'repo'") {
            return Some((i, line));
        }
    }
    None
}

/// `text` with its `repo` line set to `dir` (replaced where it is, else added first), every
/// other byte kept. `None` for `dir` removes the line.
pub fn with_repo(text: &str, dir: Option<&Path>) -> String {
    let line = dir.map(|d| {
        format!(
            "repo = {}",
            toml::Value::String(d.to_string_lossy().into_owned())
        )
    });
    let mut out = String::with_capacity(text.len() + 64);
    let mut done = false;
    let at = key_line(text).map(|(i, _)| i);
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        if Some(i) == at {
            if let Some(line) = &line {
                out.push_str(line);
                out.push_str(if piece.ends_with("\r\n") {
                    "\r\n"
                } else if piece.ends_with('\n') {
                    "\n"
                } else {
                    ""
                });
            }
            done = true;
        } else {
            out.push_str(piece);
        }
    }
    match (done, line) {
        (false, Some(line)) => format!("{line}\n{out}"),
        _ => out,
    }
}

/// Writes `repo = dir` into `file` (made with its folder when missing); returns whether the
/// file changed.
pub fn set_repo(file: &Path, dir: Option<&Path>) -> Result<bool> {
    let text = files::read_optional(file)?;
    if let Some(text) = &text {
        // A file cairn cannot read is not edited blind.
        repo_line(file, text)?;
    }
    let before = text.unwrap_or_default();
    let after = with_repo(&before, dir);
    if after == before {
        return Ok(false);
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), &e))?;
    }
    files::write_atomic(file, after.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_follows_cairn_config_dir_then_xdg_then_home() {
        let v = |c: Option<&str>, x: Option<&str>, h: Option<&str>| Vars {
            cairn_config_dir: c.map(PathBuf::from),
            xdg_config_home: x.map(PathBuf::from),
            home: h.map(PathBuf::from),
        };
        let cases = [
            (
                v(Some("/c"), Some("/x"), Some("/h")),
                Some("/c/config.toml"),
            ),
            (
                v(None, Some("/x"), Some("/h")),
                Some("/x/cairn/config.toml"),
            ),
            (
                v(None, Some("rel"), Some("/h")),
                Some("/h/.config/cairn/config.toml"),
            ),
            (
                v(None, None, Some("/h")),
                Some("/h/.config/cairn/config.toml"),
            ),
            (v(None, None, None), None),
        ];
        for (vars, want) in cases {
            assert_eq!(vars.file(), want.map(PathBuf::from), "{vars:?}");
        }
    }

    #[test]
    fn setting_repo_keeps_every_other_byte() {
        let cases = [
            ("", "repo = \"/kb\"\n"),
            ("# mine\n", "repo = \"/kb\"\n# mine\n"),
            (
                "# mine\nrepo = \"/old\" # note\n[x]\nrepo = 1\n",
                "# mine\nrepo = \"/kb\"\n[x]\nrepo = 1\n",
            ),
            ("repo='/old'\r\nk = 2", "repo = \"/kb\"\r\nk = 2"),
            ("[x]\nrepo = 1\n", "repo = \"/kb\"\n[x]\nrepo = 1\n"),
        ];
        for (before, want) in cases {
            assert_eq!(
                with_repo(before, Some(Path::new("/kb"))),
                want,
                "{before:?}"
            );
        }
        assert_eq!(with_repo("a = 1\nrepo = \"/kb\"\n", None), "a = 1\n");
        assert_eq!(with_repo("a = 1\n", None), "a = 1\n");
    }

    #[test]
    fn repo_must_be_an_absolute_path() {
        let home = Some(Path::new("/h"));
        assert_eq!(expand("/kb", home), Some(PathBuf::from("/kb")));
        assert_eq!(expand("~/kb", home), Some(PathBuf::from("/h/kb")));
        assert_eq!(expand("~/kb", None), None);
        assert_eq!(expand("kb", home), None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        std::fs::write(&file, "# c\nrepo = 3\n").unwrap();
        let err = default_repo(&file, home).unwrap_err();
        assert!(
            err.message.contains("config.toml:2: repo must be a string"),
            "{}",
            err.message
        );
        std::fs::write(&file, "x = [\n").unwrap();
        let err = default_repo(&file, home).unwrap_err();
        assert!(err.message.contains("not TOML"), "{}", err.message);
        std::fs::write(&file, "other = 1\n").unwrap();
        assert_eq!(default_repo(&file, home).unwrap(), None);
    }
}
