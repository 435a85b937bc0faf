//! Where a cleaned MEMORY.md line belongs, by meaning and by the shape of its sentence rather
//! than by lists of a team's words (ADR 101).
//!
//! - [`nearest`]: the section whose exemplars the line's vector is nearest to (the built-in
//!   model, the one recall uses). The exemplars say in general words what each section holds;
//!   none is taken from a labelled set. A last pseudo-section, `life`, holds what is not the
//!   work (a person's days, tastes and chit-chat), so that "does this line name the work?" can
//!   be asked the same way.
//! - [`person_subject`]: a sentence whose subject is one person, by name, doing something
//!   ("Henrik looks after …", "Li is responsible for …", "Wei signs off on …"): a capitalized
//!   word that is no determiner, then (after an adverb) a verb in the third person.
//! - [`is_directive`]: an instruction by grammar: a modal or negation of the sentence
//!   ("must", "should", "needs", "never", "do not"), which belong to English, not to a team.

use std::sync::OnceLock;

use crate::embed::{Builtin, Embedder};

/// The pseudo-section of what is not the work.
pub const LIFE: &str = "life";

/// What each section holds, in general words (several phrasings each).
const EXEMPLARS: &[(&str, &[&str])] = &[
    (
        "rules-conventions",
        &[
            "a coding convention every change must follow",
            "never do this in the code; always do that instead",
            "functions must return errors instead of crashing",
            "every module needs tests and documentation before it is merged",
            "name files and variables this way; do not use that style",
            "commit messages follow the team's format",
            "do not upgrade the language or framework version without asking",
            "every resource must carry the required labels and limits",
        ],
    ),
    (
        "operations",
        &[
            "the job runs every night on the server and the results land in storage",
            "deploys go through the pipeline to the production cluster",
            "backups are taken on a schedule and kept for a number of days",
            "the service is hosted on these machines behind the load balancer",
            "a scheduled task rebuilds the index and refreshes the cache every week",
            "releases are published automatically when a tag is pushed",
            "monitoring dashboards and reports are sent to the team each week",
            "the staging environment is reset from the main branch daily",
        ],
    ),
    (
        "people-relationships",
        &[
            "this person owns that service and decides about changes to it",
            "she is responsible for the release and approves every change",
            "he reviews and merges the pull requests of that component",
            "ask this colleague before changing that part of the system",
            "the team lead handles the weekly planning and the on-call rota",
            "questions about the billing code go to our colleague",
            "he runs the weekly meetings and writes their summaries",
        ],
    ),
    (
        "preferences",
        &[
            "the user prefers this library over that one",
            "the user likes short answers and small changes",
            "the user would rather use one tool than another for this kind of work",
            "the user dislikes long explanations",
        ],
    ),
    (
        "system-architecture",
        &[
            "the application is split into these components that talk through an interface",
            "the source code lives in this folder and is generated from that schema",
            "the service stores its data in this database and reads it through a client",
            "the frontend calls the backend only through the generated client",
            "these files are versioned together with the application",
        ],
    ),
    (
        "memory-system",
        &[
            "what the agent's memory file holds and how its entries are curated",
            "remember this across sessions; recall the notes when asked",
        ],
    ),
    (
        "projects",
        &[
            "the project is an application that does this for its users",
            "the current goal of the project and its milestones",
        ],
    ),
    (
        LIFE,
        &[
            "I went on a trip with my family at the weekend and it was lovely",
            "my friend and I talked about our hobbies, music and movies",
            "thanks, that was great, see you later",
            "I feel tired today and I am happy about my new job",
            "my kids love painting and we visited the park",
        ],
    ),
];

/// A section and its exemplars' vectors.
type Section = (&'static str, Vec<Vec<f32>>);

/// The exemplars' vectors, by section (embedded once a process).
fn exemplars() -> &'static [Section] {
    static VECTORS: OnceLock<Vec<Section>> = OnceLock::new();
    VECTORS.get_or_init(|| {
        let model = Builtin::shared();
        EXEMPLARS
            .iter()
            .map(|(section, texts)| (*section, model.embed(texts)))
            .collect()
    })
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
}

/// Each section's nearness to `vector`: the mean of its two nearest exemplars' cosines.
pub fn nearness(vector: &[f32]) -> Vec<(&'static str, f64)> {
    exemplars()
        .iter()
        .map(|(section, vs)| {
            let mut sims: Vec<f64> = vs.iter().map(|v| dot(vector, v)).collect();
            sims.sort_by(|a, b| b.total_cmp(a));
            let top = &sims[..sims.len().min(2)];
            (*section, top.iter().sum::<f64>() / top.len() as f64)
        })
        .collect()
}

/// The section nearest in meaning to `text`, of those `allowed` says yes to, and how near.
pub fn nearest(text: &str, allowed: impl Fn(&str) -> bool) -> Option<(&'static str, f64)> {
    let v = Builtin::shared().embed(&[text]).remove(0);
    if v.iter().all(|&x| x == 0.0) {
        return None;
    }
    nearness(&v)
        .into_iter()
        .filter(|(s, _)| allowed(s))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// How far `text`'s nearness to `section` falls short of the nearest section's (0 when it is
/// the nearest; `None` for a text of no known token). Life is left out.
pub fn shortfall(text: &str, section: &str) -> Option<f64> {
    let v = Builtin::shared().embed(&[text]).remove(0);
    if v.iter().all(|&x| x == 0.0) {
        return None;
    }
    let n: Vec<(&str, f64)> = nearness(&v)
        .into_iter()
        .filter(|(s, _)| *s != LIFE)
        .collect();
    let best = n.iter().map(|x| x.1).fold(f64::MIN, f64::max);
    n.iter().find(|(s, _)| *s == section).map(|(_, x)| best - x)
}

/// Words that open a sentence without being a person's name (closed classes of English).
const NOT_NAMES: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "our", "my", "your", "their", "its", "his",
    "her", "we", "it", "they", "i", "you", "every", "each", "all", "any", "no", "some", "both",
    "there", "here", "what", "when", "where", "why", "how", "if", "only", "never", "always",
    "nobody", "everyone", "someone",
];

/// Whether `text` says what one person, named, does: "Noor handles …", "Li is responsible
/// for …", "Wei also signs off on …", "Karim owns networking".
pub fn person_subject(text: &str) -> bool {
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
        .collect();
    let Some(name) = words.first() else {
        return false;
    };
    let mut chars = name.chars();
    let capital = chars.next().is_some_and(char::is_uppercase);
    // A name: a capital, then lower case letters (not an acronym, version or identifier).
    if !capital
        || name.chars().count() < 2
        || !chars.all(char::is_lowercase)
        || NOT_NAMES.contains(&name.to_lowercase().as_str())
    {
        return false;
    }
    let mut rest = words[1..].iter().map(|w| w.to_lowercase());
    let mut verb = rest.next().unwrap_or_default();
    // An adverb between the subject and its verb: "also", "only", "usually".
    if verb.ends_with("ly") || matches!(verb.as_str(), "also" | "now" | "still" | "alone") {
        verb = rest.next().unwrap_or_default();
    }
    let next = rest.next().unwrap_or_default();
    // A verb in the third person singular ("is", "has", "does", "owns"), not a plural noun
    // followed by its verb ("Helm charts live …", "Unsafe blocks need …").
    let third_person = matches!(verb.as_str(), "is" | "has" | "does" | "was")
        || verb.len() > 3 && verb.ends_with('s') && !verb.ends_with("ss") && !verb.ends_with("us");
    // "X is …" says what a person does only with a relation: "is responsible for", "is on
    // call", "is the owner of" (not "Balance is key").
    let relation = !matches!(verb.as_str(), "is" | "was")
        || words[1..]
            .iter()
            .skip(1)
            .take(4)
            .any(|w| matches!(w.to_lowercase().as_str(), "for" | "of" | "on" | "in"));
    // "Postgres runs on db1", "Redis lives in the cluster": a program, placed somewhere.
    let located = !matches!(verb.as_str(), "is" | "was")
        && matches!(
            next.as_str(),
            "on" | "in" | "at" | "from" | "behind" | "inside"
        );
    third_person && relation && !located && !AUXILIARIES.contains(&next.as_str())
}

/// Verbs that follow a plural subject, or carry another verb: after a word ending in "s" they
/// show that word was a noun.
const AUXILIARIES: &[&str] = &[
    "are", "were", "need", "must", "should", "can", "cannot", "can't", "will", "would", "may",
    "might", "have", "do", "don't", "live", "go", "get", "run", "stay", "land", "belong",
];

/// Whether `text` is an instruction by its grammar: a modal or a negation that binds the reader.
pub fn is_directive(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let pairs = words.windows(2).any(|w| {
        matches!(
            (w[0], w[1]),
            ("do", "not") | ("may", "not") | ("must", "not") | ("need", "to") | ("has", "to")
        )
    });
    pairs
        || words.iter().any(|w| {
            matches!(
                *w,
                "must"
                    | "mustn't"
                    | "should"
                    | "shouldn't"
                    | "never"
                    | "always"
                    | "don't"
                    | "needs"
                    | "need"
                    | "forbidden"
                    | "required"
            )
        })
}

/// Whether `text` names the work by the shape of its sentence when no word of it is a known
/// cue (ADR 101): a named person doing something, or a word the
/// model's vocabulary does not hold whole (a tool or library: "seaborn", "kubecost"), in a
/// sentence of some length whose meaning is not a person's life.
pub fn names_the_work_by_shape(text: &str) -> bool {
    let model = Builtin::shared();
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let unknown_tool = words.iter().any(|w| {
        w.len() >= 4
            && w.chars().all(|c| c.is_ascii_lowercase())
            && model.token_ids(w).len() >= 2
            && !english_derivation(w)
    });
    let shaped = person_subject(text) || words.len() >= 5 && unknown_tool;
    shaped && nearest(text, |_| true).is_none_or(|(s, _)| s != LIFE)
}

/// A word the vocabulary does not hold whole but English makes from one: a verb or adjective
/// by its ending ("customize", "motivate", "overcomplicated", "hopeful"), not a tool's name.
fn english_derivation(word: &str) -> bool {
    const ENDINGS: &[&str] = &[
        "ize", "ized", "ise", "ised", "ate", "ated", "ify", "ified", "ing", "ed", "ness", "ment",
        "tion", "able", "ible", "ful", "less", "ous", "ive", "ally", "ly", "er", "est",
    ];
    ENDINGS.iter().any(|e| word.ends_with(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_person_doing_something_is_a_person_subject() {
        for t in [
            "Noor handles the weekly dependency updates",
            "Wei signs off on proto changes",
            "Li is responsible for the report",
            "Joana also reviews the adapters",
            "Karim owns networking",
        ] {
            assert!(person_subject(t), "{t}");
        }
        for t in [
            "Helm charts live in charts/",
            "Unsafe blocks need a comment",
            "Costs are reported per team",
            "Terraform state lives in S3",
            "The nightly job runs",
            "AWS keys rotate monthly",
            "Every namespace gets a policy",
            "Postgres runs on db1.internal",
            "Balance is key and it varies",
        ] {
            assert!(!person_subject(t), "{t}");
        }
    }

    #[test]
    fn places_by_meaning() {
        let all = |_: &str| true;
        assert_eq!(
            nearest("the database is dumped to the bucket every six hours", all).map(|s| s.0),
            Some("operations")
        );
        assert_eq!(
            nearest("we went hiking with the kids on sunday, lovely day", all).map(|s| s.0),
            Some(LIFE)
        );
    }
}
