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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mockito::Server;

    use super::*;
    use crate::config::Llm;
    use crate::provider::http::testing::{no_env, settings};

    fn answering(server: &mut Server, finish_reason: &str, content: &str) -> ChatClient {
        let body = serde_json::json!({
            "model": "m",
            "choices": [{"message": {"content": content}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3}
        });
        server
            .mock("POST", "/v1/chat/completions")
            .with_body(body.to_string())
            .create();
        client_of(server)
    }

    fn client_of(server: &Server) -> ChatClient {
        let llm = Llm {
            provider: "openai".into(),
            base_url: server.url(),
            model: "m".into(),
            ..Llm::default()
        };
        ChatClient::with_settings(&llm, &settings(Duration::from_secs(5)), &no_env)
            .unwrap()
            .unwrap()
    }

    fn parse(text: &str) -> Result<String, ParseError> {
        match text.strip_prefix("ok ") {
            Some(rest) => Ok(rest.to_string()),
            None => Err(ParseError {
                line: 2,
                message: "no ok".into(),
            }),
        }
    }

    const USED: Usage = Usage {
        input_tokens: 7,
        output_tokens: 3,
    };

    #[test]
    fn a_whole_reply_is_parsed_with_its_usage() {
        let mut server = Server::new();
        let client = answering(&mut server, "stop", "ok fine");
        let (answer, usage) = ask(&client, "s", "u", 64, parse).unwrap();
        assert_eq!((answer.as_str(), usage), ("fine", USED));
    }

    #[test]
    fn a_cut_off_reply_is_refused_before_parsing_and_its_tokens_counted() {
        let mut server = Server::new();
        let client = answering(&mut server, "length", "ok but cut");
        let err = ask(&client, "s", "u", 64, parse).unwrap_err();
        assert!(matches!(err, AskError::Truncated(_)), "{err:?}");
        assert_eq!(err.usage(), Some(USED));
        assert_eq!(
            err.message(" (call 2 of 3)"),
            "the LLM's reply was cut off at its token limit (a partial reply) (call 2 of 3)"
        );
    }

    #[test]
    fn a_refused_reply_names_its_line_and_counts_its_tokens() {
        let mut server = Server::new();
        let client = answering(&mut server, "stop", "prose");
        let err = ask(&client, "s", "u", 64, parse).unwrap_err();
        assert_eq!(err.usage(), Some(USED));
        assert_eq!(err.message(""), "malformed LLM reply, line 2: no ok");
    }

    #[test]
    fn a_failed_call_has_no_usage_and_keeps_the_provider_message() {
        let mut server = Server::new();
        server
            .mock("POST", "/v1/chat/completions")
            .with_status(401)
            .create();
        let client = client_of(&server);
        let err = ask(&client, "s", "u", 64, parse).unwrap_err();
        assert_eq!(err.usage(), None);
        assert!(
            err.message(" (call 1 of 2)").contains("HTTP 401"),
            "{err:?}"
        );
        assert!(!err.message(" (call 1 of 2)").contains("call 1"), "{err:?}");
    }
}
