//! `cairn sync` on a branch with no upstream (issue 32, point 13; ADR 93).

use crate::support::*;

/// A bare remote whose only branch is `main`, pushed by a first clone.
fn remote_with_main(env: &Env) -> std::path::PathBuf {
    let bare = env.path().join("remote.git");
    env.git(
        env.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let a = env.path().join("a");
    env.cairn(&["init", a.to_str().unwrap()]).code(0);
    env.git(&a, &["remote", "add", "origin", bare.to_str().unwrap()]);
    env.cairn_in(&a, &["sync"]).code(0);
    bare
}

#[test]
fn sync_on_a_branch_without_upstream_beside_another_default_pushes_nothing_and_says_why() {
    // It pushed `master` as a second branch of the remote, silently.
    let env = Env::new();
    let bare = remote_with_main(&env);
    let b = env.path().join("b");
    env.git(env.path(), &["clone", "-q", bare.to_str().unwrap(), "b"]);
    env.git(&b, &["switch", "-q", "-c", "master"]);
    env.cairn_in(&b, &["slog", "deploy", "api", "shipped 1.2.3"])
        .code(0);
    env.cairn_in(&b, &["sync"])
        .code(2)
        .stderr_has("master has no upstream and origin has no branch master")
        .stderr_has("default branch is main")
        .stderr_has("--set-upstream-to=origin/main");
    let heads = env.git(
        &bare,
        &["for-each-ref", "--format=%(refname)", "refs/heads"],
    );
    assert_eq!(heads.trim(), "refs/heads/main", "{heads}");
    // Following the advice syncs with main.
    env.git(&b, &["branch", "--set-upstream-to=origin/main"]);
    let data = env.cairn_in(&b, &["--json", "sync"]).code(0).data();
    assert_eq!(data["remote_branch"], "main", "{data}");
    assert_eq!(data["pushed"], true, "{data}");
}
