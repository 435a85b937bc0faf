//! The project a briefing is for, when it is not the knowledge repository itself: the git
//! repository `cairn brief` runs in, or the folder `--project DIR` names. What describes it is
//! read from git ([`crate::git::current_branch`], [`crate::git::recent_paths`]) and its README:
//! its name, branch, recently changed paths and title, which become the briefing's query.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The project a briefing is for.
pub struct Project {
    pub name: String,
    pub branch: Option<String>,
    /// Its git work tree (the folder itself when it is in none).
    pub root: PathBuf,
    /// Paths changed by its last commits, newest first.
    pub paths: Vec<String>,
    /// Its README's first heading.
    pub title: Option<String>,
    /// `git` (the repository of the current directory) or `explicit` (`--project DIR`).
    pub from: &'static str,
}

/// How many of a project's last commits a briefing reads, and how many paths it keeps.
const PROJECT_COMMITS: usize = 20;
const PROJECT_PATHS: usize = 24;

/// Folder and file names that say nothing about what a project is about.
const GENERIC_NAMES: &[&str] = &[
    "src",
    "lib",
    "mod",
    "main",
    "index",
    "test",
    "tests",
    "spec",
    "docs",
    "doc",
    "readme",
    "license",
    "changelog",
    "cargo",
    "package",
    "init",
    "__init__",
    "utils",
    "util",
    "common",
    "bin",
    "cmd",
    "app",
    "github",
    "gitignore",
    "lock",
    "json",
    "toml",
    "yaml",
    "yml",
    "md",
];

/// The project to brief for: `asked` (`--project DIR`, relative to `cwd`); else the git
/// repository of `cwd` when it is another than the knowledge repository at `repo_root` (and
/// `cwd` is not inside the knowledge repository); else the knowledge repository itself
/// (`None`).
pub fn find(cwd: &Path, repo_root: &Path, asked: Option<&Path>) -> Result<Option<Project>> {
    let (dir, from) = match asked {
        Some(dir) => {
            let dir = cwd.join(dir);
            if !dir.is_dir() {
                return Err(Error::bad_input(format!(
                    "--project {}: not a folder",
                    dir.display()
                )));
            }
            (dir, "explicit")
        }
        None => {
            let same = |a: &Path, b: &Path| {
                a.canonicalize()
                    .ok()
                    .zip(b.canonicalize().ok())
                    .is_some_and(|(a, b)| a == b)
            };
            let inside_repo = cwd
                .canonicalize()
                .ok()
                .zip(repo_root.canonicalize().ok())
                .is_some_and(|(cwd, root)| cwd.starts_with(root));
            match crate::git::work_tree_of(cwd) {
                Some(wt) if !inside_repo && !same(&wt, repo_root) => (wt, "git"),
                _ => return Ok(None),
            }
        }
    };
    let root = crate::git::work_tree_of(&dir).unwrap_or(dir);
    let name = root
        .canonicalize()
        .unwrap_or_else(|_| root.clone())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Some(Project {
        name,
        branch: crate::git::current_branch(&root),
        paths: crate::git::recent_paths(&root, PROJECT_COMMITS, PROJECT_PATHS).unwrap_or_default(),
        title: readme_title(&root),
        root,
        from,
    }))
}

/// The first heading of a folder's README (`# Title`, or a line underlined with `=`).
fn readme_title(root: &Path) -> Option<String> {
    let names = [
        "README.md",
        "README",
        "README.markdown",
        "README.rst",
        "README.txt",
        "readme.md",
        "Readme.md",
    ];
    let text = names
        .iter()
        .find_map(|n| std::fs::read_to_string(root.join(n)).ok())?;
    let lines: Vec<&str> = text.lines().collect();
    let mut fenced = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        // A `#` line in a code block is a comment, not a heading.
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = t.strip_prefix('#') {
            let h = h.trim_start_matches('#').trim();
            if !h.is_empty() {
                return Some(h.to_string());
            }
        }
        let underlined = lines
            .get(i + 1)
            .is_some_and(|u| u.trim().len() >= 3 && u.trim().chars().all(|c| c == '='));
        if underlined && !t.is_empty() {
            return Some(t.to_string());
        }
    }
    None
}

impl Project {
    /// The words of a project's query: its name, its branch (unless main or master), its README
    /// title, and the folder and file names of its recently changed paths that say something.
    pub fn words(&self) -> Vec<String> {
        let mut words: Vec<String> = vec![self.name.clone()];
        words.extend(
            self.branch
                .clone()
                .filter(|b| !matches!(b.as_str(), "main" | "master")),
        );
        words.extend(self.title.clone());
        let mut names: Vec<String> = Vec::new();
        for path in &self.paths {
            let parts: Vec<&str> = path.split('/').collect();
            for (i, part) in parts.iter().enumerate().rev() {
                let stem = if i + 1 == parts.len() {
                    part.trim_start_matches('.')
                        .split('.')
                        .next()
                        .unwrap_or(part)
                } else {
                    part.trim_start_matches('.')
                };
                let lower = stem.to_ascii_lowercase();
                if stem.chars().count() < 3
                    || GENERIC_NAMES.contains(&lower.as_str())
                    || names.contains(&lower)
                {
                    continue;
                }
                names.push(lower);
            }
        }
        words.extend(names.into_iter().take(PROJECT_PATHS));
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(branch: &str, title: Option<&str>, paths: &[&str]) -> Project {
        Project {
            name: "payments-api".into(),
            branch: Some(branch.into()),
            root: PathBuf::new(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            title: title.map(str::to_string),
            from: "git",
        }
    }

    #[test]
    fn words_keep_what_names_the_project_and_drop_generic_names() {
        let p = project(
            "main",
            Some("Payments API"),
            &[
                "src/webhooks/stripe.rs",
                "src/lib.rs",
                "README.md",
                "tests/refunds_test.py",
                "a/b.rs",
            ],
        );
        assert_eq!(
            p.words(),
            [
                "payments-api",
                "Payments API",
                "stripe",
                "webhooks",
                "refunds_test"
            ]
        );
        let p = project("feature/refunds", None, &[]);
        assert_eq!(p.words(), ["payments-api", "feature/refunds"]);
    }

    #[test]
    fn readme_titles_in_either_heading_form() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(readme_title(dir.path()), None);
        std::fs::write(
            dir.path().join("README.md"),
            "<!-- badge -->\n\n## Payments API\n",
        )
        .unwrap();
        assert_eq!(readme_title(dir.path()).as_deref(), Some("Payments API"));
        std::fs::write(dir.path().join("README.md"), "Payments\n========\n\ntext\n").unwrap();
        assert_eq!(readme_title(dir.path()).as_deref(), Some("Payments"));
        std::fs::write(
            dir.path().join("README.md"),
            "```sh\n# install\nmake\n```\n# Payments\n",
        )
        .unwrap();
        assert_eq!(readme_title(dir.path()).as_deref(), Some("Payments"));
    }
}
