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
        #[command(flatten)]
        commit: super::CommitArgs,
    },
    /// Record that NEW supersedes OLD, in both files and one commit
    Supersede {
        /// The number of the record that no longer holds (marked superseded)
        old: AdrNumber,
        /// The number of the record that replaces it
        new: AdrNumber,
        #[command(flatten)]
        commit: super::CommitArgs,
    },
    /// Check statuses, numbers, file names and cross-references
    Lint,
    /// Adopt records written by adr-tools or in MADR style, keeping their numbers
    Import {
        /// The folder holding the records (with --in-place: none, or decisions/ itself)
        #[arg(required_unless_present = "in_place")]
        dir: Option<PathBuf>,
        /// Convert the records already in decisions/ that have no cairn frontmatter, where they
        /// are, in one commit
        #[arg(long)]
        in_place: bool,
        #[command(flatten)]
        commit: super::CommitArgs,
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
    /// Initial status [default: accepted when --context, --decision and --consequences are all
    /// given, else proposed]
    #[arg(long)]
    pub status: Option<String>,
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
    #[command(flatten)]
    pub commit: super::CommitArgs,
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
        Command::Status { number, word, .. } => status(ctx, number, &word),
        Command::Supersede { old, new, .. } => supersede(ctx, old, new),
        Command::Lint => lint(ctx),
        Command::Import { dir, in_place, .. } => import(ctx, dir, in_place),
    }
}

/// The most an ADR section read from stdin may hold: a long decision is tens of kilobytes.
const MAX_SECTION_BYTES: u64 = 1024 * 1024;

fn new(ctx: &Ctx, args: NewArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let status: Option<Status> = args
        .status
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(Error::from)?;
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
                let text = super::read_stdin("an ADR section", MAX_SECTION_BYTES)?;
                Ok(Some(text))
            }
            _ => Ok(s),
        }
    };
    // No secret reaches the repository (or a commit message): every text is redacted first.
    let redactor = crate::redact::Redactor::configured(&repo.config.redact.patterns)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
    let red = |s: String| redactor.redact(&s).into_owned();
    let request = NewAdr {
        title: red(args.title),
        status,
        tags: args.tags.into_iter().map(red).collect(),
        deciders: args.deciders.into_iter().map(red).collect(),
        supersedes: args.supersedes,
        context: read(args.context)?.map(red),
        decision: read(args.decision)?.map(red),
        consequences: read(args.consequences)?.map(red),
    };
    let _lock = repo.lock()?;
    // Every `adr new` is a new record: a killed one's is committed first.
    let work = super::Work::each_new("adr new");
    let mut before = |paths: &[String], _: usize| ctx.begin_writes(&repo, &work, paths, None);
    let (mut record, written) = adr::create(&repo, request, ctx.now.date_naive(), &mut before)?;
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
    let commit = ctx.commit_changes_with_pending(
        &repo,
        &work,
        &written.changes(),
        &super::message(&subject, &trailers),
    )?;
    let human = format!(
        "created {} (ADR {}, {}, {})",
        record.path,
        record.number,
        record.status,
        ctx.short(&commit)
    );
    let data = json!({ "adr": record, "written": written.paths, "commit": commit });
    let mut report = Report::new("adr_new", data, human).warnings(warnings);
    let unfilled = adr::sections::unfilled(&record.body);
    if !unfilled.is_empty() {
        report = report.next(Next::new(
            format!("$EDITOR {}", record.path),
            format!(
                "write {} (template text is not recalled)",
                unfilled.join(", ")
            ),
        ));
        if record.status() == Some(Status::Proposed) {
            report = report.next(Next::new(
                format!("cairn adr status {} accepted", record.number),
                "once it is decided",
            ));
        }
    }
    Ok(report)
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
    // One broken record does not hide the others: they are listed, the broken file is named
    // on stderr, and the exit code is 1 (ADR 92).
    let (records, broken) = adr::load_each(&repo)?;
    let warnings: Vec<String> = broken
        .iter()
        .map(|e| format!("left out of the list: {e}"))
        .collect();
    let records: Vec<adr::Adr> = records
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
    let status = if records.is_empty() || !broken.is_empty() {
        Exit::NothingOrFailed
    } else {
        Exit::Ok
    };
    let broken_json: Vec<String> = broken.iter().map(ToString::to_string).collect();
    Ok(Report::new(
        "adr_list",
        json!({ "adrs": records, "broken": broken_json }),
        human,
    )
    .status(status)
    .warnings(warnings)
    .empty_when(records.is_empty(), "no ADRs found"))
}

fn show(ctx: &Ctx, number: AdrNumber) -> Result<Report> {
    let repo = ctx.repo()?;
    let record = adr::find(&repo, number)?;
    let text = std::fs::read_to_string(repo.path(&record.path))
        .map_err(|e| Error::io(&record.path, &e))?;
    let mut human = text.clone();
    let relations = relation_lines(&repo, &record);
    if !relations.is_empty() {
        if !human.ends_with('\n') {
            human.push('\n');
        }
        human.push_str("\nRelations:\n");
        for line in &relations {
            human.push_str(&format!("  {line}\n"));
        }
    }
    let data = json!({ "adr": record, "body": record.body, "text": text, "relations": relations });
    Ok(Report::new("adr_show", data, human))
}

/// A record's relations in words, with the other record's title: `Amended by 6 (Cache
/// eviction policy)`.
fn relation_lines(repo: &crate::repo::Repo, record: &adr::Adr) -> Vec<String> {
    let title = |n: AdrNumber| {
        adr::find(repo, n).map_or_else(|_| "no such record".to_string(), |a| a.title)
    };
    let mut lines = Vec::new();
    for &n in &record.supersedes {
        lines.push(format!("Supersedes {n} ({})", title(n)));
    }
    for &n in &record.superseded_by {
        lines.push(format!("Superseded by {n} ({})", title(n)));
    }
    for r in &record.relations {
        let mut words = r.words();
        if let Some(first) = words.get(..1) {
            words = first.to_uppercase() + &words[1..];
        }
        lines.push(format!("{words} {} ({})", r.adr, title(r.adr)));
    }
    lines
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
    let human = format!("ADR {number} is {status} ({})", ctx.short(&commit));
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
    let human = format!("ADR {new} supersedes ADR {old} ({})", ctx.short(&commit));
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

fn import(ctx: &Ctx, dir: Option<PathBuf>, mut in_place: bool) -> Result<Report> {
    let repo = ctx.repo()?;
    let own = repo.path(adr::DIR);
    let dir = match dir {
        Some(d) if d.is_absolute() => d,
        Some(d) => ctx.cwd.join(d),
        None => own.clone(),
    };
    if !dir.is_dir() {
        return Err(Error::new(
            Kind::NotFound,
            format!("{} is not a folder", dir.display()),
        ));
    }
    // Importing decisions/ into itself is converting it in place.
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    let is_own = same(&dir, &own);
    if in_place && !is_own {
        return Err(Error::bad_input(format!(
            "--in-place converts the records in {}/; {} is another folder",
            adr::DIR,
            dir.display()
        ))
        .with_fix("drop --in-place to import that folder, or drop the folder"));
    }
    in_place |= is_own;
    let _lock = repo.lock()?;
    // Every path is noted before the first write: a kill mid-import leaves them to the next
    // commit (a rerun skips the records already there, so it would never commit them).
    let work = super::Work::rerun("adr import", format!("{} {in_place}", dir.display()));
    // The folder's name only: history must not carry paths of the user's machine.
    let folder = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| crate::files::clean_name(&n.to_string_lossy()).into_owned(),
    );
    let subject_of = |records: usize| {
        if in_place {
            format!(
                "adr: convert {} to cairn frontmatter",
                crate::output::count(records, "record")
            )
        } else {
            format!(
                "adr: import {} from {folder}",
                crate::output::count(records, "record")
            )
        }
    };
    // The message is noted with the paths: a rerun that finds the records written commits
    // them under it, not as "0 records".
    let mut before = |paths: &[String], records: usize| {
        ctx.begin_writes(&repo, &work, paths, Some(&subject_of(records)))
    };
    let (report, written) = if in_place {
        adr::import::import_in_place(&repo, ctx.now.date_naive(), &mut before)?
    } else {
        adr::import::import(&repo, &dir, ctx.now.date_naive(), &mut before)?
    };
    let subject = subject_of(report.imported.len());
    let trailers: Vec<(&str, String)> = report
        .imported
        .iter()
        .map(|i| ("Cairn-Adr", i.number.to_string()))
        .collect();
    let commit = ctx.commit_changes_with_pending(
        &repo,
        &work,
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
        ctx.short(&commit)
    ));
    Ok(Report::new(
        "adr_import",
        json!({ "imported": report.imported, "skipped": report.skipped, "commit": commit }),
        human,
    )
    .next(Next::new("cairn adr lint", "check the imported records")))
}
