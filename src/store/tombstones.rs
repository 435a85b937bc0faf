//! The tombstones: the ids `cairn forget` removed (`vault/forgotten.jsonl`, one `{"id","ts"}`
//! a line, committed, never the text), which ingest, admission and reflection skip. Written
//! by [`crate::forget`]; read here, below everything that must not bring a forgotten record
//! back.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::repo::Repo;

/// The tombstones: one `{"id","ts"}` a line, committed.
pub const TOMBSTONES: &str = "vault/forgotten.jsonl";

/// One tombstone line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tombstone {
    pub id: String,
    pub ts: String,
}

/// Every id forgotten (a missing file holds none; a line that does not parse is skipped:
/// `cairn doctor` names it).
pub fn tombstones(repo: &Repo) -> Result<HashSet<String>> {
    let Some(text) = crate::files::read_optional(&repo.path(TOMBSTONES))? else {
        return Ok(HashSet::new());
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Tombstone>(l).ok())
        .map(|t| t.id)
        .collect())
}
