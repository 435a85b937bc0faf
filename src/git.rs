//! Everything cairn asks of git, and the only importer of gix.
//!
//! A command that changes files ends with one [`commit_changes`] of exactly what it wrote
//! ([`Change`]): for each path, HEAD's content with this command's change (an append, an edit,
//! a file made whole), so a person's uncommitted edit of the same file stays uncommitted. The
//! blobs are written, HEAD's tree is edited at those paths only, and the commit moves the
//! branch. The index (`.git/index`) is then updated at those paths only, with fresh stat data,
//! so that `git status` shows nothing of cairn's while whatever else a person staged or left
//! unstaged stays exactly as it was (ADR 2). Commits run under the repository lock; gix moves
//! the branch only if it still points where it did, so a writer that bypassed the lock makes
//! the commit fail instead of losing one.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;

use crate::error::{Error, Kind, Result};

fn git_err(context: &str, err: impl std::fmt::Display) -> Error {
    Error::new(Kind::Git, format!("{context}: {err}"))
}

/// Whether `dir` is inside a git work tree, and where that work tree's root is.
/// A commit message: a subject, then `Key: value` trailers.
pub fn message(subject: &str, trailers: &[(&str, String)]) -> String {
    let mut m = subject.to_string();
    if !trailers.is_empty() {
        m.push_str("\n\n");
        for (k, v) in trailers {
            m.push_str(&format!("{k}: {v}\n"));
        }
    }
    m
}

pub fn work_tree_of(dir: &Path) -> Option<PathBuf> {
    let repo = gix::discover(dir).ok()?;
    repo.workdir().map(Path::to_path_buf)
}

/// The current branch's short name, if HEAD is on one.
pub fn current_branch(root: &Path) -> Option<String> {
    let repo = gix::discover(root).ok()?;
    let name = repo.head_name().ok()??;
    Some(name.shorten().to_string())
}

/// The paths (relative to the work tree, `/`-separated) changed by the last `commits` commits
/// reachable from HEAD, newest first, each once, at most `max`; empty when there is no
/// history. What a briefing asks about a project it is run in.
pub fn recent_paths(root: &Path, commits: usize, max: usize) -> Result<Vec<String>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut out: Vec<String> = Vec::new();
    for info in walk.take(commits) {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree_id()
            .map_err(|e| git_err("cannot read a commit", e))?
            .detach();
        let parent = info
            .parent_ids()
            .next()
            .and_then(|p| p.object().ok())
            .and_then(|o| o.try_into_commit().ok())
            .and_then(|c| c.tree_id().ok())
            .map(gix::Id::detach);
        let mut changed = Vec::new();
        tree_changes(&repo, parent, Some(tree), "", &mut changed, max)?;
        for path in changed {
            if out.len() >= max {
                return Ok(out);
            }
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// The entries of a tree: name → (is a tree, object id).
fn tree_entries(
    repo: &gix::Repository,
    id: Option<gix::ObjectId>,
) -> Result<BTreeMap<String, (bool, gix::ObjectId)>> {
    let mut out = BTreeMap::new();
    let Some(id) = id else { return Ok(out) };
    let tree = repo
        .find_object(id)
        .map_err(|e| git_err("cannot read a tree", e))?
        .try_into_tree()
        .map_err(|e| git_err("cannot read a tree", e))?;
    let decoded = tree
        .decode()
        .map_err(|e| git_err("cannot read a tree", e))?;
    for e in &decoded.entries {
        out.insert(e.filename.to_string(), (e.mode.is_tree(), e.oid.to_owned()));
    }
    Ok(out)
}

/// The paths that differ between two trees (either may be absent), at most `max`.
fn tree_changes(
    repo: &gix::Repository,
    old: Option<gix::ObjectId>,
    new: Option<gix::ObjectId>,
    prefix: &str,
    out: &mut Vec<String>,
    max: usize,
) -> Result<()> {
    if old == new {
        return Ok(());
    }
    let (a, b) = (tree_entries(repo, old)?, tree_entries(repo, new)?);
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        if out.len() >= max {
            break;
        }
        let (before, after) = (a.get(name), b.get(name));
        if before.map(|e| e.1) == after.map(|e| e.1) {
            continue;
        }
        let path = format!("{prefix}{name}");
        let tree_of = |e: Option<&(bool, gix::ObjectId)>| e.filter(|e| e.0).map(|e| e.1);
        if tree_of(before).is_some() || tree_of(after).is_some() {
            tree_changes(
                repo,
                tree_of(before),
                tree_of(after),
                &format!("{path}/"),
                out,
                max,
            )?;
        }
        if before.is_some_and(|e| !e.0) || after.is_some_and(|e| !e.0) {
            out.push(path);
        }
    }
    Ok(())
}

/// Makes a new git repository at `dir` (its first branch is `main`).
pub fn init(dir: &Path) -> Result<()> {
    gix::init(dir).map_err(|e| {
        git_err(
            &format!("cannot make a git repository in {}", dir.display()),
            e,
        )
    })?;
    Ok(())
}

/// Who commits: git's configured identity, else the fallback from cairn.toml.
pub struct Identity<'a> {
    pub fallback_name: &'a str,
    pub fallback_email: &'a str,
}

/// A commit cairn made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Committed {
    pub id: String,
}

/// What one command did to one path, and so what its commit holds there.
///
/// A commit holds only what the command wrote: HEAD's content with this command's change,
/// never a person's uncommitted edit of the same file or an earlier `--no-commit` write. The
/// working tree keeps both; `git status` goes on showing the rest as modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file the command made or rewrote whole: its content now (a missing file is a
    /// deletion).
    File(String),
    /// Whole lines the command appended: HEAD's content (its whole lines) followed by them.
    Appended { path: String, bytes: Vec<u8> },
    /// The content the command's edit gives applied to HEAD's content (see [`head_content`]).
    Content { path: String, bytes: Vec<u8> },
    /// Whole lines the command appended, read back from the file rather than held: HEAD's
    /// content (its whole lines) followed by the `len` bytes the file holds from byte `from`
    /// on, streamed to the object store (an import's part of 64 MiB; ADR 130).
    Tail { path: String, from: u64, len: u64 },
}

impl Change {
    /// The path, relative to the knowledge repository, `/`-separated.
    pub fn path(&self) -> &str {
        match self {
            Change::File(path) => path,
            Change::Appended { path, .. }
            | Change::Content { path, .. }
            | Change::Tail { path, .. } => path,
        }
    }

    /// Lines appended, each without its newline.
    pub fn appended_lines(path: &str, lines: &[String]) -> Change {
        let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for l in lines {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        Change::Appended {
            path: path.to_string(),
            bytes,
        }
    }
}

/// Files at least this big are written to the object store as they are read (a loose object
/// is compressed and hashed on its way to a temporary file), not read whole first.
const STREAMED_BLOB_BYTES: u64 = 16 * 1024 * 1024;

/// [`STREAMED_BLOB_BYTES`], or for tests only the number in `CAIRN_STREAMED_BLOB_BYTES` (so a
/// test of the streamed write needs no big file).
fn streamed_blob_bytes() -> u64 {
    std::env::var("CAIRN_STREAMED_BLOB_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(STREAMED_BLOB_BYTES)
}

/// Writes the file at `abs` as a blob, streamed.
fn write_blob_streamed(repo: &gix::Repository, abs: &Path) -> Result<gix::ObjectId> {
    use gix::objs::Write as _;
    let mut file = std::fs::File::open(abs).map_err(|e| Error::io(abs.display(), &e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io(abs.display(), &e))?
        .len();
    let mut input = std::io::BufReader::with_capacity(256 * 1024, &mut file);
    repo.objects
        .write_stream(gix::objs::Kind::Blob, size, &mut input)
        .map_err(|e| git_err("cannot write a blob", e))
}

/// Writes HEAD's content `base` (its whole lines) followed by the `len` bytes of the file at
/// `abs` from byte `from` on as a blob, streamed; and whether the file holds exactly that blob
/// (no one else's bytes before `from`), so its index entry may take the file's stat data.
fn write_blob_tail(
    repo: &gix::Repository,
    abs: &Path,
    mut base: Vec<u8>,
    from: u64,
    len: u64,
) -> Result<(gix::ObjectId, bool)> {
    use gix::objs::Write as _;
    use std::io::{Read as _, Seek as _};
    // A torn tail in HEAD is cut in the working tree before an append: here too.
    let whole = base.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    base.truncate(whole);
    let io = |e: std::io::Error| Error::io(abs.display(), &e);
    let mut file = std::fs::File::open(abs).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size < from.saturating_add(len) {
        return Err(Error::new(
            Kind::Git,
            format!(
                "{}: {size} bytes, fewer than the {} the command appended; nothing was committed",
                abs.display(),
                from.saturating_add(len)
            ),
        ));
    }
    // The file holds exactly the blob when what precedes the appended bytes is HEAD's content.
    let mut matches_file = size == from + len && from == base.len() as u64;
    if matches_file {
        let mut buf = vec![0u8; 256 * 1024];
        let mut at = 0usize;
        while at < base.len() {
            let n = (base.len() - at).min(buf.len());
            file.read_exact(&mut buf[..n]).map_err(io)?;
            if buf[..n] != base[at..at + n] {
                matches_file = false;
                break;
            }
            at += n;
        }
    }
    file.seek(std::io::SeekFrom::Start(from)).map_err(io)?;
    let tail = std::io::BufReader::with_capacity(256 * 1024, file.take(len));
    let mut input = std::io::Cursor::new(base.as_slice()).chain(tail);
    let id = repo
        .objects
        .write_stream(gix::objs::Kind::Blob, base.len() as u64 + len, &mut input)
        .map_err(|e| git_err("cannot write a blob", e))?;
    Ok((id, matches_file))
}

/// The content HEAD holds at `rel` (relative to the knowledge repository `root`), or `None`
/// when HEAD lacks it (or there is no commit yet).
pub fn head_content(root: &Path, rel: &str) -> Result<Option<Vec<u8>>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let git_path = join_prefix(&prefix, rel);
    let Ok(head) = repo.head_commit() else {
        return Ok(None);
    };
    let tree = head
        .tree()
        .map_err(|e| git_err("cannot read HEAD's tree", e))?;
    blob_at(&repo, &tree, &git_path)
}

fn blob_at(
    repo: &gix::Repository,
    tree: &gix::Tree<'_>,
    git_path: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(entry) = tree
        .lookup_entry_by_path(git_path)
        .map_err(|e| git_err("cannot read HEAD's tree", e))?
    else {
        return Ok(None);
    };
    if !entry.mode().is_blob() {
        return Ok(None);
    }
    let blob = repo
        .find_blob(entry.object_id())
        .map_err(|e| git_err(&format!("cannot read HEAD's {git_path}"), e))?;
    Ok(Some(blob.data.clone()))
}

/// Commits the current content of `paths` (relative to `root`, `/`-separated; a missing file is
/// a deletion) on top of HEAD, with `message`. Returns `None` when the tree did not change.
pub fn commit(
    root: &Path,
    paths: &[String],
    message: &str,
    identity: &Identity<'_>,
) -> Result<Option<Committed>> {
    let changes: Vec<Change> = paths.iter().cloned().map(Change::File).collect();
    commit_changes(root, &changes, message, identity)
}

/// Commits `changes` on top of HEAD, with `message`: each path holds HEAD's content with the
/// command's change ([`Change`]), and its index entry is set to the committed blob. Returns
/// `None` when the tree did not change.
/// The repository holding `root`, its work tree, and `root`'s prefix inside it.
fn open_work_tree(root: &Path) -> Result<(gix::Repository, PathBuf, String)> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let prefix = repo_prefix(&work_dir, root)?;
    Ok((repo, work_dir, prefix))
}

/// HEAD as a parent (none in a repository without commits) and the tree to edit from.
fn head_base(
    repo: &gix::Repository,
    head: Option<&gix::Commit<'_>>,
) -> Result<(Option<gix::ObjectId>, gix::ObjectId)> {
    let parent = head.map(|c| c.id);
    let base_tree = match head {
        Some(commit) => commit
            .tree_id()
            .map_err(|e| git_err("cannot read HEAD's tree", e))?
            .detach(),
        None => gix::ObjectId::empty_tree(repo.object_hash()),
    };
    Ok((parent, base_tree))
}

pub fn commit_changes(
    root: &Path,
    changes: &[Change],
    message: &str,
    identity: &Identity<'_>,
) -> Result<Option<Committed>> {
    let (repo, work_dir, prefix) = open_work_tree(root)?;
    clear_locks_of_a_killed_commit(&repo)?;
    let head = repo.head_commit().ok();
    let (parent, base_tree) = head_base(&repo, head.as_ref())?;
    let head_tree = match &head {
        Some(commit) => Some(
            commit
                .tree()
                .map_err(|e| git_err("cannot read HEAD's tree", e))?,
        ),
        None => None,
    };

    let mut editor = repo
        .edit_tree(base_tree)
        .map_err(|e| git_err("cannot edit HEAD's tree", e))?;
    let mut staged: Vec<Staged> = Vec::new();
    for change in changes {
        let rel = change.path();
        // A path read back from derived state a clone may carry (`.cairn/pending.json`) must
        // not make a commit take in a file from outside the repository (ADR 66).
        if !crate::files::repo_relative(rel) {
            return Err(Error::new(
                crate::error::Kind::BadInput,
                format!("{rel}: not a path inside the repository; nothing was committed"),
            )
            .with_fix("remove .cairn/pending.json and .cairn/journal.json (derived state), then run the command again"));
        }
        let git_path = join_prefix(&prefix, rel);
        let abs = root.join(rel);
        let meta = match std::fs::symlink_metadata(&abs) {
            Ok(meta) if meta.is_file() => Some(meta),
            Ok(_) => {
                return Err(Error::new(
                    Kind::Git,
                    format!("{} is not a regular file", abs.display()),
                ));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(Error::io(abs.display(), &err)),
        };
        let head_bytes = || match &head_tree {
            Some(tree) => blob_at(&repo, tree, &git_path),
            None => Ok(None),
        };
        let streamed = matches!(change, Change::File(_))
            && meta
                .as_ref()
                .is_some_and(|m| m.len() >= streamed_blob_bytes());
        // The blob written, and whether the file holds exactly it.
        let written = if let Change::Tail { from, len, .. } = change {
            let base = head_bytes()?.unwrap_or_default();
            Some(write_blob_tail(&repo, &abs, base, *from, *len)?)
        } else if streamed {
            // A big file (a long session's cards) goes to the object store as it is read,
            // never held whole.
            Some((write_blob_streamed(&repo, &abs)?, true))
        } else {
            let bytes = match change {
                Change::File(_) => match &meta {
                    Some(_) => Some(std::fs::read(&abs).map_err(|e| Error::io(abs.display(), &e))?),
                    None => None,
                },
                Change::Appended { bytes, .. } => {
                    let mut base = head_bytes()?.unwrap_or_default();
                    // A torn tail in HEAD is cut in the working tree before an append: here too.
                    let whole = base.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                    base.truncate(whole);
                    base.extend_from_slice(bytes);
                    Some(base)
                }
                Change::Content { bytes, .. } => Some(bytes.clone()),
                Change::Tail { .. } => unreachable!("a tail is written streamed above"),
            };
            match bytes {
                None => None,
                Some(bytes) => {
                    let id = repo
                        .write_blob(&bytes)
                        .map_err(|e| git_err("cannot write a blob", e))?
                        .detach();
                    // The index may take the file's stat data only when the file holds exactly
                    // the committed blob; otherwise git must look at the content and see it
                    // modified.
                    let matches_file = match change {
                        Change::File(_) => true,
                        _ => meta.is_some() && std::fs::read(&abs).is_ok_and(|now| now == bytes),
                    };
                    Some((id, matches_file))
                }
            }
        };
        let Some((id, matches_file)) = written else {
            editor
                .remove(git_path.as_str())
                .map_err(|e| git_err("cannot edit the tree", e))?;
            staged.push(Staged {
                path: git_path,
                blob: None,
                matches_file: false,
            });
            continue;
        };
        let kind = if meta.as_ref().is_some_and(is_executable) {
            EntryKind::BlobExecutable
        } else {
            EntryKind::Blob
        };
        editor
            .upsert(git_path.as_str(), kind, id)
            .map_err(|e| git_err("cannot edit the tree", e))?;
        staged.push(Staged {
            path: git_path,
            blob: Some((id, kind)),
            matches_file,
        });
    }
    let tree = editor
        .write()
        .map_err(|e| git_err("cannot write the tree", e))?
        .detach();
    // The marker names the paths whose index entries this commit updates: a kill after the
    // branch moved and before the index was written left them stale (git status showed the
    // commit's change undone; found by the crash harness in sync's renumbering).
    let marker = repo.git_dir().join(COMMITTING);
    let paths: Vec<&str> = staged.iter().map(|s| s.path.as_str()).collect();
    crate::repo::refuse_git_link(&marker)?;
    std::fs::write(&marker, paths.join("\n")).map_err(|e| Error::io(marker.display(), &e))?;
    if tree == base_tree && parent.is_some() {
        update_index(&repo, &work_dir, &staged)?;
        remove_if_there(&marker)?;
        return Ok(None);
    }

    let (name, email) = signature_of(&repo, identity);
    let signature = gix::actor::Signature {
        name: name.into(),
        email: email.into(),
        time: gix::date::Time::now_local_or_utc(),
    };
    let mut time_buf = gix::date::parse::TimeBuf::default();
    let sig_ref = signature.to_ref(&mut time_buf);
    let id = commit_durably(&repo, sig_ref, message, tree, parent, &staged)?;
    crate::failpoint::failpoint("commit-before-index");
    update_index(&repo, &work_dir, &staged)?;
    remove_if_there(&marker)?;
    Ok(Some(Committed { id: id.to_string() }))
}

/// Finishes what a cairn commit killed midway left (its lock files, the index entries of the
/// paths it committed), when its marker says one was; else nothing. Commits do this first
/// themselves; a command that moves HEAD with the git command line (`cairn sync`) or repairs
/// (`cairn doctor`) calls it under the repository lock, or git's index stays behind HEAD
/// (found by the crash harness: a sync killed right after its renumbering commit, rerun, left
/// `git status` showing the renumbering undone).
/// Returns whether one was left; with `finish` false it only tells.
pub fn killed_commit(root: &Path, finish: bool) -> Result<bool> {
    let (repo, _, _) = open_work_tree(root)?;
    if !repo.git_dir().join(COMMITTING).exists() {
        return Ok(false);
    }
    if finish {
        clear_locks_of_a_killed_commit(&repo)?;
    }
    Ok(true)
}

/// A file in the git directory that says a cairn process is between taking git's lock files
/// (HEAD's, its branch's, the index's, packed-refs') and releasing them. A process killed there leaves the
/// lock files behind, and git and gix refuse every later commit until someone deletes them.
const COMMITTING: &str = "cairn-committing";

/// Removes the lock files a killed cairn commit left (found by the crash harness: a SIGKILL
/// during the ref update left `HEAD.lock` and `refs/heads/main.lock`, and every later command
/// failed with "Could not prepare reference edit"). Only when the marker says a cairn commit
/// was cut short (the caller holds the repository lock, so that process is gone), and only the
/// lock files made within seconds of the marker: a lock a git command holds now is younger.
fn clear_locks_of_a_killed_commit(repo: &gix::Repository) -> Result<()> {
    let git_dir = repo.git_dir();
    let marker = git_dir.join(COMMITTING);
    let Some(since) = std::fs::metadata(&marker).and_then(|m| m.modified()).ok() else {
        return Ok(());
    };
    let paths = std::fs::read_to_string(&marker).unwrap_or_default();
    let mut locks = vec![
        git_dir.join("HEAD.lock"),
        git_dir.join("index.lock"),
        git_dir.join("packed-refs.lock"),
    ];
    if let Ok(Some(name)) = repo.head_name() {
        let rel = name.as_bstr().to_str_lossy().into_owned();
        locks.push(git_dir.join(format!("{rel}.lock")));
    }
    let window = std::time::Duration::from_secs(10);
    for lock in locks {
        let Some(made) = std::fs::metadata(&lock).and_then(|m| m.modified()).ok() else {
            continue;
        };
        let near = match made.duration_since(since) {
            Ok(after) => after <= window,
            Err(before) => before.duration() <= std::time::Duration::from_secs(1),
        };
        if near {
            remove_if_there(&lock)?;
        }
    }
    refresh_index_from_head(repo, paths.lines().filter(|p| !p.is_empty()))?;
    remove_if_there(&marker)
}

/// Sets the index entries of `paths` to HEAD's blobs (removed where HEAD has none), with stat
/// data only where the working file holds exactly that blob.
fn refresh_index_from_head<'a>(
    repo: &gix::Repository,
    paths: impl Iterator<Item = &'a str>,
) -> Result<()> {
    let Some(work_dir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(());
    };
    let Ok(head) = repo.head_commit() else {
        return Ok(());
    };
    let tree = head
        .tree()
        .map_err(|e| git_err("cannot read HEAD's tree", e))?;
    let mut staged = Vec::new();
    for path in paths {
        let entry = tree
            .lookup_entry_by_path(path)
            .map_err(|e| git_err("cannot read HEAD's tree", e))?;
        let blob = entry.map(|e| {
            let kind = if e.mode().is_executable() {
                EntryKind::BlobExecutable
            } else {
                EntryKind::Blob
            };
            (e.object_id(), kind)
        });
        let matches_file = match &blob {
            Some((id, _)) => {
                let committed = repo
                    .find_object(*id)
                    .map_err(|e| git_err("cannot read a blob", e))?;
                std::fs::read(work_dir.join(path)).is_ok_and(|now| now == committed.data)
            }
            None => false,
        };
        staged.push(Staged {
            path: path.to_string(),
            blob,
            matches_file,
        });
    }
    if staged.is_empty() {
        return Ok(());
    }
    update_index(repo, &work_dir, &staged)
}

fn remove_if_there(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path.display(), &e)),
    }
}

/// Writes the commit and moves HEAD's branch to it, in the order that survives a power loss
/// (gix syncs nothing itself): the new objects (blobs, the trees on the changed paths, the
/// commit) and their folders are synced before the branch moves, and the branch's file and
/// folder after, so the branch never names an object the disk lost. The branch moves only if
/// it still points at `parent`, as `commit_as` does.
fn commit_durably(
    repo: &gix::Repository,
    sig: gix::actor::SignatureRef<'_>,
    message: &str,
    tree: gix::ObjectId,
    parent: Option<gix::ObjectId>,
    staged: &[Staged],
) -> Result<gix::ObjectId> {
    use gix::refs::transaction::{PreviousValue, RefEdit};
    let commit = gix::objs::Commit {
        message: message.into(),
        tree,
        author: sig.into(),
        committer: sig.into(),
        encoding: None,
        parents: parent.into_iter().collect(),
        extra_headers: Default::default(),
    };
    let id = repo
        .write_object(&commit)
        .map_err(|e| git_err("cannot write the commit", e))?
        .detach();
    let mut objects = vec![id, tree];
    objects.extend(staged.iter().filter_map(|s| s.blob.map(|(b, _)| b)));
    objects.extend(trees_on_paths(repo, tree, staged));
    sync_loose_objects(repo, &objects)?;
    let expected = match parent {
        Some(p) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(p)),
        None => PreviousValue::MustNotExist,
    };
    let log =
        gix::reference::log::message("commit", message.as_bytes().as_bstr(), commit.parents.len());
    let edits = repo
        .edit_references_as(
            Some(
                RefEdit::update(
                    "HEAD".try_into().expect("HEAD is a ref name"),
                    id,
                    expected,
                    log,
                )
                .with_deref(true),
            ),
            Some(sig),
        )
        .map_err(|e| git_err("cannot commit", e))?;
    // The branch's loose ref file and its folder (HEAD itself only names the branch).
    let git_dir = repo.git_dir();
    for edit in &edits {
        let path = git_dir.join(edit.name.as_bstr().to_str_lossy().as_ref());
        if let Ok(file) = std::fs::File::open(&path) {
            file.sync_all().map_err(|e| Error::io(path.display(), &e))?;
            if let Some(dir) = path.parent() {
                crate::files::sync_dir(dir)?;
            }
        }
    }
    Ok(id)
}

/// The trees a tree edit wrote besides the root: those on the way to each changed path.
fn trees_on_paths(
    repo: &gix::Repository,
    root: gix::ObjectId,
    staged: &[Staged],
) -> Vec<gix::ObjectId> {
    let Ok(tree) = repo.find_tree(root) else {
        return Vec::new();
    };
    let mut out = HashSet::new();
    for s in staged {
        let mut dir = String::new();
        let parts: Vec<&str> = s.path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !dir.is_empty() {
                dir.push('/');
            }
            dir.push_str(part);
            if let Ok(Some(entry)) = tree.lookup_entry_by_path(dir.as_str()) {
                out.insert(entry.object_id());
            }
        }
    }
    out.into_iter().collect()
}

/// Syncs the loose files of `ids` (those that are loose; packed ones were synced by whoever
/// wrote the pack) and the folders that hold them.
fn sync_loose_objects(repo: &gix::Repository, ids: &[gix::ObjectId]) -> Result<()> {
    let objects = repo.objects.store_ref().path().to_path_buf();
    let mut dirs = std::collections::BTreeSet::new();
    for id in ids {
        let hex = id.to_hex().to_string();
        let dir = objects.join(&hex[..2]);
        let path = dir.join(&hex[2..]);
        if let Ok(file) = std::fs::File::open(&path) {
            file.sync_all().map_err(|e| Error::io(path.display(), &e))?;
            dirs.insert(dir);
        }
    }
    for dir in &dirs {
        crate::files::sync_dir(dir)?;
    }
    // A fan-out folder made now is an entry of the objects folder.
    if !dirs.is_empty() {
        crate::files::sync_dir(&objects)?;
    }
    Ok(())
}

/// One path's new index entry: its committed blob (none: deleted), and whether the working
/// file holds exactly that blob.
struct Staged {
    path: String,
    blob: Option<(gix::ObjectId, EntryKind)>,
    matches_file: bool,
}

/// Git's identity for this repository (author falls back to committer), else the fallback.
fn signature_of(repo: &gix::Repository, identity: &Identity<'_>) -> (String, String) {
    let configured = repo
        .author()
        .or_else(|| repo.committer())
        .and_then(|sig| sig.ok())
        .map(|sig| (sig.name.to_string(), sig.email.to_string()));
    match configured {
        Some((name, email)) if !name.is_empty() && !email.is_empty() => (name, email),
        _ => (
            identity.fallback_name.to_string(),
            identity.fallback_email.to_string(),
        ),
    }
}

/// The name and email cairn commits as in the repository holding `root` (git's identity,
/// else the fallback), for commits made by the git command line (`cairn sync`'s merges).
pub fn identity_of(root: &Path, identity: &Identity<'_>) -> Result<(String, String)> {
    let (repo, _, _) = open_work_tree(root)?;
    Ok(signature_of(&repo, identity))
}

/// The content of `rel` (relative to the knowledge repository `root`) in commit `rev` (a full
/// hex id), or `None` when that commit lacks it.
pub fn content_at(root: &Path, rev: &str, rel: &str) -> Result<Option<Vec<u8>>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let tree = tree_of(&repo, rev)?;
    blob_at(&repo, &tree, &join_prefix(&prefix, rel))
}

/// The names of the files directly in `folder` (relative to the knowledge repository `root`)
/// in commit `rev` (a full hex id); empty when the folder is missing there.
pub fn names_at(root: &Path, rev: &str, folder: &str) -> Result<Vec<String>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let tree = tree_of(&repo, rev)?;
    let Some(entry) = tree
        .lookup_entry_by_path(join_prefix(&prefix, folder))
        .map_err(|e| git_err("cannot read a tree", e))?
    else {
        return Ok(Vec::new());
    };
    let Ok(sub) = entry
        .object()
        .map_err(|e| git_err("cannot read a tree", e))?
        .try_into_tree()
    else {
        return Ok(Vec::new());
    };
    let decoded = sub.decode().map_err(|e| git_err("cannot read a tree", e))?;
    Ok(decoded
        .entries
        .iter()
        .filter(|e| e.mode.is_blob())
        .map(|e| e.filename.to_string())
        .collect())
}

fn tree_of<'r>(repo: &'r gix::Repository, rev: &str) -> Result<gix::Tree<'r>> {
    let id = gix::ObjectId::from_hex(rev.as_bytes())
        .map_err(|e| git_err(&format!("bad commit id {rev}"), e))?;
    repo.find_commit(id)
        .map_err(|e| git_err(&format!("cannot read commit {rev}"), e))?
        .tree()
        .map_err(|e| git_err(&format!("cannot read the tree of {rev}"), e))
}

/// Points the index entries of `staged` at what was just committed, leaving every other entry
/// (a person's staged work) untouched.
fn update_index(repo: &gix::Repository, work_dir: &Path, staged: &[Staged]) -> Result<()> {
    use gix::index::entry::{Flags, Mode, Stage, Stat};
    let mut index = match repo.open_index() {
        Ok(index) => index,
        Err(_) if !repo.index_path().exists() => gix::index::File::from_state(
            gix::index::State::new(repo.object_hash()),
            repo.index_path(),
        ),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let mut pushed = false;
    let mut removed: HashSet<&str> = HashSet::new();
    for Staged {
        path,
        blob,
        matches_file,
    } in staged
    {
        let key: &BStr = path.as_bytes().as_bstr();
        match blob {
            Some((id, kind)) => {
                let stat = if *matches_file {
                    let abs = work_dir.join(path);
                    let meta = gix::index::fs::Metadata::from_path_no_follow(&abs)
                        .map_err(|e| Error::io(abs.display(), &e))?;
                    Stat::from_fs(&meta).map_err(|e| git_err("bad file time", e))?
                } else {
                    // No stat data: git compares the content, and shows the person's edit.
                    Stat::default()
                };
                let mode = if *kind == EntryKind::BlobExecutable {
                    Mode::FILE_EXECUTABLE
                } else {
                    Mode::FILE
                };
                if let Some(existing) = index.entry_mut_by_path_and_stage(key, Stage::Unconflicted)
                {
                    existing.id = *id;
                    existing.stat = stat;
                    existing.mode = mode;
                } else {
                    index.dangerously_push_entry(stat, *id, Flags::empty(), mode, key);
                    pushed = true;
                }
            }
            None => {
                removed.insert(path.as_str());
            }
        }
    }
    if !removed.is_empty() {
        index.remove_entries(|_, path, _| removed.contains(path.to_str_lossy().as_ref()));
    }
    if pushed {
        index.sort_entries();
    }
    // The cached tree extension no longer matches the entries we changed.
    index.remove_tree();
    index
        .write(gix::index::write::Options::default())
        .map_err(|e| git_err("cannot write the git index", e))?;
    // The index is written by rename like a ref: synced after, so a power loss cannot leave
    // git an empty index (ext4 already orders a rename over an old file after its data).
    let path = repo.index_path();
    if let Ok(file) = std::fs::File::open(&path) {
        file.sync_all().map_err(|e| Error::io(path.display(), &e))?;
    }
    Ok(())
}

/// The knowledge repository's path inside the git work tree, `/`-separated ("" at the root).
fn repo_prefix(work_dir: &Path, root: &Path) -> Result<String> {
    let work_dir = work_dir
        .canonicalize()
        .map_err(|e| Error::io(work_dir.display(), &e))?;
    let root = root
        .canonicalize()
        .map_err(|e| Error::io(root.display(), &e))?;
    let rel = root.strip_prefix(&work_dir).map_err(|_| {
        Error::new(
            Kind::Git,
            format!("{} is outside its git work tree", root.display()),
        )
    })?;
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

fn join_prefix(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() {
        rel.to_string()
    } else {
        format!("{prefix}/{rel}")
    }
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// What history says about one folder: every file name it ever held, with the commit that
/// first (oldest) held it.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct FolderHistory {
    /// The commit the scan started from (HEAD then), if any.
    pub head: Option<String>,
    /// File name → the oldest commit seen holding it.
    pub names: BTreeMap<String, FirstSeen>,
}

/// The oldest commit known to hold a file name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstSeen {
    pub commit: String,
    /// Its commit time, in seconds since the epoch.
    pub time: i64,
}

/// Scans history from HEAD for the file names ever held by `folder` (relative to the knowledge
/// repository `root`). With `known`, the scan stops at commits `known.head` already covered and
/// merges into it, so a repeated scan costs only the commits made since.
pub fn folder_history(
    root: &Path,
    folder: &str,
    known: Option<FolderHistory>,
) -> Result<FolderHistory> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let folder_path = join_prefix(&prefix, folder);
    let Ok(head) = repo.head_id() else {
        return Ok(FolderHistory::default());
    };
    let head = head.detach();
    let mut out = known.unwrap_or_default();
    let hidden: Vec<gix::ObjectId> = out
        .head
        .as_deref()
        .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
        .filter(|id| repo.find_object(*id).is_ok())
        .into_iter()
        .collect();
    if hidden.is_empty() {
        out.names.clear();
    }
    if hidden.first() == Some(&head) {
        return Ok(out);
    }
    let walk = repo
        .rev_walk([head])
        .with_hidden(hidden)
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut seen_trees = HashSet::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree()
            .map_err(|e| git_err("cannot read a tree", e))?;
        let Some(entry) = tree
            .lookup_entry_by_path(&folder_path)
            .map_err(|e| git_err("cannot read a tree", e))?
        else {
            continue;
        };
        if !seen_trees.insert(entry.object_id()) {
            continue;
        }
        let sub = entry
            .object()
            .map_err(|e| git_err("cannot read a tree", e))?;
        let Ok(sub) = sub.try_into_tree() else {
            continue;
        };
        let decoded = sub.decode().map_err(|e| git_err("cannot read a tree", e))?;
        let seen = FirstSeen {
            commit: info.id.to_string(),
            time: commit.time().map(|t| t.seconds).unwrap_or(0),
        };
        for e in &decoded.entries {
            let name = e.filename.to_string();
            let older = out
                .names
                .get(&name)
                .is_none_or(|known| seen.time <= known.time);
            if older {
                out.names.insert(name, seen.clone());
            }
        }
    }
    out.head = Some(head.to_string());
    Ok(out)
}

/// A commit that changed one path.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathCommit {
    /// The short commit id.
    pub commit: String,
    /// Its commit time, RFC 3339 UTC.
    pub time: String,
    pub subject: String,
}

/// A commit as a listing shows it: its short id, its time and its subject (the message's
/// first line).
fn summary(
    commit: &gix::Commit<'_>,
    id: gix::ObjectId,
) -> Result<(String, Option<chrono::DateTime<chrono::Utc>>, String)> {
    let seconds = commit.time().map(|t| t.seconds).unwrap_or(0);
    let message = commit
        .message_raw()
        .map_err(|e| git_err("cannot read a commit", e))?;
    let subject = message
        .lines()
        .next()
        .map(|l| l.to_str_lossy().into_owned())
        .unwrap_or_default();
    let id = id.to_string();
    Ok((
        id[..id.len().min(8)].to_string(),
        chrono::DateTime::from_timestamp(seconds, 0),
        subject,
    ))
}

/// The commits reachable from HEAD whose blob at `rel` (relative to the knowledge repository
/// `root`) differs from their first parent's and, with `needle`, holds it: newest first. What
/// `cairn why` says a note or a library document came in with.
pub fn path_commits(root: &Path, rel: &str, needle: Option<&[u8]>) -> Result<Vec<PathCommit>> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let path = join_prefix(&prefix, rel);
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let blob_at = |commit: &gix::Commit<'_>| -> Result<Option<gix::ObjectId>> {
        let tree = commit
            .tree()
            .map_err(|e| git_err("cannot read a tree", e))?;
        Ok(tree
            .lookup_entry_by_path(&path)
            .map_err(|e| git_err("cannot read a tree", e))?
            .map(|e| e.object_id()))
    };
    let walk = repo
        .rev_walk([head.detach()])
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut out = Vec::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let Some(blob) = blob_at(&commit)? else {
            continue;
        };
        let before = match commit.parent_ids().next() {
            Some(p) => blob_at(
                &repo
                    .find_commit(p)
                    .map_err(|e| git_err("cannot read a commit", e))?,
            )?,
            None => None,
        };
        if before == Some(blob) {
            continue;
        }
        if let Some(n) = needle {
            let data = repo
                .find_blob(blob)
                .map_err(|e| git_err("cannot read a blob", e))?;
            if !holds_any(&data.data, &[n.to_vec()]) {
                continue;
            }
        }
        let (commit_id, at, subject) = summary(&commit, info.id)?;
        out.push(PathCommit {
            commit: commit_id,
            time: at.map(crate::time::format).unwrap_or_default(),
            subject,
        });
    }
    Ok(out)
}

/// A file as it is staged in the index, with the content git would commit.
#[derive(Debug, Clone)]
pub struct StagedBlob {
    /// The path in the git work tree, `/`-separated, as git shows it.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Every staged file whose content differs from HEAD's (all of them before the first commit),
/// with its staged content: what the next commit would add. Deletions and submodules have no
/// content and are left out.
pub fn staged_blobs(root: &Path) -> Result<Vec<StagedBlob>> {
    use gix::index::entry::{Mode, Stage};
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let index = match repo.open_index() {
        Ok(index) => index,
        Err(_) if !repo.index_path().exists() => return Ok(Vec::new()),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let head_tree = repo
        .head_commit()
        .ok()
        .map(|c| c.tree_id().map(|id| id.detach()));
    let committed: std::collections::HashMap<gix::bstr::BString, gix::ObjectId> = match head_tree {
        Some(tree) => {
            let tree = tree.map_err(|e| git_err("cannot read HEAD's tree", e))?;
            let head = repo
                .index_from_tree(&tree)
                .map_err(|e| git_err("cannot read HEAD's tree", e))?;
            head.entries()
                .iter()
                .map(|e| (e.path(&head).to_owned(), e.id))
                .collect()
        }
        None => Default::default(),
    };
    let mut out = Vec::new();
    for entry in index.entries() {
        if entry.stage() != Stage::Unconflicted || entry.mode == Mode::COMMIT {
            continue;
        }
        let path = entry.path(&index);
        if committed.get(path) == Some(&entry.id) {
            continue;
        }
        let blob = repo
            .find_blob(entry.id)
            .map_err(|e| git_err(&format!("cannot read the staged {path}"), e))?;
        out.push(StagedBlob {
            path: path.to_string(),
            bytes: blob.data.clone(),
        });
    }
    Ok(out)
}

/// One file of the knowledge repository as the git index stages it or as HEAD holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Relative to the knowledge repository's root, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The knowledge repository's files that [`staged_files`] was asked for, on both sides of the
/// next commit.
#[derive(Debug, Clone, Default)]
pub struct StagedFiles {
    /// The knowledge repository's path in the git work tree with a trailing `/` (empty at the
    /// root): `prefix + path` is the path git shows.
    pub prefix: String,
    /// As staged: what the next commit would hold.
    pub staged: Vec<Version>,
    /// As HEAD holds them (nothing before the first commit).
    pub head: Vec<Version>,
}

/// The staged and HEAD content of the knowledge repository's files that `select` picks;
/// `select(path, changed)` gets the path relative to `root` and whether the index differs from
/// HEAD there (added, edited or deleted). Conflicted entries and submodules are left out.
pub fn staged_files(root: &Path, select: impl Fn(&str, bool) -> bool) -> Result<StagedFiles> {
    use gix::index::entry::{Mode, Stage};
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let prefix = match repo_prefix(&work_dir, root)? {
        p if p.is_empty() => p,
        p => format!("{p}/"),
    };
    let ids = |index: &gix::index::State| -> std::collections::BTreeMap<String, gix::ObjectId> {
        index
            .entries()
            .iter()
            .filter(|e| e.stage() == Stage::Unconflicted && e.mode != Mode::COMMIT)
            .filter_map(|e| {
                let path = e.path(index).to_string();
                let rel = path.strip_prefix(&prefix)?.to_string();
                Some((rel, e.id))
            })
            .collect()
    };
    let staged_ids = match repo.open_index() {
        Ok(index) => ids(&index),
        Err(_) if !repo.index_path().exists() => Default::default(),
        Err(e) => return Err(git_err("cannot read the git index", e)),
    };
    let head_ids = match repo.head_commit().ok().map(|c| c.tree_id()) {
        Some(tree) => {
            let tree = tree.map_err(|e| git_err("cannot read HEAD's tree", e))?;
            let head = repo
                .index_from_tree(&tree)
                .map_err(|e| git_err("cannot read HEAD's tree", e))?;
            ids(&head)
        }
        None => Default::default(),
    };
    let read = |path: &str, id: &gix::ObjectId| -> Result<Version> {
        let blob = repo
            .find_blob(*id)
            .map_err(|e| git_err(&format!("cannot read {prefix}{path}"), e))?;
        Ok(Version {
            path: path.to_string(),
            bytes: blob.data.clone(),
        })
    };
    let mut out = StagedFiles {
        prefix: prefix.clone(),
        ..Default::default()
    };
    let paths: std::collections::BTreeSet<&String> =
        staged_ids.keys().chain(head_ids.keys()).collect();
    for path in paths {
        let (staged, head) = (staged_ids.get(path), head_ids.get(path));
        if !select(path, staged != head) {
            continue;
        }
        if let Some(id) = staged {
            out.staged.push(read(path, id)?);
        }
        if let Some(id) = head {
            out.head.push(read(path, id)?);
        }
    }
    Ok(out)
}

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
    work_dir: PathBuf,
    common_dir: PathBuf,
    hooks_dir: PathBuf,
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
    path: PathBuf,
    file: gix::config::File,
    state: HooksState,
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

/// The ref namespace of pending proposals (`refs/cairn/proposals/<id>`).
pub const PROPOSAL_REFS: &str = "refs/cairn/proposals/";

/// Makes (or moves) `refs/cairn/proposals/<id>` to a commit whose parent is HEAD and whose
/// only change is `rel` (MEMORY.md) holding `bytes`, so any git tool shows what the proposal
/// would change. HEAD, the branch, the index and the working tree are not touched. Returns the
/// commit id.
pub fn set_proposal_ref(
    root: &Path,
    id: &str,
    rel: &str,
    bytes: &[u8],
    message: &str,
    identity: &Identity<'_>,
) -> Result<String> {
    let batch = [(id.to_string(), bytes.to_vec(), message.to_string())];
    let mut ids = proposal_commits(root, rel, &batch, identity)?;
    Ok(ids.pop().unwrap_or_default())
}

/// [`set_proposal_ref`] for many proposals, `(id, bytes of rel, message)` each, with the
/// repository opened once; returns how many refs were set.
pub fn set_proposal_refs(
    root: &Path,
    rel: &str,
    batch: &[(String, Vec<u8>, String)],
    identity: &Identity<'_>,
) -> Result<usize> {
    Ok(proposal_commits(root, rel, batch, identity)?.len())
}

fn proposal_commits(
    root: &Path,
    rel: &str,
    batch: &[(String, Vec<u8>, String)],
    identity: &Identity<'_>,
) -> Result<Vec<String>> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let (repo, _, prefix) = open_work_tree(root)?;
    let head = repo.head_commit().ok();
    let (parent, base_tree) = head_base(&repo, head.as_ref())?;
    let (name, email) = signature_of(&repo, identity);
    let signature = gix::actor::Signature {
        name: name.into(),
        email: email.into(),
        time: gix::date::Time::now_local_or_utc(),
    };
    let mut time_buf = gix::date::parse::TimeBuf::default();
    let sig_ref = signature.to_ref(&mut time_buf);
    let path = join_prefix(&prefix, rel);
    // Each proposal is a blob, a tree and a commit: written to memory first, then stored as
    // one pack, and the refs written into packed-refs in one transaction. Hundreds of loose
    // objects and ref files took 2.5 s of file creation at 931 proposals; this is two files.
    let mut memory = repo.clone().with_object_memory();
    // HEAD's tree is read once per proposal: cached, not opened from disk each time.
    memory.object_cache_size_if_unset(4 << 20);
    let mut commits = Vec::with_capacity(batch.len());
    for (id, bytes, message) in batch {
        let mut editor = memory
            .edit_tree(base_tree)
            .map_err(|e| git_err("cannot edit HEAD's tree", e))?;
        let blob = memory
            .write_blob(bytes)
            .map_err(|e| git_err("cannot write a blob", e))?
            .detach();
        editor
            .upsert(path.as_str(), EntryKind::Blob, blob)
            .map_err(|e| git_err("cannot edit the tree", e))?;
        let tree = editor
            .write()
            .map_err(|e| git_err("cannot write the tree", e))?
            .detach();
        let commit = gix::objs::Commit {
            tree,
            parents: parent.into_iter().collect(),
            author: sig_ref.into(),
            committer: sig_ref.into(),
            encoding: None,
            message: message.as_str().into(),
            extra_headers: Vec::new(),
        };
        let commit_id = memory
            .write_object(&commit)
            .map_err(|e| git_err("cannot write the proposal's commit", e))?
            .detach();
        commits.push((id, commit_id));
    }
    let objects = memory.objects.take_object_memory().unwrap_or_default();
    let keep = write_pack(&repo, &objects)?;
    let set: Vec<(&str, gix::ObjectId)> = commits.iter().map(|(id, c)| (id.as_str(), *c)).collect();
    edit_proposal_refs(&repo, &set, &[])?;
    // The refs hold the pack's objects now: git may collect it like any other.
    if let Some(keep) = keep {
        let _ = std::fs::remove_file(keep);
    }
    Ok(commits.iter().map(|(_, c)| c.to_string()).collect())
}

/// Sets (`set`: id and commit) and deletes (`delete`: ids) proposal refs by rewriting
/// `packed-refs` once, under its lock, in git's format (sorted, the other refs and their
/// peeled lines kept), and removing loose ref files (and reflogs) of those names, which would
/// shadow the packed ones. gix-ref's transaction takes a lock file per ref even when it writes
/// packed refs: at 931 proposals that was 1.2 s of file creation; this is one file.
fn edit_proposal_refs(
    repo: &gix::Repository,
    set: &[(&str, gix::ObjectId)],
    delete: &[&str],
) -> Result<()> {
    if set.is_empty() && delete.is_empty() {
        return Ok(());
    }
    // A kill while `packed-refs.lock` is held left it, and every later decision failed with
    // "Could not lock packed refs" (found by the crash harness in review --approve).
    clear_locks_of_a_killed_commit(repo)?;
    let marker = repo.git_dir().join(COMMITTING);
    crate::repo::refuse_git_link(&marker)?;
    std::fs::write(&marker, b"").map_err(|e| Error::io(marker.display(), &e))?;
    edit_packed_proposal_refs(repo, set, delete)?;
    remove_if_there(&marker)
}

fn edit_packed_proposal_refs(
    repo: &gix::Repository,
    set: &[(&str, gix::ObjectId)],
    delete: &[&str],
) -> Result<()> {
    use std::io::Write as _;
    let path = repo.refs.packed_refs_path();
    let lock = gix::lock::File::acquire_to_update_resource(
        &path,
        gix::lock::acquire::Fail::AfterDurationWithBackoff(std::time::Duration::from_secs(5)),
        None,
        0,
    )
    .map_err(|e| git_err("cannot lock packed-refs", e))?;
    let mut header = b"# pack-refs with: peeled fully-peeled sorted \n".to_vec();
    // Name → (target, peeled target), in git's byte order.
    type Packed = BTreeMap<Vec<u8>, (Vec<u8>, Option<Vec<u8>>)>;
    let mut refs = Packed::new();
    if let Some(buffer) = repo
        .refs
        .open_packed_buffer()
        .map_err(|e| git_err("cannot read packed-refs", e))?
    {
        let text: &[u8] = buffer.as_ref();
        if text.starts_with(b"#") {
            let end = text
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |i| i + 1);
            header = text[..end].to_vec();
        }
        for r in buffer
            .iter()
            .map_err(|e| git_err("cannot read packed-refs", e))?
        {
            let r = r.map_err(|e| git_err("cannot read packed-refs", e))?;
            refs.insert(
                r.name.as_bstr().to_vec(),
                (r.target.to_vec(), r.object.map(|o| o.to_vec())),
            );
        }
    }
    let name = |id: &str| format!("{PROPOSAL_REFS}{id}").into_bytes();
    for id in delete {
        refs.remove(&name(id));
    }
    for (id, commit) in set {
        refs.insert(name(id), (commit.to_string().into_bytes(), None));
    }
    let mut out = header;
    for (name, (target, peeled)) in &refs {
        out.extend_from_slice(target);
        out.push(b' ');
        out.extend_from_slice(name);
        out.push(b'\n');
        if let Some(peeled) = peeled {
            out.push(b'^');
            out.extend_from_slice(peeled);
            out.push(b'\n');
        }
    }
    let mut lock = lock;
    lock.with_mut(|f| f.write_all(&out))
        .map_err(|e| Error::io(path.display(), &e))?;
    lock.commit()
        .map_err(|e| git_err("cannot write packed-refs", e.error))?;
    // Loose files of these names (older cairn wrote them) would shadow the packed refs.
    let common = repo.common_dir();
    for dir in [
        common.join(PROPOSAL_REFS),
        common.join("logs").join(PROPOSAL_REFS),
    ] {
        if !dir.is_dir() {
            continue;
        }
        for id in set.iter().map(|(id, _)| *id).chain(delete.iter().copied()) {
            match std::fs::remove_file(dir.join(id)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(dir.join(id).display(), &e)),
            }
        }
    }
    Ok(())
}

/// Stores `objects` in the repository as one pack and its index; returns the pack's `.keep`
/// file, which protects it from `git gc` until refs point into it.
fn write_pack(
    repo: &gix::Repository,
    objects: &gix::odb::memory::Storage,
) -> Result<Option<PathBuf>> {
    use gix_pack::data::output;
    if objects.is_empty() {
        return Ok(None);
    }
    let hash = repo.object_hash();
    let mut entries = Vec::with_capacity(objects.len());
    for (id, (kind, data)) in objects.iter() {
        let count = output::Count::from_data(*id, None);
        let entry = output::Entry::from_data(
            &count,
            &gix::objs::Data::new(data, *kind, hash),
            gix::zlib::Compression::BEST_SPEED,
        )
        .map_err(|e| git_err("cannot pack an object", e))?;
        entries.push(entry);
    }
    let count = u32::try_from(entries.len()).map_err(|e| git_err("too many objects", e))?;
    let mut bytes = Vec::new();
    for written in output::bytes::FromEntriesIter::new(
        std::iter::once(Ok(entries)),
        &mut bytes,
        count,
        gix_pack::data::Version::V2,
        hash,
    ) {
        written.map_err(|e| git_err("cannot write the pack", e))?;
    }
    let dir = repo.objects.store_ref().path().join("pack");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    let outcome = gix_pack::Bundle::write_to_directory(
        &mut bytes.as_slice(),
        Some(&dir),
        &mut gix::progress::Discard,
        &std::sync::atomic::AtomicBool::new(false),
        None::<gix::objs::find::Never>,
        hash,
        gix_pack::bundle::write::Options {
            thread_limit: Some(1),
            ..Default::default()
        },
    )
    .map_err(|e| git_err("cannot write the pack", e))?;
    Ok(outcome.keep_path)
}

/// Deletes `refs/cairn/proposals/<id>` for each of `ids` in one rewrite of packed-refs (and
/// their loose files, if any); ids without a ref are skipped.
pub fn delete_proposal_refs(root: &Path, ids: &[&str]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let existing: HashSet<String> = proposal_ref_names(&repo)?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let delete: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| existing.contains(*id))
        .collect();
    edit_proposal_refs(&repo, &[], &delete)
}

/// The ids that have a ref under `refs/cairn/proposals/`.
pub fn proposal_refs(root: &Path) -> Result<Vec<String>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let mut out: Vec<String> = proposal_ref_names(&repo)?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    out.sort();
    Ok(out)
}

/// Every ref under `refs/cairn/proposals/`, with the proposal id it names.
fn proposal_ref_names(repo: &gix::Repository) -> Result<Vec<(gix::refs::FullName, String)>> {
    let platform = repo
        .references()
        .map_err(|e| git_err("cannot list references", e))?;
    let refs = platform
        .prefixed(PROPOSAL_REFS)
        .map_err(|e| git_err("cannot list references", e))?;
    let mut out = Vec::new();
    for r in refs {
        let r = r.map_err(|e| git_err("cannot read a reference", e))?;
        let name = r.name().as_bstr().to_str_lossy().into_owned();
        if let Some(id) = name.strip_prefix(PROPOSAL_REFS) {
            out.push((r.name().to_owned(), id.to_string()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .expect("run git");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_proposal_ref_is_head_plus_memory_and_leaves_head_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        init(root).unwrap();
        let who = Identity {
            fallback_name: "t",
            fallback_email: "t@localhost",
        };
        std::fs::write(root.join("MEMORY.md"), "# Memory\n").unwrap();
        std::fs::write(root.join("other.md"), "x\n").unwrap();
        let head = commit(
            root,
            &["MEMORY.md".into(), "other.md".into()],
            "first",
            &who,
        )
        .unwrap()
        .unwrap()
        .id;
        let id =
            set_proposal_ref(root, "pr-1", "MEMORY.md", b"# Memory\n- new\n", "add", &who).unwrap();
        assert_eq!(git(root, &["rev-parse", "HEAD"]).trim(), head);
        assert_eq!(git(root, &["rev-parse", &format!("{id}^")]).trim(), head);
        assert_eq!(
            git(root, &["show", "refs/cairn/proposals/pr-1:MEMORY.md"]),
            "# Memory\n- new\n"
        );
        let changed = git(
            root,
            &["diff", "--name-only", &head, "refs/cairn/proposals/pr-1"],
        );
        assert_eq!(changed, "MEMORY.md\n");
        assert_eq!(
            std::fs::read_to_string(root.join("MEMORY.md")).unwrap(),
            "# Memory\n"
        );
        assert_eq!(proposal_refs(root).unwrap(), vec!["pr-1".to_string()]);
        delete_proposal_refs(root, &["pr-1"]).unwrap();
        delete_proposal_refs(root, &["pr-1"]).unwrap();
        assert!(proposal_refs(root).unwrap().is_empty());
    }

    #[test]
    fn many_proposal_refs_go_in_one_call_and_missing_ones_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        init(root).unwrap();
        let who = Identity {
            fallback_name: "t",
            fallback_email: "t@localhost",
        };
        std::fs::write(root.join("MEMORY.md"), "# Memory\n").unwrap();
        commit(root, &["MEMORY.md".into()], "first", &who).unwrap();
        for id in ["pr-1", "pr-2", "pr-3"] {
            set_proposal_ref(root, id, "MEMORY.md", b"# Memory\n- x\n", "add", &who).unwrap();
        }
        delete_proposal_refs(root, &["pr-1", "pr-3", "pr-9"]).unwrap();
        assert_eq!(proposal_refs(root).unwrap(), vec!["pr-2".to_string()]);
        delete_proposal_refs(root, &[]).unwrap();
    }

    #[test]
    fn packed_proposal_refs_keep_the_other_refs_and_replace_loose_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        init(root).unwrap();
        let who = Identity {
            fallback_name: "t",
            fallback_email: "t@localhost",
        };
        std::fs::write(root.join("MEMORY.md"), "# Memory\n").unwrap();
        commit(root, &["MEMORY.md".into()], "first", &who).unwrap();
        // An annotated tag, packed with its peeled line; a loose proposal ref of an older cairn.
        git(
            root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@l",
                "tag",
                "-a",
                "v1",
                "-m",
                "v1",
            ],
        );
        git(root, &["pack-refs", "--all"]);
        git(root, &["update-ref", "refs/cairn/proposals/pr-old", "HEAD"]);
        let before = git(root, &["show-ref", "-d", "v1"]);
        assert!(before.contains("^{}"), "{before}");
        set_proposal_refs(
            root,
            "MEMORY.md",
            &[
                ("pr-a".into(), b"# Memory\n- a\n".to_vec(), "add a".into()),
                ("pr-old".into(), b"# Memory\n- b\n".to_vec(), "add b".into()),
            ],
            &who,
        )
        .unwrap();
        assert!(!root.join(".git/refs/cairn/proposals/pr-old").exists());
        assert_eq!(git(root, &["show-ref", "-d", "v1"]), before);
        assert_eq!(
            git(root, &["show", "refs/cairn/proposals/pr-old:MEMORY.md"]),
            "# Memory\n- b\n"
        );
        let status = std::process::Command::new("git")
            .current_dir(root)
            .args(["fsck", "--strict"])
            .status()
            .unwrap();
        assert!(status.success());
        delete_proposal_refs(root, &["pr-a", "pr-old"]).unwrap();
        assert!(proposal_refs(root).unwrap().is_empty());
        assert_eq!(git(root, &["show-ref", "-d", "v1"]), before);
        assert_eq!(
            git(root, &["for-each-ref", "--format=%(refname)"])
                .lines()
                .count(),
            2
        );
    }
}

/// The refs that history scans and rewrites start from: every ref but the backups a rewrite
/// left (`refs/cairn/backup/`), which exist to keep the old history. Symbolic refs (HEAD) are
/// followed through the refs they name.
const BACKUP_REFS: &str = "refs/cairn/backup/";

/// A commit of history that still holds one of the texts searched for.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Holding {
    /// The short commit id.
    pub commit: String,
    /// Its commit day, `YYYY-MM-DD` (UTC).
    pub date: String,
    pub subject: String,
    /// The paths (in the git work tree) whose blob the commit added or changed holding a text.
    pub paths: Vec<String>,
    /// Whether the commit message holds a text.
    pub message: bool,
}

/// Every direct ref (name, the object it points to), backups left out.
fn rewrite_roots(repo: &gix::Repository) -> Result<Vec<(gix::refs::FullName, gix::ObjectId)>> {
    let platform = repo
        .references()
        .map_err(|e| git_err("cannot list references", e))?;
    let mut out = Vec::new();
    for r in platform
        .all()
        .map_err(|e| git_err("cannot list references", e))?
    {
        let r = r.map_err(|e| git_err("cannot read a reference", e))?;
        let name = r.name().as_bstr().to_str_lossy().into_owned();
        if name.starts_with(BACKUP_REFS) {
            continue;
        }
        if let Some(id) = r.try_id() {
            out.push((r.name().to_owned(), id.detach()));
        }
    }
    Ok(out)
}

/// The commit an object is or points to (through annotated tags), if any.
fn peel_commit(repo: &gix::Repository, mut id: gix::ObjectId) -> Option<gix::ObjectId> {
    for _ in 0..16 {
        let object = repo.find_object(id).ok()?;
        match object.kind {
            gix::object::Kind::Commit => return Some(id),
            gix::object::Kind::Tag => id = object.into_tag().target_id().ok()?.detach(),
            _ => return None,
        }
    }
    None
}

/// An owned tree's entries.
fn owned_entries(repo: &gix::Repository, id: gix::ObjectId) -> Result<Vec<gix::objs::tree::Entry>> {
    let tree = repo
        .find_tree(id)
        .map_err(|e| git_err("cannot read a tree", e))?;
    let decoded = tree
        .decode()
        .map_err(|e| git_err("cannot read a tree", e))?;
    Ok(decoded.entries.iter().map(|e| (*e).into()).collect())
}

/// The blobs `new` holds that `old` does not hold at the same path, with their paths.
fn changed_blobs(
    repo: &gix::Repository,
    new: gix::ObjectId,
    old: Option<gix::ObjectId>,
    prefix: &str,
    out: &mut Vec<(String, gix::ObjectId)>,
) -> Result<()> {
    if Some(new) == old {
        return Ok(());
    }
    let old_entries = match old {
        Some(o) => owned_entries(repo, o)?,
        None => Vec::new(),
    };
    for e in owned_entries(repo, new)? {
        let before = old_entries.iter().find(|o| o.filename == e.filename);
        if before.is_some_and(|b| b.oid == e.oid) {
            continue;
        }
        let path = if prefix.is_empty() {
            e.filename.to_string()
        } else {
            format!("{prefix}/{}", e.filename)
        };
        if e.mode.is_tree() {
            let old_sub = before.filter(|b| b.mode.is_tree()).map(|b| b.oid);
            changed_blobs(repo, e.oid, old_sub, &path, out)?;
        } else if e.mode.is_blob() || e.mode.is_link() {
            out.push((path, e.oid));
        }
    }
    Ok(())
}

fn holds_any(data: &[u8], needles: &[Vec<u8>]) -> bool {
    needles
        .iter()
        .any(|n| !n.is_empty() && data.as_bstr().find(n.as_slice()).is_some())
}

/// The commits reachable from any ref (backups left out) that hold one of `needles` (exact
/// bytes): in a blob they added or changed against their first parent, or in their message.
/// Newest first.
pub fn commits_holding(root: &Path, needles: &[Vec<u8>]) -> Result<Vec<Holding>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let tips: Vec<gix::ObjectId> = rewrite_roots(&repo)?
        .into_iter()
        .filter_map(|(_, id)| peel_commit(&repo, id))
        .collect();
    if tips.is_empty() || needles.iter().all(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let walk = repo
        .rev_walk(tips)
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut checked: std::collections::HashMap<gix::ObjectId, bool> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let tree = commit
            .tree_id()
            .map_err(|e| git_err("cannot read a tree", e))?
            .detach();
        let parent_tree = match commit.parent_ids().next() {
            Some(p) => Some(
                repo.find_commit(p)
                    .map_err(|e| git_err("cannot read a commit", e))?
                    .tree_id()
                    .map_err(|e| git_err("cannot read a tree", e))?
                    .detach(),
            ),
            None => None,
        };
        let mut blobs = Vec::new();
        changed_blobs(&repo, tree, parent_tree, "", &mut blobs)?;
        let mut paths = Vec::new();
        for (path, oid) in blobs {
            let holds = match checked.get(&oid) {
                Some(&h) => h,
                None => {
                    let blob = repo
                        .find_blob(oid)
                        .map_err(|e| git_err("cannot read a blob", e))?;
                    let h = holds_any(&blob.data, needles);
                    checked.insert(oid, h);
                    h
                }
            };
            if holds {
                paths.push(path);
            }
        }
        let message_bytes = commit
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_vec();
        let message = holds_any(&message_bytes, needles);
        if paths.is_empty() && !message {
            continue;
        }
        let (commit_id, at, subject) = summary(&commit, info.id)?;
        out.push(Holding {
            commit: commit_id,
            date: at
                .map(|t| t.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            subject,
            paths,
            message,
        });
    }
    Ok(out)
}

/// What a history rewrite did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Rewritten {
    /// Commits written anew (their content, message or parents changed).
    pub commits: usize,
    /// Refs moved: (name, old target, new target).
    pub refs: Vec<(String, String, String)>,
    /// The backup refs written, one per ref moved, holding its old target.
    pub backups: Vec<String>,
    /// The checked-out branch moved to a commit whose tree differs from the one checked out.
    pub head_tree_changed: bool,
}

/// Bytes with every `from` replaced by its `to`, in order; `None` when nothing was replaced.
fn replaced(data: &[u8], replacements: &[(Vec<u8>, Vec<u8>)]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for (from, to) in replacements {
        if from.is_empty() {
            continue;
        }
        let current = out.as_deref().unwrap_or(data);
        if current.as_bstr().find(from.as_slice()).is_some() {
            out = Some(current.replace(from.as_slice(), to.as_slice()));
        }
    }
    out
}

struct Rewriter<'r> {
    repo: &'r gix::Repository,
    replacements: &'r [(Vec<u8>, Vec<u8>)],
    blobs: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    trees: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    commits: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    written: usize,
}

impl Rewriter<'_> {
    fn blob(&mut self, id: gix::ObjectId) -> Result<gix::ObjectId> {
        if let Some(&done) = self.blobs.get(&id) {
            return Ok(done);
        }
        let blob = self
            .repo
            .find_blob(id)
            .map_err(|e| git_err("cannot read a blob", e))?;
        let new = match replaced(&blob.data, self.replacements) {
            Some(bytes) => self
                .repo
                .write_blob(&bytes)
                .map_err(|e| git_err("cannot write a blob", e))?
                .detach(),
            None => id,
        };
        self.blobs.insert(id, new);
        Ok(new)
    }

    fn tree(&mut self, id: gix::ObjectId) -> Result<gix::ObjectId> {
        if let Some(&done) = self.trees.get(&id) {
            return Ok(done);
        }
        let mut entries = owned_entries(self.repo, id)?;
        let mut changed = false;
        for e in &mut entries {
            let new = if e.mode.is_tree() {
                self.tree(e.oid)?
            } else if e.mode.is_blob() || e.mode.is_link() {
                self.blob(e.oid)?
            } else {
                e.oid
            };
            if new != e.oid {
                e.oid = new;
                changed = true;
            }
        }
        let new = if changed {
            self.repo
                .write_object(gix::objs::Tree { entries })
                .map_err(|e| git_err("cannot write a tree", e))?
                .detach()
        } else {
            id
        };
        self.trees.insert(id, new);
        Ok(new)
    }

    /// Rewrites `tip` and every commit it reaches, parents before children (no recursion:
    /// a long history must not overflow the stack).
    fn commit(&mut self, tip: gix::ObjectId) -> Result<gix::ObjectId> {
        let mut stack = vec![(tip, false)];
        while let Some((id, parents_done)) = stack.pop() {
            if self.commits.contains_key(&id) {
                continue;
            }
            let commit = self
                .repo
                .find_commit(id)
                .map_err(|e| git_err("cannot read a commit", e))?;
            let decoded = commit
                .decode()
                .map_err(|e| git_err("cannot read a commit", e))?;
            let mut owned: gix::objs::Commit = decoded
                .to_owned()
                .map_err(|e| git_err("cannot read a commit", e))?;
            if !parents_done {
                stack.push((id, true));
                for p in &owned.parents {
                    if !self.commits.contains_key(p) {
                        stack.push((*p, false));
                    }
                }
                continue;
            }
            let old_tree = owned.tree;
            owned.tree = self.tree(old_tree)?;
            let mut changed = owned.tree != old_tree;
            for p in owned.parents.iter_mut() {
                let new = self.commits.get(p).copied().unwrap_or(*p);
                if new != *p {
                    *p = new;
                    changed = true;
                }
            }
            if let Some(message) = replaced(&owned.message, self.replacements) {
                owned.message = message.into();
                changed = true;
            }
            let new = if changed {
                // A signature no longer matches what it signed.
                owned
                    .extra_headers
                    .retain(|(k, _)| k != "gpgsig" && k != "gpgsig-sha256");
                self.written += 1;
                self.repo
                    .write_object(&owned)
                    .map_err(|e| git_err("cannot write a commit", e))?
                    .detach()
            } else {
                id
            };
            self.commits.insert(id, new);
        }
        Ok(self.commits.get(&tip).copied().unwrap_or(tip))
    }

    /// A ref's target rewritten: a commit, or an annotated tag (a new tag object).
    fn target(&mut self, id: gix::ObjectId) -> Result<gix::ObjectId> {
        let object = self
            .repo
            .find_object(id)
            .map_err(|e| git_err("cannot read an object", e))?;
        match object.kind {
            gix::object::Kind::Commit => self.commit(id),
            gix::object::Kind::Tag => {
                let tag = object.into_tag();
                let decoded = tag.decode().map_err(|e| git_err("cannot read a tag", e))?;
                let mut owned: gix::objs::Tag = decoded
                    .into_owned()
                    .map_err(|e| git_err("cannot read a tag", e))?;
                let new_target = self.target(owned.target)?;
                let message = replaced(&owned.message, self.replacements);
                if new_target == owned.target && message.is_none() {
                    return Ok(id);
                }
                owned.target = new_target;
                if let Some(m) = message {
                    owned.message = m.into();
                }
                owned.signature = None;
                Ok(self
                    .repo
                    .write_object(&owned)
                    .map_err(|e| git_err("cannot write a tag", e))?
                    .detach())
            }
            _ => Ok(id),
        }
    }
}

/// Rewrites every commit reachable from any ref (backups left out) with `replacements` made in
/// every blob and commit message, then, for each ref whose target changed, writes
/// `<backup>/<ref name without refs/>` at its old target and moves it (only if it still
/// points where it did). The working tree and `.git/index` are not touched.
pub fn rewrite_history(
    root: &Path,
    replacements: &[(Vec<u8>, Vec<u8>)],
    backup: &str,
    identity: &Identity<'_>,
) -> Result<Rewritten> {
    use gix::refs::transaction::PreviousValue;
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let roots = rewrite_roots(&repo)?;
    let head_tree = repo
        .head_commit()
        .ok()
        .and_then(|c| c.tree_id().ok().map(|t| t.detach()));
    let mut rw = Rewriter {
        repo: &repo,
        replacements,
        blobs: Default::default(),
        trees: Default::default(),
        commits: Default::default(),
        written: 0,
    };
    let mut moves = Vec::new();
    for (name, old) in &roots {
        let new = rw.target(*old)?;
        if new != *old {
            moves.push((name.clone(), *old, new));
        }
    }
    let mut out = Rewritten {
        commits: rw.written,
        ..Rewritten::default()
    };
    use gix::refs::transaction::RefEdit;
    let mut edits = Vec::new();
    for (name, old, new) in &moves {
        let full = name.as_bstr().to_str_lossy().into_owned();
        let short = full.strip_prefix("refs/").unwrap_or(&full);
        let backup_name = format!("{backup}/{short}");
        let backup_ref: gix::refs::FullName = backup_name
            .as_str()
            .try_into()
            .map_err(|e| git_err(&format!("cannot name the backup ref {backup_name}"), e))?;
        edits.push(RefEdit::update(
            backup_ref,
            *old,
            PreviousValue::MustNotExist,
            "cairn forget: backup before a history rewrite",
        ));
        edits.push(RefEdit::update(
            name.clone(),
            *new,
            PreviousValue::MustExistAndMatch(gix::refs::Target::Object(*old)),
            "cairn forget: history rewritten",
        ));
        out.backups.push(backup_name);
        out.refs.push((full, old.to_string(), new.to_string()));
    }
    // Backups and moves in one transaction: either every ref moved with its backup, or none.
    let (name, email) = signature_of(&repo, identity);
    let signature = gix::actor::Signature {
        name: name.into(),
        email: email.into(),
        time: gix::date::Time::now_local_or_utc(),
    };
    let mut time_buf = gix::date::parse::TimeBuf::default();
    if !edits.is_empty() {
        repo.edit_references_as(edits, Some(signature.to_ref(&mut time_buf)))
            .map_err(|e| git_err("cannot move the rewritten refs", e))?;
    }
    let new_head_tree = repo
        .head_commit()
        .ok()
        .and_then(|c| c.tree_id().ok().map(|t| t.detach()));
    out.head_tree_changed = head_tree != new_head_tree;
    Ok(out)
}

/// A commit of HEAD's history that `git revert` made of a commit carrying `Cairn-Proposal`
/// trailers (a review or triage decision): what `cairn doctor` checks against the proposals
/// files, whose union merge can keep a reverted decision's line (ADR 106).
#[derive(Debug, Clone, PartialEq)]
pub struct RevertedDecision {
    /// The short id of the reverting commit.
    pub commit: String,
    /// The short id of the decision's commit it reverts.
    pub reverted: String,
    /// Its full id.
    pub reverted_id: String,
    /// The full id of its first parent, when it has one.
    pub parent_id: Option<String>,
    /// The proposals the reverted commit's `Cairn-Proposal` trailers name.
    pub proposals: Vec<String>,
}

/// Every commit reachable from HEAD whose message says `This reverts commit <id>.` (git
/// revert's own words) of a commit with `Cairn-Proposal` trailers, newest first.
pub fn reverted_decisions(root: &Path) -> Result<Vec<RevertedDecision>> {
    let (repo, _, _) = open_work_tree(root)?;
    let Ok(head) = repo.head_id() else {
        return Ok(Vec::new());
    };
    let walk = repo
        .rev_walk([head.detach()])
        .all()
        .map_err(|e| git_err("cannot walk history", e))?;
    let mut out = Vec::new();
    for info in walk {
        let info = info.map_err(|e| git_err("cannot walk history", e))?;
        let commit = info
            .object()
            .map_err(|e| git_err("cannot read a commit", e))?;
        let message = commit
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_str_lossy()
            .into_owned();
        let Some(id) = reverts(&message) else {
            continue;
        };
        let Ok(oid) = gix::ObjectId::from_hex(id.as_bytes()) else {
            continue;
        };
        let Ok(reverted) = repo.find_commit(oid) else {
            continue;
        };
        let reverted_message = reverted
            .message_raw()
            .map_err(|e| git_err("cannot read a commit", e))?
            .to_str_lossy()
            .into_owned();
        let proposals = proposal_trailers(&reverted_message);
        if proposals.is_empty() {
            continue;
        }
        let short = |id: String| id[..id.len().min(8)].to_string();
        out.push(RevertedDecision {
            commit: short(info.id.to_string()),
            reverted: short(id.to_string()),
            reverted_id: id.to_string(),
            parent_id: reverted.parent_ids().next().map(|p| p.to_string()),
            proposals,
        });
    }
    Ok(out)
}

/// The full id in `This reverts commit <id>.`, git revert's message.
fn reverts(message: &str) -> Option<&str> {
    let rest = message.split("This reverts commit ").nth(1)?;
    let id = rest.split(['.', ',', ' ', '\n']).next()?;
    (id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// The values of a message's `Cairn-Proposal:` trailers.
fn proposal_trailers(message: &str) -> Vec<String> {
    message
        .lines()
        .filter_map(|l| l.strip_prefix("Cairn-Proposal:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}
