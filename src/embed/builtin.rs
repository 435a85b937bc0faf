//! The built-in model: potion-base-8M (MIT, MinishLab), int8, compiled into the binary.
//!
//! The files are those of `model/potion-base-8M/` (written by `scripts/quantize-model`, which
//! documents the layout): `vocab.txt`, `table.i8` (one row of 256 signed bytes per token id)
//! and `scales.f32` (one little-endian f32 per row). Nothing is read from disk or the network
//! at run time and nothing is parsed at load: loading builds the vocabulary hash table only,
//! and embedding reads the int8 rows in place.
//!
//! Embedding is model2vec's `StaticModel.encode` for this model: cut the text to
//! 512 × (median token length = 6) chars, tokenize without special tokens, keep the first
//! 512 ids, drop `[UNK]`, average the rows, L2-normalize (`normalize: true` in `config.json`).
//! A text without known tokens gives the zero vector.

use super::Embedder;
use super::wordpiece::WordPiece;

static TABLE: &[u8] = include_bytes!("../../model/potion-base-8M/table.i8");
static SCALES: &[u8] = include_bytes!("../../model/potion-base-8M/scales.f32");

/// The width of a row of the table and of every vector.
pub const DIMS: usize = 256;
/// model2vec's default `max_length`: tokens past this many are not averaged.
const MAX_TOKENS: usize = 512;
/// model2vec's `median_token_length` of this vocabulary (`int(np.median)` of the token lengths
/// in chars, `##` included): a constant of the model, checked by a test rather than computed at
/// every load.
const MEDIAN_TOKEN_CHARS: usize = 6;
/// The model id of [`Builtin`], known without loading it.
pub const MODEL_ID: &str = "potion-base-8M-int8";

/// The built-in static embedding model. Cheap to load: see [`Builtin::load`].
pub struct Builtin {
    wordpiece: WordPiece,
}

impl Builtin {
    /// The tokenizer over the embedded `vocab.txt`, its lookup table compiled in.
    pub fn load() -> Builtin {
        let wordpiece = WordPiece::builtin();
        debug_assert_eq!(TABLE.len(), wordpiece.len() * DIMS);
        debug_assert_eq!(SCALES.len(), wordpiece.len() * 4);
        Builtin { wordpiece }
    }

    /// The model of this process, loaded on first use and kept.
    pub fn shared() -> &'static Builtin {
        static MODEL: std::sync::OnceLock<Builtin> = std::sync::OnceLock::new();
        MODEL.get_or_init(Builtin::load)
    }

    /// Calls `f` with each word of `text` (lower-cased, accents stripped; punctuation is a word
    /// of its own), the first `limit` words.
    pub fn for_each_word(&self, text: &str, limit: usize, f: &mut dyn FnMut(&str)) {
        self.wordpiece.for_each_word(text, limit, f);
    }

    /// The unit vector of a `word` as [`Builtin::for_each_word`] gives it: the normalized mean
    /// of its tokens' rows, `[UNK]` left out. False (and `out` untouched) when no token is known.
    pub fn word_vector(&self, word: &str, out: &mut [f32; DIMS]) -> bool {
        let mut ids = Vec::new();
        self.wordpiece.word_ids(word, &mut ids);
        let unk = self.wordpiece.unk();
        ids.retain(|&id| id != unk);
        let mean = normalized_mean(&ids);
        if mean.iter().all(|&x| x == 0.0) {
            return false;
        }
        *out = mean;
        true
    }

    /// The ids of the tokens whose rows [`Builtin::word_vector`] averages for `word` (`[UNK]`
    /// left out), appended to `ids`.
    pub fn word_token_ids(&self, word: &str, ids: &mut Vec<u32>) {
        let from = ids.len();
        self.wordpiece.word_ids(word, ids);
        let unk = self.wordpiece.unk();
        let mut at = from;
        for i in from..ids.len() {
            if ids[i] != unk {
                ids[at] = ids[i];
                at += 1;
            }
        }
        ids.truncate(at);
    }

    /// Token `id`'s row · `q`, in its scale: what the token adds to a mean's dot product
    /// with `q` (before the mean is divided by its count and norm).
    pub fn row_dot(id: u32, q: &[f32; DIMS]) -> f32 {
        let (row, scale) = row(id as usize);
        let mut lanes = [0f32; 8];
        for (r, x) in row.chunks_exact(8).zip(q.chunks_exact(8)) {
            for i in 0..8 {
                lanes[i] += f32::from(i8::from_ne_bytes([r[i]])) * x[i];
            }
        }
        lanes.iter().sum::<f32>() * scale
    }

    /// The rows of tokens `a` and `b` dotted, in their scales: what the pair adds to the
    /// squared norm of a sum of rows.
    pub fn rows_dot(a: u32, b: u32) -> f32 {
        let ((ra, sa), (rb, sb)) = (row(a as usize), row(b as usize));
        let mut sum = 0i32;
        for (&x, &y) in ra.iter().zip(rb) {
            sum += i32::from(i8::from_ne_bytes([x])) * i32::from(i8::from_ne_bytes([y]));
        }
        sum as f32 * sa * sb
    }

    /// The token ids that [`Embedder::embed`] averages for `text`.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.token_ids_into(text, &mut ids);
        ids
    }

    fn token_ids_into(&self, text: &str, ids: &mut Vec<u32>) {
        // model2vec cuts the text to max_length * median token length chars (Python slicing,
        // so chars, not bytes) before tokenizing; a text of fewer bytes is never cut.
        let max_chars = MAX_TOKENS * MEDIAN_TOKEN_CHARS;
        let text = if text.len() <= max_chars {
            text
        } else {
            text.char_indices()
                .nth(max_chars)
                .map_or(text, |(at, _)| &text[..at])
        };
        ids.clear();
        self.wordpiece.tokenize(text, MAX_TOKENS, ids);
        // The tokenizer truncates to 512 ids first; model2vec drops [UNK] after.
        ids.truncate(MAX_TOKENS);
        let unk = self.wordpiece.unk();
        ids.retain(|&id| id != unk);
    }

    fn embed_into(&self, text: &str, ids: &mut Vec<u32>) -> Vec<f32> {
        self.token_ids_into(text, ids);
        normalized_mean(ids).to_vec()
    }
}

/// The rows of `ids` averaged, then L2-normalized, as model2vec does; zeros for no ids.
fn normalized_mean(ids: &[u32]) -> [f32; DIMS] {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX2, checked just above: all `normalized_mean_avx2` needs.
        return unsafe { normalized_mean_avx2(ids) };
    }
    normalized_mean_any(ids)
}

/// [`normalized_mean`] where the CPU has AVX2 (not in the x86-64 baseline the build targets):
/// eight int8 weights widened to floats at once. The same operations in the same order as
/// without it (no fused multiply-add), so the same bits: a soft match computes a vector for
/// every distinct word of its pool, and this was about a third of a library search's soft step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn normalized_mean_avx2(ids: &[u32]) -> [f32; DIMS] {
    normalized_mean_any(ids)
}

#[inline(always)]
fn normalized_mean_any(ids: &[u32]) -> [f32; DIMS] {
    let mut sum = [0f32; DIMS];
    for &id in ids {
        let (row, scale) = row(id as usize);
        for (s, &q) in sum.iter_mut().zip(row) {
            *s += f32::from(i8::from_ne_bytes([q])) * scale;
        }
    }
    if ids.is_empty() {
        return sum;
    }
    let count = ids.len() as f32;
    sum.iter_mut().for_each(|s| *s /= count);
    // Summed in eight lanes (one long chain of additions waits on each): the same on every
    // CPU. model2vec adds 1e-32 to the norm, so a zero mean stays zero rather than NaN.
    let mut lanes = [0f32; 8];
    for chunk in sum.chunks_exact(8) {
        for (l, s) in lanes.iter_mut().zip(chunk) {
            *l += s * s;
        }
    }
    let norm = lanes.iter().sum::<f32>().sqrt() + 1e-32;
    sum.iter_mut().for_each(|s| *s /= norm);
    sum
}

/// Row `id` of the table and its scale.
fn row(id: usize) -> (&'static [u8], f32) {
    let scale = f32::from_le_bytes(
        SCALES[id * 4..id * 4 + 4]
            .try_into()
            .expect("a 4-byte slice is an f32"),
    );
    (&TABLE[id * DIMS..(id + 1) * DIMS], scale)
}

impl Embedder for Builtin {
    fn dims(&self) -> usize {
        DIMS
    }

    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let mut ids = Vec::new();
        texts
            .iter()
            .map(|text| self.embed_into(text, &mut ids))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx2_mean_is_the_plain_mean_bit_for_bit() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        for ids in [
            vec![],
            vec![5],
            vec![7, 1999, 20000],
            (100..140).collect::<Vec<u32>>(),
        ] {
            #[allow(unsafe_code)]
            // SAFETY: AVX2 is there, checked above.
            let fast = unsafe { normalized_mean_avx2(&ids) };
            let plain = normalized_mean_any(&ids);
            assert_eq!(fast.map(f32::to_bits), plain.map(f32::to_bits), "{ids:?}");
        }
    }
    use crate::embed::cosine;
    use crate::embed::wordpiece::VOCAB;
    use serde::Deserialize;

    /// tests/fixtures/embed/reference.json: model2vec on the original f32 model (README.md
    /// beside it says how it was made).
    #[derive(Deserialize)]
    struct Reference {
        max_length: usize,
        median_token_length: usize,
        cases: Vec<Case>,
    }

    #[derive(Deserialize)]
    struct Case {
        text: String,
        ids: Vec<u32>,
        model_ids: Vec<u32>,
        vector: Vec<f32>,
    }

    fn reference() -> Reference {
        let json = include_str!("../../tests/fixtures/embed/reference.json");
        serde_json::from_str(json).expect("reference.json parses")
    }

    /// `int(np.median([len(t) for t in tokens]))`: the mean of the two middle lengths when the
    /// count is even, truncated.
    fn median_chars(tokens: &[&str]) -> usize {
        let mut counts = [0usize; 128];
        for token in tokens {
            counts[token.chars().count().min(counts.len() - 1)] += 1;
        }
        let nth = |n: usize| {
            let mut seen = 0;
            counts
                .iter()
                .position(|&k| {
                    seen += k;
                    seen > n
                })
                .unwrap_or(0)
        };
        let n = tokens.len();
        if n == 0 {
            0
        } else if n % 2 == 1 {
            nth(n / 2)
        } else {
            (nth(n / 2 - 1) + nth(n / 2)) / 2
        }
    }

    #[test]
    fn median_of_even_count_truncates_the_mean() {
        assert_eq!(median_chars(&["a", "abcd"]), 2);
        assert_eq!(median_chars(&["a", "ab", "abcdef"]), 2);
        assert_eq!(median_chars(&[]), 0);
    }

    #[test]
    fn table_sizes_match_the_vocabulary() {
        let rows = VOCAB.lines().count();
        assert_eq!(rows, 29_528);
        assert_eq!(TABLE.len(), rows * DIMS);
        assert_eq!(SCALES.len(), rows * 4);
    }

    #[test]
    fn token_ids_match_hf_tokenizers() {
        let model = Builtin::load();
        let reference = reference();
        assert_eq!(reference.max_length, MAX_TOKENS);
        assert_eq!(reference.median_token_length, MEDIAN_TOKEN_CHARS);
        let tokens: Vec<&str> = VOCAB.lines().collect();
        assert_eq!(median_chars(&tokens), MEDIAN_TOKEN_CHARS);
        for case in &reference.cases {
            let mut ids = Vec::new();
            model.wordpiece.tokenize(&case.text, usize::MAX, &mut ids);
            assert_eq!(ids, case.ids, "tokenizer ids of {:?}", case.text);
            assert_eq!(
                model.token_ids(&case.text),
                case.model_ids,
                "model ids of {:?}",
                case.text
            );
        }
    }

    #[test]
    fn vectors_match_model2vec() {
        let model = Builtin::load();
        let reference = reference();
        let texts: Vec<&str> = reference.cases.iter().map(|c| c.text.as_str()).collect();
        let vectors = model.embed(&texts);
        let mut lowest = 1f32;
        for (case, got) in reference.cases.iter().zip(&vectors) {
            assert_eq!(got.len(), DIMS);
            if case.vector.iter().all(|&x| x == 0.0) {
                assert!(
                    got.iter().all(|&x| x == 0.0),
                    "zero vector for {:?}",
                    case.text
                );
                continue;
            }
            let similarity = cosine(got, &case.vector);
            assert!(
                similarity > 0.999,
                "cosine {similarity} for {:?}",
                case.text
            );
            lowest = lowest.min(similarity);
            let norm = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "norm {norm} for {:?}", case.text);
        }
        println!("lowest cosine to model2vec: {lowest}");
    }

    #[test]
    fn related_texts_score_higher_than_unrelated() {
        let model = Builtin::load();
        let v = model.embed(&[
            "the NFS mount is stale and needs root to unmount",
            "that thing with the network filesystem mounts",
            "my sister adopted a kitten",
            "cargo build fails with a linker error on musl",
            "the rust compiler cannot link the static binary",
        ]);
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.1);
        assert!(cosine(&v[1], &v[0]) > cosine(&v[1], &v[2]) + 0.1);
        assert!(cosine(&v[3], &v[4]) > cosine(&v[3], &v[2]) + 0.1);
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[4]));
    }

    #[test]
    fn empty_and_unknown_texts_are_zero_vectors() {
        let model = Builtin::load();
        for v in model.embed(&["", "  \n\t", "🦀🎉", "\u{0}"]) {
            assert_eq!(v, vec![0.0; DIMS]);
        }
        assert!(model.embed(&[]).is_empty());
        assert_eq!(model.dims(), DIMS);
        assert_eq!(model.model_id(), MODEL_ID);
    }

    /// Release figures for the brief: `cargo test --release --lib embed::builtin::tests::timing
    /// -- --ignored --nocapture`. No assertions: a loaded machine must not fail the suite.
    #[test]
    #[ignore = "timing, run by hand in release"]
    fn timing() {
        use std::time::Instant;

        let runs = 200;
        let start = Instant::now();
        for _ in 0..runs {
            std::hint::black_box(Builtin::load());
        }
        let load = start.elapsed() / runs;
        let model = Builtin::load();

        let query = "why is the NFS mount stale after the reboot";
        let start = Instant::now();
        for _ in 0..1000 {
            std::hint::black_box(model.embed(&[std::hint::black_box(query)]));
        }
        let one = start.elapsed() / 1000;

        let texts = synthetic_texts(100_000);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let bytes: usize = texts.iter().map(String::len).sum();
        let start = Instant::now();
        let vectors = model.embed(&refs);
        let many = start.elapsed();
        assert_eq!(vectors.len(), texts.len());

        let stored: Vec<Vec<i8>> = vectors
            .iter()
            .map(|v| crate::embed::quantize(v).0)
            .collect();
        let (q, _) = crate::embed::quantize(&vectors[0]);
        let start = Instant::now();
        let mut best = i32::MIN;
        for _ in 0..10 {
            for v in &stored {
                best = best.max(crate::embed::dot_i8(std::hint::black_box(&q), v));
            }
        }
        let search = start.elapsed() / 10;
        println!("load {load:?}");
        println!("one query ({} bytes) {one:?}", query.len());
        println!(
            "100k texts ({:.1} bytes avg) {many:?}",
            bytes as f64 / texts.len() as f64
        );
        println!("dot_i8 over 100k stored vectors {search:?} (best {best})");
    }

    /// Short observation-like texts, 8 to 20 words from a fixed list, deterministic.
    fn synthetic_texts(n: usize) -> Vec<String> {
        const WORDS: &[&str] = &[
            "the",
            "nfs",
            "mount",
            "is",
            "stale",
            "after",
            "reboot",
            "cargo",
            "build",
            "fails",
            "linker",
            "error",
            "TestPagerOrder",
            "panicked",
            "config",
            "deploy",
            "staging",
            "database",
            "migration",
            "timeout",
            "retry",
            "user",
            "prefers",
            "tabs",
            "over",
            "spaces",
            "never",
            "push",
            "to",
            "main",
            "on",
            "friday",
            "café",
            "kubernetes",
            "pod",
            "crashloop",
            "because",
            "of",
            "missing",
            "secret",
            "in",
            "vault",
            "https://x.io/a",
            "run",
            "scripts/bench",
            "before",
            "merging",
            "and",
            "check",
            "flamegraph",
            "p99",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        (0..n)
            .map(|_| {
                let len = 8 + (next() % 13) as usize;
                let words: Vec<&str> = (0..len)
                    .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                    .collect();
                words.join(" ")
            })
            .collect()
    }
}
