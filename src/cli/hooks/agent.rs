//! `cairn hooks install|uninstall --agent AGENT [--global|--project DIR]` and `cairn hooks run
//! session-start|pre-compact|session-end --agent AGENT`: the agent session hooks
//! ([`crate::hooks::agents`] decides what they write and read).
//!
//! A hook run never fails the agent's turn: whatever goes wrong (no repository, a broken
//! index, stdin that is not JSON, a transcript that is gone) is said on stderr, recorded in
//! telemetry when there is a repository to record it in, and the run exits 0 with nothing (or
//! plain text) on stdout. session-start prints the briefing of `cairn brief` (the same code,
//! run for the agent's `cwd`). pre-compact and session-end start `cairn hooks run EVENT
//! --agent A --transcript PATH` detached (its own process group, stdin and stdout and stderr
//! null) and return at once; that process ingests the transcript and observes what changed,
//! each step taking the repository lock as any writer does.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::{CommitArgs, Ctx};
use crate::error::{Error, Result};
use crate::hooks::agents::{self, Agent, Event, Scope};
use crate::output::{self, Next, Report};
use crate::repo::Repo;

/// Where `hooks install|uninstall --agent` writes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Target {
    /// Install (or uninstall) an agent's session hooks instead of the git hooks: claude-code,
    /// codex or pi
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// With --agent: the person's own configuration (~/.claude/settings.json,
    /// ~/.codex/hooks.json or $CODEX_HOME, ~/.pi/agent/extensions/ or $PI_CODING_AGENT_DIR)
    #[arg(long, requires = "agent", conflicts_with = "project")]
    pub global: bool,
    /// With --agent: the project in DIR (DIR/.claude/settings.json, DIR/.codex/hooks.json,
    /// DIR/.pi/extensions/) [default: the git work tree of the current directory]
    #[arg(long, value_name = "DIR", requires = "agent")]
    pub project: Option<PathBuf>,
    /// With --agent claude-code (a project): also move Claude Code's auto memory into the
    /// knowledge repository (`autoMemoryDirectory` in the project's .claude/settings.local.json
    /// names agents/claude-code/<project>/memory/), importing what it kept so far; each session
    /// end commits it. Uninstall gives the setting back as it was and leaves the files
    #[arg(long, requires = "agent", conflicts_with = "global")]
    pub memory: bool,
}

/// `hooks run EVENT --agent AGENT`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunTarget {
    /// The agent whose session hook this is (claude-code, codex, pi); EVENT is then
    /// session-start, pre-compact or session-end, and the agent's JSON is read from stdin
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Ingest and observe this transcript now (what pre-compact and session-end start in the
    /// background)
    #[arg(long, value_name = "PATH", hide = true, requires = "agent")]
    pub transcript: Option<PathBuf>,
}

/// The longest stdin a hook reads, and how long it waits for it to close.
const STDIN_MAX: u64 = 1 << 20;
const STDIN_WAIT: Duration = Duration::from_secs(2);

fn agent(name: &str) -> Result<Agent> {
    name.parse::<Agent>().map_err(|_| {
        Error::bad_input(format!("unknown agent {name:?}"))
            .with_fix(format!("use --agent {}", agents::NAMES))
    })
}

fn scope(ctx: &Ctx, target: &Target) -> Result<Scope> {
    if target.global {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::bad_input("HOME is not set: cannot find the agents' configuration")
                    .with_fix("set HOME, or install into a project with --project DIR")
            })?;
        let set = |name: &str| {
            std::env::var_os(name)
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
        };
        return Ok(Scope::Global {
            home,
            codex_home: set("CODEX_HOME"),
            pi_agent_dir: set("PI_CODING_AGENT_DIR"),
        });
    }
    let dir = match &target.project {
        Some(dir) => {
            let dir = ctx.cwd.join(dir);
            if !dir.is_dir() {
                return Err(Error::bad_input(format!(
                    "--project {}: not a folder",
                    dir.display()
                )));
            }
            dir
        }
        None => crate::git::work_tree_of(&ctx.cwd).ok_or_else(|| {
            Error::bad_input("the current directory is in no git work tree")
                .with_fix("pass --project DIR, or --global for every project")
        })?,
    };
    Ok(Scope::Project(dir.canonicalize().unwrap_or(dir)))
}

/// The flags that name `target`'s scope again, for the `next` suggestion.
fn scope_flags(scope: &Scope) -> String {
    match scope {
        Scope::Global { .. } => " --global".to_string(),
        Scope::Project(dir) => format!(" --project {}", agents::shell_word(&dir.to_string_lossy())),
    }
}

fn scope_name(scope: &Scope) -> &'static str {
    match scope {
        Scope::Global { .. } => "global",
        Scope::Project(_) => "project",
    }
}

pub fn install(ctx: &Ctx, target: &Target, _commit: CommitArgs) -> Result<Report> {
    let agent = agent(target.agent.as_deref().unwrap_or_default())?;
    let repo = ctx.repo()?;
    let root = repo
        .root()
        .canonicalize()
        .unwrap_or_else(|_| repo.root().to_path_buf());
    let scope = scope(ctx, target)?;
    let file = agents::config_file(agent, &scope);
    let exe = super::super::invoked_exe(&ctx.cwd)?;
    let project = memory_project(agent, target, &scope)?;
    let outcome = agents::install(agent, &file, &exe, &root)?;
    let name = agents::name(agent);
    let events: Vec<&str> = outcome.events.iter().map(|e| e.as_str()).collect();
    let mut human = if outcome.changed {
        format!(
            "installed cairn's {name} hooks in {} ({}), for the knowledge repository {}, run as {}",
            file.display(),
            events.join(", "),
            root.display(),
            exe.display()
        )
    } else {
        format!(
            "cairn's {name} hooks are already in {}; nothing changed",
            file.display()
        )
    };
    let mut notes = Vec::new();
    if agent == Agent::Codex {
        notes.push(
            "codex runs a hook only after you trust it: open /hooks in codex and trust the three cairn hooks"
                .to_string(),
        );
        if let Scope::Project(_) = scope {
            notes.push(
                "codex reads a project's .codex/ only when it trusts the project".to_string(),
            );
        }
    }
    if agent == Agent::Pi {
        if let Scope::Project(dir) = &scope {
            notes.push(format!(
                "pi loads it when started in {} (not in a folder below it)",
                dir.display()
            ));
        }
        let folder = file.parent().unwrap_or(&file);
        if let Some(other) = agents::pi::shadowed_by(folder) {
            notes.push(format!(
                "pi will not load {}: {} makes {} one extension; import {} from it, or move it away",
                crate::hooks::agents::pi::FILE_NAME,
                other.display(),
                folder.display(),
                crate::hooks::agents::pi::FILE_NAME,
            ));
        }
    }
    for n in &notes {
        human.push_str(&format!("\n{n}"));
    }
    let memory = match &project {
        Some(project) => {
            let (said, data) = super::memory::install(ctx, &repo, &root, project)?;
            human.push_str(&format!("\n{said}"));
            data
        }
        None => Value::Null,
    };
    let commands: serde_json::Map<String, Value> = outcome
        .events
        .iter()
        .map(|e| {
            (
                e.as_str().to_string(),
                json!(agents::command(&exe, &root, agent, *e)),
            )
        })
        .collect();
    let data = json!({
        "agent": name,
        "scope": scope_name(&scope),
        "file": outcome.file,
        "changed": outcome.changed,
        "created": outcome.created,
        "events": outcome.events,
        "commands": commands,
        "repo": root,
        "cairn": exe,
        "notes": notes,
        "memory": memory,
    });
    Ok(
        Report::new("hooks_agent_install", data, human).next(Next::new(
            format!(
                "cairn hooks uninstall --agent {name}{}{}",
                scope_flags(&scope),
                if project.is_some() { " --memory" } else { "" }
            ),
            "remove exactly what this added",
        )),
    )
}

pub fn uninstall(ctx: &Ctx, target: &Target) -> Result<Report> {
    let agent = agent(target.agent.as_deref().unwrap_or_default())?;
    let scope = scope(ctx, target)?;
    let file = agents::config_file(agent, &scope);
    let project = memory_project(agent, target, &scope)?;
    let outcome = agents::uninstall(agent, &file)?;
    let name = agents::name(agent);
    let mut human = if !outcome.changed {
        format!(
            "no cairn {name} hooks in {}; nothing changed",
            file.display()
        )
    } else if outcome.deleted {
        format!(
            "removed cairn's {name} hooks: deleted {} (it held nothing else)",
            file.display()
        )
    } else {
        format!("removed cairn's {name} hooks from {}", file.display())
    };
    let memory = match &project {
        Some(project) => {
            let repo = ctx.repo()?;
            let root = repo
                .root()
                .canonicalize()
                .unwrap_or_else(|_| repo.root().to_path_buf());
            let (said, data) = super::memory::uninstall(ctx, &repo, &root, project)?;
            human.push_str(&format!("\n{said}"));
            data
        }
        None => Value::Null,
    };
    let data = json!({
        "agent": name,
        "scope": scope_name(&scope),
        "file": outcome.file,
        "changed": outcome.changed,
        "deleted": outcome.deleted,
        "events": outcome.events,
        "memory": memory,
    });
    Ok(Report::new("hooks_agent_uninstall", data, human))
}

/// The project whose Claude Code memory `--memory` moves: only Claude Code has one, and only a
/// project's local settings hold it (ADR 138).
fn memory_project(agent: Agent, target: &Target, scope: &Scope) -> Result<Option<PathBuf>> {
    if !target.memory {
        return Ok(None);
    }
    if agent != Agent::Claude {
        return Err(Error::bad_input(format!(
            "--memory is for claude-code: {} keeps no memory folder cairn can move",
            agents::name(agent)
        ))
        .with_fix("drop --memory, or use --agent claude-code"));
    }
    match scope {
        Scope::Project(dir) => Ok(Some(dir.clone())),
        Scope::Global { .. } => Err(Error::bad_input(
            "--memory moves one project's memory: it needs a project, not --global",
        )
        .with_fix("run it in the project, or pass --project DIR")),
    }
}

/// `hooks run EVENT --agent AGENT`: always a report, never an error, once the arguments are
/// good.
pub fn run(ctx: &Ctx, event: &str, target: &RunTarget) -> Result<Report> {
    let agent = agent(target.agent.as_deref().unwrap_or_default())?;
    let event = Event::parse(event).ok_or_else(|| {
        Error::bad_input(format!("unknown agent hook event {event:?}"))
            .with_fix("use session-start, pre-compact or session-end")
    })?;
    if let Some(transcript) = &target.transcript {
        return Ok(work(ctx, agent, event, transcript));
    }
    let started = Instant::now();
    let input = agents::read_input(&read_stdin());
    let (input, bad_stdin) = match input {
        Ok(i) => (i, None),
        Err(e) => (agents::Input::default(), Some(e)),
    };
    let done = match event {
        Event::SessionStart => session_start(ctx, agent, &input),
        Event::PreCompact | Event::SessionEnd => hand_off(ctx, agent, event, &input),
    };
    let mut problems: Vec<String> = bad_stdin.into_iter().collect();
    problems.extend(done.problem.clone());
    let repo = done.repo.as_ref();
    let mut warnings = done.warnings;
    if let Some(repo) = repo {
        let meta = json!({
            "agent": agents::name(agent),
            "session": input.session_id,
            "why": input.why,
            "detached": done.detached,
            // What the hook handed the agent on stdout (session-start), so that an agent
            // which drops it shows as a briefing of N characters that never arrived.
            "output_chars": done.output.chars().count(),
            "errors": problems,
        });
        warnings.extend(crate::telemetry::emit(
            repo,
            ctx.now,
            "hooks",
            event.as_str(),
            problems.is_empty(),
            started,
            meta,
        ));
    }
    for p in &problems {
        output::notice(&format!("cairn: {} hook: {p}", event.as_str()));
    }
    let data = json!({
        "event": event,
        "agent": agents::name(agent),
        "ok": problems.is_empty(),
        "errors": problems,
        "detached": done.detached,
        "output": done.output,
    });
    Ok(Report::new("hooks_run", data, done.output).warnings(warnings))
}

/// What one agent hook run came to.
struct Done {
    repo: Option<Repo>,
    output: String,
    problem: Option<String>,
    warnings: Vec<String>,
    /// The pid of the background ingest, when one was started.
    detached: Option<u32>,
}

impl Done {
    fn failed(repo: Option<Repo>, problem: String) -> Done {
        Done {
            repo,
            output: String::new(),
            problem: Some(problem),
            warnings: Vec::new(),
            detached: None,
        }
    }
}

/// The agent's stdin, read to its end (an agent closes it after its one JSON object), but no
/// more than [`STDIN_MAX`] and no longer than [`STDIN_WAIT`]: a hook never hangs. A terminal
/// is not read at all.
fn read_stdin() -> Vec<u8> {
    if std::io::stdin().is_terminal() {
        return Vec::new();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::stdin()
            .lock()
            .take(STDIN_MAX)
            .read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx.recv_timeout(STDIN_WAIT).unwrap_or_default()
}

/// The briefing for the agent's working directory, in the agent's form.
fn session_start(ctx: &Ctx, agent: Agent, input: &agents::Input) -> Done {
    let repo = match ctx.repo() {
        Ok(r) => r,
        Err(e) => return Done::failed(None, e.message),
    };
    let cwd = input
        .cwd
        .clone()
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| ctx.cwd.clone());
    let at = Ctx {
        json: false,
        repo_arg: Some(repo.root().to_path_buf()),
        repo_flag: ctx.repo_flag,
        now: ctx.now,
        no_commit: ctx.no_commit,
        uncommitted: std::cell::Cell::new(super::super::Uncommitted::NothingChanged),
        cwd,
        interactive: false,
        stdout_terminal: false,
        held: None,
        pending: Default::default(),
    };
    // Fitted to what this agent keeps of a hook's output (ADR 84).
    let args = super::super::recall::BriefArgs {
        profile: None,
        project: None,
        agent: Some(agents::name(agent).to_string()),
    };
    match super::super::recall::brief(&at, args) {
        Ok(report) => {
            let markdown = report.data["markdown"].as_str().unwrap_or_default();
            Done {
                output: agents::session_start_output(agent, markdown),
                repo: Some(repo),
                problem: None,
                warnings: report.warnings,
                detached: None,
            }
        }
        Err(e) => Done::failed(Some(repo), format!("no briefing: {}", e.message)),
    }
}

/// Starts the background ingest of the hook's transcript.
fn hand_off(ctx: &Ctx, agent: Agent, event: Event, input: &agents::Input) -> Done {
    let repo = match ctx.repo() {
        Ok(r) => r,
        Err(e) => return Done::failed(None, e.message),
    };
    let Some(transcript) = &input.transcript_path else {
        return Done::failed(
            Some(repo),
            "no transcript_path in the hook's input".to_string(),
        );
    };
    if !transcript.is_file() {
        return Done::failed(
            Some(repo),
            format!("transcript {} is not a file", transcript.display()),
        );
    }
    match spawn_worker(repo.root(), agent, event, transcript) {
        Ok(pid) => Done {
            repo: Some(repo),
            output: String::new(),
            problem: None,
            warnings: Vec::new(),
            detached: Some(pid),
        },
        Err(e) => Done::failed(
            Some(repo),
            format!("cannot start the background ingest: {e}"),
        ),
    }
}

/// `cairn --repo ROOT hooks run EVENT --agent A --transcript PATH`, detached: in a process group
/// of its own (the agent's end or a terminal's signals to the hook's group do not reach it),
/// with nothing to read and nowhere to write. Not waited for.
fn spawn_worker(
    root: &Path,
    agent: Agent,
    event: Event,
    transcript: &Path,
) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .arg("--repo")
        .arg(root)
        .args([
            "hooks",
            "run",
            event.as_str(),
            "--agent",
            agents::name(agent),
        ])
        .arg("--transcript")
        .arg(transcript)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(child.id())
}

/// The background part: ingest the transcript, then observe the sessions it changed. Its
/// outcome is in telemetry (the ingest's and observe's own events, and one for the hook).
fn work(ctx: &Ctx, agent: Agent, event: Event, transcript: &Path) -> Report {
    let started = Instant::now();
    let mut errors: Vec<String> = Vec::new();
    let mut cards = 0;
    let mut episodes = 0;
    let mut observed = Value::Null;
    let ingest = super::super::sessions::ingest(
        ctx,
        super::super::sessions::IngestArgs {
            paths: vec![transcript.to_path_buf()],
            all: false,
            agent: agent.as_str().to_string(),
            commit: CommitArgs::default(),
        },
    );
    let files: Vec<String> = match &ingest {
        Ok(r) => {
            cards = r.data["cards"].as_u64().unwrap_or(0);
            episodes = r.data["episodes"].as_u64().unwrap_or(0);
            r.data["files"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        }
        Err(e) => {
            errors.push(format!("ingest: {}", e.message));
            Vec::new()
        }
    };
    if !files.is_empty() {
        let observe = super::super::observe::run(
            ctx,
            super::super::observe::Args {
                sessions: files.clone(),
                all: false,
                observer: "auto".to_string(),
                commit: CommitArgs::default(),
            },
        );
        match observe {
            Ok(r) => observed = r.data["counts"].clone(),
            Err(e) => errors.push(format!("observe: {}", e.message)),
        }
    }
    // Claude Code's memory kept in the repository (`install --memory`): committed and read now.
    let mut memory = Value::Null;
    if agent == Agent::Claude
        && let Ok(repo) = ctx.repo()
    {
        match super::memory::sync(ctx, &repo) {
            Ok(m) => memory = m,
            Err(e) => errors.push(format!("memory: {}", e.message)),
        }
    }
    let mut warnings = Vec::new();
    if let Ok(repo) = ctx.repo() {
        let meta = json!({
            "agent": agents::name(agent),
            "transcript": transcript,
            "memory": memory,
            "cards": cards,
            "episodes": episodes,
            "sessions": files,
            "observed": observed,
            "errors": errors,
        });
        warnings.extend(crate::telemetry::emit(
            &repo,
            ctx.now,
            "hooks",
            &format!("{}-ingest", event.as_str()),
            errors.is_empty(),
            started,
            meta,
        ));
    }
    let data = json!({
        "event": event,
        "agent": agents::name(agent),
        "transcript": transcript,
        "cards": cards,
        "episodes": episodes,
        "sessions": files,
        "observed": observed,
        "memory": memory,
        "errors": errors,
    });
    Report::new("hooks_run", data, "").warnings(warnings)
}
