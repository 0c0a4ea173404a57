//! The plan history store (DESIGN §2.9): plans and executions in SQLite, imports that are
//! all-or-nothing, drift kept current as executions arrive, and the queries the `history`
//! command and the History pane run.

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, ToSql, Transaction, TransactionBehavior, params};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::core::compare::Arm;
use crate::core::error::CoreError;
use crate::core::gap::{GapReport, GapRow, GapSignal, aggregate, gap_signal};
use crate::core::history::{
    Complexity, DIVERGED_EXECUTED_WEIGHT, Drift, ExecutionRecord, ModelOutcomes, Outcome,
    PlanRecord, PlanSource, Step, UNKNOWN_TOOL, intent_sha, parse_execution_line, parse_plan_line,
    prior_weight, shape, shape_words,
};
use crate::core::past_steps::FollowedPlan;
use crate::core::rank::PastPlan;
use crate::core::traffic::{Traffic, TrafficSource};
use crate::exit::bad_input;
use crate::store::sqlite::{self, Schema};

mod trends;

pub const HISTORY_FILE: &str = "history.sqlite";

/// How long after a plan an execution by the same caller still counts as following it
/// (when the execution does not name its plan).
pub const DEFAULT_DRIFT_WINDOW_SECS: i64 = 15 * 60;

const SCHEMA: Schema = Schema {
    // "ctxh"
    application_id: 0x6374_7868,
    kind: "history store",
    migrations: &[
        MIGRATION_1,
        MIGRATION_2,
        MIGRATION_3,
        MIGRATION_ANSWER_COLUMN,
        MIGRATION_SOURCE_COLUMN,
        MIGRATION_GAP_COLUMNS,
        MIGRATION_ARM_COLUMNS,
        MIGRATION_PLAN_COUNTS,
    ],
};

/// Issue 17 item 7 (responsive on big data): plans counted by every column the History
/// pane filters on but the time and the intent shape, kept current by triggers on `plans`
/// whatever writes it (imports, replaces, drift recomputed, replays). A count or the model
/// outcomes under those filters then add up a few thousand rows instead of reading a
/// million plans. A failure class of `NULL` is kept as `''`: a key column cannot be `NULL`
/// for the upsert to find its row. Migrating a store counts its plans once (one pass over
/// the table and a sort: measured in the README, "History at scale").
const MIGRATION_PLAN_COUNTS: &str = "
CREATE TABLE plan_counts (
    caller TEXT NOT NULL,
    model TEXT NOT NULL,
    outcome TEXT NOT NULL,
    drift TEXT NOT NULL,
    failure_class TEXT NOT NULL,
    source TEXT NOT NULL,
    plans INTEGER NOT NULL,
    PRIMARY KEY (caller, model, outcome, drift, failure_class, source)
) WITHOUT ROWID;
INSERT INTO plan_counts(caller, model, outcome, drift, failure_class, source, plans)
    SELECT caller, model, outcome, drift, IFNULL(failure_class, ''), source, COUNT(*)
    FROM plans GROUP BY 1, 2, 3, 4, 5, 6;
CREATE TRIGGER plan_counts_insert AFTER INSERT ON plans BEGIN
    INSERT INTO plan_counts(caller, model, outcome, drift, failure_class, source, plans)
        VALUES (NEW.caller, NEW.model, NEW.outcome, NEW.drift, IFNULL(NEW.failure_class, ''),
                NEW.source, 1)
        ON CONFLICT DO UPDATE SET plans = plans + 1;
END;
CREATE TRIGGER plan_counts_delete AFTER DELETE ON plans BEGIN
    UPDATE plan_counts SET plans = plans - 1
        WHERE caller = OLD.caller AND model = OLD.model AND outcome = OLD.outcome
          AND drift = OLD.drift AND failure_class = IFNULL(OLD.failure_class, '')
          AND source = OLD.source;
END;
CREATE TRIGGER plan_counts_update
    AFTER UPDATE OF caller, model, outcome, drift, failure_class, source ON plans
    WHEN OLD.caller IS NOT NEW.caller OR OLD.model IS NOT NEW.model
      OR OLD.outcome IS NOT NEW.outcome OR OLD.drift IS NOT NEW.drift
      OR OLD.failure_class IS NOT NEW.failure_class OR OLD.source IS NOT NEW.source
BEGIN
    UPDATE plan_counts SET plans = plans - 1
        WHERE caller = OLD.caller AND model = OLD.model AND outcome = OLD.outcome
          AND drift = OLD.drift AND failure_class = IFNULL(OLD.failure_class, '')
          AND source = OLD.source;
    INSERT INTO plan_counts(caller, model, outcome, drift, failure_class, source, plans)
        VALUES (NEW.caller, NEW.model, NEW.outcome, NEW.drift, IFNULL(NEW.failure_class, ''),
                NEW.source, 1)
        ON CONFLICT DO UPDATE SET plans = plans + 1;
END;
";

/// Issue 18 item 6 (frontier gap signal): a plan's baseline steps (`expert_baseline`, JSON
/// as `core::history::Baseline`) and the gap signal computed from them when the plan is
/// stored (JSON as `core::gap::GapSignal`), so `history --gaps` reads them without
/// recomputing. Rows written before it have neither. The partial index keeps the gaps
/// query off the plans without one.
const MIGRATION_GAP_COLUMNS: &str = "
ALTER TABLE plans ADD COLUMN expert_baseline TEXT;
ALTER TABLE plans ADD COLUMN gap_signal TEXT;
CREATE INDEX plans_gap_shape ON plans(shape, at) WHERE gap_signal IS NOT NULL;
";

/// Issue 18 (A/B): the arm a plan was sent as (`compacted`, `full`, `no-planner`,
/// `no-prior`, `no-hint`) and the comparison it belongs to, so one `send --compare`'s plans
/// stay linked. Rows written before it, and plans outside a comparison, read as `NULL`.
const MIGRATION_ARM_COLUMNS: &str = "
ALTER TABLE plans ADD COLUMN arm TEXT;
ALTER TABLE plans ADD COLUMN compare_group TEXT;
CREATE INDEX plans_compare_group ON plans(compare_group) WHERE compare_group IS NOT NULL;
";

/// Issue 20 (real traffic in): where a plan came from (`native`, `otel`, `litellm`), so
/// `history` can say it and filter by it. Rows written before it are native.
const MIGRATION_SOURCE_COLUMN: &str = "
ALTER TABLE plans ADD COLUMN source TEXT NOT NULL DEFAULT 'native';
CREATE INDEX plans_source_at ON plans(source, at);
";

/// Issue 18 (live loop): the whole answer of a plan, as JSON (see `PlanRecord::answer`).
/// A column of its own, not part of trim_record, so old rows read as `NULL`.
const MIGRATION_ANSWER_COLUMN: &str = "
ALTER TABLE plans ADD COLUMN answer TEXT;
";

/// Filtering the History pane by outcome or drift regroups the matching plans; these cover
/// that query so it reads an index, not a million rows.
const MIGRATION_2: &str = "
CREATE INDEX plans_outcome_shape ON plans(outcome, shape, at);
CREATE INDEX plans_drift_shape ON plans(drift, shape, at);
";

/// Steps stored once: until schema 2 a plan's steps were a JSON column on `plans` and, for
/// queries by tool, a second copy of each tool in `plan_steps`. Now `plan_steps` holds
/// everything a step carries (its source `order`, tool, args as JSON, rationale), rebuilt
/// from the JSON, and the JSON column goes.
const MIGRATION_3: &str = "
CREATE TABLE plan_steps_v3 (
    plan_seq INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    step_order INTEGER NOT NULL,
    tool TEXT NOT NULL,
    args TEXT,
    rationale TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (plan_seq, ord)
) WITHOUT ROWID;
INSERT INTO plan_steps_v3(plan_seq, ord, step_order, tool, args, rationale)
    SELECT p.seq, j.key + 1, j.value ->> '$.order', j.value ->> '$.tool',
           CASE WHEN json_type(j.value, '$.args') = 'null' THEN NULL ELSE j.value -> '$.args' END,
           COALESCE(j.value ->> '$.rationale', '')
    FROM plans p, json_each(p.steps) j;
DROP TABLE plan_steps;
ALTER TABLE plan_steps_v3 RENAME TO plan_steps;
CREATE INDEX plan_steps_tool ON plan_steps(tool);
ALTER TABLE plans DROP COLUMN steps;
";

const MIGRATION_1: &str = "
CREATE TABLE plans (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    at INTEGER NOT NULL,
    caller TEXT NOT NULL,
    model TEXT NOT NULL,
    intent TEXT NOT NULL,
    intent_sha TEXT NOT NULL,
    shape TEXT NOT NULL,
    complexity TEXT NOT NULL,
    steps TEXT NOT NULL,
    outcome TEXT NOT NULL,
    failure_class TEXT,
    finish_reason TEXT,
    raw_response TEXT,
    trim_record TEXT,
    duration_ms INTEGER,
    replay_of TEXT,
    drift TEXT NOT NULL DEFAULT 'ignored',
    -- the tools executed after the plan that drift was judged on (JSON array)
    executed TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX plans_at ON plans(at);
CREATE INDEX plans_caller_at ON plans(caller, at);
CREATE INDEX plans_model_at ON plans(model, at);
CREATE INDEX plans_outcome_at ON plans(outcome, at);
CREATE INDEX plans_drift_at ON plans(drift, at);
CREATE INDEX plans_shape_at ON plans(shape, at);
CREATE INDEX plans_model_stats ON plans(model, outcome, drift, failure_class);
CREATE INDEX plans_replay_of ON plans(replay_of) WHERE replay_of IS NOT NULL;
CREATE TABLE plan_steps (
    plan_seq INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    tool TEXT NOT NULL,
    PRIMARY KEY (plan_seq, ord)
) WITHOUT ROWID;
CREATE INDEX plan_steps_tool ON plan_steps(tool);
CREATE TABLE executions (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    at INTEGER NOT NULL,
    caller TEXT NOT NULL,
    session TEXT,
    plan_id TEXT,
    tool TEXT NOT NULL,
    ok INTEGER NOT NULL
);
CREATE INDEX executions_caller_at ON executions(caller, at);
CREATE INDEX executions_plan ON executions(plan_id) WHERE plan_id IS NOT NULL;
CREATE INDEX executions_tool_at ON executions(tool, at);
-- One row per intent shape, kept current by imports: the group list opens without
-- aggregating every plan.
CREATE TABLE shapes (
    shape TEXT PRIMARY KEY,
    words TEXT NOT NULL,
    intent TEXT NOT NULL,
    plans INTEGER NOT NULL,
    first_at INTEGER NOT NULL,
    last_at INTEGER NOT NULL
);
CREATE INDEX shapes_plans ON shapes(plans DESC, last_at DESC);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

pub struct HistoryStore {
    conn: Connection,
    path: PathBuf,
    drift_window: i64,
}

/// What one import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    pub source: String,
    pub kind: String,
    pub lines: usize,
    pub added: usize,
    /// Rows already in the store with the same content: importing a file twice keeps one copy.
    pub already_present: usize,
    /// Rows whose id is stored with other content, kept as stored (`OnConflict::Skip`).
    pub skipped: usize,
    /// Rows whose id was stored with other content, replaced by the file's (`OnConflict::Replace`).
    pub replaced: usize,
    /// Plans whose drift was recomputed because of this import.
    pub drift_updated: usize,
}

impl ImportReport {
    fn new(source: &str, kind: &str) -> ImportReport {
        ImportReport {
            source: source.to_string(),
            kind: kind.to_string(),
            ..Default::default()
        }
    }
}

/// What an import does with a record whose id is already stored with other content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnConflict {
    /// Refuse the whole import, listing the ids (nothing is written).
    #[default]
    Refuse,
    /// Keep the stored record.
    Skip,
    /// Take the file's record; drift and groups are recomputed around it.
    Replace,
}

/// What became of one imported record.
enum Fate {
    Added,
    Same,
    Skipped,
    Replaced,
    /// Stored with other content, and the import refuses: the id.
    Conflict(String),
}

/// Most conflicting ids an error lists before saying how many more there are.
const CONFLICTS_LISTED: usize = 20;

/// Which plans a query looks at. Empty means all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PlanFilter {
    pub caller: Option<String>,
    pub model: Option<String>,
    pub outcome: Option<Outcome>,
    pub drift: Option<Drift>,
    /// Unix seconds: plans at or after.
    pub since: Option<i64>,
    pub shape: Option<String>,
    /// Where the plans came from: `native`, `otel`, `litellm`, `sent`.
    pub source: Option<String>,
    /// Plans whose intent contains this text (ASCII letters in any case; `%` and `_` are
    /// themselves).
    pub text: Option<String>,
}

impl PlanFilter {
    pub fn is_empty(&self) -> bool {
        *self == PlanFilter::default()
    }

    /// Whether `plan_counts` can answer for these plans: it keeps every column but the time
    /// and the shape. Spelled out field by field so a new filter field does not compile
    /// until someone decides whether the counts keep it.
    fn counted(&self) -> bool {
        let PlanFilter {
            caller: _,
            model: _,
            outcome: _,
            drift: _,
            source: _,
            since,
            shape,
            text,
        } = self;
        since.is_none() && shape.is_none() && text.is_none()
    }

    /// `WHERE …` (or nothing) over `plans` aliased `p`, and its parameters.
    fn clause(&self) -> (String, Vec<rusqlite::types::Value>) {
        use rusqlite::types::Value;
        let mut parts = Vec::new();
        let mut values = Vec::new();
        let mut text = |col: &str, v: &Option<String>| {
            if let Some(v) = v {
                parts.push(format!("p.{col} = ?{}", values.len() + 1));
                values.push(Value::Text(v.clone()));
            }
        };
        text("caller", &self.caller);
        text("model", &self.model);
        text("outcome", &self.outcome.map(|o| o.as_str().to_string()));
        text("drift", &self.drift.map(|d| d.as_str().to_string()));
        text("shape", &self.shape);
        text("source", &self.source);
        if let Some(since) = self.since {
            parts.push(format!("p.at >= ?{}", values.len() + 1));
            values.push(Value::Integer(since));
        }
        if let Some(t) = self.text.as_deref().filter(|t| !t.is_empty()) {
            parts.push(format!("p.intent LIKE ?{} ESCAPE '\\'", values.len() + 1));
            values.push(Value::Text(format!("%{}%", like_literal(t))));
        }
        if parts.is_empty() {
            (String::new(), values)
        } else {
            (format!("WHERE {}", parts.join(" AND ")), values)
        }
    }
}

/// `text` as a LIKE pattern matching itself: `%`, `_` and the escape character escaped.
fn like_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Where a count comes from: the kept `plan_counts`, or the plans themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Kept,
    Plans,
}

impl Counted {
    fn from_filter(filter: &PlanFilter) -> Counted {
        if filter.counted() {
            Counted::Kept
        } else {
            Counted::Plans
        }
    }
}

/// `LIMIT ?n OFFSET ?m` for a query whose other parameters are `values`; the page's two
/// are appended to them.
fn page_sql(values: &mut Vec<rusqlite::types::Value>, limit: u64, offset: u64) -> String {
    let n = values.len();
    values.push(rusqlite::types::Value::Integer(limit as i64));
    values.push(rusqlite::types::Value::Integer(offset as i64));
    format!("LIMIT ?{} OFFSET ?{}", n + 1, n + 2)
}

/// A plan's step tools in order, as a JSON array (for a query over `plans p`).
const PLANNED_TOOLS: &str = "(SELECT json_group_array(tool) FROM
    (SELECT tool FROM plan_steps s WHERE s.plan_seq = p.seq ORDER BY ord))";

/// Step tools a caller could run, from [`PLANNED_TOOLS`]: guard-demoted steps left out.
fn runnable_tools(path: &Path, plan: &str, json: &str) -> anyhow::Result<Vec<String>> {
    let tools: Vec<String> = stored_json(path, plan, "steps", json)?;
    Ok(tools.into_iter().filter(|t| t != UNKNOWN_TOOL).collect())
}

/// One plan in a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRow {
    pub id: String,
    pub at: i64,
    pub caller: String,
    pub model: String,
    pub intent: String,
    pub complexity: String,
    pub outcome: Outcome,
    pub drift: Drift,
    pub failure_class: Option<String>,
    pub steps: usize,
    pub replay_of: Option<String>,
    /// Where the plan came from: `native`, `otel`, `litellm`.
    pub source: String,
    /// The A/B arm it was sent as, in a comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
}

/// The columns [`plan_row`] reads, in its order (`p` is the plans table).
const PLAN_ROW_COLUMNS: &str = "p.id, p.at, p.caller, p.model, p.intent, p.complexity, \
    p.outcome, p.drift, p.failure_class, \
    (SELECT COUNT(*) FROM plan_steps s WHERE s.plan_seq = p.seq), p.replay_of, p.source, \
    p.arm";

fn plan_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PlanRow> {
    Ok(PlanRow {
        id: r.get(0)?,
        at: r.get(1)?,
        caller: r.get(2)?,
        model: r.get(3)?,
        intent: r.get(4)?,
        complexity: r.get(5)?,
        outcome: outcome_col(r, 6)?,
        drift: drift_col(r, 7)?,
        failure_class: r.get(8)?,
        steps: r.get::<_, i64>(9)? as usize,
        replay_of: r.get(10)?,
        source: r.get(11)?,
        arm: arm_col(r, 12)?,
    })
}

/// One plan in full, with what executed after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanDetail {
    #[serde(flatten)]
    pub record: PlanRecord,
    pub complexity: String,
    pub intent_sha: String,
    pub shape: String,
    pub drift: Drift,
    /// Tools executed after the plan, in order: the evidence for `drift`.
    pub executed: Vec<String>,
    /// Replays stored against this plan, newest first.
    pub replays: Vec<PlanRow>,
    /// Every plan of its comparison (`compare_group`), itself included, in the order sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<PlanRow>,
    /// The plan against its `expert_baseline` (derived when stored, like `shape`); `None`
    /// without a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_signal: Option<GapSignal>,
}

/// A group of similar intents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub shape: String,
    pub words: String,
    /// The most recent intent of the group.
    pub intent: String,
    pub plans: u64,
    pub first_at: i64,
    pub last_at: i64,
    /// Filled by [`HistoryStore::group_details`].
    pub complexity: Option<String>,
    pub top_tools: Vec<(String, u64)>,
    pub models: Vec<(String, u64)>,
}

/// Two tools planned together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepPair {
    pub a: String,
    pub b: String,
    pub plans: u64,
}

/// Drift counts and the plans behind them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftReport {
    pub window_secs: i64,
    pub counts: Vec<(Drift, u64)>,
    pub plans: Vec<DriftRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftRow {
    pub id: String,
    pub at: i64,
    pub caller: String,
    pub model: String,
    pub intent: String,
    pub drift: Drift,
    pub planned: Vec<String>,
    pub executed: Vec<String>,
    /// Where the plan came from: `native`, `otel`, `litellm`.
    pub source: String,
}

/// Row counts, for reports and for checking that a failed import changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub plans: u64,
    pub executions: u64,
    pub shapes: u64,
}

fn db_err(path: &Path, what: &str) -> impl FnOnce(rusqlite::Error) -> anyhow::Error {
    let msg = format!("{}: {what}", path.display());
    move |e| anyhow::Error::new(e).context(msg)
}

impl HistoryStore {
    /// Open (creating when missing) the store at `path`. A file that is not a history store,
    /// a damaged one, or one from a newer ctxconsole is refused and left untouched.
    pub fn open(path: &Path) -> anyhow::Result<HistoryStore> {
        Ok(Self::open_created(path)?.0)
    }

    /// As [`open`](Self::open), and whether the file was created now.
    pub fn open_created(path: &Path) -> anyhow::Result<(HistoryStore, bool)> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::fsio::create_private_dirs(parent)
                .with_context(|| format!("creating the data directory {}", parent.display()))?;
        }
        let (conn, created) = sqlite::open(path, &SCHEMA)?;
        crate::fsio::report_if_loose_file(path);
        let mut store = HistoryStore {
            conn,
            path: path.to_path_buf(),
            drift_window: DEFAULT_DRIFT_WINDOW_SECS,
        };
        if let Some(w) = store.meta("drift_window_secs")? {
            store.drift_window = w.parse().map_err(|_| {
                bad_input(format!(
                    "{}: the stored drift window '{w}' is damaged (meta drift_window_secs)",
                    path.display()
                ))
            })?;
        } else if !store.conn.is_readonly(rusqlite::MAIN_DB)? {
            store.set_meta("drift_window_secs", &DEFAULT_DRIFT_WINDOW_SECS.to_string())?;
        }
        Ok((store, created))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn drift_window(&self) -> i64 {
        self.drift_window
    }

    /// Use another drift window; every plan's drift is recomputed when it changed.
    pub fn set_drift_window(&mut self, secs: i64) -> anyhow::Result<usize> {
        if secs == self.drift_window {
            return Ok(0);
        }
        self.drift_window = secs;
        let tx = self.write("changing the drift window")?;
        set_meta(&tx, "drift_window_secs", &secs.to_string())?;
        let callers = all_callers(&tx)?;
        let n = recompute_drift(&tx, &callers, secs)?;
        tx.commit()?;
        Ok(n)
    }

    fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(db_err(&self.path, "reading meta"))
    }

    fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        set_meta(&self.conn, key, value)
    }

    /// A write transaction that takes the lock at once, so two importers queue instead of
    /// failing half-way.
    fn write(&mut self, doing: &str) -> anyhow::Result<Transaction<'_>> {
        sqlite::ensure_writable(&self.conn, &self.path, SCHEMA.kind, doing)?;
        let path = self.path.display().to_string();
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .with_context(|| format!("{path}: waiting for the write lock"))
    }

    pub fn counts(&self) -> anyhow::Result<Counts> {
        let one = |sql: &str| -> anyhow::Result<u64> {
            let n: i64 = self
                .conn
                .query_row(sql, [], |r| r.get(0))
                .map_err(db_err(&self.path, "counting rows"))?;
            Ok(n as u64)
        };
        Ok(Counts {
            plans: one("SELECT COUNT(*) FROM plans")?,
            executions: one("SELECT COUNT(*) FROM executions")?,
            shapes: one("SELECT COUNT(*) FROM shapes")?,
        })
    }

    /// The newest plan's and execution's row numbers: rows are only ever added, so these
    /// change whenever the history does (bar a drift window change). Two index look-ups,
    /// where [`counts`](Self::counts) reads every row.
    pub fn version(&self) -> anyhow::Result<(i64, i64)> {
        self.conn
            .query_row(
                "SELECT (SELECT IFNULL(MAX(seq), 0) FROM plans),
                        (SELECT IFNULL(MAX(seq), 0) FROM executions)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(db_err(&self.path, "reading the newest rows"))
    }

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
        let tx = self.write("importing plans")?;
        let mut report = ImportReport::new(source, "plans");
        let mut callers = BTreeSet::new();
        {
            let mut insert = PlanInserter::new(&tx)?;
            read_into(source, reader, &mut progress, &mut report, |line, text| {
                let plan = parse_plan_line(source, line, text)?;
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
        }
        finish_import(tx, &callers, window, &path, report)
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
        let tx = self.write("importing executions")?;
        let mut report = ImportReport::new(source, "executions");
        let mut callers = BTreeSet::new();
        let mut linked = BTreeSet::new();
        {
            let mut insert = ExecutionInserter::new(&tx)?;
            read_into(source, reader, &mut progress, &mut report, |line, text| {
                let e = parse_execution_line(source, line, text)?;
                execution_fate(
                    &mut insert,
                    &path,
                    e,
                    on_conflict,
                    &mut callers,
                    &mut linked,
                )
            })?;
        }
        callers.extend(callers_of_plans(&tx, &linked)?);
        finish_import(tx, &callers, window, &path, report)
    }

    /// Import a gateway's traffic (already read by an importer): its plans, marked with
    /// their `source`, then its executions, in one transaction with the same guarantees as
    /// [`import_plans`](Self::import_plans): all or nothing, a second import adds nothing,
    /// conflicts settled by `on_conflict`. The report counts plans and executions together.
    pub fn import_traffic(
        &mut self,
        source: &str,
        origin: TrafficSource,
        traffic: &Traffic,
        pipelines: &HashSet<String>,
        on_conflict: OnConflict,
    ) -> anyhow::Result<ImportReport> {
        let (window, path) = (self.drift_window, self.path.clone());
        let tx = self.write("importing traffic")?;
        let mut report = ImportReport::new(source, "records");
        report.lines = traffic.records;
        let mut callers = BTreeSet::new();
        let mut linked = BTreeSet::new();
        let mut conflicts = Vec::new();
        {
            let mut insert = PlanInserter::new(&tx)?;
            for plan in &traffic.plans {
                // The command names the source; the record carries it into the store.
                let plan = PlanRecord {
                    source: origin,
                    ..plan.clone()
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
                tally(&mut report, &mut conflicts, fate);
            }
            let mut insert = ExecutionInserter::new(&tx)?;
            for e in &traffic.executions {
                let fate = execution_fate(
                    &mut insert,
                    &path,
                    e.clone(),
                    on_conflict,
                    &mut callers,
                    &mut linked,
                )?;
                tally(&mut report, &mut conflicts, fate);
            }
        }
        refuse_conflicts(source, "records", &conflicts)?;
        callers.extend(callers_of_plans(&tx, &linked)?);
        finish_import(tx, &callers, window, &path, report)
    }

    /// Add records directly (the generator and live replays); one transaction.
    pub fn insert_records(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<usize> {
        self.insert_records_with(plans, executions, pipelines, None, true)
    }

    /// As [`insert_records`](Self::insert_records) without updating drift: for loading many
    /// batches, followed by one [`recompute_all_drift`](Self::recompute_all_drift).
    pub fn insert_records_bulk(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<usize> {
        self.insert_records_with(plans, executions, pipelines, None, false)
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

    fn insert_records_with(
        &mut self,
        plans: &[PlanRecord],
        executions: &[ExecutionRecord],
        pipelines: &HashSet<String>,
        meta: Option<(&str, &str)>,
        recompute: bool,
    ) -> anyhow::Result<usize> {
        let window = self.drift_window;
        let tx = self.write("storing plans")?;
        if let Some((k, v)) = meta {
            // Checked under the write lock: two first runs at once seed once.
            let done: Option<String> = tx
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .optional()?;
            if done.is_some() {
                return Ok(0);
            }
            set_meta(&tx, k, v)?;
        }
        let mut callers = BTreeSet::new();
        let mut added = 0;
        {
            let mut p = PlanInserter::new(&tx)?;
            for plan in plans {
                if p.insert(plan, pipelines)?.is_some() {
                    added += 1;
                    callers.insert(plan.caller.clone());
                }
            }
            let mut e = ExecutionInserter::new(&tx)?;
            let mut linked = BTreeSet::new();
            for ex in executions {
                if e.insert(ex)? {
                    linked.extend(ex.plan_id.clone());
                    callers.insert(ex.caller.clone());
                }
            }
            callers.extend(callers_of_plans(&tx, &linked)?);
        }
        if recompute {
            recompute_drift(&tx, &callers, window)?;
        }
        tx.commit()?;
        Ok(added)
    }

    /// Store a replay as a new plan linked to its original (`replay_of` must be set), with
    /// the next free id `ORIGINAL.rN`. The original is not touched, and no drift moves: no
    /// agent runs a replay. Returns the new id.
    pub fn insert_replay(
        &mut self,
        mut record: PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<String> {
        let Some(original) = record.replay_of.clone() else {
            anyhow::bail!("a replay record needs replay_of");
        };
        let path = self.path.clone();
        let tx = self.write("storing a replay")?;
        let known: bool = tx
            .query_row(
                "SELECT COUNT(*) FROM plans WHERE id = ?1",
                [&original],
                |r| r.get::<_, i64>(0),
            )
            .map_err(db_err(&path, "finding the replayed plan"))?
            > 0;
        if !known {
            return Err(bad_input(format!(
                "{}: no plan '{original}' to link a replay to",
                path.display()
            )));
        }
        let mut n: i64 = tx.query_row(
            "SELECT COUNT(*) FROM plans WHERE replay_of = ?1",
            [&original],
            |r| r.get(0),
        )?;
        {
            let mut inserter = PlanInserter::new(&tx)?;
            loop {
                n += 1;
                record.id = format!("{original}.r{n}");
                if inserter.insert(&record, pipelines)?.is_some() {
                    break;
                }
            }
        }
        tx.commit().map_err(db_err(&path, "storing the replay"))?;
        Ok(record.id)
    }

    /// Store a plan sent live by `ctxconsole send` (not a replay: `replay_of` must be
    /// unset) under the next free id `send-AT-N`. No execution follows it yet, so its drift
    /// is `ignored` (or `failed`) like any new plan. Returns the id.
    pub fn insert_sent(
        &mut self,
        mut record: PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<String> {
        if record.replay_of.is_some() {
            anyhow::bail!("a sent plan replays nothing");
        }
        let path = self.path.clone();
        let tx = self.write("storing a sent plan")?;
        {
            let mut inserter = PlanInserter::new(&tx)?;
            let mut n = 0u32;
            loop {
                n += 1;
                record.id = format!("send-{}-{n}", record.at);
                if inserter.insert(&record, pipelines)?.is_some() {
                    break;
                }
            }
        }
        tx.commit()
            .map_err(db_err(&path, "storing the sent plan"))?;
        Ok(record.id)
    }

    /// Failed plans (not replays) at or after `since`, oldest first.
    pub fn failed_plan_ids(&self, since: Option<i64>, limit: u64) -> anyhow::Result<Vec<String>> {
        self.conn
            .prepare_cached(
                "SELECT id FROM plans WHERE outcome = 'failed' AND at >= ?1
                 AND replay_of IS NULL ORDER BY at, seq LIMIT ?2",
            )?
            .query_map(params![since.unwrap_or(i64::MIN), limit as i64], |r| {
                r.get(0)
            })?
            .collect::<Result<_, _>>()
            .map_err(db_err(&self.path, "listing failed plans"))
    }

    /// Seed an empty, never-seeded store with the sample history, in one transaction.
    /// Returns whether it seeded.
    pub fn seed_if_new(
        &mut self,
        plans_jsonl: &str,
        executions_jsonl: &str,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<bool> {
        if self.meta("seeded")?.is_some() || self.counts()?.plans > 0 {
            return Ok(false);
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
        )?;
        Ok(true)
    }

    /// Every plan as JSON Lines, oldest first.
    pub fn export_plans(&self, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
        let mut st = self.conn.prepare("SELECT id FROM plans ORDER BY at, seq")?;
        let ids: Vec<String> = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        for id in &ids {
            if let Some(d) = self.plan_alone(id)? {
                let mut line = serde_json::to_value(&d)?;
                if let Some(obj) = line.as_object_mut() {
                    obj.insert(
                        "at".into(),
                        crate::core::time::format_timestamp(d.record.at).into(),
                    );
                    // Derived, not imported: executions come from their own export, and
                    // replays are exported as plans of their own with `replay_of` (the
                    // list is empty here; the key goes so a line reads back).
                    obj.remove("executed");
                    obj.remove("replays");
                }
                writeln!(out, "{}", serde_json::to_string(&line)?)?;
            }
        }
        Ok(ids.len())
    }

    /// Every execution as JSON Lines, oldest first.
    pub fn export_executions(&self, out: &mut dyn std::io::Write) -> anyhow::Result<usize> {
        let mut st = self.conn.prepare(
            "SELECT id, at, caller, session, plan_id, tool, ok FROM executions ORDER BY at, seq",
        )?;
        let mut rows = st.query([])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let at: i64 = r.get(1)?;
            let line = serde_json::json!({
                "id": r.get::<_, String>(0)?,
                "at": crate::core::time::format_timestamp(at),
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
    fn plan_alone(&self, id: &str) -> anyhow::Result<Option<PlanDetail>> {
        Ok(read_plan(&self.conn, &self.path, id)?.map(|p| p.detail))
    }

    /// How many plans match: from the kept counts when they cover the filter (a few
    /// thousand rows), else by counting the plans.
    pub fn count_plans(&self, filter: &PlanFilter) -> anyhow::Result<u64> {
        self.count_plans_from(filter, Counted::from_filter(filter))
    }

    fn count_plans_from(&self, filter: &PlanFilter, from: Counted) -> anyhow::Result<u64> {
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
            "SELECT {PLAN_ROW_COLUMNS} FROM plans p {clause} ORDER BY p.at DESC, p.seq DESC {page}"
        );
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(values), plan_row)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "listing plans"))?;
        Ok(rows)
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
                "SELECT {PLAN_ROW_COLUMNS} FROM plans p {clause} ORDER BY p.at, p.seq {page}"
            );
            let mut st = self.conn.prepare_cached(&sql)?;
            let mut rows = st
                .query_map(rusqlite::params_from_iter(values), plan_row)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err(&self.path, "listing plans"))?;
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
        self.conn
            .prepare_cached(&sql)?
            .query_map([group], plan_row)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "listing a comparison's plans"))
    }

    /// Replays of a plan, newest first.
    fn replays(&self, id: &str) -> anyhow::Result<Vec<PlanRow>> {
        let sql = format!(
            "SELECT {PLAN_ROW_COLUMNS} FROM plans p WHERE p.replay_of = ?1
             ORDER BY p.at DESC, p.seq DESC"
        );
        self.conn
            .prepare_cached(&sql)?
            .query_map([id], plan_row)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "listing replays"))
    }

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
                words: r.get(1)?,
                intent: r.get(2)?,
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
            let page = page_sql(&mut values, limit, offset);
            // Group first (a covering index answers the common filters), then look up only
            // the page's shapes.
            let sql = format!(
                "SELECT g.shape, s.words, s.intent, g.n, g.first_at, g.last_at
                 FROM (SELECT p.shape, COUNT(*) n, MIN(p.at) first_at, MAX(p.at) last_at
                       FROM plans p {clause} GROUP BY p.shape
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
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
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

    /// Pairs of tools that appear in the same plan, most frequent first. Counted here in
    /// one pass over the steps in plan order: SQLite's self-join would sort every pair.
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
            tools.sort_unstable();
            tools.dedup();
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
                anyhow::anyhow!("{}: a step's tool is damaged ({e})", self.path.display())
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
        let mut out: Vec<StepPair> = pairs
            .into_iter()
            .map(|((a, b), n)| {
                let (a, b) = (&names[a as usize], &names[b as usize]);
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                StepPair {
                    a: a.clone(),
                    b: b.clone(),
                    plans: n,
                }
            })
            .collect();
        out.sort_by(|x, y| {
            y.plans
                .cmp(&x.plans)
                .then_with(|| (&x.a, &x.b).cmp(&(&y.a, &y.b)))
        });
        out.truncate(limit);
        Ok(out)
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
                    p.source
             FROM plans p {clause} ORDER BY p.at DESC, p.seq DESC {page}"
        ))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(values), |r| {
                let row = DriftRow {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    caller: r.get(2)?,
                    model: r.get(3)?,
                    intent: r.get(4)?,
                    drift: drift_col(r, 5)?,
                    planned: Vec::new(),
                    executed: Vec::new(),
                    source: r.get(8)?,
                };
                Ok((row, r.get::<_, String>(6)?, r.get::<_, String>(7)?))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "listing drift"))?;
        let plans = rows
            .into_iter()
            .map(|(mut row, executed, planned)| {
                row.planned = stored_json(&self.path, &row.id, "steps", &planned)?;
                row.executed = stored_json(&self.path, &row.id, "executed", &executed)?;
                Ok(row)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(DriftReport {
            window_secs: self.drift_window,
            counts,
            plans,
        })
    }

    /// Outcome and drift counts and failure causes per model, most plans first.
    pub fn model_outcomes(&self, filter: &PlanFilter) -> anyhow::Result<Vec<ModelOutcomes>> {
        self.model_outcomes_from(filter, Counted::from_filter(filter))
    }

    fn model_outcomes_from(
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
        let mut rows = st
            .query(rusqlite::params_from_iter(values))
            .map_err(db_err(&self.path, "counting outcomes"))?;
        let mut by_model: HashMap<String, (ModelOutcomes, HashMap<String, u64>)> = HashMap::new();
        while let Some(r) = rows.next()? {
            let model: String = r.get(0)?;
            let outcome = outcome_col(r, 1)?;
            let drift = drift_col(r, 2)?;
            let cause: Option<String> = r.get(3)?;
            let n = r.get::<_, i64>(4)? as u64;
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
    pub fn gaps(&self, filter: &PlanFilter) -> anyhow::Result<GapReport> {
        let (clause, values) = filter.clause();
        let clause = if clause.is_empty() {
            "WHERE p.gap_signal IS NOT NULL".to_string()
        } else {
            format!("{clause} AND p.gap_signal IS NOT NULL")
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
                    r.get::<_, String>(2)?,
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
                .query_map([], |r| r.get(0))?
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
    /// plans earlier than a time (for evaluation); `limit` keeps the most recent.
    pub fn past_plans(&self, before: Option<i64>, limit: usize) -> anyhow::Result<Vec<PastPlan>> {
        // A plan ctxconsole sent that no agent has run yet is no evidence either way (see
        // `PlanSource::Sent`); once executions are recorded against it, it counts.
        // `+p.outcome` keeps SQLite off the outcome index: walking `at` backwards and
        // stopping at `limit` reads 5,000 rows; the outcome index would sort 800,000 of a
        // million-plan store (0.89 s → 0.13 s for `preview` on one).
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT p.intent, p.outcome, p.drift, p.executed, {PLANNED_TOOLS}, p.id
             FROM plans p
             WHERE +p.outcome <> 'failed' AND p.drift <> 'replay' AND p.at < ?1
               AND NOT (p.source = 'sent' AND p.drift = 'ignored')
             ORDER BY p.at DESC, p.seq DESC LIMIT ?2"
        ))?;
        let mut out = Vec::new();
        let rows = st
            .query_map(params![before.unwrap_or(i64::MAX), limit as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    outcome_col(r, 1)?,
                    drift_col(r, 2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "reading past plans"))?;
        for (intent, outcome, drift, executed, planned, id) in rows {
            let planned = runnable_tools(&self.path, &id, &planned)?;
            let weight = prior_weight(outcome, drift);
            if drift == Drift::Diverged {
                let executed: Vec<String> = stored_json(&self.path, &id, "executed", &executed)?;
                out.push(PastPlan {
                    intent: intent.clone(),
                    tools: executed,
                    outcome: DIVERGED_EXECUTED_WEIGHT,
                });
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
             ORDER BY p.at DESC, p.seq DESC LIMIT ?1"
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
             ORDER BY p.at, p.seq"
        ))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err(&self.path, "reading followed plans"))?;
        rows.into_iter()
            .map(|(at, intent, tools, id)| {
                Ok((at, intent, runnable_tools(&self.path, &id, &tools)?))
            })
            .collect()
    }
}

/// A plan as stored, and its row.
struct StoredPlan {
    seq: i64,
    detail: PlanDetail,
}

/// One plan (without its replays), read from `conn` (the store or an import's
/// transaction). A stored column that no longer parses is an error naming the file and the
/// plan, never read as empty.
fn read_plan(conn: &Connection, path: &Path, id: &str) -> anyhow::Result<Option<StoredPlan>> {
    struct Row {
        seq: i64,
        record: PlanRecord,
        trim: Option<String>,
        answer: Option<String>,
        complexity: String,
        intent_sha: String,
        shape: String,
        drift: String,
        executed: String,
        source: String,
        baseline: Option<String>,
        gap: Option<String>,
    }
    let row = conn
        .prepare_cached(
            "SELECT seq, id, at, caller, model, intent, outcome, failure_class,
                    finish_reason, raw_response, trim_record, duration_ms, replay_of,
                    complexity, intent_sha, shape, drift, executed, answer,
                    source, expert_baseline, gap_signal
             FROM plans WHERE id = ?1",
        )
        .and_then(|mut st| {
            st.query_row([id], |r| {
                Ok(Row {
                    seq: r.get(0)?,
                    record: PlanRecord {
                        id: r.get(1)?,
                        at: r.get(2)?,
                        caller: r.get(3)?,
                        model: r.get(4)?,
                        intent: r.get(5)?,
                        steps: Vec::new(),
                        outcome: outcome_col(r, 6)?,
                        failure_class: r.get(7)?,
                        finish_reason: r.get(8)?,
                        raw_response: r.get(9)?,
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
                    drift: r.get(16)?,
                    executed: r.get(17)?,
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
            path.display(),
            row.source
        )
    })?;
    row.record.expert_baseline = row
        .baseline
        .map(|b| stored_json(path, id, "expert_baseline", &b))
        .transpose()?;
    let gap_signal = row
        .gap
        .map(|g| stored_json(path, id, "gap_signal", &g))
        .transpose()?;
    Ok(Some(StoredPlan {
        seq: row.seq,
        detail: PlanDetail {
            record: row.record,
            complexity: row.complexity,
            intent_sha: row.intent_sha,
            shape: row.shape,
            drift: Drift::parse(&row.drift).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: plan {id}: the stored drift '{}' is not a drift class",
                    path.display(),
                    row.drift
                )
            })?,
            executed: stored_json(path, id, "executed", &row.executed)?,
            replays: Vec::new(),
            arms: Vec::new(),
            gap_signal,
        },
    }))
}

/// A plan's A/B arm and comparison (both `None` outside one).
fn read_compare(
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
                    path.display()
                )
            })
        })
        .transpose()?;
    Ok((arm, group))
}

/// A plan's steps, in order.
fn read_steps(conn: &Connection, path: &Path, seq: i64, id: &str) -> anyhow::Result<Vec<Step>> {
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
fn stored_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    plan: &str,
    column: &str,
    text: &str,
) -> anyhow::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        bad_input(format!(
            "{}: plan {plan}: the stored {column} is damaged ({e}); the store was left as it is",
            path.display()
        ))
    })
}

/// Count each line into `report` as `insert` stores it. Every line is read even after a
/// conflict, so the error lists all of them; then the import is refused (the caller's
/// transaction rolls back: nothing is written).
fn read_into(
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

/// Store one imported plan, or say why not: already present, a conflict settled by
/// `on_conflict`. Callers whose drift moves are added to `callers`.
fn plan_fate(
    tx: &Transaction<'_>,
    insert: &mut PlanInserter<'_>,
    path: &Path,
    plan: PlanRecord,
    pipelines: &HashSet<String>,
    on_conflict: OnConflict,
    callers: &mut BTreeSet<String>,
) -> anyhow::Result<Fate> {
    if insert.insert(&plan, pipelines)?.is_some() {
        callers.insert(plan.caller);
        return Ok(Fate::Added);
    }
    let Some(stored) = read_plan(tx, path, &plan.id)? else {
        anyhow::bail!(
            "{}: plan {} vanished during the import",
            path.display(),
            plan.id
        );
    };
    if stored.detail.record == plan {
        return Ok(Fate::Same);
    }
    Ok(match on_conflict {
        OnConflict::Refuse => Fate::Conflict(plan.id),
        OnConflict::Skip => Fate::Skipped,
        OnConflict::Replace => {
            insert.replace(&stored, &plan, pipelines)?;
            callers.insert(stored.detail.record.caller);
            callers.insert(plan.caller);
            Fate::Replaced
        }
    })
}

/// Store one imported execution, or say why not, like [`plan_fate`]; the plans it links
/// to are added to `linked`.
fn execution_fate(
    insert: &mut ExecutionInserter<'_>,
    path: &Path,
    e: ExecutionRecord,
    on_conflict: OnConflict,
    callers: &mut BTreeSet<String>,
    linked: &mut BTreeSet<String>,
) -> anyhow::Result<Fate> {
    if insert.insert(&e)? {
        linked.extend(e.plan_id);
        callers.insert(e.caller);
        return Ok(Fate::Added);
    }
    let stored = insert
        .stored(&e.id)
        .map_err(db_err(path, "reading an execution"))?;
    if stored == e {
        return Ok(Fate::Same);
    }
    Ok(match on_conflict {
        OnConflict::Refuse => Fate::Conflict(e.id),
        OnConflict::Skip => Fate::Skipped,
        OnConflict::Replace => {
            insert
                .replace(&e)
                .map_err(db_err(path, "replacing an execution"))?;
            // Both the old and the new placement of the execution move drift.
            linked.extend(stored.plan_id);
            linked.extend(e.plan_id);
            callers.insert(stored.caller);
            callers.insert(e.caller);
            Fate::Replaced
        }
    })
}

/// Count one record's fate into `report`; a conflict's id goes to `conflicts`.
fn tally(report: &mut ImportReport, conflicts: &mut Vec<String>, fate: Fate) {
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
fn refuse_conflicts(source: &str, kind: &str, conflicts: &[String]) -> anyhow::Result<()> {
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
fn finish_import(
    tx: Transaction<'_>,
    callers: &BTreeSet<String>,
    window: i64,
    path: &Path,
    mut report: ImportReport,
) -> anyhow::Result<ImportReport> {
    report.drift_updated = recompute_drift(&tx, callers, window)?;
    tx.commit()
        .with_context(|| format!("{}: committing the import", path.display()))?;
    Ok(report)
}

/// Callers of the plans `ids` name: an execution linked to another caller's plan moves that
/// caller's drift too.
fn callers_of_plans(conn: &Connection, ids: &BTreeSet<String>) -> anyhow::Result<BTreeSet<String>> {
    let mut st = conn.prepare_cached("SELECT caller FROM plans WHERE id = ?1")?;
    let mut out = BTreeSet::new();
    for id in ids {
        if let Some(c) = st.query_row([id], |r| r.get::<_, String>(0)).optional()? {
            out.insert(c);
        }
    }
    Ok(out)
}

fn all_callers(conn: &Connection) -> anyhow::Result<BTreeSet<String>> {
    let mut st = conn.prepare("SELECT DISTINCT caller FROM plans")?;
    let callers = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(callers)
}

fn set_meta(conn: &Connection, key: &str, value: &str) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, value],
    )?;
    Ok(())
}

// Values this store wrote itself; anything else means the row was edited by hand, and is
// shown as the most cautious reading rather than refused.
/// A stored outcome; a value that is none (a damaged or hand-edited row) is an error, never
/// read as the most cautious one.
fn outcome_col(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Outcome> {
    enum_col(r, i, "an outcome", Outcome::parse)
}

/// A stored drift class, as [`outcome_col`].
fn arm_col(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<Arm>> {
    match r.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(_) => enum_col(r, i, "an A/B arm", Arm::parse).map(Some),
    }
}

fn drift_col(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Drift> {
    enum_col(r, i, "a drift class", Drift::parse)
}

fn enum_col<T>(
    r: &rusqlite::Row<'_>,
    i: usize,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("'{text}' stored in column {i} is not {what}").into(),
        )
    })
}

/// Read JSON Lines: blank lines skipped, invalid UTF-8 named by line, `f` called with the
/// 1-based line number and its text.
fn for_each_line(
    source: &str,
    mut reader: impl BufRead,
    progress: &mut impl FnMut(usize),
    mut f: impl FnMut(usize, &str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| bad_input(format!("{source}: cannot read: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let text = std::str::from_utf8(&buf).map_err(|e| {
            anyhow::Error::new(CoreError::Content {
                origin: format!("{source}: line {line}"),
                message: format!("not UTF-8 (byte {})", e.valid_up_to() + 1),
            })
        })?;
        if text.trim().is_empty() {
            continue;
        }
        f(line, text.trim_end_matches(['\n', '\r']))?;
        if line.is_multiple_of(10_000) {
            progress(line);
        }
    }
}

struct PlanInserter<'t> {
    plan: rusqlite::CachedStatement<'t>,
    step: rusqlite::CachedStatement<'t>,
    shape: rusqlite::CachedStatement<'t>,
    /// Source, baseline and gap signal: set after the insert, and only when the plan has
    /// more than the defaults (a native plan without a baseline costs nothing more).
    origin: rusqlite::CachedStatement<'t>,
    tx: &'t Transaction<'t>,
}

/// A plan's source, baseline and gap signal as stored (the gap signal derived here, from
/// the steps and the baseline's, as `shape` is from the intent).
fn origin_columns(p: &PlanRecord) -> (&'static str, Option<String>, Option<String>) {
    let gap = p
        .expert_baseline
        .as_ref()
        .map(|b| gap_signal(p.outcome, &p.steps, &b.steps));
    (
        p.source.as_str(),
        p.expert_baseline
            .as_ref()
            .and_then(|b| serde_json::to_string(b).ok()),
        gap.and_then(|g| serde_json::to_string(&g).ok()),
    )
}

/// The columns an import supplies, derived from a record as they are stored.
struct PlanColumns {
    intent_sha: String,
    shape: String,
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
        PlanColumns {
            intent_sha: intent_sha(&p.intent),
            shape: shape(&p.intent),
            complexity_name: Complexity::of(&p.steps, |t| pipelines.contains(t)).as_str(),
            outcome_name: p.outcome.as_str(),
            drift_name: drift.as_str(),
            trim_record: p.trim_record.as_ref().map(|t| t.to_string()),
            answer: p.answer.as_ref().map(|a| a.to_string()),
        }
    }
}

impl<'t> PlanInserter<'t> {
    fn new(tx: &'t Transaction<'t>) -> anyhow::Result<Self> {
        Ok(PlanInserter {
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

    /// The new plan's seq, or `None` when a plan with this id is already stored.
    fn insert(
        &mut self,
        p: &PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<Option<i64>> {
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
        self.shape.execute(params![
            c.shape,
            shape_words(&p.intent).join(" "),
            p.intent,
            p.at
        ])?;
        Ok(Some(seq))
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
    /// Replays keep pointing at it: they link by id.
    fn replace(
        &mut self,
        stored: &StoredPlan,
        p: &PlanRecord,
        pipelines: &HashSet<String>,
    ) -> anyhow::Result<()> {
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
        self.tx
            .execute("DELETE FROM plan_steps WHERE plan_seq = ?1", [stored.seq])?;
        self.insert_steps(stored.seq, &p.steps)?;
        self.set_origin(stored.seq, p)?;
        recount_shape(self.tx, &stored.detail.shape)?;
        if c.shape != stored.detail.shape {
            recount_shape(self.tx, &c.shape)?;
        }
        Ok(())
    }
}

/// Rebuild one group's summary row from its plans (gone when it has none left).
fn recount_shape(conn: &Connection, shape_key: &str) -> anyhow::Result<()> {
    let (n, first_at, last_at): (i64, Option<i64>, Option<i64>) = conn.query_row(
        "SELECT COUNT(*), MIN(at), MAX(at) FROM plans WHERE shape = ?1",
        [shape_key],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (Some(first_at), Some(last_at)) = (first_at, last_at) else {
        conn.execute("DELETE FROM shapes WHERE shape = ?1", [shape_key])?;
        return Ok(());
    };
    // The latest plan names the group, later insertions winning ties, as on insert.
    let intent: String = conn.query_row(
        "SELECT intent FROM plans WHERE shape = ?1 ORDER BY at DESC, seq DESC LIMIT 1",
        [shape_key],
        |r| r.get(0),
    )?;
    conn.execute(
        "INSERT INTO shapes(shape, words, intent, plans, first_at, last_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(shape) DO UPDATE SET words = excluded.words, intent = excluded.intent,
             plans = excluded.plans, first_at = excluded.first_at, last_at = excluded.last_at",
        params![
            shape_key,
            shape_words(&intent).join(" "),
            intent,
            n,
            first_at,
            last_at
        ],
    )?;
    Ok(())
}

struct ExecutionInserter<'t> {
    st: rusqlite::CachedStatement<'t>,
    tx: &'t Transaction<'t>,
}

impl<'t> ExecutionInserter<'t> {
    fn new(tx: &'t Transaction<'t>) -> anyhow::Result<Self> {
        Ok(ExecutionInserter {
            st: tx.prepare_cached(
                "INSERT INTO executions(id, at, caller, session, plan_id, tool, ok)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(id) DO NOTHING",
            )?,
            tx,
        })
    }

    /// False when an execution with this id is already stored.
    fn insert(&mut self, e: &ExecutionRecord) -> anyhow::Result<bool> {
        Ok(self.st.execute(params![
            e.id, e.at, e.caller, e.session, e.plan_id, e.tool, e.ok
        ])? > 0)
    }

    /// The stored execution with this id.
    fn stored(&self, id: &str) -> rusqlite::Result<ExecutionRecord> {
        self.tx
            .prepare_cached(
                "SELECT id, at, caller, session, plan_id, tool, ok FROM executions WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok(ExecutionRecord {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    caller: r.get(2)?,
                    session: r.get(3)?,
                    plan_id: r.get(4)?,
                    tool: r.get(5)?,
                    ok: r.get(6)?,
                })
            })
    }

    fn replace(&self, e: &ExecutionRecord) -> rusqlite::Result<usize> {
        self.tx.execute(
            "UPDATE executions SET at = ?2, caller = ?3, session = ?4, plan_id = ?5, tool = ?6,
                 ok = ?7 WHERE id = ?1",
            params![e.id, e.at, e.caller, e.session, e.plan_id, e.tool, e.ok],
        )
    }
}

/// Recompute drift and its evidence for every plan of `callers`. Executions that name a
/// known plan belong to it; the rest belong to the caller's latest plan before them, within
/// `window` seconds. Returns how many plans changed.
fn recompute_drift(
    conn: &Connection,
    callers: &BTreeSet<String>,
    window: i64,
) -> anyhow::Result<usize> {
    let mut changed = 0;
    let mut plans_st = conn.prepare_cached(
        "SELECT p.seq, p.id, p.at, p.outcome, p.drift, p.executed FROM plans p
         WHERE p.caller = ?1 ORDER BY p.at, p.seq",
    )?;
    let mut steps_st = conn.prepare_cached(
        "SELECT s.plan_seq, s.tool FROM plan_steps s JOIN plans p ON p.seq = s.plan_seq
         WHERE p.caller = ?1 ORDER BY s.plan_seq, s.ord",
    )?;
    let mut linked_st = conn.prepare_cached(
        "SELECT p.seq, e.tool FROM executions e JOIN plans p ON p.id = e.plan_id
         WHERE p.caller = ?1 ORDER BY e.at, e.seq",
    )?;
    let mut loose_st = conn.prepare_cached(
        "SELECT e.at, e.tool FROM executions e LEFT JOIN plans p ON p.id = e.plan_id
         WHERE e.caller = ?1 AND p.seq IS NULL ORDER BY e.at, e.seq",
    )?;
    let mut update =
        conn.prepare_cached("UPDATE plans SET drift = ?2, executed = ?3 WHERE seq = ?1")?;
    for caller in callers {
        struct P {
            seq: i64,
            at: i64,
            outcome: Outcome,
            drift: String,
            executed_json: String,
        }
        let plans: Vec<P> = plans_st
            .query_map([caller], |r| {
                Ok(P {
                    seq: r.get(0)?,
                    at: r.get(2)?,
                    outcome: outcome_col(r, 3)?,
                    drift: r.get(4)?,
                    executed_json: r.get(5)?,
                })
            })?
            .collect::<Result<Vec<P>, _>>()?
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
        let mut linked: HashMap<i64, Vec<String>> = HashMap::new();
        for row in linked_st.query_map([caller], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })? {
            let (seq, tool) = row?;
            linked.entry(seq).or_default().push(tool);
        }
        let loose: Vec<(i64, String)> = loose_st
            .query_map([caller], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        // Sweep: loose executions go to the latest plan at or before them, inside its window.
        let mut by_time: HashMap<usize, Vec<String>> = HashMap::new();
        let mut pi = 0usize;
        for (at, tool) in &loose {
            while pi + 1 < plans.len() && plans[pi + 1].at <= *at {
                pi += 1;
            }
            if let Some(p) = plans.get(pi)
                && p.at <= *at
                && *at <= p.at + window
            {
                by_time.entry(pi).or_default().push(tool.clone());
            }
        }
        for (i, p) in plans.iter().enumerate() {
            let executed: Vec<String> = match linked.remove(&p.seq) {
                Some(v) => v,
                None => by_time.remove(&i).unwrap_or_default(),
            };
            let planned_tools: Vec<&str> = planned
                .get(&p.seq)
                .map(|v| v.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let executed_refs: Vec<&str> = executed.iter().map(String::as_str).collect();
            let drift = Drift::classify(p.outcome, &planned_tools, &executed_refs);
            let executed_json = serde_json::to_string(&executed)?;
            if drift.as_str() != p.drift || executed_json != p.executed_json {
                update.execute(params![p.seq, drift.as_str(), executed_json])?;
                changed += 1;
            }
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{SAMPLE_EXECUTIONS, SAMPLE_PLANS};

    fn pipelines() -> HashSet<String> {
        ["builtin.page-digest".to_string()].into_iter().collect()
    }

    fn seeded() -> (tempfile::TempDir, HistoryStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut s = HistoryStore::open(&dir.path().join(HISTORY_FILE)).unwrap();
        assert!(
            s.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &pipelines())
                .unwrap()
        );
        assert!(
            !s.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &pipelines())
                .unwrap()
        );
        (dir, s)
    }

    #[test]
    fn the_sample_shows_every_drift_class_and_failure_class() {
        let (_d, s) = seeded();
        let c = s.counts().unwrap();
        assert!(c.plans >= 300 && c.executions >= 300, "{c:?}");
        let drift = s.drift(&PlanFilter::default(), 10).unwrap();
        for (d, n) in &drift.counts {
            assert!(*n >= 2, "{d}: {n}");
        }
        assert_eq!(drift.plans.len(), 10);
        let models = s.model_outcomes(&PlanFilter::default()).unwrap();
        assert!(models.len() >= 6);
        let causes: HashSet<String> = models
            .iter()
            .flat_map(|m| m.failure_causes.iter().map(|(c, _)| c.clone()))
            .collect();
        assert_eq!(causes.len(), 8, "{causes:?}");
        let groups = s.groups(&PlanFilter::default(), 0, 5).unwrap();
        assert!(groups[0].plans >= groups[4].plans && groups[0].plans > 1);
    }

    #[test]
    fn drift_follows_plan_ids_then_the_callers_window() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = HistoryStore::open(&dir.path().join(HISTORY_FILE)).unwrap();
        let plans = "\
{\"id\":\"a\",\"at\":1000,\"caller\":\"c\",\"model\":\"m\",\"intent\":\"x\",\"steps\":[{\"order\":1,\"tool\":\"t1\"},{\"order\":2,\"tool\":\"t2\"}]}
{\"id\":\"b\",\"at\":5000,\"caller\":\"c\",\"model\":\"m\",\"intent\":\"y\",\"steps\":[{\"order\":1,\"tool\":\"t1\"}]}
{\"id\":\"z\",\"at\":5000,\"caller\":\"other\",\"model\":\"m\",\"intent\":\"y\",\"steps\":[{\"order\":1,\"tool\":\"t9\"}]}
";
        s.import_plans(
            "p",
            plans.as_bytes(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        let execs = "\
{\"at\":1010,\"caller\":\"c\",\"tool\":\"t1\"}
{\"at\":1020,\"caller\":\"c\",\"tool\":\"t2\"}
{\"at\":5010,\"caller\":\"c\",\"tool\":\"t3\"}
{\"at\":9999,\"caller\":\"c\",\"tool\":\"t1\"}
{\"at\":1,\"caller\":\"bot\",\"tool\":\"t9\",\"plan_id\":\"z\"}
";
        let r = s
            .import_executions("e", execs.as_bytes(), OnConflict::Refuse, |_| {})
            .unwrap();
        assert_eq!(r.added, 5);
        let d = |id: &str| s.plan(id).unwrap().unwrap();
        assert_eq!(d("a").drift, Drift::Followed);
        assert_eq!(d("a").executed, vec!["t1", "t2"]);
        // t3 ran inside b's window; t1 at 9999 is outside it.
        assert_eq!(d("b").drift, Drift::Diverged);
        assert_eq!(
            d("z").drift,
            Drift::Followed,
            "linked by plan id across callers"
        );
        // A shorter window: b's evidence falls out.
        s.set_drift_window(5).unwrap();
        assert_eq!(s.plan("b").unwrap().unwrap().drift, Drift::Ignored);
    }

    #[test]
    fn a_bad_line_keeps_nothing_and_a_second_import_adds_nothing() {
        let (_d, mut s) = seeded();
        let before = s.counts().unwrap();
        let mut good = Vec::new();
        s.export_plans(&mut good).unwrap();
        let text = String::from_utf8(good).unwrap();
        let mut lines: Vec<&str> = text.lines().take(5).collect();
        let fresh = text.lines().next().unwrap().replace("pl-0001", "new-1");
        lines.push(&fresh);
        lines.push("{\"at\": \"2026-10-01T00:00:00Z\", \"caller\": \"c\"");
        let bad = lines.join("\n");
        let err = s
            .import_plans(
                "bad.jsonl",
                bad.as_bytes(),
                &pipelines(),
                OnConflict::Refuse,
                |_| {},
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("bad.jsonl: line 7"), "{err:#}");
        assert_eq!(s.counts().unwrap(), before);
        let again = s
            .import_plans(
                "good",
                text.as_bytes(),
                &pipelines(),
                OnConflict::Refuse,
                |_| {},
            )
            .unwrap();
        assert_eq!(again.added, 0);
        assert_eq!(again.already_present as u64, before.plans);
        assert_eq!(s.counts().unwrap(), before);
    }

    #[test]
    fn export_then_import_reproduces_the_store() {
        let (_d, s) = seeded();
        let (mut plans, mut execs) = (Vec::new(), Vec::new());
        s.export_plans(&mut plans).unwrap();
        s.export_executions(&mut execs).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut t = HistoryStore::open(&dir.path().join("copy.sqlite")).unwrap();
        t.import_plans(
            "p",
            plans.as_slice(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        t.import_executions("e", execs.as_slice(), OnConflict::Refuse, |_| {})
            .unwrap();
        assert_eq!(t.counts().unwrap(), s.counts().unwrap());
        assert_eq!(
            t.drift(&PlanFilter::default(), 0).unwrap().counts,
            s.drift(&PlanFilter::default(), 0).unwrap().counts
        );
        let first = s.plans(&PlanFilter::default(), 0, 1).unwrap();
        assert_eq!(t.plan(&first[0].id).unwrap(), s.plan(&first[0].id).unwrap());
    }

    #[test]
    fn random_bytes_are_refused_and_left_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk.sqlite");
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let junk: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(&path, &junk).unwrap();
        let err = HistoryStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("not a ctxconsole history store"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), junk);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn filters_pages_and_the_prior() {
        let (_d, s) = seeded();
        let failed = PlanFilter {
            outcome: Some(Outcome::Failed),
            ..Default::default()
        };
        let n = s.count_plans(&failed).unwrap();
        let page = s.plans(&failed, 0, 7).unwrap();
        assert!(n > 7 && page.len() == 7);
        assert!(page.iter().all(|p| p.outcome == Outcome::Failed));
        assert!(page.windows(2).all(|w| w[0].at >= w[1].at));
        let next = s.plans(&failed, 7, 7).unwrap();
        assert!(next[0].at <= page[6].at && next[0].id != page[6].id);
        let mut g = s.groups(&failed, 0, 1).unwrap().remove(0);
        s.group_details(&mut g, &PlanFilter::default()).unwrap();
        assert!(g.complexity.is_some() && !g.models.is_empty());
        let (callers, models) = s.callers_and_models().unwrap();
        assert_eq!(callers.len(), 6);
        assert!(callers.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(models.len(), 9);
        let prior = s.past_plans(None, 500).unwrap();
        assert!(prior.iter().any(|p| p.outcome < 0.0) && prior.iter().any(|p| p.outcome == 1.0));
        let pairs = s.step_pairs(&PlanFilter::default(), 5).unwrap();
        assert!(!pairs.is_empty() && pairs.iter().all(|p| p.a < p.b));
        let unused = s
            .unused(&["memory.store".into(), "never.used".into()], None)
            .unwrap();
        assert_eq!(unused, vec!["never.used".to_string()]);
    }

    #[test]
    fn steps_are_stored_once_with_everything_a_step_carries() {
        let (_d, s) = seeded();
        let columns: Vec<String> = s
            .conn
            .prepare("SELECT name FROM pragma_table_info('plans')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!columns.iter().any(|c| c == "steps"), "{columns:?}");
        let plans = "{\"id\":\"a\",\"at\":1000,\"caller\":\"c\",\"model\":\"m\",\"intent\":\"x\",\"steps\":[{\"order\":20,\"tool\":\"unknown\",\"rationale\":\"gap: no such pack\",\"args\":{\"q\":[1,2.5,\"z\"]}},{\"order\":10,\"tool\":\"t1\"}]}\n";
        let mut s = s;
        s.import_plans(
            "p",
            plans.as_bytes(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        let steps = s.plan("a").unwrap().unwrap().record.steps;
        let want = parse_plan_line("p", 1, plans.trim()).unwrap().steps;
        assert_eq!(steps, want);
        assert_eq!(steps[0].order, 10);
        assert_eq!(steps[1].args["q"][1], 2.5);
        let only_c = PlanFilter {
            caller: Some("c".into()),
            ..Default::default()
        };
        let row = s.plans(&only_c, 0, 1).unwrap();
        assert_eq!((row[0].id.as_str(), row[0].steps), ("a", 2));
    }

    #[test]
    fn a_store_from_schema_2_keeps_every_step_when_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        let v2 = Schema {
            migrations: &[MIGRATION_1, MIGRATION_2],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &v2).unwrap();
        let steps = r#"[{"order":1,"tool":"fs.read","args":{"path":"/x","n":[1,2]}},{"order":3,"tool":"unknown","rationale":"gap: nope"}]"#;
        conn.execute_batch(&format!(
            "INSERT INTO plans(seq, id, at, caller, model, intent, intent_sha, shape, complexity, steps, outcome)
             VALUES (7, 'old', 5, 'c', 'm', 'read x', 's', 'h', 'simple', '{steps}', 'guarded');
             INSERT INTO plan_steps VALUES (7, 1, 'fs.read'), (7, 2, 'unknown');"
        ))
        .unwrap();
        drop(conn);
        let s = HistoryStore::open(&path).unwrap();
        let got = s.plan("old").unwrap().unwrap().record.steps;
        let want: Vec<Step> = serde_json::from_str(steps).unwrap();
        assert_eq!(got, want);
        assert_eq!(
            s.unused(&["fs.read".into()], None).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_stored_json_column_that_no_longer_parses_is_an_error_naming_file_and_row() {
        let (_d, s) = seeded();
        let id = s.plans(&PlanFilter::default(), 0, 1).unwrap()[0].id.clone();
        let file = s.path().display().to_string();
        let damage = |sql: &str| {
            s.conn.execute(sql, [&id]).unwrap();
            let err = format!("{:#}", s.plan(&id).unwrap_err());
            assert!(err.contains(&file) && err.contains(&id), "{err}");
            err
        };
        let err = damage("UPDATE plans SET trim_record = '{\"steps\": [' WHERE id = ?1");
        assert!(err.contains("trim_record"), "{err}");
        s.conn
            .execute("UPDATE plans SET trim_record = NULL WHERE id = ?1", [&id])
            .unwrap();
        let err = damage("UPDATE plans SET executed = 'not json' WHERE id = ?1");
        assert!(err.contains("executed"), "{err}");
        // The drift listing reads the same column: an error too, not an empty list.
        let err = format!("{:#}", s.drift(&PlanFilter::default(), 1).unwrap_err());
        assert!(err.contains(&file) && err.contains(&id), "{err}");
        // A stored setting that no longer parses is not quietly the default either.
        s.conn
            .execute(
                "UPDATE meta SET value = 'soon' WHERE key = 'drift_window_secs'",
                [],
            )
            .unwrap();
        let err = format!("{:#}", HistoryStore::open(s.path()).err().unwrap());
        assert!(err.contains(&file) && err.contains("drift window"), "{err}");
    }

    fn plan_line(id: &str, extra: &str) -> String {
        format!(
            "{{\"id\":\"{id}\",\"at\":1000,\"caller\":\"c\",\"model\":\"weak\",\"intent\":\"remember the launch note and blog it\",\"steps\":[{{\"order\":1,\"tool\":\"blog.draft\"}}]{extra}}}"
        )
    }

    /// A plan carrying `expert_baseline` steps gets its gap signal when stored; export writes
    /// the source, the baseline and the signal, and a copy imported from it has them all.
    #[test]
    fn a_baseline_gives_a_gap_signal_that_export_and_import_keep_with_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = HistoryStore::open(&dir.path().join(HISTORY_FILE)).unwrap();
        let lines = [
            plan_line(
                "a",
                r#","expert_baseline":[{"order":1,"tool":"memory.store"},{"order":2,"tool":"blog.draft"}]"#,
            ),
            plan_line(
                "b",
                r#","source":"otel","expert_baseline":{"model":"strong","steps":[{"order":1,"tool":"blog.draft"}]}"#,
            ),
            plan_line("c", r#","source":"litellm""#),
        ]
        .join("\n");
        s.import_plans(
            "p",
            lines.as_bytes(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        let a = s.plan("a").unwrap().unwrap();
        let gap = a.gap_signal.clone().unwrap();
        assert_eq!(gap.category, crate::core::gap::GapCategory::PlanMissed);
        assert_eq!(gap.plan_missed, ["memory.store"]);
        assert_eq!(a.record.source, PlanSource::Native);
        let b = s.plan("b").unwrap().unwrap();
        assert!(b.gap_signal.as_ref().unwrap().agree);
        assert_eq!(b.record.source, PlanSource::Otel);
        assert_eq!(
            b.record.expert_baseline.as_ref().unwrap().model.as_deref(),
            Some("strong")
        );
        assert!(s.plan("c").unwrap().unwrap().gap_signal.is_none());
        let report = s.gaps(&PlanFilter::default()).unwrap();
        assert_eq!((report.plans, report.agree), (2, 1));
        assert_eq!(report.plan_missed[0].tool, "memory.store");
        let otel = PlanFilter {
            source: Some("otel".into()),
            ..Default::default()
        };
        assert_eq!(s.gaps(&otel).unwrap().plans, 1);

        let mut out = Vec::new();
        s.export_plans(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r#""source":"litellm""#), "{text}");
        assert!(text.contains(r#""gap_signal""#), "{text}");
        let copy_dir = tempfile::tempdir().unwrap();
        let mut t = HistoryStore::open(&copy_dir.path().join("copy.sqlite")).unwrap();
        t.import_plans(
            "e",
            text.as_bytes(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        for id in ["a", "b", "c"] {
            assert_eq!(t.plan(id).unwrap(), s.plan(id).unwrap(), "{id}");
        }
        assert_eq!(t.gaps(&PlanFilter::default()).unwrap(), report);
        // The same export again is already present, source and all.
        let again = t
            .import_plans(
                "e",
                text.as_bytes(),
                &pipelines(),
                OnConflict::Refuse,
                |_| {},
            )
            .unwrap();
        assert_eq!(again.already_present, 3);
        // A changed source is other content: a conflict, as any other field.
        let moved = text.replace(r#""source":"litellm""#, r#""source":"otel""#);
        let err = t
            .import_plans(
                "m",
                moved.as_bytes(),
                &pipelines(),
                OnConflict::Refuse,
                |_| {},
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains(": c"), "{err:#}");
        let bad = plan_line("d", r#","source":"kafka""#);
        let err = t
            .import_plans(
                "bad",
                bad.as_bytes(),
                &pipelines(),
                OnConflict::Refuse,
                |_| {},
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("'kafka'"), "{err:#}");
    }

    /// A store written before the gap columns opens with every plan, none with a signal.
    #[test]
    fn a_store_from_before_the_gap_columns_keeps_its_plans_and_sources() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        let mine = SCHEMA
            .migrations
            .iter()
            .position(|m| *m == MIGRATION_GAP_COLUMNS)
            .unwrap();
        let before = Schema {
            migrations: &SCHEMA.migrations[..mine],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &before).unwrap();
        conn.execute_batch(
            "INSERT INTO plans(seq, id, at, caller, model, intent, intent_sha, shape, complexity, outcome, source)
             VALUES (3, 'old', 5, 'c', 'm', 'read x', 's', 'h', 'single-action', 'ok', 'litellm');
             INSERT INTO plan_steps VALUES (3, 1, 1, 'fs.read', NULL, '');",
        )
        .unwrap();
        drop(conn);
        let s = HistoryStore::open(&path).unwrap();
        let old = s.plan("old").unwrap().unwrap();
        assert_eq!(old.record.source, PlanSource::Litellm);
        assert!(old.gap_signal.is_none() && old.record.expert_baseline.is_none());
        assert_eq!(s.gaps(&PlanFilter::default()).unwrap().plans, 0);
    }

    /// An outcome or drift class that is none of the known ones (a hand edit, a damaged row)
    /// is an error where it is read, never the most cautious value in its place.
    #[test]
    fn a_stored_outcome_or_drift_that_is_no_such_thing_is_an_error() {
        let (_d, s) = seeded();
        let id = s.plans(&PlanFilter::default(), 0, 1).unwrap()[0].id.clone();
        let outcome: String = s
            .conn
            .query_row("SELECT outcome FROM plans WHERE id = ?1", [&id], |r| {
                r.get(0)
            })
            .unwrap();
        s.conn
            .execute("UPDATE plans SET outcome = 'weird' WHERE id = ?1", [&id])
            .unwrap();
        let err = format!("{:#}", s.plan(&id).unwrap_err());
        assert!(
            err.contains("'weird'") && err.contains("an outcome"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            s.plans(&PlanFilter::default(), 0, 1000).unwrap_err()
        );
        assert!(err.contains("'weird'"), "{err}");
        s.conn
            .execute(
                "UPDATE plans SET outcome = ?2, drift = 'zzz' WHERE id = ?1",
                [&id, &outcome],
            )
            .unwrap();
        let err = format!("{:#}", s.plan(&id).unwrap_err());
        assert!(err.contains("'zzz'") && err.contains(&id), "{err}");
    }

    #[test]
    fn a_store_from_before_the_arm_columns_keeps_its_plans_and_reads_no_arm() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        // Every migration up to the one before the arm columns, whatever comes after.
        let upto = SCHEMA
            .migrations
            .iter()
            .position(|m| *m == MIGRATION_ARM_COLUMNS)
            .unwrap();
        let before = Schema {
            migrations: &SCHEMA.migrations[..upto],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &before).unwrap();
        conn.execute_batch(
            "INSERT INTO plans(seq, id, at, caller, model, intent, intent_sha, shape, complexity, outcome)
             VALUES (3, 'old', 5, 'c', 'm', 'read x', 's', 'h', 'single-action', 'ok');
             INSERT INTO plan_steps(plan_seq, ord, step_order, tool) VALUES (3, 1, 1, 'fs.read');",
        )
        .unwrap();
        drop(conn);
        let mut s = HistoryStore::open(&path).unwrap();
        let old = s.plan("old").unwrap().unwrap();
        assert_eq!((old.record.arm, &old.record.compare_group), (None, &None));
        assert!(old.arms.is_empty());
        assert_eq!(s.plans(&PlanFilter::default(), 0, 5).unwrap()[0].arm, None);
        // A comparison's plans stored now carry their arm and their link.
        let arm = |id: &str, model: &str, arm: Arm| PlanRecord {
            id: id.into(),
            model: model.into(),
            arm: Some(arm),
            compare_group: Some("cmp-1".into()),
            ..old.record.clone()
        };
        s.insert_records(
            &[
                arm("b", "m2", Arm::Full),
                arm("a", "m2", Arm::Compacted),
                arm("c", "m1", Arm::NoHint),
            ],
            &[],
            &pipelines(),
        )
        .unwrap();
        let d = s.plan("b").unwrap().unwrap();
        assert_eq!(d.record.arm, Some(Arm::Full));
        let linked: Vec<(&str, Option<Arm>)> =
            d.arms.iter().map(|r| (r.id.as_str(), r.arm)).collect();
        assert_eq!(
            linked,
            [
                ("c", Some(Arm::NoHint)),
                ("a", Some(Arm::Compacted)),
                ("b", Some(Arm::Full))
            ]
        );
        // A stored arm that is no arm is an error naming the plan, never read as none.
        s.conn
            .execute("UPDATE plans SET arm = 'half' WHERE id = 'a'", [])
            .unwrap();
        let err = format!("{:#}", s.plan("a").unwrap_err());
        assert!(err.contains("plan a") && err.contains("'half'"), "{err}");
    }

    #[test]
    fn followed_steps_are_the_recent_followed_plans_with_their_shape() {
        let (_dir, s) = seeded();
        let all = s.followed_steps(10_000).unwrap();
        let followed = s
            .count_plans(&PlanFilter {
                drift: Some(Drift::Followed),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(all.len() as u64, followed);
        assert!(
            all.iter()
                .all(|p| !p.tools.contains(&UNKNOWN_TOOL.to_string()))
        );
        let recent = s.followed_steps(3).unwrap();
        assert_eq!(recent, all[..3]);
        let newest = s.plan(&recent[0].id).unwrap().unwrap();
        assert_eq!(newest.shape, recent[0].shape);
        assert_eq!(newest.drift, Drift::Followed);
    }

    /// Every filter the History pane can set from the sample's callers, models and sources.
    fn pane_filters(s: &HistoryStore) -> Vec<PlanFilter> {
        let (callers, models) = s.callers_and_models().unwrap();
        let some = |v: &[String], at: &[usize]| -> Vec<Option<String>> {
            std::iter::once(None)
                .chain(at.iter().filter_map(|i| v.get(*i).cloned()).map(Some))
                .collect()
        };
        let callers = some(&callers, &[0, 3]);
        let models = some(&models, &[0, 4]);
        let sources: Vec<Option<String>> = std::iter::once(None)
            .chain(PlanSource::ALL.iter().map(|s| Some(s.as_str().to_string())))
            .collect();
        let mut out = Vec::new();
        for outcome in std::iter::once(None).chain(Outcome::ALL.iter().copied().map(Some)) {
            for drift in std::iter::once(None).chain(Drift::ALL.iter().copied().map(Some)) {
                for caller in &callers {
                    for model in &models {
                        for source in &sources {
                            out.push(PlanFilter {
                                caller: caller.clone(),
                                model: model.clone(),
                                outcome,
                                drift,
                                source: source.clone(),
                                ..Default::default()
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// The kept counts answer as counting the plans does, for every pane filter; returns
    /// how many of those filters matched some plan (so the comparison is not all zeros).
    fn kept_counts_agree(s: &HistoryStore) -> usize {
        let mut matched = 0;
        for f in pane_filters(s) {
            assert!(f.counted(), "{f:?}");
            let kept = s.count_plans(&f).unwrap();
            assert_eq!(
                kept,
                s.count_plans_from(&f, Counted::Plans).unwrap(),
                "{f:?}"
            );
            assert_eq!(
                s.model_outcomes(&f).unwrap(),
                s.model_outcomes_from(&f, Counted::Plans).unwrap(),
                "{f:?}"
            );
            matched += usize::from(kept > 0);
        }
        matched
    }

    /// The History pane's counts and model outcomes come from `plan_counts`; they must say
    /// what counting the plans says, after every way a plan is written or changed.
    #[test]
    fn kept_counts_follow_every_write_and_agree_with_counting_the_plans() {
        let (_d, mut s) = seeded();
        let total = s.counts().unwrap().plans;
        assert_eq!(s.count_plans(&PlanFilter::default()).unwrap(), total);
        assert!(kept_counts_agree(&s) > 100);
        // A plan replaced by one of another model, outcome and source.
        let failed = PlanFilter {
            outcome: Some(Outcome::Failed),
            ..Default::default()
        };
        let id = s.plans(&failed, 0, 1).unwrap()[0].id.clone();
        let mut line: serde_json::Value = serde_json::from_str(
            SAMPLE_PLANS
                .lines()
                .find(|l| l.contains(&format!("\"{id}\"")))
                .unwrap(),
        )
        .unwrap();
        line["model"] = "moved/model".into();
        line["outcome"] = "ok".into();
        line["source"] = "litellm".into();
        let report = s
            .import_plans(
                "p",
                format!("{line}\n").as_bytes(),
                &pipelines(),
                OnConflict::Replace,
                |_| {},
            )
            .unwrap();
        assert_eq!(report.replaced, 1);
        kept_counts_agree(&s);
        let moved = PlanFilter {
            model: Some("moved/model".into()),
            source: Some("litellm".into()),
            ..Default::default()
        };
        assert_eq!(s.count_plans(&moved).unwrap(), 1);
        // A new plan from elsewhere, then executions that move its drift.
        let plans = "{\"id\":\"new-1\",\"at\":2000000000,\"caller\":\"c-new\",\"model\":\"m\",\"intent\":\"remember this\",\"source\":\"otel\",\"steps\":[{\"order\":1,\"tool\":\"memory.store\"}]}\n";
        s.import_plans(
            "p",
            plans.as_bytes(),
            &pipelines(),
            OnConflict::Refuse,
            |_| {},
        )
        .unwrap();
        kept_counts_agree(&s);
        let execs = "{\"id\":\"new-1-e\",\"at\":2000000010,\"caller\":\"c-new\",\"plan_id\":\"new-1\",\"tool\":\"memory.store\",\"ok\":true}\n";
        s.import_executions("e", execs.as_bytes(), OnConflict::Refuse, |_| {})
            .unwrap();
        let followed = PlanFilter {
            caller: Some("c-new".into()),
            drift: Some(Drift::Followed),
            ..Default::default()
        };
        assert_eq!(s.count_plans(&followed).unwrap(), 1);
        kept_counts_agree(&s);
        // A replay, a drift window that moves many plans' drift, a plan deleted by hand.
        let mut replay = s.plan(&id).unwrap().unwrap().record;
        replay.replay_of = Some(id.clone());
        s.insert_replay(replay, &pipelines()).unwrap();
        assert!(s.set_drift_window(10).unwrap() > 0);
        kept_counts_agree(&s);
        s.conn
            .execute("DELETE FROM plans WHERE id = ?1", [&id])
            .unwrap();
        assert_eq!(s.count_plans(&PlanFilter::default()).unwrap(), total + 1);
        assert!(kept_counts_agree(&s) > 100);
    }

    /// A store from before `plan_counts` is counted once when it is migrated.
    #[test]
    fn a_store_from_before_the_kept_counts_is_counted_when_migrated() {
        let (d, seeded) = seeded();
        let path = d.path().join("old.sqlite");
        let mine = SCHEMA
            .migrations
            .iter()
            .position(|m| *m == MIGRATION_PLAN_COUNTS)
            .unwrap();
        let before = Schema {
            migrations: &SCHEMA.migrations[..mine],
            ..SCHEMA
        };
        let (conn, _) = sqlite::open(&path, &before).unwrap();
        // The sample's plans, through the columns the older schema has.
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('plans')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let columns = columns.join(", ");
        conn.execute("ATTACH ?1 AS seeded", [seeded.path().display().to_string()])
            .unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO plans({columns}) SELECT {columns} FROM seeded.plans; DETACH seeded;"
        ))
        .unwrap();
        drop(conn);
        let s = HistoryStore::open(&path).unwrap();
        assert!(kept_counts_agree(&s) > 100);
        let all = PlanFilter::default();
        assert_eq!(
            s.model_outcomes(&all).unwrap(),
            seeded.model_outcomes(&all).unwrap()
        );
        assert_eq!(s.count_plans(&all).unwrap(), seeded.counts().unwrap().plans);
    }

    /// A page read from the oldest end is the page read from the newest, and the count
    /// beside it is the plans counted.
    #[test]
    fn a_page_from_either_end_is_the_same_page() {
        let (_d, s) = seeded();
        let (callers, _) = s.callers_and_models().unwrap();
        for f in [
            PlanFilter::default(),
            PlanFilter {
                outcome: Some(Outcome::Failed),
                ..Default::default()
            },
            PlanFilter {
                caller: Some(callers[1].clone()),
                drift: Some(Drift::Followed),
                ..Default::default()
            },
            PlanFilter {
                caller: Some("nobody".into()),
                ..Default::default()
            },
        ] {
            let total = s.count_plans_from(&f, Counted::Plans).unwrap();
            for offset in (0..total + 10).step_by(7) {
                let (n, rows) = s.plans_page(&f, offset, 10).unwrap();
                assert_eq!(n, total, "{f:?}");
                assert_eq!(rows, s.plans(&f, offset, 10).unwrap(), "{f:?} at {offset}");
            }
        }
    }

    /// The History search: plans whose intent contains the text, in any ASCII case, with
    /// `%` and `_` taken as themselves; counted from the plans, not the kept counts.
    #[test]
    fn the_intent_search_finds_plans_by_their_words_and_takes_wildcards_literally() {
        let (_d, s) = seeded();
        let all = s.plans(&PlanFilter::default(), 0, 100_000).unwrap();
        let expected = all
            .iter()
            .filter(|p| p.intent.to_lowercase().contains("remember"))
            .count() as u64;
        assert!(expected > 0 && expected < all.len() as u64);
        let search = |t: &str| PlanFilter {
            text: Some(t.into()),
            ..Default::default()
        };
        assert!(!search("x").counted());
        assert_eq!(s.count_plans(&search("ReMeMbEr")).unwrap(), expected);
        let (total, rows) = s.plans_page(&search("remember"), 0, 10).unwrap();
        assert_eq!(total, expected);
        assert!(
            rows.iter()
                .all(|p| p.intent.to_lowercase().contains("remember"))
        );
        // A wildcard is a character to find, never "anything".
        assert_eq!(s.count_plans(&search("%")).unwrap(), 0);
        assert_eq!(s.count_plans(&search("_")).unwrap(), 0);
        assert_eq!(s.count_plans(&search("\\")).unwrap(), 0);
        assert_eq!(like_literal("50%_a\\b"), "50\\%\\_a\\\\b");
    }
}
