//! MEMORY.md: the curated memory injected into every session.
//!
//! Format: `# Memory`, then `## Section` headings (one per category of taxonomy v1, below),
//! then entries `- (YYYY-MM-DD) text`. The file is parsed with comrak for its structure and
//! source positions only; it is never re-rendered. An edit splices new lines into the original
//! text, so every byte a person wrote by hand stays as it was.

use chrono::NaiveDate;
use comrak::nodes::NodeValue;
use serde::Serialize;

/// The file, at the repository root.
pub const FILE: &str = "MEMORY.md";

/// What `cairn init` writes.
pub const TEMPLATE: &str = "# Memory\n\n\
<!-- Curated memory, injected into every agent session. One entry a line:\n\
     `- (YYYY-MM-DD) text`, under `## Section` headings named for the categories\n\
     (Preferences, Rules and conventions, System architecture, Operations, Memory system,\n\
     Projects, People and relationships). Edit by hand freely; cairn keeps your bytes. -->\n";

/// Past this many entries, lint says it is time to prune.
pub const MAX_ENTRIES: usize = 200;

/// The longest entry `add` takes, in characters: an entry is one fact, not a document.
pub const MAX_ENTRY_CHARS: usize = 500;

/// The fewest words `add` takes: "x" or "ok" is no rule or fact.
pub const MIN_ENTRY_WORDS: usize = 2;

/// Taxonomy v1: category id and its section heading.
pub const CATEGORIES: &[(&str, &str)] = &[
    ("preferences", "Preferences"),
    ("rules-conventions", "Rules and conventions"),
    ("system-architecture", "System architecture"),
    ("operations", "Operations"),
    ("memory-system", "Memory system"),
    ("projects", "Projects"),
    ("people-relationships", "People and relationships"),
];

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the entry is empty")]
    Empty,
    #[error("an entry is one line; write several entries for several facts")]
    NotOneLine,
    #[error("the section name is empty")]
    EmptySection,
    #[error(
        "the entry is {chars} characters, more than {MAX_ENTRY_CHARS}; one entry is one fact: split it or shorten it"
    )]
    TooLong { chars: usize },
    #[error(
        "`{0}` is too short to be an entry: write a rule or fact with its subject, at least {MIN_ENTRY_WORDS} words"
    )]
    TooShort(String),
    #[error("`{0}` is not a section of MEMORY.md: use one of {sections} (or --new-section to make it anyway)", sections = headings().join(", "))]
    NotACategory(String),
}

/// The section headings of taxonomy v1.
pub fn headings() -> Vec<&'static str> {
    CATEGORIES.iter().map(|(_, h)| *h).collect()
}

impl From<Error> for crate::error::Error {
    fn from(err: Error) -> Self {
        crate::error::Error::bad_input(err.to_string())
    }
}

/// One `- (date) text` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub date: Option<String>,
    pub text: String,
    /// 1-based line in the file.
    pub line: usize,
    /// 1-based last line of the entry (a list item may run over several lines).
    #[serde(skip)]
    pub end: usize,
}

/// One `## Section`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub title: String,
    /// The taxonomy category the heading names, if any.
    pub category: Option<&'static str>,
    pub line: usize,
    pub entries: Vec<Entry>,
    /// The last line of the section's last list, where a new entry goes.
    #[serde(skip)]
    list_end: Option<usize>,
    #[serde(skip)]
    marker: Option<String>,
}

/// The parsed file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    pub sections: Vec<Section>,
    /// Entries before the first section.
    pub loose: Vec<Entry>,
    /// Lines inside a section that are neither an entry, a heading nor a comment (1-based
    /// line, first line of text).
    #[serde(skip)]
    pub stray: Vec<(usize, String)>,
}

impl Memory {
    pub fn entry_count(&self) -> usize {
        self.loose.len() + self.sections.iter().map(|s| s.entries.len()).sum::<usize>()
    }
}

/// The key a section name is matched by: lower-case words without "and", joined by `-`
/// ("Rules and conventions", "rules & conventions" and "rules-conventions" are one section).
fn section_key(name: &str) -> String {
    name.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && *w != "and")
        .collect::<Vec<_>>()
        .join("-")
}

/// The category a section name stands for.
pub fn category_of(name: &str) -> Option<&'static str> {
    let key = section_key(name);
    CATEGORIES
        .iter()
        .find(|(id, heading)| *id == key || section_key(heading) == key)
        .map(|(id, _)| *id)
}

/// Parses MEMORY.md.
pub fn parse(text: &str) -> Memory {
    let arena = comrak::Arena::new();
    let options = comrak::Options::default();
    let root = comrak::parse_document(&arena, text, &options);
    let lines: Vec<&str> = text.lines().collect();
    let mut memory = Memory {
        sections: Vec::new(),
        loose: Vec::new(),
        stray: Vec::new(),
    };
    for node in root.children() {
        let ast = node.data.borrow();
        match &ast.value {
            NodeValue::Heading(h) if h.level == 2 => {
                let title = node.collect_text().trim().to_string();
                memory.sections.push(Section {
                    category: category_of(&title),
                    title,
                    line: ast.sourcepos.start.line,
                    entries: Vec::new(),
                    list_end: None,
                    marker: None,
                });
            }
            NodeValue::List(_) => {
                let mut entries = Vec::new();
                let mut marker = None;
                for item in node.children() {
                    let pos = item.data.borrow().sourcepos;
                    let (m, entry) = read_item(&lines, pos.start.line, pos.end.line);
                    marker.get_or_insert(m);
                    entries.push(entry);
                }
                match memory.sections.last_mut() {
                    Some(section) => {
                        section.entries.extend(entries);
                        section.list_end = Some(ast.sourcepos.end.line);
                        section.marker = marker;
                    }
                    None => memory.loose.extend(entries),
                }
            }
            // Prose before the first section is the file's introduction; inside a section,
            // anything but a list, a heading or an HTML comment is no entry.
            NodeValue::Heading(_) | NodeValue::HtmlBlock(_) => {}
            _ if !memory.sections.is_empty() => {
                let line = ast.sourcepos.start.line;
                let first = lines
                    .get(line - 1)
                    .copied()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                memory.stray.push((line, first));
            }
            _ => {}
        }
    }
    memory
}

/// Reads a list item from its source lines: its marker, date and text.
fn read_item(lines: &[&str], start: usize, end: usize) -> (String, Entry) {
    let first = lines.get(start - 1).copied().unwrap_or("").trim_start();
    let marker_len = first
        .find(|c: char| c.is_whitespace())
        .unwrap_or(first.len());
    let marker = first[..marker_len].to_string();
    let mut text = first[marker_len..].trim().to_string();
    for l in lines.iter().take(end).skip(start) {
        let l = l.trim();
        if !l.is_empty() {
            text.push(' ');
            text.push_str(l);
        }
    }
    let (date, text) = split_date(&text);
    (
        marker,
        Entry {
            date,
            text,
            line: start,
            end: end.max(start),
        },
    )
}

/// `(2026-11-30) text` → (Some("2026-11-30"), "text").
fn split_date(text: &str) -> (Option<String>, String) {
    if let Some(rest) = text.strip_prefix('(')
        && let Some((date, after)) = rest.split_once(')')
        && date.len() == 10
        && date.chars().all(|c| c.is_ascii_digit() || c == '-')
    {
        return (Some(date.to_string()), after.trim().to_string());
    }
    (None, text.to_string())
}

/// The key two entries are the same by: lower case, words only (case, spacing and
/// punctuation do not make another fact).
fn same_key(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `add` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Added {
    pub section: String,
    pub section_created: bool,
    /// The same text was already in the section: nothing was written.
    pub duplicate: bool,
    pub line: usize,
    pub entry: String,
}

/// Adds a dated entry to `section` (made if missing) and returns the new text of the file.
/// A section that is no category of the taxonomy is refused unless `new_section`.
pub fn add(
    text: &str,
    section: &str,
    entry: &str,
    date: NaiveDate,
    new_section: bool,
) -> Result<(String, Added), Error> {
    let entry = entry.trim();
    // A date the text starts with is the entry's date, not part of its text: written once.
    let (given, rest) = split_date(entry);
    let date = given
        .as_deref()
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
        .unwrap_or(date);
    let entry = if given.is_some() {
        rest.as_str()
    } else {
        entry
    };
    if entry.is_empty() {
        return Err(Error::Empty);
    }
    if entry.chars().any(char::is_control) {
        return Err(Error::NotOneLine);
    }
    let chars = entry.chars().count();
    if chars > MAX_ENTRY_CHARS {
        return Err(Error::TooLong { chars });
    }
    if entry.split_whitespace().count() < MIN_ENTRY_WORDS {
        return Err(Error::TooShort(entry.to_string()));
    }
    let section = section.trim();
    if section.is_empty() {
        return Err(Error::EmptySection);
    }
    let memory = parse(text);
    let key = section_key(section);
    let found = memory.sections.iter().find(|s| {
        section_key(&s.title) == key || (s.category.is_some() && s.category == category_of(section))
    });
    // A section the file already has is taken as it is, category or not.
    if found.is_none() && category_of(section).is_none() && !new_section {
        return Err(Error::NotACategory(section.to_string()));
    }
    // The same text in another case or spacing, anywhere in the file, is already there.
    let same = same_key(entry);
    let elsewhere = memory
        .sections
        .iter()
        .flat_map(|s| s.entries.iter().map(move |e| (s, e)))
        .find(|(_, e)| same_key(&e.text) == same);
    if let Some((s, e)) = elsewhere {
        let added = Added {
            section: s.title.clone(),
            section_created: false,
            duplicate: true,
            line: e.line,
            entry: e.text.clone(),
        };
        return Ok((text.to_string(), added));
    }
    let line_text = |marker: &str| format!("{marker} ({}) {entry}", date.format("%Y-%m-%d"));
    let lines: Vec<&str> = text.split_inclusive('\n').collect();

    if let Some(s) = found {
        if s.entries.iter().any(|e| e.text == entry) {
            let line = s
                .entries
                .iter()
                .find(|e| e.text == entry)
                .map_or(s.line, |e| e.line);
            let added = Added {
                section: s.title.clone(),
                section_created: false,
                duplicate: true,
                line,
                entry: entry.to_string(),
            };
            return Ok((text.to_string(), added));
        }
        let marker = s.marker.clone().unwrap_or_else(|| "-".to_string());
        let (after_line, new_lines) = match s.list_end {
            Some(end) => (end, format!("{}\n", line_text(&marker))),
            None => (s.line, format!("\n{}\n", line_text(&marker))),
        };
        let mut out = String::with_capacity(text.len() + new_lines.len() + 1);
        for l in &lines[..after_line.min(lines.len())] {
            out.push_str(l);
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&new_lines);
        for l in &lines[after_line.min(lines.len())..] {
            out.push_str(l);
        }
        let line = after_line + new_lines.matches('\n').count();
        let added = Added {
            section: s.title.clone(),
            section_created: false,
            duplicate: false,
            line,
            entry: entry.to_string(),
        };
        return Ok((out, added));
    }

    let title = category_of(section)
        .and_then(|id| CATEGORIES.iter().find(|(c, _)| *c == id))
        .map_or_else(|| section.to_string(), |(_, heading)| heading.to_string());
    let mut out = text.to_string();
    if out.is_empty() {
        out.push_str("# Memory\n");
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("\n## {title}\n\n{}\n", line_text("-")));
    let line = out.lines().count();
    let added = Added {
        section: title,
        section_created: true,
        duplicate: false,
        line,
        entry: entry.to_string(),
    };
    Ok((out, added))
}

/// MEMORY.md's size in tokens, estimated as one token per four characters (rounded up).
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The problem of a file over its token budget, if it is.
pub fn over_budget(text: &str, budget_tokens: usize) -> Option<Problem> {
    let tokens = tokens(text);
    (tokens > budget_tokens).then(|| Problem {
        line: None,
        message: format!(
            "about {tokens} tokens, over the budget of {budget_tokens} ([memory] budget_tokens in cairn.toml): prune or merge entries"
        ),
    })
}

/// MEMORY.md cut to its budget: whole entries, in file order, as many as fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budgeted {
    /// The text to show: the file up to the first entry that does not fit.
    pub text: String,
    pub tokens: usize,
    pub budget_tokens: usize,
    /// Entries left out, and the sections they are in (with how many each).
    pub cut_entries: usize,
    pub cut_sections: Vec<(String, usize)>,
    /// The first line left out (1-based), if any was.
    pub cut_from_line: Option<usize>,
}

impl Budgeted {
    /// A line saying what was left out, or `None` when nothing was.
    pub fn note(&self) -> Option<String> {
        let line = self.cut_from_line?;
        let sections: Vec<String> = self
            .cut_sections
            .iter()
            .map(|(s, n)| format!("{s} ({n})"))
            .collect();
        Some(format!(
            "{FILE} is about {} tokens, over its budget of {}: left out {} {} from line {line} on ({}); `cairn memory show` prints it whole",
            self.tokens,
            self.budget_tokens,
            self.cut_entries,
            if self.cut_entries == 1 {
                "entry"
            } else {
                "entries"
            },
            if sections.is_empty() {
                "no entries".to_string()
            } else {
                sections.join(", ")
            },
        ))
    }
}

/// Cuts `text` to `budget_tokens`: it keeps the file as it is up to the first entry whose end
/// would pass the budget and leaves out that entry and everything after it, so no entry is
/// ever cut in the middle.
pub fn within_budget(text: &str, budget_tokens: usize) -> Budgeted {
    let total = tokens(text);
    let mut out = Budgeted {
        text: text.to_string(),
        tokens: total,
        budget_tokens,
        cut_entries: 0,
        cut_sections: Vec::new(),
        cut_from_line: None,
    };
    if total <= budget_tokens {
        return out;
    }
    let order = InOrder::new(text);
    let upto = |line: usize| -> usize {
        order.lines[..line.min(order.lines.len())]
            .iter()
            .map(|l| l.chars().count())
            .sum()
    };
    let Some(first_cut) = order
        .entries
        .iter()
        .position(|e| upto(e.end).div_ceil(4) > budget_tokens)
    else {
        return out;
    };
    let kept = order.first(first_cut);
    out.text = kept.text;
    out.cut_entries = kept.cut_entries;
    out.cut_sections = kept.cut_sections;
    out.cut_from_line = kept.cut_from_line;
    out
}

/// MEMORY.md's entries in file order, to keep the first few of: what a briefing fitted to an
/// agent's limit shows (`hooks::agents::budget`).
pub struct InOrder<'a> {
    lines: Vec<&'a str>,
    entries: Vec<Placed>,
}

/// An entry's place: its section's title ("" outside any) and its first and last line.
struct Placed {
    section: String,
    line: usize,
    end: usize,
}

/// The start of MEMORY.md up to an entry, and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub text: String,
    pub cut_entries: usize,
    /// The sections of the entries left out, in file order, with how many each.
    pub cut_sections: Vec<(String, usize)>,
    /// The first line left out (1-based), if any was.
    pub cut_from_line: Option<usize>,
}

impl<'a> InOrder<'a> {
    pub fn new(text: &'a str) -> InOrder<'a> {
        let memory = parse(text);
        let place = |section: &str, e: &Entry| Placed {
            section: section.to_string(),
            line: e.line,
            end: e.end,
        };
        let mut entries: Vec<Placed> = memory.loose.iter().map(|e| place("", e)).collect();
        for s in &memory.sections {
            entries.extend(s.entries.iter().map(|e| place(&s.title, e)));
        }
        entries.sort_by_key(|e| e.line);
        InOrder {
            lines: text.split_inclusive('\n').collect(),
            entries,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file as it is up to its `k`th entry (the whole file when `k` is every entry): the
    /// entries after it left out, with the blank lines and the headings of sections left
    /// empty before them.
    pub fn first(&self, k: usize) -> Kept {
        let Some(cut) = self.entries.get(k) else {
            return Kept {
                text: self.lines.concat(),
                cut_entries: 0,
                cut_sections: Vec::new(),
                cut_from_line: None,
            };
        };
        let mut kept = &self.lines[..(cut.line - 1).min(self.lines.len())];
        // A heading whose entries were all left out goes with them.
        while let Some((last, rest)) = kept.split_last()
            && (last.trim().is_empty() || last.starts_with("##"))
        {
            kept = rest;
        }
        let mut cut_sections: Vec<(String, usize)> = Vec::new();
        for e in &self.entries[k..] {
            let name = if e.section.is_empty() {
                "outside any section"
            } else {
                e.section.as_str()
            };
            match cut_sections.last_mut() {
                Some((s, n)) if s == name => *n += 1,
                _ => cut_sections.push((name.to_string(), 1)),
            }
        }
        Kept {
            text: kept.concat(),
            cut_entries: self.entries.len() - k,
            cut_sections,
            cut_from_line: Some(cut.line),
        }
    }
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

/// Undated or misdated entries, entries outside sections, unknown sections, too many entries.
pub fn lint(memory: &Memory) -> Vec<Problem> {
    let mut problems = Vec::new();
    let check_entry = |e: &Entry, problems: &mut Vec<Problem>| match &e.date {
        None => problems.push(Problem {
            line: Some(e.line),
            message: "undated entry: write it as `- (YYYY-MM-DD) text`".into(),
        }),
        Some(d) if NaiveDate::parse_from_str(d, "%Y-%m-%d").is_err() => problems.push(Problem {
            line: Some(e.line),
            message: format!("entry date `{d}` is not a real YYYY-MM-DD date"),
        }),
        Some(_) => {}
    };
    for (line, text) in &memory.stray {
        problems.push(Problem {
            line: Some(*line),
            message: format!(
                "`{text}` is not an entry: write it as `- (YYYY-MM-DD) text` or move it into a comment"
            ),
        });
    }
    for e in &memory.loose {
        problems.push(Problem {
            line: Some(e.line),
            message: "entry outside any `## Section`".into(),
        });
        check_entry(e, &mut problems);
    }
    let known: Vec<&str> = CATEGORIES.iter().map(|(_, h)| *h).collect();
    for s in &memory.sections {
        if s.category.is_none() {
            problems.push(Problem {
                line: Some(s.line),
                message: format!(
                    "unknown section `{}`: use one of {}",
                    s.title,
                    known.join(", ")
                ),
            });
        }
        for e in &s.entries {
            check_entry(e, &mut problems);
        }
    }
    for e in memory
        .loose
        .iter()
        .chain(memory.sections.iter().flat_map(|s| &s.entries))
    {
        let chars = e.text.chars().count();
        if chars > MAX_ENTRY_CHARS {
            problems.push(Problem {
                line: Some(e.line),
                message: format!(
                    "entry of {chars} characters (more than {MAX_ENTRY_CHARS}): one entry is one fact; split or shorten it"
                ),
            });
        }
    }
    let count = memory.entry_count();
    if count > MAX_ENTRIES {
        problems.push(Problem {
            line: None,
            message: format!("{count} entries (more than {MAX_ENTRIES}): time to prune"),
        });
    }
    problems.sort_by_key(|p| p.line);
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()
    }

    const HAND: &str = "# Memory\n\nSome words a person wrote.\n\n## Operations\n\n* (2026-01-02) Restart caddy with `systemctl reload`\n*   (2026-01-03)   odd   spacing kept\n\n<!-- a comment -->\n\n## Preferences\n- (2026-02-01) tabs\n";

    #[test]
    fn parses_sections_and_entries() {
        let m = parse(HAND);
        assert_eq!(m.sections.len(), 2);
        assert_eq!(m.sections[0].category, Some("operations"));
        assert_eq!(m.sections[0].entries[1].text, "odd   spacing kept");
        assert_eq!(m.sections[0].entries[1].line, 8);
        assert_eq!(m.sections[1].entries[0].date.as_deref(), Some("2026-02-01"));
    }

    #[test]
    fn add_keeps_every_other_byte() {
        let (out, added) = add(HAND, "operations", "Use NFS v4 only", day(), false).unwrap();
        assert!(!added.section_created);
        assert_eq!(added.line, 9);
        let want = HAND.replace(
            "odd   spacing kept\n",
            "odd   spacing kept\n* (2026-11-30) Use NFS v4 only\n",
        );
        assert_eq!(out, want);
    }

    #[test]
    fn add_to_last_section_without_trailing_newline() {
        let text = HAND.trim_end();
        let (out, _) = add(text, "Preferences", "spaces in YAML", day(), false).unwrap();
        assert_eq!(out, format!("{text}\n- (2026-11-30) spaces in YAML\n"));
    }

    #[test]
    fn add_creates_a_missing_section_with_its_heading() {
        let (out, added) = add(
            HAND,
            "rules & conventions",
            "never force-push main",
            day(),
            false,
        )
        .unwrap();
        assert!(added.section_created);
        assert_eq!(added.section, "Rules and conventions");
        assert!(out.starts_with(HAND));
        assert!(
            out.ends_with("\n## Rules and conventions\n\n- (2026-11-30) never force-push main\n")
        );
        assert_eq!(parse(&out).sections[2].entries.len(), 1);
    }

    #[test]
    fn add_same_text_twice_is_a_no_op() {
        let (out, added) = add(
            HAND,
            "Operations",
            "Restart caddy with `systemctl reload`",
            day(),
            false,
        )
        .unwrap();
        assert!(added.duplicate);
        assert_eq!(out, HAND);
    }

    #[test]
    fn add_takes_a_date_the_text_starts_with_and_finds_near_duplicates() {
        let (out, _) = add(
            HAND,
            "Preferences",
            "(2026-01-05) spaces in YAML",
            day(),
            false,
        )
        .unwrap();
        assert!(out.ends_with("- (2026-01-05) spaces in YAML\n"), "{out}");
        let (out, added) = add(
            HAND,
            "Preferences",
            "RESTART caddy with systemctl reload.",
            day(),
            false,
        )
        .unwrap();
        assert!(added.duplicate);
        assert_eq!((added.section.as_str(), added.line), ("Operations", 7));
        assert_eq!(out, HAND);
        assert!(matches!(
            add(HAND, "Preferences", "x", day(), false),
            Err(Error::TooShort(_))
        ));
    }

    #[test]
    fn add_under_a_heading_without_a_list() {
        let text = "# Memory\n\n## Projects\n\n## Operations\n- (2026-01-01) x\n";
        let (out, _) = add(text, "Projects", "cairn is written in Rust", day(), false).unwrap();
        assert_eq!(
            out,
            "# Memory\n\n## Projects\n\n- (2026-11-30) cairn is written in Rust\n\n## Operations\n- (2026-01-01) x\n"
        );
    }

    #[test]
    fn lint_finds_what_is_wrong() {
        let text =
            "# Memory\n\n- (2026-01-01) loose\n\n## Misc\n\n- no date\n- (2026-13-01) bad month\n";
        let problems = lint(&parse(text));
        let lines: Vec<Option<usize>> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [Some(3), Some(5), Some(7), Some(8)]);
        assert!(lint(&parse(HAND)).is_empty());
    }

    #[test]
    fn add_refuses_a_section_that_is_no_category_unless_asked() {
        let err = add(HAND, "Misc", "a fact", day(), false).unwrap_err();
        assert!(err.to_string().contains("use one of Preferences,"), "{err}");
        let (_, added) = add(HAND, "Misc", "a fact", day(), true).unwrap();
        assert!(added.section_created);
        let long = "x".repeat(MAX_ENTRY_CHARS + 1);
        assert!(matches!(
            add(HAND, "operations", &long, day(), false),
            Err(Error::TooLong { .. })
        ));
    }

    #[test]
    fn in_order_keeps_the_first_entries_whole() {
        let order = InOrder::new(HAND);
        assert_eq!(order.len(), 3);
        assert_eq!(order.first(3).text, HAND);
        assert_eq!(order.first(3).cut_entries, 0);
        let two = order.first(2);
        // The Preferences heading goes with its one entry; the comment stays.
        assert!(two.text.ends_with("<!-- a comment -->\n"), "{:?}", two.text);
        assert_eq!(two.cut_entries, 1);
        assert_eq!(two.cut_sections, vec![("Preferences".to_string(), 1)]);
        assert_eq!(two.cut_from_line, Some(13));
        let none = order.first(0);
        assert_eq!(none.text, "# Memory\n\nSome words a person wrote.\n");
        assert_eq!(
            none.cut_sections,
            vec![
                ("Operations".to_string(), 2),
                ("Preferences".to_string(), 1)
            ]
        );
    }

    #[test]
    fn within_budget_keeps_whole_entries_in_file_order() {
        // HAND is 200 characters: 50 tokens; its entries end at 27, 36 and 50 tokens.
        assert_eq!(within_budget(HAND, 50).text, HAND);
        let cut = within_budget(HAND, 40);
        assert!(cut.text.ends_with("<!-- a comment -->\n"), "{:?}", cut.text);
        assert_eq!(cut.cut_from_line, Some(13));
        assert_eq!(cut.cut_sections, vec![("Preferences".to_string(), 1)]);
        assert!(
            cut.note()
                .unwrap()
                .contains("left out 1 entry from line 13")
        );
        let cut = within_budget(HAND, 30);
        assert!(cut.text.ends_with("`systemctl reload`\n"), "{:?}", cut.text);
        assert_eq!(cut.cut_entries, 2);
        let none = within_budget(HAND, 10);
        assert_eq!(none.cut_entries, 3);
        assert_eq!(none.text, "# Memory\n\nSome words a person wrote.\n");
    }

    #[test]
    fn lint_counts_entries() {
        let mut text = String::from("# Memory\n\n## Operations\n\n");
        for i in 0..=MAX_ENTRIES {
            text.push_str(&format!("- (2026-01-01) fact {i}\n"));
        }
        let problems = lint(&parse(&text));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("time to prune"));
    }
}
