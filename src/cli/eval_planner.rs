//! `ctxconsole eval planner`: the planner's rules measured on labelled messages.

use crate::core::request::CLASSIFY_MAX_BYTES;
use crate::core::terminal_text::{ShownPath, name, quoted};
use crate::core::text::opening;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::error::CoreError;
use crate::core::metrics::{ClassificationMetrics, classification};
use crate::core::planner::Planner;
use crate::import::labels::jsonl;
use crate::import::read_text;
use crate::sample::{SAMPLE_PLANNER_EVAL, SAMPLE_PLANNER_HOLDOUT};
use crate::workspace::{Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labelled messages, one `{"message": "...", "expected": ["category", …], "trap": "…"?}`
    /// per line (default: the shipped set of 124, plus the 42 held-out messages).
    #[arg(long, value_name = "FILE.jsonl")]
    pub labels: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LabelledMessage {
    pub message: String,
    pub expected: BTreeSet<String>,
    #[serde(default)]
    pub trap: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub message: String,
    pub expected: BTreeSet<String>,
    pub predicted: BTreeSet<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trap: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PlannerReport {
    pub rules: String,
    pub labels: String,
    #[serde(flatten)]
    pub metrics: ClassificationMetrics,
    pub traps: usize,
    pub traps_right: usize,
    /// Every trap with its result, and every other message classified wrong.
    pub wrong: Vec<Outcome>,
    pub trap_results: Vec<Outcome>,
    /// Expected categories the rules do not define: no rule can predict them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The shipped held-out set: messages written after the rules were tuned, never tuned on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out: Option<Box<PlannerReport>>,
}

pub fn parse_messages(text: &str, origin: &str) -> Result<Vec<LabelledMessage>, CoreError> {
    jsonl(text, origin, r#"{"message": …, "expected": […]}"#)
}

pub fn evaluate(
    planner: &Planner,
    messages: &[LabelledMessage],
    rules: String,
    labels: String,
) -> PlannerReport {
    let outcomes: Vec<Outcome> = messages
        .iter()
        .map(|m| Outcome {
            message: m.message.clone(),
            expected: m.expected.clone(),
            // The opening every real path classifies (preview, send, the console, MCP): the
            // whole of a long message was measured, a classifier the product never runs
            // (tester 18 F6).
            predicted: planner
                .plan(opening(&m.message, CLASSIFY_MAX_BYTES), &[])
                .categories
                .into_iter()
                .collect(),
            trap: m.trap.clone(),
        })
        .collect();
    let metrics = classification(outcomes.iter().map(|o| (&o.expected, &o.predicted)));
    let defined: BTreeSet<&str> = planner.category_names().collect();
    let undefined: BTreeSet<&str> = messages
        .iter()
        .flat_map(|m| m.expected.iter().map(String::as_str))
        .filter(|c| !defined.contains(c))
        .collect();
    let notes = undefined
        .into_iter()
        .map(|c| {
            format!(
                "{} is not a category of {rules}: no rule can predict it (a misspelling?)",
                quoted(c)
            )
        })
        .collect();
    let (trap_results, rest): (Vec<Outcome>, Vec<Outcome>) =
        outcomes.into_iter().partition(|o| o.trap.is_some());
    PlannerReport {
        rules,
        labels,
        metrics,
        traps: trap_results.len(),
        traps_right: trap_results
            .iter()
            .filter(|o| o.expected == o.predicted)
            .count(),
        wrong: rest
            .into_iter()
            .filter(|o| o.expected != o.predicted)
            .collect(),
        trap_results,
        notes,
        held_out: None,
    }
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    let (text, origin) = match &args.labels {
        Some(p) => (read_text(p)?, p.shown().to_string()),
        None => (
            SAMPLE_PLANNER_EVAL.to_string(),
            "sample labelled messages".to_string(),
        ),
    };
    let messages = parse_messages(&text, &origin)?;
    if messages.is_empty() {
        return Err(crate::exit::bad_input(format!(
            "{origin}: has no labelled messages"
        )));
    }
    let mut report = evaluate(&ws.planner, &messages, ws.planner_origin.clone(), origin);
    if args.labels.is_none() {
        let held_out = parse_messages(SAMPLE_PLANNER_HOLDOUT, "sample held-out messages")?;
        report.held_out = Some(Box::new(evaluate(
            &ws.planner,
            &held_out,
            ws.planner_origin.clone(),
            "sample held-out messages".into(),
        )));
    }
    if args.json {
        return print_json(&report);
    }
    emit(&describe(&report))?;
    if let Some(h) = &report.held_out {
        emit(&format!("\n{}", describe(h)))?;
    }
    Ok(())
}

/// A set of categories on one line: each as a name is shown (a line break in a labels
/// file's category started a forged line of the report: tester 18 F7).
fn set(s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        "(none)".into()
    } else {
        s.iter()
            .map(|c| name(c).into_owned())
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// A message as the report quotes it: escaped, on one line, its first 80 characters.
fn quoted_message(message: &str) -> String {
    format!("{:?}", message.chars().take(80).collect::<String>())
}

/// A ratio with nothing to divide by (a category never predicted has no precision, one never
/// expected no recall) reads `n/a`, as `eval rank` shows an empty half.
fn ratio_cell(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"))
}

pub fn describe(r: &PlannerReport) -> String {
    let m = &r.metrics;
    let mut out = format!(
        "{} on {}: {} messages, exact-set accuracy {:.3}, traps right {}/{}\n\n",
        r.rules, r.labels, m.cases, m.exact_set_accuracy, r.traps_right, r.traps
    );
    let rows: Vec<Vec<String>> = m
        .per_class
        .iter()
        .map(|c| {
            vec![
                c.class.clone(),
                c.support.to_string(),
                c.predicted.to_string(),
                ratio_cell(c.precision),
                ratio_cell(c.recall),
            ]
        })
        .collect();
    out.push_str(&render(
        &[
            "category",
            ">expected",
            ">predicted",
            ">precision",
            ">recall",
        ],
        &rows,
    ));
    out.push('\n');
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    for o in &r.trap_results {
        let mark = if o.expected == o.predicted {
            "ok  "
        } else {
            "MISS"
        };
        out.push_str(&format!(
            "{mark} trap ({}): {} → {} (expected {})\n",
            name(o.trap.as_deref().unwrap_or("")),
            quoted_message(&o.message),
            set(&o.predicted),
            set(&o.expected)
        ));
    }
    for o in &r.wrong {
        out.push_str(&format!(
            "wrong: {} → {} (expected {})\n",
            quoted_message(&o.message),
            set(&o.predicted),
            set(&o.expected)
        ));
    }
    out
}
