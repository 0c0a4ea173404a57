//! The preview: everything the stages before the model do with one prompt — planner,
//! ranking, context gate, compaction with the prompt's tokens subtracted, and the assembled
//! request. Shared by `ctxconsole preview` and the TUI's Prompt pane.

use serde::Serialize;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::core::assemble::{AssembledRequest, RequestInputs, assemble};
use crate::core::budget::{BudgetTable, Tier};
use crate::core::compact::{CutOrder, PreparedCatalog, TrimRecord};
use crate::core::gate::{
    Admission, Briefing, ContextBudget, EXACT_COUNT_MAX_BYTES, admit, briefing, detect_kind,
};
use crate::core::planner::{ContextPlan, Planner};
use crate::core::prompt::{AllowanceBreakdown, allowance_from_counts, system_prompt};
use crate::core::rank::{
    Confidence, Explanation, HistoryPrior, RankIndex, Ranking, should_escalate,
};
use crate::core::tokens;
use crate::store::cache::{OutputCache, cache_ref};
use crate::workspace::effective_row;

/// Most of a huge paste the planner and ranker read: a classifier needs the opening, not
/// 50 MB of it.
pub const CLASSIFY_MAX_BYTES: usize = 16 * 1024;
/// How many ranked entries a preview explains.
pub const TOP_EXPLAINED: usize = 10;

/// The parts of a workspace a preview reads; cheap to clone into a worker thread.
#[derive(Clone)]
pub struct PreviewContext {
    pub budgets: Arc<BudgetTable>,
    pub catalog: Arc<PreparedCatalog>,
    pub index: Arc<RankIndex>,
    pub planner: Arc<Planner>,
    /// Where the output cache lives; `None` computes the ref without storing.
    pub cache_dir: Option<PathBuf>,
    /// Past plans for similar intents, from the history store, lifting the tools that
    /// worked and sinking the ones that were worked around.
    pub prior: Option<Arc<HistoryPrior>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptSize {
    pub bytes: usize,
    pub lines: usize,
    pub tokens: usize,
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingView {
    pub terms: Vec<String>,
    pub confidence: Confidence,
    /// Would the two-pass filter escalate for this row?
    pub escalate: bool,
    pub top: Vec<Explanation>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateView {
    pub admission: Admission,
    pub budget: ContextBudget,
    /// Tokens the prompt takes once admitted (the briefing's, for a briefing).
    pub admitted_tokens: usize,
    pub briefing: Option<Briefing>,
    /// Whether the full content is in the output cache (false when no cache was given).
    pub cached: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionSummary {
    pub allowance: AllowanceBreakdown,
    pub trim: TrimRecord,
    /// Entries kept, in catalog order.
    pub kept: Vec<String>,
}

/// Everything one preview shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preview {
    pub model: String,
    pub row_id: String,
    pub tier: Tier,
    pub tier_overridden: bool,
    pub tokenizer: &'static str,
    pub prompt: PromptSize,
    pub planner: ContextPlan,
    pub ranking: RankingView,
    pub gate: GateView,
    pub compaction: CompactionSummary,
    pub request: AssembledRequest,
}

pub use crate::core::text::opening;

/// Count a prompt: exactly when it is small enough to matter, estimated (and labelled so)
/// beyond [`EXACT_COUNT_MAX_BYTES`].
pub fn prompt_size(tokenizer: crate::core::budget::Tokenizer, text: &str) -> PromptSize {
    let lines = text.lines().count();
    if text.len() > EXACT_COUNT_MAX_BYTES {
        return PromptSize {
            bytes: text.len(),
            lines,
            tokens: tokens::estimate(text.len()),
            exact: false,
        };
    }
    let c = tokens::count(tokenizer, text);
    PromptSize {
        bytes: text.len(),
        lines,
        tokens: c.tokens,
        exact: c.exact,
    }
}

/// Rank the catalog for an intent and turn it into a cut order (lowest first).
pub fn cut_order_for(catalog: &PreparedCatalog, ranking: Option<&Ranking>) -> CutOrder {
    match ranking {
        Some(r) if r.order.first().is_some_and(|s| s.score > 0.0) => CutOrder::from_ranking(
            &r.indices(),
            catalog.len(),
            "ranked for the prompt: lowest relevance cut first",
        ),
        _ => CutOrder::from_end(catalog.guide()),
    }
}

pub fn preview(
    ctx: &PreviewContext,
    model: &str,
    tier_override: Option<Tier>,
    prompt: &str,
    defaults: &str,
) -> anyhow::Result<Preview> {
    preview_among(ctx, model, tier_override, prompt, defaults, None)
}

/// As [`preview`], the catalog further restricted to `only` (the two-pass filter's pass-1
/// pick), and compacted again against the same allowance.
pub fn preview_among(
    ctx: &PreviewContext,
    model: &str,
    tier_override: Option<Tier>,
    prompt: &str,
    defaults: &str,
    only: Option<&HashSet<String>>,
) -> anyhow::Result<Preview> {
    let effective = effective_row(&ctx.budgets, model, tier_override);
    let row = &effective.row;
    let tok = row.tokenizer;
    let size = prompt_size(tok, prompt);
    let classify = opening(prompt, CLASSIFY_MAX_BYTES);

    // The gate: what the prompt costs once everything fixed is counted.
    let system_tokens = tokens::count(tok, system_prompt(row.prompt_variant)).tokens;
    let defaults_tokens = tokens::count(tok, defaults).tokens;
    let fixed = allowance_from_counts(row, system_tokens, defaults_tokens, 0);
    let used = fixed.system_prompt_tokens + fixed.defaults_tokens + fixed.framing_tokens;
    let budget = ContextBudget::new(row.input_tokens, used);
    let admission = admit(&budget, size.tokens);
    let (brief, cached) = if admission == Admission::Briefing {
        let kind = detect_kind(None, opening(prompt, 4 * 1024 * 1024));
        let (reference, cached) = match &ctx.cache_dir {
            Some(dir) => {
                let mut cache = OutputCache::open_in(dir)?;
                (cache.store(prompt)?.cache_ref, true)
            }
            None => (cache_ref(prompt.as_bytes()), false),
        };
        (Some(briefing(prompt, kind, &reference, None)), cached)
    } else {
        (None, false)
    };
    let admitted_tokens = match &brief {
        Some(b) => tokens::count(tok, &b.text).tokens,
        None => size.tokens,
    };

    // Planner and ranking read the opening of the prompt.
    let names: Vec<&str> = ctx.catalog.guide().entry_names().map(|(n, _)| n).collect();
    let plan = ctx.planner.plan(classify, &names);
    let ranking = ctx.index.rank(classify, ctx.prior.as_deref());
    let top = ranking
        .order
        .iter()
        .take(TOP_EXPLAINED)
        .filter(|s| s.score > 0.0)
        .map(|s| s.index)
        .collect::<Vec<_>>();
    let top = ctx.index.explain_top(&ranking, &top, ctx.prior.as_deref());
    let ranking_view = RankingView {
        terms: ranking.terms.clone(),
        confidence: ranking.confidence,
        escalate: should_escalate(row, &ranking.confidence),
        top,
    };

    // Compaction: the planner's allowlist, cut by ranking, into what the prompt leaves.
    let hint_tokens = plan
        .hint
        .as_deref()
        .map_or(0, |h| tokens::count(tok, h).tokens);
    let allowance = allowance_from_counts(
        row,
        system_tokens,
        defaults_tokens,
        admitted_tokens + hint_tokens,
    );
    let allowed: Vec<usize> = (0..ctx.catalog.len())
        .filter(|&i| {
            let name = ctx.catalog.entry_name(i);
            plan.keeps(name) && only.is_none_or(|o| o.contains(name))
        })
        .collect();
    let order = cut_order_for(&ctx.catalog, Some(&ranking));
    let compacted = ctx
        .catalog
        .compact_among(allowance.allowance(), tok, &order, Some(&allowed));
    let kept = compacted
        .kept
        .iter()
        .map(|&i| ctx.catalog.entry_name(i).to_string())
        .collect();

    let (intent, context) = match &brief {
        Some(b) => (
            "(see the briefing of the pasted content below)",
            Some(b.text.as_str()),
        ),
        None => (prompt, None),
    };
    let request = assemble(&RequestInputs {
        model,
        row,
        catalog: &compacted.text,
        defaults,
        hint: plan.hint.as_deref(),
        intent,
        context,
    });
    Ok(Preview {
        model: model.to_string(),
        row_id: row.id.clone(),
        tier: row.tier,
        tier_overridden: tier_override.is_some(),
        tokenizer: row.tokenizer.name(),
        prompt: size,
        planner: plan,
        ranking: ranking_view,
        gate: GateView {
            admission,
            budget,
            admitted_tokens,
            briefing: brief,
            cached,
        },
        compaction: CompactionSummary {
            allowance,
            trim: compacted.trim,
            kept,
        },
        request,
    })
}
