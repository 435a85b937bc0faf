//! Two machines gave two ADRs the same number: the one not yet pushed takes the next free
//! number, and what points at it follows.
//!
//! After a merge the tree may hold `decisions/0031-a.md` (ours, unpushed) and
//! `decisions/0031-b.md` (already on the remote). [`collisions`] picks, among the records
//! sharing a number, those the remote's tree lacks (when at least one of them is on the
//! remote: a number both machines never pushed is `cairn adr lint`'s business). [`rewrite`]
//! then edits one file's text: the renamed record's own `number:` and `# N.` heading, Markdown
//! links whose target is a renamed file (and the number in their link text), and ADR numbers
//! in relation keys of frontmatter (`supersedes`, `superseded-by`, `relations`' `adr:`) on
//! lines that came from our side, that is lines the remote's copy of that file does not hold:
//! a relation the remote already had points at the remote's record. Plain words like
//! "ADR 31" outside links are left alone: they may mean either record. The moved record keeps
//! `renumbered-from: OLD-NAME` in its frontmatter, so that `cairn adr lint` reads the old name
//! as moved, not as a deleted record whose number was reused.

use std::collections::{BTreeMap, HashSet};

use crate::adr::{AdrNumber, is_record_file, number_of_file_name};

/// One record to move.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Move {
    pub from: AdrNumber,
    pub to: AdrNumber,
    /// File names in `decisions/`.
    pub old_name: String,
    pub new_name: String,
}

/// The records of `ours` (file names in `decisions/` now) sharing a number with a record the
/// remote holds (`theirs`, its file names) while the remote lacks them, each given a number
/// from `next` on, in file-name order.
pub fn collisions(ours: &[String], theirs: &[String], mut next: AdrNumber) -> Vec<Move> {
    let theirs: HashSet<&str> = theirs.iter().map(String::as_str).collect();
    let mut by_number: BTreeMap<AdrNumber, Vec<&str>> = BTreeMap::new();
    for name in ours.iter().filter(|n| is_record_file(n)) {
        if let Some(n) = number_of_file_name(name) {
            by_number.entry(n).or_default().push(name);
        }
    }
    let mut moves = Vec::new();
    for (n, mut names) in by_number {
        if names.len() < 2 || !names.iter().any(|name| theirs.contains(name)) {
            continue;
        }
        names.sort_unstable();
        for name in names.into_iter().filter(|name| !theirs.contains(name)) {
            let slug = &name[name.find('-').unwrap_or(0)..];
            moves.push(Move {
                from: n,
                to: next,
                old_name: name.to_string(),
                new_name: format!("{next:04}{slug}"),
            });
            next += 1;
        }
    }
    moves
}

/// `text` (a record named `name` in `decisions/`, or MEMORY.md) with `moves` applied. A line
/// for which `ours` is false came from the remote and keeps its relation numbers.
pub fn rewrite(text: &str, name: &str, moves: &[Move], ours: impl Fn(&str) -> bool) -> String {
    let own = moves.iter().find(|m| m.old_name == name);
    let numbers: BTreeMap<AdrNumber, AdrNumber> = moves.iter().map(|m| (m.from, m.to)).collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut frontmatter = text.starts_with("---\n") || text.starts_with("---\r\n");
    let mut first = true;
    let mut key = String::new();
    let mut heading_done = false;
    let mut noted = false;
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        if frontmatter && !first && line.trim_end() == "---" {
            frontmatter = false;
            if let Some(m) = own.filter(|_| !noted) {
                // Where it came from, so that lint knows the old name moved, not deleted.
                out.push_str(&format!("renumbered-from: {}\n", m.old_name));
            }
        } else if frontmatter && !first {
            if !line.starts_with([' ', '\t', '-']) {
                key = line.split(':').next().unwrap_or("").trim().to_string();
            }
            match key.as_str() {
                "number" => {
                    if let Some(m) = own {
                        line = replace_numbers(&line, &BTreeMap::from([(m.from, m.to)]), |_| true);
                    }
                }
                "renumbered-from" => {
                    if let Some(m) = own {
                        line = format!("renumbered-from: {}\n", m.old_name);
                        noted = true;
                    }
                }
                "supersedes" | "superseded-by" if ours(&line) => {
                    line = replace_numbers(&line, &numbers, |_| true);
                }
                "relations" if ours(&line) => {
                    line = replace_numbers(&line, &numbers, |before| {
                        before.trim_end().ends_with("adr:")
                    });
                }
                _ => {}
            }
        } else if !heading_done && line.starts_with("# ") {
            heading_done = true;
            if let Some(m) = own {
                let head = format!("# {}.", m.from);
                if let Some(rest) = line.strip_prefix(&head) {
                    line = format!("# {}.{rest}", m.to);
                }
            }
        }
        first = false;
        out.push_str(&line);
    }
    rewrite_links(&out, moves)
}

/// Integer tokens of `line` found in `numbers` replaced, where `context` (the text before the
/// token) allows it.
fn replace_numbers(
    line: &str,
    numbers: &BTreeMap<AdrNumber, AdrNumber>,
    context: impl Fn(&str) -> bool,
) -> String {
    let mut out = String::with_capacity(line.len());
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() && (i == 0 || !is_word(bytes[i - 1])) {
            let end = i + bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            let token = &line[i..end];
            let standalone = end == bytes.len() || !is_word(bytes[end]);
            let to = token
                .parse::<AdrNumber>()
                .ok()
                .and_then(|n| numbers.get(&n))
                .filter(|_| standalone && context(&line[..i]));
            match to {
                Some(to) if token.len() == 4 => out.push_str(&format!("{to:04}")),
                Some(to) => out.push_str(&to.to_string()),
                None => out.push_str(token),
            }
            i = end;
        } else {
            let c = line[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Markdown links `[text](…/OLD.md#x)` to a moved record pointing at its new file, the old
/// number in their text replaced; nothing in fenced code.
fn rewrite_links(text: &str, moves: &[Move]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        }
        if fenced || !line.contains("](") {
            out.push_str(line);
            continue;
        }
        out.push_str(&rewrite_line_links(line, moves));
    }
    out
}

fn rewrite_line_links(line: &str, moves: &[Move]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut last = 0;
    let mut from = 0;
    while let Some(at) = line[from..].find("](").map(|j| j + from) {
        let start = at + 2;
        let Some(len) = line[start..].find(')') else {
            break;
        };
        let end = start + len;
        from = end;
        let target = &line[start..end];
        let path = target.split(['#', '?']).next().unwrap_or("");
        if path.contains("://") {
            continue;
        }
        let file = path.rsplit('/').next().unwrap_or(path);
        let Some(m) = moves.iter().find(|m| m.old_name == file) else {
            continue;
        };
        // The link text: from its `[` (the last one before `](` on this line) to `]`.
        let open = line[last..at].rfind('[').map(|j| j + last);
        if let Some(open) = open {
            out.push_str(&line[last..open + 1]);
            let numbers = BTreeMap::from([(m.from, m.to)]);
            out.push_str(&replace_numbers(&line[open + 1..at], &numbers, |_| true));
            out.push_str("](");
        } else {
            out.push_str(&line[last..start]);
        }
        let cut = path.len() - file.len();
        out.push_str(&target[..cut]);
        out.push_str(&m.new_name);
        out.push_str(&target[path.len()..]);
        last = end;
    }
    out.push_str(&line[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_unpushed_record_of_a_shared_number_moves() {
        let ours = names(&[
            "0030-x.md",
            "0031-ours.md",
            "0031-theirs.md",
            "0032-ours-too.md",
            "README.md",
        ]);
        let theirs = names(&["0030-x.md", "0031-theirs.md"]);
        let moves = collisions(&ours, &theirs, 33);
        assert_eq!(
            moves,
            vec![Move {
                from: 31,
                to: 33,
                old_name: "0031-ours.md".into(),
                new_name: "0033-ours.md".into(),
            }]
        );
        // Neither on the remote: not sync's to decide.
        assert!(collisions(&names(&["0005-a.md", "0005-b.md"]), &[], 6).is_empty());
    }

    #[test]
    fn the_record_its_relations_and_links_follow() {
        let moves = vec![Move {
            from: 31,
            to: 33,
            old_name: "0031-ours.md".into(),
            new_name: "0033-ours.md".into(),
        }];
        let own = "---\nnumber: 31\ntitle: Ours\nsupersedes: [5]\nsuperseded-by: []\n---\n# 31. Ours\n\nSee [ADR 31](0031-ours.md) and ADR 31.\n";
        assert_eq!(
            rewrite(own, "0031-ours.md", &moves, |_| true),
            "---\nnumber: 33\ntitle: Ours\nsupersedes: [5]\nsuperseded-by: []\nrenumbered-from: 0031-ours.md\n---\n# 33. Ours\n\nSee [ADR 33](0033-ours.md) and ADR 31.\n"
        );
        // Another record: our relation line follows, the remote's stays.
        let other = "---\nnumber: 5\nsuperseded-by: [31, 310]\nrelations:\n  - {kind: amended-by, adr: 31, text: Amended by}\n---\n# 5. Old\n\n[31. Theirs](./0031-theirs.md#why) [ours](../decisions/0031-ours.md#why)\n```\n[x](0031-ours.md)\n```\n";
        let theirs_lines = ["superseded-by: [31, 310]\n"];
        assert_eq!(
            rewrite(other, "0005-old.md", &moves, |l| !theirs_lines.contains(&l)),
            "---\nnumber: 5\nsuperseded-by: [31, 310]\nrelations:\n  - {kind: amended-by, adr: 33, text: Amended by}\n---\n# 5. Old\n\n[31. Theirs](./0031-theirs.md#why) [ours](../decisions/0033-ours.md#why)\n```\n[x](0031-ours.md)\n```\n"
        );
        assert_eq!(
            rewrite(
                "- (2026-12-01) see [ADR 0031](decisions/0031-ours.md)\n",
                "MEMORY.md",
                &moves,
                |_| true
            ),
            "- (2026-12-01) see [ADR 0033](decisions/0033-ours.md)\n"
        );
    }
}
