//! The History pane: groups of similar intents, their plans with drift markers, the selected
//! plan's steps beside what executed, and per-model outcome rates. Only the visible rows
//! are built; pages come from the store off the render path. The pane owns its state
//! (`state`: lists, filters, search, pages asked for and answered; `replay_state`: a replay
//! being picked, run or shown) and draws from it (`replay`: the replay beside the plan).

pub mod replay;
mod replay_state;
mod state;

pub use replay_state::*;
pub use state::*;

use std::borrow::Cow;
use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};

use crate::core::history::{Drift, Outcome, ran_label};
use crate::core::time::format_minute;
use crate::core::trend::{DRIFT_CLASSES, Trends};
use crate::store::history::PlanDetail;
use crate::store::view::Page;
use crate::tui::panes::chart::{Series, drift_series, legend, sparkline, stacked_bar};
use crate::tui::panes::scroll::{Extent, window, wrap_lines};
use crate::tui::panes::{clip, clip_padded, pane_block, shown, shown_text, window_start};
use crate::tui::theme::Theme;

/// The pane, from its own state; `focused` when it has the keys.
pub fn draw(frame: &mut Frame, area: Rect, h: &HistoryState, focused: bool, theme: &Theme) {
    if let Some(opening) = &h.opening {
        let block = pane_block(" 4 History ".into(), focused, theme);
        frame.render_widget(
            Paragraph::new(shown_text(opening))
                .wrap(Wrap { trim: false })
                .block(block),
            area,
        );
        return;
    }
    if let Some(err) = &h.error {
        let block = pane_block(" 4 History ".into(), focused, theme);
        frame.render_widget(
            Paragraph::new(shown_text(&format!(
                "The history store is not available:\n{err}"
            )))
            .style(theme.error)
            .wrap(Wrap { trim: false })
            .block(block),
            area,
        );
        return;
    }
    if h.expanded {
        draw_detail(frame, area, h, theme, true);
        return;
    }
    let [groups, plans, detail, models, drift] = areas(area, h);
    draw_groups(
        frame,
        groups,
        h,
        focused && h.list == HistoryList::Groups,
        theme,
    );
    draw_plans(
        frame,
        plans,
        h,
        focused && h.list == HistoryList::Plans,
        theme,
    );
    draw_detail(frame, detail, h, theme, false);
    if h.show_gaps {
        draw_gaps(frame, models, h, theme);
    } else {
        draw_models(frame, models, h, theme);
    }
    draw_drift_weeks(frame, drift, h, theme);
}

/// Groups, plans, the plan, models, drift by week: where each goes in the pane (when no
/// plan fills it). The drift chart sits under the groups, as tall as its weeks need, up to
/// half the column.
pub fn areas(area: Rect, h: &HistoryState) -> [Rect; 5] {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(area);
    let [left, plans] =
        Layout::horizontal([Constraint::Percentage(32), Constraint::Percentage(68)]).areas(top);
    // Narrow screens give the models table half the width: it has a chart column too.
    let models_share = if area.width >= 100 { 42 } else { 50 };
    let [detail, models] = Layout::horizontal([
        Constraint::Percentage(100 - models_share),
        Constraint::Percentage(models_share),
    ])
    .areas(bottom);
    let inner_width = left.width.saturating_sub(2) as usize;
    let weeks = h.trends.as_ref().map_or(2, |t| t.weeks.len().max(2)) as u16;
    let want = weeks + drift_legend(inner_width, &Theme::plain()).len() as u16 + 2;
    // Up to half the column; on a short screen a little more, so a few weeks show.
    let share = if left.height < 16 { 55 } else { 50 };
    let drift_height = want.min(left.height * share / 100).max(4.min(left.height));
    let [groups, drift] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(drift_height)]).areas(left);
    [groups, plans, detail, models, drift]
}

/// The index of the row drawn at screen row `y` of a list drawn in `area` (border, header,
/// then rows from the window around `selected`), if a row is there.
pub fn row_at(area: Rect, (selected, total): (u64, u64), y: u16) -> Option<u64> {
    let inner = area.inner(ratatui::layout::Margin::new(1, 1));
    let offset = y.checked_sub(inner.y + 1)? as usize;
    let height = inner.height.saturating_sub(1) as usize;
    if offset >= height {
        return None;
    }
    let index = window_start(selected as usize, height, total as usize) as u64 + offset as u64;
    (index < total).then_some(index)
}

fn loading(frame: &mut Frame, area: Rect, theme: &Theme) {
    waiting(frame, area, "loading…", theme);
}

/// What a part of the pane says while its answer is on the way: the plans come first, the
/// counts behind the groups and the models after them.
fn waiting(frame: &mut Frame, area: Rect, what: &str, theme: &Theme) {
    frame.render_widget(Paragraph::new(what.to_string()).style(theme.muted), area);
}

/// What an empty list says: what it is a list of, and the filters that emptied it.
pub fn nothing_matches(h: &HistoryState, what: &str) -> String {
    let filters = h.filter_parts();
    if filters.is_empty() {
        format!("no {what} yet: the history store is empty")
    } else {
        format!("no {what} match {} · x clears", filters.join(", "))
    }
}

/// What an empty chart says: when the list beside it has plans, they are dated where no week
/// is charted (before 1970-01-05, or after now), not missing.
fn nothing_to_chart(h: &HistoryState) -> String {
    if h.plans.as_ref().is_some_and(|p| p.total > 0) {
        "no plans to chart: the ones listed are replays or dated before 1970-01-05 or after now"
            .to_string()
    } else {
        nothing_matches(h, "plans to chart")
    }
}

fn empty(frame: &mut Frame, area: Rect, text: String, theme: &Theme) {
    frame.render_widget(
        Paragraph::new(shown_text(&text))
            .style(theme.muted)
            .wrap(Wrap { trim: true }),
        area,
    );
}

/// A table window: rows `start..start + height` built by `row`, the selection marked.
fn paged_table<'a>(
    frame: &mut Frame,
    area: Rect,
    (selected, total): (u64, u64),
    header: Row<'a>,
    widths: &[Constraint],
    row: impl Fn(u64) -> Option<Row<'a>>,
    theme: &Theme,
) {
    let height = area.height.saturating_sub(1) as usize;
    let start = window_start(selected as usize, height, total as usize) as u64;
    let end = (start + height as u64).min(total);
    let rows: Vec<Row> = (start..end)
        .map(|i| row(i).unwrap_or_else(|| Row::new(vec![Cell::from("…")]).style(theme.muted)))
        .collect();
    let table = Table::new(rows, widths.to_vec())
        .column_spacing(1)
        .header(header.style(theme.accent))
        .row_highlight_style(theme.selected)
        .highlight_symbol("▶ ");
    let mut ts = TableState::default();
    if total > 0 {
        ts.select(Some((selected - start) as usize));
    }
    frame.render_stateful_widget(table, area, &mut ts);
}

/// A list's total for its title, or `counting…` while its first page is on the way.
fn count_label<T>(page: Option<&Page<T>>) -> String {
    page.map_or("counting…".to_string(), |p| p.total.to_string())
}

/// The Groups title's suffix when the groups are by an older build's word rules
/// ([`OLDER_RULES_NOTE`](crate::store::history::OLDER_RULES_NOTE) says it in full).
pub const OLDER_RULES_MARK: &str = " · older word rules";

fn draw_groups(frame: &mut Frame, area: Rect, h: &HistoryState, focused: bool, theme: &Theme) {
    let total = h.groups.as_ref().map_or(0, |g| g.total);
    let count = count_label(h.groups.as_ref());
    // Said where the groups are, in a short marker a narrow pane still shows (review 45
    // L5): read-only, or another writer held the store when it was opened (tester 45 F8).
    let rules = if h.groups_by_older_rules && h.groups.is_some() {
        OLDER_RULES_MARK
    } else {
        ""
    };
    let block = pane_block(format!(" Groups · {count}{rules} "), focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(page) = &h.groups else {
        // Regrouping a filtered million plans is the slow answer: the plans do not wait.
        if h.pending.groups.is_some() {
            return waiting(frame, inner, "grouping the plans…", theme);
        }
        return loading(frame, inner, theme);
    };
    if total == 0 {
        return empty(frame, inner, nothing_matches(h, "groups"), theme);
    }
    // Highlight mark, the count, a space: the rest is the intent's, cut with `…`.
    let intent_width = (inner.width as usize).saturating_sub(2 + 5 + 1);
    paged_table(
        frame,
        inner,
        (h.group_selected, total),
        Row::new(["plans", "latest intent"]),
        &[Constraint::Length(5), Constraint::Fill(1)],
        |i| {
            page.get(i).map(|g| {
                Row::new(vec![
                    Cell::from(format!("{:>5}", g.plans)),
                    Cell::from(clip(&g.intent.replace('\n', " "), intent_width)),
                ])
            })
        },
        theme,
    );
}

pub fn drift_style(drift: Drift, theme: &Theme) -> Style {
    match drift {
        Drift::Followed => theme.ok,
        Drift::Partial | Drift::Ignored => theme.warn,
        Drift::Diverged | Drift::Failed => theme.error,
        Drift::Replay => theme.accent,
    }
}

fn outcome_text(outcome: Outcome, failure: Option<&str>) -> String {
    match failure {
        Some(c) if outcome == Outcome::Failed => shown(c),
        _ => outcome.to_string(),
    }
}

fn draw_plans(frame: &mut Frame, area: Rect, h: &HistoryState, focused: bool, theme: &Theme) {
    let total = h.plans.as_ref().map_or(0, |p| p.total);
    let count = count_label(h.plans.as_ref());
    let filters = h.filter_label();
    let title = if h.searching {
        // The end of the text, where the cursor is, when it is longer than the title holds.
        const SHOWN: usize = 40;
        let n = h.search.chars().count();
        let typed = if n > SHOWN {
            let tail: String = h.search.chars().skip(n - (SHOWN - 1)).collect();
            format!("…{tail}")
        } else {
            h.search.clone()
        };
        format!(" Plans · {count} · intent search: {typed}▏ enter applies · esc clears ")
    } else if filters.is_empty() {
        format!(" Plans · {count} ")
    } else {
        format!(" Plans · {count} · {filters} ")
    };
    let block = pane_block(title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(page) = &h.plans else {
        return loading(frame, inner, theme);
    };
    if total == 0 {
        return empty(frame, inner, nothing_matches(h, "plans"), theme);
    }
    // Plans a damaged row kept from being read: said under the list, which shows the rest.
    let inner = match &page.left_out {
        Some(note) if inner.height > 4 => {
            let [list, below] =
                Layout::vertical([Constraint::Fill(1), Constraint::Length(2)]).areas(inner);
            frame.render_widget(
                Paragraph::new(shown_text(&format!("note: {note}")))
                    .style(theme.warn)
                    .wrap(Wrap { trim: true }),
                below,
            );
            list
        }
        _ => inner,
    };
    // Narrow panes get narrower columns (and lose the outcome: a failure's drift says
    // "✗ failed" already); the intent takes the rest, cut with `…`.
    let w = (inner.width as usize).saturating_sub(2);
    let wide = w >= 100;
    let with_outcome = w >= 64;
    let (outcome_w, at_w, model_w) = if wide { (20, 16, 22) } else { (12, 11, 14) };
    let mut header = vec!["drift"];
    let mut widths = vec![Constraint::Length(10)];
    if with_outcome {
        header.push("outcome");
        widths.push(Constraint::Length(outcome_w as u16));
    }
    header.extend(["at", "model", "intent"]);
    widths.extend([
        Constraint::Length(at_w as u16),
        Constraint::Length(model_w as u16),
        Constraint::Fill(1),
    ]);
    // The columns before the intent, each with the space after it.
    let fixed: usize = 11 + at_w + 1 + model_w + 1 + if with_outcome { outcome_w + 1 } else { 0 };
    let intent_w = w.saturating_sub(fixed).max(1);
    let names = model_names(h);
    paged_table(
        frame,
        inner,
        (h.plan_selected, total),
        Row::new(header),
        &widths,
        |i| {
            page.get(i).map(|p| {
                // "2026-11-18 05:08", or when narrow "11-18 05:08" this year and
                // "9999-12-31" another.
                let at = if wide {
                    format_minute(p.at)
                } else {
                    crate::core::time::format_minute_short(p.at, h.this_year)
                };
                let mut cells = vec![
                    Cell::from(format!("{} {}", p.drift.marker(), p.drift))
                        .style(drift_style(p.drift, theme)),
                ];
                if with_outcome {
                    cells.push(Cell::from(clip(
                        &outcome_text(p.outcome, p.failure_class.as_deref()),
                        outcome_w,
                    )));
                }
                cells.extend([
                    Cell::from(at),
                    Cell::from(short_model(&p.model, model_w, &names)),
                    Cell::from(clip(&p.intent.replace('\n', " "), intent_w)),
                ]);
                Row::new(cells)
            })
        },
        theme,
    );
}

/// The ending of a model id that tells it from every other model the pane knows
/// ([`distinct_tails`](crate::core::text::distinct_tails): `qwen`, or `local/qwen` beside
/// `keyed/qwen`), elided with `…` to `width`: tables are narrow.
fn short_model(model: &str, width: usize, names: &HashMap<&str, Cow<'_, str>>) -> String {
    let cut = cut_model(model, width, names);
    // Cut to the column, two models may still read alike (tester 10 T10-10: at the
    // console's 14 cells `team-alpha/…` and `team-bravo/…` both read `team…uct-turbo`):
    // then the cut keeps where this one first differs from those it would read as.
    let alike: Vec<String> = names
        .keys()
        .filter(|m| **m != model && cut_model(m, width, names) == cut)
        .map(|m| model_tail(m, names))
        .collect();
    if alike.is_empty() {
        return cut;
    }
    let tail: Vec<char> = model_tail(model, names).chars().collect();
    let differs_at = alike
        .iter()
        .map(|o| {
            tail.iter()
                .zip(o.chars())
                .take_while(|(a, b)| **a == *b)
                .count()
        })
        .max()
        .unwrap_or(0);
    let Some(last) = differs_at.checked_add(1).filter(|&l| l <= tail.len()) else {
        return cut;
    };
    let text = |r: std::ops::Range<usize>| tail[r].iter().collect::<String>();
    let apart = if last + 1 + 4 <= width {
        // `team-a…t-turbo`: up to the difference, then the ending.
        let rest = width - last - 1;
        format!(
            "{}…{}",
            text(0..last),
            text(tail.len().saturating_sub(rest).max(last)..tail.len())
        )
    } else if width >= 3 {
        // `…3.1-70b…`: the characters up to the difference.
        let from = last.saturating_sub(width - 2);
        let end = if last < tail.len() { "…" } else { "" };
        format!("…{}{end}", text(from..last))
    } else {
        return cut;
    };
    if crate::core::text::display_width(&apart) <= width {
        apart
    } else {
        cut
    }
}

/// The ending a model is shown by, spelled as the terminal shows it.
fn model_tail(model: &str, names: &HashMap<&str, Cow<'_, str>>) -> String {
    let tail = names
        .get(model)
        .map(|t| t.as_ref())
        .unwrap_or_else(|| model.rsplit('/').next().unwrap_or(model));
    shown(tail)
}

/// [`short_model`]'s cut before it looks at the other models.
fn cut_model(model: &str, width: usize, names: &HashMap<&str, Cow<'_, str>>) -> String {
    let tail = model_tail(model, names);
    // An ending of several segments is told apart by its first one (`team-alpha/…`): keep
    // it whole and cut the rest in the middle, rather than cut through it (tester 9 T9-5:
    // `team-alpha/llama…` and `team-bravo/llama…` both read `team…uct-turbo`).
    if let Some((first, rest)) = tail.split_once('/') {
        let head = crate::core::text::display_width(first) + 1;
        if crate::core::text::display_width(&tail) > width && head + 4 <= width {
            return format!("{first}/{}", crate::format::elide(rest, width - head));
        }
    }
    crate::format::elide(&tail, width)
}

/// Every model the History pane knows (the filter's list, the Models box, the page of
/// plans), each with its distinguishing ending.
fn model_names(h: &HistoryState) -> HashMap<&str, Cow<'_, str>> {
    let listed = h
        .plans
        .iter()
        .flat_map(|p| p.rows.iter().map(|r| r.model.as_str()));
    crate::core::text::distinct_tails(
        h.models
            .iter()
            .map(String::as_str)
            .chain(h.model_rows.iter().map(|m| m.outcomes.model.as_str()))
            .chain(listed),
    )
}

/// Where the plan goes in the pane's `area`, and the replay beside it when one of this plan
/// is open.
fn detail_split(area: Rect, h: &HistoryState) -> (Rect, Option<(Rect, &ReplayView)>) {
    match &h.replay {
        Some(r) if h.detail.as_ref().is_none_or(|d| d.record.id == r.plan_id) => {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(area);
            (left, Some((right, r)))
        }
        _ => (area, None),
    }
}

/// The plan's rows, wrapped to `inner` (inside its frame), and how many of them show.
fn detail_rows<'a>(
    d: &'a PlanDetail,
    inner: Rect,
    theme: &Theme,
    expanded: bool,
) -> (Vec<Line<'a>>, Extent) {
    let width = inner.width as usize;
    let rows = wrap_lines(detail_lines(d, theme, expanded, width), width);
    let extent = Extent {
        rows: rows.len(),
        height: inner.height as usize,
    };
    (rows, extent)
}

/// How far the plan open in full over the pane's `area` scrolls: its rows and how many show.
pub fn detail_extent(h: &HistoryState, area: Rect) -> Extent {
    let Some(d) = &h.detail else {
        return Extent::default();
    };
    let (area, _) = detail_split(area, h);
    let inner = pane_block(String::new(), true, &Theme::plain()).inner(area);
    detail_rows(d, inner, &Theme::plain(), true).1
}

fn draw_detail(frame: &mut Frame, area: Rect, h: &HistoryState, theme: &Theme, expanded: bool) {
    let (area, replay) = detail_split(area, h);
    if let Some((right, r)) = replay {
        replay::draw(frame, right, r, theme);
    }
    let inner = pane_block(String::new(), expanded, theme).inner(area);
    let Some(d) = &h.detail else {
        frame.render_widget(pane_block(" Plan ".into(), expanded, theme), area);
        if h.plans.as_ref().is_some_and(|p| p.total == 0) {
            return empty(
                frame,
                inner,
                "no plan selected: the plans list is empty".to_string(),
                theme,
            );
        }
        return loading(frame, inner, theme);
    };
    let (rows, extent) = detail_rows(d, inner, theme, expanded);
    // Only a plan open in full scrolls; in the pane it shows from its top.
    let top = if expanded {
        extent.clamp(h.detail_scroll)
    } else {
        0
    };
    let id = &d.record.id;
    let title = if !expanded {
        format!(" Plan {id} · enter opens ")
    } else if extent.overflows() {
        format!(
            " Plan {id} · {} lines · j/k scroll · esc closes ",
            extent.range(top)
        )
    } else {
        format!(" Plan {id} · esc closes ")
    };
    frame.render_widget(pane_block(title, expanded, theme), area);
    frame.render_widget(Paragraph::new(window(rows, top, extent.height)), inner);
}

/// The plan's head, then its steps beside what executed, then (opened) the raw response.
fn detail_lines<'a>(
    d: &'a PlanDetail,
    theme: &Theme,
    expanded: bool,
    width: usize,
) -> Vec<Line<'a>> {
    let r = &d.record;
    let mut lines = vec![
        Line::from(Span::styled(
            shown(&r.intent.replace('\n', " ")),
            theme.base,
        )),
        Line::from(vec![Span::styled(
            shown(&format!(
                "{} · {} · {}{}",
                format_minute(r.at),
                r.caller,
                r.model,
                // Native is the default and goes unsaid; imported traffic says where from.
                if r.source.is_native() {
                    String::new()
                } else {
                    format!(" · from {}", r.source)
                }
            )),
            theme.muted,
        )]),
        Line::from(vec![
            Span::styled(
                format!("{} {}", d.drift.marker(), d.drift),
                drift_style(d.drift, theme),
            ),
            Span::raw("  "),
            Span::styled(
                match (&r.failure_class, r.outcome) {
                    (Some(c), Outcome::Failed) => shown(&format!("failed: {c}")),
                    _ => r.outcome.to_string(),
                },
                if r.outcome == Outcome::Failed {
                    theme.error
                } else {
                    theme.base
                },
            ),
            Span::styled(
                shown(&format!(
                    "  finish {} · {} · {}",
                    r.finish_reason.as_deref().unwrap_or("none"),
                    d.complexity,
                    // The whole run, and the call's own latency when the answer kept it,
                    // each said (tester 34 F6: 10 ms here beside the Sent table's 3 ms).
                    match (
                        r.duration_ms,
                        r.answer
                            .as_ref()
                            .and_then(|a| a.get("latency_ms"))
                            .and_then(serde_json::Value::as_u64),
                    ) {
                        (Some(ms), Some(call)) => format!("{ms} ms in all, the call {call} ms"),
                        (Some(ms), None) => format!("{ms} ms in all"),
                        (None, _) => "—".into(),
                    }
                )),
                theme.muted,
            ),
        ]),
    ];
    if let Some(line) = crate::core::gap::baseline_plan_line(r.trim_record.as_ref()) {
        lines.push(Line::from(Span::styled(line, theme.accent)));
    }
    // What it was sent with, as `history show` says it (tester 19 F11).
    for a in &crate::core::as_sent::SentWith::from_trim(r.trim_record.as_ref()).attachments {
        lines.push(Line::from(Span::styled(
            shown(&format!("sent with: {}", a.line())),
            theme.muted,
        )));
    }
    let col = (width.saturating_sub(4) / 2).clamp(10, 40);
    let n = r.steps.len().max(d.executed.len());
    // Every step number as wide as the last one: the columns stay put past step 9.
    let number = n.to_string().len();
    // What the row leaves the executed tool: the rest of the width, one cell at least.
    let executed_col = width.saturating_sub(number + 1 + col + 2).max(1);
    lines.push(Line::from(Span::styled(
        format!("{:number$} {:<col$}  executed", "", "planned"),
        theme.accent,
    )));
    if n == 0 {
        lines.push(Line::from(Span::styled(
            "  (no steps, nothing executed)",
            theme.muted,
        )));
    }
    let names =
        crate::core::gap::plan_view_names(&r.steps, &d.executed, r.expert_baseline.as_ref());
    for i in 0..n {
        let planned = r.steps.get(i).map(|s| s.tool.as_str()).unwrap_or("");
        let ran = d.executed.get(i).map(String::as_str).unwrap_or("—");
        let ok = d.executed_ok.get(i).copied().unwrap_or(true);
        let same = !planned.is_empty() && planned == ran;
        let (planned, ran) = (names.spelled_or_raw(planned), names.spelled_or_raw(ran));
        let style = match (ok, same) {
            (false, _) => theme.error,
            (true, true) => theme.ok,
            (true, false) => theme.warn,
        };
        // Each cell cut to its column by the cells it shows (tester 20 F7: a wide name ran
        // past the row and wrapped over the `planned` column), as `history show` cuts them.
        lines.push(Line::from(vec![
            Span::raw(format!("{:>number$} ", i + 1)),
            Span::styled(clip_padded(&planned, col), theme.base),
            Span::raw("  "),
            Span::styled(clip(&ran_label(&ran, ok), executed_col), style),
        ]));
    }
    for s in r.steps.iter().filter(|s| s.rationale.starts_with("gap:")) {
        lines.push(Line::from(Span::styled(
            shown(&format!("step {}: {}", s.order, s.rationale)),
            theme.warn,
        )));
    }
    if let Some(g) = &d.gap_signal {
        lines.push(Line::from(vec![
            Span::styled("vs baseline: ", theme.accent),
            Span::styled(
                g.category.to_string(),
                if g.agree { theme.ok } else { theme.warn },
            ),
            Span::styled(shown(&format!(" · {}", g.notes)), theme.muted),
        ]));
    }
    if !d.replays.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("replays ({}, newest first)", d.replays.len()),
            theme.accent,
        )));
        let listed = if expanded { d.replays.len() } else { 3 };
        for p in d.replays.iter().take(listed) {
            lines.push(Line::from(vec![
                Span::styled(
                    shown(&format!("  {}  {}  ", p.id, format_minute(p.at))),
                    theme.muted,
                ),
                Span::styled(crate::format::elide(&shown(&p.model), 22), theme.base),
                Span::raw("  "),
                Span::styled(
                    outcome_text(p.outcome, p.failure_class.as_deref()),
                    if p.outcome == Outcome::Failed {
                        theme.error
                    } else {
                        theme.ok
                    },
                ),
            ]));
        }
        if d.replays.len() > listed {
            lines.push(Line::from(Span::styled(
                format!("  … {} more", d.replays.len() - listed),
                theme.muted,
            )));
        }
    }
    if expanded {
        lines.push(Line::from(Span::styled(
            shown(&format!(
                "id {} · intent {} · shape {}{}",
                r.id,
                d.intent_sha,
                d.shape,
                r.replay_of
                    .as_deref()
                    .map(|o| format!(" · replay of {o}"))
                    .unwrap_or_default()
            )),
            theme.muted,
        )));
        if let Some(trim) = &r.trim_record {
            lines.push(Line::from(Span::styled(
                format!("trim record: {}", clip(&trim.to_string(), 300)),
                theme.muted,
            )));
        }
    }
    // Open in full the plan scrolls, but a long answer is read whole elsewhere.
    let limit = if expanded { 60 } else { 3 };
    if let Some(raw) = &r.raw_response {
        lines.push(Line::from(Span::styled("raw response:", theme.accent)));
        // Split at line feeds only: a CR is part of the stored bytes and shown, as
        // `history show` shows it (tester 34 F11: `lines()` dropped it here).
        lines.extend(cut_section(
            raw.split_inclusive('\n')
                .map(|l| l.strip_suffix('\n').unwrap_or(l)),
            limit,
            &r.id,
            "raw_response",
            theme,
        ));
        if raw.is_empty() {
            lines.push(Line::from(Span::styled("(empty)", theme.muted)));
        }
    }
    // Whole here (tool-call arguments of megabytes too): the section cuts them, saying so.
    let kept = r
        .answer
        .as_ref()
        .map(|a| crate::core::failure::kept_answer_lines(a, usize::MAX))
        .unwrap_or_default();
    if !kept.is_empty() {
        lines.push(Line::from(Span::styled(
            "the answer as kept:",
            theme.accent,
        )));
        lines.extend(cut_section(
            kept.iter().map(String::as_str),
            limit,
            &r.id,
            "answer",
            theme,
        ));
    }
    lines
}

use crate::core::terminal_text::SECTION_LINE_CHARS;

/// A section of the plan view (the raw response, the answer as kept), cut as every screen
/// cuts one ([`crate::core::terminal_text::cut_section`]), in the muted style.
fn cut_section<'a, 't>(
    text: impl IntoIterator<Item = &'t str>,
    limit: usize,
    id: &str,
    field: &str,
    theme: &Theme,
) -> Vec<Line<'a>> {
    crate::core::terminal_text::cut_section(text, limit, SECTION_LINE_CHARS, id, field)
        .into_iter()
        .map(|l| Line::from(Span::styled(l, theme.muted)))
        .collect()
}

/// The plans against their baselines, counted by group and tool ("baseline skipped
/// memory.store in 14 of 20 'remember …' intents"), for the current filters.
fn draw_gaps(frame: &mut Frame, area: Rect, h: &HistoryState, theme: &Theme) {
    let rules = if h.gaps_by_older_rules && h.gaps.is_some() {
        OLDER_RULES_MARK
    } else {
        ""
    };
    let block = pane_block(format!(" Gaps · plans vs baseline{rules} "), false, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(report) = &h.gaps else {
        return loading(frame, inner, theme);
    };
    if report.plans == 0 {
        let filters = h.filter_label();
        let text = if filters.is_empty() {
            "no plan has a baseline yet: ctxconsole send … --baseline MODEL, or import plans \
             carrying expert_baseline steps"
                .to_string()
        } else {
            format!(
                "no plan with a baseline matches {} · x clears",
                filters.replace(' ', ", ")
            )
        };
        return empty(frame, inner, text, theme);
    }
    let width = inner.width as usize;
    let mut lines = vec![Line::from(Span::styled(
        clip(
            &format!(
                "{} plans vs a baseline · {} agree · {}",
                report.plans,
                report.agree,
                report
                    .categories
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            width,
        ),
        theme.accent,
    ))];
    // Each line is cut at the pane's edge: the intent comes last, so it keeps what fits.
    let names = report.names_shown();
    for g in &report.groups {
        for sentence in g.sentences(60, names) {
            let style = if sentence.starts_with("agree") {
                theme.ok
            } else if sentence.starts_with("plan") || sentence.starts_with("the plan") {
                theme.warn
            } else {
                theme.base
            };
            lines.push(Line::from(Span::styled(
                clip(&shown(&sentence), width),
                style,
            )));
        }
    }
    lines.truncate(inner.height as usize);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The drift chart's legend: each class with its glyph (names cut to three letters where
/// the column is narrow, so the legend leaves room for weeks).
fn drift_legend(width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let items = DRIFT_CLASSES
        .iter()
        .map(|d| {
            let name = d.to_string();
            let name = if width < 36 {
                name.chars()
                    .take(if *d == Drift::Failed { 4 } else { 3 })
                    .collect()
            } else {
                name
            };
            (drift_series(*d, theme).swatch(theme), name)
        })
        .collect();
    legend(items, width, theme)
}

/// Drift classes per week as stacked bars, one week a row (oldest first, the latest at the
/// bottom), each as long as its plans against the busiest week, with its count.
fn draw_drift_weeks(frame: &mut Frame, area: Rect, h: &HistoryState, theme: &Theme) {
    let block = pane_block(" Drift by week ".into(), false, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(trends) = h.trends.as_deref() else {
        return loading(frame, inner, theme);
    };
    if trends.is_empty() {
        return empty(frame, inner, nothing_to_chart(h), theme);
    }
    let width = inner.width as usize;
    let legend_lines = drift_legend(width, theme);
    let rows = (inner.height as usize).saturating_sub(legend_lines.len());
    let totals: Vec<u64> = trends.drift.iter().map(|w| w.iter().sum()).collect();
    let busiest = totals.iter().copied().max().unwrap_or(0).max(1);
    let count_w = busiest.to_string().len();
    // "11-16 " before the bar, " 123" after it.
    let bar_w = width.saturating_sub(6 + 1 + count_w);
    let first = trends.weeks.len().saturating_sub(rows);
    let mut lines: Vec<Line> = trends
        .weeks
        .iter()
        .zip(&trends.drift)
        .zip(&totals)
        .skip(first)
        .map(|((week, counts), total)| {
            let at = format_minute(*week);
            let label = at.get(5..10).unwrap_or(&at).to_string();
            let cells = ((*total as f64 / busiest as f64) * bar_w as f64).round() as usize;
            // A week with plans shows, however quiet it was next to the busiest.
            let cells = if *total > 0 && bar_w > 0 {
                cells.max(1)
            } else {
                cells
            };
            let parts: Vec<(Series, usize)> = DRIFT_CLASSES
                .iter()
                .zip(counts)
                .map(|(d, n)| (drift_series(*d, theme), *n as usize))
                .collect();
            let mut spans = vec![Span::styled(format!("{label} "), theme.muted)];
            spans.extend(stacked_bar(&parts, cells, theme));
            spans.push(Span::raw(" ".repeat(bar_w.saturating_sub(cells) + 1)));
            spans.push(Span::styled(format!("{total:>count_w$}"), theme.base));
            Line::from(spans)
        })
        .collect();
    lines.extend(legend_lines);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// A model's failed share per week, from the trends (`·` for a week without its plans).
fn model_sparkline(trends: Option<&Trends>, model: &str) -> String {
    let Some(t) = trends else {
        return String::new();
    };
    match t.model(model) {
        Some(m) => sparkline(&m.weeks.iter().map(|w| w.failed_rate()).collect::<Vec<_>>()),
        None => "·".repeat(t.weeks.len()),
    }
}

fn draw_models(frame: &mut Frame, area: Rect, h: &HistoryState, theme: &Theme) {
    let block = pane_block(
        " Models · outcomes → tier · fail/wk: failed share, week by week ".into(),
        false,
        theme,
    );
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if h.model_rows.is_empty() {
        // Loading only while the answer is awaited; an answer with no rows says so.
        if h.pending.models.is_some() || !h.loaded {
            return waiting(frame, inner, "counting…", theme);
        }
        return empty(frame, inner, nothing_matches(h, "model outcomes"), theme);
    }
    let trends = h.trends.as_deref();
    let spark_w = trends.map_or(0, |t| t.weeks.len()).max("fail/wk".len());
    // model, then fail, follw, fail by week, tier (and plans, when the model keeps 12).
    let fixed = 4 + 1 + 4 + 1 + spark_w + 1 + 6 + 1;
    let with_plans = (inner.width as usize).saturating_sub(fixed + 6) >= 12;
    let model_w = (inner.width as usize)
        .saturating_sub(fixed + if with_plans { 6 } else { 0 })
        .max(1);
    let names = model_names(h);
    let rows: Vec<Row> = h
        .model_rows
        .iter()
        .take(inner.height.saturating_sub(1) as usize)
        .map(|m| {
            let suggested = m.suggested_tier.map_or("—".into(), |t| t.to_string());
            let style = match m.suggested_tier {
                Some(t) if t != m.current_tier => theme.warn,
                _ => theme.base,
            };
            let mut cells = vec![Cell::from(short_model(&m.outcomes.model, model_w, &names))];
            if with_plans {
                cells.push(Cell::from(format!("{:>5}", m.outcomes.plans)));
            }
            let (failed, followed) = m.shown_rates();
            cells.extend([
                Cell::from(format!("{failed:>4}")),
                Cell::from(format!("{followed:>4}")),
                Cell::from(Span::styled(
                    model_sparkline(trends, &m.outcomes.model),
                    theme.chart[5],
                )),
                Cell::from(format!("{} → {suggested}", m.current_tier)),
            ]);
            Row::new(cells).style(style)
        })
        .collect();
    let mut widths = vec![Constraint::Fill(1)];
    let mut header = vec!["model"];
    if with_plans {
        widths.push(Constraint::Length(5));
        header.push("plans");
    }
    widths.extend([
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(spark_w as u16),
        Constraint::Length(6),
    ]);
    header.extend(["fail", "folw", "fail/wk", "tier"]);
    let table = Table::new(rows, widths)
        .column_spacing(1)
        .header(Row::new(header).style(theme.accent));
    frame.render_widget(table, inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan row damaged by hand hides no other plan in the console either: the page of a
    /// real store so damaged lists the rest, and the pane says under them which plan was
    /// left out and its column.
    #[test]
    fn the_plans_list_shows_the_rest_and_says_which_plan_was_left_out() {
        use crate::store::history::{HISTORY_FILE, HistoryStore};
        use crate::store::view::{HistoryAnswer, HistoryQuery, run_query};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        let pipelines = ["builtin.page-digest".to_string()].into_iter().collect();
        HistoryStore::open(&path)
            .unwrap()
            .seed_if_new(
                crate::sample::SAMPLE_PLANS,
                crate::sample::SAMPLE_EXECUTIONS,
                &pipelines,
            )
            .unwrap();
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute("UPDATE plans SET at = 'yesterday' WHERE id = 'pl-0003'", [])
            .unwrap();
        let query = HistoryQuery::Open {
            filter: Default::default(),
        };
        let (answer, _) = run_query(&path, &Default::default(), &query).unwrap();
        let HistoryAnswer::Opened { plans, .. } = answer else {
            panic!("{answer:?}")
        };
        assert!(plans.rows.iter().all(|p| p.id != "pl-0003"));
        assert_eq!(plans.rows.len() as u64, crate::store::view::PAGE - 1);
        let mut h = HistoryState::default();
        h.plans = Some(plans);
        let theme = Theme::default();
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(200, 14)).unwrap();
        terminal
            .draw(|f| draw_plans(f, f.area(), &h, true, &theme))
            .unwrap();
        let screen = crate::tui::screen_text(&terminal);
        assert!(screen.contains("note: left out 1 plan"), "{screen}");
        assert!(
            screen.contains("plan 'pl-0003': its time (column at)"),
            "{screen}"
        );
    }

    /// Two ids whose distinguishing ending is cut to a narrow column still read apart: the
    /// ending's first segment is kept whole (tester 9 T9-5).
    #[test]
    fn a_cut_model_keeps_the_segment_that_tells_it_apart() {
        let ids = [
            "prov/team-alpha/llama-3.1-70b-instruct-turbo",
            "prov/team-bravo/llama-3.1-70b-instruct-turbo",
            "local/qwen",
        ];
        let names = crate::core::text::distinct_tails(ids);
        let shown: Vec<String> = ids.iter().map(|id| short_model(id, 22, &names)).collect();
        assert!(shown[0].starts_with("team-alpha/"), "{shown:?}");
        assert!(shown[1].starts_with("team-bravo/"), "{shown:?}");
        assert!(shown.iter().all(|s| s.chars().count() <= 22), "{shown:?}");
        assert_eq!(shown[2], "qwen");
        // Tester 10 T10-10: at the console's 14 cells they still read alike, and so did
        // two llama versions and two Qwen sizes. They are cut where they differ.
        for ids in [
            &ids[..2],
            &[
                "openrouter/meta-llama/llama-3.1-70b-instruct",
                "openrouter/meta-llama/llama-3.3-70b-instruct",
            ][..],
            &[
                "together/Qwen/Qwen2.5-72B-Instruct-Turbo",
                "together/Qwen/Qwen2.5-32B-Instruct-Turbo",
            ][..],
        ] {
            let names = crate::core::text::distinct_tails(ids.iter().copied());
            for width in [14, 22] {
                let shown: Vec<String> = ids
                    .iter()
                    .map(|id| short_model(id, width, &names))
                    .collect();
                assert_ne!(shown[0], shown[1], "{width}: {shown:?}");
                assert!(
                    shown.iter().all(|s| s.chars().count() <= width),
                    "{width}: {shown:?}"
                );
            }
        }
    }

    /// Tester 9 T9-5: `keyed/café` (NFC) and `keyed/cafe\u{301}` (NFD) both read `café` in
    /// Plans and in the Models list. Ids that print alike are spelled out.
    #[test]
    fn models_that_print_alike_read_apart() {
        let ids = ["keyed/caf\u{e9}", "keyed/cafe\u{301}"];
        let names = crate::core::text::distinct_tails(ids);
        let shown: Vec<String> = ids.iter().map(|id| short_model(id, 22, &names)).collect();
        assert_eq!(shown, ["keyed/caf\\u{e9}", "keyed/cafe\\u{301}"]);
    }
}
