//! Answers paid for and not stored yet: each is registered from the moment it is back until
//! it is stored — while it waits for the other answers of its send, while its store runs
//! (waiting for another process's write lock can take a minute), and, when the store
//! refused it, as the plan line it is kept as, until it is stored later or written out
//! ([`settled`]). A process that must end at once — a second ctrl+c while the console
//! finishes, or a quit that gave up waiting — can still write every one of them out as plan
//! lines rather than lose them (tester 11 T11-2: a quit during a send while the store was
//! locked, then ctrl+c, lost the answer already back; tester 12 T12-7: with A/B arms only
//! the answer whose store was running was registered, the others were lost).
//!
//! A line written out that the store took in the same moment is stored already: `import
//! plans` says so ("already present") and stores it once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::history::PlanRecord;
use crate::llm::redact::Secrets;

enum Held {
    Record(Box<PlanRecord>),
    Lines(Vec<String>),
    /// Refused by the store and kept as this plan line, until [`settled`].
    Kept(String),
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

impl Holding {
    /// The answer held changed before its store (its trim record, its gap signal): the
    /// new one is what is held.
    pub fn update(&self, record: &PlanRecord) {
        self.set(Held::Record(Box::new(record.clone())));
    }

    /// The store refused the answer held: it stays in hand as `line` (the line it is kept
    /// as) after this holding ends, until [`settled`] says where it went.
    pub fn keep(self, line: &str) {
        self.set(Held::Kept(line.to_string()));
        std::mem::forget(self);
    }

    fn set(&self, what: Held) {
        let mut held = IN_HAND.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, h)) = held.iter_mut().find(|(token, _)| *token == self.0) {
            *h = what;
        }
    }
}

/// `record` is being stored.
pub fn hold_record(record: &PlanRecord) -> Holding {
    hold(Held::Record(Box::new(record.clone())))
}

/// An answer back and not stored yet: the record to store, in hand until it is stored
/// ([`crate::live::replay::LiveReplay::store_in_hand`]) or, refused, kept as its line.
pub struct InHand {
    pub record: PlanRecord,
    holding: Holding,
}

impl InHand {
    /// `record` is back: in hand from now on, the configured keys out of it first. The store
    /// takes them out of what it keeps; a line written out or printed instead — a refused
    /// answer, the file a forced exit writes — is made from this record, so it holds none
    /// either (tester 12 T12-6 and T12-7).
    pub fn new(mut record: PlanRecord, secrets: &Secrets) -> InHand {
        secrets.record(&mut record);
        let holding = hold_record(&record);
        InHand { record, holding }
    }

    /// Change the record in hand (what it was sent with, which send it is of), so that a
    /// line written out while it waits for the store says the same as the plan stored.
    pub fn amend(&mut self, change: impl FnOnce(&mut PlanRecord)) {
        change(&mut self.record);
        self.holding.update(&self.record);
    }

    /// The record, and the holding that keeps it in hand (updated with what is stored).
    pub fn into_parts(self) -> (PlanRecord, Holding) {
        (self.record, self.holding)
    }
}

/// These kept lines are where they cannot be lost any more (stored, written to a file or
/// printed): no longer in hand.
pub fn settled(lines: &[String]) {
    let mut held = IN_HAND.lock().unwrap_or_else(|p| p.into_inner());
    held.retain(|(_, what)| !matches!(what, Held::Kept(line) if lines.contains(line)));
}

/// These plan lines (answers kept when the store could not take them) are being stored.
pub fn hold_lines(lines: &[String]) -> Holding {
    hold(Held::Lines(lines.to_vec()))
}

/// Every answer in hand right now, as the plan lines `import plans` reads, each once (a kept
/// line being stored again is held twice).
pub fn lines_in_hand() -> Vec<String> {
    let held = IN_HAND.lock().unwrap_or_else(|p| p.into_inner());
    let mut out: Vec<String> = Vec::new();
    let mut add = |line: String| {
        if !out.contains(&line) {
            out.push(line);
        }
    };
    for (_, what) in held.iter() {
        match what {
            Held::Record(record) => add(kept_line(record.as_ref().clone())),
            Held::Lines(lines) => lines.iter().cloned().for_each(&mut add),
            Held::Kept(line) => add(line.clone()),
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

/// Held by the unit tests that look at (or write out) everything in hand, one at a time.
#[cfg(test)]
pub(crate) static TESTS: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_held_is_listed_until_its_holding_ends() {
        let _one = TESTS.lock().unwrap_or_else(|p| p.into_inner());
        let before = lines_in_hand().len();
        let lines = vec!["{\"id\":\"kept-1\"}".to_string()];
        let holding = hold_lines(&lines);
        assert!(lines_in_hand().contains(&lines[0]));
        drop(holding);
        assert!(!lines_in_hand().contains(&lines[0]));
        assert_eq!(lines_in_hand().len(), before);
    }

    /// A failed answer of the console's, back.
    fn failed(id: &str, intent: &str) -> PlanRecord {
        PlanRecord {
            id: id.into(),
            at: 1_790_000_000,
            at_nanos: 0,
            caller: "console".into(),
            model: "test/ok-json".into(),
            intent: intent.into(),
            steps: Vec::new(),
            outcome: crate::core::history::Outcome::Failed,
            failure_class: None,
            finish_reason: None,
            raw_response: None,
            trim_record: None,
            duration_ms: None,
            replay_of: None,
            answer: None,
            arm: None,
            compare_group: None,
            source: Default::default(),
            expert_baseline: None,
        }
    }

    #[test]
    fn a_refused_answer_stays_in_hand_as_its_line_until_settled() {
        let _one = TESTS.lock().unwrap_or_else(|p| p.into_inner());
        let record = failed("in-hand-kept-1", "kept until settled");
        let answer = InHand::new(record.clone(), &Secrets::default());
        let as_back = kept_line(record.clone());
        assert!(lines_in_hand().contains(&as_back));
        let (mut record, holding) = answer.into_parts();
        record.intent = "kept until settled, as stored".into();
        holding.update(&record);
        let as_stored = kept_line(record);
        let now = lines_in_hand();
        assert!(
            now.contains(&as_stored) && !now.contains(&as_back),
            "{now:?}"
        );
        holding.keep(&as_stored);
        // Held twice (being stored again), listed once.
        let again = hold_lines(std::slice::from_ref(&as_stored));
        let now = lines_in_hand();
        assert_eq!(
            now.iter().filter(|l| **l == as_stored).count(),
            1,
            "{now:?}"
        );
        drop(again);
        assert!(
            lines_in_hand().contains(&as_stored),
            "kept after its store ended"
        );
        settled(std::slice::from_ref(&as_stored));
        assert!(!lines_in_hand().contains(&as_stored));
    }

    /// The configured key in an answer back (the operator pasted it into the prompt) is out
    /// of the line a forced exit writes, as it is out of what the store keeps (tester 12
    /// T12-6, T12-7: the file held it).
    #[test]
    fn an_answer_in_hand_holds_no_configured_key() {
        let _one = TESTS.lock().unwrap_or_else(|p| p.into_inner());
        let key = "sk-inhand-0123456789abcdefghijklmnop";
        let record = PlanRecord {
            raw_response: Some(format!("{{\"echo\": \"{key}\"}}")),
            ..failed("in-hand-key-1", &format!("check this key {key} please"))
        };
        let answer = InHand::new(record, &Secrets::of_keys([key]));
        let lines = lines_in_hand();
        assert!(
            lines.iter().any(|l| l.contains("in-hand-key-1")),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains(key)), "{lines:?}");
        assert!(!answer.record.intent.contains(key));
        drop(answer);
    }
}
