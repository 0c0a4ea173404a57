//! The status line: a hint for where the operator is now, read from the live keymap (a
//! remapped key shows as remapped; an unbound action is not named), then the first note.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::action::Action;
use crate::tui::app::{Pane, State};
use crate::tui::keymap::Keymap;
use crate::tui::panes::shown;
use crate::tui::semantic::SemanticStatus;
use crate::tui::theme::Theme;

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
    if state.help.open {
        return "j/k scroll · pgup/pgdn page · esc or ? closes".into();
    }
    if state.catalog.entry_open {
        return "j/k scroll · pgup/pgdn page · esc or enter closes".into();
    }
    if state.prompt.attach_path.is_some() {
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
        let chips = if state.prompt.attachments.is_empty() {
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
    if state.typing_search_in(Pane::History) {
        // History searches when asked (its header says so too), the others as you type.
        return "type to search intents · enter applies · esc clears".into();
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
    } else if state.focus == Pane::History
        && state.history.expanded
        && state.history.replay.as_ref().is_none_or(|r| !r.picking)
    {
        // A plan open in full: the movement keys scroll it, not the list (tester 17 F2);
        // a replay picker over it takes j/k for its choices.
        &[
            (&[A::Quit], "quit"),
            (&[A::ToggleHelp], "help"),
            (&[A::Down, A::Up], "scroll"),
            (&[A::PageDown, A::PageUp], "page"),
            (&[A::Replay], "replay"),
            (&[A::Back], "close"),
        ]
    } else if state.focus == Pane::History {
        &[
            (&[A::Quit], "quit"),
            (&[A::ToggleHelp], "help"),
            (&[A::Down, A::Up], "move"),
            (&[A::Left, A::Right], "groups/plans"),
            (&[A::Open], "open"),
            (&[A::Filter], "search"),
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
    let mut spans = Vec::new();
    // The semantic layer's state leads while it matters (embedding, or failed): the
    // ranking on every pane depends on it.
    // Help shows the status whole; the status line names its key where it cuts a reason.
    let help_key = keymap.primary_label(&Action::ToggleHelp);
    if let Some(line) = state.semantic.line(help_key.as_deref()) {
        let style = match state.semantic {
            SemanticStatus::Failed(_) => theme.error,
            SemanticStatus::Embedding { .. } => theme.warn,
            _ => theme.ok,
        };
        spans.push(Span::styled(shown(&line), style));
        spans.push(Span::styled("  · ", theme.muted));
    }
    // Answers paid for and not stored lead while any wait: quitting loses none, but the
    // operator should know (and can store them again once the store is free).
    if let Some(line) = state
        .unstored
        .line(keymap.primary_label(&Action::StoreAgain).as_deref())
    {
        let style = if state.unstored.pending.is_empty() {
            theme.ok
        } else {
            theme.error
        };
        spans.push(Span::styled(shown(&line), style));
        spans.push(Span::styled("  · ", theme.muted));
    }
    spans.push(Span::styled(status_hint(state, keymap), theme.muted));
    if let Some(first) = state.note(0) {
        let whole = help_key
            .as_deref()
            .map(|k| format!(" ({k} shows all)"))
            .unwrap_or_default();
        spans.push(Span::styled(
            shown(&format!(
                "  · {} note(s){whole}: {first}",
                state.notes.len()
            )),
            theme.warn,
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
