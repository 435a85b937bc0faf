//! The agents' own memories read by `cairn sessions ingest --all` (ADR 136): Claude Code's
//! auto memory folders and Codex's `memories_1.sqlite` (read by [`crate::sessions::memories`]),
//! each memory an observation through redaction, the write gate and dedup (by id, and by
//! meaning against what is stored: the same fact from two agents, or already in cairn, is one
//! observation). Its source names the agent and where the memory lives
//! (`claude-code-memory:FILE`, `codex-memory:DB#THREAD`), its time is the agent's.
//!
//! Incremental: `.cairn/agent-memories.json` keeps each file's size and mtime (a database's
//! with its `-wal`), so an unchanged set costs a listing and a stat each. A memory whose text
//! changed gets a new observation and its old one a `supersede` event; one gone from its file
//! (or whose file is gone) is marked `stale`. Without the checkpoints every file is read, and
//! ids make the second reading write nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::redact::Redactor;
use crate::repo::Repo;
use crate::sessions::memories::{self, Memory, Skipped, claude, codex};
use crate::store::{self, Event, Op, State};

/// Where the checkpoints live, relative to the repository root.
const CHECKPOINTS: &str = ".cairn/agent-memories.json";

/// Where the agents keep their memories on this machine.
pub struct Homes {
    /// Claude Code's configuration folder (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    pub claude: PathBuf,
    /// Codex's (`$CODEX_HOME`, else `~/.codex`).
    pub codex: PathBuf,
}

impl Homes {
    /// The agents' folders as the environment and `home` say.
    pub fn from_env(home: &Path) -> Homes {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Homes {
            claude: var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude")),
            codex: var("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
        }
    }
}

/// What one reading found and wrote.
#[derive(Debug, Default)]
pub struct Read {
    /// Memory files (and databases) found, and how many were unchanged since the last run.
    pub files: usize,
    pub unchanged: usize,
    pub memories: usize,
    pub stored: u64,
    pub merged: u64,
    pub duplicates: u64,
    pub discarded: u64,
    pub superseded: usize,
    pub stale: usize,
    pub skipped: Vec<Skipped>,
    /// The observations file appended to, if any.
    pub file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stat {
    size: u64,
    mtime_ns: i128,
}

fn stat(path: &Path) -> Option<Stat> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stat {
        size: meta.len(),
        mtime_ns: crate::files::mtime_ns(&meta),
    })
}

/// A file's stat; a database's with its write-ahead log's.
fn stat_source(path: &Path) -> Option<Stat> {
    let mut s = stat(path)?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if let Some(w) = stat(Path::new(&wal)) {
        s.size += w.size;
        s.mtime_ns = s.mtime_ns.max(w.mtime_ns);
    }
    Some(s)
}

/// One place memories are read from.
enum Source {
    /// A Claude Code memory file, in its folder, of its project.
    Claude {
        dir: PathBuf,
        file: PathBuf,
        project: Option<String>,
    },
    Codex(PathBuf),
}

impl Source {
    fn path(&self) -> &Path {
        match self {
            Source::Claude { file, .. } => file,
            Source::Codex(p) => p,
        }
    }
    fn read(&self) -> std::result::Result<Vec<Memory>, Skipped> {
        match self {
            Source::Claude { dir, file, project } => {
                claude::read_file(dir, file, project.as_deref())
            }
            Source::Codex(p) => codex::read(p),
        }
    }
}

/// Claude Code's memory folders: every project's default one, and the folder the user's
/// settings name (`autoMemoryDirectory`, `~/` expanded).
pub fn claude_folders(homes: &Homes, home: &Path) -> Vec<(PathBuf, Option<String>)> {
    let mut out: Vec<(PathBuf, Option<String>)> = claude::project_folders(&homes.claude)
        .into_iter()
        .map(|d| {
            let project = d
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            (d, project)
        })
        .collect();
    if let Ok(text) = std::fs::read_to_string(homes.claude.join("settings.json"))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(dir) = v.get("autoMemoryDirectory").and_then(|d| d.as_str())
    {
        let dir = match dir.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(dir),
        };
        if dir.is_dir() && !out.iter().any(|(d, _)| *d == dir) {
            out.push((dir, None));
        }
    }
    out
}

/// Reads the memories of `agents` (`claude-code`, `codex`) and stores what is new; `extra`
/// names more Claude Code memory folders (a project's own). Appends to the observations file
/// of today (noted first for the ingest's commit) and returns what it did.
#[allow(clippy::too_many_arguments)]
pub fn ingest(
    ctx: &super::Ctx,
    repo: &Repo,
    work: &super::Work,
    agents: &[&str],
    homes: &Homes,
    home: &Path,
    extra: &[(PathBuf, Option<String>)],
    redactor: &Redactor,
) -> Result<Read> {
    let mut sources = Vec::new();
    // The extra folders are read whatever `agents` says (the session-end hook reads only the
    // folders `hooks install --memory` made in the repository).
    let mut folders = if agents.contains(&claude::AGENT) {
        claude_folders(homes, home)
    } else {
        Vec::new()
    };
    for e in extra {
        if !folders.iter().any(|(d, _)| *d == e.0) {
            folders.push(e.clone());
        }
    }
    for (dir, project) in folders {
        for file in claude::files(&dir) {
            sources.push(Source::Claude {
                dir: dir.clone(),
                file,
                project: project.clone(),
            });
        }
    }
    if agents.contains(&codex::AGENT) {
        let db = homes.codex.join(codex::DATABASE);
        if db.is_file() {
            sources.push(Source::Codex(db));
        }
    }
    let mut read = Read {
        files: sources.len(),
        ..Read::default()
    };
    let path = repo.path(CHECKPOINTS);
    let before: BTreeMap<String, Stat> = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    // Only the agents read this time are compared with what was known.
    let ours = |key: &str| {
        sources.iter().any(|s| s.path().to_string_lossy() == key)
            || extra
                .iter()
                .any(|(d, _)| Path::new(key).parent() == Some(d.as_path()))
            || agents.iter().any(|a| {
                (*a == codex::AGENT && key.ends_with(codex::DATABASE))
                    || (*a == claude::AGENT && key.ends_with(".md"))
            })
    };
    let mut after: BTreeMap<String, Stat> = before
        .iter()
        .filter(|(k, _)| !ours(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut changed = Vec::new();
    for s in &sources {
        let key = s.path().to_string_lossy().into_owned();
        let now = stat_source(s.path());
        if now.is_some() && before.get(&key) == now.as_ref() {
            read.unchanged += 1;
        } else {
            changed.push(s);
        }
        if let Some(now) = now {
            after.insert(key, now);
        }
    }
    let gone: Vec<String> = before
        .keys()
        .filter(|k| ours(k) && !after.contains_key(*k))
        .cloned()
        .collect();
    if changed.is_empty() && gone.is_empty() {
        return Ok(read);
    }
    // Read what changed; a file that cannot be read keeps no checkpoint, so it is named again.
    let mut memories: Vec<Memory> = Vec::new();
    let mut reread: BTreeSet<String> = BTreeSet::new();
    for s in changed {
        match s.read() {
            Ok(found) => {
                reread.insert(s.path().to_string_lossy().into_owned());
                memories.extend(found);
            }
            Err(skipped) => {
                after.remove(&skipped.file);
                read.skipped.push(skipped);
            }
        }
    }
    // What a person forgot stays forgotten, however often the agent's file is read again.
    let forgotten = crate::forget::tombstones(repo)?;
    memories.retain(|m| {
        !forgotten.contains(&store::observation_id(
            redactor.redact(&m.text).trim(),
            &m.source(),
        ))
    });
    read.memories = memories.len();
    let live: BTreeSet<String> = memories.iter().map(Memory::source).collect();
    let candidates: Vec<crate::observe::write::Candidate> = memories
        .iter()
        .map(|m| crate::observe::write::Candidate {
            observation: redactor.redact(&m.text).into_owned(),
            timestamp: Some(crate::time::format(m.time)),
            source: Some(m.source()),
            narrative: Some(match &m.project {
                Some(p) => format!("{} memory of project {p}", m.agent),
                None => format!("{} memory", m.agent),
            }),
            ..Default::default()
        })
        .collect();
    let mut seen = store::ids(repo)?;
    let index = if candidates.is_empty() {
        None
    } else {
        Some(crate::index::Index::open(repo)?)
    };
    let settings = crate::observe::admit::Settings {
        raw: false,
        default_source: "agent-memory",
        min_chars: repo.config.gate.min_chars,
        threshold: repo.config.gate.dedup_threshold,
        now: ctx.now,
    };
    let admitted = crate::observe::admit::admit(
        &candidates,
        &settings,
        &mut seen,
        index.as_ref(),
        &mut || {},
    )?;
    read.stored = admitted.kept.len() as u64;
    read.merged = admitted.merged;
    read.duplicates = admitted.duplicates;
    read.discarded = admitted.discarded;
    // The store's active observations of agent memories, by source.
    let loaded = store::load(repo)?;
    let mut by_source: HashMap<&str, Vec<&str>> = HashMap::new();
    for f in &loaded.folded {
        if f.state == State::Active
            && f.superseded_by.is_none()
            && memories::parse_source(&f.obs.source).is_some()
        {
            by_source.entry(&f.obs.source).or_default().push(&f.obs.id);
        }
    }
    // An edited memory is near its own earlier text, so dedup merges it there: it is stored as
    // itself instead, and supersedes that text below.
    let by_id: HashMap<String, &crate::observe::write::Candidate> = candidates
        .iter()
        .map(|c| {
            let source = c.source.clone().unwrap_or_default();
            (store::observation_id(c.observation.trim(), &source), c)
        })
        .collect();
    let mut kept: BTreeSet<String> = admitted.kept.iter().map(|o| o.id.clone()).collect();
    let mut lines = Vec::with_capacity(admitted.lines.len());
    for line in admitted.lines {
        if let Ok(e) = serde_json::from_str::<Event>(&line)
            && e.op == Op::Merge
            && let Some(c) = e.from.as_ref().and_then(|f| by_id.get(f))
            && by_source
                .get(c.source.as_deref().unwrap_or_default())
                .is_some_and(|ids| ids.contains(&e.id.as_str()))
            && let Some(obs) = crate::observe::write::judge(
                c,
                false,
                settings.default_source,
                settings.min_chars,
                settings.now,
            )
            .observation
        {
            kept.insert(obs.id.clone());
            lines.push(serde_json::to_string(&obs).expect("observation serializes"));
            read.stored += 1;
            read.merged -= 1;
            continue;
        }
        lines.push(line);
    }
    // Where each memory's text now lives: its own observation, or the one it merged into.
    let mut merged_into: HashMap<String, String> = HashMap::new();
    for line in &lines {
        if let Ok(e) = serde_json::from_str::<Event>(line)
            && e.op == Op::Merge
            && let Some(from) = e.from
        {
            merged_into.insert(from, e.id);
        }
    }
    let mut current: HashMap<String, String> = HashMap::new();
    for c in &candidates {
        let source = c.source.clone().unwrap_or_default();
        let id = store::observation_id(c.observation.trim(), &source);
        let at = merged_into.get(&id).cloned().unwrap_or(id);
        if seen.contains(&at) || kept.contains(&at) {
            current.insert(source, at);
        }
    }
    // The observations of memories that changed or went away.
    let ts = crate::time::format(ctx.now);
    for f in &loaded.folded {
        if f.state != State::Active || f.superseded_by.is_some() {
            continue;
        }
        let Some((_, locator)) = memories::parse_source(&f.obs.source) else {
            continue;
        };
        let file = locator.split_once('#').map_or(locator, |(f, _)| f);
        let file_gone = gone.iter().any(|g| g == file);
        let file_read = reread.contains(file);
        if !file_gone && !file_read {
            continue;
        }
        match current.get(&f.obs.source) {
            Some(now) if *now == f.obs.id => {}
            Some(now) if live.contains(&f.obs.source) => {
                let mut e = Event::new(Op::Supersede, &f.obs.id, &ts);
                e.by = Some(now.clone());
                lines.push(serde_json::to_string(&e).expect("event serializes"));
                read.superseded += 1;
            }
            _ if live.contains(&f.obs.source) && !file_gone => {
                // Still there, but the gate discarded its new text: the old text is stale.
                lines.push(
                    serde_json::to_string(&Event::new(Op::Stale, &f.obs.id, &ts))
                        .expect("event serializes"),
                );
                read.stale += 1;
            }
            _ => {
                lines.push(
                    serde_json::to_string(&Event::new(Op::Stale, &f.obs.id, &ts))
                        .expect("event serializes"),
                );
                read.stale += 1;
            }
        }
    }
    if !lines.is_empty() {
        let rel = store::current_file(repo, ctx.now);
        ctx.begin_writes(repo, work, std::slice::from_ref(&rel), None)?;
        store::append_to(repo, &rel, &lines, true)?;
        read.file = Some(rel);
    }
    if after != before {
        let text = serde_json::to_string(&after).expect("checkpoints serialize");
        crate::files::write_atomic(&path, text.as_bytes())?;
    }
    Ok(read)
}

/// The folder Claude Code keeps the memories of the project at `root` in: the
/// `autoMemoryDirectory` of the project's local settings, else of the user's, else the default
/// (ADR 135; the policy and flag settings Claude Code reads first are not cairn's to know).
pub fn claude_memory_folder(homes: &Homes, home: &Path, root: &Path) -> Option<PathBuf> {
    let named = |file: PathBuf| -> Option<PathBuf> {
        let text = std::fs::read_to_string(file).ok()?;
        let v: serde_json::Value = serde_json::from_str(crate::jsonl::strip_bom(&text)).ok()?;
        let dir = v.get("autoMemoryDirectory")?.as_str()?;
        Some(match dir.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(dir),
        })
    };
    named(root.join(".claude/settings.local.json"))
        .or_else(|| named(homes.claude.join("settings.json")))
        .or_else(|| claude::default_folder(&homes.claude, &root.to_string_lossy()))
}

/// What Claude Code loads of its own memory at a session start in the project at `root`.
pub struct ClaudeLoaded {
    /// Its `MEMORY.md`.
    pub index: PathBuf,
    /// The observation sources of the memories the loaded part of it names.
    pub sources: std::collections::HashSet<String>,
}

/// The memories Claude Code loads from its own `MEMORY.md` for the project at `root` (the
/// first 200 lines, cut to 25,000 characters): each entry's file, or the entry itself when it
/// points at no file. `None` without such an index.
pub fn claude_loaded(root: &Path, home: &Path) -> Option<ClaudeLoaded> {
    let homes = Homes::from_env(home);
    let dir = claude_memory_folder(&homes, home, root)?;
    let index = dir.join(claude::INDEX);
    let text = std::fs::read_to_string(&index).ok()?;
    let mut sources = std::collections::HashSet::new();
    for e in claude::entries(&claude::loaded_index(&text)) {
        let locator = match &e.file {
            Some(f) if dir.join(f).is_file() => dir.join(f).display().to_string(),
            _ => format!("{}#{}", index.display(), store::normalize(&e.text)),
        };
        sources.insert(memories::source(claude::AGENT, &locator));
    }
    Some(ClaudeLoaded { index, sources })
}

/// Where the agents keep their own copies of the observations `ids` (those whose source is an
/// agent memory): `(agent, place)`, for `cairn forget` to say; cairn never deletes them.
pub fn agent_copies<'a>(
    repo: &Repo,
    ids: impl Iterator<Item = &'a str>,
) -> Result<Vec<(String, String)>> {
    let ids: BTreeSet<&str> = ids.collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let loaded = store::load(repo)?;
    Ok(loaded
        .folded
        .iter()
        .filter(|f| ids.contains(f.obs.id.as_str()))
        .filter_map(|f| {
            let (agent, locator) = memories::parse_source(&f.obs.source)?;
            Some((agent.to_string(), locator.to_string()))
        })
        .collect())
}
