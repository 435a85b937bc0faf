//! `cairn review` at a real pseudo-terminal, interrupted: Ctrl-C ends the session as `quit`
//! does (issue 32, point 10).

use std::time::Duration;

use crate::review::{NOW, commit_count, inherit_pty, refs, three, with_memory};
use crate::support::*;

/// dialoguer hides the cursor while it asks and shows it again only on an answer.
const HIDE: &str = "\x1b[?25l";
const SHOW: &str = "\x1b[?25h";

fn spawn_review(env: &Env, repo: &std::path::Path) -> expectrl::session::OsSession {
    let mut cmd = env.command(BIN, repo);
    cmd.args(["--now", NOW, "review"])
        .env("TERM", "xterm-256color");
    inherit_pty(&mut cmd);
    let mut p = expectrl::Session::spawn(cmd).expect("spawn cairn review in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    p
}

/// Waits until the prompt reads keys: dialoguer puts the terminal in raw mode only once it has
/// drawn the prompt, and a Ctrl-C before that is the terminal's SIGINT, not a key (on a loaded
/// machine the test could otherwise send it in between).
fn settle(p: &mut expectrl::session::OsSession) {
    use expectrl::Expect;
    let _ = p.check(expectrl::Regex("quit|: "));
    std::thread::sleep(Duration::from_millis(500));
}

/// Everything the session printed after the last prompt until it ended, and how it ended
/// (`Exited(Pid(…), 0)`).
fn rest(p: &mut expectrl::session::OsSession) -> (String, String) {
    use expectrl::{Eof, Expect};
    let seen = p.expect(Eof).unwrap();
    // Eof's match is the rest of the output itself.
    let mut bytes = seen.before().to_vec();
    for m in seen.matches() {
        bytes.extend_from_slice(m);
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = p.get_process().wait().unwrap();
    (text, format!("{status:?}"))
}

/// The cursor hidden for the prompt (before its text, consumed by the expect) is shown again
/// after Ctrl-C, and not hidden again.
fn cursor_shown(text: &str) -> bool {
    text.rfind(SHOW).is_some_and(|s| text.rfind(HIDE) < Some(s))
}

#[test]
fn ctrl_c_at_the_review_prompt_shows_the_cursor_and_the_summary() {
    use expectrl::Expect;

    let (env, repo) = with_memory();
    three(&env, &repo);
    let before = commit_count(&env, &repo);
    let mut p = spawn_review(&env, &repo);
    p.expect("proposal 1 of 2").unwrap();
    p.expect("what now").unwrap();
    p.send("\r").unwrap(); // approve the first
    p.expect("approved").unwrap();
    p.expect("proposal 2 of 2").unwrap();
    p.expect("what now").unwrap();
    settle(&mut p);
    p.send("\x03").unwrap(); // Ctrl-C
    let (text, code) = rest(&mut p);
    assert!(
        text.contains("1 approved, 0 edited, 0 rejected, 0 skipped; 1 proposal left"),
        "{text:?}"
    );
    assert!(code.ends_with(", 0)"), "{code} {text:?}");
    assert!(cursor_shown(&text), "the cursor is left hidden: {text:?}");
    assert_eq!(commit_count(&env, &repo), before + 1);
    assert_eq!(refs(&env, &repo).len(), 1);
}

#[test]
fn ctrl_c_at_the_reason_of_a_rejection_rejects_nothing_and_ends_the_session() {
    use expectrl::Expect;

    let (env, repo) = with_memory();
    three(&env, &repo);
    let before = commit_count(&env, &repo);
    let mut p = spawn_review(&env, &repo);
    p.expect("proposal 1 of 2").unwrap();
    p.expect("what now").unwrap();
    p.send("\x1b[B\x1b[B\r").unwrap(); // reject
    p.expect("why reject it").unwrap();
    settle(&mut p);
    p.send("\x03").unwrap();
    let (text, code) = rest(&mut p);
    assert!(
        text.contains("0 approved, 0 edited, 0 rejected, 0 skipped; 2 proposals left"),
        "{text:?}"
    );
    assert!(code.ends_with(", 0)"), "{code} {text:?}");
    assert!(cursor_shown(&text), "the cursor is left hidden: {text:?}");
    assert_eq!(commit_count(&env, &repo), before);
    assert_eq!(refs(&env, &repo).len(), 2);
}
