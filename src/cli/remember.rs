//! `cairn remember TEXT` and `cairn import observations FILE`.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::observe::gate::Verdict;
use crate::observe::write::{self, Candidate};
use crate::output::{self, Next, Report, Status};
use crate::store;

#[derive(Debug, clap::Args)]
pub struct RememberArgs {
    /// The observation, in a sentence or two (at most 4000 characters)
    pub text: String,
    /// Its category (preferences, rules-conventions, system-architecture, operations,
    /// memory-system, projects, people-relationships) [default: chosen by keywords]
    #[arg(long)]
    pub category: Option<String>,
    /// When it was observed [default: now]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// The agent session it came from
    #[arg(long, env = "CAIRN_SESSION")]
    pub session: Option<String>,
    /// Where it came from (kept, and returned by recall)
    #[arg(long, default_value = "cli")]
    pub source: String,
    /// high, medium or low
    #[arg(long, default_value = "medium")]
    pub priority: String,
    /// Store it but recall it only when asked (`--include-hold`)
    #[arg(long)]
    pub hold: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum ImportCommand {
    /// JSON Lines of observations (at least `observation`; optional `timestamp`, `session_id`,
    /// `source`, `category_id`, `write_verdict`, `priority`, `narrative`)
    Observations {
        file: PathBuf,
        /// Skip the write gate and keep every record as given (for backfills and benchmarks)
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        commit: super::CommitArgs,
    },
}

pub fn remember(ctx: &Ctx, args: RememberArgs) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let at = args
        .at
        .as_deref()
        .map(|t| crate::time::parse(t, ctx.now))
        .transpose()
        .map_err(Error::bad_input)?;
    let text = crate::redact::redact_one(&repo.config.redact.patterns, &args.text)
        .map_err(|e| {
            Error::new(
                crate::error::Kind::Config,
                format!("cairn.toml [redact]: {e}"),
            )
        })?
        .into_owned();
    let candidate = Candidate {
        observation: text,
        timestamp: at.map(crate::time::format),
        session_id: args.session,
        source: Some(args.source),
        category_id: args.category,
        write_verdict: Some(if args.hold { "hold" } else { "allow" }.into()),
        priority: Some(args.priority),
        ..Candidate::default()
    };
    write::validate_as(&candidate, false, &write::REMEMBER_FIELDS).map_err(Error::bad_input)?;
    let _lock = repo.lock()?;
    let judged = write::judge(
        &candidate,
        false,
        "cli",
        repo.config.gate.min_chars,
        ctx.now,
    );
    let duplicate = judged.observation.is_some() && store::contains(&repo, &judged.id)?;
    // The same text remembered again is a rerun: it finishes what a killed run left.
    let work = super::Work::rerun("remember", judged.id.clone());
    let commit;
    let mut path = None;
    let mut merged = None;
    let mut warnings = Vec::new();
    if let (Some(obs), false) = (&judged.observation, duplicate) {
        // Dedup by meaning against what is stored (the index is brought up to date first).
        let at = chrono::DateTime::parse_from_rfc3339(&obs.timestamp)
            .map_or(ctx.now, |t| t.with_timezone(&chrono::Utc));
        let index = crate::index::Index::open(&repo)?;
        warnings.extend(index.refresh.warnings.clone());
        merged = crate::observe::dedup::nearest(
            &index,
            &obs.observation,
            repo.config.gate.dedup_threshold,
            at,
        )?;
        let (line, subject, trailer) = match &merged {
            Some(m) => (
                crate::observe::dedup::merge_event(m, &obs.id, ctx.now),
                format!("remember: merged into {} ({:.2})", m.into, m.similarity),
                m.into.clone(),
            ),
            None => (
                serde_json::to_string(obs).expect("observation serializes"),
                format!("remember: {}", summary(&obs.observation)),
                obs.id.clone(),
            ),
        };
        let lines = [line];
        // Noted first: a kill before the commit leaves the line to the next writer's commit.
        let msg = super::message(&subject, &[("Cairn-Observation", trailer)]);
        ctx.begin_writes(
            &repo,
            &work,
            &[store::current_file(&repo, ctx.now)],
            Some(&msg),
        )?;
        let (rel, _) = store::append(&repo, &lines, ctx.now)?;
        super::failpoint("remember-after-append");
        let change = crate::git::Change::appended_lines(&rel, &lines);
        commit = ctx.commit_changes_with_pending(&repo, &work, &[change], &msg)?;
        path = Some(rel);
    } else {
        commit = ctx.commit_changes_with_pending(&repo, &work, &[], "")?;
    }
    let inserted = !duplicate && merged.is_none();
    let counts = json!({
        "allowed": u8::from(judged.verdict == Verdict::Allow && inserted),
        "held": u8::from(judged.verdict == Verdict::Hold && inserted),
        "discarded": u8::from(judged.verdict == Verdict::Discard),
        "duplicates": u8::from(duplicate),
        "deduped": u8::from(merged.is_some()),
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "gate",
        "remember",
        true,
        started,
        counts.clone(),
    ));
    let stored = judged.observation.is_some() && inserted;
    let human = if judged.verdict == Verdict::Discard {
        format!(
            "not stored: the write gate discarded it ({})",
            judged.reason
        )
    } else if let Some(m) = &merged {
        format!(
            "merged into {} (similarity {:.2}; {})",
            m.into,
            m.similarity,
            ctx.short(&commit)
        )
    } else if duplicate {
        format!("already stored as {}; nothing changed", judged.id)
    } else {
        format!(
            "remembered {} ({}, {})",
            judged.id,
            judged.verdict.as_str(),
            ctx.short(&commit)
        )
    };
    let data = json!({
        "id": judged.id,
        "stored": stored,
        "duplicate": duplicate,
        "merged": merged,
        "verdict": judged.verdict.as_str(),
        "reason": judged.reason,
        "observation": judged.observation,
        "path": path,
        "commit": commit,
    });
    let status = if judged.verdict == Verdict::Discard {
        Status::NothingOrFailed
    } else {
        Status::Ok
    };
    Ok(Report::new("remember", data, human)
        .warnings(warnings)
        .status(status))
}

fn summary(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        format!("{}…", one_line.chars().take(60).collect::<String>())
    } else {
        one_line
    }
}

/// Above this many records an import dedups by id only (comparing each with every other by
/// meaning grows with the square of the count).
const DEDUP_LIMIT: usize = 5000;

/// The records an import holds at once: a batch goes through the gate and dedup, is appended,
/// and is dropped before the next is read. With dedup by meaning (at most [`DEDUP_LIMIT`]
/// records in all) the import is one batch, as dedup within it needs every record.
const BATCH_RECORDS: usize = DEDUP_LIMIT;
/// … and at most this many bytes of lines in a batch, without dedup by meaning.
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// `cairn import observations FILE`, streamed (ADR 53): a first pass reads and checks every
/// line, holding one at a time, so a bad line exits 2 with nothing written; a second pass
/// admits the records in batches and appends them to today's observations file, going on in
/// the day's next part each time one reaches [`store::PART_BYTES`], with a commit per part.
/// Memory is bounded by a batch, a part and the ids already stored, whatever the file's size.
pub fn import(ctx: &Ctx, cmd: ImportCommand) -> Result<Report> {
    let ImportCommand::Observations { file, raw, .. } = cmd;
    let started = Instant::now();
    let repo = ctx.repo()?;
    let file = if file.is_absolute() {
        file
    } else {
        ctx.cwd.join(file)
    };
    let redactor =
        crate::redact::Redactor::configured(&repo.config.redact.patterns).map_err(|e| {
            Error::new(
                crate::error::Kind::Config,
                format!("cairn.toml [redact]: {e}"),
            )
        })?;
    // Every line read and checked before anything is written: on a thread of its own, while
    // this one judges the lines into the spool (ADR 143).
    let checking = Checking::start(ImportReader::open(&file, raw, None)?)?;
    let stamp = checking.stamp;
    // Dedup by meaning needs the count first: wait for it while it is small.
    let (mut checking, mut total) = match checking.done_within(DEDUP_LIMIT as u64) {
        true => (None, Some(checking.finish()?)),
        false => (Some(checking), None),
    };
    output::phase("import: started");
    let source = format!("import:{}", super::file_name(&file));
    let _lock = repo.lock()?;
    let mut reader = ImportReader::open(&file, raw, Some(&redactor))?;
    reader.same_as(stamp)?;
    let mut seen = store::ids(&repo)?;
    if let Some(total) = total {
        seen.reserve(usize::try_from(total).unwrap_or(usize::MAX));
    }
    let bar = output::progress(total.unwrap_or(0), ctx.interactive, "importing");
    let mut warnings = Vec::new();
    // Dedup by meaning (not with --raw): against what is stored and what this import keeps.
    let mut index = None;
    match total {
        Some(t) if !raw && t <= DEDUP_LIMIT as u64 => {
            let opened = crate::index::Index::open(&repo)?;
            warnings.extend(opened.refresh.warnings.clone());
            index = Some(opened);
        }
        // A check that ended before it was waited for past the limit.
        Some(t) if !raw => warnings.push(dedup_skipped(t)),
        _ => {}
    }
    let settings = crate::observe::admit::Settings {
        raw,
        default_source: &source,
        min_chars: repo.config.gate.min_chars,
        threshold: repo.config.gate.dedup_threshold,
        now: ctx.now,
    };
    let mut parts = Parts::new(ctx, &repo, super::file_name(&file));
    parts.held = total.is_none();
    let (mut allowed, mut held, mut discarded, mut duplicates, mut merged) = (0, 0, 0, 0, 0);
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    loop {
        let next = reader.next()?;
        let end = next.is_none();
        if let Some((candidate, bytes)) = next {
            batch.push(candidate);
            batch_bytes += bytes;
        }
        let full = batch.len() >= BATCH_RECORDS || (index.is_none() && batch_bytes >= BATCH_BYTES);
        if batch.is_empty() || !(end || full) {
            if end {
                break;
            }
            continue;
        }
        let admitted = crate::observe::admit::admit(
            &batch,
            &settings,
            &mut seen,
            index.as_ref(),
            &mut || bar.inc(1),
        )?;
        batch.clear();
        batch_bytes = 0;
        allowed += admitted.allowed;
        held += admitted.held;
        discarded += admitted.discarded;
        duplicates += admitted.duplicates;
        merged += admitted.merged;
        parts.write(&admitted.lines)?;
        if let Some(check) = checking.take_if(|c| c.handle.is_finished()) {
            checked(check, &mut total, &mut seen, &bar, &mut warnings, raw)?;
            parts.release()?;
        }
        if end {
            break;
        }
    }
    if let Some(check) = checking.take() {
        checked(check, &mut total, &mut seen, &bar, &mut warnings, raw)?;
        parts.release()?;
    }
    bar.finish_and_clear();
    let total = total.unwrap_or_default();
    let work = parts.work.clone();
    let (path, commits, stored) = parts.finish()?;
    let commit = match commits.last() {
        Some(c) => c.clone(),
        None => ctx.commit_changes_with_pending(&repo, &work, &[], "")?,
    };
    let commit_ids: Vec<&str> = commits.iter().flatten().map(|c| c.id.as_str()).collect();
    let counts = json!({
        "read": total, "stored": stored, "allowed": allowed, "held": held,
        "discarded": discarded, "duplicates": duplicates, "deduped": merged, "raw": raw,
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "gate",
        "import",
        true,
        started,
        counts.clone(),
    ));
    let human = format!(
        "imported {} of {} ({allowed} allowed, {held} held, {discarded} discarded, {}, {merged} merged by meaning; {})",
        stored,
        output::count(total, "observation"),
        output::count(duplicates, "duplicate"),
        ctx.short(&commit)
    );
    let data = json!({ "counts": counts, "path": path, "commit": commit, "commits": commit_ids });
    Ok(Report::new("import_observations", data, human)
        .warnings(warnings)
        .next(Next::new("cairn recall", "see what is recalled now")))
}

/// The first pass of an import, on a thread of its own: every line read and checked, one at a
/// time, before anything is written; the number of records so far, and in all.
struct Checking {
    counted: std::sync::Arc<std::sync::atomic::AtomicU64>,
    handle: std::thread::JoinHandle<Result<u64>>,
    /// The file's size and time of change when the check opened it.
    stamp: Stamp,
}

impl Checking {
    fn start(mut reader: ImportReader<'static>) -> Result<Checking> {
        use std::sync::atomic::Ordering;
        let counted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stamp = reader.stamp;
        let count = counted.clone();
        let handle = std::thread::Builder::new()
            .name("import-check".into())
            .spawn(move || {
                let mut n = 0;
                while reader.next()?.is_some() {
                    n += 1;
                    count.store(n, Ordering::Relaxed);
                }
                // Refused if the file changed while it was read.
                reader.unchanged()?;
                Ok(n)
            })
            .map_err(|e| Error::io("a thread to check the import's lines", &e))?;
        Ok(Checking {
            counted,
            handle,
            stamp,
        })
    }

    /// Waits until the check is done (true) or has counted more than `count` records (false).
    fn done_within(&self, count: u64) -> bool {
        use std::sync::atomic::Ordering;
        while !self.handle.is_finished() {
            if self.counted.load(Ordering::Relaxed) > count {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        true
    }

    /// The number of records, or the first bad line.
    fn finish(self) -> Result<u64> {
        match self.handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// What the check found, once it is done: the count where it was not known yet (and the
/// warning that dedup by meaning was skipped), or the first bad line.
fn checked(
    check: Checking,
    total: &mut Option<u64>,
    seen: &mut store::Ids,
    bar: &indicatif::ProgressBar,
    warnings: &mut Vec<String>,
    raw: bool,
) -> Result<()> {
    let count = check.finish()?;
    output::phase("import: checked");
    if total.is_none() {
        seen.reserve(usize::try_from(count).unwrap_or(usize::MAX));
        bar.set_length(count);
        if !raw {
            warnings.push(dedup_skipped(count));
        }
    }
    *total = Some(count);
    Ok(())
}

/// The warning of an import of `count` records, too many to dedup by meaning.
fn dedup_skipped(count: u64) -> String {
    format!(
        "dedup by meaning skipped: {count} records (more than {DEDUP_LIMIT}); ids still dedup exactly"
    )
}

/// A file's size and time of change.
type Stamp = (u64, Option<std::time::SystemTime>);

/// The lines of an import file, read one at a time (at most
/// [`write::MAX_IMPORT_LINE_BYTES`] of a line held), each checked and redacted.
struct ImportReader<'a> {
    lines: crate::sessions::Lines<std::io::BufReader<std::fs::File>>,
    name: String,
    raw: bool,
    /// What redacts the records (`None`: the check, which reads the text as given).
    redactor: Option<&'a crate::redact::Redactor>,
    /// The file's size and time of change when opened: a file changed while it is imported is
    /// refused before anything is written.
    stamp: Stamp,
}

impl<'a> ImportReader<'a> {
    fn open(
        file: &std::path::Path,
        raw: bool,
        redactor: Option<&'a crate::redact::Redactor>,
    ) -> Result<Self> {
        let opened = std::fs::File::open(file).map_err(|e| Error::io(file.display(), &e))?;
        let meta = opened
            .metadata()
            .map_err(|e| Error::io(file.display(), &e))?;
        if meta.is_dir() {
            return Err(Error::bad_input(format!(
                "{} is a folder, not a JSON Lines file",
                file.display()
            )));
        }
        Ok(ImportReader {
            lines: crate::sessions::Lines::new(
                std::io::BufReader::with_capacity(256 * 1024, opened),
                write::MAX_IMPORT_LINE_BYTES,
            ),
            name: file.display().to_string(),
            raw,
            redactor,
            stamp: (meta.len(), meta.modified().ok()),
        })
    }

    /// Refused if the file is not as it was when the other pass opened it (`stamp`).
    fn same_as(&self, stamp: Stamp) -> Result<()> {
        if self.stamp != stamp {
            return Err(self.changed());
        }
        Ok(())
    }

    /// Refused if the file changed since it was opened.
    fn unchanged(&self) -> Result<()> {
        let meta = std::fs::metadata(&self.name).map_err(|e| Error::io(&self.name, &e))?;
        self.same_as((meta.len(), meta.modified().ok()))
    }

    fn changed(&self) -> Error {
        Error::bad_input(format!(
            "{} changed while it was being imported; nothing was written",
            self.name
        ))
        .with_fix("import it again once nothing writes to it")
    }

    /// The next record and its line's length, `None` at the end; a bad line is the error,
    /// `FILE:LINE: what is wrong`. Redacted with `redact` (the first pass only checks: a
    /// redaction cannot fail, and the check is of the text as given).
    fn next(&mut self) -> Result<Option<(Candidate, usize)>> {
        let redactor = self.redactor;
        loop {
            let Some(line) = self
                .lines
                .next_line()
                .map_err(|e| Error::io(&self.name, &e))?
            else {
                return Ok(None);
            };
            let at = || format!("{}:{}", self.name, line.number);
            if let Some(len) = line.over {
                return Err(Error::bad_input(write::over_line(&at(), len)));
            }
            let text = std::str::from_utf8(line.text)
                .map_err(|_| Error::bad_input(format!("{}: not UTF-8 text", at())))?;
            let text = if line.number == 1 {
                crate::jsonl::strip_bom(text)
            } else {
                text
            };
            let len = text.len();
            if let Some(c) = write::read_line(text, self.raw, redactor)
                .map_err(|m| Error::bad_input(format!("{}: {m}", at())))?
            {
                return Ok(Some((c, len)));
            }
        }
    }
}

/// Where an import's lines go: today's observations file, then its next parts as each fills
/// ([`store::PART_BYTES`]), each part committed with what this import appended to it, read
/// back from the file ([`crate::git::Change::Tail`]): the lines are not held once written.
///
/// A full part's blob is written on a helper thread ([`crate::git::prepare_tail`]) while the
/// import goes on judging lines; those wait in a spool (an unnamed temporary file, so memory
/// stays bounded) until the full part is committed, and only then go to the next part. The
/// order of the writes a rerun depends on is unchanged: a part is committed before the next
/// is noted and written (ADR 143).
struct Parts<'a> {
    ctx: &'a Ctx,
    repo: &'a crate::repo::Repo,
    file_name: String,
    /// The part being written: its path, number and size.
    part: Option<(String, u32, u64)>,
    /// This import's lines in the part being written.
    filled: Filled,
    /// The observations stored in all (merge events are lines too, not observations).
    stored: u64,
    first_path: Option<String>,
    commits: Vec<Option<crate::git::Committed>>,
    next_part: u32,
    work: super::Work,
    /// The full part whose blob a helper thread is writing.
    preparing: Option<Preparing>,
    /// The lines judged meanwhile, for the next part.
    spool: Option<Spool>,
    /// While the check of the file's lines goes on, every line waits in the spool.
    held: bool,
}

/// This import's lines in one part: the byte they begin at, their bytes, their count and how
/// many of them are merge events.
#[derive(Default)]
struct Filled {
    from: u64,
    bytes: u64,
    lines: u64,
    merged: u64,
}

/// A full part waiting for its blob.
struct Preparing {
    rel: String,
    filled: Filled,
    blob: std::thread::JoinHandle<Result<crate::git::PreparedTail>>,
}

/// Lines waiting for the next part, and their bytes.
struct Spool {
    file: std::io::BufWriter<std::fs::File>,
    bytes: u64,
}

/// The most bytes of lines read back from the spool and written at once.
const SPOOL_CHUNK_BYTES: usize = 4 * 1024 * 1024;

impl<'a> Parts<'a> {
    fn new(ctx: &'a Ctx, repo: &'a crate::repo::Repo, file_name: String) -> Self {
        Parts {
            work: super::Work::rerun("import observations", file_name.clone()),
            ctx,
            repo,
            file_name,
            part: None,
            filled: Filled::default(),
            stored: 0,
            first_path: None,
            commits: Vec::new(),
            next_part: 1,
            preparing: None,
            spool: None,
            held: false,
        }
    }

    /// The file's lines are all checked: the spool's lines go to the parts.
    fn release(&mut self) -> Result<()> {
        self.held = false;
        match self.preparing {
            Some(_) => Ok(()),
            None => self.drain(),
        }
    }

    /// Writes `lines`: to the spool while a full part's blob is being written (unless the
    /// spool would outgrow a part), else to the part being written.
    fn write<L: AsRef<str>>(&mut self, lines: &[L]) -> Result<()> {
        if self.held {
            return self.spool(lines);
        }
        // Settling writes the spool, which may fill the next part: these lines follow them.
        while let Some(preparing) = &self.preparing {
            let spooled = self.spool.as_ref().map_or(0, |s| s.bytes);
            let more: u64 = lines.iter().map(|l| l.as_ref().len() as u64 + 1).sum();
            if !preparing.blob.is_finished() && spooled + more <= store::part_bytes() {
                return self.spool(lines);
            }
            self.settle()?;
        }
        self.append(lines)
    }

    /// Appends `lines` to the part being written, filling it to [`store::part_bytes`] (at
    /// least a line each) and going on in the next part. A part that fills is committed once
    /// its blob is written on a helper thread; the lines left go to the spool meanwhile.
    fn append<L: AsRef<str>>(&mut self, lines: &[L]) -> Result<()> {
        let cap = store::part_bytes();
        let mut rest = lines;
        while !rest.is_empty() {
            let fresh = self.part.is_none();
            let (rel, n, size) = match self.part.take() {
                Some(part) => part,
                None => {
                    if !self.commits.is_empty() {
                        super::failpoint("import-next-part");
                    }
                    let part = store::part_with_room(self.repo, self.ctx.now, self.next_part)?;
                    // Noted first: a kill before the commit leaves the lines to the next
                    // writer's commit, and the import run again finds their ids and skips them.
                    self.ctx.begin_writes(
                        self.repo,
                        &self.work,
                        std::slice::from_ref(&part.0),
                        None,
                    )?;
                    part
                }
            };
            let (mut take, mut bytes) = (0, 0u64);
            for line in rest {
                let b = line.as_ref().len() as u64 + 1;
                if take > 0 && size + bytes + b > cap {
                    break;
                }
                take += 1;
                bytes += b;
            }
            let (chunk, after) = rest.split_at(take);
            rest = after;
            // Merge events are lines too, not observations (an event is serialized op first).
            let events = chunk
                .iter()
                .filter(|l| l.as_ref().starts_with("{\"op\":"))
                .count() as u64;
            // The part's commit message with this chunk in it, noted before the chunk is
            // written: a rerun that finds the lines stored commits them under it.
            let count = self.filled.lines + take as u64 - self.filled.merged - events;
            let message = super::message(&self.subject(count, &rel), &[]);
            self.ctx.note_message(self.repo, &message)?;
            store::append_to(self.repo, &rel, chunk, fresh)?;
            super::failpoint("import-after-append");
            if fresh {
                // Where this import's lines begin: after what the part held (its torn tail,
                // if any, cut by the append).
                let path = self.repo.path(&rel);
                let len = std::fs::metadata(&path)
                    .map_err(|e| Error::io(path.display(), &e))?
                    .len();
                self.filled.from = len.saturating_sub(bytes);
                self.filled.bytes = 0;
            }
            self.stored += take as u64 - events;
            self.filled.merged += events;
            self.filled.lines += take as u64;
            self.filled.bytes += bytes;
            self.first_path.get_or_insert_with(|| rel.clone());
            if size + bytes < cap {
                self.part = Some((rel, n, size + bytes));
                continue;
            }
            self.next_part = n + 1;
            let filled = std::mem::take(&mut self.filled);
            if self.ctx.committing(self.repo) {
                let (root, path) = (self.repo.root().to_path_buf(), rel.clone());
                let (from, len) = (filled.from, filled.bytes);
                let blob = std::thread::Builder::new()
                    .name("import-blob".into())
                    .spawn(move || {
                        crate::failpoint::pausepoint("import-blob");
                        crate::git::prepare_tail(&root, &path, from, len)
                    })
                    .map_err(|e| Error::io("a thread to write a part's blob", &e))?;
                self.preparing = Some(Preparing { rel, filled, blob });
                return self.spool(rest);
            }
            self.commit(&rel, filled, None)?;
        }
        Ok(())
    }

    /// Keeps `lines` in the spool until the full part is committed.
    fn spool<L: AsRef<str>>(&mut self, lines: &[L]) -> Result<()> {
        use std::io::Write as _;
        if lines.is_empty() {
            return Ok(());
        }
        let spool = match &mut self.spool {
            Some(spool) => spool,
            None => {
                let file = tempfile::tempfile()
                    .map_err(|e| Error::io(std::env::temp_dir().display(), &e))?;
                self.spool.insert(Spool {
                    file: std::io::BufWriter::with_capacity(256 * 1024, file),
                    bytes: 0,
                })
            }
        };
        let io = |e: std::io::Error| Error::io("the import's spool", &e);
        for line in lines {
            let line = line.as_ref();
            spool.file.write_all(line.as_bytes()).map_err(io)?;
            spool.file.write_all(b"\n").map_err(io)?;
            spool.bytes += line.len() as u64 + 1;
        }
        super::failpoint("import-spooled");
        Ok(())
    }

    /// Commits the full part once its blob is written, then writes the spool's lines.
    fn settle(&mut self) -> Result<()> {
        let Some(Preparing { rel, filled, blob }) = self.preparing.take() else {
            return Ok(());
        };
        // A blob that could not be prepared is written by the commit itself, which names
        // what is wrong if it still cannot.
        let prepared = blob.join().ok().and_then(|r| r.ok());
        self.commit(&rel, filled, prepared)?;
        self.drain()
    }

    /// Writes the spool's lines, in order: a part that fills meanwhile sends what follows to a
    /// new spool, written before the rest of this one.
    fn drain(&mut self) -> Result<()> {
        use std::io::{BufRead as _, Seek as _};
        let Some(spool) = self.spool.take() else {
            return Ok(());
        };
        let io = |e: std::io::Error| Error::io("the import's spool", &e);
        let mut file = spool.file.into_inner().map_err(|e| io(e.into_error()))?;
        file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
        // Read back a block of whole lines at a time, each line a slice of the block.
        let mut block = Vec::with_capacity(SPOOL_CHUNK_BYTES);
        let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
        loop {
            block.clear();
            while block.len() < SPOOL_CHUNK_BYTES {
                if reader.read_until(b'\n', &mut block).map_err(io)? == 0 {
                    break;
                }
            }
            if block.is_empty() {
                return Ok(());
            }
            // The spool holds only lines this import wrote: whole, UTF-8, one per newline.
            let text = std::str::from_utf8(&block)
                .map_err(|_| io(std::io::ErrorKind::InvalidData.into()))?;
            let lines: Vec<&str> = text
                .strip_suffix('\n')
                .unwrap_or(text)
                .split('\n')
                .collect();
            self.write(&lines)?;
        }
    }

    /// Commits what this import appended to the part `rel`, with its blob if `prepared`.
    fn commit(
        &mut self,
        rel: &str,
        filled: Filled,
        prepared: Option<crate::git::PreparedTail>,
    ) -> Result<()> {
        let count = filled.lines - filled.merged;
        let subject = self.subject(count, rel);
        output::phase("import: part written");
        let commit = self.ctx.commit_changes_with_pending(
            self.repo,
            &self.work,
            &[crate::git::Change::Tail {
                path: rel.to_string(),
                from: filled.from,
                len: filled.bytes,
                prepared,
            }],
            &super::message(&subject, &[]),
        )?;
        self.commits.push(commit);
        output::phase("import: part committed");
        Ok(())
    }

    /// The subject of the commit of `count` observations in the part `rel`.
    fn subject(&self, count: u64, rel: &str) -> String {
        if self.commits.is_empty() {
            format!(
                "import: {} from {}",
                output::count(count, "observation"),
                self.file_name
            )
        } else {
            format!(
                "import: {} from {} ({})",
                output::count(count, "more observation"),
                self.file_name,
                rel.rsplit('/').next().unwrap_or(rel)
            )
        }
    }

    /// Commits the last parts; the first path written, every commit made and the number of
    /// observations stored.
    #[allow(clippy::type_complexity)]
    fn finish(mut self) -> Result<(Option<String>, Vec<Option<crate::git::Committed>>, u64)> {
        // Settling a part writes the spool, which may fill another part and spool again.
        loop {
            if self.preparing.is_some() {
                self.settle()?;
            } else if self.spool.is_some() {
                self.drain()?;
            } else {
                break;
            }
        }
        if let Some((rel, ..)) = self.part.take() {
            let filled = std::mem::take(&mut self.filled);
            self.commit(&rel, filled, None)?;
        }
        Ok((self.first_path, self.commits, self.stored))
    }
}
