//! A small MCP server over stdio, built with rmcp's server side, for the live-import tests:
//! `ctxconsole compact --mcp "target/debug/examples/mcp_test_server"`.
//!
//! Modes for the failure tests (the first argument):
//! - `--spawn PIDFILE`: a working server that starts a grandchild (`sleep 1000`) first and
//!   writes "SERVER_PID GRANDCHILD_PID" to PIDFILE;
//! - `--hang PIDFILE`: the same grandchild, then never answers (reads nothing, sleeps);
//! - `--garbage`: writes a line that is not JSON-RPC (with a terminal escape in it) on
//!   stdout, then never answers.
//!
//! Pagination modes (a working server whose `tools/list` pages misbehave):
//! - `--empty-cursor`: every page says `"nextCursor": ""` (some servers' "no more pages");
//! - `--same-cursor`: every page gives the same cursor again;
//! - `--endless-cursors`: every page gives a new cursor, for ever;
//! - `--big-page`: the one page is over the 16 MiB a message may be (a 17 MB description).
//! - `--deep N`: the one tool's input schema is a chain of `properties` N levels deep (each
//!   level two of JSON nesting), valid JSON nested past what a JSON reader takes for N ≥ 62.
//!
//! Raw mode (JSON-RPC written by hand, one tool): `--chatty WHAT`, where before its answer
//! to `tools/list` it writes a message nested 140 deep: `note` a log notification, `other-id`
//! a reply to id 999 (never asked), `answer-id-last` its answer itself, the id after the
//! deep part (so only the line's end tells what it is). `stray-text` and `stray-object`
//! answer `tools/list` with no answer at all, but a line that is no JSON-RPC message: plain
//! text, or a JSON object without `"jsonrpc": "2.0"` and none of a message's keys;
//! `stray-answer` with its answer without `"jsonrpc": "2.0"`. `log-line` writes a pino-style
//! log line (`{"level":30,…}`) first, `bare-note` a notification without `"jsonrpc"` first,
//! `late-object` such an object (`{"result":{}}`) right after its `tools/list` answer:
//! each then answers as a good server does. `banner-error` writes `Server ready` first and
//! answers `tools/list` with a JSON-RPC error (`db down`). Answers the import cannot use, to
//! `tools/list`: `null-id-error` a JSON-RPC error under `"id": null`, `wrong-id` a result
//! under id 999 only, `no-result` its id with neither result nor error, `no-newline` its
//! good answer without the final newline, then it exits. Answers of the wrong shape:
//! `no-schema` a tool without `inputSchema`, `result-null` `"result": null`, `tools-not-list`
//! `"tools": "nope"`, `bad-schema` a tool whose `inputSchema` is a string; `init-empty`
//! answers `initialize` with `{}`. Answers rmcp's typed reader drops, to `tools/list`:
//! `bad-utf8` (a tool's name holding the bytes FF FE), `raw-tab` (a raw tab inside a
//! description), `lone-surrogate` (`"a\ud800"`), `dup-key` (`result` given twice),
//! `string-code` (an error whose code is `"E_DB"`), `no-message` (an error without a
//! message), `both` (a result and an error); `init-bad-utf8` answers `initialize` with the
//! bytes C0 AF in its server's name. Outsize text: `big-error` answers `tools/list` with an
//! error whose message is 2,000,000 bytes, `init-big-error` so answers `initialize`,
//! `big-stderr` writes a 100,000-byte line on stderr and exits at `tools/list`. Any
//! arguments after `WHAT` are ignored (a command line may carry what a test needs).

use rmcp::model::{
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq)]
enum Pages {
    One,
    EmptyCursor,
    SameCursor,
    EndlessCursors,
    Big,
    Deep(usize),
}

struct TestServer(Pages);

fn schema(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page: u64 = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.strip_prefix("page-").and_then(|n| n.parse().ok()))
            .unwrap_or(1);
        let next_cursor = match self.0 {
            Pages::One | Pages::Big | Pages::Deep(_) => None,
            Pages::EmptyCursor => Some(String::new()),
            Pages::SameCursor => Some("page-2".to_string()),
            Pages::EndlessCursors => Some(format!("page-{}", page + 1)),
        };
        if self.0 == Pages::Big {
            let tool = Tool::new(
                "big",
                "d".repeat(17_000_000),
                schema(json!({"type": "object"})),
            );
            return Ok(ListToolsResult {
                tools: vec![tool],
                ..ListToolsResult::default()
            });
        }
        if let Pages::Deep(levels) = self.0 {
            let mut inner = json!({"type": "string"});
            for _ in 0..levels {
                inner = json!({"type": "object", "properties": {"p": inner}});
            }
            let tool = Tool::new("deep", "A deeply nested schema.", schema(inner));
            return Ok(ListToolsResult {
                tools: vec![tool],
                ..ListToolsResult::default()
            });
        }
        if page > 1 {
            let tool = Tool::new(
                format!("page_{page}_tool"),
                "A tool from a later page.",
                schema(json!({"type": "object"})),
            );
            return Ok(ListToolsResult {
                tools: vec![tool],
                next_cursor,
                ..ListToolsResult::default()
            });
        }
        let tools = vec![
            Tool::new(
                "notes_add",
                "Add a note to the notebook. Notes are plain text and carry optional tags.",
                schema(
                    json!({"type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["text"]}),
                ),
            ),
            Tool::new(
                "notes_search",
                "Search notes by words. Returns the best matches first.",
                schema(
                    json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}),
                ),
            ),
            Tool::new(
                "weather_get",
                "Get the current weather for a city. Temperatures are in Celsius.",
                schema(
                    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                ),
            ),
        ];
        Ok(ListToolsResult {
            tools,
            next_cursor,
            ..ListToolsResult::default()
        })
    }
}

/// Start `sleep 1000` as a child of this server and note both ids in `pidfile`.
fn spawn_grandchild(pidfile: &str) -> anyhow::Result<()> {
    let grandchild = std::process::Command::new("sleep")
        .arg("1000")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    let tmp = format!("{pidfile}.tmp");
    std::fs::write(&tmp, format!("{} {}", std::process::id(), grandchild.id()))?;
    std::fs::rename(tmp, pidfile)?;
    Ok(())
}

/// The answer of `--chatty WHAT` to `method` that rmcp's reader drops, or that is
/// outsize, if `what` is one of those modes (see the module doc).
fn unreadable(method: Option<&str>, what: &str, id: &Value) -> Option<Vec<u8>> {
    let tool = r#"{"name":"t","inputSchema":{"type":"object"}}"#;
    let line = match (method?, what) {
        ("tools/list", "bad-utf8") => {
            let mut line =
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"bad_"#)
                    .into_bytes();
            line.extend_from_slice(b"\xff\xfe");
            line.extend_from_slice(br#"","inputSchema":{"type":"object"}}]}}"#);
            return Some(line);
        }
        ("initialize", "init-bad-utf8") => {
            let mut line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"f"#
            )
            .into_bytes();
            line.extend_from_slice(b"\xc0\xaf");
            line.extend_from_slice(br#"","version":"1"}}}"#);
            return Some(line);
        }
        ("tools/list", "raw-tab") => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[{{\"name\":\"t\",\"description\":\"col1\tcol2\",\"inputSchema\":{{\"type\":\"object\"}}}}]}}}}"
        ),
        ("tools/list", "lone-surrogate") => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"a\ud800","inputSchema":{{"type":"object"}}}}]}}}}"#
        ),
        ("tools/list", "dup-key") => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{tool}]}},"result":{{"tools":[{tool}]}}}}"#
        ),
        ("tools/list", "string-code") => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":"E_DB","message":"db down"}}}}"#
        ),
        ("tools/list", "no-message") => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000}}}}"#)
        }
        ("tools/list", "both") => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[]}},"error":{{"code":1,"message":"x"}}}}"#
        ),
        ("tools/list", "big-error") | ("initialize", "init-big-error") => json!({
            "jsonrpc": "2.0", "id": id,
            "error": {"code": -32000, "message": "X".repeat(2_000_000)}
        })
        .to_string(),
        _ => return None,
    };
    Some(line.into_bytes())
}

/// `--chatty WHAT`: a server speaking JSON-RPC by hand over stdio, see the module doc.
fn chatty(what: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, Write};
    let deep = format!("{}{}", "[".repeat(140), "]".repeat(140));
    let mut out = std::io::stdout();
    let first = match what {
        "log-line" => r#"{"level":30,"time":1,"msg":"server listening"}"#,
        "bare-note" => {
            r#"{"method":"notifications/message","params":{"level":"info","data":"up"}}"#
        }
        "banner-error" => "Server ready",
        _ => "",
    };
    if !first.is_empty() {
        writeln!(out, "{first}")?;
        out.flush()?;
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(message) = serde_json::from_str::<Value>(&line?) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let method = message.get("method").and_then(Value::as_str);
        if let Some(raw) = unreadable(method, what, &id) {
            out.write_all(&raw)?;
            out.write_all(b"\n")?;
            out.flush()?;
            continue;
        }
        if what == "big-stderr" && method == Some("tools/list") {
            let mut err = std::io::stderr();
            writeln!(err, "{}", "Z".repeat(100_000))?;
            err.flush()?;
            std::process::exit(1);
        }
        let raw = match (method, what) {
            (Some("tools/list"), "null-id-error") => Some(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#
                    .to_string(),
            ),
            (Some("tools/list"), "wrong-id") => {
                Some(r#"{"jsonrpc":"2.0","id":999,"result":{"tools":[]}}"#.to_string())
            }
            (Some("tools/list"), "no-result") => Some(json!({"jsonrpc": "2.0", "id": id}).to_string()),
            (Some("tools/list"), "result-null") => {
                Some(json!({"jsonrpc": "2.0", "id": id, "result": null}).to_string())
            }
            (Some("tools/list"), "tools-not-list") => {
                Some(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": "nope"}}).to_string())
            }
            (Some("tools/list"), "no-schema") => Some(
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                    {"name": "plain_tool", "description": "fine"}]}})
                .to_string(),
            ),
            (Some("tools/list"), "bad-schema") => Some(
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                    {"name": "plain_tool", "inputSchema": "nope"}]}})
                .to_string(),
            ),
            (Some("initialize"), "init-empty") => {
                Some(json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string())
            }
            _ => None,
        };
        if let Some(raw) = raw {
            writeln!(out, "{raw}")?;
            out.flush()?;
            continue;
        }
        if what == "no-newline" && method == Some("tools/list") {
            let tools = json!({"tools": [{"name": "notes_search", "description": "Search notes.",
                "inputSchema": {"type": "object"}}]});
            write!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "result": tools})
            )?;
            out.flush()?;
            return Ok(());
        }
        let result = match method {
            Some("initialize") => json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "chatty", "version": "1"}}),
            Some("tools/list") if what == "banner-error" => {
                let error = json!({"code": -32603, "message": "db down"});
                writeln!(
                    out,
                    "{}",
                    json!({"jsonrpc": "2.0", "id": id, "error": error})
                )?;
                out.flush()?;
                continue;
            }
            Some("tools/list") if what.starts_with("stray-") => {
                let stray = match what {
                    "stray-text" => "PLAIN GARBAGE LINE".to_string(),
                    "stray-answer" => format!(r#"{{"id":{id},"result":{{"tools":[]}}}}"#),
                    _ => r#"{"not":"jsonrpc"}"#.to_string(),
                };
                writeln!(out, "{stray}")?;
                out.flush()?;
                continue;
            }
            Some("tools/list") => {
                let before = match what {
                    "note" => format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{deep}}}}}"#
                    ),
                    "other-id" => {
                        format!(r#"{{"jsonrpc":"2.0","id":999,"result":{{"x":{deep}}}}}"#)
                    }
                    "answer-id-last" => {
                        format!(r#"{{"jsonrpc":"2.0","result":{{"tools":{deep}}},"id":{id}}}"#)
                    }
                    _ => String::new(),
                };
                if !before.is_empty() {
                    writeln!(out, "{before}")?;
                }
                json!({"tools": [{"name": "notes_search", "description": "Search notes.",
                    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}]})
            }
            _ => json!({}),
        };
        let mut reply = format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        );
        if what == "late-object"
            && message.get("method").and_then(Value::as_str) == Some("tools/list")
        {
            // In the same write as the answer: read by the import in one go.
            reply.push_str("{\"result\":{}}\n");
        }
        out.write_all(reply.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--spawn", pidfile] => spawn_grandchild(pidfile)?,
        ["--hang", pidfile] => {
            spawn_grandchild(pidfile)?;
            std::thread::sleep(std::time::Duration::from_secs(1000));
            return Ok(());
        }
        ["--chatty", what, ..] => return chatty(what),
        ["--garbage"] => {
            use std::io::Write;
            let mut out = std::io::stdout();
            out.write_all(b"\x1b]0;pwned\x07this is not json-rpc, it is a banner\n")?;
            out.flush()?;
            std::thread::sleep(std::time::Duration::from_secs(1000));
            return Ok(());
        }
        _ => {}
    }
    let pages = match args.first().map(String::as_str) {
        Some("--empty-cursor") => Pages::EmptyCursor,
        Some("--same-cursor") => Pages::SameCursor,
        Some("--endless-cursors") => Pages::EndlessCursors,
        Some("--big-page") => Pages::Big,
        Some("--deep") => Pages::Deep(args.get(1).and_then(|n| n.parse().ok()).unwrap_or(100)),
        _ => Pages::One,
    };
    let service = TestServer(pages).serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
