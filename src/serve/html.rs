//! HTML for the console's pages: escaping, highlighting, the page frame.
//!
//! Every text that comes from memory (transcripts, observations, proposals, log entries) goes
//! through [`esc`] or [`highlight`], which escape it: it is shown as text, never read as HTML.
//! Only Markdown people wrote and committed (ADRs, MEMORY.md) is rendered, by comrak with raw
//! HTML left out ([`markdown`]).

use std::fmt::Write;

/// `text` escaped for an element's content or a quoted attribute.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A query string's value, percent-encoded.
pub fn url(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The words of a query worth marking: letters and digits, two or more, lowercased.
pub fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `text` escaped, with each occurrence of a word of `query` (any case) in `<mark>`.
pub fn highlight(text: &str, query: &str) -> String {
    let words = words(query);
    if words.is_empty() {
        return esc(text);
    }
    let lower = text.to_lowercase();
    // Lowercasing can change lengths outside ASCII; mark only when it did not.
    if lower.len() != text.len() {
        return esc(text);
    }
    let mut marks = vec![false; text.len()];
    for w in &words {
        let mut from = 0;
        while let Some(at) = lower[from..].find(w.as_str()) {
            let start = from + at;
            let end = start + w.len();
            for m in &mut marks[start..end] {
                *m = true;
            }
            from = end;
        }
    }
    let mut out = String::new();
    let mut open = false;
    for (i, c) in text.char_indices() {
        if marks[i] && !open {
            out.push_str("<mark>");
            open = true;
        } else if !marks[i] && open {
            out.push_str("</mark>");
            open = false;
        }
        out.push_str(&esc(c.encode_utf8(&mut [0; 4])));
    }
    if open {
        out.push_str("</mark>");
    }
    out
}

/// The part of `text` around the first word of `query` it holds, at most about `max`
/// characters, with `…` where it was cut.
pub fn snippet(text: &str, query: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let lower: Vec<char> = text.to_lowercase().chars().collect();
    let first = if lower.len() == chars.len() {
        words(query)
            .iter()
            .filter_map(|w| {
                let w: Vec<char> = w.chars().collect();
                lower.windows(w.len()).position(|win| win == w.as_slice())
            })
            .min()
            .unwrap_or(0)
    } else {
        0
    };
    let start = first.saturating_sub(max / 3);
    let end = (start + max).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// Markdown people committed (an ADR, MEMORY.md) as HTML: raw HTML in it is left out, and
/// links keep to http(s), relative and fragment targets (comrak drops `javascript:`).
pub fn markdown(text: &str) -> String {
    let mut options = comrak::Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.extension.front_matter_delimiter = Some("---".to_string());
    options.render.r#unsafe = false;
    comrak::markdown_to_html(text, &options)
}

/// The console's pages, for the navigation bar.
const NAV: &[(&str, &str)] = &[
    ("/", "Search"),
    ("/decisions", "Decisions"),
    ("/memory", "MEMORY.md"),
    ("/review", "Review"),
    ("/stats", "Stats"),
];

/// A whole page: `body` (already HTML) in the frame, `active` the path of its nav entry.
pub fn page(title: &str, active: &str, body: &str) -> String {
    let mut nav = String::new();
    for (path, name) in NAV {
        let current = if *path == active {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{path}\"{current}>{name}</a>");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · cairn</title><link rel=\"icon\" href=\"/favicon.ico\" type=\"image/svg+xml\"><link rel=\"stylesheet\" href=\"/assets/style.css\">\
         <script src=\"/assets/app.js\" defer></script></head><body>\
         <header><span class=\"brand\">cairn</span><nav>{nav}</nav></header>\
         <main>{body}</main></body></html>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn highlight_marks_words_any_case_and_escapes_the_rest() {
        assert_eq!(
            highlight("Mount NFS <b>on</b> nfs1", "nfs"),
            "Mount <mark>NFS</mark> &lt;b&gt;on&lt;/b&gt; <mark>nfs</mark>1"
        );
        assert_eq!(highlight("a <x>", ""), "a &lt;x&gt;");
        // A word of the query that is markup itself stays escaped inside the mark.
        assert_eq!(
            highlight("<script>", "script"),
            "&lt;<mark>script</mark>&gt;"
        );
    }

    #[test]
    fn snippet_cuts_around_the_first_match() {
        let text = format!("{} needle {}", "a".repeat(200), "b".repeat(200));
        let s = snippet(&text, "needle", 60);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("needle"));
        assert_eq!(snippet("short", "x", 60), "short");
    }

    #[test]
    fn markdown_leaves_raw_html_out() {
        let html = markdown("# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))");
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("<h1>T</h1>"));
    }

    #[test]
    fn url_encodes_reserved_bytes() {
        assert_eq!(url("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
