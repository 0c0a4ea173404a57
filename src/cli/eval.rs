//! `ctxconsole eval`: measured quality of the ranker and the planner on labelled data.

use crate::core::terminal_text::ShownPath;
use serde::Serialize;
use std::collections::HashSet;
use std::path::PathBuf;

pub mod semantic;
pub mod sets;

use crate::cli::out::emit_json_text;
use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::metrics::{CaseMetrics, RankMetrics, RankTally, case_metrics};
use crate::core::rank::{
    BM25_B, BM25_K1, Bm25, HistoryPrior, LearnedWords, RankIndex, RankParams, WordOverlap,
};
use crate::exit::bad_input;
use crate::import::catalog::parse_catalog;
use crate::import::labels::{
    BFCL_CATEGORIES, bfcl_category, load_bfcl, load_labels, load_nestful, nestful_spec_path,
};
use crate::import::read_text;
use crate::llm::redact::Secrets;
use crate::workspace::{StoreChoice, Workspace, WorkspaceOptions};
use sets::{Half, NamedSet};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Recall@1/5/10, all-expected@5/10, MRR and nDCG@10 of the ranker beside Okapi BM25,
    /// on tune and test halves.
    Rank(Box<RankArgs>),
    /// Per-category precision/recall and exact-set accuracy of the pre-flight planner.
    Planner(crate::cli::eval_planner::Args),
}

#[derive(Debug, clap::Args)]
pub struct RankArgs {
    /// A BFCL directory (with `possible_answer/`): every distinct function of the category is
    /// pooled into one catalog and ranked for each question.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["labels", "nestful", "suite"])]
    pub bfcl: Option<PathBuf>,
    /// BFCL category: simple (simple_python), simple_java, simple_javascript, multiple,
    /// parallel, parallel_multiple, or a live_ one (live_simple, live_multiple,
    /// live_parallel, live_parallel_multiple).
    #[arg(
        long,
        value_name = "CATEGORY",
        default_value = "live_multiple",
        conflicts_with_all = ["suite", "nestful", "labels", "history"]
    )]
    pub category: String,
    /// NESTFUL data (`X-data.json`: questions with the calls that answer them); the tool
    /// spec is `--spec`, or `X-spec.json` beside it.
    #[arg(long, value_name = "DATA.json", conflicts_with_all = ["labels", "suite"])]
    pub nestful: Option<PathBuf>,
    /// With --nestful: the tool spec.
    #[arg(
        long,
        value_name = "SPEC.json",
        requires = "nestful",
        conflicts_with_all = ["suite", "bfcl", "labels", "history"]
    )]
    pub spec: Option<PathBuf>,
    /// Your own labels: one `{"id"?: "...", "intent": "...", "expected": ["tool", …]}` per
    /// line, against `--catalog` or the workspace catalog.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "suite")]
    pub labels: Option<PathBuf>,
    /// With --labels: the catalog the labels name tools of (any supported format).
    #[arg(
        long,
        value_name = "FILE",
        requires = "labels",
        conflicts_with_all = ["suite", "bfcl", "nestful", "history"]
    )]
    pub catalog: Option<PathBuf>,
    /// Every set under DIR (bfcl/, nestful/) plus the two- and three-request sets composed
    /// from the single-request BFCL categories, tune and test halves side by side.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// With --suite: only these sets (comma-separated names as the report shows them).
    #[arg(
        long,
        value_name = "SET,…",
        value_delimiter = ',',
        requires = "suite",
        conflicts_with_all = ["bfcl", "nestful", "labels", "history"]
    )]
    pub only: Vec<String>,
    /// Measure questions of N requests composed from the set's own (2–5), within each half.
    // The suite composes its ×2 and ×3 sets itself; a flag a mode does not read is refused,
    // not ignored (tester 8 F13).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u8).range(2..=5),
        conflicts_with_all = ["suite", "history"]
    )]
    pub compose: Option<u8>,
    /// Measure the history prior: the store's followed plans split by time, the earlier
    /// part (with every other plan before the split) as history, the later part as labels.
    #[arg(long, conflicts_with_all = ["bfcl", "labels", "nestful", "suite"])]
    pub history: bool,
    /// With --history: the share of followed plans used as history.
    #[arg(
        long,
        default_value_t = 0.7,
        value_name = "0..1",
        conflicts_with_all = ["suite", "bfcl", "nestful", "labels"]
    )]
    pub split: f64,
    /// List the questions whose expected tool was not ranked first.
    // The history mode lists no questions (tester 10 T10-13: both were ignored there).
    #[arg(long, conflicts_with = "history")]
    pub misses: bool,
    /// One JSON line per question (set, half, id, expected, each ranker's ranks and top 5)
    /// instead of the report.
    #[arg(long, conflicts_with = "history")]
    pub per_question: bool,
    #[arg(long)]
    pub json: bool,
    /// With --semantic: figures with and without the semantic layer, and its lift with a
    /// paired bootstrap 95 % interval on each half (vectors kept in the workspace's
    /// cache.sqlite).
    #[command(flatten)]
    pub semantic: crate::cli::semantic::SemanticArgs,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    match args.what {
        What::Rank(a) if a.history => run_history(workspace, store, *a),
        What::Rank(a) => run_rank(workspace, *a),
        What::Planner(a) => crate::cli::eval_planner::run(workspace, a),
    }
}

#[derive(Debug, Serialize)]
pub struct Miss {
    pub id: String,
    pub half: Half,
    pub intent: String,
    pub expected: Vec<String>,
    pub rank: Option<usize>,
    pub ranked_first: String,
    /// Why the first entry scored what it did, and why the best-placed expected one did.
    pub first_why: String,
    pub expected_why: String,
}

/// Each ranker's figures over one half (or the whole) of a set.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub ranker: RankMetrics,
    /// Okapi BM25 on the same words (k1 and b in the report's `bm25`).
    pub bm25: RankMetrics,
    pub word_overlap: RankMetrics,
}

/// BM25's constants as the report states them.
#[derive(Debug, Serialize)]
pub struct Bm25Constants {
    pub k1: f64,
    pub b: f64,
}

/// What one evaluation of one set measured.
#[derive(Debug, Serialize)]
pub struct RankReport {
    pub set: String,
    pub source: String,
    pub catalog_entries: usize,
    /// What loading settled: duplicates, shared names, unknown expected tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub tune: Figures,
    pub test: Figures,
    pub all: Figures,
    pub bm25: Bm25Constants,
    /// Top-1 accuracy of the ranker split by whether it was confident (the escalation rule);
    /// a side with no question has no figure (`null`; the text says n/a), not 0.0.
    pub confident_share: f64,
    pub top1_when_confident: Option<f64>,
    pub top1_when_unsure: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<Miss>,
    /// The ranker's figures per question, in case order (for paired comparisons).
    #[serde(skip)]
    pub per_case: Vec<CaseMetrics>,
}

/// One question's ranks, for `--per-question`.
#[derive(Debug, Serialize)]
pub struct QuestionLine<'a> {
    pub set: &'a str,
    pub half: Half,
    pub id: &'a str,
    pub intent: &'a str,
    pub expected: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// The semantic layer `ranker` was fused with (`--semantic`, `--embedder`); absent
    /// when it ranked lexically (tester's F6: the fused ranking was not said to be one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<LayerUsed<'a>>,
    pub ranker: RankedCase,
    pub bm25: RankedCase,
}

/// The semantic layer a ranking was fused with, as `--per-question` names it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LayerUsed<'a> {
    pub embedder: &'a str,
    pub weight: f64,
}

/// The semantic layer to fuse a ranking with: each question's similarities (per request,
/// per entry), the weight, and the embedder that gave them.
#[derive(Debug, Clone, Copy)]
pub struct Layer<'a> {
    pub similarities: &'a [Vec<Vec<f64>>],
    pub weight: f64,
    pub embedder: &'a str,
}

#[derive(Debug, Serialize)]
pub struct RankedCase {
    /// 1-based rank of each expected tool (by name, each name once).
    pub ranks: Vec<Option<usize>>,
    pub top: Vec<String>,
    #[serde(flatten)]
    pub figures: CaseMetrics,
}

/// What to keep while evaluating.
#[derive(Debug, Clone, Copy, Default)]
pub struct Keep {
    pub misses: bool,
    pub per_question: bool,
    /// Rank with the baselines too (the sweep leaves them out).
    pub baselines: bool,
}

/// Tallies of the three rankers, per half and whole.
#[derive(Default, Clone)]
struct Tallies {
    ranker: RankTally,
    bm25: RankTally,
    overlap: RankTally,
}

impl Tallies {
    fn figures(&self) -> Figures {
        Figures {
            ranker: self.ranker.metrics(),
            bm25: self.bm25.metrics(),
            word_overlap: self.overlap.metrics(),
        }
    }
}

/// Rank every question of a set with the ranker (built with `params`) and the baselines.
/// Returns the report and, when asked, one JSON line per question.
pub fn evaluate(named: &NamedSet, params: RankParams, keep: Keep) -> (RankReport, Vec<String>) {
    evaluate_with(named, params, keep, None)
}

/// As [`evaluate`], ranked with the semantic layer when `semantic` gives it.
pub fn evaluate_with(
    named: &NamedSet,
    params: RankParams,
    keep: Keep,
    semantic: Option<Layer>,
) -> (RankReport, Vec<String>) {
    let set = &named.set;
    let index = RankIndex::with_params(&set.guide, params);
    let (bm25, overlap) = if keep.baselines {
        (
            Some(Bm25::new(&set.guide)),
            Some(WordOverlap::new(&set.guide)),
        )
    } else {
        (None, None)
    };
    let names: Vec<&str> = set.guide.entry_names().map(|(n, _)| n).collect();
    let keys = name_keys(names.iter().copied());
    let shown = crate::core::terminal_text::NamesShown::new(names.iter().copied());
    let mut tune = Tallies::default();
    let mut test = Tallies::default();
    let (mut confident, mut confident_hits, mut unsure_hits) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    let mut lines = Vec::new();
    let mut per_case = Vec::with_capacity(set.cases.len());
    for (i, case) in set.cases.iter().enumerate() {
        let half = named.half(i);
        let tally = match half {
            Half::Tune => &mut tune,
            Half::Test => &mut test,
        };
        let ranking = match semantic {
            Some(layer) => {
                index.rank_semantic(&case.intent, None, &layer.similarities[i], layer.weight)
            }
            None => index.rank(&case.intent, None),
        };
        let order = ranking.indices();
        let ranks = ranks_of(&order, &keys, &case.expected);
        tally.ranker.add(&ranks);
        per_case.push(case_metrics(&ranks));
        let hit = ranks.contains(&Some(1));
        if ranking.confidence.value >= crate::core::rank::ESCALATE_BELOW {
            confident += 1;
            confident_hits += hit as usize;
        } else {
            unsure_hits += hit as usize;
        }
        let bm25_order = bm25.as_ref().map(|b| b.rank(&case.intent));
        if let Some(o) = &bm25_order {
            tally.bm25.add(&ranks_of(o, &keys, &case.expected));
        }
        if let Some(o) = &overlap {
            tally
                .overlap
                .add(&ranks_of(&o.rank(&case.intent), &keys, &case.expected));
        }
        if keep.misses && !hit {
            let why = |i: Option<usize>| {
                i.map(|i| index.explain(&ranking, i, None).one_line_among(&shown))
                    .unwrap_or_default()
            };
            let best = ranks.iter().flatten().min().copied();
            let expected_at = best.and_then(|r| nth_name(&order, &keys, r));
            misses.push(Miss {
                first_why: why(order.first().copied()),
                expected_why: why(expected_at),
                id: case.id.clone(),
                half,
                intent: case.intent.chars().take(200).collect(),
                expected: case.expected.clone(),
                rank: best,
                ranked_first: order
                    .first()
                    .map(|&i| names[i].to_string())
                    .unwrap_or_default(),
            });
        }
        if keep.per_question {
            let ranked = |order: &[usize]| RankedCase {
                ranks: ranks_of(order, &keys, &case.expected),
                top: top_names(order, &keys, &names, 5),
                figures: case_metrics(&ranks_of(order, &keys, &case.expected)),
            };
            let line = QuestionLine {
                set: &named.name,
                half,
                id: &case.id,
                // What was ranked: the opening every ranker reads.
                intent: crate::core::text::opening(
                    &case.intent,
                    crate::core::rank::QUERY_MAX_BYTES,
                ),
                expected: &case.expected,
                requests: ranking.requests.clone(),
                semantic: semantic.map(|layer| LayerUsed {
                    embedder: layer.embedder,
                    weight: layer.weight,
                }),
                ranker: ranked(&order),
                bm25: ranked(bm25_order.as_deref().unwrap_or(&[])),
            };
            lines.push(serde_json::to_string(&line).unwrap_or_default());
        }
    }
    let n = set.cases.len().max(1);
    let unsure = set.cases.len() - confident;
    // No question on a side is no figure: 0.0 would read as all of them missed.
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    let mut all = tune.clone();
    all.ranker.merge(&test.ranker);
    all.bm25.merge(&test.bm25);
    all.overlap.merge(&test.overlap);
    let mut notes = set.notes.clone();
    notes.extend(lopsided_split_note(named));
    let report = RankReport {
        set: named.name.clone(),
        source: named.source.clone(),
        catalog_entries: names.len(),
        notes,
        tune: tune.figures(),
        test: test.figures(),
        all: all.figures(),
        bm25: Bm25Constants {
            k1: BM25_K1,
            b: BM25_B,
        },
        confident_share: confident as f64 / n as f64,
        top1_when_confident: ratio(confident_hits, confident),
        top1_when_unsure: ratio(unsure_hits, unsure),
        misses,
        per_case,
    };
    (report, lines)
}

/// The share of a set's questions under which a half is said to be nearly empty.
const LOPSIDED_HALF: f64 = 0.10;

/// What the split by FNV-1a parity means for ids, said once: `eval rank`'s `protocol`, the
/// note on a lopsided split and the README say it in these words.
macro_rules! split_parity {
    () => {
        "the hash's parity is set by how many of the id's bytes are odd (FNV-1a's offset basis and prime are odd: an odd count gives an even hash, tune, and an even count an odd one, test), so ids that differ only in even digits (case-0, case-2, …) or are anagrams fall in one half"
    };
}

/// A note when one half of a set has no question, or under [`LOPSIDED_HALF`] of them
/// (tester 11 T11-5: ids `case-0, case-2, …` all fell in tune, and the test half's n/a went
/// unexplained). The split itself stays: every weight was tuned on its tune halves, and
/// moving it would put tuned questions in the test halves.
fn lopsided_split_note(named: &NamedSet) -> Option<String> {
    // A composed set's halves follow its base set's: the base's own note, or the one
    // composing gives for a half too small to join, says why (tester 16 F6).
    if named.composed_halves.is_some() {
        return None;
    }
    let all = named.set.cases.len();
    let test = (0..all).filter(|&i| named.half(i) == Half::Test).count();
    let tune = all - test;
    let (small, other) = if test <= tune {
        (("test", test), ("tune", tune))
    } else {
        (("tune", tune), ("test", test))
    };
    // One question is always in one half: nothing to explain.
    if all < 2 || (small.1 as f64) >= LOPSIDED_HALF * all as f64 {
        return None;
    }
    let holds = if small.1 == 0 {
        format!(
            "the {} half has no question ({} {}, {} 0 of {all})",
            small.0, other.0, other.1, small.0
        )
    } else {
        format!(
            "the {} half holds {} of {all} questions ({} {})",
            small.0, small.1, other.0, other.1
        )
    };
    Some(format!(
        concat!(
            "{}: {holds}: the split is by the parity of each id's FNV-1a hash (NESTFUL: the question's text): ",
            split_parity!(),
            "; the split is kept, as every weight was tuned on the tune halves"
        ),
        named.name,
        holds = holds
    ))
}

/// A set's name: its file's stem (`fallback` without one), as a name is shown on a line
/// ([`name`](crate::core::terminal_text::name)): the tables, notes and misses print it (the
/// last note: a line feed in a labels file's name started a line of the suite table).
pub fn set_name(file: &std::path::Path, fallback: &str) -> String {
    file.file_stem().map_or_else(
        || fallback.to_string(),
        |stem| crate::core::terminal_text::name(&stem.to_string_lossy()).into_owned(),
    )
}

/// Each entry's name as a ranking counts it: as it prints
/// ([`printed_alike`](crate::core::text::printed_alike)), so `dup ` and `dup` are one name
/// (tester's F7: `dup ` ranked first for an expected `dup` was a miss), as a catalog's
/// warnings and the labels' lookup count them.
pub fn name_keys<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    names.map(crate::core::text::printed_alike).collect()
}

/// 1-based rank of each expected name, counting each name once at its best place (a pool
/// may hold several entries of one name, with different descriptions). `keys` are the
/// entries' names as [`name_keys`] gives them.
pub fn ranks_of(order: &[usize], keys: &[String], expected: &[String]) -> Vec<Option<usize>> {
    let expected: Vec<String> = expected
        .iter()
        .map(|e| crate::core::text::printed_alike(e))
        .collect();
    let mut ranks = vec![None; expected.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    let mut left = expected.len();
    for &i in order {
        if left == 0 {
            break;
        }
        let name = keys[i].as_str();
        if !seen.insert(name) {
            continue;
        }
        for (k, e) in expected.iter().enumerate() {
            if e == name && ranks[k].is_none() {
                ranks[k] = Some(seen.len());
                left -= 1;
            }
        }
    }
    ranks
}

/// The entry at 1-based name rank `rank` (each name once, as [`name_keys`] counts names).
fn nth_name(order: &[usize], keys: &[String], rank: usize) -> Option<usize> {
    let mut seen: HashSet<&str> = HashSet::new();
    order
        .iter()
        .copied()
        .find(|&i| seen.insert(&keys[i]) && seen.len() == rank)
}

/// The first `k` distinct names of an order (told apart by `keys`, shown as `names`).
fn top_names(order: &[usize], keys: &[String], names: &[&str], k: usize) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    order
        .iter()
        .filter(|&&i| seen.insert(&keys[i]))
        .take(k)
        .map(|&i| names[i].to_string())
        .collect()
}

/// What `eval rank` prints over labelled sets, every configured provider key taken out, as
/// out of everything else ctxconsole prints (tester F12: `--misses` and `--per-question`
/// printed one from a label's intent verbatim, and such output goes to CI logs and
/// tickets): the report as text, as JSON, or as JSON lines, key order kept.
pub struct Printer {
    secrets: Secrets,
}

impl Printer {
    /// With the keys the workspace's config names (`--workspace`, or the default one).
    pub fn for_workspace(workspace: Option<&std::path::Path>) -> anyhow::Result<Printer> {
        Ok(Printer {
            secrets: crate::workspace::secrets_in(workspace)?,
        })
    }

    pub fn text(&self, text: &str) -> anyhow::Result<()> {
        emit(&self.secrets.text(text))
    }

    /// As [`print_json`](crate::cli::print_json) writes it (the key's JSON-escaped forms
    /// are found too: [`Secrets::text`]).
    pub fn json<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        emit_json_text(&self.secrets.text(&text))
    }

    /// One JSON line each (`--per-question`).
    pub fn lines(&self, lines: &[String]) -> anyhow::Result<()> {
        let mut text = lines.join("\n");
        text.push('\n');
        emit_json_text(&self.secrets.text(&text))
    }
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
    /// The entries also carry the words of past intents their followed plans answered
    /// (mined from the same history, before the split), without and with the prior.
    pub learned_words: RankMetrics,
    pub learned_words_with_prior: RankMetrics,
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
    // The history measure ranks lexically with and without the prior: a flag it cannot
    // honour is refused rather than ignored.
    if args.semantic.semantic || args.semantic.embedder.is_some() {
        return Err(bad_input(
            "--history measures the prior and the learned words lexically; --semantic and --embedder apply to the labelled sets (--suite, --bfcl, --nestful, --labels)",
        ));
    }
    let (ws, history) = crate::cli::history::open(workspace, &store)?;
    let followed = history.followed_plans()?;
    let cut = (followed.len() as f64 * args.split) as usize;
    if cut == 0 || cut >= followed.len() {
        return Err(bad_input(format!(
            "{}: {} followed plans are too few to split",
            history.path().shown(),
            followed.len()
        )));
    }
    let split_at = followed[cut].0;
    let past = history.past_plans(Some(split_at), usize::MAX)?;
    let prior = HistoryPrior::new(&past);
    let learned = LearnedWords::from_plans(&past);
    let learned_index = RankIndex::build(ws.catalog.guide(), RankParams::default(), Some(&learned));
    let names = name_keys(ws.index.names());
    let (mut without, mut with) = (RankTally::default(), RankTally::default());
    let (mut learned_alone, mut learned_prior) = (RankTally::default(), RankTally::default());
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
        learned_alone.add(&ranks_of(
            &learned_index.rank(intent, None).indices(),
            &names,
            expected,
        ));
        learned_prior.add(&ranks_of(
            &learned_index.rank(intent, Some(&prior)).indices(),
            &names,
            expected,
        ));
        let best = |r: &[Option<usize>]| r.iter().flatten().min().copied().unwrap_or(usize::MAX);
        match best(&b).cmp(&best(&a)) {
            std::cmp::Ordering::Less => improved += 1,
            std::cmp::Ordering::Greater => worsened += 1,
            std::cmp::Ordering::Equal => {}
        }
    }
    let report = HistoryRankReport {
        source: history.path().shown().to_string(),
        split_at: crate::core::time::format_timestamp(split_at),
        history_plans: past.len(),
        labelled_plans: followed.len() - cut,
        without_prior: without.metrics(),
        with_prior: with.metrics(),
        learned_words: learned_alone.metrics(),
        learned_words_with_prior: learned_prior.metrics(),
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
        ("learned words", &report.learned_words),
        ("learned words + prior", &report.learned_words_with_prior),
    ]));
    out.push_str(&format!(
        "\nthe prior moved the best expected tool up for {} labels and down for {}\n",
        report.improved, report.worsened
    ));
    emit(&out)
}

fn run_rank(workspace: Option<PathBuf>, args: RankArgs) -> anyhow::Result<()> {
    let params = RankParams::default();
    let keep = Keep {
        misses: args.misses,
        per_question: args.per_question,
        baselines: true,
    };
    let sets: Vec<NamedSet> = if let Some(dir) = &args.suite {
        let all = sets::suite(dir)?;
        if let Some(unknown) = args
            .only
            .iter()
            .find(|o| !all.iter().any(|s| &s.name == *o))
        {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            return Err(bad_input(format!(
                "--only {unknown}: no such set under {} (there are: {})",
                dir.shown(),
                names.join(", ")
            )));
        }
        all.into_iter()
            .filter(|s| args.only.is_empty() || args.only.contains(&s.name))
            .collect()
    } else {
        let mut one = single_set(workspace.clone(), &args)?;
        if let Some(parts) = args.compose {
            let composed = sets::composed(&one, usize::from(parts));
            if composed.set.cases.is_empty() {
                return Err(bad_input(format!(
                    "--compose {parts}: {} has too few questions ({} in all) to join {parts} at a time within each half",
                    one.name,
                    one.set.cases.len()
                )));
            }
            one = composed;
        }
        vec![one]
    };
    let printer = Printer::for_workspace(workspace.as_deref())?;
    if args.semantic.semantic || args.semantic.embedder.is_some() {
        return semantic::run(workspace, &args, &sets, params, keep, &printer);
    }
    let mut reports = Vec::with_capacity(sets.len());
    let mut lines = Vec::new();
    for set in &sets {
        let (report, mut l) = evaluate(set, params, keep);
        reports.push(report);
        lines.append(&mut l);
    }
    if args.per_question {
        return printer.lines(&lines);
    }
    if args.suite.is_some() {
        let suite = SuiteReport {
            protocol: PROTOCOL,
            sets: reports,
        };
        if args.json {
            return printer.json(&suite);
        }
        return printer.text(&describe_suite(&suite));
    }
    let Some(report) = reports.into_iter().next() else {
        return Ok(());
    };
    if args.json {
        return printer.json(&report);
    }
    printer.text(&describe(&report))
}

/// How the figures are made, stated in every suite report.
pub const PROTOCOL: &str = concat!(
    "Each set is split in two by an FNV-1a hash of each question's id (even: tune, odd: test; NESTFUL questions have no id, so their text is hashed); ",
    split_parity!(),
    ". Composed sets join 2 or 3 questions of one half (texts joined the ways people join requests, expected tools unioned, the pool kept), so no test question meets a tune one. Every ranker weight was chosen on the tune halves only; the test halves are reported, never tuned on. A name several pooled entries share counts once, at its best place. BM25 is Okapi BM25 over the same words the ranker indexes, one field, k1 1.2, b 0.75.",
);

/// Every set of a suite.
#[derive(Debug, Serialize)]
pub struct SuiteReport {
    pub protocol: &'static str,
    pub sets: Vec<RankReport>,
}

/// The one set `--bfcl`, `--nestful` or `--labels` names.
fn single_set(workspace: Option<PathBuf>, args: &RankArgs) -> anyhow::Result<NamedSet> {
    if let Some(dir) = &args.bfcl {
        let Some(category) = bfcl_category(&args.category) else {
            return Err(bad_input(format!(
                "--category '{}': expected simple, {}",
                args.category,
                BFCL_CATEGORIES.join(", ")
            )));
        };
        return Ok(NamedSet {
            name: category.to_string(),
            source: format!("BFCL {category} ({})", dir.shown()),
            set: load_bfcl(dir, category)?,
            composed_halves: None,
        });
    }
    if let Some(data) = &args.nestful {
        let spec = match &args.spec {
            Some(s) => s.clone(),
            None => nestful_spec_path(data).ok_or_else(|| {
                bad_input(format!(
                    "{}: name the tool spec with --spec (no X-spec.json beside an X-data.json)",
                    data.shown()
                ))
            })?,
        };
        return Ok(NamedSet {
            name: set_name(data, "nestful"),
            source: format!("NESTFUL {} with {}", data.shown(), spec.shown()),
            set: load_nestful(data, &spec)?,
            composed_halves: None,
        });
    }
    if let Some(path) = &args.labels {
        // The pool is named wherever a note or an error names it: which catalog the labels
        // were read against (tester 11 T11-6: "not in the catalog" without --catalog did
        // not say it was the sample one).
        let (guide, warnings, origin, pool) = match &args.catalog {
            Some(file) => {
                let text = read_text(file)?;
                // Named on one line wherever it is named (tester F1).
                let origin = crate::core::terminal_text::path(file).into_owned();
                let imported = parse_catalog(&text, &origin)?;
                let pool = format!("the catalog {origin}");
                (imported.guide, imported.warnings, origin, pool)
            }
            None => {
                let ws = Workspace::open(&WorkspaceOptions {
                    dir: workspace,
                    registry: None,
                })?;
                let origin = ws.catalog_origin.name.clone();
                let pool = if origin == "sample catalog" {
                    format!(
                        "the sample catalog (the workspace {} has no catalog.json; --catalog FILE names another)",
                        ws.dir.shown()
                    )
                } else {
                    format!("the workspace catalog {origin}")
                };
                (
                    ws.catalog.guide().clone(),
                    ws.catalog.warnings().to_vec(),
                    origin,
                    pool,
                )
            }
        };
        return Ok(NamedSet {
            name: set_name(path, "labels"),
            source: format!(
                "{} against {origin}",
                crate::core::terminal_text::path(path)
            ),
            set: load_labels(path, guide, &warnings, &pool)?,
            composed_halves: None,
        });
    }
    Err(bad_input(
        "eval rank needs --suite DIR, --bfcl DIR (with --category), --nestful DATA.json or --labels FILE.jsonl",
    ))
}

fn metric_cells(m: &RankMetrics) -> Vec<String> {
    // No question measured is no figure: 0.000 would read as a measured total failure.
    let Some(m) = m.measured() else {
        return vec![NO_FIGURE.to_string(); METRIC_HEADER.len()];
    };
    [
        m.recall_at_1,
        m.recall_at_5,
        m.recall_at_10,
        m.all_at_5,
        m.all_at_10,
        m.mrr,
        m.ndcg_at_10,
    ]
    .iter()
    .map(|v| format!("{v:.3}"))
    .collect()
}

/// What a figure over no question reads on screen (`null` in `--json`).
pub const NO_FIGURE: &str = "n/a";

/// One figure of `m` to 3 places, or [`NO_FIGURE`] when `m` measured no question.
pub fn figure_cell(m: &RankMetrics, f: impl Fn(&RankMetrics) -> f64) -> String {
    m.measured()
        .map_or_else(|| NO_FIGURE.to_string(), |m| format!("{:.3}", f(m)))
}

const METRIC_HEADER: [&str; 7] = [
    ">r@1", ">r@5", ">r@10", ">all@5", ">all@10", ">MRR", ">nDCG@10",
];

/// Recall@1/5/10, all-expected@5/10, MRR and nDCG@10, one row per ranker.
fn metrics_table(rows: &[(&str, &RankMetrics)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, m)| {
            let mut row = vec![name.to_string(), m.cases.to_string()];
            row.extend(metric_cells(m));
            row
        })
        .collect();
    let mut header = vec!["ranker", ">questions"];
    header.extend(METRIC_HEADER);
    render(&header, &rows)
}

pub fn describe(r: &RankReport) -> String {
    let mut out = format!(
        "{}: {} questions, {} catalog entries\n",
        r.source, r.all.ranker.cases, r.catalog_entries
    );
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push('\n');
    let label = |half: &str, who: &str| format!("{half} {who}");
    let rows = [
        (label("tune", "ctxconsole"), &r.tune.ranker),
        (label("tune", "BM25"), &r.tune.bm25),
        (label("test", "ctxconsole"), &r.test.ranker),
        (label("test", "BM25"), &r.test.bm25),
        (label("all", "ctxconsole"), &r.all.ranker),
        (label("all", "BM25"), &r.all.bm25),
        (label("all", "word overlap"), &r.all.word_overlap),
    ];
    let rows: Vec<(&str, &RankMetrics)> = rows.iter().map(|(l, m)| (l.as_str(), *m)).collect();
    out.push_str(&metrics_table(&rows));
    // No question on a side is no figure: 0.000 would read as all of them missed (tester 11
    // T11-6: "0.000 when not" when every question was confident).
    let top1 = |value: Option<f64>| value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"));
    out.push_str(&format!(
        "\nBM25: Okapi, k1 {}, b {}, over the ranker's words. confident on {:.0}% of questions: top-1 {} when confident, {} when not (those escalate)\n",
        r.bm25.k1,
        r.bm25.b,
        r.confident_share * 100.0,
        top1(r.top1_when_confident),
        top1(r.top1_when_unsure)
    ));
    out.push_str(&describe_misses(&r.misses));
    out
}

/// One line per miss, with why the first entry and the expected one scored what they did.
pub fn describe_misses(misses: &[Miss]) -> String {
    let mut out = String::new();
    // Ids and tool names from the labels and the catalog, each on the miss's line as every
    // line of text shows a name (tester F1: a line break in a tool name forged a miss).
    let name = crate::core::terminal_text::name;
    for m in misses {
        let expected: Vec<_> = m.expected.iter().map(|e| name(e)).collect();
        out.push_str(&format!(
            "miss {} ({}): expected {} at {} (first: {}): {}\n",
            name(&m.id),
            m.half.label(),
            expected.join(" + "),
            m.rank.map_or("—".into(), |r| r.to_string()),
            name(&m.ranked_first),
            m.intent.replace('\n', " ")
        ));
        out.push_str(&format!(
            "  first:    {}\n  expected: {}\n",
            m.first_why, m.expected_why
        ));
    }
    out
}

/// The lead over BM25's recall@5 the bar asks for.
pub const BAR_RECALL_LEAD: f64 = 0.05;

/// Where one test half stands against the bar (recall@5 ≥ BM25 + 5 points and
/// all-expected@10 ≥ BM25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BarStanding {
    Met,
    Short,
    /// BM25's recall@5 is above 0.95, so no ranker can lead it by 5 points: recall is at
    /// most 1.
    OutOfReach,
    /// The half has no question: no figure, so neither met nor short, and not counted
    /// among the sets (tester's F5: an empty half was "short").
    NoQuestions,
}

pub fn bar_standing(ranker: &RankMetrics, bm25: &RankMetrics) -> BarStanding {
    let (Some(ranker), Some(bm25)) = (ranker.measured(), bm25.measured()) else {
        return BarStanding::NoQuestions;
    };
    if ranker.recall_at_5 >= bm25.recall_at_5 + BAR_RECALL_LEAD
        && ranker.all_at_10 >= bm25.all_at_10
    {
        BarStanding::Met
    } else if bm25.recall_at_5 + BAR_RECALL_LEAD > 1.0 + 1e-9 {
        BarStanding::OutOfReach
    } else {
        BarStanding::Short
    }
}

/// One line on how the test halves stand against the bar: met, short (named), and out of
/// reach (named), for `label` (the ranker measured); a set whose test half has no question
/// is named apart and not counted.
pub fn describe_bar(standings: &[(&str, BarStanding)], label: &str) -> String {
    let named = |want: BarStanding| -> Vec<&str> {
        standings
            .iter()
            .filter(|(_, b)| *b == want)
            .map(|(n, _)| *n)
            .collect()
    };
    let (short, out_of_reach) = (named(BarStanding::Short), named(BarStanding::OutOfReach));
    let unmeasured = named(BarStanding::NoQuestions);
    let mut line = format!(
        "test halves at recall@5 ≥ BM25 + 0.05 and all@10 ≥ BM25{label}: {} of {} sets",
        named(BarStanding::Met).len(),
        standings.len() - unmeasured.len()
    );
    if !short.is_empty() {
        line.push_str(&format!("; short: {}", short.join(", ")));
    }
    if !out_of_reach.is_empty() {
        line.push_str(&format!(
            "; out of reach (BM25 recall@5 above 0.95, and recall is at most 1): {}",
            out_of_reach.join(", ")
        ));
    }
    if !unmeasured.is_empty() {
        line.push_str(&format!(
            "; no test question (not counted): {}",
            unmeasured.join(", ")
        ));
    }
    line.push('\n');
    line
}

/// Every set's tune and test halves, the ranker beside BM25, and how the test halves stand
/// against the bar (recall@5 ≥ BM25 + 5 points, all-expected@10 ≥ BM25).
pub fn describe_suite(s: &SuiteReport) -> String {
    let mut rows = Vec::new();
    for r in &s.sets {
        for (half, f) in [("tune", &r.tune), ("test", &r.test)] {
            for (who, m) in [("ctxconsole", &f.ranker), ("BM25", &f.bm25)] {
                let mut row = vec![
                    r.set.clone(),
                    half.to_string(),
                    who.to_string(),
                    m.cases.to_string(),
                    r.catalog_entries.to_string(),
                ];
                row.extend(metric_cells(m));
                rows.push(row);
            }
        }
    }
    let mut header = vec!["set", "half", "ranker", ">questions", ">pool"];
    header.extend(METRIC_HEADER);
    let mut out = format!("{}\n\n", s.protocol);
    out.push_str(&render(&header, &rows));
    let standings: Vec<(&str, BarStanding)> = s
        .sets
        .iter()
        .map(|r| (r.set.as_str(), bar_standing(&r.test.ranker, &r.test.bm25)))
        .collect();
    out.push('\n');
    out.push_str(&describe_bar(&standings, ""));
    for r in &s.sets {
        out.push_str(&describe_notes(&r.set, &r.notes));
    }
    out
}

/// A set's notes, one line each, naming the set (`note (SET): …`), as every report of
/// several sets says them.
pub fn describe_notes(set: &str, notes: &[String]) -> String {
    notes
        .iter()
        .map(|n| format!("note ({set}): {n}\n"))
        .collect()
}

#[cfg(test)]
mod bar_tests {
    use super::*;

    /// Q8: `protocol` in `eval rank --json` states the split's property as the README does,
    /// in the one wording (`split_parity!`), and the property holds.
    #[test]
    fn the_protocol_states_the_split_as_the_readme_does() {
        let rule = split_parity!();
        assert!(PROTOCOL.contains(rule), "{PROTOCOL}");
        let readme = include_str!("../../README.md")
            .replace('\n', " ")
            .replace('`', "");
        assert!(
            readme.contains(rule),
            "the README's protocol paragraph words it otherwise"
        );
        // It is so: an odd count of odd bytes is an even hash (tune), and ids differing only
        // in even digits, or anagrams, share a half.
        let even = |id: &str| sets::stable_hash(id).is_multiple_of(2);
        let odd_bytes = |id: &str| id.bytes().filter(|b| b % 2 == 1).count();
        for id in [
            "case-0",
            "case-1",
            "multiple_0",
            "multiple_17",
            "live_simple_3-2-1",
            "x",
            "",
        ] {
            assert_eq!(even(id), odd_bytes(id) % 2 == 1, "{id}");
        }
        assert_eq!(even("case-0"), even("case-2"));
        assert_eq!(even("ab-12"), even("ba-21"));
    }

    fn m(r5: f64, all10: f64) -> RankMetrics {
        RankMetrics {
            cases: 10,
            recall_at_5: r5,
            all_at_10: all10,
            ..RankMetrics::default()
        }
    }

    /// Tester's F5: a test half with no question is neither met nor short, and is not
    /// counted among the sets the bar line counts.
    #[test]
    fn an_empty_test_half_stands_nowhere_against_the_bar() {
        let empty = RankMetrics::default();
        assert_eq!(bar_standing(&empty, &empty), BarStanding::NoQuestions);
        let line = describe_bar(
            &[("a", BarStanding::Met), ("b", BarStanding::NoQuestions)],
            "",
        );
        assert_eq!(
            line,
            "test halves at recall@5 ≥ BM25 + 0.05 and all@10 ≥ BM25: 1 of 1 sets; no test question (not counted): b\n"
        );
    }

    #[test]
    fn a_set_where_bm25_leaves_no_five_points_is_out_of_reach_not_short() {
        assert_eq!(
            bar_standing(&m(0.93, 0.90), &m(0.88, 0.90)),
            BarStanding::Met
        );
        assert_eq!(
            bar_standing(&m(0.92, 0.90), &m(0.88, 0.90)),
            BarStanding::Short
        );
        assert_eq!(
            bar_standing(&m(0.95, 0.80), &m(0.88, 0.90)),
            BarStanding::Short
        );
        assert_eq!(
            bar_standing(&m(1.0, 1.0), &m(0.965, 0.98)),
            BarStanding::OutOfReach
        );
        // Exactly 0.95 leaves 5 points: a perfect ranker meets it.
        assert_eq!(bar_standing(&m(1.0, 1.0), &m(0.95, 0.96)), BarStanding::Met);
        assert_eq!(
            bar_standing(&m(0.99, 1.0), &m(0.95, 0.96)),
            BarStanding::Short
        );
        let line = describe_bar(
            &[
                ("a", BarStanding::Met),
                ("b", BarStanding::Short),
                ("c", BarStanding::OutOfReach),
            ],
            " without the layer",
        );
        assert_eq!(
            line,
            "test halves at recall@5 ≥ BM25 + 0.05 and all@10 ≥ BM25 without the layer: 1 of 3 sets; short: b; out of reach (BM25 recall@5 above 0.95, and recall is at most 1): c\n"
        );
    }
}
