//! `cairn mcp install|uninstall --agent claude-code|codex`: cairn's MCP server registered in
//! the agent's own configuration, as the agent's `mcp add` would write it, with the command
//! line that works from every folder: the binary's absolute path ([`super::exe`]) and the
//! knowledge repository's (`/abs/cairn --repo /abs/kb mcp`), since an agent starts the server
//! in the project's folder with its own PATH.
//!
//! # Where each agent keeps it (checked against the pinned packages)
//!
//! - **Claude Code** 2.1.332 (`claude mcp add NAME -- CMD ARGS…`): scope `user` writes
//!   `mcpServers.NAME` at the top of `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when
//!   that is set); `project` writes `mcpServers.NAME` in the project's `.mcp.json`; `local` (its
//!   default) under `projects["/abs/project"].mcpServers` of `~/.claude.json`, for one folder
//!   only. The value is `{"type": "stdio", "command", "args", "env": {}}`. cairn writes the
//!   user scope (`--global`, the default: one knowledge repository for every folder) or
//!   `.mcp.json` (`--project DIR`).
//! - **Codex** 0.171.0 (`codex mcp add NAME -- CMD ARGS…`): a table `[mcp_servers.NAME]` with
//!   `command` and `args` in `$CODEX_HOME/config.toml` (`~/.codex/config.toml`); a project's
//!   `.codex/config.toml` is read only in a trusted project.
//!
//! # Byte for byte
//!
//! Install adds only its own entry: the JSON member by splicing ([`super::splice`]), the TOML
//! table appended at the end. Uninstall cuts it, and gives back the file as it was before
//! install: of the files that installing again would turn into the file now (the file absent,
//! an emptied `mcpServers` kept or removed, the newline before the table), it picks that one,
//! so a file install made is deleted and an empty `"mcpServers": {}` a person had stays. An
//! entry named `cairn` that cairn did not write (another command line, say `cairn mcp` on
//! PATH) is never replaced nor removed: the error says how to remove it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Agent, Outcome, Scope, splice};
use crate::error::{Error, Result};
use crate::files;

/// The server's name in the agents' configuration (its tools are `mcp__cairn__…`).
pub const SERVER: &str = "cairn";

/// The arguments after the binary: the knowledge repository, then `mcp`.
fn args(repo_root: &Path) -> Vec<String> {
    vec![
        "--repo".to_string(),
        repo_root.to_string_lossy().into_owned(),
        "mcp".to_string(),
    ]
}

/// The file `mcp install` writes for `agent` in `scope`; `claude_config_dir` is
/// `$CLAUDE_CONFIG_DIR`.
pub fn config_file(
    agent: Agent,
    scope: &Scope,
    claude_config_dir: Option<&Path>,
) -> Result<PathBuf> {
    match (agent, scope) {
        (Agent::Claude, Scope::Global { home, .. }) => Ok(claude_config_dir
            .unwrap_or(home)
            .join(".claude.json")),
        (Agent::Claude, Scope::Project(dir)) => Ok(dir.join(".mcp.json")),
        (Agent::Codex, Scope::Global { home, codex_home, .. }) => Ok(codex_home
            .clone()
            .unwrap_or_else(|| home.join(".codex"))
            .join("config.toml")),
        (Agent::Codex, Scope::Project(dir)) => Ok(dir.join(".codex/config.toml")),
        (Agent::Pi, _) => Err(Error::bad_input(
            "pi has no MCP client of its own: there is nothing to register",
        )
        .with_fix(
            "let pi run `cairn brief`, `cairn recall` and `cairn slog` with its bash tool, or `cairn hooks install --agent pi`",
        )),
    }
}

/// The command line registered, for reports: the binary and its arguments.
pub fn command_line(exe: &Path, repo_root: &Path) -> Vec<String> {
    let mut line = vec![exe.to_string_lossy().into_owned()];
    line.extend(args(repo_root));
    line
}

/// Registers cairn's server (`exe --repo REPO mcp`) for `agent` in `file`.
pub fn install(agent: Agent, file: &Path, exe: &Path, repo_root: &Path) -> Result<Outcome> {
    let before = files::read_optional(file)?;
    let after = match agent {
        Agent::Codex => toml_install(before.as_deref(), exe, repo_root, file)?,
        _ => json_install(before.as_deref(), exe, repo_root, file)?,
    };
    let changed = before.as_deref() != Some(after.as_str());
    if changed {
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), &e))?;
        }
        files::write_atomic(file, after.as_bytes())?;
    }
    Ok(Outcome {
        file: file.to_path_buf(),
        changed,
        created: before.is_none(),
        deleted: false,
        events: Vec::new(),
    })
}

/// Removes what [`install`] added to `file`, giving back the file as it was.
pub fn uninstall(agent: Agent, file: &Path) -> Result<Outcome> {
    let mut outcome = Outcome {
        file: file.to_path_buf(),
        changed: false,
        created: false,
        deleted: false,
        events: Vec::new(),
    };
    let Some(text) = files::read_optional(file)? else {
        return Ok(outcome);
    };
    let before = match agent {
        Agent::Codex => toml_uninstall(&text, file)?,
        _ => json_uninstall(&text, file)?,
    };
    match before {
        Removed::NotThere => {}
        Removed::File => {
            std::fs::remove_file(file).map_err(|e| Error::io(file.display(), &e))?;
            super::remove_empty_parents(file);
            outcome.changed = true;
            outcome.deleted = true;
        }
        Removed::Text(before) => {
            files::write_atomic(file, before.as_bytes())?;
            outcome.changed = true;
        }
    }
    Ok(outcome)
}

/// What the file was before install, as uninstall works it out.
#[derive(Debug, PartialEq, Eq)]
enum Removed {
    /// No server of cairn's in it.
    NotThere,
    /// There was no file.
    File,
    Text(String),
}

fn not_ours(file: &Path, agent_remove: &str) -> Error {
    Error::bad_input(format!(
        "{} already registers an MCP server named {SERVER:?} that `cairn mcp install` did not write",
        file.display()
    ))
    .with_fix(format!(
        "remove it (`{agent_remove}`), then run this again"
    ))
}

/// The folders whose local-scope `cairn` server (`claude mcp add cairn …` without `--scope`,
/// kept under `projects[FOLDER].mcpServers` of `.claude.json`) Claude Code starts there
/// instead of the user-scope one install writes: local wins over user.
pub fn claude_shadowing(claude_json: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<Value>(claude_json.trim_start_matches('\u{feff}'))
    else {
        return Vec::new();
    };
    let Some(projects) = value.get("projects").and_then(Value::as_object) else {
        return Vec::new();
    };
    projects
        .iter()
        .filter(|(_, p)| p.get("mcpServers").and_then(|s| s.get(SERVER)).is_some())
        .map(|(folder, _)| folder.clone())
        .collect()
}

// ---- Claude Code: JSON ----

fn json_entry(exe: &Path, repo_root: &Path) -> Value {
    json!({
        "type": "stdio",
        "command": exe.to_string_lossy(),
        "args": args(repo_root),
        "env": {},
    })
}

/// Whether `value` is a registration cairn wrote: a stdio server run as `BIN --repo DIR mcp`.
fn json_is_ours(value: &Value) -> bool {
    let args: Option<Vec<&str>> = value
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect());
    value.get("type").and_then(Value::as_str) == Some("stdio")
        && value.get("command").and_then(Value::as_str).is_some()
        && matches!(args.as_deref(), Some(["--repo", _, "mcp"]))
        && value.get("env") == Some(&json!({}))
}

fn parse_json(text: &str, file: &Path) -> Result<splice::Doc> {
    splice::Doc::parse(text.to_string()).map_err(|e| {
        Error::bad_input(format!("{}: {e}", file.display()))
            .with_fix("fix the file (it must be a JSON object), then run this again")
    })
}

fn servers(doc: &splice::Doc, file: &Path) -> Result<Option<splice::Member>> {
    match doc.member(&doc.root(), "mcpServers") {
        Some(m) if !doc.is_object(&m.value) => Err(Error::bad_input(format!(
            "{}: `mcpServers` is not an object",
            file.display()
        ))
        .with_fix("make it an object of server names, then run this again")),
        other => Ok(other),
    }
}

/// The text of `before` (None: no file) with cairn's server registered.
fn json_install(before: Option<&str>, exe: &Path, repo_root: &Path, file: &Path) -> Result<String> {
    let want = json_entry(exe, repo_root);
    let Some(before) = before else {
        return Ok(splice::fresh(&json!({ "mcpServers": { SERVER: want } })));
    };
    let mut doc = parse_json(before, file)?;
    if let Some(list) = servers(&doc, file)?
        && let Some(ours) = doc.member(&list.value, SERVER)
    {
        let value = doc.value(&ours.value);
        if value == want {
            return Ok(before.to_string());
        }
        if !json_is_ours(&value) {
            return Err(not_ours(file, "claude mcp remove cairn"));
        }
        // Another repository's or binary's registration of cairn's: replaced.
        let text = match json_uninstall(before, file)? {
            Removed::Text(t) => t,
            _ => "{}\n".to_string(),
        };
        doc = parse_json(&text, file)?;
    }
    match servers(&doc, file)? {
        Some(list) => doc.push_member(&list.value, SERVER, &want),
        None => {
            let root = doc.root();
            doc.push_member(&root, "mcpServers", &json!({ SERVER: want }));
        }
    }
    Ok(doc.text)
}

fn json_uninstall(text: &str, file: &Path) -> Result<Removed> {
    let doc = parse_json(text, file)?;
    let Some(list) = servers(&doc, file)? else {
        return Ok(Removed::NotThere);
    };
    let members = doc.members(&list.value);
    let Some(index) = members.iter().position(|m| m.key == SERVER) else {
        return Ok(Removed::NotThere);
    };
    let value = doc.value(&members[index].value);
    if !json_is_ours(&value) {
        return Err(not_ours(file, "claude mcp remove cairn"));
    }
    let exe = PathBuf::from(value["command"].as_str().unwrap_or_default());
    let repo = PathBuf::from(value["args"][1].as_str().unwrap_or_default());
    let mut kept = doc.clone();
    kept.remove_member(&list.value, index);
    let mut emptied = kept.clone();
    let list_after = servers(&kept, file)?.expect("mcpServers is still there");
    if kept.members(&list_after.value).is_empty() {
        let root = emptied.root();
        let at = emptied
            .members(&root)
            .iter()
            .position(|m| m.key == "mcpServers")
            .expect("mcpServers is there");
        emptied.remove_member(&root, at);
    }
    let reinstalls =
        |before: Option<&str>| json_install(before, &exe, &repo, file).is_ok_and(|t| t == text);
    if reinstalls(None) {
        return Ok(Removed::File);
    }
    for candidate in [&kept.text, &emptied.text] {
        if reinstalls(Some(candidate)) {
            return Ok(Removed::Text(candidate.clone()));
        }
    }
    // Changed since install: cairn's entry goes, everything else stays.
    Ok(Removed::Text(kept.text))
}

// ---- Codex: TOML ----

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The table install appends.
fn toml_block(exe: &Path, repo_root: &Path) -> String {
    let args: Vec<String> = args(repo_root).iter().map(|a| toml_string(a)).collect();
    format!(
        "[mcp_servers.{SERVER}]\ncommand = {}\nargs = [{}]\n",
        toml_string(&exe.to_string_lossy()),
        args.join(", ")
    )
}

fn parse_toml(text: &str, file: &Path) -> Result<toml::Table> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
            .unwrap_or(1);
        Error::bad_input(format!(
            "{}:{line}: not TOML: {}",
            file.display(),
            e.message()
        ))
        .with_fix("fix the file, then run this again")
    })
}

/// The registered `(command, args)` of `[mcp_servers.cairn]`, if there is one.
fn toml_entry(table: &toml::Table) -> Option<(Option<String>, Option<Vec<String>>)> {
    let entry = table.get("mcp_servers")?.as_table()?.get(SERVER)?;
    let command = entry
        .get("command")
        .and_then(|c| c.as_str())
        .map(str::to_string);
    let args = entry.get("args").and_then(|a| a.as_array()).map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    });
    Some((command, args))
}

fn toml_install(before: Option<&str>, exe: &Path, repo_root: &Path, file: &Path) -> Result<String> {
    let block = toml_block(exe, repo_root);
    let mut text = before.map(str::to_string);
    let table = parse_toml(text.as_deref().unwrap_or_default(), file)?;
    if let (Some(had), Some(_)) = (&text, toml_entry(&table)) {
        // Refused when it is not cairn's; unchanged when it is this very registration.
        let removed = toml_uninstall(had, file)?;
        if had.contains(&block) {
            return Ok(had.clone());
        }
        text = match removed {
            Removed::Text(t) => Some(t),
            Removed::File | Removed::NotThere => None,
        };
    }
    // In a file that exists, a newline before the table (a blank line, or the newline a last
    // line lacked): no two files give the same result, so uninstall knows which one it was.
    Ok(match text {
        None => block,
        Some(text) => format!("{text}\n{block}"),
    })
}

fn toml_uninstall(text: &str, file: &Path) -> Result<Removed> {
    let table = parse_toml(text, file)?;
    let Some((command, args)) = toml_entry(&table) else {
        return Ok(Removed::NotThere);
    };
    let (Some(command), Some(args)) = (command, args) else {
        return Err(not_ours(file, "codex mcp remove cairn"));
    };
    let [flag, repo, mcp] = args.as_slice() else {
        return Err(not_ours(file, "codex mcp remove cairn"));
    };
    let (exe, repo) = (PathBuf::from(&command), PathBuf::from(repo));
    let block = toml_block(&exe, &repo);
    let Some(at) = text
        .find(&block)
        .filter(|_| flag == "--repo" && mcp == "mcp")
    else {
        return Err(not_ours(file, "codex mcp remove cairn"));
    };
    let (head, tail) = (&text[..at], &text[at + block.len()..]);
    if tail.is_empty() {
        if head.is_empty() {
            return Ok(Removed::File);
        }
        if let Some(before) = head.strip_suffix('\n')
            && toml_install(Some(before), &exe, &repo, file).is_ok_and(|t| t == text)
        {
            return Ok(Removed::Text(before.to_string()));
        }
    }
    // A table the person added after cairn's: cairn's goes with the blank line before it.
    let head = head.strip_suffix('\n').unwrap_or(head);
    Ok(Removed::Text(format!("{head}{tail}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/bin/cairn";
    const KB: &str = "/home/me/kb";

    fn round_trip_json(before: Option<&str>) {
        let file = Path::new("/x/.claude.json");
        let after = json_install(before, Path::new(EXE), Path::new(KB), file).unwrap();
        let v: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(v["mcpServers"]["cairn"]["command"], EXE);
        assert_eq!(
            v["mcpServers"]["cairn"]["args"],
            json!(["--repo", KB, "mcp"])
        );
        let back = json_uninstall(&after, file).unwrap();
        match before {
            None => assert_eq!(back, Removed::File),
            Some(b) => assert_eq!(back, Removed::Text(b.to_string()), "{after}"),
        }
    }

    #[test]
    fn local_scope_servers_that_shadow_the_user_scope_are_named() {
        let text =
            r#"{"projects": {"/p": {"mcpServers": {"cairn": {}}}, "/q": {"mcpServers": {}}}}"#;
        assert_eq!(claude_shadowing(text), vec!["/p".to_string()]);
        assert!(claude_shadowing("not json").is_empty());
    }

    #[test]
    fn claude_code_registration_comes_off_byte_for_byte() {
        round_trip_json(None);
        round_trip_json(Some("{}"));
        round_trip_json(Some("{\n  \"a\": 1\n}\n"));
        round_trip_json(Some("{\n  \"mcpServers\": {}\n}\n"));
        round_trip_json(Some(
            "{\n    \"mcpServers\": {\n        \"x\": {\"command\": \"y\"}\n    },\n    \"z\": [1]\n}",
        ));
    }

    #[test]
    fn a_person_s_own_cairn_entry_is_never_replaced() {
        let file = Path::new("/x/.claude.json");
        let theirs = r#"{"mcpServers": {"cairn": {"type": "stdio", "command": "cairn", "args": ["mcp"], "env": {}}}}"#;
        let err = json_install(Some(theirs), Path::new(EXE), Path::new(KB), file).unwrap_err();
        assert!(err.message.contains("did not write"), "{}", err.message);
        assert!(json_uninstall(theirs, file).is_err());
        let toml = "[mcp_servers.cairn]\ncommand = \"cairn\"\nargs = [\"mcp\"]\n";
        let file = Path::new("/x/config.toml");
        assert!(toml_install(Some(toml), Path::new(EXE), Path::new(KB), file).is_err());
        assert!(toml_uninstall(toml, file).is_err());
    }

    #[test]
    fn reinstalling_for_another_repository_replaces_cairn_s_entry() {
        let file = Path::new("/x/.claude.json");
        let first =
            json_install(Some("{\"a\": 1}"), Path::new(EXE), Path::new("/old"), file).unwrap();
        let second = json_install(Some(&first), Path::new(EXE), Path::new(KB), file).unwrap();
        let v: Value = serde_json::from_str(&second).unwrap();
        assert_eq!(v["mcpServers"]["cairn"]["args"][1], KB);
        assert_eq!(v["a"], 1);
        let file = Path::new("/x/config.toml");
        let first = toml_install(Some("a = 1\n"), Path::new(EXE), Path::new("/old"), file).unwrap();
        let second = toml_install(Some(&first), Path::new(EXE), Path::new(KB), file).unwrap();
        assert_eq!(
            second,
            format!("a = 1\n\n{}", toml_block(Path::new(EXE), Path::new(KB)))
        );
    }

    #[test]
    fn codex_registration_comes_off_byte_for_byte() {
        let file = Path::new("/x/config.toml");
        let block = toml_block(Path::new(EXE), Path::new(KB));
        assert_eq!(
            block,
            "[mcp_servers.cairn]\ncommand = \"/opt/bin/cairn\"\nargs = [\"--repo\", \"/home/me/kb\", \"mcp\"]\n"
        );
        for before in [
            "",
            "model = \"x\"",
            "model = \"x\"\n",
            "model = \"x\"\n\n",
            "[mcp_servers.other]\ncommand = \"o\"\n",
        ] {
            let after = toml_install(Some(before), Path::new(EXE), Path::new(KB), file).unwrap();
            let table = parse_toml(&after, file).unwrap();
            assert!(toml_entry(&table).is_some(), "{after}");
            let back = toml_uninstall(&after, file).unwrap();
            assert_eq!(back, Removed::Text(before.to_string()), "{after:?}");
        }
        let made = toml_install(None, Path::new(EXE), Path::new(KB), file).unwrap();
        assert_eq!(made, block);
        assert_eq!(toml_uninstall(&made, file).unwrap(), Removed::File);
        // A table added after cairn's stays.
        let after = format!("a = 1\n\n{block}[x]\ny = 2\n");
        assert_eq!(
            toml_uninstall(&after, file).unwrap(),
            Removed::Text("a = 1\n[x]\ny = 2\n".to_string())
        );
    }
}
