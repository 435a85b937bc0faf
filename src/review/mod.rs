//! What `cairn review` shows: a proposal waiting for a person, with the observations it stands
//! on and the unified diff of MEMORY.md it would make; ids found by a unique prefix; the commit
//! subject that names an approved change; the text a person edits.
//!
//! Everything here is pure: the caller reads the proposals ([`crate::proposals::load`]),
//! MEMORY.md and the sources ([`sources::lookup`]) and passes them in. This module owns
//! `similar` (the diff) and, in [`prompt`], `dialoguer` (the terminal prompts and the editor).
//! Deciding and committing is `cli/review.rs`, through [`crate::proposals::decide`].

pub mod prompt;
mod rejected;
pub mod reverted;
pub mod sources;

use chrono::NaiveDate;
use serde::Serialize;
use similar::TextDiff;

pub use rejected::reject_observations;

use crate::error::{Error as CairnError, Kind};
use crate::proposals::{self, ApplyError, Folded, Op, State};

pub use sources::Source;

/// Why a proposal named on the command line cannot be reviewed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no proposal has the id {0}")]
    NotFound(String),
    #[error("the id {query} is ambiguous: it begins {}", .ids.join(", "))]
    Ambiguous { query: String, ids: Vec<String> },
    #[error("{id} is already decided ({state})")]
    Decided { id: String, state: String },
    #[error("the entry text is empty")]
    EmptyText,
    #[error(
        "the entry text is {chars} characters, more than {max}; one entry is one fact: shorten it",
        max = crate::memory::MAX_ENTRY_CHARS
    )]
    TooLong { chars: usize },
}

impl From<Error> for CairnError {
    fn from(err: Error) -> Self {
        match err {
            Error::NotFound(_) => CairnError::new(Kind::NotFound, err.to_string())
                .with_fix("`cairn review --list` lists the pending proposals"),
            Error::Ambiguous { .. } => CairnError::new(Kind::BadInput, err.to_string())
                .with_fix("give more characters of the id"),
            Error::Decided { .. } => CairnError::new(Kind::BadInput, err.to_string())
                .with_fix("`cairn review --list` lists the pending proposals"),
            e => CairnError::new(Kind::BadInput, e.to_string()),
        }
    }
}

/// The proposal whose id is `query` or begins with it (with or without `pr-`). An id that
/// matches whole wins over longer ones it is a prefix of.
pub fn find<'a>(proposals: &'a [Folded], query: &str) -> Result<&'a Folded, Error> {
    let query = query.trim();
    if query.is_empty() {
        return Err(Error::NotFound(String::new()));
    }
    let bare = |id: &'a str| id.strip_prefix("pr-").unwrap_or(id);
    if let Some(p) = proposals
        .iter()
        .find(|p| p.proposal.id == query || bare(&p.proposal.id) == query)
    {
        return Ok(p);
    }
    let matches: Vec<&Folded> = proposals
        .iter()
        .filter(|p| p.proposal.id.starts_with(query) || bare(&p.proposal.id).starts_with(query))
        .collect();
    match matches.as_slice() {
        [] => Err(Error::NotFound(query.to_string())),
        [one] => Ok(one),
        many => Err(Error::Ambiguous {
            query: query.to_string(),
            ids: many.iter().map(|p| p.proposal.id.clone()).collect(),
        }),
    }
}

/// `p` when it still waits for a decision.
pub fn pending(p: &Folded) -> Result<&Folded, Error> {
    if p.state == State::Pending {
        Ok(p)
    } else {
        Err(Error::Decided {
            id: p.proposal.id.clone(),
            state: state_name(p),
        })
    }
}

fn state_name(p: &Folded) -> String {
    let state = match p.state {
        State::Pending => "pending",
        State::Promoted => "promoted",
        State::Rejected => "rejected",
        State::Merged => "merged",
    };
    match (p.tier, p.reason.is_empty()) {
        (Some(t), true) => format!("{state} by tier {}", t.as_str()),
        (Some(t), false) => format!("{state} by tier {}: {}", t.as_str(), p.reason),
        (None, _) => state.to_string(),
    }
}

/// An entry's text as a person gave it (`--text`, or the editor): one line, spaces collapsed.
pub fn clean_text(text: &str) -> Result<String, Error> {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.is_empty() {
        return Err(Error::EmptyText);
    }
    let chars = one.chars().count();
    if chars > crate::memory::MAX_ENTRY_CHARS {
        return Err(Error::TooLong { chars });
    }
    Ok(one)
}

/// The file a person edits: the text, then comment lines saying what it is for.
pub fn edit_template(text: &str, section: &str) -> String {
    format!(
        "{text}\n\n# The entry for the section \"{section}\" of MEMORY.md, on one line.\n\
         # Lines starting with '#' are ignored; an empty text keeps the text as it was.\n"
    )
}

/// The text of an edited [`edit_template`]: its lines that are not comments, joined. `None`
/// when nothing is left.
pub fn parse_edited(edited: &str) -> Option<String> {
    let kept: Vec<&str> = edited
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    clean_text(&kept.join(" ")).ok()
}

/// A unified diff of MEMORY.md (`a/MEMORY.md` → `b/MEMORY.md`, three lines of context), as
/// `git apply` takes it; empty when nothing changes.
pub fn diff(old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("a/MEMORY.md", "b/MEMORY.md")
        .to_string()
}

/// `diff` with ANSI colours (removed lines red, added green, hunk heads cyan), for a terminal.
pub fn colour(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let code = if body.starts_with("+++") || body.starts_with("---") {
            "1"
        } else if body.starts_with('+') {
            "32"
        } else if body.starts_with('-') {
            "31"
        } else if body.starts_with("@@") {
            "36"
        } else {
            ""
        };
        if code.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("\x1b[{code}m{body}\x1b[0m{nl}"));
        }
    }
    out
}

/// A proposal as a review shows it.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    #[serde(flatten)]
    pub proposal: Folded,
    /// The text a person gave in place of the proposal's (an edit), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_text: Option<String>,
    pub sources: Vec<Source>,
    /// The unified diff of MEMORY.md that approving it now would make (none when it cannot
    /// be applied, or is decided).
    pub diff: Option<String>,
    /// Why it cannot be applied to the current MEMORY.md (the entry it targets is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_apply: Option<String>,
}

impl View {
    /// `p` against `memory` (the current MEMORY.md), with `edited` in place of its text.
    pub fn new(
        p: &Folded,
        memory: &str,
        edited: Option<&str>,
        sources: Vec<Source>,
        date: NaiveDate,
    ) -> View {
        let (diff, cannot_apply) = if p.state == State::Pending {
            match proposals::apply(memory, &p.proposal, edited, date) {
                Ok(new) => (Some(diff(memory, &new)), None),
                Err(e) => (None, Some(e.to_string())),
            }
        } else {
            (None, None)
        };
        View {
            proposal: p.clone(),
            edited_text: edited.map(str::to_string),
            sources,
            diff,
            cannot_apply,
        }
    }

    /// What a person reads: `position` is (this one, how many) for the header.
    pub fn render(&self, position: Option<(usize, usize)>, coloured: bool) -> String {
        let p = &self.proposal.proposal;
        let bold = |s: &str| {
            if coloured {
                format!("\x1b[1m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        // The proposal's words come from transcripts: nothing in them may act on the terminal.
        let inert = |s: &str| crate::output::inert(s).into_owned();
        let mut out = String::new();
        let head = match position {
            Some((i, n)) => format!("proposal {i} of {n} · {}", p.id),
            None => format!("proposal {}", p.id),
        };
        out.push_str(&bold(&head));
        out.push('\n');
        let state = if self.proposal.state == State::Pending {
            String::new()
        } else {
            format!(" · {}", state_name(&self.proposal))
        };
        out.push_str(&format!(
            "{} · {} · confidence {:.2} · {}{state}\n",
            p.op.as_str(),
            inert(&p.section),
            p.confidence,
            p.reflector
        ));
        if !p.targets.is_empty() && p.op != Op::Add {
            let what = if p.op == Op::Merge {
                "merges"
            } else {
                "changes"
            };
            for t in &p.targets {
                out.push_str(&format!("  {what}: {}\n", inert(t)));
            }
        }
        let text = self.edited_text.as_deref().unwrap_or(&p.text);
        let label = match (p.op, self.edited_text.is_some()) {
            (Op::Remove, _) => "removes",
            (_, true) => "text (edited)",
            _ => "text",
        };
        out.push_str(&format!("  {label}: {}\n", inert(text)));
        if !p.rationale.trim().is_empty() {
            out.push_str(&format!("\nwhy: {}\n", inert(p.rationale.trim())));
        }
        if !self.sources.is_empty() {
            out.push_str("\nfrom:\n");
            for s in &self.sources {
                out.push_str(&format!("  {}\n", inert(&s.line())));
            }
        }
        out.push('\n');
        match (&self.diff, &self.cannot_apply) {
            (_, Some(why)) => {
                out.push_str(&format!("cannot apply: {}; it stays pending\n", inert(why)))
            }
            (Some(d), None) if d.is_empty() => {
                out.push_str("MEMORY.md already says this: approving changes nothing in it\n")
            }
            (Some(d), None) if coloured => out.push_str(&colour(&inert(d))),
            (Some(d), None) => out.push_str(&inert(d)),
            (None, None) => {}
        }
        out
    }
}

/// The subject of the commit that makes an approved change: what it does, where, and the
/// start of the text.
pub fn subject(p: &proposals::Proposal, text: &str, edited: bool) -> String {
    let what = match p.op {
        Op::Add => format!("add to {}", p.section),
        Op::Replace => format!("replace in {}", p.section),
        Op::Remove => format!("remove from {}", p.section),
        Op::Merge => format!("merge {} entries in {}", p.targets.len().max(1), p.section),
    };
    let shown = if p.op == Op::Remove {
        p.targets.first().map_or(text, String::as_str)
    } else {
        text
    };
    let edited = if edited { " (edited)" } else { "" };
    format!("review: {what}: {}{edited}", summary(shown))
}

/// One line of at most 60 characters.
pub fn summary(text: &str) -> String {
    cut(text, 60)
}

/// One line of at most 240 characters (an observation beside a proposal).
pub fn summary_long(text: &str) -> String {
    cut(text, 240)
}

fn cut(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > max {
        format!("{}…", one.chars().take(max).collect::<String>())
    } else {
        one
    }
}

/// Says what became of an approval that could not be applied.
pub fn gone_message(id: &str, err: &ApplyError) -> String {
    format!("{id} not approved: {err}; it stays pending (reject it, or fix MEMORY.md)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proposals::{Proposal, Tier};

    fn folded(id_text: &str) -> Folded {
        let p = Proposal::new(
            Op::Add,
            "Rules and conventions",
            id_text,
            vec![],
            "seen twice",
            vec!["ob-1".into()],
            0.9,
            "builtin",
            "2026-12-01T10:00:00Z".parse().unwrap(),
        );
        Folded {
            proposal: p,
            state: State::Pending,
            tier: None,
            reason: String::new(),
            final_text: None,
            commit: None,
            file: "vault/proposals/2026-12-01.jsonl".into(),
        }
    }

    fn with_id(id: &str) -> Folded {
        let mut f = folded(id);
        f.proposal.id = id.to_string();
        f
    }

    #[test]
    fn ids_are_found_by_a_unique_prefix_with_or_without_pr() {
        let all = vec![with_id("pr-abc123"), with_id("pr-abd456"), with_id("pr-ab")];
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("pr-abc", Ok("pr-abc123")),
            ("abd", Ok("pr-abd456")),
            ("pr-abd456", Ok("pr-abd456")),
            // Whole ids win over the longer ones they begin.
            ("ab", Ok("pr-ab")),
            ("pr-a", Err("ambiguous")),
            ("zzz", Err("no proposal")),
            ("", Err("no proposal")),
        ];
        for (query, want) in cases {
            let got = find(&all, query);
            match (want, got) {
                (Ok(id), Ok(p)) => assert_eq!(&p.proposal.id, id, "{query}"),
                (Err(msg), Err(e)) => assert!(e.to_string().contains(msg), "{query}: {e}"),
                (want, got) => panic!("{query}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn a_decided_proposal_is_not_pending() {
        let mut f = folded("Use tabs");
        assert!(pending(&f).is_ok());
        f.state = State::Rejected;
        f.tier = Some(Tier::Human);
        f.reason = "not true".into();
        let err = pending(&f).unwrap_err().to_string();
        assert!(err.contains("rejected by tier human: not true"), "{err}");
    }

    #[test]
    fn edited_text_drops_comments_and_joins_lines() {
        let t = edit_template("Use tabs", "Rules and conventions");
        assert_eq!(parse_edited(&t).as_deref(), Some("Use tabs"));
        assert_eq!(
            parse_edited("Use  tabs\nin Makefiles\n# note\n").as_deref(),
            Some("Use tabs in Makefiles")
        );
        assert_eq!(parse_edited("# only a comment\n\n"), None);
        assert!(matches!(
            clean_text(&"x".repeat(501)),
            Err(Error::TooLong { chars: 501 })
        ));
    }

    #[test]
    fn the_diff_is_a_unified_patch_of_memory_md() {
        let old =
            "# Memory\n\n## Rules and conventions\n\n- (2026-11-01) Never deploy on Fridays\n";
        let f = folded("Use tabs");
        let view = View::new(&f, old, None, vec![], "2026-12-01".parse().unwrap());
        let d = view.diff.clone().unwrap();
        assert!(
            d.starts_with("--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ "),
            "{d}"
        );
        assert!(d.contains("\n+- (2026-12-01) Use tabs\n"), "{d}");
        assert!(
            d.contains("\n - (2026-11-01) Never deploy on Fridays\n"),
            "{d}"
        );
        let shown = view.render(Some((1, 3)), false);
        assert!(shown.starts_with("proposal 1 of 3 · pr-"), "{shown}");
        assert!(shown.contains("why: seen twice"), "{shown}");
        assert!(!shown.contains('\x1b'));
        let coloured = view.render(Some((1, 3)), true);
        assert!(
            coloured.contains("\x1b[32m+- (2026-12-01) Use tabs\x1b[0m"),
            "{coloured}"
        );
        assert_eq!(diff(old, old), "");
    }

    #[test]
    fn escape_sequences_in_a_proposal_never_reach_the_terminal() {
        // The text comes from a transcript: a screen clear, a retitle and a fake colour.
        let mut f = folded("Use tabs\u{1b}[2J\u{1b}]0;owned\u{7} \u{1b}[32mapproved\u{1b}[0m");
        f.proposal.rationale = "seen\rtwice\u{9b}31m".into();
        let view = View::new(
            &f,
            "# Memory\n",
            None,
            vec![],
            "2026-12-01".parse().unwrap(),
        );
        let plain = view.render(None, false);
        assert!(
            !plain.chars().any(|c| c.is_control() && c != '\n'),
            "{plain:?}"
        );
        assert!(plain.contains("text: Use tabs approved"), "{plain}");
        assert!(plain.contains("why: seentwice\n"), "{plain}");
        let coloured = view.render(None, true);
        // Only cairn's own colours: bold head, coloured diff lines.
        let escapes = coloured.matches('\u{1b}').count();
        let own = coloured.matches("\u{1b}[1m").count()
            + coloured.matches("\u{1b}[0m").count()
            + coloured.matches("\u{1b}[32m").count()
            + coloured.matches("\u{1b}[36m").count();
        assert_eq!(escapes, own, "{coloured:?}");
        assert!(
            !coloured.contains("2J") && !coloured.contains("owned"),
            "{coloured:?}"
        );
    }

    #[test]
    fn a_remove_whose_entry_is_gone_shows_why_and_no_diff() {
        let mut f = folded("Never deploy on Fridays");
        f.proposal.op = Op::Remove;
        f.proposal.targets = vec!["Never deploy on Fridays".into()];
        let view = View::new(
            &f,
            "# Memory\n",
            None,
            vec![],
            "2026-12-01".parse().unwrap(),
        );
        assert!(view.diff.is_none());
        assert!(
            view.render(None, false)
                .contains("cannot apply: the entry \"Never deploy on Fridays\" is no longer")
        );
    }

    #[test]
    fn subjects_name_the_change() {
        let f = folded("Use tabs in Makefiles");
        assert_eq!(
            subject(&f.proposal, "Use tabs in Makefiles", false),
            "review: add to Rules and conventions: Use tabs in Makefiles"
        );
        let mut r = f.proposal.clone();
        r.op = Op::Remove;
        r.targets = vec!["Old rule".into()];
        assert_eq!(
            subject(&r, "x", false),
            "review: remove from Rules and conventions: Old rule"
        );
        assert!(subject(&f.proposal, "Edited", true).ends_with("Edited (edited)"));
    }
}
