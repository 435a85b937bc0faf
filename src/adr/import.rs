//! `adr import DIR` and `adr import --in-place`: giving records written by other tools (read by
//! [`super::foreign`]) cairn frontmatter.
//!
//! Numbers are kept. A number already taken (by a record in the repository, one in its git
//! history, or an earlier file of the same import, as in a set that reused numbers) is not
//! reused: the later file gets the next free number and keeps `original-number` in its
//! frontmatter (ADR 5). File names are kept when they already have the `NNNN-slug.md` shape of
//! the number the record keeps, even when the heading's title has since changed (adr-tools
//! names a file once, people edit headings later, and other records link to the file name);
//! a file that must be renamed has the relative links of the imported records (and, in place,
//! of the other records) rewritten to its new name. Links in status sections resolve by
//! target file name first, so relations survive renumbering; full supersession goes to
//! `supersedes` / `superseded-by`, every other relation to `relations` with its words, and a
//! relation written on one side only is recorded on both. Each record keeps `imported-from`,
//! which makes a second import skip it. Whatever could not be mapped exactly (a status word
//! outside the six, an unreadable date) is kept under an `original-*` key and reported.
//!
//! In place, the records of `decisions/` that have no cairn frontmatter are converted where
//! they are, in one commit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chrono::NaiveDate;
use serde::Serialize;

use super::foreign::{self, Link, Source};
use super::relation::{self, Kind, Relation};
use super::{AdrNumber, DIR, Error, Status, Written, frontmatter, mdlinks};
use crate::error::Error as CairnError;
use crate::files;
use crate::repo::Repo;

/// One file brought in.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub from: String,
    pub number: AdrNumber,
    pub path: String,
    pub status: Status,
    /// What could not be mapped exactly, in words.
    pub notes: Vec<String>,
}

/// One file left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub from: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub imported: Vec<Imported>,
    pub skipped: Vec<Skipped>,
}

/// What the importer calls with every path it is about to write or remove, before the first
/// write (the command notes them in `.cairn/pending.json`, so a kill mid-import leaves them to
/// the next commit instead of outside every commit), and how many records they hold (the
/// commit message's count, noted with them).
pub type BeforeWrites<'a> = &'a mut dyn FnMut(&[String], usize) -> crate::error::Result<()>;

/// Imports every `*.md` record in `dir`. Run under the repository lock.
pub fn import(
    repo: &Repo,
    dir: &Path,
    today: NaiveDate,
    before: BeforeWrites<'_>,
) -> Result<(Report, Written), Error> {
    let mut names = Vec::new();
    let mut links = Vec::new();
    let read = std::fs::read_dir(dir).map_err(|e| CairnError::io(dir.display(), &e))?;
    for entry in read {
        let entry = entry.map_err(|e| CairnError::io(dir.display(), &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".md") {
            continue;
        }
        // The folder was named, not what its links point at: a link out of it is not read
        // (an ADR-shaped `0009-x.md -> ~/.aws/credentials` would be committed).
        if let Some(target) = files::link_out_of(dir, &entry.path()) {
            links.push(Skipped {
                from: name,
                reason: format!(
                    "a symbolic link to {}, outside the folder: not followed (import the file \
                     itself, or copy it into the folder)",
                    target.display()
                ),
            });
        } else if entry.path().is_file() {
            names.push(name);
        }
    }
    names.sort();
    let label = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| DIR.to_string());
    let (mut report, written) = run(repo, dir, &label, names, false, today, before)?;
    links.sort_by(|a, b| a.from.cmp(&b.from));
    report.skipped.extend(links);
    Ok((report, written))
}

/// Whether a file name can be kept as it is: no control or bidi character reaches a committed
/// name (ADR 67).
fn clean(name: &str) -> bool {
    !name.chars().any(files::unsafe_in_name)
}

/// Converts the records of `decisions/` that have no cairn frontmatter, where they are. Run
/// under the repository lock.
pub fn import_in_place(
    repo: &Repo,
    today: NaiveDate,
    before: BeforeWrites<'_>,
) -> Result<(Report, Written), Error> {
    let mut names = Vec::new();
    for rel in super::record_files(repo)? {
        let path = repo.path(&rel);
        let text =
            std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
        if !super::is_cairn_text(&text) {
            names.push(rel.rsplit('/').next().unwrap_or(&rel).to_string());
        }
    }
    run(repo, &repo.path(DIR), DIR, names, true, today, before)
}

fn run(
    repo: &Repo,
    dir: &Path,
    label: &str,
    names: Vec<String>,
    in_place: bool,
    today: NaiveDate,
    before: BeforeWrites<'_>,
) -> Result<(Report, Written), Error> {
    let converting: BTreeSet<&str> = if in_place {
        names.iter().map(String::as_str).collect()
    } else {
        BTreeSet::new()
    };
    let existing: Vec<super::Adr> = super::load_all(repo)?
        .into_iter()
        .filter(|a| !converting.contains(a.path.rsplit('/').next().unwrap_or(&a.path)))
        .collect();
    let already: BTreeSet<String> = existing
        .iter()
        .filter_map(|a| a.imported_from.clone())
        .collect();
    let mut taken: BTreeSet<AdrNumber> = existing.iter().map(|a| a.number).collect();
    for name in super::history(repo)?.names.keys() {
        if converting.contains(name.as_str()) {
            continue;
        }
        if let Some(n) = super::number_of_file_name(name) {
            taken.insert(n);
        }
    }

    let mut report = Report::default();
    let mut sources: Vec<Source> = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let text =
            std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
        let source = foreign::read_source(&name, &text);
        if already.contains(&name) || already.contains(files::clean_name(&name).as_ref()) {
            report.skipped.push(Skipped {
                from: name,
                reason: "already imported".into(),
            });
        } else if source.number.is_none() {
            report.skipped.push(Skipped {
                from: name,
                reason: "no number in its file name or title (a template or an index?)".into(),
            });
        } else {
            sources.push(source);
        }
    }

    // Keep numbers where free; renumber the rest past the highest.
    let mut assigned: Vec<Option<AdrNumber>> = Vec::with_capacity(sources.len());
    for s in &sources {
        let n = s.number.expect("sources without numbers were skipped");
        if taken.insert(n) {
            assigned.push(Some(n))
        } else {
            assigned.push(None)
        }
    }
    let mut next = taken.iter().max().copied().unwrap_or(0) + 1;
    let assigned: Vec<AdrNumber> = assigned
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                next += 1;
                next - 1
            })
        })
        .collect();

    // Names: kept when they have the shape of the number kept, else made from the title.
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    let mut new_names = Vec::with_capacity(sources.len());
    for (s, &n) in sources.iter().zip(&assigned) {
        let name = if s.file_name.starts_with(&format!("{n:04}-")) && clean(&s.file_name) {
            s.file_name.clone()
        } else {
            format!("{n:04}-{}.md", super::slug(&s.title))
        };
        if name != s.file_name {
            renames.insert(s.file_name.clone(), name.clone());
        }
        new_names.push(name);
    }

    let by_file: BTreeMap<&str, AdrNumber> = sources
        .iter()
        .zip(&assigned)
        .map(|(s, &n)| (s.file_name.as_str(), n))
        .collect();
    let mut by_original: BTreeMap<AdrNumber, Vec<AdrNumber>> = BTreeMap::new();
    for (s, &n) in sources.iter().zip(&assigned) {
        by_original
            .entry(s.number.expect("numbered"))
            .or_default()
            .push(n);
    }
    let resolve = |link: &Link, notes: &mut Vec<String>| -> Option<AdrNumber> {
        if let Some(n) = link.file.as_deref().and_then(|f| by_file.get(f)) {
            return Some(*n);
        }
        let original = link.number?;
        match by_original.get(&original).map(Vec::as_slice) {
            Some([only]) => Some(*only),
            Some(_) => {
                notes.push(format!(
                    "link to {original} is ambiguous (several records had it); kept as {original}"
                ));
                Some(original)
            }
            None => Some(original),
        }
    };

    struct Plan {
        number: AdrNumber,
        status: Status,
        date: NaiveDate,
        supersedes: Vec<AdrNumber>,
        superseded_by: Vec<AdrNumber>,
        relations: Vec<Relation>,
        extra: Vec<(String, String)>,
        notes: Vec<String>,
    }
    let mut plans = Vec::with_capacity(sources.len());
    for (source, &number) in sources.iter().zip(&assigned) {
        let mut notes = Vec::new();
        let original = source.number.expect("numbered");
        let mut extra: Vec<(String, String)> = vec![(
            "imported-from".into(),
            frontmatter::scalar(&files::clean_name(&source.file_name)),
        )];
        if original != number {
            notes.push(format!("number {original} was taken; imported as {number}"));
            extra.push(("original-number".into(), original.to_string()));
        }
        if let Some(new) = renames.get(&source.file_name) {
            notes.push(if !clean(&source.file_name) {
                format!("renamed {new}, its name held control characters; links to it rewritten")
            } else if original != number {
                format!(
                    "renamed {new}, its name carried the number {original}; links to it rewritten"
                )
            } else {
                format!("renamed {new}, its name was not NNNN-slug.md; links to it rewritten")
            });
        }
        let (status, status_note) = foreign::map_status(source.status.as_deref());
        if let Some(note) = &source.status_note {
            notes.push(note.clone());
        }
        if let Some(note) = status_note {
            notes.push(note);
            if let Some(raw) = &source.status {
                extra.push(("original-status".into(), frontmatter::scalar(raw)));
            }
        }
        let date = match source.date.as_deref().map(foreign::parse_date) {
            Some(Some(d)) => d,
            Some(None) => {
                let raw = source.date.clone().unwrap_or_default();
                notes.push(format!("date `{raw}` unreadable; set to the import day"));
                extra.push(("original-date".into(), frontmatter::scalar(&raw)));
                today
            }
            None => {
                notes.push("no date; set to the import day".into());
                today
            }
        };
        let mut supersedes: Vec<AdrNumber> = source
            .supersedes
            .iter()
            .filter_map(|l| resolve(l, &mut notes))
            .collect();
        let mut superseded_by: Vec<AdrNumber> = source
            .superseded_by
            .iter()
            .filter_map(|l| resolve(l, &mut notes))
            .collect();
        supersedes.dedup();
        superseded_by.dedup();
        let mut relations: Vec<Relation> = Vec::new();
        for (kind, text, link) in &source.relations {
            if let Some(adr) = resolve(link, &mut notes) {
                let r = Relation {
                    kind: *kind,
                    adr,
                    text: text.clone(),
                };
                if !relations.iter().any(|o| o.kind == r.kind && o.adr == r.adr) {
                    relations.push(r);
                }
            }
        }
        for (k, v) in &source.extras {
            extra.push((k.clone(), frontmatter::scalar(v)));
        }
        plans.push(Plan {
            number,
            status,
            date,
            supersedes,
            superseded_by,
            relations,
            extra,
            notes,
        });
    }

    // A relation written on one side only (MADR sets often mark just the old record) is
    // recorded on both, as `adr supersede` would.
    let index: BTreeMap<AdrNumber, usize> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| (p.number, i))
        .collect();
    let mut pairs: Vec<(AdrNumber, AdrNumber)> = Vec::new(); // (old, new)
    let mut others: Vec<(AdrNumber, Kind, AdrNumber)> = Vec::new(); // (from, kind, to)
    for p in &plans {
        pairs.extend(p.supersedes.iter().map(|&old| (old, p.number)));
        pairs.extend(p.superseded_by.iter().map(|&new| (p.number, new)));
        others.extend(p.relations.iter().map(|r| (p.number, r.kind, r.adr)));
    }
    for (old, new) in pairs {
        if old == new {
            continue;
        }
        if let Some(&i) = index.get(&new)
            && !plans[i].supersedes.contains(&old)
        {
            plans[i].supersedes.push(old);
        }
        if let Some(&i) = index.get(&old)
            && !plans[i].superseded_by.contains(&new)
        {
            let plan = &mut plans[i];
            plan.superseded_by.push(new);
            if plan.status != Status::Superseded {
                plan.notes.push(format!(
                    "superseded by {new}; status {} set to superseded",
                    plan.status
                ));
                plan.status = Status::Superseded;
            }
        }
    }
    for (from, kind, to) in others {
        let (Some(inverse), Some(&i)) = (kind.inverse(), index.get(&to)) else {
            continue;
        };
        if from == to
            || plans[i]
                .relations
                .iter()
                .any(|r| r.kind == inverse && r.adr == from)
        {
            continue;
        }
        let plan = &mut plans[i];
        plan.notes.push(format!(
            "{from} {} it, but it did not say so; added {} {from}",
            kind.as_str().replace('-', " "),
            inverse.as_str().replace('-', " ")
        ));
        plan.relations.push(Relation {
            kind: inverse,
            adr: from,
            text: String::new(),
        });
    }

    // Check every record before writing any: an import that fails leaves nothing half-written.
    let mut texts = Vec::with_capacity(plans.len());
    for ((source, plan), name) in sources.iter().zip(&plans).zip(&new_names) {
        let number = plan.number;
        let mut yaml = format!(
            "number: {number}\ntitle: {}\nstatus: {}\ndate: {}\ndeciders: {}\ntags: {}\n\
             supersedes: {}\nsuperseded-by: {}\n",
            frontmatter::scalar(&source.title),
            plan.status,
            plan.date.format("%Y-%m-%d"),
            frontmatter::string_list(&source.deciders),
            frontmatter::string_list(&source.tags),
            frontmatter::number_list(&plan.supersedes),
            frontmatter::number_list(&plan.superseded_by),
        );
        if !plan.relations.is_empty() {
            yaml.push_str(&format!(
                "relations:{}\n",
                relation::render(&plan.relations)
            ));
        }
        for (k, v) in &plan.extra {
            yaml.push_str(&format!("{k}: {v}\n"));
        }
        let body = mdlinks::rewrite(source.body.trim_start_matches('\n'), label, &renames);
        let text = format!("---\n{yaml}---\n# {number}. {}\n\n{body}", source.title);
        let rel = format!("{DIR}/{name}");
        // What we write must read back.
        super::parse(&repo.path(&rel), &rel, &text)?;
        texts.push((rel, text));
    }
    // In place, the records already in cairn's shape may link to a file that was renamed.
    let mut relinked = Vec::new();
    if in_place && !renames.is_empty() {
        for adr in &existing {
            let path = repo.path(&adr.path);
            let text =
                std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
            let new = mdlinks::rewrite(&text, DIR, &renames);
            if new != text {
                relinked.push((adr.path.clone(), new));
            }
        }
    }

    let mut planned: Vec<String> = texts.iter().map(|(rel, _)| rel.clone()).collect();
    if in_place {
        planned.extend(
            sources
                .iter()
                .filter(|s| renames.contains_key(&s.file_name))
                .map(|s| format!("{DIR}/{}", s.file_name)),
        );
    }
    planned.extend(relinked.iter().map(|(rel, _)| rel.clone()));
    before(&planned, texts.len())?;
    let mut written = Written::default();
    // Records written elsewhere may hold a secret: none reaches the repository.
    let redactor =
        crate::redact::Redactor::configured(&repo.config.redact.patterns).map_err(|e| {
            CairnError::new(
                crate::error::Kind::Config,
                format!("cairn.toml [redact]: {e}"),
            )
        })?;
    for ((source, plan), (rel, text)) in sources.iter().zip(plans).zip(texts) {
        let text = redactor.redact(&text);
        files::write_atomic(&repo.path(&rel), text.as_bytes())?;
        if written.paths.is_empty() {
            crate::failpoint::failpoint("adr-import-after-first");
        }
        written.paths.push(rel.clone());
        if in_place && renames.contains_key(&source.file_name) {
            let old = format!("{DIR}/{}", source.file_name);
            match std::fs::remove_file(repo.path(&old)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(CairnError::io(&old, &e).into()),
            }
            written.paths.push(old);
        }
        report.imported.push(Imported {
            from: source.file_name.clone(),
            number: plan.number,
            path: rel,
            status: plan.status,
            notes: plan.notes,
        });
    }
    for (rel, text) in relinked {
        files::write_atomic(&repo.path(&rel), text.as_bytes())?;
        written.paths.push(rel);
    }
    Ok((report, written))
}
