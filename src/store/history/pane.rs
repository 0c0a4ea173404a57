//! Reading plans for the History pane and `history --plans`/`show`: pages, counts (from the
//! kept counts where they answer), one plan in full with its replays and comparison.

use super::*;
use crate::core::terminal_text::ShownPath;

/// How every surface says the store at `store` holds no plan `id`: `history show`, `replay`,
/// the console's replay, MCP `record_execution`'s note and a replay stored against a plan
/// gone meanwhile (tester 48 nit: they said it two ways, "no plan 'x' in STORE" and "STORE:
/// no plan 'x'").
pub fn no_such_plan(id: &str, store: &Path) -> String {
    format!(
        "no plan {} in {}",
        crate::core::terminal_text::quoted(id),
        store.shown()
    )
}

impl HistoryStore {
    /// One plan in full, with its replays; one the store does not hold is refused (bad
    /// input) in [`no_such_plan`]'s words.
    pub fn plan_held(&self, id: &str) -> anyhow::Result<PlanDetail> {
        self.plan(id)?
            .ok_or_else(|| bad_input(no_such_plan(id, &self.path)))
    }

    /// One plan in full, with its replays.
    pub fn plan(&self, id: &str) -> anyhow::Result<Option<PlanDetail>> {
        let Some(mut detail) = self.plan_alone(id)? else {
            return Ok(None);
        };
        detail.replays = self.replays(id)?;
        if let Some(group) = &detail.record.compare_group {
            detail.arms = self.compare_group(group)?;
        }
        Ok(Some(detail))
    }

    /// One plan without its replays (left empty): what an export writes.
    pub(super) fn plan_alone(&self, id: &str) -> anyhow::Result<Option<PlanDetail>> {
        Ok(read_plan(&self.conn, &self.path, id)?.map(|p| p.detail))
    }

    /// How many plans match: from the kept counts when they cover the filter (a few
    /// thousand rows), else by counting the plans.
    pub fn count_plans(&self, filter: &PlanFilter) -> anyhow::Result<u64> {
        self.count_plans_from(filter, Counted::from_filter(filter))
    }

    pub(super) fn count_plans_from(
        &self,
        filter: &PlanFilter,
        from: Counted,
    ) -> anyhow::Result<u64> {
        let (clause, values) = filter.clause();
        let sql = match from {
            Counted::Kept => format!("SELECT IFNULL(SUM(p.plans), 0) FROM plan_counts p {clause}"),
            Counted::Plans => format!("SELECT COUNT(*) FROM plans p {clause}"),
        };
        let n: i64 = self
            .conn
            .query_row(&sql, rusqlite::params_from_iter(values), |r| r.get(0))
            .map_err(db_err(&self.path, "counting plans"))?;
        Ok(n as u64)
    }

    /// A page of plans, newest first.
    pub fn plans(
        &self,
        filter: &PlanFilter,
        offset: u64,
        limit: u64,
    ) -> anyhow::Result<Vec<PlanRow>> {
        let (clause, mut values) = filter.clause();
        let page = page_sql(&mut values, limit, offset);
        let sql = format!(
            "SELECT {PLAN_ROW_COLUMNS} FROM plans p {clause} ORDER BY {PLANS_NEWEST_FIRST} {page}"
        );
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(values), plan_row)?;
        self.readable(rows, "listing plans")
    }

    /// Rows `offset..offset + limit` of the plans, newest first, and how many there are,
    /// read together (one snapshot). Counted first: a page at or past the end, or of a
    /// filter nothing matches, is empty without walking an index for rows that are not
    /// there; a page in the older half is read from the oldest end, so the last page of a
    /// million plans skips a few rows instead of a million.
    pub fn plans_page(
        &self,
        filter: &PlanFilter,
        offset: u64,
        limit: u64,
    ) -> anyhow::Result<(u64, Vec<PlanRow>)> {
        // Deferred: the snapshot is taken at the first read and both reads see it.
        let snapshot = self.conn.unchecked_transaction()?;
        let total = self.count_plans(filter)?;
        let rows = if offset >= total || limit == 0 {
            Vec::new()
        } else if offset <= total / 2 {
            self.plans(filter, offset, limit)?
        } else {
            let take = limit.min(total - offset);
            let (clause, mut values) = filter.clause();
            let page = page_sql(&mut values, take, total - offset - take);
            let sql = format!(
                "SELECT {PLAN_ROW_COLUMNS} FROM plans p {clause} ORDER BY {PLANS_OLDEST_FIRST} {page}"
            );
            let mut st = self.conn.prepare_cached(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(values), plan_row)?;
            let mut rows = self.readable(rows, "listing plans")?;
            rows.reverse();
            rows
        };
        snapshot.commit()?;
        Ok((total, rows))
    }

    /// The plans of one comparison (`send --compare`): by model, `compacted` first, then
    /// the other arms by name. Not by row order: an export writes plans in the order they
    /// answered, so an import would list them otherwise.
    pub fn compare_group(&self, group: &str) -> anyhow::Result<Vec<PlanRow>> {
        let sql = format!(
            "SELECT {PLAN_ROW_COLUMNS} FROM plans p WHERE p.compare_group = ?1
             ORDER BY p.model, p.arm IS NOT 'compacted', p.arm, p.at, p.id"
        );
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map([group], plan_row)?;
        self.readable(rows, "listing a comparison's plans")
    }

    /// Replays of a plan, newest first.
    pub(super) fn replays(&self, id: &str) -> anyhow::Result<Vec<PlanRow>> {
        let sql = format!(
            "SELECT {PLAN_ROW_COLUMNS} FROM plans p WHERE p.replay_of = ?1
             ORDER BY {PLANS_NEWEST_FIRST}"
        );
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map([id], plan_row)?;
        self.readable(rows, "listing replays")
    }
}

/// A plan as stored, and its row.
pub(super) struct StoredPlan {
    pub(super) seq: i64,
    pub(super) detail: PlanDetail,
}

/// One plan (without its replays), read from `conn` (the store or an import's
/// transaction). A stored column that no longer parses is an error naming the file and the
/// plan, never read as empty.
pub(super) fn read_plan(
    conn: &Connection,
    path: &Path,
    id: &str,
) -> anyhow::Result<Option<StoredPlan>> {
    struct Row {
        seq: i64,
        record: PlanRecord,
        trim: Option<String>,
        answer: Option<String>,
        complexity: String,
        intent_sha: String,
        shape: String,
        drift: Drift,
        executed: String,
        executed_failed: String,
        source: String,
        baseline: Option<String>,
        gap: Option<String>,
    }
    let row = conn
        .prepare_cached(
            "SELECT seq, id, at, caller, model, intent, outcome, failure_class,
                    finish_reason, raw_response, trim_record, duration_ms, replay_of,
                    complexity, intent_sha, shape, drift, executed, answer,
                    source, expert_baseline, gap_signal, executed_failed, at_nanos
             FROM plans WHERE id = ?1",
        )
        .and_then(|mut st| {
            st.query_row([id], |r| {
                Ok(Row {
                    seq: r.get(0)?,
                    record: PlanRecord {
                        id: r.get(1)?,
                        at: plan_time(r, 2, id)?,
                        at_nanos: r.get(23)?,
                        caller: sqlite::text_at(r, 3)?,
                        model: sqlite::text_at(r, 4)?,
                        intent: sqlite::text_at(r, 5)?,
                        steps: Vec::new(),
                        outcome: outcome_col(r, 6, Some(id))?,
                        failure_class: sqlite::opt_text_at(r, 7)?,
                        finish_reason: sqlite::opt_text_at(r, 8)?,
                        raw_response: sqlite::opt_text_at(r, 9)?,
                        trim_record: None,
                        duration_ms: r.get(11)?,
                        replay_of: r.get(12)?,
                        answer: None,
                        arm: None,
                        compare_group: None,
                        source: PlanSource::Native,
                        expert_baseline: None,
                    },
                    trim: r.get(10)?,
                    answer: r.get(18)?,
                    complexity: r.get(13)?,
                    intent_sha: r.get(14)?,
                    shape: r.get(15)?,
                    drift: drift_col(r, 16, Some(id))?,
                    executed: r.get(17)?,
                    executed_failed: r.get(22)?,
                    source: r.get(19)?,
                    baseline: r.get(20)?,
                    gap: r.get(21)?,
                })
            })
            .optional()
        })
        .map_err(db_err(path, &format!("reading plan {id}")))?;
    let Some(mut row) = row else {
        return Ok(None);
    };
    row.record.steps = read_steps(conn, path, row.seq, id)?;
    (row.record.arm, row.record.compare_group) = read_compare(conn, path, row.seq, id)?;
    row.record.trim_record = row
        .trim
        .map(|t| stored_json(path, id, "trim_record", &t))
        .transpose()?;
    row.record.answer = row
        .answer
        .map(|a| stored_json(path, id, "answer", &a))
        .transpose()?;
    row.record.source = PlanSource::parse(&row.source).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: plan {id}: the stored source '{}' is not native, otel, litellm or sent",
            path.shown(),
            row.source
        )
    })?;
    row.record.expert_baseline = row
        .baseline
        .map(|b| stored_json(path, id, "expert_baseline", &b))
        .transpose()?;
    let (executed, executed_ok) = stored_executed(path, id, &row.executed, &row.executed_failed)?;
    // Derived again from the two plans' steps, as it was stored: a signal stored by an
    // earlier version keeps the notes it was written with (tester 38 F1: tools that print
    // alike were not spelled apart), and a plan's view says what this version says of it.
    let gap_signal = match (row.gap, &row.record.expert_baseline) {
        (Some(_), Some(b)) => {
            crate::core::gap::gap_signal(row.record.outcome, &row.record.steps, &b.steps)
        }
        (Some(g), None) => Some(stored_json(path, id, "gap_signal", &g)?),
        (None, _) => None,
    };
    Ok(Some(StoredPlan {
        seq: row.seq,
        detail: PlanDetail {
            record: row.record,
            complexity: row.complexity,
            intent_sha: row.intent_sha,
            shape: row.shape,
            drift: row.drift,
            executed,
            executed_ok,
            replays: Vec::new(),
            arms: Vec::new(),
            gap_signal,
        },
    }))
}

/// A plan's A/B arm and comparison (both `None` outside one).
pub(super) fn read_compare(
    conn: &Connection,
    path: &Path,
    seq: i64,
    id: &str,
) -> anyhow::Result<(Option<Arm>, Option<String>)> {
    let (arm, group): (Option<String>, Option<String>) = conn
        .prepare_cached("SELECT arm, compare_group FROM plans WHERE seq = ?1")
        .and_then(|mut st| st.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(db_err(path, &format!("reading the arm of plan {id}")))?;
    let arm = arm
        .map(|a| {
            Arm::parse(&a).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: plan {id}: the stored arm '{a}' is not an A/B arm",
                    path.shown()
                )
            })
        })
        .transpose()?;
    Ok((arm, group))
}

/// A plan's steps, in order.
pub(super) fn read_steps(
    conn: &Connection,
    path: &Path,
    seq: i64,
    id: &str,
) -> anyhow::Result<Vec<Step>> {
    let rows: Vec<(u32, String, Option<String>, String)> = conn
        .prepare_cached(
            "SELECT step_order, tool, args, rationale FROM plan_steps WHERE plan_seq = ?1
             ORDER BY ord",
        )
        .and_then(|mut st| {
            st.query_map([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .map_err(db_err(path, &format!("reading the steps of plan {id}")))?;
    rows.into_iter()
        .map(|(order, tool, args, rationale)| {
            Ok(Step {
                order,
                tool,
                args: match args {
                    Some(a) => stored_json(path, id, "step args", &a)?,
                    None => serde_json::Value::Null,
                },
                rationale,
            })
        })
        .collect()
}

/// A JSON column this store wrote. One that no longer parses was damaged outside
/// ctxconsole: an error naming the file, the plan and the column, never read as empty.
pub(super) fn stored_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    plan: &str,
    column: &str,
    text: &str,
) -> anyhow::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        bad_input(format!(
            "{}: plan {plan}: the stored {column} is damaged ({e}); the store was left as it is",
            path.shown()
        ))
    })
}

/// A plan's stored evidence: the tools executed after it (`executed`) and, from the positions
/// of the failed ones (`executed_failed`), whether each succeeded. A position past the list
/// is damage, said as any damaged column is.
pub(super) fn stored_executed(
    path: &Path,
    plan: &str,
    executed: &str,
    failed: &str,
) -> anyhow::Result<(Vec<String>, Vec<bool>)> {
    let tools: Vec<String> = stored_json(path, plan, "executed", executed)?;
    let failed: Vec<usize> = stored_json(path, plan, "executed_failed", failed)?;
    let mut ok = vec![true; tools.len()];
    for i in failed {
        let Some(slot) = ok.get_mut(i) else {
            return Err(bad_input(format!(
                "{}: plan {plan}: the stored executed_failed is damaged (position {i} of {} \
                 executions); the store was left as it is",
                path.shown(),
                tools.len()
            )));
        };
        *slot = false;
    }
    Ok((tools, ok))
}

/// Count each line into `report` as `insert` stores it. Every line is read even after a
/// conflict, so the error lists all of them; then the import is refused (the caller's
/// transaction rolls back: nothing is written).
pub(super) fn read_into(
    source: &str,
    reader: impl BufRead,
    progress: &mut impl FnMut(usize),
    report: &mut ImportReport,
    mut insert: impl FnMut(usize, &str) -> anyhow::Result<Fate>,
) -> anyhow::Result<()> {
    let mut conflicts = Vec::new();
    for_each_line(source, reader, progress, |line, text| {
        report.lines += 1;
        let fate = insert(line, text)?;
        tally(report, &mut conflicts, fate);
        Ok(())
    })?;
    refuse_conflicts(source, &report.kind, &conflicts)
}
