//! `adr import DIR`: adopting decision records written by other tools.
//!
//! Three shapes are read, detected per file:
//!
//! - adr-tools / Nygard: `# 1. Title`, a `Date:` line, a `## Status` section whose first
//!   paragraph is the status and whose link lines (`Supersedes [1. …](0001-….md)`,
//!   `Superseded by […](…)`, `Amended by […](…)`) carry the relations;
//! - MADR 3+: YAML-ish frontmatter (`status`, `date`, `deciders`, …), read line by line because
//!   real files hold placeholders such as `status: {proposed}` that are not the YAML they look
//!   like, and the title in the first `# ` heading;
//! - MADR 2: bullet metadata under the title (`* Status: …`, `* Deciders: …`, `* Date: …`).
//!
//! Numbers are kept. A number already taken (by a record in the repository, one in its git
//! history, or an earlier file of the same import, as in a set that reused numbers) is not
//! reused: the later file gets the next free number and keeps `original-number` in its
//! frontmatter (ADR 5). Links resolve by target file name first, so relations survive
//! renumbering. Each record keeps `imported-from`, which makes a second import skip it.
//! Whatever could not be mapped exactly (a status word outside the six, an unreadable date) is
//! kept under an `original-*` key and reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chrono::NaiveDate;
use serde::Serialize;

use super::{AdrNumber, DIR, Error, Status, Written, frontmatter};
use crate::error::Error as CairnError;
use crate::files;
use crate::repo::Repo;

/// One file brought in.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub from: String,
    pub number: AdrNumber,
    pub path: String,
    pub status: Status,
    /// What could not be mapped exactly, in words.
    pub notes: Vec<String>,
}

/// One file left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub from: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub imported: Vec<Imported>,
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq)]
struct Link {
    /// The target's file name, when the link has one.
    file: Option<String>,
    number: Option<AdrNumber>,
}

#[derive(Debug, Default)]
struct Source {
    file_name: String,
    number: Option<AdrNumber>,
    title: String,
    status: Option<String>,
    date: Option<String>,
    deciders: Vec<String>,
    tags: Vec<String>,
    supersedes: Vec<Link>,
    superseded_by: Vec<Link>,
    extras: Vec<(String, String)>,
    body: String,
}

/// Imports every `*.md` record in `dir`. Run under the repository lock.
pub fn import(repo: &Repo, dir: &Path, today: NaiveDate) -> Result<(Report, Written), Error> {
    let mut names = Vec::new();
    let read = std::fs::read_dir(dir).map_err(|e| CairnError::io(dir.display(), &e))?;
    for entry in read {
        let entry = entry.map_err(|e| CairnError::io(dir.display(), &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && entry.path().is_file() {
            names.push(name);
        }
    }
    names.sort();

    let existing = super::load_all(repo)?;
    let already: BTreeSet<String> = existing
        .iter()
        .filter_map(|a| a.imported_from.clone())
        .collect();
    let mut taken: BTreeSet<AdrNumber> = existing.iter().map(|a| a.number).collect();
    for name in super::history(repo)?.names.keys() {
        if let Some(n) = super::number_of_file_name(name) {
            taken.insert(n);
        }
    }

    let mut report = Report::default();
    let mut sources = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let text =
            std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
        let source = read_source(&name, &text);
        if already.contains(&name) {
            report.skipped.push(Skipped {
                from: name,
                reason: "already imported".into(),
            });
        } else if source.number.is_none() {
            report.skipped.push(Skipped {
                from: name,
                reason: "no number in its file name or title (a template or an index?)".into(),
            });
        } else {
            sources.push(source);
        }
    }

    // Keep numbers where free; renumber the rest past the highest.
    let mut assigned: Vec<Option<AdrNumber>> = Vec::with_capacity(sources.len());
    for s in &sources {
        let n = s.number.expect("sources without numbers were skipped");
        if taken.insert(n) {
            assigned.push(Some(n))
        } else {
            assigned.push(None)
        }
    }
    let mut next = taken.iter().max().copied().unwrap_or(0) + 1;
    let assigned: Vec<AdrNumber> = assigned
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                next += 1;
                next - 1
            })
        })
        .collect();

    let by_file: BTreeMap<&str, AdrNumber> = sources
        .iter()
        .zip(&assigned)
        .map(|(s, &n)| (s.file_name.as_str(), n))
        .collect();
    let mut by_original: BTreeMap<AdrNumber, Vec<AdrNumber>> = BTreeMap::new();
    for (s, &n) in sources.iter().zip(&assigned) {
        by_original
            .entry(s.number.expect("numbered"))
            .or_default()
            .push(n);
    }
    let resolve = |link: &Link, notes: &mut Vec<String>| -> Option<AdrNumber> {
        if let Some(n) = link.file.as_deref().and_then(|f| by_file.get(f)) {
            return Some(*n);
        }
        let original = link.number?;
        match by_original.get(&original).map(Vec::as_slice) {
            Some([only]) => Some(*only),
            Some(_) => {
                notes.push(format!(
                    "link to {original} is ambiguous (several records had it); kept as {original}"
                ));
                Some(original)
            }
            None => Some(original),
        }
    };

    struct Plan {
        number: AdrNumber,
        status: Status,
        date: NaiveDate,
        supersedes: Vec<AdrNumber>,
        superseded_by: Vec<AdrNumber>,
        extra: Vec<(String, String)>,
        notes: Vec<String>,
    }
    let mut plans = Vec::with_capacity(sources.len());
    for (source, &number) in sources.iter().zip(&assigned) {
        let mut notes = Vec::new();
        let original = source.number.expect("numbered");
        let mut extra: Vec<(String, String)> = vec![(
            "imported-from".into(),
            frontmatter::scalar(&source.file_name),
        )];
        if original != number {
            notes.push(format!("number {original} was taken; imported as {number}"));
            extra.push(("original-number".into(), original.to_string()));
        }
        let (status, status_note) = map_status(source.status.as_deref());
        if let Some(note) = status_note {
            notes.push(note);
            if let Some(raw) = &source.status {
                extra.push(("original-status".into(), frontmatter::scalar(raw)));
            }
        }
        let date = match source.date.as_deref().map(parse_date) {
            Some(Some(d)) => d,
            Some(None) => {
                let raw = source.date.clone().unwrap_or_default();
                notes.push(format!("date `{raw}` unreadable; set to the import day"));
                extra.push(("original-date".into(), frontmatter::scalar(&raw)));
                today
            }
            None => {
                notes.push("no date; set to the import day".into());
                today
            }
        };
        let mut supersedes: Vec<AdrNumber> = source
            .supersedes
            .iter()
            .filter_map(|l| resolve(l, &mut notes))
            .collect();
        let mut superseded_by: Vec<AdrNumber> = source
            .superseded_by
            .iter()
            .filter_map(|l| resolve(l, &mut notes))
            .collect();
        supersedes.dedup();
        superseded_by.dedup();
        for (k, v) in &source.extras {
            extra.push((k.clone(), frontmatter::scalar(v)));
        }
        plans.push(Plan {
            number,
            status,
            date,
            supersedes,
            superseded_by,
            extra,
            notes,
        });
    }

    // A relation written on one side only (MADR sets often mark just the old record) is
    // recorded on both, as `adr supersede` would.
    let index: BTreeMap<AdrNumber, usize> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| (p.number, i))
        .collect();
    let mut pairs: Vec<(AdrNumber, AdrNumber)> = Vec::new(); // (old, new)
    for p in &plans {
        pairs.extend(p.supersedes.iter().map(|&old| (old, p.number)));
        pairs.extend(p.superseded_by.iter().map(|&new| (p.number, new)));
    }
    for (old, new) in pairs {
        if old == new {
            continue;
        }
        if let Some(&i) = index.get(&new)
            && !plans[i].supersedes.contains(&old)
        {
            plans[i].supersedes.push(old);
        }
        if let Some(&i) = index.get(&old)
            && !plans[i].superseded_by.contains(&new)
        {
            let plan = &mut plans[i];
            plan.superseded_by.push(new);
            if plan.status != Status::Superseded {
                plan.notes.push(format!(
                    "superseded by {new}; status {} set to superseded",
                    plan.status
                ));
                plan.status = Status::Superseded;
            }
        }
    }

    // Check every record before writing any: an import that fails leaves nothing half-written.
    let mut texts = Vec::with_capacity(plans.len());
    for (source, plan) in sources.iter().zip(&plans) {
        let number = plan.number;
        let mut yaml = format!(
            "number: {number}\ntitle: {}\nstatus: {}\ndate: {}\ndeciders: {}\ntags: {}\n\
             supersedes: {}\nsuperseded-by: {}\n",
            frontmatter::scalar(&source.title),
            plan.status,
            plan.date.format("%Y-%m-%d"),
            frontmatter::string_list(&source.deciders),
            frontmatter::string_list(&source.tags),
            frontmatter::number_list(&plan.supersedes),
            frontmatter::number_list(&plan.superseded_by),
        );
        for (k, v) in &plan.extra {
            yaml.push_str(&format!("{k}: {v}\n"));
        }
        let body = source.body.trim_start_matches('\n');
        let text = format!("---\n{yaml}---\n# {number}. {}\n\n{body}", source.title);
        let rel = format!("{DIR}/{number:04}-{}.md", super::slug(&source.title));
        // What we write must read back.
        super::parse(&repo.path(&rel), &rel, &text)?;
        texts.push((rel, text));
    }

    let mut written = Written::default();
    for ((source, plan), (rel, text)) in sources.iter().zip(plans).zip(texts) {
        files::write_atomic(&repo.path(&rel), text.as_bytes())?;
        written.paths.push(rel.clone());
        report.imported.push(Imported {
            from: source.file_name.clone(),
            number: plan.number,
            path: rel,
            status: plan.status,
            notes: plan.notes,
        });
    }
    Ok((report, written))
}

/// Maps a status text to a canonical word, with a note when the mapping was not exact.
fn map_status(raw: Option<&str>) -> (Status, Option<String>) {
    let Some(raw) = raw else {
        return (Status::Proposed, Some("no status; set to proposed".into()));
    };
    let word = raw
        .split('[')
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| c.is_whitespace() || c == '{' || c == '}' || c == '"' || c == '\'')
        .to_ascii_lowercase();
    if let Ok(status) = word.parse::<Status>() {
        return (status, None);
    }
    let first = word.split_whitespace().next().unwrap_or("");
    let (status, exact) = match first {
        "superseded" => (Status::Superseded, true),
        "approved" | "adopted" | "agreed" | "decided" | "done" => (Status::Accepted, false),
        "implemented" | "released" => (Status::Shipped, false),
        "draft" | "open" | "pending" | "in-progress" | "experimental" | "wip" | "proposal" => {
            (Status::Proposed, false)
        }
        "declined" | "abandoned" => (Status::Rejected, false),
        "obsolete" | "retired" => (Status::Deprecated, false),
        _ => {
            return (
                Status::Proposed,
                Some(format!("status `{}` unknown; set to proposed", raw.trim())),
            );
        }
    };
    let note = (!exact).then(|| format!("status `{}` mapped to {status}", raw.trim()));
    (status, note)
}

fn parse_date(raw: &str) -> Option<NaiveDate> {
    let raw = raw
        .trim()
        .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
    ["%Y-%m-%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%Y/%m/%d"]
        .iter()
        .find_map(|f| NaiveDate::parse_from_str(raw, f).ok())
}

/// Every `[text](target)` in a line, as links to records.
fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find("](") else { break };
        let label = &after[..close];
        let target_start = &after[close + 2..];
        let Some(end) = target_start.find(')') else {
            break;
        };
        let target = &target_start[..end];
        let file = target
            .rsplit('/')
            .next()
            .filter(|f| f.ends_with(".md"))
            .map(String::from);
        let number = file
            .as_deref()
            .and_then(super::number_of_file_name)
            .or_else(|| leading_number(label.trim_start_matches(|c: char| !c.is_ascii_digit())));
        out.push(Link { file, number });
        rest = &target_start[end..];
    }
    out
}

fn leading_number(s: &str) -> Option<AdrNumber> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Reads a title heading: `# 1. Title`, `# ADR-0001: Title`, or a plain `# Title`.
fn read_heading(line: &str) -> (Option<AdrNumber>, String) {
    let text = line.trim_start_matches('#').trim();
    let rest = text
        .strip_prefix("ADR")
        .map(|r| r.trim_start_matches(['-', ' ']))
        .unwrap_or(text);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if !digits.is_empty() && rest[digits.len()..].starts_with(['.', ':']) {
        let after = rest[digits.len() + 1..].trim();
        if !after.is_empty() {
            return (digits.parse().ok(), after.to_string());
        }
    }
    (None, text.to_string())
}

fn title_from_file_name(name: &str) -> String {
    let stem = name.trim_end_matches(".md");
    let words = stem
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start_matches('-');
    let words = words.replace(['-', '_'], " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => stem.to_string(),
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .trim_matches(|c| c == '"' || c == '\'' || c == '[' || c == ']')
        })
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Reads one file in whichever shape it has.
fn read_source(file_name: &str, text: &str) -> Source {
    let mut s = Source {
        file_name: file_name.to_string(),
        ..Source::default()
    };
    let file_number = super::number_of_file_name(file_name);
    // Files saved by some Windows editors open with a byte order mark before the `---`.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = match frontmatter::split(text) {
        Some(split) => {
            read_frontmatter_keys(split.yaml, &mut s);
            split.body
        }
        None => text,
    };

    let mut out = String::with_capacity(body.len());
    let mut heading_seen = false;
    let mut in_status = false;
    let mut status_links: Vec<String> = Vec::new();
    let mut before_sections = true;
    for line in body.lines() {
        let trimmed = line.trim();
        if !heading_seen && line.starts_with("# ") {
            heading_seen = true;
            let (n, title) = read_heading(line);
            if s.number.is_none() {
                s.number = file_number.or(n);
            }
            if s.title.is_empty() {
                s.title = title;
            }
            continue;
        }
        if line.starts_with("## ") {
            before_sections = false;
            in_status = trimmed
                .trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("status");
            if in_status {
                continue;
            }
        }
        if in_status {
            if trimmed.is_empty() {
                continue;
            }
            let lower = trimmed.to_ascii_lowercase();
            if lower.starts_with("superseded by") {
                s.status.get_or_insert_with(|| "superseded".into());
                s.superseded_by.extend(links(trimmed));
            } else if lower.starts_with("supersedes") {
                s.supersedes.extend(links(trimmed));
            } else if s.status.is_none() {
                s.status = Some(trimmed.to_string());
            } else {
                status_links.push(trimmed.to_string());
            }
            continue;
        }
        if before_sections && heading_seen {
            if let Some(date) = trimmed.strip_prefix("Date:") {
                s.date.get_or_insert_with(|| date.trim().to_string());
                continue;
            }
            if let Some(bullet) = trimmed
                .strip_prefix("* ")
                .or_else(|| trimmed.strip_prefix("- "))
                && let Some((key, value)) = bullet.split_once(':')
            {
                match key.trim().to_ascii_lowercase().as_str() {
                    "status" => {
                        s.status.get_or_insert_with(|| value.trim().to_string());
                        if value.to_ascii_lowercase().contains("superseded") {
                            s.superseded_by.extend(links(value));
                        }
                        continue;
                    }
                    "deciders" => {
                        s.deciders.extend(split_list(value));
                        continue;
                    }
                    "date" => {
                        s.date.get_or_insert_with(|| value.trim().to_string());
                        continue;
                    }
                    _ => {}
                }
            }
        }
        if !status_links.is_empty() && line.starts_with("## ") {
            out.push_str("## Links\n\n");
            for l in status_links.drain(..) {
                out.push_str(&l);
                out.push_str("\n\n");
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    if s.number.is_none() {
        s.number = file_number;
    }
    if s.title.is_empty() {
        s.title = title_from_file_name(file_name);
    }
    s.body = out;
    s
}

/// Reads `key: value` lines of MADR frontmatter without trusting it to be YAML.
fn read_frontmatter_keys(yaml: &str, s: &mut Source) {
    let mut current: Option<String> = None;
    for line in yaml.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(item) = line.trim_start().strip_prefix("- ")
            && line.starts_with([' ', '-'])
        {
            if let Some(key) = &current {
                apply_key(s, key, item.trim());
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        current = Some(key.clone());
        let value = value.trim();
        if !value.is_empty() {
            apply_key(s, &key, value);
        }
    }
}

fn apply_key(s: &mut Source, key: &str, value: &str) {
    let unbraced = value.trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
    match key {
        "status" => {
            if unbraced.to_ascii_lowercase().contains("superseded") {
                s.superseded_by.extend(links(value));
            }
            s.status = Some(unbraced.to_string());
        }
        "date" => s.date = Some(unbraced.to_string()),
        "title" => s.title = unbraced.trim_matches(['"', '\'']).to_string(),
        "deciders" => s.deciders.extend(split_list(unbraced)),
        "tags" => s.tags.extend(split_list(unbraced)),
        "number" => s.number = unbraced.parse().ok(),
        "consulted" | "informed" if !unbraced.is_empty() => {
            s.extras.push((key.to_string(), unbraced.to_string()));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map() {
        let cases = [
            (Some("Accepted"), Status::Accepted, false),
            (Some("{proposed}"), Status::Proposed, false),
            (Some("{ accepted }"), Status::Accepted, false),
            (Some("approved"), Status::Accepted, true),
            (
                Some("superseded by [ADR-0062](0062-open-api-payload.md)"),
                Status::Superseded,
                false,
            ),
            (Some("experimental"), Status::Proposed, true),
            (Some("something odd"), Status::Proposed, true),
            (None, Status::Proposed, true),
        ];
        for (raw, want, noted) in cases {
            let (got, note) = map_status(raw);
            assert_eq!((got, note.is_some()), (want, noted), "{raw:?}");
        }
    }

    #[test]
    fn dates() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day);
        assert_eq!(parse_date("2023-9-15"), d(2023, 9, 15));
        assert_eq!(parse_date("{ 2024-05-02 }"), d(2024, 5, 2));
        assert_eq!(parse_date("September 20, 2024"), d(2024, 9, 20));
        assert_eq!(parse_date("2024-023-2706"), None);
    }

    #[test]
    fn links_by_file_and_label() {
        let l =
            links("Superseded by [3. Use SQLite](0003-use-sqlite.md) and [ADR-0062](x/0062-a.md)");
        assert_eq!(
            l[0],
            Link {
                file: Some("0003-use-sqlite.md".into()),
                number: Some(3)
            }
        );
        assert_eq!(l[1].number, Some(62));
    }

    #[test]
    fn headings() {
        assert_eq!(read_heading("# 12. Use X"), (Some(12), "Use X".into()));
        assert_eq!(read_heading("# ADR-0003: Use Y"), (Some(3), "Use Y".into()));
        assert_eq!(
            read_heading("# Use Markdown records"),
            (None, "Use Markdown records".into())
        );
        assert_eq!(read_heading("# 2024 plans"), (None, "2024 plans".into()));
    }

    #[test]
    fn nygard_status_section_becomes_frontmatter() {
        let text = "# 3. Use SQLite\n\nDate: 2026-11-30\n\n## Status\n\nAccepted\n\n\
                    Supersedes [2. Use PG](0002-use-pg.md)\n\nAmended by [5. X](0005-x.md)\n\n## Context\n\nWhy.\n";
        let s = read_source("0003-use-sqlite.md", text);
        assert_eq!(s.number, Some(3));
        assert_eq!(s.title, "Use SQLite");
        assert_eq!(s.status.as_deref(), Some("Accepted"));
        assert_eq!(s.date.as_deref(), Some("2026-11-30"));
        assert_eq!(s.supersedes[0].number, Some(2));
        assert_eq!(
            s.body.trim_start(),
            "## Links\n\nAmended by [5. X](0005-x.md)\n\n## Context\n\nWhy.\n"
        );
    }
}
