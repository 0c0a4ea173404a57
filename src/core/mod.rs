//! The pure engine: no I/O, no async, no terminal. Everything here is tested with plain values.

pub mod budget;
pub mod catalog;
pub mod compact;
pub mod error;
pub mod prompt;
pub mod tokens;
