//! The agents' own memories read by `sessions ingest --all` (issue 35, ADRs 135-136): Claude
//! Code's auto memory folder and Codex's `memories_1.sqlite` (made with the migrations the real
//! Codex 0.171.0 ships, `tests/fixtures/agent-memories/codex-memories.sql`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Env, fixtures};

const FACT: &str = "The billing service's integration tests need the Postgres container started with docker compose first";
const CODEX_ONLY: &str =
    "The staging database of the billing service is reset every Monday at 06:00 UTC";
const INDEX_ONLY: &str =
    "Deploys of the billing service go to the canary cluster for one hour first";

fn claude_dir(home: &Path) -> PathBuf {
    home.join(".claude/projects/-work-billing/memory")
}

fn write_claude(home: &Path, index: &str) {
    let dir = claude_dir(home);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("project_tests.md"),
        format!("---\nname: integration-tests\ndescription: what the tests need\ntype: project\n---\n\n{FACT}.\n"),
    )
    .unwrap();
    std::fs::write(dir.join("MEMORY.md"), index).unwrap();
}

fn codex_db(home: &Path) -> rusqlite::Connection {
    let dir = home.join(".codex");
    std::fs::create_dir_all(&dir).unwrap();
    rusqlite::Connection::open(dir.join("memories_1.sqlite")).unwrap()
}

fn codex_schema(db: &rusqlite::Connection) {
    let sql =
        std::fs::read_to_string(fixtures().join("agent-memories/codex-memories.sql")).unwrap();
    db.execute_batch(&sql).unwrap();
}

fn codex_row(db: &rusqlite::Connection, thread: &str, text: &str, generated: i64) {
    db.execute(
        "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, \
         rollout_slug, generated_at) VALUES (?1, ?2, ?3, '', NULL, ?2) \
         ON CONFLICT(thread_id) DO UPDATE SET raw_memory = excluded.raw_memory, \
         generated_at = excluded.generated_at, source_updated_at = excluded.source_updated_at",
        rusqlite::params![thread, generated, text],
    )
    .unwrap();
}

/// Every observation record (not event) of the store, and every event.
fn store(repo: &Path) -> (Vec<Value>, Vec<Value>) {
    let mut obs = Vec::new();
    let mut events = Vec::new();
    for e in std::fs::read_dir(repo.join("vault/observations"))
        .unwrap()
        .flatten()
    {
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v.get("op").is_some() {
                events.push(v);
            } else {
                obs.push(v);
            }
        }
    }
    (obs, events)
}

fn ingest(env: &Env, repo: &Path) -> Value {
    let run = env
        .cairn_in(repo, &["--json", "sessions", "ingest", "--all"])
        .code(0);
    run.data()["memories"].clone()
}

#[test]
fn agent_memories_become_one_observation_each_followed_through_edits_and_deletions() {
    let (env, repo) = Env::repo();
    let home = env.home();
    // The fact is already in cairn, and both agents learned it too.
    env.cairn_in(&repo, &["remember", &format!("{FACT}.")])
        .code(0);
    write_claude(
        &home,
        &format!("- [Integration tests](project_tests.md) — what they need\n- {INDEX_ONLY}\n"),
    );
    let db = codex_db(&home);
    codex_schema(&db);
    codex_row(
        &db,
        "019a0000-0000-7000-8000-000000000001",
        &format!("{FACT}."),
        1_764_900_000,
    );
    codex_row(
        &db,
        "019a0000-0000-7000-8000-000000000002",
        CODEX_ONLY,
        1_764_903_600,
    );

    let m = ingest(&env, &repo);
    assert_eq!(m["read"], 4, "{m}");
    assert_eq!(m["stored"], 2, "{m}");
    assert_eq!(
        m["merged"], 2,
        "the fact from both agents merges into cairn's own: {m}"
    );
    let (obs, events) = store(&repo);
    let fact: Vec<&Value> = obs
        .iter()
        .filter(|o| {
            o["observation"]
                .as_str()
                .unwrap()
                .starts_with("The billing service's integration")
        })
        .collect();
    assert_eq!(fact.len(), 1, "one observation of the fact: {obs:?}");
    assert_eq!(events.iter().filter(|e| e["op"] == "merge").count(), 2);
    let codex = obs
        .iter()
        .find(|o| o["observation"] == CODEX_ONLY)
        .expect("the Codex-only memory is stored");
    assert_eq!(
        codex["timestamp"], "2025-12-05T03:00:00.000Z",
        "the row's own time"
    );
    let source = codex["source"].as_str().unwrap();
    assert!(
        source.starts_with("codex-memory:")
            && source.ends_with("#019a0000-0000-7000-8000-000000000002"),
        "{source}"
    );
    let index = obs
        .iter()
        .find(|o| o["observation"] == INDEX_ONLY)
        .expect("the index entry that points at no file is a memory");
    assert!(
        index["source"]
            .as_str()
            .unwrap()
            .starts_with("claude-code-memory:")
    );
    let log = env.git(&repo, &["log", "-1", "--format=%s"]);
    assert!(log.contains("2 agent memories"), "{log}");

    // Re-ingest writes nothing.
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let m = ingest(&env, &repo);
    assert_eq!(m["unchanged"], m["files"], "{m}");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
    // Without the checkpoints every file is read again, and still nothing is written.
    std::fs::remove_file(repo.join(".cairn/agent-memories.json")).unwrap();
    let m = ingest(&env, &repo);
    assert_eq!(m["stored"], 0, "{m}");
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);

    // Codex summarizes the thread again: the new text supersedes the old observation.
    let edited = "The staging database of the billing service is reset every Tuesday at 05:00 UTC";
    codex_row(
        &db,
        "019a0000-0000-7000-8000-000000000002",
        edited,
        1_764_990_000,
    );
    drop(db);
    // Claude Code drops the index entry.
    write_claude(
        &home,
        "- [Integration tests](project_tests.md) — what they need\n",
    );
    let m = ingest(&env, &repo);
    assert_eq!(m["superseded"], 1, "{m}");
    assert_eq!(m["stale"], 1, "{m}");
    let (obs, events) = store(&repo);
    let old = obs.iter().find(|o| o["observation"] == CODEX_ONLY).unwrap();
    let new = obs.iter().find(|o| o["observation"] == edited).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["op"] == "supersede" && e["id"] == old["id"] && e["by"] == new["id"])
    );
    let gone = obs.iter().find(|o| o["observation"] == INDEX_ONLY).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["op"] == "stale" && e["id"] == gone["id"])
    );
    // And once more: nothing.
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    ingest(&env, &repo);
    assert_eq!(env.git(&repo, &["rev-parse", "HEAD"]), head);
}

#[test]
fn an_agent_memory_of_an_unknown_format_is_skipped_naming_its_file() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let db = codex_db(&home);
    db.execute_batch("CREATE TABLE stage1_outputs (thread_id TEXT PRIMARY KEY, memory BLOB);")
        .unwrap();
    drop(db);
    let dir = claude_dir(&home);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("broken.md"),
        "---\nname: broken\ndescription: a frontmatter that never ends\n",
    )
    .unwrap();
    let run = env
        .cairn_in(&repo, &["--json", "sessions", "ingest", "--all"])
        .code(0);
    let skipped = run.data()["memories"]["skipped"].clone();
    let text = skipped.to_string();
    assert!(
        text.contains("memories_1.sqlite") && text.contains("no column raw_memory"),
        "{text}"
    );
    assert!(
        text.contains("broken.md") && text.contains("never closes"),
        "{text}"
    );
    assert!(run.stderr.contains("broken.md"), "{}", run.stderr);
    assert!(!repo.join("vault/observations").exists() || store(&repo).0.is_empty());
}

/// Claude Code's folder name for a project root (ADR 135).
fn sanitized(root: &Path) -> String {
    root.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[test]
fn the_claude_code_briefing_leaves_out_what_claude_code_loads_from_its_own_index() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let project = env.path().join("billing");
    std::fs::create_dir_all(&project).unwrap();
    env.git(&project, &["init", "-q"]);
    let project = project.canonicalize().unwrap();
    let dir = home
        .join(".claude/projects")
        .join(sanitized(&project))
        .join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("project_billing.md"),
        "---\nname: billing\ndescription: billing tests\ntype: project\n---\n\nThe billing service integration tests need the postgres container from docker compose\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("MEMORY.md"),
        "- [Billing tests](project_billing.md) — postgres container\n",
    )
    .unwrap();
    // Codex learned something about billing that Claude Code does not load.
    let db = codex_db(&home);
    codex_schema(&db);
    codex_row(
        &db,
        "019a0000-0000-7000-8000-000000000009",
        "The billing service deploys need a canary hour on the staging cluster",
        1_764_900_000,
    );
    drop(db);
    env.cairn_in(&repo, &["sessions", "ingest", "--all"])
        .code(0);
    let brief = |agent: &str| {
        env.cairn_in(
            &project,
            &["--repo", repo.to_str().unwrap(), "brief", "--agent", agent],
        )
        .code(0)
        .stdout
    };
    let claude = brief("claude-code");
    assert!(!claude.contains("postgres container"), "{claude}");
    assert!(
        claude.contains("Left out: 1 memory Claude Code already loads from its own"),
        "{claude}"
    );
    assert!(
        claude.contains("canary hour"),
        "what only cairn holds is briefed: {claude}"
    );
    let codex = brief("codex");
    assert!(
        codex.contains("postgres container"),
        "Codex does not load Claude Code's index: {codex}"
    );
    assert!(!codex.contains("Left out: 1 memory"), "{codex}");
}

#[test]
fn why_names_the_agent_memory_and_forget_says_where_the_agents_copy_stays() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let db = codex_db(&home);
    codex_schema(&db);
    let thread = "019a0000-0000-7000-8000-00000000000a";
    codex_row(&db, thread, CODEX_ONLY, 1_764_900_000);
    env.cairn_in(&repo, &["sessions", "ingest", "--all"])
        .code(0);
    let (obs, _) = store(&repo);
    let id = obs[0]["id"].as_str().unwrap().to_string();
    let why = env.cairn_in(&repo, &["why", &id]).code(0).stdout;
    assert!(
        why.contains("codex-memory:") && why.contains(&format!("memories_1.sqlite#{thread}")),
        "{why}"
    );
    let forget = env.cairn_in(&repo, &["forget", &id, "--yes"]).code(0);
    assert!(
        forget.stderr.contains(&format!(
            "codex keeps its own copy at {}",
            home.join(".codex/memories_1.sqlite").display()
        )),
        "{}",
        forget.stderr
    );
    let rows: i64 = db
        .query_row("SELECT count(*) FROM stage1_outputs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1, "the agent's own memory is left where it is");
    // Codex writes again: what was forgotten does not come back.
    codex_row(
        &db,
        "019a0000-0000-7000-8000-00000000000b",
        "The billing service release notes go to the payments channel",
        1_764_990_000,
    );
    drop(db);
    let m = ingest(&env, &repo);
    assert_eq!(m["read"], 1, "{m}");
    let (obs, _) = store(&repo);
    assert!(
        !obs.iter().any(|o| o["observation"] == CODEX_ONLY),
        "{obs:?}"
    );
}

// Issue 35, "review across agents": a memory an agent kept on its own is proposed for MEMORY.md
// like any observation, and the proposal's source says which agent and file it came from.
#[test]
fn an_agents_own_memory_is_proposed_for_memory_md_and_traced_to_its_file() {
    let (env, repo) = Env::repo();
    let home = env.home();
    let dir = claude_dir(&home);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("feedback_migrations.md"),
        "---\nname: migrations\ndescription: how schema changes are made\ntype: feedback\n---\n\n\
         Never edit a migration that has been merged; add a new migration instead.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("MEMORY.md"),
        "- [Migrations](feedback_migrations.md) — how schema changes are made\n",
    )
    .unwrap();
    let m = ingest(&env, &repo);
    assert_eq!(m["stored"], 1, "{m}");
    let reflected = env
        .cairn_in(&repo, &["--json", "reflect", "--reflector", "builtin"])
        .code(0)
        .data();
    let proposals = reflected["proposals"].as_array().expect("proposals");
    let p = proposals
        .iter()
        .find(|p| p["text"].as_str().unwrap_or("").contains("migration"))
        .unwrap_or_else(|| panic!("the agent's memory is proposed: {reflected}"));
    let cited = p["observations"][0].as_str().expect("a cited observation");
    let why = env.cairn_in(&repo, &["why", cited]).code(0).stdout;
    assert!(
        why.contains("claude-code-memory:") && why.contains("feedback_migrations.md"),
        "why names the agent and the file: {why}"
    );
}
