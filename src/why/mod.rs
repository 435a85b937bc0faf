//! `cairn why TEXT|ID`: what became of a text, followed through the pipeline.
//!
//! A target is an id when it is one word with a record id's shape (`ob-…`, `tc-…`, `ep-…`,
//! `sl-…`, `pr-…`, `mem-…`, `lib-…-N`, `adr-N`, `MEMORY.md:N`), or names a note (its id
//! `DAY-SLUG` or its path) or a library document (its id, path or URL), else a text. An id is looked up directly: in the
//! observation store (stored, or merged away: a `merge` event whose `from` is the id), the
//! session files, the proposals, and the index for every other kind. A text is found by exact
//! match (case-insensitive, the files scanned as `search --exact` scans them, deleted
//! observations included) and by nearest meaning among observations and turn cards (the
//! index's vectors, at least `[recall] relevance_cosine`), each found record saying which.
//!
//! Each observation and card found is then traced: its transcript (the card's session, agent
//! and turn, the transcript path `.cairn/sessions.json` knows and whether it still exists), the
//! observer's `observed` events and what it extracted from the turn, the gate's verdict and the
//! rule behind it (the record keeps the verdict, not the rule: the rule is named by running the
//! gate's rules again on the stored text, and said to be so), category and confidence, its
//! events (merge, supersede, stale, delete, restore) with their times, recall counts, the
//! score's decay now (the index's [`Decay`], as recall applies it), where it stands for a query
//! ([`crate::recall::standing`]: recall's own ranking), the proposals citing it and the
//! MEMORY.md entries that say it. A text is also put to the gate itself (what `remember` would
//! make of it) and to dedup (the id it would have had, merged away already; the stored
//! observation it would merge into).
//!
//! A note or a library chunk (or document) named by the target is traced on its own, by
//! [`documents`]: where it came from (URL or path, captured or added, session, commits).
//!
//! Nothing is written: `why` reads the files, the index and `.cairn/` as they are.

pub mod documents;
pub mod text;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::cards::{Card, Record};
use crate::config::Config;
use crate::error::Result;
use crate::index::{Class, Decay, Doc, Filter, Index, Kind};
use crate::observe::gate::{self, Verdict};
use crate::recall::{self, Request, Standing};
use crate::repo::Repo;
use crate::store::{self, Event, Folded, Op};

pub use documents::{ChunkRef, LibraryTrace, NoteTrace};
use documents::{library_trace, note_trace};

/// How many observations and cards a text's trace follows in full (the rest are listed).
pub const TRACED: usize = 5;
/// How many records holding the target a trace lists (the rest are counted).
pub const LISTED: usize = 20;
/// How many records nearest in meaning a text's trace lists.
const NEAREST: usize = 3;

/// What to trace.
#[derive(Debug, Clone)]
pub struct Ask {
    pub target: String,
    /// A query to rank the records found against (`--query`).
    pub query: Option<Request>,
    pub now: DateTime<Utc>,
}

/// A record that holds the target.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The record's kind (`observation`, `card`, …, or `proposal`).
    pub kind: String,
    pub id: String,
    /// `id` (looked up), `exact` (holds the text, any case) or `meaning` (nearest by vector).
    pub how: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// `path:line` or the file, relative to the root.
    pub at: String,
    pub text: String,
}

/// The gate's verdict on a text and the rule that made it.
#[derive(Debug, Clone, Serialize)]
pub struct GateCheck {
    pub verdict: Verdict,
    pub confidence: f64,
    /// The rule, as `gate::decide` names it (`too short`, `instruction artifact`, …).
    pub rule: &'static str,
    /// The rule in a person's words.
    pub says: String,
    /// `re-run`: the stored record keeps no rule, so the gate's rules were run again on its
    /// text; `as-given`: the text given to `why`, put to the gate as `remember` would.
    pub from: &'static str,
    /// For a stored record: the verdict it was stored with, when the rules today say another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<Verdict>,
}

/// An event about an observation, as written.
#[derive(Debug, Clone, Serialize)]
pub struct EventAt {
    pub op: Op,
    pub ts: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `path:line`.
    pub at: String,
}

/// A record's decay now, as recall applies it.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub kind: Kind,
    pub age_days: f64,
    /// Per day; 0 for what does not decay.
    pub rate: f64,
    pub time_decay: f64,
    /// The stale factor when it applies (stale or superseded), else 1.
    pub stale_factor: f64,
    /// `time_decay × stale_factor`: what recall multiplies (or adds the log of).
    pub decay: f64,
    /// Whether the index holds the record (deleted ones it leaves out).
    pub indexed: bool,
}

/// Where a record stands for the query, and why when it is not recalled.
#[derive(Debug, Clone, Serialize)]
pub struct QueryStanding {
    pub query: String,
    pub recalled: bool,
    /// Recall's own standing (the lists read as deep as recall reads them).
    pub standing: Standing,
    /// When recall's lists did not reach it: its standing in a read of every record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_read: Option<Standing>,
    /// Why it is not recalled, in a person's words (empty when it is).
    pub why_not: Vec<String>,
}

/// A proposal citing an observation.
#[derive(Debug, Clone, Serialize)]
pub struct ProposalRef {
    pub id: String,
    pub state: crate::proposals::State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<&'static str>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub section: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A MEMORY.md entry.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryRef {
    pub line: usize,
    pub text: String,
    /// `exact` (holds the observation's text) or the id of the proposal that put it there.
    pub how: String,
}

/// An observation followed through the pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct ObservationTrace {
    pub id: String,
    pub text: String,
    /// `path:line` of the record.
    pub at: String,
    pub state: store::State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    pub time: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn card it came from (its source), when it came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    pub observation_type: String,
    pub priority: String,
    pub gate: GateCheck,
    pub write_confidence: f64,
    pub category: String,
    pub category_confidence: f64,
    pub taxonomy_version: u32,
    pub merged_count: u32,
    /// Merge, supersede, stale, delete and restore events about it, in the order written.
    pub events: Vec<EventAt>,
    pub recalls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_recall: Option<String>,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
    pub proposals: Vec<ProposalRef>,
    pub memory: Vec<MemoryRef>,
}

/// A transcript path the checkpoints know for a session file.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptRef {
    pub path: String,
    pub exists: bool,
}

/// An observer's reading of a turn.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedBy {
    pub observer: String,
    pub ts: String,
}

/// A turn card followed through the pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct CardTrace {
    pub id: String,
    pub agent: String,
    pub session: String,
    pub turn: usize,
    pub ts: String,
    pub outcome: String,
    pub asked: String,
    pub trivial: bool,
    /// `path:line` of the card.
    pub at: String,
    /// The transcripts `.cairn/sessions.json` knows for its session file.
    pub transcripts: Vec<TranscriptRef>,
    /// Each time an observer read the turn.
    pub observed: Vec<ObservedBy>,
    /// The observations whose source is this card.
    pub extracted: Vec<String>,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}

/// An id merged into another instead of being stored.
#[derive(Debug, Clone, Serialize)]
pub struct MergedAway {
    /// The id it would have had.
    pub from: String,
    pub into: String,
    pub ts: String,
    pub at: String,
}

/// The stored observation a new copy of the text would merge into.
#[derive(Debug, Clone, Serialize)]
pub struct WouldMerge {
    pub into: String,
    pub similarity: f64,
    pub threshold: f64,
}

/// Everything `why` found.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    pub target: String,
    /// `id` or `text`.
    pub by: &'static str,
    /// The records holding it, at most [`LISTED`].
    pub found: Vec<Found>,
    /// How many records hold it in all.
    pub found_total: usize,
    pub merged_away: Vec<MergedAway>,
    /// A text only: what the gate makes of the text itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateCheck>,
    /// A text only: the stored observation a new copy would merge into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_merge: Option<WouldMerge>,
    pub observations: Vec<ObservationTrace>,
    pub cards: Vec<CardTrace>,
    /// Other records looked up by id (slog, ADR, MEMORY.md, episode): decay and standing.
    pub others: Vec<OtherTrace>,
    /// Proposals looked up by id.
    pub proposals: Vec<ProposalRef>,
    /// A note looked up by id or path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<NoteTrace>,
    /// A library chunk or document looked up by id, path or URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryTrace>,
}

impl Trace {
    /// Whether nothing holds the target (by id or as written) nor absorbed it: records near
    /// it in meaning are shown, but they are not it.
    pub fn is_empty(&self) -> bool {
        self.found.iter().all(|f| f.how == "meaning") && self.merged_away.is_empty()
    }
}

/// A record of another kind, looked up by id.
#[derive(Debug, Clone, Serialize)]
pub struct OtherTrace {
    pub id: String,
    pub kind: Kind,
    pub score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryStanding>,
}

/// Whether `s` has the shape of a record id.
pub fn looks_like_id(s: &str) -> bool {
    let s = s.trim();
    if s.is_empty() || s.contains(char::is_whitespace) {
        return false;
    }
    let hex_after = |p: &str| {
        s.strip_prefix(p)
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let chunk = s
        .strip_prefix("lib-")
        .and_then(|r| r.rsplit_once('-'))
        .is_some_and(|(doc, n)| {
            !doc.is_empty()
                && doc.chars().all(|c| c.is_ascii_hexdigit())
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
        });
    chunk
        || ["ob-", "tc-", "ep-", "sl-", "pr-", "mem-"]
            .iter()
            .any(|p| hex_after(p))
        || s.strip_prefix("adr-")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        || s.strip_prefix("MEMORY.md:")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The observation store read once: folded records, where each is, and the events by id.
struct StoreView {
    folded: Vec<Folded>,
    at: HashMap<String, String>,
    /// Update events (not `observed`) by the id they are about.
    events: HashMap<String, Vec<EventAt>>,
    /// Merge events by the id they absorbed.
    merged_from: HashMap<String, MergedAway>,
    /// `observed` events by card id.
    observed: HashMap<String, Vec<ObservedBy>>,
}

impl StoreView {
    fn read(repo: &Repo) -> Result<StoreView> {
        let (folded, _) = store::load_all(repo)?;
        let mut view = StoreView {
            folded,
            at: HashMap::new(),
            events: HashMap::new(),
            merged_from: HashMap::new(),
            observed: HashMap::new(),
        };
        for path in store::day_files(repo)? {
            let rel = rel_of(repo, &path);
            let (lines, _) = store::read_file(&path)?;
            for (line, l) in lines {
                let at = format!("{rel}:{line}");
                match l {
                    store::Line::Observation(o) => {
                        view.at.entry(o.id).or_insert(at);
                    }
                    store::Line::Event(e) => view.add(e, at),
                }
            }
        }
        Ok(view)
    }

    fn add(&mut self, e: Event, at: String) {
        match e.op {
            Op::Observed => self.observed.entry(e.id).or_default().push(ObservedBy {
                observer: e.by.unwrap_or_default(),
                ts: e.ts,
            }),
            op => {
                if let (Op::Merge, Some(from)) = (op, &e.from) {
                    self.merged_from
                        .entry(from.clone())
                        .or_insert_with(|| MergedAway {
                            from: from.clone(),
                            into: e.id.clone(),
                            ts: e.ts.clone(),
                            at: at.clone(),
                        });
                }
                self.events.entry(e.id).or_default().push(EventAt {
                    op,
                    ts: e.ts,
                    by: e.by,
                    from: e.from,
                    at,
                });
            }
        }
    }

    fn get(&self, id: &str) -> Option<&Folded> {
        self.folded.iter().find(|f| f.obs.id == id)
    }
}

fn rel_of(repo: &Repo, path: &Path) -> String {
    path.strip_prefix(repo.root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Every turn card of every session file, with its `path:line`.
fn all_cards(repo: &Repo) -> Result<Vec<(String, usize, Card)>> {
    let mut out = Vec::new();
    for rel in session_files(repo)? {
        let Ok(text) = std::fs::read_to_string(repo.path(&rel)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if let Ok(Record::Card(c)) = serde_json::from_str::<Record>(line) {
                out.push((rel.clone(), i + 1, c));
            }
        }
    }
    Ok(out)
}

/// Every session file, relative to the root.
fn session_files(repo: &Repo) -> Result<Vec<String>> {
    Ok(crate::index::sources::list(repo)?
        .into_iter()
        .filter(|f| f.kind == crate::index::sources::SourceKind::Sessions)
        .map(|f| f.rel)
        .collect())
}

/// What the gate's rules make of `text` proposed at `verdict`, in a person's words.
pub fn gate_check(
    text: &str,
    proposed: Verdict,
    confidence: f64,
    min_chars: usize,
    from: &'static str,
) -> GateCheck {
    let d = gate::decide(text, proposed, confidence, min_chars);
    let says = match d.reason {
        "too short" => format!(
            "shorter than {min_chars} characters ([gate] min_chars): discarded, only counted"
        ),
        "instruction artifact" => "opens like an instruction to an editor (\"Add after…\", \
                                   \"Replace…\"): discarded, only counted"
            .to_string(),
        "cites an ADR, a path or a command" => {
            "cites an ADR, a path or a command: held becomes allowed".to_string()
        }
        _ => match d.verdict {
            Verdict::Allow => "no rule applies: the proposed verdict (allow) stands".to_string(),
            Verdict::Hold => {
                "no rule applies: the proposed verdict (hold) stands, recalled only with \
                 --include-hold"
                    .to_string()
            }
            Verdict::Discard => "no rule applies: the proposed discard stands".to_string(),
        },
    };
    GateCheck {
        verdict: d.verdict,
        confidence: d.confidence,
        rule: d.reason,
        says,
        from,
        stored: None,
    }
}

/// The verdict the observer (or `remember`) proposed for a stored observation, as far as the
/// record tells: the built-in observer proposes hold for corrections, error fixes and
/// decisions; anything else is taken as proposed at the verdict it was stored with.
fn proposed_verdict(f: &Folded, observer: Option<&str>) -> Verdict {
    let builtin_hold = matches!(
        f.obs.observation_type.as_str(),
        "correction" | "error-fix" | "decision"
    );
    if observer == Some(crate::observe::builtin::NAME) && builtin_hold {
        Verdict::Hold
    } else {
        f.obs.write_verdict
    }
}

/// A record's decay now, from its class, time and staleness.
fn score(decay: &Decay, doc: &Doc, indexed: bool) -> Score {
    let class = doc.class();
    let millis = doc.time.timestamp_millis();
    let time_decay = decay.time_factor(class, millis);
    let stale_factor = if doc.is_stale() {
        decay.stale_factor
    } else {
        1.0
    };
    Score {
        kind: doc.kind,
        age_days: decay.days(millis),
        rate: if class == Class::AdrCurrent {
            0.0
        } else {
            decay.rate(class)
        },
        time_decay,
        stale_factor,
        decay: time_decay * stale_factor,
        indexed,
    }
}

/// The document the index holds for `id`, or one made from the observation (a deleted one is
/// not indexed).
fn observation_doc(index: &Index, f: &Folded, file: &str) -> Result<(Doc, bool)> {
    Ok(match index.doc(&f.obs.id)? {
        Some(d) => (d, true),
        None => (crate::index::sources::observation_doc(f, file), false),
    })
}

/// Where `doc` stands for the query, with the reasons it is not recalled.
fn query_standing(
    index: &Index,
    config: &Config,
    request: &Request,
    doc: &Doc,
) -> Result<QueryStanding> {
    let mut why_not = Vec::new();
    let deleted = doc.status == "deleted";
    let held = doc.verdict == "hold" && !request.filter.include_hold;
    if deleted {
        why_not.push("deleted: recall leaves it out (`cairn restore ID` brings it back)".into());
    }
    if held {
        why_not.push(
            "held by the gate: recalled only with --include-hold; the rank is with it".into(),
        );
    }
    if !request.filter.kinds.is_empty() && !request.filter.kinds.contains(&doc.kind) {
        why_not.push(format!(
            "a {} is not among the kinds asked for",
            doc.kind.as_str()
        ));
    }
    if request
        .filter
        .category
        .as_ref()
        .is_some_and(|c| *c != doc.category)
    {
        why_not.push(format!("its category is {}", doc.category));
    }
    let mut asked = request.clone();
    if held {
        asked.filter.include_hold = true;
    }
    let standing = recall::standing(index, config, &asked, &doc.id)?;
    let mut full_read = None;
    match &standing {
        Standing::Ranked {
            rank,
            limit,
            relevant,
            ..
        } if rank > limit => why_not.push(format!(
            "ranks {rank} of {relevant} relevant results, past the cap of {limit}"
        )),
        Standing::Ranked { .. } => {}
        Standing::NotRelevant { result, .. } => why_not.push(not_relevant(&standing, result)),
        Standing::NotRead { depth } => {
            // Recall reads each list this deep: the rank in a read of every record says how
            // far off it is.
            let mut all = asked.clone();
            all.limit = (index.num_docs() as usize).max(asked.limit);
            let full = recall::standing(index, config, &all, &doc.id)?;
            why_not.push(match &full {
                Standing::Ranked { rank, relevant, .. } => format!(
                    "not among the first {depth} of any list recall reads; a read of every \
                     record ranks it {rank} of {relevant}"
                ),
                Standing::NotRelevant { result, .. } => format!(
                    "not among the first {depth} of any list recall reads; {}",
                    not_relevant(&full, result)
                ),
                _ => format!(
                    "in no list at all: no word in common with the query, and by meaning \
                     under [recall] min_similarity ({})",
                    config.recall.min_similarity
                ),
            });
            full_read = Some(full);
        }
        Standing::NoWords => why_not.push("the query has no word to match".into()),
    }
    let recalled = why_not.is_empty();
    Ok(QueryStanding {
        query: request.query.clone(),
        recalled,
        standing,
        full_read,
        why_not,
    })
}

fn not_relevant(s: &Standing, r: &recall::Recalled) -> String {
    let (min_cosine, min_soft) = match s {
        Standing::NotRelevant {
            min_cosine,
            min_soft,
            ..
        } => (*min_cosine, *min_soft),
        _ => (0.0, 0.0),
    };
    let cosine = r
        .scores
        .get("vectors")
        .map_or("not in the vector list".to_string(), |c| {
            format!("cosine {c:.3}")
        });
    let soft = r.soft_share.map_or("no soft match".to_string(), |s| {
        format!("soft share {s:.2}")
    });
    format!(
        "under the relevance floor: no word in common with the query, {cosine} (floor \
         {min_cosine}), {soft} (floor {min_soft})"
    )
}

/// Follows `ask.target` through the pipeline. `transcripts` maps each transcript path to the
/// session file it renders to (`.cairn/sessions.json`).
pub fn trace(
    repo: &Repo,
    index: &Index,
    ask: &Ask,
    transcripts: &BTreeMap<String, String>,
) -> Result<Trace> {
    let config = &repo.config;
    let store = StoreView::read(repo)?;
    let cards = all_cards(repo)?;
    let decay = Decay::from_config(&config.recall, ask.now);
    let target = ask.target.trim().to_string();
    let by_id = looks_like_id(&target);
    let mut trace = Trace {
        target: target.clone(),
        by: if by_id { "id" } else { "text" },
        found: Vec::new(),
        found_total: 0,
        merged_away: Vec::new(),
        gate: None,
        would_merge: None,
        observations: Vec::new(),
        cards: Vec::new(),
        others: Vec::new(),
        proposals: Vec::new(),
        note: None,
        library: None,
    };
    if let Some(n) = note_trace(repo, index, ask, &decay, &target)? {
        trace.by = "id";
        trace.found.push(Found {
            kind: "note".into(),
            id: n.id.clone(),
            how: "id",
            similarity: None,
            at: n.at.clone(),
            text: n.title.clone(),
        });
        trace.found_total = 1;
        trace.note = Some(n);
        return Ok(trace);
    }
    if let Some((l, text)) = library_trace(repo, index, ask, &decay, &target)? {
        trace.by = "id";
        trace.found.push(Found {
            kind: "library".into(),
            id: l
                .chunk
                .as_ref()
                .map_or_else(|| l.document.clone(), |c| c.id.clone()),
            how: "id",
            similarity: None,
            at: l.source.clone(),
            text,
        });
        trace.found_total = 1;
        trace.library = Some(l);
        return Ok(trace);
    }
    let proposals = crate::proposals::load(repo)?;
    // The observations and cards to trace in full, in the order found.
    let mut obs_ids: Vec<String> = Vec::new();
    let mut card_ids: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, id: &str| {
        if !v.iter().any(|x| x == id) {
            v.push(id.to_string());
        }
    };
    if by_id {
        if let Some(f) = store.get(&target) {
            trace.found.push(Found {
                kind: "observation".into(),
                id: target.clone(),
                how: "id",
                similarity: None,
                at: store.at.get(&target).cloned().unwrap_or_default(),
                text: f.obs.observation.clone(),
            });
            push(&mut obs_ids, &target);
        } else if let Some(m) = store.merged_from.get(&target) {
            trace.merged_away.push(m.clone());
            push(&mut obs_ids, &m.into);
        } else if let Some((rel, line, c)) = cards.iter().find(|(_, _, c)| c.id == target) {
            trace.found.push(Found {
                kind: "card".into(),
                id: c.id.clone(),
                how: "id",
                similarity: None,
                at: format!("{rel}:{line}"),
                text: c.head(),
            });
            push(&mut card_ids, &target);
        } else if let Some(p) = proposals.get(&target) {
            trace.found.push(Found {
                kind: "proposal".into(),
                id: target.clone(),
                how: "id",
                similarity: None,
                at: p.file.clone(),
                text: p.proposal.text.clone(),
            });
            trace.proposals.push(proposal_ref(p));
            for o in &p.proposal.observations {
                push(&mut obs_ids, o);
            }
        } else if let Some(doc) = match memory_line(&target) {
            Some(line) => memory_doc(repo, line, ask.now)?,
            None => index.doc(&target)?,
        } {
            trace.found.push(Found {
                kind: doc.kind.as_str().into(),
                id: doc.id.clone(),
                how: "id",
                similarity: None,
                at: doc.file.clone(),
                text: doc.text.lines().next().unwrap_or_default().to_string(),
            });
            let query = match &ask.query {
                Some(r) => Some(query_standing(index, config, r, &doc)?),
                None => None,
            };
            trace.others.push(OtherTrace {
                id: doc.id.clone(),
                kind: doc.kind,
                score: score(&decay, &doc, true),
                query,
            });
        }
    } else {
        let needle = target.to_lowercase();
        let min_chars = config.gate.min_chars;
        trace.gate = Some(gate_check(
            &target,
            Verdict::Allow,
            0.9,
            min_chars,
            "as-given",
        ));
        // Exact: observations as stored (deleted ones too), then every other kind as
        // `search --exact` scans them.
        for f in &store.folded {
            if f.obs.observation.to_lowercase().contains(&needle) {
                trace.found.push(Found {
                    kind: "observation".into(),
                    id: f.obs.id.clone(),
                    how: "exact",
                    similarity: None,
                    at: store.at.get(&f.obs.id).cloned().unwrap_or_default(),
                    text: f.obs.observation.clone(),
                });
                push(&mut obs_ids, &f.obs.id);
            }
        }
        let kinds = [
            Kind::Slog,
            Kind::Adr,
            Kind::Memory,
            Kind::Card,
            Kind::Episode,
        ];
        for hit in crate::recall::exact::scan(repo, &target, &kinds)? {
            if hit.kind == Kind::Card {
                push(&mut card_ids, &hit.id);
            }
            let text = snippet(&hit.text, &needle);
            trace.found.push(Found {
                kind: hit.kind.as_str().into(),
                id: hit.id,
                how: "exact",
                similarity: None,
                at: hit.at,
                text,
            });
        }
        // Nearest by meaning among observations and cards, past what was found exactly.
        let filter = Filter {
            kinds: vec![Kind::Observation, Kind::Card],
            category: None,
            include_hold: true,
        };
        let floor = config.recall.relevance_cosine;
        let hits = index.search_vectors(&target, &filter, NEAREST * 4, floor)?;
        let mut near = 0;
        for h in hits {
            if near >= NEAREST || trace.found.iter().any(|f| f.id == h.doc.id) {
                continue;
            }
            near += 1;
            match h.doc.kind {
                Kind::Card => push(&mut card_ids, &h.doc.id),
                _ => push(&mut obs_ids, &h.doc.id),
            }
            trace.found.push(Found {
                kind: h.doc.kind.as_str().into(),
                id: h.doc.id.clone(),
                how: "meaning",
                similarity: Some(h.raw),
                at: h.doc.file.clone(),
                text: h.doc.text.lines().next().unwrap_or_default().to_string(),
            });
        }
        // Dedup: the ids the text would have had (from `remember`, or from a card holding
        // it), merged into another already; and what a new copy would merge into.
        let mut sources: Vec<String> = vec!["cli".into()];
        sources.extend(card_ids.iter().cloned());
        for source in &sources {
            let id = store::observation_id(&target, source);
            if let Some(m) = store.merged_from.get(&id) {
                trace.merged_away.push(m.clone());
                push(&mut obs_ids, &m.into);
            }
        }
        let threshold = config.gate.dedup_threshold;
        if let Some(m) = store::dedup::nearest(index, &target, threshold, ask.now)? {
            trace.would_merge = Some(WouldMerge {
                into: m.into,
                similarity: m.similarity,
                threshold,
            });
        }
    }
    // Cards of the observations, so that each observation's turn is traced too.
    for id in obs_ids.iter().take(TRACED) {
        if let Some(f) = store.get(id)
            && f.obs.source.starts_with("tc-")
            && cards.iter().any(|(_, _, c)| c.id == f.obs.source)
        {
            push(&mut card_ids, &f.obs.source);
        }
    }
    trace.found_total = trace.found.len();
    trace.found.truncate(LISTED);
    let counts = crate::recall::counts::read(repo)?;
    let memory_text =
        crate::files::read_optional(&repo.path(crate::memory::FILE))?.unwrap_or_default();
    let memory = crate::memory::parse(&memory_text);
    let entries: Vec<&crate::memory::Entry> = memory
        .loose
        .iter()
        .chain(memory.sections.iter().flat_map(|s| s.entries.iter()))
        .collect();
    for id in obs_ids.iter().take(TRACED) {
        let Some(f) = store.get(id) else { continue };
        let observer = store
            .observed
            .get(&f.obs.source)
            .and_then(|o| o.last())
            .map(|o| o.observer.as_str());
        let mut gate = gate_check(
            &f.obs.observation,
            proposed_verdict(f, observer),
            f.obs.write_confidence,
            config.gate.min_chars,
            "re-run",
        );
        if gate.verdict != f.obs.write_verdict {
            gate.stored = Some(f.obs.write_verdict);
        }
        let file = store
            .at
            .get(id)
            .and_then(|a| a.rsplit_once(':'))
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        let (doc, indexed) = observation_doc(index, f, &file)?;
        let query = match &ask.query {
            Some(r) => Some(query_standing(index, config, r, &doc)?),
            None => None,
        };
        let citing: Vec<&crate::proposals::Folded> = proposals
            .proposals
            .iter()
            .filter(|p| p.proposal.observations.iter().any(|o| o == id))
            .collect();
        let said = crate::store::normalize(&f.obs.observation);
        let mut memory_refs = Vec::new();
        for e in &entries {
            let entry = crate::store::normalize(&e.text);
            let how = if !said.is_empty() && entry.contains(&said) {
                Some("exact".to_string())
            } else {
                citing
                    .iter()
                    .filter(|p| p.state == crate::proposals::State::Promoted)
                    .find(|p| {
                        let text = p.final_text.as_deref().unwrap_or(&p.proposal.text);
                        crate::store::normalize(text) == entry
                    })
                    .map(|p| p.proposal.id.clone())
            };
            if let Some(how) = how {
                memory_refs.push(MemoryRef {
                    line: e.line,
                    text: e.text.clone(),
                    how,
                });
            }
        }
        let count = counts.get(id);
        trace.observations.push(ObservationTrace {
            id: id.clone(),
            text: f.obs.observation.clone(),
            at: store.at.get(id).cloned().unwrap_or_default(),
            state: f.state,
            superseded_by: f.superseded_by.clone(),
            time: f.obs.timestamp.clone(),
            source: f.obs.source.clone(),
            session_id: f.obs.session_id.clone(),
            card: f
                .obs
                .source
                .starts_with("tc-")
                .then(|| f.obs.source.clone()),
            observation_type: f.obs.observation_type.clone(),
            priority: f.obs.priority.clone(),
            gate,
            write_confidence: f.obs.write_confidence,
            category: f.obs.category_id.clone(),
            category_confidence: f.obs.category_confidence,
            taxonomy_version: f.obs.taxonomy_version,
            merged_count: f.obs.merged_count,
            events: store.events.get(id).cloned().unwrap_or_default(),
            recalls: count.map_or(0, |c| c.count),
            last_recall: count.map(|c| c.last.clone()),
            score: score(&decay, &doc, indexed),
            query,
            proposals: citing.into_iter().map(proposal_ref).collect(),
            memory: memory_refs,
        });
    }
    let existing: HashSet<&str> = store.folded.iter().map(|f| f.obs.id.as_str()).collect();
    for id in card_ids.iter().take(TRACED) {
        let Some((rel, line, c)) = cards.iter().find(|(_, _, c)| c.id == *id) else {
            continue;
        };
        let paths: Vec<TranscriptRef> = transcripts
            .iter()
            .filter(|(_, file)| *file == rel)
            .map(|(path, _)| TranscriptRef {
                path: path.clone(),
                exists: Path::new(path).exists(),
            })
            .collect();
        let extracted: Vec<String> = store
            .folded
            .iter()
            .filter(|f| f.obs.source == c.id && existing.contains(f.obs.id.as_str()))
            .map(|f| f.obs.id.clone())
            .collect();
        let (doc, indexed) = match index.doc(&c.id)? {
            Some(d) => (d, true),
            None => (crate::index::sources::card_doc(c, rel), false),
        };
        let query = match &ask.query {
            Some(r) => Some(query_standing(index, config, r, &doc)?),
            None => None,
        };
        trace.cards.push(CardTrace {
            id: c.id.clone(),
            agent: c.agent.clone(),
            session: c.session.clone(),
            turn: c.turn,
            ts: c.ts.clone(),
            outcome: c.outcome.clone(),
            asked: c.head(),
            trivial: c.trivial,
            at: format!("{rel}:{line}"),
            transcripts: paths,
            observed: store.observed.get(&c.id).cloned().unwrap_or_default(),
            extracted,
            score: score(&decay, &doc, indexed),
            query,
        });
    }
    Ok(trace)
}

/// The line of a `MEMORY.md:N` id.
fn memory_line(id: &str) -> Option<usize> {
    id.strip_prefix("MEMORY.md:")?.parse().ok()
}

/// The document of the MEMORY.md entry at `line` (as the index makes it), if one is there.
fn memory_doc(repo: &Repo, line: usize, now: DateTime<Utc>) -> Result<Option<Doc>> {
    let Some(text) = crate::files::read_optional(&repo.path(crate::memory::FILE))? else {
        return Ok(None);
    };
    let memory = crate::memory::parse(&text);
    let Some(entry) = memory
        .loose
        .iter()
        .chain(memory.sections.iter().flat_map(|s| s.entries.iter()))
        .find(|e| e.line == line)
    else {
        return Ok(None);
    };
    Ok(
        crate::index::sources::memory_docs(&text, crate::memory::FILE, now)
            .into_iter()
            .find(|d| d.text == entry.text)
            .map(|mut d| {
                d.file = format!("{}:{line}", crate::memory::FILE);
                d
            }),
    )
}

fn proposal_ref(p: &crate::proposals::Folded) -> ProposalRef {
    ProposalRef {
        id: p.proposal.id.clone(),
        state: p.state,
        tier: p.tier.map(|t| t.as_str()),
        reason: p.reason.clone(),
        section: p.proposal.section.clone(),
        text: p
            .final_text
            .clone()
            .unwrap_or_else(|| p.proposal.text.clone()),
        commit: p.commit.clone(),
    }
}

/// The line of `text` that holds `needle` (lower case), else its first line.
fn snippet(text: &str, needle: &str) -> String {
    text.lines()
        .find(|l| l.to_lowercase().contains(needle))
        .or_else(|| text.lines().next())
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_told_from_texts_by_their_shape() {
        for id in [
            "ob-73f7559fdcb0df01",
            "tc-787e50bcbd65",
            "ep-0a1b",
            "sl-00ff",
            "mem-0a1b2c3d4e5f",
            "pr-1234abcd",
            "adr-7",
            "MEMORY.md:12",
            "lib-0a1b2c3d4e5f6789-12",
        ] {
            assert!(looks_like_id(id), "{id}");
        }
        for text in [
            "don't overcomplicate",
            "ob-",
            "ob-notahash",
            "adr-seven",
            "tc-12 and more",
            "ok",
            "lib-0a1b-",
            "lib-notahex-3",
        ] {
            assert!(!looks_like_id(text), "{text}");
        }
    }

    #[test]
    fn the_gate_check_names_the_rule_in_words() {
        let g = gate_check("ok thanks", Verdict::Allow, 0.9, 12, "as-given");
        assert_eq!((g.verdict, g.rule), (Verdict::Discard, "too short"));
        assert!(g.says.contains("shorter than 12 characters"), "{}", g.says);
        let g = gate_check(
            "Replace the mutex with a channel",
            Verdict::Allow,
            0.9,
            12,
            "re-run",
        );
        assert_eq!(g.rule, "instruction artifact");
        let g = gate_check(
            "run `cargo test` before pushing",
            Verdict::Hold,
            0.4,
            12,
            "re-run",
        );
        assert_eq!(g.verdict, Verdict::Allow);
        assert!(g.says.contains("held becomes allowed"));
        let g = gate_check(
            "the user likes short answers",
            Verdict::Hold,
            0.4,
            12,
            "re-run",
        );
        assert_eq!((g.verdict, g.rule), (Verdict::Hold, "as proposed"));
    }
}
