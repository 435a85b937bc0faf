//! The uncased BERT tokenizer of potion-base-8M, as HuggingFace `tokenizers` runs it.
//!
//! `tokenizer.json` of the model names four steps, reproduced here in the same order:
//!
//! 1. added tokens: `[PAD]` `[UNK]` `[CLS]` `[SEP]` `[MASK]` typed literally in the raw text
//!    are matched before normalization (they are `normalized: false`) and become their ids;
//! 2. `BertNormalizer` (clean_text, handle_chinese_chars, strip_accents following
//!    lowercase=true, lowercase): control characters, U+0000 and U+FFFD are dropped, whitespace
//!    becomes a space, CJK ideographs get a space on each side, the text is NFD-decomposed and
//!    its non-spacing marks (Mn) dropped, then each char is lowercased (no final-sigma rule);
//! 3. `BertPreTokenizer`: split on whitespace, and each punctuation char (Unicode P* or any
//!    ASCII symbol) is a word of its own;
//! 4. `WordPiece`: greedy longest-match-first with `##` on the pieces after the first; a word
//!    longer than 100 chars, or one that cannot be split, is one `[UNK]`.
//!
//! The general categories come from `unicode_categories` 0.1, the crate `tokenizers` uses, on
//! purpose: its tables are old (Unicode 9) and a newer table (`finl_unicode`, Unicode 18) makes
//! 693 chars tokenize differently, all of them assigned since as marks, format chars or
//! punctuation. With it, every one of the 1,112,064 Unicode scalar values gives the same ids as
//! `tokenizers` (the ignored test `every_char_like_hf_tokenizers`).

use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

/// The built-in model's vocabulary (`vocab.txt`), one token per line.
pub(crate) const VOCAB: &str = include_str!("../../model/potion-base-8M/vocab.txt");

/// A word longer than this many chars is `[UNK]` without trying to split it.
const MAX_INPUT_CHARS_PER_WORD: usize = 100;
use super::vocab_table::{self, CONTINUATION};
use std::borrow::Cow;
/// Added tokens of `tokenizer.json`, matched in the raw text.
const SPECIAL_TOKENS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const UNK: &str = "[UNK]";

/// The vocabulary, one token per line of `vocab.txt` (line `i` is id `i`), and the
/// tokenizer over it.
pub(crate) struct WordPiece {
    vocab: Vocab,
    unk: u32,
    /// Ids of [`SPECIAL_TOKENS`], in that order.
    specials: [u32; SPECIAL_TOKENS.len()],
}

impl WordPiece {
    /// Builds the lookup table of `vocab` (one token per line).
    ///
    /// Panics if a special token is missing: the vocabulary is compiled in, so a test catches it.
    #[cfg(test)]
    pub(crate) fn new(vocab: &'static str) -> WordPiece {
        WordPiece::over(Vocab::new(vocab))
    }

    /// The built-in model's tokenizer, its table compiled in.
    pub(crate) fn builtin() -> WordPiece {
        WordPiece::over(Vocab::builtin())
    }

    fn over(vocab: Vocab) -> WordPiece {
        let id = |t: &str| {
            vocab
                .get(t, false)
                .expect("special tokens are in the vocabulary")
        };
        let specials = SPECIAL_TOKENS.map(id);
        WordPiece {
            unk: id(UNK),
            specials,
            vocab,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.vocab.len()
    }

    pub(crate) fn unk(&self) -> u32 {
        self.unk
    }

    /// Token `id`'s text.
    #[cfg(test)]
    pub(crate) fn token(&self, id: u32) -> &'static str {
        self.vocab.token(id as usize)
    }

    /// Appends the token ids of `text` to `ids`, `[UNK]` included, and stops once `ids` holds
    /// `limit` ids or more (the caller truncates to exactly `limit`).
    pub(crate) fn tokenize(&self, text: &str, limit: usize, ids: &mut Vec<u32>) {
        let mut state = State {
            word: String::new(),
            ids,
            limit,
            on_word: None,
            words: 0,
        };
        let mut rest = text;
        while let Some((before, special, after)) = self.split_special(rest) {
            self.tokenize_plain(before, &mut state);
            if state.full() {
                return;
            }
            state.ids.push(special);
            rest = after;
        }
        self.tokenize_plain(rest, &mut state);
    }

    /// Calls `f` with each word of `text`, normalized and pre-tokenized as [`Self::tokenize`]
    /// does (lower-cased, accents stripped, punctuation a word of its own), until `limit` words
    /// have been seen. Added tokens are read as text. [`Self::word_ids`] gives a word's ids.
    pub(crate) fn for_each_word(&self, text: &str, limit: usize, f: &mut dyn FnMut(&str)) {
        let mut ids = Vec::new();
        let mut state = State {
            word: String::new(),
            ids: &mut ids,
            limit,
            on_word: Some(f),
            words: 0,
        };
        self.tokenize_plain(text, &mut state);
    }

    /// Appends the ids of one word as [`Self::for_each_word`] gives it.
    pub(crate) fn word_ids(&self, word: &str, ids: &mut Vec<u32>) {
        self.word_piece(word, ids);
    }

    /// The first added token in `text`: the text before it, its id, the text after it.
    fn split_special<'t>(&self, text: &'t str) -> Option<(&'t str, u32, &'t str)> {
        let mut from = 0;
        while let Some(at) = text[from..].find('[') {
            let at = from + at;
            for (token, &id) in SPECIAL_TOKENS.iter().zip(&self.specials) {
                if text[at..].starts_with(token) {
                    return Some((&text[..at], id, &text[at + token.len()..]));
                }
            }
            from = at + 1;
        }
        None
    }

    /// Normalizes and pre-tokenizes `text` (no added tokens in it) and WordPieces each word.
    ///
    /// Runs of ASCII take a fast path: NFD, accent stripping and the Unicode tables are the
    /// identity on them. Cutting the text there does not change the NFD of the rest, because
    /// an ASCII char is a starter that decomposes to itself: canonical reordering never moves
    /// a mark across it.
    fn tokenize_plain(&self, text: &str, state: &mut State<'_>) {
        let mut rest = text;
        while !rest.is_empty() {
            let ascii = rest
                .bytes()
                .position(|b| !b.is_ascii())
                .unwrap_or(rest.len());
            for b in rest[..ascii].bytes() {
                let c = match b {
                    // Cc, vertical tab and form feed included: clean_text drops control chars
                    // before it turns whitespace into spaces.
                    0x00..=0x08 | 0x0b | 0x0c | 0x0e..=0x1f | 0x7f => continue,
                    b'\t' | b'\n' | b'\r' | b' ' => ' ',
                    _ => char::from(b.to_ascii_lowercase()),
                };
                self.push_char(c, state);
            }
            rest = &rest[ascii..];
            let other = rest
                .bytes()
                .position(|b| b.is_ascii())
                .unwrap_or(rest.len());
            let cleaned = rest[..other]
                .chars()
                .filter_map(clean_char)
                .flat_map(space_chinese);
            let stripped = cleaned.nfd().filter(|&c| !c.is_mark_nonspacing());
            for c in stripped.flat_map(char::to_lowercase) {
                self.push_char(c, state);
            }
            rest = &rest[other..];
        }
        self.flush_word(state);
    }

    /// The pre-tokenizer, one normalized char at a time.
    fn push_char(&self, c: char, state: &mut State<'_>) {
        if state.full() {
            return;
        }
        if c.is_whitespace() {
            self.flush_word(state);
        } else if is_bert_punctuation(c) {
            self.flush_word(state);
            state.word.push(c);
            self.flush_word(state);
        } else {
            state.word.push(c);
        }
    }

    fn flush_word(&self, state: &mut State<'_>) {
        if !state.word.is_empty() {
            match state.on_word.as_mut() {
                Some(f) => {
                    f(&state.word);
                    state.words += 1;
                }
                None => self.word_piece(&state.word, state.ids),
            }
            state.word.clear();
        }
    }

    /// Greedy longest-match-first, exactly as `tokenizers`' `WordPiece::tokenize`.
    fn word_piece(&self, word: &str, ids: &mut Vec<u32>) {
        if word.len() > MAX_INPUT_CHARS_PER_WORD && word.chars().count() > MAX_INPUT_CHARS_PER_WORD
        {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < word.len() {
            let continuation = start > 0;
            let prefix = if continuation { CONTINUATION.len() } else { 0 };
            // No token is longer than max_len bytes: skip the lookups that cannot match.
            let mut end = word
                .len()
                .min(start + self.vocab.max_len.saturating_sub(prefix));
            while !word.is_char_boundary(end) {
                end -= 1;
            }
            let mut found = None;
            while start < end {
                let piece = &word[start..end];
                if let Some(id) = self.vocab.get(piece, continuation) {
                    found = Some(id);
                    break;
                }
                end -= piece.chars().next_back().map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => ids.push(id),
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

struct State<'a> {
    /// The word being gathered by the pre-tokenizer.
    word: String,
    ids: &'a mut Vec<u32>,
    limit: usize,
    /// Told of each word instead of making its ids ([`WordPiece::for_each_word`]).
    on_word: Option<&'a mut dyn FnMut(&str)>,
    /// Words told so far.
    words: usize,
}

impl State<'_> {
    fn full(&self) -> bool {
        self.ids.len() + self.words >= self.limit
    }
}

/// BertNormalizer's clean_text: drop U+0000, U+FFFD and control chars, whitespace to a space.
fn clean_char(c: char) -> Option<char> {
    if c == '\0' || c == '\u{fffd}' || is_control(c) {
        None
    } else if is_whitespace(c) {
        Some(' ')
    } else {
        Some(c)
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Cc, Cf and Co but not tab, newline or carriage return. Unassigned chars (Cn) are kept:
/// `unicode_categories`' `is_other` leaves them out.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// BertNormalizer's handle_chinese_chars: a space on each side of a CJK ideograph.
fn space_chinese(c: char) -> impl Iterator<Item = char> {
    let (before, after) = if is_chinese_char(c) {
        (Some(' '), Some(' '))
    } else {
        (None, None)
    };
    before.into_iter().chain(std::iter::once(c)).chain(after)
}

/// The CJK Unified Ideographs blocks as BERT defines them (not Hangul, Hiragana or Katakana).
fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// BertPreTokenizer's punctuation: every ASCII symbol (`$`, `+`, `^`, … are not Unicode
/// punctuation) and the Unicode P* categories.
fn is_bert_punctuation(c: char) -> bool {
    // unicode_categories binary-searches seven tables for is_punctuation; every ASCII P* char
    // is an ASCII symbol, so ASCII needs none of them.
    if c.is_ascii() {
        c.is_ascii_punctuation()
    } else {
        c.is_punctuation()
    }
}

/// The token-to-id table over a vocabulary's text ([`vocab_table`]): the built-in model's
/// built at compile time, any other at load.
struct Vocab {
    text: &'static str,
    starts: Cow<'static, [u32]>,
    slots: Cow<'static, [u16]>,
    bits: u32,
    max_len: usize,
}

/// The built-in vocabulary's table, made by `build.rs` with [`vocab_table::build`].
mod builtin_table {
    include!(concat!(env!("OUT_DIR"), "/vocab_table.rs"));
}

impl Vocab {
    /// Builds the table of `text` (about 1 ms for the built-in vocabulary, in release).
    #[cfg(test)]
    fn new(text: &'static str) -> Vocab {
        let t = vocab_table::build(text);
        Vocab {
            text,
            starts: Cow::Owned(t.starts),
            slots: Cow::Owned(t.slots),
            bits: t.bits,
            max_len: t.max_len,
        }
    }

    /// The table of the built-in model's `vocab.txt`, as compiled in: nothing to build.
    fn builtin() -> Vocab {
        Vocab {
            text: VOCAB,
            starts: Cow::Borrowed(&builtin_table::STARTS),
            slots: Cow::Borrowed(&builtin_table::SLOTS),
            bits: builtin_table::BITS,
            max_len: builtin_table::MAX_LEN,
        }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn token(&self, id: usize) -> &'static str {
        let text = self.text;
        &text[self.starts[id] as usize..self.starts[id + 1] as usize - 1]
    }

    fn slot_of(&self, continuation: bool, key: &str) -> usize {
        vocab_table::slot_of_hash(
            self.bits,
            vocab_table::hash(u64::from(continuation), key.as_bytes()),
        )
    }

    /// The id of `piece`, or of `##piece` when `continuation`.
    fn get(&self, piece: &str, continuation: bool) -> Option<u32> {
        let (continuation, key) = if continuation {
            (true, piece)
        } else {
            split_key(piece)
        };
        let mut slot = self.slot_of(continuation, key);
        loop {
            let id = usize::from(self.slots[slot].checked_sub(1)?);
            if split_key(self.token(id)) == (continuation, key) {
                return Some(id as u32);
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
    }
}

/// `##abc` is keyed as (true, `abc`), anything else (`##` alone included) as itself.
fn split_key(token: &str) -> (bool, &str) {
    match token.strip_prefix(CONTINUATION) {
        Some(rest) if !rest.is_empty() => (true, rest),
        _ => (false, token),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOCAB_TEXT: &str = VOCAB;

    fn wp() -> WordPiece {
        WordPiece::new(VOCAB_TEXT)
    }

    fn ids(wp: &WordPiece, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        wp.tokenize(text, usize::MAX, &mut out);
        out
    }

    #[test]
    fn the_compiled_table_is_the_one_built_from_vocab_txt() {
        let built = Vocab::new(VOCAB_TEXT);
        let compiled = Vocab::builtin();
        assert_eq!(compiled.starts, built.starts);
        assert_eq!(compiled.slots, built.slots);
        assert_eq!(
            (compiled.bits, compiled.max_len),
            (built.bits, built.max_len)
        );
        let wp = WordPiece::builtin();
        assert_eq!(
            ids(&wp, "Unmounting the NFS share"),
            ids(&self::wp(), "Unmounting the NFS share")
        );
    }

    #[test]
    fn vocab_lines_are_unique_and_all_found() {
        let wp = wp();
        assert_eq!(wp.len(), 29_528);
        for (id, token) in (0..wp.len()).map(|id| (id, wp.vocab.token(id))) {
            assert_eq!(wp.vocab.get(token, false), Some(id as u32), "{token:?}");
            if let Some(rest) = token.strip_prefix(CONTINUATION).filter(|r| !r.is_empty()) {
                assert_eq!(wp.vocab.get(rest, true), Some(id as u32), "{token:?}");
            }
        }
        assert!(!VOCAB_TEXT.contains('\r') && VOCAB_TEXT.ends_with('\n'));
        assert_eq!(wp.vocab.get("notatoken", false), None);
        assert_eq!(wp.vocab.get("the", true), Some(9766));
        assert_eq!(wp.vocab.get("zzzzqqq", true), None);
    }

    #[test]
    fn vocab_without_final_newline_and_with_long_lines() {
        let v =
            Vocab::new("a\n##\n##b\na_token_longer_than_sixteen_bytes\n##continued_past_8\nend");
        assert_eq!(v.len(), 6);
        assert_eq!(v.token(5), "end");
        let cases = [
            ("a", false, Some(0)),
            ("##", false, Some(1)),
            ("b", true, Some(2)),
            ("##b", false, Some(2)),
            ("b", false, None),
            ("a_token_longer_than_sixteen_bytes", false, Some(3)),
            ("continued_past_8", true, Some(4)),
            ("end", false, Some(5)),
            ("en", false, None),
        ];
        for (piece, continuation, want) in cases {
            assert_eq!(v.get(piece, continuation), want, "{piece:?} {continuation}");
        }
        assert_eq!(v.max_len, "a_token_longer_than_sixteen_bytes".len());
        assert_eq!(Vocab::new("").len(), 0);
    }

    #[test]
    fn special_tokens_have_the_first_ids() {
        let wp = wp();
        assert_eq!(wp.specials, [0, 1, 2, 3, 4]);
        assert_eq!(wp.unk(), 1);
    }

    #[test]
    fn words_are_split_greedily() {
        let wp = wp();
        let token = |id: &u32| wp.token(*id);
        let cases: &[(&str, &[&str])] = &[
            ("unmount", &["un", "##mount"]),
            ("Hello,world", &["hello", ",", "world"]),
            ("café", &["cafe"]),
            ("東京", &["東", "京"]),
            ("a\u{0}b", &["ab"]),
            ("[CLS]x[cls]", &["[CLS]", "x", "[", "cl", "##s", "]"]),
            ("🦀", &["[UNK]"]),
        ];
        for (text, want) in cases {
            let got: Vec<&str> = ids(&wp, text).iter().map(token).collect();
            assert_eq!(&got, want, "{text:?}");
        }
    }

    #[test]
    fn long_word_is_one_unk_and_limit_stops_early() {
        let wp = wp();
        assert_eq!(ids(&wp, &"a".repeat(101)), [1]);
        assert_eq!(ids(&wp, &"a".repeat(100)).len(), 50);
        let mut out = Vec::new();
        wp.tokenize(&"a, ".repeat(1000), 10, &mut out);
        assert!((10..12).contains(&out.len()), "{}", out.len());
    }

    /// Every Unicode scalar value between two letters, against HF tokenizers: see
    /// tests/fixtures/embed/all_chars.py.
    #[test]
    #[ignore = "needs the 17 MB output of tests/fixtures/embed/all_chars.py"]
    fn every_char_like_hf_tokenizers() {
        let path = std::env::var("CAIRN_EMBED_ALL_CHARS").expect("CAIRN_EMBED_ALL_CHARS is set");
        let text = std::fs::read_to_string(path).expect("the file is readable");
        let wp = wp();
        let mut differ = Vec::new();
        for line in text.lines() {
            let mut fields = line.split(' ');
            let cp: u32 = fields
                .next()
                .and_then(|f| f.parse().ok())
                .expect("a code point");
            let want: Vec<u32> = fields
                .filter(|f| !f.is_empty())
                .map(|f| f.parse().expect("an id"))
                .collect();
            let c = char::from_u32(cp).expect("a scalar value");
            let got = ids(&wp, &format!("x{c}y"));
            if got != want {
                differ.push((cp, got, want));
            }
        }
        for (cp, got, want) in differ.iter().take(40) {
            println!("U+{cp:04X} ours {got:?} hf {want:?}");
        }
        println!("{} of {} chars differ", differ.len(), text.lines().count());
        assert!(differ.is_empty());
    }
}
