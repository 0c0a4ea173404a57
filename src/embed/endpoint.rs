//! An OpenAI-compatible `/v1/embeddings` endpoint (Ollama, vLLM, llama.cpp, OpenAI) as an
//! [`Embedder`]: the provider's base URL, key variable and timeouts from the workspace config,
//! as chat calls use them. The key goes into one sensitive header; every text received is
//! redacted of it. A request carries at most [`BATCH`](super::BATCH) texts of at most
//! `MAX_SENTENCE_BYTES` each; a reply over `max_reply_bytes` is refused. A transient failure
//! (no connection, a timeout, 429, a 5xx, a reply cut off) is tried again under the chat
//! client's policy ([`Retries`]: `llm.retries`, the backoff, `retry_max_wait`); a call that
//! still fails is one error naming the endpoint and the attempts, and nothing of it is kept.

use std::time::Duration;

use serde_json::Value;

use super::Embedder;
use crate::core::rank::{MAX_SENTENCE_BYTES, vector_problem};
use crate::core::text::clip;
use crate::llm::client::{
    Retries, http_client, http_failure_line, redirect_note, retry_after, retry_after_note,
    transient_status,
};
use crate::llm::provider::Endpoint;
use crate::llm::redact::Redactor;
use crate::llm::wire::quote_reply;

/// One failed request: what went wrong, and whether another try may go better (with the
/// wait the endpoint asked for, if it said).
struct Failed {
    error: anyhow::Error,
    transient: bool,
    retry_after: Option<Duration>,
}

impl Failed {
    fn last(error: anyhow::Error) -> Failed {
        Failed {
            error,
            transient: false,
            retry_after: None,
        }
    }

    fn transient(error: anyhow::Error, retry_after: Option<Duration>) -> Failed {
        Failed {
            error,
            transient: true,
            retry_after,
        }
    }
}

/// The longest vector accepted: larger models give 4,096 dimensions; a reply with more is
/// not a sentence embedding.
pub const MAX_DIMS: usize = 16_384;

pub struct EndpointEmbedder {
    endpoint: Endpoint,
    /// `{base_url}/embeddings`.
    url: String,
    id: String,
}

/// The longest wait for one embeddings request, its retries and their waits included (the
/// provider's `llm.timeout` when shorter).
pub const EMBED_TIMEOUT_MAX: Duration = Duration::from_secs(20);

impl EndpointEmbedder {
    /// The embeddings URL of a resolved chat endpoint (`…/chat/completions` → `…/embeddings`).
    pub fn new(mut endpoint: Endpoint) -> anyhow::Result<EndpointEmbedder> {
        // A batch of short sentences is not a chat answer: a hung endpoint must not hold a
        // question (or the console's Preview) for `llm.timeout` per attempt.
        endpoint.settings.timeout = endpoint.settings.timeout.min(EMBED_TIMEOUT_MAX);
        let base = endpoint
            .url
            .strip_suffix("/chat/completions")
            .unwrap_or(&endpoint.url);
        let url = format!("{base}/embeddings");
        // The key's presence is checked now, so a missing variable is one clear error
        // before anything is embedded.
        endpoint.key()?;
        let id = format!("endpoint {url} {}", endpoint.upstream_model);
        Ok(EndpointEmbedder { endpoint, url, id })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// One batch, retried as every call to an endpoint is; the error after the last attempt
    /// says how many were made.
    async fn call_retrying(
        &self,
        client: &reqwest::Client,
        texts: &[String],
        redactor: &Redactor,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut retries = Retries::new(&self.endpoint.settings);
        // Every attempt and every wait between them within one bound (the timeout, at most
        // EMBED_TIMEOUT_MAX): a hung endpoint holds a question that long, not that long
        // once per attempt; a quick failure (a 500, a refused connection) is still retried.
        let bound = self.endpoint.settings.timeout;
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let attempt = retries.attempt();
            let failed =
                match tokio::time::timeout_at(deadline, self.call(client, texts, redactor)).await {
                    Ok(Ok(vectors)) => return Ok(vectors),
                    Ok(Err(f)) => f,
                    Err(_) => Failed::last(anyhow::anyhow!(
                        "embeddings from {} ({}): no answer within {} in all",
                        redactor.text(&self.url),
                        self.endpoint.provider,
                        crate::core::duration::describe(bound)
                    )),
                };
            let policy = failed
                .transient
                .then(|| retries.wait_after(failed.retry_after))
                .flatten();
            let wait = policy.filter(|w| tokio::time::Instant::now() + *w < deadline);
            let Some(wait) = wait else {
                // The policy would have tried again: the bound is what ended the retries.
                let bound_ended = policy.is_some().then(|| {
                    format!(
                        "the {} bound left no time for another",
                        crate::core::duration::describe(bound)
                    )
                });
                return Err(match (attempt, bound_ended) {
                    (1, None) => failed.error,
                    (1, Some(why)) => failed.error.context(format!("after 1 attempt; {why}")),
                    (n, None) => failed.error.context(format!("after {n} attempts")),
                    (n, Some(why)) => failed.error.context(format!("after {n} attempts; {why}")),
                });
            };
            tracing::warn!(
                attempt,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "retrying: {}",
                crate::exit::Said(&failed.error)
            );
            tokio::time::sleep(wait).await;
        }
    }

    async fn call(
        &self,
        client: &reqwest::Client,
        texts: &[String],
        redactor: &Redactor,
    ) -> Result<Vec<Vec<f32>>, Failed> {
        let s = &self.endpoint.settings;
        let where_ = format!("{} ({})", redactor.text(&self.url), self.endpoint.provider);
        let input: Vec<&str> = texts.iter().map(|t| bounded(t)).collect();
        let body = serde_json::json!({
            "model": self.endpoint.upstream_model,
            "input": input,
        });
        let mut request = client.post(&self.url).json(&body);
        if let Some(k) = self.endpoint.key().map_err(Failed::last)? {
            let mut v =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {k}")).map_err(|_| {
                    Failed::last(anyhow::anyhow!(
                        "{where_}: the key is not a valid header value"
                    ))
                })?;
            v.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, v);
        }
        let fail =
            |what: String| anyhow::anyhow!("embeddings from {where_}: {}", redactor.text(&what));
        let mut response = request.send().await.map_err(|e| {
            let error = fail(describe(&e, s.timeout));
            if e.is_connect() || e.is_timeout() {
                Failed::transient(error, None)
            } else {
                Failed::last(error)
            }
        })?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let redirect = redirect_note(status, response.headers());
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > s.max_reply_bytes {
                        return Err(Failed::last(fail(format!(
                            "the reply is larger than max_reply_bytes ({})",
                            s.max_reply_bytes
                        ))));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Failed::transient(fail(describe(&e, s.timeout)), None));
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            let notes = format!(
                "{}{redirect}",
                retry_after_note(retry_after.as_ref(), s.retry_max_wait)
            );
            let error = fail(http_failure_line(status, &notes, &quote_reply(&text, 300)));
            return Err(if transient_status(status) {
                Failed::transient(error, retry_after.map(|r| r.wait))
            } else {
                Failed::last(error)
            });
        }
        parse_reply(&text, texts.len()).map_err(|why| {
            Failed::last(fail(format!(
                "the reply is not an embeddings answer ({why}): {}",
                crate::llm::wire::quoted_body(&text, 200)
            )))
        })
    }
}

/// A text cut to [`MAX_SENTENCE_BYTES`] at a character boundary.
fn bounded(text: &str) -> &str {
    if text.len() <= MAX_SENTENCE_BYTES {
        return text;
    }
    let mut end = MAX_SENTENCE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!(
            "no answer within {}",
            crate::core::duration::describe(timeout)
        )
    } else {
        // The chat client's words, with every cause (a bad header, a body cut short).
        crate::llm::client::describe(e)
    }
}

/// `{"data": [{"embedding": [...], "index": i}, …]}`: one finite vector per text, all of one
/// length, in `index` order.
fn parse_reply(text: &str, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no data array")?;
    if data.len() != expected {
        return Err(format!("{} vectors for {expected} texts", data.len()));
    }
    let mut out: Vec<(usize, Vec<f32>)> = Vec::with_capacity(data.len());
    for (k, item) in data.iter().enumerate() {
        // An index given must be a whole number in 0..n; only a missing one means "in order".
        let index = match item.get("index") {
            None | Some(Value::Null) => k,
            Some(i) => i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| i < expected)
                .ok_or_else(|| {
                    format!(
                        "item {k} has index {}, not a whole number in 0..{expected}",
                        clip(&i.to_string(), 40)
                    )
                })?,
        };
        let numbers = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("item {k} has no embedding array"))?;
        if numbers.is_empty() || numbers.len() > MAX_DIMS {
            return Err(format!("item {k} has {} dimensions", numbers.len()));
        }
        let vector = numbers
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| format!("item {k} holds a value that is not a number"))?;
        if let Some(problem) = vector_problem(&vector) {
            return Err(format!("item {k}'s vector {problem}"));
        }
        out.push((index, vector));
    }
    out.sort_by_key(|(i, _)| *i);
    if out.iter().enumerate().any(|(k, (i, _))| *i != k) {
        return Err("the indices are not 0..n".into());
    }
    let dims = out.first().map_or(0, |(_, v)| v.len());
    if out.iter().any(|(_, v)| v.len() != dims) {
        return Err("vectors of different lengths".into());
    }
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

impl Embedder for EndpointEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    /// Text holding another configured provider's key is not sent to this one, as a chat
    /// request holding one is not ([`Endpoint::foreign_key_in`], the same check); the
    /// embedder's own provider's key goes, as written.
    fn may_send(&self, texts: &[String]) -> anyhow::Result<()> {
        match self
            .endpoint
            .foreign_key_in(texts.iter().map(String::as_str))
        {
            None => Ok(()),
            Some(var) => Err(anyhow::anyhow!(
                "embeddings from {}: a text to embed holds the key ${var} holds, another \
                 provider's: nothing is sent to provider {} (take it out of the question or \
                 the catalog)",
                Redactor::new(self.endpoint.key().ok().flatten().as_deref()).text(&self.url),
                crate::core::terminal_text::quoted(&self.endpoint.provider)
            )),
        }
    }

    /// Blocks on its own thread and runtime, so it may be called from anywhere (inside a
    /// runtime or not).
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.may_send(texts)?;
        let key = self.endpoint.key()?;
        let redactor = Redactor::new(key.as_deref());
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    let client = http_client(&self.endpoint.settings)?;
                    let mut out = Vec::with_capacity(texts.len());
                    for batch in texts.chunks(super::BATCH) {
                        out.extend(rt.block_on(self.call_retrying(&client, batch, &redactor))?);
                    }
                    Ok(out)
                })
                .join()
                .map_err(|_| anyhow::anyhow!("embeddings from {}: the call panicked", self.url))?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_in_index_order_and_garbage_is_named() {
        let v = parse_reply(
            r#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}"#,
            2,
        )
        .unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(parse_reply("<html>", 1).unwrap_err().contains("not JSON"));
        assert!(
            parse_reply(r#"{"data":[{"embedding":[1]}]}"#, 2)
                .unwrap_err()
                .contains("1 vectors for 2 texts")
        );
        assert!(
            parse_reply(r#"{"data":[{"embedding":[1,2]},{"embedding":[1]}]}"#, 2)
                .unwrap_err()
                .contains("different lengths")
        );
        assert!(
            parse_reply(r#"{"data":[{"embedding":["x"]}]}"#, 1)
                .unwrap_err()
                .contains("not a number")
        );
        // A JSON number past f32, zeros, an index that is not a whole number in 0..n.
        for (reply, says) in [
            (
                r#"{"data":[{"embedding":[1e39, 1]}]}"#,
                "not a finite 32-bit number",
            ),
            (r#"{"data":[{"embedding":[0, 0]}]}"#, "has no length"),
            (
                r#"{"data":[{"embedding":[1e-50, 1e-50]}]}"#,
                "has no length",
            ),
            (
                r#"{"data":[{"index":0.0,"embedding":[1, 0]}]}"#,
                "not a whole number in 0..1",
            ),
            (
                r#"{"data":[{"index":5,"embedding":[1, 0]}]}"#,
                "not a whole number in 0..1",
            ),
            (
                r#"{"data":[{"index":-1,"embedding":[1, 0]}]}"#,
                "not a whole number in 0..1",
            ),
        ] {
            let err = parse_reply(reply, 1).unwrap_err();
            assert!(err.contains(says), "{reply}: {err}");
        }
    }

    #[test]
    fn an_embeddings_call_waits_at_most_the_cap_whatever_llm_timeout_says() {
        let config = |timeout: &str| {
            crate::core::config::Config::parse(
                &format!(
                    "[llm]\ntimeout = \"{timeout}\"\n\n[providers.t]\nprefix = \"t/\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
                ),
                "test",
            )
            .unwrap()
        };
        let timeout_of = |timeout: &str| {
            let providers =
                crate::llm::provider::Providers::from_config(&config(timeout), "test").unwrap();
            EndpointEmbedder::new(providers.resolve("t/m").unwrap())
                .unwrap()
                .endpoint
                .settings
                .timeout
        };
        assert_eq!(timeout_of("300s"), EMBED_TIMEOUT_MAX);
        assert_eq!(timeout_of("2s"), Duration::from_secs(2));
    }
}
