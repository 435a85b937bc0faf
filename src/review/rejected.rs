//! What a person's rejection teaches (ADR 105): a `reject` event for each observation the
//! rejected proposal stood on, appended to the observation store in the rejection's own
//! commit. Folded like `stale` or `supersede`, it takes the observation out of the briefing,
//! lowers it in recall by `[recall] stale_factor` and keeps reflect from proposing it again;
//! a `git revert` of the rejection's commit removes the decision and these events together.

use chrono::{DateTime, Utc};

use crate::proposals::Proposal;
use crate::repo::Repo;
use crate::store::{self, Event, Op};

/// The journal step appending a `reject` event (`by` the proposal's id) for each observation
/// `p` cites to the store's current file; none when it cites none.
pub fn reject_observations(
    repo: &Repo,
    p: &Proposal,
    now: DateTime<Utc>,
) -> Option<crate::journal::Step> {
    let lines = events(p, now);
    (!lines.is_empty()).then(|| crate::journal::Step::Append {
        path: store::current_file(repo, now),
        bytes: lines.concat(),
    })
}

/// One JSON line (with its newline) for each observation `p` cites, in its order, each once.
fn events(p: &Proposal, now: DateTime<Utc>) -> Vec<String> {
    let ts = crate::time::format(now);
    let mut seen = std::collections::HashSet::new();
    p.observations
        .iter()
        .filter(|id| seen.insert(id.as_str()))
        .map(|id| {
            let mut e = Event::new(Op::Reject, id, &ts);
            e.by = Some(p.id.clone());
            let mut line = serde_json::to_string(&e).expect("events serialize");
            line.push('\n');
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cited_observation_gets_one_reject_event_naming_the_proposal() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-06T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let p = Proposal::new(
            crate::proposals::Op::Add,
            "Rules and conventions",
            "Never deploy on Fridays",
            Vec::new(),
            "",
            vec!["ob-1".into(), "ob-2".into(), "ob-1".into()],
            0.9,
            "builtin",
            now,
        );
        let lines = events(&p, now);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            format!(
                "{{\"op\":\"reject\",\"id\":\"ob-1\",\"ts\":\"2026-12-06T10:00:00.000Z\",\"by\":\"{}\"}}\n",
                p.id
            )
        );
        // The store folds it: the observation names the proposal that rejected it.
        let store::Line::Event(e) =
            store::parse_line(std::path::Path::new("o.jsonl"), 1, lines[1].trim()).unwrap()
        else {
            panic!("an event");
        };
        assert_eq!((e.op, e.by.as_deref()), (Op::Reject, Some(p.id.as_str())));
        assert!(
            events(
                &Proposal {
                    observations: Vec::new(),
                    ..p
                },
                now
            )
            .is_empty()
        );
    }
}
