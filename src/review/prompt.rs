//! The terminal side of `cairn review`: the choice after each proposal, the reason of a
//! rejection, and the editor for a proposal's text. The only importer of `dialoguer`; every
//! prompt draws on stderr, so stdout keeps only the command's report.

use std::io::Write;
use std::process::Command;

use dialoguer::console::Term;
use dialoguer::{Confirm, Input, Select};

use crate::error::{Error, Kind, Result};

/// What a person chose to do with the proposal shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Approve,
    Edit,
    Reject,
    Skip,
    Quit,
}

/// The choices in the order shown.
const CHOICES: [(Choice, &str); 5] = [
    (Choice::Approve, "approve"),
    (Choice::Edit, "edit the text"),
    (Choice::Reject, "reject"),
    (Choice::Skip, "skip (leave it pending)"),
    (Choice::Quit, "quit"),
];

/// Whether what is shown on stderr may carry colours (a terminal, and NO_COLOR unset).
pub fn colours() -> bool {
    dialoguer::console::colors_enabled_stderr()
}

/// Shows `text` (a rendered proposal) on the terminal.
pub fn show(text: &str) -> Result<()> {
    let mut term = Term::stderr();
    term.write_all(text.as_bytes())
        .and_then(|()| term.flush())
        .map_err(|e| Error::io("the terminal", &e))
}

/// Ctrl-C held as a key while a prompt reads. console's `read_key` reads in raw mode, so a ^C
/// is a byte; on reading it, it raises SIGINT at its own process, whose default action kills
/// cairn with the cursor hidden and no summary. For the prompt's span SIGINT is ignored (the
/// disposition before is put back on drop), so the raise does nothing and the read returns
/// `Interrupted`, which [`cancelled`] turns into an answer. (The tests once passed only where
/// the shell that started them ignored SIGINT, as a background job's does.)
struct CtrlCIsAKey(libc::sighandler_t);

impl CtrlCIsAKey {
    #[allow(unsafe_code)]
    fn hold() -> CtrlCIsAKey {
        // SAFETY: signal() with SIG_IGN installs no handler code; the old disposition is
        // restored exactly on drop.
        CtrlCIsAKey(unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) })
    }
}

impl Drop for CtrlCIsAKey {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: puts back the disposition `hold` replaced.
        unsafe {
            libc::signal(libc::SIGINT, self.0);
        }
    }
}

/// Asks what to do; Escape, `q` or Ctrl-C quits.
pub fn choose() -> Result<Choice> {
    let _key = CtrlCIsAKey::hold();
    let items: Vec<&str> = CHOICES.iter().map(|(_, label)| *label).collect();
    let picked = Select::new()
        .with_prompt("what now")
        .items(&items)
        .default(0)
        .interact_on_opt(&Term::stderr());
    Ok(cancelled(picked)?
        .flatten()
        .map_or(Choice::Quit, |i| CHOICES[i].0))
}

/// Asks a yes/no question (no by default); Escape or Ctrl-C answers no.
pub fn confirm(question: &str) -> Result<bool> {
    let _key = CtrlCIsAKey::hold();
    let answer = Confirm::new()
        .with_prompt(question)
        .default(false)
        .interact_on_opt(&Term::stderr());
    Ok(cancelled(answer)?.flatten() == Some(true))
}

/// Asks why a proposal is rejected (not empty); `None` after Ctrl-C.
pub fn reason() -> Result<Option<String>> {
    let _key = CtrlCIsAKey::hold();
    let reason = Input::<String>::new()
        .with_prompt("why reject it")
        .interact_text_on(&Term::stderr());
    Ok(cancelled(reason)?.map(|r| r.trim().to_string()))
}

/// A prompt's answer, or `None` when Ctrl-C interrupted it. The terminal is in raw mode while
/// a prompt reads, so Ctrl-C reaches dialoguer as a key, not a signal, and dialoguer returns
/// without showing the cursor it hid: it is shown again here, on a fresh line, so the caller
/// can end as after `quit`.
fn cancelled<T>(answer: std::result::Result<T, dialoguer::Error>) -> Result<Option<T>> {
    match answer {
        Ok(a) => Ok(Some(a)),
        Err(dialoguer::Error::IO(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
            let term = Term::stderr();
            let _ = term.show_cursor();
            let _ = term.write_line("");
            Ok(None)
        }
        Err(e) => Err(prompt_error(e)),
    }
}

/// Opens `$VISUAL`, else `$EDITOR`, else `vi` on `text` (the entry of `section`) and returns
/// the edited text; `None` when the person left nothing but comments. The editor is run
/// through `sh -c`, as git runs it, so `EDITOR="code --wait"` works.
pub fn edit(text: &str, section: &str) -> Result<Option<String>> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
        .map_or_else(|| "vi".to_string(), |v| v.to_string_lossy().into_owned());
    let mut file = tempfile::Builder::new()
        .prefix("cairn-review-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| Error::io("a temporary file for the editor", &e))?;
    file.write_all(super::edit_template(text, section).as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| Error::io(file.path().display(), &e))?;
    let status = editor_command(&editor, file.path())
        .status()
        .map_err(|e| Error::io(format!("the editor `{editor}`"), &e))?;
    if !status.success() {
        return Err(Error::new(
            Kind::Io,
            format!("the editor `{editor}` failed ({status}); the text is unchanged"),
        )
        .with_fix("set $VISUAL or $EDITOR to an editor that exits 0 when it saves"));
    }
    let edited =
        std::fs::read_to_string(file.path()).map_err(|e| Error::io(file.path().display(), &e))?;
    Ok(super::parse_edited(&edited))
}

#[cfg(not(windows))]
fn editor_command(editor: &str, path: &std::path::Path) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(editor)
        .arg(path);
    cmd
}

#[cfg(windows)]
fn editor_command(editor: &str, path: &std::path::Path) -> Command {
    let mut cmd = Command::new(editor);
    cmd.arg(path);
    cmd
}

fn prompt_error(err: dialoguer::Error) -> Error {
    let dialoguer::Error::IO(e) = err;
    if e.kind() == std::io::ErrorKind::Interrupted {
        Error::new(
            Kind::Interrupted,
            "interrupted; the decisions made so far are committed",
        )
    } else {
        Error::io("the terminal", &e)
    }
}
