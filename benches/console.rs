//! Key → frame: what an operator waits for after a key in the console on the sample
//! workspace — the action applied, every effect it asks for run to completion the way the
//! runtime runs them (off the UI thread there; inline here, so the figure is the whole
//! wait), and one 160×50 frame drawn.

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;

use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{EffectContext, run_effect_now, start, ui};
use ctxconsole::workspace::{StoreChoice, Workspace, WorkspaceOptions};

fn apply(ctx: &EffectContext, state: &mut State, action: Action) {
    let mut queue = vec![action];
    while let Some(a) = queue.pop() {
        for effect in update(state, a) {
            queue.push(run_effect_now(ctx, effect));
        }
    }
}

fn frame(term: &mut Terminal<TestBackend>, state: &State, keymap: &Keymap) {
    term.draw(|f| ui::draw(f, state, &Theme::plain(), keymap))
        .expect("draw");
}

/// A console on a fresh sample workspace with its own seeded history store.
fn console() -> (tempfile::TempDir, Workspace, EffectContext, State) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .expect("sample workspace");
    let store = StoreChoice {
        path: Some(dir.path().join("history.sqlite")),
        sample: true,
    };
    let (ctx, state) = start(&ws, &ws.config().unwrap(), &store, false);
    (dir, ws, ctx, state)
}

fn key_to_frame(c: &mut Criterion) {
    let (_dir, _ws, ctx, mut state) = console();
    let keymap = Keymap::default();
    let mut term = Terminal::new(TestBackend::new(160, 50)).expect("terminal");
    let mut group = c.benchmark_group("key to frame (sample workspace, 160x50)");
    group.sample_size(20);

    // Budgets: the next model, its request planned, and the frame.
    group.bench_function("Budgets: next model (plan + draw)", |b| {
        b.iter(|| {
            apply(&ctx, &mut state, Action::Down);
            if state.budgets.selected + 1 >= state.budgets.visible.len() {
                apply(&ctx, &mut state, Action::Top);
            }
            frame(&mut term, &state, &keymap);
            black_box(state.budgets.selected)
        })
    });

    // Prompt: one typed character, the request planned once (planner, ranking, gate,
    // compaction, messages) for every pane.
    apply(&ctx, &mut state, Action::FocusPrompt);
    apply(
        &ctx,
        &mut state,
        Action::Paste(
            "remember this launch note, draft a blog from it and make an illustration".into(),
        ),
    );
    group.bench_function("Prompt: one character typed (plan + draw)", |b| {
        b.iter(|| {
            apply(&ctx, &mut state, Action::Paste("s".into()));
            frame(&mut term, &state, &keymap);
            black_box(state.request.is_some())
        })
    });

    // Focus change: nothing to compute, the frame alone.
    group.bench_function("Tab: next pane (draw only)", |b| {
        b.iter(|| {
            apply(&ctx, &mut state, Action::FocusNext);
            frame(&mut term, &state, &keymap);
        })
    });
    group.finish();
}

/// Issue 17 item 7: the first selection of an o200k model after the console started. The
/// start-up thread builds the BPE tables (`tokens::warm_up`, done here in the setup as the
/// console does before anyone can press a key); each iteration is a fresh console on a
/// fresh workspace, so the row's request is planned for the first time.
fn first_o200k_selection(c: &mut Criterion) {
    use ctxconsole::core::budget::Tokenizer;
    let mut group = c.benchmark_group("key to frame (sample workspace, 160x50)");
    group.sample_size(20);
    group.bench_function("Budgets: first selection of an o200k model", |b| {
        b.iter_batched(
            || {
                let (dir, ws, ctx, state) = console();
                ctxconsole::core::tokens::warm_up(Tokenizer::O200k);
                let row = state
                    .budgets
                    .visible
                    .iter()
                    .position(|&i| {
                        Tokenizer::for_model_id(&state.budgets.rows[i].id) == Tokenizer::O200k
                    })
                    .expect("the sample has an o200k row") as u64;
                let term = Terminal::new(TestBackend::new(160, 50)).expect("terminal");
                (dir, ws, ctx, state, row, term)
            },
            |(dir, ws, ctx, mut state, row, mut term)| {
                apply(&ctx, &mut state, Action::SelectRow(row));
                frame(&mut term, &state, &Keymap::default());
                black_box(state.request.is_some());
                (dir, ws)
            },
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, key_to_frame, first_o200k_selection);
criterion_main!(benches);
