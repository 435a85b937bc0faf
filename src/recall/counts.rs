//! Recall counts: how often each observation was recalled, and when last.
//!
//! Usage data, not memory: kept in `.cairn/recalls.jsonl` (one `{"id","ts"}` line per recalled
//! observation, folded on read), never committed, and separate from the index so that an index
//! rebuild keeps it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::repo::Repo;

/// The file, relative to the repository root.
pub const FILE: &str = ".cairn/recalls.jsonl";

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    id: String,
    ts: String,
}

/// How often an observation was recalled.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Count {
    pub count: u64,
    pub last: String,
}

/// Records that `ids` were recalled at `now`.
pub fn record(repo: &Repo, ids: &[&str], now: DateTime<Utc>) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    crate::repo::ignore_derived(repo)?;
    let ts = crate::time::format(now);
    let mut bytes = Vec::new();
    for id in ids {
        bytes.extend(
            serde_json::to_vec(&Line {
                id: id.to_string(),
                ts: ts.clone(),
            })
            .expect("serializes"),
        );
        bytes.push(b'\n');
    }
    crate::files::append_derived(&repo.path(FILE), &bytes, &repo.recovered_dir())?;
    Ok(())
}

/// Every count, by observation id.
pub fn read(repo: &Repo) -> Result<HashMap<String, Count>> {
    let mut out: HashMap<String, Count> = HashMap::new();
    let Some(text) = crate::files::read_optional(&repo.path(FILE))? else {
        return Ok(out);
    };
    for line in text.lines() {
        if let Ok(l) = serde_json::from_str::<Line>(line) {
            let c = out.entry(l.id).or_default();
            c.count += 1;
            if l.ts > c.last {
                c.last = l.ts;
            }
        }
    }
    Ok(out)
}

/// Every recall, as `(id, time)`, in the order recorded.
pub fn each(repo: &Repo) -> Result<Vec<(String, String)>> {
    let Some(text) = crate::files::read_optional(&repo.path(FILE))? else {
        return Ok(Vec::new());
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .map(|l| (l.id, l.ts))
        .collect())
}
