//! History at scale (DESIGN §5): mining a store of 100,000 and of 1,000,000 plans, and
//! opening the History pane on each (the queries it runs, then one frame drawn).
//!
//! `cargo bench --bench history`. The stores are generated once, deterministically, into
//! `target/bench-history/` (the 1M store takes a few minutes and about 1.3 GB); set
//! `CTXCONSOLE_BENCH_SIZES=100000` to skip the big one.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxconsole::core::history::Outcome;
use ctxconsole::store::generate::generate_store;
use ctxconsole::store::history::{HistoryStore, PlanFilter};
use ctxconsole::store::view::{HistoryQuery, model_rows, run_query};
use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{Effect, State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{EffectContext, initial_state, run_effect_now, ui};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

fn sizes() -> Vec<usize> {
    std::env::var("CTXCONSOLE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000])
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .expect("sample workspace");
    (dir, ws)
}

/// The store of `n` plans, generated on first use.
fn store(ws: &Workspace, n: usize) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-history");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join(format!("plans-{n}.sqlite"));
    if !path.exists() {
        let partial = dir.join(format!("plans-{n}.partial.sqlite"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", partial.display()));
        }
        eprintln!("generating {} (once)…", path.display());
        let started = std::time::Instant::now();
        generate_store(&partial, n, 1, &ws.pipeline_ids(), |_| {}).expect("generate");
        // Checkpoint the WAL into the file so the rename carries everything.
        drop(HistoryStore::open(&partial).expect("reopen"));
        std::fs::rename(&partial, &path).expect("rename");
        eprintln!("generated in {:.1}s", started.elapsed().as_secs_f64());
    }
    path
}

fn mining(c: &mut Criterion) {
    let (_d, ws) = workspace();
    let names: Vec<String> = ws.index.names().map(str::to_string).collect();
    let mut group = c.benchmark_group("history mining");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for n in sizes() {
        let path = store(&ws, n);
        let s = HistoryStore::open(&path).expect("open");
        let all = PlanFilter::default();
        // Aggregating every plan (a filter that keeps them all forces the GROUP BY).
        let every = PlanFilter {
            since: Some(0),
            ..Default::default()
        };
        group.bench_function(BenchmarkId::new("model outcomes + tier", n), |b| {
            b.iter(|| black_box(model_rows(&s, &all, &ws.budgets).expect("models")))
        });
        group.bench_function(BenchmarkId::new("drift counts + last 30", n), |b| {
            b.iter(|| black_box(s.drift(&all, 30).expect("drift")))
        });
        group.bench_function(BenchmarkId::new("drift and outcomes by week", n), |b| {
            b.iter(|| black_box(s.trends(&all).expect("trends")))
        });
        group.bench_function(BenchmarkId::new("groups by shape (aggregate)", n), |b| {
            b.iter(|| black_box(s.groups(&every, 0, 30).expect("groups")))
        });
        group.bench_function(BenchmarkId::new("step pairs", n), |b| {
            b.iter(|| black_box(s.step_pairs(&all, 10).expect("pairs")))
        });
        group.bench_function(BenchmarkId::new("unused entries", n), |b| {
            b.iter(|| black_box(s.unused(&names, None).expect("unused")))
        });
    }
    group.finish();
}

/// Focus History on a fresh console over the store, run every effect it asks for the way
/// the runtime does, and draw the frame: what an operator waits for after pressing `4`.
fn open_pane(
    ws: &Workspace,
    ctx: &EffectContext,
    state: &mut State,
    term: &mut Terminal<TestBackend>,
) {
    let mut queue = vec![Action::FocusHistory];
    while let Some(a) = queue.pop() {
        for e in update(state, a) {
            queue.push(run_effect_now(ctx, e));
        }
    }
    assert!(state.history.detail.is_some() && !state.history.model_rows.is_empty());
    let _ = ws;
    term.draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
        .expect("draw");
}

fn pane(c: &mut Criterion) {
    let (_d, ws) = workspace();
    let mut group = c.benchmark_group("History pane open (queries + first frame)");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    for n in sizes() {
        let path = store(&ws, n);
        let ctx = EffectContext {
            preview: ws.preview_context(false),
            history: Some(path.clone()),
            replay: Err("not used here".into()),
        };
        let mut term = Terminal::new(TestBackend::new(160, 45)).expect("terminal");
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let mut state = initial_state(&ws);
                open_pane(&ws, &ctx, &mut state, &mut term);
                black_box(state.history.plans.as_ref().map(|p| p.total))
            })
        });
        // Scrolling to the last plan fetches the page it lands on.
        let mut state = initial_state(&ws);
        open_pane(&ws, &ctx, &mut state, &mut term);
        group.bench_function(BenchmarkId::new("jump to the last plan", n), |b| {
            b.iter(|| {
                let q = HistoryQuery::Plans {
                    filter: PlanFilter::default(),
                    offset: (n as u64 / 200) * 200,
                };
                black_box(run_query(&path, &ws.budgets, &q).expect("page"))
            })
        });
        // A filter change: failed plans only (both lists, counts, models, the first plan).
        group.bench_function(BenchmarkId::new("filter to failed", n), |b| {
            b.iter(|| {
                let mut s = state.clone();
                s.history.filter.outcome = Some(Outcome::Failed);
                let mut queue: Vec<Action> = s
                    .history
                    .reload(&mut s.next_request)
                    .into_iter()
                    .map(|(request, query)| {
                        run_effect_now(&ctx, Effect::History { request, query })
                    })
                    .collect();
                while let Some(a) = queue.pop() {
                    for e in update(&mut s, a) {
                        queue.push(run_effect_now(&ctx, e));
                    }
                }
                black_box(s.history.plans.as_ref().map(|p| p.total))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pane, mining);
criterion_main!(benches);
