//! MCP over stdio with a bounded message size that answers instead of going silent.
//!
//! rmcp's own stdio transport drops a line over its 16 MiB cap and logs it: the client
//! never hears back and waits out its timeout. Here a message over [`MESSAGE_MAX`] is read
//! through (never buffered past the limit) and answered with an `invalid_params` error
//! naming the argument that crossed the limit, under the request's own id.

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::json;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::mcp_server::params::{TEXT_MAX, size_label};

/// The most one JSON-RPC message may hold: a preview's instruction and attachments at their
/// limits, escaped. The HTTP transport takes the same.
pub const MESSAGE_MAX: usize = 32 * 1024 * 1024;

pub struct BoundedStdio<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The line being read, at most `max` bytes of it.
    line: Vec<u8>,
    /// Bytes of the current line read so far, kept or not.
    seen: usize,
    max: usize,
}

enum LineRead {
    Whole,
    Oversized { bytes: usize },
    Eof,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> BoundedStdio<R, W> {
    pub fn new(read: R, write: W, max: usize) -> Self {
        BoundedStdio {
            reader: BufReader::with_capacity(1 << 16, read),
            writer: Arc::new(Mutex::new(write)),
            line: Vec::new(),
            seen: 0,
            max,
        }
    }

    /// One `\n`-terminated line. Cancel-safe: between `fill_buf` and `consume` nothing
    /// awaits, so a dropped read leaves its bytes in `line` for the next call.
    async fn read_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(LineRead::Eof);
            }
            let (n, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = self.max.saturating_sub(self.line.len());
            self.line.extend_from_slice(&buf[..n.min(room)]);
            self.seen += n;
            self.reader.consume(n);
            if done {
                let bytes = std::mem::take(&mut self.seen) - 1;
                return Ok(if bytes > self.max {
                    LineRead::Oversized { bytes }
                } else {
                    LineRead::Whole
                });
            }
        }
    }
}

async fn write_message<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message)?;
    bytes.push(b'\n');
    let mut w = writer.lock().await;
    w.write_all(&bytes).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for BoundedStdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move { write_message(&writer, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let read = match self.read_line().await {
                Ok(r) => r,
                Err(e) => {
                    crate::cli::out::eprint_line(&format!("ctxconsole mcp: reading stdin: {e}"));
                    return None;
                }
            };
            let line = std::mem::take(&mut self.line);
            let reply = match read {
                LineRead::Eof => return None,
                LineRead::Oversized { bytes } => oversized(&line, bytes, self.max),
                LineRead::Whole => {
                    let text = trim_line(&line);
                    if text.is_empty() {
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                        Ok(message) => {
                            // Keep the allocation for the next line.
                            self.line = line;
                            self.line.clear();
                            return Some(message);
                        }
                        Err(e) => not_understood(text, &e),
                    }
                }
            };
            if let Some(reply) = reply
                && let Err(e) = write_message(&self.writer, &reply).await
            {
                crate::cli::out::eprint_line(&format!("ctxconsole mcp: writing stdout: {e}"));
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// A line that is not a message this server reads. With an id it gets an error under that
/// id; a notification or text that is not JSON at all is noted on stderr and dropped
/// (answering garbage with garbage can loop two peers forever).
fn not_understood(text: &[u8], e: &serde_json::Error) -> Option<TxJsonRpcMessage<RoleServer>> {
    let id = serde_json::from_slice::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
    match id {
        Some(id) => Some(TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::invalid_request(
                format!("not a JSON-RPC message this server reads: {e}"),
                None,
            ),
            Some(id),
        )),
        None => {
            crate::cli::out::eprint_line(&format!(
                "ctxconsole mcp: dropped a line of {} bytes that is not a JSON-RPC request: {e}",
                text.len()
            ));
            None
        }
    }
}

/// The answer to a message over the limit: under its id when the id came before the cut,
/// naming the argument that was being read when the limit was crossed.
fn oversized(kept: &[u8], bytes: usize, max: usize) -> Option<TxJsonRpcMessage<RoleServer>> {
    let cut = cut_point(kept);
    let argument = cut
        .path
        .iter()
        .position(|k| k == "arguments")
        .and_then(|i| cut.path.get(i + 1..))
        .filter(|rest| !rest.is_empty())
        .map(|rest| rest.join("."));
    let what = match &argument {
        Some(a) => format!("argument `{a}`"),
        None if !cut.path.is_empty() => format!("`{}`", cut.path.join(".")),
        None => "the message".to_string(),
    };
    let message = format!(
        "the message is {} bytes, over the {} limit; {what} was being read when it crossed the limit (text arguments take at most {} each)",
        crate::format::thousands(bytes),
        size_label(max),
        size_label(TEXT_MAX)
    );
    let Some(id) = cut.id else {
        crate::cli::out::eprint_line(&format!(
            "ctxconsole mcp: dropped a message without an id: {message}"
        ));
        return None;
    };
    Some(TxJsonRpcMessage::<RoleServer>::error(
        ErrorData::invalid_params(
            message,
            Some(json!({
                "argument": argument,
                "path": cut.path.join("."),
                "message_bytes": bytes,
                "limit_bytes": max,
            })),
        ),
        Some(id),
    ))
}

/// Where a JSON text that stops part-way stands: the request id if it came first, and the
/// keys leading to the value being read (`params`, `arguments`, `instruction`; `[]` for an
/// array item).
#[derive(Debug, Default, PartialEq)]
struct CutPoint {
    id: Option<RequestId>,
    path: Vec<String>,
}

struct Frame {
    object: bool,
    key: Option<String>,
    want_key: bool,
}

fn cut_point(text: &[u8]) -> CutPoint {
    let mut stack: Vec<Frame> = Vec::new();
    let mut id = None;
    let mut i = 0;
    // Is the value starting here the top-level "id"?
    let at_id = |stack: &[Frame]| {
        stack.len() == 1 && stack[0].key.as_deref() == Some("id") && !stack[0].want_key
    };
    while i < text.len() {
        match text[i] {
            b'{' => stack.push(Frame {
                object: true,
                key: None,
                want_key: true,
            }),
            b'[' => stack.push(Frame {
                object: false,
                key: None,
                want_key: false,
            }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(f) = stack.last_mut().filter(|f| f.object) {
                    f.want_key = true;
                    f.key = None;
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
                if let Some(f) = stack.last_mut().filter(|f| f.object && f.want_key) {
                    f.key = decoded();
                    f.want_key = false;
                } else if at_id(&stack) {
                    id = decoded().map(|s| RequestId::String(s.into()));
                }
                i = j;
            }
            b'-' | b'0'..=b'9' if at_id(&stack) => {
                let end = text[i..]
                    .iter()
                    .position(|b| !(b.is_ascii_digit() || *b == b'-'))
                    .map_or(text.len(), |n| i + n);
                id = std::str::from_utf8(&text[i..end])
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .map(RequestId::Number);
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
            (None, false) => "[]".to_string(),
            (None, true) => "{}".to_string(),
        })
        .collect();
    CutPoint { id, path }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ["params", "arguments", "attachments", "[]", "text"]
        );

        // An "id" inside the arguments is not the request's.
        let cut = cut_point(br#"{"params":{"id":3,"x":"yy"#);
        assert_eq!(cut.id, None);
    }

    #[tokio::test]
    async fn an_oversized_line_gets_an_error_and_the_next_line_is_read() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{{\"name\":\"rank_tools\",\"arguments\":{{\"query\":\"{}\"}}}}}}\n",
            "q".repeat(300)
        );
        let ping = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
        let input = format!("{big}{ping}");
        let (out_w, mut out_r) = tokio::io::duplex(1 << 16);
        let mut t = BoundedStdio::new(std::io::Cursor::new(input.into_bytes()), out_w, 200);
        let next = t.receive().await;
        assert!(next.is_some(), "the ping after the oversized line is read");
        drop(t);
        let mut replies = String::new();
        use tokio::io::AsyncReadExt;
        out_r.read_to_string(&mut replies).await.unwrap();
        assert!(replies.contains("\"id\":4"), "{replies}");
        assert!(
            replies.contains("argument `query` was being read"),
            "{replies}"
        );
        assert!(replies.contains("-32602"), "{replies}");
    }
}
