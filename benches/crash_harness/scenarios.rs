//! The scenarios: each command to kill, the setup that builds its template, and the inputs
//! they read (observations from the observer's prompts, transcripts, documents to add).

use std::path::{Path, PathBuf};

use super::{After, Harness, NOW, Plan, Scenario, run, strings};

/// Observations made from the real prompts of `tests/fixtures/observer` (people's words to
/// coding agents), as `cairn import observations` reads them; `days_old` spreads their times
/// back from NOW when given, so maintain finds stale ones.
pub fn observations(h: &Harness, dup_every: usize, aged: bool) -> String {
    let mut out = String::new();
    let mut n = 0usize;
    for name in ["fresh", "heldout", "prompts"] {
        let path = h.fixtures.join("observer").join(format!("{name}.jsonl"));
        let text = std::fs::read_to_string(&path).expect("observer fixture");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("fixture line");
            let Some(prompt) = v["prompt"].as_str() else {
                continue;
            };
            let day = if aged { 1 + (n * 7) % 300 } else { 1 + n % 20 };
            let ts = chrono_free_day(day);
            let mut push = |text: &str| {
                out.push_str(
                    &serde_json::json!({
                        "observation": text, "timestamp": ts, "session_id": format!("s-{name}"),
                    })
                    .to_string(),
                );
                out.push('\n');
            };
            push(prompt);
            if dup_every > 0 && n.is_multiple_of(dup_every) {
                push(&format!("{prompt}!"));
            }
            n += 1;
        }
    }
    out
}

/// NOW less `days` days, as RFC 3339 (NOW is 2026-12-01; days counted back through 2026).
fn chrono_free_day(days: usize) -> String {
    const MONTHS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    // Day of the year of 2026-12-01 is 335 (1-based).
    let doy = 335usize.saturating_sub(days).max(1);
    let mut left = doy as u32;
    let mut month = 0usize;
    while left > MONTHS[month] {
        left -= MONTHS[month];
        month += 1;
    }
    format!("2026-{:02}-{:02}T09:00:00Z", month + 1, left)
}

/// `cairn init DIR/repo`.
fn init(h: &Harness, dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    let r = run({
        let mut c = h.command(&h.bin, dir);
        c.args(["--now", NOW, "init"]).arg(&repo);
        c
    });
    assert_eq!(r.code, 0, "cairn init: {}", r.stderr);
    repo
}

fn write_input(dir: &Path, name: &str, text: &str) -> String {
    let input = dir.join("input");
    std::fs::create_dir_all(&input).expect("input folder");
    std::fs::write(input.join(name), text).expect("input file");
    format!("../input/{name}")
}

/// The transcripts ingest reads: one of each agent's format, a large one among them.
fn transcripts(h: &Harness) -> Vec<String> {
    let s = h.fixtures.join("sessions");
    [
        "claude-code/session-9eda1058.jsonl",
        "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "pi",
    ]
    .iter()
    .map(|p| s.join(p).to_string_lossy().into_owned())
    .collect()
}

fn slog_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    for (a, t, d) in [
        ("deploy", "caddy", "reload after the certificate renewal"),
        ("fix", "redis", "raise maxmemory to 2gb"),
        ("configure", "nfs", "mount /srv/media with nconnect=8"),
    ] {
        h.cairn_ok(&repo, &["slog", a, t, d]);
    }
    Plan {
        victim: strings(&[
            "slog",
            "restart",
            "postgres",
            "after the kernel update",
            "--reason",
            "security",
        ]),
        after: After::Next(vec![strings(&[
            "slog",
            "rotate",
            "keys",
            "the deploy key of ci",
        ])]),
        remote: false,
    }
}

fn remember_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    let obs = observations(h, 0, false);
    let few: String = obs.lines().take(20).map(|l| format!("{l}\n")).collect();
    let file = write_input(dir, "few.jsonl", &few);
    h.cairn_ok(&repo, &["import", "observations", &file]);
    Plan {
        victim: strings(&[
            "remember",
            "Always run cargo fmt and clippy before pushing to the main branch",
        ]),
        after: After::Again(None),
        remote: false,
    }
}

fn import_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let file = write_input(dir, "obs.jsonl", &observations(h, 0, false));
    Plan {
        victim: strings(&["import", "observations", &file]),
        after: After::Again(None),
        remote: false,
    }
}

fn adr_import_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let from = h.fixtures.join("adr").join("madr-semantic-kernel");
    let to = dir.join("input").join("adr");
    std::fs::create_dir_all(&to).expect("adr input");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
        .expect("adr fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("00"))
        })
        .collect();
    names.sort();
    for p in names.iter().take(20) {
        std::fs::copy(p, to.join(p.file_name().expect("name"))).expect("copy adr");
    }
    Plan {
        victim: strings(&["adr", "import", "../input/adr"]),
        after: After::Again(None),
        remote: false,
    }
}

fn ingest_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    let mut victim = strings(&["sessions", "ingest"]);
    victim.extend(transcripts(h));
    Plan {
        victim,
        after: After::Again(None),
        remote: false,
    }
}

fn observe_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    let mut args = vec!["sessions".to_string(), "ingest".to_string()];
    args.extend(transcripts(h));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    h.cairn_ok(&repo, &args);
    Plan {
        victim: strings(&["observe", "--all", "--observer", "builtin"]),
        after: After::Again(None),
        remote: false,
    }
}

fn with_observations(h: &Harness, dir: &Path, dup_every: usize, aged: bool, raw: bool) -> PathBuf {
    let repo = init(h, dir);
    h.cairn_ok(
        &repo,
        &[
            "memory",
            "add",
            "-s",
            "Rules and conventions",
            "Never deploy on Fridays",
        ],
    );
    let file = write_input(dir, "obs.jsonl", &observations(h, dup_every, aged));
    let mut args = vec!["import", "observations", file.as_str()];
    if raw {
        args.push("--raw");
    }
    if aged {
        // Maintain ages an observation from the day it was stored (ADR 76): aged ones are
        // imported as if 200 days before NOW, so that a run at NOW finds stale ones.
        let mut cmd = h.command(&h.bin, &repo);
        cmd.arg("--repo")
            .arg(&repo)
            .args(["--now", STORED_AGED])
            .args(&args);
        let r = run(cmd);
        assert_eq!(r.code, 0, "cairn {args:?}: {}", r.stderr);
    } else {
        h.cairn_ok(&repo, &args);
    }
    repo
}

/// When the aged observations are imported: 200 days before NOW.
const STORED_AGED: &str = "2026-05-15T12:00:00Z";

fn reflect_setup(h: &Harness, dir: &Path) -> Plan {
    with_observations(h, dir, 0, false, false);
    Plan {
        victim: strings(&["reflect", "--reflector", "builtin"]),
        after: After::Again(None),
        remote: false,
    }
}

fn review_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(&repo, &["reflect", "--reflector", "builtin"]);
    let list = h.cairn_ok(&repo, &["review", "--list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(list.trim()).expect("review --list --json");
    let id = v["data"]["proposals"][0]["id"]
        .as_str()
        .expect("a pending proposal")
        .to_string();
    Plan {
        victim: vec!["review".into(), "--approve".into(), id],
        after: After::Again(Some((2, "already decided"))),
        remote: false,
    }
}

fn triage_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(&repo, &["reflect", "--reflector", "builtin"]);
    Plan {
        victim: strings(&["triage"]),
        after: After::Again(None),
        remote: false,
    }
}

fn maintain_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 3, true, true);
    h.cairn_ok(&repo, &["index"]);
    Plan {
        victim: strings(&["maintain"]),
        after: After::Again(None),
        remote: false,
    }
}

fn forget_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    h.cairn_ok(
        &repo,
        &[
            "slog",
            "configure",
            "vault",
            "the token lives in pass, not in env",
        ],
    );
    let text = std::fs::read_to_string(repo.join("vault/observations/2026-12-01.jsonl"))
        .expect("observations");
    let ids: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .take(3)
        .collect();
    let mut victim = vec!["forget".to_string()];
    victim.extend(ids);
    victim.extend(strings(&["the token lives in pass, not in env", "--yes"]));
    Plan {
        victim,
        // Run again, everything is already forgotten: "nothing matches", exit 1.
        after: After::Again(Some((1, "nothing matches"))),
        remote: false,
    }
}

fn index_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = with_observations(h, dir, 0, false, false);
    let mut args = vec!["sessions".to_string(), "ingest".to_string()];
    args.extend(transcripts(h));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    h.cairn_ok(&repo, &args);
    h.cairn_ok(&repo, &["adr", "new", "Use tantivy for the index"]);
    Plan {
        victim: strings(&["index"]),
        after: After::Again(None),
        remote: false,
    }
}

fn sync_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    h.git_ok(dir, &["init", "-q", "--bare", "remote.git"]);
    let branch = h.git_ok(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let branch = branch.trim().to_string();
    h.git_ok(&repo, &["remote", "add", "origin", "../remote.git"]);
    h.git_ok(&repo, &["push", "-q", "-u", "origin", &branch]);
    // Another machine: a clone that pushes records of its own.
    h.git_ok(dir, &["clone", "-q", "-b", &branch, "remote.git", "other"]);
    let other = dir.join("other");
    h.cairn_ok(
        &other,
        &["slog", "deploy", "caddy", "from the other machine"],
    );
    h.cairn_ok(
        &other,
        &[
            "remember",
            "The staging database is wiped every night at 02:00",
        ],
    );
    h.cairn_ok(&other, &["adr", "new", "Keep the vault in git"]);
    h.git_ok(&other, &["push", "-q", "origin", &branch]);
    // This machine: records of its own, not pushed yet.
    h.cairn_ok(&repo, &["slog", "fix", "redis", "from this machine"]);
    h.cairn_ok(
        &repo,
        &[
            "remember",
            "Prefer small pull requests that change one thing at a time",
        ],
    );
    h.cairn_ok(&repo, &["adr", "new", "Use tantivy for the index"]);
    let _ = std::fs::remove_dir_all(&other);
    Plan {
        victim: strings(&["sync"]),
        after: After::Again(None),
        remote: true,
    }
}

fn library_setup(h: &Harness, dir: &Path) -> Plan {
    init(h, dir);
    // Real documents: the ADRs of a public project, as Markdown files a person adds.
    let from = h.fixtures.join("adr").join("madr-semantic-kernel");
    // One folder for every trial: a document's id is made from its absolute path.
    let to = h.work.join("library-docs");
    std::fs::create_dir_all(&to).expect("docs input");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
        .expect("adr fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    names.sort();
    for p in names.iter().take(40) {
        std::fs::copy(p, to.join(p.file_name().expect("name"))).expect("copy doc");
    }
    Plan {
        victim: strings(&["library", "add", "--copy", &to.to_string_lossy()]),
        after: After::Again(None),
        remote: false,
    }
}

fn note_setup(h: &Harness, dir: &Path) -> Plan {
    let repo = init(h, dir);
    h.cairn_ok(
        &repo,
        &[
            "note",
            "--offline",
            "--no-llm",
            "The staging cluster drains nodes before a kernel update",
        ],
    );
    Plan {
        victim: strings(&[
            "note",
            "--offline",
            "--no-llm",
            "--context",
            "found while debugging the nightly backup",
            "restic prunes with --keep-daily 7 on the backup host",
        ]),
        after: After::Next(vec![strings(&[
            "note",
            "--offline",
            "--no-llm",
            "caddy reloads without dropping connections",
        ])]),
        remote: false,
    }
}

/// Every scenario, in the order the issue names the commands.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "slog",
            failpoints: &["slog-after-append", "commit-before-index"],
            setup: slog_setup,
        },
        Scenario {
            name: "remember",
            failpoints: &["remember-after-append", "commit-before-index"],
            setup: remember_setup,
        },
        Scenario {
            name: "import-observations",
            failpoints: &["import-after-append"],
            setup: import_setup,
        },
        Scenario {
            name: "adr-import",
            failpoints: &["adr-import-after-first"],
            setup: adr_import_setup,
        },
        Scenario {
            name: "sessions-ingest",
            failpoints: &["ingest-before-commit"],
            setup: ingest_setup,
        },
        Scenario {
            name: "observe",
            failpoints: &["observe-after-append"],
            setup: observe_setup,
        },
        Scenario {
            name: "reflect",
            failpoints: &["reflect-after-append", "reflect-before-refs"],
            setup: reflect_setup,
        },
        Scenario {
            name: "review-approve",
            failpoints: &[
                "journal-written",
                "journal-first-step",
                "journal-before-commit",
                "journal-before-refs",
            ],
            setup: review_setup,
        },
        Scenario {
            name: "triage",
            failpoints: &[
                "journal-written",
                "journal-before-commit",
                "journal-before-refs",
            ],
            setup: triage_setup,
        },
        Scenario {
            name: "maintain",
            failpoints: &["maintain-after-append"],
            setup: maintain_setup,
        },
        Scenario {
            name: "forget",
            failpoints: &[
                "forget-tombstones",
                "forget-file",
                "forget-before-commit",
                "forget-before-cleanup",
            ],
            setup: forget_setup,
        },
        Scenario {
            name: "index",
            failpoints: &[],
            setup: index_setup,
        },
        Scenario {
            name: "library-add",
            failpoints: &["library-before-commit", "commit-before-index"],
            setup: library_setup,
        },
        Scenario {
            name: "note",
            failpoints: &["note-after-write", "commit-before-index"],
            setup: note_setup,
        },
        Scenario {
            name: "sync",
            failpoints: &["sync-renumber-mid", "commit-before-index"],
            setup: sync_setup,
        },
    ]
}
