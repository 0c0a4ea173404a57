//! The MCP sessions `ctxconsole mcp --http` holds: rmcp's [`LocalSessionManager`], its
//! sessions nobody has used for [`SESSION_IDLE`] closed here, and a cap on how many
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

/// A session nothing has been sent to for this long, and with no request in flight, is
/// closed (`--session-idle`, [`Sessions::close_idle`]); its client gets 404 on its next request and starts a new session, as the
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
    last_use: Arc<Mutex<LastUse>>,
    /// How long a session may go without a request before it is closed.
    idle: Duration,
    /// How many requests are being answered now, in every session.
    in_flight: Arc<AtomicUsize>,
    /// What has been said about sessions closed at the cap.
    notes: Noter<Eviction>,
}

#[derive(Debug, Default)]
struct LastUse {
    clock: u64,
    /// Each session's use (see [`Use`]).
    sessions: HashMap<SessionId, Use>,
}

/// One session's use: its place in the order of uses (larger is more recent) and when,
/// for the idle time; how many of its requests are being answered now; and whether it is
/// being closed. A session with a request in flight is neither closed at the cap nor idle
/// (tester 20 F17: closed mid-call, its `record_execution` was stored and the client got
/// an empty stream); a request for a session being closed gets 404.
#[derive(Debug, Clone, Copy)]
struct Use {
    order: u64,
    at: Instant,
    busy: usize,
    closing: bool,
}

/// What a request for a session finds (see [`Sessions::enter`]).
#[derive(Debug)]
pub enum Entered {
    /// Not a session this server started (never, or closed and gone): rmcp answers it.
    Unknown,
    /// Being closed: the request gets 404, as for a session gone.
    Closing,
    /// Live, and marked busy until the guard is dropped (the answer sent or its client
    /// gone), when it is marked used.
    Busy(Busy),
}

/// A request in flight in a session (see [`Entered::Busy`]).
#[derive(Debug)]
pub struct Busy {
    sessions: Arc<Mutex<LastUse>>,
    id: SessionId,
    in_flight: Arc<AtomicUsize>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut table = lock(&self.sessions);
        let now = table.tick();
        if let Some(u) = table.sessions.get_mut(&self.id) {
            u.busy = u.busy.saturating_sub(1);
            u.order = now;
            u.at = Instant::now();
        }
    }
}

/// The last-use table. Nothing that panics is done while it is held, and a poisoned one is
/// still a table of counts.
fn lock(table: &Mutex<LastUse>) -> MutexGuard<'_, LastUse> {
    table
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        // rmcp's keep-alive counts a session idle while its request is being answered (a
        // call waiting for the store's write lock lost its answer, tester 20 F17): idle
        // sessions are closed here instead ([`Sessions::close_idle`]).
        let mut config = SessionConfig::default();
        config.keep_alive = None;
        let mut manager = LocalSessionManager::default();
        manager.session_config = config;
        Sessions {
            manager: Arc::new(manager),
            max,
            starting: Arc::new(AtomicUsize::new(0)),
            admitting: tokio::sync::Mutex::new(()),
            last_use: Arc::new(Mutex::new(LastUse::default())),
            idle,
            in_flight: Arc::new(AtomicUsize::new(0)),
            notes: Noter::default(),
        }
    }

    fn last_use(&self) -> MutexGuard<'_, LastUse> {
        lock(&self.last_use)
    }

    /// Session `id` was just made for an `initialize` let in: it is now the most recently
    /// used.
    pub fn started(&self, id: &str) {
        let mut table = self.last_use();
        let order = table.tick();
        table.sessions.insert(
            SessionId::from(id),
            Use {
                order,
                at: Instant::now(),
                busy: 0,
                closing: false,
            },
        );
    }

    /// A request came in for session `id`: it is now the most recently used, and busy
    /// until the [`Busy`] given is dropped; or it is being closed, or is not one this
    /// server started (never entered: an id a client makes up adds nothing).
    pub fn enter(&self, id: &str) -> Entered {
        let mut table = self.last_use();
        let order = table.tick();
        let Some(u) = table.sessions.get_mut(id) else {
            return Entered::Unknown;
        };
        if u.closing {
            return Entered::Closing;
        }
        u.order = order;
        u.at = Instant::now();
        u.busy += 1;
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Entered::Busy(Busy {
            sessions: Arc::clone(&self.last_use),
            id: SessionId::from(id),
            in_flight: Arc::clone(&self.in_flight),
        })
    }

    /// How many requests are being answered now, in every session.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Whether session `id` is gone or going: being closed here, or no longer in rmcp's
    /// table (a request that found it there may still have been told "Session service
    /// terminated", which is a 404 to its client, never a 500).
    pub async fn gone(&self, id: &str) -> bool {
        if self.last_use().sessions.get(id).is_some_and(|u| u.closing) {
            return true;
        }
        !self.manager.sessions.read().await.contains_key(id)
    }

    /// Close session `id` for its client's DELETE: false when this server holds no such
    /// session (never made, closed, or being closed), which the client is told with 404.
    pub async fn close_for_client(&self, id: &str) -> bool {
        if self.gone(id).await {
            return false;
        }
        if let Some(u) = self.last_use().sessions.get_mut(id) {
            u.closing = true;
        }
        let id = SessionId::from(id);
        let closed = self.manager.close_session(&id).await;
        self.last_use().sessions.remove(&id);
        closed.is_ok()
    }

    /// Mark as closing the sessions `choose` picks among those live and not busy, and close
    /// them. Done under the table's lock, so no request enters a session once it is chosen,
    /// and none with a request in flight is chosen.
    async fn close_chosen(
        &self,
        choose: impl FnOnce(&mut LastUse) -> Vec<(SessionId, Instant)>,
    ) -> Vec<(SessionId, Instant)> {
        let live: Vec<SessionId> = self.manager.sessions.read().await.keys().cloned().collect();
        // A session rmcp holds that was never entered here (its initialize failed after the
        // session was made) is adopted as just used, so it too goes when idle; while an
        // initialize is being answered its session may not be entered yet, so none then.
        let adopt = self.starting.load(Ordering::SeqCst) == 0;
        let chosen = {
            let mut table = self.last_use();
            table
                .sessions
                .retain(|id, u| u.closing || live.contains(id));
            if adopt {
                for id in &live {
                    if !table.sessions.contains_key(id) {
                        let order = table.tick();
                        table.sessions.insert(
                            id.clone(),
                            Use {
                                order,
                                at: Instant::now(),
                                busy: 0,
                                closing: false,
                            },
                        );
                    }
                }
            }
            let chosen = choose(&mut table);
            for (id, _) in &chosen {
                if let Some(u) = table.sessions.get_mut(id) {
                    u.closing = true;
                }
            }
            chosen
        };
        for (id, _) in &chosen {
            // Out of rmcp's table before close_session waits on the worker: a timeout here
            // still leaves the place free, and any error is the session already gone.
            let _ = tokio::time::timeout(CLOSE_WAIT, self.manager.close_session(id)).await;
            self.last_use().sessions.remove(id);
        }
        chosen
    }

    /// Close the least recently used session with no request in flight, so a new one can
    /// take its place; false when there is none to close (every place is taken by a session
    /// being answered or an `initialize` not yet answered). Its client gets 404 on its next
    /// request and starts again, as after idle expiry. Said on stderr and in the log (see
    /// [`crate::mcp_server::notes`]).
    async fn evict_least_recently_used(&self) -> bool {
        let closed = self
            .close_chosen(|table| {
                table
                    .sessions
                    .iter()
                    .filter(|(_, u)| u.busy == 0 && !u.closing)
                    .min_by_key(|(_, u)| u.order)
                    .map(|(id, u)| (id.clone(), u.at))
                    .into_iter()
                    .collect()
            })
            .await;
        let Some((id, used)) = closed.first() else {
            return false;
        };
        self.notes.note(Eviction {
            short_id: id.chars().take(SHORT_ID).collect(),
            idle: used.elapsed(),
            cap: self.max,
        });
        true
    }

    /// Close every session nothing has been sent to for the idle time and none of whose
    /// requests is in flight; its client gets 404 on its next request and starts a new
    /// session, as the transport says it must. How many were closed.
    pub async fn close_idle(&self) -> usize {
        let idle = self.idle;
        self.close_chosen(|table| {
            table
                .sessions
                .iter()
                .filter(|(_, u)| u.busy == 0 && !u.closing && u.at.elapsed() >= idle)
                .map(|(id, u)| (id.clone(), u.at))
                .collect()
        })
        .await
        .len()
    }

    /// How often [`Self::close_idle`] runs: a session goes at most a quarter of its idle
    /// time late (at most 10 s).
    pub fn idle_check_every(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(25), Duration::from_secs(10))
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
    /// one with no request in flight; or why there is none (every place is held by a
    /// session being answered or an `initialize` still being answered). A session counted
    /// both in the table and as starting (between rmcp's making it and its answer) errs
    /// towards closing one more, never past the cap.
    pub async fn admit(&self) -> Result<Place, String> {
        let _one_at_a_time = self.admitting.lock().await;
        while self.live().await + self.starting.load(Ordering::SeqCst) >= self.max {
            if !self.evict_least_recently_used().await {
                return Err(format!(
                    "too many MCP sessions busy at once: this server holds at most {} and every one is answering a request or being initialized; retry in a moment",
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
        assert!(refused.contains("busy at once"), "{refused}");
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
        assert!(matches!(sessions.enter("made-up"), Entered::Unknown));
        assert!(sessions.last_use().sessions.is_empty());
        sessions.started("a");
        sessions.started("b");
        let busy = sessions.enter("a");
        assert!(matches!(busy, Entered::Busy(_)));
        {
            let table = sessions.last_use();
            assert!(table.sessions["a"].order > table.sessions["b"].order);
            assert_eq!(table.sessions["a"].busy, 1);
        }
        assert_eq!(sessions.in_flight(), 1);
        drop(busy);
        assert_eq!(sessions.last_use().sessions["a"].busy, 0);
        assert_eq!(sessions.in_flight(), 0);
    }
}
