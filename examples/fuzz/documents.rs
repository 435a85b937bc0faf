//! The targets of what `cairn note` and `cairn library add` read from outside: the LLM's
//! `<note>` reply, a note file edited by hand, an HTML page, a PDF, and Markdown or plain
//! text cut into chunks. Each calls the function the command calls on the bytes it fetched or
//! read (`library::prepare` for `library add`, `extract::html` / `note::plain_summary` /
//! `Draft::into_note` for a fetched note), then what the command does next with the result.

use cairn::index::sources;
use cairn::library::{self, Format, chunk};
use cairn::note::{self, Draft, Note};

use crate::targets::{KB, Target, now, text};

pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "note_reply",
            calls: "note::llm::parse (the LLM's <note> reply), then what `note` does with it: note::tags, Draft::into_note, Note::render, Note::parse of the file written",
            max_len: 8 * KB,
            dict: &[
                "<note>",
                "</note>",
                "<title>",
                "</title>",
                "<tags>",
                "</tags>",
                "<summary>",
                "</summary>",
                "```xml\n",
                "```",
                "&lt;",
                "&gt;",
                "&amp;",
                "&quot;",
                "&apos;",
                "&amp;lt;",
                "<>",
                "</>",
                ", ",
            ],
            run: note_reply,
        },
        Target {
            name: "note_file",
            calls: "note::Note::parse (`note list`, `note show`, the index: YAML frontmatter, yaml_serde), Note::indexed_text, sources::note_doc",
            max_len: 16 * KB,
            dict: &[
                "---\n",
                "\n---\n",
                "url: ",
                "title: ",
                "tags: [",
                "relevance: ",
                "captured: ",
                "session: ",
                "2026-12-01T19:30:00Z",
                "\u{feff}",
                "!!binary",
                "&a",
                "*a",
                "<<: *a",
                "? ",
                "|\n",
                "~",
                "## Page\n",
            ],
            run: note_file,
        },
        Target {
            name: "html",
            calls: "library::prepare (Html: extract::html, html2text; chunk::marked_text), sources::library_doc; a fetched note: extract::html, note::plain_summary, Draft::into_note",
            max_len: 64 * KB,
            dict: &[
                "<html>",
                "<head>",
                "<title>",
                "</title>",
                "<body>",
                "<h1>",
                "</h1>",
                "<h2>",
                "<h6>",
                "<p>",
                "</p>",
                "<br>",
                "<a href=\"/x\">",
                "</a>",
                "<pre>",
                "<code>",
                "<table><tr><td>",
                "</td></tr></table>",
                "<ul><li>",
                "<ol start=\"-5\">",
                "<li value=\"18446744073709551616\">",
                "<td colspan=\"65535\">",
                "<td rowspan=\"4294967295\">",
                "<div>",
                "</div>",
                "<blockquote>",
                "<script>",
                "</script>",
                "<style>",
                "</style>",
                "<img alt=\"x\">",
                "<sup>",
                "<details><summary>",
                "&nbsp;",
                "&lt;",
                "# ",
            ],
            run: html,
        },
        Target {
            name: "pdf",
            calls: "library::prepare (Pdf: extract::pdf, lopdf Document::load_mem and extract_text page by page; chunk::plain), extract::pdf_carried, sources::library_doc",
            max_len: 64 * KB,
            dict: &[
                "%PDF-1.4\n",
                "%PDF-1.5\n",
                " 0 obj\n",
                "endobj\n",
                "stream\n",
                "\nendstream",
                "xref\n",
                "trailer\n",
                "startxref\n",
                "%%EOF",
                "<<",
                ">>",
                "/Type /Page",
                "/Type /Pages",
                "/Kids [",
                "/Count ",
                "/Parent ",
                "/Contents ",
                "/Resources ",
                "/Font ",
                "/Encoding /WinAnsiEncoding",
                "/Encoding /Identity-H",
                "/ToUnicode ",
                "/Filter /FlateDecode",
                "/Filter /ASCIIHexDecode",
                "/Filter /LZWDecode",
                "/DecodeParms << /Predictor 12 /Columns 5 >>",
                "/Length ",
                "/Type /ObjStm",
                "/Type /XRef",
                "/W [1 2 1]",
                "/Index [",
                "/Prev ",
                "/Encrypt ",
                " 0 R",
                "BT",
                "ET",
                "Tj",
                "TJ",
                "T*",
                "Tf",
                "Td",
                "'",
                "(",
                ")",
                "<feff",
                "\\(",
                "\\)",
                "\\ddd",
                "[(a) -250 (b)] TJ",
            ],
            run: pdf,
        },
        Target {
            name: "markdown",
            calls: "library::prepare (Markdown: chunk::markdown, comrak, the heading path; Text: chunk::plain), sources::library_doc; every chunk within the size bound",
            max_len: 32 * KB,
            dict: &[
                "# ",
                "## ",
                "###### ",
                "####### ",
                "\n===\n",
                "\n---\n",
                "---\ntitle: x\n---\n",
                "```\n",
                "~~~\n",
                "    ",
                "> ",
                "- ",
                "1. ",
                "\n\n",
                ". ",
                "\r",
                "\u{3000}",
                "<!-- -->",
                "| a | b |\n|---|---|\n",
                "[x]: http://a\n",
            ],
            run: markdown,
        },
    ]
}

fn note_reply(bytes: &[u8]) {
    let Ok(d) = note::llm::parse(&text(bytes)) else {
        return;
    };
    // What `cairn note` does with a reply it accepted: the tags joined to those given, the
    // note drafted, rendered and written; the file must read back as the note written.
    let tags = note::tags(&[vec!["given".to_string()], d.tags.clone()].concat());
    let written = Draft {
        url: Some("https://example.com/guide".into()),
        title: d.title.clone(),
        tags,
        relevance: "why it mattered".into(),
        summary: d.summary.clone(),
        text: "The page's text.".into(),
        session: None,
    }
    .into_note(now());
    let file = written.render();
    let read = Note::parse(&file);
    assert!(
        read.as_ref().is_ok_and(|n| n.front == written.front),
        "a note written from an accepted reply does not read back: {read:?}"
    );
}

fn note_file(bytes: &[u8]) {
    if let Ok(n) = Note::parse(&text(bytes)) {
        let _ = n.indexed_text();
        let _ = sources::note_doc(&n, "vault/notes/2026-12-01-fuzzed.md", now());
    }
}

/// `library add` of a document: prepared, each chunk made the index's document.
fn add(bytes: &[u8], format: Format, name: &str) -> Option<library::Prepared> {
    let prepared = library::prepare(bytes, format, name).ok()?;
    if format == Format::Pdf {
        // What `library add` scans for secrets besides the pages.
        let _ = library::extract::pdf_carried(bytes);
    }
    for (n, c) in prepared.chunks.iter().enumerate() {
        let record = library::ChunkRecord {
            id: format!("lib-0123456789abcdef-{n}"),
            doc: "0123456789abcdef".into(),
            n,
            title: prepared.title.clone(),
            source: name.into(),
            heading: c.heading.clone(),
            page: c.page,
            text: c.text.clone(),
            added: String::from_utf8_lossy(bytes).chars().take(40).collect(),
        };
        let _ = sources::library_doc(
            &record,
            ".cairn/library/0123456789abcdef.jsonl",
            chrono::DateTime::<chrono::Utc>::default(),
        );
        // The bound the chunker keeps: a chunk is at most MAX_CHARS, plus the overlap it
        // starts with and the blank line after it.
        let chars = c.text.chars().count();
        assert!(
            chars <= chunk::MAX_CHARS + chunk::OVERLAP_CHARS + 2,
            "a chunk of {chars} characters"
        );
    }
    Some(prepared)
}

fn html(bytes: &[u8]) {
    add(bytes, Format::Html, "https://example.com/guide.html");
    // `cairn note URL` of a page: its text, the summary made without an LLM, the note.
    let page = library::extract::html(bytes);
    let summary = note::plain_summary(&page.text, &page.headings);
    let _ = Draft {
        url: Some("https://example.com/guide".into()),
        title: page.title.unwrap_or_default(),
        summary,
        text: page.text,
        ..Draft::default()
    }
    .into_note(now())
    .render();
}

fn pdf(bytes: &[u8]) {
    if let Some(p) = add(bytes, Format::Pdf, "manual.pdf") {
        assert!(
            p.chunks
                .iter()
                .all(|c| c.page.is_some_and(|n| n >= 1 && Some(n) <= p.pages)),
            "a chunk's page is not one of the document's"
        );
    }
}

fn markdown(bytes: &[u8]) {
    add(bytes, Format::Markdown, "guide.md");
    add(bytes, Format::Text, "notes.txt");
}

#[path = "../../tests/cli/pdfgen.rs"]
mod pdfgen;

/// The PDF seeds, made by the generator the library's tests use (`tests/cli/pdfgen.rs`):
/// two pages of text; a page without text (a scan) before one with; the first with its
/// streams compressed (FlateDecode); and with object streams and a cross-reference stream
/// (PDF 1.5). `scripts/fuzz --write-seeds` writes them to `fuzz/corpus/pdf/`.
pub fn pdf_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let two = pdfgen::pdf(&[
        lines(&["Install", "Run the installer first (as root)."]),
        lines(&["On Linux", "Use apt; NFS mounts need root to unmount."]),
    ]);
    let scanned = pdfgen::pdf(&[vec![], lines(&["Only the second page has text."])]);
    let mut doc = lopdf::Document::load_mem(&two).expect("the generated PDF loads");
    doc.compress();
    let mut compressed = Vec::new();
    doc.save_to(&mut compressed)
        .expect("the compressed PDF is written");
    let mut modern = Vec::new();
    doc.save_modern(&mut modern)
        .expect("the PDF with object streams is written");
    vec![
        ("gen-two-pages.pdf", two),
        ("gen-empty-page.pdf", scanned),
        ("gen-compressed.pdf", compressed),
        ("gen-object-streams.pdf", modern),
    ]
}
