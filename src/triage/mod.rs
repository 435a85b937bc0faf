//! Triage of pending reflection proposals: tier 1, rules over data; tier 2, the LLM
//! ([`llm`]); tier 3 is what is left, for a person (`cairn review`).
//!
//! The rules ([`rule`], in this order, the first that holds decides):
//!
//! 1. reject a text holding a redaction marker (`[REDACTED:…]`) or a local home path
//!    (`/Users/NAME`, `/home/NAME`, `C:\Users\NAME`), the rule named in the reason (the
//!    reflector's own [`crate::reflect::clean::flaw`]: such a text is never a MEMORY.md line);
//!    then an instruction-text artifact or a text shorter than `[gate] min_chars` (the write
//!    gate's own rules, [`crate::observe::gate::decide`]);
//! 2. reject a confidence below `[triage] reject_confidence` (0.3);
//! 3. reject an exact duplicate: the text, normalized, is already an entry of MEMORY.md (for a
//!    `merge`, an entry other than those it merges);
//! 4. merge a text similar to an existing entry (built-in embedding, cosine above
//!    `[triage] similar_cosine`): the entry's text is kept, the proposal is decided `merge`
//!    with the entry named in the reason;
//! 5. promote a text that cites an ADR, a path or a command
//!    ([`crate::observe::gate::cites_something`]), with a confidence above
//!    `[triage] promote_confidence` (0.8), when `[triage] auto_promote` is on.
//!
//! A `remove` meets only rule 2: taking an entry out of MEMORY.md is for the LLM or a person.
//! Entries are compared with MEMORY.md as it is in the working tree (a person's uncommitted
//! edit counts) and with what this run promoted before, so two proposals of one text are not
//! both promoted. Nothing here writes: [`Triage`] is the plan, which `cairn triage` carries out.

pub mod llm;

use serde::Serialize;

use crate::embed::{Embedder, cosine};
use crate::observe::gate::{self, Verdict};
use crate::proposals::{Decision, Op, Proposal, Tier};
use crate::store::normalize;

/// The thresholds of tier 1 (`[triage]` and `[gate] min_chars` in cairn.toml).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub auto_promote: bool,
    pub promote_confidence: f64,
    pub reject_confidence: f64,
    pub similar_cosine: f64,
    pub min_chars: usize,
}

impl Settings {
    pub fn from_config(config: &crate::config::Config) -> Settings {
        Settings {
            auto_promote: config.triage.auto_promote,
            promote_confidence: config.triage.promote_confidence,
            reject_confidence: config.triage.reject_confidence,
            similar_cosine: config.triage.similar_cosine,
            min_chars: config.gate.min_chars,
        }
    }
}

/// One decision of a triage run: who, what and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ruling {
    pub id: String,
    pub decision: Decision,
    pub tier: Tier,
    pub reason: String,
    /// The text that goes into MEMORY.md when it differs from the proposal's (the LLM's
    /// clean text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For `merge`: the entry kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
}

/// MEMORY.md's entries as the rules compare against them: text, normalized key and vector.
#[derive(Debug, Clone, Default)]
pub struct Entries {
    texts: Vec<String>,
    keys: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

impl Entries {
    /// The entries of the MEMORY.md `text`, embedded by `model`.
    pub fn of(text: &str, model: &dyn Embedder) -> Entries {
        let parsed = crate::memory::parse(text);
        let texts: Vec<String> = parsed
            .loose
            .iter()
            .chain(parsed.sections.iter().flat_map(|s| s.entries.iter()))
            .map(|e| e.text.clone())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = if refs.is_empty() {
            Vec::new()
        } else {
            model.embed(&refs)
        };
        Entries {
            keys: texts.iter().map(|t| normalize(t)).collect(),
            texts,
            vectors,
        }
    }

    /// Adds an entry (a text this run promoted).
    pub fn push(&mut self, text: &str, vector: Vec<f32>) {
        self.texts.push(text.to_string());
        self.keys.push(normalize(text));
        self.vectors.push(vector);
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// The first rule that decides `p` (whose text embeds to `vector`) against `entries`, as
/// `(decision, reason, entry merged into)`; `None` when no rule holds.
pub fn rule(
    p: &Proposal,
    vector: &[f32],
    entries: &Entries,
    s: &Settings,
) -> Option<(Decision, String, Option<String>)> {
    let reject = |reason: String| Some((Decision::Reject, reason, None));
    if p.op != Op::Remove
        && let Some(flaw) = crate::reflect::clean::flaw(&p.text)
    {
        return reject(flaw.rule().to_string());
    }
    if p.op != Op::Remove {
        let g = gate::decide(&p.text, Verdict::Allow, p.confidence, s.min_chars);
        if g.verdict == Verdict::Discard {
            return match g.reason {
                "too short" => reject(format!(
                    "too short: {} characters, fewer than {}",
                    p.text.trim().chars().count(),
                    s.min_chars
                )),
                other => reject(other.to_string()),
            };
        }
    }
    if p.confidence < s.reject_confidence {
        return reject(format!(
            "confidence {:.2} below {}",
            p.confidence, s.reject_confidence
        ));
    }
    if p.op == Op::Remove {
        return None;
    }
    // A merge's own targets are not duplicates of it (it may keep one of their texts); a
    // replace whose text is its target's changes nothing.
    let excluded: Vec<String> = match p.op {
        Op::Merge => p.targets.iter().map(|t| normalize(t)).collect(),
        _ => Vec::new(),
    };
    let targets: Vec<String> = p.targets.iter().map(|t| normalize(t)).collect();
    let key = normalize(&p.text);
    if let Some(i) = entries
        .keys
        .iter()
        .position(|k| *k == key && !excluded.contains(k))
    {
        return reject(format!(
            "exact duplicate of the MEMORY.md entry \"{}\"",
            entries.texts[i]
        ));
    }
    let mut best: Option<(usize, f32)> = None;
    for (i, v) in entries.vectors.iter().enumerate() {
        if targets.contains(&entries.keys[i]) {
            continue;
        }
        let c = cosine(vector, v);
        if f64::from(c) > s.similar_cosine && best.is_none_or(|(_, b)| c > b) {
            best = Some((i, c));
        }
    }
    if let Some((i, c)) = best {
        let entry = entries.texts[i].clone();
        return Some((
            Decision::Merge,
            format!(
                "similar to the MEMORY.md entry \"{entry}\" (cosine {c:.2}): the entry's text is kept"
            ),
            Some(entry),
        ));
    }
    if s.auto_promote && p.confidence > s.promote_confidence && gate::cites_something(&p.text) {
        return Some((
            Decision::Promote,
            format!(
                "cites an ADR, a path or a command; confidence {:.2} above {}; nothing like it in MEMORY.md",
                p.confidence, s.promote_confidence
            ),
            None,
        ));
    }
    None
}

/// Tier 1 over `pending` (in order), against the MEMORY.md `memory`: one ruling or `None`
/// (left for tier 2 or 3) per proposal. A promoted text joins the entries the next
/// proposals meet.
pub fn tier1(
    pending: &[&Proposal],
    memory: &str,
    model: &dyn Embedder,
    s: &Settings,
) -> Vec<Option<Ruling>> {
    let mut entries = Entries::of(memory, model);
    let texts: Vec<&str> = pending.iter().map(|p| p.text.as_str()).collect();
    let vectors = if texts.is_empty() {
        Vec::new()
    } else {
        model.embed(&texts)
    };
    let mut out = Vec::with_capacity(pending.len());
    for (p, v) in pending.iter().zip(vectors) {
        let ruled = rule(p, &v, &entries, s);
        if let Some((Decision::Promote, _, _)) = &ruled {
            entries.push(&p.text, v);
        }
        out.push(ruled.map(|(decision, reason, into)| Ruling {
            id: p.id.clone(),
            decision,
            tier: Tier::Auto,
            reason,
            text: None,
            into,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Builtin;

    const MEMORY: &str = "# Memory\n\n## Rules and conventions\n\n\
        - (2026-11-01) Never deploy on Fridays\n\
        - (2026-11-02) Run `cargo fmt` before committing\n";

    fn settings() -> Settings {
        Settings {
            auto_promote: true,
            promote_confidence: 0.8,
            reject_confidence: 0.3,
            similar_cosine: 0.85,
            min_chars: 12,
        }
    }

    fn p(op: Op, text: &str, targets: &[&str], confidence: f64) -> Proposal {
        Proposal::new(
            op,
            "Rules and conventions",
            text,
            targets.iter().map(|t| t.to_string()).collect(),
            "",
            vec!["ob-1".into()],
            confidence,
            "builtin",
            "2026-12-01T10:00:00Z".parse().unwrap(),
        )
    }

    fn decide(proposal: &Proposal, s: &Settings) -> Option<(Decision, String)> {
        let model = Builtin::shared();
        let entries = Entries::of(MEMORY, model);
        let v = model.embed(&[proposal.text.as_str()]).remove(0);
        rule(proposal, &v, &entries, s).map(|(d, r, _)| (d, r))
    }

    #[test]
    fn each_rule_decides_its_case() {
        let s = settings();
        let cases: &[(Proposal, Option<Decision>, &str)] = &[
            (
                p(Op::Add, "Add after line 3: foo", &[], 0.9),
                Some(Decision::Reject),
                "artifact",
            ),
            (
                p(
                    Op::Add,
                    "the deploy token is [REDACTED:github-token] for CI",
                    &[],
                    0.9,
                ),
                Some(Decision::Reject),
                "redaction marker",
            ),
            (
                p(
                    Op::Add,
                    "`npm run check` fails in /Users/ana/src/app",
                    &[],
                    0.9,
                ),
                Some(Decision::Reject),
                "home path",
            ),
            (
                p(Op::Add, "use tabs", &[], 0.9),
                Some(Decision::Reject),
                "too short",
            ),
            (
                p(Op::Add, "Deploys go through `make release`", &[], 0.2),
                Some(Decision::Reject),
                "confidence 0.20",
            ),
            (
                p(Op::Add, "never deploy on fridays.", &[], 0.9),
                Some(Decision::Reject),
                "exact duplicate",
            ),
            (
                p(Op::Add, "Never deploy on a Friday", &[], 0.9),
                Some(Decision::Merge),
                "similar to",
            ),
            (
                p(Op::Add, "Release notes live in docs/CHANGES.md", &[], 0.9),
                Some(Decision::Promote),
                "cites",
            ),
            (
                p(Op::Add, "Release notes live in docs/CHANGES.md", &[], 0.8),
                None,
                "",
            ),
            (
                p(Op::Add, "The team prefers small pull requests", &[], 0.95),
                None,
                "",
            ),
            (
                p(
                    Op::Remove,
                    "Never deploy on Fridays",
                    &["Never deploy on Fridays"],
                    0.9,
                ),
                None,
                "",
            ),
            (
                p(
                    Op::Remove,
                    "Never deploy on Fridays",
                    &["Never deploy on Fridays"],
                    0.1,
                ),
                Some(Decision::Reject),
                "confidence",
            ),
            (
                p(
                    Op::Replace,
                    "Never deploy on Fridays or weekends, see ADR 7",
                    &["Never deploy on Fridays"],
                    0.9,
                ),
                Some(Decision::Promote),
                "cites",
            ),
            (
                p(
                    Op::Merge,
                    "Never deploy on Fridays",
                    &[
                        "Never deploy on Fridays",
                        "Run `cargo fmt` before committing",
                    ],
                    0.9,
                ),
                None,
                "",
            ),
        ];
        for (proposal, want, reason) in cases {
            let got = decide(proposal, &s);
            assert_eq!(
                got.as_ref().map(|g| g.0),
                *want,
                "{}: {got:?}",
                proposal.text
            );
            if let Some((_, r)) = got {
                assert!(r.contains(reason), "{}: {r}", proposal.text);
            }
        }
    }

    #[test]
    fn auto_promote_off_promotes_nothing() {
        let s = Settings {
            auto_promote: false,
            ..settings()
        };
        let proposal = p(Op::Add, "Release notes live in docs/CHANGES.md", &[], 0.95);
        assert_eq!(decide(&proposal, &s), None);
    }

    #[test]
    fn the_second_of_two_equal_proposals_is_a_duplicate_of_the_first() {
        let a = p(Op::Add, "Release notes live in docs/CHANGES.md", &[], 0.9);
        let mut b = p(Op::Add, "Release notes live in docs/CHANGES.md.", &[], 0.9);
        b.observations = vec!["ob-2".into()];
        let out = tier1(&[&a, &b], MEMORY, Builtin::shared(), &settings());
        assert_eq!(out[0].as_ref().map(|r| r.decision), Some(Decision::Promote));
        assert_eq!(out[1].as_ref().map(|r| r.decision), Some(Decision::Reject));
    }
}
