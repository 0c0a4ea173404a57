//! The terminal guard: raw mode, alternate screen, bracketed paste and mouse capture on while
//! it lives; the terminal put back as it was found on every way out:
//!
//! - quit and error: the guard is dropped;
//! - a panic on any thread: the process-wide panic hook restores the terminal before the
//!   message is printed (so it lands on the shell's screen); a panic off the main thread
//!   then ends the process with 101, as a main-thread panic does, rather than leaving a
//!   console drawing on a restored terminal;
//! - SIGINT, SIGTERM, SIGHUP, SIGQUIT (`kill`; in raw mode Ctrl-C is a key, not a signal):
//!   one signal thread. While a console loop runs ([`on_terminate`]), the first such
//!   signal is handed to the loop, which ends as a quit does (what is still out is
//!   cancelled, what came back is stored, the terminal restored) and then exits with 128 +
//!   the signal's number ([`terminated_by`]); a second signal, or one outside a loop,
//!   restores the terminal and exits with 128 + its number at once.
//!
//! A frame and a final restore never interleave: both hold [`SCREEN`], and whoever restores
//! for good keeps it until the process ends, so no frame lands on the shell's screen.

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use std::cell::Cell;
use std::io::{Stdout, Write, stdout};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, Once, TryLockError};
use std::time::{Duration, Instant};

pub type Term = Terminal<CrosstermBackend<Stdout>>;

pub struct TerminalGuard {
    /// Never dropped: ratatui's drop shows the cursor again and, when that fails (the
    /// terminal is gone: a closed window's SIGHUP), says so with `eprintln!`, which panics on
    /// a stderr that is gone too (exit 101 before the answers already back are stored).
    /// [`restore`] shows the cursor, its errors ignored.
    pub terminal: ManuallyDrop<Term>,
}

/// True while a guard holds the terminal: the panic hook and the signal thread only touch
/// the terminal then.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Held while a frame is written and by a final restore (see the module comment).
static SCREEN: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread is inside [`TerminalGuard::draw`] and holds [`SCREEN`] (a panic there
    /// must not wait for a lock its own thread holds).
    static DRAWING: Cell<bool> = const { Cell::new(false) };
}

/// Put the terminal back as we found it. Safe to call more than once.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
    let _ = out.flush();
}

/// [`SCREEN`] for a final restore, unless this thread is drawing (it holds it) or a frame
/// takes implausibly long (a wedged writer must not stop the terminal coming back).
fn lock_screen_for_good() -> Option<MutexGuard<'static, ()>> {
    if DRAWING.with(Cell::get) {
        return None;
    }
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        match SCREEN.try_lock() {
            Ok(lock) => return Some(lock),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// Restore the terminal (if a guard holds it) and end the process with `code`. The screen
/// lock is never released: no frame is drawn after this.
fn restore_and_exit(code: i32) -> ! {
    let lock = lock_screen_for_good();
    if ACTIVE.swap(false, Ordering::SeqCst) {
        restore();
    }
    // On the shell's screen now: what must not be lost is written out and said.
    if let Some(last_words) = LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()).take() {
        last_words();
    }
    std::mem::forget(lock);
    std::process::exit(code)
}

/// What a signal that ends the process at once does first (see [`before_ending_at_once`]).
static LAST_WORDS: Mutex<Option<Box<dyn FnOnce() + Send>>> = Mutex::new(None);

/// While the returned registration lives, a signal that ends the process at once (a second
/// one while the console finishes) first runs `last_words`, after the terminal is restored:
/// the console writes out the answers still being stored (tester 11 T11-2).
pub fn before_ending_at_once(last_words: impl FnOnce() + Send + 'static) -> LastWords {
    *LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(last_words));
    LastWords(())
}

/// See [`before_ending_at_once`].
#[must_use]
pub struct LastWords(());

impl Drop for LastWords {
    fn drop(&mut self) {
        LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// The process-wide panic hook, installed once, in front of the one before it.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A panic `panics::caught` turns into an error (the local model's libraries)
            // leaves the console running.
            if !ACTIVE.load(Ordering::SeqCst) || crate::panics::is_caught_here() {
                return previous(info);
            }
            let lock = lock_screen_for_good();
            ACTIVE.store(false, Ordering::SeqCst);
            restore();
            // On the shell's screen now, where the operator can read it.
            previous(info);
            if std::thread::current().name() == Some("main") {
                // Unwinding drops the guard (restoring again is harmless) and exits 101.
                drop(lock);
            } else {
                // The console cannot go on: its terminal is gone. Exit as a panic does.
                std::mem::forget(lock);
                std::process::exit(101);
            }
        }));
    });
}

/// What a running console loop does with a terminating signal: hand it into the loop.
type Terminate = Box<dyn FnOnce(i32) + Send>;

/// The running console loop's [`Terminate`], while one runs and no signal has been handed
/// to it yet.
static LOOP: Mutex<Option<Terminate>> = Mutex::new(None);

/// The terminating signal handed to a console loop (0: none).
static TERMINATED_BY: AtomicI32 = AtomicI32::new(0);

/// While the returned registration lives (the console loop runs), the first terminating
/// signal is handed to `terminate` instead of ending the process; the loop then finishes
/// as a quit does and ends the process with [`terminated_by`]. Dropped (the loop has
/// ended, by a quit or a signal), a signal ends the process at once again.
pub fn on_terminate(terminate: impl FnOnce(i32) + Send + 'static) -> TerminateRegistration {
    *LOOP.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(terminate));
    TerminateRegistration(())
}

/// See [`on_terminate`].
#[must_use]
pub struct TerminateRegistration(());

impl Drop for TerminateRegistration {
    fn drop(&mut self) {
        LOOP.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// The terminating signal a console loop was handed, if any: the process is to end with
/// 128 + it, once the loop has finished.
pub fn terminated_by() -> Option<i32> {
    match TERMINATED_BY.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// A terminating signal arrived: handed to the running console loop, if there is one and it
/// has not had one yet; else the terminal is restored and the process ends at once.
fn on_signal(signal: i32) {
    let terminate = LOOP.lock().unwrap_or_else(|p| p.into_inner()).take();
    match terminate {
        Some(terminate) => {
            tracing::warn!(
                signal,
                "terminating signal: the console finishes as a quit does"
            );
            TERMINATED_BY.store(signal, Ordering::SeqCst);
            terminate(signal);
        }
        None => restore_and_exit(128 + signal),
    }
}

/// One thread for the life of the process, for the terminating signals ([`on_signal`]).
/// Registered before raw mode is entered, so no signal can leave it.
#[cfg(unix)]
fn install_signal_handler() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    static INSTALLED: Mutex<bool> = Mutex::new(false);
    let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
    if *installed {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])?;
    std::thread::Builder::new()
        .name("terminal-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                on_signal(signal);
            }
        })?;
    *installed = true;
    Ok(())
}

#[cfg(not(unix))]
fn install_signal_handler() -> anyhow::Result<()> {
    Ok(())
}

impl TerminalGuard {
    pub fn new() -> anyhow::Result<TerminalGuard> {
        install_panic_hook();
        install_signal_handler()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let started = enable_raw_mode()
            .map_err(anyhow::Error::from)
            .and_then(|()| {
                Ok(execute!(
                    stdout(),
                    EnterAlternateScreen,
                    EnableBracketedPaste,
                    EnableMouseCapture
                )?)
            })
            .and_then(|()| Ok(Terminal::new(CrosstermBackend::new(stdout()))?));
        match started {
            Ok(terminal) => Ok(TerminalGuard {
                terminal: ManuallyDrop::new(terminal),
            }),
            Err(e) => {
                ACTIVE.store(false, Ordering::SeqCst);
                restore();
                Err(e)
            }
        }
    }

    /// Draw one frame, never interleaved with a final restore.
    pub fn draw(&mut self, render: impl FnOnce(&mut ratatui::Frame)) -> anyhow::Result<()> {
        let _screen = SCREEN.lock().unwrap_or_else(|p| p.into_inner());
        DRAWING.with(|d| d.set(true));
        let drawn = self.terminal.draw(render).map(|_| ());
        DRAWING.with(|d| d.set(false));
        Ok(drawn?)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _screen = lock_screen_for_good();
        if ACTIVE.swap(false, Ordering::SeqCst) {
            restore();
        }
    }
}
