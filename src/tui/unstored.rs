//! Answers paid for that the store could not take (another process held its write lock
//! past the wait, a full disk): the console keeps each as the plan line `import plans` reads
//! (the line `LiveReplay::store_with` made, the one `ctxconsole send` prints), says how many
//! on the status line, stores them again when asked (`store_again`) and when quitting, and
//! what still cannot be stored then is written to a private file in the workspace, named on
//! the terminal after the console closes and in the log.
//! Pure: the work goes out as an effect and comes back as an action.

use crate::live::replay::LiveReplay;
use crate::tui::request_id::take;

/// One answer the store could not take.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptAnswer {
    /// What it answered, as its result is headed: `model [arm]`, `replay of ID on model`.
    pub label: String,
    /// The plan line `import plans` reads back.
    pub line: String,
    /// Why the store could not take it, the last time it was tried.
    pub why: String,
}

/// What the runtime is asked to store again.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreAgain {
    pub request: u64,
    pub lines: Vec<String>,
}

/// What one try came to, for each line asked in order: its stored id, or why not.
pub type StoredAgain = Vec<Result<String, String>>;

#[derive(Debug, Clone, Default)]
pub struct Unstored {
    /// Answers not stored yet, oldest first.
    pub pending: Vec<KeptAnswer>,
    /// A try in flight: its request, and how many of `pending` (the first ones) it carries.
    pub storing: Option<(u64, usize)>,
    /// What the last try came to, for the status line.
    pub last: Option<String>,
}

impl Unstored {
    /// Keep `live`'s answer when the store could not take it.
    pub fn keep(&mut self, label: String, live: &LiveReplay) {
        if let (Some(line), Some(why)) = (&live.unsaved_plan, &live.store_error) {
            self.pending.push(KeptAnswer {
                label,
                line: line.clone(),
                why: why.clone(),
            });
        }
    }

    /// Store every pending answer again, unless a try is already in flight or none waits.
    pub fn start(&mut self, next: &mut u64) -> Option<StoreAgain> {
        if self.storing.is_some() || self.pending.is_empty() {
            return None;
        }
        let request = take(next);
        self.storing = Some((request, self.pending.len()));
        self.last = None;
        Some(StoreAgain {
            request,
            lines: self.pending.iter().map(|k| k.line.clone()).collect(),
        })
    }

    /// A try came back: the stored answers leave `pending` (returned as line and id, so the
    /// panes showing them can say where they are now); the others stay, with the new reason.
    pub fn finished(
        &mut self,
        request: u64,
        result: Result<&StoredAgain, String>,
    ) -> Vec<(String, String)> {
        let Some((running, asked)) = self.storing else {
            return Vec::new();
        };
        if running != request {
            return Vec::new();
        }
        self.storing = None;
        let outcomes = match result {
            Ok(o) => o,
            Err(why) => {
                self.last = Some(format!("storing again failed: {why}"));
                return Vec::new();
            }
        };
        let asked = asked.min(self.pending.len());
        let mut stored = Vec::new();
        let mut kept = Vec::new();
        let mut last_why = None;
        // An answer the try said nothing of stays as it was: none is ever dropped here.
        for (i, answer) in self.pending.drain(..asked).enumerate() {
            match outcomes.get(i) {
                None => kept.push(answer),
                Some(Ok(id)) => stored.push((answer.line, id.clone())),
                Some(Err(why)) => {
                    last_why = Some(why.clone());
                    kept.push(KeptAnswer {
                        why: why.clone(),
                        ..answer
                    });
                }
            }
        }
        kept.append(&mut self.pending);
        self.pending = kept;
        let ids: Vec<&str> = stored.iter().map(|(_, id)| id.as_str()).collect();
        self.last = Some(match (ids.is_empty(), last_why) {
            (false, None) => format!("stored {}: {}", answers(ids.len()), ids.join(", ")),
            (true, Some(why)) => format!("still not stored: {why}"),
            (false, Some(why)) => format!(
                "stored {} ({}); still not stored: {why}",
                answers(ids.len()),
                ids.join(", ")
            ),
            (true, None) => "nothing to store".into(),
        });
        stored
    }

    /// The status line's words while answers wait, or after a try: `None` when there is
    /// nothing to say. `key` is the store-again key, when one is bound.
    pub fn line(&self, key: Option<&str>) -> Option<String> {
        let n = self.pending.len();
        if self.storing.is_some() {
            return Some(format!("storing {} again…", answers(n)));
        }
        if n == 0 {
            return self.last.clone();
        }
        let how = key.map_or_else(String::new, |k| format!("{k} stores again, "));
        let last = self
            .last
            .as_ref()
            .map_or_else(String::new, |l| format!(" — {l}"));
        Some(format!(
            "{} not stored ({how}quitting tries too, else writes a file){last}",
            answers(n)
        ))
    }
}

pub use crate::live::kept_file::answers;

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(n: usize) -> Unstored {
        Unstored {
            pending: (0..n)
                .map(|i| KeptAnswer {
                    label: format!("m{i} [compacted]"),
                    line: format!("{{\"n\":{i}}}"),
                    why: "locked".into(),
                })
                .collect(),
            ..Unstored::default()
        }
    }

    #[test]
    fn a_try_takes_only_what_it_stored_and_drops_nothing() {
        let mut u = kept(3);
        let mut next = 1;
        let req = u.start(&mut next).unwrap();
        assert_eq!(req.lines.len(), 3);
        assert!(u.start(&mut next).is_none(), "one try at a time");
        // An answer kept while the try runs is not part of it.
        u.pending.push(KeptAnswer {
            label: "late".into(),
            line: "{}".into(),
            why: "locked".into(),
        });
        // A stale answer changes nothing.
        assert!(u.finished(req.request + 9, Ok(&vec![])).is_empty());
        assert_eq!(u.pending.len(), 4);
        // The first stored, the second refused, the third not answered for: two stay,
        // and the late one after them.
        let stored = u.finished(
            req.request,
            Ok(&vec![
                Ok("send-1-1".to_string()),
                Err("still locked".into()),
            ]),
        );
        assert_eq!(stored, [("{\"n\":0}".to_string(), "send-1-1".to_string())]);
        let left: Vec<&str> = u.pending.iter().map(|k| k.label.as_str()).collect();
        assert_eq!(left, ["m1 [compacted]", "m2 [compacted]", "late"]);
        assert_eq!(u.pending[0].why, "still locked");
        let line = u.line(Some("alt+s")).unwrap();
        assert!(
            line.starts_with("3 answers not stored (alt+s stores again")
                && line.contains("stored 1 answer (send-1-1); still not stored: still locked"),
            "{line}"
        );
        // A try that could not run keeps them all.
        let req = u.start(&mut next).unwrap();
        assert!(
            u.finished(req.request, Err("no history store".into()))
                .is_empty()
        );
        assert_eq!(u.pending.len(), 3);
    }
}
