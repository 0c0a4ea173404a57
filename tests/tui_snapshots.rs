//! Snapshots of the real screen, drawn through ratatui's TestBackend from a real workspace.

use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{initial_state, run_effect_now, ui};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    (dir, ws)
}

/// Apply actions the way the runtime does, running effects to completion.
fn apply(ws: &Workspace, state: &mut State, actions: impl IntoIterator<Item = Action>) {
    for action in actions {
        let mut queue = vec![action];
        while let Some(a) = queue.pop() {
            for effect in update(state, a) {
                queue.push(run_effect_now(&ws.preview_context(false), effect));
            }
        }
    }
}

fn started(ws: &Workspace) -> State {
    let mut state = initial_state(ws);
    let effects = state.recompact();
    for e in effects {
        let a = run_effect_now(&ws.preview_context(false), e);
        update(&mut state, a);
    }
    state
}

fn screen(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn tier_a_model_gets_the_catalog_untouched() {
    let (_d, ws) = workspace();
    let state = started(&ws);
    let s = screen(&state, 130, 36);
    assert!(s.contains("untouched: the full catalog fits"));
    insta::assert_snapshot!("tier_a_untouched", s);
}

#[test]
fn tier_c_model_compacts_and_cuts() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let row = state
        .visible
        .iter()
        .position(|&i| state.rows[i].id == "openrouter/openrouter/free")
        .unwrap();
    apply(&ws, &mut state, std::iter::repeat_n(Action::Down, row));
    let s = screen(&state, 130, 36);
    assert!(s.contains("openrouter/openrouter/free · tier C"));
    assert!(s.contains("schemas reduced to sorted field names"));
    insta::assert_snapshot!("tier_c_compacted", s);
}

#[test]
fn tier_override_and_full_view() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::CycleTier,
            Action::CycleTier,
            Action::CycleTier,
            Action::FocusCatalog,
            Action::ToggleFullView,
        ],
    );
    let s = screen(&state, 130, 36);
    assert!(s.contains("tier override C"));
    assert!(s.contains("full catalog"));
    assert!(s.contains('✂'), "cut entries are marked in the full view");
    insta::assert_snapshot!("override_c_full_view", s);
}

#[test]
fn filter_and_sort_budgets() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::Filter,
            Action::Paste("free".into()),
            Action::Confirm,
            Action::SortNext,
        ],
    );
    let s = screen(&state, 130, 30);
    assert!(s.contains("filter /free"));
    insta::assert_snapshot!("filtered_free", s);
}

#[test]
fn help_overlay_comes_from_the_keymap() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::ToggleHelp]);
    let s = screen(&state, 120, 40);
    assert!(s.contains("tier override: auto → A → B → C"));
    insta::assert_snapshot!("help", s);
}

#[test]
fn too_small_a_terminal_says_so() {
    let (_d, ws) = workspace();
    let state = started(&ws);
    let s = screen(&state, 60, 12);
    assert!(s.contains("needs at least 80×20"), "{s}");
}

#[test]
fn prompt_pane_previews_a_pasted_prompt_beside_the_catalog_it_shapes() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    // The Tier C fallback row, then paste into the Prompt pane.
    apply(&ws, &mut state, [Action::Bottom, Action::FocusPrompt]);
    let empty_allowance = state.compaction.as_ref().unwrap().allowance.tokens;
    apply(
        &ws,
        &mut state,
        [Action::Paste(
            "remember this launch note,\ndraft a blog from it\nand make an illustration".into(),
        )],
    );
    assert_eq!(state.prompt.lines().len(), 3, "a paste is text, not keys");
    let preview = state.preview.as_ref().expect("preview after the debounce");
    assert_eq!(preview.planner.categories.len(), 3);
    let view = state.compaction.as_ref().unwrap();
    assert!(
        view.allowance.tokens < empty_allowance,
        "the prompt comes out of the allowance"
    );
    assert!(view.compacted.trim.cut_policy.contains("ranked"));
    let s = screen(&state, 140, 44);
    assert!(s.contains("[Context: media + writing + memory task"));
    insta::assert_snapshot!("prompt_pane_tier_c", s);
}

#[test]
fn a_stale_preview_is_dropped() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    // Two edits: the first one's debounce fires after the second edit and asks for nothing.
    let first = update(&mut state, Action::Paste("take a screenshot".into()));
    let second = update(&mut state, Action::Paste(" of the page".into()));
    let mut due = Vec::new();
    for e in first.into_iter().chain(second) {
        due.push(run_effect_now(&ws.preview_context(false), e));
    }
    assert!(update(&mut state, due[0].clone()).is_empty());
    assert!(!update(&mut state, due[1].clone()).is_empty());
}
