//! The pure engine: no I/O, no async, no terminal. Everything here is tested with plain values.

pub mod assemble;
pub mod bounds;
pub mod budget;
pub mod catalog;
pub mod compact;
pub mod compare;
pub mod config;
pub mod duration;
pub mod error;
pub mod failure;
pub mod gap;
pub mod gate;
pub mod history;
pub mod metrics;
pub mod past_steps;
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
