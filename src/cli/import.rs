//! `ctxconsole import plans|executions|traces|litellm FILE`: JSON Lines, OpenTelemetry
//! spans and LiteLLM spend logs into the history store, one transaction per file.

use crate::core::terminal_text::ShownPath;
use std::path::PathBuf;

use crate::cli::{emit, print_json};
use crate::core::history::EXECUTION_CLOCK_SKEW_SECS;
use crate::core::terminal_text::for_terminal_line;
use crate::core::traffic::{StreamRead, TrafficSource};
use crate::import::open_text;
use crate::import::traffic::{read_spend_logs, read_traces};
use crate::store::history::{ImportReport, OnConflict};
use crate::workspace::StoreChoice;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Plans: one JSON object per line (id, at, caller, model, intent, steps, outcome, …).
    Plans(FileArgs),
    /// Executions: one JSON object per line (at, caller, session, plan_id, tool, ok).
    Executions(FileArgs),
    /// OpenTelemetry GenAI spans as the Collector's file exporter writes them (OTLP JSON, one
    /// `{"resourceSpans":[…]}` per line): chat spans become plans, execute_tool spans
    /// executions linked to the chat of the same trace.
    Traces(FileArgs),
    /// LiteLLM proxy spend logs (SpendLogs rows: a JSON array or JSON Lines): each request
    /// becomes a plan with its usage and spend.
    Litellm(FileArgs),
}

enum Kind {
    Plans,
    Executions,
    Traffic(TrafficSource),
}

#[derive(Debug, clap::Args)]
pub struct FileArgs {
    /// The file, or `-` for stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// What to do with a record whose id is already stored with different content: keep
    /// the stored one (`skip`) or take the file's (`replace`). Without it such a record is
    /// an error listing the ids, and nothing is imported.
    #[arg(long, value_name = "skip|replace")]
    pub on_conflict: Option<ConflictArg>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ConflictArg {
    Skip,
    Replace,
}

/// "answer held" / "answers held" and whose answer it is ("its" / "each one's"), for the
/// import's notes about what `n` answers held.
fn answers_held(n: usize) -> (&'static str, &'static str) {
    if n == 1 {
        ("answer held", "its")
    } else {
        ("answers held", "each one's")
    }
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let (ws, mut history) = crate::cli::history::open(workspace, &store)?;
    if let Some(note) = history.writer_note_for("this import waits", "")? {
        crate::cli::out::eprint_line(&format!("ctxconsole: {note}"));
    }
    let (f, kind) = match args.what {
        What::Plans(f) => (f, Kind::Plans),
        What::Executions(f) => (f, Kind::Executions),
        What::Traces(f) => (f, Kind::Traffic(TrafficSource::Otel)),
        What::Litellm(f) => (f, Kind::Traffic(TrafficSource::Litellm)),
    };
    let (file, json) = (f.file, f.json);
    let on_conflict = match f.on_conflict {
        None => OnConflict::Refuse,
        Some(ConflictArg::Skip) => OnConflict::Skip,
        Some(ConflictArg::Replace) => OnConflict::Replace,
    };
    let source = file.shown().to_string();
    // Big files say how far they are; the rows only become visible at the commit.
    let progress =
        |lines: usize| crate::cli::out::eprint_line(&format!("{source}: {lines} lines read…"));
    let store_path = history.path().to_path_buf();
    // (A signal in the instant between the commit and the drop below would be said the
    // same: a rerun then finds every row already present.)
    let interrupted = crate::cli::out::say_if_interrupted(format!(
        "nothing from {source} was imported (an import is kept whole or not at all)"
    ));
    let report: ImportReport = (|| -> anyhow::Result<ImportReport> {
        Ok(match kind {
            Kind::Plans => history.import_plans(
                &source,
                open_text(&file)?,
                &ws.pipeline_ids(),
                on_conflict,
                progress,
            )?,
            Kind::Executions => {
                history.import_executions(&source, open_text(&file)?, on_conflict, progress)?
            }
            // Traffic streams: a plan is stored before the next is read.
            Kind::Traffic(origin) => history.import_traffic(
                &source,
                origin,
                &ws.pipeline_ids(),
                on_conflict,
                |plan| {
                    let progress = |n: usize, what: &str| {
                        crate::cli::out::eprint_line(&format!("{source}: {n} {what} read…"))
                    };
                    match origin {
                        TrafficSource::Litellm => {
                            read_spend_logs(&file, |rows| progress(rows, "rows"), plan).map(
                                |records| StreamRead {
                                    records,
                                    ..StreamRead::default()
                                },
                            )
                        }
                        _ => read_traces(&file, |lines| progress(lines, "lines"), plan),
                    }
                },
            )?,
        })
    })()
    .map_err(|e| {
        crate::store::sqlite::store_failure(e, &store_path, &format!("importing {source}"))
    })?;
    drop(interrupted);
    if json {
        return print_json(&report);
    }
    let mut conflicts = String::new();
    if report.skipped > 0 {
        conflicts.push_str(&format!(
            ", {} skipped (stored with different content, kept as stored)",
            report.skipped
        ));
    }
    if report.replaced > 0 {
        conflicts.push_str(&format!(
            ", {} replaced (stored with different content)",
            report.replaced
        ));
    }
    let mut notes = String::new();
    // The plans some executions name, listed as the report lists them (the first few).
    let listed = |ids: &[String], n: usize| {
        let mut shown = ids
            .iter()
            .map(|id| for_terminal_line(id))
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() < n {
            shown.push_str(", …");
        }
        shown
    };
    if report.before_plan > 0 {
        let n = report.before_plan;
        let ids = listed(&report.before_plan_ids, n);
        let (is, its) = if n == 1 {
            ("execution is", "its plan")
        } else {
            ("executions are", "their plans")
        };
        notes.push_str(&format!(
            "  {n} {is} dated before {its} ({ids}) by more than {EXECUTION_CLOCK_SKEW_SECS} s: \
             kept, not counted for drift\n"
        ));
    }
    if report.other_caller_plan > 0 {
        let n = report.other_caller_plan;
        let ids = listed(&report.other_caller_plan_ids, n);
        let (counted, plans) = if n == 1 {
            ("execution counted", "another caller's plan")
        } else {
            ("executions counted", "other callers' plans")
        };
        notes.push_str(&format!(
            "  {n} {counted} for {plans} ({ids}): beside that caller's own runs\n"
        ));
    }
    if report.replay_plan > 0 {
        let n = report.replay_plan;
        let ids = listed(&report.replay_plan_ids, n);
        let names = if n == 1 {
            "execution names a replay"
        } else {
            "executions name replays"
        };
        notes.push_str(&format!(
            "  {n} {names} ({ids}): kept, counted for no plan (no agent runs a replay)\n"
        ));
    }
    if report.unknown_plan > 0 {
        let n = report.unknown_plan;
        let names = if n == 1 {
            "execution names"
        } else {
            "executions name"
        };
        notes.push_str(&format!(
            "  {n} {names} a plan not in the store: kept, linked when that plan is imported\n"
        ));
    }
    if report.before_every_chat > 0 {
        let n = report.before_every_chat;
        let spans = if n == 1 {
            "execute_tool span started"
        } else {
            "execute_tool spans started"
        };
        notes.push_str(&format!(
            "  {n} {spans} before every chat span of its trace: linked to no plan\n"
        ));
    }
    if report.no_chat_span > 0 {
        let n = report.no_chat_span;
        let spans = if n == 1 {
            "execute_tool span's trace has"
        } else {
            "execute_tool spans' traces have"
        };
        notes.push_str(&format!(
            "  {n} {spans} no chat span in the store: kept, linked to no plan until a chat \
             span of the trace is imported\n"
        ));
    }
    if report.linked_to_new_chats > 0 {
        let n = report.linked_to_new_chats;
        let spans = if n == 1 {
            "execute_tool span stored before"
        } else {
            "execute_tool spans stored before"
        };
        notes.push_str(&format!(
            "  {n} {spans} now linked to a chat span of its trace this file brought\n"
        ));
    }
    if report.linked_to_baseline > 0 {
        let n = report.linked_to_baseline;
        let plans = crate::format::counted(n, "sent plan", "sent plans");
        let its = if n == 1 { "its" } else { "their" };
        notes.push_str(&format!(
            "  {plans} linked to the baseline of {its} send: its steps and the gap signal \
             stored, as the send would have\n"
        ));
    }
    if report.second_baseline > 0 {
        let n = report.second_baseline;
        let ids = listed(&report.second_baseline_ids, n);
        let what = if n == 1 {
            "baseline plan is not the baseline of its send"
        } else {
            "baseline plans are not the baselines of their sends"
        };
        notes.push_str(&format!(
            "  {n} {what} ({ids}): a send has one, the earliest answered; kept, linked to no \
             plan\n"
        ));
    }
    if report.tool_calls_cut > 0 {
        let n = report.tool_calls_cut;
        let bound = crate::core::bounds::PLAN_STEPS;
        let (answers, each) = answers_held(n);
        notes.push_str(&format!(
            "  {n} {answers} more tool calls than a plan holds steps ({bound}): no plan; the \
             first {bound} kept in {each} answer, the rest read past and counted there \
             ({})\n",
            crate::core::traffic::TOOL_CALLS_NOT_KEPT
        ));
    }
    if report.answers_not_read > 0 {
        let n = report.answers_not_read;
        let (answers, each) = answers_held(n);
        notes.push_str(&format!(
            "  {n} {answers} content not read (a part that is not text, content of another \
             type): named in {each} answer ({})\n",
            crate::core::traffic::NOT_READ
        ));
    }
    if report.answers_other_choices > 0 {
        let n = report.answers_other_choices;
        let (answers, each) = answers_held(n);
        notes.push_str(&format!(
            "  {n} {answers} more than one choice: the first is the answer, \
             the others counted in {each} answer ({})\n",
            crate::core::traffic::OTHER_CHOICES
        ));
    }
    emit(&format!(
        "{}: {} {} read, {} added, {} already present{conflicts}; drift updated on {} plans ({})\n{notes}",
        report.source,
        report.lines,
        report.kind,
        report.added,
        report.already_present,
        report.drift_updated,
        history.path().shown()
    ))
}
