//! `cairn stats [--telemetry]`: counts, categories and pipeline figures; or the telemetry
//! events themselves.

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
    /// Only events at or after this time (RFC 3339, YYYY-MM-DD, or a span like 7d)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
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
            for (k, v) in m {
                if let Some(n) = v.as_f64().filter(|_| !v.is_boolean()) {
                    *t.sums.entry(k.clone()).or_default() += n;
                }
            }
        }
    }
    let (observations, _) = crate::store::load_all(&repo)?;
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
    let mut human = format!(
        "observations: {} ({} ingested)\n",
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
    human.push_str("pipeline (from telemetry):\n");
    for (name, t) in &totals {
        let sums: Vec<String> = t.sums.iter().map(|(k, v)| format!("{k} {v}")).collect();
        human.push_str(&format!(
            "  {name}: {}{}, {} ms; {}\n",
            crate::output::count(t.runs, "run"),
            if t.failed > 0 {
                format!(" ({} failed)", t.failed)
            } else {
                String::new()
            },
            t.duration_ms,
            sums.join(", ")
        ));
    }
    if totals.is_empty() {
        human.push_str("  no telemetry yet\n");
    }
    let data = json!({
        "observations": observations.len(),
        "sessions": sessions,
        "categories": categories,
        "verdicts": verdicts,
        "types": types,
        "pipeline": totals,
    });
    Ok(Report::new("stats", data, human))
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
