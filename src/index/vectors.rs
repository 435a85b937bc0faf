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

use crate::embed::quantize;
#[cfg(test)]
use crate::embed::dot_i8;
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

impl Vectorizer for crate::embed::Builtin {
    fn model_id(&self) -> String {
        crate::embed::Embedder::model_id(self).to_string()
    }

    fn documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(crate::embed::Embedder::embed(self, texts))
    }

    fn query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(crate::embed::Embedder::embed(self, &[text]).pop().unwrap_or_default())
    }
}

/// The vectorizer `[embed]` names.
pub fn for_config(embed: &crate::config::Embed) -> Result<Box<dyn Vectorizer>> {
    match embed.provider.trim() {
        "" | "builtin" => Ok(Box::new(crate::embed::Builtin::load())),
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
        let out = self.0.embed(texts, crate::provider::InputType::Document).map_err(provider_err)?;
        Ok(out.vectors.into_iter().map(unit).collect())
    }

    fn query(&self, text: &str) -> Result<Vec<f32>> {
        let out = self.0.embed(&[text], crate::provider::InputType::Query).map_err(provider_err)?;
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
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
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

/// A model's vectors: the file mapped into memory (read-only, through tantivy's mmap
/// directory, so that a search costs no copy of the file), or the rows appended since.
pub struct Store {
    path: PathBuf,
    dims: usize,
    /// The whole rows of the file, header included (empty when there is none).
    bytes: OwnedBytes,
    /// Opened to append only: `bytes` was not read and is not kept.
    append_only: bool,
}

impl Store {
    /// Opens (or starts) the store at `path` for vectors of `dims`. A file of other dims, or
    /// not a store, is replaced: it is derived.
    pub fn open(path: &Path, dims: usize) -> Result<Store> {
        let bytes = map(path)?;
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
        Ok(Store { path: path.to_path_buf(), dims, bytes, append_only: false })
    }

    /// Opens the store to append without reading it: a few new rows must not cost a read of a
    /// million old ones.
    pub fn appender(path: &Path, dims: usize) -> Store {
        Store { path: path.to_path_buf(), dims, bytes: OwnedBytes::empty(), append_only: true }
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
        self.bytes.get(HEADER..).unwrap_or_default().chunks_exact(self.row_len())
    }

    /// Every hash stored.
    pub fn hashes(&self) -> HashSet<u64> {
        self.rows().map(|r| u64::from_le_bytes(r[..8].try_into().expect("8 bytes"))).collect()
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
        let mut file = OpenOptions::new().create(true).read(true).append(true).open(&self.path).map_err(io)?;
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
        header.extend_from_slice(&out);
        file.write_all(&header).map_err(io)?;
        file.unlock().map_err(io)?;
        if self.append_only {
            return Ok(());
        }
        let mut all = if self.bytes.len() < HEADER { Vec::new() } else { self.bytes.as_slice().to_vec() };
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
    let io = |e: &dyn std::fmt::Display| Error::new(crate::error::Kind::Io, format!("{}: {e}", path.display()));
    let directory = MmapDirectory::open(dir).map_err(|e| io(&e))?;
    let slice = directory.open_read(Path::new(name)).map_err(|e| io(&e))?;
    slice.read_bytes().map_err(|e| io(&e))
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
    let tail: i32 = qc.remainder().iter().zip(rc.remainder()).map(|(&x, &y)| i32::from(x) * i32::from(y as i8)).sum();
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
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 2], "a hash stored twice is found once");
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
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, HEADER + 2 * 16);
    }

    #[test]
    fn dot_row_matches_dot_i8() {
        let q: Vec<i8> = (0..256).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let r: Vec<i8> = (0..256).map(|i| ((i * 91) % 251 - 125) as i8).collect();
        assert!(q.iter().chain(&r).all(|&x| x > -128), "the quantized range");
        let bytes: Vec<u8> = r.iter().map(|&x| x as u8).collect();
        assert_eq!(dot_row(&q, &bytes), dot_i8(&q, &r));
    }
}
