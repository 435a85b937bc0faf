//! `core.hooksPath`: pointing git at cairn's hook scripts, and putting back the value it
//! replaced.

use std::path::{Path, PathBuf};

use super::{git_err, join_prefix, repo_prefix};
use crate::error::{Error, Kind, Result};

/// Where [`set_hooks_path`] keeps, in the repository's own git config, the core.hooksPath it
/// replaced (`cairn.previousHooksPath`); absent when core.hooksPath was unset. cairn's hook
/// scripts run the hooks found there first, and [`restore_hooks_path`] puts it back.
const PREVIOUS_SECTION: &str = "cairn";
const PREVIOUS_KEY: &str = "previousHooksPath";

/// What [`set_hooks_path`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HooksPath {
    /// The value set, relative to the work tree (`hooks`, or `kb/hooks` for a knowledge
    /// repository in a subfolder).
    pub value: String,
    /// The core.hooksPath cairn's hooks chain to (the one replaced, kept across installs);
    /// `None` when it was unset (git's own `hooks` folder in the git directory).
    pub previous: Option<String>,
    /// Whether the config file was written.
    pub changed: bool,
}

/// core.hooksPath as it stands, and what cairn's hooks chain to.
#[derive(Debug, Clone)]
pub struct HooksState {
    /// The value that points git at the knowledge repository's `hooks` folder.
    pub ours: String,
    /// core.hooksPath in the repository's own config.
    pub current: Option<String>,
    /// What [`set_hooks_path`] recorded it replaced.
    pub recorded: Option<String>,
    /// core.hooksPath from outside the repository's own config (global, system).
    pub inherited: Option<String>,
    pub(super) work_dir: PathBuf,
    pub(super) common_dir: PathBuf,
    pub(super) hooks_dir: PathBuf,
}

impl HooksState {
    /// core.hooksPath points at the knowledge repository's `hooks` folder.
    pub fn installed(&self) -> bool {
        self.current.as_deref().is_some_and(|v| self.is_ours(v))
    }

    /// The folder whose hooks cairn's hooks run first: the recorded (or, before installing,
    /// the current) core.hooksPath, else an inherited one, else `$GIT_COMMON_DIR/hooks`. Never
    /// cairn's own folder.
    pub fn chained_dir(&self) -> Option<PathBuf> {
        let own = if self.installed() {
            self.recorded.as_deref()
        } else {
            self.current.as_deref()
        };
        let dir = match own.or(self.inherited.as_deref()).filter(|v| !v.is_empty()) {
            Some(v) => self.resolve(v),
            None => self.common_dir.join("hooks"),
        };
        (!same_dir(&dir, &self.hooks_dir)).then_some(dir)
    }

    fn is_ours(&self, value: &str) -> bool {
        value == self.ours || same_dir(&self.resolve(value), &self.hooks_dir)
    }

    /// A core.hooksPath value as git reads it: `~/` is the home folder, a relative path is
    /// relative to the work tree (where git runs hooks).
    fn resolve(&self, value: &str) -> PathBuf {
        if let Some(rest) = value.strip_prefix("~/")
            && let Some(home) = gix::path::env::home_dir()
        {
            return home.join(rest);
        }
        self.work_dir.join(value)
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The repository's own git config file, parsed, with what [`HooksState`] needs.
struct LocalConfig {
    pub(super) path: PathBuf,
    pub(super) file: gix::config::File,
    pub(super) state: HooksState,
}

fn local_config(root: &Path) -> Result<LocalConfig> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let ours = join_prefix(&repo_prefix(&work_dir, root)?, "hooks");
    let path = repo.common_dir().join("config");
    let file = gix::config::File::from_path_no_includes(path.clone(), gix::config::Source::Local)
        .map_err(|e| git_err(&format!("cannot read {}", path.display()), e))?;
    let get = |section: &str, key: &str| file.string_by(section, None, key).map(|v| v.to_string());
    let inherited = repo
        .config_snapshot()
        .plumbing()
        .string_filter("core.hooksPath", |m| {
            !matches!(
                m.source,
                gix::config::Source::Local | gix::config::Source::Worktree
            )
        })
        .map(|v| v.to_string());
    let state = HooksState {
        hooks_dir: root.join("hooks"),
        ours,
        current: get("core", "hooksPath"),
        recorded: get(PREVIOUS_SECTION, PREVIOUS_KEY),
        inherited,
        common_dir: repo.common_dir().to_path_buf(),
        work_dir,
    };
    Ok(LocalConfig { path, file, state })
}

impl LocalConfig {
    fn set(&mut self, section: &str, key: &str, value: &str) -> Result<()> {
        self.file
            .set_raw_value_by(section, None, key, value)
            .map_err(|e| git_err(&format!("cannot set {section}.{key}"), e))?;
        Ok(())
    }

    /// Removes every `section.key`, and the section when nothing is left in it.
    fn unset(&mut self, section: &str, key: &str) {
        if let Ok(mut s) = self.file.section_mut(section, None) {
            while s.remove(key).is_some() {}
        }
        let empty = self
            .file
            .section(section, None)
            .is_ok_and(|s| s.body().num_values() == 0);
        if empty {
            self.file.remove_section(section, None);
        }
    }

    fn write(&self) -> Result<()> {
        let mut bytes = Vec::new();
        self.file
            .write_to(&mut bytes)
            .map_err(|e| Error::io(self.path.display(), &e))?;
        crate::files::write_atomic(&self.path, &bytes)
    }
}

/// core.hooksPath and what cairn's hooks chain to, for the knowledge repository at `root`.
pub fn hooks_state(root: &Path) -> Result<HooksState> {
    Ok(local_config(root)?.state)
}

/// Sets `core.hooksPath` in the repository's own git config (`.git/config`) to the `hooks`
/// folder of the knowledge repository at `root`, recording the value it replaces so that
/// cairn's hooks can run the hooks there and [`restore_hooks_path`] can put it back. Only those
/// keys are touched: every other byte of the file stays as it was. Setting it again changes
/// nothing and keeps the record.
pub fn set_hooks_path(root: &Path) -> Result<HooksPath> {
    let mut config = local_config(root)?;
    let state = config.state.clone();
    if state.installed() {
        return Ok(HooksPath {
            value: state.current.unwrap_or(state.ours),
            previous: state.recorded,
            changed: false,
        });
    }
    config.set("core", "hooksPath", &state.ours)?;
    match &state.current {
        Some(previous) => config.set(PREVIOUS_SECTION, PREVIOUS_KEY, previous)?,
        None => config.unset(PREVIOUS_SECTION, PREVIOUS_KEY),
    }
    config.write()?;
    Ok(HooksPath {
        value: state.ours,
        previous: state.current,
        changed: true,
    })
}

/// What [`restore_hooks_path`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// core.hooksPath now (`None`: unset, git runs the hooks in the git directory).
    pub hooks_path: Option<String>,
    /// Whether cairn's hooks were installed (else nothing was touched).
    pub was_installed: bool,
}

/// Puts back the core.hooksPath that [`set_hooks_path`] replaced (unset when it was unset), and
/// forgets the record. Nothing changes when core.hooksPath is not cairn's.
pub fn restore_hooks_path(root: &Path) -> Result<Restored> {
    let mut config = local_config(root)?;
    let state = config.state.clone();
    if !state.installed() {
        return Ok(Restored {
            hooks_path: state.current,
            was_installed: false,
        });
    }
    match &state.recorded {
        Some(previous) => config.set("core", "hooksPath", previous)?,
        None => config.unset("core", "hooksPath"),
    }
    config.unset(PREVIOUS_SECTION, PREVIOUS_KEY);
    config.write()?;
    Ok(Restored {
        hooks_path: state.recorded,
        was_installed: true,
    })
}
