//! `cairn note URL|TEXT|-`, `cairn note list`, `cairn note show ID|FILE`.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::library::{Format, extract};
use crate::note::{self, Draft, Note};
use crate::output::{Next, Report};
use crate::provider::ChatClient;

/// How long a page may take to come.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// A page larger than this is not fetched (the note keeps the context alone).
const MAX_PAGE_BYTES: u64 = 5 * 1024 * 1024;
/// What `cairn note -` reads at most.
const MAX_STDIN_BYTES: u64 = 1024 * 1024;
/// Tokens the LLM may answer with.
const MAX_TOKENS: u32 = 400;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    /// A URL to fetch (its main text becomes the body), a text, or `-` to read either from
    /// stdin
    #[arg(required = true)]
    pub what: Option<String>,
    /// Why it mattered (kept as the note's relevance)
    #[arg(long)]
    pub context: Option<String>,
    /// Tags, comma-separated or repeated
    #[arg(long = "tags", alias = "tag", value_name = "TAGS")]
    pub tags: Vec<String>,
    /// The agent session it was found in
    #[arg(long, env = "CAIRN_SESSION")]
    pub session: Option<String>,
    /// Do not fetch the URL: the note holds the context alone
    #[arg(long)]
    pub offline: bool,
    /// Do not ask the LLM for a title, tags and summary, even when one is configured
    #[arg(long)]
    pub no_llm: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// The notes, newest first
    List {
        /// Only notes with this tag
        #[arg(long)]
        tag: Option<String>,
        /// At most this many (0 for all)
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One note, whole
    Show {
        /// Its id (the file name without .md) or its file
        id: String,
    },
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    match args.sub {
        Some(Sub::List { tag, limit }) => list(ctx, tag, limit),
        Some(Sub::Show { id }) => show(ctx, &id),
        None => capture(ctx, args),
    }
}

/// The page a URL gave: its title, headings and main text.
struct Fetched {
    title: Option<String>,
    headings: Vec<String>,
    text: String,
}

fn fetch(url: &str) -> std::result::Result<Fetched, String> {
    let got = crate::provider::fetch::get(url, FETCH_TIMEOUT, MAX_PAGE_BYTES)
        .map_err(|e| e.to_string())?;
    Ok(match Format::of_reply(&got.content_type, &got.url) {
        Format::Html => {
            let page = extract::html(&got.body);
            Fetched {
                title: page.title,
                headings: page.headings,
                text: page.text,
            }
        }
        Format::Pdf => {
            let pdf = extract::pdf_read(&got.body).map_err(|e| e.to_string())?;
            Fetched {
                title: pdf.title,
                headings: Vec::new(),
                text: pdf.pages.join("\n\n"),
            }
        }
        Format::Markdown | Format::Text => {
            let text = String::from_utf8_lossy(&got.body).into_owned();
            let headings: Vec<String> = text
                .lines()
                .filter_map(extract::heading_line)
                .map(|(_, h)| h.to_string())
                .collect();
            Fetched {
                title: headings.first().cloned(),
                headings,
                text,
            }
        }
    })
}

fn capture(ctx: &Ctx, args: Args) -> Result<Report> {
    let started = Instant::now();
    let repo = ctx.repo()?;
    let what = match args.what.as_deref() {
        Some("-") => super::read_stdin("a note", MAX_STDIN_BYTES)?,
        Some(w) => w.to_string(),
        None => String::new(),
    };
    let what = what.trim();
    if what.is_empty() {
        return Err(Error::bad_input("the note is empty; nothing was written")
            .with_fix("give a URL or a text (or pipe one to `cairn note -`)"));
    }
    let context = args.context.unwrap_or_default();
    let mut warnings = Vec::new();
    let mut draft = Draft {
        tags: note::tags(&args.tags),
        relevance: note::one_line(&context),
        session: args.session,
        ..Draft::default()
    };
    let mut fetched = false;
    if note::is_url(what) {
        draft.url = Some(what.to_string());
        draft.title = note::title_of_url(what);
        let page = if args.offline {
            None
        } else {
            match fetch(what) {
                Ok(p) => Some(p),
                Err(e) => {
                    warnings.push(format!(
                        "could not fetch the page ({e}); the note holds the context alone"
                    ));
                    None
                }
            }
        };
        if let Some(p) = page {
            fetched = true;
            if let Some(t) = p.title.filter(|t| !t.trim().is_empty()) {
                draft.title = t;
            }
            draft.summary = note::plain_summary(&p.text, &p.headings);
            draft.text = p.text;
        }
    } else {
        draft.title = note::title_of_text(what);
        draft.text = what.to_string();
    }
    // The LLM: a title, tags and a summary, when one is configured.
    let mut described = false;
    let llm = &repo.config.llm;
    if !args.no_llm && !llm.provider.trim().is_empty() && (fetched || draft.url.is_none()) {
        let asked = Instant::now();
        let outcome = ChatClient::from_config(llm)
            .map_err(|e| e.to_string())
            .and_then(|c| c.ok_or_else(|| "[llm] names no provider".to_string()))
            .and_then(|client| {
                let source = if draft.text.is_empty() {
                    &draft.relevance
                } else {
                    &draft.text
                };
                let (system, user) = note::llm::prompt(draft.url.as_deref(), &context, source);
                let reply = client
                    .complete(&system, &user, MAX_TOKENS)
                    .map_err(|e| e.to_string())?;
                note::llm::parse(&reply.text)
                    .map(|d| (d, reply.usage))
                    .map_err(|e| format!("malformed LLM reply: {e}"))
            });
        let meta = match &outcome {
            Ok((_, usage)) => json!({
                "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            }),
            Err(e) => json!({ "error": e }),
        };
        warnings.extend(crate::telemetry::emit(
            &repo,
            ctx.now,
            "note",
            "describe",
            outcome.is_ok(),
            asked,
            meta,
        ));
        match outcome {
            Ok((d, _)) => {
                described = true;
                draft.title = d.title;
                draft.summary = d.summary;
                let given = std::mem::take(&mut draft.tags);
                draft.tags = note::tags(&[given, d.tags].concat());
            }
            Err(e) => warnings.push(format!(
                "the LLM gave no title, tags or summary ({e}); the page's own are used"
            )),
        }
    }
    // No secret reaches the repository: everything is redacted before it is written.
    let patterns = &repo.config.redact.patterns;
    let red = |s: &str| -> Result<String> {
        crate::redact::redact_one(patterns, s)
            .map(|c| c.into_owned())
            .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))
    };
    draft.url = draft.url.as_deref().map(red).transpose()?;
    draft.title = red(&draft.title)?;
    draft.relevance = red(&draft.relevance)?;
    draft.summary = red(&draft.summary)?;
    draft.text = red(&draft.text)?;
    draft.tags = draft.tags.iter().map(|t| red(t)).collect::<Result<_>>()?;
    let slug = match &draft.url {
        Some(url) if !fetched => note::slug_of_url(url),
        _ => note::slug(&draft.title),
    };
    let url_title = draft.url.as_deref().map(note::title_of_url);
    let mut note = draft.into_note(ctx.now);
    let _lock = repo.lock()?;
    let dir = repo.path(note::DIR);
    // A page fetched for a URL whose note was taken without it (offline, or the fetch failed)
    // fills that note: same id, its context, tags, time and session kept.
    let filling = match (&note.front.url, fetched) {
        (Some(url), true) => unfetched_note(&repo, url)?,
        _ => None,
    };
    let (stem, rel) = match &filling {
        Some((id, rel, old)) => {
            fill(&mut note, old, url_title.as_deref());
            (id.clone(), rel.clone())
        }
        None => {
            let stem = note::stem(&slug, ctx.now, |s| dir.join(format!("{s}.md")).exists());
            let rel = format!("{}/{stem}.md", note::DIR);
            (stem, rel)
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    let subject = match filling {
        Some(_) => format!("note: fill {} from its page", short(&note.front.title)),
        None => format!("note: {}", short(&note.front.title)),
    };
    let msg = super::message(&subject, &[("Cairn-Note", stem.clone())]);
    // Every note is a new file: a killed one's is committed first, under its own message.
    let work = super::Work::each_new("note");
    ctx.begin_writes(&repo, &work, std::slice::from_ref(&rel), Some(&msg))?;
    crate::files::write_atomic(&repo.path(&rel), note.render().as_bytes())?;
    super::failpoint("note-after-write");
    let commit = ctx.commit_with_pending(&repo, &work, std::slice::from_ref(&rel), &msg)?;
    warnings.extend(crate::telemetry::emit(
        &repo,
        ctx.now,
        "note",
        "capture",
        true,
        started,
        json!({ "url": note.front.url.is_some(), "fetched": fetched, "llm": described }),
    ));
    let verb = if filling.is_some() {
        "filled from its page"
    } else {
        "noted"
    };
    let human = format!(
        "{verb} {stem}: {} ({rel}, {})",
        note.front.title,
        ctx.short(&commit)
    );
    let data = json!({
        "id": stem,
        "path": rel,
        "note": front_json(&note.front),
        "fetched": fetched,
        "filled": filling.is_some(),
        "described_by": if described { "llm" } else if fetched { "page" } else { "context" },
        "commit": commit,
    });
    Ok(Report::new("note", data, human)
        .warnings(warnings)
        .next(Next::new(
            format!("cairn note show {stem}"),
            "read the note as it was written",
        )))
}

/// The note of `url` whose page was never read (its body has no `## Page`), the newest when
/// there are several.
fn unfetched_note(repo: &crate::repo::Repo, url: &str) -> Result<Option<Found>> {
    let (notes, _) = read_all(repo)?;
    Ok(notes
        .into_iter()
        .filter(|(_, _, n)| n.front.url.as_deref() == Some(url) && !n.body.contains("\n## Page\n"))
        .max_by(|a, b| (&a.2.front.captured, &a.0).cmp(&(&b.2.front.captured, &b.0))))
}

/// `note` (made from the page) takes over what the note taken without it held: its time, its
/// session, its context when none was given now, its tags with the new ones, and its title when
/// it was edited by hand (not the one made from the URL, nor the URL itself).
fn fill(note: &mut Note, old: &Note, url_title: Option<&str>) {
    let (new, old) = (&mut note.front, &old.front);
    new.captured.clone_from(&old.captured);
    if new.session.is_none() {
        new.session.clone_from(&old.session);
    }
    if new.relevance.is_empty() {
        new.relevance.clone_from(&old.relevance);
    }
    let tags = note::tags(&[old.tags.clone(), std::mem::take(&mut new.tags)].concat());
    new.tags = tags;
    let made = old.title.is_empty()
        || Some(old.title.as_str()) == url_title
        || Some(&old.title) == old.url.as_ref();
    if !made && old.title != new.title {
        let heading = format!("# {}\n", new.title);
        if let Some(rest) = note.body.strip_prefix(&heading) {
            note.body = format!("# {}\n{rest}", old.title);
        }
        note.front.title.clone_from(&old.title);
    }
}

fn front_json(f: &note::Front) -> serde_json::Value {
    json!({
        "url": f.url, "title": f.title, "tags": f.tags, "relevance": f.relevance,
        "captured": f.captured, "session": f.session,
    })
}

fn short(text: &str) -> String {
    match text.char_indices().nth(60) {
        None => text.to_string(),
        Some((i, _)) => format!("{}…", &text[..i]),
    }
}

/// A note file read: its id, its path relative to the root, and the note.
type Found = (String, String, Note);

/// Every note file, bad ones as warnings.
fn read_all(repo: &crate::repo::Repo) -> Result<(Vec<Found>, Vec<String>)> {
    let dir = repo.path(note::DIR);
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let read = match crate::files::read_dir_real(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((out, warnings)),
        Err(e) => return Err(Error::io(dir.display(), &e)),
    };
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".md") else {
            continue;
        };
        let rel = format!("{}/{name}", note::DIR);
        let text = match std::fs::read_to_string(entry.path()) {
            Ok(t) => t,
            Err(e) => {
                warnings.push(format!("{rel}: {e}"));
                continue;
            }
        };
        match Note::parse(&text) {
            Ok(n) => out.push((id.to_string(), rel, n)),
            Err(e) => warnings.push(format!("{rel}:{}: {e}; skipped", e.line)),
        }
    }
    Ok((out, warnings))
}

fn list(ctx: &Ctx, tag: Option<String>, limit: usize) -> Result<Report> {
    let repo = ctx.repo()?;
    let (mut notes, warnings) = read_all(&repo)?;
    if let Some(t) = &tag {
        let t = t.trim().to_lowercase();
        notes.retain(|(_, _, n)| n.front.tags.contains(&t));
    }
    // Newest first; a hand-made note without a time sorts by its name (its day).
    notes.sort_by(|a, b| {
        b.2.front
            .captured
            .cmp(&a.2.front.captured)
            .then_with(|| b.0.cmp(&a.0))
    });
    let matched = notes.len();
    if limit > 0 {
        notes.truncate(limit);
    }
    let mut human = String::new();
    for (id, _, n) in &notes {
        human.push_str(&format!("{id}  {}", n.front.title));
        if !n.front.tags.is_empty() {
            human.push_str(&format!("  [{}]", n.front.tags.join(", ")));
        }
        if let Some(u) = &n.front.url {
            human.push_str(&format!("  {u}"));
        }
        human.push('\n');
    }
    let items: Vec<serde_json::Value> = notes
        .iter()
        .map(|(id, rel, n)| {
            let mut v = front_json(&n.front);
            v["id"] = json!(id);
            v["path"] = json!(rel);
            v
        })
        .collect();
    Ok(Report::new(
        "note_list",
        json!({ "notes": items, "matched": matched }),
        human,
    )
    .warnings(warnings)
    .empty_when(notes.is_empty(), "no notes found"))
}

fn show(ctx: &Ctx, arg: &str) -> Result<Report> {
    let repo = ctx.repo()?;
    let name = arg.rsplit('/').next().unwrap_or(arg);
    let id = name.strip_suffix(".md").unwrap_or(name);
    if id.is_empty() || id.starts_with('.') {
        return Err(Error::bad_input(format!("`{arg}` does not name a note")));
    }
    let rel = format!("{}/{id}.md", note::DIR);
    let Some(text) = crate::files::read_optional(&repo.path(&rel))? else {
        return Err(
            Error::new(Kind::NotFound, format!("no note `{id}` in {}", note::DIR))
                .with_fix("run `cairn note list` for the ids"),
        );
    };
    // Shown redacted again: a note edited by hand may hold what a rule now catches.
    let text = crate::redact::redact_one(&repo.config.redact.patterns, &text)
        .map(|c| c.into_owned())
        .unwrap_or(text);
    let note = Note::parse(&text).map_err(|e| {
        Error::bad_input(format!("{rel}:{}: {e}", e.line))
            .with_fix(format!("correct the frontmatter of {rel}"))
    })?;
    let data = json!({
        "id": id, "path": rel, "note": front_json(&note.front), "body": note.body,
    });
    Ok(Report::new("note_show", data, text))
}
