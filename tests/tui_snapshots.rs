//! Snapshots of the real screen, drawn through ratatui's TestBackend from a real workspace.

mod common;

use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{Effect, Pane};
use ctxconsole::tui::app::{State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::panes::mouse;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{
    EffectContext, apply_keys, initial_state, key_action, run_effect_now, start, ui,
};
use ctxconsole::workspace::StoreChoice;
use ctxconsole::workspace::{CompactReport, Workspace, WorkspaceOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    (dir, ws)
}

/// Effects run against the workspace's preview inputs and its (seeded) history store.
fn ctx(ws: &Workspace) -> EffectContext {
    start(ws, &ws.config().unwrap(), &Default::default(), false).0
}

/// Apply actions the way the runtime does, running effects to completion.
fn apply(ws: &Workspace, state: &mut State, actions: impl IntoIterator<Item = Action>) {
    for action in actions {
        let mut queue = vec![action];
        while let Some(a) = queue.pop() {
            for effect in update(state, a) {
                queue.push(run_effect_now(&ctx(ws), effect));
            }
        }
    }
}

fn started(ws: &Workspace) -> State {
    let mut state = initial_state(ws);
    // The front end's clock, fixed: the sample history's year (snapshots do not age).
    state.history.this_year = Some(2026);
    let effects = state.replan();
    for e in effects {
        let a = run_effect_now(&ctx(ws), e);
        update(&mut state, a);
    }
    state
}

/// Asserts that every one of `needles` is on the screen `s`, naming the first that is not.
#[track_caller]
fn shows_every(s: &str, needles: &[&str]) {
    for needle in needles {
        assert!(s.contains(needle), "{needle} missing:\n{s}");
    }
}

fn screen(state: &State, width: u16, height: u16) -> String {
    screen_with(state, width, height, &Keymap::default())
}

fn screen_with(state: &State, width: u16, height: u16, keymap: &Keymap) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| ui::draw(f, state, &Theme::plain(), keymap))
        .unwrap();
    terminal.backend().to_string()
}

/// Imports JSON plan lines into the workspace's history store under `label`.
fn import_plan_lines(ws: &Workspace, label: &str, lines: &str) {
    let mut store = ws.open_history(&StoreChoice::default()).unwrap();
    store
        .import_plans(
            label,
            lines.as_bytes(),
            &ws.pipeline_ids(),
            Default::default(),
            |_| {},
        )
        .unwrap();
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Keys as the runtime applies them: the keymap (or the focused text box) turns each into
/// an action, and effects run to completion.
fn press(ws: &Workspace, state: &mut State, keymap: &Keymap, keys: &[KeyEvent]) {
    for k in keys {
        if let Some(a) = key_action(state, keymap, k) {
            apply(ws, state, [a]);
        }
    }
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
        .budgets
        .visible
        .iter()
        .position(|&i| state.budgets.rows[i].id == "openrouter/openrouter/free")
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
    assert!(s.contains("search /free"));
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
    let empty_allowance = state
        .request
        .as_ref()
        .unwrap()
        .planned
        .compaction
        .allowance
        .tokens;
    apply(
        &ws,
        &mut state,
        [Action::Paste(
            "remember this launch note,\ndraft a blog from it\nand make an illustration".into(),
        )],
    );
    assert_eq!(
        state.prompt.input.lines().len(),
        3,
        "a paste is text, not keys"
    );
    let preview = &state.request.as_ref().expect("planned").planned;
    assert_eq!(preview.planner.categories.len(), 3);
    let view = &preview.compaction;
    assert!(
        view.allowance.tokens < empty_allowance,
        "the prompt comes out of the allowance"
    );
    assert!(view.trim.cut_policy.contains("ranked"));
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
        due.push(run_effect_now(&ctx(&ws), e));
    }
    assert!(update(&mut state, due[0].clone()).is_empty());
    assert!(!update(&mut state, due[1].clone()).is_empty());
}

#[test]
fn history_pane_shows_groups_plans_drift_and_models() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusHistory]);
    let h = &state.history;
    assert!(h.error.is_none(), "{:?}", h.error);
    assert!(h.plans.as_ref().unwrap().total >= 300);
    assert!(h.detail.is_some(), "the first plan is shown in full");
    assert!(!h.model_rows.is_empty());
    let s = screen(&state, 150, 40);
    shows_every(
        &s,
        &[
            "✓ followed",
            "Groups ·",
            "Models · outcomes → tier",
            "executed",
        ],
    );
    insta::assert_snapshot!("history_pane", s);
}

#[test]
fn history_filters_to_failed_plans_and_opens_one() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::FocusHistory,
            Action::CycleOutcome,
            Action::CycleOutcome,
            Action::CycleOutcome,
        ],
    );
    let h = &state.history;
    let page = h.plans.as_ref().unwrap();
    assert!(page.total > 50);
    assert!(page.rows.iter().all(|p| p.failure_class.is_some()));
    apply(&ws, &mut state, [Action::Down, Action::Open]);
    assert!(state.history.expanded);
    let detail = state.history.detail.as_ref().unwrap();
    assert_eq!(
        Some(&detail.record.id),
        state.history.selected_plan().map(|p| &p.id)
    );
    let s = screen(&state, 150, 40);
    assert!(s.contains("raw response:") && s.contains("failed: "), "{s}");
    insta::assert_snapshot!("history_failed_plan_open", s);
    // Esc closes the plan; a group narrows the plans to it and esc leaves it again.
    apply(
        &ws,
        &mut state,
        [
            Action::Back,
            Action::ClearFilters,
            Action::Left,
            Action::Open,
        ],
    );
    let h = &state.history;
    let group = h.groups.as_ref().unwrap().rows[0].clone();
    assert_eq!(h.plans.as_ref().unwrap().total, group.plans);
    assert!(h.filter_label().contains("group="));
    apply(&ws, &mut state, [Action::Back]);
    assert!(state.history.filter.is_empty());
}

/// History → failed plans → walk to one `pick` accepts → open it.
fn open_failed_plan(
    ws: &Workspace,
    state: &mut State,
    pick: impl Fn(&ctxconsole::core::history::PlanRecord) -> bool,
) {
    apply(
        ws,
        state,
        [
            Action::FocusHistory,
            Action::CycleOutcome,
            Action::CycleOutcome,
            Action::CycleOutcome,
        ],
    );
    for _ in 0..200 {
        if state
            .history
            .detail
            .as_ref()
            .is_some_and(|d| pick(&d.record))
        {
            break;
        }
        apply(ws, state, [Action::Down]);
    }
    assert!(
        state
            .history
            .detail
            .as_ref()
            .is_some_and(|d| pick(&d.record))
    );
    apply(ws, state, [Action::Open]);
}

#[test]
fn replay_offline_from_the_history_pane_shows_the_recovery_beside_the_original() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    open_failed_plan(&ws, &mut state, |r| {
        r.failure_class.as_deref() == Some("constrained_deadlock")
            && r.raw_response.as_deref().is_some_and(|t| t.contains("```"))
    });
    apply(&ws, &mut state, [Action::Replay]);
    let s = screen(&state, 150, 40);
    assert!(
        s.contains("Replay with:") && s.contains("offline: today's decoder"),
        "{s}"
    );
    insta::assert_snapshot!("history_replay_picker", s);
    apply(&ws, &mut state, [Action::Open]);
    let s = screen(&state, 150, 40);
    assert!(s.contains("recovered today by the fence stage"), "{s}");
    assert!(
        s.contains("failed: constrained_deadlock"),
        "the original stays beside it: {s}"
    );
    insta::assert_snapshot!("history_replay_offline_result", s);
    // Esc closes the replay, then the plan.
    apply(&ws, &mut state, [Action::Back]);
    assert!(state.history.expanded);
    assert!(state.history.replay.is_none());
}

/// Tester 5 C5: at 120×40 the replay picker cut each model id to two letters (`of…`, `t5…`),
/// so no model could be told from another. Each id keeps its distinguishing tail.
#[test]
fn the_replay_picker_at_120x40_shows_which_model_each_choice_is() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    open_failed_plan(&ws, &mut state, |r| {
        r.failure_class.as_deref() == Some("constrained_deadlock")
    });
    // From the plan as the list shows it, not opened in full: the narrowest the picker gets.
    apply(&ws, &mut state, [Action::Back, Action::Replay]);
    assert!(!state.history.expanded);
    let choices = state.history.replay.as_ref().unwrap().choices.clone();
    assert!(choices.len() > 2, "{choices:?}");
    let s = screen(&state, 120, 40);
    for model in &choices[1..] {
        let chars: Vec<char> = model.chars().collect();
        let tail: String = chars[chars.len().saturating_sub(8)..].iter().collect();
        assert!(
            s.contains(&tail),
            "{model}: its tail {tail:?} is cut away:\n{s}"
        );
    }
    insta::assert_snapshot!("history_replay_picker_120x40", s);
}

#[test]
fn replay_live_from_the_history_pane_stores_a_linked_plan() {
    let server = common::llm_server::LlmServer::start();
    let (dir, _) = workspace();
    std::fs::write(
        dir.path().join("config.toml"),
        server.config_routing_everything(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    let mut state = started(&ws);
    open_failed_plan(&ws, &mut state, |r| {
        r.failure_class.as_deref() == Some("reasoning_only")
    });
    let original = state.history.detail.as_ref().unwrap().record.clone();
    // Offline → the plan's own model.
    apply(
        &ws,
        &mut state,
        [Action::Replay, Action::Down, Action::Open],
    );
    let view = state.history.replay.as_ref().unwrap();
    assert_eq!(view.label, format!("live on {}", original.model));
    let s = screen(&state, 150, 40);
    let stored = format!("stored as {}.r1", original.id);
    assert!(s.contains(&stored), "{s}");
    assert!(s.contains("decoded by the direct stage"), "{s}");
    // The plan's detail is read again and lists the replay it now has.
    let replays = &state.history.detail.as_ref().unwrap().replays;
    assert_eq!(replays.len(), 1);
    assert_eq!(replays[0].id, format!("{}.r1", original.id));
    assert!(s.contains("replays (1, newest first)"), "{s}");
    assert!(!server.requests.lock().unwrap().is_empty());
    let store = ws.open_history(&Default::default()).unwrap();
    let replay = store.plan(&format!("{}.r1", original.id)).unwrap().unwrap();
    assert_eq!(
        replay.record.replay_of.as_deref(),
        Some(original.id.as_str())
    );
    let after = store.plan(&original.id).unwrap().unwrap();
    assert_eq!(after.record, original);
    assert_eq!(after.replays.len(), 1);
}

#[test]
fn a_broken_store_leaves_the_console_working() {
    let (dir, ws) = workspace();
    std::fs::write(dir.path().join("history.sqlite"), vec![7u8; 4096]).unwrap();
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    assert!(ctx.history.is_none());
    for e in update(&mut state, Action::FocusHistory) {
        update(&mut state, run_effect_now(&ctx, e));
    }
    let s = screen(&state, 120, 30);
    assert!(s.contains("not a ctxconsole history store"), "{s}");
    assert_eq!(
        std::fs::read(dir.path().join("history.sqlite")).unwrap(),
        vec![7u8; 4096]
    );
}

#[test]
fn help_is_a_modal_that_scrolls_and_takes_every_key_until_closed() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    press(&ws, &mut state, &keymap, &[key(KeyCode::Char('?'))]);
    assert!(state.help.open);
    // q, t, tab, p: none of them reach the panes while help is open.
    press(
        &ws,
        &mut state,
        &keymap,
        &[
            key(KeyCode::Char('q')),
            key(KeyCode::Char('t')),
            key(KeyCode::Tab),
            key(KeyCode::Char('p')),
        ],
    );
    assert!(!state.quit, "? then q must not quit");
    assert!(state.help.open);
    assert_eq!(state.tier_override, None);
    assert_eq!(state.focus, ctxconsole::tui::app::Pane::Budgets);
    // At 80×24 help does not fit: it says where it is and scrolls.
    let top = screen(&state, 80, 24);
    assert!(top.contains("1–"), "{top}");
    press(&ws, &mut state, &keymap, &[key(KeyCode::Char('G'))]);
    let bottom = screen(&state, 80, 24);
    assert!(bottom.contains("click: focus a pane"), "{bottom}");
    assert!(!top.contains("click: focus a pane"), "{top}");
    insta::assert_snapshot!("help_80x24_scrolled_to_the_end", bottom);
    // Esc closes it; then q quits.
    press(&ws, &mut state, &keymap, &[key(KeyCode::Esc)]);
    assert!(!state.help.open);
    press(&ws, &mut state, &keymap, &[key(KeyCode::Char('q'))]);
    assert!(state.quit);
}

#[test]
fn the_status_line_follows_a_remapped_keymap() {
    let (_d, ws) = workspace();
    let state = started(&ws);
    let keymap = Keymap::with_overlay(
        "[keys]\n\"q\" = \"none\"\n\"x\" = \"quit\"\n\"t\" = \"none\"\n\"z\" = \"cycle_tier\"\n\"/\" = \"none\"\n",
        "keymap.toml",
    )
    .unwrap();
    let s = screen_with(&state, 160, 30, &keymap);
    let status = s.lines().nth(29).unwrap();
    assert!(
        status.contains("x quit") && status.contains("z tier"),
        "{status}"
    );
    assert!(
        !status.contains("q quit") && !status.contains("t tier"),
        "{status}"
    );
    assert!(
        !status.contains("search"),
        "an unbound action is not offered: {status}"
    );
    let default = screen(&state, 160, 30);
    let status = default.lines().nth(29).unwrap();
    assert!(
        status.contains("q quit") && status.contains("t tier"),
        "{status}"
    );
}

#[test]
fn an_empty_store_says_what_is_empty_instead_of_loading_for_ever() {
    let (dir, ws) = workspace();
    let store = StoreChoice {
        path: Some(dir.path().join("empty.sqlite")),
        sample: false,
    };
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &store, false);
    let mut queue = update(&mut state, Action::FocusHistory);
    while let Some(e) = queue.pop() {
        queue.extend(update(&mut state, run_effect_now(&ctx, e)));
    }
    let s = screen(&state, 120, 40);
    assert!(!s.contains("loading…"), "{s}");
    assert!(
        s.contains("no plans yet: the history store is empty"),
        "{s}"
    );
    assert!(s.contains("no model outcomes"), "{s}");
    insta::assert_snapshot!("history_empty_store", s);
}

#[test]
fn ctrl_u_clears_the_prompt_and_long_lines_wrap() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    apply(&ws, &mut state, [Action::FocusPrompt]);
    let long = "summarise the launch note and then draft a blog post from it with an illustration at the end";
    apply(&ws, &mut state, [Action::Paste(long.into())]);
    // Two edits: a clear is not an undo of the last one.
    apply(&ws, &mut state, [Action::Paste(" please".into())]);
    let s = screen(&state, 120, 40);
    // The box is about 50 columns wide: the line's start and its end are both on screen.
    assert!(
        s.contains("summarise the launch") && s.contains("end please"),
        "{s}"
    );
    assert!(
        !s.contains("Raw:") && !s.contains("Tight:"),
        "debug names: {s}"
    );
    press(
        &ws,
        &mut state,
        &keymap,
        &[KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)],
    );
    assert_eq!(state.prompt_text(), "");
    assert!(
        !state.request.as_ref().unwrap().planned.asked,
        "the preview follows the cleared box"
    );
}

fn text_keys(text: &str) -> Vec<KeyEvent> {
    text.chars()
        .map(|c| match c {
            '\n' => key(KeyCode::Enter),
            '\t' => key(KeyCode::Tab),
            c => key(KeyCode::Char(c)),
        })
        .collect()
}

#[test]
fn a_paste_without_bracketed_paste_is_one_edit_and_one_preview() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    apply(&ws, &mut state, [Action::FocusPrompt]);
    // What a terminal without bracketed paste sends: the text as keys, all at once. The Tab
    // must not change pane, the q must not quit, the Enter is a new line.
    let text = "draft a blog\tquickly\nand make an illustration";
    let effects = apply_keys(&mut state, &keymap, &text_keys(text));
    assert!(!state.quit);
    assert_eq!(state.focus, Pane::Prompt);
    assert_eq!(state.prompt_text(), text);
    assert!(
        matches!(
            &effects[..],
            [Effect::After {
                action: Action::PreviewDue(_),
                ..
            }]
        ),
        "one preview for the whole paste, not one per key: {} effects",
        effects.len()
    );
    // Keys a person types one at a time stay keys: Esc leaves the pane.
    apply_keys(&mut state, &keymap, &[key(KeyCode::Esc)]);
    assert_eq!(state.focus, Pane::Budgets);
    // Outside a text box, a burst is keys (held j moves the selection).
    apply_keys(&mut state, &keymap, &text_keys("jjjj"));
    assert_eq!(state.budgets.selected, 4);
}

/// Tester 17 F1: below 80×20 the console draws only "needs at least 80×20 … press q to
/// quit", but keys went on to the hidden pane: the `q` the message asks for was typed into
/// the prompt, and ctrl+s sent it. Now only the quit key (and ctrl+c) acts; other keys and
/// pastes are dropped, and the screen says so.
#[test]
fn below_the_smallest_screen_only_the_quit_key_acts() {
    let (_d, ws) = workspace();
    let keymap = Keymap::default();
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    apply_keys(&mut state, &keymap, &text_keys("find flights"));
    state.resized(40, 8);
    let screen = screen(&state, 40, 8);
    assert!(screen.contains("needs at least 80×20"), "{screen}");
    let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
    let effects = apply_keys(&mut state, &keymap, &[key(KeyCode::Char('x')), ctrl_s]);
    assert!(effects.is_empty());
    assert!(update(&mut state, Action::Paste("pasted".into())).is_empty());
    assert_eq!(state.prompt_text(), "find flights");
    assert!(!state.quit);
    apply_keys(&mut state, &keymap, &[key(KeyCode::Char('q'))]);
    assert!(state.quit);
    assert_eq!(state.prompt_text(), "find flights");
    // Back at a size that is drawn, keys are the prompt's again.
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    state.resized(80, 20);
    apply_keys(&mut state, &keymap, &[key(KeyCode::Char('q'))]);
    assert!(!state.quit);
    assert_eq!(state.prompt_text(), "q");
}

/// Tester 8 F12: a line feed arrives as ctrl+j (what `tmux send-keys -l`, scripted input and
/// some terminals' unbracketed paste deliver for `\n`), and the text area took ctrl+j as
/// "delete to the start of the line": seven pasted lines kept only the last, and a ctrl+j
/// typed by hand wiped the line. In the Prompt box a line feed is a new line, alone or in a
/// burst, and more than 5 lines are an attachment as with Enters.
#[test]
fn a_line_feed_in_the_prompt_box_is_a_new_line_not_a_deletion() {
    let (_d, ws) = workspace();
    let keymap = Keymap::default();
    let lf = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL);
    let lf_keys = |text: &str| -> Vec<KeyEvent> {
        text.chars()
            .map(|c| if c == '\n' { lf } else { key(KeyCode::Char(c)) })
            .collect()
    };
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    apply_keys(&mut state, &keymap, &lf_keys("aaa\nbbb"));
    assert_eq!(state.prompt_text(), "aaa\nbbb");
    // Typed one key at a time: a new line too.
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    for k in lf_keys("ab\ncd") {
        apply_keys(&mut state, &keymap, &[k]);
    }
    assert_eq!(state.prompt_text(), "ab\ncd");
    // Windows text (CR LF) as keys: one line break each, not two (tester 9 T9-6).
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    let crlf: Vec<KeyEvent> = "x1\r\nx2\r\nx3\r\nx4"
        .chars()
        .map(|c| match c {
            '\r' => key(KeyCode::Enter),
            '\n' => lf,
            c => key(KeyCode::Char(c)),
        })
        .collect();
    apply_keys(&mut state, &keymap, &crlf);
    assert_eq!(state.prompt_text(), "x1\nx2\nx3\nx4");
    assert!(state.prompt.attachments.is_empty(), "4 lines are not 7");
    // Seven lines: an attachment, nothing lost.
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt]);
    let lines: Vec<String> = (1..=7).map(|i| format!("line{i}")).collect();
    apply_keys(&mut state, &keymap, &lf_keys(&lines.join("\n")));
    assert_eq!(state.prompt_text(), "");
    assert_eq!(state.prompt.attachments.len(), 1, "one chip");
    assert_eq!(state.prompt.attachments[0].text, lines.join("\n"));
}

#[test]
fn an_enter_in_a_burst_ends_a_one_line_field_and_the_keys_after_it_are_keys() {
    let (_d, ws) = workspace();
    let keymap = Keymap::default();
    // The Budgets search, as a fast typist or a script sends it: `/local⏎p` in one burst.
    // The Enter keeps the search (not a newline dropped from a "paste"), and the p after
    // it opens the Prompt instead of going into the search.
    let mut state = started(&ws);
    apply_keys(&mut state, &keymap, &text_keys("/local\np"));
    assert_eq!(state.budgets.filter, "local");
    assert!(!state.filter_editing, "the Enter ended the search");
    assert_eq!(state.focus, Pane::Prompt, "the p after it acted as a key");
    // A burst after the Enter that is long enough to be a paste goes to the Prompt box,
    // where an Enter in a paste stays text.
    let mut state = started(&ws);
    apply_keys(&mut state, &keymap, &text_keys("/local\npdraft\nthis"));
    assert_eq!(state.budgets.filter, "local");
    assert_eq!(state.prompt_text(), "draft\nthis");

    // The History search: the Enter runs it.
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusHistory]);
    apply_keys(&mut state, &keymap, &text_keys("/blog\n"));
    assert!(!state.history.searching && !state.filter_editing);
    assert_eq!(state.history.filter.text.as_deref(), Some("blog"));

    // The attach path line: the Enter asks for the file, and the line closes.
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusPrompt, Action::Attach]);
    let effects = apply_keys(&mut state, &keymap, &text_keys("/tmp/notes.txt\n"));
    assert!(
        state.prompt.attach_path.is_none(),
        "the Enter ended the line"
    );
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ReadAttachment { path, .. } if path == "/tmp/notes.txt")),
        "{} effects",
        effects.len()
    );
}

fn mouse_at(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn a_click_focuses_a_pane_or_picks_a_row_and_the_wheel_scrolls() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let screen_area = Rect::new(0, 0, 120, 40);
    let click = |c, r| mouse_at(MouseEventKind::Down(MouseButton::Left), c, r);
    let s = screen(&state, 120, 40);
    // Row 4 of the table: title bar (0), pane border (1), header (2), rows from 3.
    let row4 = s.lines().nth(3 + 4).unwrap();
    let wanted = state.budgets.rows[state.budgets.visible[4]].id.clone();
    assert!(row4.contains(&wanted[..6]), "{row4}");
    let a = mouse::actions(&state, screen_area, &click(5, 7));
    apply(&ws, &mut state, a);
    assert_eq!(state.budgets.selected, 4);
    // Planned for the row as the table names it: a prefix row with its `*` (tester 49 F6).
    assert_eq!(
        state
            .request
            .as_ref()
            .unwrap()
            .planned
            .model
            .trim_end_matches('*'),
        wanted
    );
    // A click on the Catalog focuses it; the wheel over Budgets focuses Budgets and moves.
    let a = mouse::actions(&state, screen_area, &click(100, 10));
    apply(&ws, &mut state, a);
    assert_eq!(state.focus, Pane::Catalog);
    let wheel = mouse_at(MouseEventKind::ScrollDown, 5, 10);
    let a = mouse::actions(&state, screen_area, &wheel);
    apply(&ws, &mut state, a);
    assert_eq!(state.focus, Pane::Budgets);
    assert_eq!(state.budgets.selected, 4 + mouse::WHEEL_ROWS);
    // History: a click in the groups list picks that list and that group.
    apply(&ws, &mut state, [Action::FocusHistory]);
    let a = mouse::actions(&state, screen_area, &click(10, 6));
    apply(&ws, &mut state, a);
    assert_eq!(
        state.history.list,
        ctxconsole::tui::panes::history::HistoryList::Groups
    );
    assert_eq!(state.history.group_selected, 3);
    let a = mouse::actions(&state, screen_area, &click(60, 5));
    apply(&ws, &mut state, a);
    assert_eq!(
        state.history.list,
        ctxconsole::tui::panes::history::HistoryList::Plans
    );
    assert_eq!(state.history.plan_selected, 2);
    let selected = state.history.selected_plan().unwrap().id.clone();
    assert_eq!(state.history.detail.as_ref().unwrap().record.id, selected);
    // Help open: the wheel scrolls it, a click does nothing.
    apply(&ws, &mut state, [Action::ToggleHelp]);
    let a = mouse::actions(&state, screen_area, &click(60, 8));
    apply(&ws, &mut state, a);
    assert_eq!(state.history.plan_selected, 2);
    let a = mouse::actions(&state, screen_area, &wheel);
    apply(&ws, &mut state, a);
    assert_eq!(state.help.scroll, mouse::WHEEL_ROWS);
}

/// One search is typed at a time, into the focused pane: a Budgets search draws its cursor
/// in Budgets and nowhere else (the Catalog header drew `/…▏` too, from the one shared flag).
#[test]
fn a_budgets_search_draws_no_search_line_in_the_catalog() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    press(&ws, &mut state, &keymap, &text_keys("/"));
    assert!(state.filter_editing);
    press(&ws, &mut state, &keymap, &text_keys("gpt"));
    let s = screen(&state, 120, 40);
    assert!(
        s.contains("gpt▏"),
        "the Budgets search shows its cursor: {s}"
    );
    assert!(
        s.contains("as sent  (f toggles · / search"),
        "the Catalog header keeps its hint while Budgets is searched: {s}"
    );
    assert!(
        !s.contains("/▏"),
        "no empty search cursor in the Catalog: {s}"
    );
}

/// Tester 34 F16: with an OpenAI `tools` catalog, "full original" showed the entry as
/// converted to the routing guide, not as the file has it. The view says it is the entry as
/// read, from which form, converted.
#[test]
fn an_entry_of_a_converted_catalog_says_it_is_shown_as_read() {
    let dir = tempfile::tempdir().unwrap();
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("tests/data/mcp/github.json").unwrap())
            .unwrap();
    let tools: Vec<serde_json::Value> = mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            serde_json::json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}})
        })
        .collect();
    std::fs::write(
        dir.path().join("catalog.json"),
        serde_json::to_string(&tools).unwrap(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    assert_eq!(ws.catalog_origin.format, "OpenAI tools");
    let mut state = started(&ws);
    let keymap = Keymap::default();
    apply(
        &ws,
        &mut state,
        [Action::FocusCatalog, Action::ToggleFullView],
    );
    press(&ws, &mut state, &keymap, &text_keys("/create_issue"));
    press(
        &ws,
        &mut state,
        &keymap,
        &[key(KeyCode::Enter), key(KeyCode::Enter)],
    );
    assert!(state.catalog.entry_open);
    let s = screen(&state, 120, 120);
    assert!(
        s.contains("in full, as read (the file's OpenAI tools form, converted)"),
        "{s}"
    );
    assert!(!s.contains("full original"), "{s}");
}

#[test]
fn the_catalog_searches_as_you_type_and_enter_opens_an_entry_as_sent_and_in_full() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    // A Tier C row, so some entries are trimmed and some cut.
    let row = state
        .budgets
        .visible
        .iter()
        .position(|&i| state.budgets.rows[i].id == "openrouter/openrouter/free")
        .unwrap();
    apply(&ws, &mut state, std::iter::repeat_n(Action::Down, row));
    apply(
        &ws,
        &mut state,
        [Action::FocusCatalog, Action::ToggleFullView],
    );
    press(&ws, &mut state, &keymap, &text_keys("/"));
    assert!(state.filter_editing);
    // Typed one key at a time: each narrows the list (q is text here, not quit).
    press(&ws, &mut state, &keymap, &text_keys("memory"));
    assert!(!state.quit);
    let s = screen(&state, 120, 40);
    assert!(s.contains("/memory▏ · 11 of 72 entries"), "{s}");
    assert!(
        s.contains("1 Budgets"),
        "the Catalog searched, not Budgets: {s}"
    );
    press(&ws, &mut state, &keymap, &[key(KeyCode::Enter)]);
    assert!(!state.filter_editing);
    insta::assert_snapshot!("catalog_search_memory", screen(&state, 120, 40));
    // Enter on an entry: it opens, with its fate, as sent and in full.
    press(
        &ws,
        &mut state,
        &keymap,
        &[key(KeyCode::Down), key(KeyCode::Down), key(KeyCode::Enter)],
    );
    assert!(state.catalog.entry_open);
    let s = screen(&state, 120, 40);
    assert!(s.contains("as sent") && s.contains("full original"), "{s}");
    assert!(s.contains("not sent: cut by the budget"), "{s}");
    // Its size as `compact`'s cut list gives it (tester 34 F16).
    let trim = &state.request.as_ref().unwrap().planned.compaction.trim;
    let cut = trim.cut.iter().find(|c| s.contains(&c.name)).unwrap();
    assert!(
        s.contains(&format!("cut by the budget ({})", trim.cut_size(cut))),
        "{s}"
    );
    assert!(
        s.contains("\"description\": \"Store a fact"),
        "pretty JSON: {s}"
    );
    insta::assert_snapshot!("catalog_entry_open_cut", s);
    // Esc closes it; a pipeline that is sent shows as sent, trimmed.
    press(&ws, &mut state, &keymap, &[key(KeyCode::Esc)]);
    assert!(!state.catalog.entry_open);
    press(&ws, &mut state, &keymap, &text_keys("jjjj"));
    press(&ws, &mut state, &keymap, &[key(KeyCode::Enter)]);
    let s = screen(&state, 120, 40);
    assert!(s.contains("builtin.remember-and-blog"), "{s}");
    // The steps that changed this entry (a pipeline has no limitations for step 3 to drop),
    // not every step the compaction applied.
    assert!(s.contains("sent, trimmed by steps 1, 2, 4, 5, 6"), "{s}");
    assert!(!s.contains("(not in the request)"), "{s}");
    insta::assert_snapshot!("catalog_entry_open_sent", s);
    press(&ws, &mut state, &keymap, &[key(KeyCode::Esc)]);
    // Esc again clears the search.
    press(&ws, &mut state, &keymap, &[key(KeyCode::Esc)]);
    assert!(state.catalog.search.is_empty());
    assert_eq!(state.catalog_lines(), state.full_catalog.lines().count());
}

/// Every pane at the three sizes operators use, reviewed by eye.
#[test]
fn every_pane_at_80x24_120x40_and_160x50() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let mut screens: Vec<(&str, State)> = vec![("budgets", state.clone())];
    apply(
        &ws,
        &mut state,
        [Action::FocusCatalog, Action::ToggleFullView],
    );
    screens.push(("catalog_full", state.clone()));
    apply(
        &ws,
        &mut state,
        [
            Action::ToggleFullView,
            Action::FocusBudgets,
            Action::Bottom,
            Action::FocusPrompt,
            Action::Paste("summarise this launch note and draft a blog post from it".into()),
        ],
    );
    screens.push(("prompt", state.clone()));
    apply(&ws, &mut state, [Action::FocusHistory]);
    screens.push(("history", state.clone()));
    apply(&ws, &mut state, [Action::ToggleHelp]);
    screens.push(("help", state.clone()));
    for (name, state) in &screens {
        for (w, h) in [(80, 24), (120, 40), (160, 50)] {
            let s = screen(state, w, h);
            assert!(!s.contains("needs at least"), "{name} {w}x{h}");
            insta::assert_snapshot!(format!("size_{name}_{w}x{h}"), s);
        }
    }
}

#[test]
fn budgets_elide_ids_and_show_lints_at_80_120_and_160_columns() {
    let (dir, _) = workspace();
    std::fs::write(
        dir.path().join("budgets.toml"),
        "[[model]]\nid = \"example-provider/a-very-long-model-name-for-testing-2025-06-01\"\ninput_tokens = 8000\noutput_tokens = 16000\ntier = \"C\"\nsource = \"test\"\n",
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    let mut state = started(&ws);
    let row = state
        .budgets
        .visible
        .iter()
        .position(|&i| state.budgets.rows[i].id.starts_with("example-provider/"))
        .unwrap();
    apply(&ws, &mut state, std::iter::repeat_n(Action::Down, row));
    for (w, h) in [(80, 24), (120, 40), (160, 50)] {
        let s = screen(&state, w, h);
        // The selected row's table line: elided with … and flagged in the lint column.
        let line = s.lines().find(|l| l.contains('▶')).unwrap();
        assert!(
            line.contains('…') && line.contains("2025-06-01"),
            "{w}: {line}"
        );
        assert!(line.contains("⚠1"), "{w}: lint column: {line}");
        // The row detail names the lint.
        assert!(s.contains("⚠ output window"), "{w}:\n{s}");
        // A prefix row reads as a family, never as a cut id.
        assert!(s.contains("tencent/*"), "{w}:\n{s}");
        assert!(!s.contains("anthropic/c "), "{w}: an id cut without …\n{s}");
    }
    insta::assert_snapshot!("budgets_lint_80x24", screen(&state, 80, 24));
}

/// Plans compared with a baseline (one imported from LiteLLM) beside the sample history.
fn with_baselines(ws: &Workspace) {
    let line = |id: &str, source: &str, intent: &str, planned: &[&str], baseline: &[&str]| {
        let steps = |tools: &[&str]| {
            tools
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"order": i + 1, "tool": t}))
                .collect::<Vec<_>>()
        };
        serde_json::json!({"id": id, "at": "2026-11-20T09:00:00Z", "caller": "agent-7",
            "model": "weak-y", "intent": intent, "source": source, "steps": steps(planned),
            "expert_baseline": {"model": "frontier", "steps": steps(baseline)}})
        .to_string()
    };
    let remember = "remember that the launch moved to Thursday and blog it";
    let lines = [
        line(
            "g1",
            "native",
            remember,
            &["blog.draft"],
            &["memory.store", "blog.draft"],
        ),
        line(
            "g2",
            "native",
            remember,
            &["memory.store", "blog.draft"],
            &["memory.store", "blog.draft"],
        ),
        line(
            "g3",
            "native",
            remember,
            &["blog.draft"],
            &["memory.store", "blog.draft"],
        ),
        line(
            "g4",
            "litellm",
            "find the launch notes and email them to the team",
            &["fs.search", "web.search"],
            &["fs.search", "message.send"],
        ),
    ]
    .join("\n");
    import_plan_lines(ws, "baselines", &lines);
}

/// Tester 45 F8, review 45 L5/L6: groups read by an older build's word rules (another
/// writer held the store when the console opened it) say so in the Groups title and, now,
/// the Gaps title, in a short marker a narrow pane still shows ("· by an older build's word
/// rules" had been cut to "· by an old").
#[test]
fn groups_and_gaps_by_older_word_rules_say_so_in_a_short_marker() {
    let (d, ws) = workspace();
    with_baselines(&ws);
    let db = rusqlite::Connection::open(d.path().join("history.sqlite")).unwrap();
    db.execute("UPDATE meta SET value = '0' WHERE key = 'shape_rules'", [])
        .unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusHistory, Action::ToggleGaps]);
    let s = screen(&state, 150, 40);
    assert_eq!(s.matches("· older word rules").count(), 2, "{s}");
    shows_every(&s, &["Gaps · plans vs baseline · older word rules"]);
    db.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn history_gaps_view_counts_plans_against_their_baselines_and_the_source_filter_narrows() {
    let (_d, ws) = workspace();
    with_baselines(&ws);
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusHistory, Action::ToggleGaps]);
    let h = &state.history;
    assert!(h.show_gaps);
    let report = h.gaps.as_ref().expect("the gaps were asked for and came");
    assert_eq!((report.plans, report.agree), (4, 1));
    let s = screen(&state, 150, 40);
    shows_every(
        &s,
        &[
            "Gaps · plans vs baseline",
            "4 plans vs a baseline · 1 agree",
            "plan skipped memory.store in 2 of 3 'remember that the launc",
            "agree in 1 of 3",
            "baseline skipped web.search in 1 of 1",
            "b gaps",
        ],
    );
    insta::assert_snapshot!("history_gaps_view", s);

    // The source filter: native, otel, litellm, then all again; the gaps follow it.
    apply(
        &ws,
        &mut state,
        [
            Action::CycleSource,
            Action::CycleSource,
            Action::CycleSource,
        ],
    );
    let h = &state.history;
    assert_eq!(h.filter.source.as_deref(), Some("litellm"));
    assert_eq!(h.plans.as_ref().unwrap().total, 1);
    assert_eq!(h.gaps.as_ref().unwrap().plans, 1);
    let detail = h.detail.as_ref().unwrap();
    assert_eq!(detail.record.id, "g4");
    let s = screen(&state, 150, 40);
    shows_every(
        &s,
        &[
            "source=litellm",
            "· from litellm",
            "vs baseline: different_tools",
            "the baseline skipped web.search; the plan skipped",
        ],
    );
    apply(&ws, &mut state, [Action::CycleSource]);
    assert_eq!(state.history.filter.source.as_deref(), Some("sent"));
    apply(&ws, &mut state, [Action::CycleSource]);
    assert_eq!(state.history.filter.source, None);
    assert_eq!(state.history.gaps.as_ref().unwrap().plans, 4);
    // Back to the models; the gaps are kept for when the view opens again.
    apply(&ws, &mut state, [Action::ToggleGaps]);
    assert!(screen(&state, 150, 40).contains("Models · outcomes → tier"));
}

/// Tester 5 C1: the History pane's detail of a baseline plan says it is one, in the words
/// `history show` uses.
#[test]
fn the_history_detail_of_a_baseline_plan_says_it_is_one() {
    let (_d, ws) = workspace();
    let line = serde_json::json!({"id": "bl-1", "at": "2026-11-24T10:00:00Z",
        "caller": "console", "model": "m/frontier", "intent": "remember the launch",
        "outcome": "ok", "source": "sent", "steps": [{"order": 1, "tool": "memory.store"}],
        "trim_record": {"baseline": {"planner": "off", "prior": "off", "catalog_cut": 0}}})
    .to_string();
    import_plan_lines(&ws, "baseline", &line);
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::FocusHistory,
            Action::CycleSource,
            Action::CycleSource,
            Action::CycleSource,
            Action::CycleSource,
        ],
    );
    assert_eq!(state.history.filter.source.as_deref(), Some("sent"));
    assert_eq!(state.history.detail.as_ref().unwrap().record.id, "bl-1");
    let s = screen(&state, 150, 40);
    assert!(
        s.contains("baseline plan: whole catalog, no planner help, no prior"),
        "{s}"
    );
}

/// Tester 19 F11: the History pane's detail says what a plan was sent with, in the words
/// `history show` uses.
#[test]
fn the_history_detail_says_what_a_plan_was_sent_with() {
    let (_d, ws) = workspace();
    let line = serde_json::json!({"id": "sw-1", "at": "2026-11-24T10:00:00Z",
        "caller": "console", "model": "m/x", "intent": "summarise the log",
        "outcome": "ok", "source": "sent", "steps": [{"order": 1, "tool": "research.summarize"}],
        "trim_record": {"sent_with": {"attachments": [
            {"name": "big.log", "bytes": 2607639, "content_ref": "f7769097767e8d6b", "admission": "briefing", "cached": true},
            {"name": "ctrl.txt", "bytes": 12, "content_ref": "d6f8119da569e430", "admission": "raw", "cached": false}
        ]}}})
    .to_string();
    import_plan_lines(&ws, "sent-with", &line);
    let mut state = started(&ws);
    apply(&ws, &mut state, [Action::FocusHistory]);
    assert_eq!(state.history.detail.as_ref().unwrap().record.id, "sw-1");
    let s = screen(&state, 150, 40);
    assert!(
        s.contains("sent with: 'big.log' (2,607,639 bytes, briefing, cache f7769097767e8d6b)"),
        "{s}"
    );
    assert!(
        s.contains("sent with: 'ctrl.txt' (12 bytes, raw, ref d6f8119da569e430, not cached"),
        "{s}"
    );
}

/// The console with the plan `line` (of source otel, the only one) imported and open in
/// History.
fn open_the_otel_plan(ws: &Workspace, line: &str) -> State {
    import_plan_lines(ws, "imported", line);
    let mut state = started(ws);
    apply(
        ws,
        &mut state,
        [
            Action::FocusHistory,
            Action::CycleSource,
            Action::CycleSource,
            Action::Open,
        ],
    );
    state
}

/// The console's plan view describes an imported answer as it describes a live one, by
/// the one core function `history show` uses (`core::failure::kept_answer_lines`): where it
/// came from, its tool calls, its reasoning and the other choices it came with (by a live
/// answer's own lines), what it held and was not read, its usage. It read only a live
/// answer's `reply`, so an imported answer's `not_read` was not shown.
#[test]
fn the_history_detail_of_an_imported_plan_shows_its_answer_as_kept() {
    let (_d, ws) = workspace();
    let line = serde_json::json!({"id": "otel-aa-01", "at": "2026-11-25T10:00:00Z",
        "caller": "agent", "model": "m", "intent": "find the notes", "outcome": "ok",
        "source": "otel", "steps": [{"order": 1, "tool": "fs.search"}],
        "finish_reason": "tool_calls", "raw_response": "<think>search first</think>",
        "answer": {"source": "otel", "trace_id": "aa", "span_id": "01",
            "conversation_id": null, "finish_reason": "tool_calls",
            "tool_calls": [{"id": "c1", "name": "fs.search", "arguments": "{\"q\":\"notes\"}"}],
            "reasoning": "search first", "other_choices": 1,
            "not_read": ["a content part of type blob"],
            "usage": {"prompt_tokens": 12, "completion_tokens": null}}})
    .to_string();
    let state = open_the_otel_plan(&ws, &line);
    assert_eq!(state.history.filter.source.as_deref(), Some("otel"));
    assert_eq!(
        state.history.detail.as_ref().unwrap().record.id,
        "otel-aa-01"
    );
    let s = screen(&state, 150, 40);
    shows_every(
        &s,
        &[
            "the answer as kept:",
            "imported from otel",
            "fs.search {\"q\":\"notes\"}",
            "reasoning: 12 characters (in the raw response between <think> tags)",
            "other choices sent and not kept: 1 (only index 0 is the answer)",
            "not read: a content part of type blob",
            "usage: prompt 12, completion -, cached -, reasoning -",
        ],
    );
    insta::assert_snapshot!("history_imported_plan_open", s);
}

/// Tester 34 F11: a CR in a raw response was shown `\r` by `history show` and dropped by the
/// console's plan view; both show the stored bytes alike.
#[test]
fn the_history_detail_shows_a_carriage_return_as_history_show_does() {
    let (_d, ws) = workspace();
    let line = serde_json::json!({"id": "otel-cr-01", "at": "2026-11-25T10:00:00Z",
        "caller": "agent", "model": "m", "intent": "say it", "outcome": "ok",
        "source": "otel", "steps": [{"order": 1, "tool": "fs.search"}],
        "raw_response": "I'm not sure.\r\nLine two\r\n"})
    .to_string();
    let state = open_the_otel_plan(&ws, &line);
    let s = screen(&state, 150, 40);
    shows_every(&s, &["I'm not sure.\\r", "Line two\\r"]);
}

/// Tester 5 C8: the narrow Plans list showed `12-31 23:59` for a plan of year 9999 and
/// `01-01 00:00` for one of 1970, as if they were this year's. A plan of another year than
/// the front end's clock shows its date with the year; this year's keep month, day and time.
#[test]
fn the_narrow_plans_list_shows_the_year_of_a_plan_from_another_year() {
    let (_d, ws) = workspace();
    let line = |id: &str, at: &str| {
        serde_json::json!({"id": id, "at": at, "caller": "agent-7", "model": "weak-y",
            "intent": format!("plan {id}"), "source": "litellm", "outcome": "ok",
            "steps": [{"order": 1, "tool": "memory.store"}]})
        .to_string()
    };
    let lines = [
        line("far", "9999-12-31T23:59:00Z"),
        line("now", "2026-11-20T09:00:00Z"),
        line("epoch", "1970-01-01T00:00:00Z"),
    ]
    .join("\n");
    import_plan_lines(&ws, "years", &lines);
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::FocusHistory,
            Action::CycleSource,
            Action::CycleSource,
            Action::CycleSource,
        ],
    );
    assert_eq!(state.history.plans.as_ref().unwrap().total, 3);
    let s = screen(&state, 80, 24);
    shows_every(&s, &["9999-12-31", "11-20 09:00", "1970-01-01"]);
    assert!(
        !s.contains("ignored  12-31 23:59") && !s.contains("ignored  01-01 00:00"),
        "{s}"
    );
    insta::assert_snapshot!("history_plans_of_other_years_80x24", s);
}

/// Issue 18 item 7: an intent with followed plans of its shape in the (seeded) store shows
/// the past-plans part in the Prompt pane's part list, with the plans it came from.
#[test]
fn the_prompt_pane_lists_the_past_plans_part_where_the_store_has_evidence() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    apply(
        &ws,
        &mut state,
        [
            Action::Bottom,
            Action::FocusPrompt,
            Action::Paste("clone the docs site and run its tests".into()),
        ],
    );
    let preview = &state.request.as_ref().expect("planned").planned;
    let prior = preview.past_steps.as_ref().expect("nine followed plans");
    let s = screen(&state, 140, 44);
    let row = s
        .lines()
        .find(|l| l.contains("prior ") && l.contains("tokens"))
        .unwrap_or_else(|| panic!("a prior row: {s}"));
    assert!(row.contains(&format!("{} tokens", prior.tokens)), "{row}");
    assert!(
        s.contains("prior: repo.clone → repo.test (9 plans: pl-0666"),
        "{s}"
    );
}

/// The charts at the three sizes: the window bar of a request whose paste goes as a
/// briefing (every part of the window present), the History charts narrowed to one model,
/// and what each chart says when it has nothing to draw.
#[test]
fn charts_at_80x24_120x40_and_160x50() {
    let (_d, ws) = workspace();
    // Before any request is planned: the window bar's empty state.
    let mut fresh = initial_state(&ws);
    fresh.focus = Pane::Prompt;
    let s = screen(&fresh, 80, 24);
    assert!(s.contains("no request planned yet"), "{s}");
    insta::assert_snapshot!("chart_window_empty_80x24", s);

    let mut state = started(&ws);
    let log: String = (0..3_000)
        .map(|i| {
            format!(
                "2026-11-22T10:00:{:02}Z INFO request {i} served in 12ms\n",
                i % 60
            )
        })
        .collect();
    apply(
        &ws,
        &mut state,
        [
            Action::Bottom,
            Action::FocusPrompt,
            Action::Paste("what went wrong in this log?".into()),
            Action::Paste(log),
        ],
    );
    let p = &state.request.as_ref().expect("planned").planned;
    assert_eq!(p.attachments.len(), 1, "the log is an attachment");
    assert!(
        p.attachments[0].gate.briefing.is_some(),
        "the pasted log goes as a briefing"
    );
    let mut window = state.clone();
    window.prompt.scroll = 0;
    for (w, h) in [(80, 24), (120, 40), (160, 50)] {
        let s = screen(&window, w, h);
        assert!(s.contains("a attachments "), "{w}x{h}:\n{s}");
        insta::assert_snapshot!(format!("chart_window_briefing_{w}x{h}"), s);
    }

    // History narrowed to the first model the filter offers: its weeks, its sparkline.
    apply(
        &ws,
        &mut state,
        [Action::Back, Action::FocusHistory, Action::CycleModel],
    );
    let model = state.history.filter.model.clone().expect("a model filter");
    let trends = state.history.trends.as_ref().expect("trends");
    assert_eq!(trends.models.len(), 1, "{model}");
    for (w, h) in [(80, 24), (120, 40), (160, 50)] {
        let s = screen(&state, w, h);
        assert!(s.contains("Drift by week"), "{w}x{h}:\n{s}");
        insta::assert_snapshot!(format!("chart_history_one_model_{w}x{h}"), s);
    }

    // A filter no plan matches: both charts say which filter emptied them.
    apply(
        &ws,
        &mut state,
        [
            Action::CycleOutcome,
            Action::CycleOutcome,
            Action::CycleDrift,
        ],
    );
    let s = screen(&state, 120, 40);
    assert!(s.contains("no plans to chart match"), "{s}");
    insta::assert_snapshot!("chart_history_nothing_matches_120x40", s);
}

/// `/` in History searches the plans' intents: typed keys are text (no `o` cycles an
/// outcome), Enter applies it to the plans and the groups, the title says it, and Esc
/// clears it.
#[test]
fn history_slash_searches_plan_intents() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    let keymap = Keymap::default();
    apply(&ws, &mut state, [Action::FocusHistory]);
    let all = state.history.plans.as_ref().unwrap().total;
    let mut keys = vec![key(KeyCode::Char('/'))];
    keys.extend(text_keys("REMEMBER"));
    press(&ws, &mut state, &keymap, &keys);
    assert!(state.history.filter.outcome.is_none(), "keys were text");
    let s = screen(&state, 160, 50);
    assert!(s.contains("intent search: REMEMBER▏"));
    // The status line says what Enter does here: it applies, as the header says.
    assert!(
        s.contains("enter applies · esc clears") && !s.contains("enter keep"),
        "{s}"
    );
    press(&ws, &mut state, &keymap, &[key(KeyCode::Enter)]);
    let h = &state.history;
    let page = h.plans.as_ref().unwrap();
    assert!(
        page.total > 0 && page.total < all,
        "{} of {all}",
        page.total
    );
    assert!(
        page.rows
            .iter()
            .all(|p| p.intent.to_lowercase().contains("remember"))
    );
    assert!(screen(&state, 160, 50).contains("intent~\"REMEMBER\""));
    // Outside the search, keys are keys again.
    press(&ws, &mut state, &keymap, &[key(KeyCode::Char('o'))]);
    assert!(state.history.filter.outcome.is_some());
    // A search that matches nothing says so and how to clear it.
    let mut keys = vec![key(KeyCode::Char('x')), key(KeyCode::Char('/'))];
    keys.extend(text_keys("no such intent"));
    keys.push(key(KeyCode::Enter));
    press(&ws, &mut state, &keymap, &keys);
    assert_eq!(state.history.plans.as_ref().unwrap().total, 0);
    assert!(screen(&state, 160, 50).contains("no plans match intent~\"no such intent\""));
    press(
        &ws,
        &mut state,
        &keymap,
        &[key(KeyCode::Char('/')), key(KeyCode::Esc)],
    );
    assert!(state.history.filter.is_empty());
    assert_eq!(state.history.plans.as_ref().unwrap().total, all);
    // The search box stops at the store's bound; the title shows the end of what was typed.
    apply(
        &ws,
        &mut state,
        [
            Action::Filter,
            Action::Paste(format!("{}THE_END", "y".repeat(600))),
        ],
    );
    assert_eq!(state.history.search.chars().count(), 500);
    apply(&ws, &mut state, [Action::Back, Action::Filter]);
    apply(
        &ws,
        &mut state,
        [Action::Paste(format!("{}THE_END", "y".repeat(80)))],
    );
    assert!(screen(&state, 160, 50).contains("yyyTHE_END▏"));
}

/// Tester 5 F14 in the console: a History replay of a plan sent with an attachment (not
/// stored) and under a tier override says both beside its result, as `replay` does.
#[test]
fn a_live_replay_from_the_history_pane_says_what_it_could_not_send_again() {
    let server = common::llm_server::LlmServer::start();
    let (dir, _) = workspace();
    std::fs::write(
        dir.path().join("config.toml"),
        server.config_routing_everything(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    let sent_id = {
        let mut store = ws.open_history(&Default::default()).unwrap();
        let failed = store.failed_plan_ids(None, 1).unwrap();
        let mut r = store.plan(&failed[0]).unwrap().unwrap().record;
        r.at = ctxconsole::store::now_secs();
        r.replay_of = None;
        r.trim_record = Some(serde_json::json!({
            "trim": [],
            "sent_with": {
                "attachments": [{"name": "notes.json", "bytes": 12, "content_ref": "00112233aabbccdd"}],
                "tier_override": "A"
            }
        }));
        store.insert_sent(&mut r, &ws.pipeline_ids(), None).unwrap()
    };
    let mut state = started(&ws);
    open_failed_plan(&ws, &mut state, |r| r.id == sent_id);
    apply(
        &ws,
        &mut state,
        [Action::Replay, Action::Down, Action::Open],
    );
    let s = screen(&state, 150, 40);
    assert!(s.contains(&format!("stored as {sent_id}.r1")), "{s}");
    assert!(
        s.contains("sent with 1 attachment ('notes.json', 12 bytes) that is not stored;"),
        "{s}"
    );
    assert!(
        s.contains("sent under a tier A override; replayed at tier A (the override kept)"),
        "{s}"
    );
}

/// Tester 9 T9-17: the Catalog pane read "untouched: the full catalog fits" above "cut 1"
/// when the crowding rule had cut an entry. Untouched is said only when nothing was cut.
#[test]
fn the_catalog_pane_never_says_untouched_above_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut tools = vec![serde_json::json!({
        "name": "big0",
        "description": format!("search notes {}", "A".repeat(9_880)),
    })];
    tools.extend((0..20).map(|i| {
        serde_json::json!({"name": format!("small{i}"), "description": format!("Search notes number {i}.")})
    }));
    // The free row: a 10,000-byte cap the big entry takes 99 % of.
    let s = free_row_catalog_pane(dir.path(), &tools, (140, 45));
    assert!(s.contains("cut 1"), "{s}");
    assert!(!s.contains("untouched"), "{s}");
}

/// Tester 9 T9-2: two entries of 49 % kept 4 of 22 on every screen. The console's Catalog
/// pane reads the same plan as `compact`: one of them cut, named with the other.
#[test]
fn the_catalog_pane_cuts_one_of_two_entries_that_crowd_the_rest_out() {
    let dir = tempfile::tempdir().unwrap();
    let q = serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let mut tools: Vec<serde_json::Value> = (0..2)
        .map(|i| {
            serde_json::json!({"name": format!("big{i}"),
                "description": format!("search notes {}", "A".repeat(4_770)), "inputSchema": q})
        })
        .collect();
    tools.extend((0..20).map(|i| {
        serde_json::json!({"name": format!("small{i}"),
            "description": format!("Search notes number {i}."), "inputSchema": q})
    }));
    let s = free_row_catalog_pane(dir.path(), &tools, (200, 50));
    assert!(s.contains("kept 21/22"), "{s}");
    assert!(
        s.contains("1 entry cut as it takes 48 % of the allo"),
        "{s}"
    );
    assert!(
        s.contains(r#"{"name":"big0""#) && !s.contains(r#"{"name":"big1""#),
        "{s}"
    );
    assert!(s.contains(r#"{"name":"small19""#), "{s}");
}

/// The Catalog pane of a console on a workspace in `dir` whose catalog is these MCP `tools`,
/// the free row (Tier C, a 10,000-byte cap) selected.
fn free_row_catalog_pane(
    dir: &std::path::Path,
    tools: &[serde_json::Value],
    (width, height): (u16, u16),
) -> String {
    std::fs::write(
        dir.join("catalog.json"),
        serde_json::json!({ "tools": tools }).to_string(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.into()),
        registry: None,
    })
    .unwrap();
    let mut state = started(&ws);
    let free = common::console::row_of(&state, "openrouter/openrouter/free");
    apply(
        &ws,
        &mut state,
        [Action::SelectRow(free), Action::FocusCatalog],
    );
    screen(&state, width, height)
}

/// The catalog's token figure on a screen showing the Catalog pane and the Preview: the
/// Catalog pane's `as sent … · N tok` and the Preview's `catalog` part row.
fn catalog_tokens_on_screen(s: &str) -> (usize, usize) {
    let number = |t: &str| -> usize { t.replace(',', "").parse().unwrap() };
    let pane = s
        .lines()
        .find_map(|l| l.split("as sent ").nth(1)?.split(" · ").nth(1))
        .and_then(|t| t.split(" tok").next())
        .map(number)
        .unwrap_or_else(|| panic!("no as-sent figure:\n{s}"));
    let preview = s
        .lines()
        .find_map(|l| {
            let row = l.split("│catalog ").nth(1)?;
            let mut words = row.split_whitespace();
            matches!(words.next(), Some("system" | "user")).then(|| words.next())?
        })
        .map(number)
        .unwrap_or_else(|| panic!("no catalog part in the Preview:\n{s}"));
    (pane, preview)
}

/// Tester 10 T10-21: the Catalog pane's token figure left out the catalog part's header line
/// (about 7 tokens) the Preview counts. Both read the one catalog part of the planned
/// request, as `preview --json` shows it: on the sample workspace (the estimate and exact
/// tokenizers) and on a workspace of its own (an exact tokenizer, the catalog trimmed).
#[test]
fn the_catalog_pane_and_the_preview_show_one_token_figure_for_the_catalog() {
    let agree = |ws: &Workspace, row: &str, what: &str| {
        let mut state = started(ws);
        let row = common::console::row_of(&state, row);
        apply(
            ws,
            &mut state,
            [
                Action::SelectRow(row),
                Action::FocusPrompt,
                Action::Paste("summarise this launch note and draft a blog post from it".into()),
            ],
        );
        let request = &state.request.as_ref().expect("planned").planned.request;
        let part = request
            .parts
            .iter()
            .find(|p| p.part == "catalog")
            .expect("a catalog part")
            .tokens;
        let s = screen(&state, 160, 50);
        assert_eq!(catalog_tokens_on_screen(&s), (part, part), "{what}:\n{s}");
        s
    };
    let (_d, ws) = workspace();
    agree(&ws, "*", "sample, the estimate");
    agree(&ws, "openai/gpt-4o-mini", "sample, o200k");
    let dir = tempfile::tempdir().unwrap();
    let tools: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            serde_json::json!({"name": format!("notes.tool{i}"),
                "description": format!("Search the team's notes, number {i}. {}", "Words here. ".repeat(30))})
        })
        .collect();
    std::fs::write(
        dir.path().join("catalog.json"),
        serde_json::json!({ "tools": tools }).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("budgets.toml"),
        "[[model]]\nid = \"mine/small\"\ninput_tokens = 6000\noutput_tokens = 500\ntier = \"C\"\ntokenizer = \"o200k\"\n",
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    let s = agree(&ws, "mine/small", "own workspace, o200k, trimmed");
    assert!(
        s.contains("tokenizer o200k") && s.contains("descriptions cut to their first sentence"),
        "{s}"
    );
}

/// The figure after `label` in `text` (digits and thousands commas), if any.
fn figure_after(text: &str, label: &str) -> Option<usize> {
    let rest = &text[text.find(label)? + label.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// Q8 item 1: `preview` and `compact` counted the catalog part's header line in "framing"
/// (`framing 18`, the catalog 8 tokens under the Catalog pane's figure), while the pane
/// counted it in the catalog. One notion of the request's parts now (system, prompt,
/// attachments, catalog with its header, framing; `request.totals`): for one workspace and
/// prompt, the text preview, `preview --json` (the MCP preview answer is the same JSON),
/// `compact` (text and JSON) and the console's panes show the same catalog, allowance and
/// framing figures, and the parts add up to the request's input tokens.
#[test]
fn every_surface_shows_the_same_request_parts() {
    let (_d, ws) = workspace();
    for row in ["*", "openai/gpt-4o-mini"] {
        let mut state = started(&ws);
        let at = common::console::row_of(&state, row);
        apply(
            &ws,
            &mut state,
            [
                Action::SelectRow(at),
                Action::FocusPrompt,
                Action::Paste("summarise this launch note and draft a blog post from it".into()),
            ],
        );
        let planned = &state.request.as_ref().expect("planned").planned;
        // preview --json, and the MCP server's preview answer (the same serialisation).
        let json = serde_json::to_value(planned).unwrap();
        let sum = |names: &[&str]| -> usize {
            json["request"]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| names.contains(&p["part"].as_str().unwrap()))
                .map(|p| p["tokens"].as_u64().unwrap() as usize)
                .sum()
        };
        let system = sum(&["system prompt"]);
        let catalog = sum(&["catalog"]);
        let prompt = sum(&["defaults", "hint", "prior", "intent"]);
        let attachments = sum(&["context", "attachment"]);
        let total = json["request"]["input_tokens"].as_u64().unwrap() as usize;
        let framing = total - system - catalog - prompt - attachments;
        let allowance = &json["compaction"]["allowance"];
        let allowed = allowance["tokens"].as_u64().unwrap() as usize;
        // The allowance names the request's parts with its figures (tester 34 F2), the
        // header being the catalog's; framing may be a token or two apart (the tokenizer
        // across the catalog's edges).
        let terms = planned.compaction.allowance.terms();
        for (field, figure) in [
            ("system_prompt_tokens", system),
            ("prompt_tokens", prompt),
            ("attachments_tokens", attachments),
        ] {
            assert_eq!(allowance[field], figure, "{row}: {field}");
        }
        let allowance_framing = allowance["framing_tokens"].as_u64().unwrap() as usize;
        assert!(allowance_framing.abs_diff(framing) <= 2, "{row}: {terms}");
        assert_eq!(
            json["request"]["totals"],
            serde_json::json!({"system": system, "prompt": prompt, "attachments": attachments,
                "catalog": catalog, "framing": framing, "total": total}),
            "{row}: the parts add up to the request"
        );
        // compact --json (and the MCP compact_catalog answer).
        let compact = serde_json::to_value(
            CompactReport::of(planned, &ws.catalog_origin, &ws.notes).unwrap(),
        )
        .unwrap();
        assert_eq!(compact["parts"], json["request"]["totals"], "{row}");
        assert_eq!(compact["allowance"], *allowance, "{row}");
        assert_eq!(compact["catalog_tokens"]["sent"], catalog, "{row}");

        // The text preview: the CATALOG section and the request's parts.
        let text = ctxconsole::cli::preview::describe(planned);
        let section = &text[text.find("\nCATALOG").unwrap()..];
        assert_eq!(
            figure_after(section, "allowance "),
            Some(allowed),
            "{row}:\n{section}"
        );
        assert!(section.contains(&terms), "{row}: {terms}\n{section}");
        // The whole catalog in the same terms as the catalog part sent.
        let full = compact["catalog_tokens"]["full"]
            .as_u64()
            .map(|n| n as usize);
        assert_eq!(figure_after(section, " B, "), full, "{row}:\n{section}");
        let sent = section
            .lines()
            .find(|l| l.contains(" B, "))
            .and_then(|l| l.split(" tokens").next())
            .and_then(|l| l.rsplit("→ ").next())
            .map(|n| n.replace(',', "").parse::<usize>().unwrap());
        assert_eq!(
            sent,
            Some(catalog),
            "{row}: the catalog as sent:\n{section}"
        );
        let line = format!(
            "input {total} = system {system} + catalog {catalog} + prompt {prompt} + attachments {attachments} + framing {framing}"
        );
        let plain = text.replace(',', "");
        assert!(plain.contains(&line), "{row}: {line}\n{text}");

        // compact's text.
        let text = ctxconsole::cli::compact::describe(planned, &ws.catalog_origin);
        assert_eq!(
            figure_after(&text, "allowance  "),
            Some(allowed),
            "{row}:\n{text}"
        );
        assert!(text.contains(&terms), "{row}: {terms}\n{text}");
        let after = text
            .lines()
            .find(|l| l.starts_with("after "))
            .and_then(|l| l.split(", ").nth(1))
            .and_then(|t| t.split(" tokens").next())
            .map(|n| n.replace(',', "").parse::<usize>().unwrap());
        assert_eq!(after, Some(catalog), "{row}:\n{text}");
        assert!(
            text.replace(',', "").contains(&line),
            "{row}: {line}\n{text}"
        );

        // The console: the Catalog pane's figures and the Preview's parts.
        let s = screen(&state, 200, 60);
        assert_eq!(
            catalog_tokens_on_screen(&s),
            (catalog, catalog),
            "{row}:\n{s}"
        );
        let pane = s.replace(',', "");
        assert!(
            pane.contains(&format!("allowance {allowed} tok = ")),
            "{row}: allowance {allowed}:\n{s}"
        );
        assert!(
            pane.contains(&format!("− {allowance_framing} framing")),
            "{row}:\n{s}"
        );
        let framing_row = s
            .lines()
            .find_map(|l| l.split("│framing ").nth(1))
            .and_then(|r| r.split_whitespace().next())
            .map(|n| n.replace(',', "").parse::<usize>().unwrap());
        assert_eq!(
            framing_row,
            Some(framing),
            "{row}: the Preview's framing row:\n{s}"
        );
    }
}

/// What the frame titled `title` shows inside its borders, row by row: found by its top
/// border's corners, read down to its bottom border.
fn framed_rows(s: &str, title: &str) -> Vec<String> {
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let needle: Vec<char> = title.chars().collect();
    let found = lines.iter().enumerate().find_map(|(y, l)| {
        let x = l
            .windows(needle.len())
            .position(|w| w == needle.as_slice())?;
        Some((y, x))
    });
    let Some((top, at)) = found else {
        panic!("no frame titled {title}:\n{s}")
    };
    let row = &lines[top];
    let left = row[..at]
        .iter()
        .rposition(|c| matches!(c, '┏' | '┌'))
        .unwrap();
    let right = at
        + row[at..]
            .iter()
            .position(|c| matches!(c, '┓' | '┐'))
            .unwrap();
    lines[top + 1..]
        .iter()
        .take_while(|l| !matches!(l.get(left), Some('┗' | '└')))
        .map(|l| l[left + 1..right].iter().collect())
        .collect()
}

/// A plan of 60 steps and a raw response of 301 lines: more than a screen.
fn import_long_plan(ws: &Workspace) {
    let raw: Vec<String> = (1..=301).map(|i| format!("raw line {i}")).collect();
    let steps: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            let tool = if i < 59 { "fs.read" } else { "web.search" };
            serde_json::json!({"order": i + 1, "tool": tool, "rationale": "r", "args": {}})
        })
        .collect();
    let plan = serde_json::json!({
        "id": "pl-long-raw", "at": "2026-11-26T23:00:00Z", "caller": "t17",
        "model": "openai/gpt-4o", "intent": "read many files", "outcome": "ok",
        "drift": "followed", "finish_reason": "stop", "raw_response": raw.join("\n"),
        "steps": steps,
    });
    import_plan_lines(ws, "t17", &format!("{plan}\n"));
}

/// Tester 22 F5: the plan view cut a 300 KB one-line raw response and 200 KB of tool-call
/// arguments to a few rows ending in a bare `…`, saying neither how much was left nor where
/// to read it, while only a raw response of more than 60 lines did. Every cut section ends
/// alike: how much it left out, and the `history show --json` field holding it whole.
#[test]
fn a_cut_section_of_the_plan_view_says_how_much_is_left_and_where_it_is_whole() {
    let (_d, ws) = workspace();
    let raw = format!("{{\"steps\":[]}}\n{}", "X".repeat(300_000));
    let args = format!(
        "{{\"q\": \"lisbon\", \"blob\": \"{}\"}}",
        "A".repeat(200_000)
    );
    let plan = serde_json::json!({
        "id": "pl-huge-line", "at": "2026-11-26T23:30:00Z", "caller": "t22",
        "model": "openai/gpt-4o", "intent": "search lisbon flights", "outcome": "ok",
        "drift": "followed", "finish_reason": "tool_calls", "raw_response": raw,
        "steps": [{"order": 1, "tool": "web.search", "rationale": "r", "args": {}}],
        "answer": {"reply": {"content": "", "tool_calls": [
            {"name": "web.search", "arguments": args}]}},
    });
    import_plan_lines(&ws, "t22", &format!("{plan}\n"));
    let mut state = started(&ws);
    state.resized(120, 40);
    apply(&ws, &mut state, [Action::FocusHistory, Action::Open]);
    assert_eq!(
        state.history.detail.as_ref().map(|d| d.record.id.as_str()),
        Some("pl-huge-line")
    );
    apply(&ws, &mut state, [Action::Bottom]);
    let s = screen(&state, 120, 40);
    let rows = framed_rows(&s, "Plan pl-huge-line");
    let thousands = ctxconsole::core::text::thousands;
    let call = format!("  web.search {args}");
    for note in [
        format!(
            "… {} more bytes: ctxconsole history show pl-huge-line --json (raw_response)",
            thousands(300_000 - 400)
        ),
        format!(
            "… {} more bytes: ctxconsole history show pl-huge-line --json (answer)",
            thousands(call.len() - 400)
        ),
    ] {
        assert!(rows.iter().any(|r| r.trim_end() == note), "{note}\n{s}");
    }
    insta::assert_snapshot!("history_plan_cut_sections_say_what_is_left", s);
}

/// Tester 17 F2: a plan opened in full could not be scrolled; every movement key and the
/// wheel went to other plans instead, so its steps past a screen and its raw response were
/// out of reach. While it is open they scroll it (the title says which rows show); the list
/// stays where it was. Steps are numbered to one width, so the columns stay aligned.
#[test]
fn a_plan_open_in_full_scrolls_and_the_movement_keys_leave_the_list_alone() {
    let (_d, ws) = workspace();
    import_long_plan(&ws);
    let mut state = started(&ws);
    state.resized(120, 40);
    // The newest plan, first in the list, with the sample's plans after it.
    apply(&ws, &mut state, [Action::FocusHistory, Action::Open]);
    assert!(state.history.expanded);
    assert!(state.history.plans.as_ref().unwrap().total > 1);
    let open = |state: &State| state.history.detail.as_ref().unwrap().record.id.clone();
    assert_eq!(open(&state), "pl-long-raw");
    let s = screen(&state, 120, 40);
    let rows = framed_rows(&s, "Plan pl-long-raw");
    // Step 9 and step 10 put their tools in one column.
    let column = |step: &str| {
        let row = rows
            .iter()
            .find(|r| r.trim_start().starts_with(step))
            .unwrap();
        row.find("fs.read").unwrap()
    };
    assert_eq!(column("9 fs.read"), column("10 fs.read"), "{s}");
    insta::assert_snapshot!("history_long_plan_open", s);
    apply(&ws, &mut state, [Action::Bottom]);
    assert_eq!(
        open(&state),
        "pl-long-raw",
        "G scrolls the plan, not the list"
    );
    assert_eq!(state.history.plan_selected, 0);
    let s = screen(&state, 120, 40);
    let rows = framed_rows(&s, "Plan pl-long-raw");
    assert!(rows.iter().any(|r| r.contains("raw line 60")), "{s}");
    // The end: the last row of the plan is on the frame's last row.
    // Each line left out and the break before it.
    let left: usize = (61..=301).map(|i| format!("raw line {i}").len() + 1).sum();
    assert_eq!(
        rows.last().unwrap().trim_end(),
        format!(
            "… 241 more lines ({} bytes): ctxconsole history show pl-long-raw --json \
             (raw_response)",
            ctxconsole::core::text::thousands(left)
        ),
        "{s}"
    );
    let title = s.lines().find(|l| l.contains("Plan pl-long-raw")).unwrap();
    let total = state.history.detail_scroll + rows.len();
    assert!(
        title.contains(&format!("–{total} of {total} lines")),
        "{title}"
    );
    insta::assert_snapshot!("history_long_plan_open_at_its_end", s);
    // Back up: each key moves it at once; the wheel too, three rows a notch.
    let end = state.history.detail_scroll;
    apply(&ws, &mut state, [Action::Up]);
    assert_eq!(state.history.detail_scroll, end - 1);
    apply(&ws, &mut state, [Action::PageUp]);
    let s = screen(&state, 120, 40);
    let rows = framed_rows(&s, "Plan pl-long-raw");
    assert!(
        rows.iter().any(|r| r.starts_with("60 web.search")),
        "the last step: {s}"
    );
    apply(&ws, &mut state, [Action::PageDown]);
    assert_eq!(state.history.detail_scroll, end - 1);
    let screen_area = Rect::new(0, 0, 120, 40);
    let wheel = mouse_at(MouseEventKind::ScrollUp, 60, 20);
    let a = mouse::actions(&state, screen_area, &wheel);
    apply(&ws, &mut state, a);
    assert_eq!(state.history.detail_scroll, end - 1 - mouse::WHEEL_ROWS);
    apply(&ws, &mut state, [Action::PageDown, Action::PageDown]);
    assert_eq!(state.history.detail_scroll, end, "kept at the end");
    assert_eq!(open(&state), "pl-long-raw");
    // Closed, the keys move between plans again, and a plan opens at its top.
    apply(&ws, &mut state, [Action::Back, Action::Down]);
    assert_eq!(state.history.plan_selected, 1);
    assert_ne!(open(&state), "pl-long-raw");
    apply(&ws, &mut state, [Action::Open]);
    assert_eq!(state.history.detail_scroll, 0);
}

/// Tester 17 F3 and F4: the Catalog entry modal counted its lines before they wrapped, so at
/// 80×20 `G` stopped inside the sample's `browser.fill_form` while the title said `75–90 of
/// 90 lines`; and `G` stored a position far past the end, so `k` and PgUp did nothing
/// visible. It counts and scrolls wrapped rows, kept within them.
#[test]
fn a_catalog_entry_scrolls_by_its_wrapped_rows_to_its_very_end() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    state.resized(80, 20);
    apply(
        &ws,
        &mut state,
        [
            Action::FocusCatalog,
            Action::Down,
            Action::Down,
            Action::Down,
            Action::Open,
        ],
    );
    assert!(state.catalog.entry_open);
    apply(&ws, &mut state, [Action::Bottom]);
    let s = screen(&state, 80, 20);
    let rows = framed_rows(&s, "browser.fill_form");
    assert_eq!(rows.last().unwrap().trim_end(), "}", "{s}");
    let title = s.lines().find(|l| l.contains("browser.fill_form")).unwrap();
    let end = state.catalog.entry_scroll;
    let total = end + rows.len();
    assert!(
        title.contains(&format!("{}–{total} of {total} lines", end + 1)),
        "{title}"
    );
    insta::assert_snapshot!("catalog_entry_wrapped_at_its_end_80x20", s);
    // Back up from the end moves at once.
    apply(&ws, &mut state, [Action::Up]);
    assert_eq!(state.catalog.entry_scroll, end - 1);
    let s = screen(&state, 80, 20);
    let title = s.lines().find(|l| l.contains("browser.fill_form")).unwrap();
    assert!(
        title.contains(&format!("{end}–{} of", total - 1)),
        "{title}"
    );
    apply(&ws, &mut state, [Action::PageDown, Action::PageDown]);
    assert_eq!(state.catalog.entry_scroll, end);
}

/// Tester 17 F4: the Preview paged past its end until only its last line showed, and PgUp
/// then looked dead. It stops at its last full page, and PgUp moves it at once.
#[test]
fn the_preview_pages_to_its_last_full_page_and_back() {
    let (_d, ws) = workspace();
    let mut state = started(&ws);
    // Short enough that the Preview runs past its pane.
    state.resized(120, 24);
    apply(
        &ws,
        &mut state,
        [
            Action::FocusPrompt,
            Action::Paste("find flights to Lisbon".into()),
        ],
    );
    apply(&ws, &mut state, std::iter::repeat_n(Action::PageDown, 12));
    let end = screen(&state, 120, 24);
    let rows = framed_rows(&end, "Preview");
    let last = rows.last().unwrap();
    // The route ends the Preview: the sample's provider has no key set.
    assert!(
        last.contains("is not set"),
        "the last row is the end:\n{end}"
    );
    apply(&ws, &mut state, [Action::PageUp]);
    let back = screen(&state, 120, 24);
    assert_ne!(back, end, "PgUp moved it");
    assert!(
        !framed_rows(&back, "Preview")
            .last()
            .unwrap()
            .contains("cost $")
    );
}

/// Tester 20 F7: the plan view laid wide (CJK, emoji) tool names over the `planned` column,
/// on lines of their own below their step. Each step is one row: the planned name cut in its
/// column and the executed one cut to the rest of the row, by the cells a terminal shows, as
/// `history show` cuts them.
#[test]
fn wide_tool_names_stay_in_their_columns_in_the_plan_view() {
    let (_d, ws) = workspace();
    let plan = serde_json::json!({
        "id": "pl-wide", "at": "2026-11-26T23:00:00Z", "caller": "wide-bot",
        "model": "openai/gpt-4o", "intent": "wide names", "outcome": "ok",
        "steps": [
            {"order": 1, "tool": "中".repeat(100)},
            {"order": 2, "tool": "web.search"},
            {"order": 3, "tool": "fs.read"},
        ],
    });
    import_plan_lines(&ws, "wide", &format!("{plan}\n"));
    let runs: Vec<String> = [("中".repeat(170)), "😀".repeat(120), "fs.read".to_string()]
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            serde_json::json!({"at": format!("2026-11-26T23:00:1{i}Z"), "caller": "wide-bot",
                "tool": tool, "ok": true, "plan_id": "pl-wide"})
            .to_string()
        })
        .collect();
    let mut store = ws.open_history(&StoreChoice::default()).unwrap();
    store
        .import_executions(
            "wide",
            runs.join("\n").as_bytes(),
            Default::default(),
            |_| {},
        )
        .unwrap();
    drop(store);
    let mut state = started(&ws);
    state.resized(120, 40);
    apply(&ws, &mut state, [Action::FocusHistory, Action::Open]);
    assert_eq!(state.history.detail.as_ref().unwrap().record.id, "pl-wide");
    let s = screen(&state, 120, 40);
    let rows = framed_rows(&s, "Plan pl-wide");
    let with = |c: char| rows.iter().filter(|r| r.contains(c)).count();
    assert_eq!(with('中'), 1, "one row holds step 1, none wraps:\n{s}");
    assert_eq!(with('😀'), 1, "one row holds step 2, none wraps:\n{s}");
    let step = |n: &str| {
        rows.iter()
            .find(|r| r.trim_start().starts_with(n))
            .unwrap_or_else(|| panic!("no row for step {n}:\n{s}"))
            .clone()
    };
    assert!(step("1 中").contains('…'), "{s}");
    assert!(step("2 web.search").contains('😀'), "{s}");
    insta::assert_snapshot!("history_plan_wide_names", s);
}
