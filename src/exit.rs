//! Exit codes (DESIGN §1): 0 success, 1 a runtime failure, 2 bad input or usage.

use std::fmt;

use crate::core::error::CoreError;

/// Input the user gave that cannot be used: exit code 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// The run was stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) after cleaning up: exit 128 +
/// the signal's number, as a shell reports a process the signal ended.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: &'static str,
    pub number: i32,
    /// What the cut left, said after the signal (empty: nothing to add).
    pub what: String,
}

impl Interrupted {
    /// Stopped by the signal `number`, nothing more to say.
    pub fn by(number: i32) -> Interrupted {
        Interrupted {
            signal: signal_name(number),
            number,
            what: String::new(),
        }
    }
}

/// The name a shell gives a terminating signal: the one spelling of every "interrupted by"
/// line (the console's, a command's, `import --mcp`'s).
pub fn signal_name(number: i32) -> &'static str {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        match number {
            SIGHUP => return "SIGHUP",
            SIGINT => return "SIGINT",
            SIGQUIT => return "SIGQUIT",
            SIGTERM => return "SIGTERM",
            _ => {}
        }
    }
    let _ = number;
    "a signal"
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by {}", self.signal)?;
        if !self.what.is_empty() {
            write!(f, ": {}", self.what)?;
        }
        Ok(())
    }
}

impl std::error::Error for Interrupted {}

pub const OK: i32 = 0;
pub const RUNTIME: i32 = 1;
pub const BAD_INPUT: i32 = 2;

/// 128 + the signal's number when a signal stopped the run; 2 when anything in the chain is
/// a bad-input error; else 1.
pub fn code_for(err: &anyhow::Error) -> i32 {
    if let Some(i) = err.chain().find_map(|e| e.downcast_ref::<Interrupted>()) {
        return 128 + i.number;
    }
    if err
        .chain()
        .any(|e| e.is::<BadInput>() || e.is::<CoreError>())
    {
        BAD_INPUT
    } else {
        RUNTIME
    }
}

/// An error as every front end says it: its chain joined by ": ", as `{:#}` joins it, less
/// a cause that only restates the one before it — SQLite's error, whose source says the same
/// words again after its code (`database or disk is full: Error code 13: database or disk is
/// full`, tester 48 nit), or a context that repeats its cause. One rendering for the CLI's
/// last line, the console's error lines and MCP's error messages.
pub struct Said<'a>(pub &'a anyhow::Error);

impl fmt::Display for Said<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut before: Option<String> = None;
        for cause in self.0.chain() {
            let text = cause.to_string();
            if let Some(before) = &before {
                let restates = text == *before
                    || text.ends_with(&format!(": {before}"))
                    || before.ends_with(&format!(": {text}"));
                if restates {
                    continue;
                }
                f.write_str(": ")?;
            }
            f.write_str(&text)?;
            before = Some(text);
        }
        Ok(())
    }
}

/// [`Said`] as a string: `crate::exit::said(&e)` without a cause said twice.
pub fn said(err: &anyhow::Error) -> String {
    Said(err).to_string()
}

/// Shorthand for a bad-input error.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 48 nit: SQLite's error said its words, then its source said them again after
    /// its code ("database or disk is full: Error code 13: database or disk is full").
    #[test]
    fn a_cause_that_restates_the_one_before_is_said_once() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".to_string()),
        );
        let err = anyhow::Error::new(full).context("/data/history.sqlite: committing the import");
        assert_eq!(
            said(&err),
            "/data/history.sqlite: committing the import: database or disk is full"
        );
        // A source with other words than its error's is kept.
        let other = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some("no such table: plans".to_string()),
        );
        let err = anyhow::Error::new(other).context("reading");
        assert_eq!(said(&err), format!("{err:#}"));
        // A context saying what its cause says is not said twice either.
        let err = anyhow::anyhow!("disk full").context("disk full");
        assert_eq!(said(&err), "disk full");
        assert_eq!(Said(&err).to_string(), "disk full");
    }
}
