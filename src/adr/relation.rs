//! Relations between records besides full supersession: partial supersession, amendments,
//! clarifications, and any other link adr-tools' `adr link` wrote.
//!
//! In frontmatter they are a `relations` list, one flow mapping an item, keeping the words the
//! record used (`text`) next to the kind cairn read from them:
//!
//! ```yaml
//! relations:
//!   - {kind: partly-superseded-by, adr: 8, text: Partly superseded by}
//!   - {kind: amended-by, adr: 6, text: Amended by}
//! ```
//!
//! Full supersession stays in `supersedes` / `superseded-by`, which status and ranking read.
//! Kinds are read from the words' shape, not from a list of phrasings: a supersede, amend or
//! clarify stem, passive when followed by `by`, partial when `part`, `partly` or `partially`
//! qualifies it (`In part supersedes`, `Partially superseded by`); adr-tools' old spelling
//! `superceded` counts as `superseded`. Words with none of the stems are kind `other`.

use std::fmt;

use serde::Serialize;

use super::AdrNumber;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Supersedes,
    SupersededBy,
    PartlySupersedes,
    PartlySupersededBy,
    Amends,
    AmendedBy,
    Clarifies,
    ClarifiedBy,
    Other,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Supersedes,
        Kind::SupersededBy,
        Kind::PartlySupersedes,
        Kind::PartlySupersededBy,
        Kind::Amends,
        Kind::AmendedBy,
        Kind::Clarifies,
        Kind::ClarifiedBy,
        Kind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Supersedes => "supersedes",
            Kind::SupersededBy => "superseded-by",
            Kind::PartlySupersedes => "partly-supersedes",
            Kind::PartlySupersededBy => "partly-superseded-by",
            Kind::Amends => "amends",
            Kind::AmendedBy => "amended-by",
            Kind::Clarifies => "clarifies",
            Kind::ClarifiedBy => "clarified-by",
            Kind::Other => "other",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        let s = s.trim().to_ascii_lowercase();
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind the other record must hold for the pair to agree (`other` has none).
    pub fn inverse(self) -> Option<Kind> {
        Some(match self {
            Kind::Supersedes => Kind::SupersededBy,
            Kind::SupersededBy => Kind::Supersedes,
            Kind::PartlySupersedes => Kind::PartlySupersededBy,
            Kind::PartlySupersededBy => Kind::PartlySupersedes,
            Kind::Amends => Kind::AmendedBy,
            Kind::AmendedBy => Kind::Amends,
            Kind::Clarifies => Kind::ClarifiedBy,
            Kind::ClarifiedBy => Kind::Clarifies,
            Kind::Other => return None,
        })
    }

    /// Whether this kind says the other record replaces this one in whole or in part.
    pub fn is_supersede(self) -> bool {
        matches!(
            self,
            Kind::Supersedes
                | Kind::SupersededBy
                | Kind::PartlySupersedes
                | Kind::PartlySupersededBy
        )
    }

    /// The kind a record's words say, or `None` when they hold no relation stem.
    pub fn of_words(text: &str) -> Option<Kind> {
        let lower = text.to_lowercase().replace("superced", "supersed");
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let stem = |w: &str| -> Option<usize> {
            if w.starts_with("supersed") {
                Some(0)
            } else if w.starts_with("amend") {
                Some(1)
            } else if w.starts_with("clarif") {
                Some(2)
            } else {
                None
            }
        };
        let at = words.iter().rposition(|w| stem(w).is_some())?;
        let which = stem(words[at])?;
        let passive = words.get(at + 1) == Some(&"by");
        let partial = words[..at]
            .iter()
            .any(|w| matches!(*w, "part" | "partly" | "partially" | "partial"));
        Some(match (which, partial, passive) {
            (0, false, false) => Kind::Supersedes,
            (0, false, true) => Kind::SupersededBy,
            (0, true, false) => Kind::PartlySupersedes,
            (0, true, true) => Kind::PartlySupersededBy,
            (1, _, false) => Kind::Amends,
            (1, _, true) => Kind::AmendedBy,
            (_, _, false) => Kind::Clarifies,
            (_, _, true) => Kind::ClarifiedBy,
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One relation of a record to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Relation {
    pub kind: Kind,
    pub adr: AdrNumber,
    /// The record's own words for it (`Partly superseded by`).
    pub text: String,
}

impl Relation {
    /// The words to show: the record's own, else the kind's.
    pub fn words(&self) -> String {
        if self.text.trim().is_empty() {
            self.kind.as_str().replace('-', " ")
        } else {
            self.text.trim().to_string()
        }
    }
}

/// The `relations` frontmatter value in block style (a leading newline, one item a line), or
/// `[]` when there are none.
pub fn render(relations: &[Relation]) -> String {
    if relations.is_empty() {
        return "[]".into();
    }
    let mut out = String::new();
    for r in relations {
        out.push_str(&format!(
            "\n  - {{kind: {}, adr: {}, text: {}}}",
            r.kind,
            r.adr,
            super::frontmatter::scalar(&r.words())
        ));
    }
    out
}

/// The relation words at the end of `before` (the text in front of a link), if any: the clause
/// from its last `,`, `;`, `(` or sentence break, when it holds a relation stem. Also returns
/// where the clause starts, so the caller can tell a status word in front of it.
pub fn words_before(before: &str) -> Option<(Kind, String, usize)> {
    let clause_start = before
        .rfind([',', ';', '(', ':', '.', '—', '–'])
        .map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
    let clause = before[clause_start..]
        .trim()
        .trim_matches(|c: char| c == '*' || c == '_' || c == '>' || c.is_whitespace());
    let kind = Kind::of_words(clause)?;
    Some((kind, clause.to_string(), clause_start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_words() {
        let cases = [
            ("Supersedes", Some(Kind::Supersedes)),
            ("Superseded by", Some(Kind::SupersededBy)),
            ("Superceded by", Some(Kind::SupersededBy)),
            ("Supercedes", Some(Kind::Supersedes)),
            ("Partly superseded by", Some(Kind::PartlySupersededBy)),
            ("In part supersedes", Some(Kind::PartlySupersedes)),
            ("Partially supersedes", Some(Kind::PartlySupersedes)),
            ("Amended by", Some(Kind::AmendedBy)),
            ("Amends", Some(Kind::Amends)),
            ("Narrowly amended by", Some(Kind::AmendedBy)),
            ("Clarified by", Some(Kind::ClarifiedBy)),
            ("Clarifies", Some(Kind::Clarifies)),
            ("Extends", None),
            ("Accepted", None),
        ];
        for (words, want) in cases {
            assert_eq!(Kind::of_words(words), want, "{words}");
        }
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
            if let Some(inv) = k.inverse() {
                assert_eq!(inv.inverse(), Some(k));
            }
        }
    }

    #[test]
    fn words_in_front_of_a_link() {
        assert_eq!(
            words_before("Accepted (partly superseded by "),
            Some((Kind::PartlySupersededBy, "partly superseded by".into(), 10))
        );
        assert_eq!(
            words_before("**Status:** Accepted, amended by "),
            Some((Kind::AmendedBy, "amended by".into(), 21))
        );
        assert_eq!(words_before("See also "), None);
    }

    #[test]
    fn rendered_relations_read_back_as_yaml() {
        let rels = vec![
            Relation {
                kind: Kind::PartlySupersededBy,
                adr: 8,
                text: "Partly superseded by".into(),
            },
            Relation {
                kind: Kind::Other,
                adr: 2,
                text: "Extends: see".into(),
            },
        ];
        let yaml = format!("relations: {}\n", render(&rels));
        let v: yaml_serde::Value = yaml_serde::from_str(&yaml).unwrap();
        let items = v["relations"].as_sequence().unwrap();
        assert_eq!(items[0]["kind"].as_str(), Some("partly-superseded-by"));
        assert_eq!(items[0]["adr"].as_u64(), Some(8));
        assert_eq!(items[1]["text"].as_str(), Some("Extends: see"));
    }
}
