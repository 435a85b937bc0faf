//! Text embeddings: the [`Embedder`] trait, the built-in model and the vector math of search.
//!
//! Owns turning a text into a unit vector and comparing vectors: [`cosine`] for f32 vectors,
//! [`quantize`] and [`dot_i8`] for the int8 vectors a store keeps and scans by brute force.
//! Does not own where vectors are stored, nor which texts get embedded.
//!
//! [`Builtin`] is potion-base-8M (MIT, MinishLab; `model/potion-base-8M/`), a static model:
//! a text's vector is the normalized mean of its tokens' rows, so it needs no runtime, no
//! file and no network, and loads in about a millisecond. Its tokenizer
//! (`wordpiece.rs`) reproduces HuggingFace `tokenizers` for the model's `tokenizer.json`
//! token for token; its vectors are within cosine 0.999 of model2vec's on the f32 original
//! (`tests/fixtures/embed/`).

mod builtin;
pub mod soft;
// Its builder runs in build.rs (for the tables compiled in) and in the tests that check them.
#[allow(dead_code)]
mod vocab_table;
mod wordpiece;

pub use builtin::{Builtin, DIMS, MODEL_ID};

/// A model that turns texts into vectors of [`Embedder::dims`] floats.
pub trait Embedder {
    /// The length of every vector this model returns.
    fn dims(&self) -> usize;
    /// Names the model and its weights: vectors of different ids must not be compared.
    fn model_id(&self) -> &str;
    /// One vector per text, in order. Unit length, or all zeros for a text with no known token.
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>>;
}

/// The cosine of the angle between `a` and `b`; 0 when either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let (mut dot, mut aa, mut bb) = (0f32, 0f32, 0f32);
    for (&x, &y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        dot / (aa.sqrt() * bb.sqrt())
    }
}

/// Symmetric int8 quantization: `v[i] ≈ q[i] * scale` with `scale = max|v| / 127` and `q`
/// rounded half to even, as `scripts/quantize-model` does the model's rows. A zero vector gives
/// zeros and scale 0. For unit vectors `dot_i8(qa, qb) * sa * sb` approximates the cosine.
pub fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    let q = v
        .iter()
        .map(|x| (x / scale).round_ties_even().clamp(-127.0, 127.0) as i8)
        .collect();
    (q, scale)
}

/// The integer dot product of two int8 vectors of the same length.
///
/// Written for the compiler to vectorize: fixed 32-lane chunks summed into i32 lanes, then the
/// lanes added once. For vectors of 256 dims it cannot overflow (256 × 127² < 2³¹).
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    debug_assert_eq!(a.len(), b.len());
    const LANES: usize = 32;
    let mut lanes = [0i32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: i32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..LANES {
            lanes[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    lanes.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[-2.0, -2.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn quantize_round_trips_within_half_a_step() {
        let v: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 71.0)
            .collect();
        let (q, scale) = quantize(&v);
        assert_eq!(q.len(), v.len());
        assert_eq!(q.iter().map(|x| x.unsigned_abs()).max(), Some(127));
        for (&x, &qx) in v.iter().zip(&q) {
            assert!((x - f32::from(qx) * scale).abs() <= scale / 2.0 + 1e-7);
        }
        let back: Vec<f32> = q.iter().map(|&x| f32::from(x) * scale).collect();
        assert!(cosine(&v, &back) > 0.9999);
        assert_eq!(quantize(&[0.0; 4]), (vec![0; 4], 0.0));
    }

    #[test]
    fn dot_i8_matches_the_plain_sum() {
        for len in [0, 1, 31, 32, 33, 256, 300] {
            let a: Vec<i8> = (0..len).map(|i| (i * 53 % 255 - 127) as i8).collect();
            let b: Vec<i8> = (0..len).map(|i| (i * 91 % 255 - 127) as i8).collect();
            let want: i32 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            assert_eq!(dot_i8(&a, &b), want, "len {len}");
        }
        let max = vec![127i8; 256];
        assert_eq!(dot_i8(&max, &max), 256 * 127 * 127);
    }

    #[test]
    fn int8_dot_ranks_like_cosine() {
        let model = Builtin::load();
        let v = model.embed(&[
            "the NFS mount is stale and needs root to unmount",
            "that thing with the network filesystem mounts",
            "my sister adopted a kitten",
        ]);
        let q: Vec<(Vec<i8>, f32)> = v.iter().map(|x| quantize(x)).collect();
        let approx = |i: usize, j: usize| dot_i8(&q[i].0, &q[j].0) as f32 * q[i].1 * q[j].1;
        for (i, j) in [(0, 1), (0, 2), (1, 2)] {
            assert!((approx(i, j) - cosine(&v[i], &v[j])).abs() < 0.01);
        }
        assert!(approx(0, 1) > approx(0, 2));
    }
}
