//! `cairn observe [SESSION…|--all] [--observer auto|builtin|llm]`: turns not yet observed →
//! observations, through the observer, the write gate, the category and dedup.
//!
//! Which turns were observed is written beside the observations, as `observed` events naming
//! the card and the hash of its line, in the same append and after the facts. So observing the
//! same turns again writes nothing; a run killed before its append wrote nothing; a run killed
//! after it is finished by the next, whose facts (the built-in observer is deterministic) are
//! found stored by id, or merged already (merge events name the id they absorbed).
//!
//! With the LLM observer, every batch is asked and parsed before anything is written: one
//! malformed or partial reply fails the run, records the failure in telemetry, and writes
//! nothing.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::cards::{self, Card, Record};
use crate::error::{Error, Kind, Result};
use crate::observe::write::Candidate;
use crate::observe::{builtin, category, llm};
use crate::output::{Next, Report};
use crate::provider::ask::ask;
use crate::provider::chat::ChatClient;
use crate::redact::Redactor;
use crate::repo::Repo;
use crate::store;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sessions to observe: a session id, AGENT/ID, or a session file under vault/sessions
    pub sessions: Vec<String>,
    /// Observe every ingested session
    #[arg(long)]
    pub all: bool,
    /// builtin (offline, from the cards alone), llm (the [llm] provider), or auto (llm when one
    /// is configured)
    #[arg(long, default_value = "auto")]
    pub observer: String,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Cards per LLM request.
const BATCH: usize = 20;
/// Output tokens allowed per LLM request.
const MAX_TOKENS: u32 = 4096;
/// Below this keyword confidence a category is ambiguous (and asked of the LLM, if any).
const AMBIGUOUS: f64 = 0.5;

/// A session's file and its cards, in order, with each card's line hash.
struct Session {
    rel: String,
    cards: Vec<Card>,
    hashes: Vec<String>,
}

/// Every session file, relative to the root, sorted.
pub fn session_files(repo: &Repo) -> Result<Vec<String>> {
    let root = repo.path(cards::DIR);
    let mut out = Vec::new();
    let agents = match crate::files::read_dir_real(&root) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(root.display(), &e)),
    };
    for agent in agents {
        let agent = agent.map_err(|e| Error::io(root.display(), &e))?;
        if !agent.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let name = agent.file_name().to_string_lossy().into_owned();
        let read = crate::files::read_dir_real(&agent.path())
            .map_err(|e| Error::io(agent.path().display(), &e))?;
        for f in read {
            let f = f.map_err(|e| Error::io(agent.path().display(), &e))?;
            let file = f.file_name().to_string_lossy().into_owned();
            if file.ends_with(".jsonl") {
                out.push(format!("{}/{name}/{file}", cards::DIR));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn load_session(repo: &Repo, rel: &str) -> Result<Session> {
    let path = repo.path(rel);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
    let mut s = Session {
        rel: rel.to_string(),
        cards: Vec::new(),
        hashes: Vec::new(),
    };
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    for (i, line) in text[..complete].lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(line).map_err(|e| {
            Error::bad_input(format!("{rel}:{}: not a turn card or episode: {e}", i + 1))
                .with_fix("ingest the transcript again, or fix that line by hand")
        })?;
        if let Record::Card(c) = record {
            s.cards.push(c);
            s.hashes.push(crate::index::hash(line.as_bytes()));
        }
    }
    Ok(s)
}

fn matches(rel: &str, wanted: &str) -> bool {
    let wanted = wanted.trim_end_matches(".jsonl");
    let rel = rel.trim_end_matches(".jsonl");
    rel == wanted || rel.ends_with(&format!("/{wanted}"))
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    if args.sessions.is_empty() && !args.all {
        return Err(Error::bad_input("no sessions named")
            .with_fix("name sessions (`cairn observe SESSION`) or pass --all"));
    }
    if !matches!(args.observer.as_str(), "builtin" | "auto" | "llm") {
        return Err(Error::bad_input(format!(
            "--observer {:?} is not builtin, llm or auto",
            args.observer
        )));
    }
    let mut warnings = Vec::new();
    // The chat client, if [llm] names a provider: the observer with --observer llm or auto,
    // and the judge of ambiguous categories with either observer.
    let client = match ChatClient::from_config(&repo.config.llm) {
        Ok(client) => client,
        Err(e) if args.observer == "builtin" => {
            warnings.push(format!("[llm] not used for categories: {e}"));
            None
        }
        Err(e) => return Err(provider_error(e)),
    };
    if client.is_none() && args.observer == "llm" {
        return Err(
            Error::new(Kind::Config, "--observer llm, but [llm] names no provider")
                .with_fix("set [llm] provider, base_url and model in cairn.toml"),
        );
    }
    let llm_observes = client.is_some() && args.observer != "builtin";
    let observer = if llm_observes { "llm" } else { builtin::NAME };
    let redactor = Redactor::configured(&repo.config.redact.patterns)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;

    let files = session_files(&repo)?;
    let mut chosen: Vec<String> = Vec::new();
    if args.all {
        chosen = files.clone();
    } else {
        for want in &args.sessions {
            let found: Vec<&String> = files.iter().filter(|f| matches(f, want)).collect();
            if found.is_empty() {
                return Err(Error::new(Kind::NotFound, format!("no ingested session {want:?}"))
                    .with_fix("run `cairn sessions ingest PATH` first; sessions are in vault/sessions/AGENT/ID.jsonl"));
            }
            chosen.extend(found.into_iter().cloned());
        }
        chosen.sort();
        chosen.dedup();
    }

    let _lock = repo.lock()?;
    // One read of the store: what was observed, and the ids admitting checks against.
    let store::Known {
        ids: mut seen,
        observed,
    } = store::known(&repo)?;
    let mut sessions = Vec::new();
    let mut targets: Vec<Vec<usize>> = Vec::new();
    for rel in &chosen {
        let s = load_session(&repo, rel)?;
        let t: Vec<usize> = (0..s.cards.len())
            .filter(|&i| observed.get(&s.cards[i].id) != Some(&s.hashes[i]))
            .collect();
        sessions.push(s);
        targets.push(t);
    }
    let turns: usize = targets.iter().map(Vec::len).sum();

    // The observer: candidates for every target turn, before anything is written.
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut tokens = (0u64, 0u64);
    let mut calls = 0u64;
    for (s, t) in sessions.iter().zip(&targets) {
        if t.is_empty() {
            continue;
        }
        match client.as_ref().filter(|_| llm_observes) {
            None => candidates.extend(builtin::observe(&s.cards, t)),
            Some(client) => {
                for batch in t.chunks(BATCH) {
                    let result = observe_llm(client, &s.cards, batch);
                    match result {
                        Ok((found, usage, n)) => {
                            candidates.extend(found);
                            tokens.0 += usage.0;
                            tokens.1 += usage.1;
                            calls += n;
                        }
                        Err(message) => {
                            let meta = json!({
                                "observer": observer, "turns": turns, "error": message,
                                "tokens_in": tokens.0, "tokens_out": tokens.1, "calls": calls,
                            });
                            if let Some(w) = crate::telemetry::emit(
                                &repo, ctx.now, "observe", "run", false, started, meta,
                            ) {
                                crate::output::notice(&w);
                            }
                            return Err(Error::bad_input(format!("{}: {message}", s.rel))
                                .with_fix(
                                    "nothing was written; run again, or use --observer builtin",
                                ));
                        }
                    }
                }
            }
        }
    }
    let extracted = candidates.len();
    for c in &mut candidates {
        c.observation = redactor.redact(&c.observation).into_owned();
        if let Some(n) = &c.narrative {
            c.narrative = Some(redactor.redact(n).into_owned());
        }
        // Category: keywords first; the LLM only when they are ambiguous and one is configured.
        if c.category_id.is_none() {
            let choice = category::classify(&c.observation);
            if choice.confidence < AMBIGUOUS
                && let Some(client) = &client
                && let Ok((id, usage)) = ask_category(client, &c.observation)
            {
                tokens.0 += usage.0;
                tokens.1 += usage.1;
                calls += 1;
                c.category_id = Some(id);
                c.category_confidence = Some(0.7);
            }
        }
    }

    let index = if candidates.is_empty() {
        None
    } else {
        let index = crate::index::Index::open(&repo)?;
        warnings.extend(index.refresh.warnings.clone());
        Some(index)
    };
    let settings = crate::observe::admit::Settings {
        raw: false,
        default_source: "observe",
        min_chars: repo.config.gate.min_chars,
        threshold: repo.config.gate.dedup_threshold,
        now: ctx.now,
    };
    let admitted = crate::observe::admit::admit(
        &candidates,
        &settings,
        &mut seen,
        index.as_ref(),
        &mut || {},
    )?;
    let mut lines = admitted.lines.clone();
    let ts = crate::time::format(ctx.now);
    for (s, t) in sessions.iter().zip(&targets) {
        for &i in t {
            let e = store::Event {
                op: store::Op::Observed,
                id: s.cards[i].id.clone(),
                ts: ts.clone(),
                timestamp: None,
                by: Some(observer.to_string()),
                from: None,
                hash: Some(s.hashes[i].clone()),
                count: None,
            };
            lines.push(serde_json::to_string(&e).expect("event serializes"));
        }
    }
    let subject = format!(
        "observe: {} from {} ({observer})",
        crate::output::count(admitted.kept.len(), "observation"),
        crate::output::count(turns, "turn")
    );
    let trailers: Vec<(&str, String)> = admitted
        .kept
        .iter()
        .take(20)
        .map(|o| ("Cairn-Observation", o.id.clone()))
        .collect();
    let message = super::message(&subject, &trailers);
    let work = super::Work::rerun("observe", "");
    let mut path = None;
    if !lines.is_empty() {
        let file = store::current_file(&repo, ctx.now);
        ctx.begin_writes(&repo, &work, &[file], Some(&message))?;
        let (rel, _) = store::append(&repo, &lines, ctx.now)?;
        super::failpoint("observe-after-append");
        path = Some(rel);
    }
    let written: Vec<crate::git::Change> = path
        .iter()
        .map(|rel| crate::git::Change::appended_lines(rel, &lines))
        .collect();
    let commit = ctx.commit_changes_with_pending(&repo, &work, &written, &message)?;
    let counts = json!({
        "observer": observer,
        "sessions": sessions.len(),
        "turns": turns,
        "extracted": extracted,
        "allowed": admitted.allowed,
        "held": admitted.held,
        "discarded": admitted.discarded,
        "deduped": admitted.merged,
        "duplicates": admitted.duplicates,
        "tokens_in": tokens.0,
        "tokens_out": tokens.1,
        "calls": calls,
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "observe",
        "run",
        true,
        started,
        counts.clone(),
    ));
    let human = if turns == 0 {
        "nothing new to observe".to_string()
    } else {
        let mut h = format!(
            "observed {} of {} ({observer}): {}, {} allowed, {} held, {} discarded, {} merged by meaning, {} already stored; {}",
            crate::output::count(turns, "turn"),
            crate::output::count(sessions.len(), "session"),
            crate::output::count(extracted, "fact"),
            admitted.allowed,
            admitted.held,
            admitted.discarded,
            admitted.merged,
            admitted.duplicates,
            ctx.short(&commit)
        );
        if calls > 0 {
            h.push_str(&format!(
                "\n{}, {} in, {} out",
                crate::output::count(calls, "LLM call"),
                crate::output::count(tokens.0, "token"),
                crate::output::count(tokens.1, "token")
            ));
        }
        h
    };
    let stored: Vec<&store::Observation> = admitted.kept.iter().collect();
    let data = json!({ "counts": counts, "observations": stored, "path": path, "commit": commit });
    Ok(Report::new("observe", data, human)
        .warnings(warnings)
        .next(Next::new("cairn recall", "see what is recalled now")))
}

fn provider_error(e: crate::provider::Error) -> Error {
    let fix = e.fix();
    let err = Error::new(Kind::Config, e.to_string());
    match fix {
        Some(f) => err.with_fix(f),
        None => err,
    }
}

/// What one LLM batch gave: candidates, (tokens in, tokens out), calls made.
type Batch = (Vec<Candidate>, (u64, u64), u64);

/// Asks the LLM about the cards at `batch`.
fn observe_llm(
    client: &ChatClient,
    cards: &[Card],
    batch: &[usize],
) -> std::result::Result<Batch, String> {
    let turns: Vec<llm::PromptTurn> = batch
        .iter()
        .map(|&i| llm::PromptTurn {
            id: cards[i].id.clone(),
            text: cards[i].text(),
        })
        .collect();
    let (system, user) = llm::prompt(&turns);
    let known: Vec<&str> = turns.iter().map(|t| t.id.as_str()).collect();
    let (observed, usage) = ask(client, &system, &user, MAX_TOKENS, |text| {
        llm::parse(text, &known)
    })
    .map_err(|e| e.message(""))?;
    let usage = (usage.input_tokens, usage.output_tokens);
    let by_id: HashMap<&str, &Card> = batch
        .iter()
        .map(|&i| (cards[i].id.as_str(), &cards[i]))
        .collect();
    let mut out = Vec::new();
    for segment in &observed.segments {
        for fact in &segment.facts {
            let card = by_id.get(fact.turn.as_str()).copied();
            out.push(Candidate {
                observation: fact.text.clone(),
                timestamp: card.map(|c| c.ts.clone()),
                session_id: card.map(|c| format!("{}/{}", c.agent, c.session)),
                source: Some(fact.turn.clone()),
                category_id: Some(fact.category.clone()),
                category_confidence: Some(fact.confidence),
                write_verdict: Some(fact.gate.as_str().to_string()),
                priority: Some(fact.priority.as_str().to_string()),
                observation_type: Some("fact".into()),
                narrative: Some(segment.narrative.clone()),
                write_confidence: Some(fact.confidence),
                ..Candidate::default()
            });
        }
    }
    Ok((out, usage, 1))
}

fn ask_category(
    client: &ChatClient,
    text: &str,
) -> std::result::Result<(String, (u64, u64)), String> {
    let (system, user) = llm::category_prompt(text);
    let reply = client
        .complete(&system, &user, 20)
        .map_err(|e| e.to_string())?;
    let id = llm::parse_category(&reply.text).map_err(|e| e.message)?;
    Ok((id, (reply.usage.input_tokens, reply.usage.output_tokens)))
}
