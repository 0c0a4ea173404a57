//! The MCP sessions `ctxconsole mcp --http` holds: rmcp's [`LocalSessionManager`], its
//! keep-alive closing a session nobody has used for [`SESSION_IDLE`], and a cap on how many
//! live at once, checked as each `initialize` comes in. Before, every `initialize` left a
//! session (about 50 KB) until its client sent DELETE, which a crashed or careless client
//! never does: 15,000 initializes held 771 MB.
//!
//! At the cap a new `initialize` closes the least recently used session rather than being
//! refused: refusing let anyone who kept the sessions alive with pings lock every other
//! client out for as long as they liked. When each session was last used is kept here
//! ([`Sessions::started`], [`Sessions::used`]), the one place that knows. Each such closing
//! is said on stderr and in the log, a burst at most once a second with a count
//! ([`crate::mcp_server::notes`]).

use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::mcp_server::notes::{Note, Noter};
use std::time::{Duration, Instant};

/// The most sessions held at once (`--max-sessions`): an `initialize` beyond them closes
/// the least recently used one. A console's clients are a handful.
pub const SESSIONS_MAX: usize = 64;

/// How long closing an evicted session may take before the newcomer is let in anyway (the
/// session is out of rmcp's table at once; this waits only for its worker to be told).
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// How much of a session id a line shows: enough to tell sessions apart, short to read.
const SHORT_ID: usize = 8;

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
    /// What has been said about sessions closed at the cap.
    notes: Noter<Eviction>,
}

#[derive(Debug, Default)]
struct LastUse {
    clock: u64,
    /// Each session's last use: its place in the order of uses (larger is more recent),
    /// and when, for the idle time said when it is closed at the cap.
    sessions: HashMap<SessionId, (u64, Instant)>,
}

/// One session closed at the cap, as it is said.
#[derive(Debug, Clone, PartialEq)]
struct Eviction {
    /// The first [`SHORT_ID`] characters of its id.
    short_id: String,
    idle: Duration,
    cap: usize,
}

impl Note for Eviction {
    fn line(&self, more: usize) -> String {
        let mut line = format!(
            "ctxconsole mcp: session {}… closed at the cap of {} (idle {} s) to admit a new one",
            self.short_id,
            self.cap,
            self.idle.as_secs()
        );
        if more > 0 {
            let s = if more == 1 { "" } else { "s" };
            line.push_str(&format!(
                ", and {more} more session{s} closed since the last such line"
            ));
        }
        line
    }
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
            notes: Noter::default(),
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
        table
            .sessions
            .insert(SessionId::from(id), (now, Instant::now()));
    }

    /// A request came in for session `id`: it is now the most recently used. An id this
    /// server did not start (unknown, closed) is not entered.
    pub fn used(&self, id: &str) {
        let mut table = self.last_use();
        let now = table.tick();
        if let Some(at) = table.sessions.get_mut(id) {
            *at = (now, Instant::now());
        }
    }

    /// Close the least recently used session rmcp holds, so a new one can take its place;
    /// false when there is none to close (every place is taken by an `initialize` not yet
    /// answered). Its client gets 404 on its next request and starts again, as after idle
    /// expiry. Said on stderr and in the log (see [`crate::mcp_server::notes`]).
    async fn evict_least_recently_used(&self) -> bool {
        let live: Vec<SessionId> = self.manager.sessions.read().await.keys().cloned().collect();
        let victim = {
            let mut table = self.last_use();
            table.sessions.retain(|id, _| live.contains(id));
            let victim = table
                .sessions
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, (_, used))| (id.clone(), *used));
            if let Some((id, _)) = &victim {
                table.sessions.remove(id);
            }
            victim
        };
        let Some((id, used)) = victim else {
            return false;
        };
        self.notes.note(Eviction {
            short_id: id.chars().take(SHORT_ID).collect(),
            idle: used.elapsed(),
            cap: self.max,
        });
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
    use crate::mcp_server::notes::{Notes, Step};

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

    fn eviction(n: usize) -> Eviction {
        Eviction {
            short_id: format!("{n:08}"),
            idle: Duration::from_millis(41_900),
            cap: 64,
        }
    }

    /// A session closed at the cap is one line naming it, its idle time and the cap; a
    /// burst is one line at once and then at most one a second, each counting what it
    /// stands for, until nothing is left unsaid.
    #[test]
    fn sessions_closed_at_the_cap_are_said_at_most_once_a_second_and_all_counted() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut notes = Notes::<Eviction>::default();
        assert_eq!(
            notes.noted(t0, eviction(1)),
            Step::Say(
                "ctxconsole mcp: session 00000001… closed at the cap of 64 (idle 41 s) to admit a new one".into()
            )
        );
        // Within the second: held; the first held asks for one flush, at the second's end.
        assert_eq!(notes.noted(ms(10), eviction(2)), Step::Hold(Some(ms(1000))));
        for n in 3..=38 {
            assert_eq!(
                notes.noted(ms(10 + n as u64), eviction(n)),
                Step::Hold(None)
            );
        }
        let line = notes.flush(ms(1000)).unwrap().unwrap_or_default();
        assert!(
            line.starts_with("ctxconsole mcp: session 00000038… closed at the cap of 64")
                && line.ends_with(", and 36 more sessions closed since the last such line"),
            "{line}"
        );
        assert_eq!(notes.flush(ms(1001)), Ok(None));
        // The next within a second of that line is held again.
        assert_eq!(
            notes.noted(ms(1500), eviction(39)),
            Step::Hold(Some(ms(2000)))
        );
        // One that comes due before the flush runs says the held one with it; the flush
        // then finds nothing.
        let Step::Say(line) = notes.noted(ms(2000), eviction(40)) else {
            panic!("not said when due");
        };
        assert!(
            line.ends_with(", and 1 more session closed since the last such line"),
            "{line}"
        );
        assert_eq!(notes.flush(ms(2001)), Ok(None));
        // A late flush that finds a held one not yet due waits for its time.
        assert_eq!(
            notes.noted(ms(2100), eviction(41)),
            Step::Hold(Some(ms(3000)))
        );
        notes.last_said = Some(ms(2500));
        assert_eq!(notes.flush(ms(3000)), Err(ms(3500)));
        assert!(notes.flush(ms(3500)).unwrap().is_some());
        // After a quiet second, the next is said at once.
        assert!(matches!(notes.noted(ms(9000), eviction(42)), Step::Say(_)));
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
