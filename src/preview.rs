//! The request service: [`core::request`](crate::core::request) builds the planned request
//! from the workspace's parts; this adds what is not pure — briefed parts written to the
//! output cache. `ctxconsole preview`, `ctxconsole compact --prompt`, the console's panes
//! and live replays all ask here, so they all see one request.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::core::budget::{BudgetTable, EffectiveRow, Tier, effective_row};
use crate::core::compact::PreparedCatalog;
use crate::core::compare::Arm;
use crate::core::past_steps::PastStepsIndex;
use crate::core::planner::Planner;
use crate::core::rank::{HistoryPrior, RankIndex};
use crate::core::request::{ATTACHMENT_WEIGHT, Kept, PlanInputs, plan_request};
use crate::embed::Semantic;
use crate::llm::redact::Secrets;
use crate::store::cache::OutputCache;

pub use crate::core::request::{
    Attachment, AttachmentView, CLASSIFY_MAX_BYTES, CompactionSummary, EntryFate, Fate, GateView,
    PlannedRequest, PromptSize, RankingView, TOP_EXPLAINED, cut_order_for, prompt_size,
};
pub use crate::core::text::opening;

/// The planned request, as the preview shows it.
pub type Preview = PlannedRequest;

/// The parts of a workspace a request reads; cheap to clone into a worker thread.
#[derive(Clone)]
pub struct PreviewContext {
    pub budgets: Arc<BudgetTable>,
    pub catalog: Arc<PreparedCatalog>,
    pub index: Arc<RankIndex>,
    pub planner: Arc<Planner>,
    /// Where the output cache lives; `None` computes the ref without storing.
    pub cache_dir: Option<PathBuf>,
    /// The most paste content the output cache holds (`[cache] max_bytes`).
    pub cache_max_bytes: u64,
    /// The configured provider keys, taken out of a briefed paste before the cache keeps it
    /// (the request sent keeps the paste as written).
    pub secrets: Arc<Secrets>,
    /// Past plans for similar intents, from the history store, lifting the tools that
    /// worked and sinking the ones that were worked around.
    pub prior: Option<Arc<HistoryPrior>>,
    /// Followed plans' steps by intent shape, from the history store: the source of the
    /// request's past-plans part (`None`: no store read, or `--no-prior`).
    pub past_steps: Option<Arc<PastStepsIndex>>,
    /// The semantic layer (`--semantic`, `[rank] semantic`): the catalog's entry vectors
    /// and the embedder for questions. `None`: lexical ranking only.
    pub semantic: Option<Arc<Semantic>>,
    /// The configured providers: each request planned says where `send` would send it
    /// ([`Route`](crate::core::request::Route)). `None`: no route is shown.
    pub providers: Option<Arc<crate::llm::provider::Providers>>,
}

/// What one request is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub effective: &'a EffectiveRow,
    pub instruction: &'a str,
    pub attachments: &'a [Attachment],
    pub defaults: &'a str,
    /// The two-pass filter's pick.
    pub only: Option<&'a HashSet<String>>,
    /// The request as previewed, or an A/B variant of it.
    pub arm: Arm,
}

impl<'a> Ask<'a> {
    /// An instruction alone, with no defaults block. One of white space only is no
    /// instruction: nothing is sent for it and nothing charged (tester 30 F7: `compact
    /// --prompt "   "` charged 5 tokens the request did not carry, where `preview` refused it).
    pub fn new(effective: &'a EffectiveRow, instruction: &'a str) -> Ask<'a> {
        let instruction = unless_blank(instruction);
        Ask {
            effective,
            instruction,
            attachments: &[],
            defaults: "",
            only: None,
            arm: Arm::Compacted,
        }
    }
}

/// The planned request; nothing is written. With the semantic layer on, a question that
/// cannot be embedded is ranked lexically and the failure logged (the callers that must say
/// so use [`plan_and_keep`]).
pub fn plan(ctx: &PreviewContext, ask: &Ask) -> PlannedRequest {
    let similarity = ctx.semantic.as_ref().and_then(|s| {
        s.similarities(ask.instruction)
            .map_err(|e| {
                tracing::warn!(
                    "ranking without the semantic layer: {}",
                    crate::exit::Said(&e)
                )
            })
            .ok()
    });
    plan_with(ctx, ask, similarity.as_deref(), Kept::Nothing)
}

/// The request [`plan_and_keep`] plans for `ask`, planned without writing: the briefed parts
/// taken as kept when `kept` (a context that would store them), else as not kept. What
/// compaction shows, which writes nothing, is then the catalog a preview of the same ask
/// sends (tester 19 F7: compaction planned without the attachments and the defaults).
pub fn plan_unwritten(
    ctx: &PreviewContext,
    ask: &Ask,
    kept: bool,
) -> anyhow::Result<PlannedRequest> {
    let similarity = similarity_for(ctx, ask)?;
    let kept = if kept { Kept::All } else { Kept::Nothing };
    Ok(plan_with(ctx, ask, similarity.as_deref(), kept))
}

/// The semantic layer's similarities for an ask, when the layer is on; an embedder that
/// fails is an error.
fn similarity_for(ctx: &PreviewContext, ask: &Ask) -> anyhow::Result<Option<Vec<Vec<f64>>>> {
    ctx.semantic
        .as_ref()
        .map(|s| s.similarities(ask.instruction))
        .transpose()
}

fn plan_with(
    ctx: &PreviewContext,
    ask: &Ask,
    similarity: Option<&[Vec<f64>]>,
    kept: Kept,
) -> PlannedRequest {
    routed(ctx, plan_unrouted(ctx, ask, similarity, kept))
}

/// `planned` with where `send` would send it now ([`Providers::route`]): decided once a
/// request is final, since the check reads every message for another provider's key.
///
/// [`Providers::route`]: crate::llm::provider::Providers::route
fn routed(ctx: &PreviewContext, mut planned: PlannedRequest) -> PlannedRequest {
    planned.route = ctx.providers.as_ref().map(|providers| {
        let texts = planned.request.messages.iter().map(|m| m.content.as_str());
        providers.route(&planned.model, texts)
    });
    planned
}

/// An instruction of white space only is none (tester 30 F7; tester 32 F4: beside an
/// attachment `preview "   "` still sent it): every plan passes here.
pub fn unless_blank(instruction: &str) -> &str {
    if instruction.trim().is_empty() {
        ""
    } else {
        instruction
    }
}

fn plan_unrouted(
    ctx: &PreviewContext,
    ask: &Ask,
    similarity: Option<&[Vec<f64>]>,
    kept: Kept,
) -> PlannedRequest {
    let ask = &Ask {
        instruction: unless_blank(ask.instruction),
        ..*ask
    };
    // The shape is read from the instruction's opening, as the planner reads it: a huge
    // paste is not hashed whole.
    let past = ctx
        .past_steps
        .as_deref()
        .and_then(|ix| ix.for_intent(opening(ask.instruction, CLASSIFY_MAX_BYTES)));
    plan_request(&PlanInputs {
        effective: ask.effective,
        instruction: ask.instruction,
        attachments: ask.attachments,
        defaults: ask.defaults,
        catalog: &ctx.catalog,
        index: &ctx.index,
        planner: &ctx.planner,
        prior: ctx.prior.as_deref(),
        past_steps: past.as_ref(),
        arm: ask.arm,
        only: ask.only,
        attachment_weight: ATTACHMENT_WEIGHT,
        semantic: similarity,
        kept,
    })
}

/// The request with every briefed part's full text stored in the output cache (when the
/// context has one), and each briefing saying what was really stored: the one place that
/// decides it. Planned as if every briefed part will be kept; a part that could not be
/// stored (no cache, or the write failed: the error comes back beside the request) makes
/// the request planned again with only what was stored, so its briefing says the rest is
/// not kept — and a part briefed only in that second plan is not kept either.
fn plan_kept(
    ctx: &PreviewContext,
    ask: &Ask,
    similarity: Option<&[Vec<f64>]>,
) -> (PlannedRequest, Option<anyhow::Error>) {
    if ctx.cache_dir.is_none() {
        return (plan_with(ctx, ask, similarity, Kept::Nothing), None);
    }
    // Routed only once final: a request planned again is routed once (last note: the key
    // check ran twice).
    let planned = plan_unrouted(ctx, ask, similarity, Kept::All);
    let (stored, error) = keep_briefed(ctx, ask, &planned);
    let all_stored = briefed_refs(&planned).all(|r| stored.contains(r));
    if all_stored {
        return (routed(ctx, planned), error);
    }
    (plan_with(ctx, ask, similarity, Kept::Only(&stored)), error)
}

/// The refs of a request's briefed parts.
fn briefed_refs(p: &PlannedRequest) -> impl Iterator<Item = &str> {
    p.gates()
        .filter_map(|g| g.briefing.as_ref().map(|b| b.cache_ref.as_str()))
}

/// As [`plan`], with every briefed part's full text kept in the output cache under the ref
/// its briefing names (when the context has a cache).
///
/// A cache that cannot keep a part (a full disk, a read-only file) costs that part's ref,
/// not the request: it is planned again with only what was stored, its briefing says the
/// rest is not kept, and a warning says why (tester 21 F2: `preview`, `send` and MCP
/// `preview` had failed outright, where the console went on).
pub fn plan_and_keep(ctx: &PreviewContext, ask: &Ask) -> anyhow::Result<PlannedRequest> {
    let similarity = similarity_for(ctx, ask)?;
    let (mut p, error) = plan_kept(ctx, ask, similarity.as_deref());
    if let Some(e) = error {
        p.warnings.push(cache_failed(&e));
    }
    Ok(p)
}

/// What a request planned past a cache that could not keep a part says of it.
pub fn cache_failed(e: &anyhow::Error) -> String {
    format!(
        "the output cache could not keep a briefed part, so the request is planned without \
         it: {} (--no-cache plans without the cache from the start)",
        crate::exit::Said(e)
    )
}

/// A request planned for a front end that goes on when a part fails, and what failed.
#[derive(Debug, Clone)]
pub struct Resilient {
    pub planned: PlannedRequest,
    /// The semantic layer ranked this request: its embedder's id.
    pub semantic: Option<String>,
    /// The layer is on but could not embed this question: why (the request was ranked
    /// lexically).
    pub semantic_error: Option<String>,
    /// The layer is on but the question was not embedded yet (planned with
    /// [`QuestionVectors::Remembered`]): ranked lexically until it is.
    pub semantic_waiting: bool,
    /// The briefed parts could not be kept in the output cache: why (the request is still
    /// the one that would be sent).
    pub cache_error: Option<String>,
}

/// Whether planning may ask the semantic layer's embedder for the question's vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionVectors {
    /// Embed the question (a call to the embedder unless its vectors are remembered).
    Embed,
    /// Only the vectors the layer remembers for it: a question not embedded yet is ranked
    /// lexically and the plan says so ([`Resilient::semantic_waiting`]). The console plans
    /// this way while the text is being typed, so a key costs no embedder call.
    Remembered,
}

/// As [`plan_and_keep`], never failing: a question the semantic layer cannot embed is
/// ranked lexically and a cache that cannot be written costs the refs, each said beside the
/// request. The console plans through here.
pub fn plan_resilient(ctx: &PreviewContext, ask: &Ask, vectors: QuestionVectors) -> Resilient {
    let mut semantic_waiting = false;
    let (similarity, semantic_error) = match (vectors, &ctx.semantic) {
        (QuestionVectors::Remembered, Some(layer)) => {
            let remembered = layer.remembered_similarities(ask.instruction);
            semantic_waiting = remembered.is_none();
            (remembered, None)
        }
        _ => match similarity_for(ctx, ask) {
            Ok(s) => (s, None),
            Err(e) => (None, Some(crate::exit::said(&e))),
        },
    };
    let semantic = similarity
        .as_ref()
        .and(ctx.semantic.as_ref())
        .map(|s| s.embedder_id().to_string());
    let (planned, error) = plan_kept(ctx, ask, similarity.as_deref());
    let cache_error = error.map(|e| crate::exit::said(&e));
    Resilient {
        planned,
        semantic,
        semantic_error,
        semantic_waiting,
        cache_error,
    }
}

/// Every briefed part's full text kept in the output cache under the ref its briefing
/// names: the refs stored, and the error that stopped it (the parts after it are not
/// stored).
fn keep_briefed(
    ctx: &PreviewContext,
    ask: &Ask,
    p: &PlannedRequest,
) -> (HashSet<String>, Option<anyhow::Error>) {
    let mut stored = HashSet::new();
    let Some(dir) = &ctx.cache_dir else {
        return (stored, None);
    };
    if briefed_refs(p).next().is_none() {
        return (stored, None);
    }
    let mut cache = match OutputCache::open_in(dir) {
        Ok(c) => c
            .with_secrets(ctx.secrets.clone())
            .with_max_bytes(ctx.cache_max_bytes),
        Err(e) => return (stored, Some(e)),
    };
    let texts =
        std::iter::once(ask.instruction).chain(ask.attachments.iter().map(|a| a.text.as_str()));
    for (gate, text) in p.gates().zip(texts) {
        if let Some(b) = &gate.briefing {
            match cache.store(text) {
                Ok(s) if s.cache_ref == b.cache_ref => {
                    stored.insert(s.cache_ref);
                }
                Ok(_) => {}
                Err(e) => return (stored, Some(e)),
            }
        }
    }
    (stored, None)
}

/// The request for a model id (looked up in the budgets) and one prompt.
pub fn preview(
    ctx: &PreviewContext,
    model: &str,
    tier_override: Option<Tier>,
    prompt: &str,
    defaults: &str,
) -> anyhow::Result<Preview> {
    preview_among(ctx, model, tier_override, prompt, &[], defaults, None)
}

/// As [`preview`], with `attachments`, and the catalog further restricted to `only` (the
/// two-pass filter's pass-1 pick), compacted again against the same allowance: how a
/// replay rebuilds its request.
pub fn preview_among(
    ctx: &PreviewContext,
    model: &str,
    tier_override: Option<Tier>,
    prompt: &str,
    attachments: &[Attachment],
    defaults: &str,
    only: Option<&HashSet<String>>,
) -> anyhow::Result<Preview> {
    let effective = effective_row(&ctx.budgets, model, tier_override);
    plan_and_keep(
        ctx,
        &Ask {
            effective: &effective,
            instruction: prompt,
            attachments,
            defaults,
            only,
            arm: Arm::Compacted,
        },
    )
}

/// The request a baseline model is asked with (issue 18 item 6): the same instruction,
/// attachments and defaults, and no planner help — every catalog entry may go (no planner
/// narrowing, so no hint line either), no history prior nor past-plans part, and no byte cap on the catalog
/// (a cap is a policy for weak models). Only the model's own token window can still cut
/// entries; the request's compaction says which.
pub fn plan_unaided(
    ctx: &PreviewContext,
    model: &str,
    instruction: &str,
    attachments: &[Attachment],
    defaults: &str,
) -> anyhow::Result<PlannedRequest> {
    let off = crate::core::planner::RulesFile {
        enabled: Some(false),
        ..Default::default()
    };
    let unaided = PreviewContext {
        planner: Arc::new(Planner::new(&off, "the baseline's planner (off)")?),
        prior: None,
        past_steps: None,
        semantic: None,
        ..ctx.clone()
    };
    let mut effective = effective_row(&ctx.budgets, model, None);
    effective.row.max_catalog_bytes = None;
    plan_and_keep(
        &unaided,
        &Ask {
            effective: &effective,
            instruction,
            attachments,
            defaults,
            only: None,
            arm: Arm::Compacted,
        },
    )
}
