//! The stages before the model, per prompt (DESIGN §5): ranking over 1,000 and 10,000
//! entries, the planner per message, a briefing of a 10 MB paste, and a whole preview.
//!
//! `cargo bench --bench preview`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxconsole::core::gate::{briefing, detect_kind};
use ctxconsole::core::rank::RankIndex;
use ctxconsole::preview::preview;
use ctxconsole::workspace::{SAMPLE_PLANNER_EVAL, Workspace, WorkspaceOptions};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::generated;

fn ranking(c: &mut Criterion) {
    let mut group = c.benchmark_group("rank per query");
    for n in [1_000, 10_000] {
        let guide = generated(n);
        let index = RankIndex::new(&guide);
        group.bench_with_input(BenchmarkId::from_parameter(n), &index, |b, index| {
            b.iter(|| {
                black_box(index.rank(
                    "draft a blog post from this memory and render an image",
                    None,
                ))
            })
        });
    }
    group.finish();
}

fn planner(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .expect("sample workspace");
    let names: Vec<&str> = ws.catalog.guide().entry_names().map(|(n, _)| n).collect();
    let messages: Vec<String> = SAMPLE_PLANNER_EVAL
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["message"].as_str().map(str::to_string))
        .collect();
    let mut i = 0;
    c.bench_function("planner per message (120 labelled, round robin)", |b| {
        b.iter(|| {
            i = (i + 1) % messages.len();
            black_box(ws.planner.plan(&messages[i], &names))
        })
    });
    let ctx = ws.preview_context(false);
    c.bench_function("whole preview, sample workspace, Tier C", |b| {
        b.iter(|| {
            black_box(
                preview(
                    &ctx,
                    "openrouter/openrouter/free",
                    None,
                    "remember this launch note, draft a blog from it and make an illustration",
                    "",
                )
                .expect("preview"),
            )
        })
    });
}

fn briefing_10mb(c: &mut Criterion) {
    let mut log = String::with_capacity(10_500_000);
    let mut i = 0u64;
    while log.len() < 10_000_000 {
        i += 1;
        if i.is_multiple_of(5_000) {
            log.push_str("2026-11-22T10:00:00Z ERROR upstream timed out after 30s\n");
        } else {
            log.push_str("2026-11-22T10:00:00Z INFO request served in 12ms, status 200 ok\n");
        }
    }
    let mut group = c.benchmark_group("briefing");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("10 MB log", |b| {
        b.iter(|| {
            black_box(briefing(
                &log,
                detect_kind(None, &log),
                "0123456789abcdef",
                None,
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, ranking, planner, briefing_10mb);
criterion_main!(benches);
