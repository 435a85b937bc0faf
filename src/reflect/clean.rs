//! What an observation's text must be to become a MEMORY.md line, by its shape: [`line`]
//! cleans a text into one line or says why it cannot be one, and [`section`] places it.
//!
//! A line is a rule or a fact with its subject, at most [`MAX_CHARS`] characters. What is not
//! one and cannot be made one by rule is not proposed:
//!
//! - a secret (a redaction marker) or a local home path ([`flaw`], which tier 1 of triage
//!   applies to every proposal too);
//! - a question; a hedged or tentative remark ("i suppose", "looks like", "maybe"); a remark
//!   to or about someone's work in progress ("you haven't read X", "you've built …"); a text
//!   whose subject is the session's own bug or fix ("the fix is …", "this …");
//! - a value statement without its subject ("performance is crucial.") and anything that names
//!   nothing of the work: no code span, path, identifier, acronym, number or topic word of a
//!   work category ([`names_the_work`]);
//! - longer than [`MAX_CHARS`] once cleaned (cut at a sentence end when the first sentences are
//!   whole and fit).
//!
//! Cleaning by rule: leading interjections and filler ("omfg", "yeah,", "quick thing:") and
//! profane intensifiers are dropped, a clause that is only an insult ("anything else is
//! shitty") goes, ", no X" after an instruction reads ", not X", the user's first person
//! becomes "The user" (an agent reading "I" takes it for itself), common acronyms are put in
//! capitals, the first letter too, and the closing "." or "!" goes.

use super::place;
use crate::observe::category;

/// The most characters a proposed line may have.
pub const MAX_CHARS: usize = 200;

/// Why a text cannot be a MEMORY.md line whatever is done to it: the rule's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    /// A `[REDACTED:…]` marker: a secret's line; what is left is not worth keeping.
    Redacted,
    /// A local home folder (`/Users/NAME`, `/home/NAME`, `C:\Users\NAME`): one machine's detail.
    HomePath,
}

impl Flaw {
    /// The rule as a person reads it (triage's reason names it).
    pub fn rule(self) -> &'static str {
        match self {
            Flaw::Redacted => "holds a redaction marker: a secret's line is not memory",
            Flaw::HomePath => "holds a local home path: one machine's detail is not memory",
        }
    }
}

/// The flaw of `text` no cleaning removes, if any.
pub fn flaw(text: &str) -> Option<Flaw> {
    if text.contains("[REDACTED:") {
        return Some(Flaw::Redacted);
    }
    let lower = text.to_ascii_lowercase();
    let home = ["/users/", "/home/", "c:\\users\\", "c:/users/"]
        .iter()
        .any(|h| {
            lower.match_indices(h).any(|(i, _)| {
                // A folder of a person: the prefix stands at a word's start and a name follows.
                let before = lower[..i].chars().next_back();
                let after = lower[i + h.len()..].chars().next();
                before.is_none_or(|c| !c.is_alphanumeric() && c != '.' && c != '_')
                    && after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            })
        });
    home.then_some(Flaw::HomePath)
}

/// Why an observation is not proposed (counted in the reflection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    Flaw(Flaw),
    /// A question, a hedge, a remark about work in progress or the session's own fix.
    Remark,
    /// No subject of the work: a fragment, chit-chat, a value statement.
    NoSubject,
    /// Longer than [`MAX_CHARS`] with no whole first sentence that fits.
    TooLong,
    /// A failed command and its output (an error fix as the observer writes it): a lesson
    /// would have to be written by a person or the LLM.
    Dump,
    /// A person's tastes outside the work ("I love …", "I enjoy …"): recalled when asked,
    /// never a line for every session.
    Personal,
}

/// Words opening a text that say nothing (dropped with the punctuation after them).
const OPENERS: &[&str] = &[
    "omfg",
    "omg",
    "ugh",
    "ok",
    "okay",
    "so",
    "well",
    "yeah",
    "yup",
    "yep",
    "hey",
    "btw",
    "also",
    "and",
    "but",
    "oh",
    "lol",
    "please",
    "pls",
    "fyi",
    "note",
    "remember",
    "quick thing",
    "just",
    "hmm",
    "hm",
    "alright",
    "right",
    "hell",
    "from now on",
    "going forward",
];

/// Profane intensifiers: dropped where they stand.
const INTENSIFIERS: &[&str] = &[
    "fucking", "fuckin", "freaking", "frickin", "goddamn", "damn", "bloody", "effing",
];

/// Words that make a clause an insult or an oath: such a clause goes whole.
const PROFANE: &[&str] = &[
    "fuck", "shit", "shitty", "crap", "crappy", "sucks", "wtf", "bullshit",
];

/// Hedges: the speaker is guessing, not laying down a rule.
const HEDGES: &[&str] = &[
    "i suppose",
    "i guess",
    "i thought",
    "i think",
    "i wonder",
    "looks like",
    "seems like",
    "it seems",
    "maybe",
    "perhaps",
    "probably",
    "not sure",
    // A reaction to a suggestion at hand, not a standing liking.
    "the idea of",
];

/// Subjects that are the session's own trouble: "the fix is …", "this …".
const SESSION_SUBJECTS: &[&str] = &[
    "the fix",
    "the bug",
    "the issue",
    "the problem",
    "the error",
    "the root cause",
    "the cause",
    "the solution",
    "this",
    "that",
    "it",
    "here",
    "there",
    "these",
    "those",
];

/// Acronyms written in capitals in a clean line.
const ACRONYMS: &[&str] = &[
    "api", "cd", "ci", "cli", "css", "csv", "dns", "gpu", "cpu", "html", "http", "https", "id",
    "json", "jwt", "pr", "rgb", "rgba", "sql", "ssh", "tls", "ui", "url", "ux", "yaml", "toml",
];

fn words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .collect()
}

/// `text` as one clean MEMORY.md line, or why it cannot be one.
pub fn line(text: &str) -> Result<String, Unfit> {
    if let Some(f) = flaw(text) {
        return Err(Unfit::Flaw(f));
    }
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = one.to_lowercase();
    if is_dump(&one) {
        return Err(Unfit::Dump);
    }
    if one.trim_end().ends_with('?')
        || HEDGES.iter().any(|h| has_phrase(&lower, h))
        || is_reply(&lower)
    {
        return Err(Unfit::Remark);
    }
    let mut s = drop_openers(&drop_intensifiers(&one));
    s = drop_profane_clauses(&s).ok_or(Unfit::NoSubject)?;
    let lower = s.to_lowercase();
    let w = words(&lower);
    if is_remark(&w)
        || SESSION_SUBJECTS
            .iter()
            .any(|p| starts_with_phrase(&lower, p))
    {
        return Err(Unfit::Remark);
    }
    if is_personal(&w) {
        return Err(Unfit::Personal);
    }
    if !names_the_work(&s) {
        return Err(Unfit::NoSubject);
    }
    s = not_after_comma(&s);
    s = third_person(&s);
    if starts_with_phrase(&s.to_lowercase(), "i") {
        // First person this rule could not turn into "The user": a remark about oneself.
        return Err(Unfit::Personal);
    }
    s = acronyms(&s);
    s = capitalize(s.trim());
    let s = s
        .trim_end_matches(['.', '!', ' '])
        .trim_end_matches(['.', '!', ' '])
        .to_string();
    if s.chars().count() <= MAX_CHARS {
        return Ok(s);
    }
    // The first sentences, whole, when they fit.
    let mut cut = None;
    for (i, _) in s.match_indices(". ") {
        if s[..i].chars().count() <= MAX_CHARS {
            cut = Some(i);
        }
    }
    cut.filter(|&i| i > 40)
        .map(|i| s[..i].to_string())
        .ok_or(Unfit::TooLong)
}

/// "`cmd` failed (exit 1: …)": the observer's error fix, a command and its output.
fn is_dump(text: &str) -> bool {
    text.starts_with('`')
        && text[1..]
            .find('`')
            .is_some_and(|end| text[end + 2..].trim_start().starts_with("failed (exit"))
}

/// A reply to someone: "Yes, …", "Nope, …", "Sure! …".
fn is_reply(lower: &str) -> bool {
    [
        "yes",
        "no",
        "nope",
        "nah",
        "yep",
        "yeah",
        "sure",
        "definitely",
        "absolutely",
        "exactly",
    ]
    .iter()
    .any(|w| {
        lower.starts_with(w) && lower[w.len()..].starts_with([',', '!', '.', ' ', '-']) && {
            let rest = lower[w.len()..].trim_start();
            rest.starts_with([',', '!', '.', '-']) || *w != "no"
        }
    })
}

/// A person's tastes: the speaker loves, enjoys or adores something (first person, a verb of
/// enjoyment within the first words).
fn is_personal(w: &[&str]) -> bool {
    let first_person = matches!(w.first(), Some(&"i") | Some(&"i'm") | Some(&"we"))
        || w.len() > 1 && w[0] == "the" && w[1] == "user";
    first_person
        && w.iter().take(5).any(|x| {
            matches!(
                *x,
                "love" | "loves" | "enjoy" | "enjoys" | "adore" | "adores" | "loved" | "enjoyed"
            )
        })
}

fn has_phrase(lower: &str, phrase: &str) -> bool {
    lower.match_indices(phrase).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + phrase.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

fn starts_with_phrase(lower: &str, phrase: &str) -> bool {
    lower.starts_with(phrase)
        && lower[phrase.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric())
}

fn drop_openers(text: &str) -> String {
    let mut s = text.trim_start().to_string();
    loop {
        let lower = s.to_lowercase();
        let Some(o) = OPENERS.iter().find(|o| starts_with_phrase(&lower, o)) else {
            break;
        };
        let Some(rest) = s.get(o.len()..) else {
            break;
        };
        // "ok" in "ok to merge" is a word of the sentence: only an opener set apart
        // by punctuation, or one of the pure interjections, goes.
        let apart = rest.starts_with([',', ':', '!', '.', ' ']) && !rest.trim().is_empty();
        if !apart {
            break;
        }
        let set_apart = rest.starts_with([',', ':', '!', '.']);
        let interjection = matches!(
            *o,
            "omfg"
                | "omg"
                | "ugh"
                | "yeah"
                | "yup"
                | "yep"
                | "hey"
                | "btw"
                | "lol"
                | "hmm"
                | "hm"
                | "hell"
                | "and"
                | "but"
                | "also"
                | "so"
                | "well"
                | "oh"
                | "please"
                | "pls"
                | "just"
        );
        if !set_apart && !interjection {
            break;
        }
        s = rest
            .trim_start_matches([',', ':', '!', '.', ' ', '-'])
            .to_string();
    }
    s
}

fn drop_intensifiers(text: &str) -> String {
    text.split(' ')
        .filter(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            !INTENSIFIERS.contains(&bare.as_str())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` without its clauses (split at ", ", " - ", "; ") that hold a profane word; `None`
/// when nothing is left.
fn drop_profane_clauses(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    if !words(&lower).iter().any(|w| PROFANE.contains(w)) {
        return Some(text.to_string());
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = [", ", " - ", "; "]
            .iter()
            .filter_map(|sep| rest.find(sep).map(|i| (i, sep.len())))
            .min();
        let (clause, after) = match next {
            Some((i, n)) => (&rest[..i], &rest[i + n..]),
            None => (rest, ""),
        };
        let l = clause.to_lowercase();
        if !words(&l).iter().any(|w| PROFANE.contains(w)) {
            kept.push(clause);
        }
        rest = after;
    }
    let out = kept.join(", ");
    (!out.trim().is_empty()).then_some(out)
}

/// A remark to or about someone's work: "you haven't …", "you've built …", "you must have …".
fn is_remark(w: &[&str]) -> bool {
    let Some(first) = w.first() else {
        return false;
    };
    let second = w.get(1).copied().unwrap_or("");
    let third = w.get(2).copied().unwrap_or("");
    // A report of work in progress, without its subject: "still working on X, will push later".
    let progressive = |x: &str| x.len() > 4 && x.ends_with("ing");
    if matches!(*first, "still" | "currently" | "now") && progressive(second)
        || progressive(first) && w.contains(&"will")
    {
        return true;
    }
    match *first {
        "you've" | "you're" | "you'd" | "you’ve" | "you’re" | "thanks" | "thank" => true,
        "you" => match second {
            // "you must run X" is a rule; "you must have had" guesses.
            "must" | "should" | "need" | "can" | "can't" | "cannot" | "may" | "don't" => {
                third == "have"
            }
            "always" | "never" => false,
            _ => true,
        },
        _ => false,
    }
}

/// Whether `text` names something of the work: a code span, a path or file, an identifier
/// (inner capitals, `_`, `::`, digits with letters but not a quantity like "3pm"), an acronym,
/// a person named as owning something, or a topic cue of a work category.
pub fn names_the_work(text: &str) -> bool {
    if text.contains('`') {
        return true;
    }
    for (i, raw) in text.split_whitespace().enumerate() {
        let word =
            raw.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '_' | '.' | '/'));
        let word = word.trim_end_matches('.');
        if word.is_empty() {
            continue;
        }
        let letters = word.chars().filter(|c| c.is_alphabetic()).count();
        let upper = word.chars().filter(|c| c.is_uppercase()).count();
        let digits = word.chars().any(|c| c.is_ascii_digit());
        let identifier = word.contains('_')
            || word.contains("::")
            || is_path_like(word)
            || word.contains('.') && word.len() > 3
            || (word.chars().any(char::is_lowercase)
                && word.chars().skip(1).any(char::is_uppercase)
                && letters > 2)
            || (digits && letters > 0 && !is_quantity(word));
        let lower_word = word.to_lowercase();
        let acronym = ACRONYMS.contains(&lower_word.as_str())
            || lower_word
                .strip_suffix('s')
                .is_some_and(|w| w.len() > 1 && ACRONYMS.contains(&w));
        if identifier || acronym || is_version(word) {
            return true;
        }
        if i == 0
            && upper == 1
            && letters > 1
            && OWNERSHIP
                .iter()
                .any(|v| text.split_whitespace().nth(1).is_some_and(|n| n == *v))
        {
            return true;
        }
    }
    work_cue(text) || place::names_the_work_by_shape(text)
}

/// A version: "1.9", "5.x", "v3.4.1", "0.7" (not a quantity, whatever follows the dot).
fn is_version(word: &str) -> bool {
    let w = word.strip_prefix(['v', 'V']).unwrap_or(word);
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() > 1
        && !parts[0].is_empty()
        && parts[0].chars().all(|c| c.is_ascii_digit())
        && parts[1..].iter().all(|p| {
            p == &"x" || p == &"*" || !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())
        })
}

/// Verbs that say who owns or does what: "Bo owns the billing service" (not "runs" or
/// "handles": a program runs and handles things too).
const OWNERSHIP: &[&str] = &[
    "owns",
    "maintains",
    "leads",
    "reviews",
    "approves",
    "decides",
];

/// A path: more than one `/`, or one with a `.`, `_`, `-` beside it, or one at an end
/// ("vendor/", "/etc"); not "and/or", "24/7".
fn is_path_like(word: &str) -> bool {
    let slashes = word.matches('/').count();
    slashes > 0
        && (slashes > 1
            || word.starts_with('/') && word.len() > 1
            || word.ends_with('/') && word.len() > 1
            || word.contains(['.', '_', '-']))
        && word.chars().any(char::is_alphabetic)
}

/// "3pm", "2nd", "1990s", "10k", "5min": a number with its unit, not an identifier.
fn is_quantity(word: &str) -> bool {
    let lower = word.to_lowercase();
    let unit = lower.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    unit.len() < lower.len()
        && matches!(
            unit,
            "st" | "nd"
                | "rd"
                | "th"
                | "am"
                | "pm"
                | "s"
                | "k"
                | "m"
                | "h"
                | "min"
                | "mins"
                | "x"
                | "yo"
                | "km"
                | "kg"
                | "lbs"
                | "hrs"
                | "days"
                | "yrs"
        )
}

/// Topic cues of the work categories (the taxonomy's, without the generic "never", "must",
/// "prefer", "like" and the family words), plus the words of operating software.
fn work_cue(text: &str) -> bool {
    const OPS: &[&str] = &[
        "ci",
        "pipeline",
        "pipelines",
        "runner",
        "runners",
        "workflow",
        "workflows",
        "cache",
        "caches",
        "cached",
        "staging",
        "production",
        "prod",
        "build",
        "builds",
        "artifact",
        "artifacts",
        "test",
        "tests",
        "branch",
        "branches",
        "merge",
        "rebase",
        "commit",
        "commits",
        "code",
        "repo",
        "repository",
        "migration",
        "migrations",
        "endpoint",
        "endpoints",
        "dependency",
        "dependencies",
        "function",
        "functions",
        "theme",
        "themes",
        "config",
        "logs",
        "log",
        "secrets",
        "tokens",
        "on-call",
        "push",
        "pull",
        "main",
        "master",
        "file",
        "files",
        "folder",
        "folders",
        "directory",
        "script",
        "scripts",
        "database",
        "schema",
        "query",
        "queries",
        "bug",
        "bugs",
        "refactor",
        // General words of programming, so that a rule about code names its subject.
        "error",
        "errors",
        "message",
        "messages",
        "return",
        "returns",
        "ifs",
        "else",
        "ternary",
        "ternaries",
        "loop",
        "loops",
        "class",
        "classes",
        "type",
        "types",
        "variable",
        "variables",
        "struct",
        "structs",
        "enum",
        "enums",
        "trait",
        "traits",
        "method",
        "methods",
        "inheritance",
        "composition",
        "exception",
        "exceptions",
        "null",
        "async",
        "thread",
        "threads",
        "compiler",
        "warning",
        "warnings",
        "linter",
        "clippy",
        "rustfmt",
        "prettier",
        "eslint",
        "formatter",
        "indentation",
        "lowercase",
        "uppercase",
        "comment",
        "comments",
        "docs",
        "documentation",
        "changelog",
        "styles",
        "inline",
        "component",
        "components",
        "unwrap",
        "panic",
        "mock",
        "mocks",
        "fixture",
        "fixtures",
        "snapshot",
        "snapshots",
        "benchmark",
        "benchmarks",
        "macro",
        "macros",
        "regex",
        "parser",
        "package",
        "packages",
        "npm",
        "pip",
        "cargo",
        "rust",
        "python",
        "typescript",
        "javascript",
        "java",
        "docker",
        "makefile",
        "flag",
        "flags",
        "argument",
        "arguments",
        "route",
        "routes",
        "handler",
        "handlers",
        "middleware",
        "logging",
        "logger",
        "debug",
        "diff",
        "patch",
        "squash",
        "rebase",
        "semver",
        "lib",
        "library",
        "binary",
        "binaries",
        "compile",
        "compiles",
    ];
    const GENERIC: &[&str] = &[
        "prefer",
        "like",
        "dislike",
        "want",
        "never",
        "always",
        "must",
        "should",
        "don't",
        "do not",
        "feature",
        "friend",
        "wife",
        "husband",
        "partner",
        "mother",
        "father",
        "sister",
        "brother",
        "daughter",
        "son",
        "kids",
        "family",
        "memory",
        "remember",
        "version",
        "issue",
        "style",
        "tone",
        "forget",
        "recall",
        "reflect",
        "brief",
        "favorite",
        "favourite",
    ];
    let lower = text.to_lowercase();
    let w = words(&lower);
    if w.iter().any(|x| OPS.contains(x)) {
        return true;
    }
    category::CUES.iter().any(|(_, cues)| {
        cues.iter().filter(|c| !GENERIC.contains(c)).any(|cue| {
            if cue.contains(' ') {
                lower.contains(cue)
            } else {
                w.iter().any(|x| x.starts_with(cue))
            }
        })
    })
}

/// ", no X" after an instruction reads ", not X".
fn not_after_comma(text: &str) -> String {
    text.replace(", no ", ", not ")
}

/// The user's first person as "The user": an agent reading "I" takes it for itself.
fn third_person(text: &str) -> String {
    let pairs: &[(&str, &str)] = &[
        ("i would", "the user would"),
        ("i'd", "the user would"),
        ("i don't", "the user doesn't"),
        ("i do not", "the user does not"),
        ("i'm", "the user is"),
        ("i am", "the user is"),
        ("i prefer", "the user prefers"),
        ("i like", "the user likes"),
        ("i want", "the user wants"),
        ("i hate", "the user hates"),
        ("i love", "the user loves"),
        ("i need", "the user needs"),
        ("i always", "the user always"),
        ("i never", "the user never"),
        ("i only", "the user only"),
    ];
    let lower = text.to_lowercase();
    for (from, to) in pairs {
        if starts_with_phrase(&lower, from)
            && let Some(rest) = text.get(from.len()..)
        {
            return format!("{to}{rest}");
        }
    }
    // "I generally prefer …", "I really like …": an adverb, then a verb of liking.
    let w: Vec<&str> = text.split(' ').collect();
    if w.len() > 3 && w[0].eq_ignore_ascii_case("i") {
        let adverb = w[1].to_lowercase();
        let verb = w[2].to_lowercase();
        let adverbs = [
            "really",
            "generally",
            "usually",
            "strongly",
            "much",
            "definitely",
            "also",
            "just",
            "mostly",
            "always",
            "never",
            "still",
        ];
        let verbs = [
            "prefer", "like", "want", "need", "hate", "find", "expect", "dislike",
        ];
        if adverbs.contains(&adverb.as_str()) && verbs.contains(&verb.as_str()) {
            return format!("the user {adverb} {verb}s {}", w[3..].join(" "));
        }
    }
    text.to_string()
}

fn acronyms(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            let core: String = w.chars().filter(|c| c.is_alphanumeric()).collect();
            if core.chars().all(|c| c.is_ascii_lowercase())
                && ACRONYMS.contains(&core.as_str())
                && !matches!(core.as_str(), "id" | "pr" | "cd")
            {
                w.replace(&core, &core.to_uppercase())
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn capitalize(text: &str) -> String {
    let mut c = text.chars();
    match c.next() {
        Some(f) if f.is_lowercase() => f.to_uppercase().chain(c).collect(),
        Some(f) => std::iter::once(f).chain(c).collect(),
        None => String::new(),
    }
}

/// The MEMORY.md category a cleaned line belongs in, by its shape, then by its meaning: who
/// owns or does what is about people; an instruction (a sentence opening with a verb, or a
/// modal in its first clause) is a rule; a stated liking is a preference; else the section
/// whose exemplars are nearest ([`place::nearest`], ADR 101). `None` (a text of no known
/// token) leaves the observation's category, which the observer's cue words gave and which is
/// therefore only the last resort.
pub fn section(text: &str, _category: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    let w = words(&lower);
    let first = w.first().copied().unwrap_or("");
    let second = w.get(1).copied().unwrap_or("");
    let capital = text.chars().next().is_some_and(char::is_uppercase);
    // "Bo owns the billing service", "Ana and Bo maintain the API", "Ask Kim before …".
    let named = capital && !matches!(first, "the" | "a" | "an" | "this" | "our" | "we" | "it");
    let owns = w.iter().take(4).any(|x| {
        OWNERSHIP.contains(x) || matches!(*x, "maintain" | "own" | "lead" | "review" | "approve")
    }) || lower.contains(" is responsible for ")
        || lower.contains(" is on call")
        || lower.contains(" is the owner of ");
    // "Sam is the release manager", "Ana is our designer".
    let role = named
        && second == "is"
        && w.iter().skip(2).take(5).any(|x| ROLES.contains(x))
        && w.len() <= 10;
    // "Ask Kim before …": a person to ask, by name.
    let ask_someone = first == "ask"
        && text
            .split_whitespace()
            .nth(1)
            .is_some_and(|n| n.chars().next().is_some_and(char::is_uppercase));
    if (named && (owns || role) && !IMPERATIVES.contains(&first)) || ask_someone {
        return Some("people-relationships");
    }
    if first == "the" && second == "user" {
        return Some("preferences");
    }
    // By meaning: the section whose exemplars are nearest (ADR 101), after the shapes of a
    // sentence that say more than its words: a named person doing something, an instruction.
    let near = place::nearest(text, |s| s != place::LIFE);
    // A named subject is a person rather than a program ("Postgres runs on …") when the
    // meaning of the line is near people too: within `PEOPLE_SLACK` of the nearest section.
    if place::person_subject(text)
        && place::shortfall(text, "people-relationships").is_some_and(|d| d <= PEOPLE_SLACK)
    {
        return Some("people-relationships");
    }
    if IMPERATIVES.contains(&first) {
        return Some("rules-conventions");
    }
    // A modal in the first clause makes the line a rule; one in a later clause is a caveat of
    // a statement, which stays where its meaning puts it when that is operations.
    if place::is_directive(text) {
        let head = text.split([',', ';', ':']).next().unwrap_or(text);
        if place::is_directive(head) || near.is_none_or(|(s, _)| s != "operations") {
            return Some("rules-conventions");
        }
    }
    near.map(|(s, _)| s).or_else(|| {
        // No known token: the operations words still say where it belongs.
        (w.iter().any(|x| OPS_FACTS.contains(x))).then_some("operations")
    })
}

/// How much nearer another section may be than People, for a sentence shaped "Name verbs …" to
/// be placed with people (the built-in model's cosines between a line and the exemplars
/// spread over about 0.1 to 0.5).
const PEOPLE_SLACK: f64 = 0.1;

/// Roles people hold in a team.
const ROLES: &[&str] = &[
    "manager",
    "lead",
    "owner",
    "maintainer",
    "reviewer",
    "designer",
    "architect",
    "engineer",
    "admin",
    "administrator",
    "contact",
    "expert",
    "pm",
    "cto",
    "ceo",
    "on-call",
];

/// Verbs an instruction opens with.
const IMPERATIVES: &[&str] = &[
    "use", "avoid", "keep", "run", "write", "put", "make", "add", "prefer", "do", "check", "ask",
    "call", "name", "test", "commit", "push", "deploy", "release", "squash", "rebase", "document",
    "log", "store", "read", "respond", "reply", "answer", "stop", "start", "never", "always",
];

/// Words of facts about operating the software.
const OPS_FACTS: &[&str] = &[
    "ci",
    "pipeline",
    "pipelines",
    "runner",
    "runners",
    "cache",
    "caches",
    "cached",
    "deploy",
    "deploys",
    "deployed",
    "staging",
    "production",
    "prod",
    "cron",
    "backup",
    "backups",
    "server",
    "servers",
    "host",
    "hosts",
    "cluster",
    "workflow",
    "workflows",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_what_rules_can_clean() {
        let cases = [
            (
                "omfg use fucking rgb values in the themes, no rgb indices!",
                "Use RGB values in the themes, not RGB indices",
            ),
            (
                "i would only want e2e tests for AgentSession, anything else is shitty.",
                "The user would only want e2e tests for AgentSession",
            ),
            ("Bo owns the billing service", "Bo owns the billing service"),
            (
                "fucking hell, stop adding console.log everywhere",
                "Stop adding console.log everywhere",
            ),
            (
                "CI caches keyed on Cargo.lock",
                "CI caches keyed on Cargo.lock",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(line(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_no_line() {
        let cases = [
            (
                "the deploy token is [REDACTED:github-token] for CI",
                Unfit::Flaw(Flaw::Redacted),
            ),
            (
                "`npm run check` failed in /Users/me/src/app after changes",
                Unfit::Flaw(Flaw::HomePath),
            ),
            ("performance is crucial.", Unfit::NoSubject),
            ("don't overcomplicate", Unfit::NoSubject),
            (
                "you havne't read @packages/tui/tui-renderer.ts in full i suppose",
                Unfit::Remark,
            ),
            ("The fix is simple: use `queueMessage` here", Unfit::Remark),
            ("can't we read it from the settings?", Unfit::Remark),
            ("I love creating art!", Unfit::Personal),
            (
                "I also like the idea of a \"Someday\" folder for later",
                Unfit::Remark,
            ),
            ("Nope, never been on a sports team.", Unfit::Remark),
            (
                "still fixing the login test, will push tonight",
                Unfit::Remark,
            ),
            (
                "`go vet ./...` failed (exit 1: undefined: ledger.Round); it passed on a later run",
                Unfit::Dump,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(line(text), Err(want), "{text}");
        }
    }

    #[test]
    fn places_by_shape() {
        assert_eq!(
            section("Bo owns the billing service", "system-architecture"),
            Some("people-relationships")
        );
        assert_eq!(
            section("CI caches keyed on Cargo.lock", "projects"),
            Some("operations")
        );
        assert_eq!(
            section("Use RGB values in themes, not RGB indices", "projects"),
            Some("rules-conventions")
        );
        // A statement of where something is: placed by meaning, among the system's sections.
        assert!(matches!(
            section("The staging database lives on db2.internal", "operations"),
            Some("operations" | "system-architecture")
        ));
        // A named person doing something, by the shape of the sentence, not by its verb.
        assert_eq!(
            section("Amara signs off on every release of the app", "projects"),
            Some("people-relationships")
        );
    }

    #[test]
    fn quantities_slashes_and_things_that_run_are_not_the_work_or_people() {
        assert!(!names_the_work("See you at 3pm on the 2nd"));
        assert!(!names_the_work("Open and/or closed, 24/7"));
        assert!(names_the_work("Don't touch vendor/"));
        assert!(names_the_work("Configs live in etc/app.d"));
        assert_eq!(
            section("Postgres runs on db1.internal", "operations"),
            Some("operations")
        );
        assert_eq!(
            section("Ask before deleting files", "preferences"),
            Some("rules-conventions")
        );
        assert_eq!(
            section("Ask Kim before changing the schema", "system-architecture"),
            Some("people-relationships")
        );
        // A permission addressed to the agent is a rule; a guess about its past is not.
        assert_eq!(
            line("You can skip the e2e tests locally").as_deref(),
            Ok("You can skip the e2e tests locally")
        );
        assert_eq!(line("You must have run the old tests"), Err(Unfit::Remark));
    }

    #[test]
    fn non_ascii_openings_do_not_break_the_cleaning() {
        for text in [
            "İ'd rather use `rg`",
            "Ünicode file names in src/ are fine",
            "ß",
        ] {
            let _ = line(text);
        }
    }

    #[test]
    fn home_paths_are_folders_of_people_only() {
        assert_eq!(flaw("see /Users/ana/src"), Some(Flaw::HomePath));
        assert_eq!(flaw("C:\\Users\\ana\\repo"), Some(Flaw::HomePath));
        assert_eq!(flaw("the /home/ folder is mounted by NFS"), None);
        assert_eq!(flaw("api/users/list returns users"), None);
    }
}
