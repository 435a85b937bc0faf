//! Which branch of the remote a branch with no upstream syncs with (ADR 93).
//!
//! `git push` refuses a branch that has no upstream rather than guess; `cairn sync` used to
//! push it as a new branch of the local name, so a clone on `master` beside a remote whose
//! branch is `main` made a second line of history nobody reads. The rule now: a branch with no
//! upstream syncs with the remote's branch of the same name; when the remote has none but has
//! other branches, the run stops before it fetches or pushes and names both ways on. An empty
//! remote (a fresh bare repository) still gets the branch, as the first sync.

use super::git_cli::Git;
use crate::error::{Error, Kind, Result};

/// What `git ls-remote --symref REMOTE` says: the remote's default branch (its HEAD) and its
/// branches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Heads {
    pub default: Option<String>,
    pub branches: Vec<String>,
}

/// Reads `git ls-remote --symref` output: `ref: refs/heads/main\tHEAD` and `HASH\trefs/heads/X`.
pub fn parse_ls_remote(text: &str) -> Heads {
    let mut heads = Heads::default();
    for line in text.lines() {
        let Some((left, name)) = line.split_once('\t') else {
            continue;
        };
        if let Some(target) = left.strip_prefix("ref: ") {
            if name == "HEAD" {
                heads.default = target.strip_prefix("refs/heads/").map(str::to_string);
            }
        } else if let Some(branch) = name.strip_prefix("refs/heads/") {
            heads.branches.push(branch.to_string());
        }
    }
    heads
}

/// The refusal for `branch` (no upstream) against a remote holding `heads`, if any.
pub fn refusal(remote: &str, branch: &str, heads: &Heads) -> Option<Error> {
    if heads.branches.is_empty() || heads.branches.iter().any(|b| b == branch) {
        return None;
    }
    let theirs = heads
        .default
        .clone()
        .filter(|d| heads.branches.contains(d))
        .unwrap_or_else(|| heads.branches[0].clone());
    Some(
        Error::new(
            Kind::Git,
            format!(
                "{branch} has no upstream and {remote} has no branch {branch} (its default branch \
                 is {theirs}): nothing was fetched or pushed"
            ),
        )
        .with_fix(format!(
            "to sync with {remote}'s {theirs}: `git fetch {remote} && git branch \
             --set-upstream-to={remote}/{theirs}`; to make {branch} a new branch of {remote}: \
             `git push --set-upstream {remote} {branch}`; then run `cairn sync` again"
        )),
    )
}

/// Stops a sync of `branch`, which has no upstream, when the remote has branches but none of
/// that name. A remote that cannot be listed is left to the fetch to report.
pub fn check_no_upstream(git: &Git, remote: &str, branch: &str) -> Result<()> {
    let listed = git.run(&["ls-remote", "--symref", remote])?;
    if !listed.success {
        return Ok(());
    }
    match refusal(remote, branch, &parse_ls_remote(&listed.stdout)) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_default_and_the_branches() {
        let text = "ref: refs/heads/main\tHEAD\nabc\tHEAD\nabc\trefs/heads/main\ndef\trefs/heads/dev\nfff\trefs/tags/v1\n";
        let heads = parse_ls_remote(text);
        assert_eq!(heads.default.as_deref(), Some("main"));
        assert_eq!(heads.branches, ["main", "dev"]);
    }

    #[test]
    fn refuses_only_a_remote_with_other_branches() {
        let heads = parse_ls_remote("ref: refs/heads/main\tHEAD\nabc\trefs/heads/main\n");
        let err = refusal("origin", "master", &heads).unwrap();
        assert!(err.to_string().contains("default branch is main"), "{err}");
        assert!(refusal("origin", "main", &heads).is_none());
        assert!(refusal("origin", "master", &Heads::default()).is_none());
    }
}
