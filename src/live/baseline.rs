//! `send --baseline MODEL`, and the console's send when `llm.baseline_model` is set (issue
//! 18 item 6): the same intent also sent to a strong model
//! with the whole catalog and no planner help, stored as a plan of its own; each model's
//! plan is stored with the baseline's steps as its `expert_baseline`, and so with its gap
//! signal (`core::gap`), which `history --gaps` counts.

use serde::Serialize;

use crate::core::gap::{GapSignal, gap_signal};
use crate::core::history::{Baseline, PlanRecord};
use crate::core::text::clip;
use crate::live::in_hand::InHand;
use crate::live::replay::LiveReplay;
use crate::preview::{Fate, PlannedRequest};
use crate::workspace::Workspace;

/// The baseline model for this run: `--baseline`, else `llm.baseline_model` in config.toml,
/// unless `--no-baseline`.
pub fn chosen(
    ws: &Workspace,
    flag: Option<&str>,
    no_baseline: bool,
) -> anyhow::Result<Option<String>> {
    if no_baseline {
        return Ok(None);
    }
    let model = match flag {
        Some(m) => Some(m.to_string()),
        None => ws.config()?.llm.baseline_model,
    };
    match model {
        Some(m) if m.trim().is_empty() => Err(crate::exit::bad_input(
            "--baseline (or llm.baseline_model) is empty",
        )),
        m => Ok(m),
    }
}

/// One model's plan against the baseline, as `send --json` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SentGap {
    pub model: String,
    /// The stored plan carrying the signal.
    pub plan_id: Option<String>,
    pub gap_signal: GapSignal,
}

/// What the baseline gave: its result (shown beside the others) and the steps the models'
/// plans are compared with (`None` when it ran no plan).
pub struct BaselineRun {
    pub live: LiveReplay,
    pub steps: Option<Baseline>,
    /// Catalog entries the baseline model's own window cut (no byte cap applies to it).
    pub cut: usize,
}

/// Store the baseline's answer (marked as a baseline in its trim record as it came back) and
/// keep its steps when it planned.
pub fn store(
    mut live: LiveReplay,
    answer: Option<InHand>,
    request: &PlannedRequest,
    insert: impl FnOnce(&mut PlanRecord) -> anyhow::Result<String>,
) -> anyhow::Result<BaselineRun> {
    let cut = request.compaction.count(|f| matches!(f, Fate::CutByBudget));
    let Some(answer) = answer else {
        return Ok(BaselineRun {
            live,
            steps: None,
            cut,
        });
    };
    let planned = crate::core::gap::planned_baseline(&answer.record, None);
    let id = live.store_in_hand(answer, insert);
    let steps = planned.map(|b| Baseline { plan_id: id, ..b });
    Ok(BaselineRun { live, steps, cut })
}

/// Give a model's record the baseline's steps before it is stored, when both ran: a call
/// that could not run (nothing sent, no whole answer) says nothing about planning. Returns
/// the gap signal the store will derive from it.
pub fn attach(
    live: &LiveReplay,
    record: &mut PlanRecord,
    baseline: Option<&Baseline>,
) -> Option<GapSignal> {
    let b = baseline?;
    if live.could_not_run().is_some() {
        return None;
    }
    record.expert_baseline = Some(b.clone());
    gap_signal(record.outcome, &record.steps, &b.steps)
}

/// The baseline and each model's gap, under the side-by-side table.
pub fn render(baseline: &BaselineRun, gaps: &[SentGap]) -> String {
    let b = &baseline.live;
    let mut out = format!(
        "\nbaseline {} ({}): ",
        b.model,
        crate::core::gap::BASELINE_HOW
    );
    match (&baseline.steps, b.could_not_run()) {
        (_, Some(why)) => out.push_str(&format!("could not run ({why}); no gap signal stored\n")),
        (None, None) => {
            let why = match (&b.failure, &b.plan) {
                (Some(f), _) => f.class.as_str().to_string(),
                (None, Some(p)) => format!(
                    "none of its {} step{} names a registered tool",
                    p.steps.len(),
                    if p.steps.len() == 1 { "" } else { "s" }
                ),
                (None, None) => "?".to_string(),
            };
            out.push_str(&format!("no plan ({why}); no gap signal stored\n"));
        }
        (Some(steps), None) => {
            out.push_str(&clip(
                &steps
                    .steps
                    .iter()
                    .map(|s| s.tool.as_str())
                    .collect::<Vec<_>>()
                    .join(" → "),
                80,
            ));
            if let Some(id) = &b.stored_id {
                out.push_str(&format!("  (stored as {id})"));
            }
            out.push('\n');
        }
    }
    if baseline.cut > 0 {
        out.push_str(&format!(
            "  its own window cut {} catalog entries: a larger input_tokens in its budgets.toml row (or a row of its own) sends it all\n",
            baseline.cut
        ));
    }
    for g in gaps {
        out.push_str(&format!(
            "  {} vs baseline: {} — {}\n",
            g.model, g.gap_signal.category, g.gap_signal.notes
        ));
    }
    out
}
