//! `cairn sync [REMOTE]`: pull, make the merge right, bring the index up to date, push.
//!
//! The whole run holds the repository lock, so no cairn writer commits in the middle of it.
//! The git command line does the network and the merge ([`git_cli`]): gix has no push, and
//! git's own merge is what applies the `merge=union` attribute `cairn init` gives the JSONL
//! folders. The steps:
//!
//! 0. What a killed sync left is cleared or finished: a git run it noted still going is
//!    stopped and its lock files removed ([`Git::stop_left_running`]); a noted renumbering
//!    is finished ([`resume_renumber`], after step 1).
//! 1. A merge a previous run left (`MERGE_HEAD`) is finished if a person resolved it, else the
//!    run stops naming the files still in conflict.
//! 2. `git fetch REMOTE BRANCH`; no such branch on the remote means there is only pushing to
//!    do, unless the branch has no upstream and the remote has other branches: then the run
//!    stops and names the remote's default branch ([`branch`], ADR 93).
//! 3. Nothing new: no merge. Only theirs new: a fast-forward. Both: `git merge --no-ff
//!    --no-commit`, then every JSONL file the two sides differ in is repaired ([`union`]:
//!    each record once, glued lines split, a last newline), and the merge is committed. When
//!    git reports conflicts (MEMORY.md or an ADR changed on both sides), the JSONL files are
//!    repaired and staged all the same and the run stops with exit 2, the merge left as git
//!    left it (conflict markers, `MERGE_HEAD`): the person resolves and commits, or runs
//!    `git merge --abort`, and runs `cairn sync` again.
//! 4. ADRs sharing a number with one on the remote are moved to the next free numbers, with
//!    the links and relations that point at them, in a commit of their own ([`renumber`]).
//! 5. What came in is redacted: every text file the merge changed is read through the
//!    repository's redactor before the merge is committed ([`redact_merged`]), so no secret a
//!    remote writer let through (an older cairn, a hand edit, a custom pattern only this clone
//!    has) is in the tree this sync commits and pushes. A fast-forward that would bring one in
//!    is made a merge instead, so the redaction is committed by the merge; the remote's own
//!    commits still hold the text, which the report says (rotate the key).
//! 6. The index is brought up to date (what `cairn index` does), then `git push`. A push the
//!    remote rejects because it moved on meanwhile starts again from the fetch, three times
//!    at most.

pub mod branch;
pub mod git_cli;
pub mod renumber;
pub mod union;

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Kind, Result};
use crate::git;
use crate::repo::Repo;
use git_cli::Git;

/// What a sync is asked to do.
pub struct Options<'a> {
    /// The remote to sync with (a name or a URL); else the branch's upstream remote, else the
    /// only remote, else `origin`.
    pub remote: Option<String>,
    /// The longest any one git run may take.
    pub timeout: Duration,
    pub identity: git::Identity<'a>,
}

/// How the remote's commits came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Merge {
    /// Nothing new on the remote.
    None,
    FastForward,
    /// A merge commit.
    Merge,
}

/// What a sync did.
#[derive(Debug, Serialize)]
pub struct Synced {
    pub remote: String,
    pub branch: String,
    pub remote_branch: String,
    /// The remote had no such branch yet: it was made by the push.
    pub new_remote_branch: bool,
    pub merge: Merge,
    /// A merge left by an earlier run, resolved by a person, committed by this one.
    pub finished_merge: bool,
    /// The two histories had no commit in common (two `cairn init`s); they were joined.
    pub unrelated: bool,
    /// Commits brought in from the remote.
    pub incoming: usize,
    /// Commits pushed to the remote.
    pub outgoing: usize,
    pub pushed: bool,
    /// JSONL files repaired after the union merge.
    pub repaired: Vec<String>,
    /// Copies of a record beyond what either side held, removed.
    pub duplicates_removed: usize,
    /// Lines holding glued records, split.
    pub lines_split: usize,
    pub renumbered: Vec<renumber::Move>,
    /// Pushes the remote rejected because it moved on meanwhile (each one fetched again).
    pub retries: usize,
    /// Files the merge brought secrets into, redacted before the merge was committed.
    pub redacted: Vec<Redacted>,
}

/// A file that came in holding secrets.
#[derive(Debug, Serialize)]
pub struct Redacted {
    /// Relative to the root.
    pub file: String,
    /// How many secrets were replaced.
    pub secrets: usize,
    /// The kinds of secret, each once.
    pub kinds: Vec<&'static str>,
}

/// How many times a rejected push starts again from the fetch.
const ATTEMPTS: usize = 3;

/// Removes what a killed sync left staged. A sync writes merged, repaired, redacted and
/// renumbered records wherever they are in the work tree, so its rerun sweeps every folder of
/// it (never `.git`, never through a link) of the dead runs' temporary files.
fn sweep_killed_writes(repo: &Repo) -> Result<()> {
    let root = repo.root();
    crate::files::sweep_dead_temps(root, false)?;
    let read = std::fs::read_dir(root).map_err(|e| Error::io(root.display(), &e))?;
    for entry in read.flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && entry.file_name() != ".git" {
            crate::files::sweep_dead_temps(&entry.path(), true)?;
        }
    }
    Ok(())
}

/// Syncs `repo` with its remote. Run under the repository lock.
pub fn sync(repo: &Repo, opts: &Options<'_>) -> Result<Synced> {
    let (name, email) = git::identity_of(repo.root(), &opts.identity)?;
    crate::repo::ignore_derived(repo)?;
    git::killed_commit(repo.root(), true)?;
    sweep_killed_writes(repo)?;
    let git = Git::new(repo.root(), opts.timeout, name, email)
        .with_running_note(repo.path(GIT_RUNNING_NOTE));
    if git.stop_left_running()? {
        remove_stale_git_locks(&git)?;
    }
    let head_ref = git.run(&["symbolic-ref", "-q", "--short", "HEAD"])?;
    if !head_ref.success {
        return Err(
            Error::new(Kind::Git, "HEAD is detached: there is no branch to sync")
                .with_fix("check out a branch (`git switch main`), then run `cairn sync` again"),
        );
    }
    let branch = head_ref.stdout.trim().to_string();
    let mut out = Synced {
        remote: String::new(),
        branch: branch.clone(),
        remote_branch: branch.clone(),
        new_remote_branch: false,
        merge: Merge::None,
        finished_merge: false,
        unrelated: false,
        incoming: 0,
        outgoing: 0,
        pushed: false,
        repaired: Vec::new(),
        duplicates_removed: 0,
        lines_split: 0,
        renumbered: Vec::new(),
        retries: 0,
        redacted: Vec::new(),
    };
    if let Some(theirs) = rev(&git, "MERGE_HEAD")? {
        finish_merge(repo, &git, &theirs, &mut out)?;
        out.finished_merge = true;
    } else {
        undo_a_killed_checkout(repo, &git)?;
    }
    remove_merge_note(repo)?;
    resume_renumber(repo, &git, &opts.identity, &mut out)?;
    let (remote, upstream) = remote_of(&git, &branch, opts.remote.as_deref())?;
    out.remote = remote.clone();
    if let Some(b) = &upstream {
        out.remote_branch = b.clone();
    } else {
        // No upstream: the remote's branch of this name, or a refusal naming its default
        // when it has other branches (ADR 93).
        branch::check_no_upstream(&git, &remote, &branch)?;
    }
    for attempt in 0..ATTEMPTS {
        let tip = fetch(&git, &remote, &out.remote_branch)?;
        out.new_remote_branch = tip.is_none();
        let head = rev(&git, "HEAD")?;
        if let Some(tip) = &tip {
            refuse_derived_links(&git, tip, &remote)?;
            merge(repo, &git, head.as_deref(), tip, &remote, &mut out)?;
            renumber_collisions(repo, &git, tip, &opts.identity, &mut out)?;
        }
        // A merge can bring a committed `.cairn` link (or one inside `.cairn/`): nothing goes
        // through it, here or in any later command (ADR 66).
        repo.check_derived()?;
        // What the merge wrote is looked at file by file, not trusted to a folder's time.
        crate::index::Index::open_thorough(repo)?;
        let head = rev(&git, "HEAD")?;
        if head.is_none() || head == tip {
            return Ok(out);
        }
        let outgoing = match &tip {
            Some(tip) => count(&git, &format!("{tip}..HEAD"))?,
            None => count(&git, "HEAD")?,
        };
        let target = format!("HEAD:refs/heads/{}", out.remote_branch);
        let mut args = vec!["push", "--quiet", "--porcelain"];
        // A named remote with no upstream yet becomes the branch's upstream.
        if upstream.is_none() && is_remote_name(&git, &remote)? {
            args.push("--set-upstream");
        }
        args.extend([remote.as_str(), target.as_str()]);
        let pushed = git.run(&args)?;
        if pushed.success {
            out.outgoing = outgoing;
            out.pushed = true;
            return Ok(out);
        }
        let words = format!("{}\n{}", pushed.stdout, pushed.stderr);
        let moved_on = words.contains("[rejected]")
            || words.contains("non-fast-forward")
            || words.contains("fetch first");
        if !moved_on || attempt + 1 == ATTEMPTS {
            return Err(Error::new(
                Kind::Git,
                format!("cannot push to {remote}: {}", pushed.words()),
            )
            .with_fix(if moved_on {
                "others keep pushing: run `cairn sync` again"
            } else {
                "check that you may push to the remote (`git push` by hand shows why); what \
                 was merged is committed here and goes out with the next `cairn sync`"
            }));
        }
        out.retries += 1;
    }
    Ok(out)
}

/// Refuses a fetched commit whose tree holds a symbolic link at `.cairn` or under it (ADR 66):
/// merged, every later command would refuse to run (or git stops on the folder cairn keeps
/// there), so nothing is merged and the error says where the link comes from.
fn refuse_derived_links(git: &Git, tip: &str, remote: &str) -> Result<()> {
    let listed = git.text(
        &["ls-tree", "-r", "-z", tip, "--", crate::repo::DERIVED_DIR],
        "cannot list the fetched commit",
    )?;
    // `MODE TYPE HASH\tPATH`, NUL-separated; a link's mode is 120000.
    let link = listed
        .split('\0')
        .find(|entry| entry.starts_with("120000 "))
        .and_then(|entry| entry.split_once('\t'))
        .map(|(_, path)| crate::output::inert(path).into_owned());
    match link {
        None => Ok(()),
        Some(path) => Err(Error::new(
            Kind::BadInput,
            format!(
                "{remote} holds {path} as a symbolic link (commit {}): cairn never merges a \
                 link into its derived folder; nothing was merged",
                &tip[..tip.len().min(12)]
            ),
        )
        .with_fix(format!(
            "remove it on the remote's side (`git rm --cached {path}` and commit, then push), \
             then run `cairn sync` again"
        ))),
    }
}

/// Where the git run under way is noted ([`Git::stop_left_running`]).
const GIT_RUNNING_NOTE: &str = ".cairn/sync-git.pid";

/// Removes the lock files a git run of a killed sync may have left: the remote-tracking refs'
/// (fetch and push update them), `packed-refs.lock` and `index.lock` (merge, checkout,
/// commit). Called only when the note says such a run never finished, after its process group
/// was stopped, under the repository lock: no cairn writer holds them, and a git that dies
/// by SIGKILL cannot remove its own.
fn remove_stale_git_locks(git: &Git) -> Result<()> {
    let dir = |what: &str| -> Result<std::path::PathBuf> {
        let text = git.text(
            &["rev-parse", "--path-format=absolute", what],
            "cannot find the git directory",
        )?;
        Ok(std::path::PathBuf::from(text))
    };
    let common = dir("--git-common-dir")?;
    let own = dir("--git-dir")?;
    let mut locks = vec![common.join("packed-refs.lock"), own.join("index.lock")];
    let mut folders = vec![common.join("refs/remotes")];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "lock") {
                locks.push(path);
            }
        }
    }
    for lock in locks {
        match std::fs::remove_file(&lock) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(lock.display(), &e)),
        }
    }
    Ok(())
}

/// The remote to use and the branch on it the current branch tracks (if it has one there).
fn remote_of(git: &Git, branch: &str, asked: Option<&str>) -> Result<(String, Option<String>)> {
    let tracked = git.config(&format!("branch.{branch}.remote"))?;
    let merge = git
        .config(&format!("branch.{branch}.merge"))?
        .map(|m| m.trim_start_matches("refs/heads/").to_string());
    let remotes: Vec<String> = git
        .text(&["remote"], "cannot list the git remotes")?
        .lines()
        .map(str::to_string)
        .collect();
    let remote =
        match asked {
            Some(r) => {
                let url_like = r.contains('/') || r.contains(':') || r.starts_with('.');
                if !url_like && !remotes.iter().any(|x| x == r) {
                    return Err(Error::new(Kind::Git, format!("there is no git remote named {r}"))
                    .with_fix(format!(
                        "`git remote -v` lists the remotes; add this one with `git remote add \
                         {r} URL`, then run `cairn sync {r}` again"
                    )));
                }
                r.to_string()
            }
            None => match (&tracked, remotes.as_slice()) {
                (Some(t), _) => t.clone(),
                (None, [only]) => only.clone(),
                (None, []) => {
                    return Err(Error::new(Kind::Git, "there is no git remote to sync with")
                        .with_fix(
                            "add one with `git remote add origin URL` (a bare repository others \
                         can reach), then run `cairn sync` again",
                        ));
                }
                (None, many) if many.iter().any(|r| r == "origin") => "origin".to_string(),
                (None, many) => {
                    return Err(Error::new(
                        Kind::Git,
                        format!(
                            "there are several git remotes ({}) and none is this branch's upstream",
                            many.join(", ")
                        ),
                    )
                    .with_fix("name one: `cairn sync REMOTE`"));
                }
            },
        };
    let upstream = (tracked.as_deref() == Some(remote.as_str()))
        .then_some(merge)
        .flatten();
    Ok((remote, upstream))
}

fn is_remote_name(git: &Git, remote: &str) -> Result<bool> {
    Ok(git
        .text(&["remote"], "cannot list the git remotes")?
        .lines()
        .any(|r| r == remote))
}

/// The commit `name` points at, or `None` when it does not exist.
fn rev(git: &Git, name: &str) -> Result<Option<String>> {
    let out = git.run(&["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")])?;
    Ok(out.success.then(|| out.stdout.trim().to_string()))
}

fn count(git: &Git, range: &str) -> Result<usize> {
    git.text(&["rev-list", "--count", range], "cannot count commits")?
        .parse()
        .map_err(|e| Error::new(Kind::Git, format!("cannot count commits: {e}")))
}

/// Fetches the remote's branch; its commit, or `None` when the remote has no such branch.
fn fetch(git: &Git, remote: &str, branch: &str) -> Result<Option<String>> {
    let refspec = format!("refs/heads/{branch}");
    let out = git.run(&["fetch", "--quiet", "--no-tags", remote, &refspec])?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            return Ok(None);
        }
        return Err(Error::new(
            Kind::Git,
            format!("cannot fetch from {remote}: {}", out.words()),
        )
        .with_fix(
            "check the remote's URL (`git remote -v`) and that this machine can reach it; \
             cairn sync never prompts, so set up an ssh key or a git credential helper",
        ));
    }
    rev(git, "FETCH_HEAD")
}

/// Brings `tip` into HEAD: nothing, a fast-forward, or a merge made right.
fn merge(
    repo: &Repo,
    git: &Git,
    head: Option<&str>,
    tip: &str,
    remote: &str,
    out: &mut Synced,
) -> Result<()> {
    if let Some(head) = head {
        note_merge(repo, head, tip)?;
    }
    let merged = merge_noted(repo, git, head, tip, remote, out);
    if merged.is_ok() {
        remove_merge_note(repo)?;
    }
    merged
}

/// Where a sync notes the merge it is about to run: git updates the working tree before it
/// writes `MERGE_HEAD` (or moves the branch, for a fast-forward), so a kill in between leaves
/// files changed with nothing saying why, and every later merge refuses ("your local changes
/// would be overwritten"). Found by the crash harness.
const MERGE_NOTE: &str = ".cairn/sync-merge.json";

#[derive(Serialize, serde::Deserialize)]
struct MergeNote {
    head: String,
    tip: String,
}

fn note_merge(repo: &Repo, head: &str, tip: &str) -> Result<()> {
    crate::repo::ignore_derived(repo)?;
    let note = MergeNote {
        head: head.to_string(),
        tip: tip.to_string(),
    };
    let text = serde_json::to_string(&note).expect("a merge note serializes");
    crate::files::write_atomic(&repo.path(MERGE_NOTE), text.as_bytes())?;
    crate::failpoint::failpoint("sync-merge-noted");
    Ok(())
}

fn remove_merge_note(repo: &Repo) -> Result<()> {
    match std::fs::remove_file(repo.path(MERGE_NOTE)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(MERGE_NOTE, &e)),
    }
}

/// Puts back HEAD's version of every path a killed merge could have touched (those that differ
/// between the noted HEAD and tip), when HEAD did not move and no `MERGE_HEAD` says a merge is
/// under way. git starts a merge only when none of those paths holds a local change, and the
/// repository lock kept other cairn writers out, so what is there is git's half-done work.
fn undo_a_killed_checkout(repo: &Repo, git: &Git) -> Result<()> {
    let Some(text) = crate::files::read_optional(&repo.path(MERGE_NOTE))? else {
        return Ok(());
    };
    let Ok(note) = serde_json::from_str::<MergeNote>(&text) else {
        return Ok(());
    };
    if rev(git, "HEAD")?.as_deref() != Some(note.head.as_str()) {
        return Ok(());
    }
    let diff = git.ok(
        &[
            "diff",
            "--name-status",
            "--no-renames",
            "-z",
            &note.head,
            &note.tip,
        ],
        "cannot list what the interrupted merge changed",
    )?;
    let mut fields = diff.stdout.split('\0').filter(|f| !f.is_empty());
    let (mut restore, mut added) = (Vec::new(), Vec::new());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        // Paths from the top of the work tree, whatever folder git runs in.
        let path = format!(":(top){path}");
        if status.starts_with('A') {
            added.push(path);
        } else {
            restore.push(path);
        }
    }
    if !restore.is_empty() {
        let mut args = vec!["checkout", note.head.as_str(), "--"];
        args.extend(restore.iter().map(String::as_str));
        git.ok(&args, "cannot undo what the interrupted merge changed")?;
    }
    if !added.is_empty() {
        let mut args = vec!["rm", "-q", "--cached", "--ignore-unmatch", "--"];
        args.extend(added.iter().map(String::as_str));
        git.ok(&args, "cannot undo what the interrupted merge added")?;
        let root = git::work_tree_of(repo.root()).unwrap_or_else(|| repo.root().to_path_buf());
        for path in &added {
            let path = path.trim_start_matches(":(top)");
            match std::fs::remove_file(root.join(path)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(path, &e)),
            }
        }
    }
    Ok(())
}

fn merge_noted(
    repo: &Repo,
    git: &Git,
    head: Option<&str>,
    tip: &str,
    remote: &str,
    out: &mut Synced,
) -> Result<()> {
    let ancestor = |a: &str, b: &str| -> Result<bool> {
        Ok(git.run(&["merge-base", "--is-ancestor", a, b])?.success)
    };
    let Some(head) = head else {
        git.ok(
            &["merge", "--ff-only", "--quiet", tip],
            "cannot check out the remote's branch",
        )?;
        out.merge = Merge::FastForward;
        out.incoming += count(git, tip)?;
        // No commit of ours to merge with (a branch with no commit yet): the redaction is a
        // commit of its own on top of the remote's.
        let files = changed_files(git, None, tip)?;
        if redact_merged(repo, git, &files, &[], out)? {
            let message = format!(
                "sync: redact {} brought in from {remote}",
                crate::output::count(
                    out.redacted.iter().map(|r| r.secrets).sum::<usize>(),
                    "secret"
                )
            );
            git.ok(
                &["commit", "--no-verify", "--quiet", "-m", &message],
                "cannot commit the redaction",
            )?;
        }
        return Ok(());
    };
    if head == tip || ancestor(tip, head)? {
        return Ok(());
    }
    let incoming = count(git, &format!("{head}..{tip}"))?;
    // A fast-forward would commit nothing of ours; what brings a secret in is merged instead,
    // so that the merge commit holds it redacted.
    if ancestor(head, tip)? && !brings_secrets(repo, git, head, tip)? {
        let ff = git.run(&["merge", "--ff-only", "--quiet", tip])?;
        if !ff.success {
            return Err(refused(remote, &ff));
        }
        out.merge = Merge::FastForward;
        out.incoming += incoming;
        return Ok(());
    }
    let unrelated = !git.run(&["merge-base", head, tip])?.success;
    let message = format!("sync: merge {remote} {}", out.remote_branch);
    let mut args = vec!["merge", "--no-ff", "--no-commit", "--quiet", "-m", &message];
    if unrelated {
        // Two `cairn init`s of one knowledge repository: the same files, joined once.
        args.push("--allow-unrelated-histories");
    }
    args.push(tip);
    let merged = git.run(&args)?;
    if rev(git, "MERGE_HEAD")?.is_none() {
        return Err(refused(remote, &merged));
    }
    out.unrelated |= unrelated;
    out.incoming += incoming;
    out.merge = Merge::Merge;
    finish_merge(repo, git, tip, out)
}

/// git refused to start the merge (local changes in the way, …): nothing was changed.
fn refused(remote: &str, out: &git_cli::Output) -> Error {
    Error::new(
        Kind::Git,
        format!("cannot merge what {remote} holds: {}", out.words()),
    )
    .with_fix(
        "commit or stash the uncommitted changes git names (`git status` shows them), then run \
         `cairn sync` again; nothing was changed",
    )
}

/// Repairs the JSONL files of the merge in progress, stages them, and commits the merge; or
/// stops, naming the files git could not merge.
fn finish_merge(repo: &Repo, git: &Git, theirs: &str, out: &mut Synced) -> Result<()> {
    let ours = rev(git, "HEAD")?.unwrap_or_default();
    let unmerged: Vec<String> = git
        .text(
            &["diff", "--name-only", "--diff-filter=U", "-z"],
            "cannot list the conflicts",
        )?
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    repair_jsonl(repo, git, &ours, theirs, &unmerged, out)?;
    let files = changed_files(git, Some(&ours), theirs)?;
    redact_merged(repo, git, &files, &unmerged, out)?;
    if !unmerged.is_empty() {
        return Err(conflict(&unmerged));
    }
    git.ok(
        // The merge's content was committed on each side already (pre-commit ran there);
        // `git merge` itself runs no pre-commit hook either.
        &["commit", "--no-edit", "--no-verify", "--quiet"],
        "cannot commit the merge",
    )?;
    Ok(())
}

/// The files (relative to the root) that differ between `from` (or nothing) and `to`, as the
/// merge brings them in: added or modified, not deleted.
fn changed_files(git: &Git, from: Option<&str>, to: &str) -> Result<Vec<String>> {
    let mut args = vec!["diff", "--name-only", "--relative", "--no-renames", "-z"];
    args.push("--diff-filter=AM");
    // The empty tree: everything `to` holds is new.
    let empty = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    args.push(from.unwrap_or(empty));
    args.extend([to, "--"]);
    Ok(git
        .text(&args, "cannot list what the merge brings in")?
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}

/// The redactor `cairn.toml` asks for.
fn redactor(repo: &Repo) -> Result<std::borrow::Cow<'static, crate::redact::Redactor>> {
    crate::redact::Redactor::configured(&repo.config.redact.patterns).map_err(|e| {
        Error::new(Kind::Config, format!("cairn.toml: {e}"))
            .with_fix("correct the pattern under [redact] in cairn.toml")
    })
}

/// Whether a text file `tip` changes from `head` holds a secret.
fn brings_secrets(repo: &Repo, git: &Git, head: &str, tip: &str) -> Result<bool> {
    let redactor = redactor(repo)?;
    for rel in changed_files(git, Some(head), tip)? {
        let Some(bytes) = git::content_at(repo.root(), tip, &rel)? else {
            continue;
        };
        if let Some(text) = text_of(&bytes)
            && crate::redact::may_hold_secret(text)
            && !redactor.findings(text).is_empty()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `bytes` as text, unless they are binary (not UTF-8, or holding a NUL).
fn text_of(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|t| !t.contains('\0'))
}

/// Redacts, in the working tree, each of `files` (those the merge changed) that holds a secret,
/// and stages every one of them git merged (a file in conflict is redacted and left for the
/// person to resolve). Staging them all, not only those redacted now, is what lets a rerun
/// finish a run killed between a file's write and its staging: the file holds no secret then,
/// and its redacted version must still replace the one git staged. Running it again changes
/// nothing more. Returns whether anything was redacted.
fn redact_merged(
    repo: &Repo,
    git: &Git,
    files: &[String],
    unmerged: &[String],
    out: &mut Synced,
) -> Result<bool> {
    let redactor = redactor(repo)?;
    let prefix = git.text(&["rev-parse", "--show-prefix"], "cannot read the prefix")?;
    let unmerged: HashSet<&str> = unmerged
        .iter()
        .map(|p| p.strip_prefix(prefix.as_str()).unwrap_or(p))
        .collect();
    let mut staged = Vec::new();
    let mut any = false;
    for rel in files {
        let path = repo.path(rel);
        // A link the remote committed is not followed (git checks links out as links).
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_file() => {}
            _ => continue,
        }
        if !unmerged.contains(rel.as_str()) {
            staged.push(rel.as_str());
        }
        let bytes = std::fs::read(&path).map_err(|e| Error::io(path.display(), &e))?;
        let Some(text) = text_of(&bytes) else {
            continue;
        };
        if !crate::redact::may_hold_secret(text) {
            continue;
        }
        let findings = redactor.findings(text);
        if findings.is_empty() {
            continue;
        }
        let redacted = redactor.redact(text);
        crate::files::write_atomic(&path, redacted.as_bytes())?;
        crate::failpoint::failpoint("sync-redact-mid");
        let mut kinds: Vec<&'static str> = findings.iter().map(|f| f.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        out.redacted.push(Redacted {
            file: rel.clone(),
            secrets: findings.len(),
            kinds,
        });
        any = true;
    }
    for chunk in staged.chunks(100) {
        let mut args = vec!["add", "--"];
        args.extend(chunk.iter().copied());
        git.ok(&args, "cannot stage the redacted files")?;
    }
    Ok(any)
}

fn conflict(files: &[String]) -> Error {
    let names = match files {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    };
    Error::new(
        Kind::Conflict,
        format!(
            "sync stopped: {names} changed on both sides and git could not merge {}; the merge \
             is left as git left it (conflict markers, MERGE_HEAD) and nothing is lost",
            if files.len() == 1 { "it" } else { "them" }
        ),
    )
    .with_fix(
        "edit the conflict markers out (or run `git mergetool`), `git add` the files and \
         `git commit`, then run `cairn sync` again; `git merge --abort` goes back to before \
         the merge",
    )
}

/// Repairs every JSONL file the two sides differ in ([`union::repair`]) and stages it.
fn repair_jsonl(
    repo: &Repo,
    git: &Git,
    ours: &str,
    theirs: &str,
    unmerged: &[String],
    out: &mut Synced,
) -> Result<()> {
    let changed = git.text(
        &[
            "diff",
            "--name-only",
            "--relative",
            "-z",
            ours,
            theirs,
            "--",
        ],
        "cannot list the merged files",
    )?;
    let prefix = git.text(&["rev-parse", "--show-prefix"], "cannot read the prefix")?;
    let unmerged: HashSet<String> = unmerged
        .iter()
        .map(|p| p.strip_prefix(prefix.as_str()).unwrap_or(p).to_string())
        .collect();
    let mut staged = Vec::new();
    for rel in changed.split('\0').filter(|p| p.ends_with(".jsonl")) {
        if unmerged.contains(rel) {
            continue;
        }
        let path = repo.path(rel);
        let merged = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(path.display(), &e)),
        };
        let ours_bytes = git::content_at(repo.root(), ours, rel)?.unwrap_or_default();
        let theirs_bytes = git::content_at(repo.root(), theirs, rel)?.unwrap_or_default();
        let Some(fixed) = union::repair(&merged, &ours_bytes, &theirs_bytes) else {
            continue;
        };
        crate::files::write_atomic(&path, &fixed.bytes)?;
        out.duplicates_removed += fixed.duplicates;
        out.lines_split += fixed.split;
        out.repaired.push(rel.to_string());
        staged.push(rel.to_string());
    }
    for chunk in staged.chunks(100) {
        let mut args = vec!["add", "--"];
        args.extend(chunk.iter().map(String::as_str));
        git.ok(&args, "cannot stage the repaired files")?;
    }
    Ok(())
}

/// Moves our unpushed ADRs off numbers the remote's records hold, in a commit of its own.
///
/// The moves are noted in `.cairn/sync-renumber.json` (with HEAD) before the first file is
/// touched: the working files are rewritten one by one before the commit, and `next_number`
/// reads the working tree, so a run killed in between would otherwise leave a rename half done
/// and pick other numbers next time. The next sync finds the note at its start
/// ([`resume_renumber`]) and applies the same moves again (each step is idempotent), then
/// commits.
fn renumber_collisions(
    repo: &Repo,
    git: &Git,
    tip: &str,
    identity: &git::Identity<'_>,
    out: &mut Synced,
) -> Result<()> {
    let Some(head) = rev(git, "HEAD")? else {
        return Ok(());
    };
    let dir = crate::adr::DIR;
    let ours = git::names_at(repo.root(), &head, dir)?;
    let theirs = git::names_at(repo.root(), tip, dir)?;
    let next = crate::adr::next_number(repo).map_err(Error::from)?;
    let moves = renumber::collisions(&ours, &theirs, next);
    if moves.is_empty() {
        return Ok(());
    }
    note_renumber(repo, &head, tip, &moves)?;
    apply_moves(repo, &head, tip, &ours, moves, identity, out)
}

const RENUMBER_NOTE: &str = ".cairn/sync-renumber.json";

#[derive(Serialize, serde::Deserialize)]
struct RenumberNote {
    head: String,
    tip: String,
    moves: Vec<renumber::Move>,
}

fn note_renumber(repo: &Repo, head: &str, tip: &str, moves: &[renumber::Move]) -> Result<()> {
    crate::repo::ignore_derived(repo)?;
    let note = RenumberNote {
        head: head.to_string(),
        tip: tip.to_string(),
        moves: moves.to_vec(),
    };
    let text = serde_json::to_string(&note).expect("a renumber note serializes");
    crate::files::write_atomic(&repo.path(RENUMBER_NOTE), text.as_bytes())
}

/// Finishes the renumbering a killed sync noted, when HEAD is still the commit it renumbered
/// from; a note HEAD moved past (committed, or undone by hand) is dropped.
fn resume_renumber(
    repo: &Repo,
    git: &Git,
    identity: &git::Identity<'_>,
    out: &mut Synced,
) -> Result<()> {
    let Some(text) = crate::files::read_optional(&repo.path(RENUMBER_NOTE))? else {
        return Ok(());
    };
    let note = serde_json::from_str::<RenumberNote>(&text).ok();
    let head = rev(git, "HEAD")?;
    match note {
        Some(note) if head.as_deref() == Some(note.head.as_str()) && !note.moves.is_empty() => {
            let ours = git::names_at(repo.root(), &note.head, crate::adr::DIR)?;
            apply_moves(
                repo, &note.head, &note.tip, &ours, note.moves, identity, out,
            )
        }
        _ => remove_file_if_any(RENUMBER_NOTE, &repo.path(RENUMBER_NOTE)),
    }
}

fn remove_file_if_any(name: &str, path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(name, &e)),
    }
}

/// Rewrites the working files and commits `moves` on top of `head` (whose `decisions/` holds
/// `ours`), the remote's tree being `tip`'s.
fn apply_moves(
    repo: &Repo,
    head: &str,
    tip: &str,
    ours: &[String],
    moves: Vec<renumber::Move>,
    identity: &git::Identity<'_>,
    out: &mut Synced,
) -> Result<()> {
    let dir = crate::adr::DIR;
    let mut files: Vec<String> = ours
        .iter()
        .filter(|n| crate::adr::is_record_file(n))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    files.push(crate::memory::FILE.to_string());
    let mut changes = Vec::new();
    for rel in &files {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let Some(head_bytes) = git::content_at(repo.root(), head, rel)? else {
            continue;
        };
        let theirs_text = git::content_at(repo.root(), tip, rel)?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let theirs_lines: HashSet<&str> = theirs_text.split_inclusive('\n').collect();
        let is_ours = |l: &str| !theirs_lines.contains(l);
        let head_text = String::from_utf8_lossy(&head_bytes);
        let new_text = renumber::rewrite(&head_text, name, &moves, is_ours);
        let moved = moves.iter().find(|m| m.old_name == name);
        let target = match moved {
            Some(m) => format!("{dir}/{}", m.new_name),
            None => rel.clone(),
        };
        if moved.is_none() && new_text == head_text {
            continue;
        }
        // The working file gets the same rewrite (a person's uncommitted edit stays theirs).
        let path = repo.path(rel);
        if let Some(working) = crate::files::read_optional(&path)? {
            let rewritten = renumber::rewrite(&working, name, &moves, is_ours);
            crate::files::write_atomic(&repo.path(&target), rewritten.as_bytes())?;
            if moved.is_some() {
                std::fs::remove_file(&path).map_err(|e| Error::io(path.display(), &e))?;
            }
            crate::failpoint::failpoint("sync-renumber-mid");
        }
        if moved.is_some() {
            changes.push(git::Change::File(rel.clone()));
        }
        changes.push(git::Change::Content {
            path: target,
            bytes: new_text.into_bytes(),
        });
    }
    let subject = match moves.as_slice() {
        [m] => format!(
            "sync: renumber ADR {} to {} (taken on the remote)",
            m.from, m.to
        ),
        many => format!("sync: renumber {} ADRs taken on the remote", many.len()),
    };
    let trailers: Vec<(&str, String)> = moves
        .iter()
        .map(|m| ("Cairn-Adr", format!("{} (was {})", m.to, m.from)))
        .collect();
    let message = git::message(&subject, &trailers);
    git::commit_changes(repo.root(), &changes, &message, identity)?;
    remove_file_if_any(RENUMBER_NOTE, &repo.path(RENUMBER_NOTE))?;
    out.renumbered.extend(moves);
    Ok(())
}
