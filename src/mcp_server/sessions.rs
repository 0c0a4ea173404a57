//! The MCP sessions `ctxconsole mcp --http` holds: rmcp's [`LocalSessionManager`], its
//! keep-alive closing a session nobody has used for [`SESSION_IDLE`], and a cap on how many
//! live at once, checked as each `initialize` comes in. Before, every `initialize` left a
//! session (about 50 KB) until its client sent DELETE, which a crashed or careless client
//! never does: 15,000 initializes held 771 MB.
//!
//! At the cap a new `initialize` closes the least recently used session rather than being
//! refused: refusing let anyone who kept the sessions alive with pings lock every other
//! client out for as long as they liked. When each session was last used is kept here
//! ([`Sessions::started`], [`Sessions::used`]), the one place that knows.

use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The most sessions held at once (`--max-sessions`): an `initialize` beyond them closes
/// the least recently used one. A console's clients are a handful.
pub const SESSIONS_MAX: usize = 64;

/// How long closing an evicted session may take before the newcomer is let in anyway (the
/// session is out of rmcp's table at once; this waits only for its worker to be told).
const CLOSE_WAIT: Duration = Duration::from_secs(1);

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
    /// Each session this server answered an `initialize` for, and when it was last used (a
    /// count that grows with every use: larger is more recent). Only sessions let in are
    /// entered, so an id a client makes up adds nothing; entries whose session rmcp no
    /// longer holds (closed, expired) are dropped at the next `initialize`.
    last_use: Mutex<LastUse>,
}

#[derive(Debug, Default)]
struct LastUse {
    clock: u64,
    sessions: HashMap<SessionId, u64>,
}

impl LastUse {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
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
            last_use: Mutex::new(LastUse::default()),
        }
    }

    /// The last-use table. Nothing that panics is done while it is held, and a poisoned one
    /// is still a table of counts.
    fn last_use(&self) -> MutexGuard<'_, LastUse> {
        self.last_use
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Session `id` was just made for an `initialize` let in: it is now the most recently
    /// used.
    pub fn started(&self, id: &str) {
        let mut table = self.last_use();
        let now = table.tick();
        table.sessions.insert(SessionId::from(id), now);
    }

    /// A request came in for session `id`: it is now the most recently used. An id this
    /// server did not start (unknown, closed) is not entered.
    pub fn used(&self, id: &str) {
        let mut table = self.last_use();
        let now = table.tick();
        if let Some(at) = table.sessions.get_mut(id) {
            *at = now;
        }
    }

    /// Close the least recently used session rmcp holds, so a new one can take its place;
    /// false when there is none to close (every place is taken by an `initialize` not yet
    /// answered). Its client gets 404 on its next request and starts again, as after idle
    /// expiry.
    async fn evict_least_recently_used(&self) -> bool {
        let live: Vec<SessionId> = self.manager.sessions.read().await.keys().cloned().collect();
        let victim = {
            let mut table = self.last_use();
            table.sessions.retain(|id, _| live.contains(id));
            let victim = table
                .sessions
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone());
            if let Some(id) = &victim {
                table.sessions.remove(id);
            }
            victim
        };
        let Some(id) = victim else {
            return false;
        };
        // Out of rmcp's table before close_session waits on the worker: a timeout here
        // still leaves the place free, and any error is the session already gone.
        let _ = tokio::time::timeout(CLOSE_WAIT, self.manager.close_session(&id)).await;
        true
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

    /// A place for one new session, made at the cap by closing the least recently used
    /// one; or why there is none (every place is held by an `initialize` still being
    /// answered). A session counted both in the table and as starting (between rmcp's
    /// making it and its answer) errs towards closing one more, never past the cap.
    pub async fn admit(&self) -> Result<Place, String> {
        let _one_at_a_time = self.admitting.lock().await;
        while self.live().await + self.starting.load(Ordering::SeqCst) >= self.max {
            if !self.evict_least_recently_used().await {
                return Err(format!(
                    "too many MCP sessions starting at once: this server holds at most {} and every place is taken by an initialize not yet answered; retry in a moment",
                    self.max
                ));
            }
        }
        self.starting.fetch_add(1, Ordering::SeqCst);
        Ok(Place(Arc::clone(&self.starting)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only sessions still being answered hold every place: nothing can be closed for a
    /// newcomer, which is refused saying so, and let in once a place is given back.
    #[tokio::test]
    async fn places_held_by_initializes_being_answered_are_not_taken() {
        let sessions = Sessions::new(1, SESSION_IDLE);
        let place = sessions.admit().await;
        assert!(place.is_ok());
        let refused = sessions.admit().await.err().unwrap_or_default();
        assert!(refused.contains("starting at once"), "{refused}");
        drop(place);
        assert!(sessions.admit().await.is_ok());
    }

    /// An id a client made up is never entered, so it cannot grow the table.
    #[test]
    fn only_sessions_started_here_are_entered() {
        let sessions = Sessions::new(2, SESSION_IDLE);
        sessions.used("made-up");
        assert!(sessions.last_use().sessions.is_empty());
        sessions.started("a");
        sessions.started("b");
        sessions.used("a");
        let table = sessions.last_use();
        assert!(table.sessions["a"] > table.sessions["b"]);
    }
}
