//! `cairn adr new|list|show|status|supersede|lint|import`.

use std::path::PathBuf;

use serde_json::json;

use super::Ctx;
use crate::adr::{self, AdrNumber, NewAdr, Status};
use crate::error::{Error, Kind, Result};
use crate::output::{Next, Report, Status as Exit};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write a new decision record
    New(NewArgs),
    /// List decision records
    List(ListArgs),
    /// Show one record
    Show {
        /// The record's number
        number: AdrNumber,
    },
    /// Set a record's status (proposed, accepted, shipped, superseded, deprecated, rejected)
    Status {
        number: AdrNumber,
        /// One of the six canonical words
        word: String,
    },
    /// Record that NEW supersedes OLD, in both files and one commit
    Supersede { old: AdrNumber, new: AdrNumber },
    /// Check statuses, numbers, file names and cross-references
    Lint,
    /// Adopt records written by adr-tools or in MADR style, keeping their numbers
    Import {
        /// The folder holding the records
        dir: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The decision, as a short title
    pub title: String,
    /// Tags, comma-separated or repeated
    #[arg(long = "tags", alias = "tag")]
    pub tags: Vec<String>,
    /// Numbers of the records this one supersedes (marked superseded in the same commit)
    #[arg(long, value_delimiter = ',')]
    pub supersedes: Vec<AdrNumber>,
    /// Initial status
    #[arg(long, default_value = "accepted")]
    pub status: String,
    /// Who decided, comma-separated or repeated
    #[arg(long)]
    pub deciders: Vec<String>,
    /// The Context section's text (`-` reads it from stdin)
    #[arg(long)]
    pub context: Option<String>,
    /// The Decision section's text (`-` reads it from stdin)
    #[arg(long)]
    pub decision: Option<String>,
    /// The Consequences section's text (`-` reads it from stdin)
    #[arg(long)]
    pub consequences: Option<String>,
    /// Open the new record in $VISUAL / $EDITOR (only on a terminal)
    #[arg(long)]
    pub edit: bool,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only records with this status
    #[arg(long)]
    pub status: Option<String>,
    /// Only records with this tag
    #[arg(long)]
    pub tag: Option<String>,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::New(args) => new(ctx, args),
        Command::List(args) => list(ctx, args),
        Command::Show { number } => show(ctx, number),
        Command::Status { number, word } => status(ctx, number, &word),
        Command::Supersede { old, new } => supersede(ctx, old, new),
        Command::Lint => lint(ctx),
        Command::Import { dir } => import(ctx, dir),
    }
}

fn new(ctx: &Ctx, args: NewArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let status: Status = args.status.parse().map_err(Error::from)?;
    let sections = [&args.context, &args.decision, &args.consequences];
    if sections
        .iter()
        .filter(|s| s.as_deref() == Some("-"))
        .count()
        > 1
    {
        return Err(Error::bad_input(
            "only one of --context, --decision, --consequences can read stdin",
        ));
    }
    let read = |s: Option<String>| -> Result<Option<String>> {
        match s.as_deref() {
            Some("-") => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                    .map_err(|e| Error::io("stdin", &e))?;
                Ok(Some(text))
            }
            _ => Ok(s),
        }
    };
    let request = NewAdr {
        title: args.title,
        status,
        tags: args.tags,
        deciders: args.deciders,
        supersedes: args.supersedes,
        context: read(args.context)?,
        decision: read(args.decision)?,
        consequences: read(args.consequences)?,
    };
    let _lock = repo.lock()?;
    let (mut record, written) = adr::create(&repo, request, ctx.now.date_naive())?;
    let mut warnings = written.warnings.clone();
    if args.edit {
        if ctx.interactive {
            open_editor(&repo.path(&record.path))?;
            record = adr::load(&repo, &record.path)?;
        } else {
            warnings.push(
                "--edit needs a terminal; the record was written without opening an editor".into(),
            );
        }
    }
    let mut trailers = vec![("Cairn-Adr", record.number.to_string())];
    for old in &record.supersedes {
        trailers.push(("Cairn-Supersedes", old.to_string()));
    }
    let subject = format!("adr: {} {}", record.number, record.title);
    let commit = ctx.commit_changes(
        &repo,
        &written.changes(),
        &super::message(&subject, &trailers),
    )?;
    let human = format!(
        "created {} (ADR {}, {}, {})",
        record.path,
        record.number,
        record.status,
        super::short(&commit)
    );
    let data = json!({ "adr": record, "written": written.paths, "commit": commit });
    Ok(Report::new("adr_new", data, human)
        .warnings(warnings)
        .next(Next::new(
            format!("$EDITOR {}", record.path),
            "write the context, decision and consequences",
        )))
}

fn open_editor(path: &std::path::Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_string());
    let mut parts = editor.split_whitespace();
    let program = parts.next().unwrap_or("vi");
    let status = std::process::Command::new(program)
        .args(parts)
        .arg(path)
        .status()
        .map_err(|e| Error::io(format!("cannot start the editor `{editor}`"), &e))?;
    if !status.success() {
        return Err(
            Error::new(Kind::Io, format!("the editor `{editor}` failed ({status})"))
                .with_fix(format!("edit {} by hand, then commit it", path.display())),
        );
    }
    Ok(())
}

fn list(ctx: &Ctx, args: ListArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let want_status = args
        .status
        .as_deref()
        .map(str::parse::<Status>)
        .transpose()?;
    let records: Vec<adr::Adr> = adr::load_all(&repo)?
        .into_iter()
        .filter(|a| want_status.is_none_or(|s| a.status() == Some(s)))
        .filter(|a| {
            args.tag
                .as_ref()
                .is_none_or(|t| a.tags.iter().any(|x| x.eq_ignore_ascii_case(t)))
        })
        .collect();
    let mut human = String::new();
    for a in &records {
        human.push_str(&format!(
            "{:>4}  {:<10}  {}  {}\n",
            a.number, a.status, a.date, a.title
        ));
    }
    let status = if records.is_empty() {
        Exit::NothingOrFailed
    } else {
        Exit::Ok
    };
    Ok(Report::new("adr_list", json!({ "adrs": records }), human).status(status))
}

fn show(ctx: &Ctx, number: AdrNumber) -> Result<Report> {
    let repo = ctx.repo()?;
    let record = adr::find(&repo, number)?;
    let text = std::fs::read_to_string(repo.path(&record.path))
        .map_err(|e| Error::io(&record.path, &e))?;
    let data = json!({ "adr": record, "body": record.body, "text": text });
    Ok(Report::new("adr_show", data, text))
}

fn status(ctx: &Ctx, number: AdrNumber, word: &str) -> Result<Report> {
    let repo = ctx.repo()?;
    let status: Status = word.parse().map_err(|e: adr::Error| {
        Error::from(e)
            .with_fix("use one of proposed, accepted, shipped, superseded, deprecated, rejected")
    })?;
    let _lock = repo.lock()?;
    let (record, written) = adr::set_status(&repo, number, status)?;
    let subject = format!("adr: {} {status}", record.number);
    let commit = ctx.commit_changes(
        &repo,
        &written.changes(),
        &super::message(&subject, &[("Cairn-Adr", number.to_string())]),
    )?;
    let human = format!("ADR {number} is {status} ({})", super::short(&commit));
    Ok(Report::new(
        "adr_status",
        json!({ "adr": record, "commit": commit }),
        human,
    )
    .warnings(written.warnings))
}

fn supersede(ctx: &Ctx, old: AdrNumber, new: AdrNumber) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let (old_rec, new_rec, written) = adr::supersede(&repo, old, new)?;
    let subject = format!("adr: {new} supersedes {old}");
    let trailers = [
        ("Cairn-Adr", new.to_string()),
        ("Cairn-Supersedes", old.to_string()),
    ];
    let commit = ctx.commit_changes(
        &repo,
        &written.changes(),
        &super::message(&subject, &trailers),
    )?;
    let human = format!("ADR {new} supersedes ADR {old} ({})", super::short(&commit));
    Ok(Report::new(
        "adr_supersede",
        json!({ "old": old_rec, "new": new_rec, "commit": commit }),
        human,
    ))
}

fn lint(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let problems = adr::lint::lint(&repo)?;
    let mut human = String::new();
    for p in &problems {
        match p.line {
            Some(line) => human.push_str(&format!("{}:{line}: {}\n", p.path, p.message)),
            None => human.push_str(&format!("{}: {}\n", p.path, p.message)),
        }
    }
    if problems.is_empty() {
        human.push_str("decisions: no problems\n");
    }
    let status = if problems.is_empty() {
        Exit::Ok
    } else {
        Exit::NothingOrFailed
    };
    Ok(Report::new("adr_lint", json!({ "problems": problems }), human).status(status))
}

fn import(ctx: &Ctx, dir: PathBuf) -> Result<Report> {
    let repo = ctx.repo()?;
    let dir = if dir.is_absolute() {
        dir
    } else {
        ctx.cwd.join(dir)
    };
    if !dir.is_dir() {
        return Err(Error::new(
            Kind::NotFound,
            format!("{} is not a folder", dir.display()),
        ));
    }
    let _lock = repo.lock()?;
    let (report, written) = adr::import::import(&repo, &dir, ctx.now.date_naive())?;
    let subject = format!(
        "adr: import {} records from {}",
        report.imported.len(),
        super::file_name(&dir)
    );
    let trailers: Vec<(&str, String)> = report
        .imported
        .iter()
        .map(|i| ("Cairn-Adr", i.number.to_string()))
        .collect();
    let commit = ctx.commit_changes(
        &repo,
        &written.changes(),
        &super::message(&subject, &trailers),
    )?;
    let mut human = String::new();
    for i in &report.imported {
        human.push_str(&format!(
            "imported {} as {} ({})\n",
            i.from, i.path, i.status
        ));
        for note in &i.notes {
            human.push_str(&format!("  note: {note}\n"));
        }
    }
    for s in &report.skipped {
        human.push_str(&format!("skipped {}: {}\n", s.from, s.reason));
    }
    human.push_str(&format!(
        "{} imported, {} skipped ({})\n",
        report.imported.len(),
        report.skipped.len(),
        super::short(&commit)
    ));
    Ok(Report::new(
        "adr_import",
        json!({ "imported": report.imported, "skipped": report.skipped, "commit": commit }),
        human,
    )
    .next(Next::new("cairn adr lint", "check the imported records")))
}
