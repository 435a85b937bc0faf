//! What `cairn stats` counts for a person: records per ISO week, drawn as a small terminal
//! chart, and the pipeline's cost from telemetry. Pure: it takes times and events, and the
//! command gathers them.
//!
//! Weeks are ISO weeks (Monday to Sunday, UTC, named `2026-W48`), as rows, oldest first:
//! the last `--weeks` of them up to the week of `now`, or, with `--since`, every week from the
//! one holding `since` to the week of `now`. Each series' bars are scaled to its own largest
//! week, in eighths of a cell (`█▉▊▋▌▍▎▏`), with the count beside the bar.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::telemetry::Event;

/// One ISO week.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Week {
    /// `2026-W48`.
    pub week: String,
    /// Its Monday, `YYYY-MM-DD`.
    pub start: String,
    #[serde(skip)]
    monday: NaiveDate,
}

impl Week {
    /// The week holding `day`.
    pub fn of(day: NaiveDate) -> Week {
        let iso = day.iso_week();
        let monday = day - Duration::days(i64::from(day.weekday().num_days_from_monday()));
        Week {
            week: format!("{}-W{:02}", iso.year(), iso.week()),
            start: monday.format("%Y-%m-%d").to_string(),
            monday,
        }
    }

    fn next(&self) -> Week {
        Week::of(self.monday + Duration::days(7))
    }
}

/// The weeks shown: from the week of `since` (else `count` weeks back) to the week of `now`.
pub fn weeks(now: DateTime<Utc>, count: usize, since: Option<DateTime<Utc>>) -> Vec<Week> {
    let last = Week::of(now.date_naive());
    let first = match since {
        Some(s) if s <= now => Week::of(s.date_naive()),
        Some(_) => last.clone(),
        None => Week::of(last.monday - Duration::days(7 * (count.max(1) as i64 - 1))),
    };
    let mut out = vec![first];
    while out.last().is_some_and(|w| w.monday < last.monday) {
        let next = out.last().expect("one week at least").next();
        out.push(next);
    }
    out
}

/// How many of `days` fall in each of `weeks` (days outside them are not counted).
pub fn per_week(weeks: &[Week], days: impl IntoIterator<Item = NaiveDate>) -> Vec<u64> {
    let mut counts = vec![0u64; weeks.len()];
    let Some(first) = weeks.first() else {
        return counts;
    };
    for day in days {
        let offset = (day - first.monday).num_days();
        if offset < 0 {
            continue;
        }
        if let Some(c) = counts.get_mut((offset / 7) as usize) {
            *c += 1;
        }
    }
    counts
}

/// A bar of `value` out of `max` in `width` cells, in eighths.
pub fn bar(value: u64, max: u64, width: usize) -> String {
    const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    if max == 0 || value == 0 {
        return String::new();
    }
    let eighths = ((value as f64 / max as f64) * (width * 8) as f64).round() as usize;
    // A week with something in it shows at least a sliver.
    let eighths = eighths.max(1);
    let mut s = "█".repeat(eighths / 8);
    s.push_str(EIGHTHS[eighths % 8]);
    s
}

/// A row a week, a column a series: each cell a bar of `width` cells scaled to the series'
/// largest week, and the count.
pub fn chart(weeks: &[Week], series: &[(&str, &[u64])], width: usize) -> String {
    let digits = series
        .iter()
        .flat_map(|(_, c)| c.iter())
        .map(|n| n.to_string().len())
        .max()
        .unwrap_or(1);
    let cell = width + 1 + digits;
    let mut out = format!("{:<8}", "week");
    for (title, _) in series {
        out.push_str(&format!("   {title:<cell$}"));
    }
    let mut out = out.trim_end().to_string();
    out.push('\n');
    let maxes: Vec<u64> = series
        .iter()
        .map(|(_, c)| c.iter().copied().max().unwrap_or(0))
        .collect();
    for (i, w) in weeks.iter().enumerate() {
        let mut row = format!("{:<8}", w.week);
        for ((_, counts), max) in series.iter().zip(&maxes) {
            let n = counts.get(i).copied().unwrap_or(0);
            let b = bar(n, *max, width);
            let pad = width - b.chars().count().min(width);
            row.push_str(&format!("   {b}{} {n:>digits$}", " ".repeat(pad)));
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// The cost of one component of the pipeline, from its telemetry events.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Cost {
    pub runs: u64,
    pub failed: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub calls: u64,
    pub duration_ms: u64,
}

/// Each component's cost: runs, failures, tokens in and out, LLM calls, time.
pub fn costs(events: &[&Event]) -> BTreeMap<String, Cost> {
    let mut out: BTreeMap<String, Cost> = BTreeMap::new();
    for e in events {
        let c = out.entry(e.component.clone()).or_default();
        c.runs += 1;
        c.failed += u64::from(!e.success);
        c.duration_ms += e.duration_ms;
        c.tokens_in += number(&e.metadata, "tokens_in");
        c.tokens_out += number(&e.metadata, "tokens_out");
        c.calls += number(&e.metadata, "calls");
    }
    out
}

/// What the write gate discarded, by component (`gate` for remember and import, `observe`):
/// discarded candidates are never stored, only counted in telemetry.
pub fn discarded(events: &[&Event]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in events {
        if matches!(e.component.as_str(), "gate" | "observe") {
            let n = number(&e.metadata, "discarded");
            *out.entry(format!("{} {}", e.component, e.action))
                .or_default() += n;
        }
    }
    out.retain(|_, n| *n > 0);
    out
}

/// A numeric metadata field, found at the top or one level down (`counts.tokens_in`).
fn number(meta: &Value, key: &str) -> u64 {
    let direct = meta.get(key).and_then(Value::as_u64);
    direct.unwrap_or_else(|| {
        meta.as_object()
            .map(|m| {
                m.values()
                    .filter_map(|v| v.get(key).and_then(Value::as_u64))
                    .sum()
            })
            .unwrap_or(0)
    })
}

/// An RFC 3339 time's UTC day.
pub fn day_of(ts: &str) -> Option<NaiveDate> {
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.with_timezone(&Utc).date_naive())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn weeks_are_iso_weeks_ending_with_the_week_of_now() {
        // 2026-12-01 is a Tuesday in ISO week 49; 2027-01-01 is in 2026-W53.
        let w = weeks(at("2026-12-01T12:00:00Z"), 3, None);
        let names: Vec<&str> = w.iter().map(|w| w.week.as_str()).collect();
        assert_eq!(names, ["2026-W47", "2026-W48", "2026-W49"]);
        assert_eq!(w[2].start, "2026-11-30");
        assert_eq!(Week::of(day("2027-01-01")).week, "2026-W53");
        assert_eq!(Week::of(day("2027-01-04")).week, "2027-W01");
        let since = weeks(
            at("2026-12-01T12:00:00Z"),
            8,
            Some(at("2026-11-24T12:00:00Z")),
        );
        assert_eq!(since.len(), 2, "--since decides the first week");
    }

    #[test]
    fn days_fall_in_their_week_and_outside_ones_are_dropped() {
        let w = weeks(at("2026-12-01T12:00:00Z"), 2, None);
        let counts = per_week(
            &w,
            [
                day("2026-11-22"), // W47: before the first week
                day("2026-11-23"),
                day("2026-11-29"),
                day("2026-11-30"),
                day("2026-12-07"), // W50: after now's week
            ],
        );
        assert_eq!(counts, [2, 1]);
    }

    #[test]
    fn bars_scale_to_the_largest_week_in_eighths() {
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 10, 4), "██");
        assert_eq!(bar(1, 16, 4), "▎");
        assert_eq!(bar(1, 1000, 4), "▏", "a sliver for a week with something");
        assert_eq!(bar(0, 10, 4), "");
        let w = weeks(at("2026-12-01T12:00:00Z"), 2, None);
        let text = chart(&w, &[("seen", &[4, 2]), ("kept", &[0, 12])], 4);
        assert_eq!(
            text,
            "week       seen      kept\n\
             2026-W48   ████  4         0\n\
             2026-W49   ██    2   ████ 12\n"
        );
    }

    #[test]
    fn costs_and_discards_come_from_the_events_metadata() {
        let ev = |component: &str, success: bool, meta: Value| Event {
            ts: "2026-12-01T00:00:00.000Z".into(),
            component: component.into(),
            action: "run".into(),
            success,
            duration_ms: 5,
            metadata: meta,
        };
        let events = [
            ev(
                "observe",
                true,
                serde_json::json!({"tokens_in": 10, "tokens_out": 2, "discarded": 3}),
            ),
            ev("observe", false, serde_json::json!({"tokens_in": 5})),
            ev(
                "reflect",
                true,
                serde_json::json!({"counts": {"tokens_in": 7}}),
            ),
            ev("gate", true, serde_json::json!({"discarded": 1})),
        ];
        let refs: Vec<&Event> = events.iter().collect();
        let c = costs(&refs);
        assert_eq!(
            (
                c["observe"].runs,
                c["observe"].failed,
                c["observe"].tokens_in
            ),
            (2, 1, 15)
        );
        assert_eq!(c["reflect"].tokens_in, 7);
        let d = discarded(&refs);
        assert_eq!(d["observe run"], 3);
        assert_eq!(d["gate run"], 1);
    }
}
