//! A `record_execution` is either stored and answered, or cancelled and not stored — never
//! stored without an answer (tester 12 T12-8).
//!
//! rmcp drops the answer to a call whose `notifications/cancelled` it has read, whenever
//! that answer comes. A call cancelled in the few ms after its commit (the answer on its
//! way) was stored and never answered, and the agent's retry stored it again. So, on one
//! connection, the handler and the transport settle each such call's fate under one lock:
//! the handler, holding the store's write lock, commits the call unless its cancel was
//! read ([`Commits::commit`]); the transport hands a cancel on only for a call not
//! committed ([`Commits::cancel`]) and swallows one for a committed call, whose answer then
//! goes out (MCP lets a receiver ignore a cancel for work it can no longer stop). Over
//! HTTP the cancel is read by the listener before rmcp sees it, per session
//! ([`Commits::hands_on`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ErrorCode, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fate {
    /// Being run, not committed yet.
    Running,
    /// The client's cancel was read first: it stores nothing.
    Cancelled,
    /// Stored (or being stored), at this time: its answer goes out, a cancel is too late.
    Committed(Instant),
}

/// A call: its session (empty over stdio: one connection) and its request id.
type Key = (String, RequestId);

/// How long a committed call is remembered when no transport says its answer went out
/// (HTTP): its answer goes out within moments of the commit.
const COMMITTED_KEPT: Duration = Duration::from_secs(600);

/// Told of a moment in a call's life (tests).
#[cfg(test)]
type Hook = Mutex<Option<Box<dyn Fn(&RequestId) + Send>>>;

/// The fates of one connection's calls that store (see the module).
#[derive(Default)]
pub struct Commits {
    calls: Mutex<HashMap<Key, Fate>>,
    /// Told each cancel the transport reads, before it decides (tests).
    #[cfg(test)]
    pub(crate) on_cancel_read: Hook,
    /// Told when a committed call's rows are stored, before its answer is made (tests).
    #[cfg(test)]
    pub(crate) on_stored: Hook,
}

#[cfg(test)]
fn tell(hook: &Hook, id: &RequestId) {
    if let Some(told) = hook.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        told(id);
    }
}

/// A call that stores, from its start until its answer is handed to the transport.
#[must_use]
pub struct Call {
    commits: Arc<Commits>,
    key: Key,
}

impl Commits {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Fate>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The call `id` that stores has started, in `session` (empty over stdio).
    pub fn begin(self: &Arc<Self>, session: &str, id: RequestId) -> Call {
        let key = (session.to_string(), id);
        let mut calls = self.calls();
        calls.retain(|_, f| !matches!(f, Fate::Committed(at) if at.elapsed() > COMMITTED_KEPT));
        calls.insert(key.clone(), Fate::Running);
        Call {
            commits: Arc::clone(self),
            key,
        }
    }

    /// Whether `message`, read from the client in `session`, is to be handed on to rmcp:
    /// all are but a cancel of a committed call (see [`Self::cancel`]).
    pub fn hands_on(&self, session: &str, message: &ClientJsonRpcMessage) -> bool {
        if let JsonRpcMessage::Notification(n) = message
            && let ClientNotification::CancelledNotification(c) = &n.notification
            && let Some(id) = &c.params.request_id
        {
            return self.cancel(session, id);
        }
        true
    }

    /// The client's cancel of `id` was read: whether to hand it on. A call that committed
    /// keeps its answer (false); any other is cancelled from now on.
    fn cancel(&self, session: &str, id: &RequestId) -> bool {
        #[cfg(test)]
        tell(&self.on_cancel_read, id);
        let mut calls = self.calls();
        match calls.get_mut(&(session.to_string(), id.clone())) {
            Some(Fate::Committed(_)) => {
                tracing::info!(%id, "a cancel came after the call was stored: its answer goes out");
                false
            }
            Some(fate) => {
                *fate = Fate::Cancelled;
                true
            }
            None => true,
        }
    }

    /// The answer to `id` is handed to the transport: its fate is settled.
    fn answered(&self, session: &str, id: &RequestId) {
        let mut calls = self.calls();
        let key = (session.to_string(), id.clone());
        if matches!(calls.get(&key), Some(Fate::Committed(_))) {
            calls.remove(&key);
        }
    }
}

impl Call {
    /// The last moment to call it off, asked once the store's write lock is held and before
    /// anything is written: false when the client cancelled it (`cancelled`: rmcp's token
    /// says so, or the transport read its cancel); true: committed — the answer goes out
    /// whatever the client sends after.
    pub fn commit(&self, cancelled: bool) -> bool {
        let mut calls = self.commits.calls();
        let fate = calls.entry(self.key.clone()).or_insert(Fate::Running);
        if cancelled || *fate == Fate::Cancelled {
            *fate = Fate::Cancelled;
            return false;
        }
        if *fate == Fate::Running {
            *fate = Fate::Committed(Instant::now());
        }
        true
    }
}

#[cfg(test)]
impl Call {
    /// Its rows are stored (tests: [`Commits::on_stored`]).
    pub(crate) fn stored(&self) {
        tell(&self.commits.on_stored, &self.key.1);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // A committed call stays until its answer is handed over; any other is done.
        let mut calls = self.commits.calls();
        if !matches!(calls.get(&self.key), Some(Fate::Committed(_))) {
            calls.remove(&self.key);
        }
    }
}

/// The requests in flight over HTTP, by session and id: as over stdio ([`Settled`]), rmcp
/// keeps one call per id in a session, and of two the first's answer was lost.
#[derive(Debug, Default)]
pub struct InFlight(Mutex<HashSet<Key>>);

/// A request's place in [`InFlight`], given back when dropped (its answer sent, or its
/// client gone).
#[derive(Debug)]
pub struct Flying {
    set: Arc<InFlight>,
    key: Key,
}

impl InFlight {
    fn keys(&self) -> std::sync::MutexGuard<'_, HashSet<Key>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for request `id` in `session`, or `None` when one with that id is in flight.
    pub fn take(self: &Arc<Self>, session: &str, id: &RequestId) -> Option<Flying> {
        let key = (session.to_string(), id.clone());
        self.keys().insert(key.clone()).then(|| Flying {
            set: Arc::clone(self),
            key,
        })
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        self.set.keys().remove(&self.key);
    }
}

/// The one session of a stdio connection.
pub const STDIO: &str = "";

/// The HTTP header that names a request's session (the handler reads it to know a call,
/// the listener to route one).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// A transport whose cancels and answers go through a connection's [`Commits`], and which
/// answers a request whose id is already in flight itself (see [`already_in_flight`]).
pub struct Settled<T: Transport<RoleServer>> {
    inner: T,
    commits: Arc<Commits>,
    /// The ids of the requests handed on and not yet answered (nor cancelled).
    in_flight: HashSet<RequestId>,
    /// How many they are, for what a stop signal left unanswered.
    unanswered: Arc<AtomicUsize>,
    /// An `initialize` has been handed on: until then a request is refused here when rmcp
    /// would answer it in words about `_meta` ([`jsonrpc::before_initialize`]).
    initialized: bool,
    /// The last refusal given here, being written by a task of its own: rmcp drops
    /// `receive`'s future whenever an answer is ready to go out, and a refusal awaited in it
    /// went with it, unwritten (tester 48). The next message is read once it is out.
    refusing: Option<tokio::task::JoinHandle<Result<(), T::Error>>>,
}

impl<T: Transport<RoleServer>> Settled<T> {
    pub fn new(inner: T, commits: Arc<Commits>) -> Self {
        Settled {
            inner,
            commits,
            in_flight: HashSet::new(),
            unanswered: Arc::default(),
            initialized: false,
            refusing: None,
        }
    }

    /// How many requests are handed on and not yet answered, as it changes.
    pub fn unanswered(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.unanswered)
    }

    fn count(&self) {
        self.unanswered
            .store(self.in_flight.len(), Ordering::SeqCst);
    }

    /// Hand `refusal` to a task that writes it: nothing is awaited here, so a dropped
    /// `receive` cannot lose it.
    fn refuse(&mut self, refusal: TxJsonRpcMessage<RoleServer>) {
        self.refusing = Some(tokio::spawn(self.inner.send(refusal)));
    }

    /// Wait for the last refusal to be written; false, said on stderr, if it could not be.
    /// Cancel-safe: the handle stays in `refusing` until the task has finished.
    async fn refused(&mut self) -> bool {
        let Some(task) = self.refusing.as_mut() else {
            return true;
        };
        let done = task.await;
        self.refusing = None;
        let e = match done {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("the task writing it ended: {e}"),
        };
        crate::cli::out::eprint_line(&format!("ctxconsole mcp: writing an answer: {e}"));
        false
    }
}

/// The longest string id repeated in the error's message (it is under `id` anyway).
const ID_SHOWN_MAX: usize = 64;

/// The answer to a request whose id is already in flight. rmcp keeps one call per id: the
/// second replaced the first's place, the first's answer took it, and the second's answer
/// was dropped, so its client waited for nothing (tester 15 F5). JSON-RPC asks an id to be
/// unique among the requests a client has in flight: the second is refused at once, and
/// the first goes on.
pub fn already_in_flight(id: &RequestId) -> ErrorData {
    let named = match id {
        RequestId::Number(n) => format!("id {n}"),
        RequestId::String(s) if s.len() <= ID_SHOWN_MAX => format!("id {s:?}"),
        RequestId::String(_) => "its id".to_string(),
    };
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "Invalid Request: {named} is already in flight: a request's id must differ from every other request not yet answered; send it again under another id"
        ),
        None,
    )
}

impl<T> Transport<RoleServer> for Settled<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = answered {
            self.commits.answered(STDIO, id);
            self.in_flight.remove(id);
            self.count();
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.refused().await {
                return None;
            }
            let message = self.inner.receive().await?;
            if !self.commits.hands_on(STDIO, &message) {
                continue;
            }
            if !self.initialized {
                if let JsonRpcMessage::Request(r) = &message
                    && let Some(refusal) = crate::mcp_server::jsonrpc::before_initialize(&message)
                {
                    let refusal = crate::mcp_server::jsonrpc::Refusal {
                        error: refusal,
                        id: Some(r.id.clone()),
                        notification: false,
                    };
                    self.refuse(refusal.into_message());
                    continue;
                }
                self.initialized = matches!(&message, JsonRpcMessage::Request(_));
            }
            match &message {
                JsonRpcMessage::Request(r) if !self.in_flight.insert(r.id.clone()) => {
                    let refusal =
                        JsonRpcMessage::error(already_in_flight(&r.id), Some(r.id.clone()));
                    self.refuse(refusal);
                    continue;
                }
                // rmcp drops the answer to a call it is told is cancelled: the id is free.
                JsonRpcMessage::Notification(n) => {
                    if let ClientNotification::CancelledNotification(c) = &n.notification
                        && let Some(id) = &c.params.request_id
                    {
                        self.in_flight.remove(id);
                    }
                }
                _ => {}
            }
            self.count();
            return Some(message);
        }
    }

    /// Its last refusal is out first, however `receive` last ended.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.refused().await;
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_server::handler::{Console, HistorySource, State};
    use crate::mcp_server::stdio::BoundedStdio;
    use crate::workspace::{Workspace, WorkspaceOptions};
    use rmcp::ServiceExt;
    use serde_json::Value;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[test]
    fn a_cancel_before_the_commit_stops_the_call_and_one_after_it_is_swallowed() {
        let commits = Arc::new(Commits::default());
        let id = RequestId::Number(2);
        let call = commits.begin(STDIO, id.clone());
        assert!(commits.cancel(STDIO, &id), "not committed: handed on");
        assert!(
            !call.commit(false),
            "cancelled first: nothing may be stored"
        );
        drop(call);
        assert!(commits.calls().is_empty());
        let call = commits.begin(STDIO, id.clone());
        assert!(!call.commit(true), "rmcp's token cancelled: nothing stored");
        drop(call);
        let call = commits.begin(STDIO, id.clone());
        assert!(call.commit(false));
        assert!(
            commits.cancel("another-session", &id),
            "the same id in another session is another call"
        );
        assert!(
            !commits.cancel(STDIO, &id),
            "committed: the cancel is too late, swallowed"
        );
        assert!(call.commit(false), "still committed");
        drop(call);
        assert!(
            !commits.cancel(STDIO, &id),
            "swallowed until its answer goes out"
        );
        commits.answered(STDIO, &id);
        assert!(commits.calls().is_empty());
        assert!(
            commits.cancel(STDIO, &RequestId::Number(9)),
            "another call's cancel is handed on"
        );
        assert!(commits.calls().is_empty(), "and not kept");
    }

    /// A workspace's store served with hooks: a call stops right after its rows are stored
    /// (`stored_rx` says so) until `go_tx` lets it go on; `read_rx` names each cancel read.
    struct Hooked {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        state: Arc<State>,
        commits: Arc<Commits>,
        stored_rx: std::sync::mpsc::Receiver<()>,
        go_tx: std::sync::mpsc::Sender<()>,
        read_rx: std::sync::mpsc::Receiver<RequestId>,
    }

    fn hooked() -> Hooked {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().into()),
            registry: None,
        })
        .unwrap();
        let path = ws
            .open_history(&Default::default())
            .unwrap()
            .path()
            .to_path_buf();
        let state = Arc::new(State::new(ws, HistorySource::File(path.clone()), false));
        let commits = Arc::new(Commits::default());
        let (stored_tx, stored_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (stored_tx, go_rx) = (Mutex::new(stored_tx), Mutex::new(go_rx));
        *commits.on_stored.lock().unwrap() = Some(Box::new(move |_| {
            let _ = stored_tx.lock().unwrap().send(());
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(20));
        }));
        let (read_tx, read_rx) = std::sync::mpsc::channel::<RequestId>();
        let read_tx = Mutex::new(read_tx);
        *commits.on_cancel_read.lock().unwrap() = Some(Box::new(move |id| {
            let _ = read_tx.lock().unwrap().send(id.clone());
        }));
        Hooked {
            _dir: dir,
            path,
            state,
            commits,
            stored_rx,
            go_tx,
            read_rx,
        }
    }

    async fn write_line(w: &mut (impl AsyncWriteExt + Unpin), v: &Value) {
        let mut bytes = serde_json::to_vec(v).unwrap();
        bytes.push(b'\n');
        w.write_all(&bytes).await.unwrap();
        w.flush().await.unwrap();
    }

    async fn wait_for<T: Send + 'static>(rx: std::sync::mpsc::Receiver<T>, what: &str) -> T {
        tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(20)))
            .await
            .unwrap()
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    }

    /// Tester 12 T12-8: a `record_execution` the client cancelled a few ms after the store
    /// committed it was stored and got no answer (rmcp drops the answer to a call whose
    /// cancel it read), so the agent's retry stored it again. Deterministic: the call stops
    /// right after its rows are stored, the cancel is read by the transport, then the call
    /// goes on — and is answered.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_record_execution_cancelled_just_after_its_commit_is_answered() {
        let Hooked {
            _dir: _home,
            path,
            state,
            commits,
            stored_rx,
            go_tx,
            read_rx,
        } = hooked();
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_r, server_w) = tokio::io::split(server);
        let transport = Settled::new(
            BoundedStdio::new(server_r, server_w, 1 << 20),
            Arc::clone(&commits),
        );
        let serving = tokio::spawn(async move {
            let running = Console::with_commits(state, commits)
                .serve(transport)
                .await
                .unwrap();
            let _ = running.waiting().await;
        });
        let (client_r, mut client_w) = tokio::io::split(client);
        let mut lines = BufReader::new(client_r).lines();
        let mut next = async || -> Value {
            let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the server still open");
            serde_json::from_str(&line).unwrap()
        };
        write_line(
            &mut client_w,
            &serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}),
        )
        .await;
        assert_eq!(next().await["id"], 1);
        write_line(
            &mut client_w,
            &serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .await;
        write_line(
            &mut client_w,
            &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_execution",
                "arguments": {"caller": "t12-8-agent", "tool": "web.search", "ok": true}}}),
        )
        .await;
        wait_for(stored_rx, "the call's rows stored").await;
        write_line(
            &mut client_w,
            &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timeout"}}),
        )
        .await;
        let read = wait_for(read_rx, "the cancel read").await;
        assert_eq!(read, RequestId::Number(2));
        go_tx.send(()).unwrap();
        let answer = next().await;
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["added"], 1,
            "{answer}"
        );
        let rows: i64 = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM executions WHERE caller = 't12-8-agent'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 1);
        serving.abort();
    }

    /// T12-8 over HTTP: the cancel comes as its own POST in the call's session, read by the
    /// listener before rmcp; the same hooks stop the call after its rows are stored until
    /// the listener has read the cancel.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_http_a_record_execution_cancelled_just_after_its_commit_is_answered() {
        let Hooked {
            _dir: _home,
            path,
            state,
            commits,
            stored_rx,
            go_tx,
            read_rx,
        } = hooked();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let sessions = crate::mcp_server::sessions::Sessions::new(4, Duration::from_secs(60));
        let serving = tokio::spawn(crate::mcp_server::http::serve(
            state,
            addr,
            None,
            false,
            sessions,
            commits,
            Default::default(),
        ));
        let url = format!("http://{addr}/mcp");
        let http = reqwest::Client::new();
        let post = |body: Value, session: Option<String>| {
            let mut r = http
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .json(&body);
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            r.send()
        };
        let init = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}});
        let mut tries = 0;
        let r = loop {
            match post(init.clone(), None).await {
                Ok(r) => break r,
                Err(e) => {
                    tries += 1;
                    assert!(tries < 100, "the server never listened: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        assert_eq!(r.status(), 200);
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        assert!(r.text().await.unwrap().contains("serverInfo"));
        let r = post(
            serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            Some(session.clone()),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 202);
        let call = tokio::spawn(post(
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_execution",
                "arguments": {"caller": "t12-8-http", "tool": "web.search", "ok": true}}}),
            Some(session.clone()),
        ));
        wait_for(stored_rx, "the call's rows stored").await;
        let r = post(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timeout"}}),
            Some(session.clone()),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 202);
        let read = wait_for(read_rx, "the cancel read").await;
        assert_eq!(read, RequestId::Number(2));
        go_tx.send(()).unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(20), async {
            call.await.unwrap().unwrap().text().await.unwrap()
        })
        .await
        .expect("the call answered");
        assert!(
            answer.contains("\"id\":2") && answer.contains("\"added\":1"),
            "{answer}"
        );
        let rows: i64 = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM executions WHERE caller = 't12-8-http'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 1);
        serving.abort();
    }
}
