//! The token-to-id hash table of a WordPiece vocabulary (one token per line, line `i` is id
//! `i`), as plain data: built here once at compile time for the built-in model (`build.rs`
//! includes this file and writes the tables the binary embeds), and at run time for any other
//! vocabulary and by the tests that check the two agree. It uses nothing outside `core` and
//! `std`, so that the build script can compile it alone.

/// The table: open addressing over token hashes; a `##` token is keyed by what follows the
/// `##`, so a continuation lookup needs no copy.
pub struct Tables {
    /// Byte offset of each token's line in the text, then one past the end of the last line's
    /// newline: token `i` is `text[starts[i]..starts[i + 1] - 1]`.
    pub starts: Vec<u32>,
    /// Token id + 1 per slot, 0 for empty. u16 keeps the table in 128 KiB (the ids fit: a
    /// test checks), and its length is a power of two at least twice the token count, so
    /// probes are short.
    pub slots: Vec<u16>,
    /// log2 of `slots.len()`.
    pub bits: u32,
    /// The longest token, in bytes.
    pub max_len: usize,
}

/// `##` begins a token that continues a word.
pub const CONTINUATION: &str = "##";

/// One pass over `text`, eight bytes at a time where it can: find the end of the line, hash
/// the token (most fit one word) and insert its id.
pub fn build(text: &str) -> Tables {
    let bytes = text.as_bytes();
    let count = bytes.iter().filter(|&&b| b == b'\n').count()
        + usize::from(!bytes.is_empty() && !text.ends_with('\n'));
    assert!(count < usize::from(u16::MAX), "token ids fit the u16 slots");
    let bits = (count * 2).next_power_of_two().max(2).trailing_zeros();
    let mut t = Tables {
        starts: Vec::with_capacity(count + 1),
        slots: vec![0; 1 << bits],
        bits,
        max_len: 0,
    };
    let mut at = 0;
    for id in 1..=count {
        let len = line_len(bytes, at);
        t.starts.push(offset(at));
        t.max_len = t.max_len.max(len);
        let continuation = len > CONTINUATION.len() && bytes[at..].starts_with(b"##");
        let key_at = if continuation {
            at + CONTINUATION.len()
        } else {
            at
        };
        let key_len = at + len - key_at;
        let hash = if (1..=8).contains(&key_len) && key_at + 8 <= bytes.len() {
            // The bytes after the key (its newline, the next line) are masked off.
            hash_word(u64::from(continuation), key_len, word_at(bytes, key_at))
        } else {
            hash(u64::from(continuation), &bytes[key_at..key_at + key_len])
        };
        let mut slot = slot_of_hash(bits, hash);
        while t.slots[slot] != 0 {
            // vocab.txt has no repeated line (a test checks), so this is a collision.
            slot = (slot + 1) & (t.slots.len() - 1);
        }
        t.slots[slot] = id as u16;
        at += len + 1;
    }
    // `at` is now one past the last newline, real or (no final newline) imagined.
    t.starts.push(offset(at));
    t
}

/// The slot a hash starts probing at, in a table of `1 << bits` slots.
pub fn slot_of_hash(bits: u32, hash: u64) -> usize {
    // The top bits of a multiplicative hash are the well-mixed ones.
    (hash >> (64 - bits)) as usize
}

fn offset(at: usize) -> u32 {
    u32::try_from(at).expect("the vocabulary is smaller than 4 GiB")
}

const K: u64 = 0x517c_c1b7_2722_0a95;

fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(K)
}

/// A multiply-rotate hash eight bytes at a time (rustc's Fx hash, on words), the last word
/// padded with zeros.
pub fn hash(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = mix(seed, bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        h = mix(
            h,
            u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes")),
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = mix(
            h,
            rest.iter()
                .rev()
                .fold(0, |word, &b| word << 8 | u64::from(b)),
        );
    }
    h
}

/// `hash(seed, key)` for a key of 1 to 8 bytes, given a word that starts with it.
fn hash_word(seed: u64, len: usize, word: u64) -> u64 {
    let mask = u64::MAX >> (8 * (8 - len));
    mix(mix(seed, len as u64), word & mask)
}

fn word_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// The length of the line at `at`, without its newline.
fn line_len(bytes: &[u8], at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The first zero byte of `word ^ "\n\n…"`: exact for the lowest one, which is all we use.
    let newline = |word: u64| {
        let x = word ^ (ONES * u64::from(b'\n'));
        (x.wrapping_sub(ONES) & !x & (ONES << 7)).trailing_zeros() as usize / 8
    };
    let mut len = 0;
    while at + len + 8 <= bytes.len() {
        let n = newline(word_at(bytes, at + len));
        if n < 8 {
            return len + n;
        }
        len += 8;
    }
    len + bytes[at + len..]
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len() - at - len)
}

/// The tables as Rust source: statics the binary embeds, so that a process pays nothing to
/// build them.
pub fn to_rust(t: &Tables) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "pub const BITS: u32 = {};", t.bits);
    let _ = writeln!(out, "pub const MAX_LEN: usize = {};", t.max_len);
    let _ = write!(out, "pub static STARTS: [u32; {}] = [", t.starts.len());
    for s in &t.starts {
        let _ = write!(out, "{s},");
    }
    out.push_str("];\n");
    let _ = write!(out, "pub static SLOTS: [u16; {}] = [", t.slots.len());
    for s in &t.slots {
        let _ = write!(out, "{s},");
    }
    out.push_str("];\n");
    out
}
