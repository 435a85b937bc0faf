//! Secret redaction: finding API keys, tokens, private keys and passwords in text, and
//! replacing them with `[REDACTED:<kind>]`.
//!
//! This module is pure: it takes text and gives back text or [`Finding`]s. It owns the
//! built-in rules (one per secret shape, named by a stable `kind` such as `openai-key`); the
//! `[redact] patterns` of `cairn.toml` are added on top with [`Redactor::new`]. It does not
//! decide where redaction happens (writers call [`Redactor::redact`] before anything reaches
//! the repository; the pre-commit hook calls [`Redactor::findings`] on staged blobs).
//!
//! A token with a recognisable shape (`ghp_…`, `sk-ant-api03-…`, a JWT, a private key block)
//! is replaced whole. A secret known only by its name (`password=…`, `"api_key": "…"`,
//! `Authorization: Bearer …`, `https://user:…@host`) keeps its name and loses only its value:
//! `password=hunter2secret` becomes `password=[REDACTED:password]`. A value that looks like a
//! placeholder or code (`${TOKEN}`, `os.environ.get`, `None`, a value without a digit) is not a
//! secret, so prose and source code come back unchanged.
//!
//! Speed: every rule is one alternative of a single regex, searched once over the text by the
//! regex crate's lazy DFA; capture groups are resolved only inside each match. A literal
//! prefilter (the prefixes and names the rules need) skips the search for text that holds none
//! of them, returning it borrowed.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input, meta};

mod judge;

use judge::{Check, Cli};

/// A `[redact]` pattern that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pattern is not a valid regular expression, or it matches the empty string.
    #[error("pattern {pattern:?} is not usable: {reason}")]
    BadPattern { pattern: String, reason: String },
}

impl From<Error> for crate::error::Error {
    fn from(err: Error) -> Self {
        crate::error::Error::new(crate::error::Kind::Config, format!("[redact] {err}"))
            .with_fix("correct or remove it under [redact] patterns in cairn.toml")
    }
}

/// The kind reported for a match of a `[redact]` pattern from `cairn.toml`.
pub const CUSTOM_KIND: &str = "custom";

/// A secret found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What it is: a built-in kind (`github-token`, `password`, …) or [`CUSTOM_KIND`].
    pub kind: &'static str,
    /// The 1-based line the secret starts on.
    pub line: usize,
    /// Byte offset where the redacted span starts (the value only, for `name=value` shapes).
    pub start: usize,
    /// Byte offset just past the redacted span.
    pub end: usize,
}

struct Rule {
    kind: &'static str,
    /// `\b` is rewritten to the ASCII word boundary, so the DFA never gives up on non-ASCII
    /// text. The first capture group, if any, is the value to redact; the rest of the match is
    /// a name that stays.
    pattern: &'static str,
    check: Check,
}

const fn rule(kind: &'static str, pattern: &'static str, check: Check) -> Rule {
    Rule {
        kind,
        pattern,
        check,
    }
}

/// The built-in rules. Order matters: where two rules match at the same place, the earlier
/// wins, so specific shapes come before generic ones.
const RULES: &[Rule] = &[
    rule(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=\s:,-]|\\[nr])*)",
        Check::Shape,
    ),
    rule(
        "anthropic-key",
        r"\bsk-ant-(?:api|admin|oat|ort)\d\d-[A-Za-z0-9_-]{32,}",
        Check::Shape,
    ),
    rule(
        "openai-key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{32,})",
        Check::Shape,
    ),
    rule(
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})",
        Check::Shape,
    ),
    rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", Check::Shape),
    rule(
        "aws-access-key-id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        Check::Shape,
    ),
    rule(
        "slack-webhook",
        r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
        Check::Shape,
    ),
    rule(
        "slack-token",
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        Check::Shape,
    ),
    rule("google-api-key", r"\bAIza[A-Za-z0-9_-]{35}", Check::Shape),
    rule(
        "google-oauth-secret",
        r"\bGOCSPX-[A-Za-z0-9_-]{28}",
        Check::Shape,
    ),
    rule(
        "stripe-key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}",
        Check::Shape,
    ),
    rule(
        "stripe-webhook-secret",
        r"\bwhsec_[A-Za-z0-9+/]{32,}",
        Check::Shape,
    ),
    rule("twilio-api-key", r"\bSK[0-9a-f]{32}\b", Check::Shape),
    rule(
        "sendgrid-key",
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
        Check::Shape,
    ),
    rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", Check::Shape),
    rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", Check::Shape),
    rule(
        "huggingface-token",
        r"\bhf_[A-Za-z0-9]{34,}\b",
        Check::Shape,
    ),
    rule(
        "discord-bot-token",
        r"\b(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9_-]{21,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b",
        Check::Shape,
    ),
    rule("mailgun-key", r"\bkey-[0-9a-f]{32}\b", Check::Shape),
    rule(
        "digitalocean-token",
        r"\bdo[opr]_v1_[0-9a-f]{64}\b",
        Check::Shape,
    ),
    rule(
        "shopify-token",
        r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b",
        Check::Shape,
    ),
    rule(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        Check::Shape,
    ),
    rule(
        "url-password",
        r#"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@"'<>\\]*:([^\s/?#@"'<>\\]+)@"#,
        Check::Shape,
    ),
    rule(
        "basic-auth",
        r#"(?i:authorization)\\?["']?[ \t]*[:=][ \t]*\\?["']?(?i:basic)[ \t]+([A-Za-z0-9+/]{12,}={0,2})"#,
        Check::Shape,
    ),
    rule(
        "bearer-token",
        r"\b(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)",
        Check::Digit,
    ),
    rule(
        "aws-secret-key",
        r#"(?i:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key)\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["']?([A-Za-z0-9/+]{40,})"#,
        Check::Shape,
    ),
    rule("password", FLAG_PASSWORD, Check::Flag),
    rule("password", OPENSSL_PASS, Check::Flag),
    rule("password", HTPASSWD_NO_FILE, Check::Flag),
    rule("password", HTPASSWD, Check::Flag),
    rule("password", SHORT_P, Check::Cli(Cli::P)),
    rule("password", SHORT_A, Check::Cli(Cli::A)),
    rule("password", CURL_USER, Check::Cli(Cli::User)),
    rule("password", SAID, Check::Said),
    rule("password", SAID_WORD, Check::SaidWord),
    rule("password", ASSIGNED_PASSWORD, Check::Assigned),
    rule("password", ASSIGNED_PASS, Check::Assigned),
    rule("secret", ASSIGNED_SECRET, Check::Assigned),
    rule("api-key", ASSIGNED_API_KEY, Check::Assigned),
    rule("token", ASSIGNED_TOKEN, Check::Assigned),
];

// A command line's value: double-quoted (also inside a JSON string, `\"…\"`), single-quoted,
// or bare up to a blank or a shell operator.
macro_rules! cli_value {
    () => {
        r#"(?:\\?"([^"\\\n]{1,200})\\?"|'([^'\n]{1,200})'|([^\s"'\\`;|&<>(){}\[\],]+))"#
    };
}
// What may come before a flag: a line's start, a blank, a quote or an opening parenthesis.
macro_rules! flag_start {
    () => {
        r#"(?m:^|[\s"'`(])"#
    };
}
/// `--password X`, `--password=X`, `--db-password X`, `--passwd X` (not `--password-file`,
/// `--password-stdin`, nor `--password` alone).
const FLAG_PASSWORD: &str = concat!(
    flag_start!(),
    r"--(?:[A-Za-z0-9]+[-_])*(?i:pass(?:word|wd|phrase))(?:[ \t]*=[ \t]*|[ \t]+)",
    cli_value!()
);
/// openssl's `-pass pass:X`, `-passin pass:X`, `-passout pass:X` (`env:` and `file:` name
/// where the password is).
const OPENSSL_PASS: &str = concat!(
    flag_start!(),
    r#"-pass(?:in|out)?[ \t]+\\?["']?pass:"#,
    cli_value!()
);
// htpasswd's flags (`-b`, `-B`, `-C 10`…) before its arguments.
macro_rules! htpasswd_flags {
    () => {
        r"(?:[ \t]+-[A-Za-z]+(?:[ \t]+[0-9]+)?)*"
    };
}
/// `htpasswd -nb USER X`: no file, the password is the second argument.
const HTPASSWD_NO_FILE: &str = concat!(
    r"(?:\\[nrt]|\b)htpasswd",
    htpasswd_flags!(),
    r"[ \t]+-[A-Za-z]*(?:n[A-Za-z]*b|b[A-Za-z]*n)[A-Za-z]*",
    htpasswd_flags!(),
    r"[ \t]+[^\s-]\S*[ \t]+",
    cli_value!()
);
/// `htpasswd -b FILE USER X`.
const HTPASSWD: &str = concat!(
    r"(?:\\[nrt]|\b)htpasswd",
    htpasswd_flags!(),
    r"[ \t]+-[A-Za-z]*b[A-Za-z]*",
    htpasswd_flags!(),
    r"[ \t]+[^\s-]\S*[ \t]+[^\s-]\S*[ \t]+",
    cli_value!()
);
/// `-pX` (mysql, mariadb, sshpass) and `-p X` (sshpass): which command runs is judged by
/// [`judge`].
const SHORT_P: &str = concat!(flag_start!(), r"-p[ \t]*", cli_value!());
/// `-a X` (redis-cli).
const SHORT_A: &str = concat!(flag_start!(), r"-a[ \t]*", cli_value!());
/// `-u USER:X`, `--user USER:X`, `--user=USER:X` (curl).
const CURL_USER: &str = concat!(
    flag_start!(),
    r#"(?:-u[ \t]*|--user(?:[ \t]+|=))\\?["']?[^\s:"'\\]*:([^\s"'\\`;|&<>(){}\[\],]+)"#
);
// "the password is" in prose. A word's start may follow a JSON string's `\n` escape, here
// and in the other rules that begin with a word.
macro_rules! said {
    () => {
        r"(?:\\[nrt]|\b)(?i:password|passphrase|passwd|passcode|pwd)[ \t]+(?i:is|was)"
    };
}
// A said value in quotes or backticks.
macro_rules! said_quoted {
    () => {
        r#"\\?"([^"\\\n]{1,200})\\?"|'([^'\n]{1,200})'|`([^`\n]{1,200})`"#
    };
}
/// "the passphrase is: correct horse battery staple": after a colon, the rest of the
/// sentence (to a line's end, a sentence's end, or the end of a JSON string).
const SAID: &str = concat!(
    said!(),
    r"[ \t]*:[ \t]*(?:",
    said_quoted!(),
    r#"|([^\s"'\\`](?:[^\n"\\`]{0,120}?[^\s"'\\`.,;!?])?)(?:[.!?,;]+(?:[ \t]|(?m:$))|[ \t]*(?m:$)|[ \t]*\\[nr]|[ \t]*\\?"))"#
);
/// "the password is hunter2", "the password was `x`": one word, or a quoted value.
const SAID_WORD: &str = concat!(
    said!(),
    r"[ \t]+(?:",
    said_quoted!(),
    r#"|([^\s"'\\`]+?)(?:[.,;:!?)]*(?:\s|\\|"|\z)))"#
);

// `name = value` shapes: a name holding the keyword (a prefix like `DB_` or `client_`, and a
// suffix after `_`, `-`, `.`, a digit or a capital, as in `PASSWORD_FILE` or `tokenUrl`, are
// part of it: [`judge`] reads the whole name), then `=`, `:`, `:=` or `=>`, then a value that
// is double-quoted (also inside a JSON string, `\"…\"`; blanks allowed), single-quoted (no
// blanks: Rust's lifetimes are quotes too), or bare up to a blank or punctuation.
macro_rules! assignment {
    () => {
        r#"\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*(?:\\?"([^"\\\n]{3,200})\\?"|'([^'\\\s]{3,200})'|([^\s"'\\,;&(){}\[\]<>`]{3,}))"#
    };
}
macro_rules! assigned {
    ($names:literal) => {
        concat!(
            r"(?i:",
            $names,
            r")(?:[sS]?(?:[_.-][A-Za-z0-9_.-]*|[0-9A-Z][A-Za-z0-9_.-]*))?",
            assignment!()
        )
    };
}
const ASSIGNED_PASSWORD: &str = assigned!("password|passwd|passphrase");
/// `DB_PASS=…`, `SMTP_PASS_2=…`: `PASS` as a word of an environment name.
const ASSIGNED_PASS: &str = concat!(
    r"(?:\\[nrt]|\b)(?:[A-Z0-9]+_)*PASS(?:_[A-Z0-9]+)*",
    assignment!()
);
const ASSIGNED_SECRET: &str = assigned!("secret");
const ASSIGNED_API_KEY: &str = assigned!("api[_-]?key|access[_-]?key");
const ASSIGNED_TOKEN: &str = assigned!("token");

/// Text holding none of these cannot match a built-in rule, so it is not searched. Every rule
/// needs one of them (the names of `name = value` rules in any case); a unit test checks that
/// each corpus line holds one.
const NEEDLES: &[&str] = &[
    "-----BEGIN",
    "sk-",
    "sk_",
    "rk_",
    "gh",
    "github_pat_",
    "glpat-",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "xox",
    "AIza",
    "GOCSPX-",
    "whsec_",
    "SK",
    "SG.",
    "npm_",
    "pypi-",
    "hf_",
    "key-",
    "_v1_",
    "shp",
    "eyJ",
    "://",
    // Discord bot tokens begin with the base64 of a user id's first digit.
    "MT",
    "Mj",
    "Mz",
    "ND",
    "NT",
    "Nj",
    "Nz",
    "OD",
    "OT",
    // The commands whose short flags carry a password, and openssl's `pass:`.
    "mysql",
    "mariadb",
    "mycli",
    "sshpass",
    "redis-cli",
    "curl",
    "htpasswd",
    "pass:",
    "PASS",
];
const NAME_NEEDLES: &str = "bearer|basic|password|passwd|passphrase|passcode|pwd|secret|token|api_?key|api-key|access_?key|access-key";

/// Literals one of which every rule's match holds, except the rules checked by shape in
/// [`may_hold_secret`] (URL passwords, Twilio keys, Discord tokens, `name = value`).
const CHEAP_LITERALS: &[&str] = &[
    "-----BEGIN",
    "sk-",
    "sk_",
    "rk_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "xox",
    "hooks.slack.com",
    "AIza",
    "GOCSPX-",
    "whsec_",
    "SG.",
    "npm_",
    "pypi-",
    "hf_",
    "key-",
    "_v1_",
    "shp",
    "eyJ",
];

/// The names of the `name = value` rules, lower case, every spelling the rules allow.
const ASSIGNED_NAMES: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secret_key",
    "secret-key",
    "secretkey",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
];

/// Whether `text` holds anything a built-in rule could match, by plain byte scans: no regex
/// is compiled. False means the built-in redactor would return `text` unchanged (a superset
/// of the rules, checked against the corpus by a test): the literal every token shape holds,
/// `://` with an `@` (a URL password), `SK` and 32 hex digits (Twilio), a run of 58 token
/// characters (a Discord token's shortest), `authorization`, `bearer` before a blank, a
/// name of a `name = value` rule followed, past its suffix and an optional backslash, quote and
/// blanks, by `:` or `=`, "password is", `--password`, or a command whose short flag carries a
/// password (`mysql` and `-p`, `curl` and `-u`…).
pub fn may_hold_secret(text: &str) -> bool {
    if CHEAP_LITERALS.iter().any(|n| text.contains(n)) {
        return true;
    }
    if text.contains("://") && text.contains('@') {
        return true;
    }
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices("SK") {
        if bytes
            .get(i + 2..i + 34)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
        {
            return true;
        }
    }
    let mut run = 0;
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.') {
            run += 1;
            if run >= 58 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("authorization") {
        return true;
    }
    let after = |name: &str, ok: &dyn Fn(&[u8]) -> bool| {
        lower
            .match_indices(name)
            .any(|(i, _)| ok(&lower.as_bytes()[i + name.len()..]))
    };
    if after("bearer", &|rest| matches!(rest.first(), Some(b' ' | b'\t'))) {
        return true;
    }
    // A name's suffix (`_FILE`, `Url`, `s`), then an optional backslash, quote and blanks,
    // then `:` or `=`.
    let assigned = |rest: &[u8]| {
        let mut k = 0;
        while rest
            .get(k)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            k += 1;
        }
        if rest.get(k) == Some(&b'\\') {
            k += 1;
        }
        if matches!(rest.get(k), Some(b'"' | b'\'')) {
            k += 1;
        }
        while matches!(rest.get(k), Some(b' ' | b'\t')) {
            k += 1;
        }
        matches!(rest.get(k), Some(b':' | b'='))
    };
    if ASSIGNED_NAMES.iter().any(|name| after(name, &assigned)) {
        return true;
    }
    if text
        .match_indices("PASS")
        .any(|(i, _)| assigned(&bytes[i + 4..]))
    {
        return true;
    }
    // "the password is …", and `--password …`, `--db-passwd=…`.
    let said = |rest: &[u8]| {
        let blanks = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        blanks > 0 && (rest[blanks..].starts_with(b"is") || rest[blanks..].starts_with(b"was"))
    };
    for name in ["password", "passwd", "passphrase", "passcode", "pwd"] {
        if after(name, &said) {
            return true;
        }
    }
    for name in ["password", "passwd", "passphrase"] {
        if lower
            .match_indices(name)
            .any(|(i, _)| i > 0 && lower.as_bytes()[i - 1] == b'-')
        {
            return true;
        }
    }
    // The short flags of the commands that take a password there.
    let flagged = |command: &str, flags: &[&str]| {
        text.contains(command) && flags.iter().any(|f| text.contains(f))
    };
    flagged("mysql", &["-p"])
        || flagged("mariadb", &["-p"])
        || flagged("mycli", &["-p"])
        || flagged("sshpass", &["-p"])
        || flagged("redis-cli", &["-a"])
        || flagged("curl", &["-u", "--user"])
        || text.contains("htpasswd")
        || text.contains("pass:")
}

/// `text` redacted with the built-in rules plus `extra`, compiling nothing when `extra` is
/// empty and [`may_hold_secret`] says no rule could match: the one-line writers (slog,
/// remember) stay as fast as they were.
pub fn redact_one<'a>(extra: &[String], text: &'a str) -> Result<Cow<'a, str>, Error> {
    if extra.is_empty() && !may_hold_secret(text) {
        return Ok(Cow::Borrowed(text));
    }
    let redactor = Redactor::configured(extra)?;
    Ok(Cow::Owned(redactor.redact(text).into_owned()))
}

/// One alternative of the combined regex: one rule.
#[derive(Clone)]
struct Alt {
    kind: &'static str,
    check: Check,
    /// The rule's pattern.
    source: String,
    /// The rule alone, with its groups, compiled when a match needs it: which rule matched,
    /// and where its value is.
    own: OnceLock<meta::Regex>,
    /// How many groups the alternative holds inside it.
    inner: usize,
    /// Whether the inner groups are values to redact (built-in rules), or a custom pattern's
    /// own groups (the whole match is redacted).
    value_groups: bool,
}

impl Alt {
    fn own(&self) -> &meta::Regex {
        self.own.get_or_init(|| {
            meta::Regex::builder()
                .configure(meta::Regex::config().nfa_size_limit(Some(64 << 20)))
                .build(&self.source)
                .expect("a rule that compiled in the combined regex compiles alone")
        })
    }

    /// The rule's match anchored at `start` (of the whole text), with its groups.
    fn captures_at(&self, text: &str, start: usize) -> Option<Captures> {
        let re = self.own();
        let mut caps = re.create_captures();
        re.search_captures(
            &Input::new(text).range(start..).anchored(Anchored::Yes),
            &mut caps,
        );
        caps.is_match().then_some(caps)
    }
}

/// Finds and redacts secrets: the built-in rules plus any extra patterns.
///
/// Every rule is one pattern of a single regex compiled without capture groups: a search's
/// memory holds two slots a pattern and state, not two for each of the rules' hundred groups
/// (the regex engine's slot table was 176 MB of an import's peak). The pattern a match came
/// from names its rule (patterns are preferred in order, as the alternatives of one
/// alternation are); its value's group is then read by that rule's own regex, anchored where
/// the match starts.
#[derive(Clone)]
pub struct Redactor {
    combined: meta::Regex,
    alts: Vec<Alt>,
    /// `None` when extra patterns are configured: they may match anything.
    prefilter: Option<Regex>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.alts.len())
            .finish()
    }
}

fn ascii_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

impl Redactor {
    /// The built-in rules plus `extra`, regular expressions from `cairn.toml` `[redact]
    /// patterns` (whose whole match is redacted as [`CUSTOM_KIND`]). An extra pattern that does
    /// not compile, or that matches the empty string, is an error naming it.
    pub fn new(extra: &[String]) -> Result<Redactor, Error> {
        let mut alts = Vec::new();
        let mut sources = Vec::new();
        let builtins = RULES
            .iter()
            .map(|r| (r.kind, ascii_boundaries(r.pattern), r.check, true));
        for pattern in extra {
            let re = Regex::new(pattern).map_err(|e| Error::BadPattern {
                pattern: pattern.clone(),
                reason: e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string(),
            })?;
            if re.is_match("") {
                return Err(Error::BadPattern {
                    pattern: pattern.clone(),
                    reason: "it matches the empty string".to_string(),
                });
            }
        }
        let extras = extra
            .iter()
            .map(|p| (CUSTOM_KIND, p.clone(), Check::Shape, false));
        for (kind, source, check, value_groups) in builtins.chain(extras) {
            // Only the number of groups is needed here: parsing finds it without compiling
            // each rule (30 compiles cost ~7 ms, on every process that redacts).
            let inner = regex_syntax::Parser::new()
                .parse(&source)
                .map_err(|e| Error::BadPattern {
                    pattern: source.clone(),
                    reason: e.to_string(),
                })?
                .properties()
                .explicit_captures_len();
            sources.push(format!("(?:{source})"));
            alts.push(Alt {
                kind,
                check,
                source,
                own: OnceLock::new(),
                inner,
                value_groups,
            });
        }
        let combined = meta::Regex::builder()
            .configure(
                meta::Regex::config()
                    .which_captures(WhichCaptures::Implicit)
                    .nfa_size_limit(Some(64 << 20))
                    .hybrid_cache_capacity(16 << 20),
            )
            .build_many(&sources)
            .map_err(|e| Error::BadPattern {
                pattern: extra.join(" | "),
                reason: format!("the patterns cannot be combined: {e}"),
            })?;
        let prefilter = if extra.is_empty() {
            let needles: Vec<String> = NEEDLES.iter().map(|n| regex::escape(n)).collect();
            let source = format!("{}|(?i:{NAME_NEEDLES})", needles.join("|"));
            Some(Regex::new(&source).expect("the needles are escaped literals"))
        } else {
            None
        };
        Ok(Redactor {
            combined,
            alts,
            prefilter,
        })
    }

    /// The built-in rules alone, compiled once for the whole process.
    pub fn builtin() -> &'static Redactor {
        static BUILTIN: OnceLock<Redactor> = OnceLock::new();
        BUILTIN.get_or_init(|| Redactor::new(&[]).expect("the built-in rules compile"))
    }

    /// The redactor for `cairn.toml` `[redact] patterns`: the process's shared built-in one
    /// when there are none (compiled once), else a new one.
    pub fn configured(extra: &[String]) -> Result<Cow<'static, Redactor>, Error> {
        if extra.is_empty() {
            Ok(Cow::Borrowed(Redactor::builtin()))
        } else {
            Redactor::new(extra).map(Cow::Owned)
        }
    }

    /// `text` with every secret replaced by `[REDACTED:<kind>]`; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let findings = self.findings(text);
        if findings.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in &findings {
            out.push_str(&text[at..f.start]);
            out.push_str("[REDACTED:");
            out.push_str(f.kind);
            out.push(']');
            at = f.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Every secret in `text`, in order, without overlaps.
    pub fn findings(&self, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        if let Some(prefilter) = &self.prefilter
            && !prefilter.is_match(text)
        {
            return out;
        }
        let mut lines = LineCounter::default();
        let mut pos = 0;
        while pos <= text.len() {
            let Some(m) = self.combined.search(&Input::new(text).range(pos..)) else {
                break;
            };
            let (start, end) = (m.start(), m.end());
            // Extra patterns never match the empty string, built-in rules cannot; still, never loop.
            pos = if end > start { end } else { end + 1 };
            let Some((alt, caps)) = self.rule_at(text, m.pattern().as_usize(), start, end) else {
                continue;
            };
            let span = if alt.value_groups {
                (1..=alt.inner)
                    .find_map(|g| caps.get_group(g).map(|s| (s.start, s.end)))
                    .unwrap_or((start, end))
            } else {
                (start, end)
            };
            let value = &text[span.0..span.1];
            if value.starts_with("[REDACTED:") || !judge::accept(alt.check, text, start, span) {
                // Not a secret; a shape inside it still may be.
                if span.0 > start {
                    pos = span.0;
                }
                continue;
            }
            let kind = if span != (start, end) {
                self.kind_within(text, span, alt.kind)
            } else {
                alt.kind
            };
            out.push(Finding {
                kind,
                line: lines.line_of(text, span.0),
                start: span.0,
                end: span.1,
            });
        }
        out
    }

    /// The rule the combined regex's match `start..end` came from, with its groups: its
    /// pattern `chose` (the first rule, in order, that matches at `start`, as an alternation
    /// chooses), read again by the rule's own regex for its groups. Should that regex end the
    /// match elsewhere, the first rule that ends it at `end`.
    fn rule_at(
        &self,
        text: &str,
        chose: usize,
        start: usize,
        end: usize,
    ) -> Option<(&Alt, Captures)> {
        let ends_there = |a: &'_ Alt| {
            let caps = a.captures_at(text, start)?;
            (caps.get_match()?.end() == end).then_some(caps)
        };
        if let Some(alt) = self.alts.get(chose)
            && let Some(caps) = ends_there(alt)
        {
            return Some((alt, caps));
        }
        self.alts
            .iter()
            .find_map(|a| ends_there(a).map(|caps| (a, caps)))
    }

    /// The kind of a named value: a distinctive shape inside it (`token=ghp_…` is a
    /// `github-token`) names it better than its name does.
    fn kind_within(
        &self,
        text: &str,
        (start, end): (usize, usize),
        named: &'static str,
    ) -> &'static str {
        let text = &text[..end];
        let mut pos = start;
        while let Some(m) = self.combined.search(&Input::new(text).range(pos..)) {
            let (s, e) = (m.start(), m.end());
            if let Some((alt, _)) = self.rule_at(text, m.pattern().as_usize(), s, e)
                && alt.check == Check::Shape
                && alt.value_groups
                && alt.inner == 0
            {
                return alt.kind;
            }
            pos = if e > s { e } else { e + 1 };
            if pos > end {
                break;
            }
        }
        named
    }
}

/// Line numbers for increasing offsets, counting each newline once.
#[derive(Default)]
struct LineCounter {
    at: usize,
    line: usize,
}

impl LineCounter {
    fn line_of(&mut self, text: &str, offset: usize) -> usize {
        self.line += text.as_bytes()[self.at..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.at = offset;
        self.line + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The corpus: `kind<TAB>text` lines; `\n` in the text stands for a newline.
    fn corpus() -> Vec<(String, String)> {
        let text = include_str!("../tests/fixtures/secrets/corpus.txt");
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (kind, text) = l.split_once('\t').expect("corpus lines are kind<TAB>text");
                (kind.to_string(), text.replace("\\n", "\n"))
            })
            .collect()
    }

    /// The secret a corpus line holds: what its finding covers.
    fn secret_of(text: &str, f: &Finding) -> String {
        text[f.start..f.end].to_string()
    }

    #[test]
    fn the_cheap_check_never_misses_what_the_rules_find() {
        for (kind, line) in corpus() {
            assert!(may_hold_secret(&line), "{kind}: {line}");
        }
        assert!(!may_hold_secret(
            "reloaded the config on web-1 after the outage"
        ));
        // Common words near a rule's name are not enough.
        assert!(!may_hold_secret(
            "the token expired; see https://example.com/docs about secrets"
        ));
        assert!(!may_hold_secret(
            "high throughput, MT and ND are states, SK is a prefix"
        ));
        assert!(may_hold_secret("TOKEN = \"abc\""));
        assert!(may_hold_secret("\\\"password\\\": \\\"x\\\""));
        assert_eq!(
            redact_one(&[], "plain words").unwrap(),
            Cow::Borrowed("plain words")
        );
    }

    #[test]
    fn builtin_rules_compile() {
        let _ = Redactor::builtin();
    }

    #[test]
    fn corpus_has_at_least_25_shapes() {
        let corpus = corpus();
        assert!(corpus.len() >= 25, "{}", corpus.len());
        let kinds: std::collections::BTreeSet<&str> =
            corpus.iter().map(|(k, _)| k.as_str()).collect();
        assert!(kinds.len() >= 25, "{kinds:?}");
        for rule in RULES {
            assert!(
                kinds.contains(rule.kind),
                "no corpus line for {}",
                rule.kind
            );
        }
    }

    #[test]
    fn every_corpus_secret_is_found_with_its_kind_and_redacted() {
        let r = Redactor::builtin();
        for (kind, text) in corpus() {
            let found = r.findings(&text);
            assert_eq!(found.len(), 1, "{kind}: {text:?} → {found:?}");
            assert_eq!(found[0].kind, kind, "{text:?}");
            let secret = secret_of(&text, &found[0]);
            assert!(secret.len() >= 8, "{kind}: the secret is {secret:?}");
            let redacted = r.redact(&text);
            assert!(!redacted.contains(&secret), "{kind}: {redacted}");
            assert!(
                redacted.contains(&format!("[REDACTED:{kind}]")),
                "{kind}: {redacted}"
            );
            // Redacting twice changes nothing more.
            assert_eq!(r.redact(&redacted), redacted, "{kind}");
        }
    }

    #[test]
    fn the_whole_corpus_at_once_keeps_the_lines_and_loses_every_secret() {
        let r = Redactor::builtin();
        let corpus = corpus();
        let text: String = corpus.iter().map(|(_, t)| format!("{t}\n")).collect();
        let found = r.findings(&text);
        assert_eq!(found.len(), corpus.len());
        let redacted = r.redact(&text);
        for f in &found {
            assert!(!redacted.contains(&secret_of(&text, f)));
            let line = text[..f.start].matches('\n').count() + 1;
            assert_eq!(f.line, line);
        }
    }

    #[test]
    fn names_stay_and_values_go() {
        let r = Redactor::builtin();
        let cases = [
            ("password=hunter2secret", "password=[REDACTED:password]"),
            (
                "https://user:pa55word@host/x",
                "https://user:[REDACTED:url-password]@host/x",
            ),
            (
                r#"{"password": "hunter2", "user": "bob"}"#,
                r#"{"password": "[REDACTED:password]", "user": "bob"}"#,
            ),
            (
                r#"{"text":"export DB_PASSWORD=\"s3cr3t-pw\" now"}"#,
                r#"{"text":"export DB_PASSWORD=\"[REDACTED:password]\" now"}"#,
            ),
            (
                "client_secret: 'abc123def456'",
                "client_secret: '[REDACTED:secret]'",
            ),
            (
                "Authorization: Bearer abcdef0123456789abcdef",
                "Authorization: Bearer [REDACTED:bearer-token]",
            ),
            (
                "GITHUB_TOKEN=ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly012345",
                "GITHUB_TOKEN=[REDACTED:github-token]",
            ),
            // A badge's upload token in a README: a query parameter, though it looks like an
            // identifier passed as an argument.
            (
                "[![cov](https://codecov.io/gh/o/r/graph/badge.svg?token=QBQLAT904B)](x)",
                "[![cov](https://codecov.io/gh/o/r/graph/badge.svg?token=[REDACTED:token])](x)",
            ),
            (
                "client = Client(api_key='REDACTED_API_KEY', password=pw, token=Xk3vQ9mR2p)",
                "client = Client(api_key='REDACTED_API_KEY', password=pw, token=[REDACTED:token])",
            ),
            (
                r#"rotated the secret: client_secret: "l02Q4O5n9De3aHUwMya1bjIaSr8TsA""#,
                r#"rotated the secret: client_secret: "[REDACTED:secret]""#,
            ),
            (
                r#"{"text":"db:\n  password: lanternmoth"}"#,
                r#"{"text":"db:\n  password: [REDACTED:password]"}"#,
            ),
            (
                "process.env.DB_PASSWORD = 'saltmarsh'",
                "process.env.DB_PASSWORD = '[REDACTED:password]'",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(r.redact(text), want, "{text}");
        }
    }

    /// The shapes known only by what names them: `kind<TAB>secret<TAB>text` lines.
    fn shapes() -> Vec<(String, String, String)> {
        include_str!("../tests/fixtures/secrets/shapes.txt")
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let mut parts = l.splitn(3, '\t');
                let mut next = || parts.next().expect("kind<TAB>secret<TAB>text").to_string();
                (next(), next(), next())
            })
            .collect()
    }

    #[test]
    fn secrets_known_by_their_name_are_redacted_in_every_form() {
        let r = Redactor::builtin();
        let shapes = shapes();
        assert!(shapes.len() >= 25, "{}", shapes.len());
        for (kind, secret, text) in shapes {
            assert!(text.contains(&secret), "{text}");
            assert!(may_hold_secret(&text), "the cheap check misses {text}");
            assert!(
                r.prefilter.as_ref().unwrap().is_match(&text),
                "no needle in {text}"
            );
            let redacted = r.redact(&text);
            assert!(!redacted.contains(&secret), "{kind}: {text} → {redacted}");
            assert!(
                redacted.contains(&format!("[REDACTED:{kind}]")),
                "{kind}: {redacted}"
            );
            assert_eq!(r.redact(&redacted), redacted, "redacting twice: {text}");
            // As a transcript holds it: inside a JSON string, after other words.
            let json = serde_json::to_string(&format!("ran it:\n{text}\nthen")).unwrap();
            let red_json = r.redact(&json);
            assert!(!red_json.contains(&secret), "{kind} in JSON: {red_json}");
            // After other words, and in a Markdown list.
            for framed in [format!("note: {text}"), format!("- {text}")] {
                let red = r.redact(&framed);
                assert!(!red.contains(&secret), "{kind}: {framed} → {red}");
            }
        }
    }

    #[test]
    fn look_alikes_of_named_secrets_stay() {
        let r = Redactor::builtin();
        let cases = [
            // `-p` alone prompts for the password; elsewhere `-p` is a port or a flag.
            "mysql -u root -p app_db",
            "mysql -u root -p",
            "docker run -p 8080:80 -p 443:443 nginx",
            "ssh -p 2222 deploy@web-1",
            "find /var/lib/mysql -print -prune",
            "mkdir -p /tmp/build && ls -pa /tmp",
            "mysql_config --cflags -pthread",
            "git commit -a -m 'fix the redis-cli wrapper'",
            "docker run -u 1000:1000 img curl https://example.com",
            "curl -u admin: https://ci.example.com (prompts for the password)",
            // A count of tokens, a length, a setting.
            "TOKEN_COUNT=5",
            "max_tokens: 4096",
            r#"{"input_tokens": 123456, "output_tokens": 2048}"#,
            "PASSWORD_MIN_LENGTH=12",
            "ENABLE_PASSWORD_AUTH=yes",
            "passwordless: true",
            // References to where a secret lives.
            "password: ${{ secrets.DB_PASSWORD }}",
            "DB_PASSWORD=$DB_PASSWORD",
            "export GITHUB_TOKEN=${GITHUB_TOKEN:-}",
            "PASSWORD_FILE=/run/secrets/db_password",
            "TOKEN_URL=https://auth.example.com/oauth/token",
            "secretName: db-credentials",
            "token_type: bearer",
            "api_key: !vault |",
            "password: <your password here>",
            // A flag named in prose, or with no value.
            "pass the --password flag, or use --password-stdin",
            "mysql --password",
            "--password PASSWORD   the password to connect with",
            "use --password with no value to be prompted",
            // Code.
            "connect(host=h, password=pw)",
            "password = None",
            "    password: str",
            "    api_key: Optional[str] = None",
            "token = get_token()",
            "password=password",
            "tokenizer: bert-base-uncased",
            // Prose.
            "the password is required",
            "The password is stored hashed, and the token was rotated.",
            "pwd is /home/ann/src",
            "The secret: nobody reads the manual.",
            // A name said before a quoted value is not the value's name.
            r#"rotated the secret: client_secret: "[REDACTED:secret]""#,
        ];
        for text in cases {
            let found: Vec<&str> = r
                .findings(text)
                .iter()
                .map(|f| &text[f.start..f.end])
                .collect();
            assert!(found.is_empty(), "{text:?} → {found:?}");
        }
    }

    #[test]
    fn a_setting_named_in_capitals_holds_its_value_mid_line() {
        let r = Redactor::builtin();
        for text in [
            "compose said MYSQL_ROOT_PASSWORD: wobblyfencepost and the rest of the line",
            "then DB_PASSWORD: lanternmoth (from .env) was read",
        ] {
            let out = r.redact(text);
            assert!(
                out.contains("[REDACTED:password]")
                    && !out.contains("wobblyfencepost")
                    && !out.contains("lanternmoth"),
                "{text} -> {out}"
            );
        }
        for code in [
            "const MAX_TOKEN: u32 = 1;",
            "struct S { API_KEY: String, }",
            "let SECRET_KEY: Option<String> = None;",
        ] {
            assert_eq!(r.redact(code), code);
        }
    }

    #[test]
    fn a_password_of_digits_counts_and_a_count_does_not() {
        let r = Redactor::builtin();
        let cases = [
            ("DB_PASSWORD=482913", "DB_PASSWORD=[REDACTED:password]"),
            ("SLACK_TOKEN=482913", "SLACK_TOKEN=482913"),
            ("password: 12", "password: 12"),
            (
                "the password is 8 characters long",
                "the password is 8 characters long",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(r.redact(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_text_and_code_come_back_borrowed() {
        let text = r#"The password field is hashed with argon2 before it is stored; never log a password.
Commit 4c0edad1f3b2a9e8d7c6b5a4f3e2d1c0b9a8f7e6 fixed the task-scheduler (see risk-assessment).
Session 550e8400-e29b-41d4-a716-446655440000 asked for a token: it must not be reused.
fn login(user: &str, password: &str) -> Result<Token> { let token = issue(user)?; Ok(token) }
const token = await getToken(); let apiKey = process.env.OPENAI_API_KEY; password = None
def connect(password: str, token: Optional[str] = None): secret = os.environ.get("SECRET")
Set api_key: ${OPENAI_API_KEY} or password: <your-password> in the config; max_tokens: 4096.
Visit https://docs.example.com:8443/guide?x=1 or ssh git@github.com:owner/repo.git today.
The sk-learn package and desk-lamp-controller; basic auth and bearer tokens are explained.
The secret: nobody reads the manual. A token: of esteem. KEY points were made by MT and NT.
Ünïcödé prose — naïve café, 東京 and Москва — with a password mentioned only in passing.
"#;
        let r = Redactor::builtin();
        assert!(
            r.findings(text).is_empty(),
            "{:?}",
            r.findings(text)
                .iter()
                .map(|f| &text[f.start..f.end])
                .collect::<Vec<_>>()
        );
        assert!(matches!(r.redact(text), Cow::Borrowed(_)));
    }

    #[test]
    fn text_without_needles_is_not_searched() {
        let r = Redactor::builtin();
        assert!(
            !r.prefilter
                .as_ref()
                .unwrap()
                .is_match("just some words about caching, queues and keys")
        );
        assert!(matches!(r.redact("plain words"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_corpus_line_holds_a_needle() {
        let r = Redactor::builtin();
        for (kind, text) in corpus() {
            assert!(r.prefilter.as_ref().unwrap().is_match(&text), "{kind}");
        }
    }

    #[test]
    fn extra_patterns_are_redacted_as_custom() {
        let r = Redactor::new(&["ACME-[0-9]{6}".to_string()]).unwrap();
        assert_eq!(
            r.redact("ticket ACME-123456 open"),
            "ticket [REDACTED:custom] open"
        );
        let f = r.findings("a\nb ACME-654321");
        assert_eq!(
            f,
            vec![Finding {
                kind: CUSTOM_KIND,
                line: 2,
                start: 4,
                end: 15
            }]
        );
        // The built-in rules still apply.
        assert_eq!(
            r.redact("password=hunter2secret"),
            "password=[REDACTED:password]"
        );
    }

    #[test]
    fn a_bad_extra_pattern_is_an_error_naming_it() {
        for bad in ["ACME-(", "x*"] {
            let err = Redactor::new(&["fine-[0-9]+".to_string(), bad.to_string()]).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn a_private_key_block_goes_whole() {
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5\n-----END OPENSSH PRIVATE KEY-----\nafter\n";
        let r = Redactor::builtin();
        assert_eq!(r.redact(text), "before\n[REDACTED:private-key]\nafter\n");
        assert_eq!(r.findings(text)[0].line, 2);
    }

    /// Throughput, in a release build: `cargo test --release --lib redact -- --ignored`.
    #[test]
    #[ignore]
    fn throughput() {
        let corpus = corpus();
        let mut chunk = String::new();
        for i in 0..200 {
            chunk.push_str(r#"{"type":"assistant","message":{"content":[{"type":"text","text":"I ran cargo test and the token parser passed; see https://docs.rs/regex for the API. "#);
            chunk.push_str("fn main() { let x = compute(42); println!(\"{x}\"); } // refactor the key handling\\n");
            if i % 50 == 0 {
                chunk.push_str(&corpus[i % corpus.len()].1.replace('\n', "\\n"));
            }
            chunk.push_str("\"}]}}\n");
        }
        let mut text = String::new();
        while text.len() < 50 << 20 {
            text.push_str(&chunk);
        }
        let r = Redactor::builtin();
        let t = std::time::Instant::now();
        let n = r.findings(&text).len();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(
            n,
            4 * (text.len() / chunk.len()),
            "the four secrets of every chunk, nothing else"
        );
        eprintln!(
            "{} MB in {secs:.3}s: {:.0} MB/s, {n} findings",
            text.len() >> 20,
            (text.len() >> 20) as f64 / secs
        );
    }

    #[test]
    fn parsed_group_counts_match_compiled_ones() {
        for r in RULES {
            let source = ascii_boundaries(r.pattern);
            let parsed = regex_syntax::Parser::new()
                .parse(&source)
                .unwrap()
                .properties()
                .explicit_captures_len();
            assert_eq!(
                parsed,
                Regex::new(&source).unwrap().captures_len() - 1,
                "{}",
                r.kind
            );
        }
    }
}
