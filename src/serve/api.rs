//! The JSON API: each route's parameters become the command line of the command it names
//! (checked by the same clap types), run by [`super::App::command`]; the answer is that
//! command's `--json` envelope.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{Value, json};

use super::auth::Access;
use super::{Shared, blocking, error_response, status_of};
use crate::error::{Error, Result};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/{name}", get(read))
        .route("/api/adrs/{number}", get(adr))
        .route("/api/proposals/{id}", get(proposal))
        .route("/api/proposals/{id}/{decision}", post(decide))
}

/// A route's query parameters, percent-decoded (axum's `Query`).
pub type Params = HashMap<String, String>;

/// A route's parameters as command-line arguments: `q` becomes the positional words, each
/// other parameter its flag (`true` for a switch). An unknown parameter is bad input naming
/// the ones the route takes. Public for the fuzz target of the console's requests
/// (`examples/fuzz`), which feeds it any parameters.
pub fn arguments(route: &str, params: &Params) -> Result<Vec<String>> {
    let (command, words, flags, switches): (&[&str], Option<bool>, &[&str], &[&str]) = match route {
        "recall" => (
            &["recall"],
            Some(false),
            &["profile", "limit", "category", "kind", "mode"],
            &["include_hold", "no_rewrite"],
        ),
        "search" => (
            &["search"],
            Some(true),
            &["kind", "limit", "mode", "project"],
            &["exact"],
        ),
        "brief" => (&["brief"], None, &["profile"], &[]),
        "status" => (&["status"], None, &[], &[]),
        "slog" => (
            &["slog", "query"],
            Some(false),
            &["action", "tool", "since", "until", "limit"],
            &[],
        ),
        "adrs" => (&["adr", "list"], None, &["status", "tag"], &[]),
        "memory" => (&["memory", "show"], None, &[], &[]),
        "proposals" => (&["review", "--list"], None, &[], &[]),
        "stats" => (&["stats"], None, &["since", "weeks", "component"], &[]),
        _ => {
            return Err(Error::new(
                crate::error::Kind::NotFound,
                format!("no API route /api/{route}"),
            )
            .with_fix(
                "use recall, search, brief, status, slog, adrs, memory, proposals, stats or \
                 session",
            ));
        }
    };
    let mut args: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    for (key, value) in params {
        if key == "q" && words.is_some() {
            continue;
        }
        if flags.contains(&key.as_str()) {
            args.push(format!("--{}", key.replace('_', "-")));
            args.push(value.clone());
        } else if switches.contains(&key.as_str()) {
            match value.as_str() {
                "" | "1" | "true" | "on" => args.push(format!("--{}", key.replace('_', "-"))),
                "0" | "false" | "off" => {}
                other => {
                    return Err(Error::bad_input(format!(
                        "parameter `{key}` is a switch, not `{other}`: give true or false"
                    )));
                }
            }
        } else {
            let mut known: Vec<&str> = flags.iter().chain(switches).copied().collect();
            if words.is_some() {
                known.insert(0, "q");
            }
            let known = if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            };
            return Err(Error::bad_input(format!(
                "unknown parameter `{key}` for /api/{route}: it takes {known}"
            )));
        }
    }
    if let Some(required) = words {
        let q = params.get("q").map(|q| q.trim()).unwrap_or_default();
        if q.is_empty() && required {
            return Err(Error::bad_input(format!(
                "/api/{route} needs the words to look for: give ?q=WORDS"
            )));
        }
        if !q.is_empty() {
            // After `--`: words that start with a dash are words, not flags.
            args.push("--".into());
            args.push(q.to_string());
        }
    }
    Ok(args)
}

/// The API's answer: the envelope, or the error object with its status.
fn answer(result: Result<Value>) -> Response {
    match result {
        Ok(envelope) => Json(envelope).into_response(),
        Err(err) => error_response(status_of(err.kind), &err, true),
    }
}

async fn read(
    State(app): State<Shared>,
    Path(name): Path<String>,
    Query(params): Query<Params>,
) -> Response {
    if name == "session" {
        return answer(blocking(&app, move |app| session(app, &params)).await);
    }
    answer(
        blocking(&app, move |app| {
            let mut params = params;
            if name == "search" {
                scoped(app, &mut params)?;
            }
            let args = arguments(&name, &params)?;
            app.command(&args)
        })
        .await,
    )
}

/// `scope=this` (the project the server runs in: see [`super::App::this_project`]) or
/// `scope=all` (the default) becomes search's `project` parameter.
pub(super) fn scoped(app: &super::App, params: &mut Params) -> Result<()> {
    match params.remove("scope").as_deref() {
        None | Some("" | "all") => Ok(()),
        Some("this") => {
            if params.contains_key("project") {
                return Err(Error::bad_input(
                    "give scope=this or project=NAME, not both",
                ));
            }
            params.insert("project".into(), app.this_project()?);
            Ok(())
        }
        Some(other) => Err(Error::bad_input(format!(
            "unknown scope `{other}`: use all or this (this project), or project=NAME"
        ))),
    }
}

/// `GET /api/session?file=&from=&to=`: turns of a session, read in a bounded window.
fn session(app: &super::App, params: &Params) -> Result<Value> {
    let (file, from, to) = session_params(params)?;
    let repo = app.repo()?;
    let window = super::session::read(repo.root(), file, from, to)?;
    Ok(json!({"v": 1, "type": "session", "data": window, "next": []}))
}

/// `/api/session`'s parameters: the file, and the turns from (1 unless given) and to (20
/// turns on unless given). Any number a client sends is answered, never overflowed.
pub fn session_params(params: &Params) -> Result<(&str, usize, usize)> {
    let file = params
        .get("file")
        .ok_or_else(|| Error::bad_input("give ?file=vault/sessions/AGENT/SESSION.jsonl"))?;
    let number = |key: &str, default: usize| -> Result<usize> {
        match params.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| Error::bad_input(format!("`{key}` must be a turn number, not `{v}`"))),
        }
    };
    let from = number("from", 1)?;
    let to = number("to", from.saturating_add(19))?;
    Ok((file, from, to))
}

async fn adr(State(app): State<Shared>, Path(number): Path<String>) -> Response {
    answer(
        blocking(&app, move |app| {
            let n: u32 = number.parse().map_err(|_| {
                Error::bad_input(format!("`{number}` is not an ADR number: give /api/adrs/N"))
            })?;
            app.command(&["adr".to_string(), "show".into(), n.to_string()])
        })
        .await,
    )
}

async fn proposal(State(app): State<Shared>, Path(id): Path<String>) -> Response {
    answer(
        blocking(&app, move |app| {
            app.command(&["review".to_string(), "--show".into(), id])
        })
        .await,
    )
}

/// `POST /api/proposals/ID/approve|reject`: the token is required (a bearer header or the
/// login cookie); the body is an optional JSON object (`text` for approve, `why` for reject).
async fn decide(
    State(app): State<Shared>,
    Extension(access): Extension<Access>,
    Path((id, decision)): Path<(String, String)>,
    body: String,
) -> Response {
    if access != Access::Token {
        return error_response(StatusCode::UNAUTHORIZED, &super::needs_token(), true);
    }
    answer(
        blocking(&app, move |app| {
            let args = decision_arguments(&id, &decision, &body)?;
            app.write(access, &args)
        })
        .await,
    )
}

/// The command line of `POST /api/proposals/ID/DECISION` with `body`: `review --approve ID`
/// (with `--text` when the body's `text` is given) or `review --reject ID --why WHY`. A body
/// that is not a JSON object of strings is bad input. Public for the fuzz target of the
/// console's requests (`examples/fuzz`).
pub fn decision_arguments(id: &str, decision: &str, body: &str) -> Result<Vec<String>> {
    let body: Value = if body.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(body)
            .map_err(|e| Error::bad_input(format!("the body is not a JSON object: {e}")))?
    };
    if !body.is_object() {
        return Err(Error::bad_input(
            "the body is not a JSON object: give {\"text\": \"…\"} or {\"why\": \"…\"}",
        ));
    }
    let field = |key: &str| -> Result<Option<String>> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::bad_input(format!("`{key}` must be a string"))),
        }
    };
    match decision {
        "approve" => {
            let mut args = vec!["review".to_string(), "--approve".into(), id.to_string()];
            if let Some(text) = field("text")? {
                args.push("--text".into());
                args.push(text);
            }
            Ok(args)
        }
        "reject" => {
            let why = field("why")?
                .filter(|w| !w.trim().is_empty())
                .ok_or_else(|| {
                    Error::bad_input("a rejection needs its reason: {\"why\": \"…\"}")
                })?;
            Ok(vec![
                "review".into(),
                "--reject".into(),
                id.to_string(),
                "--why".into(),
                why,
            ])
        }
        other => Err(Error::new(
            crate::error::Kind::NotFound,
            format!("no decision `{other}`: use approve or reject"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_become_the_command_line() {
        let args = arguments("search", &params(&[("q", "-rf nfs"), ("exact", "true")])).unwrap();
        assert_eq!(args, vec!["search", "--exact", "--", "-rf nfs"]);
        let args = arguments("slog", &params(&[("tool", "api")])).unwrap();
        assert_eq!(args, vec!["slog", "query", "--tool", "api"]);
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = arguments("search", &params(&[])).unwrap_err();
        assert!(e.message.contains("?q="), "{}", e.message);
        let e = arguments("search", &params(&[("q", "x"), ("colour", "red")])).unwrap_err();
        assert!(
            e.message.contains("unknown parameter `colour`"),
            "{}",
            e.message
        );
        let e = arguments("search", &params(&[("q", "x"), ("exact", "maybe")])).unwrap_err();
        assert!(e.message.contains("switch"), "{}", e.message);
        assert!(arguments("nothing", &params(&[])).is_err());
    }

    #[test]
    fn session_numbers_of_any_size_are_answered() {
        // Regression: `from` of usize::MAX overflowed the default `to` (`from + 19`), a panic
        // in a debug build (seen writing the fuzz target `console`; its seed
        // fuzz/corpus/console/session-hostile.http asks for it).
        let max = usize::MAX.to_string();
        let p = params(&[("file", "vault/sessions/claude/s.jsonl"), ("from", &max)]);
        let (file, from, to) = session_params(&p).unwrap();
        assert_eq!(
            (file, from, to),
            ("vault/sessions/claude/s.jsonl", usize::MAX, usize::MAX)
        );
        let p = params(&[("file", "x"), ("from", "3")]);
        assert_eq!(session_params(&p).unwrap(), ("x", 3, 22));
        let p = params(&[("file", "x"), ("to", "-1")]);
        assert!(session_params(&p).is_err());
    }

    #[test]
    fn decision_bodies() {
        let args = decision_arguments("pr-1", "approve", "").unwrap();
        assert_eq!(args, vec!["review", "--approve", "pr-1"]);
        let args = decision_arguments("pr-1", "approve", r#"{"text":"new"}"#).unwrap();
        assert_eq!(args, vec!["review", "--approve", "pr-1", "--text", "new"]);
        let args = decision_arguments("pr-1", "reject", r#"{"why":"dup"}"#).unwrap();
        assert_eq!(args, vec!["review", "--reject", "pr-1", "--why", "dup"]);
        for (decision, body, why) in [
            ("reject", "", "its reason"),
            ("reject", r#"{"why":"  "}"#, "its reason"),
            ("approve", r#"{"text":5}"#, "must be a string"),
            ("approve", "[1]", "not a JSON object"),
            ("approve", "{", "not a JSON object"),
            ("merge", "", "no decision"),
        ] {
            let e = decision_arguments("pr-1", decision, body).unwrap_err();
            assert!(e.message.contains(why), "{decision} {body}: {}", e.message);
        }
    }
}
