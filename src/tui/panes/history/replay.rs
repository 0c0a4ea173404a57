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
        for (i, choice) in r.choices.iter().enumerate() {
            let (mark, style) = if i == r.chosen {
                ("▶ ", theme.selected)
            } else {
                ("  ", theme.base)
            };
            // The model id gets the room first, cut in the middle to keep the tail that
            // tells ids apart (tester 5 C5: at 120×40 each was cut to two letters); the
            // note goes beside it when it fits, else under it.
            let room = width.saturating_sub(mark.chars().count());
            let shown_choice = if i == 0 {
                clip(choice, room)
            } else {
                crate::format::elide(&shown(choice), room)
            };
            let note = "  (the plan's own model)";
            let beside = i == 1 && shown_choice.chars().count() + note.len() <= room;
            lines.push(Line::styled(
                format!("{mark}{shown_choice}{}", if beside { note } else { "" }),
                style,
            ));
            if i == 1 && !beside {
                lines.push(Line::styled(
                    clip(&format!("    {}", note.trim()), width),
                    theme.muted,
                ));
            }
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
