//! History at scale (DESIGN §5): mining a store of 100,000 and of 1,000,000 plans, and
//! the History pane on each: a key pressed, its queries run as the console runs them
//! (concurrently, each answer drawn as it comes), timed to the first frame that shows the
//! plans page and to the last answer.
//!
//! `cargo bench --bench history`. The stores are generated once, deterministically, into
//! `target/bench-history/` (the 1M store takes a few minutes and about 1.3 GB); set
//! `CTXCONSOLE_BENCH_SIZES=100000` to skip the big one.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxconsole::core::history::Outcome;
use ctxconsole::store::generate::generate_store;
use ctxconsole::store::history::{HistoryStore, PlanFilter};
use ctxconsole::store::view::{HistoryAnswer, HistoryQuery, PAGE, model_rows, run_query};
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
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
            b.iter(|| black_box(s.trends(&all, i64::MAX).expect("trends")))
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

/// The console's runtime in small (`tui::event_loop`): every effect on a thread of its
/// own, as `spawn_blocking` runs them; answers applied as they come, a frame drawn after
/// each. Starts from the effects a key asked for. Returns when the first frame for which
/// `shows` holds was drawn (what the operator waits for), and when the last answer was in.
fn as_the_runtime(
    ctx: &EffectContext,
    state: &mut State,
    effects: Vec<Effect>,
    term: &mut Terminal<TestBackend>,
    started: Instant,
    shows: impl Fn(&State) -> bool,
) -> (Duration, Duration) {
    let (tx, rx) = mpsc::channel::<Action>();
    let mut running = 0usize;
    let spawn = |effects: Vec<Effect>, running: &mut usize| {
        for e in effects {
            *running += 1;
            let (ctx, tx) = (ctx.clone(), tx.clone());
            std::thread::spawn(move || {
                let _ = tx.send(run_effect_now(&ctx, e));
            });
        }
    };
    spawn(effects, &mut running);
    let mut first = None;
    let mut draw = |state: &State, first: &mut Option<Duration>| {
        term.draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
            .expect("draw");
        if first.is_none() && shows(state) {
            *first = Some(started.elapsed());
        }
    };
    draw(state, &mut first);
    while running > 0 {
        let a = rx.recv().expect("an answer");
        running -= 1;
        let more = update(state, a);
        spawn(more, &mut running);
        draw(state, &mut first);
    }
    let all = started.elapsed();
    (first.unwrap_or(all), all)
}

/// The plans list's first page is on screen with its count.
fn page_drawn(state: &State) -> bool {
    state.history.plans.is_some()
}

/// Press `4` on a fresh console over the store.
fn open_pane(
    ctx: &EffectContext,
    state: &mut State,
    term: &mut Terminal<TestBackend>,
) -> (Duration, Duration) {
    let started = Instant::now();
    let effects = update(state, Action::FocusHistory);
    let t = as_the_runtime(ctx, state, effects, term, started, page_drawn);
    assert!(state.history.detail.is_some() && !state.history.model_rows.is_empty());
    t
}

/// Press `o` with guarded plans shown: the filter moves on to failed plans.
fn filter_to_failed(
    ctx: &EffectContext,
    opened: &State,
    term: &mut Terminal<TestBackend>,
) -> (Duration, Duration) {
    let mut s = opened.clone();
    s.history.filter.outcome = Some(Outcome::Guarded);
    let started = Instant::now();
    let effects = update(&mut s, Action::CycleOutcome);
    assert_eq!(s.history.filter.outcome, Some(Outcome::Failed));
    let t = as_the_runtime(ctx, &mut s, effects, term, started, page_drawn);
    assert!(s.history.groups.is_some() && !s.history.model_rows.is_empty());
    t
}

/// Criterion's time for `iters` runs of `run`, taking the part `pick` chooses.
fn timed(
    iters: u64,
    mut run: impl FnMut() -> (Duration, Duration),
    pick: fn((Duration, Duration)) -> Duration,
) -> Duration {
    (0..iters).map(|_| pick(run())).sum()
}

fn pane(c: &mut Criterion) {
    let (_d, ws) = workspace();
    let mut group = c.benchmark_group("History pane");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    for n in sizes() {
        let path = store(&ws, n);
        let ctx = EffectContext {
            preview: ws.preview_context(false),
            history: Some(path.clone()),
            opening: None,
            replay: Err("not used here".into()),
            workspace: ws.dir.clone(),
            lock_wait: ctxconsole::store::sqlite::BUSY_TIMEOUT,
        };
        let mut term = Terminal::new(TestBackend::new(160, 45)).expect("terminal");
        let first: fn((Duration, Duration)) -> Duration = |t| t.0;
        let all: fn((Duration, Duration)) -> Duration = |t| t.1;
        for (name, pick) in [
            ("open: first page drawn", first),
            ("open: every answer in", all),
        ] {
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    timed(
                        iters,
                        || open_pane(&ctx, &mut initial_state(&ws), &mut term),
                        pick,
                    )
                })
            });
        }
        let mut opened = initial_state(&ws);
        open_pane(&ctx, &mut opened, &mut term);
        // Scrolling to the last plan (`G`) fetches the page it lands on.
        group.bench_function(BenchmarkId::new("jump to the last plan", n), |b| {
            b.iter(|| {
                let q = HistoryQuery::Plans {
                    filter: PlanFilter::default(),
                    offset: (n as u64 - 1) / PAGE * PAGE,
                };
                let (a, _) = run_query(&path, &ws.budgets, &q).expect("page");
                assert!(matches!(&a, HistoryAnswer::Plans(p) if !p.rows.is_empty()));
                black_box(a)
            })
        });
        for (name, pick) in [
            ("filter to failed: first page drawn", first),
            ("filter to failed: every answer in", all),
        ] {
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    timed(iters, || filter_to_failed(&ctx, &opened, &mut term), pick)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, pane, mining);
criterion_main!(benches);
