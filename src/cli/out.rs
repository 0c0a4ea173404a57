//! Every byte the CLI writes goes through here. Text output (stdout and stderr) is passed
//! through [`for_terminal`], so a stored intent, a catalog name, a server's error body or a
//! file quoted in an error can never drive the operator's terminal: ESC, BEL, C1 controls and
//! bidi overrides are shown as `\x1b`, `\x07`, `\u{9b}`, `\u{202e}`. JSON stays exact JSON.
//!
//! Subcommands use [`emit`] for text, [`print_json`] for `--json`, [`emit_json_text`] for
//! JSON Lines, [`emit_content`] for content read back whole (`cache get`), [`eprint_line`] and
//! [`status_line`] for notes, progress and errors on stderr. Nothing calls `println!` or
//! `eprintln!` (clippy's print_stdout/print_stderr are denied crate-wide).

use std::borrow::Cow;
use std::io::Write;

use crate::core::terminal_text::{for_terminal, for_terminal_line, json_for_terminal};
use crate::llm::redact::for_output;

/// Text to stdout, made safe for a terminal (newlines and tabs kept).
pub fn emit(text: &str) -> anyhow::Result<()> {
    write_stdout(&for_terminal(text))
}

/// A value as pretty JSON on stdout: exact (it parses to the same value), with the few
/// characters serde_json leaves raw inside strings (DEL, C1, bidi controls) written as `\u`
/// escapes so that `--json` on a terminal is as safe as text.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_stdout(&json_for_terminal(&text))
}

/// JSON (or JSON Lines) already serialised, to stdout with the same escaping as
/// [`print_json`].
pub fn emit_json_text(text: &str) -> anyhow::Result<()> {
    write_stdout(&json_for_terminal(text))
}

/// Content the user asked for byte for byte (`cache get`: a paste read back whole): exact
/// into a pipe or a file, where a program reads it; on a terminal, shown like any text.
pub fn emit_content(text: &str) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    write_stdout(&content_for(text, std::io::stdout().is_terminal()))
}

fn content_for(text: &str, terminal: bool) -> Cow<'_, str> {
    if terminal {
        for_terminal(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// One line on stderr (a note, a warning, progress, the final error), made safe for a
/// terminal, with every configured key as `[REDACTED]` ([`for_output`]: an error may quote
/// any value a file held). Errors writing it are ignored: stderr is where they would be
/// reported.
pub fn eprint_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", for_terminal(&for_output(text)));
}

/// A status line on a terminal's stderr, redrawn in place (`\r`, clear line): the text is
/// kept to one line and to the terminal's width (tester 37 T37-3: a longer one wrapped, and
/// each redraw left the copy before it on screen), and passes the configured keys' redactor
/// as [`eprint_line`]'s does.
pub fn status_line(text: &str) {
    let text = for_output(text);
    let shown = match ratatui::crossterm::terminal::size() {
        // One cell short of the width: a line that fills it wraps on some terminals.
        Ok((width, _)) if width > 1 => {
            crate::core::terminal_text::one_line(&text, usize::from(width) - 1)
        }
        _ => for_terminal_line(&text).into_owned(),
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{shown}");
    let _ = err.flush();
}

/// Clear the status line drawn by [`status_line`].
pub fn clear_status_line() {
    status_line("");
}

/// Plan lines the store could not take, under the heading saying how to store them later
/// (what `send`, `replay` and a console that could write no file print). Nothing for none.
pub fn print_plan_lines(lines: &[impl AsRef<str>]) -> anyhow::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let lines: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
    emit(
        "\nNOT STORED: each answer whole, as a plan line (save these lines to a file and \
         `ctxconsole import plans FILE` stores them later):\n",
    )?;
    emit_json_text(&format!("{}\n", lines.join("\n")))
}

/// Write to stdout. A closed pipe (`ctxconsole … | head`) is not an error: the reader
/// has what it wanted.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}

/// Until dropped, a terminating signal (SIGINT, SIGTERM, SIGHUP) ends the run saying
/// `interrupted by SIGNAL: {what}` on stderr, with exit status 128 + the signal's number, as
/// a shell reports it (tester 31 F3: an import cut by Ctrl-C ended on its last progress
/// line, "50000 rows read…", as if those rows were in). For a command whose writes are one
/// transaction, so that `what` can say what the cut kept.
#[cfg(unix)]
pub fn say_if_interrupted(what: String) -> Option<InterruptNote> {
    on_first_signal(move |number| {
        let name = crate::exit::signal_name(number);
        eprint_line(&format!("ctxconsole: interrupted by {name}: {what}"));
        std::process::exit(128 + number);
    })
}

/// The answers in hand written to the workspace's file of unstored plans and named on
/// stderr after `why`; printed whole when no file can take them
/// ([`crate::live::kept_file::keep_in_hand`]). For a process that must end now. Returns the
/// lines written or printed.
pub fn write_in_hand(workspace: &std::path::Path, why: &str) -> Vec<String> {
    let (lines, report) = crate::live::kept_file::keep_in_hand(workspace, why);
    for line in &report.said {
        eprint_line(&format!("ctxconsole: {line}"));
    }
    let _ = print_plan_lines(&report.lines);
    lines
}

/// Until the note is dropped, `act` runs on a thread of its own with the first terminating
/// signal's number (SIGINT, SIGTERM, SIGHUP): the one listener of [`say_if_interrupted`]
/// and [`cancel_on_interrupt`].
#[cfg(unix)]
fn on_first_signal(act: impl FnOnce(i32) + Send + 'static) -> Option<InterruptNote> {
    on_signals(act, |_| {})
}

/// As [`on_first_signal`], and `again` with the second signal's number.
#[cfg(unix)]
fn on_signals(
    first: impl FnOnce(i32) + Send + 'static,
    again: impl FnOnce(i32) + Send + 'static,
) -> Option<InterruptNote> {
    // SIGQUIT too, as the console hears it (tester 37 T37-4: `send` went on through two).
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT]).ok()?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        let mut came = signals.forever();
        if let Some(number) = came.next() {
            first(number);
        }
        if let Some(number) = came.next() {
            again(number);
        }
    });
    Some(InterruptNote(handle))
}

/// Until dropped, the first terminating signal (SIGINT, SIGTERM, SIGHUP) cancels `cancel`
/// — every call in flight ends, its result shown as cancelled — rather than ending the
/// run, so a command that sends (`send`, `replay`) still prints and stores what came back
/// and says what the cut left ([`CancelOnInterrupt::came`]). The operator who insists — a
/// second signal, while storing waits for another process's write lock — ends it at once,
/// with 128 + the signal's number, the answers still in hand first written to the
/// workspace's file of unstored plans (tester 36 F3: `send` sat out the lock wait, deaf to
/// every signal but SIGKILL, which lost them; the console did this already).
#[cfg(unix)]
pub fn cancel_on_interrupt(
    cancel: &crate::llm::client::Cancel,
    workspace: &std::path::Path,
) -> Option<CancelOnInterrupt> {
    use std::sync::atomic::{AtomicI32, Ordering};
    let cancel = cancel.clone();
    let came = std::sync::Arc::new(AtomicI32::new(0));
    let seen = came.clone();
    let workspace = workspace.to_path_buf();
    let listening = on_signals(
        move |number| {
            seen.store(number, Ordering::SeqCst);
            cancel.cancel();
        },
        move |number| {
            let name = crate::exit::signal_name(number);
            eprint_line(&format!(
                "ctxconsole: interrupted again by {name}: ending now"
            ));
            write_in_hand(&workspace, "ended while storing");
            std::process::exit(128 + number);
        },
    )?;
    Some(CancelOnInterrupt {
        _listening: listening,
        came,
    })
}

/// [`cancel_on_interrupt`]'s listener: which signal came, if one did.
#[cfg(unix)]
pub struct CancelOnInterrupt {
    _listening: InterruptNote,
    came: std::sync::Arc<std::sync::atomic::AtomicI32>,
}

#[cfg(unix)]
impl CancelOnInterrupt {
    /// The signal that cancelled the run, its name and number, `None` while none came.
    pub fn came(&self) -> Option<(&'static str, i32)> {
        match self.came.load(std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            number => Some((crate::exit::signal_name(number), number)),
        }
    }
}

/// Stops a signal-listening thread ([`say_if_interrupted`]'s, [`cancel_on_interrupt`]'s)
/// when dropped: its thread ends and the handler goes.
#[cfg(unix)]
pub struct InterruptNote(pub signal_hook::iterator::Handle);

#[cfg(unix)]
impl Drop for InterruptNote {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_exact_into_a_pipe_and_escaped_on_a_terminal() {
        let paste = "line\r\n\x1b]0;t\x07 tab\t\n";
        assert_eq!(content_for(paste, false), paste);
        assert_eq!(content_for(paste, true), "line\\r\n\\x1b]0;t\\x07 tab\t\n");
    }
}
