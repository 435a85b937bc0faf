//! What `cairn doctor` checks in the agents' configuration: that every binary an installed
//! hook or MCP registration of cairn's runs by its absolute path ([`super::exe`]) is still
//! there. A binary moved or removed (a `cargo install` into another root, a checkout's
//! `target/` cleaned) would otherwise fail each hook with `not found` while the agent's turn
//! goes on and nothing is ingested.
//!
//! Reads only; a file that is missing or that cairn cannot read is skipped (install reports
//! those).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Agent, Scope, exe, mcp, pi};

/// A file holding a command of cairn's whose binary is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gone {
    /// The agent's file.
    pub file: PathBuf,
    /// The binary it runs.
    pub binary: PathBuf,
    /// The command that writes the file again with this binary's path.
    pub fix: String,
}

/// The files of every agent in `scope`, with the command that rewrites each.
fn files(scope: &Scope, claude_config_dir: Option<&Path>) -> Vec<(PathBuf, Agent, bool)> {
    let mut out = Vec::new();
    for agent in [Agent::Claude, Agent::Codex, Agent::Pi] {
        out.push((super::config_file(agent, scope), agent, false));
        if let Ok(file) = mcp::config_file(agent, scope, claude_config_dir) {
            out.push((file, agent, true));
        }
    }
    out
}

/// The binaries that cairn's entries in `text` (a file of `agent`'s, hooks or MCP) run.
fn binaries(agent: Agent, mcp_file: bool, text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if agent == Agent::Pi {
        // `const CAIRN = "…";` of the extension.
        if text.starts_with(pi::MARK) {
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("const CAIRN = ")
                    && let Ok(path) = serde_json::from_str::<String>(rest.trim_end_matches(';'))
                {
                    out.push(PathBuf::from(path));
                }
            }
        }
    } else if mcp_file && agent == Agent::Codex {
        if let Ok(table) = toml::from_str::<toml::Table>(text)
            && let Some(entry) = table.get("mcp_servers").and_then(|s| s.get(mcp::SERVER))
            && let Some(command) = entry.get("command").and_then(|c| c.as_str())
            && entry
                .get("args")
                .and_then(|a| a.as_array())
                .is_some_and(|a| a.last().and_then(|l| l.as_str()) == Some("mcp"))
        {
            out.push(PathBuf::from(command));
        }
    } else if let Ok(value) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
        if mcp_file {
            let entry = &value["mcpServers"][mcp::SERVER];
            if let Some(command) = entry["command"].as_str()
                && entry["args"].as_array().and_then(|a| a.last()) == Some(&Value::from("mcp"))
            {
                out.push(PathBuf::from(command));
            }
        } else if let Some(events) = value["hooks"].as_object() {
            for groups in events.values().filter_map(Value::as_array) {
                for hook in groups
                    .iter()
                    .filter_map(|g| g["hooks"].as_array())
                    .flatten()
                {
                    if let Some(command) = hook["command"].as_str()
                        && super::is_ours(agent, command)
                        && let Some(program) = exe::program_of(command)
                    {
                        out.push(program);
                    }
                }
            }
        }
    }
    out.retain(|p| p.is_absolute());
    out.sort();
    out.dedup();
    out
}

/// Every binary gone that a file of `scope` runs, with the fix; `flags` names the scope again
/// (` --global`, ` --project DIR`).
pub fn gone(scope: &Scope, claude_config_dir: Option<&Path>, flags: &str) -> Vec<Gone> {
    let mut out = Vec::new();
    for (file, agent, mcp_file) in files(scope, claude_config_dir) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for binary in binaries(agent, mcp_file, &text) {
            if binary.is_file() {
                continue;
            }
            let noun = if mcp_file { "mcp" } else { "hooks" };
            out.push(Gone {
                file: file.clone(),
                binary,
                fix: format!("cairn {noun} install --agent {}{flags}", super::name(agent)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_read_from_each_form() {
        let hooks = r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"/old/cairn --repo /kb hooks run session-start --agent claude-code"}]},{"hooks":[{"type":"command","command":"/bin/other"}]}]}}"#;
        assert_eq!(
            binaries(Agent::Claude, false, hooks),
            vec![PathBuf::from("/old/cairn")]
        );
        let mcp = r#"{"mcpServers":{"cairn":{"type":"stdio","command":"/old/cairn","args":["--repo","/kb","mcp"],"env":{}}}}"#;
        assert_eq!(
            binaries(Agent::Claude, true, mcp),
            vec![PathBuf::from("/old/cairn")]
        );
        let toml = "[mcp_servers.cairn]\ncommand = \"/old/cairn\"\nargs = [\"--repo\", \"/kb\", \"mcp\"]\n";
        assert_eq!(
            binaries(Agent::Codex, true, toml),
            vec![PathBuf::from("/old/cairn")]
        );
        let ext = pi::extension(Path::new("/old/cairn"), Path::new("/kb"));
        assert_eq!(
            binaries(Agent::Pi, false, &ext),
            vec![PathBuf::from("/old/cairn")]
        );
        // Bare `cairn` from PATH (an install before absolute paths) names no file to check.
        let bare = r#"{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"cairn --repo /kb hooks run session-end --agent codex"}]}]}}"#;
        assert!(binaries(Agent::Codex, false, bare).is_empty());
    }
}
