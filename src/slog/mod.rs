//! The slog: the append-only operational log.
//!
//! On disk: `slog/YYYY-MM-DD.jsonl`, one file per UTC day of writing, one JSON object a line:
//! `{"id","ts","action","tool","detail","reason"?,"session"?,"actor"?,"tags"?}`. An entry is
//! appended with one `write` under an exclusive lock on the day's file ([`crate::files`]), so
//! concurrent agents never interleave or lose lines. Nothing here rewrites a line.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::files;
use crate::jsonl;
use crate::repo::Repo;

/// The folder, relative to the repository root.
pub const DIR: &str = "slog";

/// The longest detail (and reason) an entry takes, in characters.
pub const MAX_DETAIL_CHARS: usize = 4000;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    #[error("{field} must be one line without control characters")]
    NotOneLine { field: &'static str },
    #[error("{field} is longer than {max} characters")]
    TooLong { field: &'static str, max: usize },
    #[error(transparent)]
    Malformed(#[from] jsonl::Malformed),
    #[error(transparent)]
    Other(#[from] crate::error::Error),
}

/// One slog entry, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub ts: String,
    pub action: String,
    pub tool: String,
    pub detail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// What a caller asks to log.
#[derive(Debug, Clone, Default)]
pub struct NewEntry {
    pub action: String,
    pub tool: String,
    pub detail: String,
    pub reason: Option<String>,
    pub session: Option<String>,
    pub actor: Option<String>,
    pub tags: Vec<String>,
}

/// The result of an append.
#[derive(Debug)]
pub struct Appended {
    pub entry: Entry,
    /// The day file, relative to the repository root.
    pub rel_path: String,
    /// A torn tail that had to be cut before appending, and where it was saved.
    pub recovered: Option<PathBuf>,
    /// The line appended, with its newline.
    pub line: Vec<u8>,
}

/// The day file an entry written at `now` goes to, relative to the root.
pub fn day_file(now: DateTime<Utc>) -> String {
    format!("{DIR}/{}.jsonl", now.format("%Y-%m-%d"))
}

/// Validates and appends one entry.
pub fn append(repo: &Repo, new: NewEntry, now: DateTime<Utc>) -> Result<Appended, Error> {
    let action = one_line("action", &new.action, 64)?;
    let tool = one_line("tool", &new.tool, 64)?;
    let detail = one_line("detail", &new.detail, MAX_DETAIL_CHARS)?;
    let reason = new
        .reason
        .as_deref()
        .map(|r| one_line("reason", r, MAX_DETAIL_CHARS))
        .transpose()?;
    let session = new
        .session
        .as_deref()
        .map(|s| one_line("session", s, 200))
        .transpose()?;
    let actor = new
        .actor
        .as_deref()
        .map(|s| one_line("actor", s, 200))
        .transpose()?;
    let tags = new
        .tags
        .iter()
        .flat_map(|t| t.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| one_line("tag", t, 64))
        .collect::<Result<Vec<_>, _>>()?;
    let ts = crate::time::format(now);
    let id = entry_id(&ts, &action, &tool, &detail);
    let entry = Entry {
        id,
        ts,
        action,
        tool,
        detail,
        reason,
        session,
        actor,
        tags,
    };
    let mut line = serde_json::to_vec(&entry).expect("entry serializes");
    line.push(b'\n');
    let rel_path = day_file(now);
    let appended = files::append_line(&repo.path(&rel_path), &line, &repo.recovered_dir())?;
    Ok(Appended {
        entry,
        rel_path,
        recovered: appended.recovered,
        line,
    })
}

/// A short id, unique across processes: a hash of the content, the time and the writer.
fn entry_id(ts: &str, action: &str, tool: &str, detail: &str) -> String {
    let mut h = Sha256::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    for part in [
        ts,
        action,
        tool,
        detail,
        &std::process::id().to_string(),
        &nanos.to_string(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest = h.finalize();
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("sl-{hex}")
}

fn one_line(field: &'static str, value: &str, max: usize) -> Result<String, Error> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::Empty { field });
    }
    if value.chars().any(char::is_control) {
        return Err(Error::NotOneLine { field });
    }
    if value.chars().count() > max {
        return Err(Error::TooLong { field, max });
    }
    Ok(value.to_string())
}

/// A query over the log.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub action: Option<String>,
    pub tool: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub words: Vec<String>,
    /// At most this many entries (0: all).
    pub limit: usize,
}

/// Entries found, newest first, with what was skipped on the way.
#[derive(Debug, Default)]
pub struct Found {
    pub entries: Vec<Entry>,
    /// How many entries matched before the limit cut them.
    pub matched: usize,
    pub torn: Vec<jsonl::TornTail>,
    /// Lines skipped because they are not entries (named by repository-relative path).
    pub bad: Vec<jsonl::Malformed>,
}

/// Every day file, oldest first.
pub fn day_files(repo: &Repo) -> Result<Vec<PathBuf>, Error> {
    let dir = repo.path(DIR);
    let mut files = Vec::new();
    let read = match crate::files::read_dir_real(&dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(err) => return Err(crate::error::Error::io(dir.display(), &err).into()),
    };
    for entry in read {
        let path = entry
            .map_err(|e| crate::error::Error::io(dir.display(), &e))?
            .path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Reads one day file; its bad lines are skipped and listed.
pub fn read_file(path: &Path) -> Result<jsonl::Parsed<Entry>, Error> {
    let bytes = std::fs::read(path).map_err(|e| crate::error::Error::io(path.display(), &e))?;
    Ok(jsonl::parse(path, &String::from_utf8_lossy(&bytes)))
}

/// Runs a query: newest first by the entries' own times.
pub fn query(repo: &Repo, q: &Query) -> Result<Found, Error> {
    let words: Vec<String> = q.words.iter().map(|w| w.to_lowercase()).collect();
    let mut found = Found::default();
    let mut hits: Vec<(DateTime<Utc>, usize, Entry)> = Vec::new();
    for path in day_files(repo)? {
        let rel = path.strip_prefix(repo.root()).unwrap_or(&path);
        let mut parsed = read_file(&path)?;
        for m in &mut parsed.bad {
            m.path = rel.to_path_buf();
        }
        found.bad.extend(parsed.bad);
        found.torn.extend(parsed.torn);
        for (_, entry) in parsed.records {
            let ts = DateTime::parse_from_rfc3339(&entry.ts)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or(DateTime::<Utc>::MIN_UTC);
            if !matches(&entry, ts, q, &words) {
                continue;
            }
            let order = hits.len();
            hits.push((ts, order, entry));
        }
    }
    // Newest first; among equal times, the later-written first.
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    found.matched = hits.len();
    if q.limit > 0 {
        hits.truncate(q.limit);
    }
    found.entries = hits.into_iter().map(|(_, _, e)| e).collect();
    Ok(found)
}

fn matches(entry: &Entry, ts: DateTime<Utc>, q: &Query, words: &[String]) -> bool {
    if q.action
        .as_ref()
        .is_some_and(|a| !a.eq_ignore_ascii_case(&entry.action))
    {
        return false;
    }
    if q.tool
        .as_ref()
        .is_some_and(|t| !t.eq_ignore_ascii_case(&entry.tool))
    {
        return false;
    }
    if q.since.is_some_and(|s| ts < s) || q.until.is_some_and(|u| ts > u) {
        return false;
    }
    if words.is_empty() {
        return true;
    }
    let hay = [
        entry.action.as_str(),
        &entry.tool,
        &entry.detail,
        entry.reason.as_deref().unwrap_or(""),
        entry.session.as_deref().unwrap_or(""),
        entry.actor.as_deref().unwrap_or(""),
        &entry.tags.join(" "),
    ]
    .join(" ")
    .to_lowercase();
    words.iter().all(|w| hay.contains(w.as_str()))
}

impl From<Error> for crate::error::Error {
    fn from(err: Error) -> Self {
        use crate::error::{Error as E, Kind};
        match err {
            Error::Other(e) => e,
            Error::Malformed(m) => E::new(Kind::BadInput, m.to_string())
                .with_fix("fix or remove that line by hand; `cairn doctor` lists every such line"),
            e => E::new(Kind::BadInput, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(action: &str, tool: &str, detail: &str) -> Entry {
        Entry {
            id: "sl-1".into(),
            ts: "2026-11-30T10:00:00.000Z".into(),
            action: action.into(),
            tool: tool.into(),
            detail: detail.into(),
            reason: Some("nightly restart".into()),
            session: None,
            actor: None,
            tags: vec!["infra".into()],
        }
    }

    #[test]
    fn filters_combine() {
        let e = entry("deploy", "caddy", "reloaded config on web-1");
        let ts = DateTime::parse_from_rfc3339(&e.ts)
            .unwrap()
            .with_timezone(&Utc);
        let q = |action: Option<&str>, tool: Option<&str>| Query {
            action: action.map(Into::into),
            tool: tool.map(Into::into),
            ..Query::default()
        };
        assert!(matches(&e, ts, &q(Some("DEPLOY"), None), &[]));
        assert!(!matches(&e, ts, &q(Some("fix"), None), &[]));
        assert!(!matches(&e, ts, &q(None, Some("redis")), &[]));
        assert!(matches(
            &e,
            ts,
            &q(None, None),
            &["web-1".into(), "nightly".into()]
        ));
        assert!(matches(&e, ts, &q(None, None), &["infra".into()]));
        assert!(!matches(&e, ts, &q(None, None), &["web-2".into()]));
        let later = Query {
            since: Some(ts + chrono::Duration::seconds(1)),
            ..Query::default()
        };
        assert!(!matches(&e, ts, &later, &[]));
    }

    #[test]
    fn one_line_rejects_newlines_and_empties() {
        assert!(one_line("detail", "a\nb", 10).is_err());
        assert!(one_line("detail", "   ", 10).is_err());
        assert!(one_line("detail", "abcdefghijk", 10).is_err());
        assert_eq!(one_line("detail", " ok ", 10).unwrap(), "ok");
    }
}
