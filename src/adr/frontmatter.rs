//! YAML frontmatter: splitting it from the body, reading it, and editing one key in place.
//!
//! Edits are line edits: `set` replaces the lines of one key (its line and any indented or
//! `- ` continuation lines) and leaves every other byte of the file as it was, comments and
//! key order included. YAML is read with `yaml_serde` (ADR 1).

use yaml_serde::Value;

/// A file split at its frontmatter.
#[derive(Debug, Clone)]
pub struct Split<'a> {
    /// The YAML between the `---` lines, each line ending in `\n`.
    pub yaml: &'a str,
    /// Everything after the closing `---` line.
    pub body: &'a str,
    /// The 1-based line number of the first YAML line.
    pub first_line: usize,
}

/// Splits `text` at a leading `---` frontmatter block, or `None` if it has none.
pub fn split(text: &str) -> Option<Split<'_>> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(Split {
                yaml: &rest[..offset],
                body: &rest[offset + line.len()..],
                first_line: 2,
            });
        }
        offset += line.len();
    }
    None
}

/// A frontmatter error with the 1-based line of the file it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub line: usize,
    pub message: String,
}

/// Parses the YAML of a split file into a mapping.
pub fn parse(split: &Split<'_>) -> Result<yaml_serde::Mapping, YamlError> {
    if split.yaml.trim().is_empty() {
        return Ok(yaml_serde::Mapping::new());
    }
    let brackets = split
        .yaml
        .bytes()
        .filter(|b| matches!(b, b'[' | b'{'))
        .count();
    if brackets > MAX_BRACKETS {
        return Err(YamlError {
            line: split.first_line,
            message: format!(
                "malformed frontmatter: {brackets} `[` and `{{` (more than {MAX_BRACKETS}), nested too deep to read"
            ),
        });
    }
    match yaml_serde::from_str::<Value>(split.yaml) {
        Ok(Value::Mapping(map)) => Ok(map),
        Ok(_) => Err(YamlError {
            line: split.first_line,
            message: "frontmatter is not a mapping".into(),
        }),
        Err(err) => Err(YamlError {
            line: split.first_line + err.location().map_or(0, |l| l.line().saturating_sub(1)),
            message: format!(
                "malformed frontmatter: {}",
                without_location(&err.to_string())
            ),
        }),
    }
}

/// The most `[` and `{` a frontmatter may hold. The YAML parser's scanner spends time in
/// proportion to the nesting depth on every token, so 30,000 `[` in a row took seconds before
/// the parser's own recursion limit (128) refused them (found by fuzzing; the input is
/// `fuzz/corpus/adr/regress-deep-flow.md`). The count bounds the depth whatever the quoting,
/// and no real frontmatter comes near it.
pub const MAX_BRACKETS: usize = 1024;

/// A YAML error message without the parser's own "at line L column C", which counts from the
/// frontmatter's start and would contradict the file line cairn reports.
fn without_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The 1-based file line of `key` in a split file's YAML, if present.
pub fn line_of(split: &Split<'_>, key: &str) -> Option<usize> {
    split
        .yaml
        .lines()
        .position(|l| key_of(l) == Some(key))
        .map(|i| split.first_line + i)
}

fn key_of(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '-', '#']) {
        return None;
    }
    line.split_once(':').map(|(k, _)| k.trim())
}

/// Returns `yaml` with `key` set to the YAML text `value` (one line), replacing the key's
/// lines if present, or appended at the end.
pub fn set(yaml: &str, key: &str, value: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + value.len() + key.len() + 4);
    let mut lines = yaml.split_inclusive('\n').peekable();
    let mut replaced = false;
    while let Some(line) = lines.next() {
        if !replaced && key_of(line) == Some(key) {
            out.push_str(&format!("{key}: {value}\n"));
            while lines
                .peek()
                .is_some_and(|l| l.starts_with([' ', '\t', '-']))
            {
                lines.next();
            }
            replaced = true;
        } else {
            out.push_str(line);
        }
    }
    if !replaced {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{key}: {value}\n"));
    }
    out
}

/// A YAML scalar for `s`: plain when that reads back as the same string, else double-quoted
/// (a JSON string is a valid YAML double-quoted scalar).
pub fn scalar(s: &str) -> String {
    let plain_safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || " _.-/()'+".contains(c))
        && !s.starts_with([' ', '-', '\''])
        && !s.ends_with(' ')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
        )
        && s.parse::<f64>().is_err();
    if plain_safe {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("string serializes")
    }
}

/// A flow sequence of strings, `[a, "b: c"]`.
pub fn string_list(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| scalar(s))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A flow sequence of numbers, `[3, 4]`.
pub fn number_list(items: &[u32]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_line_numbers() {
        let text = "---\nnumber: 1\ntitle: x\n---\n# 1. x\n";
        let s = split(text).unwrap();
        assert_eq!(s.yaml, "number: 1\ntitle: x\n");
        assert_eq!(s.body, "# 1. x\n");
        assert_eq!(line_of(&s, "title"), Some(3));
        assert!(split("# no frontmatter\n").is_none());
        assert!(split("---\nnever closed\n").is_none());
    }

    #[test]
    fn deeply_nested_flow_collections_are_refused_before_the_yaml_parser() {
        // Regression (fuzzing): 16,000 `[` cost the YAML parser seconds (its scanner is
        // quadratic in the depth) before it reported its recursion limit.
        let text = format!(
            "---\nnumber: 9\nsuperseded-by: {}\n---\n# 9. t\n",
            "[".repeat(16_000)
        );
        let err = parse(&split(&text).unwrap()).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("nested too deep"), "{}", err.message);
        // A frontmatter with brackets in its lists still parses.
        let ok = "---\nnumber: 9\ntags: [a, b]\nsupersedes: [{n: 1}]\n---\n";
        assert!(parse(&split(ok).unwrap()).is_ok());
    }

    #[test]
    fn malformed_yaml_names_the_file_line() {
        let text = "---\nnumber: 1\ntitle: [unclosed\nstatus: accepted\n---\n";
        let err = parse(&split(text).unwrap()).unwrap_err();
        assert!(err.line >= 3, "{err:?}");
    }

    #[test]
    fn set_replaces_only_that_key() {
        let yaml = "# a comment\nstatus: proposed # why\ntags:\n  - a\n  - b\ndate: 2026-01-01\n";
        assert_eq!(
            set(yaml, "tags", "[c]"),
            "# a comment\nstatus: proposed # why\ntags: [c]\ndate: 2026-01-01\n"
        );
        assert_eq!(
            set(yaml, "status", "accepted"),
            yaml.replace("proposed # why", "accepted")
        );
        assert!(set("a: 1\n", "b", "2").ends_with("a: 1\nb: 2\n"));
    }

    #[test]
    fn scalars_round_trip() {
        for s in [
            "Use tantivy",
            "yes",
            "3",
            "a: b",
            "#tag",
            "-x",
            "naïve café",
            "it's",
            "",
        ] {
            let yaml = format!("k: {}\n", scalar(s));
            let v: Value = yaml_serde::from_str(&yaml).unwrap();
            assert_eq!(v["k"].as_str(), Some(s), "{yaml}");
        }
    }
}
