//! `cairn eval`: retrieval quality on public benchmark files, scored as `../shared/EVAL.md` says.
//!
//! Every conversation (LoCoMo) or question haystack (LongMemEval) gets a fresh knowledge
//! repository in a temporary folder, filled and queried through the code paths a user's
//! commands take: the turns are judged and appended as `cairn import observations --raw`
//! does (each turn's id in `source`), the index is built as on any read, and each question is
//! recalled as `cairn recall` does, at the time of the conversation's end. Nothing is committed.
//!
//! Each turn is stored with the turn before it in its session as its narrative
//! ([`Options::previous_turn`], `cairn eval` unless `--turn-alone`): cairn stores a fact with
//! its context (the built-in observer's narrative names the prompt the turn answered, the
//! LLM observer's narrates the segment, a turn card holds the prompt with its answer), and the
//! index searches an observation's narrative with its text; a turn alone measured a memory
//! cairn does not keep.

pub mod locomo;
pub mod longmemeval;
pub mod score;

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::index::{Filter, Index};
use crate::observe::write::Candidate;
use crate::recall::{self, Request};
use crate::repo::Repo;
use crate::store;

/// One memory to store: its text, time, and the benchmark's id for it.
#[derive(Debug, Clone)]
pub struct Memory {
    pub id: String,
    pub session: String,
    pub text: String,
    pub time: DateTime<Utc>,
}

/// A repository filled with memories, ready for questions.
pub struct Filled {
    _dir: tempfile::TempDir,
    repo: Repo,
    index: Index,
    mode: crate::recall::Mode,
    rewrite: Option<Rewrite>,
}

/// What an evaluation may change from the built-in defaults, to measure a choice.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The observations' decay rate per day (default: cairn.toml's default, 0.01).
    pub decay: Option<f64>,
    /// The ranked lists (default: cairn.toml's default, words).
    pub mode: Option<crate::recall::Mode>,
    /// Keep the previous turn of the same session as each memory's narrative (what `cairn
    /// eval` does unless `--turn-alone`).
    pub previous_turn: bool,
    /// How hybrid fuses its lists (default: cairn.toml's default, standard).
    pub fusion: Option<String>,
    /// The relevance floors for results that share no word with the question (default:
    /// cairn.toml's defaults).
    pub relevance_cosine: Option<f64>,
    pub relevance_soft: Option<f64>,
    /// `[recall] diversity` (MMR's λ; 1 is off) and `time_boost` (default: cairn.toml's).
    pub diversity: Option<f64>,
    pub time_boost: Option<f64>,
    /// `[recall] speaker_boost` (1 is off; default: cairn.toml's).
    pub speaker_boost: Option<f64>,
    /// `[recall] feedback_docs`: how many of the first round's best records feed a second
    /// (pseudo-relevance feedback; 0 is off; default: cairn.toml's).
    pub feedback_docs: Option<usize>,
    /// Rewrite each question through an LLM as `cairn recall` does at a rewriting profile.
    pub rewrite: Option<Rewrite>,
}

/// The query rewrite an evaluation measures: the provider of a knowledge repository's `[llm]`
/// (its client held to `rewrite_timeout_ms`) and the profile whose prompt is used.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub client: crate::provider::ChatClient,
    pub profile: crate::recall::Profile,
}

/// How many questions' rewrites ended each way.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Tally {
    pub used: usize,
    pub same: usize,
    pub timeout: usize,
    pub failed: usize,
    /// Tokens read and written by the rewrites, as the provider counts them.
    pub tokens_in: u64,
    pub tokens_out: u64,
}

impl Tally {
    pub fn add(&mut self, outcome: &recall::rewrite::Outcome) {
        use recall::rewrite::Status;
        match outcome.status {
            Status::Used => self.used += 1,
            Status::Same => self.same += 1,
            Status::Timeout => self.timeout += 1,
            Status::Failed => self.failed += 1,
            Status::Off => {}
        }
        self.tokens_in += outcome.tokens.0;
        self.tokens_out += outcome.tokens.1;
    }
}

/// Makes a fresh repository holding `memories`, indexed.
pub fn fill(memories: &[Memory], now: DateTime<Utc>, options: &Options) -> Result<Filled> {
    let dir = tempfile::Builder::new()
        .prefix("cairn-eval-")
        .tempdir()
        .map_err(|e| crate::error::Error::io("temporary folder", &e))?;
    crate::init::init(dir.path())?;
    let mut repo = Repo::open(
        dir.path()
            .canonicalize()
            .map_err(|e| crate::error::Error::io(dir.path().display(), &e))?,
    )?;
    if let Some(rate) = options.decay {
        repo.config.recall.decay.insert("observation".into(), rate);
    }
    if let Some(fusion) = &options.fusion {
        repo.config.recall.fusion = fusion.clone();
    }
    if let Some(floor) = options.relevance_cosine {
        repo.config.recall.relevance_cosine = floor;
    }
    if let Some(floor) = options.relevance_soft {
        repo.config.recall.relevance_soft = floor;
    }
    if let Some(lambda) = options.diversity {
        repo.config.recall.diversity = lambda;
    }
    if let Some(boost) = options.time_boost {
        repo.config.recall.time_boost = boost;
    }
    if let Some(boost) = options.speaker_boost {
        repo.config.recall.speaker_boost = boost;
    }
    if let Some(docs) = options.feedback_docs {
        repo.config.recall.feedback_docs = docs;
    }
    let mut lines = Vec::with_capacity(memories.len());
    for (i, m) in memories.iter().enumerate() {
        let narrative = (options.previous_turn && i > 0 && memories[i - 1].session == m.session)
            .then(|| memories[i - 1].text.clone());
        let c = Candidate {
            narrative,
            observation: m.text.clone(),
            timestamp: Some(crate::time::format(m.time)),
            session_id: Some(m.session.clone()),
            source: Some(m.id.clone()),
            ..Candidate::default()
        };
        let judged =
            crate::observe::write::judge(&c, true, "eval", repo.config.gate.min_chars, now);
        if let Some(obs) = judged.observation {
            lines.push(serde_json::to_string(&obs).expect("observation serializes"));
        }
    }
    store::append(&repo, &lines, now)?;
    let index = Index::open(&repo)?;
    let mode = match options.mode {
        Some(m) => m,
        None => crate::recall::Mode::parse(&repo.config.recall.mode)?,
    };
    Ok(Filled {
        _dir: dir,
        repo,
        index,
        mode,
        rewrite: options.rewrite.clone(),
    })
}

impl Filled {
    /// The benchmark ids of the top `limit` memories recalled for `question` at `now`.
    pub fn ask(&self, question: &str, limit: usize, now: DateTime<Utc>) -> Result<Vec<String>> {
        Ok(self.ask_rewritten(question, limit, now, true)?.0)
    }

    /// Whether questions are rewritten.
    pub fn rewrites(&self) -> bool {
        self.rewrite.is_some()
    }

    /// As [`Filled::ask`], with what became of the question's rewrite when one was asked for
    /// (`rewrite` false: the question as written, for a baseline on the same index).
    pub fn ask_rewritten(
        &self,
        question: &str,
        limit: usize,
        now: DateTime<Utc>,
        rewrite: bool,
    ) -> Result<(Vec<String>, Option<recall::rewrite::Outcome>)> {
        let filter = Filter {
            include_hold: true,
            ..Filter::default()
        };
        let request = Request {
            query: question.to_string(),
            limit,
            filter,
            now,
            mode: self.mode,
        };
        let (results, outcome) = match &self.rewrite {
            Some(rw) if rewrite => {
                let (results, outcome) =
                    recall::recall_rewritten(&self.index, &self.repo.config, &request, || {
                        recall::rewrite::ask(&rw.client, question, rw.profile)
                    })?;
                (results, Some(outcome))
            }
            _ => (
                recall::recall(&self.index, &self.repo.config, &request)?,
                None,
            ),
        };
        Ok((results.into_iter().map(|r| r.source).collect(), outcome))
    }
}

/// Reads a benchmark file.
pub fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).map_err(|e| crate::error::Error::io(path.display(), &e))?;
    serde_json::from_str(&text).map_err(|e| {
        crate::error::Error::bad_input(format!(
            "{}:{}: not valid JSON: {e}",
            path.display(),
            e.line()
        ))
    })
}
