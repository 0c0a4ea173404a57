//! Chooses ranker weights on the tune halves only:
//! `cargo run --release --example rank_sweep [DIR] [--sets a,b] [--knobs k,…] [--base k=v,…]
//! [--per-set]`.
//!
//! Reads every set `ctxconsole eval rank --suite DIR` reads (default `tests/data`), drops
//! every test-half question before ranking anything, and prints, for the default weights and
//! for each variation below, the mean over sets of tune recall@1, recall@5, all-expected@10
//! and MRR (and the worst set's recall@5 lead over BM25), so a change is judged on every set
//! at once and never on the questions the README reports. `--per-set` prints each set's
//! tune recall@5 (beside BM25's) and all@10 for every variation too.
//!
//! `--semantic local:DIR | endpoint:MODEL` sweeps the semantic layer's weight instead
//! (build with `--features semantic-local` for a local model): only the tune halves'
//! questions are embedded (vectors kept in the workspace's cache.sqlite), and each weight's
//! mean tune recall@5 / all@10 is printed beside the lexical ranker's.

use ctxconsole::cli::eval::sets::{Half, NamedSet, suite};
use ctxconsole::cli::eval::{Keep, Layer, evaluate, evaluate_with};
use ctxconsole::core::rank::RankParams;
use ctxconsole::import::labels::RankSet;
use std::path::PathBuf;

/// A set cut down to its tune half.
fn tune_half(s: &NamedSet) -> NamedSet {
    let cases: Vec<_> = s
        .set
        .cases
        .iter()
        .enumerate()
        .filter(|(i, _)| s.half(*i) == Half::Tune)
        .map(|(_, c)| c.clone())
        .collect();
    NamedSet {
        name: s.name.clone(),
        source: s.source.clone(),
        composed_halves: Some(vec![Half::Tune; cases.len()]),
        set: RankSet {
            guide: s.set.guide.clone(),
            cases,
            notes: Vec::new(),
        },
    }
}

struct Score {
    r1: f64,
    r5: f64,
    all10: f64,
    mrr: f64,
    /// The smallest recall@5 lead over BM25 of any set, and that set.
    worst_lead: (f64, String),
}

fn measure(sets: &[NamedSet], bm25_r5: &[f64], params: RankParams, per_set: bool) -> Score {
    let mut s = Score {
        r1: 0.0,
        r5: 0.0,
        all10: 0.0,
        mrr: 0.0,
        worst_lead: (f64::INFINITY, String::new()),
    };
    for (set, base) in sets.iter().zip(bm25_r5) {
        let (report, _) = evaluate(set, params, Keep::default());
        let m = report.tune.ranker;
        if per_set {
            println!(
                "  {:<24} r@5 {:.3} (BM25 {:.3})  all@10 {:.3}",
                set.name, m.recall_at_5, base, m.all_at_10
            );
        }
        s.r1 += m.recall_at_1;
        s.r5 += m.recall_at_5;
        s.all10 += m.all_at_10;
        s.mrr += m.mrr;
        let lead = m.recall_at_5 - base;
        if lead < s.worst_lead.0 {
            s.worst_lead = (lead, set.name.clone());
        }
    }
    let n = sets.len().max(1) as f64;
    s.r1 /= n;
    s.r5 /= n;
    s.all10 /= n;
    s.mrr /= n;
    s
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from("tests/data");
    let mut only: Option<Vec<String>> = None;
    let mut knob_filter: Option<Vec<String>> = None;
    let mut base_overrides: Vec<(String, f64)> = Vec::new();
    let mut semantic: Option<String> = None;
    let mut per_set = false;
    let list = |s: Option<String>| s.map(|s| s.split(',').map(str::to_string).collect());
    while let Some(a) = args.next() {
        if a == "--sets" {
            only = list(args.next());
        } else if a == "--semantic" {
            semantic = args.next();
        } else if a == "--per-set" {
            per_set = true;
        } else if a == "--knobs" {
            knob_filter = list(args.next());
        } else if a == "--base" {
            for kv in list(args.next()).unwrap_or_default() {
                if let Some((k, v)) = kv.split_once('=') {
                    base_overrides.push((k.to_string(), v.parse()?));
                }
            }
        } else {
            dir = PathBuf::from(a);
        }
    }
    let sets: Vec<NamedSet> = suite(&dir)?
        .iter()
        .filter(|s| only.as_ref().is_none_or(|o| o.contains(&s.name)))
        .map(tune_half)
        .collect();
    if let Some(spec) = semantic {
        return sweep_semantic(&sets, &spec);
    }
    let bm25: Vec<f64> = sets
        .iter()
        .map(|s| {
            let keep = Keep {
                baselines: true,
                ..Keep::default()
            };
            evaluate(s, RankParams::default(), keep)
                .0
                .tune
                .bm25
                .recall_at_5
        })
        .collect();
    let mut base = RankParams::default();
    for (k, v) in &base_overrides {
        set(&mut base, k, *v);
    }
    let wanted = |k: &str| {
        knob_filter
            .as_ref()
            .is_none_or(|f| f.iter().any(|x| x == k))
    };
    let mut variants: Vec<(String, RankParams)> = vec![("base".into(), base)];
    for f in (0..base.fields.len()).filter(|_| wanted("fields")) {
        for scale in [0.5, 1.5] {
            let mut p = base;
            p.fields[f].0 *= scale;
            variants.push((format!("field {f} weight ×{scale}"), p));
        }
    }
    let knobs: &[(&str, &[f64])] = &[
        ("coord", &[0.0, 0.3, 0.8]),
        ("name_coverage", &[0.3, 1.2]),
        ("pair", &[0.5, 2.0]),
        ("related", &[0.0, 0.3, 0.8]),
        ("action", &[0.3, 0.85, 1.0]),
        ("action_synonym", &[0.0, 0.1, 0.4]),
        ("k1", &[0.8, 1.6, 2.5]),
        ("b", &[0.0, 1.5]),
        ("requests", &[0.0]),
        ("diversify", &[0.0, 2.0, 3.0, 5.0]),
        ("params_weight", &[0.3, 0.5, 0.7]),
        ("rare_floor", &[0.0, 0.3, 0.8, 1.0]),
        ("rare_idf", &[0.5, 0.6, 0.8, 0.9]),
        ("mined", &[0.1, 0.2, 0.4]),
        ("plain_bm25", &[0.25, 0.5, 1.0]),
        ("mined_min_count", &[1.0, 3.0]),
        ("lookups", &[0.0, 1.0, 3.0, 5.0]),
        ("thesaurus", &[0.0, 0.5, 0.85, 1.0]),
        ("second_share", &[0.4, 0.45, 0.5, 0.55, 0.6]),
        ("inferred", &[0.0, 0.4, 0.5, 0.75, 1.0]),
        ("quoted", &[0.0, 0.25, 0.5, 0.75, 1.0]),
        ("family", &[0.05, 0.1, 0.15, 0.2, 0.3]),
    ];
    for &(label, values) in knobs.iter().filter(|(k, _)| wanted(k)) {
        for &value in values {
            let mut p = base;
            set(&mut p, label, value);
            variants.push((format!("{label} {value}"), p));
        }
    }
    println!(
        "{} sets, tune halves only: {}",
        sets.len(),
        sets.iter()
            .map(|s| format!("{} ({})", s.name, s.set.cases.len()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (label, params) in variants {
        let s = measure(&sets, &bm25, params, per_set);
        println!(
            "{label:<24} r@1 {:.4}  r@5 {:.4}  all@10 {:.4}  mrr {:.4}  worst r@5 lead {:+.3} ({})",
            s.r1, s.r5, s.all10, s.mrr, s.worst_lead.0, s.worst_lead.1
        );
    }
    Ok(())
}

/// The semantic layer's weight over a grid, on the tune halves only.
fn sweep_semantic(sets: &[NamedSet], spec: &str) -> anyhow::Result<()> {
    use ctxconsole::embed::{SemanticSpec, open_embedder, question_similarities};
    use ctxconsole::store::cache::OutputCache;
    use ctxconsole::workspace::{Workspace, WorkspaceOptions};
    let ws = Workspace::open(&WorkspaceOptions::default())?;
    let embedder = open_embedder(
        &SemanticSpec::parse(spec, "--semantic")?,
        &ws.config()?,
        "config.toml",
    )?;
    let mut cache = OutputCache::open_in(&ws.dir)?;
    let mut sims = Vec::with_capacity(sets.len());
    for s in sets {
        let started = std::time::Instant::now();
        let questions: Vec<&str> = s.set.cases.iter().map(|c| c.intent.as_str()).collect();
        let (q, embedded) = question_similarities(
            embedder.as_ref(),
            Some(&mut cache),
            &s.set.guide,
            &questions,
        )?;
        println!(
            "{}: embedded {embedded} texts in {:.1}s",
            s.name,
            started.elapsed().as_secs_f64()
        );
        sims.push(q);
    }
    let params = RankParams::default();
    for weight in [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0] {
        let (mut r5, mut all10, mut mrr) = (0.0, 0.0, 0.0);
        let mut worst = (f64::INFINITY, String::new());
        for (s, q) in sets.iter().zip(&sims) {
            let keep = Keep {
                baselines: true,
                ..Keep::default()
            };
            let layer = Layer {
                similarities: q,
                weight,
                embedder: embedder.id(),
            };
            let m = evaluate_with(s, params, keep, Some(layer)).0.tune;
            r5 += m.ranker.recall_at_5;
            all10 += m.ranker.all_at_10;
            mrr += m.ranker.mrr;
            let lead = m.ranker.recall_at_5 - m.bm25.recall_at_5;
            if lead < worst.0 {
                worst = (lead, s.name.clone());
            }
        }
        let n = sets.len().max(1) as f64;
        println!(
            "semantic weight {weight:<5} r@5 {:.4}  all@10 {:.4}  mrr {:.4}  worst r@5 lead {:+.3} ({})",
            r5 / n,
            all10 / n,
            mrr / n,
            worst.0,
            worst.1
        );
    }
    Ok(())
}

/// One knob of the weights set to `value`.
fn set(p: &mut RankParams, label: &str, value: f64) {
    match label {
        "coord" => p.coord = value,
        "name_coverage" => p.name_coverage = value,
        "pair" => p.pair = value,
        "related" => p.related = value,
        "action" => p.action_conflict = value,
        "action_synonym" => p.action_synonym = value,
        "k1" => p.k1 = value,
        "b" => p
            .fields
            .iter_mut()
            .for_each(|f| f.1 = (f.1 * value).min(1.0)),
        "requests" => p.requests = value > 0.0,
        "diversify" => p.diversify = value as usize,
        "rare_floor" => p.rare_floor = value,
        "rare_idf" => p.rare_idf = value,
        "mined" => p.mined = value,
        "plain_bm25" => p.plain_bm25 = value,
        "mined_min_count" => p.mined_min_count = value as usize,
        "lookups" => p.lookups = value as usize,
        "thesaurus" => p.thesaurus = value,
        "second_share" => p.second_share = value,
        "inferred" => p.inferred = value,
        "quoted" => p.quoted = value,
        "family" => p.family = value,
        "params_weight" => p.fields[7].0 = value,
        "name_weight" => p.fields[0].0 = value,
        "description_weight" => p.fields[4].0 = value,
        "parameter_names_weight" => p.fields[6].0 = value,
        _ => panic!("unknown knob {label}"),
    }
}
