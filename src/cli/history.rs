//! `ctxconsole history`: what past plans did — groups, plans, drift, models, unused tools —
//! and `history export` / `history show`.

use crate::core::terminal_text::ShownPath;
use serde::Serialize;
use std::path::PathBuf;

use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::duration::{self, DurationError, parse_duration};
use crate::core::history::{Drift, Outcome, ran_label};
use crate::core::terminal_text::{for_terminal_line, indented, name, quoted};
use crate::core::text::told_apart;
use crate::core::time::{format_minute, format_timestamp, parse_rfc3339, time_lacks};
use crate::core::traffic::TrafficSource;
use crate::exit::bad_input;
use crate::fsio::{Protected, write_output};
use crate::store::cache::CACHE_FILE;
use crate::store::history::{HistoryStore, PlanFilter};
use crate::store::now_secs;
use crate::store::view::{groups_report, models_report};
use crate::workspace::{StoreChoice, Workspace, WorkspaceOptions};
use std::borrow::Cow;
use std::collections::HashMap;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub what: Option<What>,
    #[command(flatten)]
    pub view: View,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// How many rows a list shows.
    #[arg(long, default_value_t = 30)]
    pub limit: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Default, clap::Args)]
#[group(multiple = false)]
pub struct View {
    /// Similar intents grouped by shape, with their top tools, models and step pairs.
    #[arg(long)]
    pub groups: bool,
    /// Plans, newest first (the default).
    #[arg(long)]
    pub plans: bool,
    /// Drift per plan: followed, partial, ignored, diverged, failed, with the evidence.
    #[arg(long)]
    pub drift: bool,
    /// Outcome rates, failure causes and a suggested tier per model.
    #[arg(long)]
    pub models: bool,
    /// Catalog entries no plan named and no execution ran.
    #[arg(long)]
    pub unused: bool,
    /// Plans against a stronger model's unaided steps (`send --baseline`, or an imported
    /// `expert_baseline`), counted by intent shape and tool.
    #[arg(long)]
    pub gaps: bool,
}

#[derive(Debug, Default, Clone, clap::Args)]
pub struct FilterArgs {
    #[arg(long, value_name = "CALLER")]
    pub caller: Option<String>,
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// ok, guarded or failed.
    #[arg(long, value_name = "OUTCOME", value_parser = parse_outcome)]
    pub outcome: Option<Outcome>,
    /// Only plans with this drift class.
    #[arg(long = "drift-class", value_name = "CLASS", value_parser = parse_drift)]
    pub drift_class: Option<Drift>,
    /// Only plans this recent (`7d`, `12h`) or since a time (`2026-10-15T00:00:00Z`).
    #[arg(long, value_name = "DURATION|TIME")]
    pub since: Option<String>,
    /// Only plans from this source: native, otel (import traces), litellm (import
    /// litellm) or sent (send, the console's send, a live replay).
    #[arg(long, value_name = "SOURCE", value_parser = parse_source)]
    pub source: Option<String>,
    /// Only plans whose intent contains this text (ASCII letters in any case; at most 500
    /// characters).
    #[arg(long, value_name = "TEXT")]
    pub intent: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Write plans (or executions) as JSON Lines, oldest first.
    Export {
        /// Executions instead of plans.
        #[arg(long)]
        executions: bool,
        /// Write here instead of stdout: a new file (0600), written whole or not at all.
        /// Never the history store, the cache or any SQLite database.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Replace FILE when it exists (still never a SQLite database).
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// One plan in full: steps beside what executed, its replays, the raw response.
    Show {
        #[arg(value_name = "PLAN_ID")]
        id: String,
        #[arg(long)]
        json: bool,
    },
}

fn parse_outcome(s: &str) -> Result<Outcome, String> {
    Outcome::parse(s).ok_or_else(|| format!("'{s}': expected ok, guarded or failed"))
}

fn parse_source(s: &str) -> Result<String, String> {
    TrafficSource::parse(s)
        .map(|t| t.as_str().to_string())
        .ok_or_else(|| format!("'{s}': expected native, otel, litellm or sent"))
}

fn parse_drift(s: &str) -> Result<Drift, String> {
    Drift::parse(s)
        .ok_or_else(|| format!("'{s}': expected followed, partial, ignored, diverged or failed"))
}

/// `YYYY-MM-DD` at the start.
fn looks_like_a_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// `--since`: a duration back from now (`7d`), or an RFC 3339 time. A bare number is
/// neither: it is refused with the hint rather than guessed to be days or Unix seconds.
pub fn since_secs(text: &str, now: i64) -> anyhow::Result<i64> {
    match parse_duration(text, duration::AGE) {
        Ok(d) => {
            let back = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            return Ok(now.saturating_sub(back));
        }
        Err(e @ (DurationError::BareNumber { .. } | DurationError::OutOfRange { .. })) => {
            return Err(bad_input(format!(
                "--since {e} (or a time like 2026-10-15T00:00:00Z)"
            )));
        }
        // A date, or a time without its offset (`2026-11-01`, `2026-11-01T00:00:00`): it
        // was meant as a time, so say what it leaves off; a date with something else after
        // it is told by the time parser below.
        Err(_) if looks_like_a_date(text.trim()) => {
            if let Some(lacks) = time_lacks(text) {
                return Err(bad_input(format!(
                    "--since {}: a time needs {lacks}",
                    quoted(text.trim()),
                )));
            }
        }
        // Far too short for an RFC 3339 time (20 characters at least): it was meant as a
        // duration (`1.5d`, `7D`), so say what a duration is.
        Err(e) if text.trim().chars().count() < 20 => {
            return Err(bad_input(format!(
                "--since {e}: a duration is a whole number and a unit (90m, 36h, 7d, 2w), or give a time like 2026-10-15T00:00:00Z"
            )));
        }
        Err(_) => {}
    }
    // The parser's words quote the value (once, as every error quotes what was typed).
    parse_rfc3339(text).map_err(|e| {
        bad_input(format!(
            "--since: neither a duration (7d, 12h) nor a time: {e}"
        ))
    })
}

impl FilterArgs {
    pub fn to_filter(&self) -> anyhow::Result<PlanFilter> {
        Ok(PlanFilter {
            caller: self.caller.clone(),
            model: self.model.clone(),
            outcome: self.outcome,
            drift: self.drift_class,
            since: self
                .since
                .as_deref()
                .map(|s| since_secs(s, now_secs()))
                .transpose()?,
            shape: None,
            source: self.source.clone(),
            text: match self.intent.as_deref() {
                None | Some("") => None,
                Some(t) => {
                    let bound = &crate::core::bounds::INTENT_SEARCH_CHARS;
                    let n = t.chars().count();
                    if !bound.contains(&n) {
                        return Err(bad_input(format!(
                            "--intent is {n} characters; a search takes at most {}",
                            bound.end()
                        )));
                    }
                    Some(t.to_string())
                }
            },
        })
    }
}

/// The workspace and its history store (seeded on first use).
pub fn open(
    workspace: Option<PathBuf>,
    store: &StoreChoice,
) -> anyhow::Result<(Workspace, HistoryStore)> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    let history = ws.open_history(store)?;
    Ok((ws, history))
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let (ws, history) = open(workspace, &store)?;
    match args.what {
        Some(What::Export {
            executions,
            out,
            force,
        }) => {
            let out = out.map(|path| Output { path, force });
            return export(&ws, &history, executions, out);
        }
        Some(What::Show { id, json }) => return show(&history, &id, json),
        None => {}
    }
    let filter = args.filter.to_filter()?;
    let v = &args.view;
    if v.groups {
        groups(&history, &filter, args.limit, args.json)
    } else if v.drift {
        drift(&history, &filter, args.limit, args.json)
    } else if v.models {
        models(&ws, &history, &filter, args.json)
    } else if v.unused {
        // Unused entries are counted over every plan and execution in the window: a plan
        // filter would change nothing, so naming one is refused rather than ignored.
        let beside_since = PlanFilter {
            since: None,
            ..filter.clone()
        };
        if !beside_since.is_empty() {
            return Err(bad_input(
                "--unused takes only --since: an entry is unused when no plan or execution in \
                 the window names it, whoever planned it",
            ));
        }
        unused(&ws, &history, &filter, args.json)
    } else if v.gaps {
        gaps(&history, &filter, args.limit, args.json)
    } else {
        plans(&history, &filter, args.limit, args.json)
    }
}

/// Where `--out` writes, and whether it may replace an existing file.
struct Output {
    path: PathBuf,
    force: bool,
}

fn export(
    ws: &Workspace,
    history: &HistoryStore,
    executions: bool,
    out: Option<Output>,
) -> anyhow::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let n = if executions {
        history.export_executions(&mut buf)?
    } else {
        history.export_plans(&mut buf)?
    };
    // One text for a file and standard output: DEL, C1 and bidi characters written as
    // `\uXXXX` (the same strings; tester 23 F8: a file held a bidi override raw, so `cat`
    // showed the text reordered, while `--out -` escaped it).
    // Said on standard error, which `--out -` leaves beside the export.
    if let Some(note) = history.left_out_note() {
        crate::cli::out::eprint_line(&format!("note: {note}"));
    }
    let text = String::from_utf8_lossy(&buf);
    let text = crate::core::terminal_text::json_for_terminal(&text);
    // `--out -` is standard output, as `import plans -` is standard input (tester 21 F7: it
    // wrote a file named `-`).
    let out = out.filter(|o| o.path.as_os_str() != "-");
    match out {
        Some(Output { path, force }) => {
            let protected = [
                Protected {
                    path: history.path().to_path_buf(),
                    what: "the open history store".into(),
                },
                Protected {
                    path: ws.dir.join(CACHE_FILE),
                    what: "the workspace's output cache".into(),
                },
            ];
            write_output(&path, text.as_bytes(), force, &protected)?;
            crate::cli::out::eprint_line(&format!(
                "wrote {n} {} to {}",
                if executions { "executions" } else { "plans" },
                path.shown()
            ));
            Ok(())
        }
        None => crate::cli::out::emit_json_text(&text),
    }
}

fn show(history: &HistoryStore, id: &str, json: bool) -> anyhow::Result<()> {
    let d = history.plan_held(id)?;
    if json {
        return print_json(&d);
    }
    let r = &d.record;
    let mut out = format!(
        "{}  {}  {} → {}  ({})\nintent: {}\noutcome: {}  drift: {} {}  complexity: {}\n{}\n",
        for_terminal_line(&r.id),
        // The instant as given, with its part of a second (tester 25 F3: `.500` was dropped).
        crate::core::time::format_timestamp_nanos(r.at, r.at_nanos),
        name(&r.caller),
        name(&r.model),
        r.source,
        indented(&r.intent, "intent: ".len()),
        outcome_text(r.outcome, r.failure_class.as_deref()),
        d.drift.marker(),
        d.drift,
        d.complexity,
        r.replay_of
            .as_deref()
            .map(|o| format!("replay of {}\n", for_terminal_line(o)))
            .unwrap_or_default()
    );
    if let Some(line) = crate::core::gap::baseline_plan_line(r.trim_record.as_ref()) {
        out.push_str(&line);
        out.push('\n');
    }
    // What it was sent with beside the intent (tester 19 F11: only the JSON said it).
    let sent = crate::core::as_sent::SentWith::from_trim(r.trim_record.as_ref());
    for a in &sent.attachments {
        out.push_str(&format!("sent with: {}\n", a.line()));
    }
    if let Some(group) = &r.compare_group {
        out.push_str(&format!(
            "A/B arm {} of comparison {}\n",
            r.arm.map_or("-", |a| a.as_str()),
            for_terminal_line(group)
        ));
    }
    let n = r.steps.len().max(d.executed.len());
    let names =
        crate::core::gap::plan_view_names(&r.steps, &d.executed, r.expert_baseline.as_ref());
    let rows: Vec<Vec<String>> = (0..n)
        .map(|i| {
            let step = r.steps.get(i);
            vec![
                step.map(|s| s.order.to_string()).unwrap_or_default(),
                step.map(|s| names.spelled_or_raw(&s.tool).into_owned())
                    .unwrap_or_default(),
                d.executed
                    .get(i)
                    .map(|t| {
                        ran_label(
                            &names.spelled_or_raw(t),
                            d.executed_ok.get(i).copied().unwrap_or(true),
                        )
                    })
                    .unwrap_or_else(|| "—".into()),
            ]
        })
        .collect();
    out.push_str(&render(&[">#", "planned", "executed"], &rows));
    // A rationale is the model's (or an imported file's) words: one line each.
    for s in r.steps.iter().filter(|s| s.rationale.starts_with("gap:")) {
        out.push_str(&format!(
            "step {}: {}\n",
            s.order,
            for_terminal_line(&s.rationale)
        ));
    }
    if let Some(b) = &r.expert_baseline {
        out.push('\n');
        out.push_str(&crate::core::gap::baseline_lines(
            b,
            d.gap_signal.as_ref(),
            &names,
        ));
    }
    if !d.replays.is_empty() {
        let shown = told_apart(d.replays.iter().map(|p| p.model.as_str()));
        let rows: Vec<Vec<String>> = d
            .replays
            .iter()
            .map(|p| {
                vec![
                    p.id.clone(),
                    format_minute(p.at),
                    shown_model(&shown, &p.model),
                    outcome_text(p.outcome, p.failure_class.as_deref()),
                    p.steps.to_string(),
                ]
            })
            .collect();
        out.push_str(&format!("\nreplays ({}, newest first):\n", d.replays.len()));
        out.push_str(&render(&["id", "at", "model", "outcome", ">steps"], &rows));
    }
    if !d.arms.is_empty() {
        let shown = told_apart(d.arms.iter().map(|p| p.model.as_str()));
        let rows: Vec<Vec<String>> = d
            .arms
            .iter()
            .map(|p| {
                vec![
                    if p.id == r.id {
                        format!("{} (this)", p.id)
                    } else {
                        p.id.clone()
                    },
                    shown_model(&shown, &p.model),
                    p.arm.map_or_else(|| "-".into(), |a| a.to_string()),
                    outcome_text(p.outcome, p.failure_class.as_deref()),
                    p.steps.to_string(),
                ]
            })
            .collect();
        out.push_str(&format!("\narms of this comparison ({}):\n", d.arms.len()));
        out.push_str(&render(&["id", "model", "arm", "outcome", ">steps"], &rows));
    }
    if let Some(raw) = &r.raw_response {
        // Indented as every outside text that runs over lines is (tester 31 F7: a line of
        // the answer could start at column 0 and read as ctxconsole's own).
        out.push_str(&format!(
            "\nraw response (finish_reason {}):\n  {}\n",
            r.finish_reason.as_deref().unwrap_or("none"),
            // Said, as the console says it (tester 34 F7: a blank indented line).
            if raw.is_empty() {
                "(empty)".into()
            } else {
                crate::core::terminal_text::indented(raw, 2)
            }
        ));
    }
    // Whole here, then cut as the console cuts it, saying what was left out and where it is
    // whole (tester 34 F10: 200 KB of arguments ended in a bare `…`).
    let kept = r
        .answer
        .as_ref()
        .map(|a| crate::core::failure::kept_answer_lines(a, usize::MAX))
        .unwrap_or_default();
    if !kept.is_empty() {
        out.push_str("\nthe answer as kept (history show --json: answer):\n");
        let section = crate::core::terminal_text::cut_section(
            kept.iter().map(String::as_str),
            usize::MAX,
            crate::core::terminal_text::SECTION_LINE_CHARS,
            &r.id,
            "answer",
        );
        for line in section {
            out.push_str(&line);
            out.push('\n');
        }
    }
    emit(&out)
}

/// `failed (protocol)`, `ok`.
fn outcome_text(outcome: Outcome, failure_class: Option<&str>) -> String {
    match failure_class {
        Some(c) => format!("{outcome} ({c})"),
        None => outcome.to_string(),
    }
}

fn groups(
    history: &HistoryStore,
    filter: &PlanFilter,
    limit: u64,
    json: bool,
) -> anyhow::Result<()> {
    let report = groups_report(history, filter, limit)?;
    if json {
        return print_json(&report);
    }
    // Models that print alike are told apart across the whole table (tester 24 N6).
    let models = told_apart(
        report
            .groups
            .iter()
            .flat_map(|g| g.models.iter().map(|(m, _)| m.as_str())),
    );
    let rows: Vec<Vec<String>> = report
        .groups
        .iter()
        .map(|g| {
            let top_models: Vec<(String, u64)> = g
                .models
                .iter()
                .map(|(m, n)| (shown_model(&models, m), *n))
                .collect();
            vec![
                g.plans.to_string(),
                g.complexity.clone().unwrap_or_default(),
                top_list(&g.top_tools, 3),
                top_list(&top_models, 2),
                format_minute(g.last_at),
                clip(&g.intent, 50),
            ]
        })
        .collect();
    let mut out = format!("{} groups of similar intents\n", report.total_groups);
    if let Some(note) = &report.groups_note {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push('\n');
    out.push_str(&render(
        &[
            ">plans",
            "complexity",
            "top tools",
            "models",
            "last seen",
            "latest intent",
        ],
        &rows,
    ));
    if !report.step_pairs.is_empty() {
        out.push_str("\nsteps planned together\n");
        let rows: Vec<Vec<String>> = report
            .step_pairs
            .iter()
            .map(|p| vec![p.plans.to_string(), format!("{} + {}", p.a, p.b)])
            .collect();
        out.push_str(&render(&[">plans", "pair"], &rows));
    }
    out.push_str(&left_out_line(report.left_out.as_deref()));
    emit(&out)
}

/// A model as a table of several shows it: spelled out when it prints like another of the
/// table's ([`told_apart`]).
fn shown_model(shown: &HashMap<&str, Cow<'_, str>>, model: &str) -> String {
    shown
        .get(model)
        .map_or_else(|| model.to_string(), |m| m.to_string())
}

fn top_list(items: &[(String, u64)], n: usize) -> String {
    items
        .iter()
        .take(n)
        .map(|(t, c)| format!("{t}×{c}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn clip(s: &str, n: usize) -> String {
    crate::format::clip(&s.replace('\n', " "), n)
}

#[derive(Serialize)]
struct PlansReport {
    total: u64,
    plans: Vec<crate::store::history::PlanRow>,
    /// [`HistoryStore::left_out_note`]: plans left out for a damaged row, absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    left_out: Option<String>,
}

/// A listing's [`HistoryStore::left_out_note`] as its last line, or nothing.
fn left_out_line(note: Option<&str>) -> String {
    note.map_or(String::new(), |n| format!("\nnote: {n}\n"))
}

fn plans(
    history: &HistoryStore,
    filter: &PlanFilter,
    limit: u64,
    json: bool,
) -> anyhow::Result<()> {
    let (total, plans) = (
        history.count_plans(filter)?,
        history.plans(filter, 0, limit)?,
    );
    let report = PlansReport {
        total,
        plans,
        left_out: history.left_out_note(),
    };
    if json {
        return print_json(&report);
    }
    let shown = told_apart(report.plans.iter().map(|p| p.model.as_str()));
    let rows: Vec<Vec<String>> = report
        .plans
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                format_minute(p.at),
                p.caller.clone(),
                shown_model(&shown, &p.model),
                format!("{} {}", p.drift.marker(), p.drift),
                outcome_text(p.outcome, p.failure_class.as_deref()),
                p.source.clone(),
                clip(&p.intent, 48),
            ]
        })
        .collect();
    // The total counts a plan left out for a damaged row too: the note at the end says which.
    let left_out = if report.left_out.is_some() {
        "; some left out, see the note below"
    } else {
        ""
    };
    let mut out = format!(
        "{} plans (showing {}{left_out})\n\n",
        report.total,
        report.plans.len()
    );
    let mut header = vec![
        "id", "at", "caller", "model", "drift", "outcome", "source", "intent",
    ];
    // The A/B arm, when the page holds plans of a comparison (`send --compare`).
    let mut rows = rows;
    if report.plans.iter().any(|p| p.arm.is_some()) {
        header.insert(4, "arm");
        for (row, p) in rows.iter_mut().zip(&report.plans) {
            row.insert(4, p.arm.map_or_else(|| "-".into(), |a| a.to_string()));
        }
    }
    out.push_str(&render(&header, &rows));
    out.push_str(&left_out_line(report.left_out.as_deref()));
    emit(&out)
}

fn drift(
    history: &HistoryStore,
    filter: &PlanFilter,
    limit: u64,
    json: bool,
) -> anyhow::Result<()> {
    let report = history.drift(filter, limit)?;
    if json {
        return print_json(&report);
    }
    let total: u64 = report.counts.iter().map(|(_, n)| n).sum();
    let mut out = format!(
        "drift over {total} plans (executions without a plan id count for the caller's latest plan within {}s, unless runs naming that plan judge it)\n\n",
        report.window_secs
    );
    let rows: Vec<Vec<String>> = report
        .counts
        .iter()
        .map(|(d, n)| {
            vec![
                format!("{} {d}", d.marker()),
                n.to_string(),
                format!("{:.1}%", *n as f64 * 100.0 / total.max(1) as f64),
            ]
        })
        .collect();
    out.push_str(&render(&["class", ">plans", ">share"], &rows));
    out.push('\n');
    let rows: Vec<Vec<String>> = report
        .plans
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                format!("{} {}", p.drift.marker(), p.drift),
                p.planned.join(" → "),
                if p.executed.is_empty() {
                    "—".into()
                } else {
                    p.executed
                        .iter()
                        .zip(&p.executed_ok)
                        .map(|(t, ok)| ran_label(t, *ok))
                        .collect::<Vec<_>>()
                        .join(" → ")
                },
            ]
        })
        .collect();
    out.push_str(&render(&["id", "drift", "planned", "executed"], &rows));
    out.push_str(&left_out_line(report.left_out.as_deref()));
    emit(&out)
}

fn models(
    ws: &Workspace,
    history: &HistoryStore,
    filter: &PlanFilter,
    json: bool,
) -> anyhow::Result<()> {
    let report = models_report(history, filter, &ws.budgets)?;
    if json {
        return print_json(&report);
    }
    let shown = told_apart(report.models.iter().map(|m| m.outcomes.model.as_str()));
    let rows: Vec<Vec<String>> = report
        .models
        .iter()
        .map(|m| {
            let (failed, followed) = m.shown_rates();
            vec![
                shown_model(&shown, &m.outcomes.model),
                m.outcomes.plans.to_string(),
                failed,
                followed,
                top_list(&m.outcomes.failure_causes, 3),
                m.current_tier.to_string(),
                m.suggested_tier
                    .map_or("—".into(), |t| format!("{t} (n={})", m.evidence)),
            ]
        })
        .collect();
    let mut out = render(
        &[
            "model",
            ">plans",
            ">failed",
            ">followed",
            "failure causes",
            "tier",
            "suggested",
        ],
        &rows,
    );
    out.push_str(&format!("\nsuggestion rule: {}\n", report.rule));
    out.push_str(&left_out_line(report.left_out.as_deref()));
    emit(&out)
}

fn gaps(history: &HistoryStore, filter: &PlanFilter, limit: u64, json: bool) -> anyhow::Result<()> {
    let gaps = crate::store::view::gaps_report(history, filter, limit)?;
    if json {
        return print_json(&gaps);
    }
    let report = &gaps.report;
    // Said whatever the counts are, as the JSON carries it (tester 45 F6: a filter no plan
    // matched printed no note).
    let note = gaps
        .groups_note
        .as_ref()
        .map_or(String::new(), |note| format!("note: {note}\n"));
    if report.plans == 0 {
        // Under filters, the advice to send a baseline is wrong when other plans have one
        // (tester 27 F3).
        let unfiltered = if filter.is_empty() {
            0
        } else {
            history.gaps(&PlanFilter::default())?.plans
        };
        if unfiltered > 0 {
            return emit(&format!(
                "no plan compared with a baseline matches the filters ({unfiltered} without them)\n{note}"
            ));
        }
        // "Naming a tool": a baseline of `unknown` steps is kept but gives no signal
        // (tester 28 N5: "no plan has a baseline" beside one `history show` prints).
        return emit(&format!(
            "no plan has a baseline naming a tool to compare with: send with --baseline MODEL \
             (or set llm.baseline_model), or import plans carrying expert_baseline steps\n{note}",
        ));
    }
    let mut out = format!(
        "{} plans compared with a baseline: {} agree\n",
        report.plans, report.agree
    );
    out.push_str(&note);
    let categories: Vec<String> = report
        .categories
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    out.push_str(&format!("by category: {}\n", categories.join(", ")));
    let shown = report.names_shown();
    for (what, tools) in [
        ("baseline skipped", &report.frontier_missed),
        ("plans skipped", &report.plan_missed),
    ] {
        if !tools.is_empty() {
            let listed: Vec<String> = tools.iter().take(8).map(|t| t.shown(shown)).collect();
            out.push_str(&format!("{what}: {}\n", listed.join(" ")));
        }
    }
    out.push('\n');
    for g in &report.groups {
        for line in g.sentences(40, shown) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    emit(&out)
}

fn unused(
    ws: &Workspace,
    history: &HistoryStore,
    filter: &PlanFilter,
    json: bool,
) -> anyhow::Result<()> {
    let names: Vec<String> = ws.index.names().map(str::to_string).collect();
    let unused = history.unused(&names, filter.since)?;
    if json {
        return print_json(&serde_json::json!({
            "since": filter.since.map(format_timestamp),
            "catalog_entries": names.len(),
            "unused": unused,
        }));
    }
    let mut out = format!(
        "{} of {} catalog entries were never planned nor executed{}\n",
        unused.len(),
        names.len(),
        filter
            .since
            .map(|s| format!(" since {}", format_timestamp(s)))
            .unwrap_or_default()
    );
    // Spelled apart from any catalog name that prints alike (tester 38 F1), as the
    // catalog's every list shows them.
    let shown = ws.catalog.names_shown();
    for n in &unused {
        out.push_str(&format!("  {}\n", shown.spelled_or_raw(n)));
    }
    emit(&out)
}
