//! A page or document fetched by URL (`cairn note URL`, `cairn library add URL`): one GET with
//! a timeout, a size cap and a few redirects, no retries (a person is waiting, and offline is
//! a normal state: the caller goes on without the page).
//!
//! Only `http` and `https` URLs are fetched. The body is read up to `max_bytes`; a larger one
//! is refused rather than cut, so that nothing half of a document is ever stored.

use std::io::Read;
use std::time::Duration;

/// What came back.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL after redirects.
    pub url: String,
    /// The `Content-Type` without parameters, lowercased (`text/html`), or empty.
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Why a fetch gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`{0}` is not an http or https URL")]
    Scheme(String),
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: larger than {max} bytes")]
    TooLarge { url: String, max: u64 },
}

/// GETs `url`, following at most 5 redirects, within `timeout` (connect and whole reply),
/// reading at most `max_bytes`.
pub fn get(url: &str, timeout: Duration, max_bytes: u64) -> Result<Fetched, Error> {
    let parsed = reqwest::Url::parse(url).map_err(|_| Error::Scheme(url.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::Scheme(url.to_string()));
    }
    // URLs in errors carry no user, password or query.
    let shown = {
        let mut u = parsed.clone();
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.set_query(None);
        u.to_string()
    };
    super::http::install_crypto_provider();
    let client = reqwest::blocking::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::limited(5))
        .user_agent(concat!("cairn/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Transport {
            url: shown.clone(),
            message: root_cause(&e),
        })?;
    let transport = |e: &dyn std::error::Error| Error::Transport {
        url: shown.clone(),
        message: root_cause(e),
    };
    let reply = client.get(parsed).send().map_err(|e| transport(&e))?;
    let status = reply.status();
    if !status.is_success() {
        return Err(Error::Status {
            url: shown,
            status: status.as_u16(),
        });
    }
    if reply.content_length().is_some_and(|n| n > max_bytes) {
        return Err(Error::TooLarge {
            url: shown,
            max: max_bytes,
        });
    }
    let final_url = reply.url().to_string();
    let content_type = reply
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let mut body = Vec::new();
    reply
        .take(max_bytes + 1)
        .read_to_end(&mut body)
        .map_err(|e| transport(&e))?;
    if body.len() as u64 > max_bytes {
        return Err(Error::TooLarge {
            url: shown,
            max: max_bytes,
        });
    }
    Ok(Fetched {
        url: final_url,
        content_type,
        body,
    })
}

fn root_cause(err: &dyn std::error::Error) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

#[cfg(test)]
mod tests {
    /// A note's URL may name its host in any script: url maps it to its ASCII form (IDNA)
    /// through `idna_adapter`, which Cargo.toml holds at 1.1 (unicode-rs) for the build's
    /// sake (docs/build.md). Its 1.0 stub would refuse such a host, and `get` with it.
    #[test]
    fn a_host_in_another_script_is_mapped_to_ascii() {
        let url = reqwest::Url::parse("https://Bücher.example/über").unwrap();
        assert_eq!(url.host_str(), Some("xn--bcher-kva.example"));
        let url = reqwest::Url::parse("https://例え.テスト/").unwrap();
        assert_eq!(url.host_str(), Some("xn--r8jz45g.xn--zckzah"));
    }
}
