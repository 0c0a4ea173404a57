//! The MCP sessions `ctxconsole mcp --http` holds: rmcp's [`LocalSessionManager`], its
//! keep-alive closing a session nobody has used for [`SESSION_IDLE`], and a cap on how many
//! live at once, checked as each `initialize` comes in. Before, every `initialize` left a
//! session (about 50 KB) until its client sent DELETE, which a crashed or careless client
//! never does: 15,000 initializes held 771 MB.

use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most sessions held at once (`--max-sessions`): an `initialize` beyond them is
/// refused (503) until one is closed or expires. A console's clients are a handful.
pub const SESSIONS_MAX: usize = 64;

/// A session nothing has been sent to for this long is closed (`--session-idle`, rmcp's
/// keep-alive); its client gets 404 on its next request and starts a new session, as the
/// transport says it must.
pub const SESSION_IDLE: Duration = Duration::from_secs(5 * 60);

/// The sessions, and the count of `initialize` requests let in whose session may not be in
/// rmcp's table yet.
#[derive(Debug)]
pub struct Sessions {
    manager: Arc<LocalSessionManager>,
    max: usize,
    starting: Arc<AtomicUsize>,
    /// Held while one request is counted and let in: two at once cannot both take the last
    /// place.
    admitting: tokio::sync::Mutex<()>,
}

/// A place taken by one `initialize` until rmcp has answered it (its session is then in
/// the table, or was never made). Given back when dropped, however the request ended.
#[derive(Debug)]
pub struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Sessions {
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        let mut manager = LocalSessionManager::default();
        manager.session_config = config;
        Sessions {
            manager: Arc::new(manager),
            max,
            starting: Arc::new(AtomicUsize::new(0)),
            admitting: tokio::sync::Mutex::new(()),
        }
    }

    /// The session manager to give rmcp's service: the one whose table is counted.
    pub fn manager(&self) -> Arc<LocalSessionManager> {
        Arc::clone(&self.manager)
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// How many sessions are live now.
    pub async fn live(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// A place for one new session, or why there is none. A session counted both in the
    /// table and as starting (between rmcp's making it and its answer) errs towards
    /// refusing, never past the cap.
    pub async fn admit(&self) -> Result<Place, String> {
        let _one_at_a_time = self.admitting.lock().await;
        let taken = self.live().await + self.starting.load(Ordering::SeqCst);
        if taken >= self.max {
            return Err(format!(
                "too many MCP sessions: this server holds at most {} at once; close one (HTTP DELETE with its Mcp-Session-Id) or retry once an idle one has expired (after {} without a request)",
                self.max,
                crate::core::duration::describe(self.idle())
            ));
        }
        self.starting.fetch_add(1, Ordering::SeqCst);
        Ok(Place(Arc::clone(&self.starting)))
    }

    fn idle(&self) -> Duration {
        self.manager
            .session_config
            .keep_alive
            .unwrap_or(SESSION_IDLE)
    }
}
