//! What a message this server cannot read is answered with, over stdio and HTTP alike: the
//! one place that decides it, so a client never waits for an answer that is not coming.
//!
//! - Not JSON (an invalid UTF-8 byte, a line cut short, plain text): `-32700` Parse error.
//! - JSON but not a message: `-32600` Invalid Request (a batch, which MCP does not take since
//!   2025-06-18; an `id` that is not a string or an integer; no `method`).
//! - Over the size limit: `-32602` naming the argument that crossed it.
//!
//! The answer carries the request's id when it can be read (from the JSON, or for text that
//! is not JSON by [`cut_point`], reading up to the fault), and `"id": null` otherwise, as
//! JSON-RPC 2.0 asks. A notification (a `method` and no `id`) is never answered over stdio:
//! JSON-RPC answers no notification, and answering what cannot be answered could loop two
//! peers. Every answer is itself a message an MCP client reads as an error, so a peer
//! answers nothing back.

use rmcp::ErrorData;
use rmcp::model::{ErrorCode, RequestId};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::core::error::CoreError;
use crate::core::json_keys::dotted;
use crate::mcp_server::params::{TEXT_MAX, size_label};

/// Why a message was not read, and whom to tell.
#[derive(Debug)]
pub struct Refusal {
    pub error: ErrorData,
    /// The message's id, when it could be read.
    pub id: Option<RequestId>,
    /// The message was a notification: over stdio nobody is waiting for an answer.
    pub notification: bool,
}

/// An error as it goes to the client: every control, bidi and invisible character in its
/// message escaped as the CLI escapes them
/// ([`crate::core::terminal_text::for_terminal_line`]), since clients print it to a
/// terminal and it often quotes the client's own input (tester 20 F13: an OSC title and a
/// screen clear came back raw). Its data keeps the values as they were — `argument` names
/// the key the client sent, byte for byte — and reaches the wire `\u`-escaped as every
/// message does ([`crate::mcp_server::wire_json`]; tester 42 F6: they had been display text,
/// `k\x1b[2J`, which parses back to no key sent). The one place: every error the handler
/// gives passes here (the handler's methods and [`Refusal`]'s wire form). Every configured
/// key in message and data is `[REDACTED]` ([`crate::llm::redact::for_output`]), as on
/// stderr and in the log.
pub fn for_client(mut e: ErrorData) -> ErrorData {
    /// `text` with every configured key taken out, when that differs from it.
    fn redacted(text: &str) -> Option<String> {
        let redacted = crate::llm::redact::for_output(text);
        (redacted != text).then(|| redacted.into_owned())
    }
    fn redact(v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Some(r) = redacted(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(redact),
            Value::Object(map) => {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, mut v)| {
                        redact(&mut v);
                        (redacted(&k).unwrap_or(k), v)
                    })
                    .collect();
            }
            _ => {}
        }
    }
    let message = crate::llm::redact::for_output(&e.message);
    let shown = crate::core::terminal_text::for_terminal_line(&message);
    if shown != e.message {
        e.message = shown.into_owned().into();
    }
    if let Some(data) = &mut e.data {
        redact(data);
    }
    e
}

/// The JSON-RPC error message, in the usual order: `"id": null` when the id could not be
/// read.
impl Serialize for Refusal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            jsonrpc: &'static str,
            id: &'a Option<RequestId>,
            error: &'a ErrorData,
        }
        Wire {
            jsonrpc: "2.0",
            id: &self.id,
            error: &for_client(self.error.clone()),
        }
        .serialize(serializer)
    }
}

impl Refusal {
    /// As a message a transport sends, escaped for the client as every error is
    /// ([`for_client`]).
    pub fn into_message(self) -> rmcp::service::TxJsonRpcMessage<rmcp::RoleServer> {
        rmcp::model::JsonRpcMessage::error(for_client(self.error), self.id)
    }

    fn new(code: ErrorCode, message: String) -> Refusal {
        Refusal {
            error: ErrorData::new(code, message, None),
            id: None,
            notification: false,
        }
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        // A number's text is as long as it was written: cut as a quote is.
        Value::Number(n) => format!(
            "the number {}",
            crate::core::text::clip(&n.to_string(), crate::core::terminal_text::QUOTE_CHARS)
        ),
        Value::String(_) => "a string".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The first field of a request or notification that breaks JSON-RPC 2.0's shape, said by
/// name: `jsonrpc` missing or not "2.0", no `method` (or one not a string) beside no `result`
/// or `error`, `params` or its `_meta` not an object.
fn shape_fault(object: &serde_json::Map<String, Value>) -> Option<String> {
    match object.get("jsonrpc") {
        None => {
            return Some(
                "`jsonrpc` is missing (a JSON-RPC 2.0 message says \"jsonrpc\": \"2.0\")".into(),
            );
        }
        Some(Value::String(v)) if v == "2.0" => {}
        Some(Value::String(v)) => {
            return Some(format!(
                "`jsonrpc` must be \"2.0\", not {}",
                crate::core::terminal_text::quoted_with(v, '"')
            ));
        }
        Some(other) => return Some(format!("`jsonrpc` must be \"2.0\", not {}", kind(other))),
    }
    let answer = object.contains_key("result") || object.contains_key("error");
    if answer && object.contains_key("method") {
        // Tester 28 N3: read as neither, it got the parser's "line 1 column 1".
        return Some(
            "a message has a `method` (a request) or a `result`/`error` (an answer), not both"
                .into(),
        );
    }
    match object.get("method") {
        None if !answer => return Some("`method` is missing (a request names its method)".into()),
        Some(m) if !m.is_string() => {
            return Some(format!("`method` must be a string, not {}", kind(m)));
        }
        _ => {}
    }
    match object.get("params") {
        Some(Value::Object(params)) => match params.get("_meta") {
            Some(meta) if !meta.is_object() && !meta.is_null() => Some(format!(
                "`params._meta` must be an object, not {}",
                kind(meta)
            )),
            _ => None,
        },
        Some(Value::Null) | None => None,
        Some(other) => Some(format!("`params` must be an object, not {}", kind(other))),
    }
}

/// The first key of the message given twice, said by its path (tester 28 N3: a second `id`
/// read "line 1 column 1"; tester 33 F4: one inside `params` read "its params do not fit
/// the method"): a `Value` keeps the last copy unsaid, the message reader refuses it
/// unnamed. The walk is the one every reader of outside JSON shares
/// ([`crate::core::json_keys`]).
fn repeated_key(text: &[u8]) -> Option<String> {
    crate::core::json_keys::first_repeated_key(text).map(|path| given_twice(&path))
}

/// `` `params.name` is given twice ``: the key by its path, cut to a quote's length (escaped
/// on the way out, as every error is: [`for_client`]).
fn given_twice(path: &[String]) -> String {
    format!(
        "`{}` is given twice",
        crate::core::text::clip(&dotted(path), crate::core::terminal_text::QUOTE_CHARS)
    )
}

/// A message that reads, refused when a key in it is given twice: rmcp keeps the last copy,
/// so `"ok": true, "ok": false` in `record_execution` was stored as a failure that a
/// proxy or log viewer keeping the first shows as a success (tester 33 F3). An argument is
/// named as every argument error names one (`data.argument`); `None` when no key repeats.
pub fn repeated_key_in(
    text: &[u8],
    message: &rmcp::model::ClientJsonRpcMessage,
) -> Option<Refusal> {
    use rmcp::model::JsonRpcMessage;
    let path = crate::core::json_keys::first_repeated_key(text)?;
    let (id, notification) = match message {
        JsonRpcMessage::Request(r) => (Some(r.id.clone()), false),
        JsonRpcMessage::Notification(_) => (None, true),
        _ => (None, false),
    };
    let error = match path.as_slice() {
        [params, arguments, rest @ ..] if params == "params" && arguments == "arguments" => {
            ErrorData::invalid_params(
                format!("argument {}", given_twice(rest)),
                Some(json!({
                    "argument": crate::core::text::clip(
                        &dotted(rest),
                        crate::core::terminal_text::QUOTE_CHARS
                    )
                })),
            )
        }
        _ => ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {}", given_twice(&path)),
            None,
        ),
    };
    Some(Refusal {
        error,
        id,
        notification,
    })
}

/// serde_json's error `e` in `text`, in the words every JSON reader uses
/// ([`CoreError::json`]): a lone surrogate escape is named as one, not serde's "unexpected
/// end of hex escape" (tester 15 F6).
fn reader_words(text: &[u8], e: &serde_json::Error) -> String {
    match CoreError::json("", &String::from_utf8_lossy(text), e) {
        CoreError::Syntax {
            line,
            column,
            message,
            ..
        } => format!("{message} at line {line} column {column}"),
        other => other.to_string(),
    }
}

/// The error for a method this server does not serve: one wording for every such method,
/// whether rmcp knows its name or not.
/// The name is quoted as every message quotes outside text: a 1 MiB method name is named by
/// its opening, not echoed twice (tester 28 N4: a 2 MB answer).
pub fn no_method(method: &str) -> ErrorData {
    use crate::core::terminal_text::{QUOTE_CHARS, quoted};
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("no method {} on this server", quoted(method)),
        Some(json!({ "method": crate::core::text::clip(method, QUOTE_CHARS) })),
    )
}

/// A field a method needs: its name, what it must be, whether it must be given, and the
/// test of a value given.
pub type Field = (&'static str, &'static str, bool, fn(&Value) -> bool);

/// The first of `fields` that `params` lacks or gives as something else, said by its kind
/// (`` tools/call: argument `arguments` must be an object, not an array ``), never its value
/// (tester 50 F9: a 21 MB `uri` array came back in an 18.9 MB error); `None` when all fit.
/// A `null` is a field not given.
pub fn unfit_field(method: &str, params: Option<&Value>, fields: &[Field]) -> Option<ErrorData> {
    let given = params.and_then(Value::as_object);
    fields.iter().find_map(|&(field, want, required, fits)| {
        let value = given.and_then(|o| o.get(field)).filter(|v| !v.is_null());
        let found = match value {
            None if required => "it is missing".to_string(),
            None => return None,
            Some(v) if fits(v) => return None,
            Some(v) => format!("not {}", kind(v)),
        };
        Some(ErrorData::invalid_params(
            format!("{method}: argument `{field}` must be {want}, {found}"),
            Some(json!({ "argument": field })),
        ))
    })
}

/// The fields an `initialize` needs, and what each must be.
const INITIALIZE_FIELDS: [Field; 3] = [
    ("protocolVersion", "a string", true, Value::is_string),
    ("capabilities", "an object", true, Value::is_object),
    ("clientInfo", "an object", true, Value::is_object),
];

/// Why a request read before its session's `initialize` is refused here, or `None` to hand
/// it on: an `initialize` that reads as one, a `discover`, or a request carrying the
/// per-request protocol metadata (the lifecycle without `initialize`). rmcp answered the
/// others "request _meta is missing or has malformed required fields: …", naming fields the
/// client never heard of (tester 20 F5): an `initialize` whose params do not fit is told
/// which argument is wrong, any other request that the session is not initialized.
pub fn before_initialize(message: &rmcp::model::ClientJsonRpcMessage) -> Option<ErrorData> {
    use rmcp::model::{ClientRequest, JsonRpcMessage};
    let JsonRpcMessage::Request(r) = message else {
        return None;
    };
    let method = match &r.request {
        ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_) => return None,
        ClientRequest::CustomRequest(c) if c.method == "initialize" => {
            if let Some(unfit) = unfit_field("initialize", c.params.as_ref(), &INITIALIZE_FIELDS) {
                return Some(unfit);
            }
            return Some(ErrorData::invalid_params(
                "initialize: its params do not fit the method".to_string(),
                None,
            ));
        }
        other => other.method().to_string(),
    };
    let carries_metadata = serde_json::to_value(&r.request).is_ok_and(|v| {
        v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some()
    });
    if carries_metadata {
        return None;
    }
    Some(ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "Invalid Request: '{method}' before initialize: this session is not initialized; send `initialize` (with `protocolVersion`, `capabilities` and `clientInfo`) first"
        ),
        Some(json!({ "method": method })),
    ))
}

/// The answer to `text`, which does not read as a JSON-RPC message (`e`: why not).
pub fn unreadable(text: &[u8], e: &serde_json::Error) -> Refusal {
    let value = match serde_json::from_slice::<Value>(text) {
        Ok(v) => v,
        Err(parse) => {
            let why = match std::str::from_utf8(text) {
                Err(bad) => {
                    let at = bad.valid_up_to();
                    let byte = text
                        .get(at)
                        .map_or(String::new(), |b| format!("0x{b:02X} "));
                    format!(
                        "the message is not UTF-8 (byte {byte}at offset {at}); JSON text must be UTF-8"
                    )
                }
                Ok(_) => format!("not JSON: {}", reader_words(text, &parse)),
            };
            return Refusal {
                id: cut_point(text).id,
                ..Refusal::new(ErrorCode::PARSE_ERROR, format!("Parse error: {why}"))
            };
        }
    };
    let invalid = |why: String| {
        Refusal::new(
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )
    };
    let object = match &value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return invalid(
                "a batch (an array of messages) is not supported: send each message by itself"
                    .to_string(),
            );
        }
        other => {
            return invalid(format!(
                "a JSON-RPC message is an object, not {}",
                kind(other)
            ));
        }
    };
    // What is wrong, by field, where a field says it; else the reader's words (tester 27 F7:
    // a message without `method` or `jsonrpc` read "unrecognized JSON-RPC message at line 1
    // column 1").
    let why = |what: &str| match shape_fault(object).or_else(|| repeated_key(text)) {
        Some(fault) => format!("{what}: {fault}"),
        None => format!("{what}: {}", reader_words(text, e)),
    };
    match (object.get("id"), object.get("method")) {
        (Some(id), _) => match serde_json::from_value::<RequestId>(id.clone()) {
            Ok(id) => Refusal {
                id: Some(id),
                ..invalid(why("not a JSON-RPC message this server reads"))
            },
            Err(_) => invalid(format!(
                "`id` must be a string or an integer, not {}",
                kind(id)
            )),
        },
        (None, Some(Value::String(_))) => Refusal {
            notification: true,
            ..invalid(why("a notification this server cannot read"))
        },
        (None, Some(other)) => invalid(format!("`method` must be a string, not {}", kind(other))),
        (None, None) => invalid(
            "a message with neither `method` nor `id` is not a request or a notification"
                .to_string(),
        ),
    }
}

/// The answer to a message over the limit of `max` bytes, of which `kept` (the first `max`)
/// was read: under its id when the id came before the cut, naming the argument that was
/// being read when the limit was crossed.
pub fn oversized(kept: &[u8], bytes: usize, max: usize) -> Refusal {
    let cut = cut_point(kept);
    let argument = cut
        .path
        .iter()
        .position(|k| k == "arguments")
        .and_then(|i| cut.path.get(i + 1..))
        .filter(|rest| !rest.is_empty())
        .map(dotted);
    let what = match &argument {
        Some(a) => format!("argument `{a}`"),
        None if !cut.path.is_empty() => format!("`{}`", dotted(&cut.path)),
        None => "the message".to_string(),
    };
    let message = format!(
        "the message is {} bytes, over the {} limit; {what} was being read when it crossed the limit (text arguments take at most {} each)",
        crate::format::thousands(bytes),
        size_label(max),
        size_label(TEXT_MAX)
    );
    Refusal {
        error: ErrorData::invalid_params(
            message,
            Some(json!({
                "argument": argument,
                "path": dotted(&cut.path),
                "message_bytes": bytes,
                "limit_bytes": max,
            })),
        ),
        id: cut.id,
        notification: false,
    }
}

/// Where a JSON text that stops part-way (or goes wrong part-way) stands: the request id if
/// it came first, and the keys leading to the value being read (`params`, `arguments`,
/// `instruction`; `[N]` for the Nth item of an array, from 0).
#[derive(Debug, Default, PartialEq)]
pub struct CutPoint {
    pub id: Option<RequestId>,
    pub path: Vec<String>,
}

struct Frame {
    object: bool,
    key: Option<String>,
    want_key: bool,
    /// In an array: the item being read.
    index: usize,
}

/// The nesting [`cut_point`] follows (serde_json's own limit); deeper levels are counted,
/// not kept, so 32 MiB of `[` costs no more memory than a few levels.
const DEPTH_MAX: usize = 128;

pub fn cut_point(text: &[u8]) -> CutPoint {
    let mut stack: Vec<Frame> = Vec::new();
    // Levels below the deepest kept frame.
    let mut deeper = 0usize;
    let mut id = None;
    let mut i = 0;
    // Is the value starting here the top-level "id"?
    let at_id = |stack: &[Frame], deeper: usize| {
        deeper == 0
            && stack.len() == 1
            && stack[0].key.as_deref() == Some("id")
            && !stack[0].want_key
    };
    while i < text.len() {
        match text[i] {
            b'{' | b'[' if stack.len() >= DEPTH_MAX => deeper += 1,
            b'{' => stack.push(Frame {
                object: true,
                key: None,
                want_key: true,
                index: 0,
            }),
            b'[' => stack.push(Frame {
                object: false,
                key: None,
                want_key: false,
                index: 0,
            }),
            b'}' | b']' if deeper > 0 => deeper -= 1,
            b'}' | b']' => {
                stack.pop();
            }
            b',' if deeper > 0 => {}
            b',' => {
                if let Some(f) = stack.last_mut() {
                    if f.object {
                        f.want_key = true;
                        f.key = None;
                    } else {
                        f.index += 1;
                    }
                }
            }
            b'"' => {
                let mut j = i + 1;
                let mut escaped = false;
                while j < text.len() {
                    match text[j] {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => break,
                        _ => {}
                    }
                    j += 1;
                }
                if j >= text.len() {
                    // The cut falls inside this string.
                    break;
                }
                let decoded = || serde_json::from_slice::<String>(&text[i..=j]).ok();
                if deeper > 0 {
                    // Inside levels not kept: nothing to note.
                } else if let Some(f) = stack.last_mut().filter(|f| f.object && f.want_key) {
                    f.key = decoded();
                    f.want_key = false;
                } else if at_id(&stack, deeper) {
                    id = decoded().map(|s| RequestId::String(s.into()));
                }
                i = j;
            }
            b'-' | b'0'..=b'9' if at_id(&stack, deeper) => {
                // The whole number token: `1.5` is no id, not the id 1.
                let end = text[i..]
                    .iter()
                    .position(|b| !(b.is_ascii_digit() || b"-+.eE".contains(b)))
                    .map_or(text.len(), |n| i + n);
                id = serde_json::from_slice::<RequestId>(&text[i..end]).ok();
                i = end - 1;
            }
            _ => {}
        }
        i += 1;
    }
    let path = stack
        .iter()
        .map(|f| match (&f.key, f.object) {
            (Some(k), _) => k.clone(),
            (None, false) => format!("[{}]", f.index),
            (None, true) => "{}".to_string(),
        })
        .collect();
    CutPoint { id, path }
}

/// A message's bytes without the byte-order mark some writers open with: both transports
/// read a message so, and a BOM is no JSON.
pub fn without_bom(message: &[u8]) -> &[u8] {
    message
        .strip_prefix(crate::core::text::UTF8_BOM)
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 23 F2: an error quoting a configured key (a value the client sent, a file's
    /// column) reaches the client with `[REDACTED]` in its place, message and data alike.
    #[test]
    fn a_configured_key_in_an_error_goes_to_the_client_redacted() {
        const KEY: &str = "sk-test-JSONRPC-9137-only-this-test";
        crate::llm::redact::set_output_keys(crate::llm::redact::Secrets::of_keys([KEY]));
        let e = for_client(ErrorData::invalid_params(
            format!("argument `plan_id`: no plan '{KEY}'"),
            Some(serde_json::json!({"argument": "plan_id", "value": KEY})),
        ));
        crate::llm::redact::set_output_keys(crate::llm::redact::Secrets::default());
        let all = serde_json::to_string(&e).unwrap();
        assert!(!all.contains("JSONRPC-9137"), "{all}");
        assert!(e.message.contains("no plan '[REDACTED]'"), "{}", e.message);
        assert_eq!(e.data.unwrap()["value"], "[REDACTED]");
    }

    #[test]
    fn the_cut_names_the_argument_and_keeps_the_id() {
        let text = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"preview","arguments":{"model":"m","instruction":"aaaa"#;
        let cut = cut_point(text);
        assert_eq!(cut.id, Some(RequestId::Number(7)));
        assert_eq!(cut.path, ["params", "arguments", "instruction"]);

        let text =
            br#"{"id":"r-1","params":{"arguments":{"attachments":[{"name":"a\"b","text":"xx"#;
        let cut = cut_point(text);
        assert_eq!(cut.id, Some(RequestId::String("r-1".into())));
        assert_eq!(
            cut.path,
            ["params", "arguments", "attachments", "[0]", "text"]
        );
        assert_eq!(dotted(&cut.path), "params.arguments.attachments[0].text");
        // The item is counted: commas inside a string or a nested item are not items.
        let text = br#"{"id":2,"params":{"arguments":{"attachments":[{"name":"a,b","text":"x"},{"name":"c","text":"yy"#;
        let cut = cut_point(text);
        assert_eq!(dotted(&cut.path), "params.arguments.attachments[1].text");

        // An "id" inside the arguments is not the request's.
        let cut = cut_point(br#"{"params":{"id":3,"x":"yy"#);
        assert_eq!(cut.id, None);
        // Nor is a number that is not a whole one.
        assert_eq!(cut_point(br#"{"id":1.5,"x":"#).id, None);
        assert_eq!(
            cut_point(br#"{"id":-4,"x":"#).id,
            Some(RequestId::Number(-4))
        );
        // Deep nesting is followed to a depth, then counted: the id before it is kept, and
        // one after it (back at the top) is still read.
        let deep = format!(
            r#"{{"x":{}{},"id":"after"}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let cut = cut_point(deep.as_bytes());
        assert_eq!(cut.id, Some(RequestId::String("after".into())));
        assert!(cut.path.is_empty(), "{:?}", cut.path);
        let cut = cut_point(format!(r#"{{"id":5,"x":{}"#, "[".repeat(100_000)).as_bytes());
        assert_eq!(cut.id, Some(RequestId::Number(5)));
        assert_eq!(cut.path.len(), DEPTH_MAX);
    }

    fn refusal(text: &[u8]) -> Refusal {
        let e = match serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(text) {
            Err(e) => e,
            Ok(m) => panic!("{m:?} was read"),
        };
        unreadable(text, &e)
    }

    #[test]
    fn each_unreadable_message_gets_its_code_and_what_id_can_be_read() {
        let cases: [(&[u8], ErrorCode, Option<RequestId>, &str); 15] = [
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"q":"\ud800"}}"#,
                ErrorCode::PARSE_ERROR,
                Some(RequestId::Number(3)),
                r"not JSON: a lone UTF-16 surrogate (\ud800) is not a character at line 1 column",
            ),
            (
                b"{\"id\":2,\"method\":\"ping\",\"params\":{\"q\":\"caf\xe9\"}}",
                ErrorCode::PARSE_ERROR,
                Some(RequestId::Number(2)),
                "byte 0xE9 at offset 42",
            ),
            (b"hello", ErrorCode::PARSE_ERROR, None, "not JSON: expected"),
            (
                br#"{"jsonrpc":"2.0","id":"a","method":"ping""#,
                ErrorCode::PARSE_ERROR,
                Some(RequestId::String("a".into())),
                "not JSON",
            ),
            (
                br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
                ErrorCode::INVALID_REQUEST,
                None,
                "a batch",
            ),
            (b"42", ErrorCode::INVALID_REQUEST, None, "not the number 42"),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
                None,
                "`id` must be a string or an integer, not an object",
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
                None,
                "not null",
            ),
            (
                br#"{"jsonrpc":"2.0","method":7}"#,
                ErrorCode::INVALID_REQUEST,
                None,
                "`method` must be a string",
            ),
            (
                br#"{"jsonrpc":"2.0","id":14}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(14)),
                "`method` is missing",
            ),
            (
                br#"{"id":18,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(18)),
                "`jsonrpc` is missing",
            ),
            (
                br#"{"jsonrpc":"1.0","id":17,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(17)),
                "`jsonrpc` must be \"2.0\", not \"1.0\"",
            ),
            (
                br#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"_meta":"bad","name":"x"}}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(19)),
                "`params._meta` must be an object, not a string",
            ),
            (
                br#"{"jsonrpc":"2.0","id":32,"method":"ping","id":33}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(33)),
                "not a JSON-RPC message this server reads: `id` is given twice",
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"ping","result":{}}"#,
                ErrorCode::INVALID_REQUEST,
                Some(RequestId::Number(4)),
                "not a JSON-RPC message this server reads: a message has a `method` (a request) or a `result`/`error` (an answer), not both",
            ),
        ];
        for (text, code, id, says) in cases {
            let r = refusal(text);
            let shown = String::from_utf8_lossy(text);
            assert_eq!(r.error.code, code, "{shown}: {r:?}");
            assert_eq!(r.id, id, "{shown}: {r:?}");
            assert!(r.error.message.contains(says), "{shown}: {r:?}");
            assert!(!r.notification, "{shown}");
            // The answer is a message a client reads as an error, so it answers nothing back.
            let answer = serde_json::to_value(&r).unwrap();
            assert_eq!(answer.as_object().map(|o| o.contains_key("id")), Some(true));
            let read = serde_json::from_value::<rmcp::model::ServerJsonRpcMessage>(answer);
            assert!(
                matches!(read, Ok(rmcp::model::JsonRpcMessage::Error(_))),
                "{read:?}"
            );
        }
        let r = refusal(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#);
        assert!(r.notification, "{r:?}");
    }
}
