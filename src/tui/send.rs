//! Sending from the Prompt pane: the request the Preview shows goes to the selected model
//! and every model marked in Budgets, each with the A/B arms chosen (`ctrl+t` cycles them)
//! beside it.
//! Pure: the work goes out as an effect and comes back as actions.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::core::budget::{EffectiveRow, Tier};
use crate::core::compare::Arm;
use crate::core::gap::GapSignal;
use crate::core::request::Attachment;
use crate::live::replay::LiveReplay;
use crate::llm::client::Cancel;
use crate::tui::request_id::take;

/// The caller plans sent from the console are stored under.
pub const CONSOLE_CALLER: &str = "console";

/// What the Prompt pane asks of the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct SendRequest {
    pub request: u64,
    pub prompt: Arc<String>,
    /// Sent beside the prompt, as the Preview plans them.
    pub attachments: Arc<Vec<Attachment>>,
    /// The selected model first, then the marked ones; each as the Preview plans it.
    pub targets: Vec<EffectiveRow>,
    /// The arms also sent to each model beside `compacted`, linked to it (one of
    /// [`AB_CHOICES`]); none: no comparison.
    pub arms: Vec<Arm>,
    pub cancel: Cancel,
}

/// What the A/B key cycles through, in order: the arms sent beside `compacted` — none,
/// each arm of `send --compare` alone, then all four.
pub const AB_CHOICES: [&[Arm]; 6] = [
    &[],
    &[Arm::Full],
    &[Arm::NoPlanner],
    &[Arm::NoPrior],
    &[Arm::NoHint],
    &[Arm::Full, Arm::NoPlanner, Arm::NoPrior, Arm::NoHint],
];

/// The A/B choice after `current` (wrapping; an unknown one starts over).
pub fn next_ab(current: &[Arm]) -> &'static [Arm] {
    let at = AB_CHOICES.iter().position(|c| *c == current);
    AB_CHOICES[at.map_or(0, |i| (i + 1) % AB_CHOICES.len())]
}

/// How the Prompt pane's title names an A/B choice: `off`, the arm, or `all`.
pub fn ab_label(arms: &[Arm]) -> String {
    match arms {
        [] => "off".into(),
        [one] => one.as_str().into(),
        _ if arms == AB_CHOICES[AB_CHOICES.len() - 1] => "all".into(),
        many => many
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join("+"),
    }
}

/// One model and arm: what came back (stored as `live.stored_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct SentArm {
    pub model: String,
    pub arm: Arm,
    pub live: LiveReplay,
    /// The baseline (`llm.baseline_model`: whole catalog, no planner help), not an arm.
    pub baseline: bool,
    /// This plan against the baseline's steps, as stored with it.
    pub gap: Option<GapSignal>,
}

impl SentArm {
    /// `model [arm]`, or `model [baseline]`.
    pub fn label(&self) -> String {
        crate::live::send::call_label(&self.model, self.arm, self.baseline)
    }
}

/// What a send came back with, in the order the targets and arms were asked.
#[derive(Debug, Clone, PartialEq)]
pub struct SendOutcome {
    pub results: Vec<SentArm>,
    /// What links the arms in the store (A/B only).
    pub compare_group: Option<String>,
}

/// What a running send says while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum SendNews {
    /// A call's latest line, by its `model [arm]` (or the store's note, under `store`).
    Line(String, String),
    /// Every call has answered and the answers are being stored: nothing is left to cancel.
    /// `waiting`: another process holds the store's write lock, so storing waits for it.
    Storing { waiting: bool },
}

#[derive(Debug, Clone, Default)]
pub struct SendView {
    /// The request being waited for, and the handle that cancels it.
    pub running: Option<(u64, Cancel)>,
    /// Every call has answered and the answers are being stored (`Some`), waiting for
    /// another process's write lock (`Some(true)`): esc can cancel nothing then.
    pub storing: Option<bool>,
    /// The latest progress line per `model [arm]`.
    pub progress: BTreeMap<String, String>,
    pub outcome: Option<Arc<SendOutcome>>,
    /// The result the open key opens in History.
    pub selected: usize,
    /// The first result the Sent table shows when not all fit: kept so the selected one is
    /// in view ([`result_window`]).
    pub first: usize,
    pub error: Option<String>,
    /// What the last send asked: the Sent table is marked as earlier once the Preview
    /// shows another request (tester 34 F15).
    pub asked: Option<Asked>,
}

/// The keys the Sent table's heading names: the live keymap's for next, previous and open,
/// as the status line names them (`Keymap::chord_label`: a chord that acts while typing in
/// the Prompt pane; filled where the console is drawn, `tui::ui::sent_keys`). An action with no such key is not named (tester 50 F10: the heading
/// said `ctrl+n next · ctrl+o opens in History` with both rebound, and never named ctrl+p).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentKeys {
    pub next: Option<String>,
    pub prev: Option<String>,
    pub open: Option<String>,
}

impl SentKeys {
    /// No key named: what the Prompt pane reads until it is drawn with a keymap.
    pub const NONE: SentKeys = SentKeys {
        next: None,
        prev: None,
        open: None,
    };

    /// ` (alt+j next · alt+k previous · ctrl+o opens in History)`, for the keys bound;
    /// empty when none is.
    pub fn hint(&self) -> String {
        let said: Vec<String> = [
            (&self.next, "next"),
            (&self.prev, "previous"),
            (&self.open, "opens in History"),
        ]
        .into_iter()
        .filter_map(|(key, what)| key.as_ref().map(|k| format!("{k} {what}")))
        .collect();
        if said.is_empty() {
            String::new()
        } else {
            format!(" ({})", said.join(" · "))
        }
    }
}

/// The Sent table's label column (`tokens in/out `), the narrowest a result column gets when
/// every result fits, and the narrowest when they do not and the table scrolls: a plan id
/// `send-AT-NN` (18 characters) whole — a table that scrolls anyway shows fewer columns that
/// read, not more that read `se…60-9`.
pub const RESULT_LABEL: usize = 14;
pub const RESULT_MIN_COL: usize = 8;
pub const RESULT_SCROLL_COL: usize = 20;

/// Which of a send's results the Sent table shows: `shown` of `count` from `first`, each
/// column `col` wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultWindow {
    pub first: usize,
    pub shown: usize,
    pub count: usize,
    pub col: usize,
}

impl ResultWindow {
    /// The results on screen, by index.
    pub fn range(self) -> std::ops::Range<usize> {
        self.first..self.first + self.shown
    }

    /// How many results lie off the left.
    pub fn before(self) -> usize {
        self.first
    }

    /// How many results lie off the right.
    pub fn after(self) -> usize {
        self.count.saturating_sub(self.first + self.shown)
    }

    /// Whether some results are off screen.
    pub fn scrolls(self) -> bool {
        self.shown < self.count
    }
}

/// The results a Sent table `width` wide shows, `selected` among them: all of them when each
/// gets [`RESULT_MIN_COL`]; else as many columns of [`RESULT_SCROLL_COL`] as fit beside the
/// room the right-hand marker (`5 ›`) takes, from `first` moved as little as keeps
/// `selected` in view.
pub fn result_window(selected: usize, first: usize, count: usize, width: usize) -> ResultWindow {
    let room = width.saturating_sub(RESULT_LABEL);
    if count <= 1 || count * RESULT_MIN_COL <= room {
        return ResultWindow {
            first: 0,
            shown: count,
            count,
            col: (room / count.max(1)).max(RESULT_MIN_COL),
        };
    }
    let room = room.saturating_sub(crate::core::text::display_width(&format!(" {count} ›")));
    let shown = (room / RESULT_SCROLL_COL).clamp(1, count);
    let selected = selected.min(count - 1);
    let first = first
        .min(count - shown)
        .clamp((selected + 1).saturating_sub(shown), selected);
    ResultWindow {
        first,
        shown,
        count,
        col: (room / shown).max(RESULT_MIN_COL),
    }
}

/// What a send asked: its instruction, the attachments and each model at its tier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    pub prompt: Arc<String>,
    pub attachments: Arc<Vec<Attachment>>,
    /// Each model asked, at the tier its request was planned for.
    pub targets: Vec<(String, Tier)>,
}

impl Asked {
    /// Whether the Preview's request (`prompt`, `attachments`, `model` at `tier`) is another
    /// than this send's: another instruction, attachments of other names or contents, or a
    /// model it did not ask at that tier (tester 35 F4: a tier override; F11: another file of
    /// the same name).
    pub fn is_other_than(
        &self,
        prompt: &str,
        attachments: &[Attachment],
        model: &str,
        tier: Option<Tier>,
    ) -> bool {
        let same_attachments = self.attachments.len() == attachments.len()
            && self
                .attachments
                .iter()
                .zip(attachments)
                .all(|(a, b)| a.name == b.name && a.text == b.text);
        self.prompt.as_str() != prompt
            || !same_attachments
            || !self
                .targets
                .iter()
                .any(|(m, t)| m == model && tier.is_none_or(|tier| tier == *t))
    }

    /// The models asked, at their tiers: `loc/noprice, loc/priced (tier B)`, or
    /// `loc/noprice (tier B), loc/tiny (tier C)`.
    pub fn models_line(&self) -> String {
        // One tier for all is said once; tiers that differ are said model by model (B/C/B
        // read as three tiers of two models, and could not say whose was whose).
        let one_tier = self.targets.first().map(|(_, t)| *t);
        if self.targets.iter().all(|(_, t)| Some(*t) == one_tier) {
            let models: Vec<&str> = self.targets.iter().map(|(m, _)| m.as_str()).collect();
            let tier = one_tier.map_or(String::new(), |t| format!(" (tier {t})"));
            format!("{}{tier}", models.join(", "))
        } else {
            let each: Vec<String> = self
                .targets
                .iter()
                .map(|(m, t)| format!("{m} (tier {t})"))
                .collect();
            each.join(", ")
        }
    }
}

impl SendView {
    /// Start a send of `prompt` to `targets`.
    pub fn start(
        &mut self,
        next: &mut u64,
        prompt: String,
        attachments: Arc<Vec<Attachment>>,
        targets: Vec<EffectiveRow>,
        arms: &[Arm],
    ) -> SendRequest {
        let request = take(next);
        let cancel = Cancel::default();
        let prompt = Arc::new(prompt);
        self.asked = Some(Asked {
            prompt: prompt.clone(),
            attachments: attachments.clone(),
            targets: targets
                .iter()
                .map(|t| (t.model.clone(), t.tier_override.unwrap_or(t.row.tier)))
                .collect(),
        });
        self.running = Some((request, cancel.clone()));
        self.storing = None;
        self.progress.clear();
        self.outcome = None;
        self.selected = 0;
        self.first = 0;
        self.error = None;
        SendRequest {
            request,
            prompt,
            attachments,
            targets,
            arms: arms.to_vec(),
            cancel,
        }
    }

    /// Whether what the send stores waits for another process's write lock: every call is
    /// back and storing waits, or an answer waits in hand for it while calls are out.
    pub fn waits_for_the_lock(&self) -> bool {
        self.storing == Some(true)
            || self
                .progress
                .values()
                .any(|l| l.ends_with(crate::live::send::AWAITING_LOCK))
    }

    pub fn progress(&mut self, request: u64, news: SendNews) {
        if !self.is_running(request) {
            return;
        }
        match news {
            SendNews::Line(label, line) => {
                self.progress.insert(label, line);
            }
            SendNews::Storing { waiting } => self.storing = Some(waiting),
        }
    }

    pub fn finished(&mut self, request: u64, result: Result<Arc<SendOutcome>, String>) {
        if !self.is_running(request) {
            return;
        }
        self.running = None;
        self.storing = None;
        self.progress.clear();
        match result {
            Ok(o) => self.outcome = Some(o),
            Err(e) => self.error = Some(e),
        }
    }

    fn is_running(&self, request: u64) -> bool {
        self.running.as_ref().is_some_and(|(r, _)| *r == request)
    }

    /// Esc while sending: the handle to cancel with (the answers still come back, marked).
    /// None once every call has answered and only storing is left (tester 10 T10-16: esc
    /// then did nothing): esc then leaves the pane, as it does when nothing runs.
    pub fn cancel(&mut self) -> Option<Cancel> {
        if self.storing.is_some() {
            return None;
        }
        let (_, cancel) = self.running.as_ref()?;
        Some(cancel.clone())
    }

    /// The next result (wrapping), the Sent table (`width` wide) scrolled to keep it in view.
    pub fn select_next(&mut self, width: usize) {
        self.select_after(1, width);
    }

    /// The result before the selected one (the last from the first), the table scrolled
    /// to keep it in view.
    pub fn select_prev(&mut self, width: usize) {
        let n = self.result_count();
        self.select_after(n.saturating_sub(1), width);
    }

    /// The result `step` places on, wrapping, the table scrolled to keep it in view.
    fn select_after(&mut self, step: usize, width: usize) {
        let n = self.result_count();
        if n > 0 {
            self.selected = (self.selected + step) % n;
        }
        self.first = self.window(width).first;
    }

    fn result_count(&self) -> usize {
        self.outcome.as_ref().map_or(0, |o| o.results.len())
    }

    /// The results a Sent table `width` wide shows: the selected one always among them.
    pub fn window(&self, width: usize) -> ResultWindow {
        result_window(self.selected, self.first, self.result_count(), width)
    }

    /// The stored plan id of the selected result.
    pub fn selected_plan(&self) -> Option<&str> {
        self.outcome
            .as_ref()?
            .results
            .get(self.selected)?
            .live
            .stored_id
            .as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester (Low): 10 results in an 86-cell Preview showed 9 columns, the 10th cut to `…`,
    /// and the selection moved onto it out of sight. The window keeps the selected result in
    /// view, moving as little as it must, and counts those off either side.
    #[test]
    fn the_result_window_keeps_the_selected_result_in_view() {
        // Every result fits: all shown, as wide as the room allows.
        let all = result_window(2, 0, 3, 86);
        assert_eq!((all.first, all.shown, all.col), (0, 3, 24));
        assert!(!all.scrolls());
        // 10 do not: 3 whole plan ids at a time, the selected one always among them.
        for count in [10, 20] {
            let mut first = 0;
            for step in 0..2 * count {
                let selected = step % count;
                let w = result_window(selected, first, count, 86);
                assert!(w.range().contains(&selected), "{selected} {w:?}");
                assert!(w.col >= RESULT_SCROLL_COL && w.scrolls(), "{w:?}");
                assert_eq!(w.before() + w.shown + w.after(), count);
                // The label, the columns and the `19 ›` marker fit the width.
                let marker = format!(" {} ›", w.after()).chars().count();
                assert!(RESULT_LABEL + w.shown * w.col + marker <= 86, "{w:?}");
                // Moving on by one scrolls by one at most; wrapping goes back to the start.
                assert!(w.first == 0 || w.first <= first + 1, "{first} → {w:?}");
                first = w.first;
            }
        }
        // A window left past the end by a wider pane, or before the selection, is moved.
        assert_eq!(result_window(9, 9, 10, 86).first, 7);
        assert_eq!(result_window(1, 5, 10, 86).first, 1);
        assert_eq!(result_window(5, 4, 10, 86).first, 4);
        // Too narrow for one scrolling column: one column, never none.
        let narrow = result_window(4, 0, 10, 20);
        assert_eq!((narrow.first, narrow.shown), (4, 1));
        // Nothing sent, or one result: nothing to scroll.
        assert_eq!(result_window(0, 3, 0, 86).shown, 0);
        assert_eq!(result_window(0, 3, 1, 10).range(), 0..1);
    }

    /// Tester 35 F11: another file of the same name was taken for the one sent.
    #[test]
    fn another_file_of_the_same_name_is_another_request() {
        let one = |text: &str| Attachment::new("one.txt".into(), text.into());
        let asked = Asked {
            prompt: Arc::new("search the web".into()),
            attachments: Arc::new(vec![one("x\n")]),
            targets: vec![("loc/priced".into(), Tier::B)],
        };
        let same = [one("x\n")];
        assert!(!asked.is_other_than("search the web", &same, "loc/priced", Some(Tier::B)));
        let swapped = [one("forty bytes of some other text here\n")];
        assert!(asked.is_other_than("search the web", &swapped, "loc/priced", Some(Tier::B)));
        assert!(asked.is_other_than("search the web", &same, "loc/priced", Some(Tier::C)));
        assert!(asked.is_other_than("search the web", &same, "loc/other", Some(Tier::B)));
        assert!(asked.is_other_than("search", &same, "loc/priced", Some(Tier::B)));
    }

    /// The models asked: one tier said once; tiers that differ said model by model (B/C/B
    /// had read as three tiers of three models).
    #[test]
    fn the_models_line_says_whose_tier_is_whose() {
        let asked = |targets: &[(&str, Tier)]| Asked {
            prompt: Arc::new("p".into()),
            attachments: Arc::new(Vec::new()),
            targets: targets.iter().map(|(m, t)| (m.to_string(), *t)).collect(),
        };
        assert_eq!(
            asked(&[("a/x", Tier::B), ("a/y", Tier::B)]).models_line(),
            "a/x, a/y (tier B)"
        );
        assert_eq!(
            asked(&[("a/x", Tier::B), ("a/y", Tier::C), ("a/z", Tier::B)]).models_line(),
            "a/x (tier B), a/y (tier C), a/z (tier B)"
        );
    }
}
