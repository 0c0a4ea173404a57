//! What the console's integration tests share: actions applied the way the runtime applies
//! them, a TestBackend render, and reading rows and the Catalog's as-sent ids off a state or
//! a screen.

use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{EffectContext, run_effect_now, ui};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::collections::BTreeMap;

/// Apply actions the way the runtime does, running every effect to completion.
pub fn apply(ctx: &EffectContext, state: &mut State, actions: impl IntoIterator<Item = Action>) {
    for action in actions {
        let mut queue = vec![action];
        while let Some(a) = queue.pop() {
            for effect in update(state, a) {
                queue.push(run_effect_now(ctx, effect));
            }
        }
    }
}

/// The screen at `width` × `height`, plain theme, default keys.
pub fn render(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
        .unwrap();
    terminal.backend().to_string()
}

/// The entry ids the Catalog pane's as-sent viewer lists, in order, read off the screen
/// (each viewer line starts with its line number, so a line is counted once).
pub fn as_sent_on_screen(screen: &str) -> Vec<String> {
    let mut by_line: BTreeMap<usize, String> = BTreeMap::new();
    for l in screen.lines() {
        let Some(at) = l
            .find("{\"name\":\"")
            .map(|i| i + 9)
            .or_else(|| l.find("{\"id\":\"").map(|i| i + 7))
        else {
            continue;
        };
        let before: String = l[..at]
            .chars()
            .rev()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let n: usize = before.chars().rev().collect::<String>().parse().unwrap();
        let id = l[at..].split('"').next().unwrap().to_string();
        by_line.insert(n, id);
    }
    by_line.into_values().collect()
}

/// Select `model`'s Budgets row and mark it, as the operator does to send to it beside the
/// row they type for.
pub fn mark_model(ctx: &EffectContext, state: &mut State, model: &str) {
    let row = row_of(state, model);
    apply(ctx, state, [Action::SelectRow(row), Action::MarkModel]);
}

/// The Budgets row showing `model`.
pub fn row_of(state: &State, model: &str) -> u64 {
    state
        .budgets
        .visible
        .iter()
        .position(|&i| state.budgets.rows[i].id == model)
        .unwrap_or_else(|| panic!("no row {model} in Budgets")) as u64
}
