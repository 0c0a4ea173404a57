//! MCP over streamable HTTP: rmcp's service under a hyper HTTP/1.1 listener, at `/mcp`,
//! with a bearer token checked on every request when one is set. A POSTed JSON body is read
//! here first, so one that is not a message this server reads gets 400 with the JSON-RPC
//! error stdio would give it (rmcp's own answer is 415 "fail to deserialize request body").
//! An `initialize` gets a place for its session, the least recently used one closed when
//! all are taken, and every request in a session marks it used (see [`Sessions`]).
//!
//! Connections are bounded before any request is read, so before any token is checked: at
//! most [`CONNECTIONS_MAX`] at once (`--max-connections`; one more is accepted and waits for
//! a slot, the rest wait in the kernel's backlog, holding no descriptor here), and each must
//! send a request's headers within [`READ_TIMEOUT`] of connecting or of its last answer, and
//! a body within it once its headers are in (`--read-timeout`). Before, ~20,000 connections
//! that sent half their headers and waited were held for good: the process ran out of
//! descriptors and an authorised client could not connect (tester 15 F4). When every slot
//! is taken, the oldest connection that has not yet sent an authorised request is closed to
//! make room ([`Unproven`]), so such a flood delays an authorised client by no more than
//! the time its own connection takes to be accepted.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tower_service::Service;

use crate::core::terminal_text::JsonPiecesForTerminal;
use crate::exit::bad_input;
use crate::mcp_server::STOP_GRACE;
use crate::mcp_server::commits::{Commits, InFlight, already_in_flight};
use crate::mcp_server::handler::{Console, State};
use crate::mcp_server::jsonrpc::{self, Refusal};
use crate::mcp_server::notes::{Note, Noter};
use crate::mcp_server::params::size_label;
use crate::mcp_server::sessions::{Entered, Place, Sessions};
use crate::mcp_server::stdio::MESSAGE_MAX;
use crate::mcp_server::unproven::Unproven;

/// The one path the server answers on.
pub const ENDPOINT: &str = "/mcp";

type Body = BoxBody<Bytes, Infallible>;

/// The most connections served at once (`--max-connections`): a console's clients are a
/// handful, each with a connection or two per session.
pub const CONNECTIONS_MAX: usize = 256;

/// How long a connection may take to send a request's headers, and then its body
/// (`--read-timeout`); hyper's default for the headers.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The bounds on the connections `--http` serves (see the module).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max: usize,
    pub read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max: CONNECTIONS_MAX,
            read_timeout: READ_TIMEOUT,
        }
    }
}

/// A connection that ended on an error (a client that hung up mid-request, or sent too
/// little in time), as it is said: at most once a second, counted (see
/// [`crate::mcp_server::notes`]).
struct Ended(String);

impl Note for Ended {
    fn line(&self, more: usize) -> String {
        let mut line = format!("ctxconsole mcp: a connection ended: {}", self.0);
        if more > 0 {
            let s = if more == 1 { "" } else { "s" };
            line.push_str(&format!(
                ", and {more} more connection{s} ended on an error since the last such line"
            ));
        }
        line
    }
}

/// A connection closed to make room for a new one (see [`Unproven`]), as it is said: at
/// most once a second, counted. Holds the cap.
struct MadeRoom(usize);

impl Note for MadeRoom {
    fn line(&self, more: usize) -> String {
        let closed = match more + 1 {
            1 => "a connection".to_string(),
            n => format!("{n} connections"),
        };
        format!(
            "ctxconsole mcp: all {} connection slots were taken (--max-connections): closed \
             {closed} that had sent no authorised request, oldest first, to make room",
            self.0
        )
    }
}

/// rmcp's answer to a request for a session it does not hold, for the same case found here.
/// The one key a session's standalone stream holds in `streams`.
const STANDALONE_STREAM: rmcp::model::RequestId = rmcp::model::NumberOrString::Number(0);

fn session_not_found() -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from("Not Found: Session not found")).boxed());
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A JSON-RPC error as the whole answer, with `status` whatever the message was (over HTTP
/// even a notification that cannot be read is told so).
fn refused(status: StatusCode, refusal: &Refusal) -> Response<Body> {
    let body = match crate::mcp_server::wire_json(refusal) {
        Ok(body) => body,
        Err(e) => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("internal error: writing a JSON-RPC error: {e}"),
            );
        }
    };
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// An answer of rmcp's service with what a terminal would act on `\u`-escaped, as
/// [`crate::mcp_server::wire_json`] writes this server's own (tester 41 F1). A body of
/// known size (rmcp's plain-text refusals) is escaped at once and keeps its length; any
/// other — every answer to a POST or GET, which passes through `map_frame` here and so has
/// no known size — is escaped frame by frame as it goes out, and is sent chunked as before.
/// (A character left unfinished at a stream's very end would be dropped: rmcp writes only
/// whole UTF-8.)
async fn escaped_for_terminal(answer: Response<Body>) -> Response<Body> {
    let (parts, body) = answer.into_parts();
    let mut pieces = JsonPiecesForTerminal::default();
    if hyper::body::Body::size_hint(&body).exact().is_some() {
        let Ok(whole) = body.collect().await;
        let mut escaped = escaped_piece(&mut pieces, whole.to_bytes());
        let unfinished = pieces.finish();
        if !unfinished.is_empty() {
            escaped = Bytes::from([escaped.as_ref(), &unfinished].concat());
        }
        return Response::from_parts(parts, Full::new(escaped).boxed());
    }
    let body = body
        .map_frame(move |frame| frame.map_data(|data| escaped_piece(&mut pieces, data)))
        .boxed();
    Response::from_parts(parts, body)
}

/// `data` escaped as the next piece of an answer: the same bytes, not copied, when nothing
/// in it changes.
fn escaped_piece(pieces: &mut JsonPiecesForTerminal, data: Bytes) -> Bytes {
    match pieces.piece(&data) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(escaped) => Some(escaped),
    }
    .map_or(data, Bytes::from)
}

/// A POST whose body rmcp reads as JSON (Content-Type `application/json`); any other is
/// rmcp's to refuse as it does.
fn posts_json(req: &Request<Incoming>) -> bool {
    req.method() == hyper::Method::POST
        && req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The request with its body read (at most [`MESSAGE_MAX`], whole within `timeout`) and
/// found to be a message rmcp reads, and that message; or the answer to give instead: 413
/// over the limit, 408 when the body is not all there in time (a Content-Length never
/// met), 400 with the JSON-RPC error [`jsonrpc::unreadable`] gives otherwise.
async fn read_message(
    req: Request<Incoming>,
    timeout: Duration,
) -> Result<(Request<Full<Bytes>>, ClientJsonRpcMessage), Response<Body>> {
    let (parts, body) = req.into_parts();
    let Ok(read) = tokio::time::timeout(timeout, Limited::new(body, MESSAGE_MAX).collect()).await
    else {
        return Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "request timeout: the body did not arrive within {}",
                crate::core::duration::describe(timeout)
            ),
        ));
    };
    let bytes = match read {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "payload too large: one message takes at most {}",
                    size_label(MESSAGE_MAX)
                ),
            ));
        }
        Err(e) => {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                &format!("bad request: reading the body: {e}"),
            ));
        }
    };
    // A leading byte-order mark is read past, as over stdio (tester 49 F8), and rmcp is
    // given the message without it.
    let bytes = bytes.slice(bytes.len() - jsonrpc::without_bom(&bytes).len()..);
    let message = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes)
        .map_err(|e| refused(StatusCode::BAD_REQUEST, &jsonrpc::unreadable(&bytes, &e)))?;
    if let Some(refusal) = jsonrpc::repeated_key_in(&bytes, &message) {
        return Err(refused(StatusCode::BAD_REQUEST, &refusal));
    }
    Ok((Request::from_parts(parts, Full::new(bytes)), message))
}

/// The JSON-RPC error code of an `initialize` refused because every place is taken by an
/// `initialize` still being answered (in the range JSON-RPC leaves to servers).
pub const SESSIONS_FULL: ErrorCode = ErrorCode(-32000);

pub use crate::mcp_server::commits::SESSION_HEADER;

/// For an `initialize` outside a session (the request rmcp makes a new session for), a
/// place for that session, or 503 with a JSON-RPC error under its id when there is none
/// (see [`Sessions::admit`]). Any other request needs no place (`Ok(None)`).
async fn admit(
    sessions: &Sessions,
    parts: &Request<Full<Bytes>>,
    message: &ClientJsonRpcMessage,
) -> Result<Option<Place>, Response<Body>> {
    let JsonRpcMessage::Request(request) = message else {
        return Ok(None);
    };
    if !matches!(request.request, ClientRequest::InitializeRequest(_))
        || parts.headers().contains_key(SESSION_HEADER)
    {
        return Ok(None);
    }
    match sessions.admit().await {
        Ok(place) => Ok(Some(place)),
        Err(why) => {
            let refusal = Refusal {
                error: rmcp::ErrorData::new(
                    SESSIONS_FULL,
                    why,
                    Some(serde_json::json!({"max_sessions": sessions.max()})),
                ),
                id: Some(request.id.clone()),
                notification: false,
            };
            let mut r = refused(StatusCode::SERVICE_UNAVAILABLE, &refusal);
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("10"));
            Err(r)
        }
    }
}

/// Equal in time whatever the first difference: the comparison does not tell an attacker
/// how much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The token of an `Authorization` value `Bearer TOKEN`: the scheme in any case (RFC 9110
/// §11.1: `bearer` had got 401, tester 15 F8), then one or more spaces.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(b"Bearer".len())?;
    if !scheme.eq_ignore_ascii_case(b"Bearer") {
        return None;
    }
    Some(rest.strip_prefix(b" ")?.trim_ascii_start())
}

fn authorized(req: &Request<Incoming>, token: &[u8]) -> bool {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| bearer_token(v.as_bytes()))
        .is_some_and(|given| same_secret(given, token))
}

/// The host of an `Origin` (`http://127.0.0.1:8765` → `127.0.0.1`, `http://[::1]` → `::1`),
/// or `None` for `null` and what is not an origin.
fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://")?.1;
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => rest.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// A browser page may call this server only from this machine's own pages: an `Origin` is
/// accepted when it is loopback or the host the request was sent to (the MCP transport's
/// rule against DNS rebinding); a request without one (not from a browser) passes.
fn origin_allowed(req: &Request<Incoming>) -> bool {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return true;
    };
    let Some(host) = origin.to_str().ok().and_then(origin_host) else {
        return false;
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let same_host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| origin_host(&format!("http://{h}")).map(str::to_owned))
        .is_some_and(|h| h.eq_ignore_ascii_case(host));
    loopback || same_host
}

/// Listen on `addr` until a stop signal (SIGTERM, SIGINT), then let calls in flight answer
/// for at most [`STOP_GRACE`] and return. `open`: the address was given with
/// `--bind`, so any Host is accepted (the token guards it); on loopback rmcp's Host check
/// stays on against DNS rebinding.
pub async fn serve(
    state: Arc<State>,
    addr: SocketAddr,
    token: Option<String>,
    open: bool,
    sessions: Sessions,
    commits: Arc<Commits>,
    limits: ConnectionLimits,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| bad_input(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr()?;
    if token.is_none() {
        // Loopback is not per user: every account on this machine can reach it.
        crate::cli::out::eprint_line(&format!(
            "ctxconsole mcp: no token: any local user can connect and read the plan history or record executions: set {} (or --token-file FILE) to require one",
            crate::mcp_server::TOKEN_ENV
        ));
    }
    // Tests and scripts read the port from here when they asked for port 0.
    crate::cli::out::eprint_line(&format!(
        "ctxconsole mcp: listening on http://{local}{ENDPOINT}"
    ));
    let mut config = StreamableHttpServerConfig::default().with_max_request_body_bytes(MESSAGE_MAX);
    if open {
        config = config.with_allowed_hosts(Vec::<String>::new());
    }
    // Every session's recorded calls, known by session and id: a cancel read here after the
    // call's commit is not handed to rmcp, which would drop its answer (tester 12 T12-8).
    let handlers = Arc::clone(&commits);
    let service = StreamableHttpService::new(
        move || {
            Ok(Console::with_commits(
                Arc::clone(&state),
                Arc::clone(&handlers),
            ))
        },
        sessions.manager(),
        config,
    );
    let sessions = Arc::new(sessions);
    // Idle sessions are closed here, not by rmcp's keep-alive (see [`Sessions::close_idle`]).
    let reaper = Arc::clone(&sessions);
    tokio::spawn(async move {
        let every = reaper.idle_check_every();
        loop {
            tokio::time::sleep(every).await;
            reaper.close_idle().await;
        }
    });
    let token: Option<Arc<[u8]>> = token.map(|t| Arc::from(t.into_bytes()));
    let read_timeout = limits.read_timeout;
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max));
    let ended: Noter<Ended> = Noter::default();
    let made_room: Noter<MadeRoom> = Noter::default();
    let unproven = Arc::new(Unproven::default());
    let in_flight = Arc::new(InFlight::default());
    // The standalone (GET) streams open, one per session (tester 20 F20: one session held
    // every connection slot with 256 of them, and each stays open while its session lives).
    let streams = Arc::new(InFlight::default());
    // A stop signal: no more connections are accepted, each connection ends after the
    // answer it is sending, and calls in flight get [`STOP_GRACE`] to answer.
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut signal = std::pin::pin!(crate::mcp_server::stop_signal());
    // Listened for from the start, as over stdio: the second of two ends the wait at once.
    let mut again = std::pin::pin!(crate::mcp_server::nth_stop_signal(2));
    let signal = loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            name = &mut signal => break name,
        };
        let (stream, _) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: say so, breathe, go on.
                crate::cli::out::eprint_line(&format!(
                    "ctxconsole mcp: accepting a connection: {e}"
                ));
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        // Past the cap the one accepted waits for a slot and the rest wait in the kernel's
        // backlog; the oldest connection with no authorised request yet is closed to make
        // room (see [`Unproven`]), and the read timeout frees a slot from one that sends
        // nothing.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if unproven.close_oldest() {
                    made_room.note(MadeRoom(limits.max));
                }
                Arc::clone(&slots)
                    .acquire_owned()
                    .await
                    .map_err(|e| anyhow::anyhow!("the connection slots: {e}"))?
            }
        };
        let entered = unproven.enter();
        let connection = entered.id;
        let service = service.clone();
        let token = token.clone();
        let sessions = Arc::clone(&sessions);
        let commits = Arc::clone(&commits);
        let in_flight = Arc::clone(&in_flight);
        let streams = Arc::clone(&streams);
        let ended = ended.clone();
        let unproven = Arc::clone(&unproven);
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let proving = Arc::clone(&unproven);
            let handle = hyper::service::service_fn(move |req: Request<Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                let unproven = Arc::clone(&proving);
                let sessions = Arc::clone(&sessions);
                let commits = Arc::clone(&commits);
                let in_flight = Arc::clone(&in_flight);
                let streams = Arc::clone(&streams);
                async move {
                    if req.uri().path() != ENDPOINT {
                        return Ok::<_, Infallible>(plain(
                            StatusCode::NOT_FOUND,
                            "not found: the MCP endpoint is /mcp",
                        ));
                    }
                    if !origin_allowed(&req) {
                        return Ok(plain(
                            StatusCode::FORBIDDEN,
                            "forbidden: a page from another origin may not call this server",
                        ));
                    }
                    if let Some(t) = &token
                        && !authorized(&req, t)
                    {
                        let mut r = plain(
                            StatusCode::UNAUTHORIZED,
                            "unauthorized: send Authorization: Bearer TOKEN",
                        );
                        r.headers_mut().insert(
                            header::WWW_AUTHENTICATE,
                            header::HeaderValue::from_static("Bearer"),
                        );
                        return Ok(r);
                    }
                    unproven.proven(connection);
                    let session_id = req
                        .headers()
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    if req.method() == hyper::Method::DELETE
                        && let Some(id) = &session_id
                    {
                        // A session this server does not hold (never made, closed, being
                        // closed) is 404, as for any other request for it (tester 20 F4:
                        // rmcp answered 202 whatever the id); a session ended is said as
                        // 204: the MCP SDKs take 200 or 204, and rmcp's 202 made the Python
                        // client warn at every clean exit (tester 13 T13-5).
                        if !sessions.close_for_client(id).await {
                            return Ok(session_not_found());
                        }
                        let mut r = Response::new(Full::new(Bytes::new()).boxed());
                        *r.status_mut() = StatusCode::NO_CONTENT;
                        return Ok(r);
                    }
                    // A session with a request in flight is neither closed at the cap nor
                    // idle; one being closed is told 404 (tester 20 F17).
                    let busy = match session_id.as_deref().map(|id| sessions.enter(id)) {
                        Some(Entered::Closing) => return Ok(session_not_found()),
                        Some(Entered::Busy(busy)) => Some(busy),
                        Some(Entered::Unknown) | None => None,
                    };
                    let answer = if posts_json(&req) {
                        let (req, message) = match read_message(req, read_timeout).await {
                            Ok(read) => read,
                            Err(answer) => return Ok(answer),
                        };
                        let session = req
                            .headers()
                            .get(SESSION_HEADER)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default();
                        if !commits.hands_on(session, &message) {
                            drop(busy);
                            // A notification taken, as rmcp answers one.
                            let mut r = Response::new(Full::new(Bytes::new()).boxed());
                            *r.status_mut() = StatusCode::ACCEPTED;
                            return Ok(r);
                        }
                        // A second request under an id in flight in its session is refused
                        // (tester 15 F5); the place is held while the answer streams.
                        let flying = match &message {
                            JsonRpcMessage::Request(r) if !session.is_empty() => {
                                match in_flight.take(session, &r.id) {
                                    Some(f) => Some(f),
                                    None => {
                                        let refusal = Refusal {
                                            error: already_in_flight(&r.id),
                                            id: Some(r.id.clone()),
                                            notification: false,
                                        };
                                        return Ok(refused(StatusCode::BAD_REQUEST, &refusal));
                                    }
                                }
                            }
                            _ => None,
                        };
                        // Outside a session, a request that is not a readable initialize
                        // is told what is wrong with it, as over stdio (tester 20 F5).
                        if session.is_empty()
                            && let JsonRpcMessage::Request(r) = &message
                            && let Some(error) = jsonrpc::before_initialize(&message)
                        {
                            let refusal = Refusal {
                                error,
                                id: Some(r.id.clone()),
                                notification: false,
                            };
                            return Ok(refused(StatusCode::BAD_REQUEST, &refusal));
                        }
                        // Held until rmcp has answered: its session is in the table by then,
                        // and entered as just used before the place is given back.
                        let place = match admit(&sessions, &req, &message).await {
                            Ok(place) => place,
                            Err(answer) => return Ok(answer),
                        };
                        let answer = service.call(req).await;
                        if place.is_some()
                            && let Ok(r) = &answer
                            && r.status().is_success()
                            && let Some(id) = r
                                .headers()
                                .get(SESSION_HEADER)
                                .and_then(|v| v.to_str().ok())
                        {
                            sessions.started(id);
                        }
                        drop(place);
                        // The id's place is held, and the session busy, until the answer
                        // has streamed out.
                        let held = (flying, busy);
                        answer.map(|r| {
                            r.map(|body| {
                                body.map_frame(move |frame| {
                                    let _held = &held;
                                    frame
                                })
                                .boxed()
                            })
                        })
                    } else if req.method() == hyper::Method::GET
                        && let Some(id) = &session_id
                    {
                        // A GET's stream may stay open for good: it marks the session used,
                        // not busy. A session has one: the spec sends a message on one
                        // stream only, and each held a connection slot.
                        drop(busy);
                        let Some(open) = streams.take(id, &STANDALONE_STREAM) else {
                            return Ok(plain(
                                StatusCode::CONFLICT,
                                "conflict: this session's stream is already open; a session \
                                 has one (end it before opening another)",
                            ));
                        };
                        service.call(req).await.map(|r| {
                            r.map(|body| {
                                body.map_frame(move |frame| {
                                    let _open = &open;
                                    frame
                                })
                                .boxed()
                            })
                        })
                    } else {
                        drop(busy);
                        service.call(req).await
                    };
                    // rmcp's 500 "Session service terminated" for a session closed while the
                    // request was being routed is a session gone: 404.
                    if let Ok(r) = &answer
                        && r.status() == StatusCode::INTERNAL_SERVER_ERROR
                        && let Some(id) = &session_id
                        && sessions.gone(id).await
                    {
                        return Ok(session_not_found());
                    }
                    match answer {
                        Ok(answer) => Ok(escaped_for_terminal(answer).await),
                        Err(e) => Err(e),
                    }
                }
            });
            // The timer is what makes hyper's header timeout count (without one it is off);
            // it runs from the connection's start and from each answer, so it also ends a
            // connection that sends nothing.
            let serving = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .serve_connection(TokioIo::new(stream), handle);
            // Closed to make room: dropping the connection closes it. At a stop signal it
            // ends after the answer it is sending.
            let mut serving = std::pin::pin!(serving);
            let mut told = false;
            let mut closed = std::pin::pin!(entered.closed());
            let served = loop {
                tokio::select! {
                    served = serving.as_mut() => break Some(served),
                    () = closed.as_mut() => break None,
                    _ = stopping.wait_for(|stop| *stop), if !told => {
                        told = true;
                        serving.as_mut().graceful_shutdown();
                    }
                }
            };
            unproven.proven(connection);
            if let Some(Err(e)) = served {
                ended.note(Ended(e.to_string()));
            }
        });
    };
    drop(listener);
    let running = sessions.in_flight();
    crate::cli::out::eprint_line(&format!(
        "ctxconsole mcp: {signal}: accepting no more connections; {running} call{} in flight get{} up to {} to answer",
        if running == 1 { "" } else { "s" },
        if running == 1 { "s" } else { "" },
        crate::core::duration::describe(STOP_GRACE)
    ));
    // Sent even with nobody listening.
    let _ = stop.send(true);
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while sessions.in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            again = &mut again => {
                crate::mcp_server::say_stopped_at_once(again, sessions.in_flight());
                return Ok(());
            }
        }
    }
    let cut = sessions.in_flight();
    // The last answers are written out as their connections close; a stream a client holds
    // open (GET) is not waited for past a moment.
    let closing = tokio::time::Instant::now() + Duration::from_millis(500);
    while slots.available_permits() < limits.max && tokio::time::Instant::now() < closing {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    crate::mcp_server::say_stopped(signal, cut);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        for value in [
            &b"Bearer tok"[..],
            b"bearer tok",
            b"BEARER tok",
            b"bEaReR  tok",
        ] {
            assert_eq!(
                bearer_token(value),
                Some(&b"tok"[..]),
                "{}",
                String::from_utf8_lossy(value)
            );
        }
        for value in [&b"Bearertok"[..], b"Basic tok", b"Bear", b"", b"Bearer"] {
            assert_eq!(
                bearer_token(value),
                None,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }
}

#[cfg(test)]
mod origin_tests {
    use super::origin_host;

    #[test]
    fn origins_give_their_host() {
        assert_eq!(origin_host("http://127.0.0.1:8765"), Some("127.0.0.1"));
        assert_eq!(origin_host("https://localhost"), Some("localhost"));
        assert_eq!(origin_host("http://[::1]:80"), Some("::1"));
        assert_eq!(origin_host("http://evil.example"), Some("evil.example"));
        assert_eq!(origin_host("null"), None);
        assert_eq!(origin_host("http://"), None);
    }
}
