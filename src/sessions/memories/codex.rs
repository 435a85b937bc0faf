//! Codex's memories (checked in 0.171.0, ADR 135): `CODEX_HOME/memories_1.sqlite` (its
//! migrations are compiled into the binary; `tests/fixtures/agent-memories/codex-memories.sql`
//! holds them as 0.171.0 ships them), table `stage1_outputs`: one row per thread, upserted
//! when the thread is summarized again (`raw_memory`, `rollout_summary`, `rollout_slug`,
//! `generated_at` and `source_updated_at` in Unix seconds, `usage_count`, `last_usage`,
//! `selected_for_phase2`…). The folder `CODEX_HOME/memories` holds what phase 2 consolidates
//! from those rows (`MEMORY.md`, `memory_summary.md`, `rollout_summaries/`), so the rows are
//! read and the folder is not read twice.
//!
//! The database is opened read-only; a table without the columns read here is a format this
//! version does not know, and the file is skipped, named.

use std::path::Path;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};

use super::{Memory, Skipped};

/// The agent's name in sources.
pub const AGENT: &str = "codex";

/// The database's file name under `CODEX_HOME`.
pub const DATABASE: &str = "memories_1.sqlite";

/// Codex's thread database, read for a thread's working folder (the memory's project).
const STATE: &str = "state_5.sqlite";

/// The columns read; a table without one of them is not read.
const COLUMNS: [&str; 4] = ["thread_id", "raw_memory", "rollout_summary", "generated_at"];

fn open(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Every memory row of the database at `path`.
pub fn read(path: &Path) -> Result<Vec<Memory>, Skipped> {
    let skipped = |reason: String| Skipped {
        file: path.display().to_string(),
        reason,
    };
    let db = open(path).map_err(|e| skipped(e.to_string()))?;
    let mut have = Vec::new();
    {
        let mut stmt = db
            .prepare("SELECT name FROM pragma_table_info('stage1_outputs')")
            .map_err(|e| skipped(e.to_string()))?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| skipped(e.to_string()))?;
        for n in names {
            have.push(n.map_err(|e| skipped(e.to_string()))?);
        }
    }
    if let Some(missing) = COLUMNS.iter().find(|c| !have.iter().any(|h| h == *c)) {
        return Err(skipped(if have.is_empty() {
            "no table stage1_outputs: a format this cairn does not read".to_string()
        } else {
            format!("stage1_outputs has no column {missing}: a format this cairn does not read")
        }));
    }
    let state = path
        .parent()
        .map(|d| d.join(STATE))
        .and_then(|p| p.is_file().then(|| open(&p).ok()).flatten());
    let mut stmt = db
        .prepare(
            "SELECT thread_id, raw_memory, rollout_summary, generated_at FROM stage1_outputs \
             ORDER BY generated_at, thread_id",
        )
        .map_err(|e| skipped(e.to_string()))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .map_err(|e| skipped(e.to_string()))?;
    let mut out = Vec::new();
    for row in rows {
        let (thread, raw, summary, generated) = row.map_err(|e| skipped(e.to_string()))?;
        let text = if raw.trim().is_empty() { summary } else { raw };
        let text = text.trim().to_string();
        if text.is_empty() {
            continue;
        }
        let project = state.as_ref().and_then(|s| {
            s.query_row("SELECT cwd FROM threads WHERE id = ?1", [&thread], |r| {
                r.get::<_, String>(0)
            })
            .ok()
        });
        out.push(Memory {
            agent: AGENT,
            locator: format!("{}#{thread}", path.display()),
            project,
            text,
            time: DateTime::<Utc>::from_timestamp(generated, 0)
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
        });
    }
    Ok(out)
}
