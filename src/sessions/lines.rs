//! The non-blank lines of a transcript, read one at a time into one reused buffer with a cap
//! on what a line may hold ([`Lines`]), and a line parsed as JSON with its failure recorded
//! ([`parse_line`]).

use std::io::{self, BufRead, Seek, SeekFrom};

use serde::Deserialize;

use super::{Builder, LineError};

/// One non-blank line of the input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of its first byte.
    pub start: u64,
    /// Byte offset just past its newline (or the end of the input).
    pub end: u64,
    /// The line without its newline; empty for a line over the cap.
    pub text: &'a [u8],
    /// Whether a newline ends it.
    pub complete: bool,
    /// The length of a line over the cap (its text was not kept), `None` for any other.
    pub over: Option<u64>,
}

/// The non-blank lines of a transcript, read one at a time into one reused buffer: at most
/// `max` bytes of a line are held; a longer line is read to its newline and dropped, and
/// comes out with `over` set so the reader reports it (see [`parse_line`]).
pub(crate) struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    max: usize,
    number: usize,
    offset: u64,
}

impl<R: BufRead + Seek> Lines<R> {
    pub(crate) fn new(input: R, max: usize) -> Self {
        Lines {
            input,
            buf: Vec::new(),
            max,
            number: 0,
            offset: 0,
        }
    }

    /// Back to the first line, for another pass.
    pub(crate) fn rewind(&mut self) -> io::Result<()> {
        self.seek_line(0, 1)
    }

    /// Makes the line starting at byte `start`, numbered `number`, the next one read.
    pub(crate) fn seek_line(&mut self, start: u64, number: usize) -> io::Result<()> {
        self.input.seek(SeekFrom::Start(start))?;
        self.offset = start;
        self.number = number.saturating_sub(1);
        Ok(())
    }

    /// The next non-blank line, `None` at the end of the input.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            self.buf.clear();
            let start = self.offset;
            let (mut len, mut over, mut blank, mut complete) = (0u64, false, true, false);
            loop {
                let available = match self.input.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if available.is_empty() {
                    break;
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let piece = &available[..newline.unwrap_or(available.len())];
                if !over && self.buf.len() + piece.len() > self.max {
                    over = true;
                    blank = self.buf.iter().all(u8::is_ascii_whitespace);
                    self.buf.clear();
                }
                if over {
                    blank = blank && piece.iter().all(u8::is_ascii_whitespace);
                } else {
                    self.buf.extend_from_slice(piece);
                }
                len += piece.len() as u64;
                let used = piece.len() + usize::from(newline.is_some());
                self.input.consume(used);
                if newline.is_some() {
                    complete = true;
                    break;
                }
            }
            if len == 0 && !complete {
                return Ok(None);
            }
            self.number += 1;
            self.offset += len + u64::from(complete);
            if !over {
                blank = self.buf.iter().all(u8::is_ascii_whitespace);
            }
            if blank {
                continue;
            }
            return Ok(Some(Line {
                number: self.number,
                start,
                end: self.offset,
                text: &self.buf,
                complete,
                over: over.then_some(len),
            }));
        }
    }
}

/// Parses one line as `T`; a failure is recorded on `builder` unless it is an unfinished last
/// line (see the module docs). A line over the cap is a failure too, named with its length.
pub(crate) fn parse_line<'a, T: Deserialize<'a>>(
    line: &Line<'a>,
    builder: &mut Builder,
) -> Option<T> {
    let failure = match line.over {
        Some(len) => format!(
            "line of {len} bytes is over the {} bytes a transcript line may have; skipped",
            builder.max_line
        ),
        None => match serde_json::from_slice(line.text) {
            Ok(value) => return Some(value),
            Err(e) => e.to_string(),
        },
    };
    if line.complete {
        builder.bad_line(LineError {
            line: line.number,
            message: failure,
        });
    }
    None
}
