//! `cairn stats [--weeks N] [--since T] [--telemetry]`: counts a person reads (records per ISO
//! week as a small chart, categories and verdicts, what the gate discarded, the pipeline's
//! cost per component) or the telemetry events themselves. `--since` limits every figure to
//! the window: observations by the day they were written (their file's day), cards by their
//! turn's time, recalls and decisions by their own times, telemetry by its events' times.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Ctx;
use crate::error::Result;
use crate::output::{Report, Status};
use crate::telemetry::Event;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// List the telemetry events (newest last) instead of the summary
    #[arg(long)]
    pub telemetry: bool,
    /// Only events of this component (observe, sessions, gate, recall, …)
    #[arg(long)]
    pub component: Option<String>,
    /// Only what happened at or after this time (RFC 3339, YYYY-MM-DD, or a span like 7d):
    /// every figure, and the weeks charted
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// How many ISO weeks the chart shows, up to the week of now (without --since)
    #[arg(long, default_value_t = 8)]
    pub weeks: usize,
    /// At most this many events (the newest)
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

/// Totals of one component's action over its events.
#[derive(Debug, Default, serde::Serialize)]
struct Totals {
    runs: u64,
    failed: u64,
    duration_ms: u64,
    /// Sums of the numeric metadata (extracted, allowed, tokens_in…).
    sums: BTreeMap<String, f64>,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let repo = ctx.repo()?;
    let since = args
        .since
        .as_deref()
        .map(|t| crate::time::parse(t, ctx.now))
        .transpose()
        .map_err(crate::error::Error::bad_input)?;
    let events: Vec<Event> = crate::telemetry::read(&repo)
        .into_iter()
        .filter(|e| args.component.as_deref().is_none_or(|c| e.component == c))
        .filter(|e| {
            since.is_none_or(|s| {
                chrono::DateTime::parse_from_rfc3339(&e.ts)
                    .is_ok_and(|t| t.with_timezone(&chrono::Utc) >= s)
            })
        })
        .collect();
    if args.telemetry {
        let skip = events.len().saturating_sub(args.limit);
        let shown = &events[skip..];
        let mut human = String::new();
        for e in shown {
            human.push_str(&format!(
                "{}  {:<9} {:<10} {:<4} {:>7} ms  {}\n",
                e.ts,
                e.component,
                e.action,
                if e.success { "ok" } else { "FAIL" },
                e.duration_ms,
                compact(&e.metadata)
            ));
        }
        let status = if shown.is_empty() {
            Status::NothingOrFailed
        } else {
            Status::Ok
        };
        let data = json!({ "total": events.len(), "events": shown });
        return Ok(Report::new("stats", data, human)
            .status(status)
            .empty_when(shown.is_empty(), "no telemetry events"));
    }
    let mut totals: BTreeMap<String, Totals> = BTreeMap::new();
    for e in &events {
        let t = totals
            .entry(format!("{} {}", e.component, e.action))
            .or_default();
        t.runs += 1;
        t.failed += u64::from(!e.success);
        t.duration_ms += e.duration_ms;
        if let Value::Object(m) = &e.metadata {
            // A process id is a name, not an amount: summing it means nothing.
            for (k, v) in m.iter().filter(|(k, _)| *k != "pid") {
                if let Some(n) = v.as_f64().filter(|_| !v.is_boolean()) {
                    *t.sums.entry(k.clone()).or_default() += n;
                }
            }
        }
    }
    let in_window = |day: Option<chrono::NaiveDate>| {
        since.is_none_or(|s| day.is_some_and(|d| d >= s.date_naive()))
    };
    let at_or_after = |ts: &str| {
        since.is_none_or(|s| {
            chrono::DateTime::parse_from_rfc3339(ts)
                .is_ok_and(|t| t.with_timezone(&chrono::Utc) >= s)
        })
    };
    // Observations by the day written: their file's day.
    let written = written_days(&repo)?;
    let (observations, _) = crate::store::load_all(&repo)?;
    let observations: Vec<&crate::store::Folded> = observations
        .iter()
        .filter(|f| in_window(written.get(&f.obs.id).copied()))
        .collect();
    let mut categories: BTreeMap<String, u64> = BTreeMap::new();
    let mut verdicts: BTreeMap<String, u64> = BTreeMap::new();
    let mut types: BTreeMap<String, u64> = BTreeMap::new();
    for f in observations
        .iter()
        .filter(|f| f.state != crate::store::State::Deleted)
    {
        *categories.entry(f.obs.category_id.clone()).or_default() += 1;
        *verdicts
            .entry(f.obs.write_verdict.as_str().to_string())
            .or_default() += 1;
        *types.entry(f.obs.observation_type.clone()).or_default() += 1;
    }
    let sessions = super::observe::session_files(&repo)?.len();
    // Per ISO week: observations written, cards (by turn time), recalls, decisions.
    let weeks = crate::stats::weeks(ctx.now, args.weeks, since);
    let card_days: Vec<chrono::NaiveDate> = card_times(&repo)?
        .iter()
        .filter(|t| at_or_after(t))
        .filter_map(|t| crate::stats::day_of(t))
        .collect();
    let recall_days: Vec<chrono::NaiveDate> = crate::recall::counts::each(&repo)?
        .iter()
        .filter(|(_, t)| at_or_after(t))
        .filter_map(|(_, t)| crate::stats::day_of(t))
        .collect();
    let decision_days: Vec<chrono::NaiveDate> = decision_times(&repo)?
        .iter()
        .filter(|t| at_or_after(t))
        .filter_map(|t| crate::stats::day_of(t))
        .collect();
    let series = [
        (
            "observations",
            crate::stats::per_week(
                &weeks,
                observations
                    .iter()
                    .filter_map(|f| written.get(&f.obs.id).copied()),
            ),
        ),
        ("cards", crate::stats::per_week(&weeks, card_days)),
        ("recalls", crate::stats::per_week(&weeks, recall_days)),
        ("decided", crate::stats::per_week(&weeks, decision_days)),
    ];
    let refs: Vec<&Event> = events.iter().collect();
    let costs = crate::stats::costs(&refs);
    let discarded = crate::stats::discarded(&refs);
    let discarded_total: u64 = discarded.values().sum();
    let window = match since {
        Some(s) => format!(" since {}", crate::time::format(s)),
        None => String::new(),
    };
    let mut human = format!(
        "observations{window}: {} ({} ingested)\n",
        observations.len(),
        crate::output::count(sessions, "session")
    );
    for (label, map) in [
        ("categories", &categories),
        ("verdicts", &verdicts),
        ("types", &types),
    ] {
        let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k} {v}")).collect();
        human.push_str(&format!(
            "  {label}: {}\n",
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(", ")
            }
        ));
    }
    let by: Vec<String> = discarded.iter().map(|(k, v)| format!("{k} {v}")).collect();
    human.push_str(&format!(
        "  discarded by the gate{window}: {discarded_total}{} (only counted, never stored)\n",
        if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        }
    ));
    if let (Some(first), Some(last)) = (weeks.first(), weeks.last()) {
        human.push_str(&format!(
            "\nper ISO week, {} to {}: observations written, turn cards (by turn time), \
             observations recalled, proposals decided\n",
            first.week, last.week
        ));
    }
    let chart_series: Vec<(&str, &[u64])> = series
        .iter()
        .map(|(name, counts)| (*name, counts.as_slice()))
        .collect();
    human.push_str(&crate::stats::chart(&weeks, &chart_series, CHART_WIDTH));
    human.push_str(&format!("\ncost per component{window} (from telemetry):\n"));
    for (name, c) in &costs {
        let mut line = format!("  {name}: {}", crate::output::count(c.runs, "run"));
        if c.failed > 0 {
            line.push_str(&format!(" ({} failed)", c.failed));
        }
        if c.tokens_in + c.tokens_out > 0 {
            line.push_str(&format!(
                ", tokens {} in / {} out",
                c.tokens_in, c.tokens_out
            ));
        }
        if c.calls > 0 {
            line.push_str(&format!(", {}", crate::output::count(c.calls, "LLM call")));
        }
        line.push_str(&format!(", {} ms\n", c.duration_ms));
        human.push_str(&line);
    }
    if costs.is_empty() {
        human.push_str("  no telemetry yet\n");
    }
    human.push_str("pipeline (from telemetry):\n");
    for (name, t) in &totals {
        let sums: Vec<String> = t.sums.iter().map(|(k, v)| format!("{k} {v}")).collect();
        human.push_str(&format!(
            "  {name}: {}{}, {} ms{}\n",
            crate::output::count(t.runs, "run"),
            if t.failed > 0 {
                format!(" ({} failed)", t.failed)
            } else {
                String::new()
            },
            t.duration_ms,
            if sums.is_empty() {
                String::new()
            } else {
                format!("; {}", sums.join(", "))
            }
        ));
    }
    if totals.is_empty() {
        human.push_str("  no telemetry yet\n");
    }
    let week_rows: Vec<Value> = weeks
        .iter()
        .enumerate()
        .map(|(i, w)| {
            json!({
                "week": w.week,
                "start": w.start,
                "observations": series[0].1[i],
                "cards": series[1].1[i],
                "recalls": series[2].1[i],
                "decided": series[3].1[i],
            })
        })
        .collect();
    let data = json!({
        "since": since.map(crate::time::format),
        "now": crate::time::format(ctx.now),
        "observations": observations.len(),
        "sessions": sessions,
        "categories": categories,
        "verdicts": verdicts,
        "types": types,
        "weeks": week_rows,
        "discarded": { "total": discarded_total, "by": discarded },
        "cost": costs,
        "pipeline": totals,
    });
    Ok(Report::new("stats", data, human))
}

/// Width of the chart's bars, in cells.
const CHART_WIDTH: usize = 10;

/// Each stored observation's id and the UTC day it was written (its file's name).
fn written_days(
    repo: &crate::repo::Repo,
) -> Result<std::collections::HashMap<String, chrono::NaiveDate>> {
    let mut out = std::collections::HashMap::new();
    for path in crate::store::day_files(repo)? {
        let Some((day, _)) = crate::store::file_day(&path) else {
            continue;
        };
        let (lines, _) = crate::store::read_file(&path)?;
        for (_, line) in lines {
            if let crate::store::Line::Observation(o) = line {
                out.entry(o.id).or_insert(day);
            }
        }
    }
    Ok(out)
}

/// The time of every turn card.
fn card_times(repo: &crate::repo::Repo) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for rel in super::observe::session_files(repo)? {
        let Ok(text) = std::fs::read_to_string(repo.path(&rel)) else {
            continue;
        };
        for line in text.lines() {
            if let Ok(crate::cards::Record::Card(c)) = serde_json::from_str(line) {
                out.push(c.ts);
            }
        }
    }
    Ok(out)
}

/// The time of every decision about a proposal, but those that leave it to a person.
fn decision_times(repo: &crate::repo::Repo) -> Result<Vec<String>> {
    use crate::proposals::{Decision, Event as P, Line};
    let mut out = Vec::new();
    for path in crate::proposals::day_files(repo)? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| crate::error::Error::io(path.display(), &e))?;
        for (i, line) in text.lines().enumerate() {
            if let Ok(Line::Event(P::Decision { decision, ts, .. })) =
                crate::proposals::parse_line(&path, i + 1, line)
                && decision != Decision::NeedsReview
            {
                out.push(ts);
            }
        }
    }
    Ok(out)
}

/// Metadata as `key=value` pairs on one line.
fn compact(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
