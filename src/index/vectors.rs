//! Vectors beside the index: `.cairn/vectors/<model>.bin`, searched exactly over int8.
//!
//! The store is keyed by content: a row is `hash u64 LE | scale f32 LE | dims × i8`, the hash
//! being [`text_hash`] of the text that was embedded, after a 16-byte header (`CAIRNV01`, dims
//! u32, reserved u32). Rows are only appended (under a lock on the file), so a text is embedded
//! once per model however often its document is re-indexed, a provider is never paid twice for
//! the same text, and a second model gets a file of its own. Documents carry the hash of their
//! text in the index (`chash`), which is how a row found by the scan is turned back into live
//! documents; rows of texts no longer indexed are simply never resolved.
//!
//! Search is brute force: the query is compared with every row (int8 dot products, cosine
//! within about 0.01 of the float one) and the best `k` kept. The layout is one flat array of
//! fixed-size rows, which an approximate index (HNSW, IVF) can be built from later without
//! changing what is stored.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tantivy::directory::{Directory, MmapDirectory, OwnedBytes};

#[cfg(test)]
use crate::embed::dot_i8;
use crate::embed::quantize;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"CAIRNV01";
const HEADER: usize = 16;

/// What turns texts into vectors for the index: the built-in model, or a provider.
pub trait Vectorizer: Send + Sync {
    /// Names the model; vectors of different models live in different files.
    fn model_id(&self) -> String;
    /// Vectors for texts to be stored, in order.
    fn documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The vector of a query.
    fn query(&self, text: &str) -> Result<Vec<f32>>;
}

impl Vectorizer for &'static crate::embed::Builtin {
    fn model_id(&self) -> String {
        crate::embed::Embedder::model_id(*self).to_string()
    }

    fn documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(crate::embed::Embedder::embed(*self, texts))
    }

    fn query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(crate::embed::Embedder::embed(*self, &[text])
            .pop()
            .unwrap_or_default())
    }
}

/// The vectorizer `[embed]` names.
pub fn for_config(embed: &crate::config::Embed) -> Result<Box<dyn Vectorizer>> {
    match embed.provider.trim() {
        "" | "builtin" => Ok(Box::new(crate::embed::Builtin::shared())),
        _ => {
            let client = crate::provider::EmbedClient::new(embed).map_err(|e| {
                Error::new(crate::error::Kind::Config, format!("cairn.toml: [embed]: {e}"))
                    .with_fix("set [embed] provider to builtin, ollama, openai or voyage, with model and base_url")
            })?;
            Ok(Box::new(Provider(client)))
        }
    }
}

/// The model id of the vectorizer `[embed]` names, without making it.
pub fn model_id_for(embed: &crate::config::Embed) -> String {
    match embed.provider.trim() {
        "" | "builtin" => crate::embed::MODEL_ID.to_string(),
        _ => crate::provider::model_id(embed),
    }
}

/// An embeddings provider over HTTP. Its vectors are normalized to unit length before they
/// are stored, so that the int8 dot product stays a cosine.
struct Provider(crate::provider::EmbedClient);

fn provider_err(e: crate::provider::Error) -> Error {
    Error::new(crate::error::Kind::Io, format!("embeddings provider: {e}"))
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

impl Vectorizer for Provider {
    fn model_id(&self) -> String {
        self.0.model_id()
    }

    fn documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let out = self
            .0
            .embed(texts, crate::provider::InputType::Document)
            .map_err(provider_err)?;
        Ok(out.vectors.into_iter().map(unit).collect())
    }

    fn query(&self, text: &str) -> Result<Vec<f32>> {
        let out = self
            .0
            .embed(&[text], crate::provider::InputType::Query)
            .map_err(provider_err)?;
        Ok(out.vectors.into_iter().next().map(unit).unwrap_or_default())
    }
}

/// The hash a text's vector is stored under.
pub fn text_hash(text: &str) -> u64 {
    let d = Sha256::digest(text.as_bytes());
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The file for a model's vectors.
pub fn path_for(dir: &Path, model_id: &str) -> PathBuf {
    let safe: String = model_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.bin"))
}

/// The dims a store file holds, from its header.
pub fn dims_of(path: &Path) -> Option<usize> {
    let mut h = [0u8; HEADER];
    let file = std::fs::File::open(path).ok()?;
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut h, 0).ok()?;
    (&h[..8] == MAGIC).then(|| u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize)
}

/// Rewrites every store file in `dir` (atomically, under its lock) without the rows whose
/// hash is in `gone`, and its signs file from the rows kept. Returns the rows removed.
pub fn remove_rows(dir: &Path, gone: &HashSet<u64>) -> Result<usize> {
    if gone.is_empty() {
        return Ok(0);
    }
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir.display(), &e)),
    };
    let mut removed = 0;
    for entry in read {
        let path = entry.map_err(|e| Error::io(dir.display(), &e))?.path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        let Some(dims) = dims_of(&path) else {
            continue;
        };
        let io = |e: std::io::Error| Error::io(path.display(), &e);
        let file = OpenOptions::new().read(true).open(&path).map_err(io)?;
        file.lock().map_err(io)?;
        let bytes = std::fs::read(&path).map_err(io)?;
        let row = 12 + dims;
        let body = bytes.get(HEADER..).unwrap_or_default();
        let mut out = Vec::with_capacity(bytes.len());
        out.extend_from_slice(&bytes[..HEADER.min(bytes.len())]);
        let mut dropped = 0;
        for r in body.chunks_exact(row) {
            let hash = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
            if gone.contains(&hash) {
                dropped += 1;
            } else {
                out.extend_from_slice(r);
            }
        }
        if dropped > 0 {
            crate::files::write_atomic(&path, &out)?;
            // The signs follow the rows kept (a missing signs file is rebuilt, so removing it
            // first keeps a crash between the two writes harmless).
            let sig = sig_path(&path);
            let _ = std::fs::remove_file(&sig);
            Signs::append(&path, dims, 0, &[])?;
            removed += dropped;
        }
        file.unlock().map_err(io)?;
    }
    Ok(removed)
}

/// A model's vectors: the file mapped into memory (read-only, through tantivy's mmap
/// directory, so that a search costs no copy of the file), or the rows appended since.
pub struct Store {
    path: PathBuf,
    dims: usize,
    /// The whole rows of the file, header included (empty when there is none).
    bytes: OwnedBytes,
    /// The sign bits of every row (`<store>.sig`, see [`Signs`]), when present and complete.
    signs: Option<OwnedBytes>,
    /// Opened to append only: `bytes` was not read and is not kept.
    append_only: bool,
    /// The file `bytes` maps, open for reading single rows ([`Store::search_by_signs`]).
    file: Option<std::fs::File>,
}

impl Store {
    /// Opens (or starts) the store at `path` for vectors of `dims`. A file of other dims, or
    /// not a store, is replaced: it is derived.
    pub fn open(path: &Path, dims: usize) -> Result<Store> {
        // The file is opened before it is mapped and kept when the path still names it after:
        // file names are never given back to an old file, so the map is of this file too.
        let file = std::fs::File::open(path).ok();
        let bytes = map(path)?;
        let file = file.filter(|f| same_file(f, path));
        let valid = bytes.len() >= HEADER
            && &bytes[..8] == MAGIC
            && u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize == dims;
        let row = 12 + dims;
        let bytes = if !valid {
            OwnedBytes::empty()
        } else {
            // A row cut short by a crash is not a row.
            let whole = (bytes.len() - HEADER) / row * row;
            bytes.slice(0..HEADER + whole)
        };
        let rows = bytes.len().saturating_sub(HEADER) / row;
        let signs = Signs::open(&sig_path(path), dims, rows)?;
        Ok(Store {
            path: path.to_path_buf(),
            dims,
            bytes,
            signs,
            append_only: false,
            file,
        })
    }

    /// Opens the store to append without reading it: a few new rows must not cost a read of a
    /// million old ones.
    pub fn appender(path: &Path, dims: usize) -> Store {
        Store {
            path: path.to_path_buf(),
            dims,
            bytes: OwnedBytes::empty(),
            signs: None,
            append_only: true,
            file: None,
        }
    }

    fn row_len(&self) -> usize {
        12 + self.dims
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.bytes.len().saturating_sub(HEADER) / self.row_len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    fn rows(&self) -> impl Iterator<Item = &[u8]> {
        self.bytes
            .get(HEADER..)
            .unwrap_or_default()
            .chunks_exact(self.row_len())
    }

    /// The cosines of up to `pairs` pairs of stored rows taken evenly across the store, each
    /// row with one half the store away (rows of one text twice are skipped): what two texts
    /// of this store have in common by chance, as the built-in model sees them. Empty for a
    /// store of fewer than two rows.
    pub fn chance_cosines(&self, pairs: usize) -> Vec<f32> {
        let n = self.len();
        if n < 2 || pairs == 0 {
            return Vec::new();
        }
        let len = self.row_len();
        let row = |i: usize| &self.bytes[HEADER + i * len..HEADER + (i + 1) * len];
        let step = (n / pairs).max(1);
        let mut out = Vec::with_capacity(pairs.min(n));
        for i in (0..n).step_by(step).take(pairs) {
            let (a, b) = (row(i), row((i + n / 2) % n));
            if a[..8] == b[..8] {
                continue;
            }
            let scale = |r: &[u8]| f32::from_le_bytes(r[8..12].try_into().expect("4 bytes"));
            let q: Vec<i8> = a[12..].iter().map(|&x| x as i8).collect();
            out.push(dot_row(&q, &b[12..]) as f32 * scale(a) * scale(b));
        }
        out
    }

    /// Every hash stored.
    pub fn hashes(&self) -> HashSet<u64> {
        self.rows()
            .map(|r| u64::from_le_bytes(r[..8].try_into().expect("8 bytes")))
            .collect()
    }

    /// The stored vector (scale, int8 numbers) of each hash in `want` the store holds; of a
    /// hash stored twice, the first row.
    pub fn lookup(&self, want: &HashSet<u64>) -> std::collections::HashMap<u64, (f32, Vec<i8>)> {
        let mut out = std::collections::HashMap::with_capacity(want.len());
        for row in self.rows() {
            let hash = u64::from_le_bytes(row[..8].try_into().expect("8 bytes"));
            if want.contains(&hash) && !out.contains_key(&hash) {
                let scale = f32::from_le_bytes(row[8..12].try_into().expect("4 bytes"));
                out.insert(hash, (scale, row[12..].iter().map(|&b| b as i8).collect()));
            }
        }
        out
    }

    /// Appends vectors (unit length, `dims` long) under their hashes.
    pub fn append(&mut self, items: &[(u64, Vec<f32>)]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let io = |e: std::io::Error| Error::io(self.path.display(), &e);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut out = Vec::with_capacity(items.len() * self.row_len());
        for (hash, v) in items {
            if v.len() != self.dims {
                return Err(Error::new(
                    crate::error::Kind::Io,
                    format!("a vector of {} dims for a store of {}", v.len(), self.dims),
                ));
            }
            let (q, scale) = quantize(v);
            out.extend_from_slice(&hash.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend(q.iter().map(|&b| b as u8));
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        let len = file.metadata().map_err(io)?.len() as usize;
        let mut header = Vec::new();
        let valid = len >= HEADER && {
            let mut h = [0u8; HEADER];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut h, 0).is_ok()
                && &h[..8] == MAGIC
                && u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize == self.dims
        };
        if !valid {
            file.set_len(0).map_err(io)?;
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&(self.dims as u32).to_le_bytes());
            header.extend_from_slice(&0u32.to_le_bytes());
        } else {
            let whole = HEADER + (len - HEADER) / self.row_len() * self.row_len();
            if whole != len {
                file.set_len(whole as u64).map_err(io)?;
            }
        }
        let rows_before = if valid {
            (len - HEADER) / self.row_len()
        } else {
            0
        };
        header.extend_from_slice(&out);
        file.write_all(&header).map_err(io)?;
        // The sign bits follow the rows, under the same lock; a stale or missing signs file
        // (an older store, a crash between the two writes) is rebuilt from the rows.
        let signs = Signs::append(&self.path, self.dims, rows_before, &out);
        file.unlock().map_err(io)?;
        signs?;
        self.signs = None;
        if self.append_only {
            return Ok(());
        }
        let mut all = if self.bytes.len() < HEADER {
            Vec::new()
        } else {
            self.bytes.as_slice().to_vec()
        };
        all.extend_from_slice(if all.is_empty() { &header } else { &out });
        self.bytes = OwnedBytes::new(all);
        Ok(())
    }

    /// The `k` rows nearest `query` (a unit vector), best first, as (hash, cosine). A hash
    /// stored twice is returned once.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        if query.len() != self.dims || k == 0 {
            return Vec::new();
        }
        let (q, q_scale) = quantize(query);
        if q_scale == 0.0 {
            return Vec::new();
        }
        if let Some(signs) = &self.signs
            && self.len() > PREFILTER_FROM
        {
            return self.search_by_signs(signs, &q, q_scale, k);
        }
        // A small min-heap of the best k: (score, hash).
        let mut best: Vec<(f32, u64)> = Vec::with_capacity(k + 1);
        let mut floor = f32::NEG_INFINITY;
        for row in self.rows() {
            let scale = f32::from_le_bytes(row[8..12].try_into().expect("4 bytes"));
            let score = dot_row(&q, &row[12..]) as f32 * q_scale * scale;
            if best.len() == k && score <= floor {
                continue;
            }
            let hash = u64::from_le_bytes(row[..8].try_into().expect("8 bytes"));
            if best.iter().any(|(_, h)| *h == hash) {
                continue;
            }
            best.push((score, hash));
            if best.len() > k {
                let (worst, _) = best
                    .iter()
                    .enumerate()
                    .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
                    .expect("not empty");
                best.swap_remove(worst);
            }
            if best.len() == k {
                floor = best.iter().map(|(s, _)| *s).fold(f32::INFINITY, f32::min);
            }
        }
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        best.into_iter().map(|(s, h)| (h, s)).collect()
    }
}

/// How many rows a search of the `k` nearest reads and scores exactly.
fn candidates_for(k: usize) -> usize {
    (4 * k).max(CANDIDATES_MIN)
}

/// The fewest rows a search narrowed by sign bits scores exactly. A recall's vector list
/// reads 20 records of the 40 it asks for at the lean and balanced caps (30 of 60 at deep,
/// ADR 65): on the bench's 100,000-record store the
/// exact top 20 are kept at 0.931 from 320 rows (0.972 from 512, which cost 192 more reads).
const CANDIDATES_MIN: usize = 320;

/// From this many rows on, a search first narrows by sign bits (below it, a full scan is as
/// fast and exact).
const PREFILTER_FROM: usize = 20_000;

impl Store {
    /// [`Store::search`] over the rows whose sign bits differ least from the query's: the
    /// Hamming distance over `dims` bits orders rows roughly by angle; the best `4 × want` by
    /// it are ordered again by the query's numbers against their signs, and the best
    /// `want = max(4k, CANDIDATES_MIN)` of those scored exactly (a recall asks for twice the
    /// rows its list needs, for the records a filter leaves out). Reads an eighth of a row per
    /// row, and only the candidates' int8 numbers (ADRs 64, 65).
    fn search_by_signs(
        &self,
        signs: &OwnedBytes,
        q: &[i8],
        q_scale: f32,
        k: usize,
    ) -> Vec<(u64, f32)> {
        self.search_by_signs_with(signs, q, q_scale, k, candidates_for(k))
    }

    fn search_by_signs_with(
        &self,
        signs: &OwnedBytes,
        q: &[i8],
        q_scale: f32,
        k: usize,
        want: usize,
    ) -> Vec<(u64, f32)> {
        let n = self.len();
        let width = self.dims / 8;
        let q_bits = sign_bits(q);
        let q_words: Vec<u64> = q_bits
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let bits = &signs.as_slice()[SIG_HEADER..SIG_HEADER + n * width];
        let mut distance: Vec<u16> = Vec::with_capacity(n);
        let mut histogram = vec![0usize; self.dims + 1];
        distances(bits, width, &q_words, &mut distance, &mut histogram);
        crate::output::phase("vectors: signs scanned");
        // First by Hamming distance, ASYMMETRIC_WIDER times as many rows as will be read.
        let first = want.saturating_mul(ASYMMETRIC_WIDER);
        let mut cut = 0;
        let mut taken = 0;
        for (d, count) in histogram.iter().enumerate() {
            taken += count;
            cut = d;
            if taken >= first {
                break;
            }
        }
        // Every row nearer than the cut, and of the rows at it only as many as make `first`:
        // the cut's own distance holds hundreds of rows.
        let mut at_cut = first.saturating_sub(taken - histogram[cut]);
        let mut candidates: Vec<u32> = Vec::with_capacity(first.min(n));
        for (i, d) in distance.iter().enumerate() {
            let d = usize::from(*d);
            if d < cut || (d == cut && at_cut > 0) {
                at_cut -= usize::from(d == cut);
                candidates.push(i as u32);
            }
        }
        // Then by the query's own numbers against each row's signs (an asymmetric estimate
        // of the dot product, far closer to it than the Hamming distance), to `want`.
        if candidates.len() > want {
            let tables = asymmetric_tables(q);
            let mut estimated: Vec<(i32, u32)> = candidates
                .iter()
                .map(|&i| {
                    let row = &bits[i as usize * width..(i as usize + 1) * width];
                    let sum = row
                        .iter()
                        .zip(&tables)
                        .map(|(&b, t)| t[usize::from(b)])
                        .sum::<i32>();
                    (sum, i)
                })
                .collect();
            estimated.select_nth_unstable_by(want - 1, |a, b| b.0.cmp(&a.0));
            estimated.truncate(want);
            candidates = estimated.into_iter().map(|(_, i)| i).collect();
            // In file order: the reads go forward.
            candidates.sort_unstable();
        }
        crate::output::phase("vectors: candidates chosen");
        let row_len = self.row_len();
        let rows = self.bytes.get(HEADER..).unwrap_or_default();
        // The candidates are scattered over the file: each is read on its own (a `pread` of
        // one row) rather than through the map, where touching a row maps sixteen pages
        // around it, page by page (at 1,000,000 rows, most of a search's time).
        let mut buf = vec![0u8; row_len];
        let mut scored: Vec<(f32, u64)> = Vec::with_capacity(candidates.len());
        for i in candidates {
            use std::os::unix::fs::FileExt;
            let i = i as usize;
            let at = (HEADER + i * row_len) as u64;
            let row: &[u8] = match &self.file {
                Some(f) if f.read_exact_at(&mut buf, at).is_ok() => &buf,
                _ => &rows[i * row_len..(i + 1) * row_len],
            };
            let scale = f32::from_le_bytes(row[8..12].try_into().expect("4 bytes"));
            let hash = u64::from_le_bytes(row[..8].try_into().expect("8 bytes"));
            scored.push((dot_row(q, &row[12..]) as f32 * q_scale * scale, hash));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut out: Vec<(u64, f32)> = Vec::with_capacity(k);
        for (score, hash) in scored {
            if !out.iter().any(|(h, _)| *h == hash) {
                out.push((hash, score));
                if out.len() == k {
                    break;
                }
            }
        }
        out
    }
}

/// The Hamming distance of each row of `bits` (`width` bytes a row) to the query's sign bits
/// `q_words`, pushed to `distance` in row order and counted in `histogram`.
fn distances(
    bits: &[u8],
    width: usize,
    q_words: &[u64],
    distance: &mut Vec<u16>,
    histogram: &mut [usize],
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        // Without the `popcnt` instruction (not in the x86-64 baseline the build targets)
        // `count_ones` is a dozen shifts and masks a word. Measured on 1,000,000 rows of 256
        // bits (a recall at 1,000,000 records): the scan took about a quarter of the recall's
        // time with it off.
        #[allow(unsafe_code)]
        // SAFETY: the CPU has `popcnt`, checked just above: all `distances_popcnt` needs.
        unsafe {
            distances_popcnt(bits, width, q_words, distance, histogram)
        };
        return;
    }
    distances_any(bits, width, q_words, distance, histogram);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn distances_popcnt(
    bits: &[u8],
    width: usize,
    q_words: &[u64],
    distance: &mut Vec<u16>,
    histogram: &mut [usize],
) {
    distances_any(bits, width, q_words, distance, histogram);
}

/// [`distances`] in plain code; rows of 256 bits (the built-in model's) unrolled.
#[inline(always)]
fn distances_any(
    bits: &[u8],
    width: usize,
    q_words: &[u64],
    distance: &mut Vec<u16>,
    histogram: &mut [usize],
) {
    let word =
        |c: &[u8], i: usize| u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    if let [a, b, c, d] = *q_words
        && width == 32
    {
        for row in bits.chunks_exact(32) {
            let n = (word(row, 0) ^ a).count_ones()
                + (word(row, 1) ^ b).count_ones()
                + (word(row, 2) ^ c).count_ones()
                + (word(row, 3) ^ d).count_ones();
            histogram[n as usize] += 1;
            distance.push(n as u16);
        }
        return;
    }
    for row in bits.chunks_exact(width) {
        let n: u32 = row
            .chunks_exact(8)
            .zip(q_words)
            .map(|(c, w)| (u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ w).count_ones())
            .sum();
        histogram[n as usize] += 1;
        distance.push(n as u16);
    }
}

/// The signs file of a store: `CAIRNS01`, dims (u32 LE), 4 bytes of zero, then for every row
/// of the store, in the same order, `dims / 8` bytes holding bit `j` set when number `j` is
/// above zero. Derived from the rows, like them.
struct Signs;

const SIG_MAGIC: &[u8; 8] = b"CAIRNS01";
const SIG_HEADER: usize = 16;

/// How many times the rows a search reads the Hamming distance first narrows to, before the
/// asymmetric estimate ([`asymmetric_tables`]) narrows them to those read.
const ASYMMETRIC_WIDER: usize = 4;

/// For each byte of sign bits (eight dims), the sum of the query's numbers over the bits set
/// in each of its 256 values: a row's `Σ q_i` over its positive dims is one lookup a byte, and
/// ranks rows as `q · signs` does (which is `2 × that − Σ q`).
fn asymmetric_tables(q: &[i8]) -> Vec<[i32; 256]> {
    q.chunks(8)
        .map(|c| {
            // Each value's sum is a smaller value's plus the number of its lowest set bit.
            let mut t = [0i32; 256];
            for b in 1..256usize {
                let low = b.trailing_zeros() as usize;
                t[b] = t[b & (b - 1)] + c.get(low).map_or(0, |&x| i32::from(x));
            }
            t
        })
        .collect()
}

/// The signs file beside a store file.
fn sig_path(path: &Path) -> PathBuf {
    path.with_extension("sig")
}

/// The sign bits of int8 numbers, eight a byte, lowest bit first.
fn sign_bits(q: &[i8]) -> Vec<u8> {
    q.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (j, &x)| if x > 0 { b | (1 << j) } else { b })
        })
        .collect()
}

impl Signs {
    /// The signs of a store of `rows` rows, mapped, if the file is there, of these dims, and
    /// covers every row (else the search scans the rows themselves).
    fn open(path: &Path, dims: usize, rows: usize) -> Result<Option<OwnedBytes>> {
        if !dims.is_multiple_of(64) || rows == 0 {
            return Ok(None);
        }
        let bytes = map(path)?;
        let ok = bytes.len() >= SIG_HEADER
            && &bytes[..8] == SIG_MAGIC
            && u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize == dims
            && (bytes.len() - SIG_HEADER) / (dims / 8) >= rows;
        Ok(ok.then_some(bytes))
    }

    /// Adds the signs of `new_rows` (store rows, as appended) to the signs of the
    /// `rows_before` rows stored before them; rebuilds the file from the store at `store`
    /// when it does not hold exactly those. Called with the store file locked.
    fn append(store: &Path, dims: usize, rows_before: usize, new_rows: &[u8]) -> Result<()> {
        if !dims.is_multiple_of(64) {
            return Ok(());
        }
        let path = &sig_path(store);
        let io = |e: std::io::Error| Error::io(path.display(), &e);
        let width = dims / 8;
        let row_len = 12 + dims;
        let signs_of = |rows: &[u8]| -> Vec<u8> {
            let mut out = Vec::with_capacity(rows.len() / row_len * width);
            for row in rows.chunks_exact(row_len) {
                let q: Vec<i8> = row[12..].iter().map(|&b| b as i8).collect();
                out.extend(sign_bits(&q));
            }
            out
        };
        let len = std::fs::metadata(path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        let header_ok = len >= SIG_HEADER && {
            let mut h = [0u8; SIG_HEADER];
            std::fs::File::open(path)
                .and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut h, 0))
                .is_ok()
                && &h[..8] == SIG_MAGIC
                && u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize == dims
        };
        if header_ok && len == SIG_HEADER + rows_before * width {
            let mut f = OpenOptions::new().append(true).open(path).map_err(io)?;
            return f.write_all(&signs_of(new_rows)).map_err(io);
        }
        // Rebuild: every row of the store, as it now is on disk.
        let rows = std::fs::read(store).map_err(|e| Error::io(store.display(), &e))?;
        let mut body = Vec::with_capacity(SIG_HEADER);
        body.extend_from_slice(SIG_MAGIC);
        body.extend_from_slice(&(dims as u32).to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        let stored = rows.get(HEADER..).unwrap_or_default();
        body.extend(signs_of(&stored[..stored.len() / row_len * row_len]));
        crate::files::write_atomic(path, &body)
    }
}

/// The file at `path` mapped read-only (empty when it does not exist). The mapping is
/// tantivy's (the crate keeps `unsafe` out of cairn); rows are only ever appended to the
/// file, so the mapped prefix stays valid while it is read.
fn map(path: &Path) -> Result<OwnedBytes> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(OwnedBytes::empty());
    };
    if !path.exists() {
        return Ok(OwnedBytes::empty());
    }
    let io = |e: &dyn std::fmt::Display| {
        Error::new(crate::error::Kind::Io, format!("{}: {e}", path.display()))
    };
    let directory = MmapDirectory::open(dir).map_err(|e| io(&e))?;
    let slice = directory.open_read(Path::new(name)).map_err(|e| io(&e))?;
    slice.read_bytes().map_err(|e| io(&e))
}

/// Whether `path` names the file `file` is open on.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The integer dot product of an int8 query and a stored row of int8 held as bytes. Reading
/// each byte `as i8` keeps this safe and copy-free; the loop shape is `embed::dot_i8`'s, which
/// the compiler vectorizes.
fn dot_row(q: &[i8], row: &[u8]) -> i32 {
    // Numbers are quantized to -127..=127, so two products summed in i16 cannot overflow
    // (2 × 127² < 2¹⁵; wrapping ops keep a damaged file from panicking); 32 such lanes are
    // widened once per 64 numbers. This shape vectorizes to pmullw/paddw on plain x86-64
    // (measured: 100,000 rows of 256 in about 4.3 ms against 5.5 ms for i32 lanes).
    const STEP: usize = 64;
    let (qc, rc) = (q.chunks_exact(STEP), row.chunks_exact(STEP));
    let tail: i32 = qc
        .remainder()
        .iter()
        .zip(rc.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y as i8))
        .sum();
    let mut total = 0i32;
    for (x, y) in qc.zip(rc) {
        let mut lanes = [0i16; STEP / 2];
        for i in 0..STEP / 2 {
            let a = i16::from(x[i]).wrapping_mul(i16::from(y[i] as i8));
            let b = i16::from(x[STEP / 2 + i]).wrapping_mul(i16::from(y[STEP / 2 + i] as i8));
            lanes[i] = a.wrapping_add(b);
        }
        total += lanes.iter().map(|&v| i32::from(v)).sum::<i32>();
    }
    total + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn append_search_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "test:model/1");
        assert!(path.ends_with("test_model_1.bin"));
        let mut store = Store::open(&path, 4).unwrap();
        assert!(store.is_empty());
        let a = unit(&[1.0, 0.0, 0.0, 0.0]);
        let b = unit(&[0.9, 0.1, 0.0, 0.0]);
        let c = unit(&[0.0, 0.0, 1.0, 0.0]);
        store.append(&[(1, a.clone()), (2, b), (3, c)]).unwrap();
        store.append(&[(1, a.clone())]).unwrap();
        let found = store.search(&a, 2);
        assert_eq!(
            found.iter().map(|f| f.0).collect::<Vec<_>>(),
            [1, 2],
            "a hash stored twice is found once"
        );
        assert!((found[0].1 - 1.0).abs() < 0.02);
        let reopened = Store::open(&path, 4).unwrap();
        assert_eq!(reopened.len(), 4);
        assert_eq!(reopened.hashes().len(), 3);
        // Other dims: the file is not this store's, so it starts over.
        assert!(Store::open(&path, 8).unwrap().is_empty());
    }

    #[test]
    fn a_torn_row_is_ignored_and_cut_on_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.bin");
        let mut store = Store::open(&path, 4).unwrap();
        store.append(&[(7, unit(&[1.0, 1.0, 0.0, 0.0]))]).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[1, 2, 3]);
        std::fs::write(&path, &bytes).unwrap();
        let mut store = Store::open(&path, 4).unwrap();
        assert_eq!(store.len(), 1);
        store.append(&[(8, unit(&[0.0, 1.0, 0.0, 0.0]))]).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            HEADER + 2 * 16
        );
    }

    #[test]
    fn dot_row_matches_dot_i8() {
        let q: Vec<i8> = (0..256).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let r: Vec<i8> = (0..256).map(|i| ((i * 91) % 251 - 125) as i8).collect();
        assert!(q.iter().chain(&r).all(|&x| x > -128), "the quantized range");
        let bytes: Vec<u8> = r.iter().map(|&x| x as u8).collect();
        assert_eq!(dot_row(&q, &bytes), dot_i8(&q, &r));
    }

    /// Deterministic pseudo-random unit vectors of 256 dims.
    fn random_units(n: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..256)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                    })
                    .collect();
                unit(&v)
            })
            .collect()
    }

    #[test]
    fn the_sign_prefilter_finds_what_the_full_scan_finds() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "m");
        let vs = random_units(3000, 7);
        let items: Vec<(u64, Vec<f32>)> = vs
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v.clone()))
            .collect();
        let mut store = Store::open(&path, 256).unwrap();
        store.append(&items[..2000]).unwrap();
        store.append(&items[2000..]).unwrap();
        let store = Store::open(&path, 256).unwrap();
        let signs = store
            .signs
            .as_ref()
            .expect("the signs file covers every row");
        for probe in [5usize, 1999, 2500] {
            let (q, q_scale) = quantize(&vs[probe]);
            let fast = store.search_by_signs(signs, &q, q_scale, 10);
            assert_eq!(
                fast[0].0, probe as u64,
                "a stored vector is its own nearest"
            );
            let exact = store.search(&vs[probe], 10);
            let same = fast
                .iter()
                .filter(|f| exact.iter().any(|e| e.0 == f.0))
                .count();
            assert!(same >= 9, "{same} of 10 shared with the full scan");
        }
        // The candidates are read from the file the store mapped: a store rewritten under its
        // name meanwhile (forget removes rows) does not mix its rows into this one's.
        let before = store.search_by_signs(signs, &quantize(&vs[2500]).0, 1.0, 5);
        let gone: HashSet<u64> = (0..2600).collect();
        remove_rows(dir.path(), &gone).unwrap();
        let after = store.search_by_signs(signs, &quantize(&vs[2500]).0, 1.0, 5);
        assert_eq!(after, before);
        assert_eq!(after[0].0, 2500);
        assert_eq!(Store::open(&path, 256).unwrap().len(), 400);
    }

    #[test]
    fn the_asymmetric_tables_sum_the_query_over_a_row_s_positive_dims() {
        let (q, _) = quantize(&random_units(1, 99)[0]);
        let tables = asymmetric_tables(&q);
        for v in random_units(20, 7) {
            let (row, _) = quantize(&v);
            let bits = sign_bits(&row);
            let looked_up: i32 = bits
                .iter()
                .zip(&tables)
                .map(|(&b, t)| t[usize::from(b)])
                .sum();
            let direct: i32 = q
                .iter()
                .zip(&row)
                .filter(|(_, r)| **r > 0)
                .map(|(x, _)| i32::from(*x))
                .sum();
            assert_eq!(looked_up, direct);
            // And it orders rows as the dot product with the signs does.
            let signed: i32 = q
                .iter()
                .zip(&row)
                .map(|(x, r)| {
                    if *r > 0 {
                        i32::from(*x)
                    } else {
                        -i32::from(*x)
                    }
                })
                .sum();
            assert_eq!(
                signed,
                2 * looked_up - q.iter().map(|x| i32::from(*x)).sum::<i32>()
            );
        }
    }

    #[test]
    fn the_popcnt_scan_counts_what_a_bytewise_count_does() {
        let mut x = 7u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        // 32 bytes a row is the built-in model's (unrolled); the others take the plain loop.
        for width in [8usize, 16, 32] {
            let bits: Vec<u8> = (0..1000 * width).map(|_| (next() >> 40) as u8).collect();
            let q: Vec<u64> = (0..width / 8).map(|_| next()).collect();
            let mut got = Vec::new();
            let mut got_histogram = vec![0usize; width * 8 + 1];
            distances(&bits, width, &q, &mut got, &mut got_histogram);
            let q_bytes: Vec<u8> = q.iter().flat_map(|w| w.to_le_bytes()).collect();
            let want: Vec<u16> = bits
                .chunks_exact(width)
                .map(|row| {
                    row.iter()
                        .zip(&q_bytes)
                        .map(|(a, b)| (a ^ b).count_ones() as u16)
                        .sum()
                })
                .collect();
            let mut want_histogram = vec![0usize; width * 8 + 1];
            for d in &want {
                want_histogram[usize::from(*d)] += 1;
            }
            assert_eq!(got, want, "width {width}");
            assert_eq!(got_histogram, want_histogram, "width {width}");
        }
    }

    #[test]
    fn a_missing_or_stale_signs_file_is_rebuilt_on_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "m");
        let vs = random_units(50, 3);
        let items: Vec<(u64, Vec<f32>)> = vs
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v.clone()))
            .collect();
        Store::open(&path, 256)
            .unwrap()
            .append(&items[..40])
            .unwrap();
        std::fs::remove_file(sig_path(&path)).unwrap();
        assert!(
            Store::open(&path, 256).unwrap().signs.is_none(),
            "without it, searches scan the rows"
        );
        Store::appender(&path, 256).append(&items[40..]).unwrap();
        let store = Store::open(&path, 256).unwrap();
        let signs = store.signs.as_ref().expect("rebuilt");
        assert_eq!(signs.len(), SIG_HEADER + 50 * 32);
        let q: Vec<i8> = quantize(&vs[45]).0;
        assert_eq!(
            &signs.as_slice()[SIG_HEADER + 45 * 32..SIG_HEADER + 46 * 32],
            sign_bits(&q).as_slice()
        );
    }

    /// How many of the exact nearest rows the sign prefilter keeps, for candidate counts:
    /// `CAIRN_STORE=path/to/store.bin cargo test --release --lib prefilter_recall -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn prefilter_recall() {
        let Ok(path) = std::env::var("CAIRN_STORE") else {
            return;
        };
        let path = std::path::PathBuf::from(path);
        let store = Store::open(&path, dims_of(&path).unwrap()).unwrap();
        let signs = store.signs.clone().unwrap();
        let model = crate::embed::Builtin::shared();
        let queries = [
            "redis timeout",
            "postgres migration",
            "nfs mount root",
            "caddy certificate",
            "deploy rollback",
            "backup retention",
            "grafana alert",
            "flaky test",
            "disk full",
            "release plan",
            "what did we decide about the cache",
            "why does the build fail on arm",
            "kubernetes pod restarts",
            "memory leak in the worker",
            "rotate the api keys",
            "the ci pipeline is slow",
        ];
        for k in [20usize, 40, 80] {
            for want in [160usize, 256, 320, 512, 640, 1024, 1280, 2560] {
                let mut kept = 0;
                let mut total = 0;
                for text in queries {
                    let v = crate::embed::Embedder::embed(model, &[text]).pop().unwrap();
                    let (q, scale) = quantize(&v);
                    let mut exact: Vec<(f32, u64)> = store
                        .rows()
                        .map(|r| {
                            let s = f32::from_le_bytes(r[8..12].try_into().unwrap());
                            (
                                dot_row(&q, &r[12..]) as f32 * scale * s,
                                u64::from_le_bytes(r[..8].try_into().unwrap()),
                            )
                        })
                        .collect();
                    exact.sort_by(|a, b| b.0.total_cmp(&a.0));
                    let want_set: HashSet<u64> = exact.iter().take(k).map(|x| x.1).collect();
                    let got = store.search_by_signs_with(&signs, &q, scale, k, want);
                    kept += got.iter().filter(|(h, _)| want_set.contains(h)).count();
                    total += want_set.len();
                }
                let recall = kept as f64 / total as f64;
                println!("k {k} candidates {want}: recall {recall:.3}");
                if k == 20 && want == candidates_for(40) {
                    // What a recall's vector list reads (the best 20 of a search for 40, ADR
                    // 65) keeps most of the exact nearest rows.
                    assert!(recall >= 0.9, "k {k}: {recall:.3}");
                }
            }
        }
    }
}
