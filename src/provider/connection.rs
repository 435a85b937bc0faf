//! A configured HTTP provider as every client holds it: the model, the endpoint and the
//! HTTP client, built the same way from any section of cairn.toml.
//!
//! [`Connection::open`] does the checks both `[llm]` and `[embed]` need, in their order: a
//! model must be named, `base_url` must be usable (or the API's default is taken), and the key
//! is read from the variable `api_key_env` names. Requests go through
//! [`Connection::post_json`]; a reply of the right JSON shape that still cannot be used is
//! reported with [`Connection::malformed`], naming the provider and the URL.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Error;
use super::http::{ApiKey, Auth, Call, Client, Endpoint, Env, Settings};

/// Where and how one provider is reached, as its client's API knows it.
pub struct Wiring<'a> {
    /// The cairn.toml section (`llm`, `embed`), for messages saying what to fix.
    pub section: &'static str,
    /// The provider's name (`openai`, `ollama`, …).
    pub provider: &'static str,
    /// The configured settings: `model`, `base_url`, `api_key_env`.
    pub model: &'a str,
    pub base_url: &'a str,
    pub api_key_env: &'a str,
    /// The API's own base URL (used when `base_url` is empty) and request path.
    pub default_base_url: &'static str,
    pub path: &'static str,
    /// How the key is sent.
    pub auth: Auth,
}

/// A provider ready to be asked. Cheap to keep: its client pools its connections.
#[derive(Debug, Clone)]
pub struct Connection {
    model: String,
    endpoint: Endpoint,
    client: Client,
}

impl Connection {
    /// Checks `wiring` and builds the client with `settings`, reading the key through `env`.
    pub fn open(wiring: &Wiring<'_>, settings: &Settings, env: Env<'_>) -> Result<Self, Error> {
        let Wiring {
            section, provider, ..
        } = *wiring;
        let model = wiring.model.trim();
        if model.is_empty() {
            return Err(Error::NoModel { section, provider });
        }
        let endpoint = Endpoint::join(
            section,
            provider,
            wiring.base_url,
            wiring.default_base_url,
            wiring.path,
        )?;
        let key = ApiKey::lookup(section, provider, wiring.api_key_env, env)?;
        let client = Client::new(section, provider, settings, key, wiring.auth)?;
        Ok(Connection {
            model: model.to_string(),
            endpoint,
            client,
        })
    }

    /// The connection, sending the header `name: value` with every request as well.
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.client = self.client.with_header(name, value);
        self
    }

    /// The configured model, trimmed.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The URL requests go to, without credentials.
    pub fn url(&self) -> &str {
        self.endpoint.shown()
    }

    /// POSTs `request` as JSON and parses the reply as `T`, with the client's retries.
    pub fn post_json<T: DeserializeOwned>(
        &self,
        request: &impl Serialize,
    ) -> Result<(T, Call), Error> {
        self.client.post_json(&self.endpoint, request)
    }

    /// The error for a reply, read by `call`, that parsed but cannot be used, and why.
    pub fn malformed(&self, call: &Call, reason: String) -> Error {
        Error::Reply {
            provider: self.client.provider(),
            url: self.endpoint.shown().to_string(),
            attempts: call.attempts,
            reason,
        }
    }
}
