//! Capture helper for the support agent. It remembers the last page the browser showed,
//! takes a screenshot when asked, and keeps both so the agent can remember what it saw.
//! Remember: the browser must be open before anything is captured.

use std::collections::HashMap;

/// Every screenshot the browser took, by page address. Remember to clear it between
/// sessions, or the agent will remember pages from yesterday.
pub struct CaptureLog {
    shots: HashMap<String, Vec<u8>>,
    last: Option<String>,
}

impl CaptureLog {
    pub fn new() -> Self {
        CaptureLog {
            shots: HashMap::new(),
            last: None,
        }
    }

    /// Keep a capture. The browser screenshot is PNG; remember its size for the memory cap.
    pub fn record(&mut self, page: &str, png: Vec<u8>) {
        self.last = Some(page.to_string());
        self.shots.insert(page.to_string(), png);
    }

    /// The capture of a page, if we took one. (Screenshots of the browser's settings page
    /// are remembered too.)
    pub fn lookup(&self, page: &str) -> Option<&[u8]> {
        self.shots.get(page).map(Vec::as_slice)
    }

    /// The page the browser showed last: remember it across restarts.
    pub fn last_page(&self) -> Option<&str> {
        self.last.as_deref()
    }
}

fn main() {
    let mut log = CaptureLog::new();
    log.record("https://example.org", vec![0x89, b'P', b'N', b'G']);
    assert!(log.lookup("https://example.org").is_some());
}
