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

/// Shorthand for a bad-input error.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}
