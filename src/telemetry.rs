//! Telemetry: one event per pipeline step, appended to `.cairn/telemetry.jsonl`.
//!
//! `{"ts","component","action","success","duration_ms","metadata"}`. Telemetry is derived
//! usage data: it lives in `.cairn/`, is never committed, and failing to write it never fails
//! the command (the failure goes to stderr instead: a silent failure is a bug).
//!
//! What people typed stays out of it: every text in an event's metadata (values and keys) is
//! redacted as a write to the repository is ([`record`]), and a query is kept as its length
//! ([`query`]: `{"words","chars"}`), with its text only under `[telemetry] queries = true`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where events are written and what decides their content: the knowledge repository
/// ([`crate::repo::Repo`] implements it). A trait, so that telemetry sits below the repository
/// code that records its own events (the writer lock's wait and hold, on release).
pub trait Place {
    /// `rel` (relative to the repository root) as a path.
    fn file(&self, rel: &str) -> std::path::PathBuf;
    /// Where torn tails cut from JSONL files are kept.
    fn recovered(&self) -> std::path::PathBuf;
    /// `[redact] patterns`, applied to every text of an event.
    fn redact_patterns(&self) -> &[String];
    /// `[telemetry] queries`: whether a query's text is kept.
    fn keep_queries(&self) -> bool;
    /// Makes sure the derived folder is git-ignored before anything is written in it.
    fn ignore_derived(&self) -> crate::error::Result<()>;
}

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
    repo: &impl Place,
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
    repo: &impl Place,
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
        metadata: redacted(metadata, repo.redact_patterns()),
    };
    let mut line = serde_json::to_vec(&event).expect("event serializes");
    line.push(b'\n');
    if let Err(e) = repo.ignore_derived() {
        return Some(format!("telemetry not written: {e}"));
    }
    crate::files::append_derived(&repo.file(FILE), &line, &repo.recovered())
        .err()
        .map(|e| format!("telemetry not written: {e}"))
}

/// A query as an event keeps it: its length in words and characters, and its text only when
/// `[telemetry] queries = true` (redacted then by [`record`], as every text of an event).
pub fn query(repo: &impl Place, text: &str) -> Value {
    let mut kept = serde_json::json!({
        "words": text.split_whitespace().count(),
        "chars": text.chars().count(),
    });
    if repo.keep_queries() {
        kept["text"] = Value::String(text.to_string());
    }
    kept
}

/// `metadata` with every string (values and keys) redacted with the built-in rules and
/// `extra` (`[redact] patterns`). The redactor is compiled only when a text may hold a secret
/// (or extra patterns are set), once per event; a text it cannot redact (a pattern that does
/// not compile) is dropped.
fn redacted(metadata: Value, extra: &[String]) -> Value {
    use std::borrow::Cow;
    let mut redactor: Option<Option<Cow<'static, crate::redact::Redactor>>> = None;
    let mut clean = |text: String| -> Option<String> {
        if extra.is_empty() && !crate::redact::may_hold_secret(&text) {
            return Some(text);
        }
        let r = redactor
            .get_or_insert_with(|| crate::redact::Redactor::configured(extra).ok())
            .as_ref()?;
        Some(match r.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(t) => t,
        })
    };
    fn walk(v: Value, clean: &mut dyn FnMut(String) -> Option<String>) -> Value {
        match v {
            Value::String(s) => clean(s).map_or(Value::Null, Value::String),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|i| walk(i, clean)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let k = clean(k).unwrap_or_else(|| "[REDACTED]".into());
                        (k, walk(v, clean))
                    })
                    .collect(),
            ),
            other => other,
        }
    }
    walk(metadata, &mut clean)
}

/// Every event, oldest first (lines that do not parse are skipped).
pub fn read(repo: &impl Place) -> Vec<Event> {
    let Ok(Some(text)) = crate::files::read_optional(&repo.file(FILE)) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_text_of_an_event_is_redacted() {
        let key = "AKIAIOSFODNN7EXAMPLE";
        let meta = json!({
            "error": format!("the provider said: bad key {key}"),
            "nested": {"list": ["postgres://app:hunter2secret99@db/x", 3]},
            format!("token={key}9"): true,
            "count": 2,
        });
        let out = redacted(meta, &[]).to_string();
        assert!(!out.contains(key), "{out}");
        assert!(!out.contains("hunter2secret99"), "{out}");
        assert!(out.contains("\"count\":2"), "{out}");
        let plain = json!({"why": "compaction", "n": 1});
        assert_eq!(redacted(plain.clone(), &[]), plain);
        // An extra pattern is applied, and a broken one drops the text rather than keep it.
        let extra = vec!["internal-[0-9]+".to_string()];
        let out = redacted(json!({"q": "see internal-42"}), &extra).to_string();
        assert!(!out.contains("internal-42"), "{out}");
        let broken = vec!["(".to_string()];
        assert_eq!(
            redacted(json!({"q": "x"}), &broken),
            json!({"[REDACTED]": null})
        );
    }
}
