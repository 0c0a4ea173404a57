//! The Catalog pane: the catalog as the selected model receives it, recompacted live: bytes
//! and tokens before and after, the Trim steps, what was cut, and a full/compacted viewer.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};
use std::collections::HashMap;

use crate::core::request::{EntryFate, Fate};
use crate::format::thousands;
use crate::tui::action::Action;
use crate::tui::app::{Pane, State};
use crate::tui::panes::{clip, pane_block, request_title, shown, window_start};
use crate::tui::theme::Theme;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let focused = state.focus == Pane::Catalog;
    let Some(view) = state.request.as_deref().map(|r| &r.planned) else {
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
    let t = &view.compaction.trim;
    let a = &view.compaction.allowance;
    let updating = if state.planning.is_some() {
        " · updating…"
    } else {
        ""
    };
    let search = if state.catalog.search.is_empty() {
        String::new()
    } else {
        format!(" · /{}", state.catalog.search)
    };
    let title = request_title(
        "2 Catalog",
        &view.effective.model,
        row.tier,
        view.effective.tier_override.is_some(),
        &format!("{updating}{search}"),
        area.width,
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

/// The catalog text, one entry per line, narrowed by the search; only the lines on screen
/// are built.
fn draw_viewer(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let Some(view) = state.request.as_deref().map(|r| &r.planned) else {
        return;
    };
    let text = viewer_text(state);
    let search = &state.catalog.search;
    let lines = visible_lines(text, search);
    let fates: HashMap<&str, &EntryFate> = view
        .compaction
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let what = if state.full_view {
        "full catalog"
    } else {
        "as sent"
    };
    let mut header = vec![Span::styled(what, theme.accent)];
    if search.is_empty() && !state.filter_editing {
        header.push(Span::styled(
            if state.full_view {
                "  each entry's fate: sent, trim N (changed by trim steps N), ✗ planner (left out by the planner), ✂ cut (by the budget) · f toggles · / search · enter opens"
            } else {
                "  (f toggles · / search · enter opens an entry; each entry's fate in the full view)"
            },
            theme.muted,
        ));
    } else {
        let cursor = if state.filter_editing { "▏" } else { "" };
        header.push(Span::styled(
            shown(&format!("  /{search}{cursor}")),
            theme.accent,
        ));
        header.push(Span::styled(
            format!(
                " · {} of {} entries · esc clears",
                entries(lines.iter().map(|(_, l)| *l)),
                entries(text.lines())
            ),
            theme.muted,
        ));
    }
    let height = area.height.saturating_sub(1) as usize;
    let total = lines.len();
    let start = if state.focus == Pane::Catalog {
        window_start(state.catalog_scroll, height, total)
    } else {
        0
    };
    let on_screen = || lines.iter().enumerate().skip(start).take(height);
    // The fate column (full view): as wide as its widest label on screen.
    let fate_of = |line: &str| {
        entry_name(line)
            .and_then(|name| fates.get(name))
            .map(|e| &e.fate)
    };
    let fate_width = if state.full_view {
        on_screen()
            .filter_map(|(_, (_, l))| fate_of(l))
            .map(|f| fate_label(f).chars().count() + 1)
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let width = (area.width as usize).saturating_sub(5 + fate_width);
    let mut out = vec![Line::from(header)];
    if lines.is_empty() {
        out.push(Line::styled(
            shown(&format!("no entries match /{search} · esc clears")),
            theme.muted,
        ));
    }
    for (i, (n, line)) in on_screen() {
        let fate = fate_of(line).filter(|_| state.full_view);
        let selected = state.focus == Pane::Catalog && i == state.catalog_scroll;
        let style = match (selected, fate) {
            (true, _) => theme.selected,
            (false, Some(Fate::CutByBudget)) => theme.error,
            (false, Some(Fate::RemovedByPlanner | Fate::RemovedByFilter)) => theme.muted,
            _ => theme.base,
        };
        let mut spans = vec![Span::styled(format!("{:>4} ", n + 1), theme.muted)];
        if state.full_view {
            let (label, fate_style) = match fate {
                Some(f) => (fate_label(f), fate_style(f, theme)),
                None => (String::new(), theme.muted),
            };
            spans.push(Span::styled(
                format!("{label:<w$}", w = fate_width),
                fate_style,
            ));
        }
        spans.push(Span::styled(clip(line, width), style));
        out.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(out), area);
}

/// An entry's fate in the full view's column: `sent`, `trim 123` (the trim steps that
/// changed it), `✗ planner`, `✗ filter`, `✂ cut`.
pub fn fate_label(fate: &Fate) -> String {
    match fate {
        Fate::Kept { trimmed_by } if trimmed_by.is_empty() => "sent".into(),
        Fate::Kept { trimmed_by } => {
            let steps: String = trimmed_by.iter().map(|s| s.number().to_string()).collect();
            format!("trim {steps}")
        }
        Fate::RemovedByPlanner => "✗ planner".into(),
        Fate::RemovedByFilter => "✗ filter".into(),
        Fate::CutByBudget => "✂ cut".into(),
    }
}

fn fate_style(fate: &Fate, theme: &Theme) -> ratatui::style::Style {
    match fate {
        Fate::Kept { trimmed_by } if trimmed_by.is_empty() => theme.ok,
        Fate::Kept { .. } => theme.warn,
        Fate::RemovedByPlanner | Fate::RemovedByFilter => theme.muted,
        Fate::CutByBudget => theme.error,
    }
}

/// An entry's fate in words, for the entry opened in full.
pub fn fate_sentence(fate: &Fate) -> String {
    match fate {
        Fate::Kept { trimmed_by } if trimmed_by.is_empty() => "sent whole".into(),
        Fate::Kept { trimmed_by } => {
            let steps: Vec<String> = trimmed_by.iter().map(|s| s.number().to_string()).collect();
            format!("sent, trimmed by steps {}", steps.join(", "))
        }
        Fate::RemovedByPlanner => "not sent: left out by the planner".into(),
        Fate::RemovedByFilter => "not sent: left out by the two-pass filter".into(),
        Fate::CutByBudget => "not sent: cut by the budget".into(),
    }
}

/// The name (pack) or id (pipeline) at the start of an entry line.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("{\"name\":\"")
        .or_else(|| line.strip_prefix("{\"id\":\""))?;
    rest.split('"').next()
}

/// The Catalog pane's own state: its search, and the entry opened in full.
#[derive(Debug, Clone, Default)]
pub struct CatalogPane {
    /// Lines containing this (any case) are listed; empty lists every line.
    pub search: String,
    /// An entry is open in full (Enter), scrolled this far.
    pub entry_open: bool,
    pub entry_scroll: usize,
}

/// The viewer's text now: the full catalog or what is sent.
pub fn viewer_text(state: &State) -> &str {
    if state.full_view {
        &state.full_catalog
    } else {
        state
            .request
            .as_deref()
            .map_or("", |r| r.planned.compaction.text.as_str())
    }
}

/// The viewer's lines that match the search, with their line numbers.
pub fn visible_lines<'a>(text: &'a str, search: &str) -> Vec<(usize, &'a str)> {
    let needle = search.to_lowercase();
    text.lines()
        .enumerate()
        .filter(|(_, l)| needle.is_empty() || l.to_lowercase().contains(&needle))
        .collect()
}

/// Entries (not brackets) among `lines`.
fn entries<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    lines.filter(|l| entry_name(l).is_some()).count()
}

/// A key while the catalog search is being typed; `None` when it is not the search's.
pub fn search_key(state: &mut State, action: &Action) -> Option<()> {
    let search = &mut state.catalog.search;
    match action {
        Action::Char(c) => search.push(*c),
        Action::Backspace => {
            search.pop();
        }
        Action::Paste(text) => search.extend(text.chars().filter(|c| !c.is_control())),
        Action::Confirm => state.filter_editing = false,
        Action::Back => {
            state.filter_editing = false;
            search.clear();
        }
        _ => return None,
    }
    state.catalog_scroll = 0;
    Some(())
}

/// Enter on the selected line: open its entry in full (a bracket line opens nothing).
pub fn open_entry(state: &mut State) {
    let text = viewer_text(state);
    let lines = visible_lines(text, &state.catalog.search);
    let opens = lines
        .get(state.catalog_scroll)
        .is_some_and(|(_, l)| entry_name(l).is_some());
    state.catalog.entry_open = opens;
    state.catalog.entry_scroll = 0;
}

/// The open entry's name.
fn selected_entry(state: &State) -> Option<&str> {
    let lines = visible_lines(viewer_text(state), &state.catalog.search);
    let (_, line) = lines.get(state.catalog_scroll)?;
    entry_name(line)
}

/// True for what an operator does; while an entry is open these go to it.
pub fn takes(action: &Action) -> bool {
    crate::tui::panes::help::takes(action)
}

/// An operator's action while an entry is open: scroll it, or close it (esc, enter).
pub fn entry_update(state: &mut State, action: Action) {
    let page = state.page.max(1);
    let c = &mut state.catalog;
    c.entry_scroll = match action {
        Action::Back | Action::Open => {
            c.entry_open = false;
            0
        }
        Action::Up => c.entry_scroll.saturating_sub(1),
        Action::Down => c.entry_scroll + 1,
        Action::PageUp => c.entry_scroll.saturating_sub(page),
        Action::PageDown => c.entry_scroll + page,
        Action::Top => 0,
        Action::Bottom => usize::MAX / 2,
        _ => c.entry_scroll,
    };
}

/// The line of `text` holding entry `name`, as pretty JSON (or as it is, if it is not JSON).
fn entry_json(text: &str, name: &str) -> Option<String> {
    let line = text.lines().find(|l| entry_name(l) == Some(name))?;
    let line = line.trim().trim_end_matches(',');
    Some(
        serde_json::from_str::<serde_json::Value>(line)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|_| line.to_string()),
    )
}

/// The open entry over the body: its fate, then as sent, then the full original.
pub fn draw_entry(frame: &mut Frame, body: Rect, state: &State, theme: &Theme) {
    let Some(name) = selected_entry(state) else {
        return;
    };
    let view = state.request.as_deref().map(|r| &r.planned.compaction);
    let sent = view.and_then(|v| entry_json(&v.text, name));
    let full = entry_json(&state.full_catalog, name);
    let fate = view
        .and_then(|v| v.entries.iter().find(|e| e.name == name))
        .map_or_else(
            || "not in the catalog the request was planned from".into(),
            |e| fate_sentence(&e.fate),
        );
    let mut lines = vec![
        Line::styled(shown(name), theme.accent),
        Line::styled(fate, if sent.is_some() { theme.ok } else { theme.warn }),
        Line::raw(""),
        Line::styled("as sent", theme.accent),
    ];
    match &sent {
        Some(json) => lines.extend(json.lines().map(|l| Line::raw(shown(l)))),
        None => lines.push(Line::styled("(not in the request)", theme.muted)),
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("full original", theme.accent));
    if let Some(json) = &full {
        lines.extend(json.lines().map(|l| Line::raw(shown(l))));
    }
    let height = body.height.saturating_sub(2) as usize;
    let scroll = state
        .catalog
        .entry_scroll
        .min(lines.len().saturating_sub(height));
    let title = format!(
        " {} · {}–{} of {} lines · j/k scroll · esc closes ",
        name,
        scroll + 1,
        (scroll + height).min(lines.len()),
        lines.len()
    );
    frame.render_widget(ratatui::widgets::Clear, body);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .scroll((scroll as u16, 0))
            .block(pane_block(title, true, theme)),
        body,
    );
}
