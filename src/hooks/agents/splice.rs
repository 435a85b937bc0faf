//! Editing a person's JSON settings file by splicing bytes, never by re-serializing it.
//!
//! `serde_json` would parse and print the file back in its own layout (indentation, spacing,
//! escapes), so a person's other settings would come back changed. Here the text is only
//! scanned for the byte spans of the members and elements cairn touches; an entry is added as
//! new text after the last member or element of its container (in the container's own
//! indentation and line ending), and removing it cuts exactly the bytes adding it inserted.
//! Uninstall after install therefore gives back the original file byte for byte, and the only
//! bytes that ever change are cairn's own.
//!
//! An entry added to a container that was already there and empty goes in right after its
//! opening bracket, after one space (`[]` → `[ {…}]`); a container install creates starts with
//! its first entry (`[{…}]`) or a line break. So the text itself says which containers were
//! there before: [`Doc::was_there`] reads that space, and removing the only entry cuts it with
//! the entry, giving back the container as it was (issue 31: uninstall used to delete a
//! settings file that was `{}` and drop an empty list it had not made).
//!
//! The scanner assumes valid JSON: [`Doc::parse`] checks the whole text with serde_json first,
//! so a malformed file is refused (naming its line and column) before anything is written. A
//! UTF-8 byte order mark (which Claude Code reads past) is set aside while editing and given
//! back by [`Doc::contents`].

use std::ops::Range;

use serde_json::Value;

/// A member of an object: its key and the spans of the whole member and of its value.
#[derive(Debug, Clone)]
pub struct Member {
    pub key: String,
    /// From the key's opening quote to the value's last byte.
    pub span: Range<usize>,
    pub value: Range<usize>,
}

/// A JSON text being edited.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The text, without its byte order mark.
    pub text: String,
    /// The file started with a UTF-8 byte order mark.
    bom: bool,
    /// One level of indentation as the file writes it (two spaces when it shows none).
    unit: String,
    /// The file's line ending.
    newline: &'static str,
}

impl Doc {
    /// The text, checked to be JSON whose top level is an object. The error is a message
    /// naming the line and column (serde_json's).
    pub fn parse(text: String) -> Result<Doc, String> {
        let (text, bom) = match text.strip_prefix(BOM) {
            Some(rest) => (rest.to_string(), true),
            None => (text, false),
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(_)) => {}
            Ok(_) => return Err("the top level is not a JSON object".to_string()),
            Err(e) => return Err(format!("not JSON: {e}")),
        }
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = indent_unit(&text);
        Ok(Doc {
            text,
            bom,
            unit,
            newline,
        })
    }

    /// The file's new contents: the text, after the byte order mark it had.
    pub fn contents(&self) -> String {
        if self.bom {
            format!("{BOM}{}", self.text)
        } else {
            self.text.clone()
        }
    }

    /// Whether the object or array at `span` was there before its first entry was added: that
    /// entry follows the opening bracket after exactly one space, as [`Doc::push_member`] and
    /// [`Doc::push_element`] write into an empty container and never into one they create.
    pub fn was_there(&self, span: &Range<usize>) -> bool {
        let b = self.text.as_bytes();
        let first = skip_ws(b, span.start + 1);
        first < span.end
            && !matches!(b[first], b'}' | b']')
            && &self.text[span.start + 1..first] == " "
    }

    /// The span of the top-level object.
    pub fn root(&self) -> Range<usize> {
        let start = skip_ws(self.text.as_bytes(), 0);
        start..value_end(self.text.as_bytes(), start)
    }

    /// The value at `span`, parsed.
    pub fn value(&self, span: &Range<usize>) -> Value {
        serde_json::from_str(&self.text[span.clone()]).unwrap_or(Value::Null)
    }

    pub fn is_object(&self, span: &Range<usize>) -> bool {
        self.text.as_bytes().get(span.start) == Some(&b'{')
    }

    pub fn is_array(&self, span: &Range<usize>) -> bool {
        self.text.as_bytes().get(span.start) == Some(&b'[')
    }

    /// The members of the object at `span`, in order.
    pub fn members(&self, span: &Range<usize>) -> Vec<Member> {
        let b = self.text.as_bytes();
        let mut out = Vec::new();
        let mut i = span.start + 1;
        loop {
            i = skip_ws(b, i);
            if i >= span.end || b[i] == b'}' {
                break;
            }
            let key_start = i;
            let key_end = string_end(b, i);
            let key = serde_json::from_str(&self.text[key_start..key_end]).unwrap_or_default();
            i = skip_ws(b, key_end) + 1; // the colon
            let v_start = skip_ws(b, i);
            let v_end = value_end(b, v_start);
            out.push(Member {
                key,
                span: key_start..v_end,
                value: v_start..v_end,
            });
            i = skip_ws(b, v_end);
            if b.get(i) == Some(&b',') {
                i += 1;
            }
        }
        out
    }

    /// The member `key` of the object at `span`.
    pub fn member(&self, span: &Range<usize>, key: &str) -> Option<Member> {
        self.members(span).into_iter().find(|m| m.key == key)
    }

    /// The spans of the elements of the array at `span`, in order.
    pub fn elements(&self, span: &Range<usize>) -> Vec<Range<usize>> {
        let b = self.text.as_bytes();
        let mut out = Vec::new();
        let mut i = span.start + 1;
        loop {
            i = skip_ws(b, i);
            if i >= span.end || b[i] == b']' {
                break;
            }
            let end = value_end(b, i);
            out.push(i..end);
            i = skip_ws(b, end);
            if b.get(i) == Some(&b',') {
                i += 1;
            }
        }
        out
    }

    /// Adds `"key": value` as the last member of the object at `span`.
    pub fn push_member(&mut self, span: &Range<usize>, key: &str, value: &Value) {
        let key = serde_json::to_string(key).expect("a string serializes");
        let last = self.members(span).last().map(|m| m.span.clone());
        self.push(span, last, &format!("{key}: "), value);
    }

    /// Adds `value` as the last element of the array at `span`.
    pub fn push_element(&mut self, span: &Range<usize>, value: &Value) {
        let last = self.elements(span).last().cloned();
        self.push(span, last, "", value);
    }

    /// Inserts `prefix` + `value` after `last` (the container's last entry), in the layout of
    /// that entry's line; into an empty container, right after its opening bracket.
    fn push(
        &mut self,
        container: &Range<usize>,
        last: Option<Range<usize>>,
        prefix: &str,
        value: &Value,
    ) {
        let (at, text) = match last {
            Some(last) => match self.line_indent(last.start) {
                Some(indent) => {
                    let rendered = self.render(value, &indent);
                    (
                        last.end,
                        format!(",{}{indent}{prefix}{rendered}", self.newline),
                    )
                }
                None => (last.end, format!(", {prefix}{}", compact(value))),
            },
            // An empty container gets the entry inline (nothing of its own layout to follow),
            // after the space that marks the container as there before (see the module docs).
            None => (container.start + 1, format!(" {prefix}{}", compact(value))),
        };
        self.text.insert_str(at, &text);
    }

    /// Removes the member at `index` of the object at `span`: the inverse of
    /// [`Doc::push_member`].
    pub fn remove_member(&mut self, span: &Range<usize>, index: usize) {
        let spans: Vec<Range<usize>> = self.members(span).into_iter().map(|m| m.span).collect();
        self.remove(span, &spans, index);
    }

    /// Removes the element at `index` of the array at `span`: the inverse of
    /// [`Doc::push_element`].
    pub fn remove_element(&mut self, span: &Range<usize>, index: usize) {
        let spans = self.elements(span);
        self.remove(span, &spans, index);
    }

    /// Cuts entry `index` of `spans` (the entries of the container at `container`) with the
    /// separator before it (after the previous entry); the first of several with the separator
    /// after it; an only entry alone, with the one space before it when that space marks the
    /// container as there before ([`Doc::was_there`]).
    fn remove(&mut self, container: &Range<usize>, spans: &[Range<usize>], index: usize) {
        let cut = if index > 0 {
            spans[index - 1].end..spans[index].end
        } else if spans.len() > 1 {
            spans[0].start..spans[1].start
        } else if self.was_there(container) {
            container.start + 1..spans[0].end
        } else {
            spans[0].clone()
        };
        self.text.replace_range(cut, "");
    }

    /// The whitespace before `pos` on its line, when nothing else precedes it there.
    fn line_indent(&self, pos: usize) -> Option<String> {
        let line_start = self.text[..pos].rfind('\n').map(|i| i + 1)?;
        let before = &self.text[line_start..pos];
        before
            .chars()
            .all(|c| c == ' ' || c == '\t')
            .then(|| before.to_string())
    }

    /// `value` pretty-printed in the file's indentation unit, its later lines shifted by
    /// `indent`.
    fn render(&self, value: &Value, indent: &str) -> String {
        use serde::Serialize;
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        value.serialize(&mut ser).expect("a JSON value serializes");
        let text = String::from_utf8(out).expect("serde_json writes UTF-8");
        text.replace('\n', &format!("{}{indent}", self.newline))
    }
}

/// A fresh file holding `value`, pretty-printed with two spaces (as Claude Code and Codex
/// write theirs), with a final newline.
pub fn fresh(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// The byte order mark a UTF-8 file may start with.
const BOM: &str = "\u{feff}";

fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("a JSON value serializes")
}

/// The indentation of the first indented line that starts a member or element.
fn indent_unit(text: &str) -> String {
    for line in text.lines() {
        let indent: String = line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        if !indent.is_empty() && line.len() > indent.len() {
            return indent;
        }
    }
    "  ".to_string()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end of the string starting at `i` (its opening quote).
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(text: &str) -> Doc {
        Doc::parse(text.to_string()).unwrap()
    }

    #[test]
    fn members_and_elements_are_found_with_their_spans() {
        let d = doc("{ \"a\" : [1, {\"x\": \"]}\\\"\"}, 3 ], \"b\":null }");
        let root = d.root();
        let m = d.members(&root);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].key, "a");
        assert_eq!(m[1].key, "b");
        assert_eq!(&d.text[m[1].span.clone()], "\"b\":null");
        let els = d.elements(&m[0].value);
        let shown: Vec<&str> = els.iter().map(|s| &d.text[s.clone()]).collect();
        assert_eq!(shown, ["1", "{\"x\": \"]}\\\"\"}", "3"]);
    }

    #[test]
    fn push_then_remove_gives_back_the_bytes() {
        let cases = [
            "{\n    \"a\": 1,\n    \"list\": [\n        \"x\"\n    ]\n}\n",
            "{\"a\":1,\"list\":[\"x\"]}",
            "{\r\n\t\"a\": 1,\r\n\t\"list\": [\r\n\t\t\"x\"\r\n\t]\r\n}\r\n",
            "{}",
            "{ }\n",
            "{\n  \"list\": []\n}\n",
        ];
        for original in cases {
            let mut d = doc(original);
            let root = d.root();
            d.push_member(&root, "new", &json!({"k": [1, 2]}));
            assert!(serde_json::from_str::<Value>(&d.text).is_ok(), "{}", d.text);
            let root = d.root();
            let index = d
                .members(&root)
                .iter()
                .position(|m| m.key == "new")
                .unwrap();
            d.remove_member(&root, index);
            assert_eq!(d.text, original);
            if let Some(list) = d.member(&d.root(), "list") {
                d.push_element(&list.value, &json!({"y": true}));
                let v: Value = serde_json::from_str(&d.text).unwrap();
                assert_eq!(
                    v["list"].as_array().unwrap().last(),
                    Some(&json!({"y": true}))
                );
                let list = d.member(&d.root(), "list").unwrap();
                let n = d.elements(&list.value).len();
                d.remove_element(&list.value, n - 1);
                assert_eq!(d.text, original);
            }
        }
    }

    #[test]
    fn an_entry_takes_the_indentation_of_its_siblings() {
        let mut d = doc("{\n    \"a\": 1\n}\n");
        let root = d.root();
        d.push_member(&root, "b", &json!([1]));
        assert_eq!(
            d.text,
            "{\n    \"a\": 1,\n    \"b\": [\n        1\n    ]\n}\n"
        );
    }

    #[test]
    fn a_container_says_whether_it_was_there_before_its_first_entry() {
        // (A person's own `{ "a"` reads the same: it is asked only of a container that holds
        // nothing but cairn's entries.)
        for (original, there) in [
            ("{}", true),
            ("{\n}\n", true),
            ("{ \"a\": [] }", true),
            ("{\"a\": 1}", false),
            ("{\n  \"a\": 1\n}", false),
        ] {
            let mut d = doc(original);
            let root = d.root();
            d.push_member(&root, "new", &json!([1]));
            assert_eq!(d.was_there(&d.root()), there, "{original}");
        }
        // What install creates is never read as there before, compact or pretty.
        let mut d = doc("{\"a\": {\"b\": 1}}");
        let a = d.member(&d.root(), "a").unwrap();
        d.push_member(&a.value, "list", &json!([{"k": 1}]));
        let list = d
            .member(&d.member(&d.root(), "a").unwrap().value, "list")
            .unwrap();
        assert!(!d.was_there(&list.value));
        let mut d = doc("{\n  \"a\": 1\n}\n");
        let root = d.root();
        d.push_member(&root, "list", &json!([{"k": 1}]));
        let list = d.member(&d.root(), "list").unwrap();
        assert!(!d.was_there(&list.value));
    }

    #[test]
    fn a_byte_order_mark_is_read_past_and_kept() {
        let mut d = doc("\u{feff}{\"a\": 1}\n");
        assert_eq!(d.text, "{\"a\": 1}\n");
        let root = d.root();
        d.push_member(&root, "b", &json!(2));
        assert_eq!(d.contents(), "\u{feff}{\"a\": 1, \"b\": 2}\n");
        assert_eq!(doc("{}").contents(), "{}");
    }

    #[test]
    fn bad_json_is_refused_with_its_line() {
        let err = Doc::parse("{\n  \"a\": 1,\n}\n".to_string()).unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        assert!(Doc::parse("[1]".to_string()).is_err());
    }
}
