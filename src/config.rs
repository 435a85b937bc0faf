//! `cairn.toml`: the repository's configuration.
//!
//! Every key has a default, so an empty file works; `cairn init` writes [`DEFAULT_TOML`], which
//! spells every default out (a unit test keeps the two in step). Unknown keys are an error that
//! names the file and line: a typo silently ignored is a setting silently lost.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Kind, Result};

/// The file name, at the repository root.
pub const FILE_NAME: &str = "cairn.toml";

/// The configuration as `cairn init` writes it: every key with its default value.
pub const DEFAULT_TOML: &str = r#"# cairn configuration. Every key below is set to its default; an empty file works the same.

[recall]
# Default profile when none is asked for: lean | balanced | deep | auto.
profile = "auto"
# Ranked lists: words (BM25) | vectors | hybrid (words, soft word matches and vectors, fused
# by standard score).
mode = "hybrid"
# Weights of hybrid's lists: BM25, the query's words matched by meaning word for word, and
# the cosine of whole texts.
words_weight = 1.0
soft_weight = 0.8
vectors_weight = 0.5
# How hybrid fuses its lists: standard (each list's scores as standard scores, weighed and
# summed) | rrf (reciprocal rank fusion, weight / (rrf_k + rank)).
fusion = "standard"
rrf_k = 60.0
# Vector matches below this cosine are not recalled.
min_similarity = 0.2
# A result that shares no word with the query (after the tokenizer and stop words) is kept
# only when it is this close by meaning: its whole-text cosine at least relevance_cosine, or
# its soft match covering at least relevance_soft of the query's IDF weight. Nonsense finds
# nothing. On the LoCoMo dev split (hybrid R@10) the floor costs nothing (0.670 → 0.671: its
# turns open with a speaker's name that the questions share); with those names left out, so
# that fewer results share a word, no floor 0.623, these values 0.622 (R@20 0.694 → 0.693),
# 0.4 costs R@20 0.008 and "a shared word always" 0.004 / 0.019. These values keep a
# paraphrase ("network filesystem mounts" for an NFS note, cosine 0.36) and drop the unrelated
# records that filled every list (cosines 0.20 to 0.32).
relevance_cosine = 0.33
relevance_soft = 0.35
# Diversity of the final list: maximal marginal relevance picks each next result by
# λ × relevance − (1 − λ) × its closeness to those already picked; 1 keeps the fused order.
# Off: on the LoCoMo dev split λ 0.85 and 0.7 moved multi-hop questions by -0.01 to +0.00.
diversity = 1.0
# A record whose time falls in the span the query names ("in May", "last week", "on 21 May,
# 2023", "in 2023", "yesterday") has its score raised by this factor, as decay lowers one; 1 is
# off. A boost, never a filter: a fact told on another day is still found by its words.
time_boost = 3.0
# An observation in the words of a person the query names (a dialogue turn stored as "Name:
# what they said", and the query holds Name) has its hybrid score raised by this factor (+ ln
# f on the fused score; words mode and rank fusion are left alone); 1 is off.
# On the LoCoMo dev split (hybrid R@10, categories 1-4 / multi-hop / adversarial) off 0.738 /
# 0.431 / 0.882, 2 0.748 / 0.443 / 0.873, 4 0.758 / 0.464 / 0.867, 8 0.761 / 0.471 / 0.848,
# 20 0.766 / 0.487 / 0.776: a stronger factor works as a filter, and fails the questions that
# name the wrong person.
speaker_boost = 4.0
# Pseudo-relevance feedback: the best feedback_docs records of a first round (0 is off) feed a
# second, fused with the first: the query's vector moved towards theirs (Rocchio, by
# feedback_beta) at feedback_vectors_weight, and BM25 for the feedback_terms words that weigh
# most in them at feedback_words_weight. For the second and third record of an answer spread
# over several, which share words with the first more than with the query. Off: on the LoCoMo
# dev split 3 took hybrid R@10 (categories 1-4) 0.736 -> 0.745 and multi-hop 0.432 -> 0.439,
# but a recall's median 54 -> 83-94 ms (debug build); for a deep search, set 3.
feedback_docs = 0
feedback_beta = 0.5
feedback_terms = 8
feedback_vectors_weight = 0.3
feedback_words_weight = 0.3
# Time decay, per day, by record kind (0 = none).
decay = { observation = 0.01, slog = 0.01, adr = 0.0, memory = 0.0, card = 0.01, episode = 0.01, note = 0.01 }
# The share of a score that never decays: score × (floor + (1 - floor) × exp(-rate × days)),
# so recency orders like matches but an old fact keeps at least this share of its weight.
decay_floor = 0.5
# Multiplier for superseded ADRs and stale observations.
stale_factor = 0.5

[profiles.lean]
limit = 3
rewrite = false

[profiles.balanced]
limit = 7
rewrite = true

[profiles.deep]
limit = 15
rewrite = true

[llm]
# Provider for observing, rewriting and reflecting: "" (none) | openai | anthropic | ollama.
provider = ""
base_url = ""
model = ""
# Name of the environment variable that holds the API key (never the key itself).
api_key_env = ""
timeout_secs = 30
rewrite_timeout_ms = 2000

[embed]
# builtin | ollama | openai | voyage
provider = "builtin"
base_url = ""
model = ""
api_key_env = ""
timeout_secs = 30

[gate]
# Observations shorter than this are discarded.
min_chars = 12
# Cosine similarity above which a new observation merges into an existing one.
dedup_threshold = 0.85

[git]
# Commit every change cairn makes (one commit per command). false leaves changes in the tree.
commit = true
# Identity used when git has none configured (user.name / user.email).
fallback_name = "cairn"
fallback_email = "cairn@localhost"

[redact]
# Extra regular expressions whose matches are redacted before anything is written.
patterns = []

[memory]
# MEMORY.md is injected into every session: its size in tokens (about 4 characters each).
# `cairn memory lint` fails above it; `cairn brief` prints whole entries up to it.
budget_tokens = 3000

[triage]
# Tier 1 promotes a proposal that cites an ADR, a path or a command, with a confidence above
# promote_confidence and nothing like it in MEMORY.md; false leaves every promotion (the
# rules' and the LLM's) to a person in `cairn review`.
auto_promote = true
promote_confidence = 0.8
# Proposals below this confidence are rejected.
reject_confidence = 0.3
# A proposal this close (cosine, built-in embedding) to an entry merges into it.
similar_cosine = 0.85
# Proposals per LLM call in tier 2.
batch_size = 20
[reflect]
# `cairn reflect`'s built-in reflector. An observation whose vector is at least this close
# (cosine, built-in model) to an entry of MEMORY.md is already said there: nothing is proposed.
said_cosine = 0.85
# Observations of one category at least this close are one proposal citing them all.
join_cosine = 0.8
# Allowed observations below this write confidence are not proposed.
min_confidence = 0.5
# The LLM reflector's observations per call, in estimated tokens (4 characters each): a larger
# backlog is reflected in several calls, each with MEMORY.md; any bad reply writes nothing.
llm_input_tokens = 12000

[maintain]
# `cairn maintain`'s dedup sweep: active observations at least this close (cosine of their
# vectors, confirmed on their distinctive part as the write gate's dedup does) are one: the
# weaker is marked superseded by the stronger, which takes its merged count.
dedup_cosine = 0.85
# Observations stored (or last confirmed) more than this many days ago and never recalled are
# marked stale.
stale_days = 90
# Stale observations whose stale mark is older than this many days are soft-deleted (a `delete`
# event; nothing is removed from the files, `cairn restore ID` undoes it).
delete_days = 180

[telemetry]
# Keep the text of recall and brief queries in .cairn/telemetry.jsonl (redacted, as every text
# telemetry keeps). Off: an event keeps only a query's length in words and characters.
queries = false

[mcp]
# How long a write called over MCP (`cairn mcp`) waits for the repository lock another process
# holds, in milliseconds; then the call is a tool error of kind `busy` and nothing is written.
# Reads never wait for it.
lock_wait_ms = 10000

[agents.claude-code]
# The longest briefing cairn's session-start hook gives Claude Code, in characters of its
# additionalContext as Claude Code counts them (JavaScript's length: UTF-16 code units, so a
# character outside the Basic Multilingual Plane, such as an emoji, counts 2). Claude Code
# 2.1.332 keeps up to 10,000 inline and puts a longer one in a file, showing the model a 2 KB
# preview. The briefing is filled by priority (MEMORY.md, then what is recalled), whole
# entries only, and says what it left out; 0 is no limit. ADR 84.
briefing_chars = 9500

[agents.codex]
# The same for Codex, in Codex's own token estimate (UTF-8 bytes / 4, rounded up). Codex
# 0.171.0 keeps up to 2,500 and cuts the middle out of a longer one.
briefing_tokens = 2400

[agents.pi]
# pi appends the briefing to its system prompt whole: no limit (0). A limit counts characters
# as pi's JavaScript does, like briefing_chars for Claude Code.
briefing_chars = 0
"#;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub recall: Recall,
    pub profiles: BTreeMap<String, Profile>,
    pub llm: Llm,
    pub embed: Embed,
    pub gate: Gate,
    pub git: Git,
    pub redact: Redact,
    pub memory: Memory,
    pub triage: Triage,
    pub reflect: Reflect,
    pub maintain: Maintain,
    pub telemetry: Telemetry,
    pub mcp: Mcp,
    pub agents: Agents,
}

impl Default for Config {
    fn default() -> Self {
        let profile = |limit, rewrite| Profile {
            limit,
            rewrite: Some(rewrite),
        };
        Config {
            recall: Recall::default(),
            profiles: BTreeMap::from([
                ("lean".to_string(), profile(3, false)),
                ("balanced".to_string(), profile(7, true)),
                ("deep".to_string(), profile(15, true)),
            ]),
            llm: Llm::default(),
            embed: Embed::default(),
            gate: Gate::default(),
            git: Git::default(),
            redact: Redact::default(),
            memory: Memory::default(),
            triage: Triage::default(),
            reflect: Reflect::default(),
            maintain: Maintain::default(),
            telemetry: Telemetry::default(),
            mcp: Mcp::default(),
            agents: Agents::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Recall {
    pub profile: String,
    pub mode: String,
    pub words_weight: f64,
    pub soft_weight: f64,
    pub vectors_weight: f64,
    pub fusion: String,
    pub rrf_k: f64,
    pub min_similarity: f64,
    pub relevance_cosine: f64,
    pub relevance_soft: f64,
    pub diversity: f64,
    pub time_boost: f64,
    pub speaker_boost: f64,
    pub feedback_docs: usize,
    pub feedback_beta: f64,
    pub feedback_terms: usize,
    pub feedback_vectors_weight: f64,
    pub feedback_words_weight: f64,
    pub decay: BTreeMap<String, f64>,
    pub decay_floor: f64,
    pub stale_factor: f64,
}

impl Default for Recall {
    fn default() -> Self {
        let decay = [
            ("observation", 0.01),
            ("slog", 0.01),
            ("adr", 0.0),
            ("memory", 0.0),
            ("card", 0.01),
            ("episode", 0.01),
            ("note", 0.01),
        ];
        Recall {
            profile: "auto".to_string(),
            mode: "hybrid".to_string(),
            words_weight: 1.0,
            soft_weight: 0.8,
            vectors_weight: 0.5,
            fusion: "standard".to_string(),
            rrf_k: 60.0,
            min_similarity: 0.2,
            relevance_cosine: 0.33,
            relevance_soft: 0.35,
            diversity: 1.0,
            time_boost: 3.0,
            speaker_boost: 4.0,
            feedback_docs: 0,
            feedback_beta: 0.5,
            feedback_terms: 8,
            feedback_vectors_weight: 0.3,
            feedback_words_weight: 0.3,
            decay: decay.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            decay_floor: 0.5,
            stale_factor: 0.5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub limit: usize,
    /// Whether recall rewrites the query through the LLM; unset, the profile's own default
    /// (balanced and deep do, lean does not), so a table that sets only `limit` keeps it.
    #[serde(default)]
    pub rewrite: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Llm {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub timeout_secs: u64,
    pub rewrite_timeout_ms: u64,
}

impl Default for Llm {
    fn default() -> Self {
        Llm {
            provider: String::new(),
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            timeout_secs: 30,
            rewrite_timeout_ms: 2000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Embed {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub timeout_secs: u64,
}

impl Default for Embed {
    fn default() -> Self {
        Embed {
            provider: "builtin".to_string(),
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            timeout_secs: 30,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gate {
    pub min_chars: usize,
    pub dedup_threshold: f64,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            min_chars: 12,
            dedup_threshold: 0.85,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Git {
    pub commit: bool,
    pub fallback_name: String,
    pub fallback_email: String,
}

impl Default for Git {
    fn default() -> Self {
        Git {
            commit: true,
            fallback_name: "cairn".to_string(),
            fallback_email: "cairn@localhost".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mcp {
    /// How long a write called over MCP waits for the repository lock another process holds,
    /// in milliseconds, before it is a tool error (kind `busy`).
    pub lock_wait_ms: u64,
}

impl Default for Mcp {
    fn default() -> Self {
        Mcp {
            lock_wait_ms: 10_000,
        }
    }
}

/// `[agents.NAME]`: what each agent's session-start hook may print, in the agent's own unit;
/// 0 is no limit (ADR 84).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Agents {
    #[serde(rename = "claude-code")]
    pub claude_code: ClaudeCodeAgent,
    pub codex: CodexAgent,
    pub pi: PiAgent,
}

/// `[agents.claude-code]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaudeCodeAgent {
    /// In characters as Claude Code's JavaScript counts them (UTF-16 code units).
    pub briefing_chars: usize,
}

impl Default for ClaudeCodeAgent {
    fn default() -> Self {
        ClaudeCodeAgent {
            briefing_chars: 9_500,
        }
    }
}

/// `[agents.codex]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodexAgent {
    /// In Codex's token estimate (UTF-8 bytes / 4, rounded up).
    pub briefing_tokens: usize,
}

impl Default for CodexAgent {
    fn default() -> Self {
        CodexAgent {
            briefing_tokens: 2_400,
        }
    }
}

/// `[agents.pi]`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PiAgent {
    /// In characters as pi's JavaScript counts them; 0 (the default): pi keeps it whole.
    pub briefing_chars: usize,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Redact {
    pub patterns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Memory {
    /// MEMORY.md's budget, in tokens of about four characters.
    pub budget_tokens: usize,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            budget_tokens: 3000,
        }
    }
}

/// `[triage]`: the thresholds of `cairn triage`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Triage {
    pub auto_promote: bool,
    pub promote_confidence: f64,
    pub reject_confidence: f64,
    pub similar_cosine: f64,
    pub batch_size: usize,
}

impl Default for Triage {
    fn default() -> Self {
        Triage {
            auto_promote: true,
            promote_confidence: 0.8,
            reject_confidence: 0.3,
            similar_cosine: 0.85,
            batch_size: 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reflect {
    /// An observation this close (cosine) to a MEMORY.md entry is already said there.
    pub said_cosine: f64,
    /// Observations of one category this close are joined into one proposal.
    pub join_cosine: f64,
    /// Allowed observations below this write confidence are not proposed.
    pub min_confidence: f64,
    /// The LLM reflector's observations per call, in estimated tokens.
    pub llm_input_tokens: usize,
}

impl Default for Reflect {
    fn default() -> Self {
        Reflect {
            said_cosine: 0.85,
            join_cosine: 0.8,
            min_confidence: 0.5,
            llm_input_tokens: 12_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Maintain {
    /// Active observations this close (cosine) are one: the weaker is superseded.
    pub dedup_cosine: f64,
    /// Never-recalled observations stored (or last confirmed) longer ago than this are marked
    /// stale.
    pub stale_days: u32,
    /// Stale observations whose stale mark is older than this are soft-deleted.
    pub delete_days: u32,
}

impl Default for Maintain {
    fn default() -> Self {
        Maintain {
            dedup_cosine: 0.85,
            stale_days: 90,
            delete_days: 180,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Telemetry {
    /// Keep the (redacted) text of queries in telemetry events; off, only their length.
    pub queries: bool,
}

impl Config {
    /// Reads `cairn.toml` at `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(err) => return Err(Error::io(path.display(), &err)),
        };
        Config::parse(&text).map_err(|message| {
            Error::new(Kind::Config, format!("{}: {message}", path.display())).with_fix(format!(
                "correct {} (see `cairn init` for every key)",
                FILE_NAME
            ))
        })
    }

    /// Parses the text of a configuration file; the error names the line.
    pub fn parse(text: &str) -> std::result::Result<Config, String> {
        toml::from_str(text).map_err(|err: toml::de::Error| {
            let line = err
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            let message = err.message().to_string();
            match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_toml_spells_out_the_defaults() {
        assert_eq!(Config::parse(DEFAULT_TOML).unwrap(), Config::default());
    }

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn a_profile_table_without_rewrite_keeps_the_profiles_own_default() {
        let c = Config::parse("[profiles.balanced]\nlimit = 5\n").unwrap();
        assert_eq!(c.profiles["balanced"].rewrite, None);
        assert!(crate::recall::Profile::Balanced.rewrites(&c));
        assert!(!crate::recall::Profile::Lean.rewrites(&c));
    }

    #[test]
    fn unknown_key_names_its_line() {
        let err = Config::parse("[git]\ncommit = true\ncomit = false\n").unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
    }
}
