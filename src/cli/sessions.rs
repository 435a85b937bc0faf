//! `cairn sessions ingest PATH… [--all] [--agent …]`: transcripts → turn cards and episodes.
//!
//! Incremental twice over. A checkpoint per transcript path (`.cairn/sessions.json`: its size
//! and mtime, the session file it renders to and that file's size and mtime after the run)
//! makes an unchanged transcript cost two `stat`s; when either changed (another path to the
//! same session wrote the file, say) the transcript is read again. A changed one is parsed
//! a line at a time and rendered to a staging file as its turns close (never held whole); its
//! session file is then compared with it line by line ([`cards::compare`]):
//! new lines after the same lines are appended, so a growing session adds only its new turns,
//! a transcript rewritten in its middle rewrites the file, and one that renders to less than
//! the file holds (an older backup, a cut copy) writes nothing and is named in a warning: a
//! session never loses a card, so no observation loses the card it cites. The checkpoints are
//! derived: without them the comparison alone still writes nothing twice.
//!
//! Folders are searched for `*.jsonl`, never inside the knowledge repository itself (nor any
//! `.git` or `.cairn`). A file that is not a transcript, or a transcript without a turn, is
//! skipped and reported so, with a warning when it held something (tool calls or answers but
//! no prompt: a format this version does not read). Bad lines are warnings naming file and
//! line, and the rest is ingested (exit 0); a file named on the command line with nothing
//! readable in it exits 2.

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

/// Every ingest continues a killed one (`.cairn/pending.json`).
const INGEST: super::Work = super::Work::any_rerun("sessions ingest");
use crate::files::mtime_ns;
use crate::repo::Repo;
use crate::sessions::{self, Agent};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Read agent transcripts into turn cards and episodes (vault/sessions), incrementally
    Ingest(IngestArgs),
}

#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Transcript files, or folders searched for *.jsonl (never inside the knowledge
    /// repository, .git or .cairn)
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
    /// The session file it renders to, relative to the repository root; none for a
    /// transcript without turns.
    file: Option<String>,
    /// The session file's size and mtime when the run that read the transcript ended.
    file_size: u64,
    file_mtime_ns: i128,
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

/// A transcript to read, and whether the user named it (rather than a folder holding it).
struct Found {
    path: PathBuf,
    named: bool,
}

/// The folders of the knowledge repository a search never enters.
struct Fence {
    /// The repository's root, canonical.
    root: PathBuf,
}

impl Fence {
    /// Whether the search started at `start` (canonical) skips the folder `dir`: a `.git` or
    /// `.cairn` anywhere; the repository itself when the search started outside it; and its own
    /// record folders (`slog`, `vault`) when it started inside.
    fn skips(&self, start: &Path, dir: &Path) -> bool {
        if dir
            .file_name()
            .is_some_and(|n| n == ".git" || n == ".cairn")
        {
            return true;
        }
        if start.starts_with(&self.root) {
            ["slog", "vault"].iter().any(|d| dir == self.root.join(d))
        } else {
            dir == self.root
        }
    }
}

/// `path` itself when it is a file (named by the user), else every `*.jsonl` under it, sorted.
fn transcripts_under(path: &Path, fence: &Fence, out: &mut Vec<Found>) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path.display(), &e))?;
    if meta.is_file() {
        out.push(Found {
            path: path.to_path_buf(),
            named: true,
        });
        return Ok(());
    }
    let start = std::fs::canonicalize(path).map_err(|e| Error::io(path.display(), &e))?;
    if fence.skips(&start, &start) && start != fence.root {
        return Ok(());
    }
    let mut stack = vec![start.clone()];
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
                if !fence.skips(&start, &p) {
                    stack.push(p);
                }
            } else if ty.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                found.push(p);
            }
        }
    }
    found.sort();
    out.extend(found.into_iter().map(|path| Found { path, named: false }));
    Ok(())
}

/// A file's size and mtime, or `None` when it does not exist.
fn stat(path: &Path) -> Option<(u64, i128)> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), mtime_ns(&m)))
}

fn load_checkpoints(repo: &Repo) -> BTreeMap<String, Checkpoint> {
    // Checkpoints of an older shape do not parse: every transcript is then read again once.
    crate::files::read_optional(&repo.path(CHECKPOINTS))
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Each transcript path ingested, with the session file (relative to the root) it renders
/// to, as the checkpoints know them (`cairn why` says where a card came from).
pub(crate) fn transcripts(repo: &Repo) -> BTreeMap<String, String> {
    load_checkpoints(repo)
        .into_iter()
        .filter_map(|(path, c)| c.file.map(|f| (path, f)))
        .collect()
}

/// What ingesting one transcript did.
#[derive(Debug)]
enum Outcome {
    /// Its records were compared with its session file (and written when they differed).
    Ingested {
        cards: usize,
        episodes: usize,
        rewritten: bool,
        /// The session file, relative to the root.
        file: String,
        /// Whether it was written.
        changed: bool,
    },
    /// It renders to less than its session file holds: nothing written.
    Behind {
        file: String,
        session: String,
        cards: usize,
        renders: usize,
    },
    /// A transcript without a turn or an episode. `unattributed`: tool calls and answers
    /// read outside any turn.
    Empty { unattributed: usize },
}

/// Why a file was not ingested, when nothing in it could be read.
struct Unreadable(String);

/// Compares the session file at `old` (none yet when missing) with a staged rendering.
fn compare_files(old: &Path, staged: &std::fs::File) -> std::io::Result<Change> {
    use std::io::{BufReader, Seek, SeekFrom};
    let mut new = BufReader::with_capacity(256 * 1024, staged.try_clone()?);
    new.seek(SeekFrom::Start(0))?;
    match std::fs::File::open(old) {
        Ok(f) => cards::compare(Some(BufReader::with_capacity(256 * 1024, f)), new),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            cards::compare(None::<BufReader<std::fs::File>>, new)
        }
        Err(e) => Err(e),
    }
}

/// Transcripts larger than this show their bytes read on the progress bar.
const PROGRESS_BYTES: u64 = 8 * 1024 * 1024;

/// The longest transcript line read: [`sessions::MAX_LINE_BYTES`], or for tests only the
/// number of bytes in `CAIRN_MAX_TRANSCRIPT_LINE` (so a test of the cap needs no huge file).
fn max_line() -> usize {
    std::env::var("CAIRN_MAX_TRANSCRIPT_LINE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(sessions::MAX_LINE_BYTES)
}

/// A transcript being read, its bytes read shown on the ingest bar (a big one's reading takes
/// a while); a second pass over it counts again from its start.
struct Shown<R> {
    inner: R,
    bar: indicatif::ProgressBar,
    name: String,
    size: u64,
    at: u64,
    shown: u64,
}

impl<R> Shown<R> {
    fn show(&mut self) {
        if self.size >= PROGRESS_BYTES && self.at.abs_diff(self.shown) >= PROGRESS_BYTES / 2 {
            self.shown = self.at;
            self.bar.set_message(format!(
                "ingesting {}: {} of {}",
                self.name,
                indicatif::HumanBytes(self.at),
                indicatif::HumanBytes(self.size)
            ));
        }
    }
}

impl<R: std::io::Read> std::io::Read for Shown<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
        self.show();
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Shown<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.at = self.inner.seek(pos)?;
        self.show();
        Ok(self.at)
    }
}

/// The records of a transcript as they are read, written to a staging file (`vault/sessions/`,
/// named for `cairn doctor` to remove if a kill leaves it): a session's rendering is never
/// held whole. Notes what it took for the session, working folder and first time, so that a
/// rendering made before a later line named them is made again.
struct Staged<'a> {
    render: cards::Render<'a>,
    first_ts: String,
    redactor: &'a Redactor,
    forgotten: &'a std::collections::HashSet<String>,
    fallback_session: &'a str,
    out: std::io::BufWriter<tempfile::NamedTempFile>,
    /// The session id and working folder each record was made with, when all were the same.
    session: Option<String>,
    cwd: Option<Option<String>>,
    /// Whether two records were made with different ones.
    mixed: bool,
    records: usize,
}

impl<'a> Staged<'a> {
    fn new(
        repo: &Repo,
        redactor: &'a Redactor,
        first_ts: String,
        forgotten: &'a std::collections::HashSet<String>,
        fallback_session: &'a str,
    ) -> Result<Self> {
        let tmp = crate::files::staging(&repo.path(cards::DIR))?;
        Ok(Staged {
            render: cards::Render::new(redactor, first_ts.clone()),
            first_ts,
            redactor,
            forgotten,
            fallback_session,
            out: std::io::BufWriter::with_capacity(256 * 1024, tmp),
            session: None,
            cwd: None,
            mixed: false,
            records: 0,
        })
    }

    fn note(&mut self, session: &str, cwd: Option<Option<&str>>) {
        match &self.session {
            None => self.session = Some(session.to_string()),
            Some(s) if s != session => self.mixed = true,
            Some(_) => {}
        }
        if let Some(cwd) = cwd {
            match &self.cwd {
                None => self.cwd = Some(cwd.map(str::to_string)),
                Some(c) if c.as_deref() != cwd => self.mixed = true,
                Some(_) => {}
            }
        }
    }

    fn write(&mut self, record: &Record) -> std::io::Result<()> {
        use std::io::Write;
        if self.forgotten.contains(record.id()) {
            // A card or episode forgotten (`cairn forget`) is not made again from its transcript.
            return Ok(());
        }
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")?;
        self.records += 1;
        Ok(())
    }

    /// Whether what the read found differs from what the records were made with.
    fn stale(&self, summary: &sessions::Summary, first_known: bool) -> bool {
        self.mixed
            || self.session.as_ref().is_some_and(|s| *s != summary.session)
            || self
                .cwd
                .as_ref()
                .is_some_and(|c| c.as_deref() != summary.cwd.as_deref())
            || (self.render.took_first && !first_known && summary.earliest.is_some())
    }
}

impl sessions::Sink for Staged<'_> {
    fn turn(&mut self, at: &sessions::Context<'_>, turn: sessions::Turn) -> std::io::Result<()> {
        let session = at.session.unwrap_or(self.fallback_session);
        self.note(session, Some(at.cwd));
        let card = self.render.card(at.agent, session, at.cwd, &turn);
        self.write(&Record::Card(card))
    }

    fn episode(
        &mut self,
        at: &sessions::Context<'_>,
        episode: sessions::Episode,
    ) -> std::io::Result<()> {
        let session = at.session.unwrap_or(self.fallback_session);
        self.note(session, None);
        let record = self.render.episode(at.agent, session, &episode);
        self.write(&Record::Episode(record))
    }

    fn restart(&mut self) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        self.out.flush()?;
        let file = self.out.get_mut().as_file_mut();
        file.set_len(0)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        self.render = cards::Render::new(self.redactor, self.first_ts.clone());
        (self.session, self.cwd, self.mixed, self.records) = (None, None, false, 0);
        Ok(())
    }
}

/// A transcript read into its session's staged rendering.
struct Rendered {
    staged: tempfile::NamedTempFile,
    summary: sessions::Summary,
}

/// Reads the transcript at `file` (`size` bytes), streamed (a line at a time, so any size),
/// into a staging file of its records. A rendering made before a later line named the
/// session, its folder or an earlier time is made again with them known: a second read.
#[allow(clippy::too_many_arguments)]
fn render_transcript(
    repo: &Repo,
    file: &Path,
    size: u64,
    bar: &indicatif::ProgressBar,
    forced: Option<Agent>,
    fallback_session: &str,
    redactor: &Redactor,
    mtime: &str,
    forgotten: &std::collections::HashSet<String>,
) -> Result<std::result::Result<Rendered, Unreadable>> {
    let (mut preset, mut first_ts) = (sessions::Preset::default(), None::<String>);
    loop {
        let opened = std::fs::File::open(file).map_err(|e| Error::io(file.display(), &e))?;
        let shown = Shown {
            inner: opened,
            bar: bar.clone(),
            name: file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            size,
            at: 0,
            shown: 0,
        };
        let input = std::io::BufReader::with_capacity(256 * 1024, shown);
        let first_known = first_ts.is_some();
        let mut staged = Staged::new(
            repo,
            redactor,
            first_ts.clone().unwrap_or_else(|| mtime.to_string()),
            forgotten,
            fallback_session,
        )?;
        let read = sessions::stream(
            input,
            forced,
            fallback_session,
            max_line(),
            preset.clone(),
            &mut staged,
        );
        if size >= PROGRESS_BYTES {
            bar.set_message("ingesting");
        }
        let summary = match read {
            Ok(summary) => summary,
            Err(sessions::Error::Read(e)) => return Err(Error::io(file.display(), &e)),
            Err(e) => return Ok(Err(Unreadable(format!("not a transcript: {e}")))),
        };
        if staged.stale(&summary, first_known) && !first_known {
            preset = sessions::Preset {
                session: Some(summary.session.clone()),
                cwd: summary.cwd.clone(),
            };
            first_ts = Some(
                summary
                    .earliest
                    .map(crate::time::format)
                    .unwrap_or_else(|| mtime.to_string()),
            );
            continue;
        }
        let staged_file = staged
            .out
            .into_inner()
            .map_err(|e| Error::io(file.display(), e.error()))?;
        return Ok(Ok(Rendered {
            staged: staged_file,
            summary,
        }));
    }
}

/// Appends the staged lines from byte `from` to `path`, in whole lines a few MiB at a time: a
/// kill between two leaves whole lines, and the next ingest appends the rest.
fn append_staged(path: &Path, staged: &std::fs::File, from: u64, repo: &Repo) -> Result<()> {
    use std::io::{BufRead, BufReader, Seek, SeekFrom};
    const CHUNK: usize = 8 * 1024 * 1024;
    let io = |e: std::io::Error| Error::io(path.display(), &e);
    let mut new = BufReader::with_capacity(256 * 1024, staged.try_clone().map_err(io)?);
    new.seek(SeekFrom::Start(from)).map_err(io)?;
    let (mut buf, mut line, mut first) = (Vec::new(), Vec::new(), true);
    loop {
        line.clear();
        let n = new.read_until(b'\n', &mut line).map_err(io)?;
        if n > 0 {
            buf.extend_from_slice(&line);
        }
        if (n == 0 && !buf.is_empty()) || buf.len() >= CHUNK {
            if first {
                crate::files::append_lines(path, &buf, &repo.recovered_dir())?;
            } else {
                crate::files::append_more(path, &buf, &repo.recovered_dir())?;
            }
            first = false;
            buf.clear();
        }
        if n == 0 {
            return Ok(());
        }
    }
}

fn ingest_one(
    ctx: &Ctx,
    repo: &Repo,
    rendered: Rendered,
) -> std::result::Result<(Outcome, sessions::Summary), Unreadable> {
    let Rendered { staged, summary } = rendered;
    if summary.turns == 0 && summary.episodes == 0 {
        if let Some(first) = summary.errors.first() {
            return Err(Unreadable(format!(
                "nothing readable: {} bad lines (line {}: {})",
                summary.bad_lines, first.line, first.message
            )));
        }
        let unattributed = summary.unattributed;
        return Ok((Outcome::Empty { unattributed }, summary));
    }
    let rel = cards::file_of(summary.agent, &summary.session);
    let path = repo.path(&rel);
    let fail = |e: String| Unreadable(format!("cannot write {rel}: {e}"));
    let plan = compare_files(&path, staged.as_file()).map_err(|e| fail(e.to_string()))?;
    if matches!(plan, Change::Append { .. } | Change::Rewrite { .. }) {
        ctx.begin_writes(repo, &INGEST, std::slice::from_ref(&rel), None)
            .map_err(|e| fail(e.to_string()))?;
    }
    let outcome = match plan {
        Change::Same => Outcome::Ingested {
            cards: 0,
            episodes: 0,
            rewritten: false,
            file: rel,
            changed: false,
        },
        Change::Behind { cards, renders } => Outcome::Behind {
            file: rel,
            session: summary.session.clone(),
            cards,
            renders,
        },
        Change::Append {
            from,
            cards,
            episodes,
        } => {
            if from == 0 && !path.exists() {
                // A new session: its rendering is the file.
                crate::files::install(staged, &path).map_err(|e| fail(e.to_string()))?;
            } else {
                append_staged(&path, staged.as_file(), from, repo)
                    .map_err(|e| fail(e.to_string()))?;
            }
            Outcome::Ingested {
                cards,
                episodes,
                rewritten: false,
                file: rel,
                changed: true,
            }
        }
        Change::Rewrite { cards, episodes } => {
            crate::files::install(staged, &path).map_err(|e| fail(e.to_string()))?;
            Outcome::Ingested {
                cards,
                episodes,
                rewritten: true,
                file: rel,
                changed: true,
            }
        }
    };
    Ok((outcome, summary))
}

pub fn ingest(ctx: &Ctx, args: IngestArgs) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    // The staging files of a killed ingest (a transcript's cards, up to its size).
    crate::files::sweep_dead_temps(&repo.path(cards::DIR), true)?;
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
    let fence = Fence {
        root: std::fs::canonicalize(repo.root()).unwrap_or_else(|_| repo.root().to_path_buf()),
    };
    let mut files = Vec::new();
    for p in &args.paths {
        let p = if p.is_absolute() {
            p.clone()
        } else {
            ctx.cwd.join(p)
        };
        transcripts_under(&p, &fence, &mut files)?;
    }
    if args.all {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        for dir in default_folders(&home) {
            if dir.is_dir() {
                transcripts_under(&dir, &fence, &mut files)?;
            }
        }
    }
    if files.is_empty() && !args.all {
        return Err(Error::bad_input("no transcripts to ingest").with_fix(
            "name transcript files or folders, or pass --all for the agents' default folders",
        ));
    }
    // A file both named and found in a named folder counts as named.
    files.sort_by(|a, b| a.path.cmp(&b.path).then(b.named.cmp(&a.named)));
    files.dedup_by(|a, b| a.path == b.path);

    let _lock = repo.lock()?;
    crate::repo::ignore_derived(&repo)?;
    let mut checkpoints = load_checkpoints(&repo);
    let forgotten = crate::forget::tombstones(&repo)?;
    let before = checkpoints.clone();
    let bar = crate::output::progress(files.len() as u64, ctx.interactive, "ingesting");
    let (mut unchanged, mut read_bytes, mut cards_added, mut episodes_added, mut rewritten) =
        (0usize, 0u64, 0usize, 0usize, 0usize);
    let mut changed: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    let mut skipped: Vec<serde_json::Value> = Vec::new();
    let mut behind: Vec<serde_json::Value> = Vec::new();
    let mut unreadable_named = Vec::new();
    // Checkpoints made by this run: their session file's stat is taken after every write.
    let mut made: Vec<String> = Vec::new();
    for found in &files {
        bar.inc(1);
        let file = &found.path;
        let key = file.to_string_lossy().into_owned();
        let meta = std::fs::metadata(file).map_err(|e| Error::io(file.display(), &e))?;
        let (size, mtime) = (meta.len(), mtime_ns(&meta));
        if let Some(cp) = checkpoints.get(&key)
            && cp.size == size
            && cp.mtime_ns == mtime
            && match &cp.file {
                Some(f) => stat(&repo.path(f)) == Some((cp.file_size, cp.file_mtime_ns)),
                None => true,
            }
        {
            unchanged += 1;
            continue;
        }
        read_bytes += size;
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let modified = meta
            .modified()
            .map(chrono::DateTime::<chrono::Utc>::from)
            .unwrap_or(ctx.now);
        let checkpoint = |file: Option<String>| Checkpoint {
            size,
            mtime_ns: mtime,
            file,
            file_size: 0,
            file_mtime_ns: 0,
        };
        let rendered = render_transcript(
            &repo,
            file,
            size,
            &bar,
            forced,
            &stem,
            redactor()?,
            &crate::time::format(modified),
            &forgotten,
        )?;
        match rendered.and_then(|rendered| ingest_one(ctx, &repo, rendered)) {
            Err(Unreadable(reason)) => {
                warnings.push(format!("{}: skipped: {reason}", file.display()));
                skipped.push(json!({"file": key, "reason": reason}));
                checkpoints.remove(&key);
                if found.named {
                    unreadable_named.push(file.display().to_string());
                }
            }
            Ok((outcome, summary)) => {
                let errors = &summary.errors;
                for e in errors {
                    problems.push(format!("{}:{}: {}", file.display(), e.line, e.message));
                }
                if summary.bad_lines > errors.len() {
                    problems.push(format!(
                        "{}: {} more unreadable lines not named",
                        file.display(),
                        summary.bad_lines - errors.len()
                    ));
                }
                // A transcript with bad lines is read again next time, so that they are
                // named again until fixed; its cards are the same, so nothing is written twice.
                let mut keep = errors.is_empty();
                match outcome {
                    Outcome::Ingested {
                        cards,
                        episodes,
                        rewritten: r,
                        file: rel,
                        changed: c,
                    } => {
                        cards_added += cards;
                        episodes_added += episodes;
                        rewritten += usize::from(r);
                        if c {
                            // A rerun's message counts what this run wrote before a kill.
                            ctx.note_tally(&repo, &[cards_added as u64, episodes_added as u64])?;
                        }
                        if c && !changed.contains(&rel) {
                            changed.push(rel.clone());
                        }
                        if keep {
                            checkpoints.insert(key.clone(), checkpoint(Some(rel)));
                        }
                    }
                    Outcome::Behind {
                        file: rel,
                        session,
                        cards,
                        renders,
                    } => {
                        // Named again on every run until the copy is removed or catches up.
                        keep = false;
                        warnings.push(format!(
                            "{}: an older or shorter copy of session {session}: it has {} but {rel} holds {}; nothing written",
                            file.display(),
                            crate::output::count(renders, "turn"),
                            crate::output::count(cards, "turn"),
                        ));
                        behind.push(json!({"file": key, "session_file": rel, "cards": cards, "renders": renders}));
                    }
                    Outcome::Empty { unattributed } => {
                        let reason = if unattributed > 0 {
                            let what = if unattributed == 1 {
                                "1 tool call or answer".to_string()
                            } else {
                                format!("{unattributed} tool calls or answers")
                            };
                            format!(
                                "{what} but no prompt; its format may be newer than this cairn reads"
                            )
                        } else {
                            "no turns".to_string()
                        };
                        if unattributed > 0 {
                            warnings.push(format!("{}: skipped: {reason}", file.display()));
                        }
                        skipped.push(json!({"file": key, "reason": reason}));
                        if keep {
                            checkpoints.insert(key.clone(), checkpoint(None));
                        }
                    }
                }
                if keep {
                    made.push(key);
                } else {
                    checkpoints.remove(&key);
                }
            }
        }
    }
    bar.finish_and_clear();
    // The agents' own memories (ADR 136), with --all: Claude Code's and Codex's, or the one
    // --agent names.
    let mut memory = super::agent_memories::Read::default();
    if args.all {
        let agents: &[&str] = match forced {
            None => &["claude-code", "codex"],
            Some(Agent::Claude) => &["claude-code"],
            Some(Agent::Codex) => &["codex"],
            Some(Agent::Pi) => &[],
        };
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let homes = super::agent_memories::Homes::from_env(&home);
        // The folders `hooks install --memory` moved Claude Code's memory to (ADR 138).
        let kept = if agents.contains(&"claude-code") {
            let root = std::fs::canonicalize(repo.root()).unwrap_or_else(|_| repo.root().into());
            super::hooks::memory::with_key(&super::hooks::memory::folders(&root))
        } else {
            Vec::new()
        };
        memory = super::agent_memories::ingest(
            ctx,
            &repo,
            &INGEST,
            agents,
            &homes,
            &home,
            &kept,
            redactor()?,
        )?;
        for s in &memory.skipped {
            warnings.push(format!("{}: skipped: {}", s.file, s.reason));
        }
        if let Some(rel) = &memory.file
            && !changed.contains(rel)
        {
            changed.push(rel.clone());
        }
        if files.is_empty() && memory.files == 0 {
            return Err(
                Error::bad_input("no transcripts or agent memories to ingest").with_fix(
                    "name transcript files or folders; --all reads the agents' default folders",
                ),
            );
        }
    }
    for key in &made {
        if let Some(cp) = checkpoints.get_mut(key)
            && let Some(f) = &cp.file
        {
            (cp.file_size, cp.file_mtime_ns) = stat(&repo.path(f)).unwrap_or((0, 0));
        }
    }
    // The message counts what a killed run this one continues wrote, as the uninterrupted
    // run would have counted it (each transcript's cards are written whole, by one run).
    let (tally, left) = ctx.continued(&repo, &INGEST)?;
    let mut all_changed = changed.clone();
    all_changed.extend(left.into_iter().filter(|p| !changed.contains(p)));
    let subject = format!(
        "sessions: ingest {}, {} from {}",
        crate::output::count(
            cards_added + tally.first().copied().unwrap_or(0) as usize,
            "turn"
        ),
        crate::output::count(
            episodes_added + tally.get(1).copied().unwrap_or(0) as usize,
            "episode"
        ),
        crate::output::count(all_changed.len(), "transcript")
    );
    let subject = if memory.file.is_some() {
        format!(
            "{subject}; {} ({} merged, {} superseded, {} stale)",
            crate::output::count(memory.stored as usize, "agent memory"),
            memory.merged,
            memory.superseded,
            memory.stale
        )
    } else {
        subject
    };
    let message = super::message(&subject, &[]);
    // The counts are known only now: noted before the commit, so a rerun that finds every
    // card written commits them under this message.
    ctx.note_message(&repo, &message)?;
    super::failpoint("ingest-before-commit");
    let commit = ctx.commit_with_pending(&repo, &INGEST, &changed, &message)?;
    if checkpoints != before {
        let text = serde_json::to_string(&checkpoints).expect("checkpoints serialize");
        crate::files::write_atomic(&repo.path(CHECKPOINTS), text.as_bytes())?;
    }
    let ingested = files.len() - unchanged - skipped.len() - behind.len();
    let metadata = json!({
        "transcripts": files.len(), "unchanged": unchanged, "skipped": skipped.len(),
        "behind": behind.len(), "bytes": read_bytes, "cards": cards_added,
        "episodes": episodes_added, "rewritten": rewritten, "errors": problems.len(),
    });
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "sessions",
        "ingest",
        problems.is_empty() && unreadable_named.is_empty(),
        started,
        metadata,
    ));
    warnings.extend(problems.iter().cloned());
    let mut not_ingested = Vec::new();
    if unchanged > 0 {
        not_ingested.push(format!("{unchanged} unchanged"));
    }
    if !skipped.is_empty() {
        not_ingested.push(format!("{} skipped", skipped.len()));
    }
    if !behind.is_empty() {
        not_ingested.push(format!("{} behind their session", behind.len()));
    }
    let memory_human = if memory.files > 0 {
        format!(
            "; agent memories: {} read from {}, {} stored, {} merged, {} duplicate, {} superseded, {} stale",
            memory.memories,
            crate::output::count(memory.files - memory.unchanged, "changed file"),
            memory.stored,
            memory.merged,
            memory.duplicates,
            memory.superseded,
            memory.stale
        )
    } else {
        String::new()
    };
    let human = format!(
        "ingested {}{}: {}, {}{}{memory_human}; {}",
        crate::output::count(ingested, "transcript"),
        if not_ingested.is_empty() {
            String::new()
        } else {
            format!(" ({})", not_ingested.join(", "))
        },
        crate::output::count(cards_added, "new turn card"),
        crate::output::count(episodes_added, "episode"),
        if rewritten > 0 {
            format!(", {} rewritten", crate::output::count(rewritten, "session"))
        } else {
            String::new()
        },
        ctx.short(&commit)
    );
    let data = json!({
        "transcripts": files.len(),
        "ingested": ingested,
        "unchanged": unchanged,
        "skipped": skipped,
        "behind": behind,
        "bytes_read": read_bytes,
        "cards": cards_added,
        "episodes": episodes_added,
        "rewritten": rewritten,
        "files": changed,
        "errors": problems,
        "warnings": warnings,
        "commit": commit,
        "memories": {
            "files": memory.files, "unchanged": memory.unchanged, "read": memory.memories,
            "stored": memory.stored, "merged": memory.merged, "duplicates": memory.duplicates,
            "discarded": memory.discarded, "superseded": memory.superseded,
            "stale": memory.stale,
            "skipped": memory.skipped.iter().map(|s| json!({"file": s.file, "reason": s.reason})).collect::<Vec<_>>(),
        },
    });
    let status = if unreadable_named.is_empty() {
        Status::Ok
    } else {
        Status::BadInput
    };
    Ok(Report::new("sessions_ingest", data, human)
        .warnings(warnings)
        .status(status))
}
