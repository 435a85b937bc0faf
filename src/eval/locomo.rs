//! LoCoMo: one repository per conversation, one memory per dialog turn.
//!
//! A turn's text is `"<speaker>: <text>"` (plus ` [image: <blip_caption>]` where present), its
//! time the session's `session_N_date_time` (`1:56 pm on 8 May, 2023`), its source its dia_id.
//! Gold ids are normalized (`D:11:26` → `D11:26`, `D30:05` → `D30:5`; a bare `D` and ids not
//! in the conversation dropped); a question left without gold is skipped. Categories 1–4 are
//! averaged together and each; category 5 (adversarial) apart.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::Memory;
use super::score::{self, Table};
use crate::error::{Error, Result};

/// One question.
#[derive(Debug, Clone)]
pub struct Question {
    pub question: String,
    pub category: u64,
    pub gold: Vec<String>,
}

/// One conversation, ready to evaluate.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub id: String,
    pub memories: Vec<Memory>,
    pub questions: Vec<Question>,
    pub now: DateTime<Utc>,
    pub skipped: usize,
}

/// `1:56 pm on 8 May, 2023` → a UTC time.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let (clock, date) = s.split_once(" on ")?;
    let date = NaiveDate::parse_from_str(date.trim(), "%d %B, %Y").ok()?;
    let clock = clock.trim().to_ascii_uppercase();
    let time = NaiveTime::parse_from_str(&clock, "%I:%M %p").ok()?;
    Some(NaiveDateTime::new(date, time).and_utc())
}

/// `D:11:26` → `D11:26`; `D30:05` → `D30:5`.
pub fn normalize_id(raw: &str) -> Option<String> {
    let s = raw.trim().trim_matches(|c: char| c == ',' || c == '.');
    let s = s
        .strip_prefix("D:")
        .map(|r| format!("D{r}"))
        .unwrap_or_else(|| s.to_string());
    let rest = s.strip_prefix('D')?;
    let (session, turn) = rest.split_once(':')?;
    let session: u32 = session.parse().ok()?;
    let turn: u32 = turn.parse().ok()?;
    Some(format!("D{session}:{turn}"))
}

/// Reads the conversations of a LoCoMo file.
pub fn read(path: &Path) -> Result<Vec<Conversation>> {
    let data = super::read_json(path)?;
    let bad = |what: &str| Error::bad_input(format!("{}: {what}", path.display()));
    let list = data
        .as_array()
        .ok_or_else(|| bad("not a LoCoMo file (a list of conversations)"))?;
    if list.is_empty() {
        return Err(bad(
            "holds no conversation: LoCoMo's data/locomo10.json is a list of conversations",
        ));
    }
    let mut out = Vec::new();
    for (n, c) in list.iter().enumerate() {
        let id = c["sample_id"]
            .as_str()
            .map_or_else(|| format!("conversation-{n}"), String::from);
        let conv = c["conversation"]
            .as_object()
            .ok_or_else(|| bad(&format!("{id}: no `conversation`")))?;
        let mut sessions: Vec<(u32, &Vec<Value>)> = conv
            .iter()
            .filter_map(|(k, v)| {
                let n: u32 = k.strip_prefix("session_")?.parse().ok()?;
                Some((n, v.as_array()?))
            })
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        let mut memories = Vec::new();
        let mut now = None;
        for (n, turns) in sessions {
            let when = conv
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str)
                .and_then(parse_time)
                .ok_or_else(|| bad(&format!("{id}: session {n} has no readable date_time")))?;
            now = Some(now.map_or(when, |t: DateTime<Utc>| t.max(when)));
            for t in turns {
                let (Some(dia), Some(speaker), Some(text)) = (
                    t["dia_id"].as_str(),
                    t["speaker"].as_str(),
                    t["text"].as_str(),
                ) else {
                    continue;
                };
                let mut body = format!("{speaker}: {text}");
                if let Some(caption) = t["blip_caption"].as_str() {
                    body.push_str(&format!(" [image: {caption}]"));
                }
                let Some(dia) = normalize_id(dia) else {
                    continue;
                };
                memories.push(Memory {
                    id: dia,
                    session: format!("session_{n}"),
                    text: body,
                    time: when,
                });
            }
        }
        let known: HashSet<&str> = memories.iter().map(|m| m.id.as_str()).collect();
        let mut questions = Vec::new();
        let mut skipped = 0;
        for q in c["qa"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let mut gold: Vec<String> = Vec::new();
            for e in q["evidence"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                for part in e.as_str().unwrap_or("").split([';', ' ']) {
                    if let Some(id) = normalize_id(part)
                        && known.contains(id.as_str())
                        && !gold.contains(&id)
                    {
                        gold.push(id);
                    }
                }
            }
            let question = q["question"].as_str().unwrap_or("").to_string();
            if gold.is_empty() || question.is_empty() {
                skipped += 1;
                continue;
            }
            questions.push(Question {
                question,
                category: q["category"].as_u64().unwrap_or(0),
                gold,
            });
        }
        let now = now.ok_or_else(|| bad(&format!("{id}: no sessions")))?;
        out.push(Conversation {
            id,
            memories,
            questions,
            now,
            skipped,
        });
    }
    Ok(out)
}

/// The outcome of an evaluation.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub conversations: Vec<String>,
    pub questions: usize,
    pub skipped: usize,
    pub table: Table,
    /// What became of the questions' rewrites (all zero without one).
    pub rewrites: super::Tally,
    /// With a rewrite: the same questions without it, on the same indexes (a paired
    /// baseline: a fresh index may order equal scores differently from run to run).
    pub baseline: Option<Table>,
    /// The wall time of each question's recall (the rewritten one's, with a rewrite).
    pub time: score::TimeSummary,
    /// Each question's outcome, in order.
    #[serde(skip)]
    pub per_question: Vec<PerQuestion>,
}

/// One question's outcome: what was asked, what was gold, what came back.
#[derive(Debug, Serialize)]
pub struct PerQuestion {
    pub conversation: String,
    pub question: String,
    pub category: u64,
    pub gold: Vec<String>,
    pub recalled: Vec<String>,
    /// Recall at the largest k asked for.
    pub recall: f64,
}

/// Evaluates the conversations (all, or those named) at each k.
pub fn run(
    conversations: &[Conversation],
    only: &[String],
    ks: &[usize],
    options: &super::Options,
    mut progress: impl FnMut(usize),
) -> Result<Outcome> {
    let max_k = ks.iter().copied().max().unwrap_or(10);
    let mut table = Table::default();
    let mut outcome_ids = Vec::new();
    let (mut questions, mut skipped) = (0, 0);
    let mut rewrites = super::Tally::default();
    let mut baseline: Option<Table> = None;
    let mut timings = score::Timings::default();
    let mut per_question = Vec::new();
    for c in conversations
        .iter()
        .filter(|c| only.is_empty() || only.contains(&c.id))
    {
        outcome_ids.push(c.id.clone());
        skipped += c.skipped;
        let filled = super::fill(&c.memories, c.now, options)?;
        for q in &c.questions {
            let started = std::time::Instant::now();
            let (ranked, rewrite) = filled.ask_rewritten(&q.question, max_k, c.now, true)?;
            timings.add(started.elapsed());
            if let Some(outcome) = &rewrite {
                rewrites.add(outcome);
            }
            let plain = match filled.rewrites() {
                true => Some(filled.ask_rewritten(&q.question, max_k, c.now, false)?.0),
                false => None,
            };
            let groups: Vec<String> = if q.category == 5 {
                vec!["5 (adversarial)".into()]
            } else {
                vec!["1-4".into(), format!("{}", q.category)]
            };
            for k in ks {
                let s = score::score(&ranked, &q.gold, *k);
                for g in &groups {
                    table.add(g, *k, s);
                }
                if let Some(plain) = &plain {
                    let s = score::score(plain, &q.gold, *k);
                    let base = baseline.get_or_insert_with(Table::default);
                    for g in &groups {
                        base.add(g, *k, s);
                    }
                }
            }
            per_question.push(PerQuestion {
                conversation: c.id.clone(),
                question: q.question.clone(),
                category: q.category,
                gold: q.gold.clone(),
                recall: score::score(&ranked, &q.gold, max_k).recall,
                recalled: ranked,
            });
            questions += 1;
            progress(1);
        }
    }
    Ok(Outcome {
        conversations: outcome_ids,
        questions,
        skipped,
        table,
        rewrites,
        baseline,
        time: timings.summary(),
        per_question,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_normalize() {
        assert_eq!(normalize_id("D:11:26").as_deref(), Some("D11:26"));
        assert_eq!(normalize_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_id("D1:3").as_deref(), Some("D1:3"));
        assert_eq!(normalize_id("D"), None);
        assert_eq!(normalize_id(""), None);
    }

    #[test]
    fn times_parse() {
        assert_eq!(
            parse_time("1:56 pm on 8 May, 2023").map(|t| t.to_rfc3339()),
            Some("2023-05-08T13:56:00+00:00".into())
        );
        assert_eq!(
            parse_time("10:37 am on 27 June, 2023").map(|t| t.to_rfc3339()),
            Some("2023-06-27T10:37:00+00:00".into())
        );
    }
}
