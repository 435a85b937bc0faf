//! The best documents by BM25 × decay, without decaying every match.
//!
//! tantivy's `TopDocs::tweak_score` reads three fast fields and computes an `exp` for every
//! document the query matches, because a tweaked score may be anything. A decay factor is
//! never above a known bound (`1`, or the stale factor when a configuration sets it above
//! one), so a match whose BM25 score times that bound cannot beat the worst of the best found
//! so far need not be decayed at all: the scorer is told that threshold
//! (`Weight::for_each_pruning`) and skips it. The result is the same list.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::ColumnValues;
use tantivy::query::Weight;
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use super::{Class, Decay};

/// The best `limit` documents by BM25 × [`Decay::factor`], best first; equal scores in the
/// order of their address.
pub(super) struct DecayedTop {
    pub limit: usize,
    pub decay: Arc<Decay>,
}

impl DecayedTop {
    /// The largest factor [`Decay::factor`] can give.
    fn bound(&self) -> f64 {
        1f64.max(self.decay.stale_factor).max(self.decay.floor)
    }
}

/// A decayed score and where it is, ordered best first: higher score, then lower address.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored(f64, DocAddress);

impl Eq for Scored {}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One segment's part of [`DecayedTop`].
pub(super) struct SegmentTop {
    limit: usize,
    bound: f64,
    segment: SegmentOrdinal,
    decay: Arc<Decay>,
    time: Arc<dyn ColumnValues<i64>>,
    class: Arc<dyn ColumnValues<u64>>,
    stale: Arc<dyn ColumnValues<u64>>,
    /// The best so far, the worst on top.
    heap: BinaryHeap<Reverse<Scored>>,
}

impl SegmentTop {
    /// Takes `doc` if it is among the best so far; returns the BM25 score a later match must
    /// exceed to have a chance.
    fn offer(&mut self, doc: DocId, score: Score) -> Score {
        let factor = self.decay.factor(
            Class::from_u64(self.class.get_val(doc)),
            self.time.get_val(doc),
            self.stale.get_val(doc) == 1,
        );
        let scored = Scored(
            f64::from(score) * factor,
            DocAddress::new(self.segment, doc),
        );
        if self.heap.len() < self.limit {
            self.heap.push(Reverse(scored));
        } else if let Some(mut worst) = self.heap.peek_mut()
            && scored > worst.0
        {
            *worst = Reverse(scored);
        }
        self.threshold()
    }

    /// What a BM25 score must exceed to enter: below it, even the largest factor leaves it
    /// at or under the worst kept (rounded down, so that nothing that could enter is skipped).
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= self.limit => {
                let t = worst.0.0 / self.bound;
                (t * (1.0 - 1e-6)) as f32
            }
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentTop {
    type Fruit = Vec<(f64, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.offer(doc, score);
    }

    fn harvest(self) -> Self::Fruit {
        self.heap
            .into_iter()
            .map(|Reverse(Scored(s, a))| (s, a))
            .collect()
    }
}

impl Collector for DecayedTop {
    type Fruit = Vec<(f64, DocAddress)>;
    type Child = SegmentTop;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTop> {
        let fast = reader.fast_fields();
        Ok(SegmentTop {
            limit: self.limit.max(1),
            bound: self.bound(),
            segment,
            decay: self.decay.clone(),
            time: fast.i64("time")?.first_or_default_col(0),
            class: fast.u64("class")?.first_or_default_col(0),
            stale: fast.u64("stale")?.first_or_default_col(0),
            heap: BinaryHeap::with_capacity(self.limit.max(1) + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut all: Vec<Scored> = fruits
            .into_iter()
            .flatten()
            .map(|(s, a)| Scored(s, a))
            .collect();
        all.sort_by(|a, b| b.cmp(a));
        all.truncate(self.limit.max(1));
        Ok(all.into_iter().map(|Scored(s, a)| (s, a)).collect())
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: u32,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Fruit> {
        let mut top = self.for_segment(segment, reader)?;
        let alive = reader.alive_bitset();
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                top.offer(doc, score)
            } else {
                top.threshold()
            }
        })?;
        Ok(top.harvest())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_order_best_first_and_ties_keep_the_lower_address() {
        let a = Scored(2.0, DocAddress::new(0, 5));
        let b = Scored(2.0, DocAddress::new(0, 9));
        let c = Scored(1.0, DocAddress::new(0, 1));
        // Higher score first; an equal score, the lower address first.
        let mut v = vec![c, b, a];
        v.sort_by(|x, y| y.cmp(x));
        assert_eq!(v, vec![a, b, c]);
    }
}
