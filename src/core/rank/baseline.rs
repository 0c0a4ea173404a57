//! Baselines `eval rank` reports beside the ranker.

use std::collections::{HashMap, HashSet};

use super::entry::entry_fields;
use super::query::QUERY_MAX_BYTES;
use crate::core::catalog::RoutingGuide;
use crate::core::text;

/// A plain word-overlap ranker, the baseline `eval rank` reports beside ours: the number of
/// distinct lower-cased words the intent shares with everything the entry says (its JSON:
/// name, description, schema). Ties keep catalog order.
pub struct WordOverlap {
    entries: Vec<HashSet<String>>,
}

impl WordOverlap {
    pub fn new(guide: &RoutingGuide) -> WordOverlap {
        let json = |v: serde_json::Result<String>| v.unwrap_or_default();
        WordOverlap {
            entries: guide
                .packs
                .iter()
                .map(|p| json(serde_json::to_string(p)))
                .chain(
                    guide
                        .pipelines
                        .iter()
                        .map(|p| json(serde_json::to_string(p))),
                )
                .map(|text| plain_words(&text))
                .collect(),
        }
    }

    /// Entry indices, best first.
    pub fn rank(&self, intent: &str) -> Vec<usize> {
        let q = plain_words(text::opening(intent, QUERY_MAX_BYTES));
        let mut scored: Vec<(usize, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, words)| (i, q.iter().filter(|w| words.contains(*w)).count()))
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(i, _)| i).collect()
    }
}

fn plain_words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// BM25's saturation in the baseline (Okapi's usual value).
pub const BM25_K1: f64 = 1.2;
/// BM25's length normalisation in the baseline (Okapi's usual value).
pub const BM25_B: f64 = 0.75;

/// Plain Okapi BM25, the baseline `eval rank` reports beside the ranker: one field holding
/// every word the ranker indexes for an entry (the same identifier splitting, stop words
/// and stemming), `k1` = [`BM25_K1`], `b` = [`BM25_B`], IDF `ln(1 + (N − df + ½)/(df + ½))`,
/// each distinct query word once. None of the ranker's features: no field weights, related
/// words, coverage, pairs, names, actions or value words. Ties keep catalog order.
pub struct Bm25 {
    postings: HashMap<String, Vec<(u32, u32)>>,
    lens: Vec<f64>,
    avg_len: f64,
}

impl Bm25 {
    pub fn new(guide: &RoutingGuide) -> Bm25 {
        let n = guide.entry_count();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lens = Vec::with_capacity(n);
        for i in 0..n {
            let fields = entry_fields(guide, i);
            let mut tf: HashMap<&str, u32> = HashMap::new();
            let mut len = 0usize;
            for w in fields.iter().flatten() {
                *tf.entry(w.as_str()).or_default() += 1;
                len += 1;
            }
            let mut tf: Vec<(&str, u32)> = tf.into_iter().collect();
            tf.sort_unstable();
            for (w, c) in tf {
                postings
                    .entry(w.to_string())
                    .or_default()
                    .push((i as u32, c));
            }
            lens.push(len as f64);
        }
        let avg_len = if n == 0 {
            1.0
        } else {
            (lens.iter().sum::<f64>() / n as f64).max(1.0)
        };
        Bm25 {
            postings,
            lens,
            avg_len,
        }
    }

    /// Every entry's score for `intent`.
    pub fn scores(&self, intent: &str) -> Vec<f64> {
        let n = self.lens.len();
        let mut scores = vec![0.0; n];
        // The baselines read what the ranker reads.
        let mut terms = text::terms(text::opening(intent, QUERY_MAX_BYTES));
        terms.sort();
        terms.dedup();
        for t in &terms {
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n as f64 - df + 0.5) / (df + 0.5)).ln();
            for &(d, tf) in list {
                let tf = f64::from(tf);
                let norm = 1.0 - BM25_B + BM25_B * self.lens[d as usize] / self.avg_len;
                scores[d as usize] += idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * norm);
            }
        }
        scores
    }

    /// Entry indices, best first.
    pub fn rank(&self, intent: &str) -> Vec<usize> {
        let scores = self.scores(intent);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        order
    }
}
