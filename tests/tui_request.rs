//! One request, many views, in the console (issue 17): the console plans one request per
//! change and every pane draws it. What the Catalog pane lists as sent — read off a
//! TestBackend render of the real console, keys in — is what `ctxconsole preview --json`
//! keeps for the same instruction, attachments, model and tier; attachments come in through
//! the attach key (a file) or a paste of more than a few lines, and show as chips.

mod common;

use common::console::{apply, as_sent_on_screen, render, row_of};

use common::prompts::{CASES, TIERS, big_log, fixture};
use common::{ctx, json_of};
use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::State;
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::{EffectContext, key_action, start};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The Tier C model, read with each tier overridden.
const OVERRIDDEN: &str = "openrouter/openrouter/free";

fn attachment_path(name: &str, big: &Path) -> PathBuf {
    if name == "big.log" {
        big.to_path_buf()
    } else {
        fixture(name)
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Keys as the runtime applies them: the keymap (or the focused text box) turns each into
/// an action.
fn press(ctx: &EffectContext, state: &mut State, keys: &[KeyEvent]) {
    let keymap = Keymap::default();
    for k in keys {
        if let Some(a) = key_action(state, &keymap, k) {
            apply(ctx, state, [a]);
        }
    }
}

/// Attach a file the way an operator does: the attach key, the path (pasted into the path
/// line), enter.
fn attach_file(ctx: &EffectContext, state: &mut State, path: &Path) {
    let attach = if state.focus == ctxconsole::tui::app::Pane::Prompt {
        KeyEvent::new(KeyCode::Char('a'), KeyModifiers::ALT)
    } else {
        key(KeyCode::Char('a'))
    };
    press(ctx, state, &[attach]);
    assert!(
        state.prompt.attach_path.is_some(),
        "the attach key opens the path line"
    );
    apply(ctx, state, [Action::Paste(path.display().to_string())]);
    press(ctx, state, &[key(KeyCode::Enter)]);
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

/// Set the console's inputs from scratch: the model's row and the tier override, an empty
/// prompt box and no chips, then the instruction and the attachments.
fn ask(
    ctx: &EffectContext,
    state: &mut State,
    model: &str,
    tier: Option<&str>,
    instruction: &str,
    attachments: &[PathBuf],
) {
    apply(
        ctx,
        state,
        [
            Action::FocusBudgets,
            Action::SelectRow(row_of(state, model)),
        ],
    );
    let wanted = tier.map(str::to_string);
    while state.tier_override.map(|t| t.to_string()) != wanted {
        press(ctx, state, &[key(KeyCode::Char('t'))]);
    }
    apply(ctx, state, [Action::FocusPrompt, Action::ClearPrompt]);
    while !state.prompt.attachments.is_empty() {
        press(
            ctx,
            state,
            &[KeyEvent::new(KeyCode::Char('x'), KeyModifiers::ALT)],
        );
    }
    if !instruction.is_empty() {
        apply(ctx, state, [Action::Paste(instruction.into())]);
    }
    for path in attachments {
        attach_file(ctx, state, path);
    }
    assert_eq!(state.prompt_text(), instruction);
    assert_eq!(state.prompt.attachments.len(), attachments.len());
    assert!(
        state.prompt.attach_error.is_none(),
        "{:?}",
        state.prompt.attach_error
    );
    assert!(state.planning.is_none(), "every plan came back");
}

#[test]
fn the_catalog_pane_as_sent_is_previews_kept_for_20_prompts_and_tiers_a_b_c() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let big = big_log(data.path());
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let mut compared = 0;
    let mut differing_tiers = 0;
    for (i, (instruction, attached)) in CASES.iter().enumerate() {
        let paths: Vec<PathBuf> = attached.iter().map(|a| attachment_path(a, &big)).collect();
        let mut kept_by_tier = Vec::new();
        for (tier, tier_model) in TIERS {
            // Even cases: a model of the tier; odd ones: the Tier C model, overridden.
            let (model, tier_override) = if i % 2 == 0 {
                (*tier_model, None)
            } else {
                (OVERRIDDEN, Some(*tier))
            };
            ask(
                &effects,
                &mut state,
                model,
                tier_override,
                instruction,
                &paths,
            );
            apply(&effects, &mut state, [Action::FocusCatalog, Action::Top]);
            assert!(!state.catalog.full_view);
            let screen = render(&state, 230, 160);
            let title = format!("2 Catalog · {model} · tier {tier}");
            assert!(screen.contains(&title), "{title}:\n{screen}");
            let on_screen = as_sent_on_screen(&screen);

            let mut cmd = ctx(home.path());
            cmd.args(["preview", instruction, "--model", model, "--json"]);
            if let Some(t) = tier_override {
                cmd.args(["--tier", t]);
            }
            for p in &paths {
                cmd.arg("--attach").arg(p);
            }
            let v = json_of(&mut cmd);
            let kept = strings(&v["compaction"]["kept"]);
            assert!(!kept.is_empty(), "{instruction:?} {model} {tier}");
            assert_eq!(
                on_screen, kept,
                "case {i} {instruction:?} + {attached:?} on {model} tier {tier}: the Catalog \
                 pane's as-sent ids and `preview --json`'s kept ids"
            );
            assert_eq!(v["tier"], *tier);
            assert_eq!(
                v["attachments"].as_array().unwrap().len(),
                paths.len(),
                "{v}"
            );
            kept_by_tier.push(kept);
            compared += 1;
        }
        if kept_by_tier[0] != kept_by_tier[2] {
            differing_tiers += 1;
        }
    }
    assert_eq!(compared, 60);
    // The comparison means something: the tiers send different catalogs.
    assert!(differing_tiers >= 6, "{differing_tiers}");
}

/// The Prompt pane with two chips (a file attached with the attach key, a pasted note),
/// at each size, and the attach key's errors as one line.
#[test]
fn prompt_pane_with_two_attachment_chips() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    apply(&effects, &mut state, [Action::Bottom]);
    // `a` from Budgets opens the path line in the Prompt pane.
    attach_file(&effects, &mut state, &fixture("users.json"));
    let note = std::fs::read_to_string(fixture("launch_note.md")).unwrap();
    apply(
        &effects,
        &mut state,
        [
            Action::Paste("compare these two".into()),
            Action::Paste(note.clone()),
        ],
    );
    assert_eq!(state.prompt_text(), "compare these two");
    assert_eq!(
        state.prompt.chip_labels,
        ["users.json", "# Launch note: prefix caching for every tier"]
    );
    let planned = &state.request.as_ref().unwrap().planned;
    assert_eq!(planned.attachments.len(), 2);
    assert_eq!(planned.attachments[1].name, "paste 1");
    for (w, h) in [(80, 24), (120, 40), (160, 50)] {
        let s = render(&state, w, h);
        assert!(s.contains("users.json"), "{w}x{h}:\n{s}");
        // The chip names a paste as the model is told it, then its first line (tester 19
        // F3), and its tokens are the request table's, framing included.
        assert!(
            s.contains("▸ paste 1 — #"),
            "the newest chip is selected:\n{s}"
        );
        let part = planned
            .request
            .parts
            .iter()
            .filter(|p| p.part == "attachment")
            .nth(1)
            .unwrap()
            .tokens;
        assert_eq!(planned.attachments[1].sent_tokens, part);
        assert!(part > planned.attachments[1].size.tokens);
        assert!(
            s.contains(&format!("{part} tok sent · raw")),
            "{w}x{h}:\n{s}"
        );
        insta::assert_snapshot!(format!("prompt_two_chips_{w}x{h}"), s);
    }
    // alt+c selects the first chip, alt+x removes it: the note is left.
    press(
        &effects,
        &mut state,
        &[
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::ALT),
            KeyEvent::new(KeyCode::Char('x'), KeyModifiers::ALT),
        ],
    );
    assert_eq!(
        state.prompt.chip_labels,
        ["# Launch note: prefix caching for every tier"]
    );
    let planned = &state.request.as_ref().unwrap().planned;
    assert_eq!(planned.attachments.len(), 1);
    assert_eq!(planned.attachments[0].name, "paste 1");
}

#[test]
fn a_bad_attachment_is_one_error_line_never_a_panic() {
    let home = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let latin1 = data.path().join("latin1.txt");
    std::fs::write(&latin1, b"caf\xe9 au lait\n").unwrap();
    let huge = data.path().join("huge.log");
    let line = "2026-11-22T10:00:00Z INFO request served in 12ms ok\n";
    std::fs::write(&huge, line.repeat(9 * 1024 * 1024 / line.len() + 1)).unwrap();
    let missing = data.path().join("no-such-file.md");
    for (path, says) in [
        (missing.clone(), "cannot read"),
        (data.path().to_path_buf(), "not a file"),
        (latin1.clone(), "UTF-8"),
        (
            huge.clone(),
            "more than the 8,388,608 an attachment may hold",
        ),
    ] {
        attach_file(&effects, &mut state, &path);
        let e = state.prompt.attach_error.clone().expect("an error");
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains(says), "{e}");
        assert!(state.prompt.attachments.is_empty());
        let s = render(&state, 160, 50);
        let lines: Vec<&str> = s.lines().filter(|l| l.contains("attach: ")).collect();
        assert_eq!(lines.len(), 1, "one error line:\n{s}");
        assert!(lines[0].contains("attach: /"), "{}", lines[0]);
    }
    // esc closes the path line without attaching anything.
    press(
        &effects,
        &mut state,
        &[KeyEvent::new(KeyCode::Char('a'), KeyModifiers::ALT)],
    );
    press(&effects, &mut state, &[key(KeyCode::Esc)]);
    assert!(state.prompt.attach_path.is_none() && state.prompt.attachments.is_empty());
    assert_eq!(state.focus, ctxconsole::tui::app::Pane::Prompt);
}

/// A tool name JSON must escape (a quote, a backslash, a tab, an escape byte) is still the
/// entry it names: the full view shows its fate as `preview --json` does, and Enter opens it
/// as sent, titled with its name made safe for the terminal.
#[test]
fn names_json_escapes_keep_their_fate_and_open_as_sent() {
    let home = tempfile::tempdir().unwrap();
    let names = [
        "say \"hi\"",
        "back\\slash",
        "tab\tname",
        "evil\u{1b}[2Jname",
    ];
    let tools: Vec<Value> = names
        .iter()
        .chain(["repo.clone"].iter())
        .map(|n| {
            serde_json::json!({
                "name": n,
                "description": format!("Say hello to someone, the {n} way."),
                "inputSchema": {"type": "object", "properties": {}}
            })
        })
        .collect();
    std::fs::write(
        home.path().join("catalog.json"),
        serde_json::json!({ "tools": tools }).to_string(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    apply(
        &effects,
        &mut state,
        [Action::FocusPrompt, Action::Paste("say hi".into())],
    );
    let v = json_of(ctx(home.path()).args(["preview", "say hi", "--json"]));
    let kept = strings(&v["compaction"]["kept"]);
    assert_eq!(kept.len(), 5, "{v}");
    apply(
        &effects,
        &mut state,
        [Action::FocusCatalog, Action::ToggleFullView, Action::Top],
    );
    let screen = render(&state, 200, 60);
    let sent_rows = screen
        .lines()
        .filter(|l| l.contains(" sent {\"name\":"))
        .count();
    assert_eq!(sent_rows, 5, "every kept entry is marked sent:\n{screen}");
    assert!(!screen.contains('\u{1b}'), "{screen}");
    // The first entry line: the name with a quote in it.
    let first = screen
        .lines()
        .position(|l| l.contains("say \\\"hi\\\""))
        .expect("the quoted name's line");
    // The viewer's first line (selected by Top) opens the JSON: `{"packs":[`.
    let top = screen
        .lines()
        .position(|l| l.contains("{\"packs\":["))
        .unwrap();
    for _ in top..first {
        apply(&effects, &mut state, [Action::Down]);
    }
    apply(&effects, &mut state, [Action::Open]);
    let opened = render(&state, 200, 60);
    assert!(opened.contains("say \"hi\""), "{opened}");
    assert!(opened.contains("sent whole"), "{opened}");
    assert!(!opened.contains("not in the catalog"), "{opened}");
}

/// Tester 35 F5/F10: two entries whose names print alike (`café` composed and decomposed)
/// read `café` twice in the Prompt pane's ranking, and an opened entry was titled `café`
/// whichever it was. Both are spelled apart, as `compact` spells them, and rank alike.
#[test]
fn names_that_print_alike_are_spelled_apart_in_the_ranking_and_the_entry_title() {
    let home = tempfile::tempdir().unwrap();
    let tools: Vec<Value> = ["caf\u{e9}", "cafe\u{301}", "flight.search"]
        .iter()
        .map(|n| {
            serde_json::json!({
                "name": n,
                "description": "Order a coffee to take away.",
                "inputSchema": {"type": "object", "properties": {}}
            })
        })
        .collect();
    std::fs::write(
        home.path().join("catalog.json"),
        serde_json::json!({ "tools": tools }).to_string(),
    )
    .unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    apply(
        &effects,
        &mut state,
        [
            Action::FocusPrompt,
            Action::Paste("order a coffee at the cafe".into()),
        ],
    );
    let screen = render(&state, 200, 60);
    let score = |spelled: &str| -> String {
        let line = screen
            .lines()
            .find(|l| l.contains(&format!(". {spelled} ")))
            .unwrap_or_else(|| panic!("{spelled} not in the ranking:\n{screen}"));
        let at = line.find(&format!(". {spelled} ")).unwrap() + spelled.len() + 3;
        line[at..].split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(score("caf\\u{e9}"), score("cafe\\u{301}"), "{screen}");
    // The decomposed one, opened from the full view, is titled as it is spelled.
    apply(
        &effects,
        &mut state,
        [Action::FocusCatalog, Action::ToggleFullView, Action::Top],
    );
    let full = render(&state, 200, 60);
    // Their rows in the full view read apart too, as the same JSON with escapes (tester 36
    // F6: both read `{"name":"café",…}` beside their fates).
    assert!(
        full.contains(r#"{"name":"caf\u00e9","#) && full.contains(r#"{"name":"cafe\u0301","#),
        "{full}"
    );
    let top = full
        .lines()
        .position(|l| l.contains("{\"packs\":["))
        .unwrap();
    let second = full
        .lines()
        .position(|l| l.contains(r#"{"name":"cafe\u0301","#))
        .unwrap_or_else(|| panic!("the decomposed entry's line:\n{full}"));
    for _ in top..second {
        apply(&effects, &mut state, [Action::Down]);
    }
    apply(&effects, &mut state, [Action::Open]);
    let opened = render(&state, 200, 60);
    assert!(
        opened.contains(" cafe\\u{301} · "),
        "the entry's title:\n{opened}"
    );
}
