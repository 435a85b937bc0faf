//! `cairn library add PATH…|URL…`, `cairn library list`, `cairn library remove DOC…`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::library::{self, Entry, Format, Stat};
use crate::output::{Next, Report, Status};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Add documents (Markdown, text, HTML, PDF; a folder adds those under it) or URLs; an
    /// unchanged file costs a stat, a changed one is read and cut again
    Add(AddArgs),
    /// The documents in the library
    List,
    /// Take documents out of the library (by id, path or URL); their chunks leave the index
    Remove {
        #[arg(required = true)]
        docs: Vec<String>,
        #[command(flatten)]
        commit: super::CommitArgs,
    },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Files, folders or URLs
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// Tags, comma-separated or repeated
    #[arg(long = "tags", alias = "tag", value_name = "TAGS")]
    pub tags: Vec<String>,
    /// Copy the files into vault/library/ and commit them (else only the manifest is
    /// committed, and the files stay where they are)
    #[arg(long)]
    pub copy: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Add(args) => add(ctx, args),
        Command::List => list(ctx),
        Command::Remove { docs, .. } => remove(ctx, &docs),
    }
}

/// One input made concrete: a file with its format, or a URL.
enum Input {
    File(PathBuf, Format),
    Url(String),
}

/// The inputs, checked before anything is written: every file exists and is of a format the
/// library reads; a folder gives the files of those formats under it (hidden ones left out).
fn inputs(ctx: &Ctx, given: &[String], skipped: &mut Vec<String>) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    for g in given {
        if crate::note::is_url(g) {
            out.push(Input::Url(g.trim().to_string()));
            continue;
        }
        let path = ctx.cwd.join(g);
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::bad_input(format!("{g}: {e}; nothing was added"))
                .with_fix("give files or folders that exist, or http(s) URLs")
        })?;
        let path = path.canonicalize().map_err(|e| Error::io(g, &e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(&path, &mut found, skipped).map_err(|e| Error::io(path.display(), &e))?;
            found.sort();
            for p in found {
                if let Some(f) = Format::of_name(&p.to_string_lossy()) {
                    out.push(Input::File(p, f));
                }
            }
        } else {
            let f = Format::of_name(&path.to_string_lossy()).ok_or_else(|| {
                Error::bad_input(format!(
                    "{g}: not a format the library reads; nothing was added"
                ))
                .with_fix("add Markdown (.md), text (.txt), HTML (.html) or PDF (.pdf) files")
            })?;
            out.push(Input::File(path, f));
        }
    }
    Ok(out)
}

/// The files under `dir`, never through a link: a folder named is read, not what its links
/// point at (a link is named in `skipped`; a person who wants it names the file itself).
fn walk(dir: &Path, out: &mut Vec<PathBuf>, skipped: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let t = entry.file_type()?;
        if t.is_symlink() {
            if Format::of_name(&entry.path().to_string_lossy()).is_some() {
                let target = std::fs::read_link(entry.path()).unwrap_or_default();
                skipped.push(format!(
                    "{}: a symbolic link to {}: not followed, not added (name the file itself to add it)",
                    entry.path().display(),
                    target.display()
                ));
            }
        } else if t.is_dir() {
            walk(&entry.path(), out, skipped)?;
        } else if t.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// What became of one input.
enum Outcome {
    Added(Entry),
    Updated(Entry),
    Unchanged,
}

fn add(ctx: &Ctx, args: AddArgs) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let tags = crate::note::tags(&args.tags);
    let mut skipped_links = Vec::new();
    let inputs = inputs(ctx, &args.inputs, &mut skipped_links)?;
    // What a killed run left staged among the copies, the manifest's folder and the chunks.
    crate::files::sweep_dead_temps(&repo.path(library::COPIES), true)?;
    crate::files::sweep_dead_temps(&repo.path("vault"), false)?;
    crate::files::sweep_dead_temps(&repo.path(library::CACHE), true)?;
    let redactor = crate::redact::Redactor::configured(&repo.config.redact.patterns)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
    let _lock = repo.lock()?;
    let mut entries = library::load(&repo)?;
    let mut stats = library::load_stats(&repo);
    let mut warnings = skipped_links;
    let (mut added, mut updated, mut unchanged) = (Vec::new(), Vec::new(), 0usize);
    let mut no_text = Vec::new();
    let mut failed = Vec::new();
    let mut copies: Vec<String> = Vec::new();
    for input in &inputs {
        let shown = match input {
            Input::File(p, _) => p.display().to_string(),
            Input::Url(u) => u.clone(),
        };
        match add_one(
            ctx,
            &repo,
            input,
            &tags,
            args.copy,
            &redactor,
            &mut entries,
            &mut stats,
            &mut warnings,
        ) {
            Ok((outcome, copied)) => {
                copies.extend(copied);
                match &outcome {
                    Outcome::Added(e) | Outcome::Updated(e) if e.chunks == 0 => {
                        no_text.push(e.source().to_string());
                    }
                    _ => {}
                }
                match outcome {
                    Outcome::Added(e) => added.push(e),
                    Outcome::Updated(e) => updated.push(e),
                    Outcome::Unchanged => unchanged += 1,
                }
            }
            Err(e) => {
                warnings.push(format!("{shown}: {e}; not added"));
                failed.push(json!({ "source": shown, "error": e }));
            }
        }
    }
    for source in &no_text {
        warnings.push(format!(
            "{source}: no text found (a scanned PDF or an empty file?); it is listed, with nothing to search"
        ));
    }
    let changed = !added.is_empty() || !updated.is_empty();
    // The same inputs again are a rerun: it finishes what a killed run wrote, under that run's
    // message, even when it finds nothing left to add.
    let work = super::Work::rerun("library add", format!("{:?} {:?}", args.inputs, args.copy));
    let commit = if changed {
        let subject = match (added.len(), updated.len()) {
            (1, 0) => format!("library: add {}", added[0].title),
            (0, 1) => format!("library: update {}", updated[0].title),
            (a, u) => format!("library: {a} added, {u} updated"),
        };
        let ids: Vec<String> = added.iter().chain(&updated).map(|e| e.id.clone()).collect();
        let msg = super::message(&subject, &[("Cairn-Library", ids.join(" "))]);
        let mut paths = vec![library::MANIFEST.to_string()];
        paths.extend(copies);
        ctx.begin_writes(&repo, &work, &paths, Some(&msg))?;
        let manifest = repo.path(library::MANIFEST);
        if let Some(dir) = manifest.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
        }
        crate::files::write_atomic(&manifest, library::render(&entries).as_bytes())?;
        super::failpoint("library-before-commit");
        ctx.commit_with_pending(&repo, &work, &paths, &msg)?
    } else {
        ctx.commit_with_pending(&repo, &work, &[], "")?
    };
    library::save_stats(&repo, &stats)?;
    let chunks: usize = added.iter().chain(&updated).map(|e| e.chunks).sum();
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "library",
        "add",
        failed.is_empty(),
        started,
        json!({
            "added": added.len(), "updated": updated.len(), "unchanged": unchanged,
            "failed": failed.len(), "chunks": chunks,
        }),
    ));
    let mut human = String::new();
    for e in &added {
        human.push_str(&format!(
            "added   {}  {} ({})\n",
            e.id,
            e.title,
            crate::output::count(e.chunks, "chunk")
        ));
    }
    for e in &updated {
        human.push_str(&format!(
            "updated {}  {} ({})\n",
            e.id,
            e.title,
            crate::output::count(e.chunks, "chunk")
        ));
    }
    human.push_str(&format!(
        "{} added, {} updated, {} unchanged ({})\n",
        added.len(),
        updated.len(),
        unchanged,
        if changed {
            ctx.short(&commit)
        } else {
            "nothing changed".into()
        }
    ));
    let status = if failed.is_empty() || changed || unchanged > 0 {
        Status::Ok
    } else {
        Status::NothingOrFailed
    };
    let data = json!({
        "added": added, "updated": updated, "unchanged": unchanged, "no_text": no_text,
        "failed": failed, "commit": commit,
    });
    if !failed.is_empty() && !changed && unchanged == 0 {
        return Err(Error::bad_input(format!(
            "no document could be added: {}",
            warnings.join("; ")
        )));
    }
    Ok(Report::new("library_add", data, human)
        .warnings(warnings)
        .status(status)
        .next(Next::new(
            "cairn search --library WORDS",
            "search the library",
        )))
}

/// Adds or refreshes one document; returns what became of it and the copy it committed.
///
/// No secret reaches the repository or the index: the chunks and the title are redacted, a
/// `--copy` of a text document (Markdown, text, HTML) is its redacted text, and a PDF holding
/// a secret (in its pages, or in its metadata, annotations, form fields or outline) is not
/// copied (its bytes cannot be redacted) but listed by its path, with a warning.
#[allow(clippy::too_many_arguments)]
fn add_one(
    ctx: &Ctx,
    repo: &crate::repo::Repo,
    input: &Input,
    tags: &[String],
    copy: bool,
    redactor: &crate::redact::Redactor,
    entries: &mut Vec<Entry>,
    stats: &mut library::Stats,
    warnings: &mut Vec<String>,
) -> std::result::Result<(Outcome, Vec<String>), String> {
    let (source, format, bytes, stat, name) = match input {
        Input::File(path, format) => {
            let source = library::source_path(repo, path);
            let id = library::id_of(&source);
            let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
            if meta.len() > library::MAX_BYTES {
                return Err(format!("larger than {} bytes", library::MAX_BYTES));
            }
            let stat = Stat::of(&meta);
            let known = entries.iter().position(|e| e.id == id);
            let cached = repo.path(&library::cache_rel(&id)).is_file();
            // An unchanged file costs this stat.
            if let Some(i) = known
                && cached
                && stats
                    .files
                    .get(&id)
                    .is_some_and(|(s, sha)| *s == stat && *sha == entries[i].sha256)
            {
                return Ok((retag(&mut entries[i], tags), Vec::new()));
            }
            let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            (source, *format, bytes, Some(stat), name.unwrap_or_default())
        }
        Input::Url(url) => {
            let got = crate::provider::fetch::get(url, library::FETCH_TIMEOUT, library::MAX_BYTES)
                .map_err(|e| e.to_string())?;
            let format = Format::of_reply(&got.content_type, &got.url);
            let name = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
            let name = name.to_string();
            (url.clone(), format, got.body, None, name)
        }
    };
    let id = library::id_of(&source);
    let sha = library::sha256(&bytes);
    let known = entries.iter().position(|e| e.id == id);
    if let Some(i) = known
        && entries[i].sha256 == sha
        && repo.path(&library::cache_rel(&id)).is_file()
    {
        if let Some(stat) = stat {
            stats.files.insert(id.clone(), (stat, sha));
        }
        return Ok((retag(&mut entries[i], tags), Vec::new()));
    }
    let mut prepared = library::prepare(&bytes, format, &name)?;
    // Secrets in what was read: the chunks (a PDF's text) and the title.
    let mut kinds: Vec<&str> = Vec::new();
    let mut found = 0;
    let mut clean = |text: &mut String| {
        let findings = redactor.findings(text);
        if !findings.is_empty() {
            found += findings.len();
            kinds.extend(findings.iter().map(|f| f.kind));
            *text = redactor.redact(text).into_owned();
        }
    };
    clean(&mut prepared.title);
    for c in &mut prepared.chunks {
        clean(&mut c.text);
        c.heading.iter_mut().for_each(&mut clean);
    }
    // A PDF's metadata, annotations, form fields and outline travel with its copy: a secret
    // there counts as one in its pages.
    if format == Format::Pdf {
        for mut text in library::extract::pdf_carried(&bytes).unwrap_or_default() {
            clean(&mut text);
        }
    }
    kinds.sort_unstable();
    kinds.dedup();
    let mut copies = Vec::new();
    let (path, url, copied) = match input {
        Input::Url(u) => (None, Some(u.clone()), false),
        Input::File(..)
            if copy
                && !source.starts_with(library::COPIES)
                && format == Format::Pdf
                && found > 0 =>
        {
            warnings.push(format!(
                "{name}: not copied: it holds {found} secret(s) ({}) that cannot be redacted inside a PDF; listed by its path instead",
                kinds.join(", ")
            ));
            (Some(source.clone()), None, false)
        }
        Input::File(..) if copy && !source.starts_with(library::COPIES) => {
            // No control or bidi character reaches a committed name (ADR 67).
            let rel = format!(
                "{}/{id}-{}",
                library::COPIES,
                crate::files::clean_name(&name)
            );
            let dest = repo.path(&rel);
            if let Some(dir) = dest.parent() {
                std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            }
            // A text document is copied redacted (the PDF case is above).
            let text;
            let written: &[u8] = match (format, std::str::from_utf8(&bytes)) {
                (Format::Pdf, _) => &bytes,
                (_, Ok(t)) => {
                    text = redactor.redact(t).into_owned();
                    text.as_bytes()
                }
                (_, Err(_)) => {
                    text = redactor
                        .redact(&String::from_utf8_lossy(&bytes))
                        .into_owned();
                    text.as_bytes()
                }
            };
            if written != bytes.as_slice() {
                warnings.push(format!(
                    "{name}: its copy has {} redacted",
                    crate::output::count(
                        redactor.findings(&String::from_utf8_lossy(&bytes)).len() as u64,
                        "secret"
                    )
                ));
            }
            crate::files::write_atomic(&dest, written).map_err(|e| e.to_string())?;
            copies.push(rel.clone());
            (Some(rel), None, true)
        }
        Input::File(..) => (Some(source.clone()), None, false),
    };
    let mut all_tags = known.map(|i| entries[i].tags.clone()).unwrap_or_default();
    for t in tags {
        if !all_tags.contains(t) {
            all_tags.push(t.clone());
        }
    }
    let entry = Entry {
        id: id.clone(),
        path,
        url,
        format,
        sha256: sha.clone(),
        size: bytes.len() as u64,
        title: crate::note::one_line(&prepared.title),
        tags: all_tags,
        pages: prepared.pages,
        chunks: prepared.chunks.len(),
        added: known.map_or_else(|| library::stamp(ctx.now), |i| entries[i].added.clone()),
        copied,
    };
    library::write_chunks(repo, &entry, &prepared.chunks).map_err(|e| e.to_string())?;
    if let Some(stat) = stat {
        stats.files.insert(id.clone(), (stat, sha));
    }
    Ok(match known {
        Some(i) => {
            entries[i] = entry.clone();
            (Outcome::Updated(entry), copies)
        }
        None => {
            entries.push(entry.clone());
            (Outcome::Added(entry), copies)
        }
    })
}

/// An unchanged document given new tags: they are added (the manifest changes, the chunks
/// do not).
fn retag(entry: &mut Entry, tags: &[String]) -> Outcome {
    let mut changed = false;
    for t in tags {
        if !entry.tags.contains(t) {
            entry.tags.push(t.clone());
            changed = true;
        }
    }
    if changed {
        Outcome::Updated(entry.clone())
    } else {
        Outcome::Unchanged
    }
}

fn list(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let entries = library::load(&repo)?;
    let mut human = String::new();
    for e in &entries {
        let pages = e
            .pages
            .map(|p| format!(", {}", crate::output::count(p, "page")))
            .unwrap_or_default();
        let tags = if e.tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", e.tags.join(", "))
        };
        human.push_str(&format!(
            "{}  {}  ({}{pages}, {}){tags}  {}\n",
            e.id,
            e.title,
            serde_json::to_value(e.format)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            crate::output::count(e.chunks, "chunk"),
            e.source()
        ));
    }
    Ok(
        Report::new("library_list", json!({ "documents": entries }), human)
            .empty_when(entries.is_empty(), "the library is empty"),
    )
}

fn remove(ctx: &Ctx, docs: &[String]) -> Result<Report> {
    let repo = ctx.repo()?;
    let _lock = repo.lock()?;
    let mut entries = library::load(&repo)?;
    let mut gone = Vec::new();
    for d in docs {
        let as_path = ctx
            .cwd
            .join(d)
            .canonicalize()
            .ok()
            .map(|p| library::source_path(&repo, &p));
        let i = entries
            .iter()
            .position(|e| e.id == *d || e.source() == d || Some(e.source()) == as_path.as_deref())
            .ok_or_else(|| {
                Error::new(
                    Kind::NotFound,
                    format!("`{d}` is not in the library; nothing was removed"),
                )
                .with_fix("run `cairn library list` for the ids")
            })?;
        gone.push(entries.remove(i));
    }
    let mut paths = vec![library::MANIFEST.to_string()];
    paths.extend(
        gone.iter()
            .filter(|e| e.copied)
            .filter_map(|e| e.path.clone()),
    );
    let subject = match gone.as_slice() {
        [one] => format!("library: remove {}", one.title),
        many => format!("library: remove {} documents", many.len()),
    };
    let ids: Vec<&str> = gone.iter().map(|e| e.id.as_str()).collect();
    let msg = super::message(&subject, &[("Cairn-Library", ids.join(" "))]);
    let work = super::Work::rerun("library remove", ids.join(" "));
    ctx.begin_writes(&repo, &work, &paths, Some(&msg))?;
    crate::files::write_atomic(
        &repo.path(library::MANIFEST),
        library::render(&entries).as_bytes(),
    )?;
    for e in &gone {
        for rel in [
            Some(library::cache_rel(&e.id)),
            e.path.clone().filter(|_| e.copied),
        ]
        .into_iter()
        .flatten()
        {
            match std::fs::remove_file(repo.path(&rel)) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(Error::io(&rel, &err)),
            }
        }
    }
    let commit = ctx.commit_with_pending(&repo, &work, &paths, &msg)?;
    let human = format!("removed {} ({})", ids.join(", "), ctx.short(&commit));
    Ok(Report::new(
        "library_remove",
        json!({ "removed": gone, "commit": commit }),
        human,
    ))
}
