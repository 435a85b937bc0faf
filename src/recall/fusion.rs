//! Fusion of ranked lists into one ranking: standard-score fusion ([`fuse`], the default),
//! reciprocal rank fusion ([`fuse_ranks`], `[recall] fusion = "rrf"`), decay applied once, and
//! a hit made a [`Recalled`] with every factor it needs for `--explain`.

use std::collections::BTreeMap;

use super::{Basis, Recalled};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::index::{Class, Decay, Hit};

/// How fused lists are combined (`[recall] fusion`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Standard scores of each list, weighed and summed; decay adds its log ([`fuse`]).
    Standard,
    /// Reciprocal rank fusion: `Σ weight / (k + rank)`, times decay ([`fuse_ranks`]).
    Rrf { k: f64 },
}

impl Fusion {
    /// The fusion `[recall]` names.
    pub fn from_config(config: &crate::config::Recall) -> Result<Fusion> {
        Fusion::parse(&config.fusion, config.rrf_k)
    }

    /// The fusion called `name` (`standard` or `rrf`), with `rrf_k` for rank fusion.
    pub fn parse(name: &str, rrf_k: f64) -> Result<Fusion> {
        match name.trim().to_ascii_lowercase().as_str() {
            "standard" | "" => Ok(Fusion::Standard),
            "rrf" if rrf_k >= 0.0 => Ok(Fusion::Rrf { k: rrf_k }),
            "rrf" => Err(Error::bad_input(format!(
                "cairn.toml: [recall] rrf_k = {rrf_k} must not be negative"
            ))),
            other => Err(Error::bad_input(format!(
                "cairn.toml: [recall] fusion = `{other}`: use standard or rrf"
            ))),
        }
    }
}

/// One ranked list, best first.
pub struct Ranked {
    pub name: &'static str,
    pub hits: Vec<Hit>,
}

/// Fuses ranked lists into one. With one list its order and scores stand. With several, each
/// list's raw scores (read undecayed) become standard scores, `(s - mean) / sd` over the list,
/// so that BM25's open scale and the cosine's narrow one weigh alike; a record's fused score is
/// the weighted sum over the lists it is in (absent from a list, it gains nothing from it), and
/// decay, when given, adds `ln(decay)`: the same relative loss a product gives a positive
/// score. On LoCoMo dev this beat reciprocal rank fusion, whose scores are too compressed for
/// decay (see [`super::recall`]).
pub fn fuse(
    lists: Vec<Ranked>,
    weights: &[f64],
    decay: Option<&Decay>,
    limit: usize,
) -> Vec<Recalled> {
    if lists.len() == 1 {
        // The list was ranked with its decay already applied (`decay` only describes it).
        let list = lists.into_iter().next().expect("one list");
        return list
            .hits
            .into_iter()
            .take(limit)
            .enumerate()
            .map(|(i, h)| {
                let scores = BTreeMap::from([(list.name, h.raw)]);
                to_recalled(h, BTreeMap::from([(list.name, i + 1)]), scores, decay)
            })
            .collect();
    }
    let scored = lists.into_iter().zip(weights).map(|(list, weight)| {
        let z = standard_scores(&list.hits);
        let points = z.into_iter().map(|z| weight * z).collect();
        (list, points)
    });
    combine(scored, decay, limit, true)
}

/// Sums each record's points over the lists it is in (its rank in each noted), sets its decay,
/// and keeps the best `limit`: the score is `raw + ln(decay)` when `log`, else `raw × decay`.
pub(super) fn combine(
    lists: impl Iterator<Item = (Ranked, Vec<f64>)>,
    decay: Option<&Decay>,
    limit: usize,
    log: bool,
) -> Vec<Recalled> {
    type Entry = (
        Hit,
        BTreeMap<&'static str, usize>,
        BTreeMap<&'static str, f64>,
        BTreeMap<&'static str, f64>,
    );
    let mut by_id: BTreeMap<String, Entry> = BTreeMap::new();
    for (list, points) in lists {
        for (i, (hit, p)) in list.hits.into_iter().zip(points).enumerate() {
            let raw = hit.raw;
            let entry = by_id
                .entry(hit.doc.id.clone())
                .or_insert_with(|| (hit, BTreeMap::new(), BTreeMap::new(), BTreeMap::new()));
            entry.1.insert(list.name, i + 1);
            entry.2.insert(list.name, raw);
            entry.3.insert(list.name, p);
        }
    }
    let mut fused: Vec<Recalled> = by_id
        .into_values()
        .map(|(mut hit, ranks, scores, points)| {
            hit.decay = decay.map_or(1.0, |d| {
                d.factor(
                    hit.doc.class(),
                    hit.doc.time.timestamp_millis(),
                    hit.doc.is_stale(),
                )
            });
            let raw: f64 = points.values().sum();
            hit.raw = raw;
            hit.score = if log {
                raw + hit.decay.max(f64::MIN_POSITIVE).ln()
            } else {
                raw * hit.decay
            };
            Recalled {
                basis: if log { Basis::Standard } else { Basis::Rrf },
                points,
                ..to_recalled(hit, ranks, scores, decay)
            }
        })
        .collect();
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    fused.truncate(limit);
    fused
}

/// Reciprocal rank fusion, as DESIGN first said: a record's raw score is `Σ weight / (k +
/// rank)` over the lists it is in (1-based ranks), and decay, when given, multiplies it. Kept
/// to measure against [`fuse`] (`[recall] fusion = "rrf"`); on LoCoMo dev it ranks worse.
pub fn fuse_ranks(
    lists: Vec<Ranked>,
    weights: &[f64],
    k: f64,
    decay: Option<&Decay>,
    limit: usize,
) -> Vec<Recalled> {
    let scored = lists.into_iter().zip(weights).map(|(list, weight)| {
        let points = (1..=list.hits.len())
            .map(|rank| weight / (k + rank as f64))
            .collect();
        (list, points)
    });
    combine(scored, decay, limit, false)
}

/// Hybrid's lists fused at `weights` as `[recall] fusion` says.
pub(super) fn fuse_hybrid(
    lists: Vec<Ranked>,
    weights: &[f64],
    config: &Config,
    decay: Option<&Decay>,
    limit: usize,
) -> Result<Vec<Recalled>> {
    Ok(match Fusion::from_config(&config.recall)? {
        Fusion::Standard => fuse(lists, weights, decay, limit),
        Fusion::Rrf { k } => fuse_ranks(lists, weights, k, decay, limit),
    })
}

/// Each hit's raw score as a standard score over the list; all 0 when the scores do not vary
/// (one hit, or ties), so that such a list neither helps nor hurts.
pub(super) fn standard_scores(hits: &[Hit]) -> Vec<f64> {
    let n = hits.len().max(1) as f64;
    let mean = hits.iter().map(|h| h.raw).sum::<f64>() / n;
    let sd = (hits.iter().map(|h| (h.raw - mean).powi(2)).sum::<f64>() / n).sqrt();
    hits.iter()
        .map(|h| if sd > 1e-12 { (h.raw - mean) / sd } else { 0.0 })
        .collect()
}

/// A hit as a result; `decay` (when the score was decayed) explains its factor.
pub(super) fn to_recalled(
    h: Hit,
    ranks: BTreeMap<&'static str, usize>,
    scores: BTreeMap<&'static str, f64>,
    decay: Option<&Decay>,
) -> Recalled {
    let class = h.doc.class();
    let millis = h.doc.time.timestamp_millis();
    let (age_days, time_decay, rate) = match decay {
        Some(d) => (d.days(millis), d.time_factor(class, millis), d.rate(class)),
        None => (0.0, 1.0, 0.0),
    };
    let stale_factor = match decay {
        Some(d) if h.doc.is_stale() => d.stale_factor,
        _ => 1.0,
    };
    Recalled {
        id: h.doc.id,
        kind: h.doc.kind,
        source: h.doc.source,
        text: h.doc.text,
        title: h.doc.title,
        time: crate::time::format(h.doc.time),
        category: h.doc.category,
        verdict: h.doc.verdict,
        status: h.doc.status,
        session: h.doc.session,
        file: h.doc.file,
        raw_score: h.raw,
        decay: h.decay,
        score: h.score,
        ranks,
        scores,
        points: BTreeMap::new(),
        soft_share: None,
        rewrite: None,
        time_match: None,
        speaker_match: None,
        from: Vec::new(),
        rejected_by: None,
        shares_word: false,
        age_days,
        time_decay,
        stale_factor,
        basis: Basis::One,
        rate: if class == Class::AdrCurrent {
            0.0
        } else {
            rate
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::tests_support::hit;
    use chrono::Utc;

    #[test]
    fn rank_fusion_sums_weight_over_k_plus_rank_then_multiplies_decay() {
        let words = Ranked {
            name: "words",
            hits: vec![hit("a", 9.0, 1.0), hit("b", 5.0, 1.0)],
        };
        let vectors = Ranked {
            name: "vectors",
            hits: vec![hit("b", 0.9, 1.0), hit("c", 0.8, 1.0)],
        };
        let out = fuse_ranks(vec![words, vectors], &[1.0, 0.5], 60.0, None, 5);
        let ids: Vec<&str> = out.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert!((out[0].raw_score - (1.0 / 62.0 + 0.5 / 61.0)).abs() < 1e-12);
        assert!((out[1].raw_score - 1.0 / 61.0).abs() < 1e-12);
        assert_eq!(out[0].ranks["words"], 2);
        assert_eq!(out[0].ranks["vectors"], 1);
        assert_eq!(out[0].basis, Basis::Rrf, "explained as a product");
        let config = crate::config::Recall {
            fusion: "rrf".into(),
            rrf_k: 10.0,
            ..Default::default()
        };
        assert_eq!(
            Fusion::from_config(&config).unwrap(),
            Fusion::Rrf { k: 10.0 }
        );
        let config = crate::config::Recall {
            fusion: "borda".into(),
            ..Default::default()
        };
        assert!(Fusion::from_config(&config).is_err());
        assert_eq!(
            Fusion::from_config(&Default::default()).unwrap(),
            Fusion::Standard
        );
    }

    #[test]
    fn one_list_keeps_its_order_and_scores() {
        let out = fuse(
            vec![Ranked {
                name: "words",
                hits: vec![hit("a", 2.0, 1.0), hit("b", 1.0, 0.5)],
            }],
            &[1.0],
            None,
            5,
        );
        assert_eq!(
            out.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(out[1].raw_score, 2.0);
        assert_eq!(out[1].ranks["words"], 2);
    }

    fn raw(id: &str, score: f64) -> Hit {
        hit(id, score, 1.0)
    }

    #[test]
    fn fusion_rewards_agreement_and_weighs_lists_by_their_spread() {
        // BM25 on an open scale, cosines packed close: each counts by how far it stands out.
        let words = || Ranked {
            name: "words",
            hits: vec![raw("a", 12.0), raw("b", 8.0), raw("c", 4.0)],
        };
        let vectors = || Ranked {
            name: "vectors",
            hits: vec![raw("b", 0.70), raw("c", 0.52), raw("d", 0.50)],
        };
        let out = fuse(vec![words(), vectors()], &[1.0, 1.0], None, 4);
        // c is low in both lists, d only in one: being last in a list is worse than absent.
        assert_eq!(
            out.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["b", "a", "d", "c"]
        );
        assert_eq!(out[0].ranks.len(), 2, "b is in both lists");
        // b: words z = 0 (the mean), vectors z = (0.70 - mean) / sd.
        let cos = [0.70f64, 0.52, 0.50];
        let mean = cos.iter().sum::<f64>() / 3.0;
        let sd = (cos.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
        assert!((out[0].score - (0.70 - mean) / sd).abs() < 1e-9);
        assert!(
            (out[1].score - 4.0 / (32.0f64 / 3.0).sqrt()).abs() < 1e-9,
            "a: words z alone"
        );
        // A lighter vector list leaves the words order alone.
        let light = fuse(vec![words(), vectors()], &[1.0, 0.2], None, 4);
        assert_eq!(light[0].id, "a");
    }

    #[test]
    fn fused_scores_are_decayed_once_by_their_log() {
        let now = Utc::now();
        let old = |id: &str, score: f64| {
            let mut h = raw(id, score);
            h.doc.time = now - chrono::Duration::days(1000);
            h
        };
        let decay = Decay::from_config(&crate::config::Recall::default(), now);
        let words = Ranked {
            name: "words",
            hits: vec![old("old", 10.0), raw("new", 9.0), raw("c", 1.0)],
        };
        let vectors = Ranked {
            name: "vectors",
            hits: vec![old("old", 0.7), raw("new", 0.69), raw("c", 0.3)],
        };
        let out = fuse(vec![words, vectors], &[1.0, 1.0], Some(&decay), 3);
        // Nearly the same relevance: recency decides.
        assert_eq!(out[0].id, "new");
        let o = out.iter().find(|r| r.id == "old").unwrap();
        assert!(
            (o.decay - 0.5).abs() < 1e-3,
            "the floor holds at 1000 days: {}",
            o.decay
        );
        assert!((o.score - (o.raw_score + o.decay.ln())).abs() < 1e-12);
        assert_eq!(out[0].decay, 1.0);
        // Without decay the stronger old match wins.
        let words = Ranked {
            name: "words",
            hits: vec![old("old", 10.0), raw("new", 9.0), raw("c", 1.0)],
        };
        let vectors = Ranked {
            name: "vectors",
            hits: vec![old("old", 0.7), raw("new", 0.69), raw("c", 0.3)],
        };
        assert_eq!(
            fuse(vec![words, vectors], &[1.0, 1.0], None, 3)[0].id,
            "old"
        );
    }

    #[test]
    fn a_list_whose_scores_do_not_vary_counts_for_nothing() {
        assert_eq!(standard_scores(&[raw("a", 0.5)]), [0.0]);
        assert_eq!(standard_scores(&[raw("a", 3.0), raw("b", 3.0)]), [0.0, 0.0]);
        assert_eq!(standard_scores(&[]), Vec::<f64>::new());
        let out = fuse(
            vec![
                Ranked {
                    name: "words",
                    hits: vec![raw("a", 2.0), raw("b", 1.0)],
                },
                Ranked {
                    name: "vectors",
                    hits: vec![raw("b", 0.9)],
                },
            ],
            &[1.0, 1.0],
            None,
            2,
        );
        assert_eq!(out[0].id, "a");
    }
}
