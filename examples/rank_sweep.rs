//! Measures ranker weights on BFCL: `cargo run --release --example rank_sweep [DIR]`.
//! Prints recall@1/@5 and MRR for both categories under the default weights and under each
//! variation listed below, so a change is judged on both sets at once, never on one.

use ctxconsole::cli::eval::ranks_of;
use ctxconsole::core::metrics::RankTally;
use ctxconsole::core::rank::{RankIndex, RankParams};
use ctxconsole::import::labels::{RankSet, load_bfcl};
use std::path::PathBuf;

fn measure(set: &RankSet, params: RankParams) -> (f64, f64, f64) {
    let index = RankIndex::with_params(&set.guide, params);
    let names: Vec<&str> = index.names().collect();
    let mut tally = RankTally::default();
    for case in &set.cases {
        let order = index.rank(&case.intent, None).indices();
        tally.add(&ranks_of(&order, &names, &case.expected));
    }
    let m = tally.metrics();
    (m.recall_at_1, m.recall_at_5, m.mrr)
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("tests/data/bfcl"), PathBuf::from);
    let sets = [
        ("multiple", load_bfcl(&dir, "multiple")?),
        ("live_multiple", load_bfcl(&dir, "live_multiple")?),
    ];
    let base = RankParams::default();
    let mut variants: Vec<(String, RankParams)> = vec![("default".into(), base)];
    for f in 0..base.fields.len() {
        for scale in [0.5, 1.5] {
            let mut p = base;
            p.fields[f].0 *= scale;
            variants.push((format!("field {f} weight ×{scale}"), p));
        }
    }
    for (label, value) in [
        ("coord", 0.3),
        ("coord", 0.8),
        ("name_coverage", 0.3),
        ("name_coverage", 1.2),
        ("pair", 0.5),
        ("pair", 2.0),
        ("related", 0.0),
        ("related", 0.3),
        ("related", 0.8),
        ("action", 1.0),
        ("action", 0.5),
        ("action", 0.85),
        ("k1", 0.8),
        ("k1", 1.6),
        ("k1", 2.5),
        ("b", 0.0),
        ("b", 2.0),
        ("action", 0.3),
        ("action_synonym", 0.0),
        ("action_synonym", 0.1),
        ("action_synonym", 0.3),
        ("action_synonym", 0.5),
    ] {
        let mut p = base;
        match label {
            "coord" => p.coord = value,
            "name_coverage" => p.name_coverage = value,
            "pair" => p.pair = value,
            "action" => p.action_conflict = value,
            "action_synonym" => p.action_synonym = value,
            "k1" => p.k1 = value,
            "b" => p
                .fields
                .iter_mut()
                .for_each(|f| f.1 = (f.1 * value).min(1.0)),
            _ => p.related = value,
        }
        variants.push((format!("{label} {value}"), p));
    }
    for (label, params) in variants {
        let cells: Vec<String> = sets
            .iter()
            .map(|(name, set)| {
                let (r1, r5, mrr) = measure(set, params);
                format!("{name} r@1 {r1:.3} r@5 {r5:.3} mrr {mrr:.3}")
            })
            .collect();
        println!("{label:<28} {}", cells.join("   "));
    }
    Ok(())
}
