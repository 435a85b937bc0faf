//! One prompt asked and its reply read: what the observer, the reflector and triage share.
//!
//! [`ask`] sends the system prompt and the user message, refuses a reply cut off at the
//! token limit, and hands the text to the caller's parser (its own schema); the token usage
//! comes back whenever the provider answered, so a caller can count a refused reply too.

use super::Error;
use super::chat::{ChatClient, Usage};
use super::reply::ParseError;

/// Why asking gave no answer.
#[derive(Debug)]
pub enum AskError {
    /// The provider could not be asked (configuration, transport, HTTP status, reply shape).
    Call(Error),
    /// The reply was cut off at the token limit.
    Truncated(Usage),
    /// The reply was whole but the caller's parser refused it.
    Malformed(Usage, ParseError),
}

impl AskError {
    /// The tokens the provider counted, when it answered.
    pub fn usage(&self) -> Option<Usage> {
        match self {
            AskError::Call(_) => None,
            AskError::Truncated(usage) | AskError::Malformed(usage, _) => Some(*usage),
        }
    }

    /// What went wrong, with `call` (e.g. ` (call 2 of 3)`, or empty) saying which call.
    pub fn message(&self, call: &str) -> String {
        match self {
            AskError::Call(e) => e.to_string(),
            AskError::Truncated(_) => {
                format!("the LLM's reply was cut off at its token limit (a partial reply){call}")
            }
            AskError::Malformed(_, e) => {
                format!("malformed LLM reply{call}, line {}: {}", e.line, e.message)
            }
        }
    }
}

/// Asks `client` with `system` and `user` for at most `max_tokens` tokens, and reads the
/// whole reply with `parse`: its answer and the tokens used.
pub fn ask<T>(
    client: &ChatClient,
    system: &str,
    user: &str,
    max_tokens: u32,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
) -> Result<(T, Usage), AskError> {
    let reply = client
        .complete(system, user, max_tokens)
        .map_err(AskError::Call)?;
    if reply.truncated {
        return Err(AskError::Truncated(reply.usage));
    }
    match parse(&reply.text) {
        Ok(answer) => Ok((answer, reply.usage)),
        Err(e) => Err(AskError::Malformed(reply.usage, e)),
    }
}
