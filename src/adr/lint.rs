//! `adr lint`: every way the decision records can disagree with themselves.
//!
//! Checked: file names start with a number and match the frontmatter's; frontmatter parses;
//! status is a canonical word; dates are `YYYY-MM-DD`; no two files share a number; no number
//! was reused after its first record was deleted (from git history); `supersedes` and
//! `superseded-by` agree both ways and point at records that exist; a superseded record says
//! by what; every relation in `relations` points at a record that exists and is answered by
//! its inverse there (`amends 3` by `amended-by` in 3); no chain of supersession, whole or
//! partial, comes back to where it started; and every Markdown link from one record to another
//! resolves to a file in `decisions/`. A problem about a frontmatter key names that key's line
//! (in the record to fix, which may be the other one of a pair).
//!
//! [`lint_records`] checks texts given to it, so the pre-commit hook runs the same check over
//! what is staged ([`crate::hooks::lint`]); [`lint`] gives it the files on disk.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use serde::Serialize;

use super::relation::Kind;
use super::{Adr, AdrNumber, DIR, Error, Status, mdlinks};
use crate::repo::Repo;

/// One problem, with where it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// Repository-relative path.
    pub path: String,
    /// 1-based line, when the problem is on one.
    pub line: Option<usize>,
    pub message: String,
}

/// Lints every record; an empty list means all is well.
pub fn lint(repo: &Repo) -> Result<Vec<Problem>, Error> {
    let mut records = Vec::new();
    for rel in super::record_files(repo)? {
        let path = repo.path(&rel);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| crate::error::Error::io(path.display(), &e))?;
        records.push((rel, text));
    }
    let dir_files: BTreeSet<String> = crate::files::read_dir_real(&repo.path(DIR))
        .map(|read| {
            read.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    lint_records(&records, &dir_files, &super::history(repo)?)
}

/// Lints `records` (repository-relative path and text, sorted by path) as the whole of
/// `decisions/`, whose files (records or not) are named in `dir_files`, against the folder's
/// `history`: the same check whether the texts are the files on disk or what the git index
/// stages (the pre-commit hook).
pub fn lint_records(
    records: &[(String, String)],
    dir_files: &BTreeSet<String>,
    history: &crate::git::FolderHistory,
) -> Result<Vec<Problem>, Error> {
    let mut problems = Vec::new();
    let mut adrs: Vec<Adr> = Vec::new();
    // The line of a frontmatter key in a record, where a problem about it points.
    let at = |path: &str, key: &str| -> Option<usize> {
        let (_, text) = records.iter().find(|(rel, _)| rel == path)?;
        super::frontmatter::line_of(&super::frontmatter::split(text)?, key)
    };
    for (rel, text) in records {
        let name = rel.rsplit('/').next().unwrap_or(rel).to_string();
        let file_number = super::number_of_file_name(&name);
        if file_number.is_none() {
            problems.push(problem(rel, None, "file name must be NNNN-slug.md".into()));
        }
        let adr = match super::parse(std::path::Path::new(rel), rel, text) {
            Ok(adr) => adr,
            Err(Error::Malformed { line, message, .. }) => {
                problems.push(problem(rel, Some(line), message));
                continue;
            }
            Err(err) => return Err(err),
        };
        let split = super::frontmatter::split(text);
        let line = |key: &str| {
            split
                .as_ref()
                .and_then(|s| super::frontmatter::line_of(s, key))
        };
        if let Some(n) = file_number
            && n != adr.number
        {
            problems.push(problem(
                rel,
                line("number"),
                format!(
                    "frontmatter number {} does not match the file name's {n}",
                    adr.number
                ),
            ));
        }
        if adr.status().is_none() {
            problems.push(problem(
                rel,
                line("status"),
                format!(
                    "status `{}` is not one of proposed, accepted, shipped, superseded, deprecated, rejected",
                    adr.status
                ),
            ));
        }
        if NaiveDate::parse_from_str(&adr.date, "%Y-%m-%d").is_err() {
            problems.push(problem(
                rel,
                line("date"),
                format!("date `{}` is not YYYY-MM-DD", adr.date),
            ));
        }
        adrs.push(adr);
    }

    let mut by_number: BTreeMap<AdrNumber, Vec<&Adr>> = BTreeMap::new();
    for adr in &adrs {
        by_number.entry(adr.number).or_default().push(adr);
    }
    for (n, group) in &by_number {
        if group.len() > 1 {
            let paths: Vec<&str> = group.iter().map(|a| a.path.as_str()).collect();
            for adr in &group[1..] {
                problems.push(problem(
                    &adr.path,
                    at(&adr.path, "number"),
                    format!(
                        "number {n} is used by {} files: {}",
                        group.len(),
                        paths.join(", ")
                    ),
                ));
            }
        }
    }

    let current: BTreeSet<String> = adrs
        .iter()
        .map(|a| a.path.rsplit('/').next().unwrap_or(&a.path).to_string())
        .collect();
    // A number is reused when a record of that number was deleted and a different file took
    // the number after it: history knows when each name first appeared. A name an import
    // renamed (`imported-from` of a record under another name) or sync renumbered
    // (`renumbered-from`) was not deleted, it moved.
    let renamed: BTreeSet<&str> = adrs
        .iter()
        .flat_map(|a| [a.imported_from.as_deref(), a.renumbered_from.as_deref()])
        .flatten()
        .collect();
    for adr in &adrs {
        let name = adr.path.rsplit('/').next().unwrap_or(&adr.path);
        let Some(n) = super::number_of_file_name(name) else {
            continue;
        };
        let mine = history.names.get(name).map_or(i64::MAX, |s| s.time);
        let earlier = history.names.iter().find(|(old, seen)| {
            super::number_of_file_name(old) == Some(n)
                && !current.contains(*old)
                && !renamed.contains(old.as_str())
                && seen.time <= mine
        });
        if let Some((old, seen)) = earlier {
            problems.push(problem(
                &adr.path,
                at(&adr.path, "number"),
                format!(
                    "number {n} was first used by {DIR}/{old} (commit {}, since deleted): numbers are \
                     never reused; give this record the next free number (or, if it is that record \
                     renamed, ignore this)",
                    &seen.commit[..seen.commit.len().min(8)]
                ),
            ));
        }
    }

    for adr in &adrs {
        for &other in &adr.supersedes {
            match by_number.get(&other).and_then(|g| g.first()) {
                None => problems.push(problem(
                    &adr.path,
                    at(&adr.path, "supersedes"),
                    format!("supersedes {other}, which does not exist"),
                )),
                Some(o) if !o.superseded_by.contains(&adr.number) => problems.push(problem(
                    &o.path,
                    at(&o.path, "superseded-by"),
                    format!(
                        "ADR {} supersedes {other}, but {other} does not list {} in superseded-by",
                        adr.number, adr.number
                    ),
                )),
                Some(_) => {}
            }
        }
        for &other in &adr.superseded_by {
            match by_number.get(&other).and_then(|g| g.first()) {
                None => problems.push(problem(
                    &adr.path,
                    at(&adr.path, "superseded-by"),
                    format!("superseded-by {other}, which does not exist"),
                )),
                Some(o) if !o.supersedes.contains(&adr.number) => problems.push(problem(
                    &o.path,
                    at(&o.path, "supersedes"),
                    format!(
                        "ADR {} is superseded by {other}, but {other} does not list {} in supersedes",
                        adr.number, adr.number
                    ),
                )),
                Some(_) => {}
            }
        }
        let superseded = adr.status() == Some(Status::Superseded);
        if superseded && adr.superseded_by.is_empty() {
            problems.push(problem(
                &adr.path,
                at(&adr.path, "superseded-by"),
                "status is superseded but superseded-by is empty".into(),
            ));
        }
        if !superseded && !adr.superseded_by.is_empty() && adr.status().is_some() {
            problems.push(problem(
                &adr.path,
                at(&adr.path, "status"),
                format!(
                    "superseded-by is set but status is {}, not superseded",
                    adr.status
                ),
            ));
        }
    }
    for adr in &adrs {
        for r in &adr.relations {
            let words = r.words();
            match by_number.get(&r.adr).and_then(|g| g.first()) {
                None => problems.push(problem(
                    &adr.path,
                    at(&adr.path, "relations"),
                    format!("{words} {}, which does not exist", r.adr),
                )),
                Some(o) => {
                    if let Some(inverse) = r.kind.inverse()
                        && !has_relation(o, inverse, adr.number)
                    {
                        problems.push(problem(
                            &o.path,
                            at(&o.path, "relations"),
                            format!(
                                "ADR {} says `{words} {}`, but {} does not list {} {} in relations",
                                adr.number, r.adr, r.adr, inverse, adr.number
                            ),
                        ));
                    }
                }
            }
        }
    }

    for cycle in cycles(&adrs) {
        let first = cycle[0];
        let path = by_number
            .get(&first)
            .and_then(|g| g.first())
            .map_or_else(String::new, |a| a.path.clone());
        let chain: Vec<String> = cycle
            .iter()
            .chain(std::iter::once(&first))
            .map(u32::to_string)
            .collect();
        problems.push(problem(
            &path,
            at(&path, "supersedes"),
            format!(
                "supersession cycle: {} (each supersedes the next, in whole or in part); \
                 remove one link",
                chain.join(" → ")
            ),
        ));
    }

    let names: BTreeSet<String> = records
        .iter()
        .map(|(rel, _)| rel.rsplit('/').next().unwrap_or(rel).to_string())
        .collect();
    for (rel, text) in records {
        for link in mdlinks::record_links(text, DIR) {
            if !names.contains(&link.file) && !dir_files.contains(&link.file) {
                problems.push(problem(
                    rel,
                    Some(link.line),
                    format!(
                        "link to `{}` does not resolve: there is no {DIR}/{}",
                        link.target, link.file
                    ),
                ));
            }
        }
    }

    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    problems.dedup();
    Ok(problems)
}

fn has_relation(adr: &Adr, kind: Kind, other: AdrNumber) -> bool {
    let whole = match kind {
        Kind::Supersedes => adr.supersedes.contains(&other),
        Kind::SupersededBy => adr.superseded_by.contains(&other),
        _ => false,
    };
    whole
        || adr
            .relations
            .iter()
            .any(|r| r.kind == kind && r.adr == other)
}

/// Who supersedes whom, in whole or in part, from either side's record: new → olds.
fn supersede_edges(adrs: &[Adr]) -> BTreeMap<AdrNumber, BTreeSet<AdrNumber>> {
    let mut edges: BTreeMap<AdrNumber, BTreeSet<AdrNumber>> = BTreeMap::new();
    for a in adrs {
        for &old in &a.supersedes {
            edges.entry(a.number).or_default().insert(old);
        }
        for &new in &a.superseded_by {
            edges.entry(new).or_default().insert(a.number);
        }
        for r in &a.relations {
            match r.kind {
                Kind::PartlySupersedes | Kind::Supersedes => {
                    edges.entry(a.number).or_default().insert(r.adr);
                }
                Kind::PartlySupersededBy | Kind::SupersededBy => {
                    edges.entry(r.adr).or_default().insert(a.number);
                }
                _ => {}
            }
        }
    }
    edges
}

/// The chain by which `from` already supersedes `to` (directly or through others), if any.
pub fn supersede_path(adrs: &[Adr], from: AdrNumber, to: AdrNumber) -> Option<Vec<AdrNumber>> {
    let edges = supersede_edges(adrs);
    let mut seen = BTreeSet::from([from]);
    let mut stack = vec![vec![from]];
    while let Some(path) = stack.pop() {
        let last = *path.last().expect("paths are never empty");
        for &next in edges.get(&last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next);
            if next == to {
                return Some(longer);
            }
            if seen.insert(next) {
                stack.push(longer);
            }
        }
    }
    None
}

/// Every cycle of supersession, each once, starting at its lowest number.
fn cycles(adrs: &[Adr]) -> Vec<Vec<AdrNumber>> {
    let edges = supersede_edges(adrs);
    let mut found: BTreeSet<Vec<AdrNumber>> = BTreeSet::new();
    for &start in edges.keys() {
        // A cycle through `start` whose other members are all higher: found once, from its
        // lowest member.
        let mut stack = vec![vec![start]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = *path.last().expect("paths are never empty");
            for &next in edges.get(&last).into_iter().flatten() {
                if next == start {
                    found.insert(path.clone());
                } else if next > start && seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
    }
    found.into_iter().collect()
}

fn problem(path: &str, line: Option<usize>, message: String) -> Problem {
    Problem {
        path: path.to_string(),
        line,
        message,
    }
}
