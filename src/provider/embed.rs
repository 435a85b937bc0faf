//! Embeddings from an HTTP provider, configured by `[embed]` in cairn.toml.
//!
//! - `ollama`: `POST {base_url}/api/embed` with `{"model","input":[…]}`, answered by
//!   `{"embeddings":[[…],…]}`.
//! - `openai`: `POST {base_url}/v1/embeddings` with `{"model","input":[…]}`, answered by
//!   `{"data":[{"index":i,"embedding":[…]},…]}` in any order (sorted here by `index`).
//! - `voyage`: as `openai`, with `"input_type":"document"|"query"` in the request.
//!
//! Default base URLs: `http://localhost:11434`, `https://api.openai.com`,
//! `https://api.voyageai.com`. The `openai` format is also what llama.cpp, LM Studio and vLLM
//! serve; a `base_url` ending in `/v1` is accepted as they document it.
//!
//! Texts go in batches of at most [`MAX_BATCH`] texts and about [`MAX_BATCH_CHARS`]
//! characters. Replies are checked strictly: one vector per text, in input order, all of one
//! dimension, every value a finite number. Anything else is an error for the whole call; a
//! partial result is never returned. The built-in model is not an HTTP provider and is not
//! handled here.

use serde::{Deserialize, Serialize};

use super::Error;
use super::connection::{Connection, Wiring};
use super::http::{Auth, Call, Env, Settings, process_env};
use crate::config::Embed;

/// At most this many texts go in one request (OpenAI allows 2,048, Voyage 1,000; small
/// batches keep each request well inside timeouts and token limits).
pub const MAX_BATCH: usize = 128;

/// A batch is closed before it passes this many characters (about 100,000 tokens, under the
/// per-request token limits of OpenAI and Voyage); a longer text goes alone.
pub const MAX_BATCH_CHARS: usize = 400_000;

const SECTION: &str = "embed";

/// Whether the texts are things to be found or the question that finds them. Voyage embeds
/// the two differently; the other APIs ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputType {
    Document,
    Query,
}

impl InputType {
    fn as_str(self) -> &'static str {
        match self {
            InputType::Document => "document",
            InputType::Query => "query",
        }
    }
}

/// The wire format of an embeddings provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Ollama,
    OpenAi,
    Voyage,
}

impl Api {
    const EXPECTED: &'static str = "builtin, ollama, openai, voyage";

    /// The API named by `[embed] provider`; `None` for `builtin` and unknown names.
    pub fn from_name(name: &str) -> Option<Api> {
        match name.trim() {
            "ollama" => Some(Api::Ollama),
            "openai" => Some(Api::OpenAi),
            "voyage" => Some(Api::Voyage),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::Ollama => "ollama",
            Api::OpenAi => "openai",
            Api::Voyage => "voyage",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Api::Ollama => "http://localhost:11434",
            Api::OpenAi => "https://api.openai.com",
            Api::Voyage => "https://api.voyageai.com",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::Ollama => "/api/embed",
            Api::OpenAi | Api::Voyage => "/v1/embeddings",
        }
    }
}

/// The key under which a provider's vectors are cached: `provider:model`, e.g.
/// `ollama:nomic-embed-text`. Two configurations with the same id are taken to give the
/// same vectors.
pub fn model_id(config: &Embed) -> String {
    format!("{}:{}", config.provider.trim(), config.model.trim())
}

/// Vectors in the order of the texts, and the HTTP calls that made them (for telemetry).
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub vectors: Vec<Vec<f32>>,
    pub calls: Vec<Call>,
}

/// A configured embeddings provider. Keep one for many calls: it pools its connections.
#[derive(Debug, Clone)]
pub struct EmbedClient {
    api: Api,
    connection: Connection,
}

impl EmbedClient {
    /// The provider `config` names, with its timeout and the default retries. Reads the key
    /// from the environment variable named by `api_key_env`, if one is named.
    pub fn new(config: &Embed) -> Result<EmbedClient, Error> {
        let settings = Settings::from_timeout_secs(config.timeout_secs);
        EmbedClient::with_settings(config, &settings, &process_env)
    }

    /// As [`EmbedClient::new`], with the timeout and retries given and the key's variable read
    /// through `env`.
    pub fn with_settings(
        config: &Embed,
        settings: &Settings,
        env: Env<'_>,
    ) -> Result<EmbedClient, Error> {
        let name = config.provider.trim();
        let api = Api::from_name(name).ok_or_else(|| match name {
            "builtin" => Error::NotHttp {
                section: SECTION,
                name: name.to_string(),
            },
            _ => Error::UnknownProvider {
                section: SECTION,
                name: name.to_string(),
                expected: Api::EXPECTED,
            },
        })?;
        let wiring = Wiring {
            section: SECTION,
            provider: api.name(),
            model: &config.model,
            base_url: &config.base_url,
            api_key_env: &config.api_key_env,
            default_base_url: api.default_base_url(),
            path: api.path(),
            auth: Auth::Bearer,
        };
        let connection = Connection::open(&wiring, settings, env)?;
        Ok(EmbedClient { api, connection })
    }

    /// `provider:model`, as [`model_id`] gives it.
    pub fn model_id(&self) -> String {
        format!("{}:{}", self.api.name(), self.connection.model())
    }

    pub fn api(&self) -> Api {
        self.api
    }

    /// The URL requests go to, without credentials.
    pub fn url(&self) -> &str {
        self.connection.url()
    }

    /// Embeds `texts`, in batches, returning one vector per text in their order. No texts,
    /// no request.
    pub fn embed<S: AsRef<str>>(
        &self,
        texts: &[S],
        input_type: InputType,
    ) -> Result<Embeddings, Error> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut calls = Vec::new();
        let mut dims = None;
        for batch in batches(texts) {
            let (batch_vectors, call) = self.embed_batch(batch, input_type)?;
            check(&batch_vectors, batch.len(), vectors.len(), &mut dims)
                .map_err(|reason| self.connection.malformed(&call, reason))?;
            vectors.extend(batch_vectors);
            calls.push(call);
        }
        Ok(Embeddings { vectors, calls })
    }

    fn embed_batch<S: AsRef<str>>(
        &self,
        texts: &[S],
        input_type: InputType,
    ) -> Result<(Vec<Vec<f32>>, Call), Error> {
        let input: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let request = Request {
            model: self.connection.model(),
            input,
            input_type: (self.api == Api::Voyage).then(|| input_type.as_str()),
        };
        match self.api {
            Api::Ollama => {
                let (reply, call) = self.connection.post_json::<OllamaReply>(&request)?;
                Ok((reply.embeddings, call))
            }
            Api::OpenAi | Api::Voyage => {
                let (reply, call) = self.connection.post_json::<OpenAiReply>(&request)?;
                let vectors = in_index_order(reply.data, texts.len())
                    .map_err(|reason| self.connection.malformed(&call, reason))?;
                Ok((vectors, call))
            }
        }
    }
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_type: Option<&'static str>,
}

#[derive(Deserialize)]
struct OllamaReply {
    embeddings: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct OpenAiReply {
    data: Vec<OpenAiItem>,
}

#[derive(Deserialize)]
struct OpenAiItem {
    index: usize,
    embedding: Vec<f32>,
}

/// The batches `texts` is sent in: consecutive, each at most [`MAX_BATCH`] texts and, unless
/// it holds a single text, at most [`MAX_BATCH_CHARS`] characters.
fn batches<S: AsRef<str>>(texts: &[S]) -> Vec<&[S]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = 0;
    for (i, text) in texts.iter().enumerate() {
        let len = text.as_ref().chars().count();
        let full = i - start == MAX_BATCH || (i > start && chars + len > MAX_BATCH_CHARS);
        if full {
            out.push(&texts[start..i]);
            start = i;
            chars = 0;
        }
        chars += len;
    }
    if start < texts.len() {
        out.push(&texts[start..]);
    }
    out
}

/// The vectors of an OpenAI-format reply sorted by `index`, which must cover `0..count`
/// exactly once each.
fn in_index_order(mut data: Vec<OpenAiItem>, count: usize) -> Result<Vec<Vec<f32>>, String> {
    if data.len() != count {
        return Err(format!(
            "{} {} sent but {} came back",
            crate::output::count(count, "text"),
            if count == 1 { "was" } else { "were" },
            crate::output::count(data.len(), "embedding")
        ));
    }
    data.sort_by_key(|item| item.index);
    for (expected, item) in data.iter().enumerate() {
        if item.index != expected {
            return Err(format!(
                "the indexes are not 0..{count} once each (index {expected} is missing)"
            ));
        }
    }
    Ok(data.into_iter().map(|item| item.embedding).collect())
}

/// Checks one batch's vectors: `count` of them, none empty, all of one dimension (the same as
/// earlier batches', kept in `dims`), every value finite. `offset` is the number of texts
/// before the batch, so that messages count from the first text of the call.
fn check(
    vectors: &[Vec<f32>],
    count: usize,
    offset: usize,
    dims: &mut Option<usize>,
) -> Result<(), String> {
    if vectors.len() != count {
        return Err(format!(
            "{} {} sent but {} came back",
            crate::output::count(count, "text"),
            if count == 1 { "was" } else { "were" },
            crate::output::count(vectors.len(), "embedding")
        ));
    }
    for (i, vector) in vectors.iter().enumerate() {
        let i = offset + i;
        if vector.is_empty() {
            return Err(format!("embedding {i} is empty"));
        }
        match *dims {
            None => *dims = Some(vector.len()),
            Some(d) if d != vector.len() => {
                return Err(format!(
                    "embedding {i} has {} dimensions where the others have {d}",
                    vector.len()
                ));
            }
            Some(_) => {}
        }
        if let Some(j) = vector.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "embedding {i} has a value out of range at position {j}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Against mockito servers on 127.0.0.1 answering in each API's real shape; no test
    //! touches the network.

    use std::time::{Duration, Instant};

    use mockito::{Matcher, Server};
    use serde_json::{Value, json};

    use super::*;

    fn config(provider: &str, base_url: &str, model: &str, api_key_env: &str) -> Embed {
        Embed {
            provider: provider.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: api_key_env.into(),
            timeout_secs: 5,
        }
    }

    use crate::provider::http::testing::{assert_bad_replies, no_env, settings, trickle};

    fn client_for(provider: &str, server: &Server) -> EmbedClient {
        let config = config(provider, &server.url(), "m", "");
        EmbedClient::with_settings(&config, &settings(Duration::from_secs(5)), &no_env).unwrap()
    }

    /// An OpenAI-format reply to `request`: each text `tN` gets the vector `[N, 1, -1]`,
    /// listed in reverse order, as a server may.
    fn openai_reply(request: &mockito::Request) -> Vec<u8> {
        let request: Value = serde_json::from_slice(request.body().unwrap()).unwrap();
        let input = request["input"].as_array().unwrap();
        let mut data: Vec<Value> = input
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let n: f32 = text.as_str().unwrap()[1..].parse().unwrap();
                json!({"object": "embedding", "index": index, "embedding": [n, 1.0, -1.0]})
            })
            .collect();
        data.reverse();
        let reply = json!({
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 8, "total_tokens": 8}
        });
        serde_json::to_vec(&reply).unwrap()
    }

    #[test]
    fn ollama_embeds_in_order() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/embed")
            .match_header("content-type", "application/json")
            .match_header("authorization", Matcher::Missing)
            .match_body(Matcher::Json(
                json!({"model": "nomic-embed-text", "input": ["a", "b"]}),
            ))
            .with_header("content-type", "application/json")
            .with_body(
                r#"{"model":"nomic-embed-text","embeddings":[[0.1,-0.2,3e-2],[1,2,3]],
                    "total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}"#,
            )
            .expect(1)
            .create();
        let config = config("ollama", &server.url(), "nomic-embed-text", "");
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_secs(5)), &no_env)
                .unwrap();
        assert_eq!(client.model_id(), "ollama:nomic-embed-text");
        assert_eq!(model_id(&config), "ollama:nomic-embed-text");

        let out = client.embed(&["a", "b"], InputType::Document).unwrap();
        assert_eq!(
            out.vectors,
            vec![vec![0.1, -0.2, 0.03], vec![1.0, 2.0, 3.0]]
        );
        assert_eq!(out.calls.len(), 1);
        let call = &out.calls[0];
        assert_eq!(
            (call.provider, call.attempts, call.status),
            ("ollama", 1, 200)
        );
        assert_eq!(call.url, format!("{}/api/embed", server.url()));
        mock.assert();
    }

    #[test]
    fn openai_batches_large_inputs_and_sorts_by_index() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .match_header("authorization", Matcher::Missing)
            // The OpenAI format takes no input_type.
            .match_body(Matcher::Regex(
                r#"^\{"model":"m","input":\["t\d+"(,"t\d+")*\]\}$"#.into(),
            ))
            .with_header("content-type", "application/json")
            .with_body_from_request(openai_reply)
            .expect(3)
            .create();
        let texts: Vec<String> = (0..300).map(|n| format!("t{n}")).collect();
        let out = client_for("openai", &server)
            .embed(&texts, InputType::Query)
            .unwrap();
        assert_eq!(out.vectors.len(), 300);
        for (n, vector) in out.vectors.iter().enumerate() {
            assert_eq!(vector, &vec![n as f32, 1.0, -1.0], "text {n}");
        }
        let sizes: Vec<usize> = out
            .calls
            .iter()
            .map(|c| c.attempts)
            .map(|a| a as usize)
            .collect();
        assert_eq!(sizes, vec![1, 1, 1]);
        mock.assert();
    }

    #[test]
    fn voyage_sends_the_input_type_and_the_key() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .match_header("authorization", "Bearer pa-test-key-20")
            .match_body(Matcher::Json(
                json!({"model": "voyage-3.5", "input": ["where is the pager?"],
                        "input_type": "query"}),
            ))
            .with_header("content-type", "application/json")
            .with_body(
                r#"{"object":"list","data":[{"object":"embedding","embedding":[0.5,0.25],
                    "index":0}],"model":"voyage-3.5","usage":{"total_tokens":6}}"#,
            )
            .expect(1)
            .create();
        let config = config("voyage", &server.url(), "voyage-3.5", "CAIRN_TEST_KEY_20");
        let env = |var: &str| (var == "CAIRN_TEST_KEY_20").then(|| "pa-test-key-20".into());
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_secs(5)), &env).unwrap();
        let out = client
            .embed(&["where is the pager?"], InputType::Query)
            .unwrap();
        assert_eq!(out.vectors, vec![vec![0.5, 0.25]]);
        assert!(!format!("{client:?}").contains("pa-test-key"), "{client:?}");
        mock.assert();
    }

    #[test]
    fn voyage_documents_are_marked_as_documents() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .match_body(Matcher::PartialJson(json!({"input_type": "document"})))
            .with_body(r#"{"data":[{"index":0,"embedding":[1.0]}]}"#)
            .expect(1)
            .create();
        client_for("voyage", &server)
            .embed(&["x"], InputType::Document)
            .unwrap();
        mock.assert();
    }

    #[test]
    fn openai_sends_the_key_from_the_named_variable() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .match_header("authorization", "Bearer sk-test-key-21")
            .with_body(r#"{"data":[{"index":0,"embedding":[1.0,2.0]}]}"#)
            .expect(1)
            .create();
        let config = config(
            "openai",
            &format!("{}/v1", server.url()),
            "m",
            "CAIRN_TEST_KEY_21",
        );
        let env = |var: &str| (var == "CAIRN_TEST_KEY_21").then(|| "sk-test-key-21".into());
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_secs(5)), &env).unwrap();
        assert_eq!(
            client.embed(&["x"], InputType::Document).unwrap().vectors,
            [[1.0, 2.0]]
        );
        mock.assert();
    }

    #[test]
    fn a_named_but_missing_key_variable_is_a_clear_error() {
        let config = config(
            "openai",
            "",
            "text-embedding-3-small",
            "CAIRN_TEST_KEY_UNSET_22",
        );
        let err = EmbedClient::new(&config).unwrap_err();
        assert!(matches!(err, Error::MissingKey { .. }), "{err}");
        assert!(err.to_string().contains("CAIRN_TEST_KEY_UNSET_22"), "{err}");
    }

    #[test]
    fn a_429_is_retried_and_counted() {
        let mut server = Server::new();
        let limited = server
            .mock("POST", "/api/embed")
            .with_status(429)
            // Asks for a second; the cap (50 ms here) wins.
            .with_header("retry-after", "1")
            .with_body(r#"{"error":"too many requests"}"#)
            .expect(1)
            .create();
        let ok = server
            .mock("POST", "/api/embed")
            .with_body(r#"{"embeddings":[[1.0,0.0]]}"#)
            .expect(1)
            .create();
        let started = Instant::now();
        let out = client_for("ollama", &server)
            .embed(&["a"], InputType::Document)
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.vectors, [[1.0, 0.0]]);
        assert_eq!((out.calls[0].attempts, out.calls[0].status), (2, 200));
        limited.assert();
        ok.assert();
    }

    #[test]
    fn a_500_is_retried_three_times_then_reported() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .with_status(500)
            .with_body(
                "{\"error\": {\"message\": \"The server had an error\",\n  \"type\": \"x\"}}",
            )
            .expect(3)
            .create();
        let err = client_for("openai", &server)
            .embed(&["a"], InputType::Document)
            .unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(500), 3), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "openai: POST {}/v1/embeddings answered HTTP 500 after 3 attempts: {}",
                server.url(),
                r#"{"error": {"message": "The server had an error", "type": "x"}}"#
            )
        );
        mock.assert();
    }

    #[test]
    fn a_401_is_not_retried_and_says_where_the_key_is() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/v1/embeddings")
            .with_status(401)
            .with_body(r#"{"error":{"message":"Incorrect API key provided: sk-wrong-23."}}"#)
            .expect(1)
            .create();
        let config = config("openai", &server.url(), "m", "CAIRN_TEST_KEY_23");
        let env = |_: &str| Some("sk-wrong-23".into());
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_secs(5)), &env).unwrap();
        let err = client.embed(&["a"], InputType::Document).unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(401), 1), "{err:?}");
        assert!(!err.to_string().contains("sk-wrong"), "{err}");
        assert!(err.to_string().contains("<hidden>"), "{err}");
        assert_eq!(
            err.fix().unwrap(),
            "check the API key in the environment variable CAIRN_TEST_KEY_23"
        );
        mock.assert();
    }

    #[test]
    fn redirects_are_reported_not_followed() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/embed")
            .with_status(307)
            .with_header("location", "http://127.0.0.1:9/elsewhere")
            .expect(1)
            .create();
        let err = client_for("ollama", &server)
            .embed(&["a"], InputType::Document)
            .unwrap_err();
        assert_eq!((err.status(), err.attempts()), (Some(307), 1), "{err:?}");
        mock.assert();
    }

    #[test]
    fn a_slow_server_times_out_after_bounded_attempts() {
        let mut server = Server::new();
        let mock = server
            .mock("POST", "/api/embed")
            // The timeout is for the whole reply, not between bytes.
            .with_chunked_body(|w| trickle(w, br#"{"embeddings":[[1.0]]}"#))
            .expect(3)
            .create();
        let config = config("ollama", &server.url(), "m", "");
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_millis(300)), &no_env)
                .unwrap();
        let started = Instant::now();
        let err = client.embed(&["a"], InputType::Document).unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(err, Error::Transport { .. }) && err.timed_out(),
            "{err:?}"
        );
        assert_eq!(err.attempts(), 3);
        assert!(
            err.to_string().contains("timed out after 3 attempts"),
            "{err}"
        );
        // Three attempts of 300 ms and two short waits; one whole slow reply would be 3 s.
        assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
        mock.assert();
    }

    #[test]
    fn a_refused_connection_is_retried_then_reported() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let config = config("ollama", &format!("http://127.0.0.1:{port}"), "m", "");
        let client =
            EmbedClient::with_settings(&config, &settings(Duration::from_secs(2)), &no_env)
                .unwrap();
        let err = client.embed(&["a"], InputType::Document).unwrap_err();
        assert!(
            matches!(err, Error::Transport { .. }) && !err.timed_out(),
            "{err:?}"
        );
        assert_eq!(err.attempts(), 3);
        assert!(err.to_string().contains("could not connect"), "{err}");
    }

    /// Each bad reply is an error for the whole call and is not retried.
    #[test]
    fn bad_replies_are_errors() {
        let cases = [
            (
                "ollama",
                r#"{"embeddings": [[0.1, 0.2]"#,
                "not the expected JSON",
            ),
            (
                "ollama",
                "<html>502 Bad Gateway</html>",
                "not the expected JSON",
            ),
            (
                "ollama",
                r#"{"embedding": [0.1, 0.2]}"#,
                "missing field `embeddings`",
            ),
            (
                "ollama",
                r#"{"embeddings": [[0.1, 0.2]]}"#,
                "2 texts were sent but 1",
            ),
            (
                "ollama",
                r#"{"embeddings": [[0.1, 0.2], [0.3]]}"#,
                "embedding 1 has 1 dimensions",
            ),
            (
                "ollama",
                r#"{"embeddings": [[0.1, "0.2"], [0.3, 0.4]]}"#,
                "invalid type: string",
            ),
            (
                "ollama",
                r#"{"embeddings": [[0.1, null], [0.3, 0.4]]}"#,
                "invalid type: null",
            ),
            (
                "ollama",
                r#"{"embeddings": [[], []]}"#,
                "embedding 0 is empty",
            ),
            ("ollama", r#"{"embeddings": [[1e300, 1], [1, 1]]}"#, ""),
            (
                "openai",
                r#"{"data": [{"index": 0, "embedding": [1.0]}]}"#,
                "2 texts were sent",
            ),
            (
                "openai",
                r#"{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}"#,
                "index 1 is missing",
            ),
            (
                "openai",
                r#"{"data": [{"index": 0, "embedding": [1.0]},
                            {"index": 1, "embedding": [2.0, 3.0]}]}"#,
                "embedding 1 has 2 dimensions where the others have 1",
            ),
            (
                "openai",
                r#"{"data": [{"index": 0, "embedding": "AAAAAA=="},
                            {"index": 1, "embedding": "AAAAAA=="}]}"#,
                "invalid type: string",
            ),
        ];
        assert_bad_replies(
            &cases,
            |provider| Api::from_name(provider).unwrap().path(),
            |provider, server| client_for(provider, server).embed(&["a", "b"], InputType::Document),
        );
    }

    #[test]
    fn dimensions_must_agree_across_batches() {
        let mut server = Server::new();
        let first = server
            .mock("POST", "/api/embed")
            .with_body_from_request(|request| {
                let request: Value = serde_json::from_slice(request.body().unwrap()).unwrap();
                let n = request["input"].as_array().unwrap().len();
                serde_json::to_vec(&json!({"embeddings": vec![[1.0, 2.0]; n]})).unwrap()
            })
            .expect(1)
            .create();
        let second = server
            .mock("POST", "/api/embed")
            .with_body(r#"{"embeddings":[[1.0]]}"#)
            .create();
        let texts = vec!["x"; MAX_BATCH + 1];
        let err = client_for("ollama", &server)
            .embed(&texts, InputType::Document)
            .unwrap_err();
        assert!(
            err.to_string().contains("embedding 128 has 1 dimensions"),
            "{err}"
        );
        first.assert();
        second.assert();
    }

    #[test]
    fn no_texts_no_request() {
        let server = Server::new();
        let out = client_for("ollama", &server)
            .embed(&[] as &[&str], InputType::Query)
            .unwrap();
        assert!(out.vectors.is_empty() && out.calls.is_empty());
    }

    #[test]
    fn batches_respect_count_and_size() {
        let sizes = |texts: &[String]| batches(texts).iter().map(|b| b.len()).collect::<Vec<_>>();
        let short: Vec<String> = vec!["x".into(); 300];
        assert_eq!(sizes(&short), [128, 128, 44]);
        assert_eq!(sizes(&short[..128]), [128]);
        assert_eq!(sizes(&[]), Vec::<usize>::new());
        let big = "y".repeat(MAX_BATCH_CHARS / 2);
        let long: Vec<String> = vec![big.clone(), big.clone(), big.clone(), "z".into()];
        assert_eq!(sizes(&long), [2, 2]);
        // A text longer than the budget still goes, alone.
        let huge: Vec<String> = vec!["a".into(), "h".repeat(MAX_BATCH_CHARS + 1), "b".into()];
        assert_eq!(sizes(&huge), [1, 1, 1]);
    }

    #[test]
    fn configuration_errors_say_what_to_fix() {
        let env = &no_env;
        let quick = settings(Duration::from_secs(1));
        let err =
            EmbedClient::with_settings(&config("builtin", "", "m", ""), &quick, env).unwrap_err();
        assert!(matches!(err, Error::NotHttp { .. }), "{err}");
        let err =
            EmbedClient::with_settings(&config("cohere", "", "m", ""), &quick, env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown embed provider `cohere` (expected one of: builtin, ollama, openai, voyage)"
        );
        let err =
            EmbedClient::with_settings(&config("ollama", "", " ", ""), &quick, env).unwrap_err();
        assert!(matches!(err, Error::NoModel { .. }), "{err}");
        assert!(
            err.fix().unwrap().contains("`model` under [embed]"),
            "{:?}",
            err.fix()
        );
        let err =
            EmbedClient::with_settings(&config("ollama", "localhost:11434", "m", ""), &quick, env)
                .unwrap_err();
        assert!(matches!(err, Error::BadUrl { .. }), "{err}");
    }

    #[test]
    fn defaults_point_at_the_public_apis() {
        let env = &no_env;
        let quick = settings(Duration::from_secs(1));
        let url = |provider| {
            let client = EmbedClient::with_settings(&config(provider, "", "m", ""), &quick, env);
            client.unwrap().url().to_string()
        };
        assert_eq!(url("ollama"), "http://localhost:11434/api/embed");
        assert_eq!(url("openai"), "https://api.openai.com/v1/embeddings");
        assert_eq!(url("voyage"), "https://api.voyageai.com/v1/embeddings");
    }
}
