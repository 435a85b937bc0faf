//! Reading a model's reply: where the answer starts once whitespace and one code fence
//! around it are taken off, the line of a position, and short quotes for messages. What
//! the observer, reflector and triage parsers share; each parser keeps its own schema.

use quick_xml::Reader;
use quick_xml::events::Event;

/// Why a reply was refused, and where: `line` counts from 1 in the reply as received.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

/// The reply without whitespace around it and without one code fence (```` ``` ```` or
/// ```` ```xml ````) around the whole, and where that body starts in the reply.
pub fn unfence(reply: &str) -> Result<(&str, usize), ParseError> {
    let start = reply.len() - reply.trim_start().len();
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return Ok((trimmed, start));
    };
    let error = |pos: usize, message: &str| ParseError {
        line: line_at(reply, pos),
        message: message.to_string(),
    };
    let Some((info, body)) = rest.split_once('\n') else {
        return Err(error(start, "a code fence and nothing in it"));
    };
    if !matches!(info.trim(), "" | "xml" | "XML") {
        return Err(error(
            start,
            &format!("a code fence of `{}`, not of XML", excerpt(info.trim())),
        ));
    }
    let Some(inner) = body.strip_suffix("```") else {
        return Err(error(
            reply.len(),
            "the code fence is never closed: the reply is cut off",
        ));
    };
    let body_start = start + 3 + info.len() + 1;
    let lead = inner.len() - inner.trim_start().len();
    Ok((inner.trim(), body_start + lead))
}

/// The 1-based line of byte `pos` in `text`.
pub fn line_at(text: &str, pos: usize) -> usize {
    let pos = pos.min(text.len());
    text.as_bytes()[..pos]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn to_usize(pos: u64) -> usize {
    usize::try_from(pos).unwrap_or(usize::MAX)
}

/// A value quoted in a message: one line, at most 60 characters.
pub fn excerpt(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None if line.len() < text.len() => format!("{line}…"),
        None => line.to_string(),
    }
}

/// The next XML event of `reader` and the byte of the body where it starts; or where the XML
/// broke and a message saying so (a syntax error, which quick-xml reports only on reaching
/// the end inside a tag, is a reply cut off).
pub fn next_event<'a>(
    reader: &mut Reader<&'a [u8]>,
) -> Result<(usize, Event<'a>), (usize, String)> {
    let pos = to_usize(reader.buffer_position());
    match reader.read_event() {
        Ok(event) => Ok((pos, event)),
        Err(e) => {
            let at = to_usize(reader.error_position());
            let cut = match e {
                quick_xml::Error::Syntax(_) => ": the reply is cut off",
                _ => "",
            };
            Err((at, format!("not well-formed XML: {e}{cut}")))
        }
    }
}
