//! One chat completion against an OpenAI-compatible endpoint: connect and total timeouts,
//! retries with backoff on 429 (honouring retry-after), 5xx and refused connections,
//! streaming with progress, and cancellation. The key goes into one sensitive header and
//! nowhere else: no error, progress report or record carries it, and an endpoint that
//! echoes it back has it redacted from everything received (see [`crate::llm::redact`]).
//! Replies are capped at `max_reply_bytes`, and no wait between retries is longer than
//! `retry_max_wait`.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

use crate::core::assemble::ChatMessage;
use crate::core::failure::{Failure, FailureClass, Reply};
use crate::core::text::clip;
use crate::llm::provider::{ClientSettings, Endpoint};
use crate::llm::redact::{Redactor, StreamRedactor};
use crate::llm::wire::{EventStream, quote_reply, reply_from_body};

/// Most of a reply kept for the record when it is an error body, or when it is too large.
pub const OPENING_MAX: usize = 64 * 1024;

/// Cancels a call from anywhere (the UI thread, a signal handler).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<(AtomicBool, Notify)>);

/// The same handle, not an equal-looking one.
impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Cancel {
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// What a call is doing, for a progress line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Progress {
    Sending {
        attempt: u32,
    },
    Waiting {
        attempt: u32,
        wait_ms: u64,
        why: String,
    },
    Receiving {
        content_bytes: usize,
        reasoning_bytes: usize,
        thinking: bool,
    },
}

pub use crate::core::budget::Sampling;

/// The request body's parts.
#[derive(Debug, Clone)]
pub struct ChatCall {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: usize,
    pub response_format: Option<&'static str>,
    pub sampling: Sampling,
}

impl ChatCall {
    /// The JSON body for `model` (the provider's id), `stream` or not.
    pub fn body(&self, model: &str, stream: bool) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": model,
            "messages": self.messages,
            "max_tokens": self.max_tokens,
            "stream": stream,
        });
        if stream {
            // Ask for usage in the last event; servers that do not know it ignore it.
            body["stream_options"] = serde_json::json!({ "include_usage": true });
        }
        if let Some(format) = self.response_format {
            body["response_format"] = serde_json::json!({ "type": format });
        }
        if let (Some(b), Ok(serde_json::Value::Object(s))) =
            (body.as_object_mut(), serde_json::to_value(&self.sampling))
        {
            b.extend(s);
        }
        body
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// The endpoint answered with a chat completion; what it means is for
    /// [`read_reply`](crate::core::failure::read_reply).
    Reply {
        reply: Reply,
    },
    /// The HTTP layer failed: status, transport or protocol. `body` is what came back, and
    /// `partial` what a cut stream had delivered.
    Failed {
        failure: Failure,
        body: Option<String>,
        partial: Option<Reply>,
    },
    Cancelled,
}

impl Answer {
    /// A short name for the log: `reply`, the failure's class, or `cancelled`.
    pub fn kind(&self) -> &'static str {
        match self {
            Answer::Reply { .. } => "reply",
            Answer::Failed { failure, .. } => failure.class.as_str(),
            Answer::Cancelled => "cancelled",
        }
    }

    /// The chat completion's own `id` (a cut stream's too), when it gave one.
    pub fn reply_id(&self) -> Option<&str> {
        match self {
            Answer::Reply { reply }
            | Answer::Failed {
                partial: Some(reply),
                ..
            } => reply.id.as_deref(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exchange {
    pub answer: Answer,
    /// The last HTTP status seen.
    pub status: Option<u16>,
    pub attempts: u32,
    /// The request id the plan stores: the last response's `x-request-id` header, else the
    /// chat completion's `id` (redacted like everything received). The log names the same.
    pub request_id: Option<String>,
    /// From the first send to the end of the last attempt, waits included.
    pub latency_ms: u64,
}

/// The HTTP client every call to a provider goes through (chat completions, embeddings):
/// its timeouts, and no redirect followed. A followed redirect re-sent the whole request —
/// system prompt, catalog, the operator's text — to a host the operator never configured
/// and stored that host's answer as the provider's (tester 15 F1); a 3xx is an answer like
/// any other failure, naming where it pointed ([`redirect_note`]).
pub fn http_client(s: &ClientSettings) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(s.connect_timeout)
        .timeout(s.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| anyhow::anyhow!("building the HTTP client: {}", describe(&e)))
}

/// What an HTTP failure's message says of a redirect: nothing for another status; else
/// where it pointed (the `Location` as the endpoint wrote it, quoted) and that it was not
/// followed.
pub fn redirect_note(status: reqwest::StatusCode, headers: &reqwest::header::HeaderMap) -> String {
    if !status.is_redirection() {
        return String::new();
    }
    let to = headers
        .get(reqwest::header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .map_or_else(
            || "nowhere (no Location)".to_string(),
            |l| crate::core::terminal_text::quoted_with(&l, '"'),
        );
    format!(
        " (a redirect to {to}, not followed: a request goes only to the configured base_url; \
         set base_url to where the endpoint now is)"
    )
}

/// An HTTP failure as one line: `HTTP 503 Service Unavailable{notes}: {body}`, the body
/// already quoted; an empty one is said to be empty (tester 25 F5: the line ended in `: `).
pub fn http_failure_line(status: impl std::fmt::Display, notes: &str, body: &str) -> String {
    let body = if body.is_empty() {
        crate::llm::wire::EMPTY_BODY
    } else {
        body
    };
    format!("HTTP {status}{notes}: {body}")
}

/// What an HTTP failure's message says of the endpoint's retry-after: nothing when it gave
/// none, its wait, and whether that is longer than `max_wait` (so no retry follows). A
/// number of seconds too large to read as a wait is named as the endpoint wrote it.
pub fn retry_after_note(retry_after: Option<&RetryAfter>, max_wait: Duration) -> String {
    let Some(r) = retry_after else {
        return String::new();
    };
    let wait = if r.wait == Duration::MAX {
        clip(&r.written, 40)
    } else {
        r.wait.as_secs_f64().to_string()
    };
    if r.wait > max_wait {
        format!(
            " (retry-after {wait} s, too long to wait for: over retry_max_wait {} s, so not retried)",
            max_wait.as_secs_f64()
        )
    } else {
        format!(" (retry-after {wait} s)")
    }
}

/// What went wrong and its causes. reqwest's own message carries the URL, which this
/// leaves out: the caller names the endpoint, and a base URL with credentials in it must
/// not leak.
pub fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "the reply body broke off"
    } else if e.is_request() {
        "the request failed"
    } else {
        "HTTP error"
    };
    let mut parts = vec![kind.to_string()];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// An endpoint's `retry-after`: the wait it asks for, and its value as written (to name a
/// number too large to read as a wait).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryAfter {
    pub wait: Duration,
    pub written: String,
}

/// The endpoint's `retry-after`, read now (the services' clock): see
/// [`retry_after_from`].
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<RetryAfter> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let wait = retry_after_from(v, crate::store::now_secs())?;
    Some(RetryAfter {
        wait,
        written: v.trim().to_string(),
    })
}

/// A `retry-after` value (RFC 9110 section 10.2.3) as the wait from `now` (Unix seconds):
/// seconds, or an HTTP date read as "wait until" (a date already past is no wait). A
/// number too large for a `Duration` reads as the longest one, which no retry waits for;
/// a date too far for one likewise. `None` for anything else, when the backoff applies.
pub fn retry_after_from(value: &str, now: i64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        let secs = Some(secs).filter(|s| !s.is_nan() && *s >= 0.0)?;
        return Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let at = crate::core::time::parse_http_date(v).ok()?;
    let ahead = u64::try_from(at.saturating_sub(now)).unwrap_or(0);
    Some(Duration::from_secs(ahead))
}

/// The wait before retry `retry` (1 for the first): the endpoint's retry-after when it gave
/// one, else `retry_base` doubled per retry (base, 2×base, 4×base, …); never longer than
/// `retry_max_wait`, whatever the count or the base.
pub fn retry_wait(s: &ClientSettings, retry: u32, retry_after: Option<Duration>) -> Duration {
    let backoff = || {
        2u32.checked_pow(retry.saturating_sub(1))
            .and_then(|factor| s.retry_base.checked_mul(factor))
            .unwrap_or(Duration::MAX)
    };
    retry_after.unwrap_or_else(backoff).min(s.retry_max_wait)
}

/// How many tries one call to an endpoint gets and how long it waits between them: one
/// policy for every call that goes out (chat completions, embeddings) — at most
/// `llm.retries` retries, each after [`retry_wait`], and no retry when the endpoint asks
/// for a wait longer than `retry_max_wait`.
#[derive(Debug)]
pub struct Retries<'s> {
    settings: &'s ClientSettings,
    attempts: u32,
}

impl<'s> Retries<'s> {
    pub fn new(settings: &'s ClientSettings) -> Retries<'s> {
        Retries {
            settings,
            attempts: 0,
        }
    }

    /// Counts the next attempt and gives its number (1 for the first).
    pub fn attempt(&mut self) -> u32 {
        self.attempts = self.attempts.saturating_add(1);
        self.attempts
    }

    /// Attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// After the current attempt failed in a way worth another try: the wait before the
    /// next, or `None` when the retries are spent or the endpoint's retry-after is longer
    /// than `retry_max_wait`.
    pub fn wait_after(&self, retry_after: Option<Duration>) -> Option<Duration> {
        if self.attempts > self.settings.retries
            || retry_after.is_some_and(|w| w > self.settings.retry_max_wait)
        {
            return None;
        }
        Some(retry_wait(self.settings, self.attempts, retry_after))
    }
}

/// An HTTP status worth another try: 429 (rate limited) and every 5xx.
pub fn transient_status(status: reqwest::StatusCode) -> bool {
    status.as_u16() == 429 || status.is_server_error()
}

/// `n` bytes, in the largest unit that divides it.
fn byte_size(n: usize) -> String {
    const KIB: usize = 1024;
    match n {
        0 => "0 bytes".to_string(),
        n if n % (KIB * KIB) == 0 => format!("{} MiB", n / (KIB * KIB)),
        n if n % KIB == 0 => format!("{} KiB", n / KIB),
        n => format!("{n} bytes"),
    }
}

#[derive(Debug)]
enum Attempt {
    Done(Answer, Option<u16>),
    /// Worth another try: after `retry_after` when the endpoint said so, else the backoff.
    Retry {
        retry_after: Option<Duration>,
        why: String,
        status: Option<u16>,
        last: Answer,
    },
}

fn failed(
    class: FailureClass,
    detail: String,
    body: Option<String>,
    partial: Option<Reply>,
) -> Answer {
    Answer::Failed {
        failure: Failure::new(class, detail),
        body,
        partial,
    }
}

impl Attempt {
    /// The attempt with the key taken out of every text it carries. The bytes were redacted
    /// as they arrived; this catches what decoding put together again: a key JSON-escaped
    /// in a body, or split across two stream deltas.
    fn redacted(mut self, r: &Redactor) -> Attempt {
        if !r.is_active() {
            return self;
        }
        match &mut self {
            Attempt::Done(answer, _) => redact_answer(r, answer),
            Attempt::Retry { why, last, .. } => {
                r.in_place(why);
                redact_answer(r, last);
            }
        }
        self
    }
}

fn redact_answer(r: &Redactor, answer: &mut Answer) {
    let reply = |reply: &mut Reply| {
        for text in [
            &mut reply.content,
            &mut reply.reasoning,
            &mut reply.refusal,
            &mut reply.finish_reason,
            &mut reply.id,
        ]
        .into_iter()
        .flatten()
        {
            r.in_place(text);
        }
        for call in &mut reply.tool_calls {
            r.in_place(&mut call.name);
            r.in_place(&mut call.arguments);
            if let Some(id) = &mut call.id {
                r.in_place(id);
            }
        }
    };
    match answer {
        Answer::Reply { reply: re } => reply(re),
        Answer::Failed {
            failure,
            body,
            partial,
        } => {
            r.in_place(&mut failure.detail);
            if let Some(b) = body {
                r.in_place(b);
            }
            if let Some(p) = partial {
                reply(p);
            }
        }
        Answer::Cancelled => {}
    }
}

/// Send one chat completion, retrying as configured. `Err` only for configuration (a key
/// variable that is not set, a client that cannot be built); every endpoint behaviour is
/// an [`Exchange`].
pub async fn send(
    endpoint: &Endpoint,
    call: &ChatCall,
    cancel: &Cancel,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> anyhow::Result<Exchange> {
    let key = endpoint.key()?;
    // Built from the key in hand: everything received below passes through it.
    let redactor = Redactor::new(key.as_deref());
    let s = &endpoint.settings;
    let client = http_client(s)?;
    let body = call.body(&endpoint.upstream_model, endpoint.stream);
    tracing::info!(
        provider = %endpoint.provider,
        model = %endpoint.upstream_model,
        url = %redactor.text(&endpoint.url),
        stream = endpoint.stream,
        messages = call.messages.len(),
        "sending a chat completion"
    );
    if let Some(text) = crate::logging::json_for_log(&body) {
        // The operator's own text may hold another configured provider's key.
        let secrets = crate::llm::redact::Secrets::from_env(&endpoint.key_envs);
        tracing::debug!(body = %secrets.text(&redactor.text(&text)), "request body");
    }
    let started = std::time::Instant::now();
    let mut retries = Retries::new(s);
    let mut status = None;
    let mut request_id = None;
    let answer = loop {
        let attempts = retries.attempt();
        progress(Progress::Sending { attempt: attempts });
        let attempt = tokio::select! {
            a = attempt(&client, endpoint, key.as_deref(), &redactor, &body, &mut request_id, progress) => a,
            () = cancel.cancelled() => break Answer::Cancelled,
        };
        match attempt.redacted(&redactor) {
            Attempt::Done(answer, st) => {
                status = st.or(status);
                break answer;
            }
            Attempt::Retry {
                retry_after,
                why,
                status: st,
                last,
            } => {
                status = st.or(status);
                let Some(wait) = retries.wait_after(retry_after) else {
                    break last;
                };
                tracing::warn!(
                    attempt = attempts,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    status = st,
                    "retrying: {why}"
                );
                progress(Progress::Waiting {
                    attempt: attempts,
                    wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    why,
                });
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = cancel.cancelled() => break Answer::Cancelled,
                }
            }
        }
    };
    // Tester 5 C6: the log said `request_id=""` while the plan stored the body's id.
    let mut request_id = request_id.or_else(|| answer.reply_id().map(|id| clip(id.trim(), 200)));
    if let Some(id) = &mut request_id {
        redactor.in_place(id);
    }
    let attempts = retries.attempts();
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::info!(
        status,
        attempts,
        latency_ms,
        // None: the field is left out, never an empty id.
        request_id = request_id.as_deref(),
        answer = answer.kind(),
        "chat completion finished"
    );
    if let Answer::Failed { failure, .. } = &answer {
        tracing::warn!(class = failure.class.as_str(), "failed: {}", failure.detail);
    }
    Ok(Exchange {
        answer,
        status,
        attempts,
        request_id,
        latency_ms,
    })
}

async fn attempt(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    key: Option<&str>,
    redactor: &Redactor,
    body: &serde_json::Value,
    request_id: &mut Option<String>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Attempt {
    let s = &endpoint.settings;
    let mut request = client.post(&endpoint.url).json(body);
    if let Some(k) = key {
        match reqwest::header::HeaderValue::from_str(&format!("Bearer {k}")) {
            Ok(mut v) => {
                v.set_sensitive(true);
                request = request.header(reqwest::header::AUTHORIZATION, v);
            }
            Err(_) => {
                let var = endpoint.key_env.as_deref().unwrap_or("the key variable");
                return Attempt::Done(
                    failed(
                        FailureClass::Transport,
                        format!("the key in ${var} is not a valid header value"),
                        None,
                        None,
                    ),
                    None,
                );
            }
        }
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            let detail = format!("{} ({}): {}", endpoint.url, endpoint.provider, describe(&e));
            let answer = failed(FailureClass::Transport, detail.clone(), None, None);
            if e.is_connect() && !e.is_timeout() {
                return Attempt::Retry {
                    retry_after: None,
                    why: detail,
                    status: None,
                    last: answer,
                };
            }
            return Attempt::Done(answer, None);
        }
    };
    let status = response.status();
    let code = Some(status.as_u16());
    *request_id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| clip(v.trim(), 200));
    let wait_for = retry_after(response.headers());
    let redirect = redirect_note(status, response.headers());
    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let mut incoming = Incoming::new(response, redactor, s.max_reply_bytes);
    if !status.is_success() {
        let text = incoming.read_opening().await;
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| crate::core::failure::error_envelope(&v).map(|(_, m)| m))
            // The envelope's message whole, as before; only the raw body is cut.
            .map_or_else(|| quote_reply(&text, 160), |m| quote_reply(&m, usize::MAX));
        let after = retry_after_note(wait_for.as_ref(), s.retry_max_wait);
        let wait_for = wait_for.map(|r| r.wait);
        let detail = http_failure_line(status, &format!("{after}{redirect}"), &message);
        let answer = failed(FailureClass::HttpError, detail.clone(), Some(text), None);
        if !transient_status(status) {
            return Attempt::Done(answer, code);
        }
        if wait_for.is_some_and(|w| w > s.retry_max_wait) {
            return Attempt::Done(answer, code);
        }
        return Attempt::Retry {
            retry_after: wait_for,
            why: detail,
            status: code,
            last: answer,
        };
    }
    if is_stream {
        return Attempt::Done(read_stream(&mut incoming, progress).await, code);
    }
    let mut bytes = Vec::new();
    loop {
        match incoming.next().await {
            Ok(Some(c)) => bytes.extend_from_slice(&c),
            Ok(None) => break,
            Err(Cut::TooLarge) => return Attempt::Done(incoming.too_large(None), code),
            Err(Cut::Broken(why)) => {
                return Attempt::Done(
                    failed(
                        FailureClass::Transport,
                        format!("reading the reply from {}: {why}", endpoint.url),
                        Some(String::from_utf8_lossy(&bytes).into_owned()),
                        None,
                    ),
                    code,
                );
            }
        }
    }
    let answer = match reply_from_body(&bytes) {
        Ok(reply) => Answer::Reply { reply },
        Err(failure) => Answer::Failed {
            failure,
            body: Some(String::from_utf8_lossy(&bytes).into_owned()),
            partial: None,
        },
    };
    Attempt::Done(answer, code)
}

/// Why reading a reply stopped before its end.
enum Cut {
    /// More than `max_reply_bytes` arrived.
    TooLarge,
    /// The connection broke: what went wrong.
    Broken(String),
}

/// A reply's bytes as they arrive. Every byte received from an endpoint passes through
/// here: each chunk is redacted of the key (a key split across two chunks included) and
/// counted against `max_reply_bytes`, and the opening is kept for the record.
struct Incoming<'r> {
    response: reqwest::Response,
    redact: StreamRedactor<'r>,
    received: usize,
    limit: usize,
    /// The first [`OPENING_MAX`] redacted bytes.
    opening: Vec<u8>,
    /// Bytes arrived that the opening could not take, or reading stopped before the end:
    /// the opening is not the whole reply, so it ends at a character boundary.
    clipped: bool,
    ended: bool,
}

impl<'r> Incoming<'r> {
    fn new(response: reqwest::Response, redactor: &'r Redactor, limit: usize) -> Incoming<'r> {
        Incoming {
            response,
            redact: redactor.stream(),
            received: 0,
            limit,
            opening: Vec::new(),
            clipped: false,
            ended: false,
        }
    }

    /// The next bytes, redacted; `Ok(None)` after the end.
    async fn next(&mut self) -> Result<Option<Vec<u8>>, Cut> {
        if self.ended {
            return Ok(None);
        }
        let bytes = match self.response.chunk().await {
            Ok(Some(chunk)) => {
                self.received = self.received.saturating_add(chunk.len());
                let bytes = self.redact.push(&chunk);
                if self.received > self.limit {
                    // The chunk crossing the cap still counts towards the opening.
                    self.keep(&bytes);
                    return Err(self.stop(Cut::TooLarge));
                }
                bytes
            }
            Ok(None) => {
                self.ended = true;
                self.redact.finish()
            }
            Err(e) => return Err(self.stop(Cut::Broken(describe(&e)))),
        };
        self.keep(&bytes);
        Ok(Some(bytes))
    }

    /// Stop reading: the bytes held back for redaction are decided and kept.
    fn stop(&mut self, cut: Cut) -> Cut {
        self.ended = true;
        self.clipped = true;
        let held = self.redact.finish();
        self.keep(&held);
        cut
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = OPENING_MAX.saturating_sub(self.opening.len());
        if bytes.len() > room {
            self.clipped = true;
        }
        self.opening
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The opening as kept: when it is not the whole reply, up to its last whole character
    /// (a cut inside one would end in U+FFFD).
    fn opening_bytes(&self) -> &[u8] {
        if self.clipped {
            &self.opening[..whole_chars_end(&self.opening)]
        } else {
            &self.opening
        }
    }

    fn opening_text(&self) -> String {
        String::from_utf8_lossy(self.opening_bytes()).into_owned()
    }

    /// An error body: its opening, read no further.
    async fn read_opening(&mut self) -> String {
        while self.opening.len() < OPENING_MAX {
            if !matches!(self.next().await, Ok(Some(_))) {
                break;
            }
        }
        if !self.ended {
            // Full, the rest unread.
            self.clipped = true;
        }
        self.opening_text()
    }

    /// The failure for a reply over the cap, keeping its opening as the body.
    fn too_large(&self, partial: Option<Reply>) -> Answer {
        // Both kept parts are named: a stream's answer read so far is kept whole beside the
        // raw opening (tester 33 F2: "the first 64 KiB are kept" beside 7.4 MB of answer).
        let answer = partial
            .as_ref()
            .map(|r| {
                r.content.as_deref().map_or(0, str::len)
                    + r.reasoning.as_deref().map_or(0, str::len)
            })
            .filter(|n| *n > 0)
            .map(|n| {
                format!(
                    ", and the {} of answer read from it as a partial answer",
                    byte_size(n)
                )
            })
            .unwrap_or_default();
        failed(
            FailureClass::Protocol,
            format!(
                "reply too large: more than {} arrived (llm.max_reply_bytes = {}); kept: its first {} as the raw response{answer}",
                byte_size(self.limit),
                self.limit,
                byte_size(self.opening_bytes().len())
            ),
            Some(self.opening_text()),
            partial,
        )
    }
}

/// Where `bytes`, a cut prefix of UTF-8 text, ends without a character cut short: its length
/// less a trailing lead byte whose continuation bytes were cut off. Bytes that are no UTF-8
/// are left to the lossy reading.
fn whole_chars_end(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A character is at most 4 bytes: its lead is among the last 4.
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: the lead is further back
        }
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if width > back { len - back } else { len };
    }
    len
}

async fn read_stream(
    incoming: &mut Incoming<'_>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Answer {
    let mut stream = EventStream::default();
    loop {
        match incoming.next().await {
            Ok(Some(chunk)) => {
                if let Err(failure) = stream.feed(&chunk) {
                    return Answer::Failed {
                        failure,
                        body: None,
                        partial: Some(stream.reply()),
                    };
                }
                let (content_bytes, reasoning_bytes, thinking) = stream.progress();
                progress(Progress::Receiving {
                    content_bytes,
                    reasoning_bytes,
                    thinking,
                });
                if stream.done {
                    break;
                }
            }
            Ok(None) => {
                // An event whose blank line never came is still read (its lines may be many).
                if let Err(failure) = stream.end() {
                    return Answer::Failed {
                        failure,
                        body: None,
                        partial: Some(stream.reply()),
                    };
                }
                break;
            }
            Err(Cut::TooLarge) => return incoming.too_large(Some(stream.reply())),
            Err(Cut::Broken(why)) => {
                let (content, reasoning, _) = stream.progress();
                return failed(
                    FailureClass::Transport,
                    format!(
                        "the stream broke off after {content} bytes of answer and {reasoning} of reasoning: {why}"
                    ),
                    None,
                    Some(stream.reply()),
                );
            }
        }
    }
    if !stream.finished() && !stream.started && incoming.received > 0 {
        // Labelled a stream, yet not one: what came is kept and quoted, as a body that is no
        // chat completion is (tester 15 F7: a plain JSON body was dropped and read as a
        // network failure, "what had arrived is kept" with nothing kept).
        let opening = incoming.opening_text();
        return failed(
            FailureClass::Protocol,
            format!(
                "the reply is labelled text/event-stream but holds no answer event ({} received): \"{}\"",
                byte_size(incoming.received),
                quote_reply(&opening, 160)
            ),
            Some(opening),
            None,
        );
    }
    if !stream.finished() {
        let (content, reasoning, _) = stream.progress();
        return failed(
            FailureClass::Transport,
            format!(
                "the stream ended without [DONE] or a finish_reason, after {content} bytes of answer and {reasoning} of reasoning"
            ),
            None,
            Some(stream.reply()),
        );
    }
    Answer::Reply {
        reply: stream.reply(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 25 F5: a redirect's target was bare and a body-less answer ended in `: `.
    #[test]
    fn a_redirect_names_its_target_quoted_and_an_empty_body_is_said() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::LOCATION,
            reqwest::header::HeaderValue::from_static("http://127.0.0.1:1/elsewhere"),
        );
        let note = redirect_note(reqwest::StatusCode::TEMPORARY_REDIRECT, &headers);
        let line = http_failure_line(reqwest::StatusCode::TEMPORARY_REDIRECT, &note, "");
        assert!(
            line.starts_with(
                "HTTP 307 Temporary Redirect (a redirect to \"http://127.0.0.1:1/elsewhere\", not followed"
            ),
            "{line}"
        );
        assert!(line.ends_with("): an empty body"), "{line}");
        assert_eq!(http_failure_line(500, "", "oops"), "HTTP 500: oops");
    }

    /// Tester F2: a reply body quoted in an error kept its line feed, so a server wrote a
    /// line of its own on the operator's stderr.
    #[test]
    fn a_quoted_reply_is_one_line_with_its_controls_shown() {
        assert_eq!(
            quote_reply("  \x1b[2J\x1b]0;pwn\x07not json\nFAKE: line\n", 200),
            "\\x1b[2J\\x1b]0;pwn\\x07not json\\nFAKE: line"
        );
        assert_eq!(quote_reply("Bad Gateway", 200), "Bad Gateway");
        let long = quote_reply(&"x\n".repeat(500), 100);
        assert!(
            !long.contains('\n') && long.chars().count() <= 100,
            "{long}"
        );
    }

    #[test]
    fn no_retry_waits_longer_than_retry_max_wait_whatever_the_count_or_base() {
        for base in [
            Duration::from_millis(1),
            Duration::from_secs(3600),
            Duration::MAX,
        ] {
            let s = ClientSettings {
                retry_base: base,
                retry_max_wait: Duration::from_secs(60),
                ..ClientSettings::default()
            };
            let mut last = Duration::ZERO;
            for retry in (0..70).chain([1_000, u32::MAX]) {
                let wait = retry_wait(&s, retry, None);
                assert!(wait <= s.retry_max_wait, "{base:?} retry {retry}: {wait:?}");
                assert!(wait >= last, "the backoff never shrinks");
                last = wait;
            }
        }
        let s = ClientSettings::default();
        assert_eq!(retry_wait(&s, 1, None), Duration::from_secs(1));
        assert_eq!(retry_wait(&s, 3, None), Duration::from_secs(4));
        assert_eq!(
            retry_wait(&s, 1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            retry_wait(&s, 1, Some(Duration::MAX)),
            s.retry_max_wait,
            "never past the cap, even when asked"
        );
    }

    #[test]
    fn a_retry_after_of_any_text_reads_without_panicking() {
        let read = |v: &str| {
            let mut h = reqwest::header::HeaderMap::new();
            h.insert(
                reqwest::header::RETRY_AFTER,
                reqwest::header::HeaderValue::from_str(v).unwrap(),
            );
            retry_after(&h).map(|r| r.wait)
        };
        assert_eq!(read("2"), Some(Duration::from_secs(2)));
        assert_eq!(read(" 0.5 "), Some(Duration::from_millis(500)));
        for huge in ["1e300", "inf", "18446744073709551616", "1e20"] {
            assert_eq!(read(huge), Some(Duration::MAX), "{huge}");
        }
        for none in ["NaN", "-1", "Wed, 21 Oct 2026 07:28", "tomorrow", ""] {
            assert_eq!(read(none), None, "{none}");
        }
    }

    #[test]
    fn a_retry_after_note_names_the_wait_or_the_value_too_large_for_one() {
        let note = |wait: Duration, written: &str| {
            let r = RetryAfter {
                wait,
                written: written.to_string(),
            };
            retry_after_note(Some(&r), Duration::from_secs(60))
        };
        assert_eq!(note(Duration::from_secs(2), "2"), " (retry-after 2 s)");
        assert_eq!(
            note(Duration::from_secs(3600), "3600"),
            " (retry-after 3600 s, too long to wait for: over retry_max_wait 60 s, so not retried)"
        );
        assert_eq!(
            note(Duration::MAX, "99999999999999999999999"),
            " (retry-after 99999999999999999999999 s, too long to wait for: over retry_max_wait \
             60 s, so not retried)"
        );
        let long = "9".repeat(500);
        let said = note(Duration::MAX, &long);
        assert!(said.len() < 200 && said.contains("99…"), "{said}");
        assert_eq!(retry_after_note(None, Duration::from_secs(60)), "");
    }

    #[test]
    fn a_retry_after_date_is_the_wait_until_it() {
        let now = crate::core::time::parse_timestamp("2099-10-21T07:27:30Z").unwrap();
        let at = |v: &str| retry_after_from(v, now);
        assert_eq!(
            at("Wed, 21 Oct 2099 07:28:00 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            at("Wed Oct 21 07:28:00 2099"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            at("Wed, 21 Oct 2099 07:27:00 GMT"),
            Some(Duration::ZERO),
            "a date past is no wait"
        );
        assert_eq!(
            retry_after_from("Wed, 21 Oct 2099 07:28:00 GMT", i64::MIN),
            Some(Duration::from_secs(i64::MAX as u64)),
            "far ahead, never an overflow"
        );
        assert_eq!(
            retry_after_from("Wed, 21 Oct 2099 07:28:00 GMT", i64::MAX),
            Some(Duration::ZERO)
        );
        assert_eq!(at("99999999999999999999999"), Some(Duration::MAX));
    }

    #[test]
    fn a_cut_opening_ends_at_a_whole_character() {
        let text = "ab日本€é😀".as_bytes();
        let ends: Vec<usize> = (0..=text.len())
            .map(|n| whole_chars_end(&text[..n]))
            .collect();
        // a b 日(3) 本(3) €(3) é(2) 😀(4)
        assert_eq!(
            ends,
            [0, 1, 2, 2, 2, 5, 5, 5, 8, 8, 8, 11, 11, 13, 13, 13, 13, 17]
        );
        for n in 0..=text.len() {
            assert!(std::str::from_utf8(&text[..ends[n]]).is_ok(), "{n}");
        }
        // Not UTF-8: left as it is for the lossy reading.
        assert_eq!(whole_chars_end(&[0x80, 0x80, 0x80, 0x80, 0x80]), 5);
        assert_eq!(whole_chars_end(b"x\xff"), 2);
    }

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(byte_size(8 * 1024 * 1024), "8 MiB");
        assert_eq!(byte_size(64 * 1024), "64 KiB");
        assert_eq!(byte_size(200_000), "200000 bytes");
    }
}
