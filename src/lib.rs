//! ctxconsole: what a model will really be given before anything is sent.
//!
//! Layers point one way: front ends (`cli`, `tui`) → services (`import`, `workspace`) → `core`.

pub mod cli;
pub mod core;
pub mod exit;
pub mod format;
pub mod fsio;
pub mod import;
pub mod llm;
pub mod preview;
pub mod store;
pub mod tui;
pub mod workspace;
