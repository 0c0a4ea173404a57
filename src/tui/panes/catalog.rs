//! The Catalog pane: the catalog as the selected model receives it, read off the one planned
//! request: bytes and tokens before and after, the Trim steps, what was cut, and a
//! full/as-sent viewer with each entry's fate. The pane owns its state (view, scroll,
//! search, the entry open in full), its handling of actions and its draw; what it reads
//! besides comes in as [`CatalogInputs`].

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};
use std::borrow::Cow;
use std::collections::HashMap;

use crate::core::request::{EntryFate, Fate};
use crate::format::thousands;
use crate::tui::action::Action;
use crate::tui::panes::scroll::{Extent, scrolled, window, wrap_lines};
use crate::tui::panes::{clip, pane_block, request_title, shown, window_start};
use crate::tui::snapshot::RequestSnapshot;
use crate::tui::theme::Theme;

/// What the Catalog pane reads besides its own state.
#[derive(Clone, Copy)]
pub struct CatalogInputs<'a> {
    /// The one planned request (none until the first plan comes back).
    pub request: Option<&'a RequestSnapshot>,
    /// A newer request is being planned.
    pub planning: bool,
    /// Full catalog text, one entry per line, for the full view.
    pub full_catalog: &'a str,
    /// The form the workspace's catalog file was read from (`routing guide`, `OpenAI
    /// tools`, …), when known.
    pub catalog_format: Option<&'a str>,
    pub focused: bool,
    /// A search is being typed.
    pub searching: bool,
}

pub fn draw(frame: &mut Frame, area: Rect, pane: &CatalogPane, inp: &CatalogInputs, theme: &Theme) {
    let focused = inp.focused;
    let Some(view) = inp.request.map(|r| &r.planned) else {
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
    let updating = if inp.planning { " · updating…" } else { "" };
    let search = if pane.search.is_empty() {
        String::new()
    } else {
        format!(" · /{}", pane.search)
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
    // Tokens as the model receives the catalog, header line included, and the allowance in
    // the same terms: the figures `preview` and `compact` print (`catalog_tokens`).
    let ct = view.catalog_tokens();
    let sent_tokens = if view.request.catalog_part().is_some() {
        thousands(ct.sent)
    } else {
        "—".to_string()
    };
    let summary = vec![
        Line::from(vec![
            Span::styled("as sent ", theme.muted),
            Span::styled(
                format!("{} B · {sent_tokens} tok{est}", thousands(t.after_bytes)),
                fit_style,
            ),
            Span::styled("   full ", theme.muted),
            Span::raw(format!(
                "{} B · {} tok{est}",
                thousands(t.before_bytes),
                thousands(ct.full)
            )),
        ]),
        Line::from(vec![
            Span::styled("allowance ", theme.muted),
            Span::raw(format!("{} tok = {}", thousands(a.tokens), a.terms())),
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
    // As `compact` says it: untouched only when nothing was trimmed and nothing cut (tester
    // 9 T9-17: it read "untouched" above an entry the crowding rule cut).
    if let Some(note) = t.untouched_note() {
        steps.push(Line::styled(note, theme.ok));
    } else if t.dropped.is_empty() {
        steps.push(Line::styled("no trim step applied", theme.muted));
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
        // Each as a line of text names it: `'dup '` is not `dup` (tester 32 F2); names that
        // print alike spelled apart (tester 35 F5).
        let shown_names = view.names_shown();
        let names: Vec<_> = t.cut.iter().map(|c| shown_names.name(&c.name)).collect();
        Line::from(vec![
            Span::styled(
                format!("cut {} ({}): ", t.cut.len(), t.cut_note()),
                theme.warn,
            ),
            Span::raw(clip(&names.join(", "), cut_area.width as usize)),
        ])
    };
    frame.render_widget(Paragraph::new(cut_line), cut_area);

    draw_viewer(frame, viewer_area, pane, inp, theme);
}

/// The catalog text, one entry per line, narrowed by the search; only the lines on screen
/// are built.
fn draw_viewer(
    frame: &mut Frame,
    area: Rect,
    pane: &CatalogPane,
    inp: &CatalogInputs,
    theme: &Theme,
) {
    let Some(view) = inp.request.map(|r| &r.planned) else {
        return;
    };
    let text = pane.viewer_text(inp.request, inp.full_catalog);
    let search = &pane.search;
    let lines = visible_lines(text, search);
    let fates: HashMap<&str, &EntryFate> = view
        .compaction
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e))
        .collect();
    let what = if pane.full_view {
        "full catalog"
    } else {
        "as sent"
    };
    let mut header = vec![Span::styled(what, theme.accent)];
    if search.is_empty() && !inp.searching {
        header.push(Span::styled(
            if pane.full_view {
                "  each entry's fate: sent, trim N (changed by trim steps N), ✗ planner (left out by the planner), ✂ cut (by the budget) · f toggles · / search · enter opens"
            } else {
                "  (f toggles · / search · enter opens an entry; each entry's fate in the full view)"
            },
            theme.muted,
        ));
    } else {
        let cursor = if inp.searching { "▏" } else { "" };
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
    let start = if inp.focused {
        window_start(pane.scroll, height, total)
    } else {
        0
    };
    let on_screen = || lines.iter().enumerate().skip(start).take(height);
    // The fate column (full view): as wide as its widest label on screen.
    let fate_named = |name: Option<&str>| name.and_then(|n| fates.get(n)).map(|e| &e.fate);
    let fate_of = |line: &str| fate_named(entry_name(line).as_deref());
    let fate_width = if pane.full_view {
        on_screen()
            .filter_map(|(_, (_, l))| fate_of(l))
            .map(|f| fate_label(f).chars().count() + 1)
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let width = (area.width as usize).saturating_sub(5 + fate_width);
    let names = view.names_shown();
    let mut out = vec![Line::from(header)];
    if lines.is_empty() {
        out.push(Line::styled(
            shown(&format!("no entries match /{search} · esc clears")),
            theme.muted,
        ));
    }
    for (i, (n, line)) in on_screen() {
        // Read once a line: its fate and how its name is shown both need it.
        let name = entry_name(line);
        let fate = fate_named(name.as_deref()).filter(|_| pane.full_view);
        let selected = inp.focused && i == pane.scroll;
        let style = match (selected, fate) {
            (true, _) => theme.selected,
            (false, Some(Fate::CutByBudget)) => theme.error,
            (false, Some(Fate::RemovedByPlanner | Fate::RemovedByFilter)) => theme.muted,
            _ => theme.base,
        };
        let mut spans = vec![Span::styled(format!("{:>4} ", n + 1), theme.muted)];
        if pane.full_view {
            let (label, fate_style) = match fate {
                Some(f) => (fate_label(f), fate_style(f, theme)),
                None => (String::new(), theme.muted),
            };
            spans.push(Span::styled(
                format!("{label:<w$}", w = fate_width),
                fate_style,
            ));
        }
        let line = told_apart_in_json(line, name.as_deref(), names);
        spans.push(Span::styled(clip(&line, width), style));
        out.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(out), area);
}

/// A catalog line whose entry (`name`, as read from the line) lists do not show as written —
/// it prints like another's, or must be quoted — with that name's letters outside ASCII
/// written as JSON escapes (`{"name":"caf\u00e9",…}` beside `{"name":"cafe\u0301",…}`): the
/// same JSON, read apart (tester 36 F6: two rows read `{"name":"café",…}`, one sent and one
/// cut). Any other line as it is.
fn told_apart_in_json<'l>(
    line: &'l str,
    name: Option<&str>,
    names: &crate::core::terminal_text::NamesShown,
) -> Cow<'l, str> {
    let Some(name) = name else {
        return Cow::Borrowed(line);
    };
    if matches!(names.name(name), Cow::Borrowed(_)) {
        return Cow::Borrowed(line);
    }
    let Ok(as_written) = serde_json::to_string(name) else {
        return Cow::Borrowed(line);
    };
    let escaped = crate::core::terminal_text::ascii_json(&as_written);
    Cow::Owned(line.replacen(&as_written, &escaped, 1))
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

/// The name (pack) or id (pipeline) at the start of an entry line, decoded from its JSON
/// string: a name holding a quote, a backslash or a control character is written escaped.
fn entry_name(line: &str) -> Option<Cow<'_, str>> {
    let rest = line
        .strip_prefix("{\"name\":\"")
        .or_else(|| line.strip_prefix("{\"id\":\""))?;
    let mut escaped = false;
    let end = rest.bytes().position(|b| {
        let closes = b == b'"' && !escaped;
        escaped = b == b'\\' && !escaped;
        closes
    })?;
    let raw = &rest[..end];
    if !raw.contains('\\') {
        return Some(Cow::Borrowed(raw));
    }
    serde_json::from_str::<String>(&format!("\"{}", &rest[..=end]))
        .ok()
        .map(Cow::Owned)
}

/// The Catalog pane's own state: full or as-sent view, the selected line, its search, and
/// the entry opened in full.
#[derive(Debug, Clone, Default)]
pub struct CatalogPane {
    /// The full catalog rather than what is sent.
    pub full_view: bool,
    /// The selected line of the viewer (among those matching the search).
    pub scroll: usize,
    /// Lines containing this (any case) are listed; empty lists every line.
    pub search: String,
    /// An entry is open in full (Enter), scrolled this far.
    pub entry_open: bool,
    pub entry_scroll: usize,
}

impl CatalogPane {
    /// The viewer's text now: the full catalog or what is sent.
    pub fn viewer_text<'a>(
        &self,
        request: Option<&'a RequestSnapshot>,
        full_catalog: &'a str,
    ) -> &'a str {
        if self.full_view {
            full_catalog
        } else {
            request.map_or("", |r| r.planned.compaction.text.as_str())
        }
    }

    /// Lines in the viewer now (those matching its search).
    pub fn lines(&self, request: Option<&RequestSnapshot>, full_catalog: &str) -> usize {
        visible_lines(self.viewer_text(request, full_catalog), &self.search).len()
    }

    /// Select line `to` (kept on the viewer's lines).
    pub fn scroll_to(&mut self, to: usize, lines: usize) {
        self.scroll = to.min(lines.saturating_sub(1));
    }

    /// Full catalog vs as sent, from the top.
    pub fn toggle_full_view(&mut self) {
        self.full_view = !self.full_view;
        self.scroll = 0;
    }

    /// A key while the search is being typed: `Some(still typing)`, or `None` when it is
    /// not the search's.
    pub fn search_key(&mut self, action: &Action) -> Option<bool> {
        let typing = match action {
            Action::Char(c) => {
                self.search.push(*c);
                true
            }
            Action::Backspace => {
                self.search.pop();
                true
            }
            Action::Paste(text) => {
                self.search.extend(text.chars().filter(|c| !c.is_control()));
                true
            }
            Action::Confirm => false,
            Action::Back => {
                self.search.clear();
                false
            }
            _ => return None,
        };
        self.scroll = 0;
        Some(typing)
    }

    /// Enter on the selected line: open its entry in full (a bracket line opens nothing).
    pub fn open_entry(&mut self, request: Option<&RequestSnapshot>, full_catalog: &str) {
        let text = self.viewer_text(request, full_catalog);
        let lines = visible_lines(text, &self.search);
        let opens = lines
            .get(self.scroll)
            .is_some_and(|(_, l)| entry_name(l).is_some());
        self.entry_open = opens;
        self.entry_scroll = 0;
    }

    /// The open entry's name.
    fn selected_entry<'a>(
        &self,
        request: Option<&'a RequestSnapshot>,
        full_catalog: &'a str,
    ) -> Option<Cow<'a, str>> {
        let lines = visible_lines(self.viewer_text(request, full_catalog), &self.search);
        let (_, line) = lines.get(self.scroll)?;
        entry_name(line)
    }

    /// An operator's action while an entry is open: scroll it (`page` rows a page) within
    /// `extent` (see [`entry_extent`]), or close it (esc, enter).
    pub fn entry_update(&mut self, action: Action, page: usize, extent: Extent) {
        if matches!(action, Action::Back | Action::Open) {
            self.entry_open = false;
            self.entry_scroll = 0;
        } else if let Some(top) = scrolled(action.movement(), self.entry_scroll, page, extent) {
            self.entry_scroll = top;
        }
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

/// True for what an operator does; while an entry is open these go to it.
pub fn takes(action: &Action) -> bool {
    crate::tui::panes::help::takes(action)
}

/// The line of `text` holding entry `name`, as pretty JSON (or as it is, if it is not JSON).
fn entry_json(text: &str, name: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| entry_name(l).as_deref() == Some(name))?;
    let line = line.trim().trim_end_matches(',');
    // Laid out in the order sent: a parsed value would sort its keys (tester 12 T12-12: the
    // view put `description` before `name`, which the request sends first).
    Some(match serde_json::from_str::<serde::de::IgnoredAny>(line) {
        Ok(_) => pretty_in_order(line),
        Err(_) => line.to_string(),
    })
}

/// `json` (valid JSON) laid out two spaces per level, its keys and strings as written.
fn pretty_in_order(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut chars = json.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(s) = chars.next() {
                    out.push(s);
                    match s {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                out.push(e);
                            }
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                let close = if c == '{' { '}' } else { ']' };
                out.push(c);
                if chars.peek() == Some(&close) {
                    chars.next();
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// The open entry's name and its rows wrapped to `width`: its fate, then as sent, then the
/// full original. Counted after wrapping, so the end of a long description can be reached
/// (tester 17 F3).
fn entry_rows<'a>(
    pane: &CatalogPane,
    inp: &CatalogInputs<'a>,
    theme: &Theme,
    width: usize,
) -> Option<(String, Vec<Line<'a>>)> {
    let name = pane.selected_entry(inp.request, inp.full_catalog)?;
    let view = inp.request.map(|r| &r.planned.compaction);
    let name = name.into_owned();
    let sent = view.and_then(|v| entry_json(&v.text, &name));
    let full = entry_json(inp.full_catalog, &name);
    let fate = view
        .and_then(|v| v.entries.iter().find(|e| e.name == name))
        .map_or_else(
            || "not in the catalog the request was planned from".into(),
            |e| fate_sentence(&e.fate),
        );
    // A cut entry's size at the level the catalog reached, as `compact` gives it.
    let fate = match view.and_then(|v| v.trim.cut.iter().find(|c| c.name == name).map(|c| (v, c))) {
        Some((v, c)) if sent.is_none() => format!("{fate} ({})", v.trim.cut_size(c)),
        _ => fate,
    };
    // Spelled apart from a name that prints alike (tester 35 F5: `\u{212a}elvin` read `Kelvin`).
    let title = match view {
        Some(v) => v.names_shown().name(&name).into_owned(),
        None => crate::core::terminal_text::name(&name).into_owned(),
    };
    let mut lines = vec![
        Line::styled(shown(&title), theme.accent),
        Line::styled(fate, if sent.is_some() { theme.ok } else { theme.warn }),
        Line::raw(""),
        Line::styled("as sent", theme.accent),
    ];
    match &sent {
        Some(json) => lines.extend(json.lines().map(|l| Line::raw(shown(l)))),
        None => lines.push(Line::styled("(not in the request)", theme.muted)),
    }
    lines.push(Line::raw(""));
    // The entry as the catalog file gives it only when the file is a routing guide; from
    // another form it is as read, converted (tester 34 F16: an OpenAI `tools` entry's
    // "full original" showed the converted form).
    let full_title = match inp.catalog_format {
        Some(format) if format != "routing guide" => {
            format!("in full, as read (the file's {format} form, converted)")
        }
        _ => "full original".to_string(),
    };
    lines.push(Line::styled(full_title, theme.accent));
    if let Some(json) = &full {
        lines.extend(json.lines().map(|l| Line::raw(shown(l))));
    }
    Some((title, wrap_lines(lines, width)))
}

/// The open entry's rows, and how many show over the `body`.
pub fn entry_extent(pane: &CatalogPane, inp: &CatalogInputs, body: Rect) -> Extent {
    let inner = pane_block(String::new(), true, &Theme::plain()).inner(body);
    let rows = entry_rows(pane, inp, &Theme::plain(), inner.width as usize);
    Extent {
        rows: rows.map_or(0, |(_, rows)| rows.len()),
        height: inner.height as usize,
    }
}

/// The open entry over the body, scrolled.
pub fn draw_entry(
    frame: &mut Frame,
    body: Rect,
    pane: &CatalogPane,
    inp: &CatalogInputs,
    theme: &Theme,
) {
    let inner = pane_block(String::new(), true, theme).inner(body);
    let Some((name, rows)) = entry_rows(pane, inp, theme, inner.width as usize) else {
        return;
    };
    let extent = Extent {
        rows: rows.len(),
        height: inner.height as usize,
    };
    let top = extent.clamp(pane.entry_scroll);
    let title = format!(
        " {name} · {} lines · j/k scroll · esc closes ",
        extent.range(top)
    );
    frame.render_widget(ratatui::widgets::Clear, body);
    frame.render_widget(pane_block(title, true, theme), body);
    frame.render_widget(Paragraph::new(window(rows, top, extent.height)), inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 12 T12-12: "as sent" shows the entry in the order it is sent (name first),
    /// laid out, its strings as written; text that is not JSON as it is.
    #[test]
    fn an_entry_as_sent_keeps_the_order_it_is_sent_in() {
        let text = "{\"packs\":[\n{\"name\":\"t09.naïve\",\"description\":\"a, b: {c}\",\"metadata\":{\"z\":1,\"b\":[1,2],\"e\":{},\"q\":\"say \\\"hi\\\"\"}},\n{\"name\":\"other\"}\n]}";
        let shown = entry_json(text, "t09.naïve").unwrap();
        assert_eq!(
            shown,
            "{\n  \"name\": \"t09.naïve\",\n  \"description\": \"a, b: {c}\",\n  \"metadata\": {\n    \"z\": 1,\n    \"b\": [\n      1,\n      2\n    ],\n    \"e\": {},\n    \"q\": \"say \\\"hi\\\"\"\n  }\n}"
        );
        // Read back, it is the same value.
        let line = text.lines().nth(1).unwrap().trim_end_matches(',');
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            serde_json::from_str::<serde_json::Value>(line).unwrap()
        );
        assert_eq!(
            entry_json("{\"name\":\"x\" broken\n", "x").as_deref(),
            Some("{\"name\":\"x\" broken")
        );
    }
}
