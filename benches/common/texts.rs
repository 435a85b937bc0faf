//! Real-looking texts for the benchmarks that write observations: the sentences (6 to 40
//! words) of the ADRs and session transcripts in `tests/fixtures`, and a deterministic
//! pseudo-random sequence to pick and mix them.

use std::path::Path;

/// The observation categories of the taxonomy, as stored (`category`).
pub const CATEGORIES: &[&str] = &[
    "preferences",
    "rules-conventions",
    "system-architecture",
    "operations",
    "memory-system",
    "projects",
    "people-relationships",
];

/// A deterministic pseudo-random sequence (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Real sentences of the fixtures, sorted and deduplicated.
pub fn sentences() -> Vec<String> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = std::collections::BTreeSet::new();
    let mut add = |text: &str| {
        for piece in text.split(['\n']) {
            for s in piece.split_inclusive(['.', '!', '?']) {
                let s = s.trim().trim_matches(|c| "-*# ".contains(c)).trim();
                let words = s.split_whitespace().count();
                if (6..=40).contains(&words) && !s.starts_with(['{', '[', '<', '|', '`']) {
                    out.insert(s.to_string());
                }
            }
        }
    };
    let mut stack = vec![base.join("adr"), base.join("sessions")];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in read.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            if p.extension().is_some_and(|e| e == "md") {
                add(&text);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                for line in text.lines() {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                        strings(&v, &mut add);
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

fn strings(v: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match v {
        serde_json::Value::String(s) if s.contains(' ') => f(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, f)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}
