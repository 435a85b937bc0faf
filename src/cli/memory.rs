//! `cairn memory show|add|lint`.

use serde_json::json;

use super::Ctx;
use crate::error::Result;
use crate::files;
use crate::memory;
use crate::output::{Report, Status};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print MEMORY.md
    Show,
    /// Add a dated entry to a section (made if missing)
    Add {
        /// The section: a category's heading or id (preferences, rules-conventions,
        /// system-architecture, operations, memory-system, projects, people-relationships)
        #[arg(long, short)]
        section: String,
        /// Make or use a section that is no category (`memory lint` flags it)
        #[arg(long)]
        new_section: bool,
        /// The entry, one line of at most 500 characters
        text: String,
        #[command(flatten)]
        commit: super::CommitArgs,
    },
    /// Check for undated or overlong entries, unknown sections, and a file over its token
    /// budget ([memory] budget_tokens)
    Lint,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    let repo = ctx.repo()?;
    let path = repo.path(memory::FILE);
    match cmd {
        Command::Show => {
            let text = files::read_optional(&path)?.unwrap_or_default();
            let parsed = memory::parse(&text);
            let empty = parsed.entry_count() == 0;
            Ok(Report::new(
                "memory_show",
                json!({ "memory": parsed, "text": text }),
                text,
            )
            .empty_when(empty, format!("{} has no entries yet", memory::FILE)))
        }
        Command::Add {
            section,
            new_section,
            text,
            ..
        } => {
            // No secret reaches the repository: the entry is redacted before it is written.
            let text = crate::redact::redact_one(&repo.config.redact.patterns, &text)
                .map_err(|e| {
                    crate::error::Error::new(
                        crate::error::Kind::Config,
                        format!("cairn.toml [redact]: {e}"),
                    )
                })?
                .into_owned();
            let _lock = repo.lock()?;
            let date = ctx.now.date_naive();
            let old = files::read_optional(&path)?.unwrap_or_default();
            let (new, added) = memory::add(&old, &section, &text, date, new_section)?;
            let mut warnings = Vec::new();
            if memory::category_of(&added.section).is_none() {
                warnings.push(format!(
                    "section `{}` is not a category of the taxonomy; `cairn memory lint` will flag it",
                    added.section
                ));
            }
            let commit = if added.duplicate {
                // A run killed between its write and its commit left the entry in the working
                // tree only: the rerun commits it (HEAD's MEMORY.md with the entry added).
                let head = crate::git::head_content(repo.root(), memory::FILE)?;
                let head = String::from_utf8_lossy(head.as_deref().unwrap_or_default());
                let (with, again) = memory::add(&head, &section, &text, date, new_section)?;
                if again.duplicate {
                    None
                } else {
                    let subject = format!("memory: add to {}", added.section);
                    let msg = super::message(&subject, &[("Cairn-Memory", added.section.clone())]);
                    let change = crate::git::Change::Content {
                        path: memory::FILE.to_string(),
                        bytes: with.into_bytes(),
                    };
                    ctx.commit_changes(&repo, &[change], &msg)?
                }
            } else {
                files::write_atomic(&path, new.as_bytes())?;
                super::failpoint("memory-add-after-write");
                let subject = format!("memory: add to {}", added.section);
                let msg = super::message(&subject, &[("Cairn-Memory", added.section.clone())]);
                // The commit holds HEAD's MEMORY.md with this entry added: a person's
                // uncommitted edits of the file stay in the working tree, uncommitted.
                let head = crate::git::head_content(repo.root(), memory::FILE)?;
                let committed = match head {
                    Some(head) if head == old.as_bytes() => new.clone(),
                    head => {
                        let head = String::from_utf8_lossy(head.as_deref().unwrap_or_default());
                        memory::add(&head, &section, &text, date, new_section)?.0
                    }
                };
                let change = crate::git::Change::Content {
                    path: memory::FILE.to_string(),
                    bytes: committed.into_bytes(),
                };
                ctx.commit_changes(&repo, &[change], &msg)?
            };
            let human = if added.duplicate {
                format!(
                    "already in {} (line {}); nothing changed",
                    added.section, added.line
                )
            } else {
                format!(
                    "added to {} at line {} ({})",
                    added.section,
                    added.line,
                    ctx.short(&commit)
                )
            };
            Ok(Report::new(
                "memory_add",
                json!({ "added": added, "commit": commit }),
                human,
            )
            .warnings(warnings))
        }
        Command::Lint => {
            let text = files::read_optional(&path)?.unwrap_or_default();
            let parsed = memory::parse(&text);
            let mut problems = memory::lint(&parsed);
            problems.extend(memory::over_budget(&text, repo.config.memory.budget_tokens));
            let mut human = String::new();
            for p in &problems {
                match p.line {
                    Some(line) => {
                        human.push_str(&format!("{}:{line}: {}\n", memory::FILE, p.message))
                    }
                    None => human.push_str(&format!("{}: {}\n", memory::FILE, p.message)),
                }
            }
            if problems.is_empty() {
                human.push_str(&format!(
                    "{}: {}, no problems\n",
                    memory::FILE,
                    crate::output::count(parsed.entry_count(), "entry")
                ));
            }
            let status = if problems.is_empty() {
                Status::Ok
            } else {
                Status::NothingOrFailed
            };
            // Within budget, and still more than an agent keeps of a hook's output: a warning,
            // since the briefing then leaves entries out (ADR 84).
            let agents =
                crate::hooks::agents::budget::measure_memory(memory::FILE, &text, &repo.config);
            let warnings: Vec<String> = agents.iter().filter_map(|m| m.warning.clone()).collect();
            let data = json!({
                "problems": problems,
                "entries": parsed.entry_count(),
                "tokens": memory::tokens(&text),
                "budget_tokens": repo.config.memory.budget_tokens,
                "agents": agents,
            });
            Ok(Report::new("memory_lint", data, human)
                .status(status)
                .warnings(warnings))
        }
    }
}
