//! The help modal and the status line, both read from the live keymap: a remapped key shows
//! as remapped everywhere. Help is modal: while it is open it takes every key (it scrolls;
//! esc or ? closes it; ctrl+c still quits), so nothing typed there reaches a pane.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::app::{Pane, State};
use crate::tui::keymap::Keymap;
use crate::tui::panes::{clip, pane_block, shown};
use crate::tui::theme::Theme;

/// Keys that are not in the keymap (text boxes, the modal itself, the mouse).
const FIXED: &[(&str, &str)] = &[
    ("", ""),
    ("esc, ?", "close this help (it takes every other key)"),
    ("j/k, ↑/↓, pgup/pgdn", "scroll this help"),
    ("typing", "in Prompt and in a search, keys are text"),
    ("esc, tab", "leave the Prompt pane; esc clears a search"),
    ("ctrl+c", "quit, even while typing"),
    ("mouse", "click: focus a pane, pick a row · wheel: scroll"),
];

/// Every help line: the keymap's bindings, then the fixed keys.
pub fn lines(keymap: &Keymap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = keymap
        .help_lines()
        .into_iter()
        .map(|(k, d)| (k, d.to_string()))
        .collect();
    out.extend(FIXED.iter().map(|(k, d)| (k.to_string(), d.to_string())));
    out.push(("paste".into(), crate::tui::attach::paste_rule()));
    out
}

/// What a key does while help is open: scroll, close, or (ctrl+c) quit. Nothing else.
pub fn key(keymap: &Keymap, ev: &KeyEvent) -> Option<Action> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let fixed = match ev.code {
        KeyCode::Char('c') if ctrl => Some(Action::Quit),
        KeyCode::Esc | KeyCode::Char('?') | KeyCode::F(1) => Some(Action::ToggleHelp),
        KeyCode::Up | KeyCode::Char('k') => Some(Action::Up),
        KeyCode::Down | KeyCode::Char('j') => Some(Action::Down),
        KeyCode::PageUp => Some(Action::PageUp),
        KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::PageDown),
        KeyCode::Home | KeyCode::Char('g') => Some(Action::Top),
        KeyCode::End | KeyCode::Char('G') => Some(Action::Bottom),
        _ => None,
    };
    fixed.or_else(|| match keymap.action_for(ev)? {
        Action::ToggleHelp | Action::Back => Some(Action::ToggleHelp),
        a @ (Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom) => Some(a),
        _ => None,
    })
}

/// True for what an operator does (keys, a paste, a click): while help is open these go
/// to help. Background answers still land where they belong.
pub fn takes(action: &Action) -> bool {
    !matches!(
        action,
        Action::Quit
            | Action::Resize
            | Action::Planned(..)
            | Action::AttachmentRead(..)
            | Action::PreviewDue(_)
            | Action::HistoryAnswered(..)
            | Action::ReplayProgress(..)
            | Action::Replayed(..)
    )
}

/// Apply an operator's action while help is open.
pub fn update(state: &mut State, action: Action) {
    let page = state.page.max(1);
    let last = state.help_len.saturating_sub(page + 4);
    state.help_scroll = match action {
        Action::ToggleHelp | Action::Back => {
            state.show_help = false;
            0
        }
        Action::Up => state.help_scroll.saturating_sub(1),
        Action::Down => state.help_scroll + 1,
        Action::PageUp => state.help_scroll.saturating_sub(page),
        Action::PageDown => state.help_scroll + page,
        Action::Top => 0,
        Action::Bottom => last,
        _ => state.help_scroll,
    }
    .min(last);
}

/// The help modal over the panes, as tall as the body allows, scrolled.
pub fn draw(frame: &mut Frame, body: Rect, state: &State, keymap: &Keymap, theme: &Theme) {
    let all = lines(keymap);
    let key_width = all
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(22);
    let width = 84.min(body.width);
    let height = (all.len() as u16 + 2).min(body.height);
    let area = Rect {
        x: body.x + (body.width - width) / 2,
        y: body.y + (body.height - height) / 2,
        width,
        height,
    };
    let inner_height = height.saturating_sub(2) as usize;
    let scroll = state
        .help_scroll
        .min(all.len().saturating_sub(inner_height));
    let text_width = (width as usize).saturating_sub(key_width + 4);
    let shown_lines: Vec<Line> = all
        .iter()
        .skip(scroll)
        .take(inner_height)
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{:>key_width$}  ", clip(keys, key_width)),
                    theme.accent,
                ),
                Span::raw(clip(what, text_width)),
            ])
        })
        .collect();
    let end = (scroll + inner_height).min(all.len());
    let title = if all.len() > inner_height {
        format!(
            " keys (live keymap) · {}–{end} of {} · j/k scroll · esc closes ",
            scroll + 1,
            all.len()
        )
    } else {
        " keys (live keymap) · esc closes ".to_string()
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(shown_lines).block(pane_block(title, true, theme)),
        area,
    );
}

/// `key label` for each action the keymap still binds; unbound actions are left out, so
/// the status line never names a key that does nothing.
fn hints(keymap: &Keymap, wanted: &[(&[Action], &str)]) -> Vec<String> {
    wanted
        .iter()
        .filter_map(|(actions, label)| {
            let keys: Option<Vec<String>> =
                actions.iter().map(|a| keymap.primary_label(a)).collect();
            keys.map(|k| format!("{} {label}", k.join("/")))
        })
        .collect()
}

/// The status line's hint for where the operator is now, from the live keymap.
pub fn status_hint(state: &State, keymap: &Keymap) -> String {
    use Action as A;
    if state.show_help {
        return "j/k scroll · pgup/pgdn page · esc or ? closes".into();
    }
    if state.catalog.entry_open {
        return "j/k scroll · pgup/pgdn page · esc or enter closes".into();
    }
    if state.attach_path.is_some() {
        return "type the file's path · enter attaches · esc cancels".into();
    }
    if state.focus == Pane::Prompt {
        // These keys are fixed while typing (see `tui::key_action`); only the clear key is
        // the keymap's (a ctrl or alt binding of clear_prompt).
        let clear = keymap
            .primary_label(&A::ClearPrompt)
            .filter(|k| k.starts_with("ctrl+") || k.starts_with("alt+"))
            .map(|k| format!(" · {k} clear"))
            .unwrap_or_default();
        // The send keys are the keymap's too, when ctrl or alt chords.
        let chord = |a: &Action, label: &str| {
            keymap
                .chord_label(a)
                .map(|k| format!(" · {k} {label}"))
                .unwrap_or_default()
        };
        let chips = if state.attachments.is_empty() {
            String::new()
        } else {
            format!(
                "{}{}",
                chord(&A::RemoveAttachment, "remove chip"),
                chord(&A::NextAttachment, "next chip")
            )
        };
        let send = format!(
            "{}{chips}{}{}{}{}",
            chord(&A::Attach, "attach"),
            chord(&A::Send, "send"),
            chord(&A::ToggleAb, "A/B"),
            chord(&A::NextSent, "next result"),
            chord(&A::OpenSent, "open result"),
        );
        return format!(
            "type or paste{send}{clear} · enter new line · pgup/pgdn scroll preview · tab/esc leave"
        );
    }
    if state.filter_editing {
        return "type to search · enter keep · esc clear".into();
    }
    let wanted: &[(&[Action], &str)] = if state.focus == Pane::Catalog {
        &[
            (&[A::Quit], "quit"),
            (&[A::ToggleHelp], "help"),
            (&[A::FocusNext], "pane"),
            (&[A::Down, A::Up], "move"),
            (&[A::Open], "open entry"),
            (&[A::Filter], "search"),
            (&[A::ToggleFullView], "full"),
            (&[A::CycleTier], "tier"),
            (&[A::Back], "clear search"),
        ]
    } else if state.focus == Pane::History {
        &[
            (&[A::Quit], "quit"),
            (&[A::ToggleHelp], "help"),
            (&[A::Down, A::Up], "move"),
            (&[A::Left, A::Right], "groups/plans"),
            (&[A::Open], "open"),
            (&[A::Replay], "replay"),
            (&[A::ToggleGaps], "gaps"),
            (&[A::Back], "back"),
            (&[A::CycleOutcome], "outcome"),
            (&[A::CycleDrift], "drift"),
            (&[A::CycleCaller], "caller"),
            (&[A::CycleModel], "model"),
            (&[A::CycleSource], "source"),
            (&[A::ClearFilters], "clear"),
        ]
    } else {
        &[
            (&[A::Quit], "quit"),
            (&[A::ToggleHelp], "help"),
            (&[A::FocusNext], "pane"),
            (&[A::FocusPrompt], "prompt"),
            (&[A::Down, A::Up], "move"),
            (&[A::MarkModel], "mark"),
            (&[A::CycleTier], "tier"),
            (&[A::ToggleFullView], "full"),
            (&[A::Filter], "search"),
            (&[A::SortNext], "sort"),
        ]
    };
    hints(keymap, wanted).join(" · ")
}

/// The status line: the hint, then the first note (outside text: shown).
pub fn draw_status(frame: &mut Frame, area: Rect, state: &State, keymap: &Keymap, theme: &Theme) {
    let mut spans = vec![Span::styled(status_hint(state, keymap), theme.muted)];
    if !state.notes.is_empty() {
        spans.push(Span::styled(
            shown(&format!(
                "  · {} note(s): {}",
                state.notes.len(),
                state.notes[0]
            )),
            theme.warn,
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
