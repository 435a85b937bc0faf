//! pi's extension: `cairn.ts`, written whole by install and deleted by uninstall.
//!
//! pi 0.73 loads every `*.ts` in its agent folder's `extensions/` (`~/.pi/agent/extensions/`,
//! or `$PI_CODING_AGENT_DIR/extensions/`) and in `.pi/extensions/` of the folder it starts in,
//! with no question asked and no trust to give (`core/package-manager.js`
//! `addAutoDiscoveredResources`). A folder that holds an `index.ts`, `index.js` or a
//! `package.json` naming extensions is one extension, and its other files are not loaded
//! ([`shadowed_by`]). A module's default export receives the `pi` API and subscribes with
//! `pi.on`; pi calls it again for every session (a new, resumed or forked session tears the
//! extension runtime down and builds a new one). The one cairn writes
//!
//! - on `session_start` runs `cairn hooks run session-start --agent pi` once and keeps the
//!   briefing for the session;
//! - on `before_agent_start`, which pi fires before every prompt with the system prompt built
//!   afresh from its base (`AgentSession.prompt` resets it each time), returns
//!   `{systemPrompt: event.systemPrompt + "\n\n" + briefing}`: the briefing is in every request,
//!   exactly once. (`session_start`'s return value is dropped: `ExtensionRunner.emit` keeps
//!   results only for `session_before_*` events; and `systemPromptAppend`, which cairn returned
//!   before, exists nowhere in pi 0.73.)
//! - on `agent_start` checks with `ctx.getSystemPrompt()` that the briefing is in the system
//!   prompt pi is about to send, and says so when it is not: the failure is loud, not silent;
//! - on `session_compact` (after a compaction, so the session file holds its `compaction`
//!   entry, cairn's episode) and `session_shutdown` runs `pre-compact` and `session-end`, which
//!   return at once (the ingest runs detached). pi writes the session file only once the model
//!   has answered, so a session that never got an answer is not handed over; a compaction
//!   that ends after pi made its ctx stale (shutdown under `pi -p`) hands over the session
//!   the extension saw last. ADR 98 (the briefing) and ADR 99 (the compaction).
//!
//! Each run gets on stdin the JSON object Claude Code and Codex send (`hook_event_name`,
//! `session_id`, `transcript_path` = `ctx.sessionManager.getSessionFile()`, `cwd` = `ctx.cwd`,
//! `reason`), with a 10 s timeout, running cairn by the absolute path install was run as
//! (`const CAIRN`, which `cairn doctor` reads). What goes wrong (that binary gone, a timeout, the hook's
//! own complaints on stderr) is shown to the person (`ctx.ui.notify`, or stderr under `pi -p`)
//! and never thrown into pi. The file is plain JavaScript inside (no type annotations), so it
//! loads as TypeScript in pi and as an ES module in node, which is how the tests run it.

use std::path::Path;

use super::{Event, Outcome};
use crate::error::{Error, Result};
use crate::files;

/// The extension's file name.
pub const FILE_NAME: &str = "cairn.ts";

/// The first line, by which uninstall knows the file is cairn's.
pub const MARK: &str = "// cairn: agent hooks for pi";

/// The extension that runs the binary `exe` for the knowledge repository at `repo_root`.
pub fn extension(exe: &Path, repo_root: &Path) -> String {
    let exe = serde_json::to_string(&exe.to_string_lossy()).expect("a string serializes");
    let repo = serde_json::to_string(&repo_root.to_string_lossy()).expect("a string serializes");
    TEMPLATE
        .replacen("{MARK}", MARK, 1)
        .replacen("{CAIRN}", &exe, 1)
        .replacen("{REPO}", &repo, 1)
}

/// The extension's text; `{MARK}`, `{CAIRN}` and `{REPO}` are filled in by [`extension`].
const TEMPLATE: &str = r#"{MARK} (written by `cairn hooks install --agent pi`; `cairn hooks uninstall --agent pi` removes it).
// Once a session cairn's briefing is fetched (session_start) and added to the system prompt of
// every prompt (before_agent_start: pi rebuilds the system prompt from its base each time, so
// it is there once); agent_start checks that it is. After a compaction and at shutdown the
// session file goes to cairn, which ingests and observes it in the background.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const CAIRN = {CAIRN};
const REPO = {REPO};

function cairn(event, input, ctx) {
  let run;
  try {
    run = spawnSync(CAIRN, ["--repo", REPO, "hooks", "run", event, "--agent", "pi"], {
      input: JSON.stringify(input),
      encoding: "utf8",
      timeout: 10000,
    });
  } catch (e) {
    say(ctx, `${event}: cannot run cairn: ${e && e.message ? e.message : e}`);
    return "";
  }
  if (run.error) {
    say(ctx, `${event}: cannot run cairn: ${run.error.message}`);
    return "";
  }
  const complaint = typeof run.stderr === "string" ? run.stderr.trim() : "";
  if (complaint) say(ctx, complaint.replace(/^cairn: /, ""));
  if (run.status !== 0) {
    if (!complaint) say(ctx, `${event}: cairn exited ${run.status ?? run.signal}`);
    return "";
  }
  return typeof run.stdout === "string" ? run.stdout.trim() : "";
}

function say(ctx, message) {
  const line = `cairn: ${message}`;
  try {
    if (ctx && ctx.hasUI && ctx.ui && ctx.ui.notify) return ctx.ui.notify(line, "warning");
  } catch {}
  console.error(line);
}

// The session as ctx tells it, or null once pi has made ctx stale (it does at shutdown, and a
// compaction that finishes after it then finds the ctx it was given stale).
function session(ctx) {
  try {
    const sessions = ctx.sessionManager;
    return {
      session_id: sessions.getSessionId() ?? null,
      transcript_path: sessions.getSessionFile() ?? null,
      cwd: ctx.cwd || process.cwd(),
    };
  } catch {
    return null;
  }
}

export default function (pi) {
  let briefing = null;
  let known = { session_id: null, transcript_path: null, cwd: process.cwd() };
  const input = (name, reason, ctx) => {
    known = session(ctx) ?? known;
    return { hook_event_name: name, ...known, reason: reason ?? null };
  };
  const brief = (reason, ctx) => {
    if (briefing === null) briefing = cairn("session-start", input("session_start", reason, ctx), ctx);
    return briefing;
  };
  const handOver = (event, name, reason, ctx) => {
    const file = input(name, reason, ctx);
    if (file.transcript_path && existsSync(file.transcript_path)) cairn(event, file, ctx);
  };
  pi.on("session_start", async (event, ctx) => {
    briefing = null;
    brief(event && event.reason, ctx);
  });
  pi.on("before_agent_start", async (event, ctx) => {
    const text = brief(null, ctx);
    const base = event && typeof event.systemPrompt === "string" ? event.systemPrompt : "";
    if (!text || base.includes(text)) return undefined;
    return { systemPrompt: base ? `${base}\n\n${text}` : text };
  });
  pi.on("agent_start", async (event, ctx) => {
    if (!briefing || !ctx || typeof ctx.getSystemPrompt !== "function") return;
    let prompt = null;
    try {
      prompt = ctx.getSystemPrompt();
    } catch {}
    if (typeof prompt === "string" && !prompt.includes(briefing)) {
      say(ctx, `pi did not put the briefing (${briefing.length} characters) into its system prompt: this pi is not the one cairn's extension was written for`);
    }
  });
  pi.on("session_compact", async (event, ctx) => {
    handOver("pre-compact", "session_compact", "compact", ctx);
  });
  pi.on("session_shutdown", async (event, ctx) => {
    handOver("session-end", "session_shutdown", event && event.reason, ctx);
  });
}
"#;

/// The file in the extension folder `dir` that makes pi load it as one extension, so that it
/// never loads `cairn.ts` beside it: an `index.ts` or `index.js`, or a `package.json` whose
/// `pi.extensions` names files of which one exists (pi 0.73 `resolveExtensionEntries`), unless
/// one of those is `cairn.ts` itself.
pub fn shadowed_by(dir: &Path) -> Option<std::path::PathBuf> {
    let manifest = dir.join("package.json");
    if let Ok(text) = std::fs::read_to_string(&manifest)
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(list) = value["pi"]["extensions"].as_array()
    {
        let named: Vec<std::path::PathBuf> = list
            .iter()
            .filter_map(|v| v.as_str())
            .map(|p| dir.join(p))
            .filter(|p| p.exists())
            .collect();
        if !named.is_empty() {
            let ours = dir.join(FILE_NAME);
            return (!named.contains(&ours)).then_some(manifest);
        }
    }
    ["index.ts", "index.js"]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// Writes the extension, unless it is there as it would be written; a file of that name that
/// is not cairn's is an error, never overwritten.
pub fn install(file: &Path, exe: &Path, repo_root: &Path) -> Result<Outcome> {
    let want = extension(exe, repo_root);
    let existing = files::read_optional(file)?;
    if let Some(text) = &existing
        && !text.starts_with(MARK)
    {
        return Err(Error::bad_input(format!(
            "{} exists and is not cairn's extension",
            file.display()
        ))
        .with_fix("move it away, then run this again"));
    }
    let changed = existing.as_deref() != Some(want.as_str());
    if changed {
        files::write_atomic(file, want.as_bytes())?;
    }
    Ok(Outcome {
        file: file.to_path_buf(),
        changed,
        created: existing.is_none(),
        deleted: false,
        events: Event::ALL.to_vec(),
    })
}

/// Deletes the extension if it is cairn's.
pub fn uninstall(file: &Path) -> Result<Outcome> {
    let mut outcome = Outcome {
        file: file.to_path_buf(),
        changed: false,
        created: false,
        deleted: false,
        events: Vec::new(),
    };
    match files::read_optional(file)? {
        Some(text) if text.starts_with(MARK) => {
            std::fs::remove_file(file).map_err(|e| Error::io(file.display(), &e))?;
            outcome.changed = true;
            outcome.deleted = true;
            outcome.events = Event::ALL.to_vec();
            super::remove_empty_parents(file);
        }
        Some(_) => {
            return Err(Error::bad_input(format!(
                "{} is not cairn's extension; nothing removed",
                file.display()
            ))
            .with_fix("remove it yourself if you no longer want it"));
        }
        None => {}
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_names_the_repository_as_a_js_string() {
        let text = extension(Path::new("/opt/cairn"), Path::new("/home/a \"b\"/repo"));
        assert!(text.starts_with(MARK));
        assert!(
            text.contains(r#"const REPO = "/home/a \"b\"/repo";"#),
            "{text}"
        );
        assert!(text.contains(r#"const CAIRN = "/opt/cairn";"#), "{text}");
        assert!(text.contains("spawnSync(CAIRN, "), "{text}");
        for event in [
            "session_start",
            "before_agent_start",
            "agent_start",
            "session_compact",
            "session_shutdown",
        ] {
            assert!(text.contains(&format!("pi.on(\"{event}\"")), "{event}");
        }
        // pi 0.73 has no systemPromptAppend, and drops what session_start returns.
        assert!(!text.contains("systemPromptAppend"));
        assert!(!text.contains("{MARK}") && !text.contains("{REPO}") && !text.contains("{CAIRN}"));
    }

    #[test]
    fn an_index_or_a_manifest_in_the_folder_shadows_cairn_ts() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(shadowed_by(d), None);
        std::fs::write(d.join("cairn.ts"), "x").unwrap();
        std::fs::write(d.join("package.json"), r#"{"name": "mine"}"#).unwrap();
        assert_eq!(shadowed_by(d), None, "a package.json without pi.extensions");
        std::fs::write(d.join("index.js"), "x").unwrap();
        assert_eq!(shadowed_by(d), Some(d.join("index.js")));
        std::fs::write(d.join("index.ts"), "x").unwrap();
        assert_eq!(shadowed_by(d), Some(d.join("index.ts")));
        std::fs::write(d.join("a.ts"), "x").unwrap();
        std::fs::write(
            d.join("package.json"),
            r#"{"pi": {"extensions": ["a.ts"]}}"#,
        )
        .unwrap();
        assert_eq!(shadowed_by(d), Some(d.join("package.json")));
        std::fs::write(
            d.join("package.json"),
            r#"{"pi": {"extensions": ["a.ts", "cairn.ts"]}}"#,
        )
        .unwrap();
        assert_eq!(shadowed_by(d), None, "the manifest names cairn.ts");
    }
}
