//! `cairn forget QUERY|ID… [--yes] [--dry-run] [--rewrite-history]`, `cairn forget --redact`,
//! and `cairn forget --rewrite-history --replace-text FILE`.
//!
//! The order of a run is what makes a killed one finish on the next: the replace-text file,
//! the derived files scrubbed and `.cairn/forget.json` first; then the paths noted as pending,
//! the tombstones appended, the record files rewritten one by one, one commit; then the
//! proposal refs, the index (re-indexed, segments with deleted documents merged) and the vector
//! rows; last the state removed. A rerun finds what is left, commits what is pending and
//! finishes the cleanup (see [`crate::forget::derived`]).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::json;

use super::{Ctx, failpoint};
use crate::error::{Error, Kind, Result};
use crate::forget::{self, Found, What, derived};
use crate::index::{Index, vectors};
use crate::output::{Next, Report};
use crate::repo::Repo;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Ids of records (slog entry, observation, card, episode, mem-… or MEMORY.md:LINE,
    /// proposal, note or its path, library document or its path, URL or a chunk's id), or
    /// text to match exactly in any case
    pub what: Vec<String>,
    /// Forget without asking (required when there is no terminal to ask on)
    #[arg(long)]
    pub yes: bool,
    /// List what would be forgotten; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Apply the [redact] patterns of cairn.toml and the built-in ones to every stored record
    #[arg(long, conflicts_with = "what")]
    pub redact: bool,
    /// Also rewrite git history with the text replaced, after a backup ref of every ref moved
    /// (refs/cairn/backup/forget-STAMP/…)
    #[arg(long)]
    pub rewrite_history: bool,
    /// With --rewrite-history alone: the replace-text file to rewrite history with (lines
    /// `TEXT==>REPLACEMENT`, as git filter-repo reads them)
    #[arg(long, value_name = "FILE", requires = "rewrite_history", conflicts_with_all = ["what", "redact"])]
    pub replace_text: Option<PathBuf>,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    if let Some(file) = &args.replace_text {
        return rewrite_only(ctx, &args, file);
    }
    if args.what.is_empty() && !args.redact {
        return Err(Error::bad_input("nothing to forget").with_fix(
            "name record ids or a text to forget, `--redact` to apply the [redact] patterns, or `--rewrite-history --replace-text FILE`",
        ));
    }
    let repo = ctx.repo()?;
    let _lock = if args.dry_run {
        None
    } else {
        Some(repo.lock()?)
    };
    let mut warnings = Vec::new();
    if !args.dry_run && repo.path(crate::journal::FILE).exists() {
        // A decision left half done is finished first: its journal may hold the text.
        let (_, finished) = ctx.finish_interrupted(&repo)?;
        warnings.extend(finished);
    }
    let left = if args.dry_run {
        None
    } else {
        derived::load_state(&repo)
    };
    let work = if args.redact {
        redact_work(&repo, args.dry_run)?
    } else {
        forget_work(ctx, &repo, &args.what, args.dry_run, &mut warnings)?
    };
    let listing = listing(&work.found);
    // An agent's own memory stays where the agent keeps it (ADR 136): said, never deleted.
    for (agent, place) in super::agent_memories::agent_copies(
        &repo,
        work.found
            .iter()
            .filter(|f| f.kind == forget::What::Observation)
            .map(|f| f.id.as_str()),
    )? {
        warnings.push(format!(
            "{agent} keeps its own copy at {place}: cairn forgets only its record (delete it there if it should go)"
        ));
    }
    if work.found.is_empty() && left.is_none() {
        let nothing = if args.redact {
            "no stored record holds a secret the patterns find".to_string()
        } else {
            format!("nothing matches {}", quoted(&args.what))
        };
        return Ok(Report::new(
            "forget",
            json!({"forgotten": [], "dry_run": args.dry_run, "warnings": warnings}),
            "",
        )
        .empty_when(true, nothing)
        .warnings(warnings));
    }
    // --redact keeps each record, with its secrets replaced: it forgets no record.
    let verb = if args.redact {
        "would redact the secrets in"
    } else {
        "would forget"
    };
    if args.dry_run {
        let human = format!(
            "{verb} {}:\n{listing}",
            crate::output::count(work.found.len(), "record")
        );
        return Ok(Report::new(
            "forget",
            json!({"forgotten": work.found, "dry_run": true, "warnings": warnings}),
            human,
        )
        .warnings(warnings));
    }
    if !work.found.is_empty() && !args.yes {
        if !ctx.interactive {
            crate::output::notice(&format!(
                "{verb} {}:\n{listing}",
                crate::output::count(work.found.len(), "record")
            ));
            return Err(Error::bad_input(if args.redact {
                "no terminal to confirm on: nothing redacted"
            } else {
                "no terminal to confirm on: nothing forgotten"
            })
            .with_fix(if args.redact {
                "run again with --yes to redact these records (--dry-run lists them)"
            } else {
                "run again with --yes to forget these records (--dry-run lists them)"
            }));
        }
        crate::review::prompt::show(&format!(
            "{}:\n{listing}",
            crate::output::count(work.found.len(), "record")
        ))?;
        if !crate::review::prompt::confirm(if args.redact {
            "redact their secrets, in the files, the index and the vectors"
        } else {
            "forget them, from the files, the index and the vectors"
        })? {
            return Ok(Report::new(
                "forget",
                json!({"forgotten": [], "dry_run": false, "warnings": warnings}),
                "",
            )
            .empty_when(true, "nothing forgotten")
            .warnings(warnings));
        }
    }
    let done = apply(ctx, &repo, work, left, args.redact, &mut warnings)?;
    let mut report = done.report(ctx, &repo, warnings)?;
    if args.rewrite_history {
        if let Some(rel) = &done.replace {
            let rewritten = rewrite(&repo, &repo.path(rel), &done.stamp)?;
            report.human.push_str(&rewritten.0);
            if let Some(data) = report.data.as_object_mut() {
                data.insert("rewritten".into(), rewritten.1);
            }
        } else {
            report
                .warnings
                .push("no text to replace in history: nothing rewritten".into());
        }
    }
    Ok(report)
}

fn quoted(args: &[String]) -> String {
    args.iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a run found and would write.
struct Work {
    found: Vec<Found>,
    writes: Vec<(String, Option<Vec<u8>>)>,
    tombstone_ids: BTreeSet<String>,
    literals: Vec<String>,
    /// Index documents whose text goes (their vector rows go once no live document has it).
    hashes: BTreeSet<u64>,
    memory: bool,
    /// The rewrites only took out the records' own lines: the index may drop their documents
    /// instead of reading the files again.
    only_removed: bool,
}

fn forget_work(
    ctx: &Ctx,
    repo: &Repo,
    what: &[String],
    dry_run: bool,
    warnings: &mut Vec<String>,
) -> Result<Work> {
    // A path given as the shell completes it (relative to here, or absolute) names a note or a
    // library document as the repository writes it.
    let mut args: Vec<String> = what.to_vec();
    let mut named: Vec<(String, String)> = Vec::new();
    for a in what {
        let path = ctx.cwd.join(a);
        if path.is_file()
            && let Ok(real) = path.canonicalize()
        {
            let form = crate::library::source_path(repo, &real);
            if form != *a && !args.contains(&form) {
                args.push(form.clone());
                named.push((a.clone(), form));
            }
        }
    }
    let mut m = forget::find(repo, &args, ctx.now)?;
    // A path matched in either form is not unmatched in the other.
    for (typed, form) in &named {
        if !m.unmatched.contains(typed) || !m.unmatched.contains(form) {
            m.unmatched.retain(|u| u != typed);
        }
        m.unmatched.retain(|u| u != form);
    }
    for u in &m.unmatched {
        warnings.push(format!("nothing matches {u:?}"));
    }
    for rel in &m.adr_names {
        warnings.push(format!(
            "{rel}: its file name holds the text too; rename it by hand (`git mv`) and fix the \
             links to it"
        ));
    }
    let plan = forget::plan(repo, &m.found)?;
    for p in &plan.kept_documents {
        warnings.push(format!(
            "{p}: the library document itself stays where it is (it was added without --copy, so it is not cairn's); delete it by hand if it must go"
        ));
    }
    let indexed = m.found.iter().any(|f| f.kind != What::Proposal);
    let mut hashes = BTreeSet::new();
    if indexed && !dry_run {
        let index = Index::open(repo)?;
        for f in &m.found {
            if f.kind == What::Library {
                // A document's chunks are its documents in the index.
                for d in index.docs_of_file(&crate::library::cache_rel(&f.id))? {
                    hashes.insert(vectors::text_hash(&d.text));
                }
            } else if let Some(d) = index.doc(&f.id)? {
                hashes.insert(vectors::text_hash(&d.text));
            }
        }
    }
    Ok(Work {
        found: m.found,
        writes: plan.writes,
        tombstone_ids: plan.ids,
        literals: m.literals,
        hashes,
        memory: plan.memory,
        only_removed: !plan.others,
    })
}

/// `--redact`: every string of every record redacted with the configured patterns.
fn redact_work(repo: &Repo, dry_run: bool) -> Result<Work> {
    let redactor = crate::redact::Redactor::configured(&repo.config.redact.patterns)
        .map_err(|e| Error::new(Kind::Config, format!("cairn.toml [redact]: {e}")))?;
    let r = forget::redact::redact_all(repo, &redactor)?;
    let mut hashes = BTreeSet::new();
    if !r.writes.is_empty() && !dry_run {
        let index = Index::open(repo)?;
        for (rel, _) in &r.writes {
            for d in index.docs_of_file(rel)? {
                hashes.insert(vectors::text_hash(&d.text));
            }
        }
    }
    Ok(Work {
        found: r.found,
        writes: r.writes,
        tombstone_ids: BTreeSet::new(),
        literals: r.secrets,
        hashes,
        memory: r.memory,
        only_removed: false,
    })
}

/// What a run did.
struct Done {
    found: Vec<Found>,
    ids: BTreeSet<String>,
    commit: Option<crate::git::Committed>,
    stamp: String,
    replace: Option<String>,
    scrubbed: Vec<String>,
    segments: usize,
    rows: usize,
    refs: crate::reflect::Synced,
    /// The records were kept, redacted (--redact), not forgotten.
    redacted: bool,
}

fn apply(
    ctx: &Ctx,
    repo: &Repo,
    work: Work,
    left: Option<derived::State>,
    redact: bool,
    warnings: &mut Vec<String>,
) -> Result<Done> {
    let left = left.unwrap_or_default();
    let stamp = if left.stamp.is_empty() {
        ctx.now.format("%Y%m%dT%H%M%SZ").to_string()
    } else {
        left.stamp.clone()
    };
    // The replace-text file first: a rerun by id after a crash no longer finds the text.
    let mut lines: BTreeSet<String> = BTreeSet::new();
    if let Some(rel) = &left.replace
        && let Some(text) = crate::files::read_optional(&repo.path(rel))?
    {
        lines.extend(text.lines().map(str::to_string));
    }
    lines.extend(
        forget::replace_text(&work.literals)
            .lines()
            .map(str::to_string),
    );
    let replace = if lines.is_empty() {
        None
    } else {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        Some(derived::write_replace(repo, &stamp, &text)?)
    };
    let scrubbed = derived::scrub(repo, &work.literals)?;
    let mut ids = left.ids.clone();
    ids.extend(work.found.iter().map(|f| f.id.clone()));
    let mut hashes = left.hashes.clone();
    hashes.extend(&work.hashes);
    let state = derived::State {
        stamp: stamp.clone(),
        ids: ids.clone(),
        hashes,
        replace: replace.clone(),
        memory: left.memory || work.memory,
    };
    derived::save_state(repo, &state)?;

    let known = forget::tombstones(repo)?;
    let tombstones = forget::tombstone_lines(&known, &work.tombstone_ids, ctx.now);
    let mut paths: Vec<String> = work.writes.iter().map(|(p, _)| p.clone()).collect();
    if !tombstones.is_empty() {
        paths.push(forget::TOMBSTONES.to_string());
    }
    let verb = if redact { "forget: redact" } else { "forget:" };
    let subject = format!("{verb} {}", crate::output::count(ids.len(), "record"));
    let trailer = ids.iter().cloned().collect::<Vec<_>>().join(" ");
    let message = super::message(&subject, &[("Cairn-Forgotten", trailer)]);
    let pending = super::Work::rerun("forget", "");
    ctx.begin_writes(repo, &pending, &paths, Some(&message))?;
    if !tombstones.is_empty() {
        let mut bytes = Vec::new();
        for l in &tombstones {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        let path = repo.path(forget::TOMBSTONES);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), &e))?;
        }
        crate::files::append_lines(&path, &bytes, &repo.recovered_dir())?;
    }
    failpoint("forget-tombstones");
    let mut old_lengths = Vec::new();
    for (i, (rel, bytes)) in work.writes.iter().enumerate() {
        let path = repo.path(rel);
        if let Ok(meta) = std::fs::metadata(&path) {
            old_lengths.push((rel.clone(), meta.len()));
        }
        match bytes {
            Some(b) => crate::files::write_atomic(&path, b)?,
            None => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(path.display(), &e)),
            },
        }
        if i == 0 {
            failpoint("forget-file");
        }
    }
    failpoint("forget-before-commit");
    let commit = ctx.commit_with_pending(repo, &pending, &paths, &message)?;
    failpoint("forget-before-cleanup");
    // Chunk files of documents the manifest no longer names (derived, but they hold the text).
    let chunks = crate::library::drop_orphans(repo)?;

    // Pending proposals' refs hold MEMORY.md as HEAD had it: made again from the new HEAD.
    let identity = crate::git::Identity {
        fallback_name: &repo.config.git.fallback_name,
        fallback_email: &repo.config.git.fallback_email,
    };
    let committing = !ctx.no_commit && repo.config.git.commit;
    if state.memory && !committing {
        warnings.push(
            "MEMORY.md was not committed: the refs of pending proposals still hold HEAD's, with the entry; after committing, delete refs/cairn/proposals/* and run `cairn reflect` to make them again".into(),
        );
    }
    if state.memory && committing {
        let all = crate::git::proposal_refs(repo.root())?;
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        crate::git::delete_proposal_refs(repo.root(), &all)?;
    }
    let refs = crate::reflect::sync_refs(repo, &identity)?;
    for f in &refs.failed {
        warnings.push(format!("proposal ref not made again: {f}"));
    }

    // The index first takes in the rewritten files, then loses the deleted documents for
    // real; the vector rows of texts no live document has go last.
    if work.only_removed && !work.writes.is_empty() {
        let ids: Vec<String> = state.ids.iter().cloned().collect();
        Index::drop_documents(repo, &ids, &old_lengths)?;
    }
    let mut index = Index::open(repo)?;
    warnings.extend(index.refresh.warnings.clone());
    let mut scrubbed = scrubbed;
    scrubbed.extend(chunks);
    let segments = index.purge_deleted()?;
    let dead = derived::dead_hashes(&index, &state.hashes);
    drop(index);
    let rows = vectors::remove_rows(&repo.path(".cairn/vectors"), &dead)?;
    derived::clear_state(repo)?;
    Ok(Done {
        found: work.found,
        ids,
        commit,
        stamp,
        replace,
        scrubbed,
        segments,
        rows,
        refs,
        redacted: redact,
    })
}

/// The records found, grouped by kind, one a line.
fn listing(found: &[Found]) -> String {
    let mut out = String::new();
    let mut last = None;
    for f in found {
        if last != Some(f.kind) {
            let n = found.iter().filter(|x| x.kind == f.kind).count();
            out.push_str(&format!("  {} ({n}):\n", f.kind.as_str()));
            last = Some(f.kind);
        }
        out.push_str(&format!("    {}  {}  {}\n", f.at, f.id, f.text));
    }
    out
}

impl Done {
    fn report(&self, ctx: &Ctx, repo: &Repo, mut warnings: Vec<String>) -> Result<Report> {
        let mut human = format!(
            "{} {} ({}):\n{}",
            if self.redacted {
                "redacted the secrets in"
            } else {
                "forgot"
            },
            crate::output::count(self.ids.len(), "record"),
            ctx.short(&self.commit),
            listing(&self.found)
        );
        human.push_str(&format!(
            "index: {} with deleted documents rewritten; vectors: {} removed",
            crate::output::count(self.segments, "segment"),
            crate::output::count(self.rows, "row"),
        ));
        if !self.scrubbed.is_empty() {
            human.push_str(&format!("; scrubbed {}", self.scrubbed.join(", ")));
        }
        human.push('\n');
        let needles: Vec<Vec<u8>> = match &self.replace {
            Some(rel) => {
                let text = crate::files::read_optional(&repo.path(rel))?.unwrap_or_default();
                forget::parse_replace_text(&text)
                    .map_err(Error::bad_input)?
                    .into_iter()
                    .map(|(from, _)| from)
                    .collect()
            }
            None => Vec::new(),
        };
        let holding = crate::git::commits_holding(repo.root(), &needles)?;
        let (history, commands) = history_advice(repo, &holding, self.replace.as_deref());
        human.push_str(&history);
        if self.commit.is_none() && !ctx.no_commit && repo.config.git.commit {
            warnings.push("nothing left to commit".into());
        }
        let mut report = Report::new(
            "forget",
            json!({
                "forgotten": self.found,
                "ids": self.ids,
                "commit": self.commit.as_ref().map(|c| c.id.clone()),
                "dry_run": false,
                "index_segments_rewritten": self.segments,
                "vector_rows_removed": self.rows,
                "scrubbed": self.scrubbed,
                "proposal_refs": {"made": self.refs.made, "deleted": self.refs.deleted},
                "history": {
                    "commits": holding,
                    "replace_text": self.replace.as_ref().map(|r| repo.path(r).display().to_string()),
                    "commands": commands,
                },
                "stamp": self.stamp,
                "warnings": warnings,
            }),
            human,
        )
        .warnings(warnings);
        if let Some(c) = commands.last() {
            report = report.next(Next::new(
                c.clone(),
                "rewrite the earlier commits that still hold the text (after a backup ref)",
            ));
        }
        Ok(report)
    }
}

/// Whether git filter-repo can be run here.
fn filter_repo_installed() -> bool {
    std::process::Command::new("git")
        .args(["filter-repo", "--version"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The commits listed, the commands that rewrite them, and what that means for clones.
fn history_advice(
    repo: &Repo,
    holding: &[crate::git::Holding],
    replace: Option<&str>,
) -> (String, Vec<String>) {
    let mut out = String::new();
    if holding.is_empty() {
        out.push_str("history: no earlier commit holds the text\n");
        if let Some(rel) = replace {
            out.push_str(&format!(
                "delete the replace-text file when you no longer need it: rm {}\n",
                repo.path(rel).display()
            ));
        }
        return (out, Vec::new());
    }
    out.push_str(&format!(
        "history: {} still {} the text:\n",
        crate::output::count(holding.len(), "earlier commit"),
        if holding.len() == 1 { "holds" } else { "hold" }
    ));
    for h in holding {
        let mut what = h.paths.join(", ");
        if h.message {
            what = if what.is_empty() {
                "its message".into()
            } else {
                format!("{what}, its message")
            };
        }
        out.push_str(&format!(
            "  {} {} {} ({what})\n",
            h.commit, h.date, h.subject
        ));
    }
    let Some(rel) = replace else {
        return (out, Vec::new());
    };
    let file = repo.path(rel).display().to_string();
    let mut commands = Vec::new();
    if filter_repo_installed() {
        commands.push(format!(
            "git filter-repo --replace-text {file} --replace-message {file} --force"
        ));
    }
    commands.push(format!(
        "cairn forget --rewrite-history --replace-text {file}"
    ));
    out.push_str("to rewrite them (run in the repository, or in each copy to clean):\n");
    for c in &commands {
        out.push_str(&format!("  {c}\n"));
    }
    out.push_str(&format!(
        "what a rewrite means: every commit from the first holding the text gets a new id. \
The remote needs a force push (git push --force --all && git push --force --tags). Every \
other clone must re-clone, or fetch and reset hard (git fetch && git reset --hard \
origin/BRANCH), after saving its unpushed work; a clone that pushes its old commits brings \
the text back. cairn's rewrite keeps the old tips in refs/cairn/backup/forget-STAMP/…: once \
the result is checked, delete them (git for-each-ref --format='delete %(refname)' \
refs/cairn/backup/ | git update-ref --stdin) and prune (git reflog expire --expire=now --all \
&& git gc --prune=now). Delete the replace-text file afterwards, it holds the text: rm {file}\n"
    ));
    (out, commands)
}

/// Rewrites history with the replacements of `file`; (human text, data).
fn rewrite(
    repo: &Repo,
    file: &std::path::Path,
    stamp: &str,
) -> Result<(String, serde_json::Value)> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file.display(), &e))?;
    let replacements = forget::parse_replace_text(&text)
        .map_err(|e| Error::bad_input(format!("{}: {e}", file.display())))?;
    if replacements.is_empty() {
        return Err(Error::bad_input(format!(
            "{}: no replacement in it",
            file.display()
        )));
    }
    let backup = format!("refs/cairn/backup/forget-{stamp}");
    let identity = crate::git::Identity {
        fallback_name: &repo.config.git.fallback_name,
        fallback_email: &repo.config.git.fallback_email,
    };
    let done = crate::git::rewrite_history(repo.root(), &replacements, &backup, &identity)?;
    let mut human = format!(
        "history rewritten: {}, {} moved",
        crate::output::count(done.commits, "commit"),
        crate::output::count(done.refs.len(), "ref")
    );
    if !done.backups.is_empty() {
        human.push_str(&format!("; old tips kept under {backup}/"));
    }
    human.push('\n');
    for (name, old, new) in &done.refs {
        human.push_str(&format!("  {name}: {} -> {}\n", &old[..8], &new[..8]));
    }
    if done.head_tree_changed {
        human.push_str(
            "the checked-out commit changed: the working tree still holds the old text; run `git reset --hard` after saving any uncommitted work\n",
        );
    }
    let still = crate::git::commits_holding(
        repo.root(),
        &replacements
            .iter()
            .map(|(f, _)| f.clone())
            .collect::<Vec<_>>(),
    )?;
    if still.is_empty() {
        human.push_str("no commit reachable from a branch, tag or cairn ref holds the text now (the backup refs still do)\n");
    }
    Ok((human, serde_json::to_value(&done).expect("plain data")))
}

/// `--rewrite-history --replace-text FILE` alone: a copy (or the repository) rewritten.
fn rewrite_only(ctx: &Ctx, args: &Args, file: &std::path::Path) -> Result<Report> {
    let repo = ctx.repo()?;
    let file = if file.is_absolute() {
        file.to_path_buf()
    } else {
        ctx.cwd.join(file)
    };
    if !args.yes {
        if !ctx.interactive {
            return Err(Error::bad_input(
                "no terminal to confirm a history rewrite on: nothing rewritten",
            )
            .with_fix("run again with --yes to rewrite history (a backup ref of every ref moved is written first)"));
        }
        if !crate::review::prompt::confirm(
            "rewrite every commit of every branch and tag with these texts replaced",
        )? {
            return Ok(Report::new("forget", json!({"rewritten": null}), "")
                .empty_when(true, "nothing rewritten"));
        }
    }
    let _lock = repo.lock()?;
    let stamp = ctx.now.format("%Y%m%dT%H%M%SZ").to_string();
    let (human, data) = rewrite(&repo, &file, &stamp)?;
    Ok(Report::new("forget", json!({"rewritten": data}), human))
}
