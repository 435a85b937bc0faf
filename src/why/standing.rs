//! Where a traced record stands: the gate's verdict on its text and the rule behind it, its
//! score's decay now, and its rank for a query (recall's own ranking).

use super::report::{GateCheck, QueryStanding, Score};
use crate::config::Config;
use crate::error::Result;
use crate::index::{Class, Decay, Doc, Index};
use crate::observe::gate::{self, Verdict};
use crate::recall::{self, Request, Standing};
use crate::store::Folded;

/// What the gate's rules make of `text` proposed at `verdict`, in a person's words.
pub fn gate_check(
    text: &str,
    proposed: Verdict,
    confidence: f64,
    min_chars: usize,
    from: &'static str,
) -> GateCheck {
    let d = gate::decide(text, proposed, confidence, min_chars);
    let says = match d.reason {
        "too short" => format!(
            "shorter than {min_chars} characters ([gate] min_chars): discarded, only counted"
        ),
        "instruction artifact" => "opens like an instruction to an editor (\"Add after…\", \
                                   \"Replace…\"): discarded, only counted"
            .to_string(),
        "cites an ADR, a path or a command" => {
            "cites an ADR, a path or a command: held becomes allowed".to_string()
        }
        _ => match d.verdict {
            Verdict::Allow => "no rule applies: the proposed verdict (allow) stands".to_string(),
            Verdict::Hold => {
                "no rule applies: the proposed verdict (hold) stands, recalled only with \
                 --include-hold"
                    .to_string()
            }
            Verdict::Discard => "no rule applies: the proposed discard stands".to_string(),
        },
    };
    GateCheck {
        verdict: d.verdict,
        confidence: d.confidence,
        rule: d.reason,
        says,
        from,
        stored: None,
    }
}

/// The verdict the observer (or `remember`) proposed for a stored observation, as far as the
/// record tells: the built-in observer proposes hold for corrections, error fixes and
/// decisions; anything else is taken as proposed at the verdict it was stored with.
pub(super) fn proposed_verdict(f: &Folded, observer: Option<&str>) -> Verdict {
    let builtin_hold = matches!(
        f.obs.observation_type.as_str(),
        "correction" | "error-fix" | "decision"
    );
    if observer == Some(crate::observe::builtin::NAME) && builtin_hold {
        Verdict::Hold
    } else {
        f.obs.write_verdict
    }
}

/// A record's decay now, from its class, time and staleness.
pub(super) fn score(decay: &Decay, doc: &Doc, indexed: bool) -> Score {
    let class = doc.class();
    let millis = doc.time.timestamp_millis();
    let time_decay = decay.time_factor(class, millis);
    let stale_factor = if doc.is_stale() {
        decay.stale_factor
    } else {
        1.0
    };
    Score {
        kind: doc.kind,
        age_days: decay.days(millis),
        rate: if class == Class::AdrCurrent {
            0.0
        } else {
            decay.rate(class)
        },
        time_decay,
        stale_factor,
        decay: time_decay * stale_factor,
        indexed,
    }
}

/// The document the index holds for `id`, or one made from the observation (a deleted one is
/// not indexed).
pub(super) fn observation_doc(index: &Index, f: &Folded, file: &str) -> Result<(Doc, bool)> {
    Ok(match index.doc(&f.obs.id)? {
        Some(d) => (d, true),
        None => (crate::index::sources::observation_doc(f, file), false),
    })
}

/// Where `doc` stands for the query, with the reasons it is not recalled.
pub(super) fn query_standing(
    index: &Index,
    config: &Config,
    request: &Request,
    doc: &Doc,
) -> Result<QueryStanding> {
    let mut why_not = Vec::new();
    let deleted = doc.status == "deleted";
    let held = doc.verdict == "hold" && !request.filter.include_hold;
    if deleted {
        why_not.push("deleted: recall leaves it out (`cairn restore ID` brings it back)".into());
    }
    if held {
        why_not.push(
            "held by the gate: recalled only with --include-hold; the rank is with it".into(),
        );
    }
    if !request.filter.kinds.is_empty() && !request.filter.kinds.contains(&doc.kind) {
        why_not.push(format!(
            "a {} is not among the kinds asked for",
            doc.kind.as_str()
        ));
    }
    if request
        .filter
        .category
        .as_ref()
        .is_some_and(|c| *c != doc.category)
    {
        why_not.push(format!("its category is {}", doc.category));
    }
    let mut asked = request.clone();
    if held {
        asked.filter.include_hold = true;
    }
    let standing = recall::standing(index, config, &asked, &doc.id)?;
    let mut full_read = None;
    match &standing {
        Standing::Ranked {
            rank,
            limit,
            relevant,
            ..
        } if rank > limit => why_not.push(format!(
            "ranks {rank} of {relevant} relevant results, past the cap of {limit}"
        )),
        Standing::Ranked { .. } => {}
        Standing::NotRelevant { result, .. } => why_not.push(not_relevant(&standing, result)),
        Standing::NotRead { depth } => {
            // Recall reads each list this deep: the rank in a read of every record says how
            // far off it is.
            let mut all = asked.clone();
            all.limit = (index.num_docs() as usize).max(asked.limit);
            let full = recall::standing(index, config, &all, &doc.id)?;
            why_not.push(match &full {
                Standing::Ranked { rank, relevant, .. } => format!(
                    "not among the first {depth} of any list recall reads; a read of every \
                     record ranks it {rank} of {relevant}"
                ),
                Standing::NotRelevant { result, .. } => format!(
                    "not among the first {depth} of any list recall reads; {}",
                    not_relevant(&full, result)
                ),
                _ => format!(
                    "in no list at all: no word in common with the query, and by meaning \
                     under [recall] min_similarity ({})",
                    config.recall.min_similarity
                ),
            });
            full_read = Some(full);
        }
        Standing::NoWords => why_not.push("the query has no word to match".into()),
    }
    let recalled = why_not.is_empty();
    Ok(QueryStanding {
        query: request.query.clone(),
        recalled,
        standing,
        full_read,
        why_not,
    })
}

fn not_relevant(s: &Standing, r: &recall::Recalled) -> String {
    let (min_cosine, min_soft) = match s {
        Standing::NotRelevant {
            min_cosine,
            min_soft,
            ..
        } => (*min_cosine, *min_soft),
        _ => (0.0, 0.0),
    };
    let cosine = r
        .scores
        .get("vectors")
        .map_or("not in the vector list".to_string(), |c| {
            format!("cosine {c:.3}")
        });
    let soft = r.soft_share.map_or("no soft match".to_string(), |s| {
        format!("soft share {s:.2}")
    });
    format!(
        "under the relevance floor: no word in common with the query, {cosine} (floor \
         {min_cosine}), {soft} (floor {min_soft})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_check_names_the_rule_in_words() {
        let g = gate_check("ok thanks", Verdict::Allow, 0.9, 12, "as-given");
        assert_eq!((g.verdict, g.rule), (Verdict::Discard, "too short"));
        assert!(g.says.contains("shorter than 12 characters"), "{}", g.says);
        let g = gate_check(
            "Replace the mutex with a channel",
            Verdict::Allow,
            0.9,
            12,
            "re-run",
        );
        assert_eq!(g.rule, "instruction artifact");
        let g = gate_check(
            "run `cargo test` before pushing",
            Verdict::Hold,
            0.4,
            12,
            "re-run",
        );
        assert_eq!(g.verdict, Verdict::Allow);
        assert!(g.says.contains("held becomes allowed"));
        let g = gate_check(
            "the user likes short answers",
            Verdict::Hold,
            0.4,
            12,
            "re-run",
        );
        assert_eq!((g.verdict, g.rule), (Verdict::Hold, "as proposed"));
    }
}
