//! The frontier gap signal (seed 003 PR #3, issue 18 item 6): a plan's steps beside a
//! stronger model's unaided steps for the same intent (its `expert_baseline`), and those
//! comparisons counted by intent shape and tool — "baseline skipped memory.store in 14 of 20
//! 'remember …' intents". Pure: the store hands in steps and rows, this hands back values.
//!
//! What is compared is the tools the steps name, in order. A step the guard demoted to
//! `unknown` names no tool anyone can run: it is left out of both sides (the notes count
//! it). Arguments and rationales are not compared. A baseline none of whose steps names a
//! tool planned nothing: no signal. A name in a note or a sentence is one line
//! ([`crate::core::terminal_text::name`]); the fields keep it exact.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::core::history::{Baseline, Outcome, PlanRecord, Step, UNKNOWN_TOOL};
use crate::core::terminal_text::{NamesShown, for_terminal_line, name};
use crate::core::text::clip;

/// How a plan's steps stand against its baseline's, in one word. Exactly one applies, in
/// this order of checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapCategory {
    /// The plan failed (no plan came back): nothing to compare, every baseline tool is
    /// missed.
    PlanFailed,
    /// The same tools, each as many times, in the same order.
    Agree,
    /// The same tools, each as many times, in another order.
    Reordered,
    /// The same set of tools, one of them called more or fewer times.
    Repeated,
    /// The plan names tools the baseline never named, and misses none of the baseline's:
    /// the frontier skipped something the plan did.
    FrontierMissed,
    /// The baseline names tools the plan never named, and the plan adds none of its own:
    /// the plan skipped something the frontier did.
    PlanMissed,
    /// Each side names tools the other never named.
    DifferentTools,
}

impl GapCategory {
    pub const ALL: [GapCategory; 7] = [
        GapCategory::PlanFailed,
        GapCategory::Agree,
        GapCategory::Reordered,
        GapCategory::Repeated,
        GapCategory::FrontierMissed,
        GapCategory::PlanMissed,
        GapCategory::DifferentTools,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GapCategory::PlanFailed => "plan_failed",
            GapCategory::Agree => "agree",
            GapCategory::Reordered => "reordered",
            GapCategory::Repeated => "repeated",
            GapCategory::FrontierMissed => "frontier_missed",
            GapCategory::PlanMissed => "plan_missed",
            GapCategory::DifferentTools => "different_tools",
        }
    }
}

impl fmt::Display for GapCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plan against its baseline (seed 003's `gap_signal`). Tools are compared by name; a
/// step demoted to `unknown` is on neither side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapSignal {
    /// True when the plan's tools are the baseline's, one for one, in the same order
    /// (category `agree`). Two empty sides agree.
    pub agree: bool,
    /// Tools the plan names that the baseline never names: what the frontier skipped
    /// ("baseline skipped memory.store"). Each once, in the plan's order.
    pub frontier_missed: Vec<String>,
    /// Every plan step the baseline has no step for, in the plan's order: a step whose tool
    /// the baseline never names, or a call of a tool beyond as many as the baseline makes.
    /// So a plan calling `web.search` twice where the baseline calls it once has added
    /// one `web.search`, and missed nothing.
    pub plan_added: Vec<String>,
    /// Tools the baseline names that the plan never names: what the plan skipped. Each
    /// once, in the baseline's order.
    pub plan_missed: Vec<String>,
    pub category: GapCategory,
    /// One sentence per difference, written from the fields above, and how many steps on
    /// each side named no registered tool.
    pub notes: String,
}

/// Tools of `steps` that name a tool (guard-demoted steps left out), in order.
fn tools(steps: &[Step]) -> Vec<&str> {
    steps
        .iter()
        .map(|s| s.tool.as_str())
        .filter(|t| *t != UNKNOWN_TOOL)
        .collect()
}

fn counts<'a>(tools: &[&'a str]) -> HashMap<&'a str, usize> {
    let mut out = HashMap::new();
    for t in tools {
        *out.entry(*t).or_default() += 1;
    }
    out
}

/// Each distinct tool of `a` that `b` does not name, in `a`'s order.
fn missing_from(a: &[&str], b: &HashMap<&str, usize>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in a {
        if !b.contains_key(t) && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    out
}

/// True when some step names a tool (not `unknown`): a baseline without one planned
/// nothing a plan can be measured against.
pub fn names_a_tool(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.tool != UNKNOWN_TOOL)
}

/// `record`'s steps as a baseline (stored as `plan_id`), when it planned: not a failed
/// plan, and one with a step naming a registered tool (a plan whose steps were all
/// demoted to `unknown` is no plan either). For the send that asked it and for an
/// import that links it later alike.
pub fn planned_baseline(record: &PlanRecord, plan_id: Option<String>) -> Option<Baseline> {
    (record.outcome != Outcome::Failed && names_a_tool(&record.steps)).then(|| Baseline {
        model: Some(record.model.clone()),
        plan_id,
        steps: record.steps.clone(),
    })
}

/// Compare a plan (its outcome and steps) with its baseline's steps. `None` when no step of
/// the baseline names a tool (it has none, or the guard demoted every one to `unknown`): a
/// baseline that names no tool planned nothing to measure a plan against, so, like one that
/// gave no plan, it gives no signal.
pub fn gap_signal(outcome: Outcome, plan: &[Step], baseline: &[Step]) -> Option<GapSignal> {
    if !names_a_tool(baseline) {
        return None;
    }
    let mine = tools(plan);
    let theirs = tools(baseline);
    let (my_counts, their_counts) = (counts(&mine), counts(&theirs));
    let failed = outcome == Outcome::Failed;
    let frontier_missed = if failed {
        Vec::new()
    } else {
        missing_from(&mine, &their_counts)
    };
    let plan_missed = missing_from(&theirs, &my_counts);
    let mut plan_added = Vec::new();
    if !failed {
        let mut left = their_counts.clone();
        for t in &mine {
            match left.get_mut(t) {
                Some(n) if *n > 0 => *n -= 1,
                _ => plan_added.push(t.to_string()),
            }
        }
    }
    let category = if failed {
        GapCategory::PlanFailed
    } else if mine == theirs {
        GapCategory::Agree
    } else if my_counts == their_counts {
        GapCategory::Reordered
    } else if frontier_missed.is_empty() && plan_missed.is_empty() {
        GapCategory::Repeated
    } else if plan_missed.is_empty() {
        GapCategory::FrontierMissed
    } else if frontier_missed.is_empty() {
        GapCategory::PlanMissed
    } else {
        GapCategory::DifferentTools
    };
    let mut notes = Vec::new();
    match category {
        GapCategory::PlanFailed => notes.push("the plan failed: no steps to compare".into()),
        GapCategory::Agree => {
            notes.push("the plan and the baseline name the same tools in the same order".into())
        }
        GapCategory::Reordered => notes.push("the same tools in another order".into()),
        _ => {}
    }
    // Names that print alike are spelled apart across the notes (tester 38 F1: "the baseline
    // skipped café; the plan skipped café" named two tools).
    let shown = if frontier_missed.is_empty() && plan_missed.is_empty() {
        NamesShown::default()
    } else {
        NamesShown::new(mine.iter().chain(theirs.iter()).copied())
    };
    if !frontier_missed.is_empty() {
        notes.push(format!(
            "the baseline skipped {}",
            names(&shown, &frontier_missed)
        ));
    }
    if !plan_missed.is_empty() {
        notes.push(format!("the plan skipped {}", names(&shown, &plan_missed)));
    }
    let mut repeats: Vec<&str> = my_counts
        .iter()
        .filter(|(t, n)| their_counts.get(*t).is_some_and(|m| m != *n))
        .map(|(t, _)| *t)
        .collect();
    repeats.sort_unstable();
    if !failed {
        for t in repeats {
            let n = my_counts[t];
            notes.push(format!(
                "the plan calls {} {n} time{}, the baseline {}",
                name(t),
                if n == 1 { "" } else { "s" },
                their_counts[t]
            ));
        }
    }
    for (side, steps, kept) in [
        ("plan", plan, mine.len()),
        ("baseline", baseline, theirs.len()),
    ] {
        let unknown = steps.len() - kept;
        if unknown > 0 {
            notes.push(format!(
                "{unknown} {side} step{} named no registered tool and {} left out",
                if unknown == 1 { "" } else { "s" },
                if unknown == 1 { "was" } else { "were" }
            ));
        }
    }
    Some(GapSignal {
        agree: category == GapCategory::Agree,
        frontier_missed,
        plan_added,
        plan_missed,
        category,
        notes: notes.join("; "),
    })
}

/// Tools as a note lists them, each one line ([`name`]).
fn names(shown: &NamesShown, tools: &[String]) -> String {
    tools
        .iter()
        .map(|t| shown.name(t))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A plan's baseline and its signal as `history show` prints them, two lines:
/// `baseline MODEL (plan ID): a → b` and `gap: CATEGORY: notes`. Every name one line
/// ([`name`]), and the notes too (a row stored before they were written so).
pub fn baseline_lines(b: &Baseline, g: Option<&GapSignal>, shown: &NamesShown) -> String {
    let model = b
        .model
        .as_deref()
        .map(|m| format!(" {}", name(m)))
        .unwrap_or_default();
    let plan = b
        .plan_id
        .as_deref()
        .map(|p| format!(" (plan {})", name(p)))
        .unwrap_or_default();
    let steps: Vec<_> = b.steps.iter().map(|s| shown.name(&s.tool)).collect();
    let steps = if steps.is_empty() {
        "no step".to_string()
    } else {
        steps.join(" → ")
    };
    // A baseline with no step it names a tool in is kept with no signal (tester 27 F9:
    // `history show` then printed nothing of it).
    let gap = match g {
        Some(g) => format!("{}: {}", g.category, for_terminal_line(&g.notes)),
        None => {
            format!("no signal: the baseline names no tool (`{UNKNOWN_TOOL}` steps are left out)")
        }
    };
    format!("baseline{model}{plan}: {steps}\ngap: {gap}\n")
}

/// How a baseline is planned, as `send` says it of the baseline it ran and a baseline plan's
/// detail says it of itself.
pub const BASELINE_HOW: &str = "whole catalog, no planner help, no prior";

/// The line `history show` and the History pane's detail give a plan stored as a baseline
/// (`send --baseline`, marked in its trim record: [`crate::core::as_sent::is_baseline`]):
/// `baseline plan: whole catalog, no planner help, no prior (its own window cut 43 catalog
/// entries)`, or `None` for any other plan (tester 5 C1: it read like any plan).
pub fn baseline_plan_line(trim: Option<&serde_json::Value>) -> Option<String> {
    if !crate::core::as_sent::is_baseline(trim) {
        return None;
    }
    let cut = trim
        .and_then(|t| t.get(crate::core::as_sent::BASELINE_KEY))
        .and_then(|b| b.get("catalog_cut"))
        .and_then(serde_json::Value::as_u64)
        .filter(|&n| n > 0)
        .map(|n| {
            format!(
                " (its own window cut {n} catalog entr{})",
                if n == 1 { "y" } else { "ies" }
            )
        })
        .unwrap_or_default();
    Some(format!("baseline plan: {BASELINE_HOW}{cut}"))
}

/// One plan's gap signal as the store lists it for counting.
#[derive(Debug, Clone, PartialEq)]
pub struct GapRow {
    /// The plan's intent shape ([`crate::core::history::shape`]).
    pub shape: String,
    /// The group's latest intent, naming it.
    pub intent: String,
    pub signal: GapSignal,
}

/// A tool and the number of plans in which it was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCount {
    pub tool: String,
    pub plans: u64,
}

impl ToolCount {
    /// `memory.store×3`, the tool as `shown` shows it (one line; spelled apart from a tool
    /// that prints alike): how `history --gaps` lists the counts.
    pub fn shown(&self, shown: &NamesShown) -> String {
        format!("{}×{}", shown.name(&self.tool), self.plans)
    }
}

/// The gap signals of one group of similar intents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GapGroup {
    pub shape: String,
    /// The group's latest intent.
    pub intent: String,
    /// Plans of the group with a gap signal.
    pub plans: u64,
    /// Of them, plans agreeing with their baseline.
    pub agree: u64,
    /// Plans per category, most first.
    pub categories: Vec<(GapCategory, u64)>,
    /// Tools the baseline skipped (in the plan, not the baseline), with how many plans.
    pub frontier_missed: Vec<ToolCount>,
    /// Tools the plan skipped (in the baseline, not the plan), with how many plans.
    pub plan_missed: Vec<ToolCount>,
}

impl GapGroup {
    /// The group in sentences, most frequent first: "baseline skipped memory.store in 14 of
    /// 20 'remember …' intents", "the plan skipped web.search in 3 of 20 '…' intents".
    /// Tools as `shown` (the whole report's, [`GapReport::names_shown`]) shows them.
    pub fn sentences(&self, intent_width: usize, shown: &NamesShown) -> Vec<String> {
        let intent = clip(&self.intent.replace('\n', " "), intent_width);
        let name = |t: &str| shown.name(t).into_owned();
        let mut out: Vec<(u64, String)> = Vec::new();
        for t in &self.frontier_missed {
            out.push((
                t.plans,
                format!(
                    "baseline skipped {} in {} of {} '{intent}' intents",
                    name(&t.tool),
                    t.plans,
                    self.plans
                ),
            ));
        }
        for t in &self.plan_missed {
            out.push((
                t.plans,
                format!(
                    "plan skipped {} in {} of {} '{intent}' intents",
                    name(&t.tool),
                    t.plans,
                    self.plans
                ),
            ));
        }
        for (category, n) in &self.categories {
            let what = match category {
                GapCategory::PlanFailed => "the plan failed",
                GapCategory::Reordered => "the same tools in another order",
                GapCategory::Repeated => "a tool called more or fewer times",
                _ => continue,
            };
            out.push((
                *n,
                format!("{what} in {n} of {} '{intent}' intents", self.plans),
            ));
        }
        // Stable: the baseline's skips before the plan's at equal counts.
        out.sort_by_key(|s| std::cmp::Reverse(s.0));
        if out.is_empty() || self.agree > 0 {
            out.push((
                self.agree,
                format!(
                    "agree in {} of {} '{intent}' intents",
                    self.agree, self.plans
                ),
            ));
        }
        out.into_iter().map(|(_, s)| s).collect()
    }
}

/// Gap signals counted: overall, and by intent shape and tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GapReport {
    /// Plans with a gap signal.
    pub plans: u64,
    pub agree: u64,
    /// Plans per category, most first.
    pub categories: Vec<(GapCategory, u64)>,
    /// Tools the baseline skipped, over every group, most plans first.
    pub frontier_missed: Vec<ToolCount>,
    /// Tools the plans skipped, over every group, most plans first.
    pub plan_missed: Vec<ToolCount>,
    /// Groups, most plans with a gap signal first.
    pub groups: Vec<GapGroup>,
    /// How every list of the report shows its tools, worked out once as it is counted.
    #[serde(skip)]
    names: NamesShown,
}

/// The tools a plan view names — the plan's steps, what ran, the baseline's steps — with
/// those that print alike spelled apart (tester 38 F1: `café` planned beside `café` in the
/// baseline named two tools).
pub fn plan_view_names<'a>(
    steps: &'a [Step],
    executed: &'a [String],
    baseline: Option<&'a Baseline>,
) -> NamesShown {
    NamesShown::new(
        steps
            .iter()
            .chain(baseline.into_iter().flat_map(|b| b.steps.iter()))
            .map(|s| s.tool.as_str())
            .chain(executed.iter().map(String::as_str)),
    )
}

impl GapReport {
    /// Every tool the report names, spelled apart where two print alike (tester 38 F1:
    /// `baseline skipped café×1` beside `plans skipped café×1` named two tools): worked out
    /// when the report was counted, not per list or per frame of the Gaps panel.
    pub fn names_shown(&self) -> &NamesShown {
        &self.names
    }
}

/// Sorted most plans first, then by name.
fn tool_counts(map: BTreeMap<String, u64>) -> Vec<ToolCount> {
    let mut out: Vec<ToolCount> = map
        .into_iter()
        .map(|(tool, plans)| ToolCount { tool, plans })
        .collect();
    out.sort_by(|a, b| b.plans.cmp(&a.plans).then_with(|| a.tool.cmp(&b.tool)));
    out
}

fn category_counts(map: BTreeMap<GapCategory, u64>) -> Vec<(GapCategory, u64)> {
    let mut out: Vec<(GapCategory, u64)> = map.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// Count gap signals by group and tool. A tool counts once per plan however often it
/// appears in it.
pub fn aggregate(rows: impl IntoIterator<Item = GapRow>) -> GapReport {
    #[derive(Default)]
    struct Acc {
        intent: String,
        plans: u64,
        agree: u64,
        categories: BTreeMap<GapCategory, u64>,
        frontier_missed: BTreeMap<String, u64>,
        plan_missed: BTreeMap<String, u64>,
    }
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    for row in rows {
        let g = groups.entry(row.shape.clone()).or_default();
        g.intent = row.intent;
        for acc in [&mut *g, &mut all] {
            acc.plans += 1;
            acc.agree += u64::from(row.signal.agree);
            *acc.categories.entry(row.signal.category).or_default() += 1;
            for t in &row.signal.frontier_missed {
                *acc.frontier_missed.entry(t.clone()).or_default() += 1;
            }
            for t in &row.signal.plan_missed {
                *acc.plan_missed.entry(t.clone()).or_default() += 1;
            }
        }
    }
    let mut groups: Vec<GapGroup> = groups
        .into_iter()
        .map(|(shape, a)| GapGroup {
            shape,
            intent: a.intent,
            plans: a.plans,
            agree: a.agree,
            categories: category_counts(a.categories),
            frontier_missed: tool_counts(a.frontier_missed),
            plan_missed: tool_counts(a.plan_missed),
        })
        .collect();
    groups.sort_by(|a, b| b.plans.cmp(&a.plans).then_with(|| a.shape.cmp(&b.shape)));
    let (frontier_missed, plan_missed) = (
        tool_counts(all.frontier_missed),
        tool_counts(all.plan_missed),
    );
    let names = NamesShown::new(
        frontier_missed
            .iter()
            .chain(&plan_missed)
            .map(|t| t.tool.as_str()),
    );
    GapReport {
        plans: all.plans,
        agree: all.agree,
        categories: category_counts(all.categories),
        frontier_missed,
        plan_missed,
        groups,
        names,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(tools: &[&str]) -> Vec<Step> {
        tools
            .iter()
            .enumerate()
            .map(|(i, t)| Step {
                order: i as u32 + 1,
                tool: t.to_string(),
                args: serde_json::Value::Null,
                rationale: String::new(),
            })
            .collect()
    }

    fn gap(plan: &[&str], baseline: &[&str]) -> GapSignal {
        gap_signal(Outcome::Ok, &steps(plan), &steps(baseline)).expect("the baseline plans")
    }

    #[test]
    fn each_category_means_one_thing() {
        let g = gap(
            &["memory.store", "blog.draft"],
            &["memory.store", "blog.draft"],
        );
        assert!(g.agree && g.category == GapCategory::Agree);
        assert!(g.frontier_missed.is_empty() && g.plan_added.is_empty());
        assert!(gap(&["unknown"], &["memory.store"]).plan_missed == ["memory.store"]);

        let g = gap(
            &["blog.draft", "memory.store"],
            &["memory.store", "blog.draft"],
        );
        assert_eq!(g.category, GapCategory::Reordered);
        assert!(!g.agree && g.plan_added.is_empty() && g.plan_missed.is_empty());

        let g = gap(&["web.search", "web.search"], &["web.search"]);
        assert_eq!(g.category, GapCategory::Repeated);
        assert_eq!(g.plan_added, ["web.search"]);
        assert!(g.frontier_missed.is_empty());
        assert!(
            g.notes.contains("calls web.search 2 times, the baseline 1"),
            "{}",
            g.notes
        );

        let g = gap(&["memory.store", "blog.draft"], &["blog.draft"]);
        assert_eq!(g.category, GapCategory::FrontierMissed);
        assert_eq!(g.frontier_missed, ["memory.store"]);
        assert_eq!(g.plan_added, ["memory.store"]);
        assert!(g.notes.contains("the baseline skipped memory.store"));

        let g = gap(&["blog.draft"], &["web.search", "blog.draft", "web.search"]);
        assert_eq!(g.category, GapCategory::PlanMissed);
        assert_eq!(g.plan_missed, ["web.search"], "each tool once");

        let g = gap(
            &["image.generate", "blog.draft"],
            &["memory.store", "blog.draft"],
        );
        assert_eq!(g.category, GapCategory::DifferentTools);
        assert_eq!(
            (g.frontier_missed, g.plan_missed),
            (
                vec!["image.generate".to_string()],
                vec!["memory.store".to_string()]
            )
        );
    }

    #[test]
    fn a_failed_plan_misses_the_whole_baseline_and_unknown_steps_are_left_out() {
        let g = gap_signal(Outcome::Failed, &[], &steps(&["memory.store"])).unwrap();
        assert_eq!(g.category, GapCategory::PlanFailed);
        assert_eq!(g.plan_missed, ["memory.store"]);
        assert!(!g.agree && g.plan_added.is_empty());
        let g = gap(&["unknown", "memory.store"], &["memory.store", "unknown"]);
        assert!(g.agree, "{g:?}");
        assert!(
            g.notes.contains("1 plan step named no registered tool"),
            "{}",
            g.notes
        );
        assert!(g.notes.contains("1 baseline step"), "{}", g.notes);
    }

    /// Tester 5 F8: a baseline whose every step the guard demoted (or that has no step)
    /// planned nothing to measure a plan against: no signal, not "baseline skipped …".
    #[test]
    fn a_baseline_naming_no_registered_tool_gives_no_signal() {
        let plan = steps(&["web.search", "memory.store"]);
        assert_eq!(
            gap_signal(Outcome::Ok, &plan, &steps(&["unknown", "unknown"])),
            None
        );
        assert_eq!(gap_signal(Outcome::Ok, &plan, &[]), None);
        assert_eq!(gap_signal(Outcome::Failed, &[], &steps(&["unknown"])), None);
        assert!(gap_signal(Outcome::Ok, &plan, &steps(&["unknown", "web.search"])).is_some());
    }

    /// Tester 5 C3: one call is "1 time".
    #[test]
    fn a_count_of_one_is_singular() {
        let g = gap(&["web.search"], &["web.search", "web.search"]);
        assert!(
            g.notes
                .contains("the plan calls web.search 1 time, the baseline 2"),
            "{}",
            g.notes
        );
    }

    /// Tester 5 F1/F2: a tool name from outside (an imported baseline, an older store) with
    /// a line break in it is one line in the notes and in `history --gaps`'s sentences and
    /// counts, never a line of its own; the fields keep it exact.
    #[test]
    fn a_name_with_a_line_break_stays_on_its_line() {
        let forged = "a\nb vs baseline: agree";
        let g = gap(&[forged, "x", "x"], &["x", "c\nplan skipped nothing"]);
        assert_eq!(g.frontier_missed, [forged]);
        assert!(!g.notes.contains('\n'), "{}", g.notes);
        assert!(
            g.notes
                .contains(r"the baseline skipped 'a\nb vs baseline: agree'"),
            "{}",
            g.notes
        );
        let report = aggregate([GapRow {
            shape: "s".into(),
            intent: "remember\nthe note".into(),
            signal: g,
        }]);
        for line in report.groups[0].sentences(40, report.names_shown()) {
            assert!(!line.contains('\n'), "{line}");
        }
        let shown = report.names_shown();
        let counted = report.frontier_missed[0].shown(shown);
        assert_eq!(counted, r"'a\nb vs baseline: agree'×1");
        assert!(!report.plan_missed[0].shown(shown).contains('\n'));
    }

    /// Tester 38 F1: a plan naming `cafe\u{301}` where the baseline named `caf\u{e9}` read
    /// "the baseline skipped café; the plan skipped café". Every list of a gap spells them
    /// apart: the stored notes, the counts and the group's sentences.
    #[test]
    fn tools_that_print_alike_are_spelled_apart_in_a_gap() {
        let g = gap(&["cafe\u{301}", "x"], &["caf\u{e9}", "x"]);
        assert!(
            g.notes.contains("the baseline skipped cafe\\u{301}")
                && g.notes.contains("the plan skipped caf\\u{e9}"),
            "{}",
            g.notes
        );
        let report = aggregate([GapRow {
            shape: "s".into(),
            intent: "order a coffee".into(),
            signal: g,
        }]);
        let shown = report.names_shown();
        assert_eq!(report.frontier_missed[0].shown(shown), "cafe\\u{301}×1");
        assert_eq!(report.plan_missed[0].shown(shown), "caf\\u{e9}×1");
        // A plan's view: its steps beside the baseline's.
        let plan = steps(&["cafe\u{301}"]);
        let b = Baseline {
            model: None,
            plan_id: None,
            steps: steps(&["caf\u{e9}"]),
        };
        let names = plan_view_names(&plan, &[], Some(&b));
        assert_eq!(names.spelled_or_raw("cafe\u{301}"), "cafe\\u{301}");
        let text = baseline_lines(&b, None, &names);
        assert!(text.starts_with("baseline: caf\\u{e9}\n"), "{text}");
        let sentences = report.groups[0].sentences(40, shown).join("\n");
        assert!(
            sentences.contains("baseline skipped cafe\\u{301} in 1")
                && sentences.contains("plan skipped caf\\u{e9} in 1"),
            "{sentences}"
        );
    }

    /// Tester 5 F2: an imported baseline's model, plan id and tools with line breaks (and a
    /// row's notes stored before they were written on one line) print as two lines, no more.
    #[test]
    fn the_baseline_lines_are_two_whatever_the_names() {
        let b = Baseline {
            model: Some("gpt\ngap: agree: FORGED".into()),
            plan_id: Some("p\nFORGED2".into()),
            steps: steps(&["web.search", "a\nb"]),
        };
        let mut g = gap(&["web.search"], &["web.search"]);
        g.notes = "old\nFORGED NOTE".into();
        let text = baseline_lines(&b, Some(&g), &NamesShown::default());
        assert_eq!(
            text,
            "baseline 'gpt\\ngap: agree: FORGED' (plan 'p\\nFORGED2'): web.search → 'a\\nb'\n\
             gap: agree: old\\nFORGED NOTE\n"
        );
    }

    #[test]
    fn aggregation_counts_each_tool_once_per_plan_by_group() {
        let row = |shape: &str, plan: &[&str], baseline: &[&str]| GapRow {
            shape: shape.into(),
            intent: format!("remember the {shape} note"),
            signal: gap(plan, baseline),
        };
        let report = aggregate([
            row(
                "a",
                &["memory.store", "memory.store", "blog.draft"],
                &["blog.draft"],
            ),
            row("a", &["memory.store", "blog.draft"], &["blog.draft"]),
            row("a", &["blog.draft"], &["blog.draft"]),
            row("b", &["fs.read"], &["fs.read", "web.search"]),
        ]);
        assert_eq!((report.plans, report.agree), (4, 1));
        let a = &report.groups[0];
        assert_eq!((a.shape.as_str(), a.plans, a.agree), ("a", 3, 1));
        assert_eq!(
            a.frontier_missed,
            [ToolCount {
                tool: "memory.store".into(),
                plans: 2
            }]
        );
        assert_eq!(
            a.sentences(40, report.names_shown()),
            [
                "baseline skipped memory.store in 2 of 3 'remember the a note' intents",
                "agree in 1 of 3 'remember the a note' intents"
            ]
        );
        assert_eq!(
            report.groups[1].sentences(40, report.names_shown()),
            ["plan skipped web.search in 1 of 1 'remember the b note' intents"]
        );
        assert_eq!(report.categories[0], (GapCategory::FrontierMissed, 2));
    }
}
