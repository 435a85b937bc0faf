//! Markdown links between decision records: finding them (for lint) and rewriting them when a
//! record's file is renamed (for import).
//!
//! A link is between records when its target is a relative path to a `.md` file that resolves
//! inside `decisions/` (`0003-x.md`, `./0003-x.md`, `../decisions/0003-x.md#why`). Web links,
//! anchors, absolute paths and links out of the folder are left alone, and so is anything in a
//! fenced code block.

use std::collections::BTreeMap;

/// One link to another record: its 1-based line in the text and the file name it points at.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordLink {
    pub line: usize,
    pub target: String,
    pub file: String,
}

/// The file name in `decisions/` that `target` points at, if it points at one.
pub fn record_file(target: &str, dir: &str) -> Option<String> {
    let target = target.trim().trim_start_matches('<').trim_end_matches('>');
    let path = target.split(['#', '?']).next().unwrap_or("");
    if path.is_empty()
        || path.contains("://")
        || path.starts_with('/')
        || path.starts_with("mailto:")
        || !path.ends_with(".md")
        || path.contains(' ')
    {
        return None;
    }
    // Resolve against `decisions/`, the folder every record sits in.
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let file = parts.pop()?;
    let inside = parts.len() == dir.split('/').filter(|p| !p.is_empty()).count()
        && parts.iter().zip(dir.split('/')).all(|(a, b)| *a == b);
    inside.then(|| file.to_string())
}

/// Every `](target)` of a Markdown text outside fenced code, with its line and byte span of
/// the target.
fn targets(text: &str) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced {
            let mut from = 0;
            while let Some(at) = line[from..].find("](").map(|j| j + from) {
                let start = at + 2;
                let Some(len) = line[start..].find(')') else {
                    break;
                };
                out.push((i + 1, offset + start, offset + start + len));
                from = start + len;
            }
        }
        offset += line.len();
    }
    out
}

/// The links of `text` to records in `dir`.
pub fn record_links(text: &str, dir: &str) -> Vec<RecordLink> {
    targets(text)
        .into_iter()
        .filter_map(|(line, a, b)| {
            let target = &text[a..b];
            record_file(target, dir).map(|file| RecordLink {
                line,
                target: target.to_string(),
                file,
            })
        })
        .collect()
}

/// `text` with links to a renamed record (old file name → new) pointing at its new name;
/// the rest of each target (`./`, `#anchor`) is kept.
pub fn rewrite(text: &str, dir: &str, renames: &BTreeMap<String, String>) -> String {
    if renames.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (_, a, b) in targets(text) {
        let target = &text[a..b];
        let Some(file) = record_file(target, dir) else {
            continue;
        };
        let Some(new) = renames.get(&file) else {
            continue;
        };
        let Some(at) = target.rfind(file.as_str()) else {
            continue;
        };
        out.push_str(&text[last..a]);
        out.push_str(&target[..at]);
        out.push_str(new);
        out.push_str(&target[at + file.len()..]);
        last = b;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_targets() {
        let cases = [
            ("0003-x.md", Some("0003-x.md")),
            ("./0003-x.md#why", Some("0003-x.md")),
            ("../decisions/0003-x.md", Some("0003-x.md")),
            ("../../img/x.png", None),
            ("../README.md", None),
            ("https://example.com/0003-x.md", None),
            ("#anchor", None),
            ("/abs/0003-x.md", None),
        ];
        for (target, want) in cases {
            assert_eq!(
                record_file(target, "decisions").as_deref(),
                want,
                "{target}"
            );
        }
    }

    #[test]
    fn rewrites_only_renamed_targets() {
        let text =
            "See [ADR 14](./0014-old.md#x) and [1](0001-a.md).\n```\n[no](0014-old.md)\n```\n";
        let renames = BTreeMap::from([("0014-old.md".to_string(), "0014-new.md".to_string())]);
        assert_eq!(
            rewrite(text, "decisions", &renames),
            "See [ADR 14](./0014-new.md#x) and [1](0001-a.md).\n```\n[no](0014-old.md)\n```\n"
        );
        let links = record_links(text, "decisions");
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].file, "0014-old.md");
    }
}
