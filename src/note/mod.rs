//! Discovery notes: a link (or a thought) found while working, with why it mattered.
//!
//! On disk: `vault/notes/YYYY-MM-DD-slug.md`, YAML frontmatter then Markdown:
//!
//! ```text
//! ---
//! url: https://example.com/guide        # absent for a text note
//! title: The guide
//! tags: [nfs, backup]
//! relevance: why it mattered (the --context)
//! captured: 2026-12-01T19:30:00Z
//! session: abc123                       # the agent session, when there is one
//! ---
//! # The guide
//!
//! One paragraph of summary.
//!
//! ## Page
//!
//! The page's main text.
//! ```
//!
//! The file is the truth and may be edited by hand freely: reading is lenient (unknown keys
//! are kept out of the way, a missing key is empty), and the index reads it whole when it
//! changes (kind `note`, with its own decay rate `[recall] decay.note`). The day in the name
//! is the UTC day it was captured; the id of a note is its file name without `.md`.

pub mod llm;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where notes live, relative to the root.
pub const DIR: &str = "vault/notes";

/// A fetched page longer than this (characters) is cut, with a line saying so.
pub const MAX_PAGE_CHARS: usize = 100_000;

/// A note's frontmatter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Front {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub relevance: String,
    #[serde(default)]
    pub captured: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// A note: its frontmatter and the Markdown after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub front: Front,
    pub body: String,
}

/// Why a note file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// 1-based line the problem is on.
    pub line: usize,
    pub message: String,
}

impl Note {
    /// The file's text.
    pub fn render(&self) -> String {
        let yaml = yaml_serde::to_string(&self.front).expect("frontmatter serializes");
        format!("---\n{yaml}---\n{}", self.body)
    }

    /// Reads a note file's text.
    pub fn parse(text: &str) -> Result<Note, ParseError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = text.strip_prefix("---\n") else {
            // A hand-made note without frontmatter: all body.
            return Ok(Note {
                front: Front::default(),
                body: text.to_string(),
            });
        };
        let (yaml, body) = match rest.find("\n---\n") {
            Some(i) => (&rest[..i + 1], &rest[i + 5..]),
            None if rest.ends_with("\n---") => (&rest[..rest.len() - 3], ""),
            None => {
                return Err(ParseError {
                    line: 1,
                    message: "the frontmatter opened on line 1 is never closed with `---`".into(),
                });
            }
        };
        // As for an ADR's frontmatter: the YAML scanner's time grows with the nesting, so
        // thousands of `[` cost seconds (16,000 took 7 s in a debug build, seen fuzzing the
        // `note_file` target; fuzz/corpus/note_file/regress-deep-flow.md).
        let brackets = yaml.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
        let most = crate::adr::frontmatter::MAX_BRACKETS;
        if brackets > most {
            return Err(ParseError {
                line: 2,
                message: format!(
                    "frontmatter: {brackets} `[` and `{{` (more than {most}), nested too deep to read"
                ),
            });
        }
        let front: Front = yaml_serde::from_str(yaml).map_err(|e| ParseError {
            line: e.location().map_or(2, |l| l.line() + 1),
            message: format!("frontmatter: {e}"),
        })?;
        Ok(Note {
            front,
            body: body.to_string(),
        })
    }

    /// The text the index holds: title, relevance, tags and body.
    pub fn indexed_text(&self) -> String {
        let mut t = String::new();
        if !self.front.relevance.is_empty() {
            t.push_str(&self.front.relevance);
            t.push('\n');
        }
        if !self.front.tags.is_empty() {
            t.push_str(&format!("[{}]\n", self.front.tags.join(", ")));
        }
        t.push_str(self.body.trim());
        t
    }
}

/// What a note is made of before it is written.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub url: Option<String>,
    pub title: String,
    pub tags: Vec<String>,
    pub relevance: String,
    pub summary: String,
    /// The page's main text, or a text note's own text.
    pub text: String,
    pub session: Option<String>,
}

impl Draft {
    /// The note, captured at `now`.
    pub fn into_note(self, now: DateTime<Utc>) -> Note {
        let mut body = format!("# {}\n", one_line(&self.title));
        if !self.summary.trim().is_empty() {
            body.push('\n');
            body.push_str(self.summary.trim());
            body.push('\n');
        }
        if !self.text.trim().is_empty() {
            if self.url.is_some() {
                body.push_str("\n## Page\n\n");
            } else {
                body.push('\n');
            }
            body.push_str(&cut(self.text.trim(), MAX_PAGE_CHARS));
            body.push('\n');
        }
        Note {
            front: Front {
                url: self.url,
                title: one_line(&self.title),
                tags: self.tags,
                relevance: self.relevance,
                captured: crate::time::format(now),
                session: self.session,
            },
            body,
        }
    }
}

/// A text cut at `max` characters, with a line saying so.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((i, _)) => format!("{}\n\n(… cut at {max} characters)", &text[..i]),
    }
}

pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A title for a text note: its first line, at most 80 characters.
pub fn title_of_text(text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("note");
    let first = first.trim().trim_start_matches('#').trim();
    match first.char_indices().nth(80) {
        None => first.to_string(),
        Some((i, _)) => format!("{}…", &first[..i]),
    }
}

/// A summary made without an LLM: the page's first paragraph (at most 600 characters), and
/// the headings it covers.
pub fn plain_summary(text: &str, headings: &[String]) -> String {
    let first = text
        .split("\n\n")
        .map(str::trim)
        .find(|p| {
            !p.is_empty()
                && crate::library::extract::heading_line(p.lines().next().unwrap_or("")).is_none()
                && p.split_whitespace().count() >= 5
        })
        .unwrap_or("");
    let mut s = one_line(first);
    if let Some((i, _)) = s.char_indices().nth(600) {
        s.truncate(i);
        s.push('…');
    }
    let heads: Vec<&str> = headings.iter().take(8).map(String::as_str).collect();
    if !heads.is_empty() {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&format!("(Covers: {}.)", heads.join("; ")));
    }
    s
}

/// Tags as given: split at commas, trimmed, lowercased, no duplicates.
pub fn tags(given: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in given.iter().flat_map(|t| t.split(',')) {
        let t = t.trim().to_lowercase();
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The slug of a title: lowercase ASCII words joined by `-`, at most 60 characters.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
        if s.len() >= 60 {
            break;
        }
    }
    let s = s.trim_end_matches('-').to_string();
    if s.is_empty() { "note".into() } else { s }
}

/// The file name (without `.md`) for a note of `slug` (see [`slug`], [`slug_of_url`])
/// captured at `now`, one not taken in `taken` (`-2`, `-3`… appended).
pub fn stem(slug: &str, now: DateTime<Utc>, taken: impl Fn(&str) -> bool) -> String {
    let base = format!("{}-{slug}", now.format("%Y-%m-%d"));
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|s| !taken(s))
        .expect("some suffix is free")
}

/// A readable title for a URL whose page was not read (offline, or the fetch failed): the
/// words of its path's last meaningful segment (`/blog/nfs-locking.html` → `nfs locking`),
/// percent-decoded, with the host after it (`nfs locking (example.com)`); the host alone for
/// a URL without a path. The note's slug is made from the path's words alone.
pub fn title_of_url(url: &str) -> String {
    let (host, words) = url_parts(url);
    match words {
        Some(w) if !host.is_empty() => format!("{w} ({host})"),
        Some(w) => w,
        None if !host.is_empty() => host,
        None => url.trim().to_string(),
    }
}

/// The slug words of a URL: its path's (see [`title_of_url`]), or its host's.
pub fn slug_of_url(url: &str) -> String {
    let (host, words) = url_parts(url);
    slug(&words.unwrap_or(host))
}

/// A URL's host (without `www.` and a port) and its path's last meaningful segment as words.
fn url_parts(url: &str) -> (String, Option<String>) {
    let rest = url.trim();
    let rest = rest.split_once("://").map_or(rest, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = host.split(':').next().unwrap_or(host);
    let host = host.strip_prefix("www.").unwrap_or(host).to_lowercase();
    const EXTENSIONS: [&str; 9] = [
        ".html", ".htm", ".php", ".aspx", ".asp", ".jsp", ".md", ".txt", ".pdf",
    ];
    let words = path
        .split('/')
        .rev()
        .map(|seg| {
            let seg = percent_decoded(seg);
            let lower = seg.to_lowercase();
            let seg = EXTENSIONS
                .iter()
                .find_map(|ext| lower.ends_with(ext).then(|| &seg[..seg.len() - ext.len()]))
                .unwrap_or(&seg);
            seg.replace(['-', '_', '+', '.'], " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        // `index`, a bare number or an id-like hash says nothing of the page.
        .find(|w| !says_nothing(w));
    (host, words)
}

/// Whether a path segment's words say nothing of the page: none, `index`, a bare number, or
/// an id-like hash.
fn says_nothing(words: &str) -> bool {
    words.is_empty()
        || matches!(words.to_lowercase().as_str(), "index" | "default" | "main")
        || words.chars().all(|c| c.is_ascii_digit())
        || (words.len() >= 12 && words.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `%XX` escapes decoded (an invalid one, or bytes that are not UTF-8, kept as they are).
fn percent_decoded(seg: &str) -> String {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| seg.to_string())
}

/// Whether an argument is a URL to fetch.
pub fn is_url(arg: &str) -> bool {
    let a = arg.trim();
    (a.starts_with("http://") || a.starts_with("https://")) && !a.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_round_trips() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let note = Draft {
            url: Some("https://example.com/a".into()),
            title: "A  guide\n".into(),
            tags: vec!["nfs".into()],
            relevance: "why: it explains locks".into(),
            summary: "It says things.".into(),
            text: "Body text.".into(),
            session: None,
        }
        .into_note(now);
        let text = note.render();
        assert!(
            text.starts_with("---\nurl: https://example.com/a\ntitle: A guide\n"),
            "{text}"
        );
        assert!(
            text.contains("# A guide\n\nIt says things.\n\n## Page\n\nBody text.\n"),
            "{text}"
        );
        assert_eq!(Note::parse(&text).unwrap(), note);
    }

    #[test]
    fn hand_edits_are_read_leniently_and_bad_yaml_names_a_line() {
        let n = Note::parse("---\ntitle: x\nextra: kept out\n---\nbody").unwrap();
        assert_eq!(n.front.title, "x");
        assert_eq!(n.body, "body");
        assert_eq!(Note::parse("just text").unwrap().body, "just text");
        let e = Note::parse("---\ntitle: [x\n---\n").unwrap_err();
        assert!(e.line >= 2, "{}", e.line);
        assert!(Note::parse("---\ntitle: x\n").is_err());
    }

    #[test]
    fn frontmatter_nested_too_deep_is_refused_by_count() {
        // Regression: 16,000 `[` kept the YAML scanner busy for seconds (fuzz target
        // `note_file`, fuzz/corpus/note_file/regress-deep-flow.md).
        let text = format!("---\ntitle: {}\n---\nbody\n", "[".repeat(16_000));
        let e = Note::parse(&text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("nested too deep"), "{}", e.message);
        // Brackets a real note has still parse.
        let ok = Note::parse("---\ntitle: a [b] {c}\ntags: [x, y]\n---\nbody\n").unwrap();
        assert_eq!(ok.front.tags, vec!["x", "y"]);
    }

    #[test]
    fn slugs_and_stems() {
        assert_eq!(slug("NFS: locks & leases (v4)!"), "nfs-locks-leases-v4");
        assert_eq!(slug("日本"), "note");
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(stem("a-b", now, |_| false), "2026-12-01-a-b");
        assert_eq!(
            stem("a-b", now, |s| s == "2026-12-01-a-b"),
            "2026-12-01-a-b-2"
        );
    }

    #[test]
    fn a_url_gives_a_readable_title_and_slug() {
        for (url, title, slug) in [
            (
                "https://example.com/nfs-locking",
                "nfs locking (example.com)",
                "nfs-locking",
            ),
            (
                "https://www.example.com:8443/blog/NFS_Leases.html?x=1#top",
                "NFS Leases (example.com)",
                "nfs-leases",
            ),
            (
                "http://wiki.local/docs/retry%20budget/index.php",
                "retry budget (wiki.local)",
                "retry-budget",
            ),
            (
                "https://github.com/org/repo/issues/1234",
                "issues (github.com)",
                "issues",
            ),
            ("https://example.com/", "example.com", "example-com"),
            ("https://user:pw@example.org", "example.org", "example-org"),
            ("https://x.org/a/%ZZ", "%ZZ (x.org)", "zz"),
        ] {
            assert_eq!(title_of_url(url), title, "{url}");
            assert_eq!(slug_of_url(url), slug, "{url}");
        }
    }

    #[test]
    fn urls_tags_and_summaries() {
        assert!(is_url("https://x.org/a"));
        assert!(!is_url("see https://x.org/a"));
        assert!(!is_url("ftp://x"));
        assert_eq!(tags(&["A, b".into(), "a".into()]), vec!["a", "b"]);
        let s = plain_summary(
            "# T\n\nshort\n\nThis paragraph has enough words in it.",
            &["T".into(), "U".into()],
        );
        assert_eq!(s, "This paragraph has enough words in it. (Covers: T; U.)");
    }
}
