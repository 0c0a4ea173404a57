//! ctxconsole: what a model will really be given before anything is sent.
//!
//! Layers point one way: front ends (`cli`, `tui`, `mcp_server`) → services (`import`, `workspace`) → `core`.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
// Every byte for the terminal goes through `cli::out` (text made safe, JSON exact); a stray
// `println!`/`eprintln!` would bypass it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod core;
pub mod embed;
pub mod exit;
pub mod format;
pub mod fsio;
pub mod import;
pub mod live;
pub mod llm;
pub mod logging;
pub mod mcp_server;
pub mod panics;
pub mod preview;
pub mod sample;
pub mod store;
pub mod tui;
pub mod workspace;
