//! Replay from the History pane: `r` on a plan opens a picker (offline, the plan's own model,
//! or another model seen in the history), Enter runs it off the UI thread with progress,
//! Esc cancels, and the result is drawn beside the original. Pure: the work goes out as an
//! effect and comes back as actions.

use std::sync::Arc;

use crate::live::replay::{LiveReplay, OfflineReplay};
use crate::llm::client::Cancel;
use crate::tui::request_id::take;

/// What a replay came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayResult {
    Offline(OfflineReplay),
    Live(LiveReplay),
}

/// The first choice: no call, today's decoder on the stored response.
pub const OFFLINE: &str = "offline: today's decoder on the stored response";

#[derive(Debug, Clone)]
pub struct ReplayView {
    pub plan_id: String,
    /// [`OFFLINE`], then model ids: the plan's own first.
    pub choices: Vec<String>,
    pub chosen: usize,
    /// The picker is open.
    pub picking: bool,
    /// The request being waited for, and the handle that cancels it.
    pub running: Option<(u64, Cancel)>,
    /// The label of what is running or ran.
    pub label: String,
    pub progress: Option<String>,
    pub result: Option<Arc<ReplayResult>>,
    pub error: Option<String>,
}

/// What the pane asks of the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    pub request: u64,
    pub plan_id: String,
    /// `None`: offline.
    pub model: Option<String>,
    pub cancel: Cancel,
}

impl ReplayView {
    /// A picker for `plan_id`, whose own model is `model`; `others` are the history's models.
    pub fn pick(plan_id: &str, model: &str, others: &[String]) -> ReplayView {
        let mut choices = vec![OFFLINE.to_string(), model.to_string()];
        choices.extend(others.iter().filter(|m| *m != model).cloned());
        ReplayView {
            plan_id: plan_id.to_string(),
            choices,
            // Offline first for a failed plan is the cheap question; the plan's model is next.
            chosen: 0,
            picking: true,
            running: None,
            label: String::new(),
            progress: None,
            result: None,
            error: None,
        }
    }

    pub fn move_choice(&mut self, down: bool) {
        let n = self.choices.len();
        self.chosen = if down {
            (self.chosen + 1).min(n.saturating_sub(1))
        } else {
            self.chosen.saturating_sub(1)
        };
    }

    /// Enter in the picker: start the chosen replay.
    pub fn start(&mut self, next: &mut u64) -> ReplayRequest {
        let request = take(next);
        let cancel = Cancel::default();
        let model = (self.chosen > 0).then(|| self.choices[self.chosen].clone());
        self.label = match &model {
            Some(m) => format!("live on {m}"),
            None => "offline".to_string(),
        };
        self.picking = false;
        self.running = Some((request, cancel.clone()));
        self.progress = Some("starting…".into());
        self.result = None;
        self.error = None;
        ReplayRequest {
            request,
            plan_id: self.plan_id.clone(),
            model,
            cancel,
        }
    }

    pub fn progress(&mut self, request: u64, line: String) {
        if self.is_running(request) {
            self.progress = Some(line);
        }
    }

    pub fn finished(&mut self, request: u64, result: Result<Arc<ReplayResult>, String>) {
        if !self.is_running(request) {
            return;
        }
        self.running = None;
        self.progress = None;
        match result {
            Ok(r) => self.result = Some(r),
            Err(e) => self.error = Some(e),
        }
    }

    fn is_running(&self, request: u64) -> bool {
        self.running.as_ref().is_some_and(|(r, _)| *r == request)
    }

    /// Esc while running: the handle to cancel with (the answer still comes back, marked).
    pub fn cancel(&mut self) -> Option<Cancel> {
        let (_, cancel) = self.running.as_ref()?;
        self.progress = Some("cancelling…".into());
        Some(cancel.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_offers_offline_then_the_plans_model_then_the_others() {
        let mut v = ReplayView::pick("pl-1", "m/a", &["m/b".into(), "m/a".into()]);
        assert_eq!(
            v.choices,
            vec![OFFLINE.to_string(), "m/a".into(), "m/b".into()]
        );
        v.move_choice(false);
        assert_eq!(v.chosen, 0);
        v.move_choice(true);
        v.move_choice(true);
        v.move_choice(true);
        assert_eq!(v.chosen, 2);
        let mut next = 7;
        let req = v.start(&mut next);
        assert_eq!((req.request, req.model.as_deref()), (7, Some("m/b")));
        assert_eq!(next, 8);
        v.progress(99, "stale".into());
        assert_eq!(v.progress.as_deref(), Some("starting…"));
        assert!(v.cancel().is_some());
        v.finished(7, Err("boom".into()));
        assert_eq!(v.error.as_deref(), Some("boom"));
        assert!(v.cancel().is_none());
    }
}
