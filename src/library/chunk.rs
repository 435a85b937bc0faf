//! Documents cut into chunks: by headings, then by paragraphs, each chunk at most
//! [`MAX_CHARS`] characters, the next one in the same section starting with the last
//! [`OVERLAP_CHARS`] or so of the one before (whole words), so that a sentence cut at a border
//! is found whole in one of them. Each chunk knows its heading path (`Install › On Linux`) and
//! its page (PDF). Pure functions over text.

use comrak::nodes::NodeValue;
use serde::{Deserialize, Serialize};

/// A chunk longer than this is cut (characters).
pub const MAX_CHARS: usize = 1200;
/// How much of a chunk's end the next chunk of its section repeats (characters, about).
pub const OVERLAP_CHARS: usize = 160;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// The headings above it, outermost first.
    pub heading: Vec<String>,
    /// Its page, 1-based (PDF only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    pub text: String,
}

/// A heading: its first and last line (0-based, inclusive), level and text.
struct Heading {
    first: usize,
    last: usize,
    level: usize,
    text: String,
}

/// Markdown, by its headings (ATX and setext, as comrak reads them: a `#` in a code block is
/// not a heading). Frontmatter is left out.
pub fn markdown(text: &str) -> Vec<Chunk> {
    let arena = comrak::Arena::new();
    let mut options = comrak::Options::default();
    options.extension.front_matter_delimiter = Some("---".to_string());
    let root = comrak::parse_document(&arena, text, &options);
    let mut headings = Vec::new();
    let mut skip_to = 0;
    for node in root.children() {
        let ast = node.data.borrow();
        match &ast.value {
            NodeValue::Heading(h) => headings.push(Heading {
                first: ast.sourcepos.start.line.saturating_sub(1),
                last: ast.sourcepos.end.line.saturating_sub(1),
                level: usize::from(h.level),
                text: node.collect_text().trim().to_string(),
            }),
            NodeValue::FrontMatter(_) => skip_to = ast.sourcepos.end.line,
            _ => {}
        }
    }
    by_headings(text, &headings, skip_to, None)
}

/// Text whose headings are lines `# …` (what [`super::extract::html`] gives).
pub fn marked_text(text: &str, page: Option<u32>) -> Vec<Chunk> {
    let headings: Vec<Heading> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            super::extract::heading_line(l).map(|(level, t)| Heading {
                first: i,
                last: i,
                level,
                text: t.to_string(),
            })
        })
        .collect();
    by_headings(text, &headings, 0, page)
}

/// Plain text, by paragraphs, on `page` if it has one.
pub fn plain(text: &str, page: Option<u32>) -> Vec<Chunk> {
    by_headings(text, &[], 0, page)
}

fn by_headings(text: &str, headings: &[Heading], skip_to: usize, page: Option<u32>) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut start = skip_to.min(lines.len());
    let mut next = headings.iter().peekable();
    loop {
        let end = next
            .peek()
            .map_or(lines.len(), |h| h.first.min(lines.len()));
        if start < end {
            let heading: Vec<String> = path.iter().map(|(_, t)| t.clone()).collect();
            section(&lines[start..end], &heading, page, &mut out);
        }
        let Some(h) = next.next() else { break };
        while path.last().is_some_and(|(l, _)| *l >= h.level) {
            path.pop();
        }
        path.push((h.level, h.text.clone()));
        start = (h.last + 1).max(end);
    }
    out
}

/// One section's lines into chunks: paragraphs (blank-line separated, a fenced block kept
/// whole) packed up to [`MAX_CHARS`].
fn section(lines: &[&str], heading: &[String], page: Option<u32>, out: &mut Vec<Chunk>) {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut fence: Option<&str> = None;
    for line in lines {
        let t = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| t.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            _ => {}
        }
        if line.trim().is_empty() && fence.is_none() {
            if !current.trim().is_empty() {
                paragraphs.push(std::mem::take(&mut current));
            }
            current.clear();
        } else {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line.trim_end());
        }
    }
    if !current.trim().is_empty() {
        paragraphs.push(current);
    }
    let mut pieces = Vec::new();
    for p in paragraphs {
        split_long(p.trim(), &mut pieces);
    }
    let mut text = String::new();
    let mut has_new = false;
    for piece in pieces {
        let len = text.chars().count() + 2 + piece.chars().count();
        if has_new && len > MAX_CHARS {
            let overlap = tail(&text, OVERLAP_CHARS);
            out.push(Chunk {
                heading: heading.to_vec(),
                page,
                text: std::mem::take(&mut text),
            });
            text = overlap;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&piece);
        has_new = true;
    }
    if has_new {
        out.push(Chunk {
            heading: heading.to_vec(),
            page,
            text,
        });
    }
}

/// A paragraph longer than [`MAX_CHARS`] in pieces cut after a sentence or, failing that, a
/// word.
fn split_long(p: &str, out: &mut Vec<String>) {
    let mut rest = p;
    while rest.chars().count() > MAX_CHARS {
        let limit = rest
            .char_indices()
            .nth(MAX_CHARS - OVERLAP_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let head = &rest[..limit];
        let cut = head
            .rfind(". ")
            .map(|i| i + 1)
            .filter(|&i| i > limit / 2)
            .or_else(|| head.rfind(char::is_whitespace).filter(|&i| i > 0))
            .unwrap_or(limit);
        out.push(rest[..cut].trim().to_string());
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
}

/// The end of `text`, about `n` characters, starting at a word.
fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_string();
    }
    let from = text.char_indices().nth(count - n).map_or(0, |(i, _)| i);
    let rest = &text[from..];
    match rest.find(char::is_whitespace) {
        Some(i) => rest[i..].trim_start().to_string(),
        None => rest.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_heading_paths_follow_nesting() {
        let md = "---\ntitle: x\n---\nIntro words.\n\n# Guide\n\nTop.\n\n## Install\n\nRun it.\n\n### On Linux\n\nUse apt.\n\n```\n# not a heading\n\nstill code\n```\n\n## Use\n\nCall it.\n\nSetext\n======\n\nLast.\n";
        let chunks = markdown(md);
        let got: Vec<(Vec<&str>, &str)> = chunks
            .iter()
            .map(|c| {
                (
                    c.heading.iter().map(String::as_str).collect(),
                    c.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![], "Intro words."),
                (vec!["Guide"], "Top."),
                (vec!["Guide", "Install"], "Run it."),
                (
                    vec!["Guide", "Install", "On Linux"],
                    "Use apt.\n\n```\n# not a heading\n\nstill code\n```"
                ),
                (vec!["Guide", "Use"], "Call it."),
                (vec!["Setext"], "Last."),
            ]
        );
    }

    #[test]
    fn long_sections_are_cut_with_overlap() {
        let para = |i: usize| format!("Paragraph {i} says {}.", "word ".repeat(60).trim());
        let text: Vec<String> = (0..10).map(para).collect();
        let chunks = plain(&text.join("\n\n"), Some(4));
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for c in &chunks {
            assert!(
                c.text.chars().count() <= MAX_CHARS + OVERLAP_CHARS,
                "{}",
                c.text.len()
            );
            assert_eq!(c.page, Some(4));
        }
        for pair in chunks.windows(2) {
            let end = tail(&pair[0].text, OVERLAP_CHARS);
            assert!(
                pair[1].text.starts_with(&end),
                "no overlap: {:?}",
                pair[1].text
            );
        }
        // Every paragraph is whole in some chunk.
        for i in 0..10 {
            assert!(chunks.iter().any(|c| c.text.contains(&para(i))), "{i}");
        }
    }

    #[test]
    fn a_paragraph_longer_than_a_chunk_is_cut_at_sentences() {
        let p = "A short sentence here. ".repeat(200);
        let chunks = plain(&p, None);
        assert!(chunks.len() > 1);
        assert!(
            chunks
                .iter()
                .all(|c| c.text.chars().count() <= MAX_CHARS + OVERLAP_CHARS)
        );
        assert!(chunks[0].text.ends_with("here."), "{:?}", chunks[0].text);
    }

    #[test]
    fn marked_text_headings() {
        let chunks = marked_text("# A\n\none\n\n## B\n\ntwo", None);
        assert_eq!(chunks[1].heading, vec!["A", "B"]);
        assert_eq!(chunks[1].text, "two");
    }
}
