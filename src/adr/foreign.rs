//! Reading decision records written by other tools, as they are.
//!
//! Three shapes are read, detected per file:
//!
//! - adr-tools / Nygard: `# 1. Title`, a `Date:` line, a `## Status` section whose first
//!   paragraph is the status and whose link lines (`Supersedes [1. …](0001-….md)`,
//!   `Superseded by […](…)`, `Amended by […](…)`, any `adr link` words) carry the relations;
//! - MADR 3+: YAML-ish frontmatter (`status`, `date`, `deciders`, …), read line by line because
//!   real files hold placeholders such as `status: {proposed}` that are not the YAML they look
//!   like, and the title in the first `# ` heading;
//! - MADR 2: bullet metadata under the title (`* Status: …`, `* Deciders: …`, `* Date: …`).
//!
//! [`read_record`] gives such a file as an [`Adr`] without changing it (`adr list`, `show`,
//! lint and the index read repositories adopted with old records this way); `adr import`
//! builds cairn frontmatter from the same reading.

use chrono::NaiveDate;

use super::relation::{self, Kind, Relation};
use super::{Adr, AdrNumber, Error, Format, Status, frontmatter};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Link {
    /// The target's file name, when the link has one.
    pub file: Option<String>,
    pub number: Option<AdrNumber>,
}

/// A relation as read: its kind, the record's words, the link.
pub(crate) type Found = (Kind, String, Link);

#[derive(Debug, Default)]
pub(crate) struct Source {
    pub file_name: String,
    pub format: Format,
    pub number: Option<AdrNumber>,
    pub title: String,
    pub status: Option<String>,
    /// Why the status was inferred rather than read, when it was.
    pub status_note: Option<String>,
    pub date: Option<String>,
    pub deciders: Vec<String>,
    pub tags: Vec<String>,
    pub supersedes: Vec<Link>,
    pub superseded_by: Vec<Link>,
    /// Every other relation.
    pub relations: Vec<Found>,
    pub extras: Vec<(String, String)>,
    pub body: String,
}

/// Reads a record file that has no cairn frontmatter, without changing it.
pub fn read_record(path: &std::path::Path, rel: &str, text: &str) -> Result<Adr, Error> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let s = read_source(name, text);
    let number = s.number.ok_or_else(|| Error::Malformed {
        path: path.to_path_buf(),
        line: 1,
        message: "no cairn frontmatter, and no number in the file name or the first heading".into(),
    })?;
    let (status, _) = map_status(s.status.as_deref());
    let date = match s.date.as_deref() {
        Some(raw) => parse_date(raw).map_or_else(
            || raw.trim().to_string(),
            |d| d.format("%Y-%m-%d").to_string(),
        ),
        None => String::new(),
    };
    let numbers = |links: &[Link]| -> Vec<AdrNumber> {
        let mut out: Vec<AdrNumber> = links.iter().filter_map(|l| l.number).collect();
        out.dedup();
        out
    };
    Ok(Adr {
        number,
        title: s.title.clone(),
        status: status.to_string(),
        date,
        deciders: s.deciders.clone(),
        tags: s.tags.clone(),
        supersedes: numbers(&s.supersedes),
        superseded_by: numbers(&s.superseded_by),
        relations: s
            .relations
            .iter()
            .filter_map(|(kind, text, link)| {
                Some(Relation {
                    kind: *kind,
                    adr: link.number?,
                    text: text.clone(),
                })
            })
            .collect(),
        path: rel.to_string(),
        body: s.body,
        imported_from: None,
        renumbered_from: None,
        format: s.format,
    })
}

/// Maps a status text to a canonical word, with a note when the mapping was not exact.
pub(crate) fn map_status(raw: Option<&str>) -> (Status, Option<String>) {
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
    let first = word
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .find(|w| !w.is_empty())
        .unwrap_or("");
    if let Ok(status) = first.parse::<Status>() {
        return (status, None);
    }
    let (status, exact) = match first {
        "approved" | "adopted" | "agreed" | "decided" | "done" => (Status::Accepted, false),
        "implemented" | "released" => (Status::Shipped, false),
        "draft" | "open" | "pending" | "in-progress" | "experimental" | "wip" | "proposal" => {
            (Status::Proposed, false)
        }
        "declined" | "abandoned" => (Status::Rejected, false),
        "obsolete" | "retired" => (Status::Deprecated, false),
        "superceded" => (Status::Superseded, true),
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

/// A date as records write it; `dd/mm/yyyy` is what adr-tools wrote before its ISO 8601 ADR.
pub(crate) fn parse_date(raw: &str) -> Option<NaiveDate> {
    let raw = raw
        .trim()
        .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
    [
        "%Y-%m-%d",
        "%B %d, %Y",
        "%b %d, %Y",
        "%d %B %Y",
        "%Y/%m/%d",
        "%d/%m/%Y",
    ]
    .iter()
    .find_map(|f| NaiveDate::parse_from_str(raw, f).ok())
}

/// Every `[text](target)` in a line with its byte span, as links to records.
pub(crate) fn links(text: &str) -> Vec<(usize, usize, Link)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('[').map(|i| i + from) {
        let after = &text[open + 1..];
        let Some(close) = after.find("](") else { break };
        let label = &after[..close];
        let target_at = open + 1 + close + 2;
        let Some(end) = text[target_at..].find(')') else {
            break;
        };
        let target = &text[target_at..target_at + end];
        let path = target.split('#').next().unwrap_or("");
        let file = path
            .rsplit('/')
            .next()
            .filter(|f| f.ends_with(".md"))
            .map(String::from);
        // A number in the label counts only for a link that is not to a web page
        // (`[#151](https://…/issues/151)` names an issue, not a record).
        let number = file
            .as_deref()
            .and_then(super::number_of_file_name)
            .or_else(|| {
                (!target.contains("://"))
                    .then(|| {
                        leading_number(label.trim_start_matches(|c: char| !c.is_ascii_digit()))
                    })
                    .flatten()
            });
        out.push((open, target_at + end + 1, Link { file, number }));
        from = target_at + end + 1;
    }
    out
}

fn leading_number(s: &str) -> Option<AdrNumber> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The relations written in one line (a status line or a status value): each link to a record
/// with the relation words in front of it, or, after a first relation, only `,` / `and`
/// between. Returns the relations and the text in front of the first one (the status words of
/// `Accepted (partly superseded by [8](…))`), or `None` when the line has no relation.
fn relations_in(line: &str, whole_line: bool) -> Option<(Vec<Found>, String)> {
    let mut found = Vec::new();
    let mut leading = None;
    let mut prev_end = 0;
    for (start, end, link) in links(line) {
        if link.number.is_none() {
            prev_end = end;
            continue;
        }
        let before = &line[prev_end..start];
        let separator_only = before
            .split(|c: char| c.is_whitespace() || c == ',' || c == '&')
            .all(|w| w.is_empty() || w.eq_ignore_ascii_case("and"));
        let rel = match relation::words_before(before) {
            Some((kind, words, at)) => {
                if leading.is_none() {
                    leading = Some(before[..at].to_string());
                }
                Some((kind, words))
            }
            None if !found.is_empty() && separator_only => {
                found.last().map(|(k, w, _): &Found| (*k, w.clone()))
            }
            // `adr link 3 Extends 1 "Extended by"` writes `Extends [1. …](0001-….md)`: a
            // line that is a few words and one link to a record is a relation too.
            None if whole_line
                && found.is_empty()
                && prev_end == 0
                && link.file.is_some()
                && line[end..].trim().is_empty()
                && !before.trim().is_empty()
                && before.split_whitespace().count() <= 4
                && !before.contains(['.', ':', '(']) =>
            {
                leading = Some(String::new());
                Some((Kind::Other, before.trim().to_string()))
            }
            None => None,
        };
        if let Some((kind, words)) = rel {
            found.push((kind, words, link));
        }
        prev_end = end;
    }
    if found.is_empty() {
        return None;
    }
    let leading = leading
        .unwrap_or_default()
        .trim()
        .trim_matches(|c: char| c.is_whitespace() || "(,;:-—–*_".contains(c))
        .to_string();
    Some((found, leading))
}

impl Source {
    fn add_relations(&mut self, found: Vec<Found>) {
        for (kind, words, link) in found {
            match kind {
                Kind::Supersedes => self.supersedes.push(link),
                Kind::SupersededBy => self.superseded_by.push(link),
                _ => self.relations.push((kind, words, link)),
            }
        }
    }

    /// Reads a status text that may carry relations; keeps the status words, if any.
    fn status_value(&mut self, value: &str) {
        match relations_in(value, false) {
            Some((found, leading)) => {
                self.add_relations(found);
                if !leading.is_empty() {
                    self.status.get_or_insert(leading);
                }
            }
            None => {
                self.status.get_or_insert_with(|| value.trim().to_string());
            }
        }
    }
}

/// Reads a title heading: `# 1. Title`, `# ADR-0001: Title`, or a plain `# Title`.
pub(crate) fn read_heading(line: &str) -> (Option<AdrNumber>, String) {
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
pub(crate) fn read_source(file_name: &str, text: &str) -> Source {
    let mut s = Source {
        file_name: file_name.to_string(),
        format: Format::AdrTools,
        ..Source::default()
    };
    let file_number = super::number_of_file_name(file_name);
    // Files saved by some Windows editors open with a byte order mark before the `---`.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let body = match frontmatter::split(text) {
        Some(split) => {
            s.format = Format::Madr;
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
            match relations_in(trimmed, true) {
                Some((found, leading)) => {
                    s.add_relations(found);
                    if !leading.is_empty() && s.status.is_none() {
                        s.status = Some(leading);
                    }
                }
                None if s.status.is_none() => s.status = Some(trimmed.to_string()),
                None => status_links.push(trimmed.to_string()),
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
                        s.format = Format::Madr;
                        s.status_value(value);
                        continue;
                    }
                    "deciders" => {
                        s.format = Format::Madr;
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
    if s.status.is_none() {
        // adr-tools replaces the status with `Superseded by …`; a status section holding only
        // other relations (`Partly superseded by …`, `Amends …`) is of a record in force.
        if !s.superseded_by.is_empty() {
            s.status = Some("superseded".into());
        } else if !s.relations.is_empty() || !s.supersedes.is_empty() {
            s.status = Some("accepted".into());
            s.status_note = Some("no status word beside its relations; read as accepted".into());
        }
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
            let before = s.status.take();
            s.status_value(unbraced.trim_matches(['"', '\'']));
            if s.status.is_none() {
                s.status = before;
            }
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
            (Some("Accepted — 2026-05-14"), Status::Accepted, false),
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
        assert_eq!(parse_date("14/02/2016"), d(2016, 2, 14));
        assert_eq!(parse_date("2024-023-2706"), None);
    }

    #[test]
    fn links_by_file_and_label() {
        let l = links(
            "Superseded by [3. Use SQLite](0003-use-sqlite.md) and [ADR-0062](x/0062-a.md#top)",
        );
        assert_eq!(
            l[0].2,
            Link {
                file: Some("0003-use-sqlite.md".into()),
                number: Some(3)
            }
        );
        assert_eq!(l[1].2.number, Some(62));
        assert_eq!(
            links("[#151](https://example.com/issues/151)")[0].2.number,
            None
        );
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
    fn nygard_status_section_becomes_relations() {
        let text = "# 3. Use SQLite\n\nDate: 2026-11-30\n\n## Status\n\nAccepted\n\n\
                    Supersedes [2. Use PG](0002-use-pg.md)\n\nAmended by [5. X](0005-x.md)\n\n\
                    Extends [1. Y](0001-y.md)\n\n## Context\n\nWhy.\n";
        let s = read_source("0003-use-sqlite.md", text);
        assert_eq!(s.number, Some(3));
        assert_eq!(s.title, "Use SQLite");
        assert_eq!(s.status.as_deref(), Some("Accepted"));
        assert_eq!(s.date.as_deref(), Some("2026-11-30"));
        assert_eq!(s.supersedes[0].number, Some(2));
        let rels: Vec<(Kind, &str, Option<u32>)> = s
            .relations
            .iter()
            .map(|(k, w, l)| (*k, w.as_str(), l.number))
            .collect();
        assert_eq!(
            rels,
            [
                (Kind::AmendedBy, "Amended by", Some(5)),
                (Kind::Other, "Extends", Some(1))
            ]
        );
        assert_eq!(s.body.trim_start(), "## Context\n\nWhy.\n");
    }

    #[test]
    fn partial_and_old_spellings() {
        // As adr-tools 2.x wrote a supersede, then `adr link` with partial words.
        let text = "# 4. Deploy\n\nDate: 12/01/1992\n\n## Status\n\nSuperceded by [6. A](0006-a.md)\n\n\
                    Partly superseded by [8. B](0008-b.md)\n\n## Context\n";
        let s = read_source("0004-deploy.md", text);
        assert_eq!(s.superseded_by[0].number, Some(6));
        assert_eq!(s.status.as_deref(), Some("superseded"));
        assert_eq!(s.relations[0].0, Kind::PartlySupersededBy);

        let only_partial = "# 4. Deploy\n\n## Status\n\nPartly superseded by [8. B](0008-b.md)\n";
        let s = read_source("0004-deploy.md", only_partial);
        assert_eq!(s.status.as_deref(), Some("accepted"));
        assert!(s.status_note.is_some());

        let madr = "---\nstatus: \"Accepted (partly superseded by [0011](0011-x.md), [0012](0012-y.md))\"\n---\n# T\n";
        let s = read_source("0010-t.md", madr);
        assert_eq!(s.status.as_deref(), Some("Accepted"));
        let n: Vec<_> = s.relations.iter().map(|r| (r.0, r.2.number)).collect();
        assert_eq!(
            n,
            [
                (Kind::PartlySupersededBy, Some(11)),
                (Kind::PartlySupersededBy, Some(12))
            ]
        );
    }
}
