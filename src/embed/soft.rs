//! Soft matching: how well a text's words cover a query's words, by meaning.
//!
//! A text's score is the sum over the query's words of the word's weight times its best
//! cosine with a word of the text (nothing when that is not positive). A word's vector is the
//! built-in model's: the normalized mean of its WordPiece rows. The same word scores 1;
//! another word scores what the model says of the pair ("unmount" and "mounts", "nfs" and
//! "filesystem"), so a record that says the query in other words still covers it, word by
//! word. The caller gives each query word its weight (recall gives the index's IDF, so that
//! common words count little). Averaging a whole text into one vector loses exactly this:
//! one unusual word of a question drowns among the text's other words.
//!
//! It compares every word of every text with every query word, so it is for a pool of
//! candidates (recall's lists, a hundred or two records), not a whole store. A word met again
//! in the pool costs a hash lookup.

use rustc_hash::FxHashMap;

use super::{Builtin, DIMS};

/// Words read from a text: its words past this many are not compared (the whole-text vector
/// reads 512 tokens too), so that a pool of long turn cards costs what a pool of short records
/// does.
const MAX_WORDS: usize = 512;

/// A cosine this close to 1 is a query word met as itself: no other word can beat it by more
/// than rounding.
const FULL: f32 = 1.0 - 1e-4;

/// A query's words, with their vectors and weights.
pub struct SoftQuery {
    words: Vec<String>,
    vectors: Vec<[f32; DIMS]>,
    weights: Vec<f64>,
}

/// Whether a word (as the tokenizer gives it) has a letter or digit: punctuation is no word.
fn is_word(word: &str) -> bool {
    word.chars().any(char::is_alphanumeric)
}

impl SoftQuery {
    /// The distinct words of `query` that the model knows, weighed by `weight`; a word
    /// weighing nothing (a stop word, for recall) is left out.
    pub fn new(model: &Builtin, query: &str, weight: &mut dyn FnMut(&str) -> f64) -> SoftQuery {
        let mut q = SoftQuery {
            words: Vec::new(),
            vectors: Vec::new(),
            weights: Vec::new(),
        };
        let mut vector = [0f32; DIMS];
        model.for_each_word(query, MAX_WORDS, &mut |word| {
            if !is_word(word) || q.words.iter().any(|w| w == word) {
                return;
            }
            let w = weight(word);
            if w > 0.0 && model.word_vector(word, &mut vector) {
                q.words.push(word.to_string());
                q.vectors.push(vector);
                q.weights.push(w);
            }
        });
        q
    }

    /// The words kept, in query order.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// True when no word of the query is left to match.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Each text's score, in order: Σ weight × max(0, best cosine with a word of the text).
    pub fn scores(&self, model: &Builtin, texts: &[&str]) -> Vec<f64> {
        let mut scorer = self.scorer(model);
        texts.iter().map(|text| scorer.score(text)).collect()
    }

    /// A scorer for texts one at a time, remembering the words it has met.
    pub fn scorer<'q>(&'q self, model: &'q Builtin) -> Scorer<'q> {
        Scorer {
            query: self,
            model,
            seen: FxHashMap::default(),
            cosines: Vec::new(),
            best: vec![0.0; self.words.len()],
            tokens: FxHashMap::default(),
            token_dots: Vec::new(),
            pairs: FxHashMap::default(),
            ids: Vec::new(),
        }
    }
}

/// Scores texts against a [`SoftQuery`]; a word met again costs a hash lookup.
pub struct Scorer<'q> {
    query: &'q SoftQuery,
    model: &'q Builtin,
    /// Each word met: where its cosines with the query words start in `cosines`.
    seen: FxHashMap<String, usize>,
    cosines: Vec<f32>,
    best: Vec<f32>,
    /// Each token met: where its rows' dot products with the query words start in
    /// `token_dots`.
    tokens: FxHashMap<u32, usize>,
    token_dots: Vec<f32>,
    /// The dot product of two tokens' rows (the smaller id first).
    pairs: FxHashMap<(u32, u32), f32>,
    ids: Vec<u32>,
}

impl Scorer<'_> {
    /// The text's score: Σ weight × max(0, best cosine with a word of the text).
    pub fn score(&mut self, text: &str) -> f64 {
        let n = self.query.words.len();
        if n == 0 {
            return 0.0;
        }
        let Scorer {
            query,
            model,
            seen,
            cosines,
            best,
            tokens,
            token_dots,
            pairs,
            ids,
        } = self;
        best.iter_mut().for_each(|b| *b = 0.0);
        // Once every query word has met itself (a cosine of 1 is the most there is), the
        // rest of the text cannot add to the score: its words are not looked up.
        let mut full = false;
        model.for_each_word(text, MAX_WORDS, &mut |word| {
            if full || !is_word(word) {
                return;
            }
            let at = match seen.get(word) {
                Some(&at) => at,
                None => {
                    // The cosine of a query word with the word's mean row, from its tokens:
                    // Σ (row · q) over ‖Σ rows‖, each token's and each pair's dot products
                    // computed once (words share their tokens), not a mean vector a word.
                    let at = cosines.len();
                    ids.clear();
                    model.word_token_ids(word, ids);
                    cosines.extend(std::iter::repeat_n(0.0, n));
                    let mut norm = 0f32;
                    for (i, &a) in ids.iter().enumerate() {
                        let from = *tokens.entry(a).or_insert_with(|| {
                            let from = token_dots.len();
                            token_dots.extend(query.vectors.iter().map(|q| Builtin::row_dot(a, q)));
                            from
                        });
                        for (c, d) in cosines[at..].iter_mut().zip(&token_dots[from..from + n]) {
                            *c += d;
                        }
                        // ‖Σ rows‖² = Σ over pairs of positions: each pair twice, each
                        // position with itself once.
                        for (k, &b) in ids[i..].iter().enumerate() {
                            let key = (a.min(b), a.max(b));
                            let d = *pairs.entry(key).or_insert_with(|| Builtin::rows_dot(a, b));
                            norm += if k == 0 { d } else { 2.0 * d };
                        }
                    }
                    let norm = norm.max(0.0).sqrt();
                    for c in &mut cosines[at..] {
                        *c = if norm > 0.0 { *c / norm } else { 0.0 };
                    }
                    seen.insert(word.to_string(), at);
                    at
                }
            };
            for (b, &c) in best.iter_mut().zip(&cosines[at..at + n]) {
                *b = b.max(c);
            }
            full = best.iter().all(|&b| b >= FULL);
        });
        best.iter()
            .zip(&query.weights)
            .map(|(&b, &w)| w * f64::from(b.max(0.0)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_sums_give_the_cosines_of_the_words_mean_vectors() {
        let model = Builtin::shared();
        let query = "unmount nfs kalominen";
        let q = SoftQuery::new(model, query, &mut |_| 1.0);
        assert_eq!(q.words().len(), 3);
        let texts = [
            "the filesystem mounts were unmounted before the kalomin migration",
            "zzqx brontosaurus nfs-server tritaplan sukatari ünïcödé",
            "",
            "kalominen kalominen nfs unmount",
        ];
        let mut scorer = q.scorer(model);
        for text in texts {
            let mut best = vec![0f32; q.words().len()];
            let mut v = [0f32; DIMS];
            model.for_each_word(text, MAX_WORDS, &mut |w| {
                if is_word(w) && model.word_vector(w, &mut v) {
                    for (b, qv) in best.iter_mut().zip(&q.vectors) {
                        *b = b.max(qv.iter().zip(&v).map(|(x, y)| x * y).sum());
                    }
                }
            });
            let want: f64 = best.iter().map(|&b| f64::from(b.max(0.0))).sum();
            let got = scorer.score(text);
            assert!((got - want).abs() < 1e-4, "{text:?}: {got} against {want}");
        }
    }

    fn scores(query: &str, texts: &[&str]) -> Vec<f64> {
        let model = Builtin::shared();
        SoftQuery::new(model, query, &mut |_| 1.0).scores(model, texts)
    }

    #[test]
    fn the_same_word_scores_its_weight() {
        let model = Builtin::shared();
        let q = SoftQuery::new(model, "Pottery!", &mut |w| {
            if w == "pottery" { 2.5 } else { 0.0 }
        });
        assert_eq!(q.words(), ["pottery"]);
        let s = q.scores(model, &["I took a pottery class", "nothing here"]);
        assert!((s[0] - 2.5).abs() < 1e-3, "{s:?}");
        assert!(s[1] < 2.0, "{s:?}");
    }

    #[test]
    fn related_words_score_above_unrelated_ones() {
        // No word in common with the query: only meaning can rank these.
        let s = scores(
            "stale nfs mount",
            &[
                "the network filesystem share hung and would not unmount",
                "we baked a chocolate cake for her birthday",
            ],
        );
        assert!(s[0] > s[1] + 0.3, "{s:?}");
        let s = scores(
            "which pets does she have",
            &["my dog and two cats", "the quarterly tax filing"],
        );
        assert!(s[0] > s[1], "{s:?}");
    }

    #[test]
    fn words_past_the_cap_are_not_compared() {
        let model = Builtin::shared();
        let q = SoftQuery::new(model, "pottery", &mut |_| 1.0);
        let early = format!("pottery {}", "cat ".repeat(MAX_WORDS));
        let late = format!("{}pottery", "cat ".repeat(MAX_WORDS));
        let s = q.scores(model, &[&early, &late]);
        assert!((s[0] - 1.0).abs() < 1e-3, "{s:?}");
        assert!(s[1] < 0.9, "{s:?}");
    }

    #[test]
    fn weightless_words_and_punctuation_are_left_out() {
        let model = Builtin::shared();
        let q = SoftQuery::new(model, "what did she paint, and when?", &mut |w| {
            if w == "paint" || w == "when" {
                1.0
            } else {
                0.0
            }
        });
        assert_eq!(q.words(), ["paint", "when"]);
        let empty = SoftQuery::new(model, "?!", &mut |_| 1.0);
        assert!(empty.is_empty());
        assert_eq!(empty.scores(model, &["anything"]), vec![0.0]);
    }
}
