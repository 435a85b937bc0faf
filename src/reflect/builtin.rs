//! The built-in reflector: offline, by vector with the built-in model.
//!
//! 1. Each observation gets a score from how often it was observed (`merged_count`), how
//!    often it was recalled, and its confidence; they are taken best first.
//! 2. Within a category (one MEMORY.md section), an observation whose vector is at least
//!    `[reflect] join_cosine` from a group's first (best) observation joins that group; else it
//!    starts one. Vectors are of what is distinctive (`observe::dedup::distinctive`: for an error
//!    fix, its command and error), and an error fix joins only fixes of the same program.
//! 3. A group whose observations MEMORY.md already says (an entry at `[reflect] said_cosine`,
//!    or the same words) is dropped; every other group is one `add` proposal citing all its
//!    observations, its text that of the most confident one (then the most observed, then the
//!    shortest), ranked by the group's summed score. An error fix seen once (one observation,
//!    never merged) is a session's detail and is not proposed; one that recurs is.
//! 4. When MEMORY.md is over `[memory] budget_tokens`: `merge` of near-duplicate entries of a
//!    section, then `remove` of the least recalled and oldest entries, until it would fit.
//!
//! Many observations become few proposals: a group is one, and what is said is none.

use chrono::{DateTime, Utc};

use std::collections::BTreeSet;

use super::{Input, Reflection, clean, section_of};
use crate::embed::{Builtin, Embedder};
use crate::memory;
use crate::observe::dedup::{ErrorFix, distinctive};
use crate::proposals::{Op, Proposal};
use crate::store::{Observation, normalize};

/// The reflector's name, in proposals and marks.
pub const NAME: &str = "builtin";

/// The thresholds of one reflection.
#[derive(Debug, Clone)]
pub struct Settings {
    pub said_cosine: f64,
    pub join_cosine: f64,
    pub budget_tokens: usize,
    pub now: DateTime<Utc>,
}

/// An observation's weight: how often it was seen and recalled, and how sure it is.
fn score(o: &Observation, recalled: u64) -> f64 {
    (1.0 + f64::from(o.merged_count) + recalled as f64).ln() + o.write_confidence
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
}

/// The program an error fix is about, or `None` for any other text.
fn fix_program(text: &str) -> Option<String> {
    ErrorFix::parse(text.lines().next().unwrap_or(text))
        .map(|f| crate::observe::builtin::program(f.command))
}

/// A text as one MEMORY.md entry: one line, at most `memory::MAX_ENTRY_CHARS` characters
/// (cut at the last sentence end, else the last word, that fits).
pub fn entry_text(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= memory::MAX_ENTRY_CHARS {
        return one;
    }
    let cut: String = one.chars().take(memory::MAX_ENTRY_CHARS - 1).collect();
    if let Some(end) = cut.rfind(". ").filter(|&e| e > cut.len() / 2) {
        return cut[..=end].to_string();
    }
    match cut.rfind(' ') {
        Some(space) => format!("{}…", &cut[..space]),
        None => format!("{cut}…"),
    }
}

/// The words of `text`, lowercased, without punctuation, each as its stem (for "says all the
/// entry says": "Fridays" says "Friday", "rebuilt" says "rebuilds").
fn word_set(text: &str) -> BTreeSet<String> {
    normalize(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(stem)
        .collect()
}

/// A word without its English inflection: plural and third person "s"/"es"/"ies", past "ed",
/// "ing"; an irregular past in "t" after "l"/"n" ("built", "sent") as its present ("build").
fn stem(word: &str) -> String {
    let w = word;
    let cut = |suffix: &str, min: usize| {
        w.strip_suffix(suffix)
            .filter(|s| s.chars().count() >= min)
            .map(str::to_string)
    };
    if let Some(s) = cut("ies", 3) {
        return format!("{s}y");
    }
    for (suffix, min) in [("sses", 2), ("xes", 2), ("ches", 2), ("shes", 2)] {
        if let Some(s) = cut(suffix, min) {
            return format!("{s}{}", &suffix[..suffix.len() - 2]);
        }
    }
    if !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
        && let Some(s) = cut("s", 3)
    {
        return s;
    }
    if let Some(s) = cut("ing", 3).or_else(|| cut("ed", 3)) {
        return s;
    }
    // "built", "rebuilt", "spent", "sent": the present ends in "d".
    if w.len() > 4 && (w.ends_with("lt") || w.ends_with("nt")) && !w.ends_with("ent") {
        return format!("{}d", &w[..w.len() - 1]);
    }
    w.to_string()
}

/// A group of observations that say the same thing.
struct Group {
    category: String,
    program: Option<String>,
    /// Indexes into the observations, best first.
    members: Vec<usize>,
    score: f64,
}

/// Proposes changes to MEMORY.md from `input` (see the module documentation).
pub fn reflect(input: &Input, settings: &Settings) -> Reflection {
    let model = Builtin::shared();
    let obs = &input.observations;
    let recalled = |o: &Observation| input.recalls.get(&o.id).map_or(0, |c| c.count);
    let scores: Vec<f64> = obs.iter().map(|o| score(o, recalled(o))).collect();
    let texts: Vec<String> = obs.iter().map(|o| distinctive(&o.observation)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = model.embed(&refs);

    let mut order: Vec<usize> = (0..obs.len()).collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then_with(|| obs[b].timestamp.cmp(&obs[a].timestamp))
            .then_with(|| obs[a].id.cmp(&obs[b].id))
    });
    let mut groups: Vec<Group> = Vec::new();
    for &i in &order {
        let program = fix_program(&obs[i].observation);
        let mut best: Option<(usize, f64)> = None;
        for (g, group) in groups.iter().enumerate() {
            if group.category != obs[i].category_id || group.program != program {
                continue;
            }
            let sim = dot(&vectors[i], &vectors[group.members[0]]);
            if sim >= settings.join_cosine && best.is_none_or(|(_, s)| sim > s) {
                best = Some((g, sim));
            }
        }
        match best {
            Some((g, _)) => {
                groups[g].members.push(i);
                groups[g].score += scores[i];
            }
            None => groups.push(Group {
                category: obs[i].category_id.clone(),
                program,
                members: vec![i],
                score: scores[i],
            }),
        }
    }

    // What MEMORY.md says.
    let parsed = memory::parse(&input.memory);
    let entries: Vec<(&str, &memory::Entry)> = parsed
        .sections
        .iter()
        .flat_map(|s| s.entries.iter().map(move |e| (s.title.as_str(), e)))
        .chain(parsed.loose.iter().map(|e| ("", e)))
        .collect();
    let entry_texts: Vec<String> = entries.iter().map(|(_, e)| distinctive(&e.text)).collect();
    let entry_refs: Vec<&str> = entry_texts.iter().map(String::as_str).collect();
    let entry_vectors = model.embed(&entry_refs);
    let entry_keys: std::collections::HashSet<String> =
        entries.iter().map(|(_, e)| normalize(&e.text)).collect();
    let said = |i: usize| {
        entry_keys.contains(&normalize(&obs[i].observation))
            || entry_vectors
                .iter()
                .any(|v| dot(&vectors[i], v) >= settings.said_cosine)
    };
    // The entry a group's text says more than: all its words, and more (the text replaces it).
    let extends = |text: &str| {
        let words = word_set(text);
        entries
            .iter()
            .filter(|(section, _)| !section.is_empty())
            .filter(|(_, e)| {
                let mine = word_set(&e.text);
                !mine.is_empty() && mine.len() < words.len() && mine.is_subset(&words)
            })
            .max_by_key(|(_, e)| e.text.len())
            .map(|(section, e)| (*section, e.text.clone()))
    };

    let mut out = Reflection::default();
    groups.sort_by(|a, b| b.score.total_cmp(&a.score));
    for g in &groups {
        // The first member (best first) whose text makes a clean line, and that line.
        let cleaned = g
            .members
            .iter()
            .find_map(|&i| clean::line(&obs[i].observation).ok().map(|t| (i, t)));
        let extended = cleaned.as_ref().and_then(|(_, t)| extends(t));
        if extended.is_none() && g.members.iter().any(|&i| said(i)) {
            out.said += g.members.len();
            continue;
        }
        // A failure seen once is a session's detail; one that recurs is worth remembering.
        let seen: u32 = g.members.iter().map(|&i| obs[i].merged_count).sum();
        if seen < 2
            && g.members
                .iter()
                .all(|&i| obs[i].observation_type == "error-fix")
        {
            out.one_off += g.members.len();
            continue;
        }
        let Some((_, text)) = cleaned else {
            // No member makes a clean line, and none can be made one by rule.
            out.unfit += g.members.len();
            continue;
        };
        out.joined += g.members.len() - 1;
        let Some(section) = clean::section(&text, &g.category)
            .and_then(section_of)
            .or_else(|| section_of(&g.category))
        else {
            continue;
        };
        let recalls: u64 = g.members.iter().map(|&i| recalled(&obs[i])).sum();
        let confidence = g
            .members
            .iter()
            .map(|&i| obs[i].write_confidence)
            .fold(0.0, f64::max);
        let mut rationale = format!(
            "observed {} in {}, recalled {}",
            crate::output::count(seen, "time"),
            crate::output::count(g.members.len(), "observation"),
            crate::output::count(recalls, "time")
        );
        if g.members.len() > 1 {
            rationale.push_str("; the observations say the same thing, the clearest is kept");
        }
        let (op, section, targets) = match extended {
            Some((entry_section, entry)) => {
                rationale.push_str(&format!(
                    "; it says all the entry \"{entry}\" says, and more: it replaces it"
                ));
                (Op::Replace, entry_section, vec![entry])
            }
            None => (Op::Add, section, Vec::new()),
        };
        out.proposals.push(Proposal::new(
            op,
            section,
            &text,
            targets,
            &rationale,
            g.members.iter().map(|&i| obs[i].id.clone()).collect(),
            confidence,
            NAME,
            settings.now,
        ));
    }

    out.proposals
        .extend(over_budget(input, &entries, &entry_vectors, settings));
    out
}

/// `merge` and `remove` proposals that bring MEMORY.md within its budget, if it is over.
fn over_budget(
    input: &Input,
    entries: &[(&str, &memory::Entry)],
    vectors: &[Vec<f32>],
    settings: &Settings,
) -> Vec<Proposal> {
    let total = memory::tokens(&input.memory);
    let budget = settings.budget_tokens;
    if total <= budget {
        return Vec::new();
    }
    let mut excess = total - budget;
    // What removing an entry's line saves: its text, its date and marker, its newline.
    let cost = |e: &memory::Entry| memory::tokens(&e.text) + 4;
    let why = format!("MEMORY.md is {total} tokens, over its budget of {budget}");
    let mut out = Vec::new();
    let mut used = vec![false; entries.len()];
    for a in 0..entries.len() {
        if excess == 0 {
            break;
        }
        if used[a] || entries[a].0.is_empty() {
            continue;
        }
        let best = (a + 1..entries.len())
            .filter(|&b| !used[b] && entries[b].0 == entries[a].0)
            .map(|b| (b, dot(&vectors[a], &vectors[b])))
            .filter(|&(_, s)| s >= settings.join_cosine)
            .max_by(|x, y| x.1.total_cmp(&y.1));
        let Some((b, sim)) = best else { continue };
        used[a] = true;
        used[b] = true;
        let (ea, eb) = (entries[a].1, entries[b].1);
        let (kept, gone) = if eb.text.len() > ea.text.len() {
            (eb, ea)
        } else {
            (ea, eb)
        };
        excess = excess.saturating_sub(cost(gone));
        out.push(Proposal::new(
            Op::Merge,
            entries[a].0,
            &kept.text,
            vec![ea.text.clone(), eb.text.clone()],
            &format!("{why}; these entries say nearly the same (cosine {sim:.2})"),
            Vec::new(),
            0.6,
            NAME,
            settings.now,
        ));
    }
    let recalls = |e: &memory::Entry| {
        input
            .entry_recalls
            .get(&normalize(&e.text))
            .copied()
            .unwrap_or(0)
    };
    let mut rest: Vec<usize> = (0..entries.len())
        .filter(|&i| !used[i] && !entries[i].0.is_empty())
        .collect();
    rest.sort_by(|&a, &b| {
        let (ea, eb) = (entries[a].1, entries[b].1);
        recalls(ea)
            .cmp(&recalls(eb))
            .then_with(|| ea.date.cmp(&eb.date))
            .then(ea.line.cmp(&eb.line))
    });
    for i in rest {
        if excess == 0 {
            break;
        }
        let (section, e) = entries[i];
        excess = excess.saturating_sub(cost(e));
        out.push(Proposal::new(
            Op::Remove,
            section,
            &e.text,
            vec![e.text.clone()],
            &format!(
                "{why}; this entry is among the oldest ({}) and least recalled ({})",
                e.date.as_deref().unwrap_or("undated"),
                crate::output::count(recalls(e), "recall")
            ),
            Vec::new(),
            0.5,
            NAME,
            settings.now,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::gate::Verdict;

    fn ob(id: &str, text: &str, category: &str, merged: u32, confidence: f64) -> Observation {
        Observation {
            id: id.into(),
            session_id: None,
            observation: text.into(),
            observation_type: "fact".into(),
            source: "cli".into(),
            timestamp: "2026-11-30T12:00:00.000Z".into(),
            priority: "medium".into(),
            write_verdict: Verdict::Allow,
            write_confidence: confidence,
            category_id: category.into(),
            category_confidence: 1.0,
            taxonomy_version: 1,
            merged_count: merged,
            narrative: None,
        }
    }

    fn settings(budget: usize) -> Settings {
        Settings {
            said_cosine: 0.85,
            join_cosine: 0.8,
            budget_tokens: budget,
            now: "2026-12-01T10:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_same_thing_twice_is_one_proposal_citing_both() {
        let input = Input {
            observations: vec![
                ob(
                    "ob-a",
                    "Always run cargo fmt before committing",
                    "rules-conventions",
                    1,
                    0.6,
                ),
                ob(
                    "ob-b",
                    "Always run cargo fmt before committing code",
                    "rules-conventions",
                    2,
                    0.9,
                ),
                ob(
                    "ob-c",
                    "The staging database lives on db2.internal",
                    "operations",
                    1,
                    0.9,
                ),
            ],
            memory: memory::TEMPLATE.to_string(),
            ..Input::default()
        };
        let r = reflect(&input, &settings(3000));
        assert_eq!(r.proposals.len(), 2, "{:#?}", r.proposals);
        let fmt = r
            .proposals
            .iter()
            .find(|p| p.section == "Rules and conventions")
            .unwrap();
        assert_eq!(fmt.text, "Always run cargo fmt before committing code");
        let mut cited = fmt.observations.clone();
        cited.sort();
        assert_eq!(cited, vec!["ob-a", "ob-b"]);
        assert_eq!(r.joined, 1);
    }

    #[test]
    fn an_error_fix_is_not_proposed_once_nor_again_it_is_a_command_dump() {
        // Issue 32: failed-command dumps reached review; a recurring one is still a dump (its
        // lesson is for a person or the LLM to write), counted as unfit.
        let fix = |id: &str, merged: u32| {
            let mut o = ob(
                id,
                "`npm publish` failed (exit 1: npm ERR! code E403); `npm login` then succeeded",
                "operations",
                merged,
                0.7,
            );
            o.observation_type = "error-fix".into();
            o
        };
        let once = Input {
            observations: vec![fix("ob-a", 1)],
            memory: memory::TEMPLATE.to_string(),
            ..Input::default()
        };
        let r = reflect(&once, &settings(3000));
        assert!(r.proposals.is_empty());
        assert_eq!(r.one_off, 1);
        let again = Input {
            observations: vec![fix("ob-a", 2)],
            ..once
        };
        let r = reflect(&again, &settings(3000));
        assert!(r.proposals.is_empty(), "{:#?}", r.proposals);
        assert_eq!(r.unfit, 1);
    }

    #[test]
    fn what_memory_says_is_not_proposed() {
        let input = Input {
            observations: vec![ob(
                "ob-a",
                "never deploy on fridays.",
                "rules-conventions",
                1,
                0.9,
            )],
            memory:
                "# Memory\n\n## Rules and conventions\n\n- (2026-11-01) Never deploy on Fridays\n"
                    .into(),
            ..Input::default()
        };
        let r = reflect(&input, &settings(3000));
        assert!(r.proposals.is_empty());
        assert_eq!(r.said, 1);
    }

    #[test]
    fn over_budget_merges_near_duplicates_then_removes_the_least_recalled_oldest() {
        let memory = "# Memory\n\n## Operations\n\n\
            - (2026-01-01) The NFS mount needs root to unmount\n\
            - (2026-06-01) The NFS mount needs root to unmount it\n\
            - (2026-02-01) Backups run nightly at 02:00 on the storage host\n\
            - (2026-03-01) Deploys go through the staging cluster first\n";
        let input = Input {
            memory: memory.into(),
            ..Input::default()
        };
        let budget = memory::tokens(memory) - 20;
        let r = reflect(&input, &settings(budget));
        assert_eq!(r.proposals[0].op, Op::Merge, "{:#?}", r.proposals);
        assert_eq!(
            r.proposals[0].text,
            "The NFS mount needs root to unmount it"
        );
        assert_eq!(r.proposals[1].op, Op::Remove);
        assert_eq!(
            r.proposals[1].targets,
            vec!["Backups run nightly at 02:00 on the storage host"]
        );
        assert_eq!(r.proposals.len(), 2);
        assert!(reflect(&input, &settings(3000)).proposals.is_empty());
    }

    #[test]
    fn stems_match_plural_tense_and_irregular_pasts() {
        for (a, b) in [
            ("Fridays", "friday"),
            ("indexes", "index"),
            ("rebuilt", "rebuilds"),
            ("warmed", "warms"),
            ("policies", "policy"),
            ("branches", "branch"),
        ] {
            assert_eq!(stem(&a.to_lowercase()), stem(b), "{a} {b}");
        }
        for (a, b) in [("bus", "bu"), ("class", "clas"), ("event", "evend")] {
            assert_ne!(stem(a), stem(b), "{a} {b}");
        }
        assert!(
            word_set("Never deploy on Fridays")
                .is_subset(&word_set("never deploy on a Friday, nor after 4pm"))
        );
    }

    #[test]
    fn entries_are_one_line_within_the_cap() {
        assert_eq!(entry_text("a  b\nc"), "a b c");
        let long = "word ".repeat(200);
        let t = entry_text(&long);
        assert!(t.chars().count() <= memory::MAX_ENTRY_CHARS && t.ends_with('…'));
    }
}
