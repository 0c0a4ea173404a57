//! A replay beside the plan it replays: the picker, progress while it runs, then what
//! today's decoder, classifier and guard made of the answer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::core::failure::Failure;
use crate::core::plan::GuardedPlan;
use crate::core::response::DecodeStage;
use crate::live::replay::Verdict;
use crate::tui::panes::history::replay_state::{ReplayResult, ReplayView};
use crate::tui::panes::{clip, pane_block, shown};
use crate::tui::theme::Theme;

pub fn draw(frame: &mut Frame, area: Rect, r: &ReplayView, theme: &Theme) {
    let title = if r.picking {
        format!(" Replay {} · enter runs · esc closes ", r.plan_id)
    } else if r.running.is_some() {
        format!(" Replay {} {} · esc cancels ", r.plan_id, r.label)
    } else {
        format!(" Replay {} {} · esc closes ", r.plan_id, r.label)
    };
    let block = pane_block(title, true, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    if r.picking {
        lines.push(Line::styled("Replay with:", theme.accent));
        // Each choice's lines (a note may go under the plan's own model).
        let groups: Vec<Vec<Line>> = r
            .choices
            .iter()
            .enumerate()
            .map(|(i, choice)| choice_lines(i, choice, i == r.chosen, width, theme))
            .collect();
        // The choices that fit, the chosen one always among them (tester 34 F8: the
        // selection moved off the screen, and enter ran a live call on a model never
        // shown), with how many are above and below.
        let room = (inner.height as usize).saturating_sub(1);
        let (start, end) = window_around(&groups, r.chosen, room);
        if start > 0 {
            lines.push(Line::styled(format!("  ↑ {start} more"), theme.muted));
        }
        for group in &groups[start..end] {
            lines.extend(group.iter().cloned());
        }
        if end < groups.len() {
            lines.push(Line::styled(
                format!("  ↓ {} more", groups.len() - end),
                theme.muted,
            ));
        }
    } else if let Some(p) = &r.progress {
        lines.push(Line::styled(format!("running {}…", r.label), theme.accent));
        lines.push(Line::styled(shown(p), theme.muted));
    } else if let Some(e) = &r.error {
        lines.push(Line::styled("the replay could not run:", theme.error));
        lines.push(Line::styled(shown(e), theme.error));
    } else if let Some(result) = &r.result {
        lines.extend(result_lines(result, theme));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// One choice of the picker: the model id gets the room first, cut in the middle to keep
/// the tail that tells ids apart (tester 5 C5: at 120×40 each was cut to two letters); the
/// note goes beside the plan's own model when it fits, else under it.
fn choice_lines<'a>(
    i: usize,
    choice: &str,
    chosen: bool,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let (mark, style) = if chosen {
        ("▶ ", theme.selected)
    } else {
        ("  ", theme.base)
    };
    let room = width.saturating_sub(mark.chars().count());
    let shown_choice = if i == 0 {
        clip(choice, room)
    } else {
        crate::format::elide(&shown(choice), room)
    };
    let note = "  (the plan's own model)";
    let beside = i == 1 && shown_choice.chars().count() + note.len() <= room;
    let mut lines = vec![Line::styled(
        format!("{mark}{shown_choice}{}", if beside { note } else { "" }),
        style,
    )];
    if i == 1 && !beside {
        lines.push(Line::styled(
            clip(&format!("    {}", note.trim()), width),
            theme.muted,
        ));
    }
    lines
}

/// The groups `start..end` shown in `room` lines with `chosen` among them, leaving a line
/// for each "more" marker that is needed: from the top while the chosen one fits there,
/// else ending at the chosen one.
fn window_around(groups: &[Vec<Line>], chosen: usize, room: usize) -> (usize, usize) {
    let size =
        |range: std::ops::Range<usize>| -> usize { groups[range].iter().map(Vec::len).sum() };
    if size(0..groups.len()) <= room {
        return (0, groups.len());
    }
    let chosen = chosen.min(groups.len().saturating_sub(1));
    // From the top: the chosen one and the "↓ more" line must fit.
    let mut end = 0;
    // (one line kept for the "↓ more" marker)
    while end < groups.len() && size(0..end + 1) < room {
        end += 1;
    }
    if chosen < end {
        return (0, end.max(1));
    }
    // Else the chosen one last, with both markers.
    let mut start = chosen + 1;
    while start > 0 && size(start - 1..chosen + 1) + 2 <= room {
        start -= 1;
    }
    (start.min(chosen), chosen + 1)
}

fn failure_lines<'a>(lead: &str, f: &Failure, theme: &Theme) -> Vec<Line<'a>> {
    vec![
        Line::styled(format!("{lead}: {}", f.class), theme.error),
        Line::styled(shown(&f.detail), theme.base),
        Line::styled(format!("action: {}", f.action), theme.muted),
    ]
}

fn plan_lines<'a>(plan: &GuardedPlan, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::styled(
        format!(
            "{} · {} step(s) · {}",
            plan.outcome,
            plan.steps.len(),
            plan.complexity.as_str()
        ),
        theme.ok,
    )];
    for s in &plan.steps {
        let style = if s.tool == crate::core::history::UNKNOWN_TOOL {
            theme.warn
        } else {
            theme.base
        };
        lines.push(Line::from(vec![
            Span::raw(format!("{:>2} ", s.order)),
            Span::styled(shown(&s.tool), style),
        ]));
    }
    for d in &plan.demoted {
        lines.push(Line::styled(
            shown(&format!("step {}: {}", d.order, d.reason)),
            theme.warn,
        ));
    }
    lines.push(Line::styled(
        shown(&format!("→ {}", plan.rewritten_prompt)),
        theme.muted,
    ));
    lines
}

fn result_lines<'a>(result: &ReplayResult, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    match result {
        ReplayResult::Offline(o) => match (o.verdict, &o.plan, &o.failure) {
            (Verdict::Recovered, Some(plan), _) => {
                lines.push(Line::styled(
                    format!(
                        "recovered today by the {} stage",
                        o.stage.map_or("?", DecodeStage::as_str)
                    ),
                    theme.ok,
                ));
                lines.extend(plan_lines(plan, theme));
            }
            (Verdict::NotAnAnswer, _, Some(f)) => {
                lines.extend(failure_lines("nothing to decode", f, theme))
            }
            (_, _, Some(f)) => lines.extend(failure_lines("still failing", f, theme)),
            _ => lines.push(Line::styled("no verdict", theme.muted)),
        },
        ReplayResult::Live(l) => {
            lines.push(Line::styled(
                shown(&format!(
                    "{} via {} · {} ms · {} attempt(s){}",
                    l.model,
                    l.provider,
                    l.duration_ms,
                    l.attempts,
                    l.status.map_or(String::new(), |s| format!(" · HTTP {s}"))
                )),
                theme.muted,
            ));
            lines.push(Line::styled(
                shown(&format!(
                    "request: {} tokens in, {} entries, max {} · finish {}",
                    l.request.input_tokens,
                    l.request.catalog_entries,
                    l.request.max_tokens,
                    l.finish.as_ref().map_or("none".into(), |f| f.label())
                )),
                theme.muted,
            ));
            for note in &l.rebuild_notes {
                lines.push(Line::styled(shown(note), theme.warn));
            }
            if let Some(t) = &l.two_pass {
                lines.push(Line::styled(
                    shown(&format!("two-pass: {}", t.note)),
                    theme.muted,
                ));
            }
            if l.cancelled {
                lines.push(Line::styled("cancelled: nothing stored", theme.warn));
                return lines;
            }
            if let Some(f) = &l.failure {
                lines.extend(failure_lines("failed", f, theme));
            }
            if let Some(plan) = &l.plan {
                lines.push(Line::styled(
                    format!(
                        "decoded by the {} stage",
                        l.stage.map_or("?", DecodeStage::as_str)
                    ),
                    theme.ok,
                ));
                lines.extend(plan_lines(plan, theme));
            }
            if let Some(id) = &l.stored_id {
                lines.push(Line::styled(
                    shown(&format!("stored as {id}")),
                    theme.accent,
                ));
            }
            if let Some(why) = &l.store_error {
                lines.push(Line::styled(
                    shown(&format!(
                        "NOT STORED, kept until stored again (see the status line): {why}"
                    )),
                    theme.error,
                ));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    /// Tester 34 F8: past the rows that fit, the picker's selection left the screen and
    /// enter ran a live call on a model never shown. Every row chosen is on the screen,
    /// with how many are above and below.
    #[test]
    fn the_chosen_model_is_always_on_the_screen() {
        let others: Vec<String> = (0..40).map(|i| format!("t/model-{i:02}")).collect();
        let mut v = ReplayView::pick("pl-1", "t/own", &others);
        let theme = Theme::default();
        let mut terminal = Terminal::new(TestBackend::new(60, 12)).unwrap();
        for step in 0..v.choices.len() + 2 {
            terminal.draw(|f| draw(f, f.area(), &v, &theme)).unwrap();
            let screen = crate::tui::screen_text(&terminal);
            let chosen = &v.choices[v.chosen];
            let shown_row = format!("▶ {}", clip(chosen, 56));
            assert!(
                screen.contains(shown_row.trim_end()),
                "step {step}: {chosen} not on the screen:\n{screen}"
            );
            assert_eq!(
                screen.contains("↓"),
                v.chosen + 1 < v.choices.len(),
                "{screen}"
            );
            v.move_choice(true);
        }
        assert_eq!(v.chosen, v.choices.len() - 1);
    }
}
