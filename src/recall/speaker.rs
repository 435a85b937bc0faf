//! Who a record is in the words of: the label a dialogue turn opens with (`Melanie: I signed
//! up for a pottery class`, `user: run the tests`), matched against the people a query names.
//!
//! A question about a person ("What activities does Melanie partake in?") is answered by what
//! that person said far more often than by what was said to them, yet by words alone both
//! match the name. A record whose speaker the query names has its score raised by
//! `[recall] speaker_boost`, as a time in the query raises its span ([`super::when`]): a boost,
//! never a filter.

/// The longest label read as a speaker, in bytes.
const MAX_LABEL: usize = 40;
/// The most words a speaker's label has ("Dr Ada Lovelace").
const MAX_WORDS: usize = 3;

/// The speaker label `text` opens with: one to three words of letters (digits, `.`, `'`, `-`
/// and `_` inside them) before a colon and a space, lowercased words. None when it opens
/// otherwise (a URL's `https:` has no space after its colon; a sentence has more words).
pub fn label(text: &str) -> Option<Vec<String>> {
    let text = text.trim_start();
    let mut end = text.len().min(MAX_LABEL + 2);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let colon = head.find(':')?;
    let after = text[colon + 1..].chars().next()?;
    if !after.is_whitespace() || colon == 0 {
        return None;
    }
    let words: Vec<&str> = text[..colon].split(' ').collect();
    if words.len() > MAX_WORDS {
        return None;
    }
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let mut chars = w.chars();
        if !chars.next().is_some_and(char::is_alphabetic)
            || !chars.all(|c| c.is_alphanumeric() || matches!(c, '.' | '\'' | '-' | '_'))
        {
            return None;
        }
        out.push(w.to_lowercase());
    }
    Some(out)
}

/// The words of a query as [`label`] compares them: lowercased runs of letters and digits
/// (`Melanie's` gives `melanie` and `s`).
pub fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `query_words` name the speaker of `text`: every word of its label is among them.
pub fn named(query_words: &[String], text: &str) -> bool {
    label(text).is_some_and(|label| {
        label.iter().all(|l| {
            l.split(|c: char| !c.is_alphanumeric())
                .filter(|p| !p.is_empty())
                .all(|p| query_words.iter().any(|q| q == p))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(q: &str) -> Vec<String> {
        query_words(q)
    }

    #[test]
    fn labels_are_short_names_before_a_colon_and_a_space() {
        assert_eq!(
            label("Melanie: I signed up for a pottery class"),
            Some(vec!["melanie".to_string()])
        );
        assert_eq!(
            label("  Dr Ada Lovelace: the engine"),
            Some(vec!["dr".into(), "ada".into(), "lovelace".into()])
        );
        assert_eq!(label("user: run the tests"), Some(vec!["user".to_string()]));
        assert_eq!(label("see https://example.com for it"), None);
        assert_eq!(label("https://example.com: a page"), None);
        assert_eq!(label("We chose tantivy over sqlite: it is faster"), None);
        assert_eq!(label("10:30 the deploy began"), None);
        assert_eq!(label(": nothing"), None);
        assert_eq!(label("no label at all"), None);
        assert_eq!(
            label("Caroline: Researching adoption agencies — it's a dream"),
            Some(vec!["caroline".to_string()])
        );
        assert_eq!(
            label("Researching adoption agencies ——— it's a dream: yes"),
            None
        );
    }

    #[test]
    fn a_query_names_a_speaker_when_it_holds_every_word_of_the_label() {
        let q = words("What activities does Melanie partake in?");
        assert!(named(&q, "Melanie: I just signed up for a pottery class"));
        assert!(!named(&q, "Caroline: Melanie, that's great!"));
        assert!(named(
            &words("what did Melanie's kids like"),
            "Melanie: dinosaurs"
        ));
        assert!(!named(
            &words("what did Ada say"),
            "Ada Lovelace: the engine"
        ));
        assert!(named(
            &words("what did ada lovelace say"),
            "Ada Lovelace: the engine"
        ));
        assert!(!named(&q, "no label: Melanie here"));
    }
}
