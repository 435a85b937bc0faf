//! The mutator: AFL's havoc stage in small, for text formats. An input is a seed with 1 to 16
//! stacked mutations: bit flips, bytes set to random or interesting values (quotes,
//! brackets, newlines, the lead bytes of multi-byte UTF-8), the target's dictionary words
//! inserted or written over, ranges deleted or duplicated, ranges spliced from another seed,
//! whole lines deleted, duplicated or swapped (JSON Lines, Markdown, TOML are line-shaped),
//! a range repeated many times (deep nesting, long runs), numbers replaced by edge values,
//! and cuts at random points (torn writes). `fastrand` is the random source.

pub struct Mutator {
    rng: fastrand::Rng,
    dict: &'static [&'static str],
    max_len: usize,
}

/// Bytes that change how a text parser reads what follows.
const INTERESTING: &[u8] = b"\0\n\r\t \"'\\{}[]<>:,-#=/&;`*!?\x7f\xc3\xe2\xf0\xff\x80\xbf";

/// Words every target gets: JSON, XML and Markdown structure, edge numbers, odd Unicode.
const COMMON: &[&str] = &[
    "{}",
    "[]",
    "null",
    "true",
    "\"\"",
    "\\u0000",
    "\\ud800",
    "\\\"",
    "1e999",
    "-1",
    "-0",
    "0.0",
    "18446744073709551616",
    "4294967296",
    "2147483648",
    "9223372036854775807",
    "NaN",
    "\n",
    "\r\n",
    "\u{feff}",
    "\u{200b}",
    "e\u{301}",
    "日本語",
    "🦀",
    "\u{202e}",
    "\x1b[31m",
    "---\n",
    "```",
    "# ",
    "## ",
    "- ",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&#x0;",
    "&#1114112;",
    "&bogus;",
    "<?xml version=\"1.0\"?>",
    "</",
    "/>",
    "=\"",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2026-02-30",
    "+275760-09-13T00:00:00Z",
];

/// Edge values for a number found in the input.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "1e-400",
    "-9223372036854775809",
    "18446744073709551616",
    "4294967295",
    "65536",
    "0.5",
    "99999999999999999999999999",
];

impl Mutator {
    pub fn new(seed: u64, dict: &'static [&'static str], max_len: usize) -> Mutator {
        Mutator {
            rng: fastrand::Rng::with_seed(seed),
            dict,
            max_len,
        }
    }

    /// Writes into `out` a seed from `pool` with 1 to 16 stacked mutations.
    pub fn next(&mut self, pool: &[Vec<u8>], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&pool[self.rng.usize(..pool.len())]);
        let n = 1 << self.rng.u32(0..5);
        for _ in 0..n {
            self.one(pool, out);
            if out.len() > self.max_len {
                out.truncate(self.max_len);
            }
        }
    }

    fn word(&mut self) -> &'static [u8] {
        let dict = self.dict;
        if !dict.is_empty() && self.rng.bool() {
            dict[self.rng.usize(..dict.len())].as_bytes()
        } else {
            COMMON[self.rng.usize(..COMMON.len())].as_bytes()
        }
    }

    /// A range of `len` bytes: start and end.
    fn range(&mut self, len: usize, max: usize) -> (usize, usize) {
        if len == 0 {
            return (0, 0);
        }
        let start = self.rng.usize(..len);
        let end = (start + 1 + self.rng.usize(..max.max(1))).min(len);
        (start, end)
    }

    fn one(&mut self, pool: &[Vec<u8>], b: &mut Vec<u8>) {
        let len = b.len();
        match self.rng.u8(0..14) {
            0 if len > 0 => {
                let i = self.rng.usize(..len);
                b[i] ^= 1 << self.rng.u8(0..8);
            }
            1 if len > 0 => {
                let i = self.rng.usize(..len);
                b[i] = self.rng.u8(..);
            }
            2 if len > 0 => {
                let i = self.rng.usize(..len);
                b[i] = INTERESTING[self.rng.usize(..INTERESTING.len())];
            }
            3 => {
                let w = self.word();
                let at = self.rng.usize(..=len);
                b.splice(at..at, w.iter().copied());
            }
            4 if len > 0 => {
                let w = self.word();
                let at = self.rng.usize(..len);
                let end = (at + w.len()).min(len);
                b.splice(at..end, w.iter().copied());
            }
            5 if len > 0 => {
                let (s, e) = self.range(len, 64);
                b.drain(s..e);
            }
            6 if len > 0 => {
                let (s, e) = self.range(len, 256);
                let chunk = b[s..e].to_vec();
                let at = self.rng.usize(..=len);
                b.splice(at..at, chunk);
            }
            7 => {
                let other = &pool[self.rng.usize(..pool.len())];
                let (s, e) = self.range(other.len(), 512);
                let at = self.rng.usize(..=len);
                b.splice(at..at, other[s..e].iter().copied());
            }
            8 if len > 0 => {
                let other = &pool[self.rng.usize(..pool.len())];
                let (s, e) = self.range(other.len(), 512);
                let (at, end) = self.range(len, 512);
                b.splice(at..end, other[s..e].iter().copied());
            }
            9 => self.lines(b),
            10 if len > 0 => {
                // A short range repeated: deep nesting, long runs, many keys.
                let (s, e) = self.range(len, 8);
                let chunk = b[s..e].to_vec();
                let most = [16, 256, 4096][self.rng.usize(..3)];
                let times = 1 + self.rng.usize(..most);
                let mut run = Vec::with_capacity(chunk.len() * times);
                for _ in 0..times {
                    run.extend_from_slice(&chunk);
                    if run.len() > self.max_len {
                        break;
                    }
                }
                b.splice(s..s, run);
            }
            11 => {
                let digits: Vec<usize> = (0..len).filter(|&i| b[i].is_ascii_digit()).collect();
                if let Some(&i) = digits.get(self.rng.usize(..digits.len().max(1))) {
                    let end = (i..len).find(|&j| !b[j].is_ascii_digit()).unwrap_or(len);
                    let n = NUMBERS[self.rng.usize(..NUMBERS.len())].as_bytes();
                    b.splice(i..end, n.iter().copied());
                }
            }
            12 if len > 0 => b.truncate(self.rng.usize(..len)),
            13 if len > 1 => {
                let (s, e) = self.range(len, 32);
                b[s..e].reverse();
            }
            _ => {
                let w = self.word();
                b.extend_from_slice(w);
            }
        }
    }

    /// Whole-line mutations: delete, duplicate or swap lines.
    fn lines(&mut self, b: &mut Vec<u8>) {
        let mut starts = vec![0];
        starts.extend(
            b.iter()
                .enumerate()
                .filter(|(_, c)| **c == b'\n')
                .map(|(i, _)| i + 1),
        );
        starts.push(b.len());
        starts.dedup();
        let n = starts.len() - 1;
        if n == 0 {
            return;
        }
        let i = self.rng.usize(..n);
        let line = starts[i]..starts[i + 1];
        match self.rng.u8(0..3) {
            0 => {
                b.drain(line);
            }
            1 => {
                let copy = b[line.clone()].to_vec();
                let at = starts[self.rng.usize(..=n)];
                b.splice(at..at, copy);
            }
            _ => {
                let j = self.rng.usize(..n);
                let other = starts[j]..starts[j + 1];
                let (first, second) = if line.start <= other.start {
                    (line, other)
                } else {
                    (other, line)
                };
                if first.end <= second.start {
                    let a = b[first.clone()].to_vec();
                    let c = b[second.clone()].to_vec();
                    b.splice(second, a);
                    b.splice(first, c);
                }
            }
        }
    }
}
