//! The semantic layer's cost (issue 19 item 5) with the local all-MiniLM-L6-v2: embedding a
//! batch of 32 catalog entries (a 1,000-entry catalog is 32 such batches, once: the vectors
//! are kept), and one query — the question's requests embedded, the best similarity of each
//! of 1,000 entries, and the fusion with the lexical ranking.
//!
//! `scripts/fetch-minilm.sh && cargo bench --features semantic-local --bench semantic`

use criterion::{Criterion, criterion_group, criterion_main};
use ctxconsole::core::rank::{RankIndex, SEMANTIC_WEIGHT, entry_sentence};
use ctxconsole::embed::local::LocalEmbedder;
use ctxconsole::embed::{Embedder, Semantic};
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

mod common;
use common::generated;

fn semantic(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/minilm/all-MiniLM-L6-v2");
    let Ok(model) = LocalEmbedder::open(&dir) else {
        // Said, not silently passed: the bench measures nothing without the weights.
        eprintln!(
            "SKIPPED semantic bench: no all-MiniLM-L6-v2 in {} — run scripts/fetch-minilm.sh",
            dir.display()
        );
        return;
    };
    let guide = generated(1_000);
    let texts: Vec<String> = (0..32).map(|i| entry_sentence(&guide, i)).collect();
    let mut group = c.benchmark_group("semantic");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("embed 32 catalog entries (MiniLM, CPU)", |b| {
        b.iter(|| black_box(model.embed(&texts).map(|v| v.len()).unwrap_or(0)))
    });
    let layer = match Semantic::for_catalog(
        Box::new(LocalEmbedder::open(&dir).expect("opened above")),
        &guide,
        None,
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("semantic bench: embedding the catalog failed: {e:#}");
            return;
        }
    };
    let index = RankIndex::new(&guide);
    let question = "draft a blog post from this memory and render an image";
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(10));
    group.bench_function(
        "one query over 1,000 entries (embed + similarity + rank)",
        |b| {
            b.iter(|| {
                let sims = layer.similarities(question).unwrap_or_default();
                black_box(index.rank_semantic(question, None, &sims, SEMANTIC_WEIGHT))
            })
        },
    );
    group.finish();
}

criterion_group!(benches, semantic);
criterion_main!(benches);
