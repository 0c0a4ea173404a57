//! One chat completion against an OpenAI-compatible endpoint: connect and total timeouts,
//! retries with backoff on 429 (honouring retry-after), 5xx and refused connections,
//! streaming with progress, and cancellation. The key goes into one sensitive header and
//! nowhere else: no error, progress report or record carries it.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

use crate::core::assemble::ChatMessage;
use crate::core::failure::{Failure, FailureClass, Reply};
use crate::core::text::clip;
use crate::llm::provider::Endpoint;
use crate::llm::wire::{EventStream, reply_from_body};

/// Most of an error body kept for the record.
const ERROR_BODY_MAX: usize = 64 * 1024;

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

/// The request body's parts.
#[derive(Debug, Clone)]
pub struct ChatCall {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: usize,
    pub response_format: Option<&'static str>,
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

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exchange {
    pub answer: Answer,
    /// The last HTTP status seen.
    pub status: Option<u16>,
    pub attempts: u32,
}

/// What went wrong and its causes. reqwest's own message carries the URL, which this
/// leaves out: the caller names the endpoint, and a base URL with credentials in it must
/// not leak.
fn describe(e: &reqwest::Error) -> String {
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

/// `retry-after` in seconds (HTTP dates are not honoured: the backoff applies).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

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
    let s = &endpoint.settings;
    let client = reqwest::Client::builder()
        .connect_timeout(s.connect_timeout)
        .timeout(s.timeout)
        .build()
        .map_err(|e| anyhow::anyhow!("building the HTTP client: {}", describe(&e)))?;
    let mut body = serde_json::json!({
        "model": endpoint.upstream_model,
        "messages": call.messages,
        "max_tokens": call.max_tokens,
        "stream": endpoint.stream,
    });
    if let Some(format) = call.response_format {
        body["response_format"] = serde_json::json!({ "type": format });
    }
    let mut attempts = 0;
    let mut status = None;
    let answer = loop {
        attempts += 1;
        progress(Progress::Sending { attempt: attempts });
        let attempt = tokio::select! {
            a = attempt(&client, endpoint, key.as_deref(), &body, progress) => a,
            () = cancel.cancelled() => break Answer::Cancelled,
        };
        match attempt {
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
                if attempts > s.retries {
                    break last;
                }
                // The backoff doubles per retry: base, 2×base, 4×base, …
                let backoff = s
                    .retry_base
                    .saturating_mul(2u32.saturating_pow(attempts - 1));
                let wait = retry_after.unwrap_or(backoff);
                progress(Progress::Waiting {
                    attempt: attempts,
                    wait_ms: wait.as_millis() as u64,
                    why,
                });
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = cancel.cancelled() => break Answer::Cancelled,
                }
            }
        }
    };
    Ok(Exchange {
        answer,
        status,
        attempts,
    })
}

async fn attempt(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    key: Option<&str>,
    body: &serde_json::Value,
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
    if !status.is_success() {
        let wait_for = retry_after(response.headers());
        let text = read_capped(response).await;
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| crate::core::failure::error_envelope(&v).map(|(_, m)| m))
            .unwrap_or_else(|| clip(text.trim(), 160));
        let after = wait_for.map_or(String::new(), |w| {
            format!(" (retry-after {} s)", w.as_secs_f64())
        });
        let detail = format!("HTTP {status}{after}: {message}");
        let answer = failed(FailureClass::HttpError, detail.clone(), Some(text), None);
        let retryable = status.as_u16() == 429 || status.is_server_error();
        if !retryable {
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
    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if is_stream {
        return Attempt::Done(read_stream(response, progress).await, code);
    }
    let mut response = response;
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(c)) => bytes.extend_from_slice(&c),
            Ok(None) => break,
            Err(e) => {
                return Attempt::Done(
                    failed(
                        FailureClass::Transport,
                        format!("reading the reply from {}: {}", endpoint.url, describe(&e)),
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

async fn read_capped(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while let Ok(Some(c)) = response.chunk().await {
        bytes.extend_from_slice(&c);
        if bytes.len() >= ERROR_BODY_MAX {
            bytes.truncate(ERROR_BODY_MAX);
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

async fn read_stream(
    mut response: reqwest::Response,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Answer {
    let mut stream = EventStream::default();
    loop {
        match response.chunk().await {
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
            Ok(None) => break,
            Err(e) => {
                let (content, reasoning, _) = stream.progress();
                return failed(
                    FailureClass::Transport,
                    format!(
                        "the stream broke off after {content} bytes of answer and {reasoning} of reasoning: {}",
                        describe(&e)
                    ),
                    None,
                    Some(stream.reply()),
                );
            }
        }
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
