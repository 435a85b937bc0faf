//! `cairn forget --redact`: the redaction patterns applied to what is already stored.
//!
//! Every string of every JSON Lines record (slog, observations, sessions, proposals) and the
//! text of MEMORY.md, the ADRs and the notes go through the configured [`Redactor`]; a line
//! with no secret keeps its bytes, a line with one is written again with the secret replaced
//! by `[REDACTED:kind]` (its keys in their order). Ids do not change: a record redacted is the
//! same record.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Found, What};
use crate::error::{Error, Result};
use crate::redact::Redactor;
use crate::repo::Repo;

/// What redaction would write.
#[derive(Debug, Default)]
pub struct Redacted {
    pub found: Vec<Found>,
    pub writes: Vec<(String, Option<Vec<u8>>)>,
    /// The secrets found, as they were stored (what history still holds).
    pub secrets: Vec<String>,
    pub memory: bool,
}

/// Redacts every string in `v`; the secrets found go to `secrets`.
fn redact_value(v: &mut Value, r: &Redactor, secrets: &mut BTreeSet<String>) -> bool {
    match v {
        Value::String(s) => {
            let findings = r.findings(s);
            if findings.is_empty() {
                return false;
            }
            for f in &findings {
                secrets.insert(s[f.start..f.end].to_string());
            }
            *s = r.redact(s).into_owned();
            true
        }
        Value::Array(a) => {
            let mut any = false;
            for x in a {
                any |= redact_value(x, r, secrets);
            }
            any
        }
        Value::Object(m) => {
            let mut any = false;
            for x in m.values_mut() {
                any |= redact_value(x, r, secrets);
            }
            any
        }
        _ => false,
    }
}

fn kind_of_line(rel: &str, v: &Value) -> What {
    if rel.starts_with(crate::slog::DIR) {
        What::Slog
    } else if rel.starts_with(crate::store::DIR) {
        What::Observation
    } else if rel.starts_with(crate::proposals::DIR) {
        What::Proposal
    } else if v.get("type").and_then(Value::as_str) == Some("episode") {
        What::Episode
    } else {
        What::Card
    }
}

/// Every stored record with a secret `redactor` finds, and its file's new bytes.
pub fn redact_all(repo: &Repo, redactor: &Redactor) -> Result<Redacted> {
    let mut out = Redacted::default();
    let mut secrets = BTreeSet::new();
    for (rel, _) in super::jsonl_files(repo)? {
        let path = repo.path(&rel);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), &e))?;
        let mut new = String::with_capacity(text.len());
        let mut changed = false;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let body = line.trim_end_matches('\n');
            if redactor.findings(body).is_empty() {
                new.push_str(line);
                continue;
            }
            let Ok(mut v) = serde_json::from_str::<Value>(body) else {
                new.push_str(line);
                continue;
            };
            if !redact_value(&mut v, redactor, &mut secrets) {
                new.push_str(line);
                continue;
            }
            changed = true;
            new.push_str(&serde_json::to_string(&v).expect("a parsed line serializes"));
            if line.ends_with('\n') {
                new.push('\n');
            }
            let id = v
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            out.found.push(Found {
                kind: kind_of_line(&rel, &v),
                id,
                at: format!("{rel}:{}", i + 1),
                text: "a secret".into(),
                arg: "--redact".into(),
                texts: Vec::new(),
            });
        }
        if changed {
            out.writes.push((rel, Some(new.into_bytes())));
        }
    }
    let mut markdown = vec![crate::memory::FILE.to_string()];
    markdown.extend(crate::adr::record_files(repo)?);
    if let Ok(read) = crate::files::read_dir_real(&repo.path(super::NOTES)) {
        let mut notes: Vec<String> = read
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("{}/{n}", super::NOTES))
            .collect();
        notes.sort();
        markdown.extend(notes);
    }
    for rel in markdown {
        let Some(text) = crate::files::read_optional(&repo.path(&rel))? else {
            continue;
        };
        let findings = redactor.findings(&text);
        if findings.is_empty() {
            continue;
        }
        for f in &findings {
            secrets.insert(text[f.start..f.end].to_string());
            let kind = if rel == crate::memory::FILE {
                What::Memory
            } else if rel.starts_with(super::NOTES) {
                What::Note
            } else {
                What::Adr
            };
            out.found.push(Found {
                kind,
                id: format!("{rel}:{}", f.line),
                at: format!("{rel}:{}", f.line),
                text: "a secret".into(),
                arg: "--redact".into(),
                texts: Vec::new(),
            });
        }
        out.memory |= rel == crate::memory::FILE;
        out.writes.push((
            rel.clone(),
            Some(redactor.redact(&text).into_owned().into_bytes()),
        ));
    }
    out.secrets = secrets.into_iter().collect();
    Ok(out)
}
