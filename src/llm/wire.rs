//! The chat-completion wire format: reading a whole JSON body, or a server-sent-events
//! stream chunk by chunk, into a [`Reply`]. Bytes may split anywhere, UTF-8 included.

use serde_json::Value;

use crate::core::failure::{
    Failure, FailureClass, Reply, ToolCall, Usage, choice_index, content_of, error_envelope,
    note_not_read, reasoning_of, tool_calls_of,
};
use crate::core::text::{UTF8_BOM as BOM, clip};

/// What a body or stream held, when it was not a reply.
fn protocol(detail: impl Into<String>) -> Failure {
    Failure::new(FailureClass::Protocol, detail)
}

fn http_error_in_body(code: Option<i64>, message: &str) -> Failure {
    let code = code.map_or_else(|| "an error".to_string(), |c| format!("error {c}"));
    Failure::new(
        FailureClass::HttpError,
        format!(
            "the endpoint answered {code} in the body: {}",
            quote_reply(message, 160)
        ),
    )
}

/// An SSE `event: error`'s data: the provider's error, as an error in a body is said — its
/// envelope's code and message when it has one, else its `message` (or `error`) field, else
/// its text.
fn error_event(data: &str) -> Failure {
    let value: Option<Value> = serde_json::from_str(data).ok();
    if let Some((code, message)) = value.as_ref().and_then(error_envelope) {
        return http_error_in_body(code, &message);
    }
    let message = value
        .as_ref()
        .and_then(|v| text_field(v, &["message"]).or_else(|| text_field(v, &["error"])))
        .unwrap_or_else(|| data.to_string());
    Failure::new(
        FailureClass::HttpError,
        format!(
            "the stream sent an error event: {}",
            quote_reply(&message, 160)
        ),
    )
}

fn text_field(v: &Value, names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| v.get(*n).and_then(Value::as_str))
        .map(str::to_string)
}

/// `usage` of a body or of a stream's last event: OpenAI's names, with the cached and
/// reasoning counts from their `*_details` objects (or llama.cpp/vLLM's flat names). A
/// figure that is no token count (negative, fractional, past [`bounds::TOKENS`]) is kept
/// null and named in `not_read`, so refused usage differs from none sent (tester 13 T13-4).
///
/// [`bounds::TOKENS`]: crate::core::bounds::TOKENS
fn usage_of(v: &Value, not_read: &mut Vec<String>) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let mut n = |path: &[&str]| {
        let mut at = u;
        for p in path {
            at = at.get(*p)?;
        }
        let max = *crate::core::bounds::TOKENS.end() as f64;
        let whole = at.as_u64().or_else(|| {
            at.as_f64()
                .filter(|f| f.fract() == 0.0 && (0.0..=max).contains(f))
                .map(|f| f as u64)
        });
        match whole.filter(|w| crate::core::bounds::TOKENS.contains(&(*w as usize))) {
            Some(w) => Some(w),
            None if at.is_null() => None,
            None => {
                let field = path.join(".");
                note_not_read(
                    not_read,
                    format!(
                        "usage {field} {} (no token count)",
                        clip(&at.to_string(), 40)
                    ),
                );
                None
            }
        }
    };
    Some(Usage {
        prompt_tokens: n(&["prompt_tokens"]).or_else(|| n(&["input_tokens"])),
        completion_tokens: n(&["completion_tokens"]).or_else(|| n(&["output_tokens"])),
        total_tokens: n(&["total_tokens"]),
        cached_tokens: n(&["prompt_tokens_details", "cached_tokens"])
            .or_else(|| n(&["cached_tokens"])),
        reasoning_tokens: n(&["completion_tokens_details", "reasoning_tokens"])
            .or_else(|| n(&["reasoning_tokens"])),
    })
}

/// A non-streamed body: `{"choices":[{"message":{…},"finish_reason":…}]}`.
pub fn reply_from_body(body: &[u8]) -> Result<Reply, Failure> {
    let text = std::str::from_utf8(body).map_err(|e| {
        protocol(format!(
            "the body is not UTF-8 (at byte {})",
            e.valid_up_to()
        ))
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|_| protocol(format!("the body is not JSON: {}", quoted_body(text, 100))))?;
    if let Some((code, message)) = error_envelope(&value) {
        return Err(http_error_in_body(code, &message));
    }
    let choices = value
        .get("choices")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| protocol("the body is JSON but not a chat completion: no 'choices'"))?;
    // The choice at `index` 0, as a stream keeps, not the first listed (tester 13 T13-1).
    let kept = choices.iter().find(|c| choice_index(c) == Some(0));
    let others = choices.len() - usize::from(kept.is_some());
    let choice = kept.unwrap_or(&Value::Null);
    let message = choice.get("message").unwrap_or(&Value::Null);
    let mut not_read = Vec::new();
    // serde_json keeps a repeated key's last copy; a proxy or log may show the first, so it
    // is said, not chosen between silently (the readers of recorded traffic refuse it).
    if let Some(note) = crate::core::json_keys::repeat_note(body, "in the body") {
        note_not_read(&mut not_read, note);
    }
    let usage = usage_of(&value, &mut not_read);
    Ok(Reply {
        content: content_of(message, &mut not_read),
        reasoning: reasoning_of(message),
        refusal: text_field(message, &["refusal"]),
        finish_reason: text_field(choice, &["finish_reason"]),
        tool_calls: tool_calls_of(message),
        usage,
        id: text_field(&value, &["id"]),
        other_choices: u32::try_from(others).unwrap_or(u32::MAX),
        not_read,
    })
}

/// `</reasoning>`: the longest tag [`EventStream`] follows.
const LONGEST_TAG: usize = 12;

/// A server-sent-events stream being read.
#[derive(Debug, Default)]
pub struct EventStream {
    pending: Vec<u8>,
    content: String,
    /// Whether the content's last reasoning tag opened a block; `None` before any tag.
    tag_open: Option<bool>,
    reasoning: String,
    refusal: String,
    finish_reason: Option<String>,
    /// Tool calls assembled from their deltas, by `index`.
    tool_calls: Vec<ToolCall>,
    /// A call's `index` on the wire → its place in `tool_calls` (the latest call there).
    tool_call_slots: std::collections::HashMap<usize, usize>,
    /// A call's `id` → its place in `tool_calls`.
    tool_call_ids: std::collections::HashMap<String, usize>,
    /// Indexes of the choices other than 0 seen, not kept.
    other_choices: std::collections::HashSet<u64>,
    not_read: Vec<String>,
    /// The last line ended with CR: an LF right after it ends nothing.
    after_cr: bool,
    /// The `data:` lines of the event being read, joined by LF, until its blank line.
    event: Option<String>,
    /// The `event:` name of the event being read: an `error` event's data is the
    /// provider's error (tester 33 F9: "overloaded" was dropped, the call a bare cut).
    event_name: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
    /// `data: [DONE]` arrived.
    pub done: bool,
    /// Any delta arrived.
    pub started: bool,
    /// The stream's first bytes were read past a byte-order mark, if it had one.
    opened: bool,
}

impl EventStream {
    /// Feed the next bytes. An event that is not JSON, or an error event, ends the stream
    /// with a failure. A line ends at LF, CR LF or CR alone, as server-sent events allow
    /// (tester 10 T10-15: a stream of CR-ended lines was read as empty, the answer lost).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.pending.extend_from_slice(bytes);
        // One byte-order mark at the start of the stream is not part of its first line, as
        // the server-sent events spec reads it (tester 11 T11-7: the first event, read as a
        // field named `\u{feff}data`, was dropped). It may come split over chunks.
        if !self.opened {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Ok(());
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.opened = true;
        }
        while let Some(nl) = self.pending.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            // The LF of a CR LF is no blank line: a blank line ends an event.
            let lf_of_crlf = self.after_cr && line == b"\n";
            self.after_cr = line.ends_with(b"\r");
            if !lf_of_crlf {
                self.line(&line)?;
            }
        }
        Ok(())
    }

    /// The stream ended: an event still waiting for its blank line is read now when it is
    /// whole JSON. One that is not was cut by the end of the stream — the server-sent events
    /// spec drops an unfinished event — so it is a transport failure, as a stream cut between
    /// events is, not a server speaking another protocol (tester 33 F1: a stream cut inside
    /// an event was `protocol`, "check the provider's base_url").
    pub fn end(&mut self) -> Result<(), Failure> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            // A cut may fall inside a character: what came is quoted, not refused as text.
            let text = String::from_utf8_lossy(&line).into_owned();
            self.line(text.as_bytes())?;
        }
        match self.event.take() {
            Some(data) => self.event_data(&data, true),
            None => Ok(()),
        }
    }

    /// The event whose `data:` lines were gathered, if any.
    fn dispatch(&mut self) -> Result<(), Failure> {
        match self.event.take() {
            Some(data) => self.event_data(&data, false),
            None => Ok(()),
        }
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), Failure> {
        // `[DONE]` ends the answer: what follows (in the same chunk, or a proxy's second
        // stream) is never added to it (tester 33 F8: `…}EXTRA` was stored).
        if self.done {
            if !raw.iter().all(u8::is_ascii_whitespace) {
                note_not_read(
                    &mut self.not_read,
                    "stream lines after [DONE] (left out of the answer)".to_string(),
                );
            }
            return Ok(());
        }
        let line = std::str::from_utf8(raw)
            .map_err(|_| protocol("a stream line is not UTF-8"))?
            .trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            self.event_name = None;
            return self.dispatch();
        }
        if let Some(name) = line.strip_prefix("event:") {
            self.event_name = Some(name.trim().to_string());
            return Ok(());
        }
        // Comments (`: OPENROUTER PROCESSING`) and other fields carry nothing.
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(());
        };
        let data = data.trim();
        if self.event_name.as_deref() == Some("error") {
            return Err(error_event(data));
        }
        // The data lines of one event are joined by LF, as the SSE spec reads them (tester
        // 13 T13-7: an event over two lines was refused as not JSON). A line that is JSON
        // by itself is read at once: servers that leave out the blank line between events
        // keep working, and a JSON value followed by more lines would not be JSON anyway.
        if let Some(event) = self.event.as_mut() {
            if data == "[DONE]" {
                self.dispatch()?;
                self.done = true;
            } else {
                event.push('\n');
                event.push_str(data);
            }
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        match serde_json::from_str::<Value>(data) {
            Ok(value) => self.event_value(data, &value),
            Err(_) => {
                self.event = Some(data.to_string());
                Ok(())
            }
        }
    }

    /// One event's gathered data; `cut`: the stream ended before its blank line.
    fn event_data(&mut self, data: &str, cut: bool) -> Result<(), Failure> {
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(_) if cut => {
                return Err(Failure::new(
                    FailureClass::Transport,
                    format!(
                        "the stream ended inside an event, after {} bytes of answer and {} of \
                         reasoning; the unfinished event: \"{}\"",
                        self.content.len(),
                        self.reasoning.len(),
                        quote_reply(data, 100)
                    ),
                ));
            }
            // After the answer's finish_reason a whole answer has come: an event that is
            // not JSON is noted, not a reason to fail it (tester 33 F8).
            Err(_) if self.finish_reason.is_some() => {
                note_not_read(
                    &mut self.not_read,
                    format!(
                        "a stream event after the finish that is not JSON: \"{}\"",
                        quote_reply(data, 60)
                    ),
                );
                return Ok(());
            }
            Err(_) => {
                return Err(protocol(format!(
                    "a stream event is not JSON: \"{}\"",
                    quote_reply(data, 100)
                )));
            }
        };
        self.event_value(data, &value)
    }

    /// One event's value, read from its `data`.
    fn event_value(&mut self, data: &str, value: &Value) -> Result<(), Failure> {
        if let Some(note) =
            crate::core::json_keys::repeat_note(data.as_bytes(), "in a stream event")
        {
            note_not_read(&mut self.not_read, note);
        }
        if let Some((code, message)) = error_envelope(value) {
            return Err(http_error_in_body(code, &message));
        }
        if self.id.is_none() {
            self.id = text_field(value, &["id"]);
        }
        if let Some(u) = usage_of(value, &mut self.not_read) {
            self.usage = Some(u);
        }
        // Usage-only or keep-alive events have no choice.
        let choices = value.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            self.started = true;
            // Only choice 0 is the answer: another's deltas are counted, never appended to
            // it (tester 13 T13-1: two choices were spliced into one text).
            match choice_index(choice) {
                Some(0) => self.choice(choice),
                Some(i) => {
                    self.other_choices.insert(i);
                }
                None => {
                    self.other_choices.insert(u64::MAX);
                }
            }
        }
        Ok(())
    }

    /// One delta of choice 0.
    fn choice(&mut self, choice: &Value) {
        let delta = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .unwrap_or(&Value::Null);
        if let Some(t) = content_of(delta, &mut self.not_read) {
            self.push_content(&t);
        }
        if let Some(t) = reasoning_of(delta) {
            self.reasoning.push_str(&t);
        }
        if let Some(t) = text_field(delta, &["refusal"]) {
            self.refusal.push_str(&t);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (k, c) in calls.iter().enumerate() {
                self.push_tool_call(k, c);
            }
        } else if let Some(f) = delta.get("function_call").filter(|f| f.is_object()) {
            // The legacy single call, streamed in fragments without index or id.
            self.push_tool_call(0, &serde_json::json!({ "function": f }));
        }
        if let Some(f) = text_field(choice, &["finish_reason"]) {
            self.finish_reason = Some(f);
        }
    }

    /// One tool-call delta, the `k`th of its event: the first for a call names it (id,
    /// function name), later ones append to its arguments. A delta carrying an `id` other
    /// than its slot's starts a new call, as do several gateways that send every parallel
    /// call whole at index 0; without an index, a new `id` is a new call and no `id` goes on
    /// with the last call (or is the `k`th of an event listing several) (tester 13 T13-6:
    /// two calls were glued into one name the server never sent). Calls are bounded by the
    /// reply cap: each costs bytes received.
    fn push_tool_call(&mut self, k: usize, c: &Value) {
        let index = c
            .get("index")
            .and_then(Value::as_u64)
            .map(|i| usize::try_from(i).unwrap_or(usize::MAX));
        let id = text_field(c, &["id"]).filter(|i| !i.is_empty());
        let known = id.as_ref().and_then(|i| self.tool_call_ids.get(i)).copied();
        let last = self.tool_calls.len().checked_sub(1);
        let slot = match (index.and_then(|i| self.tool_call_slots.get(&i)), &id) {
            (_, Some(_)) if known.is_some() => known,
            (Some(&s), Some(_)) if self.tool_calls[s].id.is_some() => None,
            (Some(&s), _) => Some(s),
            (None, Some(_)) => None,
            (None, None) if index.is_none() && k == 0 => last,
            (None, None) => None,
        };
        // A server numbering calls sparsely gets them packed in order, never a huge vector.
        let slot = slot.unwrap_or_else(|| {
            self.tool_calls.push(ToolCall::default());
            self.tool_calls.len() - 1
        });
        if let Some(i) = index {
            self.tool_call_slots.insert(i, slot);
        }
        if let Some(id) = id {
            self.tool_call_ids.insert(id.clone(), slot);
            self.tool_calls[slot].id = Some(id);
        }
        let call = &mut self.tool_calls[slot];
        let f = c.get("function").unwrap_or(&Value::Null);
        if let Some(name) = text_field(f, &["name"]) {
            call.name.push_str(&name);
        }
        match f.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
    }

    /// Append answer text, following the reasoning tags as they arrive. Only the new text
    /// and the few bytes before it are read (a tag may straddle two deltas), so a long
    /// stream costs its length once, not once per chunk.
    fn push_content(&mut self, text: &str) {
        let mut from = self.content.len().saturating_sub(LONGEST_TAG - 1);
        while !self.content.is_char_boundary(from) {
            from -= 1;
        }
        self.content.push_str(text);
        let low = self.content[from..].to_ascii_lowercase();
        let last = |tags: [&str; 2]| tags.iter().filter_map(|t| low.rfind(t)).max();
        match (
            last(["<think>", "<reasoning>"]),
            last(["</think>", "</reasoning>"]),
        ) {
            (Some(o), Some(c)) => self.tag_open = Some(o > c),
            (Some(_), None) => self.tag_open = Some(true),
            (None, Some(_)) => self.tag_open = Some(false),
            (None, None) => {}
        }
    }

    /// Bytes of answer and of reasoning so far, and whether the model is still thinking
    /// (inside an open `<think>`, or only a reasoning field so far), for progress.
    pub fn progress(&self) -> (usize, usize, bool) {
        let thinking = self
            .tag_open
            .unwrap_or(!self.reasoning.is_empty() && self.content.is_empty());
        (self.content.len(), self.reasoning.len(), thinking)
    }

    /// Whether the stream said how it finished.
    pub fn finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// What arrived, as a reply.
    pub fn reply(&self) -> Reply {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Reply {
            content: Some(self.content.clone()),
            reasoning: some(&self.reasoning),
            refusal: some(&self.refusal),
            finish_reason: self.finish_reason.clone(),
            tool_calls: self.tool_calls.clone(),
            usage: self.usage.clone(),
            id: self.id.clone(),
            other_choices: u32::try_from(self.other_choices.len()).unwrap_or(u32::MAX),
            not_read: self.not_read.clone(),
        }
    }
}

pub use crate::core::terminal_text::quote_reply;

/// How a failure says a body with nothing in it.
pub const EMPTY_BODY: &str = "an empty body";

/// A body as a failure quotes it: `"…"` cut to `width`, or `an empty body` (tester 26 N8:
/// chat said `""` and embeddings ended in `: `).
pub fn quoted_body(text: &str, width: usize) -> String {
    if text.trim().is_empty() {
        EMPTY_BODY.to_string()
    } else {
        format!("\"{}\"", quote_reply(text, width))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 26 N8: an empty body is said to be empty, the same way for chat and embeddings.
    #[test]
    fn an_empty_body_is_said_to_be_empty() {
        assert_eq!(quoted_body(" \n", 100), "an empty body");
        assert_eq!(quoted_body("<html>", 100), "\"<html>\"");
        let e = reply_from_body(b"").unwrap_err();
        assert_eq!(e.detail, "the body is not JSON: an empty body");
    }

    #[test]
    fn a_body_reads_into_a_reply_or_names_what_it_is() {
        let r = reply_from_body(
            br#"{"choices":[{"message":{"content":"{}","reasoning_content":"hm"},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("{}"));
        assert_eq!(r.reasoning.as_deref(), Some("hm"));
        assert_eq!(
            reply_from_body(b"<html>502</html>").unwrap_err().class,
            FailureClass::Protocol
        );
        assert_eq!(
            reply_from_body(br#"{"object":"list"}"#).unwrap_err().class,
            FailureClass::Protocol
        );
        let e = reply_from_body(br#"{"error":{"message":"Rate limit","code":429}}"#).unwrap_err();
        assert_eq!(e.class, FailureClass::HttpError);
        assert!(e.detail.contains("429"));
        assert_eq!(
            reply_from_body(&[0xff, 0xfe]).unwrap_err().class,
            FailureClass::Protocol
        );
    }

    #[test]
    fn a_stream_split_anywhere_reads_the_same() {
        let events = "data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n: keep-alive\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"steps\\\":\"}}]}\n\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"[]}é\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        // Lines end at LF, CR LF or CR alone (tester 10 T10-15: CR alone read as nothing).
        for events in [
            events.to_string(),
            events.replace('\n', "\r\n"),
            events.replace('\n', "\r"),
        ] {
            for cut in 1..events.len() {
                let mut s = EventStream::default();
                s.feed(&events.as_bytes()[..cut]).unwrap();
                s.feed(&events.as_bytes()[cut..]).unwrap();
                let r = s.reply();
                assert_eq!(r.content.as_deref(), Some("{\"steps\":[]}é"), "{events:?}");
                assert_eq!(r.reasoning.as_deref(), Some("hm"));
                assert_eq!(r.finish_reason.as_deref(), Some("stop"));
                assert!(s.done);
            }
        }
        let mut s = EventStream::default();
        assert_eq!(
            s.feed(b"data: not json\n\n").unwrap_err().class,
            FailureClass::Protocol
        );
    }

    #[test]
    fn a_byte_order_mark_at_the_start_of_a_stream_is_not_part_of_its_first_event() {
        let events = "data: {\"choices\":[{\"delta\":{\"content\":\"IMPORTANT PREFIX: \"}}]}\n\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"rest\"}}]}\n\ndata: [DONE]\n\n";
        let mut whole = BOM.to_vec();
        whole.extend_from_slice(events.as_bytes());
        // Whole, and with the mark split over chunks of every size.
        for chunk in [whole.len(), 1, 2, 3, 4] {
            let mut s = EventStream::default();
            for piece in whole.chunks(chunk) {
                s.feed(piece).unwrap();
            }
            assert!(s.done, "chunks of {chunk}");
            assert_eq!(
                s.reply().content.as_deref(),
                Some("IMPORTANT PREFIX: rest"),
                "chunks of {chunk}"
            );
        }
        // A mark later in the stream is the text's own.
        let mut s = EventStream::default();
        s.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"\xEF\xBB\xBFx\"}}]}\n\n")
            .unwrap();
        assert_eq!(s.reply().content.as_deref(), Some("\u{feff}x"));
    }

    #[test]
    fn tool_call_deltas_split_anywhere_assemble_in_order_with_usage_and_id() {
        let event = |v: serde_json::Value| format!("data: {v}\n\n");
        let call = |index: u64, f: serde_json::Value, id: Option<&str>| {
            event(serde_json::json!({"id": "cmpl-9", "choices": [{"index": 0,
                "delta": {"tool_calls": [{"index": index, "id": id, "function": f}]}}]}))
        };
        let events = [
            call(0, serde_json::json!({"name": "memory.store", "arguments": ""}), Some("c0")),
            call(1, serde_json::json!({"name": "blog.draft", "arguments": "{\"ti"}), Some("c1")),
            call(0, serde_json::json!({"arguments": "{\"text\": \"é\"}"}), None),
            call(1, serde_json::json!({"arguments": "tle\": 1}"}), None),
            event(serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            event(serde_json::json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 1}}})),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        for cut in 1..events.len() {
            let mut s = EventStream::default();
            s.feed(&events.as_bytes()[..cut]).unwrap();
            s.feed(&events.as_bytes()[cut..]).unwrap();
            let r = s.reply();
            let calls: Vec<(Option<&str>, &str, &str)> = r
                .tool_calls
                .iter()
                .map(|c| (c.id.as_deref(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            assert_eq!(
                calls,
                [
                    (Some("c0"), "memory.store", "{\"text\": \"é\"}"),
                    (Some("c1"), "blog.draft", "{\"title\": 1}")
                ]
            );
            let u = r.usage.unwrap();
            assert_eq!(
                (
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.cached_tokens,
                    u.reasoning_tokens
                ),
                (Some(10), Some(3), Some(4), Some(1))
            );
            assert_eq!(r.id.as_deref(), Some("cmpl-9"));
            assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        }
        // A sparse index far out does not make a huge vector.
        let mut s = EventStream::default();
        s.feed(call(u64::MAX, serde_json::json!({"name": "x"}), None).as_bytes())
            .unwrap();
        assert_eq!(s.reply().tool_calls.len(), 1);
    }

    /// Tester 33 F1: a stream cut inside an event (no blank line, no closing brace) was
    /// `protocol` — "check the provider's base_url" — while one cut between events was
    /// `transport`. Both are cuts; a whole last event without its blank line still reads.
    #[test]
    fn a_stream_cut_inside_an_event_is_a_transport_failure() {
        let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\n";
        for cut in [
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"XYZ",
            // inside a character
            "data: {\"choices\":[{\"delta\":{\"content\":\"\u{e9}",
        ] {
            let bytes: &[u8] = if cut.ends_with('\u{e9}') {
                &cut.as_bytes()[..cut.len() - 1]
            } else {
                cut.as_bytes()
            };
            let mut s = EventStream::default();
            s.feed(first.as_bytes()).unwrap();
            s.feed(bytes).unwrap();
            let f = s.end().unwrap_err();
            assert_eq!(f.class, FailureClass::Transport, "{}", f.detail);
            assert!(
                f.detail
                    .starts_with("the stream ended inside an event, after 2 bytes of answer"),
                "{}",
                f.detail
            );
            assert_eq!(s.reply().content.as_deref(), Some("ab"));
        }
        let mut s = EventStream::default();
        s.feed(first.as_bytes()).unwrap();
        s.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}")
            .unwrap();
        s.end().unwrap();
        assert_eq!(s.reply().content.as_deref(), Some("abc"));
        assert!(s.finished());
    }

    /// Tester 33 F8: an event after `[DONE]` was appended to the answer (`…}EXTRA`), and
    /// one that is not JSON after the finish failed a whole answer as `protocol`.
    #[test]
    fn nothing_after_done_joins_the_answer_and_garbage_after_the_finish_is_noted() {
        let delta = |t: &str, finish: Option<&str>| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices":[{"index":0,"delta":{"content":t},"finish_reason":finish}]})
            )
        };
        let mut s = EventStream::default();
        let stream = format!(
            "{}data: [DONE]\n\n{}",
            delta("{}", Some("stop")),
            delta("EXTRA", None)
        );
        s.feed(stream.as_bytes()).unwrap();
        s.end().unwrap();
        let reply = s.reply();
        assert_eq!(reply.content.as_deref(), Some("{}"));
        assert!(
            reply.not_read.iter().any(|n| n.contains("after [DONE]")),
            "{:?}",
            reply.not_read
        );
        let mut s = EventStream::default();
        let stream = format!(
            "{}data: garbage after finish\n\ndata: [DONE]\n\n",
            delta("{}", Some("stop"))
        );
        s.feed(stream.as_bytes()).unwrap();
        s.end().unwrap();
        let reply = s.reply();
        assert_eq!(reply.content.as_deref(), Some("{}"));
        assert!(
            reply
                .not_read
                .iter()
                .any(|n| n.contains("garbage after finish")),
            "{:?}",
            reply.not_read
        );
        // Before the finish it is still a protocol failure.
        let mut s = EventStream::default();
        let f = s
            .feed(format!("{}data: garbage\n\n", delta("{", None)).as_bytes())
            .unwrap_err();
        assert_eq!(f.class, FailureClass::Protocol);
    }

    /// Tester 33 F9: an `event: error` with the provider's message was dropped, and the call
    /// read as a stream cut without a word of it.
    #[test]
    fn an_error_event_is_the_providers_error() {
        for (data, said) in [
            (
                r#"{"message":"overloaded"}"#,
                "the stream sent an error event: overloaded",
            ),
            (
                r#"{"error":{"code":503,"message":"upstream overloaded"}}"#,
                "the endpoint answered error 503 in the body: upstream overloaded",
            ),
            (
                "busy, try later",
                "the stream sent an error event: busy, try later",
            ),
        ] {
            let mut s = EventStream::default();
            s.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n")
                .unwrap();
            let f = s
                .feed(format!("event: error\ndata: {data}\n\n").as_bytes())
                .unwrap_err();
            assert_eq!(f.class, FailureClass::HttpError, "{}", f.detail);
            assert_eq!(f.detail, said);
        }
        // Another event name changes nothing.
        let mut s = EventStream::default();
        s.feed(b"event: message\ndata: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n")
            .unwrap();
        assert_eq!(s.reply().content.as_deref(), Some("ab"));
    }

    #[test]
    fn thinking_follows_tags_split_across_deltas() {
        let delta = |t: &str| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices":[{"delta":{"content":t}}]})
            )
        };
        let mut s = EventStream::default();
        assert!(!s.progress().2);
        for (piece, thinking) in [
            ("<thi", false),
            ("nk>let me see", true),
            (" é more", true),
            ("</THI", true),
            ("NK>{\"steps\":[]}", false),
            ("<reasoning>again", true),
        ] {
            s.feed(delta(piece).as_bytes()).unwrap();
            assert_eq!(s.progress().2, thinking, "after {piece:?}");
        }
        let mut only_field = EventStream::default();
        only_field
            .feed(b"data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n")
            .unwrap();
        assert!(only_field.progress().2);
    }
    fn stream_of(events: &str) -> Reply {
        let mut s = EventStream::default();
        s.feed(events.as_bytes()).unwrap();
        s.end().unwrap();
        s.reply()
    }

    fn calls(r: &Reply) -> Vec<(Option<&str>, &str, &str)> {
        r.tool_calls
            .iter()
            .map(|c| (c.id.as_deref(), c.name.as_str(), c.arguments.as_str()))
            .collect()
    }

    #[test]
    fn only_choice_zero_is_kept_streamed_or_not_and_the_others_are_counted() {
        // tester 13 T13-1: choice 1's delta was appended to choice 0's text.
        let events = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fir\"}}]}\n\n\
            data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"SECOND\"}}]}\n\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"st\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let r = stream_of(events);
        assert_eq!(r.content.as_deref(), Some("first"));
        assert_eq!(r.other_choices, 1);
        // Non-stream: the choice at index 0, wherever it is listed.
        let r = reply_from_body(
            br#"{"choices":[{"index":1,"message":{"content":"CHOICE ONE"},"finish_reason":"length"},
                {"index":0,"message":{"content":"choice zero"},"finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("choice zero"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.other_choices, 1);
        let r = reply_from_body(br#"{"choices":[{"message":{"content":"only"}}]}"#).unwrap();
        assert_eq!((r.content.as_deref(), r.other_choices), (Some("only"), 0));
    }

    #[test]
    fn a_tool_call_delta_with_a_new_id_or_without_index_is_its_own_call() {
        // tester 13 T13-6: two calls at index 0 (or without index) were glued into one.
        let d = |v: serde_json::Value| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [v]}}]})
            )
        };
        let dupidx = [
            d(serde_json::json!({"index": 0, "id": "c1", "function": {"name": "web.search", "arguments": "{\"q\":\"a\"}"}})),
            d(serde_json::json!({"index": 0, "id": "c2", "function": {"name": "browser.open", "arguments": "{\"url\":\"b\"}"}})),
        ]
        .concat();
        let want = [
            (Some("c1"), "web.search", "{\"q\":\"a\"}"),
            (Some("c2"), "browser.open", "{\"url\":\"b\"}"),
        ];
        assert_eq!(calls(&stream_of(&dupidx)), want);
        let body = br#"{"choices":[{"message":{"tool_calls":[
            {"id":"c1","function":{"name":"web.search","arguments":"{\"q\":\"a\"}"}},
            {"id":"c2","function":{"name":"browser.open","arguments":"{\"url\":\"b\"}"}}]}}]}"#;
        assert_eq!(
            calls(&reply_from_body(body).unwrap()),
            want,
            "non-stream agrees"
        );
        let noindex = [
            d(serde_json::json!({"id": "c1", "function": {"name": "web.search", "arguments": "{\"q\":"}})),
            d(serde_json::json!({"function": {"arguments": "\"x\"}"}})),
            d(serde_json::json!({"id": "c2", "function": {"name": "slack.post", "arguments": "{}"}})),
        ]
        .concat();
        assert_eq!(
            calls(&stream_of(&noindex)),
            [
                (Some("c1"), "web.search", "{\"q\":\"x\"}"),
                (Some("c2"), "slack.post", "{}")
            ]
        );
    }

    #[test]
    fn content_parts_and_a_legacy_function_call_are_read() {
        // tester 13 T13-10: both were stored as an empty answer.
        let r = reply_from_body(
            br#"{"choices":[{"message":{"content":[{"type":"text","text":"parts "},
                {"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"{}"}]}}]}"#,
        )
        .unwrap();
        assert_eq!(r.content.as_deref(), Some("parts {}"));
        assert_eq!(r.not_read, ["a content part of type image_url"]);
        let r = reply_from_body(
            br#"{"choices":[{"message":{"content":null,"function_call":{"name":"web.search","arguments":"{\"q\":\"x\"}"}},"finish_reason":"function_call"}]}"#,
        )
        .unwrap();
        assert_eq!(calls(&r), [(None, "web.search", "{\"q\":\"x\"}")]);
        let r = stream_of(
            "data: {\"choices\":[{\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"function_call\":{\"name\":\"web.search\",\"arguments\":\"{\\\"q\\\"\"}}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"function_call\":{\"arguments\":\":1}\"}}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"hm\"}]}}]}\n\n",
        );
        assert_eq!(r.content.as_deref(), Some("a"));
        assert_eq!(calls(&r), [(None, "web.search", "{\"q\":1}")]);
        assert_eq!(r.reasoning.as_deref(), Some("hm"));
    }

    /// A key given twice: serde_json keeps the last copy, a proxy or log may show the first;
    /// the answer is kept and the repeat said (it had been read silently).
    #[test]
    fn a_key_given_twice_is_read_as_its_last_copy_and_said() {
        let r =
            reply_from_body(br#"{"choices":[{"message":{"content":"first","content":"second"}}]}"#)
                .unwrap();
        assert_eq!(r.content.as_deref(), Some("second"));
        assert_eq!(r.not_read.len(), 1, "{:?}", r.not_read);
        assert!(
            r.not_read[0].starts_with(
                "`choices[0].message.content` given twice in the body: the last copy is read"
            ),
            "{:?}",
            r.not_read
        );
        let r = stream_of(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\",\"content\":\"b\"}}]}\n\n\
             data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        assert_eq!(r.content.as_deref(), Some("bc"));
        assert!(
            r.not_read
                .iter()
                .any(|n| n.starts_with("`choices[0].delta.content` given twice in a stream event")),
            "{:?}",
            r.not_read
        );
        // No repeat, no note.
        let r = reply_from_body(br#"{"choices":[{"message":{"content":"x"}}]}"#).unwrap();
        assert!(r.not_read.is_empty());
    }

    #[test]
    fn refused_usage_figures_are_null_and_named_and_total_tokens_is_kept() {
        // tester 13 T13-4: refused figures were nulled without a word.
        let r = reply_from_body(
            br#"{"choices":[{"message":{"content":"{}"}}],
                "usage":{"prompt_tokens":-5,"completion_tokens":1e30,"total_tokens":12.0}}"#,
        )
        .unwrap();
        let u = r.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (None, None, Some(12))
        );
        assert_eq!(
            r.not_read,
            [
                "usage prompt_tokens -5 (no token count)",
                "usage completion_tokens 1e+30 (no token count)"
            ]
        );
        let r = stream_of(
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":-1}}\n\n",
        );
        assert_eq!(r.usage.unwrap().prompt_tokens, Some(3));
        assert_eq!(r.not_read, ["usage total_tokens -1 (no token count)"]);
        let r = reply_from_body(br#"{"choices":[{"message":{"content":"{}"}}]}"#).unwrap();
        assert!(r.usage.is_none() && r.not_read.is_empty());
    }

    #[test]
    fn the_data_lines_of_one_event_are_joined() {
        // tester 13 T13-7: an event over two data lines was refused as not JSON.
        let events = "data: {\"choices\":[{\"delta\":{\"content\":\"multi \"}}]}\n\n\
            data: {\"choices\": [{\"delta\":\ndata:  {\"content\":\"plan\"},\"finish_reason\":\"stop\"}]}\n\n\
            data: [DONE]\n\n";
        for events in [
            events.to_string(),
            events.replace('\n', "\r\n"),
            events.replace('\n', "\r"),
        ] {
            for cut in 1..events.len() {
                let mut s = EventStream::default();
                s.feed(&events.as_bytes()[..cut]).unwrap();
                s.feed(&events.as_bytes()[cut..]).unwrap();
                assert!(s.done);
                assert_eq!(s.reply().content.as_deref(), Some("multi plan"));
            }
        }
        // Events without their blank line still read one by one; a broken one still fails.
        let r = stream_of(
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n",
        );
        assert_eq!(r.content.as_deref(), Some("ab"));
        let mut s = EventStream::default();
        s.feed(b"data: {\"choices\":\n").unwrap();
        assert_eq!(s.feed(b"\n").unwrap_err().class, FailureClass::Protocol);
    }
}
