//! Writing observations directly: `cairn remember` and `cairn import observations`.
//!
//! Each candidate passes the write gate (unless imported `--raw`), gets a keyword category
//! unless it brings one, and an id from its content; an id already stored is a duplicate and
//! writes nothing. What is kept is appended to today's observations file in one locked write
//! per chunk of whole lines.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::category::{self, TAXONOMY_VERSION};
use super::gate::{self, Verdict};
use crate::store::Observation;

/// The longest observation taken through the gate, in characters (as a slog entry's detail):
/// an observation is a fact or two, and a longer text would crowd out every other in recall.
pub const MAX_CHARS: usize = crate::slog::MAX_DETAIL_CHARS;

/// What a caller offers as an observation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub observation: String,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub category_id: Option<String>,
    #[serde(default)]
    pub write_verdict: Option<String>,
    #[serde(default)]
    pub priority: Option<String>,
    #[serde(default)]
    pub observation_type: Option<String>,
    #[serde(default)]
    pub narrative: Option<String>,
    /// Ignored: ids come from content. Accepted so exported observations import back.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub write_confidence: Option<f64>,
    #[serde(default)]
    pub category_confidence: Option<f64>,
    #[serde(default)]
    pub taxonomy_version: Option<u32>,
    #[serde(default)]
    pub merged_count: Option<u32>,
}

/// What the gate made of a candidate.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub id: String,
    pub verdict: Verdict,
    pub reason: &'static str,
    /// The record to store (none when discarded).
    #[serde(skip)]
    pub observation: Option<Observation>,
}

/// The longest line of an import (1 MiB): an observation is a sentence or two with its fields.
pub const MAX_IMPORT_LINE_BYTES: usize = 1024 * 1024;

/// The candidates of an import file's text (`cairn import observations FILE`), each checked
/// ([`validate`]) and redacted, before anything is written: the first bad line is the error,
/// `FILE:LINE: what is wrong`. Blank lines are skipped; a byte order mark (some Windows
/// editors write one) is not part of the first line.
pub fn read_candidates(
    text: &str,
    file: &str,
    raw: bool,
    redactor: &crate::redact::Redactor,
) -> Result<Vec<Candidate>, String> {
    let mut candidates = Vec::new();
    for (i, line) in crate::jsonl::strip_bom(text).lines().enumerate() {
        if let Some(c) = read_candidate(line, &format!("{file}:{}", i + 1), raw, redactor)? {
            candidates.push(c);
        }
    }
    Ok(candidates)
}

/// One line of an import file (`at` is its `FILE:LINE`), checked ([`validate`]) and redacted;
/// `None` for a blank line. [`read_candidates`] uses it.
pub fn read_candidate(
    line: &str,
    at: &str,
    raw: bool,
    redactor: &crate::redact::Redactor,
) -> Result<Option<Candidate>, String> {
    read_line(line, raw, Some(redactor)).map_err(|m| format!("{at}: {m}"))
}

/// One line of an import file, checked ([`validate`]) and, given a `redactor`, redacted; `None`
/// for a blank line. The error says what is wrong without saying where: the streamed import
/// names `FILE:LINE` only for the line that fails (formatting it for every line cost more than
/// the check).
pub fn read_line(
    line: &str,
    raw: bool,
    redactor: Option<&crate::redact::Redactor>,
) -> Result<Option<Candidate>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    if line.len() > MAX_IMPORT_LINE_BYTES {
        return Err(over_line_tail(line.len() as u64));
    }
    if !line.trim_start().starts_with('{') {
        return Err("not a JSON object".to_string());
    }
    let mut c: Candidate =
        serde_json::from_str(line).map_err(|e| format!("not a valid observation: {e}"))?;
    validate(&c, raw)?;
    if let Some(redactor) = redactor {
        c.observation = redact_owned(redactor, c.observation);
        c.narrative = c.narrative.map(|n| redact_owned(redactor, n));
    }
    Ok(Some(c))
}

/// `text` redacted, kept as it is (no copy) when it holds no secret.
fn redact_owned(redactor: &crate::redact::Redactor, text: String) -> String {
    match redactor.redact(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(o) => o,
    }
}

/// The error for an import line of `len` bytes, over [`MAX_IMPORT_LINE_BYTES`].
pub fn over_line(at: &str, len: u64) -> String {
    format!("{at}: {}", over_line_tail(len))
}

fn over_line_tail(len: u64) -> String {
    format!(
        "a line of {len} bytes, over the {MAX_IMPORT_LINE_BYTES} bytes an observation may have; nothing was written (an observation is a sentence or two: shorten that line, or drop it)"
    )
}

/// What the fields of a [`Candidate`] are called where it came from, for messages.
#[derive(Debug, Clone, Copy)]
pub struct FieldNames {
    pub observation: &'static str,
    pub timestamp: &'static str,
    pub write_verdict: &'static str,
    pub priority: &'static str,
    pub category: &'static str,
}

/// The fields of an import line: the record's own names.
pub const IMPORT_FIELDS: FieldNames = FieldNames {
    observation: "observation",
    timestamp: "timestamp",
    write_verdict: "write_verdict",
    priority: "priority",
    category: "category_id",
};

/// The arguments of `cairn remember` and of the MCP tool `remember` (`text`, `at`,
/// `priority`, `category`; the verdict comes from `hold`).
pub const REMEMBER_FIELDS: FieldNames = FieldNames {
    observation: "text",
    timestamp: "at",
    write_verdict: "hold",
    priority: "priority",
    category: "category",
};

/// Checks a candidate's fields; the message names what is wrong, by its import name.
pub fn validate(c: &Candidate, raw: bool) -> Result<(), String> {
    validate_as(c, raw, &IMPORT_FIELDS)
}

/// [`validate`], the message naming each field as `names` calls it.
pub fn validate_as(c: &Candidate, raw: bool, names: &FieldNames) -> Result<(), String> {
    if c.observation.trim().is_empty() {
        return Err(format!("`{}` is empty", names.observation));
    }
    let chars = c.observation.trim().chars().count();
    if !raw && chars > MAX_CHARS {
        return Err(format!(
            "`{}` is {chars} characters, more than {MAX_CHARS}: keep the fact, leave out the rest",
            names.observation
        ));
    }
    if let Some(t) = &c.timestamp
        && DateTime::parse_from_rfc3339(t).is_err()
    {
        return Err(format!("`{}` {t:?} is not RFC 3339", names.timestamp));
    }
    if let Some(v) = &c.write_verdict
        && Verdict::parse(v).is_none()
    {
        return Err(format!(
            "`{}` {v:?} is not allow, hold or discard",
            names.write_verdict
        ));
    }
    if let Some(p) = &c.priority
        && !matches!(p.as_str(), "high" | "medium" | "low")
    {
        return Err(format!(
            "`{}` {p:?} is not high, medium or low",
            names.priority
        ));
    }
    if !raw
        && let Some(cat) = &c.category_id
        && !category::is_known(cat)
    {
        return Err(format!(
            "`{}` {cat:?} is not a category of taxonomy v{TAXONOMY_VERSION}",
            names.category
        ));
    }
    Ok(())
}

/// Runs a candidate through the gate (unless `raw`) and builds its record.
pub fn judge(
    c: &Candidate,
    raw: bool,
    default_source: &str,
    min_chars: usize,
    now: DateTime<Utc>,
) -> Judged {
    let text = c.observation.trim().to_string();
    let source = c
        .source
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default_source.to_string());
    let id = crate::store::observation_id(&text, &source);
    let proposed = c
        .write_verdict
        .as_deref()
        .and_then(Verdict::parse)
        .unwrap_or(Verdict::Allow);
    let confidence = c.write_confidence.unwrap_or(0.9);
    let decision = if raw {
        gate::Decision {
            verdict: proposed,
            confidence,
            reason: "raw import",
        }
    } else {
        gate::decide(&text, proposed, confidence, min_chars)
    };
    if decision.verdict == Verdict::Discard && !raw {
        return Judged {
            id,
            verdict: Verdict::Discard,
            reason: decision.reason,
            observation: None,
        };
    }
    let (category_id, category_confidence) = match &c.category_id {
        Some(cat) => (cat.clone(), c.category_confidence.unwrap_or(1.0)),
        None => {
            let choice = category::classify(&text);
            (choice.id.to_string(), choice.confidence)
        }
    };
    let timestamp = c
        .timestamp
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map_or(now, |t| t.with_timezone(&Utc));
    let observation = Observation {
        id: id.clone(),
        session_id: c.session_id.clone(),
        observation: text,
        observation_type: c.observation_type.clone().unwrap_or_else(|| "fact".into()),
        source,
        timestamp: crate::time::format(timestamp),
        priority: c.priority.clone().unwrap_or_else(|| "medium".into()),
        write_verdict: decision.verdict,
        write_confidence: decision.confidence,
        category_id,
        category_confidence,
        taxonomy_version: c.taxonomy_version.unwrap_or(TAXONOMY_VERSION),
        merged_count: c.merged_count.unwrap_or(1),
        narrative: c.narrative.clone(),
    };
    Judged {
        id,
        verdict: decision.verdict,
        reason: decision.reason,
        observation: Some(observation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn gate_and_category_apply_unless_raw() {
        let c = Candidate {
            observation: "tiny".into(),
            ..Candidate::default()
        };
        assert_eq!(judge(&c, false, "cli", 12, now()).verdict, Verdict::Discard);
        let kept = judge(&c, true, "cli", 12, now());
        assert_eq!(kept.verdict, Verdict::Allow);
        assert_eq!(kept.observation.unwrap().observation, "tiny");

        let c = Candidate {
            observation: "The user prefers tabs over spaces".into(),
            ..Candidate::default()
        };
        let o = judge(&c, false, "cli", 12, now()).observation.unwrap();
        assert_eq!(o.category_id, "preferences");
        assert_eq!(o.timestamp, "2026-11-30T12:00:00.000Z");
        assert_eq!(o.source, "cli");
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |json: &str| validate(&serde_json::from_str(json).unwrap(), false).unwrap_err();
        assert!(bad(r#"{"observation":""}"#).contains("`observation`"));
        assert!(bad(r#"{"observation":"x","timestamp":"yesterday"}"#).contains("`timestamp`"));
        assert!(bad(r#"{"observation":"x","write_verdict":"maybe"}"#).contains("`write_verdict`"));
        assert!(bad(r#"{"observation":"x","category_id":"misc"}"#).contains("`category_id`"));
        let empty: Candidate = serde_json::from_str(r#"{"observation":" "}"#).unwrap();
        assert_eq!(
            validate_as(&empty, false, &REMEMBER_FIELDS).unwrap_err(),
            "`text` is empty"
        );
        let long = format!(r#"{{"observation":"{}"}}"#, "a".repeat(MAX_CHARS + 1));
        assert!(bad(&long).contains("more than 4000"));
        let at_cap = format!(r#"{{"observation":"{}"}}"#, "a".repeat(MAX_CHARS));
        assert!(validate(&serde_json::from_str(&at_cap).unwrap(), false).is_ok());
        assert!(
            validate(
                &serde_json::from_str(r#"{"observation":"x","category_id":"misc"}"#).unwrap(),
                true
            )
            .is_ok()
        );
    }
}
