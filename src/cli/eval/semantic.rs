//! `eval rank --semantic`: every set ranked without and with the semantic layer, the layer's
//! own lift on each half with a paired bootstrap 95 % interval (fixed seed), beside BM25.

use serde::Serialize;
use std::path::PathBuf;

use super::sets::{Half, NamedSet};
use super::{
    BarStanding, Keep, Layer, Miss, NO_FIGURE, PROTOCOL, RankArgs, RankReport, bar_standing,
    describe_bar, describe_misses, describe_notes, evaluate, evaluate_with, figure_cell,
};
use crate::cli::out::eprint_line;
use crate::cli::table::render;
use crate::core::metrics::{
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CaseMetrics, Lift, RankMetrics, paired_bootstrap,
};
use crate::core::rank::{RankParams, SEMANTIC_WEIGHT};
use crate::embed::question_similarities;
use crate::store::cache::OutputCache;
use crate::workspace::{Workspace, WorkspaceOptions};

/// One half of one set, without and with the layer.
#[derive(Debug, Serialize)]
pub struct SemanticHalf {
    pub lexical: RankMetrics,
    pub semantic: RankMetrics,
    pub bm25: RankMetrics,
    /// Paired over the half's questions: with − without.
    pub lift_recall_at_5: Lift,
    pub lift_all_at_10: Lift,
    pub lift_mrr: Lift,
}

#[derive(Debug, Serialize)]
pub struct SemanticSetReport {
    pub set: String,
    pub catalog_entries: usize,
    /// Texts (entries and requests) embedded in this run; the rest came from the cache.
    pub embedded_now: usize,
    /// What loading settled and how the split fell, as the lexical report says them
    /// (tester's F6: the layer's report dropped them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub tune: SemanticHalf,
    pub test: SemanticHalf,
    /// With `--misses`: the questions whose expected tool the fused ranking did not place
    /// first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<Miss>,
}

#[derive(Debug, Serialize)]
pub struct SemanticSuiteReport {
    pub protocol: &'static str,
    pub embedder: String,
    pub weight: f64,
    pub bootstrap: String,
    pub sets: Vec<SemanticSetReport>,
}

/// The paired lifts of one half.
fn lift(
    named: &NamedSet,
    half: Half,
    without: &[CaseMetrics],
    with: &[CaseMetrics],
    f: impl Fn(&CaseMetrics) -> f64,
) -> Lift {
    let diffs: Vec<f64> = (0..without.len())
        .filter(|&i| named.half(i) == half)
        .map(|i| f(&with[i]) - f(&without[i]))
        .collect();
    paired_bootstrap(&diffs, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
}

fn half_report(
    named: &NamedSet,
    half: Half,
    plain: &RankReport,
    fused: &RankReport,
) -> SemanticHalf {
    let (p, f) = match half {
        Half::Tune => (&plain.tune, &fused.tune),
        Half::Test => (&plain.test, &fused.test),
    };
    let (a, b) = (&plain.per_case, &fused.per_case);
    SemanticHalf {
        lexical: p.ranker,
        semantic: f.ranker,
        bm25: p.bm25,
        lift_recall_at_5: lift(named, half, a, b, |m| m.recall_at_5),
        lift_all_at_10: lift(named, half, a, b, |m| f64::from(u8::from(m.all_at_10))),
        lift_mrr: lift(named, half, a, b, |m| m.reciprocal_rank),
    }
}

pub fn run(
    workspace: Option<PathBuf>,
    args: &RankArgs,
    sets: &[NamedSet],
    params: RankParams,
    keep: Keep,
    printer: &super::Printer,
) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    let Some(embedder) = args.semantic.embedder(&ws)? else {
        return Ok(());
    };
    let mut cache = OutputCache::open_in(&ws.dir)?;
    let mut reports = Vec::with_capacity(sets.len());
    let mut lines = Vec::new();
    for named in sets {
        let questions: Vec<&str> = named.set.cases.iter().map(|c| c.intent.as_str()).collect();
        let (sims, embedded_now) = question_similarities(
            embedder.as_ref(),
            Some(&mut cache),
            &named.set.guide,
            &questions,
        )?;
        if embedded_now > 0 {
            eprint_line(&format!(
                "ctxconsole: {}: embedded {embedded_now} texts with {}",
                named.name,
                embedder.id()
            ));
        }
        let (plain, _) = evaluate(
            named,
            params,
            Keep {
                misses: false,
                per_question: false,
                baselines: true,
            },
        );
        let layer = Layer {
            similarities: &sims,
            weight: SEMANTIC_WEIGHT,
            embedder: embedder.id(),
        };
        let (mut fused, mut l) = evaluate_with(named, params, keep, Some(layer));
        lines.append(&mut l);
        reports.push(SemanticSetReport {
            set: named.name.clone(),
            catalog_entries: plain.catalog_entries,
            embedded_now,
            tune: half_report(named, Half::Tune, &plain, &fused),
            test: half_report(named, Half::Test, &plain, &fused),
            notes: plain.notes,
            misses: std::mem::take(&mut fused.misses),
        });
    }
    if args.per_question {
        return printer.lines(&lines);
    }
    let report = SemanticSuiteReport {
        protocol: PROTOCOL,
        embedder: embedder.id().to_string(),
        weight: SEMANTIC_WEIGHT,
        bootstrap: format!(
            "paired over the half's questions, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED:#x}, 2.5th–97.5th percentile"
        ),
        sets: reports,
    };
    if args.json {
        return printer.json(&report);
    }
    printer.text(&describe(&report))
}

fn interval(l: &Lift) -> String {
    l.measured().map_or_else(
        || NO_FIGURE.to_string(),
        |l| format!("{:+.3} [{:+.3}, {:+.3}]", l.mean, l.low, l.high),
    )
}

/// One row per set and half: recall@5 and all@10 without / with the layer, the lift with
/// its interval, and BM25.
pub fn describe(r: &SemanticSuiteReport) -> String {
    let mut rows = Vec::new();
    for s in &r.sets {
        for (half, h) in [("tune", &s.tune), ("test", &s.test)] {
            rows.push(vec![
                s.set.clone(),
                half.to_string(),
                h.lexical.cases.to_string(),
                figure_cell(&h.lexical, |m| m.recall_at_5),
                figure_cell(&h.semantic, |m| m.recall_at_5),
                interval(&h.lift_recall_at_5),
                figure_cell(&h.lexical, |m| m.all_at_10),
                figure_cell(&h.semantic, |m| m.all_at_10),
                interval(&h.lift_all_at_10),
                figure_cell(&h.bm25, |m| m.recall_at_5),
                figure_cell(&h.bm25, |m| m.all_at_10),
            ]);
        }
    }
    let header = [
        "set",
        "half",
        ">questions",
        ">r@5",
        ">r@5 +sem",
        ">lift r@5 [95%]",
        ">all@10",
        ">all@10 +sem",
        ">lift all@10 [95%]",
        ">BM25 r@5",
        ">BM25 all@10",
    ];
    let mut out = format!(
        "semantic layer: {} at weight {} ({})\n\n",
        r.embedder, r.weight, r.bootstrap
    );
    out.push_str(&render(&header, &rows));
    let standings = |m: &dyn Fn(&SemanticHalf) -> &RankMetrics| -> Vec<(&str, BarStanding)> {
        r.sets
            .iter()
            .map(|s| (s.set.as_str(), bar_standing(m(&s.test), &s.test.bm25)))
            .collect()
    };
    out.push('\n');
    out.push_str(&describe_bar(
        &standings(&|h| &h.lexical),
        " without the layer",
    ));
    out.push_str(&describe_bar(
        &standings(&|h| &h.semantic),
        " with the layer",
    ));
    // Over the sets whose half has questions: a half with none has no figure to average
    // (tester's F5: it pulled the means to 0).
    let mean = |half: &dyn Fn(&SemanticSetReport) -> &RankMetrics,
                f: &dyn Fn(&RankMetrics) -> f64| {
        let measured: Vec<f64> = r
            .sets
            .iter()
            .filter_map(|s| half(s).measured().map(f))
            .collect();
        if measured.is_empty() {
            return NO_FIGURE.to_string();
        }
        format!(
            "{:.4}",
            measured.iter().sum::<f64>() / measured.len() as f64
        )
    };
    let r5 = |m: &RankMetrics| m.recall_at_5;
    let all10 = |m: &RankMetrics| m.all_at_10;
    out.push_str(&format!(
        "mean over sets, recall@5 / all@10: tune {} / {} without, {} / {} with; test {} / {} without, {} / {} with\n",
        mean(&|s| &s.tune.lexical, &r5),
        mean(&|s| &s.tune.lexical, &all10),
        mean(&|s| &s.tune.semantic, &r5),
        mean(&|s| &s.tune.semantic, &all10),
        mean(&|s| &s.test.lexical, &r5),
        mean(&|s| &s.test.lexical, &all10),
        mean(&|s| &s.test.semantic, &r5),
        mean(&|s| &s.test.semantic, &all10),
    ));
    for s in &r.sets {
        out.push_str(&describe_notes(&s.set, &s.notes));
    }
    for s in r.sets.iter().filter(|s| !s.misses.is_empty()) {
        out.push_str(&format!("\n{}: misses with the layer\n", s.set));
        out.push_str(&describe_misses(&s.misses));
    }
    out
}
