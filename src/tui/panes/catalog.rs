//! The Catalog pane: the catalog as the selected model receives it, recompacted live: bytes
//! and tokens before and after, the Trim steps, what was cut, and a full/compacted viewer.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};
use std::collections::HashSet;

use crate::format::thousands;
use crate::tui::app::{Pane, State};
use crate::tui::panes::{clip, pane_block, window_start};
use crate::tui::theme::Theme;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let focused = state.focus == Pane::Catalog;
    let Some(view) = state.compaction.as_deref() else {
        let block = pane_block(" 2 Catalog ".into(), focused, theme);
        frame.render_widget(
            Paragraph::new("compacting…")
                .style(theme.muted)
                .block(block),
            area,
        );
        return;
    };
    let row = &view.effective.row;
    let t = &view.compacted.trim;
    let a = &view.allowance;
    let updating = if state.pending.is_some() {
        " · updating…"
    } else {
        ""
    };
    let tier_note = if view.effective.tier_override.is_some() {
        " override"
    } else {
        ""
    };
    let title = format!(
        " 2 Catalog · {} · tier {}{tier_note}{updating} ",
        view.effective.model, row.tier
    );
    let block = pane_block(title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let steps_height = if t.dropped.is_empty() {
        1
    } else {
        t.dropped.len() as u16 + 1
    };
    let [summary_area, gauge_area, steps_area, cut_area, viewer_area] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(steps_height),
        Constraint::Length(1),
        Constraint::Min(1),
    ])
    .areas(inner);

    let est = if t.exact_tokens { "" } else { " est." };
    let fit_style = if t.fits { theme.ok } else { theme.error };
    let summary = vec![
        Line::from(vec![
            Span::styled("as sent ", theme.muted),
            Span::styled(
                format!(
                    "{} B · {} tok{est}",
                    thousands(t.after_bytes),
                    thousands(t.after_tokens)
                ),
                fit_style,
            ),
            Span::styled("   full ", theme.muted),
            Span::raw(format!(
                "{} B · {} tok{est}",
                thousands(t.before_bytes),
                thousands(t.before_tokens)
            )),
        ]),
        Line::from(vec![
            Span::styled("allowance ", theme.muted),
            Span::raw(format!(
                "{} tok = {} − {} system − {} prompt − {} framing − {} margin",
                thousands(a.tokens),
                thousands(a.input_tokens),
                a.system_prompt_tokens,
                thousands(a.prompt_tokens),
                a.framing_tokens,
                thousands(a.margin_tokens)
            )),
        ]),
        Line::from(vec![
            Span::styled("byte cap ", theme.muted),
            Span::raw(
                a.bytes
                    .map(|b| format!("{} B", thousands(b)))
                    .unwrap_or_else(|| "none".into()),
            ),
            Span::styled("   kept ", theme.muted),
            Span::raw(format!("{}/{} entries", t.kept, t.total)),
            Span::styled("   tokenizer ", theme.muted),
            Span::raw(row.tokenizer.name()),
        ]),
    ];
    frame.render_widget(Paragraph::new(summary), summary_area);

    let ratio = if t.before_bytes == 0 {
        1.0
    } else {
        t.after_bytes as f64 / t.before_bytes as f64
    };
    let gauge = Gauge::default()
        .ratio(ratio.clamp(0.0, 1.0))
        .label(format!("{:.0}% of the full catalog", ratio * 100.0))
        .gauge_style(fit_style);
    frame.render_widget(gauge, gauge_area);

    let mut steps: Vec<Line> = Vec::new();
    if t.dropped.is_empty() {
        steps.push(Line::styled("untouched: the full catalog fits", theme.ok));
    } else {
        steps.push(Line::styled(
            "trim steps applied (bytes saved)",
            theme.accent,
        ));
        for d in &t.dropped {
            steps.push(Line::from(vec![
                Span::styled(format!(" {} ", d.step.number()), theme.accent),
                Span::raw(format!("{:<44}", d.step.explain())),
                Span::styled(format!("−{} B", thousands(d.saved_bytes)), theme.ok),
            ]));
        }
    }
    frame.render_widget(Paragraph::new(steps), steps_area);

    let cut_line = if t.cut.is_empty() {
        Line::styled("no entries cut", theme.muted)
    } else {
        let names: Vec<&str> = t.cut.iter().map(|c| c.name.as_str()).collect();
        Line::from(vec![
            Span::styled(
                format!("cut {} ({}): ", t.cut.len(), t.cut_policy),
                theme.warn,
            ),
            Span::raw(clip(&names.join(", "), cut_area.width as usize)),
        ])
    };
    frame.render_widget(Paragraph::new(cut_line), cut_area);

    draw_viewer(frame, viewer_area, state, theme);
}

/// The catalog text, one entry per line; only the lines on screen are built.
fn draw_viewer(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let Some(view) = state.compaction.as_deref() else {
        return;
    };
    let text: &str = if state.full_view {
        &state.full_catalog
    } else {
        &view.compacted.text
    };
    let cut: HashSet<&str> = view
        .compacted
        .trim
        .cut
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let header = Line::from(vec![
        Span::styled(
            if state.full_view {
                "full catalog"
            } else {
                "as sent"
            },
            theme.accent,
        ),
        Span::styled(
            "  (f toggles; cut entries marked ✂ in the full view)",
            theme.muted,
        ),
    ]);
    let height = area.height.saturating_sub(1) as usize;
    let total = state.catalog_lines();
    let start = if state.focus == Pane::Catalog {
        window_start(state.catalog_scroll, height, total)
    } else {
        0
    };
    let width = area.width.saturating_sub(6) as usize;
    let mut lines = vec![header];
    for (n, line) in text.lines().enumerate().skip(start).take(height) {
        let is_cut = state.full_view && entry_name(line).is_some_and(|name| cut.contains(name));
        let selected = state.focus == Pane::Catalog && n == state.catalog_scroll;
        let style = match (selected, is_cut) {
            (true, _) => theme.selected,
            (false, true) => theme.error,
            _ => theme.base,
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!("{:>4}{}", n + 1, if is_cut { "✂" } else { " " }),
                theme.muted,
            ),
            Span::styled(clip(line, width), style),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// The name (pack) or id (pipeline) at the start of an entry line.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("{\"name\":\"")
        .or_else(|| line.strip_prefix("{\"id\":\""))?;
    rest.split('"').next()
}
