//! The history of MEMORY.md's entries: the commits that added, changed or removed each one,
//! from one `git log -p` of the file (the git command line, bounded by a timeout, as `cairn
//! sync` runs it).

use std::path::Path;
use std::time::Duration;

use crate::error::Result;
use crate::sync::git_cli::Git;

/// One commit that changed MEMORY.md, with the lines it added and removed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub commit: String,
    pub date: String,
    pub subject: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// The commits that changed MEMORY.md, newest first; at most `max`.
pub fn changes(root: &Path, max: usize) -> Result<Vec<Change>> {
    let git = Git::new(
        root,
        Duration::from_secs(20),
        "cairn".into(),
        "cairn@localhost".into(),
    );
    let max = format!("--max-count={max}");
    let out = git.ok(
        &[
            "log",
            &max,
            "--no-color",
            "--no-ext-diff",
            "--format=%x1e%H%x1f%cs%x1f%s",
            "-p",
            "--unified=0",
            "--",
            "MEMORY.md",
        ],
        "cannot read the history of MEMORY.md",
    )?;
    Ok(parse(&out.stdout))
}

/// Reads the output of [`changes`]'s `git log`.
pub fn parse(log: &str) -> Vec<Change> {
    let mut out = Vec::new();
    for block in log.split('\u{1e}').filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let head = lines.next().unwrap_or_default();
        let mut fields = head.split('\u{1f}');
        let mut change = Change {
            commit: fields.next().unwrap_or_default().to_string(),
            date: fields.next().unwrap_or_default().to_string(),
            subject: fields.next().unwrap_or_default().to_string(),
            added: Vec::new(),
            removed: Vec::new(),
        };
        for line in lines {
            if line.starts_with("+++") || line.starts_with("---") {
                continue;
            }
            if let Some(l) = line.strip_prefix('+') {
                change.added.push(l.to_string());
            } else if let Some(l) = line.strip_prefix('-') {
                change.removed.push(l.to_string());
            }
        }
        out.push(change);
    }
    out
}

/// The changes whose added or removed lines hold `text`.
pub fn touching<'a>(changes: &'a [Change], text: &str) -> Vec<&'a Change> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    changes
        .iter()
        .filter(|c| c.added.iter().chain(&c.removed).any(|l| l.contains(text)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\u{1e}bbb\u{1f}2026-12-02\u{1f}review: approve p-1\n\n\
diff --git a/MEMORY.md b/MEMORY.md\n--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -3 +3 @@\n\
-- 2026-11-01 use nfs v3\n+- 2026-12-02 use nfs v4\n\
\u{1e}aaa\u{1f}2026-11-01\u{1f}memory: add\n\n\
diff --git a/MEMORY.md b/MEMORY.md\n--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -2,0 +3 @@\n\
+- 2026-11-01 use nfs v3\n";

    #[test]
    fn each_entry_gets_the_commits_that_changed_it() {
        let changes = parse(LOG);
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].commit, "bbb");
        assert_eq!(changes[0].subject, "review: approve p-1");
        let v3: Vec<&str> = touching(&changes, "use nfs v3")
            .iter()
            .map(|c| c.commit.as_str())
            .collect();
        assert_eq!(v3, vec!["bbb", "aaa"]);
        let v4: Vec<&str> = touching(&changes, "use nfs v4")
            .iter()
            .map(|c| c.commit.as_str())
            .collect();
        assert_eq!(v4, vec!["bbb"]);
        assert!(touching(&changes, " ").is_empty());
    }
}
