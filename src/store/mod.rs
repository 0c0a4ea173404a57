//! SQLite-backed services: the output cache (and, later, plan history).

pub mod cache;
