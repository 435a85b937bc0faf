//! The command line: clap types, one file per command noun, and the context they share.
//!
//! Nothing here decides anything: each command turns its arguments into plain domain calls,
//! takes the repository lock when it writes, commits what it wrote through [`crate::git`],
//! and hands a [`Report`] to [`crate::output`].

// The nouns the MCP server calls are visible to the crate: it builds their arguments.
pub(crate) mod adr;
pub(crate) mod agent_memories;
mod config;
mod doctor;
mod eval;
mod forget;
mod hooks;
mod index;
mod init;
mod library;
mod maintain;
mod mcp;
pub(crate) mod memory;
pub(crate) mod note;
mod observe;
mod pending;
pub(crate) mod recall;
mod reflect;
pub(crate) mod remember;
pub(crate) mod review;
pub(crate) mod serve;
mod sessions;
pub(crate) mod shell;
pub(crate) mod slog;
mod stats;
mod sync;
mod triage;
mod why;

use std::cell::Cell;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};

use crate::error::{Error, Kind, Result};
use crate::git;
use crate::output::{self, Report};
use crate::repo::Repo;
pub use pending::Work;

/// cairn: a git-backed memory for AI coding agents and the people who run them.
#[derive(Debug, Parser)]
#[command(name = "cairn", version, about, max_term_width = 100)]
pub struct Cli {
    /// Write exactly one JSON object to stdout (its format: the README, section "Using it")
    #[arg(long, global = true)]
    pub json: bool,

    /// The knowledge repository, else $CAIRN_REPO [default: the nearest ancestor holding
    /// cairn.toml, else `repo` in ~/.config/cairn/config.toml (`cairn config set repo DIR`)]
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// Pin the current time (RFC 3339 or YYYY-MM-DD), for reproducible runs; else $CAIRN_NOW
    #[arg(long, global = true, value_name = "TIME")]
    pub now: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make a knowledge repository, or adopt an existing git repository
    Init(init::Args),
    /// Your own settings, outside every repository (~/.config/cairn/config.toml): `repo`, the
    /// default knowledge repository of every folder
    #[command(subcommand)]
    Config(config::Command),
    /// Append to the operational log, or query it
    Slog(slog::Args),
    /// Architecture decision records
    #[command(subcommand)]
    Adr(adr::Command),
    /// The curated MEMORY.md
    #[command(subcommand)]
    Memory(memory::Command),
    /// Store an observation (through the write gate)
    Remember(remember::RememberArgs),
    /// Bring records in from files
    #[command(subcommand)]
    Import(remember::ImportCommand),
    /// Recall what matters for a query, ranked by words and time
    Recall(recall::RecallArgs),
    /// Search every record: ranked with no decay, or --exact
    Search(recall::SearchArgs),
    /// The session-start briefing: MEMORY.md and what matters for this project
    Brief(recall::BriefArgs),
    /// Bring the index up to date, rebuild it, or verify it
    Index(index::IndexArgs),
    /// Counts, held items and index freshness
    Status,
    /// Check the files for torn lines and other damage, and repair what is safe
    Doctor(doctor::Args),
    /// Retrieval quality (recall@k) on a benchmark file
    #[command(subcommand)]
    Eval(eval::Command),
    /// Agent transcripts: ingest them into turn cards and episodes
    #[command(subcommand)]
    Sessions(sessions::Command),
    /// Distill the turns not yet observed into observations
    Observe(observe::Args),
    /// Propose changes to MEMORY.md from the observations not yet reflected on
    Reflect(reflect::Args),
    /// Counts, categories and pipeline figures; --telemetry lists the events
    Stats(stats::Args),
    /// Git hooks: install them (chaining the hooks they replace), uninstall them, or run one
    #[command(subcommand)]
    Hooks(hooks::Command),
    /// Decide pending memory proposals by rules (and the LLM when configured); the rest wait
    /// for `cairn review`
    Triage(triage::Args),
    /// Decide the proposed MEMORY.md changes that wait for a person (prompts on a terminal)
    Review(review::Args),
    /// Serve the knowledge repository to agents: a Model Context Protocol server on stdio;
    /// `mcp install --agent AGENT` registers it with Claude Code or Codex
    Mcp(mcp::Args),
    /// The console: a local web page to search memory, read turns, browse decisions and
    /// review proposals, with an authenticated JSON API
    Serve(serve::Args),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell)
    Completions(shell::CompletionsArgs),
    /// Print cairn's man page (roff), or write one page per command with --dir
    Man(shell::ManArgs),
    /// Forget records for real: from the files, the index and the vectors in one commit, with
    /// the commits that still hold them and the command that rewrites history
    Forget(forget::Args),
    /// Pull from the git remote (JSON Lines merge by union), bring the index up to date, push
    Sync(sync::Args),
    /// What became of a text or record: transcript, card, observer, gate, dedup, score, rank
    Why(why::Args),
    /// The nightly pass over the observations: merge duplicates, mark stale, soft-delete
    Maintain(maintain::Args),
    /// Undo a supersede, stale mark or soft delete of observations
    Restore(maintain::RestoreArgs),
    /// Discovery notes: a link (or a thought) found while working, with why it mattered
    Note(note::Args),
    /// The document library: reference documents searched with `search --library`, never
    /// recalled unasked
    #[command(subcommand)]
    Library(library::Command),
}

/// `--no-commit`, flattened into the arguments of every command that commits (a read-only
/// command does not offer it). `CAIRN_NO_COMMIT=1` and `[git] commit = false` do the same.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct CommitArgs {
    /// Leave changes in the working tree instead of committing them
    #[arg(
        long,
        env = "CAIRN_NO_COMMIT",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub no_commit: bool,
}

impl Command {
    /// The `--no-commit` of the command run; read-only commands never commit anything.
    fn commit_args(&self) -> CommitArgs {
        match self {
            Command::Init(a) => a.commit,
            Command::Slog(a) => a.commit,
            Command::Adr(adr::Command::New(a)) => a.commit,
            Command::Adr(
                adr::Command::Status { commit, .. }
                | adr::Command::Supersede { commit, .. }
                | adr::Command::Import { commit, .. },
            ) => *commit,
            Command::Memory(memory::Command::Add { commit, .. }) => *commit,
            Command::Remember(a) => a.commit,
            Command::Import(remember::ImportCommand::Observations { commit, .. }) => *commit,
            Command::Sessions(sessions::Command::Ingest(a)) => a.commit,
            Command::Observe(a) => a.commit,
            Command::Reflect(a) => a.commit,
            Command::Maintain(a) => a.commit,
            Command::Restore(a) => a.commit,
            Command::Doctor(a) => a.commit,
            Command::Hooks(hooks::Command::Install(a)) => a.commit,
            Command::Triage(a) => a.commit,
            Command::Review(a) => a.commit,
            Command::Mcp(a) => a.commit,
            Command::Serve(a) => a.commit,
            Command::Forget(a) => a.commit,
            Command::Note(a) => a.commit,
            Command::Library(library::Command::Add(a)) => a.commit,
            Command::Library(library::Command::Remove { commit, .. }) => *commit,
            _ => CommitArgs::default(),
        }
    }

    /// Whether the command only reads the repository (what it may append besides, recall
    /// counts and telemetry, are locked one-line appends that any number of processes make
    /// at once): a server runs these side by side, and everything else one at a time.
    pub(crate) fn only_reads(&self) -> bool {
        match self {
            Command::Recall(_) | Command::Search(_) | Command::Brief(_) | Command::Status => true,
            Command::Stats(_) => true,
            Command::Slog(a) => a.query.is_some(),
            Command::Adr(c) => matches!(c, adr::Command::List(_) | adr::Command::Show { .. }),
            Command::Memory(c) => matches!(c, memory::Command::Show),
            Command::Review(a) => {
                (a.list || a.show.is_some()) && a.approve.is_none() && a.reject.is_none()
            }
            _ => false,
        }
    }
}

/// Why [`Ctx::commit`] made no commit, for [`Ctx::short`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Uncommitted {
    /// Nothing was written, or what was written left the tree as it was.
    NothingChanged,
    /// Committing is off (`--no-commit`, `[git] commit = false`): the change is in the tree.
    Off,
}

/// What every command gets besides its own arguments.
pub struct Ctx {
    pub json: bool,
    pub repo_arg: Option<PathBuf>,
    /// `repo_arg` came from `--repo` (not from CAIRN_REPO).
    pub repo_flag: bool,
    pub now: DateTime<Utc>,
    pub no_commit: bool,
    uncommitted: Cell<Uncommitted>,
    pub cwd: PathBuf,
    /// stdin and stderr are terminals: a prompt or an editor may be shown.
    pub interactive: bool,
    /// stdout is a terminal: a person reads the output.
    pub stdout_terminal: bool,
    /// A server's open index ([`Served::index`]); the command line opens one per command.
    pub(crate) held: Option<std::sync::Arc<crate::index::Held>>,
    /// This run's entry in `.cairn/pending.json` ([`pending`]).
    pending: std::cell::RefCell<pending::State>,
}

impl Ctx {
    pub fn repo(&self) -> Result<Repo> {
        Repo::discover(self.repo_arg.as_deref(), &self.cwd, default_repo)
    }

    /// The index of `repo`, up to date with its files: the server's held one brought up to
    /// date (the same check), else opened for this command ([`crate::index::Index::open`]).
    pub fn index(&self, repo: &Repo) -> Result<crate::index::Opened<'_>> {
        match &self.held {
            Some(held) => held.read(repo),
            None => crate::index::Index::open(repo).map(|i| crate::index::Opened::Own(Box::new(i))),
        }
    }

    /// Commits `paths` unless committing is off; returns the commit id if one was made.
    pub fn commit(
        &self,
        repo: &Repo,
        paths: &[String],
        message: &str,
    ) -> Result<Option<git::Committed>> {
        let changes: Vec<git::Change> = paths.iter().cloned().map(git::Change::File).collect();
        self.commit_changes(repo, &changes, message)
    }

    /// Commits what this command wrote (HEAD's content with `changes`, see [`git::Change`])
    /// unless committing is off; returns the commit id if one was made.
    pub fn commit_changes(
        &self,
        repo: &Repo,
        changes: &[git::Change],
        message: &str,
    ) -> Result<Option<git::Committed>> {
        if changes.is_empty() {
            return Ok(None);
        }
        if self.no_commit || !repo.config.git.commit {
            self.uncommitted.set(Uncommitted::Off);
            return Ok(None);
        }
        let identity = git::Identity {
            fallback_name: &repo.config.git.fallback_name,
            fallback_email: &repo.config.git.fallback_email,
        };
        git::commit_changes(repo.root(), changes, message, &identity)
    }
}

impl Ctx {
    /// Does `journal`'s writes, commits them and deletes the proposal refs it names (see
    /// [`crate::journal`]). Run under the repository lock.
    pub fn commit_journaled(
        &self,
        repo: &Repo,
        journal: &crate::journal::Journal,
    ) -> Result<Option<git::Committed>> {
        crate::journal::run(repo, journal, |changes, message| {
            self.commit_changes(repo, changes, message)
        })
    }

    /// Finishes what an interrupted decision left in `.cairn/journal.json`: the proposals it
    /// decided, and warnings for people (what was finished, and anything it could not do).
    /// Run under the repository lock.
    pub fn finish_interrupted(&self, repo: &Repo) -> Result<(Vec<String>, Vec<String>)> {
        let done = crate::journal::finish(repo, |changes, message| {
            self.commit_changes(repo, changes, message)
        })?;
        let mut warnings = Vec::new();
        if let Some(subject) = &done.subject {
            let commit = match self.short(&done.commit).as_str() {
                "nothing changed" => "its commit was made before it stopped".to_string(),
                short => short.to_string(),
            };
            warnings.push(format!(
                "finished an interrupted command's \"{subject}\" ({commit})"
            ));
        }
        warnings.extend(done.warnings);
        Ok((done.refs, warnings))
    }
}

pub use crate::failpoint::{failpoint, pausepoint};

/// What a command reads from stdin (`-` for a text argument), at most `max` bytes: more is
/// refused before it is held in memory, so `… | cairn slog deploy api -` of a huge stream
/// costs `max` bytes, not the stream. `what` names the text in the error.
pub(crate) fn read_stdin(what: &str, max: u64) -> Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("stdin", &e))?;
    if bytes.len() as u64 > max {
        return Err(Error::bad_input(format!(
            "stdin holds more than {max} bytes, more than {what} may have; nothing was written"
        ))
        .with_fix(format!("give a shorter {what}")));
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::bad_input(format!("stdin is not UTF-8 text; {what} must be")))
}

/// A commit message: a subject, then `Key: value` trailers (the git layer's, which sync uses
/// too).
pub use crate::git::message;

/// The last part of a path, for commit messages: history never carries a path of the
/// machine it was written on.
pub fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Ctx {
    /// What came of this command's [`Ctx::commit`], for people: the short commit id, "not
    /// committed" when committing is off and something was written, else "nothing changed".
    pub fn short(&self, commit: &Option<git::Committed>) -> String {
        match (commit, self.uncommitted.get()) {
            (Some(c), _) => format!("commit {}", &c.id[..c.id.len().min(8)]),
            (None, Uncommitted::Off) => "not committed".to_string(),
            (None, Uncommitted::NothingChanged) => "nothing changed".to_string(),
        }
    }
}

/// An environment variable as an optional setting: unset and empty are the same.
fn env_setting(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The variables that place the person's own configuration ([`crate::user_config`]).
pub(crate) fn user_vars() -> crate::user_config::Vars {
    let path = |name: &str| env_setting(name).map(PathBuf::from);
    crate::user_config::Vars {
        cairn_config_dir: path("CAIRN_CONFIG_DIR"),
        xdg_config_home: path("XDG_CONFIG_HOME"),
        home: path("HOME"),
    }
}

/// The absolute path of this binary, as the person ran it, for an agent's hook or MCP
/// registration to run ([`crate::hooks::agents::exe`]).
pub(crate) fn invoked_exe(cwd: &std::path::Path) -> Result<PathBuf> {
    let current =
        std::env::current_exe().map_err(|e| Error::io("the path of the running cairn", &e))?;
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let path = std::env::var_os("PATH");
    Ok(crate::hooks::agents::exe::invoked(
        &argv0,
        &current,
        cwd,
        path.as_deref(),
    ))
}

/// The person's default knowledge repository (`repo` in their `config.toml`), if set: where
/// a command finds its repository when nothing else names one (ADR 86).
pub(crate) fn default_repo() -> Result<Option<crate::user_config::DefaultRepo>> {
    let vars = user_vars();
    match vars.file() {
        Some(file) => crate::user_config::default_repo(&file, vars.home.as_deref()),
        None => Ok(None),
    }
}

/// The servers `cairn mcp` and `cairn serve` start: front ends beside the command line that
/// build on it, handed in by [`crate::run`] so that the command line never imports them.
pub struct Servers {
    /// Serves MCP on stdio until the client closes it (`crate::mcp::start`).
    pub mcp: fn(&Ctx, Option<DateTime<Utc>>) -> Result<()>,
    /// Serves the console until the process is stopped (`crate::serve::start`).
    pub serve: fn(&Ctx, serve::Args, Option<DateTime<Utc>>) -> Result<()>,
}

/// Runs cairn with `args` (the first is the program name) and returns the exit code.
pub fn run<I>(args: I, servers: &Servers) -> i32
where
    I: IntoIterator<Item = OsString>,
{
    let args: Vec<OsString> = args.into_iter().collect();
    let wants_json = args.iter().any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err, wants_json),
    };
    let json = cli.json;
    if let Command::Mcp(mcp::Args { action: None, .. }) = cli.command {
        // stdout is the protocol: nothing else may be written there, not even an error.
        // The time is pinned for the whole session when it is pinned at all.
        let pinned = cli.now.is_some() || env_setting("CAIRN_NOW").is_some();
        return match context(&cli).and_then(|ctx| (servers.mcp)(&ctx, pinned.then_some(ctx.now))) {
            Ok(()) => 0,
            Err(err) => output::emit_error(&err, false),
        };
    }
    let ctx = context(&cli);
    if let Command::Serve(args) = cli.command {
        // A server: the URL is stdout's one line; if it stops on an error, it says why. The
        // time is pinned for every request when it is pinned at all.
        let pinned = cli.now.is_some() || env_setting("CAIRN_NOW").is_some();
        return match ctx.and_then(|ctx| (servers.serve)(&ctx, args, pinned.then_some(ctx.now))) {
            Ok(()) => 0,
            Err(err) => output::emit_error(&err, json),
        };
    }
    // One command, then the process ends (what it leaves open, the exit closes at once).
    crate::index::ends_after_command();
    match ctx.and_then(|ctx| execute(&ctx, cli.command)) {
        Ok(report) => {
            output::phase("command done");
            let code = output::emit(&report, json);
            output::phase("report written");
            crate::index::leave_to_exit(report);
            code
        }
        Err(err) => output::emit_error(&err, json),
    }
}

/// A command line clap refused (or help it was asked for): clap's own words on stderr (help
/// on stdout when asked for), once; with `--json`, the one error object on stdout instead.
fn usage_error(err: &clap::Error, json: bool) -> i32 {
    use clap::error::ErrorKind;
    let asked = matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    );
    if asked {
        let _ = err.print();
        return 0;
    }
    if !json {
        let _ = err.print();
        return 2;
    }
    let rendered = err.render().to_string();
    let message = match err.kind() {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "a subcommand or argument is missing"
        }
        _ => rendered
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: "),
    };
    let e = Error::new(Kind::BadInput, message).with_fix("run `cairn --help` for usage");
    output::emit_error(&e, true)
}

/// The pinned time (`--now`, else `CAIRN_NOW`), if any.
fn pinned_now(flag: Option<&str>) -> Result<Option<DateTime<Utc>>> {
    match flag
        .map(OsString::from)
        .or_else(|| env_setting("CAIRN_NOW"))
    {
        Some(t) => crate::time::parse(&t.to_string_lossy(), Utc::now())
            .map(Some)
            .map_err(Error::bad_input),
        None => Ok(None),
    }
}

/// The context of the command line's one command.
fn context(cli: &Cli) -> Result<Ctx> {
    let cwd = std::env::current_dir().map_err(|e| Error::io("current directory", &e))?;
    let now = pinned_now(cli.now.as_deref())?.unwrap_or_else(Utc::now);
    Ok(Ctx {
        json: cli.json,
        repo_arg: cli
            .repo
            .clone()
            .or_else(|| env_setting("CAIRN_REPO").map(PathBuf::from)),
        repo_flag: cli.repo.is_some(),
        now,
        no_commit: cli.command.commit_args().no_commit,
        uncommitted: Cell::new(Uncommitted::NothingChanged),
        cwd,
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        stdout_terminal: std::io::stdout().is_terminal(),
        held: None,
        pending: Default::default(),
    })
}

/// What a front end other than the command line (the MCP server) fixes for all its calls.
#[derive(Debug, Clone)]
pub struct Served {
    /// The knowledge repository's root, found once when the server starts.
    pub repo: PathBuf,
    /// The folder the server was started in (`brief` finds the project from it).
    pub cwd: PathBuf,
    /// The pinned time (`--now`, `CAIRN_NOW`), else each call's own.
    pub now: Option<DateTime<Utc>>,
    /// `--no-commit` (or `CAIRN_NO_COMMIT`) given to the server.
    pub no_commit: bool,
    /// The index the server keeps open for its run (the console's), when it keeps one.
    pub index: Option<std::sync::Arc<crate::index::Held>>,
}

impl Served {
    /// What a server started by `ctx` in the knowledge repository `repo` fixes for its calls;
    /// no held index (the console adds its own).
    pub(crate) fn new(ctx: &Ctx, repo: &crate::repo::Repo, now: Option<DateTime<Utc>>) -> Served {
        Served {
            repo: repo.root().to_path_buf(),
            cwd: ctx.cwd.clone(),
            now,
            no_commit: ctx.no_commit,
            index: None,
        }
    }
}

impl Ctx {
    /// The context of one call of a server: JSON data and no terminal, so no prompt, no
    /// editor and no progress bar.
    pub(crate) fn for_call(served: &Served) -> Ctx {
        Ctx {
            json: true,
            repo_arg: Some(served.repo.clone()),
            repo_flag: true,
            now: served.now.unwrap_or_else(Utc::now),
            no_commit: served.no_commit,
            uncommitted: Cell::new(Uncommitted::NothingChanged),
            cwd: served.cwd.clone(),
            interactive: false,
            stdout_terminal: false,
            held: served.index.clone(),
            pending: Default::default(),
        }
    }
}

/// Runs one command with its context: what the command line does for its one command, and
/// the MCP server for each tool call, so both return the same [`Report`].
pub(crate) fn execute(ctx: &Ctx, command: Command) -> Result<Report> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Config(cmd) => config::run(ctx, cmd),
        Command::Slog(args) => slog::run(ctx, args),
        Command::Adr(cmd) => adr::run(ctx, cmd),
        Command::Memory(cmd) => memory::run(ctx, cmd),
        Command::Remember(args) => remember::remember(ctx, args),
        Command::Import(cmd) => remember::import(ctx, cmd),
        Command::Recall(args) => recall::recall(ctx, args),
        Command::Search(args) => recall::search(ctx, args),
        Command::Brief(args) => recall::brief(ctx, args),
        Command::Sessions(cmd) => sessions::run(ctx, cmd),
        Command::Observe(args) => observe::run(ctx, args),
        Command::Reflect(args) => reflect::run(ctx, args),
        Command::Maintain(args) => maintain::run(ctx, args),
        Command::Restore(args) => maintain::restore(ctx, args),
        Command::Stats(args) => stats::run(ctx, args),
        Command::Hooks(cmd) => hooks::run(ctx, cmd),
        Command::Index(args) => index::index(ctx, args),
        Command::Status => index::status(ctx),
        Command::Doctor(args) => doctor::run(ctx, args),
        Command::Eval(cmd) => eval::run(ctx, cmd),
        Command::Triage(args) => triage::run(ctx, args),
        Command::Review(args) => review::run(ctx, args),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(ctx, args),
        Command::Sync(args) => sync::run(ctx, args),
        Command::Why(args) => why::run(ctx, args),
        Command::Forget(args) => forget::run(ctx, args),
        Command::Note(args) => note::run(ctx, args),
        Command::Library(cmd) => library::run(ctx, cmd),
        Command::Mcp(mcp::Args {
            action: Some(action),
            ..
        }) => mcp::manage(ctx, action),
        Command::Mcp(_) => Err(Error::bad_input(
            "`cairn mcp` serves on stdio and cannot be called from a server",
        )),
        Command::Serve(_) => Err(Error::bad_input(
            "`cairn serve` is a server and cannot be called from one",
        )),
    }
}
