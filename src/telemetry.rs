//! Telemetry: one event per pipeline step, appended to `.cairn/telemetry.jsonl`.
//!
//! `{"ts","component","action","success","duration_ms","metadata"}`. Telemetry is derived
//! usage data: it lives in `.cairn/`, is never committed, and failing to write it never fails
//! the command (the failure goes to stderr instead: a silent failure is a bug).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::repo::Repo;

/// The file, relative to the repository root.
pub const FILE: &str = ".cairn/telemetry.jsonl";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    pub ts: String,
    pub component: String,
    pub action: String,
    pub success: bool,
    pub duration_ms: u64,
    pub metadata: Value,
}

/// Appends one event; returns a warning for stderr if it could not be written.
pub fn emit(
    repo: &Repo,
    now: DateTime<Utc>,
    component: &str,
    action: &str,
    success: bool,
    started: std::time::Instant,
    metadata: Value,
) -> Option<String> {
    record(
        repo,
        now,
        component,
        action,
        success,
        started.elapsed(),
        metadata,
    )
}

/// Appends one event of a step that took `duration`; returns a warning for stderr if it
/// could not be written.
pub fn record(
    repo: &Repo,
    now: DateTime<Utc>,
    component: &str,
    action: &str,
    success: bool,
    duration: std::time::Duration,
    metadata: Value,
) -> Option<String> {
    let event = Event {
        ts: crate::time::format(now),
        component: component.into(),
        action: action.into(),
        success,
        duration_ms: duration.as_millis() as u64,
        metadata,
    };
    let mut line = serde_json::to_vec(&event).expect("event serializes");
    line.push(b'\n');
    if let Err(e) = crate::repo::ignore_derived(repo) {
        return Some(format!("telemetry not written: {e}"));
    }
    crate::files::append_derived(&repo.path(FILE), &line, &repo.recovered_dir())
        .err()
        .map(|e| format!("telemetry not written: {e}"))
}

/// Every event, oldest first (lines that do not parse are skipped).
pub fn read(repo: &Repo) -> Vec<Event> {
    let Ok(Some(text)) = crate::files::read_optional(&repo.path(FILE)) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
