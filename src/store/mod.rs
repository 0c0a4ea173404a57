//! SQLite-backed services: the output cache and the plan history.

pub mod cache;
pub mod generate;
pub mod history;
pub mod sqlite;
pub mod view;
