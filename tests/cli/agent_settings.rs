//! `cairn hooks install|uninstall --agent claude-code|codex` on settings files as people have
//! them (issue 31): one that starts with a UTF-8 byte order mark, one that was `{}` or held
//! empty hook lists before install, and one where a person added a hook of their own to
//! cairn's matcher group. Uninstall gives back the person's bytes in each.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

const AGENTS: [(&str, &str); 2] = [
    ("claude-code", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
];

/// `cairn hooks install|uninstall --agent AGENT --project PROJECT` (with `--repo` for install).
fn hooks(env: &Env, repo: &Path, project: &Path, verb: &str, agent: &str) -> Run {
    let mut args = vec!["--json"];
    if verb == "install" {
        args.extend(["--repo", repo.to_str().unwrap()]);
    }
    args.extend([
        "hooks",
        verb,
        "--agent",
        agent,
        "--project",
        project.to_str().unwrap(),
    ]);
    env.cairn(&args)
}

/// A project folder whose `rel` settings file holds `bytes`.
fn project_with(env: &Env, name: &str, rel: &str, bytes: &[u8]) -> (PathBuf, PathBuf) {
    let project = env.path().join(name);
    let file = project.join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, bytes).unwrap();
    (project, file)
}

fn commands(text: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
    let mut out = Vec::new();
    for (_, groups) in v["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().into_iter().flatten() {
            for h in g["hooks"].as_array().into_iter().flatten() {
                out.push(h["command"].as_str().unwrap_or("").to_string());
            }
        }
    }
    out
}

#[test]
fn settings_that_start_with_a_byte_order_mark_are_edited_and_keep_it() {
    let (env, repo) = Env::repo();
    let original = "\u{feff}{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"SessionEnd\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"echo bye\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    for (agent, rel) in AGENTS {
        let (project, file) = project_with(&env, agent, rel, original.as_bytes());
        let data = hooks(&env, &repo, &project, "install", agent)
            .code(0)
            .data();
        assert_eq!(data["changed"], true, "{agent}: {data}");
        let installed = std::fs::read_to_string(&file).unwrap();
        assert!(installed.starts_with("\u{feff}{"), "{agent}: {installed}");
        let cmds = commands(&installed);
        assert!(cmds.contains(&"echo bye".to_string()), "{agent}: {cmds:?}");
        assert_eq!(
            cmds.iter().filter(|c| c.contains(" hooks run ")).count(),
            3,
            "{agent}: {cmds:?}"
        );
        hooks(&env, &repo, &project, "uninstall", agent).code(0);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{agent}");
    }
}

#[test]
fn uninstall_gives_back_settings_that_were_empty_or_held_empty_lists() {
    let (env, repo) = Env::repo();
    let originals = [
        "{}",
        "{}\n",
        "{\"hooks\": {}}",
        "{\n  \"hooks\": {}\n}\n",
        "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"SessionEnd\": []\n  }\n}\n",
        "{\"hooks\":{\"SessionStart\":[],\"PreCompact\":[ ],\"SessionEnd\":[\n]}}",
    ];
    for (agent, rel) in AGENTS {
        for (i, original) in originals.iter().enumerate() {
            let (project, file) =
                project_with(&env, &format!("{agent}-{i}"), rel, original.as_bytes());
            let data = hooks(&env, &repo, &project, "install", agent)
                .code(0)
                .data();
            assert_eq!(data["changed"], true, "{agent} {original:?}: {data}");
            let installed = std::fs::read_to_string(&file).unwrap();
            assert_eq!(commands(&installed).len(), 3, "{agent}: {installed}");
            let data = hooks(&env, &repo, &project, "uninstall", agent)
                .code(0)
                .data();
            assert_eq!(data["deleted"], false, "{agent} {original:?}: {data}");
            assert_eq!(
                std::fs::read_to_string(&file).unwrap(),
                *original,
                "{agent}: install then uninstall changed the file"
            );
        }
        // A file install made is still deleted by uninstall, with the folder it made.
        let project = env.path().join(format!("{agent}-fresh"));
        std::fs::create_dir_all(&project).unwrap();
        hooks(&env, &repo, &project, "install", agent).code(0);
        assert!(project.join(rel).is_file());
        let data = hooks(&env, &repo, &project, "uninstall", agent)
            .code(0)
            .data();
        assert_eq!(data["deleted"], true, "{data}");
        assert!(!project.join(rel).parent().unwrap().exists());
    }
}

#[test]
fn uninstall_removes_only_cairns_hook_from_a_group_a_person_added_to() {
    let (env, repo) = Env::repo();
    let original = "{\n  \"model\": \"opus\"\n}\n";
    for (agent, rel) in AGENTS {
        let (project, file) = project_with(&env, agent, rel, original.as_bytes());
        hooks(&env, &repo, &project, "install", agent).code(0);
        // The person adds a hook of their own into cairn's SessionEnd group, after cairn's.
        let installed = std::fs::read_to_string(&file).unwrap();
        let ours = format!("hooks run session-end --agent {agent}\"");
        let at = installed.find(&ours).expect("cairn's SessionEnd hook");
        let close = at + installed[at..].find('}').unwrap() + 1;
        let mine = ", {\"type\": \"command\", \"command\": \"notify-send bye\"}";
        let edited = format!("{}{mine}{}", &installed[..close], &installed[close..]);
        std::fs::write(&file, &edited).unwrap();
        let v: Value = serde_json::from_str(&edited).unwrap();
        assert_eq!(
            v["hooks"]["SessionEnd"][0]["hooks"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        let data = hooks(&env, &repo, &project, "uninstall", agent)
            .code(0)
            .data();
        assert_eq!(data["deleted"], false, "{agent}: {data}");
        let after = std::fs::read_to_string(&file).unwrap();
        let cmds = commands(&after);
        assert_eq!(
            cmds,
            ["notify-send bye"],
            "{agent}: only the person's hook is left:\n{after}"
        );
        let v: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(
            v["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
            "notify-send bye"
        );
        // Nothing of cairn's is left, so a second uninstall changes nothing.
        let again = hooks(&env, &repo, &project, "uninstall", agent)
            .code(0)
            .data();
        assert_eq!(again["changed"], false, "{again}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    }
}
