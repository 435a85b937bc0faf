//! LongMemEval: one repository per question haystack, one memory per turn.
//!
//! A turn's text is `"<role>: <content>"`, its time the session's date, its source
//! `SESSION#TURN`. Scored at turn level (gold: turns with `has_answer: true`) and at session
//! level (gold: `answer_session_ids`; sessions ranked by their best turn).

use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;

use super::Memory;
use super::score::{self, Table};
use crate::error::{Error, Result};

/// `2023/07/12 (Wed) 10:14` → a UTC time.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let mut parts = s.split_whitespace();
    let date = parts.next()?;
    let _weekday = parts.next()?;
    let clock = parts.next().unwrap_or("00:00");
    NaiveDateTime::parse_from_str(&format!("{date} {clock}"), "%Y/%m/%d %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub questions: usize,
    pub table: Table,
    /// The wall time of each question's recall.
    pub time: super::score::TimeSummary,
}

pub fn run(
    path: &Path,
    ks: &[usize],
    options: &super::Options,
    mut progress: impl FnMut(usize),
) -> Result<Outcome> {
    let data = super::read_json(path)?;
    let bad = |what: String| Error::bad_input(format!("{}: {what}", path.display()));
    let items = data
        .as_array()
        .ok_or_else(|| bad("not a LongMemEval file (a list of questions)".into()))?;
    let max_k = ks.iter().copied().max().unwrap_or(10);
    let mut table = Table::default();
    let mut timings = super::score::Timings::default();
    let mut questions = 0;
    for item in items {
        let qid = item["question_id"].as_str().unwrap_or("?");
        let ids = item["haystack_session_ids"]
            .as_array()
            .ok_or_else(|| bad(format!("{qid}: no haystack_session_ids")))?;
        let dates = item["haystack_dates"]
            .as_array()
            .ok_or_else(|| bad(format!("{qid}: no haystack_dates")))?;
        let sessions = item["haystack_sessions"]
            .as_array()
            .ok_or_else(|| bad(format!("{qid}: no haystack_sessions")))?;
        let now = item["question_date"]
            .as_str()
            .and_then(parse_time)
            .ok_or_else(|| bad(format!("{qid}: unreadable question_date")))?;
        let mut memories = Vec::new();
        let mut gold_turns = Vec::new();
        for ((sid, date), turns) in ids.iter().zip(dates).zip(sessions) {
            let sid = sid.as_str().unwrap_or("?");
            let when = date.as_str().and_then(parse_time).unwrap_or(now);
            for (i, t) in turns
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let id = format!("{sid}#{i}");
                if t["has_answer"].as_bool() == Some(true) {
                    gold_turns.push(id.clone());
                }
                let text = format!(
                    "{}: {}",
                    t["role"].as_str().unwrap_or("?"),
                    t["content"].as_str().unwrap_or("")
                );
                memories.push(Memory {
                    id,
                    session: sid.to_string(),
                    text,
                    time: when,
                });
            }
        }
        let gold_sessions: Vec<String> = item["answer_session_ids"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        let filled = super::fill(&memories, now, options)?;
        let question = item["question"].as_str().unwrap_or("");
        // Enough turns to rank sessions by their best turn.
        let started = std::time::Instant::now();
        let ranked = filled.ask(question, max_k * 20, now)?;
        timings.add(started.elapsed());
        let mut session_rank: Vec<String> = Vec::new();
        for id in &ranked {
            let sid = id
                .rsplit_once('#')
                .map_or(id.as_str(), |(s, _)| s)
                .to_string();
            if !session_rank.contains(&sid) {
                session_rank.push(sid);
            }
        }
        for k in ks {
            if !gold_turns.is_empty() {
                table.add("turn", *k, score::score(&ranked, &gold_turns, *k));
            }
            table.add(
                "session",
                *k,
                score::score(&session_rank, &gold_sessions, *k),
            );
        }
        questions += 1;
        progress(1);
    }
    Ok(Outcome {
        questions,
        table,
        time: timings.summary(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse() {
        assert_eq!(
            parse_time("2023/07/12 (Wed) 10:14").map(|t| t.to_rfc3339()),
            Some("2023-07-12T10:14:00+00:00".into())
        );
    }
}
