//! The only code that prints. stdout carries data, stderr carries words for people.
//!
//! # Wire format (`--json`)
//!
//! Every command run with `--json` writes exactly one JSON object, on one line, to stdout:
//!
//! ```json
//! {"v":1,"type":"slog","data":{…},"next":[{"command":"cairn slog query","why":"…"}]}
//! ```
//!
//! - `v` is the version of this envelope; it changes only when a field changes meaning.
//! - `type` names the command (`init`, `slog`, `slog_query`, `adr_new`, `memory_add`, …).
//! - `data` is the command's result; its fields are snake_case, times RFC 3339 UTC.
//! - `next` lists follow-up commands worth running, possibly empty.
//!
//! A recalled or searched record's `time` is when it happened: a slog entry's, an
//! observation's, a note's `captured`; a library chunk's is when its document was added (the
//! manifest's `added`; for a chunk file written before chunks kept it, the chunk file's time).
//!
//! An error is the same envelope with `type` `error`:
//!
//! ```json
//! {"v":1,"type":"error","data":{"kind":"bad_input","message":"…","fix":"…"}}
//! ```
//!
//! `kind` is one of `not_a_repository`, `bad_input`, `not_found`, `io`, `git`, `config`,
//! `conflict` (a merge stopped on files both sides changed), `interrupted`, `busy` (a write
//! over MCP gave up waiting for the repository lock after `[mcp] lock_wait_ms`); `fix` is `null`
//! when there is nothing to suggest.
//!
//! Warnings (a torn line skipped, a section unknown to the taxonomy) always go to stderr, as
//! `warning: …` lines, with or without `--json`; with `--json` they are also in
//! `data.warnings` where a command reports them.
//!
//! # Exit codes
//!
//! 0 ok; 1 ran fine but found nothing, or a check failed; 2 error or bad input;
//! 130 interrupted. A closed stdout (`cairn … | head`) exits 0 silently. A command that found
//! nothing says so in one line on stderr (without `--json`; with it, the empty `data` says so).
//!
//! # Text for people is inert
//!
//! Recalled text comes from transcripts cairn did not write, so it may carry terminal escape
//! sequences that would recolour, retitle or rewrite a person's terminal. Everything printed
//! for people (a command's human text, warnings, errors, notices) goes through [`inert`]:
//! CSI, OSC and other escape sequences, C0 and C1 controls other than newline and tab, and the
//! bidirectional overrides are removed. `--json` keeps the data as it is, escaped by JSON.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;

/// How a command that ran to the end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It did its job.
    Ok,
    /// It ran fine but found nothing, or a check it made failed (exit 1).
    NothingOrFailed,
    /// It did what the good part of its input allowed, but some input was bad (exit 2); the
    /// bad parts are named on stderr.
    BadInput,
}

/// A follow-up command suggested to the caller.
#[derive(Debug, Clone, Serialize)]
pub struct Next {
    pub command: String,
    pub why: String,
}

impl Next {
    pub fn new(command: impl Into<String>, why: impl Into<String>) -> Self {
        Next {
            command: command.into(),
            why: why.into(),
        }
    }
}

/// What a command produced: its data for machines, its text for people.
#[derive(Debug)]
pub struct Report {
    pub kind: &'static str,
    pub data: Value,
    pub human: String,
    pub next: Vec<Next>,
    pub warnings: Vec<String>,
    pub status: Status,
    /// The line for people when the command found nothing (see [`Report::empty_when`]).
    pub nothing: Option<String>,
}

impl Report {
    pub fn new(
        kind: &'static str,
        data: impl Serialize + 'static,
        human: impl Into<String>,
    ) -> Self {
        // Most commands hand over a `json!` value already: taken as it is, not rebuilt (for
        // maintain's 70,000 changes the copy and the drop of the first were 0.2 s).
        let mut data = Some(data);
        let data = match (&mut data as &mut dyn std::any::Any).downcast_mut::<Option<Value>>() {
            Some(value) => value.take().unwrap_or_default(),
            None => serde_json::to_value(data).expect("command data is plain serde data"),
        };
        Report {
            kind,
            data,
            human: human.into(),
            next: Vec::new(),
            warnings: Vec::new(),
            status: Status::Ok,
            nothing: None,
        }
    }

    /// When `empty`, the command found nothing: it exits 1 and `message` ("no ADRs found") is
    /// said on stderr, so that an empty answer is never silence.
    pub fn empty_when(mut self, empty: bool, message: impl Into<String>) -> Self {
        if empty {
            self.status = Status::NothingOrFailed;
            self.nothing = Some(message.into());
        }
        self
    }

    pub fn next(mut self, next: Next) -> Self {
        self.next.push(next);
        self
    }

    pub fn warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    pub fn status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    v: u32,
    #[serde(rename = "type")]
    kind: &'a str,
    data: &'a Value,
    next: &'a [Next],
}

#[derive(Serialize)]
struct ErrorData<'a> {
    kind: &'a str,
    message: &'a str,
    fix: Option<&'a str>,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    v: u32,
    #[serde(rename = "type")]
    kind: &'a str,
    data: ErrorData<'a>,
}

/// The one object `--json` writes for a finished command (and the MCP server returns).
pub fn envelope(report: &Report) -> Value {
    let envelope = Envelope {
        v: 1,
        kind: report.kind,
        data: &report.data,
        next: &report.next,
    };
    serde_json::to_value(envelope).expect("envelope serializes")
}

/// The one object `--json` writes for an error (and the MCP server returns).
pub fn error_envelope(err: &Error) -> Value {
    let envelope = ErrorEnvelope {
        v: 1,
        kind: "error",
        data: ErrorData {
            kind: err.kind.as_str(),
            message: &err.message,
            fix: err.fix.as_deref(),
        },
    };
    serde_json::to_value(envelope).expect("error envelope serializes")
}

/// Warnings on stderr, for a caller that does not print through [`emit`] (the MCP server,
/// whose stdout is the protocol).
pub fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", inert(warning));
    }
}

/// Prints a finished command and returns its exit code.
pub fn emit(report: &Report, json: bool) -> i32 {
    warn(&report.warnings);
    let text = if json {
        // Straight to text: a large report is not copied into a second tree first.
        let envelope = Envelope {
            v: 1,
            kind: report.kind,
            data: &report.data,
            next: &report.next,
        };
        let mut line = serde_json::to_string(&envelope).expect("envelope serializes");
        line.push('\n');
        line
    } else {
        let mut text = inert(&report.human).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    if let Err(err) = write_stdout(text.as_bytes()) {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            return 0;
        }
        eprintln!("error: cannot write to stdout: {err}");
        return 2;
    }
    if let Some(nothing) = report.nothing.as_deref().filter(|_| !json) {
        eprintln!("{}", inert(nothing));
    }
    match report.status {
        Status::Ok => 0,
        Status::NothingOrFailed => 1,
        Status::BadInput => 2,
    }
}

/// Prints an error: the JSON envelope on stdout with `--json`, always a line on stderr.
pub fn emit_error(err: &Error, json: bool) -> i32 {
    if json {
        let mut line = error_envelope(err).to_string();
        line.push('\n');
        let _ = write_stdout(line.as_bytes());
    }
    eprintln!("error: {}", inert(&err.message));
    if let Some(fix) = &err.fix {
        eprintln!("  to fix: {}", inert(fix));
    }
    err.exit_code()
}

/// `n` and a noun, singular or plural: `count(1, "observation")` is "1 observation",
/// `count(2, "entry")` "2 entries". The noun may be several words (`"turn card"`).
pub fn count<N>(n: N, noun: &str) -> String
where
    N: std::fmt::Display + PartialEq + From<u8>,
{
    if n == N::from(1) {
        format!("{n} {noun}")
    } else {
        format!("{n} {}", plural(noun))
    }
}

/// The plural of an English noun, by the regular rules (enough for cairn's own words).
fn plural(noun: &str) -> String {
    let consonant_y = noun.strip_suffix('y').filter(|stem| {
        stem.chars()
            .last()
            .is_some_and(|c| !"aeiouAEIOU".contains(c))
    });
    if let Some(stem) = consonant_y {
        format!("{stem}ies")
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| noun.ends_with(e))
    {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// One line of data on stdout, flushed at once: a server's address, which its caller reads
/// before anything else comes.
pub fn data_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A line for people, on stderr (progress, notices).
pub fn notice(message: &str) {
    eprintln!("{}", inert(message));
}

/// `text` without what a terminal would act on instead of showing: escape sequences (CSI
/// `ESC [ … final`, OSC `ESC ] … BEL` or `ESC \\`, DCS/SOS/PM/APC up to `ESC \\`, and two-byte
/// `ESC X`), their one-character C1 forms, every other C0 or C1 control except `\n` and `\t`
/// (a lone `\r` would let a line overwrite the one before it), DEL, and the bidirectional
/// overrides and isolates that reorder what is shown. Borrowed when there is nothing to remove.
pub fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    let removed = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(removed) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        // The sequence's introducer: ESC and its next character, or the C1 form.
        let intro = match c {
            '\u{1b}' => chars.next_if(|n| ('\u{40}'..='\u{5f}').contains(n)),
            '\u{90}' => Some('P'),
            '\u{9b}' => Some('['),
            '\u{9d}' => Some(']'),
            '\u{98}' => Some('X'),
            '\u{9e}' => Some('^'),
            '\u{9f}' => Some('_'),
            c if removed(c) => continue,
            c => {
                out.push(c);
                continue;
            }
        };
        match intro {
            // CSI: parameters and intermediates, then one final byte.
            Some('[') => {
                while chars
                    .next_if(|n| ('\u{20}'..='\u{3f}').contains(n))
                    .is_some()
                {}
                chars.next_if(|n| ('\u{40}'..='\u{7e}').contains(n));
            }
            // OSC, DCS, SOS, PM, APC: a string up to BEL, ST (`ESC \\`) or its C1 form.
            Some(']' | 'P' | 'X' | '^' | '_') => {
                while let Some(n) = chars.next() {
                    if n == '\u{7}' || n == '\u{9c}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            // A two-character escape (`ESC c`, `ESC 7` …) or a lone ESC: gone.
            _ => {
                chars.next_if(|n| ('\u{20}'..='\u{7e}').contains(n) && *n != '[');
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// A progress bar on stderr, shown only to a person at a terminal.
pub fn progress(len: u64, terminal: bool, what: &str) -> indicatif::ProgressBar {
    if !terminal {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} {eta}")
        .expect("template is valid");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

/// When `CAIRN_PHASES` is set, the time since the process started (its first phase) of each
/// phase a command passes, on stderr with its thread: where a recall's milliseconds go,
/// without a profiler (`CAIRN_PHASES=1 cairn recall --mode hybrid QUERY`).
pub fn phase(name: &str) {
    static START: std::sync::OnceLock<Option<std::time::Instant>> = std::sync::OnceLock::new();
    let start =
        START.get_or_init(|| std::env::var_os("CAIRN_PHASES").map(|_| std::time::Instant::now()));
    if let Some(start) = start {
        eprintln!(
            "{:>8.3} ms {:?} {name}",
            start.elapsed().as_secs_f64() * 1000.0,
            std::thread::current().id()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_text_keeps_words_and_loses_what_a_terminal_would_act_on() {
        let cases: &[(&str, &str)] = &[
            ("plain text\n\tindented", "plain text\n\tindented"),
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[2J\u{1b}[1;1Hclear", "clear"),
            ("\u{1b}]0;pwned title\u{7}after", "after"),
            (
                "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
                "link",
            ),
            ("\u{1b}P1$rqm\u{1b}\\dcs", "dcs"),
            ("\u{9b}31mc1 csi", "c1 csi"),
            ("\u{9d}0;t\u{7}c1 osc", "c1 osc"),
            ("over\rwrite", "overwrite"),
            ("bell\u{7} nul\u{0} del\u{7f} bs\u{8}", "bell nul del bs"),
            ("\u{1b}cReset", "Reset"),
            ("\u{1b}", ""),
            ("left\u{202e}thgir\u{2069}", "leftthgir"),
            (
                "kept: ünïcode ✓ and [brackets]",
                "kept: ünïcode ✓ and [brackets]",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(inert(raw), *want, "{raw:?}");
        }
        assert!(matches!(
            inert("nothing to do"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn counts_take_the_singular_only_for_one() {
        let cases: &[(u64, &str, &str)] = &[
            (0, "observation", "0 observations"),
            (1, "observation", "1 observation"),
            (2, "entry", "2 entries"),
            (1, "entry", "1 entry"),
            (3, "day", "3 days"),
            (2, "match", "2 matches"),
            (2, "ADR", "2 ADRs"),
            (5, "turn card", "5 turn cards"),
        ];
        for (n, noun, want) in cases {
            assert_eq!(count(*n, noun), *want);
        }
        assert_eq!(count(1usize, "file"), "1 file");
        assert_eq!(count(7usize, "file"), "7 files");
    }
}
