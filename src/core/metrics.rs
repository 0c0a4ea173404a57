//! Retrieval and classification metrics for `eval`: recall@k, all-expected@k, MRR and
//! nDCG@10 of a ranking, precision/recall per class and exact-set accuracy of a
//! multi-label classifier.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Recall at 1, 5 and 10, all-expected at 5 and 10, the mean reciprocal rank and nDCG@10
/// over a set of labelled intents. Over no case there is no figure: each is `null` in JSON
/// (its fields hold 0.0, read them through [`RankMetrics::measured`]), `n/a` on screen, and
/// never part of a mean or a bar (tester's F5: an empty half read 0.0, every question
/// missed).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankMetrics {
    pub cases: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    /// Share of cases with every expected tool within the first 5 / 10.
    pub all_at_5: f64,
    pub all_at_10: f64,
    pub mrr: f64,
    /// Binary relevance, each expected tool once.
    pub ndcg_at_10: f64,
}

/// Accumulates per-case ranks of the expected tools.
#[derive(Debug, Default, Clone)]
pub struct RankTally {
    cases: usize,
    at: [f64; 3],
    all: [f64; 2],
    rr: f64,
    ndcg: f64,
}

/// One case's figures, for per-question output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CaseMetrics {
    pub recall_at_5: f64,
    pub all_at_10: bool,
    pub reciprocal_rank: f64,
    pub ndcg_at_10: f64,
}

/// nDCG@10 of one case: `Σ 1/log2(rank+1)` over expected tools within 10, over the best
/// possible for that many expected tools.
fn ndcg_at_10(ranks: &[Option<usize>]) -> f64 {
    let gain = |r: usize| 1.0 / ((r + 1) as f64).log2();
    let dcg: f64 = ranks
        .iter()
        .flatten()
        .filter(|&&r| r <= 10)
        .map(|&r| gain(r))
        .sum();
    let ideal: f64 = (1..=ranks.len().min(10)).map(gain).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// The figures of one case (`ranks` as for [`RankTally::add`]).
pub fn case_metrics(ranks: &[Option<usize>]) -> CaseMetrics {
    let n = ranks.len().max(1) as f64;
    CaseMetrics {
        recall_at_5: ranks.iter().filter(|r| r.is_some_and(|r| r <= 5)).count() as f64 / n,
        all_at_10: !ranks.is_empty() && ranks.iter().all(|r| r.is_some_and(|r| r <= 10)),
        reciprocal_rank: ranks
            .iter()
            .flatten()
            .min()
            .map_or(0.0, |&b| 1.0 / b as f64),
        ndcg_at_10: ndcg_at_10(ranks),
    }
}

impl RankMetrics {
    /// The figures, when at least one case was measured; `None` over no case.
    pub fn measured(&self) -> Option<&RankMetrics> {
        (self.cases > 0).then_some(self)
    }
}

impl Serialize for RankMetrics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let m = self.measured();
        let mut out = s.serialize_struct("RankMetrics", 8)?;
        out.serialize_field("cases", &self.cases)?;
        out.serialize_field("recall_at_1", &m.map(|m| m.recall_at_1))?;
        out.serialize_field("recall_at_5", &m.map(|m| m.recall_at_5))?;
        out.serialize_field("recall_at_10", &m.map(|m| m.recall_at_10))?;
        out.serialize_field("all_at_5", &m.map(|m| m.all_at_5))?;
        out.serialize_field("all_at_10", &m.map(|m| m.all_at_10))?;
        out.serialize_field("mrr", &m.map(|m| m.mrr))?;
        out.serialize_field("ndcg_at_10", &m.map(|m| m.ndcg_at_10))?;
        out.end()
    }
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
        for (slot, k) in [5, 10].into_iter().enumerate() {
            if ranks.iter().all(|r| r.is_some_and(|r| r <= k)) {
                self.all[slot] += 1.0;
            }
        }
        if let Some(best) = ranks.iter().flatten().min() {
            self.rr += 1.0 / *best as f64;
        }
        self.ndcg += ndcg_at_10(ranks);
    }

    /// Add another tally's cases to this one.
    pub fn merge(&mut self, other: &RankTally) {
        self.cases += other.cases;
        (0..3).for_each(|k| self.at[k] += other.at[k]);
        (0..2).for_each(|k| self.all[k] += other.all[k]);
        self.rr += other.rr;
        self.ndcg += other.ndcg;
    }

    pub fn metrics(&self) -> RankMetrics {
        let n = self.cases.max(1) as f64;
        RankMetrics {
            cases: self.cases,
            recall_at_1: self.at[0] / n,
            recall_at_5: self.at[1] / n,
            recall_at_10: self.at[2] / n,
            all_at_5: self.all[0] / n,
            all_at_10: self.all[1] / n,
            mrr: self.rr / n,
            ndcg_at_10: self.ndcg / n,
        }
    }
}

/// Precision and recall of one class. A ratio with nothing to divide by is `None` (`null` in
/// JSON, `n/a` on screen): precision of a class never predicted, recall of a class never
/// expected. 1.0 there would read as a perfect score that was never measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassMetrics {
    pub class: String,
    pub support: usize,
    pub predicted: usize,
    pub true_positives: usize,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

/// Multi-label classification results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassificationMetrics {
    pub cases: usize,
    pub exact_set_accuracy: f64,
    pub per_class: Vec<ClassMetrics>,
}

/// Compare predicted label sets with expected ones. Precision of a class never predicted and
/// recall of a class never expected are `None`: 0/0 is no figure. Exact-set accuracy of no
/// cases is 0.0 (`eval planner` refuses a set with no messages before it gets here).
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
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    ClassificationMetrics {
        cases,
        exact_set_accuracy: ratio(exact, cases).unwrap_or(0.0),
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

    /// Tester's F5: no question measured is no figure, said `null` in JSON, not 0.0 (which
    /// reads as every question missed); the lift of no pair likewise.
    #[test]
    fn no_question_is_no_figure() {
        let none = RankTally::default().metrics();
        assert_eq!(none.cases, 0);
        assert!(none.measured().is_none());
        let v = serde_json::to_value(none).unwrap();
        assert_eq!(v["cases"], 0);
        for f in [
            "recall_at_1",
            "recall_at_5",
            "recall_at_10",
            "all_at_5",
            "all_at_10",
            "mrr",
            "ndcg_at_10",
        ] {
            assert!(v[f].is_null(), "{f}: {v}");
        }
        let mut one = RankTally::default();
        one.add(&[Some(1)]);
        let v = serde_json::to_value(one.metrics()).unwrap();
        assert_eq!(
            (v["cases"].clone(), v["recall_at_1"].clone()),
            (1.into(), 1.0.into())
        );
        assert!(one.metrics().measured().is_some());
        let lift = serde_json::to_value(paired_bootstrap(&[], 10, 1)).unwrap();
        assert_eq!(lift["cases"], 0);
        assert!(lift["mean"].is_null() && lift["low"].is_null() && lift["high"].is_null());
    }

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
        // Every expected tool within 5: the first two cases; within 10: the same.
        assert!((m.all_at_5 - 0.5).abs() < 1e-9);
        assert!((m.all_at_10 - 0.5).abs() < 1e-9);
        // nDCG@10: 1, 1/log2(4), 0, (1/log2(3)) / (1 + 1/log2(3)).
        let g3 = 1.0 / 3f64.log2();
        let want = (1.0 + 0.5 + 0.0 + g3 / (1.0 + g3)) / 4.0;
        assert!((m.ndcg_at_10 - want).abs() < 1e-9, "{}", m.ndcg_at_10);
        let c = case_metrics(&[Some(2), Some(12)]);
        assert_eq!(
            (c.recall_at_5, c.all_at_10, c.reciprocal_rank),
            (0.5, false, 0.5)
        );
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
        assert_eq!(mem.precision, Some(0.5));
        let crypto = m.per_class.iter().find(|c| c.class == "crypto").unwrap();
        assert_eq!(crypto.recall, Some(0.0));
        assert_eq!(crypto.precision, None, "never predicted: no precision");
        let monitoring = m.per_class.iter().find(|c| c.class == "monitoring");
        assert_eq!(monitoring.map(|c| c.recall), Some(Some(0.0)));
        let never_expected = classification([(&s(&[]), &s(&["casual"]))]);
        assert_eq!(never_expected.per_class[0].recall, None);
        assert_eq!(never_expected.per_class[0].precision, Some(0.0));
    }
}

/// A mean difference with its 95 % interval. Over no pair there is none: `null` in JSON
/// (the fields hold 0.0; read them through [`Lift::measured`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lift {
    pub cases: usize,
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

impl Lift {
    /// The lift, when at least one pair was measured.
    pub fn measured(&self) -> Option<&Lift> {
        (self.cases > 0).then_some(self)
    }
}

impl Serialize for Lift {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let l = self.measured();
        let mut out = s.serialize_struct("Lift", 4)?;
        out.serialize_field("cases", &self.cases)?;
        out.serialize_field("mean", &l.map(|l| l.mean))?;
        out.serialize_field("low", &l.map(|l| l.low))?;
        out.serialize_field("high", &l.map(|l| l.high))?;
        out.end()
    }
}

/// Resamples a paired bootstrap draws.
pub const BOOTSTRAP_RESAMPLES: usize = 2_000;
/// The seed every bootstrap starts from: the same data gives the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x5EED_0019;

/// The mean of paired differences (`with − without`, one per question) and its 95 %
/// percentile interval over `resamples` bootstrap resamples of the questions, drawn with a
/// fixed-seed SplitMix64 (deterministic).
pub fn paired_bootstrap(diffs: &[f64], resamples: usize, seed: u64) -> Lift {
    let n = diffs.len();
    if n == 0 {
        return Lift {
            cases: 0,
            mean: 0.0,
            low: 0.0,
            high: 0.0,
        };
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut means: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            let sum: f64 = (0..n).map(|_| diffs[(next() % n as u64) as usize]).sum();
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
    Lift {
        cases: n,
        mean,
        low: at(0.025),
        high: at(0.975),
    }
}

#[cfg(test)]
mod bootstrap_tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_mean_and_is_deterministic() {
        let diffs: Vec<f64> = (0..200)
            .map(|i| if i % 4 == 0 { 1.0 } else { 0.0 })
            .collect();
        let a = paired_bootstrap(&diffs, 1000, BOOTSTRAP_SEED);
        assert!((a.mean - 0.25).abs() < 1e-12);
        assert!(
            a.low < 0.25 && a.high > 0.25 && a.low > 0.15 && a.high < 0.35,
            "{a:?}"
        );
        assert_eq!(a, paired_bootstrap(&diffs, 1000, BOOTSTRAP_SEED));
        let none = paired_bootstrap(&[0.0; 50], 100, 1);
        assert_eq!((none.low, none.high), (0.0, 0.0));
    }
}
