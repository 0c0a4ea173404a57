//! The History pane's charts from the store: plans counted by week and drift class, and by
//! week and model with their failures, over the weeks a chart shows; then shaped by
//! [`Trends::from_counts`].
//!
//! Over every plan, counts are index range counts, one per week and class (and per week and
//! model), so no plan row is read and nothing is sorted: on a big store several times faster
//! than one `GROUP BY` over the rows; only failed plans and replays are read row by row.
//! Under a filter the rows it keeps are read once, grouped (a range count per class would
//! read each filtered row once per class).

use std::collections::HashMap;

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params};

use super::{HistoryStore, PlanFilter, db_err, drift_col, outcome_col};
use crate::core::history::Outcome;
use crate::core::trend::{
    DRIFT_CLASSES, DriftCount, FIRST_MONDAY, ModelCount, Trends, WEEK_SECS, first_week, week_start,
};
use crate::store::sqlite;

/// The first week charted up to `latest`. Weeks before the first Monday after the epoch
/// would divide the wrong way, so the chart starts there at the earliest.
fn since(latest: i64) -> i64 {
    first_week(latest).max(FIRST_MONDAY)
}

impl HistoryStore {
    /// Drift classes per week and each model's plans and failures per week, over `filter`'s
    /// plans in the weeks up to the latest one's at or before `now` (replays left out). A plan
    /// dated after `now` (a clock gone wrong, an import from year 9999) is not charted: it
    /// would move the chart's weeks to its own and blank the rest.
    pub fn trends(&self, filter: &PlanFilter, now: i64) -> anyhow::Result<Trends> {
        let Some(latest) = self.latest_plan_at(filter, now)? else {
            return Ok(Trends::default());
        };
        if filter.is_empty() {
            self.trends_by_index(latest, now)
        } else {
            self.trends_by_rows(filter, latest, now)
        }
    }

    /// When the newest plan at or before `now` that is no replay was made.
    fn latest_plan_at(&self, filter: &PlanFilter, now: i64) -> anyhow::Result<Option<i64>> {
        let (clause, mut values) = filter.clause();
        let and = if clause.is_empty() { "WHERE" } else { " AND" };
        values.push(Value::Integer(now));
        let now_p = values.len();
        self.conn
            .query_row(
                // Newest first down an `at` index, so the first row that is no replay ends it.
                &format!(
                    "SELECT p.at FROM plans p {clause}{and} p.drift != 'replay'
                         AND p.at <= ?{now_p}
                     ORDER BY p.at DESC LIMIT 1"
                ),
                rusqlite::params_from_iter(values),
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err(&self.path, "finding the latest plan"))
    }

    /// Every plan in the charted weeks, grouped once by week, model, outcome and drift.
    fn trends_by_rows(&self, filter: &PlanFilter, latest: i64, now: i64) -> anyhow::Result<Trends> {
        let (clause, mut values) = filter.clause();
        let and = if clause.is_empty() { "WHERE" } else { " AND" };
        values.push(Value::Integer(since(latest)));
        let since_p = values.len();
        values.push(Value::Integer(now));
        let now_p = values.len();
        let mut st = self.conn.prepare(&format!(
            "SELECT (p.at - {FIRST_MONDAY}) / {WEEK_SECS}, p.model, p.outcome, p.drift, COUNT(*)
             FROM plans p {clause}{and} p.drift != 'replay' AND p.at >= ?{since_p}
                 AND p.at <= ?{now_p}
             GROUP BY 1, 2, 3, 4"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(values), |r| {
            Ok((
                r.get::<_, i64>(0)? * WEEK_SECS + FIRST_MONDAY,
                sqlite::text_at(r, 1)?,
                outcome_col(r, 2, None)?,
                drift_col(r, 3, None)?,
                r.get::<_, i64>(4)? as u64,
            ))
        })?;
        let rows = self.readable(rows, "counting plans by week")?;
        let mut drift = Vec::new();
        let mut models: HashMap<(i64, String), ModelCount> = HashMap::new();
        for (at, model, outcome, d, plans) in rows {
            drift.push(DriftCount {
                at,
                drift: d,
                plans,
            });
            let m = models
                .entry((at, model.clone()))
                .or_insert_with(|| ModelCount {
                    at,
                    model,
                    plans: 0,
                    failed: 0,
                });
            m.plans += plans;
            if outcome == Outcome::Failed {
                m.failed += plans;
            }
        }
        let models: Vec<ModelCount> = models.into_values().collect();
        Ok(Trends::from_counts(&drift, &models))
    }

    /// Every plan in the charted weeks, counted by index ranges.
    fn trends_by_index(&self, latest: i64, now: i64) -> anyhow::Result<Trends> {
        let since = since(latest);
        let weeks = format!(
            "w(s) AS (SELECT ?1 UNION ALL SELECT s + {WEEK_SECS} FROM w WHERE s + {WEEK_SECS} <= ?2)"
        );
        let in_week = format!("p.at >= w.s AND p.at < w.s + {WEEK_SECS} AND p.at <= ?3");

        let classes = DRIFT_CLASSES
            .iter()
            .map(|d| format!("('{}')", d.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let mut st = self.conn.prepare(&format!(
            "WITH RECURSIVE {weeks}, d(x) AS (VALUES {classes})
             SELECT w.s, d.x, (SELECT COUNT(*) FROM plans p WHERE p.drift = d.x AND {in_week})
             FROM w, d"
        ))?;
        let drift = st.query_map(params![since, week_start(latest), now], |r| {
            Ok(DriftCount {
                at: r.get(0)?,
                drift: drift_col(r, 1, None)?,
                plans: r.get::<_, i64>(2)? as u64,
            })
        })?;
        let drift = self.readable(drift, "counting drift by week")?;

        // Every plan of each model, replays included (an index holds model and time only);
        // the distinct models by index skip-scan, one seek each.
        let mut st = self.conn.prepare(&format!(
            "WITH RECURSIVE {weeks}, v(x) AS (
                 SELECT MIN(model) FROM plans
                 UNION ALL
                 SELECT (SELECT MIN(model) FROM plans WHERE model > v.x) FROM v WHERE v.x IS NOT NULL)
             SELECT w.s, v.x, (SELECT COUNT(*) FROM plans p WHERE p.model = v.x AND {in_week})
             FROM w, v WHERE v.x IS NOT NULL"
        ))?;
        let mut models: HashMap<(i64, String), ModelCount> = HashMap::new();
        let rows = st
            .query_map(params![since, week_start(latest), now], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    sqlite::text_at(r, 1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "counting plans by model and week"))?;
        for (at, model, plans) in rows.into_iter().filter(|r| r.2 > 0) {
            models.insert(
                (at, model.clone()),
                ModelCount {
                    at,
                    model,
                    plans: plans as u64,
                    failed: 0,
                },
            );
        }

        // Replays (taken back out) and failures, read row by row: they are few.
        let mut st = self.conn.prepare(&format!(
            "SELECT p.model, (p.at - {FIRST_MONDAY}) / {WEEK_SECS},
                    SUM(p.drift = 'replay'), SUM(p.outcome = 'failed' AND p.drift != 'replay')
             FROM plans p WHERE (p.outcome = 'failed' OR p.drift = 'replay') AND p.at >= ?1
                 AND p.at <= ?2
             GROUP BY 1, 2"
        ))?;
        let rows = st
            .query_map([since, now], |r| {
                Ok((
                    sqlite::text_at(r, 0)?,
                    r.get::<_, i64>(1)? * WEEK_SECS + FIRST_MONDAY,
                    r.get::<_, i64>(2)? as u64,
                    r.get::<_, i64>(3)? as u64,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "counting failures by model and week"))?;
        for (model, at, replays, failed) in rows {
            if let Some(m) = models.get_mut(&(at, model)) {
                m.plans = m.plans.saturating_sub(replays);
                m.failed = failed;
            }
        }
        let models: Vec<ModelCount> = models.into_values().collect();
        Ok(Trends::from_counts(&drift, &models))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::history::Drift;
    use crate::core::trend::{DRIFT_CLASSES, ModelWeek};
    use crate::sample::{SAMPLE_EXECUTIONS, SAMPLE_PLANS};
    use crate::store::history::HISTORY_FILE;
    use std::collections::{BTreeMap, HashSet};

    /// The sample history, with two failed replays added (which no chart may count).
    fn store() -> (tempfile::TempDir, HistoryStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut s = HistoryStore::open(&dir.path().join(HISTORY_FILE)).unwrap();
        let pipelines: HashSet<String> = HashSet::new();
        assert!(
            s.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &pipelines)
                .unwrap()
                .is_some()
        );
        let latest = s.plans(&PlanFilter::default(), 0, 1).unwrap()[0].clone();
        for _ in 0..2 {
            let mut r = s.plan(&latest.id).unwrap().unwrap().record;
            r.replay_of = Some(latest.id.clone());
            r.outcome = Outcome::Failed;
            r.failure_class = Some("transport".into());
            s.insert_replay(&mut r, &pipelines).unwrap();
        }
        (dir, s)
    }

    /// The same trends counted plan by plan.
    fn by_hand(s: &HistoryStore, filter: &PlanFilter) -> Trends {
        let rows = s.plans(filter, 0, 100_000).unwrap();
        let counted: Vec<_> = rows.iter().filter(|p| p.drift != Drift::Replay).collect();
        let Some(latest) = counted.iter().map(|p| p.at).max() else {
            return Trends::default();
        };
        let since = first_week(latest);
        let counted: Vec<_> = counted.into_iter().filter(|p| p.at >= since).collect();
        let first = counted.iter().map(|p| week_start(p.at)).min().unwrap();
        let weeks: Vec<i64> = (0..)
            .map(|i| first + i * WEEK_SECS)
            .take_while(|&w| w <= week_start(latest))
            .collect();
        let mut drift = vec![[0u64; 5]; weeks.len()];
        let mut models: BTreeMap<String, Vec<ModelWeek>> = BTreeMap::new();
        for p in counted {
            let i = weeks.binary_search(&week_start(p.at)).unwrap();
            let k = DRIFT_CLASSES.iter().position(|d| *d == p.drift).unwrap();
            drift[i][k] += 1;
            let m = models
                .entry(p.model.clone())
                .or_insert_with(|| vec![ModelWeek::default(); weeks.len()]);
            m[i].plans += 1;
            m[i].failed += u64::from(p.outcome == Outcome::Failed);
        }
        let mut t = Trends {
            weeks,
            drift,
            models: Vec::new(),
        };
        let mut models: Vec<_> = models.into_iter().collect();
        models.sort_by_key(|(m, w)| {
            (
                std::cmp::Reverse(w.iter().map(|w| w.plans).sum::<u64>()),
                m.clone(),
            )
        });
        t.models = models
            .into_iter()
            .map(|(model, weeks)| crate::core::trend::ModelTrend { model, weeks })
            .collect();
        t
    }

    #[test]
    fn index_counts_agree_with_counting_plan_by_plan() {
        let (_d, s) = store();
        let all = PlanFilter::default();
        let plans = s.plans(&all, 0, 100_000).unwrap();
        let model = plans[0].model.clone();
        let caller = plans[5].caller.clone();
        let filters = [
            all.clone(),
            PlanFilter {
                model: Some(model.clone()),
                ..all.clone()
            },
            PlanFilter {
                outcome: Some(Outcome::Failed),
                ..all.clone()
            },
            PlanFilter {
                caller: Some(caller),
                drift: Some(Drift::Followed),
                ..all.clone()
            },
            PlanFilter {
                drift: Some(Drift::Replay),
                ..all.clone()
            },
        ];
        for f in &filters {
            let t = s.trends(f, i64::MAX).unwrap();
            assert_eq!(t, by_hand(&s, f), "{f:?}");
        }
        // Over every plan the counts come from index ranges; grouping the rows agrees.
        let latest = s.latest_plan_at(&all, i64::MAX).unwrap().unwrap();
        assert_eq!(
            s.trends_by_rows(&all, latest, i64::MAX).unwrap(),
            s.trends_by_index(latest, i64::MAX).unwrap()
        );
        let t = s.trends(&all, i64::MAX).unwrap();
        assert!(t.weeks.len() >= 7, "seven weeks of sample history");
        let failed: u64 = t
            .models
            .iter()
            .flat_map(|m| &m.weeks)
            .map(|w| w.failed)
            .sum();
        assert!(failed > 50, "the sample's failures are counted");
        assert!(
            s.trends(&filters[4], i64::MAX).unwrap().is_empty(),
            "replays only: nothing"
        );
    }

    #[test]
    fn a_plan_dated_after_now_is_not_charted() {
        let (_dir, mut s) = store();
        let all = PlanFilter::default();
        let now = s.latest_plan_at(&all, i64::MAX).unwrap().unwrap() + 3_600;
        let before = s.trends(&all, now).unwrap();
        assert!(before.weeks.len() >= 7);
        // One plan from year 9999 (an import, a clock gone wrong) would make the chart one
        // week of its own and blank every model's weeks; it is left out, with or without a
        // filter.
        let latest_id = s.plans(&all, 0, 1).unwrap()[0].id.clone();
        let mut future = s.plan(&latest_id).unwrap().unwrap().record;
        future.id = "future-1".into();
        future.at = 253_402_300_799;
        s.insert_records(&[future.clone()], &[], &HashSet::new())
            .unwrap();
        assert_eq!(s.trends(&all, now).unwrap(), before);
        let by_model = PlanFilter {
            model: Some(future.model.clone()),
            ..all.clone()
        };
        let weeks = s.trends(&by_model, now).unwrap().weeks;
        assert!(
            weeks.len() >= 2 && *weeks.last().unwrap() <= now,
            "{weeks:?}"
        );
    }
}
