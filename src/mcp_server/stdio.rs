//! MCP over stdio with a bounded message size that answers instead of going silent.
//!
//! rmcp's own stdio transport drops a line over its 16 MiB cap, or one it cannot read, and
//! logs it: the client never hears back and waits out its timeout. Here a message over
//! [`MESSAGE_MAX`] is read through (never buffered past the limit), and it and every line
//! that is not a message this server reads get the JSON-RPC error [`jsonrpc`] gives them.
//!
//! rmcp drops [`Transport::receive`]'s future whenever an answer is ready to go out, so
//! nothing it must not lose may sit in that future across an await: a refusal is written by
//! a task of its own, whose handle stays in the transport until it has finished (tester 48:
//! a refusal awaiting the writer while rmcp wrote other answers went with the dropped future,
//! and its client waited forever).

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Serialize;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::mcp_server::jsonrpc;

/// The most one JSON-RPC message may hold: a preview's instruction and attachments at their
/// limits, escaped. The HTTP transport takes the same.
pub const MESSAGE_MAX: usize = 32 * 1024 * 1024;

pub struct BoundedStdio<R, W> {
    lines: Lines<R>,
    writer: Arc<Mutex<W>>,
    /// The last refusal, being written: the next line is read once it is out, so refusals go
    /// out in the order of their lines, each before what a later line is answered. Awaited
    /// through `&mut`, so a dropped `receive` leaves it here for the next call or `close`.
    refusing: Option<JoinHandle<std::io::Result<()>>>,
    /// A stop signal: once it comes, nothing more is read, as when stdin closes (see
    /// [`BoundedStdio::stopped_by`]).
    stop: Option<Stop>,
}

/// Lines of stdin, each bounded: apart from the signal so both can be awaited at once.
struct Lines<R> {
    reader: BufReader<R>,
    /// The line being read, at most `max` bytes of it.
    line: Vec<u8>,
    /// Bytes of the current line read so far, kept or not.
    seen: usize,
    max: usize,
}

enum Stop {
    /// Awaited beside each read; its name goes in the slot when it comes.
    Listening(
        std::pin::Pin<Box<dyn Future<Output = &'static str> + Send>>,
        Arc<std::sync::Mutex<Option<&'static str>>>,
    ),
    /// It came: nothing more is read.
    Came,
}

enum LineRead {
    Whole,
    Oversized { bytes: usize },
    Eof,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> BoundedStdio<R, W> {
    pub fn new(read: R, write: W, max: usize) -> Self {
        BoundedStdio {
            lines: Lines {
                reader: BufReader::with_capacity(1 << 16, read),
                line: Vec::new(),
                seen: 0,
                max,
            },
            writer: Arc::new(Mutex::new(write)),
            refusing: None,
            stop: None,
        }
    }

    /// Read nothing more once `signal` comes (rmcp then gives calls in flight 5 s to
    /// answer, as when stdin closes), said on stderr; its name is left in `stopped`.
    pub fn stopped_by(
        mut self,
        signal: std::pin::Pin<Box<dyn Future<Output = &'static str> + Send>>,
        stopped: Arc<std::sync::Mutex<Option<&'static str>>>,
    ) -> Self {
        self.stop = Some(Stop::Listening(signal, stopped));
        self
    }
}

impl<R: AsyncRead + Unpin> Lines<R> {
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

/// A message as one line of stdout.
fn line_of(message: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut bytes = crate::mcp_server::wire_json(message)?.into_bytes();
    bytes.push(b'\n');
    Ok(bytes)
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut w = writer.lock().await;
    w.write_all(line).await?;
    w.flush().await
}

/// Wait for the refusal being written, if one is. Cancel-safe: the write is a task of its
/// own, and its handle is left in `refusing` until it has finished.
async fn refused(refusing: &mut Option<JoinHandle<std::io::Result<()>>>) -> std::io::Result<()> {
    let Some(task) = refusing.as_mut() else {
        return Ok(());
    };
    let done = task.await;
    *refusing = None;
    done.map_err(|e| std::io::Error::other(format!("the task writing a refusal ended: {e}")))?
}

/// Where reading the next line failed.
enum Fault {
    /// Writing the last line's refusal.
    Writing(std::io::Error),
    Reading(std::io::Error),
}

/// The next line, once the last one's refusal is out. Cancel-safe, as both its steps are.
async fn next_line<R: AsyncRead + Unpin>(
    lines: &mut Lines<R>,
    refusing: &mut Option<JoinHandle<std::io::Result<()>>>,
) -> Result<LineRead, Fault> {
    refused(refusing).await.map_err(Fault::Writing)?;
    lines.read_line().await.map_err(Fault::Reading)
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
        let line = line_of(&item);
        async move { write_line(&writer, &line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // The signal stays in `self.stop` while it is awaited: rmcp drops this future
            // whenever an answer is ready to go out, and a signal taken out of it then went
            // with it (tester 27 F2: after the first request, SIGTERM and SIGINT did nothing).
            let read = match &mut self.stop {
                None => next_line(&mut self.lines, &mut self.refusing).await,
                Some(Stop::Listening(signal, stopped)) => {
                    let stopped = Arc::clone(stopped);
                    tokio::select! {
                        read = next_line(&mut self.lines, &mut self.refusing) => read,
                        name = signal => {
                            *stopped.lock().unwrap_or_else(|p| p.into_inner()) = Some(name);
                            crate::cli::out::eprint_line(&format!(
                                "ctxconsole mcp: {name}: reading no more requests; calls in flight get {} to answer",
                                crate::core::duration::describe(crate::mcp_server::STOP_GRACE)
                            ));
                            // Never polled again once it has come.
                            self.stop = Some(Stop::Came);
                            return None;
                        }
                    }
                }
                Some(Stop::Came) => return None,
            };
            let read = match read {
                Ok(r) => r,
                Err(Fault::Reading(e)) => {
                    crate::cli::out::eprint_line(&format!("ctxconsole mcp: reading stdin: {e}"));
                    return None;
                }
                Err(Fault::Writing(e)) => {
                    crate::cli::out::eprint_line(&format!("ctxconsole mcp: writing stdout: {e}"));
                    return None;
                }
            };
            let line = std::mem::take(&mut self.lines.line);
            let refusal = match read {
                LineRead::Eof => return None,
                LineRead::Oversized { bytes } => jsonrpc::oversized(&line, bytes, self.lines.max),
                LineRead::Whole => {
                    let text = trim_line(&line);
                    // A blank line (nothing, or only JSON's whitespace) is no message: skipped,
                    // not answered "EOF while parsing" (tester 48 nit).
                    if text
                        .iter()
                        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                    {
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                        Ok(message)
                            if let Some(refusal) = jsonrpc::repeated_key_in(text, &message) =>
                        {
                            refusal
                        }
                        Ok(message) => {
                            // Keep the allocation for the next line.
                            self.lines.line = line;
                            self.lines.line.clear();
                            return Some(message);
                        }
                        Err(e) => jsonrpc::unreadable(text, &e),
                    }
                }
            };
            // A notification is noted on stderr instead: nobody waits for its answer.
            if refusal.notification {
                crate::cli::out::eprint_line(&format!(
                    "ctxconsole mcp: dropped a notification it cannot read: {}",
                    refusal.error.message
                ));
                continue;
            }
            let line = match line_of(&refusal) {
                Ok(line) => line,
                Err(e) => {
                    crate::cli::out::eprint_line(&format!(
                        "ctxconsole mcp: writing a refusal: {e}"
                    ));
                    return None;
                }
            };
            // Handed to a task before anything is awaited: from here on, dropping this future
            // loses nothing. The next turn waits for it before reading on.
            let writer = Arc::clone(&self.writer);
            self.refusing = Some(tokio::spawn(
                async move { write_line(&writer, &line).await },
            ));
        }
    }

    /// Every refusal is out first, however `receive` last ended (at EOF, by a stop signal,
    /// or dropped by rmcp).
    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Err(e) = refused(&mut self.refusing).await {
            crate::cli::out::eprint_line(&format!("ctxconsole mcp: writing stdout: {e}"));
            return Err(e);
        }
        self.writer.lock().await.flush().await
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    crate::mcp_server::jsonrpc::without_bom(line)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Reads the ping the test input ends with as the next message, closes the transport and
    /// gives everything it wrote.
    async fn ping_next_then_replies<R, W>(
        mut t: BoundedStdio<R, W>,
        mut out_r: tokio::io::DuplexStream,
    ) -> String
    where
        BoundedStdio<R, W>: Transport<RoleServer>,
    {
        use tokio::io::AsyncReadExt;
        let next = t.receive().await;
        assert!(
            matches!(next, Some(rmcp::model::JsonRpcMessage::Request(_))),
            "the ping is read next: {next:?}"
        );
        t.close().await.unwrap();
        drop(t);
        let mut replies = String::new();
        out_r.read_to_string(&mut replies).await.unwrap();
        replies
    }

    /// Tester 48 nit: a line of only spaces or tabs was answered -32700 ("EOF while parsing a
    /// value") where an empty line is skipped. Blank lines are no messages: none is answered,
    /// and the next line is read.
    #[tokio::test]
    async fn a_blank_line_is_skipped_as_an_empty_one_is() {
        let input =
            "\n   \n\t \t\r\n\u{feff} \t\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
        let (out_w, out_r) = tokio::io::duplex(1 << 16);
        let t = BoundedStdio::new(std::io::Cursor::new(input.as_bytes()), out_w, 1 << 20);
        let replies = ping_next_then_replies(t, out_r).await;
        assert_eq!(replies, "", "nothing is answered to a blank line");
    }

    /// Tester 48: rmcp drops `receive` whenever an answer is ready to go out. A refusal that
    /// waited there for stdout, held by another answer being written, went with it: its line
    /// was read, and its client never heard back.
    #[tokio::test]
    async fn a_refusal_outlives_a_receive_dropped_while_stdout_is_held() {
        let input = "not json\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
        let (out_w, out_r) = tokio::io::duplex(1 << 16);
        let mut t = BoundedStdio::new(std::io::Cursor::new(input.as_bytes()), out_w, 1 << 20);
        // Another answer is being written.
        let held = Arc::clone(&t.writer).lock_owned().await;
        let dropped =
            tokio::time::timeout(std::time::Duration::from_millis(100), t.receive()).await;
        assert!(
            dropped.is_err(),
            "the refusal waits for stdout: {dropped:?}"
        );
        drop(held);
        let replies = ping_next_then_replies(t, out_r).await;
        assert_eq!(replies.matches("-32700").count(), 1, "{replies}");
        assert_eq!(replies.lines().count(), 1, "{replies}");
    }
}
