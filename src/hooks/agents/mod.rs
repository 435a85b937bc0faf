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
//!   itself. Trust is the hook's hash (event, matcher, command, timeout…) in config.toml's
//!   `hooks.state`, so an install that changes a hook's line asks for `/hooks` again.
//!   `transcript_path` is null only for `codex exec --ephemeral` (no rollout file). Codex 0.171
//!   keeps a hook's additionalContext whole up to 2,500 approximate tokens, UTF-8 bytes / 4
//!   rounded up (10,000 bytes; a handler's `additionalContextLimit` changes it, 0 lifts it) and
//!   sends a longer one as a head-and-tail preview (codex-rs `hooks/src/output_spill.rs`;
//!   measured in tests/agents/codex.mjs).
//! - **pi** (0.73): an extension, a TypeScript module pi loads, with no trust asked, from
//!   `~/.pi/agent/extensions/` (`$PI_CODING_AGENT_DIR/extensions/` when that is set) and from
//!   `.pi/extensions/` of the folder pi starts in (not its parents). cairn writes `cairn.ts`
//!   there ([`pi::extension`]): the briefing is fetched at `session_start` and added to the
//!   system prompt by `before_agent_start`, before every prompt; `session_compact` and
//!   `session_shutdown` pass the session file. pi has no stdin protocol of its own, so the
//!   extension sends the same JSON object the other two do (`hook_event_name`, `session_id`,
//!   `transcript_path`, `cwd`, `reason`).
//!
//! # What install adds, and how uninstall finds it
//!
//! The command names the binary and the knowledge repository by their absolute paths
//! (`/abs/cairn --repo '/abs/kb' hooks run EVENT --agent NAME`): an agent runs hooks in the
//! project's folder, which is often not the knowledge repository, with a PATH that may lack
//! cairn, and a hook must not depend on `CAIRN_REPO` being set in the agent's environment
//! ([`exe`] says which path of the binary; `cairn doctor` names a hook whose binary is gone). A
//! hook that runs `hooks run … --agent NAME` is cairn's ([`is_ours`]); uninstall removes the
//! matcher groups that hold only such hooks, and only cairn's hook from a group a person has
//! added a hook of their own to, by cutting exactly the bytes install inserted ([`splice`]),
//! so the person's other settings and hooks stay byte for byte. A container install found
//! empty (`{}` as the whole file, `"hooks": {}`, `"SessionEnd": []`) keeps its bytes: install
//! writes its first entry after one space, which tells uninstall the container was there
//! ([`splice::Doc::was_there`]); a container install created goes with what it holds, and a
//! file install created is deleted. A file that starts with a UTF-8 byte order mark keeps it.
//!
//! This module decides and never prints; `cli/hooks/agent.rs` reports.

pub mod budget;
pub mod check;
pub mod exe;
pub mod mcp;
pub mod memory;
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
    /// The person's own configuration under `home` (`codex_home`: `$CODEX_HOME`, if set;
    /// `pi_agent_dir`: `$PI_CODING_AGENT_DIR`, if set, which pi reads instead of `~/.pi/agent`).
    Global {
        home: PathBuf,
        codex_home: Option<PathBuf>,
        pi_agent_dir: Option<PathBuf>,
    },
    /// A project's configuration, in its folder.
    Project(PathBuf),
}

/// The file install writes for `agent` in `scope`.
pub fn config_file(agent: Agent, scope: &Scope) -> PathBuf {
    match (agent, scope) {
        (Agent::Claude, Scope::Global { home, .. }) => home.join(".claude/settings.json"),
        (Agent::Claude, Scope::Project(dir)) => dir.join(".claude/settings.json"),
        (
            Agent::Codex,
            Scope::Global {
                home, codex_home, ..
            },
        ) => codex_home
            .clone()
            .unwrap_or_else(|| home.join(".codex"))
            .join("hooks.json"),
        (Agent::Codex, Scope::Project(dir)) => dir.join(".codex/hooks.json"),
        (
            Agent::Pi,
            Scope::Global {
                home, pi_agent_dir, ..
            },
        ) => pi_agent_dir
            .clone()
            .unwrap_or_else(|| home.join(".pi/agent"))
            .join("extensions")
            .join(pi::FILE_NAME),
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

/// The `timeout` (seconds) install writes for `event`, within what `agent` allows. Codex 0.171
/// gives SessionEnd 1 s unless told otherwise and at most 3 s, clamping a larger value with a
/// warning on stderr at every run (codex-rs `hooks/src/events/session_end.rs`
/// `SESSION_END_MAX_TIMEOUT_SEC`); its other events take any value of at least 1 s (unset is
/// 600). session-end only starts the background ingest and returns (tens of milliseconds), so
/// 3 s is room enough. Everything else: 10 s, a bound on a briefing that should take well
/// under one.
fn timeout_secs(agent: Agent, event: Event) -> u64 {
    match (agent, event) {
        (Agent::Codex, Event::SessionEnd) => 3,
        _ => 10,
    }
}

/// The matcher group install adds for `event`: no matcher, so that it runs for every source
/// (a SessionStart after `/clear` or a compaction briefs again) and trigger. An install made
/// with another timeout is replaced by the next install (it is not `==` to this group).
fn group(exe: &Path, repo_root: &Path, agent: Agent, event: Event) -> Value {
    json!({
        "hooks": [{
            "type": "command",
            "command": command(exe, repo_root, agent, event),
            "timeout": timeout_secs(agent, event),
        }]
    })
}

/// What of a matcher group is cairn's.
#[derive(Debug, PartialEq, Eq)]
enum Ours {
    /// Nothing.
    Nothing,
    /// The whole group: every hook in it runs a command of ours.
    Group,
    /// These hooks of the group (by index), beside hooks a person added to it.
    Hooks(Vec<usize>),
}

/// Which of a matcher group's hooks are cairn's.
fn ours_in_group(agent: Agent, group: &Value) -> Ours {
    let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
        return Ours::Nothing;
    };
    let ours: Vec<usize> = (0..hooks.len())
        .filter(|&i| {
            hooks[i]
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| is_ours(agent, c))
        })
        .collect();
    if ours.is_empty() {
        Ours::Nothing
    } else if ours.len() == hooks.len() {
        Ours::Group
    } else {
        Ours::Hooks(ours)
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

/// Cuts every group of ours, and every hook of ours from a group a person added to, from
/// `doc`; then the event lists and the `hooks` object left empty by that, unless they were
/// there before install ([`splice::Doc::was_there`]). Returns the events that had one.
fn remove_ours(doc: &mut splice::Doc, agent: Agent, file: &Path) -> Result<Vec<Event>> {
    let mut removed = Vec::new();
    let Some(hooks) = hooks_object(doc, file)? else {
        return Ok(removed);
    };
    let hooks_there = doc.was_there(&hooks.value);
    for m in doc.members(&hooks.value).into_iter().rev() {
        if !doc.is_array(&m.value) {
            continue;
        }
        let list_there = doc.was_there(&m.value);
        let groups = doc.elements(&m.value).len();
        let mut any = false;
        // Spans move as text is cut: cut from the last, finding the list again each time.
        for i in (0..groups).rev() {
            let list = find_list(doc, &m.key).expect("the list was just found");
            let group = doc.elements(&list)[i].clone();
            match ours_in_group(agent, &doc.value(&group)) {
                Ours::Nothing => {}
                Ours::Group => {
                    doc.remove_element(&list, i);
                    any = true;
                }
                Ours::Hooks(indices) => {
                    for &j in indices.iter().rev() {
                        let list = find_list(doc, &m.key).expect("the list is there");
                        let group = doc.elements(&list)[i].clone();
                        // The last `hooks` of the group, as the value read it (and the agents).
                        let hooks = doc.members(&group).into_iter().rfind(|h| h.key == "hooks");
                        let hooks = hooks.expect("the group has hooks").value;
                        doc.remove_element(&hooks, j);
                    }
                    any = true;
                }
            }
        }
        if !any {
            continue;
        }
        if let Some(e) = Event::ALL.into_iter().find(|e| e.config_name() == m.key) {
            removed.push(e);
        }
        let list = find_list(doc, &m.key).expect("the list is still there");
        if doc.elements(&list).is_empty() && !list_there {
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
    if doc.members(&hooks.value).is_empty() && !removed.is_empty() && !hooks_there {
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
        files::write_atomic(file, doc.contents().as_bytes())?;
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
    let root_there = doc.was_there(&doc.root());
    outcome.events = remove_ours(&mut doc, agent, file)?;
    if outcome.events.is_empty() {
        return Ok(outcome);
    }
    outcome.changed = true;
    // A file left an empty object that was not there before held only what cairn added (a
    // settings file made by install).
    if doc.members(&doc.root()).is_empty() && !root_there {
        std::fs::remove_file(file).map_err(|e| Error::io(file.display(), &e))?;
        outcome.deleted = true;
        remove_empty_parents(file);
    } else {
        files::write_atomic(file, doc.contents().as_bytes())?;
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
