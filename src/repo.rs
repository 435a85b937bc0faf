//! The knowledge repository: where it is, what it holds, and its lock.
//!
//! A knowledge repository is a directory holding `cairn.toml` (section 1 of DESIGN.md). It is
//! found like git finds its own: `--repo DIR`, else `CAIRN_REPO` (both arrive here as
//! `explicit`), else the nearest ancestor of the working directory holding `cairn.toml`, else
//! the person's default knowledge repository (`repo` in [`crate::user_config`], ADR 86), read
//! only when nothing before it named one.
//!
//! Writers serialize on the repository lock, an advisory lock on `cairn.lock` in the git
//! directory (not in `.cairn/`, which may be deleted at any moment; ADR 3). Readers never take
//! it. Each hold is measured: when the lock is released, a telemetry event `lock`/`writer`
//! records how long the writer waited for it (`duration_ms`, and `wait_us`) and how long it
//! held it (`held_us`), so contention between agents can be seen with `cairn stats
//! --telemetry` (and is reported by `scripts/load`).

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::{self, Config};
use crate::error::{Error, Kind, Result};
use crate::user_config::DefaultRepo;

/// Folders of the layout, relative to the root.
pub const DIRS: &[&str] = &[
    "decisions",
    "slog",
    "vault/observations",
    "vault/sessions",
    "vault/proposals",
    "vault/notes",
    "hooks",
];

/// The derived-state folder (git-ignored, always safe to delete); defined beside the writes
/// that must never reach it from a record's path ([`crate::files::repo_relative`]).
pub use crate::files::DERIVED_DIR;

#[derive(Debug, Clone)]
pub struct Repo {
    root: PathBuf,
    pub config: Config,
}

impl Repo {
    /// Finds the repository from an explicit path, by walking up from `cwd`, else the default
    /// `fallback` gives; refuses one whose derived folder is a link or holds one
    /// ([`Repo::open`]).
    pub fn discover(
        explicit: Option<&Path>,
        cwd: &Path,
        fallback: impl FnOnce() -> Result<Option<DefaultRepo>>,
    ) -> Result<Repo> {
        let repo = Repo::discover_as_is(explicit, cwd, fallback)?;
        repo.check_derived()?;
        Ok(repo)
    }

    /// [`Repo::discover`] without refusing links in `.cairn/`: for `cairn doctor`, which names
    /// them instead (and touches nothing under `.cairn/` while one is there).
    pub fn discover_as_is(
        explicit: Option<&Path>,
        cwd: &Path,
        fallback: impl FnOnce() -> Result<Option<DefaultRepo>>,
    ) -> Result<Repo> {
        if let Some(dir) = explicit {
            let dir = absolute(dir, cwd);
            if !dir.join(config::FILE_NAME).is_file() {
                return Err(Error::new(
                    Kind::NotARepository,
                    format!(
                        "{} is not a cairn repository (no {})",
                        dir.display(),
                        config::FILE_NAME
                    ),
                )
                .with_fix(format!("run `cairn init {}` to make one", dir.display())));
            }
            return Repo::open_as_is(dir);
        }
        let mut dir = Some(cwd);
        while let Some(d) = dir {
            if d.join(config::FILE_NAME).is_file() {
                return Repo::open_as_is(d.to_path_buf());
            }
            dir = d.parent();
        }
        if let Some(default) = fallback()? {
            if !default.dir.join(config::FILE_NAME).is_file() {
                return Err(Error::new(
                    Kind::NotARepository,
                    format!(
                        "the default knowledge repository {} (repo in {}) is not a cairn repository (no {})",
                        default.dir.display(),
                        default.file.display(),
                        config::FILE_NAME
                    ),
                )
                .with_fix(format!(
                    "run `cairn init {}`, or `cairn config set repo DIR` to name another",
                    default.dir.display()
                )));
            }
            return Repo::open_as_is(default.dir);
        }
        Err(Error::new(
            Kind::NotARepository,
            format!(
                "not inside a cairn repository (no {} in {} or any parent), and no default knowledge repository is set",
                config::FILE_NAME,
                cwd.display()
            ),
        )
        .with_fix(
            "pass `--repo DIR` (or set CAIRN_REPO), or name your knowledge repository once for every folder: `cairn config set repo DIR` (or `cairn init DIR --default` to make one)",
        ))
    }

    /// Opens the repository rooted at `root`, reading its configuration. Refused (exit 2,
    /// nothing touched) when `.cairn` is a link or holds one ([`derived_links`], ADR 66): a
    /// clone can carry a committed `.cairn -> ../victim`, and every command writes there.
    pub fn open(root: PathBuf) -> Result<Repo> {
        let repo = Repo::open_as_is(root)?;
        repo.check_derived()?;
        Ok(repo)
    }

    fn open_as_is(root: PathBuf) -> Result<Repo> {
        let config = Config::load(&root.join(config::FILE_NAME))?;
        crate::files::confine(&root);
        Ok(Repo { root, config })
    }

    /// Refuses a derived folder that is a link, is not a folder, or holds a link. A clean
    /// look is noted in the git directory ([`WalkNote`]): the next command stats the folders
    /// it found instead of listing every file (5,000 chunk files of a library cost 2-3 ms).
    pub fn check_derived(&self) -> Result<()> {
        let note = WalkNote::at(&self.root);
        if note.as_ref().is_some_and(|n| n.still_clean(&self.root)) {
            return Ok(());
        }
        let (links, folders) = derived_walk(&self.root);
        match links.first() {
            None => {
                if let Some(note) = note {
                    note.write(&self.root, &folders);
                }
                Ok(())
            }
            Some(link) => Err(derived_link_error(&self.root, link)),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of a repository-relative path (`slog/2026-11-30.jsonl`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Where torn tails cut from JSONL files are kept.
    pub fn recovered_dir(&self) -> PathBuf {
        self.root.join(DERIVED_DIR).join("recovered")
    }

    /// Where derived state lives.
    pub fn derived_dir(&self) -> PathBuf {
        self.root.join(DERIVED_DIR)
    }

    /// Takes the repository's writer lock, waiting for other writers: as long as they hold
    /// it, or in a process that [`bound_lock_waits`], at most `[mcp] lock_wait_ms`.
    pub fn lock(&self) -> Result<RepoLock> {
        let path = lock_path(&self.root);
        refuse_git_link(&path)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(path.display(), &e))?;
        let asked = Instant::now();
        let contended = match file.try_lock() {
            Ok(()) => false,
            Err(TryLockError::WouldBlock) if BOUNDED.load(Ordering::Relaxed) => {
                self.wait_for_lock(&file, asked)?;
                true
            }
            Err(TryLockError::WouldBlock) => {
                file.lock().map_err(|e| Error::io(path.display(), &e))?;
                true
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(path.display(), &e)),
        };
        // What a killed writer left staged where every writer writes (MEMORY.md at the root,
        // the derived files, the vector store): its owner is gone, so no live write is touched.
        let derived = self.derived_dir();
        for dir in [self.root.clone(), derived.join("vectors"), derived] {
            crate::files::sweep_dead_temps(&dir, false)?;
        }
        Ok(RepoLock {
            _file: file,
            repo: self.clone(),
            wait: asked.elapsed(),
            contended,
            taken: Instant::now(),
        })
    }
}

/// Whether this process waits for the repository lock only `[mcp] lock_wait_ms`.
static BOUNDED: AtomicBool = AtomicBool::new(false);

/// Makes every later [`Repo::lock`] of this process give up after `[mcp] lock_wait_ms` (the
/// MCP server: a tool call gets an error it can act on, not a wait without end).
pub fn bound_lock_waits() {
    BOUNDED.store(true, Ordering::Relaxed);
}

impl Repo {
    /// Tries the lock on `file` until it is free or `[mcp] lock_wait_ms` since `asked` have
    /// passed.
    fn wait_for_lock(&self, file: &File, asked: Instant) -> Result<()> {
        let limit = Duration::from_millis(self.config.mcp.lock_wait_ms);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(()),
                Err(TryLockError::WouldBlock) if asked.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::new(
                        Kind::Busy,
                        format!(
                            "the repository is busy: another cairn process held its lock for the {} ms this write may wait; nothing was written",
                            limit.as_millis()
                        ),
                    )
                    .with_fix(
                        "call the tool again in a moment, or raise `[mcp] lock_wait_ms` in cairn.toml",
                    ));
                }
                Err(TryLockError::Error(e)) => {
                    return Err(Error::io(lock_path(&self.root).display(), &e));
                }
            }
        }
    }

    /// Takes the lock that lets one process at a time build the index from nothing (readers
    /// take it too, unlike the writer lock); beside the writer lock, in the git directory, so
    /// that deleting `.cairn/` never drops it while it is held. `None` where the lock file
    /// cannot be opened (a git directory this process cannot write): the build goes on
    /// without it, as a read there always did.
    pub fn index_build_lock(&self) -> Option<File> {
        let path = lock_path(&self.root).with_file_name("cairn-index.lock");
        refuse_git_link(&path).ok()?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.lock().ok()?;
        Some(file)
    }
}

/// What in the derived folder of `root` cairn must not go through: `.cairn` itself when it is a
/// symbolic link or not a folder, else every symbolic link under it (looked at without following
/// any: the entries' types come with the folder listing). Empty when `.cairn` is missing.
pub fn derived_links(root: &Path) -> Vec<PathBuf> {
    derived_walk(root).0
}

/// [`derived_links`], and the folders looked in (`.cairn` first) as [`WalkNote`] notes them,
/// each taken before the folder is read (a link made while the walk goes on leaves the note
/// stale).
fn derived_walk(root: &Path) -> (Vec<PathBuf>, Vec<Option<String>>) {
    let top = root.join(DERIVED_DIR);
    match std::fs::symlink_metadata(&top) {
        Err(_) => return (Vec::new(), Vec::new()),
        Ok(meta) if !meta.is_dir() => return (vec![top], Vec::new()),
        Ok(_) => {}
    }
    let mut out = Vec::new();
    let mut folders = Vec::new();
    let mut stack = vec![top];
    while let Some(dir) = stack.pop() {
        folders.push(WalkNote::line(&dir));
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_symlink() => out.push(entry.path()),
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                _ => {}
            }
        }
    }
    out.sort();
    (out, folders)
}

/// The folders of a clean look at `.cairn/` ([`derived_walk`]), each with its inode and times
/// of change, in the git directory beside the lock (`cairn-derived-walk`), which a clone never
/// carries. A link made in a folder since, or a folder put in another's place, changes a
/// folder's time of change or inode, and the next command looks again (ADR 144). None where
/// there is no git directory to keep it in.
struct WalkNote(PathBuf);

impl WalkNote {
    fn at(root: &Path) -> Option<WalkNote> {
        let lock = lock_path(root);
        if lock.starts_with(root.join(DERIVED_DIR)) {
            return None;
        }
        let path = lock.with_file_name("cairn-derived-walk");
        refuse_git_link(&path).ok()?;
        Some(WalkNote(path))
    }

    /// A folder's line: its inode, times of change (status and content) and path.
    #[cfg(unix)]
    fn line(folder: &Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::symlink_metadata(folder).ok()?;
        if !m.is_dir() {
            return None;
        }
        Some(format!(
            "{} {} {} {} {} {}",
            m.ino(),
            m.ctime(),
            m.ctime_nsec(),
            m.mtime(),
            m.mtime_nsec(),
            folder.display()
        ))
    }

    #[cfg(not(unix))]
    fn line(_: &Path) -> Option<String> {
        None
    }

    /// Whether every folder noted for `root` is as it was.
    fn still_clean(&self, root: &Path) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.0) else {
            return false;
        };
        let mut lines = text.lines();
        if lines.next() != Some(&*format!("root {}", root.display())) {
            return false;
        }
        let mut any = false;
        for noted in lines {
            let Some(folder) = noted.splitn(6, ' ').nth(5) else {
                return false;
            };
            if Self::line(Path::new(folder)).as_deref() != Some(noted) {
                return false;
            }
            any = true;
        }
        any
    }

    /// Notes the `folders` of a clean walk (best effort: a note that cannot be written, or a
    /// folder that could not be noted, is looked at again next time).
    fn write(&self, root: &Path, folders: &[Option<String>]) {
        let mut text = format!("root {}\n", root.display());
        for folder in folders {
            match folder {
                Some(line) if !line.contains('\n') => text.push_str(line),
                _ => return,
            }
            text.push('\n');
        }
        let temp = self.0.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&temp, text).is_err() || std::fs::rename(&temp, &self.0).is_err() {
            let _ = std::fs::remove_file(&temp);
        }
    }
}

/// The error of a command refused because of `link` (from [`derived_links`]).
pub fn derived_link_error(root: &Path, link: &Path) -> Error {
    let rel = link
        .strip_prefix(root)
        .unwrap_or(link)
        .display()
        .to_string();
    let what = match std::fs::read_link(link) {
        Ok(target) => format!("is a symbolic link (to {})", target.display()),
        Err(_) => "is not a folder".to_string(),
    };
    Error::new(
        Kind::BadInput,
        format!(
            "{} {what}: cairn never reads or writes its derived state through a link or outside \
             the repository; nothing was touched",
            link.display()
        ),
    )
    .with_fix(format!(
        "remove it (`rm {rel}`; if a commit holds it, `git rm --cached {rel}` and commit): \
         .cairn/ is derived and the next command rebuilds it; `cairn doctor` lists every link"
    ))
}

/// Refuses a lock or marker file of cairn's in the git directory that is a symbolic link:
/// opening it would create or truncate what the link names.
pub fn refuse_git_link(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Error::new(
            Kind::BadInput,
            format!(
                "{} is a symbolic link: cairn never opens its lock files through a link",
                path.display()
            ),
        )
        .with_fix(format!("remove it (`rm {}`)", path.display()))),
        _ => Ok(()),
    }
}

/// Telemetry is written in the repository's `.cairn/` ([`crate::telemetry::Place`]).
impl crate::telemetry::Place for Repo {
    fn file(&self, rel: &str) -> PathBuf {
        self.path(rel)
    }

    fn recovered(&self) -> PathBuf {
        self.recovered_dir()
    }

    fn redact_patterns(&self) -> &[String] {
        &self.config.redact.patterns
    }

    fn keep_queries(&self) -> bool {
        self.config.telemetry.queries
    }

    fn ignore_derived(&self) -> Result<()> {
        ignore_derived(self)
    }
}

/// Makes sure git ignores `.cairn/` even where `.gitignore` lost its line: the folder carries
/// its own `.gitignore` of `*`.
pub fn ignore_derived(repo: &Repo) -> Result<()> {
    let path = repo.derived_dir().join(".gitignore");
    if !path.exists() {
        crate::files::write_atomic(&path, b"*\n")?;
    }
    Ok(())
}

/// Held while a command writes; released on drop, which records the wait and the hold in
/// telemetry.
pub struct RepoLock {
    _file: File,
    repo: Repo,
    /// How long this process waited for the lock.
    wait: Duration,
    /// Another writer held the lock when it was asked for.
    contended: bool,
    taken: Instant,
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        // One small append, made while the lock is still held (the file is closed after this
        // body). The event's time is the clock's, not a pinned `--now`: it measures this
        // machine.
        let held = self.taken.elapsed();
        let meta = serde_json::json!({
            "wait_us": self.wait.as_micros() as u64,
            "held_us": held.as_micros() as u64,
            "contended": self.contended,
            "pid": std::process::id(),
        });
        if let Some(w) = crate::telemetry::record(
            &self.repo,
            chrono::Utc::now(),
            "lock",
            "writer",
            true,
            self.wait,
            meta,
        ) {
            crate::output::notice(&w);
        }
    }
}

/// The lock file: in the git directory when there is one (it outlives `.cairn/`), else in
/// `.cairn/`.
fn lock_path(root: &Path) -> PathBuf {
    for dir in root.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return dot_git.join("cairn.lock");
        }
        if let Ok(text) = std::fs::read_to_string(&dot_git)
            && let Some(git_dir) = text.strip_prefix("gitdir:")
        {
            let git_dir = absolute(Path::new(git_dir.trim()), dir);
            if git_dir.is_dir() {
                return git_dir.join("cairn.lock");
            }
        }
    }
    let derived = root.join(DERIVED_DIR);
    if derived_links(root).is_empty() {
        let _ = std::fs::create_dir_all(&derived);
    }
    derived.join("lock")
}

fn absolute(path: &Path, base: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_links_names_a_linked_dot_cairn_and_links_below_a_real_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(
            derived_links(root).is_empty(),
            "no .cairn: nothing to refuse"
        );
        std::os::unix::fs::symlink("../victim", root.join(DERIVED_DIR)).unwrap();
        assert_eq!(derived_links(root), vec![root.join(DERIVED_DIR)]);
        std::fs::remove_file(root.join(DERIVED_DIR)).unwrap();
        std::fs::create_dir_all(root.join(".cairn/index")).unwrap();
        std::fs::write(root.join(".cairn/index/meta.json"), "{}").unwrap();
        assert!(derived_links(root).is_empty());
        std::os::unix::fs::symlink("/etc/hostname", root.join(".cairn/index/x")).unwrap();
        std::os::unix::fs::symlink("../../v", root.join(".cairn/telemetry.jsonl")).unwrap();
        assert_eq!(
            derived_links(root),
            vec![
                root.join(".cairn/index/x"),
                root.join(".cairn/telemetry.jsonl")
            ]
        );
        std::fs::remove_dir_all(root.join(DERIVED_DIR)).unwrap();
        std::fs::write(root.join(DERIVED_DIR), "not a folder").unwrap();
        assert_eq!(derived_links(root), vec![root.join(DERIVED_DIR)]);
    }
}
