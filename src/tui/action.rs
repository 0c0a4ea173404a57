//! Everything that can happen in the console, as one enum: the keymap binds its serde names,
//! the help screen lists them, tests send them, and background work reports back through it.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::core::request::Attachment;
use crate::store::view::HistoryAnswer;
use crate::tui::panes::history::ReplayResult;
use crate::tui::semantic::SemanticStatus;
use crate::tui::send::SendOutcome;
use crate::tui::snapshot::RequestSnapshot;
use crate::tui::unstored::StoredAgain;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    ToggleHelp,
    /// Close the topmost thing: help, then the filter. Help is modal: while it is open,
    /// only this, `toggle_help`, the movement keys (which scroll it) and ctrl+c reach it.
    Back,
    FocusNext,
    FocusPrev,
    FocusBudgets,
    FocusCatalog,
    /// Type into the Prompt pane.
    FocusPrompt,
    FocusHistory,
    /// History: the groups list.
    Left,
    /// History: the plans list.
    Right,
    /// History: narrow to the selected group, or open the selected plan in full.
    Open,
    /// History filters: cycle through the values, then back to all.
    CycleOutcome,
    CycleDrift,
    CycleCaller,
    CycleModel,
    /// History: filter by where plans came from (native, otel, litellm, sent; cycles).
    CycleSource,
    ClearFilters,
    /// History: the Gaps view (plans against a baseline's steps) in place of the models.
    ToggleGaps,
    /// History: replay the selected plan (pick offline or a model; esc cancels).
    Replay,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Budgets: next sort column. Catalog: nothing.
    SortNext,
    SortReverse,
    /// Budgets: start typing a filter.
    Filter,
    /// Cycle the tier override: auto → A → B → C → auto.
    CycleTier,
    /// Catalog: full catalog vs what the model receives.
    ToggleFullView,
    /// Prompt: empty the text box (a ctrl/alt key also works while typing in it).
    ClearPrompt,
    /// Prompt: send the request the Preview shows to the selected model and the marked ones.
    Send,
    /// Prompt: A/B on or off (each model also gets the whole catalog, `full`).
    ToggleAb,
    /// Prompt: select the next send result.
    NextSent,
    /// Prompt: select the previous send result.
    PrevSent,
    /// Prompt: open the selected send result's stored plan in History.
    OpenSent,
    /// Budgets: mark or unmark the selected model for sending.
    MarkModel,
    /// Attach a file to the request: opens a path line under the prompt box.
    Attach,
    /// Prompt: remove the selected attachment chip.
    RemoveAttachment,
    /// Prompt: select the next attachment chip.
    NextAttachment,
    /// Store again the answers the store could not take (quitting tries too).
    StoreAgain,
    /// A mouse click on row `n` of the focused list (0 = the first row of the list).
    #[serde(skip)]
    SelectRow(u64),
    /// A character typed while the filter is being edited.
    #[serde(skip)]
    Char(char),
    #[serde(skip)]
    Backspace,
    #[serde(skip)]
    Confirm,
    /// Text pasted with bracketed paste: never interpreted as keys.
    #[serde(skip)]
    Paste(String),
    #[serde(skip)]
    Resize,
    /// The request was planned in the background (generation, snapshot).
    #[serde(skip)]
    Planned(u64, Done<RequestSnapshot>),
    /// An attached file was read (or could not be, with the one-line reason).
    #[serde(skip)]
    AttachmentRead(u64, Result<Done<Attachment>, String>),
    /// A key typed into the Prompt pane's text box.
    #[serde(skip)]
    PromptKey(ratatui_textarea::Input),
    /// The prompt has been still long enough: plan the request for this version of it.
    #[serde(skip)]
    PreviewDue(u64),
    /// The instruction has been still long enough for the semantic layer to embed it: plan
    /// the request again, embedding this version of it.
    #[serde(skip)]
    QuestionSettled(u64),
    /// A History query finished in the background (or failed, with the message), and
    /// whether its open of the store grouped the plans by today's word rules.
    #[serde(skip)]
    HistoryAnswered(u64, Result<Done<HistoryAnswer>, String>, bool),
    /// A running replay's progress line.
    #[serde(skip)]
    ReplayProgress(u64, String),
    /// A replay finished (or could not run, with the message).
    #[serde(skip)]
    Replayed(u64, Result<Done<ReplayResult>, String>),
    /// A running send's progress: a call's line by its `model [arm]`, or that only storing
    /// is left.
    #[serde(skip)]
    SendProgress(u64, crate::tui::send::SendNews),
    /// A send finished (or could not run, with the message).
    #[serde(skip)]
    Sent(u64, Result<Done<SendOutcome>, String>),
    /// The semantic layer's state changed (embedding, ready, failed).
    #[serde(skip)]
    SemanticLayer(SemanticStatus),
    /// A try to store kept answers again came back (or could not run, with the message).
    #[serde(skip)]
    StoredAgain(u64, Result<Done<StoredAgain>, String>),
}

/// A finished piece of background work. Equal only to itself: results are compared by
/// identity, never by content.
#[derive(Debug, Clone)]
pub struct Done<T>(pub Arc<T>);

impl<T> PartialEq for Done<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Action {
    /// The move a movement key makes in a scrolled view (`None` for any other action).
    pub fn movement(&self) -> Option<crate::tui::panes::scroll::Move> {
        use crate::tui::panes::scroll::Move;
        Some(match self {
            Action::Up => Move::Up,
            Action::Down => Move::Down,
            Action::PageUp => Move::PageUp,
            Action::PageDown => Move::PageDown,
            Action::Top => Move::Top,
            Action::Bottom => Move::Bottom,
            _ => return None,
        })
    }

    /// What the help screen says an action does.
    pub fn describe(&self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::ToggleHelp => "show or hide this help",
            Action::Back => "close help / clear the filter",
            Action::FocusNext => "next pane",
            Action::FocusPrev => "previous pane",
            Action::FocusBudgets => "go to Budgets",
            Action::FocusCatalog => "go to Catalog",
            Action::FocusPrompt => "go to Prompt (type or paste; esc leaves)",
            Action::FocusHistory => "go to History",
            Action::Left => "history: groups list",
            Action::Right => "history: plans list",
            Action::Open => "open: a catalog entry in full; history: the group / the plan",
            Action::CycleOutcome => "history: filter by outcome (cycles)",
            Action::CycleDrift => "history: filter by drift (cycles)",
            Action::CycleCaller => "history: filter by caller (cycles)",
            Action::CycleModel => "history: filter by model (cycles)",
            Action::CycleSource => "history: cycle source filter: native, otel, litellm, sent",
            Action::ToggleGaps => "history: gaps against the baseline / model outcomes",
            Action::ClearFilters => "history: clear every filter",
            Action::Replay => "history: replay the plan (offline or live; esc cancels)",
            Action::Up => "move up",
            Action::Down => "move down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "first row",
            Action::Bottom => "last row",
            Action::SortNext => "sort budgets by the next column",
            Action::SortReverse => "reverse the sort",
            Action::Filter => "search: Budgets (id/tier/layer), Catalog, History intents",
            Action::CycleTier => "tier override: auto → A → B → C",
            Action::ToggleFullView => "catalog: full / as sent",
            Action::ClearPrompt => "prompt: clear the text box",
            Action::Send => "prompt: send to the selected and marked models (esc cancels)",
            Action::ToggleAb => "prompt: cycle A/B arms beside compacted (off, full … all)",
            Action::NextSent => "prompt: select the next send result",
            Action::PrevSent => "prompt: select the previous send result",
            Action::OpenSent => "prompt: open the selected result's plan in History",
            Action::MarkModel => "budgets: mark/unmark the model for sending",
            Action::Attach => "attach a file to the request (type its path, enter)",
            Action::RemoveAttachment => "prompt: remove the selected attachment",
            Action::NextAttachment => "prompt: select the next attachment",
            Action::StoreAgain => "store again the answers the store could not take",
            Action::Char(_)
            | Action::SelectRow(_)
            | Action::Backspace
            | Action::Confirm
            | Action::Paste(_)
            | Action::Resize
            | Action::Planned(..)
            | Action::AttachmentRead(..)
            | Action::PromptKey(_)
            | Action::PreviewDue(_)
            | Action::QuestionSettled(_)
            | Action::HistoryAnswered(..)
            | Action::ReplayProgress(..)
            | Action::Replayed(..)
            | Action::SendProgress(..)
            | Action::Sent(..)
            | Action::SemanticLayer(_)
            | Action::StoredAgain(..) => "",
        }
    }
}
