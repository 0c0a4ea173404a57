//! Request ids for work sent off the UI thread: an answer names the request it answers, so
//! one that comes back after a newer request was made is recognised and dropped.

/// The next request id from the pane's counter.
pub fn take(next: &mut u64) -> u64 {
    let r = *next;
    *next += 1;
    r
}
