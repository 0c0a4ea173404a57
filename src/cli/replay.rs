//! `ctxconsole replay`: a stored plan read again with today's decoder (`--offline`), or sent
//! again with today's budget, compaction and prompt to one or more models and stored as a
//! new plan linked to the original. `--failed` does every failed plan and sums up per class.

use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::as_sent::{SentWith, is_baseline};
use crate::core::history::PlanRecord;
use crate::core::response::DecodeStage;
use crate::core::terminal_text::one_line;
use crate::core::text::clip;
use crate::core::time::format_minute;
use crate::live::replay::{
    ClassSummary, ClassTally, LiveReplay, OfflineReplay, ReplayContext, ReplayProgress, Tallied,
    Verdict, every_answer_stored, replay_live, replay_offline, summarise, unsaved_plans,
};
use crate::llm::client::Cancel;
use crate::store::history::HistoryStore;
use crate::store::now_secs;
use crate::workspace::StoreChoice;

/// What `replay --help` says about exit codes (README, "Responses and replay", says the same).
const EXIT_CODES: &str = "\
Exit codes: 0 when every requested replay ran (and, live, was stored); 1 when any could not \
run — the table (or --json) still shows every replay; 2 for bad input (an unknown plan id, \
a bad option).
A live replay could not run when nothing was sent (no provider takes the model, or its key \
variable is not set), or when no whole answer came back: no connection, a timeout, a stream \
cut off (transport), an error status after the retries (http_error), a body that is not a \
chat completion or is over llm.max_reply_bytes (protocol). A model that answered — a \
refusal, a length cut, prose, a made-up tool — ran: that is a result. One model that could \
not run never stops the others.";

#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    /// The plan to replay (see `ctxconsole history`).
    #[arg(
        value_name = "PLAN_ID",
        required_unless_present = "failed",
        conflicts_with = "failed"
    )]
    pub plan: Option<String>,
    /// Replay every failed plan and sum up per failure class.
    #[arg(long)]
    pub failed: bool,
    /// Today's decoder and classifier on the stored raw response; nothing is sent.
    #[arg(long)]
    pub offline: bool,
    /// Send to this model instead of the plan's own; repeat for side-by-side results.
    #[arg(long = "model", value_name = "ID", conflicts_with = "offline", value_parser = crate::cli::parse_model_id)]
    pub models: Vec<String>,
    /// With --failed: only plans since a duration ago (7d) or a time.
    #[arg(long, value_name = "WHEN", requires = "failed")]
    pub since: Option<String>,
    /// With --failed: at most this many plans, oldest first.
    #[arg(long, default_value_t = 10_000)]
    pub limit: u64,
    #[arg(long)]
    pub json: bool,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let (ws, mut history) = crate::cli::history::open(workspace, &store)?;
    let mut preview = ws.preview_context(true);
    // Only a live replay ranks the catalog; offline reads the stored response alone.
    if !args.offline {
        history.check_writable("a live replay, which stores every answer (nothing was sent),")?;
        say_if_store_busy(&history)?;
        ws.history_ranking(&history)?.apply(&mut preview);
        // Today's request, as `preview` builds it: with the past-plans part where the
        // store has the evidence.
        preview.past_steps = Some(Arc::new(ws.past_steps(&history)?));
    }
    let ctx = ReplayContext::new(&ws, preview)?;
    let originals = match &args.plan {
        Some(id) => vec![load(&history, id)?],
        None => {
            let since = args
                .since
                .as_deref()
                .map(|s| crate::cli::history::since_secs(s, now_secs()))
                .transpose()?;
            let ids = history.failed_plan_ids(since, args.limit)?;
            ids.iter()
                .map(|id| load(&history, id))
                .collect::<anyhow::Result<Vec<_>>>()?
        }
    };
    if args.offline {
        let results: Vec<OfflineReplay> = originals
            .iter()
            .map(|p| replay_offline(p, &ctx.guard()))
            .collect();
        return if args.failed {
            offline_summary(&results, args.json)
        } else {
            offline_one(&originals[0], &results[0], args.json)
        };
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // A signal cancels the call in flight and sends no more; what came back is printed and
    // stored, and a line says what the cut left (tester 31 F3: `replay --failed` cut by
    // Ctrl-C ended silent, with 3 of 114 replays stored).
    let cancel = Cancel::default();
    let on_interrupt = crate::cli::out::cancel_on_interrupt(&cancel, &ws.dir);
    let mut plans = Vec::new();
    let (mut wanted, mut not_started) = (0usize, 0usize);
    for original in &originals {
        let models = if args.models.is_empty() {
            vec![original.model.clone()]
        } else {
            args.models.clone()
        };
        wanted += models.len();
        let mut replays = Vec::new();
        for model in &models {
            if cancel.is_cancelled() {
                not_started += 1;
                continue;
            }
            let (mut replay, record) = rt.block_on(live_one(&ctx, original, model, &cancel))?;
            if let Some(record) = record {
                replay.store_with(record, &ctx.preview.secrets, |r| {
                    history.insert_replay(r, &ctx.pipelines)
                });
            }
            replays.push(replay);
        }
        if !replays.is_empty() {
            plans.push(LivePlan {
                original: Original::of(original),
                replays,
            });
        }
    }
    let interrupted = on_interrupt.as_ref().and_then(|i| i.came());
    // The call in flight when the signal came gave nothing: it is said with the replays
    // not made, not tallied as a failure of its class (tester 33 F7, tester 34 F9: it read
    // "still failing", and a model never sent had a time and an attempt).
    let mut in_flight = 0;
    if interrupted.is_some() {
        for p in &mut plans {
            let before = p.replays.len();
            p.replays.retain(|r| !r.cancelled);
            in_flight += before - p.replays.len();
        }
        plans.retain(|p| !p.replays.is_empty());
    }
    if args.failed {
        live_summary(&plans, args.json)?;
    } else if let Some(plan) = plans.first() {
        live_side_by_side(plan, args.json)?;
    }
    if !args.json {
        print_unsaved_plans(plans.iter().flat_map(|p| &p.replays))?;
    }
    every_answer_stored(plans.iter().flat_map(|p| &p.replays))?;
    if let Some((signal, number)) = interrupted {
        return Err(anyhow::Error::new(crate::exit::Interrupted {
            signal,
            number,
            what: interrupted_note(&plans, wanted, not_started + in_flight, in_flight > 0),
        }));
    }
    every_replay_ran(&plans)
}

/// What a cut replay run left, in one line: the replays stored (each linked to its
/// original) of the `wanted`, and those not made (`not_made`: never sent, and the call in
/// flight when `in_flight`).
fn interrupted_note(plans: &[LivePlan], wanted: usize, not_made: usize, in_flight: bool) -> String {
    let stored = plans
        .iter()
        .flat_map(|p| &p.replays)
        .filter(|r| r.stored_id.is_some())
        .count();
    format!(
        "{stored} of {} stored, each linked to its original; {not_made} not made{}",
        crate::format::counted(wanted, "replay", "replays"),
        if in_flight {
            " (the call in flight was cancelled, nothing of it stored; the rest never sent)"
        } else {
            " (never sent)"
        }
    )
}

/// Before a command pays for answers: when another process is writing the store now (an
/// import holding the write lock), say on stderr that storing them will wait for it, so the
/// operator can stop before anything is sent. Nothing when the store is free.
pub fn say_if_store_busy(history: &crate::store::history::HistoryStore) -> anyhow::Result<()> {
    if let Some(note) = history.writer_note()? {
        crate::cli::out::eprint_line(&format!(
            "ctxconsole: {note}, and one that cannot be is printed whole as a plan line"
        ));
    }
    Ok(())
}

/// The text output's last part when the store could not take some answers: each whole, as a
/// plan line `import plans` reads back (JSON escaped as `--json` is, so it reads back
/// exactly), under a heading saying so. Nothing when every answer was stored.
pub fn print_unsaved_plans<'a>(
    answers: impl IntoIterator<Item = &'a LiveReplay>,
) -> anyhow::Result<()> {
    crate::cli::out::print_plan_lines(&unsaved_plans(answers))
}

/// A runtime failure (exit 1) naming the replays that could not run, once every result
/// is printed; `Ok` when all ran.
fn every_replay_ran(plans: &[LivePlan]) -> anyhow::Result<()> {
    const NAMED: usize = 10;
    let total: usize = plans.iter().map(|p| p.replays.len()).sum();
    let not_run: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.replays.iter().filter_map(move |r| {
                r.could_not_run()
                    .map(|why| format!("{} on {} ({why})", p.original.id, r.model))
            })
        })
        .collect();
    if not_run.is_empty() {
        return Ok(());
    }
    let mut named = not_run[..not_run.len().min(NAMED)].join("; ");
    if not_run.len() > NAMED {
        named.push_str(&format!("; and {} more", not_run.len() - NAMED));
    }
    Err(anyhow::anyhow!(
        "{} of {total} replay{} could not run: {named}",
        not_run.len(),
        if total == 1 { "" } else { "s" }
    ))
}

fn load(history: &HistoryStore, id: &str) -> anyhow::Result<PlanRecord> {
    Ok(history.plan_held(id)?.record)
}

/// One live replay, with a progress line on a terminal's stderr.
async fn live_one(
    ctx: &ReplayContext,
    original: &PlanRecord,
    model: &str,
    cancel: &Cancel,
) -> anyhow::Result<(LiveReplay, Option<PlanRecord>)> {
    let tty = std::io::stderr().is_terminal();
    let mut report = |p: ReplayProgress| {
        if tty {
            crate::cli::out::status_line(&p.line(&original.id));
        }
    };
    let live = replay_live(ctx, original, model, cancel, &mut report).await?;
    if tty {
        crate::cli::out::clear_status_line();
    }
    Ok(live)
}

#[derive(Debug, Serialize)]
struct Original {
    id: String,
    at: i64,
    caller: String,
    model: String,
    intent: String,
    outcome: String,
    failure_class: Option<String>,
    finish_reason: Option<String>,
    steps: Vec<String>,
    /// A baseline plan (whole catalog, no planner help): replayed as one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    baseline: bool,
    /// What it was sent with beside the instruction (attachments, a tier override).
    #[serde(skip_serializing_if = "SentWith::is_empty")]
    sent_with: SentWith,
    /// How its answer was decoded, its request and its time, as the store kept them (a plan
    /// sent or replayed from here; an imported one has none): the table set `-` beside
    /// today's although the store held them (tester 15 F9).
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<SentRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u64>,
}

/// The request a stored plan was sent with (its trim record's `replay` part).
#[derive(Debug, Serialize)]
struct SentRequest {
    input_tokens: u64,
    catalog_entries: u64,
    max_tokens: u64,
}

impl SentRequest {
    fn cell(&self) -> String {
        format!(
            "{} tok in, {} entries, max {}",
            self.input_tokens, self.catalog_entries, self.max_tokens
        )
    }
}

/// `time` as the table shows it: duration, and attempts when known.
fn time_cell(duration_ms: u128, attempts: Option<u64>) -> String {
    match attempts {
        Some(a) => format!("{duration_ms} ms, {a} attempt(s)"),
        None => format!("{duration_ms} ms"),
    }
}

impl Original {
    fn of(p: &PlanRecord) -> Original {
        // Read as the store kept it: a field of another type is unknown, not an error.
        let sent = p.trim_record.as_ref().and_then(|t| t.get("replay"));
        let number = |k: &str| {
            sent.and_then(|s| s.get(k))
                .and_then(serde_json::Value::as_u64)
        };
        let request = match (
            number("input_tokens"),
            number("catalog_entries"),
            number("max_tokens"),
        ) {
            (Some(input_tokens), Some(catalog_entries), Some(max_tokens)) => Some(SentRequest {
                input_tokens,
                catalog_entries,
                max_tokens,
            }),
            _ => None,
        };
        Original {
            id: p.id.clone(),
            at: p.at,
            caller: p.caller.clone(),
            model: p.model.clone(),
            intent: p.intent.clone(),
            outcome: p.outcome.as_str().to_string(),
            failure_class: p.failure_class.clone(),
            finish_reason: p.finish_reason.clone(),
            steps: p.steps.iter().map(|s| s.tool.clone()).collect(),
            baseline: is_baseline(p.trim_record.as_ref()),
            sent_with: SentWith::from_trim(p.trim_record.as_ref()),
            stage: sent
                .and_then(|s| s.get("stage"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            request,
            duration_ms: p.duration_ms.filter(|d| *d >= 0),
            attempts: number("attempts"),
        }
    }
}

#[derive(Debug, Serialize)]
struct LivePlan {
    original: Original,
    replays: Vec<LiveReplay>,
}

fn offline_one(original: &PlanRecord, r: &OfflineReplay, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::json!({
            "original": Original::of(original),
            "offline": r,
        }));
    }
    let mut out = format!(
        "{}  {}  {}  {}{}\n  {}\n",
        r.plan_id,
        format_minute(r.at),
        r.model,
        r.outcome,
        r.stored_class
            .as_deref()
            .map_or(String::new(), |c| format!(": {c}")),
        one_line(&original.intent, 100),
    );
    out.push_str(&verdict_text(r));
    emit(&out)
}

fn verdict_text(r: &OfflineReplay) -> String {
    let mut out = String::new();
    match (r.verdict, &r.plan, &r.failure) {
        (Verdict::Recovered, Some(plan), _) => {
            out.push_str(&format!(
                "today: recovered by the {} stage → {} step(s), {}, {}\n",
                r.stage.map_or("?", DecodeStage::as_str),
                plan.steps.len(),
                plan.complexity.as_str(),
                plan.outcome
            ));
            for s in &plan.steps {
                out.push_str(&format!("  {} {}\n", s.order, s.tool));
            }
            out.push_str(&format!("rewritten: {}\n", plan.rewritten_prompt));
        }
        (_, _, Some(f)) => {
            let lead = if r.verdict == Verdict::NotAnAnswer {
                "today: nothing to decode"
            } else {
                "today: still failing"
            };
            out.push_str(&format!(
                "{lead} — {}: {}\n  action: {}\n",
                f.class, f.detail, f.action
            ));
            if let Some(note) = r.class_note {
                out.push_str(&format!(
                    "  stored as {}, today {}: {note}\n",
                    r.stored_class.as_deref().unwrap_or("-"),
                    f.class
                ));
            }
        }
        _ => out.push_str("today: no verdict\n"),
    }
    out
}

fn offline_summary(results: &[OfflineReplay], json: bool) -> anyhow::Result<()> {
    let summary = summarise(results);
    let recovered = results
        .iter()
        .filter(|r| r.verdict == Verdict::Recovered)
        .count();
    if json {
        return print_json(&serde_json::json!({
            "mode": "offline",
            "plans": results,
            "summary": summary,
            "totals": {"plans": results.len(), "recovered": recovered},
        }));
    }
    let mut out = class_table(&summary);
    out.push_str(&format!(
        "\n{recovered} of {} failed plans recover with today's decoder.\n",
        results.len()
    ));
    for r in results.iter().filter(|r| r.verdict == Verdict::Recovered) {
        out.push_str(&format!(
            "  {}  {}  recovered by {}\n",
            r.plan_id,
            r.stored_class.as_deref().unwrap_or("-"),
            r.stage.map_or("?", DecodeStage::as_str)
        ));
    }
    emit(&out)
}

fn class_table(summary: &[ClassSummary]) -> String {
    let join = |m: &std::collections::BTreeMap<String, usize>| {
        if m.is_empty() {
            "-".to_string()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let rows: Vec<Vec<String>> = summary
        .iter()
        .map(|s| {
            vec![
                s.class.clone(),
                s.plans.to_string(),
                s.recovered.to_string(),
                join(&s.stages),
                join(&s.today),
            ]
        })
        .collect();
    render(
        &[
            "failure class",
            ">plans",
            ">recovered",
            "by stage",
            "still failing, as today",
        ],
        &rows,
    )
}

fn live_side_by_side(plan: &LivePlan, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(plan);
    }
    let o = &plan.original;
    let mut header = vec!["".to_string(), format!("original {}", o.id)];
    header.extend(
        plan.replays
            .iter()
            .map(|r| format!("replay on {}", r.model)),
    );
    let dash = || "-".to_string();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |label: &str, orig: String, each: &dyn Fn(&LiveReplay) -> String| {
        let mut r = vec![label.to_string(), orig];
        r.extend(plan.replays.iter().map(each));
        rows.push(r);
    };
    row("model", o.model.clone(), &|r| r.model.clone());
    row("outcome", o.outcome.clone(), &|r| {
        if r.cancelled {
            "cancelled".into()
        } else if r.not_sent.is_some() {
            "not sent".into()
        } else {
            r.outcome.as_str().into()
        }
    });
    row("ran", dash(), &|r| {
        match (r.ran, &r.not_sent, r.cancelled) {
            (true, _, _) => "yes",
            (false, Some(_), _) => "no: not sent",
            (false, None, true) => "no: cancelled",
            (false, None, false) => "no: no answer",
        }
        .to_string()
    });
    row(
        "failure",
        o.failure_class.clone().unwrap_or_else(dash),
        &|r| {
            r.failure
                .as_ref()
                .map_or_else(dash, |f| f.class.as_str().to_string())
        },
    );
    row(
        "finish",
        o.finish_reason.clone().unwrap_or_else(dash),
        &|r| r.finish.as_ref().map_or_else(dash, |f| f.label()),
    );
    row("decoded by", o.stage.clone().unwrap_or_else(dash), &|r| {
        r.stage.map_or_else(dash, |s| s.as_str().to_string())
    });
    row("steps", steps_cell(&o.steps), &|r| {
        r.plan.as_ref().map_or_else(dash, |p| {
            steps_cell(&p.steps.iter().map(|s| s.tool.clone()).collect::<Vec<_>>())
        })
    });
    row(
        "request",
        o.request.as_ref().map_or_else(dash, SentRequest::cell),
        &|r| {
            SentRequest {
                input_tokens: r.request.input_tokens as u64,
                catalog_entries: r.request.catalog_entries as u64,
                max_tokens: r.request.max_tokens as u64,
            }
            .cell()
        },
    );
    row("two-pass", dash(), &|r| {
        r.two_pass.as_ref().map_or_else(dash, |t| t.cell())
    });
    let original_time = o
        .duration_ms
        .map_or_else(dash, |d| time_cell(d as u128, o.attempts));
    row("time", original_time, &|r| {
        time_cell(r.duration_ms as u128, Some(u64::from(r.attempts)))
    });
    row("stored as", o.id.clone(), &|r| r.stored_cell());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut out = format!("{}\n", one_line(&o.intent, 100));
    out.push_str(&render(&header_refs, &rows));
    out.push_str(&live_notes(&plan.replays));
    emit(&out)
}

/// Under a side-by-side table of live results (replay and send alike): how a replay's
/// request differs from what the original sent, why a model was not sent, a failure with its recommended action, or the plan in words with its demoted steps.
pub fn live_notes(results: &[LiveReplay]) -> String {
    let mut out = String::new();
    for r in results {
        for note in &r.rebuild_notes {
            out.push_str(&format!("\nreplay on {}: {note}\n", r.model));
        }
        if let Some(t) = &r.two_pass {
            out.push_str(&format!("\nreplay on {}: two-pass: {}\n", r.model, t.note));
        }
        if let Some(why) = &r.not_sent {
            out.push_str(&format!("\n{}: not sent — {why}\n", r.model));
        }
        if let Some(f) = &r.failure {
            out.push_str(&format!(
                "\n{}: {} — {}\n  action: {}\n",
                r.model, f.class, f.detail, f.action
            ));
        }
        if let Some(p) = &r.plan {
            out.push_str(&format!("\n{}: {}\n", r.model, p.rewritten_prompt));
            for d in &p.demoted {
                out.push_str(&format!("  step {} demoted: {}\n", d.order, d.reason));
            }
        }
    }
    out
}

fn steps_cell(steps: &[String]) -> String {
    if steps.is_empty() {
        "-".into()
    } else {
        clip(&steps.join(" → "), 60)
    }
}

fn live_summary(plans: &[LivePlan], json: bool) -> anyhow::Result<()> {
    let mut tally = ClassTally::default();
    for p in plans {
        for r in &p.replays {
            let tallied = match (&r.failure, r.stage) {
                _ if r.not_sent.is_some() => Tallied::Failing(Some("not_sent")),
                (None, Some(stage)) => Tallied::Recovered(Some(stage)),
                (Some(f), _) => Tallied::Failing(Some(f.class.as_str())),
                (None, None) => Tallied::Failing(Some("cancelled")),
            };
            tally.add(p.original.failure_class.as_deref(), tallied);
        }
    }
    let summary = tally.into_summaries();
    if json {
        return print_json(&serde_json::json!({
            "mode": "live",
            "plans": plans,
            "summary": summary,
        }));
    }
    let mut out = class_table(&summary);
    out.push_str(&format!(
        "\n{} replay(s) of {} failed plan(s) stored, each linked to its original.\n",
        plans
            .iter()
            .flat_map(|p| &p.replays)
            .filter(|r| r.stored_id.is_some())
            .count(),
        plans.len()
    ));
    emit(&out)
}
