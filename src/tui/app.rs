//! Console state and the pure `update`: an action in, state changed, effects out as data.

use std::sync::Arc;

use ratatui::layout::Rect;

use crate::core::budget::{BudgetRow, EffectiveRow, Tier};
use crate::core::compare::Arm;
use crate::llm::client::Cancel;
use crate::preview::QuestionVectors;
use crate::store::view::HistoryQuery;
use crate::tui::action::{Action, Done};
use crate::tui::layout::{self, Region};
pub use crate::tui::panes::Pane;
use crate::tui::panes::budgets::BudgetsPane;
pub use crate::tui::panes::budgets::SortColumn;
use crate::tui::panes::catalog::{self, CatalogInputs, CatalogPane};
use crate::tui::panes::help::{self, HelpModal};
use crate::tui::panes::history::{self, HistoryList, HistoryState, Query, SearchKey};
use crate::tui::panes::history::{ReplayRequest, ReplayResult};
use crate::tui::panes::prompt::{Edit, PromptInputs, PromptPane};
use crate::tui::panes::scroll::{Extent, scrolled};
use crate::tui::semantic::{QuestionEmbedding, SemanticStatus};
use crate::tui::send::{AB_CHOICES, SendRequest, SendView, next_ab};
use crate::tui::snapshot::{RequestInputs, RequestSnapshot};
use crate::tui::unstored::{StoreAgain, Unstored};

use crate::workspace::CatalogOrigin;

/// How long the prompt must be still before it is previewed.
pub const PREVIEW_DEBOUNCE_MS: u64 = 150;

/// How long the instruction must be still before the semantic layer embeds it: a pause in
/// typing, not the gap between two keys (the preview follows the keys lexically meanwhile).
/// An embedder may be paid for or rate-limited, so a key must not cost a call.
pub const QUESTION_SETTLE_MS: u64 = 800;

/// Work for the runtime: it runs off the UI thread and reports back as an action.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Plan the one request the panes show, for generation `generation` of the inputs.
    Plan {
        generation: u64,
        inputs: Box<RequestInputs>,
    },
    /// Hand `action` back once `delay` has passed (a debounce: the runtime sleeps, tests
    /// drive the time themselves).
    After {
        delay: std::time::Duration,
        action: Action,
    },
    /// Read a file the operator typed the path of, as an attachment.
    ReadAttachment { request: u64, path: String },
    /// A History pane query against the store.
    History { request: u64, query: HistoryQuery },
    /// Replay a plan; progress and the result come back as actions.
    Replay(ReplayRequest),
    /// Stop a running replay (or send).
    CancelReplay(Cancel),
    /// Send the previewed request; progress and the results come back as actions.
    Send(SendRequest),
    /// Store again answers the store could not take; what came of it comes back as an action.
    StoreAgain(StoreAgain),
}

fn history_effects(queries: Vec<Query>) -> Vec<Effect> {
    queries
        .into_iter()
        .map(|(request, query)| Effect::History { request, query })
        .collect()
}

#[derive(Debug, Clone)]
pub struct State {
    /// The Budgets pane's own state: the rows, the selection, sort, search and marks.
    pub budgets: BudgetsPane,
    /// A search (the Budgets' or the Catalog's) is being typed.
    pub filter_editing: bool,
    pub focus: Pane,
    pub tier_override: Option<Tier>,
    /// The one planned request every pane draws (the latest that came back), and the
    /// generation of the inputs being planned now (an answer for any other is stale).
    pub request: Option<Arc<RequestSnapshot>>,
    pub planning: Option<u64>,
    pub next_request: u64,
    pub catalog_origin: CatalogOrigin,
    /// Full catalog text, one entry per line, for the full view.
    pub full_catalog: Arc<String>,
    /// The help modal (its state, its keys).
    pub help: HelpModal,
    pub quit: bool,
    /// Rows a page moves; set from the last drawn height.
    pub page: usize,
    /// The terminal's width when last drawn (help wraps the status to it).
    pub width: u16,
    /// The terminal's height when last drawn (where a scrolled view ends depends on it).
    pub height: u16,
    pub notes: Vec<String>,
    /// The Prompt pane's own state: the instruction, the attachments, the preview scroll.
    pub prompt: PromptPane,
    pub history: HistoryState,
    /// The Catalog pane's own state.
    pub catalog: CatalogPane,
    /// The A/B arms sent beside `compacted` (one of `send::AB_CHOICES`).
    pub ab: &'static [Arm],
    pub send: SendView,
    /// The semantic layer: off, embedding, on, or failed (said on the status line).
    pub semantic: SemanticStatus,
    /// Which plan may embed the instruction: once it has settled, one at a time.
    pub question: QuestionEmbedding,
    /// Answers paid for that the store could not take: kept, stored again on request and
    /// at quit, else written to a file (said on the status line while any wait).
    pub unstored: Unstored,
}

impl State {
    /// Whether the terminal was below [`layout::MIN_WIDTH`] × [`layout::MIN_HEIGHT`] when
    /// last drawn: the screen is then only the message asking for more room, and only its
    /// quit key acts.
    pub fn too_small(&self) -> bool {
        self.width < layout::MIN_WIDTH || self.height < layout::MIN_HEIGHT
    }

    /// The console's status in full, one `(label, text)` each (outside text: shown when
    /// drawn): the semantic layer, the answers waiting to be stored, every note ([`State::note`]).
    pub fn status_entries(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(line) = self.semantic.line(None) {
            out.push(("semantic layer".to_string(), line));
        }
        if let Some(line) = self.unstored.line(self.help.store_again.as_deref()) {
            out.push(("answers".to_string(), line));
        }
        let count = self.notes.len();
        for i in 0..count {
            out.push((
                format!("note {}/{count}", i + 1),
                self.note(i).unwrap_or_default(),
            ));
        }
        out
    }

    /// Note `i` as the console shows it: every configured key as `[REDACTED]`, as on stderr
    /// and in the log (a note may quote an error, and an error any value a file held).
    pub fn note(&self, i: usize) -> Option<String> {
        self.notes
            .get(i)
            .map(|n| crate::llm::redact::for_output(n).into_owned())
    }

    /// What quitting says it waits for: calls to cancel only while any is out, and another
    /// process's write lock when storing waits for it (tester 40 F3: it said "cancelling what is
    /// still sending" with every call back, and nothing of the lock the pane showed).
    pub fn quit_wait_line(&self, wait: std::time::Duration) -> String {
        let what = if self.send.storing.is_some() && self.replay_running().is_none() {
            "storing the answers already back"
        } else {
            "cancelling what is still sending and storing the answers already back"
        };
        let lock = if self.send.waits_for_the_lock() {
            ", which waits for another process's write lock on the store"
        } else {
            ""
        };
        format!(
            "ctxconsole: {what}{lock} (at most {} s; what the store cannot take then goes to a \
             file)…",
            wait.as_secs()
        )
    }

    /// The calls in flight that pay for an answer (a send, a live replay): the handles
    /// that cancel them. Quitting cancels them and waits for what already came back to be
    /// stored (tester 10 T10-24: answers already paid for were dropped at quit).
    pub fn paid_calls_in_flight(&self) -> Vec<Cancel> {
        let send = self.send.running.as_ref().map(|(_, c)| c.clone());
        let replay = self.replay_running().cloned();
        send.into_iter().chain(replay).collect()
    }

    /// The handle that cancels the live replay in flight, if one is.
    fn replay_running(&self) -> Option<&Cancel> {
        self.history
            .replay
            .as_ref()
            .and_then(|r| r.running.as_ref())
            .map(|(_, c)| c)
    }

    pub fn new(
        rows: Vec<BudgetRow>,
        catalog_origin: CatalogOrigin,
        full_catalog: Arc<String>,
        notes: Vec<String>,
    ) -> State {
        State {
            budgets: BudgetsPane::new(rows),
            filter_editing: false,
            focus: Pane::Budgets,
            tier_override: None,
            request: None,
            planning: None,
            next_request: 1,
            catalog_origin,
            full_catalog,
            help: HelpModal::new(&crate::tui::keymap::Keymap::default()),
            quit: false,
            page: 10,
            width: 120,
            // The smallest screen drawn (`layout::MIN_HEIGHT`): below it only the quit key acts.
            height: 20,
            notes,
            prompt: PromptPane::default(),
            history: HistoryState::default(),
            catalog: Default::default(),
            ab: AB_CHOICES[0],
            send: SendView::default(),
            semantic: SemanticStatus::Off,
            question: QuestionEmbedding::default(),
            unstored: Unstored::default(),
        }
    }

    /// The terminal is `width`×`height` now: the views are drawn, and scroll, for that.
    pub fn resized(&mut self, width: u16, height: u16) {
        self.page = height.saturating_sub(8).max(1) as usize;
        self.width = width;
        self.height = height;
    }

    /// The whole screen as last drawn.
    pub fn screen(&self) -> Rect {
        Rect::new(0, 0, self.width, self.height)
    }

    /// The body (between the header and the status line) as last drawn: where the panes
    /// and the modals go.
    pub fn body(&self) -> Rect {
        layout::areas(self.screen(), self.focus).body
    }

    /// The Preview's rows and how many show, as last drawn.
    fn preview_extent(&self) -> Extent {
        let area = layout::areas(self.screen(), self.focus)
            .panes
            .into_iter()
            .find(|(r, _)| *r == Region::Preview)
            .map_or(Rect::default(), |(_, a)| a);
        crate::tui::panes::prompt::preview_extent(&self.prompt_inputs(), area)
    }

    /// The width inside the Preview's frame as last drawn (with the Prompt pane focused,
    /// where the Preview shows): what the Sent table in it is laid out for.
    fn preview_width(&self) -> usize {
        layout::areas(self.screen(), Pane::Prompt)
            .panes
            .into_iter()
            .find(|(r, _)| *r == Region::Preview)
            .map_or(0, |(_, a)| crate::tui::panes::prompt::preview_width(a))
    }

    /// The instruction as one string.
    pub fn prompt_text(&self) -> String {
        self.prompt.text()
    }

    /// What an edit of the Prompt pane asks for, as effects: the instruction is planned
    /// once it has been still, attachments at once, a typed path is read off the UI thread.
    fn prompt_edited(&mut self, edit: Edit) -> Vec<Effect> {
        match edit {
            Edit::Nothing => Vec::new(),
            Edit::Instruction(version) => {
                let mut effects = vec![Effect::After {
                    delay: std::time::Duration::from_millis(PREVIEW_DEBOUNCE_MS),
                    action: Action::PreviewDue(version),
                }];
                if self.semantic.embeds_questions() {
                    effects.push(Effect::After {
                        delay: std::time::Duration::from_millis(QUESTION_SETTLE_MS),
                        action: Action::QuestionSettled(version),
                    });
                }
                effects
            }
            Edit::Attachments => self.replan(),
            Edit::Read(path) => {
                let request = crate::tui::request_id::take(&mut self.next_request);
                self.prompt.reading(request);
                vec![Effect::ReadAttachment { request, path }]
            }
        }
    }

    /// What the Prompt pane reads besides its own state (the Sent heading's keys, from the
    /// keymap, are filled where it is drawn: `tui::ui::sent_keys`).
    pub fn prompt_inputs(&self) -> PromptInputs<'_> {
        PromptInputs {
            sent_keys: &crate::tui::send::SentKeys::NONE,
            focused: self.focus == Pane::Prompt,
            ab: self.ab,
            marked: self.budgets.marked.len(),
            request: self.request.as_deref(),
            planning: self.planning.is_some(),
            send: &self.send,
            sent_earlier: self.send.asked.as_ref().is_some_and(|asked| {
                asked.is_other_than(
                    &self.prompt.text(),
                    &self.prompt.attachments,
                    self.request
                        .as_ref()
                        .map_or("", |r| r.planned.model.as_str()),
                    self.request.as_ref().map(|r| r.planned.tier),
                )
            }),
        }
    }

    /// Work a pane needs when it gains focus: History loads on first visit.
    pub fn focused(&mut self) -> Vec<Effect> {
        if self.focus == Pane::History {
            history_effects(self.history.ensure_loaded(&mut self.next_request))
        } else {
            Vec::new()
        }
    }

    /// After the model, tier or attachments changed: plan the request again.
    pub fn refresh(&mut self) -> Vec<Effect> {
        self.replan()
    }

    /// Plan the one request for the inputs as they are now: the selected row with the tier
    /// override, the instruction and the attachments. Every pane then draws its answer; an
    /// answer for an older generation is dropped when it comes back. The plan embeds the
    /// instruction only when [`QuestionEmbedding`] lets it.
    pub fn replan(&mut self) -> Vec<Effect> {
        let Some(effective) = self.effective() else {
            return Vec::new();
        };
        let generation = crate::tui::request_id::take(&mut self.next_request);
        self.planning = Some(generation);
        let question = if matches!(self.semantic, SemanticStatus::On { .. }) {
            self.question.vectors_for(generation, self.prompt.version)
        } else {
            QuestionVectors::Remembered
        };
        vec![Effect::Plan {
            generation,
            inputs: Box::new(RequestInputs {
                effective,
                instruction: Arc::new(self.prompt_text()),
                attachments: self.prompt.attachments.clone(),
                question,
            }),
        }]
    }

    pub fn selected_row(&self) -> Option<&BudgetRow> {
        self.budgets.selected_row()
    }

    /// The effective row for the selection: the row itself (a prefix row stands for its
    /// family), with the tier override applied.
    pub fn effective(&self) -> Option<EffectiveRow> {
        Some(EffectiveRow::of_row(
            self.selected_row()?,
            self.tier_override,
        ))
    }

    /// What a send goes to: the selected model, then the marked ones in table order, each
    /// with the tier override the Preview applies.
    pub fn send_targets(&self) -> Vec<EffectiveRow> {
        let mut out: Vec<EffectiveRow> = self.effective().into_iter().collect();
        for row in &self.budgets.rows {
            if self.budgets.marked.contains(&row.id) {
                let target = EffectiveRow::of_row(row, self.tier_override);
                if out.iter().all(|e| e.model != target.model) {
                    out.push(target);
                }
            }
        }
        out
    }

    /// After the Budgets search changed: the rows again, and when that moved the selection
    /// to another row, the catalog and the preview for it (never a preview of the row
    /// before).
    fn refilter(&mut self) -> Vec<Effect> {
        if !self.budgets.refilter() {
            return Vec::new();
        }
        self.catalog.scroll = 0;
        self.refresh()
    }

    fn move_selection(&mut self, to: usize) -> Vec<Effect> {
        if !self.budgets.select(to) && self.request.is_some() {
            return Vec::new();
        }
        self.catalog.scroll = 0;
        self.refresh()
    }

    /// Answers stored again (each its plan line and stored id): the panes that show them
    /// say where they are now, not `NOT STORED`.
    fn stored_later(&mut self, stored: &[(String, String)]) {
        for (line, id) in stored {
            if let Some(o) = self.send.outcome.as_mut() {
                for r in &mut Arc::make_mut(o).results {
                    r.live.stored_later(line, id);
                }
            }
            if let Some(result) = self.history.replay.as_mut().and_then(|r| r.result.as_mut())
                && let ReplayResult::Live(l) = Arc::make_mut(result)
            {
                l.stored_later(line, id);
            }
        }
    }

    /// The console stored a plan (a send, a replay, an answer stored again): the History
    /// pane's lists, counts and charts are read again — now when the pane is shown, else
    /// when it next is — so every view agrees with the store (tester 22 F2).
    fn stored_plans(&mut self) -> Vec<Effect> {
        self.history.stale = true;
        if self.focus == Pane::History {
            return self.focused();
        }
        Vec::new()
    }

    /// Lines in the catalog viewer now (those matching its search).
    pub fn catalog_lines(&self) -> usize {
        self.catalog
            .lines(self.request.as_deref(), &self.full_catalog)
    }

    /// Whether a search is being typed in `pane`: keys go to the focused pane's search
    /// (`update` routes them by focus), so only that pane draws a cursor.
    pub fn typing_search_in(&self, pane: Pane) -> bool {
        self.filter_editing && self.focus == pane
    }

    /// What the Catalog pane reads besides its own state.
    pub fn catalog_inputs(&self) -> CatalogInputs<'_> {
        CatalogInputs {
            request: self.request.as_deref(),
            planning: self.planning.is_some(),
            full_catalog: &self.full_catalog,
            catalog_format: Some(self.catalog_origin.format.as_str()),
            focused: self.focus == Pane::Catalog,
            searching: self.typing_search_in(Pane::Catalog),
        }
    }
}

/// Where a movement key takes a selection at `current` in a list of `len` rows.
fn move_target(action: &Action, current: u64, len: u64, page: u64) -> u64 {
    match action {
        Action::Up => current.saturating_sub(1),
        Action::Down => current + 1,
        Action::PageUp => current.saturating_sub(page),
        Action::PageDown => current + page,
        Action::Top => 0,
        Action::SelectRow(n) => *n,
        _ => len.saturating_sub(1),
    }
}

/// Apply one action. Pure: no I/O, no clock; work to do comes back as effects.
pub fn update(state: &mut State, action: Action) -> Vec<Effect> {
    // Below the smallest screen only the message is drawn: a paste is not taken into a
    // box no one sees (tester 17 F1; keys: `apply_keys`).
    if state.too_small() && matches!(action, Action::Paste(_)) {
        return Vec::new();
    }
    if state.help.open && help::takes(&action) {
        let extent = state.help.extent(&state.status_entries(), state.body());
        state.help.update(action, state.page, extent);
        return Vec::new();
    }
    if state.catalog.entry_open && action != Action::ToggleHelp && catalog::takes(&action) {
        let extent = catalog::entry_extent(&state.catalog, &state.catalog_inputs(), state.body());
        state.catalog.entry_update(action, state.page, extent);
        return Vec::new();
    }
    if let Some(edit) = state.prompt.path_key(&action) {
        return state.prompt_edited(edit);
    }
    match action {
        Action::ClearPrompt => {
            let edit = state.prompt.clear();
            return state.prompt_edited(edit);
        }
        Action::PromptKey(input) => {
            let edit = state.prompt.key(input);
            return state.prompt_edited(edit);
        }
        Action::Paste(text) if state.focus == Pane::Prompt => {
            let edit = state.prompt.paste(text);
            return state.prompt_edited(edit);
        }
        Action::Attach => {
            state.focus = Pane::Prompt;
            state.prompt.open_path_line();
            return Vec::new();
        }
        Action::RemoveAttachment => {
            let edit = state.prompt.remove_selected();
            return state.prompt_edited(edit);
        }
        Action::NextAttachment => {
            state.prompt.next_chip();
            return Vec::new();
        }
        Action::AttachmentRead(request, result) => {
            let edit = state
                .prompt
                .read_back(request, result.map(|Done(a)| Arc::unwrap_or_clone(a)));
            return state.prompt_edited(edit);
        }
        Action::Send => {
            let prompt = state.prompt_text();
            if state.send.running.is_some() {
                return Vec::new();
            }
            if !state.prompt.asks_anything() {
                state.send.error = Some(
                    "type a prompt or attach something first: the Preview is what is sent".into(),
                );
                return Vec::new();
            }
            // What the last store-again came to has been read by now: the status line
            // keeps only what still waits.
            if state.unstored.pending.is_empty() {
                state.unstored.last = None;
            }
            let targets = state.send_targets();
            let arms = state.ab;
            let attachments = state.prompt.attachments.clone();
            return vec![Effect::Send(state.send.start(
                &mut state.next_request,
                prompt,
                attachments,
                targets,
                arms,
            ))];
        }
        Action::ToggleAb => {
            state.ab = next_ab(state.ab);
            return Vec::new();
        }
        Action::NextSent => {
            let width = state.preview_width();
            state.send.select_next(width);
            return Vec::new();
        }
        Action::PrevSent => {
            let width = state.preview_width();
            state.send.select_prev(width);
            return Vec::new();
        }
        Action::OpenSent => {
            let Some(id) = state.send.selected_plan().map(str::to_string) else {
                return Vec::new();
            };
            state.focus = Pane::History;
            return history_effects(state.history.open_plan(&id, &mut state.next_request));
        }
        Action::SendProgress(request, news) => {
            state.send.progress(request, news);
            return Vec::new();
        }
        Action::Sent(request, result) => {
            let mut stored = false;
            if let Ok(Done(o)) = &result {
                for r in &o.results {
                    state.unstored.keep(r.label(), &r.live);
                    stored |= r.live.stored_id.is_some();
                }
            }
            state.send.finished(request, result.map(|Done(o)| o));
            return if stored {
                state.stored_plans()
            } else {
                Vec::new()
            };
        }
        Action::StoreAgain => {
            return state
                .unstored
                .start(&mut state.next_request)
                .map(Effect::StoreAgain)
                .into_iter()
                .collect();
        }
        Action::StoredAgain(request, result) => {
            let stored = state.unstored.finished(
                request,
                result
                    .as_ref()
                    .map(|Done(o)| o.as_ref())
                    .map_err(Clone::clone),
            );
            state.stored_later(&stored);
            return if stored.is_empty() {
                Vec::new()
            } else {
                state.stored_plans()
            };
        }
        Action::SemanticLayer(status) => {
            let ready = matches!(status, SemanticStatus::On { .. });
            state.semantic = status;
            // The request on screen was ranked lexically: plan it again with the layer.
            return if ready { state.replan() } else { Vec::new() };
        }
        Action::PreviewDue(version) => {
            return if version == state.prompt.version {
                state.replan()
            } else {
                Vec::new()
            };
        }
        Action::QuestionSettled(version) => {
            if version != state.prompt.version {
                return Vec::new();
            }
            state.question.settled = version;
            // Planned again, this time embedding the instruction (or next, when a plan is
            // embedding an older text now).
            return if matches!(state.semantic, SemanticStatus::On { .. }) {
                state.replan()
            } else {
                Vec::new()
            };
        }
        Action::HistoryAnswered(request, result, regrouped) => {
            let mut queries =
                state
                    .history
                    .answered(request, result.map(|Done(a)| a), &mut state.next_request);
            if regrouped {
                queries.extend(state.history.store_regrouped(&mut state.next_request));
            }
            return history_effects(queries);
        }
        Action::Planned(generation, Done(snapshot)) => {
            // An answer for inputs the operator has already changed is dropped: the one
            // for the newest generation is on its way.
            if state.planning == Some(generation) {
                state.planning = None;
                state.request = Some(snapshot);
                let lines = state.catalog_lines();
                let scroll = state.catalog.scroll;
                state.catalog.scroll_to(scroll, lines);
            }
            // The plan that was embedding is back: the newest settled text, if it waited for
            // it, is embedded now.
            if state.question.came_back(generation, state.prompt.version) {
                return state.replan();
            }
            return Vec::new();
        }
        _ => {}
    }
    if state.filter_editing
        && state.focus == Pane::Catalog
        && let Some(typing) = state.catalog.search_key(&action)
    {
        state.filter_editing = typing;
        return Vec::new();
    }
    if state.filter_editing && state.focus == Pane::History {
        match state.history.search_key(&action, &mut state.next_request) {
            Some(SearchKey::Typing) => return Vec::new(),
            Some(SearchKey::Done(queries)) => {
                state.filter_editing = false;
                return history_effects(queries);
            }
            None => {}
        }
    }
    if state.filter_editing {
        match action {
            Action::Char(c) => {
                state.budgets.filter.push(c);
                return state.refilter();
            }
            Action::Backspace => {
                state.budgets.filter.pop();
                return state.refilter();
            }
            Action::Confirm => {
                state.filter_editing = false;
                return Vec::new();
            }
            Action::Back => {
                state.filter_editing = false;
                state.budgets.filter.clear();
                return state.refilter();
            }
            Action::Paste(text) => {
                state
                    .budgets
                    .filter
                    .extend(text.chars().filter(|c| !c.is_control()));
                return state.refilter();
            }
            Action::Resize | Action::Quit => {}
            // Other keys are typed, not interpreted, while the filter is open.
            _ => return Vec::new(),
        }
    }
    match action {
        Action::Quit => state.quit = true,
        Action::ToggleHelp => state.help.toggle(),
        Action::Back => {
            if state.help.open {
                state.help.open = false;
            } else if state.focus == Pane::Prompt {
                if let Some(cancel) = state.send.cancel() {
                    return vec![Effect::CancelReplay(cancel)];
                }
                state.focus = Pane::Budgets;
            } else if state.focus == Pane::History {
                if let Some(cancel) = state.history.replay.as_mut().and_then(|r| r.cancel()) {
                    return vec![Effect::CancelReplay(cancel)];
                }
                if let Some(q) = state.history.back(&mut state.next_request) {
                    return history_effects(q);
                }
            } else if state.focus == Pane::Catalog && !state.catalog.search.is_empty() {
                state.catalog.search.clear();
                state.catalog.scroll = 0;
            } else if !state.budgets.filter.is_empty() {
                state.budgets.filter.clear();
                return state.refilter();
            }
        }
        Action::FocusNext | Action::FocusPrev => {
            let i = Pane::ALL
                .iter()
                .position(|p| *p == state.focus)
                .unwrap_or(0);
            let n = Pane::ALL.len();
            let j = if action == Action::FocusNext {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            state.focus = Pane::ALL[j];
            return state.focused();
        }
        Action::FocusBudgets => state.focus = Pane::Budgets,
        Action::FocusCatalog => state.focus = Pane::Catalog,
        Action::FocusPrompt => state.focus = Pane::Prompt,
        Action::FocusHistory => {
            state.focus = Pane::History;
            return state.focused();
        }
        Action::Left | Action::Right if state.focus == Pane::History => {
            state.history.switch_list(if action == Action::Left {
                HistoryList::Groups
            } else {
                HistoryList::Plans
            });
        }
        Action::Replay if state.focus == Pane::History => state.history.open_replay(),
        Action::Open if state.focus == Pane::History && state.history.picker().is_some() => {
            return state
                .history
                .start_replay(&mut state.next_request)
                .map(Effect::Replay)
                .into_iter()
                .collect();
        }
        Action::Up | Action::Down
            if state.focus == Pane::History && state.history.picker().is_some() =>
        {
            if let Some(p) = state.history.picker() {
                p.move_choice(action == Action::Down);
            }
        }
        Action::ReplayProgress(request, line) => {
            if let Some(r) = &mut state.history.replay {
                r.progress(request, line);
            }
        }
        Action::Replayed(request, result) => {
            let stored = matches!(&result, Ok(Done(r))
                if matches!(r.as_ref(), ReplayResult::Live(l) if l.stored_id.is_some()));
            if let Ok(Done(r)) = &result
                && let ReplayResult::Live(l) = r.as_ref()
            {
                let of = state
                    .history
                    .replay
                    .as_ref()
                    .map_or("", |r| r.plan_id.as_str());
                state
                    .unstored
                    .keep(format!("replay of {of} on {}", l.model), l);
            }
            if let Some(r) = &mut state.history.replay {
                r.finished(request, result.map(|Done(r)| r));
            }
            if stored {
                // The plan now has one more replay, and the lists one more plan.
                return state.stored_plans();
            }
        }
        Action::Open if state.focus == Pane::History => {
            return history_effects(state.history.open(&mut state.next_request));
        }
        Action::ToggleGaps if state.focus == Pane::History => {
            return history_effects(state.history.toggle_gaps(&mut state.next_request));
        }
        Action::CycleOutcome
        | Action::CycleDrift
        | Action::CycleCaller
        | Action::CycleModel
        | Action::CycleSource
        | Action::ClearFilters => {
            if state.focus != Pane::History {
                return Vec::new();
            }
            let next = &mut state.next_request;
            let h = &mut state.history;
            let q = match action {
                Action::CycleOutcome => h.cycle_outcome(next),
                Action::CycleDrift => h.cycle_drift(next),
                Action::CycleCaller => h.cycle_caller(next),
                Action::CycleModel => h.cycle_model(next),
                Action::CycleSource => h.cycle_source(next),
                _ => h.clear_filters(next),
            };
            return history_effects(q);
        }
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
        | Action::SelectRow(_) => {
            let page = state.page.max(1) as u64;
            match state.focus {
                // A plan open in full scrolls; moving between plans is the lists', once it
                // is closed (tester 17 F2).
                Pane::History if state.history.expanded => {
                    let extent = history::detail_extent(&state.history, state.body());
                    state.history.scroll_detail(&action, state.page, extent);
                }
                Pane::History => {
                    let (current, len) = state.history.position();
                    let to = move_target(&action, current, len, page);
                    return history_effects(state.history.move_to(to, &mut state.next_request));
                }
                Pane::Prompt => {
                    let extent = state.preview_extent();
                    if let Some(top) =
                        scrolled(action.movement(), state.prompt.scroll, state.page, extent)
                    {
                        state.prompt.scroll = top;
                    }
                }
                Pane::Budgets => {
                    let (current, len) = (state.budgets.selected, state.budgets.visible.len());
                    let to = move_target(&action, current as u64, len as u64, page) as usize;
                    return state.move_selection(to);
                }
                Pane::Catalog => {
                    let lines = state.catalog_lines();
                    let current = state.catalog.scroll as u64;
                    let to = move_target(&action, current, lines as u64, page) as usize;
                    state.catalog.scroll_to(to, lines);
                }
            }
        }
        Action::MarkModel if state.focus == Pane::Budgets => state.budgets.toggle_mark(),
        Action::SortNext => state.budgets.sort_next(),
        Action::SortReverse => state.budgets.sort_reverse(),
        Action::Filter => {
            // The Catalog searches its own lines and History its plans' intents; elsewhere
            // `/` searches the Budgets.
            match state.focus {
                Pane::Catalog => {}
                Pane::History => state.history.start_search(),
                _ => state.focus = Pane::Budgets,
            }
            state.filter_editing = true;
        }
        Action::Open if state.focus == Pane::Catalog => {
            let request = state.request.clone();
            state
                .catalog
                .open_entry(request.as_deref(), &state.full_catalog);
        }
        Action::CycleTier => {
            state.tier_override = match state.tier_override {
                None => Some(Tier::A),
                Some(Tier::A) => Some(Tier::B),
                Some(Tier::B) => Some(Tier::C),
                Some(Tier::C) => None,
            };
            return state.refresh();
        }
        Action::ToggleFullView => {
            state.catalog.toggle_full_view();
        }
        Action::Char(_)
        | Action::Backspace
        | Action::Confirm
        | Action::Paste(_)
        | Action::Resize
        | Action::ClearPrompt
        | Action::PromptKey(_)
        | Action::PreviewDue(_)
        | Action::QuestionSettled(_)
        | Action::Planned(..)
        | Action::AttachmentRead(..)
        | Action::Attach
        | Action::RemoveAttachment
        | Action::NextAttachment
        | Action::HistoryAnswered(..)
        | Action::Left
        | Action::Right
        | Action::Replay
        | Action::ToggleGaps
        | Action::MarkModel
        | Action::Send
        | Action::ToggleAb
        | Action::NextSent
        | Action::PrevSent
        | Action::OpenSent
        | Action::SendProgress(..)
        | Action::Sent(..)
        | Action::SemanticLayer(_)
        | Action::StoreAgain
        | Action::StoredAgain(..)
        | Action::Open => {}
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::budget::{Layer, parse_budgets_toml};
    use crate::sample::SAMPLE_BUDGETS;

    /// Tester 40 F3: the quit's line says what it waits for — calls to cancel only while
    /// one is out, and another process's write lock when storing waits for it.
    #[test]
    fn quitting_says_whether_it_waits_for_calls_or_the_lock() {
        let wait = std::time::Duration::from_secs(75);
        let mut s = state();
        let said = s.quit_wait_line(wait);
        assert!(said.contains("cancelling what is still sending"), "{said}");
        assert!(!said.contains("write lock"), "{said}");
        s.send.progress.insert(
            "test/ok".into(),
            format!(
                "test/ok back in 3 ms · {}",
                crate::live::send::AWAITING_LOCK
            ),
        );
        let said = s.quit_wait_line(wait);
        assert!(said.contains("cancelling what is still sending"), "{said}");
        assert!(
            said.contains("waits for another process's write lock on the store (at most 75 s"),
            "{said}"
        );
        s.send.storing = Some(true);
        let said = s.quit_wait_line(wait);
        assert!(
            said.starts_with("ctxconsole: storing the answers already back, which waits"),
            "{said}"
        );
    }

    fn state() -> State {
        let rows = parse_budgets_toml(SAMPLE_BUDGETS, "sample", Layer::Sample).unwrap();
        State::new(
            rows,
            CatalogOrigin {
                name: "t".into(),
                format: "t".into(),
            },
            Arc::new(String::new()),
            vec![],
        )
    }

    #[test]
    fn moving_the_selection_plans_the_new_rows_request_once() {
        let mut s = state();
        let effects = update(&mut s, Action::Down);
        assert_eq!(s.budgets.selected, 1);
        let [Effect::Plan { generation, inputs }] = effects.as_slice() else {
            panic!("{effects:?}")
        };
        assert_eq!(inputs.effective.model, s.budgets.rows[1].id);
        assert_eq!(s.planning, Some(*generation));
        let effects = update(&mut s, Action::Bottom);
        assert_eq!(s.budgets.selected, s.budgets.rows.len() - 1);
        assert_eq!(effects.len(), 1);
    }

    #[test]
    fn tier_override_cycles_and_applies() {
        let mut s = state();
        let e = update(&mut s, Action::CycleTier);
        assert_eq!(s.tier_override, Some(Tier::A));
        let [Effect::Plan { inputs, .. }] = e.as_slice() else {
            panic!("expected one plan: {e:?}")
        };
        assert_eq!(inputs.effective.row.tier, Tier::A);
        update(&mut s, Action::CycleTier);
        let e = update(&mut s, Action::CycleTier);
        let [Effect::Plan { inputs, .. }] = e.as_slice() else {
            panic!("expected one plan: {e:?}")
        };
        assert_eq!(inputs.effective.row.tier, Tier::C);
        assert_eq!(inputs.effective.row.max_catalog_bytes, Some(10_000));
        update(&mut s, Action::CycleTier);
        assert_eq!(s.tier_override, None);
    }

    #[test]
    fn filter_typing_is_not_interpreted_as_commands() {
        let mut s = state();
        update(&mut s, Action::Filter);
        for c in "free".chars() {
            update(&mut s, Action::Char(c));
        }
        assert_eq!(s.budgets.filter, "free");
        // Keys the keymap would bind are typed while the filter is open.
        update(&mut s, Action::CycleTier);
        assert_eq!(s.tier_override, None);
        update(&mut s, Action::Quit);
        assert!(s.quit, "quit (ctrl+c) still quits while typing");
        let mut s = state();
        update(&mut s, Action::Filter);
        update(&mut s, Action::Paste("free".into()));
        assert!(
            s.budgets
                .visible
                .iter()
                .all(|&i| s.budgets.rows[i].id.contains("free"))
        );
        assert!(!s.budgets.visible.is_empty());
        update(&mut s, Action::Confirm);
        assert!(!s.filter_editing);
        update(&mut s, Action::Back);
        assert_eq!(s.budgets.visible.len(), s.budgets.rows.len());
    }

    #[test]
    fn a_search_that_moves_the_selection_previews_the_new_row() {
        let mut s = state();
        s.prompt.input.insert_str("draft a blog post");
        let first = s.selected_row().unwrap().id.clone();
        update(&mut s, Action::Filter);
        // "f": the first row matching "f" is another model; the preview follows it.
        let effects = update(&mut s, Action::Char('f'));
        let now = s.selected_row().unwrap().id.clone();
        assert_ne!(now, first);
        let previewed: Vec<&str> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Plan { inputs, .. } => Some(inputs.effective.model.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(previewed, [now.as_str()], "{effects:?}");
        assert!(s.planning.is_some());
        // "fl" still matches the selected row: nothing to recompute.
        assert!(now.contains("fl"), "{now}");
        let effects = update(&mut s, Action::Char('l'));
        assert_eq!(s.selected_row().unwrap().id, now);
        assert!(effects.is_empty(), "{effects:?}");
    }

    #[test]
    fn sorting_keeps_the_selected_row() {
        let mut s = state();
        update(&mut s, Action::Down);
        update(&mut s, Action::Down);
        let id = s.selected_row().unwrap().id.clone();
        update(&mut s, Action::SortNext);
        update(&mut s, Action::SortNext);
        assert_eq!(s.budgets.sort, SortColumn::Tier);
        assert_eq!(s.selected_row().unwrap().id, id);
        update(&mut s, Action::SortReverse);
        assert_eq!(s.selected_row().unwrap().id, id);
        assert_eq!(s.budgets.rows[s.budgets.visible[0]].tier, Tier::C);
    }

    /// Tester 16 F10: with the semantic layer on, a key plans the preview from what the
    /// layer remembers; only text that stayed still is embedded, by one plan at a time, and
    /// the newest settled text goes next.
    #[test]
    fn a_key_never_embeds_the_settled_text_does_one_plan_at_a_time() {
        let embeds = |e: &[Effect]| match e {
            [Effect::Plan { inputs, .. }] => inputs.question == QuestionVectors::Embed,
            other => panic!("{other:?}"),
        };
        let mut s = state();
        update(&mut s, Action::FocusPrompt);
        let e = update(&mut s, Action::Paste("book".into()));
        assert_eq!(e.len(), 1, "layer off: no settle timer: {e:?}");
        s.semantic = SemanticStatus::On {
            embedder: "endpoint:t".into(),
            embedded_now: 0,
            entries: 1,
            not_cached: None,
        };
        let e = update(&mut s, Action::Paste(" a flight".into()));
        let [
            Effect::After {
                action: Action::PreviewDue(v),
                ..
            },
            Effect::After {
                action: Action::QuestionSettled(settled),
                delay,
            },
        ] = e.as_slice()
        else {
            panic!("{e:?}")
        };
        assert_eq!(v, settled);
        assert!(delay.as_millis() > u128::from(PREVIEW_DEBOUNCE_MS));
        assert!(!embeds(&update(&mut s, Action::PreviewDue(*v))));
        let e = update(&mut s, Action::QuestionSettled(*settled));
        assert!(embeds(&e));
        let Effect::Plan { generation, .. } = e[0] else {
            unreachable!()
        };
        // More text settles while that plan is out: planned from memory, and it waits.
        update(&mut s, Action::Paste(" to lisbon".into()));
        let newest = s.prompt.version;
        assert!(!embeds(&update(&mut s, Action::QuestionSettled(newest))));
        assert!(update(&mut s, Action::QuestionSettled(newest - 1)).is_empty());
        let answer = planned(generation, &s);
        let e = update(&mut s, answer);
        assert!(
            embeds(&e),
            "the newest text goes once the older plan is back"
        );
    }

    #[test]
    fn stale_results_are_dropped() {
        let mut s = state();
        let first = s.replan();
        let second = s.replan();
        let (Effect::Plan { generation: g1, .. }, Effect::Plan { generation: g2, .. }) =
            (&first[0], &second[0])
        else {
            panic!("expected plans")
        };
        assert_ne!(g1, g2);
        assert_eq!(s.planning, Some(*g2));
    }

    /// A snapshot for `inputs`, planned against the sample workspace's parts.
    fn planned(generation: u64, s: &State) -> Action {
        let ws = crate::workspace::Workspace::open(&crate::workspace::WorkspaceOptions {
            dir: Some(tempfile::tempdir().unwrap().path().into()),
            registry: None,
        })
        .unwrap();
        let ctx = ws.preview_context(false);
        let inputs = RequestInputs {
            effective: s.effective().unwrap(),
            instruction: Arc::new(s.prompt_text()),
            attachments: s.prompt.attachments.clone(),
            question: QuestionVectors::Remembered,
        };
        Action::Planned(
            generation,
            Done(Arc::new(crate::tui::snapshot::plan_snapshot(&ctx, &inputs))),
        )
    }

    #[test]
    fn an_answer_for_an_older_generation_is_dropped() {
        let mut s = state();
        let Effect::Plan {
            generation: old, ..
        } = s.replan().remove(0)
        else {
            panic!()
        };
        update(&mut s, Action::Down);
        let late = planned(old, &s);
        update(&mut s, late);
        assert!(
            s.request.is_none(),
            "the answer for the row before is dropped"
        );
        let new = s.planning.unwrap();
        let answer = planned(new, &s);
        update(&mut s, answer);
        assert_eq!(
            s.request.as_ref().unwrap().planned.model,
            s.budgets.rows[1].id
        );
        assert_eq!(s.planning, None);
    }

    #[test]
    fn a_control_or_bidi_character_pasted_into_the_box_is_shown_and_sent_as_its_escape() {
        let mut s = state();
        update(&mut s, Action::FocusPrompt);
        update(
            &mut s,
            Action::Paste("clone \u{1b}]0;PWNED\u{7} \u{202e}RTL repo".into()),
        );
        // What the box holds is what is sent: nothing in it is invisible.
        assert_eq!(
            s.prompt_text(),
            "clone \\x1b]0;PWNED\\x07 \\u{202e}RTL repo"
        );
    }

    /// Tester 22 F1: the joiners of an emoji and of Persian spelling were put in the box as
    /// `\u{200d}` and sent so; pasted or typed, they are now held and sent as written.
    #[test]
    fn joiners_typed_or_pasted_are_held_and_sent_as_written() {
        let family = "plan a family trip \u{1f469}\u{200d}\u{1f469}\u{200d}\u{1f467} to Lisbon";
        let mut s = state();
        update(&mut s, Action::FocusPrompt);
        update(&mut s, Action::Paste(family.into()));
        assert_eq!(s.prompt_text(), family);
        update(&mut s, Action::ClearPrompt);
        for c in "\u{645}\u{6cc}\u{200c}\u{62e}".chars() {
            update(
                &mut s,
                Action::PromptKey(ratatui_textarea::Input {
                    key: ratatui_textarea::Key::Char(c),
                    ..Default::default()
                }),
            );
        }
        assert_eq!(s.prompt_text(), "\u{645}\u{6cc}\u{200c}\u{62e}");
        // A bidi override typed alone goes in as its escape, as a pasted one does.
        update(
            &mut s,
            Action::PromptKey(ratatui_textarea::Input {
                key: ratatui_textarea::Key::Char('\u{202e}'),
                ..Default::default()
            }),
        );
        assert_eq!(s.prompt_text(), "\u{645}\u{6cc}\u{200c}\u{62e}\\u{202e}");
    }

    #[test]
    fn a_long_paste_is_a_chip_a_short_one_text_and_the_remove_key_takes_the_selected_chip() {
        let mut s = state();
        update(&mut s, Action::FocusPrompt);
        let e = update(&mut s, Action::Paste("summarise\nthis".into()));
        assert_eq!(s.prompt_text(), "summarise\nthis");
        assert!(matches!(
            e.as_slice(),
            [Effect::After {
                action: Action::PreviewDue(_),
                ..
            }]
        ));
        let log = "line\n".repeat(6);
        let e = update(&mut s, Action::Paste(format!("first words\n{log}")));
        assert_eq!(
            s.prompt_text(),
            "summarise\nthis",
            "the paste is not in the box"
        );
        assert_eq!(s.prompt.chip_labels, ["first words"]);
        assert_eq!(s.prompt.attachments[0].name, "paste 1");
        let [Effect::Plan { inputs, .. }] = e.as_slice() else {
            panic!("{e:?}")
        };
        assert_eq!(inputs.attachments.len(), 1);
        assert_eq!(*inputs.instruction, "summarise\nthis");
        update(&mut s, Action::Paste(format!("second\n{log}")));
        assert_eq!(s.prompt.chip, 1, "the newest chip is selected");
        update(&mut s, Action::NextAttachment);
        assert_eq!(s.prompt.chip, 0);
        let e = update(&mut s, Action::RemoveAttachment);
        assert_eq!(s.prompt.chip_labels, ["second"]);
        assert_eq!(s.prompt.attachments[0].name, "paste 2");
        assert!(matches!(e.as_slice(), [Effect::Plan { .. }]));
        // Too big a paste is refused with one line, nothing attached.
        let huge = "x\n".repeat(crate::tui::attach::ATTACH_MAX_BYTES as usize);
        assert!(update(&mut s, Action::Paste(huge)).is_empty());
        assert!(
            s.prompt
                .attach_error
                .as_deref()
                .unwrap()
                .contains("not attached")
        );
        assert_eq!(s.prompt.attachments.len(), 1);
    }

    #[test]
    fn the_attach_key_opens_a_path_line_whose_keys_are_text() {
        let mut s = state();
        update(&mut s, Action::Attach);
        assert_eq!(s.focus, Pane::Prompt);
        for c in "q.md".chars() {
            update(&mut s, Action::Char(c));
        }
        assert!(!s.quit);
        let e = update(&mut s, Action::Confirm);
        let [Effect::ReadAttachment { request, path }] = e.as_slice() else {
            panic!("{e:?}")
        };
        assert_eq!(path, "q.md");
        assert!(s.prompt.attach_path.is_none());
        let request = *request;
        update(
            &mut s,
            Action::AttachmentRead(request, Err("q.md: cannot read: No such file".into())),
        );
        assert!(s.prompt.attach_error.as_deref().unwrap().contains("q.md"));
        assert!(s.prompt.attachments.is_empty());
        // Tester 17 F6: the failed try's line stayed through clears, new text and sends.
        update(&mut s, Action::ClearPrompt);
        assert!(s.prompt.attach_error.is_none());
        s.prompt.attach_error = Some("q.md: cannot read".into());
        update(&mut s, Action::Paste("find".into()));
        assert!(s.prompt.attach_error.is_none());
        // A paste of megabytes into the path line keeps a path's length, no more.
        update(&mut s, Action::Attach);
        update(&mut s, Action::Paste("p/".repeat(1_000_000)));
        let kept = s.prompt.attach_path.as_deref().unwrap().len();
        assert_eq!(kept, crate::tui::panes::prompt::PATH_MAX_BYTES);
        // Tester 34 F4: a pasted name keeps its Tab and its right-to-left mark; a line
        // break copied with it is not part of it.
        update(&mut s, Action::Back);
        update(&mut s, Action::Attach);
        update(
            &mut s,
            Action::Paste("att/ we\"ird name\t\u{4e2d}\u{200f}.md\n".into()),
        );
        let e = update(&mut s, Action::Confirm);
        let [Effect::ReadAttachment { path, .. }] = e.as_slice() else {
            panic!("{e:?}")
        };
        assert_eq!(path, "att/ we\"ird name\t\u{4e2d}\u{200f}.md");
    }
}
