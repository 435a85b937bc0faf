//! The dedup sweep's candidate filter: locality-sensitive hashing on the sign bits of the
//! stored int8 vectors, so that only pairs likely to be close are scored exactly.
//!
//! Each vector's sign pattern (bit `j` set when number `j` is above zero; the sign of its dot
//! product with the `j`th axis) is cut into [`BANDS`] bands of [`BITS`] bits each, the bits of a
//! band picked from the vector's dims by a fixed pseudo-random sequence. Two vectors whose
//! angle is θ agree on a hyperplane's side with probability about `1 − θ/π`, so a pair at
//! cosine 0.85 (θ ≈ 32°, 0.82 a bit) shares a whole band of 16 bits with probability about
//! 0.045, and at least one of 64 bands with about 0.95; only pairs that share a band are
//! candidates. Measured (`scripts/bench-maintain`, 8,000 real sentences of the fixtures): 64 ×
//! 16 finds 0.976 of the pairs at cosine ≥ 0.85 that brute force finds while scoring 0.49 % of
//! all pairs; 48 × 12 found 0.996 but scored 3.4 %, which at 100,000 observations was 176
//! million pairs and 58 s (32 s of CPU) on a loaded machine.
//!
//! The bands depend on nothing but the two vectors (the bit choice is fixed, not learned from
//! the data), so whether a pair is a candidate does not change between runs: what one run did
//! not score, the next does not either, which keeps the sweep idempotent.

/// Bands per vector.
pub const BANDS: usize = 64;
/// Sign bits per band.
pub const BITS: usize = 16;

/// The bit positions of each band, for vectors of `dims` numbers (fixed: a xorshift sequence
/// from a constant seed).
pub fn band_bits(dims: usize, bands: usize, bits: usize) -> Vec<Vec<usize>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..bands)
        .map(|_| {
            let mut band: Vec<usize> = Vec::with_capacity(bits);
            while band.len() < bits.min(dims) {
                let j = (next() % dims as u64) as usize;
                if !band.contains(&j) {
                    band.push(j);
                }
            }
            band
        })
        .collect()
}

/// The candidate pairs `(i, j)`, `i < j`, of `vectors` (int8, all of one length): those that
/// share the sign bits of at least one band, each once, in no particular order.
pub fn candidates(vectors: &[&[i8]], bands: usize, bits: usize) -> Vec<(u32, u32)> {
    let n = vectors.len();
    let Some(dims) = vectors.first().map(|v| v.len()) else {
        return Vec::new();
    };
    let plan = band_bits(dims, bands, bits);
    // keys[i * bands + b]: vector i's bits in band b.
    let mut keys = vec![0u32; n * bands];
    for (i, v) in vectors.iter().enumerate() {
        for (b, band) in plan.iter().enumerate() {
            let mut k = 0u32;
            for (t, &j) in band.iter().enumerate() {
                if v.get(j).is_some_and(|&x| x > 0) {
                    k |= 1 << t;
                }
            }
            keys[i * bands + b] = k;
        }
    }
    let mut out = Vec::new();
    let mut order: Vec<u32> = (0..n as u32).collect();
    for b in 0..bands {
        order.sort_unstable_by_key(|&i| (keys[i as usize * bands + b], i));
        let mut start = 0;
        while start < n {
            let key = keys[order[start] as usize * bands + b];
            let mut end = start + 1;
            while end < n && keys[order[end] as usize * bands + b] == key {
                end += 1;
            }
            for x in start..end {
                let i = order[x] as usize;
                for &j in &order[x + 1..end] {
                    let j = j as usize;
                    // Counted in the first band the two share.
                    if (0..b).any(|c| keys[i * bands + c] == keys[j * bands + c]) {
                        continue;
                    }
                    out.push((i as u32, j as u32));
                }
            }
            start = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(n: usize, seed: u64) -> Vec<Vec<i8>> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                (0..256)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        ((x % 255) as i32 - 127) as i8
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn equal_vectors_are_always_candidates_and_pairs_come_once() {
        let mut vs = vectors(200, 7);
        vs.push(vs[3].clone());
        let refs: Vec<&[i8]> = vs.iter().map(Vec::as_slice).collect();
        let pairs = candidates(&refs, BANDS, BITS);
        assert!(pairs.contains(&(3, 200)));
        let unique: std::collections::HashSet<_> = pairs.iter().collect();
        assert_eq!(unique.len(), pairs.len(), "each pair once");
        assert!(pairs.iter().all(|(i, j)| i < j));
        // Random vectors are far apart: few of the 20,100 pairs get through.
        assert!(pairs.len() < 2_000, "{}", pairs.len());
    }

    #[test]
    fn the_bands_are_fixed() {
        assert_eq!(band_bits(256, 4, 12), band_bits(256, 4, 12));
        assert!(band_bits(256, BANDS, BITS).iter().all(|b| b.len() == BITS));
    }
}
