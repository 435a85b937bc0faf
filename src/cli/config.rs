//! `cairn config get|set|unset KEY`: the person's own configuration ([`crate::user_config`]),
//! outside every repository. Its one key, `repo`, is the default knowledge repository that
//! commands, hooks and `cairn mcp` use from any folder (ADR 86).

use std::path::{Path, PathBuf};

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::output::{Next, Report};
use crate::user_config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print a setting (exit 1 when it is not set)
    Get {
        /// repo: the default knowledge repository
        key: String,
    },
    /// Set a setting: `cairn config set repo DIR` makes DIR (a cairn repository) the default
    /// knowledge repository of every folder
    Set {
        /// repo: the default knowledge repository
        key: String,
        value: PathBuf,
    },
    /// Remove a setting
    Unset {
        /// repo: the default knowledge repository
        key: String,
    },
}

fn check_key(key: &str) -> Result<()> {
    if user_config::KEYS.contains(&key) {
        return Ok(());
    }
    Err(Error::bad_input(format!("unknown setting {key:?}"))
        .with_fix(format!("use one of: {}", user_config::KEYS.join(", "))))
}

/// Where the configuration file is, or the error that says why there is no place for it.
pub(crate) fn file() -> Result<PathBuf> {
    super::user_vars().file().ok_or_else(|| {
        Error::bad_input("no place for cairn's configuration: HOME is not set")
            .with_fix("set HOME (or CAIRN_CONFIG_DIR, or XDG_CONFIG_HOME)")
    })
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Get { key } => {
            check_key(&key)?;
            let file = file()?;
            let found = super::default_repo()?;
            let value = found.as_ref().map(|d| d.dir.clone());
            let human = value
                .as_ref()
                .map(|v| v.display().to_string())
                .unwrap_or_default();
            Ok(Report::new(
                "config_get",
                json!({ "key": key, "value": value, "file": file }),
                human,
            )
            .empty_when(
                value.is_none(),
                format!("{key} is not set in {}", file.display()),
            ))
        }
        Command::Set { key, value } => {
            check_key(&key)?;
            let dir = absolute(&ctx.cwd, &value);
            set_default(&dir)
        }
        Command::Unset { key } => {
            check_key(&key)?;
            let file = file()?;
            let changed = user_config::set_repo(&file, None)?;
            let human = if changed {
                format!("removed {key} from {}", file.display())
            } else {
                format!("{key} was not set in {}; nothing changed", file.display())
            };
            Ok(Report::new(
                "config_unset",
                json!({ "key": key, "file": file, "changed": changed }),
                human,
            ))
        }
    }
}

/// `dir` as an absolute path without `.` or `..` parts or a trailing slash (`..` taken
/// lexically, as the shell's `cd ..` does).
pub(crate) fn absolute(cwd: &Path, dir: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in cwd.join(dir).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Makes `dir`, a cairn repository, the default knowledge repository (`cairn config set repo`
/// and `cairn init --default`).
pub(crate) fn set_default(dir: &Path) -> Result<Report> {
    if !dir.join(crate::config::FILE_NAME).is_file() {
        return Err(Error::bad_input(format!(
            "{} is not a cairn repository (no {}); the default was not set",
            dir.display(),
            crate::config::FILE_NAME
        ))
        .with_fix(format!(
            "run `cairn init {} --default` to make it and set it",
            dir.display()
        )));
    }
    let file = file()?;
    let changed = user_config::set_repo(&file, Some(dir))?;
    let human = if changed {
        format!(
            "the default knowledge repository is {} (repo in {})",
            dir.display(),
            file.display()
        )
    } else {
        format!(
            "the default knowledge repository was already {}; nothing changed",
            dir.display()
        )
    };
    Ok(Report::new(
        "config_set",
        json!({ "key": "repo", "value": dir, "file": file, "changed": changed }),
        human,
    )
    .next(Next::new(
        "cairn mcp install --agent claude-code",
        "serve it to an agent from every folder",
    )))
}
