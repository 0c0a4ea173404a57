//! Plans and what happened to them (DESIGN §2.9): the records, the keys that group them,
//! drift, the tier suggestion from real outcomes, and the weights the ranking prior takes
//! from them. Pure: the store feeds it rows.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::core::bounds::{self, int_in};
use crate::core::budget::Tier;
use crate::core::compare::Arm;
use crate::core::error::CoreError;
use crate::core::send_mark::SendMark;
use crate::core::terminal_text::quoted;
use crate::core::text;

/// What a step names when the guard found no such pack or pipeline.
pub const UNKNOWN_TOOL: &str = "unknown";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub order: u32,
    pub tool: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub args: serde_json::Value,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rationale: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A plan came back and every step names a real tool.
    Ok,
    /// A plan came back; the guard demoted at least one step to `unknown`.
    Guarded,
    /// No plan came back (see the failure class).
    Failed,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Guarded, Outcome::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Guarded => "guarded",
            Outcome::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Complexity {
    SingleAction,
    PipelineDirect,
    PackChain,
}

impl Complexity {
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::SingleAction => "single-action",
            Complexity::PipelineDirect => "pipeline-direct",
            Complexity::PackChain => "pack-chain",
        }
    }

    pub fn parse(s: &str) -> Option<Complexity> {
        [
            Complexity::SingleAction,
            Complexity::PipelineDirect,
            Complexity::PackChain,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    /// From the steps: none or one is `single-action`, unless that one runs a pipeline
    /// (`pipeline-direct`); two or more are a `pack-chain`.
    pub fn of(steps: &[Step], is_pipeline: impl Fn(&str) -> bool) -> Complexity {
        match steps {
            [one] if is_pipeline(&one.tool) => Complexity::PipelineDirect,
            [] | [_] => Complexity::SingleAction,
            _ => Complexity::PackChain,
        }
    }
}

/// How the executions after a plan relate to its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Drift {
    /// Every step executed, in order.
    Followed,
    /// Some steps executed, or all of them out of order.
    Partial,
    /// Nothing executed.
    Ignored,
    /// Other tools executed, none of the plan's.
    Diverged,
    /// No plan came back.
    Failed,
    /// A replay: no agent ran it, so drift is not judged and mining leaves it out.
    Replay,
}

impl Drift {
    pub const ALL: [Drift; 6] = [
        Drift::Followed,
        Drift::Partial,
        Drift::Ignored,
        Drift::Diverged,
        Drift::Failed,
        Drift::Replay,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Drift::Followed => "followed",
            Drift::Partial => "partial",
            Drift::Ignored => "ignored",
            Drift::Diverged => "diverged",
            Drift::Failed => "failed",
            Drift::Replay => "replay",
        }
    }

    pub fn parse(s: &str) -> Option<Drift> {
        Drift::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// A one-character marker for lists.
    pub fn marker(self) -> char {
        match self {
            Drift::Followed => '✓',
            Drift::Partial => '◐',
            Drift::Ignored => '○',
            Drift::Diverged => '↯',
            Drift::Failed => '✗',
            Drift::Replay => '↻',
        }
    }

    /// Drift of one plan: `planned` are its step tools in order (guard-demoted steps left
    /// out: nothing can execute them), `executed` the tools run after it, in time order, each
    /// with whether it succeeded. A step is executed only by a successful execution: a plan
    /// whose steps ran in order but one of them failed is not followed. It is `partial` when
    /// any planned tool ran (well or not), so a plan whose only step failed is `partial`
    /// ([`prior_weight`] gives such a plan nothing), `diverged` when only other tools ran.
    pub fn classify(outcome: Outcome, planned: &[&str], executed: &[Ran<'_>]) -> Drift {
        if outcome == Outcome::Failed {
            return Drift::Failed;
        }
        if executed.is_empty() {
            return Drift::Ignored;
        }
        let mut next = 0;
        for ran in executed.iter().filter(|r| r.ok) {
            if next < planned.len() && planned[next] == ran.tool {
                next += 1;
            }
        }
        if !planned.is_empty() && next == planned.len() {
            return Drift::Followed;
        }
        if planned
            .iter()
            .any(|p| executed.iter().any(|r| r.tool == *p))
        {
            Drift::Partial
        } else {
            Drift::Diverged
        }
    }
}

/// One execution as drift reads it: the tool, and whether it succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ran<'a> {
    pub tool: &'a str,
    pub ok: bool,
}

/// Whether any of `planned` ran successfully among `executed`: what sets a `partial` plan's
/// prior weight apart from one whose planned tools only failed.
pub fn planned_ran_ok(planned: &[&str], executed: &[Ran<'_>]) -> bool {
    executed.iter().any(|r| r.ok && planned.contains(&r.tool))
}

/// An executed tool as lists show it: a failed execution is marked `✗` after the name.
pub fn ran_label(tool: &str, ok: bool) -> String {
    if ok {
        tool.to_string()
    } else {
        format!("{tool} ✗")
    }
}

/// An execution dated more than this many seconds before a plan is no evidence about it:
/// it ran before the plan existed. The slack is clock skew between the gateway that logged
/// the plan and the agent (or collector) that logged the execution.
pub const EXECUTION_CLOCK_SKEW_SECS: i64 = 3;

/// Whether an execution at `executed_at` can have followed a plan made at `plan_at`, each
/// a Unix second and the part of a second past it (nanoseconds; 0 when the time had none):
/// a run 3.4 s before its plan is more than 3 s before it (tester 7 T7-6: whole seconds
/// said 3).
pub fn after_plan(plan_at: (i64, u32), executed_at: (i64, u32)) -> bool {
    let nanos = |(secs, part): (i64, u32)| i128::from(secs) * 1_000_000_000 + i128::from(part);
    nanos(executed_at) >= nanos(plan_at) - i128::from(EXECUTION_CLOCK_SKEW_SECS) * 1_000_000_000
}

/// The plan a run names, as drift reads it: its time, its caller, whether it is a replay.
#[derive(Debug, Clone, Copy)]
pub struct NamedPlan<'a> {
    pub at: (i64, u32),
    pub caller: &'a str,
    pub replay: bool,
}

/// What a run naming a stored plan is to that plan's drift: the one rule the drift recount,
/// the imports' notes and the answer of MCP `record_execution` share (tester 20 F2, F10, F14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedRun {
    /// Evidence for the plan. `own`: a run of the plan's own caller — the plan is judged on
    /// those, its caller's runs naming no plan left out; else another caller's, counted
    /// beside the plan's own caller's runs (whichever those are).
    Counts { own: bool },
    /// Dated more than [`EXECUTION_CLOCK_SKEW_SECS`] before the plan ([`after_plan`]): it ran
    /// before the plan existed. Left out: it changes nothing.
    BeforePlan,
    /// The plan is a replay: no agent runs one, so the run counts for no plan.
    Replay,
}

/// How drift takes a run of `caller` at `at` naming `plan`.
pub fn named_run(plan: NamedPlan<'_>, caller: &str, at: (i64, u32)) -> NamedRun {
    if plan.replay {
        NamedRun::Replay
    } else if !after_plan(plan.at, at) {
        NamedRun::BeforePlan
    } else {
        NamedRun::Counts {
            own: plan.caller == caller,
        }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a stored plan came from: imported in ctxconsole's own JSON Lines (`native`: a
/// gateway's plans), imported from a gateway's traffic (`otel`: OpenTelemetry GenAI spans;
/// `litellm`: LiteLLM spend logs), or sent by ctxconsole itself (`sent`: `send`, the
/// console's send, a live replay) — a trial no agent was handed, so until executions are
/// recorded against it, its `ignored` drift is no evidence against its tools. Kept with the
/// plan, exported with it and read back, so a copy of a store says where each plan came
/// from as the original does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanSource {
    #[default]
    Native,
    Otel,
    Litellm,
    Sent,
}

impl PlanSource {
    pub const ALL: [PlanSource; 4] = [
        PlanSource::Native,
        PlanSource::Otel,
        PlanSource::Litellm,
        PlanSource::Sent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanSource::Native => "native",
            PlanSource::Otel => "otel",
            PlanSource::Litellm => "litellm",
            PlanSource::Sent => "sent",
        }
    }

    pub fn parse(s: &str) -> Option<PlanSource> {
        PlanSource::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn is_native(&self) -> bool {
        *self == PlanSource::Native
    }
}

impl fmt::Display for PlanSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stronger model's unaided steps for a plan's intent (seed 003's `expert_baseline`):
/// what `send --baseline` got back from the baseline model asked with the whole catalog and
/// no planner help, or what an imported plan carries. The plan's `gap_signal` is computed
/// from it (`core::gap`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The model that produced the steps, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The stored plan holding the baseline's whole answer, when it was sent from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    pub steps: Vec<Step>,
}

/// One plan as imported, exported and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub id: String,
    /// Unix seconds.
    pub at: i64,
    /// The part of a second past `at`, in nanoseconds (0: none given); written into `at`
    /// when the record is written out as a line.
    #[serde(skip)]
    pub at_nanos: u32,
    pub caller: String,
    pub model: String,
    pub intent: String,
    pub steps: Vec<Step>,
    pub outcome: Outcome,
    pub failure_class: Option<String>,
    pub finish_reason: Option<String>,
    pub raw_response: Option<String>,
    pub trim_record: Option<serde_json::Value>,
    pub duration_ms: Option<i64>,
    pub replay_of: Option<String>,
    /// The whole answer as it came back (issue 18): content, reasoning, native tool calls,
    /// refusal, finish reason raw and normalised, usage, latency, HTTP status, request id
    /// and the sampling sent. `None` for rows written before it was kept, and for imports
    /// that do not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    /// The A/B arm the plan was sent as (`send --compare`); `None` outside a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
    /// The comparison it belongs to: every model and arm of one `send --compare` share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_group: Option<String>,
    /// Where the plan came from (issue 20): written by `history export`, read back by
    /// `import plans`, so a copied store keeps it.
    #[serde(default)]
    pub source: PlanSource,
    /// A stronger model's unaided steps for the same intent, from which the plan's gap
    /// signal is computed (issue 18 item 6). `None` when there was no baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_baseline: Option<Baseline>,
}

impl Baseline {
    /// The first of its names (model, plan id, step tools) that breaks the one name rule,
    /// with its field: `expert_baseline.model`, … — the same rule and words as a plan's.
    pub fn names_problem(&self) -> Option<(&'static str, &'static str)> {
        crate::core::budget::first_name_problem(
            self.model
                .as_deref()
                .map(|m| ("expert_baseline.model", m))
                .into_iter()
                .chain(
                    self.plan_id
                        .as_deref()
                        .map(|p| ("expert_baseline.plan_id", p)),
                )
                .chain(
                    self.steps
                        .iter()
                        .map(|s| ("expert_baseline.steps[].tool", s.tool.as_str())),
                ),
        )
    }
}

/// The first of a plan's names (its id when it has one, model, caller, failure class, step
/// tools, then its baseline's) that breaks the one name rule ([`name_problem`](crate::core::budget::name_problem)),
/// with its field: names are shown on one line of every table, and the model routes a live
/// replay. The id too (tester 5: an 8 MiB name imported; an id is shown, typed and linked
/// to like any name).
pub fn names_problem(
    id: Option<&str>,
    replay_of: Option<&str>,
    model: &str,
    caller: &str,
    failure_class: Option<&str>,
    steps: &[Step],
    baseline: Option<&Baseline>,
) -> Option<(&'static str, &'static str)> {
    // `replay_of` names a plan's id, shown in `history show` (tester 7 T7-8: 2 MB imported).
    crate::core::budget::first_name_problem(
        id.map(|id| ("id", id))
            .into_iter()
            .chain(replay_of.map(|r| ("replay_of", r)))
            .chain([("model", model), ("caller", caller)])
            // Shown in a column of `history --models` and beside a failed plan (tester 26 N7).
            .chain(failure_class.map(|f| ("failure_class", f)))
            .chain(steps.iter().map(|s| ("steps[].tool", s.tool.as_str()))),
    )
    .or_else(|| baseline.and_then(Baseline::names_problem))
}

impl PlanRecord {
    /// Whether the call gave an answer to judge: not one that failed before any answer
    /// (an HTTP error, the transport, the protocol). A plan that did not is linked to no
    /// baseline and has no gap signal.
    pub fn ran(&self) -> bool {
        self.failure_class
            .as_deref()
            .and_then(crate::core::failure::FailureClass::parse)
            .is_none_or(|c| !c.is_transport_level())
    }

    /// The first of its names that breaks the one name rule, with its field.
    pub fn names_problem(&self) -> Option<(&'static str, &'static str)> {
        names_problem(
            Some(&self.id),
            self.replay_of.as_deref(),
            &self.model,
            &self.caller,
            self.failure_class.as_deref(),
            &self.steps,
            self.expert_baseline.as_ref(),
        )
    }

    /// The record as one line `import plans` reads back: its time in RFC 3339, and no id
    /// when it has none yet (the import derives one).
    pub fn import_line(&self) -> String {
        let mut line = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(obj) = line.as_object_mut() {
            obj.insert(
                "at".into(),
                crate::core::time::format_timestamp_nanos(self.at, self.at_nanos).into(),
            );
            if self.id.is_empty() {
                obj.remove("id");
            }
        }
        line.to_string()
    }

    /// Step tools a caller could have executed, in order.
    pub fn planned_tools(&self) -> Vec<&str> {
        self.steps
            .iter()
            .map(|s| s.tool.as_str())
            .filter(|t| *t != UNKNOWN_TOOL)
            .collect()
    }
}

/// One tool execution (the gateway's pack_history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// Given by the source, else derived from the other fields so a re-import matches.
    pub id: String,
    pub at: i64,
    /// The part of a second past `at`, in nanoseconds (0: none given).
    #[serde(skip)]
    pub at_nanos: u32,
    pub caller: String,
    pub session: Option<String>,
    pub plan_id: Option<String>,
    pub tool: String,
    pub ok: bool,
}

/// A plan line of a JSONL file: timestamps as RFC 3339 (or Unix seconds), optional fields
/// optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanLine {
    id: Option<String>,
    at: serde_json::Value,
    caller: String,
    model: String,
    intent: String,
    #[serde(default, deserialize_with = "plan_steps")]
    steps: Vec<Step>,
    outcome: Option<String>,
    #[serde(default)]
    failure_class: Option<String>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    raw_response: Option<String>,
    #[serde(default, deserialize_with = "unique_keys")]
    trim_record: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "unique_keys")]
    answer: Option<serde_json::Value>,
    #[serde(default)]
    duration_ms: Option<i64>,
    #[serde(default)]
    replay_of: Option<String>,
    #[serde(default)]
    arm: Option<Arm>,
    #[serde(default)]
    compare_group: Option<String>,
    /// `native` (the default), `otel` or `litellm`.
    #[serde(default)]
    source: Option<String>,
    /// A list of steps, or `{"model", "plan_id", "steps"}`.
    #[serde(default)]
    expert_baseline: Option<BaselineLine>,
    // Written by export, recomputed on import.
    #[serde(default)]
    #[allow(dead_code)]
    gap_signal: Option<serde_json::Value>,
    #[serde(default)]
    #[allow(dead_code)]
    complexity: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    intent_sha: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    shape: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    drift: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecutionLine {
    id: Option<String>,
    at: serde_json::Value,
    caller: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    plan_id: Option<String>,
    tool: String,
    #[serde(default = "yes")]
    ok: bool,
}

fn yes() -> bool {
    true
}

/// A record a plan line carries (its trim record, its answer) read with a key given twice
/// refused, as every record is ([`crate::core::json_keys`]; tester 39 F1: a send mark's
/// `id` given twice was read last-wins, and linked by the copy a first-wins reader does
/// not see). `null` is none.
fn unique_keys<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    use serde::de::DeserializeSeed;
    let value = crate::core::json_keys::UniqueValue.deserialize(d)?;
    Ok(Some(value).filter(|v| !v.is_null()))
}

fn line_error(origin: &str, line: usize, message: impl Into<String>) -> CoreError {
    CoreError::Content {
        origin: format!("{origin}: line {line}"),
        message: message.into(),
    }
}

/// A line refused for a name that breaks the one name rule: its field and why.
fn names_error(origin: &str, line: usize, (field, problem): (&str, &str)) -> CoreError {
    line_error(origin, line, format!("field '{field}' {problem}"))
}

fn timestamp(origin: &str, line: usize, value: &serde_json::Value) -> Result<i64, CoreError> {
    let parsed = match value {
        serde_json::Value::String(s) => crate::core::time::parse_timestamp(s),
        serde_json::Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("'at' {n} is not whole seconds")),
        other => Err(format!("'at' must be a timestamp, not {other}")),
    };
    let at = parsed.map_err(|m| line_error(origin, line, format!("field 'at': {m}")))?;
    // A time written as one is said as written; seconds as a number, as numbers are.
    if let serde_json::Value::String(s) = value
        && let Some(problem) = crate::core::time::timestamp_out_of_range(s, at)
    {
        return Err(line_error(origin, line, format!("field 'at' {problem}")));
    }
    int_in(
        at,
        &bounds::TIMESTAMP,
        &format!("{origin}: line {line}"),
        "at",
    )
}

fn required(origin: &str, line: usize, field: &str, value: &str) -> Result<(), CoreError> {
    if value.trim().is_empty() {
        return Err(line_error(
            origin,
            line,
            format!("field '{field}' is empty"),
        ));
    }
    Ok(())
}

/// A line that opens a JSON array: the file is an array of records (as `import litellm`
/// takes), not JSON Lines; said so rather than in the reader's words for a wrong type.
fn array_line(origin: &str, line: usize, text: &str, what: &str) -> Result<(), CoreError> {
    if text.trim_start().starts_with('[') {
        return Err(line_error(
            origin,
            line,
            format!(
                "is a JSON array; {what}s are JSON Lines, one {what} object per line (jq -c '.[]' turns an array into that)"
            ),
        ));
    }
    Ok(())
}

/// Parse one plan line (`line` is 1-based, for the error).
pub fn parse_plan_line(origin: &str, line: usize, text: &str) -> Result<PlanRecord, CoreError> {
    parse_imported_plan(origin, line, text).map(|plan| plan.record)
}

/// A plan line as an import reads it: the plan, and for a plan whose id was derived, the id
/// it falls back to when another plan holds that one and the id an earlier version gave it
/// ([`derived_plan_id`]).
pub struct ImportedPlan {
    pub record: PlanRecord,
    pub fallback_id: Option<String>,
    /// For a plan given at a part of a second: its whole-second id, which versions before
    /// 2026-11-27 gave it when no other plan of that second held it. A store holding it
    /// there has it already.
    pub earlier_id: Option<String>,
}

/// [`parse_plan_line`], keeping the fallback id an import needs.
pub fn parse_imported_plan(
    origin: &str,
    line: usize,
    text: &str,
) -> Result<ImportedPlan, CoreError> {
    array_line(origin, line, text, "plan")?;
    let raw: PlanLine =
        serde_json::from_str(text).map_err(|e| CoreError::json_line(origin, line, text, &e))?;
    let at = timestamp(origin, line, &raw.at)?;
    required(origin, line, "caller", &raw.caller)?;
    required(origin, line, "model", &raw.model)?;
    required(origin, line, "intent", &raw.intent)?;
    let outcome = match raw.outcome.as_deref() {
        None if raw.steps.is_empty() => Outcome::Failed,
        None if raw.steps.iter().any(|s| s.tool == UNKNOWN_TOOL) => Outcome::Guarded,
        None => Outcome::Ok,
        Some(s) => Outcome::parse(s).ok_or_else(|| {
            line_error(
                origin,
                line,
                format!(
                    "field 'outcome': {} is not ok, guarded or failed",
                    quoted(s)
                ),
            )
        })?,
    };
    if outcome == Outcome::Failed && raw.failure_class.is_none() {
        return Err(line_error(
            origin,
            line,
            "a failed plan needs its 'failure_class'",
        ));
    }
    if let Some(ms) = raw.duration_ms {
        int_in(
            ms,
            &bounds::DURATION_MS,
            &format!("{origin}: line {line}"),
            "duration_ms",
        )?;
    }
    if let Some(g) = &raw.compare_group {
        required(origin, line, "compare_group", g)?;
    }
    let source = match raw.source.as_deref() {
        None => PlanSource::Native,
        Some(s) => PlanSource::parse(s).ok_or_else(|| {
            line_error(
                origin,
                line,
                format!(
                    "field 'source': {} is not native, otel, litellm or sent",
                    quoted(s)
                ),
            )
        })?,
    };
    let expert_baseline = raw.expert_baseline.map(|b| {
        let mut baseline = b.0;
        baseline.steps.sort_by_key(|s| s.order);
        baseline
    });
    if let Some(problem) = names_problem(
        non_empty(&raw.id),
        non_empty(&raw.replay_of),
        &raw.model,
        &raw.caller,
        raw.failure_class.as_deref(),
        &raw.steps,
        expert_baseline.as_ref(),
    ) {
        return Err(names_error(origin, line, problem));
    }
    if let Some(problem) = plan_text_problem(raw.raw_response.as_deref(), raw.answer.as_ref()) {
        return Err(line_error(origin, line, problem));
    }
    if let Some(problem) = raw
        .answer
        .as_ref()
        .and_then(crate::core::failure::kept_answer_problem)
    {
        return Err(line_error(
            origin,
            line,
            format!("field 'answer' {problem}"),
        ));
    }
    if let Some((field, problem)) = SendMark::problem(raw.trim_record.as_ref()) {
        return Err(line_error(
            origin,
            line,
            format!("field '{field}' {problem}"),
        ));
    }
    let mut steps = raw.steps;
    steps.sort_by_key(|s| s.order);
    let at_nanos = match &raw.at {
        serde_json::Value::String(s) => crate::core::time::subsecond_nanos(s),
        _ => 0,
    };
    let given_id = raw.id.filter(|s| !s.trim().is_empty());
    // A plan given at a part of a second has an id of its own from the start, so the ids do
    // not hang on which plan of a second came first (tester 26 N1: the same lines in another
    // order gave other ids, and one store's export conflicted with, or was stored twice in,
    // the other). A whole second keeps the id it always had, and falls back to its instant
    // written out only where an earlier version gave that id to a plan at a part of the
    // second (tester 25 F1).
    let derived = |nanos| derived_plan_id(at, nanos, &raw.caller, &raw.intent);
    let (fallback_id, earlier_id) = match (&given_id, at_nanos) {
        (Some(_), _) => (None, None),
        (None, 0) => (Some(derived(Some(0))), None),
        (None, _) => (None, Some(derived(None))),
    };
    let id = given_id.unwrap_or_else(|| derived((at_nanos != 0).then_some(at_nanos)));
    let record = PlanRecord {
        id,
        at,
        at_nanos,
        caller: raw.caller,
        model: raw.model,
        intent: bounds::kept_intent(&raw.intent).into_owned(),
        steps,
        outcome,
        failure_class: raw.failure_class,
        finish_reason: raw.finish_reason,
        raw_response: raw.raw_response,
        trim_record: raw.trim_record,
        duration_ms: raw.duration_ms,
        replay_of: raw.replay_of,
        answer: raw.answer,
        arm: raw.arm,
        compare_group: raw.compare_group,
        source,
        expert_baseline,
    };
    Ok(ImportedPlan {
        record,
        fallback_id,
        earlier_id,
    })
}

/// How many bytes `value` takes written as compact JSON.
/// Why a plan's texts are more than a plan keeps, or `None`: a raw response over
/// [`bounds::PLAN_TEXT_BYTES`] (the largest reply a live call keeps), an answer written as
/// JSON over twice that (it holds the reply's text and its reasoning beside the raw
/// response). Every import checks a plan's texts here (`import plans`, `import traces`,
/// `import litellm`), so whatever one stores, `history export` then `import plans` takes back.
pub fn plan_text_problem(
    raw_response: Option<&str>,
    answer: Option<&serde_json::Value>,
) -> Option<String> {
    let over = |field: &str, bytes: usize| {
        format!(
            "field '{field}' is {bytes} bytes; a plan keeps at most {} (the largest reply a live \
             call keeps)",
            bounds::PLAN_TEXT_BYTES
        )
    };
    if let Some(text) = raw_response
        && text.len() > bounds::PLAN_TEXT_BYTES
    {
        return Some(over("raw_response", text.len()));
    }
    // Counted as written, without a copy of it: an answer may be hundreds of megabytes.
    let bytes = answer.map_or(0, json_bytes);
    (bytes > 2 * bounds::PLAN_TEXT_BYTES).then(|| over("answer", bytes))
}

fn json_bytes(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A plan line's `steps`, read one by one and refused past [`bounds::PLAN_STEPS`] before
/// the rest is read: a line's cost is bounded by the bound, not by the line.
fn plan_steps<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Step>, D::Error> {
    d.deserialize_seq(StepsVisitor("steps"))
        .map_err(|e| named("steps", e))
}

/// Steps as a list, at most [`bounds::PLAN_STEPS`]; the field names it in the refusal.
struct StepsVisitor(&'static str);

impl<'de> serde::de::Visitor<'de> for StepsVisitor {
    type Value = Vec<Step>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of steps")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Step>, A::Error> {
        let mut steps = Vec::new();
        while let Some(step) = seq
            .next_element_seed(StepSeed(self.0))
            .map_err(|e| named(&format!("{}[]", self.0), e))?
        {
            if steps.len() == bounds::PLAN_STEPS {
                return Err(serde::de::Error::custom(format!(
                    "field '{}' holds more than {} steps, the most a plan holds",
                    self.0,
                    bounds::PLAN_STEPS
                )));
            }
            steps.push(step);
        }
        Ok(steps)
    }
}

/// `error` said as a refusal of `field`, in the words every import error uses (tester 5
/// C7: "invalid type: sequence, expected u32" named no field): `field 'steps[].order' is an
/// array; expected a whole number …` once [`CoreError::json`] has read it. An error that
/// already names a field inside this one passes as it is.
fn named<E: serde::de::Error>(field: &str, error: E) -> E {
    let said = error.to_string();
    // serde_json has put the position on an error from inside; the line's error gets its own.
    let said = match said.rfind(" at line ") {
        Some(i) => &said[..i],
        None => said.as_str(),
    };
    // Only serde's words for a wrong value are named here; a field named inside, an unknown
    // field or a bound passes as it is.
    if !["invalid type: ", "invalid value: ", "invalid length "]
        .iter()
        .any(|head| said.starts_with(head))
    {
        return E::custom(said);
    }
    E::custom(format!("field '{field}' {said}"))
}

/// One step of an imported list, read field by field so a wrongly shaped one is refused
/// naming its field (`steps[].tool`, `expert_baseline.steps[].order`); `.0` is the list's
/// field. A step is an object: the derived reader would also take `[order, tool, …]`.
struct StepSeed(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for StepSeed {
    type Value = Step;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Step, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for StepSeed {
    type Value = Step;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a step (an object with 'tool')")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Step, A::Error> {
        use serde::de::Error;
        let list = self.0;
        let field = |key: &str| format!("{list}[].{key}");
        let (mut order, mut tool, mut args, mut rationale) = (None, None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            let twice = || A::Error::custom(format!("field '{}' is given twice", field(&key)));
            match key.as_str() {
                "order" if order.is_some() => return Err(twice()),
                "order" => {
                    order = Some(
                        map.next_value::<u32>()
                            .map_err(|e| named(&field("order"), e))?,
                    )
                }
                "tool" if tool.is_some() => return Err(twice()),
                "tool" => {
                    tool = Some(
                        map.next_value::<String>()
                            .map_err(|e| named(&field("tool"), e))?,
                    )
                }
                "args" if args.is_some() => return Err(twice()),
                "args" => {
                    // A key given twice in the arguments is refused, as in every record
                    // (core::json_keys).
                    let value = map.next_value_seed(crate::core::json_keys::UniqueValue)?;
                    // The bound a model's answer is held to: every stored plan obeys one rule.
                    if let Some(problem) = bounds::step_args_too_deep(&value) {
                        return Err(A::Error::custom(format!(
                            "field '{}' nests {problem}",
                            field("args")
                        )));
                    }
                    args = Some(value);
                }
                "rationale" if rationale.is_some() => return Err(twice()),
                "rationale" => {
                    rationale = Some(
                        map.next_value::<String>()
                            .map_err(|e| named(&field("rationale"), e))?,
                    )
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let missing = |key: &str| A::Error::custom(format!("field '{}' is missing", field(key)));
        Ok(Step {
            order: order.ok_or_else(|| missing("order"))?,
            tool: tool.ok_or_else(|| missing("tool"))?,
            args: args.unwrap_or(serde_json::Value::Null),
            rationale: rationale.unwrap_or_default(),
        })
    }
}

/// An `expert_baseline` field: a list of steps (as `steps` are written), or an object with
/// `steps` and optionally the `model` and `plan_id` they came from. Its steps are bounded as
/// a plan's are ([`StepsVisitor`]), read as they come.
#[derive(Debug)]
struct BaselineLine(Baseline);

/// `expert_baseline.steps` inside the object form.
struct BaselineSteps(Vec<Step>);

impl<'de> Deserialize<'de> for BaselineSteps {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(StepsVisitor("expert_baseline.steps"))
            .map(BaselineSteps)
            .map_err(|e| named("expert_baseline.steps", e))
    }
}

impl<'de> Deserialize<'de> for BaselineLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BaselineVisitor)
            .map_err(|e| named("expert_baseline", e))
    }
}

struct BaselineVisitor;

impl<'de> serde::de::Visitor<'de> for BaselineVisitor {
    type Value = BaselineLine;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of steps or an object with 'steps'")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<BaselineLine, A::Error> {
        let steps = StepsVisitor("expert_baseline").visit_seq(seq)?;
        Ok(BaselineLine(Baseline {
            model: None,
            plan_id: None,
            steps,
        }))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<BaselineLine, A::Error> {
        use serde::de::Error;
        const FIELDS: &[&str] = &["model", "plan_id", "steps"];
        let (mut model, mut plan_id, mut steps) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "model" => {
                    model = map
                        .next_value::<Option<String>>()
                        .map_err(|e| named("expert_baseline.model", e))?
                }
                "plan_id" => {
                    plan_id = map
                        .next_value::<Option<String>>()
                        .map_err(|e| named("expert_baseline.plan_id", e))?
                }
                "steps" => steps = Some(map.next_value::<BaselineSteps>()?.0),
                other => return Err(A::Error::unknown_field(other, FIELDS)),
            }
        }
        let steps =
            steps.ok_or_else(|| A::Error::custom("field 'expert_baseline' has no 'steps'"))?;
        Ok(BaselineLine(Baseline {
            model,
            plan_id,
            steps,
        }))
    }
}

/// An optional text that says something: an empty one stands for none (an empty `id` is
/// derived, as it always was).
fn non_empty(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|t| !t.trim().is_empty())
}

/// Parse one execution line.
pub fn parse_execution_line(
    origin: &str,
    line: usize,
    text: &str,
) -> Result<ExecutionRecord, CoreError> {
    array_line(origin, line, text, "execution")?;
    let raw: ExecutionLine =
        serde_json::from_str(text).map_err(|e| CoreError::json_line(origin, line, text, &e))?;
    let at = timestamp(origin, line, &raw.at)?;
    required(origin, line, "caller", &raw.caller)?;
    required(origin, line, "tool", &raw.tool)?;
    // The session and a given id are names too: shown on a line, bounded as MCP bounds them.
    if let Some(problem) = crate::core::budget::first_name_problem(
        [("caller", raw.caller.as_str()), ("tool", raw.tool.as_str())]
            .into_iter()
            .chain(raw.plan_id.as_deref().map(|p| ("plan_id", p)))
            .chain(non_empty(&raw.session).map(|s| ("session", s)))
            .chain(non_empty(&raw.id).map(|i| ("id", i))),
    ) {
        return Err(names_error(origin, line, problem));
    }
    // A derived id keeps the part of a second the time was written with: two real calls of
    // one tool 0.4 s apart are two executions (tester 6 F13: they were one, "already
    // present"); the same report sent again, however its time is spelled, is still one. A
    // whole second hashes as it always did, so stored ids still match a re-import.
    let nanos = match &raw.at {
        serde_json::Value::String(s) => crate::core::time::subsecond_nanos(s),
        _ => 0,
    };
    let at_key = if nanos == 0 {
        at.to_string()
    } else {
        format!("{at}.{nanos:09}")
    };
    let id = raw.id.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| {
        format!(
            "e-{}",
            short_sha(&format!(
                "{at_key}\n{}\n{}\n{}\n{}\n{}",
                raw.caller,
                raw.session.as_deref().unwrap_or(""),
                raw.plan_id.as_deref().unwrap_or(""),
                raw.tool,
                raw.ok
            ))
        )
    });
    Ok(ExecutionRecord {
        id,
        at,
        at_nanos: nanos,
        caller: raw.caller,
        session: raw.session,
        plan_id: raw.plan_id,
        tool: raw.tool,
        ok: raw.ok,
    })
}

/// 16 hex digits of SHA-256.
/// The id of a plan line given without one: from its second, caller and intent, so the same
/// report sent again, however its time is spelled, is one plan. `nanos` adds the part of a
/// second a plan was given at (tester 18 F8: two plans 0.4 s apart were one id with other
/// content, and the whole file was refused; tester 26 N1: which of them took the whole-second
/// id hung on the order they came in). `Some(0)` is a whole-second plan's fallback, for a
/// store where an earlier version gave its id to a plan at a part of that second.
pub fn derived_plan_id(at: i64, nanos: Option<u32>, caller: &str, intent: &str) -> String {
    let at_key = match nanos {
        Some(nanos) => format!("{at}.{nanos:09}"),
        None => at.to_string(),
    };
    format!("p-{}", short_sha(&format!("{at_key}\n{caller}\n{intent}")))
}

pub fn short_sha(text: &str) -> String {
    crate::core::gate::content_ref(text.as_bytes())
}

/// DESIGN §2.9: 16 hex of sha256 of the trimmed, lower-cased intent. Identical asks only.
pub fn intent_sha(intent: &str) -> String {
    short_sha(&intent.trim().to_lowercase())
}

/// The content words a shape is made of: stemmed, stop words and bare numbers dropped,
/// sorted, distinct. "Draft a blog post about the launch" and "the launch: draft blog posts"
/// share them.
pub fn shape_words(intent: &str) -> Vec<String> {
    let mut words: Vec<String> = text::terms(intent)
        .into_iter()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The version of the word rules shapes are made by ([`text::terms`]). A store keeps the
/// version its plans were grouped by and, opened for writing under another, groups them
/// again once: a rule that reads a word differently ("right now" gives no "right") would
/// otherwise leave older plans apart from newer ones with the same words, and out of the
/// past steps a new intent looks up by its shape. Raise it whenever `text::terms` reads any
/// text differently.
pub const SHAPE_RULES: u32 = 6;

/// The key similar intents group under: a hash of [`shape_words`].
pub fn shape(intent: &str) -> String {
    shape_and_words(intent).0
}

/// [`shape`] and the [`shape_words`] it hashes, joined by spaces (as a group's summary
/// keeps them), from one reading of the intent.
pub fn shape_and_words(intent: &str) -> (String, String) {
    let words = shape_words(intent).join(" ");
    (short_sha(&words), words)
}

/// How much a past plan's tools count for the ranking prior, by what became of it. The
/// gateway wrote plans but never asked this: a plan the agent ignored or worked around is
/// evidence against its tools, not for them. `planned_ok` is whether any planned tool ran
/// successfully ([`planned_ran_ok`]): a `partial` plan whose planned tools were tried and
/// only failed counts for nothing, so failures never lift a tool.
pub fn prior_weight(outcome: Outcome, drift: Drift, planned_ok: bool) -> f64 {
    let base = match drift {
        Drift::Followed => 1.0,
        Drift::Partial if planned_ok => 0.4,
        Drift::Partial => 0.0,
        Drift::Ignored => -0.2,
        Drift::Diverged => -0.6,
        Drift::Failed | Drift::Replay => 0.0,
    };
    if outcome == Outcome::Guarded {
        base * 0.8
    } else {
        base
    }
}

/// What the tools executed *instead* are worth when a plan diverged: the agent knew better.
pub const DIVERGED_EXECUTED_WEIGHT: f64 = 0.6;

/// A model's real outcomes, as the store counts them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelOutcomes {
    pub model: String,
    pub plans: u64,
    pub ok: u64,
    pub guarded: u64,
    pub failed: u64,
    pub followed: u64,
    pub partial: u64,
    pub ignored: u64,
    pub diverged: u64,
    /// Replays of this model's plans, left out of every count above: they are not what
    /// production saw.
    pub replays: u64,
    /// Failure class → count, most frequent first.
    pub failure_causes: Vec<(String, u64)>,
}

impl ModelOutcomes {
    pub fn failed_rate(&self) -> f64 {
        ratio(self.failed, self.plans)
    }

    /// Of the plans that came back, the share the agent followed.
    pub fn followed_rate(&self) -> f64 {
        ratio(self.followed, self.plans - self.failed)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A failed share in whole percent as the tier rule's evidence is shown: rounded up, as a
/// followed share is rounded down ([`followed_percent`]), so a figure shown never meets a
/// threshold the exact share misses (tester 18 F5: 2 of 39 failed, 5.13%, read "5% failed"
/// beside the B the rule gives above 5%). The shares are ratios of counts: a hair of slack
/// keeps an exact 5% (2 of 40) at 5.
pub fn failed_percent(rate: f64) -> u64 {
    (rate * 100.0 - 1e-9).ceil().max(0.0) as u64
}

/// A followed share in whole percent, rounded down (see [`failed_percent`]).
pub fn followed_percent(rate: f64) -> u64 {
    (rate * 100.0 + 1e-9).floor().max(0.0) as u64
}

/// Fewer plans than this and no tier is suggested.
pub const TIER_MIN_EVIDENCE: u64 = 20;

/// The rule, as shown beside every suggestion.
pub const TIER_RULE: &str = "A when ≤5% of plans failed and ≥75% of returned plans were followed; B when ≤20% failed and ≥50% followed; else C; at least 20 plans";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierSuggestion {
    /// `None` when there is too little evidence.
    pub tier: Option<Tier>,
    pub evidence: u64,
    pub why: String,
}

/// The tier a model's own outcomes argue for ([`TIER_RULE`]).
pub fn suggest_tier(m: &ModelOutcomes) -> TierSuggestion {
    let failed = m.failed_rate();
    let followed = m.followed_rate();
    let evidence = m.plans;
    if evidence < TIER_MIN_EVIDENCE {
        return TierSuggestion {
            tier: None,
            evidence,
            why: format!("only {evidence} plans; {TIER_MIN_EVIDENCE} needed"),
        };
    }
    let tier = if failed <= 0.05 && followed >= 0.75 {
        Tier::A
    } else if failed <= 0.20 && followed >= 0.50 {
        Tier::B
    } else {
        Tier::C
    };
    TierSuggestion {
        tier: Some(tier),
        evidence,
        why: format!(
            "{}% failed, {}% followed over {evidence} plans",
            failed_percent(failed),
            followed_percent(followed)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 13 T13-12: a 300 MiB raw response was imported (1.25 GB of memory), and one
    /// past SQLite's limit failed with SQLite's words, naming neither line nor field.
    #[test]
    fn a_plan_line_with_a_text_past_the_reply_cap_is_refused_by_line_and_field() {
        let big = "r".repeat(bounds::PLAN_TEXT_BYTES + 1);
        let text = format!(
            "{{\"at\":1000,\"caller\":\"c\",\"model\":\"m\",\"intent\":\"i\",\
             \"steps\":[],\"outcome\":\"failed\",\"failure_class\":\"protocol\",\
             \"raw_response\":\"{big}\"}}"
        );
        let err = parse_plan_line("f", 2, &text).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "f: line 2: field 'raw_response' is {} bytes; a plan keeps at most {} (the \
                 largest reply a live call keeps)",
                bounds::PLAN_TEXT_BYTES + 1,
                bounds::PLAN_TEXT_BYTES
            )
        );
        let at_cap = text.replace(&big, &big[1..]);
        assert!(parse_plan_line("f", 2, &at_cap).is_ok());
    }

    /// Tester 13 T13-9: an import took any JSON as a plan's answer; a usage figure no live
    /// call keeps then made offline replay drop the kept tool calls. A line whose answer is
    /// not one ctxconsole keeps is refused naming its line and field.
    #[test]
    fn a_plan_line_whose_answer_is_not_a_kept_answer_is_refused() {
        let line = |answer: &str| {
            format!(
                "{{\"id\":\"h\",\"at\":1000,\"caller\":\"c\",\"model\":\"m\",\"intent\":\"i\",\
                 \"steps\":[{{\"order\":1,\"tool\":\"web.search\"}}],\"answer\":{answer}}}"
            )
        };
        let live = r#"{"reply":{"content":null,"tool_calls":[{"id":"a","name":"web.search","arguments":"{}"}],
            "usage":{"prompt_tokens":5,"completion_tokens":1}},"finish":"tool_calls","status":200}"#;
        let traffic = r#"{"source":"litellm","tool_calls":[],"usage":null,"spend":0.1}"#;
        let costed = r#"{"reply":{},"cost":{"usd":0.25,"prices":{"input":2.0,"output":8.0},"from_usage":false}}"#;
        let from_usage = r#"{"reply":{"usage":{"prompt_tokens":1000,"completion_tokens":50,"cached_tokens":200}},
            "cost":{"usd":0.0021,"prices":{"input":2.0,"cached_input":0.5,"output":8.0},"from_usage":true}}"#;
        for ok in [live, traffic, "null", costed, from_usage] {
            assert!(parse_plan_line("f", 3, &line(ok)).is_ok(), "{ok}");
        }
        for (bad, said) in [
            (
                r#"{"reply":{"tool_calls":"notalist"}}"#,
                "field 'answer' 'reply' is not a chat answer",
            ),
            (
                r#"{"reply":{"usage":{"prompt_tokens":-5,"completion_tokens":1e30}}}"#,
                "field 'answer' 'reply' is not a chat answer",
            ),
            (
                r#"{"anything":[1]}"#,
                "field 'answer' holds neither a 'reply'",
            ),
            (r#"[1]"#, "field 'answer' is not an object"),
            (
                r#"{"source":"otel","usage":{"prompt_tokens":"x"}}"#,
                "field 'answer' 'usage' does not read",
            ),
            // A kept cost (tester 34 F13) reads as one, and is a sum of money.
            (
                r#"{"reply":{},"cost":{"usd":"cheap"}}"#,
                "field 'answer' 'cost' does not read",
            ),
            (
                r#"{"reply":{},"cost":[1, 2]}"#,
                "'cost' is a JSON array where an object {\"usd\", \"prices\", \"from_usage\"} was expected",
            ),
            (
                r#"{"reply":{},"cost":{"usd":-1.0,"prices":{"input":1.0},"from_usage":false}}"#,
                "'cost.usd' is -1; expected a number from 0 to",
            ),
            // Tester 35 F1: a figure its own usage and prices do not make, a price no row
            // may have, a cost "from the usage" of an answer without one.
            (
                r#"{"reply":{"usage":{"prompt_tokens":1000,"completion_tokens":50,"cached_tokens":200}},
                   "cost":{"usd":999.0,"prices":{"input":2.0,"cached_input":0.5,"output":8.0},"from_usage":true}}"#,
                "'cost.usd' is 999, where its usage at its prices makes 0.0021",
            ),
            (
                r#"{"reply":{},"cost":{"usd":0.1,"prices":{"input":1e300},"from_usage":false}}"#,
                "'cost.prices.input' is 1e300; expected a number from 0 to 1000000",
            ),
            (
                r#"{"reply":{},"cost":{"usd":0.1,"prices":{"input":1.0},"from_usage":true}}"#,
                "'cost.from_usage' is true, but the answer holds no usage with a prompt count",
            ),
        ] {
            let err = parse_plan_line("f", 3, &line(bad)).unwrap_err().to_string();
            assert!(err.starts_with("f: line 3: "), "{err}");
            assert!(err.contains(said), "{bad}: {err}");
        }
    }

    #[test]
    fn drift_classes() {
        use Drift::*;
        let plan = ["memory.store", "blog.draft"];
        let c = |e: &[&str]| Drift::classify(Outcome::Ok, &plan, &ok(e));
        assert_eq!(c(&["memory.store", "web.search", "blog.draft"]), Followed);
        assert_eq!(c(&["blog.draft", "memory.store"]), Partial);
        assert_eq!(c(&["memory.store"]), Partial);
        assert_eq!(c(&[]), Ignored);
        assert_eq!(c(&["image.generate"]), Diverged);
        assert_eq!(
            Drift::classify(Outcome::Failed, &[], &ok(&["image.generate"])),
            Failed
        );
        // Nothing planned that could run: anything executed went its own way.
        assert_eq!(
            Drift::classify(Outcome::Guarded, &[], &ok(&["fs.read"])),
            Diverged
        );
    }

    fn ok<'a>(tools: &[&'a str]) -> Vec<Ran<'a>> {
        tools.iter().map(|&tool| Ran { tool, ok: true }).collect()
    }

    fn ran<'a>(runs: &[(&'a str, bool)]) -> Vec<Ran<'a>> {
        runs.iter().map(|&(tool, ok)| Ran { tool, ok }).collect()
    }

    /// Tester 6 F8: a failed execution is not a step executed. A plan whose only step ran
    /// and failed was `followed`, counted as such by `history --models` and the prior.
    #[test]
    fn a_failed_execution_does_not_follow_a_step() {
        use Drift::*;
        let one = ["repo.clone"];
        let c = |plan: &[&str], e: &[(&str, bool)]| Drift::classify(Outcome::Ok, plan, &ran(e));
        assert_eq!(c(&one, &[("repo.clone", false)]), Partial);
        assert_eq!(
            c(&one, &[("repo.clone", false), ("repo.clone", true)]),
            Followed
        );
        let two = ["memory.store", "blog.draft"];
        assert_eq!(
            c(&two, &[("memory.store", true), ("blog.draft", false)]),
            Partial
        );
        assert_eq!(
            c(&two, &[("memory.store", true), ("blog.draft", true)]),
            Followed
        );
        // A failed run of another tool is still another tool.
        assert_eq!(c(&one, &[("fs.read", false)]), Diverged);
        assert!(!planned_ran_ok(&one, &ran(&[("repo.clone", false)])));
        assert!(planned_ran_ok(
            &one,
            &ran(&[("repo.clone", false), ("repo.clone", true)])
        ));
        assert!(!planned_ran_ok(&one, &ran(&[("fs.read", true)])));
        // Partial with nothing planned run well counts for nothing in the prior.
        assert_eq!(prior_weight(Outcome::Ok, Partial, false), 0.0);
        assert!(prior_weight(Outcome::Ok, Partial, true) > 0.0);
    }

    /// Tester 6 F9: an execution dated before its plan did not follow it; a few seconds of
    /// clock skew are allowed.
    #[test]
    fn an_execution_before_its_plan_is_not_after_it() {
        assert!(after_plan((100, 0), (100, 0)));
        assert!(after_plan((100, 0), (100 - EXECUTION_CLOCK_SKEW_SECS, 0)));
        assert!(!after_plan(
            (100, 0),
            (100 - EXECUTION_CLOCK_SKEW_SECS - 1, 0)
        ));
        assert!(!after_plan((100, 0), (40, 0)));
        assert!(after_plan((i64::MIN, 0), (i64::MIN, 0)));
        assert!(after_plan((i64::MAX, 999_999_999), (i64::MAX, 999_999_999)));
        // Tester 7 T7-6: 10:08:00.900 against 10:07:57.500 is 3.4 s before: more than 3 s,
        // though whole seconds say 3; 10:08:00.400 against 10:07:57.500 is 2.9 s.
        assert!(!after_plan((100, 900_000_000), (97, 500_000_000)));
        assert!(after_plan((100, 400_000_000), (97, 500_000_000)));
        assert!(after_plan((100, 900_000_000), (97, 900_000_000)));
    }

    #[test]
    fn complexity_from_steps() {
        let step = |t: &str| Step {
            order: 1,
            tool: t.into(),
            args: serde_json::Value::Null,
            rationale: String::new(),
        };
        let pipe = |t: &str| t.starts_with("builtin.");
        assert_eq!(Complexity::of(&[], pipe), Complexity::SingleAction);
        assert_eq!(
            Complexity::of(&[step("fs.read")], pipe),
            Complexity::SingleAction
        );
        assert_eq!(
            Complexity::of(&[step("builtin.page-digest")], pipe),
            Complexity::PipelineDirect
        );
        assert_eq!(
            Complexity::of(&[step("fs.read"), step("builtin.page-digest")], pipe),
            Complexity::PackChain
        );
    }

    #[test]
    fn keys_group_similar_intents_and_only_identical_share_a_sha() {
        assert_eq!(intent_sha("  Draft a Blog "), intent_sha("draft a blog"));
        assert_eq!(intent_sha("draft a blog").len(), 16);
        assert_ne!(intent_sha("draft a blog"), intent_sha("draft the blog"));
        assert_eq!(
            shape("Draft a blog post about the launch"),
            shape("the launch: draft blog posts")
        );
        assert_eq!(
            shape("summarise report 12"),
            shape("summarise the report 13")
        );
        assert_ne!(shape("draft a blog"), shape("publish a blog"));
    }

    #[test]
    fn plan_lines_parse_or_name_the_problem() {
        let p = parse_plan_line(
            "plans.jsonl",
            3,
            r#"{"at":"2026-10-03T12:00:00Z","caller":"c","model":"m","intent":"x","steps":[{"order":2,"tool":"b"},{"order":1,"tool":"unknown","rationale":"gap: no such tool"}]}"#,
        )
        .unwrap();
        assert_eq!(p.outcome, Outcome::Guarded);
        assert_eq!(p.steps[0].tool, "unknown");
        assert!(p.id.starts_with("p-"));
        assert_eq!(p.planned_tools(), vec!["b"]);
        let again = parse_plan_line(
            "plans.jsonl",
            3,
            r#"{"at":1791028800,"caller":"c","model":"m","intent":"x","steps":[{"order":1,"tool":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(
            again.id, p.id,
            "the derived id does not depend on the steps"
        );
        for (text, needle) in [
            (
                r#"{"at":"soon","caller":"c","model":"m","intent":"x"}"#,
                "field 'at'",
            ),
            (
                r#"{"at":1,"caller":"","model":"m","intent":"x"}"#,
                "'caller' is empty",
            ),
            (
                r#"{"at":1,"caller":"c","model":"m","intent":"x"}"#,
                "failure_class",
            ),
            (
                r#"{"at":1,"caller":"c","model":"m","intent":"x","outcome":"meh"}"#,
                "'meh'",
            ),
            (
                r#"{"at":1,"caller":"c","model":"m","intent":"x","stepz":[]}"#,
                "stepz",
            ),
            (r#"{"at":1,"#, "line 7"),
        ] {
            let err = parse_plan_line("plans.jsonl", 7, text)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(needle) && err.contains("line 7"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn out_of_range_numbers_name_file_line_and_field() {
        let plan = |extra: &str| {
            format!(
                r#"{{"caller":"c","model":"m","intent":"x","steps":[{{"order":1,"tool":"b"}}],{extra}}}"#
            )
        };
        for (extra, field, says) in [
            (r#""at":1,"duration_ms":-1"#, "duration_ms", "is -1"),
            (
                r#""at":1,"duration_ms":604800001"#,
                "duration_ms",
                "is 604800001",
            ),
            (r#""at":-1"#, "at", "is -1"),
            // A time written as text is said as written (tester 20 F6: "is -1").
            (
                r#""at":"1969-12-31T23:59:59Z""#,
                "at",
                "is out of range: 1969-12-31T23:59:59Z is before 1970-01-01T00:00:00Z",
            ),
            (r#""at":253402300800"#, "at", "is 253402300800"),
            (
                r#""at":"99999999999999999""#,
                "at",
                "is out of range: 99999999999999999 is after 9999-12-31T23:59:59Z",
            ),
        ] {
            let err = parse_plan_line("plans.jsonl", 4, &plan(extra))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("plans.jsonl: line 4: field '{field}' {says}")),
                "{extra}: {err}"
            );
        }
        let ok = parse_plan_line(
            "p",
            1,
            &plan(r#""at":"9999-12-31T23:59:59Z","duration_ms":0"#),
        );
        assert_eq!(ok.map(|p| p.at), Ok(253_402_300_799));
        let err = parse_execution_line("e.jsonl", 2, r#"{"at":-7,"caller":"c","tool":"t"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("e.jsonl: line 2: field 'at' is -7"),
            "{err}"
        );
    }

    /// Tester 38 F5: a send's mark in a plan line's trim record is checked as every field
    /// is — a list, an id breaking the one name rule, a start past the timestamps a plan
    /// holds were imported without a word and linked to nothing.
    #[test]
    fn a_malformed_send_mark_is_refused_naming_its_field() {
        let plan = |mark: &str| {
            format!(
                r#"{{"at":1764300000,"caller":"c","model":"m","intent":"x","source":"sent","steps":[{{"order":1,"tool":"b"}}],"trim_record":{{"send":{mark}}}}}"#
            )
        };
        let ok = r#"{"id":"1764300000-1a2b3c4d","started":1764300000,"with_baseline":true}"#;
        assert!(parse_plan_line("p", 1, &plan(ok)).is_ok());
        let long_id = format!(
            r#"{{"id":"{}\u0007","started":1,"with_baseline":true}}"#,
            "x".repeat(100_000)
        );
        for (mark, says) in [
            (
                "[1,2]".to_string(),
                "field 'trim_record.send' is [1,2]; expected the mark of its send",
            ),
            (
                r#"{"id":"s","started":1e30,"with_baseline":true}"#.into(),
                "field 'trim_record.send.started' is 1e+30; expected a whole number from 0 to \
                 253402300799",
            ),
            (
                r#"{"id":"s","started":-1,"with_baseline":true}"#.into(),
                "field 'trim_record.send.started' is -1; expected a whole number",
            ),
            (
                r#"{"id":"s","with_baseline":true}"#.into(),
                "field 'trim_record.send.started' is missing",
            ),
            (
                r#"{"id":7,"started":1,"with_baseline":true}"#.into(),
                "field 'trim_record.send.id' is 7; expected the send's id",
            ),
            (
                long_id,
                "field 'trim_record.send.id' is longer than 512 bytes",
            ),
            (
                r#"{"id":"s\u0007","started":1,"with_baseline":true}"#.into(),
                "field 'trim_record.send.id' holds a control, bidi or invisible character",
            ),
            (
                r#"{"id":"s","started":1,"with_baseline":"yes"}"#.into(),
                r#"field 'trim_record.send.with_baseline' is "yes"; expected true or false"#,
            ),
            (
                r#"{"id":"s","started":1,"with_baseline":true,"x":1}"#.into(),
                "field 'trim_record.send.x' is not a field of a send's mark",
            ),
        ] {
            let err = parse_plan_line("plans.jsonl", 3, &plan(&mark))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("plans.jsonl: line 3: {says}")),
                "{says}: {err}"
            );
            assert!(err.len() < 400, "{err}");
        }
        // Tester 39 F1: a key given twice in the mark, or the mark given twice, is refused
        // as any record's is, not read last-wins.
        for (mark, key) in [
            (
                r#"{"id":"s","id":"t","started":1,"with_baseline":true}"#,
                "id",
            ),
            (
                r#"{"id":"s","started":1,"started":5,"with_baseline":true}"#,
                "started",
            ),
            (
                r#"{"id":"x"},"send":{"id":"s","started":1,"with_baseline":true}"#,
                "send",
            ),
        ] {
            let err = parse_plan_line("plans.jsonl", 3, &plan(mark))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("plans.jsonl: line 3") && err.contains(&format!("`{key}`")),
                "{mark}: {err}"
            );
        }
    }

    /// Execution lines are held to the one name rule as plan lines are, the first bad name
    /// named by its field, in the same words.
    #[test]
    fn execution_names_follow_the_one_name_rule() {
        for (caller, tool, said) in [
            (" c", "t", "field 'caller' has spaces around it"),
            (
                "c",
                "fs.read\u{202e}",
                "field 'tool' holds a control, bidi or invisible character",
            ),
            ("c\nforged", "t\t", "field 'caller' holds a control"),
        ] {
            let line = serde_json::json!({"at": 1, "caller": caller, "tool": tool}).to_string();
            let err = parse_execution_line("e", 3, &line).unwrap_err().to_string();
            assert!(err.starts_with(&format!("e: line 3: {said}")), "{err}");
            assert_eq!(
                crate::core::budget::first_name_problem([("caller", caller), ("tool", tool)])
                    .map(|(field, problem)| format!("field '{field}' {problem}")),
                Some(err.trim_start_matches("e: line 3: ").to_string())
            );
        }
    }

    /// A plan line nested past the reader's limit says so, through the steps' own reader
    /// too (tester 7 T7-5: "recursion limit exceeded").
    #[test]
    fn a_plan_line_nested_too_deep_says_so() {
        let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
        let line = format!(
            r#"{{"at":"2026-10-03T12:00:05Z","caller":"c","model":"m","intent":"x","outcome":"ok","steps":[{{"order":1,"tool":"t","args":{{"x":{deep}}}}}]}}"#
        );
        let err = parse_plan_line("p.jsonl", 1, &line)
            .unwrap_err()
            .to_string();
        assert!(err.contains(crate::core::error::too_deep()), "{err}");
    }

    /// Tester 7 T7-13: a JSON array of plans (as `import litellm` takes) was "line 1,
    /// column 1: found an object; expected a string", no word of JSON Lines.
    #[test]
    fn a_json_array_of_plans_or_executions_is_told_they_are_json_lines() {
        let plan =
            r#"{"at":"2026-10-03T12:00:05Z","caller":"c","model":"m","intent":"x","steps":[]}"#;
        for (line, text) in [
            (1, format!("[{plan}]")),
            (1, "[".to_string()),
            (3, format!("  [{plan},")),
        ] {
            let err = parse_plan_line("p.json", line, &text)
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!(
                    "p.json: line {line}: is a JSON array; plans are JSON Lines, one plan object per line (jq -c '.[]' turns an array into that)"
                )
            );
        }
        let err = parse_execution_line(
            "e.json",
            1,
            r#"[{"at":"2026-10-03T12:00:05Z","caller":"c","tool":"t"}]"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("executions are JSON Lines, one execution object per line"),
            "{err}"
        );
    }

    #[test]
    fn execution_ids_are_stable_for_reimport() {
        let line = r#"{"at":"2026-10-03T12:00:05Z","caller":"c","tool":"fs.read"}"#;
        let a = parse_execution_line("e", 1, line).unwrap();
        let b = parse_execution_line("e", 9, line).unwrap();
        assert_eq!(a.id, b.id);
        assert!(a.ok);
        // The id a whole second has always had: stores keep matching their re-imports.
        assert_eq!(
            a.id,
            format!("e-{}", short_sha("1791028805\nc\n\n\nfs.read\ntrue"))
        );
        let at = |t: &str| {
            let line = format!(r#"{{"at":"{t}","caller":"c","tool":"fs.read"}}"#);
            parse_execution_line("e", 1, &line).unwrap().id
        };
        // One instant, however it is spelled, is one execution.
        assert_eq!(at("2026-10-03T12:00:05.000Z"), a.id);
        assert_eq!(at("2026-10-03T13:00:05+01:00"), a.id);
        assert_eq!(
            at("2026-10-03T12:00:05.300Z"),
            at("2026-10-03T13:00:05.3+01:00")
        );
        // Calls within one second are apart (tester 6 F13).
        let within = [
            at("2026-10-03T12:00:05.300Z"),
            at("2026-10-03T12:00:05.700Z"),
            at("2026-10-03T12:00:05.900Z"),
        ];
        assert!(within.iter().all(|id| *id != a.id));
        assert!(within[0] != within[1] && within[1] != within[2] && within[0] != within[2]);
    }

    #[test]
    fn tier_suggestion_follows_the_stated_rule() {
        let mut m = ModelOutcomes {
            model: "x".into(),
            plans: 10,
            ..Default::default()
        };
        assert_eq!(suggest_tier(&m).tier, None);
        m.plans = 100;
        m.failed = 3;
        m.followed = 80;
        assert_eq!(suggest_tier(&m).tier, Some(Tier::A));
        m.failed = 15;
        m.followed = 50;
        assert_eq!(suggest_tier(&m).tier, Some(Tier::B));
        m.failed = 40;
        assert_eq!(suggest_tier(&m).tier, Some(Tier::C));
        assert_eq!(suggest_tier(&m).evidence, 100);
    }

    /// Tester 18 F5: the evidence was rounded to the nearest percent, so shares just past a
    /// threshold read as meeting it: "5% failed, 100% followed" and "0% failed, 75%
    /// followed" beside a B under a rule that gives A at ≤5% and ≥75%.
    #[test]
    fn the_evidence_shown_never_meets_a_threshold_the_exact_share_misses() {
        let outcomes = |plans, failed, followed| ModelOutcomes {
            model: "x".into(),
            plans,
            failed,
            followed,
            ..Default::default()
        };
        let s = suggest_tier(&outcomes(39, 2, 37));
        assert_eq!(s.tier, Some(Tier::B));
        assert_eq!(s.why, "6% failed, 100% followed over 39 plans");
        let s = suggest_tier(&outcomes(79, 0, 59));
        assert_eq!(s.tier, Some(Tier::B));
        assert_eq!(s.why, "0% failed, 74% followed over 79 plans");
        // Exactly on a threshold stays on it.
        let s = suggest_tier(&outcomes(40, 2, 38));
        assert_eq!(s.tier, Some(Tier::A));
        assert_eq!(s.why, "5% failed, 100% followed over 40 plans");
        let s = suggest_tier(&outcomes(80, 0, 60));
        assert_eq!(s.tier, Some(Tier::A));
        assert_eq!(s.why, "0% failed, 75% followed over 80 plans");
    }

    #[test]
    fn prior_weights_rank_outcomes() {
        let f = prior_weight(Outcome::Ok, Drift::Followed, true);
        let p = prior_weight(Outcome::Ok, Drift::Partial, true);
        let d = prior_weight(Outcome::Ok, Drift::Diverged, false);
        assert!(f > p && p > 0.0 && d < 0.0);
        assert!(prior_weight(Outcome::Guarded, Drift::Followed, true) < f);
    }
}
