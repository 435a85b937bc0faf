//! Whether a value that a rule matched is a secret.
//!
//! A token with a distinctive shape (`ghp_…`, a private key block) needs no judging. A value
//! known only by what names it (`DB_PASSWORD=…`, `mysql -p…`, "the password is …") is judged
//! here by its context and its look, so that code, prose and configuration that merely talk
//! about secrets come back unchanged:
//!
//! - **References are not secrets**: `$VAR`, `${VAR}`, `${{ secrets.X }}`, `%VAR%`, `<your
//!   password>`, `{{ .Values.x }}`, `****`, a YAML tag (`!vault`), a code path
//!   (`os.environ.get`), a call (`getToken()`), `None`/`null`/`true`, or the name repeated
//!   (`password=password`): they say where a secret lives, not what it is.
//! - **A variable's value is a secret whatever it looks like** when the assignment is a
//!   variable's: an environment name (`DB_PASSWORD=correcthorsebatterystaple`,
//!   `export pgpassword=…`), `name=value` without blanks (a conninfo string, a query string;
//!   but not a keyword argument passing a variable, `f(password=pw)`), a quoted value
//!   (`"token": "abc"`), or a YAML `key: value` that ends its line.
//! - **Names that describe a secret rather than hold one** are not secrets' names:
//!   `TOKEN_URL`, `PASSWORD_FILE`, `secretName`, `password_min_length`, `max_tokens`
//!   ([`METADATA`] words anywhere in the name).
//! - **A number is a count, not a token**: a `*TOKEN*` name's numeric value (`TOKEN_COUNT=5`,
//!   `max_tokens: 4096`) is never redacted; a password's (`DB_PASSWORD=123456`) is, from 4
//!   digits.
//! - **A short flag is a password only for the commands whose flag it is**: `-pX` glued for
//!   mysql and mariadb (`-p` alone prompts; `-p 8080` is a port elsewhere), `-p X` for sshpass,
//!   `-a X` for redis-cli, `-u user:X` for curl; the command must be a word of the same shell
//!   segment before the flag, by name or from a `bin` folder (`/var/lib/mysql` is a folder).
//! - **Prose is judged by the word**: after "the password is" (no colon, no quotes) only a word
//!   with a digit, a symbol, inner capitals or 16 letters counts ("the password is required"
//!   stays); after "the password is:" or with quotes, any value does.

/// What is checked about a match before it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// The shape is distinctive enough on its own.
    Shape,
    /// A value named by its key (`password=…`, `"token": "…"`, `secret: …`).
    Assigned,
    /// A token after `Bearer`: it must hold a digit (prose has none).
    Digit,
    /// A long flag's value or a command's password argument (`--password X`,
    /// `-passin pass:X`, `htpasswd -b FILE USER X`).
    Flag,
    /// A short flag that is a password only for some commands.
    Cli(Cli),
    /// A value said after a colon or in quotes: "the passphrase is: …".
    Said,
    /// One bare word said: "the password is hunter2".
    SaidWord,
}

/// The short flags that hold a password for some commands only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cli {
    /// `-pX` for mysql, mariadb and mycli (glued: `-p X` prompts and takes X as the
    /// database); `-pX` and `-p X` for sshpass.
    P,
    /// `-a X` for redis-cli.
    A,
    /// `-u USER:X`, `--user USER:X` for curl.
    User,
}

/// Words of a name that describe a secret instead of holding one: `TOKEN_URL`,
/// `PASSWORD_FILE`, `secretName`, `password_min_length`, `max_tokens`, `input_tokens`.
pub(super) const METADATA: &[&str] = &[
    "algorithm",
    "at",
    "budget",
    "class",
    "column",
    "complexity",
    "cost",
    "count",
    "date",
    "dir",
    "disabled",
    "enabled",
    "endpoint",
    "env",
    "estimate",
    "expiration",
    "expires",
    "expiry",
    "field",
    "file",
    "format",
    "header",
    "hint",
    "host",
    "index",
    "kind",
    "label",
    "len",
    "length",
    "lifetime",
    "limit",
    "location",
    "manager",
    "max",
    "min",
    "mode",
    "name",
    "num",
    "param",
    "path",
    "pattern",
    "policy",
    "prefix",
    "prompt",
    "provider",
    "rate",
    "ref",
    "regex",
    "remaining",
    "required",
    "rotation",
    "rule",
    "schema",
    "size",
    "source",
    "store",
    "strength",
    "suffix",
    "timeout",
    "total",
    "ttl",
    "type",
    "uri",
    "url",
    "usage",
    "used",
    "var",
    "variable",
    "version",
];

/// The last word of a name that holds a secret (`apikey` is how `apiKey` ends).
const KEYWORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pass",
    "secret",
    "token",
    "key",
    "apikey",
    "accesskey",
];

/// Values that stand for nothing: a flag's state or an absent value.
const NULLISH: &[&str] = &[
    "true",
    "false",
    "null",
    "none",
    "nil",
    "yes",
    "no",
    "on",
    "off",
    "undefined",
    "required",
    "optional",
    "empty",
    "redacted",
    "hidden",
    "masked",
    "unset",
    "omitted",
    // A CI permission (`id-token: write`).
    "read",
    "write",
    // The sample values of docs and tests.
    "foo",
    "bar",
    "baz",
    "qux",
    "test",
    "example",
    "sample",
    "dummy",
    "fake",
    "placeholder",
];

/// Type names that follow a name and a colon in code (`password: str`).
const TYPES: &[&str] = &[
    "str",
    "string",
    "bytes",
    "int",
    "integer",
    "bool",
    "boolean",
    "number",
    "text",
    "object",
    "any",
    "varchar",
    "char",
    "uuid",
    "secretstr",
    "secretstring",
];

/// Words that follow a flag's name in prose ("pass the --password flag"), never as its value.
const FLAG_PROSE: &[&str] = &[
    "a",
    "an",
    "and",
    "arg",
    "argument",
    "as",
    "flag",
    "for",
    "from",
    "if",
    "in",
    "instead",
    "is",
    "must",
    "of",
    "on",
    "option",
    "or",
    "parameter",
    "prompt",
    "should",
    "switch",
    "the",
    "to",
    "value",
    "when",
    "will",
    "with",
];

/// Whether the value at `span`, matched by a rule whose match starts at `start`, counts as a
/// secret under `check`.
pub(super) fn accept(check: Check, text: &str, start: usize, span: (usize, usize)) -> bool {
    let value = &text[span.0..span.1];
    match check {
        Check::Shape => true,
        Check::Digit => value.bytes().any(|b| b.is_ascii_digit()),
        Check::Assigned => assigned(text, start, span),
        Check::Flag => flag_value(text, span, true),
        Check::Cli(cli) => flag_value(text, span, false) && cli_runs(cli, text, start, span),
        Check::Said => !reference(value) && !path_like(value),
        Check::SaidWord => {
            if reference(value) || path_like(value) || value.starts_with('-') {
                return false;
            }
            if quoted(text, span.0) {
                return true;
            }
            said_word(value)
        }
    }
}

/// Whether the value starting at `at` was written in quotes (or backticks).
fn quoted(text: &str, at: usize) -> bool {
    matches!(
        text.as_bytes().get(at.wrapping_sub(1)),
        Some(b'"' | b'\'' | b'`')
    )
}

/// A value that points at a secret instead of being one, or that stands for nothing.
fn reference(value: &str) -> bool {
    let Some(first) = value.chars().next() else {
        return true;
    };
    if matches!(
        first,
        '$' | '<' | '{' | '%' | '[' | '@' | '&' | '*' | '!' | '('
    ) || value.chars().all(|c| c == first)
        || value.contains("${")
        || value.contains("{{")
        || value.contains("$(")
    {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    NULLISH.contains(&lower.as_str())
}

/// `/home/ann`, `~/x`, `./run`: a path said after "pwd is", not a password.
fn path_like(value: &str) -> bool {
    value.starts_with('/') || value.starts_with("~/") || value.starts_with("./")
}

/// `os.environ.get`, `self._password`, `settings.SECRET_KEY`, `proc_macro::TokenStream`: a
/// code path.
fn code_path(value: &str) -> bool {
    if value.contains("::") || value.starts_with(':') {
        return true;
    }
    value.contains('.')
        && value.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The lower-case words of a name: split at `_`, `-`, `.` and where a lower-case letter or a
/// digit meets a capital (`secretName` is `secret`, `name`).
pub(super) fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `name = value` judged by the assignment's style (see the module's comment).
fn assigned(text: &str, start: usize, span: (usize, usize)) -> bool {
    let bytes = text.as_bytes();
    let value = &text[span.0..span.1];
    if reference(value) {
        return false;
    }
    // A name may follow a JSON string's escaped newline or tab (`\nDB_PASS=…`).
    let escape = |at: usize| {
        at >= 2 && bytes[at - 2] == b'\\' && matches!(bytes[at - 1], b'n' | b'r' | b't')
    };
    let start = if escape(start + 2) { start + 2 } else { start };
    let mut name_start = start;
    while name_start > 0 && is_name_byte(bytes[name_start - 1]) && !escape(name_start) {
        name_start -= 1;
    }
    let mut name_end = start;
    while name_end < span.0 && is_name_byte(bytes[name_end]) {
        name_end += 1;
    }
    let name = text[name_start..name_end].trim_matches(['.', '-']);
    let words = name_words(name);
    // `password.length` describes; `env.DB_PASSWORD`, `spring.datasource.password` hold.
    let own = name.rsplit('.').next().unwrap_or(name);
    if name_words(own)
        .iter()
        .any(|w| METADATA.contains(&w.as_str()))
    {
        return false;
    }
    // Whether the name ends in the word that names a secret (`db_password`, `GITHUB_TOKEN`),
    // rather than in another word (`secret_expander`).
    let held = name_words(own).last().is_some_and(|w| {
        let w = w.strip_suffix('s').unwrap_or(w);
        KEYWORDS.iter().any(|k| w.ends_with(k))
    });
    let lower = value.to_ascii_lowercase();
    let squashed: String = words.concat();
    if words.contains(&lower) || lower == squashed || lower == name.to_ascii_lowercase() {
        return false;
    }
    // `"YOUR_API_KEY"`, `'REDACTED_TOKEN'`: a placeholder's capitals naming what goes there.
    let placeholder = value.contains('_')
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && name_words(value).iter().any(|w| {
            matches!(
                w.as_str(),
                "key" | "token" | "password" | "passwd" | "pass" | "secret" | "here"
            )
        });
    if placeholder {
        return false;
    }
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    if digits > 0
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || b".,_".contains(&b))
    {
        // A count or a setting; a password of digits is one when the name ends in the word
        // that names it.
        let tokenish = words.iter().any(|w| w.starts_with("token"));
        let credential = words.last().is_some_and(|w| {
            matches!(
                w.as_str(),
                "password" | "passwd" | "passphrase" | "pass" | "secret" | "key" | "apikey" | "pin"
            )
        });
        return !tokenish && credential && digits >= 4;
    }
    if quoted(text, span.0) {
        // `Token => "invalid token"`: a message about the secret, not the secret.
        let message = value.contains(' ')
            && name_words(&lower.replace(' ', "_"))
                .iter()
                .any(|w| words.contains(w));
        return value.len() >= 3 && !message;
    }
    if bytes.get(span.1) == Some(&b'(') || code_path(value) {
        return false;
    }
    let between = &text[name_end..span.0];
    let env_name = name.bytes().any(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let colon = between.trim_start_matches(['"', '\'', '\\']).trim_start();
    let colon = colon.starts_with(':') && !colon.starts_with(":=");
    if between == "=" {
        // An environment variable's: `DB_PASSWORD=…`, `export x_token=…`.
        if env_name || text[..name_start].ends_with("export ") {
            return true;
        }
        // A URL's query parameter (`?token=…`) holds a value whatever it looks like; a
        // keyword argument (`f(password=pw)`) passes a variable, unless what it passes has
        // the look of a secret itself.
        if name_start > 0 && matches!(bytes[name_start - 1], b'?' | b'&') {
            return true;
        }
        let identifier = value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !value.as_bytes()[0].is_ascii_digit();
        let argument = matches!(bytes.get(span.1), Some(b',' | b')'));
        return !(identifier && argument) || (held && looks_random(value, digits));
    }
    // YAML's `key: value` (docker-compose's `MYSQL_PASSWORD: …`) ends its line; a type
    // annotation (`TOKEN: u32 = 1`, `token: Token,`) does not.
    if colon && ends_line(text, span.1) {
        return !TYPES.contains(&lower.as_str());
    }
    // After a colon in code a bare word is a type or a variable, never a literal
    // (`token: Avx512,`, `f(token: Token)`, `{ key: apiKey }`).
    let rest = &bytes[span.1..];
    let after = rest
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .map(|i| rest[i]);
    let code = matches!(
        (rest.first(), after),
        (
            Some(b',' | b')' | b']' | b';' | b'<' | b'>' | b'{' | b'}'),
            _
        ) | (_, Some(b'=' | b'{' | b'|'))
    );
    if colon && code {
        return false;
    }
    // A setting's NAME in capitals (`MYSQL_ROOT_PASSWORD: …` from a compose file, quoted
    // into a sentence or a log line) holds its value wherever the line goes on.
    if colon && env_name {
        return !TYPES.contains(&lower.as_str());
    }
    // Any other style (`password = x` in code), for a name that ends in its keyword
    // (`secret_expander = …` names something else).
    held && looks_random(value, digits)
}

/// A value that prose and identifiers do not have: 6 characters or more with a digit, or 16
/// with mixed case.
fn looks_random(value: &str, digits: usize) -> bool {
    let mixed = value.bytes().any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase());
    value.len() >= 6 && (digits > 0 || (mixed && value.len() >= 16))
}

/// Whether nothing but blanks and a `#` comment follows `at` on its line (a newline, an
/// escaped `\n` or the end of a JSON string ends it too).
fn ends_line(text: &str, at: usize) -> bool {
    let rest = text[at..].trim_start_matches([' ', '\t']);
    let rest = if rest.starts_with('#') {
        rest.find(['\n', '\r']).map_or("", |i| &rest[i..])
    } else {
        rest
    };
    // The end of a JSON string holding the line: its quote, then what follows a value.
    let string_end = |quote: &str| {
        rest.strip_prefix(quote).is_some_and(|after| {
            after.is_empty() || after.starts_with([',', '}', ']']) || after.starts_with("\\n")
        })
    };
    rest.is_empty()
        || rest.starts_with(['\n', '\r'])
        || rest.starts_with("\\n")
        || rest.starts_with("\\r")
        || string_end("\"")
        || string_end("\\\"")
}

/// A flag's value: not another flag, a reference, a metavariable or the prose around a
/// flag's name. A long flag's metavariable is any capitals (`--password PASSWORD`,
/// `--passwd=YOUR_PASS`); a short flag's glued value in capitals is a password
/// (`mysql -pSECRET`) unless it names one (`-pPASSWORD`).
fn flag_value(text: &str, span: (usize, usize), long: bool) -> bool {
    let value = &text[span.0..span.1];
    if reference(value) || value.starts_with('-') {
        return false;
    }
    let capitals = value.len() >= 2
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-');
    let metavar = if long {
        capitals
    } else {
        matches!(value, "PASSWORD" | "PASSWD" | "PASS" | "PWD" | "PW")
    };
    if metavar {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    quoted(text, span.0) || !FLAG_PROSE.contains(&lower.as_str())
}

/// Whether the short flag of `cli` before `span` belongs to a command that takes a password
/// there.
fn cli_runs(cli: Cli, text: &str, start: usize, span: (usize, usize)) -> bool {
    let Some(flag) = text[start..span.0].find('-').map(|i| start + i) else {
        return false;
    };
    // `-pX`, `-p'X'`: nothing but a quote between the flag's letter and its value.
    let glued = !text[flag..span.0].contains([' ', '\t']);
    let runs = |wanted: &dyn Fn(&str) -> bool| commands_before(text, flag).any(wanted);
    match cli {
        Cli::P => runs(&|c| c == "sshpass" || (glued && mysql_like(c))),
        Cli::A => runs(&|c| c == "redis-cli"),
        Cli::User => runs(&|c| c == "curl"),
    }
}

/// mysql and its tools (`mysqldump`, `mysqladmin`…), mariadb's (`mariadb-dump`…), mycli; not
/// `mysql_config`, whose `-p…` are compiler flags.
fn mysql_like(command: &str) -> bool {
    let tail = |rest: &str, sep: bool| {
        let rest = if sep {
            rest.strip_prefix('-').unwrap_or(rest)
        } else {
            rest
        };
        rest.bytes().all(|b| b.is_ascii_lowercase())
    };
    command == "mycli"
        || command
            .strip_prefix("mysql")
            .is_some_and(|r| tail(r, false))
        || command
            .strip_prefix("mariadb")
            .is_some_and(|r| tail(r, true))
}

/// The commands named in the shell segment before `at` (back to a newline, `|`, `;`, `&`,
/// `(`, a backtick, `{` or an escaped `\n`): each word as written, or the last part of a path
/// whose folder is a `bin` folder or `.`.
fn commands_before(text: &str, at: usize) -> impl Iterator<Item = &str> {
    let before = &text[..at];
    let mut from = before
        .rfind(['\n', '|', ';', '&', '(', '`', '{'])
        .map_or(0, |i| i + 1);
    if let Some(i) = before.rfind("\\n")
        && i + 2 > from
    {
        from = i + 2;
    }
    before[from..].split_whitespace().filter_map(|word| {
        let word = word.rsplit(['"', '\'']).next().unwrap_or(word);
        match word.rsplit_once('/') {
            None => Some(word),
            Some((folder, command)) => {
                let folder = folder.rsplit('/').next().unwrap_or(folder);
                matches!(folder, "bin" | "sbin" | ".").then_some(command)
            }
        }
    })
}

/// One bare word after "the password is": a secret if it has a digit, a symbol, a capital
/// past its first letter, or 16 characters (run-together words); an ordinary word is prose.
fn said_word(value: &str) -> bool {
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    if digits == value.len() {
        return digits >= 4;
    }
    let symbol = value
        .bytes()
        .any(|b| !b.is_ascii_alphanumeric() && !matches!(b, b'-' | b'\'' | b'_'));
    let inner_capital = value.bytes().skip(1).any(|b| b.is_ascii_uppercase());
    digits > 0 || symbol || inner_capital || value.len() >= 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        let cases: &[(&str, &[&str])] = &[
            ("DB_PASSWORD", &["db", "password"]),
            ("secretName", &["secret", "name"]),
            ("max_tokens", &["max", "tokens"]),
            (
                "spring.datasource.password",
                &["spring", "datasource", "password"],
            ),
            ("APIKey", &["apikey"]),
            ("token2Url", &["token2", "url"]),
        ];
        for (name, want) in cases {
            assert_eq!(&name_words(name), want, "{name}");
        }
    }

    #[test]
    fn commands_are_words_of_the_segment_or_programs_in_a_bin_folder() {
        let cases: &[(&str, &[&str])] = &[
            ("mysql -u root ", &["mysql", "-u", "root"]),
            ("cd /tmp && /usr/bin/mysql ", &["mysql"]),
            ("find /var/lib/mysql ", &["find"]),
            ("{\"command\":\"mysqldump ", &["mysqldump"]),
            ("ls | sshpass ", &["sshpass"]),
            ("a\\nb ", &["b"]),
        ];
        for (text, want) in cases {
            let got: Vec<&str> = commands_before(text, text.len()).collect();
            assert_eq!(&got, want, "{text}");
        }
    }

    #[test]
    fn mysql_tools_but_not_mysql_config() {
        for yes in [
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mariadb",
            "mariadb-dump",
            "mycli",
        ] {
            assert!(mysql_like(yes), "{yes}");
        }
        for no in ["mysql_config", "mariadb_config", "mysql2", "psql", "my"] {
            assert!(!mysql_like(no), "{no}");
        }
    }

    #[test]
    fn a_word_said_is_judged_by_its_look() {
        for yes in [
            "hunter2",
            "P@ssword",
            "correcthorsebatterystaple",
            "tRoubadour",
            "12345678",
        ] {
            assert!(said_word(yes), "{yes}");
        }
        for no in [
            "required",
            "stored",
            "wrong",
            "Incorrect",
            "8",
            "16",
            "not-set",
        ] {
            assert!(!said_word(no), "{no}");
        }
    }
}
