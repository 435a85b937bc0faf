//! The ranked lists recall reads before fusion: how deep ([`depth`]), hybrid's words, soft and
//! vector lists ([`hybrid`]), the second round of pseudo-relevance feedback ([`second_round`]),
//! and every list of a query fused, decayed and raised by time and speaker ([`fused_lists`]).

use super::fusion::{Ranked, fuse, fuse_hybrid};
use super::{Mode, Recalled, Request, boost_speaker, boost_time, feedback, when};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::{Decay, Filter, Hit, Index};

/// How deep each list is read before fusion.
pub(super) fn depth(limit: usize) -> usize {
    (limit * 4).max(40)
}

/// Sets each hit's decay factor and decayed score.
pub(super) fn decayed(mut hits: Vec<Hit>, decay: &Decay) -> Vec<Hit> {
    for h in &mut hits {
        h.decay = decay.factor(
            h.doc.class(),
            h.doc.time.timestamp_millis(),
            h.doc.is_stale(),
        );
        h.score = h.raw * h.decay;
    }
    hits
}

/// Every record the lists of [`super::recall`] read for a (non-empty) query, fused and decayed, in
/// recall's order before relevance and the cap (the words list alone read to `keep`, at
/// least the limit); and the IDF weight a full soft match scores.
pub(super) fn fused_lists(
    index: &Index,
    config: &Config,
    request: &Request,
    decay: &Decay,
    keep: usize,
) -> Result<(Vec<Recalled>, f64)> {
    let (query, filter, limit) = (&request.query, &request.filter, request.limit);
    let window = when::window(query, request.now).filter(|_| config.recall.time_boost > 1.0);
    let (mut fused, soft_total) = match request.mode {
        Mode::Words => {
            // BM25 × decay over every match, inside the collector (ADR 12); as deep as hybrid
            // reads when a time in the query may raise records from further down.
            let n = match window {
                Some(_) => keep.max(depth(limit)),
                None => keep.max(limit),
            };
            let words = index.search(query, filter, n, Some(decay))?;
            let one = vec![Ranked {
                name: "words",
                hits: words,
            }];
            (fuse(one, &[1.0], Some(decay), n), 0.0)
        }
        Mode::Vectors => {
            let mut hits = decayed(
                index.search_vectors(query, filter, depth(limit), config.recall.min_similarity)?,
                decay,
            );
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            let one = vec![Ranked {
                name: "vectors",
                hits,
            }];
            (fuse(one, &[1.0], Some(decay), usize::MAX), 0.0)
        }
        Mode::Hybrid => {
            // The lists read by relevance alone, fused by standard score, then decayed once.
            // Ranking each list with decay and fusing ranks (ADR 13) let decay reorder twice and
            // threw the scores away: on LoCoMo dev (categories 1-4, R@10) 0.581 against 0.641
            // for words and vectors (ADR 18); the soft list took it to 0.670 (ADR 20).
            let (mut lists, soft_total) = hybrid(index, query, filter, depth(limit), config)?;
            crate::output::phase("lists joined");
            let mut weights = weights(config);
            let fb = feedback_config(config);
            if fb.on() {
                let more = second_round(index, config, request, &lists, &weights, decay, &fb)?;
                for (list, weight) in more {
                    lists.push(list);
                    weights.push(weight);
                }
            }
            (
                fuse_hybrid(lists, &weights, config, Some(decay), usize::MAX)?,
                soft_total,
            )
        }
    };
    boost_time(&mut fused, window, config.recall.time_boost);
    boost_speaker(&mut fused, query, config.recall.speaker_boost);
    Ok((fused, soft_total))
}

/// `[recall] feedback_*`.
pub(super) fn feedback_config(config: &Config) -> feedback::Feedback {
    let r = &config.recall;
    feedback::Feedback {
        docs: r.feedback_docs,
        beta: r.feedback_beta as f32,
        terms: r.feedback_terms,
        vectors_weight: r.feedback_vectors_weight,
        words_weight: r.feedback_words_weight,
    }
}

/// The second round of pseudo-relevance feedback ([`feedback`]): the first round's `lists`
/// fused at `weights`, its best `fb.docs` records give the `feedback` list (the vectors nearest
/// the query moved towards theirs) and the `expanded` list (BM25 for the words that weigh most
/// in them), each with its weight. A list that cannot be made (no stored vectors, no word to
/// add) is left out.
pub(super) fn second_round(
    index: &Index,
    config: &Config,
    request: &Request,
    lists: &[Ranked],
    weights: &[f64],
    decay: &Decay,
    fb: &feedback::Feedback,
) -> Result<Vec<(Ranked, f64)>> {
    let (query, filter, limit) = (&request.query, &request.filter, request.limit);
    let copy = lists
        .iter()
        .map(|l| Ranked {
            name: l.name,
            hits: l.hits.clone(),
        })
        .collect();
    let top = fuse_hybrid(copy, weights, config, Some(decay), fb.docs)?;
    let mut out = Vec::new();
    if top.is_empty() {
        return Ok(out);
    }
    if fb.vectors_weight > 0.0 {
        use crate::index::vectors::text_hash;
        let texts: Vec<&str> = top.iter().map(|r| r.text.as_str()).collect();
        let docs: Vec<Vec<f32>> =
            if crate::index::vectors::model_id_for(&config.embed) == crate::embed::MODEL_ID {
                // The built-in model embeds a few texts in microseconds; reading them back
                // from the store is a pass over all of it.
                use crate::embed::Embedder;
                crate::embed::Builtin::shared().embed(&texts)
            } else {
                // A provider's vectors as stored: no call for texts it has embedded.
                let hashes = texts.iter().map(|t| text_hash(t)).collect();
                let stored = index.stored_vectors(&hashes);
                texts
                    .iter()
                    .filter_map(|t| stored.get(&text_hash(t)))
                    .map(|(scale, v)| feedback::dequantize(*scale, v))
                    .collect()
            };
        if !docs.is_empty()
            && let Ok(q) = index.query_vector(query)
        {
            let moved = feedback::rocchio(&q, &docs, fb.beta);
            let hits = index.search_by_vector(
                &moved,
                filter,
                depth(limit),
                config.recall.min_similarity,
            )?;
            out.push((
                Ranked {
                    name: "feedback",
                    hits,
                },
                fb.vectors_weight,
            ));
        }
    }
    if fb.words_weight > 0.0 && fb.terms > 0 {
        let texts: Vec<&str> = top.iter().map(|r| r.text.as_str()).collect();
        let words = feedback::expansion(
            &texts,
            &index.query_terms(query),
            &mut index.terms(),
            &mut index.idf(),
            fb.terms,
        );
        if !words.is_empty() {
            let hits = index.search(&words.join(" "), filter, depth(limit), None)?;
            out.push((
                Ranked {
                    name: "expanded",
                    hits,
                },
                fb.words_weight,
            ));
        }
    }
    Ok(out)
}

/// The weights of [`hybrid`]'s lists, in its order.
pub(super) fn weights(config: &Config) -> Vec<f64> {
    vec![
        config.recall.words_weight,
        config.recall.soft_weight,
        config.recall.vectors_weight,
    ]
}

/// What `channel` brings, waited for by polling a while (yielding the core to any thread
/// that wants it) before sleeping: a sleeping thread woken from another core waits for that
/// core to wake, a few hundred microseconds on a virtual machine (0.3-0.5 ms of a hybrid
/// recall's 8 here, ADR 65). None when the sender is gone without sending.
pub(super) fn spin_recv<T>(channel: &std::sync::mpsc::Receiver<T>) -> Option<T> {
    use std::sync::mpsc::TryRecvError;
    let until = std::time::Instant::now() + SPIN;
    while std::time::Instant::now() < until {
        match channel.try_recv() {
            Ok(v) => return Some(v),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    channel.recv().ok()
}

/// How long [`spin_recv`] polls before it sleeps: in the bench's phases the vector list's
/// thread ends within a millisecond of the main thread's words list, and a wait longer than
/// this is not worth a core.
pub(super) const SPIN: std::time::Duration = std::time::Duration::from_millis(5);

/// Half of a list `depth`: how deep hybrid reads its vector list, and how many of its words
/// list's records the soft list scores. A record further down either rarely reaches the
/// results, and each one costs a document load, its words' vectors and, for vectors, rows
/// read from the store. On the LoCoMo dev split (R@10 categories 1-4 / multi-hop /
/// adversarial), reading both lists to `depth` and scoring all of them: 0.758 / 0.464 /
/// 0.867; soft over the top half of each 0.757 / 0.464 / 0.863; the vector list read to
/// half (this) 0.758 / 0.466 / 0.871; the words list read to half as well 0.757 / 0.463 /
/// 0.848 (ADR 65).
pub(super) fn half_depth(depth: usize) -> usize {
    depth.div_ceil(2)
}

/// How deep hybrid reads the vector list for a cap of `limit` ([`half_depth`]): what a
/// recall's early search of the store asks for.
pub fn vector_list_depth(limit: usize) -> usize {
    half_depth(depth(limit))
}

/// Hybrid's ranked lists, undecayed: words (BM25), soft (the records of both lists ranked by
/// how well their words cover the query's words by meaning) and vectors (cosine of whole
/// texts); and the IDF weight of the query's words the soft list matched (what a full soft
/// match scores).
///
/// Soft matching ([`crate::embed::soft`]) weighs each query word by its IDF in the index and
/// compares it with each word of a record, so a question's one telling word finds its synonym
/// in a record that a whole-text average blurs. The main thread scores the top
/// [`half_depth`] of the words list's records while the vector list's thread searches and
/// scores its own (ADR 64); the vector list is read to that half. Records that cover nothing
/// are left out of it.
pub(super) fn hybrid(
    index: &Index,
    query: &str,
    filter: &Filter,
    depth: usize,
    config: &Config,
) -> Result<(Vec<Ranked>, f64)> {
    let model = crate::embed::Builtin::shared();
    let mut idf = index.idf();
    let soft_query = crate::embed::soft::SoftQuery::new(model, query, &mut idf);
    let soft_total: f64 = soft_query.words().iter().map(|w| idf(w)).sum();
    let half = half_depth(depth);
    let (words, vectors, mut soft) = std::thread::scope(|s| {
        // The vector list's thread also scores its records' soft matches, beside the main
        // thread scoring the words list's: neither waits for the other's.
        let soft_query = &soft_query;
        // The list comes back by a channel, not by joining the thread: a join waits for the
        // thread's exit, and a sleeping thread for its core to wake (0.3-0.5 ms of a recall
        // here, in CAIRN_PHASES' marks; ADR 65).
        let (sent, vectors) = std::sync::mpsc::sync_channel(1);
        s.spawn(move || {
            let vectors = index.search_vectors(query, filter, half, config.recall.min_similarity);
            crate::output::phase("vectors resolved");
            let scores: Vec<f64> = match &vectors {
                Ok(hits) => {
                    let mut scorer = soft_query.scorer(model);
                    hits.iter().map(|h| scorer.score(&h.doc.text)).collect()
                }
                Err(_) => Vec::new(),
            };
            crate::output::phase("vectors soft");
            // The receiver is there until the scope ends, which waits for this thread.
            let _ = sent.send((vectors, scores));
        });
        let words = index.search(query, filter, depth, None);
        let mut scorer = soft_query.scorer(model);
        let mut soft: Vec<Hit> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut add = |h: &Hit, s: f64, soft: &mut Vec<Hit>| {
            if seen.insert(h.doc.id.clone()) && s > 0.0 {
                soft.push(Hit {
                    doc: h.doc.clone(),
                    raw: s,
                    decay: 1.0,
                    score: s,
                });
            }
        };
        let words = words?;
        crate::output::phase("words searched");
        for h in words.iter().take(half) {
            let s = scorer.score(&h.doc.text);
            add(h, s, &mut soft);
        }
        crate::output::phase("words soft");
        // Without the vector list (a provider that does not answer), words and soft matches
        // still rank: recall degrades, it does not fail.
        // Nothing received: the thread panicked, and the scope's end raises its panic here.
        let (vectors, scores) = spin_recv(&vectors).unwrap_or_else(|| (Ok(Vec::new()), Vec::new()));
        crate::output::phase("vectors received");
        let vectors = match vectors {
            Ok(v) => v,
            Err(e) => {
                index.note(format!(
                    "the vector list was left out ({}); recall used words and soft matches",
                    e.message
                ));
                Vec::new()
            }
        };
        for (h, s) in vectors.iter().zip(scores) {
            add(h, s, &mut soft);
        }
        Ok::<_, Error>((words, vectors, soft))
    })?;
    soft.sort_by(|a, b| b.raw.total_cmp(&a.raw).then(a.doc.id.cmp(&b.doc.id)));
    let lists = vec![
        Ranked {
            name: "words",
            hits: words,
        },
        Ranked {
            name: "soft",
            hits: soft,
        },
        Ranked {
            name: "vectors",
            hits: vectors,
        },
    ];
    Ok((lists, soft_total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_recv_brings_what_is_sent_and_none_when_nothing_will_be() {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(2));
            tx.send(7).unwrap();
        });
        assert_eq!(spin_recv(&rx), Some(7));
        sender.join().unwrap();
        // Past the spin, it sleeps until the value comes.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(SPIN * 2);
            tx.send("late").unwrap();
        });
        assert_eq!(spin_recv(&rx), Some("late"));
        sender.join().unwrap();
        let (tx, rx) = std::sync::mpsc::sync_channel::<u8>(1);
        drop(tx);
        assert_eq!(spin_recv(&rx), None);
    }

    #[test]
    fn hybrid_reads_its_vector_list_to_half_a_list_s_depth() {
        // Lists are read to four times the cap, at least 40.
        assert_eq!(depth(3), 40);
        assert_eq!(depth(15), 60);
        assert_eq!(vector_list_depth(3), 20);
        assert_eq!(vector_list_depth(7), 20);
        assert_eq!(vector_list_depth(15), 30);
        assert_eq!(half_depth(41), 21);
        assert_eq!(half_depth(1), 1);
    }
}
