//! One file per pane; each draws from a borrowed state snapshot and never blocks.

pub mod budgets;
pub mod catalog;
pub mod chart;
pub mod help;
pub mod history;
pub mod mouse;
pub mod prompt;
pub mod scroll;
pub mod status;

use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders};

use crate::core::terminal_text::{for_terminal, for_terminal_line};
use crate::tui::theme::Theme;

/// The console's panes, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Budgets,
    Catalog,
    Prompt,
    History,
}

impl Pane {
    pub const ALL: [Pane; 4] = [Pane::Budgets, Pane::Catalog, Pane::Prompt, Pane::History];

    pub fn title(self) -> &'static str {
        match self {
            Pane::Budgets => "Budgets",
            Pane::Catalog => "Catalog",
            Pane::Prompt => "Prompt",
            Pane::History => "History",
        }
    }
}

/// Outside text (an intent, a tool or model name, a server's answer, an error quoting a file)
/// as a pane may draw it on one line: controls and bidi overrides shown as `\x1b`, `\u{202e}`…
/// (ratatui drops a lone control character silently and lets a bidi override through
/// attached to the character before it).
pub fn shown(text: &str) -> String {
    for_terminal_line(text).into_owned()
}

/// As [`shown`], keeping newlines: for a paragraph that wraps.
pub fn shown_text(text: &str) -> String {
    for_terminal(text).into_owned()
}

/// [`shown`], cut to `width` characters ([`one_line`](crate::core::terminal_text::one_line),
/// as the command line's headers cut outside text).
pub fn clip(text: &str, width: usize) -> String {
    crate::core::terminal_text::one_line(text, width)
}

/// [`clip`], then padded with spaces to `width` cells a terminal shows (a CJK character is
/// two, a combining mark none), so the next column starts at one place on every row.
pub fn clip_padded(text: &str, width: usize) -> String {
    crate::core::text::pad_to(&clip(text, width), width)
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word is cut
/// into pieces).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let gap = usize::from(used > 0);
            if used + gap + word.len() <= width {
                if gap == 1 {
                    current.push(' ');
                }
                current.extend(word.iter());
                used += gap + word.len();
                break;
            }
            if used == 0 {
                // A word longer than the line: its first `width` characters, then the rest.
                let rest = word.split_off(width);
                current.extend(word.iter());
                word = rest;
            }
            lines.push(std::mem::take(&mut current));
            used = 0;
        }
    }
    lines.push(current);
    lines
}

/// An error or a refusal as a pane shows it: the whole text, [`shown`], wrapped at `width`
/// (see [`wrap`]), every line in `style`. Its end names the file and why, so it is never cut
/// at the pane's edge.
pub fn wrapped<'a>(text: &str, width: usize, style: Style) -> Vec<Line<'a>> {
    wrap(&shown(text), width)
        .into_iter()
        .map(|l| Line::styled(l, style))
        .collect()
}

/// A pane title naming the model and tier a request was planned for:
/// ` 2 Catalog · openrouter/openrouter/free · tier C (overridden) · updating… `. The model id
/// gives way (elided with `…`) before anything else does, so the tier always shows.
pub fn request_title(
    label: &str,
    model: &str,
    tier: crate::core::budget::Tier,
    overridden: bool,
    rest: &str,
    width: u16,
) -> String {
    let tail = format!(
        " · tier {tier}{}{rest} ",
        if overridden { " (overridden)" } else { "" }
    );
    let head = format!(" {label} · ");
    // The fallback row's id says nothing on its own.
    let model = if model == "*" { "fallback *" } else { model };
    let room = (width as usize)
        .saturating_sub(2 + head.chars().count() + tail.chars().count())
        .max(8);
    format!("{head}{}{tail}", crate::format::elide(&shown(model), room))
}

/// A pane's frame: accent border when focused. Titles carry ids and filter values, so they
/// are [`shown`].
pub fn pane_block<'a>(title: String, focused: bool, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused { theme.accent } else { theme.muted })
        .title(shown(&title))
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

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_a_word_longer_than_the_line() {
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("send: a b", 6), ["send:", "a b"]);
        assert_eq!(
            wrap("x /a/long/path: why", 8),
            ["x", "/a/long/", "path:", "why"]
        );
        // Every character is kept, in order: nothing is cut off the end.
        let text = "the history store is read-only (the file or its directory cannot be written)";
        assert_eq!(wrap(text, 13).join(" "), text);
        let lines = wrapped("a\u{1b}b", 80, Style::default());
        assert_eq!(lines[0].to_string(), "a\\x1bb");
    }
}
