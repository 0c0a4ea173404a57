//! The Prompt pane: a text box for the instruction (bracketed paste: a paste is text, never
//! keys; one of more than a few lines is an attachment), the attachments as chips under it,
//! and beside it the preview — planner, ranking with explanations, gate, request — drawn from
//! the one planned request every pane reads.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::core::chart::WindowBar;
use crate::core::gate::Admission;
use crate::format::thousands;
use crate::preview::Preview;
use crate::tui::app::{Pane, State};
use crate::tui::panes::chart::window_lines;
use crate::tui::panes::{clip, pane_block, request_title, shown};
use crate::tui::send::SentArm;
use crate::tui::theme::Theme;

/// A run of at least this many text keys in one burst (keys that arrived faster than a
/// person types: see `tui::BURST_GAP_MS`) is a paste from a terminal without bracketed paste.
pub const PASTE_MIN_KEYS: usize = 4;

/// The character a key stands for inside pasted text: a plain character, Enter as a newline,
/// Tab as a tab. Anything else (a ctrl or alt chord, an arrow, esc) ends the paste.
pub fn pasted_char(ev: &KeyEvent) -> Option<char> {
    if ev
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return None;
    }
    match ev.code {
        KeyCode::Char(c) => Some(c),
        KeyCode::Enter => Some('\n'),
        KeyCode::Tab => Some('\t'),
        _ => None,
    }
}

/// The text of the run of text keys at the start of `keys`, when it is long enough to be a
/// paste: inserted as one edit, previewed once, and its Tabs and Enters are text, never
/// "next pane" or anything else a key would do.
pub fn paste_run(keys: &[KeyEvent]) -> Option<(String, usize)> {
    let text: String = keys.iter().map_while(pasted_char).collect();
    let n = text.chars().count();
    (n >= PASTE_MIN_KEYS).then_some((text, n))
}

/// The text box, the attachment chips under it, and the attach key's path line.
pub fn draw_input(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let focused = state.focus == Pane::Prompt;
    let text = state.prompt_text();
    let title = format!(
        " 3 Prompt · {} lines, {} bytes{} · A/B {}{}{} ",
        state.prompt.lines().len(),
        thousands(text.len()),
        match state.attachments.len() {
            0 => String::new(),
            n => format!(" · {n} attached"),
        },
        if state.ab { "on" } else { "off" },
        if state.marked.is_empty() {
            String::new()
        } else {
            format!(" · +{} marked", state.marked.len())
        },
        if focused {
            " · esc leaves"
        } else {
            " · p to type"
        }
    );
    let block = pane_block(title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let chips = chip_lines(state, inner.width as usize, theme);
    // The text box keeps at least a line; chips beyond what is left are not drawn.
    let chips_height = (chips.len() as u16).min(inner.height.saturating_sub(1));
    let [text_area, chips_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(chips_height)]).areas(inner);
    frame.render_widget(Paragraph::new(chips), chips_area);
    let mut input = state.prompt.clone();
    input.set_style(theme.base);
    input.set_cursor_line_style(theme.base);
    input.set_placeholder_style(theme.muted);
    if !focused {
        input.set_cursor_style(theme.base);
    }
    frame.render_widget(&input, text_area);
}

/// Fewer characters of a chip's name than this, and its facts go on a line of their own.
const CHIP_LABEL_MIN: usize = 16;

/// One line per attachment — `▸ name or first line · size · tokens · gate decision` — the
/// selected one marked, then the path line while the attach key has it open, then the last
/// attach error. Sizes come from the planned request; a chip added since shows `planning…`.
pub fn chip_lines<'a>(state: &State, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let planned = state.request.as_deref().map(|r| &r.planned.attachments);
    let mut out = Vec::new();
    for (i, (label, a)) in state
        .chip_labels
        .iter()
        .zip(state.attachments.iter())
        .enumerate()
    {
        let selected = i == state.chip;
        let view = planned
            .and_then(|p| p.get(i))
            .filter(|v| v.name == a.name && v.size.bytes == a.text.len());
        let facts = match view {
            Some(v) => format!(
                "{} B · {}{} tok · {}",
                thousands(v.size.bytes),
                if v.size.exact { "" } else { "~" },
                thousands(v.size.tokens),
                v.gate.admission.label()
            ),
            None => format!("{} B · planning…", thousands(a.text.len())),
        };
        let mark = if selected { "▸ " } else { "  " };
        let style = if selected { theme.accent } else { theme.base };
        let gate_style = match view.map(|v| v.gate.admission) {
            Some(Admission::Raw) => theme.ok,
            Some(Admission::Tight | Admission::Briefing) => theme.warn,
            None => theme.muted,
        };
        let label = shown(label);
        let room = width.saturating_sub(2);
        let one_line = label.chars().count() + 3 + facts.chars().count();
        if one_line <= room || room >= CHIP_LABEL_MIN + 3 + facts.chars().count() {
            // Name and facts on one line, the name giving way first.
            let label_room = room.saturating_sub(3 + facts.chars().count());
            out.push(Line::from(vec![
                Span::styled(mark, style),
                Span::styled(crate::format::elide(&label, label_room), style),
                Span::styled(" · ", theme.muted),
                Span::styled(facts, gate_style),
            ]));
        } else {
            // Too narrow for both: the name, then its facts under it.
            out.push(Line::from(vec![
                Span::styled(mark, style),
                Span::styled(crate::format::elide(&label, room), style),
            ]));
            out.push(Line::from(vec![
                Span::raw("    "),
                Span::styled(clip(&facts, width.saturating_sub(4)), gate_style),
            ]));
        }
    }
    if let Some(path) = &state.attach_path {
        out.push(Line::from(vec![
            Span::styled("attach file: ", theme.accent),
            Span::raw(shown(&format!("{path}▏"))),
            Span::styled(" enter attaches · esc cancels", theme.muted),
        ]));
    } else if state.attach_reading.is_some() {
        out.push(Line::styled("attach: reading the file…", theme.muted));
    }
    if let Some(e) = &state.attach_error {
        out.push(Line::styled(
            clip(&format!("attach: {e}"), width),
            theme.error,
        ));
    }
    out
}

/// The live preview beside the text box: the model and tier it was computed for in its
/// title, the window bar, then planner, ranking, gate and request. With no prompt, the bar
/// is the catalog's request (the same model and tier as the Catalog pane).
pub fn draw_preview(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let snapshot = state.request.as_deref();
    let updating = if state.planning.is_some() {
        " · updating…"
    } else {
        ""
    };
    let title = match snapshot.map(|r| &r.planned) {
        Some(p) => request_title(
            "Preview",
            &p.model,
            p.tier,
            p.tier_overridden,
            updating,
            area.width,
        ),
        None => format!(" Preview{updating} "),
    };
    let block = pane_block(title, false, theme);
    let inner = block.inner(area);
    let width = inner.width as usize;
    // Sent results first: they are what the operator just asked for.
    let mut lines: Vec<Line> = send_lines(state, width, theme);
    lines.extend(window_section(snapshot.map(|r| &r.window), width, theme));
    if let Some(e) = snapshot.and_then(|r| r.cache_error.as_deref()) {
        lines.push(Line::styled(
            clip(&format!("output cache: {e}"), width),
            theme.error,
        ));
    }
    match snapshot.map(|r| &r.planned) {
        Some(p) if p.asked => lines.extend(preview_lines(p, width, theme)),
        _ => lines.push(Line::styled(
            "Planner categories, the ranked catalog, the gate decision and the request appear here.",
            theme.muted,
        )),
    }
    let scroll = state.preview_scroll.min(lines.len().saturating_sub(1)) as u16;
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), area);
}

/// `WINDOW 17,500 = 16,000 in + 1,500 out` (and `· over by N` when the request does not
/// fit), the bar, its legend.
pub fn window_section<'a>(bar: Option<&WindowBar>, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let Some(bar) = bar else {
        return vec![
            section("WINDOW", theme),
            Line::styled("no request planned yet (compacting…)", theme.muted),
        ];
    };
    let mut head = vec![Span::styled(
        clip(
            &format!(
                "WINDOW {} = {} in + {} out",
                thousands(bar.window()),
                thousands(bar.input_tokens),
                thousands(bar.output_tokens)
            ),
            width,
        ),
        theme.accent,
    )];
    if bar.over_by() > 0 {
        head.push(Span::styled(
            format!(" · over by {}", thousands(bar.over_by())),
            theme.error,
        ));
    }
    let mut lines = vec![Line::from(head)];
    lines.extend(window_lines(bar, width, theme));
    lines
}

fn section<'a>(title: &str, theme: &Theme) -> Line<'a> {
    Line::styled(title.to_string(), theme.accent)
}

pub fn preview_lines<'a>(p: &Preview, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    let pl = &p.planner;
    out.push(section("PLANNER", theme));
    if let Some(h) = &pl.hint {
        out.push(Line::raw(clip(h, width)));
    }
    out.push(Line::raw(clip(
        &format!(
            "tools {}/{} · memory {}/{} · thinking {}{}",
            pl.kept,
            pl.total,
            pl.memory.max_facts,
            pl.memory.max_tokens,
            pl.thinking,
            pl.full_set_reason
                .as_deref()
                .map(|r| format!(" · all: {r}"))
                .unwrap_or_default()
        ),
        width,
    )));
    for s in pl.scores.iter().filter(|s| s.score != 0.0).take(6) {
        let style = if s.fired { theme.ok } else { theme.muted };
        out.push(Line::from(vec![
            Span::styled(if s.fired { "● " } else { "○ " }, style),
            Span::styled(
                clip(
                    &format!(
                        "{:<10} {:>4.1}/{:<3} {}",
                        s.category,
                        s.score,
                        s.threshold,
                        s.reasons.join(", ")
                    ),
                    width.saturating_sub(2),
                ),
                style,
            ),
        ]));
    }
    let r = &p.ranking;
    out.push(section(
        &format!(
            "RANKING · confidence {:.2}{}",
            r.confidence.value,
            if r.escalate {
                " · filter would escalate"
            } else {
                ""
            }
        ),
        theme,
    ));
    for (i, e) in r.top.iter().enumerate().take(8) {
        out.push(Line::raw(clip(
            &format!("{:>2}. {}", i + 1, e.one_line()),
            width,
        )));
    }
    let g = &p.gate;
    let gate_style = match g.admission {
        Admission::Raw => theme.ok,
        Admission::Tight => theme.warn,
        Admission::Briefing => theme.warn,
    };
    out.push(section("GATE", theme));
    out.push(Line::styled(
        clip(
            &format!(
                "{}: {} tokens of {} available",
                g.admission.label(),
                thousands(p.prompt.tokens),
                thousands(g.budget.available())
            ),
            width,
        ),
        gate_style,
    ));
    if let Some(b) = &g.briefing {
        out.push(Line::raw(clip(&format!("briefing: {}", b.hint), width)));
        for l in b.text.lines().take(8) {
            out.push(Line::styled(clip(l, width), theme.muted));
        }
    }
    for a in &p.attachments {
        let style = match a.gate.admission {
            Admission::Raw => theme.ok,
            Admission::Tight | Admission::Briefing => theme.warn,
        };
        out.push(Line::styled(
            clip(
                &format!(
                    "attachment {} ({}): {} tokens → {}{} · ranker read {} outline lines",
                    a.name,
                    a.kind.label(),
                    thousands(a.size.tokens),
                    a.gate.admission.label(),
                    if a.gate.briefing.is_some() {
                        format!(" ({} tokens)", thousands(a.gate.admitted_tokens))
                    } else {
                        String::new()
                    },
                    a.outline.len()
                ),
                width,
            ),
            style,
        ));
        if let Some(b) = &a.gate.briefing {
            out.push(Line::styled(
                clip(&format!("  briefing: {}", b.hint), width),
                theme.muted,
            ));
        }
    }
    let q = &p.request;
    out.push(section(
        &format!(
            "REQUEST · {} tokens · max_tokens {}",
            thousands(q.input_tokens),
            thousands(q.max_tokens)
        ),
        theme,
    ));
    for part in &q.parts {
        out.push(Line::raw(clip(
            &format!(
                "{:<14} {:<6} {:>8} tokens",
                part.part,
                part.role,
                thousands(part.tokens)
            ),
            width,
        )));
    }
    // The past-plans part: which decompositions, from which plans.
    for d in p.past_steps.iter().flat_map(|prior| &prior.sent) {
        out.push(Line::styled(
            clip(
                &format!(
                    "prior: {} ({} plans: {})",
                    d.tools.join(" → "),
                    d.plans,
                    d.plan_ids.join(", ")
                ),
                width,
            ),
            theme.muted,
        ));
    }
    out.push(Line::raw(clip(
        &format!(
            "cost ${:.6} uncached · ${:.6} cached · {}",
            q.cost.input_uncached, q.cost.input_cached, q.cache_note
        ),
        width,
    )));
    out
}

/// The last send, side by side: one column per model and arm, above the preview.
pub fn send_lines<'a>(state: &State, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let v = &state.send;
    let mut out = Vec::new();
    if let Some(e) = &v.error {
        out.push(Line::styled(
            clip(&format!("send: {e}"), width),
            theme.error,
        ));
        out.push(Line::raw(""));
    }
    if v.running.is_some() {
        out.push(Line::styled("Sending… (esc cancels)", theme.accent));
        for (label, line) in &v.progress {
            out.push(Line::raw(clip(&format!("  {label}: {line}"), width)));
        }
        out.push(Line::raw(""));
        return out;
    }
    let Some(o) = &v.outcome else {
        return out;
    };
    out.push(section(
        "Sent (ctrl+n next · ctrl+o opens in History)",
        theme,
    ));
    const LABEL: usize = 14;
    let n = o.results.len().max(1);
    let col = (width.saturating_sub(LABEL) / n).max(8);
    let dash = || "-".to_string();
    let cell = |text: &str| format!("{:<col$}", clip(text, col.saturating_sub(1)));
    let row = |label: &str, each: &dyn Fn(&SentArm) -> String| -> Line<'a> {
        let mut text = format!("{label:<LABEL$}");
        for r in &o.results {
            text.push_str(&cell(&each(r)));
        }
        Line::raw(clip(&text, width))
    };
    let mut header = format!("{:<LABEL$}", "");
    for (i, r) in o.results.iter().enumerate() {
        let mark = if i == v.selected { "▶" } else { " " };
        header.push_str(&cell(&format!("{mark}{} [{}]", r.model, r.arm)));
    }
    out.push(Line::styled(clip(&header, width), theme.accent));
    out.push(row("valid plan", &|s| s.live.valid_plan_cell()));
    out.push(row("steps", &|s| s.live.steps_cell()));
    out.push(row("unknown tools", &|s| s.live.unknown_tools_cell()));
    out.push(row("tokens in/out", &|s| s.live.tokens_cell()));
    out.push(row("cached tokens", &|s| s.live.cached_tokens_cell()));
    out.push(row("latency", &|s| {
        if s.live.not_sent.is_some() {
            dash()
        } else {
            format!("{} ms", s.live.facts.latency_ms)
        }
    }));
    out.push(row("cost", &|s| {
        s.live
            .facts
            .cost_usd
            .map_or_else(dash, |c| format!("${c:.6}"))
    }));
    out.push(row("plan id", &|s| {
        s.live.stored_id.clone().unwrap_or_else(dash)
    }));
    for r in &o.results {
        if let Some(why) = &r.live.not_sent {
            out.push(Line::styled(
                clip(&format!("{} [{}]: {why}", r.model, r.arm), width),
                theme.warn,
            ));
        }
    }
    out.push(Line::raw(""));
    out
}
