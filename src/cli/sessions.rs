//! `cairn sessions ingest PATH… [--all] [--agent …]`: transcripts → turn cards and episodes.
//!
//! Incremental twice over. A checkpoint per transcript (`.cairn/sessions.json`: size, mtime,
//! the session file it renders to) makes an unchanged transcript cost one `stat`. A changed
//! one is parsed whole and rendered; its session file is then compared line by line
//! ([`cards::compare`]): new lines after the same lines are appended, so a growing session
//! adds only its new turns, and a transcript rewritten in its middle rewrites the file. The
//! checkpoints are derived: without them the comparison alone still writes nothing twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Ctx;
use crate::cards::{self, Change, Record};
use crate::error::{Error, Kind, Result};
use crate::output::{Report, Status};
use crate::redact::Redactor;
use crate::repo::Repo;
use crate::sessions::{self, Agent};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Read agent transcripts into turn cards and episodes (vault/sessions), incrementally
    Ingest(IngestArgs),
}

#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Transcript files, or folders searched for *.jsonl
    pub paths: Vec<PathBuf>,
    /// Also read the agents' default folders (~/.claude/projects, ~/.codex/sessions,
    /// ~/.pi/agent/sessions)
    #[arg(long)]
    pub all: bool,
    /// The transcripts' format: claude, codex, pi or auto (detected from the content)
    #[arg(long, default_value = "auto")]
    pub agent: String,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// Where the checkpoints live, relative to the repository root.
const CHECKPOINTS: &str = ".cairn/sessions.json";

/// What was known of a transcript after it was last ingested.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Checkpoint {
    size: u64,
    mtime_ns: i128,
    /// The session file it renders to, relative to the repository root.
    file: String,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Ingest(args) => ingest(ctx, args),
    }
}

/// The agents' default transcript folders under `home`.
pub fn default_folders(home: &Path) -> Vec<PathBuf> {
    vec![
        home.join(".claude/projects"),
        home.join(".codex/sessions"),
        home.join(".pi/agent/sessions"),
    ]
}

/// Every `*.jsonl` under `path` (or `path` itself), sorted.
fn transcripts_under(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path.display(), &e))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![path.to_path_buf()];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        let read = std::fs::read_dir(&dir).map_err(|e| Error::io(dir.display(), &e))?;
        for entry in read {
            let entry = entry.map_err(|e| Error::io(dir.display(), &e))?;
            let ty = entry
                .file_type()
                .map_err(|e| Error::io(entry.path().display(), &e))?;
            let p = entry.path();
            if ty.is_dir() {
                stack.push(p);
            } else if ty.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                found.push(p);
            }
        }
    }
    found.sort();
    out.extend(found);
    Ok(())
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

fn load_checkpoints(repo: &Repo) -> BTreeMap<String, Checkpoint> {
    crate::files::read_optional(&repo.path(CHECKPOINTS))
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// What ingesting one transcript did.
#[derive(Debug, Default)]
struct Outcome {
    cards: usize,
    episodes: usize,
    rewritten: bool,
    changed: Option<String>,
    checkpoint: Option<Checkpoint>,
}

/// The lines a session file holds now (none when it does not exist).
fn current_lines(path: &Path) -> Result<String> {
    Ok(crate::files::read_optional(path)?.unwrap_or_default())
}

fn ingest_one(
    ctx: &Ctx,
    repo: &Repo,
    bytes: &[u8],
    forced: Option<Agent>,
    fallback_session: &str,
    redactor: &Redactor,
    mtime: &str,
) -> std::result::Result<(Outcome, Vec<sessions::LineError>), String> {
    let transcript = sessions::parse(bytes, forced, fallback_session).map_err(|e| e.to_string())?;
    let records = cards::records(&transcript, redactor, mtime);
    let mut out = Outcome::default();
    let errors = transcript.errors.clone();
    if records.is_empty() {
        return Ok((out, errors));
    }
    let rel = cards::file_of(transcript.agent, &transcript.session);
    let path = repo.path(&rel);
    let new: Vec<String> = records.iter().map(cards::line).collect();
    let old_text = current_lines(&path).map_err(|e| e.to_string())?;
    let old: Vec<&str> = old_text.lines().filter(|l| !l.trim().is_empty()).collect();
    let count = |rs: &[Record]| {
        let cards = rs.iter().filter(|r| matches!(r, Record::Card(_))).count();
        (cards, rs.len() - cards)
    };
    let change = cards::compare(&old, &new);
    if change != Change::Same {
        ctx.begin_writes(repo, std::slice::from_ref(&rel))
            .map_err(|e| e.to_string())?;
    }
    match change {
        Change::Same => {}
        Change::Append(from) => {
            let mut buf = String::new();
            for l in &new[from..] {
                buf.push_str(l);
                buf.push('\n');
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            crate::files::append_lines(&path, buf.as_bytes(), &repo.recovered_dir())
                .map_err(|e| e.to_string())?;
            (out.cards, out.episodes) = count(&records[from..]);
            out.changed = Some(rel.clone());
        }
        Change::Rewrite => {
            let mut buf = String::new();
            for l in &new {
                buf.push_str(l);
                buf.push('\n');
            }
            crate::files::write_atomic(&path, buf.as_bytes()).map_err(|e| e.to_string())?;
            let old_ids: std::collections::HashSet<String> = old
                .iter()
                .filter_map(|l| serde_json::from_str::<Record>(l).ok())
                .map(|r| r.id().to_string())
                .collect();
            let fresh: Vec<Record> = records
                .iter()
                .filter(|r| !old_ids.contains(r.id()))
                .cloned()
                .collect();
            (out.cards, out.episodes) = count(&fresh);
            out.rewritten = true;
            out.changed = Some(rel.clone());
        }
    }
    out.checkpoint = Some(Checkpoint {
        size: 0,
        mtime_ns: 0,
        file: rel,
    });
    Ok((out, errors))
}

pub fn ingest(ctx: &Ctx, args: IngestArgs) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let forced = match args.agent.as_str() {
        "auto" => None,
        other => Some(other.parse::<Agent>().map_err(|_| {
            Error::bad_input(format!(
                "--agent {other:?} is not claude, codex, pi or auto"
            ))
        })?),
    };
    // Compiled only when a transcript has to be read: an unchanged set costs stats alone.
    let redactor_cell = std::cell::OnceCell::new();
    let redactor = || -> Result<&Redactor> {
        if redactor_cell.get().is_none() {
            let r = Redactor::configured(&repo.config.redact.patterns)
                .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
            let _ = redactor_cell.set(r);
        }
        Ok(redactor_cell.get().expect("just set"))
    };
    let mut files = Vec::new();
    for p in &args.paths {
        let p = if p.is_absolute() {
            p.clone()
        } else {
            ctx.cwd.join(p)
        };
        transcripts_under(&p, &mut files)?;
    }
    if args.all {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        for dir in default_folders(&home) {
            if dir.is_dir() {
                transcripts_under(&dir, &mut files)?;
            }
        }
    }
    if files.is_empty() {
        return Err(Error::bad_input("no transcripts to ingest").with_fix(
            "name transcript files or folders, or pass --all for the agents' default folders",
        ));
    }
    files.sort();
    files.dedup();

    let _lock = repo.lock()?;
    crate::repo::ignore_derived(&repo)?;
    let mut checkpoints = load_checkpoints(&repo);
    let before = checkpoints.clone();
    let bar = crate::output::progress(files.len() as u64, ctx.interactive, "ingesting");
    let (mut unchanged, mut read_bytes, mut cards_added, mut episodes_added, mut rewritten) =
        (0usize, 0u64, 0usize, 0usize, 0usize);
    let mut changed: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for file in &files {
        bar.inc(1);
        let key = file.to_string_lossy().into_owned();
        let meta = std::fs::metadata(file).map_err(|e| Error::io(file.display(), &e))?;
        let (size, mtime) = (meta.len(), mtime_ns(&meta));
        if let Some(cp) = checkpoints.get(&key)
            && cp.size == size
            && cp.mtime_ns == mtime
            && repo.path(&cp.file).exists()
        {
            unchanged += 1;
            continue;
        }
        let bytes = std::fs::read(file).map_err(|e| Error::io(file.display(), &e))?;
        read_bytes += bytes.len() as u64;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let modified = meta
            .modified()
            .map(chrono::DateTime::<chrono::Utc>::from)
            .unwrap_or(ctx.now);
        match ingest_one(
            ctx,
            &repo,
            &bytes,
            forced,
            &stem,
            redactor()?,
            &crate::time::format(modified),
        ) {
            Err(message) => warnings.push(format!("{}: skipped: {message}", file.display())),
            Ok((out, errors)) => {
                cards_added += out.cards;
                episodes_added += out.episodes;
                rewritten += usize::from(out.rewritten);
                if let Some(rel) = out.changed
                    && !changed.contains(&rel)
                {
                    changed.push(rel);
                }
                for e in &errors {
                    problems.push(format!("{}:{}: {}", file.display(), e.line, e.message));
                }
                // A transcript with bad lines is read again next time, so that they are
                // named again until fixed; its cards are the same, so nothing is written twice.
                match out.checkpoint {
                    Some(mut cp) if errors.is_empty() => {
                        cp.size = size;
                        cp.mtime_ns = mtime;
                        checkpoints.insert(key, cp);
                    }
                    _ => {
                        checkpoints.remove(&key);
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    super::failpoint("ingest-before-commit");
    let subject = format!(
        "sessions: ingest {cards_added} turns, {episodes_added} episodes from {} transcripts",
        changed.len()
    );
    let commit = ctx.commit_with_pending(&repo, &changed, &super::message(&subject, &[]))?;
    if checkpoints != before {
        let text = serde_json::to_string(&checkpoints).expect("checkpoints serialize");
        crate::files::write_atomic(&repo.path(CHECKPOINTS), text.as_bytes())?;
    }
    let metadata = json!({
        "transcripts": files.len(), "unchanged": unchanged, "bytes": read_bytes,
        "cards": cards_added, "episodes": episodes_added, "rewritten": rewritten, "errors": problems.len(),
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "sessions",
        "ingest",
        problems.is_empty(),
        started,
        metadata,
    ));
    for p in &problems {
        warnings.push(p.clone());
    }
    let human = format!(
        "ingested {} transcripts ({unchanged} unchanged): {cards_added} new turn cards, {episodes_added} episodes{}; {}",
        files.len(),
        if rewritten > 0 {
            format!(", {rewritten} sessions rewritten")
        } else {
            String::new()
        },
        ctx.short(&commit)
    );
    let data = json!({
        "transcripts": files.len(),
        "unchanged": unchanged,
        "bytes_read": read_bytes,
        "cards": cards_added,
        "episodes": episodes_added,
        "rewritten": rewritten,
        "files": changed,
        "errors": problems,
        "commit": commit,
    });
    let status = if problems.is_empty() {
        Status::Ok
    } else {
        Status::BadInput
    };
    Ok(Report::new("sessions-ingest", data, human)
        .warnings(warnings)
        .status(status))
}
