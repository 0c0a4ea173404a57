//! Where everything goes on the screen, for the pane in focus: what drawing, the mouse and
//! the scrolled views' extents all read. It takes the focus, not the console's state, so the
//! state can ask it for its views' sizes without the two importing each other.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::panes::Pane;

/// The smallest screen the console draws; below it, a line asking for more room.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 20;

/// What a part of the screen shows: drawing and the mouse both read [`areas`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Budgets,
    Catalog,
    PromptInput,
    Preview,
    History,
}

/// Where everything goes on a screen of `area` (at least [`MIN_WIDTH`]×[`MIN_HEIGHT`]).
pub struct Areas {
    pub header: Rect,
    pub body: Rect,
    pub status: Rect,
    pub panes: Vec<(Region, Rect)>,
}

pub fn areas(area: Rect, focus: Pane) -> Areas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let panes = if focus == Pane::History {
        vec![(Region::History, body)]
    } else if focus == Pane::Prompt {
        // The text box above the catalog it shapes; the live preview beside both.
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                .areas(body);
        let [input, catalog] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(left);
        vec![
            (Region::PromptInput, input),
            (Region::Catalog, catalog),
            (Region::Preview, right),
        ]
    } else {
        // Budgets on the left drives the pane on the right; narrow terminals give Budgets
        // the larger half, so a model id stays readable.
        let budgets = if area.width < 120 { 55 } else { 47 };
        let [left, right] = Layout::horizontal([
            Constraint::Percentage(budgets),
            Constraint::Percentage(100 - budgets),
        ])
        .areas(body);
        vec![(Region::Budgets, left), (Region::Catalog, right)]
    };
    Areas {
        header,
        body,
        status,
        panes,
    }
}
