//! The mouse: a click focuses the pane under it and picks the row under it; the wheel
//! scrolls the pane under it (three rows a notch). Clicks become the same actions keys
//! do, so a click and a key never disagree. While help is open the wheel scrolls it and
//! clicks do nothing.

use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::tui::action::Action;
use crate::tui::app::{Pane, State};
use crate::tui::panes::history::HistoryList;
use crate::tui::panes::{budgets, history};
use crate::tui::ui::{MIN_HEIGHT, MIN_WIDTH, Region, areas};

/// Rows one wheel notch moves.
pub const WHEEL_ROWS: usize = 3;

/// The actions a mouse event on a screen of `screen` stands for.
pub fn actions(state: &State, screen: Rect, m: &MouseEvent) -> Vec<Action> {
    let step = match m.kind {
        MouseEventKind::ScrollDown => Some(Action::Down),
        MouseEventKind::ScrollUp => Some(Action::Up),
        MouseEventKind::Down(MouseButton::Left) => None,
        _ => return Vec::new(),
    };
    if state.help.open {
        return step.map(|s| vec![s; WHEEL_ROWS]).unwrap_or_default();
    }
    if screen.width < MIN_WIDTH || screen.height < MIN_HEIGHT {
        return Vec::new();
    }
    let at = Position::new(m.column, m.row);
    let Some((region, rect)) = areas(screen, state.focus)
        .panes
        .into_iter()
        .find(|(_, r)| r.contains(at))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let list = match region {
        Region::Budgets => {
            out.push(Action::FocusBudgets);
            None
        }
        Region::Catalog => {
            out.push(Action::FocusCatalog);
            None
        }
        Region::PromptInput | Region::Preview => {
            out.push(Action::FocusPrompt);
            None
        }
        Region::History => history_list_at(state, rect, at),
    };
    if let Some((list, _)) = list {
        out.push(match list {
            HistoryList::Groups => Action::Left,
            HistoryList::Plans => Action::Right,
        });
    }
    if let Some(step) = step {
        out.extend(std::iter::repeat_n(step, WHEEL_ROWS));
        return out;
    }
    let row = match (region, list) {
        (Region::Budgets, _) if state.focus != Pane::Prompt => budgets::row_at(
            rect,
            &state.budgets,
            state.typing_search_in(Pane::Budgets),
            at.y,
        )
        .map(|i| i as u64),
        (Region::History, Some((list, area))) => {
            let h = &state.history;
            let position = match list {
                HistoryList::Groups => (h.group_selected, h.groups.as_ref().map_or(0, |p| p.total)),
                HistoryList::Plans => (h.plan_selected, h.plans.as_ref().map_or(0, |p| p.total)),
            };
            history::row_at(area, position, at.y)
        }
        _ => None,
    };
    out.extend(row.map(Action::SelectRow));
    out
}

/// The History list (and its area) under `at`, when the lists are showing.
fn history_list_at(state: &State, pane: Rect, at: Position) -> Option<(HistoryList, Rect)> {
    let h = &state.history;
    if h.expanded || h.error.is_some() || h.replay.is_some() {
        return None;
    }
    let [groups, plans, ..] = history::areas(pane, h);
    if groups.contains(at) {
        Some((HistoryList::Groups, groups))
    } else if plans.contains(at) {
        Some((HistoryList::Plans, plans))
    } else {
        None
    }
}
