//! Pseudo-relevance feedback: a second round of search from what the first round found best.
//!
//! A question whose answer is spread over several records (the second and third hop of a
//! multi-hop question) often finds the first record and misses the others, which share few
//! words with the question but many with that first record. After the lists are fused, the
//! top [`Feedback::docs`] records feed two more lists: `feedback`, the vectors nearest the
//! query moved towards the mean of their vectors (Rocchio: [`rocchio`]), and `expanded`, BM25
//! for the words that weigh most in them and not in the query ([`expansion`]). Both are fused
//! with the first round's lists, at their own weights.

use std::collections::{HashMap, HashSet};

/// `[recall] feedback_*`: how the second round is made; off when `docs` is 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// How many of the first round's best records feed the second (0: no second round).
    pub docs: usize,
    /// Rocchio's β: how far the query vector moves towards the records' mean.
    pub beta: f32,
    /// How many words the `expanded` list searches for.
    pub terms: usize,
    /// The weight of the `feedback` (vectors) list in fusion.
    pub vectors_weight: f64,
    /// The weight of the `expanded` (words) list in fusion.
    pub words_weight: f64,
}

impl Feedback {
    /// Whether a second round runs.
    pub fn on(&self) -> bool {
        self.docs > 0 && (self.vectors_weight > 0.0 || self.words_weight > 0.0)
    }
}

/// Rocchio's query: `normalize(q + β · mean(docs))`, each doc vector made unit length first
/// (a zero vector counts as nothing). With no docs, or β 0, the query unit length as it was.
pub fn rocchio(q: &[f32], docs: &[Vec<f32>], beta: f32) -> Vec<f32> {
    let mut out: Vec<f32> = q.to_vec();
    let docs: Vec<&Vec<f32>> = docs.iter().filter(|d| d.len() == q.len()).collect();
    if !docs.is_empty() && beta != 0.0 {
        let share = beta / docs.len() as f32;
        for d in docs {
            let norm = d.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                for (o, x) in out.iter_mut().zip(d.iter()) {
                    *o += share * x / norm;
                }
            }
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for o in &mut out {
            *o /= norm;
        }
    }
    out
}

/// A stored vector (scale, int8 numbers) as floats.
pub fn dequantize(scale: f32, values: &[i8]) -> Vec<f32> {
    values.iter().map(|&b| f32::from(b) * scale).collect()
}

/// The `k` words that weigh most in `texts` and are not in the query: each word (a run of
/// letters, digits or `_`) is read as the index reads it (`terms`: stemmed, stop words
/// dropped), and a term scores its IDF (`idf`) times the number of texts it is in, plus its
/// share of each text's terms, so that a word the feedback records share outranks one that
/// one of them repeats. A term of the query (`query`) or shorter than 3 letters is left out;
/// each term is given back once, as the first word that made it. Ties go to the earlier word.
pub fn expansion(
    texts: &[&str],
    query: &HashSet<String>,
    terms: &mut impl FnMut(&str) -> HashSet<String>,
    idf: &mut impl FnMut(&str) -> f64,
    k: usize,
) -> Vec<String> {
    // term -> (score, first word, first position)
    let mut scored: HashMap<String, (f64, String, usize)> = HashMap::new();
    let mut position = 0;
    for text in texts {
        let mut counts: HashMap<String, (usize, String, usize)> = HashMap::new();
        let mut total = 0usize;
        for word in text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.chars().count() >= 3)
        {
            position += 1;
            let lower = word.to_lowercase();
            for term in terms(&lower) {
                if query.contains(&term) {
                    continue;
                }
                total += 1;
                counts
                    .entry(term)
                    .or_insert_with(|| (0, lower.clone(), position))
                    .0 += 1;
            }
        }
        for (term, (n, word, at)) in counts {
            let weight = idf(&word);
            if weight <= 0.0 {
                continue;
            }
            let entry = scored.entry(term).or_insert((0.0, word, at));
            entry.0 += weight * (1.0 + n as f64 / total.max(1) as f64);
            entry.2 = entry.2.min(at);
        }
    }
    let mut ranked: Vec<(f64, String, usize)> = scored.into_values().collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)));
    ranked.into_iter().take(k).map(|(_, w, _)| w).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn rocchio_moves_the_query_towards_the_records_mean_and_stays_unit_length() {
        let q = vec![1.0, 0.0, 0.0];
        let docs = vec![vec![0.0, 2.0, 0.0], vec![0.0, 0.0, 1.0]];
        let moved = rocchio(&q, &docs, 0.5);
        // q + 0.5 × mean((0,1,0), (0,0,1)) = (1, 0.25, 0.25), made unit length.
        let n = (1.0f32 + 0.0625 + 0.0625).sqrt();
        for (got, want) in moved.iter().zip([1.0 / n, 0.25 / n, 0.25 / n]) {
            assert!((got - want).abs() < 1e-6, "{moved:?}");
        }
        assert!((dot(&moved, &moved) - 1.0).abs() < 1e-6);
        // Closer to each record than the query was, still closest to the query.
        assert!(dot(&moved, &[0.0, 1.0, 0.0]) > dot(&q, &[0.0, 1.0, 0.0]));
        assert!(dot(&moved, &q) > dot(&moved, &[0.0, 1.0, 0.0]));
    }

    #[test]
    fn rocchio_without_records_or_beta_keeps_the_query() {
        let q = vec![3.0, 4.0];
        assert_eq!(rocchio(&q, &[], 0.5), vec![0.6, 0.8]);
        assert_eq!(rocchio(&q, &[vec![1.0, 0.0]], 0.0), vec![0.6, 0.8]);
        // A vector of another length, or of zeros, counts as nothing.
        assert_eq!(rocchio(&q, &[vec![1.0, 0.0, 0.0]], 0.5), vec![0.6, 0.8]);
        assert_eq!(rocchio(&q, &[vec![0.0, 0.0]], 0.5), vec![0.6, 0.8]);
    }

    #[test]
    fn dequantize_scales_each_number() {
        assert_eq!(dequantize(0.5, &[2, -4, 0]), vec![1.0, -2.0, 0.0]);
    }

    /// Lowercased words, `s` dropped at the end, "the"/"and" as stop words.
    fn terms(text: &str) -> HashSet<String> {
        text.split_whitespace()
            .map(str::to_lowercase)
            .filter(|w| w != "the" && w != "and")
            .map(|w| w.trim_end_matches('s').to_string())
            .collect()
    }

    #[test]
    fn expansion_prefers_rare_words_the_records_share_and_leaves_out_the_query() {
        let idf = |w: &str| match w {
            "dogs" | "dog" => 3.0,
            "adopted" => 2.0,
            "shelter" => 2.5,
            "went" => 0.5,
            _ => 1.0,
        };
        let query: HashSet<String> = ["adopted".to_string()].into();
        let texts = [
            "She adopted the dogs from the shelter and went home",
            "The dog was happy",
        ];
        let got = expansion(&texts, &query, &mut terms, &mut { idf }, 3);
        // "dog" is in both texts (twice its IDF), "shelter" in one; "adopted" is the query's;
        // "the"/"and" are stop words; "was" and "went" weigh least.
        assert_eq!(got[0], "dogs");
        assert_eq!(got[1], "shelter");
        assert!(
            !got.iter()
                .any(|w| w == "adopted" || w == "the" || w == "and")
        );
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn expansion_leaves_out_short_words_and_gives_at_most_k() {
        let query = HashSet::new();
        let got = expansion(&["an ox ate hay"], &query, &mut terms, &mut |_| 1.0, 10);
        assert_eq!(got, vec!["ate".to_string(), "hay".to_string()]);
        assert!(expansion(&["alpha beta"], &query, &mut terms, &mut |_| 1.0, 0).is_empty());
    }
}
