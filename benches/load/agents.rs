//! The agents: the words their texts are made of, one agent's loop of slog, remember, recall and
//! search, the mix's cycle through every command, and what each run tells of what it wrote.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use super::{Expected, Mode, Run, cairn};

/// Words the remembered texts are made of, so that they differ in meaning as well as marker
/// (dedup by meaning merges texts that say the same thing).
const SUBJECTS: &[&str] = &[
    "the nginx proxy",
    "postgres replication",
    "the redis cache",
    "our deploy script",
    "the kafka consumer",
    "terraform state",
    "the CI runner",
    "the grafana dashboard",
    "systemd timers",
    "the backup job",
    "dns resolution",
    "the s3 bucket policy",
    "cargo workspace builds",
    "the auth middleware",
    "docker image layers",
    "the cron scheduler",
];
const VERBS: &[&str] = &[
    "must always be restarted after",
    "should never be touched during",
    "breaks silently when we change",
    "is pinned to avoid",
    "needs a manual check before",
    "prefers explicit flags over",
    "was moved off the shared host because of",
    "logs every failure of",
];
const OBJECTS: &[&str] = &[
    "certificate rotation",
    "schema migrations",
    "kernel upgrades",
    "the monthly billing export",
    "failover drills",
    "dependency bumps",
    "a full disk on the build box",
    "timezone changes",
    "password resets by the support team",
    "load balancer health checks",
    "weekend release freezes",
];

impl Expected {
    /// Notes what a `remember` that carried `rmarker` reported: stored, merged, failed or not
    /// written.
    fn remembered(&mut self, r: &Run, rmarker: String) {
        let d = r.data();
        let id = || d["id"].as_str().unwrap_or("").to_string();
        if failed(r) {
            self.failed.push(rmarker);
        } else if d["stored"] == true {
            self.stored.push((rmarker, id()));
        } else if d["merged"].is_object() {
            let into = d["merged"]["into"].as_str().unwrap_or("").to_string();
            self.merged.push((rmarker, id(), into));
        } else {
            self.not_written.push(rmarker);
        }
    }
}

/// A command failed: exit 2 or worse, or a write command that did not exit 0 (remember exits
/// 1 when the gate discards; recall and search exit 1 when they find nothing).
pub(super) fn failed(r: &Run) -> bool {
    match r.command {
        "slog" | "ingest" | "observe" | "adr" | "memory" | "note" | "library" | "reflect"
        | "triage" | "maintain" | "index" => r.code != 0,
        "remember" => !(r.code == 0 || (r.code == 1 && r.data()["verdict"] == "discard")),
        _ => r.code != 0 && r.code != 1,
    }
}

pub(super) fn agent(
    a: usize,
    mode: Mode,
    home: &Path,
    repo: &Path,
    deadline: Instant,
    runs: &Mutex<Vec<Run>>,
) -> Expected {
    let mut e = Expected::default();
    let mut mine = Vec::new();
    let tag = match mode {
        Mode::NoCommit => "n",
        _ => "c",
    };
    let mut n = 0usize;
    let mut last_slog: Option<String> = None;
    while Instant::now() < deadline {
        let marker = format!("lm{tag}a{a:02}n{n:05}");
        // slog
        let detail = format!("agent {a} finished step {n} of the load run, marker {marker}");
        let r = cairn(
            home,
            repo,
            "slog",
            &[
                "--json",
                "slog",
                "load",
                &format!("agent-{a}"),
                &detail,
                "--tags",
                "load",
            ],
        );
        if r.code == 0 {
            let id = r.data()["entry"]["id"].as_str().unwrap_or("").to_string();
            e.slogs.push((marker.clone(), id));
            last_slog = Some(marker.clone());
        } else {
            e.failed.push(marker.clone());
        }
        mine.push(r);

        // remember
        let text = format!(
            "{} {} {} (agent {a}, step {n}, marker {marker}r)",
            SUBJECTS[(a * 7 + n) % SUBJECTS.len()],
            VERBS[(a + n * 3) % VERBS.len()],
            OBJECTS[(a * 5 + n * 7) % OBJECTS.len()],
        );
        let r = cairn(home, repo, "remember", &["--json", "remember", &text]);
        e.remembered(&r, format!("{marker}r"));
        mine.push(r);

        // recall: what another agent's texts talk about
        let query = format!(
            "{} {}",
            SUBJECTS[(a + n) % SUBJECTS.len()],
            OBJECTS[n % OBJECTS.len()]
        );
        mine.push(cairn(
            home,
            repo,
            "recall",
            &["--json", "recall", &query, "--profile", "lean"],
        ));

        // search: this agent's own last slog entry, by its marker
        if let Some(m) = &last_slog {
            let r = cairn(home, repo, "search", &["--json", "search", m]);
            e.searches += 1;
            if r.stdout.contains(m.as_str()) {
                e.found_own += 1;
            }
            mine.push(r);
        }
        n += 1;
    }
    runs.lock().expect("runs").extend(mine);
    e
}

/// Whether `command` only reads (a failure of one is a failed read).
pub(super) fn is_read(command: &str) -> bool {
    matches!(command, "recall" | "brief" | "search")
}

/// The mix: each agent runs, one after another, a command of the cycle below, starting at a
/// place of its own in it so that every kind runs at once somewhere: the writes (slog,
/// remember, adr new, memory add, note, library add, sessions ingest, observe, reflect,
/// triage, maintain, index) and the reads (recall, brief, search).
pub(super) fn mix_agent(
    a: usize,
    home: &Path,
    repo: &Path,
    transcripts: &Path,
    deadline: Instant,
    runs: &Mutex<Vec<Run>>,
) -> Expected {
    const CYCLE: &[&str] = &[
        "slog", "recall", "remember", "search", "adr", "brief", "memory", "index", "note",
        "recall", "library", "ingest", "search", "observe", "slog", "reflect", "recall", "triage",
        "remember", "maintain", "brief",
    ];
    let mut e = Expected::default();
    let mut mine = Vec::new();
    let sessions: Vec<PathBuf> = ["claude-code", "codex", "pi"]
        .iter()
        .flat_map(|agent| {
            std::fs::read_dir(transcripts.join(agent))
                .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    let library = home.join(format!("library-{a}"));
    std::fs::create_dir_all(&library).expect("library folder");
    let mut n = 0usize;
    while Instant::now() < deadline {
        let marker = format!("lmxa{a:02}n{n:05}");
        let command = CYCLE[(a * 5 + n) % CYCLE.len()];
        let subject = SUBJECTS[(a * 7 + n) % SUBJECTS.len()];
        let object = OBJECTS[(a * 5 + n * 7) % OBJECTS.len()];
        let r = match command {
            "slog" => {
                let detail = format!("agent {a} finished step {n} of the mix, marker {marker}");
                let r = cairn(
                    home,
                    repo,
                    "slog",
                    &["--json", "slog", "load", &format!("agent-{a}"), &detail],
                );
                if r.code == 0 {
                    let id = r.data()["entry"]["id"].as_str().unwrap_or("").to_string();
                    e.slogs.push((marker.clone(), id));
                }
                r
            }
            "remember" => {
                let verb = VERBS[(a + n * 3) % VERBS.len()];
                let text = format!("{subject} {verb} {object} (agent {a}, marker {marker}r)");
                let r = cairn(home, repo, "remember", &["--json", "remember", &text]);
                e.remembered(&r, format!("{marker}r"));
                r
            }
            "adr" => {
                let title = format!("Pin {subject} for {object} {marker}");
                let r = cairn(
                    home,
                    repo,
                    "adr",
                    &[
                        "--json",
                        "adr",
                        "new",
                        &title,
                        "--context",
                        "the load run needs a decision",
                        "--decision",
                        "pin it",
                        "--consequences",
                        "one more record",
                    ],
                );
                if r.code == 0 {
                    e.adrs.push(marker.clone());
                }
                r
            }
            "memory" => {
                let text = format!("{subject} needs care around {object} ({marker})");
                let r = cairn(
                    home,
                    repo,
                    "memory",
                    &["--json", "memory", "add", "--section", "operations", &text],
                );
                if r.code == 0 && r.data()["added"]["duplicate"] != true {
                    e.memories.push(marker.clone());
                }
                r
            }
            "note" => {
                let text = format!("{marker} {subject} and {object}");
                let r = cairn(home, repo, "note", &["--json", "note", &text]);
                if r.code == 0 {
                    e.notes.push(marker.clone());
                }
                r
            }
            "library" => {
                let file = library.join(format!("{marker}.md"));
                std::fs::write(
                    &file,
                    format!("# Runbook {marker}\n\nHow {subject} behaves during {object}.\n"),
                )
                .expect("library file");
                let r = cairn(
                    home,
                    repo,
                    "library",
                    &["--json", "library", "add", file.to_str().expect("utf-8")],
                );
                if r.code == 0 {
                    e.library.push(marker.clone());
                }
                r
            }
            "ingest" => {
                let session = &sessions[(a + n) % sessions.len().max(1)];
                cairn(
                    home,
                    repo,
                    "ingest",
                    &[
                        "--json",
                        "sessions",
                        "ingest",
                        session.to_str().expect("utf-8"),
                    ],
                )
            }
            "observe" => cairn(
                home,
                repo,
                "observe",
                &["--json", "observe", "--all", "--observer", "builtin"],
            ),
            "reflect" => cairn(home, repo, "reflect", &["--json", "reflect"]),
            "triage" => cairn(home, repo, "triage", &["--json", "triage"]),
            "maintain" => cairn(home, repo, "maintain", &["--json", "maintain"]),
            "index" => cairn(home, repo, "index", &["--json", "index"]),
            "recall" => cairn(
                home,
                repo,
                "recall",
                &["--json", "recall", &format!("{subject} {object}")],
            ),
            "brief" => cairn(home, repo, "brief", &["--json", "brief"]),
            _ => cairn(home, repo, "search", &["--json", "search", subject]),
        };
        if failed(&r) && r.command != "remember" {
            e.failed.push(marker.clone());
        }
        mine.push(r);
        n += 1;
    }
    runs.lock().expect("runs").extend(mine);
    e
}
