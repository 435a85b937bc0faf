//! Diversity in the final list: maximal marginal relevance (MMR) over the fused, relevant
//! results, so that an answer spread over several records is not crowded out by near copies
//! of the best one.
//!
//! Owns the arithmetic ([`mmr`]): each pick maximises `λ·rel − (1 − λ)·max sim` over what is
//! left, where `rel` is the result's score scaled to 0–1 over the pool and `sim` its cosine
//! with a result already picked. λ = 1 keeps recall's order (the default when off). The
//! vectors are the built-in model's, made here for the few dozen texts of the pool: whatever
//! `[embed]` says, comparing two records' texts needs no provider call.

/// The order in which to show the pool: indices into `scores`, at most `limit`, picked by MMR
/// with `lambda` (clamped to 0–1). `scores` are best first or not, any scale; `vectors` are
/// unit vectors, one per score (a zero vector is like nothing). Ties go to the earlier index.
pub fn mmr(scores: &[f64], vectors: &[Vec<f32>], lambda: f64, limit: usize) -> Vec<usize> {
    let n = scores.len().min(vectors.len());
    let limit = limit.min(n);
    let lambda = lambda.clamp(0.0, 1.0);
    let (lo, hi) = scores[..n]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
    let rel: Vec<f64> = scores[..n]
        .iter()
        .map(|s| if hi > lo { (s - lo) / (hi - lo) } else { 1.0 })
        .collect();
    // The largest cosine of each candidate with any pick so far.
    let mut nearest = vec![0f64; n];
    let mut taken = vec![false; n];
    let mut picked = Vec::with_capacity(limit);
    while picked.len() < limit {
        let mut best: Option<(usize, f64)> = None;
        for i in 0..n {
            if taken[i] {
                continue;
            }
            let value = lambda * rel[i] - (1.0 - lambda) * nearest[i];
            if best.is_none_or(|(_, b)| value > b) {
                best = Some((i, value));
            }
        }
        let Some((i, _)) = best else { break };
        taken[i] = true;
        picked.push(i);
        for j in 0..n {
            if !taken[j] {
                let c = f64::from(crate::embed::cosine(&vectors[i], &vectors[j])).max(0.0);
                nearest[j] = nearest[j].max(c);
            }
        }
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(a: f32, b: f32) -> Vec<f32> {
        let n = (a * a + b * b).sqrt();
        vec![a / n, b / n]
    }

    #[test]
    fn lambda_one_keeps_the_order_of_scores() {
        let v = vec![unit(1.0, 0.0), unit(1.0, 0.01), unit(0.0, 1.0)];
        assert_eq!(mmr(&[3.0, 2.0, 1.0], &v, 1.0, 3), vec![0, 1, 2]);
        assert_eq!(mmr(&[1.0, 3.0, 2.0], &v, 1.0, 2), vec![1, 2]);
    }

    #[test]
    fn a_near_copy_gives_way_to_a_different_record() {
        // 0 and 1 say the same; 2 is a little less relevant but about something else.
        let v = vec![unit(1.0, 0.0), unit(1.0, 0.05), unit(0.0, 1.0)];
        let scores = [3.0, 2.9, 2.5];
        // rel = 1, 0.8, 0; after picking 0, record 1's value is 0.7·0.8 − 0.3·0.9988 ≈ 0.26
        // and record 2's is 0.7·0 − 0 = 0: relevance still wins at λ 0.7.
        assert_eq!(mmr(&scores, &v, 0.7, 3), vec![0, 1, 2]);
        // At λ 0.5: 0.5·0.8 − 0.5·0.9988 < 0 = record 2's value.
        assert_eq!(mmr(&scores, &v, 0.5, 3), vec![0, 2, 1]);
    }

    #[test]
    fn limits_and_empty_input() {
        assert!(mmr(&[], &[], 0.5, 10).is_empty());
        let v = vec![unit(1.0, 0.0), unit(0.0, 1.0)];
        assert_eq!(
            mmr(&[1.0, 1.0], &v, 0.5, 10),
            vec![0, 1],
            "equal scores: in order"
        );
        assert_eq!(mmr(&[1.0, 2.0], &v, 0.5, 1), vec![1]);
    }
}
