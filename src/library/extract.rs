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

/// How deep elements may nest (as [`nesting`] estimates it) before a page is read by
/// [`strip_tags`] instead of html2text. html5ever's tree builder looks through the stack of
/// open elements at every tag, so its time grows with the square of the depth: 4,000 nested
/// `<div>` took 2.6 s (debug build) and 13,000 (64 KB) more than 10 s, found by fuzzing (the
/// input is `fuzz/corpus/html/regress-deep-div.html`); a 5 MB page would never finish. Real
/// pages nest a few dozen deep.
pub const MAX_DEPTH: usize = 512;

/// The page's title, headings and text. `<script>`, `<style>` and the document head give no
/// text; links keep their words (in brackets) and lose their targets. A page nested deeper
/// than [`MAX_DEPTH`] gives its text without headings, tags cut out.
pub fn html(bytes: &[u8]) -> Page {
    let title = title_of(bytes);
    if nesting(bytes) > MAX_DEPTH {
        return Page {
            title,
            headings: Vec::new(),
            text: tidy(&strip_tags(bytes)),
        };
    }
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
    let text = if nesting(raw) > MAX_DEPTH {
        strip_tags(raw)
    } else {
        html2text::config::plain_no_decorate()
            .string_from_read(raw, WIDTH)
            .ok()?
    };
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one.is_empty()).then_some(one)
}

/// Elements whose end tag may be left out (a `<p>` or `<li>` closes the one open before it),
/// and void elements: neither makes a page deeper.
const NOT_NESTING: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot",
    "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head", "body", "area", "base", "br",
    "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr", "param",
    "keygen", "frame",
];

/// Elements whose content is text, not markup, up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// The tags of a page, in one pass over its bytes: each `(name, closing)` with the name in
/// lowercase ASCII; comments, `<!…>` and `<?…>` and the content of raw-text elements skipped.
/// A byte-level reading, not a parser: enough to count and to cut tags out.
fn tags(bytes: &[u8], mut each: impl FnMut(&[u8], bool, std::ops::Range<usize>)) {
    let mut i = 0;
    let find = |from: usize, needle: &[u8]| -> usize {
        bytes[from.min(bytes.len())..]
            .windows(needle.len())
            .position(|w| w.eq_ignore_ascii_case(needle))
            .map_or(bytes.len(), |p| from + p)
    };
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let start = i;
        if bytes[i..].starts_with(b"<!--") {
            i = (find(i + 4, b"-->") + 3).min(bytes.len());
            each(b"", false, start..i);
            continue;
        }
        let closing = bytes.get(i + 1) == Some(&b'/');
        let name_at = i + 1 + usize::from(closing);
        let name_len = bytes[name_at.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count();
        let is_tag = name_len > 0 && bytes[name_at].is_ascii_alphabetic();
        let other = matches!(bytes.get(i + 1), Some(b'!' | b'?'));
        if !is_tag && !other {
            i += 1;
            continue;
        }
        let end = (find(i + 1, b">") + 1).min(bytes.len());
        let name = bytes[name_at..name_at + name_len].to_ascii_lowercase();
        let self_closing = end >= 2 && bytes[end - 2] == b'/';
        i = end;
        if other {
            each(b"", false, start..end);
            continue;
        }
        each(&name, closing || self_closing, start..end);
        if !closing && RAW_TEXT.iter().any(|r| r.as_bytes() == name.as_slice()) {
            let mut close = b"</".to_vec();
            close.extend_from_slice(&name);
            // Its text is not markup: the next tag is its end tag.
            i = find(i, &close);
        }
    }
}

/// How deep the page's elements nest, about: start tags less end tags, not counting
/// [`NOT_NESTING`] elements or self-closing tags (the deepest point reached).
pub fn nesting(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    tags(bytes, |name, closing, _| {
        if name.is_empty() || NOT_NESTING.iter().any(|n| n.as_bytes() == name) {
            return;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else {
            depth += 1;
            deepest = deepest.max(depth);
        }
    });
    deepest
}

/// A page's text with its tags cut out (each a space, a block's a blank line), without the
/// content of `<script>`, `<style>` and `<title>`, and the common entities decoded: what a page too deep for html2text gives.
fn strip_tags(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut skip_to_close: Option<Vec<u8>> = None;
    tags(bytes, |name, closing, range| {
        if skip_to_close.is_none() {
            out.extend_from_slice(&bytes[at..range.start]);
        }
        if skip_to_close.as_deref() == Some(name) && closing {
            skip_to_close = None;
        } else if !closing && matches!(name, b"script" | b"style" | b"title") {
            skip_to_close = Some(name.to_vec());
        }
        if matches!(name, b"p" | b"div" | b"br" | b"li" | b"tr") || name.first() == Some(&b'h') {
            out.extend_from_slice(b"\n\n");
        } else {
            out.push(b' ');
        }
        at = range.end;
    });
    if skip_to_close.is_none() {
        out.extend_from_slice(&bytes[at.min(bytes.len())..]);
    }
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    lines
        .join("\n")
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Why a PDF gave no pages.
#[derive(Debug, thiserror::Error)]
#[error("not a PDF that can be read ({0})")]
pub struct PdfError(String);

/// The text of each page of a PDF, in page order (page 1 first); a page without text (a
/// scanned image) is an empty string.
pub fn pdf(bytes: &[u8]) -> Result<Vec<String>, PdfError> {
    pdf_read(bytes).map(|p| p.pages)
}

/// What a PDF says: its pages' text and its own title.
#[derive(Debug, Default)]
pub struct Pdf {
    /// Each page's text, page 1 first (a page without text is an empty string).
    pub pages: Vec<String>,
    /// The document's title: the information dictionary's `/Title`, or else the XMP packet's
    /// `dc:title`; none when neither holds one (many PDFs carry a file name or a generator's
    /// placeholder there, such as `untitled` or `Microsoft Word - x.doc`, which is not kept).
    pub title: Option<String>,
}

/// A PDF's pages and title, read once.
pub fn pdf_read(bytes: &[u8]) -> Result<Pdf, PdfError> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| PdfError(e.to_string()))?;
    let pages = doc.get_pages();
    let pages = pages
        .keys()
        .map(|&n| doc.extract_text(&[n]).map(|t| tidy(&t)).unwrap_or_default())
        .collect();
    let title = info_title(&doc)
        .or_else(|| xmp_title(&doc))
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| is_real_title(t));
    Ok(Pdf { pages, title })
}

/// The information dictionary's `/Title`.
fn info_title(doc: &lopdf::Document) -> Option<String> {
    let info = match doc.trailer.get(b"Info").ok()? {
        lopdf::Object::Reference(id) => doc.get_dictionary(*id).ok()?,
        lopdf::Object::Dictionary(d) => d,
        _ => return None,
    };
    let title = info.get(b"Title").ok()?;
    lopdf::decode_text_string(title).ok()
}

/// The catalog's XMP packet's `dc:title` (its first `rdf:li`, or its text).
fn xmp_title(doc: &lopdf::Document) -> Option<String> {
    let id = doc
        .catalog()
        .ok()?
        .get(b"Metadata")
        .ok()?
        .as_reference()
        .ok()?;
    let stream = doc.get_object(id).ok()?.as_stream().ok()?;
    let content = stream
        .get_plain_content_with_limit(MAX_CARRIED_STREAM)
        .unwrap_or_else(|_| stream.content.clone());
    let packet = String::from_utf8_lossy(&content);
    static TITLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?s)<dc:title[^>]*>(.*?)</dc:title>").expect("the pattern is valid")
    });
    static LI: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?s)<rdf:li[^>]*>(.*?)</rdf:li>").expect("the pattern is valid")
    });
    let inner = TITLE.captures(&packet)?.get(1)?.as_str();
    let text = LI
        .captures(inner)
        .and_then(|c| c.get(1))
        .map_or(inner, |m| m.as_str());
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    Some(text)
}

/// Whether a PDF's title says something: not empty, not a placeholder, not a file name.
fn is_real_title(title: &str) -> bool {
    let t = title.trim().to_lowercase();
    let file_name = [
        ".pdf", ".doc", ".docx", ".tex", ".dvi", ".odt", ".rtf", ".txt",
    ]
    .iter()
    .any(|ext| t.ends_with(ext));
    !t.is_empty()
        && !file_name
        && !matches!(
            t.as_str(),
            "untitled" | "title" | "no title" | "(anonymous)"
        )
        && !t.starts_with("microsoft word - ")
}

/// How much of one stream (an XMP packet, an embedded file) is read as text: a PDF may hold a
/// compressed stream that inflates to gigabytes.
const MAX_CARRIED_STREAM: usize = 16 << 20;

/// Every text a PDF carries besides its pages' text, each decoded (UTF-16BE, UTF-8 or
/// PDFDocEncoding as its byte order mark says): the document information dictionary
/// (`/Title`, `/Author`, `/Subject`, `/Keywords`, `/Creator`, `/Producer`…), XMP metadata
/// streams, annotations (`/Contents`, `/T`…), form fields (`/V`, `/TU`…), outline titles, and
/// any other string an object holds (JavaScript, file names), with embedded files' contents.
/// A person sees few of them, but a copy of the file carries them all.
pub fn pdf_carried(bytes: &[u8]) -> Result<Vec<String>, PdfError> {
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| PdfError(e.to_string()))?;
    let mut out = Vec::new();
    carried(&lopdf::Object::Dictionary(doc.trailer.clone()), &mut out);
    for object in doc.objects.values() {
        carried(object, &mut out);
    }
    Ok(out)
}

fn carried(object: &lopdf::Object, out: &mut Vec<String>) {
    use lopdf::Object;
    match object {
        Object::String(bytes, _) => {
            let text = lopdf::decode_text_string(object)
                .unwrap_or_else(|_| String::from_utf8_lossy(bytes).into_owned());
            if !text.trim().is_empty() {
                out.push(text);
            }
        }
        Object::Array(items) => items.iter().for_each(|o| carried(o, out)),
        Object::Dictionary(d) => d.iter().for_each(|(_, o)| carried(o, out)),
        Object::Stream(s) => {
            s.dict.iter().for_each(|(_, o)| carried(o, out));
            let named = |key: &[u8], values: &[&[u8]]| {
                s.dict
                    .get(key)
                    .and_then(|o| o.as_name())
                    .is_ok_and(|n| values.contains(&n))
            };
            // Page content streams are read as pages; these are text of another kind.
            if named(b"Type", &[b"Metadata", b"EmbeddedFile"]) || named(b"Subtype", &[b"XML"]) {
                let content = s
                    .get_plain_content_with_limit(MAX_CARRIED_STREAM)
                    .unwrap_or_else(|_| s.content.clone());
                out.push(String::from_utf8_lossy(&content).into_owned());
            }
        }
        _ => {}
    }
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
    fn a_page_nested_too_deep_gives_its_text_without_html2text() {
        // Regression: 13,000 nested `<div>` kept html5ever's tree builder busy for more than
        // 10 s (quadratic in the depth), found by the fuzz target `html`
        // (fuzz/corpus/html/regress-deep-div.html).
        let mut page = String::from("<html><head><title>Deep &amp; dark</title>");
        page.push_str("<script>var x = '<div>';</script></head><body>");
        page.push_str(&"<div>".repeat(13_000));
        page.push_str("<h1>Bottom</h1><p>Found it &amp; more.</p>");
        assert!(nesting(page.as_bytes()) > MAX_DEPTH);
        let got = html(page.as_bytes());
        assert_eq!(got.title.as_deref(), Some("Deep & dark"));
        assert!(got.text.contains("Bottom"), "{}", got.text);
        assert!(got.text.contains("Found it & more."), "{}", got.text);
        assert!(!got.text.contains("var x"), "{}", got.text);
        assert!(!got.text.contains("<div"), "{}", got.text);
    }

    #[test]
    fn nesting_counts_what_nests() {
        assert_eq!(nesting(b"<div><div><p>a<p>b<br><img src=x></div></div>"), 2);
        assert_eq!(nesting(b"<ul><li>a<li>b</ul><ul><li>c</ul>"), 1);
        assert_eq!(nesting(b"<!-- <div><div> --><b>x</b>"), 1);
        assert_eq!(nesting(b"<script>if (a<b) { '<div><div>' }</script>"), 1);
        assert_eq!(nesting(b"<x-a/><br/>a < b"), 0);
        assert_eq!(nesting(&b"<div>".repeat(600)), 600);
        // A real page stays far below the bound.
        assert!(
            nesting(b"<html><body><div><table><tr><td><ul><li><a>x</a></ul></table></div>") < 10
        );
    }

    #[test]
    fn a_pdf_carries_its_information_dictionary_and_metadata_stream() {
        use lopdf::{Document, Object, Stream, dictionary};
        let mut doc = Document::with_version("1.5");
        let xmp = doc.add_object(Stream::new(
            dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
            b"<dc:description>from the xmp packet</dc:description>".to_vec(),
        ));
        let pages =
            doc.add_object(dictionary! { "Type" => "Pages", "Kids" => vec![], "Count" => 0 });
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => pages, "Metadata" => xmp,
        });
        let info = doc.add_object(dictionary! {
            "Author" => Object::string_literal("Ann Lee"),
            "Title" => lopdf::text_string("Ünïcode title"),
        });
        doc.trailer.set("Root", catalog);
        doc.trailer.set("Info", info);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let carried = pdf_carried(&bytes).unwrap();
        for want in ["Ann Lee", "Ünïcode title"] {
            assert!(carried.iter().any(|t| t == want), "{want}: {carried:?}");
        }
        assert!(
            carried.iter().any(|t| t.contains("from the xmp packet")),
            "{carried:?}"
        );
        assert!(pdf_carried(b"not a pdf").is_err());
    }

    #[test]
    fn garbage_is_not_a_pdf() {
        assert!(pdf(b"not a pdf at all").is_err());
    }
}
