//! Recompaction on a model/tier change (DESIGN §5), beside the anchor's method of
//! re-serialising the whole catalog after every trim step, in the same run.
//!
//! `cargo bench --bench compaction`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxconsole::core::budget::Tokenizer;
use ctxconsole::core::catalog::RoutingGuide;
use ctxconsole::core::compact::{Allowance, CutOrder, PreparedCatalog, compact_reserialising};
use ctxconsole::import::catalog::parse_catalog;
use ctxconsole::sample::SAMPLE_CATALOG;
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::generated;

fn mcp_catalog() -> RoutingGuide {
    let mut all = RoutingGuide::default();
    let mut paths: Vec<_> = std::fs::read_dir("tests/data/mcp")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Ok(imported) = parse_catalog(&text, &path.display().to_string()) {
            all.packs.extend(imported.guide.packs);
        }
    }
    all
}

fn bench_case(
    c: &mut Criterion,
    name: &str,
    guide: RoutingGuide,
    allowance: Allowance,
    tok: Tokenizer,
) {
    let order = CutOrder::from_end(&guide);
    let prepared = PreparedCatalog::new(guide.clone());
    // Warm the per-entry memo as the console does on its first model.
    let warm = prepared.compact(allowance, tok, &order);
    let mut group = c.benchmark_group(format!("recompact/{name}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    eprintln!(
        "{name}: {} entries, {} → {} bytes, {} steps, {} cut",
        guide.entry_count(),
        warm.trim.before_bytes,
        warm.trim.after_bytes,
        warm.trim.dropped.len(),
        warm.trim.cut.len()
    );
    group.bench_function(BenchmarkId::new("prepared", tok.name()), |b| {
        b.iter(|| black_box(prepared.compact(allowance, tok, &order)))
    });
    group.bench_function(BenchmarkId::new("reserialising", tok.name()), |b| {
        b.iter(|| black_box(compact_reserialising(&guide, allowance, tok, &order)))
    });
    group.bench_function(BenchmarkId::new("prepared_cold", tok.name()), |b| {
        b.iter(|| black_box(PreparedCatalog::new(guide.clone()).compact(allowance, tok, &order)))
    });
    group.finish();
}

/// Tester 15 F3's catalog: `n` MCP tools of a like size, read as `compact --catalog` reads
/// them.
fn like_sized_tools(n: usize) -> RoutingGuide {
    let tools: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("tool_{i}"),
                "description": format!("does thing {i} ").repeat(20),
                "inputSchema": {"type": "object", "properties": {
                    "a": {"type": "string", "description": "x".repeat(100)}}}
            })
        })
        .collect();
    let text = serde_json::json!({ "tools": tools }).to_string();
    match parse_catalog(&text, "tools") {
        Ok(i) => i.guide,
        Err(e) => panic!("generated tools: {e}"),
    }
}

/// Many kept and many cut under an exact tokenizer with no byte cap: the crowding rule
/// and the put-back search the most there (tester 15 F3). The anchor's one-cut-at-a-time
/// method is left out: it re-serialises thousands of entries per cut.
fn many_cuts_case(c: &mut Criterion, n: usize, kept_share: usize) {
    let guide = like_sized_tools(n);
    let order = CutOrder::from_end(&guide);
    let prepared = PreparedCatalog::new(guide.clone());
    let all: Vec<usize> = (0..prepared.len()).collect();
    let allowance = Allowance {
        tokens: prepared.tokens(6, &all, Tokenizer::O200k) * kept_share / 100,
        bytes: None,
    };
    let warm = prepared.compact(allowance, Tokenizer::O200k, &order);
    eprintln!(
        "many_cuts_{n}: {} entries, {} tokens allowed, {} → {} tokens, {} cut",
        n,
        allowance.tokens,
        warm.trim.before_tokens,
        warm.trim.after_tokens,
        warm.trim.cut.len()
    );
    let mut group = c.benchmark_group(format!("recompact/many_cuts_{n}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    group.bench_function(BenchmarkId::new("prepared", "o200k"), |b| {
        b.iter(|| black_box(prepared.compact(allowance, Tokenizer::O200k, &order)))
    });
    group.bench_function(BenchmarkId::new("prepared_cold", "o200k"), |b| {
        b.iter(|| {
            black_box(PreparedCatalog::new(guide.clone()).compact(
                allowance,
                Tokenizer::O200k,
                &order,
            ))
        })
    });
    group.finish();
}

fn compaction(c: &mut Criterion) {
    let tier_c = Allowance {
        tokens: 22_944,
        bytes: Some(10_000),
    };
    let sample = match parse_catalog(SAMPLE_CATALOG, "sample") {
        Ok(i) => i.guide,
        Err(e) => panic!("sample catalog: {e}"),
    };
    bench_case(
        c,
        "sample_tier_c",
        sample.clone(),
        tier_c,
        Tokenizer::Estimate,
    );
    bench_case(
        c,
        "sample_tier_b_o200k",
        sample,
        Allowance {
            tokens: 8_000,
            bytes: Some(22_000),
        },
        Tokenizer::O200k,
    );
    bench_case(
        c,
        "mcp159_tier_c",
        mcp_catalog(),
        tier_c,
        Tokenizer::Estimate,
    );
    for n in [1_000, 10_000] {
        let guide = generated(n);
        // A budget that needs all six steps and no cut: the anchor's one-at-a-time cut
        // would be quadratic and says nothing more about the steps.
        let prepared = PreparedCatalog::new(guide.clone());
        let all: Vec<usize> = (0..prepared.len()).collect();
        let cap = prepared.bytes(6, &all);
        bench_case(
            c,
            &format!("generated_{n}"),
            guide,
            Allowance {
                tokens: usize::MAX,
                bytes: Some(cap),
            },
            Tokenizer::Estimate,
        );
    }
    // About tester 15's 2,000 tools for gpt-4o: 57 % of the fully trimmed catalog kept.
    many_cuts_case(c, 2_000, 57);
}

criterion_group!(benches, compaction);
criterion_main!(benches);
