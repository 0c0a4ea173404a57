//! The Budgets pane: every model row, sortable and searchable; the selection drives the
//! rest. Readable from 80 columns up: ids are elided with `…` (never cut), numbers are
//! grouped one way ([`thousands`]), columns join as the pane widens, lints have a column
//! (`⚠n`) and the selected row is shown whole below the table, lints and all.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};

use crate::core::budget::{BudgetRow, MatchKind};
use crate::format::{elide, percent, thousands};
use crate::tui::panes::chart::{Series, stacked_bar};
use crate::tui::panes::{pane_block, shown, window_start, wrap};
use crate::tui::theme::Theme;
use std::collections::BTreeSet;

/// The model column never gets narrower than this while optional columns are shown.
const MIN_MODEL: usize = 20;

/// One optional column: its header, its width, and a row's cell text.
struct Column {
    header: &'static str,
    width: usize,
    cell: fn(&BudgetRow) -> String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Table,
    Id,
    Tier,
    Input,
    Output,
    CatalogBytes,
    Layer,
}

impl SortColumn {
    const CYCLE: [SortColumn; 7] = [
        SortColumn::Table,
        SortColumn::Id,
        SortColumn::Tier,
        SortColumn::Input,
        SortColumn::Output,
        SortColumn::CatalogBytes,
        SortColumn::Layer,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SortColumn::Table => "table order",
            SortColumn::Id => "id",
            SortColumn::Tier => "tier",
            SortColumn::Input => "input",
            SortColumn::Output => "output",
            SortColumn::CatalogBytes => "catalog bytes",
            SortColumn::Layer => "layer",
        }
    }

    pub fn next(self) -> SortColumn {
        let i = Self::CYCLE.iter().position(|c| *c == self).unwrap_or(0);
        Self::CYCLE[(i + 1) % Self::CYCLE.len()]
    }
}

/// The Budgets pane's own state: every row, the visible ones (searched, sorted), the
/// selection, and the models marked to be sent to.
#[derive(Debug, Clone)]
pub struct BudgetsPane {
    /// Every budget row: the table's, then the fallback.
    pub rows: Vec<BudgetRow>,
    /// Indices into `rows`, filtered and sorted.
    pub visible: Vec<usize>,
    /// Position in `visible`.
    pub selected: usize,
    pub sort: SortColumn,
    pub sort_desc: bool,
    pub filter: String,
    /// Rows (by id) marked to be sent to beside the selected one.
    pub marked: BTreeSet<String>,
}

impl BudgetsPane {
    pub fn new(rows: Vec<BudgetRow>) -> BudgetsPane {
        BudgetsPane {
            visible: (0..rows.len()).collect(),
            rows,
            selected: 0,
            sort: SortColumn::Table,
            sort_desc: false,
            filter: String::new(),
            marked: BTreeSet::new(),
        }
    }

    pub fn selected_row(&self) -> Option<&BudgetRow> {
        self.visible.get(self.selected).map(|&i| &self.rows[i])
    }

    /// After the search changed: the rows again; true when that moved the selection to
    /// another row (whose request is then planned).
    pub fn refilter(&mut self) -> bool {
        let before = self.selected_row().map(|r| (r.id.clone(), r.match_kind));
        self.refresh_visible();
        let after = self.selected_row().map(|r| (r.id.clone(), r.match_kind));
        before != after
    }

    /// The visible rows again (search, sort), the selected row kept when it is still there.
    pub fn refresh_visible(&mut self) {
        let keep_id = self.selected_row().map(|r| (r.id.clone(), r.match_kind));
        let needle = self.filter.to_ascii_lowercase();
        let mut visible: Vec<usize> = (0..self.rows.len())
            .filter(|&i| {
                let r = &self.rows[i];
                needle.is_empty()
                    || r.id.to_ascii_lowercase().contains(&needle)
                    || format!("tier {}", r.tier).to_ascii_lowercase() == needle
                    || r.layer.to_string() == needle
            })
            .collect();
        let rows = &self.rows;
        match self.sort {
            SortColumn::Table => {}
            SortColumn::Id => visible.sort_by(|&a, &b| rows[a].id.cmp(&rows[b].id)),
            SortColumn::Tier => visible.sort_by_key(|&i| rows[i].tier),
            SortColumn::Input => visible.sort_by_key(|&i| rows[i].input_tokens),
            SortColumn::Output => visible.sort_by_key(|&i| rows[i].output_tokens),
            SortColumn::CatalogBytes => {
                visible.sort_by_key(|&i| rows[i].max_catalog_bytes.unwrap_or(usize::MAX))
            }
            SortColumn::Layer => visible.sort_by_key(|&i| rows[i].layer),
        }
        if self.sort_desc {
            visible.reverse();
        }
        self.visible = visible;
        self.selected = keep_id
            .and_then(|(id, kind)| {
                self.visible
                    .iter()
                    .position(|&i| self.rows[i].id == id && self.rows[i].match_kind == kind)
            })
            .unwrap_or(0);
    }

    /// Select visible row `to` (kept on the list); true when the selection moved.
    pub fn select(&mut self, to: usize) -> bool {
        let to = to.min(self.visible.len().saturating_sub(1));
        let moved = to != self.selected;
        self.selected = to;
        moved
    }

    pub fn sort_next(&mut self) {
        self.sort = self.sort.next();
        self.refresh_visible();
    }

    pub fn sort_reverse(&mut self) {
        self.sort_desc = !self.sort_desc;
        self.refresh_visible();
    }

    /// Mark or unmark the selected model for sending.
    pub fn toggle_mark(&mut self) {
        if let Some(id) = self.selected_row().map(|r| r.id.clone())
            && !self.marked.remove(&id)
        {
            self.marked.insert(id);
        }
    }
}

/// The id as the table shows it: a prefix row (a family) ends in `*`, so `claude-*` never
/// reads as a cut-off `claude-`.
fn display_id(r: &BudgetRow) -> String {
    shown(&r.shown_id())
}

fn tier_cell(r: &BudgetRow) -> String {
    format!("{}{}", r.tier, if r.tier_derived { "*" } else { "" })
}

fn catalog_cap(r: &BudgetRow) -> String {
    r.max_catalog_bytes
        .map(thousands)
        .unwrap_or_else(|| "—".into())
}

fn lint_cell(r: &BudgetRow) -> String {
    if r.lint.is_empty() {
        String::new()
    } else {
        format!("⚠{}", r.lint.len())
    }
}

/// Columns after the model, in the order they join as the pane widens (tier and input
/// always show); each sized to the widest value among `rows`.
fn columns(rows: &[&BudgetRow], table_width: usize) -> Vec<Column> {
    let sized = |header: &'static str, cell: fn(&BudgetRow) -> String| Column {
        header,
        width: rows
            .iter()
            .map(|r| cell(r).chars().count())
            .chain([header.chars().count()])
            .max()
            .unwrap_or(0),
        cell,
    };
    let mut chosen = vec![
        sized("tier", tier_cell),
        sized("input", |r| thousands(r.input_tokens)),
    ];
    let optional = [
        sized("lint", lint_cell),
        sized("output", |r| thousands(r.output_tokens)),
        sized("cat B", catalog_cap),
        sized("layer", |r| r.layer.to_string()),
        sized("RJPF", BudgetRow::flags),
    ];
    // Room left for the model after the highlight mark and the chosen columns.
    let room = |cols: &[Column]| {
        table_width.saturating_sub(2 + cols.iter().map(|c| c.width + 1).sum::<usize>())
    };
    for col in optional {
        let with = room(&chosen).saturating_sub(col.width + 1);
        if with < MIN_MODEL {
            break;
        }
        chosen.push(col);
    }
    chosen
}

/// The pane; `searching` while its search is being typed.
pub fn draw(
    frame: &mut Frame,
    area: Rect,
    pane: &BudgetsPane,
    focused: bool,
    searching: bool,
    theme: &Theme,
) {
    let sort = match pane.sort {
        SortColumn::Table => String::new(),
        s => format!(
            " · by {}{}",
            s.label(),
            if pane.sort_desc { " ↓" } else { " ↑" }
        ),
    };
    let search = if pane.filter.is_empty() {
        String::new()
    } else {
        format!(" · /{}", pane.filter)
    };
    let marked = if pane.marked.is_empty() {
        String::new()
    } else {
        format!(" · {} marked to send", pane.marked.len())
    };
    let title = format!(
        " 1 Budgets · {} of {} rows{search}{sort}{marked} ",
        pane.visible.len(),
        pane.rows.len()
    );
    let block = pane_block(title, focused, theme);
    frame.render_widget(block, area);
    let show_filter = searching || !pane.filter.is_empty();
    let ([table_area, detail_area, filter_area], detail) = layout(area, pane, searching, theme);
    let detail_height = detail_area.height;

    if pane.visible.is_empty() {
        frame.render_widget(
            Paragraph::new(shown(&format!(
                "no models match /{} (id, \"tier A\" or a layer) · esc clears",
                pane.filter
            )))
            .style(theme.muted)
            .wrap(Wrap { trim: true }),
            table_area,
        );
    } else {
        draw_table(frame, table_area, pane, theme);
    }
    if detail_height > 1 {
        let [rule, text] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(detail_area);
        frame.render_widget(
            Paragraph::new("─".repeat(rule.width as usize)).style(theme.muted),
            rule,
        );
        frame.render_widget(Paragraph::new(detail), text);
    }
    if show_filter {
        let cursor = if searching { "▏" } else { "" };
        let line = Line::from(vec![
            Span::styled("search ", theme.muted),
            Span::styled(shown(&format!("/{}{cursor}", pane.filter)), theme.accent),
            Span::styled(
                if searching {
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

/// The table, the row detail and the search line inside the pane's border, and the
/// detail's lines. The detail takes what it needs, but the table keeps at least 6 rows.
fn layout<'a>(
    area: Rect,
    pane: &BudgetsPane,
    searching: bool,
    theme: &Theme,
) -> ([Rect; 3], Vec<Line<'a>>) {
    let inner = area.inner(ratatui::layout::Margin::new(1, 1));
    let show_filter = searching || !pane.filter.is_empty();
    let detail = pane
        .selected_row()
        .map(|r| detail_lines(r, inner.width as usize, theme))
        .unwrap_or_default();
    let detail_height = (detail.len() as u16 + 1).min(inner.height.saturating_sub(8));
    let areas = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(detail_height),
        Constraint::Length(u16::from(show_filter)),
    ])
    .areas(inner);
    (areas, detail)
}

/// The index in `pane.visible` of the row drawn at screen row `y` of a pane in `area`.
pub fn row_at(area: Rect, pane: &BudgetsPane, searching: bool, y: u16) -> Option<usize> {
    let ([table, ..], _) = layout(area, pane, searching, &Theme::plain());
    // The first line is the header.
    let offset = y.checked_sub(table.y + 1)? as usize;
    let height = table.height.saturating_sub(1) as usize;
    if offset >= height {
        return None;
    }
    let index = window_start(pane.selected, height, pane.visible.len()) + offset;
    (index < pane.visible.len()).then_some(index)
}

fn draw_table(frame: &mut Frame, area: Rect, pane: &BudgetsPane, theme: &Theme) {
    // Only the rows that fit are built: a registry can add thousands.
    let height = area.height.saturating_sub(1) as usize;
    let start = window_start(pane.selected, height, pane.visible.len());
    let shown_rows: Vec<&BudgetRow> = pane.visible[start..(start + height).min(pane.visible.len())]
        .iter()
        .map(|&i| &pane.rows[i])
        .collect();
    // Columns are sized on every row, not just the ones on screen, so they hold still.
    let all: Vec<&BudgetRow> = pane.visible.iter().map(|&i| &pane.rows[i]).collect();
    let cols = columns(&all, area.width as usize);
    let model_width = (area.width as usize)
        .saturating_sub(2 + cols.iter().map(|c| c.width + 1).sum::<usize>())
        .max(1);
    let rows: Vec<Row> = shown_rows
        .iter()
        .map(|r| {
            let style = if r.lint.is_empty() {
                theme.base
            } else {
                theme.warn
            };
            // A model marked for sending (M) carries a leading `+`.
            let id = if pane.marked.contains(&r.id) {
                format!("+{}", display_id(r))
            } else {
                display_id(r)
            };
            let mut cells = vec![Cell::from(elide(&id, model_width))];
            cells.extend(cols.iter().map(|c| {
                let text = (c.cell)(r);
                // Numbers line up on the right.
                Cell::from(format!("{text:>w$}", w = c.width))
            }));
            Row::new(cells).style(style)
        })
        .collect();
    let mut header = vec!["model".to_string()];
    header.extend(
        cols.iter()
            .map(|c| format!("{:>w$}", c.header, w = c.width)),
    );
    let mut widths = vec![Constraint::Fill(1)];
    widths.extend(cols.iter().map(|c| Constraint::Length(c.width as u16)));
    let table = Table::new(rows, widths)
        .column_spacing(1)
        .header(Row::new(header).style(theme.accent))
        .row_highlight_style(theme.selected)
        .highlight_symbol("▶ ");
    let mut table_state = TableState::default();
    table_state.select(Some(pane.selected - start));
    frame.render_stateful_widget(table, area, &mut table_state);
}

/// The selected row in full: its whole id, every number, where it came from, its lints,
/// each wrapped to `width`.
fn detail_lines<'a>(r: &BudgetRow, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let kind = match r.match_kind {
        MatchKind::Exact => "",
        MatchKind::Prefix => " (prefix: the family)",
    };
    let cap = r
        .max_catalog_bytes
        .map(|b| format!("{} B", thousands(b)))
        .unwrap_or_else(|| "none".into());
    let parts = [
        (shown(&format!("{}{kind}", r.id)), theme.accent),
        (
            format!(
                "tier {} · input {} · output {} · catalog cap {cap}",
                tier_cell(r),
                thousands(r.input_tokens),
                thousands(r.output_tokens),
            ),
            theme.base,
        ),
        (
            shown(&format!(
                "flags {} · tokenizer {} · prompt {} · {} layer · {}",
                r.flags(),
                r.tokenizer.name(),
                r.prompt_variant,
                r.layer,
                r.source
            )),
            theme.muted,
        ),
    ];
    let lints = r
        .lint
        .iter()
        .map(|l| (shown(&format!("⚠ {l}")), theme.warn));
    let [id, numbers, origin] = parts;
    let wrapped = |(text, style): (String, Style)| {
        wrap(&text, width)
            .into_iter()
            .map(move |l| Line::styled(l, style))
    };
    // The numbers, then the window they make as a bar, then where they came from.
    let mut lines: Vec<Line> = [id, numbers].into_iter().flat_map(wrapped).collect();
    lines.push(window_line(r, width, theme));
    lines.extend(std::iter::once(origin).chain(lints).flat_map(wrapped));
    lines
}

/// The row's window as a bar: its input ceiling and the output it reserves,
/// `window 17,500 ▕iiiiiiiiiiiiiiiiiioo▏ out 8.6%` (the numbers are on the line above).
pub fn window_line<'a>(r: &BudgetRow, width: usize, theme: &Theme) -> Line<'a> {
    let window = r.input_tokens + r.output_tokens;
    if window == 0 {
        return Line::styled("window 0: this row gives the model no tokens", theme.warn);
    }
    let input = Series {
        style: theme.chart[1],
        letter: 'i',
        solid: true,
    };
    let output = Series {
        style: theme.chart[4],
        letter: 'o',
        solid: true,
    };
    let share = |n: usize| percent(n as f64 * 100.0 / window as f64);
    let head = format!("window {} ", thousands(window));
    let tail = format!(" out {}", share(r.output_tokens));
    let bar_w = width.saturating_sub(head.chars().count() + tail.chars().count() + 2);
    let mut spans = vec![
        Span::styled(head, theme.muted),
        Span::styled("▕", theme.muted),
    ];
    spans.extend(stacked_bar(
        &[(input, r.input_tokens), (output, r.output_tokens)],
        bar_w,
        theme,
    ));
    spans.push(Span::styled("▏", theme.muted));
    spans.push(Span::styled(tail, theme.base));
    Line::from(spans)
}
