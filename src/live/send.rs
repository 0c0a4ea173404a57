//! Sending a previewed request: what `ctxconsole send` and the console's send key share —
//! each A/B arm planned from the same ask, the comparison's id, and one model's call.

use crate::core::compare::Arm;
use crate::core::history::{PlanRecord, short_sha};
use crate::live::replay::{
    Link, LiveReplay, Prior, ReplayContext, ReplayProgress, endpoint_for, send_planned,
};
use crate::llm::client::Cancel;
use crate::preview::{Ask, Preview, PreviewContext, plan_and_keep};

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
        &ctx.guard(),
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
