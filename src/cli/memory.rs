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
        /// The section: a heading or a category id (operations, rules-conventions, …)
        #[arg(long, short)]
        section: String,
        /// The entry, one line
        text: String,
        #[command(flatten)]
        commit: super::CommitArgs,
    },
    /// Check for undated entries, unknown sections and a file grown too long
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
        Command::Add { section, text, .. } => {
            let _lock = repo.lock()?;
            let old = files::read_optional(&path)?.unwrap_or_default();
            let (new, added) = memory::add(&old, &section, &text, ctx.now.date_naive())?;
            let mut warnings = Vec::new();
            if memory::category_of(&added.section).is_none() {
                warnings.push(format!(
                    "section `{}` is not a category of the taxonomy; `cairn memory lint` will flag it",
                    added.section
                ));
            }
            let commit = if added.duplicate {
                None
            } else {
                files::write_atomic(&path, new.as_bytes())?;
                let subject = format!("memory: add to {}", added.section);
                let msg = super::message(&subject, &[("Cairn-Memory", added.section.clone())]);
                ctx.commit(&repo, &[memory::FILE.to_string()], &msg)?
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
            let problems = memory::lint(&parsed);
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
            let data = json!({ "problems": problems, "entries": parsed.entry_count() });
            Ok(Report::new("memory_lint", data, human).status(status))
        }
    }
}
