//! `cairn hooks install|uninstall --agent` and `cairn hooks run EVENT --agent`: the agent
//! session hooks of Claude Code, Codex and pi, run as the agents run them (the installed
//! command through `sh -c`, the agent's JSON on stdin) over the real fixture transcripts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// The bin folder first on PATH, as an agent finds `cairn`.
fn path_with_cairn() -> String {
    let bin_dir = Path::new(BIN).parent().unwrap();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs `program args…` in `cwd` with `stdin` written to it and closed, as an agent does.
fn with_stdin(env: &Env, cwd: &Path, program: &str, args: &[&str], stdin: &str) -> Run {
    let mut cmd = env.command(program, cwd);
    cmd.args(args)
        .env("PATH", path_with_cairn())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    Run::from(child.wait_with_output().expect("wait"))
}

/// Runs an installed hook command the way Claude Code and Codex do: through a shell, in the
/// project's folder, the event's JSON on stdin.
fn run_command(env: &Env, cwd: &Path, command: &str, stdin: &Value) -> Run {
    with_stdin(env, cwd, "sh", &["-c", command], &stdin.to_string())
}

/// `cairn --repo REPO hooks run EVENT --agent AGENT` with `stdin`.
fn hook(env: &Env, repo: &Path, agent: &str, event: &str, stdin: &str) -> Run {
    let repo = repo.to_str().unwrap();
    with_stdin(
        env,
        env.path(),
        BIN,
        &["--repo", repo, "hooks", "run", event, "--agent", agent],
        stdin,
    )
}

/// A knowledge repository with a MEMORY.md entry and a slog entry, and a project (a git
/// repository of its own) beside it.
fn repo_and_project() -> (Env, PathBuf, PathBuf) {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "memory",
            "add",
            "--section",
            "Rules and conventions",
            "Run cargo fmt before every commit of the billing service",
        ],
    )
    .code(0);
    env.cairn_in(
        &repo,
        &[
            "slog",
            "deploy",
            "billing",
            "rolled out billing v2 to staging",
        ],
    )
    .code(0);
    let project = env.path().join("billing");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q"]);
    (env, repo, project)
}

/// The commands of every hook in a settings object, by event.
fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

fn ours(settings: &Value, event: &str) -> String {
    commands(settings, event)
        .into_iter()
        .find(|c| c.contains("hooks run"))
        .unwrap_or_else(|| panic!("no cairn hook for {event}: {settings}"))
}

fn telemetry(repo: &Path) -> Vec<Value> {
    std::fs::read_to_string(repo.join(".cairn/telemetry.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn event<'a>(events: &'a [Value], action: &str) -> Option<&'a Value> {
    events
        .iter()
        .rev()
        .find(|e| e["component"] == "hooks" && e["action"] == action)
}

/// Waits (up to a minute) until `done` holds; the background ingest runs on its own.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A person's Claude Code settings, in their own layout (four spaces, a key order of their
/// own), with hooks of their own for SessionStart and PreToolUse.
const USER_SETTINGS: &str = r#"{
    "permissions": {
        "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)"]
    },
    "env": {"FOO": "bar/é"},
    "hooks": {
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [
                    {
                        "type": "command",
                        "command": "echo 'hello from my own hook'"
                    }
                ]
            }
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]
            }
        ]
    },
    "model": "opus"
}
"#;

#[test]
fn claude_code_install_keeps_the_users_settings_and_uninstall_gives_back_their_bytes() {
    let (env, repo, project) = repo_and_project();
    let file = project.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, USER_SETTINGS).unwrap();

    let run = env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "--json",
            "hooks",
            "install",
            "--agent",
            "claude-code",
        ],
    );
    let data = run.code(0).data();
    assert_eq!(data["scope"], "project");
    assert_eq!(data["changed"], true);
    let once = std::fs::read_to_string(&file).unwrap();
    let settings: Value = serde_json::from_str(&once).expect("still JSON");
    // The person's settings and hooks are all there, theirs first.
    let before: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    assert_eq!(settings["permissions"], before["permissions"]);
    assert_eq!(settings["env"], before["env"]);
    assert_eq!(settings["model"], before["model"]);
    assert_eq!(
        settings["hooks"]["PreToolUse"],
        before["hooks"]["PreToolUse"]
    );
    assert_eq!(
        settings["hooks"]["SessionStart"][0],
        before["hooks"]["SessionStart"][0]
    );
    for (event, name) in [
        ("SessionStart", "session-start"),
        ("PreCompact", "pre-compact"),
        ("SessionEnd", "session-end"),
    ] {
        let c = ours(&settings, event);
        assert!(
            c.contains(&format!("hooks run {name} --agent claude-code")),
            "{c}"
        );
        assert!(
            c.contains(repo.canonicalize().unwrap().to_str().unwrap()),
            "{c}"
        );
    }
    // Every byte the person wrote is still there, in order: cairn only inserted.
    let mut rest = once.as_str();
    for line in USER_SETTINGS.lines() {
        let at = rest
            .find(line)
            .unwrap_or_else(|| panic!("lost {line:?} in:\n{once}"));
        rest = &rest[at + line.len()..];
    }

    // Twice is once.
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "claude-code",
        ],
    )
    .code(0)
    .stdout_has("nothing changed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), once);

    // Uninstall removes exactly what install added.
    env.cairn_in(&project, &["hooks", "uninstall", "--agent", "claude-code"])
        .code(0)
        .stdout_has("removed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), USER_SETTINGS);
    env.cairn_in(&project, &["hooks", "uninstall", "--agent", "claude-code"])
        .code(0)
        .stdout_has("nothing changed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), USER_SETTINGS);
}

#[test]
fn a_settings_file_that_is_not_json_is_refused_and_left_alone() {
    let (env, repo, project) = repo_and_project();
    let file = project.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let broken = "{\n  \"model\": \"opus\",\n}\n";
    std::fs::write(&file, broken).unwrap();
    let run = env
        .cairn_in(
            &project,
            &[
                "--repo",
                repo.to_str().unwrap(),
                "hooks",
                "install",
                "--agent",
                "claude-code",
            ],
        )
        .code(2);
    assert!(
        run.stderr.contains("settings.json") && run.stderr.contains("line 3"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

// Found by the fuzzer (agent_settings): with `hooks` written twice, install added cairn's
// hooks to the first, which the agent (reading the last, as JavaScript does) never runs.
#[test]
fn a_settings_file_with_hooks_written_twice_is_refused_and_left_alone() {
    let (env, repo, project) = repo_and_project();
    let file = project.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for (twice, named) in [
        (
            "{\n  \"hooks\": {\"SessionStart\": []},\n  \"hooks\": []\n}\n",
            "`hooks` is written 2 times",
        ),
        (
            "{\"hooks\": {\"PreCompact\": [], \"Stop\": [], \"PreCompact\": []}}\n",
            "`hooks.PreCompact` is written 2 times",
        ),
    ] {
        std::fs::write(&file, twice).unwrap();
        for verb in ["install", "uninstall"] {
            let run = env
                .cairn_in(
                    &project,
                    &[
                        "--repo",
                        repo.to_str().unwrap(),
                        "hooks",
                        verb,
                        "--agent",
                        "claude-code",
                    ],
                )
                .code(2);
            assert!(
                run.stderr.contains("settings.json") && run.stderr.contains(named),
                "{}",
                run.stderr
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), twice);
        }
    }
}

#[test]
fn global_installs_write_under_home_and_codex_home_and_uninstall_leaves_nothing() {
    let (env, repo, _project) = repo_and_project();
    let r = repo.to_str().unwrap();
    let home = env.home();
    env.cairn(&[
        "--repo", r, "hooks", "install", "--agent", "codex", "--global",
    ])
    .code(0)
    .stdout_has("/hooks");
    let file = home.join(".codex/hooks.json");
    let hooks: Value = serde_json::from_str(&read(&home, ".codex/hooks.json")).unwrap();
    assert!(ours(&hooks, "SessionStart").ends_with("hooks run session-start --agent codex"));
    assert!(ours(&hooks, "SessionEnd").ends_with("hooks run session-end --agent codex"));
    env.cairn(&["hooks", "uninstall", "--agent", "codex", "--global"])
        .code(0);
    assert!(!file.exists());
    assert!(
        !home.join(".codex").exists(),
        "the folder install made is gone"
    );

    // $CODEX_HOME is where Codex keeps its configuration when set.
    let codex_home = env.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let mut cmd = env.command(BIN, env.path());
    cmd.args([
        "--repo", r, "hooks", "install", "--agent", "codex", "--global",
    ])
    .env("CODEX_HOME", &codex_home);
    Run::from(cmd.output().unwrap()).code(0);
    assert!(codex_home.join("hooks.json").is_file());

    env.cairn(&[
        "--repo",
        r,
        "hooks",
        "install",
        "--agent",
        "claude-code",
        "--global",
    ])
    .code(0);
    assert!(home.join(".claude/settings.json").is_file());
    env.cairn(&["--repo", r, "hooks", "install", "--agent", "pi", "--global"])
        .code(0);
    let ext = read(&home, ".pi/agent/extensions/cairn.ts");
    assert!(ext.starts_with("// cairn: agent hooks for pi"), "{ext}");
    env.cairn(&["hooks", "uninstall", "--agent", "pi", "--global"])
        .code(0);
    assert!(!home.join(".pi").exists());
}

#[test]
fn pi_install_never_overwrites_an_extension_of_the_persons_own() {
    let (env, repo, project) = repo_and_project();
    let file = project.join(".pi/extensions/cairn.ts");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "export default function (pi) {}\n").unwrap();
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "pi",
        ],
    )
    .code(2)
    .stderr_has("not cairn's extension");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "export default function (pi) {}\n"
    );
}

/// pi 0.73 loads a project's extensions with no trust asked (install said it would ask), from
/// the folder it starts in only; an index.ts there makes it load nothing else.
#[test]
fn pi_install_says_what_pi_0_73_does_with_the_extension() {
    let (env, repo, project) = repo_and_project();
    let r = repo.to_str().unwrap();
    let run = env
        .cairn_in(
            &project,
            &["--repo", r, "hooks", "install", "--agent", "pi"],
        )
        .code(0);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(!said.contains("trust"), "{said}");
    assert!(said.contains("pi loads it when started in"), "{said}");
    assert!(!said.contains("will not load"), "{said}");
    let folder = project.join(".pi/extensions");
    std::fs::write(folder.join("index.ts"), "export default function (pi) {}\n").unwrap();
    env.cairn_in(
        &project,
        &["--repo", r, "hooks", "uninstall", "--agent", "pi"],
    )
    .code(0);
    let run = env
        .cairn_in(
            &project,
            &["--repo", r, "hooks", "install", "--agent", "pi"],
        )
        .code(0);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("pi will not load cairn.ts"), "{said}");
    assert!(said.contains("index.ts"), "{said}");
}

/// pi reads its agent folder from PI_CODING_AGENT_DIR when that is set (pi's config.js
/// getAgentDir), so --global writes there.
#[test]
fn pi_global_install_follows_pi_coding_agent_dir() {
    let (env, repo, _project) = repo_and_project();
    let agent_dir = env.path().join("pi-agent");
    let args = [
        "--repo",
        repo.to_str().unwrap(),
        "hooks",
        "install",
        "--agent",
        "pi",
        "--global",
    ];
    let mut cmd = env.command(BIN, env.path());
    cmd.args(args).env("PI_CODING_AGENT_DIR", &agent_dir);
    Run::from(cmd.output().unwrap()).code(0);
    let ext = std::fs::read_to_string(agent_dir.join("extensions/cairn.ts")).unwrap();
    assert!(ext.starts_with("// cairn: agent hooks for pi"), "{ext}");
    assert!(!env.home().join(".pi").exists());
    let mut cmd = env.command(BIN, env.path());
    cmd.args(["hooks", "uninstall", "--agent", "pi", "--global"])
        .env("PI_CODING_AGENT_DIR", &agent_dir);
    Run::from(cmd.output().unwrap()).code(0);
    assert!(!agent_dir.join("extensions/cairn.ts").exists());
}

#[test]
fn install_outside_a_git_work_tree_asks_for_a_scope() {
    let (env, repo, _project) = repo_and_project();
    let lone = env.path().join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    env.cairn_in(
        &lone,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "codex",
        ],
    )
    .code(2)
    .stderr_has("--project DIR");
    env.cairn_in(
        &lone,
        &["hooks", "install", "--agent", "cursor", "--global"],
    )
    .code(2)
    .stderr_has("unknown agent");
}

#[test]
fn claude_code_session_start_gets_the_briefing_as_additional_context() {
    let (env, repo, project) = repo_and_project();
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "claude-code",
        ],
    )
    .code(0);
    let settings: Value = serde_json::from_str(&read(&project, ".claude/settings.json")).unwrap();
    // What Claude Code sends a SessionStart hook (code.claude.com/docs/en/hooks), and a field
    // a newer version might add.
    let stdin = json!({
        "session_id": "0e9c1c4a-6b43-4e5f-9a55-4f8c2a3e9d11",
        "transcript_path": env.home().join(".claude/projects/-billing/0e9c1c4a.jsonl"),
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "model": "claude-opus-4-5",
        "some_future_field": {"nested": [1, 2]},
    });
    let run = run_command(&env, &project, &ours(&settings, "SessionStart"), &stdin).code(0);
    let out: Value = serde_json::from_str(run.stdout.trim()).expect("one JSON object");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.starts_with("# Briefing: billing"), "{context}");
    assert!(
        context.contains("Run cargo fmt before every commit"),
        "{context}"
    );
    assert!(context.contains("rolled out billing v2"), "{context}");
    let events = telemetry(&repo);
    let e = event(&events, "session-start").expect("a telemetry event");
    assert_eq!(e["success"], true);
    assert_eq!(e["metadata"]["agent"], "claude-code");
    assert_eq!(e["metadata"]["why"], "startup");
}

#[test]
fn codex_session_start_gets_the_briefing_as_additional_context() {
    let (env, repo, project) = repo_and_project();
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "codex",
        ],
    )
    .code(0);
    let hooks: Value = serde_json::from_str(&read(&project, ".codex/hooks.json")).unwrap();
    // Codex's session-start.command.input (codex-rs hooks/schema): transcript_path may be null.
    let stdin = json!({
        "session_id": "019e1625-789d-76c0-80ab-3724b5ddb799",
        "transcript_path": null,
        "cwd": project,
        "hook_event_name": "SessionStart",
        "model": "gpt-5.5-codex",
        "permission_mode": "default",
        "source": "resume",
    });
    let run = run_command(&env, &project, &ours(&hooks, "SessionStart"), &stdin).code(0);
    let out: Value = serde_json::from_str(run.stdout.trim()).expect("one JSON object");
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("Run cargo fmt before every commit"),
        "{context}"
    );
}

#[test]
fn pi_session_start_returns_the_briefing_as_plain_markdown() {
    let (env, repo, project) = repo_and_project();
    let stdin = json!({
        "hook_event_name": "session_start",
        "session_id": "ffae836b-9420-4060-ac13-7745215f90ff",
        "transcript_path": null,
        "cwd": project,
        "reason": "startup",
    });
    let run = hook(&env, &repo, "pi", "session-start", &stdin.to_string()).code(0);
    assert!(
        run.stdout.starts_with("# Briefing: billing"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Run cargo fmt before every commit"));
}

/// The extension itself, run by node (it is plain JavaScript inside) against a stand-in for
/// pi 0.73's API: the briefing is fetched at session_start and added to the system prompt
/// before_agent_start hands it, once, at every prompt; a compaction is left alone. (The real pi
/// is run by tests/agents/pi.test.mjs.)
#[test]
fn the_pi_extension_hands_the_briefing_to_pi() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("node is not installed: the pi extension is not run here");
        return;
    }
    let (env, repo, project) = repo_and_project();
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "pi",
        ],
    )
    .code(0);
    let module = env.path().join("cairn-extension.mjs");
    std::fs::copy(project.join(".pi/extensions/cairn.ts"), &module).unwrap();
    let driver = format!(
        r#"const ext = (await import({module})).default;
const handlers = {{}};
ext({{ on: (name, fn) => {{ handlers[name] = fn; }} }});
const ctx = {{ cwd: {cwd}, sessionManager: {{ getSessionId: () => "s1", getSessionFile: () => undefined }} }};
const started = await handlers["session_start"]({{ type: "session_start", reason: "startup" }}, ctx);
const base = "You are pi.";
const first = await handlers["before_agent_start"]({{ type: "before_agent_start", prompt: "a", systemPrompt: base }}, ctx);
const second = await handlers["before_agent_start"]({{ type: "before_agent_start", prompt: "b", systemPrompt: base }}, ctx);
const again = await handlers["before_agent_start"]({{ type: "before_agent_start", prompt: "c", systemPrompt: first.systemPrompt }}, ctx);
const compacted = await handlers["session_compact"]({{ type: "session_compact" }}, ctx);
// A pi that did not take the briefing into its system prompt is told on stderr.
await handlers["agent_start"]({{ type: "agent_start" }}, {{ ...ctx, getSystemPrompt: () => first.systemPrompt }});
console.error("-- now one that dropped it --");
await handlers["agent_start"]({{ type: "agent_start" }}, {{ ...ctx, getSystemPrompt: () => base }});
console.log(JSON.stringify({{ started: started ?? null, first, second, again: again ?? null, compacted: compacted ?? null, names: Object.keys(handlers).sort() }}));
"#,
        module = json!(module),
        cwd = json!(project),
    );
    let run = with_stdin(
        &env,
        &project,
        "node",
        &["--input-type=module", "-e", &driver],
        "",
    )
    .code(0);
    let out: Value = serde_json::from_str(run.stdout.trim()).expect("the driver's JSON");
    assert_eq!(
        out["names"],
        json!([
            "agent_start",
            "before_agent_start",
            "session_compact",
            "session_shutdown",
            "session_start"
        ])
    );
    // pi drops what session_start returns: the briefing goes in before every prompt.
    assert_eq!(out["started"], Value::Null);
    let prompt = out["first"]["systemPrompt"].as_str().unwrap();
    assert!(prompt.starts_with("You are pi.\n\n# Briefing"), "{prompt}");
    assert_eq!(
        prompt.matches("Run cargo fmt before every commit").count(),
        1
    );
    assert_eq!(out["second"], out["first"]);
    // A system prompt that holds it already is left as it is.
    assert_eq!(out["again"], Value::Null);
    // The check at agent_start is quiet when the briefing is there, loud when it is not.
    let (kept, dropped) = run
        .stderr
        .split_once("-- now one that dropped it --")
        .unwrap();
    assert!(!kept.contains("cairn:"), "{kept}");
    assert!(
        dropped.contains("cairn: pi did not put the briefing"),
        "{dropped}"
    );
    // A compaction is neither cancelled nor replaced.
    assert_eq!(out["compacted"], Value::Null);
}

#[test]
fn a_hook_without_a_repository_prints_nothing_and_exits_0() {
    let env = Env::new();
    let missing = env.path().join("no-repo");
    let run = hook(
        &env,
        &missing,
        "claude-code",
        "session-start",
        r#"{"hook_event_name":"SessionStart","source":"startup"}"#,
    )
    .code(0);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("session-start hook"), "{}", run.stderr);
}

#[test]
fn a_failed_briefing_is_logged_to_telemetry_and_the_agent_goes_on() {
    let (env, repo, _project) = repo_and_project();
    // MEMORY.md that cannot be read (a folder in its place).
    std::fs::remove_file(repo.join("MEMORY.md")).unwrap();
    std::fs::create_dir_all(repo.join("MEMORY.md")).unwrap();
    let run = hook(&env, &repo, "codex", "session-start", "{}").code(0);
    assert_eq!(run.stdout, "");
    let events = telemetry(&repo);
    let e = event(&events, "session-start").expect("a telemetry event");
    assert_eq!(e["success"], false);
    let errors = e["metadata"]["errors"].to_string();
    assert!(errors.contains("no briefing"), "{errors}");
}

#[test]
fn stdin_that_is_not_json_still_gets_a_briefing_and_is_logged() {
    let (env, repo, _project) = repo_and_project();
    let run = hook(
        &env,
        &repo,
        "claude-code",
        "session-start",
        "not json at all",
    )
    .code(0);
    let out: Value = serde_json::from_str(run.stdout.trim()).expect("one JSON object");
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("Run cargo fmt")
    );
    let events = telemetry(&repo);
    let e = event(&events, "session-start").unwrap();
    assert_eq!(e["success"], false);
    assert!(e["metadata"]["errors"].to_string().contains("not JSON"));
}

#[test]
fn session_end_without_a_transcript_is_logged_and_exits_0() {
    let (env, repo, _project) = repo_and_project();
    let stdin = json!({"session_id": "s", "cwd": "/nowhere", "hook_event_name": "SessionEnd", "reason": "clear"});
    let run = hook(
        &env,
        &repo,
        "claude-code",
        "session-end",
        &stdin.to_string(),
    )
    .code(0);
    assert_eq!(run.stdout, "");
    let events = telemetry(&repo);
    let e = event(&events, "session-end").unwrap();
    assert_eq!(e["success"], false);
    assert!(
        e["metadata"]["errors"]
            .to_string()
            .contains("transcript_path")
    );
}

/// A fixture transcript copied where the agent keeps its sessions.
fn transcript(env: &Env, fixture: &str, dest: &str) -> PathBuf {
    let to = env.home().join(dest);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("sessions").join(fixture), &to).unwrap();
    to
}

fn log(env: &Env, repo: &Path) -> String {
    env.git(repo, &["log", "--format=%s"])
}

#[test]
fn claude_code_pre_compact_ingests_and_observes_the_transcript_in_the_background() {
    let (env, repo, project) = repo_and_project();
    env.cairn_in(
        &project,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "hooks",
            "install",
            "--agent",
            "claude-code",
        ],
    )
    .code(0);
    let settings: Value = serde_json::from_str(&read(&project, ".claude/settings.json")).unwrap();
    let session = "624a4a58-b34c-462d-a70d-13421c8125a8";
    let path = transcript(
        &env,
        "claude-code/session-624a4a58.jsonl",
        &format!(".claude/projects/-billing/{session}.jsonl"),
    );
    // What Claude Code sends a PreCompact hook.
    let stdin = json!({
        "session_id": session,
        "transcript_path": path,
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    });
    let run = run_command(&env, &project, &ours(&settings, "PreCompact"), &stdin).code(0);
    assert_eq!(run.stdout, "");
    let pid = event(&telemetry(&repo), "pre-compact").unwrap()["metadata"]["detached"].clone();
    assert!(
        pid.as_u64().is_some(),
        "a background process was started: {pid}"
    );
    wait_for("the background ingest", || {
        event(&telemetry(&repo), "pre-compact-ingest").is_some()
    });
    let events = telemetry(&repo);
    let done = event(&events, "pre-compact-ingest").unwrap();
    assert_eq!(done["success"], true, "{done}");
    assert_eq!(done["metadata"]["cards"], 15);
    assert!(
        repo.join(format!("vault/sessions/claude/{session}.jsonl"))
            .is_file()
    );
    let observed = done["metadata"]["observed"]["allowed"].as_u64().unwrap();
    assert!(observed > 0, "{done}");
    let subjects = log(&env, &repo);
    assert!(subjects.contains("sessions: ingest 15 turns"), "{subjects}");
    assert!(subjects.contains("observe: "), "{subjects}");
    assert_eq!(
        git_status(&env, &repo),
        "",
        "everything it wrote is committed"
    );

    // The same transcript at SessionEnd: nothing new, nothing written.
    let end = json!({
        "session_id": session,
        "transcript_path": path,
        "cwd": project,
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    });
    run_command(&env, &project, &ours(&settings, "SessionEnd"), &end).code(0);
    wait_for("the second background ingest", || {
        event(&telemetry(&repo), "session-end-ingest").is_some()
    });
    assert_eq!(
        event(&telemetry(&repo), "session-end-ingest").unwrap()["metadata"]["cards"],
        0
    );
    assert_eq!(log(&env, &repo), subjects);
}

#[test]
fn codex_and_pi_session_ends_ingest_their_transcripts_concurrently_under_the_lock() {
    let (env, repo, project) = repo_and_project();
    let codex = transcript(
        &env,
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        ".codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    );
    let pi = transcript(
        &env,
        "pi/before-compaction.jsonl",
        ".pi/agent/sessions/--billing--/2026-05-11T11-00-00-000Z_ffae836b-9420-4060-ac13-7745215f90ff.jsonl",
    );
    // Codex's session-end.command.input, and what cairn's pi extension sends at shutdown.
    let codex_in = json!({
        "session_id": "019e1625-789d-76c0-80ab-3724b5ddb799",
        "transcript_path": codex,
        "cwd": project,
        "hook_event_name": "SessionEnd",
        "reason": "other",
    });
    let pi_in = json!({
        "hook_event_name": "session_shutdown",
        "session_id": "ffae836b-9420-4060-ac13-7745215f90ff",
        "transcript_path": pi,
        "cwd": project,
        "reason": "quit",
    });
    // Both at once: two background writers, each taking the repository lock.
    hook(&env, &repo, "codex", "session-end", &codex_in.to_string()).code(0);
    hook(&env, &repo, "pi", "session-end", &pi_in.to_string()).code(0);
    wait_for("both background ingests", || {
        telemetry(&repo)
            .iter()
            .filter(|e| e["action"] == "session-end-ingest")
            .count()
            == 2
    });
    for e in telemetry(&repo)
        .iter()
        .filter(|e| e["action"] == "session-end-ingest")
    {
        assert_eq!(e["success"], true, "{e}");
    }
    assert!(
        repo.join("vault/sessions/codex/019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
            .is_file()
    );
    assert!(
        repo.join("vault/sessions/pi/ffae836b-9420-4060-ac13-7745215f90ff.jsonl")
            .is_file()
    );
    let subjects = log(&env, &repo);
    assert_eq!(
        subjects.matches("sessions: ingest").count(),
        2,
        "{subjects}"
    );
    assert_eq!(subjects.matches("observe: ").count(), 2, "{subjects}");
    assert_eq!(git_status(&env, &repo), "");
    // The observations of both sessions are there, each once.
    let stored = jsonl_lines(&repo.join("vault/observations"));
    for session in ["codex/019e1625", "pi/ffae836b"] {
        assert!(
            stored.iter().any(|o| o["session_id"]
                .as_str()
                .is_some_and(|s| s.starts_with(session))),
            "no observation of {session}"
        );
    }
}

/// The `timeout` of every hook in `event`'s groups of a hooks file.
fn timeouts(settings: &Value, event: &str) -> Vec<u64> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["timeout"].as_u64())
        .collect()
}

#[test]
fn codex_hooks_get_timeouts_codex_does_not_clamp_and_reinstall_mends_an_old_one() {
    // Codex 0.171 allows a SessionEnd hook at most 3 s and clamps more, with "warning: clamping
    // SessionEnd hook timeout to 3s" at every run (issue 31, item 3); its other events take any
    // value of at least 1 s.
    let (env, repo, _project) = repo_and_project();
    let r = repo.to_str().unwrap();
    let install = || {
        env.cairn(&[
            "--repo", r, "hooks", "install", "--agent", "codex", "--global",
        ])
        .code(0)
    };
    install();
    let file = env.home().join(".codex/hooks.json");
    let hooks: Value = serde_json::from_str(&read(&env.home(), ".codex/hooks.json")).unwrap();
    assert_eq!(timeouts(&hooks, "SessionEnd"), vec![3]);
    assert_eq!(timeouts(&hooks, "SessionStart"), vec![10]);
    assert_eq!(timeouts(&hooks, "PreCompact"), vec![10]);

    // A hooks.json from an earlier install (SessionEnd at 10 s) is mended in place.
    let fresh = std::fs::read_to_string(&file).unwrap();
    let old = fresh.replacen("\"timeout\": 3", "\"timeout\": 10", 1);
    assert_ne!(old, fresh, "{fresh}");
    std::fs::write(&file, &old).unwrap();
    install();
    let mended: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(timeouts(&mended, "SessionEnd"), vec![3]);

    // Claude Code's hooks keep their 10 s.
    env.cairn(&[
        "--repo",
        r,
        "hooks",
        "install",
        "--agent",
        "claude-code",
        "--global",
    ])
    .code(0);
    let claude: Value = serde_json::from_str(&read(&env.home(), ".claude/settings.json")).unwrap();
    assert_eq!(timeouts(&claude, "SessionEnd"), vec![10]);
}
