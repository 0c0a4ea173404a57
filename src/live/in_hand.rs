//! Answers paid for that are being stored right now: each is registered for the moment its
//! store runs (waiting for another process's write lock can take a minute), so a process
//! that must end at once — a second ctrl+c while the console finishes — can still write
//! them out as plan lines rather than lose them (tester 11 T11-2: a quit during a send while
//! the store was locked, then ctrl+c, lost the answer already back).
//!
//! A line written out that the store took in the same moment is stored already: `import
//! plans` says so ("already present") and stores it once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::history::PlanRecord;

enum Held {
    Record(Box<PlanRecord>),
    Lines(Vec<String>),
}

static IN_HAND: Mutex<Vec<(u64, Held)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Registered while it lives.
#[must_use]
pub struct Holding(u64);

impl Drop for Holding {
    fn drop(&mut self) {
        let mut held = IN_HAND.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|(token, _)| *token != self.0);
    }
}

fn hold(what: Held) -> Holding {
    let token = NEXT.fetch_add(1, Ordering::Relaxed);
    IN_HAND
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((token, what));
    Holding(token)
}

/// `record` is being stored.
pub fn hold_record(record: &PlanRecord) -> Holding {
    hold(Held::Record(Box::new(record.clone())))
}

/// These plan lines (answers kept when the store could not take them) are being stored.
pub fn hold_lines(lines: &[String]) -> Holding {
    hold(Held::Lines(lines.to_vec()))
}

/// Every answer being stored right now, as the plan lines `import plans` reads.
pub fn lines_in_hand() -> Vec<String> {
    let held = IN_HAND.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::new();
    for (_, what) in held.iter() {
        match what {
            Held::Record(record) => out.push(kept_line(record.as_ref().clone())),
            Held::Lines(lines) => out.extend(lines.iter().cloned()),
        }
    }
    out
}

/// `record` as the plan line it is kept as when the store cannot take it: with its id, or,
/// without one, an id made from the whole line (`import plans` derives a missing id from the
/// time, caller and intent, which every answer of one send shares: their lines would be one
/// id with other content, a conflict).
pub fn kept_line(mut record: PlanRecord) -> String {
    if record.id.is_empty() {
        record.id = format!(
            "p-{}",
            crate::core::history::short_sha(&record.import_line())
        );
    }
    record.import_line()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_held_is_listed_until_its_holding_ends() {
        let before = lines_in_hand().len();
        let lines = vec!["{\"id\":\"kept-1\"}".to_string()];
        let holding = hold_lines(&lines);
        assert!(lines_in_hand().contains(&lines[0]));
        drop(holding);
        assert!(!lines_in_hand().contains(&lines[0]));
        assert_eq!(lines_in_hand().len(), before);
    }
}
