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
    /// The bands of `vectors` (int8, all of one length), their bits taken from `center`
    /// (the sweep makes the signatures itself, for its cut too: [`Buckets::of_signatures`]).
    #[cfg(test)]
    pub fn new(vectors: &[&[i8]], center: &[i8], bands: usize, bits: usize) -> Buckets {
        let dims = vectors.first().map_or(0, |v| v.len());
        Buckets::of_signatures(&signatures(vectors, center, dims), dims, bands, bits)
    }

    /// The bands of the vectors whose [`signature`]s (about one centre, for vectors of `dims`
    /// numbers) lie side by side in `signs`.
    pub fn of_signatures(signs: &[u64], dims: usize, bands: usize, bits: usize) -> Buckets {
        let words = signature_words(dims).max(1);
        let n = signs.len() / words;
        let keys = keys(signs, words, &band_bits(dims.max(1), bands, bits), bands);
        let mut order = Vec::with_capacity(n * bands);
        let mut bucket_of = vec![u32::MAX; n * bands];
        let mut buckets = Vec::new();
        // A band's keys have `bits` bits: a counting sort orders them (by key, then index, as
        // the vectors are taken in order) in two passes, where a comparison sort of 100,000
        // took most of the build.
        let mut starts = vec![0u32; (1usize << bits.min(16)) + 1];
        let mut sorted = vec![0u32; n];
        let mut sorted_keys = vec![0u32; n];
        let mut o: Vec<(u32, u32)> = Vec::new();
        for b in 0..bands {
            let key = |i: usize| keys[b * n + i];
            if bits <= 16 {
                starts.fill(0);
                for i in 0..n {
                    starts[key(i) as usize + 1] += 1;
                }
                for k in 1..starts.len() {
                    starts[k] += starts[k - 1];
                }
                for i in 0..n {
                    let slot = &mut starts[key(i) as usize];
                    sorted[*slot as usize] = i as u32;
                    *slot += 1;
                }
            } else {
                o.clear();
                o.extend((0..n).map(|i| (key(i), i as u32)));
                o.sort_unstable();
                for (s, &(_, i)) in sorted.iter_mut().zip(&o) {
                    *s = i;
                }
            }
            // The keys in their sorted order, read side by side to find the runs.
            for (s, &i) in sorted_keys.iter_mut().zip(&sorted) {
                *s = key(i as usize);
            }
            let mut run = 0;
            while run < n {
                let k = sorted_keys[run];
                let mut end = run + 1;
                while end < n && sorted_keys[end] == k {
                    end += 1;
                }
                if end - run > 1 {
                    for &i in &sorted[run..end] {
                        bucket_of[i as usize * bands + b] = buckets.len() as u32;
                    }
                    buckets.push(((b * n + run) as u32, (end - run) as u32));
                }
                run = end;
            }
            order.extend_from_slice(&sorted);
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
        // Each bucket and its first member lie somewhere in tens of megabytes: read every
        // bucket's place first, then each one's first member, so that the memory reads of
        // one vector's buckets overlap instead of waiting one after another (the walk was
        // two cache misses a band).
        let mut places = [(0u32, 0u32); 128];
        let mut count = 0;
        for b in 0..self.bands {
            let bucket = self.bucket_of[i * self.bands + b];
            if bucket == u32::MAX {
                continue;
            }
            if count == places.len() {
                self.walk(&places[..count], i, &in_play, &mut visit);
                count = 0;
            }
            places[count] = (bucket, self.buckets[bucket as usize].1);
            count += 1;
        }
        self.walk(&places[..count], i, &in_play, &mut visit);
    }

    fn walk(
        &mut self,
        places: &[(u32, u32)],
        i: usize,
        in_play: &impl Fn(usize) -> bool,
        visit: &mut impl FnMut(usize),
    ) {
        let mut first = 0u32;
        for &(bucket, len) in places {
            if len > 0 {
                let s = self.buckets[bucket as usize].0 as usize;
                first = first.wrapping_add(self.order[s]);
            }
        }
        std::hint::black_box(first);
        for &(bucket, _) in places {
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

/// Of the candidates the bands let through, only those whose sign patterns differ on at most
/// `SIGN_CUT_EIGHTHS` eighths of the numbers are scored: a pair at cosine 0.85 differs on a
/// seventh of them (36 of 256 at the median; at most 74 over the 10,165 pairs at cosine ≥
/// 0.85 among 8,000 real sentences, `scripts/bench-maintain`), and the cut at three eighths
/// (96 of 256) leaves 39 % of the candidates to score. A signature is 32 bytes where a row is
/// 256, so the cut reads a tenth of the memory the scores did (ADR 141).
pub const SIGN_CUT_EIGHTHS: usize = 3;

/// Words of a sign signature ([`signature`]): one bit a number, 64 numbers a word.
pub fn signature_words(dims: usize) -> usize {
    dims.div_ceil(64)
}

/// `v`'s sign pattern about `center`, one bit a number (set when the number is above its
/// mean, as the bands' bits are), into `out` ([`signature_words`] long).
pub fn signature(v: &[i8], center: &[i8], out: &mut [u64]) {
    out.fill(0);
    for (j, &x) in v.iter().enumerate() {
        if x > center.get(j).copied().unwrap_or(0) {
            out[j / 64] |= 1 << (j % 64);
        }
    }
}

/// The [`signature`]s of `vectors` (of `dims` numbers at most) side by side, each
/// [`signature_words`] long.
pub fn signatures(vectors: &[&[i8]], center: &[i8], dims: usize) -> Vec<u64> {
    let words = signature_words(dims);
    let mut signs = vec![0u64; vectors.len() * words];
    for (i, v) in vectors.iter().enumerate() {
        signature(v, center, &mut signs[i * words..(i + 1) * words]);
    }
    signs
}

/// The number of numbers on which two signatures differ (the Hamming distance).
pub fn sign_distance(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Every vector's key in every band, band by band: `keys[b * n + i]` is vector `i`'s bits in
/// band `b` (from its signature in `signs`, `words` long), so that a band's keys are read side
/// by side. A large store's bands are shared between two threads.
fn keys(signs: &[u64], words: usize, plan: &[Vec<usize>], bands: usize) -> Vec<u32> {
    let n = signs.len() / words.max(1);
    let mut keys = vec![0u32; n * bands];
    // Vector by vector, its signature in hand; each band's key goes to that band's row.
    let fill = |keys: &mut [u32], plan: &[Vec<usize>]| {
        let mut mine = vec![0u64; words];
        for i in 0..n {
            mine.copy_from_slice(&signs[i * words..(i + 1) * words]);
            for (b, band) in plan.iter().enumerate() {
                let mut k = 0u32;
                for (t, &j) in band.iter().enumerate() {
                    k |= (((mine[j / 64] >> (j % 64)) & 1) as u32) << t;
                }
                keys[b * n + i] = k;
            }
        }
    };
    if n >= 10_000 && bands >= 2 {
        let half = bands / 2;
        let (low, high) = keys.split_at_mut(half * n);
        let (plan_low, plan_high) = plan.split_at(half);
        std::thread::scope(|s| {
            s.spawn(|| fill(high, plan_high));
            fill(low, plan_low);
        });
    } else {
        fill(&mut keys, plan);
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
    // keys[b * n + i]: vector i's bits in band b.
    let signs = signatures(vectors, center, dims);
    let keys = keys(
        &signs,
        signature_words(dims),
        &band_bits(dims, bands, bits),
        bands,
    );
    let mut out = Vec::new();
    let mut order: Vec<u32> = (0..n as u32).collect();
    for b in 0..bands {
        order.sort_unstable_by_key(|&i| (keys[b * n + i as usize], i));
        let mut start = 0;
        while start < n {
            let key = keys[b * n + order[start] as usize];
            let mut end = start + 1;
            while end < n && keys[b * n + order[end] as usize] == key {
                end += 1;
            }
            for x in start..end {
                let i = order[x] as usize;
                for &j in &order[x + 1..end] {
                    let j = j as usize;
                    // Counted in the first band the two share.
                    if (0..b).any(|c| keys[c * n + i] == keys[c * n + j]) {
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
    fn signatures_mark_numbers_above_the_centre_and_distance_counts_differences() {
        let center = vec![0i8; 130];
        let up: Vec<i8> = (0..130).map(|j| if j % 2 == 0 { 5 } else { -5 }).collect();
        let down: Vec<i8> = up.iter().map(|x| -x).collect();
        let signs = signatures(&[&up, &down, &up], &center, 130);
        let words = signature_words(130);
        assert_eq!(words, 3);
        let sig = |i: usize| &signs[i * words..(i + 1) * words];
        assert_eq!(sig(0)[0], 0x5555_5555_5555_5555);
        assert_eq!(sig(0)[2], 0b01, "bits past the last number stay clear");
        assert_eq!(sign_distance(sig(0), sig(2)), 0);
        assert_eq!(sign_distance(sig(0), sig(1)), 130);
        // A number equal to its mean is not above it.
        let mut flat = up.clone();
        flat[0] = 0;
        let one = signatures(&[&flat], &center, 130);
        assert_eq!(sign_distance(&one, sig(0)), 1);
    }

    #[test]
    fn keys_wider_than_a_counting_sort_give_the_same_buckets() {
        // 20 bits a band takes the comparison sort; every candidate pair is still visited.
        let vs = vectors(300, 11);
        let mut near = vs.clone();
        for v in near.iter_mut().take(100) {
            v[0] = v[0].saturating_add(1);
        }
        let all: Vec<Vec<i8>> = vs.into_iter().chain(near).collect();
        let refs: Vec<&[i8]> = all.iter().map(Vec::as_slice).collect();
        let c = center(&refs);
        let mut want = candidates(&refs, &c, 4, 20);
        want.sort_unstable();
        assert!(want.len() >= 100, "{}", want.len());
        let mut buckets = Buckets::new(&refs, &c, 4, 20);
        let mut got = std::collections::BTreeSet::new();
        for i in 0..refs.len() {
            buckets.sharing(
                i,
                |_| true,
                |j| {
                    got.insert((i.min(j) as u32, i.max(j) as u32));
                },
            );
        }
        assert_eq!(got.into_iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn the_bands_are_fixed() {
        assert_eq!(band_bits(256, 4, 12), band_bits(256, 4, 12));
        assert!(band_bits(256, BANDS, BITS).iter().all(|b| b.len() == BITS));
    }
}
