//! The console of `cairn serve`: a local web page to search memory, read a turn in its
//! session, browse decisions, MEMORY.md and its history, and review proposals, with a JSON
//! API over the same commands (the only importer of axum).
//!
//! Like the MCP server ([`crate::mcp`]) it is a front end over the command layer, not a second
//! implementation: every API call and every page turns its parameters into the command line
//! of the command it names, parsed by the same clap types, and runs it through
//! [`cli::execute`]. So `GET /api/search?q=nfs` answers `cairn search nfs --json`'s object,
//! and an approval from the review page writes the same events and the same commit as
//! `cairn review --approve`.
//!
//! The index is opened once, when the server starts, and kept ([`crate::index::Held`] in
//! [`Served`]): each recall, search, brief and status brings it up to date with the check the
//! command line makes at every read (a `stat` per source file, and whether another process
//! committed the index since), so a record written by another process is found by the next
//! request. Commands run on blocking threads: reads side by side (sharing the index under a
//! read lock; one that finds the files moved on catches up under the write lock), writes
//! (approve, reject) one at a time behind a gate and the repository lock; requests wait their
//! turn, never fail for it.
//!
//! Who may ask what is [`auth`]'s: loopback reads are free, everything else needs the token;
//! every write (a form or the API) needs it from loopback too, and a page shown without the
//! token carries nothing that lets its reader write (the review page has no forms then).
//! Pages are HTML made here ([`pages`], [`html`]) with their stylesheet and script compiled
//! in ([`assets`]); text from memory is escaped, and the Content-Security-Policy allows only
//! the console's own script.
//!
//! API (each answer is the `--json` envelope of [`crate::output`]; errors its error object,
//! with 400 for bad input, 401/403 refused, 404 not found, 409 conflict, 500 otherwise):
//! `GET /api/recall?q=`, `/api/search?q=&kind=&exact=&limit=&scope=this|all&project=`,
//! `/api/brief`, `/api/status`,
//! `/api/slog?q=&action=&tool=&since=&until=&limit=`, `/api/adrs?status=&tag=`,
//! `/api/adrs/N`, `/api/memory`, `/api/proposals`, `/api/proposals/ID`, `/api/stats`,
//! `/api/session?file=&from=&to=`; `POST /api/proposals/ID/approve` (`{"text":…}` optional)
//! and `POST /api/proposals/ID/reject` (`{"why":…}`), which need the token. The pages' one
//! write, `POST /review/ID` (the review forms), needs the token (the login cookie) and the
//! form's CSRF value.

pub mod api;
mod assets;
pub mod auth;
mod charts;
mod history;
mod html;
mod pages;
pub mod session;
mod start;
mod stats;

pub use start::start;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::cli::{self, Cli, Ctx, Served};
use crate::error::{Error, Kind, Result};
use crate::output;

/// How the server was asked to run.
pub struct Options {
    pub bind: IpAddr,
    pub port: u16,
    /// The token's text (see [`auth::load_or_make`]).
    pub token: String,
    /// Open the console in the browser once it listens.
    pub open: bool,
}

/// What every request shares.
pub struct App {
    served: Served,
    token: String,
    csrf: String,
    /// One writing command at a time (see the module's opening).
    gate: Mutex<()>,
}

type Shared = Arc<App>;

impl App {
    /// Runs the command line `args` (after `cairn`) as the command line would, and returns
    /// its `--json` envelope. Only a command that reads: one that writes is refused here,
    /// whatever route asked, and goes through [`App::write`].
    pub fn command<S: AsRef<str>>(&self, args: &[S]) -> Result<Value> {
        let parsed = parse_command(args)?;
        if !parsed.command.only_reads() {
            return Err(needs_token());
        }
        self.run(parsed)
    }

    /// [`App::command`] for a command that may write: only for a request that carried the
    /// token ([`auth::Access::Token`]); the guard has refused any other write already, this is
    /// the second lock on the same door.
    pub fn write<S: AsRef<str>>(&self, access: auth::Access, args: &[S]) -> Result<Value> {
        if access != auth::Access::Token {
            return Err(needs_token());
        }
        self.run(parse_command(args)?)
    }

    fn run(&self, parsed: Cli) -> Result<Value> {
        // Reads run side by side; anything that writes waits for the one before it.
        let _turn = (!parsed.command.only_reads())
            .then(|| self.gate.lock().unwrap_or_else(|p| p.into_inner()));
        let ctx = self.ctx();
        let report = cli::execute(&ctx, parsed.command)?;
        output::warn(&report.warnings);
        Ok(output::envelope(&report))
    }

    /// The context of one call: the served repository, its held index.
    pub fn ctx(&self) -> Ctx {
        Ctx::for_call(&self.served)
    }

    pub fn repo(&self) -> Result<crate::repo::Repo> {
        self.ctx().repo()
    }

    /// The project the server runs in, as `cairn brief` finds it: the git repository of the
    /// folder it started in, else the knowledge repository itself; by its folder's name, which
    /// is what a session's cards record ([`crate::cards::Card::project`]).
    pub fn this_project(&self) -> Result<String> {
        let repo = self.repo()?;
        let found = crate::recall::project::find(&self.served.cwd, repo.root(), None)?;
        Ok(match found {
            Some(p) => p.name,
            None => repo
                .root()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
    }

    pub fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// What a change asked without the token gets (see [`auth`]).
pub(crate) fn needs_token() -> Error {
    Error::bad_input("a change needs the token").with_fix(
        "send `Authorization: Bearer TOKEN` (the token file's content), or open /?token=TOKEN \
         once in the browser",
    )
}

/// The command line `args` (after `cairn`) parsed by the command line's own clap types; a
/// refusal is bad input with clap's first line. Public for the fuzz target of the console's
/// requests (`examples/fuzz`).
pub fn parse_command<S: AsRef<str>>(args: &[S]) -> Result<Cli> {
    let argv = std::iter::once("cairn").chain(args.iter().map(AsRef::as_ref));
    <Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        let rendered = e.render().to_string();
        let first = rendered
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string();
        Error::bad_input(first)
    })
}

/// Listens on `options.bind:options.port` and serves until the process is stopped. The URL
/// is the first line on stdout (the real port when 0 was asked).
pub fn serve(served: Served, options: Options) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("the console's runtime", &e))?;
    let mut served = served;
    runtime.block_on(async move {
        let addr = SocketAddr::new(options.bind, options.port);
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            Error::io(format!("{addr}"), &e)
                .with_fix("choose another --port (0 takes any free one) or --bind address")
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::io("the console's address", &e))?;
        let shown = match local.ip() {
            ip if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::from([127, 0, 0, 1]), local.port())
            }
            _ => local,
        };
        let url = format!("http://{shown}/");
        output::data_line(&url);
        if options.open {
            open_browser(&url);
        }
        // The index, opened once for the run (requests wait in the listener's queue meanwhile)
        // and brought up to date per request ([`crate::index::Held`]). One that cannot be
        // kept (read-only) or opened is opened per request, as the command line does, which
        // then says why.
        served.index = held_index(&served).map(Arc::new);
        let app = Arc::new(App {
            served,
            csrf: auth::csrf_of(&options.token),
            token: options.token,
            gate: Mutex::new(()),
        });
        let router = router(app);
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .map_err(|e| Error::io("the console's listener", &e))
    })
}

/// The index of the served repository, opened to keep for the run.
fn held_index(served: &Served) -> Option<crate::index::Held> {
    let repo = Ctx::for_call(served).repo().ok()?;
    match crate::index::Held::open(&repo) {
        Ok(held) => held,
        Err(e) => {
            output::notice(&format!(
                "the index did not open ({}); each request opens it",
                e.message
            ));
            None
        }
    }
}

/// Starts a browser on `url` without waiting for it: `$BROWSER` (its first command, `%s`
/// replaced by the URL, else the URL added), else the desktop's opener (`open` on macOS,
/// `xdg-open` elsewhere). Nothing it does stops or fails the server: a missing opener is a
/// notice, and the one started is waited for on a thread of its own (no zombie is left).
fn open_browser(url: &str) {
    let mut tried = Vec::new();
    for line in openers(std::env::var("BROWSER").ok().as_deref()) {
        let Some((program, args)) = opener_command(&line, url) else {
            continue;
        };
        let started = std::process::Command::new(&program)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match started {
            Ok(mut child) => {
                let _ = std::thread::Builder::new()
                    .name("browser".into())
                    .spawn(move || child.wait());
                return;
            }
            Err(_) => tried.push(program),
        }
    }
    output::notice(&format!(
        "could not start a browser ({}); open {url} yourself",
        tried.join(", ")
    ));
}

/// The commands to try, in order: each of `$BROWSER`'s (colon-separated), then the opener.
fn openers(browser: Option<&str>) -> Vec<String> {
    let mut all: Vec<String> = browser
        .unwrap_or_default()
        .split(':')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    all.push(
        if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        }
        .into(),
    );
    all
}

/// A command line of `$BROWSER` for `url`: words split at spaces, `%s` replaced by the URL,
/// else the URL as the last argument.
fn opener_command(line: &str, url: &str) -> Option<(String, Vec<String>)> {
    let mut words = line.split_whitespace().map(String::from);
    let program = words.next()?;
    let mut args: Vec<String> = words.collect();
    if args.iter().any(|a| a.contains("%s")) {
        for a in &mut args {
            *a = a.replace("%s", url);
        }
    } else {
        args.push(url.to_string());
    }
    Some((program, args))
}

fn router(app: Shared) -> Router {
    Router::new()
        .merge(api::routes())
        .merge(pages::routes())
        // Beside the pages, not among them: the stats page is made with `pages::page`.
        .route("/stats", axum::routing::get(stats::stats))
        .route("/assets/{name}", axum::routing::get(assets::get))
        .route("/favicon.ico", axum::routing::get(assets::favicon))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// The token a request carries: `Authorization: Bearer …`, else the `cairn_token` cookie.
fn carried_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(bearer.trim());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == auth::COOKIE)
        .map(|(_, v)| v)
}

/// What [`admit`] lets a request do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub access: auth::Access,
    /// It is the `/?token=` login: answered with the cookie and a redirect.
    pub login: bool,
}

/// What the guard makes of a request's method, address, headers and peer: the [`auth::Seen`]
/// they show, checked by [`auth::check`] against `token`. Pure: the fuzz target of the
/// console's requests (`examples/fuzz`) feeds it any headers.
pub fn admit(
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    peer: IpAddr,
    token: &str,
) -> std::result::Result<Admitted, auth::Refused> {
    // A header that is there but not visible ASCII is not absent: it reads as a value that
    // matches nothing, so an unreadable `Origin` is another site's (found by fuzzing; the
    // input is `fuzz/corpus/console/regress-unreadable-origin.http`).
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let login = (method == Method::GET)
        .then(|| query_value(uri.query(), "token"))
        .flatten();
    let seen = auth::Seen {
        peer_loopback: peer.is_loopback()
            || matches!(peer, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())),
        write: !matches!(*method, Method::GET | Method::HEAD),
        host: text("host"),
        origin: text("origin"),
        fetch_site: text("sec-fetch-site"),
        token: login.as_deref().or_else(|| carried_token(headers)),
    };
    let access = auth::check(&seen, token)?;
    Ok(Admitted {
        access,
        login: login.is_some(),
    })
}

/// Every request passes here: [`admit`], the `/?token=` login, and the headers that keep
/// pages to their own origin.
async fn guard(
    State(app): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let api = request.uri().path().starts_with("/api/");
    let admitted = match admit(
        request.method(),
        request.uri(),
        request.headers(),
        peer.ip(),
        &app.token,
    ) {
        Ok(admitted) => admitted,
        Err(refused) => {
            let status = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::FORBIDDEN);
            let err = Error::bad_input(refused.message);
            return secure(error_response(status, &err, api));
        }
    };
    if admitted.login {
        // The token leaves the address bar for an HttpOnly cookie the pages carry.
        let path = request.uri().path().to_string();
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            auth::COOKIE,
            app.token
        );
        let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, path)]).into_response();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
        return secure(response);
    }
    request.extensions_mut().insert(admitted.access);
    secure(next.run(request).await)
}

/// The headers every answer carries: only the console's own script, style and forms; never
/// framed; no CORS header at all. The referrer policy is `same-origin`, not `no-referrer`:
/// with the latter a browser sends `Origin: null` with the pages' own forms, which
/// [`auth::check`] refuses.
fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// One value of a query string, percent-decoded.
fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    let uri: axum::http::Uri = format!("/?{}", query?).parse().ok()?;
    let axum::extract::Query(pairs) =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&uri).ok()?;
    pairs.get(key).cloned()
}

/// The HTTP status of an error's kind.
fn status_of(kind: Kind) -> StatusCode {
    match kind {
        Kind::BadInput => StatusCode::BAD_REQUEST,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::Conflict => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error as the API gives it (the `--json` error object) or as a page.
fn error_response(status: StatusCode, err: &Error, api: bool) -> Response {
    if api {
        return (status, axum::Json(output::error_envelope(err))).into_response();
    }
    let mut body = format!(
        "<h1>{}</h1><p class=\"error\">{}</p>",
        status.as_u16(),
        html::esc(&err.message)
    );
    if let Some(fix) = &err.fix {
        body.push_str(&format!("<p>{}</p>", html::esc(fix)));
    }
    (status, axum::response::Html(html::page("error", "", &body))).into_response()
}

/// Runs `f` on a blocking thread (the commands are synchronous).
async fn blocking<T: Send + 'static>(
    app: &Shared,
    f: impl FnOnce(&App) -> Result<T> + Send + 'static,
) -> Result<T> {
    let app = Arc::clone(app);
    tokio::task::spawn_blocking(move || f(&app))
        .await
        .map_err(|e| Error::new(Kind::Io, format!("the request stopped: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_commands_take_the_url() {
        assert_eq!(
            openers(Some("firefox --new-window:chromium")),
            vec![
                "firefox --new-window",
                "chromium",
                if cfg!(target_os = "macos") {
                    "open"
                } else {
                    "xdg-open"
                }
            ]
        );
        assert_eq!(openers(None).len(), 1);
        let (p, a) = opener_command("firefox --new-window", "http://x/").unwrap();
        assert_eq!(
            (p.as_str(), a),
            (
                "firefox",
                vec!["--new-window".to_string(), "http://x/".into()]
            )
        );
        let (p, a) = opener_command("w3m %s -N", "http://x/").unwrap();
        assert_eq!(
            (p.as_str(), a),
            ("w3m", vec!["http://x/".to_string(), "-N".into()])
        );
        assert!(opener_command("  ", "http://x/").is_none());
    }

    const T: &str = "0123456789abcdef0123456789abcdef";

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_bytes(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn an_unreadable_origin_is_another_sites() {
        // Regression: an `Origin` of bytes that are not visible ASCII was read as no Origin at
        // all, so a write carrying the token passed the same-origin rule (found by the fuzz
        // target `console`, fuzz/corpus/console/regress-unreadable-origin.http).
        let uri: axum::http::Uri = "/api/proposals/pr-1/reject".parse().unwrap();
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let bearer = format!("Bearer {T}");
        let with = |origin: &[u8]| {
            headers(&[
                ("host", b"127.0.0.1:8080"),
                ("origin", origin),
                ("authorization", bearer.as_bytes()),
            ])
        };
        let refused = admit(
            &Method::POST,
            &uri,
            &with(b"http://ev\xc3\xa9l"),
            loopback,
            T,
        )
        .expect_err("an unreadable Origin is refused");
        assert_eq!(refused.status, 403);
        let ours = admit(
            &Method::POST,
            &uri,
            &with(b"http://127.0.0.1:8080"),
            loopback,
            T,
        );
        assert_eq!(ours.map(|a| a.access), Ok(auth::Access::Token));
        // An unreadable Host is no loopback host: a read without the token is refused.
        let read = admit(
            &Method::GET,
            &uri,
            &headers(&[("host", b"127.0.0.1\xff")]),
            loopback,
            T,
        );
        assert_eq!(read.map_err(|r| r.status), Err(403));
    }

    #[test]
    fn the_login_query_grants_the_token_only_when_it_is_right() {
        let h = headers(&[("host", b"192.0.2.2:8080")]);
        let remote = IpAddr::from([192, 0, 2, 7]);
        let good: axum::http::Uri = format!("/?token={T}").parse().unwrap();
        let admitted = admit(&Method::GET, &good, &h, remote, T).unwrap();
        assert_eq!(admitted.access, auth::Access::Token);
        assert!(admitted.login);
        let bad: axum::http::Uri = "/?token=nope".parse().unwrap();
        assert_eq!(
            admit(&Method::GET, &bad, &h, remote, T).map_err(|r| r.status),
            Err(401)
        );
    }
}
