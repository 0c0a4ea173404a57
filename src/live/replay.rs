//! Replay of a stored plan (DESIGN §2.9). Offline: today's decoder and classifier on the
//! stored raw response — would we recover it now, and by which stage? Live: the request
//! rebuilt from the stored instruction with today's budget, compaction and prompt (the
//! two-pass filter included; a baseline plan as a baseline request; a tier override and a
//! defaults block kept), sent, classified, decoded, guarded, and returned as a new plan
//! record with `replay_of`. An attachment is sent again only when the output cache still
//! holds its text (a briefing); the replay says which were and which were not
//! ([`crate::core::as_sent`]).

use crate::core::terminal_text::ShownPath;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

use crate::core::as_sent::{Rebuilt, SentWith, is_baseline, mark_baseline, replay_notes};
use crate::core::assemble::ChatMessage;
use crate::core::budget::{Tier, effective_row};
use crate::core::compare::Arm;
use crate::core::failure::{
    Failure, FailureClass, FinishReason, KeptCost, Reading, Reply, Usage, error_envelope,
    kept_reply, read_reply, read_reply_owning,
};
use crate::core::history::{Outcome, PlanRecord, PlanSource};
use crate::core::plan::{GuardedPlan, PlanGuard, filter_ids, steps_from};
use crate::core::prompt::{FILTER_MAX_IDS, FILTER_MAX_TOKENS, SYSTEM_FILTER, filter_lines};
use crate::core::request::Attachment;
use crate::core::response::DecodeStage;
use crate::core::text::clip;
use crate::llm::client::{Answer, Cancel, ChatCall, Exchange, Progress, Sampling, send};
use crate::llm::provider::{Endpoint, Providers};
use crate::preview::{Ask, Preview, PreviewContext, plan_and_keep, plan_unaided};
use crate::store::cache::OutputCache;
use crate::workspace::{CONFIG_FILE, Config, Workspace};

/// What a replay needs from the workspace; cheap to clone into a task.
#[derive(Clone)]
pub struct ReplayContext {
    pub preview: PreviewContext,
    pub providers: Providers,
    pub registered: HashSet<String>,
    pub pipelines: HashSet<String>,
}

impl ReplayContext {
    pub fn new(ws: &Workspace, preview: PreviewContext) -> anyhow::Result<ReplayContext> {
        ReplayContext::with_config(ws, &ws.config()?, preview)
    }

    /// [`ReplayContext::new`] with the workspace's config already read.
    pub fn with_config(
        ws: &Workspace,
        config: &Config,
        preview: PreviewContext,
    ) -> anyhow::Result<ReplayContext> {
        let origin = ws.dir.join(CONFIG_FILE).shown().to_string();
        let providers = Providers::from_config(config, &origin)?;
        Ok(ReplayContext {
            registered: ws
                .catalog
                .guide()
                .entry_names()
                .map(|(n, _)| n.to_string())
                .collect(),
            pipelines: ws.pipeline_ids(),
            preview,
            providers,
        })
    }

    /// The guard for a stored plan read again (offline replay): `read_cached` counts as
    /// offered.
    pub fn guard(&self) -> PlanGuard<'_> {
        PlanGuard {
            registered: &self.registered,
            pipelines: &self.pipelines,
            self_names: &self.providers.self_names,
            read_cached: true,
        }
    }

    /// The guard for the answer to `request`: `read_cached` only where one of its
    /// briefings named a part the cache holds.
    pub fn guard_for(&self, request: &crate::preview::PlannedRequest) -> PlanGuard<'_> {
        PlanGuard {
            read_cached: request.offers_read_cached(),
            ..self.guard()
        }
    }
}

/// What today's reading makes of a stored response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A plan decodes now.
    Recovered,
    /// Still no plan, for the class given.
    StillFailing,
    /// The HTTP layer failed: the stored body is not a model's answer.
    NotAnAnswer,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfflineReplay {
    pub plan_id: String,
    pub model: String,
    pub at: i64,
    pub outcome: Outcome,
    pub stored_class: Option<String>,
    pub stored_finish: Option<String>,
    pub verdict: Verdict,
    /// Today's class when there is still no plan.
    pub failure: Option<Failure>,
    pub finish: Option<FinishReason>,
    /// Which decode stage recovered the plan.
    pub stage: Option<DecodeStage>,
    pub plan: Option<GuardedPlan>,
    /// Why today's class differs from the stored one when a class was renamed or split
    /// since the row was written; `None` when they agree (or there is no plan either way).
    pub class_note: Option<&'static str>,
}

/// Why a stored class and today's may differ for the same answer: the classes that were
/// split since rows were written (issue 18). Any other difference is a disagreement.
pub fn class_change_reason(stored: &str, today: &str) -> Option<&'static str> {
    match (stored, today) {
        ("safety_filtered", "refused") => Some(
            "stored before refusals had their own class: a model declining in its own words was filed as safety_filtered, which now means the provider's filter only",
        ),
        ("constrained_deadlock", "no_plan") => Some(
            "stored when any ``` fence counted as JSON: a fence of another language is prose, so no JSON was attempted",
        ),
        _ => None,
    }
}

/// Read a reply as a plan and guard it.
fn read_plan(reply: &Reply, guard: &PlanGuard) -> (Reading<GuardedPlan>, Outcome) {
    read_plan_past(reply, 0, guard)
}

/// [`read_plan`] of a reply whose tool calls past `calls_not_kept` were read past and not
/// kept (an imported answer's: more calls than a plan holds steps are no plan).
fn read_plan_past(
    reply: &Reply,
    calls_not_kept: usize,
    guard: &PlanGuard,
) -> (Reading<GuardedPlan>, Outcome) {
    let reading = read_reply_owning(reply, calls_not_kept, |v| {
        steps_from(&v).map(|steps| guard.check(steps))
    });
    let outcome = reading
        .value
        .as_ref()
        .map_or(Outcome::Failed, |p| p.outcome);
    (reading, outcome)
}

/// Today's decoder and classifier on a stored plan's raw response.
pub fn replay_offline(plan: &PlanRecord, guard: &PlanGuard) -> OfflineReplay {
    let stored_class = plan.failure_class.clone();
    let mut out = OfflineReplay {
        plan_id: plan.id.clone(),
        model: plan.model.clone(),
        at: plan.at,
        outcome: plan.outcome,
        stored_class: stored_class.clone(),
        stored_finish: plan.finish_reason.clone(),
        verdict: Verdict::StillFailing,
        failure: None,
        finish: plan.finish_reason.as_deref().map(FinishReason::parse),
        stage: None,
        plan: None,
        class_note: None,
    };
    let transport = stored_class
        .as_deref()
        .and_then(FailureClass::parse)
        .filter(|c| c.is_transport_level());
    if let Some(class) = transport {
        out.verdict = Verdict::NotAnAnswer;
        // What the plan was stored with says why (a stream that broke off, an error in the
        // body): the raw text kept of a partial answer is not a body to judge (tester 22 F6).
        let detail = stored_failure_detail(plan, class)
            .or_else(|| partial_answer(plan))
            .unwrap_or_else(|| not_an_answer(plan.raw_response.as_deref()));
        out.failure = Some(Failure::new(class, detail));
        return out;
    }
    // The whole answer when the row kept it — a live call's reply, or what an import read
    // the plan from (its kept tool calls among it) —; else what older rows kept: the raw
    // text (a reasoning field folded in as <think>) and the finish reason.
    let (reply, calls_not_kept) = kept_reply(
        plan.answer.as_ref(),
        plan.raw_response.as_deref(),
        plan.finish_reason.as_deref(),
    );
    let (reading, _) = read_plan_past(&reply, calls_not_kept, guard);
    out.stage = reading.stage;
    out.failure = reading.failure;
    out.verdict = if reading.value.is_some() {
        Verdict::Recovered
    } else {
        Verdict::StillFailing
    };
    out.plan = reading.value;
    if let (Some(stored), Some(today)) = (out.stored_class.as_deref(), &out.failure) {
        out.class_note = class_change_reason(stored, today.class.as_str());
    }
    out
}

/// The most of a stored failure's detail an offline replay repeats.
const STORED_DETAIL_MAX_CHARS: usize = 400;

/// The detail of the failure `plan` was stored with (`trim_record.replay.failure`, written
/// with every sent or replayed plan, and carried by an exported line), when its class is the
/// plan's: a stream that broke off, an error in the body, a timeout mid-answer.
fn stored_failure_detail(plan: &PlanRecord, class: FailureClass) -> Option<String> {
    let failure = plan.trim_record.as_ref()?.get("replay")?.get("failure")?;
    if failure.get("class")?.as_str()? != class.as_str() {
        return None;
    }
    let detail = failure.get("detail")?.as_str()?.trim();
    (!detail.is_empty()).then(|| clip(detail, STORED_DETAIL_MAX_CHARS))
}

/// For a plan whose stored answer is partial (a stream cut off) with no stored detail: that
/// it broke off, and after how much.
fn partial_answer(plan: &PlanRecord) -> Option<String> {
    let answer: StoredAnswer = serde_json::from_value(plan.answer.clone()?).ok()?;
    answer.partial.then(|| {
        let bytes = |t: &Option<String>| t.as_deref().map_or(0, str::len);
        format!(
            "the stream broke off after {} bytes of answer and {} of reasoning; what arrived \
             is kept as a partial answer, not a body to decode",
            bytes(&answer.reply.content),
            bytes(&answer.reply.reasoning)
        )
    })
}

fn not_an_answer(raw: Option<&str>) -> String {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return "no response was received, so there is nothing to decode".into();
    };
    match serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .as_ref()
        .and_then(error_envelope)
    {
        Some((code, message)) => format!(
            "the endpoint answered error {}: {message}",
            code.map_or_else(|| "(no code)".to_string(), |c| c.to_string())
        ),
        None => format!(
            "the stored body is not a chat completion: \"{}\"",
            clip(raw.trim(), 80)
        ),
    }
}

/// Per stored failure class: how many plans, how many today's decoder recovers and by which
/// stage, and what the rest are today.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub plans: usize,
    pub recovered: usize,
    pub stages: BTreeMap<String, usize>,
    /// Still failing, by today's class.
    pub today: BTreeMap<String, usize>,
}

/// How one replay of a plan counts in its class.
pub enum Tallied<'a> {
    /// A plan came back, recovered by this stage.
    Recovered(Option<DecodeStage>),
    /// Still no plan, as this class today.
    Failing(Option<&'a str>),
}

/// Per stored failure class, replays counted as they come; classes in name order.
#[derive(Default)]
pub struct ClassTally(BTreeMap<String, ClassSummary>);

impl ClassTally {
    pub fn add(&mut self, stored_class: Option<&str>, tallied: Tallied) {
        let class = stored_class.unwrap_or("unclassified").to_string();
        let s = self.0.entry(class.clone()).or_insert_with(|| ClassSummary {
            class,
            plans: 0,
            recovered: 0,
            stages: BTreeMap::new(),
            today: BTreeMap::new(),
        });
        s.plans += 1;
        match tallied {
            Tallied::Recovered(stage) => {
                s.recovered += 1;
                if let Some(stage) = stage {
                    *s.stages.entry(stage.as_str().to_string()).or_default() += 1;
                }
            }
            Tallied::Failing(Some(today)) => {
                *s.today.entry(today.to_string()).or_default() += 1;
            }
            Tallied::Failing(None) => {}
        }
    }

    pub fn into_summaries(self) -> Vec<ClassSummary> {
        self.0.into_values().collect()
    }
}

/// Offline results per stored class, most plans first.
pub fn summarise(results: &[OfflineReplay]) -> Vec<ClassSummary> {
    let mut tally = ClassTally::default();
    for r in results {
        let tallied = if r.verdict == Verdict::Recovered {
            Tallied::Recovered(r.stage)
        } else {
            Tallied::Failing(r.failure.as_ref().map(|f| f.class.as_str()))
        };
        tally.add(r.stored_class.as_deref(), tallied);
    }
    let mut out = tally.into_summaries();
    out.sort_by(|a, b| b.plans.cmp(&a.plans).then(a.class.cmp(&b.class)));
    out
}

/// What pass 1 of the two-pass filter did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwoPass {
    /// Entries pass 1 was shown.
    pub offered: usize,
    /// Ids it picked that the catalog holds, in its order.
    pub picked: Vec<String>,
    /// Entries pass 2 kept after compaction.
    pub kept: usize,
    /// Why pass 1 gave nothing usable; the lexical selection stood.
    pub failure: Option<Failure>,
    pub note: String,
}

impl TwoPass {
    /// The pass in a table's cell, whole: `picked 3 of 45`, `failed (constrained_deadlock)`,
    /// `cancelled`. The note, a sentence, goes under the table (tester 32 F8: a table cuts a
    /// long cell in the middle, `pass 1 failed (cons…_deadlock)`).
    pub fn cell(&self) -> String {
        match (&self.failure, self.picked.is_empty()) {
            (Some(f), _) => format!("pass 1 failed ({})", f.class),
            (None, false) => format!("pass 1 picked {} of {}", self.picked.len(), self.offered),
            (None, true) => "pass 1 cancelled".to_string(),
        }
    }
}

/// The request a live replay sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestSummary {
    pub row_id: String,
    pub tier: Tier,
    pub input_tokens: usize,
    pub max_tokens: usize,
    pub catalog_entries: usize,
    pub response_format: Option<&'static str>,
}

impl RequestSummary {
    fn of(request: &Preview) -> RequestSummary {
        RequestSummary {
            row_id: request.row_id.clone(),
            tier: request.tier,
            input_tokens: request.request.input_tokens,
            max_tokens: request.request.max_tokens,
            catalog_entries: request.compaction.kept.len(),
            response_format: request.request.response_format,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveReplay {
    pub model: String,
    /// The provider it went to; empty when no provider takes the model.
    pub provider: String,
    /// Whether it ran: the endpoint answered with a whole chat completion, whatever the
    /// model said in it (see [`LiveReplay::could_not_run`]).
    pub ran: bool,
    /// Why nothing was sent: no provider for the model, or its key variable not set.
    pub not_sent: Option<String>,
    /// The new plan's id once stored.
    pub stored_id: Option<String>,
    /// Why the answer could not be stored (a full disk, a lock held too long): it is still
    /// shown, and the command fails after showing it.
    pub store_error: Option<String>,
    /// The plan the store could not take, as a line `import plans` reads back: printed,
    /// so a paid answer is never lost with the store.
    pub unsaved_plan: Option<String>,
    pub cancelled: bool,
    pub outcome: Outcome,
    pub failure: Option<Failure>,
    pub finish: Option<FinishReason>,
    pub stage: Option<DecodeStage>,
    pub plan: Option<GuardedPlan>,
    pub reasoning_bytes: usize,
    /// The answer's text with reasoning taken out, whole (tester 13 T13-2: it was cut at
    /// 2,000 characters, with a `…` that said nothing of it).
    pub answer: Option<String>,
    /// The answer as the plan keeps it (`history show --json`'s `answer`): the reply with its
    /// tool calls, refusal, reasoning and usage, the finish, whether it is partial; `None`
    /// when nothing came back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_answer: Option<Box<serde_json::Value>>,
    /// Boxed: it is rare, and keeps a replay small to move around.
    pub two_pass: Option<Box<TwoPass>>,
    /// A replay only: how its request differs from what the original sent, and what it
    /// did about it (attachments not stored so not sent again, or read back from the
    /// output cache; the tier override and defaults kept; a baseline rebuilt as one).
    /// Empty: nothing was sent with the original beside its instruction.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rebuild_notes: Vec<String>,
    pub request: RequestSummary,
    pub status: Option<u16>,
    pub attempts: u32,
    pub duration_ms: u64,
    /// Boxed to keep a replay small to move around; serialised inline.
    #[serde(flatten)]
    pub facts: Box<CallFacts>,
}

/// What a live call measured, beside its result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallFacts {
    /// The plan came as native tool calls.
    pub from_tool_calls: bool,
    /// Tokens as the endpoint counted them.
    pub usage: Option<Usage>,
    /// The `x-request-id` header, else the body's `id`.
    pub request_id: Option<String>,
    /// The planning call alone, retries included.
    pub latency_ms: u64,
    /// USD at the row's prices, from the usage (or the estimated input when none came).
    pub cost_usd: Option<f64>,
}

/// Progress of a live replay: which pass, and what the call is doing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayProgress {
    pub model: String,
    /// Which pass of a two-pass replay (1: the filter, 2: the plan); `None` for a call
    /// that is the only one (a send, or a replay the filter did not run for).
    pub pass: Option<u8>,
    pub progress: Progress,
}

impl ReplayProgress {
    /// `pl-0042 on ollama/qwen3 · pass 2 · receiving 1.2 KB answer, 3.4 KB reasoning`
    pub fn line(&self, plan: &str) -> String {
        let p = self;
        let what = match &p.progress {
            Progress::Sending { attempt } if *attempt > 1 => format!("sending (attempt {attempt})"),
            Progress::Sending { .. } => "sending".to_string(),
            Progress::Waiting { wait_ms, why, .. } => {
                format!(
                    "retrying in {:.1} s after {}",
                    *wait_ms as f64 / 1000.0,
                    clip(why, 60)
                )
            }
            Progress::Receiving {
                content_bytes,
                reasoning_bytes,
                thinking,
            } => format!(
                "receiving {} answer, {} reasoning{}",
                bytes(*content_bytes),
                bytes(*reasoning_bytes),
                if *thinking { " (thinking…)" } else { "" }
            ),
        };
        // "pass 2" with no pass 1 before it read as a step missed (tester 17 F6).
        match p.pass {
            Some(n) => format!("{plan} on {} · pass {n} · {what}", p.model),
            None => format!("{plan} on {} · {what}", p.model),
        }
    }
}

fn bytes(n: usize) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{:.1} KB", n as f64 / 1024.0)
    }
}

/// The raw response as the model produced it ([`Reply::raw_response`], the rule an import
/// keeps too): a reasoning field folded in as a `<think>` block, so an offline replay of
/// the stored row reads it the same way.
fn raw_of(reply: &Reply) -> String {
    reply.raw_response().unwrap_or_default()
}

/// Replay `original` live on `model`. `Ok((replay, Some(record)))` for a record to store;
/// `None` when cancelled or when nothing could be sent for this model (no provider takes
/// it, its key variable is not set: [`LiveReplay::not_sent`] says which), so that one
/// model's configuration never stops the others. `Err` only when the request cannot be
/// built at all. The replay's `rebuild_notes` say how its request differs from what the
/// original sent.
pub async fn replay_live(
    ctx: &ReplayContext,
    original: &PlanRecord,
    model: &str,
    cancel: &Cancel,
    progress: &mut (dyn FnMut(ReplayProgress) + Send),
) -> anyhow::Result<(LiveReplay, Option<PlanRecord>)> {
    let trim = original.trim_record.as_ref();
    let sent = SentWith::from_trim(trim);
    let baseline = is_baseline(trim);
    // The arm it was sent as: its own (a send's), or the one its replay record keeps.
    let arm = original
        .arm
        .or(sent.arm)
        .filter(|a| *a != Arm::Compacted && !baseline);
    let (held, cache_error) = held_attachments(ctx, &sent);
    let asked = Asked {
        intent: &original.intent,
        defaults: sent.defaults.as_deref().unwrap_or(""),
        attachments: &held,
        tier: sent.tier_override,
        // An A/B arm is rebuilt as that arm (tester 8 F10: the `full` arm was replayed as
        // the compacted request, without a word).
        arm: arm.unwrap_or(Arm::Compacted),
    };
    let (mut live, mut record) =
        replay_rebuilt(ctx, original, model, asked, baseline, cancel, progress).await?;
    let resent: Vec<&str> = held.iter().map(|(r, _)| r.as_str()).collect();
    live.rebuild_notes = replay_notes(&Rebuilt {
        sent: &sent,
        baseline,
        arm,
        tier: live.request.tier,
        resent: &resent,
        cache_error: cache_error.as_deref(),
    });
    if let Some(r) = record.as_mut() {
        // What the replay itself was sent with: the override and defaults kept, and the
        // attachments read back from the output cache.
        SentWith {
            attachments: sent
                .attachments
                .iter()
                .filter(|a| resent.contains(&a.content_ref.as_str()))
                .cloned()
                .collect(),
            arm,
            ..sent.clone()
        }
        .keep_in(&mut r.trim_record);
    }
    Ok((live, record))
}

/// The attachments a sent plan carried whose text the output cache still holds under
/// their `content_ref` (a part sent as a briefing is kept there), each with its ref; and
/// why the cache could not be read, if it could not.
fn held_attachments(
    ctx: &ReplayContext,
    sent: &SentWith,
) -> (Vec<(String, Attachment)>, Option<String>) {
    let Some(dir) = ctx
        .preview
        .cache_dir
        .as_ref()
        .filter(|_| !sent.attachments.is_empty())
    else {
        return (Vec::new(), None);
    };
    let cache = match OutputCache::open_existing_in(dir) {
        Ok(Some(cache)) => cache,
        Ok(None) => return (Vec::new(), None),
        Err(e) => return (Vec::new(), Some(crate::exit::said(&e))),
    };
    let mut held = Vec::new();
    let mut error = None;
    for a in &sent.attachments {
        match cache.get(&a.content_ref) {
            Ok(Some(text)) if text.len() == a.bytes => held.push((
                a.content_ref.clone(),
                Attachment {
                    name: a.name.clone(),
                    text,
                },
            )),
            Ok(_) => {}
            Err(e) => error = Some(crate::exit::said(&e)),
        }
    }
    (held, error)
}

/// What the original asked, as a replay rebuilds it: the stored instruction, and what it
/// was sent with that can be sent again (the defaults block, the attachments the output
/// cache still holds, the tier override).
#[derive(Clone, Copy)]
struct Asked<'a> {
    intent: &'a str,
    defaults: &'a str,
    attachments: &'a [(String, Attachment)],
    tier: Option<Tier>,
    /// The A/B arm the original was sent as (`compacted` for a plain send).
    arm: Arm,
}

impl Asked<'_> {
    fn attachments(&self) -> Vec<Attachment> {
        self.attachments.iter().map(|(_, a)| a.clone()).collect()
    }

    /// The request as `preview` builds it today for `model` (among `only`, when given).
    fn request(
        &self,
        ctx: &ReplayContext,
        model: &str,
        only: Option<&HashSet<String>>,
    ) -> anyhow::Result<Preview> {
        let effective = effective_row(&ctx.preview.budgets, model, self.tier);
        plan_and_keep(
            &ctx.preview,
            &Ask {
                effective: &effective,
                instruction: self.intent,
                attachments: &self.attachments(),
                defaults: self.defaults,
                only,
                arm: self.arm,
            },
        )
    }
}

/// The original's request rebuilt from its stored instruction and sent: a baseline plan as
/// `send --baseline` builds one (whole catalog, no planner, no prior, no two-pass), any
/// other as `preview` builds it today at the tier it was sent under.
async fn replay_rebuilt(
    ctx: &ReplayContext,
    original: &PlanRecord,
    model: &str,
    asked: Asked<'_>,
    baseline: bool,
    cancel: &Cancel,
    progress: &mut (dyn FnMut(ReplayProgress) + Send),
) -> anyhow::Result<(LiveReplay, Option<PlanRecord>)> {
    let started = std::time::Instant::now();
    let first = if baseline {
        plan_unaided(
            &ctx.preview,
            model,
            asked.intent,
            &asked.attachments(),
            asked.defaults,
        )?
    } else {
        asked.request(ctx, model, None)?
    };
    let endpoint = match endpoint_for(ctx, model, &first) {
        Ok(endpoint) => endpoint,
        Err(not_sent) => return Ok((*not_sent, None)),
    };
    let mut two_pass = None;
    let mut request = first;
    let mut total_attempts = 0;
    // The two-pass filter narrows the compacted request; an arm is sent as `send
    // --compare` sent it, in one pass.
    if request.ranking.escalate && !baseline && asked.arm == Arm::Compacted {
        let (tp, restricted, attempts) =
            filter_pass(ctx, &endpoint, &request, asked, model, cancel, progress).await?;
        total_attempts += attempts;
        if cancel.is_cancelled() {
            let cancelled = LiveReplay {
                cancelled: true,
                ..LiveReplay::before_answer(model, &endpoint.provider, &request)
            };
            return Ok((cancelled, None));
        }
        if let Some(r) = restricted {
            request = r;
        }
        two_pass = Some(Box::new(TwoPass {
            kept: request.compaction.kept.len(),
            ..tp
        }));
    }
    let link = Link {
        caller: &original.caller,
        intent: &original.intent,
        replay_of: Some(&original.id),
        compare: None,
    };
    let (live, mut record) = send_planned(
        &ctx.guard_for(&request),
        &endpoint,
        &request,
        model,
        link,
        Prior {
            started,
            attempts: total_attempts,
            two_pass,
        },
        cancel,
        progress,
    )
    .await?;
    if let Some(r) = record.as_mut().filter(|_| baseline) {
        mark_baseline(r, &request);
    }
    Ok((live, record))
}

/// Who a live plan is for, and what it replays (nothing for `send`).
#[derive(Debug, Clone, Copy)]
pub struct Link<'a> {
    pub caller: &'a str,
    pub intent: &'a str,
    pub replay_of: Option<&'a str>,
    /// The A/B arm and the comparison it belongs to (`send --compare`).
    pub compare: Option<(Arm, &'a str)>,
}

/// What happened before the planning call: when it all started, attempts spent on pass 1.
pub struct Prior {
    pub started: std::time::Instant,
    pub attempts: u32,
    pub two_pass: Option<Box<TwoPass>>,
}

/// The endpoint for `model`, or the replay saying why nothing can be sent to it (no
/// provider takes it, its key variable is not set).
pub fn endpoint_for(
    ctx: &ReplayContext,
    model: &str,
    request: &Preview,
) -> Result<Endpoint, Box<LiveReplay>> {
    let texts = request.request.messages.iter().map(|m| m.content.as_str());
    ctx.providers.sendable(model, texts).map_err(|e| {
        let provider = e.endpoint.as_ref().map_or("", |e| e.provider.as_str());
        Box::new(LiveReplay::not_sent(model, provider, request, &e.why))
    })
}

/// The whole answer as stored in a plan's `answer` column: the reply as it came (content,
/// reasoning, tool calls, refusal, finish reason, usage, body id) and the exchange around
/// it. [`replay_offline`] reads `reply` back, so it judges what the live reading judged.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StoredAnswer {
    pub reply: Reply,
    /// The finish reason normalised (`stop`, `length (max_tokens)`, …).
    pub finish: Option<String>,
    pub status: Option<u16>,
    /// The `x-request-id` header, else the body's `id`.
    pub request_id: Option<String>,
    pub latency_ms: u64,
    pub attempts: u32,
    /// What was sent besides the messages.
    pub sent: SentParameters,
    /// The reply was cut (stream broken, reply too large): `reply` is what had arrived.
    #[serde(default)]
    pub partial: bool,
    /// What the call cost at the row's prices then; none when the row has no prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<KeptCost>,
}

/// The parameters a call was sent with.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SentParameters {
    pub model: String,
    pub max_tokens: usize,
    pub response_format: Option<String>,
    pub stream: bool,
    #[serde(flatten)]
    pub sampling: Sampling,
}

/// Send a planned request to `model` and read the answer as a plan: classified, decoded,
/// guarded, with the record to store (`None` when cancelled). The one live path of
/// `replay` and `send`.
#[allow(clippy::too_many_arguments)]
pub async fn send_planned(
    guard: &PlanGuard<'_>,
    endpoint: &Endpoint,
    request: &Preview,
    model: &str,
    link: Link<'_>,
    prior: Prior,
    cancel: &Cancel,
    progress: &mut (dyn FnMut(ReplayProgress) + Send),
) -> anyhow::Result<(LiveReplay, Option<PlanRecord>)> {
    let call = ChatCall {
        messages: request.request.messages.clone(),
        max_tokens: request.request.max_tokens,
        response_format: request.request.response_format,
        sampling: request.request.sampling.clone(),
    };
    let pass = prior.two_pass.as_ref().map(|_| 2);
    let mut report = |p: Progress| {
        progress(ReplayProgress {
            model: model.to_string(),
            pass,
            progress: p,
        })
    };
    let exchange: Exchange = send(endpoint, &call, cancel, &mut report).await?;
    let mut live = LiveReplay {
        facts: Box::new(CallFacts {
            latency_ms: exchange.latency_ms,
            ..CallFacts::default()
        }),
        two_pass: prior.two_pass,
        status: exchange.status,
        attempts: prior.attempts + exchange.attempts,
        duration_ms: prior.started.elapsed().as_millis() as u64,
        ..LiveReplay::before_answer(model, &endpoint.provider, request)
    };
    let (raw, finish_raw, reply, partial) = match exchange.answer {
        Answer::Cancelled => {
            live.cancelled = true;
            return Ok((live, None));
        }
        Answer::Reply { reply } => {
            let (reading, outcome) = read_plan(&reply, guard);
            live.outcome = outcome;
            live.failure = reading.failure;
            live.finish = reading.finish;
            live.stage = reading.stage;
            live.facts.from_tool_calls = reading.from_tool_calls;
            live.plan = reading.value;
            live.reasoning_bytes = reading.reasoning.len();
            live.answer = reading.answer;
            (
                Some(raw_of(&reply)),
                reply.finish_reason.clone(),
                Some(reply),
                false,
            )
        }
        Answer::Failed {
            failure,
            body,
            partial,
        } => {
            live.failure = Some(failure);
            let raw = body.or_else(|| partial.as_ref().map(raw_of));
            let finish = partial.as_ref().and_then(|p| p.finish_reason.clone());
            (raw, finish, partial, true)
        }
    };
    live.facts.usage = reply.as_ref().and_then(|r| r.usage.clone());
    live.facts.request_id = exchange.request_id.clone();
    let cost = cost_of(request, live.facts.usage.as_ref());
    live.facts.cost_usd = cost.map(|c| c.usd);
    let answer = reply.map(|reply| StoredAnswer {
        finish: reply
            .finish_reason
            .as_deref()
            .map(|f| FinishReason::parse(f).label()),
        reply,
        status: live.status,
        request_id: live.facts.request_id.clone(),
        latency_ms: live.facts.latency_ms,
        attempts: live.attempts,
        sent: SentParameters {
            model: endpoint.upstream_model.clone(),
            max_tokens: call.max_tokens,
            response_format: call.response_format.map(str::to_string),
            stream: endpoint.stream,
            sampling: call.sampling.clone(),
        },
        partial,
        cost,
    });
    let mut record = PlanRecord {
        id: String::new(),
        at: crate::store::now_secs(),
        at_nanos: 0,
        caller: link.caller.to_string(),
        model: model.to_string(),
        intent: crate::core::bounds::kept_intent(link.intent).into_owned(),
        steps: live
            .plan
            .as_ref()
            .map(|p| p.steps.clone())
            .unwrap_or_default(),
        outcome: live.outcome,
        failure_class: live.failure.as_ref().map(|f| f.class.as_str().to_string()),
        finish_reason: finish_raw,
        raw_response: raw,
        trim_record: Some(serde_json::json!({
            "trim": request.compaction.trim,
            "replay": {
                "provider": live.provider,
                "row": live.request.row_id,
                "input_tokens": live.request.input_tokens,
                "max_tokens": live.request.max_tokens,
                "catalog_entries": live.request.catalog_entries,
                "two_pass": live.two_pass,
                "status": live.status,
                "attempts": live.attempts,
                "failure": live.failure,
                "stage": live.stage,
            }
        })),
        duration_ms: Some(live.duration_ms as i64),
        replay_of: link.replay_of.map(str::to_string),
        answer: answer.and_then(|a| serde_json::to_value(a).ok()),
        arm: link.compare.map(|(arm, _)| arm),
        compare_group: link.compare.map(|(_, group)| group.to_string()),
        // Sent from here, whatever the original's source.
        source: PlanSource::Sent,
        expert_baseline: None,
    };
    // The past-plans part sent, and the plans it came from (kept beside the trim record).
    if let (Some(prior), Some(serde_json::Value::Object(trim))) =
        (&request.past_steps, record.trim_record.as_mut())
    {
        trim.insert(
            "past_steps".into(),
            serde_json::json!({"tokens": prior.tokens, "sent": prior.sent}),
        );
    }
    live.ran = live.could_not_run().is_none();
    live.kept_answer = record.answer.clone().map(Box::new);
    tracing::info!(
        model,
        caller = link.caller,
        request_id = record_request_id(&record),
        outcome = live.outcome.as_str(),
        class = record.failure_class.as_deref().unwrap_or("none"),
        steps = record.steps.len(),
        latency_ms = live.facts.latency_ms,
        attempts = live.attempts,
        "answer read as a plan"
    );
    // The answer's text; a tool-call answer has none, and logs its stored reply instead
    // (tester 5 C6: it logged `answer body body=`).
    let body = match record.raw_response.as_deref() {
        Some(text) if !text.trim().is_empty() => Some(text.to_string()),
        _ => record
            .answer
            .as_ref()
            .and_then(|a| a.get("reply"))
            .map(|r| r.to_string()),
    };
    if let Some(text) = body.as_deref().and_then(crate::logging::body_for_log) {
        tracing::debug!(body = %text, "answer body");
    }
    Ok((live, Some(record)))
}

/// The stored request id, for the log (the field is left out when there is none).
fn record_request_id(record: &PlanRecord) -> Option<&str> {
    record
        .answer
        .as_ref()
        .and_then(|a| a.get("request_id"))
        .and_then(|v| v.as_str())
}

/// What the call cost at the row's prices: the usage the endpoint reported, else the
/// estimated input alone (`None` when the row has no prices).
fn cost_of(request: &Preview, usage: Option<&Usage>) -> Option<KeptCost> {
    let p = &request.effective.row.prices;
    if p.input == 0.0 && p.output == 0.0 {
        return None;
    }
    let from_usage = usage.and_then(|u| crate::core::failure::usd_of_usage(p, u));
    // Without a prompt count, the input is the request's estimate (tester 35 F8: it had
    // been said to come from the usage); a completion count still adds its part.
    let usd = from_usage.unwrap_or_else(|| {
        let completion = usage.and_then(|u| u.completion_tokens).unwrap_or(0);
        request.request.cost.input_uncached + completion as f64 * p.output / 1_000_000.0
    });
    Some(KeptCost {
        usd,
        prices: *p,
        from_usage: from_usage.is_some(),
    })
}

/// The cells of one result in a side-by-side table (`send`'s and the console's alike): one
/// wording of what came back, wherever it is shown.
impl LiveReplay {
    pub fn valid_plan_cell(&self) -> String {
        if self.cancelled {
            "no: cancelled".into()
        } else if self.not_sent.is_some() {
            "no: not sent".into()
        } else if self.plan.is_some() {
            format!("yes ({})", self.outcome)
        } else {
            format!(
                "no: {}",
                self.failure.as_ref().map_or("?", |f| f.class.as_str())
            )
        }
    }

    /// The plan's tools in order, or `-`.
    pub fn steps_cell(&self) -> String {
        self.plan.as_ref().map_or_else(no_value, |p| {
            p.steps
                .iter()
                .map(|s| s.tool.as_str())
                .collect::<Vec<_>>()
                .join(" → ")
        })
    }

    pub fn unknown_tools_cell(&self) -> String {
        self.plan
            .as_ref()
            .map_or_else(no_value, |p| p.demoted.len().to_string())
    }

    /// Tokens in and out as the endpoint counted them (`~N`: the estimate sent, when it
    /// reported none).
    pub fn tokens_cell(&self) -> String {
        let u = self.facts.usage.as_ref();
        format!(
            "{} / {}",
            u.and_then(|u| u.prompt_tokens).map_or_else(
                || format!("~{}", self.request.input_tokens),
                |n| n.to_string()
            ),
            u.and_then(|u| u.completion_tokens)
                .map_or_else(no_value, |n| n.to_string())
        )
    }

    /// The stored plan's id, `NOT STORED` when storing it failed, or `-`.
    pub fn stored_cell(&self) -> String {
        match (&self.stored_id, &self.store_error) {
            (Some(id), _) => id.clone(),
            (None, Some(_)) => "NOT STORED".into(),
            (None, None) => no_value(),
        }
    }

    /// Store `record` with `insert` and keep what it came to: its id, or why it failed and
    /// the plan as a line `import plans` reads back (made only then: a record may hold a
    /// reply of megabytes). A paid answer is never dropped because the store could not
    /// take it.
    pub fn store_with(
        &mut self,
        record: PlanRecord,
        secrets: &crate::llm::redact::Secrets,
        insert: impl FnOnce(&mut PlanRecord) -> anyhow::Result<String>,
    ) -> Option<String> {
        self.store_in_hand(super::in_hand::InHand::new(record, secrets), insert)
    }

    /// [`Self::store_with`] for an answer in hand since it came back (`live::in_hand`):
    /// held as it is stored, no longer once stored, and, refused, kept in hand as its line
    /// until that line is stored or written out.
    pub fn store_in_hand(
        &mut self,
        answer: super::in_hand::InHand,
        insert: impl FnOnce(&mut PlanRecord) -> anyhow::Result<String>,
    ) -> Option<String> {
        let (mut record, holding) = answer.into_parts();
        // Written out as it is stored if the process must end while the store waits.
        holding.update(&record);
        // The id the store tried is not the plan's: the line keeps the id it came with.
        let id = record.id.clone();
        match insert(&mut record) {
            Ok(stored) => {
                drop(holding);
                self.stored_id = Some(stored.clone());
                Some(stored)
            }
            Err(e) => {
                self.store_error = Some(crate::exit::said(&e));
                record.id = id;
                let line = super::in_hand::kept_line(record);
                holding.keep(&line);
                self.unsaved_plan = Some(line);
                None
            }
        }
    }

    /// The answer whose plan line is `line` was stored later, as `id` (the console stored
    /// it again): it is stored now. Any other answer is left as it is.
    pub fn stored_later(&mut self, line: &str, id: &str) {
        if self.unsaved_plan.as_deref() == Some(line) {
            self.stored_id = Some(id.to_string());
            self.store_error = None;
            self.unsaved_plan = None;
        }
    }

    pub fn cached_tokens_cell(&self) -> String {
        self.facts
            .usage
            .as_ref()
            .and_then(|u| u.cached_tokens)
            .map_or_else(no_value, |n| n.to_string())
    }
}

fn no_value() -> String {
    "-".to_string()
}

/// Where an answer kept as a plan line (see [`LiveReplay::store_with`]) is read from, in
/// the message when the line does not read back.
pub const KEPT_ANSWER: &str = "an answer kept because the store could not take it";

/// Store again an answer the store could not take, from the plan line
/// [`LiveReplay::store_with`] kept (the line `import plans` reads, read by the same
/// parser): a replay (`replay_of` set) as the next replay of its original, any other as a
/// sent plan — as it would have been stored the first time. Returns the stored id.
pub fn store_kept_line(
    store: &mut crate::store::history::HistoryStore,
    line: &str,
    pipelines: &HashSet<String>,
) -> anyhow::Result<String> {
    let mut record = crate::core::history::parse_plan_line(KEPT_ANSWER, 1, line)?;
    if record.replay_of.is_some() {
        store.insert_replay(&mut record, pipelines)
    } else {
        store.insert_sent(&mut record, pipelines, None)
    }
}

/// The plans the store could not take, each a line `import plans` reads back.
pub fn unsaved_plans<'a>(answers: impl IntoIterator<Item = &'a LiveReplay>) -> Vec<&'a str> {
    answers
        .into_iter()
        .filter_map(|a| a.unsaved_plan.as_deref())
        .collect()
}

/// After every answer is shown: an error when any could not be stored, saying how many,
/// why the first failed, and where the output holds them.
pub fn every_answer_stored<'a>(
    answers: impl IntoIterator<Item = &'a LiveReplay>,
) -> anyhow::Result<()> {
    let failed: Vec<&str> = answers
        .into_iter()
        .filter_map(|a| a.store_error.as_deref())
        .collect();
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(anyhow::anyhow!(
            "{} of the answers could not be stored; each is printed whole as a plan line \
             `ctxconsole import plans` reads (`unsaved_plan` in --json): {first}",
            failed.len()
        )),
    }
}

impl LiveReplay {
    /// Why this replay could not run, or `None` when it ran. It could not run when nothing
    /// was sent (no provider for the model, its key variable not set), when it was
    /// cancelled, or when the HTTP layer failed so no whole answer came back: no connection,
    /// a timeout, a stream cut off (`transport`), an error status after the retries
    /// (`http_error`), a body that is not a chat completion or is too large (`protocol`) —
    /// the classes an offline replay calls "not an answer". Anything a model answered —
    /// a refusal, a length cut, prose, a made-up tool — ran: it is a result.
    pub fn could_not_run(&self) -> Option<String> {
        if let Some(why) = &self.not_sent {
            return Some(format!("not sent: {why}"));
        }
        if self.cancelled {
            return Some("cancelled".to_string());
        }
        match &self.failure {
            Some(f) if f.class.is_transport_level() => Some(format!("no answer: {}", f.class)),
            _ => None,
        }
    }

    /// A replay for which nothing could be sent, and why.
    fn not_sent(model: &str, provider: &str, request: &Preview, why: &anyhow::Error) -> LiveReplay {
        LiveReplay {
            not_sent: Some(crate::exit::said(why)),
            ..LiveReplay::before_answer(model, provider, request)
        }
    }

    /// A replay of `request` on `model` with no answer read yet: failed until one is.
    fn before_answer(model: &str, provider: &str, request: &Preview) -> LiveReplay {
        LiveReplay {
            model: model.to_string(),
            provider: provider.to_string(),
            ran: false,
            not_sent: None,
            stored_id: None,
            store_error: None,
            unsaved_plan: None,
            cancelled: false,
            outcome: Outcome::Failed,
            failure: None,
            finish: None,
            stage: None,
            plan: None,
            reasoning_bytes: 0,
            answer: None,
            kept_answer: None,
            two_pass: None,
            rebuild_notes: Vec::new(),
            request: RequestSummary::of(request),
            status: None,
            attempts: 0,
            duration_ms: 0,
            facts: Box::default(),
        }
    }
}

/// Pass 1: `id — first sentence` lines of the planner-allowed entries; the reply's ids
/// restrict the catalog for pass 2, which is compacted again against the same allowance.
/// When pass 1 gives nothing usable, the lexical selection stands and the record says so.
async fn filter_pass(
    ctx: &ReplayContext,
    endpoint: &crate::llm::provider::Endpoint,
    first: &Preview,
    asked: Asked<'_>,
    model: &str,
    cancel: &Cancel,
    progress: &mut (dyn FnMut(ReplayProgress) + Send),
) -> anyhow::Result<(TwoPass, Option<Preview>, u32)> {
    let guide = ctx.preview.catalog.guide();
    let offered: Vec<(&str, &str)> = guide
        .packs
        .iter()
        .map(|p| (p.name.as_str(), p.description.as_str()))
        .chain(
            guide
                .pipelines
                .iter()
                .map(|p| (p.id.as_str(), p.description.as_str())),
        )
        .filter(|(n, _)| first.planner.keeps(n))
        .collect();
    let known: HashSet<String> = offered.iter().map(|(n, _)| n.to_string()).collect();
    let call = ChatCall {
        messages: vec![
            ChatMessage {
                role: "system",
                content: SYSTEM_FILTER.to_string(),
            },
            ChatMessage {
                role: "user",
                content: format!(
                    "{}\nREQUEST:\n{}",
                    filter_lines(offered.iter().copied()),
                    asked.intent
                ),
            },
        ],
        max_tokens: FILTER_MAX_TOKENS,
        response_format: first.request.response_format,
        sampling: Sampling::default(),
    };
    let mut report = |p: Progress| {
        progress(ReplayProgress {
            model: model.to_string(),
            pass: Some(1),
            progress: p,
        })
    };
    let exchange = send(endpoint, &call, cancel, &mut report).await?;
    let attempts = exchange.attempts;
    let failure = match exchange.answer {
        Answer::Cancelled => None,
        Answer::Failed { failure, .. } => Some(failure),
        Answer::Reply { reply } => {
            let reading = read_reply(&reply, |v| filter_ids(v, &known));
            match reading.value {
                Some(mut ids) => {
                    ids.truncate(FILTER_MAX_IDS);
                    let only: HashSet<String> = ids.iter().cloned().collect();
                    let restricted = asked.request(ctx, model, Some(&only))?;
                    let note = format!(
                        "pass 1 picked {} of {} entries; pass 2 planned over them, re-checked against the budget",
                        ids.len(),
                        offered.len()
                    );
                    return Ok((
                        TwoPass {
                            offered: offered.len(),
                            picked: ids,
                            kept: 0,
                            failure: None,
                            note,
                        },
                        Some(restricted),
                        attempts,
                    ));
                }
                None => reading.failure,
            }
        }
    };
    let note = match &failure {
        Some(f) => format!("pass 1 failed ({}): the lexical selection stands", f.class),
        None => "pass 1 cancelled".to_string(),
    };
    Ok((
        TwoPass {
            offered: offered.len(),
            picked: Vec::new(),
            kept: 0,
            failure,
            note,
        },
        None,
        attempts,
    ))
}

#[cfg(test)]
mod tests {
    /// Tester 17 F6: a console send said "pass 2" with no pass 1; only a two-pass replay
    /// numbers its passes.
    #[test]
    fn only_a_two_pass_replay_numbers_its_passes() {
        let line = |pass| {
            super::ReplayProgress {
                model: "m".into(),
                pass,
                progress: crate::llm::client::Progress::Sending { attempt: 1 },
            }
            .line("pl-1")
        };
        assert_eq!(line(None), "pl-1 on m · sending");
        assert_eq!(line(Some(1)), "pl-1 on m · pass 1 · sending");
        assert_eq!(line(Some(2)), "pl-1 on m · pass 2 · sending");
    }

    use super::*;
    use crate::store::history::HistoryStore;
    use crate::workspace::{Workspace, WorkspaceOptions};

    /// The sample workspace's seeded store and a replay context over it (the directory is
    /// kept alive by the caller).
    fn sample_store() -> (tempfile::TempDir, HistoryStore, ReplayContext) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        })
        .unwrap();
        let store = ws.open_history(&Default::default()).unwrap();
        let ctx = ReplayContext::new(&ws, ws.preview_context(false)).unwrap();
        (dir, store, ctx)
    }

    /// Issue 18: offline replay of every stored answer in the sample store (all 668 plans,
    /// followed and failed) reproduces the stored result, or says why it differs.
    #[test]
    fn offline_replay_of_the_whole_sample_store_agrees_with_every_stored_class_or_says_why() {
        let (_dir, store, ctx) = sample_store();
        let guard = ctx.guard();
        let rows = store.plans(&Default::default(), 0, 100_000).unwrap();
        assert_eq!(rows.len(), 668);
        let (mut agreed, mut explained, mut recovered_now) = (0, 0, 0);
        for row in rows {
            let plan = store.plan(&row.id).unwrap().unwrap().record;
            let r = replay_offline(&plan, &guard);
            let today = r.failure.as_ref().map(|f| f.class.as_str());
            match (plan.outcome, r.verdict) {
                (Outcome::Failed, Verdict::Recovered) => {
                    // Today's decoder reads what the old one could not: stated by the verdict.
                    assert_eq!(plan.failure_class.as_deref(), Some("constrained_deadlock"));
                    recovered_now += 1;
                }
                (Outcome::Failed, _) if today == plan.failure_class.as_deref() => agreed += 1,
                (Outcome::Failed, _) => {
                    assert!(
                        r.class_note.is_some(),
                        "{}: {:?} → {today:?}",
                        plan.id,
                        plan.failure_class
                    );
                    explained += 1;
                }
                (_, Verdict::Recovered) => {
                    assert_eq!(
                        r.plan.as_ref().map(|p| p.outcome),
                        Some(plan.outcome),
                        "{}",
                        plan.id
                    );
                    agreed += 1;
                }
                (outcome, verdict) => {
                    // A followed plan with no raw answer kept (imported steps only) has
                    // nothing to replay.
                    assert!(
                        plan.raw_response
                            .as_deref()
                            .is_none_or(|t| t.trim().is_empty()),
                        "{}: stored {outcome}, today {verdict:?} {:?}",
                        plan.id,
                        r.failure
                    );
                    explained += 1;
                }
            }
        }
        assert!(agreed > 500, "{agreed}");
        assert!(
            recovered_now > 0 && explained > 0,
            "{recovered_now} {explained}"
        );
    }

    #[test]
    fn offline_replay_of_the_sample_recovers_prose_and_fences_and_names_the_stage() {
        let (_dir, store, ctx) = sample_store();
        let guard = ctx.guard();
        let mut results = Vec::new();
        for id in store.failed_plan_ids(None, 10_000).unwrap() {
            let plan = store.plan(&id).unwrap().unwrap().record;
            results.push(replay_offline(&plan, &guard));
        }
        assert!(results.len() > 50);
        let summary = summarise(&results);
        let deadlock = summary
            .iter()
            .find(|s| s.class == "constrained_deadlock")
            .unwrap();
        assert!(deadlock.recovered > 0 && deadlock.recovered < deadlock.plans);
        assert!(
            deadlock.stages.contains_key("fence") || deadlock.stages.contains_key("trailing_prose")
        );
        for s in &summary {
            if s.class != "constrained_deadlock" {
                assert_eq!(s.recovered, 0, "{s:?}");
            }
            assert_eq!(
                s.recovered + s.today.values().sum::<usize>(),
                s.plans,
                "{s:?}"
            );
        }
        // Today's classifier agrees with the stored class where it can judge.
        for r in &results {
            if r.verdict == Verdict::StillFailing && r.class_note.is_none() {
                assert_eq!(
                    r.failure.as_ref().map(|f| f.class.as_str()),
                    r.stored_class.as_deref(),
                    "{}",
                    r.plan_id
                );
            }
        }
    }
}
