//! What a union merge of JSON Lines leaves, made right.
//!
//! `merge=union` keeps the lines both sides added, ours then theirs, so a record both sides
//! appended (ids are content hashes: the same observation remembered on two machines, the same
//! card rendered from one transcript) comes out twice, and a side whose last line lacked its
//! newline can leave the merged file without one (the next append would take it for a torn
//! line). [`repair`] keeps every line as often as the side that held it most often did (the
//! same record on both sides is one record), splits objects glued onto one line, and ends the
//! file with a newline. A line that is not JSON is left where it is for `cairn doctor`.

use std::collections::HashMap;

/// The repaired text of a merged file and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    pub bytes: Vec<u8>,
    /// Copies of a line beyond what either side held, removed.
    pub duplicates: usize,
    /// Lines that held several JSON objects, split into one line each.
    pub split: usize,
}

/// `merged` (what git's union merge wrote) repaired against the two sides it merged; `None`
/// when it needs nothing.
pub fn repair(merged: &[u8], ours: &[u8], theirs: &[u8]) -> Option<Repaired> {
    let (lines, split) = lines_of(merged);
    let count = |bytes: &[u8]| {
        let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
        for l in lines_of(bytes).0 {
            *counts.entry(l.to_vec()).or_default() += 1;
        }
        counts
    };
    let (ours, theirs) = (count(ours), count(theirs));
    let mut kept: HashMap<&[u8], usize> = HashMap::new();
    let mut out = Vec::with_capacity(merged.len() + 1);
    let mut duplicates = 0;
    for line in lines {
        let seen = kept.entry(line).or_default();
        *seen += 1;
        let held = ours
            .get(line)
            .copied()
            .unwrap_or(0)
            .max(theirs.get(line).copied().unwrap_or(0));
        // A line neither side held (a person's resolution) is kept as it is.
        if !line.is_empty() && held > 0 && *seen > held {
            duplicates += 1;
            continue;
        }
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    (out != merged).then_some(Repaired {
        bytes: out,
        duplicates,
        split,
    })
}

/// The lines of a JSONL text without their newlines (a last line without one included), with
/// objects glued onto one line split apart; and how many lines were split.
fn lines_of(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
    let mut out = Vec::new();
    let mut split = 0;
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() && bytes.is_empty() {
        return (out, 0);
    }
    for line in body.split(|&b| b == b'\n') {
        match glued(line) {
            Some(parts) => {
                split += 1;
                out.extend(parts);
            }
            None => out.push(line),
        }
    }
    (out, split)
}

/// The objects of a line holding more than one (`{…}{…}`), each as its bytes; `None` for a
/// line of one object or one that is not JSON objects throughout.
fn glued(line: &[u8]) -> Option<Vec<&[u8]>> {
    let text = line.strip_suffix(b"\r").unwrap_or(line);
    if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok() {
        return None;
    }
    let mut parts = Vec::new();
    let mut stream =
        serde_json::Deserializer::from_slice(text).into_iter::<serde_json::Map<String, _>>();
    let mut start = 0;
    while let Some(item) = stream.next() {
        let _: serde_json::Map<String, serde_json::Value> = item.ok()?;
        let end = stream.byte_offset();
        let part = &text[start..end];
        let lead = part.iter().take_while(|b| b.is_ascii_whitespace()).count();
        parts.push(&part[lead..]);
        start = end;
    }
    (parts.len() > 1 && text[start..].iter().all(u8::is_ascii_whitespace)).then_some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(merged: &str, ours: &str, theirs: &str) -> Option<(String, usize, usize)> {
        repair(merged.as_bytes(), ours.as_bytes(), theirs.as_bytes())
            .map(|r| (String::from_utf8(r.bytes).unwrap(), r.duplicates, r.split))
    }

    #[test]
    fn a_line_both_sides_appended_is_kept_once() {
        let base = "{\"a\":1}\n";
        let ours = "{\"a\":1}\n{\"x\":1}\n{\"o\":1}\n";
        let theirs = "{\"a\":1}\n{\"x\":1}\n{\"t\":1}\n";
        let merged = "{\"a\":1}\n{\"x\":1}\n{\"o\":1}\n{\"x\":1}\n{\"t\":1}\n";
        assert_eq!(
            run(merged, ours, theirs),
            Some(("{\"a\":1}\n{\"x\":1}\n{\"o\":1}\n{\"t\":1}\n".into(), 1, 0))
        );
        // Nothing to do: the union of different lines.
        let clean = "{\"a\":1}\n{\"o\":1}\n{\"t\":1}\n";
        assert_eq!(run(clean, "{\"a\":1}\n{\"o\":1}\n", base), None);
    }

    #[test]
    fn a_line_one_side_holds_twice_stays_twice() {
        let ours = "{\"a\":1}\n{\"a\":1}\n";
        let merged = "{\"a\":1}\n{\"a\":1}\n{\"a\":1}\n";
        assert_eq!(
            run(merged, ours, "{\"a\":1}\n"),
            Some(("{\"a\":1}\n{\"a\":1}\n".into(), 1, 0))
        );
    }

    #[test]
    fn a_missing_last_newline_is_added_and_glued_objects_split() {
        assert_eq!(
            run(
                "{\"a\":1}\n{\"b\":2}",
                "{\"a\":1}\n",
                "{\"a\":1}\n{\"b\":2}"
            ),
            Some(("{\"a\":1}\n{\"b\":2}\n".into(), 0, 0))
        );
        assert_eq!(
            run(
                "{\"a\":1}\n{\"b\":2}{\"c\":3}\n",
                "{\"a\":1}\n{\"b\":2}",
                "{\"a\":1}\n{\"c\":3}\n"
            ),
            Some(("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n".into(), 0, 1))
        );
        // Glued onto a copy of a line already there: split, then the copy goes.
        assert_eq!(
            run("{\"a\":1}{\"a\":1}\n", "{\"a\":1}", "{\"a\":1}\n"),
            Some(("{\"a\":1}\n".into(), 1, 1))
        );
    }

    #[test]
    fn a_line_that_is_not_json_is_left_for_doctor() {
        assert_eq!(
            run("{\"a\":1}\nnot json\n", "{\"a\":1}\n", "not json\n"),
            None
        );
        assert_eq!(glued(b"{\"a\":1} trailing"), None);
        assert_eq!(glued(b"[1][2]"), None);
    }
}
