//! pi's extension: `cairn.ts`, written whole by install and deleted by uninstall.
//!
//! pi loads every `*.ts` in `~/.pi/agent/extensions/` and a trusted project's
//! `.pi/extensions/` (pi-mono `packages/coding-agent/docs/extensions.md`, "Extension
//! Locations"); a module's default export receives the `pi` API and subscribes with `pi.on`.
//! The one cairn writes
//!
//! - on `session_start` runs `cairn hooks run session-start --agent pi` and returns its
//!   output as `systemPromptAppend` (the documented way for `session_start` to add
//!   session-scoped instructions to the system prompt);
//! - on `session_before_compact` and `session_shutdown` runs `pre-compact` and
//!   `session-end`, which return at once (the ingest runs detached), and returns nothing, so
//!   compaction and shutdown go on as they would.
//!
//! Each run gets on stdin the JSON object Claude Code and Codex send (`hook_event_name`,
//! `session_id`, `transcript_path` = `ctx.sessionManager.getSessionFile()`, `cwd`, `reason`),
//! with a 10 s timeout; a failure yields no text and never an exception in pi. The file is
//! plain JavaScript inside (no type annotations), so it loads as TypeScript in pi and as an ES
//! module in node, which is how the tests run it.

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
    format!(
        r#"{MARK} (written by `cairn hooks install --agent pi`; `cairn hooks uninstall --agent pi` removes it).
// The briefing goes in at session start (systemPromptAppend); before a compaction and at
// shutdown the session file goes to cairn, which ingests and observes it in the background.
import {{ spawnSync }} from "node:child_process";

const CAIRN = {exe};
const REPO = {repo};

function cairn(event, input) {{
  try {{
    const run = spawnSync(CAIRN, ["--repo", REPO, "hooks", "run", event, "--agent", "pi"], {{
      input: JSON.stringify(input),
      encoding: "utf8",
      timeout: 10000,
    }});
    return run.status === 0 && typeof run.stdout === "string" ? run.stdout.trim() : "";
  }} catch {{
    return "";
  }}
}}

function input(name, event, ctx) {{
  const sessions = ctx && ctx.sessionManager;
  return {{
    hook_event_name: name,
    session_id: sessions && sessions.getSessionId ? sessions.getSessionId() : null,
    transcript_path: sessions && sessions.getSessionFile ? sessions.getSessionFile() ?? null : null,
    cwd: ctx && ctx.cwd ? ctx.cwd : process.cwd(),
    reason: event && event.reason ? event.reason : null,
  }};
}}

export default function (pi) {{
  pi.on("session_start", async (event, ctx) => {{
    const text = cairn("session-start", input("session_start", event, ctx));
    return text ? {{ systemPromptAppend: text }} : undefined;
  }});
  pi.on("session_before_compact", async (event, ctx) => {{
    cairn("pre-compact", input("session_before_compact", event, ctx));
  }});
  pi.on("session_shutdown", async (event, ctx) => {{
    cairn("session-end", input("session_shutdown", event, ctx));
  }});
}}
"#
    )
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
            "session_before_compact",
            "session_shutdown",
        ] {
            assert!(text.contains(&format!("pi.on(\"{event}\"")), "{event}");
        }
        assert!(text.contains("systemPromptAppend"));
    }
}
