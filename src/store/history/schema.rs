//! The history store's schema: its tables, and the migrations that brought older stores to it
//! (positional: a store at version N runs migrations N.. on open).

use super::*;

pub(super) const SCHEMA: Schema = Schema {
    // "ctxh"
    application_id: 0x6374_7868,
    kind: "history store",
    // An import of hundreds of thousands of plans holds the lock over a minute.
    long_writer: "an import?",
    migrations: &[
        MIGRATION_1,
        MIGRATION_2,
        MIGRATION_3,
        MIGRATION_ANSWER_COLUMN,
        MIGRATION_SOURCE_COLUMN,
        MIGRATION_GAP_COLUMNS,
        MIGRATION_ARM_COLUMNS,
        MIGRATION_PLAN_COUNTS,
        MIGRATION_FAILED_EXECUTIONS,
        MIGRATION_AT_NANOS,
        MIGRATION_NAMED_RUNS_NOT_LOOSE,
        MIGRATION_NAMED_RUNS_JUDGE_ALONE,
        MIGRATION_PLAN_FRACTION_KEPT,
        MIGRATION_PLANS_ORDERED_TO_THE_FRACTION,
    ],
};

/// The meta key holding the last plan `seq` stored before this version: a plan stored after
/// it holds the part of a second it was given with (0: a whole second), one stored up to it
/// may hold 0 for a part of a second its store never kept.
pub(super) const PLAN_FRACTION_KEPT_AFTER_KEY: &str = "plans_fraction_kept_after_seq";
/// The same mark for executions (tester 26 N2).
pub(super) const EXECUTION_FRACTION_KEPT_AFTER_KEY: &str = "executions_fraction_kept_after_seq";

/// Tester 26 N9: plans of one second listed in the order they were stored, not by the part
/// of a second they were given with. Every list reads plans by `(at, at_nanos, seq)` (see
/// `PLANS_NEWEST_FIRST`), so the indexes it walks hold `at_nanos` after `at`: with `at`
/// alone SQLite sorted each second's rows apart, reading every row a page skips (the History
/// pane's first page 7 ms → 240 ms, `G` 4 → 37 ms on 100,000 plans). Rebuilding the seven
/// indexes is one sort each over the plans.
pub(super) const MIGRATION_PLANS_ORDERED_TO_THE_FRACTION: &str = "
DROP INDEX IF EXISTS plans_at;
CREATE INDEX plans_at ON plans(at, at_nanos);
DROP INDEX IF EXISTS plans_caller_at;
CREATE INDEX plans_caller_at ON plans(caller, at, at_nanos);
DROP INDEX IF EXISTS plans_model_at;
CREATE INDEX plans_model_at ON plans(model, at, at_nanos);
DROP INDEX IF EXISTS plans_outcome_at;
CREATE INDEX plans_outcome_at ON plans(outcome, at, at_nanos);
DROP INDEX IF EXISTS plans_drift_at;
CREATE INDEX plans_drift_at ON plans(drift, at, at_nanos);
DROP INDEX IF EXISTS plans_shape_at;
CREATE INDEX plans_shape_at ON plans(shape, at, at_nanos);
DROP INDEX IF EXISTS plans_source_at;
CREATE INDEX plans_source_at ON plans(source, at, at_nanos);
";

/// Tester 25 F1: a plan stored with 0 for its part of a second was taken for any plan of that
/// second read again ("already present"), as a row from before [`MIGRATION_AT_NANOS`] must
/// be: an id-less plan at 10:00:00.4 was never stored beside one at 10:00:00. Only rows up to
/// this mark are read that way now.
pub(super) const MIGRATION_PLAN_FRACTION_KEPT: &str = "
INSERT OR REPLACE INTO meta(key, value)
    SELECT 'plans_fraction_kept_after_seq', COALESCE(MAX(seq), 0) FROM plans;
INSERT OR REPLACE INTO meta(key, value)
    SELECT 'executions_fraction_kept_after_seq', COALESCE(MAX(seq), 0) FROM executions;
";

/// Tester 20 F2 and F10: a run naming a plan but dated before it (left out of drift) made
/// the caller's runs naming no plan stop counting for it, and so did another caller's run
/// naming it. Only the plan's own caller's runs naming it at its time judge it alone now
/// (another caller's count beside them); the drift recount judges again, once, the callers
/// of plans some run names.
pub(super) const MIGRATION_NAMED_RUNS_JUDGE_ALONE: &str = "
INSERT OR REPLACE INTO meta(key, value)
    SELECT 'drift_recount', 'runs naming a plan judge it alone' WHERE EXISTS
        (SELECT 1 FROM executions WHERE plan_id IS NOT NULL);
";

/// Tester 18 F1: a run naming a plan not in the store had counted for its caller's latest
/// plan, and kept counting for it once the named plan (another caller's) arrived. Only a run
/// naming no plan counts that way now; the drift recount (as [`MIGRATION_FAILED_EXECUTIONS`]
/// asks it) judges again, once, the callers with a run naming a plan not stored or another
/// caller's plan, so a store's figures are those a fresh import of its data gives.
pub(super) const MIGRATION_NAMED_RUNS_NOT_LOOSE: &str = "
INSERT OR REPLACE INTO meta(key, value)
    SELECT 'drift_recount', 'runs naming a plan' WHERE EXISTS
        (SELECT 1 FROM executions WHERE plan_id IS NOT NULL);
";

/// Tester 7 T7-6: the part of a second a plan's or an execution's time was given with
/// (nanoseconds; 0 for rows from before, and for times given without one), so "more than
/// 3 s before its plan" is judged on the instants, not on whole seconds.
pub(super) const MIGRATION_AT_NANOS: &str = "
ALTER TABLE plans ADD COLUMN at_nanos INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN at_nanos INTEGER NOT NULL DEFAULT 0;
";

/// The meta key holding the version of the word rules the plans were grouped by
/// ([`SHAPE_RULES`](crate::core::history::SHAPE_RULES)).
pub(super) const SHAPE_RULES_KEY: &str = "shape_rules";

/// The meta key that asks the next writer to open the store to recompute drift once for the
/// plans whose evidence the rules before it judged wrongly (`HistoryStore::open`).
pub(super) const DRIFT_RECOUNT_KEY: &str = "drift_recount";

/// Tester 6 F8 and F9: which of a plan's `executed` tools failed (a JSON array of their
/// positions in `executed`; `[]`: none failed). Drift was judged on tool names alone, so a
/// plan whose only step ran and failed was `followed`, and an execution dated before its plan
/// followed it. Recomputing drift is not SQL: the migration leaves a note in `meta`, and the
/// store, once open, recomputes the drift of the callers with a failed execution or one dated
/// before its plan, in one write transaction, and removes the note. A store without
/// executions (a new one) gets no note: there is nothing to recount.
pub(super) const MIGRATION_FAILED_EXECUTIONS: &str = "
ALTER TABLE plans ADD COLUMN executed_failed TEXT NOT NULL DEFAULT '[]';
INSERT OR REPLACE INTO meta(key, value)
    SELECT 'drift_recount', 'failed or early executions' WHERE EXISTS (SELECT 1 FROM executions);
";

/// Issue 17 item 7 (responsive on big data): plans counted by every column the History
/// pane filters on but the time and the intent shape, kept current by triggers on `plans`
/// whatever writes it (imports, replaces, drift recomputed, replays). A count or the model
/// outcomes under those filters then add up a few thousand rows instead of reading a
/// million plans. A failure class of `NULL` is kept as `''`: a key column cannot be `NULL`
/// for the upsert to find its row. Migrating a store counts its plans once (one pass over
/// the table and a sort: measured in the README, "History at scale").
pub(super) const MIGRATION_PLAN_COUNTS: &str = "
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
pub(super) const MIGRATION_GAP_COLUMNS: &str = "
ALTER TABLE plans ADD COLUMN expert_baseline TEXT;
ALTER TABLE plans ADD COLUMN gap_signal TEXT;
CREATE INDEX plans_gap_shape ON plans(shape, at) WHERE gap_signal IS NOT NULL;
";

/// Issue 18 (A/B): the arm a plan was sent as (`compacted`, `full`, `no-planner`,
/// `no-prior`, `no-hint`) and the comparison it belongs to, so one `send --compare`'s plans
/// stay linked. Rows written before it, and plans outside a comparison, read as `NULL`.
pub(super) const MIGRATION_ARM_COLUMNS: &str = "
ALTER TABLE plans ADD COLUMN arm TEXT;
ALTER TABLE plans ADD COLUMN compare_group TEXT;
CREATE INDEX plans_compare_group ON plans(compare_group) WHERE compare_group IS NOT NULL;
";

/// Issue 20 (real traffic in): where a plan came from (`native`, `otel`, `litellm`), so
/// `history` can say it and filter by it. Rows written before it are native.
pub(super) const MIGRATION_SOURCE_COLUMN: &str = "
ALTER TABLE plans ADD COLUMN source TEXT NOT NULL DEFAULT 'native';
CREATE INDEX plans_source_at ON plans(source, at);
";

/// Issue 18 (live loop): the whole answer of a plan, as JSON (see `PlanRecord::answer`).
/// A column of its own, not part of trim_record, so old rows read as `NULL`.
pub(super) const MIGRATION_ANSWER_COLUMN: &str = "
ALTER TABLE plans ADD COLUMN answer TEXT;
";

/// Filtering the History pane by outcome or drift regroups the matching plans; these cover
/// that query so it reads an index, not a million rows.
pub(super) const MIGRATION_2: &str = "
CREATE INDEX plans_outcome_shape ON plans(outcome, shape, at);
CREATE INDEX plans_drift_shape ON plans(drift, shape, at);
";

/// Steps stored once: until schema 2 a plan's steps were a JSON column on `plans` and, for
/// queries by tool, a second copy of each tool in `plan_steps`. Now `plan_steps` holds
/// everything a step carries (its source `order`, tool, args as JSON, rationale), rebuilt
/// from the JSON, and the JSON column goes.
pub(super) const MIGRATION_3: &str = "
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

pub(super) const MIGRATION_1: &str = "
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
