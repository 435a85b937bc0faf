//! The index the MCP server keeps open for its run, as the console keeps its own: opened by
//! the first call that reads it (`recall`, `search`, `brief`), then brought up to date by
//! each call with the command line's check ([`crate::index::Held::read`]: another process's
//! index commit, or any source file changed since, is caught up before the call reads), so a
//! call never reads what a write before it left behind. A session of writes alone never
//! opens it. A repository this process cannot write is opened per call, as the command line
//! does (ADR 125).

use std::sync::{Arc, Mutex};

use crate::cli::{Command, Ctx, Served};
use crate::index::Held;

/// Whether the index is held yet.
enum State {
    /// No call has read the index yet (or its open failed: the next call tries again).
    Untried,
    Held(Arc<Held>),
    /// Read-only: each call opens its own.
    PerCall,
}

pub(super) struct Kept(Mutex<State>);

impl Kept {
    pub(super) fn new() -> Kept {
        Kept(Mutex::new(State::Untried))
    }

    /// The held index for a call of `command`, opened now when the command reads the index
    /// and none is held yet. A call that does not read it never waits for another's open.
    pub(super) fn for_call(&self, served: &Served, command: &Command) -> Option<Arc<Held>> {
        let reads = matches!(
            command,
            Command::Recall(_) | Command::Search(_) | Command::Brief(_)
        );
        let mut state = if reads {
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        } else {
            self.0.try_lock().ok()?
        };
        match &*state {
            State::Held(held) => return Some(Arc::clone(held)),
            State::PerCall => return None,
            State::Untried if !reads => return None,
            State::Untried => {}
        }
        let repo = Ctx::for_call(served).repo().ok()?;
        match Held::open(&repo) {
            Ok(Some(held)) => {
                let held = Arc::new(held);
                *state = State::Held(Arc::clone(&held));
                Some(held)
            }
            Ok(None) => {
                *state = State::PerCall;
                None
            }
            // This call opens the index itself, and its error says why.
            Err(_) => None,
        }
    }
}
