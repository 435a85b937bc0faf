//! The console's pages, made on the server from the commands' `--json` envelopes: search,
//! a turn in its session, decisions, MEMORY.md with each entry's history, review, stats.
//! Text from memory is escaped ([`html::esc`], [`html::highlight`]); only committed Markdown
//! (ADRs, MEMORY.md) is rendered, without raw HTML.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use axum::extract::{Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::Value;

use super::auth::{self, Access};
use super::charts;
use super::html::{self, esc, url};
use super::session::{self, Window};
use super::{App, Shared, blocking, error_response, status_of};
use crate::cards::Card;
use crate::error::{Error, Kind, Result};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(search))
        .route("/turn", get(turn))
        .route("/turns", get(turns))
        .route("/decisions", get(decisions))
        .route("/decisions/{number}", get(decision))
        .route("/memory", get(memory))
        .route("/review", get(review))
        .route("/review/{id}", axum::routing::post(decide))
}

type Params = HashMap<String, String>;

/// A page, or the error page with the error's status.
pub(super) fn page(result: Result<String>) -> Response {
    match result {
        Ok(body) => Html(body).into_response(),
        Err(err) => error_response(status_of(err.kind), &err, false),
    }
}

/// The kinds a search can be kept to, with their names for people.
const KINDS: &[(&str, &str)] = &[
    ("", "every kind"),
    ("card", "turns"),
    ("observation", "observations"),
    ("episode", "episodes"),
    ("slog", "log entries"),
    ("adr", "decisions"),
    ("memory", "MEMORY.md"),
    ("note", "notes"),
    ("library", "library"),
];

async fn search(State(app): State<Shared>, Query(params): Query<Params>) -> Response {
    page(blocking(&app, move |app| search_page(app, &params)).await)
}

fn search_page(app: &App, params: &Params) -> Result<String> {
    let q = params
        .get("q")
        .map(|s| s.trim())
        .unwrap_or_default()
        .to_string();
    let kind = params.get("kind").cloned().unwrap_or_default();
    if !KINDS.iter().any(|(k, _)| *k == kind) {
        return Err(Error::bad_input(format!(
            "unknown kind `{kind}`: use card, observation, episode, slog, adr, memory, note or library"
        )));
    }
    let exact = params
        .get("exact")
        .is_some_and(|v| v == "on" || v == "true");
    // The project scope: every project's records, or only this project's sessions'.
    let this = params.get("scope").is_some_and(|v| v == "this");
    if params
        .get("scope")
        .is_some_and(|v| !matches!(v.as_str(), "" | "all" | "this"))
    {
        return Err(Error::bad_input(
            "unknown scope: use all or this (this project)",
        ));
    }
    let project = app.this_project()?;
    let mut body = String::from("<h1>Search memory</h1>");
    let _ = write!(
        body,
        "<form class=\"search\" method=\"get\" action=\"/\" role=\"search\">\
         <input type=\"search\" name=\"q\" value=\"{}\" placeholder=\"words to look for\" \
         aria-label=\"words\" autofocus><select name=\"kind\" aria-label=\"kind\">",
        esc(&q)
    );
    for (k, name) in KINDS {
        let selected = if *k == kind { " selected" } else { "" };
        let _ = write!(body, "<option value=\"{k}\"{selected}>{name}</option>");
    }
    let _ = write!(
        body,
        "</select><select name=\"scope\" aria-label=\"project\">\
         <option value=\"all\"{}>all projects</option>\
         <option value=\"this\"{}>this project ({})</option>",
        if this { "" } else { " selected" },
        if this { " selected" } else { "" },
        esc(&project)
    );
    let checked = if exact { " checked" } else { "" };
    let _ = write!(
        body,
        "</select><label><input type=\"checkbox\" name=\"exact\"{checked}> exact</label>\
         <button type=\"submit\">Search</button></form>"
    );
    if q.is_empty() {
        body.push_str(
            "<p class=\"meta\">Search every record of this knowledge repository: turns, \
             observations, log entries, decisions, MEMORY.md, notes and the library. The address keeps the query \
             and scope, so a search can be bookmarked.</p>",
        );
        return Ok(html::page("Search", "/", &body));
    }
    let mut args = vec!["search".to_string(), "--limit".into(), "50".into()];
    if !kind.is_empty() {
        args.push("--kind".into());
        args.push(kind.clone());
    }
    if exact && this {
        return Err(Error::bad_input(
            "an exact search covers every project: choose all projects, or a ranked search",
        ));
    }
    if exact {
        args.push("--exact".into());
    }
    if this {
        args.push("--project".into());
        args.push(project.clone());
    }
    args.push("--".into());
    args.push(q.clone());
    let envelope = app.command(&args)?;
    let results = envelope["data"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if results.is_empty() {
        let _ = write!(
            body,
            "<p id=\"nothing\">Nothing found for “{}”.</p>",
            esc(&q)
        );
        return Ok(html::page(&format!("{q} · search"), "/", &body));
    }
    let _ = write!(
        body,
        "<p class=\"meta\" id=\"count\">{} results</p>",
        results.len()
    );
    body.push_str(&grouped(&results, &q, exact));
    Ok(html::page(&format!("{q} · search"), "/", &body))
}

/// Results grouped by session (cards, observations from cards, episodes) and, inside a
/// session, by turn; other records by kind. Groups keep the order of their best result.
fn grouped(results: &[Value], q: &str, exact: bool) -> String {
    struct Group {
        title: String,
        turns: Vec<(String, Vec<String>)>,
    }
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Group> = HashMap::new();
    for r in results {
        let (group_key, group_title, turn_key, turn_title, hit) = if exact {
            let at = r["at"].as_str().unwrap_or_default();
            let kind = at.split('/').nth(1).unwrap_or("records");
            let hit = format!(
                "<div class=\"hit\"><div class=\"meta\">{}</div><pre>{}</pre></div>",
                esc(at),
                html::highlight(
                    &html::snippet(r["text"].as_str().unwrap_or_default(), q, 400),
                    q
                )
            );
            (
                kind.to_string(),
                kind.to_string(),
                String::new(),
                String::new(),
                hit,
            )
        } else {
            describe(r, q)
        };
        if !groups.contains_key(&group_key) {
            order.push(group_key.clone());
            groups.insert(
                group_key.clone(),
                Group {
                    title: group_title,
                    turns: Vec::new(),
                },
            );
        }
        let group = groups.get_mut(&group_key).expect("inserted above");
        match group.turns.iter_mut().find(|(k, _)| *k == turn_key) {
            Some((_, hits)) => hits.push(hit),
            None => group.turns.push((turn_key.clone(), vec![turn_title, hit])),
        }
    }
    let mut out = String::from("<div id=\"results\">");
    for key in &order {
        let group = &groups[key];
        let _ = write!(out, "<section class=\"group\"><h2>{}</h2>", group.title);
        for (_, parts) in &group.turns {
            for p in parts {
                out.push_str(p);
            }
        }
        out.push_str("</section>");
    }
    out.push_str("</div>");
    out
}

/// A ranked result: (group key, group title HTML, turn key, turn title HTML, hit HTML).
fn describe(r: &Value, q: &str) -> (String, String, String, String, String) {
    let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
    let (kind, id, source, session, file) =
        (s("kind"), s("id"), s("source"), s("session"), s("file"));
    let title = s("title");
    let text = s("text");
    let day = s("time").get(..10).unwrap_or_default().to_string();
    let snippet = html::highlight(&html::snippet(&text, q, 320), q);
    // The turn this result opens in, if any.
    let open = match kind.as_str() {
        "card" => source.rsplit_once('#').map(|(_, n)| {
            format!(
                "/turn?file={}&amp;turn={n}#turn-{n}",
                url(&file),
                n = url(n)
            )
        }),
        "observation" if source.starts_with("tc-") => Some(format!("/turn?card={}", url(&source))),
        "episode" => Some(format!("/turn?file={}&amp;turn=1", url(&file))),
        _ => None,
    };
    let link = match (&open, kind.as_str()) {
        (Some(href), _) => format!(" <a href=\"{href}\" class=\"open\">open turn</a>"),
        (None, "adr") => id
            .strip_prefix("adr-")
            .map(|n| format!(" <a href=\"/decisions/{}\">open decision</a>", url(n)))
            .unwrap_or_default(),
        (None, "memory") => " <a href=\"/memory\">open MEMORY.md</a>".to_string(),
        _ => String::new(),
    };
    let hit = format!(
        "<div class=\"hit\" data-kind=\"{}\"><div class=\"meta\">{} · {} · {}{}</div>\
         <div><strong>{}</strong></div><pre>{}</pre></div>",
        esc(&kind),
        esc(&kind),
        esc(&day),
        esc(&id),
        link,
        html::highlight(&title, q),
        snippet
    );
    if !session.is_empty() {
        let turn_key = match kind.as_str() {
            "card" => id.clone(),
            "observation" if source.starts_with("tc-") => source.clone(),
            _ => format!("{kind}:{id}"),
        };
        let turn_title = match kind.as_str() {
            "card" => format!(
                "<h3 class=\"meta\">turn {}</h3>",
                esc(source.rsplit_once('#').map(|(_, n)| n).unwrap_or("?"))
            ),
            "observation" if source.starts_with("tc-") => {
                format!("<h3 class=\"meta\">from turn card {}</h3>", esc(&source))
            }
            _ => String::new(),
        };
        return (
            format!("session:{session}"),
            format!("session {}", esc(&session)),
            turn_key,
            turn_title,
            hit,
        );
    }
    let name = match kind.as_str() {
        "slog" => "log entries",
        "adr" => "decisions",
        "memory" => "MEMORY.md",
        "observation" => "observations",
        "note" => "notes",
        other => other,
    };
    (
        format!("kind:{kind}"),
        esc(name),
        String::new(),
        String::new(),
        hit,
    )
}

/// How many turns a turn page shows around the one it opens, and pages by.
const AROUND: usize = 2;
const STEP: usize = 5;

async fn turn(State(app): State<Shared>, Query(params): Query<Params>) -> Response {
    page(blocking(&app, move |app| turn_page(app, &params)).await)
}

fn number(params: &Params, key: &str) -> Result<Option<usize>> {
    params
        .get(key)
        .map(|v| {
            v.parse::<usize>()
                .map_err(|_| Error::bad_input(format!("`{key}` must be a turn number, not `{v}`")))
        })
        .transpose()
}

fn turn_page(app: &App, params: &Params) -> Result<String> {
    let repo = app.repo()?;
    let (file, target) = match (params.get("card"), params.get("file")) {
        (Some(card), _) => card_place(app, &repo, card)?,
        (None, Some(file)) => (
            file.clone(),
            number(params, "turn")?.ok_or_else(|| Error::bad_input("give &turn=N"))?,
        ),
        (None, None) => {
            return Err(Error::bad_input(
                "give ?file=vault/sessions/AGENT/SESSION.jsonl&turn=N or ?card=ID",
            ));
        }
    };
    let target = target.max(1);
    let from = number(params, "from")?.unwrap_or(target.saturating_sub(AROUND).max(1));
    let to = number(params, "to")?.unwrap_or(target.saturating_add(AROUND));
    let window = session::read(repo.root(), &file, from, to)?;
    if window.total == 0 {
        return Err(Error::new(Kind::NotFound, format!("{file} holds no turns")));
    }
    if target > window.total {
        return Err(Error::new(
            Kind::NotFound,
            format!("{file} has {} turns, not {target}", window.total),
        ));
    }
    let mut body = format!(
        "<h1>Turn {target} of {}</h1><p class=\"meta\">session {} · {} · <a href=\"/api/session?file={}&amp;from={}&amp;to={}\">JSON</a></p>",
        window.total,
        esc(&window.session),
        esc(&window.agent),
        url(&file),
        window.from,
        window.to
    );
    if window.from > 1 {
        let from = window.from.saturating_sub(STEP).max(1);
        let _ = write!(
            body,
            "<a class=\"more\" id=\"earlier\" data-more=\"earlier\" data-file=\"{f}\" data-from=\"{from}\" \
             data-to=\"{to}\" data-total=\"{total}\" href=\"/turn?file={u}&amp;turn={target}&amp;from={from}&amp;to={end}\">earlier turns</a>",
            f = esc(&file),
            to = window.from - 1,
            total = window.total,
            u = url(&file),
            end = window.to,
        );
    }
    body.push_str("<div id=\"turns\">");
    body.push_str(&cards_html(&window, Some(target)));
    body.push_str("</div>");
    if window.to < window.total {
        let to = (window.to + STEP).min(window.total);
        let _ = write!(
            body,
            "<a class=\"more\" id=\"later\" data-more=\"later\" data-file=\"{f}\" data-from=\"{from}\" \
             data-to=\"{to}\" data-total=\"{total}\" href=\"/turn?file={u}&amp;turn={target}&amp;from={start}&amp;to={to}\">later turns</a>",
            f = esc(&file),
            from = window.to + 1,
            total = window.total,
            u = url(&file),
            start = window.from,
        );
    }
    Ok(html::page(&format!("turn {target}"), "/", &body))
}

/// Where a card is: its session file and turn number, from the index (brought up to date as
/// a search does).
fn card_place(app: &App, repo: &crate::repo::Repo, card: &str) -> Result<(String, usize)> {
    let doc = app.ctx().index(repo)?.doc(card)?;
    let doc = doc.ok_or_else(|| {
        Error::new(Kind::NotFound, format!("no turn card {card}"))
            .with_fix("search again: it may have been forgotten")
    })?;
    let turn = doc
        .source
        .rsplit_once('#')
        .and_then(|(_, n)| n.parse().ok())
        .ok_or_else(|| Error::new(Kind::NotFound, format!("{card} is not a turn card")))?;
    Ok((doc.file, turn))
}

/// `GET /turns?file=&from=&to=`: the turns as HTML, for the page's script to insert.
async fn turns(State(app): State<Shared>, Query(params): Query<Params>) -> Response {
    page(
        blocking(&app, move |app| {
            let file = params
                .get("file")
                .ok_or_else(|| Error::bad_input("give ?file=…&from=N&to=M"))?;
            let from = number(&params, "from")?.unwrap_or(1);
            let to = number(&params, "to")?.unwrap_or(from.saturating_add(STEP - 1));
            let repo = app.repo()?;
            let window = session::read(repo.root(), file, from, to)?;
            Ok(cards_html(&window, None))
        })
        .await,
    )
}

/// Each card of `window` as an article: prompt, outcome, commands, files, errors, answer.
fn cards_html(window: &Window, current: Option<usize>) -> String {
    let mut out = String::new();
    for c in &window.cards {
        out.push_str(&card_html(c, current == Some(c.turn)));
    }
    out
}

fn card_html(c: &Card, current: bool) -> String {
    let mut out = format!(
        "<article class=\"turn{}\" id=\"turn-{}\" data-turn=\"{}\"><h3>#{} <span class=\"meta\">{} · {}{}</span></h3>",
        if current { " current" } else { "" },
        c.turn,
        c.turn,
        c.turn,
        esc(&c.ts),
        esc(&c.outcome),
        c.duration_ms
            .map(|ms| format!(" · {}", esc(&crate::cards::span(ms))))
            .unwrap_or_default()
    );
    let _ = write!(
        out,
        "<div class=\"meta\">asked</div><pre class=\"prompt\">{}</pre>",
        esc(&c.prompt)
    );
    if !c.commands.is_empty() {
        out.push_str("<div class=\"meta\">commands</div><ul class=\"commands\">");
        for cmd in &c.commands {
            let exit = cmd.exit.map(|e| format!(" (exit {e})")).unwrap_or_default();
            let _ = write!(out, "<li><code>{}</code>{}", esc(&cmd.command), exit);
            if !cmd.output.is_empty() {
                let _ = write!(out, "<pre>{}</pre>", esc(&cmd.output));
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    if !c.files.is_empty() {
        out.push_str("<div class=\"meta\">files written</div><ul class=\"files\">");
        for f in &c.files {
            let _ = write!(out, "<li><code>{}</code></li>", esc(f));
        }
        out.push_str("</ul>");
    }
    if !c.errors.is_empty() {
        out.push_str("<div class=\"meta\">errors</div><ul class=\"errors\">");
        for e in &c.errors {
            let _ = write!(out, "<li>{}</li>", esc(e));
        }
        out.push_str("</ul>");
    }
    if !c.answer.is_empty() {
        let _ = write!(
            out,
            "<div class=\"meta\">answer</div><pre class=\"answer\">{}</pre>",
            esc(&c.answer)
        );
    }
    out.push_str("</article>");
    out
}

async fn decisions(State(app): State<Shared>) -> Response {
    page(blocking(&app, decisions_page).await)
}

fn adr_list(app: &App) -> Result<Vec<Value>> {
    let envelope = app.command(&["adr", "list"])?;
    Ok(envelope["data"]["adrs"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

fn numbers(v: &Value) -> Vec<u64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

fn badge(status: &str) -> String {
    let class: String = status
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    format!("<span class=\"badge {class}\">{}</span>", esc(status))
}

fn decisions_page(app: &App) -> Result<String> {
    let adrs = adr_list(app)?;
    let mut body = String::from("<h1>Decisions</h1>");
    if adrs.is_empty() {
        body.push_str("<p>No decision records yet: write one with <code>cairn adr new</code>.</p>");
        return Ok(html::page("Decisions", "/decisions", &body));
    }
    body.push_str(&chains_svg(&adrs));
    body.push_str(
        "<table class=\"wide\" id=\"adrs\"><thead><tr><th>#</th><th>title</th><th>status</th>\
         <th>tags</th><th>date</th></tr></thead><tbody>",
    );
    for a in &adrs {
        let n = a["number"].as_u64().unwrap_or_default();
        let tags: Vec<String> = a["tags"]
            .as_array()
            .map(|t| t.iter().filter_map(Value::as_str).map(esc).collect())
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td>{n}</td><td><a href=\"/decisions/{n}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(a["title"].as_str().unwrap_or_default()),
            badge(a["status"].as_str().unwrap_or_default()),
            tags.join(", "),
            esc(a["date"].as_str().unwrap_or_default())
        );
    }
    body.push_str("</tbody></table>");
    Ok(html::page("Decisions", "/decisions", &body))
}

/// The supersede chains of `adrs` (the `adr list --json` records) as the graph of
/// [`charts::supersede_graph`].
fn chains_svg(adrs: &[Value]) -> String {
    let titles: BTreeMap<u64, String> = adrs
        .iter()
        .filter_map(|a| Some((a["number"].as_u64()?, a["title"].as_str()?.to_string())))
        .collect();
    let mut edges: Vec<(u64, u64)> = Vec::new();
    for a in adrs {
        let Some(n) = a["number"].as_u64() else {
            continue;
        };
        edges.extend(numbers(&a["supersedes"]).into_iter().map(|old| (old, n)));
        edges.extend(numbers(&a["superseded_by"]).into_iter().map(|new| (n, new)));
    }
    charts::supersede_graph(&titles, &edges)
}

async fn decision(State(app): State<Shared>, Path(number): Path<String>) -> Response {
    page(blocking(&app, move |app| decision_page(app, &number)).await)
}

fn decision_page(app: &App, number: &str) -> Result<String> {
    let n: u64 = number
        .parse()
        .map_err(|_| Error::bad_input(format!("`{number}` is not an ADR number")))?;
    let envelope = app.command(&["adr".to_string(), "show".into(), n.to_string()])?;
    let data = &envelope["data"];
    let adr = &data["adr"];
    let all = adr_list(app)?;
    let title_of = |m: u64| {
        all.iter()
            .find(|a| a["number"].as_u64() == Some(m))
            .and_then(|a| a["title"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let link = |m: u64| {
        format!(
            "<a href=\"/decisions/{m}\">ADR {m}: {}</a>",
            esc(&title_of(m))
        )
    };
    let mut body = format!(
        "<p class=\"meta\"><a href=\"/decisions\">decisions</a></p><h1>ADR {n}: {}</h1><p>{} · {} · tags: {} · deciders: {}</p>",
        esc(adr["title"].as_str().unwrap_or_default()),
        badge(adr["status"].as_str().unwrap_or_default()),
        esc(adr["date"].as_str().unwrap_or_default()),
        esc(&strings(&adr["tags"]).join(", ")),
        esc(&strings(&adr["deciders"]).join(", "))
    );
    let mut links: Vec<String> = Vec::new();
    for m in numbers(&adr["supersedes"]) {
        links.push(format!(
            "<li class=\"supersedes\">supersedes {}</li>",
            link(m)
        ));
    }
    for m in numbers(&adr["superseded_by"]) {
        links.push(format!(
            "<li class=\"superseded-by\">superseded by {}</li>",
            link(m)
        ));
    }
    for r in adr["relations"].as_array().cloned().unwrap_or_default() {
        let Some(m) = r["adr"].as_u64() else { continue };
        let words = r["text"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| r["kind"].as_str())
            .unwrap_or("relates to");
        links.push(format!(
            "<li class=\"relation\">{} {}</li>",
            esc(words),
            link(m)
        ));
    }
    // The other direction: records whose relations name this one.
    for other in &all {
        let Some(m) = other["number"].as_u64() else {
            continue;
        };
        for r in other["relations"].as_array().cloned().unwrap_or_default() {
            if r["adr"].as_u64() == Some(n) {
                let kind = r["kind"].as_str().unwrap_or("relates to");
                links.push(format!(
                    "<li class=\"relation-from\">{} ({} this one)</li>",
                    link(m),
                    esc(kind)
                ));
            }
        }
    }
    if !links.is_empty() {
        let _ = write!(body, "<ul id=\"links\">{}</ul>", links.concat());
    }
    let text = data["body"].as_str().unwrap_or_default();
    let _ = write!(
        body,
        "<article class=\"adr\">{}</article>",
        html::markdown(text)
    );
    Ok(html::page(&format!("ADR {n}"), "/decisions", &body))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

async fn memory(State(app): State<Shared>) -> Response {
    page(blocking(&app, memory_page).await)
}

/// How many commits of MEMORY.md the history reads.
const HISTORY_COMMITS: usize = 500;

fn memory_page(app: &App) -> Result<String> {
    let envelope = app.command(&["memory", "show"])?;
    let data = &envelope["data"];
    let repo = app.repo()?;
    let changes = super::history::changes(repo.root(), HISTORY_COMMITS).unwrap_or_default();
    let mut body = String::from("<h1>MEMORY.md</h1>");
    let sections = data["memory"]["sections"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if sections.is_empty() {
        body.push_str("<p>MEMORY.md has no entries yet.</p>");
    }
    for s in &sections {
        let _ = write!(
            body,
            "<section class=\"memory-section\"><h2>{}</h2><ul>",
            esc(s["title"].as_str().unwrap_or_default())
        );
        for e in s["entries"].as_array().cloned().unwrap_or_default() {
            let text = e["text"].as_str().unwrap_or_default();
            let date = e["date"].as_str().unwrap_or_default();
            let touching = super::history::touching(&changes, text);
            let _ = write!(
                body,
                "<li class=\"entry\"><span class=\"meta\">{}</span> {}",
                esc(date),
                inline_markdown(text)
            );
            if !touching.is_empty() {
                let _ = write!(
                    body,
                    "<details class=\"history\"><summary>history ({})</summary><ul>",
                    crate::output::count(touching.len(), "commit")
                );
                for c in touching {
                    let _ = write!(
                        body,
                        "<li><code>{}</code> {} {}</li>",
                        esc(c.commit.get(..8).unwrap_or(&c.commit)),
                        esc(&c.date),
                        esc(&c.subject)
                    );
                }
                body.push_str("</ul></details>");
            }
            body.push_str("</li>");
        }
        body.push_str("</ul></section>");
    }
    let _ = write!(
        body,
        "<details><summary>the whole file, rendered</summary><article>{}</article></details>",
        html::markdown(data["text"].as_str().unwrap_or_default())
    );
    Ok(html::page("MEMORY.md", "/memory", &body))
}

/// An entry's Markdown without the paragraph comrak puts around it.
fn inline_markdown(text: &str) -> String {
    let rendered = html::markdown(text);
    let trimmed = rendered.trim();
    trimmed
        .strip_prefix("<p>")
        .and_then(|t| t.strip_suffix("</p>"))
        .unwrap_or(trimmed)
        .to_string()
}

async fn review(
    State(app): State<Shared>,
    Extension(access): Extension<Access>,
    Query(params): Query<Params>,
) -> Response {
    page(blocking(&app, move |app| review_page(app, &params, access)).await)
}

/// The review page: each pending proposal with its diff and sources, and, for a request that
/// carried the token, the approve and reject forms with their CSRF value. Without the token
/// the page only reads: it says how to log in, and holds nothing that lets its reader write.
fn review_page(app: &App, params: &Params, access: Access) -> Result<String> {
    let list = app.command(&["review", "--list"])?;
    let proposals = list["data"]["proposals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut body = String::from("<h1>Review</h1>");
    if let Some(done) = params.get("done") {
        let _ = write!(body, "<p class=\"flash\" id=\"flash\">{}</p>", esc(done));
    }
    if proposals.is_empty() {
        body.push_str("<p id=\"none\">No proposals wait for review.</p>");
        return Ok(html::page("Review", "/review", &body));
    }
    let _ = write!(
        body,
        "<p class=\"meta\">{} proposals wait.</p>",
        proposals.len()
    );
    let decides = access == Access::Token;
    if !decides {
        body.push_str(
            "<p class=\"meta\" id=\"login\">To approve or reject, open the console with its \
             token once: <code>/?token=TOKEN</code> (the token file's content), or run \
             <code>cairn review</code>.</p>",
        );
    }
    for p in &proposals {
        let id = p["id"].as_str().unwrap_or_default().to_string();
        let shown = app.command(&["review".to_string(), "--show".into(), id.clone()])?;
        let v = &shown["data"];
        let _ = write!(
            body,
            "<section class=\"group proposal\" id=\"p-{}\"><h2>{} · {}</h2><pre class=\"text\">{}</pre>\
             <p class=\"meta\">{} · confidence {:.2} · {}</p>",
            esc(&id),
            esc(v["op"].as_str().unwrap_or_default()),
            esc(v["section"].as_str().unwrap_or_default()),
            esc(v["text"].as_str().unwrap_or_default()),
            esc(&id),
            v["confidence"].as_f64().unwrap_or_default(),
            esc(v["rationale"].as_str().unwrap_or_default())
        );
        if let Some(diff) = v["diff"].as_str() {
            body.push_str("<pre class=\"diff\">");
            for line in diff.lines() {
                let class = if line.starts_with('+') && !line.starts_with("+++") {
                    "add"
                } else if line.starts_with('-') && !line.starts_with("---") {
                    "del"
                } else {
                    "ctx"
                };
                let _ = writeln!(body, "<span class=\"{class}\">{}</span>", esc(line));
            }
            body.push_str("</pre>");
        }
        if let Some(why) = v["cannot_apply"].as_str() {
            let _ = write!(body, "<p class=\"error\">{}</p>", esc(why));
        }
        let sources = v["sources"].as_array().cloned().unwrap_or_default();
        if !sources.is_empty() {
            body.push_str("<div class=\"meta\">sources</div><ul class=\"sources\">");
            for s in &sources {
                let open = s["card"]
                    .as_str()
                    .map(|c| format!(" <a href=\"/turn?card={}\">open turn</a>", url(c)))
                    .unwrap_or_default();
                let _ = write!(
                    body,
                    "<li><code>{}</code>{} {}</li>",
                    esc(s["id"].as_str().unwrap_or_default()),
                    open,
                    esc(s["text"].as_str().unwrap_or("(no longer stored)"))
                );
            }
            body.push_str("</ul>");
        }
        if !decides {
            body.push_str("</section>");
            continue;
        }
        let csrf = app.csrf();
        let _ = write!(
            body,
            "<div class=\"actions\"><form method=\"post\" action=\"/review/{u}\" class=\"approve\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"action\" value=\"approve\">\
             <label>entry text (edit to change it)<textarea name=\"text\">{t}</textarea></label>\
             <button type=\"submit\">Approve</button></form>\
             <form method=\"post\" action=\"/review/{u}\" class=\"reject\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"action\" value=\"reject\">\
             <label>reason<textarea name=\"why\" required></textarea></label>\
             <button type=\"submit\">Reject</button></form></div></section>",
            u = url(&id),
            t = esc(v["text"].as_str().unwrap_or_default()),
        );
    }
    Ok(html::page("Review", "/review", &body))
}

#[derive(serde::Deserialize)]
struct DecideForm {
    #[serde(default)]
    csrf: String,
    action: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    why: Option<String>,
}

/// `POST /review/ID` from the review page's forms: the token (the login cookie) and the form's
/// CSRF value are both required; the answer sends the browser back to the review page with
/// what was done.
async fn decide(
    State(app): State<Shared>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    if access != Access::Token {
        return error_response(StatusCode::UNAUTHORIZED, &super::needs_token(), false);
    }
    if !auth::same(&form.csrf, app.csrf()) {
        let err = Error::bad_input("the form's CSRF value is missing or wrong")
            .with_fix("reload the review page and decide again");
        return error_response(StatusCode::FORBIDDEN, &err, false);
    }
    let result = blocking(&app, move |app| {
        let args = match form.action.as_str() {
            "approve" => {
                let mut args = vec!["review".to_string(), "--approve".into(), id.clone()];
                let original = app.command(&["review".to_string(), "--show".into(), id.clone()])?;
                let proposed = original["data"]["text"].as_str().unwrap_or_default();
                if let Some(text) = form
                    .text
                    .filter(|t| !t.trim().is_empty() && t.trim() != proposed.trim())
                {
                    args.push("--text".into());
                    args.push(text);
                }
                args
            }
            "reject" => {
                let why = form
                    .why
                    .filter(|w| !w.trim().is_empty())
                    .ok_or_else(|| Error::bad_input("a rejection needs its reason"))?;
                vec![
                    "review".into(),
                    "--reject".into(),
                    id.clone(),
                    "--why".into(),
                    why,
                ]
            }
            other => {
                return Err(Error::bad_input(format!(
                    "no action `{other}`: approve or reject"
                )));
            }
        };
        let envelope = app.write(access, &args)?;
        let data = &envelope["data"];
        let commit = data["commit"]["id"]
            .as_str()
            .or_else(|| data["commit"].as_str())
            .map(|c| format!(", commit {}", c.get(..8).unwrap_or(c)))
            .unwrap_or_default();
        let what = if form.action == "approve" {
            if data["approved"] == Value::Bool(true) {
                "approved"
            } else {
                "could not approve"
            }
        } else {
            "rejected"
        };
        Ok(format!("{what} {id}{commit}"))
    })
    .await;
    match result {
        Ok(done) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("/review?done={}", url(&done)))],
        )
            .into_response(),
        Err(err) => error_response(status_of(err.kind), &err, false),
    }
}
