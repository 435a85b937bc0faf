//! Reading JSON Lines files the way every cairn log is read.
//!
//! Each line is one JSON object. A last line without its newline is a torn write (a crash
//! mid-append): it is skipped and reported, and every line before it is still read. Any other
//! line that is not a JSON object is an error naming the file and line: it is not ours to guess.

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
}

/// Parses the text of a JSON Lines file. Blank lines are ignored.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<Parsed<T>, Malformed> {
    let mut records = Vec::new();
    let mut torn = None;
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    for (i, line) in text[..complete].lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        records.push((i + 1, parse_line(path, i + 1, line)?));
    }
    if complete < text.len() {
        let line = text[..complete].matches('\n').count() + 1;
        torn = Some(TornTail {
            path: path.to_path_buf(),
            line,
            bytes: text.len() - complete,
        });
    }
    Ok(Parsed { records, torn })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn torn_tail_is_reported_not_fatal() {
        let p = parse::<Value>(Path::new("x.jsonl"), "{\"a\":1}\n{\"b\":2}\n{\"c\"").unwrap();
        assert_eq!(p.records.len(), 2);
        let torn = p.torn.unwrap();
        assert_eq!((torn.line, torn.bytes), (3, 4));
    }

    #[test]
    fn middle_line_not_an_object_is_an_error_with_its_line() {
        let err =
            parse::<Value>(Path::new("x.jsonl"), "{\"a\":1}\n[1,2]\n{\"b\":2}\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.to_string(), "x.jsonl:2: not a JSON object");
    }
}
