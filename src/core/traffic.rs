//! A gateway's real traffic as plans and executions: OpenTelemetry GenAI spans (OTLP JSON,
//! as the Collector's file exporter writes them) and LiteLLM proxy spend logs. Pure: the
//! importer hands in text, this hands back records; the store keeps them.
//!
//! A chat answer becomes a plan the way a live answer does: [`read_reply_owning`] with
//! [`steps_of`] (the decoder `replay` uses), so the outcome and failure class of an
//! imported plan mean what they mean on a native one.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

use crate::core::bounds::{self, finite_in, int_in};
use crate::core::error::CoreError;
use crate::core::failure::{Reply, read_reply_owning};
use crate::core::history::{ExecutionRecord, Outcome, PlanRecord, Step};
use crate::core::json_keys::UniqueValue;
use crate::core::plan::steps_of;
use crate::core::terminal_text::quoted_value;

/// A visitor's scalars and null, of another shape than expected: read through, `$absent`
/// kept. Strings apart ([`otherwise`] has them too): some visitors read those.
macro_rules! scalars_otherwise {
    ($absent:expr) => {
        fn visit_bool<Er: de::Error>(self, _: bool) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        fn visit_i64<Er: de::Error>(self, _: i64) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        fn visit_u64<Er: de::Error>(self, _: u64) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        // A `Value` (a column or attribute given as a value) hands a number past 64 bits
        // over as one of these; the parser, as a map (`arbitrary_precision`).
        fn visit_i128<Er: de::Error>(self, _: i128) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        fn visit_u128<Er: de::Error>(self, _: u128) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        fn visit_f64<Er: de::Error>(self, _: f64) -> Result<Self::Value, Er> {
            Ok($absent)
        }
        fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
            Ok($absent)
        }
    };
}

/// What a visitor of a value of another shape than expected makes of a scalar, a string or
/// null: read through, `$absent` kept.
macro_rules! otherwise {
    ($absent:expr) => {
        scalars_otherwise!($absent);
        fn visit_str<Er: de::Error>(self, _: &str) -> Result<Self::Value, Er> {
            Ok($absent)
        }
    };
}

/// A visitor's `visit_map` for a value expected to be a list: read through, `$absent` kept.
macro_rules! map_otherwise {
    ($absent:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<Skip, Skip>()?.is_some() {}
            Ok($absent)
        }
    };
}

/// A visitor's `visit_seq` for a value expected to be an object: read through, `$absent`
/// kept.
macro_rules! seq_otherwise {
    ($absent:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok($absent)
        }
    };
}

/// An object's key as its index among `names` (`None`: another key), not copied.
#[derive(Clone, Copy)]
struct KeyIn<'n>(&'n [&'n str]);

impl<'de> DeserializeSeed<'de> for KeyIn<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIn<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<Er: de::Error>(self, key: &str) -> Result<Self::Value, Er> {
        Ok(self.0.iter().position(|n| *n == key))
    }
}

/// The keys of one object that its reader uses (`names`), each allowed once: the one rule
/// of every traffic reader. JSON leaves a repeated key to the reader — serde_json keeps the
/// last, jq's `first`, many log viewers and Postgres `json` the first — so a row or span
/// that says two things would be stored as one while an operator's tools show the other
/// (tester 31 F1). It is refused, naming the key, as `import plans` refuses one. Keys read
/// past are not counted: they change nothing stored.
struct KeysOnce<'n> {
    names: &'n [&'n str],
    /// Bit `i`: `names[i]` was read.
    seen: u64,
}

impl<'n> KeysOnce<'n> {
    fn of(names: &'n [&'n str]) -> Self {
        debug_assert!(names.len() <= 64, "a reader names at most 64 keys");
        KeysOnce { names, seen: 0 }
    }

    /// The next key as its index among the names (`Some(None)`: another key; `None`: the
    /// object ended), or an error for a named key met a second time.
    fn next<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
    ) -> Result<Option<Option<usize>>, A::Error> {
        let Some(key) = map.next_key_seed(KeyIn(self.names))? else {
            return Ok(None);
        };
        if let Some(index) = key.filter(|i| *i < 64) {
            let bit = 1u64 << index;
            if self.seen & bit != 0 {
                return Err(de::Error::custom(format_args!(
                    "duplicate field `{}`",
                    self.names[index]
                )));
            }
            self.seen |= bit;
        }
        Ok(Some(key))
    }

    /// [`next`](Self::next), the key as its name.
    fn next_name<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
    ) -> Result<Option<Option<&'n str>>, A::Error> {
        let names = self.names;
        Ok(self.next(map)?.map(|key| key.map(|i| names[i])))
    }
}

mod messages;

use messages::{
    Calls, Completion, Input, InputMessages, OutputMessages, Recorded, StrField, read_recorded,
};

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
/// (spans or rows), and the executions (`execute_tool` spans), each with its trace, handed
/// on after the last line is read. The store links each to its chat ([`chat_of_run`]):
/// it holds every chat of the trace, whichever file brought it.
#[derive(Debug, Default)]
pub struct StreamRead {
    pub records: usize,
    pub executions: Executions,
}

fn content_error(origin: String, message: impl Into<String>) -> CoreError {
    CoreError::Content {
        origin,
        message: message.into(),
    }
}

/// Steps, outcome and failure class of an answer, read as `replay` reads one; `calls` are
/// its tool calls, those past the bound of steps counted, not kept (then it is no plan, as
/// an answer with more steps than a plan holds is).
fn plan_of(mut reply: Reply, calls: Calls) -> (Reply, usize, Vec<Step>, Outcome, Option<String>) {
    reply.tool_calls = calls.kept;
    let not_kept = calls.not_kept;
    let reading = read_reply_owning(&reply, not_kept, steps_of);
    let (steps, outcome, class) = match reading.value {
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
    };
    (reply, not_kept, steps, outcome, class)
}

/// A plan's answer as stored: `fields`, with what `reply` keeps as a live answer's `reply`
/// keeps it when it holds any — the reasoning ([`REASONING`]), the choices besides the one
/// kept ([`OTHER_CHOICES`]), what the answer held and was not read ([`NOT_READ`]) — and the
/// count of tool calls past the bound of steps (read past, not kept) when there were any.
fn answer_with(mut fields: Value, calls_not_kept: usize, reply: &Reply) -> Value {
    if let Value::Object(o) = &mut fields {
        if calls_not_kept > 0 {
            o.insert(TOOL_CALLS_NOT_KEPT.to_string(), Value::from(calls_not_kept));
        }
        if let Some(reasoning) = reply.reasoning.as_deref().filter(|r| !r.is_empty()) {
            o.insert(REASONING.to_string(), Value::from(reasoning));
        }
        if reply.other_choices > 0 {
            o.insert(OTHER_CHOICES.to_string(), Value::from(reply.other_choices));
        }
        if !reply.not_read.is_empty() {
            o.insert(NOT_READ.to_string(), json!(reply.not_read));
        }
    }
    fields
}

/// The key of a stored answer keeping its reasoning (a span's `reasoning` parts, a spend
/// log's `reasoning_content`), as a live answer's `reply.reasoning` keeps it.
pub const REASONING: &str = "reasoning";

/// The key of a stored answer naming what its content held and was not read (a part that
/// is not text, content of another type), as a live answer's `reply.not_read` names it.
pub const NOT_READ: &str = "not_read";

/// The key of a stored answer counting the choices it held besides the one kept (a span's
/// output messages past the first), as a live answer's `reply.other_choices` counts them.
pub const OTHER_CHOICES: &str = "other_choices";

/// The key of a stored answer counting its tool calls past [`bounds::PLAN_STEPS`]: the
/// answer's `tool_calls` holds the first that many, the rest were read past and not kept.
pub const TOOL_CALLS_NOT_KEPT: &str = "tool_calls_not_kept";

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
/// string in OTLP JSON) → number, arrays and key-value lists recursively. Taken by value:
/// a long string (a span's messages, recorded as JSON text) is moved, not copied. An
/// `intValue` string that is not a 64-bit integer written plainly (`"1e3"`, `" 97"`,
/// `"18446744073709551615"`) is left as written, `{"intValue": …}`, for the span to refuse
/// naming its attribute ([`unreadable_int`]); it had become null, the figure dropped without
/// a word (tester 23 F5).
/// The fields of an OTLP `AnyValue`, of which a value holds one.
const ANY_VALUE_KINDS: &[&str] = &[
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
];

fn any_value(v: Value) -> Value {
    let Value::Object(mut o) = v else {
        return Value::Null;
    };
    if let Some(s) = o.remove("stringValue") {
        return s;
    }
    if let Some(i) = o.remove("intValue") {
        return match i {
            Value::String(s) => match s.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => json!({ "intValue": s }),
            },
            other => other,
        };
    }
    if let Some(x) = o.remove("doubleValue").or_else(|| o.remove("boolValue")) {
        return x;
    }
    if let Some(mut a) = o.remove("arrayValue") {
        let values = match a.get_mut("values").map(Value::take) {
            Some(Value::Array(values)) => values,
            _ => Vec::new(),
        };
        return Value::Array(values.into_iter().map(any_value).collect());
    }
    if let Some(mut kv) = o.remove("kvlistValue") {
        let mut out = serde_json::Map::new();
        if let Some(Value::Array(list)) = kv.get_mut("values").map(Value::take) {
            for kv in list {
                if let Value::Object(mut kv) = kv
                    && let (Some(Value::String(k)), Some(v)) =
                        (kv.remove("key"), kv.remove("value"))
                {
                    out.insert(k, any_value(v));
                }
            }
        }
        return Value::Object(out);
    }
    Value::Null
}

/// The first `intValue` in `v` (an attribute read by [`any_value`]) that is not a 64-bit
/// integer, as written.
fn unreadable_int(v: &Value) -> Option<&str> {
    match v {
        Value::Object(o) if o.len() == 1 => match o.get("intValue") {
            Some(Value::String(s)) => Some(s),
            _ => o.values().find_map(unreadable_int),
        },
        Value::Object(o) => o.values().find_map(unreadable_int),
        Value::Array(a) => a.iter().find_map(unreadable_int),
        _ => None,
    }
}

/// A span's attributes, as plain JSON (only those [`SPAN_ATTRIBUTES`] names).
type Attributes = serde_json::Map<String, Value>;

/// The span attributes a span's reading uses; every other attribute is read past (checked
/// as JSON, never kept), so a line costs about its own size, not a tree of its values.
const SPAN_ATTRIBUTES: &[&str] = &[
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.conversation.id",
    "gen_ai.tool.name",
];

/// The resource attribute a span's reading uses: who called.
const RESOURCE_ATTRIBUTES: &[&str] = &["service.name"];

/// A JSON-typed attribute of a span, or of the first of its events that has it: recorded as
/// a JSON string by most instrumentations, or as a structured value; read by `seed` as
/// [`read_recorded`] reads it (text that is not JSON is an error naming the span and the
/// attribute).
fn span_read<T, S: messages::Reads<T>>(
    position: &str,
    attrs: &Attributes,
    events: &[Attributes],
    key: &str,
    seed: impl Fn() -> S,
) -> Result<Option<T>, CoreError> {
    let what = format!("attribute '{key}'");
    for source in std::iter::once(attrs).chain(events) {
        if let Some(v) = read_recorded(position, &what, source.get(key), seed())? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}
fn token_count(origin: &str, attrs: &Attributes, key: &str) -> Result<Option<u64>, CoreError> {
    match attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = v.as_u64().ok_or_else(|| {
                content_error(
                    origin.to_string(),
                    format!("field '{key}' is {}, not a count", quoted_value(v)),
                )
            })?;
            bounds::int_in_written(n as usize, v, &bounds::TOKENS, origin, key)
                .map(|n| Some(n as u64))
        }
    }
}

/// What a chat span recorded of its answer: the output messages (attribute, or an event
/// carrying them), as a live reply (text, reasoning, other choices, what was not read) and
/// tool calls, and whether any output was recorded. The finish reason is
/// `gen_ai.response.finish_reasons`' first, else the answer's (the first message's).
fn chat_reply(output: Option<messages::Output>, attrs: &Attributes) -> (Reply, Calls, bool) {
    let finish = attrs
        .get("gen_ai.response.finish_reasons")
        .and_then(|f| f.as_array().and_then(|a| a.first()).or(Some(f)))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(output) = output else {
        let reply = Reply {
            finish_reason: finish,
            ..Reply::default()
        };
        return (reply, Calls::default(), false);
    };
    let reply = Reply {
        finish_reason: finish.or(output.finish_reason),
        content: output.text,
        reasoning: output.reasoning,
        other_choices: output.other_choices,
        not_read: output.not_read,
        ..Reply::default()
    };
    (reply, output.calls, true)
}

/// One span as read, before plans and executions are linked.
struct Span {
    position: String,
    trace: Arc<str>,
    span: Box<str>,
    start: i64,
    end_ms: Option<i64>,
    start_ms: i64,
    caller: Arc<str>,
    attrs: Attributes,
    events: Vec<Attributes>,
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

/// The outcome and failure class of a call its source logged as failed (a LiteLLM row whose
/// status is not `success`, a chat span whose status is ERROR): failed, `http_error`, whatever
/// answer it logged (kept in the plan's answer and steps, read as they decode).
fn failed_call_outcome() -> (Outcome, Option<String>) {
    (
        Outcome::Failed,
        Some(
            crate::core::failure::FailureClass::HttpError
                .as_str()
                .to_string(),
        ),
    )
}

/// Whether a span's `status.code` says it did not fail: OTLP's 0 (unset) and 1 (ok), or
/// none, do; 2 (error) does not (OTLP JSON may spell the enum by name, `STATUS_CODE_UNSET`,
/// `STATUS_CODE_OK`, `STATUS_CODE_ERROR`). Any other code is refused, quoted: `"ERROR"`, `"2"`
/// or 7 had been read as a success (tester 23 F7).
fn status_ok(position: &str, code: Option<&Value>) -> Result<bool, CoreError> {
    match code {
        None | Some(Value::Null) => Ok(true),
        Some(c) if *c == 0 || *c == 1 || *c == "STATUS_CODE_UNSET" || *c == "STATUS_CODE_OK" => {
            Ok(true)
        }
        Some(c) if *c == 2 || *c == "STATUS_CODE_ERROR" => Ok(false),
        Some(c) => {
            let written = quoted_value(c);
            Err(content_error(
                position.to_string(),
                format!(
                    "field 'status.code' is {written}; expected 0, 1 or 2 (STATUS_CODE_UNSET, \
                     STATUS_CODE_OK or STATUS_CODE_ERROR)"
                ),
            ))
        }
    }
}

/// A call's duration in milliseconds from its start and end (each a field and its Unix
/// milliseconds): none without an end, or with one before the start; more than
/// [`bounds::DURATION_MS`] is refused, said as the time between the two fields (tester 23
/// F10: it was said as the end field's value, in milliseconds).
fn duration_between(
    position: &str,
    (start_field, start): (&str, i64),
    (end_field, end): (&str, Option<i64>),
) -> Result<Option<i64>, CoreError> {
    let Some(end) = end.filter(|end| *end >= start) else {
        return Ok(None);
    };
    let ms = end - start;
    if bounds::DURATION_MS.contains(&ms) {
        return Ok(Some(ms));
    }
    Err(content_error(
        position.to_string(),
        format!(
            "field '{end_field}' is {ms} ms after '{start_field}'; a call lasts at most {} ms \
             (7 days)",
            bounds::DURATION_MS.end()
        ),
    ))
}

/// The plan id of an OpenTelemetry chat span, and the execution id of an `execute_tool` one.
pub fn otel_plan_id(trace: &str, span: &str) -> String {
    format!("otel-{trace}-{span}")
}

/// OTLP JSON lines read one at a time, so a file of any size is never held whole, and each
/// line read span by span as the parser reaches it (only the fields and attributes used are
/// kept, never a tree of the whole line: [`SPAN_ATTRIBUTES`]), so a line of any size costs
/// about itself. Chat spans are plans, handed on as each is read; `execute_tool` spans are
/// executions, kept as a few fields each (names and trace ids shared, not copied) and
/// handed on with their trace once the last line is read ([`OtelReader::finish`]), for the
/// store to link each to the latest chat span of its trace that started at or before it
/// ([`chat_of_run`]) among every chat it holds, this file's and earlier imports' (tester 23
/// F1: a Collector's rotation between a chat and its tool spans had left them unlinked).
/// Other spans are counted and left.
#[derive(Debug, Default)]
pub struct OtelReader {
    tools: Vec<ToolSpan>,
    /// Spans read, for the report.
    records: usize,
    /// Trace ids, tool names, callers and sessions, each held once.
    names: HashSet<Arc<str>>,
}

/// The plan ids of a trace's chat spans, and the execution ids of its `execute_tool` spans,
/// sort from `.0` (included) to `.1` (excluded): the range a store looks a trace up in.
pub fn otel_trace_ids(trace: &str) -> (String, String) {
    (format!("otel-{trace}-"), format!("otel-{trace}."))
}

/// The trace of an OpenTelemetry plan or execution id ([`otel_plan_id`]).
pub fn otel_trace_of(id: &str) -> Option<&str> {
    let (trace, span) = id.strip_prefix("otel-")?.split_once('-')?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(trace) && hex(span)).then_some(trace)
}

/// The chat span an `execute_tool` span that started at `at` (seconds, nanoseconds) is a
/// run of, among the chat spans of its trace (`chats`: start and plan id): the latest that
/// started at or before it, the greater id of two at one instant; none when every one
/// started after it (an execution cannot follow a plan made after it) or there is none.
pub fn chat_of_run<'a>(
    chats: impl IntoIterator<Item = ((i64, u32), &'a str)>,
    at: (i64, u32),
) -> Option<&'a str> {
    chats
        .into_iter()
        .filter(|(start, _)| *start <= at)
        .max()
        .map(|(_, id)| id)
}

/// An `execute_tool` span waiting for its trace's chats.
#[derive(Debug)]
struct ToolSpan {
    trace: Arc<str>,
    span: Box<str>,
    start: i64,
    start_ms: i64,
    caller: Arc<str>,
    session: Option<Arc<str>>,
    tool: Arc<str>,
    ok: bool,
}

impl OtelReader {
    /// One line (`line` is 1-based): each chat span's plan goes to `plan` as the parser
    /// reaches it; its tool spans are kept for [`finish`](Self::finish). A span is named in
    /// errors by its line and its index among the line's spans.
    pub fn read_line<E: From<CoreError>>(
        &mut self,
        origin: &str,
        line: usize,
        text: &str,
        plan: &mut dyn FnMut(PlanRecord) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut reading = LineReading {
            reader: self,
            origin,
            line,
            index: 0,
            plan,
            refused: None,
            found: false,
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let read = (&mut de)
            .deserialize_any(LineVisitor(&mut reading))
            .and_then(|()| de.end());
        if let Some(e) = reading.refused {
            return Err(e);
        }
        read.map_err(|e| CoreError::json_line(origin, line, text, &e))?;
        if !reading.found {
            return Err(content_error(
                format!("{origin}: line {line}"),
                "not an OTLP JSON traces line (no 'resourceSpans' list)",
            )
            .into());
        }
        Ok(())
    }

    /// `name`, held once however many spans carry it.
    fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(held) = self.names.get(name) {
            return held.clone();
        }
        let held: Arc<str> = Arc::from(name);
        self.names.insert(held.clone());
        held
    }

    /// A span as parsed, checked: its ids, times and status.
    fn span(
        &mut self,
        position: String,
        raw: RawSpan,
        caller: &Arc<str>,
    ) -> Result<Span, CoreError> {
        for (key, v) in raw
            .attrs
            .iter()
            .chain(raw.events.iter().flat_map(|e| e.iter()))
        {
            if let Some(written) = unreadable_int(v) {
                return Err(content_error(
                    position,
                    format!(
                        "attribute '{}': intValue {} is not a whole number from {} to {}",
                        crate::core::terminal_text::name(key),
                        crate::core::terminal_text::quoted_with(written, '"'),
                        i64::MIN,
                        i64::MAX
                    ),
                ));
            }
        }
        let trace = hex_id(&position, "traceId", raw.trace_id.as_ref())?;
        let span = hex_id(&position, "spanId", raw.span_id.as_ref())?;
        let (start, start_ms) = unix_nanos(&position, "startTimeUnixNano", raw.start.as_ref())?;
        // An end time is optional: without a readable one there is no duration.
        let end_ms = unix_nanos(&position, "endTimeUnixNano", raw.end.as_ref())
            .ok()
            .map(|(_, ms)| ms);
        let ok = status_ok(&position, raw.status_code.as_ref())?;
        Ok(Span {
            position,
            trace: self.intern(&trace),
            span: span.into_boxed_str(),
            start,
            start_ms,
            end_ms,
            caller: caller.clone(),
            attrs: raw.attrs,
            events: raw.events,
            ok,
        })
    }

    /// The spans read, and every execution with its trace, in file order (built one at a
    /// time as the store takes them).
    pub fn finish(self) -> StreamRead {
        StreamRead {
            records: self.records,
            executions: Executions {
                tools: self.tools.into_iter(),
            },
        }
    }
}

/// An `execute_tool` span's execution, not yet linked to a plan, and its trace: the store
/// links it to its chat ([`chat_of_run`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRun {
    pub execution: ExecutionRecord,
    pub trace: String,
}

/// The executions of a traces file, each with its trace, as it is taken.
#[derive(Debug, Default)]
pub struct Executions {
    tools: std::vec::IntoIter<ToolSpan>,
}

impl Iterator for Executions {
    type Item = TraceRun;

    fn next(&mut self) -> Option<TraceRun> {
        let t = self.tools.next()?;
        Some(TraceRun {
            execution: ExecutionRecord {
                id: otel_plan_id(&t.trace, &t.span),
                at: t.start,
                at_nanos: millis_part(t.start_ms),
                caller: t.caller.to_string(),
                session: t.session.map(|s| s.to_string()),
                plan_id: None,
                tool: t.tool.to_string(),
                ok: t.ok,
            },
            trace: t.trace.to_string(),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.tools.size_hint()
    }
}

impl ExactSizeIterator for Executions {}

/// A span's `gen_ai.operation.name`.
fn operation(s: &Span) -> Option<&str> {
    s.attrs.get("gen_ai.operation.name").and_then(Value::as_str)
}

/// The plan a chat span records.
fn chat_plan(s: &Span) -> Result<PlanRecord, CoreError> {
    let model = ["gen_ai.request.model", "gen_ai.response.model"]
        .into_iter()
        .find_map(|key| {
            let name = s.attrs.get(key).and_then(Value::as_str)?;
            unspaced(&s.position, &format!("attribute '{key}'"), name).transpose()
        })
        .transpose()?
        .ok_or_else(|| {
            content_error(
                s.position.clone(),
                "chat span has no 'gen_ai.request.model'",
            )
        })?
        .to_string();
    let output = span_read(
        &s.position,
        &s.attrs,
        &s.events,
        "gen_ai.output.messages",
        || OutputMessages,
    )?;
    let (reply, calls, recorded) = chat_reply(output, &s.attrs);
    let (reply, calls_not_kept, steps, mut outcome, mut failure_class) = if recorded {
        plan_of(reply, calls)
    } else {
        (
            reply,
            0,
            Vec::new(),
            Outcome::Failed,
            Some(OUTPUT_NOT_RECORDED.to_string()),
        )
    };
    // A chat span whose status is ERROR is a call that failed, whatever answer it recorded
    // (tester 23 F4), as a LiteLLM row whose status is not success.
    if !s.ok {
        (outcome, failure_class) = failed_call_outcome();
    }
    let input = span_read(
        &s.position,
        &s.attrs,
        &s.events,
        "gen_ai.input.messages",
        || InputMessages,
    )?;
    let intent = intent_of(&s.position, "attribute 'gen_ai.input.messages'", input)?;
    let usage = json!({
        "prompt_tokens": token_count(&s.position, &s.attrs, "gen_ai.usage.input_tokens")?,
        "completion_tokens": token_count(&s.position, &s.attrs, "gen_ai.usage.output_tokens")?,
    });
    let duration_ms = duration_between(
        &s.position,
        ("startTimeUnixNano", s.start_ms),
        ("endTimeUnixNano", s.end_ms),
    )?;
    let id = otel_plan_id(&s.trace, &s.span);
    let plan = PlanRecord {
        id,
        at: s.start,
        at_nanos: millis_part(s.start_ms),
        caller: s.caller.to_string(),
        model,
        intent,
        steps,
        outcome,
        failure_class,
        finish_reason: reply.finish_reason.clone(),
        raw_response: reply.raw_response(),
        trim_record: None,
        duration_ms,
        replay_of: None,
        answer: Some(answer_with(
            json!({
                "source": "otel",
                "trace_id": &*s.trace,
                "span_id": &*s.span,
                "conversation_id": s.attrs.get("gen_ai.conversation.id"),
                "finish_reason": reply.finish_reason,
                "tool_calls": reply.tool_calls,
                "usage": usage,
            }),
            calls_not_kept,
            &reply,
        )),
        arm: None,
        compare_group: None,
        source: TrafficSource::Otel,
        expert_baseline: None,
    };
    checked(&s.position, plan)
}

/// A plan a traffic file brought, refused naming `position` when its names or its texts are
/// more than a plan keeps ([`PlanRecord::names_problem`],
/// [`plan_text_problem`](crate::core::history::plan_text_problem)), as `import plans` refuses
/// them.
fn checked(position: &str, plan: PlanRecord) -> Result<PlanRecord, CoreError> {
    if let Some((field, problem)) = plan.names_problem() {
        return Err(content_error(
            position.to_string(),
            format!("the plan's {field} {problem}"),
        ));
    }
    if let Some(problem) =
        crate::core::history::plan_text_problem(plan.raw_response.as_deref(), plan.answer.as_ref())
    {
        return Err(content_error(
            position.to_string(),
            format!("the plan's {problem}"),
        ));
    }
    Ok(plan)
}

/// What an `execute_tool` span keeps until its trace's chats are known: its names held
/// once by `reader`.
fn tool_span(reader: &mut OtelReader, s: Span) -> Result<ToolSpan, CoreError> {
    let tool = s
        .attrs
        .get("gen_ai.tool.name")
        .and_then(Value::as_str)
        .map(|name| unspaced(&s.position, "attribute 'gen_ai.tool.name'", name))
        .transpose()?
        .flatten()
        .ok_or_else(|| {
            content_error(
                s.position.clone(),
                "execute_tool span has no 'gen_ai.tool.name'",
            )
        })?;
    let tool = reader.intern(tool);
    let session = s
        .attrs
        .get("gen_ai.conversation.id")
        .and_then(Value::as_str)
        .map(|session| reader.intern(session));
    Ok(ToolSpan {
        trace: s.trace,
        span: s.span,
        start: s.start,
        start_ms: s.start_ms,
        caller: s.caller,
        session,
        tool,
        ok: s.ok,
    })
}

// The parse of one OTLP JSON line, span by span: serde visitors that keep the fields a
// span's reading uses and read past the rest. Read past is still read: syntax, the nesting
// limit and lone surrogates are checked as anywhere else (`Skip`). A value of another shape
// than OTLP's (attributes that are not a list, a status that is not an object) is taken as
// absent, as it was when the line was read as a tree.

/// Any JSON value, read through and dropped.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    otherwise!(Skip);
    map_otherwise!(Skip);
    seq_otherwise!(Skip);
}

/// A span as parsed: the fields used, unchecked.
#[derive(Default)]
struct RawSpan {
    trace_id: Option<Value>,
    span_id: Option<Value>,
    start: Option<Value>,
    end: Option<Value>,
    status_code: Option<Value>,
    attrs: Attributes,
    events: Vec<Attributes>,
}

/// An OTLP `attributes` list (`[{"key":…, "value":AnyValue}]`): those it names, as plain
/// JSON ([`any_value`]); the others read past.
#[derive(Clone, Copy)]
struct AttributesOf(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for AttributesOf {
    type Value = Attributes;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Attributes, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AttributesOf {
    type Value = Attributes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of attributes")
    }

    otherwise!(Attributes::new());
    map_otherwise!(Attributes::new());

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Attributes, A::Error> {
        let mut out = Attributes::new();
        while let Some(kv) = seq.next_element_seed(KeyValueOf(self.0))? {
            if let Some((k, v)) = kv {
                // One of the names read (a static string), so safe to print.
                if out.contains_key(&k) {
                    return Err(de::Error::custom(format_args!("duplicate attribute `{k}`")));
                }
                out.insert(k, any_value(v));
            }
        }
        Ok(out)
    }
}

/// One `{"key":…, "value":…}` of an attributes list, kept when its key is one of those
/// named (its value read past when the key comes first and is not).
struct KeyValueOf(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyValueOf {
    type Value = Option<(String, Value)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyValueOf {
    type Value = Option<(String, Value)>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an attribute")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key: Option<Value> = None;
        let mut value: Option<Value> = None;
        let mut keys = KeysOnce::of(&["key", "value"]);
        while let Some(field) = keys.next_name(&mut map)? {
            match field {
                Some("key") => key = Some(map.next_value_seed(UniqueValue)?),
                Some("value") if key.as_ref().is_some_and(|k| !self.wants(k)) => {
                    map.next_value::<Skip>()?;
                }
                Some(_) => value = Some(map.next_value_seed(UniqueValue)?),
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(match (key, value) {
            (Some(Value::String(k)), Some(v)) if self.0.contains(&k.as_str()) => {
                // An AnyValue is one of its kinds: two would be read as the first this
                // reader tries and maybe another elsewhere (tester 33 F5). `k` is one of
                // the names read, so safe to print.
                let kinds: Vec<&str> = ANY_VALUE_KINDS
                    .iter()
                    .copied()
                    .filter(|kind| v.get(kind).is_some())
                    .collect();
                if kinds.len() > 1 {
                    return Err(de::Error::custom(format_args!(
                        "attribute `{k}`: its value holds {} kinds ({}); an OTLP AnyValue holds one",
                        kinds.len(),
                        kinds.join(", ")
                    )));
                }
                Some((k, v))
            }
            _ => None,
        })
    }
}

impl KeyValueOf {
    fn wants(&self, key: &Value) -> bool {
        key.as_str().is_some_and(|k| self.0.contains(&k))
    }
}

/// An object whose `attributes` are read (those `names` lists) and the rest skipped: a
/// resource ([`RESOURCE_ATTRIBUTES`]) or a span's event ([`SPAN_ATTRIBUTES`]).
struct WithAttributes {
    names: &'static [&'static str],
    what: &'static str,
}

const RESOURCE: WithAttributes = WithAttributes {
    names: RESOURCE_ATTRIBUTES,
    what: "a resource",
};

const EVENT: WithAttributes = WithAttributes {
    names: SPAN_ATTRIBUTES,
    what: "an event",
};

impl<'de> DeserializeSeed<'de> for WithAttributes {
    type Value = Attributes;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Attributes, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for WithAttributes {
    type Value = Attributes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.what)
    }

    otherwise!(Attributes::new());
    seq_otherwise!(Attributes::new());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Attributes, A::Error> {
        let mut attrs = Attributes::new();
        let mut keys = KeysOnce::of(&["attributes"]);
        while let Some(field) = keys.next(&mut map)? {
            match field {
                Some(_) => attrs = map.next_value_seed(AttributesOf(self.names))?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(attrs)
    }
}

/// A span's `events`: each one's attributes (those [`SPAN_ATTRIBUTES`] names); events
/// without any are left out.
struct Events;

impl<'de> DeserializeSeed<'de> for Events {
    type Value = Vec<Attributes>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Events {
    type Value = Vec<Attributes>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of events")
    }

    otherwise!(Vec::new());
    map_otherwise!(Vec::new());

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut events = Vec::new();
        while let Some(attrs) = seq.next_element_seed(EVENT)? {
            if !attrs.is_empty() {
                events.push(attrs);
            }
        }
        Ok(events)
    }
}

/// A span's `status`: its `code`.
struct StatusCode;

impl<'de> DeserializeSeed<'de> for StatusCode {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StatusCode {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a status")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut code = None;
        let mut keys = KeysOnce::of(&["code"]);
        while let Some(field) = keys.next(&mut map)? {
            match field {
                Some(_) => code = Some(map.next_value_seed(UniqueValue)?),
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(code)
    }
}

/// One span: the fields used.
struct SpanFields;

impl<'de> DeserializeSeed<'de> for SpanFields {
    type Value = RawSpan;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawSpan, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SpanFields {
    type Value = RawSpan;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a span")
    }

    otherwise!(RawSpan::default());
    seq_otherwise!(RawSpan::default());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSpan, A::Error> {
        let mut s = RawSpan::default();
        let mut keys = KeysOnce::of(&[
            "traceId",
            "spanId",
            "startTimeUnixNano",
            "endTimeUnixNano",
            "status",
            "attributes",
            "events",
        ]);
        while let Some(field) = keys.next_name(&mut map)? {
            match field {
                Some("traceId") => s.trace_id = Some(map.next_value_seed(UniqueValue)?),
                Some("spanId") => s.span_id = Some(map.next_value_seed(UniqueValue)?),
                Some("startTimeUnixNano") => s.start = Some(map.next_value_seed(UniqueValue)?),
                Some("endTimeUnixNano") => s.end = Some(map.next_value_seed(UniqueValue)?),
                Some("status") => s.status_code = map.next_value_seed(StatusCode)?,
                Some("attributes") => {
                    s.attrs = map.next_value_seed(AttributesOf(SPAN_ATTRIBUTES))?
                }
                Some("events") => s.events = map.next_value_seed(Events)?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(s)
    }
}

/// One line being read: where it is, the reader it feeds, and what refused a span (the
/// parse stops with a placeholder error; this one is told).
struct LineReading<'r, E> {
    reader: &'r mut OtelReader,
    origin: &'r str,
    line: usize,
    /// Spans met so far in the line.
    index: usize,
    plan: &'r mut dyn FnMut(PlanRecord) -> Result<(), E>,
    refused: Option<E>,
    /// Whether the line had a `resourceSpans` list.
    found: bool,
}

impl<E: From<CoreError>> LineReading<'_, E> {
    /// A span read (the `index`th of its line) made a plan, an execution waiting for its
    /// chats, or nothing.
    fn take(&mut self, index: usize, raw: RawSpan, caller: &Arc<str>) -> Result<(), E> {
        let position = format!("{}: line {}, span {index}", self.origin, self.line);
        let s = self.reader.span(position, raw, caller)?;
        self.reader.records += 1;
        match operation(&s) {
            Some("chat") => {
                let plan = chat_plan(&s)?;
                (self.plan)(plan)?;
            }
            Some("execute_tool") => {
                let tool = tool_span(self.reader, s)?;
                self.reader.tools.push(tool);
            }
            _ => {}
        }
        Ok(())
    }

    /// [`take`](Self::take) inside the parse: a refusal is kept and stops it.
    fn taken<Er: de::Error>(
        &mut self,
        index: usize,
        raw: RawSpan,
        caller: &Arc<str>,
    ) -> Result<(), Er> {
        self.take(index, raw, caller).map_err(|e| {
            self.refused = Some(e);
            Er::custom("span refused")
        })
    }

    /// Who called: a resource's `service.name`, else `otel`.
    fn caller(&mut self, resource: &Attributes) -> Arc<str> {
        let name = resource
            .get("service.name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("otel");
        self.reader.intern(name)
    }
}

/// The line: `{"resourceSpans": […]}`.
struct LineVisitor<'a, 'r, E>(&'a mut LineReading<'r, E>);

impl<'de, E: From<CoreError>> Visitor<'de> for LineVisitor<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an OTLP JSON traces object")
    }

    otherwise!(());
    seq_otherwise!(());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = KeysOnce::of(&["resourceSpans"]);
        while let Some(field) = keys.next(&mut map)? {
            match field {
                Some(_) => map.next_value_seed(ResourceSpansList(&mut *self.0))?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(())
    }
}

/// `resourceSpans`: a list of resources with their spans.
struct ResourceSpansList<'a, 'r, E>(&'a mut LineReading<'r, E>);

impl<'de, E: From<CoreError>> DeserializeSeed<'de> for ResourceSpansList<'_, '_, E> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, E: From<CoreError>> Visitor<'de> for ResourceSpansList<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of resource spans")
    }

    otherwise!(());
    map_otherwise!(());

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.found = true;
        while seq
            .next_element_seed(ResourceSpans(&mut *self.0))?
            .is_some()
        {}
        Ok(())
    }
}

/// One resource and its spans. Its spans are taken as they are read when the resource
/// came first (as the Collector writes it); when its spans come first, they wait (parsed)
/// for the resource that names their caller.
struct ResourceSpans<'a, 'r, E>(&'a mut LineReading<'r, E>);

impl<'de, E: From<CoreError>> DeserializeSeed<'de> for ResourceSpans<'_, '_, E> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, E: From<CoreError>> Visitor<'de> for ResourceSpans<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("resource spans")
    }

    otherwise!(());
    seq_otherwise!(());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut caller = None;
        let mut waiting = Vec::new();
        let mut keys = KeysOnce::of(&["resource", "scopeSpans"]);
        while let Some(field) = keys.next_name(&mut map)? {
            match field {
                Some("resource") => {
                    let resource = map.next_value_seed(RESOURCE)?;
                    caller = Some(self.0.caller(&resource));
                }
                Some("scopeSpans") => map.next_value_seed(Spans {
                    line: &mut *self.0,
                    caller: caller.clone(),
                    waiting: &mut waiting,
                    level: Level::Scopes,
                })?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        if !waiting.is_empty() {
            let caller = match caller {
                Some(caller) => caller,
                None => self.0.caller(&Attributes::new()),
            };
            for (index, raw) in waiting {
                self.0.taken(index, raw, &caller)?;
            }
        }
        Ok(())
    }
}

/// Where [`Spans`] is: `scopeSpans`, one scope, or its `spans`.
#[derive(Clone, Copy)]
enum Level {
    Scopes,
    Scope,
    List,
}

/// The spans under a resource, taken as read when the caller is known, else kept waiting.
struct Spans<'a, 'r, E> {
    line: &'a mut LineReading<'r, E>,
    caller: Option<Arc<str>>,
    waiting: &'a mut Vec<(usize, RawSpan)>,
    level: Level,
}

impl<'r, E> Spans<'_, 'r, E> {
    fn at(&mut self, level: Level) -> Spans<'_, 'r, E> {
        Spans {
            line: &mut *self.line,
            caller: self.caller.clone(),
            waiting: &mut *self.waiting,
            level,
        }
    }
}

impl<'de, E: From<CoreError>> DeserializeSeed<'de> for Spans<'_, '_, E> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, E: From<CoreError>> Visitor<'de> for Spans<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("scope spans")
    }

    otherwise!(());

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        match self.level {
            Level::Scopes => while seq.next_element_seed(self.at(Level::Scope))?.is_some() {},
            Level::Scope => while seq.next_element::<Skip>()?.is_some() {},
            Level::List => {
                while let Some(raw) = seq.next_element_seed(SpanFields)? {
                    self.line.index += 1;
                    let index = self.line.index;
                    match &self.caller {
                        Some(caller) => self.line.taken(index, raw, caller)?,
                        None => self.waiting.push((index, raw)),
                    }
                }
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        // Only a scope's `spans` is read; at another level an object is read past.
        let used: &[&str] = match self.level {
            Level::Scope => &["spans"],
            Level::Scopes | Level::List => &[],
        };
        let mut keys = KeysOnce::of(used);
        while let Some(field) = keys.next(&mut map)? {
            match field {
                Some(_) => map.next_value_seed(self.at(Level::List))?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// LiteLLM

/// A SpendLogs row as read: the fields a plan's reading uses (`None` when the row is not an
/// object), and its JSON columns, each read typed as the parser reached it ([`Recorded`]:
/// never a tree of them), an error in one kept until the row's reading comes to it.
#[derive(Debug)]
pub struct SpendRow {
    fields: Option<serde_json::Map<String, Value>>,
    messages: Result<Option<Input>, CoreError>,
    response: Result<Option<messages::Choice>, CoreError>,
    metadata: Result<Option<String>, CoreError>,
}

/// The fields of a SpendLogs row that are read: its JSON columns (`messages`, `response`,
/// `metadata`), then those kept as values; the rest are read past.
const ROW_FIELDS: &[&str] = &[
    "messages",
    "response",
    "metadata",
    "request_id",
    "model",
    "model_group",
    "startTime",
    "endTime",
    "spend",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "status",
    "end_user",
    "user",
    "session_id",
];

/// One SpendLogs row read as the parser reaches it (`position` names it in errors).
pub struct RowOf<'p> {
    pub position: &'p str,
}

impl<'de> DeserializeSeed<'de> for RowOf<'_> {
    type Value = SpendRow;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SpendRow, D::Error> {
        d.deserialize_any(self)
    }
}

impl RowOf<'_> {
    fn column<T, S: messages::Reads<T>>(&self, what: &'static str, seed: S) -> Recorded<'_, T, S> {
        Recorded::new(self.position, what, seed)
    }
}

/// A row that is not an object.
fn not_a_row() -> SpendRow {
    SpendRow {
        fields: None,
        messages: Ok(None),
        response: Ok(None),
        metadata: Ok(None),
    }
}

impl<'de> Visitor<'de> for RowOf<'_> {
    type Value = SpendRow;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a spend log row")
    }

    otherwise!(not_a_row());
    seq_otherwise!(not_a_row());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SpendRow, A::Error> {
        let mut row = SpendRow {
            fields: Some(serde_json::Map::new()),
            ..not_a_row()
        };
        let mut keys = KeysOnce::of(ROW_FIELDS);
        while let Some(field) = keys.next_name(&mut map)? {
            match field {
                Some("messages") => {
                    row.messages =
                        map.next_value_seed(self.column("field 'messages'", InputMessages))?;
                }
                Some("response") => {
                    row.response =
                        map.next_value_seed(self.column("field 'response'", Completion))?;
                }
                Some("metadata") => {
                    row.metadata = map.next_value_seed(
                        self.column("field 'metadata'", StrField("user_api_key_alias")),
                    )?;
                }
                Some(name) => {
                    let value = map.next_value_seed(UniqueValue)?;
                    if let Some(fields) = &mut row.fields {
                        fields.insert(name.to_string(), value);
                    }
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(row)
    }
}

/// The user's input: the last user message of a message list (`what` names where it was
/// recorded), or [`INPUT_NOT_RECORDED`] when none was; kept as the history keeps an intent
/// ([`bounds::kept_intent`]). A value there but not a list of messages is an error naming
/// the position and `what`.
fn intent_of(position: &str, what: &str, messages: Option<Input>) -> Result<String, CoreError> {
    let text = match messages {
        None => None,
        Some(Input::NotAList(shown)) => {
            return Err(content_error(
                position.to_string(),
                format!("{what} is {shown}, not a list of messages"),
            ));
        }
        Some(Input::NotAMessage(item, shown)) => {
            return Err(content_error(
                position.to_string(),
                format!("{what} item {item} is {shown}, not a message"),
            ));
        }
        Some(Input::Messages(text)) => text,
    };
    Ok(text
        .map(|t| bounds::kept_intent(t.trim()).into_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| INPUT_NOT_RECORDED.to_string()))
}

fn row_time(position: &str, field: &str, v: Option<&Value>) -> Result<Option<i64>, CoreError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let text = v.as_str().ok_or_else(|| {
        content_error(
            position.to_string(),
            format!("field '{field}' is {}, not a time", quoted_value(v)),
        )
    })?;
    let ms = crate::core::time::parse_timestamp_millis(text)
        .map_err(|m| content_error(position.to_string(), format!("field '{field}': {m}")))?;
    // Said as written, not as the Unix seconds it became (tester 23 F10: `is -1`).
    if !bounds::TIMESTAMP.contains(&ms.div_euclid(1000)) {
        return Err(content_error(
            position.to_string(),
            format!(
                "field '{field}' is {}; expected a time from 1970-01-01T00:00:00Z to \
                 9999-12-31T23:59:59Z",
                crate::core::terminal_text::quoted(text)
            ),
        ));
    }
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
                        format!("field '{field}' is {}, not a count", quoted_value(v)),
                    )
                })?;
            bounds::int_in_written(n as usize, v, &bounds::TOKENS, position, field)
                .map(|n| Some(n as u64))
        }
    }
}

/// A name a traffic file gives (a request id, a model, a tool): `None` when blank; one with
/// white space around it refused naming `what` (`field 'model'`, `attribute
/// 'gen_ai.tool.name'`), as `import plans` refuses such a name (the one name rule,
/// `core::budget::name_problem`). It had been trimmed without a word, so `" gpt-4o"` joined
/// `gpt-4o`'s row and request ids `" abc"` and `"abc"` collided (tester 23 F9).
fn unspaced<'a>(position: &str, what: &str, name: &'a str) -> Result<Option<&'a str>, CoreError> {
    if name.trim().is_empty() {
        return Ok(None);
    }
    if name.trim() != name {
        return Err(content_error(
            position.to_string(),
            format!(
                "{what} is {}, with spaces around it",
                crate::core::terminal_text::quoted(name)
            ),
        ));
    }
    Ok(Some(name))
}

/// A row's name field (`request_id`, `model`): `None` when absent, null or blank; a value
/// that is not a string is refused quoting it (tester 23 F10: `"request_id": 123` was said
/// to be missing).
fn row_name(position: &str, row: &Value, field: &str) -> Result<Option<String>, CoreError> {
    match row.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            Ok(unspaced(position, &format!("field '{field}'"), s)?.map(str::to_string))
        }
        Some(v) => {
            let shown = quoted_value(v);
            Err(content_error(
                position.to_string(),
                format!("field '{field}' is {shown}, not a string"),
            ))
        }
    }
}

/// The most a single request is taken to have cost, in USD.
const SPEND_USD: std::ops::RangeInclusive<f64> = 0.0..=1_000_000.0;

/// One SpendLogs row given as a value (`position` names it in errors: a line, or an index
/// in an array), read as [`RowOf`] reads one from the parser.
pub fn litellm_row(position: &str, row: &Value) -> Result<PlanRecord, CoreError> {
    let read = RowOf { position }
        .deserialize(row)
        .map_err(|e| content_error(position.to_string(), e.to_string()))?;
    spend_row(position, read)
}

/// The plan of one SpendLogs row as read.
pub fn spend_row(position: &str, read: SpendRow) -> Result<PlanRecord, CoreError> {
    let Some(fields) = read.fields else {
        return Err(content_error(
            position.to_string(),
            "a spend log row must be an object",
        ));
    };
    let row = &Value::Object(fields);
    let str_field = |k: &str| {
        row.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let request_id = row_name(position, row, "request_id")?.ok_or_else(|| {
        content_error(
            position.to_string(),
            "field 'request_id' is missing or empty",
        )
    })?;
    let model = match row_name(position, row, "model")? {
        Some(model) => Some(model),
        None => row_name(position, row, "model_group")?,
    }
    .ok_or_else(|| content_error(position.to_string(), "field 'model' is missing or empty"))?;
    let start = row_time(position, "startTime", row.get("startTime"))?
        .ok_or_else(|| content_error(position.to_string(), "field 'startTime' is missing"))?;
    let end = row_time(position, "endTime", row.get("endTime"))?;
    let duration_ms = duration_between(position, ("startTime", start), ("endTime", end))?;
    let spend = match row.get("spend") {
        None | Some(Value::Null) => None,
        Some(v) => Some(finite_in(
            v.as_f64().ok_or_else(|| {
                content_error(
                    position.to_string(),
                    format!("field 'spend' is {}, not a number", quoted_value(v)),
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
    let intent = intent_of(position, "field 'messages'", read.messages?)?;
    let choice = read.response?;
    let recorded = choice.is_some();
    let (finish_reason, message, other_choices) = choice.map_or((None, None, 0), |c| {
        (c.finish_reason, c.message, c.other_choices)
    });
    let message = message.unwrap_or_default();
    let reply = Reply {
        content: message.content,
        reasoning: message.reasoning,
        refusal: message.refusal,
        finish_reason,
        tool_calls: Vec::new(),
        usage: None,
        id: None,
        other_choices,
        not_read: message.not_read,
    };
    // A failed call logs an error status, mostly with no choices (no answer came back);
    // one that still logged an answer (a post-call guardrail or callback failed) failed too:
    // its answer and steps are kept, read as they decode, but it counts as failed (tester
    // 23 F4: it had counted as a success for its model).
    // Read in any case: "Success" is a success (tester 24 N7).
    let failed_call =
        str_field("status").is_some_and(|s| !s.trim().eq_ignore_ascii_case("success"));
    let (reply, calls_not_kept, steps, mut outcome, mut failure_class) =
        plan_of(reply, message.calls);
    if failed_call {
        (outcome, failure_class) = failed_call_outcome();
    } else if !recorded && outcome == Outcome::Failed {
        failure_class = Some(OUTPUT_NOT_RECORDED.to_string());
    }
    let alias = read.metadata?;
    let caller = str_field("end_user")
        .or_else(|| str_field("user"))
        .or(alias)
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
        raw_response: reply.raw_response(),
        trim_record: None,
        duration_ms,
        replay_of: None,
        answer: Some(answer_with(
            json!({
                "source": "litellm",
                "request_id": request_id,
                "finish_reason": reply.finish_reason,
                "tool_calls": reply.tool_calls,
                "usage": usage,
                "spend": spend,
                "session_id": str_field("session_id"),
            }),
            calls_not_kept,
            &reply,
        )),
        arm: None,
        compare_group: None,
        source: TrafficSource::Litellm,
        expert_baseline: None,
    };
    checked(position, record)
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
        traces: Vec<String>,
    }

    /// [`OtelReader`] over every line, its plans kept.
    fn read_otel<'a>(
        origin: &str,
        lines: impl IntoIterator<Item = (usize, &'a str)>,
    ) -> Result<Traffic, CoreError> {
        let mut reader = OtelReader::default();
        let mut plans = Vec::new();
        for (line, text) in lines {
            reader.read_line(origin, line, text, &mut |p| {
                plans.push(p);
                Ok::<(), CoreError>(())
            })?;
        }
        let read = reader.finish();
        let (executions, traces) = read
            .executions
            .map(|run| (run.execution, run.trace))
            .unzip();
        Ok(Traffic {
            plans,
            executions,
            records: read.records,
            traces,
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
            span("bb", "05", S, tool("orphan")),
        ]);
        let t = read_otel("f", [(1, text.as_str())]).unwrap();
        assert_eq!(t.records, 4);
        assert_eq!(t.plans.len(), 2);
        assert_eq!(t.plans[0].id, "otel-aa-01");
        assert_eq!(t.plans[0].at, 1_791_028_800);
        assert_eq!(t.plans[0].duration_ms, Some(500));
        assert_eq!(t.plans[0].steps[0].tool, "first");
        assert_eq!(
            t.plans[0].answer.as_ref().unwrap()["usage"]["prompt_tokens"],
            12
        );
        // Executions come with their trace, linked by the store, which holds every chat.
        let ids: Vec<_> = t.executions.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["otel-aa-03", "otel-bb-05"]);
        assert!(t.executions.iter().all(|e| e.plan_id.is_none()));
        assert_eq!(t.traces, ["aa", "bb"]);
        assert_eq!(otel_trace_of("otel-aa-03"), Some("aa"));
        assert_eq!(otel_trace_of("litellm-aa-03"), None);
        assert_eq!(otel_trace_of("otel-aa"), None);
        let (lo, hi) = otel_trace_ids("aa");
        assert!(lo.as_str() <= "otel-aa-03" && "otel-aa-ff" < hi.as_str());
        assert!(!("otel-aab-01" < hi.as_str() && lo.as_str() <= "otel-aab-01"));
        let chats = [
            ((10, 0), "otel-aa-01"),
            ((20, 0), "otel-aa-02"),
            ((20, 0), "otel-aa-0f"),
        ];
        assert_eq!(chat_of_run(chats, (15, 0)), Some("otel-aa-01"));
        assert_eq!(chat_of_run(chats, (20, 0)), Some("otel-aa-0f"));
        assert_eq!(chat_of_run(chats, (19, 999_999_999)), Some("otel-aa-01"));
        // Tester 6 F9: a tool span that started before every chat of its trace was
        // linked to the trace's first chat, and made it `followed`.
        assert_eq!(chat_of_run(chats, (9, 0)), None);
        assert_eq!(chat_of_run([], (9, 0)), None);
    }

    /// Tester 23 F6: a traffic import had no bound on the texts it keeps, where `import
    /// plans` refused more than a plan keeps: a plan it stored, exported, was not taken
    /// back. Both refuse through one check, naming the position.
    #[test]
    fn a_traffic_plan_over_what_a_plan_keeps_is_refused_as_import_plans_refuses_it() {
        let text = line(vec![span("aa", "01", S, chat("first"))]);
        let plan = read_otel("f", [(1, text.as_str())])
            .unwrap()
            .plans
            .remove(0);
        let big = PlanRecord {
            raw_response: Some("r".repeat(bounds::PLAN_TEXT_BYTES + 1)),
            ..plan.clone()
        };
        let err = checked("f: line 1, span 1", big).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "f: line 1, span 1: the plan's field 'raw_response' is {} bytes; a plan keeps \
                 at most {} (the largest reply a live call keeps)",
                bounds::PLAN_TEXT_BYTES + 1,
                bounds::PLAN_TEXT_BYTES
            )
        );
        assert!(checked("f", plan).is_ok());
    }

    /// A line is read span by span (tester 7 T7-7: one line was parsed whole first): the
    /// first span's plan is handed on before the parser reaches the second, whose fault
    /// then stops the read naming it; attributes not used are read past, not kept.
    #[test]
    fn a_line_hands_on_each_plan_as_the_parser_reaches_it() {
        let mut attrs = chat("first");
        attrs.as_array_mut().unwrap().push(
            json!({"key": "unused", "value": {"kvlistValue": {"values": [
                {"key": "x", "value": {"stringValue": "y"}}]}}}),
        );
        let text = line(vec![
            span("aa", "01", S, attrs),
            json!({"spanId": "02", "startTimeUnixNano": S.to_string()}),
        ]);
        let mut reader = OtelReader::default();
        let mut seen = Vec::new();
        let err = reader
            .read_line("f", 3, &text, &mut |p| {
                assert!(p.answer.as_ref().unwrap().get("unused").is_none());
                seen.push(p.id);
                Ok::<(), CoreError>(())
            })
            .unwrap_err()
            .to_string();
        assert_eq!(seen, ["otel-aa-01"]);
        assert_eq!(err, "f: line 3, span 2: span has no 'traceId'");
        // What the sink refuses stops the read with the sink's own error.
        let text = line(vec![
            span("aa", "01", S, chat("x")),
            span("aa", "03", S, chat("y")),
        ]);
        let mut calls = 0;
        let err = OtelReader::default()
            .read_line("f", 1, &text, &mut |_| {
                calls += 1;
                Err(CoreError::Content {
                    origin: "store".into(),
                    message: "full".into(),
                })
            })
            .unwrap_err();
        assert_eq!((calls, err.to_string().as_str()), (1, "store: full"));
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

    /// The messages are read typed (tester 9 T9-14), with what the tree reading made of each
    /// shape: a number among the messages (serde_json hands it over as a map) is not a
    /// message, as text and as a value; a message whose `content` is there but holds no
    /// text is passed over for an earlier one (its `parts` unread); the placeholders are
    /// not recorded; the metadata's alias names the caller; a refusal is a refusal.
    #[test]
    fn messages_of_every_shape_read_as_the_tree_read_them() {
        let base = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00"});
        let row = |field: &str, v: Value| {
            let mut row = base.clone();
            row[field] = v;
            row
        };
        for messages in [
            json!("[{\"role\":\"user\",\"content\":\"x\"}, 5.0]"),
            json!([{"role": "user", "content": "x"}, 5]),
        ] {
            let err = litellm_row("f: row 1", &row("messages", messages))
                .unwrap_err()
                .to_string();
            assert!(err.contains("field 'messages' item 2 is 5"), "{err}");
        }
        let err = litellm_row(
            "f: row 1",
            &row("messages", json!("12345678901234567890123")),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with("field 'messages' is 12345678901234567890123, not a list of messages"),
            "{err}"
        );
        // A number past 64 bits (a value hands it over as a u128) read past anywhere.
        let wide: Value = serde_json::from_str(
            r#"[{"role": "user", "content": "wide", "n": 123456789012345678901,
                "parts": [123456789012345678901]}]"#,
        )
        .unwrap();
        let mut r = row("messages", wide.clone());
        r["metadata"] = json!({"n": wide.clone()});
        r["response"] = json!({"n": wide, "choices": []});
        let p = litellm_row("f: row 1", &r).unwrap();
        assert_eq!(p.intent, "wide");
        let passed_over = json!([{"role": "user", "content": "first"},
            {"role": "user", "content": null, "parts": [{"type": "text", "content": "p"}]},
            {"role": "assistant", "content": "not the user"}]);
        for messages in [passed_over.clone(), json!(passed_over.to_string())] {
            let p = litellm_row("f: row 1", &row("messages", messages)).unwrap();
            assert_eq!(p.intent, "first");
        }
        let parts = json!([{"role": "user", "parts": [{"type": "text", "content": " a"},
            {"type": "image", "url": "u"}, {"text": "b "}, {"content": 5, "text": "c"}]}]);
        let p = litellm_row("f: row 1", &row("messages", parts)).unwrap();
        assert_eq!(p.intent, "ab");
        for placeholder in [
            json!("{}"),
            json!("[]"),
            json!({}),
            json!("  "),
            Value::Null,
        ] {
            let p = litellm_row("f: row 1", &row("messages", placeholder)).unwrap();
            assert_eq!(p.intent, INPUT_NOT_RECORDED);
        }
        let mut r = row(
            "metadata",
            json!("{\"user_api_key_alias\": \"team-a\", \"x\": [1]}"),
        );
        r["response"] = json!({"choices": [{"finish_reason": "stop", "message": {
            "content": "", "refusal": "I will not", "reasoning_content": "why"}}, 7]});
        let p = litellm_row("f: row 1", &r).unwrap();
        assert_eq!(p.caller, "team-a");
        assert_eq!(p.failure_class.as_deref(), Some("refused"));
        assert_eq!(p.finish_reason.as_deref(), Some("stop"));
        // A message's text parts joined in order (a live answer's content parts are); the
        // first message the answer, the others other choices; its finish reason its own.
        let out = json!([{"role": "assistant", "parts": [{"type": "text", "content": "no"},
            {"type": "text", "content": " plan"}]}, {"finish_reason": "stop"},
            {"parts": [{"type": "text", "content": "else"}], "finish_reason": "length"}]);
        let attrs = json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": out.to_string()}},
        ]);
        let text = line(vec![span("aa", "01", S, attrs)]);
        let t = read_otel("f", [(1, text.as_str())]).unwrap();
        assert_eq!(t.plans[0].raw_response.as_deref(), Some("no plan"));
        assert_eq!(t.plans[0].finish_reason.as_deref(), None);
        assert_eq!(t.plans[0].failure_class.as_deref(), Some("no_plan"));
    }

    /// The chat span of `out` (a GenAI output message list) and `input` (an input one).
    fn chat_of(out: Value, input: Value) -> PlanRecord {
        let attrs = json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": input.to_string()}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": out.to_string()}},
        ]);
        let text = line(vec![span("aa", "01", S, attrs)]);
        let mut t = read_otel("f", [(1, text.as_str())]).unwrap();
        t.plans.remove(0)
    }

    const ASK: &str = r#"[{"role": "user", "parts": [{"type": "text", "content": "go"}]}]"#;

    /// A span's output messages are its choices (the GenAI conventions: each message one
    /// response of the model), and an imported answer follows a live one's rule: the first
    /// is the answer — its text, tool calls, finish reason — and the others are counted in
    /// `other_choices`, as a live reply counts the choices past index 0. They had all been
    /// read, their texts joined by line breaks and their calls made one plan.
    #[test]
    fn a_span_answer_is_its_first_output_message_and_the_others_are_counted() {
        let plan = r#"{"steps":[{"order":1,"tool":"fs.search"}]}"#;
        let out = json!([
            {"role": "assistant", "parts": [{"type": "text", "content": plan}],
                "finish_reason": "stop"},
            {"role": "assistant", "parts": [
                {"type": "tool_call", "name": "mail.send", "arguments": {}}],
                "finish_reason": "tool_call"},
            {"role": "assistant", "parts": [{"type": "blob", "content": "iVBO"}]}]);
        let p = chat_of(out, serde_json::from_str(ASK).unwrap());
        assert_eq!(p.raw_response.as_deref(), Some(plan));
        assert_eq!(p.outcome, Outcome::Ok, "{:?}", p.failure_class);
        let tools: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
        assert_eq!(tools, ["fs.search"]);
        assert_eq!(p.finish_reason.as_deref(), Some("stop"));
        let answer = p.answer.unwrap();
        assert_eq!(answer[OTHER_CHOICES], 2, "{answer}");
        assert_eq!(answer["tool_calls"], json!([]), "{answer}");
        assert!(answer.get(NOT_READ).is_none(), "{answer}");
        // One message: no other choices said.
        let one = json!([{"role": "assistant", "parts": [{"type": "text", "content": plan}]}]);
        let answer = chat_of(one, serde_json::from_str(ASK).unwrap())
            .answer
            .unwrap();
        assert!(answer.get(OTHER_CHOICES).is_none(), "{answer}");
        // A first message with no answer in it is still the answer: no plan, said so.
        let out = json!([{"role": "assistant", "parts": []},
            {"role": "assistant", "parts": [{"type": "text", "content": plan}]}]);
        let p = chat_of(out, serde_json::from_str(ASK).unwrap());
        assert_eq!(p.outcome, Outcome::Failed);
        assert_eq!(p.raw_response, None);
    }

    /// A GenAI `reasoning` part is the answer's reasoning, as a live answer's
    /// `reasoning_content` is (it had been named in `not_read`): its parts joined in order
    /// as text parts are, kept in the answer's `reasoning`, folded into the raw response as
    /// a `<think>` block as a live one's is, and read by the same reader — reasoning and no
    /// answer is `reasoning_only`. A reasoning part without text is still named.
    #[test]
    fn a_reasoning_part_is_the_answer_s_reasoning() {
        let plan = r#"{"steps":[{"order":1,"tool":"fs.search"}]}"#;
        let out = json!([{"role": "assistant", "parts": [
            {"type": "reasoning", "content": "first search,"},
            {"type": "text", "content": plan},
            {"type": "reasoning", "content": " then stop"},
            {"type": "uri", "uri": "https://example.com/a.png"}]}]);
        let p = chat_of(out, serde_json::from_str(ASK).unwrap());
        assert_eq!(p.outcome, Outcome::Ok, "{:?}", p.failure_class);
        assert_eq!(
            p.raw_response.as_deref(),
            Some(format!("<think>first search, then stop</think>{plan}").as_str())
        );
        let answer = p.answer.unwrap();
        assert_eq!(answer["reasoning"], "first search, then stop", "{answer}");
        assert_eq!(answer[NOT_READ], json!(["a content part of type uri"]));

        let out = json!([{"role": "assistant", "finish_reason": "stop", "parts": [
            {"type": "reasoning", "content": "thinking, no answer"}]}]);
        let p = chat_of(out, serde_json::from_str(ASK).unwrap());
        assert_eq!(p.failure_class.as_deref(), Some("reasoning_only"));
        assert!(p.answer.unwrap().get(NOT_READ).is_none());

        let out = json!([{"role": "assistant", "parts": [
            {"type": "reasoning", "content": 5}, {"type": "text", "content": plan}]}]);
        let answer = chat_of(out, serde_json::from_str(ASK).unwrap())
            .answer
            .unwrap();
        assert!(answer.get("reasoning").is_none(), "{answer}");
        assert_eq!(
            answer[NOT_READ],
            json!(["a content part of type reasoning"])
        );
    }

    /// The intent's parts are read by the rule an answer's are (`content_part`): the text
    /// parts of the last user message joined in order with nothing between them (they are
    /// pieces of one message; a line break had been put between them), a part of another
    /// type left out — a span's GenAI `parts` and a spend log's `content` list alike.
    #[test]
    fn the_intent_s_parts_are_read_as_an_answer_s_are() {
        let input = json!([{"role": "user", "parts": [
            {"type": "text", "content": "find the no"},
            {"type": "uri", "uri": "https://example.com/a.png"},
            {"type": "text", "content": "tes and mail them"}]}]);
        let p = chat_of(json!([{"role": "assistant", "parts": []}]), input);
        assert_eq!(p.intent, "find the notes and mail them");
        let row = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "find the no"},
                {"type": "image_url", "image_url": {"url": "u"}},
                {"type": "input_text", "text": "tes"}]}]});
        let p = litellm_row("f: row 1", &row).unwrap();
        assert_eq!(p.intent, "find the notes");
    }

    /// A spend log's answer keeps what a live one keeps by the same stored fields a span's
    /// uses: its `reasoning_content` (it was read, so a reasoning-only answer got its class,
    /// but not kept: the raw response held the content alone) and the choices past the
    /// first, counted (they were read past unsaid).
    #[test]
    fn a_spend_log_answer_keeps_its_reasoning_and_counts_other_choices() {
        let plan = r#"{"steps":[{"order":1,"tool":"fs.search"}]}"#;
        let row = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00",
            "status": "success", "response": {"choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                    "content": plan, "reasoning_content": "search it"}},
                {"index": 1, "finish_reason": "stop", "message": {"content": "other"}}]}});
        let p = litellm_row("f: row 1", &row).unwrap();
        assert_eq!(p.outcome, Outcome::Ok, "{:?}", p.failure_class);
        assert_eq!(
            p.raw_response.as_deref(),
            Some(format!("<think>search it</think>{plan}").as_str())
        );
        let answer = p.answer.unwrap();
        assert_eq!(answer[REASONING], "search it", "{answer}");
        assert_eq!(answer[OTHER_CHOICES], 1, "{answer}");
    }

    /// Left by the last note: a spend log's answer was its first listed choice, and its
    /// reasoning only `reasoning_content`. A live reply keeps the choice at `index` 0 and
    /// reads `reasoning` and `reasoning_details` too; an import reads the same answer.
    #[test]
    fn a_spend_log_answer_is_the_choice_at_index_0_with_a_live_replys_reasoning() {
        let plan = r#"{"steps":[{"order":1,"tool":"fs.search"}]}"#;
        let response = |reasoning: &Value| {
            let mut message = json!({"content": plan});
            let fields = reasoning.as_object().unwrap().clone();
            message.as_object_mut().unwrap().extend(fields);
            json!({"choices": [
                {"index": 1, "finish_reason": "length", "message": {"content": "second"}},
                {"index": 0, "finish_reason": "stop", "message": message}]})
        };
        let cases = [
            (json!({"reasoning": "plain"}), Some("plain")),
            (
                json!({"reasoning_details": [{"text": "de"}, {"summary": "tail"}]}),
                Some("detail"),
            ),
            (
                json!({"reasoning": "plain", "reasoning_content": "content"}),
                Some("content"),
            ),
            (json!({}), None),
        ];
        for (reasoning, want) in cases {
            let row = json!({"request_id": "r1", "model": "m",
                "startTime": "2026-10-03T12:00:00", "status": "success",
                "response": response(&reasoning)});
            let p = litellm_row("f: row 1", &row).unwrap();
            let answer = p.answer.clone().unwrap();
            assert_eq!(p.outcome, Outcome::Ok, "{reasoning}: {:?}", p.failure_class);
            assert_eq!(answer[OTHER_CHOICES], 1, "{answer}");
            assert_eq!(
                answer.get(REASONING).and_then(Value::as_str),
                want,
                "{reasoning}"
            );
            let raw = p.raw_response.unwrap();
            assert!(raw.ends_with(plan) && !raw.contains("second"), "{raw}");
        }
        // No choice at index 0: no answer kept, every choice counted.
        let row = json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00",
            "status": "success", "response": {"choices": [
                {"index": 1, "message": {"content": "one"}},
                {"index": "0", "message": {"content": "two"}}]}});
        let p = litellm_row("f: row 1", &row).unwrap();
        assert_eq!(p.raw_response, None);
        assert_eq!(p.answer.unwrap()[OTHER_CHOICES], 2);
    }

    /// A recorded answer is read as a live one is (left open by tester 13 T13-10): `content`
    /// as a list of parts is its text parts joined in order, as `core::failure::content_of`
    /// joins a live answer's — not by line breaks, which broke a plan split inside a string,
    /// and not a part's `content` or a part of another type's text; a part that is not text
    /// is named in the answer's `not_read`, never dropped unsaid; a legacy `function_call`
    /// is one call, as `tool_calls_of` reads it (it was read as nothing). Given as a value
    /// and as JSON text alike.
    #[test]
    fn an_answer_in_parts_or_a_function_call_is_read_as_a_live_answer_is() {
        let row = |message: Value, finish: &str, as_text: bool| {
            let response = json!({"choices": [{"index": 0, "finish_reason": finish,
                "message": message}]});
            json!({"request_id": "r1", "model": "m", "startTime": "2026-10-03T12:00:00",
                "status": "success",
                "response": if as_text { json!(response.to_string()) } else { response }})
        };
        let plan = r#"{"steps":[{"order":1,"tool":"fs.search"}]}"#;
        let (head, tail) = plan.split_at(plan.find("sea").unwrap() + 3);
        let parts = json!({"role": "assistant", "content": [
            {"type": "text", "text": head},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "reasoning", "text": "not the answer"},
            {"type": "text", "text": tail}]});
        let only_an_image = json!({"role": "assistant", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]});
        let legacy = json!({"role": "assistant", "content": null,
            "function_call": {"name": "fs.search", "arguments": "{\"q\": \"notes\"}"}});
        for as_text in [false, true] {
            let p = litellm_row("f: row 1", &row(parts.clone(), "stop", as_text)).unwrap();
            assert_eq!(p.raw_response.as_deref(), Some(plan), "as text: {as_text}");
            assert_eq!(p.outcome, Outcome::Ok, "{:?}", p.failure_class);
            assert_eq!(p.steps[0].tool, "fs.search");
            let answer = p.answer.unwrap();
            assert_eq!(
                answer["not_read"],
                json!([
                    "a content part of type image_url",
                    "a content part of type reasoning"
                ]),
                "{answer}"
            );

            let p = litellm_row("f: row 1", &row(only_an_image.clone(), "stop", as_text)).unwrap();
            assert_eq!(p.raw_response.as_deref(), Some(""));
            assert_eq!(p.failure_class.as_deref(), Some("no_plan"));
            let answer = p.answer.unwrap();
            assert_eq!(
                answer["not_read"],
                json!(["a content part of type image_url"]),
                "{answer}"
            );

            let p =
                litellm_row("f: row 1", &row(legacy.clone(), "function_call", as_text)).unwrap();
            assert_eq!(p.outcome, Outcome::Ok, "{:?}", p.failure_class);
            assert_eq!(p.steps.len(), 1);
            assert_eq!(p.steps[0].tool, "fs.search");
            let answer = p.answer.unwrap();
            assert_eq!(answer["tool_calls"][0]["name"], "fs.search", "{answer}");
            assert_eq!(answer["tool_calls"][0]["arguments"], "{\"q\": \"notes\"}");
            assert!(answer.get("not_read").is_none(), "{answer}");
        }
    }

    /// The reading of messages before they were read typed (tester 9 T9-14): the tree
    /// walks, kept here as the reference the typed reader is held to.
    mod tree {
        use serde_json::Value;

        use crate::core::failure::{
            Reply, ToolCall, choice_index, content_of, content_part, reasoning_of, tool_calls_of,
        };

        /// A message's text: a string, or its parts read by the one rule for parts (each
        /// part's `content`, else its `text`).
        pub fn text_of(content: &Value) -> Option<String> {
            match content {
                Value::String(s) => Some(s.clone()),
                Value::Array(parts) => {
                    let (mut text, mut read) = (String::new(), false);
                    for p in parts {
                        read |= content_part(
                            p.get("type").and_then(Value::as_str),
                            p.get("content")
                                .or_else(|| p.get("text"))
                                .and_then(Value::as_str),
                            &mut text,
                            &mut Vec::new(),
                        );
                    }
                    read.then_some(text)
                }
                _ => None,
            }
        }

        /// The placeholders read as nothing recorded; `Err` for text that is not JSON.
        pub fn recorded(v: &Value) -> Result<Option<Value>, ()> {
            let value = match v {
                Value::Null => return Ok(None),
                Value::String(s) if s.trim().is_empty() => return Ok(None),
                Value::String(s) => serde_json::from_str(s).map_err(|_| ())?,
                other => other.clone(),
            };
            let placeholder = match &value {
                Value::Null => true,
                Value::Object(o) => o.is_empty(),
                Value::Array(a) => a.is_empty(),
                _ => false,
            };
            Ok((!placeholder).then_some(value))
        }

        /// The last user text, or the error's words.
        pub fn intent(messages: Option<Value>) -> Result<Option<String>, String> {
            let Some(messages) = messages else {
                return Ok(None);
            };
            let Value::Array(list) = &messages else {
                return Err(format!("is {}", super::super::messages::shown(&messages)));
            };
            if let Some((i, item)) = list.iter().enumerate().find(|(_, m)| !m.is_object()) {
                return Err(format!(
                    "item {} is {}",
                    i + 1,
                    super::super::messages::shown(item)
                ));
            }
            Ok(list
                .iter()
                .rev()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .find_map(|m| {
                    m.get("content")
                        .or_else(|| m.get("parts"))
                        .and_then(text_of)
                }))
        }

        /// A GenAI output list as a live reply: its first message the answer — text (its
        /// text parts joined in order by the one rule for parts), reasoning (its reasoning
        /// parts so joined), finish reason, tool calls, what was not read — and the others
        /// counted (`None`: not recorded).
        pub fn output(output: Option<Value>) -> Option<Reply> {
            let Some(Value::Array(messages)) = output else {
                return None;
            };
            let mut reply = Reply {
                other_choices: u32::try_from(messages.len().saturating_sub(1)).unwrap(),
                ..Reply::default()
            };
            let mut text = Vec::new();
            for m in messages.iter().take(1) {
                let mut message: Option<String> = None;
                reply.finish_reason = m
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                for part in m
                    .get("parts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let kind = part.get("type").and_then(Value::as_str);
                    let content = part.get("content").and_then(Value::as_str);
                    match (kind, content) {
                        (Some("reasoning"), Some(r)) => {
                            reply.reasoning.get_or_insert_with(String::new).push_str(r)
                        }
                        (Some("tool_call"), _) => reply.tool_calls.push(ToolCall {
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
                        _ => {
                            let had = message.is_some();
                            let mut t = message.take().unwrap_or_default();
                            let read = content_part(kind, content, &mut t, &mut reply.not_read);
                            if read || had {
                                message = Some(t);
                            }
                        }
                    }
                }
                text.extend(message);
            }
            if !text.is_empty() {
                reply.content = Some(text.join("\n"));
            }
            Some(reply)
        }

        /// A chat completion's choice at index 0 as a reply (`None`: no choice): read as
        /// a live answer's is.
        pub fn completion(response: Option<Value>) -> Option<Reply> {
            let response = response?;
            let choices = response.get("choices")?.as_array()?;
            if choices.is_empty() {
                return None;
            }
            let kept = choices.iter().find(|c| choice_index(c) == Some(0));
            let choice = kept.unwrap_or(&Value::Null);
            let message = choice.get("message").filter(|m| m.is_object());
            let mut not_read = Vec::new();
            Some(Reply {
                content: message.and_then(|m| content_of(m, &mut not_read)),
                reasoning: message.and_then(reasoning_of),
                refusal: message
                    .and_then(|m| m.get("refusal"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                finish_reason: choice
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                tool_calls: message.map(tool_calls_of).unwrap_or_default(),
                usage: None,
                id: None,
                not_read,
                other_choices: u32::try_from(choices.len() - usize::from(kept.is_some())).unwrap(),
            })
        }
    }

    /// Any of a few JSON values of every shape the messages' fields meet.
    fn scalar() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            Just(json!(true)),
            Just(json!(5)),
            Just(json!(2.5)),
            Just(serde_json::from_str::<Value>("123456789012345678901234567890").unwrap()),
            Just(json!("")),
            Just(json!("  ")),
            Just(json!("user")),
            Just(json!("text")),
            Just(json!("tool_call")),
            Just(json!("hé \n ok")),
            Just(json!("{\"q\": [1, 2]}")),
            Just(json!("not json")),
            Just(json!({})),
            Just(json!([])),
            Just(json!({"q": [1, {"r": null}]})),
        ]
    }

    /// A JSON value built of objects with the messages' keys, lists and [`scalar`]s.
    fn shaped() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        const KEYS: &[&str] = &[
            "role",
            "content",
            "parts",
            "text",
            "type",
            "id",
            "name",
            "arguments",
            "finish_reason",
            "choices",
            "message",
            "tool_calls",
            "function",
            "refusal",
            "reasoning_content",
            "function_call",
            "other",
        ];
        scalar().prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    /// An object of some of `entries` (each a key and its value's strategy).
    fn object_of(
        entries: Vec<proptest::strategy::BoxedStrategy<(&'static str, Value)>>,
    ) -> proptest::strategy::BoxedStrategy<Value> {
        use proptest::prelude::*;
        prop::collection::vec(proptest::strategy::Union::new(entries), 0..6)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed()
    }

    fn entry(
        key: &'static str,
        values: impl proptest::strategy::Strategy<Value = Value> + 'static,
    ) -> proptest::strategy::BoxedStrategy<(&'static str, Value)> {
        use proptest::prelude::*;
        values.prop_map(move |v| (key, v)).boxed()
    }

    /// Message lists and completions in the shapes the sources write, and near misses.
    fn message_like() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = || {
            prop_oneof![
                Just(json!("hi")),
                Just(json!(" two words ")),
                Just(json!("")),
                Just(json!(5)),
                Just(Value::Null),
            ]
        };
        let args = || {
            prop_oneof![
                Just(json!({"q": 1})),
                Just(json!("{\"q\": 1}")),
                Just(json!("not json")),
                Just(json!([1, 2])),
                Just(Value::Null),
            ]
        };
        let part = object_of(vec![
            entry(
                "type",
                prop_oneof![
                    Just(json!("text")),
                    Just(json!("tool_call")),
                    Just(json!("reasoning")),
                    Just(json!("input_text")),
                    Just(json!("image")),
                    Just(json!(5))
                ],
            ),
            entry("content", text()),
            entry("text", text()),
            entry("id", prop_oneof![Just(json!("c1")), Just(json!(7))]),
            entry(
                "name",
                prop_oneof![Just(json!("fs.search")), Just(Value::Null)],
            ),
            entry("arguments", args()),
        ]);
        let parts = prop::collection::vec(prop_oneof![6 => part, 1 => scalar()], 0..4)
            .prop_map(Value::Array)
            .boxed();
        let function = object_of(vec![
            entry("name", prop_oneof![Just(json!("fs.read")), Just(json!(3))]),
            entry("arguments", args()),
        ]);
        let call = prop_oneof![
            object_of(vec![
                entry("id", prop_oneof![Just(json!("c2")), Just(Value::Null)]),
                entry("type", Just(json!("function"))),
                entry("function", prop_oneof![function.clone(), scalar()]),
                entry("name", Just(json!("top.name"))),
                entry("arguments", args()),
            ]),
            scalar(),
        ];
        let calls = prop::collection::vec(call, 0..4).prop_map(Value::Array);
        let content = prop_oneof![text(), parts.clone(), Just(json!({}))];
        let message = object_of(vec![
            entry(
                "role",
                prop_oneof![
                    3 => Just(json!("user")),
                    1 => Just(json!("assistant")),
                    1 => Just(json!(5))
                ],
            ),
            entry("content", content),
            entry("parts", prop_oneof![parts, text()]),
            entry(
                "finish_reason",
                prop_oneof![Just(json!("stop")), Just(json!("length")), Just(json!(5))],
            ),
            entry("tool_calls", prop_oneof![calls, scalar()]),
            entry("function_call", prop_oneof![function.clone(), scalar()]),
            entry("refusal", text()),
            entry("reasoning_content", text()),
            entry("other", scalar()),
        ]);
        let messages =
            prop::collection::vec(prop_oneof![12 => message.clone(), 1 => scalar()], 0..5)
                .prop_map(Value::Array);
        let choice = prop_oneof![
            8 => object_of(vec![
                entry("message", prop_oneof![message, scalar()]),
                entry("finish_reason", prop_oneof![Just(json!("tool_calls")), Just(json!(1))]),
                entry("index", Just(json!(0))),
            ]),
            1 => scalar(),
        ];
        let completion = object_of(vec![
            entry(
                "choices",
                prop_oneof![
                    4 => prop::collection::vec(choice, 0..3).prop_map(Value::Array),
                    1 => scalar()
                ],
            ),
            entry("id", Just(json!("x"))),
        ]);
        prop_oneof![3 => messages, 2 => completion, 1 => shaped()]
    }

    fn calls(c: &[crate::core::failure::ToolCall]) -> Vec<(Option<String>, String, String)> {
        c.iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4_000))]

        /// The typed reader reads every shape as the tree walks did, given as a value and
        /// as its JSON text: the intent (or the error), a GenAI output list, a completion.
        #[test]
        fn the_typed_reader_reads_every_shape_as_the_tree_did(v in message_like()) {
            for given in [v.clone(), Value::String(v.to_string())] {
                let Ok(recorded) = tree::recorded(&given) else {
                    // Text that is not JSON: an error for each reader, as it was.
                    proptest::prop_assert!(read_recorded("p", "w", Some(&given), InputMessages).is_err());
                    proptest::prop_assert!(read_recorded("p", "w", Some(&given), OutputMessages).is_err());
                    proptest::prop_assert!(read_recorded("p", "w", Some(&given), Completion).is_err());
                    continue;
                };
                let want = tree::intent(recorded.clone());
                let got = match read_recorded("p", "w", Some(&given), InputMessages).unwrap() {
                    None => Ok(None),
                    Some(Input::Messages(text)) => Ok(text),
                    Some(Input::NotAList(shown)) => Err(format!("is {shown}")),
                    Some(Input::NotAMessage(i, shown)) => Err(format!("item {i} is {shown}")),
                };
                proptest::prop_assert_eq!(&got, &want, "input {}", given);

                let want = tree::output(recorded.clone());
                let got = read_recorded("p", "w", Some(&given), OutputMessages).unwrap();
                proptest::prop_assert_eq!(got.is_some(), want.is_some(), "output {}", given);
                if let (Some(got), Some(want)) = (got, want) {
                    proptest::prop_assert_eq!(&got.text, &want.content);
                    proptest::prop_assert_eq!(&got.not_read, &want.not_read, "{}", given);
                    proptest::prop_assert_eq!(&got.finish_reason, &want.finish_reason);
                    proptest::prop_assert_eq!(&got.reasoning, &want.reasoning, "{}", given);
                    proptest::prop_assert_eq!(got.other_choices, want.other_choices);
                    proptest::prop_assert_eq!(calls(&got.calls.kept), calls(&want.tool_calls));
                }

                let want = tree::completion(recorded);
                let got = read_recorded("p", "w", Some(&given), Completion).unwrap();
                proptest::prop_assert_eq!(got.is_some(), want.is_some(), "completion {}", given);
                if let (Some(got), Some(want)) = (got, want) {
                    let m = got.message.unwrap_or_default();
                    proptest::prop_assert_eq!(&m.content, &want.content, "{}", given);
                    proptest::prop_assert_eq!(&m.not_read, &want.not_read, "{}", given);
                    proptest::prop_assert_eq!(&m.reasoning, &want.reasoning);
                    proptest::prop_assert_eq!(&m.refusal, &want.refusal);
                    proptest::prop_assert_eq!(&got.finish_reason, &want.finish_reason);
                    proptest::prop_assert_eq!(got.other_choices, want.other_choices);
                    proptest::prop_assert_eq!(calls(&m.calls.kept), calls(&want.tool_calls));
                }
            }
        }
    }
}
