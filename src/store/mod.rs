//! SQLite-backed services: the output cache and the plan history.

pub mod cache;
pub mod generate;
pub mod history;
pub mod sqlite;
pub mod view;

/// Unix seconds now: the services' one clock (the core takes times as values).
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
