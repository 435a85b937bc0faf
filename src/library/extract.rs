//! Text out of the formats a person collects: HTML (html2text, the only importer) and PDF
//! (lopdf, the only importer). Pure functions over bytes; nothing here reads a file or the
//! network.

use std::sync::OnceLock;

/// What an HTML page says: its `<title>`, its headings in order, and its main text with each
/// heading on a line of its own as `#`… (Markdown-like, so the Markdown chunker can follow the
/// headings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub title: Option<String>,
    pub headings: Vec<String>,
    pub text: String,
}

/// Lines wider than this are not wrapped (a chunk is cut by paragraphs, not by lines).
const WIDTH: usize = 100_000;

/// The page's title, headings and text. `<script>`, `<style>` and the document head give no
/// text; links keep their words (in brackets) and lose their targets.
pub fn html(bytes: &[u8]) -> Page {
    let title = title_of(bytes);
    let text = html2text::config::plain_no_decorate()
        .string_from_read(bytes, WIDTH)
        .unwrap_or_default();
    let text = tidy(&text);
    let headings = text
        .lines()
        .filter_map(heading_line)
        .map(|(_, h)| h.to_string())
        .collect();
    Page {
        title,
        headings,
        text,
    }
}

/// `(level, text)` of a line `## Text`.
pub fn heading_line(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = line[level..].strip_prefix(' ')?.trim();
    (!rest.is_empty()).then_some((level, rest))
}

/// Trailing spaces cut, runs of blank lines made one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = true;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            if !blank {
                out.push('\n');
            }
            blank = true;
        } else {
            out.push_str(line);
            out.push('\n');
            blank = false;
        }
    }
    out.trim_end().to_string()
}

fn title_of(bytes: &[u8]) -> Option<String> {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::bytes::Regex::new(r"(?is)<title[^>]*>(.*?)</title>").expect("the pattern is valid")
    });
    let raw = re.captures(bytes)?.get(1)?.as_bytes();
    let text = html2text::config::plain_no_decorate()
        .string_from_read(raw, WIDTH)
        .ok()?;
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one.is_empty()).then_some(one)
}

/// Why a PDF gave no pages.
#[derive(Debug, thiserror::Error)]
#[error("not a PDF that can be read ({0})")]
pub struct PdfError(String);

/// The text of each page of a PDF, in page order (page 1 first); a page without text (a
/// scanned image) is an empty string.
pub fn pdf(bytes: &[u8]) -> Result<Vec<String>, PdfError> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| PdfError(e.to_string()))?;
    let pages = doc.get_pages();
    Ok(pages
        .keys()
        .map(|&n| doc.extract_text(&[n]).map(|t| tidy(&t)).unwrap_or_default())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_gives_title_headings_and_text_without_scripts() {
        let page = html(
            b"<html><head><title>The  Guide &amp; more</title><style>p{color:red}</style>\
              <script>var secret = 1;</script></head><body><h1>Install</h1><p>Run the \
              <a href=\"/x\">installer</a> first.</p><h2>On Linux</h2><p>Use apt.</p></body></html>",
        );
        assert_eq!(page.title.as_deref(), Some("The Guide & more"));
        assert_eq!(page.headings, vec!["Install", "On Linux"]);
        // A link keeps its words in brackets (html2text's plain mode), its target dropped.
        assert!(
            page.text.contains("Run the [installer] first."),
            "{}",
            page.text
        );
        assert!(!page.text.contains("/x"), "{}", page.text);
        assert!(page.text.contains("# Install"), "{}", page.text);
        assert!(!page.text.contains("secret"), "{}", page.text);
        assert!(!page.text.contains("color"), "{}", page.text);
    }

    #[test]
    fn heading_lines() {
        assert_eq!(heading_line("## A b"), Some((2, "A b")));
        assert_eq!(heading_line("#nope"), None);
        assert_eq!(heading_line("####### seven"), None);
        assert_eq!(heading_line("plain"), None);
    }

    #[test]
    fn garbage_is_not_a_pdf() {
        assert!(pdf(b"not a pdf at all").is_err());
    }
}
