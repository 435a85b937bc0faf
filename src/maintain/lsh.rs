//! The dedup sweep's candidate filter: locality-sensitive hashing on the sign bits of the
//! stored int8 vectors, so that only pairs likely to be close are scored exactly.
//!
//! Each vector's sign pattern (bit `j` set when number `j` is above its mean over the observations,
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
/// A store with fewer observations than this (every one with a vector, whatever its state)
/// has its swept ones compared pair by pair (at most two million pairs): the bands are for
/// large stores, and a mean over a handful of vectors is no centre. Counted over the store,
/// not over the swept ones, which a run's merges and marks make fewer: a next run that scored
/// every pair would find pairs the bands kept apart, and merge again (ADR 77).
pub const EXACT_BELOW: usize = 2_000;

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

/// Every vector's bands, grouped so that the vectors sharing a band with one vector can be
/// walked without listing every candidate pair first: the sweep asks only for the neighbours
/// of the observations it keeps, among those still in play ([`Buckets::sharing`]), and each
/// walk drops from the buckets what is no longer in play, so a member taken early is not
/// walked over again by every later one.
pub struct Buckets {
    bands: usize,
    /// Band by band, the vectors sorted by their key; a bucket is a run of one key.
    order: Vec<u32>,
    /// `bucket_of[i * bands + b]`: the bucket of vector `i` in band `b` (`u32::MAX`: alone);
    /// one vector's buckets side by side, since the sweep asks for them together.
    bucket_of: Vec<u32>,
    /// Each bucket's start in `order` and how many of its members are still in play.
    buckets: Vec<(u32, u32)>,
}

impl Buckets {
    /// The bands of `vectors` (int8, all of one length), their bits taken from `center`.
    pub fn new(vectors: &[&[i8]], center: &[i8], bands: usize, bits: usize) -> Buckets {
        let n = vectors.len();
        let dims = vectors.first().map_or(0, |v| v.len());
        let keys = keys(vectors, center, &band_bits(dims.max(1), bands, bits), bands);
        let mut order = Vec::with_capacity(n * bands);
        let mut bucket_of = vec![u32::MAX; n * bands];
        let mut buckets = Vec::new();
        let mut o: Vec<(u32, u32)> = Vec::with_capacity(n);
        for b in 0..bands {
            // Key and index side by side: sorting reads no other memory.
            o.clear();
            o.extend((0..n).map(|i| (keys[i * bands + b], i as u32)));
            o.sort_unstable();
            let mut run = 0;
            while run < n {
                let mut end = run + 1;
                while end < n && o[end].0 == o[run].0 {
                    end += 1;
                }
                if end - run > 1 {
                    for &(_, i) in &o[run..end] {
                        bucket_of[i as usize * bands + b] = buckets.len() as u32;
                    }
                    buckets.push(((b * n + run) as u32, (end - run) as u32));
                }
                run = end;
            }
            order.extend(o.iter().map(|&(_, i)| i));
        }
        Buckets {
            bands,
            order,
            bucket_of,
            buckets,
        }
    }

    /// Calls `visit` with every vector in play (`in_play`) that shares at least one band with
    /// vector `i` (once per band it shares); `i` and what is out of play leave the buckets
    /// walked.
    pub fn sharing(
        &mut self,
        i: usize,
        in_play: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize),
    ) {
        let mine = &self.bucket_of[i * self.bands..(i + 1) * self.bands];
        for &bucket in mine {
            if bucket == u32::MAX {
                continue;
            }
            let (start, len) = &mut self.buckets[bucket as usize];
            let s = *start as usize;
            let mut w = s;
            for r in s..s + *len as usize {
                let j = self.order[r] as usize;
                if j == i || !in_play(j) {
                    continue;
                }
                self.order[w] = j as u32;
                w += 1;
                visit(j);
            }
            *len = (w - s) as u32;
        }
    }
}

/// The mean of each number over `vectors` (int8, all of one length), rounded: the point the
/// sign bits are taken from. Embeddings are not centred on zero (a number that is positive in
/// most texts puts most of them on one side of its hyperplane, and the buckets grow), so the
/// bits compare each number with its mean; the mean of the same vectors is the same on every
/// run, which keeps the candidates fixed.
pub fn center(vectors: &[&[i8]]) -> Vec<i8> {
    let dims = vectors.first().map_or(0, |v| v.len());
    let mut sums = vec![0i64; dims];
    for v in vectors {
        for (s, &x) in sums.iter_mut().zip(v.iter()) {
            *s += i64::from(x);
        }
    }
    let n = vectors.len().max(1) as f64;
    sums.iter()
        .map(|&s| (s as f64 / n).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

fn keys(vectors: &[&[i8]], center: &[i8], plan: &[Vec<usize>], bands: usize) -> Vec<u32> {
    let mut keys = vec![0u32; vectors.len() * bands];
    let mut above: Vec<u32> = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        // Each number's side of its mean once, then every band gathers its bits from it.
        above.clear();
        above.extend(
            v.iter()
                .enumerate()
                .map(|(j, &x)| u32::from(x > center.get(j).copied().unwrap_or(0))),
        );
        for (b, band) in plan.iter().enumerate() {
            let mut k = 0u32;
            for (t, &j) in band.iter().enumerate() {
                k |= above.get(j).copied().unwrap_or(0) << t;
            }
            keys[i * bands + b] = k;
        }
    }
    keys
}

/// The candidate pairs `(i, j)`, `i < j`, of `vectors` (int8, all of one length): those that
/// share the sign bits of at least one band, each once, in no particular order.
pub fn candidates(vectors: &[&[i8]], center: &[i8], bands: usize, bits: usize) -> Vec<(u32, u32)> {
    let n = vectors.len();
    let Some(dims) = vectors.first().map(|v| v.len()) else {
        return Vec::new();
    };
    // keys[i * bands + b]: vector i's bits in band b.
    let keys = keys(vectors, center, &band_bits(dims, bands, bits), bands);
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

    #[test]
    fn buckets_visit_exactly_the_candidate_pairs() {
        // Few bits per band so that many pairs share one: every candidate pair is visited
        // from both ends, and nothing else is.
        let vs = vectors(300, 7);
        let refs: Vec<&[i8]> = vs.iter().map(Vec::as_slice).collect();
        let mut want: Vec<(u32, u32)> = candidates(&refs, &center(&refs), 8, 4);
        want.sort_unstable();
        assert!(want.len() > 1000, "{}", want.len());
        let mut buckets = Buckets::new(&refs, &center(&refs), 8, 4);
        let mut got = std::collections::BTreeSet::new();
        for i in 0..refs.len() {
            // Each walk drops `i` from its buckets: a later one sees only those after it.
            buckets.sharing(
                i,
                |_| true,
                |j| {
                    assert!(j > i, "{j} was dropped when {i} walked");
                    got.insert((i as u32, j as u32));
                },
            );
        }
        assert_eq!(got.into_iter().collect::<Vec<_>>(), want);
    }

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
        let pairs = candidates(&refs, &center(&refs), BANDS, BITS);
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
