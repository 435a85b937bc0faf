//! HTTP plumbing shared by every provider: one blocking client, JSON POSTs, retries, keys.
//!
//! A request is tried up to [`Retry::attempts`] times. It is tried again after a timeout, a
//! connection error, a broken reply, HTTP 429 or any 5xx; any other status is final (a 401
//! will not get better by asking again), and redirects are not followed. Waits double from
//! [`Retry::base_delay`] (200 ms, then 400 ms, …); a `Retry-After` in seconds is honoured, but
//! no wait exceeds [`Retry::max_delay`]. The timeout applies to each attempt (connect, send
//! and the whole reply), so the worst case is `attempts × timeout` plus the waits; a client
//! given a [`Settings::budget`] (the query rewrite's `rewrite_timeout_ms`) ends the whole call,
//! retries and waits included, when it runs out: each attempt gets at most what is left, and no
//! retry is waited for that would start after it.
//!
//! The key is read once from the environment variable that `cairn.toml` names, kept in an
//! [`ApiKey`] whose `Debug` hides it, sent as a sensitive header, and blanked out of any reply
//! body quoted in an error. URLs in errors and [`Call`] records carry no user, password or
//! query.

use std::ffi::OsString;
use std::io::Read;
use std::sync::Once;
use std::time::{Duration, Instant};

use reqwest::blocking::Response;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Error;

/// Replies larger than this are refused rather than held in memory (a batch of 128 vectors
/// of 3,072 dimensions is about 8 MiB of JSON).
const MAX_REPLY_BYTES: u64 = 64 * 1024 * 1024;

/// How much of an error reply is quoted in the error message, in characters.
const EXCERPT_CHARS: usize = 300;

/// How many times, and how patiently, a request is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The wait before the second attempt; each later wait doubles it.
    pub base_delay: Duration,
    /// No wait is longer, whatever `Retry-After` asks for.
    pub max_delay: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 3,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl Retry {
    /// The wait after failed attempt number `attempt` (1-based), given the reply's
    /// `Retry-After`, if any.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let doublings = attempt.saturating_sub(1).min(16);
        let backoff = self.base_delay.saturating_mul(1 << doublings);
        backoff
            .max(retry_after.unwrap_or_default())
            .min(self.max_delay)
    }
}

/// How a client talks: its per-attempt timeout and its retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// For each attempt: connecting, sending and reading the whole reply.
    pub timeout: Duration,
    pub retry: Retry,
    /// Use the `HTTP(S)_PROXY` / `NO_PROXY` environment variables (tests turn this off, so
    /// that a proxy on the machine can never see their loopback requests).
    pub env_proxy: bool,
    /// The whole call, every attempt and wait included, ends within this (a call that runs
    /// out is a timed-out [`Error::Transport`], or the last failure when a wait would pass it).
    /// `None`: only the per-attempt timeout and the retries bound it.
    pub budget: Option<Duration>,
}

impl Settings {
    /// The settings for a provider configured with `timeout_secs` (0 is taken as 1).
    pub fn from_timeout_secs(timeout_secs: u64) -> Self {
        Settings {
            timeout: Duration::from_secs(timeout_secs.max(1)),
            retry: Retry::default(),
            env_proxy: true,
            budget: None,
        }
    }

    /// The settings for a call that must end within `budget`, retries included (each attempt
    /// is also held to it).
    pub fn within(budget: Duration) -> Self {
        Settings {
            timeout: budget,
            retry: Retry::default(),
            env_proxy: true,
            budget: Some(budget),
        }
    }
}

/// How the key is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY` (OpenAI, Voyage, Ollama behind a proxy).
    Bearer,
    /// The key alone in the named header (Anthropic's `x-api-key`).
    Header(&'static str),
}

/// How environment variables are read: [`process_env`], or a map in tests.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process's environment.
pub fn process_env(var: &str) -> Option<OsString> {
    std::env::var_os(var)
}

/// An API key, read from the environment variable that the configuration names.
#[derive(Clone)]
pub struct ApiKey {
    var: String,
    value: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({} = <hidden>)", self.var)
    }
}

impl ApiKey {
    /// The key in environment variable `var`; `None` when `var` is empty (no key is used).
    /// A variable that is named but not set, or set to nothing, is an error.
    pub fn from_env(
        section: &'static str,
        provider: &'static str,
        var: &str,
    ) -> Result<Option<ApiKey>, Error> {
        ApiKey::lookup(section, provider, var, &process_env)
    }

    /// As [`ApiKey::from_env`], reading variables through `env` (tests pass a map: setting
    /// variables in a running, threaded process is unsafe in Rust 2024).
    pub fn lookup(
        section: &'static str,
        provider: &'static str,
        var: &str,
        env: Env<'_>,
    ) -> Result<Option<ApiKey>, Error> {
        let var = var.trim();
        if var.is_empty() {
            return Ok(None);
        }
        let error = |missing: bool| match missing {
            true => Error::MissingKey {
                section,
                provider,
                var: var.to_string(),
            },
            false => Error::BadKey {
                section,
                provider,
                var: var.to_string(),
            },
        };
        let value = env(var).ok_or_else(|| error(true))?;
        let value = value.into_string().map_err(|_| error(false))?;
        match value.trim() {
            "" => Err(error(false)),
            value => Ok(Some(ApiKey {
                var: var.to_string(),
                value: value.to_string(),
            })),
        }
    }

    /// The name of the variable the key came from (safe to show).
    pub fn var(&self) -> &str {
        &self.var
    }
}

/// A validated URL to POST to, with the form of it that is safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    url: Url,
    shown: String,
}

impl Endpoint {
    /// `base` (or `default_base` when `base` is blank) followed by `path`. A `base` that
    /// already ends with `path`'s first segment (`http://host:8080/v1`, as llama.cpp and LM
    /// Studio document it) is not given that segment twice.
    pub fn join(
        section: &'static str,
        provider: &'static str,
        base: &str,
        default_base: &str,
        path: &str,
    ) -> Result<Endpoint, Error> {
        let base = match base.trim() {
            "" => default_base,
            base => base,
        };
        let bad = |reason: String| Error::BadUrl {
            section,
            provider,
            url: redact_url_text(base),
            reason,
        };
        let mut url = Url::parse(base).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!(
                "the scheme is `{}`, not http or https",
                url.scheme()
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("it has no host".to_string()));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("it has a query or fragment".to_string()));
        }
        let mut prefix = url.path().trim_end_matches('/').to_string();
        let path = path.trim_start_matches('/');
        let suffix = match path.split_once('/') {
            Some((head, rest)) if !head.is_empty() && prefix.ends_with(&format!("/{head}")) => rest,
            _ => path,
        };
        prefix.push('/');
        prefix.push_str(suffix);
        url.set_path(&prefix);
        let shown = shown_url(&url);
        Ok(Endpoint { url, shown })
    }

    /// The URL without user, password, query or fragment: what errors and telemetry show.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

fn shown_url(url: &Url) -> String {
    let mut shown = url.clone();
    // Both fail only for URLs that cannot have credentials, which then have none to hide.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// A URL the user typed that did not parse, without its user info, query or fragment.
fn redact_url_text(text: &str) -> String {
    let text = text.split(['?', '#']).next().unwrap_or_default();
    match (text.find("://"), text.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://…@{}", &text[..scheme_end], &text[at + 1..])
        }
        _ => text.to_string(),
    }
}

/// What telemetry needs to know about one HTTP request that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub provider: &'static str,
    /// The URL as [`Endpoint::shown`] gives it.
    pub url: String,
    /// Attempts made, 1 when the first one worked.
    pub attempts: u32,
    /// From the first attempt to the parsed reply, waits included.
    pub duration: Duration,
    /// The final HTTP status.
    pub status: u16,
    pub request_bytes: usize,
    pub reply_bytes: usize,
}

impl Call {
    /// The call as telemetry `metadata`.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "provider": self.provider,
            "url": self.url,
            "attempts": self.attempts,
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "status": self.status,
            "request_bytes": self.request_bytes,
            "reply_bytes": self.reply_bytes,
        })
    }
}

/// One provider's blocking HTTP client. Cheap to keep: it pools its connections.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    provider: &'static str,
    section: &'static str,
    timeout: Duration,
    retry: Retry,
    budget: Option<Duration>,
    key: Option<ApiKey>,
    auth: Option<(HeaderName, HeaderValue)>,
    /// Fixed headers every request carries (Anthropic's `anthropic-version`).
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// What one attempt came back with.
enum Attempt {
    /// A whole reply was read.
    Reply {
        status: StatusCode,
        retry_after: Option<Duration>,
        body: Vec<u8>,
    },
    /// The request failed, or the reply broke off.
    Failed(Failure),
    /// The reply was larger than [`MAX_REPLY_BYTES`].
    TooLarge,
}

enum Failure {
    Http(reqwest::Error),
    Read(std::io::Error),
}

impl Failure {
    fn timed_out(&self) -> bool {
        match self {
            Failure::Http(err) => err.is_timeout(),
            // reqwest's reader wraps its own error in the io::Error.
            Failure::Read(err) => {
                err.kind() == std::io::ErrorKind::TimedOut
                    || err
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
                        .is_some_and(reqwest::Error::is_timeout)
            }
        }
    }

    /// Errors in building the request come back the same every time.
    fn retryable(&self) -> bool {
        !matches!(self, Failure::Http(err) if err.is_builder())
    }
}

impl Client {
    /// A client for `provider` (a name for messages: `ollama`, `openai`, …) configured in
    /// `[section]` of cairn.toml, sending `key` (if any) as `auth` says.
    pub fn new(
        section: &'static str,
        provider: &'static str,
        settings: &Settings,
        key: Option<ApiKey>,
        auth: Auth,
    ) -> Result<Client, Error> {
        install_crypto_provider();
        let mut builder = reqwest::blocking::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            // An API that redirects a POST is misconfigured; following would turn it into a
            // GET and could carry the key elsewhere. The 3xx is reported instead.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("cairn/", env!("CARGO_PKG_VERSION")));
        if !settings.env_proxy {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| Error::Client {
            provider,
            message: root_cause(&e.without_url()),
        })?;
        let auth = match &key {
            None => None,
            Some(key) => {
                let (name, value) = match auth {
                    Auth::Bearer => (AUTHORIZATION, format!("Bearer {}", key.value)),
                    Auth::Header(name) => (HeaderName::from_static(name), key.value.clone()),
                };
                let mut value = HeaderValue::from_str(&value).map_err(|_| Error::BadKey {
                    section,
                    provider,
                    var: key.var.clone(),
                })?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let retry = Retry {
            attempts: settings.retry.attempts.max(1),
            ..settings.retry
        };
        Ok(Client {
            http,
            provider,
            section,
            timeout: settings.timeout,
            retry,
            budget: settings.budget,
            key,
            auth,
            headers: Vec::new(),
        })
    }

    /// The client, sending the header `name: value` with every request as well.
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Client {
        self.headers.push((
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        ));
        self
    }

    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// POSTs `body` as JSON to `endpoint` and parses a 2xx reply as `T`, retrying as the
    /// module documentation says. A reply that is not JSON of the shape `T` is an error
    /// ([`Error::Reply`]) and is not retried.
    pub fn post_json<T: DeserializeOwned>(
        &self,
        endpoint: &Endpoint,
        body: &impl Serialize,
    ) -> Result<(T, Call), Error> {
        let started = Instant::now();
        let body = serde_json::to_vec(body).map_err(|e| Error::Client {
            provider: self.provider,
            message: format!("the request does not serialize: {e}"),
        })?;
        let until = self.budget.map(|b| started + b);
        // What is left of the budget (the per-attempt timeout when there is none).
        let left = || match until {
            Some(until) => until.saturating_duration_since(Instant::now()),
            None => self.timeout,
        };
        // Whether a wait of `delay` would start the next attempt too late to do anything.
        let too_late = |delay: Duration| until.is_some() && left() <= delay;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.retry.attempts;
            let timeout = self.timeout.min(left());
            if timeout.is_zero() {
                return Err(self.out_of_budget(endpoint, attempt - 1));
            }
            match self.attempt(endpoint, &body, timeout) {
                Attempt::Reply {
                    status,
                    body: reply,
                    ..
                } if status.is_success() => {
                    let parsed = serde_json::from_slice(&reply).map_err(|e| Error::Reply {
                        provider: self.provider,
                        url: endpoint.shown.clone(),
                        attempts: attempt,
                        reason: format!("not the expected JSON ({e}): {}", self.excerpt(&reply)),
                    })?;
                    let call = Call {
                        provider: self.provider,
                        url: endpoint.shown.clone(),
                        attempts: attempt,
                        duration: started.elapsed(),
                        status: status.as_u16(),
                        request_bytes: body.len(),
                        reply_bytes: reply.len(),
                    };
                    return Ok((parsed, call));
                }
                Attempt::Reply {
                    status,
                    retry_after,
                    body: reply,
                } => {
                    let delay = self.retry.delay(attempt, retry_after);
                    if last || !retryable_status(status) || too_late(delay) {
                        return Err(Error::Status {
                            provider: self.provider,
                            url: endpoint.shown.clone(),
                            status: status.as_u16(),
                            attempts: attempt,
                            excerpt: self.excerpt(&reply),
                            key_var: self.key.as_ref().map(|k| k.var.clone()),
                            section: self.section,
                        });
                    }
                    std::thread::sleep(delay);
                }
                Attempt::Failed(failure) => {
                    let delay = self.retry.delay(attempt, None);
                    if last || !failure.retryable() || too_late(delay) {
                        return Err(self.transport_error(endpoint, attempt, &failure, timeout));
                    }
                    std::thread::sleep(delay);
                }
                Attempt::TooLarge => {
                    return Err(Error::Reply {
                        provider: self.provider,
                        url: endpoint.shown.clone(),
                        attempts: attempt,
                        reason: format!("the reply is larger than {MAX_REPLY_BYTES} bytes"),
                    });
                }
            }
        }
    }

    fn attempt(&self, endpoint: &Endpoint, body: &[u8], timeout: Duration) -> Attempt {
        let mut request = self
            .http
            .post(endpoint.url.clone())
            // The client's own timeout bounds each wait for bytes; this one, set per request,
            // bounds the whole exchange (connecting included), so a server that trickles its
            // reply is cut off too; within a budget it is what the budget has left.
            .timeout(timeout)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        for (name, value) in self.headers.iter().chain(&self.auth) {
            request = request.header(name, value.clone());
        }
        let response = match request.send() {
            Ok(response) => response,
            Err(err) => return Attempt::Failed(Failure::Http(err)),
        };
        let status = response.status();
        let retry_after = retry_after(&response);
        let mut body = Vec::new();
        match response.take(MAX_REPLY_BYTES + 1).read_to_end(&mut body) {
            Ok(_) if body.len() as u64 > MAX_REPLY_BYTES => Attempt::TooLarge,
            Ok(_) => Attempt::Reply {
                status,
                retry_after,
                body,
            },
            Err(err) => Attempt::Failed(Failure::Read(err)),
        }
    }

    /// The error of a call whose budget ran out before attempt `attempts + 1` could start.
    fn out_of_budget(&self, endpoint: &Endpoint, attempts: u32) -> Error {
        Error::Transport {
            provider: self.provider,
            url: endpoint.shown.clone(),
            attempts,
            timed_out: true,
            message: format!(
                "the budget of {:?} for the whole call ran out",
                self.budget.unwrap_or(self.timeout)
            ),
        }
    }

    fn transport_error(
        &self,
        endpoint: &Endpoint,
        attempts: u32,
        failure: &Failure,
        timeout: Duration,
    ) -> Error {
        let message = match failure {
            Failure::Http(err) if err.is_connect() => {
                format!("could not connect: {}", root_cause(err))
            }
            Failure::Http(err) => root_cause(err),
            Failure::Read(err) => format!("reading the reply: {}", root_cause(err)),
        };
        let message = match failure.timed_out() {
            true => match self.budget {
                Some(budget) => format!("{message} (budget {budget:?} for the whole call)"),
                None => format!("{message} (limit {timeout:?} per attempt)"),
            },
            false => message,
        };
        Error::Transport {
            provider: self.provider,
            url: endpoint.shown.clone(),
            attempts,
            timed_out: failure.timed_out(),
            message,
        }
    }

    /// The start of a reply body for an error message: one line, short, and without the key
    /// (some APIs quote the key they refused).
    fn excerpt(&self, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(key) = &self.key {
            text = text.replace(&key.value, "<hidden>");
        }
        if text.is_empty() {
            return "(empty body)".to_string();
        }
        match text.char_indices().nth(EXCERPT_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }
}

/// 429 and 5xx may pass; every other status is the server's final word.
pub fn retryable_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `Retry-After` in whole seconds (the HTTP-date form is rare from APIs and is ignored).
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The innermost cause: the useful part ("Connection refused (os error 111)"), and never the
/// URL, which the outer layers repeat with its query.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

/// rustls needs a process-wide crypto provider; cairn uses ring (no C toolchain beyond cc,
/// a fraction of aws-lc-rs's build time). Installing fails only if one is already installed,
/// which is as good.
pub(super) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_and_retry_after_is_capped() {
        let retry = Retry::default();
        let ms = Duration::from_millis;
        let cases = [
            (1, None, ms(200)),
            (2, None, ms(400)),
            (3, None, ms(800)),
            (1, Some(Duration::from_secs(2)), Duration::from_secs(2)),
            // A Retry-After shorter than the backoff does not shorten it.
            (2, Some(Duration::ZERO), ms(400)),
            // Nor may a server park us for a minute.
            (1, Some(Duration::from_secs(60)), Duration::from_secs(5)),
            (40, None, Duration::from_secs(5)),
        ];
        for (attempt, retry_after, want) in cases {
            assert_eq!(
                retry.delay(attempt, retry_after),
                want,
                "{attempt} {retry_after:?}"
            );
        }
    }

    #[test]
    fn only_429_and_5xx_are_retried() {
        let cases = [
            (429, true),
            (500, true),
            (502, true),
            (503, true),
            (400, false),
        ];
        let more = [
            (401, false),
            (403, false),
            (404, false),
            (422, false),
            (200, false),
        ];
        for (code, want) in cases.into_iter().chain(more) {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(retryable_status(status), want, "{code}");
        }
    }

    #[test]
    fn endpoints_join_base_and_path() {
        let cases = [
            (
                "",
                "http://localhost:11434",
                "/api/embed",
                "http://localhost:11434/api/embed",
            ),
            (
                "http://h:8080",
                "x:",
                "/v1/embeddings",
                "http://h:8080/v1/embeddings",
            ),
            (
                "http://h:8080/",
                "x:",
                "/v1/embeddings",
                "http://h:8080/v1/embeddings",
            ),
            // llama.cpp and LM Studio document their base URL with /v1.
            (
                "http://h:8080/v1",
                "x:",
                "/v1/embeddings",
                "http://h:8080/v1/embeddings",
            ),
            (
                "http://h:8080/v1/",
                "x:",
                "/v1/embeddings",
                "http://h:8080/v1/embeddings",
            ),
            (
                "https://proxy/ollama",
                "x:",
                "/api/embed",
                "https://proxy/ollama/api/embed",
            ),
            (
                "  ",
                "https://api.voyageai.com",
                "/v1/embeddings",
                "https://api.voyageai.com/v1/embeddings",
            ),
            // Credentials work but are never shown.
            (
                "https://me:secret@h/x",
                "x:",
                "/v1/embeddings",
                "https://h/x/v1/embeddings",
            ),
        ];
        for (base, default, path, want) in cases {
            let endpoint = Endpoint::join("embed", "test", base, default, path).unwrap();
            assert_eq!(endpoint.shown(), want, "{base:?}");
        }
    }

    #[test]
    fn bad_base_urls_are_refused_without_showing_secrets() {
        for base in [
            "localhost:11434",
            "ftp://h/",
            "http://",
            "not a url",
            "http://h/?key=sk-1",
        ] {
            let err = Endpoint::join("embed", "test", base, "x:", "/v1/embeddings").unwrap_err();
            assert!(matches!(err, Error::BadUrl { .. }), "{base}: {err}");
            assert!(!err.to_string().contains("sk-1"), "{err}");
        }
        let err = Endpoint::join("embed", "test", "http://me:pw@[bad", "x:", "/").unwrap_err();
        assert!(!err.to_string().contains("pw"), "{err}");
        assert!(err.to_string().contains("base_url"), "{err}");
    }

    #[test]
    fn keys_come_from_the_named_variable() {
        let env = |var: &str| match var {
            "CAIRN_TEST_KEY_10" => Some(OsString::from(" sk-test-10\n")),
            "CAIRN_TEST_KEY_11" => Some(OsString::from("")),
            _ => None,
        };
        assert!(
            ApiKey::lookup("embed", "openai", "", &env)
                .unwrap()
                .is_none()
        );
        let key = ApiKey::lookup("embed", "openai", "CAIRN_TEST_KEY_10", &env)
            .unwrap()
            .unwrap();
        assert_eq!(key.var(), "CAIRN_TEST_KEY_10");
        assert_eq!(key.value, "sk-test-10");
        assert!(!format!("{key:?}").contains("sk-test"), "{key:?}");

        let err = ApiKey::lookup("embed", "openai", "CAIRN_TEST_KEY_11", &env).unwrap_err();
        assert!(matches!(err, Error::BadKey { .. }), "{err}");
        let err = ApiKey::lookup("embed", "openai", "CAIRN_TEST_KEY_12", &env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "openai: environment variable CAIRN_TEST_KEY_12 (named by api_key_env) is not set"
        );
        assert!(
            err.fix().unwrap().contains("export CAIRN_TEST_KEY_12"),
            "{:?}",
            err.fix()
        );
    }

    #[test]
    fn a_missing_variable_in_the_real_environment_is_an_error() {
        // Never set anywhere: reading the process environment is safe, setting it is not.
        let err = ApiKey::from_env("embed", "voyage", "CAIRN_TEST_KEY_UNSET_13").unwrap_err();
        assert!(matches!(err, Error::MissingKey { .. }), "{err}");
    }

    #[test]
    fn a_key_that_cannot_be_a_header_is_refused_without_being_shown() {
        let env = |_: &str| Some(OsString::from("sk-bad\u{7f}key"));
        let key = ApiKey::lookup("embed", "openai", "CAIRN_TEST_KEY_14", &env).unwrap();
        let settings = Settings::from_timeout_secs(1);
        let err = Client::new("embed", "openai", &settings, key, Auth::Bearer).unwrap_err();
        assert!(matches!(err, Error::BadKey { .. }), "{err}");
        assert!(!err.to_string().contains("sk-bad"), "{err}");
    }

    #[test]
    fn excerpts_are_short_single_lines_without_the_key() {
        let env = |_: &str| Some(OsString::from("sk-secret-15"));
        let key = ApiKey::lookup("embed", "openai", "CAIRN_TEST_KEY_15", &env).unwrap();
        let settings = Settings::from_timeout_secs(1);
        let client = Client::new("embed", "openai", &settings, key, Auth::Bearer).unwrap();
        let body = "{\n  \"error\": \"Incorrect API key provided: sk-secret-15\"\n}";
        assert_eq!(
            client.excerpt(body.as_bytes()),
            r#"{ "error": "Incorrect API key provided: <hidden>" }"#
        );
        let long = "é".repeat(1000);
        let excerpt = client.excerpt(long.as_bytes());
        assert_eq!(excerpt.chars().count(), EXCERPT_CHARS + 1);
        assert_eq!(client.excerpt(b""), "(empty body)");
    }

    #[test]
    fn call_metadata_has_what_telemetry_needs() {
        let call = Call {
            provider: "ollama",
            url: "http://localhost:11434/api/embed".into(),
            attempts: 2,
            duration: Duration::from_millis(1234),
            status: 200,
            request_bytes: 10,
            reply_bytes: 20,
        };
        assert_eq!(
            call.metadata(),
            serde_json::json!({
                "provider": "ollama", "url": "http://localhost:11434/api/embed", "attempts": 2,
                "duration_ms": 1234, "status": 200, "request_bytes": 10, "reply_bytes": 20
            })
        );
    }
}

/// What the clients' tests share: short waits and no environment.
#[cfg(test)]
pub(crate) mod testing {
    use std::ffi::OsString;
    use std::time::Duration;

    use super::{Error, Retry, Settings};

    /// Short waits so that retry tests stay fast; no proxy, so loopback stays loopback.
    pub fn settings(timeout: Duration) -> Settings {
        Settings {
            timeout,
            retry: Retry {
                attempts: 3,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
            },
            env_proxy: false,
            budget: None,
        }
    }

    /// An environment with no variables.
    pub fn no_env(_: &str) -> Option<OsString> {
        None
    }

    /// A reply body that trickles in for 3 s, a space every 20 ms, then `body`. (A plain
    /// sleep would hold up mockito's single server thread; writing stops at once when the
    /// client hangs up.)
    pub fn trickle(w: &mut dyn std::io::Write, body: &[u8]) -> std::io::Result<()> {
        for _ in 0..150 {
            std::thread::sleep(Duration::from_millis(20));
            w.write_all(b" ")?;
        }
        w.write_all(body)
    }

    /// For each `(provider, body, want)`: a server that answers `body` once at `path(provider)`,
    /// and `ask(provider, server)` failing on it, without a retry, with a reply error that
    /// says `want`.
    pub fn assert_bad_replies<T: std::fmt::Debug>(
        cases: &[(&str, &str, &str)],
        path: impl Fn(&str) -> &'static str,
        ask: impl Fn(&str, &mockito::Server) -> Result<T, Error>,
    ) {
        for &(provider, body, want) in cases {
            let mut server = mockito::Server::new();
            let mock = server
                .mock("POST", path(provider))
                .with_body(body)
                .expect(1)
                .create();
            let err = ask(provider, &server).unwrap_err();
            assert!(
                matches!(err, Error::Reply { attempts: 1, .. }),
                "{body}: {err:?}"
            );
            assert!(err.to_string().contains(want), "{body}: {err}");
            mock.assert();
        }
    }
}
