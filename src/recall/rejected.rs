//! Observations a person rejected in review, as recall shows them: each names the proposal
//! that rejected it, for `--explain` (ADR 105). The rejection itself is an observation event
//! (`store::Op::Reject`) folded into the index's status; this only names its proposal.

use std::collections::HashMap;

use super::Recalled;
use crate::index::Kind;
use crate::index::sources::REJECTED;
use crate::proposals::{State, Tier};

/// Sets `rejected_by` on each rejected observation among `results`: the proposals a person
/// rejected that cited it. Reads the proposals only when there is one.
pub fn name(repo: &crate::repo::Repo, results: &mut [Recalled]) -> crate::error::Result<()> {
    let rejected = |r: &Recalled| r.kind == Kind::Observation && r.status == REJECTED;
    if !results.iter().any(rejected) {
        return Ok(());
    }
    let loaded = crate::proposals::load(repo)?;
    let mut by: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in loaded
        .proposals
        .iter()
        .filter(|p| p.state == State::Rejected && p.tier == Some(Tier::Human))
    {
        for o in &p.proposal.observations {
            by.entry(o.as_str()).or_default().push(&p.proposal.id);
        }
    }
    for r in results.iter_mut().filter(|r| rejected(r)) {
        if let Some(ids) = by.get(r.id.as_str()) {
            r.rejected_by = Some(format!("proposal {}", ids.join(", ")));
        }
    }
    Ok(())
}
