//! Reading JSON Lines files the way every cairn log is read.
//!
//! Each line is one JSON object. A last line without its newline is a torn write (a crash
//! mid-append): it is skipped and reported, and every line before it is still read. Any other
//! line that is not a JSON object (a hand edit gone wrong, a merge) is a bad line: readers skip
//! it and name its file and line ([`Parsed::bad`]); the appenders refuse to add to a file that
//! holds one ([`damage`], [`crate::files::append_lines`]) and `cairn doctor` moves it aside. A
//! UTF-8 byte order mark before the first line is not part of it.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A line that could not be read, with where it is.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct Malformed {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

/// The bytes after the last newline of a file.
#[derive(Debug, Clone)]
pub struct TornTail {
    pub path: PathBuf,
    pub line: usize,
    pub bytes: usize,
}

impl TornTail {
    pub fn warning(&self) -> String {
        format!(
            "{}:{}: skipped a torn last line ({}, a write cut short); run `cairn doctor` to repair it",
            self.path.display(),
            self.line,
            crate::output::count(self.bytes, "byte")
        )
    }
}

/// The records of one file, each with its 1-based line number.
#[derive(Debug)]
pub struct Parsed<T> {
    pub records: Vec<(usize, T)>,
    pub torn: Option<TornTail>,
    /// Lines (not the last) that are not records, skipped.
    pub bad: Vec<Malformed>,
}

impl Malformed {
    /// What a reader that skipped this line says.
    pub fn warning(&self) -> String {
        format!("{self}; skipped it (run `cairn doctor` to move it aside)")
    }
}

/// The UTF-8 byte order mark some editors put before the first line.
pub const BOM: &str = "\u{feff}";

/// `text` without a leading byte order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// Parses the text of a JSON Lines file. Blank lines are ignored; bad lines are skipped and
/// listed.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Parsed<T> {
    let text = strip_bom(text);
    let mut records = Vec::new();
    let mut bad = Vec::new();
    let mut torn = None;
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    for (i, line) in text[..complete].lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(path, i + 1, line) {
            Ok(record) => records.push((i + 1, record)),
            Err(m) => bad.push(m),
        }
    }
    if complete < text.len() {
        let line = text[..complete].matches('\n').count() + 1;
        torn = Some(TornTail {
            path: path.to_path_buf(),
            line,
            bytes: text.len() - complete,
        });
    }
    Parsed { records, torn, bad }
}

/// The damage in the bytes of a JSON Lines file: its lines that are not JSON objects, and a
/// torn last line.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Damage {
    /// The file's whole lines that are JSON objects (and blank lines), as they were.
    pub kept: Vec<u8>,
    /// Bad whole lines: 1-based line number, byte offset, bytes (with their newline).
    pub bad: Vec<(usize, u64, Vec<u8>)>,
    /// The bytes after the last newline: 1-based line number, byte offset, bytes.
    pub torn: Option<(usize, u64, Vec<u8>)>,
}

impl Damage {
    pub fn is_empty(&self) -> bool {
        self.bad.is_empty() && self.torn.is_none()
    }
}

/// Finds the damage in `bytes` (see [`Damage`]). A byte order mark before the first line is
/// kept and is no damage.
pub fn damage(bytes: &[u8]) -> Damage {
    let mut out = Damage::default();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut offset = 0usize;
    for (i, line) in bytes[..complete]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        let body = &line[..line.len() - 1];
        let body = if i == 0 {
            body.strip_prefix(BOM.as_bytes()).unwrap_or(body)
        } else {
            body
        };
        // Read as readers read it: bytes that are not UTF-8 become U+FFFD.
        let text = String::from_utf8_lossy(body);
        let good = text.trim().is_empty()
            || parse_line::<serde::de::IgnoredAny>(Path::new(""), i + 1, &text).is_ok();
        if good {
            out.kept.extend_from_slice(line);
        } else {
            out.bad.push((i + 1, offset as u64, line.to_vec()));
        }
        offset += line.len();
    }
    if complete < bytes.len() {
        let line = bytes[..complete].iter().filter(|&&b| b == b'\n').count() + 1;
        out.torn = Some((line, complete as u64, bytes[complete..].to_vec()));
    }
    out
}

/// Parses one line, which must be a JSON object.
pub fn parse_line<T: DeserializeOwned>(
    path: &Path,
    line_no: usize,
    line: &str,
) -> Result<T, Malformed> {
    let malformed = |message: String| Malformed {
        path: path.to_path_buf(),
        line: line_no,
        message,
    };
    if !line.trim_start().starts_with('{') {
        return Err(malformed("not a JSON object".to_string()));
    }
    serde_json::from_str(line).map_err(|e| malformed(format!("not a valid record: {e}")))
}

/// A line of a file that holds records and events about them, told apart by a key.
pub enum Tagged<E, R> {
    Event(E),
    Record(R),
}

/// Parses one line as an event when it has the key `tag`, else as a record; `what` names the
/// pair in the error ("observation or event").
pub fn parse_tagged<E: DeserializeOwned, R: DeserializeOwned>(
    path: &Path,
    line_no: usize,
    line: &str,
    tag: &str,
    what: &str,
) -> Result<Tagged<E, R>, Malformed> {
    // Straight into the type the key says, without a `Value` in between (half the time of an
    // index build's reading): a key is a quoted name followed by a colon, so a line with no
    // such `"tag"` has no tag at the top, and a line that parses as an event has its required
    // tag at the top. Anything else (a tag nested deeper, a line that does not parse) takes
    // the general path below, which gives the errors.
    if line.trim_start().starts_with('{') {
        if !has_key(line, tag) {
            if let Ok(r) = serde_json::from_str::<R>(line) {
                return Ok(Tagged::Record(r));
            }
        } else if let Ok(e) = serde_json::from_str::<E>(line) {
            return Ok(Tagged::Event(e));
        }
    }
    let value: serde_json::Value = parse_line(path, line_no, line)?;
    let malformed = |e: serde_json::Error| Malformed {
        path: path.to_path_buf(),
        line: line_no,
        message: format!("not a valid {what}: {e}"),
    };
    if value.get(tag).is_some() {
        serde_json::from_value(value)
            .map(Tagged::Event)
            .map_err(malformed)
    } else {
        serde_json::from_value(value)
            .map(Tagged::Record)
            .map_err(malformed)
    }
}

/// Whether `line` holds `"key"` followed by optional white space and a colon: the key of some
/// object in it (a string equal to `key` is followed by a comma, a brace or a bracket).
fn has_key(line: &str, key: &str) -> bool {
    // No quoted copy of the key is made: this runs for every line an index build reads.
    line.match_indices(key).any(|(at, _)| {
        line[..at].ends_with('"')
            && line[at + key.len()..]
                .strip_prefix('"')
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_tagged_line_parses_as_the_general_path_does() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Ev {
            op: String,
            id: String,
        }
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Rec {
            text: String,
            #[serde(default)]
            meta: Option<Value>,
        }
        let p = Path::new("x.jsonl");
        let tagged = |line: &str| parse_tagged::<Ev, Rec>(p, 1, line, "op", "thing");
        let ev = |l: &str| match tagged(l) {
            Ok(Tagged::Event(e)) => Some(e),
            _ => None,
        };
        let rec = |l: &str| match tagged(l) {
            Ok(Tagged::Record(r)) => Some(r),
            _ => None,
        };
        assert_eq!(ev(r#"{"op":"merge","id":"a"}"#).unwrap().id, "a");
        assert_eq!(ev(r#"{ "id":"a", "op" : "merge" }"#).unwrap().op, "merge");
        // The tag's name as a value, inside a string, or nested: still a record.
        assert_eq!(rec(r#"{"text":"op"}"#).unwrap().text, "op");
        assert_eq!(
            rec(r#"{"text":"say \"op\": now"}"#).unwrap().text,
            "say \"op\": now"
        );
        let nested = rec(r#"{"text":"t","meta":{"op":"x"}}"#).unwrap();
        assert_eq!(nested.meta.unwrap()["op"], "x");
        // A top-level tag on a line that is no event, and broken lines: the general errors.
        let e = tagged(r#"{"op":"merge","text":"t"}"#).err().unwrap();
        assert!(e.message.contains("not a valid thing"), "{}", e.message);
        let e = tagged(r#"{"text":"t""#).err().unwrap();
        assert!(e.message.contains("not a valid record"), "{}", e.message);
        assert!(
            tagged("[1]")
                .err()
                .unwrap()
                .message
                .contains("not a JSON object")
        );
        assert!(has_key(r#"{"a":{"op" :1}}"#, "op"));
        assert!(!has_key(r#"{"a":["op", "x"]}"#, "op"));
    }

    #[test]
    fn torn_tail_is_reported_not_fatal() {
        let p = parse::<Value>(Path::new("x.jsonl"), "{\"a\":1}\n{\"b\":2}\n{\"c\"");
        assert_eq!(p.records.len(), 2);
        let torn = p.torn.unwrap();
        assert_eq!((torn.line, torn.bytes), (3, 4));
    }

    #[test]
    fn middle_line_not_an_object_is_skipped_and_named_with_its_line() {
        let p = parse::<Value>(Path::new("x.jsonl"), "{\"a\":1}\n[1,2]\n{\"b\":2}\n");
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.bad.len(), 1);
        assert_eq!(p.bad[0].line, 2);
        assert_eq!(p.bad[0].to_string(), "x.jsonl:2: not a JSON object");
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_line() {
        let p = parse::<Value>(Path::new("x.jsonl"), "\u{feff}{\"a\":1}\n");
        assert_eq!((p.records.len(), p.bad.len()), (1, 0));
        assert!(damage("\u{feff}{\"a\":1}\n".as_bytes()).is_empty());
    }

    #[test]
    fn damage_finds_bad_lines_and_the_torn_tail_by_line_and_offset() {
        let text = b"{\"a\":1}\nnot json\n\n{\"b\":2}\n\xff\xfe\n{\"c\"";
        let d = damage(text);
        assert_eq!(d.kept, b"{\"a\":1}\n\n{\"b\":2}\n");
        assert_eq!(
            d.bad,
            vec![
                (2, 8, b"not json\n".to_vec()),
                (5, 26, b"\xff\xfe\n".to_vec())
            ]
        );
        assert_eq!(d.torn, Some((6, 29, b"{\"c\"".to_vec())));
        assert!(damage(b"{\"a\":1}\n").is_empty());
    }
}
