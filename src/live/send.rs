//! Sending a previewed request: what `ctxconsole send` and the console's send key share,
//! as one flow — every model's A/B arms planned from the same ask and the baseline beside
//! them ([`plan_send`]), the calls made at most `llm.concurrency` at once ([`run_jobs`]),
//! and the answers stored with the baseline first so each plan carries its gap signal
//! ([`store_send`]). The front ends only say what to send and show what came back.

use std::sync::Arc;

use crate::core::as_sent::{SentWith, mark_baseline};
use crate::core::budget::EffectiveRow;
use crate::core::compare::Arm;
use crate::core::gap::GapSignal;
use crate::core::history::{PlanRecord, short_sha};
use crate::core::request::Attachment;
use crate::core::send_mark::SendMark;
use crate::live::baseline::{self, BaselineRun};
use crate::live::in_hand::InHand;
use crate::live::replay::{
    Link, LiveReplay, Prior, ReplayContext, ReplayProgress, endpoint_for, send_planned,
};
use crate::llm::client::Cancel;
use crate::preview::{Ask, Preview, PreviewContext, plan_and_keep, plan_unaided};
use crate::store::history::UnlinkedPlan;

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
    format!(
        "cmp-{}",
        stamped_id(at, &format!("{prompt}\n{models:?}\n{arms:?}"))
    )
}

/// `AT-HASH`: a time and 8 hex digits of a hash of the moment and `what`, so that two ids
/// made in one second differ (a comparison's group, a send's own id).
fn stamped_id(at: i64, what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{at}-{}", &short_sha(&format!("{nanos}\n{what}"))[..8])
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
    /// The call is over: what came of it and what the store did with it, as its line says.
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

/// What became of an answer as it came back.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// Stored under this id.
    Stored(String),
    /// In hand while another process holds the store's write lock and calls are still out.
    AwaitingLock,
    /// The store refused it: kept as a plan line (`LiveReplay::unsaved_plan`).
    Refused,
    /// Nothing to store (nothing was sent, or it was cancelled before an answer).
    Nothing,
}

/// What an answer's line says while it waits in hand for another process's write lock
/// ([`Kept::AwaitingLock`]).
pub const AWAITING_LOCK: &str =
    "in hand: waiting for the store's write lock (another process is writing)";

impl Kept {
    pub fn words(&self) -> String {
        match self {
            Kept::Stored(id) => format!("stored as {id}"),
            Kept::AwaitingLock => AWAITING_LOCK.into(),
            Kept::Refused => "not stored: kept as a plan line".into(),
            Kept::Nothing => "nothing to store".into(),
        }
    }

    fn of(live: &LiveReplay) -> Kept {
        match (&live.stored_id, &live.unsaved_plan) {
            (Some(id), _) => Kept::Stored(id.clone()),
            (None, Some(_)) => Kept::Refused,
            (None, None) => Kept::Nothing,
        }
    }
}

/// Reports one job's news: its index in the jobs, and the news.
pub type JobReport = Arc<dyn Fn(usize, JobNews) + Send + Sync>;

/// Make every call, at most `llm.concurrency` at once, each linked to `caller`, `intent`
/// and (the arms, not the baseline) the comparison `group`, and hand each answer to `store`
/// as it comes back, whichever answers first: stored then, not once the slowest model is
/// done (tester 22 F4: a send killed while one model was still out lost the answers already
/// back). What became of each is said on its line.
#[allow(clippy::too_many_arguments)]
pub async fn run_jobs(
    ctx: Arc<ReplayContext>,
    jobs: Vec<SendJob>,
    caller: &str,
    intent: &str,
    group: Option<&str>,
    cancel: &Cancel,
    report: JobReport,
    store: &mut SendStore<'_>,
) -> anyhow::Result<()> {
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
            // In hand at once, while it waits for the store (tester 12 T12-7: an answer
            // queued behind another's store was lost).
            .map(|(live, record)| {
                let secrets = &ctx.preview.secrets;
                (live, record.map(|r| InHand::new(r, secrets)))
            });
            (i, job, out)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        // Back: said at once, while the others may still be out (tester 22 F4), then what
        // the store did with it.
        if let Ok((i, _, Ok((live, _)))) = &joined {
            report(
                *i,
                JobNews::Back(format!("{} · storing", answered_line(live))),
            );
        }
        let last = tasks.is_empty();
        let settled = match joined {
            Ok((i, job, out)) => store.take(i, job, out, last),
            Err(e) => store.task_failed(anyhow::anyhow!("a send task failed: {e}"), last),
        };
        for (j, kept) in settled {
            report(j, JobNews::Back(store.line(j, &kept)));
        }
    }
    Ok(())
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

/// Where a send's answers are stored.
pub trait PlanSink: Send {
    /// Store `record`, returning the id it is stored under.
    fn insert(&mut self, record: &mut PlanRecord) -> anyhow::Result<String>;
    /// Whether another process holds the store's write lock at this moment, so that an
    /// insert now would wait for it. A probe that fails is "not held": the insert then says
    /// what is wrong.
    fn held_elsewhere(&mut self) -> bool;
    /// Give plans stored before the baseline came back (by id, with their outcome and
    /// steps) the baseline's steps and the gap signal those give.
    fn link_baseline(
        &mut self,
        baseline: &crate::core::history::Baseline,
        plans: &[UnlinkedPlan],
    ) -> anyhow::Result<()>;
}

/// The history store, as the sink of a send (`ctxconsole send` and the console alike).
pub struct HistorySink<'a> {
    pub store: &'a mut crate::store::history::HistoryStore,
    pub pipelines: &'a std::collections::HashSet<String>,
    /// When the send began (seconds): the stem of every plan it stores.
    pub started: i64,
}

impl PlanSink for HistorySink<'_> {
    fn insert(&mut self, record: &mut PlanRecord) -> anyhow::Result<String> {
        self.store
            .insert_sent(record, self.pipelines, Some(self.started))
    }

    fn held_elsewhere(&mut self) -> bool {
        self.store.writer_now().unwrap_or(false)
    }

    fn link_baseline(
        &mut self,
        baseline: &crate::core::history::Baseline,
        plans: &[UnlinkedPlan],
    ) -> anyhow::Result<()> {
        self.store.link_baseline(baseline, plans)
    }
}

/// An answer back and not yet stored.
struct Waiting {
    i: usize,
    job: SendJob,
    live: LiveReplay,
    answer: Option<InHand>,
}

/// Stores a send's answers as they come back, whichever answers first, through a
/// [`PlanSink`] — not once the slowest model is done (tester 22 F4: a send killed while one
/// model was still out lost the answers already back). With a baseline, a model's plan
/// stored before it is back gets the baseline's steps and its gap signal when the baseline
/// is stored (tester 36 F1: held in hand for it, they were lost to a kill while a slow
/// baseline was still out). An answer waits in hand only while a call is still out and
/// another process holds the store's write lock: storing now would wait for it (up to the
/// lock wait) inside the loop that receives the other answers and hears esc. It is tried
/// again as the next answer comes back, and waited for once only storing is left.
///
/// A call that failed outright (not an answer that failed: that is stored) fails the send
/// once the rest is stored — nothing already back is dropped for it. Once another process's
/// write lock has been waited out for one answer, the others are not tried: each is kept
/// with that reason, as each would wait as long again for the same refusal (tester 12 T12-7:
/// each arm waited the whole lock wait in turn, past the quit's bound). Any other refusal
/// (one answer too large for the disk) is the answer's own.
pub struct SendStore<'a> {
    sink: Box<dyn PlanSink + 'a>,
    /// Which send every answer is of, kept with each as it comes back.
    mark: SendMark,
    refused: Option<String>,
    /// A baseline job that has not come back yet.
    baseline_due: bool,
    baseline: Option<BaselineRun>,
    /// Models' plans stored before the baseline was back, for it to be linked to: their
    /// place in `arms`, id, outcome and steps.
    unlinked: Vec<(usize, UnlinkedPlan)>,
    waiting: Vec<Waiting>,
    arms: Vec<(usize, StoredArm)>,
    /// Each job's call as it came back, for its line.
    lives: std::collections::HashMap<usize, String>,
    failure: Option<anyhow::Error>,
    /// Every call is back: what waits is stored now, waiting for the lock if need be.
    only_storing: bool,
    /// Told once every call is back, before the last answers are stored, whether they wait
    /// for another process's write lock (storing, which nothing can cancel).
    storing_left: Option<Box<dyn FnMut(bool) + Send + 'a>>,
}

impl<'a> SendStore<'a> {
    /// For `jobs` (a baseline among them or not) of a send begun at `started`, storing into
    /// `sink`.
    pub fn new(jobs: &[SendJob], started: i64, sink: impl PlanSink + 'a) -> Self {
        let with_baseline = jobs.iter().any(|j| j.baseline);
        SendStore {
            sink: Box::new(sink),
            mark: SendMark {
                id: send_id(started, jobs),
                started,
                with_baseline,
            },
            refused: None,
            baseline_due: with_baseline,
            baseline: None,
            unlinked: Vec::new(),
            waiting: Vec::new(),
            arms: Vec::new(),
            lives: std::collections::HashMap::new(),
            failure: None,
            only_storing: false,
            storing_left: None,
        }
    }

    /// Call `say` once every call is back, before the last answers are stored, with whether
    /// they wait for another process's write lock.
    pub fn when_only_storing_is_left(mut self, say: impl FnMut(bool) + Send + 'a) -> Self {
        self.storing_left = Some(Box::new(say));
        self
    }

    fn only_storing_left(&mut self) {
        self.only_storing = true;
        if let Some(mut say) = self.storing_left.take() {
            let to_store = self.waiting.iter().any(|w| w.answer.is_some());
            say(to_store && self.sink.held_elsewhere());
        }
    }

    /// The sink's insert, unless the store's write lock was waited out already.
    fn insert_once(&mut self, record: &mut PlanRecord) -> anyhow::Result<String> {
        if let Some(why) = &self.refused {
            anyhow::bail!("{why}");
        }
        self.sink.insert(record).inspect_err(|e| {
            if crate::store::sqlite::waited_out_for_the_lock(e) {
                self.refused = Some(crate::exit::said(e));
            }
        })
    }

    /// A call that failed outright: the send fails once the rest is stored.
    pub fn failed(&mut self, e: anyhow::Error) {
        if self.failure.is_none() {
            self.failure = Some(e);
        }
    }

    /// A call's task failed (it panicked): the send fails once the rest is stored.
    fn task_failed(&mut self, e: anyhow::Error, last: bool) -> Vec<(usize, Kept)> {
        self.failed(e);
        if last {
            self.only_storing_left();
        }
        self.settle()
    }

    /// Job `i`'s outcome, back (`last`: no call is out any more). What became of each answer
    /// waiting, by job: this one (not for a call that failed outright) and those it let go
    /// into the store.
    pub fn take(
        &mut self,
        i: usize,
        job: SendJob,
        outcome: CallOutcome,
        last: bool,
    ) -> Vec<(usize, Kept)> {
        match outcome {
            Ok((live, mut answer)) => {
                self.lives.insert(i, answered_line(&live));
                // Kept with the answer from now on: a line written out while it waits for
                // the store says what the stored plan would (tester 37 T37-2).
                if let Some(a) = answer.as_mut() {
                    a.amend(|r| {
                        job.sent_with.keep_in(&mut r.trim_record);
                        self.mark.keep_in(&mut r.trim_record);
                        if job.baseline {
                            mark_baseline(r, &job.request);
                        }
                    });
                }
                self.waiting.push(Waiting {
                    i,
                    job,
                    live,
                    answer,
                });
            }
            Err(e) => {
                self.failed(e);
                if job.baseline {
                    self.baseline_due = false;
                }
            }
        }
        if last {
            self.only_storing_left();
        }
        self.settle()
    }

    /// Store what may be stored now — the baseline first — and say what waits, and why.
    fn settle(&mut self) -> Vec<(usize, Kept)> {
        // Probed at most once a round: an answer stored now would wait for that writer.
        let mut lock_free: Option<bool> = None;
        let mut settled = Vec::new();
        for baseline_round in [true, false] {
            let mut k = 0;
            while k < self.waiting.len() {
                let (i, is_baseline, has_answer) = {
                    let w = &self.waiting[k];
                    (w.i, w.job.baseline, w.answer.is_some())
                };
                if is_baseline != baseline_round {
                    k += 1;
                    continue;
                }
                if has_answer
                    && !*lock_free
                        .get_or_insert_with(|| self.only_storing || !self.sink.held_elsewhere())
                {
                    settled.push((i, Kept::AwaitingLock));
                    k += 1;
                    continue;
                }
                let w = self.waiting.remove(k);
                let kept = if is_baseline {
                    self.store_baseline(w)
                } else {
                    self.store_arm(w)
                };
                settled.push((i, kept));
            }
        }
        settled
    }

    fn store_baseline(&mut self, w: Waiting) -> Kept {
        let Waiting {
            job, live, answer, ..
        } = w;
        self.baseline_due = false;
        let mut insert = |r: &mut PlanRecord| self.insert_once(r);
        match baseline::store(live, answer, &job.request, &mut insert) {
            Ok(run) => {
                let kept = Kept::of(&run.live);
                self.link_stored_arms(run.steps.as_ref());
                self.baseline = Some(run);
                kept
            }
            Err(e) => {
                self.failed(e);
                Kept::Nothing
            }
        }
    }

    /// The models' plans stored before the baseline was back get its steps, when it planned.
    fn link_stored_arms(&mut self, baseline: Option<&crate::core::history::Baseline>) {
        let unlinked = std::mem::take(&mut self.unlinked);
        let Some(b) = baseline else {
            return;
        };
        if unlinked.is_empty() {
            return;
        }
        let (places, plans): (Vec<usize>, Vec<UnlinkedPlan>) = unlinked.into_iter().unzip();
        match self.sink.link_baseline(b, &plans) {
            Ok(()) => {
                for (at, (_, outcome, steps)) in places.into_iter().zip(plans) {
                    if let Some((_, arm)) = self.arms.get_mut(at) {
                        arm.gap = crate::core::gap::gap_signal(outcome, &steps, &b.steps);
                    }
                }
            }
            Err(e) => self.failed(e.context(
                "the models' plans are stored, without the baseline's steps and gap signal",
            )),
        }
    }

    fn store_arm(&mut self, w: Waiting) -> Kept {
        let Waiting {
            i,
            job,
            mut live,
            answer,
        } = w;
        let mut gap = None;
        if let Some(mut answer) = answer {
            let expert = self.baseline.as_ref().and_then(|b| b.steps.as_ref());
            gap = baseline::attach(&live, &mut answer.record, expert);
            // Linked when the baseline is back (an answer that could not run never is).
            let link = (self.baseline_due && live.could_not_run().is_none())
                .then(|| (answer.record.outcome, answer.record.steps.clone()));
            if let (Some(id), Some((outcome, steps))) =
                (live.store_in_hand(answer, |r| self.insert_once(r)), link)
            {
                self.unlinked.push((self.arms.len(), (id, outcome, steps)));
            }
        }
        let kept = Kept::of(&live);
        self.arms.push((
            i,
            StoredArm {
                model: job.model,
                arm: job.arm,
                same_as_compacted: job.same_as_compacted,
                catalog_total: job.request.compaction.entries.len(),
                prior_tokens: job.request.past_steps.as_ref().map_or(0, |p| p.tokens),
                live,
                gap,
            },
        ));
        kept
    }

    /// Job `i`'s line once it is back and `kept` says what the store did with it.
    pub fn line(&self, i: usize, kept: &Kept) -> String {
        format!(
            "{} · {}",
            self.lives.get(&i).map_or("", String::as_str),
            kept.words()
        )
    }

    /// Every call is back: anything still waiting is stored (a baseline that never came
    /// back leaves its models' answers without steps), and the send's answers as stored, in
    /// job order — or the first call that failed outright.
    pub fn finish(mut self) -> anyhow::Result<StoredSend> {
        self.only_storing = true;
        self.baseline_due = false;
        let _ = self.settle();
        if let Some(e) = self.failure {
            return Err(e);
        }
        self.arms.sort_by_key(|(i, _)| *i);
        Ok(StoredSend {
            arms: self.arms.into_iter().map(|(_, a)| a).collect(),
            baseline: self.baseline,
        })
    }
}

/// A send's own id: its start and a hash of the moment, the process and what it asks.
fn send_id(started: i64, jobs: &[SendJob]) -> String {
    let models: Vec<&str> = jobs.iter().map(|j| j.model.as_str()).collect();
    stamped_id(started, &format!("{}\n{models:?}", std::process::id()))
}

/// A call's line once it is over, before what the store did with it: `on MODEL · back in 5
/// ms · valid plan yes (ok)`, or why nothing came (`not sent`, `cancelled`) (tester 22 F4: an
/// answer back in 5 ms read `receiving 90 B answer` for the 10 s the slowest model took).
fn answered_line(live: &LiveReplay) -> String {
    let what = if live.not_sent.is_some() || live.cancelled {
        live.valid_plan_cell()
    } else {
        format!(
            "back in {} ms · valid plan {}",
            live.facts.latency_ms,
            live.valid_plan_cell()
        )
    };
    format!("on {} · {what}", live.model)
}
