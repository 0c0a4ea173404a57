//! `ctxconsole send`: the request `preview` shows, sent to one or more models at once,
//! each answer classified, decoded, guarded and stored as a plan, shown side by side.

use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::cli::preview::{RequestArgs, parse_arm};
use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::budget::effective_row;
use crate::core::compare::Arm;
use crate::core::terminal_text::one_line;
use crate::core::text::clip;
use crate::format::thousands;
use crate::live::baseline;
use crate::live::replay::{LiveReplay, ReplayContext, every_answer_stored};
use crate::live::send::{
    HistorySink, JobNews, JobReport, SendAsk, SendStore, call_label, compare_group, plan_send,
    run_jobs,
};
use crate::llm::client::Cancel;
use crate::workspace::StoreChoice;

const EXIT_CODES: &str = "\
Exit codes: 0 when every model ran (an answer came back, whatever it held) and was stored; \
1 when any could not run (not sent, cancelled with Ctrl-C, no whole answer) — the table (or \
--json) still shows every model; 2 for bad input.
The request sent is the one `ctxconsole preview` shows for the same instruction, \
attachments, model, tier and defaults (messages, max_tokens and response_format byte for \
byte); the two-pass filter is not run. Each --compare ARM is the request \
`ctxconsole preview --arm ARM` shows; every arm of one send is stored with the same \
compare_group.";

#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    pub request: RequestArgs,
    /// A model to send to; repeat for side-by-side results.
    #[arg(long = "model", value_name = "ID", required = true, value_parser = crate::cli::parse_model_id)]
    pub models: Vec<String>,
    /// Also send each model an A/B arm of the request (repeatable): full (the whole
    /// catalog: no planner narrowing, no compaction), no-planner (every entry allowed,
    /// compacted to the same allowance), no-prior (without the past-plans part), no-hint
    /// (without the planner's hint). Shown side by side with the request as built
    /// (`compacted`) and stored linked.
    #[arg(long = "compare", value_name = "ARM", value_parser = parse_compare_arm)]
    pub compare: Vec<Arm>,
    /// The caller the plans are stored under.
    #[arg(long, value_name = "CALLER", default_value = "console", value_parser = crate::cli::parse_name)]
    pub caller: String,
    /// Also send the intent to MODEL with the whole catalog and no planner help (no
    /// narrowing, no history prior, no hint), and store each plan with its gap signal
    /// against the baseline's steps (`history --gaps`). Default: llm.baseline_model.
    #[arg(long, value_name = "MODEL", value_parser = crate::cli::parse_model_id)]
    pub baseline: Option<String>,
    /// Send no baseline, even when config.toml names one.
    #[arg(long, conflicts_with = "baseline")]
    pub no_baseline: bool,
    #[arg(long)]
    pub json: bool,
}

/// An arm to compare with: any but `compacted`, which is always sent.
fn parse_compare_arm(s: &str) -> Result<Arm, String> {
    match parse_arm(s)? {
        Arm::Compacted => Err("compacted is always sent; --compare names the other arms".into()),
        arm => Ok(arm),
    }
}

/// One model and arm: what was sent and what came back.
#[derive(Debug, Serialize)]
struct SentResult {
    arm: Arm,
    /// The arm's request was byte for byte the `compacted` one (nothing to take away for
    /// this intent): any difference between the two is the model's own variance. Always
    /// given, `false` included (tester 8 F16: absent unless true, where the README lists it).
    same_as_compacted: bool,
    /// The catalog entries sent, of the catalog's.
    catalog_total: usize,
    /// Tokens of the past-plans part (0: none sent).
    prior_tokens: usize,
    #[serde(flatten)]
    live: LiveReplay,
}

impl SentResult {
    /// `model` alone, or `model [arm]` in a comparison.
    fn label(&self, comparing: bool) -> String {
        if comparing {
            call_label(&self.live.model, self.arm, false)
        } else {
            self.live.model.clone()
        }
    }
}

#[derive(Debug, Serialize)]
struct Sent {
    instruction: String,
    caller: String,
    /// The arms sent to every model, `compacted` first.
    arms: Vec<Arm>,
    /// What links the plans of this comparison in the store (none without --compare).
    #[serde(skip_serializing_if = "Option::is_none")]
    compare_group: Option<String>,
    results: Vec<SentResult>,
    /// The baseline's own result (`--baseline`), stored as a plan too.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<LiveReplay>,
    /// Each plan against the baseline's steps, as stored with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gaps: Vec<baseline::SentGap>,
    /// What planning the requests warned of, each once (a briefed part not kept, a cache
    /// that could not keep it, a name sent twice): on stderr as it is planned, and here.
    warnings: Vec<String>,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let r = &args.request;
    let (prompt, attachments) = r.read()?;
    let ws = r.workspace(workspace.clone())?;
    // The same inputs as `preview`, so the same request.
    let preview = r.context(&ws, &store)?;
    let ctx = Arc::new(ReplayContext::new(&ws, preview)?);
    let mut history = ws.open_history(&store)?;
    history.check_writable("send, which stores every answer (nothing was sent),")?;
    crate::cli::replay::say_if_store_busy(&history)?;
    let mut models = args.models.clone();
    models.dedup();
    let mut arms = vec![Arm::Compacted];
    for a in &args.compare {
        if !arms.contains(a) {
            arms.push(*a);
        }
    }
    let targets: Vec<_> = models
        .iter()
        .map(|m| effective_row(&ctx.preview.budgets, m, r.tier))
        .collect();
    // The baseline goes last, beside the others: the same intent, no planner help, in no
    // comparison.
    let baseline = baseline::chosen(&ws, args.baseline.as_deref(), args.no_baseline)?;
    let ask = SendAsk {
        prompt: &prompt,
        attachments: &attachments,
        defaults: &r.defaults,
        targets: &targets,
        arms: &arms,
        baseline: baseline.as_deref(),
    };
    let comparing = ask.comparing();
    let jobs = plan_send(&ctx.preview, &ask)?;
    // What planning warned of — a briefed part that is not kept (`--no-cache`, a cache that
    // failed: the model sees only its map), said once whatever the number of models (tester
    // 19 F14), and in `--json` too (it had been on stderr alone). The warnings are those
    // `preview` gives for the same request.
    let mut warnings: Vec<String> = Vec::new();
    for w in jobs.iter().flat_map(|j| j.request.warnings.iter()) {
        if !warnings.contains(w) {
            crate::cli::out::eprint_line(&format!("ctxconsole send: note: {w}"));
            warnings.push(w.clone());
        }
    }
    let at = crate::store::now_secs();
    let compare_group = comparing.then(|| compare_group(at, &prompt, &models, &arms));

    let cancel = Cancel::default();
    let on_interrupt = crate::cli::out::cancel_on_interrupt(&cancel, &ws.dir);
    let tty = std::io::stderr().is_terminal();
    let labels: Vec<String> = jobs
        .iter()
        .map(|j| {
            if j.baseline {
                "baseline".to_string()
            } else if comparing {
                format!("send [{}]", j.arm)
            } else {
                "send".to_string()
            }
        })
        .collect();
    let lines: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(vec![String::new(); jobs.len()]));
    let report: JobReport = Arc::new(move |i, news: JobNews| {
        if tty
            && let Ok(mut l) = lines.lock()
            && let (Some(line), Some(label)) = (l.get_mut(i), labels.get(i))
        {
            *line = news.line(label);
            crate::cli::out::status_line(&l.join("  |  "));
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Each answer is stored as it comes back (tester 22 F4).
    let sink = HistorySink {
        store: &mut history,
        pipelines: &ctx.pipelines,
        started: at,
    };
    // Once every call is back, what is left is storing; with another process writing, the
    // status line says what it waits for (tester 36 F8: it read `storing` the whole wait).
    let mut storing = SendStore::new(&jobs, at, sink).when_only_storing_is_left(move |waiting| {
        if tty && waiting {
            crate::cli::out::status_line(
                "Storing… waiting for the store's write lock (another process is writing)",
            );
        }
    });
    let ran = rt.block_on(run_jobs(
        ctx.clone(),
        jobs,
        &args.caller,
        &prompt,
        compare_group.as_deref(),
        &cancel,
        report,
        &mut storing,
    ));
    if tty {
        crate::cli::out::clear_status_line();
    }
    ran?;
    let stored = storing.finish()?;
    let baseline = stored.baseline;
    // Stored in the order the models (then the arms) were named, whichever answered first.
    let gaps: Vec<baseline::SentGap> = stored
        .arms
        .iter()
        .filter_map(|a| {
            a.gap.clone().map(|gap_signal| baseline::SentGap {
                model: if comparing {
                    call_label(&a.live.model, a.arm, false)
                } else {
                    a.live.model.clone()
                },
                plan_id: a.live.stored_id.clone(),
                gap_signal,
            })
        })
        .collect();
    let results: Vec<SentResult> = stored
        .arms
        .into_iter()
        .map(|a| SentResult {
            arm: a.arm,
            same_as_compacted: a.same_as_compacted,
            catalog_total: a.catalog_total,
            prior_tokens: a.prior_tokens,
            live: a.live,
        })
        .collect();
    let baseline_note = baseline
        .as_ref()
        .map(|b| baseline::render(b, &gaps))
        .unwrap_or_default();
    // A comparison links stored arms: with none stored there is no group to show (tester 50
    // F13: "stored linked as comparison cmp-…" was printed with nothing stored).
    let compare_group =
        compare_group.filter(|_| results.iter().any(|r| r.live.stored_id.is_some()));
    let sent = Sent {
        instruction: prompt,
        caller: args.caller,
        arms,
        compare_group,
        results,
        baseline: baseline.map(|b| b.live),
        gaps,
        warnings,
    };
    // The configured keys are taken out of what is printed, as out of what is stored: the
    // operator's prompt, or an answer echoing it, may hold one (tester 12 T12-6).
    let secrets = &ctx.preview.secrets;
    if args.json {
        let mut shown = serde_json::to_value(&sent)?;
        secrets.json(&mut shown);
        print_json(&shown)?;
    } else {
        emit(&secrets.text(&format!("{}{baseline_note}", side_by_side(&sent))))?;
        crate::cli::replay::print_unsaved_plans(
            sent.results
                .iter()
                .map(|r| &r.live)
                .chain(sent.baseline.iter()),
        )?;
    }
    // With arms or a baseline a model is asked more than once: count and name the calls.
    let comparing = sent.arms.len() > 1;
    let mut calls: Vec<(String, &LiveReplay)> = sent
        .results
        .iter()
        .map(|r| (r.label(comparing), &r.live))
        .collect();
    calls.extend(
        sent.baseline
            .iter()
            .map(|b| (call_label(&b.model, Arm::Compacted, true), b)),
    );
    let noun = if comparing || sent.baseline.is_some() {
        "call"
    } else {
        "model"
    };
    every_answer_stored(calls.iter().map(|(_, live)| *live))?;
    // A signal cut the send: said and exited with, as `replay` does (tester 37 T37-5: a
    // SIGTERM while it stored exited 0, and one with a model still out 1).
    if let Some((signal, number)) = on_interrupt.as_ref().and_then(|i| i.came()) {
        let cut = calls.iter().filter(|(_, live)| live.cancelled).count();
        return Err(anyhow::Error::new(crate::exit::Interrupted {
            signal,
            number,
            what: format!(
                "{} cancelled, every answer back stored or kept",
                part_of_calls(cut, calls.len(), noun)
            ),
        }));
    }
    every_call_ran(&calls, noun)
}

/// Exit 1 naming every call that could not run. `calls` are (label, result); `noun` says
/// what a call is to the reader: a model, when each model was asked once, else a call.
fn every_call_ran(calls: &[(String, &LiveReplay)], noun: &str) -> anyhow::Result<()> {
    let not_run: Vec<String> = calls
        .iter()
        .filter_map(|(label, r)| r.could_not_run().map(|why| format!("{label} ({why})")))
        .collect();
    if not_run.is_empty() {
        return Ok(());
    }
    Err(anyhow::anyhow!(
        "{} could not run: {}",
        part_of_calls(not_run.len(), calls.len(), noun),
        not_run.join("; ")
    ))
}

/// `1 of 2 models`, `2 of 3 calls`: `part` of the send's `calls`, each a `noun`.
fn part_of_calls(part: usize, calls: usize, noun: &str) -> String {
    format!(
        "{part} of {}",
        crate::format::counted(calls, noun, &format!("{noun}s"))
    )
}

fn side_by_side(sent: &Sent) -> String {
    let comparing = sent.arms.len() > 1;
    let dash = || "-".to_string();
    let mut header = vec![String::new()];
    header.extend(sent.results.iter().map(|r| r.label(comparing)));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |label: &str, each: &dyn Fn(&SentResult) -> String| {
        let mut r = vec![label.to_string()];
        r.extend(sent.results.iter().map(each));
        rows.push(r);
    };
    row("valid plan", &|s| s.live.valid_plan_cell());
    row("steps", &|s| clip(&s.live.steps_cell(), 60));
    row("unknown tools", &|s| s.live.unknown_tools_cell());
    row(
        "decoded by",
        &|s| match (s.live.stage, s.live.facts.from_tool_calls) {
            (_, true) => "tool_calls".to_string(),
            (Some(st), false) => st.as_str().to_string(),
            (None, false) => dash(),
        },
    );
    if comparing {
        row("catalog sent", &|s| {
            format!(
                "{}/{} entries{}",
                s.live.request.catalog_entries,
                s.catalog_total,
                if s.same_as_compacted {
                    " (= compacted)"
                } else {
                    ""
                }
            )
        });
        row("prior", &|s| {
            if s.prior_tokens == 0 {
                dash()
            } else {
                format!("{} tokens", s.prior_tokens)
            }
        });
    }
    row("tokens in/out", &|s| s.live.tokens_cell());
    row("cached tokens", &|s| s.live.cached_tokens_cell());
    row("latency", &|s| {
        let r = &s.live;
        if r.not_sent.is_some() {
            dash()
        } else {
            format!("{} ms, {} attempt(s)", r.facts.latency_ms, r.attempts)
        }
    });
    row("cost", &|s| {
        s.live
            .facts
            .cost_usd
            .map_or_else(dash, |c| format!("${c:.6}"))
    });
    row("stored as", &|s| s.live.stored_cell());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut out = format!("{}\n", one_line(&sent.instruction, 100));
    out.push_str(&render(&header_refs, &rows));
    if let Some(group) = &sent.compare_group {
        out.push_str(&against_compacted(sent));
        out.push_str(&format!(
            "\nstored linked as comparison {group} (ctxconsole history show ID lists its arms)\n"
        ));
    }
    let labelled: Vec<LiveReplay> = sent
        .results
        .iter()
        .map(|r| LiveReplay {
            model: r.label(comparing),
            ..r.live.clone()
        })
        .collect();
    out.push_str(&crate::cli::replay::live_notes(&labelled));
    out
}

/// Per model, each arm beside `compacted`: whether a valid plan came back in each, whether
/// the steps agree, and the input tokens it took more or less.
fn against_compacted(sent: &Sent) -> String {
    let mut out = String::new();
    let tokens_in = |r: &LiveReplay| {
        r.facts
            .usage
            .as_ref()
            .and_then(|u| u.prompt_tokens)
            .map_or(r.request.input_tokens as i64, |n| n as i64)
    };
    let tools = |r: &LiveReplay| {
        r.plan
            .as_ref()
            .map(|p| p.steps.iter().map(|s| s.tool.clone()).collect::<Vec<_>>())
    };
    let mut models: Vec<&str> = Vec::new();
    for r in &sent.results {
        if !models.contains(&r.live.model.as_str()) {
            models.push(&r.live.model);
        }
    }
    for model in models {
        let of = |arm: Arm| {
            sent.results
                .iter()
                .find(|r| r.live.model == model && r.arm == arm)
        };
        let Some(base) = of(Arm::Compacted) else {
            continue;
        };
        out.push_str(&format!("\nA/B on {model}, against compacted:\n"));
        for arm in sent.arms.iter().copied().filter(|a| *a != Arm::Compacted) {
            let Some(r) = of(arm) else { continue };
            let valid = match (tools(&base.live), tools(&r.live)) {
                (Some(a), Some(b)) if a == b => "both valid, same steps".to_string(),
                (Some(_), Some(_)) => "both valid, different steps".to_string(),
                (Some(_), None) => format!("only compacted valid ({arm} not)"),
                (None, Some(_)) => format!("only {arm} valid (compacted not)"),
                (None, None) => "neither valid".to_string(),
            };
            let delta = tokens_in(&r.live) - tokens_in(&base.live);
            let sign = if delta < 0 { '-' } else { '+' };
            out.push_str(&format!(
                "  {arm:<10} {valid}; {sign}{} tokens in{}\n",
                thousands(delta.unsigned_abs() as usize),
                if r.same_as_compacted {
                    "; same request as compacted: any difference is the model's own variance"
                } else {
                    ""
                }
            ));
        }
    }
    out
}
