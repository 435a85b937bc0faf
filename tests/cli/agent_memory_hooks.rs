//! `cairn hooks install|uninstall --agent claude-code --memory` (issue 35, ADR 138): Claude
//! Code's auto memory kept in the knowledge repository, its default folder imported first,
//! each session end committing and reading what it wrote; uninstall gives the setting back
//! byte for byte and leaves the files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Env, fixtures};

const OLD: &str =
    "The billing service integration tests need the postgres container from docker compose";
const NEW: &str =
    "Deploys of the billing service wait one canary hour on the staging cluster first";

fn sanitized(root: &Path) -> String {
    root.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn topic(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join(file),
        format!("---\nname: {file}\ndescription: billing\ntype: project\n---\n\n{text}\n"),
    )
    .unwrap();
}

fn project(env: &Env) -> PathBuf {
    let project = env.path().join("billing");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q"]);
    project.canonicalize().unwrap()
}

fn git_out(env: &Env, repo: &Path, args: &[&str]) -> String {
    let out = env.command("git", repo).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn memory_install_moves_claude_codes_memory_into_the_repository_and_uninstall_gives_it_back() {
    let (env, repo) = Env::repo();
    let repo = repo.canonicalize().unwrap();
    let home = env.home();
    let project = project(&env);
    let default = home
        .join(".claude/projects")
        .join(sanitized(&project))
        .join("memory");
    topic(&default, "project_tests.md", OLD);
    std::fs::write(
        default.join("MEMORY.md"),
        "- [Billing tests](project_tests.md) — postgres container\n",
    )
    .unwrap();
    let local = project.join(".claude/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    let before = b"\xEF\xBB\xBF{\r\n    \"permissions\": { \"allow\": [] }\r\n}\r\n".to_vec();
    std::fs::write(&local, &before).unwrap();

    let r = repo.to_str().unwrap();
    let p = project.to_str().unwrap();
    let run = env
        .cairn_in(
            &project,
            &[
                "--repo",
                r,
                "--json",
                "hooks",
                "install",
                "--agent",
                "claude-code",
                "--project",
                p,
                "--memory",
            ],
        )
        .code(0);
    let folder = repo
        .join("agents/claude-code")
        .join(sanitized(&project))
        .join("memory");
    assert_eq!(run.data()["memory"]["folder"], folder.to_str().unwrap());
    let settings: Value = serde_json::from_str(
        std::fs::read_to_string(&local)
            .unwrap()
            .trim_start_matches('\u{feff}'),
    )
    .unwrap();
    assert_eq!(settings["autoMemoryDirectory"], folder.to_str().unwrap());
    assert_eq!(settings["permissions"]["allow"], serde_json::json!([]));
    // Imported, committed, and still in Claude Code's default folder.
    assert!(folder.join("project_tests.md").is_file());
    assert!(default.join("project_tests.md").is_file() && default.join("MEMORY.md").is_file());
    let tracked = git_out(&env, &repo, &["ls-files", "agents"]);
    assert!(tracked.contains("memory/project_tests.md"), "{tracked}");
    assert!(tracked.contains("memory/MEMORY.md"), "{tracked}");
    assert_eq!(git_out(&env, &repo, &["status", "--porcelain"]), "");

    // Claude Code writes a memory; the session-end hook commits it and reads it.
    topic(&folder, "project_deploys.md", NEW);
    std::fs::write(
        folder.join("MEMORY.md"),
        "- [Billing tests](project_tests.md) — postgres container\n- [Deploys](project_deploys.md) — canary hour\n",
    )
    .unwrap();
    // One that holds a secret is never committed.
    let corpus = std::fs::read_to_string(fixtures().join("secrets/corpus.txt")).unwrap();
    let secret = corpus
        .lines()
        .find_map(|l| l.strip_prefix("aws-access-key-id\t"))
        .unwrap();
    topic(
        &folder,
        "reference_ci.md",
        &format!("The CI deploy user runs {secret}"),
    );
    let transcript = std::fs::read_dir(fixtures().join("sessions/claude-code"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let copy = env.path().join("t.jsonl");
    std::fs::copy(&transcript, &copy).unwrap();
    let run = env
        .cairn_in(
            &project,
            &[
                "--repo",
                r,
                "--json",
                "hooks",
                "run",
                "session-end",
                "--agent",
                "claude-code",
                "--transcript",
                copy.to_str().unwrap(),
            ],
        )
        .code(0);
    assert_eq!(run.data()["memory"]["stored"], 2, "{}", run.stdout);
    let held = format!(
        "{}/reference_ci.md",
        folder.strip_prefix(&repo).unwrap().display()
    );
    assert_eq!(run.data()["memory"]["held"], serde_json::json!([held]));
    assert_eq!(
        git_out(&env, &repo, &["status", "--porcelain"]),
        format!("?? {held}\n")
    );
    let tracked = git_out(&env, &repo, &["ls-files", "agents"]);
    assert!(tracked.contains("memory/project_deploys.md"), "{tracked}");
    assert!(!tracked.contains("reference_ci.md"), "{tracked}");
    let committed = git_out(&env, &repo, &["log", "-p", "--all"]);
    assert!(!committed.contains(secret), "a secret reached git");
    let log = git_out(&env, &repo, &["log", "-1", "--format=%s", "--name-only"]);
    assert!(
        log.contains("project_deploys.md") && log.contains("vault/observations"),
        "{log}"
    );

    let recall = env
        .cairn_in(
            &project,
            &[
                "--repo",
                r,
                "--json",
                "recall",
                "canary hour staging deploys",
            ],
        )
        .code(0);
    let source = format!(
        "claude-code-memory:{}",
        folder.join("project_deploys.md").display()
    );
    assert!(recall.stdout.contains(&source), "{}", recall.stdout);

    // Claude Code loads both from its MEMORY.md: the briefing leaves them out.
    let brief = env
        .cairn_in(&project, &["--repo", r, "brief", "--agent", "claude-code"])
        .code(0)
        .stdout;
    assert!(!brief.contains("canary hour"), "{brief}");
    assert!(
        brief.contains("Left out: 2 memories Claude Code already loads"),
        "{brief}"
    );

    let run = env
        .cairn_in(
            &project,
            &[
                "--repo",
                r,
                "--json",
                "hooks",
                "uninstall",
                "--agent",
                "claude-code",
                "--project",
                p,
                "--memory",
            ],
        )
        .code(0);
    assert_eq!(run.data()["memory"]["changed"], true);
    assert_eq!(std::fs::read(&local).unwrap(), before);
    assert!(folder.join("project_deploys.md").is_file());
    assert!(
        run.stdout.contains(folder.to_str().unwrap()),
        "{}",
        run.stdout
    );
}

#[test]
fn uninstall_memory_gives_back_a_folder_the_person_had_chosen() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let project = project(&env);
    let mine = home.join("notes/claude");
    topic(&mine, "project_tests.md", OLD);
    let local = project.join(".claude/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    let before =
        b"{\n  \"autoMemoryDirectory\":\"~/notes/claude\" ,\n  \"model\": \"opus\"\n}".to_vec();
    std::fs::write(&local, &before).unwrap();
    let r = repo.to_str().unwrap();
    let p = project.to_str().unwrap();
    env.cairn_in(
        &project,
        &[
            "--repo",
            r,
            "hooks",
            "install",
            "--agent",
            "claude-code",
            "--project",
            p,
            "--memory",
        ],
    )
    .code(0);
    assert_ne!(std::fs::read(&local).unwrap(), before);
    let copied = repo
        .canonicalize()
        .unwrap()
        .join("agents/claude-code")
        .join(sanitized(&project))
        .join("memory/project_tests.md");
    assert!(
        copied.is_file(),
        "imported from the folder the setting named"
    );
    // `sessions ingest --all` reads the repository's folder as Claude Code's memory too.
    let folder = copied.parent().unwrap();
    topic(folder, "project_deploys.md", NEW);
    let run = env
        .cairn_in(
            &repo,
            &["--json", "sessions", "ingest", "--all", "--agent", "claude"],
        )
        .code(0);
    assert_eq!(run.data()["memories"]["stored"], 1, "{}", run.stdout);
    let recall = env
        .cairn_in(&repo, &["--json", "recall", "canary hour staging deploys"])
        .code(0);
    let source = format!(
        "claude-code-memory:{}",
        folder.join("project_deploys.md").display()
    );
    assert!(recall.stdout.contains(&source), "{}", recall.stdout);
    env.cairn_in(
        &project,
        &[
            "--repo",
            r,
            "hooks",
            "uninstall",
            "--agent",
            "claude-code",
            "--project",
            p,
            "--memory",
        ],
    )
    .code(0);
    assert_eq!(std::fs::read(&local).unwrap(), before);
    assert!(copied.is_file() && mine.join("project_tests.md").is_file());
    // --memory is a project's, and Claude Code's only.
    env.cairn_in(
        &project,
        &[
            "--repo",
            r,
            "hooks",
            "install",
            "--agent",
            "claude-code",
            "--global",
            "--memory",
        ],
    )
    .code(2);
    env.cairn_in(
        &project,
        &[
            "--repo",
            r,
            "hooks",
            "install",
            "--agent",
            "codex",
            "--project",
            p,
            "--memory",
        ],
    )
    .code(2);
}
