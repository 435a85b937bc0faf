//! The fuzz targets: one for every parser of text cairn did not write itself, each calling
//! the entry point the commands call (listed in `calls`, printed by `--list`), then what the
//! commands do next with a parsed record (index documents, lint, redaction). A target takes
//! any bytes; `Err` results are the right answer to bad input, only a panic, a hang or
//! unbounded memory is a failure. File-reading entry points get the input as a file of a
//! scratch repository (a temporary folder, one per target).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};

use cairn::config::Config;
use cairn::index::sources;
use cairn::redact::Redactor;
use cairn::repo::Repo;

use crate::reply;

pub struct Target {
    pub name: &'static str,
    /// The entry points it calls.
    pub calls: &'static str,
    /// The largest input it is given, in bytes.
    pub max_len: usize,
    /// Words of its format the mutator inserts.
    pub dict: &'static [&'static str],
    pub run: fn(&[u8]),
}

pub const KB: usize = 1024;

pub fn all() -> Vec<Target> {
    let mut all = vec![
        Target {
            name: "slog",
            calls: "slog::query (slog::read_file, jsonl::parse), jsonl::damage, sources::slog_doc",
            max_len: 64 * KB,
            dict: &[
                "{\"id\":\"s-1\",\"ts\":\"2026-11-30T10:00:00Z\",\"action\":\"deploy\",\"tool\":\"caddy\",\"detail\":\"x\"}\n",
                "\"tags\":[]",
                "\"reason\":",
                "\"session\":",
                "\"actor\":",
                "\"ts\":",
            ],
            run: slog,
        },
        Target {
            name: "adr",
            calls: "adr::lint::lint_records (adr::parse: frontmatter::split/parse, yaml_serde), sources::adr_doc, adr::frontmatter::set",
            max_len: 32 * KB,
            dict: &[
                "---\nnumber: 7\n",
                "number: ",
                "title: ",
                "status: ",
                "date: ",
                "supersedes: [",
                "superseded-by: [",
                "deciders: [",
                "tags: [",
                "accepted",
                "superseded",
                "!!binary",
                "&a",
                "*a",
                "<<: *a",
                "? ",
                "|\n",
                ">-\n",
                "~",
                "## Context\n",
                "## Decision\n",
            ],
            run: adr,
        },
        Target {
            name: "adr_foreign",
            calls: "adr::parse (foreign::read_record, read_source: adr-tools and MADR), sources::adr_doc; adr::import::import for one input in 8",
            max_len: 32 * KB,
            dict: &[
                "# 1. ",
                "Date: ",
                "## Status\n",
                "Accepted\n",
                "Superseded by [2. x](0002-x.md)\n",
                "Supersedes [1. y](0001-y.md)\n",
                "* Status: ",
                "* Deciders: ",
                "* Date: ",
                "---\nstatus: ",
                "](",
                "[",
                "](0003-z.md)",
                "## Context and Problem Statement\n",
                "## Decision Outcome\n",
                "Amends ",
                "Clarified by ",
            ],
            run: adr_foreign,
        },
        Target {
            name: "memory",
            calls: "memory::parse (comrak), memory::lint, memory::within_budget, memory::add, proposals::apply (replace, remove, merge), sources::memory_docs",
            max_len: 32 * KB,
            dict: &[
                "# Memory\n",
                "## Rules and conventions\n",
                "## Operations\n",
                "- (2026-11-30) ",
                "- (2026-02-30) ",
                "  - ",
                "1. ",
                "> ",
                "    ",
                "<details>",
                "[x]: http://a\n",
                "| a | b |\n|---|---|\n",
                "* ",
                "\n\n",
            ],
            run: memory,
        },
        Target {
            name: "observations",
            calls: "store::load (store::read_file, parse_line, the fold), sources::observation_doc; crate::observe::write::read_candidates (`import observations`: validate, redaction)",
            max_len: 64 * KB,
            dict: &[
                "{\"op\":\"merge\",\"id\":\"ob-1\",\"ts\":\"2026-11-30T10:00:00Z\"}\n",
                "{\"op\":\"supersede\",\"id\":\"ob-1\",\"by\":\"ob-2\",\"ts\":\"t\"}\n",
                "{\"op\":\"restore\",\"id\":\"ob-2\",\"ts\":\"t\"}\n",
                "\"op\":",
                "\"id\":\"ob-1\"",
                "\"observation\":",
                "\"write_verdict\":\"allow\"",
                "\"merged_count\":",
                "\"priority\":",
                "\"category_id\":",
                "\"narrative\":",
                "-----BEGIN PRIVATE KEY-----",
                "password=hunter2",
            ],
            run: observations,
        },
        Target {
            name: "claude",
            calls: "sessions::parse(Agent::Claude) (claude::read), cards::records, cards::line, cards::compare",
            max_len: 256 * KB,
            dict: &[
                "{\"type\":\"user\",",
                "{\"type\":\"assistant\",",
                "{\"type\":\"summary\",",
                "\"isCompactSummary\":true",
                "\"tool_use\"",
                "\"tool_result\"",
                "\"tool_use_id\":",
                "\"is_error\":true",
                "\"parentUuid\":",
                "\"sessionId\":",
                "\"timestamp\":",
                "\"content\":[",
                "\"text\":",
                "\"message\":{",
                "Exit code 1",
            ],
            run: claude,
        },
        Target {
            name: "codex",
            calls: "sessions::parse(Agent::Codex) (codex::read), cards::records, cards::line, cards::compare",
            max_len: 256 * KB,
            dict: &[
                "{\"type\":\"session_meta\",",
                "{\"type\":\"response_item\",",
                "{\"type\":\"event_msg\",",
                "{\"type\":\"turn_context\",",
                "{\"type\":\"compacted\",",
                "\"payload\":{",
                "\"function_call\"",
                "\"function_call_output\"",
                "\"call_id\":",
                "\"exec_command_end\"",
                "\"exit_code\":",
                "\"user_message\"",
                "\"task_complete\"",
                "\"turn_aborted\"",
                "\"timestamp\":",
            ],
            run: codex,
        },
        Target {
            name: "pi",
            calls: "sessions::parse(Agent::Pi) (pi::read), cards::records, cards::line, cards::compare",
            max_len: 256 * KB,
            dict: &[
                "{\"type\":\"session\",",
                "{\"type\":\"message\",",
                "{\"type\":\"compaction\",",
                "{\"type\":\"model_change\",",
                "\"role\":\"user\"",
                "\"role\":\"assistant\"",
                "\"role\":\"toolResult\"",
                "\"toolCall\"",
                "\"toolCallId\":",
                "\"isError\":true",
                "\"parentId\":",
                "\"firstKeptEntryId\":",
                "\"summary\":",
                "\"timestamp\":",
            ],
            run: pi,
        },
        Target {
            name: "observer_xml",
            calls: "observe::llm::parse, observe::llm::parse_category",
            max_len: 16 * KB,
            dict: &[
                "<observations>",
                "</observations>",
                "<segment turns=\"t1 t2\">",
                "</segment>",
                "<narrative>",
                "</narrative>",
                "<fact priority=\"high\" gate=\"allow\" confidence=\"0.9\" category=\"rules-conventions\" turn=\"t1\">",
                "</fact>",
                "<category>",
                "</category>",
                "priority=\"",
                "gate=\"",
                "confidence=\"",
                "turn=\"t3\"",
                "```xml\n",
            ],
            run: observer_xml,
        },
        Target {
            name: "reflector_xml",
            calls: "reflect::llm::parse",
            max_len: 16 * KB,
            dict: &[
                "<proposals>",
                "</proposals>",
                "<proposal op=\"add\" section=\"Rules and conventions\">",
                "<proposal op=\"replace\" section=\"Operations\">",
                "</proposal>",
                "<text>",
                "</text>",
                "<targets><target>Use tabs in Rust code</target></targets>",
                "<rationale>",
                "</rationale>",
                "<sources><source>ob-1</source></sources>",
                "<confidence>",
                "</confidence>",
                "op=\"merge\"",
                "op=\"remove\"",
            ],
            run: reflector_xml,
        },
        Target {
            name: "triage_xml",
            calls: "triage::llm::parse, recall::rewrite::parse",
            max_len: 16 * KB,
            dict: &[
                "<decisions>",
                "</decisions>",
                "<decision id=\"pr-1\" verdict=\"promote\">",
                "<decision id=\"pr-2\" verdict=\"reject\">",
                "verdict=\"needs-review\"",
                "</decision>",
                "<text>",
                "</text>",
                "<reason>",
                "</reason>",
                "<query>",
                "</query>",
            ],
            run: triage_xml,
        },
        Target {
            name: "chat_reply",
            calls: "provider::ChatClient::complete (OpenAI, Anthropic, Ollama) against a local server answering the input",
            max_len: 32 * KB,
            dict: &[
                "\"choices\":[",
                "\"message\":{",
                "\"content\":",
                "\"refusal\":",
                "\"finish_reason\":\"length\"",
                "\"usage\":{",
                "\"prompt_tokens\":",
                "\"type\":\"text\"",
                "\"stop_reason\":\"max_tokens\"",
                "\"input_tokens\":",
                "\"done_reason\":",
                "\"eval_count\":",
                "\"model\":",
            ],
            run: chat_reply,
        },
        Target {
            name: "embed_reply",
            calls: "provider::EmbedClient::embed (Ollama, OpenAI, Voyage) against a local server answering the input",
            max_len: 32 * KB,
            dict: &[
                "\"embeddings\":[",
                "\"data\":[",
                "{\"index\":0,\"embedding\":[0.1,0.2]}",
                "\"index\":",
                "\"embedding\":",
                "[0.5,-0.5]",
                "1e39",
                "-1e39",
            ],
            run: embed_reply,
        },
        Target {
            name: "config",
            calls: "Config::parse (toml), Redactor::configured, http::Endpoint::join, provider::model_id",
            max_len: 16 * KB,
            dict: &[
                "[recall]\n",
                "[llm]\n",
                "[embed]\n",
                "[gate]\n",
                "[git]\n",
                "[redact]\n",
                "[profiles.lean]\n",
                "patterns = [\"",
                "base_url = \"",
                "provider = \"openai\"\n",
                "timeout_secs = ",
                "commit = false\n",
                "(?i)",
                "\\p{L}",
                "(a*)*",
                "{1000}",
                "[[",
                "]]",
                "\"\"\"",
                "'''",
                "inf",
                "nan",
                "1979-05-27T07:32:00Z",
            ],
            run: config,
        },
        Target {
            name: "agent_settings",
            calls: "hooks::agents::install and uninstall (splice::Doc) on a Claude Code settings.json and a Codex hooks.json; hooks::agents::mcp::install and uninstall on a .claude.json and a config.toml; hooks::agents::read_input (the hook's stdin)",
            max_len: 16 * KB,
            dict: &[
                "\"hooks\":{",
                "\"SessionStart\":[",
                "\"PreCompact\":[",
                "\"SessionEnd\":[",
                "{\"matcher\":\"\",\"hooks\":[{\"type\":\"command\",\"command\":\"x\"}]}",
                "\"session_id\":",
                "\"transcript_path\":",
                "\"cwd\":",
                "\"hook_event_name\":",
                "/* */",
                "//",
                "\t",
                "    ",
                "\u{feff}",
                "{}",
                "[]",
                "[ ]",
                "\"hooks\":{}",
                "\"SessionEnd\":[]",
            ],
            run: agent_settings,
        },
        Target {
            name: "mcp",
            calls: "mcp::decode_request (rmcp's ClientJsonRpcMessage, each tool's params and command)",
            max_len: 16 * KB,
            dict: &[
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"recall\",\"arguments\":{}}}\n",
                "\"method\":\"resources/read\"",
                "\"uri\":\"cairn://adr/",
                "\"name\":\"slog\"",
                "\"name\":\"remember\"",
                "\"name\":\"adr_new\"",
                "\"name\":\"slog_query\"",
                "\"arguments\":{",
                "\"profile\":\"deep\"",
                "\"kind\":[\"slog\"]",
                "\"limit\":",
                "\"since\":\"",
                "\"detail\":\"",
                "\"supersedes\":[",
                "\"text\":\"-\"",
                "\"_meta\":{",
            ],
            run: mcp,
        },
    ];
    all.extend(crate::documents::targets());
    all.extend(crate::console::targets());
    all
}

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0)
        .single()
        .expect("a valid time")
}

fn today() -> NaiveDate {
    now().date_naive()
}

/// A scratch repository per target, with the folders cairn reads.
fn scratch(name: &str) -> Repo {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    let root = ROOT.get_or_init(|| tempfile::tempdir().expect("a temporary folder"));
    let dir = root.path().join(name);
    if !dir.exists() {
        for sub in ["slog", "decisions", "vault/observations", "import"] {
            std::fs::create_dir_all(dir.join(sub)).expect("scratch folders");
        }
        // `adr import` reads the folder's history: a repository without commits has none.
        let _ = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(&dir)
            .status();
    }
    Repo::open(dir).expect("a repository with the default configuration")
}

fn write(repo: &Repo, rel: &str, bytes: &[u8]) -> PathBuf {
    let path = repo.path(rel);
    std::fs::write(&path, bytes).expect("a scratch file");
    path
}

pub fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn slog(bytes: &[u8]) {
    thread_local!(static REPO: Repo = scratch("slog"));
    REPO.with(|repo| {
        write(repo, "slog/2026-12-01.jsonl", bytes);
        let mut q = cairn::slog::Query {
            words: vec!["deploy".into()],
            ..Default::default()
        };
        let _ = cairn::slog::query(repo, &q);
        q.words.clear();
        q.since = Some(now() - chrono::Duration::days(3650));
        q.until = Some(now());
        q.tool = Some("caddy".into());
        if let Ok(found) = cairn::slog::query(repo, &q) {
            for e in &found.entries {
                let _ = sources::slog_doc(e, "slog/2026-12-01.jsonl");
            }
        }
        let _ = cairn::jsonl::damage(bytes);
    });
}

fn adr(bytes: &[u8]) {
    thread_local!(static REPO: Repo = scratch("adr"));
    REPO.with(|repo| {
        let rel = "decisions/0007-fuzzed-record.md";
        let text = text(bytes);
        // What `adr lint` and the pre-commit hook run once the files (and git's history of
        // the folder, here none) are read.
        let records = vec![(rel.to_string(), text.to_string())];
        let files = std::collections::BTreeSet::from(["0007-fuzzed-record.md".to_string()]);
        let _ = cairn::adr::lint::lint_records(&records, &files, &Default::default());
        if let Ok(a) = cairn::adr::parse(&repo.path(rel), rel, &text) {
            let _ = sources::adr_doc(&a, now());
        }
        if let Some(split) = cairn::adr::frontmatter::split(&text) {
            let _ = cairn::adr::frontmatter::set(split.yaml, "status", "accepted");
        }
    });
}

fn adr_foreign(bytes: &[u8]) {
    thread_local!(static REPO: Repo = scratch("adr_foreign"));
    REPO.with(|repo| {
        let text = text(bytes);
        let rel = "decisions/0003-fuzzed-record.md";
        if let Ok(a) = cairn::adr::parse(&repo.path(rel), rel, &text) {
            let _ = sources::adr_doc(&a, now());
        }
        // `cairn adr import DIR`: the input as a record of the folder imported. It reads git
        // history and writes files (30 times slower than the parse): one input in 8, chosen by
        // length so that a replay takes the same path.
        if !bytes.len().is_multiple_of(8) {
            return;
        }
        let decisions = repo.path("decisions");
        let _ = std::fs::remove_dir_all(&decisions);
        let _ = std::fs::create_dir_all(&decisions);
        write(repo, "import/0003-fuzzed-record.md", bytes);
        let _ = cairn::adr::import::import(repo, &repo.path("import"), today(), &mut |_, _| Ok(()));
    });
}

fn memory(bytes: &[u8]) {
    let text = text(bytes);
    let parsed = cairn::memory::parse(&text);
    let _ = cairn::memory::lint(&parsed);
    let _ = cairn::memory::within_budget(&text, 300);
    let _ = sources::memory_docs(&text, "MEMORY.md", now());
    let _ = cairn::memory::add(&text, "Operations", "NFS mounts need root", today(), false);
    let _ = cairn::memory::add(&text, "Fuzzed section", "a new entry here", today(), true);
    // `cairn review --approve`: a proposal that replaces, removes or merges entries of it.
    use cairn::proposals::{Op, Proposal};
    let entries: Vec<String> = parsed
        .loose
        .iter()
        .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()))
        .map(|e| e.text.clone())
        .collect();
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return;
    };
    for (op, targets) in [
        (Op::Replace, vec![first.clone()]),
        (Op::Remove, vec![last.clone()]),
        (Op::Merge, vec![last.clone(), first.clone()]),
    ] {
        let p = Proposal::new(
            op,
            "Operations",
            "the entry after the change",
            targets,
            "fuzz",
            Vec::new(),
            0.9,
            "builtin",
            now(),
        );
        let _ = cairn::proposals::apply(&text, &p, None, today());
    }
}

fn observations(bytes: &[u8]) {
    thread_local!(static REPO: Repo = scratch("observations"));
    REPO.with(|repo| {
        write(repo, "vault/observations/2026-12-01.jsonl", bytes);
        if let Ok(loaded) = cairn::store::load(repo) {
            for f in &loaded.folded {
                let _ = sources::observation_doc(f, "vault/observations/2026-12-01.jsonl");
            }
        }
        let text = text(bytes);
        for raw in [false, true] {
            let _ = cairn::observe::write::read_candidates(
                &text,
                "import.jsonl",
                raw,
                Redactor::builtin(),
            );
        }
    });
}

fn transcript(bytes: &[u8], agent: cairn::sessions::Agent) {
    use cairn::cards::{Change, compare};
    use std::io::Cursor;
    for agent in [Some(agent), None] {
        if let Ok(t) = cairn::sessions::parse(bytes, agent, "fuzzed-session") {
            let mut rendering = String::new();
            for r in cairn::cards::records(&t, Redactor::builtin(), "2026-12-01T00:00:00Z") {
                rendering.push_str(&cairn::cards::line(&r));
                rendering.push('\n');
            }
            // The session file compared with its own rendering is the same; the input itself
            // taken as a session file (anything a hand or a crash left) compares without panic.
            let same = compare(Some(Cursor::new(&rendering)), Cursor::new(&rendering));
            if !rendering.is_empty() {
                assert_eq!(same.unwrap(), Change::Same);
            }
            let _ = compare(Some(Cursor::new(bytes)), Cursor::new(&rendering));
        }
    }
}

fn claude(bytes: &[u8]) {
    transcript(bytes, cairn::sessions::Agent::Claude);
}

fn codex(bytes: &[u8]) {
    transcript(bytes, cairn::sessions::Agent::Codex);
}

fn pi(bytes: &[u8]) {
    transcript(bytes, cairn::sessions::Agent::Pi);
}

fn observer_xml(bytes: &[u8]) {
    let text = text(bytes);
    let _ = cairn::observe::llm::parse(&text, &["t1", "t2", "t3"]);
    let _ = cairn::observe::llm::parse_category(&text);
}

/// The MEMORY.md entries the reflector's targets may name (the seeds name them).
const ENTRIES: &[&str] = &["Use tabs in Rust code", "NFS mounts need root to unmount"];

fn reflector_xml(bytes: &[u8]) {
    let entries: Vec<String> = ENTRIES.iter().map(|e| e.to_string()).collect();
    let _ = cairn::reflect::llm::parse(&text(bytes), &["ob-1", "ob-2", "ob-3"], &entries);
}

fn triage_xml(bytes: &[u8]) {
    let text = text(bytes);
    let _ = cairn::triage::llm::parse(&text, &["pr-1", "pr-2", "pr-3"]);
    let _ = cairn::recall::rewrite::parse(&text);
}

fn config(bytes: &[u8]) {
    let Ok(c) = Config::parse(&text(bytes)) else {
        return;
    };
    let _ = Redactor::configured(&c.redact.patterns);
    let _ = cairn::provider::http::Endpoint::join(
        "llm",
        "openai",
        &c.llm.base_url,
        "https://api.openai.com",
        "/v1/chat/completions",
    );
    let _ = cairn::provider::http::Endpoint::join(
        "embed",
        "ollama",
        &c.embed.base_url,
        "http://localhost:11434",
        "/api/embed",
    );
    let _ = cairn::provider::model_id(&c.embed);
}

fn agent_settings(bytes: &[u8]) {
    use cairn::hooks::agents::{self, Agent};
    thread_local!(static REPO: Repo = scratch("agent_settings"));
    let _ = agents::read_input(bytes);
    REPO.with(|repo| mcp_registration(repo, bytes));
    REPO.with(|repo| {
        for agent in [Agent::Claude, Agent::Codex] {
            let file = write(repo, "settings.json", bytes);
            let installed = agents::install(agent, &file, Path::new("/opt/bin/cairn"), repo.root());
            let Ok(removed) = agents::uninstall(agent, &file) else {
                continue;
            };
            // Uninstall cuts exactly what install inserted: a file that held none of cairn's
            // hooks comes back byte for byte, and is never deleted (issue 31: an empty list or
            // `hooks` object, or a file that was `{}`, used to go with cairn's hooks).
            let ours = String::from_utf8_lossy(bytes).contains("hooks run");
            if installed.is_ok_and(|o| o.changed && !o.created) && !ours {
                assert!(!removed.deleted, "uninstall deleted the file ({agent:?})");
                let after = std::fs::read(&file).unwrap_or_default();
                assert!(
                    after == bytes,
                    "install then uninstall changed the file ({agent:?})"
                );
            }
        }
    });
}

/// `cairn mcp install` then `uninstall` on the same bytes as Claude Code's `.claude.json` and
/// Codex's `config.toml`: a file that held no `cairn` server comes back byte for byte.
fn mcp_registration(repo: &Repo, bytes: &[u8]) {
    use cairn::hooks::agents::{Agent, mcp};
    for (agent, name) in [
        (Agent::Claude, ".claude.json"),
        (Agent::Codex, "config.toml"),
    ] {
        let file = write(repo, name, bytes);
        let installed = mcp::install(agent, &file, Path::new("/opt/bin/cairn"), repo.root());
        if !installed.is_ok_and(|o| o.changed) {
            continue;
        }
        let removed = mcp::uninstall(agent, &file).expect("uninstall what install wrote");
        assert!(removed.changed && !removed.deleted, "{agent:?}");
        if !String::from_utf8_lossy(bytes).contains("cairn") {
            let after = std::fs::read(&file).unwrap_or_default();
            assert!(
                after == bytes,
                "mcp install then uninstall changed the file ({agent:?})"
            );
        }
    }
}

fn mcp(bytes: &[u8]) {
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let _ = cairn::mcp::decode_request(line);
    }
}

/// The input's first line names the API (and, for embeddings, how many texts were sent); the
/// rest is the reply body the local server answers with.
fn split_head(bytes: &[u8]) -> (String, &[u8]) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (
            String::from_utf8_lossy(&bytes[..i]).into_owned(),
            &bytes[i + 1..],
        ),
        None => (String::new(), bytes),
    }
}

fn chat_reply(bytes: &[u8]) {
    use cairn::provider::ChatClient;
    static CLIENTS: OnceLock<Vec<(&'static str, ChatClient)>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(|| {
        let url = reply::server();
        ["openai", "anthropic", "ollama"]
            .into_iter()
            .map(|api| {
                let mut llm = Config::default().llm;
                llm.provider = api.into();
                llm.model = "m".into();
                llm.base_url = url.clone();
                let client = ChatClient::with_settings(&llm, &settings(), &|_| None)
                    .expect("a chat client")
                    .expect("a provider is configured");
                (api, client)
            })
            .collect()
    });
    let (head, body) = split_head(bytes);
    let client = clients
        .iter()
        .find(|(api, _)| head.trim() == *api)
        .unwrap_or(&clients[bytes.len() % clients.len()]);
    reply::set(body);
    let _ = client.1.complete("system", "user", 64);
}

fn embed_reply(bytes: &[u8]) {
    use cairn::provider::{EmbedClient, InputType};
    static CLIENTS: OnceLock<Vec<(&'static str, EmbedClient)>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(|| {
        let url = reply::server();
        ["ollama", "openai", "voyage"]
            .into_iter()
            .map(|api| {
                let mut embed = Config::default().embed;
                embed.provider = api.into();
                embed.model = "m".into();
                embed.base_url = url.clone();
                let client = EmbedClient::with_settings(&embed, &settings(), &|_| None)
                    .expect("an embedding client");
                (api, client)
            })
            .collect()
    });
    let (head, body) = split_head(bytes);
    let mut words = head.split_whitespace();
    let api = words.next().unwrap_or_default();
    let count = words
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 300);
    let client = clients
        .iter()
        .find(|(name, _)| api == *name)
        .unwrap_or(&clients[bytes.len() % clients.len()]);
    let texts: Vec<String> = (0..count).map(|i| format!("text {i}")).collect();
    reply::set(body);
    let _ = client.1.embed(&texts, InputType::Document);
}

fn settings() -> cairn::provider::http::Settings {
    let mut s = cairn::provider::http::Settings::from_timeout_secs(5);
    s.env_proxy = false;
    s
}
