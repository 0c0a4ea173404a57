//! The terminal guard: raw mode, alternate screen, bracketed paste and mouse capture on while
//! it lives; the terminal put back as it was found on every way out:
//!
//! - quit and error: the guard is dropped;
//! - a panic on any thread: the process-wide panic hook restores the terminal before the
//!   message is printed (so it lands on the shell's screen); a panic off the main thread
//!   then ends the process with 101, as a main-thread panic does, rather than leaving a
//!   console drawing on a restored terminal;
//! - SIGINT, SIGTERM, SIGHUP, SIGQUIT (`kill`; in raw mode Ctrl-C is a key, not a signal):
//!   a signal thread restores the terminal and exits with 128 + the signal's number.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, Once, TryLockError};
use std::time::{Duration, Instant};

pub type Term = Terminal<CrosstermBackend<Stdout>>;

pub struct TerminalGuard {
    pub terminal: Term,
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
    std::mem::forget(lock);
    std::process::exit(code)
}

/// The process-wide panic hook, installed once, in front of the one before it.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !ACTIVE.load(Ordering::SeqCst) {
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

/// One thread for the life of the process: the terminating signals restore the terminal
/// and exit 128 + signal. Registered before raw mode is entered, so no signal can leave it.
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
            if let Some(signal) = signals.forever().next() {
                restore_and_exit(128 + signal);
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
            Ok(terminal) => Ok(TerminalGuard { terminal }),
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
