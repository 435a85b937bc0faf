//! What a sentence of a user's prompt says, read from the shape of its language, not from
//! words of any one transcript: a **rule** (a standing instruction), a **preference** (a
//! standing liking or value), a **correction** (the agent's current approach redirected), or
//! nothing worth keeping (requests, bug reports, questions, fragments).
//!
//! The shapes, in order:
//!
//! - A question (a `?`, or an interrogative opening) is never a rule or a preference; it may
//!   be a correction ("why do you …", "can't we …").
//! - **Rule**: a standing-time marker ("from now on", "in future", "going forward", "no more",
//!   "anymore", a clause opened by "whenever"/"every time") with a clause aimed at the agent
//!   (an imperative, or "you"/"we"); "always"/"never" opening a clause or applied to "you"/"we"
//!   ("never push", "you should never"), not describing a thing ("it never finishes" is a bug
//!   report); a negative imperative ("don't …", "do not …", "stop …ing", "avoid …") whose object
//!   is generic ("don't add notes") rather than one specific thing ("don't read the full
//!   file"); a verbless prohibition ("no debug prints!"); must/should applied to the agent or
//!   to a generic plural ("you must not …", "commit messages must …"), not to "this plan"; an
//!   imperative made standing by a contrast or an exclamation ("use hex colours, not palette
//!   numbers!") unless it names one specific thing or says "again"/"for now".
//! - **Preference**: the user's own liking ("I prefer", "I'd rather", "I (really) like X" but not
//!   "I like it", "I'd only want X", "I find X easier than Y") or a stated value ("performance
//!   is crucial": a bare noun said to be crucial, essential, paramount…).
//! - **Correction**: an opening that redirects ("no, …", "actually", "wait", "that's wrong",
//!   "why do you …", "how about …", "can't we …", "instead …"). Only corrections that carry
//!   their referent (a contrast, a path, an identifier, a command) are kept: "no, that's
//!   horrible" says nothing on its own.

/// What a sentence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    Rule,
    Preference,
    Correction,
}

/// A word of a sentence: lowercased and trimmed of punctuation, with what followed it.
#[derive(Debug, Clone)]
struct Token {
    word: String,
    /// The raw token ends a clause (`,`, `;`, `:`, `)`) or is a dash.
    ends_clause: bool,
    /// The raw token opens a parenthesis.
    opens: bool,
}

fn tokens(sentence: &str) -> Vec<Token> {
    sentence
        .split_whitespace()
        .map(|raw| {
            let raw = raw.replace('’', "'");
            let word = raw
                .trim_matches(|c: char| !(c.is_alphanumeric() || c == '\''))
                .trim_matches('\'')
                .to_lowercase();
            Token {
                ends_clause: raw.ends_with([',', ';', ':', ')'])
                    || matches!(raw.as_str(), "-" | "—" | "–"),
                opens: raw.starts_with('('),
                word,
            }
        })
        .filter(|t| !t.word.is_empty() || t.ends_clause)
        .collect()
}

/// Words that open a sentence without being its content ("ok, …", "also …", "please …").
#[rustfmt::skip]
const MARKERS: &[&str] = &[
    "ok", "okay", "alright", "allright", "so", "sooo", "soo", "and", "also", "btw", "please",
    "pls", "plz", "oh", "hmm", "hm", "well", "yes", "yeah", "yep", "right", "now", "but", "then",
    "like", "personally", "just", "again", "oops", "hey", "great", "thanks", "cool", "fine",
];

/// Openings that redirect the agent, kept apart from the content after them.
const REDIRECTS: &[&str] = &["no", "nope", "nah", "actually", "wait", "wrong", "instead"];

/// Words that open a question.
#[rustfmt::skip]
const ASKING: &[&str] = &[
    "why", "how", "what", "where", "when", "which", "who", "whom", "whose", "is", "are", "was",
    "were", "can", "could", "would", "will", "shall", "does", "did", "isn't", "aren't", "can't",
    "couldn't", "wouldn't", "won't", "didn't", "doesn't", "shouldn't", "any",
];

/// Closed-class words: a clause opened by one of these is not an imperative.
#[rustfmt::skip]
const FUNCTION: &[&str] = &[
    "i", "i'm", "i'd", "i'll", "i've", "im", "me", "my", "you", "you're", "your", "we", "we're",
    "we've", "we'll", "our", "us", "let's", "lets", "they", "their", "he", "she", "his", "her",
    "it", "it's", "its", "this", "that", "that's", "these", "those", "there", "there's", "here",
    "the", "a", "an", "what", "why", "how", "when", "where", "who", "which", "is", "are", "was",
    "were", "am", "be", "been", "being", "do", "does", "did", "can", "could", "would", "will",
    "shall", "should", "may", "might", "must", "has", "have", "had", "if", "because", "since",
    "as", "for", "of", "in", "on", "at", "to", "with", "by", "from", "into", "about", "after",
    "before", "and", "or", "but", "so", "not", "no", "yes", "any", "some", "all", "every", "each",
    "one", "same", "more", "most", "very", "only", "even", "still", "sounds", "looks", "seems",
    "maybe", "perhaps", "probably", "rest", "else", "nothing", "everything", "something",
    "anything", "wow", "yo", "jesus", "wtf", "lol", "good", "nice", "thank", "sure", "slight",
    "also", "too", "than", "then", "though", "although", "while", "until", "unless", "whether",
    "both", "either", "neither", "other", "another", "such", "much", "many", "few", "less",
    "least", "own", "ever", "again", "once", "twice", "please", "let",
];

/// A clause's second word that makes its first a subject, not a verb ("tests are failing").
#[rustfmt::skip]
const VERBISH: &[&str] = &[
    "is", "are", "was", "were", "isn't", "aren't", "wasn't", "weren't", "has", "have", "had",
    "hasn't", "haven't", "does", "doesn't", "do", "did", "didn't", "can", "can't", "could",
    "couldn't", "will", "won't", "would", "wouldn't", "should", "shouldn't", "must", "may",
    "might", "seems", "seem", "looks", "works", "worked", "fails", "failed", "keeps", "says",
    "said", "shows", "showed", "needs", "went", "got", "gets", "broke", "crashes", "returns",
];

/// Subjects and objects that point at one thing already in view.
#[rustfmt::skip]
const SPECIFIC: &[&str] = &[
    "it", "this", "that", "these", "those", "them", "there", "here",
];

/// Phrases that make an instruction outlast the task.
const STANDING: &[&[&str]] = &[
    &["from", "now", "on"],
    &["from", "here", "on"],
    &["in", "future"],
    &["in", "the", "future"],
    &["going", "forward"],
    &["next", "time"],
];

/// Phrases that make a prohibition standing ("don't touch it ever", "no more emojis"), but
/// also describe things ("it doesn't work anymore"): they count only in a prohibition.
const STANDING_IN_PROHIBITIONS: &[&[&str]] =
    &[&["anymore"], &["any", "more"], &["no", "more"], &["ever"]];

/// Verbs that, negated without a subject, report a state of mind ("don't know why",
/// "never mind", "don't worry") rather than forbid anything.
#[rustfmt::skip]
const NOT_INSTRUCTIONS: &[&str] = &[
    "worry", "bother", "mind", "know", "think", "understand", "care", "see", "get", "like", "want",
    "need", "remember", "recall",
];

/// Phrases that keep an instruction to the task at hand.
const ONE_OFF: &[&[&str]] = &[
    &["again"],
    &["this", "time"],
    &["for", "now"],
    &["right", "now"],
];

/// Nouns after "no" that make an interjection, not a prohibition ("no problem!").
#[rustfmt::skip]
const INTERJECTION: &[&str] = &[
    "problem", "problems", "worries", "idea", "luck", "way", "thanks", "clue", "doubt", "need",
];

/// Adjectives that make "X is …" a stated value of the user's.
#[rustfmt::skip]
const VALUED: &[&str] = &[
    "crucial", "critical", "essential", "paramount", "vital", "key", "non-negotiable", "mandatory",
    "top",
];

fn has(words: &[&str], phrase: &[&str]) -> bool {
    words.windows(phrase.len()).any(|w| w == phrase)
}

fn is_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_alphabetic() || c == '\'' || c == '-')
}

/// A generic plural noun ("files", "commits"), not "this" or "its".
fn plural(w: &str) -> bool {
    w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("'s") && is_word(w)
}

/// A clause opened by an imperative verb: a content word, not followed by a verb of its own.
fn imperative(c: &[&str]) -> bool {
    let Some(first) = c.first() else {
        return false;
    };
    // A verb in the third person ("works now") is a report, not an order.
    let third_person = first.ends_with('s') && !first.ends_with("ss") && !first.ends_with("us");
    is_word(first)
        && !FUNCTION.contains(first)
        && !first.ends_with("ing")
        && !first.ends_with("ed")
        && !third_person
        && !c.get(1).is_some_and(|s| VERBISH.contains(s))
}

/// The object after a verb names one thing in view: "it", "that", or "the/this … file"
/// (a singular head), as opposed to "notes", "the generated files" or nothing at all.
fn specific_object(rest: &[&str]) -> bool {
    if rest.iter().any(|w| SPECIFIC.contains(w))
        || matches!(rest.first(), Some(&("you" | "me" | "him" | "her" | "us")))
    {
        return true;
    }
    match rest.first() {
        Some(&("the" | "your" | "my" | "our")) => {
            // The head of the phrase: the last word before a preposition or the clause end.
            let head = rest[1..]
                .iter()
                .take_while(|w| !FUNCTION.contains(w))
                .last()
                .copied()
                .unwrap_or("");
            !plural(head)
        }
        _ => false,
    }
}

/// Splits the words into clauses at commas, semicolons, colons, dashes and parentheses.
fn clauses(toks: &[Token]) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = vec![Vec::new()];
    for t in toks {
        if t.opens && out.last().is_some_and(|c| !c.is_empty()) {
            out.push(Vec::new());
        }
        if !t.word.is_empty() {
            out.last_mut()
                .expect("one clause at least")
                .push(t.word.as_str());
        }
        if t.ends_clause && out.last().is_some_and(|c| !c.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|c| !c.is_empty());
    out
}

/// Drops the leading markers ("ok", "also", "please") and redirects ("no", "actually") of a
/// clause, saying whether a redirect was among them.
fn strip(c: &[&str]) -> (usize, bool) {
    let mut i = 0;
    let mut redirect = false;
    while let Some(w) = c.get(i) {
        if MARKERS.contains(w) {
            i += 1;
        } else if REDIRECTS.contains(w) && *w != "no" {
            redirect = true;
            i += 1;
        } else {
            break;
        }
    }
    (i, redirect)
}

/// What `sentence` says, if anything worth keeping.
pub fn classify(sentence: &str) -> Option<Said> {
    let toks = tokens(sentence);
    let all: Vec<&str> = toks
        .iter()
        .map(|t| t.word.as_str())
        .filter(|w| !w.is_empty())
        .collect();
    let cls = clauses(&toks);
    let first = cls.first()?;
    let (lead, mut redirect) = strip(first);
    let opening = &first[lead..];
    // "no, …" / "no that's …" redirects; "no debug prints!" forbids.
    let no_comma = toks
        .iter()
        .position(|t| t.word == "no")
        .is_some_and(|i| toks[i].ends_clause || i + 1 == toks.len());
    let bare_no = opening.first() == Some(&"no");
    let no_redirects = bare_no
        && (no_comma
            || opening
                .get(1)
                .is_none_or(|w| FUNCTION.contains(w) || REDIRECTS.contains(w)));
    if no_redirects {
        redirect = true;
    }
    let question = sentence.trim_end_matches([')', '"', '\'']).ends_with('?')
        || opening
            .first()
            .is_some_and(|w| ASKING.contains(w) || (*w == "do" && opening.get(1) != Some(&"not")));
    let standing = STANDING.iter().any(|p| has(&all, p));
    let forbids_for_good = standing || STANDING_IN_PROHIBITIONS.iter().any(|p| has(&all, p));
    let one_off = ONE_OFF.iter().any(|p| has(&all, p));
    let exclaims = sentence.trim_end().ends_with('!');
    let contrast = has(&all, &["instead", "of"])
        || has(&all, &["rather", "than"])
        || sentence.contains(", not ")
        || sentence.contains(" over ");

    if !question
        && let Some(kind) = rule_or_preference(
            &cls,
            standing,
            forbids_for_good,
            one_off,
            exclaims,
            contrast,
        )
    {
        return Some(kind);
    }
    let lower = sentence.to_lowercase().replace('’', "'");
    let redirects = redirect
        || [
            "that's wrong",
            "that is wrong",
            "that's not",
            "this is not",
            "that's horrible",
            "bad idea",
            "not like that",
            "doesn't look right",
            "not right",
            "why do you",
            "why are you",
            "why did you",
            "why would you",
            "why would we",
            "you haven't",
            "you havne't",
            "you didn't",
            "you forgot",
            "you missed",
            "can't we",
            "how about",
            "steering",
            "revert",
        ]
        .iter()
        .any(|p| lower.contains(p));
    (redirects && carries_referent(sentence, contrast)).then_some(Said::Correction)
}

fn rule_or_preference(
    cls: &[Vec<&str>],
    standing: bool,
    forbids_for_good: bool,
    one_off: bool,
    exclaims: bool,
    contrast: bool,
) -> Option<Said> {
    // Some clause is aimed at the agent: an imperative, or "you"/"we" as its subject.
    let aimed = |c: &[&str]| {
        let (i, _) = strip(c);
        let c = &c[i..];
        imperative(c)
            || matches!(
                c.first(),
                Some(&("you" | "we" | "let's" | "lets" | "always" | "never" | "don't" | "dont"))
            )
            || c.starts_with(&["do", "not"])
    };
    let opens_whenever = cls.first().is_some_and(|c| {
        let (i, _) = strip(c);
        let c = &c[i..];
        c.first() == Some(&"whenever")
            || c.starts_with(&["every", "time"])
            || c.starts_with(&["each", "time"])
    });
    if (standing || opens_whenever) && !one_off && cls.iter().any(|c| aimed(c)) {
        return Some(Said::Rule);
    }
    for c in cls {
        let (i, _) = strip(c);
        let c = &c[i..];
        let Some(&head) = c.first() else { continue };
        // "always …" / "never …" as an instruction, or applied to you/we.
        for (k, w) in c.iter().enumerate() {
            if matches!(*w, "always" | "never") {
                let before = &c[..k];
                // What follows must be a verb in its base form: "never use", not "never
                // mind", "always the same", "we never merged".
                let next = c.get(k + 1).copied().unwrap_or("");
                // "…, always." as a clause of its own stands for the whole sentence.
                let alone = c.len() == 1;
                let verb = alone
                    || next == "be"
                    || (is_word(next)
                        && !FUNCTION.contains(&next)
                        && !NOT_INSTRUCTIONS.contains(&next)
                        && !next.ends_with("ed"));
                if !verb {
                    continue;
                }
                let to_agent = before.iter().all(|b| {
                    matches!(
                        *b,
                        "you"
                            | "we"
                            | "should"
                            | "must"
                            | "will"
                            | "to"
                            | "please"
                            | "i"
                            | "want"
                            | "you'll"
                            | "we'll"
                    )
                }) && (!before.contains(&"i") || before.starts_with(&["i", "want"]));
                if to_agent {
                    return Some(Said::Rule);
                }
            }
        }
        // Negative imperatives: "don't X", "do not X", "stop Xing", "avoid X".
        let neg = match c {
            ["don't" | "dont" | "never", verb, rest @ ..] if is_word(verb) => Some(rest),
            ["do", "not", verb, rest @ ..] if is_word(verb) => Some(rest),
            ["please", "don't", _, rest @ ..] => Some(rest),
            ["stop" | "avoid", verb, rest @ ..] if verb.ends_with("ing") => Some(rest),
            ["you", "must" | "mustn't" | "shouldn't", rest @ ..]
            | ["we", "must" | "mustn't" | "shouldn't", rest @ ..] => Some(rest),
            ["you" | "we", "should", "not", rest @ ..] => Some(rest),
            _ => None,
        };
        if let Some(rest) = neg {
            let idle = c.iter().take(3).any(|w| NOT_INSTRUCTIONS.contains(w));
            if (forbids_for_good || !specific_object(rest)) && !one_off && !idle {
                return Some(Said::Rule);
            }
            continue;
        }
        // "no debug prints!", "no more emojis": a verbless prohibition, said with force.
        if head == "no"
            && c.len() >= 3
            && c.get(1).is_some_and(|w| {
                *w == "more" || (!FUNCTION.contains(w) && !INTERJECTION.contains(w))
            })
            && !c.iter().any(|w| VERBISH.contains(w))
            && (exclaims || forbids_for_good)
        {
            return Some(Said::Rule);
        }
        // must/should applied to the agent or to a generic plural.
        if let Some(m) = c.iter().position(|w| {
            matches!(
                *w,
                "must" | "mustn't" | "should" | "shouldn't" | "need" | "needs"
            )
        }) {
            let subject = &c[..m];
            let agent = matches!(subject, ["you"] | ["we"]);
            let modal = c[m];
            let every = matches!(subject.first(), Some(&("all" | "every" | "each")));
            let generic = !subject.is_empty()
                && !subject
                    .iter()
                    .any(|w| SPECIFIC.contains(w) || matches!(*w, "i" | "the"))
                && (every
                    || (subject.last().is_some_and(|w| plural(w)) && !modal.starts_with("need")));
            let strong =
                matches!(modal, "must" | "mustn't" | "shouldn't") || c.get(m + 1) == Some(&"not");
            if (agent && strong) || generic {
                return Some(Said::Rule);
            }
        }
        // Imperatives made standing by a contrast ("use X, not Y"), or an exclamation about
        // a kind of thing ("use hex colours!"), not a request to the user ("tell me …!").
        let forceful = exclaims && c.iter().any(|w| plural(w)) && !c.contains(&"me");
        if imperative(c)
            && c.len() >= 2
            && (contrast || forceful)
            && !one_off
            && !specific_object(&c[1..])
        {
            return Some(Said::Rule);
        }
        // Preferences.
        if head == "prefer" {
            return Some(Said::Preference);
        }
        if head == "i" || head == "i'd" {
            let mut k = 1;
            while c.get(k).is_some_and(|w| {
                matches!(
                    *w,
                    "really"
                        | "also"
                        | "generally"
                        | "usually"
                        | "personally"
                        | "much"
                        | "do"
                        | "don't"
                        | "definitely"
                        | "always"
                        | "would"
                        | "only"
                        | "just"
                        | "strongly"
                )
            }) {
                k += 1;
            }
            let verb = c.get(k).copied().unwrap_or("");
            let object = c.get(k + 1).copied().unwrap_or("");
            let only = c[1..k].contains(&"only");
            let would = c[1..k].contains(&"would") || head == "i'd";
            if verb.starts_with("prefer")
                || verb == "rather"
                || (matches!(verb, "like" | "love" | "hate" | "dislike" | "enjoy")
                    && !would
                    && !object.is_empty()
                    && !specific_object(&c[k + 1..]))
                || (only && matches!(verb, "want" | "use" | "like"))
                || (verb == "find" && c.contains(&"than"))
            {
                return Some(Said::Preference);
            }
        }
        // A comparison the user makes for themself: "X matters more to me than Y".
        if has(c, &["to", "me"]) && c.contains(&"than") {
            return Some(Said::Preference);
        }
        // A stated value: "performance is crucial".
        if let Some(k) = c.iter().position(|w| matches!(*w, "is" | "are")) {
            let subject = &c[..k];
            if !subject.is_empty()
                && subject.len() <= 3
                && !subject.iter().any(|w| FUNCTION.contains(w))
                && c.get(k + 1).is_some_and(|w| VALUED.contains(w))
            {
                return Some(Said::Preference);
            }
        }
    }
    None
}

/// A correction names what it is about: a contrast, a path, an identifier or a command.
fn carries_referent(sentence: &str, contrast: bool) -> bool {
    contrast
        || sentence.contains(" not ")
        || super::gate::cites_something(sentence)
        || sentence.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            let camel = w.chars().next().is_some_and(char::is_lowercase)
                && w.chars().any(char::is_uppercase);
            camel || (w.contains('_') && w.len() > 3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        use Said::*;
        let cases: &[(&str, Option<Said>)] = &[
            ("never push to main directly", Some(Rule)),
            ("no debug prints!", Some(Rule)),
            ("use hex colours, not palette numbers!", Some(Rule)),
            ("From now on, run the linter first.", Some(Rule)),
            (
                "whenever you touch the schema, bump the version",
                Some(Rule),
            ),
            ("don't add comments to generated code", Some(Rule)),
            ("do not read the whole log file!", None),
            ("this plan must be written so anyone can resume it.", None),
            ("commit messages must be in English", Some(Rule)),
            ("it never finishes when I run it", None),
            ("the dropdown always shows the old value", None),
            (
                "make sure the new endpoint is also used by the admin page",
                None,
            ),
            ("the second option won't do", None),
            ("X doesn't seem to work", None),
            ("no problem!", None),
            ("should we always use pnpm?", None),
            ("I prefer tabs over spaces", Some(Preference)),
            ("I like it!", None),
            ("I'd like you to write the tests now", None),
            ("reliability is essential here.", Some(Preference)),
            ("no, that's horrible.", None),
            (
                "no, the config lives in ~/.config/app, not in the repo",
                Some(Correction),
            ),
            (
                "actually, use the existing retryFetch helper",
                Some(Correction),
            ),
            ("fix the typo in the README", None),
            ("run the tests again!", None),
            ("the tests need fixing", None),
            ("users need to log in again after the upgrade", None),
            ("Great job!", None),
            ("Awesome, works now!", None),
            ("Let me know when the builds are done!", None),
            ("Please check the logs and tell me what's wrong!", None),
            ("Don't worry, I'll handle the merge.", None),
            ("don't know why it fails on CI", None),
            ("never mind, it works", None),
            ("Always the same error.", None),
            ("we never merged that branch", None),
            ("no tests were run", None),
            ("I love you", None),
            ("it doesn't work anymore, delete it", None),
            ("no more emojis in commit messages", Some(Rule)),
            ("Do not touch the vendored folder ever.", Some(Rule)),
            ("always be explicit about units", Some(Rule)),
            ("all handlers need a timeout", Some(Rule)),
        ];
        for (s, want) in cases {
            assert_eq!(classify(s), *want, "{s}");
        }
    }
}
