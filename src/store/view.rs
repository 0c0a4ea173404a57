//! The queries the History pane runs, as data in and data out, so the console can run them
//! on a worker thread and get the answer back as a message.

use serde::Serialize;
use std::path::Path;

use crate::core::budget::{BudgetTable, Tier};
use crate::core::history::{ModelOutcomes, suggest_tier};
use crate::store::history::{GroupSummary, HistoryStore, PlanDetail, PlanFilter, PlanRow};

/// Rows fetched per page: more than a screen, so scrolling rarely waits.
pub const PAGE: u64 = 200;

/// One model's outcomes with the tier they argue for, beside the tier it has now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRow {
    #[serde(flatten)]
    pub outcomes: ModelOutcomes,
    pub failed_rate: f64,
    pub followed_rate: f64,
    pub current_tier: Tier,
    pub suggested_tier: Option<Tier>,
    pub evidence: u64,
    pub why: String,
}

impl ModelRow {
    pub fn new(outcomes: ModelOutcomes, budgets: &BudgetTable) -> ModelRow {
        let s = suggest_tier(&outcomes);
        ModelRow {
            failed_rate: outcomes.failed_rate(),
            followed_rate: outcomes.followed_rate(),
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
}

/// A page of a list: rows `offset..offset + rows.len()` of `total`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub offset: u64,
    pub total: u64,
    pub rows: Vec<T>,
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
    Groups(Page<GroupSummary>),
    Detail(Option<Box<PlanDetail>>),
    Models(Vec<ModelRow>),
}

/// Run one query against the store at `path` on its own connection (WAL lets readers run
/// beside a writer).
pub fn run_query(
    path: &Path,
    budgets: &BudgetTable,
    query: &HistoryQuery,
) -> anyhow::Result<HistoryAnswer> {
    let store = HistoryStore::open(path)?;
    let plans_page = |filter: &PlanFilter, offset: u64| -> anyhow::Result<Page<PlanRow>> {
        Ok(Page {
            offset,
            total: store.count_plans(filter)?,
            rows: store.plans(filter, offset, PAGE)?,
        })
    };
    let groups_page = |filter: &PlanFilter, offset: u64| -> anyhow::Result<Page<GroupSummary>> {
        Ok(Page {
            offset,
            total: store.count_groups(filter)?,
            rows: store.groups(filter, offset, PAGE)?,
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
        HistoryQuery::Groups { filter, offset } => {
            HistoryAnswer::Groups(groups_page(filter, *offset)?)
        }
        HistoryQuery::Detail { id } => HistoryAnswer::Detail(store.plan(id)?.map(Box::new)),
        HistoryQuery::Models { filter } => {
            HistoryAnswer::Models(model_rows(&store, filter, budgets)?)
        }
    })
}
