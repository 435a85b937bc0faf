//! Commits: exactly what a command wrote, on top of HEAD, written durably, with git's index
//! moved at those paths only.

use std::collections::HashSet;
use std::path::Path;

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use super::index_entries::{Staged, update_index};
use super::recovery::{COMMITTING, clear_locks_of_a_killed_commit, remove_if_there};
use super::{blob_at, blob_id_at, git_err, is_executable, join_prefix, open_work_tree};
use crate::error::{Error, Kind, Result};

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
    /// on, streamed to the object store (an import's part of 64 MiB; ADR 130). With
    /// `prepared`, the blob [`prepare_tail`] wrote ahead of the commit, used while HEAD still
    /// holds what it was built on.
    Tail {
        path: String,
        from: u64,
        len: u64,
        prepared: Option<PreparedTail>,
    },
}

/// A [`Change::Tail`]'s blob written before its commit, on any thread ([`prepare_tail`]): an
/// import compresses a full part while it goes on judging the lines of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTail {
    blob: gix::ObjectId,
    matches_file: bool,
    /// HEAD's blob at the path when the blob was written (`None`: HEAD lacked the path).
    base: Option<gix::ObjectId>,
    /// The file's length and time of change then: the index takes the file's stat data only
    /// if neither changed since.
    stamp: (u64, Option<std::time::SystemTime>),
}

/// The length and time of change of the file at `abs`.
fn stamp(abs: &Path) -> Result<(u64, Option<std::time::SystemTime>)> {
    let meta = std::fs::metadata(abs).map_err(|e| Error::io(abs.display(), &e))?;
    Ok((meta.len(), meta.modified().ok()))
}

/// The tree of `head` (`None` in a repository without commits).
fn tree_of<'r>(head: Option<&gix::Commit<'r>>) -> Result<Option<gix::Tree<'r>>> {
    head.map(|c| c.tree().map_err(|e| git_err("cannot read HEAD's tree", e)))
        .transpose()
}

/// Writes, and syncs, the blob a [`Change::Tail`] of `rel` (relative to the knowledge
/// repository `root`) would commit: HEAD's content followed by the `len` bytes of the file from
/// byte `from` on. Opens the repository itself, so it runs on any thread.
pub fn prepare_tail(root: &Path, rel: &str, from: u64, len: u64) -> Result<PreparedTail> {
    let (repo, _, prefix) = open_work_tree(root)?;
    let git_path = join_prefix(&prefix, rel);
    let abs = root.join(rel);
    let head = repo.head_commit().ok();
    let tree = tree_of(head.as_ref())?;
    let base = match &tree {
        Some(tree) => blob_id_at(tree, &git_path)?,
        None => None,
    };
    let content = match base {
        Some(id) => repo
            .find_blob(id)
            .map_err(|e| git_err(&format!("cannot read HEAD's {git_path}"), e))?
            .data
            .clone(),
        None => Vec::new(),
    };
    let before = stamp(&abs)?;
    let (blob, matches_file) = write_blob_tail(&repo, &abs, content, from, len)?;
    sync_loose_objects(&repo, &[blob])?;
    Ok(PreparedTail {
        blob,
        matches_file,
        base,
        stamp: before,
    })
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

/// HEAD as a parent (none in a repository without commits) and the tree to edit from.
pub(super) fn head_base(
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

/// Commits `changes` on top of HEAD, with `message`: each path holds HEAD's content with the
/// command's change ([`Change`]), and its index entry is set to the committed blob. Returns
/// `None` when the tree did not change.
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
    let head_tree = tree_of(head.as_ref())?;

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
        let written = if let Change::Tail {
            from,
            len,
            prepared,
            ..
        } = change
        {
            let head_id = match &head_tree {
                Some(tree) => blob_id_at(tree, &git_path)?,
                None => None,
            };
            match prepared {
                Some(p) if p.base == head_id => {
                    Some((p.blob, p.matches_file && stamp(&abs)? == p.stamp))
                }
                _ => {
                    let base = head_bytes()?.unwrap_or_default();
                    Some(write_blob_tail(&repo, &abs, base, *from, *len)?)
                }
            }
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

/// Git's identity for this repository (author falls back to committer), else the fallback.
pub(super) fn signature_of(repo: &gix::Repository, identity: &Identity<'_>) -> (String, String) {
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
