//! Reading the index: the word and vector searches, lookups by id, file or hash, counts and
//! the vocabulary questions recall asks.

use std::collections::HashSet;
use std::sync::Arc;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::Field;
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TokenStream;
use tantivy::{DocAddress, Term};

use super::open::vectors_dir;
use super::present::InField;
use super::{
    CHANCE_MIN, CHANCE_PAIRS, CONTEXT_BOOST, DIR, Decay, Doc, Early, Filter, Hit, Index, Kind,
    index_err, passes, tokenizer, top, vector_candidates, vectors, wider_candidates,
};
use crate::error::Result;
use crate::repo::Repo;

/// Rows of the vector store by hash, with their cosines, best first.
type Nearest = Vec<(u64, f32)>;

impl Index {
    pub(super) fn vectorizer(&self) -> Result<&dyn vectors::Vectorizer> {
        if let Some(v) = self.vectorizer.get() {
            return Ok(v.as_ref());
        }
        let v = vectors::for_config(&self.embed_config)?;
        Ok(self.vectorizer.get_or_init(|| v).as_ref())
    }

    pub(super) fn store(&self) -> Option<&vectors::Store> {
        self.store
            .get_or_init(|| {
                let path = vectors::path_for(&self.vectors_dir, &self.model);
                let bytes = std::fs::metadata(&path).ok()?;
                if bytes.len() < 16 {
                    return None;
                }
                let dims = vectors::dims_of(&path)?;
                vectors::Store::open(&path, dims).ok()
            })
            .as_ref()
    }

    /// The documents nearest the query by meaning, best first, as hits whose raw score is the
    /// cosine (no decay yet).
    pub fn search_vectors(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        if query.trim().is_empty() {
            return Ok(Vec::new());
        }
        // Before the store is mapped here: the early search brings its own mapping.
        let k = vector_candidates(limit);
        if let Some((nearest, q)) = self.early_nearest(query, k) {
            return self.resolve_or_widen(nearest, k, &q, filter, limit, min_similarity);
        }
        if self.store().is_none() {
            return Ok(Vec::new());
        }
        let q = self.query_vector(query)?;
        self.search_by_vector(&q, filter, limit, min_similarity)
    }

    /// The documents of `nearest` (the store's `k` nearest rows to `q`) that pass `filter`;
    /// when fewer than `limit` pass while every row read was above `min_similarity` and the
    /// store had more, those of a search for [`wider_candidates`] rows (ADR 146).
    fn resolve_or_widen(
        &self,
        nearest: Nearest,
        k: usize,
        q: &[f32],
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        let more = nearest.len() >= k
            && nearest
                .last()
                .is_some_and(|(_, cos)| f64::from(*cos) >= min_similarity);
        let hits = self.resolve_nearest(nearest, filter, limit, min_similarity)?;
        if hits.len() >= limit || !more {
            return Ok(hits);
        }
        let Some(store) = self.store() else {
            return Ok(hits);
        };
        crate::output::phase("vectors: wider");
        let wider = store.search(q, wider_candidates(limit));
        self.resolve_nearest(wider, filter, limit, min_similarity)
    }

    /// The query's vector, as [`Index::search_vectors`] makes it (the configured model).
    pub fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        self.vectorizer()?.query(query)
    }

    /// The stored vectors (scale, int8 numbers) of the texts whose [`vectors::text_hash`] is
    /// in `hashes`, as the index holds them (each indexed document's text has one once the
    /// index is up to date, unless embedding failed).
    pub fn stored_vectors(
        &self,
        hashes: &HashSet<u64>,
    ) -> std::collections::HashMap<u64, (f32, Vec<i8>)> {
        self.store().map(|s| s.lookup(hashes)).unwrap_or_default()
    }

    /// Vectors for texts about to be stored, from the configured model.
    pub fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.vectorizer()?.documents(texts)
    }

    /// [`Index::search_vectors`] for a vector already made.
    pub fn search_by_vector(
        &self,
        q: &[f32],
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        let Some(store) = self.store() else {
            return Ok(Vec::new());
        };
        let k = vector_candidates(limit);
        self.resolve_or_widen(store.search(q, k), k, q, filter, limit, min_similarity)
    }

    /// The search of the built-in model's vectors for `query`'s `k` nearest rows, which
    /// needs neither the index nor its freshness check: a recall starts it on a thread before
    /// it opens the index and hands it over ([`Index::take_early`]), and its vector list uses
    /// it when the store file is still as the search found it. `None` for a provider's model
    /// (its query vector is a call, made only when needed) or no store yet.
    pub fn search_early(repo: &Repo, query: &str, k: usize) -> Option<Early> {
        if vectors::model_id_for(&repo.config.embed) != crate::embed::MODEL_ID
            || query.trim().is_empty()
        {
            return None;
        }
        let path = vectors::path_for(&vectors_dir(&repo.path(DIR)), crate::embed::MODEL_ID);
        crate::output::phase("early: started");
        let len = std::fs::metadata(&path).ok()?.len();
        let store = vectors::Store::open(&path, vectors::dims_of(&path)?).ok()?;
        crate::output::phase("early: store open");
        if store.is_empty() {
            return None;
        }
        let model = crate::embed::Builtin::shared();
        crate::output::phase("early: model loaded");
        let q = crate::embed::Embedder::embed(model, &[query]).pop()?;
        crate::output::phase("early: embedded");
        let nearest = store.search(&q, k);
        crate::output::phase("early: searched");
        Some(Early {
            query: query.to_string(),
            vector: q,
            k,
            len,
            store,
            nearest,
        })
    }

    /// Hands this index a search of its vectors started before it was opened.
    pub fn take_early(&self, early: std::thread::JoinHandle<Option<Early>>) {
        *self.early.lock().unwrap_or_else(|e| e.into_inner()) = Some(early);
    }

    /// The early search's rows for `query` and `k`, if it searched for exactly those and the
    /// store file has not changed since (this read's update appended nothing to it).
    fn early_nearest(&self, query: &str, k: usize) -> Option<(Nearest, Vec<f32>)> {
        let handle = self
            .early
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        let early = handle.join().ok()??;
        let path = vectors::path_for(&self.vectors_dir, &self.model);
        let same = early.query == query
            && early.k == k
            && self.model == crate::embed::MODEL_ID
            && std::fs::metadata(&path).is_ok_and(|m| m.len() == early.len);
        if !same {
            return None;
        }
        // Its store is the one this index would map: keep it for the other reads of vectors.
        let _ = self.store.set(Some(early.store));
        crate::output::phase("early search taken");
        Some((early.nearest, early.vector))
    }

    /// The documents of the nearest rows (hash, cosine; best first) that pass `filter`, down
    /// to `min_similarity`, at most `limit`.
    fn resolve_nearest(
        &self,
        nearest: Nearest,
        filter: &Filter,
        limit: usize,
        min_similarity: f64,
    ) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let mut hits = Vec::new();
        let nearest: Vec<(u64, f32)> = nearest
            .into_iter()
            .take_while(|(_, cos)| f64::from(*cos) >= min_similarity)
            .collect();
        // The nearest rows are looked up `limit` at a time: most searches need no more than
        // the first `limit` (the rest are there for records a filter or a deletion leaves out).
        'chunks: for chunk in nearest.chunks(limit.max(1)) {
            let hashes: Vec<u64> = chunk.iter().map(|(h, _)| *h).collect();
            crate::output::phase("vectors: nearest in hand");
            let addresses = self.docs_of_hashes(&searcher, &hashes)?;
            crate::output::phase("vectors: documents found");
            for ((_, cos), docs) in chunk.iter().zip(addresses) {
                for addr in docs {
                    let doc = self.load(&searcher, addr)?;
                    if passes(&doc, filter) {
                        hits.push(Hit {
                            doc,
                            raw: f64::from(*cos),
                            decay: 1.0,
                            score: f64::from(*cos),
                        });
                    }
                }
                if hits.len() >= limit {
                    break 'chunks;
                }
            }
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// The live documents whose text has each hash of `hashes` (at most 16 a hash), in the
    /// order of `hashes`: one look-up in each segment's postings of `chash` a hash, no query
    /// to plan and score per hash.
    fn docs_of_hashes(
        &self,
        searcher: &tantivy::Searcher,
        hashes: &[u64],
    ) -> Result<Vec<Vec<DocAddress>>> {
        use tantivy::{DocSet, TERMINATED};
        let mut out = vec![Vec::new(); hashes.len()];
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let postings_of = segment
                .inverted_index(self.fields.chash)
                .map_err(|e| index_err("search", e))?;
            let alive = segment.alive_bitset();
            for (hash, docs) in hashes.iter().zip(out.iter_mut()) {
                let term = Term::from_field_u64(self.fields.chash, *hash);
                let Some(mut postings) = postings_of
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(|e| index_err("search", e))?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED && docs.len() < 16 {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        docs.push(DocAddress::new(ord as u32, doc));
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    pub(super) fn exists(&self, searcher: &tantivy::Searcher, id: &str) -> bool {
        let q = TermQuery::new(
            Term::from_field_text(self.fields.id, id),
            IndexRecordOption::Basic,
        );
        searcher.search(&q, &Count).map(|n| n > 0).unwrap_or(false)
    }

    /// The document with `id`, if the index holds one.
    pub fn doc(&self, id: &str) -> Result<Option<Doc>> {
        self.get(&self.reader.searcher(), id)
    }

    pub(super) fn get(&self, searcher: &tantivy::Searcher, id: &str) -> Result<Option<Doc>> {
        let q = TermQuery::new(
            Term::from_field_text(self.fields.id, id),
            IndexRecordOption::Basic,
        );
        let top = searcher
            .search(&q, &TopDocs::with_limit(1).order_by_score())
            .map_err(|e| index_err("search", e))?;
        match top.first() {
            Some((_, addr)) => Ok(Some(self.load(searcher, *addr)?)),
            None => Ok(None),
        }
    }

    /// The query for `words` under `filter` (everything matching the filter when empty).
    pub(super) fn query(&self, words: &str, filter: &Filter) -> Box<dyn Query> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if words.trim().is_empty() {
            clauses.push((Occur::Must, Box::new(AllQuery)));
        } else {
            // Each field's words are read only in the segments that have any (ADR 145): the
            // query is the words in each field, as the parser makes them for all three at
            // once, with the same scores (a sum over the same terms).
            let words = sanitize(words);
            let fields: Vec<(Occur, Box<dyn Query>)> =
                [(f.record, 1.0), (f.context, CONTEXT_BOOST), (f.title, 2.0)]
                    .into_iter()
                    .map(|(field, boost)| {
                        let mut parser = QueryParser::for_index(&self.index, vec![field]);
                        parser.set_field_boost(field, boost);
                        let (query, _errors) = parser.parse_query_lenient(&words);
                        let query: Box<dyn Query> = Box::new(InField {
                            field,
                            query,
                            present: Arc::clone(&self.present),
                        });
                        (Occur::Should, query)
                    })
                    .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(fields))));
        }
        let term = |field: Field, value: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, value),
                IndexRecordOption::Basic,
            ))
        };
        clauses.push((Occur::MustNot, term(f.status, "deleted")));
        // A superseded observation's place is taken by the one that superseded it (`cairn
        // maintain`); ADRs keep their superseded status in view.
        clauses.push((
            Occur::MustNot,
            Box::new(BooleanQuery::new(vec![
                (Occur::Must, term(f.kind, Kind::Observation.as_str())),
                (Occur::Must, term(f.status, "superseded")),
            ])),
        ));
        if !filter.include_hold {
            clauses.push((Occur::MustNot, term(f.verdict, "hold")));
        }
        if filter.kinds.is_empty() {
            // The library is a collection of its own: only a filter naming it searches it.
            clauses.push((Occur::MustNot, term(f.kind, Kind::Library.as_str())));
        } else if !self.all_of_kinds(&filter.kinds) {
            let kinds: Vec<(Occur, Box<dyn Query>)> = filter
                .kinds
                .iter()
                .map(|k| (Occur::Should, term(f.kind, k.as_str())))
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(kinds))));
        }
        if let Some(c) = &filter.category {
            clauses.push((Occur::Must, term(f.category, c)));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// Whether every document of the index, deleted ones included, is of one of `kinds`: a
    /// filter on them then leaves nothing out, and a search need not intersect its words
    /// with the kind's postings, which hold every document (a library search in a
    /// repository of library chunks: words mode took 0.92 of its time without it, ADR 147).
    fn all_of_kinds(&self, kinds: &[Kind]) -> bool {
        let searcher = self.reader.searcher();
        searcher.segment_readers().iter().all(|segment| {
            let Ok(postings) = segment.inverted_index(self.fields.kind) else {
                return false;
            };
            let held: u32 = kinds
                .iter()
                .map(|k| {
                    postings
                        .doc_freq(&Term::from_field_text(self.fields.kind, k.as_str()))
                        .unwrap_or(0)
                })
                .sum();
            held == segment.max_doc()
        })
    }

    /// The best `limit` matches of `words`, by BM25 × decay when `decay` is given, else by
    /// BM25 alone.
    pub fn search(
        &self,
        words: &str,
        filter: &Filter,
        limit: usize,
        decay: Option<&Decay>,
    ) -> Result<Vec<Hit>> {
        if !words.trim().is_empty() && self.query_terms(words).is_empty() {
            // Only stop words or punctuation: no term to match (the parser would make a query
            // of nothing, which matched every record).
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let query = self.query(words, filter);
        crate::output::phase("search: query made");
        let limit = limit.max(1);
        let scored: Vec<(f64, DocAddress)> = match decay {
            None => searcher
                .search(&query, &TopDocs::with_limit(limit).order_by_score())
                .map_err(|e| index_err("search", e))?
                .into_iter()
                .map(|(s, a)| (f64::from(s), a))
                .collect(),
            Some(decay) => searcher
                .search(
                    &query,
                    &top::DecayedTop {
                        limit,
                        decay: Arc::new(decay.clone()),
                    },
                )
                .map_err(|e| index_err("search", e))?,
        };
        crate::output::phase("search: collected");
        let mut hits = Vec::with_capacity(scored.len());
        for (score, addr) in scored {
            let doc = self.load(&searcher, addr)?;
            let factor = decay.map_or(1.0, |d| {
                d.factor(doc.class(), doc.time.timestamp_millis(), doc.is_stale())
            });
            let raw = if factor > 0.0 { score / factor } else { 0.0 };
            hits.push(Hit {
                doc,
                raw,
                decay: factor,
                score,
            });
        }
        // Equal scores in the order of their ids, not of where the index happens to keep them
        // (an index built in steps and one rebuilt at once must rank alike).
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.doc.id.cmp(&b.doc.id))
        });
        Ok(hits)
    }

    /// How many documents match a field's value (`kind`, `verdict`, `status`).
    pub fn count(&self, field: &str, value: &str) -> Result<usize> {
        self.count_all(&[(field, value)])
    }

    /// Documents matching every `(field, value)` (kind, verdict or status).
    pub fn count_all(&self, terms: &[(&str, &str)]) -> Result<usize> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (field, value) in terms {
            let f = match *field {
                "kind" => self.fields.kind,
                "verdict" => self.fields.verdict,
                "status" => self.fields.status,
                _ => return Ok(0),
            };
            let q = TermQuery::new(Term::from_field_text(f, value), IndexRecordOption::Basic);
            clauses.push((Occur::Must, Box::new(q)));
        }
        self.reader
            .searcher()
            .search(&BooleanQuery::new(clauses), &Count)
            .map_err(|e| index_err("count", e))
    }

    /// Every document, sorted by id, for comparing two indexes.
    pub fn all_docs(&self) -> Result<Vec<Doc>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc_id in segment.doc_ids_alive() {
                out.push(self.load(&searcher, DocAddress::new(ord as u32, doc_id))?);
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.file.cmp(&b.file)));
        Ok(out)
    }

    /// The BM25 inverse document frequency of a word in the text field,
    /// `ln(1 + (N - n + 0.5) / (n + 0.5))`, of the term the index makes of it (stemmed); 0 for
    /// a word the index drops (a stop word). Soft matching weighs a query's words by it.
    pub fn idf(&self) -> impl FnMut(&str) -> f64 + use<'_> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(tokenizer::NAME)
            .unwrap_or_else(tokenizer::analyzer);
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as f64;
        // Over what records say themselves: every record has its words there once.
        let field = self.fields.record;
        let present = Arc::clone(&self.present);
        move |word| {
            let mut stream = analyzer.token_stream(word);
            let Some(token) = stream.next() else {
                return 0.0;
            };
            let df = present.doc_freq(&searcher, &Term::from_field_text(field, &token.text)) as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        }
    }

    /// The terms the index makes of a text (its tokenizer: code-aware, lowercased, stemmed,
    /// stop words dropped): what a query and a record must share to match by words.
    pub fn terms(&self) -> impl FnMut(&str) -> HashSet<String> + use<'_> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get(tokenizer::NAME)
            .unwrap_or_else(tokenizer::analyzer);
        move |text| {
            let mut out = HashSet::new();
            let mut stream = analyzer.token_stream(text);
            while let Some(token) = stream.next() {
                out.insert(token.text.clone());
            }
            out
        }
    }

    /// The terms of a query, read as [`Index::search`] reads it.
    pub fn query_terms(&self, query: &str) -> HashSet<String> {
        (self.terms())(&sanitize(query))
    }

    /// Whether any of `terms` (as [`Index::query_terms`] makes them) occurs in a record, its
    /// context or its title, in any document of the index, the library's included.
    pub fn knows_any(&self, terms: &HashSet<String>) -> bool {
        let searcher = self.reader.searcher();
        let fields = [self.fields.record, self.fields.context, self.fields.title];
        terms.iter().any(|t| {
            fields.iter().any(|&f| {
                self.present
                    .doc_freq(&searcher, &Term::from_field_text(f, t))
                    > 0
            })
        })
    }

    /// The cosine that two unrelated texts of this store reach by chance with probability
    /// `1 - quantile`: that quantile of the cosines of [`CHANCE_PAIRS`] pairs of stored
    /// texts ([`vectors::Store::chance_cosines`]). `None` with too few texts to say
    /// ([`CHANCE_MIN`]) or no vectors.
    ///
    /// Measuring it reads a thousand rows spread over the whole store, a page fault each
    /// (1.8 ms of a 10 ms recall at 100,000 records), so the figure is kept beside the store
    /// (`VECTORS-FILE.chance`), for the store as it is: its size and time and the quantile asked.
    /// A store that changed, or a folder this process cannot write, measures it again.
    pub fn chance_cosine(&self, quantile: f64) -> Option<f64> {
        let store = self.store()?;
        let path = vectors::path_for(&self.vectors_dir, &self.model);
        let key = std::fs::metadata(&path)
            .ok()
            .map(|m| format!("{} {} {quantile}", m.len(), crate::files::mtime_ns(&m)));
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".chance");
        let kept = path.with_file_name(name);
        if let Some(key) = &key
            && let Ok(text) = std::fs::read_to_string(&kept)
            && let Some((k, v)) = text.trim_end().split_once('\n')
            && k == key
        {
            if v == "none" {
                return None;
            }
            if let Ok(v) = v.parse::<f64>() {
                return Some(v);
            }
        }
        let mut cosines = store.chance_cosines(CHANCE_PAIRS);
        let chance = (cosines.len() >= CHANCE_MIN).then(|| {
            cosines.sort_by(f32::total_cmp);
            let at = ((cosines.len() - 1) as f64 * quantile.clamp(0.0, 1.0)).round() as usize;
            f64::from(cosines[at])
        });
        // Named as cairn's staged files are, so that one a kill leaves is swept
        // (`files::sweep_dead_temps`); derived, so renamed into place without a sync.
        if let Some(key) = key
            && let Ok(mut tmp) = crate::files::staging(&self.vectors_dir)
        {
            use std::io::Write;
            let value = chance.map_or("none".to_string(), |v| v.to_string());
            if writeln!(tmp, "{key}\n{value}").is_ok() {
                let _ = tmp.persist(&kept);
            }
        }
        chance
    }

    /// Notes a warning for the command's output (see [`Index::warnings`]).
    pub fn note(&self, warning: String) {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(warning);
    }

    /// The refresh's warnings, then those noted by reads since.
    pub fn warnings(&self) -> Vec<String> {
        let mut all = self.refresh.warnings.clone();
        all.extend(self.noted());
        all
    }

    /// The warnings noted by reads since the last refresh.
    pub fn noted(&self) -> Vec<String> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The documents taken from `file` (a source file, relative to the root).
    pub fn docs_of_file(&self, file: &str) -> Result<Vec<Doc>> {
        let searcher = self.reader.searcher();
        let q = TermQuery::new(
            Term::from_field_text(self.fields.file, file),
            IndexRecordOption::Basic,
        );
        let n = searcher
            .search(&q, &Count)
            .map_err(|e| index_err("cannot search", e))?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let top = searcher
            .search(&q, &TopDocs::with_limit(n).order_by_score())
            .map_err(|e| index_err("cannot search", e))?;
        top.into_iter()
            .map(|(_, addr)| self.load(&searcher, addr))
            .collect()
    }

    /// Whether a live document has a text of this hash ([`vectors::text_hash`]).
    pub fn has_text_hash(&self, hash: u64) -> bool {
        let q = TermQuery::new(
            Term::from_field_u64(self.fields.chash, hash),
            IndexRecordOption::Basic,
        );
        self.reader
            .searcher()
            .search(&q, &Count)
            .is_ok_and(|n| n > 0)
    }

    /// Number of live documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

/// Query text with the query language's operators neutralized: recall takes words, not syntax.
fn sanitize(words: &str) -> String {
    words
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c.is_whitespace() {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_filter_is_left_out_only_when_every_document_is_of_its_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("cairn.toml"), "").unwrap();
        std::fs::create_dir_all(root.join("slog")).unwrap();
        std::fs::write(
            root.join("slog/2026-11-01.jsonl"),
            "{\"id\":\"sl-000000000001\",\"ts\":\"2026-11-01T10:00:00Z\",\"action\":\"deploy\",\"tool\":\"api\",\"detail\":\"rolled out the cache\"}\n",
        )
        .unwrap();
        let repo = Repo::open(root.to_path_buf()).unwrap();
        let index = Index::open(&repo).unwrap();
        assert!(index.all_of_kinds(&[Kind::Slog]));
        assert!(!index.all_of_kinds(&[Kind::Adr]));
        let slog = Filter {
            kinds: vec![Kind::Slog],
            category: None,
            include_hold: true,
        };
        assert_eq!(index.search("cache", &slog, 10, None).unwrap().len(), 1);
        drop(index);
        std::fs::create_dir_all(root.join("decisions")).unwrap();
        std::fs::write(
            root.join("decisions/0001-use-a-cache.md"),
            "# 1. Use a cache\n\n## Decision\n\nKeep the cache warm.\n",
        )
        .unwrap();
        let index = Index::open(&repo).unwrap();
        assert!(!index.all_of_kinds(&[Kind::Slog]));
        assert!(index.all_of_kinds(&[Kind::Slog, Kind::Adr]));
        // The filter still leaves the ADR out.
        let hits = index.search("cache", &slog, 10, None).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc.kind, Kind::Slog);
    }

    #[test]
    fn sanitize_keeps_words_only() {
        assert_eq!(
            sanitize("nfs: \"mount\" -root +x AND (y)"),
            "nfs   mount   root  x and  y "
        );
    }
}
