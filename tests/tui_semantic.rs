//! The semantic layer in the console (issue 19 item 5): with `[rank] semantic` in the
//! workspace's config.toml, the console ranks lexically while the layer is being built (the
//! status line says so), then plans the current request again with it, and its Catalog
//! pane's as-sent ids are then `ctxconsole preview --json`'s under the same config. An
//! embedder that fails is one status line naming what and where, and the console goes on
//! lexically. The embedder is the in-process server's `/v1/embeddings` (real HTTP, hashed
//! bag-of-words vectors).

mod common;

use common::console::{apply, as_sent_on_screen, render, row_of};

use common::llm_server::LlmServer;
use common::{ctx, json_of};
use ctxconsole::preview::QuestionVectors;
use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{Effect, QUESTION_SETTLE_MS, State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::semantic::SemanticStatus;
use ctxconsole::tui::{
    EffectContext, key_action, run_effect_now, semantic_ready, start, start_semantic,
};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::Path;
use std::time::Duration;

/// A Tier C model: its catalog is cut by the ranking, so a change of order changes what
/// is sent.
const MODEL: &str = "openrouter/openrouter/free";

/// A prompt whose ranking the layer changes on the sample catalog with the server's vectors.
const PROMPT: &str = "open the dashboard in the browser and fill in the signup form";

/// A workspace whose config routes `test/` models to the server (no key needed), with
/// `[rank] semantic` naming `embedder` when given.
fn workspace(server: &LlmServer, embedder: Option<&str>) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let mut config = format!(
        "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"2s\"\nretries = 1\nretry_base = \"50ms\"\n\n\
         [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
        server.base_url()
    );
    if let Some(e) = embedder {
        config.push_str(&format!("\n[rank]\nsemantic = \"{e}\"\n"));
    }
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

fn open(home: &Path) -> Workspace {
    Workspace::open(&WorkspaceOptions {
        dir: Some(home.into()),
        registry: None,
    })
    .unwrap()
}

fn run_all(ctx: &EffectContext, state: &mut State, effects: Vec<ctxconsole::tui::app::Effect>) {
    for effect in effects {
        let action = run_effect_now(ctx, effect);
        apply(ctx, state, [action]);
    }
}

/// The model selected and the prompt typed in; every plan back.
fn ask(ctx: &EffectContext, state: &mut State, prompt: &str) {
    let row = row_of(state, MODEL);
    apply(
        ctx,
        state,
        [
            Action::FocusBudgets,
            Action::SelectRow(row),
            Action::FocusPrompt,
            Action::ClearPrompt,
            Action::Paste(prompt.into()),
        ],
    );
    assert!(state.planning.is_none(), "every plan came back");
}

/// What the Catalog pane lists as sent, and the whole screen.
fn catalog_screen(ctx: &EffectContext, state: &mut State) -> (Vec<String>, String) {
    apply(ctx, state, [Action::FocusCatalog, Action::Top]);
    let screen = render(state, 230, 160);
    (as_sent_on_screen(&screen), screen)
}

/// `preview --json`'s kept ids in `home`, with extra arguments.
fn preview_kept(home: &Path, prompt: &str, extra: &[&str]) -> Vec<String> {
    let v = json_of(
        ctx(home)
            .args(["preview", prompt, "--model", MODEL, "--json"])
            .args(extra),
    );
    v["compaction"]["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_console_ranks_with_the_configured_layer_once_it_is_ready() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-ok"));
    let h = home.path();
    let lexical = preview_kept(workspace(&server, None).path(), PROMPT, &[]);
    let semantic = preview_kept(h, PROMPT, &["--semantic"]);
    assert_ne!(
        lexical, semantic,
        "the layer changes what is sent for {PROMPT:?}"
    );

    let ws = open(h);
    let (mut effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let job = start_semantic(&ws, &ws.config().unwrap(), &mut state)
        .expect("a job: [rank] semantic is set");
    assert_eq!(
        state.semantic,
        SemanticStatus::Embedding {
            embedder: "endpoint:test/embed-ok".into(),
            entries: 72
        }
    );
    // Until the vectors are ready: lexical, and the status line says so.
    ask(&effects, &mut state, PROMPT);
    let (before, screen) = catalog_screen(&effects, &mut state);
    assert_eq!(before, lexical);
    assert!(
        screen.contains("semantic layer: embedding 72 entries with endpoint:test/embed-ok…"),
        "{screen}"
    );

    // Ready: the current request is planned again, with the layer.
    let layer = job.run();
    assert!(layer.is_ok(), "{:?}", layer.as_ref().err());
    let replan = semantic_ready(&mut effects, &mut state, layer);
    assert_eq!(replan.len(), 1, "the current request is planned again");
    run_all(&effects, &mut state, replan);
    assert!(state.planning.is_none());
    let (after, screen) = catalog_screen(&effects, &mut state);
    assert_eq!(
        after, semantic,
        "the console's as-sent ids and `preview --json --semantic`'s kept ids"
    );
    assert!(
        screen.contains("semantic layer on: endpoint:test/embed-ok"),
        "{screen}"
    );
    assert!(matches!(
        state.semantic,
        SemanticStatus::On {
            embedded_now: 0,
            entries: 72,
            ..
        }
    ));
    // The Preview says the layer ranked the request, and explains its part.
    apply(&effects, &mut state, [Action::FocusPrompt]);
    let screen = render(&state, 230, 160);
    assert!(screen.contains("· semantic layer on"), "{screen}");
    assert!(screen.contains("semantic 0."), "{screen}");

    // Every later request too: another prompt the layer changes, the same answer as the
    // CLI with the same config (the key alone turns the layer on there).
    let other = "summarise the top results";
    let (ids, _) = {
        ask(&effects, &mut state, other);
        catalog_screen(&effects, &mut state)
    };
    assert_eq!(ids, preview_kept(h, other, &[]));
    assert_ne!(
        ids,
        preview_kept(workspace(&server, None).path(), other, &[])
    );
}

#[test]
fn an_embedder_that_fails_is_one_status_line_and_the_console_goes_on_lexically() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-500"));
    let h = home.path();
    let lexical = preview_kept(workspace(&server, None).path(), PROMPT, &[]);
    let ws = open(h);
    let (mut effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let job = start_semantic(&ws, &ws.config().unwrap(), &mut state).unwrap();
    let result = job.run();
    let effects_after = semantic_ready(&mut effects, &mut state, result);
    assert!(effects_after.is_empty(), "nothing to plan again");
    let SemanticStatus::Failed(why) = &state.semantic else {
        panic!("{:?}", state.semantic)
    };
    let url = format!("{}/embeddings", server.base_url());
    assert!(
        why.contains(&url) && why.contains("HTTP 500") && why.contains("config.toml"),
        "{why}"
    );
    ask(&effects, &mut state, PROMPT);
    let (ids, screen) = catalog_screen(&effects, &mut state);
    assert_eq!(ids, lexical);
    let line = screen
        .lines()
        .find(|l| l.contains("semantic layer off (ranking lexically; ? shows why)"))
        .unwrap_or_else(|| panic!("no status line:\n{screen}"));
    assert!(line.contains("embed-500"), "{line}");

    // A model directory that is not there: the same, naming the directory.
    let missing = h.join("no-model-here");
    std::fs::write(
        h.join("config.toml"),
        format!("[rank]\nsemantic = \"local:{}\"\n", missing.display()),
    )
    .unwrap();
    let ws = open(h);
    let (_, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let result = start_semantic(&ws, &ws.config().unwrap(), &mut state)
        .unwrap()
        .run();
    let why = result.err().unwrap();
    assert!(why.contains(&missing.display().to_string()), "{why}");
}

/// The text of the help modal's rows from the one labelled `label` on, up to its first
/// blank row: the label taken off, the pieces joined by spaces.
fn help_entry(screen: &str, label: &str) -> String {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let top = rows
        .iter()
        .position(|r| r.iter().collect::<String>().contains("status and keys"))
        .unwrap_or_else(|| panic!("no help modal:\n{screen}"));
    // The modal's corners: the one before its title, and the last on its row.
    let title: String = rows[top].iter().collect();
    let before_title = &title[..title.find(" status and keys").unwrap()];
    let left = before_title.chars().count() - 1;
    let right = rows[top].iter().rposition(|c| *c == '┓').unwrap();
    let inside: Vec<String> = rows[top + 1..]
        .iter()
        .map(|r| r[left + 1..right].iter().collect())
        .collect();
    let first = inside
        .iter()
        .position(|r| r.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} in help:\n{screen}"));
    // The text column starts two after the (right-aligned) label; a row that goes on with
    // the entry has nothing left of it.
    let text_at = inside[first].find(label).unwrap() + label.len() + 2;
    let mut pieces = vec![inside[first][text_at..].trim().to_string()];
    pieces.extend(
        inside[first + 1..]
            .iter()
            .take_while(|r| r[..text_at].trim().is_empty() && !r.trim().is_empty())
            .map(|r| r.trim().to_string()),
    );
    pieces.join(" ")
}

/// Tester 14 F11: the status line cut the layer's failure reason at the terminal's edge,
/// and nothing showed it whole. The status line names the key that does; help opens with
/// the status in full, wrapped, every note too, and still scrolls to its last key.
#[test]
fn help_shows_the_layers_failure_reason_and_every_note_whole() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-500"));
    let ws = open(home.path());
    let (mut effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let result = start_semantic(&ws, &ws.config().unwrap(), &mut state)
        .unwrap()
        .run();
    semantic_ready(&mut effects, &mut state, result);
    let SemanticStatus::Failed(why) = state.semantic.clone() else {
        panic!("{:?}", state.semantic)
    };
    let long_note = format!("a note{} that ends here", " long".repeat(40));
    state.notes = vec!["the first note".into(), long_note.clone()];
    // As the console's loop sets them for a 90 × 30 terminal.
    state.resized(90, 30);
    let closed = render(&state, 90, 30);
    let status = closed.lines().last().unwrap();
    assert!(status.contains("? shows why"), "{status}");
    assert!(!closed.contains("that ends here"), "{closed}");
    assert!(
        !status.contains(why.as_str()),
        "the status line is cut: {status}"
    );

    apply(&effects, &mut state, [Action::ToggleHelp]);
    let open = render(&state, 90, 30);
    assert_eq!(
        help_entry(&open, "semantic layer"),
        format!("semantic layer off (ranking lexically): {why}")
    );
    assert_eq!(help_entry(&open, "note 2/2"), long_note.trim_end());
    assert_eq!(help_entry(&open, "note 1/2"), "the first note");

    // The wrapped status counts in help's length: the last key line is reached.
    apply(&effects, &mut state, [Action::Bottom]);
    let bottom = render(&state, 90, 30);
    // The last key line, wrapped: its last word on the modal's last row (above its
    // border and the status line).
    let rows: Vec<&str> = bottom.lines().collect();
    let last_row = rows[rows.len() - 3];
    assert!(
        last_row.contains("attachment") && !last_row.contains("paste"),
        "{bottom}"
    );
    apply(&effects, &mut state, [Action::Up]);
    assert_ne!(render(&state, 90, 30), bottom, "one up from the end moves");
}

/// Left task N3: the console read config.toml once to check it and again for each part it
/// started (the history store's drift window, the providers for replays, the semantic
/// layer), so a file changed in between started it under a config it never checked. It is
/// read once, at start, and passed on: a config.toml broken after that read changes nothing.
#[test]
fn the_console_starts_from_the_config_it_read_once() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-ok"));
    let h = home.path();
    let ws = open(h);
    let config = ws.config().unwrap();
    std::fs::write(h.join("config.toml"), "[rank\nsemantic = ").unwrap();
    assert!(ws.config().is_err(), "the file is broken now");
    let (effects, mut state) = start(&ws, &config, &Default::default(), false);
    assert_eq!(state.history.error, None);
    assert!(
        effects.replay.is_ok(),
        "{:?}",
        effects.replay.as_ref().err()
    );
    let job = start_semantic(&ws, &config, &mut state).expect("a job: [rank] semantic was set");
    assert_eq!(job.configured, "endpoint:test/embed-ok");
    assert!(job.run().is_ok());
}

/// A cache.sqlite that is not a cache: the layer is on, and the status line says the
/// vectors are not cached and why, naming the file; the file is left as it is.
#[test]
fn a_damaged_cache_is_said_on_the_status_line() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-ok"));
    let h = home.path();
    let cache = h.join("cache.sqlite");
    let garbage = b"not a database\n".repeat(300);
    std::fs::write(&cache, &garbage).unwrap();
    let ws = open(h);
    let (mut effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let job = start_semantic(&ws, &ws.config().unwrap(), &mut state).unwrap();
    let layer = job.run();
    assert!(layer.is_ok(), "{:?}", layer.as_ref().err());
    let replan = semantic_ready(&mut effects, &mut state, layer);
    run_all(&effects, &mut state, replan);
    let SemanticStatus::On {
        not_cached: Some(note),
        embedded_now,
        ..
    } = &state.semantic
    else {
        panic!("{:?}", state.semantic)
    };
    assert_eq!(*embedded_now, 72);
    assert!(note.contains(&cache.display().to_string()), "{note}");
    ask(&effects, &mut state, PROMPT);
    let screen = render(&state, 230, 160);
    assert!(
        screen.contains("semantic layer on: endpoint:test/embed-ok · vectors not cached:"),
        "{screen}"
    );
    assert_eq!(std::fs::read(&cache).unwrap(), garbage);
}

/// The console on a clock of the test's own: actions applied as the runtime applies them,
/// every effect run at once except a timer ([`Effect::After`]), which is due its delay
/// after it was made and fires when the clock gets there. Keys "180 ms apart" are 180 ms
/// apart on this clock whatever the machine's load.
/// With `holding`, a plan that embeds the question is held back, in flight, until
/// [`Clock::answer_held`].
#[derive(Default)]
struct Clock {
    now: Duration,
    timers: Vec<(Duration, Action)>,
    holding: bool,
    held: Vec<Effect>,
}

impl Clock {
    fn apply(&mut self, ctx: &EffectContext, state: &mut State, action: Action) {
        let mut queue = vec![action];
        while let Some(a) = queue.pop() {
            for effect in update(state, a) {
                match effect {
                    Effect::After { delay, action } => self.timers.push((self.now + delay, action)),
                    Effect::Plan { ref inputs, .. }
                        if self.holding && inputs.question == QuestionVectors::Embed =>
                    {
                        assert!(
                            self.held.is_empty(),
                            "a second embedding plan while one is in flight: {:?}",
                            inputs.instruction
                        );
                        self.held.push(effect);
                    }
                    other => queue.push(run_effect_now(ctx, other)),
                }
            }
        }
    }

    /// The plan in flight comes back (run now, and what its answer asks for).
    fn answer_held(&mut self, ctx: &EffectContext, state: &mut State) {
        let effect = self.held.pop().expect("a plan in flight");
        let answer = run_effect_now(ctx, effect);
        self.apply(ctx, state, answer);
    }

    /// `text` typed into the Prompt box key by key, 180 ms apart, then a pause of `pause`.
    fn type_text(&mut self, ctx: &EffectContext, state: &mut State, text: &str, pause: Duration) {
        let keymap = Keymap::default();
        for c in text.chars() {
            let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            let action = key_action(state, &keymap, &key).expect("a key in the Prompt box");
            self.apply(ctx, state, action);
            self.advance(ctx, state, Duration::from_millis(180));
        }
        self.advance(ctx, state, pause);
    }

    /// Move the clock on by `by`, firing the timers due meanwhile in order.
    fn advance(&mut self, ctx: &EffectContext, state: &mut State, by: Duration) {
        let until = self.now + by;
        while let Some(next) = (0..self.timers.len())
            .filter(|&i| self.timers[i].0 <= until)
            .min_by_key(|&i| self.timers[i].0)
        {
            let (due, action) = self.timers.remove(next);
            self.now = due;
            self.apply(ctx, state, action);
        }
        self.now = until;
    }
}

/// The texts of every question the server was asked to embed since `from` requests (a
/// question is one request of its own; the catalog goes in batches).
fn questions_asked(server: &LlmServer, from: usize) -> Vec<Vec<String>> {
    server.embedded_inputs().split_off(from)
}

/// A console with the layer on (`endpoint:test/embed-ok`), the Tier C model selected and
/// the Prompt box focused and empty; the server's request count then.
fn console_with_layer_on(server: &LlmServer, home: &Path) -> (EffectContext, State, usize) {
    let ws = open(home);
    let config = ws.config().unwrap();
    let (mut ctx, mut state) = start(&ws, &config, &Default::default(), false);
    let job = start_semantic(&ws, &config, &mut state).unwrap();
    let layer = job.run();
    assert!(layer.is_ok(), "{:?}", layer.as_ref().err());
    let replan = semantic_ready(&mut ctx, &mut state, layer);
    run_all(&ctx, &mut state, replan);
    let row = row_of(&state, MODEL);
    apply(
        &ctx,
        &mut state,
        [
            Action::FocusBudgets,
            Action::SelectRow(row),
            Action::FocusPrompt,
        ],
    );
    let before = server.embedded_inputs().len();
    (ctx, state, before)
}

/// Tester 16 F10: typing a 30-character prompt at about 5 keys a second sent 27
/// `/embeddings` requests, one per debounced plan, all in flight at once. The lexical
/// preview still follows every key, but the question is embedded once the text has been
/// still: here once, for the final text, whose preview then carries the semantic part.
#[test]
fn typing_a_prompt_embeds_the_question_once_it_has_settled_not_per_key() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-ok"));
    let (ctx, mut state, before) = console_with_layer_on(&server, home.path());
    let text = "summarise the quarterly report";
    assert_eq!(text.len(), 30);
    let mut clock = Clock::default();
    let keymap = Keymap::default();
    for (i, c) in text.chars().enumerate() {
        let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        let action = key_action(&state, &keymap, &key).expect("a key in the Prompt box");
        clock.apply(&ctx, &mut state, action);
        clock.advance(&ctx, &mut state, Duration::from_millis(180));
        // The preview follows the keys, as before: planned for the text typed so far.
        let shown = state.request.as_ref().map(|r| r.planned.prompt.bytes);
        assert_eq!(shown, Some(i + 1), "the preview after key {}", i + 1);
    }
    clock.advance(&ctx, &mut state, Duration::from_secs(3));
    let asked = questions_asked(&server, before);
    assert_eq!(
        asked,
        [vec![text.to_string()]],
        "{} requests for {} keys: one is for the text as it settled",
        asked.len(),
        text.len()
    );
    assert!(state.planning.is_none());
    let shown = state.request.as_ref().unwrap();
    assert_eq!(shown.planned.prompt.bytes, text.len());
    assert!(shown.semantic.is_some(), "ranked with the layer");
}

/// Latest wins, one at a time: text that settles while the question of an older text is
/// being embedded (a slow endpoint) waits for that call; the older answer is not shown, the
/// newest text is embedded next, and texts that settled in between are never embedded.
#[test]
fn one_question_is_embedded_at_a_time_and_the_newest_text_goes_next() {
    let server = LlmServer::start();
    let home = workspace(&server, Some("endpoint:test/embed-ok"));
    let (ctx, mut state, before) = console_with_layer_on(&server, home.path());
    let settle = Duration::from_millis(QUESTION_SETTLE_MS);
    let mut clock = Clock {
        holding: true,
        ..Clock::default()
    };
    clock.type_text(&ctx, &mut state, "book a flight", settle);
    assert_eq!(clock.held.len(), 1, "the settled text is being embedded");
    // Typed on while that call is out, twice pausing long enough to settle: the preview
    // follows lexically and says the layer waits; no second call goes out.
    clock.type_text(&ctx, &mut state, " to lisbon", settle);
    let last = "book a flight to lisbon for friday";
    clock.type_text(&ctx, &mut state, " for friday", settle * 3);
    assert_eq!(questions_asked(&server, before), Vec::<Vec<String>>::new());
    let shown = state.request.as_ref().unwrap();
    assert_eq!(shown.planned.prompt.bytes, last.len());
    assert!(shown.semantic_waiting && shown.semantic.is_none());
    apply(&ctx, &mut state, [Action::Resize]);
    let screen = render(&state, 230, 160);
    assert!(
        screen.contains("· semantic layer once typing pauses"),
        "{screen}"
    );

    // The older call comes back: its answer is dropped, and the newest text goes next.
    clock.answer_held(&ctx, &mut state);
    let shown = state.request.as_ref().unwrap();
    assert_eq!(
        shown.planned.prompt.bytes,
        last.len(),
        "no older text shown"
    );
    assert_eq!(clock.held.len(), 1, "the newest text is being embedded");
    clock.answer_held(&ctx, &mut state);
    assert!(clock.held.is_empty() && state.planning.is_none());
    assert_eq!(
        questions_asked(&server, before),
        [vec!["book a flight".to_string()], vec![last.to_string()]]
    );
    let shown = state.request.as_ref().unwrap();
    assert_eq!(shown.planned.prompt.bytes, last.len());
    assert!(shown.semantic.is_some(), "ranked with the layer");
    assert!(!shown.semantic_waiting);

    // The same text planned again (another tier) asks the embedder nothing.
    clock.apply(&ctx, &mut state, Action::CycleTier);
    clock.answer_held(&ctx, &mut state);
    assert_eq!(questions_asked(&server, before).len(), 2);
    let shown = state.request.as_ref().unwrap();
    assert!(shown.semantic.is_some(), "ranked with the layer");
}
