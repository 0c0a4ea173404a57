//! The whole screen from a state snapshot: header, panes, status line, help overlay.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::core::terminal_text::needs_escape;
use crate::tui::app::{Pane, State};
use crate::tui::keymap::Keymap;
use crate::tui::panes::prompt::PromptInputs;
use crate::tui::panes::{self, shown};
use crate::tui::send::SentKeys;
use crate::tui::theme::Theme;

/// The keys the Sent table's heading names, from the live keymap as the status line's
/// (tester 50 F10).
pub fn sent_keys(keymap: &Keymap) -> SentKeys {
    use crate::tui::action::Action;
    SentKeys {
        next: keymap.chord_label(&Action::NextSent),
        prev: keymap.chord_label(&Action::PrevSent),
        open: keymap.chord_label(&Action::OpenSent),
    }
}

pub use crate::tui::layout::{Areas, MIN_HEIGHT, MIN_WIDTH, Region, areas};

/// The frame for `state`. Whatever the panes drew, no cell leaves here holding a control
/// character or a bidi override.
pub fn draw(frame: &mut Frame, state: &State, theme: &Theme, keymap: &Keymap) {
    draw_screen(frame, state, theme, keymap);
    neutralise(frame.buffer_mut());
}

/// The last word on what reaches the terminal: a cell whose symbol still holds a control
/// character or a bidi override (outside text a pane drew without `panes::shown`; ratatui
/// drops a lone control character but keeps a bidi override attached to the character
/// before it) becomes `�`, visibly.
fn neutralise(buffer: &mut Buffer) {
    for cell in &mut buffer.content {
        if cell
            .symbol()
            .contains(|c: char| c.is_control() || needs_escape(c))
        {
            cell.set_symbol("\u{fffd}");
        }
    }
}

fn draw_screen(frame: &mut Frame, state: &State, theme: &Theme, keymap: &Keymap) {
    let area = frame.area();
    frame.render_widget(Paragraph::new("").style(theme.base), area);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "ctxconsole needs at least {MIN_WIDTH}×{MIN_HEIGHT}; this terminal is {}×{}. Enlarge it, or press {} to quit.",
            area.width,
            area.height,
            keymap
                .primary_label(&crate::tui::action::Action::Quit)
                .unwrap_or_default()
        );
        frame.render_widget(
            Paragraph::new(msg)
                .style(theme.warn)
                .wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let a = areas(area, state.focus);
    draw_header(frame, a.header, state, theme);
    for (region, rect) in &a.panes {
        match region {
            Region::Budgets => panes::budgets::draw(
                frame,
                *rect,
                &state.budgets,
                state.focus == Pane::Budgets,
                state.typing_search_in(Pane::Budgets),
                theme,
            ),
            Region::Catalog => {
                panes::catalog::draw(frame, *rect, &state.catalog, &state.catalog_inputs(), theme)
            }
            Region::PromptInput => panes::prompt::draw_input(
                frame,
                *rect,
                &state.prompt,
                &state.prompt_inputs(),
                theme,
            ),
            Region::Preview => panes::prompt::draw_preview(
                frame,
                *rect,
                &state.prompt,
                &PromptInputs {
                    sent_keys: &sent_keys(keymap),
                    ..state.prompt_inputs()
                },
                theme,
            ),
            Region::History => panes::history::draw(
                frame,
                *rect,
                &state.history,
                state.focus == Pane::History,
                theme,
            ),
        }
    }
    let (body, status) = (a.body, a.status);
    panes::status::draw_status(frame, status, state, keymap, theme);
    if state.catalog.entry_open {
        panes::catalog::draw_entry(frame, body, &state.catalog, &state.catalog_inputs(), theme);
    }
    if state.help.open {
        let status = state.status_entries();
        panes::help::draw(frame, body, &state.help, &status, theme);
    }
}

fn draw_header(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let mut spans = vec![Span::styled(" ctxconsole ", theme.selected), Span::raw(" ")];
    for (i, pane) in Pane::ALL.iter().enumerate() {
        let style = if *pane == state.focus {
            theme.accent
        } else {
            theme.muted
        };
        spans.push(Span::styled(
            format!("[{} {}] ", i + 1, pane.title()),
            style,
        ));
    }
    let tier = match state.tier_override {
        Some(t) => format!("tier override {t}"),
        None => "tier auto".into(),
    };
    spans.push(Span::styled(
        shown(&format!(
            " {tier} · catalog: {} ({})",
            state.catalog_origin.name, state.catalog_origin.format
        )),
        theme.muted,
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_cell_leaves_a_frame_holding_a_control_or_a_bidi_override() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 8, 1));
        // What ratatui lets through: a span appends a zero-width bidi override to the cell
        // before it; and what a widget setting a symbol directly could leave.
        ratatui::widgets::Widget::render(Line::raw("ab\u{202e}cd"), buffer.area, &mut buffer);
        buffer[(5, 0)].set_symbol("\x1b");
        buffer[(6, 0)].set_symbol("\u{9b}");
        assert_eq!(buffer[(1, 0)].symbol(), "b\u{202e}");
        neutralise(&mut buffer);
        let symbols: Vec<&str> = buffer.content.iter().map(|c| c.symbol()).collect();
        assert_eq!(
            symbols,
            ["a", "\u{fffd}", "c", "d", " ", "\u{fffd}", "\u{fffd}", " "]
        );
    }
}
