//! Writing the index: folding what changed in the files in, embedding what the vector store
//! lacks, and deleting documents.

use std::collections::HashSet;

use tantivy::{IndexWriter, TantivyDocument, Term};

use super::checkpoints::Payload;
use super::open::sweep_writer_temps;
use super::schema::schema;
use super::{DIR, Index, Kind, SCHEMA_VERSION, index_err, sources, tokenizer, vectors, writable};
use crate::error::Result;
use crate::repo::Repo;

impl Index {
    /// Folds what changed in the files into the index.
    pub(super) fn update(&mut self, repo: &Repo) -> Result<()> {
        self.update_with(repo, &sources::list(repo)?)
    }

    /// [`Index::update`] with the source files as `found` them.
    pub(super) fn update_with(&mut self, repo: &Repo, found: &[sources::Found]) -> Result<()> {
        if !self.payload.load(&self.dir) {
            return Err(index_err(
                "its checkpoints file is missing",
                "run `cairn index --rebuild`",
            ));
        }
        let mut plan = sources::plan(repo, &self.payload.files, found)?;
        self.files = found.len();
        let model = self.model.clone();
        if plan.is_empty() && self.payload.vectors.as_deref() == Some(model.as_str()) {
            return Ok(());
        }
        crate::failpoint::pausepoint("index-planned");
        // Cloned only now: a read that finds nothing changed (the usual one) copies nothing.
        let mut payload = self.payload.clone();
        // A big first build gets every core; the usual few appended lines one thread.
        let big = plan.whole.len() + plan.tail.len() > 64 || self.payload.files.is_empty();
        let threads = if big {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
        } else {
            1
        };
        let mut writer: IndexWriter<TantivyDocument> = match self
            .index
            .writer_with_num_threads(threads, threads * 48_000_000)
        {
            Ok(w) => {
                sweep_writer_temps(&self.vectors_dir.with_file_name("index"));
                w
            }
            Err(tantivy::TantivyError::LockFailure(..)) => {
                self.refresh.stale = true;
                self.refresh.warnings.push(
                    "another process is updating the index; this read sees its last committed state".into(),
                );
                return Ok(());
            }
            Err(e) => return Err(index_err("cannot open the writer", e)),
        };
        // The plan was made from the commit this index read before it took the writer lock;
        // another process may have committed since, folding in the same appended lines.
        // Planned again from the last commit, read under the lock, they are folded in once
        // (issue 30: two processes each folded in one tail, and left its documents twice).
        if self.moved_on()? {
            plan = sources::plan(repo, &self.payload.files, found)?;
            if plan.is_empty() && self.payload.vectors.as_deref() == Some(model.as_str()) {
                return Ok(());
            }
            // The checkpoints to commit are that commit's, moved on by this plan: the old
            // ones would put back the offsets of files the other process folded in, and the
            // next update would fold them in again.
            payload = self.payload.clone();
        }
        let searcher = self.reader.searcher();
        let index_empty = searcher.num_docs() == 0;
        let mut batch = sources::Batch::default();
        for rel in &plan.removed {
            writer.delete_term(Term::from_field_text(self.fields.file, rel));
            payload.files.remove(rel);
            self.refresh.removed += 1;
        }
        for (rel, checkpoint) in &plan.touched {
            payload.files.insert(rel.clone(), checkpoint.clone());
        }
        for rel in &plan.whole {
            writer.delete_term(Term::from_field_text(self.fields.file, rel));
            self.refresh.reindexed += 1;
        }
        let (whole, warnings) = sources::read_whole(repo, &plan.whole)?;
        self.refresh.warnings.extend(warnings);
        for (rel, checkpoint, docs) in whole {
            for doc in docs {
                batch.add(doc);
            }
            payload.files.insert(rel, checkpoint);
        }
        // Each file's new lines are read and parsed on `threads` threads (files are
        // independent), then folded in file order (an event finds its record by then).
        let tails: Vec<Result<sources::Tail>> = {
            let read = |(rel, from): &(String, u64)| {
                let previous = payload
                    .files
                    .get(rel)
                    .cloned()
                    .unwrap_or_else(sources::empty_checkpoint);
                sources::read_tail(repo, rel, &previous, *from)
            };
            let part = plan.tail.len().div_ceil(threads).max(1);
            if threads == 1 {
                plan.tail.iter().map(read).collect()
            } else {
                std::thread::scope(|s| {
                    let handles: Vec<_> = plan
                        .tail
                        .chunks(part)
                        .map(|files| s.spawn(move || files.iter().map(read).collect::<Vec<_>>()))
                        .collect();
                    handles
                        .into_iter()
                        .flat_map(|h| {
                            h.join()
                                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                        })
                        .collect()
                })
            }
        };
        for ((rel, _), tail) in plan.tail.iter().zip(tails) {
            let (checkpoint, lines, warnings) = tail?;
            self.refresh.warnings.extend(warnings);
            for line in lines {
                match line {
                    sources::TailLine::Doc(doc) => {
                        // An observation id seen before (two machines wrote the same one) is
                        // stored once.
                        if doc.kind == Kind::Observation
                            && !index_empty
                            && self.exists(&searcher, &doc.id)
                        {
                            continue;
                        }
                        batch.add(doc);
                    }
                    sources::TailLine::Event(event) => {
                        if !batch.apply(&event)
                            && let Some(mut doc) = self.get(&searcher, &event.id)?
                        {
                            sources::apply_event(&mut doc, &event);
                            writer.delete_term(Term::from_field_text(self.fields.id, &doc.id));
                            batch.add(doc);
                        }
                    }
                }
            }
            payload.files.insert(rel.clone(), checkpoint);
            self.refresh.appended += 1;
        }
        let docs = batch.into_docs();
        // Vectors first: a crash after this leaves rows no document needs, never the reverse.
        let complete = payload.vectors.as_deref() == Some(model.as_str());
        let mut texts: Vec<(u64, &str)> = docs
            .iter()
            .map(|d| (vectors::text_hash(&d.text), d.text.as_str()))
            .collect();
        let mut all_texts = Vec::new();
        if !complete {
            // Every document must have a vector of this model: look at all of them.
            all_texts = self.all_docs()?;
            texts.extend(
                all_texts
                    .iter()
                    .map(|d| (vectors::text_hash(&d.text), d.text.as_str())),
            );
        }
        // The documents go to the writer (its threads index them in memory) while the vectors
        // are made on others: the two fill each other's idle cores. Nothing is committed
        // before the vectors are appended.
        let (embedded, added) = std::thread::scope(|s| {
            let me = &*self;
            let embedding = s.spawn(|| me.embed_missing(&texts));
            let mut added = 0;
            let mut failed = None;
            for doc in &docs {
                if let Err(e) = writer.add_document(me.to_tantivy(doc)) {
                    failed = Some(index_err("cannot add", e));
                    break;
                }
                added += 1;
            }
            let embedded = embedding
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match failed {
                Some(e) => Err(e),
                None => Ok((embedded, added)),
            }
        })?;
        // Another store was appended to: map it again when next asked.
        self.store = std::sync::OnceLock::new();
        self.refresh.added += added;
        match embedded {
            Ok(n) => {
                self.refresh.embedded = n;
                payload.vectors = Some(model);
            }
            Err(e) => {
                self.refresh.warnings.push(format!(
                    "vectors not updated ({e}); recall uses words until they are"
                ));
                payload.vectors = None;
            }
        }
        drop(all_texts);
        drop(docs);
        payload.schema = SCHEMA_VERSION;
        let replaced = self.payload.name.clone();
        let json = payload.prepare(&self.dir)?;
        let mut prepared = writer
            .prepare_commit()
            .map_err(|e| index_err("cannot commit", e))?;
        prepared.set_payload(&json);
        let opstamp = prepared
            .commit()
            .map_err(|e| index_err("cannot commit", e))?;
        if let Some(name) = &payload.name {
            Payload::collect(&self.dir, name, replaced.as_deref());
        }
        self.payload = payload;
        self.committed = Some(opstamp);
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        Ok(())
    }

    /// Embeds the texts the vector store lacks; returns how many were embedded.
    fn embed_missing(&self, texts: &[(u64, &str)]) -> Result<usize> {
        let path = vectors::path_for(&self.vectors_dir, &self.model);
        let mut store: Option<vectors::Store> = None;
        let mut have: HashSet<u64> = HashSet::new();
        let dims = vectors::dims_of(&path);
        if self.model == crate::embed::MODEL_ID
            && texts.len() <= 1024
            && let Some(dims) = dims
        {
            // A few new texts for the built-in model (free to embed), appended without reading
            // the store: a text seen before gets a second row, which search returns once. A
            // provider's store is always read first, so that nothing is paid for twice.
            store = Some(vectors::Store::appender(&path, dims));
        } else if let Ok(s) = vectors::Store::open(&path, dims.unwrap_or(crate::embed::DIMS)) {
            // The built-in model's dims; a provider's store is opened once its dims are known.
            if !s.is_empty() {
                // Only the hashes are needed: append without keeping a copy of the rows (a
                // store that keeps its rows copies them all at every append).
                have = s.hashes();
                store = Some(vectors::Store::appender(&path, s.dims()));
            }
        }
        let mut todo: Vec<(u64, &str)> = Vec::new();
        let mut queued = rustc_hash::FxHashSet::default();
        for (h, t) in texts {
            if !have.contains(h) && queued.insert(*h) {
                todo.push((*h, t));
            }
        }
        let mut done = 0;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        for chunk in todo.chunks(256 * threads) {
            let strs: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
            // Embedding is CPU-bound for the built-in model: one part per core.
            let part = strs.len().div_ceil(threads).max(1);
            let vectorizer = self.vectorizer()?;
            let parts: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
                let handles: Vec<_> = strs
                    .chunks(part)
                    .map(|p| scope.spawn(move || vectorizer.documents(p)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("embedding thread does not panic"))
                    .collect()
            });
            let mut vecs = Vec::with_capacity(strs.len());
            for p in parts {
                vecs.extend(p?);
            }
            let Some(dims) = vecs.first().map(Vec::len) else {
                continue;
            };
            let s = match &mut store {
                Some(s) if s.dims() == dims => s,
                _ => store.insert(vectors::Store::appender(&path, dims)),
            };
            let items: Vec<(u64, Vec<f32>)> = chunk.iter().map(|(h, _)| *h).zip(vecs).collect();
            s.append(&items)?;
            done += items.len();
        }
        Ok(done)
    }

    /// Deletes the documents `ids` from the index of `repo` and moves the checkpoints of
    /// `files` (JSON Lines sources rewritten without exactly those records' lines, each with
    /// its length before) to the files as they now are, in one commit: the next update need
    /// not read them again (an observations file read whole folds every observations file).
    /// A file whose checkpoint did not cover all of its old bytes is left to the next update,
    /// which reads it whole. Returns false when there was nothing to do it on (no index, a
    /// writer busy, another schema): the next update then does it all.
    pub fn drop_documents(repo: &Repo, ids: &[String], files: &[(String, u64)]) -> Result<bool> {
        let dir = repo.path(DIR);
        if !dir.join("meta.json").is_file() || !writable(&dir) {
            return Ok(false);
        }
        let (schema, fields) = schema();
        let index = tantivy::Index::open_in_dir(&dir).map_err(|e| index_err("cannot open", e))?;
        if index.schema() != schema {
            return Ok(false);
        }
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let mut writer: IndexWriter<TantivyDocument> =
            match index.writer_with_num_threads(1, 48_000_000) {
                Ok(w) => {
                    sweep_writer_temps(&dir);
                    w
                }
                Err(tantivy::TantivyError::LockFailure(..)) => return Ok(false),
                Err(e) => return Err(index_err("cannot open the writer", e)),
            };
        // The checkpoints are read under the writer lock: no commit comes between them and
        // this one.
        let metas = index
            .load_metas()
            .map_err(|e| index_err("cannot read its last commit", e))?;
        let Some(mut payload) = Payload::read(&dir, &metas) else {
            return Ok(false);
        };
        for id in ids {
            writer.delete_term(Term::from_field_text(fields.id, id));
        }
        for (rel, old_len) in files {
            let covered = payload
                .files
                .get(rel)
                .is_some_and(|cp| cp.size == *old_len && cp.offset == *old_len);
            if covered && sources::is_jsonl_source(rel) {
                payload
                    .files
                    .insert(rel.clone(), sources::jsonl_checkpoint_now(repo, rel)?);
            }
        }
        let replaced = payload.name.clone();
        let json = payload.prepare(&dir)?;
        let mut prepared = writer
            .prepare_commit()
            .map_err(|e| index_err("cannot commit", e))?;
        prepared.set_payload(&json);
        prepared
            .commit()
            .map_err(|e| index_err("cannot commit", e))?;
        if let Some(name) = &payload.name {
            Payload::collect(&dir, name, replaced.as_deref());
        }
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        Ok(true)
    }

    /// Makes deleted documents physically gone: tantivy only marks a deleted document, and
    /// keeps its stored text and its terms in the segment until the segment is merged. Merges
    /// each segment holding deleted documents (alone: the others are not rewritten), then
    /// removes the files no longer used. Returns how many segments were rewritten.
    pub fn purge_deleted(&mut self) -> Result<usize> {
        if self.read_only() {
            return Ok(0);
        }
        let searcher = self.reader.searcher();
        let dirty: Vec<tantivy::index::SegmentId> = searcher
            .segment_readers()
            .iter()
            .filter(|r| r.num_deleted_docs() > 0)
            .map(|r| r.segment_id())
            .collect();
        drop(searcher);
        let mut writer: IndexWriter<TantivyDocument> = self
            .index
            .writer_with_num_threads(1, 48_000_000)
            .map_err(|e| index_err("cannot open the writer", e))?;
        sweep_writer_temps(&self.vectors_dir.with_file_name("index"));
        for id in &dirty {
            writer
                .merge(std::slice::from_ref(id))
                .wait()
                .map_err(|e| index_err("cannot merge", e))?;
        }
        writer
            .garbage_collect_files()
            .wait()
            .map_err(|e| index_err("cannot remove old segment files", e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| index_err("cannot merge", e))?;
        self.reader
            .reload()
            .map_err(|e| index_err("cannot reload", e))?;
        Ok(dirty.len())
    }
}
