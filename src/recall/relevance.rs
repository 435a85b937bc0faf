//! Relevance: which ranked results a query keeps (a word in common, or closeness in meaning
//! over a floor raised to this store's chance cosine), and a query that asks for nothing.

use super::Recalled;
use crate::config::Config;
use crate::index::Index;

/// What makes a result relevant to a query: a word in common with it (after the index's
/// tokenizer and stop words), or, failing that, closeness in meaning above a floor
/// (`[recall] relevance_cosine` for the whole-text cosine, `relevance_soft` for the share of
/// the query's IDF weight its soft match covers). Without it every query, nonsense included,
/// filled its budget with whatever ranked least badly.
///
/// Two more rules (ADR 90): a query none of whose terms (words, stems, identifier parts) occurs
/// anywhere in the store asks about nothing the store holds, and keeps nothing; and the cosine
/// floor is raised to what two unrelated texts of this store reach by chance
/// ([`Index::chance_cosine`] at [`CHANCE_QUANTILE`]) when that is higher, since a small
/// static model places everything a little near everything else.
pub(super) struct Relevance {
    /// The query's terms, as the index makes them.
    terms: std::collections::HashSet<String>,
    /// The query has terms and none of them occurs in the store.
    unknown: bool,
    /// The IDF weight of the query's words the soft list matched (0 when it did not run).
    soft_total: f64,
    pub(super) min_cosine: f64,
    pub(super) min_soft: f64,
}

/// The share of chance cosines between unrelated texts of a store that a result kept for its
/// meaning alone must beat ([`Relevance`]).
pub const CHANCE_QUANTILE: f64 = 0.99;

impl Relevance {
    pub(super) fn new(index: &Index, query: &str, soft_total: f64, config: &Config) -> Relevance {
        let terms = index.query_terms(query);
        let unknown = !terms.is_empty() && !index.knows_any(&terms);
        let floor = config.recall.relevance_cosine;
        Relevance {
            terms,
            unknown,
            soft_total,
            min_cosine: index
                .chance_cosine(CHANCE_QUANTILE)
                .map_or(floor, |chance| chance.max(floor)),
            min_soft: config.recall.relevance_soft,
        }
    }

    /// The relevant results, in their order, at most `limit`; each marked with whether it
    /// shares a word and what share of the query its soft match covers.
    pub(super) fn keep(
        &self,
        index: &Index,
        results: Vec<Recalled>,
        limit: usize,
    ) -> Vec<Recalled> {
        if self.unknown {
            return Vec::new();
        }
        let mut terms = index.terms();
        let mut out = Vec::with_capacity(limit.min(results.len()));
        for mut r in results {
            if out.len() >= limit {
                break;
            }
            if self.judge(&mut terms, &mut r) {
                out.push(r);
            }
        }
        out
    }

    /// Marks `r` with whether it shares a word and its soft share; whether it is relevant.
    pub(super) fn judge(
        &self,
        terms: &mut impl FnMut(&str) -> std::collections::HashSet<String>,
        r: &mut Recalled,
    ) -> bool {
        if self.unknown {
            return false;
        }
        if self.soft_total > 0.0 {
            r.soft_share = r.scores.get("soft").map(|s| (s / self.soft_total).min(1.0));
        }
        r.shares_word = r.ranks.contains_key("words")
            || !self.terms.is_disjoint(&terms(&r.text))
            || !self.terms.is_disjoint(&terms(&r.title));
        let close = r
            .scores
            .get("vectors")
            .is_some_and(|c| *c >= self.min_cosine)
            || r.soft_share.is_some_and(|s| s >= self.min_soft);
        r.shares_word || close
    }
}

/// A query with words in it but no letter or digit (`!!! ??? ***`) asks for nothing.
pub(super) fn no_words(query: &str) -> bool {
    !query.trim().is_empty() && !query.chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_without_a_letter_or_digit_asks_for_nothing() {
        assert!(no_words("!!! ??? ***"));
        assert!(!no_words(""), "no query recalls what matters now");
        assert!(!no_words("zzzqqq"));
    }
}
