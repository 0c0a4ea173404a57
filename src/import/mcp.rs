//! Live import from an MCP server started over stdio, with the rmcp client.
//!
//! The server runs in a process group of its own, and that whole group is killed when the
//! import ends — listed, failed, timed out, or stopped by Ctrl-C, SIGTERM or SIGHUP — so
//! nothing it started (`npx` → `node`) outlives the import. (In its own group, the terminal's
//! Ctrl-C no longer reaches it: the import catches the signal and ends the group itself.)

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::ServiceExt;
use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::core::error::{CoreError, JSON_DEPTH_MAX, too_deep};
use crate::core::terminal_text::{quoted_value, quoted_with};
use crate::exit::{Interrupted, bad_input};
use crate::import::catalog::{ImportedCatalog, parse_catalog};
use crate::llm::redact::Secrets;

/// How long a server gets to start, answer `initialize` and list its tools.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// How much of each line of the server's stdout is kept, to quote one that is not JSON-RPC
/// (more than the [`QUOTE_CHARS`](crate::core::terminal_text::QUOTE_CHARS) a quote shows,
/// each up to 4 bytes).
const LINE_HEAD_KEPT: usize = 512;
/// The longest line (one JSON-RPC message, its newline included) rmcp's stdio transport
/// reads. It drops a longer one, logging it and telling the client nothing, so the relay
/// measures lines itself and reports one at once.
const MESSAGE_MAX: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// The most `tools/list` pages read: a server still giving new cursors after this many is
/// taken to be in a pagination loop.
const PAGES_MAX: usize = 1000;
/// Split a command line into words: white space separates, single and double quotes group,
/// a backslash escapes the next character outside single quotes.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => match chars.next() {
                Some(n) => {
                    word.push(n);
                    in_word = true;
                }
                None => return Err("ends with a lone backslash".into()),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("has an unclosed {q} quote"));
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("is empty".into());
    }
    Ok(words)
}

/// The name every line gives the server `command_line` starts — the catalog line, each
/// note, each failure, `--json`'s `catalog_source.name`: ``MCP server `npx -y server` ``,
/// with the keys the variables `withheld` hold taken out ([`shown_command`]).
pub fn server_name(command_line: &str, withheld: &[String]) -> String {
    named(command_line, &withheld_secrets(withheld))
}

/// The keys the variables `withheld` hold, and the MCP server's bearer token's: what the
/// server's name never shows (review 50 L9: a bridge's command line holding the token
/// printed it).
fn withheld_secrets(withheld: &[String]) -> Secrets {
    let mut variables = withheld.to_vec();
    variables.push(crate::core::config::MCP_TOKEN_ENV.to_string());
    Secrets::from_env(&variables)
}

/// [`server_name`], the keys `secrets` holds taken out.
fn named(command_line: &str, secrets: &Secrets) -> String {
    format!("MCP server {}", shown_command(command_line, secrets, '`'))
}

/// `command_line` between `mark`s as a line shows it: every key of `secrets` (the providers'
/// keys) as `[REDACTED]`, as stderr has always shown it (tester 50 F4:
/// `--token KEY` was printed whole on stdout); as written when it is one plain line, else
/// quoted as outside text is ([`quoted_with`]: escaped, on one line, cut), so a line feed in
/// it never starts a line that passes for ctxconsole's (tester 50 F12).
fn shown_command(command_line: &str, secrets: &Secrets, mark: char) -> String {
    let redacted = secrets.text(command_line);
    match crate::core::terminal_text::plain_or_quoted(&redacted) {
        std::borrow::Cow::Borrowed(plain) if !plain.contains(mark) => {
            format!("{mark}{plain}{mark}")
        }
        _ => quoted_with(&redacted, mark),
    }
}

/// Start `command_line`, list all its tools, stop it and everything it started. A command
/// line that cannot be split is bad input (exit 2); a server that does not start, does not
/// speak MCP, fails or takes too long is a runtime failure (exit 1) naming the command
/// ([`server_name`]). The environment variables named in `withheld` (the providers' key
/// variables) and ctxconsole's own MCP bearer token ([`TOKEN_ENV`]) are not passed to it:
/// an MCP server is outside code and has no business with the keys (tester 50 F5: the
/// token was passed).
///
/// [`TOKEN_ENV`]: crate::core::config::MCP_TOKEN_ENV
pub async fn import_tools(
    command_line: &str,
    timeout: Duration,
    withheld: &[String],
) -> anyhow::Result<ImportedCatalog> {
    let secrets = withheld_secrets(withheld);
    let words = split_command(command_line).map_err(|e| {
        bad_input(format!(
            "--mcp {} {e}",
            shown_command(command_line, &secrets, '"')
        ))
    })?;
    let origin = named(command_line, &secrets);
    let mut command = tokio::process::Command::new(&words[0]);
    for name in withheld
        .iter()
        .map(String::as_str)
        .chain([crate::core::config::MCP_TOKEN_ENV])
    {
        command.env_remove(name);
    }
    let mut child = command
        .args(&words[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| anyhow::anyhow!("{origin} did not start: {e}"))?;
    // Declared after the child, so dropped before it: the group dies before the child is
    // reaped, while its id cannot yet name another process.
    let group = ServerGroup::of(&child);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        anyhow::bail!("{origin} started without its standard streams");
    };
    let stderr_task = tokio::spawn(last_of_stderr(stderr));
    let lines = Arc::new(Lines::default());
    let (relayed, stdout_for_rmcp) = tokio::io::duplex(64 * 1024);
    let stdout_task = tokio::spawn(relay(stdout, relayed, Arc::clone(&lines)));
    let (requests, stdin_for_rmcp) = tokio::io::duplex(64 * 1024);
    tokio::spawn(relay_requests(requests, stdin, Arc::clone(&lines)));
    // What the server was last asked, for an answer the transport drops.
    let asked = Mutex::new("initialize");
    let listing = async {
        let client =
            ().serve((stdout_for_rmcp, stdin_for_rmcp))
                .await
                .map_err(|e| {
                    use rmcp::service::ClientInitializeError as E;
                    let silent = matches!(e, E::ConnectionClosed(_) | E::TransportError { .. });
                    Failure::new(
                        format!(
                            "did not complete the MCP handshake: {}",
                            handshake_failure(&e)
                        ),
                        silent,
                    )
                })?;
        if let Ok(mut a) = asked.lock() {
            *a = "tools/list";
        }
        let tools = list_all_tools(&client).await;
        let _ = client.cancel().await;
        tools
    };
    let failure = tokio::select! {
        // A listing complete is never failed by what follows it (nothing after the last
        // answer is refused either: no answer is awaited then).
        biased;
        listed = tokio::time::timeout(timeout, listing) => match listed {
            Ok(Ok(tools)) => {
                let json = serde_json::json!({ "tools": tools });
                // What the server listed is not the user's input: a bad field in it is a
                // runtime failure (exit 1), as any other fault of the server's is.
                let mut catalog = parse_catalog(&json.to_string(), &origin)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                catalog.warnings.extend(lines.skipped_note(&origin));
                return Ok(catalog);
            }
            Ok(Err(e)) => e,
            Err(_) => {
                let still = match lines.current() {
                    n if n > MESSAGE_MAX => format!(
                        " (it was still sending a message of more than {}, over the {} an MCP message may be: the transport would drop it)",
                        megabytes(n),
                        MESSAGE_LIMIT
                    ),
                    _ => String::new(),
                };
                let text = format!(
                    "did not answer within {}{still}",
                    crate::core::duration::describe(timeout)
                );
                // A reply to an id never asked says more than the silence (tester 49 F3).
                match lines.unasked.lock().ok().and_then(|u| u.clone()) {
                    Some(Unasked { line, id }) => Failure::new(
                        format!(
                            "{text} (it answered id {id}, which was never asked, line {line} of its stdout)"
                        ),
                        false,
                    ),
                    None => Failure::silent(text),
                }
            }
        },
        refused = lines.refused() => Failure::new(refused.describe(asked.lock().map(|a| *a).unwrap_or("tools/list")), false),
        signal = stop_signal() => return Err(anyhow::Error::new(signal)),
    };
    // A message the transport cannot read may also have failed the listing (or the
    // handshake) before that was seen: the cause is said, not its effect.
    let refused = lines.refused_now();
    let failure = match &refused {
        Some(r) => Failure::new(
            r.describe(asked.lock().map(|a| *a).unwrap_or("tools/list")),
            false,
        ),
        None => failure,
    };
    // Ending the group closes its pipes: what it wrote is then read to the end at once.
    drop(group);
    let grace = Duration::from_millis(500);
    let (_, said) = tokio::join!(
        tokio::time::timeout(grace, stdout_task),
        tokio::time::timeout(grace, stderr_task)
    );
    // Whatever it wrote that was not JSON-RPC, the first such line quoted (tester 48 F4: the
    // opening of its whole stdout was, the good initialize answer), explains a silence (a
    // timeout, a server gone) better than the silence does; beside a failure of the server's
    // own it is context, not the failure (review 49 L1: a banner hid a tools/list error).
    let failure = match lines.stray_first().filter(|_| refused.is_none()) {
        Some(stray) => failure.beside(&stray),
        None => failure.text,
    };
    let said = said
        .ok()
        .and_then(Result::ok)
        .flatten()
        .map(|l| format!(" (its stderr: {})", quoted_with(&l, '"')))
        .unwrap_or_default();
    Err(anyhow::anyhow!("{origin} {failure}{said}"))
}

/// Why the import failed, and whether the server said so itself: a failure without its word
/// (a timeout, the server gone) is better explained by a line it wrote that is not JSON-RPC.
#[derive(Debug)]
struct Failure {
    text: String,
    silent: bool,
}

impl Failure {
    fn new(text: String, silent: bool) -> Failure {
        Failure { text, silent }
    }

    fn silent(text: String) -> Failure {
        Failure::new(text, true)
    }

    /// The failure said with the first line on stdout that is not JSON-RPC: that line
    /// instead of a silence, beside anything else.
    fn beside(self, stray: &Stray) -> String {
        if self.silent {
            stray.failure()
        } else {
            format!("{} ({})", self.text, stray.context())
        }
    }
}

/// [`MESSAGE_MAX`] as errors write it.
const MESSAGE_LIMIT: &str = "16 MiB";

/// A message size in MB, to one decimal.
fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Every page of `tools/list`. rmcp's own `list_all_tools` asks again for as long as a
/// cursor comes back: an empty one (which some servers send for "no more") or one repeated
/// had it ask until the timeout. Here an empty cursor ends the list, and a cursor seen
/// before, or more than [`PAGES_MAX`] pages, is a pagination loop, reported at once.
///
/// Each page is read as JSON, not as rmcp's typed `ListToolsResult` (tester 49 F2: a tool
/// without `inputSchema` failed as rmcp's bare "Unexpected response type"): its tools are
/// then read by [`parse_catalog`], as a `--catalog` file is, and a page that is no tools list
/// is said in words ([`page_tools`]).
async fn list_all_tools(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
) -> Result<Vec<serde_json::Value>, Failure> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut cursors = std::collections::HashSet::new();
    for page in 1..=PAGES_MAX {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take());
        let which = if page > 1 {
            format!(" (page {page})")
        } else {
            String::new()
        };
        let request = rmcp::model::ClientRequest::ListToolsRequest(
            rmcp::model::ListToolsRequest::with_param(params),
        );
        let result = client.send_request(request).await.map_err(|e| {
            let silent = matches!(
                e,
                rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
            );
            Failure::new(
                format!("failed tools/list{which}: {}", service_error(&e)),
                silent,
            )
        })?;
        let (listed, next_cursor) = serde_json::to_value(&result)
            .map_err(|e| e.to_string())
            .and_then(page_tools)
            .map_err(|e| {
                Failure::new(
                    format!("answered tools/list{which} with no tools list: {e}"),
                    false,
                )
            })?;
        tools.extend(listed);
        match next_cursor {
            None => return Ok(tools),
            Some(c) if c.is_empty() => return Ok(tools),
            Some(c) => {
                if !cursors.insert(c.clone()) {
                    return Err(Failure::new(
                        format!(
                            "is in a pagination loop: tools/list page {page} gave the cursor {} again",
                            quote_cursor(&c)
                        ),
                        false,
                    ));
                }
                cursor = Some(c);
            }
        }
    }
    Err(Failure::new(
        format!(
            "is in a pagination loop: tools/list still gave a next cursor after {PAGES_MAX} pages ({} tools)",
            tools.len()
        ),
        false,
    ))
}

/// What failed the handshake, in words: for an answer that is no initialize result, which
/// of its fields it lacks (tester 49 F2: rmcp says it in Rust debug text,
/// `Some(EmptyResult(EmptyObject))`).
fn handshake_failure(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    const FIELDS: [&str; 3] = ["protocolVersion", "capabilities", "serverInfo"];
    match e {
        E::ExpectedInitResult(None) => "it answered initialize with no result".to_string(),
        E::ExpectedInitResult(Some(result)) => match serde_json::to_value(result) {
            Ok(serde_json::Value::Object(fields)) => {
                let missing: Vec<String> = FIELDS
                    .iter()
                    .filter(|f| !fields.contains_key(**f))
                    .map(|f| format!("'{f}'"))
                    .collect();
                match missing.as_slice() {
                    [] => "its initialize result has a field of the wrong type (protocolVersion, capabilities or serverInfo)".to_string(),
                    [one] => format!("its initialize result has no {one}"),
                    [init @ .., last] => format!(
                        "its initialize result has no {} or {last}",
                        init.join(", ")
                    ),
                }
            }
            Ok(serde_json::Value::Null) => "its initialize result is null".to_string(),
            _ => "its initialize result is not an object".to_string(),
        },
        E::ExpectedInitResponse(_) => {
            "it sent something other than an answer to initialize".to_string()
        }
        E::JsonRpcError(error) => error_data(error),
        E::ConflictInitResponseId(expected, got)
        | E::UncorrelatedErrorResponse {
            expected,
            received: got,
        } => {
            format!(
                "it answered id {} where {} was asked",
                request_id(got),
                request_id(expected)
            )
        }
        E::NoCompatibleProtocolVersion {
            server_supported, ..
        } => {
            let offered: Vec<String> = server_supported
                .iter()
                .take(3)
                .map(|v| quoted_with(&v.to_string(), '"'))
                .collect();
            format!(
                "it offers no protocol version this client speaks ({})",
                offered.join(", ")
            )
        }
        other => other.to_string(),
    }
}

/// A request's failure as rmcp gives it, with the server's own error said by
/// [`error_data`] (tester 50 F11: rmcp's words print its message whole, 2 MB of it).
fn service_error(e: &rmcp::ServiceError) -> String {
    match e {
        rmcp::ServiceError::McpError(error) => error_data(error),
        other => other.to_string(),
    }
}

/// A JSON-RPC error a server answered, as every failure here says one: its code and its
/// message (and data, if any) quoted as all outside text is, escaped and cut
/// (`error -32603 "db down"`).
fn error_data(error: &rmcp::model::ErrorData) -> String {
    let data = error
        .data
        .as_ref()
        .map(|d| format!(" (data: {})", quoted_value(d)))
        .unwrap_or_default();
    format!(
        "error {} {}{data}",
        error.code.0,
        quoted_with(&error.message, '"')
    )
}

/// A request id from the server, quoted as a JSON value is.
fn request_id(id: &rmcp::model::RequestId) -> String {
    serde_json::to_value(id)
        .map(|v| quoted_value(&v))
        .unwrap_or_else(|_| "?".to_string())
}

/// The tools and next cursor of one `tools/list` result, as JSON; what makes it no tools
/// list said in words (`its result is null`, `its 'tools' is a string, not an array`).
fn page_tools(
    result: serde_json::Value,
) -> Result<(Vec<serde_json::Value>, Option<String>), String> {
    use crate::core::json_keys::kind;
    use serde_json::Value;
    let Value::Object(mut page) = result else {
        return Err(match &result {
            Value::Null => "its result is null".to_string(),
            other => format!("its result is {}, not an object", kind(other)),
        });
    };
    let tools = match page.remove("tools") {
        Some(Value::Array(tools)) => tools,
        Some(other) => return Err(format!("its 'tools' is {}, not an array", kind(&other))),
        None => return Err("its result has no 'tools'".to_string()),
    };
    let cursor = match page.remove("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c),
        Some(other) => {
            return Err(format!(
                "its 'nextCursor' is {}, not a string",
                kind(&other)
            ));
        }
    };
    Ok((tools, cursor))
}

/// A server's cursor, quoted short with every control character escaped.
fn quote_cursor(cursor: &str) -> String {
    const SHOWN: usize = 40;
    let head = crate::core::text::opening(cursor, SHOWN);
    let more = if head.len() < cursor.len() { "…" } else { "" };
    format!("\"{}\"{more}", head.escape_debug())
}

/// A message on the server's stdout the transport cannot read, seen by the relay as it
/// passes: rmcp's stdio transport drops a line over [`MESSAGE_MAX`] (logging it, telling the
/// client nothing), and serde_json refuses one nested deeper than [`JSON_DEPTH_MAX`], so
/// either would leave the import to time out or fail on something else.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refused {
    /// A line of this many bytes.
    TooLong(usize),
    /// Where (1-based, on its stdout) a message went one level past the reader's limit.
    TooDeep { line: usize, column: usize },
    /// A whole line that is a JSON object but no JSON-RPC message (no `"jsonrpc": "2.0"`),
    /// which the transport drops, quoted: said at once when it is, or may be, the answer
    /// awaited (tester 48 F4: the import had waited its whole timeout), skipped otherwise
    /// (review 49 M1: a pino log line `{"level":30,…}` had failed the import).
    NotJsonRpc { line: usize, quote: String },
    /// A JSON-RPC reply under no id (or `"id": null`) while an answer is awaited, which the
    /// transport drops: typically an error for a request the server could not read
    /// (tester 49 F3), quoted.
    NoId {
        line: usize,
        error: bool,
        quote: String,
    },
    /// A JSON-RPC message under the id of a request awaited with neither `result` nor
    /// `error`, which the transport drops: the id quoted.
    NoResult { line: usize, id: String },
    /// A reply under the id of a request awaited that the transport's typed reader refuses,
    /// and so drops without a word (tester 50 F2: text that is not UTF-8, a raw tab in a
    /// string, a lone surrogate, a key given twice, an error's code that is a string, an
    /// error without its message, a result and an error both): the id quoted, where, and
    /// why ([`Unread`]).
    Unreadable {
        line: usize,
        id: String,
        unread: Unread,
    },
}

/// Why the transport would not read a line as a message: said in the words every JSON
/// reader here uses ([`CoreError::json`], [`CoreError::utf8`]), with the column of the line
/// where the reader stopped when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unread {
    column: Option<usize>,
    why: String,
}

/// Why rmcp's stdio transport would not read `line` (one line of the server's stdout, its
/// newline taken off) as a message — it reads it as `serde_json::from_slice` into its typed
/// message after taking off a final `\r` and a leading byte order mark, and drops what that
/// refuses, telling the client nothing — or `None` when it reads it. Each answer awaited is
/// put through the same reader, so that what it drops is said at once, not waited out.
fn unread_by_transport(line: &[u8]) -> Option<Unread> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // rmcp's reader skips a byte-order mark at a line's start.
    let line = line
        .strip_prefix(crate::core::text::UTF8_BOM)
        .unwrap_or(line);
    let refusal = serde_json::from_slice::<rmcp::model::ServerJsonRpcMessage>(line).err()?;
    Some(why_unread(line, &refusal))
}

/// Why the transport refused `line` with `refusal`, in words: the text first (not UTF-8, not
/// JSON: a raw control character in a string, a lone surrogate), then the JSON-RPC envelope
/// ([`envelope_fault`]), then a key given twice, and else the typed reader's own words.
fn why_unread(line: &[u8], refusal: &serde_json::Error) -> Unread {
    const WHERE: &str = "its stdout";
    let said = |e: CoreError| match e {
        CoreError::Syntax {
            column, message, ..
        } => Unread {
            column: Some(column),
            why: message,
        },
        other => Unread {
            column: None,
            why: other.to_string(),
        },
    };
    let said_plain = |why: String| Unread { column: None, why };
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return said(CoreError::utf8(WHERE, line, &e)),
    };
    let message = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(message) => message,
        Err(e) => return said(CoreError::json(WHERE, text, &e)),
    };
    if let Some(why) = envelope_fault(&message) {
        return said_plain(why);
    }
    if let Some(path) = crate::core::json_keys::first_repeated_key(line) {
        return said_plain(format!(
            "{} is given twice",
            quoted_with(&crate::core::json_keys::dotted(&path), '`')
        ));
    }
    // The reply its keys make it, read alone, names the field it stops at.
    let typed = if message.get("error").is_some() {
        serde_json::from_str::<rmcp::model::JsonRpcError>(text).err()
    } else {
        serde_json::from_str::<rmcp::model::JsonRpcResponse<rmcp::model::ServerResult>>(text).err()
    };
    said(CoreError::json(
        WHERE,
        text,
        typed.as_ref().unwrap_or(refusal),
    ))
}

/// What makes a JSON-RPC reply no reply the transport reads, at its envelope: a `result` and
/// an `error` both, or an error that is not `{"code": <32-bit integer>, "message": <string>}`.
fn envelope_fault(message: &serde_json::Value) -> Option<String> {
    use crate::core::json_keys::kind;
    use serde_json::Value;
    if message.get("result").is_some() && message.get("error").is_some() {
        return Some("it has both a result and an error".to_string());
    }
    let error = match message.get("error")? {
        Value::Object(error) => error,
        other => return Some(format!("its error is {}, not an object", kind(other))),
    };
    match error.get("code") {
        None => return Some("its error has no code".to_string()),
        Some(code @ Value::Number(_))
            if code.as_i64().and_then(|c| i32::try_from(c).ok()).is_none() =>
        {
            return Some(format!(
                "its error's code {} is not an integer of 32 bits",
                quoted_value(code)
            ));
        }
        Some(Value::Number(_)) => {}
        Some(other) => {
            return Some(format!(
                "its error's code is {}, not an integer",
                kind(other)
            ));
        }
    }
    match error.get("message") {
        None => Some("its error has no message".to_string()),
        Some(Value::String(_)) => None,
        Some(other) => Some(format!(
            "its error's message is {}, not a string",
            kind(other)
        )),
    }
}

impl Refused {
    /// The failure, for the request the server was answering.
    fn describe(&self, asked: &str) -> String {
        match *self {
            Refused::TooLong(bytes) => format!(
                "answered {asked} with a message of {}, over the {} an MCP message may be (the transport drops it)",
                megabytes(bytes),
                MESSAGE_LIMIT
            ),
            Refused::TooDeep { line, column } => format!(
                "answered {asked} with a message {} (line {line}, column {column} of its stdout)",
                too_deep()
            ),
            Refused::NotJsonRpc { line, ref quote } => format!(
                "wrote something that is not JSON-RPC on its stdout (line {line}, a JSON object \
                 without \"jsonrpc\": \"2.0\"): {quote}"
            ),
            Refused::NoId {
                line,
                error,
                ref quote,
            } => format!(
                "answered {asked} with {} under no id (line {line} of its stdout): {quote}",
                if error { "an error" } else { "a result" }
            ),
            Refused::NoResult { line, ref id } => format!(
                "answered {asked} (id {id}) with neither result nor error (line {line} of its stdout)"
            ),
            Refused::Unreadable {
                line,
                ref id,
                ref unread,
            } => {
                let column = unread
                    .column
                    .map(|c| format!(", column {c}"))
                    .unwrap_or_default();
                format!(
                    "answered {asked} (id {id}) with a message the transport cannot read \
                     (line {line}{column} of its stdout): {}",
                    unread.why
                )
            }
        }
    }
}

/// A JSON-RPC reply under an id the client never asked, while an answer was awaited: the
/// transport drops it, and it explains a timeout (tester 49 F3). The id quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unasked {
    line: usize,
    id: String,
}

/// A line of the server's stdout that is no JSON-RPC message the transport skips (no JSON
/// at all: a banner, a prompt; or a JSON object without `"jsonrpc": "2.0"` that is not the
/// answer awaited: a structured log line): where, quoted
/// ([`crate::core::terminal_text::quoted_opening`]). It fails nothing by itself; it explains
/// a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stray {
    /// 1-based, on its stdout.
    line: usize,
    quote: String,
    /// Whether it is a JSON object (without `"jsonrpc": "2.0"`).
    object: bool,
}

/// How a JSON object that is no JSON-RPC message is said, after the line it is on.
const NO_JSONRPC: &str = r#"a JSON object without "jsonrpc": "2.0""#;

impl Stray {
    /// As the failure: `wrote something that is not JSON-RPC on its stdout (line 2): "…"`.
    fn failure(&self) -> String {
        let Stray { line, quote, .. } = self;
        match self.object {
            true => format!(
                "wrote something that is not JSON-RPC on its stdout (line {line}, {NO_JSONRPC}): {quote}"
            ),
            false => {
                format!("wrote something that is not JSON-RPC on its stdout (line {line}): {quote}")
            }
        }
    }

    /// Beside another failure: `it also wrote … on its stdout, line 1: "…"`.
    fn context(&self) -> String {
        let Stray { line, quote, .. } = self;
        let what = if self.object {
            format!(", {NO_JSONRPC}")
        } else {
            String::new()
        };
        format!(
            "it also wrote something that is not JSON-RPC on its stdout, line {line}{what}: {quote}"
        )
    }
}

/// The most of a message's top level kept to tell what it is ([`Scan::skeleton`]).
const SKELETON_MAX: usize = 64 * 1024;
/// The longest line the client writes that is read for the id of its request.
const REQUEST_READ_MAX: usize = 1024 * 1024;

/// What a message the server wrote is not, when it is not the answer awaited.
const NOTIFICATION: &str = "a notification";
const OWN_REQUEST: &str = "a request of its own";
const OTHER_REPLY: &str = "a reply to an id it was not asked";
const ANSWERED_AGAIN: &str = "a second reply to an id already answered";
const NONE_AWAITED: &str = "a message while no answer was awaited";
/// A JSON object with none of a message's keys (`method`, `id`, `result`, `error`).
const NO_MESSAGE: &str = "neither request, notification nor reply";

/// What a message the transport cannot read is, from its top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// A reply to an id the client asked: the answer awaited.
    Answer,
    /// Nothing at its top level says what it is: it may be the answer.
    Unknown,
    /// Not the answer: [`NOTIFICATION`], [`OWN_REQUEST`], [`OTHER_REPLY`],
    /// [`ANSWERED_AGAIN`] or [`NONE_AWAITED`].
    Other(&'static str),
}

/// A message the transport cannot read that is not the answer awaited: the transport drops
/// it, and so the import goes on; said once it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Skipped {
    what: &'static str,
    why: Refused,
}

impl Skipped {
    fn describe(&self) -> String {
        match self.why {
            Refused::TooLong(bytes) => format!(
                "{} of {}, over the {} an MCP message may be",
                self.what,
                megabytes(bytes),
                MESSAGE_LIMIT
            ),
            Refused::TooDeep { line, column } => format!(
                "{}, {} (line {line}, column {column} of its stdout)",
                self.what,
                too_deep()
            ),
            Refused::NotJsonRpc { line, ref quote } => format!(
                "{} (line {line} of its stdout, {NO_JSONRPC}): {quote}",
                self.what
            ),
            Refused::NoId { .. } | Refused::NoResult { .. } | Refused::Unreadable { .. } => {
                format!("{}: {}", self.what, self.why.describe("a request"))
            }
        }
    }
}

/// What the relay makes of a line the transport cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// It is, or may be, the answer awaited: the request fails, saying why.
    Refuse(Refused),
    /// It is something else: skipped (and, when it is a JSON object without `"jsonrpc":
    /// "2.0"`, said if the import fails, as a [`Stray`] is).
    Skip(Skipped),
    /// A line that is no JSON: skipped by the transport, and said if the import fails.
    Stray(Stray),
    /// A JSON-RPC reply to an id never asked: dropped by the transport, and said if the
    /// import times out.
    Unasked(Unasked),
}

/// The ids of the client's requests (as JSON text), and those the server answered: a
/// request asked and not answered is awaited.
#[derive(Default)]
struct Requests {
    asked: HashSet<String>,
    answered: HashSet<String>,
    /// Whether a line the client wrote was too long to read for its id: then an answer may
    /// be awaited whatever the ids say.
    unread: bool,
}

impl Requests {
    /// Whether an answer to any request is awaited.
    fn awaiting(&self) -> bool {
        self.unread || self.asked.iter().any(|id| !self.answered.contains(id))
    }
}

/// Where the relay is in the server's stdout: the line, the nesting of the message, and
/// the message's top level, to tell the answer awaited from anything else the server says.
#[derive(Default)]
struct Scan {
    /// Lines ended so far.
    line: usize,
    /// Bytes into the current line.
    column: usize,
    nesting: crate::core::response::JsonNesting,
    /// Whether the line begins as a JSON-RPC message does, with `{` (unknown until its
    /// first byte that is not white space). Only such lines are measured: a banner full of
    /// brackets is garbage, said as such.
    object: Option<bool>,
    /// The message's top level as read so far, every nested value written `0`
    /// (`{"jsonrpc":"2.0","method":"notifications/message","params":0}`): at most
    /// [`SKELETON_MAX`] bytes, `cut` past that.
    skeleton: Vec<u8>,
    cut: bool,
    /// Where the line first went past the reader's depth, while what it is stays open.
    deep: Option<(usize, usize)>,
    /// Whether the line was already refused or skipped.
    settled: bool,
    /// The line's first [`LINE_HEAD_KEPT`] bytes, to quote it.
    head: Vec<u8>,
    /// The whole line from its `{`, up to [`MESSAGE_MAX`] (a longer one is refused as
    /// such): an answer awaited is read as the transport reads it ([`unread_by_transport`]).
    body: Vec<u8>,
}

impl Scan {
    /// Read `bytes` of stdout; what it makes of each line the transport cannot read, as
    /// soon as it can tell, noting each answer the transport reads in `asked`.
    /// Messages are one per line, and a raw newline cannot be inside a JSON string.
    fn read(&mut self, bytes: &[u8], asked: &mut Requests) -> Vec<Verdict> {
        let mut verdicts = Vec::new();
        for &b in bytes {
            self.column += 1;
            if b == b'\n' {
                verdicts.extend(self.line_end(asked));
                *self = Scan {
                    line: self.line + 1,
                    ..Scan::default()
                };
                continue;
            }
            if self.head.len() < LINE_HEAD_KEPT {
                self.head.push(b);
            }
            if self.object.is_none() && !b.is_ascii_whitespace() {
                self.object = Some(b == b'{');
            }
            if self.object != Some(true) {
                continue;
            }
            if self.body.len() < MESSAGE_MAX {
                self.body.push(b);
            }
            let before = self.nesting.depth();
            let opened = self.nesting.byte(b);
            self.keep(before, b);
            if opened.is_some_and(|d| d > JSON_DEPTH_MAX) && self.deep.is_none() && !self.settled {
                let (line, column) = (self.line + 1, self.column);
                self.deep = Some((line, column));
                let why = Refused::TooDeep { line, column };
                // Settled at once when its top level so far is sure: a reply to an id asked
                // (the answer: fail now), or a message with a method (never an answer).
                // Anything else waits for the line's end, where the rest of it is known.
                match self.sent(asked, false) {
                    Sent::Answer => {
                        self.settled = true;
                        verdicts.push(Verdict::Refuse(why));
                    }
                    Sent::Other(what) if what == NOTIFICATION || what == OWN_REQUEST => {
                        self.settled = true;
                        verdicts.push(Verdict::Skip(Skipped { what, why }));
                    }
                    _ => {}
                }
            }
        }
        verdicts
    }

    /// Keep byte `b` of the top level (read at depth `before`) in the skeleton.
    fn keep(&mut self, before: usize, b: u8) {
        let kept = match (before, self.nesting.depth()) {
            (0 | 1, 0 | 1) => b,
            (1, 2) => b'0',
            _ => return,
        };
        if self.skeleton.len() < SKELETON_MAX {
            self.skeleton.push(kept);
        } else {
            self.cut = true;
        }
    }

    /// At a line's end: a line too deep or too long for the transport that was not settled
    /// yet fails the request unless its top level says it is not the answer; one the
    /// transport reads is looked at for what is not JSON-RPC ([`Self::not_json_rpc`]), and
    /// so is a long line that does not begin as a message does: a banner is garbage, said
    /// as such, not an answer too long (tester 50 F2: a 17 MB banner was "answered
    /// tools/list with a message of 17.8 MB").
    fn line_end(&self, asked: &mut Requests) -> Option<Verdict> {
        if self.settled {
            return None;
        }
        let why = match self.deep {
            Some((line, column)) => Refused::TooDeep { line, column },
            None if self.column > MESSAGE_MAX && self.object == Some(true) => {
                Refused::TooLong(self.column)
            }
            None => return self.not_json_rpc(self.column - 1, asked),
        };
        Some(match self.sent(asked, true) {
            Sent::Other(what) => Verdict::Skip(Skipped { what, why }),
            Sent::Answer | Sent::Unknown => Verdict::Refuse(why),
        })
    }

    /// The line of `length` bytes (its newline not counted) when it is not JSON-RPC, and an
    /// answer when it is one (noted in `asked`). A JSON object without `"jsonrpc": "2.0"`,
    /// which the transport drops, fails the request only when it is, or may be, the answer
    /// awaited (its id asked, or a `result` or `error` and no id nor method while an answer
    /// is awaited: tester 48 F4); anything else (a log line `{"level":30,…}`, a notification
    /// lacking `jsonrpc`) is skipped (review 49 M1). No JSON at all is a stray line, which
    /// the transport skips. A line whose top level was cut, or blank, is not judged.
    fn not_json_rpc(&self, length: usize, asked: &mut Requests) -> Option<Verdict> {
        let line = self.line + 1;
        let stray = || {
            Some(Verdict::Stray(Stray {
                line,
                quote: self.quote(length),
                object: false,
            }))
        };
        match self.object? {
            false => stray(),
            true if self.cut => None,
            true => match serde_json::from_slice::<serde_json::Value>(&self.skeleton) {
                Ok(serde_json::Value::Object(top)) => {
                    if top.get("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0") {
                        return self.json_rpc(&top, length, asked);
                    }
                    let why = Refused::NotJsonRpc {
                        line,
                        quote: self.quote(length),
                    };
                    let reply = top.contains_key("result") || top.contains_key("error");
                    Some(match self.sent(asked, true) {
                        Sent::Answer => Verdict::Refuse(why),
                        Sent::Unknown if reply => Verdict::Refuse(why),
                        Sent::Unknown => Verdict::Skip(Skipped {
                            what: NO_MESSAGE,
                            why,
                        }),
                        Sent::Other(what) => Verdict::Skip(Skipped { what, why }),
                    })
                }
                Ok(_) => None,
                Err(_) => stray(),
            },
        }
    }

    /// A JSON-RPC message of `length` bytes, read by the transport when it is well formed:
    /// an answer is noted in `asked`. One the transport drops while an answer is awaited is
    /// said (tester 49 F3: the import had waited its whole timeout): a reply under no id
    /// (`"id": null`) or one with neither `result` nor `error` under the id awaited fails the
    /// request; a reply under an id never asked is kept to explain a timeout.
    fn json_rpc(
        &self,
        top: &serde_json::Map<String, serde_json::Value>,
        length: usize,
        asked: &mut Requests,
    ) -> Option<Verdict> {
        let line = self.line + 1;
        if top.contains_key("method") {
            return None;
        }
        let reply = top.contains_key("result") || top.contains_key("error");
        let awaiting = asked.awaiting();
        match top.get("id").filter(|id| !id.is_null()) {
            None if reply && awaiting => Some(Verdict::Refuse(Refused::NoId {
                line,
                error: top.contains_key("error"),
                quote: self.error_said().unwrap_or_else(|| self.quote(length)),
            })),
            None => None,
            Some(id) => {
                let key = id.to_string();
                let open = asked.asked.contains(&key) && !asked.answered.contains(&key);
                let never = !asked.asked.contains(&key);
                asked.answered.insert(key);
                match (open, never) {
                    (true, _) if !reply => Some(Verdict::Refuse(Refused::NoResult {
                        line,
                        id: crate::core::terminal_text::quoted_value(id),
                    })),
                    // The answer awaited: read as the transport reads it, which drops what it
                    // cannot read without a word (tester 50 F2).
                    (true, _) => unread_by_transport(&self.body).map(|unread| {
                        Verdict::Refuse(Refused::Unreadable {
                            line,
                            id: crate::core::terminal_text::quoted_value(id),
                            unread,
                        })
                    }),
                    (false, true) if awaiting => Some(Verdict::Unasked(Unasked {
                        line,
                        id: crate::core::terminal_text::quoted_value(id),
                    })),
                    _ => None,
                }
            }
        }
    }

    /// The code and message of the error answer on this line, when all of it was kept:
    /// `-32600 "Invalid Request"`, the message quoted.
    fn error_said(&self) -> Option<String> {
        let message: serde_json::Value = serde_json::from_slice(&self.head).ok()?;
        let error = message.get("error")?;
        let text = error.get("message")?;
        Some(
            match error.get("code").and_then(serde_json::Value::as_i64) {
                Some(code) => format!("{code} {}", crate::core::terminal_text::quoted_value(text)),
                None => crate::core::terminal_text::quoted_value(text),
            },
        )
    }

    /// The line read so far when it is not even begun as a JSON object: the last one, which
    /// ended without a newline.
    fn unended_stray(&self) -> Option<Stray> {
        (self.object == Some(false)).then(|| Stray {
            line: self.line + 1,
            quote: self.quote(self.column),
            object: false,
        })
    }

    /// The line, of `length` bytes, quoted from its kept opening.
    fn quote(&self, length: usize) -> String {
        crate::core::terminal_text::quoted_opening(
            &self.head,
            length.saturating_sub(self.head.len()),
            '"',
        )
    }

    /// What the message is, from its top level (`ended`: all of it was read). Once every
    /// request is answered, nothing can be the answer awaited.
    fn sent(&self, asked: &Requests, ended: bool) -> Sent {
        if self.cut {
            return Sent::Unknown;
        }
        let mut text = self.skeleton.clone();
        if !ended {
            text.push(b'}');
        }
        let Ok(serde_json::Value::Object(top)) = serde_json::from_slice(&text) else {
            return Sent::Unknown;
        };
        match (top.get("method"), top.get("id").map(|id| id.to_string())) {
            (Some(_), Some(_)) => Sent::Other(OWN_REQUEST),
            (Some(_), None) => Sent::Other(NOTIFICATION),
            (None, Some(id)) if asked.answered.contains(&id) => Sent::Other(ANSWERED_AGAIN),
            (None, Some(id)) if asked.asked.contains(&id) => Sent::Answer,
            (None, Some(_)) => Sent::Other(OTHER_REPLY),
            (None, None) if !asked.awaiting() => Sent::Other(NONE_AWAITED),
            (None, None) => Sent::Unknown,
        }
    }
}

/// The length of the line the server is writing on its stdout, its nesting, the ids the
/// client asked, the first message the transport cannot read that is (or may be) the
/// answer awaited ([`Refused`]), and those skipped as something else.
#[derive(Default)]
struct Lines {
    current: std::sync::atomic::AtomicUsize,
    scan: Mutex<Scan>,
    asked: Mutex<Requests>,
    refused: Mutex<Option<Refused>>,
    refusal: tokio::sync::Notify,
    /// How many messages were skipped, and the first.
    skipped: Mutex<(usize, Option<Skipped>)>,
    /// The first line that is no JSON-RPC message and was skipped.
    stray: Mutex<Option<Stray>>,
    /// The first reply to an id never asked.
    unasked: Mutex<Option<Unasked>>,
}

impl Lines {
    /// Count `bytes` of stdout.
    fn read(&self, bytes: &[u8]) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut current = self.current.load(Relaxed);
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            current = current.saturating_add(piece.len());
            if piece.ends_with(b"\n") {
                current = 0;
            }
        }
        self.current.store(current, Relaxed);
        let verdicts = match (self.scan.lock(), self.asked.lock()) {
            (Ok(mut scan), Ok(mut asked)) => scan.read(bytes, &mut asked),
            _ => Vec::new(),
        };
        for verdict in verdicts {
            match verdict {
                Verdict::Refuse(why) => self.refuse(why),
                Verdict::Skip(skipped) => {
                    if let Refused::NotJsonRpc { line, quote } = &skipped.why {
                        self.strayed(Stray {
                            line: *line,
                            quote: quote.clone(),
                            object: true,
                        });
                    }
                    if let Ok(mut s) = self.skipped.lock() {
                        s.0 += 1;
                        s.1.get_or_insert(skipped);
                    }
                }
                Verdict::Stray(stray) => self.strayed(stray),
                Verdict::Unasked(u) => {
                    if let Ok(mut first) = self.unasked.lock() {
                        first.get_or_insert(u);
                    }
                }
            }
        }
    }

    /// Keep the first line skipped that is no JSON-RPC message.
    fn strayed(&self, stray: Stray) {
        if let Ok(mut s) = self.stray.lock() {
            s.get_or_insert(stray);
        }
    }

    /// Note a line the client wrote: the id of a request (a message with a method and an id).
    fn asked(&self, line: &[u8]) {
        let Ok(serde_json::Value::Object(message)) = serde_json::from_slice(line) else {
            return;
        };
        if let (Some(_), Some(id)) = (message.get("method"), message.get("id"))
            && let Ok(mut asked) = self.asked.lock()
        {
            asked.asked.insert(id.to_string());
        }
    }

    /// Note that a line the client wrote was too long to read for its id.
    fn asked_unread(&self) {
        if let Ok(mut asked) = self.asked.lock() {
            asked.unread = true;
        }
    }

    /// What was skipped, said once: how many, and the first.
    fn skipped_note(&self, origin: &str) -> Option<String> {
        let (n, first) = self.skipped.lock().ok()?.clone();
        let first = first?.describe();
        Some(match n {
            1 => format!(
                "{origin}: skipped a message the transport cannot read, not the answer awaited: {first}"
            ),
            n => format!(
                "{origin}: skipped {n} messages the transport cannot read, none the answer awaited; the first: {first}"
            ),
        })
    }

    /// Keep the first refusal and wake whoever waits for one.
    fn refuse(&self, why: Refused) {
        if let Ok(mut r) = self.refused.lock()
            && r.is_none()
        {
            *r = Some(why);
            self.refusal.notify_one();
        }
    }

    /// The bytes of the line being written, so far.
    fn current(&self) -> usize {
        self.current.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The first refusal, if one has been seen.
    fn refused_now(&self) -> Option<Refused> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }

    /// The first line skipped that is no JSON-RPC message: one ended, else the last,
    /// unended one.
    fn stray_first(&self) -> Option<Stray> {
        let ended = self.stray.lock().ok().and_then(|s| s.clone());
        ended.or_else(|| self.scan.lock().ok().and_then(|s| s.unended_stray()))
    }

    /// [`Self::stray_first`] said as the failure.
    #[cfg(test)]
    fn stray_now(&self) -> Option<String> {
        self.stray_first().map(|s| s.failure())
    }

    /// The first refusal, once one is seen.
    async fn refused(&self) -> Refused {
        loop {
            let waiting = self.refusal.notified();
            if let Some(r) = self.refused_now() {
                return r;
            }
            waiting.await;
        }
    }
}

/// The process group a server was started in, killed whole when this is dropped.
struct ServerGroup(Option<Pid>);

impl ServerGroup {
    fn of(child: &tokio::process::Child) -> ServerGroup {
        // The child leads its own group (`process_group(0)`), so its id is the group's.
        ServerGroup(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
        )
    }
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            // Gone already (ESRCH) is what we want; nothing else can be done here.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

/// The first of Ctrl-C, SIGTERM or SIGHUP sent to the console while a server runs. (If a
/// handler cannot be installed, that signal keeps its default action and this never ends.)
async fn stop_signal() -> Interrupted {
    use tokio::signal::unix::{SignalKind, signal};
    let wait = |kind: SignalKind| async move {
        match signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = wait(SignalKind::interrupt()) => Interrupted::by(Signal::SIGINT as i32),
        _ = wait(SignalKind::terminate()) => Interrupted::by(Signal::SIGTERM as i32),
        _ = wait(SignalKind::hangup()) => Interrupted::by(Signal::SIGHUP as i32),
    }
}

/// Drain the server's stderr (so a chatty server never blocks on a full pipe), keeping the
/// last 64 KB; its last non-empty line explains most failed handshakes.
async fn last_of_stderr(mut err: tokio::process::ChildStderr) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
    while let Ok(n) = err.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 64 * 1024 {
            buf.drain(..buf.len() - 64 * 1024);
        }
    }
    String::from_utf8_lossy(&buf)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// Pass the server's stdout on to rmcp, read by `lines` as it passes, and read it to the
/// end even once rmcp has stopped listening (a server that exits at once after writing
/// garbage has still said something).
async fn relay(
    mut from: tokio::process::ChildStdout,
    mut to: tokio::io::DuplexStream,
    lines: Arc<Lines>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut chunk = [0u8; 8192];
    let mut forwarding = true;
    let mut ended = true;
    while let Ok(n) = from.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        lines.read(&chunk[..n]);
        ended = chunk[..n].ends_with(b"\n");
        if forwarding && to.write_all(&chunk[..n]).await.is_err() {
            forwarding = false;
        }
    }
    // A last line without its newline (a whole answer, then exit: tester 49 F3) is a line:
    // the transport drops an unterminated one at the end of its input.
    if !ended {
        lines.read(b"\n");
        if forwarding {
            let _ = to.write_all(b"\n").await;
        }
    }
}

/// Pass rmcp's messages on to the server's stdin, noting the id of each request before it
/// goes, so that the relay of its stdout knows the answers awaited from anything else.
async fn relay_requests(
    mut from: tokio::io::DuplexStream,
    mut to: tokio::process::ChildStdin,
    lines: Arc<Lines>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut chunk = [0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    // Past REQUEST_READ_MAX a line is passed on but not read.
    let mut unread = false;
    while let Ok(n) = from.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        for piece in chunk[..n].split_inclusive(|&b| b == b'\n') {
            if !unread {
                line.extend_from_slice(piece);
                if line.len() > REQUEST_READ_MAX {
                    unread = true;
                    lines.asked_unread();
                    line.clear();
                }
            }
            if piece.ends_with(b"\n") {
                if !unread {
                    lines.asked(&line);
                }
                line.clear();
                unread = false;
            }
        }
        if to.write_all(&chunk[..n]).await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::is_too_deep;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command("npx -y @mcp/server-memory").unwrap(),
            vec!["npx", "-y", "@mcp/server-memory"]
        );
        assert_eq!(
            split_command(r#"run "a b" 'c d' e\ f"#).unwrap(),
            vec!["run", "a b", "c d", "e f"]
        );
        assert_eq!(split_command("x ''").unwrap(), vec!["x", ""]);
        assert!(split_command("  ").is_err());
        assert!(split_command("a 'b").is_err());
    }

    #[test]
    fn lines_are_measured_across_reads_and_the_first_over_the_limit_is_kept() {
        let lines = Lines::default();
        lines.read(b"{\"jsonrpc\":\"2.0\",\"a\":1}\n{\"b\"");
        assert_eq!(lines.current(), 4);
        let big = vec![b'x'; MESSAGE_MAX];
        lines.read(&big);
        assert_eq!(lines.current(), MESSAGE_MAX + 4);
        assert_eq!(lines.refused_now(), None, "not ended yet");
        lines.read(b"}\n{}\n");
        assert_eq!(lines.current(), 0);
        assert_eq!(lines.refused_now(), Some(Refused::TooLong(MESSAGE_MAX + 6)));
        // A line of exactly the limit, its newline included, is read by the transport.
        let fits = Lines::default();
        let mut line = vec![b'x'; MESSAGE_MAX - 1];
        line.push(b'\n');
        fits.read(&line);
        assert_eq!(fits.refused_now(), None);
        // A long line that does not begin as a message does is a banner: garbage, said as
        // such, not an answer too long (tester 50 F2).
        let banner = Lines::default();
        banner.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        banner.read(&vec![b'x'; MESSAGE_MAX + 10]);
        banner.read(b"\n");
        assert_eq!(banner.refused_now(), None);
        assert_eq!(
            banner.stray_now(),
            Some(format!(
                "wrote something that is not JSON-RPC on its stdout (line 1): \"{}…\" ({} more bytes)",
                "x".repeat(80),
                MESSAGE_MAX + 10 - 80
            ))
        );
        assert_eq!(quote_cursor("a\u{1b}b"), "\"a\\u{1b}b\"");
        assert_eq!(
            quote_cursor(&"c".repeat(50)),
            format!("\"{}\"…", "c".repeat(40))
        );
    }

    /// Tester 6 F11: a tools/list answer nested past the reader's limit was "not JSON-RPC"
    /// (quoting the good initialize answer) or "did not answer" after the whole timeout.
    #[test]
    fn a_message_nested_past_the_readers_limit_is_seen_where_it_goes_too_deep() {
        let lines = Lines::default();
        let ok = format!(
            "{}{}\n",
            "[".repeat(JSON_DEPTH_MAX),
            "]".repeat(JSON_DEPTH_MAX)
        );
        assert!(serde_json::from_str::<serde_json::Value>(&ok).is_ok());
        lines.read(ok.as_bytes());
        // Brackets and quotes inside strings do not count; an escaped quote ends none.
        lines.read(br#"{"jsonrpc":"2.0","a":"[[[{{{\"[[[","b":[]}"#);
        lines.read(b"\n");
        assert_eq!(lines.refused_now(), None);
        let deep = format!("{{\"x\":{}", "{\"p\":".repeat(200));
        let (head, tail) = deep.split_at(300);
        lines.read(head.as_bytes());
        lines.read(tail.as_bytes());
        let err = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(is_too_deep(&err));
        // Nothing at its top level says what it is until the line ends: then it may be the
        // answer, and fails the request, where it went too deep.
        assert_eq!(lines.refused_now(), None);
        lines.read(b"}\n");
        assert_eq!(
            lines.refused_now(),
            Some(Refused::TooDeep {
                line: 3,
                column: err.column()
            })
        );
        assert_eq!(
            Refused::TooDeep { line: 3, column: 7 }.describe("tools/list"),
            format!(
                "answered tools/list with a message {} (line 3, column 7 of its stdout)",
                too_deep()
            )
        );
        // A line that does not begin as a message does is not measured: garbage, said so.
        let banner = Lines::default();
        banner.read(format!("{}\n", "[".repeat(300)).as_bytes());
        assert_eq!(banner.refused_now(), None);
        assert!(banner.stray_now().is_some());
        // A deep line is not taken for garbage, nor is the good answer before it.
        let stdout = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0}}\n{{\"result\":{}\n",
            "[".repeat(200)
        );
        let deep = Lines::default();
        deep.read(stdout.as_bytes());
        assert_eq!(deep.stray_now(), None);
        assert!(matches!(
            deep.refused_now(),
            Some(Refused::TooDeep { line: 2, .. })
        ));
    }

    /// Tester 7 T7-12: a deep notification (or a reply to an id never asked) failed the
    /// request in flight as "answered tools/list with a message nested deeper…". Only a
    /// message that is, or may be, the answer awaited fails it; anything else is skipped.
    #[test]
    fn only_the_answer_awaited_fails_the_request() {
        let deep = format!("{}{}", "[".repeat(140), "]".repeat(140));
        let lines = Lines::default();
        lines.asked(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
        lines.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        // The client's answer to a server's request is no request of its own.
        lines.asked(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        let skipped = [
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{deep}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":999,"result":{{"x":{deep}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{deep}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":"s1","method":"ping","params":{deep}}}"#),
            // The id after the deep part: known at the line's end.
            format!(r#"{{"jsonrpc":"2.0","result":{deep},"id":999}}"#),
        ];
        for line in &skipped {
            lines.read(line.as_bytes());
            lines.read(b"\n");
        }
        assert_eq!(lines.refused_now(), None);
        let note = lines.skipped_note("MCP server `x`").unwrap();
        let column = |text: &str| {
            serde_json::from_str::<serde_json::Value>(text)
                .unwrap_err()
                .column()
        };
        assert_eq!(
            note,
            format!(
                "MCP server `x`: skipped 5 messages the transport cannot read, none the answer awaited; the first: a notification, {} (line 1, column {} of its stdout)",
                too_deep(),
                column(&skipped[0])
            )
        );
        // A reply to an id asked fails the request at once, where it went too deep...
        let answer = Lines::default();
        answer.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let reply = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{deep}"#);
        answer.read(reply.as_bytes());
        assert_eq!(
            answer.refused_now(),
            Some(Refused::TooDeep {
                line: 1,
                column: column(&reply)
            })
        );
        assert_eq!(answer.skipped_note("x"), None);
        // ...and so does one whose top level says nothing, or whose id comes last, at its end.
        for line in [
            format!(r#"{{"jsonrpc":"2.0","result":{deep},"id":1}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{deep}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{deep}}} trailing"#),
        ] {
            let maybe = Lines::default();
            maybe.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            maybe.read(line.as_bytes());
            assert_eq!(maybe.refused_now(), None, "{line}");
            maybe.read(b"\n");
            assert!(
                matches!(maybe.refused_now(), Some(Refused::TooDeep { line: 1, .. })),
                "{line}"
            );
        }
        // A notification over the 16 MiB a message may be is skipped too.
        let long = Lines::default();
        long.read(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":""#);
        long.read(&vec![b'x'; MESSAGE_MAX]);
        long.read(b"\"}}\n");
        assert_eq!(long.refused_now(), None);
        assert!(
            long.skipped_note("x")
                .is_some_and(|n| n.contains("a notification of 16.8 MB, over the 16 MiB")),
            "{:?}",
            long.skipped_note("x")
        );
    }

    /// Tester 49 F3: JSON-RPC replies the transport drops were a silence until the timeout.
    #[test]
    fn json_rpc_replies_the_transport_drops_are_said() {
        let awaiting = || {
            let lines = Lines::default();
            lines.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            lines
        };
        let lines = awaiting();
        lines.read(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad\u001b[2J"}}"#,
        );
        assert_eq!(lines.refused_now(), None, "not ended yet");
        lines.read(b"\n");
        assert_eq!(
            lines
                .refused_now()
                .map(|r| r.describe("tools/list"))
                .as_deref(),
            Some(
                r#"answered tools/list with an error under no id (line 1 of its stdout): -32600 "Bad\x1b[2J""#
            )
        );
        let lines = awaiting();
        lines.read(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n");
        assert_eq!(
            lines.refused_now(),
            Some(Refused::NoResult {
                line: 1,
                id: "1".into()
            })
        );
        let lines = awaiting();
        lines.read(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n");
        assert_eq!(lines.refused_now(), None);
        assert_eq!(
            lines.unasked.lock().unwrap().clone(),
            Some(Unasked {
                line: 1,
                id: "999".into()
            })
        );
        // The answer awaited, and anything once nothing is awaited, is no failure.
        let lines = awaiting();
        lines.read(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
        assert_eq!(lines.refused_now(), None);
        assert_eq!(lines.unasked.lock().unwrap().clone(), None);
    }

    /// Tester 49 F2: a tools/list page is read as JSON, and one that is no tools list is
    /// said in words.
    #[test]
    fn a_tools_list_page_that_is_no_tools_list_is_said_in_words() {
        use serde_json::json;
        assert_eq!(
            page_tools(json!({"tools": [{"name": "t"}], "nextCursor": "p2"})),
            Ok((vec![json!({"name": "t"})], Some("p2".to_string())))
        );
        assert_eq!(
            page_tools(json!({"tools": [], "nextCursor": null})),
            Ok((vec![], None))
        );
        for (page, said) in [
            (json!(null), "its result is null"),
            (json!([1]), "its result is an array, not an object"),
            (
                json!({"tools": "nope"}),
                "its 'tools' is a string, not an array",
            ),
            (json!({}), "its result has no 'tools'"),
            (
                json!({"tools": [], "nextCursor": 2}),
                "its 'nextCursor' is a number, not a string",
            ),
        ] {
            assert_eq!(page_tools(page), Err(said.to_string()));
        }
        let empty = rmcp::service::ClientInitializeError::ExpectedInitResult(Some(
            rmcp::model::ServerResult::empty(()),
        ));
        assert_eq!(
            handshake_failure(&empty),
            "its initialize result has no 'protocolVersion', 'capabilities' or 'serverInfo'"
        );
    }

    /// Lines::read over `stdout`, in one read.
    fn read(stdout: &[u8]) -> Lines {
        let lines = Lines::default();
        lines.read(stdout);
        lines
    }

    #[test]
    fn what_is_not_json_rpc_is_quoted_short_and_escaped() {
        assert_eq!(read(b"{\"jsonrpc\":\"2.0\",\"id\":0}\n").stray_now(), None);
        assert_eq!(read(b"").stray_now(), None);
        assert_eq!(read(b"  \n\n").stray_now(), None);
        assert_eq!(
            read(b"\x1b[2Jhello\n").stray_now().as_deref(),
            Some("wrote something that is not JSON-RPC on its stdout (line 1): \"\\x1b[2Jhello\"")
        );
        // Cut as every quote is, the bytes left out counted, kept or not.
        let long = [b'x'; 2000];
        let quoted = format!(
            "wrote something that is not JSON-RPC on its stdout (line 1): \"{}…\" (1920 more bytes)",
            "x".repeat(80)
        );
        assert_eq!(read(&long).stray_now(), Some(quoted.clone()));
        let mut ended = long.to_vec();
        ended.push(b'\n');
        assert_eq!(read(&ended).stray_now(), Some(quoted));
        // A first message not ended yet is not taken for garbage...
        assert_eq!(read(b"{\"jsonrpc\":\"2.0\",\"id\"").stray_now(), None);
        // ...but an unfinished line that is no JSON at all is.
        assert!(read(b"Password: ").stray_now().is_some());
        // Neither is a line that begins as an object but is no JSON.
        assert!(read(b"{oops}\n").stray_now().is_some());
        assert!(
            read(b"{\"jsonrpc\":\"2.0\"} trailing\n")
                .stray_now()
                .is_some()
        );
    }

    /// Review 49 M1: any JSON object without `"jsonrpc": "2.0"` failed the import at once,
    /// a structured log line (pino's `{"level":30,"msg":"…"}`) or a notification lacking only
    /// `jsonrpc` too, which the transport skips; the import had succeeded before. Only one
    /// that is, or may be, the answer awaited fails it now (its id asked, or a `result` or
    /// `error` and no id while an answer is awaited); anything else is skipped, said once in
    /// the note, and quoted if the import then times out. Nothing after the last answer
    /// fails a listing that is complete.
    #[test]
    fn a_json_object_not_json_rpc_fails_the_import_only_as_the_answer_awaited() {
        let initialize = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        let tools_list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let awaiting = || {
            let lines = Lines::default();
            lines.asked(initialize);
            lines
        };
        let pino = r#"{"level":30,"time":1,"msg":"server listening"}"#;
        let lines = awaiting();
        lines.read(format!("{pino}\n").as_bytes());
        assert_eq!(lines.refused_now(), None);
        assert_eq!(
            lines.skipped_note("MCP server `x`").as_deref(),
            Some(
                r#"MCP server `x`: skipped a message the transport cannot read, not the answer awaited: neither request, notification nor reply (line 1 of its stdout, a JSON object without "jsonrpc": "2.0"): "{\"level\":30,\"time\":1,\"msg\":\"server listening\"}""#
            )
        );
        // Quoted if the import then times out: it may be why.
        assert_eq!(
            lines.stray_now().as_deref(),
            Some(
                r#"wrote something that is not JSON-RPC on its stdout (line 1, a JSON object without "jsonrpc": "2.0"): "{\"level\":30,\"time\":1,\"msg\":\"server listening\"}""#
            )
        );
        for (line, what) in [
            (
                r#"{"method":"notifications/message","params":{"level":"info","data":"up"}}"#,
                "a notification",
            ),
            (r#"{"id":"s1","method":"ping"}"#, "a request of its own"),
            (
                r#"{"id":999,"result":{}}"#,
                "a reply to an id it was not asked",
            ),
            (
                r#"{"level":"info","msg":"x"}"#,
                "neither request, notification nor reply",
            ),
        ] {
            let lines = awaiting();
            lines.read(format!("{line}\n").as_bytes());
            assert_eq!(lines.refused_now(), None, "{line}");
            assert!(
                lines
                    .skipped_note("x")
                    .is_some_and(|n| n.contains(&format!("not the answer awaited: {what} (line 1"))),
                "{line}: {:?}",
                lines.skipped_note("x")
            );
        }
        // The answer awaited, or what may be it, fails the import as soon as its line ends.
        for line in [
            r#"{"id":0,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":0,"result":{}}"#,
            r#"{"result":{"tools":[]}}"#,
            r#"{"error":{"code":1,"message":"no"}}"#,
        ] {
            let lines = awaiting();
            lines.read(line.as_bytes());
            assert_eq!(lines.refused_now(), None, "not ended yet: {line}");
            lines.read(b"\n");
            assert!(
                matches!(
                    lines.refused_now(),
                    Some(Refused::NotJsonRpc { line: 1, .. })
                ),
                "{line}"
            );
            assert_eq!(lines.skipped_note("x"), None, "{line}");
        }
        // Once every request is answered, nothing more can be the answer: a complete listing
        // is not failed by what follows it, even in the same read (review 49 M1's race).
        let done = awaiting();
        done.read(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n");
        done.asked(tools_list);
        let deep = format!("{}{}", "[".repeat(140), "]".repeat(140));
        done.read(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[]}}}}\n{{\"result\":{{}}}}\n{{\"id\":1,\"result\":{{}}}}\n{{\"jsonrpc\":\"2.0\",\"result\":{deep}}}\n"
            )
            .as_bytes(),
        );
        assert_eq!(done.refused_now(), None);
        assert!(
            done.skipped_note("x").is_some_and(|n| n.starts_with(
                "x: skipped 3 messages the transport cannot read, none the answer awaited; the first: a message while no answer was awaited (line 3 of its stdout"
            )),
            "{:?}",
            done.skipped_note("x")
        );
    }

    /// Review 49 L1: a stray line replaced every failure, a tools/list error of the server's
    /// own too. It explains a silence; beside anything else it is context.
    #[test]
    fn a_stray_line_explains_a_silence_and_stands_beside_a_failure_of_the_servers_own() {
        let banner = read(b"Server ready\n").stray_first().unwrap();
        assert_eq!(
            Failure::silent("did not answer within 2s".into()).beside(&banner),
            "wrote something that is not JSON-RPC on its stdout (line 1): \"Server ready\""
        );
        assert_eq!(
            Failure::new(r#"failed tools/list: error -32603 "db down""#.into(), false)
                .beside(&banner),
            "failed tools/list: error -32603 \"db down\" (it also wrote something that is not JSON-RPC on its stdout, line 1: \"Server ready\")"
        );
        let log = read(b"{\"level\":30}\n").stray_first().unwrap();
        assert_eq!(
            Failure::new("is in a pagination loop".into(), false).beside(&log),
            r#"is in a pagination loop (it also wrote something that is not JSON-RPC on its stdout, line 1, a JSON object without "jsonrpc": "2.0": "{\"level\":30}")"#
        );
    }

    /// Tester 48 F4: the line that is not JSON-RPC is quoted, not the opening of the whole
    /// stdout (the good initialize answer), and where it is; a JSON object that is no
    /// JSON-RPC message and is the answer awaited is refused as soon as its line ends (one
    /// that is not the answer is skipped, and quoted as a stray line is: review 49 M1).
    #[test]
    fn the_line_not_json_rpc_is_the_one_quoted_and_an_object_not_json_rpc_awaited_is_refused() {
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}"#;
        let lines = read(format!("{answer}\nPLAIN GARBAGE LINE\n").as_bytes());
        assert_eq!(
            lines.stray_now().as_deref(),
            Some(
                "wrote something that is not JSON-RPC on its stdout (line 2): \"PLAIN GARBAGE LINE\""
            )
        );
        assert_eq!(lines.refused_now(), None);
        // The first such line.
        let lines = read(format!("{answer}\nfirst\nsecond\n").as_bytes());
        assert!(
            lines
                .stray_now()
                .is_some_and(|s| s.ends_with("(line 2): \"first\""))
        );

        let asking = || {
            let lines = Lines::default();
            lines.asked(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
            lines.read(format!("{answer}\n").as_bytes());
            lines.asked(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            lines
        };
        let lines = asking();
        lines.read(b"{\"id\":1,\"not\":");
        assert_eq!(lines.refused_now(), None, "not ended yet");
        lines.read(b"{\"json\":\"rpc\"}}\n");
        let refused = lines.refused_now();
        assert_eq!(
            refused,
            Some(Refused::NotJsonRpc {
                line: 2,
                quote: r#""{\"id\":1,\"not\":{\"json\":\"rpc\"}}""#.to_string()
            })
        );
        assert_eq!(
            refused.map(|r| r.describe("tools/list")).as_deref(),
            Some(
                r#"wrote something that is not JSON-RPC on its stdout (line 2, a JSON object without "jsonrpc": "2.0"): "{\"id\":1,\"not\":{\"json\":\"rpc\"}}""#
            )
        );
        assert_eq!(lines.stray_now(), None);
        // Without an id or a result, it is no answer: skipped, and quoted if the import fails.
        let lines = asking();
        lines.read(b"{\"not\":{\"json\":\"rpc\"}}\n");
        assert_eq!(lines.refused_now(), None);
        assert_eq!(
            lines.stray_now().as_deref(),
            Some(
                r#"wrote something that is not JSON-RPC on its stdout (line 2, a JSON object without "jsonrpc": "2.0"): "{\"not\":{\"json\":\"rpc\"}}""#
            )
        );
        // Another version is no JSON-RPC 2.0 either; notifications, requests, replies are.
        let lines = asking();
        lines.read(b"{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}\n");
        assert!(lines.refused_now().is_some());
        for message in [
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#,
            r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
        ] {
            let lines = read(format!("{message}\n").as_bytes());
            assert_eq!(
                (lines.refused_now(), lines.stray_now()),
                (None, None),
                "{message}"
            );
        }
    }
    /// Tester 50 F2: an answer under the id awaited that rmcp's typed reader refuses was
    /// dropped without a word, and the import waited out its timeout to say the server "did
    /// not answer". Each is read as the transport reads it, and refused at once, saying why.
    #[test]
    fn an_answer_the_transport_cannot_read_fails_at_once_saying_why() {
        let awaiting = |method: &str, id: u64| {
            let lines = Lines::default();
            lines.asked(
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{}}}}"#)
                    .as_bytes(),
            );
            lines
        };
        let said = |method: &str, id: u64, line: &[u8]| {
            let lines = awaiting(method, id);
            lines.read(line);
            assert_eq!(lines.refused_now(), None, "not ended yet");
            lines.read(b"\n");
            lines.refused_now().map(|r| r.describe(method))
        };
        let tool = |name: &str| format!(r#"{{"name":"{name}","inputSchema":{{"type":"object"}}}}"#);
        let list =
            |tools: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{tools}]}}}}"#);
        let head = "answered tools/list (id 1) with a message the transport cannot read";
        let mut bad_utf8 = list(&tool("bad_XX")).into_bytes();
        let at = bad_utf8.windows(2).position(|w| w == b"XX").unwrap();
        bad_utf8.splice(at..at + 2, [0xff, 0xfe]);
        for (line, why) in [
            (
                bad_utf8,
                format!("(line 1, column {} of its stdout): invalid UTF-8 (byte offset {at})", at + 1),
            ),
            (
                list(r#"{"name":"t","description":"col1	col2","inputSchema":{"type":"object"}}"#)
                    .into_bytes(),
                "(line 1, column 75 of its stdout): control character (\\u0000-\\u001F) found while parsing a string".to_string(),
            ),
            (
                list(&tool(r"a\ud800")).into_bytes(),
                r"(line 1, column 60 of its stdout): a lone UTF-16 surrogate (\ud800) is not a character".to_string(),
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}},"result":{{"tools":[{}]}}}}"#,
                    tool("a"),
                    tool("b")
                )
                .into_bytes(),
                "(line 1 of its stdout): `result` is given twice".to_string(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":"E_DB","message":"db down"}}"#.to_vec(),
                "(line 1 of its stdout): its error's code is a string, not an integer".to_string(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":4294967296,"message":"x"}}"#.to_vec(),
                "(line 1 of its stdout): its error's code 4294967296 is not an integer of 32 bits".to_string(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000}}"#.to_vec(),
                "(line 1 of its stdout): its error has no message".to_string(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":"db down"}"#.to_vec(),
                "(line 1 of its stdout): its error is a string, not an object".to_string(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"error":{"code":1,"message":"x"}}"#
                    .to_vec(),
                "(line 1 of its stdout): it has both a result and an error".to_string(),
            ),
        ] {
            assert_eq!(
                said("tools/list", 1, &line).as_deref(),
                Some(format!("{head} {why}").as_str()),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
        // The handshake's answer too.
        let mut init = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"fXX","version":"1"}}}"#.to_vec();
        let at = init.windows(2).position(|w| w == b"XX").unwrap();
        init.splice(at..at + 2, [0xc0, 0xaf]);
        assert_eq!(
            said("initialize", 0, &init).as_deref(),
            Some(
                format!(
                    "answered initialize (id 0) with a message the transport cannot read (line 1, column {} of its stdout): invalid UTF-8 (byte offset {at})",
                    at + 1
                )
                .as_str()
            )
        );
        // What the transport reads is no failure: a good answer, with CRLF and a byte order
        // mark too, an error of the server's own, a key given twice deep in a tool's schema.
        for line in [
            list(&tool("ok")),
            format!("{}\r", list(&tool("ok"))),
            format!("\u{feff}{}", list(&tool("ok"))),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"db down","data":[1]}}"#
                .to_string(),
            list(r#"{"name":"t","inputSchema":{"type":"object","type":"object"}}"#),
        ] {
            assert_eq!(unread_by_transport(line.as_bytes()), None, "{line}");
        }
        assert_eq!(said("tools/list", 1, list(&tool("ok")).as_bytes()), None);
        // One not awaited is not the answer: the transport drops it, and the import goes on.
        let lines = awaiting("tools/list", 1);
        lines.read(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"error\":{\"code\":\"E\"}}\n");
        assert_eq!(lines.refused_now(), None);
    }

    /// Tester 50 F11: a server's error message (2 MB of it) and the last line of its stderr
    /// were printed whole. Both are quoted as all outside text is: escaped, on one line, cut.
    #[test]
    fn a_servers_error_is_quoted_short() {
        let error = rmcp::model::ErrorData::new(
            rmcp::model::ErrorCode(-32000),
            format!("db\ndown {}", "X".repeat(2_000_000)),
            Some(serde_json::json!({"trace": "Y".repeat(1000)})),
        );
        let said = service_error(&rmcp::ServiceError::McpError(error.clone()));
        assert!(said.len() < 300, "{} bytes", said.len());
        assert!(
            said.starts_with(r#"error -32000 "db\ndown XXX"#)
                && said.contains("…\" (")
                && said.contains(" more bytes) (data: {\"trace\":"),
            "{said}"
        );
        let handshake =
            handshake_failure(&rmcp::service::ClientInitializeError::JsonRpcError(error));
        assert_eq!(handshake, said);
        assert_eq!(
            error_data(&rmcp::model::ErrorData::new(
                rmcp::model::ErrorCode(-32603),
                "db down",
                None
            )),
            r#"error -32603 "db down""#
        );
    }

    /// Tester 50 F4 and F12: the command line was printed as typed, a provider key in it whole
    /// on stdout, a line feed in it starting a line of its own. It is named one way
    /// everywhere: the key taken out, and quoted (escaped, on one line) unless plain.
    #[test]
    fn a_command_line_is_named_on_one_line_without_the_keys() {
        let key = "sk-test-0123456789abcdefSECRET";
        let secrets = Secrets::of_keys([key]);
        assert_eq!(
            named("npx -y @mcp/server-memory", &secrets),
            "MCP server `npx -y @mcp/server-memory`"
        );
        assert_eq!(
            named(&format!("server --token {key}"), &secrets),
            "MCP server `server --token [REDACTED]`"
        );
        assert_eq!(
            named(
                &format!("server --token {key} 'x\nctxconsole: forged'"),
                &secrets
            ),
            r"MCP server `server --token [REDACTED] 'x\nctxconsole: forged'`"
        );
        assert_eq!(
            shown_command("a `b` \u{1b}]0;T\u{7}", &secrets, '`'),
            r"`a \`b\` \x1b]0;T\x07`"
        );
        assert_eq!(
            shown_command("bad 'quote\nctxconsole: x", &Secrets::default(), '"'),
            r#""bad 'quote\nctxconsole: x""#
        );
        let long = named(&format!("{}\n", "x".repeat(5000)), &secrets);
        assert!(long.ends_with("…` (4921 more bytes)"), "{long}");
    }
}
