//! The pure engine: no I/O, no async, no terminal. Everything here is tested with plain values.

pub mod assemble;
pub mod bounds;
pub mod budget;
pub mod catalog;
pub mod chart;
pub mod compact;
pub mod duration;
pub mod error;
pub mod failure;
pub mod gate;
pub mod history;
pub mod metrics;
pub mod plan;
pub mod planner;
pub mod prompt;
pub mod rank;
pub mod request;
pub mod response;
pub mod terminal_text;
pub mod text;
pub mod time;
pub mod tokens;
pub mod traffic;
pub mod trend;
