//! Scoring retrieval: hit-any@k, hit-all@k and recall@k per question, averaged per group; the
//! time each question's recall took, as its median and 95th percentile.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

/// The three measures at one k, for one question or averaged over many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AtK {
    pub hit_any: f64,
    pub hit_all: f64,
    pub recall: f64,
}

/// Scores one ranking against its gold ids at `k`.
pub fn score(ranked: &[String], gold: &[String], k: usize) -> AtK {
    let top: HashSet<&str> = ranked.iter().take(k).map(String::as_str).collect();
    let gold: HashSet<&str> = gold.iter().map(String::as_str).collect();
    if gold.is_empty() {
        return AtK::default();
    }
    let found = gold.iter().filter(|g| top.contains(*g)).count();
    AtK {
        hit_any: f64::from(u8::from(found > 0)),
        hit_all: f64::from(u8::from(found == gold.len())),
        recall: found as f64 / gold.len() as f64,
    }
}

/// Running means per group and k.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    /// group → k → (sum, count)
    sums: BTreeMap<String, BTreeMap<usize, (AtK, usize)>>,
}

impl Table {
    pub fn add(&mut self, group: &str, k: usize, s: AtK) {
        let e = self
            .sums
            .entry(group.to_string())
            .or_default()
            .entry(k)
            .or_default();
        e.0.hit_any += s.hit_any;
        e.0.hit_all += s.hit_all;
        e.0.recall += s.recall;
        e.1 += 1;
    }

    /// group → k → mean, with the number of questions per group.
    pub fn means(&self) -> BTreeMap<String, (usize, BTreeMap<usize, AtK>)> {
        self.sums
            .iter()
            .map(|(g, ks)| {
                let n = ks.values().next().map_or(0, |v| v.1);
                let means = ks
                    .iter()
                    .map(|(k, (s, c))| {
                        let c = (*c).max(1) as f64;
                        (
                            *k,
                            AtK {
                                hit_any: s.hit_any / c,
                                hit_all: s.hit_all / c,
                                recall: s.recall / c,
                            },
                        )
                    })
                    .collect();
                (g.clone(), (n, means))
            })
            .collect()
    }

    /// A table for people: one row per group, recall / hit-any / hit-all at each k.
    pub fn render(&self, groups: &[&str], ks: &[usize]) -> String {
        let means = self.means();
        let mut out = format!("{:<22}{:>6}", "group", "n");
        for k in ks {
            out.push_str(&format!(
                "{:>10}{:>10}{:>10}",
                format!("R@{k}"),
                format!("any@{k}"),
                format!("all@{k}")
            ));
        }
        out.push('\n');
        for g in groups {
            let Some((n, at)) = means.get(*g) else {
                continue;
            };
            out.push_str(&format!("{g:<22}{n:>6}"));
            for k in ks {
                let m = at.get(k).copied().unwrap_or_default();
                out.push_str(&format!(
                    "{:>10.3}{:>10.3}{:>10.3}",
                    m.recall, m.hit_any, m.hit_all
                ));
            }
            out.push('\n');
        }
        out
    }
}

/// The wall time of each question's recall (not the filling of its repository), in ms.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    ms: Vec<f64>,
}

/// Median and 95th percentile of [`Timings`], in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TimeSummary {
    pub questions: usize,
    pub median_ms: f64,
    pub p95_ms: f64,
}

impl Timings {
    pub fn add(&mut self, took: std::time::Duration) {
        self.ms.push(took.as_secs_f64() * 1000.0);
    }

    /// The median and the 95th percentile (nearest rank: the smallest time that at least 95 %
    /// of the questions took no longer than).
    pub fn summary(&self) -> TimeSummary {
        let mut ms = self.ms.clone();
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        if n == 0 {
            return TimeSummary::default();
        }
        let median = if n % 2 == 1 {
            ms[n / 2]
        } else {
            (ms[n / 2 - 1] + ms[n / 2]) / 2.0
        };
        let rank = (0.95 * n as f64).ceil() as usize;
        TimeSummary {
            questions: n,
            median_ms: median,
            p95_ms: ms[rank.clamp(1, n) - 1],
        }
    }
}

impl TimeSummary {
    /// One line for people.
    pub fn render(&self) -> String {
        format!(
            "time per question: median {:.1} ms, p95 {:.1} ms ({} questions)\n",
            self.median_ms, self.p95_ms, self.questions
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_median_and_p95() {
        let mut t = Timings::default();
        assert_eq!(t.summary(), TimeSummary::default());
        for ms in [
            5, 1, 3, 2, 4, 100, 7, 6, 9, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
        ] {
            t.add(std::time::Duration::from_millis(ms));
        }
        let s = t.summary();
        assert_eq!(s.questions, 20);
        // Sorted: 1..=19, 100; the middle two are 10 and 11.
        assert!((s.median_ms - 10.5).abs() < 1e-9, "{s:?}");
        // The 19th of 20 (ceil 0.95 × 20): 19, not the outlier.
        assert!((s.p95_ms - 19.0).abs() < 1e-9, "{s:?}");
        let mut odd = Timings::default();
        for ms in [30, 10, 20] {
            odd.add(std::time::Duration::from_millis(ms));
        }
        let s = odd.summary();
        assert!((s.median_ms - 20.0).abs() < 1e-9 && (s.p95_ms - 30.0).abs() < 1e-9);
    }

    fn ids(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn measures() {
        let ranked = ids(&["a", "b", "c", "d"]);
        assert_eq!(
            score(&ranked, &ids(&["b", "z"]), 1),
            AtK {
                hit_any: 0.0,
                hit_all: 0.0,
                recall: 0.0
            }
        );
        assert_eq!(
            score(&ranked, &ids(&["b", "z"]), 2),
            AtK {
                hit_any: 1.0,
                hit_all: 0.0,
                recall: 0.5
            }
        );
        assert_eq!(
            score(&ranked, &ids(&["b", "d"]), 4),
            AtK {
                hit_any: 1.0,
                hit_all: 1.0,
                recall: 1.0
            }
        );
    }

    #[test]
    fn means_per_group() {
        let mut t = Table::default();
        t.add(
            "1-4",
            5,
            AtK {
                hit_any: 1.0,
                hit_all: 0.0,
                recall: 0.5,
            },
        );
        t.add(
            "1-4",
            5,
            AtK {
                hit_any: 0.0,
                hit_all: 0.0,
                recall: 0.0,
            },
        );
        let m = t.means();
        assert_eq!(m["1-4"].0, 2);
        assert_eq!(
            m["1-4"].1[&5],
            AtK {
                hit_any: 0.5,
                hit_all: 0.0,
                recall: 0.25
            }
        );
    }
}
