//! The stages before the model, per prompt (DESIGN §5): ranking over 1,000 and 10,000
//! entries, the planner per message, a briefing of a 10 MB paste, and a whole preview; and
//! the adversarial inputs that once took quadratic time (decoding 100 KB of `[`, ranking a
//! 1 MB name).
//!
//! `cargo bench --bench preview`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxconsole::core::catalog::{Pack, PackMetadata, RoutingGuide};
use ctxconsole::core::gate::{briefing, detect_kind};
use ctxconsole::core::rank::RankIndex;
use ctxconsole::core::response::{decode_answer, strip_reasoning};
use ctxconsole::preview::preview;
use ctxconsole::sample::SAMPLE_PLANNER_EVAL;
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::{generated, generated_in_families};

/// The question every ranking bench asks.
const QUESTION: &str = "draft a blog post from this memory and render an image";

/// One bench group: `rank` run over the catalogs `catalog` makes of 1,000 and 10,000
/// entries, each index checked by `check` first.
fn rank_group(
    c: &mut Criterion,
    name: &str,
    catalog: fn(usize) -> RoutingGuide,
    check: fn(&RankIndex, usize),
    rank: fn(&RankIndex),
) {
    let mut group = c.benchmark_group(name);
    for n in [1_000, 10_000] {
        let guide = catalog(n);
        let index = RankIndex::new(&guide);
        check(&index, n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &index, |b, index| {
            b.iter(|| rank(index))
        });
    }
    group.finish();
}

fn ranking(c: &mut Criterion) {
    let every_entry = |index: &RankIndex| {
        black_box(index.rank(QUESTION, None));
    };
    rank_group(c, "rank per query", generated, |_, _| {}, every_entry);
    // What a caller that shows the top and explains it asks for (`rank_top`): the same
    // scoring, the first 10 places selected instead of every entry sorted.
    rank_group(
        c,
        "rank top 10 per query",
        generated,
        |_, _| {},
        |index| {
            black_box(index.rank_top(QUESTION, None, 10));
        },
    );
    // The same catalogs with every entry in one of 40 service families (`Acme.tool_40`):
    // what the family pass (a share of the best service-mate's score) costs.
    rank_group(
        c,
        "rank per query in families",
        generated_in_families,
        |index, n| {
            let lent = index
                .rank(QUESTION, None)
                .order
                .iter()
                .filter(|s| s.family > 0.0)
                .count();
            assert!(
                lent > n / 2,
                "the family pass lent points to {lent} of {n} entries"
            );
        },
        every_entry,
    );
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
                true,
                None,
            ))
        })
    });
    group.finish();
}

/// Inputs built to hit a quadratic path: each of these once took seconds to minutes.
fn adversarial(c: &mut Criterion) {
    let mut group = c.benchmark_group("adversarial");
    group.sample_size(10);
    let brackets = "[".repeat(100_000);
    group.bench_function("decode 100 KB of [", |b| {
        b.iter(|| black_box(decode_answer(&brackets)))
    });
    let nested = format!("{}x{}", "[".repeat(50_000), "]".repeat(50_000));
    group.bench_function(
        "decode 100 KB of [[…x…]] (every span closes, none parses)",
        |b| b.iter(|| black_box(decode_answer(&nested))),
    );
    let tags = "<think>x</think>".repeat(100_000 / 16);
    group.bench_function("strip 100 KB of <think>x</think>", |b| {
        b.iter(|| black_box(strip_reasoning(&tags)))
    });
    let one_word = "a".repeat(1_000_000);
    let guide = RoutingGuide {
        packs: vec![
            Pack {
                name: one_word.clone(),
                description: "A tool.".into(),
                metadata: PackMetadata::default(),
            },
            Pack {
                name: "get_weather".into(),
                description: "Get the weather for a city.".into(),
                metadata: PackMetadata::default(),
            },
        ],
        pipelines: vec![],
    };
    group.bench_function("index a catalog with a 1 MB one-word name", |b| {
        b.iter(|| black_box(RankIndex::new(&guide)))
    });
    let index = RankIndex::new(&guide);
    group.bench_function("rank a 1 MB one-word intent", |b| {
        b.iter(|| black_box(index.rank(&one_word, None)))
    });
    // The longest question a ranking reads (16 KiB), all short quotes: blanking what it
    // quotes once checked every span per character (review 49 L3: 47 ms).
    let quotes = "'a' ".repeat(4_096);
    group.bench_function("rank a 16 KiB question of 4,096 quotes", |b| {
        b.iter(|| black_box(index.rank(&quotes, None)))
    });
    group.finish();
}

/// What the console's start-up thread takes off the first selection of an exact-tokenizer
/// model: building the BPE tables (the singletons are built once per process, so the
/// constructor is measured).
fn tokenizer_tables(c: &mut Criterion) {
    let mut group = c.benchmark_group("tokenizer tables");
    group.sample_size(10);
    group.bench_function("build o200k", |b| {
        b.iter(|| std::hint::black_box(tiktoken_rs::o200k_base().map(|_| ())))
    });
    group.bench_function("build cl100k", |b| {
        b.iter(|| std::hint::black_box(tiktoken_rs::cl100k_base().map(|_| ())))
    });
    group.finish();
}

criterion_group!(
    benches,
    ranking,
    planner,
    briefing_10mb,
    adversarial,
    tokenizer_tables
);
criterion_main!(benches);
