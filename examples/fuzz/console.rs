//! The target of the console's HTTP requests (`cairn serve`), without a socket: the input is
//! a request as it comes over the wire (request line, headers, a blank line, the body), taken
//! apart into axum's types here (hyper's parsing is not cairn's), then handed to the pure
//! functions the server hands it to: the guard's [`cairn::serve::admit`] (token, host,
//! origin rules) for a loopback and a remote peer, then the route's own: the query → command
//! line of `api::arguments`, `/api/session`'s file/from/to (`api::session_params`, then
//! `session::read` of a real session file), the approve/reject bodies
//! (`api::decision_arguments`), each command line parsed by the CLI's clap types
//! (`serve::parse_command`). What the command then does is the CLI's, fuzzed elsewhere.
//!
//! Properties checked beside "no panic": the token is only granted to a request that carried
//! it; a remote peer gets nothing without it; a write whose `Origin` is not the `Host` it was
//! sent to is refused.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, header};

use cairn::redact::Redactor;
use cairn::serve::{self, api, auth, session};

use crate::targets::{KB, Target};

/// The token the fuzzed server holds (the seeds carry it where they should).
const TOKEN: &str = "5f0c1d2e3a4b5c6d7e8f90a1b2c3d4e55f0c1d2e3a4b5c6d7e8f90a1b2c3d4e5";

pub fn targets() -> Vec<Target> {
    vec![Target {
        name: "console",
        calls: "serve::admit (auth::check: token, host, origin), api::arguments, api::session_params and session::read, api::decision_arguments, serve::parse_command (the CLI's clap types)",
        max_len: 8 * KB,
        dict: &[
            "GET ",
            "POST ",
            "HEAD ",
            "OPTIONS ",
            " HTTP/1.1\r\n",
            "/api/",
            "/api/search?q=",
            "/api/recall?q=",
            "/api/session?file=vault/sessions/claude/fixture.jsonl",
            "/api/proposals/pr-1/approve",
            "/api/proposals/pr-1/reject",
            "/api/adrs/",
            "&from=",
            "&to=",
            "&limit=",
            "&kind=",
            "&exact=",
            "&include_hold=",
            "&token=",
            "%2F",
            "%00",
            "%ff",
            "%",
            "+",
            "..",
            "Host: 127.0.0.1:8080\r\n",
            "Host: localhost\r\n",
            "Host: [::1]:1\r\n",
            "Origin: http://127.0.0.1:8080\r\n",
            "Origin: http://evil.example\r\n",
            "Origin: null\r\n",
            "Sec-Fetch-Site: same-origin\r\n",
            "Sec-Fetch-Site: cross-site\r\n",
            "Authorization: Bearer ",
            "Cookie: cairn_token=",
            TOKEN,
            "\r\n\r\n",
            "{\"text\":\"",
            "{\"why\":\"",
            "\"}",
        ],
        run: console,
    }]
}

/// A request's parts, as axum would have them.
struct Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: String,
}

fn parse(bytes: &[u8]) -> Option<Request> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .or_else(|| text.split_once("\n\n"))
        .unwrap_or((&text, ""));
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let method = Method::from_bytes(first.next()?.as_bytes()).ok()?;
    let uri: Uri = first.next()?.parse().ok()?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_bytes(value.trim().as_bytes()),
        ) {
            headers.append(n, v);
        }
    }
    Some(Request {
        method,
        uri,
        headers,
        body: body.to_string(),
    })
}

fn console(bytes: &[u8]) {
    let Some(r) = parse(bytes) else {
        return;
    };
    let carried = String::from_utf8_lossy(bytes).contains(TOKEN)
        || r.uri
            .query()
            .is_some_and(|q| percent_decode(q).contains(TOKEN));
    let write = !matches!(r.method, Method::GET | Method::HEAD);
    let host = r.headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let foreign_origin = r.headers.get(header::ORIGIN).is_some_and(|o| {
        host.is_some_and(|h| {
            !o.as_bytes()
                .eq_ignore_ascii_case(format!("http://{h}").as_bytes())
        })
    });
    for peer in [
        IpAddr::from([127, 0, 0, 1]),
        IpAddr::from([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]),
        IpAddr::from([192, 0, 2, 7]),
    ] {
        let admitted = serve::admit(&r.method, &r.uri, &r.headers, peer, TOKEN);
        if let Ok(a) = admitted {
            assert!(
                a.access != auth::Access::Token || carried,
                "the token was granted to a request that did not carry it"
            );
            assert!(
                peer.is_loopback()
                    || peer.to_canonical().is_loopback()
                    || a.access == auth::Access::Token,
                "a remote peer was served without the token"
            );
            assert!(
                !(write && foreign_origin),
                "a write whose Origin is not its Host was let through"
            );
            assert!(
                !write || a.access == auth::Access::Token,
                "a write was let through without the token"
            );
        }
    }
    route(&r);
}

/// What the route the path names hands its parameters to.
fn route(r: &Request) {
    let Ok(axum::extract::Query(params)) =
        axum::extract::Query::<api::Params>::try_from_uri(&r.uri)
    else {
        return;
    };
    let segments: Vec<String> = r
        .uri
        .path()
        .trim_start_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["api", "session"] => {
            if let Ok((file, from, to)) = api::session_params(&params)
                && let Ok(w) = session::read(sessions_root(), file, from, to)
            {
                assert!(
                    w.cards.len() <= session::MAX_WINDOW,
                    "a window of {} turns",
                    w.cards.len()
                );
            }
        }
        ["api", name] => {
            if let Ok(args) = api::arguments(name, &params) {
                let _ = serve::parse_command(&args);
            }
        }
        ["api", "adrs", n] => {
            if let Ok(n) = n.parse::<u32>() {
                let _ = serve::parse_command(&["adr".to_string(), "show".into(), n.to_string()]);
            }
        }
        ["api", "proposals", id] => {
            let _ = serve::parse_command(&["review", "--show", *id]);
        }
        ["api", "proposals", id, decision] => {
            if let Ok(args) = api::decision_arguments(id, decision, &r.body) {
                let _ = serve::parse_command(&args);
            }
        }
        _ => {}
    }
}

/// `%XX` decoded, as axum's `Path` does (invalid escapes kept as they are).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).and_then(|&c| hex(c)),
                b.get(i + 2).and_then(|&c| hex(c)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A repository root holding one real session file, `vault/sessions/claude/fixture.jsonl`:
/// the cards cairn makes of a Claude Code transcript of the fixtures.
fn sessions_root() -> &'static std::path::Path {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &ROOT
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let transcript = std::fs::read(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/sessions/claude-code/session-9eda1058.jsonl"),
            )
            .expect("the fixture transcript");
            let t = cairn::sessions::parse(
                &transcript,
                Some(cairn::sessions::Agent::Claude),
                "fixture",
            )
            .expect("the fixture parses");
            let mut lines = String::new();
            for r in cairn::cards::records(&t, Redactor::builtin(), "2026-12-01T00:00:00Z") {
                lines.push_str(&cairn::cards::line(&r));
                lines.push('\n');
            }
            let folder = dir.path().join("vault/sessions/claude");
            std::fs::create_dir_all(&folder).expect("the sessions folder");
            std::fs::write(folder.join("fixture.jsonl"), lines).expect("the session file");
            let root = dir.path().to_path_buf();
            (dir, root)
        })
        .1
}
