//! Dedup by meaning: before an observation is stored, the nearest stored observation by vector;
//! above `[gate] dedup_threshold` (cosine, 0.85 by default) the new one is merged into it
//! (`{"op":"merge"}`: its merged_count grows and its time moves forward) and nothing new is
//! inserted.
//!
//! Texts made from a template (the built-in observer's error fixes: "`CMD` failed (exit N:
//! ERROR); … then succeeded after changes to FILES", with a narrative around it in the index)
//! share most of their words, so their vectors are close whatever they are about. Such a
//! match is [`confirm`]ed on what is distinctive: the failed programs must agree, and the
//! command with its error, embedded alone, must pass the threshold too.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::Result;
use crate::index::{Filter, Index, Kind};
use crate::store::{Event, Op};

/// The stored observation a new text would merge into.
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    pub into: String,
    pub similarity: f64,
    /// The merged observation's time after the merge.
    pub timestamp: String,
}

/// The nearest stored observation to `text`, if it is similar enough to merge into.
pub fn nearest(
    index: &Index,
    text: &str,
    threshold: f64,
    at: DateTime<Utc>,
) -> Result<Option<Merge>> {
    let filter = Filter {
        kinds: vec![Kind::Observation],
        category: None,
        include_hold: true,
    };
    let hits = index.search_vectors(text, &filter, CANDIDATES, threshold)?;
    for h in hits.into_iter().filter(|h| h.raw > threshold) {
        if let Some(similarity) = confirm(index, text, &h.doc.text, h.raw, threshold)? {
            return Ok(Some(Merge {
                into: h.doc.id,
                similarity,
                timestamp: crate::time::format(h.doc.time.max(at)),
            }));
        }
    }
    Ok(None)
}

/// How many near neighbours are confirmed before giving up on a merge.
pub const CANDIDATES: usize = 5;

/// An error fix as the built-in observer writes it: the failed command and its error line.
#[derive(Debug, PartialEq)]
pub struct ErrorFix<'a> {
    pub command: &'a str,
    pub error: &'a str,
}

impl<'a> ErrorFix<'a> {
    /// Reads "`CMD` failed (exit N[: ERROR]); …"; `None` for any other text.
    pub fn parse(text: &'a str) -> Option<ErrorFix<'a>> {
        let rest = text.strip_prefix('`')?;
        let (command, rest) = rest.split_once("` failed (exit ")?;
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
        let error = match rest.strip_prefix(": ") {
            Some(e) => e
                .find("); ")
                .map_or(e.trim_end_matches(')'), |end| &e[..end]),
            None => "",
        };
        Some(ErrorFix { command, error })
    }
}

/// The part of an observation that says what it is about: for an error fix, the command and
/// its error; for anything else, its first line (the index appends the narrative).
pub fn distinctive(text: &str) -> String {
    let first = text.lines().next().unwrap_or(text);
    match ErrorFix::parse(first) {
        Some(f) => format!("{} {}", f.command, f.error),
        None => first.to_string(),
    }
}

/// Whether `new` and `stored`, whose whole texts matched at `raw`, say the same thing: the
/// similarity to record, or `None` when their distinctive parts disagree. Texts without a
/// template keep `raw`.
pub fn confirm(
    index: &Index,
    new: &str,
    stored: &str,
    raw: f64,
    threshold: f64,
) -> Result<Option<f64>> {
    confirm_with(new, stored, raw, threshold, &mut |a, b| {
        let v = index.embed_documents(&[a, b])?;
        Ok(match v.as_slice() {
            [x, y] => f64::from(crate::embed::cosine(x, y)),
            _ => 0.0,
        })
    })
}

/// [`confirm`] with the similarity of two distinctive parts given by `similarity` (so that a
/// sweep over many pairs can embed each part once).
pub fn confirm_with(
    new: &str,
    stored: &str,
    raw: f64,
    threshold: f64,
    similarity: &mut dyn FnMut(&str, &str) -> Result<f64>,
) -> Result<Option<f64>> {
    let first = |t: &str| t.lines().next().unwrap_or(t).to_string();
    let (a, b) = (first(new), first(stored));
    let (fa, fb) = (ErrorFix::parse(&a), ErrorFix::parse(&b));
    if fa.is_none() && fb.is_none() {
        return Ok(Some(raw));
    }
    match (&fa, &fb) {
        (Some(x), Some(y)) if program(x.command) == program(y.command) => {}
        // An error fix is never the same as another kind of text, nor as a fix of another
        // program.
        _ => return Ok(None),
    }
    let (da, db) = (distinctive(&a), distinctive(&b));
    if da == db {
        return Ok(Some(1.0));
    }
    let sim = similarity(&da, &db)?;
    Ok((sim > threshold).then_some(sim))
}

fn program(command: &str) -> String {
    super::builtin::program(command)
}

/// The event line that records a merge of the observation that would have been `from`.
pub fn merge_event(m: &Merge, from: &str, now: DateTime<Utc>) -> String {
    let e = Event {
        op: Op::Merge,
        id: m.into.clone(),
        ts: crate::time::format(now),
        timestamp: Some(m.timestamp.clone()),
        by: None,
        from: Some(from.to_string()),
        hash: None,
        count: None,
    };
    serde_json::to_string(&e).expect("event serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_fix_reads_as_its_command_and_error() {
        let f = ErrorFix::parse(
            "`npm publish` failed (exit 1: npm ERR! code E403 (forbidden)); `npm login` then \
             succeeded after changes to .npmrc",
        );
        assert_eq!(
            f,
            Some(ErrorFix {
                command: "npm publish",
                error: "npm ERR! code E403 (forbidden)"
            })
        );
        let bare = ErrorFix::parse("`make` failed (exit 2); it passed on a later run");
        assert_eq!(
            bare,
            Some(ErrorFix {
                command: "make",
                error: ""
            })
        );
        assert_eq!(ErrorFix::parse("never push to main"), None);
        assert_eq!(
            distinctive("`make` failed (exit 2: boom); it passed on a later run\nFrom turn 1"),
            "make boom"
        );
        assert_eq!(distinctive("never push\nFrom turn 1"), "never push");
    }
}
