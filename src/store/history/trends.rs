//! The History pane's charts from the store: plans counted by week, model, outcome and drift
//! class over the weeks a chart shows, then shaped by [`Trends::from_counts`].

use rusqlite::OptionalExtension;
use rusqlite::types::Value;

use super::{HistoryStore, PlanFilter, db_err, drift_col, outcome_col};
use crate::core::trend::{FIRST_MONDAY, Trends, WEEK_SECS, WeekCount, first_week};

impl HistoryStore {
    /// Drift classes per week and each model's outcomes per week, over `filter`'s plans in
    /// the weeks up to the latest one's (replays left out).
    pub fn trends(&self, filter: &PlanFilter) -> anyhow::Result<Trends> {
        let (clause, values) = filter.clause();
        let and = if clause.is_empty() { "WHERE" } else { " AND" };
        let latest: Option<i64> = self
            .conn
            .query_row(
                // Newest first down an `at` index, so the first row that is no replay ends it.
                &format!(
                    "SELECT p.at FROM plans p {clause}{and} p.drift != 'replay'
                     ORDER BY p.at DESC LIMIT 1"
                ),
                rusqlite::params_from_iter(values.clone()),
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err(&self.path, "finding the latest plan"))?;
        let Some(latest) = latest else {
            return Ok(Trends::default());
        };
        // Weeks before the first Monday after the epoch would divide the wrong way.
        let since = first_week(latest).max(FIRST_MONDAY);
        let mut values = values;
        values.push(Value::Integer(since));
        let since_param = values.len();
        let mut st = self.conn.prepare(&format!(
            "SELECT (p.at - {FIRST_MONDAY}) / {WEEK_SECS}, p.model, p.outcome, p.drift, COUNT(*)
             FROM plans p {clause}{and} p.drift != 'replay' AND p.at >= ?{since_param}
             GROUP BY 1, 2, 3, 4"
        ))?;
        let counts = st
            .query_map(rusqlite::params_from_iter(values), |r| {
                Ok(WeekCount {
                    at: r.get::<_, i64>(0)? * WEEK_SECS + FIRST_MONDAY,
                    model: r.get(1)?,
                    outcome: outcome_col(r, 2)?,
                    drift: drift_col(r, 3)?,
                    plans: r.get::<_, i64>(4)? as u64,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "counting plans by week"))?;
        Ok(Trends::from_counts(&counts))
    }
}
