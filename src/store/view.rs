//! The queries the History pane runs, as data in and data out, so the console can run them
//! on a worker thread and get the answer back as a message.

use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

use crate::core::budget::{BudgetTable, Tier};
use crate::core::gap::{GapGroup, GapReport};
use crate::core::history::{Drift, ModelOutcomes, TIER_RULE, suggest_tier};
use crate::core::trend::Trends;
use crate::store::history::{
    DriftRow, GroupSummary, HistoryStore, PlanDetail, PlanFilter, PlanRow, StepPair,
};

/// Rows fetched per page: more than a screen, so scrolling rarely waits.
pub const PAGE: u64 = 200;

/// One model's outcomes with the tier they argue for, beside the tier it has now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRow {
    #[serde(flatten)]
    pub outcomes: ModelOutcomes,
    /// `None` (JSON `null`) for a model with no plan of its own: 0/0 is no figure (tester 26
    /// N6: a model only replayed against read 0.0).
    pub failed_rate: Option<f64>,
    pub followed_rate: Option<f64>,
    pub current_tier: Tier,
    pub suggested_tier: Option<Tier>,
    pub evidence: u64,
    pub why: String,
}

impl ModelRow {
    /// The failed and followed shares as a table shows them (`7%`, `84%`), or `—` for a
    /// model with no plan of its own — one only replayed against, whose replays stay out of
    /// its outcomes (tester 25 F7: it read `0%` failed).
    pub fn shown_rates(&self) -> (String, String) {
        use crate::core::history::{failed_percent, followed_percent};
        let shown = |rate: Option<f64>, percent: fn(f64) -> u64| {
            rate.map_or_else(|| "—".to_string(), |r| format!("{}%", percent(r)))
        };
        (
            shown(self.failed_rate, failed_percent),
            shown(self.followed_rate, followed_percent),
        )
    }

    pub fn new(outcomes: ModelOutcomes, budgets: &BudgetTable) -> ModelRow {
        let s = suggest_tier(&outcomes);
        ModelRow {
            failed_rate: (outcomes.plans > 0).then(|| outcomes.failed_rate()),
            followed_rate: (outcomes.plans > 0).then(|| outcomes.followed_rate()),
            current_tier: budgets.lookup(&outcomes.model).row.tier,
            suggested_tier: s.tier,
            evidence: s.evidence,
            why: s.why,
            outcomes,
        }
    }
}

pub fn model_rows(
    store: &HistoryStore,
    filter: &PlanFilter,
    budgets: &BudgetTable,
) -> anyhow::Result<Vec<ModelRow>> {
    Ok(store
        .model_outcomes(filter)?
        .into_iter()
        .map(|m| ModelRow::new(m, budgets))
        .collect())
}

/// Outcome rates and tier suggestions per model, as `history --models --json` prints them
/// and the MCP resource `ctxconsole://models` serves them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelsReport {
    pub rule: &'static str,
    pub models: Vec<ModelRow>,
    /// [`HistoryStore::left_out_note`]: the plans left out for a damaged row, each named with
    /// its column; absent when every plan read was readable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

pub fn models_report(
    store: &HistoryStore,
    filter: &PlanFilter,
    budgets: &BudgetTable,
) -> anyhow::Result<ModelsReport> {
    store.forget_left_out();
    Ok(ModelsReport {
        rule: TIER_RULE,
        models: model_rows(store, filter, budgets)?,
        left_out: store.left_out_note(),
    })
}

/// Groups of similar intents with their details and the step pairs, as
/// `history --groups --json` prints them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupsReport {
    /// [`OLDER_RULES_NOTE`](crate::store::history::OLDER_RULES_NOTE) when the store's groups
    /// are by an older build's word rules (read-only, or another writer held it when it was
    /// opened); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_note: Option<String>,
    pub total_groups: u64,
    pub groups: Vec<GroupSummary>,
    pub step_pairs: Vec<StepPair>,
    /// [`HistoryStore::left_out_note`]: with a filter, the plans whose time was put in by
    /// hand, counted in their group but giving it no time; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

pub fn groups_report(
    store: &HistoryStore,
    filter: &PlanFilter,
    limit: u64,
) -> anyhow::Result<GroupsReport> {
    store.in_one_read(|store| {
        store.forget_left_out();
        let mut groups = store.groups(filter, 0, limit)?;
        for g in &mut groups {
            store.group_details(g, filter)?;
        }
        Ok(GroupsReport {
            groups_note: store.groups_note()?,
            total_groups: store.count_groups(filter)?,
            groups,
            step_pairs: store.step_pairs(filter, 10)?,
            left_out: store.left_out_note(),
        })
    })
}

/// The gap signals counted, as `history --gaps --json` prints them: the store's note
/// about its groups beside the counts (review 45 L6: kept out of `core::gap`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapsReport {
    /// As [`GroupsReport::groups_note`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_note: Option<String>,
    #[serde(flatten)]
    pub report: GapReport,
}

/// [`GapsReport`] for the plans `filter` picks, its groups the first `limit`; the counts
/// and the note read as one state of the store.
pub fn gaps_report(
    store: &HistoryStore,
    filter: &PlanFilter,
    limit: u64,
) -> anyhow::Result<GapsReport> {
    store.in_one_read(|store| {
        let mut report = store.gaps(filter)?;
        report
            .groups
            .truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(GapsReport {
            groups_note: store.groups_note()?,
            report,
        })
    })
}

/// Groups `my_plans` reports, largest first.
pub const MY_PLANS_GROUPS: u64 = 20;
/// The latest plans of a group whose step sequences are counted as its decompositions.
pub const MY_PLANS_RECENT: u64 = 200;

/// Plans by intent shape, for an agent deciding how to decompose an ask (the seeds'
/// `my-plans`): per group its most-used decompositions, steps planned together, drift and
/// outcomes. Every figure comes from the mining queries `history` runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MyPlansReport {
    pub caller: Option<String>,
    /// As [`GroupsReport::groups_note`]: absent unless the groups are by an older build's
    /// word rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_note: Option<String>,
    pub total_groups: u64,
    pub total_plans: u64,
    /// Executions without a plan id count for the caller's latest plan within this.
    pub drift_window_secs: i64,
    pub groups: Vec<PlanGroup>,
    /// Pairs planned together across every group.
    pub step_pairs: Vec<StepPair>,
    /// Where the plans came from (`native`, `otel`, `litellm`), most first.
    pub sources: Vec<(String, u64)>,
    /// [`HistoryStore::left_out_note`]: the plans left out for a damaged row, each named with
    /// its column; absent when every plan read was readable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanGroup {
    #[serde(flatten)]
    pub summary: GroupSummary,
    /// Step sequences of the group's latest plans, most used first.
    pub decompositions: Vec<Decomposition>,
    pub step_pairs: Vec<StepPair>,
    pub drift: Vec<(Drift, u64)>,
    pub outcomes: GroupOutcomes,
    /// The latest plans with what executed after them.
    pub latest: Vec<DriftRow>,
    /// Where the group's plans came from (`native`, `otel`, `litellm`), most first.
    pub sources: Vec<(String, u64)>,
    /// The group's plans against a stronger model's unaided steps (`history --gaps`): how
    /// many agree, and the tools each side skipped with their plan counts. Absent when no
    /// plan of the group has a baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gaps: Option<GapGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decomposition {
    pub steps: Vec<String>,
    pub plans: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupOutcomes {
    pub ok: u64,
    pub guarded: u64,
    pub failed: u64,
    /// Replays are counted apart: no agent ran them.
    pub replays: u64,
}

fn listed(intent: &mut String) {
    if let std::borrow::Cow::Owned(shown) = crate::core::bounds::listed_intent(intent) {
        *intent = shown;
    }
}

pub fn my_plans(store: &HistoryStore, caller: Option<&str>) -> anyhow::Result<MyPlansReport> {
    // The groups, their figures and the note as one state of the store (review 45 L4).
    store.in_one_read(|store| my_plans_read(store, caller))
}

fn my_plans_read(store: &HistoryStore, caller: Option<&str>) -> anyhow::Result<MyPlansReport> {
    store.forget_left_out();
    let filter = PlanFilter {
        caller: caller.map(str::to_string),
        ..PlanFilter::default()
    };
    let mut groups = Vec::new();
    for mut summary in store.groups(&filter, 0, MY_PLANS_GROUPS)? {
        store.group_details(&mut summary, &filter)?;
        let f = PlanFilter {
            shape: Some(summary.shape.clone()),
            ..filter.clone()
        };
        let drift = store.drift(&f, MY_PLANS_RECENT)?;
        let mut sequences: HashMap<&[String], u64> = HashMap::new();
        for p in drift.plans.iter().filter(|p| p.drift != Drift::Replay) {
            *sequences.entry(&p.planned).or_default() += 1;
        }
        let mut decompositions: Vec<Decomposition> = sequences
            .into_iter()
            .filter(|(steps, _)| !steps.is_empty())
            .map(|(steps, plans)| Decomposition {
                steps: steps.to_vec(),
                plans,
            })
            .collect();
        decompositions.sort_by(|a, b| b.plans.cmp(&a.plans).then(a.steps.cmp(&b.steps)));
        decompositions.truncate(5);
        let mut outcomes = GroupOutcomes::default();
        for m in store.model_outcomes(&f)? {
            outcomes.ok += m.ok;
            outcomes.guarded += m.guarded;
            outcomes.failed += m.failed;
            outcomes.replays += m.replays;
        }
        // A listing of many plans shows each intent's opening: pasted prompts listed whole
        // made this one answer over what an MCP answer may take (tester 8 F19).
        let mut latest: Vec<DriftRow> = drift.plans.into_iter().take(3).collect();
        for row in &mut latest {
            listed(&mut row.intent);
        }
        listed(&mut summary.intent);
        groups.push(PlanGroup {
            decompositions,
            step_pairs: store.step_pairs(&f, 5)?,
            drift: drift.counts,
            outcomes,
            latest,
            sources: store.source_counts(&f)?,
            gaps: store.gaps(&f)?.groups.into_iter().next(),
            summary,
        });
    }
    Ok(MyPlansReport {
        caller: caller.map(str::to_string),
        groups_note: store.groups_note()?,
        total_groups: store.count_groups(&filter)?,
        total_plans: store.count_plans(&filter)?,
        drift_window_secs: store.drift_window(),
        groups,
        step_pairs: store.step_pairs(&filter, 10)?,
        sources: store.source_counts(&filter)?,
        left_out: store.left_out_note(),
    })
}

#[derive(Debug, Clone, PartialEq)]
pub enum HistoryQuery {
    /// The plans list's first page and total, and the callers and models the filters cycle
    /// through. The groups come separately: regrouping a filtered million plans is the slow
    /// part, and the plans should not wait for it.
    Open {
        filter: PlanFilter,
    },
    Plans {
        filter: PlanFilter,
        offset: u64,
    },
    Groups {
        filter: PlanFilter,
        offset: u64,
    },
    Detail {
        id: String,
    },
    Models {
        filter: PlanFilter,
    },
    /// Gap signals counted by group and tool (`history --gaps`).
    Gaps {
        filter: PlanFilter,
    },
    /// Drift classes and each model's outcomes, week by week, for the charts.
    Trends {
        filter: PlanFilter,
    },
}

/// A page of a list: rows `offset..offset + rows.len()` of `total`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub offset: u64,
    pub total: u64,
    pub rows: Vec<T>,
    /// [`HistoryStore::left_out_note`]: rows of this page left out for a damaged column.
    pub left_out: Option<String>,
}

impl<T> Page<T> {
    pub fn get(&self, index: u64) -> Option<&T> {
        index
            .checked_sub(self.offset)
            .and_then(|i| self.rows.get(i as usize))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum HistoryAnswer {
    Opened {
        plans: Page<PlanRow>,
        callers: Vec<String>,
        models: Vec<String>,
    },
    Plans(Page<PlanRow>),
    /// A page of groups, and whether they are by an older build's word rules
    /// ([`HistoryStore::grouped_by_older_rules`]).
    Groups {
        page: Page<GroupSummary>,
        older_rules: bool,
    },
    Detail(Option<Box<PlanDetail>>),
    Models(Vec<ModelRow>),
    /// The gap signals, and the store's note about its groups ([`GapsReport`]).
    Gaps(GapsReport),
    Trends(Trends),
}

/// Run one query against the store at `path` on its own connection (WAL lets readers run
/// beside a writer). With the answer, whether this query's open regrouped the store
/// ([`HistoryStore::regrouped_at_open`]): groups read beside it may be the old ones.
pub fn run_query(
    path: &Path,
    budgets: &BudgetTable,
    query: &HistoryQuery,
) -> anyhow::Result<(HistoryAnswer, bool)> {
    let store = HistoryStore::open(path)?;
    let answer = answer_query(&store, budgets, query)?;
    Ok((answer, store.regrouped_at_open()))
}

fn answer_query(
    store: &HistoryStore,
    budgets: &BudgetTable,
    query: &HistoryQuery,
) -> anyhow::Result<HistoryAnswer> {
    let plans_page = |filter: &PlanFilter, offset: u64| -> anyhow::Result<Page<PlanRow>> {
        store.forget_left_out();
        let (total, rows) = store.plans_page(filter, offset, PAGE)?;
        Ok(Page {
            offset,
            total,
            rows,
            left_out: store.left_out_note(),
        })
    };
    let groups_page = |filter: &PlanFilter, offset: u64| -> anyhow::Result<Page<GroupSummary>> {
        store.forget_left_out();
        Ok(Page {
            offset,
            total: store.count_groups(filter)?,
            rows: store.groups(filter, offset, PAGE)?,
            left_out: store.left_out_note(),
        })
    };
    Ok(match query {
        HistoryQuery::Open { filter } => {
            let (callers, models) = store.callers_and_models()?;
            HistoryAnswer::Opened {
                plans: plans_page(filter, 0)?,
                callers,
                models,
            }
        }
        HistoryQuery::Plans { filter, offset } => {
            HistoryAnswer::Plans(plans_page(filter, *offset)?)
        }
        // The groups and whether they are by older rules, as one state of the store.
        HistoryQuery::Groups { filter, offset } => store.in_one_read(|store| {
            Ok(HistoryAnswer::Groups {
                page: groups_page(filter, *offset)?,
                older_rules: store.grouped_by_older_rules()?,
            })
        })?,
        HistoryQuery::Detail { id } => HistoryAnswer::Detail(store.plan(id)?.map(Box::new)),
        HistoryQuery::Models { filter } => {
            HistoryAnswer::Models(model_rows(store, filter, budgets)?)
        }
        HistoryQuery::Gaps { filter } => HistoryAnswer::Gaps(gaps_report(store, filter, u64::MAX)?),
        HistoryQuery::Trends { filter } => {
            HistoryAnswer::Trends(store.trends(filter, crate::store::now_secs())?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::history::HISTORY_FILE;

    /// A plan row damaged by hand hides no group from `my-plans` (the MCP resource) nor a
    /// model from `models`: each says which plans it left out, in its own `left_out`, and a
    /// store kept open across them (the MCP server's in-memory one) says in each only what
    /// that answer left out.
    #[test]
    fn my_plans_and_models_say_what_they_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HISTORY_FILE);
        let mut store = HistoryStore::open(&path).unwrap();
        let pipelines = ["builtin.page-digest".to_string()].into_iter().collect();
        store
            .seed_if_new(
                crate::sample::SAMPLE_PLANS,
                crate::sample::SAMPLE_EXECUTIONS,
                &pipelines,
            )
            .unwrap();
        let clean = my_plans(&store, None).unwrap();
        assert_eq!(clean.left_out, None);
        // A plan the answer lists: its first group's latest.
        let id = clean.groups[0].latest[0].id.clone();
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute("UPDATE plans SET at = 'yesterday' WHERE id = ?1", [&id])
            .unwrap();
        let mine = my_plans(&store, None).unwrap();
        assert_eq!(mine.groups.len(), clean.groups.len());
        assert!(mine.groups[0].latest.iter().all(|p| p.id != id));
        let note = mine.left_out.unwrap();
        assert!(
            note.contains(&format!(
                "plan '{id}': its time (column at) is no whole number"
            )),
            "{note}"
        );
        db.execute(
            "UPDATE plans SET outcome = 'weird' WHERE id = 'pl-0010'",
            [],
        )
        .unwrap();
        let models = models_report(&store, &PlanFilter::default(), &Default::default()).unwrap();
        let note = models.left_out.unwrap();
        assert!(
            note.contains("(column outcome) 'weird' is not an outcome") && !note.contains(&id),
            "{note}"
        );
    }
}
