//! History by week, for the History pane's charts: drift classes per week, and each model's
//! share of failed plans per week. Weeks start on Monday, 00:00 UTC; the chart
//! covers up to [`TREND_WEEKS`] weeks ending with the latest plan's (none before the first
//! plan's). Replays are left out: no agent ran them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::history::Drift;

pub const WEEK_SECS: i64 = 7 * 86_400;
/// 1970-01-05, the first Monday after the epoch.
pub const FIRST_MONDAY: i64 = 4 * 86_400;
/// Most weeks a chart shows.
pub const TREND_WEEKS: usize = 12;

/// The drift classes a week is split into, in the chart's order (replays are not drift).
pub const DRIFT_CLASSES: [Drift; 5] = [
    Drift::Followed,
    Drift::Partial,
    Drift::Ignored,
    Drift::Diverged,
    Drift::Failed,
];

/// The Monday 00:00 UTC that starts the week holding `at`.
pub fn week_start(at: i64) -> i64 {
    (at - FIRST_MONDAY).div_euclid(WEEK_SECS) * WEEK_SECS + FIRST_MONDAY
}

/// The first week a chart ending with the week of `latest` shows.
pub fn first_week(latest: i64) -> i64 {
    week_start(latest) - (TREND_WEEKS as i64 - 1) * WEEK_SECS
}

/// One model's plans in one week.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ModelWeek {
    pub plans: u64,
    pub failed: u64,
}

impl ModelWeek {
    /// The share that failed (no plan came back), or `None` for a week without plans.
    pub fn failed_rate(&self) -> Option<f64> {
        (self.plans > 0).then(|| self.failed as f64 / self.plans as f64)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelTrend {
    pub model: String,
    /// One per week of [`Trends::weeks`].
    pub weeks: Vec<ModelWeek>,
}

/// What the History pane charts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Trends {
    /// Week starts (unix seconds), oldest first; empty when there are no plans.
    pub weeks: Vec<i64>,
    /// Per week, plans of each class of [`DRIFT_CLASSES`].
    pub drift: Vec<[u64; 5]>,
    /// Per model (most plans first), its weeks.
    pub models: Vec<ModelTrend>,
}

/// Plans of one drift class in one week, as a store counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftCount {
    /// Any time in the week.
    pub at: i64,
    pub drift: Drift,
    pub plans: u64,
}

/// One model's plans in one week (replays left out), and how many of them failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCount {
    /// Any time in the week.
    pub at: i64,
    pub model: String,
    pub plans: u64,
    pub failed: u64,
}

impl Trends {
    /// The weeks from the first counted one to the last (gaps kept, at most
    /// [`TREND_WEEKS`], the latest ones), split by drift class and by model.
    pub fn from_counts(drift: &[DriftCount], models: &[ModelCount]) -> Trends {
        let drift: Vec<&DriftCount> = drift
            .iter()
            .filter(|c| c.drift != Drift::Replay && c.plans > 0)
            .collect();
        let models: Vec<&ModelCount> = models.iter().filter(|c| c.plans > 0).collect();
        let starts = || {
            drift
                .iter()
                .map(|c| week_start(c.at))
                .chain(models.iter().map(|c| week_start(c.at)))
        };
        let Some(last) = starts().max() else {
            return Trends::default();
        };
        let from = starts()
            .filter(|&w| w >= first_week(last))
            .min()
            .unwrap_or(last);
        let weeks: Vec<i64> = (0..)
            .map(|i| from + i * WEEK_SECS)
            .take_while(|&w| w <= last)
            .collect();
        let mut by_week = vec![[0u64; 5]; weeks.len()];
        for c in drift {
            if let (Ok(i), Some(k)) = (
                weeks.binary_search(&week_start(c.at)),
                DRIFT_CLASSES.iter().position(|d| *d == c.drift),
            ) {
                by_week[i][k] += c.plans;
            }
        }
        let mut by_model: BTreeMap<&str, (u64, Vec<ModelWeek>)> = BTreeMap::new();
        for c in models {
            let Ok(i) = weeks.binary_search(&week_start(c.at)) else {
                continue;
            };
            let (total, per_week) = by_model
                .entry(&c.model)
                .or_insert_with(|| (0, vec![ModelWeek::default(); weeks.len()]));
            *total += c.plans;
            per_week[i].plans += c.plans;
            per_week[i].failed += c.failed.min(c.plans);
        }
        let mut models: Vec<(u64, ModelTrend)> = by_model
            .into_iter()
            .map(|(model, (total, weeks))| {
                (
                    total,
                    ModelTrend {
                        model: model.to_string(),
                        weeks,
                    },
                )
            })
            .collect();
        models.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.model.cmp(&b.1.model)));
        Trends {
            weeks,
            drift: by_week,
            models: models.into_iter().map(|(_, m)| m).collect(),
        }
    }

    pub fn model(&self, model: &str) -> Option<&ModelTrend> {
        self.models.iter().find(|m| m.model == model)
    }

    pub fn is_empty(&self) -> bool {
        self.weeks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;
    /// Monday 2026-11-16 00:00 UTC.
    const MONDAY: i64 = 1_794_787_200;

    fn drift(at: i64, drift: Drift, plans: u64) -> DriftCount {
        DriftCount { at, drift, plans }
    }

    fn model(at: i64, model: &str, plans: u64, failed: u64) -> ModelCount {
        ModelCount {
            at,
            model: model.into(),
            plans,
            failed,
        }
    }

    #[test]
    fn weeks_start_on_monday_utc() {
        assert_eq!(week_start(MONDAY), MONDAY);
        assert_eq!(week_start(MONDAY + 6 * DAY + 86_399), MONDAY);
        assert_eq!(week_start(MONDAY - 1), MONDAY - WEEK_SECS);
        assert_eq!(week_start(0), FIRST_MONDAY - WEEK_SECS);
    }

    #[test]
    fn counts_become_weeks_by_class_and_models_by_failed_rate() {
        let drifts = [
            drift(MONDAY + DAY, Drift::Followed, 3),
            drift(MONDAY + 2 * DAY, Drift::Failed, 1),
            drift(MONDAY + 3 * DAY, Drift::Partial, 2),
            // Two weeks earlier: the week between is kept, empty.
            drift(MONDAY - 2 * WEEK_SECS, Drift::Ignored, 5),
            // Replays are not drift.
            drift(MONDAY + DAY, Drift::Replay, 9),
        ];
        let models = [
            model(MONDAY + DAY, "a", 3, 0),
            model(MONDAY + 2 * DAY, "a", 1, 1),
            model(MONDAY + 3 * DAY, "b", 2, 0),
            model(MONDAY - 2 * WEEK_SECS, "b", 5, 0),
        ];
        let t = Trends::from_counts(&drifts, &models);
        assert_eq!(
            t.weeks,
            vec![MONDAY - 2 * WEEK_SECS, MONDAY - WEEK_SECS, MONDAY]
        );
        assert_eq!(t.drift, vec![[0, 0, 5, 0, 0], [0; 5], [3, 2, 0, 0, 1]]);
        assert_eq!(t.models[0].model, "b", "most plans first");
        let a = t.model("a").unwrap();
        assert_eq!(
            a.weeks[2],
            ModelWeek {
                plans: 4,
                failed: 1
            }
        );
        assert_eq!(a.weeks[2].failed_rate(), Some(0.25));
        assert_eq!(a.weeks[0].failed_rate(), None);
        assert_eq!(t.model("b").unwrap().weeks[2].failed_rate(), Some(0.0));
    }

    #[test]
    fn at_most_twelve_weeks_the_latest_ones() {
        let counts: Vec<DriftCount> = (0..20)
            .map(|i| drift(MONDAY - i * WEEK_SECS, Drift::Followed, 1))
            .collect();
        let t = Trends::from_counts(&counts, &[]);
        assert_eq!(t.weeks.len(), TREND_WEEKS);
        assert_eq!(t.weeks.last(), Some(&MONDAY));
        assert_eq!(t.weeks[0], first_week(MONDAY));
        assert!(Trends::from_counts(&[], &[]).is_empty());
    }
}
