//! `ctxconsole eval`: measured quality of the ranker and the planner on labelled data.

use serde::Serialize;
use std::path::PathBuf;

use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::metrics::{RankMetrics, RankTally};
use crate::core::rank::{HistoryPrior, RankIndex, WordOverlap};
use crate::exit::bad_input;
use crate::import::labels::{LabelledIntent, RankSet, load_bfcl, parse_labels};
use crate::import::read_text;
use crate::workspace::{StoreChoice, Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Recall@1/5/10 and MRR of the ranker beside a word-overlap baseline.
    Rank(RankArgs),
    /// Per-category precision/recall and exact-set accuracy of the pre-flight planner.
    Planner(crate::cli::eval_planner::Args),
}

#[derive(Debug, clap::Args)]
pub struct RankArgs {
    /// A BFCL directory (with `possible_answer/`): every distinct function of the category is
    /// pooled into one catalog and ranked for each question.
    #[arg(long, value_name = "DIR", conflicts_with = "labels")]
    pub bfcl: Option<PathBuf>,
    /// BFCL category.
    #[arg(
        long,
        value_name = "multiple|live_multiple",
        default_value = "live_multiple"
    )]
    pub category: String,
    /// Your own labels against the workspace catalog: one
    /// `{"intent": "...", "expected": ["tool", …]}` per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub labels: Option<PathBuf>,
    /// Measure the history prior: the store's followed plans split by time, the earlier
    /// part (with every other plan before the split) as history, the later part as labels.
    #[arg(long, conflicts_with_all = ["bfcl", "labels"])]
    pub history: bool,
    /// With --history: the share of followed plans used as history.
    #[arg(long, default_value_t = 0.7, value_name = "0..1")]
    pub split: f64,
    /// List the questions whose expected tool was not ranked first.
    #[arg(long)]
    pub misses: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    match args.what {
        What::Rank(a) if a.history => run_history(workspace, store, a),
        What::Rank(a) => run_rank(workspace, a),
        What::Planner(a) => crate::cli::eval_planner::run(workspace, a),
    }
}

#[derive(Debug, Serialize)]
pub struct Miss {
    pub id: String,
    pub intent: String,
    pub expected: Vec<String>,
    pub rank: Option<usize>,
    pub ranked_first: String,
    /// Why the first entry scored what it did, and why the best-placed expected one did.
    pub first_why: String,
    pub expected_why: String,
}

/// What one evaluation run measured.
#[derive(Debug, Serialize)]
pub struct RankReport {
    pub source: String,
    pub catalog_entries: usize,
    pub ranker: RankMetrics,
    pub word_overlap_baseline: RankMetrics,
    /// Top-1 accuracy of the ranker split by whether it was confident (the escalation rule).
    pub confident_share: f64,
    pub top1_when_confident: f64,
    pub top1_when_unsure: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<Miss>,
}

/// Rank every case with the ranker and the baseline.
pub fn evaluate(source: String, set: &RankSet, keep_misses: bool) -> RankReport {
    let index = RankIndex::new(&set.guide);
    let baseline = WordOverlap::new(&set.guide);
    let names: Vec<&str> = set.guide.entry_names().map(|(n, _)| n).collect();
    let mut ours = RankTally::default();
    let mut base = RankTally::default();
    let (mut confident, mut confident_hits, mut unsure_hits) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for case in &set.cases {
        let ranking = index.rank(&case.intent, None);
        let order = ranking.indices();
        let ranks = ranks_of(&order, &names, &case.expected);
        ours.add(&ranks);
        let hit = ranks.contains(&Some(1));
        if ranking.confidence.value >= crate::core::rank::ESCALATE_BELOW {
            confident += 1;
            confident_hits += hit as usize;
        } else {
            unsure_hits += hit as usize;
        }
        if keep_misses && !hit {
            let why = |i: Option<usize>| {
                i.map(|i| index.explain(&ranking, i, None).one_line())
                    .unwrap_or_default()
            };
            let expected_at = ranks.iter().flatten().min().map(|r| order[r - 1]);
            misses.push(Miss {
                first_why: why(order.first().copied()),
                expected_why: why(expected_at),
                id: case.id.clone(),
                intent: case.intent.chars().take(200).collect(),
                expected: case.expected.clone(),
                rank: ranks.iter().flatten().min().copied(),
                ranked_first: order
                    .first()
                    .map(|&i| names[i].to_string())
                    .unwrap_or_default(),
            });
        }
        base.add(&ranks_of(
            &baseline.rank(&case.intent),
            &names,
            &case.expected,
        ));
    }
    let n = set.cases.len().max(1);
    let unsure = set.cases.len() - confident;
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    RankReport {
        source,
        catalog_entries: names.len(),
        ranker: ours.metrics(),
        word_overlap_baseline: base.metrics(),
        confident_share: confident as f64 / n as f64,
        top1_when_confident: ratio(confident_hits, confident),
        top1_when_unsure: ratio(unsure_hits, unsure),
        misses,
    }
}

/// 1-based rank of the first entry carrying each expected name.
pub fn ranks_of(order: &[usize], names: &[&str], expected: &[String]) -> Vec<Option<usize>> {
    expected
        .iter()
        .map(|e| order.iter().position(|&i| names[i] == e).map(|p| p + 1))
        .collect()
}

/// With and without the history prior on the same labels.
#[derive(Debug, Serialize)]
pub struct HistoryRankReport {
    pub source: String,
    pub split_at: String,
    /// Past plans (weighted entries) the prior was built from: all before the split.
    pub history_plans: usize,
    pub labelled_plans: usize,
    pub without_prior: RankMetrics,
    pub with_prior: RankMetrics,
    /// Labels whose best expected tool moved up / down with the prior.
    pub improved: usize,
    pub worsened: usize,
}

fn run_history(
    workspace: Option<PathBuf>,
    store: StoreChoice,
    args: RankArgs,
) -> anyhow::Result<()> {
    if !(args.split > 0.0 && args.split < 1.0) {
        return Err(bad_input(format!(
            "--split {}: expected a share between 0 and 1",
            args.split
        )));
    }
    let (ws, history) = crate::cli::history::open(workspace, &store)?;
    let followed = history.followed_plans()?;
    let cut = (followed.len() as f64 * args.split) as usize;
    if cut == 0 || cut >= followed.len() {
        return Err(bad_input(format!(
            "{}: {} followed plans are too few to split",
            history.path().display(),
            followed.len()
        )));
    }
    let split_at = followed[cut].0;
    let past = history.past_plans(Some(split_at), usize::MAX)?;
    let prior = HistoryPrior::new(&past);
    let names: Vec<&str> = ws.index.names().collect();
    let (mut without, mut with) = (RankTally::default(), RankTally::default());
    let (mut improved, mut worsened) = (0, 0);
    for (_, intent, expected) in &followed[cut..] {
        let a = ranks_of(&ws.index.rank(intent, None).indices(), &names, expected);
        let b = ranks_of(
            &ws.index.rank(intent, Some(&prior)).indices(),
            &names,
            expected,
        );
        without.add(&a);
        with.add(&b);
        let best = |r: &[Option<usize>]| r.iter().flatten().min().copied().unwrap_or(usize::MAX);
        match best(&b).cmp(&best(&a)) {
            std::cmp::Ordering::Less => improved += 1,
            std::cmp::Ordering::Greater => worsened += 1,
            std::cmp::Ordering::Equal => {}
        }
    }
    let report = HistoryRankReport {
        source: history.path().display().to_string(),
        split_at: crate::core::time::format_timestamp(split_at),
        history_plans: past.len(),
        labelled_plans: followed.len() - cut,
        without_prior: without.metrics(),
        with_prior: with.metrics(),
        improved,
        worsened,
    };
    if args.json {
        return print_json(&report);
    }
    let mut out = format!(
        "{}: {} followed plans after {} as labels; {} weighted past plans before it as history\n\n",
        report.source, report.labelled_plans, report.split_at, report.history_plans
    );
    out.push_str(&metrics_table(&[
        ("without prior", &report.without_prior),
        ("with prior", &report.with_prior),
    ]));
    out.push_str(&format!(
        "\nthe prior moved the best expected tool up for {} labels and down for {}\n",
        report.improved, report.worsened
    ));
    emit(&out)
}

fn run_rank(workspace: Option<PathBuf>, args: RankArgs) -> anyhow::Result<()> {
    let (source, set) = if let Some(dir) = &args.bfcl {
        if !matches!(args.category.as_str(), "multiple" | "live_multiple") {
            return Err(bad_input(format!(
                "--category '{}': expected multiple or live_multiple",
                args.category
            )));
        }
        let set = load_bfcl(dir, &args.category)?;
        (format!("BFCL {} ({})", args.category, dir.display()), set)
    } else if let Some(path) = &args.labels {
        let text = read_text(path)?;
        let cases = parse_labels(&text, &path.display().to_string())?;
        let ws = Workspace::open(&WorkspaceOptions {
            dir: workspace,
            registry: None,
        })?;
        let guide = ws.catalog.guide().clone();
        check_labels_name_entries(&cases, &guide, &path.display().to_string())?;
        (
            format!("{} against {}", path.display(), ws.catalog_origin.name),
            RankSet { guide, cases },
        )
    } else {
        return Err(bad_input(
            "eval rank needs --bfcl DIR (with --category) or --labels FILE.jsonl",
        ));
    };
    let report = evaluate(source, &set, args.misses);
    if args.json {
        return print_json(&report);
    }
    emit(&describe(&report))?;
    Ok(())
}

/// A label naming a tool the catalog does not have can never be found: say so up front.
fn check_labels_name_entries(
    cases: &[LabelledIntent],
    guide: &crate::core::catalog::RoutingGuide,
    origin: &str,
) -> anyhow::Result<()> {
    for (i, c) in cases.iter().enumerate() {
        if let Some(missing) = c.expected.iter().find(|e| !guide.contains(e)) {
            return Err(bad_input(format!(
                "{origin}: line {}: expected tool '{missing}' is not in the catalog",
                i + 1
            )));
        }
    }
    Ok(())
}

/// Recall@1/5/10 and MRR, one row per ranker.
fn metrics_table(rows: &[(&str, &RankMetrics)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, m)| {
            vec![
                name.to_string(),
                format!("{:.3}", m.recall_at_1),
                format!("{:.3}", m.recall_at_5),
                format!("{:.3}", m.recall_at_10),
                format!("{:.3}", m.mrr),
            ]
        })
        .collect();
    render(
        &[">ranker", ">recall@1", ">recall@5", ">recall@10", ">MRR"],
        &rows,
    )
}

pub fn describe(r: &RankReport) -> String {
    let mut out = format!(
        "{}: {} questions, {} catalog entries\n\n",
        r.source, r.ranker.cases, r.catalog_entries
    );
    out.push_str(&metrics_table(&[
        ("ctxconsole", &r.ranker),
        ("word overlap", &r.word_overlap_baseline),
    ]));
    out.push_str(&format!(
        "\nconfident on {:.0}% of questions: top-1 {:.3} when confident, {:.3} when not (those escalate)\n",
        r.confident_share * 100.0,
        r.top1_when_confident,
        r.top1_when_unsure
    ));
    for m in &r.misses {
        out.push_str(&format!(
            "miss {}: expected {} at {} (first: {}): {}\n",
            m.id,
            m.expected.join(" or "),
            m.rank.map_or("—".into(), |r| r.to_string()),
            m.ranked_first,
            m.intent.replace('\n', " ")
        ));
        out.push_str(&format!(
            "  first:    {}\n  expected: {}\n",
            m.first_why, m.expected_why
        ));
    }
    out
}
