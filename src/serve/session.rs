//! A window of a session's turns, read from its file (`vault/sessions/AGENT/SESSION.jsonl`)
//! line by line: only the cards in the window are kept, so a page of a session of thousands
//! of turns holds a few of them, never the file.

use std::io::BufRead;
use std::path::Path;

use crate::cards::{Card, Record};
use crate::error::{Error, Result};

/// The most turns one request reads.
pub const MAX_WINDOW: usize = 50;

/// The turns `from..=to` (numbered from 1, as each card says) of a session, and the number of
/// its last turn (`total`).
#[derive(Debug, serde::Serialize)]
pub struct Window {
    pub file: String,
    pub agent: String,
    pub session: String,
    pub from: usize,
    pub to: usize,
    pub total: usize,
    pub cards: Vec<Card>,
}

/// The turn number of a card line, read without the rest of the card.
#[derive(serde::Deserialize)]
struct Numbered {
    turn: usize,
}

/// `rel` is a session file's path: `vault/sessions/AGENT/NAME.jsonl`, with names as
/// [`crate::cards::file_of`] makes them (no `..`, no other folder).
pub fn check_path(rel: &str) -> Result<()> {
    let safe = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let parts: Vec<&str> = rel.split('/').collect();
    let ok = parts.len() == 4
        && parts[0] == "vault"
        && parts[1] == "sessions"
        && safe(parts[2])
        && safe(parts[3])
        && parts[3].ends_with(".jsonl");
    if ok {
        Ok(())
    } else {
        Err(Error::bad_input(format!(
            "`{rel}` is not a session file: give vault/sessions/AGENT/SESSION.jsonl"
        )))
    }
}

/// Reads the turns numbered `from..=to` of the session file `rel` under `root` (`to` cut to
/// [`MAX_WINDOW`] turns after `from`), by the numbers the cards carry.
pub fn read(root: &Path, rel: &str, from: usize, to: usize) -> Result<Window> {
    check_path(rel)?;
    if from == 0 || to < from {
        return Err(Error::bad_input(format!(
            "turns {from} to {to}: give from ≥ 1 and to ≥ from"
        )));
    }
    // Saturating: `from` is a client's number, as large as it likes.
    let to = to.min(from.saturating_add(MAX_WINDOW - 1));
    // A link on the way (`vault -> /etc`) is not followed.
    let mut at = root.to_path_buf();
    for part in rel.split('/') {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::bad_input(format!(
                "{rel} goes through a symbolic link, which is not followed"
            )));
        }
    }
    let file = std::fs::File::open(&at).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::new(
            crate::error::Kind::NotFound,
            format!("no session file {rel}"),
        )
        .with_fix("search again: the session may have been forgotten"),
        _ => Error::io(rel, &e),
    })?;
    let mut window = Window {
        file: rel.to_string(),
        agent: String::new(),
        session: String::new(),
        from,
        to,
        total: 0,
        cards: Vec::new(),
    };
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(rel, &e))?;
        // Cheap test first: only card lines count, and only those in the window are parsed
        // whole. A card is found by the turn number it carries, not by its place in the file:
        // a forgotten card leaves a gap, and a later rendering of a turn replaces an earlier.
        if !line.starts_with("{\"type\":\"card\"") {
            continue;
        }
        let Ok(Numbered { turn }) = serde_json::from_str::<Numbered>(&line) else {
            continue;
        };
        window.total = window.total.max(turn);
        if turn < from || turn > to {
            continue;
        }
        if let Ok(Record::Card(card)) = serde_json::from_str::<Record>(&line) {
            if window.agent.is_empty() {
                window.agent = card.agent.clone();
                window.session = card.session.clone();
            }
            window.cards.retain(|c| c.turn != card.turn);
            window.cards.push(card);
        }
    }
    window.cards.sort_by_key(|c| c.turn);
    Ok(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_files_are_read() {
        assert!(check_path("vault/sessions/claude/abc-1.jsonl").is_ok());
        for bad in [
            "vault/sessions/../x.jsonl",
            "vault/sessions/claude/../../cairn.toml",
            "/etc/passwd",
            "vault/sessions/claude/.hidden.jsonl",
            "vault/sessions/claude/x.json",
            "vault/proposals/claude/x.jsonl",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_window_keeps_only_its_turns_and_counts_all() {
        let dir = tempfile::tempdir().unwrap();
        let rel = "vault/sessions/claude/s.jsonl";
        std::fs::create_dir_all(dir.path().join("vault/sessions/claude")).unwrap();
        let mut text = String::new();
        for i in 1..=10 {
            let card = Card {
                id: format!("tc-{i}"),
                agent: "claude".into(),
                session: "s".into(),
                turn: i,
                ts: "2026-12-01T10:00:00Z".into(),
                duration_ms: None,
                outcome: "completed".into(),
                prompt: format!("prompt {i}"),
                files: vec![],
                commands: vec![],
                errors: vec![],
                answer: String::new(),
                trivial: false,
                project: None,
            };
            text.push_str(&crate::cards::line(&Record::Card(card)));
            text.push('\n');
        }
        std::fs::write(dir.path().join(rel), text).unwrap();
        let w = read(dir.path(), rel, 4, 6).unwrap();
        assert_eq!(w.total, 10);
        let turns: Vec<usize> = w.cards.iter().map(|c| c.turn).collect();
        assert_eq!(turns, vec![4, 5, 6]);
        assert!(read(dir.path(), rel, 0, 3).is_err());
        // A window past the end, at the largest numbers a client can send: empty, counted
        // (`from + MAX_WINDOW - 1` overflowed before).
        let far = read(dir.path(), rel, usize::MAX - 1, usize::MAX).unwrap();
        assert_eq!((far.total, far.cards.len(), far.to), (10, 0, usize::MAX));
        assert!(read(dir.path(), "vault/sessions/claude/none.jsonl", 1, 2).is_err());
    }

    #[test]
    fn turns_are_found_by_their_number_not_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let rel = "vault/sessions/claude/s.jsonl";
        std::fs::create_dir_all(dir.path().join("vault/sessions/claude")).unwrap();
        let card = |i: usize, prompt: &str| Card {
            id: format!("tc-{i}"),
            agent: "claude".into(),
            session: "s".into(),
            turn: i,
            ts: "2026-12-01T10:00:00Z".into(),
            duration_ms: None,
            outcome: "completed".into(),
            prompt: prompt.into(),
            files: vec![],
            commands: vec![],
            errors: vec![],
            answer: String::new(),
            trivial: false,
            project: None,
        };
        let write = |cards: Vec<Card>| {
            let mut text = String::new();
            for c in cards {
                text.push_str(&crate::cards::line(&Record::Card(c)));
                text.push('\n');
            }
            std::fs::write(dir.path().join(rel), text).unwrap();
        };
        let got = |w: &Window| -> Vec<(usize, String)> {
            w.cards.iter().map(|c| (c.turn, c.prompt.clone())).collect()
        };
        // Turn 3 forgotten: turns 4 and 5 are the 3rd and 4th lines.
        write(vec![card(1, "a"), card(2, "b"), card(4, "d"), card(5, "e")]);
        let w = read(dir.path(), rel, 4, 5).unwrap();
        assert_eq!(w.total, 5);
        assert_eq!(got(&w), vec![(4, "d".into()), (5, "e".into())]);
        // Turn 1 rendered twice: the later line counts, and turn 2 is the third line.
        write(vec![card(1, "old"), card(1, "new"), card(2, "b")]);
        let w = read(dir.path(), rel, 1, 2).unwrap();
        assert_eq!(w.total, 2);
        assert_eq!(got(&w), vec![(1, "new".into()), (2, "b".into())]);
    }
}
