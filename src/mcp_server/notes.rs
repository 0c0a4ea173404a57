//! Lines about events a client can cause in bulk (a session closed at the cap, a connection
//! ended by an error), said on stderr and in the log at most once per [`NOTE_EVERY`]: the
//! first of a burst at once, the rest counted into one line when the interval is up (the
//! latest of them, "and N more"). A flood of `initialize`s or of half-sent connections
//! cannot flood stderr or the log (41,517 "a connection ended" lines, tester 15 F4).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// At most one line of a kind per this long; the ones between are counted into the next.
pub const NOTE_EVERY: Duration = Duration::from_secs(1);

/// One event as it is said.
pub trait Note: Send + 'static {
    /// Its line; `more`: how many others of its kind came since the last line and are said
    /// with it.
    fn line(&self, more: usize) -> String;
}

/// What [`Notes::noted`] asks of its caller.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Say this line now.
    Say(String),
    /// Held for a later line; when `Some`, say [`Notes::flush`] at that time (no flush is
    /// waiting yet).
    Hold(Option<Instant>),
}

/// Events of one kind, said at most once per [`NOTE_EVERY`] (see the module). Times are
/// given, so it is tested without waiting.
#[derive(Debug)]
pub(crate) struct Notes<T> {
    pub(crate) last_said: Option<Instant>,
    /// The latest event not yet said, and how many are held with it (itself included).
    held: Option<(T, usize)>,
    /// When the waiting flush will run, if one is waiting.
    flush_at: Option<Instant>,
}

impl<T> Default for Notes<T> {
    fn default() -> Self {
        Notes {
            last_said: None,
            held: None,
            flush_at: None,
        }
    }
}

impl<T: Note> Notes<T> {
    pub(crate) fn noted(&mut self, now: Instant, event: T) -> Step {
        let count = self.held.take().map_or(0, |(_, n)| n) + 1;
        let due = self
            .last_said
            .is_none_or(|at| now.duration_since(at) >= NOTE_EVERY);
        if due {
            self.last_said = Some(now);
            return Step::Say(event.line(count - 1));
        }
        self.held = Some((event, count));
        if self.flush_at.is_some() {
            return Step::Hold(None);
        }
        let at = self.last_said.map_or(now, |at| at + NOTE_EVERY);
        self.flush_at = Some(at);
        Step::Hold(Some(at))
    }

    /// The waiting flush, run at `now`: the line for what is held, if anything is; or
    /// `Err(when)` to run again then, when a line was said since it was set (an event that
    /// came due said the held ones with it) and what is held now is not yet due.
    pub(crate) fn flush(&mut self, now: Instant) -> Result<Option<String>, Instant> {
        if self.held.is_some()
            && let Some(at) = self.last_said
            && now.duration_since(at) < NOTE_EVERY
        {
            let again = at + NOTE_EVERY;
            self.flush_at = Some(again);
            return Err(again);
        }
        self.flush_at = None;
        let Some((event, count)) = self.held.take() else {
            return Ok(None);
        };
        self.last_said = Some(now);
        Ok(Some(event.line(count - 1)))
    }
}

/// A line on stderr, and in the log when it is on.
fn say(line: &str) {
    crate::cli::out::eprint_line(line);
    tracing::info!("{line}");
}

/// The notes, poisoned or not: a panic elsewhere leaves counts.
fn lock<T>(notes: &Mutex<Notes<T>>) -> MutexGuard<'_, Notes<T>> {
    notes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where events of one kind are said from, shared by whoever notes them.
#[derive(Debug)]
pub struct Noter<T>(Arc<Mutex<Notes<T>>>);

impl<T> Default for Noter<T> {
    fn default() -> Self {
        Noter(Arc::new(Mutex::new(Notes::default())))
    }
}

impl<T> Clone for Noter<T> {
    fn clone(&self) -> Self {
        Noter(Arc::clone(&self.0))
    }
}

impl<T: Note> Noter<T> {
    /// Say (or count, in a burst) one event; the rest of a burst is said by a task when the
    /// interval is up. Needs a tokio runtime.
    pub fn note(&self, event: T) {
        let step = lock(&self.0).noted(Instant::now(), event);
        match step {
            Step::Say(line) => say(&line),
            Step::Hold(None) => {}
            Step::Hold(Some(at)) => {
                let notes = Arc::clone(&self.0);
                tokio::spawn(async move {
                    let mut at = at;
                    loop {
                        tokio::time::sleep_until(at.into()).await;
                        let flushed = lock(&notes).flush(Instant::now());
                        match flushed {
                            Ok(Some(line)) => break say(&line),
                            Ok(None) => break,
                            Err(again) => at = again,
                        }
                    }
                });
            }
        }
    }
}
