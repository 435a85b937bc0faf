//! A record's `## ` sections, and which of them are still the template's.
//!
//! A section is unfilled when, once HTML comments are left out, it is empty, is one of the
//! prompts a template puts there (cairn's own questions, adr-tools' sentences), or is only a
//! placeholder in braces or angle brackets (`{Describe the context…}`, MADR's shape). Unfilled
//! sections are never indexed: a record whose every section is unfilled is not indexed at all,
//! so recall and brief never offer a template as a decision.

/// The prompts `adr new` writes into sections it was not given.
pub const PROMPTS: [(&str, &str); 3] = [
    ("Context", "What is the issue that motivates this decision?"),
    ("Decision", "What is the change that we are making?"),
    (
        "Consequences",
        "What becomes easier or harder because of this change?",
    ),
];

/// adr-tools' template sentences (`src/template.md`), left in many records never filled in.
const ADR_TOOLS_PROMPTS: [&str; 3] = [
    "The issue motivating this decision, and any context that influences or constrains the decision.",
    "The change that we're proposing or have agreed to implement.",
    "What becomes easier or more difficult to do and any risks introduced by the change that will need to be mitigated.",
];

fn normalized(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<!--") {
        out.push_str(&rest[..open]);
        match rest[open..].find("-->") {
            Some(close) => rest = &rest[open + close + 3..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a section's text is still the template's.
pub fn is_unfilled(text: &str) -> bool {
    let text = without_comments(text);
    let t = text.trim();
    if t.is_empty() {
        return true;
    }
    let n = normalized(t);
    if PROMPTS
        .iter()
        .map(|(_, p)| *p)
        .chain(ADR_TOOLS_PROMPTS)
        .any(|p| normalized(p) == n)
    {
        return true;
    }
    let placeholder = |open: char, close: char| {
        t.starts_with(open) && t.ends_with(close) && !t[1..t.len() - 1].contains([open, close])
    };
    placeholder('{', '}') || placeholder('<', '>')
}

/// A body cut at its `## ` headings: the text before the first, then (heading, text) pairs.
pub fn split(body: &str) -> (&str, Vec<(&str, &str)>) {
    let mut starts = Vec::new();
    let mut offset = 0;
    let mut fenced = false;
    for line in body.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && line.starts_with("## ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    let Some(&first) = starts.first() else {
        return (body, Vec::new());
    };
    let mut sections = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(body.len());
        let chunk = &body[start..end];
        let (heading, text) = chunk.split_once('\n').unwrap_or((chunk, ""));
        sections.push((heading.trim_start_matches('#').trim(), text));
    }
    (&body[..first], sections)
}

/// The names of the sections of `body` that still hold the template's text.
pub fn unfilled(body: &str) -> Vec<String> {
    split(body)
        .1
        .into_iter()
        .filter(|(_, text)| is_unfilled(text))
        .map(|(heading, _)| heading.to_string())
        .collect()
}

/// The text to index for a record: its title and body without unfilled sections and HTML
/// comments, or `None` when nothing but the template is left.
pub fn indexed_text(title: &str, body: &str) -> Option<String> {
    let (head, sections) = split(body);
    let head = without_comments(head);
    let mut text = format!("{title}\n");
    // The head holds the `# N. Title` heading and metadata lines; it counts as content only
    // when there are no sections at all (a free-form record).
    let mut filled = sections.is_empty() && !head.trim().is_empty();
    text.push_str(head.trim());
    for (heading, body) in sections {
        if is_unfilled(body) {
            continue;
        }
        filled = true;
        text.push_str(&format!("\n\n## {heading}\n\n"));
        text.push_str(without_comments(body).trim());
    }
    filled.then(|| text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfilled_shapes() {
        for text in [
            "",
            "\n\nWhat is the issue that motivates this decision?\n\n",
            "The change that we're proposing or have agreed to\n implement.",
            "{Describe the context and problem statement}",
            "<!-- Describe the decision -->\n",
            "<fill in>",
        ] {
            assert!(is_unfilled(text), "{text:?}");
        }
        for text in [
            "Use caddy.",
            "{a} and {b}",
            "<!-- note -->\nWe deploy with caddy.",
        ] {
            assert!(!is_unfilled(text), "{text:?}");
        }
    }

    #[test]
    fn indexed_text_leaves_out_the_template() {
        let body = "# 1. Use caddy\n\n## Context\n\nWhat is the issue that motivates this decision?\n\n\
                    ## Decision\n\nDeploy with caddy.\n\n## Consequences\n\n\
                    What becomes easier or harder because of this change?\n";
        let text = indexed_text("Use caddy", body).unwrap();
        assert!(text.contains("Deploy with caddy."), "{text}");
        assert!(
            !text.contains("motivates") && !text.contains("easier"),
            "{text}"
        );
        assert_eq!(unfilled(body), ["Context", "Consequences"]);

        let empty = body.replace(
            "Deploy with caddy.",
            "What is the change that we are making?",
        );
        assert_eq!(indexed_text("Use caddy", &empty), None);
        assert_eq!(
            indexed_text("Notes", "Free text, no sections.\n").as_deref(),
            Some("Notes\nFree text, no sections.")
        );
    }
}
