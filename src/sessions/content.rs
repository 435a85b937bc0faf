//! The pieces of a transcript line every reader shares: times, snippets of tool output
//! ([`Snippet`]), message content in the Anthropic block shape Claude Code and pi write
//! ([`Content`]), strings another version may write as something else ([`Text`]), and the
//! exit code named in a tool's output.

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::SNIPPET_CHARS;

/// An RFC 3339 time, or nothing.
pub(crate) fn time(text: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `text` trimmed and cut to [`SNIPPET_CHARS`] characters.
pub(crate) fn snippet(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(SNIPPET_CHARS) {
        Some((i, _)) => format!("{}…", text[..i].trim_end()),
        None => text.to_string(),
    }
}

/// A string of which only the first [`SNIPPET_CHARS`] (or so) characters are kept: tool
/// outputs can be megabytes, and serde hands us a borrowed `&str` even for escaped strings, so
/// nothing bigger is allocated.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Snippet(pub String);

impl Snippet {
    pub(crate) fn push(&mut self, text: &str) {
        // A little more than the cut, so `snippet` can trim and still mark the cut.
        let room = (SNIPPET_CHARS + 1).saturating_sub(self.0.chars().count());
        if room == 0 {
            return;
        }
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        match text.char_indices().nth(room) {
            Some((i, _)) => self.0.push_str(&text[..i]),
            None => self.0.push_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for Snippet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SnippetVisitor)
    }
}

/// Reads a string, or an array of `{"type":"text","text":…}` blocks (tool result content), or
/// anything else (ignored), into a [`Snippet`].
pub(crate) struct SnippetVisitor;

impl<'de> Visitor<'de> for SnippetVisitor {
    type Value = Snippet;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a list of text blocks")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Snippet, E> {
        let mut s = Snippet::default();
        s.push(v);
        Ok(s)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Snippet, A::Error> {
        #[derive(Deserialize)]
        struct Block {
            #[serde(rename = "type", default)]
            kind: Snippet,
            #[serde(default)]
            text: Snippet,
        }
        let mut s = Snippet::default();
        while let Some(block) = seq.next_element::<Block>()? {
            if block.kind.0 == "image" {
                s.push("[image]");
            } else if !block.text.0.is_empty() {
                s.push(&block.text.0);
            }
        }
        Ok(s)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Snippet, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Snippet::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Snippet, E> {
        Ok(Snippet::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Snippet, E> {
        Ok(Snippet::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Snippet, E> {
        Ok(Snippet::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Snippet, E> {
        Ok(Snippet::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Snippet, E> {
        Ok(Snippet::default())
    }
}

// Content blocks, in the Anthropic shape Claude Code and pi both write.

/// `message.content`: a string or a list of blocks.
#[derive(Default)]
pub(crate) enum Content<'a> {
    #[default]
    Empty,
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Deserialize)]
pub(crate) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    /// A tool call's input (claude).
    #[serde(borrow, default)]
    pub(crate) input: Option<Input<'a>>,
    /// A tool call's input (pi).
    #[serde(borrow, default)]
    pub(crate) arguments: Option<Input<'a>>,
    #[serde(borrow, default)]
    pub(crate) tool_use_id: Option<Cow<'a, str>>,
    /// A tool result's content; only its start is kept.
    #[serde(default)]
    pub(crate) content: Snippet,
    #[serde(default)]
    pub(crate) is_error: Option<bool>,
}

/// The fields of a tool call's input we read; the rest (file contents…) is skipped unread.
#[derive(Deserialize)]
pub(crate) struct Input<'a> {
    #[serde(borrow, default)]
    pub(crate) command: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) file_path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) notebook_path: Option<Cow<'a, str>>,
    /// pi's name for the file of `edit` and `write`.
    #[serde(borrow, default)]
    pub(crate) path: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Empty)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Empty)
            }
        }
        deserializer.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

impl Content<'_> {
    /// The text of the message (images as `[image]`), tool results left out.
    pub(crate) fn text(&self) -> String {
        match self {
            Content::Empty => String::new(),
            Content::Text(text) => text.to_string(),
            Content::Blocks(blocks) => {
                let mut out = String::new();
                for block in blocks {
                    let piece = match block.kind.as_ref() {
                        "text" => block.text.as_deref().unwrap_or(""),
                        "image" => "[image]",
                        _ => continue,
                    };
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(piece);
                }
                out
            }
        }
    }

    pub(crate) fn blocks(&self) -> &[Block<'_>] {
        match self {
            Content::Blocks(blocks) => blocks,
            _ => &[],
        }
    }
}

/// A string field that another version might write as something else: anything but a string
/// reads as empty instead of failing the line. Borrowed from the input when unescaped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Text::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Text::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Text::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Text::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Text::default())
            }
        }
        deserializer.deserialize_any(TextVisitor(std::marker::PhantomData))
    }
}

impl Text<'_> {
    /// The string, `""` when absent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The number in `… code N` / `Exit code N` / `exited with code N` in a tool output.
pub(crate) fn exit_code_in(text: &str) -> Option<i32> {
    const MARKERS: [&str; 4] = [
        "exited with code ",
        "Exit code: ",
        "Exit code ",
        "exit code ",
    ];
    MARKERS.iter().find_map(|marker| {
        let at = text.rfind(marker)? + marker.len();
        let digits: &str = &text[at..];
        let end = digits
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
            .map_or(digits.len(), |(i, _)| i);
        digits[..end].parse().ok()
    })
}
