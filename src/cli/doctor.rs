//! `cairn doctor`.

use serde_json::json;

use super::Ctx;
use crate::error::Result;
use crate::output::{Report, Status};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Report only; repair nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

pub fn run(ctx: &Ctx, args: Args) -> Result<Report> {
    let repo =
        crate::repo::Repo::discover_as_is(ctx.repo_arg.as_deref(), &ctx.cwd, super::default_repo)?;
    let repair = !args.dry_run;
    // A `.cairn` that is a link or holds one: named with its fix, and nothing else is done,
    // since every other check reads or writes there (ADR 66).
    let derived = crate::doctor::derived_findings(&repo);
    if !derived.is_empty() {
        let mut human = String::new();
        for f in &derived {
            human.push_str(&format!("problem: {}: {}\n", f.path, f.problem));
        }
        let data = json!({ "root": repo.root(), "findings": derived, "unresolved": derived.len(), "commit": null });
        return Ok(Report::new("doctor", data, human).status(Status::NothingOrFailed));
    }
    let _lock = if repair { Some(repo.lock()?) } else { None };
    // A decision a killed triage or review left half done (ADR 31).
    let interrupted = repo.path(crate::journal::FILE).exists();
    let mut finished = if repair {
        ctx.finish_interrupted(&repo)?.1
    } else if interrupted {
        vec![format!(
            "a decision was interrupted before its commit ({}): `cairn doctor` finishes it",
            crate::journal::FILE
        )]
    } else {
        Vec::new()
    };
    // Writes a killed command left uncommitted (.cairn/pending.json), each committed under
    // the message of the command that wrote it.
    let left = super::pending::left(&repo);
    if !repair {
        for e in &left {
            let subject = e.message.as_deref().and_then(|m| m.lines().next());
            finished.push(format!(
                "{} was interrupted before its commit ({}): its rerun or `cairn doctor` commits {}",
                if e.command.is_empty() {
                    "a command"
                } else {
                    e.command.as_str()
                },
                subject.unwrap_or("no message noted"),
                crate::output::count(e.paths.len(), "file")
            ));
        }
    }
    let interrupted = interrupted || !left.is_empty();
    let (mut findings, changed) = crate::doctor::check(&repo, repair)?;
    findings.extend(agent_findings(ctx));
    // After the check, which names (and finishes) a commit cut short.
    if repair {
        finished.extend(ctx.finish_all_pending(&repo)?);
    }
    // A `git revert` of a decision that git's union merge left half done (ADR 106): the
    // proposal made pending again, one commit.
    let undone = crate::review::reverted::undone(&repo)?;
    if repair && !undone.is_empty() {
        let (steps, trailers) = crate::review::reverted::repair(&repo, &undone, ctx.now);
        let subject = format!(
            "doctor: {} pending again, as the git revert of {} asked",
            crate::output::count(undone.len(), "proposal"),
            if undone.len() == 1 {
                "its decision"
            } else {
                "their decisions"
            }
        );
        ctx.commit_journaled(
            &repo,
            &crate::journal::Journal {
                message: super::message(&subject, &trailers),
                steps,
                refs: Vec::new(),
            },
        )?;
    }
    findings.extend(undone.iter().map(|u| crate::doctor::Finding {
        path: u.file.clone(),
        line: None,
        problem: u.problem(repair),
        repaired: repair,
        saved_to: None,
        restored: false,
    }));
    // Observations still marked rejected by a proposal no longer rejected.
    let strays = crate::review::reverted::strays(&repo, &undone)?;
    if repair && !strays.is_empty() {
        let subject = format!(
            "doctor: {} no longer marked rejected: the rejection was reverted",
            crate::output::count(strays.len(), "observation")
        );
        let trailers = vec![(
            "Cairn-Observations",
            strays
                .iter()
                .map(|s| s.observation.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )];
        ctx.commit_journaled(
            &repo,
            &crate::journal::Journal {
                message: super::message(&subject, &trailers),
                steps: vec![crate::review::reverted::reopen(&repo, &strays, ctx.now)],
                refs: Vec::new(),
            },
        )?;
    }
    findings.extend(strays.iter().map(|s| crate::doctor::Finding {
        path: crate::store::DIR.to_string(),
        line: None,
        problem: s.problem(repair),
        repaired: repair,
        saved_to: None,
        restored: false,
    }));
    let commit = if changed.is_empty() {
        None
    } else {
        // Each damaged line by file and line, with where its bytes were saved.
        let trailers: Vec<(&str, String)> = findings
            .iter()
            .filter(|f| f.repaired && !f.restored && f.line.is_some())
            .map(|f| {
                let saved = f
                    .saved_to
                    .as_deref()
                    .and_then(|p| p.file_name())
                    .map(|n| format!(" -> .cairn/recovered/{}", n.to_string_lossy()))
                    .unwrap_or_default();
                let line = f.line.unwrap_or_default();
                ("Cairn-Repaired", format!("{}:{line}{saved}", f.path))
            })
            .collect();
        let lines = trailers.len();
        let subject = format!(
            "doctor: move {lines} damaged {} aside",
            if lines == 1 { "line" } else { "lines" }
        );
        ctx.commit_changes(&repo, &changed, &super::message(&subject, &trailers))?
    };
    let unresolved = findings.iter().filter(|f| !f.repaired).count();
    let mut human = String::new();
    for f in &findings {
        let at = match f.line {
            Some(line) => format!("{}:{line}", f.path),
            None => f.path.clone(),
        };
        let state = if f.repaired { "repaired" } else { "problem" };
        human.push_str(&format!("{state}: {at}: {}\n", f.problem));
        if let Some(saved) = &f.saved_to {
            human.push_str(&format!("  the cut bytes are in {}\n", saved.display()));
        }
    }
    if findings.is_empty() {
        human.push_str(&format!("{}: all well\n", repo.root().display()));
    }
    let data = json!({ "root": repo.root(), "findings": findings, "unresolved": unresolved, "commit": commit });
    let status = if unresolved > 0 || (interrupted && !repair) {
        Status::NothingOrFailed
    } else {
        Status::Ok
    };
    Ok(Report::new("doctor", data, human)
        .status(status)
        .warnings(finished))
}

/// The agents' files (the person's own, and those of the git work tree around the working
/// folder) whose cairn hooks or MCP registration run a binary that is gone.
fn agent_findings(ctx: &Ctx) -> Vec<crate::doctor::Finding> {
    use crate::hooks::agents::{Scope, check, shell_word};
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    let mut scopes = Vec::new();
    if let Some(home) = var("HOME") {
        let global = Scope::Global {
            home,
            codex_home: var("CODEX_HOME"),
            pi_agent_dir: var("PI_CODING_AGENT_DIR"),
        };
        scopes.push((global, " --global".to_string()));
    }
    if let Some(dir) = crate::git::work_tree_of(&ctx.cwd) {
        let dir = dir.canonicalize().unwrap_or(dir);
        let flags = format!(" --project {}", shell_word(&dir.to_string_lossy()));
        scopes.push((Scope::Project(dir), flags));
    }
    let claude_dir = var("CLAUDE_CONFIG_DIR");
    let mut out = Vec::new();
    for (scope, flags) in scopes {
        for gone in check::gone(&scope, claude_dir.as_deref(), &flags) {
            out.push(crate::doctor::Finding {
                path: gone.file.display().to_string(),
                line: None,
                problem: format!(
                    "runs cairn as {}, which is no longer there: run `{}` with the cairn you use now",
                    gone.binary.display(),
                    gone.fix
                ),
                repaired: false,
                saved_to: None,
                restored: false,
            });
        }
    }
    out
}
