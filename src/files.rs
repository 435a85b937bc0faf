//! Writes that never leave a half-written file.
//!
//! Two shapes of write exist in cairn, and every file write goes through one of them:
//!
//! - [`write_atomic`]: a whole file, written to a temporary file beside it, flushed to disk and
//!   renamed over the old one. A reader sees the old file or the new one, never a mix.
//! - [`append_line`]: one line added to a JSON Lines file, under an exclusive advisory lock on
//!   that file (`flock`, std's `File::lock`) and with one `write` of the whole line, so lines
//!   from concurrent writers never interleave. A torn tail left by a crash is moved aside to
//!   `.cairn/recovered/` first, so the new line never glues onto it. A file holding a bad line
//!   (one that is not a JSON object, not the last) is not appended to: the error names it and
//!   points to `cairn doctor`, which moves it aside (ADR: writers refuse damage). Files that
//!   are only derived state (`.cairn/`) use [`append_derived`], which does not look.
//!
//! `cairn doctor` rewrites a damaged file by rename while holding its lock; an appender that
//! waited for the lock finds the path now names another file and opens it again, so no line
//! goes to the file that was replaced.
//!
//! # Never through a link
//!
//! A knowledge repository is fed by remotes and people cairn does not control, and git stores
//! symbolic links as they are: `decisions/0009-x.md -> ~/.aws/credentials` or `vault -> /etc`
//! arrives with a pull. Once [`confine`] has been told the repository's root, no write under it
//! goes through a symbolic link or a `..` (outside `.git/`, which git never fills from a
//! commit): the write is refused, naming the link. `.cairn/` is no exception: a clone can carry
//! a committed `.cairn -> ../victim` (after `git add -f`), so the derived folder and everything
//! in it is checked too, and [`crate::repo::Repo::open`] refuses a `.cairn` that is a link or
//! holds one before any command touches it (ADR 66). Readers that walk the
//! repository's folders use [`read_dir_real`], which leaves links out, and
//! [`read_optional`] refuses a link, so what a link points to is never read, indexed or
//! committed. `cairn doctor` names every such link (ADR: links are never followed).
//! Power loss: both shapes reach the disk before they return, in the order that keeps the file
//! whole (see the ADR on fsync order). [`write_atomic`] syncs the temporary file's data, renames
//! it, then syncs the directory (the rename itself is only durable once the directory is).
//! [`append_line`] syncs the file's data (`fdatasync`: the bytes and the new length) before
//! it releases the lock, and the directory only when the append made the file ([`append_derived`]
//! does neither: derived state is rebuilt, never trusted). A command
//! commits after its writes returned, so a commit never names a line the disk may lose.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The derived-state folder of a knowledge repository (git-ignored, always safe to delete),
/// re-exported as [`crate::repo::DERIVED_DIR`].
pub const DERIVED_DIR: &str = ".cairn";

/// The roots of the knowledge repositories this process opened (see [`confine`]).
static CONFINED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// From now on, no write under `root` (outside `.git/`) goes through a symbolic
/// link or `..`, and [`read_dir_real`] and [`read_optional`] do not follow links under it.
/// Called by [`crate::repo::Repo::open`].
pub fn confine(root: &Path) {
    let mut roots = CONFINED.lock().unwrap_or_else(|e| e.into_inner());
    if !roots.iter().any(|r| r == root) {
        roots.push(root.to_path_buf());
    }
}

/// What stands between `path` and a confined root: `Ok(None)` when the path is not under one,
/// is under `.git/`, or no part of it is a link; `Ok(Some(link))` names the first
/// part that is a symbolic link; an error when the path climbs out with `..`.
fn link_on_the_way(path: &Path) -> Result<Option<PathBuf>> {
    use std::path::Component;
    let roots = CONFINED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for root in &roots {
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let mut at = root.clone();
        for (i, part) in rel.components().enumerate() {
            match part {
                Component::Normal(name) => {
                    if i == 0 && name == ".git" {
                        return Ok(None);
                    }
                    at.push(name);
                    match std::fs::symlink_metadata(&at) {
                        Ok(meta) if meta.file_type().is_symlink() => return Ok(Some(at)),
                        Ok(_) => {}
                        // Not there yet: nothing below it can be a link.
                        Err(_) => return Ok(None),
                    }
                }
                Component::CurDir => {}
                _ => {
                    return Err(Error::new(
                        crate::error::Kind::BadInput,
                        format!(
                            "{} leads out of the repository {}; nothing was written",
                            path.display(),
                            root.display()
                        ),
                    ));
                }
            }
        }
        return Ok(None);
    }
    Ok(None)
}

/// Refuses a write to `path` that would go through a link (see [`confine`]).
fn refuse_links(path: &Path) -> Result<()> {
    match link_on_the_way(path)? {
        None => Ok(()),
        Some(link) => Err(link_error(&link, "writes")),
    }
}

fn link_error(link: &Path, what: &str) -> Error {
    let target = std::fs::read_link(link)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    Error::new(
        crate::error::Kind::BadInput,
        format!(
            "{} is a symbolic link{target}: cairn never {what} through a link inside the repository",
            link.display()
        ),
    )
    .with_fix("replace the link with the file or folder itself, or remove it; `cairn doctor` lists every link")
}

/// The entries of a folder inside the repository, without following links: a folder reached
/// through a symbolic link reads as missing (`NotFound`) and entries that are links are left
/// out, so nothing outside the repository is read through them (see [`confine`]). Entries
/// whose names are not UTF-8 are left out too: records are named by text, and such a name
/// (a clone can carry one) read lossily named a file that does not exist, which failed every
/// read of the index.
pub fn read_dir_real(
    dir: &Path,
) -> std::io::Result<impl Iterator<Item = std::io::Result<std::fs::DirEntry>> + use<>> {
    let linked = std::fs::symlink_metadata(dir)?.file_type().is_symlink()
        || matches!(link_on_the_way(dir), Ok(Some(_)) | Err(_));
    if linked {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "a symbolic link, not followed",
        ));
    }
    Ok(std::fs::read_dir(dir)?.filter(|entry| match entry {
        Ok(e) => !e.file_type().is_ok_and(|t| t.is_symlink()) && e.file_name().to_str().is_some(),
        Err(_) => true,
    }))
}
/// Whether `rel` is a plain path inside the repository that cairn may write and commit: not
/// empty, relative, no `..` or `.`, and not in `.git/` or `.cairn/`. Paths read back from
/// derived state (`.cairn/pending.json`, `.cairn/journal.json`) go through this first: a clone
/// can carry those files (ADR 66), and one naming `../../x` or `/etc/x` must not make cairn
/// write, read or commit outside.
pub fn repo_relative(rel: &str) -> bool {
    use std::path::Component;
    let path = Path::new(rel);
    let mut parts = path.components().peekable();
    if parts.peek().is_none() {
        return false;
    }
    path.components().enumerate().all(|(i, c)| match c {
        Component::Normal(name) => i > 0 || (name != ".git" && name != DERIVED_DIR),
        _ => false,
    })
}

/// Where the link `path` leads when it leads out of the folder `dir` (or nowhere: a dangling
/// link); `None` when `path` is no link or its target is inside `dir`. Commands that read a
/// folder a person names (`adr import DIR`, `library add DIR`) skip such entries: only a file
/// named on the command line itself is read through a link.
pub fn link_out_of(dir: &Path, path: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let target = std::fs::read_link(path).unwrap_or_else(|_| path.to_path_buf());
    match (std::fs::canonicalize(path), std::fs::canonicalize(dir)) {
        (Ok(real), Ok(dir)) if real.starts_with(&dir) => None,
        _ => Some(target),
    }
}

/// Whether `c` must not reach a file name cairn commits: control characters (C0, DEL, C1) and
/// the bidirectional controls that make a name read as something else (ADR 67).
pub fn unsafe_in_name(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `name` with each character [`unsafe_in_name`] replaced by `_` (borrowed when it has none).
pub fn clean_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.chars().any(unsafe_in_name) {
        name.chars()
            .map(|c| if unsafe_in_name(c) { '_' } else { c })
            .collect::<String>()
            .into()
    } else {
        name.into()
    }
}

/// How [`write_atomic`]'s temporary files begin; `cairn doctor` removes the ones a kill left.
pub const TEMP_PREFIX: &str = ".cairn-tmp-";

/// A file's modification time in nanoseconds since the epoch (0 when the file system gives
/// none): what freshness checks and stamps compare.
pub fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Replaces (or creates) `path` with `bytes`, atomically. A new file gets the mode git gives
/// one (0666 less the umask); a replaced file keeps its mode. Refused through a link inside a
/// confined repository.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    refuse_links(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let made_dir = !dir.is_dir();
    let mut tmp = staging(dir)?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(path.display(), &e))?;
    install(tmp, path)?;
    // The folder was made with the staging file: its name is durable once its parent is synced.
    if made_dir && let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// A temporary file in `dir` (made if missing) to be [`install`]ed over a file there, or in
/// another folder of the same file system: named with [`TEMP_PREFIX`], so `cairn doctor`
/// removes it when a kill leaves it.
pub fn staging(dir: &Path) -> Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
    // tempfile's own default is 0600; the kernel takes the umask off the mode asked for here.
    // The owner's process id in the name: a later run tells a dead run's file from a live one
    // ([`sweep_dead_temps`]).
    tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir.display(), &e))
}

/// Removes from `dir` (and its folders, when `deep`; never through a link) the [`staging`]
/// files of processes that are gone: a run killed before its rename left them. A file whose
/// owner still runs is left alone; one with no owner in its name (an older cairn's) only once
/// it is an hour old. Returns how many it removed.
pub fn sweep_dead_temps(dir: &Path, deep: bool) -> Result<usize> {
    let read = match read_dir_real(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir.display(), &e)),
    };
    let mut removed = 0;
    for entry in read.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if deep {
                removed += sweep_dead_temps(&path, true)?;
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let dead = match temp_owner(rest) {
            Some(pid) => pid != std::process::id() && !process_runs(pid),
            None => entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() >= 3600),
        };
        if !dead {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(path.display(), &e)),
        }
    }
    Ok(removed)
}

/// The process id a [`staging`] file's name holds after [`TEMP_PREFIX`] (`PID-RANDOM`).
fn temp_owner(rest: &str) -> Option<u32> {
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether process `pid` runs on this machine (a zombie counts as gone).
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis: Z is a zombie, X dead.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| !rest.starts_with(['Z', 'X'])),
        // No /proc (not Linux): a process cannot be told gone, so it is taken as running.
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// Puts a [`staging`] file in place of `path`, atomically and durably: its data synced, then
/// renamed, then the folder synced (and the folder's parent when the folder is new). A replaced
/// file's mode is kept. Refused through a link inside a confined repository.
pub fn install(tmp: tempfile::NamedTempFile, path: &Path) -> Result<()> {
    refuse_links(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let made_dir = !dir.is_dir();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
    tmp.as_file()
        .sync_data()
        .map_err(|e| Error::io(path.display(), &e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        // Keep the mode a person gave the file (an executable hook stays executable).
        let _ = tmp.as_file().set_permissions(meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| Error::io(path.display(), &e.error))?;
    // The rename is in the directory: durable once the directory is synced.
    sync_dir(dir)?;
    if made_dir && let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// Syncs a directory, so the names made or renamed in it survive a power loss.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir.display(), &e))
}

/// What [`append_line`] did besides appending.
#[derive(Debug, Default)]
pub struct Appended {
    /// Where a torn tail found at the end of the file was saved, if there was one.
    pub recovered: Option<PathBuf>,
}

/// Appends `line` (which must end in `\n` and contain no other newline) to `path`.
///
/// `recovered_dir` is where a torn tail (bytes after the last newline, left by a crash) is
/// saved before it is cut from the file.
pub fn append_line(path: &Path, line: &[u8], recovered_dir: &Path) -> Result<Appended> {
    debug_assert!(line.ends_with(b"\n") && !line[..line.len() - 1].contains(&b'\n'));
    append_lines(path, line, recovered_dir)
}

/// Appends whole lines (`lines` ends in `\n`) with one `write`, like [`append_line`]. Refuses
/// (and writes nothing) when the file holds a bad line.
pub fn append_lines(path: &Path, line: &[u8], recovered_dir: &Path) -> Result<Appended> {
    append_checked(path, line, recovered_dir, true, true)
}

/// Appends whole lines to a file of derived state, without looking for bad lines and without
/// syncing (the file may grow long; it is never committed, and is rebuilt or lost harmlessly).
pub fn append_derived(path: &Path, line: &[u8], recovered_dir: &Path) -> Result<Appended> {
    append_checked(path, line, recovered_dir, false, false)
}

/// Appends the later chunks of one batch whose first chunk went through [`append_lines`]: not
/// looked at again (reading the file for every chunk made a large batch quadratic in its
/// length), but synced like it, since a commit will name them.
pub fn append_more(path: &Path, line: &[u8], recovered_dir: &Path) -> Result<Appended> {
    append_checked(path, line, recovered_dir, false, true)
}

/// Opens `path` for appending (made if missing) and takes its lock, making sure the locked file
/// is still the one the path names (doctor may have replaced it meanwhile).
pub fn open_locked(path: &Path) -> Result<File> {
    use std::os::unix::fs::MetadataExt;
    refuse_links(path)?;
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    for _ in 0..100 {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        let held = file.metadata().map_err(io)?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(file),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(e)),
        }
    }
    Err(io(std::io::Error::other(
        "the file keeps being replaced while waiting for its lock",
    )))
}

fn append_checked(
    path: &Path,
    line: &[u8],
    recovered_dir: &Path,
    check: bool,
    durable: bool,
) -> Result<Appended> {
    debug_assert!(line.ends_with(b"\n"));
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    refuse_links(path)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
    }
    // A new file's name is made durable after its first line (once a day for a day file).
    let made = !path.exists();
    let file = open_locked(path)?;
    let len = file.metadata().map_err(io)?.len();
    let mut appended = Appended::default();
    if check && len > 0 {
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0).map_err(io)?;
        let damage = crate::jsonl::damage(&bytes);
        if let Some((line_no, _, bad)) = damage.bad.first() {
            let more = match damage.bad.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return Err(Error::new(
                crate::error::Kind::BadInput,
                format!(
                    "{}:{line_no}: not a JSON object{more} ({}); nothing was appended to a damaged file",
                    path.display(),
                    preview(bad)
                ),
            )
            .with_fix("run `cairn doctor` to move the line aside to .cairn/recovered/, then run this again"));
        }
    }
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1).map_err(io)?;
        if last[0] != b'\n' {
            appended.recovered = Some(cut_torn_tail(path, &file, len, recovered_dir)?);
        }
    }
    let written = (&file).write(line).map_err(io)?;
    if written != line.len() {
        // A short write on a regular file means the disk is full: take the partial line back.
        let _ = file.set_len(file.metadata().map_err(io)?.len() - written as u64);
        return Err(Error::io(
            path.display(),
            &std::io::Error::other("short write (disk full?)"),
        ));
    }
    // The line is on disk before the lock is released, and so before any commit names it.
    // Derived files (telemetry, recall counts) are rebuilt or lost harmlessly: not synced.
    if durable {
        file.sync_data().map_err(io)?;
        if made && let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        touch_folder(path);
    }
    file.unlock().map_err(io)?;
    Ok(appended)
}

/// Moves the time of the folder `path` is in to now. Appending to a file leaves its folder's
/// time alone, and a read of the index trusts that time for the folders of logs (the index's
/// glance, ADR 62): every durable append moves it. Where the time cannot be set (a folder
/// another user owns), a file made and removed in it moves it just the same.
pub fn touch_folder(path: &Path) {
    let Some(dir) = path.parent() else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let set = File::open(dir).and_then(|d| d.set_modified(std::time::SystemTime::now()));
    if set.is_err() {
        let _ = tempfile::Builder::new()
            .prefix(".cairn-touch")
            .tempfile_in(dir);
    }
}

/// The start of a line, for an error message.
fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        format!("`{short}…`")
    } else {
        format!("`{short}`")
    }
}

/// Saves the bytes after the last newline of `file` to `recovered_dir` and truncates them.
/// The caller holds the file's lock.
pub fn cut_torn_tail(path: &Path, file: &File, len: u64, recovered_dir: &Path) -> Result<PathBuf> {
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    let start = last_line_start(file, len).map_err(io)?;
    let mut tail = vec![0u8; (len - start) as usize];
    file.read_exact_at(&mut tail, start).map_err(io)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let saved = recovered_dir.join(format!("{name}.{start}.torn"));
    write_atomic(&saved, &tail)?;
    file.set_len(start).map_err(io)?;
    Ok(saved)
}

/// The offset just after the last `\n` in the first `len` bytes of `file` (0 if none).
fn last_line_start(file: &File, len: u64) -> std::io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 8192];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Reads a whole file, or `None` when it does not exist. A link inside a confined repository
/// is refused, not followed.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    if let Some(link) = link_on_the_way(path)? {
        return Err(link_error(&link, "reads"));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io(path.display(), &err)),
    }
}

/// Reads the tail of a file from `offset` (used by readers that fold in only what was appended).
pub fn read_from(path: &Path, offset: u64) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    let mut file = File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staging_file_names_its_owner_and_only_a_dead_owners_is_swept() {
        for (rest, want) in [
            ("123-Ab12Cd", Some(123)),
            ("123-", None),
            ("Ab12Cd", None),
            ("12a-Ab12Cd", None),
        ] {
            assert_eq!(temp_owner(rest), want, "{rest}");
        }
        let dir = tempfile::tempdir().unwrap();
        let live = staging(dir.path()).unwrap();
        let name = live
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(&format!("{TEMP_PREFIX}{}-", std::process::id())));
        // A pid above the kernel's limit (2^22) names no running process.
        let dead = dir.path().join(format!("{TEMP_PREFIX}99999999-x"));
        std::fs::write(&dead, b"half").unwrap();
        let fresh_old_style = dir.path().join(format!("{TEMP_PREFIX}Ab12Cd"));
        std::fs::write(&fresh_old_style, b"half").unwrap();
        assert_eq!(sweep_dead_temps(dir.path(), false).unwrap(), 1);
        assert!(live.path().exists() && !dead.exists() && fresh_old_style.exists());
    }

    #[test]
    fn append_cuts_a_torn_tail_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":").unwrap();
        let out = append_line(&path, b"{\"c\":3}\n", &dir.path().join("rec")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"c\":3}\n"
        );
        assert_eq!(std::fs::read(out.recovered.unwrap()).unwrap(), b"{\"b\":");
    }

    #[test]
    fn append_to_clean_file_recovers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        append_line(&path, b"{}\n", dir.path()).unwrap();
        let out = append_line(&path, b"{\"b\":2}\n", dir.path()).unwrap();
        assert!(out.recovered.is_none());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n{\"b\":2}\n");
    }

    #[test]
    fn append_refuses_a_file_with_a_bad_line_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, b"{}\nnot json\n{}\n").unwrap();
        let err = append_line(&path, b"{}\n", dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("log.jsonl:2: not a JSON object"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\nnot json\n{}\n");
        // Derived files are not checked.
        append_derived(&path, b"{}\n", dir.path()).unwrap();
    }

    #[test]
    fn an_appender_that_waited_for_the_lock_writes_to_the_file_that_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, b"{}\nbad\n").unwrap();
        let held = open_locked(&path).unwrap();
        let writer = {
            let path = path.clone();
            let rec = dir.path().join("rec");
            std::thread::spawn(move || append_line(&path, b"{\"new\":1}\n", &rec))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        // What doctor does: a rename over the file while holding the old one's lock.
        write_atomic(&path, b"{}\n").unwrap();
        drop(held);
        writer.join().unwrap().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n{\"new\":1}\n");
    }

    #[test]
    fn write_atomic_keeps_the_mode_of_a_replaced_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hook");
        write_atomic(&path, b"one").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic(&path, b"two").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o751);
    }

    #[test]
    fn only_plain_paths_inside_the_repository_are_repo_relative() {
        for (rel, ok) in [
            ("slog/2026-01-01.jsonl", true),
            ("MEMORY.md", true),
            ("vault/.cairn-x", true),
            ("", false),
            ("../victim/x", false),
            ("slog/../../x", false),
            ("/etc/passwd", false),
            ("./slog/x", false),
            (".git/config", false),
            (".cairn/index/meta.json", false),
        ] {
            assert_eq!(repo_relative(rel), ok, "{rel}");
        }
    }

    #[test]
    fn a_link_out_of_the_folder_is_named_and_one_inside_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("in");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("a.md"), "a").unwrap();
        std::fs::write(dir.path().join("out.md"), "out").unwrap();
        std::os::unix::fs::symlink("a.md", inside.join("same.md")).unwrap();
        std::os::unix::fs::symlink("../out.md", inside.join("out.md")).unwrap();
        std::os::unix::fs::symlink("nowhere.md", inside.join("dangling.md")).unwrap();
        assert_eq!(link_out_of(&inside, &inside.join("a.md")), None);
        assert_eq!(link_out_of(&inside, &inside.join("same.md")), None);
        assert_eq!(
            link_out_of(&inside, &inside.join("out.md")),
            Some(PathBuf::from("../out.md"))
        );
        assert!(link_out_of(&inside, &inside.join("dangling.md")).is_some());
    }

    #[test]
    fn clean_name_replaces_controls_and_bidi() {
        assert_eq!(clean_name("0001-a.md"), "0001-a.md");
        assert_eq!(clean_name("a\x1b[31mb\x07.md"), "a_[31mb_.md");
        assert_eq!(clean_name("x\u{202E}dm.exe"), "x_dm.exe");
        assert_eq!(clean_name("\u{85}z"), "_z");
    }

    #[test]
    fn write_atomic_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.md");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }
}
