//! Searching a field only in the segments that hold words in it.
//!
//! A segment in which no document has a word in a field (every record without a context, a
//! segment of slog lines without titles) has no postings for it, and tantivy answers a read of
//! such a field with an empty term dictionary that it builds the first time a process needs
//! one: an FST builder whose registry is 20,000 cells, made and dropped, about 1 ms, 9% of a
//! `cairn recall` at 100,000 records in perf. Every word query read the three text fields of
//! every segment, so nearly every search paid it. [`InField`] reads a field only in the
//! segments whose postings file names it (its footer, read once a segment), and counts the
//! field's BM25 statistics over those segments only: a segment without the field adds
//! nothing to them, so the scores are the same, up to the order of a sum's terms (ADR 145).

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use tantivy::directory::{CompositeFile, Directory, ManagedDirectory};
use tantivy::index::SegmentId;
use tantivy::query::{
    Bm25StatisticsProvider, EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{DocId, Score, SegmentReader, Term};

/// Which fields each segment has postings for, read from its postings file's footer.
pub(super) struct Present {
    directory: ManagedDirectory,
    /// A bit per field id (schemas here have fewer than 64 fields).
    known: Mutex<FxHashMap<SegmentId, u64>>,
}

impl std::fmt::Debug for Present {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Present")
    }
}

impl Present {
    pub(super) fn new(index: &tantivy::Index) -> Arc<Present> {
        Arc::new(Present {
            directory: index.directory().clone(),
            known: Mutex::new(FxHashMap::default()),
        })
    }

    /// Whether `reader`'s segment has postings for `field`. True when its postings file cannot
    /// be read here: tantivy's own read then decides, as it would without this.
    pub(super) fn has(&self, reader: &SegmentReader, field: Field) -> bool {
        let bit = field.field_id();
        if bit >= 64 {
            return true;
        }
        let id = reader.segment_id();
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let fields = *known
            .entry(id)
            .or_insert_with(|| self.fields_of(id).unwrap_or(u64::MAX));
        fields & (1 << bit) != 0
    }

    /// The fields named in the footer of segment `id`'s postings file (`UUID.idx`, tantivy's
    /// name for it).
    fn fields_of(&self, id: SegmentId) -> Option<u64> {
        let path = format!("{}.idx", id.uuid_string());
        let file = self.directory.open_read(std::path::Path::new(&path)).ok()?;
        let composite = CompositeFile::open(&file).ok()?;
        Some(
            (0..64u32)
                .filter(|&i| composite.open_read(Field::from_field_id(i)).is_some())
                .fold(0u64, |bits, i| bits | 1 << i),
        )
    }

    /// How many documents of the segments that have `term`'s field hold it.
    pub(super) fn doc_freq(&self, searcher: &tantivy::Searcher, term: &Term) -> u64 {
        searcher
            .segment_readers()
            .iter()
            .filter(|r| self.has(r, term.field()))
            .map(|r| {
                r.inverted_index(term.field())
                    .and_then(|i| Ok(i.doc_freq(term)?))
                    .map_or(0, u64::from)
            })
            .sum()
    }
}

/// `query`, read only in the segments that have postings for `field` (every term of `query`
/// is in `field`).
#[derive(Debug)]
pub(super) struct InField {
    pub field: Field,
    pub query: Box<dyn Query>,
    pub present: Arc<Present>,
}

impl Clone for InField {
    fn clone(&self) -> Self {
        InField {
            field: self.field,
            query: self.query.box_clone(),
            present: Arc::clone(&self.present),
        }
    }
}

/// The searcher's BM25 statistics, with the segments that lack a field left out of that
/// field's sums (where they add nothing).
struct Skipping<'a> {
    searcher: &'a tantivy::Searcher,
    outer: &'a dyn Bm25StatisticsProvider,
    present: &'a Present,
}

impl Bm25StatisticsProvider for Skipping<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut total = 0;
        for reader in self.searcher.segment_readers() {
            if self.present.has(reader, field) {
                total += reader.inverted_index(field)?.total_num_tokens();
            }
        }
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.outer.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.present.doc_freq(self.searcher, term))
    }
}

impl Query for InField {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let weight = match scoring {
            EnableScoring::Enabled {
                searcher,
                statistics_provider,
            } => {
                let skipping = Skipping {
                    searcher,
                    outer: statistics_provider,
                    present: &self.present,
                };
                self.query
                    .weight(EnableScoring::enabled_from_statistics_provider(
                        &skipping, searcher,
                    ))?
            }
            disabled => self.query.weight(disabled)?,
        };
        Ok(Box::new(InFieldWeight {
            field: self.field,
            weight,
            present: Arc::clone(&self.present),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct InFieldWeight {
    field: Field,
    weight: Box<dyn Weight>,
    present: Arc<Present>,
}

impl Weight for InFieldWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        if self.present.has(reader, self.field) {
            self.weight.scorer(reader, boost)
        } else {
            Ok(Box::new(EmptyScorer))
        }
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.present.has(reader, self.field) {
            self.weight.explain(reader, doc)
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} has no words in this field"
            )))
        }
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        if self.present.has(reader, self.field) {
            self.weight.count(reader)
        } else {
            Ok(0)
        }
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        if self.present.has(reader, self.field) {
            self.weight.for_each_pruning(threshold, reader, callback)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, Occur, QueryParser};
    use tantivy::schema::{STORED, Schema, TEXT};
    use tantivy::{TantivyDocument, doc};

    #[test]
    fn a_field_is_read_only_where_a_segment_has_it_with_the_parsers_scores() {
        let mut schema = Schema::builder();
        let record = schema.add_text_field("record", TEXT | STORED);
        let context = schema.add_text_field("context", TEXT);
        let index = tantivy::Index::create_in_ram(schema.build());
        let mut writer: tantivy::IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        // A segment without a word of context, then one with some.
        for text in [
            "nfs mount hung",
            "cache warm deploy",
            "deploy the nfs cache",
        ] {
            writer.add_document(doc!(record => text)).unwrap();
        }
        writer.commit().unwrap();
        for (text, ctx) in [
            ("staging deploy", "after the nfs outage"),
            ("rollout", "deploy cache"),
        ] {
            writer
                .add_document(doc!(record => text, context => ctx))
                .unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let present = Present::new(&index);
        let segments = searcher.segment_readers();
        assert_eq!(segments.len(), 2);
        let (without, with) = if segments[0].num_docs() == 3 {
            (&segments[0], &segments[1])
        } else {
            (&segments[1], &segments[0])
        };
        assert!(!present.has(without, context));
        assert!(present.has(without, record));
        assert!(present.has(with, context) && present.has(with, record));
        for words in ["deploy nfs", "cache", "outage", "nothing here"] {
            let mut parser = QueryParser::for_index(&index, vec![record, context]);
            parser.set_field_boost(context, 0.5);
            let whole = parser.parse_query_lenient(words).0;
            let fields: Vec<(Occur, Box<dyn Query>)> = [(record, 1.0), (context, 0.5)]
                .into_iter()
                .map(|(field, boost)| {
                    let mut parser = QueryParser::for_index(&index, vec![field]);
                    parser.set_field_boost(field, boost);
                    let query: Box<dyn Query> = Box::new(InField {
                        field,
                        query: parser.parse_query_lenient(words).0,
                        present: Arc::clone(&present),
                    });
                    (Occur::Should, query)
                })
                .collect();
            let split = BooleanQuery::new(fields);
            let top = |q: &dyn Query| {
                let mut hits = searcher
                    .search(q, &TopDocs::with_limit(10).order_by_score())
                    .unwrap();
                hits.sort_by_key(|(_, a)| (a.segment_ord, a.doc_id));
                hits
            };
            let (a, b) = (top(&whole), top(&split));
            assert_eq!(a.len(), b.len(), "{words}");
            for ((sa, da), (sb, db)) in a.iter().zip(&b) {
                assert_eq!(da, db, "{words}");
                assert!((sa - sb).abs() < 1e-5, "{words}: {sa} against {sb}");
            }
            assert_eq!(
                searcher.search(&split, &tantivy::collector::Count).unwrap(),
                a.len(),
                "{words}"
            );
        }
        assert_eq!(
            present.doc_freq(&searcher, &Term::from_field_text(context, "nfs")),
            1
        );
        assert_eq!(
            present.doc_freq(&searcher, &Term::from_field_text(record, "deploy")),
            3
        );
    }
}
