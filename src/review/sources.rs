//! The observations a proposal stands on, with the session and turn each came from.
//!
//! Only the few ids a shown proposal cites are looked for: each observations file is scanned
//! for lines holding one of them, and only those lines are parsed (a review of the first of a
//! thousand proposals must not fold the whole store). An observation distilled from a turn
//! names its card (`source: tc-…`) and its session; the card's line in
//! `vault/sessions/AGENT/SESSION.jsonl` gives the turn's number.

use serde::Serialize;

use crate::cards;
use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::sessions::Agent;
use crate::store;

/// One cited observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub id: String,
    /// Its text; none when the store no longer holds it.
    pub text: Option<String>,
    pub session: Option<String>,
    /// The agent whose session it is, when its card was found.
    pub agent: Option<String>,
    /// The turn card it came from, if any.
    pub card: Option<String>,
    /// The turn's number in its session (from 1), when the card was found.
    pub turn: Option<usize>,
    pub timestamp: Option<String>,
}

impl Source {
    /// One line for people: `ob-… (codex session S, turn 5): text`.
    pub fn line(&self) -> String {
        let mut at = Vec::new();
        match (&self.agent, &self.session) {
            (Some(a), Some(s)) => at.push(format!("{a} session {s}")),
            (None, Some(s)) => at.push(format!("session {s}")),
            _ => {}
        }
        match (self.turn, &self.card) {
            (Some(t), _) => at.push(format!("turn {t}")),
            (None, Some(c)) => at.push(format!("card {c}")),
            (None, None) => {}
        }
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" ({})", at.join(", "))
        };
        match &self.text {
            Some(text) => format!("{}{at}: {}", self.id, super::summary_long(text)),
            None => format!("{}: not in {}", self.id, store::DIR),
        }
    }
}

/// The observations `ids` (in that order), with their sessions and turns.
pub fn lookup(repo: &Repo, ids: &[String]) -> Result<Vec<Source>> {
    let mut out: Vec<Source> = ids
        .iter()
        .map(|id| Source {
            id: id.clone(),
            text: None,
            session: None,
            agent: None,
            card: None,
            turn: None,
            timestamp: None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(out);
    }
    for path in store::day_files(repo)? {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        for (i, line) in text.lines().enumerate() {
            if !ids.iter().any(|id| line.contains(id.as_str())) {
                continue;
            }
            // Lines that do not parse are the readers' business (they warn); skipped here.
            let Ok(store::Line::Observation(obs)) = store::parse_line(&path, i + 1, line) else {
                continue;
            };
            if let Some(s) = out.iter_mut().find(|s| s.id == obs.id && s.text.is_none()) {
                s.text = Some(obs.observation);
                s.session = obs.session_id;
                s.timestamp = Some(obs.timestamp);
                s.card = Some(obs.source).filter(|src| src.starts_with("tc-"));
            }
        }
    }
    for s in &mut out {
        // Observers store the session as `agent/session`.
        if let Some((agent, session)) = s.session.as_deref().and_then(|v| v.split_once('/'))
            && let Ok(agent) = agent.parse::<Agent>()
        {
            s.agent = Some(agent.as_str().to_string());
            s.session = Some(session.to_string());
        }
        if let (Some(session), Some(card)) = (&s.session, &s.card) {
            let agents: Vec<Agent> = match s.agent.as_deref().map(str::parse::<Agent>) {
                Some(Ok(a)) => vec![a],
                _ => Agent::ALL.to_vec(),
            };
            if let Some((agent, turn)) = card_turn(repo, &agents, session, card)? {
                s.agent = Some(agent.as_str().to_string());
                s.turn = Some(turn);
            }
        }
    }
    Ok(out)
}

/// The agent and turn number of card `card` in session `session` of one of `agents`, if its
/// file holds it.
fn card_turn(
    repo: &Repo,
    agents: &[Agent],
    session: &str,
    card: &str,
) -> Result<Option<(Agent, usize)>> {
    for &agent in agents {
        let rel = cards::file_of(agent, session);
        let Some(text) = crate::files::read_optional(&repo.path(&rel))? else {
            continue;
        };
        for line in text.lines().filter(|l| l.contains(card)) {
            if let Ok(cards::Record::Card(c)) = serde_json::from_str::<cards::Record>(line)
                && c.id == card
            {
                return Ok(Some((agent, c.turn)));
            }
        }
    }
    Ok(None)
}
