//! Agent session hooks: cairn wired into Claude Code, Codex and pi through each agent's own
//! documented mechanism, and what a hook reads from the agent.
//!
//! Three events, the same for every agent: `session-start` prints the briefing in the form the
//! agent injects into its context; `pre-compact` and `session-end` hand the session's
//! transcript to a background `sessions ingest` + `observe` (see `cli/hooks/agent.rs`).
//!
//! # The mechanisms followed
//!
//! - **Claude Code**: `hooks` in `settings.json` (`~/.claude/settings.json`, or the project's
//!   `.claude/settings.json`), event → `[{matcher?, hooks: [{type: "command", command,
//!   timeout}]}]` (docs: code.claude.com/docs/en/hooks). Each hook gets one JSON object on
//!   stdin: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, and per event `source`
//!   (SessionStart), `trigger` and `custom_instructions` (PreCompact), `reason` (SessionEnd). A
//!   SessionStart hook's stdout `{"hookSpecificOutput": {"hookEventName": "SessionStart",
//!   "additionalContext": "…"}}` is added to the session's context.
//! - **Codex**: `hooks.json` beside a config layer (`~/.codex/hooks.json`, or `$CODEX_HOME`; the
//!   project's `.codex/hooks.json`), the same event → matcher-group shape (codex-rs
//!   `config/src/hook_config.rs` `HooksFile`; docs: developers.openai.com/codex/hooks), with
//!   SessionStart, PreCompact and SessionEnd among its events. Stdin carries `session_id`,
//!   `transcript_path` (may be null), `cwd`, `hook_event_name`, `model`, and `source` /
//!   `trigger` / `reason`; SessionStart's stdout is read as the same `hookSpecificOutput` JSON
//!   (codex-rs `hooks/src/events/session_start.rs`). Hooks are on by default, but Codex runs a
//!   hook a person has not reviewed and trusted (`/hooks` in the CLI) not at all, and a
//!   project's `.codex/` only in a trusted project: install says so, and never stamps trust
//!   itself.
//! - **pi**: an extension, a TypeScript module auto-discovered in `~/.pi/agent/extensions/` or
//!   the project's `.pi/extensions/` (pi-mono `packages/coding-agent/docs/extensions.md`).
//!   cairn writes `cairn.ts` there ([`pi::extension`]): `session_start` returns the briefing
//!   as `systemPromptAppend`; `session_before_compact` and `session_shutdown` pass the session
//!   file. pi has no stdin protocol of its own, so the extension sends the same JSON object
//!   the other two do (`hook_event_name`, `session_id`, `transcript_path`, `cwd`, `reason`).
//!
//! # What install adds, and how uninstall finds it
//!
//! The command names the binary and the knowledge repository by their absolute paths
//! (`/abs/cairn --repo '/abs/kb' hooks run EVENT --agent NAME`): an agent runs hooks in the
//! project's folder, which is often not the knowledge repository, with a PATH that may lack
//! cairn, and a hook must not depend on `CAIRN_REPO` being set in the agent's environment
//! ([`exe`] says which path of the binary; `cairn doctor` names a hook whose binary is gone). A
//! matcher group whose one hook runs `hooks run … --agent NAME` is cairn's ([`is_ours`]);
//! uninstall removes those groups and nothing else, by cutting exactly the bytes install
//! inserted ([`splice`]), so the person's other settings and hooks stay byte for byte. One
//! exception, found by fuzzing: an event list (or a `hooks` object) that was empty before
//! install, and so holds only cairn's group after it, is removed whole, as one install made
//! would be; the text cannot tell the two apart, and to both agents an empty list and none
//! mean the same.
//!
//! This module decides and never prints; `cli/hooks/agent.rs` reports.

pub mod check;
pub mod exe;
pub mod mcp;
pub mod pi;
pub mod splice;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::files;
pub use crate::sessions::Agent;

/// The name an agent goes by in `--agent` of `cairn hooks`.
pub fn name(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "claude-code",
        Agent::Codex => "codex",
        Agent::Pi => "pi",
    }
}

/// The agents `--agent` accepts, for messages.
pub const NAMES: &str = "claude-code, codex or pi";

/// A session event an agent hook runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    SessionStart,
    PreCompact,
    SessionEnd,
}

impl Event {
    pub const ALL: [Event; 3] = [Event::SessionStart, Event::PreCompact, Event::SessionEnd];

    pub fn parse(s: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The name `cairn hooks run` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::PreCompact => "pre-compact",
            Event::SessionEnd => "session-end",
        }
    }

    /// The event's name in Claude Code's and Codex's hook configuration.
    pub fn config_name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::PreCompact => "PreCompact",
            Event::SessionEnd => "SessionEnd",
        }
    }
}

/// What a hook reads from the agent's stdin JSON. Every field is optional and unknown fields
/// are ignored, so a newer agent's extra fields (or a missing one) never fail the hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Input {
    pub session_id: Option<String>,
    pub transcript_path: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub hook_event_name: Option<String>,
    /// SessionStart's `source`, PreCompact's `trigger`, SessionEnd's `reason` (or pi's
    /// `reason`), whichever the agent sent.
    pub why: Option<String>,
}

/// Reads the agent's stdin: empty is no input; otherwise a JSON object. Fields of another type
/// than expected are treated as absent.
pub fn read_input(bytes: &[u8]) -> std::result::Result<Input, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Input::default());
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("stdin is not JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("stdin is not a JSON object".to_string());
    };
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Ok(Input {
        session_id: text("session_id"),
        transcript_path: text("transcript_path").map(PathBuf::from),
        cwd: text("cwd").map(PathBuf::from),
        hook_event_name: text("hook_event_name"),
        why: text("source")
            .or_else(|| text("trigger"))
            .or_else(|| text("reason")),
    })
}

/// What `session-start` prints for `agent`: Claude Code's and Codex's SessionStart JSON, or the
/// Markdown itself for pi's extension. Nothing to say is an empty output.
pub fn session_start_output(agent: Agent, markdown: &str) -> String {
    if markdown.trim().is_empty() {
        return String::new();
    }
    match agent {
        Agent::Claude | Agent::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": markdown,
            }
        })
        .to_string(),
        Agent::Pi => markdown.to_string(),
    }
}

/// Where an install writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The person's own configuration under `home` (`codex_home`: `$CODEX_HOME`, if set).
    Global {
        home: PathBuf,
        codex_home: Option<PathBuf>,
    },
    /// A project's configuration, in its folder.
    Project(PathBuf),
}

/// The file install writes for `agent` in `scope`.
pub fn config_file(agent: Agent, scope: &Scope) -> PathBuf {
    match (agent, scope) {
        (Agent::Claude, Scope::Global { home, .. }) => home.join(".claude/settings.json"),
        (Agent::Claude, Scope::Project(dir)) => dir.join(".claude/settings.json"),
        (Agent::Codex, Scope::Global { home, codex_home }) => codex_home
            .clone()
            .unwrap_or_else(|| home.join(".codex"))
            .join("hooks.json"),
        (Agent::Codex, Scope::Project(dir)) => dir.join(".codex/hooks.json"),
        (Agent::Pi, Scope::Global { home, .. }) => {
            home.join(".pi/agent/extensions").join(pi::FILE_NAME)
        }
        (Agent::Pi, Scope::Project(dir)) => dir.join(".pi/extensions").join(pi::FILE_NAME),
    }
}

/// A word for a shell: as it is when it holds nothing a shell would read specially, else in
/// single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The command an agent runs for `event`: the binary `exe` (an absolute path) for the
/// knowledge repository at `repo_root`.
pub fn command(exe: &Path, repo_root: &Path, agent: Agent, event: Event) -> String {
    format!(
        "{} --repo {} hooks run {} --agent {}",
        shell_word(&exe.to_string_lossy()),
        shell_word(&repo_root.to_string_lossy()),
        event.as_str(),
        name(agent)
    )
}

/// Whether `command` is one cairn installed for `agent`.
pub fn is_ours(agent: Agent, command: &str) -> bool {
    command.contains("cairn")
        && command.contains(" hooks run ")
        && command
            .trim_end()
            .ends_with(&format!("--agent {}", name(agent)))
}

/// The matcher group install adds for `event`: no matcher, so that it runs for every source
/// (a SessionStart after `/clear` or a compaction briefs again) and trigger.
fn group(exe: &Path, repo_root: &Path, agent: Agent, event: Event) -> Value {
    json!({
        "hooks": [{
            "type": "command",
            "command": command(exe, repo_root, agent, event),
            "timeout": 10,
        }]
    })
}

/// Whether a matcher group is cairn's: an object whose hooks are exactly one command of ours.
fn is_our_group(agent: Agent, group: &Value) -> bool {
    let hooks = group.get("hooks").and_then(Value::as_array);
    match hooks.map(Vec::as_slice) {
        Some([hook]) => hook
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| is_ours(agent, c)),
        _ => false,
    }
}

/// What install or uninstall did to one file.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub file: PathBuf,
    /// The file's bytes changed (or it was made, or deleted).
    pub changed: bool,
    /// The file did not exist before.
    pub created: bool,
    /// The file was deleted (it held nothing but what cairn had added).
    pub deleted: bool,
    /// The events now hooked (install) or unhooked (uninstall).
    pub events: Vec<Event>,
}

/// Adds cairn's hooks for `agent` to `file`, keeping everything else in it: commands that run
/// the binary `exe` for the knowledge repository at `repo_root`.
pub fn install(agent: Agent, file: &Path, exe: &Path, repo_root: &Path) -> Result<Outcome> {
    match agent {
        Agent::Claude | Agent::Codex => install_json(agent, file, exe, repo_root),
        Agent::Pi => pi::install(file, exe, repo_root),
    }
}

/// Removes what [`install`] added to `file`, and nothing else.
pub fn uninstall(agent: Agent, file: &Path) -> Result<Outcome> {
    match agent {
        Agent::Claude | Agent::Codex => uninstall_json(agent, file),
        Agent::Pi => pi::uninstall(file),
    }
}

fn read_doc(file: &Path) -> Result<Option<splice::Doc>> {
    let Some(text) = files::read_optional(file)? else {
        return Ok(None);
    };
    let doc = splice::Doc::parse(text).map_err(|e| {
        Error::bad_input(format!("{}: {e}", file.display()))
            .with_fix("fix the file (it must be a JSON object), then run this again")
    })?;
    refuse_duplicate_keys(&doc, file)?;
    Ok(Some(doc))
}

/// A key cairn edits under (`hooks`, or an event in it) written twice: the agents read JSON
/// as JavaScript does, keeping the last, so hooks added to the first would never run (and
/// uninstall could not tell what it removes). Found by the fuzzer (`agent_settings`).
fn refuse_duplicate_keys(doc: &splice::Doc, file: &Path) -> Result<()> {
    let twice = |what: String, n: usize| {
        Err(Error::bad_input(format!(
            "{}: `{what}` is written {n} times; the agent reads only the last",
            file.display()
        ))
        .with_fix("merge them into one, then run this again"))
    };
    let hooks: Vec<splice::Member> = doc
        .members(&doc.root())
        .into_iter()
        .filter(|m| m.key == "hooks")
        .collect();
    if hooks.len() > 1 {
        return twice("hooks".into(), hooks.len());
    }
    let Some(hooks) = hooks.first().filter(|h| doc.is_object(&h.value)) else {
        return Ok(());
    };
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for m in doc.members(&hooks.value) {
        *seen.entry(m.key).or_default() += 1;
    }
    match seen.into_iter().filter(|(_, n)| *n > 1).min() {
        Some((key, n)) => twice(format!("hooks.{key}"), n),
        None => Ok(()),
    }
}

/// The `hooks` object of a settings document, if it has one; an error if it is not an object.
fn hooks_object(doc: &splice::Doc, file: &Path) -> Result<Option<splice::Member>> {
    match doc.member(&doc.root(), "hooks") {
        Some(m) if !doc.is_object(&m.value) => Err(Error::bad_input(format!(
            "{}: `hooks` is not an object",
            file.display()
        ))
        .with_fix("make `hooks` an object of event names, then run this again")),
        other => Ok(other),
    }
}

/// Cuts every group of ours (and the lists and `hooks` object left empty by that) from `doc`;
/// returns the events that had one.
fn remove_ours(doc: &mut splice::Doc, agent: Agent, file: &Path) -> Result<Vec<Event>> {
    let mut removed = Vec::new();
    let Some(hooks) = hooks_object(doc, file)? else {
        return Ok(removed);
    };
    for m in doc.members(&hooks.value).into_iter().rev() {
        if !doc.is_array(&m.value) {
            continue;
        }
        let elements = doc.elements(&m.value);
        let ours: Vec<usize> = (0..elements.len())
            .filter(|&i| is_our_group(agent, &doc.value(&elements[i])))
            .collect();
        if ours.is_empty() {
            continue;
        }
        // Spans move as text is cut: cut from the last, finding the list again each time.
        for &i in ours.iter().rev() {
            let list = find_list(doc, &m.key).expect("the list was just found");
            doc.remove_element(&list, i);
        }
        if let Some(e) = Event::ALL.into_iter().find(|e| e.config_name() == m.key) {
            removed.push(e);
        }
        let list = find_list(doc, &m.key).expect("the list is still there");
        if doc.elements(&list).is_empty() {
            let hooks = doc.member(&doc.root(), "hooks").expect("hooks is there");
            let index = doc
                .members(&hooks.value)
                .iter()
                .position(|x| x.key == m.key)
                .expect("the member is there");
            doc.remove_member(&hooks.value, index);
        }
    }
    let root = doc.root();
    let hooks = doc.member(&root, "hooks").expect("hooks is there");
    if doc.members(&hooks.value).is_empty() && !removed.is_empty() {
        let index = doc
            .members(&root)
            .iter()
            .position(|x| x.key == "hooks")
            .expect("hooks is there");
        doc.remove_member(&root, index);
    }
    removed.reverse();
    Ok(removed)
}

fn find_list(doc: &splice::Doc, event: &str) -> Option<std::ops::Range<usize>> {
    let hooks = doc.member(&doc.root(), "hooks")?;
    if !doc.is_object(&hooks.value) {
        return None;
    }
    doc.member(&hooks.value, event)
        .map(|m| m.value)
        .filter(|v| doc.is_array(v))
}

fn install_json(agent: Agent, file: &Path, exe: &Path, repo_root: &Path) -> Result<Outcome> {
    let events = Event::ALL.to_vec();
    let Some(original) = read_doc(file)? else {
        let mut hooks = serde_json::Map::new();
        for e in &events {
            hooks.insert(
                e.config_name().to_string(),
                json!([group(exe, repo_root, agent, *e)]),
            );
        }
        let text = splice::fresh(&json!({ "hooks": hooks }));
        files::write_atomic(file, text.as_bytes())?;
        return Ok(Outcome {
            file: file.to_path_buf(),
            changed: true,
            created: true,
            deleted: false,
            events,
        });
    };
    let installed = |doc: &splice::Doc| {
        events.iter().all(|e| {
            find_list(doc, e.config_name()).is_some_and(|list| {
                let want = group(exe, repo_root, agent, *e);
                doc.elements(&list).iter().any(|g| doc.value(g) == want)
            })
        })
    };
    if installed(&original) {
        return Ok(Outcome {
            file: file.to_path_buf(),
            changed: false,
            created: false,
            deleted: false,
            events,
        });
    }
    // Ours from an install for another repository (or a partial one) go first.
    let mut doc = original.clone();
    remove_ours(&mut doc, agent, file)?;
    for e in &events {
        let g = group(exe, repo_root, agent, *e);
        match hooks_object(&doc, file)? {
            None => {
                let root = doc.root();
                doc.push_member(&root, "hooks", &json!({ e.config_name(): [g] }));
            }
            Some(hooks) => match doc.member(&hooks.value, e.config_name()) {
                Some(list) if doc.is_array(&list.value) => doc.push_element(&list.value, &g),
                Some(_) => {
                    return Err(Error::bad_input(format!(
                        "{}: hooks.{} is not a list",
                        file.display(),
                        e.config_name()
                    ))
                    .with_fix("make it a list of matcher groups, then run this again"));
                }
                None => doc.push_member(&hooks.value, e.config_name(), &json!([g])),
            },
        }
    }
    let changed = doc.text != original.text;
    if changed {
        files::write_atomic(file, doc.text.as_bytes())?;
    }
    Ok(Outcome {
        file: file.to_path_buf(),
        changed,
        created: false,
        deleted: false,
        events,
    })
}

fn uninstall_json(agent: Agent, file: &Path) -> Result<Outcome> {
    let mut outcome = Outcome {
        file: file.to_path_buf(),
        changed: false,
        created: false,
        deleted: false,
        events: Vec::new(),
    };
    let Some(mut doc) = read_doc(file)? else {
        return Ok(outcome);
    };
    outcome.events = remove_ours(&mut doc, agent, file)?;
    if outcome.events.is_empty() {
        return Ok(outcome);
    }
    outcome.changed = true;
    // A file left an empty object held only what cairn added (a settings file made by install).
    if doc.members(&doc.root()).is_empty() {
        std::fs::remove_file(file).map_err(|e| Error::io(file.display(), &e))?;
        outcome.deleted = true;
        remove_empty_parents(file);
    } else {
        files::write_atomic(file, doc.text.as_bytes())?;
    }
    Ok(outcome)
}

/// Removes the folders above a deleted file that it leaves empty and that are the agents' own
/// (`.claude/`, `.codex/`, `.pi/agent/extensions/`): never the home or project folder.
fn remove_empty_parents(file: &Path) {
    const AGENT_DIRS: [&str; 5] = [".claude", ".codex", ".pi", "agent", "extensions"];
    for dir in file.ancestors().skip(1).take(3) {
        let named = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| AGENT_DIRS.contains(&n));
        if !named || std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_tolerates_unknown_missing_and_odd_fields() {
        let input = read_input(
            br#"{"session_id":"abc","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"SessionEnd","reason":"other","future":{"x":1},"model":7}"#,
        )
        .unwrap();
        assert_eq!(input.session_id.as_deref(), Some("abc"));
        assert_eq!(input.transcript_path, Some(PathBuf::from("/t.jsonl")));
        assert_eq!(input.why.as_deref(), Some("other"));
        let odd = read_input(br#"{"transcript_path":null,"cwd":5}"#).unwrap();
        assert_eq!(odd, Input::default());
        assert_eq!(read_input(b"  \n").unwrap(), Input::default());
        assert!(read_input(b"[1]").is_err());
        assert!(read_input(b"{oops").is_err());
    }

    #[test]
    fn commands_are_recognised_and_quoted() {
        let c = command(
            Path::new("/opt/my bin/cairn"),
            Path::new("/home/a b/it's"),
            Agent::Claude,
            Event::PreCompact,
        );
        assert_eq!(
            c,
            "'/opt/my bin/cairn' --repo '/home/a b/it'\\''s' hooks run pre-compact --agent claude-code"
        );
        assert!(is_ours(Agent::Claude, &c));
        assert!(!is_ours(Agent::Codex, &c));
        assert!(!is_ours(
            Agent::Claude,
            "echo hooks run --agent claude-code-ish"
        ));
        assert_eq!(shell_word("/plain/path-1.2"), "/plain/path-1.2");
    }

    #[test]
    fn session_start_output_is_the_agents_form() {
        let out = session_start_output(Agent::Claude, "# Briefing");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "# Briefing");
        assert_eq!(session_start_output(Agent::Pi, "# Briefing"), "# Briefing");
        assert_eq!(session_start_output(Agent::Codex, " \n"), "");
    }
}
