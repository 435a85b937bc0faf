//! cairn with the real coding agents: Claude Code, Codex and pi, installed from npm at the
//! versions pinned in tests/agents/package-lock.json, each run headless against a local mock
//! model server (tests/agents/lib.mjs) that logs every request. Each agent's scenarios are in
//! tests/agents/<agent>.test.mjs and assert from that log what the model actually received:
//! the briefing, a MEMORY.md at the agent's budget whole, an MCP tool call's result; and from
//! the knowledge repository what cairn stored (the agent's transcript as cards, the episode of
//! a compaction), and that uninstall gives back each settings file byte for byte.
//!
//! They need node and tests/agents/node_modules: `.ci/run` installs both and sets
//! `CAIRN_AGENT_TESTS=required`, under which their absence fails the test, saying how to
//! install them. Without that variable (a fresh machine running the README's `cargo test`, with
//! no network for npm) each says on stderr that it did not run, and why.

use std::path::{Path, PathBuf};

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// Runs one agent's scenarios with `node --test`, or says why it could not.
fn run_agent(file: &str, package: &str) {
    let install = "run .ci/run's install step: `apt-get install -y nodejs npm && npm ci --prefix \
                   tests/agents`";
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = if !node_ok {
        Some("no node on PATH".to_string())
    } else if !agents_dir().join("node_modules").join(package).exists() {
        Some(format!("no tests/agents/node_modules/{package}"))
    } else {
        None
    };
    if let Some(missing) = missing {
        let required = std::env::var_os("CAIRN_AGENT_TESTS").is_some_and(|v| v == "required");
        assert!(!required, "{missing}: {install}");
        eprintln!("{file} did NOT run: {missing}; to run it, {install}");
        return;
    }
    let out = std::process::Command::new("node")
        .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
        .arg(agents_dir().join(file))
        .env("CAIRN_BIN", env!("CARGO_BIN_EXE_cairn"))
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{file} failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

#[test]
fn claude_code_for_real() {
    run_agent("claude.test.mjs", "@anthropic-ai/claude-code");
}

#[test]
fn codex_for_real() {
    run_agent("codex.test.mjs", "@openai/codex");
}

#[test]
fn pi_for_real() {
    run_agent("pi.test.mjs", "@mariozechner/pi-coding-agent");
}

/// What Claude Code and Codex hand their model from cairn's MCP recall (issue 31, ADR 88).
#[test]
fn the_mcp_note_reaches_the_models_of_claude_code_and_codex() {
    run_agent("mcp-note.test.mjs", "@anthropic-ai/claude-code");
}

/// A settings.json with a byte order mark: cairn edits it, Claude Code runs its hooks.
#[test]
fn a_settings_file_with_a_byte_order_mark_works_in_claude_code() {
    run_agent("settings-bom.test.mjs", "@anthropic-ai/claude-code");
}

/// The briefing fitted to what Claude Code and Codex keep reaches the model whole; unfitted,
/// the agent cuts it (ADRs 84, 85).
#[test]
fn briefings_fit_the_real_agents() {
    run_agent("budget.test.mjs", "@openai/codex");
}

// `cairn mcp install` from a project folder: Claude Code's `mcp list` connects, Codex's `mcp
// get` shows it enabled; uninstall gives each file back (issue 31, item 4).
#[test]
fn mcp_install_for_real() {
    run_agent("mcp.test.mjs", "@anthropic-ai/claude-code");
}

/// The schema of Codex's memories database that cairn reads is the real one (ADR 135).
#[test]
fn codex_memories_schema_is_the_real_codex_one() {
    run_agent("codex-memories.test.mjs", "@openai/codex");
}

/// A memory the real Claude Code writes into its auto memory folder is read into cairn.
#[test]
fn claude_codes_own_memory_is_read_into_cairn() {
    run_agent("claude-memory.test.mjs", "@anthropic-ai/claude-code");
}
