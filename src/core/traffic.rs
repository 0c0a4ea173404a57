//! A gateway's real traffic as plans and executions: OpenTelemetry GenAI spans (OTLP JSON,
//! as the Collector's file exporter writes them) and LiteLLM proxy spend logs. Pure: the
//! importer hands in text, this hands back records; the store keeps them.
//!
//! A chat answer becomes a plan the way a live answer does: [`read_reply`] with
//! [`steps_from`] (the decoder `replay` uses), so the outcome and failure class of an
//! imported plan mean what they mean on a native one.

use serde_json::{Value, json};
use std::collections::BTreeMap;

use crate::core::bounds::{self, finite_in, int_in};
use crate::core::error::CoreError;
use crate::core::failure::{Reply, ToolCall, read_reply, tool_calls_of};
use crate::core::history::{ExecutionRecord, Outcome, PlanRecord, Step};
use crate::core::plan::steps_from;

/// Where a stored plan came from (defined with the plan record, which carries it).
pub use crate::core::history::PlanSource as TrafficSource;

/// Stored as a plan's intent when the source did not record the user's input.
pub const INPUT_NOT_RECORDED: &str = "(input not recorded)";

/// The failure class of a plan whose answer the source did not record (OpenTelemetry
/// instrumentations capture message content only when asked; LiteLLM keeps prompts and
/// responses in its spend logs only with `store_prompts_in_spend_logs`): nothing to decode,
/// so it cannot be ok, and its own cause keeps it apart from answers that were bad.
pub const OUTPUT_NOT_RECORDED: &str = "output_not_recorded";

/// What a streamed traffic import read beside the plans it handed on: the records read
/// (spans or rows), and the executions, linked, once the last line is read.
#[derive(Debug, Default)]
pub struct StreamRead {
    pub records: usize,
    pub executions: Vec<ExecutionRecord>,
    /// `execute_tool` spans of a trace with chat spans, none of which started before them:
    /// linked to no plan (an execution cannot follow a plan made after it).
    pub before_every_chat: usize,
}

fn content_error(origin: String, message: impl Into<String>) -> CoreError {
    CoreError::Content {
        origin,
        message: message.into(),
    }
}

/// Steps, outcome and failure class of an answer, read as `replay` reads one.
fn plan_of(reply: &Reply) -> (Vec<Step>, Outcome, Option<String>) {
    let reading = read_reply(reply, steps_from);
    match reading.value {
        Some(steps) => (steps, Outcome::Ok, None),
        None => (
            Vec::new(),
            Outcome::Failed,
            Some(
                reading
                    .failure
                    .map_or("no_plan", |f| f.class.as_str())
                    .to_string(),
            ),
        ),
    }
}

/// The text of a message's content: a string, or the text parts of a list.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| {
                    p.get("content")
                        .or_else(|| p.get("text"))
                        .and_then(Value::as_str)
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The last user message of a message list (OpenAI `content`, or GenAI `parts`).
fn last_user_text(messages: &Value) -> Option<String> {
    messages
        .as_array()?
        .iter()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .find_map(|m| {
            m.get("content")
                .or_else(|| m.get("parts"))
                .and_then(text_of)
        })
        .map(|t| bounds::kept_intent(t.trim()).into_owned())
        .filter(|t| !t.is_empty())
}

/// A `…UnixNano` field (a string in OTLP JSON, or a number) as (Unix seconds, Unix
/// milliseconds), the seconds inside the history's timestamp bounds.
fn unix_nanos(origin: &str, field: &str, value: Option<&Value>) -> Result<(i64, i64), CoreError> {
    let nanos = match value {
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    }
    .ok_or_else(|| {
        content_error(
            origin.to_string(),
            format!("field '{field}' is missing or not a whole number of nanoseconds"),
        )
    })?;
    let secs = int_in(
        (nanos / 1_000_000_000) as i64,
        &bounds::TIMESTAMP,
        origin,
        field,
    )?;
    Ok((secs, (nanos / 1_000_000) as i64))
}

// ---------------------------------------------------------------------------------------
// OpenTelemetry

/// An OTLP AnyValue as plain JSON: `{"stringValue":…}` → string, `{"intValue":"123"}` (a
/// string in OTLP JSON) → number, arrays and key-value lists recursively.
fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return Value::Null;
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map_or(Value::Null, Value::from),
            other => other.clone(),
        };
    }
    if let Some(x) = o.get("doubleValue").or_else(|| o.get("boolValue")) {
        return x.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        let values = a.get("values").and_then(Value::as_array);
        return Value::Array(values.into_iter().flatten().map(any_value).collect());
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values")));
    }
    Value::Null
}

/// OTLP `attributes` (`[{"key":…, "value":AnyValue}]`) as a JSON object.
fn attributes(list: Option<&Value>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for kv in list.and_then(Value::as_array).into_iter().flatten() {
        if let (Some(k), Some(v)) = (kv.get("key").and_then(Value::as_str), kv.get("value")) {
            out.insert(k.to_string(), any_value(v));
        }
    }
    out
}

/// A JSON-typed attribute of a span, or of the first of its events that has it: recorded as
/// a JSON string by most instrumentations, or as a structured value; read as
/// [`json_value`] reads it (text that is not JSON is an error naming the span and the
/// attribute).
fn span_json(
    position: &str,
    attrs: &serde_json::Map<String, Value>,
    events: &[serde_json::Map<String, Value>],
    key: &str,
) -> Result<Option<Value>, CoreError> {
    let what = format!("attribute '{key}'");
    for source in std::iter::once(attrs).chain(events) {
        if let Some(v) = json_value(position, &what, source.get(key))? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

fn token_count(
    origin: &str,
    attrs: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, CoreError> {
    match attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = v.as_u64().ok_or_else(|| {
                content_error(
                    origin.to_string(),
                    format!("field '{key}' is {v}, not a count"),
                )
            })?;
            int_in(n as usize, &bounds::TOKENS, origin, key).map(|n| Some(n as u64))
        }
    }
}

/// What a chat span recorded of its answer: the output messages (attribute, or an event
/// carrying them), as text and tool calls, and whether any output was recorded.
fn chat_reply(output: Option<Value>, attrs: &serde_json::Map<String, Value>) -> (Reply, bool) {
    let finish = attrs
        .get("gen_ai.response.finish_reasons")
        .and_then(|f| f.as_array().and_then(|a| a.first()).or(Some(f)))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut reply = Reply {
        finish_reason: finish,
        ..Reply::default()
    };
    let Some(Value::Array(messages)) = output else {
        return (reply, false);
    };
    let mut text = Vec::new();
    for m in &messages {
        if reply.finish_reason.is_none() {
            reply.finish_reason = m
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        for part in m
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match part.get("type").and_then(Value::as_str) {
                Some("text") => text.extend(part.get("content").and_then(Value::as_str)),
                Some("tool_call") => reply.tool_calls.push(ToolCall {
                    id: part.get("id").and_then(Value::as_str).map(str::to_string),
                    name: part
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    arguments: match part.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(v) => v.to_string(),
                    },
                }),
                _ => {}
            }
        }
    }
    if !text.is_empty() {
        reply.content = Some(text.join("\n"));
    }
    (reply, true)
}

/// One span as read, before plans and executions are linked.
struct Span {
    position: String,
    trace: String,
    span: String,
    start: i64,
    end_ms: Option<i64>,
    start_ms: i64,
    caller: String,
    attrs: serde_json::Map<String, Value>,
    events: Vec<serde_json::Map<String, Value>>,
    ok: bool,
}

fn hex_id(position: &str, field: &str, v: Option<&Value>) -> Result<String, CoreError> {
    let id = v.and_then(Value::as_str).map(str::trim).unwrap_or("");
    if id.is_empty() {
        return Err(content_error(
            position.to_string(),
            format!("span has no '{field}'"),
        ));
    }
    if id.len() > 64
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(content_error(
            position.to_string(),
            format!("'{field}' is not an id (hex digits expected)"),
        ));
    }
    Ok(id.to_ascii_lowercase())
}

/// Spans of one OTLP JSON line (`line` is 1-based); a span is named in errors by its line
/// and its index among the line's spans.
fn spans_of_line(
    origin: &str,
    line: usize,
    text: &str,
    out: &mut Vec<Span>,
) -> Result<(), CoreError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| CoreError::json_line(origin, line, text, &e))?;
    let Some(resource_spans) = doc.get("resourceSpans").and_then(Value::as_array) else {
        return Err(content_error(
            format!("{origin}: line {line}"),
            "not an OTLP JSON traces line (no 'resourceSpans' list)",
        ));
    };
    let mut index = 0usize;
    for rs in resource_spans {
        let resource = attributes(rs.get("resource").and_then(|r| r.get("attributes")));
        let caller = resource
            .get("service.name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("otel")
            .to_string();
        for ss in rs
            .get("scopeSpans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for s in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                index += 1;
                let position = format!("{origin}: line {line}, span {index}");
                let trace = hex_id(&position, "traceId", s.get("traceId"))?;
                let span = hex_id(&position, "spanId", s.get("spanId"))?;
                let (start, start_ms) =
                    unix_nanos(&position, "startTimeUnixNano", s.get("startTimeUnixNano"))?;
                // An end time is optional: without a readable one there is no duration.
                let end_ms = unix_nanos(&position, "endTimeUnixNano", s.get("endTimeUnixNano"))
                    .ok()
                    .map(|(_, ms)| ms);
                // OTLP status code 2 is ERROR (JSON may spell the enum by name).
                let code = s.get("status").and_then(|st| st.get("code"));
                let ok = !matches!(code, Some(c) if c == 2 || c == "STATUS_CODE_ERROR");
                let events = s
                    .get("events")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|e| attributes(e.get("attributes")))
                    .collect();
                out.push(Span {
                    position,
                    trace,
                    span,
                    start,
                    start_ms,
                    end_ms,
                    caller: caller.clone(),
                    attrs: attributes(s.get("attributes")),
                    events,
                    ok,
                });
            }
        }
    }
    Ok(())
}

/// The plan id of an OpenTelemetry chat span.
pub fn otel_plan_id(trace: &str, span: &str) -> String {
    format!("otel-{trace}-{span}")
}

/// OTLP JSON lines read one at a time, so a file of any size is never held whole: chat
/// spans are plans, handed back as their line is read; `execute_tool` spans are
/// executions, kept as a few fields each until every chat is known ([`OtelReader::finish`]),
/// then linked to the latest chat span of the same trace that started at or before them
/// (none when every chat of the trace started after it: an execution cannot follow a plan
/// made after it, and those are counted). Other spans are counted and left.
#[derive(Debug, Default)]
pub struct OtelReader {
    /// trace → (start, plan id) of its chat spans.
    chats: BTreeMap<String, Vec<(i64, String)>>,
    tools: Vec<ToolSpan>,
    /// Spans read, for the report.
    records: usize,
}

/// An `execute_tool` span waiting for its trace's chats.
#[derive(Debug)]
struct ToolSpan {
    trace: String,
    span: String,
    start: i64,
    start_ms: i64,
    caller: String,
    session: Option<String>,
    tool: String,
    ok: bool,
}

impl OtelReader {
    /// The plans of one line's chat spans, in order; its tool spans are kept for
    /// [`finish`](Self::finish).
    pub fn read_line(
        &mut self,
        origin: &str,
        line: usize,
        text: &str,
    ) -> Result<Vec<PlanRecord>, CoreError> {
        let mut spans = Vec::new();
        spans_of_line(origin, line, text, &mut spans)?;
        self.records += spans.len();
        let mut plans = Vec::new();
        for s in &spans {
            match operation(s) {
                Some("chat") => {
                    let plan = chat_plan(s)?;
                    self.chats
                        .entry(s.trace.clone())
                        .or_default()
                        .push((s.start_ms, plan.id.clone()));
                    plans.push(plan);
                }
                Some("execute_tool") => self.tools.push(tool_span(s)?),
                _ => {}
            }
        }
        Ok(plans)
    }

    /// The spans read, and every execution linked to its chat, in file order.
    pub fn finish(mut self) -> StreamRead {
        for list in self.chats.values_mut() {
            list.sort();
        }
        let chats = &self.chats;
        let mut before_every_chat = 0;
        let executions = self
            .tools
            .into_iter()
            .map(|t| {
                let chats_of_trace = chats.get(&t.trace).filter(|list| !list.is_empty());
                let plan_id = chats_of_trace.and_then(|list| {
                    list.iter()
                        .rev()
                        .find(|(start, _)| *start <= t.start_ms)
                        .map(|(_, id)| id.clone())
                });
                if chats_of_trace.is_some() && plan_id.is_none() {
                    before_every_chat += 1;
                }
                ExecutionRecord {
                    id: format!("otel-{}-{}", t.trace, t.span),
                    at: t.start,
                    at_nanos: millis_part(t.start_ms),
                    caller: t.caller,
                    session: t.session,
                    plan_id,
                    tool: t.tool,
                    ok: t.ok,
                }
            })
            .collect();
        StreamRead {
            records: self.records,
            executions,
            before_every_chat,
        }
    }
}

/// A span's `gen_ai.operation.name`.
fn operation(s: &Span) -> Option<&str> {
    s.attrs.get("gen_ai.operation.name").and_then(Value::as_str)
}

/// The plan a chat span records.
fn chat_plan(s: &Span) -> Result<PlanRecord, CoreError> {
    let model = s
        .attrs
        .get("gen_ai.request.model")
        .or_else(|| s.attrs.get("gen_ai.response.model"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            content_error(
                s.position.clone(),
                "chat span has no 'gen_ai.request.model'",
            )
        })?
        .to_string();
    let output = span_json(&s.position, &s.attrs, &s.events, "gen_ai.output.messages")?;
    let (reply, recorded) = chat_reply(output, &s.attrs);
    let (steps, outcome, failure_class) = if recorded {
        plan_of(&reply)
    } else {
        (
            Vec::new(),
            Outcome::Failed,
            Some(OUTPUT_NOT_RECORDED.to_string()),
        )
    };
    let input = span_json(&s.position, &s.attrs, &s.events, "gen_ai.input.messages")?;
    let intent = intent_of(&s.position, "attribute 'gen_ai.input.messages'", input)?;
    let usage = json!({
        "prompt_tokens": token_count(&s.position, &s.attrs, "gen_ai.usage.input_tokens")?,
        "completion_tokens": token_count(&s.position, &s.attrs, "gen_ai.usage.output_tokens")?,
    });
    let duration_ms = match s.end_ms {
        Some(end) if end >= s.start_ms => Some(int_in(
            end - s.start_ms,
            &bounds::DURATION_MS,
            &s.position,
            "endTimeUnixNano",
        )?),
        _ => None,
    };
    let id = otel_plan_id(&s.trace, &s.span);
    let plan = PlanRecord {
        id,
        at: s.start,
        at_nanos: millis_part(s.start_ms),
        caller: s.caller.clone(),
        model,
        intent,
        steps,
        outcome,
        failure_class,
        finish_reason: reply.finish_reason.clone(),
        raw_response: reply.content.clone(),
        trim_record: None,
        duration_ms,
        replay_of: None,
        answer: Some(json!({
            "source": "otel",
            "trace_id": s.trace,
            "span_id": s.span,
            "conversation_id": s.attrs.get("gen_ai.conversation.id"),
            "finish_reason": reply.finish_reason,
            "tool_calls": reply.tool_calls,
            "usage": usage,
        })),
        arm: None,
        compare_group: None,
        source: TrafficSource::Otel,
        expert_baseline: None,
    };
    if let Some((field, problem)) = plan.names_problem() {
        return Err(content_error(
            s.position.clone(),
            format!("the plan's {field} {problem}"),
        ));
    }
    Ok(plan)
}

/// What an `execute_tool` span keeps until its trace's chats are known.
fn tool_span(s: &Span) -> Result<ToolSpan, CoreError> {
    let tool = s
        .attrs
        .get("gen_ai.tool.name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            content_error(
                s.position.clone(),
                "execute_tool span has no 'gen_ai.tool.name'",
            )
        })?
        .to_string();
    Ok(ToolSpan {
        trace: s.trace.clone(),
        span: s.span.clone(),
        start: s.start,
        start_ms: s.start_ms,
        caller: s.caller.clone(),
        session: s
            .attrs
            .get("gen_ai.conversation.id")
            .and_then(Value::as_str)
            .map(str::to_string),
        tool,
        ok: s.ok,
    })
}

// ---------------------------------------------------------------------------------------
// LiteLLM

/// A JSON value recorded as itself or as its JSON text (a spend log column, the proxy's
/// database export writing them as text; a span attribute, most instrumentations writing
/// them as strings). Absent, null, empty text and an empty placeholder (`{}`, `[]`: content
/// not stored) are `None`; text that is not JSON is an error naming the position and `what`
/// (`field 'messages'`, `attribute 'gen_ai.input.messages'`), never passed over.
fn json_value(position: &str, what: &str, v: Option<&Value>) -> Result<Option<Value>, CoreError> {
    let value = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => {
            serde_json::from_str(s).map_err(|e| CoreError::json_within(position, what, s, &e))?
        }
        Some(other) => other.clone(),
    };
    let placeholder = match &value {
        Value::Null => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    Ok((!placeholder).then_some(value))
}

/// A JSON column of a SpendLogs row, read as [`json_value`] reads it.
fn json_column(position: &str, row: &Value, field: &str) -> Result<Option<Value>, CoreError> {
    json_value(position, &format!("field '{field}'"), row.get(field))
}

/// What a value is, for an error: `42`, `"text"` (clipped), `an object`, `a list`.
fn shown(v: &Value) -> String {
    match v {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "a list".into(),
        other => crate::core::text::clip(&other.to_string(), 40),
    }
}

/// The user's input: the last user message of a message list (`what` names where it was
/// recorded), or [`INPUT_NOT_RECORDED`] when none was. A value there but not a list of
/// messages is an error naming the position and `what`.
fn intent_of(position: &str, what: &str, messages: Option<Value>) -> Result<String, CoreError> {
    let Some(messages) = messages else {
        return Ok(INPUT_NOT_RECORDED.to_string());
    };
    let Value::Array(list) = &messages else {
        return Err(content_error(
            position.to_string(),
            format!("{what} is {}, not a list of messages", shown(&messages)),
        ));
    };
    if let Some((i, item)) = list.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(content_error(
            position.to_string(),
            format!("{what} item {} is {}, not a message", i + 1, shown(item)),
        ));
    }
    Ok(last_user_text(&messages).unwrap_or_else(|| INPUT_NOT_RECORDED.to_string()))
}

fn row_time(position: &str, field: &str, v: Option<&Value>) -> Result<Option<i64>, CoreError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let text = v.as_str().ok_or_else(|| {
        content_error(
            position.to_string(),
            format!("field '{field}' is {v}, not a time"),
        )
    })?;
    let ms = crate::core::time::parse_timestamp_millis(text)
        .map_err(|m| content_error(position.to_string(), format!("field '{field}': {m}")))?;
    int_in(ms.div_euclid(1000), &bounds::TIMESTAMP, position, field)?;
    Ok(Some(ms))
}

fn row_count(position: &str, row: &Value, field: &str) -> Result<Option<u64>, CoreError> {
    match row.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = v
                .as_u64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .ok_or_else(|| {
                    content_error(
                        position.to_string(),
                        format!("field '{field}' is {v}, not a count"),
                    )
                })?;
            int_in(n as usize, &bounds::TOKENS, position, field).map(|n| Some(n as u64))
        }
    }
}

/// The most a single request is taken to have cost, in USD.
const SPEND_USD: std::ops::RangeInclusive<f64> = 0.0..=1_000_000.0;

/// One SpendLogs row (`position` names it in errors: a line, or an index in an array).
pub fn litellm_row(position: &str, row: &Value) -> Result<PlanRecord, CoreError> {
    if !row.is_object() {
        return Err(content_error(
            position.to_string(),
            "a spend log row must be an object",
        ));
    }
    let str_field = |k: &str| {
        row.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let request_id = str_field("request_id").ok_or_else(|| {
        content_error(
            position.to_string(),
            "field 'request_id' is missing or empty",
        )
    })?;
    let model = str_field("model")
        .or_else(|| str_field("model_group"))
        .ok_or_else(|| content_error(position.to_string(), "field 'model' is missing or empty"))?;
    let start = row_time(position, "startTime", row.get("startTime"))?
        .ok_or_else(|| content_error(position.to_string(), "field 'startTime' is missing"))?;
    let end = row_time(position, "endTime", row.get("endTime"))?;
    let duration_ms = match end {
        Some(end) if end >= start => Some(int_in(
            end - start,
            &bounds::DURATION_MS,
            position,
            "endTime",
        )?),
        _ => None,
    };
    let spend = match row.get("spend") {
        None | Some(Value::Null) => None,
        Some(v) => Some(finite_in(
            v.as_f64().ok_or_else(|| {
                content_error(
                    position.to_string(),
                    format!("field 'spend' is {v}, not a number"),
                )
            })?,
            &SPEND_USD,
            position,
            "spend",
        )?),
    };
    let usage = json!({
        "prompt_tokens": row_count(position, row, "prompt_tokens")?,
        "completion_tokens": row_count(position, row, "completion_tokens")?,
        "total_tokens": row_count(position, row, "total_tokens")?,
    });
    let intent = intent_of(
        position,
        "field 'messages'",
        json_column(position, row, "messages")?,
    )?;
    let response = json_column(position, row, "response")?;
    let choice = response
        .as_ref()
        .and_then(|r| r.get("choices"))
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let message = choice.and_then(|c| c.get("message"));
    let reply = Reply {
        content: message.and_then(|m| m.get("content")).and_then(text_of),
        reasoning: message
            .and_then(|m| m.get("reasoning_content"))
            .and_then(Value::as_str)
            .map(str::to_string),
        refusal: message
            .and_then(|m| m.get("refusal"))
            .and_then(Value::as_str)
            .map(str::to_string),
        finish_reason: choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_calls: message.map(tool_calls_of).unwrap_or_default(),
        usage: None,
        id: None,
    };
    // A failed call logs an error status and no choices: no answer came back.
    let failed_call = str_field("status").is_some_and(|s| s != "success");
    let (steps, outcome, mut failure_class) = plan_of(&reply);
    if failed_call && outcome == Outcome::Failed {
        failure_class = Some("http_error".to_string());
    } else if choice.is_none() && outcome == Outcome::Failed {
        failure_class = Some(OUTPUT_NOT_RECORDED.to_string());
    }
    let caller = str_field("end_user")
        .or_else(|| str_field("user"))
        .or(json_column(position, row, "metadata")?.and_then(|m| {
            m.get("user_api_key_alias")
                .and_then(Value::as_str)
                .map(str::to_string)
        }))
        .unwrap_or_else(|| "litellm".to_string());
    let record = PlanRecord {
        id: format!("litellm-{request_id}"),
        at: start.div_euclid(1000),
        at_nanos: millis_part(start),
        caller,
        model,
        intent,
        steps,
        outcome,
        failure_class,
        finish_reason: reply.finish_reason.clone(),
        raw_response: reply.content.clone(),
        trim_record: None,
        duration_ms,
        replay_of: None,
        answer: Some(json!({
            "source": "litellm",
            "request_id": request_id,
            "finish_reason": reply.finish_reason,
            "tool_calls": reply.tool_calls,
            "usage": usage,
            "spend": spend,
            "session_id": str_field("session_id"),
        })),
        arm: None,
        compare_group: None,
        source: TrafficSource::Litellm,
        expert_baseline: None,
    };
    if let Some((field, problem)) = record.names_problem() {
        return Err(content_error(
            position.to_string(),
            format!("the plan's {field} {problem}"),
        ));
    }
    Ok(record)
}

/// The part of a second past a time in Unix milliseconds, in nanoseconds.
fn millis_part(ms: i64) -> u32 {
    u32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one file brought, read whole: plans and executions, in file order.
    #[derive(Debug)]
    struct Traffic {
        plans: Vec<PlanRecord>,
        executions: Vec<ExecutionRecord>,
        records: usize,
        before_every_chat: usize,
    }

    /// [`OtelReader`] over every line, its plans kept.
    fn read_otel<'a>(
        origin: &str,
        lines: impl IntoIterator<Item = (usize, &'a str)>,
    ) -> Result<Traffic, CoreError> {
        let mut reader = OtelReader::default();
        let mut plans = Vec::new();
        for (line, text) in lines {
            plans.extend(reader.read_line(origin, line, text)?);
        }
        let read = reader.finish();
        Ok(Traffic {
            plans,
            executions: read.executions,
            records: read.records,
            before_every_chat: read.before_every_chat,
        })
    }

    fn span(trace: &str, id: &str, start: u64, attrs: Value) -> Value {
        json!({"traceId": trace, "spanId": id, "startTimeUnixNano": start.to_string(),
               "endTimeUnixNano": (start + 500_000_000).to_string(), "attributes": attrs})
    }

    fn line(spans: Vec<Value>) -> String {
        json!({"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "agent"}}]},
            "scopeSpans": [{"spans": spans}]}]})
        .to_string()
    }

    fn chat(tool: &str) -> Value {
        let out = json!([{"role": "assistant", "parts": [
            {"type": "tool_call", "name": tool, "arguments": {}}]}]);
        json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": out.to_string()}},
        ])
    }

    fn tool(name: &str) -> Value {
        json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": name}},
        ])
    }

    const S: u64 = 1_791_028_800_000_000_000;

    #[test]
    fn executions_link_to_the_latest_chat_of_their_trace_that_started_before_them() {
        let text = line(vec![
            span("aa", "01", S, chat("first")),
            span("aa", "02", S + 10_000_000_000, chat("second")),
            span("aa", "03", S + 5_000_000_000, tool("first")),
            span("aa", "04", S + 11_000_000_000, tool("second")),
            span("bb", "05", S, tool("orphan")),
            // Tester 6 F9: a tool span that started before every chat of its trace was
            // linked to the trace's first chat, and made it `followed`.
            span("cc", "06", S + 5_000_000_000, chat("later")),
            span("cc", "07", S, tool("later")),
        ]);
        let t = read_otel("f", [(1, text.as_str())]).unwrap();
        assert_eq!(t.records, 7);
        assert_eq!(t.plans.len(), 3);
        assert_eq!(t.before_every_chat, 1);
        assert_eq!(t.plans[0].id, "otel-aa-01");
        assert_eq!(t.plans[0].at, 1_791_028_800);
        assert_eq!(t.plans[0].duration_ms, Some(500));
        assert_eq!(t.plans[0].steps[0].tool, "first");
        assert_eq!(
            t.plans[0].answer.as_ref().unwrap()["usage"]["prompt_tokens"],
            12
        );
        let links: Vec<_> = t.executions.iter().map(|e| e.plan_id.as_deref()).collect();
        assert_eq!(links, [Some("otel-aa-01"), Some("otel-aa-02"), None, None]);
    }

    #[test]
    fn a_bad_count_or_time_names_the_span() {
        let mut attrs = chat("x");
        attrs
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "gen_ai.usage.output_tokens", "value": {"stringValue": "many"}}));
        let text = line(vec![span("aa", "01", S, attrs)]);
        let err = read_otel("f", [(4, text.as_str())])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f: line 4, span 1"), "{err}");
        let text = line(vec![
            json!({"traceId": "aa", "spanId": "01", "startTimeUnixNano": "-5"}),
        ]);
        let err = read_otel("f", [(1, text.as_str())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("startTimeUnixNano"), "{err}");
    }

    #[test]
    fn a_spend_log_row_reads_naive_times_as_utc_and_bounds_the_spend() {
        let row = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00.250",
            "endTime": "2026-10-03 12:00:01.000", "spend": 0.5, "prompt_tokens": 3,
            "messages": "[{\"role\":\"user\",\"content\":\"hi there\"}]"});
        let p = litellm_row("f: row 1", &row).unwrap();
        assert_eq!((p.at, p.duration_ms), (1_791_028_800, Some(750)));
        assert_eq!(p.intent, "hi there");
        assert_eq!(p.caller, "litellm");
        assert_eq!(p.answer.as_ref().unwrap()["spend"], 0.5);
        let mut bad = row.clone();
        bad["spend"] = json!(-1.0);
        let err = litellm_row("f: row 2", &bad).unwrap_err().to_string();
        assert!(err.starts_with("f: row 2: field 'spend'"), "{err}");
        // Names follow the one name rule: a line break in the user forges table rows.
        let mut bad = row.clone();
        bad["user"] = json!("alice\nFORGED user");
        let err = litellm_row("f: row 3", &bad).unwrap_err().to_string();
        assert!(err.starts_with("f: row 3: the plan's caller"), "{err}");
        assert_eq!(TrafficSource::parse("otel"), Some(TrafficSource::Otel));
        // No response kept (the proxy's default): its own cause, not a bad answer.
        assert_eq!(p.failure_class.as_deref(), Some(OUTPUT_NOT_RECORDED));
    }

    #[test]
    fn a_chat_span_without_output_is_not_recorded_rather_than_a_bad_answer() {
        let attrs = json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}},
        ]);
        let text = line(vec![span("aa", "01", S, attrs)]);
        let t = read_otel("f", [(1, text.as_str())]).unwrap();
        assert_eq!(t.plans[0].outcome, Outcome::Failed);
        assert_eq!(
            t.plans[0].failure_class.as_deref(),
            Some(OUTPUT_NOT_RECORDED)
        );
        assert_eq!(t.plans[0].finish_reason.as_deref(), Some("stop"));
        assert_eq!(t.plans[0].intent, INPUT_NOT_RECORDED);
    }
}
