//! An OpenAI-compatible `/chat/completions` server on 127.0.0.1 for the tests: a real
//! socket, real HTTP/1.1, real server-sent events. The request's `model` names the
//! scenario to play, so one server covers every failure class.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every scenario and the class (or outcome) a replay on it must end with.
pub const SCENARIOS: [(&str, &str); 18] = [
    ("ok", "ok"),
    ("ok-json", "ok"),
    ("content-filter", "safety_filtered"),
    ("refusal", "refused"),
    ("prose-refusal", "refused"),
    ("bash-fence", "no_plan"),
    ("length", "length_truncated"),
    ("think-unclosed", "reasoning_only"),
    ("empty", "likely_timeout"),
    ("prose-after", "ok"),
    ("fenced", "ok"),
    ("hallucinated", "guarded"),
    ("deadlock", "constrained_deadlock"),
    ("rate-limited", "ok"),
    ("server-error", "http_error"),
    ("not-json", "protocol"),
    ("stream-cut", "transport"),
    ("hang", "transport"),
];

/// About how many bytes the `huge-*` scenarios send.
pub const HUGE: usize = 400_000;
/// Where `huge-cjk` cuts its body: the first write, then a pause, the write crossing a cap
/// between [`CJK_FIRST`] and [`CJK_CROSSING`] and the 64 KiB ([`CJK_OPENING`]) a reply
/// over the cap keeps, a pause, the rest.
pub const CJK_FIRST: usize = 60_000;
pub const CJK_OPENING: usize = 64 * 1024;
pub const CJK_CROSSING: usize = 68_000;

#[derive(Debug, Clone)]
pub struct Recorded {
    pub authorization: Option<String>,
    pub body: Value,
    /// The request line's path (`/v1/chat/completions`).
    pub path: String,
}

pub struct LlmServer {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    /// The most `slow-*` requests ever being answered at once.
    pub max_in_flight: Arc<AtomicUsize>,
    /// The length of `embed-switch`'s vectors ([`EMBED_DIMS`] until a test changes it): a
    /// model whose vectors change length behind its name.
    pub embed_dims: Arc<AtomicUsize>,
}

/// `slow-*` requests being answered now, and the most ever.
static SLOW_NOW: AtomicUsize = AtomicUsize::new(0);

impl LlmServer {
    pub fn start() -> LlmServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let log = requests.clone();
        let max_in_flight: Arc<AtomicUsize> = Arc::default();
        let max = max_in_flight.clone();
        let embed_dims = Arc::new(AtomicUsize::new(EMBED_DIMS));
        let dims = embed_dims.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, seen, max, dims) = (log.clone(), seen.clone(), max.clone(), dims.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &log, &seen, &max, &dims);
                });
            }
        });
        LlmServer {
            port,
            requests,
            max_in_flight,
            embed_dims,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// A workspace `config.toml` pointing provider `test/` here, with the key in `key_env`.
    pub fn config(&self, key_env: &str) -> String {
        format!(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"2s\"\nretries = 2\nretry_base = \"50ms\"\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\nkey_env = \"{key_env}\"\n",
            self.base_url()
        )
    }
}

impl LlmServer {
    /// Every text the server was asked to embed, request by request.
    pub fn embedded_inputs(&self) -> Vec<Vec<String>> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.body.get("input").is_some())
            .map(|r| {
                r.body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_string())
                    .collect()
            })
            .collect()
    }

    /// A `config.toml` sending every model of the sample history here, with no key.
    pub fn config_routing_everything(&self) -> String {
        let mut out = String::from(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"5s\"\nretries = 1\nretry_base = \"50ms\"\n",
        );
        for (name, prefix) in [
            ("openrouter", "openrouter/"),
            ("ollama", "ollama/"),
            ("local", "local/"),
        ] {
            out.push_str(&format!(
                "\n[providers.{name}]\nprefix = \"{prefix}\"\nbase_url = \"{}\"\n",
                self.base_url()
            ));
        }
        out
    }
}

fn read_request(stream: &mut TcpStream) -> std::io::Result<(Option<String>, Value, String)> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    let mut authorization = None;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if path.is_empty()
            && let Some(rest) = line.strip_prefix("POST ")
        {
            path = rest.split(' ').next().unwrap_or("").to_string();
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            match k.to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((
        authorization,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        path,
    ))
}

fn plan(tools: &[&str]) -> String {
    let steps: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"order": i + 1, "tool": t, "args": {"input": "launch note"}, "rationale": "covers it"}))
        .collect();
    json!({ "steps": steps }).to_string()
}

fn completion(content: Value, finish: Value, extra: Value) -> String {
    let mut message = json!({"role": "assistant", "content": content});
    if let (Some(m), Some(e)) = (message.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    json!({"id": "cmpl-test", "object": "chat.completion",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
    .to_string()
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    extra: &str,
    body: &str,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// `307` to the same path on another server (`port` on 127.0.0.1): a provider, or anything
/// answering on its base URL, bouncing the request elsewhere.
fn redirect(stream: &mut TcpStream, port: &str, path: &str) -> std::io::Result<()> {
    let location = format!("Location: http://127.0.0.1:{port}/v1/{path}\r\n");
    respond(
        stream,
        "307 Temporary Redirect",
        "text/plain",
        &location,
        "moved",
    )
}

fn chunk(stream: &mut TcpStream, data: &str) -> std::io::Result<()> {
    write!(stream, "{:x}\r\n{data}\r\n", data.len())?;
    stream.flush()
}

fn delta(field: &str, text: &str, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {field: text}, "finish_reason": finish}]})
    )
}

/// Stream `events` with chunked encoding; `cut` stops in the middle of a chunk.
fn stream_events(stream: &mut TcpStream, events: &[String], cut: bool) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    for e in events {
        chunk(stream, e)?;
        std::thread::sleep(Duration::from_millis(5));
    }
    if cut {
        // Promise 4 KB, send a few bytes, hang up.
        write!(stream, "1000\r\ndata: {{\"choi")?;
        stream.flush()?;
        return stream.shutdown(std::net::Shutdown::Both);
    }
    chunk(stream, "data: [DONE]\n\n")?;
    write!(stream, "0\r\n\r\n")?;
    stream.flush()
}

/// Dimensions of the `/embeddings` route's vectors.
pub const EMBED_DIMS: usize = 64;

/// A hashed bag of words: each lower-cased word (letters and digits) adds 1 at its FNV-1a
/// hash modulo [`EMBED_DIMS`]. Real, deterministic vectors: texts sharing words are near.
pub fn bag_of_words(text: &str) -> Vec<f32> {
    bag_of_words_in(text, EMBED_DIMS)
}

/// [`bag_of_words`] in `dims` dimensions.
pub fn bag_of_words_in(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.to_lowercase().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        v[(h % dims as u64) as usize] += 1.0;
    }
    v
}

/// `POST /v1/embeddings`: the model names the scenario — `embed-ok` answers with
/// [`bag_of_words`] vectors, `embed-500` with a server error, `embed-garbage` with a page
/// that is not JSON, `embed-short` with one vector too few, `embed-hang` not at all;
/// `embed-500-once` with a server error to its first request and as `embed-ok` after.
/// Vectors nothing can rank with: `embed-batchdims` one length per request (its n-th
/// request [`EMBED_DIMS`] + n), `embed-huge` a first value past f32 (1e39), `embed-zero`
/// zeros, `embed-index-float` the reply reversed with `"index": 1.0`-style indices;
/// `embed-switch` answers in [`LlmServer::embed_dims`] dimensions; `embed-429-long` asks
/// for an hour's wait, `embed-cut` cuts its reply short of its Content-Length; `embed-forged` (200) and
/// `embed-forged-500` answer a body with a line break that reads as a line of ctxconsole's.
fn serve_embeddings(
    stream: &mut TcpStream,
    body: &Value,
    seen: &Mutex<HashMap<String, usize>>,
    switch_dims: &AtomicUsize,
) -> std::io::Result<()> {
    let mut model = body["model"].as_str().unwrap_or("");
    if let Some(port) = model.strip_prefix("embed-redirect-to-") {
        return redirect(stream, port, "embeddings");
    }
    let nth = {
        let mut s = seen.lock().unwrap();
        let c = s.entry(format!("{model}#requests")).or_default();
        *c += 1;
        *c
    };
    if model == "embed-500-once" {
        let n = {
            let mut s = seen.lock().unwrap();
            let c = s.entry(model.to_string()).or_default();
            *c += 1;
            *c
        };
        model = if n == 1 { "embed-500" } else { "embed-ok" };
    }
    let inputs: Vec<&str> = match &body["input"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    // A catalog (many texts) embedded at once; a question (one text) held 10 s, then
    // nothing: a call that is surely in flight for that long.
    if model == "embed-hang-single" {
        if inputs.len() == 1 {
            std::thread::sleep(Duration::from_secs(10));
            return Ok(());
        }
        model = "embed-ok";
    }
    let json_kind = "application/json";
    let odd = |vector: &dyn Fn(&str) -> Value, reversed: bool| {
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let index = if reversed { json!(i as f64) } else { json!(i) };
                json!({"object": "embedding", "index": index, "embedding": vector(t)})
            })
            .collect();
        if reversed {
            data.reverse();
        }
        json!({"object": "list", "model": model, "data": data}).to_string()
    };
    match model {
        "embed-batchdims" => {
            let reply = odd(&|t| json!(bag_of_words_in(t, EMBED_DIMS + nth)), false);
            return respond(stream, "200 OK", json_kind, "", &reply);
        }
        "embed-switch" => {
            let dims = switch_dims.load(Ordering::SeqCst);
            let reply = odd(&|t| json!(bag_of_words_in(t, dims)), false);
            return respond(stream, "200 OK", json_kind, "", &reply);
        }
        "embed-huge" => {
            // 1e39 is a finite JSON number and no f32.
            let reply = odd(
                &|t| {
                    let mut v: Vec<Value> = bag_of_words(t).into_iter().map(|x| json!(x)).collect();
                    v[0] = json!(1e39);
                    Value::Array(v)
                },
                false,
            );
            return respond(stream, "200 OK", json_kind, "", &reply);
        }
        "embed-zero" => {
            let reply = odd(&|_| json!(vec![0.0f32; EMBED_DIMS]), false);
            return respond(stream, "200 OK", json_kind, "", &reply);
        }
        "embed-index-float" => {
            let reply = odd(&|t| json!(bag_of_words(t)), true);
            return respond(stream, "200 OK", json_kind, "", &reply);
        }
        _ => {}
    }
    match model {
        "embed-ok" | "embed-short" => {
            let take = if model == "embed-short" {
                inputs.len().saturating_sub(1)
            } else {
                inputs.len()
            };
            let data: Vec<Value> = inputs
                .iter()
                .take(take)
                .enumerate()
                .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": bag_of_words(t)}))
                .collect();
            let reply = json!({"object": "list", "model": model, "data": data});
            respond(stream, "200 OK", json_kind, "", &reply.to_string())
        }
        "embed-429-long" => respond(
            stream,
            "429 Too Many Requests",
            json_kind,
            "Retry-After: 3600\r\n",
            r#"{"error":{"message":"slow down"}}"#,
        ),
        "embed-cut" => {
            // A Content-Length the body never reaches: the reply is cut off.
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {json_kind}\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n{{\"data\": ["
            )?;
            stream.flush()
        }
        "embed-500" => respond(
            stream,
            "500 Internal Server Error",
            json_kind,
            "",
            r#"{"error":{"message":"embedding model crashed"}}"#,
        ),
        "embed-garbage" => respond(
            stream,
            "200 OK",
            "text/html",
            "",
            "<html><body>Bad Gateway</body></html>",
        ),
        // A reply body that would forge a line of ctxconsole's on stderr (tester F2).
        "embed-forged" => respond(
            stream,
            "200 OK",
            "text/plain",
            "",
            "\x1b[2J\x1b]0;pwn\x07not json\nctxconsole: FAKE line",
        ),
        "embed-forged-500" => respond(
            stream,
            "500 Internal Server Error",
            "text/plain",
            "",
            "boom\nctxconsole: FAKE 500 line",
        ),
        "embed-hang" => {
            std::thread::sleep(Duration::from_secs(10));
            Ok(())
        }
        _ => respond(
            stream,
            "404 Not Found",
            json_kind,
            "",
            r#"{"error":{"message":"no such embedding model"}}"#,
        ),
    }
}

fn serve(
    mut stream: TcpStream,
    log: &Mutex<Vec<Recorded>>,
    seen: &Mutex<HashMap<String, usize>>,
    max_in_flight: &AtomicUsize,
    embed_dims: &AtomicUsize,
) -> std::io::Result<()> {
    let (authorization, body, path) = read_request(&mut stream)?;
    let echo = authorization.clone().unwrap_or_default();
    let model = body["model"].as_str().unwrap_or("").to_string();
    if path.ends_with("/embeddings") {
        if let Ok(mut l) = log.lock() {
            l.push(Recorded {
                authorization,
                body: body.clone(),
                path: path.clone(),
            });
        }
        return serve_embeddings(&mut stream, &body, seen, embed_dims);
    }
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let filter_pass = system.contains("Pick the ids");
    if let Ok(mut l) = log.lock() {
        l.push(Recorded {
            authorization,
            body: body.clone(),
            path: path.clone(),
        });
    }
    let json_kind = "application/json";
    if filter_pass && model == "filter-garbage" {
        return respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(
                json!("I think you want the blog tools."),
                json!("stop"),
                json!({}),
            ),
        );
    }
    if filter_pass {
        let ids = json!({"ids": ["builtin.remember-and-blog", "image.generate", "memory.store"]});
        return respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(json!(ids.to_string()), json!("stop"), json!({})),
        );
    }
    let n = {
        let mut s = seen.lock().unwrap();
        let c = s.entry(model.clone()).or_default();
        *c += 1;
        *c
    };
    let good = plan(&["builtin.remember-and-blog", "image.generate"]);
    let ok = |s: &mut TcpStream, content: &str, finish: &str| {
        respond(
            s,
            "200 OK",
            json_kind,
            "",
            &completion(json!(content), json!(finish), json!({})),
        )
    };
    if let Some(port) = model.strip_prefix("redirect-to-") {
        return redirect(&mut stream, port, "chat/completions");
    }
    match model.as_str() {
        "ok" => stream_events(
            &mut stream,
            &[
                delta(
                    "reasoning_content",
                    "The ask is remember, blog, illustrate.",
                    None,
                ),
                delta("content", &good[..20], None),
                delta("content", &good[20..], Some("stop")),
            ],
            false,
        ),
        "ok-json" => ok(&mut stream, &good, "stop"),
        // A whole chat completion under a stream's content type (a server that ignores
        // `stream: true` and mislabels its answer).
        "json-as-stream" => respond(
            &mut stream,
            "200 OK",
            "text/event-stream",
            "",
            &completion(json!(good), json!("stop"), json!({})),
        ),
        "content-filter" => ok(&mut stream, "", "content_filter"),
        "refusal" => respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(
                Value::Null,
                json!("stop"),
                json!({"refusal": "I can't help with that request."}),
            ),
        ),
        // Prose that declines, as weak models word it (no refusal field).
        "prose-refusal" => ok(
            &mut stream,
            "I'm unable to help with that: it asks me to act on credentials I should not use.",
            "stop",
        ),
        // Prose answering with a shell command in a bash fence, JSON quoted inside it.
        "bash-fence" => ok(
            &mut stream,
            "You can do this from a terminal:\n```bash\ncurl -X POST localhost:8080/notes -d '{\"text\": \"launch note\"}'\n```\nThen write the blog post by hand.",
            "stop",
        ),
        // The plan as native tool calls, one step each, with usage and a request id.
        "tool-calls" => {
            let body = json!({"id": "chatcmpl-tools-1", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {
                            "name": "builtin.remember-and-blog",
                            "arguments": "{\"input\": \"launch note\"}"}},
                        {"id": "call_b", "type": "function", "function": {
                            "name": "image.generate", "arguments": "{\"prompt\": \"a rocket\"}"}}]}}],
                "usage": {"prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853,
                    "prompt_tokens_details": {"cached_tokens": 512},
                    "completion_tokens_details": {"reasoning_tokens": 7}}});
            respond(&mut stream, "200 OK", json_kind, "x-request-id: req-tools-0001\r\n", &body.to_string())
        }
        // The same tool calls streamed: ids and names first, arguments in pieces, usage last.
        "tool-calls-stream" => {
            let call = |index: usize, fields: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "chatcmpl-stream-7", "choices": [{"index": 0,
                        "delta": {"tool_calls": [{"index": index, "function": fields.clone(),
                            "id": if fields.get("name").is_some() { json!(format!("call_{index}")) } else { Value::Null }}]},
                        "finish_reason": null}]})
                )
            };
            let events = vec![
                call(0, json!({"name": "builtin.remember-and-blog", "arguments": ""})),
                call(0, json!({"arguments": "{\"input\": \"lau"})),
                call(1, json!({"name": "image.generate", "arguments": "{\"prompt\""})),
                call(0, json!({"arguments": "nch note\"}"})),
                call(1, json!({"arguments": ": \"a rocket\"}"})),
                format!("data: {}\n\n", json!({"id": "chatcmpl-stream-7", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
                format!("data: {}\n\n", json!({"id": "chatcmpl-stream-7", "choices": [],
                    "usage": {"prompt_tokens": 800, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 256}}})),
            ];
            stream_events(&mut stream, &events, false)
        }
        // Tester 13's shapes: a second choice streamed beside choice 0 (T13-1).
        "two-choices-stream" => {
            let choice = |index: usize, text: &str, finish: Option<&str>| {
                format!("data: {}\n\n", json!({"choices": [{"index": index,
                    "delta": {"content": text}, "finish_reason": finish}]}))
            };
            let events = vec![
                choice(0, &good[..10], None),
                choice(1, "SECOND", None),
                choice(0, &good[10..], Some("stop")),
                choice(1, " CHOICE", Some("stop")),
            ];
            stream_events(&mut stream, &events, false)
        }
        // Two parallel calls streamed whole, both at index 0, each with its own id (T13-6).
        "tool-calls-same-index" => {
            let call = |id: &str, name: &str, args: &str| {
                format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "id": id, "type": "function",
                     "function": {"name": name, "arguments": args}}]}}]}))
            };
            let events = vec![
                call("call_a", "builtin.remember-and-blog", "{\"input\": \"launch note\"}"),
                call("call_b", "image.generate", "{\"prompt\": \"a rocket\"}"),
                format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            ];
            stream_events(&mut stream, &events, false)
        }
        // The plan as an array of text parts (T13-10).
        "content-parts" => respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(
                json!([{"type": "text", "text": &good[..10]}, {"type": "text", "text": &good[10..]}]),
                json!("stop"),
                json!({}),
            ),
        ),
        // A legacy `function_call` whose arguments hold the steps (T13-10).
        "function-call" => respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(
                Value::Null,
                json!("function_call"),
                json!({"function_call": {"name": "plan", "arguments": good.clone()}}),
            ),
        ),
        // One event's JSON over two `data:` lines, as the SSE spec allows (T13-7).
        "sse-multiline" => {
            let event = json!({"choices": [{"index": 0, "delta": {"content": good.clone()},
                "finish_reason": "stop"}]})
            .to_string();
            // Cut between JSON tokens, outside any string: `{"choices":[` then the rest.
            let cut = event.find('[').map_or(1, |i| i + 1);
            let events = vec![format!("data: {}\ndata: {}\n\n", &event[..cut], &event[cut..])];
            stream_events(&mut stream, &events, false)
        }
        "length" => ok(&mut stream, &good[..good.len() / 2], "length"),
        "think-unclosed" => stream_events(
            &mut stream,
            &[
                delta(
                    "content",
                    "<think>\nThe user wants a blog. Let me check the catalog",
                    None,
                ),
                delta(
                    "content",
                    " again, the memory packs store facts and",
                    Some("length"),
                ),
            ],
            false,
        ),
        "empty" => respond(
            &mut stream,
            "200 OK",
            json_kind,
            "",
            &completion(json!(""), Value::Null, json!({})),
        ),
        "prose-after" => ok(
            &mut stream,
            &format!("{good}\n\nI chose these because the user asked."),
            "stop",
        ),
        "fenced" => ok(
            &mut stream,
            &format!("Here is the plan:\n```json\n{good}\n```"),
            "stop",
        ),
        "hallucinated" => ok(
            &mut stream,
            &plan(&["blog.write", "image.generate"]),
            "stop",
        ),
        "deadlock" => ok(
            &mut stream,
            "{\"steps\": [{\"order\": 1, \"tool\": \"blog.draft\", \"args\": {\"input\": {\"input\": {",
            "stop",
        ),
        "rate-limited" if n == 1 => respond(
            &mut stream,
            "429 Too Many Requests",
            json_kind,
            "Retry-After: 1\r\n",
            r#"{"error":{"message":"Rate limit exceeded: free-models-per-min","code":429}}"#,
        ),
        "rate-limited" => ok(&mut stream, &good, "stop"),
        "server-error" => respond(
            &mut stream,
            "500 Internal Server Error",
            json_kind,
            "",
            r#"{"error":{"message":"Internal server error","code":500}}"#,
        ),
        // Terminal control sequences in an error message: a log must not carry them.
        "escape-error" => respond(
            &mut stream,
            "400 Bad Request",
            json_kind,
            "",
            &json!({"error": {"message": "bad \u{1b}]0;pwned\u{7}\u{1b}[31mred", "code": 400}})
                .to_string(),
        ),
        // Terminal control sequences in a good answer's text (a clear-screen, a clipboard
        // write, a hidden link, an 8-bit CSI, a right-to-left override) before the plan.
        "escape-answer" => ok(
            &mut stream,
            &format!(
                "\u{1b}[2J\u{1b}]52;c;aGVsbG8=\u{7}\u{9b}31m\u{202e}EVIL \u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{7}\u{2028}\u{200b}\n2026-11-25T18:00:00Z  INFO ctxconsole::live: FORGED line\n {good}"
            ),
            "stop",
        ),
        "not-json" => respond(
            &mut stream,
            "200 OK",
            "text/html",
            "",
            "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
        ),
        "stream-cut" => stream_events(&mut stream, &[delta("content", &good[..30], None)], true),
        "hang" => {
            std::thread::sleep(Duration::from_secs(30));
            Ok(())
        }
        // Endpoints that echo the Authorization header back, as several do.
        "echo-401" => respond(
            &mut stream,
            "401 Unauthorized",
            json_kind,
            &format!("WWW-Authenticate: Bearer realm=\"{echo}\"\r\n"),
            &json!({"error": {"message": format!("Invalid authorization header: {echo}"), "code": 401}})
                .to_string(),
        ),
        "echo-200" => ok(
            &mut stream,
            &format!("{good}\n\nAuthorised by the header '{echo}'."),
            "stop",
        ),
        // The key JSON-escaped in the body, so only the decoded text holds it.
        "echo-escaped" => {
            let escaped: String = echo.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
            let body = completion(json!("ESCAPED"), json!("stop"), json!({}))
                .replace("ESCAPED", &format!("{}\\n\\nheader: {escaped}", good.replace('"', "\\\"")));
            respond(&mut stream, "200 OK", json_kind, "", &body)
        }
        // A tool call quoting the header in its id and its arguments (JSON-escaped, so only
        // the decoded text holds it), and a request id header quoting it too.
        "echo-tools" => {
            let escaped: String = echo.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
            let body = json!({"id": "cmpl-echo", "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": format!("call {echo}"), "type": "function", "function": {
                        "name": "builtin.remember-and-blog",
                        "arguments": "ARGS"}}]}}]})
            .to_string()
            .replace("ARGS", &format!("{{\\\"input\\\": \\\"{escaped}\\\"}}"));
            respond(
                &mut stream,
                "200 OK",
                json_kind,
                &format!("x-request-id: {echo}\r\n"),
                &body,
            )
        }
        // A gateway's HTML page quoting the request's headers.
        "echo-html" => respond(
            &mut stream,
            "200 OK",
            "text/html",
            "",
            &format!("<html><body><pre>Authorization: {echo}</pre></body></html>"),
        ),
        // Half the key, as a truncating echo would give.
        "echo-truncated" => respond(
            &mut stream,
            "403 Forbidden",
            "text/plain",
            "",
            &format!("forbidden for {}...", &echo[..echo.len() / 2 + 6]),
        ),
        // A stream that echoes the header in reasoning, the key split across two transport
        // chunks, and again split across several deltas.
        "echo-stream" => {
            let event = delta("reasoning_content", &format!("The header was {echo}. "), None);
            let at = event.find(&echo).unwrap_or(0) + echo.len() / 2;
            let mut events = vec![event[..at].to_string(), event[at..].to_string()];
            // Pieces of 10 bytes: none is the key, only what they add up to.
            let pieces: Vec<String> = echo
                .as_bytes()
                .chunks(10)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            events.push(delta("reasoning_content", "Again: ", None));
            for p in &pieces {
                events.push(delta("reasoning_content", p, None));
            }
            events.push(delta("reasoning_content", ". Now the plan.", None));
            events.push(delta("content", &good, Some("stop")));
            stream_events(&mut stream, &events, false)
        }
        // The key echoed across three deltas, the middle one long enough to be redacted
        // as it arrives and the edges not (tester 8 F7: `sk-test-abc[REDACTED]z012…`).
        "echo-stream-edges" => {
            let key = echo.strip_prefix("Bearer ").unwrap_or(&echo);
            let edge = key.len().saturating_sub(12).min(22) / 2;
            let (head, rest) = key.split_at(edge);
            let (middle, tail) = rest.split_at(rest.len() - edge);
            let events = [
                delta("content", &format!("auth was Bearer {head}"), None),
                delta("content", middle, None),
                delta("content", &format!("{tail}\n\n{good}"), Some("stop")),
            ];
            stream_events(&mut stream, &events, false)
        }
        // An error event in the stream quoting the header.
        "echo-stream-error" => stream_events(
            &mut stream,
            &[format!(
                "data: {}\n\n",
                json!({"error": {"message": format!("upstream rejected {echo}"), "code": 401}})
            )],
            false,
        ),
        // Replies far over a small cap: a body, and a stream of many events.
        "huge-body" => ok(
            &mut stream,
            &format!("{good}\n\n{}", "All of this is prose. ".repeat(HUGE / 22)),
            "stop",
        ),
        "huge-stream" => {
            let mut events = vec![delta("content", &good, None)];
            let prose = "All of this is prose. ".repeat(400);
            events.extend((0..HUGE / prose.len()).map(|_| delta("content", &prose, None)));
            events.push(delta("content", ".", Some("stop")));
            stream_events(&mut stream, &events, false)
        }
        // A body of 3-byte characters over a cap just past 64 KiB, sent so that the chunk
        // crossing the cap holds the end of the first 64 KiB (which cuts a character).
        "huge-cjk" => {
            let body = (0..3)
                .map(|pad| {
                    let content = format!("{}{}", "x".repeat(pad), "日".repeat(HUGE / 3));
                    completion(json!(content), json!("stop"), json!({}))
                })
                .find(|b| !b.is_char_boundary(CJK_OPENING))
                .unwrap();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {json_kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            let bytes = body.as_bytes();
            for part in [&bytes[..CJK_FIRST], &bytes[CJK_FIRST..CJK_CROSSING], &bytes[CJK_CROSSING..]] {
                stream.write_all(part)?;
                stream.flush()?;
                std::thread::sleep(Duration::from_millis(150));
            }
            Ok(())
        }
        // A retry-after no Duration can hold.
        "retry-after-huge" => respond(
            &mut stream,
            "429 Too Many Requests",
            json_kind,
            "Retry-After: 1e300\r\n",
            r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
        ),
        // A retry-after in seconds too many for any integer type.
        "retry-after-digits" => respond(
            &mut stream,
            "429 Too Many Requests",
            json_kind,
            "Retry-After: 99999999999999999999999\r\n",
            r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
        ),
        // A retry-after as an HTTP date (RFC 9110 section 10.2.3) decades away.
        "retry-after-date-far" => respond(
            &mut stream,
            "429 Too Many Requests",
            json_kind,
            "Retry-After: Wed, 21 Oct 2099 07:28:00 GMT\r\n",
            r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
        ),
        // Rate limited once until an HTTP date two seconds on, then answered.
        "retry-after-date" if n == 1 => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let at = chrono::DateTime::from_timestamp(now as i64 + 2, 0).unwrap();
            respond(
                &mut stream,
                "429 Too Many Requests",
                json_kind,
                &format!("Retry-After: {}\r\n", at.format("%a, %d %b %Y %H:%M:%S GMT")),
                r#"{"error":{"message":"Rate limit exceeded","code":429}}"#,
            )
        }
        "retry-after-date" => ok(&mut stream, &good, "stop"),
        // Answers more than a second after it was asked.
        "late" => {
            std::thread::sleep(Duration::from_millis(1500));
            ok(&mut stream, &good, "stop")
        }
        // Answers after a pause, counting how many are answered at once.
        m if m.starts_with("slow-") => {
            let now = SLOW_NOW.fetch_add(1, Ordering::SeqCst) + 1;
            max_in_flight.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(400));
            SLOW_NOW.fetch_sub(1, Ordering::SeqCst);
            ok(&mut stream, &good, "stop")
        }
        // A strong model's unaided plan for the launch intent: memory, blog and image packs
        // one by one where the weak models pick the pipeline (the gap signal's baseline).
        "frontier" => ok(
            &mut stream,
            &plan(&["memory.store", "blog.draft", "image.generate"]),
            "stop",
        ),
        // A hostile plan: line breaks in a tool name, an argument value and the model's own
        // rationale for a step it calls `unknown`, each followed by a line that would pass
        // for one of ctxconsole's.
        "newline" => ok(
            &mut stream,
            &json!({"steps": [
                {"order": 1, "tool": "memory.store", "args": {"k": "v\nFORGED ARG LINE"}},
                {"order": 2, "tool": "zz\n  test/ok-json vs baseline: agree FORGED TOOL LINE"},
                {"order": 3, "tool": "unknown",
                 "rationale": "gap: nothing fits\nFORGED RATIONALE LINE"}
            ]})
            .to_string(),
            "stop",
        ),
        // A plan whose every step names a tool no catalog holds (all demoted to `unknown`).
        "unregistered" => ok(
            &mut stream,
            &plan(&["nonexistent.tool", "other.fake"]),
            "stop",
        ),
        // Any other model answers with a good plan: a workspace can route every provider
        // here (see `config_routing_everything`).
        _ => ok(&mut stream, &good, "stop"),
    }
}
