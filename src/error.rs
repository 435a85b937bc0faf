//! The error every command can end in, as the user sees it.
//!
//! Domain modules keep their own `thiserror` enums (`slog::Error`, `adr::Error`, …) whose
//! variants carry the path, line or id they are about. At the edge they become this one
//! [`Error`]: a stable `kind` for scripts, a lowercase message for people, an optional `fix`
//! that says what to do, and the exit code of the output contract (2, or 130 when interrupted).

use std::fmt;

/// The stable, machine-readable class of an error (`data.kind` in the JSON envelope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No knowledge repository was found where one was expected.
    NotARepository,
    /// The user's input (arguments, a file's content) is malformed.
    BadInput,
    /// A record named by the user does not exist.
    NotFound,
    /// Reading or writing a file failed.
    Io,
    /// A git operation failed.
    Git,
    /// The configuration file is malformed.
    Config,
    /// A merge stopped on files changed on both sides; a person must resolve them.
    Conflict,
    /// The user interrupted the command.
    Interrupted,
    /// Another process held the repository lock longer than this write may wait.
    Busy,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NotARepository => "not_a_repository",
            Kind::BadInput => "bad_input",
            Kind::NotFound => "not_found",
            Kind::Io => "io",
            Kind::Git => "git",
            Kind::Config => "config",
            Kind::Conflict => "conflict",
            Kind::Interrupted => "interrupted",
            Kind::Busy => "busy",
        }
    }
}

/// An error on its way to the user.
#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    pub fix: Option<String>,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            fix: None,
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    pub fn bad_input(message: impl Into<String>) -> Self {
        Error::new(Kind::BadInput, message)
    }

    pub fn io(context: impl fmt::Display, err: &std::io::Error) -> Self {
        Error::new(Kind::Io, format!("{context}: {err}"))
    }

    /// The process exit code of the output contract.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Interrupted => 130,
            _ => 2,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
