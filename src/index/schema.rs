//! The index's schema: the fields of a document, and a [`Doc`] to and from tantivy's document.

use chrono::{TimeZone, Utc};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::{DocAddress, TantivyDocument};

use super::{Doc, Index, Kind, index_err, tokenizer, vectors};
use crate::error::Result;

pub(super) struct Fields {
    pub(super) id: Field,
    pub(super) kind: Field,
    pub(super) text: Field,
    pub(super) title: Field,
    pub(super) record: Field,
    pub(super) context: Field,
    pub(super) context_bytes: Field,
    pub(super) time: Field,
    pub(super) class: Field,
    pub(super) stale: Field,
    pub(super) chash: Field,
    pub(super) category: Field,
    pub(super) verdict: Field,
    pub(super) status: Field,
    pub(super) session: Field,
    pub(super) source: Field,
    pub(super) file: Field,
}

pub(super) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_opts = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer::NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let searched = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenizer::NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        // Shown and embedded; searched through `record` and `context`, which split it.
        text: b.add_text_field("text", STORED),
        title: b.add_text_field("title", text_opts.clone()),
        record: b.add_text_field("record", searched.clone()),
        context: b.add_text_field("context", searched),
        context_bytes: b.add_u64_field("context_bytes", STORED),
        time: b.add_i64_field("time", FAST | STORED),
        class: b.add_u64_field("class", FAST),
        stale: b.add_u64_field("stale", FAST),
        chash: b.add_u64_field("chash", INDEXED | FAST),
        category: b.add_text_field("category", STRING | STORED),
        verdict: b.add_text_field("verdict", STRING | STORED),
        status: b.add_text_field("status", STRING | STORED),
        session: b.add_text_field("session", STRING | STORED),
        source: b.add_text_field("source", STRING | STORED),
        file: b.add_text_field("file", STRING | STORED),
    };
    (b.build(), fields)
}

impl Index {
    pub(super) fn to_tantivy(&self, doc: &Doc) -> TantivyDocument {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        d.add_text(f.id, &doc.id);
        d.add_text(f.kind, doc.kind.as_str());
        d.add_text(f.text, &doc.text);
        d.add_text(f.title, &doc.title);
        let record = doc.record();
        d.add_text(f.record, record);
        let context = doc.text.len() - record.len();
        if context > 0 {
            d.add_text(f.context, &doc.text[record.len()..]);
            d.add_u64(f.context_bytes, context as u64);
        }
        d.add_i64(f.time, doc.time.timestamp_millis());
        d.add_u64(f.class, doc.class() as u64);
        d.add_u64(f.stale, u64::from(doc.is_stale()));
        d.add_u64(f.chash, vectors::text_hash(&doc.text));
        d.add_text(f.category, &doc.category);
        d.add_text(f.verdict, &doc.verdict);
        d.add_text(f.status, &doc.status);
        d.add_text(f.session, &doc.session);
        d.add_text(f.source, &doc.source);
        d.add_text(f.file, &doc.file);
        d
    }

    pub(super) fn load(&self, searcher: &tantivy::Searcher, addr: DocAddress) -> Result<Doc> {
        let d: TantivyDocument = searcher
            .doc(addr)
            .map_err(|e| index_err("cannot read a document", e))?;
        let f = &self.fields;
        let text = |field: Field| {
            d.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let millis = d.get_first(f.time).and_then(|v| v.as_i64()).unwrap_or(0);
        let full = text(f.text);
        let context_bytes = d
            .get_first(f.context_bytes)
            .and_then(|v| v.as_u64())
            .unwrap_or(0) as usize;
        let context = full
            .len()
            .checked_sub(context_bytes)
            .and_then(|at| full.get(at..))
            .map(|c| c.strip_prefix('\n').unwrap_or(c).to_string())
            .unwrap_or_default();
        Ok(Doc {
            id: text(f.id),
            kind: Kind::parse(&text(f.kind)).unwrap_or(Kind::Observation),
            text: full,
            title: text(f.title),
            context,
            time: Utc
                .timestamp_millis_opt(millis)
                .single()
                .unwrap_or_default(),
            category: text(f.category),
            verdict: text(f.verdict),
            status: text(f.status),
            session: text(f.session),
            source: text(f.source),
            file: text(f.file),
        })
    }
}
