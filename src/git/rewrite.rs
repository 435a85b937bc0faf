//! Rewriting history: every commit holding a text written anew without it, refs moved, the
//! old targets kept under backup refs.

use std::path::Path;

use gix::bstr::ByteSlice;

use super::commit::{Identity, signature_of};
use super::git_err;
use super::history::{owned_entries, rewrite_roots};
use crate::error::Result;

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
    pub(super) repo: &'r gix::Repository,
    pub(super) replacements: &'r [(Vec<u8>, Vec<u8>)],
    pub(super) blobs: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    pub(super) trees: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    pub(super) commits: std::collections::HashMap<gix::ObjectId, gix::ObjectId>,
    pub(super) written: usize,
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
