//! Writing the store: imports (all-or-nothing, conflicts settled by `OnConflict`), inserts
//! of sent and replayed plans, export, and drift kept current as executions arrive.

use super::*;
use crate::core::as_sent::is_baseline;
use crate::core::history::Baseline;
use crate::core::send_mark::SendMark;
use crate::core::terminal_text::ShownPath;
use std::rc::Rc;

/// A sent plan stored before its send's baseline came back: its id, outcome and steps, for
/// [`HistoryStore::link_baseline`].
pub type UnlinkedPlan = (String, Outcome, Vec<Step>);

impl HistoryStore {
    /// Import plans from JSON Lines. One transaction: a bad line aborts the whole import,
    /// naming the line, and the store is as it was. A plan whose id is stored with the same
    /// content is already present; with other content it is a conflict, settled by
    /// `on_conflict` (refused by default: an error listing the ids, nothing written).
    /// `progress` hears the lines read so far.
    pub fn import_plans(
        &mut self,
        source: &str,
        reader: impl BufRead,
        pipelines: &HashSet<String>,
        on_conflict: OnConflict,
        mut progress: impl FnMut(usize),
    ) -> anyhow::Result<ImportReport> {
        let (window, path) = (self.drift_window, self.path.clone());
        let secrets = self.secrets.clone();
        let tx = self.write("importing plans")?;
        let mut report = ImportReport::new(source, "plans");
        let mut callers = BTreeSet::new();
        let newest_before: i64 =
            tx.query_row("SELECT IFNULL(MAX(seq), 0) FROM plans", [], |r| r.get(0))?;
        {
            let mut insert = PlanInserter::new(&tx, &secrets)?;
            read_into(source, reader, &mut progress, &mut report, |line, text| {
                let plan = parse_imported_plan(source, line, text)?;
                plan_fate(
                    &tx,
                    &mut insert,
                    &path,
                    plan,
                    pipelines,
                    on_conflict,
                    &mut callers,
                )
            })?;
            insert.recount_shapes()?;
            report.linked_to_baseline = insert.linked;
            (report.second_baseline, report.second_baseline_ids) = insert.second_baselines;
        }
        // Executions stored before their plans arrived (imported first) are linked now: one
        // dated before its plan is said here as the executions import says it (tester 7
        // T7-6: only the order plans-then-executions said it), and their callers are judged
        // again, as the executions import judges the callers of the plans it links.
        let mut notes = LinkNotes::default();
        stored_runs_of_new_plans(&tx, newest_before, &mut notes, &mut callers)
            .map_err(db_err(&path, "reading the executions the new plans link"))?;
        notes.into_report(&mut report);
        finish_import(tx, &callers, window, &path, report)
    }

    /// Take `secrets`' keys out of every stored plan and execution that holds one (stored
    /// before the key was configured, or by a version that kept what it was given): each
    /// such row is replaced, in one transaction, by itself as it would be kept now, as a
    /// re-import with `--on-conflict replace` would (a plan's steps, answer, raw response,
    /// trim record, baseline, caller, model and id; an execution's every name; groups and
    /// drift recounted); then the file is rewritten (VACUUM) and its write-ahead log
    /// emptied, so the old rows are in no free page either. With `dry_run` nothing is
    /// written. Says the rows that held a key, oldest first, by their ids as kept (an id
    /// that held the key is not said as it was).
    pub fn scrub(
        &mut self,
        secrets: &Secrets,
        pipelines: &HashSet<String>,
        dry_run: bool,
    ) -> anyhow::Result<Scrubbed> {
        let path = self.path.clone();
        let held =
            |conn: &Connection, id: &str| -> anyhow::Result<Option<(StoredPlan, PlanRecord)>> {
                let Some(stored) = read_plan(conn, &path, id)? else {
                    return Ok(None);
                };
                let mut kept = stored.detail.record.clone();
                secrets.record(&mut kept);
                Ok((kept != stored.detail.record).then_some((stored, kept)))
            };
        let plan_ids =
            plan_ids_oldest_first(&self.conn).map_err(db_err(&path, "listing the plans"))?;
        // (the stored id, to read it again inside the write) for each plan holding a key
        let mut plans = Vec::new();
        let mut found = Scrubbed::default();
        for id in &plan_ids {
            if let Some((_, kept)) = held(&self.conn, id)? {
                plans.push(id.clone());
                found.plans.push(kept.id);
            }
        }
        let executions = executions_holding(&self.conn, secrets)
            .map_err(db_err(&path, "reading the executions"))?;
        found.executions = executions.into_iter().map(|(_, kept)| kept.id).collect();
        if dry_run || (found.plans.is_empty() && found.executions.is_empty()) {
            return Ok(found);
        }
        let window = self.drift_window;
        let no_more = std::sync::Arc::new(Secrets::default());
        // What the scrub deletes is overwritten with zeros as it goes, so the key is in no
        // free page even if the file cannot be rewritten afterwards (another reader).
        self.conn
            .pragma_update(None, "secure_delete", "ON")
            .map_err(db_err(&path, "scrubbing keys"))?;
        let tx = self.write("scrubbing keys")?;
        let mut callers = BTreeSet::new();
        let mut linked = BTreeSet::new();
        {
            let mut insert = PlanInserter::new(&tx, &no_more)?;
            // Read again inside the write: another process may have changed a row since.
            for id in &plans {
                if let Some((stored, kept)) = held(&tx, id)? {
                    insert.replace(&stored, &kept, pipelines)?;
                    callers.insert(kept.caller);
                }
            }
            insert.recount_shapes()?;
            let insert = ExecutionInserter::new(&tx, &no_more)?;
            let executions = executions_holding(&tx, secrets)
                .map_err(db_err(&path, "reading the executions"))?;
            for (stored, kept) in executions {
                insert
                    .replace(&stored.id, &kept)
                    .map_err(db_err(&path, "scrubbing an execution"))?;
                linked.extend(kept.plan_id);
                callers.insert(kept.caller);
            }
        }
        drop_counts_holding(&tx, secrets).map_err(db_err(&path, "scrubbing the plan counts"))?;
        callers.extend(callers_of_plans(&tx, &linked)?);
        let mut report = ImportReport::new(path.shown().as_ref(), "plans");
        report.replaced = found.plans.len() + found.executions.len();
        finish_import(tx, &callers, window, &path, report)?;
        sqlite::rewrite_whole(&self.conn).map_err(db_err(
            &path,
            "the keys are out of every plan and execution; rewriting the file (VACUUM) and \
                 emptying its write-ahead log",
        ))?;
        Ok(found)
    }

    /// Import executions from JSON Lines; all-or-nothing, and conflicts settled, like
    /// [`import_plans`](Self::import_plans). An execution without an id gets one derived
    /// from all its fields, so only an id given by the source can conflict.
    pub fn import_executions(
        &mut self,
        source: &str,
        reader: impl BufRead,
        on_conflict: OnConflict,
        mut progress: impl FnMut(usize),
    ) -> anyhow::Result<ImportReport> {
        let (window, path) = (self.drift_window, self.path.clone());
        let secrets = self.secrets.clone();
        let tx = self.write("importing executions")?;
        let mut report = ImportReport::new(source, "executions");
        let mut callers = BTreeSet::new();
        let mut linked = Links::default();
        let mut notes = LinkNotes::default();
        {
            let mut insert = ExecutionInserter::new(&tx, &secrets)?;
            read_into(source, reader, &mut progress, &mut report, |line, text| {
                let e = parse_execution_line(source, line, text)?;
                execution_fate(
                    &mut insert,
                    &path,
                    e,
                    on_conflict,
                    &mut callers,
                    &mut linked,
                    &mut notes,
                )
            })?;
        }
        notes.into_report(&mut report);
        callers.extend(callers_of_plans(&tx, linked.plans())?);
        finish_import(tx, &callers, window, &path, report)
    }

    /// Import a gateway's traffic as an importer reads it, one plan at a time (a LiteLLM
    /// spend log or an OpenTelemetry traces file, however big): `read` hands each plan to
    /// the sink it is given as soon as it is read, and returns how many records it read and
    /// the executions it found, linked to their plans, which are stored after the plans.
    /// One transaction, all or nothing; a second import adds nothing; conflicts settled by
    /// `on_conflict`.
    pub fn import_traffic(
        &mut self,
        source: &str,
        origin: TrafficSource,
        pipelines: &HashSet<String>,
        on_conflict: OnConflict,
        read: impl FnOnce(
            &mut dyn FnMut(PlanRecord) -> anyhow::Result<()>,
        ) -> anyhow::Result<StreamRead>,
    ) -> anyhow::Result<ImportReport> {
        let (window, path) = (self.drift_window, self.path.clone());
        let secrets = self.secrets.clone();
        let tx = self.write("importing traffic")?;
        let mut report = ImportReport::new(source, "records");
        let mut callers = BTreeSet::new();
        let mut linked = Links::default();
        let mut notes = LinkNotes::default();
        let mut conflicts = Vec::new();
        // Traces whose chat spans this import added: their runs stored by earlier imports
        // are linked again, among every chat of the trace the store now holds.
        let mut new_chat_traces = BTreeSet::new();
        {
            let mut insert = PlanInserter::new(&tx, &secrets)?;
            let mut sink = |plan: PlanRecord| -> anyhow::Result<()> {
                if plan
                    .answer
                    .as_ref()
                    .is_some_and(|a| a.get(crate::core::traffic::TOOL_CALLS_NOT_KEPT).is_some())
                {
                    report.tool_calls_cut += 1;
                }
                if plan
                    .answer
                    .as_ref()
                    .is_some_and(|a| a.get(crate::core::traffic::NOT_READ).is_some())
                {
                    report.answers_not_read += 1;
                }
                if plan
                    .answer
                    .as_ref()
                    .is_some_and(|a| a.get(crate::core::traffic::OTHER_CHOICES).is_some())
                {
                    report.answers_other_choices += 1;
                }
                // The command names the source; the record carries it into the store.
                let plan = PlanRecord {
                    source: origin,
                    ..plan
                };
                let trace = (origin == TrafficSource::Otel)
                    .then(|| crate::core::traffic::otel_trace_of(&plan.id).map(str::to_string))
                    .flatten();
                // Traffic gives every plan its id (from the record), never a derived one.
                let plan = ImportedPlan {
                    record: plan,
                    fallback_id: None,
                    earlier_id: None,
                };
                let fate = plan_fate(
                    &tx,
                    &mut insert,
                    &path,
                    plan,
                    pipelines,
                    on_conflict,
                    &mut callers,
                )?;
                if let Some(trace) = trace
                    && matches!(fate, Fate::Added | Fate::Replaced)
                {
                    new_chat_traces.insert(trace);
                }
                tally(&mut report, &mut conflicts, fate);
                Ok(())
            };
            let read = read(&mut sink)?;
            insert.recount_shapes()?;
            report.lines = read.records;
            let mut insert = ExecutionInserter::new(&tx, &secrets)?;
            for run in read.executions {
                // Linked among every chat of its trace the store holds: this file's, stored
                // above, and earlier imports' (tester 23 F1).
                let chats = trace_chats(&tx, &run.trace)
                    .map_err(db_err(&path, "reading the chat spans of a trace"))?;
                let e = run.execution;
                let plan_id = chat_of_run(
                    chats.iter().map(|(at, id)| (*at, id.as_str())),
                    (e.at, e.at_nanos),
                )
                .map(str::to_string);
                match (&plan_id, chats.is_empty()) {
                    (Some(_), _) => {}
                    (None, true) => report.no_chat_span += 1,
                    (None, false) => report.before_every_chat += 1,
                }
                let e = ExecutionRecord { plan_id, ..e };
                let fate = execution_fate(
                    &mut insert,
                    &path,
                    e,
                    on_conflict,
                    &mut callers,
                    &mut linked,
                    &mut notes,
                )?;
                tally(&mut report, &mut conflicts, fate);
            }
        }
        refuse_conflicts(source, "records", &conflicts)?;
        for trace in &new_chat_traces {
            report.linked_to_new_chats += link_runs_of_trace(&tx, trace, &mut linked, &mut callers)
                .map_err(db_err(&path, "linking the runs of a trace"))?;
        }
        notes.into_report(&mut report);
        callers.extend(callers_of_plans(&tx, linked.plans())?);
        finish_import(tx, &callers, window, &path, report)
    }

    /// Add records directly (the generator and live replays); one transaction.
    pub fn insert_records(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<usize> {
        Ok(self
            .insert_records_with(plans, executions, pipelines, None, true)?
            .unwrap_or(0))
    }

    /// As [`insert_records`](Self::insert_records) without updating drift: for loading many
    /// batches, followed by one [`recompute_all_drift`](Self::recompute_all_drift).
    pub fn insert_records_bulk(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<usize> {
        Ok(self
            .insert_records_with(plans, executions, pipelines, None, false)?
            .unwrap_or(0))
    }

    /// Recompute every plan's drift; returns how many changed.
    pub fn recompute_all_drift(&mut self) -> anyhow::Result<usize> {
        let window = self.drift_window;
        let tx = self.write("recomputing drift")?;
        let callers = all_callers(&tx)?;
        let n = recompute_drift(&tx, &callers, window)?;
        tx.commit()?;
        Ok(n)
    }

    pub(super) fn insert_records_with(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
        meta: Option<(&str, &str)>,
        recompute: bool,
    ) -> anyhow::Result<Option<usize>> {
        let (window, path) = (self.drift_window, self.path.clone());
        let secrets = self.secrets.clone();
        let tx = self.write("storing plans")?;
        if let Some((k, v)) = meta {
            // Checked under the write lock: two first runs at once seed once, and a store
            // another process imported into first is not seeded.
            let done: Option<String> = tx
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()?;
            let held: bool =
                tx.query_row("SELECT EXISTS (SELECT 1 FROM plans)", [], |r| r.get(0))?;
            if done.is_some() || held {
                return Ok(None);
            }
            set_meta(&tx, k, v)?;
        }
        let mut callers = BTreeSet::new();
        let mut added = 0;
        let newest_before: i64 =
            tx.query_row("SELECT IFNULL(MAX(seq), 0) FROM plans", [], |r| r.get(0))?;
        {
            let mut p = PlanInserter::new(&tx, &secrets)?;
            // Drift moves for the callers and plans as they are kept.
            for plan in plans {
                if p.insert(plan, pipelines)?.is_some() {
                    added += 1;
                    callers.insert(secrets.text(&plan.caller));
                }
            }
            let mut e = ExecutionInserter::new(&tx, &secrets)?;
            let mut linked = BTreeSet::new();
            for ex in executions {
                if e.insert(ex)? {
                    linked.extend(ex.plan_id.clone().map(|mut id| {
                        secrets.id(&mut id);
                        id
                    }));
                    callers.insert(secrets.text(&ex.caller));
                }
            }
            callers.extend(callers_of_plans(&tx, &linked)?);
        }
        // Runs stored before the plans they name, as `import_plans` links them.
        stored_runs_of_new_plans(&tx, newest_before, &mut LinkNotes::default(), &mut callers)
            .map_err(db_err(&path, "reading the executions the new plans link"))?;
        if recompute {
            recompute_drift(&tx, &callers, window)?;
        }
        tx.commit()?;
        Ok(Some(added))
    }

    /// Store a replay as a new plan linked to its original (`replay_of` must be set), with
    /// the next free id `ORIGINAL.rN`. The original is not touched, and no drift moves: no
    /// agent runs a replay. Returns the new id.
    pub fn insert_replay(
        &mut self,
        record: &mut PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<String> {
        // The caller's copy too: a plan the store then refuses is printed as a line. First:
        // the original is looked up by its id as kept.
        self.secrets.record(record);
        let Some(original) = record.replay_of.clone() else {
            anyhow::bail!("a replay record needs replay_of");
        };
        let path = self.path.clone();
        self.insert_replay_in(record, &original, pipelines)
            .map_err(|e| sqlite::store_failure(e, &path, "storing the replay"))
    }

    fn insert_replay_in(
        &mut self,
        record: &mut PlanRecord,
        original: &str,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<String> {
        let path = self.path.clone();
        let secrets = self.secrets.clone();
        let tx = self.write("storing a replay")?;
        let known: bool = tx
            .query_row(
                "SELECT COUNT(*) FROM plans WHERE id = ?1",
                [original],
                |r| r.get::<_, i64>(0),
            )
            .map_err(db_err(&path, "finding the replayed plan"))?
            > 0;
        if !known {
            return Err(bad_input(format!(
                "{} to link a replay to",
                no_such_plan(original, &path)
            )));
        }
        let mut n: i64 = tx.query_row(
            "SELECT COUNT(*) FROM plans WHERE replay_of = ?1",
            [original],
            |r| r.get(0),
        )?;
        {
            let mut inserter = PlanInserter::new(&tx, &secrets)?;
            loop {
                n += 1;
                record.id = format!("{original}.r{n}");
                if inserter.insert(record, pipelines)?.is_some() {
                    break;
                }
            }
        }
        tx.commit().map_err(db_err(&path, "storing the replay"))?;
        Ok(record.id.clone())
    }

    /// Store a plan sent live by `ctxconsole send` (not a replay: `replay_of` must be
    /// unset) under the next free id `send-AT-N` (AT: its comparison's start, for an arm). No execution follows it yet, so its drift
    /// is `ignored` (or `failed`) like any new plan. Returns the id.
    ///
    /// `started`: when the send began, the stem of every plan it stores, whenever each
    /// answered (tester 36 F2: a slow model's plan took the stem of its answer's time, and a
    /// slow baseline's joined a later send's series); without it, an arm's comparison gives
    /// the stem, else the plan's own time.
    pub fn insert_sent(
        &mut self,
        record: &mut PlanRecord,
        pipelines: &HashSet<String>,
        started: Option<i64>,
    ) -> anyhow::Result<String> {
        if record.replay_of.is_some() {
            anyhow::bail!("a sent plan replays nothing");
        }
        // The caller's copy too: a plan the store then refuses is printed as a line.
        self.secrets.record(record);
        let path = self.path.clone();
        self.insert_sent_in(record, pipelines, started)
            .map_err(|e| sqlite::store_failure(e, &path, "storing the sent plan"))
    }

    fn insert_sent_in(
        &mut self,
        record: &mut PlanRecord,
        pipelines: &HashSet<String>,
        started: Option<i64>,
    ) -> anyhow::Result<String> {
        let path = self.path.clone();
        let secrets = self.secrets.clone();
        let tx = self.write("storing a sent plan")?;
        {
            let mut inserter = PlanInserter::new(&tx, &secrets)?;
            // The arms of one comparison share their send's stem, whenever each answered
            // (tester 10 T10-19: an arm that timed out took the next send's stem).
            let stem = started
                .or_else(|| {
                    record.compare_group.as_deref().and_then(|g| {
                        g.strip_prefix("cmp-")?
                            .split('-')
                            .next()?
                            .parse::<i64>()
                            .ok()
                    })
                })
                .filter(|t| *t <= record.at)
                .unwrap_or(record.at);
            let mut n = 0u32;
            loop {
                n += 1;
                record.id = format!("send-{stem}-{n}");
                if inserter.insert(record, pipelines)?.is_some() {
                    break;
                }
            }
        }
        tx.commit()
            .map_err(db_err(&path, "storing the sent plan"))?;
        Ok(record.id.clone())
    }

    /// Give sent plans stored before their send's baseline came back its steps, and the gap
    /// signal each plan's own steps give against them ([`gap_column`], as on insert), in one
    /// transaction (tester 36 F1: held in hand for the baseline, they
    /// were lost to a kill while it was still out; now stored at once and linked here).
    pub fn link_baseline(
        &mut self,
        baseline: &crate::core::history::Baseline,
        plans: &[UnlinkedPlan],
    ) -> anyhow::Result<()> {
        let path = self.path.clone();
        let doing = "linking sent plans to their baseline";
        let tx = self.write(doing)?;
        link_plans(&tx, &path, baseline, plans)?;
        tx.commit().map_err(db_err(&path, doing))?;
        Ok(())
    }

    /// Failed plans (not replays) at or after `since`, oldest first.
    pub fn failed_plan_ids(&self, since: Option<i64>, limit: u64) -> anyhow::Result<Vec<String>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT p.id FROM plans p WHERE p.outcome = 'failed' AND p.at >= ?1
                 AND p.replay_of IS NULL ORDER BY {PLANS_OLDEST_FIRST} LIMIT ?2"
            ))?
            .query_map(params![since.unwrap_or(i64::MIN), limit as i64], |r| {
                r.get(0)
            })?
            .collect::<Result<_, _>>()
            .map_err(db_err(&self.path, "listing failed plans"))
    }

    /// Seed an empty, never-seeded store with the sample history, in one transaction.
    /// Returns how many plans this call added, or `None` when the store was already seeded
    /// or holds plans: decided under the write lock, so of two first runs at once one seeds
    /// and the other says nothing (tester 6 F5: both said they had seeded, counting the
    /// other's imports).
    pub fn seed_if_new(
        &mut self,
        plans_jsonl: &str,
        executions_jsonl: &str,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<Option<usize>> {
        // Cheap look first: an existing store is not parsed the sample for.
        if self.meta("seeded")?.is_some() || self.counts()?.plans > 0 {
            return Ok(None);
        }
        let mut plans = Vec::new();
        let mut none = |_| {};
        for_each_line(
            "sample plans",
            plans_jsonl.as_bytes(),
            &mut none,
            |line, text| {
                plans.push(parse_plan_line("sample plans", line, text)?);
                Ok(())
            },
        )?;
        let mut executions = Vec::new();
        for_each_line(
            "sample executions",
            executions_jsonl.as_bytes(),
            &mut none,
            |line, text| {
                executions.push(parse_execution_line("sample executions", line, text)?);
                Ok(())
            },
        )?;
        self.insert_records_with(
            &plans,
            &executions,
            pipelines,
            Some(("seeded", "sample")),
            true,
        )
    }

    /// Every readable plan as JSON Lines, oldest first, and how many were written: one a
    /// damaged column keeps from being read is left out and noted ([`HistoryStore::readable_one`]).
    pub fn export_plans(&self, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
        let ids = plan_ids_oldest_first(&self.conn)?;
        let mut written = 0;
        for id in &ids {
            // A plan a damaged column keeps from being read is left out, and said
            // ([`HistoryStore::left_out_note`]): it does not stop the export of the rest.
            if let Some(d) = self.readable_one(self.plan_alone(id))?.flatten() {
                written += 1;
                let mut line = serde_json::to_value(&d)?;
                if let Some(obj) = line.as_object_mut() {
                    obj.insert(
                        "at".into(),
                        crate::core::time::format_timestamp_nanos(d.record.at, d.record.at_nanos)
                            .into(),
                    );
                    // Derived, not imported: executions come from their own export, and
                    // replays are exported as plans of their own with `replay_of` (the
                    // list is empty here; the key goes so a line reads back).
                    obj.remove("executed");
                    obj.remove("executed_ok");
                    obj.remove("replays");
                    // A send mark an earlier version stored without reading it (before
                    // tester 38 F5) linked nothing and would refuse the line: left out, so
                    // the export still imports back.
                    if SendMark::problem(d.record.trim_record.as_ref()).is_some()
                        && let Some(serde_json::Value::Object(trim)) = obj.get_mut("trim_record")
                    {
                        trim.remove(crate::core::send_mark::SEND_KEY);
                    }
                }
                writeln!(out, "{}", serde_json::to_string(&line)?)?;
            }
        }
        Ok(written)
    }

    /// Every execution as JSON Lines, oldest first.
    pub fn export_executions(&self, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
        let mut st = self.conn.prepare(
            "SELECT id, at, caller, session, plan_id, tool, ok, at_nanos FROM executions
             ORDER BY at, at_nanos, seq",
        )?;
        let mut rows = st.query([])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let at: i64 = r.get(1)?;
            let line = serde_json::json!({
                "id": r.get::<_, String>(0)?,
                "at": crate::core::time::format_timestamp_nanos(at, r.get(7)?),
                "caller": r.get::<_, String>(2)?,
                "session": r.get::<_, Option<String>>(3)?,
                "plan_id": r.get::<_, Option<String>>(4)?,
                "tool": r.get::<_, String>(5)?,
                "ok": r.get::<_, bool>(6)?,
            });
            writeln!(out, "{line}")?;
            n += 1;
        }
        Ok(n)
    }

    /// The plan an execution at `at` (a Unix second and the nanoseconds past it) counts for,
    /// as drift counts it ([`recompute_drift`]): the plan it names, whoever's plan it is,
    /// when [`named_run`] says it counts (not when the run is dated before it or the plan is
    /// a replay), and none when the store does not hold it (yet); naming none, the latest
    /// plan of `caller` (not a replay) at or before `at`, within the drift window, or
    /// when that plan is an arm of an A/B comparison, the comparison's compacted arm (if it
    /// too is at or before `at`) — unless runs of `caller` naming that plan count for it
    /// (`NamedRun::Counts { own: true }`), when a run naming none counts for nothing.
    /// `plan_id` and `caller` as the execution gave them: they are looked up as they are kept.
    pub fn plan_counted_for(
        &self,
        plan_id: Option<&str>,
        caller: &str,
        (at, at_nanos): (i64, u32),
    ) -> anyhow::Result<CountedFor> {
        let plan_id = plan_id.map(|id| {
            let mut id = id.to_string();
            self.secrets.id(&mut id);
            id
        });
        let (plan_id, caller) = (plan_id.as_deref(), &*self.secrets.text(caller));
        let plan = |id: &str| -> anyhow::Result<Option<NamedPlanRow>> {
            let read = db_err(&self.path, "finding the plan an execution counts for");
            self.conn
                .query_row(
                    &format!("SELECT {NAMED_PLAN_COLUMNS} FROM plans p WHERE p.id = ?1"),
                    [id],
                    |r| named_plan_row(r, 0),
                )
                .optional()
                .map_err(read)
        };
        if let Some(id) = plan_id {
            // Not loose ([`LOOSE`]): evidence for the plan it names alone, if any.
            let counts = plan(id)?.is_some_and(|p| {
                matches!(
                    named_run(p.named(), caller, (at, at_nanos)),
                    NamedRun::Counts { .. }
                )
            });
            return Ok(if counts {
                CountedFor::Plan(id.to_string())
            } else {
                CountedFor::Nothing
            });
        }
        let read = db_err(&self.path, "finding the plan an execution counts for");
        let latest: Option<(String, i64, Option<String>)> = self
            .conn
            .query_row(
                "SELECT id, at, compare_group FROM plans WHERE caller = ?1 AND drift != ?2
                 AND at <= ?3
                 ORDER BY at DESC, (arm IS NULL OR arm = 'compacted') DESC, seq DESC LIMIT 1",
                params![caller, Drift::Replay.as_str(), at],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(read)?;
        let Some((latest_id, _, group)) =
            latest.filter(|(_, plan_at, _)| at <= plan_at + self.drift_window)
        else {
            return Ok(CountedFor::Nothing);
        };
        // A comparison's run counts for its compacted arm, whichever arm answered last.
        let read = db_err(&self.path, "finding the plan an execution counts for");
        let compacted: Option<String> = match group {
            Some(g) => self
                .conn
                .query_row(
                    "SELECT id FROM plans WHERE caller = ?1 AND drift != ?2 AND at <= ?3
                     AND compare_group = ?4 AND arm = 'compacted'
                     ORDER BY at DESC, seq DESC LIMIT 1",
                    params![caller, Drift::Replay.as_str(), at, g],
                    |r| r.get(0),
                )
                .optional()
                .map_err(read)?,
            None => None,
        };
        let id = compacted.unwrap_or(latest_id);
        // The latest run of `caller` naming the plan: if it does not count, no earlier one
        // does ([`after_plan`] holds of every run after one it holds of).
        let read = db_err(&self.path, "finding the plan an execution counts for");
        let latest_named: Option<(i64, u32)> = self
            .conn
            .query_row(
                "SELECT at, at_nanos FROM executions WHERE plan_id = ?1 AND caller = ?2
                 ORDER BY at DESC, at_nanos DESC LIMIT 1",
                params![&id, caller],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(read)?;
        let judged_by_named = match (latest_named, plan(&id)?) {
            (Some(named_at), Some(p)) => {
                named_run(p.named(), caller, named_at) == NamedRun::Counts { own: true }
            }
            _ => false,
        };
        Ok(if judged_by_named {
            CountedFor::JudgedByNamedRuns(id)
        } else {
            CountedFor::Plan(id)
        })
    }
}

/// What one execution counts for ([`HistoryStore::plan_counted_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountedFor {
    /// This plan.
    Plan(String),
    /// No plan.
    Nothing,
    /// No plan: naming none, it falls in the window of this plan of its caller, which the
    /// caller's runs naming it judge alone (tester 27 F1: the answer said `null` and no why).
    JudgedByNamedRuns(String),
}

impl CountedFor {
    /// The plan it counts for, if any.
    pub fn plan(&self) -> Option<&str> {
        match self {
            CountedFor::Plan(id) => Some(id),
            CountedFor::Nothing | CountedFor::JudgedByNamedRuns(_) => None,
        }
    }
}

/// Store one imported plan, or say why not: already present, a conflict settled by
/// `on_conflict`. Callers whose drift moves are added to `callers`.
pub(super) fn plan_fate(
    tx: &Transaction<'_>,
    insert: &mut PlanInserter<'_>,
    path: &Path,
    plan: ImportedPlan,
    pipelines: &HashSet<String>,
    on_conflict: OnConflict,
    callers: &mut BTreeSet<String>,
) -> anyhow::Result<Fate> {
    let ImportedPlan {
        record: plan,
        mut fallback_id,
        earlier_id,
    } = plan;
    // Compared with what is stored as it would be kept (a re-import of a line holding a
    // configured key is the plan already stored, not a conflict).
    let mut plan = insert.kept(plan);
    // Stored by an earlier version under its whole-second id: already present there.
    if let Some(earlier) = earlier_id
        && let Some(stored) = read_plan(tx, path, &earlier)?
    {
        let as_then = PlanRecord {
            id: earlier,
            ..plan.clone()
        };
        if insert.same(&stored, &as_then) {
            return Ok(Fate::Same);
        }
    }
    // A sent plan written out as a plan line while its store was under way (a second signal
    // as the write lock went): stored meanwhile under the id the store gave it, and the same
    // in every other field — already present (tester 37 T37-1: it was added a second time
    // under the line's own id).
    // Only for a line whose id is free: one stored under its id is judged by that below (a
    // re-import of an export reads no sibling plans for nothing).
    if (plan.source == PlanSource::Sent || plan.replay_of.is_some())
        && !id_stored(tx, &plan.id)?
        && stored_under_another_id(tx, insert, path, &plan)?
    {
        return Ok(Fate::Same);
    }
    let stored = loop {
        if insert.insert(&plan, pipelines)?.is_some() {
            insert.count_send_links(link_to_its_send(tx, path, &plan, None)?);
            callers.insert(plan.caller);
            return Ok(Fate::Added);
        }
        let Some(stored) = read_plan(tx, path, &plan.id)? else {
            anyhow::bail!(
                "{}: plan {} vanished during the import",
                path.shown(),
                plan.id
            );
        };
        if insert.same(&stored, &plan) {
            return Ok(Fate::Same);
        }
        // A derived id another plan holds, given at another instant of that second: this
        // plan is told apart by the part of a second it was given with.
        match fallback_id.take() {
            Some(id) if stored.detail.record.at_nanos != plan.at_nanos => {
                plan.id = id;
                plan = insert.kept(plan);
            }
            _ => break stored,
        }
    };
    Ok(match on_conflict {
        OnConflict::Refuse => Fate::Conflict(plan.id),
        OnConflict::Skip => Fate::Skipped,
        OnConflict::Replace => {
            insert.replace(&stored, &plan, pipelines)?;
            let old = &stored.detail.record;
            let linked = link_to_its_send(tx, path, &plan, Some(old))?;
            let second = linked.not_its_baseline.as_ref() == Some(&plan.id);
            insert.count_send_links(linked);
            insert.linked += relink_left_behind(tx, path, old, &plan, second)?;
            callers.insert(stored.detail.record.caller);
            callers.insert(plan.caller);
            Fate::Replaced
        }
    })
}

/// The plans an import's executions name: whose drift moves, and what the import says about
/// them (executions naming a plan not in the store, or dated before theirs). Counted as each
/// execution is stored, so an import holds one entry per plan named, not per execution.
#[derive(Default)]
pub(super) struct Links {
    plans: BTreeSet<String>,
}

impl Links {
    /// An execution added (or replacing another), with the plan it names: `None` when the
    /// store holds no such plan.
    fn add(&mut self, e: &ExecutionRecord, plan: Option<&NamedPlanRow>, report: &mut LinkNotes) {
        let Some(id) = &e.plan_id else {
            return;
        };
        match plan {
            None => report.unknown_plan += 1,
            Some(plan) => report.named(id, named_run(plan.named(), &e.caller, (e.at, e.at_nanos))),
        }
        self.plans.insert(id.clone());
    }

    /// Every plan named.
    pub(super) fn plans(&self) -> &BTreeSet<String> {
        &self.plans
    }
}

/// What an import says about the plans its executions name (see [`ImportReport`]).
#[derive(Default)]
pub(super) struct LinkNotes {
    unknown_plan: usize,
    before_plan: usize,
    before_plan_ids: Vec<String>,
    other_caller_plan: usize,
    other_caller_plan_ids: Vec<String>,
    replay_plan: usize,
    replay_plan_ids: Vec<String>,
}

/// A stored plan as drift reads it when a run names it ([`NamedPlan`]): the columns
/// [`NAMED_PLAN_COLUMNS`] selects of `plans p`, read by [`named_plan_row`].
pub(super) struct NamedPlanRow {
    at: (i64, u32),
    caller: String,
    replay: bool,
}

impl NamedPlanRow {
    pub(super) fn named(&self) -> NamedPlan<'_> {
        NamedPlan {
            at: self.at,
            caller: &self.caller,
            replay: self.replay,
        }
    }
}

/// The columns of `plans p` a [`NamedPlanRow`] is read from.
const NAMED_PLAN_COLUMNS: &str = "p.at, p.at_nanos, p.caller, p.drift = 'replay'";

/// The [`NamedPlanRow`] in the four columns from `first` on.
fn named_plan_row(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<NamedPlanRow> {
    Ok(NamedPlanRow {
        at: (r.get(first)?, r.get(first + 1)?),
        caller: r.get(first + 2)?,
        replay: r.get(first + 3)?,
    })
}

/// Executions already in the store that name a plan added after row `newest_before` (by
/// this import): each dated before its plan ([`after_plan`]) is counted into `notes`, and
/// every one's caller goes to `callers`. A link moves drift at both its ends, whichever of
/// the two was stored first (tester 18 F1: a gateway logs the plan under its caller, the
/// agent reports its runs under its own).
fn stored_runs_of_new_plans(
    tx: &Transaction<'_>,
    newest_before: i64,
    notes: &mut LinkNotes,
    callers: &mut BTreeSet<String>,
) -> rusqlite::Result<()> {
    let mut st = tx.prepare(&format!(
        "SELECT p.id, e.at, e.at_nanos, e.caller, {NAMED_PLAN_COLUMNS}
         FROM plans p JOIN executions e ON e.plan_id = p.id
         WHERE p.seq > ?1 ORDER BY p.seq, e.seq"
    ))?;
    let mut rows = st.query([newest_before])?;
    while let Some(r) = rows.next()? {
        let id: String = r.get(0)?;
        let caller = r.get_ref(3)?.as_str()?;
        let plan = named_plan_row(r, 4)?;
        notes.named(&id, named_run(plan.named(), caller, (r.get(1)?, r.get(2)?)));
        if !callers.contains(caller) {
            callers.insert(caller.to_string());
        }
    }
    Ok(())
}

impl LinkNotes {
    /// An execution naming the stored plan `id`, taken by drift as `run` is.
    fn named(&mut self, id: &str, run: NamedRun) {
        let (n, ids) = match run {
            NamedRun::Counts { own: true } => return,
            NamedRun::Counts { own: false } => {
                (&mut self.other_caller_plan, &mut self.other_caller_plan_ids)
            }
            NamedRun::BeforePlan => (&mut self.before_plan, &mut self.before_plan_ids),
            NamedRun::Replay => (&mut self.replay_plan, &mut self.replay_plan_ids),
        };
        *n += 1;
        if ids.len() < CONFLICTS_LISTED && !ids.iter().any(|b| b == id) {
            ids.push(id.to_string());
        }
    }

    pub(super) fn into_report(self, report: &mut ImportReport) {
        report.unknown_plan = self.unknown_plan;
        report.before_plan = self.before_plan;
        report.before_plan_ids = self.before_plan_ids;
        report.other_caller_plan = self.other_caller_plan;
        report.other_caller_plan_ids = self.other_caller_plan_ids;
        report.replay_plan = self.replay_plan;
        report.replay_plan_ids = self.replay_plan_ids;
    }
}

/// The chat spans of an OpenTelemetry trace the store holds: start and plan id. The id
/// range is what the index is used for (`+source` keeps SQLite off the source index, which
/// made an import of 100,000 traces quadratic: 5,000 chat spans 0.35 s → 3.8 s).
fn trace_chats(tx: &Transaction<'_>, trace: &str) -> rusqlite::Result<Vec<((i64, u32), String)>> {
    let (lo, hi) = otel_trace_ids(trace);
    tx.prepare_cached(
        "SELECT at, at_nanos, id FROM plans WHERE id >= ?1 AND id < ?2 AND +source = 'otel'",
    )?
    .query_map([lo, hi], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))?
    .collect()
}

/// A stored run of a trace as [`link_runs_of_trace`] reads it: its row, start, plan and
/// caller.
type TraceRunRow = (i64, (i64, u32), Option<String>, String);

/// Link again the stored runs (`execute_tool` spans) of a trace whose chats an import
/// added, each to its chat among every one the store holds ([`chat_of_run`]), as one file
/// holding them all would have: a run imported before its chat (a Collector's rotation
/// between them) is linked when the chat arrives, one linked to an earlier chat moves to a
/// later one that started before it. Only runs linked to none or to a chat of the trace
/// are touched. Their plans, old and new, and callers have their drift judged again.
/// Returns how many runs changed.
fn link_runs_of_trace(
    tx: &Transaction<'_>,
    trace: &str,
    linked: &mut Links,
    callers: &mut BTreeSet<String>,
) -> rusqlite::Result<usize> {
    let chats = trace_chats(tx, trace)?;
    let (lo, hi) = otel_trace_ids(trace);
    let runs: Vec<TraceRunRow> = tx
        .prepare_cached(
            "SELECT seq, at, at_nanos, plan_id, caller FROM executions
             WHERE id >= ?1 AND id < ?2 AND (plan_id IS NULL OR (plan_id >= ?1 AND plan_id < ?2))",
        )?
        .query_map([&lo, &hi], |r| {
            Ok((r.get(0)?, (r.get(1)?, r.get(2)?), r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut changed = 0;
    for (seq, at, was, caller) in runs {
        let now = chat_of_run(chats.iter().map(|(at, id)| (*at, id.as_str())), at);
        if now == was.as_deref() {
            continue;
        }
        tx.prepare_cached("UPDATE executions SET plan_id = ?2 WHERE seq = ?1")?
            .execute(params![seq, now])?;
        linked.plans.extend(was);
        linked.plans.extend(now.map(str::to_string));
        callers.insert(caller);
        changed += 1;
    }
    Ok(changed)
}

/// Store one imported execution, or say why not, like [`plan_fate`]; the plans it links
/// to are added to `linked`.
pub(super) fn execution_fate(
    insert: &mut ExecutionInserter<'_>,
    path: &Path,
    e: ExecutionRecord,
    on_conflict: OnConflict,
    callers: &mut BTreeSet<String>,
    linked: &mut Links,
    notes: &mut LinkNotes,
) -> anyhow::Result<Fate> {
    // Compared with what is stored as it would be kept, as a plan is (`plan_fate`).
    let e = insert.kept(e);
    if insert.insert(&e)? {
        let plan = insert.named_plan(e.plan_id.as_deref())?;
        linked.add(&e, plan.as_ref(), notes);
        callers.insert(e.caller);
        return Ok(Fate::Added);
    }
    let (stored, seq) = insert
        .stored(&e.id)
        .map_err(db_err(path, "reading an execution"))?;
    if same_as_read(&stored, &e, seq <= insert.fraction_kept_after, |e| {
        &mut e.at_nanos
    }) {
        return Ok(Fate::Same);
    }
    Ok(match on_conflict {
        OnConflict::Refuse => Fate::Conflict(e.id),
        OnConflict::Skip => Fate::Skipped,
        OnConflict::Replace => {
            insert
                .replace(&stored.id, &e)
                .map_err(db_err(path, "replacing an execution"))?;
            // Both the old and the new placement of the execution move drift.
            linked.plans.extend(stored.plan_id);
            let plan = insert.named_plan(e.plan_id.as_deref())?;
            linked.add(&e, plan.as_ref(), notes);
            callers.insert(stored.caller);
            callers.insert(e.caller);
            Fate::Replaced
        }
    })
}

/// The last `seq` of a table stored before every part of a second was kept (the meta mark
/// `key`); without the mark, every row may predate it.
fn fraction_kept_after(tx: &Transaction<'_>, key: &str) -> rusqlite::Result<i64> {
    Ok(tx
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
            r.get::<_, String>(0)
        })
        .optional()?
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MAX))
}

/// A sent plan added by an import, linked to the rest of its send ([`SendMark`]): a
/// baseline gives its steps, and the gap signal those give, to the models' plans of its
/// send stored without them; a model's plan stored without its baseline's steps gets them
/// from its send's baseline, when that is stored. As the send itself links them when the
/// baseline comes back late ([`HistoryStore::link_baseline`]), for the plan lines a process
/// that had to end wrote out (tester 37 T37-2: the models' plans stayed unlinked, with no gap
/// signal). A plan that could not run (no answer to judge) is linked to nothing, as on a send.
/// A send has one baseline, its earliest answered (by time, then id): another baseline line
/// of the same send (forged, or another store's) is stored and linked to nothing, and said
/// (tester 38 F4: it linked silently). Whatever order the lines come in, the send gets the
/// same baseline (tester 39 F3: the first stored was taken, so an export imported in another
/// line order judged one send against two baselines). `replaced`: the plan as stored before
/// `--on-conflict replace` put `plan` in its place.
fn link_to_its_send(
    tx: &Transaction<'_>,
    path: &Path,
    plan: &PlanRecord,
    replaced: Option<&PlanRecord>,
) -> anyhow::Result<SendLinked> {
    let nothing = Ok(SendLinked::default());
    if plan.source != PlanSource::Sent || plan.replay_of.is_some() {
        return nothing;
    }
    let Some(send) = SendMark::from_trim(plan.trim_record.as_ref()).filter(|s| s.with_baseline)
    else {
        return nothing;
    };
    let plan_is_baseline = is_baseline(plan.trim_record.as_ref());
    if !plan_is_baseline && (plan.expert_baseline.is_some() || !plan.ran()) {
        return nothing;
    }
    // Every answer of a send is back within the longest a call may take.
    let last = send
        .started
        .saturating_add(crate::core::bounds::DURATION_MS.end() / 1000);
    let ids: Vec<String> = tx
        .prepare_cached(
            "SELECT id FROM plans WHERE caller = ?1 AND at BETWEEN ?2 AND ?3
             AND replay_of IS NULL AND source = 'sent'
             AND CASE WHEN json_valid(trim_record)
                 THEN json_extract(trim_record, '$.send.id') END = ?4
             ORDER BY at, at_nanos, id",
        )?
        .query_map(params![plan.caller, send.started, last, send.id], |r| {
            r.get(0)
        })?
        .collect::<Result<_, _>>()
        .map_err(db_err(path, "reading the plans of a sent plan's send"))?;
    let (mut others, mut before_this, mut baseline_before_this) = (Vec::new(), true, false);
    for id in ids {
        if id == plan.id {
            before_this = false;
        } else if let Some(stored) = read_plan(tx, path, &id)? {
            let record = stored.detail.record;
            baseline_before_this |= before_this && is_baseline(record.trim_record.as_ref());
            others.push(record);
        }
    }
    let baselines = || {
        others
            .iter()
            .filter(|r| is_baseline(r.trim_record.as_ref()))
    };
    if !plan_is_baseline {
        let Some(baseline) = baselines()
            .next()
            .and_then(|r| crate::core::gap::planned_baseline(r, Some(r.id.clone())))
        else {
            return nothing;
        };
        link_plans(tx, path, &baseline, &[unlinked_plan(plan)])?;
        return Ok(SendLinked {
            plans: 1,
            not_its_baseline: None,
        });
    }
    if baseline_before_this {
        return Ok(SendLinked {
            plans: 0,
            not_its_baseline: Some(plan.id.clone()),
        });
    }
    // Every other baseline of the send answered after this one. The first of them was the
    // send's baseline until now, unless this plan, as stored before it was replaced, came
    // ahead of it already: said once, by the line that puts it second.
    let answered = |r: &PlanRecord| (r.at, r.at_nanos, r.id.clone());
    let displaced = baselines()
        .next()
        .filter(|b| {
            replaced.is_none_or(|old| {
                !is_baseline(old.trim_record.as_ref()) || answered(old) > answered(b)
            })
        })
        .map(|b| b.id.clone());
    // The models' plans without a baseline, and those linked to this one before it was
    // replaced (`--on-conflict replace`: linked again to what it holds now, or unlinked
    // when it no longer planned; tester 38 F3: they kept the old steps) or to a baseline of
    // the send that answered after it.
    let later: Vec<&str> = baselines().map(|r| r.id.as_str()).collect();
    let linked_here = |r: &PlanRecord| {
        r.expert_baseline
            .as_ref()
            .and_then(|b| b.plan_id.as_deref())
            .is_some_and(|id| id == plan.id || later.contains(&id))
    };
    let unlinked = others.iter().filter(|r| {
        !is_baseline(r.trim_record.as_ref())
            && (r.expert_baseline.is_none() || linked_here(r))
            && r.ran()
    });
    let plans = match crate::core::gap::planned_baseline(plan, Some(plan.id.clone())) {
        Some(baseline) => {
            let plans: Vec<UnlinkedPlan> = unlinked.map(unlinked_plan).collect();
            link_plans(tx, path, &baseline, &plans)?;
            plans.len()
        }
        None => {
            let stale: Vec<&str> = unlinked
                .filter(|r| linked_here(r))
                .map(|r| r.id.as_str())
                .collect();
            unlink_plans(tx, path, &stale)?;
            0
        }
    };
    Ok(SendLinked {
        plans,
        not_its_baseline: displaced,
    })
}

/// The models' plans of its send linked to the baseline `old`, which `--on-conflict replace` made
/// another send's, no baseline, or not its send's baseline (`second`: another answered
/// earlier): unlinked, and linked to their own send's baseline when it has one (tester 39
/// F2: they kept the steps of a plan no longer of their send). Returns how many were linked
/// again.
fn relink_left_behind(
    tx: &Transaction<'_>,
    path: &Path,
    old: &PlanRecord,
    plan: &PlanRecord,
    second: bool,
) -> anyhow::Result<usize> {
    let send_of = |r: &PlanRecord| {
        SendMark::from_trim(r.trim_record.as_ref())
            .filter(|_| is_baseline(r.trim_record.as_ref()))
            .map(|m| m.id)
    };
    let Some(old_send) = send_of(old) else {
        return Ok(0);
    };
    if !second && send_of(plan).as_ref() == Some(&old_send) && plan.caller == old.caller {
        return Ok(0);
    }
    let ids: Vec<String> = tx
        .prepare_cached(
            "SELECT id FROM plans WHERE caller = ?1 AND source = 'sent' AND replay_of IS NULL
             AND CASE WHEN json_valid(expert_baseline)
                 THEN json_extract(expert_baseline, '$.plan_id') END = ?2
             AND CASE WHEN json_valid(trim_record)
                 THEN json_extract(trim_record, '$.send.id') END = ?3",
        )?
        .query_map(params![old.caller, old.id, old_send], |r| r.get(0))?
        .collect::<Result<_, _>>()
        .map_err(db_err(
            path,
            "reading the plans linked to a replaced baseline",
        ))?;
    unlink_plans(
        tx,
        path,
        &ids.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    let mut linked = 0;
    for id in &ids {
        if let Some(stored) = read_plan(tx, path, id)? {
            linked += link_to_its_send(tx, path, &stored.detail.record, None)?.plans;
        }
    }
    Ok(linked)
}

/// A stored plan as a baseline is linked to it: its id, outcome and steps.
fn unlinked_plan(r: &PlanRecord) -> UnlinkedPlan {
    (r.id.clone(), r.outcome, r.steps.clone())
}

/// What importing a sent plan linked ([`link_to_its_send`]).
#[derive(Default)]
struct SendLinked {
    /// How many plans were given a baseline's steps.
    plans: usize,
    /// A baseline of the send that is not its baseline: the plan itself, or the one it
    /// answered ahead of.
    not_its_baseline: Option<String>,
}

/// Take the baseline's steps and the gap signal from `ids` (stored sent plans): the baseline
/// they were linked to was replaced by one that planned nothing.
fn unlink_plans(tx: &Transaction<'_>, path: &Path, ids: &[&str]) -> anyhow::Result<()> {
    let mut unlink = tx.prepare_cached(SET_BASELINE)?;
    for id in ids {
        unlink
            .execute(params![id, None::<String>, None::<String>])
            .map_err(db_err(
                path,
                "unlinking sent plans from a replaced baseline",
            ))?;
    }
    Ok(())
}

/// A sent plan's baseline and gap signal, set (or cleared) by its id: never a replay's.
const SET_BASELINE: &str = "UPDATE plans SET expert_baseline = ?2, gap_signal = ?3
     WHERE id = ?1 AND replay_of IS NULL";

/// Give `plans` (stored sent plans) `baseline`'s steps and the gap signal each plan's own
/// steps give against them ([`gap_column`], as on insert).
fn link_plans(
    tx: &Transaction<'_>,
    path: &Path,
    baseline: &Baseline,
    plans: &[UnlinkedPlan],
) -> anyhow::Result<()> {
    let doing = "linking sent plans to their baseline";
    let json = serde_json::to_string(baseline)?;
    let mut link = tx.prepare_cached(SET_BASELINE)?;
    for (id, outcome, steps) in plans {
        let gap = gap_column(*outcome, steps, baseline);
        link.execute(params![id, json, gap])
            .map_err(db_err(path, doing))?;
    }
    Ok(())
}

/// Whether a plan is stored under `id`.
fn id_stored(tx: &Transaction<'_>, id: &str) -> anyhow::Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM plans WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Whether a plan of the same model and second is stored under another id and is `plan` in
/// every field but its id.
fn stored_under_another_id(
    tx: &Transaction<'_>,
    insert: &PlanInserter<'_>,
    path: &Path,
    plan: &PlanRecord,
) -> anyhow::Result<bool> {
    let ids: Vec<String> = tx
        .prepare_cached("SELECT id FROM plans WHERE model = ?1 AND at = ?2 AND id <> ?3")?
        .query_map(params![plan.model, plan.at, plan.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in ids {
        if let Some(stored) = read_plan(tx, path, &id)? {
            let as_stored = PlanRecord { id, ..plan.clone() };
            if insert.same(&stored, &as_stored) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether a stored record is the one read again: equal, or — for a row stored before every
/// part of a second was kept (`may_predate`: at or before its table's mark) — equal but for a
/// part of a second of 0 there (that store never had it), so a file imported again into an
/// older store is still "already present", not a conflict.
fn same_as_read<T: Clone + PartialEq>(
    stored: &T,
    read: &T,
    may_predate: bool,
    nanos: impl Fn(&mut T) -> &mut u32,
) -> bool {
    if stored == read {
        return true;
    }
    if !may_predate {
        return false;
    }
    let mut old = stored.clone();
    let mut again = read.clone();
    if *nanos(&mut old) != 0 {
        return false;
    }
    *nanos(&mut again) = 0;
    old == again
}

/// Count one record's fate into `report`; a conflict's id goes to `conflicts`.
pub(super) fn tally(report: &mut ImportReport, conflicts: &mut Vec<String>, fate: Fate) {
    match fate {
        Fate::Added => report.added += 1,
        Fate::Same => report.already_present += 1,
        Fate::Skipped => report.skipped += 1,
        Fate::Replaced => report.replaced += 1,
        Fate::Conflict(id) => conflicts.push(id),
    }
}

/// Refuse an import that met conflicts: an error listing the ids (the caller's transaction
/// rolls back, so nothing is written).
pub(super) fn refuse_conflicts(
    source: &str,
    kind: &str,
    conflicts: &[String],
) -> anyhow::Result<()> {
    if conflicts.is_empty() {
        return Ok(());
    }
    let n = conflicts.len();
    let mut listed = conflicts
        .iter()
        .take(CONFLICTS_LISTED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if n > CONFLICTS_LISTED {
        listed.push_str(&format!(" and {} more", n - CONFLICTS_LISTED));
    }
    Err(bad_input(format!(
        "{source}: {n} {kind} whose id is already stored, or comes earlier in this file, with \
         different content: {listed}; nothing was imported \
         (--on-conflict skip keeps the stored ones, --on-conflict replace takes the file's)"
    )))
}

/// Bring the drift of the touched callers up to date and commit: the import becomes visible
/// whole, or not at all.
pub(super) fn finish_import(
    tx: Transaction<'_>,
    callers: &BTreeSet<String>,
    window: i64,
    path: &Path,
    mut report: ImportReport,
) -> anyhow::Result<ImportReport> {
    // In the store's words, whoever imports (the CLI, MCP `record_execution`): a full or
    // failing device is said so (tester 10 T10-14: MCP showed SQLite's "Error code 778").
    report.drift_updated = recompute_drift(&tx, callers, window)
        .map_err(|e| sqlite::store_failure(e, path, "updating drift"))?;
    tx.commit().map_err(db_err(path, "committing the import"))?;
    Ok(report)
}

/// Every stored execution that holds one of `secrets`' keys, oldest first: as stored, and as
/// it is to be kept.
fn executions_holding(
    conn: &Connection,
    secrets: &Secrets,
) -> rusqlite::Result<Vec<(ExecutionRecord, ExecutionRecord)>> {
    let mut st = conn.prepare(
        "SELECT id, at, caller, session, plan_id, tool, ok, at_nanos FROM executions
         ORDER BY at, at_nanos, seq",
    )?;
    let mut rows = st.query([])?;
    let mut held = Vec::new();
    while let Some(r) = rows.next()? {
        let stored = execution_row(r)?;
        let mut kept = stored.clone();
        secrets.execution(&mut kept);
        if kept != stored {
            held.push((stored, kept));
        }
    }
    Ok(held)
}

/// Delete the rows of `plan_counts` that count no plan and name a key: the trigger keeps a
/// row at zero when its last plan moves out of it (a plan's caller scrubbed, its source set
/// after the insert), and that row would keep the caller or model as it was. A row counting
/// plans is moved by the trigger with them.
fn drop_counts_holding(tx: &Transaction<'_>, secrets: &Secrets) -> rusqlite::Result<()> {
    let mut st = tx.prepare(
        "SELECT caller, model, failure_class, outcome, drift, source FROM plan_counts
         WHERE plans <= 0",
    )?;
    let names: Vec<[String; 6]> = st
        .query_map([], |r| {
            Ok([
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ])
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut delete = tx.prepare(
        "DELETE FROM plan_counts WHERE caller = ?1 AND model = ?2 AND failure_class = ?3
             AND outcome = ?4 AND drift = ?5 AND source = ?6 AND plans <= 0",
    )?;
    for row in names {
        if row[..3].iter().any(|t| secrets.text(t) != *t) {
            delete.execute(rusqlite::params_from_iter(&row))?;
        }
    }
    Ok(())
}

/// An execution read from `SELECT id, at, caller, session, plan_id, tool, ok, at_nanos`.
fn execution_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ExecutionRecord> {
    Ok(ExecutionRecord {
        id: r.get(0)?,
        at: r.get(1)?,
        at_nanos: r.get(7)?,
        caller: r.get(2)?,
        session: r.get(3)?,
        plan_id: r.get(4)?,
        tool: r.get(5)?,
        ok: r.get(6)?,
    })
}

/// Every plan's id, oldest first (export and scrub go through the plans in this order).
fn plan_ids_oldest_first(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare(&format!(
        "SELECT p.id FROM plans p ORDER BY {PLANS_OLDEST_FIRST}"
    ))?
    .query_map([], |r| r.get(0))?
    .collect()
}

/// Callers of the plans `ids` name: an execution linked to another caller's plan moves that
/// caller's drift too.
pub(super) fn callers_of_plans(
    conn: &Connection,
    ids: &BTreeSet<String>,
) -> anyhow::Result<BTreeSet<String>> {
    let mut st = conn.prepare_cached("SELECT caller FROM plans WHERE id = ?1")?;
    let mut out = BTreeSet::new();
    for id in ids {
        if let Some(c) = st.query_row([id], |r| r.get::<_, String>(0)).optional()? {
            out.insert(c);
        }
    }
    Ok(out)
}

pub(super) fn all_callers(conn: &Connection) -> anyhow::Result<BTreeSet<String>> {
    let mut st = conn.prepare("SELECT DISTINCT caller FROM plans")?;
    let callers = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(callers)
}

/// The value stored under `key` in `meta`, if any (read inside a write, after its lock).
pub(super) fn meta_of(conn: &Connection, key: &str) -> anyhow::Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()?)
}

pub(super) fn set_meta(conn: &Connection, key: &str, value: &str) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, value],
    )?;
    Ok(())
}

pub(super) struct PlanInserter<'t> {
    /// Sent plans linked to their send's baseline as the import added them
    /// ([`link_to_its_send`]).
    pub(super) linked: usize,
    /// Baseline plans that are not their send's baseline (another answered earlier), linked
    /// to nothing: how many, and the first [`CONFLICTS_LISTED`] ids.
    pub(super) second_baselines: (usize, Vec<String>),
    plan: rusqlite::CachedStatement<'t>,
    step: rusqlite::CachedStatement<'t>,
    shape: rusqlite::CachedStatement<'t>,
    /// Source, baseline and gap signal: set after the insert, and only when the plan has
    /// more than the defaults (a native plan without a baseline costs nothing more).
    origin: rusqlite::CachedStatement<'t>,
    tx: &'t Transaction<'t>,
    /// The configured keys, taken out of each plan before it is stored or compared.
    secrets: std::sync::Arc<Secrets>,
    /// Plans stored with a `seq` up to this may hold 0 for a part of a second their store
    /// never kept ([`PLAN_FRACTION_KEPT_AFTER_KEY`]).
    fraction_kept_after: i64,
    /// The groups replaced plans left or joined, recounted once by
    /// [`PlanInserter::recount_shapes`]: recounting a group of n plans reads them all, so
    /// recounting it per replaced plan made a scrub of n plans of one group take n² reads
    /// (tester 31 F6: 2,000 plans 2.5 s, 4,000 9.5 s, 200,000 did not end in 31 minutes).
    shapes_to_recount: BTreeSet<String>,
}

/// A plan's source, baseline and gap signal as stored (the gap signal derived here, from
/// the steps and the baseline's, as `shape` is from the intent).
pub(super) fn origin_columns(p: &PlanRecord) -> (&'static str, Option<String>, Option<String>) {
    (
        p.source.as_str(),
        p.expert_baseline
            .as_ref()
            .and_then(|b| serde_json::to_string(b).ok()),
        p.expert_baseline
            .as_ref()
            .and_then(|b| gap_column(p.outcome, &p.steps, b)),
    )
}

/// A plan's gap signal against `baseline` as stored: derived from the two plans' steps, on
/// insert ([`origin_columns`]) and when a baseline is linked later
/// ([`HistoryStore::link_baseline`]).
fn gap_column(outcome: Outcome, steps: &[Step], baseline: &Baseline) -> Option<String> {
    gap_signal(outcome, steps, &baseline.steps).and_then(|g| serde_json::to_string(&g).ok())
}

/// The columns an import supplies, derived from a record as they are stored.
pub(super) struct PlanColumns {
    intent_sha: String,
    shape: String,
    /// The words `shape` hashes, joined (as a group's row keeps them).
    words: String,
    complexity_name: &'static str,
    outcome_name: &'static str,
    drift_name: &'static str,
    trim_record: Option<String>,
    answer: Option<String>,
}

impl PlanColumns {
    /// `key` (the plan's id to insert, its seq to replace) as ?1, then ?2–?17: every stored
    /// column the record and its derived values give, in the order both statements name them.
    fn values<'a>(&'a self, key: &'a dyn ToSql, p: &'a PlanRecord) -> [&'a dyn ToSql; 17] {
        [
            key,
            &p.at,
            &p.caller,
            &p.model,
            &p.intent,
            &self.intent_sha,
            &self.shape,
            &self.complexity_name,
            &self.outcome_name,
            &p.failure_class,
            &p.finish_reason,
            &p.raw_response,
            &self.trim_record,
            &p.duration_ms,
            &p.replay_of,
            &self.drift_name,
            &self.answer,
        ]
    }

    fn of(p: &PlanRecord, pipelines: &HashSet<String>) -> PlanColumns {
        // Where drift starts: recompute_drift takes it from here.
        let drift = if p.replay_of.is_some() {
            Drift::Replay
        } else if p.outcome == Outcome::Failed {
            Drift::Failed
        } else {
            Drift::Ignored
        };
        // One reading of the intent for its shape and its words (review 45 L1).
        let (shape, words) = shape_and_words(&p.intent);
        PlanColumns {
            intent_sha: intent_sha(&p.intent),
            shape,
            words,
            complexity_name: Complexity::of(&p.steps, |t| pipelines.contains(t)).as_str(),
            outcome_name: p.outcome.as_str(),
            drift_name: drift.as_str(),
            trim_record: p.trim_record.as_ref().map(|t| t.to_string()),
            answer: p.answer.as_ref().map(|a| a.to_string()),
        }
    }
}

impl<'t> PlanInserter<'t> {
    /// Whether `stored` is `plan` read again: equal, or, for a plan stored before this
    /// version kept every part of a second, equal but for a part of a second it never kept.
    /// Whether `stored` is `plan` read again — or `plan` as written out before its send's
    /// baseline was linked to it ([`link_to_its_send`]: a line without the baseline's
    /// steps, of a send that asked one, is the plan stored with them).
    fn same(&self, stored: &StoredPlan, plan: &PlanRecord) -> bool {
        let same = |plan: &PlanRecord| {
            same_as_read(
                &stored.detail.record,
                plan,
                stored.seq <= self.fraction_kept_after,
                |p| &mut p.at_nanos,
            )
        };
        if same(plan) {
            return true;
        }
        let linked_since = plan.expert_baseline.is_none()
            && stored.detail.record.expert_baseline.is_some()
            && SendMark::from_trim(plan.trim_record.as_ref()).is_some_and(|s| s.with_baseline);
        linked_since
            && same(&PlanRecord {
                expert_baseline: stored.detail.record.expert_baseline.clone(),
                ..plan.clone()
            })
    }

    fn new(tx: &'t Transaction<'t>, secrets: &std::sync::Arc<Secrets>) -> anyhow::Result<Self> {
        Ok(PlanInserter {
            linked: 0,
            second_baselines: (0, Vec::new()),
            shapes_to_recount: BTreeSet::new(),
            fraction_kept_after: fraction_kept_after(tx, PLAN_FRACTION_KEPT_AFTER_KEY)?,
            secrets: secrets.clone(),
            plan: tx.prepare_cached(
                "INSERT INTO plans(id, at, caller, model, intent, intent_sha, shape, complexity,
                     outcome, failure_class, finish_reason, raw_response, trim_record,
                     duration_ms, replay_of, drift, answer)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
                 ON CONFLICT(id) DO NOTHING RETURNING seq",
            )?,
            step: tx.prepare_cached(
                "INSERT INTO plan_steps(plan_seq, ord, step_order, tool, args, rationale)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            shape: tx.prepare_cached(
                "INSERT INTO shapes(shape, words, intent, plans, first_at, last_at)
                 VALUES (?1, ?2, ?3, 1, ?4, ?4)
                 ON CONFLICT(shape) DO UPDATE SET
                     plans = plans + 1,
                     first_at = MIN(first_at, excluded.first_at),
                     intent = CASE WHEN excluded.last_at >= last_at THEN excluded.intent ELSE intent END,
                     last_at = MAX(last_at, excluded.last_at)",
            )?,
            origin: tx.prepare_cached(
                "UPDATE plans SET source = ?2, expert_baseline = ?3, gap_signal = ?4
                 WHERE seq = ?1",
            )?,
            tx,
        })
    }

    fn set_origin(&mut self, seq: i64, p: &PlanRecord) -> anyhow::Result<()> {
        let (source, baseline, gap) = origin_columns(p);
        self.origin.execute(params![seq, source, baseline, gap])?;
        Ok(())
    }

    /// `plan` as it is kept: every configured key taken out of its texts.
    fn kept(&self, mut plan: PlanRecord) -> PlanRecord {
        self.secrets.record(&mut plan);
        plan
    }

    /// The new plan's seq, or `None` when a plan with this id is already stored.
    fn insert(
        &mut self,
        p: &PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<Option<i64>> {
        let kept;
        let p = if self.secrets.is_active() {
            kept = self.kept(p.clone());
            &kept
        } else {
            p
        };
        let c = PlanColumns::of(p, pipelines);
        let seq: Option<i64> = self
            .plan
            .query_row(rusqlite::params_from_iter(c.values(&p.id, p)), |r| r.get(0))
            .optional()?;
        let Some(seq) = seq else {
            return Ok(None);
        };
        if p.arm.is_some() || p.compare_group.is_some() {
            self.set_compare(seq, p)?;
        }
        self.insert_steps(seq, &p.steps)?;
        if !p.source.is_native() || p.expert_baseline.is_some() {
            self.set_origin(seq, p)?;
        }
        if p.at_nanos != 0 {
            self.set_at_nanos(seq, p)?;
        }
        self.shape
            .execute(params![c.shape, c.words, p.intent, p.at])?;
        Ok(Some(seq))
    }

    /// The part of a second the plan's time was given with (see `MIGRATION_AT_NANOS`).
    fn set_at_nanos(&self, seq: i64, p: &PlanRecord) -> anyhow::Result<()> {
        self.tx
            .prepare_cached("UPDATE plans SET at_nanos = ?2 WHERE seq = ?1")?
            .execute(params![seq, p.at_nanos])?;
        Ok(())
    }

    /// The plan's A/B arm and comparison (see `MIGRATION_ARM_COLUMNS`).
    fn set_compare(&self, seq: i64, p: &PlanRecord) -> anyhow::Result<()> {
        self.tx
            .prepare_cached("UPDATE plans SET arm = ?2, compare_group = ?3 WHERE seq = ?1")?
            .execute(params![seq, p.arm.map(Arm::as_str), p.compare_group])?;
        Ok(())
    }

    fn insert_steps(&mut self, seq: i64, steps: &[Step]) -> anyhow::Result<()> {
        for (i, s) in steps.iter().enumerate() {
            let args = (!s.args.is_null()).then(|| s.args.to_string());
            self.step.execute(params![
                seq,
                i as i64 + 1,
                s.order,
                s.tool,
                args,
                s.rationale
            ])?;
        }
        Ok(())
    }

    /// Put `p` in place of `stored` (same id, same seq): every supplied column and the steps
    /// are the file's, the derived ones recomputed; drift starts over (the caller recomputes
    /// it for the old and the new caller), and both the old and the new group are recounted.
    /// Replays keep pointing at it: they link by id. The id changes only where a scrub takes
    /// a key out of it (what links to it is scrubbed the same way, [`Secrets::id`]).
    fn replace(
        &mut self,
        stored: &StoredPlan,
        p: &PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<()> {
        let p = &self.kept(p.clone());
        if p.id != stored.detail.record.id {
            self.tx.execute(
                "UPDATE plans SET id = ?2 WHERE seq = ?1",
                params![stored.seq, p.id],
            )?;
        }
        let c = PlanColumns::of(p, pipelines);
        self.tx.execute(
            "UPDATE plans SET at = ?2, caller = ?3, model = ?4, intent = ?5, intent_sha = ?6,
                 shape = ?7, complexity = ?8, outcome = ?9, failure_class = ?10,
                 finish_reason = ?11, raw_response = ?12, trim_record = ?13, duration_ms = ?14,
                 replay_of = ?15, drift = ?16, answer = ?17, executed = '[]'
             WHERE seq = ?1",
            rusqlite::params_from_iter(c.values(&stored.seq, p)),
        )?;
        self.set_compare(stored.seq, p)?;
        self.set_at_nanos(stored.seq, p)?;
        self.tx
            .execute("DELETE FROM plan_steps WHERE plan_seq = ?1", [stored.seq])?;
        self.insert_steps(stored.seq, &p.steps)?;
        self.set_origin(stored.seq, p)?;
        self.shapes_to_recount.insert(stored.detail.shape.clone());
        self.shapes_to_recount.insert(c.shape);
        Ok(())
    }

    /// Count what importing a sent plan linked.
    fn count_send_links(&mut self, linked: SendLinked) {
        self.linked += linked.plans;
        if let Some(id) = linked.not_its_baseline {
            let (n, ids) = &mut self.second_baselines;
            *n += 1;
            if ids.len() < CONFLICTS_LISTED {
                ids.push(id);
            }
        }
    }

    /// Recount every group a replaced plan left or joined; called once the replacing is
    /// done, before anything reads the groups (the transaction's end).
    fn recount_shapes(&mut self) -> anyhow::Result<()> {
        for shape in std::mem::take(&mut self.shapes_to_recount) {
            recount_shape(self.tx, &shape)?;
        }
        Ok(())
    }
}

/// Rebuild one group's summary row from its plans (gone when it has none left): the one
/// builder of groups' rows ([`shape_rows_from_plans`]) for that group.
pub(super) fn recount_shape(conn: &Connection, shape_key: &str) -> anyhow::Result<()> {
    shape_rows_from_plans(conn, Some(shape_key), |_| None)
}

/// Every execution is stored through this, as every plan through [`PlanInserter`]: both
/// keep a record as [`Secrets`] says (`Secrets::execution`, `Secrets::record`), so no
/// writer (an import, MCP `record_execution`, a traces file, a replay) stores a key.
pub(super) struct ExecutionInserter<'t> {
    st: rusqlite::CachedStatement<'t>,
    tx: &'t Transaction<'t>,
    /// The configured keys, taken out of each execution before it is stored or compared.
    secrets: std::sync::Arc<Secrets>,
    /// Executions stored with a `seq` up to this may hold 0 for a part of a second their
    /// store never kept ([`EXECUTION_FRACTION_KEPT_AFTER_KEY`]).
    fraction_kept_after: i64,
}

impl<'t> ExecutionInserter<'t> {
    fn new(tx: &'t Transaction<'t>, secrets: &std::sync::Arc<Secrets>) -> anyhow::Result<Self> {
        Ok(ExecutionInserter {
            fraction_kept_after: fraction_kept_after(tx, EXECUTION_FRACTION_KEPT_AFTER_KEY)?,
            st: tx.prepare_cached(
                "INSERT INTO executions(id, at, caller, session, plan_id, tool, ok, at_nanos)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO NOTHING",
            )?,
            tx,
            secrets: secrets.clone(),
        })
    }

    /// `e` as it is kept: every configured key taken out of its texts.
    fn kept(&self, mut e: ExecutionRecord) -> ExecutionRecord {
        self.secrets.execution(&mut e);
        e
    }

    /// False when an execution with this id is already stored.
    fn insert(&mut self, e: &ExecutionRecord) -> anyhow::Result<bool> {
        let kept;
        let e = if self.secrets.is_active() {
            kept = self.kept(e.clone());
            &kept
        } else {
            e
        };
        Ok(self.st.execute(params![
            e.id, e.at, e.caller, e.session, e.plan_id, e.tool, e.ok, e.at_nanos
        ])? > 0)
    }

    /// The plan `id` names, as drift reads it, when the store holds it.
    fn named_plan(&self, id: Option<&str>) -> anyhow::Result<Option<NamedPlanRow>> {
        let Some(id) = id else {
            return Ok(None);
        };
        Ok(self
            .tx
            .prepare_cached(&format!(
                "SELECT {NAMED_PLAN_COLUMNS} FROM plans p WHERE p.id = ?1"
            ))?
            .query_row([id], |r| named_plan_row(r, 0))
            .optional()?)
    }

    /// The stored execution with this id.
    /// The execution stored under `id`, and its `seq`.
    fn stored(&self, id: &str) -> rusqlite::Result<(ExecutionRecord, i64)> {
        self.tx
            .prepare_cached(
                "SELECT id, at, caller, session, plan_id, tool, ok, at_nanos, seq FROM executions
                 WHERE id = ?1",
            )?
            .query_row([id], |r| Ok((execution_row(r)?, r.get(8)?)))
    }

    /// Put `e` in place of the execution stored as `stored_id` (its own id, or the id a
    /// scrub takes a key out of).
    fn replace(&self, stored_id: &str, e: &ExecutionRecord) -> rusqlite::Result<usize> {
        let e = self.kept(e.clone());
        self.tx.execute(
            "UPDATE executions SET id = ?9, at = ?2, caller = ?3, session = ?4, plan_id = ?5,
                 tool = ?6, ok = ?7, at_nanos = ?8 WHERE id = ?1",
            params![
                stored_id, e.at, e.caller, e.session, e.plan_id, e.tool, e.ok, e.at_nanos, e.id
            ],
        )
    }
}

/// Recompute drift and its evidence for every plan of `callers`. Executions that name a
/// known plan belong to it as [`named_run`] says: not when dated before it (clock skew
/// aside, it ran before the plan existed) or when it is a replay — then they change nothing
/// (tester 20 F2: one dated before had made the caller's other runs stop counting); one
/// naming a plan not in the store belongs to none until that plan is imported (tester 18
/// F1: it had counted for its caller's latest plan, and for the named plan too once it
/// came); only those naming no plan ([`LOOSE`]) belong to the caller's latest plan before
/// them, within `window` seconds, unless runs of that caller naming the plan count for it.
/// Another caller's runs naming a plan count beside its caller's (tester 20 F10: they had
/// made the owner's runs stop counting). [`HistoryStore::plan_counted_for`] says it of one
/// execution: the two keep one rule.
/// Every writer recomputes drift here. Returns how many plans changed.
pub(super) fn recompute_drift(
    conn: &Connection,
    callers: &BTreeSet<String>,
    window: i64,
) -> anyhow::Result<usize> {
    let mut changed = 0;
    let mut plans_st = conn.prepare_cached(
        "SELECT p.seq, p.id, p.at, p.outcome, p.drift, p.executed, p.executed_failed,
                p.compare_group, p.arm = 'compacted' FROM plans p
         WHERE p.caller = ?1
         ORDER BY p.at, (p.arm IS NULL OR p.arm = 'compacted'), p.seq",
    )?;
    let mut steps_st = conn.prepare_cached(
        "SELECT s.plan_seq, s.tool FROM plan_steps s JOIN plans p ON p.seq = s.plan_seq
         WHERE p.caller = ?1 ORDER BY s.plan_seq, s.ord",
    )?;
    let mut linked_st = conn.prepare_cached(&format!(
        "SELECT p.seq, e.tool, e.ok, e.at, e.at_nanos, e.caller, e.seq, {NAMED_PLAN_COLUMNS}
         FROM executions e JOIN plans p ON p.id = e.plan_id
         WHERE p.caller = ?1 ORDER BY e.at, e.at_nanos, e.seq"
    ))?;
    let mut loose_st = conn.prepare_cached(&format!(
        "SELECT e.at, e.tool, e.ok, e.at_nanos, e.seq FROM executions e
         WHERE e.caller = ?1 AND {LOOSE} ORDER BY e.at, e.seq"
    ))?;
    let mut update = conn.prepare_cached(
        "UPDATE plans SET drift = ?2, executed = ?3, executed_failed = ?4 WHERE seq = ?1",
    )?;
    for caller in callers {
        struct P {
            seq: i64,
            at: i64,
            outcome: Outcome,
            drift: String,
            executed_json: String,
            failed_json: String,
            compare_group: Option<String>,
            compacted_arm: bool,
        }
        let plans: Vec<P> = plans_st
            .query_map([caller], |r| {
                let id: String = r.get(1)?;
                Ok(P {
                    seq: r.get(0)?,
                    at: plan_time(r, 2, &id)?,
                    outcome: outcome_col(r, 3, Some(&id))?,
                    drift: r.get(4)?,
                    executed_json: r.get(5)?,
                    failed_json: r.get(6)?,
                    compare_group: r.get(7)?,
                    compacted_arm: r.get::<_, Option<bool>>(8)?.unwrap_or(false),
                })
            })?
            .collect::<Result<Vec<P>, _>>()
            .map_err(row_error)?
            .into_iter()
            // No agent runs a replay: it must not take executions from the plans around it.
            .filter(|p| p.drift != Drift::Replay.as_str())
            .collect();
        let mut planned: HashMap<i64, Vec<String>> = HashMap::new();
        for row in steps_st.query_map([caller], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })? {
            let (seq, tool) = row?;
            if tool != UNKNOWN_TOOL {
                planned.entry(seq).or_default().push(tool);
            }
        }
        // Every execution of the caller is held here at once: each tool name is held once
        // however many runs repeat it (tester 7 T7-7: 300,000 runs of one 500-byte tool
        // held 150 MB of copies).
        let mut names: HashSet<Rc<str>> = HashSet::new();
        let mut name = |tool: &str| -> Rc<str> {
            if let Some(held) = names.get(tool) {
                return held.clone();
            }
            let held: Rc<str> = Rc::from(tool);
            names.insert(held.clone());
            held
        };
        // A plan with runs of its caller naming it that count ([`named_run`]) is judged on
        // them (`own`): they name it, so loose ones do not count. Another caller's count
        // beside whichever of its caller's do (`others`). Runs that do not count (dated
        // before the plan, naming a replay) change nothing.
        let mut own: HashMap<i64, Vec<Run>> = HashMap::new();
        let mut others: HashMap<i64, Vec<Run>> = HashMap::new();
        let mut rows = linked_st.query([caller])?;
        while let Some(r) = rows.next()? {
            let seq = r.get::<_, i64>(0)?;
            let at = (r.get::<_, i64>(3)?, r.get::<_, u32>(4)?);
            let plan = named_plan_row(r, 7)?;
            let runs = match named_run(plan.named(), r.get_ref(5)?.as_str()?, at) {
                NamedRun::Counts { own: true } => own.entry(seq).or_default(),
                NamedRun::Counts { own: false } => others.entry(seq).or_default(),
                NamedRun::BeforePlan | NamedRun::Replay => continue,
            };
            runs.push(Run {
                when: (at.0, at.1, r.get(6)?),
                tool: name(r.get_ref(1)?.as_str()?),
                ok: r.get(2)?,
            });
        }
        let mut loose: Vec<Run> = Vec::new();
        let mut rows = loose_st.query([caller])?;
        while let Some(r) = rows.next()? {
            loose.push(Run {
                when: (r.get(0)?, r.get(3)?, r.get(4)?),
                tool: name(r.get_ref(1)?.as_str()?),
                ok: r.get(2)?,
            });
        }
        // Each A/B comparison's compacted arm: a run after the comparison counts for it,
        // whichever arm answered last (tester 10 T10-1: the arms are stored as each answer
        // arrives, seconds apart).
        let compacted_of: HashMap<&str, usize> = plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.compacted_arm)
            .filter_map(|(i, p)| Some((p.compare_group.as_deref()?, i)))
            .collect();
        // Sweep: loose executions go to the latest plan at or before them, inside its window
        // (or to its comparison's compacted arm, when that too is at or before them).
        let mut by_time: HashMap<usize, Vec<Run>> = HashMap::new();
        let mut pi = 0usize;
        for run in loose {
            let at = run.when.0;
            while pi + 1 < plans.len() && plans[pi + 1].at <= at {
                pi += 1;
            }
            if let Some(p) = plans.get(pi)
                && p.at <= at
                && at <= p.at + window
            {
                let counted = p
                    .compare_group
                    .as_deref()
                    .and_then(|g| compacted_of.get(g).copied())
                    .filter(|&c| plans[c].at <= at)
                    .unwrap_or(pi);
                by_time.entry(counted).or_default().push(run);
            }
        }
        for (i, p) in plans.iter().enumerate() {
            let mut executed: Vec<Run> = match own.remove(&p.seq) {
                Some(v) => v,
                None => by_time.remove(&i).unwrap_or_default(),
            };
            if let Some(theirs) = others.remove(&p.seq) {
                executed.extend(theirs);
                executed.sort_by_key(|r| r.when);
            }
            let executed: Vec<(Rc<str>, bool)> =
                executed.into_iter().map(|r| (r.tool, r.ok)).collect();
            let planned_tools: Vec<&str> = planned
                .get(&p.seq)
                .map(|v| v.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let runs: Vec<Ran<'_>> = executed
                .iter()
                .map(|(tool, ok)| Ran { tool, ok: *ok })
                .collect();
            let drift = Drift::classify(p.outcome, &planned_tools, &runs);
            let executed_json =
                serde_json::to_string(&executed.iter().map(|(t, _)| &**t).collect::<Vec<&str>>())?;
            let failed_json = serde_json::to_string(
                &executed
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, ok))| !ok)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>(),
            )?;
            if drift.as_str() != p.drift
                || executed_json != p.executed_json
                || failed_json != p.failed_json
            {
                update.execute(params![p.seq, drift.as_str(), executed_json, failed_json])?;
                changed += 1;
            }
        }
    }
    Ok(changed)
}

/// One run as drift holds it: when (second, part of it, row, to order runs of several
/// sources), the tool, whether it succeeded.
struct Run {
    when: (i64, u32, i64),
    tool: Rc<str>,
    ok: bool,
}

/// What makes an execution `e` loose, counted for its caller's latest plan within the drift
/// window: it names no plan. One naming a plan is evidence for that plan alone, stored or not.
const LOOSE: &str = "e.plan_id IS NULL";

/// Callers whose drift the rules before [`MIGRATION_FAILED_EXECUTIONS`] judged wrongly: those
/// with a failed execution, or one linked to a plan dated after it; before
/// [`MIGRATION_NAMED_RUNS_NOT_LOOSE`], those with a run naming a plan not in the store, or
/// another caller's plan (it could have counted for one of theirs too); and before
/// [`MIGRATION_NAMED_RUNS_JUDGE_ALONE`], the callers of plans named by a run dated before
/// them or by another caller's run (their own runs had stopped counting).
pub(super) fn callers_to_recount(conn: &Connection) -> anyhow::Result<BTreeSet<String>> {
    let mut st = conn.prepare(
        "SELECT e.caller FROM executions e WHERE e.ok = 0
         UNION
         SELECT p.caller FROM executions e JOIN plans p ON p.id = e.plan_id
         WHERE e.ok = 0 OR e.at <= p.at - ?1 OR p.caller != e.caller
         UNION
         SELECT e.caller FROM executions e LEFT JOIN plans p ON p.id = e.plan_id
         WHERE e.plan_id IS NOT NULL AND (p.seq IS NULL OR p.caller != e.caller)",
    )?;
    let callers = st
        .query_map([EXECUTION_CLOCK_SKEW_SECS], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(callers)
}
