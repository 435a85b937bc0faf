//! Recall: what an agent should remember, ranked by words and time.
//!
//! Pipeline: the query → ranked lists (BM25 × decay
//! from the index, vectors × decay, or, in hybrid, the default, BM25, soft word matches and
//! vectors read undecayed and fused by standard score, then decayed: see [`lists::hybrid`] and
//! [`fuse`]) → a time the query names ("in May", "last week": [`when`]) raises the records of
//! that span by `[recall] time_boost` → relevance: a result must share a word with the query or
//! come close enough by meaning ([`relevance::Relevance`]), so nonsense finds nothing → diversity, when
//! `[recall] diversity` is under 1 ([`diverse`]: MMR) → the profile's cap. When the profile
//! rewrites and `[llm]` names a provider, [`recall_rewritten`] asks the LLM for a better query
//! while the original is searched, searches the rewrite the same way, and fuses the two
//! rankings by rank ([`rewrite::merge`]); a rewrite that fails, times out or gives the query
//! back leaves the original's ranking as it is. Recalled
//! observations have their recall count raised ([`counts`]). The Markdown form quotes every
//! recalled text as data from memory, never as instructions.

pub mod counts;
pub mod diverse;
pub mod exact;
pub mod feedback;
mod fusion;
mod lists;
mod presentation;
pub mod project;
pub mod rejected;
mod relevance;
pub mod rewrite;
pub mod sources;
pub mod speaker;
pub mod turns;
pub mod when;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::{Decay, Filter, Index, Kind};
use fusion::fuse_hybrid;
#[cfg(test)]
use fusion::to_recalled;
pub use fusion::{Fusion, Ranked, fuse, fuse_ranks};
pub use lists::vector_list_depth;
use lists::{depth, fused_lists, hybrid, weights};
pub use presentation::{SHOWN_CHARS, explain_line, head, shown, to_markdown, to_text};
pub use relevance::CHANCE_QUANTILE;
use relevance::{Relevance, no_words};

/// A result budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Lean,
    Balanced,
    Deep,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Lean => "lean",
            Profile::Balanced => "balanced",
            Profile::Deep => "deep",
        }
    }

    /// The profile asked for (`auto` chooses from the query and the caller).
    pub fn choose(asked: &str, query: &str, terminal: bool) -> Result<Profile> {
        match asked.trim().to_ascii_lowercase().as_str() {
            "lean" => Ok(Profile::Lean),
            "balanced" => Ok(Profile::Balanced),
            "deep" => Ok(Profile::Deep),
            "auto" => Ok(auto(query, terminal)),
            other => Err(Error::bad_input(format!(
                "unknown profile `{other}`: use lean, balanced, deep or auto"
            ))),
        }
    }

    /// The number of results, from `[profiles.NAME]`.
    pub fn limit(self, config: &Config) -> usize {
        let default = match self {
            Profile::Lean => 3,
            Profile::Balanced => 7,
            Profile::Deep => 15,
        };
        config
            .profiles
            .get(self.as_str())
            .map_or(default, |p| p.limit)
    }
}

/// `auto`: a short query from an agent gets the lean budget, a long one the deep budget; no
/// query (a briefing) or a person at a terminal gets at least the balanced one.
pub fn auto(query: &str, terminal: bool) -> Profile {
    let words = query.split_whitespace().count();
    let by_length = match words {
        0 => Profile::Balanced,
        1..=3 => Profile::Lean,
        4..=12 => Profile::Balanced,
        _ => Profile::Deep,
    };
    if terminal && by_length == Profile::Lean {
        Profile::Balanced
    } else {
        by_length
    }
}

impl Profile {
    /// Whether `[profiles.NAME] rewrite` asks for a query rewrite (balanced and deep by
    /// default, lean never).
    pub fn rewrites(self, config: &Config) -> bool {
        let default = self != Profile::Lean;
        config
            .profiles
            .get(self.as_str())
            .and_then(|p| p.rewrite)
            .unwrap_or(default)
    }
}

/// One recalled record, with everything needed to answer "why (not) this".
#[derive(Debug, Clone, Serialize)]
pub struct Recalled {
    pub id: String,
    pub kind: Kind,
    pub source: String,
    pub text: String,
    pub title: String,
    pub time: String,
    pub category: String,
    pub verdict: String,
    pub status: String,
    pub session: String,
    pub file: String,
    /// The score before decay: BM25 (words), cosine (vectors), or the fused score (hybrid: the
    /// weighted sum of the record's standard scores in each list).
    pub raw_score: f64,
    /// `floor + (1 - floor) × exp(-λ·days)`, times the stale factor where it applies.
    pub decay: f64,
    /// What the results are ordered by: `raw_score × decay` for one list, `raw_score +
    /// ln(decay)` for fused lists (a standard score is on a log-like scale, and may be negative).
    pub score: f64,
    /// The rank (1-based) in each ranked list it appeared in.
    pub ranks: BTreeMap<&'static str, usize>,
    /// Its own score in each list it appeared in: BM25 (`words`), the soft match (`soft`: the
    /// IDF-weighted sum of each query word's best cosine with a word of the record), the
    /// cosine of whole texts (`vectors`).
    pub scores: BTreeMap<&'static str, f64>,
    /// Each list's part of a fused `raw_score` (weight × standard score, or weight / (k +
    /// rank)); empty for one list.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub points: BTreeMap<&'static str, f64>,
    /// The share of the query's IDF weight its soft match covers (0 to 1), where computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soft_share: Option<f64>,
    /// Whether it shares a word with the query (after the tokenizer and stop words); a result
    /// that does not was kept by its closeness in meaning ([`relevance::Relevance`]).
    pub shares_word: bool,
    /// Its age in days at `now`.
    pub age_days: f64,
    /// The part of `decay` that comes from age (1 for kinds that do not decay).
    pub time_decay: f64,
    /// The part of `decay` that comes from being superseded, deprecated or stale (1 when not).
    pub stale_factor: f64,
    /// Where it ranked for the original query and for the LLM's rewrite, when recall fused
    /// the two ([`rewrite::merge`]); results are then in the order of its `fused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<rewrite::Ranks>,
    /// The factor its time earned by falling in the span the query names ("in May", "last
    /// week": [`when`]), when the query names one and it falls in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_match: Option<f64>,
    /// The factor it earned by being in the words of a person the query names ([`speaker`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speaker_match: Option<f64>,
    /// Of a MEMORY.md entry: the observations among the results it was promoted from, folded
    /// into it ([`sources::fold`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<sources::Source>,
    /// Of an observation a person rejected in review: the proposal (and the commit) that
    /// rejected it, as `--explain` names them (set by the caller, which reads the proposals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_by: Option<String>,
    /// How the score was made, for `--explain`.
    #[serde(skip)]
    pub basis: Basis,
    /// The decay rate per day that applied.
    #[serde(skip)]
    pub rate: f64,
}

/// How a result's score was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Basis {
    /// One ranked list: `raw × decay`.
    #[default]
    One,
    /// Lists fused by standard score: `raw + ln(decay)`.
    Standard,
    /// Lists fused by reciprocal rank: `raw × decay`.
    Rrf,
    /// No query: every record matched alike, ordered by decay.
    NoQuery,
}

/// Which ranked lists recall uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 alone.
    Words,
    /// Vector similarity alone.
    Vectors,
    /// Both, fused by standard score.
    Hybrid,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "words" => Ok(Mode::Words),
            "vectors" => Ok(Mode::Vectors),
            "hybrid" => Ok(Mode::Hybrid),
            other => Err(Error::bad_input(format!(
                "unknown mode `{other}`: use words, vectors or hybrid"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Words => "words",
            Mode::Vectors => "vectors",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// What to recall.
#[derive(Debug, Clone)]
pub struct Request {
    pub query: String,
    pub limit: usize,
    pub filter: Filter,
    pub now: DateTime<Utc>,
    pub mode: Mode,
}

/// Recalls for `request` from an up-to-date index.
pub fn recall(index: &Index, config: &Config, request: &Request) -> Result<Vec<Recalled>> {
    ranked(index, config, request, request.limit)
}

/// Recalls for `request`, with the query rewrite: `ask` (the LLM's answer within its budget)
/// runs on a second thread while the original query is searched; a rewrite it gives
/// ([`rewrite::Outcome::used`]) is searched the same way and the two rankings, each read to
/// [`lists::depth`] of the limit, are fused by rank ([`rewrite::merge`]). Any other outcome leaves
/// the original's ranking exactly as [`recall`] gives it.
pub fn recall_rewritten(
    index: &Index,
    config: &Config,
    request: &Request,
    ask: impl FnOnce() -> rewrite::Outcome + Send,
) -> Result<(Vec<Recalled>, rewrite::Outcome)> {
    let keep = depth(request.limit);
    let (original, outcome) = std::thread::scope(|s| {
        let asked = s.spawn(ask);
        let original = ranked(index, config, request, keep);
        let outcome = asked
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (original, outcome)
    });
    let mut original = original?;
    let Some(query) = outcome.used() else {
        // What `recall` gives: the lists are read as deep, and relevance keeps results in
        // order, so the first `limit` of the longer ranking are the same.
        original.truncate(request.limit);
        return Ok((original, outcome));
    };
    let asked = Request {
        query: query.to_string(),
        ..request.clone()
    };
    let rewritten = ranked(index, config, &asked, keep)?;
    Ok((rewrite::merge(original, rewritten, request.limit), outcome))
}

/// Recalls for `request`, its lists read as its limit says, keeping up to `keep` relevant
/// results (more than the limit when two rankings are to be fused).
fn ranked(index: &Index, config: &Config, request: &Request, keep: usize) -> Result<Vec<Recalled>> {
    let decay = Decay::from_config(&config.recall, request.now);
    let (query, filter, limit) = (&request.query, &request.filter, request.limit);
    if no_words(query) {
        return Ok(Vec::new());
    }
    // Without words there is nothing to compare by meaning: recall what matters most now.
    if query.trim().is_empty() {
        let words = index.search(query, filter, limit, Some(&decay))?;
        let mut out = fuse(
            vec![Ranked {
                name: "words",
                hits: words,
            }],
            &[1.0],
            Some(&decay),
            limit,
        );
        for r in &mut out {
            r.basis = Basis::NoQuery;
            r.scores.clear();
        }
        return Ok(out);
    }
    let (fused, soft_total) = fused_lists(index, config, request, &decay, keep)?;
    crate::output::phase("fused");
    let relevance = Relevance::new(index, query, soft_total, config);
    crate::output::phase("relevance ready");
    let lambda = config.recall.diversity;
    if lambda >= 1.0 {
        return Ok(relevance.keep(index, fused, keep));
    }
    // MMR picks `keep` of a deeper pool of relevant results.
    let pool = relevance.keep(index, fused, keep.max(depth(limit)));
    Ok(diversify(pool, lambda, keep))
}

/// `pool` (relevant results, best first) reordered by [`diverse::mmr`] with `lambda`, at most
/// `keep`; the vectors are the built-in model's of each result's text. Off by default
/// (`[recall] diversity = 1`); when on, [`standing`] (`cairn why --query`) still ranks in the
/// fused order.
fn diversify(pool: Vec<Recalled>, lambda: f64, keep: usize) -> Vec<Recalled> {
    use crate::embed::Embedder;
    let texts: Vec<&str> = pool.iter().map(|r| r.text.as_str()).collect();
    let vectors = crate::embed::Builtin::shared().embed(&texts);
    let scores: Vec<f64> = pool.iter().map(|r| r.score).collect();
    let order = diverse::mmr(&scores, &vectors, lambda, keep);
    let mut slots: Vec<Option<Recalled>> = pool.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Raises the results whose time falls in the span the query names ([`when::window`]) by
/// `[recall] time_boost`, as decay lowers them (`+ ln f` on a fused score, `× f` on one list's),
/// and sorts again. A query that names no span, or a boost of 1, leaves them as they are.
fn boost_time(results: &mut [Recalled], window: Option<when::Window>, boost: f64) {
    let Some(window) = window else { return };
    if boost <= 1.0 {
        return;
    }
    let slack = chrono::Duration::hours(TIME_SLACK_HOURS);
    let mut moved = false;
    for r in results.iter_mut() {
        let Ok(t) = DateTime::parse_from_rfc3339(&r.time) else {
            continue;
        };
        let t = t.with_timezone(&Utc);
        let f = when::factor(&window, t, boost, slack);
        if f > 1.0 {
            r.time_match = Some(f);
            r.score = match r.basis {
                Basis::Standard => r.score + f.ln(),
                _ => r.score * f,
            };
            moved = true;
        }
    }
    if moved {
        results.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    }
}

/// Raises the observations whose speaker the query names ([`speaker`]: a dialogue turn stored
/// as `Name: what they said`) by `[recall] speaker_boost`, `+ ln f` on hybrid's fused score as
/// [`boost_time`] raises a span's, and sorts again. Other kinds open with labels of their own
/// (a card's `asked:`), not speakers. One list's score (words, vectors, rank fusion) is left
/// as it is: there a factor is far stronger than on a standard score (×1.5 on BM25 took the
/// LoCoMo dev split's adversarial questions, which name the wrong person, 0.833 → 0.774).
fn boost_speaker(results: &mut [Recalled], query: &str, boost: f64) {
    if boost <= 1.0 || results.is_empty() {
        return;
    }
    let words = speaker::query_words(query);
    let mut moved = false;
    for r in results.iter_mut() {
        if r.basis == Basis::Standard
            && r.kind == Kind::Observation
            && speaker::named(&words, &r.text)
        {
            r.speaker_match = Some(boost);
            r.score += boost.ln();
            moved = true;
        }
    }
    if moved {
        results.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    }
}

/// How far outside the named span a record's time may fall and still match: records carry UTC
/// times and people name days in their own zone.
const TIME_SLACK_HOURS: i64 = 12;

/// Where one record stands for a query, as [`recall`] ranks it (`cairn why --query`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "standing", rename_all = "kebab-case")]
pub enum Standing {
    /// Among the relevant results: `rank` (from 1) of `relevant`; recalled when `rank <=
    /// limit`, the cap.
    Ranked {
        rank: usize,
        relevant: usize,
        limit: usize,
        result: Box<Recalled>,
    },
    /// Read by a list, at `position` of the `read` fused, but not relevant: no word in common
    /// with the query, and not close enough by meaning (`min_cosine`, `min_soft`).
    NotRelevant {
        position: usize,
        read: usize,
        min_cosine: f64,
        min_soft: f64,
        result: Box<Recalled>,
    },
    /// In none of the lists, each read to `depth` records.
    NotRead { depth: usize },
    /// The query has no word to match.
    NoWords,
}

/// Where the record `id` stands for `request` (a query with words): the same lists, fusion,
/// decay and relevance as [`recall`], with its rank among every relevant result rather than
/// only those inside the cap.
pub fn standing(index: &Index, config: &Config, request: &Request, id: &str) -> Result<Standing> {
    if no_words(&request.query) || request.query.trim().is_empty() {
        return Ok(Standing::NoWords);
    }
    let decay = Decay::from_config(&config.recall, request.now);
    let (fused, soft_total) = fused_lists(index, config, request, &decay, request.limit)?;
    let relevance = Relevance::new(index, &request.query, soft_total, config);
    let mut terms = index.terms();
    let read = fused.len();
    let mut relevant = 0;
    let mut found = None;
    for (i, mut r) in fused.into_iter().enumerate() {
        let kept = relevance.judge(&mut terms, &mut r);
        relevant += usize::from(kept);
        if r.id == id && found.is_none() {
            found = Some((i + 1, kept.then_some(relevant), r));
        }
    }
    Ok(match found {
        Some((_, Some(rank), r)) => Standing::Ranked {
            rank,
            relevant,
            limit: request.limit,
            result: Box::new(r),
        },
        Some((position, None, r)) => Standing::NotRelevant {
            position,
            read,
            min_cosine: relevance.min_cosine,
            min_soft: relevance.min_soft,
            result: Box::new(r),
        },
        None => Standing::NotRead {
            depth: match request.mode {
                Mode::Words => request.limit,
                _ => depth(request.limit),
            },
        },
    })
}

/// Plain ranked search: no decay, nothing counted; only relevant results, as [`recall`].
pub fn search(
    index: &Index,
    config: &Config,
    query: &str,
    filter: &Filter,
    limit: usize,
    mode: Mode,
) -> Result<Vec<Recalled>> {
    if no_words(query) {
        return Ok(Vec::new());
    }
    let words = || index.search(query, filter, depth(limit), None);
    let vectors =
        || index.search_vectors(query, filter, depth(limit), config.recall.min_similarity);
    let (ranked, soft_total) = match mode {
        Mode::Words => {
            let one = vec![Ranked {
                name: "words",
                hits: words()?,
            }];
            (fuse(one, &[1.0], None, usize::MAX), 0.0)
        }
        Mode::Vectors => {
            let one = vec![Ranked {
                name: "vectors",
                hits: vectors()?,
            }];
            (fuse(one, &[1.0], None, usize::MAX), 0.0)
        }
        Mode::Hybrid => {
            let (lists, soft_total) = hybrid(index, query, filter, depth(limit), config)?;
            crate::output::phase("lists joined");
            (
                fuse_hybrid(lists, &weights(config), config, None, usize::MAX)?,
                soft_total,
            )
        }
    };
    crate::output::phase("fused");
    let relevance = Relevance::new(index, query, soft_total, config);
    crate::output::phase("relevance ready");
    let kept = relevance.keep(index, ranked, limit);
    crate::output::phase("relevance kept");
    Ok(kept)
}

/// A result of `kind` for other modules' unit tests.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::index::Hit;

    pub fn recalled_of(kind: Kind) -> Recalled {
        let doc = crate::index::Doc {
            id: String::new(),
            kind,
            text: String::new(),
            title: String::new(),
            context: String::new(),
            time: chrono::Utc::now(),
            category: String::new(),
            verdict: "allow".into(),
            status: String::new(),
            session: String::new(),
            source: String::new(),
            file: String::new(),
        };
        let h = Hit {
            doc,
            raw: 1.0,
            decay: 1.0,
            score: 1.0,
        };
        to_recalled(h, BTreeMap::new(), BTreeMap::new(), None)
    }

    /// A hit on an observation whose id and text are `id`, scored `score` after `decay`.
    pub fn hit(id: &str, score: f64, decay: f64) -> Hit {
        let doc = crate::index::Doc {
            id: id.into(),
            kind: Kind::Observation,
            text: id.into(),
            title: String::new(),
            context: String::new(),
            time: chrono::Utc::now(),
            category: String::new(),
            verdict: "allow".into(),
            status: "active".into(),
            session: String::new(),
            source: String::new(),
            file: String::new(),
        };
        Hit {
            doc,
            raw: score / decay,
            decay,
            score,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_from_length_and_caller() {
        assert_eq!(auto("nfs", false), Profile::Lean);
        assert_eq!(auto("nfs", true), Profile::Balanced);
        assert_eq!(auto("", false), Profile::Balanced);
        assert_eq!(
            auto("why did the deploy of the worker fail last week", false),
            Profile::Balanced
        );
        assert_eq!(auto(&"word ".repeat(20), false), Profile::Deep);
    }
}
