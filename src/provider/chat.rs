//! Chat completions from an HTTP provider, configured by `[llm]` in cairn.toml.
//!
//! One system prompt and one user message in, one text reply out, at temperature 0:
//!
//! - `openai`: `POST {base_url}/v1/chat/completions` with
//!   `{"model","messages":[{"role":"system",…},{"role":"user",…}],"max_tokens","temperature":0}`,
//!   answered by `{"model","choices":[{"message":{"content"},"finish_reason"}],
//!   "usage":{"prompt_tokens","completion_tokens"}}`. Also what llama.cpp, LM Studio, vLLM and
//!   Ollama's `/v1` serve; a `base_url` ending in `/v1` is accepted as they document it. The
//!   key goes as `Authorization: Bearer`.
//! - `anthropic`: `POST {base_url}/v1/messages` with `x-api-key` and
//!   `anthropic-version: 2023-06-01`, sending
//!   `{"model","max_tokens","system","messages":[{"role":"user","content"}],"temperature":0}`,
//!   answered by `{"model","content":[{"type":"text","text"},…],"stop_reason",
//!   "usage":{"input_tokens","output_tokens"}}`; the text blocks are joined, other blocks
//!   (thinking, tool use) are skipped.
//! - `ollama`: `POST {base_url}/api/chat` with
//!   `{"model","messages","stream":false,"options":{"temperature":0,"num_predict"}}`,
//!   answered by `{"model","message":{"content"},"done_reason","prompt_eval_count",
//!   "eval_count"}`. Ollama leaves out `prompt_eval_count` when the prompt was cached, so the
//!   counts default to 0; the other two APIs always send their usage and it is required.
//!
//! Default base URLs: `https://api.openai.com`, `https://api.anthropic.com`,
//! `http://localhost:11434`. A reply without its text (no choices, a null content, no text
//! block, not JSON) is an [`Error::Reply`]. A reply cut off by the token limit
//! (`finish_reason` "length", `stop_reason` "max_tokens", `done_reason` "length") is returned
//! with [`ChatReply::truncated`] set: the caller decides whether a partial answer is of use.

use serde::{Deserialize, Serialize};

use super::Error;
use super::connection::{Connection, Wiring};
use super::http::{Auth, Call, Env, Settings, process_env};
use crate::config::Llm;

const SECTION: &str = "llm";

/// The version of the Anthropic messages API that the request and reply shapes here follow.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The wire format of a chat provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Api {
    const EXPECTED: &'static str = "\"\" (none), openai, anthropic, ollama";

    /// The API named by `[llm] provider`; `None` for unknown names.
    pub fn from_name(name: &str) -> Option<Api> {
        match name.trim() {
            "openai" => Some(Api::OpenAi),
            "anthropic" => Some(Api::Anthropic),
            "ollama" => Some(Api::Ollama),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Ollama => "ollama",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Api::OpenAi => "https://api.openai.com",
            Api::Anthropic => "https://api.anthropic.com",
            Api::Ollama => "http://localhost:11434",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
            Api::Ollama => "/api/chat",
        }
    }

    fn auth(self) -> Auth {
        match self {
            Api::Anthropic => Auth::Header("x-api-key"),
            // Ollama needs no key; one behind an authenticating proxy takes a bearer token.
            Api::OpenAi | Api::Ollama => Auth::Bearer,
        }
    }
}

/// Tokens read and written, as the provider counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the model answered, and the HTTP call that asked (for telemetry).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub text: String,
    pub usage: Usage,
    /// The model as the provider names it in the reply (the configured one if it names none).
    pub model: String,
    /// Why the model stopped, as the provider says it (`stop`, `end_turn`, `length`, …).
    pub stop_reason: Option<String>,
    /// The reply was cut off by the token limit: `text` is a partial answer.
    pub truncated: bool,
    pub call: Call,
}

/// A configured chat provider. Keep one for many calls: it pools its connections.
#[derive(Debug, Clone)]
pub struct ChatClient {
    api: Api,
    connection: Connection,
}

impl ChatClient {
    /// The provider `llm` names, with its timeout and the default retries; `None` when no
    /// provider is configured. Reads the key from the environment variable named by
    /// `api_key_env`, if one is named.
    pub fn from_config(llm: &Llm) -> Result<Option<ChatClient>, Error> {
        let settings = Settings::from_timeout_secs(llm.timeout_secs);
        ChatClient::with_settings(llm, &settings, &process_env)
    }

    /// As [`ChatClient::from_config`], with the timeout and retries given and the key's
    /// variable read through `env`.
    pub fn with_settings(
        llm: &Llm,
        settings: &Settings,
        env: Env<'_>,
    ) -> Result<Option<ChatClient>, Error> {
        let name = llm.provider.trim();
        if name.is_empty() {
            return Ok(None);
        }
        let api = Api::from_name(name).ok_or_else(|| Error::UnknownProvider {
            section: SECTION,
            name: name.to_string(),
            expected: Api::EXPECTED,
        })?;
        let wiring = Wiring {
            section: SECTION,
            provider: api.name(),
            model: &llm.model,
            base_url: &llm.base_url,
            api_key_env: &llm.api_key_env,
            default_base_url: api.default_base_url(),
            path: api.path(),
            auth: api.auth(),
        };
        let mut connection = Connection::open(&wiring, settings, env)?;
        if api == Api::Anthropic {
            connection = connection.with_header("anthropic-version", ANTHROPIC_VERSION);
        }
        Ok(Some(ChatClient { api, connection }))
    }

    pub fn api(&self) -> Api {
        self.api
    }

    /// The configured model.
    pub fn model(&self) -> &str {
        self.connection.model()
    }

    /// The URL requests go to, without credentials.
    pub fn url(&self) -> &str {
        self.connection.url()
    }

    /// Asks the model, with `system` as its instructions (left out when empty) and `user` as
    /// the one message, for at most `max_tokens` tokens of answer.
    pub fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<ChatReply, Error> {
        match self.api {
            Api::OpenAi => {
                let request = OpenAiRequest {
                    model: self.connection.model(),
                    messages: messages(system, user),
                    max_tokens,
                    temperature: 0.0,
                };
                let (reply, call) = self.connection.post_json::<OpenAiReply>(&request)?;
                self.openai_reply(reply, call)
            }
            Api::Anthropic => {
                let request = AnthropicRequest {
                    model: self.connection.model(),
                    max_tokens,
                    system: (!system.is_empty()).then_some(system),
                    messages: vec![Message {
                        role: "user",
                        content: user,
                    }],
                    temperature: 0.0,
                };
                let (reply, call) = self.connection.post_json::<AnthropicReply>(&request)?;
                self.anthropic_reply(reply, call)
            }
            Api::Ollama => {
                let request = OllamaRequest {
                    model: self.connection.model(),
                    messages: messages(system, user),
                    stream: false,
                    options: OllamaOptions {
                        temperature: 0.0,
                        num_predict: max_tokens,
                    },
                };
                let (reply, call) = self.connection.post_json::<OllamaReply>(&request)?;
                Ok(self.reply(
                    reply.message.content,
                    Usage {
                        input_tokens: reply.prompt_eval_count.unwrap_or(0),
                        output_tokens: reply.eval_count.unwrap_or(0),
                    },
                    reply.model,
                    reply.done_reason,
                    call,
                ))
            }
        }
    }

    fn openai_reply(&self, reply: OpenAiReply, call: Call) -> Result<ChatReply, Error> {
        let Some(choice) = reply.choices.into_iter().next() else {
            return Err(self.malformed(&call, "`choices` is empty".to_string()));
        };
        let Some(text) = choice.message.content else {
            let why = match &choice.message.refusal {
                Some(refusal) => format!("the model refused: {refusal}"),
                None => format!(
                    "choice 0 has no text content (finish_reason {})",
                    choice.finish_reason.as_deref().unwrap_or("null")
                ),
            };
            return Err(self.malformed(&call, why));
        };
        let usage = Usage {
            input_tokens: reply.usage.prompt_tokens,
            output_tokens: reply.usage.completion_tokens,
        };
        Ok(self.reply(text, usage, reply.model, choice.finish_reason, call))
    }

    fn anthropic_reply(&self, reply: AnthropicReply, call: Call) -> Result<ChatReply, Error> {
        let mut texts = reply
            .content
            .into_iter()
            .filter(|block| block.kind == "text")
            .map(|block| block.text)
            .peekable();
        if texts.peek().is_none() {
            let why = format!(
                "`content` has no text block (stop_reason {})",
                reply.stop_reason.as_deref().unwrap_or("null")
            );
            return Err(self.malformed(&call, why));
        }
        let text = match texts.collect::<Option<String>>() {
            Some(text) => text,
            None => return Err(self.malformed(&call, "a text block has no `text`".to_string())),
        };
        let usage = Usage {
            input_tokens: reply.usage.input_tokens,
            output_tokens: reply.usage.output_tokens,
        };
        Ok(self.reply(text, usage, Some(reply.model), reply.stop_reason, call))
    }

    fn reply(
        &self,
        text: String,
        usage: Usage,
        model: Option<String>,
        stop_reason: Option<String>,
        call: Call,
    ) -> ChatReply {
        let truncated = matches!(
            (self.api, stop_reason.as_deref()),
            (Api::OpenAi | Api::Ollama, Some("length"))
                | (
                    Api::Anthropic,
                    Some("max_tokens" | "model_context_window_exceeded")
                )
        );
        let model = model
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| self.model().to_string());
        ChatReply {
            text,
            usage,
            model,
            stop_reason,
            truncated,
            call,
        }
    }

    fn malformed(&self, call: &Call, reason: String) -> Error {
        self.connection.malformed(call, reason)
    }
}

fn messages<'a>(system: &'a str, user: &'a str) -> Vec<Message<'a>> {
    let system = (!system.is_empty()).then_some(Message {
        role: "system",
        content: system,
    });
    let user = Message {
        role: "user",
        content: user,
    };
    system.into_iter().chain([user]).collect()
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct OpenAiRequest<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    max_tokens: u32,
    temperature: f32,
}

#[derive(Deserialize)]
struct OpenAiReply {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<OpenAiChoice>,
    usage: OpenAiUsage,
}

#[derive(Deserialize)]
struct OpenAiChoice {
    message: OpenAiMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct OpenAiUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

#[derive(Serialize)]
struct AnthropicRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<Message<'a>>,
    temperature: f32,
}

#[derive(Deserialize)]
struct AnthropicReply {
    model: String,
    content: Vec<AnthropicBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    usage: AnthropicUsage,
}

#[derive(Deserialize)]
struct AnthropicBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
struct OllamaRequest<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    stream: bool,
    options: OllamaOptions,
}

#[derive(Serialize)]
struct OllamaOptions {
    temperature: f32,
    num_predict: u32,
}

#[derive(Deserialize)]
struct OllamaReply {
    #[serde(default)]
    model: Option<String>,
    message: OllamaMessage,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
}

#[derive(Deserialize)]
struct OllamaMessage {
    content: String,
}

#[cfg(test)]
mod tests {
    //! Against mockito servers on 127.0.0.1 answering in each API's real shape; no test
    //! touches the network.

    use std::time::{Duration, Instant};

    use mockito::{Matcher, Server};
    use serde_json::json;

    use super::*;

    fn config(provider: &str, base_url: &str, model: &str, api_key_env: &str) -> Llm {
        Llm {
            provider: provider.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: api_key_env.into(),
            ..Llm::default()
        }
    }

    use crate::provider::http::testing::{assert_bad_replies, no_env, settings, trickle};

    fn client_for(provider: &str, server: &Server) -> ChatClient {
        let config = config(provider, &server.url(), "m", "");
        ChatClient::with_settings(&config, &settings(Duration::from_secs(5)), &no_env)
            .unwrap()
            .unwrap()
    }

    /// A chat completion as api.openai.com sends it.
    const OPENAI_REPLY: &str = r#"{
      "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
      "object": "chat.completion",
      "created": 1741570283,
      "model": "gpt-4o-mini-2024-07-18",
      "choices": [
        {
          "index": 0,
          "message": {
            "role": "assistant",
            "content": "<observations>\n</observations>",
            "refusal": null,
            "annotations": []
          },
          "logprobs": null,
          "finish_reason": "stop"
        }
      ],
      "usage": {
        "prompt_tokens": 1117,
        "completion_tokens": 46,
        "total_tokens": 1163,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
          "reasoning_tokens": 0, "audio_tokens": 0,
          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
        }
      },
      "service_tier": "default",
      "system_fingerprint": "fp_06737a9306"
    }"#;

    /// A message as api.anthropic.com sends it, with a thinking block before the text.
    const ANTHROPIC_REPLY: &str = r#"{
      "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
      "type": "message",
      "role": "assistant",
      "model": "claude-sonnet-4-20250514",
      "content": [
        {"type": "thinking", "thinking": "The user wants XML.", "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": "<observations>"},
        {"type": "text", "text": "</observations>"}
      ],
      "stop_reason": "end_turn",
      "stop_sequence": null,
      "usage": {
        "input_tokens": 2095,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 503,
        "service_tier": "standard"
      }
    }"#;

    /// A non-streamed /api/chat reply as Ollama sends it.
    const OLLAMA_REPLY: &str = r#"{
      "model": "llama3.2",
      "created_at": "2025-05-14T17:53:47.226617Z",
      "message": {"role": "assistant", "content": "<observations/>"},
      "done_reason": "stop",
      "done": true,
      "total_duration": 4883583458,
      "load_duration": 1334875,
      "prompt_eval_count": 26,
      "prompt_eval_duration": 342546000,
      "eval_count": 282,
      "eval_duration": 4535599000
    }"#;

    #[test]
    fn openai_sends_system_and_user_and_reads_the_choice() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/chat/completions")
            .match_header("content-type", "application/json")
            .match_header("authorization", "Bearer sk-test-key-30")
            .match_body(Matcher::Json(json!({
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": "be terse"},
                    {"role": "user", "content": "what changed?"}
                ],
                "max_tokens": 512,
                "temperature": 0.0
            })))
            .with_header("content-type", "application/json")
            .with_body(OPENAI_REPLY)
            .expect(1)
            .create();
        // A base URL with /v1, as llama.cpp and LM Studio document theirs.
        let config = config(
            "openai",
            &format!("{}/v1", server.url()),
            "gpt-4o-mini",
            "CAIRN_TEST_KEY_30",
        );
        let env = |var: &str| (var == "CAIRN_TEST_KEY_30").then(|| "sk-test-key-30".into());
        let client = ChatClient::with_settings(&config, &settings(Duration::from_secs(5)), &env)
            .unwrap()
            .unwrap();
        assert_eq!(
            client.url(),
            format!("{}/v1/chat/completions", server.url())
        );
        assert!(!format!("{client:?}").contains("sk-test-key"), "{client:?}");

        let reply = client.complete("be terse", "what changed?", 512).unwrap();
        assert_eq!(reply.text, "<observations>\n</observations>");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 1117,
                output_tokens: 46
            }
        );
        assert_eq!(reply.model, "gpt-4o-mini-2024-07-18");
        assert_eq!(reply.stop_reason.as_deref(), Some("stop"));
        assert!(!reply.truncated);
        assert_eq!((reply.call.attempts, reply.call.status), (1, 200));
        assert_eq!(reply.call.provider, "openai");
        mock.assert();
    }

    #[test]
    fn openai_without_a_system_prompt_sends_only_the_user_message() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/chat/completions")
            .match_header("authorization", Matcher::Missing)
            .match_body(Matcher::PartialJson(json!({
                "messages": [{"role": "user", "content": "hi"}]
            })))
            .with_body(OPENAI_REPLY)
            .expect(1)
            .create();
        client_for("openai", &server)
            .complete("", "hi", 16)
            .unwrap();
        mock.assert();
    }

    #[test]
    fn anthropic_sends_its_headers_and_joins_the_text_blocks() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/messages")
            .match_header("x-api-key", "sk-ant-test-31")
            .match_header("anthropic-version", "2023-06-01")
            .match_header("authorization", Matcher::Missing)
            .match_header("content-type", "application/json")
            .match_body(Matcher::Json(json!({
                "model": "claude-sonnet-4-20250514",
                "max_tokens": 1024,
                "system": "be terse",
                "messages": [{"role": "user", "content": "what changed?"}],
                "temperature": 0.0
            })))
            .with_header("content-type", "application/json")
            .with_body(ANTHROPIC_REPLY)
            .expect(1)
            .create();
        let config = config(
            "anthropic",
            &server.url(),
            "claude-sonnet-4-20250514",
            "CAIRN_TEST_KEY_31",
        );
        let env = |var: &str| (var == "CAIRN_TEST_KEY_31").then(|| "sk-ant-test-31".into());
        let client = ChatClient::with_settings(&config, &settings(Duration::from_secs(5)), &env)
            .unwrap()
            .unwrap();
        let reply = client.complete("be terse", "what changed?", 1024).unwrap();
        assert_eq!(reply.text, "<observations></observations>");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 2095,
                output_tokens: 503
            }
        );
        assert_eq!(reply.model, "claude-sonnet-4-20250514");
        assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
        assert!(!reply.truncated);
        mock.assert();
    }

    #[test]
    fn ollama_asks_for_one_reply_without_streaming() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/chat")
            .match_header("authorization", Matcher::Missing)
            .match_body(Matcher::Json(json!({
                "model": "llama3.2",
                "messages": [
                    {"role": "system", "content": "be terse"},
                    {"role": "user", "content": "what changed?"}
                ],
                "stream": false,
                "options": {"temperature": 0.0, "num_predict": 256}
            })))
            .with_header("content-type", "application/json")
            .with_body(OLLAMA_REPLY)
            .expect(1)
            .create();
        let config = config("ollama", &server.url(), "llama3.2", "");
        let client = ChatClient::with_settings(&config, &settings(Duration::from_secs(5)), &no_env)
            .unwrap()
            .unwrap();
        let reply = client.complete("be terse", "what changed?", 256).unwrap();
        assert_eq!(reply.text, "<observations/>");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 26,
                output_tokens: 282
            }
        );
        assert_eq!(reply.model, "llama3.2");
        assert!(!reply.truncated);
        mock.assert();
    }

    #[test]
    fn ollama_counts_default_to_zero_when_the_prompt_was_cached() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/chat")
            .with_body(
                r#"{"model":"llama3.2","created_at":"2025-05-14T17:53:47Z",
                    "message":{"role":"assistant","content":"ok"},"done_reason":"stop",
                    "done":true,"eval_count":3}"#,
            )
            .create();
        let reply = client_for("ollama", &server).complete("", "x", 8).unwrap();
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 0,
                output_tokens: 3
            }
        );
        mock.assert();
    }

    #[test]
    fn a_reply_cut_off_by_the_token_limit_is_marked_truncated() {
        let cases = [
            (
                "openai",
                r#"{"model":"m","choices":[{"index":0,"message":{"role":"assistant",
                    "content":"<observations><segm"},"finish_reason":"length"}],
                    "usage":{"prompt_tokens":9,"completion_tokens":16,"total_tokens":25}}"#,
                "length",
            ),
            (
                "anthropic",
                r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
                    "content":[{"type":"text","text":"<observations><segm"}],
                    "stop_reason":"max_tokens","stop_sequence":null,
                    "usage":{"input_tokens":9,"output_tokens":16}}"#,
                "max_tokens",
            ),
            (
                "ollama",
                r#"{"model":"m","created_at":"2025-05-14T17:53:47Z",
                    "message":{"role":"assistant","content":"<observations><segm"},
                    "done_reason":"length","done":true,"prompt_eval_count":9,"eval_count":16}"#,
                "length",
            ),
        ];
        for (provider, body, reason) in cases {
            let mut server = Server::new();
            let path = Api::from_name(provider).unwrap().path();
            let mock = server.mock("POST", path).with_body(body).create();
            let reply = client_for(provider, &server)
                .complete("s", "u", 16)
                .unwrap();
            assert!(reply.truncated, "{provider}");
            assert_eq!(reply.stop_reason.as_deref(), Some(reason), "{provider}");
            assert_eq!(reply.text, "<observations><segm", "{provider}");
            mock.assert();
        }
    }

    #[test]
    fn a_429_is_retried_after_a_short_retry_after() {
        let mut server = Server::new();
        let limited = server
            .mock("POST", "/v1/messages")
            .with_status(429)
            // Asks for a second; the cap (50 ms here) wins.
            .with_header("retry-after", "1")
            .with_body(
                r#"{"type":"error","error":{"type":"rate_limit_error",
                    "message":"Number of request tokens has exceeded your rate limit"}}"#,
            )
            .expect(1)
            .create();
        let ok = server
            .mock("POST", "/v1/messages")
            .with_body(ANTHROPIC_REPLY)
            .expect(1)
            .create();
        let started = Instant::now();
        let reply = client_for("anthropic", &server)
            .complete("s", "u", 64)
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((reply.call.attempts, reply.call.status), (2, 200));
        limited.assert();
        ok.assert();
    }

    #[test]
    fn a_500_is_retried_three_times_then_reported() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/chat/completions")
            .with_status(500)
            .with_body(r#"{"error":{"message":"The server had an error","type":"server_error"}}"#)
            .expect(3)
            .create();
        let err = client_for("openai", &server)
            .complete("s", "u", 64)
            .unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(500), 3), "{err:?}");
        assert!(
            err.to_string().starts_with(&format!(
                "openai: POST {}/v1/chat/completions answered HTTP 500 after 3 attempts",
                server.url()
            )),
            "{err}"
        );
        mock.assert();
    }

    #[test]
    fn a_401_is_not_retried_and_says_where_the_key_is() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/messages")
            .with_status(401)
            .with_body(
                r#"{"type":"error","error":{"type":"authentication_error",
                    "message":"invalid x-api-key sk-ant-wrong-32"}}"#,
            )
            .expect(1)
            .create();
        let config = config("anthropic", &server.url(), "m", "CAIRN_TEST_KEY_32");
        let env = |_: &str| Some("sk-ant-wrong-32".into());
        let client = ChatClient::with_settings(&config, &settings(Duration::from_secs(5)), &env)
            .unwrap()
            .unwrap();
        let err = client.complete("s", "u", 64).unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(401), 1), "{err:?}");
        assert!(!err.to_string().contains("sk-ant-wrong"), "{err}");
        assert_eq!(
            err.fix().unwrap(),
            "check the API key in the environment variable CAIRN_TEST_KEY_32"
        );
        mock.assert();
    }

    #[test]
    fn a_slow_server_times_out_after_bounded_attempts() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/chat")
            .with_chunked_body(|w| trickle(w, OLLAMA_REPLY.as_bytes()))
            .expect(3)
            .create();
        let config = config("ollama", &server.url(), "m", "");
        let client =
            ChatClient::with_settings(&config, &settings(Duration::from_millis(300)), &no_env)
                .unwrap()
                .unwrap();
        let started = Instant::now();
        let err = client.complete("s", "u", 64).unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(err, Error::Transport { .. }) && err.timed_out(),
            "{err:?}"
        );
        assert_eq!(err.attempts(), 3);
        assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
        mock.assert();
    }

    #[test]
    fn a_budget_ends_the_whole_call_retries_included() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/chat")
            .with_chunked_body(|w| trickle(w, OLLAMA_REPLY.as_bytes()))
            .expect_at_least(1)
            .create();
        let config = config("ollama", &server.url(), "m", "");
        // Each attempt alone may take 2 s; the whole call may take 300 ms.
        let settings = crate::provider::http::Settings {
            budget: Some(Duration::from_millis(300)),
            ..settings(Duration::from_secs(2))
        };
        let client = ChatClient::with_settings(&config, &settings, &no_env)
            .unwrap()
            .unwrap();
        let started = Instant::now();
        let err = client.complete("s", "u", 64).unwrap_err();
        let elapsed = started.elapsed();
        assert!(err.timed_out(), "{err:?}");
        assert!(err.to_string().contains("budget 300ms"), "{err}");
        // Not 3 × 2 s: the budget, give or take the scheduler.
        assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
        mock.assert();
    }

    #[test]
    fn a_budget_stops_retrying_a_500_when_the_next_wait_would_pass_it() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/chat/completions")
            .with_status(500)
            .with_body("{}")
            .expect(1)
            .create();
        let config = config("openai", &server.url(), "m", "");
        // The first wait is 500 ms; a budget of 200 ms has no room for it.
        let settings = crate::provider::http::Settings {
            budget: Some(Duration::from_millis(200)),
            retry: crate::provider::http::Retry {
                attempts: 3,
                base_delay: Duration::from_millis(500),
                max_delay: Duration::from_secs(1),
            },
            ..settings(Duration::from_secs(2))
        };
        let client = ChatClient::with_settings(&config, &settings, &no_env)
            .unwrap()
            .unwrap();
        let started = Instant::now();
        let err = client.complete("s", "u", 64).unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(500), 1), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_millis(450),
            "no wait was slept"
        );
        mock.assert();
    }

    /// Each reply without its text is an error saying what was wrong, and is not retried.
    #[test]
    fn replies_of_the_wrong_shape_are_errors() {
        let cases = [
            (
                "openai",
                "<html>502 Bad Gateway</html>",
                "not the expected JSON",
            ),
            (
                "openai",
                r#"{"choices":[{"message":{"content":"x"}}]"#,
                "not the expected JSON",
            ),
            (
                "openai",
                r#"{"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}"#,
                "`choices` is empty",
            ),
            (
                "openai",
                r#"{"model":"m","choices":[{"message":{"role":"assistant","content":null,
                    "tool_calls":[]},"finish_reason":"tool_calls"}],
                    "usage":{"prompt_tokens":1,"completion_tokens":0}}"#,
                "choice 0 has no text content (finish_reason tool_calls)",
            ),
            (
                "openai",
                r#"{"model":"m","choices":[{"message":{"role":"assistant","content":null,
                    "refusal":"I can't help with that."},"finish_reason":"stop"}],
                    "usage":{"prompt_tokens":1,"completion_tokens":5}}"#,
                "the model refused: I can't help with that.",
            ),
            (
                "openai",
                r#"{"model":"m","choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}"#,
                "missing field `usage`",
            ),
            (
                "openai",
                r#"{"error":{"message":"model not loaded","type":"server_error"}}"#,
                "missing field `choices`",
            ),
            (
                "anthropic",
                r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],
                    "stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}"#,
                "`content` has no text block (stop_reason end_turn)",
            ),
            (
                "anthropic",
                r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
                    "content":[{"type":"text"}],"stop_reason":"end_turn",
                    "usage":{"input_tokens":1,"output_tokens":0}}"#,
                "a text block has no `text`",
            ),
            (
                "anthropic",
                r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
                    "content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}"#,
                "missing field `usage`",
            ),
            (
                "ollama",
                r#"{"model":"m","done":true}"#,
                "missing field `message`",
            ),
            (
                "ollama",
                r#"{"model":"m","message":{"role":"assistant","content":null},"done":true}"#,
                "invalid type: null",
            ),
        ];
        assert_bad_replies(
            &cases,
            |provider| Api::from_name(provider).unwrap().path(),
            |provider, server| client_for(provider, server).complete("s", "u", 64),
        );
    }

    #[test]
    fn no_provider_is_no_client() {
        let client = ChatClient::from_config(&Llm::default()).unwrap();
        assert!(client.is_none());
        let client = ChatClient::from_config(&config("  ", "", "", "CAIRN_TEST_KEY_UNSET_33"));
        assert!(client.unwrap().is_none());
    }

    #[test]
    fn a_named_but_missing_key_variable_is_a_clear_error() {
        let config = config("anthropic", "", "claude-haiku", "CAIRN_TEST_KEY_UNSET_34");
        let err = ChatClient::from_config(&config).unwrap_err();
        assert!(matches!(err, Error::MissingKey { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "anthropic: environment variable CAIRN_TEST_KEY_UNSET_34 (named by api_key_env) \
             is not set"
        );
        assert!(
            err.fix().unwrap().contains("`api_key_env` under [llm]"),
            "{:?}",
            err.fix()
        );
    }

    #[test]
    fn configuration_errors_say_what_to_fix() {
        let quick = settings(Duration::from_secs(1));
        let err =
            ChatClient::with_settings(&config("gemini", "", "m", ""), &quick, &no_env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown llm provider `gemini` (expected one of: \"\" (none), openai, anthropic, \
             ollama)"
        );
        let err =
            ChatClient::with_settings(&config("openai", "", " ", ""), &quick, &no_env).unwrap_err();
        assert!(matches!(err, Error::NoModel { .. }), "{err}");
        assert!(
            err.fix().unwrap().contains("`model` under [llm]"),
            "{:?}",
            err.fix()
        );
        let err = ChatClient::with_settings(
            &config("ollama", "localhost:11434", "m", ""),
            &quick,
            &no_env,
        )
        .unwrap_err();
        assert!(matches!(err, Error::BadUrl { .. }), "{err}");
    }

    #[test]
    fn defaults_point_at_the_public_apis() {
        let quick = settings(Duration::from_secs(1));
        let url = |provider| {
            let client = ChatClient::with_settings(&config(provider, "", "m", ""), &quick, &no_env);
            client.unwrap().unwrap().url().to_string()
        };
        assert_eq!(url("openai"), "https://api.openai.com/v1/chat/completions");
        assert_eq!(url("anthropic"), "https://api.anthropic.com/v1/messages");
        assert_eq!(url("ollama"), "http://localhost:11434/api/chat");
    }
}
