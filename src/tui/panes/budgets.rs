//! The Budgets pane: every model row, sortable and filterable; the selection drives the rest.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};

use crate::format::thousands;
use crate::tui::app::{Pane, SortColumn, State};
use crate::tui::panes::{pane_block, shown, window_start};
use crate::tui::theme::Theme;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let focused = state.focus == Pane::Budgets;
    let sort = match state.sort {
        SortColumn::Table => String::new(),
        s => format!(
            " · by {}{}",
            s.label(),
            if state.sort_desc { " ↓" } else { " ↑" }
        ),
    };
    let title = format!(
        " 1 Budgets · {}/{} rows{sort} ",
        state.visible.len(),
        state.rows.len()
    );
    let block = pane_block(title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let show_filter = state.filter_editing || !state.filter.is_empty();
    let [table_area, filter_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(u16::from(show_filter)),
    ])
    .areas(inner);

    // Only the rows that fit are built: a registry can add thousands.
    let height = table_area.height.saturating_sub(1) as usize;
    let start = window_start(state.selected, height, state.visible.len());
    let rows: Vec<Row> = state.visible[start..(start + height).min(state.visible.len())]
        .iter()
        .map(|&i| {
            let r = &state.rows[i];
            let style = if r.lint.is_empty() {
                theme.base
            } else {
                theme.warn
            };
            Row::new(vec![
                Cell::from(shown(&r.id)),
                Cell::from(format!(
                    "{}{}",
                    r.tier,
                    if r.tier_derived { "*" } else { "" }
                )),
                Cell::from(thousands(r.input_tokens)),
                Cell::from(thousands(r.output_tokens)),
                Cell::from(
                    r.max_catalog_bytes
                        .map(thousands)
                        .unwrap_or_else(|| "—".into()),
                ),
                Cell::from(r.flags()),
                Cell::from(r.layer.to_string()),
            ])
            .style(style)
        })
        .collect();
    let header = Row::new(["model", "tier", "input", "output", "cat B", "RJPF", "layer"])
        .style(theme.accent);
    let widths = [
        Constraint::Fill(1),
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(4),
        Constraint::Length(8),
    ];
    let table = Table::new(rows, widths)
        .column_spacing(1)
        .header(header)
        .row_highlight_style(theme.selected)
        .highlight_symbol("▶ ");
    let mut table_state = TableState::default();
    if !state.visible.is_empty() {
        table_state.select(Some(state.selected - start));
    }
    frame.render_stateful_widget(table, table_area, &mut table_state);
    if show_filter {
        let cursor = if state.filter_editing { "▏" } else { "" };
        let line = Line::from(vec![
            Span::styled("filter ", theme.muted),
            Span::styled(shown(&format!("/{}{cursor}", state.filter)), theme.accent),
            Span::styled(
                if state.filter_editing {
                    "  enter keep · esc clear"
                } else {
                    ""
                },
                theme.muted,
            ),
        ]);
        frame.render_widget(Paragraph::new(line), filter_area);
    }
}
