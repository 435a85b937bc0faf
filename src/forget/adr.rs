//! ADRs in a forget: a text is taken out of a record, the record stays (ADR 69).
//!
//! A decision record is not deleted, because other records supersede it, relate to it and
//! link to it by number: what a query names is replaced in it by [`MARKER`], everywhere it
//! appears in any case, in the parts a person wrote: the `title:` line of the frontmatter and
//! the body (for a record without frontmatter, adr-tools' or MADR's, the whole file). The other
//! frontmatter keys (number, status, dates, relations) are the record's structure, never
//! edited here. Pure: text in, text out; `forget::plan` checks that the record still parses.

use std::ops::Range;

/// What a forgotten text becomes in an ADR: plain in YAML (quoted or not) and in Markdown.
pub const MARKER: &str = "(forgotten)";

/// The byte ranges forget reaches in an ADR's text: its frontmatter's `title:` line and its
/// body, or the whole text when it has no frontmatter.
fn regions(text: &str) -> Vec<Range<usize>> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let Some(split) = crate::adr::frontmatter::split(&text[bom..]) else {
        return std::iter::once(0..text.len()).collect();
    };
    let yaml_start = split.yaml.as_ptr() as usize - text.as_ptr() as usize;
    let body_start = split.body.as_ptr() as usize - text.as_ptr() as usize;
    let mut out = Vec::new();
    let mut at = yaml_start;
    for line in split.yaml.split_inclusive('\n') {
        if line.split_once(':').is_some_and(|(k, _)| k == "title") {
            out.push(at..at + line.len());
        }
        at += line.len();
    }
    out.push(body_start..text.len());
    out
}

/// Where `text[start..limit]` begins with `lower_query` when lower-cased char by char: the end
/// of the match.
fn match_at(text: &str, start: usize, limit: usize, lower_query: &str) -> Option<usize> {
    let q = lower_query.as_bytes();
    let mut qi = 0;
    for (off, c) in text[start..limit].char_indices() {
        if qi == q.len() {
            return Some(start + off);
        }
        for lc in c.to_lowercase() {
            let mut buf = [0u8; 4];
            let s = lc.encode_utf8(&mut buf).as_bytes();
            if q.len() - qi < s.len() || &q[qi..qi + s.len()] != s {
                return None;
            }
            qi += s.len();
        }
    }
    (qi == q.len()).then_some(limit)
}

/// Every place `lower_query` (lower-cased) appears in the parts of `text` forget reaches, in
/// any case, without overlaps, in order.
pub fn occurrences(text: &str, lower_query: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    if lower_query.is_empty() {
        return out;
    }
    for region in regions(text) {
        let mut at = region.start;
        while at < region.end {
            if let Some(end) = match_at(text, at, region.end, lower_query) {
                out.push(at..end);
                at = end;
            } else {
                at += text[at..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

/// `text` with every occurrence of each query (lower-cased) replaced by [`MARKER`], and how
/// many were replaced.
pub fn without(text: &str, lower_queries: &[String]) -> (String, usize) {
    let mut out = text.to_string();
    let mut count = 0;
    for q in lower_queries {
        let found = occurrences(&out, q);
        if found.is_empty() {
            continue;
        }
        count += found.len();
        let mut next = String::with_capacity(out.len());
        let mut at = 0;
        for r in found {
            next.push_str(&out[at..r.start]);
            next.push_str(MARKER);
            at = r.end;
        }
        next.push_str(&out[at..]);
        out = next;
    }
    (out, count)
}

/// The 1-based line of byte `at` in `text`.
pub fn line_at(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADR: &str = "---\nnumber: 3\ntitle: \"Rotate the AKIAZ7Q4R2M9XK3T8PLW key\"\nstatus: accepted\ntags: [akiaz7q4r2m9xk3t8plw]\n---\n# 3. Rotate\n\n## Context\n\nThe key akiaZ7Q4R2M9XK3T8PLW leaked; AKIAZ7Q4R2M9XK3T8PLW again.\n";

    #[test]
    fn the_title_line_and_the_body_in_any_case_never_other_keys() {
        let q = "akiaz7q4r2m9xk3t8plw";
        let found = occurrences(ADR, q);
        let lines: Vec<usize> = found.iter().map(|r| line_at(ADR, r.start)).collect();
        assert_eq!(lines, vec![3, 11, 11]);
        let (new, n) = without(ADR, &[q.to_string()]);
        assert_eq!(n, 3);
        assert!(
            new.contains("title: \"Rotate the (forgotten) key\""),
            "{new}"
        );
        assert!(
            new.contains("The key (forgotten) leaked; (forgotten) again."),
            "{new}"
        );
        // The tags key is structure: left alone.
        assert!(new.contains("tags: [akiaz7q4r2m9xk3t8plw]"), "{new}");
    }

    #[test]
    fn a_record_without_frontmatter_is_searched_whole_and_non_ascii_is_matched_by_char() {
        let text = "# 1. Ünïcode Straße\n\nDate: 2020-01-01\n\nWe keep STRASSE and straße.\n";
        let found = occurrences(text, "straße");
        assert_eq!(found.len(), 2, "{found:?}");
        let (new, _) = without(text, &["ünïcode".to_string()]);
        assert!(new.starts_with("# 1. (forgotten) Straße"), "{new}");
        assert!(occurrences(text, "").is_empty());
        assert!(occurrences(text, "nowhere").is_empty());
    }
}
