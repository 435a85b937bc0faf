//! The checks after a kill: the next command, doctor's repair, the index's catch-up, fsck and
//! status, and the records against a clean run's (steps 2 to 6), with the snapshots compared.

use std::path::Path;

use super::{After, Harness, Plan, Snapshot, run};

impl Harness {
    /// Step 2: the next command (the victim again, or the scenario's next commands).
    pub(super) fn after(&self, repo: &Path, plan: &Plan, failures: &mut Vec<String>) {
        match &plan.after {
            After::Again(also) => {
                let r = run(self.cairn_cmd(repo, &plan.victim));
                let accepted = r.code == 0
                    || also
                        .is_some_and(|(code, needle)| r.code == code && r.stderr.contains(needle));
                if !accepted {
                    failures.push(format!(
                        "the next run of `{}` exits {}: {}",
                        plan.victim.join(" "),
                        r.code,
                        r.stderr.trim()
                    ));
                }
            }
            After::Next(commands) => {
                for args in commands {
                    let r = run(self.cairn_cmd(repo, args));
                    if r.code != 0 {
                        failures.push(format!(
                            "the next command `{}` exits {}: {}",
                            args.join(" "),
                            r.code,
                            r.stderr.trim()
                        ));
                    }
                }
            }
        }
    }

    /// What the rerun left before any repair: the temporary files of writes cut short
    /// (anywhere in the repository, `.git` aside) and `cairn doctor --dry-run`'s exit code and
    /// report, the repository's path taken out.
    pub(super) fn leftovers(&self, repo: &Path) -> Snapshot {
        let mut temps = Vec::new();
        let mut stack = vec![repo.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    if name != ".git" {
                        stack.push(path);
                    }
                    continue;
                }
                let in_index = dir.ends_with(".cairn/index");
                if name.starts_with(".cairn-tmp-") || (in_index && name.starts_with(".tmp")) {
                    let rel = path.strip_prefix(repo).unwrap_or(&path);
                    temps.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        temps.sort();
        let dry = self.cairn(repo, &["doctor", "--dry-run"]);
        let root = repo.to_string_lossy().into_owned();
        let mut report = vec![format!("exit {}", dry.code)];
        report.extend(
            dry.stdout
                .lines()
                .chain(dry.stderr.lines())
                .map(|l| l.replace(&root, "REPO")),
        );
        let mut snap = Snapshot::new();
        snap.insert("<temporary files after the rerun>".into(), temps);
        snap.insert("<doctor --dry-run after the rerun>".into(), report);
        snap
    }

    /// Steps 3 to 5.
    pub(super) fn check(&self, repo: &Path, failures: &mut Vec<String>) {
        let doctor = self.cairn(repo, &["doctor"]);
        if doctor.code == 2 {
            failures.push(format!("`cairn doctor` fails: {}", doctor.stderr.trim()));
        }
        let dry = self.cairn(repo, &["doctor", "--dry-run"]);
        if dry.code != 0 {
            failures.push(format!(
                "`cairn doctor --dry-run` after a repair exits {}: {}{}",
                dry.code,
                dry.stdout.trim(),
                dry.stderr.trim()
            ));
        }
        let index = self.cairn(repo, &["index"]);
        if index.code != 0 {
            failures.push(format!(
                "`cairn index` exits {}: {}",
                index.code,
                index.stderr.trim()
            ));
        }
        let verify = self.cairn(repo, &["index", "--verify"]);
        if verify.code != 0 {
            failures.push(format!(
                "`cairn index --verify` exits {}: {}{}",
                verify.code,
                verify.stdout.trim(),
                verify.stderr.trim()
            ));
        }
        if let Some(f) = self.fsck(repo) {
            failures.push(format!("at the end: {f}"));
        }
        let status = self.git(repo, &["status", "--porcelain", "--untracked-files=all"]);
        if status.code != 0 || !status.stdout.trim().is_empty() {
            failures.push(format!(
                "`git status` shows what was not committed: {}{}",
                status.stdout.trim().replace('\n', ", "),
                status.stderr.trim()
            ));
        }
    }

    /// `git fsck --strict`; `None` when clean.
    pub(super) fn fsck(&self, repo: &Path) -> Option<String> {
        let r = self.git(
            repo,
            &["fsck", "--strict", "--no-progress", "--no-dangling"],
        );
        (r.code != 0).then(|| format!("`git fsck` exits {}: {}", r.code, r.stderr.trim()))
    }

    /// The records of `DIR/repo` (and of the remote, when the plan has one).
    pub(super) fn snapshot(&self, dir: &Path, plan: &Plan) -> Snapshot {
        let repo = dir.join("repo");
        let mut snap = Snapshot::new();
        let files = self.git(&repo, &["ls-files", "-z"]).stdout;
        for rel in files.split('\0').filter(|s| !s.is_empty()) {
            let bytes = std::fs::read(repo.join(rel)).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let entry = if rel.ends_with(".jsonl") {
                let slog = rel.starts_with("slog/");
                let mut lines: Vec<String> = text.lines().map(|l| normalise(l, slog)).collect();
                lines.sort();
                lines
            } else {
                vec![text]
            };
            snap.insert(rel.to_string(), entry);
        }
        // The history's subjects, oldest first (trailers hold ids that differ from run to run).
        let log = self.git(&repo, &["log", "--reverse", "--format=%s"]);
        snap.insert(
            "<commit subjects>".into(),
            log.stdout.lines().map(str::to_string).collect(),
        );
        let refs = self.git(
            &repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(tree)",
                "refs/cairn/proposals/",
            ],
        );
        snap.insert(
            "<proposal refs>".into(),
            refs.stdout.lines().map(str::to_string).collect(),
        );
        if plan.remote {
            let head = self.git(&repo, &["rev-parse", "HEAD^{tree}"]).stdout;
            let branch = self
                .git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"])
                .stdout;
            let remote = self.git(
                &dir.join("remote.git"),
                &["rev-parse", &format!("{}^{{tree}}", branch.trim())],
            );
            snap.insert(
                "<remote>".into(),
                vec![format!(
                    "the remote's branch holds HEAD's tree: {}",
                    remote.stdout == head
                )],
            );
        }
        snap
    }
}

/// A JSON line with what legitimately differs between runs taken out: a slog entry's id is a
/// hash of the writer's process id.
fn normalise(line: &str, slog: bool) -> String {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(mut v) => {
            if slog && let Some(o) = v.as_object_mut() {
                o.remove("id");
            }
            v.to_string()
        }
        Err(_) => format!("NOT JSON: {line}"),
    }
}

/// The first differences between two snapshots, for a person; `None` when equal.
pub(super) fn differ(want: &Snapshot, got: &Snapshot) -> Option<String> {
    let mut out = Vec::new();
    for (path, w) in want {
        match got.get(path) {
            None => out.push(format!("{path} missing")),
            Some(g) if g != w => {
                let lost: Vec<&String> = w.iter().filter(|l| !g.contains(l)).collect();
                let extra: Vec<&String> = g.iter().filter(|l| !w.contains(l)).collect();
                let short = |v: &[&String]| {
                    v.iter()
                        .take(2)
                        .map(|l| l.chars().take(160).collect::<String>())
                        .collect::<Vec<_>>()
                        .join(" | ")
                };
                out.push(format!(
                    "{path}: {} lines want {}, lost {} [{}], extra {} [{}]",
                    g.len(),
                    w.len(),
                    lost.len(),
                    short(&lost),
                    extra.len(),
                    short(&extra)
                ));
            }
            _ => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        out.push(format!("{path} unexpected"));
    }
    (!out.is_empty()).then(|| out.join("; "))
}
