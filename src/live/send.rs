//! Sending a previewed request: what `ctxconsole send` and the console's send key share,
//! as one flow — every model's A/B arms planned from the same ask and the baseline beside
//! them ([`plan_send`]), the calls made at most `llm.concurrency` at once ([`run_jobs`]),
//! and the answers stored with the baseline first so each plan carries its gap signal
//! ([`store_send`]). The front ends only say what to send and show what came back.

use std::sync::Arc;

use crate::core::as_sent::SentWith;
use crate::core::budget::EffectiveRow;
use crate::core::compare::Arm;
use crate::core::gap::GapSignal;
use crate::core::history::{PlanRecord, short_sha};
use crate::core::request::Attachment;
use crate::live::baseline::{self, BaselineRun};
use crate::live::in_hand::InHand;
use crate::live::replay::{
    Link, LiveReplay, Prior, ReplayContext, ReplayProgress, endpoint_for, send_planned,
};
use crate::llm::client::Cancel;
use crate::preview::{Ask, Preview, PreviewContext, plan_and_keep, plan_unaided};

/// One arm's request, and whether it is byte for byte the `compacted` one (then any
/// difference between the two answers is the model's own variance).
pub struct PlannedArm {
    pub arm: Arm,
    pub request: Preview,
    pub same_as_compacted: bool,
}

/// The request for each arm of `ask` (its own `arm` is ignored), in the order given.
pub fn plan_arms(
    ctx: &PreviewContext,
    ask: &Ask<'_>,
    arms: &[Arm],
) -> anyhow::Result<Vec<PlannedArm>> {
    let mut compacted: Option<crate::core::assemble::AssembledRequest> = None;
    let mut out = Vec::with_capacity(arms.len());
    for &arm in arms {
        let request = plan_and_keep(ctx, &Ask { arm, ..*ask })?;
        let same_as_compacted = compacted.as_ref().is_some_and(|c| {
            c.messages == request.request.messages
                && c.max_tokens == request.request.max_tokens
                && c.response_format == request.request.response_format
        });
        if arm == Arm::Compacted {
            compacted = Some(request.request.clone());
        }
        out.push(PlannedArm {
            arm,
            request,
            same_as_compacted,
        });
    }
    Ok(out)
}

/// What links the arms of one send in the store: the time, and a hash of what was sent.
pub fn compare_group(at: i64, prompt: &str, models: &[String], arms: &[Arm]) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "cmp-{at}-{}",
        &short_sha(&format!("{nanos}\n{prompt}\n{models:?}\n{arms:?}"))[..8]
    )
}

/// Who asks, for what, and in which comparison (`None`: in none).
pub struct SendLink<'a> {
    pub caller: &'a str,
    pub intent: &'a str,
    pub compare: Option<(Arm, &'a str)>,
}

/// Send `request` to `model`, at most as many at once as `gate` lets through: the answer
/// classified, decoded and guarded, and the record to store (none when nothing was sent).
pub async fn send_one(
    ctx: &ReplayContext,
    model: &str,
    request: &Preview,
    link: SendLink<'_>,
    gate: &tokio::sync::Semaphore,
    cancel: &Cancel,
    report: &mut (dyn FnMut(ReplayProgress) + Send),
) -> anyhow::Result<(LiveReplay, Option<PlanRecord>)> {
    let started = std::time::Instant::now();
    let endpoint = match endpoint_for(ctx, model, request) {
        Ok(e) => e,
        Err(not_sent) => return Ok((*not_sent, None)),
    };
    let Ok(_permit) = gate.acquire().await else {
        anyhow::bail!("the concurrency gate closed");
    };
    let link = Link {
        caller: link.caller,
        intent: link.intent,
        replay_of: None,
        compare: link.compare,
    };
    let prior = Prior {
        started,
        attempts: 0,
        two_pass: None,
    };
    send_planned(
        &ctx.guard_for(request),
        &endpoint,
        request,
        model,
        link,
        prior,
        cancel,
        report,
    )
    .await
}

/// What one send asks for.
pub struct SendAsk<'a> {
    pub prompt: &'a str,
    pub attachments: &'a [Attachment],
    pub defaults: &'a str,
    /// Each model as the Preview plans it, in the order named.
    pub targets: &'a [EffectiveRow],
    /// `compacted` and the arms compared with it (`compacted` alone: no comparison).
    pub arms: &'a [Arm],
    /// The model asked unaided beside them (whole catalog, no planner, no prior), if any.
    pub baseline: Option<&'a str>,
}

impl SendAsk<'_> {
    /// Whether the arms are compared (more than `compacted`), so linked by one group.
    pub fn comparing(&self) -> bool {
        self.arms.iter().any(|&a| a != Arm::Compacted)
    }
}

/// How a call is named beside the others: `model [arm]`, or `model [baseline]`.
pub fn call_label(model: &str, arm: Arm, baseline: bool) -> String {
    if baseline {
        format!("{model} [baseline]")
    } else {
        format!("{model} [{arm}]")
    }
}

/// One call of a send.
pub struct SendJob {
    pub model: String,
    pub arm: Arm,
    pub request: Preview,
    /// Byte for byte the `compacted` request (then any difference is the model's variance).
    pub same_as_compacted: bool,
    /// The baseline: stored first, in no comparison.
    pub baseline: bool,
    /// What it carries beside the instruction that the store does not keep (the
    /// attachments, the tier override): kept in the stored plan's trim record, so a replay
    /// can say what it could not send again.
    pub sent_with: SentWith,
}

/// Every call of a send: each target's arms in order, then the baseline last.
pub fn plan_send(ctx: &PreviewContext, ask: &SendAsk) -> anyhow::Result<Vec<SendJob>> {
    let mut jobs = Vec::with_capacity(ask.targets.len() * ask.arms.len() + 1);
    for effective in ask.targets {
        let each = Ask {
            effective,
            instruction: ask.prompt,
            attachments: ask.attachments,
            defaults: ask.defaults,
            only: None,
            arm: Arm::Compacted,
        };
        for planned in plan_arms(ctx, &each, ask.arms)? {
            let r = &planned.request;
            let sent_with = SentWith::of(
                ask.attachments,
                &r.attachments,
                r.tier_overridden.then_some(r.tier),
                ask.defaults,
            );
            jobs.push(SendJob {
                model: effective.model.clone(),
                arm: planned.arm,
                request: planned.request,
                same_as_compacted: planned.same_as_compacted,
                baseline: false,
                sent_with,
            });
        }
    }
    if let Some(b) = ask.baseline {
        // The baseline is planned at its own row's tier: no override reaches it.
        let request = plan_unaided(ctx, b, ask.prompt, ask.attachments, ask.defaults)?;
        let sent_with = SentWith::of(ask.attachments, &request.attachments, None, ask.defaults);
        jobs.push(SendJob {
            model: b.to_string(),
            arm: Arm::Compacted,
            request,
            same_as_compacted: false,
            baseline: true,
            sent_with,
        });
    }
    Ok(jobs)
}

/// One call's answer and the record to store (none when nothing was sent), in hand
/// (`live::in_hand`) from the moment it came back until it is stored.
pub type CallOutcome = anyhow::Result<(LiveReplay, Option<InHand>)>;

/// What one job of a send says while the send runs: its call's progress, or that its answer
/// is back whole, while others may still be out.
#[derive(Debug, Clone, PartialEq)]
pub enum JobNews {
    Progress(ReplayProgress),
    /// The call is over: what came of it, as its line says it ([`answered_line`]).
    Back(String),
}

impl JobNews {
    /// The job's line under `label` (`model [arm]`): `… · receiving 1.2 KB answer, …`, or
    /// `… · back in 5 ms · valid plan yes (ok) · …`.
    pub fn line(&self, label: &str) -> String {
        match self {
            JobNews::Progress(p) => p.line(label),
            JobNews::Back(line) => format!("{label} {line}"),
        }
    }
}

/// A call's line once it is over, after its label: `on MODEL · back in 5 ms · valid plan yes
/// (ok)`, or why nothing came (`not sent`, `cancelled`); stored once every call of the send is
/// back (tester 22 F4: an answer back in 5 ms read `receiving 90 B answer` for the 10 s the
/// slowest model took).
pub fn answered_line(live: &LiveReplay) -> String {
    let what = if live.not_sent.is_some() || live.cancelled {
        live.valid_plan_cell()
    } else {
        format!(
            "back in {} ms · valid plan {}",
            live.facts.latency_ms,
            live.valid_plan_cell()
        )
    };
    format!(
        "on {} · {what} · stored once every call is back",
        live.model
    )
}

/// Reports one job's news: its index in the jobs, and the news.
pub type JobReport = Arc<dyn Fn(usize, JobNews) + Send + Sync>;

/// Make every call, at most `llm.concurrency` at once, each linked to `caller`, `intent`
/// and (the arms, not the baseline) the comparison `group`. Returns each job with its
/// outcome, in job order whichever answered first.
pub async fn run_jobs(
    ctx: Arc<ReplayContext>,
    jobs: Vec<SendJob>,
    caller: &str,
    intent: &str,
    group: Option<&str>,
    cancel: &Cancel,
    report: JobReport,
) -> anyhow::Result<Vec<(SendJob, CallOutcome)>> {
    // The one name rule for every name a plan is stored under, whichever front end
    // asked: a plan whose caller or model breaks it could not be imported back.
    if let Some((field, problem)) = crate::core::budget::first_name_problem(
        std::iter::once(("caller", caller)).chain(jobs.iter().map(|j| ("model", j.model.as_str()))),
    ) {
        anyhow::bail!("a {field} {problem}: nothing was sent");
    }
    let gate = Arc::new(tokio::sync::Semaphore::new(ctx.providers.concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, job) in jobs.into_iter().enumerate() {
        let (ctx, gate, cancel, report) =
            (ctx.clone(), gate.clone(), cancel.clone(), report.clone());
        let (caller, intent) = (caller.to_string(), intent.to_string());
        let group = group.map(str::to_string);
        tasks.spawn(async move {
            let link = SendLink {
                caller: &caller,
                intent: &intent,
                compare: group
                    .as_deref()
                    .filter(|_| !job.baseline)
                    .map(|g| (job.arm, g)),
            };
            let mut progress = |p: ReplayProgress| report(i, JobNews::Progress(p));
            let out = send_one(
                &ctx,
                &job.model,
                &job.request,
                link,
                &gate,
                &cancel,
                &mut progress,
            )
            .await
            // Back: said at once, while the others may still be out (tester 22 F4).
            .inspect(|(live, _)| report(i, JobNews::Back(answered_line(live))))
            // In hand at once, while it waits for the others and for the store
            // (tester 12 T12-7: an answer queued behind another's store was lost).
            .map(|(live, record)| {
                let secrets = &ctx.preview.secrets;
                (live, record.map(|r| InHand::new(r, secrets)))
            });
            (i, job, out)
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        done.push(joined.map_err(|e| anyhow::anyhow!("a send task failed: {e}"))?);
    }
    done.sort_by_key(|(i, ..)| *i);
    Ok(done.into_iter().map(|(_, job, out)| (job, out)).collect())
}

/// One arm's answer as stored.
pub struct StoredArm {
    pub model: String,
    pub arm: Arm,
    pub same_as_compacted: bool,
    /// Entries of the catalog the request carried, and the prior's tokens in it.
    pub catalog_total: usize,
    pub prior_tokens: usize,
    pub live: LiveReplay,
    /// This plan against the baseline's steps, as stored with it.
    pub gap: Option<GapSignal>,
}

/// A send's answers as stored.
pub struct StoredSend {
    /// Every arm of every model, in job order (the baseline not among them).
    pub arms: Vec<StoredArm>,
    pub baseline: Option<BaselineRun>,
}

/// Store every answer through `insert` (which returns the stored id): the baseline first,
/// so each plan stored after it carries the baseline's steps and its gap signal. A call
/// that failed outright (not an answer that failed: that is stored) fails the whole send.
/// Once another process's write lock has been waited out for one answer, the others are
/// not tried: each is kept with that reason, as each would wait as long again for the same
/// refusal (tester 12 T12-7: each arm waited the whole lock wait in turn, past the quit's
/// bound). Any other refusal (one answer too large for the disk) is the answer's own.
pub fn store_send(
    mut outcomes: Vec<(SendJob, CallOutcome)>,
    mut insert: impl FnMut(&mut PlanRecord) -> anyhow::Result<String>,
) -> anyhow::Result<StoredSend> {
    let mut refused: Option<String> = None;
    let mut insert = |record: &mut PlanRecord| match &refused {
        Some(why) => Err(anyhow::anyhow!("{why}")),
        None => insert(record).inspect_err(|e| {
            if crate::store::sqlite::waited_out_for_the_lock(e) {
                refused = Some(format!("{e:#}"));
            }
        }),
    };
    let baseline = match outcomes.iter().position(|(job, _)| job.baseline) {
        Some(k) => {
            let (job, out) = outcomes.remove(k);
            let (live, mut answer) = out?;
            if let Some(a) = answer.as_mut() {
                job.sent_with.keep_in(&mut a.record.trim_record);
            }
            Some(baseline::store(live, answer, &job.request, &mut insert)?)
        }
        None => None,
    };
    let expert = baseline.as_ref().and_then(|b| b.steps.as_ref());
    let mut arms = Vec::with_capacity(outcomes.len());
    for (job, out) in outcomes {
        let (mut live, answer) = out?;
        let mut gap = None;
        if let Some(mut answer) = answer {
            job.sent_with.keep_in(&mut answer.record.trim_record);
            gap = baseline::attach(&live, &mut answer.record, expert);
            live.store_in_hand(answer, &mut insert);
        }
        arms.push(StoredArm {
            model: job.model,
            arm: job.arm,
            same_as_compacted: job.same_as_compacted,
            catalog_total: job.request.compaction.entries.len(),
            prior_tokens: job.request.past_steps.as_ref().map_or(0, |p| p.tokens),
            live,
            gap,
        });
    }
    Ok(StoredSend { arms, baseline })
}
