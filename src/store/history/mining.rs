//! Mining the history: groups by intent shape, step pairs, drift, outcomes per model, gaps,
//! unused entries, and what the ranking prior and the past-plans part read.

use super::*;
use crate::core::terminal_text::ShownPath;

/// The distinct tools of one plan that its step pairs are counted among: 64 tools are 2,016
/// pairs; every tool of a 10,000-step plan would be 50 million.
pub const PAIR_TOOLS: usize = 64;

impl HistoryStore {
    /// Groups of similar intents, largest first. Without a filter this reads the kept
    /// summary; with one it aggregates the matching plans.
    pub fn groups(
        &self,
        filter: &PlanFilter,
        offset: u64,
        limit: u64,
    ) -> anyhow::Result<Vec<GroupSummary>> {
        let map = |r: &rusqlite::Row<'_>| {
            Ok(GroupSummary {
                shape: r.get(0)?,
                words: sqlite::text_at(r, 1)?,
                intent: sqlite::text_at(r, 2)?,
                plans: r.get::<_, i64>(3)? as u64,
                first_at: r.get(4)?,
                last_at: r.get(5)?,
                complexity: None,
                top_tools: Vec::new(),
                models: Vec::new(),
            })
        };
        let rows = if filter.is_empty() {
            let mut st = self.conn.prepare_cached(
                "SELECT shape, words, intent, plans, first_at, last_at FROM shapes
                 ORDER BY plans DESC, last_at DESC LIMIT ?1 OFFSET ?2",
            )?;
            st.query_map(params![limit as i64, offset as i64], map)?
                .collect::<Result<Vec<_>, _>>()
        } else {
            let (clause, mut values) = filter.clause();
            self.leave_out_untimed(&clause, &values)?;
            let page = page_sql(&mut values, limit, offset);
            // Group first (a covering index answers the common filters), then look up only
            // the page's shapes. A plan whose time was put in by hand is counted but gives
            // no time, as in the regroup ([`WHOLE_PLAN_AT`]); a group none of whose plans
            // has one is left out (review 50 M1: `MAX(p.at)` was the text, and the listing
            // failed naming `last_at`).
            let sql = format!(
                "SELECT g.shape, s.words, s.intent, g.n, g.first_at, g.last_at
                 FROM (SELECT p.shape, COUNT(*) n, MIN({WHOLE_PLAN_AT}) first_at,
                              MAX({WHOLE_PLAN_AT}) last_at
                       FROM plans p {clause} GROUP BY p.shape HAVING last_at IS NOT NULL
                       ORDER BY n DESC, last_at DESC {page}) g
                 JOIN shapes s ON s.shape = g.shape
                 ORDER BY g.n DESC, g.last_at DESC"
            );
            let mut st = self.conn.prepare(&sql)?;
            st.query_map(rusqlite::params_from_iter(values), map)?
                .collect::<Result<Vec<_>, _>>()
        };
        rows.map_err(db_err(&self.path, "listing groups"))
    }

    /// Note for [`Self::left_out_note`] each plan within `clause` whose time was put in by
    /// hand: an aggregate over plans ([`WHOLE_PLAN_AT`]) reads no time of it.
    fn leave_out_untimed(
        &self,
        clause: &str,
        values: &[rusqlite::types::Value],
    ) -> anyhow::Result<()> {
        let and = if clause.is_empty() { "WHERE" } else { "AND" };
        let mut st = self.conn.prepare(&format!(
            "SELECT p.id, p.at FROM plans p {clause} {and} typeof(p.at) <> 'integer'"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(values), |r| {
            let id: String = r.get(0)?;
            plan_time(r, 1, &id)
        })?;
        self.readable(rows, "listing groups")?;
        Ok(())
    }

    pub fn count_groups(&self, filter: &PlanFilter) -> anyhow::Result<u64> {
        let n: i64 = if filter.is_empty() {
            self.conn
                .query_row("SELECT COUNT(*) FROM shapes", [], |r| r.get(0))
        } else {
            let (clause, values) = filter.clause();
            self.conn.query_row(
                &format!("SELECT COUNT(DISTINCT p.shape) FROM plans p {clause}"),
                rusqlite::params_from_iter(values),
                |r| r.get(0),
            )
        }
        .map_err(db_err(&self.path, "counting groups"))?;
        Ok(n as u64)
    }

    /// Fill a group's most common complexity, top tools and models (within `filter`).
    pub fn group_details(
        &self,
        group: &mut GroupSummary,
        filter: &PlanFilter,
    ) -> anyhow::Result<()> {
        let mut f = filter.clone();
        f.shape = Some(group.shape.clone());
        let (clause, values) = f.clause();
        let top = |sql: String, limit: usize| -> anyhow::Result<Vec<(String, u64)>> {
            let mut st = self.conn.prepare_cached(&sql)?;
            let rows = st
                .query_map(rusqlite::params_from_iter(values.clone()), |r| {
                    Ok((sqlite::text_at(r, 0)?, r.get::<_, i64>(1)? as u64))
                })?
                .take(limit)
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err(&self.path, "reading a group"))?;
            Ok(rows)
        };
        group.complexity = top(
            format!("SELECT p.complexity, COUNT(*) c FROM plans p {clause} GROUP BY 1 ORDER BY c DESC, 1"),
            1,
        )?
        .into_iter()
        .next()
        .map(|(c, _)| c);
        group.top_tools = top(
            format!(
                "SELECT s.tool, COUNT(*) c FROM plans p JOIN plan_steps s ON s.plan_seq = p.seq {clause}
                 GROUP BY 1 ORDER BY c DESC, 1"
            ),
            5,
        )?;
        group.models = top(
            format!(
                "SELECT p.model, COUNT(*) c FROM plans p {clause} GROUP BY 1 ORDER BY c DESC, 1"
            ),
            5,
        )?;
        Ok(())
    }

    /// Pairs of tools that appear in the same plan (among its first [`PAIR_TOOLS`] distinct
    /// tools), most frequent first. Counted here in one pass over the steps in plan order:
    /// SQLite's self-join would sort every pair.
    pub fn step_pairs(&self, filter: &PlanFilter, limit: usize) -> anyhow::Result<Vec<StepPair>> {
        let (clause, values) = filter.clause();
        let sql = if filter.is_empty() {
            "SELECT s.plan_seq, s.tool FROM plan_steps s ORDER BY s.plan_seq, s.ord".to_string()
        } else {
            format!(
                "SELECT s.plan_seq, s.tool FROM plans p JOIN plan_steps s ON s.plan_seq = p.seq
                 {clause} ORDER BY s.plan_seq, s.ord"
            )
        };
        let mut st = self.conn.prepare(&sql)?;
        let mut rows = st
            .query(rusqlite::params_from_iter(values))
            .map_err(db_err(&self.path, "reading steps"))?;
        let mut names: Vec<String> = Vec::new();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut pairs: HashMap<(u32, u32), u64> = HashMap::new();
        let mut current: Option<i64> = None;
        let mut tools: Vec<u32> = Vec::new();
        let flush = |tools: &mut Vec<u32>, pairs: &mut HashMap<(u32, u32), u64>| {
            // A plan's first PAIR_TOOLS distinct tools: pairs grow with the square of a
            // plan's tools (a 10,000-step plan would be 50 million).
            let mut seen = std::collections::HashSet::new();
            tools.retain(|t| seen.len() < PAIR_TOOLS && seen.insert(*t));
            tools.sort_unstable();
            for i in 0..tools.len() {
                for j in i + 1..tools.len() {
                    *pairs.entry((tools[i], tools[j])).or_default() += 1;
                }
            }
            tools.clear();
        };
        while let Some(r) = rows.next().map_err(db_err(&self.path, "reading steps"))? {
            let seq: i64 = r.get(0)?;
            let tool = r.get_ref(1)?.as_str().map_err(|e| {
                anyhow::anyhow!("{}: a step's tool is damaged ({e})", self.path.shown())
            })?;
            if tool == UNKNOWN_TOOL {
                continue;
            }
            if current != Some(seq) {
                flush(&mut tools, &mut pairs);
                current = Some(seq);
            }
            let id = match ids.get(tool) {
                Some(id) => *id,
                None => {
                    let id = names.len() as u32;
                    names.push(tool.to_string());
                    ids.insert(tool.to_string(), id);
                    id
                }
            };
            tools.push(id);
        }
        flush(&mut tools, &mut pairs);
        // Ranked by the names they point at; only the pairs kept become strings (tester 9
        // T9-13: every pair's two names were copied before the cut to `limit`, 672 MB for
        // 30 plans of 200 tools with 500-byte names).
        let named = |(a, b): (u32, u32)| {
            let (a, b) = (names[a as usize].as_str(), names[b as usize].as_str());
            if a <= b { (a, b) } else { (b, a) }
        };
        let mut ranked: Vec<((u32, u32), u64)> = pairs.into_iter().collect();
        let order = |x: &((u32, u32), u64), y: &((u32, u32), u64)| {
            y.1.cmp(&x.1).then_with(|| named(x.0).cmp(&named(y.0)))
        };
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked.truncate(limit);
        Ok(ranked
            .into_iter()
            .map(|(pair, n)| {
                let (a, b) = named(pair);
                StepPair {
                    a: a.to_string(),
                    b: b.to_string(),
                    plans: n,
                }
            })
            .collect())
    }

    /// Drift counts over `filter`, and the most recent `limit` plans with their evidence.
    pub fn drift(&self, filter: &PlanFilter, limit: u64) -> anyhow::Result<DriftReport> {
        let (clause, values) = filter.clause();
        let mut st = self.conn.prepare(&format!(
            "SELECT p.drift, COUNT(*) FROM plans p {clause} GROUP BY 1"
        ))?;
        let found: HashMap<String, i64> = st
            .query_map(rusqlite::params_from_iter(values.clone()), |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<_, _>>()
            .map_err(db_err(&self.path, "counting drift"))?;
        // Replays are listed only when there are some: they are not a drift anyone saw.
        let counts = Drift::ALL
            .iter()
            .map(|d| (*d, found.get(d.as_str()).copied().unwrap_or(0) as u64))
            .filter(|(d, n)| *d != Drift::Replay || *n > 0)
            .collect();
        let mut values = values;
        let page = page_sql(&mut values, limit, 0);
        let mut st = self.conn.prepare(&format!(
            "SELECT p.id, p.at, p.caller, p.model, p.intent, p.drift, p.executed, {PLANNED_TOOLS},
                    p.source, p.executed_failed
             FROM plans p {clause} ORDER BY {PLANS_NEWEST_FIRST} {page}"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(values), |r| {
            let id: String = r.get(0)?;
            let row = DriftRow {
                at: plan_time(r, 1, &id)?,
                drift: drift_col(r, 5, Some(&id))?,
                id,
                caller: sqlite::text_at(r, 2)?,
                model: sqlite::text_at(r, 3)?,
                intent: sqlite::text_at(r, 4)?,
                planned: Vec::new(),
                executed: Vec::new(),
                executed_ok: Vec::new(),
                source: r.get(8)?,
            };
            Ok((
                row,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, String>(9)?,
            ))
        })?;
        let rows = self.readable(rows, "listing drift")?;
        let plans = rows
            .into_iter()
            .map(|(mut row, executed, planned, failed)| {
                row.planned = stored_json(&self.path, &row.id, "steps", &planned)?;
                (row.executed, row.executed_ok) =
                    stored_executed(&self.path, &row.id, &executed, &failed)?;
                Ok(row)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(DriftReport {
            window_secs: self.drift_window,
            counts,
            plans,
            left_out: self.left_out_note(),
        })
    }

    /// Outcome and drift counts and failure causes per model, most plans first.
    pub fn model_outcomes(&self, filter: &PlanFilter) -> anyhow::Result<Vec<ModelOutcomes>> {
        self.model_outcomes_from(filter, Counted::from_filter(filter))
    }

    pub(super) fn model_outcomes_from(
        &self,
        filter: &PlanFilter,
        from: Counted,
    ) -> anyhow::Result<Vec<ModelOutcomes>> {
        let (clause, values) = filter.clause();
        let sql = match from {
            Counted::Kept => format!(
                "SELECT p.model, p.outcome, p.drift, NULLIF(p.failure_class, ''), SUM(p.plans)
                 FROM plan_counts p {clause} GROUP BY 1, 2, 3, 4 HAVING SUM(p.plans) > 0"
            ),
            Counted::Plans => format!(
                "SELECT p.model, p.outcome, p.drift, p.failure_class, COUNT(*)
                 FROM plans p {clause} GROUP BY 1, 2, 3, 4"
            ),
        };
        let mut st = self.conn.prepare(&sql)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(values), |r| {
                Ok((
                    sqlite::text_at(r, 0)?,
                    outcome_col(r, 1, None)?,
                    drift_col(r, 2, None)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)? as u64,
                ))
            })
            .map_err(db_err(&self.path, "counting outcomes"))?;
        let rows = self.readable(rows, "counting outcomes")?;
        let mut by_model: HashMap<String, (ModelOutcomes, HashMap<String, u64>)> = HashMap::new();
        for (model, outcome, drift, cause, n) in rows {
            let (m, causes) = by_model.entry(model.clone()).or_insert_with(|| {
                (
                    ModelOutcomes {
                        model,
                        ..Default::default()
                    },
                    HashMap::new(),
                )
            });
            if drift == Drift::Replay {
                m.replays += n;
                continue;
            }
            m.plans += n;
            match outcome {
                Outcome::Ok => m.ok += n,
                Outcome::Guarded => m.guarded += n,
                Outcome::Failed => m.failed += n,
            }
            match drift {
                Drift::Followed => m.followed += n,
                Drift::Partial => m.partial += n,
                Drift::Ignored => m.ignored += n,
                Drift::Diverged => m.diverged += n,
                Drift::Failed | Drift::Replay => {}
            }
            if outcome == Outcome::Failed {
                // The kept counts hold no class as ''; an empty class reads as none either way.
                *causes
                    .entry(
                        cause
                            .filter(|c| !c.is_empty())
                            .unwrap_or_else(|| "unclassified".into()),
                    )
                    .or_default() += n;
            }
        }
        let mut out: Vec<ModelOutcomes> = by_model
            .into_values()
            .map(|(mut m, causes)| {
                let mut causes: Vec<(String, u64)> = causes.into_iter().collect();
                causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                m.failure_causes = causes;
                m
            })
            .collect();
        out.sort_by(|a, b| b.plans.cmp(&a.plans).then(a.model.cmp(&b.model)));
        Ok(out)
    }

    /// How many plans matching `filter` came from each source, most first.
    pub fn source_counts(&self, filter: &PlanFilter) -> anyhow::Result<Vec<(String, u64)>> {
        let (clause, values) = filter.clause();
        let mut st = self.conn.prepare(&format!(
            "SELECT p.source, COUNT(*) c FROM plans p {clause} GROUP BY 1 ORDER BY c DESC, 1"
        ))?;
        st.query_map(rusqlite::params_from_iter(values), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err(&self.path, "counting sources"))
    }

    /// Gap signals of the plans matching `filter`, counted by intent shape and tool (see
    /// [`crate::core::gap::aggregate`]). Reads only plans with a baseline (a partial index).
    /// Each model counts once per send: only its plan made with the planner's help (the
    /// `compacted` arm, or a send in no comparison) — never the other A/B arms of the same
    /// send, and never a replay. `history --gaps`, MCP `my-plans` and the console's Gaps
    /// view all count here.
    pub fn gaps(&self, filter: &PlanFilter) -> anyhow::Result<GapReport> {
        const COUNTED: &str = "p.gap_signal IS NOT NULL AND p.replay_of IS NULL \
             AND (p.arm IS NULL OR p.arm = 'compacted')";
        let (clause, values) = filter.clause();
        let clause = if clause.is_empty() {
            format!("WHERE {COUNTED}")
        } else {
            format!("{clause} AND {COUNTED}")
        };
        let mut st = self.conn.prepare(&format!(
            "SELECT p.id, p.shape, s.intent, p.gap_signal
             FROM plans p JOIN shapes s ON s.shape = p.shape {clause}"
        ))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(values), |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    sqlite::text_at(r, 2)?,
                    r.get::<_, String>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "reading gap signals"))?;
        let rows = rows
            .into_iter()
            .map(|(id, shape, intent, json)| {
                Ok(GapRow {
                    shape,
                    intent,
                    signal: stored_json(&self.path, &id, "gap_signal", &json)?,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(aggregate(rows))
    }

    /// Of `catalog`, the entries no plan named and no execution ran since `since`. One
    /// indexed look-up per entry, so it costs the catalog's size, not the history's.
    pub fn unused(&self, catalog: &[String], since: Option<i64>) -> anyhow::Result<Vec<String>> {
        let mut planned = self.conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM plan_steps s JOIN plans p ON p.seq = s.plan_seq
                            WHERE s.tool = ?1 AND p.at >= ?2)",
        )?;
        let mut ran = self.conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM executions WHERE tool = ?1 AND at >= ?2)",
        )?;
        let floor = since.unwrap_or(i64::MIN);
        let mut out = Vec::new();
        for name in catalog {
            let used = planned
                .query_row(params![name, floor], |r| r.get::<_, bool>(0))
                .and_then(|p| {
                    if p {
                        Ok(true)
                    } else {
                        ran.query_row(params![name, floor], |r| r.get::<_, bool>(0))
                    }
                })
                .map_err(db_err(&self.path, "looking for unused entries"))?;
            if !used {
                out.push(name.clone());
            }
        }
        Ok(out)
    }

    /// Distinct callers and models, for filters.
    pub fn callers_and_models(&self) -> anyhow::Result<(Vec<String>, Vec<String>)> {
        let list = |sql: &str| -> anyhow::Result<Vec<String>> {
            let mut st = self.conn.prepare(sql)?;
            let v = st
                .query_map([], |r| sqlite::text_at(r, 0))?
                .collect::<Result<Vec<String>, _>>()
                .map_err(db_err(&self.path, "listing callers and models"))?;
            Ok(v)
        };
        // Index skip-scan: one seek per distinct value instead of reading every plan.
        let distinct = |col: &str| {
            format!(
                "WITH RECURSIVE v(x) AS (
                     SELECT MIN({col}) FROM plans
                     UNION ALL
                     SELECT (SELECT MIN({col}) FROM plans WHERE {col} > v.x) FROM v WHERE v.x IS NOT NULL)
                 SELECT x FROM v WHERE x IS NOT NULL"
            )
        };
        Ok((list(&distinct("caller"))?, list(&distinct("model"))?))
    }

    /// Past plans for the ranking prior, weighted by outcome and drift. A diverged plan
    /// counts against its own tools and for the ones executed instead. `before` limits to
    /// plans earlier than a time (for evaluation); `limit` keeps the most recent. Each intent
    /// is read only as far as the prior reads it ([`PRIOR_INTENT_BYTES`], in characters, and
    /// one more so a word the cut splits is seen): a 1 MiB intent is not copied out whole.
    pub fn past_plans(&self, before: Option<i64>, limit: usize) -> anyhow::Result<Vec<PastPlan>> {
        // A plan ctxconsole sent that no agent has run yet is no evidence either way (see
        // `PlanSource::Sent`); once executions are recorded against it, it counts.
        // `+p.outcome` keeps SQLite off the outcome index: walking `at` backwards and
        // stopping at `limit` reads 5,000 rows; the outcome index would sort 800,000 of a
        // million-plan store (0.89 s → 0.13 s for `preview` on one).
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT substr(p.intent, 1, ?3), p.outcome, p.drift, p.executed, {PLANNED_TOOLS}, p.id,
                    p.executed_failed
             FROM plans p
             WHERE +p.outcome <> 'failed' AND p.drift <> 'replay' AND p.at < ?1
               AND NOT (p.source = 'sent' AND p.drift = 'ignored')
             ORDER BY {PLANS_NEWEST_FIRST} LIMIT ?2"
        ))?;
        let mut out = Vec::new();
        let opening = PRIOR_INTENT_BYTES as i64 + 1;
        let rows = st.query_map(
            params![before.unwrap_or(i64::MAX), limit as i64, opening],
            |r| {
                let id: String = r.get(5)?;
                Ok((
                    sqlite::text_at(r, 0)?,
                    outcome_col(r, 1, Some(&id))?,
                    drift_col(r, 2, Some(&id))?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            },
        )?;
        let rows = self.readable(rows, "reading past plans")?;
        for (intent, outcome, drift, executed, planned, id, failed) in rows {
            let planned = runnable_tools(&self.path, &id, &planned)?;
            let (executed, ok) = stored_executed(&self.path, &id, &executed, &failed)?;
            let runs: Vec<Ran<'_>> = executed
                .iter()
                .zip(&ok)
                .map(|(tool, ok)| Ran { tool, ok: *ok })
                .collect();
            let planned_refs: Vec<&str> = planned.iter().map(String::as_str).collect();
            let weight = prior_weight(outcome, drift, planned_ran_ok(&planned_refs, &runs));
            if drift == Drift::Diverged {
                // What the agent ran instead is lifted only where it worked.
                let worked: Vec<String> = runs
                    .iter()
                    .filter(|r| r.ok)
                    .map(|r| r.tool.to_string())
                    .collect();
                if !worked.is_empty() {
                    out.push(PastPlan {
                        intent: intent.clone(),
                        tools: worked,
                        outcome: DIVERGED_EXECUTED_WEIGHT,
                    });
                }
            }
            if weight != 0.0 && !planned.is_empty() {
                out.push(PastPlan {
                    intent,
                    tools: planned,
                    outcome: weight,
                });
            }
        }
        Ok(out)
    }

    /// The most recent `limit` followed plans (not replays), newest first, with their
    /// intent's shape and the tools a caller could run: what the request's past-plans part
    /// is mined from. Reads the `(drift, at)` index backwards, stopping at `limit`.
    pub fn followed_steps(&self, limit: usize) -> anyhow::Result<Vec<FollowedPlan>> {
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT p.id, p.shape, {PLANNED_TOOLS}
             FROM plans p WHERE p.drift = 'followed' AND p.replay_of IS NULL
             ORDER BY {PLANS_NEWEST_FIRST} LIMIT ?1"
        ))?;
        let rows = st
            .query_map([limit as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "reading followed plans"))?;
        rows.into_iter()
            .map(|(id, shape, tools)| {
                let tools = runnable_tools(&self.path, &id, &tools)?;
                Ok(FollowedPlan { id, shape, tools })
            })
            .collect()
    }

    /// Followed plans, oldest first: (at, intent, planned tools). For `eval rank --history`.
    pub fn followed_plans(&self) -> anyhow::Result<Vec<(i64, String, Vec<String>)>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT p.at, p.intent, {PLANNED_TOOLS}, p.id
             FROM plans p WHERE p.drift = 'followed' AND p.replay_of IS NULL
             ORDER BY {PLANS_OLDEST_FIRST}"
        ))?;
        // A plan whose time was put in by hand is left out and noted ([`Self::readable`]),
        // as every listing does (review 50 M1: it failed `eval rank --history`).
        let rows = st.query_map([], |r| {
            let id: String = r.get(3)?;
            Ok((
                plan_time(r, 0, &id)?,
                sqlite::text_at(r, 1)?,
                r.get::<_, String>(2)?,
                id,
            ))
        })?;
        let rows = self.readable(rows, "reading followed plans")?;
        rows.into_iter()
            .map(|(at, intent, tools, id)| {
                Ok((at, intent, runnable_tools(&self.path, &id, &tools)?))
            })
            .collect()
    }
}
