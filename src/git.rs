//! Everything cairn asks of git, and the only importer of gix.
//!
//! A command that changes files ends with one [`commit`] of exactly the paths it wrote: their
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

/// Commits the current content of `paths` (relative to `root`, `/`-separated; a missing file is
/// a deletion) on top of HEAD, with `message`. Returns `None` when the tree did not change.
pub fn commit(
    root: &Path,
    paths: &[String],
    message: &str,
    identity: &Identity<'_>,
) -> Result<Option<Committed>> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let prefix = repo_prefix(&work_dir, root)?;

    let head = repo.head_commit().ok();
    let parent = head.as_ref().map(|c| c.id);
    let base_tree = match &head {
        Some(commit) => commit
            .tree_id()
            .map_err(|e| git_err("cannot read HEAD's tree", e))?
            .detach(),
        None => gix::ObjectId::empty_tree(repo.object_hash()),
    };

    let mut editor = repo
        .edit_tree(base_tree)
        .map_err(|e| git_err("cannot edit HEAD's tree", e))?;
    let mut staged: Vec<(String, Option<(gix::ObjectId, EntryKind)>)> = Vec::new();
    for rel in paths {
        let git_path = join_prefix(&prefix, rel);
        let abs = root.join(rel);
        match std::fs::symlink_metadata(&abs) {
            Ok(meta) if meta.is_file() => {
                let bytes = std::fs::read(&abs).map_err(|e| Error::io(abs.display(), &e))?;
                let id = repo
                    .write_blob(&bytes)
                    .map_err(|e| git_err("cannot write a blob", e))?
                    .detach();
                let kind = if is_executable(&meta) {
                    EntryKind::BlobExecutable
                } else {
                    EntryKind::Blob
                };
                editor
                    .upsert(git_path.as_str(), kind, id)
                    .map_err(|e| git_err("cannot edit the tree", e))?;
                staged.push((git_path, Some((id, kind))));
            }
            Ok(_) => {
                return Err(Error::new(
                    Kind::Git,
                    format!("{} is not a regular file", abs.display()),
                ));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                editor
                    .remove(git_path.as_str())
                    .map_err(|e| git_err("cannot edit the tree", e))?;
                staged.push((git_path, None));
            }
            Err(err) => return Err(Error::io(abs.display(), &err)),
        }
    }
    let tree = editor
        .write()
        .map_err(|e| git_err("cannot write the tree", e))?
        .detach();
    if tree == base_tree && parent.is_some() {
        update_index(&repo, &work_dir, &staged)?;
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
    let id = repo
        .commit_as(sig_ref, sig_ref, "HEAD", message, tree, parent)
        .map_err(|e| git_err("cannot commit", e))?
        .detach();
    update_index(&repo, &work_dir, &staged)?;
    Ok(Some(Committed { id: id.to_string() }))
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

/// Points the index entries of `staged` at what was just committed, leaving every other entry
/// (a person's staged work) untouched.
fn update_index(
    repo: &gix::Repository,
    work_dir: &Path,
    staged: &[(String, Option<(gix::ObjectId, EntryKind)>)],
) -> Result<()> {
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
    for (path, entry) in staged {
        let key: &BStr = path.as_bytes().as_bstr();
        match entry {
            Some((id, kind)) => {
                let abs = work_dir.join(path);
                let meta = gix::index::fs::Metadata::from_path_no_follow(&abs)
                    .map_err(|e| Error::io(abs.display(), &e))?;
                let stat = Stat::from_fs(&meta).map_err(|e| git_err("bad file time", e))?;
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
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let folder_path = join_prefix(&repo_prefix(&work_dir, root)?, folder);
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

/// What [`set_hooks_path`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HooksPath {
    /// The value set, relative to the work tree (`hooks`, or `kb/hooks` for a knowledge
    /// repository in a subfolder).
    pub value: String,
    /// The value it replaced, if it was set to something else.
    pub previous: Option<String>,
    /// Whether the config file was written.
    pub changed: bool,
}

/// Sets `core.hooksPath` in the repository's own git config (`.git/config`) to the `hooks`
/// folder of the knowledge repository at `root`. Only that key is touched: every other byte of
/// the file stays as it was. Setting it again changes nothing.
pub fn set_hooks_path(root: &Path) -> Result<HooksPath> {
    let repo = gix::discover(root).map_err(|e| git_err("cannot open the git repository", e))?;
    let work_dir = repo
        .workdir()
        .ok_or_else(|| Error::new(Kind::Git, "the git repository has no work tree"))?
        .to_path_buf();
    let value = join_prefix(&repo_prefix(&work_dir, root)?, "hooks");
    let path = repo.common_dir().join("config");
    let mut config =
        gix::config::File::from_path_no_includes(path.clone(), gix::config::Source::Local)
            .map_err(|e| git_err(&format!("cannot read {}", path.display()), e))?;
    let current = config
        .string_by("core", None, "hooksPath")
        .map(|v| v.to_string());
    if current.as_deref() == Some(value.as_str()) {
        return Ok(HooksPath {
            value,
            previous: None,
            changed: false,
        });
    }
    config
        .set_raw_value_by("core", None, "hooksPath", value.as_str())
        .map_err(|e| git_err("cannot set core.hooksPath", e))?;
    let mut bytes = Vec::new();
    config
        .write_to(&mut bytes)
        .map_err(|e| Error::io(path.display(), &e))?;
    crate::files::write_atomic(&path, &bytes)?;
    Ok(HooksPath {
        value,
        previous: current,
        changed: true,
    })
}
