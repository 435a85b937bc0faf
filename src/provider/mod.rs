//! Providers: the only code that speaks HTTP (reqwest, blocking, rustls with ring).
//!
//! - [`http`]: the plumbing every provider shares: one blocking client per provider with a
//!   timeout, bounded retries with exponential backoff (timeouts, connection errors, 429 and
//!   5xx; never other 4xx), the API key read from the environment variable that `cairn.toml`
//!   names, and a [`Call`] record per request (attempts, duration, status) for telemetry.
//! - [`connection`]: a configured provider (model, endpoint, client), opened the same way
//!   for `[llm]` and `[embed]`.
//! - [`embed`]: embeddings from Ollama (`/api/embed`), the OpenAI format (`/v1/embeddings`:
//!   OpenAI, llama.cpp, LM Studio, vLLM) and Voyage, batched and strictly validated.
//! - [`chat`]: one-shot chat completions from the OpenAI format (`/v1/chat/completions`:
//!   OpenAI, llama.cpp, LM Studio, vLLM, Ollama's `/v1`), Anthropic messages (`/v1/messages`)
//!   and Ollama (`/api/chat`), with token usage and a flag for replies cut off by the limit.
//!
//! - [`reply`]: reading a model's reply: one code fence off, lines named, short quotes.
//! - [`ask`]: one prompt asked and its reply parsed, a cut-off or malformed reply an error.
//!
//! Nothing here prints, writes telemetry or reads `cairn.toml`: the caller passes the
//! configuration in and writes the returned [`Call`] records (or the failed error's
//! [`Error::attempts`]) to telemetry. Keys are read from the environment at construction, are
//! never part of an error message or a `Debug` output, and are blanked out of any reply body
//! quoted in an error.

pub mod ask;
pub mod chat;
pub mod connection;
pub mod embed;
pub mod fetch;
pub mod http;
pub mod reply;

pub use chat::{ChatClient, ChatReply, Usage};
pub use embed::{EmbedClient, Embeddings, InputType, model_id};
pub use http::Call;

use crate::error::{Error as CairnError, Kind};

/// Everything that can go wrong talking to a provider. Messages name the provider and the
/// URL (without credentials or query) and never contain the key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown {section} provider `{name}` (expected one of: {expected})")]
    UnknownProvider {
        section: &'static str,
        name: String,
        expected: &'static str,
    },
    #[error("the {section} provider `{name}` runs in-process, not over HTTP")]
    NotHttp { section: &'static str, name: String },
    #[error("{provider}: no model configured")]
    NoModel {
        section: &'static str,
        provider: &'static str,
    },
    #[error("{provider}: base_url `{url}` is not usable: {reason}")]
    BadUrl {
        section: &'static str,
        provider: &'static str,
        url: String,
        reason: String,
    },
    #[error("{provider}: environment variable {var} (named by api_key_env) is not set")]
    MissingKey {
        section: &'static str,
        provider: &'static str,
        var: String,
    },
    #[error(
        "{provider}: environment variable {var} (named by api_key_env) is empty or holds \
         characters that cannot be sent in an HTTP header"
    )]
    BadKey {
        section: &'static str,
        provider: &'static str,
        var: String,
    },
    #[error("{provider}: could not set up the HTTP client: {message}")]
    Client {
        provider: &'static str,
        message: String,
    },
    #[error(
        "{provider}: POST {url} {} after {attempts} attempt{}: {message}",
        if *timed_out { "timed out" } else { "failed" },
        plural(*attempts)
    )]
    Transport {
        provider: &'static str,
        url: String,
        attempts: u32,
        timed_out: bool,
        message: String,
    },
    #[error(
        "{provider}: POST {url} answered HTTP {status} after {attempts} attempt{}: {excerpt}",
        plural(*attempts)
    )]
    Status {
        provider: &'static str,
        url: String,
        status: u16,
        attempts: u32,
        excerpt: String,
        /// The `api_key_env` in force, to say where to look on 401/403.
        key_var: Option<String>,
        section: &'static str,
    },
    #[error("{provider}: POST {url} gave a malformed reply: {reason}")]
    Reply {
        provider: &'static str,
        url: String,
        attempts: u32,
        reason: String,
    },
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Error {
    /// How many requests were sent before this error, for telemetry (0 when none was sent).
    pub fn attempts(&self) -> u32 {
        match self {
            Error::Transport { attempts, .. }
            | Error::Status { attempts, .. }
            | Error::Reply { attempts, .. } => *attempts,
            _ => 0,
        }
    }

    /// Whether the last attempt ran out of time.
    pub fn timed_out(&self) -> bool {
        matches!(
            self,
            Error::Transport {
                timed_out: true,
                ..
            }
        )
    }

    /// The HTTP status of the last answer, if the error is one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What the user can do about it, when there is something.
    pub fn fix(&self) -> Option<String> {
        let fix = match self {
            Error::UnknownProvider { section, .. } => {
                format!("set `provider` under [{section}] in cairn.toml")
            }
            Error::NoModel { section, provider } => {
                format!("set `model` under [{section}] in cairn.toml to a {provider} model")
            }
            Error::BadUrl { section, .. } => {
                format!(
                    "set `base_url` under [{section}] to an http:// or https:// URL, or to \"\""
                )
            }
            Error::MissingKey { section, var, .. } | Error::BadKey { section, var, .. } => format!(
                "export {var} with the API key, or set `api_key_env` under [{section}] to the \
                 variable that holds it"
            ),
            Error::Status {
                status: 401 | 403,
                key_var: Some(var),
                ..
            } => {
                format!("check the API key in the environment variable {var}")
            }
            Error::Status {
                status: 401 | 403,
                key_var: None,
                section,
                ..
            } => format!(
                "set `api_key_env` under [{section}] to the environment variable holding the key"
            ),
            Error::Status {
                status: 404,
                section,
                ..
            } => {
                format!("check `base_url` and `model` under [{section}] in cairn.toml")
            }
            Error::Transport {
                timed_out: true, ..
            } => "the provider may be slow or overloaded: retry later, or raise `timeout_secs`"
                .to_string(),
            Error::Transport { .. } => {
                "check that the provider is running and `base_url` is right".to_string()
            }
            _ => return None,
        };
        Some(fix)
    }
}

impl From<Error> for CairnError {
    fn from(err: Error) -> Self {
        let kind = match err {
            Error::UnknownProvider { .. }
            | Error::NotHttp { .. }
            | Error::NoModel { .. }
            | Error::BadUrl { .. }
            | Error::MissingKey { .. }
            | Error::BadKey { .. } => Kind::Config,
            // There is no network kind yet; a failed exchange is closest to failed I/O.
            Error::Client { .. }
            | Error::Transport { .. }
            | Error::Status { .. }
            | Error::Reply { .. } => Kind::Io,
        };
        let fix = err.fix();
        let out = CairnError::new(kind, err.to_string());
        match fix {
            Some(fix) => out.with_fix(fix),
            None => out,
        }
    }
}
