//! One file per pane; each draws from a borrowed state snapshot and never blocks.

pub mod budgets;
pub mod catalog;
pub mod history;
pub mod prompt;
pub mod replay;

use ratatui::widgets::{Block, BorderType, Borders};

use crate::tui::theme::Theme;

/// A pane's frame: accent border when focused.
pub fn pane_block<'a>(title: String, focused: bool, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused { theme.accent } else { theme.muted })
        .title(title)
        .title_style(if focused { theme.accent } else { theme.base })
        .style(theme.base)
}

/// The first visible index so that `selected` is on screen in a window of `height` rows.
pub fn window_start(selected: usize, height: usize, current_len: usize) -> usize {
    if height == 0 || current_len <= height {
        return 0;
    }
    let max_start = current_len - height;
    selected.saturating_sub(height / 2).min(max_start)
}

pub use crate::format::clip;
