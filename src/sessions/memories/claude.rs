//! Claude Code's auto memory (checked in 2.1.332, ADR 135): one folder per project, by default
//! `CLAUDE_HOME/projects/<sanitized project root>/memory/` (the root is the git root, else the
//! working folder; every character but ASCII letters and digits becomes `-`), moved by the
//! `autoMemoryDirectory` setting. The folder holds topic files, one memory each (YAML
//! frontmatter `name`, `description`, `type` or `metadata.type`, then the memory in Markdown),
//! and `MEMORY.md`, an index of one line per memory (`- [Title](file.md) — hook`) of which
//! Claude Code loads the first 200 lines, cut to 25,000 characters, at every session start.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{Memory, Skipped};

/// The agent's name in sources.
pub const AGENT: &str = "claude-code";

/// The index file's name.
pub const INDEX: &str = "MEMORY.md";

/// The lines of `MEMORY.md` Claude Code loads.
pub const INDEX_LINES: usize = 200;

/// The characters (UTF-16 units, as JavaScript counts) of `MEMORY.md` Claude Code loads.
pub const INDEX_UNITS: usize = 25_000;

/// The longest sanitized project name Claude Code uses whole; a longer one gets a hash suffix
/// this reader does not make (such a folder is still read by `--all`, which lists them).
const NAME_MAX: usize = 200;

/// A project root as Claude Code names its folder under `projects/`: every character but an
/// ASCII letter or digit becomes `-`. `None` for a name Claude Code would shorten.
pub fn sanitize(root: &str) -> Option<String> {
    // JavaScript replaces UTF-16 units: a character outside the BMP becomes two dashes.
    let name: String = root
        .chars()
        .flat_map(|c| {
            let n = if c.is_ascii_alphanumeric() {
                0
            } else {
                c.len_utf16()
            };
            std::iter::once(if n == 0 { c } else { '-' })
                .chain(std::iter::repeat_n('-', n.saturating_sub(1)))
        })
        .collect();
    (name.len() <= NAME_MAX).then_some(name)
}

/// The default memory folder of the project at `root` under Claude Code's home (`~/.claude`).
pub fn default_folder(claude_home: &Path, root: &str) -> Option<PathBuf> {
    Some(
        claude_home
            .join("projects")
            .join(sanitize(root)?)
            .join("memory"),
    )
}

/// Every project's default memory folder under `claude_home`, sorted.
pub fn project_folders(claude_home: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(claude_home.join("projects")) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join("memory"))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// What of `MEMORY.md` Claude Code loads into a session: trimmed, its first [`INDEX_LINES`]
/// lines, then cut at the last newline before [`INDEX_UNITS`] UTF-16 units.
pub fn loaded_index(text: &str) -> String {
    let text = text.trim();
    let mut kept: String = text
        .split('\n')
        .take(INDEX_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    if kept.encode_utf16().count() > INDEX_UNITS {
        // The byte offset at INDEX_UNITS units.
        let mut units = 0;
        let mut cut = kept.len();
        for (i, c) in kept.char_indices() {
            if units + c.len_utf16() > INDEX_UNITS {
                cut = i;
                break;
            }
            units += c.len_utf16();
        }
        let at = kept[..cut].rfind('\n').filter(|&i| i > 0).unwrap_or(cut);
        kept.truncate(at);
    }
    kept
}

/// One line of the index: `- [Title](file.md) — hook`, or any other bullet.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The whole line's text after the bullet.
    pub text: String,
    /// The file it points at, if it is a link to a file in the folder.
    pub file: Option<String>,
}

/// The bullet lines of an index text.
pub fn entries(index: &str) -> Vec<Entry> {
    index
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("- ")
                .or_else(|| l.strip_prefix("* "))?
                .trim();
            if rest.is_empty() {
                return None;
            }
            let file = rest
                .find("](")
                .and_then(|i| rest[i + 2..].split_once(')'))
                .map(|(target, _)| target.trim().to_string())
                .filter(|t| !t.contains("://") && !t.is_empty());
            Some(Entry {
                text: rest.to_string(),
                file,
            })
        })
        .collect()
}

/// A topic file read: its frontmatter's fields and its body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Topic {
    pub name: Option<String>,
    pub description: Option<String>,
    pub kind: Option<String>,
    pub body: String,
}

/// Reads a topic file's text: frontmatter (if any) and body. An opened frontmatter that
/// never closes, or that is not `key: value` lines, is an error (a format this version does
/// not read).
pub fn parse_topic(text: &str) -> Result<Topic, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(Topic {
            body: text.trim().to_string(),
            ..Topic::default()
        });
    };
    let mut topic = Topic::default();
    let mut offset = 0;
    let mut closed = None;
    for line in rest.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "---" {
            closed = Some(offset + line.len());
            break;
        }
        offset += line.len();
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = l.split_once(':') else {
            return Err(format!("frontmatter line {l:?} is not `key: value`"));
        };
        let value = value
            .trim()
            .trim_matches('"')
            .trim_matches('\'')
            .to_string();
        match key.trim() {
            "name" => topic.name = Some(value),
            "description" => topic.description = Some(value),
            "type" => topic.kind = Some(value),
            _ => {}
        }
    }
    let Some(end) = closed else {
        return Err("frontmatter opened with --- never closes".to_string());
    };
    topic.body = rest[end..].trim().to_string();
    Ok(topic)
}

/// The text a topic file is remembered by: its body, or its description when the body is
/// empty.
pub fn topic_text(topic: &Topic) -> String {
    if topic.body.is_empty() {
        topic.description.clone().unwrap_or_default()
    } else {
        topic.body.clone()
    }
}

fn mtime(meta: &std::fs::Metadata) -> DateTime<Utc> {
    meta.modified()
        .map(DateTime::<Utc>::from)
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// The memory files of `dir` (its `*.md` files, `MEMORY.md` first), sorted; none when it does
/// not exist. Links are not followed.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.sort_by_key(|p| (p.file_name() != Some(INDEX.as_ref()), p.clone()));
    out
}

/// Reads one memory file of `dir`: a topic file is one memory; the index gives one memory per
/// entry that points at no file of the folder (an entry pointing at a file is that file's
/// memory). `project` is the folder's project as far as known.
pub fn read_file(dir: &Path, file: &Path, project: Option<&str>) -> Result<Vec<Memory>, Skipped> {
    let skipped = |reason: String| Skipped {
        file: file.display().to_string(),
        reason,
    };
    let meta = std::fs::symlink_metadata(file).map_err(|e| skipped(e.to_string()))?;
    let text = std::fs::read_to_string(file).map_err(|e| skipped(e.to_string()))?;
    let time = mtime(&meta);
    let memory = |locator: String, text: String| Memory {
        agent: AGENT,
        locator,
        project: project.map(str::to_string),
        text,
        time,
    };
    if file.file_name() == Some(INDEX.as_ref()) {
        return Ok(entries(&text)
            .into_iter()
            .filter(|e| !e.file.as_ref().is_some_and(|f| dir.join(f).is_file()))
            .map(|e| {
                let locator = format!("{}#{}", file.display(), crate::store::normalize(&e.text));
                memory(locator, e.text)
            })
            .collect());
    }
    let topic = parse_topic(&text).map_err(skipped)?;
    let text = topic_text(&topic);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![memory(file.display().to_string(), text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_as_claude_code_does() {
        assert_eq!(
            sanitize("/home/u/my.proj_1").as_deref(),
            Some("-home-u-my-proj-1")
        );
        assert_eq!(sanitize("/a/é").as_deref(), Some("-a--"));
        assert_eq!(sanitize(&"a".repeat(201)), None);
    }

    #[test]
    fn loaded_index_keeps_200_lines_and_25000_units() {
        let text: String = (0..300).map(|i| format!("- line {i}\n")).collect();
        let kept = loaded_index(&text);
        assert_eq!(kept.lines().count(), 200);
        assert!(kept.ends_with("- line 199"));
        let long: String = (0..100)
            .map(|i| format!("- {i} {}\n", "x".repeat(400)))
            .collect();
        let kept = loaded_index(&long);
        assert!(kept.encode_utf16().count() <= INDEX_UNITS);
        assert!(kept.ends_with('x'), "cut at a line's end");
    }

    #[test]
    fn entries_and_their_files() {
        let e = entries(
            "# Memory\n- [Testing](feedback_testing.md) — run bun test\n- plain fact here\n",
        );
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].file.as_deref(), Some("feedback_testing.md"));
        assert_eq!(e[1].file, None);
    }

    #[test]
    fn topic_frontmatter() {
        let t = parse_topic("---\nname: testing\ndescription: how tests run\nmetadata:\n  type: feedback\n---\n\nRun `bun test`.\n").unwrap();
        assert_eq!(t.name.as_deref(), Some("testing"));
        assert_eq!(t.kind.as_deref(), Some("feedback"));
        assert_eq!(t.body, "Run `bun test`.");
        assert!(parse_topic("---\nname: x\nno end").is_err());
        assert_eq!(parse_topic("just text").unwrap().body, "just text");
    }
}
