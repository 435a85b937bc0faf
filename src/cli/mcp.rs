//! `cairn mcp`: the knowledge repository served to agents over the Model Context Protocol;
//! `cairn mcp install|uninstall --agent AGENT`: the server registered in an agent's own
//! configuration ([`crate::hooks::agents::mcp`] decides what is written).
//!
//! The server itself is [`crate::mcp`]; this finds the repository once, before serving, so a
//! server started in the wrong place fails at once with the fix on stderr, rather than
//! answering every call with the same error.

use std::path::PathBuf;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::hooks::agents::{self, Agent, Scope, mcp};
use crate::output::{Next, Report};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Register the server with an agent (`BIN --repo KB mcp`, both absolute, so that it
    /// starts from every folder): Claude Code's ~/.claude.json (user scope) or a project's
    /// .mcp.json, Codex's $CODEX_HOME/config.toml
    Install(Target),
    /// Remove exactly what `cairn mcp install` added, giving the file back as it was
    Uninstall(Target),
}

#[derive(Debug, clap::Args)]
pub struct Target {
    /// claude-code or codex
    #[arg(long, value_name = "AGENT")]
    pub agent: String,
    /// The person's own configuration, for every folder [the default]
    #[arg(long, conflicts_with = "project")]
    pub global: bool,
    /// The project in DIR instead (Claude Code: DIR/.mcp.json; Codex: DIR/.codex/config.toml,
    /// read only in a trusted project)
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// `mcp install` and `mcp uninstall`.
pub fn manage(ctx: &Ctx, action: Action) -> Result<Report> {
    match action {
        Action::Install(t) => install(ctx, &t),
        Action::Uninstall(t) => uninstall(ctx, &t),
    }
}

fn agent(name: &str) -> Result<Agent> {
    name.parse::<Agent>().map_err(|_| {
        Error::bad_input(format!("unknown agent {name:?}"))
            .with_fix("use --agent claude-code or --agent codex")
    })
}

fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The file to edit, and the scope's name.
fn target_file(ctx: &Ctx, agent: Agent, target: &Target) -> Result<(PathBuf, &'static str)> {
    let (scope, name) = match &target.project {
        Some(dir) => {
            let dir = ctx.cwd.join(dir);
            if !dir.is_dir() {
                return Err(Error::bad_input(format!(
                    "--project {}: not a folder",
                    dir.display()
                )));
            }
            (Scope::Project(dir.canonicalize().unwrap_or(dir)), "project")
        }
        None => {
            let home = var("HOME").ok_or_else(|| {
                Error::bad_input("HOME is not set: cannot find the agent's configuration")
                    .with_fix("set HOME, or register in a project with --project DIR")
            })?;
            let scope = Scope::Global {
                home,
                codex_home: var("CODEX_HOME"),
                pi_agent_dir: var("PI_CODING_AGENT_DIR"),
            };
            (scope, "global")
        }
    };
    let claude_dir = var("CLAUDE_CONFIG_DIR");
    Ok((
        mcp::config_file(agent, &scope, claude_dir.as_deref())?,
        name,
    ))
}

fn install(ctx: &Ctx, target: &Target) -> Result<Report> {
    let agent = agent(&target.agent)?;
    let (file, scope) = target_file(ctx, agent, target)?;
    let repo = ctx.repo()?;
    let root = repo
        .root()
        .canonicalize()
        .unwrap_or_else(|_| repo.root().to_path_buf());
    let exe = super::invoked_exe(&ctx.cwd)?;
    let outcome = mcp::install(agent, &file, &exe, &root)?;
    let line = mcp::command_line(&exe, &root);
    let shown: Vec<String> = line.iter().map(|w| agents::shell_word(w)).collect();
    let name = agents::name(agent);
    let human = if outcome.changed {
        format!(
            "registered cairn's MCP server with {name} in {}: {}",
            file.display(),
            shown.join(" ")
        )
    } else {
        format!(
            "cairn's MCP server is already registered with {name} in {}; nothing changed",
            file.display()
        )
    };
    // A local-scope `cairn` (the README's old `claude mcp add cairn -- cairn mcp`) wins over
    // the user scope in its folder.
    let mut warnings = Vec::new();
    if agent == Agent::Claude && target.project.is_none() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for folder in mcp::claude_shadowing(&text) {
            warnings.push(format!(
                "in {folder}, Claude Code starts the local-scope server named cairn instead of this one: run `claude mcp remove cairn --scope local` there"
            ));
        }
    }
    let check = match agent {
        Agent::Codex => "codex mcp get cairn",
        _ => "claude mcp list",
    };
    let project = target
        .project
        .as_ref()
        .map(|_| format!(" --project {}", agents::shell_word(&file_dir(&file, agent))))
        .unwrap_or_default();
    let data = json!({
        "agent": name,
        "scope": scope,
        "file": outcome.file,
        "changed": outcome.changed,
        "created": outcome.created,
        "server": mcp::SERVER,
        "command": line,
        "repo": root,
    });
    Ok(Report::new("mcp_install", data, human)
        .warnings(warnings)
        .next(Next::new(check, "see the server the agent will start"))
        .next(Next::new(
            format!("cairn mcp uninstall --agent {name}{project}"),
            "remove exactly what this added",
        )))
}

/// The project folder of a project-scope file, for the `next` suggestion.
fn file_dir(file: &std::path::Path, agent: Agent) -> String {
    let up = if agent == Agent::Codex { 2 } else { 1 };
    file.ancestors()
        .nth(up)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn uninstall(ctx: &Ctx, target: &Target) -> Result<Report> {
    let agent = agent(&target.agent)?;
    let (file, scope) = target_file(ctx, agent, target)?;
    let outcome = mcp::uninstall(agent, &file)?;
    let name = agents::name(agent);
    let human = if !outcome.changed {
        format!("no cairn MCP server in {}; nothing changed", file.display())
    } else if outcome.deleted {
        format!(
            "removed cairn's MCP server from {name}: deleted {} (install had made it)",
            file.display()
        )
    } else {
        format!(
            "removed cairn's MCP server from {name}'s {}",
            file.display()
        )
    };
    let data = json!({
        "agent": name,
        "scope": scope,
        "file": outcome.file,
        "changed": outcome.changed,
        "deleted": outcome.deleted,
    });
    Ok(Report::new("mcp_uninstall", data, human))
}
