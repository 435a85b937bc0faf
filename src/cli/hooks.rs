//! `cairn hooks install`, `cairn hooks uninstall` and `cairn hooks run EVENT`; with `--agent`,
//! the agent session hooks of [`agent`].

mod agent;
pub(crate) mod memory;
mod schedule;

use std::path::Path;

use serde_json::json;

use super::{CommitArgs, Ctx};
use crate::error::{Error, Result};
use crate::git;
use crate::hooks;
use crate::output::{self, Next, Report, Status};
use crate::repo::Repo;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write the git hook scripts into hooks/ and point git's core.hooksPath there; the hooks
    /// that ran before (the previous core.hooksPath, or .git/hooks) still run, first. With
    /// --agent: add cairn's session hooks to that agent's configuration
    Install(InstallArgs),
    /// Point core.hooksPath back where it was before `cairn hooks install`; with --agent:
    /// remove exactly what `cairn hooks install --agent` added; with --schedule: remove the
    /// maintain timer
    Uninstall(UninstallArgs),
    /// Run the hook for EVENT: the previous hook of that name, then cairn's part (pre-commit:
    /// refuse a commit that stages a secret or a malformed ADR, MEMORY.md or JSONL line;
    /// post-commit, post-merge: update the index in the background; with --agent:
    /// session-start, pre-compact, session-end)
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub commit: CommitArgs,
    #[command(flatten)]
    pub agent: agent::Target,
    /// Instead of the git hooks: run `cairn maintain` on a timer (hourly, daily or weekly): a
    /// systemd user timer where systemd runs, else the crontab line to add
    #[arg(long, value_name = "EVERY", conflicts_with = "agent")]
    pub schedule: Option<String>,
    /// With --schedule: systemd, cron, or auto (systemd when /run/systemd/system exists)
    #[arg(long, default_value = "auto", requires = "schedule")]
    pub scheduler: String,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub agent: agent::Target,
    /// Instead of the git hooks: remove the maintain timer (`install --schedule`)
    #[arg(long, conflicts_with = "agent")]
    pub schedule: bool,
    /// With --schedule: systemd, cron, or auto (systemd when /run/systemd/system exists)
    #[arg(long, default_value = "auto", requires = "schedule")]
    pub scheduler: String,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The hook event (a git hook name: pre-commit, commit-msg, pre-push, …)
    pub event: String,
    #[command(flatten)]
    pub agent: agent::RunTarget,
    /// What git passes to the hook (handed to the chained hook)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Install(a) if a.agent.agent.is_some() => agent::install(ctx, &a.agent, a.commit),
        Command::Install(InstallArgs {
            schedule: Some(every),
            scheduler,
            ..
        }) => schedule::install(ctx, &every, &scheduler),
        Command::Install(_) => install(ctx),
        Command::Uninstall(u) if u.agent.agent.is_some() => agent::uninstall(ctx, &u.agent),
        Command::Uninstall(u) if u.schedule => schedule::uninstall(ctx, &u.scheduler),
        Command::Uninstall(_) => uninstall(ctx),
        Command::Run(args) if args.agent.agent.is_some() => {
            agent::run(ctx, &args.event, &args.agent)
        }
        Command::Run(args) => {
            if !hooks::GIT_HOOKS.contains(&args.event.as_str()) {
                return Err(
                    Error::bad_input(format!("unknown hook event {:?}", args.event)).with_fix(
                        format!(
                            "use a git hook name; cairn acts on {} and runs the hooks it chained \
                             for the others",
                            hooks::EVENTS.join(", ")
                        ),
                    ),
                );
            }
            run_event(ctx, &args)
        }
    }
}

/// A folder for people: relative to the git work tree when inside it.
fn shown(dir: &Path, repo: &Repo) -> String {
    let work = git::work_tree_of(repo.root()).and_then(|w| w.canonicalize().ok());
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match work.as_deref().and_then(|w| dir.strip_prefix(w).ok()) {
        Some(rel) => rel.display().to_string(),
        None => dir.display().to_string(),
    }
}

fn install(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let mut written: Vec<String> = hooks::write_pre_commit(repo.root())?.into_iter().collect();
    // The scripts first, then core.hooksPath: git never points at a folder lacking one.
    let state = git::hooks_state(repo.root())?;
    let chained_dir = state.chained_dir();
    let chained = chained_dir
        .as_deref()
        .map(hooks::chainable)
        .unwrap_or_default();
    let others = other_scripts(&chained);
    let scripts = hooks::write_scripts(repo.root(), &others)?;
    written.extend(scripts.written);
    let commit = ctx.commit(&repo, &written, "hooks: install the git hooks")?;
    let path = git::set_hooks_path(repo.root())?;
    let dir_shown = chained_dir.as_deref().map(|d| shown(d, &repo));
    let warnings: Vec<String> = scripts
        .own
        .iter()
        .map(|event| own_script_warning(event, &chained, dir_shown.as_deref()))
        .collect();
    let mut human = if written.is_empty() && !path.changed {
        format!("hooks already installed (core.hooksPath = {})", path.value)
    } else if written.is_empty() {
        format!("installed: core.hooksPath = {}", path.value)
    } else {
        format!(
            "installed {} (core.hooksPath = {}, {})",
            written.join(", "),
            path.value,
            ctx.short(&commit)
        )
    };
    if let (Some(dir), false) = (&dir_shown, chained.is_empty()) {
        human.push_str(&format!(
            "\nthe hooks in {dir} still run, first: {}",
            chained.join(", ")
        ));
    }
    let data = json!({
        "written": written,
        "hooks_path": path.value,
        "config_changed": path.changed,
        "previous_hooks_path": path.previous,
        "chained_dir": chained_dir,
        "chained": chained,
        "commit": commit,
    });
    Ok(Report::new("hooks_install", data, human)
        .warnings(warnings)
        .next(Next::new(
            "cairn hooks uninstall",
            "point core.hooksPath back where it was",
        )))
}

/// The scripts install writes besides pre-commit: cairn's background index update, and one per
/// hook of the previous folder.
fn other_scripts(chained: &[String]) -> Vec<String> {
    let mut events: Vec<String> = hooks::background::EVENTS
        .iter()
        .map(|e| e.to_string())
        .collect();
    for e in chained {
        if e != "pre-commit" && !events.contains(e) {
            events.push(e.clone());
        }
    }
    events
}

/// What a person's own script in hooks/ (one that does not call cairn) keeps from running.
fn own_script_warning(event: &str, chained: &[String], dir: Option<&str>) -> String {
    let mut lost = Vec::new();
    if chained.iter().any(|c| c == event) {
        lost.push(format!("{}/{event} runs", dir.unwrap_or_default()));
    }
    if hooks::background::EVENTS.contains(&event) {
        lost.push("the index is brought up to date in the background".to_string());
    }
    format!(
        "hooks/{event} is your own script: {} only if it runs `cairn hooks run {event}`",
        lost.join(", and ")
    )
}

fn uninstall(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let restored = git::restore_hooks_path(repo.root())?;
    let now = match &restored.hooks_path {
        Some(v) => format!("core.hooksPath = {v}"),
        None => "core.hooksPath unset: git runs the hooks in .git/hooks".to_string(),
    };
    let human = if restored.was_installed {
        format!("uninstalled cairn's hooks ({now})")
    } else {
        format!("cairn's hooks are not installed ({now}); nothing changed")
    };
    let data = json!({
        "hooks_path": restored.hooks_path,
        "config_changed": restored.was_installed,
    });
    Ok(Report::new("hooks_uninstall", data, human))
}

fn run_event(ctx: &Ctx, args: &RunArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let event = args.event.as_str();
    // The background update starts before any chained hook: that hook neither holds it up nor,
    // failing, loses it.
    let index = hooks::background::EVENTS
        .contains(&event)
        .then(|| start_index(&repo));
    // Chain only when git runs cairn's hooks, and never from inside a chained hook.
    let chained = if std::env::var_os(hooks::CHAIN_GUARD).is_some() {
        None
    } else {
        let state = git::hooks_state(repo.root())?;
        match state.chained_dir().filter(|_| state.installed()) {
            Some(dir) => hooks::run_chained(&dir, event, &args.rest)?,
            None => None,
        }
    };
    if let Some(c) = chained.as_ref().filter(|c| !c.ok()) {
        let how = match c.code {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        };
        output::notice(&format!(
            "cairn: {} failed ({how}); the {event} hook stops here",
            shown(&c.hook, &repo)
        ));
        let mut data = json!({ "event": event, "chained": c });
        if let Some(pid) = index {
            data["index_pid"] = json!(pid);
        }
        return Ok(Report::new("hooks_run", data, "").status(Status::NothingOrFailed));
    }
    let mut data = json!({ "event": event, "chained": chained });
    if let Some(pid) = index {
        data["index_pid"] = json!(pid);
    }
    match event {
        "pre-commit" => pre_commit(&repo, chained),
        _ => Ok(Report::new("hooks_run", data, "")),
    }
}

/// Starts the background index update; one that cannot start is said on stderr and never
/// fails the git command (the next read brings the index up to date anyway).
fn start_index(repo: &Repo) -> Option<u32> {
    match hooks::background::spawn_index(repo) {
        Ok(pid) => Some(pid),
        Err(e) => {
            output::notice(&format!(
                "cairn: {e}; the index is brought up to date at the next read instead"
            ));
            None
        }
    }
}

fn pre_commit(repo: &Repo, chained: Option<hooks::Chained>) -> Result<Report> {
    let scan = hooks::pre_commit(repo)?;
    let lint = hooks::lint::staged(repo)?;
    let data = json!({
        "event": "pre-commit",
        "chained": chained,
        "scanned": scan.scanned,
        "secrets": scan.secrets,
        "linted": lint.checked,
        "problems": lint.problems,
    });
    // Words for the person at `git commit`, on stderr; the secrets themselves never appear.
    let advice: Vec<String> = lint.advice.iter().map(|p| p.to_string()).collect();
    if scan.secrets.is_empty() && lint.problems.is_empty() {
        return Ok(Report::new("hooks_run", data, "").warnings(advice));
    }
    let mut found = Vec::new();
    if !scan.secrets.is_empty() {
        found.push(output::count(scan.secrets.len(), "staged secret"));
    }
    if !lint.problems.is_empty() {
        found.push(output::count(lint.problems.len(), "problem"));
    }
    output::notice(&format!(
        "cairn: {}; the commit is refused",
        found.join(" and ")
    ));
    for s in &scan.secrets {
        output::notice(&format!("{}:{}: {}", s.path, s.line, s.kind));
    }
    for p in &lint.problems {
        output::notice(&p.to_string());
    }
    if !scan.secrets.is_empty() {
        output::notice("  to fix: unstage it, or redact it; cairn never commits a secret");
    }
    if !lint.problems.is_empty() {
        output::notice(
            "  to fix: correct the staged file and `git add` it again (`cairn adr lint`, \
             `cairn memory lint` check the working files)",
        );
    }
    let next = if scan.secrets.is_empty() {
        Next::new(
            "cairn adr lint",
            "check the decision records in the working tree",
        )
    } else {
        Next::new(
            "git restore --staged PATH",
            "unstage a file that holds a secret",
        )
    };
    Ok(Report::new("hooks_run", data, "")
        .warnings(advice)
        .status(Status::NothingOrFailed)
        .next(next))
}
