//! The instructions and attachments both views of one request are checked on (issue 17):
//! `tests/request.rs` through the CLI, `tests/tui_request.rs` through the console.

use std::path::{Path, PathBuf};

const PROMPTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/prompts");

/// A fixture of tests/data/prompts.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(PROMPTS_DIR).join(name)
}

/// Twenty instructions, eleven with attachments (fixtures in tests/data/prompts, and a log
/// too big for a Tier C window, written by the test).
pub const CASES: &[(&str, &[&str])] = &[
    (
        "remember this launch note, draft a blog from it and make an illustration",
        &[],
    ),
    (
        "remember this launch note, draft a blog from it and make an illustration",
        &["launch_note.md"],
    ),
    (
        "take a screenshot of the settings page and click the save button",
        &[],
    ),
    ("summarise this file", &["capture_log.rs"]),
    (
        "search the web for prefix caching benchmarks, then summarise the top results",
        &[],
    ),
    (
        "what is the price of bitcoin in euros today?",
        &["users.json"],
    ),
    (
        "fix the failing test in the parser and open a pull request",
        &["capture_log.rs"],
    ),
    ("transcribe this podcast episode and write show notes", &[]),
    (
        "is the api server healthy? list the processes using the most memory",
        &["gateway.log"],
    ),
    ("hi", &[]),
    ("make slides from this", &["launch_note.md"]),
    ("keep this for later", &["users.json"]),
    (
        "recall what I told you about the launch date and answer the question",
        &[],
    ),
    ("review this pull request for security problems", &[]),
    ("compare these two", &["users.json", "launch_note.md"]),
    (
        "open the dashboard in the browser and fill in the signup form",
        &[],
    ),
    (
        "analyse the error log and find the root cause",
        &["big.log"],
    ),
    (
        "generate an image of a lighthouse at dusk in watercolour",
        &[],
    ),
    ("organise my notes by colour and centre the title", &[]),
    ("", &["capture_log.rs"]),
];

/// Each tier by a model of that tier.
pub const TIERS: &[(&str, &str)] = &[
    ("A", "anthropic/claude-sonnet-4-5"),
    ("B", "deepseek/deepseek-chat"),
    ("C", "openrouter/openrouter/free"),
];

/// A log too large for a Tier C window: it can only go as a briefing there.
pub fn big_log(dir: &Path) -> PathBuf {
    let path = dir.join("big.log");
    let mut text = String::new();
    for i in 0..4_000 {
        if i == 2_000 {
            text.push_str("2026-11-22T10:00:00Z ERROR upstream timed out after 30s\n");
        }
        text.push_str(&format!(
            "2026-11-22T10:00:00Z INFO request {i} served in 12ms ok\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    path
}
