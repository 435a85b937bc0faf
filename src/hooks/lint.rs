//! The pre-commit lint: what the next commit would hold, checked as cairn's own readers read it.
//!
//! It reads the STAGED content (the git index, through [`git::staged_files`]), never the working
//! files, so a fix left unstaged does not let a broken file through, and a broken line left
//! unstaged does not refuse a clean commit. Checked:
//!
//! - `decisions/`: the whole folder as staged, by [`adr::lint::lint_records`] (what `cairn adr
//!   lint` checks), whenever the commit touches it (a record added, edited or deleted);
//! - `MEMORY.md`: [`memory::lint`] (undated or misdated entries, entries outside a section,
//!   unknown sections, overlong entries); the file's size (over ~200 entries, over its token
//!   budget) is advice, shown and never refusing, as `cairn memory lint` words it;
//! - JSON Lines under `slog/` and `vault/`: every line the commit adds is one JSON object of its
//!   file's record shape (a slog entry, an observation or its event, a proposal or its event, a
//!   turn card or episode; any object elsewhere in `vault/`), and the file ends with a newline.
//!
//! A commit is refused only for the problems it brings: one HEAD already has (the same message
//! about the same line text in the same file) is not this commit's to fix, so an old record that
//! `cairn adr lint` flags does not block every later commit. Every problem names the path as git
//! shows it and its line: `decisions/0007-x.md:4: status ...`.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use serde::Serialize;

use crate::adr;
use crate::error::Result;
use crate::git::{self, Version};
use crate::jsonl;
use crate::memory;
use crate::repo::Repo;

/// One problem in what is staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The path in the git work tree, as git shows it.
    pub path: String,
    /// 1-based line, when the problem is on one.
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// What the lint found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Lint {
    /// Staged files checked.
    pub checked: usize,
    /// Problems this commit brings: the commit is refused.
    pub problems: Vec<Problem>,
    /// Said but not refusing (MEMORY.md's size).
    pub advice: Vec<Problem>,
}

/// Which linted kind a repository-relative path is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Adr,
    Memory,
    Slog,
    Observations,
    Proposals,
    Sessions,
    /// Any other JSON Lines file in `vault/` (library.jsonl, …): objects, of no known shape.
    Vault,
}

fn kind_of(path: &str) -> Option<Kind> {
    let under = |dir: &str| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    if under(adr::DIR) {
        let name = path.rsplit('/').next().unwrap_or(path);
        return (!path[adr::DIR.len() + 1..].contains('/') && adr::is_record_file(name))
            .then_some(Kind::Adr);
    }
    if path == memory::FILE {
        return Some(Kind::Memory);
    }
    if !path.ends_with(".jsonl") {
        return None;
    }
    [
        (crate::slog::DIR, Kind::Slog),
        (crate::store::DIR, Kind::Observations),
        (crate::proposals::DIR, Kind::Proposals),
        (crate::cards::DIR, Kind::Sessions),
        ("vault", Kind::Vault),
    ]
    .into_iter()
    .find(|(dir, _)| under(dir))
    .map(|(_, kind)| kind)
}

/// Lints what is staged in the git repository holding `repo`.
pub fn staged(repo: &Repo) -> Result<Lint> {
    // Every file of decisions/ (records need each other), the others only where they change.
    let files = git::staged_files(repo.root(), |path, changed| {
        path.strip_prefix(adr::DIR)
            .is_some_and(|rest| rest.starts_with('/'))
            || (changed && kind_of(path).is_some())
    })?;
    let mut lint = Lint::default();
    let shown = |path: &str| format!("{}{path}", files.prefix);

    let adrs = |side: &[Version]| -> Vec<(String, String)> {
        side.iter()
            .filter(|v| kind_of(&v.path) == Some(Kind::Adr))
            .map(|v| {
                (
                    v.path.clone(),
                    String::from_utf8_lossy(&v.bytes).into_owned(),
                )
            })
            .collect()
    };
    let (staged_adrs, head_adrs) = (adrs(&files.staged), adrs(&files.head));
    if staged_adrs != head_adrs {
        let history = adr::history(repo)?;
        let names = |side: &[Version]| -> BTreeSet<String> {
            side.iter()
                .filter_map(|v| v.path.strip_prefix(&format!("{}/", adr::DIR)))
                .filter(|rest| !rest.contains('/'))
                .map(str::to_string)
                .collect()
        };
        let check = |records: &[(String, String)], dir_files| -> Result<Vec<Problem>> {
            let found = adr::lint::lint_records(records, &dir_files, &history)?;
            Ok(found
                .into_iter()
                .map(|p| Problem {
                    path: p.path,
                    line: p.line,
                    message: p.message,
                })
                .collect())
        };
        let now = check(&staged_adrs, names(&files.staged))?;
        let before = check(&head_adrs, names(&files.head))?;
        lint.checked += staged_adrs.len();
        lint.problems
            .extend(new_problems(now, &before, &staged_adrs, &head_adrs));
    }

    for version in &files.staged {
        let Some(kind) = kind_of(&version.path).filter(|k| *k != Kind::Adr) else {
            continue;
        };
        lint.checked += 1;
        let head = files.head.iter().find(|h| h.path == version.path);
        let text = String::from_utf8_lossy(&version.bytes);
        let head_text = head.map(|h| String::from_utf8_lossy(&h.bytes).into_owned());
        if kind == Kind::Memory {
            let (now, advice) = memory_problems(&version.path, &text);
            let (before, _) = memory_problems(&version.path, head_text.as_deref().unwrap_or(""));
            let texts = |t: &str| vec![(version.path.clone(), t.to_string())];
            lint.problems.extend(new_problems(
                now,
                &before,
                &texts(&text),
                &texts(head_text.as_deref().unwrap_or("")),
            ));
            lint.advice.extend(advice);
        } else {
            let known: HashSet<&str> = head_text
                .as_deref()
                .map_or_else(HashSet::new, |t| jsonl::strip_bom(t).lines().collect());
            lint.problems
                .extend(jsonl_problems(kind, &version.path, &version.bytes, &known));
        }
    }
    for p in lint.problems.iter_mut().chain(lint.advice.iter_mut()) {
        p.path = shown(&p.path);
    }
    lint.problems
        .sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    Ok(lint)
}

/// The problems of `now` that `before` lacks, each told by its file, message and the text of
/// its line in `now_texts` / `before_texts` (so a line that moved keeps its problem's identity,
/// and a second bad line with the same message is still a new one).
fn new_problems(
    now: Vec<Problem>,
    before: &[Problem],
    now_texts: &[(String, String)],
    before_texts: &[(String, String)],
) -> Vec<Problem> {
    let line_text = |texts: &[(String, String)], p: &Problem| -> String {
        let text = texts.iter().find(|(path, _)| *path == p.path);
        match (text, p.line) {
            (Some((_, t)), Some(n)) => t.lines().nth(n - 1).unwrap_or("").to_string(),
            _ => String::new(),
        }
    };
    let mut old: Vec<(String, String, String)> = before
        .iter()
        .map(|p| {
            (
                p.path.clone(),
                p.message.clone(),
                line_text(before_texts, p),
            )
        })
        .collect();
    now.into_iter()
        .filter(|p| {
            let key = (p.path.clone(), p.message.clone(), line_text(now_texts, p));
            match old.iter().position(|k| *k == key) {
                Some(i) => {
                    old.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .collect()
}

/// MEMORY.md's problems (refusing) and advice (its size), by `cairn memory lint`'s rules.
fn memory_problems(path: &str, text: &str) -> (Vec<Problem>, Vec<Problem>) {
    let (mut problems, mut advice) = (Vec::new(), Vec::new());
    for p in memory::lint(&memory::parse(text)) {
        let p2 = Problem {
            path: path.to_string(),
            line: p.line,
            message: p.message,
        };
        // Without a line it is about the whole file: too many entries, time to prune.
        if p2.line.is_some() {
            problems.push(p2);
        } else {
            advice.push(p2);
        }
    }
    (problems, advice)
}

/// The problems of a staged JSON Lines file: lines not in HEAD's version (`known`) that are
/// not one JSON object of the file's record shape, and a last line without its newline.
fn jsonl_problems(kind: Kind, path: &str, bytes: &[u8], known: &HashSet<&str>) -> Vec<Problem> {
    let mut out = Vec::new();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    for (i, raw) in bytes[..complete]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        let n = i + 1;
        let raw = &raw[..raw.len() - 1];
        let Ok(line) = std::str::from_utf8(raw) else {
            out.push(problem(path, n, "not UTF-8 text".into()));
            continue;
        };
        let line = if i == 0 { jsonl::strip_bom(line) } else { line };
        if line.trim().is_empty() || known.contains(line) {
            continue;
        }
        if let Err(m) = check_line(kind, n, line) {
            out.push(problem(
                path,
                n,
                format!("{}: fix the line or remove it", m.message),
            ));
        }
    }
    if complete < bytes.len() {
        let n = bytes[..complete].iter().filter(|&&b| b == b'\n').count() + 1;
        out.push(problem(
            path,
            n,
            "the last line has no newline (a write cut short?): end it with a newline, or run \
             `cairn doctor` to move it aside"
                .into(),
        ));
    }
    out
}

/// Parses one line as its file's readers do.
fn check_line(kind: Kind, n: usize, line: &str) -> std::result::Result<(), jsonl::Malformed> {
    let path = Path::new("");
    match kind {
        Kind::Slog => jsonl::parse_line::<crate::slog::Entry>(path, n, line).map(drop),
        Kind::Observations => crate::store::parse_line(path, n, line).map(drop),
        Kind::Proposals => crate::proposals::parse_line(path, n, line).map(drop),
        Kind::Sessions => jsonl::parse_line::<crate::cards::Record>(path, n, line).map(drop),
        Kind::Vault | Kind::Adr | Kind::Memory => {
            jsonl::parse_line::<serde::de::IgnoredAny>(path, n, line).map(drop)
        }
    }
}

fn problem(path: &str, line: usize, message: String) -> Problem {
    Problem {
        path: path.to_string(),
        line: Some(line),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_path() {
        let cases = [
            ("decisions/0007-use-tantivy.md", Some(Kind::Adr)),
            ("decisions/README.md", None),
            ("decisions/old/0001-x.md", None),
            ("MEMORY.md", Some(Kind::Memory)),
            ("notes/MEMORY.md", None),
            ("slog/2026-12-01.jsonl", Some(Kind::Slog)),
            ("slog/notes.txt", None),
            ("slogan/2026-12-01.jsonl", None),
            (
                "vault/observations/2026-12-01.jsonl",
                Some(Kind::Observations),
            ),
            ("vault/proposals/2026-12-01.jsonl", Some(Kind::Proposals)),
            ("vault/sessions/claude/abc.jsonl", Some(Kind::Sessions)),
            ("vault/library.jsonl", Some(Kind::Vault)),
            ("other/x.jsonl", None),
        ];
        for (path, want) in cases {
            assert_eq!(kind_of(path), want, "{path}");
        }
    }

    const ENTRY: &str = r#"{"id":"sl-1","ts":"2026-12-01T10:00:00Z","action":"deploy","tool":"caddy","detail":"reload"}"#;

    #[test]
    fn jsonl_lines_of_the_wrong_shape_are_named_by_line() {
        let text = format!("{ENTRY}\n{{\"id\":\"sl-2\",\"ts\":\"x\"}}\nnot json\n\n{ENTRY}");
        let found = jsonl_problems(Kind::Slog, "slog/d.jsonl", text.as_bytes(), &HashSet::new());
        let lines: Vec<Option<usize>> = found.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![Some(2), Some(3), Some(5)], "{found:?}");
        assert!(
            found[0].message.contains("missing field `action`"),
            "{found:?}"
        );
        assert!(
            found[1].message.starts_with("not a JSON object"),
            "{found:?}"
        );
        assert!(found[2].message.contains("no newline"), "{found:?}");
        assert_eq!(
            found[0].to_string(),
            format!("slog/d.jsonl:2: {}", found[0].message)
        );
    }

    #[test]
    fn lines_head_already_has_are_not_this_commits() {
        let text = "not json\n{\"a\":1}\n".to_string();
        let known: HashSet<&str> = ["not json"].into();
        assert!(jsonl_problems(Kind::Vault, "vault/x.jsonl", text.as_bytes(), &known).is_empty());
        let found = jsonl_problems(
            Kind::Vault,
            "vault/x.jsonl",
            text.as_bytes(),
            &HashSet::new(),
        );
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn a_second_problem_of_the_same_words_is_new() {
        let p = |line| Problem {
            path: "MEMORY.md".into(),
            line: Some(line),
            message: "undated entry".into(),
        };
        let before_text = vec![("MEMORY.md".to_string(), "# Memory\n- old\n".to_string())];
        let now_text = vec![(
            "MEMORY.md".to_string(),
            "# Memory\n- new\n- old\n".to_string(),
        )];
        let new = new_problems(vec![p(2), p(3)], &[p(2)], &now_text, &before_text);
        assert_eq!(new, vec![p(2)]);
    }
}
