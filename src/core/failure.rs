//! Why no plan came back (DESIGN §2.8): finish_reason normalised across providers, the
//! failure classes with what to do about each, and the reading of one reply — reasoning
//! stripped, the answer decoded, and a class when nothing usable was in it.

use crate::core::terminal_text::quote_reply;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

use crate::core::response::{DecodeStage, decode_answer, strip_reasoning};

/// What a provider's finish_reason means, whatever it was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishKind {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    /// A value no provider table here knows: shown as it came, never taken for `stop`.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinishReason {
    /// As the provider sent it.
    pub raw: String,
    pub kind: FinishKind,
}

impl FinishReason {
    /// OpenAI, Anthropic (`end_turn`, `max_tokens`, `refusal`, …), Gemini (`STOP`,
    /// `MAX_TOKENS`, `SAFETY`, `RECITATION`, …), Ollama, vLLM and llama.cpp names.
    pub fn parse(raw: &str) -> FinishReason {
        let kind = match raw.trim().to_ascii_lowercase().as_str() {
            "stop" | "end_turn" | "stop_sequence" | "eos" | "eos_token" | "finish_reason_stop" => {
                FinishKind::Stop
            }
            "length" | "max_tokens" | "model_length" | "max_output_tokens" => FinishKind::Length,
            "content_filter" | "refusal" | "safety" | "recitation" | "blocklist"
            | "prohibited_content" | "spii" | "image_safety" | "language" => {
                FinishKind::ContentFilter
            }
            "tool_calls" | "function_call" | "tool_use" | "malformed_function_call" => {
                FinishKind::ToolCalls
            }
            _ => FinishKind::Unknown,
        };
        FinishReason {
            raw: raw.to_string(),
            kind,
        }
    }

    /// `length`, `length (max_tokens)` when the provider called it something else,
    /// `weird (unknown)` when nothing here knows it.
    pub fn label(&self) -> String {
        let normal = match self.kind {
            FinishKind::Stop => "stop",
            FinishKind::Length => "length",
            FinishKind::ContentFilter => "content_filter",
            FinishKind::ToolCalls => "tool_calls",
            FinishKind::Unknown => return format!("{} (unknown)", self.raw),
        };
        if self.raw == normal {
            normal.to_string()
        } else {
            format!("{normal} ({})", self.raw)
        }
    }
}

/// Why a call produced no plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The provider's filter stopped the answer: a finish_reason from it (`content_filter`,
    /// Gemini's `SAFETY`/`RECITATION`/…, Anthropic's `refusal`, which its classifiers set).
    SafetyFiltered,
    /// The model declined in its own words: the message's `refusal` field, or prose that
    /// opens by declining ("I'm unable to…", "I can't help with…").
    Refused,
    /// The token limit cut the answer.
    LengthTruncated,
    /// JSON-shaped, unparseable, stopped.
    ConstrainedDeadlock,
    /// HTTP 200, no content, no finish_reason: the connection was cut mid-generation.
    LikelyTimeout,
    /// Reasoning that never reached an answer.
    ReasoningOnly,
    /// An answer came back, but neither JSON nor a plan: prose, or JSON of another shape.
    NoPlan,
    /// The endpoint answered with an error status.
    HttpError,
    /// No answer: connection refused, reset, timed out, or the stream was cut.
    Transport,
    /// The body is not a chat completion.
    Protocol,
}

impl FailureClass {
    pub const ALL: [FailureClass; 10] = [
        FailureClass::SafetyFiltered,
        FailureClass::Refused,
        FailureClass::LengthTruncated,
        FailureClass::ConstrainedDeadlock,
        FailureClass::LikelyTimeout,
        FailureClass::ReasoningOnly,
        FailureClass::NoPlan,
        FailureClass::HttpError,
        FailureClass::Transport,
        FailureClass::Protocol,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::SafetyFiltered => "safety_filtered",
            FailureClass::Refused => "refused",
            FailureClass::LengthTruncated => "length_truncated",
            FailureClass::ConstrainedDeadlock => "constrained_deadlock",
            FailureClass::LikelyTimeout => "likely_timeout",
            FailureClass::ReasoningOnly => "reasoning_only",
            FailureClass::NoPlan => "no_plan",
            FailureClass::HttpError => "http_error",
            FailureClass::Transport => "transport",
            FailureClass::Protocol => "protocol",
        }
    }

    pub fn parse(s: &str) -> Option<FailureClass> {
        FailureClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Decided by the HTTP layer: the stored body is not a model's answer, so there is
    /// nothing for a decoder to recover.
    pub fn is_transport_level(self) -> bool {
        matches!(
            self,
            FailureClass::HttpError | FailureClass::Transport | FailureClass::Protocol
        )
    }

    /// What an operator should do about it.
    pub fn action(self) -> &'static str {
        match self {
            FailureClass::SafetyFiltered => {
                "the provider's filter stopped it: the same prompt on the same provider is filtered again; surface it to the user, rephrase, or route to another provider"
            }
            FailureClass::Refused => {
                "the model declined: read its reason; if it misread the intent, rephrase or narrow the catalog; else route to a model that plans it (a retry gets the same answer)"
            }
            FailureClass::LengthTruncated => {
                "raise the row's output_tokens or shrink the catalog; the single_pick variant asks for less output"
            }
            FailureClass::ConstrainedDeadlock => {
                "turn strict_json off for this row (quantized weak models deadlock under constrained decoding), then retry once"
            }
            FailureClass::LikelyTimeout => {
                "retry with streaming and a longer timeout, or fall back to a model that does not reason at length"
            }
            FailureClass::ReasoningOnly => {
                "give reasoning room to finish (output_tokens, timeout) or lower the thinking level; a non-reasoning model avoids it"
            }
            FailureClass::NoPlan => {
                "use the single_pick prompt variant or a stronger model: this one did not answer with a plan"
            }
            FailureClass::HttpError => {
                "429: wait for retry-after and retry; 5xx: retry with backoff or fail over; other 4xx: fix the model id or key"
            }
            FailureClass::Transport => {
                "check the endpoint is reachable; raise the connect or total timeout for slow local servers; retry"
            }
            FailureClass::Protocol => {
                "a reply over llm.max_reply_bytes: raise it or lower the row's output_tokens; any other: the endpoint is not an OpenAI-compatible /chat/completions, so check the provider's base_url (usually ending in /v1)"
            }
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A class with what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub class: FailureClass,
    pub detail: String,
    pub action: &'static str,
}

impl Failure {
    pub fn new(class: FailureClass, detail: impl Into<String>) -> Failure {
        Failure {
            class,
            detail: detail.into(),
            action: class.action(),
        }
    }
}

/// One native tool call of a reply, in the order the model made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// The function's arguments as the model wrote them (JSON text, not always valid).
    #[serde(default)]
    pub arguments: String,
}

/// Notes of what was not read ([`Reply::not_read`]) are few and short: a hostile answer
/// cannot grow them.
pub const NOT_READ_NOTES: usize = 8;

/// `what` named in `not_read`, once, while it holds fewer than [`NOT_READ_NOTES`].
pub fn note_not_read(not_read: &mut Vec<String>, what: String) {
    if not_read.len() < NOT_READ_NOTES && !not_read.contains(&what) {
        not_read.push(what);
    }
}

/// One part of a message's `content` list, as its `type` and `text` read (each `None` when
/// absent or not a string): a text part's text (type `text`, `output_text` or `input_text`,
/// or none given) is appended to `text`, with nothing between it and the text before (the
/// parts of one message are pieces of one text), and `true` says it was; any other part is
/// named in `not_read`. The one rule for a live answer ([`content_of`]), a recorded one (the
/// traffic importer, which reads the parts as the parser reaches them, never a tree of
/// them: a spend log's `content` list and a span's output message `parts`, whose text is
/// its `content`) and a recorded intent's parts (the last user message's).
pub fn content_part(
    kind: Option<&str>,
    part_text: Option<&str>,
    text: &mut String,
    not_read: &mut Vec<String>,
) -> bool {
    let kind = kind.unwrap_or("text");
    match (kind, part_text) {
        ("text" | "output_text" | "input_text", Some(t)) => {
            text.push_str(t);
            true
        }
        _ => {
            note_not_read(
                not_read,
                format!("a content part of type {}", quote_reply(kind, 40)),
            );
            false
        }
    }
}

/// A message's `content` of another JSON type than a string, a list of parts or null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherContent {
    Object,
    Number,
    Boolean,
}

/// Content of another type, named in `not_read` (and read as no content).
pub fn content_of_other_type(other: OtherContent, not_read: &mut Vec<String>) {
    let kind = match other {
        OtherContent::Object => "an object",
        OtherContent::Number => "a number",
        OtherContent::Boolean => "a boolean",
    };
    note_not_read(not_read, format!("content as {kind}"));
}

/// A message's or a stream delta's `content`: a string, or an array of parts whose text
/// parts are joined in order ([`content_part`]; tester 13 T13-10: parts were read as an
/// empty answer). Other parts, and content of another JSON type, are named in `not_read`.
pub fn content_of(v: &Value, not_read: &mut Vec<String>) -> Option<String> {
    match v.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Array(parts) => {
            let mut text = String::new();
            for p in parts {
                content_part(
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                    &mut text,
                    not_read,
                );
            }
            Some(text)
        }
        Value::Object(_) => {
            content_of_other_type(OtherContent::Object, not_read);
            None
        }
        Value::Number(_) => {
            content_of_other_type(OtherContent::Number, not_read);
            None
        }
        Value::Bool(_) => {
            content_of_other_type(OtherContent::Boolean, not_read);
            None
        }
    }
}

/// Reasoning: its field, else the text of each `reasoning_details` entry (OpenRouter);
/// never both, as OpenRouter sends the same text in each.
pub fn reasoning_of(v: &Value) -> Option<String> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|n| v.get(*n).and_then(Value::as_str))
        .map(str::to_string)
        .or_else(|| reasoning_details_text(v.get("reasoning_details")?))
}

/// The text of each `reasoning_details` entry (its `text`, else its `summary`), joined;
/// `None` when there is none.
pub fn reasoning_details_text(details: &Value) -> Option<String> {
    let text: String = details
        .as_array()?
        .iter()
        .filter_map(|d| {
            ["text", "summary"]
                .iter()
                .find_map(|n| d.get(*n).and_then(Value::as_str))
        })
        .collect();
    (!text.is_empty()).then_some(text)
}

/// A choice's `index`; a missing one is 0.
pub fn choice_index(c: &Value) -> Option<u64> {
    index_value(c.get("index"))
}

/// A choice's `index` given as `index` (absent: `None`): a missing or null one is 0, one
/// that is no count is no index.
pub fn index_value(index: Option<&Value>) -> Option<u64> {
    match index {
        None | Some(Value::Null) => Some(0),
        Some(i) => i.as_u64(),
    }
}

/// `message.tool_calls` of a chat completion's message, in order: what a live body and a
/// logged response (LiteLLM spend logs) both carry.
pub fn tool_calls_of(message: &Value) -> Vec<ToolCall> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
        // The legacy `function_call` is one call (tester 13 T13-10: it was read as nothing).
        return message
            .get("function_call")
            .filter(|f| f.is_object())
            .map(|f| tool_calls_of(&serde_json::json!({ "tool_calls": [{ "function": f }] })))
            .unwrap_or_default();
    };
    let text = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
    calls
        .iter()
        .map(|c| {
            let f = c.get("function").unwrap_or(c);
            ToolCall {
                id: text(c, "id"),
                name: text(f, "name").unwrap_or_default(),
                arguments: match f.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    // Some servers send the arguments as an object.
                    Some(other) => other.to_string(),
                },
            }
        })
        .collect()
}

/// What the endpoint counted; any of it may be missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// As the endpoint counted it (tester 13 T13-4: it was never kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Prompt tokens served from the provider's prefix cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// Completion tokens spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

/// The most a call can cost: the most tokens a window reads, in and out, at the highest
/// price a row may have.
pub const MOST_USD_PER_CALL: f64 = 2.0 * 100_000_000.0;

/// USD for `usage` at `prices` (USD per million tokens): the prompt less its cached part at
/// the input price, the cached part at the cached-input price — the input price when the row
/// gives none (tester 35 F13: a row without one billed cached tokens at $0, where a provider
/// without a cache discount charges them in full) —, the completion at the output price.
/// `None` without a prompt count.
pub fn usd_of_usage(prices: &crate::core::budget::Prices, u: &Usage) -> Option<f64> {
    let per = |n: u64, usd_per_m: f64| n as f64 * usd_per_m / 1_000_000.0;
    let prompt = u.prompt_tokens?;
    let cached = u.cached_tokens.unwrap_or(0).min(prompt);
    Some(
        per(prompt - cached, prices.input)
            + per(cached, prices.cached_charge())
            + per(u.completion_tokens.unwrap_or(0), prices.output),
    )
}

/// What a live call cost, kept with its answer (tester 34 F13: the Sent table's cost was on
/// no History screen afterwards): the figure, the row's prices it was reckoned at (prices
/// change), and whether it came from the usage the endpoint reported or, with none, from
/// the request's estimated input alone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptCost {
    pub usd: f64,
    /// USD per million tokens, as the row had them when the call was made.
    pub prices: crate::core::budget::Prices,
    pub from_usage: bool,
}

impl KeptCost {
    /// Why it is no cost of a call that came back with `usage`, or `None`: a price outside
    /// the bounds a budget row's is held to, a figure no call can cost, a cost "from the
    /// usage" of an answer without a prompt count, or one its usage at its prices does not
    /// make (tester 35 F1: `import plans` took $999 beside a usage worth $0.0021, and 1e308).
    pub fn problem(&self, usage: Option<&Usage>) -> Option<String> {
        use crate::core::bounds::{not_a_number_in, number_text};
        let p = &self.prices;
        let bounds = crate::core::bounds::PRICE_PER_MILLION;
        for (field, v) in [
            ("input", p.input),
            ("cached_input", p.cached_input),
            ("output", p.output),
        ] {
            if !bounds.contains(&v) {
                return Some(format!(
                    "'cost.prices.{field}' {}",
                    not_a_number_in(&number_text(v), &bounds)
                ));
            }
        }
        if !(0.0..=MOST_USD_PER_CALL).contains(&self.usd) {
            return Some(format!(
                "'cost.usd' {}",
                not_a_number_in(&number_text(self.usd), &(0.0..=MOST_USD_PER_CALL))
            ));
        }
        if !self.from_usage {
            return None;
        }
        let Some(made) = usage.and_then(|u| usd_of_usage(p, u)) else {
            return Some(
                "'cost.from_usage' is true, but the answer holds no usage with a prompt count"
                    .into(),
            );
        };
        ((self.usd - made).abs() > 1e-12 + 1e-9 * made).then(|| {
            format!(
                "'cost.usd' is {}, where its usage at its prices makes {}",
                number_text(self.usd),
                number_text(made)
            )
        })
    }

    /// `cost: $0.001416 from the usage, at $2 input, $0.5 cached input, $8 output per
    /// million tokens (the row's prices when sent)`.
    pub fn line(&self) -> String {
        let p = &self.prices;
        format!(
            "cost: ${:.6} from {}, at ${} input, ${} cached input, ${} output per million tokens (the row's prices when sent)",
            self.usd,
            if self.from_usage {
                "the usage"
            } else {
                "the estimated input (no prompt count came back)"
            },
            p.input,
            if p.cached_input == 0.0 {
                format!("{} (no cached-input price: the input's)", p.cached_charge())
            } else {
                p.cached_input.to_string()
            },
            p.output
        )
    }
}

/// One chat-completion message as it came back (the HTTP exchange itself succeeded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    #[serde(default)]
    pub content: Option<String>,
    /// The message's `reasoning_content` / `reasoning` field.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The message's `refusal` field.
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Native tool calls (`message.tool_calls`, or streamed deltas assembled by index).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The completion's `id` in the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Choices the server sent besides the one kept (`index` 0), not kept (tester 13 T13-1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_choices: u32,
    /// What the reader saw and did not read, e.g. a content part that is not text (tester 13
    /// T13-10), so a missing answer is not taken for an empty one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
}

impl Reply {
    /// The raw response as the model produced it, as a plan keeps it: a reasoning field
    /// folded in as a `<think>` block before the content, so an offline replay of the
    /// stored row reads it as the reply was read; `None` with neither. The one rule for a
    /// live answer and an imported one.
    pub fn raw_response(&self) -> Option<String> {
        match self.reasoning.as_deref().filter(|r| !r.is_empty()) {
            Some(r) => Some(format!(
                "<think>{r}</think>{}",
                self.content.as_deref().unwrap_or("")
            )),
            None => self.content.clone(),
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Why `answer` (a plan line's `answer` field) is not an answer ctxconsole keeps, or `None`:
/// an object holding a `reply` (a live call's answer) whose reply reads as one, or a
/// `source` (an imported call's: OpenTelemetry, LiteLLM) whose `tool_calls` and `usage`,
/// where given, read as such. An import had taken any JSON, and a bad usage figure then made
/// offline replay drop the kept tool calls and report another class (tester 13 T13-9).
pub fn kept_answer_problem(answer: &Value) -> Option<String> {
    // Read in place: an answer may be hundreds of megabytes.
    fn reads_as<'v, T: serde::Deserialize<'v>>(v: &'v Value) -> Result<(), String> {
        T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
    }
    let Value::Object(o) = answer else {
        return Some("is not an object".into());
    };
    if let Some(reply) = o.get("reply") {
        let reply = match Reply::deserialize(reply) {
            Ok(r) => r,
            Err(e) => return Some(format!("'reply' is not a chat answer: {e}")),
        };
        if let Some(cost) = o.get("cost").filter(|c| !c.is_null()) {
            // Serde reads an array as a struct's fields in order: said as what it is
            // (tester 35 F14: `[1, 2]` read "invalid type: number, expected struct Prices").
            if !cost.is_object() {
                return Some(format!(
                    "'cost' is {} where an object {{\"usd\", \"prices\", \"from_usage\"}} was expected",
                    match cost {
                        Value::Array(_) => "a JSON array",
                        Value::String(_) => "a string",
                        Value::Number(_) => "a number",
                        _ => "a boolean",
                    }
                ));
            }
            return match KeptCost::deserialize(cost) {
                Err(e) => Some(format!("'cost' does not read: {e}")),
                Ok(c) => c.problem(reply.usage.as_ref()),
            };
        }
        return None;
    }
    if o.get("source").is_some_and(Value::is_string) {
        for (field, problem) in [
            (
                "tool_calls",
                o.get("tool_calls").map(reads_as::<Vec<ToolCall>>),
            ),
            (
                "usage",
                o.get("usage")
                    .filter(|u| !u.is_null())
                    .map(reads_as::<Usage>),
            ),
        ] {
            if let Some(Err(e)) = problem {
                return Some(format!("'{field}' does not read: {e}"));
            }
        }
        return None;
    }
    Some(
        "holds neither a 'reply' (a live call's answer) nor a 'source' (an imported call's)".into(),
    )
}

/// The reply a plan's kept answer reads back as, for today's decoder (offline replay), and
/// the count of tool calls it read past and did not keep: a live call's (`{"reply": …}`) is
/// its reply; an imported call's (`{"source": …}`, as `import traces` and `import litellm`
/// keep it) is its raw response (`raw_response`: its text, a reasoning folded in as
/// `<think>`), its kept tool calls, other choices, what was not read, and its finish reason
/// (else `finish_reason`, the plan's) — what the import read the plan from. Anything else
/// (an older row, no answer) is the raw response and `finish_reason` alone. An imported
/// answer had been read as the raw text alone, so a tool-call answer stored ok replayed as
/// "no_plan: an empty answer" (tester 23 F3).
pub fn kept_reply(
    answer: Option<&Value>,
    raw_response: Option<&str>,
    finish_reason: Option<&str>,
) -> (Reply, usize) {
    let text_alone = Reply {
        content: raw_response.map(str::to_string),
        finish_reason: finish_reason.map(str::to_string),
        ..Reply::default()
    };
    let Some(answer) = answer else {
        return (text_alone, 0);
    };
    if let Some(reply) = answer.get("reply") {
        return (Reply::deserialize(reply).unwrap_or(text_alone), 0);
    }
    let Value::Object(o) = answer else {
        return (text_alone, 0);
    };
    if kept_answer_problem(answer).is_some() {
        return (text_alone, 0);
    }
    let tool_calls = o
        .get("tool_calls")
        .and_then(|c| Vec::<ToolCall>::deserialize(c).ok())
        .unwrap_or_default();
    let not_kept = o
        .get("tool_calls_not_kept")
        .and_then(Value::as_u64)
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let reply = Reply {
        tool_calls,
        finish_reason: o
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(text_alone.finish_reason.clone()),
        other_choices: o
            .get("other_choices")
            .and_then(Value::as_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        not_read: o
            .get("not_read")
            .and_then(|n| Vec::<String>::deserialize(n).ok())
            .unwrap_or_default(),
        ..text_alone
    };
    (reply, not_kept)
}

/// The parts of a kept answer (a plan's `answer` column) that its text does not show, one
/// line each, for the views that print the raw response (`history show`, the console's plan
/// view): a live call's (`{"reply": …, "partial": …}`) its tool calls (name and arguments),
/// refusal, reasoning, other choices, what was not read, usage, and whether it was cut off;
/// an imported call's (`{"source": …}`, as `import traces` and `import litellm` keep it)
/// where it came from and what else it keeps (the record's ids, a spend), its tool calls and
/// those read past, what was not read, its usage. A tool-call or refusal answer has no
/// text, and the views had shown it as empty (tester 13 T13-3); an imported answer's were
/// shown only by `--json`. `arguments_width` clips each call's arguments and each kept
/// value (characters). An answer that does not read as either gives nothing.
pub fn kept_answer_lines(answer: &Value, arguments_width: usize) -> Vec<String> {
    if let Some(reply) = answer.get("reply") {
        return Reply::deserialize(reply)
            .map(|reply| live_answer_lines(answer, &reply, arguments_width))
            .unwrap_or_default();
    }
    match answer {
        Value::Object(o) if kept_answer_problem(answer).is_none() => {
            imported_answer_lines(o, arguments_width)
        }
        _ => Vec::new(),
    }
}

/// [`kept_answer_lines`] of a live call's answer, read as `reply`.
fn live_answer_lines(answer: &Value, reply: &Reply, arguments_width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    if answer.get("partial").and_then(Value::as_bool) == Some(true) {
        lines.push("cut off: what had arrived is kept (partial)".to_string());
    }
    tool_call_lines(&reply.tool_calls, 0, arguments_width, &mut lines);
    if let Some(refusal) = reply.refusal.as_deref().filter(|r| !r.is_empty()) {
        // A refusal may run over lines by design; each after the first sits under its label.
        let label = "refusal: ";
        lines.push(format!(
            "{label}{}",
            crate::core::terminal_text::indented(refusal, label.len())
        ));
    }
    lines.extend(reasoning_line(reply.reasoning.as_deref()));
    lines.extend(other_choices_line(u64::from(reply.other_choices)));
    lines.extend(reply.not_read.iter().map(|what| {
        format!(
            "not read: {}",
            crate::core::terminal_text::one_line(what, arguments_width)
        )
    }));
    lines.extend(reply.usage.as_ref().map(usage_line));
    lines.extend(
        answer
            .get("cost")
            .and_then(|c| KeptCost::deserialize(c).ok())
            .filter(|c| c.problem(reply.usage.as_ref()).is_none())
            .map(|c| c.line()),
    );
    // A plain text answer has nothing to say beside its text: no section at all.
    if lines == [NO_TOOL_CALLS] {
        lines.clear();
    }
    lines
}

/// A kept answer's reasoning, said by its length (the raw response holds it between
/// `<think>` tags, [`Reply::raw_response`]); nothing without any. A live answer's and an
/// imported one's alike.
fn reasoning_line(reasoning: Option<&str>) -> Option<String> {
    reasoning.filter(|r| !r.is_empty()).map(|r| {
        format!(
            "reasoning: {} characters (in the raw response between <think> tags)",
            r.chars().count()
        )
    })
}

/// The choices an answer came with besides the one kept, counted; nothing without any. A
/// live answer's (`reply.other_choices`) and an imported one's alike.
fn other_choices_line(other_choices: u64) -> Option<String> {
    (other_choices > 0).then(|| {
        format!("other choices sent and not kept: {other_choices} (only index 0 is the answer)")
    })
}

/// The fields of an imported answer [`imported_answer_lines`] reads for lines of their own;
/// `finish_reason` is the plan's own, shown with its raw response.
const IMPORTED_READ: [&str; 8] = [
    "source",
    "tool_calls",
    "tool_calls_not_kept",
    "reasoning",
    "other_choices",
    "not_read",
    "usage",
    "finish_reason",
];

/// [`kept_answer_lines`] of an imported call's answer (one [`kept_answer_problem`] passes):
/// its source, then each other field it keeps that is not null (by name), then its tool
/// calls, reasoning, other choices, what was not read and its usage, each as a live
/// answer's is said (by the same lines); the values it keeps and what was not read each on
/// one line. A `reasoning`, `other_choices`, `not_read` or `tool_calls_not_kept` of another
/// shape than the importers write is shown as kept.
fn imported_answer_lines(o: &serde_json::Map<String, Value>, width: usize) -> Vec<String> {
    // Text from a file, each on its one line (a line break in an id cannot pass for a
    // line of ctxconsole's).
    let one_line = crate::core::terminal_text::one_line;
    let text = |v: &Value| match v {
        Value::String(s) => one_line(s, width),
        other => one_line(&other.to_string(), width),
    };
    let calls: Vec<ToolCall> = o
        .get("tool_calls")
        .and_then(|c| Vec::<ToolCall>::deserialize(c).ok())
        .unwrap_or_default();
    let not_kept = o.get("tool_calls_not_kept").and_then(Value::as_u64);
    let reasoning = o.get("reasoning").and_then(Value::as_str);
    let other_choices = o.get("other_choices").and_then(Value::as_u64);
    let not_read = o
        .get("not_read")
        .and_then(|n| Vec::<String>::deserialize(n).ok());
    let usage = o
        .get("usage")
        .filter(|u| !u.is_null())
        .and_then(|u| Usage::deserialize(u).ok());
    let mut lines = vec![format!(
        "imported from {}",
        o.get("source").map(text).unwrap_or_default()
    )];
    for (key, value) in o {
        let read = match key.as_str() {
            "tool_calls_not_kept" => not_kept.is_some(),
            "reasoning" => reasoning.is_some(),
            "other_choices" => other_choices.is_some(),
            "not_read" => not_read.is_some(),
            key => IMPORTED_READ.contains(&key),
        };
        if !read && !value.is_null() {
            lines.push(format!("  {}: {}", one_line(key, 40), text(value)));
        }
    }
    tool_call_lines(&calls, not_kept.unwrap_or(0), width, &mut lines);
    lines.extend(reasoning_line(reasoning));
    lines.extend(other_choices.and_then(other_choices_line));
    lines.extend(
        not_read
            .iter()
            .flatten()
            .map(|what| format!("not read: {}", one_line(what, width))),
    );
    lines.extend(usage.as_ref().map(usage_line));
    lines
}

/// What an answer without tool calls says of them: a kept answer says it, a plain text
/// live answer is only its text ([`tool_call_lines`]).
const NO_TOOL_CALLS: &str = "tool calls: none";

/// `tool calls (n):` and a line per call (name, arguments clipped to `width`), and a line
/// for those read past and not kept when there were any; nothing without calls.
fn tool_call_lines(calls: &[ToolCall], not_kept: u64, width: usize, lines: &mut Vec<String>) {
    // Said even when there are none: a prose answer's kept form had been its usage line
    // alone, under a heading that read as empty (tester 32 F8).
    if calls.is_empty() && not_kept == 0 {
        lines.push(NO_TOOL_CALLS.to_string());
        return;
    }
    // A server's name and arguments each stay on the call's one line.
    let one_line = crate::core::terminal_text::one_line;
    lines.push(format!("tool calls ({}):", calls.len()));
    for c in calls {
        lines.push(format!(
            "  {} {}",
            one_line(&c.name, width),
            one_line(&c.arguments, width)
        ));
    }
    if not_kept > 0 {
        lines.push(format!(
            "  and {not_kept} more read past, not kept (tool_calls_not_kept)"
        ));
    }
}

/// A usage's figures, `-` for one not given.
fn usage_line(u: &Usage) -> String {
    let figure = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    format!(
        "usage: prompt {}, completion {}, cached {}, reasoning {}",
        figure(u.prompt_tokens),
        figure(u.completion_tokens),
        figure(u.cached_tokens),
        figure(u.reasoning_tokens)
    )
}

/// What a reply held, read with today's stripping, decoding and acceptance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reading<T> {
    pub finish: Option<FinishReason>,
    /// Reasoning from the message field and from tags in the content, in that order.
    pub reasoning: String,
    /// The answer with reasoning taken out; `None` when a reasoning block never closed.
    pub answer: Option<String>,
    /// How the accepted value was recovered (for tool calls: how their arguments decoded).
    pub stage: Option<DecodeStage>,
    /// The plan came as native tool calls rather than JSON text.
    pub from_tool_calls: bool,
    pub value: Option<T>,
    pub failure: Option<Failure>,
}

/// Phrases weak models open a refusal with (matched in the first 300 bytes, lower case).
const REFUSAL_OPENERS: [&str; 14] = [
    "i'm sorry",
    "i am sorry",
    "sorry, but",
    "i can't",
    "i cannot",
    "i can not",
    "i'm unable",
    "i am unable",
    "i won't",
    "i will not",
    "as an ai",
    "i must decline",
    "i'm not able to",
    "i am not able to",
];

fn looks_like_refusal(answer: &str) -> bool {
    let head = crate::core::text::opening(answer, 300).to_ascii_lowercase();
    REFUSAL_OPENERS.iter().any(|p| head.contains(p))
}

/// Whether an answer tried to be JSON: it opens with a bracket, holds a fence that is JSON
/// (its info string says json, or it has none and its body opens with a bracket), or has
/// `{"` in its prose. A fence of any other language (`bash`, `python`, …) is prose: what it
/// holds does not count, so a shell command quoting JSON is not a deadlock.
fn json_shaped(answer: &str) -> bool {
    let t = answer.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        return true;
    }
    let mut prose = String::new();
    let mut rest = t;
    while let Some(start) = rest.find("```") {
        prose.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let (info, body) = after.split_once('\n').unwrap_or((after, ""));
        let (body, next) = body
            .find("```")
            .map_or((body, ""), |end| (&body[..end], &body[end + 3..]));
        let language = info.split_whitespace().next().unwrap_or("");
        let json_fence = if language.is_empty() {
            body.trim_start().starts_with(['{', '['])
        } else {
            language.to_ascii_lowercase().starts_with("json")
        };
        if json_fence {
            return true;
        }
        rest = next;
    }
    prose.push_str(rest);
    prose.contains("{\"")
}

/// Read a reply: strip reasoning, decode, and hand the value to `accept` (which turns it
/// into a plan, an id list, …). Anything that does not end in an accepted value gets a
/// class; `accept`'s reason is kept in the detail.
pub fn read_reply<T>(
    reply: &Reply,
    accept: impl Fn(&serde_json::Value) -> Result<T, String>,
) -> Reading<T> {
    read_reply_owning(reply, 0, |value| accept(&value))
}

/// [`read_reply`] handing `accept` the decoded value itself, so what it keeps of it (a
/// plan's step args) is moved, not copied: an imported answer's args are its largest part
/// (tester 9 T9-14: 3,000 calls of wide args held twice). `calls_not_kept` counts tool calls
/// the answer held beyond `reply.tool_calls` (an import reads past those beyond
/// [`PLAN_STEPS`](crate::core::bounds::PLAN_STEPS)): more calls than a plan holds steps are
/// no plan, said before any is decoded.
pub fn read_reply_owning<T>(
    reply: &Reply,
    calls_not_kept: usize,
    accept: impl FnOnce(serde_json::Value) -> Result<T, String>,
) -> Reading<T> {
    let finish = reply.finish_reason.as_deref().map(FinishReason::parse);
    let finish_kind = finish.as_ref().map(|f| f.kind);
    let finish_label = finish.as_ref().map_or_else(
        || "no finish_reason".to_string(),
        |f| format!("finish_reason {}", f.label()),
    );
    let content = reply.content.as_deref().unwrap_or("");
    let stripped = strip_reasoning(content);
    let mut reasoning = reply.reasoning.clone().unwrap_or_default();
    if !stripped.reasoning.is_empty() {
        if !reasoning.is_empty() {
            reasoning.push('\n');
        }
        reasoning.push_str(&stripped.reasoning);
    }
    let mut reading = Reading {
        finish,
        reasoning,
        answer: stripped.answer.clone(),
        stage: None,
        from_tool_calls: false,
        value: None,
        failure: None,
    };
    let fail = |class, detail: String| Some(Failure::new(class, detail));

    // The provider's filter first: when it stopped the answer, whatever the model said
    // was not its last word.
    if finish_kind == Some(FinishKind::ContentFilter) {
        reading.failure = fail(
            FailureClass::SafetyFiltered,
            format!("{finish_label}, {} bytes of content", content.len()),
        );
        return reading;
    }
    if let Some(r) = reply.refusal.as_deref().filter(|r| !r.trim().is_empty()) {
        reading.failure = fail(
            FailureClass::Refused,
            format!(
                "the model refused (its refusal field): {}",
                quote_reply(r, 120)
            ),
        );
        return reading;
    }
    let calls = reply.tool_calls.len() + calls_not_kept;
    if calls > crate::core::bounds::PLAN_STEPS {
        reading.failure = fail(
            FailureClass::NoPlan,
            format!(
                "{calls} tool call(s) came back but its 'steps' list has {calls} steps; a plan \
                 holds at most {}",
                crate::core::bounds::PLAN_STEPS
            ),
        );
        return reading;
    }
    if !reply.tool_calls.is_empty() {
        // The same acceptance (and so the same guard) as a plan in JSON text.
        let (value, stage) = match tool_calls_value(&reply.tool_calls) {
            Ok(v) => v,
            Err(why) => {
                let class = if finish_kind == Some(FinishKind::Length) {
                    FailureClass::LengthTruncated
                } else {
                    FailureClass::ConstrainedDeadlock
                };
                reading.failure = fail(class, format!("{why} ({finish_label})"));
                return reading;
            }
        };
        match accept(value) {
            Ok(v) => {
                reading.stage = Some(stage);
                reading.from_tool_calls = true;
                reading.value = Some(v);
            }
            Err(why) => {
                reading.failure = fail(
                    FailureClass::NoPlan,
                    format!(
                        "{} tool call(s) came back but {why}",
                        reply.tool_calls.len()
                    ),
                );
            }
        }
        return reading;
    }
    let Some(answer) = stripped.answer else {
        reading.failure = fail(
            FailureClass::ReasoningOnly,
            format!(
                "a reasoning block opened and never closed ({} bytes of reasoning, {finish_label})",
                reading.reasoning.len()
            ),
        );
        return reading;
    };
    if answer.is_empty() {
        reading.failure = if !reading.reasoning.is_empty() {
            fail(
                FailureClass::ReasoningOnly,
                format!(
                    "{} bytes of reasoning and no answer ({finish_label})",
                    reading.reasoning.len()
                ),
            )
        } else {
            match finish_kind {
                None => fail(
                    FailureClass::LikelyTimeout,
                    "HTTP 200 with no content and no finish_reason: the generation was cut off"
                        .to_string(),
                ),
                Some(FinishKind::Length) => fail(
                    FailureClass::LengthTruncated,
                    format!("no content before the token limit ({finish_label})"),
                ),
                // What came in a shape not read is named, never called empty (tester 13 T13-10).
                Some(_) if !reply.not_read.is_empty() || reply.other_choices > 0 => fail(
                    FailureClass::NoPlan,
                    format!(
                        "no answer read ({finish_label}); not read: {}{}",
                        reply.not_read.join(", "),
                        if reply.other_choices > 0 {
                            format!(" ({} other choice(s) not kept)", reply.other_choices)
                        } else {
                            String::new()
                        }
                    ),
                ),
                Some(_) => fail(
                    FailureClass::NoPlan,
                    format!("an empty answer ({finish_label})"),
                ),
            }
        };
        return reading;
    }
    let mut rejected = None;
    if let Some(decoded) = decode_answer(&answer) {
        match accept(decoded.value) {
            Ok(v) => {
                reading.stage = Some(decoded.stage);
                reading.value = Some(v);
                return reading;
            }
            Err(why) => rejected = Some(why),
        }
    }
    reading.failure = if finish_kind == Some(FinishKind::Length) {
        fail(
            FailureClass::LengthTruncated,
            format!(
                "the answer was cut at {} bytes ({finish_label})",
                answer.len()
            ),
        )
    } else if rejected.is_none() && looks_like_refusal(&answer) {
        fail(
            FailureClass::Refused,
            format!("a refusal in prose: \"{}\"", quote_reply(&answer, 80)),
        )
    } else if rejected.is_some() && crate::core::response::nests_too_deep(&answer) {
        // Not what the decoded value lacks: a stage read only an inner part of it.
        fail(
            FailureClass::NoPlan,
            format!(
                "the JSON is {}, so it was not read whole",
                crate::core::error::too_deep()
            ),
        )
    } else if let Some(why) = rejected {
        fail(FailureClass::NoPlan, format!("the JSON decoded but {why}"))
    } else if json_shaped(&answer) {
        fail(
            FailureClass::ConstrainedDeadlock,
            format!(
                "JSON-shaped but unparseable by any stage, {} bytes ({finish_label})",
                answer.len()
            ),
        )
    } else {
        fail(
            FailureClass::NoPlan,
            format!("prose without JSON: \"{}\"", quote_reply(&answer, 80)),
        )
    };
    reading
}

/// Native tool calls as the value a text plan would be: one call whose arguments hold
/// `steps` (a `plan`/`submit_plan` function) is that plan; otherwise each call is a step,
/// in order, its name the tool and its arguments the args. The stage is the least literal
/// one any arguments needed.
fn tool_calls_value(calls: &[ToolCall]) -> Result<(serde_json::Value, DecodeStage), String> {
    let mut stage = DecodeStage::Direct;
    let mut steps = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let args = if call.arguments.trim().is_empty() {
            serde_json::json!({})
        } else {
            let decoded = decode_answer(&call.arguments).ok_or_else(|| {
                format!(
                    "tool call {} ({}) has arguments that are not JSON: \"{}\"",
                    i + 1,
                    quote_reply(&call.name, 60),
                    quote_reply(&call.arguments, 60)
                )
            })?;
            if decoded.stage != DecodeStage::Direct {
                stage = decoded.stage;
            }
            decoded.value
        };
        if calls.len() == 1 && args.get("steps").is_some() {
            return Ok((args, stage));
        }
        // Built by hand: `json!` would copy the args (and then every step) into a new tree.
        let mut step = serde_json::Map::new();
        step.insert("order".into(), (i + 1).into());
        step.insert("tool".into(), call.name.clone().into());
        step.insert("args".into(), args);
        steps.push(serde_json::Value::Object(step));
    }
    let mut plan = serde_json::Map::new();
    plan.insert("steps".into(), serde_json::Value::Array(steps));
    Ok((serde_json::Value::Object(plan), stage))
}

/// The `{"error": …}` envelope OpenAI-compatible endpoints (OpenRouter among them) put in
/// a body, sometimes with status 200: its code and message.
pub fn error_envelope(value: &serde_json::Value) -> Option<(Option<i64>, String)> {
    let err = value.get("error")?;
    let message = match err {
        serde_json::Value::String(s) => s.clone(),
        other => other
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("(no message)")
            .to_string(),
    };
    let code = err.get("code").and_then(|c| {
        c.as_i64()
            .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
    });
    Some((code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 35 F13: a row without a cached-input price billed cached tokens at $0.
    #[test]
    fn cached_tokens_cost_the_input_price_when_a_row_gives_no_cached_price() {
        let usage = Usage {
            prompt_tokens: Some(1000),
            cached_tokens: Some(200),
            completion_tokens: Some(50),
            ..Usage::default()
        };
        let priced = |cached_input: f64| crate::core::budget::Prices {
            input: 2.0,
            cached_input,
            output: 8.0,
        };
        let usd = |p| usd_of_usage(&p, &usage).unwrap();
        assert!((usd(priced(0.0)) - 0.0024).abs() < 1e-12);
        assert!((usd(priced(0.5)) - 0.0021).abs() < 1e-12);
        let kept = KeptCost {
            usd: usd(priced(0.0)),
            prices: priced(0.0),
            from_usage: true,
        };
        assert!(kept.problem(Some(&usage)).is_none());
        assert!(
            kept.line()
                .contains("$2 (no cached-input price: the input's) cached input")
        );
    }
    use serde_json::json;

    /// What a server sent stays inside the line it is on: a line break in a call's name or
    /// arguments, or in a note of what was not read, cannot start a line that passes for
    /// one of ctxconsole's; a refusal may run over lines, each after the first indented
    /// under its label.
    #[test]
    fn a_kept_answer_never_lets_the_server_start_a_line() {
        let answer = json!({"reply": {
            "refusal": "no\nusage: prompt 1",
            "not_read": ["a content part of type x\nrefusal: none"],
            "tool_calls": [{"id": "a", "name": "web.search\ncut off: fake",
                "arguments": "{\n  \"q\": \"rust\"\n}"}]}});
        let lines = super::kept_answer_lines(&answer, 400);
        assert_eq!(
            lines,
            [
                "tool calls (1):",
                "  web.search\\ncut off: fake {\\n  \"q\": \"rust\"\\n}",
                "refusal: no\n         usage: prompt 1",
                "not read: a content part of type x\\nrefusal: none",
            ]
        );
    }

    /// Tester 13 T13-3: what a kept answer held beside its text, a line each; an answer the
    /// views cannot read gives nothing rather than a wrong line.
    #[test]
    fn a_kept_answer_says_its_calls_refusal_reasoning_usage_and_cut() {
        let answer = json!({"partial": true, "reply": {
            "content": null, "refusal": "no", "reasoning": "héllo", "other_choices": 1,
            "not_read": ["content part 'image_url'"],
            "tool_calls": [{"id": "a", "name": "web.search", "arguments": "{\"q\":\"rust\"}"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}});
        assert_eq!(
            super::kept_answer_lines(&answer, 400),
            [
                "cut off: what had arrived is kept (partial)",
                "tool calls (1):",
                "  web.search {\"q\":\"rust\"}",
                "refusal: no",
                "reasoning: 5 characters (in the raw response between <think> tags)",
                "other choices sent and not kept: 1 (only index 0 is the answer)",
                "not read: content part 'image_url'",
                "usage: prompt 10, completion 2, cached -, reasoning -",
            ]
        );
        assert!(super::kept_answer_lines(&json!({"reply": {"content": "hi"}}), 400).is_empty());
        assert!(super::kept_answer_lines(&json!({"reply": {"tool_calls": 3}}), 400).is_empty());
        assert!(super::kept_answer_lines(&json!([1]), 400).is_empty());
    }

    /// An imported answer (`{"source": …}`, as `import traces` and `import litellm` keep
    /// it) is described as a live one is, by the same function, so `history show` and the
    /// console's plan view both show it: where it came from and what else it keeps (the
    /// record's ids, a spend), its tool calls and those read past, what was not read, its
    /// usage. Only `history show --json` had shown them. One that does not read as an
    /// imported answer gives nothing.
    #[test]
    fn an_imported_answer_says_its_source_calls_not_read_and_usage() {
        let answer = json!({"source": "otel", "trace_id": "aa", "span_id": "01",
            "conversation_id": null, "finish_reason": "stop",
            "tool_calls": [{"id": "c1", "name": "fs.search", "arguments": "{\"q\":1}"}],
            "tool_calls_not_kept": 2,
            "not_read": ["a content part of type reasoning", "a content part of type blob"],
            "usage": {"prompt_tokens": 12, "completion_tokens": null}});
        assert_eq!(
            super::kept_answer_lines(&answer, 400),
            [
                "imported from otel",
                "  span_id: 01",
                "  trace_id: aa",
                "tool calls (1):",
                "  fs.search {\"q\":1}",
                "  and 2 more read past, not kept (tool_calls_not_kept)",
                "not read: a content part of type reasoning",
                "not read: a content part of type blob",
                "usage: prompt 12, completion -, cached -, reasoning -",
            ]
        );
        let litellm = json!({"source": "litellm", "request_id": "r1", "spend": 0.25,
            "session_id": null, "tool_calls": [], "usage": null});
        assert_eq!(
            super::kept_answer_lines(&litellm, 400),
            [
                "imported from litellm",
                "  request_id: r1",
                "  spend: 0.25",
                "tool calls: none"
            ]
        );
        let bad = json!({"source": "otel", "tool_calls": 3});
        assert!(super::kept_answer_lines(&bad, 400).is_empty());
    }

    /// An imported answer's reasoning and other choices (`import traces` keeps a span's
    /// reasoning parts and counts its output messages past the first) are said by the lines
    /// a live answer's are, word for word; a reasoning or count of another shape than the
    /// importers write is shown as kept.
    #[test]
    fn an_imported_answer_says_its_reasoning_and_other_choices_as_a_live_one_does() {
        let live = json!({"reply": {"content": "x", "reasoning": "héllo", "other_choices": 2}});
        let imported = json!({"source": "otel", "reasoning": "héllo", "other_choices": 2});
        let live = super::kept_answer_lines(&live, 400);
        let imported = super::kept_answer_lines(&imported, 400);
        assert_eq!(live.len(), 3, "{live:?}");
        assert_eq!(live[0], "tool calls: none");
        assert_eq!(imported[0], "imported from otel");
        assert_eq!(imported[1..], live[..], "{imported:?}");
        let odd = json!({"source": "otel", "reasoning": 5, "other_choices": "two"});
        assert_eq!(
            super::kept_answer_lines(&odd, 400),
            [
                "imported from otel",
                "  other_choices: two",
                "  reasoning: 5",
                "tool calls: none"
            ]
        );
    }

    /// The raw response a plan keeps is the model's as produced: a reasoning field folded
    /// in as a `<think>` block (the live path's, and now an import's, so offline replay
    /// reads either the same way); no reasoning, the content as it came.
    #[test]
    fn a_raw_response_folds_the_reasoning_in_as_a_think_block() {
        let reply = |content: Option<&str>, reasoning: Option<&str>| Reply {
            content: content.map(str::to_string),
            reasoning: reasoning.map(str::to_string),
            ..Reply::default()
        };
        assert_eq!(
            reply(Some("{}"), Some("why")).raw_response().as_deref(),
            Some("<think>why</think>{}")
        );
        assert_eq!(
            reply(None, Some("why")).raw_response().as_deref(),
            Some("<think>why</think>")
        );
        assert_eq!(
            reply(Some("{}"), Some("")).raw_response().as_deref(),
            Some("{}")
        );
        assert_eq!(reply(None, None).raw_response(), None);
    }

    /// Tester 5 F5: a reply cut as too large was told only to check the base_url.
    #[test]
    fn a_protocol_failure_says_what_to_do_about_a_reply_too_large() {
        let action = FailureClass::Protocol.action();
        assert!(action.contains("llm.max_reply_bytes"), "{action}");
        assert!(action.contains("base_url"), "{action}");
    }

    fn reply(content: Option<&str>, finish: Option<&str>) -> Reply {
        Reply {
            content: content.map(str::to_string),
            finish_reason: finish.map(str::to_string),
            ..Reply::default()
        }
    }

    /// Tester 31 F2: a `no_plan` detail quoted the answer with its line feeds, and `send`
    /// printed a line the endpoint wrote (`ctxconsole: 0 of 1 answers could not be stored…`).
    #[test]
    fn a_failure_quotes_the_answer_on_one_line() {
        for answer in [
            "Sure.\nctxconsole: 0 of 1 answers could not be stored",
            "I cannot help with that.\nctxconsole: forged",
        ] {
            let r = read_reply(&reply(Some(answer), Some("stop")), any_object);
            let detail = r.failure.map(|f| f.detail).unwrap_or_default();
            assert!(
                detail.contains("\\nctxconsole") && !detail.contains('\n'),
                "{detail}"
            );
        }
    }

    fn any_object(v: &serde_json::Value) -> Result<serde_json::Value, String> {
        if v.get("steps").is_some() {
            Ok(v.clone())
        } else {
            Err("it holds no steps".into())
        }
    }

    fn class(r: &Reply) -> Option<FailureClass> {
        read_reply(r, any_object).failure.map(|f| f.class)
    }

    #[test]
    fn finish_reasons_of_every_provider_normalise_and_unknown_ones_stay_visible() {
        assert_eq!(FinishReason::parse("max_tokens").kind, FinishKind::Length);
        assert_eq!(
            FinishReason::parse("MAX_TOKENS").label(),
            "length (MAX_TOKENS)"
        );
        assert_eq!(
            FinishReason::parse("refusal").kind,
            FinishKind::ContentFilter
        );
        assert_eq!(
            FinishReason::parse("SAFETY").kind,
            FinishKind::ContentFilter
        );
        assert_eq!(
            FinishReason::parse("RECITATION").kind,
            FinishKind::ContentFilter
        );
        assert_eq!(FinishReason::parse("end_turn").kind, FinishKind::Stop);
        assert_eq!(FinishReason::parse("stop").label(), "stop");
        let odd = FinishReason::parse("eject_warp_core");
        assert_eq!(odd.kind, FinishKind::Unknown);
        assert_eq!(odd.label(), "eject_warp_core (unknown)");
    }

    #[test]
    fn every_wire_symptom_gets_its_class() {
        use FailureClass::*;
        assert_eq!(
            class(&reply(Some(""), Some("content_filter"))),
            Some(SafetyFiltered)
        );
        assert_eq!(
            class(&reply(
                Some("I'm sorry, but I can't help with that request."),
                Some("stop")
            )),
            Some(Refused)
        );
        let refused = Reply {
            refusal: Some("No.".into()),
            ..reply(None, Some("stop"))
        };
        assert_eq!(class(&refused), Some(Refused));
        assert_eq!(
            class(&reply(
                Some("{\"steps\":[{\"order\":1,\"to"),
                Some("length")
            )),
            Some(LengthTruncated)
        );
        assert_eq!(
            class(&reply(
                Some("{\"steps\": [{\"args\": {\"input\": {"),
                Some("stop")
            )),
            Some(ConstrainedDeadlock)
        );
        assert_eq!(class(&reply(Some(""), None)), Some(LikelyTimeout));
        assert_eq!(class(&reply(None, None)), Some(LikelyTimeout));
        assert_eq!(
            class(&reply(
                Some("<think>\nLet me look at the catalog"),
                Some("length")
            )),
            Some(ReasoningOnly)
        );
        let only_field = Reply {
            reasoning: Some("thinking hard".into()),
            ..reply(Some(""), Some("length"))
        };
        assert_eq!(class(&only_field), Some(ReasoningOnly));
        assert_eq!(
            class(&reply(Some("{\"answer\":42}"), Some("stop"))),
            Some(NoPlan)
        );
        assert_eq!(
            class(&reply(Some("Sure, here you go."), Some("stop"))),
            Some(NoPlan)
        );
    }

    /// Tester 5 C9: a plan whose args nest past the JSON reader's depth limit was read from
    /// an inner part and said "the JSON decoded but it has no 'steps'" (it has). The answer
    /// is said to nest deeper than the limit, naming it; one within the limit is a plan.
    #[test]
    fn an_answer_nesting_past_the_reader_limit_says_so_naming_the_limit() {
        let nested = |levels: usize| {
            format!(
                "{{\"steps\":[{{\"order\":1,\"tool\":\"memory.store\",\"args\":{}1{}}}]}}",
                "{\"a\":".repeat(levels),
                "}".repeat(levels)
            )
        };
        let read = read_reply(&reply(Some(&nested(126)), Some("stop")), any_object);
        let failure = read.failure.expect("too deep to read whole");
        assert_eq!(failure.class, FailureClass::NoPlan);
        assert!(
            failure.detail.contains("nested deeper than 127 levels"),
            "{}",
            failure.detail
        );
        assert!(!failure.detail.contains("no steps"), "{}", failure.detail);
        let fenced = format!("Here:\n```json\n{}\n```", nested(400));
        let failure = read_reply(&reply(Some(&fenced), Some("stop")), any_object)
            .failure
            .expect("too deep");
        assert!(
            failure.detail.contains("nested deeper than 127 levels"),
            "{}",
            failure.detail
        );
        assert!(
            read_reply(&reply(Some(&nested(120)), Some("stop")), any_object)
                .failure
                .is_none()
        );
    }

    /// Issue 18, item 4: prose with a shell fence is prose, a model declining is `refused`,
    /// and only a provider's filter is `safety_filtered`.
    #[test]
    fn a_fence_is_json_only_when_it_says_so_and_a_refusal_is_not_a_filter() {
        use FailureClass::*;
        let bash =
            "To do this, run:\n```bash\ngit checkout -b fix && cargo test\n```\nthen commit.";
        assert_eq!(class(&reply(Some(bash), Some("stop"))), Some(NoPlan));
        let sh = "Steps:\n```sh\necho '{\"a\": 1}'\n```";
        assert_eq!(class(&reply(Some(sh), Some("stop"))), Some(NoPlan));
        let bare_prose = "Like this:\n```\nmake build\n```";
        assert_eq!(class(&reply(Some(bare_prose), Some("stop"))), Some(NoPlan));
        // A json fence, or a bare one holding JSON, that no stage can read is a deadlock.
        let json_fence = "Here:\n```json\n{\"steps\": [{\"order\": 1, \"args\": {";
        assert_eq!(
            class(&reply(Some(json_fence), Some("stop"))),
            Some(ConstrainedDeadlock)
        );
        let bare_json = "Here:\n```\n{\"steps\": [{\"order\": 1, \"args\": {\n```";
        assert_eq!(
            class(&reply(Some(bare_json), Some("stop"))),
            Some(ConstrainedDeadlock)
        );
        for prose in [
            "I'm sorry, but I can't help with that request.",
            "I'm unable to plan this: it asks for credentials.",
            "I can't help with deleting production data.",
            "I cannot assist with that.",
        ] {
            assert_eq!(
                class(&reply(Some(prose), Some("stop"))),
                Some(Refused),
                "{prose}"
            );
        }
        let field = Reply {
            refusal: Some("I can't help with that request.".into()),
            ..reply(None, Some("stop"))
        };
        assert_eq!(class(&field), Some(Refused));
        for filter in ["content_filter", "SAFETY", "refusal", "PROHIBITED_CONTENT"] {
            assert_eq!(
                class(&reply(Some(""), Some(filter))),
                Some(SafetyFiltered),
                "{filter}"
            );
        }
        assert_ne!(Refused.action(), SafetyFiltered.action());
        assert_eq!(FailureClass::parse("refused"), Some(Refused));
        assert_eq!(FailureClass::parse("safety_filtered"), Some(SafetyFiltered));
    }

    #[test]
    fn tool_calls_are_a_plan_through_the_same_acceptance_or_get_a_class() {
        use FailureClass::*;
        let call = |name: &str, arguments: &str| ToolCall {
            id: Some(format!("call_{name}")),
            name: name.into(),
            arguments: arguments.into(),
        };
        let with = |calls: Vec<ToolCall>, finish: &str| Reply {
            tool_calls: calls,
            ..reply(None, Some(finish))
        };
        // One call per step, in order, arguments as args.
        let r = read_reply(
            &with(
                vec![
                    call("memory.store", r#"{"text":"x"}"#),
                    call("blog.draft", ""),
                ],
                "tool_calls",
            ),
            any_object,
        );
        assert!(r.from_tool_calls);
        assert_eq!(r.stage, Some(DecodeStage::Direct));
        let v = r.value.unwrap();
        assert_eq!(v["steps"][0]["tool"], "memory.store");
        assert_eq!(v["steps"][0]["args"]["text"], "x");
        assert_eq!(v["steps"][1]["order"], 2);
        // One `plan` call carrying the steps is that plan.
        let r = read_reply(
            &with(
                vec![call("submit_plan", r#"{"steps":[{"order":1,"tool":"a"}]}"#)],
                "tool_calls",
            ),
            any_object,
        );
        assert_eq!(r.value.unwrap()["steps"][0]["tool"], "a");
        // Arguments no stage can read: cut by the limit, or a deadlock.
        let broken = vec![call("memory.store", r#"{"text": "unfinished"#)];
        assert_eq!(
            class(&with(broken.clone(), "length")),
            Some(LengthTruncated)
        );
        assert_eq!(class(&with(broken, "stop")), Some(ConstrainedDeadlock));
        // Accepted or not by the same function as a text plan.
        let r = read_reply(&with(vec![call("x", "{}")], "tool_calls"), |_| {
            Err::<(), _>("it is not a plan".to_string())
        });
        assert_eq!(r.failure.map(|f| f.class), Some(NoPlan));
        // A refusal field wins over tool calls; a provider's filter over both.
        let refused = Reply {
            refusal: Some("I can't do that.".into()),
            ..with(vec![call("x", "{}")], "stop")
        };
        assert_eq!(class(&refused), Some(Refused));
        assert_eq!(
            class(&with(vec![call("x", "{}")], "content_filter")),
            Some(SafetyFiltered)
        );
    }

    #[test]
    fn recovered_answers_name_their_stage_and_keep_the_reasoning() {
        let r = read_reply(
            &Reply {
                reasoning: Some("field".into()),
                ..reply(
                    Some("<think>tags</think>Plan:\n```json\n{\"steps\":[]}\n```"),
                    Some("eos_token"),
                )
            },
            any_object,
        );
        assert_eq!(r.failure, None);
        assert_eq!(r.stage, Some(DecodeStage::Fence));
        assert_eq!(r.reasoning, "field\ntags");
        assert_eq!(
            r.finish.map(|f| f.label()).as_deref(),
            Some("stop (eos_token)")
        );
    }

    #[test]
    fn an_error_envelope_gives_code_and_message() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"error":{"message":"Rate limit exceeded","code":429}}"#)
                .unwrap();
        assert_eq!(
            error_envelope(&v),
            Some((Some(429), "Rate limit exceeded".into()))
        );
        assert_eq!(error_envelope(&serde_json::json!({"steps": []})), None);
    }
}
