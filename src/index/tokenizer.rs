//! The tokenizer every index field of text uses, in every process that opens the index.
//!
//! Words are runs of letters, digits and `_`. Each word is emitted whole, lower-cased; a word
//! that is an identifier (`TestPagerOrder`, `parse_v2_header`, `HTTPServer`, `ipv4`) is also
//! emitted split into its parts at case changes, letter/digit changes and underscores, the
//! parts at the same position as the whole, so `pager` finds `TestPagerOrder` and a phrase of
//! whole words still matches. After it run the stop-word filter (the commonest English words
//! carry no weight), a length limit, and the English stemmer.

use tantivy::tokenizer::{
    Language, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenStream,
    Tokenizer,
};

/// The name the analyzer is registered under.
pub const NAME: &str = "cairn";

/// The analyzer: [`CodeTokenizer`], stop words, long tokens removed, stemming.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The commonest English words (the NLTK list, less the negations that carry meaning in a
/// rule: "not", "no", "nor", "don", "never" is not in it either).
pub const STOP_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "should",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
];

/// Splits text into words and identifier parts, lower-cased.
#[derive(Clone, Default)]
pub struct CodeTokenizer {
    tokens: Vec<Token>,
    /// The texts of the last document's tokens, reused for the next one's: a fresh `String`
    /// a token was a tenth of an index build in `malloc` and `free`.
    spare: Vec<String>,
}

pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.spare
            .extend(self.tokens.drain(..).map(|t| t.text).rev());
        tokenize_reusing(text, &mut self.tokens, &mut self.spare);
        CodeTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Appends the tokens of `text` to `out`.
pub fn tokenize(text: &str, out: &mut Vec<Token>) {
    tokenize_reusing(text, out, &mut Vec::new());
}

/// [`tokenize`], taking each token's `String` from `spare` while it has one.
fn tokenize_reusing(text: &str, out: &mut Vec<Token>, spare: &mut Vec<String>) {
    let mut position = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !is_word_char(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = chars.peek() {
            if !is_word_char(c) {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        let word = &text[start..end];
        // Most words are lower-case ASCII letters: one part, nothing to split.
        let parts = if word.bytes().all(|b| b.is_ascii_lowercase()) {
            Vec::new()
        } else {
            split_identifier(word)
        };
        let whole = word.trim_matches('_');
        if !whole.is_empty() {
            push(out, lower(whole, spare), start, end, position);
        }
        if parts.len() > 1 {
            for (from, to) in parts {
                push(
                    out,
                    lower(&word[from..to], spare),
                    start + from,
                    start + to,
                    position,
                );
            }
        }
        position += 1;
    }
}

/// `word` lower-cased (as `str::to_lowercase` does it) into a spare `String` when there is one.
fn lower(word: &str, spare: &mut Vec<String>) -> String {
    let Some(mut text) = spare.pop() else {
        return word.to_lowercase();
    };
    text.clear();
    if word.is_ascii() {
        text.push_str(word);
        text.make_ascii_lowercase();
    } else {
        text.push_str(&word.to_lowercase());
    }
    text
}

fn push(out: &mut Vec<Token>, text: String, from: usize, to: usize, position: usize) {
    out.push(Token {
        offset_from: from,
        offset_to: to,
        position,
        text,
        position_length: 1,
    });
}

/// Byte ranges of the parts of an identifier: split at `_`, lower→upper, acronym→word
/// (`HTTPServer` → `HTTP`, `Server`) and letter↔digit changes.
pub fn split_identifier(word: &str) -> Vec<(usize, usize)> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '_' {
            if let Some(s) = start.take() {
                parts.push((s, i));
            }
            continue;
        }
        if let Some(s) = start {
            let prev = chars[k - 1].1;
            let next = chars.get(k + 1).map(|&(_, c)| c);
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase))
                || (prev.is_alphabetic() && c.is_numeric())
                || (prev.is_numeric() && c.is_alphabetic());
            if boundary {
                parts.push((s, i));
                start = Some(i);
            }
        } else {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        parts.push((s, word.len()));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        tokenize(text, &mut out);
        out.into_iter().map(|t| t.text).collect()
    }

    fn analyzed(text: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut stream = a.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn identifiers_split_and_stay_whole() {
        let cases: &[(&str, &[&str])] = &[
            (
                "TestPagerOrder",
                &["testpagerorder", "test", "pager", "order"],
            ),
            (
                "parse_v2_header",
                &["parse_v2_header", "parse", "v", "2", "header"],
            ),
            ("HTTPServer", &["httpserver", "http", "server"]),
            ("ipv4", &["ipv4", "ipv", "4"]),
            (
                "getHTTPResponseCode",
                &["gethttpresponsecode", "get", "http", "response", "code"],
            ),
            ("__init__", &["init"]),
            ("system-bus-worker", &["system", "bus", "worker"]),
            ("plain words", &["plain", "words"]),
            ("Ünïcode Straße", &["ünïcode", "straße"]),
            ("x86_64", &["x86_64", "x", "86", "64"]),
        ];
        for (text, want) in cases {
            assert_eq!(words(text), *want, "{text}");
        }
    }

    #[test]
    fn a_tokenizer_reused_across_documents_gives_what_a_fresh_one_gives() {
        let texts = [
            "getHTTPResponseCode and x86_64 on ΟΔΟΣ",
            "short",
            "Ünïcode Straße parse_v2_header with more words than the first document had",
            "",
            "ΣΙΣΥΦΟΣ TestPager",
        ];
        let mut reused = CodeTokenizer::default();
        for text in texts {
            let mut fresh = Vec::new();
            tokenize(text, &mut fresh);
            let mut stream = reused.token_stream(text);
            let mut got = Vec::new();
            while stream.advance() {
                let t = stream.token();
                got.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
            }
            let want: Vec<_> = fresh
                .iter()
                .map(|t| (t.text.clone(), t.offset_from, t.offset_to, t.position))
                .collect();
            assert_eq!(got, want, "{text}");
        }
        assert_eq!(words("ΟΔΟΣ"), ["οδος"], "str::to_lowercase's final sigma");
    }

    #[test]
    fn parts_share_the_position_of_their_word() {
        let mut out = Vec::new();
        tokenize("fix TestPager now", &mut out);
        let positions: Vec<usize> = out.iter().map(|t| t.position).collect();
        assert_eq!(positions, [0, 1, 1, 1, 2]);
    }

    #[test]
    fn stop_words_carry_no_weight_and_words_are_stemmed() {
        assert_eq!(
            analyzed("The mounts of the NFS server"),
            ["mount", "nfs", "server"]
        );
        assert_eq!(analyzed("what did they say"), ["say"]);
    }
}
