//! `ctxconsole send`: the request `preview` shows, sent to one or more models at once,
//! each answer classified, decoded, guarded and stored as a plan, shown side by side.

use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::cli::preview::{RequestArgs, request_context};
use crate::cli::send_baseline;
use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::budget::effective_row;
use crate::core::text::clip;
use crate::exit::bad_input;
use crate::llm::client::Cancel;
use crate::llm::replay::{
    Link, LiveReplay, Prior, ReplayContext, ReplayProgress, endpoint_for, send_planned,
};
use crate::preview::{Ask, plan_and_keep};
use crate::workspace::StoreChoice;

/// At most this many models are asked at once.
pub const CONCURRENCY: usize = 4;

const EXIT_CODES: &str = "\
Exit codes: 0 when every model ran (an answer came back, whatever it held) and was stored; \
1 when any could not run (not sent, cancelled with Ctrl-C, no whole answer) — the table (or \
--json) still shows every model; 2 for bad input.
The request sent is the one `ctxconsole preview` shows for the same instruction, \
attachments, model, tier and defaults (messages, max_tokens and response_format byte for \
byte); the two-pass filter is not run.";

#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    pub request: RequestArgs,
    /// A model to send to; repeat for side-by-side results.
    #[arg(long = "model", value_name = "ID", required = true)]
    pub models: Vec<String>,
    /// The caller the plans are stored under.
    #[arg(long, value_name = "CALLER", default_value = "console")]
    pub caller: String,
    /// Also send the intent to MODEL with the whole catalog and no planner help (no
    /// narrowing, no history prior, no hint), and store each plan with its gap signal
    /// against the baseline's steps (`history --gaps`). Default: llm.baseline_model.
    #[arg(long, value_name = "MODEL")]
    pub baseline: Option<String>,
    /// Send no baseline, even when config.toml names one.
    #[arg(long, conflicts_with = "baseline")]
    pub no_baseline: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Sent {
    instruction: String,
    caller: String,
    results: Vec<LiveReplay>,
    /// The baseline's own result (`--baseline`), stored as a plan too.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<LiveReplay>,
    /// Each plan against the baseline's steps, as stored with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gaps: Vec<send_baseline::SentGap>,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let r = &args.request;
    let (prompt, attachments) = r.read()?;
    if args.caller.trim().is_empty() {
        return Err(bad_input("--caller is empty"));
    }
    let ws = r.workspace(workspace.clone())?;
    // The same inputs as `preview`, so the same request.
    let preview = request_context(&ws, &store, !r.no_cache, r.no_history)?;
    let ctx = Arc::new(ReplayContext::new(&ws, preview)?);
    let mut history = ws.open_history(&store)?;
    let mut models = args.models.clone();
    models.dedup();
    let mut requests = Vec::with_capacity(models.len());
    for model in &models {
        let effective = effective_row(&ctx.preview.budgets, model, r.tier);
        requests.push(plan_and_keep(
            &ctx.preview,
            &Ask {
                effective: &effective,
                instruction: &prompt,
                attachments: &attachments,
                defaults: &r.defaults,
                only: None,
            },
        )?);
    }
    // The baseline goes last, beside the others: the same intent, no planner help.
    let baseline = send_baseline::chosen(&ws, args.baseline.as_deref(), args.no_baseline)?;
    let baseline_request = match &baseline {
        Some(b) => {
            let request =
                crate::preview::plan_unaided(&ctx.preview, b, &prompt, &attachments, &r.defaults)?;
            models.push(b.clone());
            requests.push(request.clone());
            Some(request)
        }
        None => None,
    };

    let cancel = Cancel::default();
    let _on_interrupt = cancel_on_interrupt(&cancel);
    let tty = std::io::stderr().is_terminal();
    let lines: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(vec![String::new(); models.len()]));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcomes = rt.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, (model, request)) in models.iter().cloned().zip(requests).enumerate() {
            let (ctx, cancel, gate, lines) =
                (ctx.clone(), cancel.clone(), gate.clone(), lines.clone());
            let (caller, intent) = (args.caller.clone(), prompt.clone());
            tasks.spawn(async move {
                let started = std::time::Instant::now();
                let endpoint = match endpoint_for(&ctx, &model, &request) {
                    Ok(e) => e,
                    Err(not_sent) => return (i, Ok((*not_sent, None))),
                };
                let Ok(_permit) = gate.acquire().await else {
                    return (i, Err(anyhow::anyhow!("the concurrency gate closed")));
                };
                let mut report = |p: ReplayProgress| {
                    if tty && let Ok(mut l) = lines.lock() {
                        l[i] = p.line("send");
                        crate::cli::out::status_line(&l.join("  |  "));
                    }
                };
                let link = Link {
                    caller: &caller,
                    intent: &intent,
                    replay_of: None,
                };
                let prior = Prior {
                    started,
                    attempts: 0,
                    two_pass: None,
                };
                let out = send_planned(
                    &ctx.guard(),
                    &endpoint,
                    &request,
                    &model,
                    link,
                    prior,
                    &cancel,
                    &mut report,
                )
                .await;
                (i, out)
            });
        }
        let mut done = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            done.push(joined);
        }
        done
    });
    if tty {
        crate::cli::out::clear_status_line();
    }
    let mut slots: Vec<Option<_>> = (0..models.len()).map(|_| None).collect();
    for joined in outcomes {
        let (i, out) = joined.map_err(|e| anyhow::anyhow!("a send task failed: {e}"))?;
        slots[i] = Some(out?);
    }
    // The baseline is stored first: each plan stored after it carries its steps.
    let baseline = match baseline_request {
        Some(request) => {
            let Some((live, record)) = slots.pop().flatten() else {
                anyhow::bail!("the baseline's send task gave no result");
            };
            Some(send_baseline::store(live, record, &request, |record| {
                history.insert_sent(record, &ctx.pipelines)
            })?)
        }
        None => None,
    };
    let expert = baseline.as_ref().and_then(|b| b.steps.as_ref());
    let mut gaps = Vec::new();
    // Stored in the order the models were named, whichever answered first.
    let mut results = Vec::with_capacity(slots.len());
    for (mut live, record) in slots.into_iter().flatten() {
        if let Some(mut record) = record {
            let gap = send_baseline::attach(&live, &mut record, expert);
            live.stored_id = Some(history.insert_sent(record, &ctx.pipelines)?);
            gaps.extend(gap.map(|gap_signal| send_baseline::SentGap {
                model: live.model.clone(),
                plan_id: live.stored_id.clone(),
                gap_signal,
            }));
        }
        results.push(live);
    }
    let baseline_note = baseline
        .as_ref()
        .map(|b| send_baseline::render(b, &gaps))
        .unwrap_or_default();
    let sent = Sent {
        instruction: prompt,
        caller: args.caller,
        results,
        baseline: baseline.map(|b| b.live),
        gaps,
    };
    if args.json {
        print_json(&sent)?;
    } else {
        emit(&format!("{}{baseline_note}", side_by_side(&sent)))?;
    }
    every_model_ran(sent.results.iter().chain(&sent.baseline))
}

/// Ctrl-C cancels every call in flight (their results show as cancelled); the handle stops
/// listening when dropped.
#[cfg(unix)]
fn cancel_on_interrupt(cancel: &Cancel) -> Option<InterruptGuard> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT]).ok()?;
    let handle = signals.handle();
    let cancel = cancel.clone();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            cancel.cancel();
        }
    });
    Some(InterruptGuard(handle))
}

/// Stops listening for Ctrl-C when dropped (its thread ends and the handler goes).
#[cfg(unix)]
struct InterruptGuard(signal_hook::iterator::Handle);

#[cfg(unix)]
impl Drop for InterruptGuard {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(not(unix))]
fn cancel_on_interrupt(_cancel: &Cancel) -> Option<()> {
    None
}

fn every_model_ran<'a>(results: impl IntoIterator<Item = &'a LiveReplay>) -> anyhow::Result<()> {
    let mut sent = 0;
    let not_run: Vec<String> = results
        .into_iter()
        .inspect(|_| sent += 1)
        .filter_map(|r| r.could_not_run().map(|why| format!("{} ({why})", r.model)))
        .collect();
    if not_run.is_empty() {
        return Ok(());
    }
    Err(anyhow::anyhow!(
        "{} of {} model{} could not run: {}",
        not_run.len(),
        sent,
        if sent == 1 { "" } else { "s" },
        not_run.join("; ")
    ))
}

fn side_by_side(sent: &Sent) -> String {
    let dash = || "-".to_string();
    let mut header = vec![String::new()];
    header.extend(sent.results.iter().map(|r| r.model.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |label: &str, each: &dyn Fn(&LiveReplay) -> String| {
        let mut r = vec![label.to_string()];
        r.extend(sent.results.iter().map(each));
        rows.push(r);
    };
    row("valid plan", &|r| {
        if r.cancelled {
            "no: cancelled".into()
        } else if r.not_sent.is_some() {
            "no: not sent".into()
        } else if r.plan.is_some() {
            format!("yes ({})", r.outcome)
        } else {
            format!(
                "no: {}",
                r.failure.as_ref().map_or("?", |f| f.class.as_str())
            )
        }
    });
    row("steps", &|r| {
        r.plan.as_ref().map_or_else(dash, |p| {
            clip(
                &p.steps
                    .iter()
                    .map(|s| s.tool.as_str())
                    .collect::<Vec<_>>()
                    .join(" → "),
                60,
            )
        })
    });
    row("unknown tools", &|r| {
        r.plan.as_ref().map_or_else(dash, |p| {
            if p.demoted.is_empty() {
                "0".to_string()
            } else {
                p.demoted.len().to_string()
            }
        })
    });
    row(
        "decoded by",
        &|r| match (r.stage, r.facts.from_tool_calls) {
            (_, true) => "tool_calls".to_string(),
            (Some(s), false) => s.as_str().to_string(),
            (None, false) => dash(),
        },
    );
    row("tokens in/out", &|r| {
        let u = r.facts.usage.as_ref();
        format!(
            "{} / {}",
            u.and_then(|u| u.prompt_tokens)
                .map_or_else(|| format!("~{}", r.request.input_tokens), |n| n.to_string()),
            u.and_then(|u| u.completion_tokens)
                .map_or_else(dash, |n| n.to_string())
        )
    });
    row("cached tokens", &|r| {
        r.facts
            .usage
            .as_ref()
            .and_then(|u| u.cached_tokens)
            .map_or_else(dash, |n| n.to_string())
    });
    row("latency", &|r| {
        if r.not_sent.is_some() {
            dash()
        } else {
            format!("{} ms, {} attempt(s)", r.facts.latency_ms, r.attempts)
        }
    });
    row("cost", &|r| {
        r.facts.cost_usd.map_or_else(dash, |c| format!("${c:.6}"))
    });
    row("stored as", &|r| r.stored_id.clone().unwrap_or_else(dash));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut out = format!("{}\n", clip(&sent.instruction, 100));
    out.push_str(&render(&header_refs, &rows));
    out.push_str(&crate::cli::replay::live_notes(&sent.results));
    out
}
