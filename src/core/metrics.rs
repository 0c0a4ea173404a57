//! Retrieval and classification metrics for `eval`: recall@k and MRR of a ranking,
//! precision/recall per class and exact-set accuracy of a multi-label classifier.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Recall at 1, 5 and 10 and the mean reciprocal rank over a set of labelled intents.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct RankMetrics {
    pub cases: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr: f64,
}

/// Accumulates per-case ranks of the expected tools.
#[derive(Debug, Default)]
pub struct RankTally {
    cases: usize,
    at: [f64; 3],
    rr: f64,
}

impl RankTally {
    /// `ranks`: the 1-based rank of each expected tool (`None` when it was not ranked at
    /// all). Recall counts the share of expected tools within k; MRR uses the best one.
    pub fn add(&mut self, ranks: &[Option<usize>]) {
        if ranks.is_empty() {
            return;
        }
        self.cases += 1;
        let n = ranks.len() as f64;
        for (slot, k) in [1, 5, 10].into_iter().enumerate() {
            self.at[slot] += ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n;
        }
        if let Some(best) = ranks.iter().flatten().min() {
            self.rr += 1.0 / *best as f64;
        }
    }

    pub fn metrics(&self) -> RankMetrics {
        let n = self.cases.max(1) as f64;
        RankMetrics {
            cases: self.cases,
            recall_at_1: self.at[0] / n,
            recall_at_5: self.at[1] / n,
            recall_at_10: self.at[2] / n,
            mrr: self.rr / n,
        }
    }
}

/// Precision and recall of one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassMetrics {
    pub class: String,
    pub support: usize,
    pub predicted: usize,
    pub true_positives: usize,
    pub precision: f64,
    pub recall: f64,
}

/// Multi-label classification results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassificationMetrics {
    pub cases: usize,
    pub exact_set_accuracy: f64,
    pub per_class: Vec<ClassMetrics>,
}

/// Compare predicted label sets with expected ones. Precision of a class never predicted is
/// 1.0 (it made no wrong claim); recall of a class never expected is 1.0.
pub fn classification<'a>(
    pairs: impl IntoIterator<Item = (&'a BTreeSet<String>, &'a BTreeSet<String>)>,
) -> ClassificationMetrics {
    let mut cases = 0;
    let mut exact = 0;
    // class → (support, predicted, tp)
    let mut per: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for (expected, predicted) in pairs {
        cases += 1;
        if expected == predicted {
            exact += 1;
        }
        for c in expected {
            per.entry(c.clone()).or_default().0 += 1;
        }
        for c in predicted {
            let e = per.entry(c.clone()).or_default();
            e.1 += 1;
            if expected.contains(c) {
                e.2 += 1;
            }
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    ClassificationMetrics {
        cases,
        exact_set_accuracy: ratio(exact, cases),
        per_class: per
            .into_iter()
            .map(|(class, (support, predicted, tp))| ClassMetrics {
                class,
                support,
                predicted,
                true_positives: tp,
                precision: ratio(tp, predicted),
                recall: ratio(tp, support),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_and_mrr() {
        let mut t = RankTally::default();
        t.add(&[Some(1)]);
        t.add(&[Some(3)]);
        t.add(&[None]);
        t.add(&[Some(2), Some(12)]);
        let m = t.metrics();
        assert_eq!(m.cases, 4);
        assert!((m.recall_at_1 - 0.25).abs() < 1e-9);
        assert!((m.recall_at_5 - (1.0 + 1.0 + 0.0 + 0.5) / 4.0).abs() < 1e-9);
        assert!((m.mrr - (1.0 + 1.0 / 3.0 + 0.0 + 0.5) / 4.0).abs() < 1e-9);
    }

    #[test]
    fn per_class_precision_recall() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let cases = [
            (s(&["memory"]), s(&["memory"])),
            (s(&["monitoring"]), s(&["memory"])),
            (s(&["research", "crypto"]), s(&["research"])),
        ];
        let m = classification(cases.iter().map(|(a, b)| (a, b)));
        assert!((m.exact_set_accuracy - 1.0 / 3.0).abs() < 1e-9);
        let mem = m.per_class.iter().find(|c| c.class == "memory").unwrap();
        assert_eq!((mem.support, mem.predicted, mem.true_positives), (1, 2, 1));
        assert!((mem.precision - 0.5).abs() < 1e-9);
        let crypto = m.per_class.iter().find(|c| c.class == "crypto").unwrap();
        assert_eq!(crypto.recall, 0.0);
        assert_eq!(crypto.precision, 1.0);
    }
}
