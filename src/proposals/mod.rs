//! Reflection proposals: `vault/proposals/YYYY-MM-DD.jsonl`, and their decisions.
//!
//! Each line is a proposal (a change to MEMORY.md, [`Proposal`]) or an event ([`Event`]): a
//! decision about a proposal (`"event":"decision"`), or the mark a reflection leaves where it
//! stopped (`"event":"reflected"`). Events are folded over the proposals when read ([`load`]),
//! as the observation store folds its events. A file is named for the UTC day it was written.
//! Ids come from content (`pr-` and a hash of the op, section, text, targets and the cited
//! observations), so proposing the same change from the same observations twice stores it once.
//!
//! [`apply`] splices a proposal into a MEMORY.md text (the current one, which a person may have
//! edited since the proposal was made): every caller that turns a proposal into MEMORY.md bytes
//! (the refs of pending proposals, triage's auto-promotion, review's approval) goes through it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::jsonl;
use crate::memory;
use crate::repo::Repo;

/// The folder, relative to the repository root.
pub const DIR: &str = "vault/proposals";

/// What a proposal does to MEMORY.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A new entry `text` in `section`.
    Add,
    /// The entry whose text is `targets[0]` becomes `text`.
    Replace,
    /// The entry whose text is `targets[0]` goes.
    Remove,
    /// The entries `targets` become one entry `text` (where the first of them stood).
    Merge,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Replace => "replace",
            Op::Remove => "remove",
            Op::Merge => "merge",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "add" => Some(Op::Add),
            "replace" => Some(Op::Replace),
            "remove" => Some(Op::Remove),
            "merge" => Some(Op::Merge),
            _ => None,
        }
    }
}

/// One proposed change to MEMORY.md, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub id: String,
    pub op: Op,
    /// The MEMORY.md section heading ("Rules and conventions").
    pub section: String,
    /// The entry's text after the change (for `remove`: the text of the entry removed).
    pub text: String,
    /// The texts (without their dates) of the entries a `replace`, `remove` or `merge` changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    #[serde(default)]
    pub rationale: String,
    /// The ids of the observations it stands on.
    #[serde(default)]
    pub observations: Vec<String>,
    #[serde(default)]
    pub confidence: f64,
    /// `builtin`, or the LLM's model.
    pub reflector: String,
    /// RFC 3339 UTC.
    pub created: String,
}

impl Proposal {
    /// A proposal with its id derived from its content.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        op: Op,
        section: &str,
        text: &str,
        targets: Vec<String>,
        rationale: &str,
        observations: Vec<String>,
        confidence: f64,
        reflector: &str,
        created: DateTime<Utc>,
    ) -> Proposal {
        let mut p = Proposal {
            id: String::new(),
            op,
            section: section.to_string(),
            text: text.trim().to_string(),
            targets,
            rationale: rationale.to_string(),
            observations,
            confidence,
            reflector: reflector.to_string(),
            created: crate::time::format(created),
        };
        p.id = proposal_id(&p);
        p
    }
}

/// `pr-` and a hash of what the proposal changes and the observations it stands on.
pub fn proposal_id(p: &Proposal) -> String {
    let mut h = Sha256::new();
    h.update(p.op.as_str().as_bytes());
    h.update([0]);
    h.update(p.section.to_lowercase().as_bytes());
    h.update([0]);
    h.update(crate::store::normalize(&p.text).as_bytes());
    for t in &p.targets {
        h.update([0]);
        h.update(crate::store::normalize(t).as_bytes());
    }
    let mut obs = p.observations.clone();
    obs.sort();
    for o in &obs {
        h.update([1]);
        h.update(o.as_bytes());
    }
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("pr-{hex}")
}

/// A decision about a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Into MEMORY.md (by a rule, the LLM, or a person's approval; `text` when edited).
    Promote,
    /// Not into MEMORY.md, with a reason; never proposed again from the same observations.
    Reject,
    /// Folded into an existing entry, whose text is kept.
    Merge,
    /// Left for a person.
    NeedsReview,
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Tier 1: the rules of `cairn triage`.
    Auto,
    /// Tier 2: the LLM.
    Llm,
    /// Tier 3: a person, in `cairn review`.
    Human,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Auto => "auto",
            Tier::Llm => "llm",
            Tier::Human => "human",
        }
    }
}

/// An event line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    Decision {
        id: String,
        decision: Decision,
        tier: Tier,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        /// The text that went into MEMORY.md when it differs from the proposal's (an edit, or
        /// the LLM's clean text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The commit that made the change, when one was made.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        ts: String,
    },
    /// Where a reflection stopped: the observations it read are those up to `until` (the
    /// observation files' order, see the reflector), and what it proposed.
    Reflected {
        ts: String,
        reflector: String,
        /// The last observation file and line read (`vault/observations/DAY.jsonl:LINE`), or
        /// whatever mark the reflector needs to start after it.
        until: String,
        #[serde(default)]
        observations: usize,
        #[serde(default)]
        proposed: usize,
    },
}

/// Where a proposal stands after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// No decision yet, or one that leaves it to a person (`needs-review`).
    Pending,
    Promoted,
    Rejected,
    Merged,
}

/// A proposal with its decisions folded in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Folded {
    #[serde(flatten)]
    pub proposal: Proposal,
    pub state: State,
    /// The last decision's tier and reason, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The text that went into MEMORY.md, when it differs from the proposal's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Where it is stored: `vault/proposals/DAY.jsonl`.
    pub file: String,
}

/// One line of a proposals file.
#[derive(Debug, Clone)]
pub enum Line {
    Proposal(Proposal),
    Event(Event),
}

/// Parses one line: an event if it has `event`, else a proposal.
pub fn parse_line(
    path: &Path,
    line_no: usize,
    line: &str,
) -> std::result::Result<Line, jsonl::Malformed> {
    Ok(
        match jsonl::parse_tagged(path, line_no, line, "event", "proposal or event")? {
            jsonl::Tagged::Event(e) => Line::Event(e),
            jsonl::Tagged::Record(r) => Line::Proposal(r),
        },
    )
}

/// The day file written at `now`, relative to the root.
pub fn day_file(now: DateTime<Utc>) -> String {
    format!("{DIR}/{}.jsonl", now.format("%Y-%m-%d"))
}

/// Every proposals file, oldest first.
pub fn day_files(repo: &Repo) -> Result<Vec<PathBuf>> {
    let dir = repo.path(DIR);
    let read = match crate::files::read_dir_real(&dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io(dir.display(), &err)),
    };
    let mut out = Vec::new();
    for entry in read {
        let path = entry.map_err(|e| Error::io(dir.display(), &e))?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Everything the proposals files hold, folded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every proposal in the order written, with its decisions folded in.
    pub proposals: Vec<Folded>,
    /// The reflection marks, in the order written.
    pub reflections: Vec<Event>,
    /// Bad lines skipped, as `file:line: message` warnings.
    pub warnings: Vec<String>,
}

impl Loaded {
    pub fn pending(&self) -> impl Iterator<Item = &Folded> {
        self.proposals.iter().filter(|p| p.state == State::Pending)
    }

    pub fn get(&self, id: &str) -> Option<&Folded> {
        self.proposals.iter().find(|p| p.proposal.id == id)
    }
}

/// Reads every proposals file and folds the decisions over the proposals. A bad line is
/// skipped with a warning naming it (as the other readers do), never fatal.
pub fn load(repo: &Repo) -> Result<Loaded> {
    let mut out = Loaded::default();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut early: Vec<Event> = Vec::new();
    for path in day_files(repo)? {
        let rel = format!(
            "{DIR}/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        let text = jsonl::strip_bom(&text);
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        for (i, line) in text[..complete].lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(&path, i + 1, line) {
                Ok(Line::Proposal(p)) => {
                    if at.contains_key(&p.id) {
                        continue;
                    }
                    at.insert(p.id.clone(), out.proposals.len());
                    out.proposals.push(Folded {
                        proposal: p,
                        state: State::Pending,
                        tier: None,
                        reason: String::new(),
                        final_text: None,
                        commit: None,
                        file: rel.clone(),
                    });
                }
                Ok(Line::Event(e @ Event::Reflected { .. })) => out.reflections.push(e),
                Ok(Line::Event(e)) => {
                    let id = event_id(&e);
                    match at.get(id) {
                        Some(&i) => fold(&mut out.proposals[i], &e),
                        None => early.push(e),
                    }
                }
                Err(m) => out.warnings.push(m.to_string()),
            }
        }
    }
    // Decisions that arrived (by a merge of two machines' files) before their proposal.
    for e in early {
        if let Some(&i) = at.get(event_id(&e)) {
            fold(&mut out.proposals[i], &e);
        }
    }
    Ok(out)
}

fn event_id(e: &Event) -> &str {
    match e {
        Event::Decision { id, .. } => id,
        Event::Reflected { .. } => "",
    }
}

/// Applies one decision to a folded proposal.
pub fn fold(p: &mut Folded, e: &Event) {
    if let Event::Decision {
        decision,
        tier,
        reason,
        text,
        commit,
        ..
    } = e
    {
        p.state = match decision {
            Decision::Promote => State::Promoted,
            Decision::Reject => State::Rejected,
            Decision::Merge => State::Merged,
            Decision::NeedsReview => State::Pending,
        };
        p.tier = Some(*tier);
        p.reason = reason.clone();
        if text.is_some() {
            p.final_text = text.clone();
        }
        if commit.is_some() {
            p.commit = commit.clone();
        }
    }
}

/// One JSON line (with its newline) for a proposal or an event.
pub fn line<T: Serialize>(record: &T) -> String {
    let mut s = serde_json::to_string(record).expect("proposals serialize");
    s.push('\n');
    s
}

/// Why a proposal cannot be applied to the MEMORY.md it meets.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    #[error("the entry \"{0}\" is no longer in MEMORY.md (edited or removed by hand?)")]
    Gone(String),
    #[error("{0}")]
    Memory(String),
}

/// MEMORY.md's `text` with `p` applied, dated `date`; `text_override` replaces the proposal's
/// text (an edit, or the LLM's clean text). The person's other lines are kept byte for byte.
/// A `replace`, `remove` or `merge` whose target entry is gone is an error: the proposal stays
/// pending.
pub fn apply(
    text: &str,
    p: &Proposal,
    text_override: Option<&str>,
    date: NaiveDate,
) -> std::result::Result<String, ApplyError> {
    let new_text = text_override.unwrap_or(&p.text).trim();
    if p.op == Op::Add {
        let (out, _) = memory::add(text, &p.section, new_text, date, true)
            .map_err(|e| ApplyError::Memory(e.to_string()))?;
        return Ok(out);
    }
    let parsed = memory::parse(text);
    let entries: Vec<&memory::Entry> = parsed
        .loose
        .iter()
        .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()))
        .collect();
    let find = |target: &str| {
        let key = crate::store::normalize(target);
        entries
            .iter()
            .find(|e| crate::store::normalize(&e.text) == key)
            .copied()
    };
    let mut found = Vec::new();
    for t in &p.targets {
        match find(t) {
            Some(e) => found.push(e),
            None => return Err(ApplyError::Gone(t.clone())),
        }
    }
    let Some(first) = found.first() else {
        return Err(ApplyError::Memory(format!(
            "a {} proposal names no entry",
            p.op.as_str()
        )));
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len() + new_text.len());
    for (i, l) in lines.iter().enumerate() {
        let n = i + 1;
        // An item's range may run over the blank line after it: blank lines stay.
        if let Some(e) = found
            .iter()
            .find(|e| e.line <= n && n <= e.end && !l.trim().is_empty())
        {
            let is_first = e.line == first.line;
            if n == e.line && is_first && p.op != Op::Remove {
                let indent = &l[..l.len() - l.trim_start().len()];
                let marker = l.split_whitespace().next().unwrap_or("-");
                out.push_str(&format!(
                    "{indent}{marker} ({}) {new_text}\n",
                    date.format("%Y-%m-%d")
                ));
            }
            continue;
        }
        out.push_str(l);
    }
    Ok(out)
}

/// Appends proposal and event lines to today's proposals file and returns the change to
/// commit (HEAD's file plus exactly these lines). Run under the repository lock.
pub fn append(repo: &Repo, lines: &[String], now: DateTime<Utc>) -> Result<crate::git::Change> {
    let rel = day_file(now);
    let path = repo.path(&rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), &e))?;
    }
    let bytes: String = lines.concat();
    crate::files::append_lines(&path, bytes.as_bytes(), &repo.recovered_dir())?;
    Ok(crate::git::Change::Appended {
        path: rel,
        bytes: bytes.into_bytes(),
    })
}

/// What deciding a proposal will write: the journal's steps (the working MEMORY.md's rewrite
/// and its commit content, and the decision's event line), and whether MEMORY.md changes.
#[derive(Debug)]
pub struct Decided {
    pub steps: Vec<crate::journal::Step>,
    pub memory_changed: bool,
}

/// Plans `decision` about `p`: the event for today's proposals file and, for `promote`, the
/// change spliced into the working MEMORY.md (kept as the person left it otherwise) and into
/// HEAD's MEMORY.md for the commit (ADR 26: a commit holds only what the command wrote).
/// Writes nothing: the caller hands the steps to [`crate::journal::run`] with the commit
/// message, so a kill between the writes and the commit is finished by the next run (ADR 31).
/// A `replace`/`remove`/`merge` whose entry is gone is [`ApplyError::Gone`]: the proposal
/// stays pending. Run under the repository lock.
#[allow(clippy::too_many_arguments)]
pub fn decide(
    repo: &Repo,
    p: &Proposal,
    decision: Decision,
    tier: Tier,
    reason: &str,
    text: Option<&str>,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Decided, ApplyError>> {
    let mut steps = Vec::new();
    let mut memory_changed = false;
    if decision == Decision::Promote {
        let path = repo.path(memory::FILE);
        let working = crate::files::read_optional(&path)?.unwrap_or_default();
        let new = match apply(&working, p, text, now.date_naive()) {
            Ok(new) => new,
            Err(e) => return Ok(Err(e)),
        };
        // HEAD's MEMORY.md with the same change; when it cannot take it (the entry exists only
        // in the person's uncommitted edit), the working file's result is committed.
        let head = crate::git::head_content(repo.root(), memory::FILE)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let committed = match &head {
            Some(head) => apply(head, p, text, now.date_naive()).unwrap_or_else(|_| new.clone()),
            None => new.clone(),
        };
        memory_changed = new != working;
        steps.push(crate::journal::Step::Write {
            path: memory::FILE.to_string(),
            before: working,
            after: new,
            commit: committed,
            head,
        });
    }
    let event = Event::Decision {
        id: p.id.clone(),
        decision,
        tier,
        reason: reason.to_string(),
        text: text
            .filter(|t| t.trim() != p.text.trim())
            .map(|t| t.trim().to_string()),
        commit: None,
        ts: crate::time::format(now),
    };
    steps.push(append_step(&[line(&event)], now));
    Ok(Ok(Decided {
        steps,
        memory_changed,
    }))
}

/// The journal step that appends `lines` (each ending in a newline) to today's proposals file.
pub fn append_step(lines: &[String], now: DateTime<Utc>) -> crate::journal::Step {
    crate::journal::Step::Append {
        path: day_file(now),
        bytes: lines.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        "2026-12-01T10:00:00Z".parse().unwrap()
    }

    fn day() -> NaiveDate {
        at().date_naive()
    }

    const MEMORY: &str = "# Memory\n\n<!-- kept -->\n\n## Rules and conventions\n\n\
        - (2026-11-01) Never deploy on Fridays\n- (2026-11-02) Run cargo fmt before committing\n\n\
        ## Operations\n\n- (2026-11-03) NFS mounts need root to unmount\n";

    fn proposal(op: Op, text: &str, targets: &[&str]) -> Proposal {
        Proposal::new(
            op,
            "Rules and conventions",
            text,
            targets.iter().map(|t| t.to_string()).collect(),
            "seen twice",
            vec!["ob-1".into(), "ob-2".into()],
            0.9,
            "builtin",
            at(),
        )
    }

    #[test]
    fn ids_follow_content_not_the_order_of_observations() {
        let a = proposal(Op::Add, "Use tabs", &[]);
        let mut b = a.clone();
        b.observations.reverse();
        assert_eq!(a.id, proposal_id(&b));
        let c = proposal(Op::Add, "Use spaces", &[]);
        assert_ne!(a.id, c.id);
        assert!(a.id.starts_with("pr-"));
    }

    #[test]
    fn apply_splices_each_op_and_keeps_other_bytes() {
        let add = apply(MEMORY, &proposal(Op::Add, "Use tabs", &[]), None, day()).unwrap();
        assert!(
            add.contains(
                "- (2026-11-02) Run cargo fmt before committing\n- (2026-12-01) Use tabs\n"
            )
        );
        assert!(add.contains("<!-- kept -->"));

        let replace = proposal(
            Op::Replace,
            "Never deploy on Fridays or weekends",
            &["never deploy on fridays."],
        );
        let out = apply(MEMORY, &replace, None, day()).unwrap();
        assert!(out.contains("- (2026-12-01) Never deploy on Fridays or weekends\n- (2026-11-02)"));
        assert!(!out.contains("(2026-11-01)"));

        let remove = proposal(
            Op::Remove,
            "Never deploy on Fridays",
            &["Never deploy on Fridays"],
        );
        let out = apply(MEMORY, &remove, None, day()).unwrap();
        assert!(!out.contains("Fridays"));
        assert_eq!(
            out.len(),
            MEMORY.len() - "- (2026-11-01) Never deploy on Fridays\n".len()
        );

        let merge = proposal(
            Op::Merge,
            "Format and never deploy on Fridays",
            &["Never deploy on Fridays", "Run cargo fmt before committing"],
        );
        let out = apply(MEMORY, &merge, Some("Edited text"), day()).unwrap();
        assert!(
            out.contains("- (2026-12-01) Edited text\n\n## Operations"),
            "{out}"
        );
        assert!(!out.contains("cargo fmt"));
    }

    #[test]
    fn a_target_removed_by_hand_is_gone() {
        let remove = proposal(Op::Remove, "x", &["Something nobody wrote"]);
        assert_eq!(
            apply(MEMORY, &remove, None, day()),
            Err(ApplyError::Gone("Something nobody wrote".into()))
        );
    }

    #[test]
    fn decisions_fold_in_order() {
        let p = proposal(Op::Add, "Use tabs", &[]);
        let mut f = Folded {
            proposal: p.clone(),
            state: State::Pending,
            tier: None,
            reason: String::new(),
            final_text: None,
            commit: None,
            file: day_file(at()),
        };
        let needs = Event::Decision {
            id: p.id.clone(),
            decision: Decision::NeedsReview,
            tier: Tier::Llm,
            reason: "ambiguous".into(),
            text: None,
            commit: None,
            ts: "2026-12-01T10:00:00Z".into(),
        };
        fold(&mut f, &needs);
        assert_eq!(f.state, State::Pending);
        let reject = Event::Decision {
            id: p.id.clone(),
            decision: Decision::Reject,
            tier: Tier::Human,
            reason: "not true".into(),
            text: None,
            commit: None,
            ts: "2026-12-01T10:01:00Z".into(),
        };
        fold(&mut f, &reject);
        assert_eq!(f.state, State::Rejected);
        assert_eq!(f.tier, Some(Tier::Human));
        let round = line(&reject);
        assert!(round.contains("\"event\":\"decision\""), "{round}");
        assert!(matches!(
            parse_line(Path::new("x"), 1, round.trim()),
            Ok(Line::Event(Event::Decision { .. }))
        ));
    }
}
