//! Architecture Decision Records: `decisions/NNNN-slug.md`.
//!
//! Each file opens with YAML frontmatter (`number`, `title`, `status`, `date`, `deciders`,
//! `tags`, `supersedes`, `superseded-by`, and any keys an import kept), then
//! `# N. Title` and the Context / Decision / Consequences sections. Status is one of six
//! canonical words. Numbers are never reused: the next one is one past the highest ever
//! committed, which git history tells ([`crate::git::folder_history`], cached in
//! `.cairn/state/`). Cross-references live in frontmatter and are kept consistent both ways.
//!
//! Changes edit frontmatter keys in place ([`frontmatter::set`]), so a person's comments,
//! extra keys and body are left byte for byte.
//!
//! A record file without cairn frontmatter (an adr-tools or MADR record in a repository that
//! adopted them) is read as it is ([`foreign`]), so listing, showing, lint and recall work
//! before `adr import --in-place` converts it; commands that change a record ask for the
//! conversion first. Relations other than full supersession live in `relations`
//! ([`relation`]). A record whose sections still hold the template's text is a draft:
//! `adr new` makes it `proposed`, and its template text is never indexed ([`sections`]).

pub mod foreign;
pub mod frontmatter;
pub mod import;
pub mod lint;
pub mod mdlinks;
pub mod relation;
pub mod sections;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use chrono::NaiveDate;
use serde::Serialize;
use yaml_serde::Value;

use crate::error::Error as CairnError;
use crate::files;
use crate::git;
use crate::repo::Repo;

/// The folder, relative to the repository root.
pub const DIR: &str = "decisions";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "unknown status `{0}`: use one of proposed, accepted, shipped, superseded, deprecated, rejected"
    )]
    UnknownStatus(String),
    #[error("no ADR numbered {0}")]
    NotFound(u32),
    #[error("{0}")]
    BadTitle(String),
    #[error("an ADR cannot supersede itself ({0})")]
    SelfSupersede(u32),
    #[error(
        "ADR {old} already supersedes ADR {new}{path}: {new} cannot also supersede {old}, \
         that would make a cycle"
    )]
    Cycle {
        old: AdrNumber,
        new: AdrNumber,
        path: String,
    },
    #[error(
        "{} has no cairn frontmatter (an adr-tools or MADR record): run `cairn adr import \
         --in-place` to convert the records, then retry",
        path
    )]
    NotConverted { path: String },
    #[error(transparent)]
    Other(#[from] CairnError),
}

impl From<Error> for CairnError {
    fn from(err: Error) -> Self {
        use crate::error::Kind;
        match err {
            Error::Other(e) => e,
            Error::NotFound(n) => CairnError::new(Kind::NotFound, format!("no ADR numbered {n}"))
                .with_fix("`cairn adr list` shows the numbers in use"),
            e @ Error::Malformed { .. } => CairnError::new(Kind::BadInput, e.to_string())
                .with_fix("correct the frontmatter by hand, then run `cairn adr lint`"),
            e => CairnError::new(Kind::BadInput, e.to_string()),
        }
    }
}

/// The canonical status words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Proposed,
    Accepted,
    Shipped,
    Superseded,
    Deprecated,
    Rejected,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Proposed,
        Status::Accepted,
        Status::Shipped,
        Status::Superseded,
        Status::Deprecated,
        Status::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Proposed => "proposed",
            Status::Accepted => "accepted",
            Status::Shipped => "shipped",
            Status::Superseded => "superseded",
            Status::Deprecated => "deprecated",
            Status::Rejected => "rejected",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = Error;
    /// Only the six canonical words, in any case.
    fn from_str(s: &str) -> Result<Self, Error> {
        let lower = s.trim().to_ascii_lowercase();
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == lower)
            .ok_or_else(|| Error::UnknownStatus(s.trim().to_string()))
    }
}

/// An ADR number.
pub type AdrNumber = u32;

/// The shape a record file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// cairn's YAML frontmatter.
    #[default]
    Cairn,
    /// adr-tools / Nygard: `# N. Title`, `Date:`, a `## Status` section.
    AdrTools,
    /// MADR: YAML-ish frontmatter without `number`, or bullet metadata.
    Madr,
}

/// One decision record as read from its file.
#[derive(Debug, Clone, Serialize)]
pub struct Adr {
    pub number: AdrNumber,
    pub title: String,
    /// As written; [`Adr::status`] reads it as a canonical word.
    pub status: String,
    pub date: String,
    pub deciders: Vec<String>,
    pub tags: Vec<String>,
    pub supersedes: Vec<AdrNumber>,
    pub superseded_by: Vec<AdrNumber>,
    /// Partial supersession, amendments, clarifications and other links, with their words.
    pub relations: Vec<relation::Relation>,
    /// Relative to the repository root.
    pub path: String,
    #[serde(skip)]
    pub body: String,
    #[serde(skip)]
    pub imported_from: Option<String>,
    /// The file name this record had before `cairn sync` moved it off a number the remote's
    /// record holds (`renumbered-from`).
    #[serde(skip)]
    pub renumbered_from: Option<String>,
    pub format: Format,
}

impl Adr {
    pub fn status(&self) -> Option<Status> {
        self.status.parse().ok()
    }
}

/// The number a file name starts with (`0007-use-tantivy.md` → 7).
pub fn number_of_file_name(name: &str) -> Option<AdrNumber> {
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || !name[digits.len()..].starts_with('-') {
        return None;
    }
    digits.parse().ok()
}

/// Whether a file in `decisions/` is meant to be an ADR (README.md and the like are not).
pub fn is_record_file(name: &str) -> bool {
    name.ends_with(".md") && name.as_bytes().first().is_some_and(u8::is_ascii_digit)
}

/// Whether a record's text has cairn frontmatter (a frontmatter block with a `number` key,
/// parseable or not: a broken cairn record is an error to report, not another shape).
pub fn is_cairn_text(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    frontmatter::split(text).is_some_and(|s| frontmatter::line_of(&s, "number").is_some())
}

/// The text recall indexes for a record: no template text, and nothing at all for a record
/// that is only its template.
pub fn indexed_text(adr: &Adr) -> Option<String> {
    sections::indexed_text(&adr.title, &adr.body)
}

/// Parses an ADR file's text, in cairn's shape or, without cairn frontmatter, as adr-tools or
/// MADR wrote it.
pub fn parse(path: &Path, rel: &str, text: &str) -> Result<Adr, Error> {
    if !is_cairn_text(text) {
        return foreign::read_record(path, rel, text);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let malformed = |line: usize, message: String| Error::Malformed {
        path: path.to_path_buf(),
        line,
        message,
    };
    let split = frontmatter::split(text)
        .ok_or_else(|| malformed(1, "no YAML frontmatter (a `---` block at the top)".into()))?;
    let map = frontmatter::parse(&split).map_err(|e| malformed(e.line, e.message))?;
    let line = |key: &str| frontmatter::line_of(&split, key).unwrap_or(split.first_line);
    let get = |key: &str| map.get(Value::String(key.to_string()));
    let number = match get("number") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| malformed(line("number"), "number must be a positive integer".into()))?,
        Some(_) => {
            return Err(malformed(
                line("number"),
                "number must be a positive integer".into(),
            ));
        }
        None => return Err(malformed(split.first_line, "missing key `number`".into())),
    };
    let string = |key: &str| -> Result<String, Error> {
        match get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(Value::Bool(b)) => Ok(b.to_string()),
            Some(Value::Null) | None => Ok(String::new()),
            Some(_) => Err(malformed(
                line(key),
                format!("`{key}` must be a single value"),
            )),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, Error> {
        match get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(malformed(
                        line(key),
                        format!("`{key}` must be a list of words"),
                    )),
                })
                .collect(),
            Some(_) => Err(malformed(line(key), format!("`{key}` must be a list"))),
        }
    };
    let numbers = |key: &str| -> Result<Vec<AdrNumber>, Error> {
        let bad = || malformed(line(key), format!("`{key}` must be a list of ADR numbers"));
        match get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Number(n)) => Ok(vec![
                n.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(bad)?,
            ]),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(bad)
                })
                .collect(),
            Some(_) => Err(bad()),
        }
    };
    let title = string("title")?;
    if title.trim().is_empty() {
        return Err(malformed(line("title"), "missing key `title`".into()));
    }
    let relations = match get("relations") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| {
                let bad = || {
                    malformed(
                        line("relations"),
                        format!(
                            "each of `relations` must be {{kind: K, adr: N, text: WORDS}} with K \
                             one of {}",
                            relation::Kind::ALL.map(relation::Kind::as_str).join(", ")
                        ),
                    )
                };
                let kind = item
                    .get("kind")
                    .and_then(Value::as_str)
                    .and_then(relation::Kind::parse)
                    .ok_or_else(bad)?;
                let adr = item
                    .get("adr")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(bad)?;
                let text = item
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                Ok(relation::Relation { kind, adr, text })
            })
            .collect::<Result<_, Error>>()?,
        Some(_) => {
            return Err(malformed(
                line("relations"),
                "`relations` must be a list".into(),
            ));
        }
    };
    Ok(Adr {
        number,
        title,
        status: string("status")?,
        date: string("date")?,
        deciders: strings("deciders")?,
        tags: strings("tags")?,
        supersedes: numbers("supersedes")?,
        superseded_by: numbers("superseded-by")?,
        relations,
        path: rel.to_string(),
        body: split.body.to_string(),
        imported_from: match get("imported-from") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        },
        renumbered_from: match get("renumbered-from") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        },
        format: Format::Cairn,
    })
}

/// Every `decisions/*.md` record file, sorted by name, as repository-relative paths.
pub fn record_files(repo: &Repo) -> Result<Vec<String>, Error> {
    let dir = repo.path(DIR);
    let read = match crate::files::read_dir_real(&dir) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(CairnError::io(dir.display(), &err).into()),
    };
    let mut names = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| CairnError::io(dir.display(), &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_record_file(&name) {
            names.push(format!("{DIR}/{name}"));
        }
    }
    names.sort();
    Ok(names)
}

/// Reads one record file.
pub fn load(repo: &Repo, rel: &str) -> Result<Adr, Error> {
    let path = repo.path(rel);
    let text = std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
    parse(&path, rel, &text)
}

/// The record files of `decisions/` that cannot be read as records (broken frontmatter, no
/// title…): the index leaves them out, so `cairn status` counts fewer ADRs than files.
pub fn unreadable(repo: &Repo) -> Result<(usize, Vec<String>), Error> {
    let files = record_files(repo)?;
    let broken = files
        .iter()
        .filter(|rel| load(repo, rel).is_err())
        .cloned()
        .collect();
    Ok((files.len(), broken))
}

/// Reads every record, failing on the first malformed one.
pub fn load_all(repo: &Repo) -> Result<Vec<Adr>, Error> {
    record_files(repo)?
        .iter()
        .map(|rel| load(repo, rel))
        .collect()
}

/// Reads every record: each one readable, and each malformed one's error apart.
pub fn load_each(repo: &Repo) -> Result<(Vec<Adr>, Vec<Error>), Error> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for rel in record_files(repo)? {
        match load(repo, &rel) {
            Ok(a) => good.push(a),
            Err(e) => bad.push(e),
        }
    }
    Ok((good, bad))
}

/// The record numbered `n` (the first by file name when a number is duplicated).
pub fn find(repo: &Repo, n: AdrNumber) -> Result<Adr, Error> {
    for rel in record_files(repo)? {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if number_of_file_name(name) == Some(n) {
            return load(repo, &rel);
        }
    }
    Err(Error::NotFound(n))
}

/// The history of `decisions/`, brought up to date from the cache in `.cairn/state/`.
pub fn history(repo: &Repo) -> Result<git::FolderHistory, Error> {
    let cache = repo
        .derived_dir()
        .join("state")
        .join("decisions-history.json");
    let known = files::read_optional(&cache)?.and_then(|t| serde_json::from_str(&t).ok());
    let fresh = git::folder_history(repo.root(), DIR, known)?;
    // The cache is derived: failing to write it costs only time next run.
    if let Ok(json) = serde_json::to_vec(&fresh) {
        let _ = files::write_atomic(&cache, &json);
    }
    Ok(fresh)
}

/// The next free number: one past the highest in the tree or ever committed.
pub fn next_number(repo: &Repo) -> Result<AdrNumber, Error> {
    let mut highest = 0;
    for rel in record_files(repo)? {
        if let Some(n) = number_of_file_name(rel.rsplit('/').next().unwrap_or(&rel)) {
            highest = highest.max(n);
        }
    }
    for name in history(repo)?.names.keys() {
        if let Some(n) = number_of_file_name(name) {
            highest = highest.max(n);
        }
    }
    Ok(highest + 1)
}

/// The file-name part of a title: lower-case words joined by `-`, at most 60 characters.
pub fn slug(title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.chars().count() > 60 {
        let cut: String = slug.chars().take(60).collect();
        slug = match cut.rfind('-') {
            Some(i) if i > 20 => cut[..i].to_string(),
            _ => cut,
        };
    }
    slug
}

/// Checks a title: one line, and nothing that reads as a path out of `decisions/`.
pub fn check_title(title: &str) -> Result<String, Error> {
    let title = title.trim();
    if title.is_empty() {
        return Err(Error::BadTitle("the title is empty".into()));
    }
    if title.chars().any(char::is_control) {
        return Err(Error::BadTitle("the title must be one line".into()));
    }
    if title.starts_with('/') || title.split(['/', '\\']).any(|part| part.trim() == "..") {
        return Err(Error::BadTitle(format!(
            "the title `{title}` reads as a path out of {DIR}/: a title names a decision, not a file"
        )));
    }
    if slug(title).is_empty() {
        return Err(Error::BadTitle(format!(
            "the title `{title}` has no letters or digits to name its file"
        )));
    }
    Ok(title.to_string())
}

/// What `adr new` is asked for.
#[derive(Debug, Clone)]
pub struct NewAdr {
    pub title: String,
    /// `None`: accepted when every section is given, else proposed (a draft).
    pub status: Option<Status>,
    pub tags: Vec<String>,
    pub deciders: Vec<String>,
    pub supersedes: Vec<AdrNumber>,
    /// The three sections' text; `None` leaves the skeleton's prompt.
    pub context: Option<String>,
    pub decision: Option<String>,
    pub consequences: Option<String>,
}

/// The text of a new record.
pub fn render(number: AdrNumber, new: &NewAdr, date: NaiveDate) -> String {
    format!(
        "---\nnumber: {number}\ntitle: {title}\nstatus: {status}\ndate: {date}\ndeciders: {deciders}\n\
         tags: {tags}\nsupersedes: {supersedes}\nsuperseded-by: []\n---\n# {number}. {heading}\n\n\
         ## Context\n\n{context}\n\n## Decision\n\n{decision}\n\n## Consequences\n\n{consequences}\n",
        context = section(&new.context, sections::PROMPTS[0].1),
        decision = section(&new.decision, sections::PROMPTS[1].1),
        consequences = section(&new.consequences, sections::PROMPTS[2].1),
        title = frontmatter::scalar(&new.title),
        status = new.status.unwrap_or(Status::Proposed),
        date = date.format("%Y-%m-%d"),
        deciders = frontmatter::string_list(&new.deciders),
        tags = frontmatter::string_list(&new.tags),
        supersedes = frontmatter::number_list(&new.supersedes),
        heading = new.title,
    )
}

fn section(text: &Option<String>, prompt: &str) -> String {
    match text.as_deref().map(str::trim) {
        Some(t) if !t.is_empty() => t.replace("\r\n", "\n"),
        _ => prompt.to_string(),
    }
}

/// The result of a change to records: what was written, for the commit.
#[derive(Debug, Default)]
pub struct Written {
    /// Repository-relative paths, in the order written.
    pub paths: Vec<String>,
    pub warnings: Vec<String>,
    /// For records edited in place: HEAD's content with the same edit, so a commit never
    /// takes in a person's uncommitted edit of the record (see [`crate::git::Change`]).
    pub edits: Vec<crate::git::Change>,
}

impl Written {
    /// What the commit holds: each edit as applied to HEAD, each other path as written.
    pub fn changes(&self) -> Vec<crate::git::Change> {
        self.paths
            .iter()
            .map(|p| {
                self.edits
                    .iter()
                    .rev()
                    .find(|c| c.path() == p)
                    .cloned()
                    .unwrap_or_else(|| crate::git::Change::File(p.clone()))
            })
            .collect()
    }
}

/// Creates a record (and marks the ones it supersedes). Run under the repository lock.
/// `before` is called with every path it will write, before the first write (the command
/// notes them as pending, so a kill before the commit leaves them to the next commit).
pub fn create(
    repo: &Repo,
    mut new: NewAdr,
    today: NaiveDate,
    before: import::BeforeWrites<'_>,
) -> Result<(Adr, Written), Error> {
    new.title = check_title(&new.title)?;
    new.tags = split_words(&new.tags);
    new.deciders = split_words(&new.deciders);
    let number = next_number(repo)?;
    let mut olds = Vec::new();
    for &old in &new.supersedes {
        if old == number {
            return Err(Error::SelfSupersede(old));
        }
        olds.push(find(repo, old)?);
    }
    let rel = format!("{DIR}/{number:04}-{}.md", slug(&new.title));
    let mut written = Written::default();
    let unfilled: Vec<&str> = sections::PROMPTS
        .iter()
        .zip([&new.context, &new.decision, &new.consequences])
        .filter(|(_, text)| text.as_deref().is_none_or(sections::is_unfilled))
        .map(|((name, _), _)| *name)
        .collect();
    match new.status {
        None if unfilled.is_empty() => new.status = Some(Status::Accepted),
        None => new.status = Some(Status::Proposed),
        Some(Status::Accepted | Status::Shipped) if !unfilled.is_empty() => {
            written.warnings.push(format!(
                "{} still hold the template's questions: the record is {} but says nothing \
                 there yet; fill them in before others rely on it",
                unfilled.join(", "),
                new.status.unwrap_or(Status::Accepted)
            ));
        }
        Some(_) => {}
    }
    let text = render(number, &new, today);
    let mut paths = vec![rel.clone()];
    paths.extend(olds.iter().map(|o| o.path.clone()));
    before(&paths, 1)?;
    files::write_atomic(&repo.path(&rel), text.as_bytes())?;
    crate::failpoint::failpoint("adr-new-after-write");
    written.paths.push(rel.clone());
    for old in olds {
        let (_, change) = mark_superseded(repo, &old, number)?;
        written.paths.push(old.path.clone());
        written.edits.push(change);
    }
    let adr = parse(&repo.path(&rel), &rel, &text)?;
    Ok((adr, written))
}

/// Sets frontmatter keys of one record in place and checks the result still parses. Returns
/// the record and what its commit holds: HEAD's content with the same keys set.
pub fn edit(
    repo: &Repo,
    rel: &str,
    keys: &[(&str, String)],
) -> Result<(Adr, crate::git::Change), Error> {
    let path = repo.path(rel);
    let text = std::fs::read_to_string(&path).map_err(|e| CairnError::io(path.display(), &e))?;
    if !is_cairn_text(&text) {
        return Err(Error::NotConverted {
            path: rel.to_string(),
        });
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    let new_text = set_keys(&text, keys).ok_or_else(|| Error::Malformed {
        path: path.clone(),
        line: 1,
        message: "no YAML frontmatter".into(),
    })?;
    let adr = parse(&path, rel, &new_text)?;
    if new_text != text {
        files::write_atomic(&path, new_text.as_bytes())?;
    }
    let committed = match crate::git::head_content(repo.root(), rel) {
        Ok(Some(head)) if head != text.as_bytes() => {
            set_keys(&String::from_utf8_lossy(&head), keys).unwrap_or_else(|| new_text.clone())
        }
        _ => new_text,
    };
    let change = crate::git::Change::Content {
        path: rel.to_string(),
        bytes: committed.into_bytes(),
    };
    Ok((adr, change))
}

/// `text` with frontmatter `keys` set, or `None` when it has no frontmatter.
fn set_keys(text: &str, keys: &[(&str, String)]) -> Option<String> {
    let split = frontmatter::split(text)?;
    let mut yaml = split.yaml.to_string();
    for (key, value) in keys {
        yaml = frontmatter::set(&yaml, key, value);
    }
    Some(format!("---\n{yaml}---\n{}", split.body))
}

fn mark_superseded(
    repo: &Repo,
    old: &Adr,
    by: AdrNumber,
) -> Result<(Adr, crate::git::Change), Error> {
    let mut by_list = old.superseded_by.clone();
    if !by_list.contains(&by) {
        by_list.push(by);
    }
    edit(
        repo,
        &old.path,
        &[
            ("status", Status::Superseded.to_string()),
            ("superseded-by", frontmatter::number_list(&by_list)),
        ],
    )
}

/// Sets a record's status.
pub fn set_status(repo: &Repo, n: AdrNumber, status: Status) -> Result<(Adr, Written), Error> {
    let adr = find(repo, n)?;
    let (updated, change) = edit(repo, &adr.path, &[("status", status.to_string())])?;
    let mut written = Written {
        paths: vec![adr.path.clone()],
        warnings: Vec::new(),
        edits: vec![change],
    };
    if status == Status::Superseded && updated.superseded_by.is_empty() {
        written.warnings.push(format!(
            "ADR {n} is superseded by nothing: `cairn adr supersede {n} NEW` records by what"
        ));
    }
    Ok((updated, written))
}

/// Records that `new` supersedes `old`, in both files.
pub fn supersede(
    repo: &Repo,
    old: AdrNumber,
    new: AdrNumber,
) -> Result<(Adr, Adr, Written), Error> {
    if old == new {
        return Err(Error::SelfSupersede(old));
    }
    let old_adr = find(repo, old)?;
    let new_adr = find(repo, new)?;
    for adr in [&old_adr, &new_adr] {
        if adr.format != Format::Cairn {
            return Err(Error::NotConverted {
                path: adr.path.clone(),
            });
        }
    }
    if let Some(path) = lint::supersede_path(&load_all(repo)?, old, new) {
        let chain: Vec<String> = path.iter().map(u32::to_string).collect();
        return Err(Error::Cycle {
            old,
            new,
            path: if path.len() > 2 {
                format!(" ({})", chain.join(" supersedes "))
            } else {
                String::new()
            },
        });
    }
    let (old_updated, old_change) = mark_superseded(repo, &old_adr, new)?;
    let mut list = new_adr.supersedes.clone();
    if !list.contains(&old) {
        list.push(old);
    }
    let (new_updated, new_change) = edit(
        repo,
        &new_adr.path,
        &[("supersedes", frontmatter::number_list(&list))],
    )?;
    let written = Written {
        paths: vec![old_adr.path, new_adr.path],
        warnings: Vec::new(),
        edits: vec![old_change, new_change],
    };
    Ok((old_updated, new_updated, written))
}

/// `a, b` and repeated flags alike become a clean list.
fn split_words(items: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty() && seen.insert(s.to_string()))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        let cases = [
            ("Use tantivy for the index", "use-tantivy-for-the-index"),
            ("../../etc/passwd", "etc-passwd"),
            ("  Café: naïve   choices!  ", "café-naïve-choices"),
            ("A/B testing", "a-b-testing"),
        ];
        for (title, want) in cases {
            assert_eq!(slug(title), want, "{title}");
        }
        assert!(slug(&"word ".repeat(40)).chars().count() <= 60);
    }

    #[test]
    fn titles_that_escape_are_refused() {
        assert!(check_title("../../etc/passwd").is_err());
        assert!(check_title("/etc/passwd").is_err());
        assert!(check_title("two\nlines").is_err());
        assert!(check_title("!!!").is_err());
        assert!(check_title("Use A/B testing").is_ok());
    }

    #[test]
    fn status_is_canonical_only() {
        assert_eq!("Accepted".parse::<Status>().unwrap(), Status::Accepted);
        assert!("approved".parse::<Status>().is_err());
        assert!("superseded by 3".parse::<Status>().is_err());
    }

    #[test]
    fn rendered_record_parses_back() {
        let new = NewAdr {
            title: "Use yaml: the \"maintained\" one".into(),
            status: Some(Status::Accepted),
            tags: vec!["yaml".into(), "deps".into()],
            deciders: vec!["ana".into()],
            supersedes: vec![3],
            context: None,
            decision: Some("Use yaml_serde.\n\nIt is maintained.".into()),
            consequences: None,
        };
        let date = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let text = render(7, &new, date);
        let adr = parse(Path::new("x.md"), "decisions/0007-x.md", &text).unwrap();
        assert_eq!(adr.number, 7);
        assert_eq!(adr.title, new.title);
        assert_eq!(adr.status(), Some(Status::Accepted));
        assert_eq!(adr.date, "2026-11-30");
        assert_eq!(adr.tags, ["yaml", "deps"]);
        assert_eq!(adr.supersedes, [3]);
        assert!(adr.superseded_by.is_empty());
        assert!(adr.body.starts_with("# 7. Use yaml"));
        assert!(
            adr.body
                .contains("## Decision\n\nUse yaml_serde.\n\nIt is maintained.\n\n## Consequences")
        );
        assert!(adr.body.contains("## Context\n\nWhat is the issue"));
    }

    #[test]
    fn file_numbers() {
        assert_eq!(number_of_file_name("0007-use-tantivy.md"), Some(7));
        assert_eq!(number_of_file_name("12-x.md"), Some(12));
        assert_eq!(number_of_file_name("README.md"), None);
        assert_eq!(number_of_file_name("0007.md"), None);
    }
}
