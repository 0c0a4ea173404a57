//! The History pane's state and how it changes: two paged lists (groups, plans), filters,
//! the selected plan in full, per-model outcomes. Pure: every query goes out as an effect
//! and comes back as `Action::HistoryAnswered`.

use std::sync::Arc;

use crate::core::gap::GapReport;
use crate::core::history::{Drift, Outcome, PlanSource};
use crate::core::trend::Trends;
use crate::store::history::{GroupSummary, PlanDetail, PlanFilter, PlanRow};
use crate::store::view::{HistoryAnswer, HistoryQuery, ModelRow, PAGE, Page};
use crate::tui::action::Action;
use crate::tui::panes::history::replay_state::{ReplayRequest, ReplayView};
use crate::tui::panes::scroll::{Extent, scrolled};
use crate::tui::request_id::take;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistoryList {
    Groups,
    #[default]
    Plans,
}

/// Which answer a request is waiting for; a newer request of the same kind replaces it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pending {
    pub open: Option<u64>,
    pub plans: Option<u64>,
    pub groups: Option<u64>,
    pub detail: Option<u64>,
    pub models: Option<u64>,
    pub gaps: Option<u64>,
    pub trends: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct HistoryState {
    /// Why the store could not be opened or queried, if it could not.
    pub error: Option<String>,
    /// Which query's answer [`Self::error`] was (an index of [`Pending`]'s kinds): only
    /// that query answering again clears it.
    error_of: Option<usize>,
    /// While the store is being opened at start: what the pane says (and what the open
    /// waits for, once said). Nothing is queried meanwhile.
    pub opening: Option<String>,
    pub filter: PlanFilter,
    /// The intent of the group the plans are narrowed to.
    pub group_label: Option<String>,
    pub callers: Vec<String>,
    pub models: Vec<String>,
    pub plans: Option<Page<PlanRow>>,
    pub plan_selected: u64,
    pub groups: Option<Page<GroupSummary>>,
    /// The groups are by an older build's word rules (the store is read-only, or another
    /// writer held it when it was opened): the Groups list says so in its title.
    pub groups_by_older_rules: bool,
    /// A query's open regrouped the store while the groups' answer was on its way: that
    /// answer, if by the older rules, was read before, and is asked for again.
    regrouped_meanwhile: bool,
    /// The gaps' groups are by an older build's word rules (as [`Self::groups_by_older_rules`]):
    /// the Gaps view says so in its title (review 45 L6).
    pub gaps_by_older_rules: bool,
    pub group_selected: u64,
    pub detail: Option<Arc<PlanDetail>>,
    pub model_rows: Vec<ModelRow>,
    /// Drift per week and each model's ok rate per week, for the charts.
    pub trends: Option<Arc<Trends>>,
    pub list: HistoryList,
    /// The selected plan fills the pane.
    pub expanded: bool,
    /// The first row on screen of the plan open in full.
    pub detail_scroll: usize,
    pub pending: Pending,
    pub loaded: bool,
    /// A replay being picked, running, or its result beside the plan.
    pub replay: Option<ReplayView>,
    /// The Gaps view (plans against their baselines) is shown in place of the models.
    pub show_gaps: bool,
    /// The gap signals counted for the current filters, once asked for.
    pub gaps: Option<GapReport>,
    /// A plan opened by id (from a send result), shown in full whatever is selected.
    pub pinned: Option<String>,
    /// The intent search being typed (`/`); applied to `filter.text` by Enter.
    pub search: String,
    /// Whether it is being typed now (the pane's title shows it).
    pub searching: bool,
    /// The year by the front end's clock (this module reads none): in the narrow Plans
    /// list a plan of another year shows its year. `None`: every plan shows it.
    pub this_year: Option<i32>,
    /// The console stored a plan since the lists were read (a send, a replay, a store
    /// again): they are read again when the pane is next shown ([`Self::ensure_loaded`]).
    pub stale: bool,
    /// The plan selected before a refresh, looked for in the page that refresh fetches
    /// next (it had moved off the first page).
    pub keep_plan: Option<String>,
}

/// What a key did to the History search being typed.
pub enum SearchKey {
    /// Typed or edited; still typing.
    Typing,
    /// Applied (Enter) or cleared (Esc): typing ends; the queries to run.
    Done(Vec<Query>),
}

/// A query to run, tagged with the request id its answer will carry.
pub type Query = (u64, HistoryQuery);

/// Cycle `None → first → … → last → None`.
fn cycle<T: Clone + PartialEq>(current: &Option<T>, all: &[T]) -> Option<T> {
    match current {
        None => all.first().cloned(),
        Some(c) => {
            let i = all.iter().position(|x| x == c);
            i.and_then(|i| all.get(i + 1)).cloned()
        }
    }
}

impl HistoryState {
    pub fn selected_plan(&self) -> Option<&PlanRow> {
        self.plans.as_ref()?.get(self.plan_selected)
    }

    pub fn selected_group(&self) -> Option<&GroupSummary> {
        self.groups.as_ref()?.get(self.group_selected)
    }

    /// The filter without the group: the group list always shows every group.
    fn groups_filter(&self) -> PlanFilter {
        PlanFilter {
            shape: None,
            ..self.filter.clone()
        }
    }

    /// Open the pane's data once, and again whenever the console has stored a plan since
    /// it was read ([`Self::refresh`]).
    pub fn ensure_loaded(&mut self, next: &mut u64) -> Vec<Query> {
        let opened = self.loaded || self.pending.open.is_some();
        if self.stale && opened {
            return self.refresh(next);
        }
        // While the store is still being opened (tester 22 F3) there is nothing to read.
        if opened || self.error.is_some() || self.opening.is_some() {
            return Vec::new();
        }
        self.reload(next)
    }

    /// The console stored a plan (tester 22 F2: the lists, counts and charts stayed as first
    /// read, so a plan just sent was missing from them until a filter key): everything again
    /// for the same filters. What is on screen stays until the answers come; the selected
    /// plan and group stay selected where they still are ([`Self::answered`] finds them).
    pub fn refresh(&mut self, next: &mut u64) -> Vec<Query> {
        self.stale = false;
        let mut queries = vec![self.groups_query(next, page_start(self.group_selected))];
        queries.extend(self.list_queries(next));
        // The plan on screen again too: it may have a new replay.
        let shown = self
            .pinned
            .clone()
            .or_else(|| self.detail.as_ref().map(|d| d.record.id.clone()));
        if let Some(id) = shown {
            queries.extend(self.detail_query(id, next));
        }
        queries
    }

    /// Everything again, for the current filters.
    pub fn reload(&mut self, next: &mut u64) -> Vec<Query> {
        self.stale = false;
        self.keep_plan = None;
        self.group_selected = 0;
        self.groups = None;
        let mut queries = vec![self.groups_query(next, 0)];
        queries.extend(self.reload_plans(next));
        queries
    }

    /// The groups' page from `offset`, marked pending.
    fn groups_query(&mut self, next: &mut u64, offset: u64) -> Query {
        let groups = take(next);
        self.pending.groups = Some(groups);
        (
            groups,
            HistoryQuery::Groups {
                filter: self.groups_filter(),
                offset,
            },
        )
    }

    /// The plans list (and the models table) again; the groups stay as they are.
    fn reload_plans(&mut self, next: &mut u64) -> Vec<Query> {
        self.plan_selected = 0;
        self.plans = None;
        self.detail = None;
        // The old filter's outcomes would stand under the new one's title until counted.
        self.model_rows.clear();
        // The charts are of the old filter until the new answer comes: say so, not show them.
        self.trends = None;
        self.list_queries(next)
    }

    /// The plans list's queries — its first page, the models table, the charts and, when
    /// shown, the gaps — for the current filters, marked pending.
    fn list_queries(&mut self, next: &mut u64) -> Vec<Query> {
        let (open, models, trends) = (take(next), take(next), take(next));
        self.pending.open = Some(open);
        self.pending.plans = None;
        self.pending.models = Some(models);
        self.pending.trends = Some(trends);
        let filter = || self.filter.clone();
        let mut queries = vec![
            (open, HistoryQuery::Open { filter: filter() }),
            (models, HistoryQuery::Models { filter: filter() }),
            (trends, HistoryQuery::Trends { filter: filter() }),
        ];
        if self.show_gaps {
            queries.extend(self.gaps_query(next));
        } else {
            // Asked for again when the view opens: these filters are not the ones counted.
            self.gaps = None;
        }
        queries
    }

    /// The gap signals for the current filters.
    fn gaps_query(&mut self, next: &mut u64) -> Vec<Query> {
        let request = take(next);
        self.pending.gaps = Some(request);
        vec![(
            request,
            HistoryQuery::Gaps {
                filter: self.filter.clone(),
            },
        )]
    }

    /// `b`: the Gaps view in place of the models, or back; its counts are asked for when it
    /// opens without them.
    pub fn toggle_gaps(&mut self, next: &mut u64) -> Vec<Query> {
        self.show_gaps = !self.show_gaps;
        if self.show_gaps && self.gaps.is_none() && self.pending.gaps.is_none() {
            return self.gaps_query(next);
        }
        Vec::new()
    }

    /// Cycle the source filter: native → otel → litellm → sent → all.
    pub fn cycle_source(&mut self, next: &mut u64) -> Vec<Query> {
        let sources: Vec<String> = PlanSource::ALL
            .iter()
            .map(|s| s.as_str().to_string())
            .collect();
        self.filter.source = cycle(&self.filter.source, &sources);
        self.reload(next)
    }

    pub fn cycle_outcome(&mut self, next: &mut u64) -> Vec<Query> {
        self.filter.outcome = cycle(&self.filter.outcome, &Outcome::ALL);
        self.reload(next)
    }

    pub fn cycle_drift(&mut self, next: &mut u64) -> Vec<Query> {
        self.filter.drift = cycle(&self.filter.drift, &Drift::ALL);
        self.reload(next)
    }

    pub fn cycle_caller(&mut self, next: &mut u64) -> Vec<Query> {
        self.filter.caller = cycle(&self.filter.caller, &self.callers);
        self.reload(next)
    }

    pub fn cycle_model(&mut self, next: &mut u64) -> Vec<Query> {
        self.filter.model = cycle(&self.filter.model, &self.models);
        self.reload(next)
    }

    /// `/`: start typing the intent search, from the one applied.
    pub fn start_search(&mut self) {
        self.search = self.filter.text.clone().unwrap_or_default();
        self.searching = true;
    }

    /// A key while the intent search is typed: text edits it, Enter applies it (the lists
    /// again, for plans whose intent contains it), Esc clears it. Applied on Enter, not per
    /// key: on a big store each search reads every plan's intent.
    pub fn search_key(&mut self, action: &Action, next: &mut u64) -> Option<SearchKey> {
        // The store's search takes at most this many characters; more are not typed in.
        let room = crate::core::bounds::INTENT_SEARCH_CHARS
            .end()
            .saturating_sub(self.search.chars().count());
        match action {
            Action::Char(c) => {
                if room > 0 {
                    self.search.push(*c);
                }
            }
            Action::Paste(text) => self
                .search
                .extend(text.chars().filter(|c| !c.is_control()).take(room)),
            Action::Backspace => {
                self.search.pop();
            }
            Action::Confirm => {
                self.searching = false;
                let text = self.search.trim();
                self.filter.text = (!text.is_empty()).then(|| text.to_string());
                return Some(SearchKey::Done(self.reload(next)));
            }
            Action::Back => {
                self.searching = false;
                self.search.clear();
                if self.filter.text.take().is_none() {
                    return Some(SearchKey::Done(Vec::new()));
                }
                return Some(SearchKey::Done(self.reload(next)));
            }
            _ => return None,
        }
        Some(SearchKey::Typing)
    }

    pub fn clear_filters(&mut self, next: &mut u64) -> Vec<Query> {
        self.filter = PlanFilter::default();
        self.group_label = None;
        self.reload(next)
    }

    /// `r`: open the replay picker for the selected plan (not while one runs).
    pub fn open_replay(&mut self) {
        if self.replay.as_ref().is_some_and(|r| r.running.is_some()) {
            return;
        }
        let Some((id, model)) = self
            .detail
            .as_ref()
            .map(|d| (d.record.id.clone(), d.record.model.clone()))
            .or_else(|| {
                self.selected_plan()
                    .map(|p| (p.id.clone(), p.model.clone()))
            })
        else {
            return;
        };
        self.replay = Some(ReplayView::pick(&id, &model, &self.models));
    }

    /// The picker, when it is open.
    pub fn picker(&mut self) -> Option<&mut ReplayView> {
        self.replay.as_mut().filter(|r| r.picking)
    }

    /// Enter in the picker.
    pub fn start_replay(&mut self, next: &mut u64) -> Option<ReplayRequest> {
        Some(self.picker()?.start(next))
    }

    /// Esc: close the picker (a running replay is cancelled by the caller), close a replay
    /// result, collapse the plan, then leave the group. Returns `None` when there was
    /// nothing to undo here.
    /// Open the plan `id` in full, wherever the lists are (the pane loads too, first time).
    pub fn open_plan(&mut self, id: &str, next: &mut u64) -> Vec<Query> {
        let mut queries = self.ensure_loaded(next);
        self.replay = None;
        self.pinned = Some(id.to_string());
        self.expanded = true;
        self.detail_scroll = 0;
        queries.extend(self.detail_query(id.to_string(), next));
        queries
    }

    pub fn back(&mut self, next: &mut u64) -> Option<Vec<Query>> {
        // A picker or a result closes; a running replay stays until its cancelled answer.
        if let Some(r) = &self.replay {
            if r.running.is_none() {
                self.replay = None;
            }
            return Some(Vec::new());
        }
        if self.expanded {
            self.expanded = false;
            self.detail_scroll = 0;
            // A plan opened by id gives the pane back to the selection — on that plan when
            // the loaded page holds it (tester 34 F14: esc landed on another plan).
            if let Some(id) = self.pinned.take() {
                if let Some(page) = &self.plans
                    && let Some(at) = page.rows.iter().position(|p| p.id == id)
                {
                    self.plan_selected = page.offset + at as u64;
                }
                return Some(self.request_detail(next));
            }
            return Some(Vec::new());
        }
        if self.filter.shape.is_some() {
            self.filter.shape = None;
            self.group_label = None;
            return Some(self.reload_plans(next));
        }
        None
    }

    /// Enter: a group narrows the plans to it; a plan opens in full.
    pub fn open(&mut self, next: &mut u64) -> Vec<Query> {
        match self.list {
            HistoryList::Groups => {
                let Some((shape, intent)) = self
                    .selected_group()
                    .map(|g| (g.shape.clone(), g.intent.clone()))
                else {
                    return Vec::new();
                };
                self.filter.shape = Some(shape);
                self.group_label = Some(intent);
                self.list = HistoryList::Plans;
                self.reload_plans(next)
            }
            HistoryList::Plans => {
                if self.selected_plan().is_some() {
                    self.expanded = !self.expanded;
                    self.detail_scroll = 0;
                }
                Vec::new()
            }
        }
    }

    pub fn switch_list(&mut self, to: HistoryList) {
        self.list = to;
    }

    /// Move the selection of the focused list to `to` (clamped); fetch the page it lands
    /// on when that page is not loaded, and the plan when a plan is selected.
    pub fn move_to(&mut self, to: u64, next: &mut u64) -> Vec<Query> {
        self.pinned = None;
        self.keep_plan = None;
        match self.list {
            HistoryList::Plans => {
                let Some(total) = self.plans.as_ref().map(|p| p.total) else {
                    return Vec::new();
                };
                self.plan_selected = to.min(total.saturating_sub(1));
                if self.selected_plan().is_none() && total > 0 {
                    let request = take(next);
                    self.pending.plans = Some(request);
                    return vec![(
                        request,
                        HistoryQuery::Plans {
                            filter: self.filter.clone(),
                            offset: page_start(self.plan_selected),
                        },
                    )];
                }
                self.request_detail(next)
            }
            HistoryList::Groups => {
                let Some(total) = self.groups.as_ref().map(|p| p.total) else {
                    return Vec::new();
                };
                self.group_selected = to.min(total.saturating_sub(1));
                if self.selected_group().is_none() && total > 0 {
                    let request = take(next);
                    self.pending.groups = Some(request);
                    return vec![(
                        request,
                        HistoryQuery::Groups {
                            filter: self.groups_filter(),
                            offset: page_start(self.group_selected),
                        },
                    )];
                }
                Vec::new()
            }
        }
    }

    /// A movement key while a plan is open in full: it scrolls the plan (`page` rows a
    /// page) within `extent`, its rows; the lists stay where they are.
    pub fn scroll_detail(&mut self, action: &Action, page: usize, extent: Extent) {
        if let Some(top) = scrolled(action.movement(), self.detail_scroll, page, extent) {
            self.detail_scroll = top;
        }
    }

    /// (selected, total) of the focused list.
    pub fn position(&self) -> (u64, u64) {
        match self.list {
            HistoryList::Plans => (
                self.plan_selected,
                self.plans.as_ref().map_or(0, |p| p.total),
            ),
            HistoryList::Groups => (
                self.group_selected,
                self.groups.as_ref().map_or(0, |p| p.total),
            ),
        }
    }

    fn request_detail(&mut self, next: &mut u64) -> Vec<Query> {
        if self.pinned.is_some() {
            return Vec::new();
        }
        let Some(id) = self.selected_plan().map(|p| p.id.clone()) else {
            return Vec::new();
        };
        if self.detail.as_ref().is_some_and(|d| d.record.id == id) {
            return Vec::new();
        }
        self.detail_query(id, next)
    }

    fn detail_query(&mut self, id: String, next: &mut u64) -> Vec<Query> {
        let request = take(next);
        self.pending.detail = Some(request);
        vec![(request, HistoryQuery::Detail { id })]
    }

    /// A query's open grouped the plans by today's word rules (tester 45 F3: the Groups
    /// pane, read beside it, kept the old groups and " · older word rules" until a filter
    /// key): groups shown by the older rules are asked for again, and groups on their way
    /// are asked for again if they come back by the older rules (read before the regroup).
    pub fn store_regrouped(&mut self, next: &mut u64) -> Vec<Query> {
        if self.pending.groups.is_some() {
            self.regrouped_meanwhile = true;
            return Vec::new();
        }
        if self.groups_by_older_rules && self.groups.is_some() {
            return vec![self.groups_query(next, page_start(self.group_selected))];
        }
        Vec::new()
    }

    /// An answer came back: keep it if it is the one awaited.
    pub fn answered(
        &mut self,
        request: u64,
        answer: Result<Arc<HistoryAnswer>, String>,
        next: &mut u64,
    ) -> Vec<Query> {
        let p = &mut self.pending;
        let slots = [
            &mut p.open,
            &mut p.plans,
            &mut p.groups,
            &mut p.detail,
            &mut p.models,
            &mut p.gaps,
            &mut p.trends,
        ];
        let Some(kind) = slots.iter().position(|s| **s == Some(request)) else {
            return Vec::new();
        };
        *slots[kind] = None;
        // The plans list is asked for whole (`open`) or a page at a time (`plans`).
        let kind = kind.max(1);
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.error = Some(e);
                self.error_of = Some(kind);
                return Vec::new();
            }
        };
        // Only the same query answering again clears its error: another query's answer
        // would leave the failed list "loading…" for ever with no error said (tester 45 F1).
        if self.error_of.is_none_or(|k| k == kind) {
            self.error = None;
            self.error_of = None;
        }
        match answer.as_ref() {
            HistoryAnswer::Opened {
                plans,
                callers,
                models,
            } => {
                // A refresh: the plan selected before, where it is now.
                let was = self.selected_plan().map(|p| p.id.clone());
                let grown = plans
                    .total
                    .saturating_sub(self.plans.as_ref().map_or(0, |p| p.total));
                self.plans = Some(plans.clone());
                self.callers = callers.clone();
                self.models = models.clone();
                self.loaded = true;
                if let Some(id) = was
                    && let Some(q) = self.keep_selection(id, grown, next)
                {
                    return q;
                }
                self.request_detail(next)
            }
            HistoryAnswer::Plans(page) => {
                self.plans = Some(page.clone());
                if let Some(id) = self.keep_plan.take()
                    && let Some(i) = page.rows.iter().position(|p| p.id == id)
                {
                    self.plan_selected = page.offset + i as u64;
                }
                self.request_detail(next)
            }
            HistoryAnswer::Groups { page, older_rules } => {
                let again = std::mem::take(&mut self.regrouped_meanwhile) && *older_rules;
                // A refresh: the group selected before stays selected where it still is.
                let was = self.selected_group().map(|g| g.shape.clone());
                self.groups = Some(page.clone());
                self.groups_by_older_rules = *older_rules;
                if let Some(shape) = was {
                    match page.rows.iter().position(|g| g.shape == shape) {
                        Some(i) => self.group_selected = page.offset + i as u64,
                        None => {
                            self.group_selected =
                                self.group_selected.min(page.total.saturating_sub(1))
                        }
                    }
                }
                if again {
                    return vec![self.groups_query(next, page_start(self.group_selected))];
                }
                Vec::new()
            }
            HistoryAnswer::Detail(d) => {
                self.detail = d.as_deref().cloned().map(Arc::new);
                Vec::new()
            }
            HistoryAnswer::Models(rows) => {
                self.model_rows = rows.clone();
                Vec::new()
            }
            HistoryAnswer::Gaps(gaps) => {
                self.gaps = Some(gaps.report.clone());
                self.gaps_by_older_rules = gaps.groups_note.is_some();
                Vec::new()
            }
            HistoryAnswer::Trends(t) => {
                self.trends = Some(Arc::new(t.clone()));
                Vec::new()
            }
        }
    }

    /// After a refresh's first page came: select the plan `id` selected before. It is looked
    /// for on that page; else it is where it was, moved down by the `grown` plans stored
    /// since (the newest come first), and when that is past the page, the page there is
    /// fetched and looked in. Returns the page's query, if one is needed.
    fn keep_selection(&mut self, id: String, grown: u64, next: &mut u64) -> Option<Vec<Query>> {
        let page = self.plans.as_ref()?;
        let total = page.total;
        if let Some(i) = page.rows.iter().position(|p| p.id == id) {
            self.plan_selected = page.offset + i as u64;
            return None;
        }
        self.plan_selected = (self.plan_selected + grown).min(total.saturating_sub(1));
        if self.selected_plan().is_some() || total == 0 {
            return None;
        }
        self.keep_plan = Some(id);
        let request = take(next);
        self.pending.plans = Some(request);
        Some(vec![(
            request,
            HistoryQuery::Plans {
                filter: self.filter.clone(),
                offset: page_start(self.plan_selected),
            },
        )])
    }

    /// "outcome=failed drift=diverged …" for the pane's title.
    pub fn filter_label(&self) -> String {
        self.filter_parts().join(" ")
    }

    /// Each filter set, as `name=value`.
    pub fn filter_parts(&self) -> Vec<String> {
        let f = &self.filter;
        let mut parts = Vec::new();
        if let Some(o) = f.outcome {
            parts.push(format!("outcome={o}"));
        }
        if let Some(d) = f.drift {
            parts.push(format!("drift={d}"));
        }
        if let Some(c) = &f.caller {
            parts.push(format!("caller={c}"));
        }
        if let Some(m) = &f.model {
            // Beside a model that prints alike (`keyed/café` composed and not), spelled out
            // as the lists show it (tester 9 T9-5).
            let alike = crate::core::text::printed_alike(m);
            let twin = self
                .models
                .iter()
                .any(|o| o != m && crate::core::text::printed_alike(o) == alike);
            if twin {
                parts.push(format!("model={}", crate::core::text::spelled_out(m)));
            } else {
                parts.push(format!("model={m}"));
            }
        }
        if let Some(s) = &f.source {
            parts.push(format!("source={s}"));
        }
        if let Some(g) = &self.group_label {
            parts.push(format!("group=\"{}\"", crate::tui::panes::clip(g, 30)));
        }
        if let Some(t) = &f.text {
            parts.push(format!("intent~\"{}\"", crate::tui::panes::clip(t, 30)));
        }
        parts
    }
}

fn page_start(index: u64) -> u64 {
    index - index % PAGE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::history::PlanRecord;

    fn row(i: u64) -> PlanRow {
        PlanRow {
            id: format!("p{i}"),
            at: 1000 - i as i64,
            caller: "c".into(),
            model: "m".into(),
            intent: "x".into(),
            complexity: "single-action".into(),
            outcome: Outcome::Ok,
            drift: Drift::Followed,
            failure_class: None,
            steps: 1,
            replay_of: None,
            source: "native".into(),
            arm: None,
        }
    }

    fn opened(h: &mut HistoryState, next: &mut u64, total: u64) -> Vec<Query> {
        let qs = h.ensure_loaded(next);
        let (open, _) = qs
            .iter()
            .find(|(_, q)| matches!(q, HistoryQuery::Open { .. }))
            .cloned()
            .unwrap();
        h.answered(
            open,
            Ok(Arc::new(HistoryAnswer::Opened {
                plans: Page {
                    offset: 0,
                    total,
                    rows: (0..PAGE.min(total)).map(row).collect(),
                    left_out: None,
                },
                callers: vec!["a".into(), "b".into()],
                models: vec![],
            })),
            next,
        )
    }

    /// Tester 9 T9-5: the model filter read `model=keyed/café` for either of two models
    /// that print alike; it names the one chosen as the lists spell it.
    #[test]
    fn a_model_filter_beside_a_model_that_prints_alike_is_spelled_out() {
        let mut h = HistoryState {
            models: vec![
                "keyed/caf\u{e9}".into(),
                "keyed/cafe\u{301}".into(),
                "m".into(),
            ],
            ..HistoryState::default()
        };
        h.filter.model = Some("keyed/cafe\u{301}".into());
        assert_eq!(h.filter_parts(), ["model=keyed/cafe\\u{301}"]);
        h.filter.model = Some("m".into());
        assert_eq!(h.filter_parts(), ["model=m"]);
    }

    #[test]
    fn opening_asks_once_then_details_the_first_plan() {
        let mut h = HistoryState::default();
        let mut next = 1;
        let after = opened(&mut h, &mut next, 500);
        assert!(matches!(&after[..], [(_, HistoryQuery::Detail { id })] if id == "p0"));
        assert!(h.ensure_loaded(&mut next).is_empty());
    }

    #[test]
    fn moving_past_the_page_fetches_the_page_it_lands_on() {
        let mut h = HistoryState::default();
        let mut next = 1;
        opened(&mut h, &mut next, 500);
        let q = h.move_to(450, &mut next);
        assert!(matches!(
            &q[..],
            [(_, HistoryQuery::Plans { offset: 400, .. })]
        ));
        assert_eq!(h.plan_selected, 450);
        // Beyond the end clamps.
        h.move_to(10_000, &mut next);
        assert_eq!(h.plan_selected, 499);
    }

    fn detail_of(r: &PlanRow, replays: Vec<PlanRow>) -> PlanDetail {
        PlanDetail {
            record: PlanRecord {
                id: r.id.clone(),
                at: r.at,
                at_nanos: 0,
                caller: r.caller.clone(),
                model: r.model.clone(),
                intent: r.intent.clone(),
                steps: vec![],
                outcome: r.outcome,
                failure_class: None,
                finish_reason: None,
                raw_response: None,
                trim_record: None,
                duration_ms: None,
                replay_of: None,
                answer: None,
                arm: None,
                compare_group: None,
                source: Default::default(),
                expert_baseline: None,
            },
            complexity: r.complexity.clone(),
            intent_sha: String::new(),
            shape: String::new(),
            drift: r.drift,
            executed: vec![],
            executed_ok: vec![],
            replays,
            arms: vec![],
            gap_signal: None,
        }
    }

    fn groups_answer(total: u64, older_rules: bool) -> Result<Arc<HistoryAnswer>, String> {
        Ok(Arc::new(HistoryAnswer::Groups {
            page: Page {
                offset: 0,
                total,
                rows: vec![],
                left_out: None,
            },
            older_rules,
        }))
    }

    /// Tester 45 F3: the TUI's queries open the store each; one of them regrouped it, and
    /// the Groups pane, read before, kept the old groups and its older-rules title until a
    /// filter key. The groups are asked for again: at once when shown by the older rules,
    /// or when they come back so after the regroup was said.
    #[test]
    fn groups_read_before_a_regroup_are_asked_for_again() {
        let mut h = HistoryState::default();
        let mut next = 1;
        let groups_of = |qs: &[Query]| {
            qs.iter()
                .find(|(_, q)| matches!(q, HistoryQuery::Groups { .. }))
                .map(|(r, _)| *r)
        };
        let qs = h.ensure_loaded(&mut next);
        let groups = groups_of(&qs).unwrap();
        // The groups came first, by the older rules; then another query regrouped.
        h.answered(groups, groups_answer(10, true), &mut next);
        assert!(h.groups_by_older_rules);
        let again = h.store_regrouped(&mut next);
        let groups = groups_of(&again).expect("the groups again");
        h.answered(groups, groups_answer(107, false), &mut next);
        assert!(!h.groups_by_older_rules);
        assert_eq!(h.groups.as_ref().map(|g| g.total), Some(107));
        // Shown by today's rules: a regroup said later asks nothing.
        assert!(h.store_regrouped(&mut next).is_empty());
        // The regroup was said while the groups were on their way, and they come back by
        // the older rules: asked for again, once.
        let qs = h.reload(&mut next);
        let groups = groups_of(&qs).unwrap();
        assert!(h.store_regrouped(&mut next).is_empty());
        let again = h.answered(groups, groups_answer(10, true), &mut next);
        let groups = groups_of(&again).expect("the groups again");
        let after = h.answered(groups, groups_answer(10, true), &mut next);
        assert!(groups_of(&after).is_none(), "asked once, not for ever");
    }

    /// Tester 45 F1: the plans query failed (an intent that is no UTF-8) and the groups
    /// answered after it; the groups' answer cleared the error, so the Plans list said
    /// "loading…" for ever and nothing said why. The error stays until its own query
    /// answers again.
    #[test]
    fn a_failed_query_stays_said_when_another_answers_after_it() {
        let mut h = HistoryState::default();
        let mut next = 1;
        let qs = h.ensure_loaded(&mut next);
        let find = |want: fn(&HistoryQuery) -> bool| {
            qs.iter().find(|(_, q)| want(q)).map(|(r, _)| *r).unwrap()
        };
        let open = find(|q| matches!(q, HistoryQuery::Open { .. }));
        let groups = find(|q| matches!(q, HistoryQuery::Groups { .. }));
        h.answered(open, Err("listing plans: bad".into()), &mut next);
        h.answered(
            groups,
            Ok(Arc::new(HistoryAnswer::Groups {
                page: Page {
                    offset: 0,
                    total: 0,
                    rows: vec![],
                    left_out: None,
                },
                older_rules: false,
            })),
            &mut next,
        );
        assert_eq!(h.error.as_deref(), Some("listing plans: bad"));
        // Asked again (a filter key) and answered: the error goes.
        let qs = h.reload(&mut next);
        let (open, _) = qs
            .iter()
            .find(|(_, q)| matches!(q, HistoryQuery::Open { .. }))
            .unwrap();
        h.answered(
            *open,
            Ok(Arc::new(HistoryAnswer::Opened {
                plans: Page {
                    offset: 0,
                    total: 0,
                    rows: vec![],
                    left_out: None,
                },
                callers: vec![],
                models: vec![],
            })),
            &mut next,
        );
        assert_eq!(h.error, None);
    }

    #[test]
    fn a_reloaded_detail_stays_on_screen_until_the_new_one_comes() {
        let mut h = HistoryState::default();
        let mut next = 1;
        let after = opened(&mut h, &mut next, 3);
        let (first, _) = after[0];
        h.answered(
            first,
            Ok(Arc::new(HistoryAnswer::Detail(Some(Box::new(detail_of(
                &row(0),
                vec![],
            )))))),
            &mut next,
        );
        let q = h.refresh(&mut next);
        let [(again, HistoryQuery::Detail { id })] = &q[q.len() - 1..] else {
            panic!("{q:?}");
        };
        assert_eq!(id, "p0");
        assert_eq!(h.detail.as_ref().map(|d| d.record.id.as_str()), Some("p0"));
        let mut replay = row(1);
        replay.id = "p0.r1".into();
        h.answered(
            *again,
            Ok(Arc::new(HistoryAnswer::Detail(Some(Box::new(detail_of(
                &row(0),
                vec![replay],
            )))))),
            &mut next,
        );
        assert_eq!(h.detail.as_ref().map(|d| d.replays.len()), Some(1));
    }

    /// Tester 22 F2: after the console stored plans, the lists are read again for the same
    /// filters, what is on screen stays until the answers come, and the plan selected stays
    /// selected where it now is: on the first page, or further down by the plans stored.
    #[test]
    fn a_refresh_keeps_the_filters_and_the_selected_plan_where_it_now_is() {
        let mut h = HistoryState::default();
        let mut next = 1;
        opened(&mut h, &mut next, 500);
        h.cycle_caller(&mut next);
        let (open, _) = h
            .reload(&mut next)
            .into_iter()
            .find(|(_, q)| matches!(q, HistoryQuery::Open { .. }))
            .unwrap();
        let page = |offset: u64, total: u64, first: u64| Page {
            offset,
            total,
            rows: (first..first + PAGE).map(row).collect(),
            left_out: None,
        };
        let opened_with = |plans| {
            Ok(Arc::new(HistoryAnswer::Opened {
                plans,
                callers: vec!["a".into()],
                models: vec![],
            }))
        };
        h.answered(open, opened_with(page(0, 500, 0)), &mut next);
        h.move_to(3, &mut next);
        assert!(h.ensure_loaded(&mut next).is_empty(), "loaded, not stale");
        h.stale = true;
        let q = h.ensure_loaded(&mut next);
        assert!(!h.stale);
        let filters: Vec<&PlanFilter> = q
            .iter()
            .filter_map(|(_, q)| match q {
                HistoryQuery::Open { filter }
                | HistoryQuery::Models { filter }
                | HistoryQuery::Trends { filter } => Some(filter),
                _ => None,
            })
            .collect();
        assert_eq!(filters.len(), 3, "{q:?}");
        assert!(filters.iter().all(|f| f.caller.as_deref() == Some("a")));
        assert_eq!(
            h.plans.as_ref().map(|p| p.total),
            Some(500),
            "kept meanwhile"
        );
        // Two plans were stored: p3 is now the fifth row.
        let (open, _) = q
            .iter()
            .find(|(_, q)| matches!(q, HistoryQuery::Open { .. }))
            .unwrap();
        let mut rows = page(0, 502, 0);
        rows.rows.splice(0..0, [row(900), row(901)]);
        h.answered(*open, opened_with(rows), &mut next);
        assert_eq!(h.selected_plan().map(|p| p.id.as_str()), Some("p3"));
        assert_eq!(h.plan_selected, 5);
        assert_eq!(h.filter.caller.as_deref(), Some("a"));

        // Selected past the first page: moved down by as many, that page fetched and the
        // plan looked for in it.
        h.move_to(PAGE + 50, &mut next);
        h.answered(
            h.pending.plans.unwrap(),
            Ok(Arc::new(HistoryAnswer::Plans(page(PAGE, 502, PAGE - 2)))),
            &mut next,
        );
        let id = format!("p{}", PAGE + 48);
        assert_eq!(h.selected_plan().map(|p| p.id.as_str()), Some(id.as_str()));
        h.stale = true;
        let q = h.ensure_loaded(&mut next);
        let (open, _) = q
            .iter()
            .find(|(_, q)| matches!(q, HistoryQuery::Open { .. }))
            .unwrap();
        let q = h.answered(*open, opened_with(page(0, 503, 0)), &mut next);
        let [(fetch, HistoryQuery::Plans { offset, .. })] = &q[..] else {
            panic!("{q:?}")
        };
        assert_eq!(*offset, PAGE);
        assert_eq!(h.plan_selected, PAGE + 51);
        h.answered(
            *fetch,
            Ok(Arc::new(HistoryAnswer::Plans(page(PAGE, 503, PAGE - 3)))),
            &mut next,
        );
        assert_eq!(h.selected_plan().map(|p| p.id.as_str()), Some(id.as_str()));
    }

    #[test]
    fn filters_cycle_and_reload_and_stale_answers_are_dropped() {
        let mut h = HistoryState::default();
        let mut next = 1;
        opened(&mut h, &mut next, 10);
        let q = h.cycle_outcome(&mut next);
        assert_eq!(h.filter.outcome, Some(Outcome::Ok));
        assert!(q.iter().any(
            |(_, q)| matches!(q, HistoryQuery::Open { filter } if filter.outcome == Some(Outcome::Ok))
        ));
        assert!(
            q.iter()
                .any(|(_, q)| matches!(q, HistoryQuery::Groups { offset: 0, .. }))
        );
        h.cycle_outcome(&mut next);
        h.cycle_outcome(&mut next);
        assert_eq!(h.filter.outcome, Some(Outcome::Failed));
        h.cycle_outcome(&mut next);
        assert_eq!(h.filter.outcome, None);
        h.cycle_caller(&mut next);
        assert_eq!(h.filter.caller.as_deref(), Some("a"));
        assert!(h.filter_label().contains("caller=a"));
        // An answer to a superseded request changes nothing.
        let before = h.plans.clone();
        h.answered(
            1,
            Ok(Arc::new(HistoryAnswer::Plans(Page {
                offset: 0,
                total: 1,
                rows: vec![row(9)],
                left_out: None,
            }))),
            &mut next,
        );
        assert_eq!(h.plans, before);
        h.clear_filters(&mut next);
        assert!(h.filter.is_empty());
    }
}
