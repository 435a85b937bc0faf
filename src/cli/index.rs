//! `cairn index [--rebuild|--verify]` and `cairn status`.

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::index::{Index, Kind};
use crate::output::{Next, Report, Status};

#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    /// Throw the index away and build it again from the files
    #[arg(long, conflicts_with = "verify")]
    pub rebuild: bool,
    /// Compare the index with one rebuilt from the files; exit 1 on a difference
    #[arg(long)]
    pub verify: bool,
}

pub fn index(ctx: &Ctx, args: IndexArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let started = std::time::Instant::now();
    let dir = repo.path(crate::index::DIR);
    let index = if args.rebuild {
        if !crate::index::writable(&dir) {
            return Err(Error::bad_input(format!(
                "cannot rebuild the index: {} cannot be written",
                dir.display()
            ))
            .with_fix("run it as a user who can write the repository; reads work without it"));
        }
        Index::open_at(&repo, &dir, true)?
    } else {
        // `cairn index` looks at every file, not at the glance alone (ADR 62).
        Index::open_thorough(&repo)?
    };
    if !args.verify {
        let r = &index.refresh;
        let human = format!(
            "index {}: {} over {} ({} added; {} appended, {} reindexed, {} removed) in {} ms",
            if r.read_only {
                "read as it is (read-only)"
            } else if r.rebuilt {
                "built"
            } else {
                "up to date"
            },
            crate::output::count(index.num_docs(), "document"),
            crate::output::count(index.files(), "file"),
            r.added,
            crate::output::count(r.appended, "file"),
            r.reindexed,
            r.removed,
            started.elapsed().as_millis()
        );
        let data = json!({ "documents": index.num_docs(), "files": index.files(), "refresh": r });
        return Ok(Report::new("index", data, human).warnings(r.warnings.clone()));
    }
    // The index built from the files to compare with: beside the index, or in a temporary
    // folder when the repository cannot be written.
    let temporary;
    let scratch = if index.read_only() {
        temporary = tempfile::Builder::new()
            .prefix("cairn-verify-")
            .tempdir()
            .map_err(|e| Error::io("a temporary folder", &e))?;
        temporary.path().join("index")
    } else {
        repo.derived_dir()
            .join(format!("index-verify-{}", std::process::id()))
    };
    let fresh = Index::build_scratch(&repo, &scratch);
    let result = fresh.and_then(|fresh| Ok((index.all_docs()?, fresh.all_docs()?)));
    let _ = std::fs::remove_dir_all(&scratch);
    let (have, want) = result?;
    let have_map: std::collections::BTreeMap<(&str, &str), &crate::index::Doc> = have
        .iter()
        .map(|d| ((d.file.as_str(), d.id.as_str()), d))
        .collect();
    let want_map: std::collections::BTreeMap<(&str, &str), &crate::index::Doc> = want
        .iter()
        .map(|d| ((d.file.as_str(), d.id.as_str()), d))
        .collect();
    let mut differences = Vec::new();
    for (key, d) in &want_map {
        match have_map.get(key) {
            None => differences
                .push(json!({ "id": key.1, "file": key.0, "problem": "missing from the index" })),
            Some(h) if h != d => differences
                .push(json!({ "id": key.1, "file": key.0, "problem": "differs from the files" })),
            Some(_) => {}
        }
    }
    for key in have_map.keys().filter(|k| !want_map.contains_key(*k)) {
        differences.push(
            json!({ "id": key.1, "file": key.0, "problem": "in the index but not in the files" }),
        );
    }
    if have.len() != have_map.len() {
        differences.push(
            json!({ "problem": format!("{}", crate::output::count(have.len() - have_map.len(), "duplicate document")) }),
        );
        // Each record the index holds more than once, by name: what to look for.
        let mut copies: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for d in &have {
            *copies.entry((d.file.as_str(), d.id.as_str())).or_default() += 1;
        }
        for ((file, id), n) in copies.into_iter().filter(|(_, n)| *n > 1) {
            differences.push(
                json!({ "id": id, "file": file, "problem": format!("{n} copies in the index") }),
            );
        }
    }
    let mut human = String::new();
    for d in &differences {
        human.push_str(&format!(
            "{}: {}\n",
            d["id"].as_str().unwrap_or("index"),
            d["problem"].as_str().unwrap_or("")
        ));
    }
    if differences.is_empty() {
        human.push_str(&format!(
            "index matches the files ({})\n",
            crate::output::count(want.len(), "document")
        ));
    }
    let status = if differences.is_empty() {
        Status::Ok
    } else {
        Status::NothingOrFailed
    };
    let mut report = Report::new(
        "index_verify",
        json!({ "documents": want.len(), "differences": differences }),
        human,
    )
    .warnings(index.refresh.warnings.clone())
    .status(status);
    if status != Status::Ok {
        report = report.next(Next::new(
            "cairn index --rebuild",
            "rebuild the index from the files",
        ));
    }
    Ok(report)
}

pub fn status(ctx: &Ctx) -> Result<Report> {
    let repo = ctx.repo()?;
    let index = ctx.index(&repo)?;
    let mut kinds = serde_json::Map::new();
    let mut human = format!("repository: {}\n", repo.root().display());
    let mut line = String::from("records:");
    let mut adr_files = json!(null);
    for k in Kind::ALL {
        let n = index.count("kind", k.as_str())?;
        kinds.insert(k.as_str().into(), json!(n));
        line.push_str(&format!(" {} {n}", k.as_str()));
        if k == Kind::Adr {
            let (files, broken) = crate::adr::unreadable(&repo)?;
            if files != n {
                line.push_str(&format!(" ({})", adr_files_note(files, &broken)));
            }
            adr_files = json!({ "files": files, "unreadable": broken });
        }
        line.push(',');
    }
    human.push_str(line.trim_end_matches(','));
    human.push('\n');
    // Observations only: a trivial turn card is held too (recalled only when asked), and
    // counted on its own.
    let held = index.count_all(&[("kind", "observation"), ("verdict", "hold")])?;
    let allowed = index.count_all(&[("kind", "observation"), ("verdict", "allow")])?;
    let trivial = index.count_all(&[("kind", "card"), ("verdict", "hold")])?;
    let stale = index.count("status", "stale")?;
    // Damaged JSONL lines, each by file and line (`cairn doctor` moves them aside).
    let damaged = crate::doctor::damaged_lines(&repo)?;
    let superseded_obs = {
        // ADRs can be superseded too; count observations only. A bad line in the observations
        // is reported below, not fatal here.
        match crate::store::load_all(&repo) {
            Ok((folded, _)) => folded
                .iter()
                .filter(|f| f.superseded_by.is_some() && f.state != crate::store::State::Deleted)
                .count(),
            Err(_) if !damaged.is_empty() => 0,
            Err(e) => return Err(e),
        }
    };
    let deleted = index.count("status", "deleted")?;
    let discarded: u64 = crate::telemetry::read(&repo)
        .iter()
        .filter(|e| e.component == "gate")
        .filter_map(|e| e.metadata.get("discarded").and_then(|v| v.as_u64()))
        .sum();
    human.push_str(&format!(
        "observations: {allowed} allowed, {held} held (recalled with --include-hold), {stale} stale, {superseded_obs} superseded, {deleted} deleted; {discarded} discarded by the gate\n"
    ));
    if trivial > 0 {
        human.push_str(&format!(
            "turn cards: {} held as trivial (recalled with --include-hold)\n",
            crate::output::count(trivial, "turn card")
        ));
    }
    let r = index.refresh();
    let freshness = if r.read_only && r.stale {
        "read-only and behind the files".to_string()
    } else if r.read_only {
        "read-only, as last built".to_string()
    } else if r.stale {
        "another process is updating it".to_string()
    } else if r.rebuilt {
        "built just now".to_string()
    } else if r.added + r.appended + r.reindexed + r.removed == 0 {
        "up to date".to_string()
    } else {
        format!(
            "brought up to date ({} appended, {} reindexed, {} removed)",
            crate::output::count(r.appended, "file"),
            r.reindexed,
            r.removed
        )
    };
    human.push_str(&format!(
        "index: {} over {}, {freshness}\n",
        crate::output::count(index.num_docs(), "document"),
        crate::output::count(index.files(), "file")
    ));
    if !damaged.is_empty() {
        human.push_str(&format!(
            "damaged lines: {} (run `cairn doctor` to move them aside)\n",
            damaged.len()
        ));
        for f in &damaged {
            human.push_str(&format!(
                "  {}:{}: {}\n",
                f.path,
                f.line.unwrap_or_default(),
                f.problem
            ));
        }
    }
    let data = json!({
        "root": repo.root(),
        "damaged_lines": damaged,
        "kinds": kinds,
        "adr_files": adr_files,
        "observations": { "allowed": allowed, "held": held, "trivial_cards": trivial, "stale": stale, "superseded": superseded_obs, "deleted": deleted, "discarded": discarded },
        "index": { "documents": index.num_docs(), "files": index.files(), "freshness": freshness, "refresh": r },
    });
    Ok(Report::new("status", data, human).warnings(r.warnings.clone()))
}

/// Why `status` counts fewer ADRs than `decisions/` has record files: the files that are not
/// readable as records, which the index leaves out.
fn adr_files_note(files: usize, broken: &[String]) -> String {
    let files = crate::output::count(files, "file");
    match broken {
        [] => files,
        [one] => format!("{files}: {one} is not readable as a record, see `cairn adr lint`"),
        many => format!(
            "{files}: {} are not readable as records, see `cairn adr lint`",
            many.len()
        ),
    }
}
