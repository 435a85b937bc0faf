//! The stats page: the counts of `cairn stats` and its weekly series as bar charts
//! ([`charts::bar_chart`]), over a window of weeks the reader chooses.

use std::collections::HashMap;
use std::fmt::Write;

use axum::extract::{Query, State};
use axum::response::Response;

use super::html::{self, esc};
use super::{App, Shared, blocking, charts};
use crate::error::{Error, Result};

type Params = HashMap<String, String>;

pub async fn stats(State(app): State<Shared>, Query(params): Query<Params>) -> Response {
    super::pages::page(blocking(&app, move |app| stats_page(app, &params)).await)
}

/// The windows the stats page offers, in weeks; without `?weeks=` it shows the first of them
/// in which turn cards were made (a repository of old sessions charts them, not empty bars).
const WINDOWS: [usize; 3] = [8, 26, 52];

fn stats_page(app: &App, params: &Params) -> Result<String> {
    let asked = match params.get("weeks").filter(|w| !w.is_empty()) {
        Some(w) => Some(
            w.parse::<usize>()
                .ok()
                .filter(|n| (1..=104).contains(n))
                .ok_or_else(|| Error::bad_input(format!("`weeks` must be 1 to 104, not `{w}`")))?,
        ),
        None => None,
    };
    let widest = asked.unwrap_or(WINDOWS[WINDOWS.len() - 1]);
    let envelope = app.command(&["stats", "--weeks", &widest.to_string()])?;
    let data = &envelope["data"];
    let all = data["weeks"].as_array().cloned().unwrap_or_default();
    let count = asked.unwrap_or_else(|| {
        WINDOWS
            .into_iter()
            .find(|n| {
                all.iter()
                    .rev()
                    .take(*n)
                    .any(|w| w["cards"].as_u64().unwrap_or_default() > 0)
            })
            .unwrap_or(WINDOWS[0])
    });
    let weeks = &all[all.len().saturating_sub(count)..];
    let span = match (weeks.first(), weeks.last()) {
        (Some(a), Some(b)) => format!(
            "per ISO week (Monday to Sunday, UTC), {} to {}",
            esc(a["week"].as_str().unwrap_or_default()),
            esc(b["week"].as_str().unwrap_or_default())
        ),
        _ => String::new(),
    };
    let mut choices = String::new();
    for n in WINDOWS {
        if n == count {
            let _ = write!(choices, " <strong>{n} weeks</strong>");
        } else {
            let _ = write!(choices, " <a href=\"/stats?weeks={n}\">{n} weeks</a>");
        }
    }
    let mut body = format!(
        "<h1>Stats</h1><p>{} observations · {} sessions</p><p class=\"meta\" id=\"window\">{span} ·{choices}</p>",
        data["observations"].as_u64().unwrap_or_default(),
        data["sessions"].as_u64().unwrap_or_default()
    );
    for (key, name) in [
        (
            "observations",
            "observations written, by the week of their file's day",
        ),
        ("cards", "turn cards, by the week of their turn"),
        ("recalls", "recalls, by the week asked"),
        ("decided", "proposal decisions, by the week decided"),
    ] {
        let values: Vec<(String, u64)> = weeks
            .iter()
            .map(|w| {
                (
                    w["week"].as_str().unwrap_or_default().to_string(),
                    w[key].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        body.push_str(&charts::bar_chart(key, name, &values));
    }
    for (key, name) in [("categories", "categories"), ("verdicts", "gate verdicts")] {
        if let Some(map) = data[key].as_object().filter(|m| !m.is_empty()) {
            let _ = write!(body, "<h2>{name}</h2><table><tbody>");
            for (k, v) in map {
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td></tr>",
                    esc(k),
                    esc(&v.to_string())
                );
            }
            body.push_str("</tbody></table>");
        }
    }
    Ok(html::page("Stats", "/stats", &body))
}
