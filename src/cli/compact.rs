//! `ctxconsole compact`: the catalog as one model would receive it, with the Trim record.

use std::path::PathBuf;

use crate::cli::preview::{fate_counts, parts_line, read_attachments, request_context};
use crate::cli::table::render;
use crate::cli::{emit, parse_tier, print_json};
use crate::core::budget::{MatchedBy, Tier, effective_row};
use crate::core::catalog::EntryKind;
use crate::core::duration::{self, DurationError, parse_duration};
use crate::format::thousands;
use crate::import::mcp;
use crate::preview::{Ask, PlannedRequest, plan_and_keep};
use crate::workspace::{CatalogOrigin, CompactReport, Workspace, WorkspaceOptions};

pub use crate::workspace::DEFAULT_MODEL;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model id to compact for.
    #[arg(long, value_name = "ID", default_value = DEFAULT_MODEL, value_parser = crate::cli::parse_model_id)]
    pub model: String,
    /// Override the model's tier (A, B or C).
    #[arg(long, value_name = "A|B|C", value_parser = parse_tier)]
    pub tier: Option<Tier>,
    /// Catalog file in any supported format (routing guide, MCP tools/list, OpenAI tools, BFCL).
    #[arg(long, value_name = "FILE", conflicts_with = "mcp")]
    pub catalog: Option<PathBuf>,
    /// Start an MCP server over stdio and compact its tools, e.g. --mcp "npx -y @modelcontextprotocol/server-memory".
    #[arg(long, value_name = "CMD ARGS")]
    pub mcp: Option<String>,
    /// How long the MCP server gets to start and list its tools (`20s`, `2m`).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_MCP_TIMEOUT, value_parser = mcp_timeout)]
    pub mcp_timeout: std::time::Duration,
    /// The instruction that will be sent with the catalog: the request is planned for it
    /// exactly as `preview` plans it (planner allowlist, ranking, gate, allowance).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub prompt: String,
    /// A file sent beside the instruction (repeatable; `-` reads stdin), as `preview --attach`.
    #[arg(long, value_name = "FILE")]
    pub attach: Vec<PathBuf>,
    /// The caller's defaults block sent with the intent, as `preview --defaults`.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub defaults: String,
    /// Rank without the history prior (past plans for similar intents).
    #[arg(long)]
    pub no_history: bool,
    /// Do not write a briefed attachment to the output cache.
    #[arg(long)]
    pub no_cache: bool,
    /// A LiteLLM registry to layer over the sample budgets.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Print the compacted catalog itself (human output).
    #[arg(long)]
    pub show_catalog: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub semantic: crate::cli::semantic::SemanticArgs,
}

/// [`mcp::DEFAULT_TIMEOUT`] as the flag writes it.
const DEFAULT_MCP_TIMEOUT: &str = "20s";

fn mcp_timeout(s: &str) -> Result<std::time::Duration, DurationError> {
    parse_duration(s, duration::CONNECT_TIMEOUT)
}

pub fn run(
    workspace: Option<PathBuf>,
    store: crate::workspace::StoreChoice,
    args: Args,
) -> anyhow::Result<()> {
    let mut ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: args.registry.clone(),
    })?;
    if let Some(path) = &args.catalog {
        ws.load_catalog_file(path)?;
    }
    if let Some(command) = &args.mcp {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // The providers' key variables stay out of the server's environment.
        let withheld = ws.config()?.key_variables();
        let imported = rt.block_on(mcp::import_tools(command, args.mcp_timeout, &withheld))?;
        ws.set_catalog(
            imported.guide,
            mcp::server_name(command, &withheld),
            imported.format,
            imported.warnings,
        );
    }
    let attachments = read_attachments(&args.attach, false)?;
    // Without an instruction there is nothing to rank by and no prior to read.
    let asked = !args.prompt.trim().is_empty() || !attachments.is_empty();
    let mut ctx = request_context(&ws, &store, !args.no_cache, args.no_history || !asked)?;
    if asked {
        ctx.semantic = args.semantic.layer(&ws, ws.catalog.guide())?;
    }
    let effective = effective_row(&ctx.budgets, &args.model, args.tier);
    let p = plan_and_keep(
        &ctx,
        &Ask {
            attachments: &attachments,
            defaults: &args.defaults,
            ..Ask::new(&effective, &args.prompt)
        },
    )?;
    if args.json {
        return print_json(&CompactReport::of(&p, &ws.catalog_origin, &ws.notes)?);
    }
    emit(&describe(&p, &ws.catalog_origin))?;
    if args.show_catalog {
        // Each line as the JSON it is, with what a terminal would not show as itself written
        // as a JSON escape: the same catalog a JSON reader gets from the request (tester 19
        // F4: the terminal escaping wrote `\u{200b}`, which is not JSON).
        let lines: Vec<String> = p
            .compaction
            .text
            .lines()
            .map(crate::core::terminal_text::ascii_json)
            .collect();
        emit(&format!("{}\n", lines.join("\n")))?;
    }
    for note in &ws.notes {
        emit(&format!("note: {note}\n"))?;
    }
    Ok(())
}

fn matched_label(m: MatchedBy) -> &'static str {
    match m {
        MatchedBy::Exact => "exact",
        MatchedBy::Prefix => "prefix",
        MatchedBy::Fallback => "fallback",
    }
}

/// The human summary; the TUI's Catalog pane shows the same figures.
pub fn describe(p: &PlannedRequest, origin: &CatalogOrigin) -> String {
    let t = &p.compaction.trim;
    let a = &p.compaction.allowance;
    let est = if t.exact_tokens { "" } else { " (estimated)" };
    let mut out = String::new();
    out.push_str(&format!(
        "model      {}  → row {} ({}), tier {}{}\n",
        crate::core::terminal_text::name(&p.model),
        crate::cli::preview::shown_row(p),
        matched_label(p.matched_by),
        p.tier,
        if p.tier_overridden { " (override)" } else { "" }
    ));
    out.push_str(&format!(
        "catalog    {} ({}), {} entries\n",
        origin.name, origin.format, t.total
    ));
    out.push_str(&format!(
        "allowance  {} tokens{est} = {}; byte cap {}\n",
        thousands(a.tokens),
        a.terms(),
        a.bytes.map(thousands).unwrap_or_else(|| "none".into())
    ));
    let ct = p.catalog_tokens();
    out.push_str(&format!(
        "before     {} bytes, {} tokens{est}\nafter      {} bytes, {} tokens{est}  ({} of {} entries kept){}\n",
        thousands(t.before_bytes),
        thousands(ct.full),
        thousands(t.after_bytes),
        thousands(ct.sent),
        t.kept,
        t.total,
        if t.fits { "" } else { "  DOES NOT FIT: even an empty catalog is over the allowance" }
    ));
    out.push_str(&format!("request    {}\n", parts_line(&p.request.totals)));
    if p.asked {
        out.push_str(&format!(
            "planned    {}; planner: {}\n",
            fate_counts(p),
            if p.planner.categories.is_empty() {
                p.planner
                    .full_set_reason
                    .clone()
                    .unwrap_or_else(|| "no category".into())
            } else {
                p.planner.categories.join(" + ")
            }
        ));
    }
    for at in &p.attachments {
        out.push_str(&format!(
            "attachment {}: {} bytes, {} tokens{est} → {}, {} tokens sent\n",
            // One line, as `preview` and the request's header write it.
            crate::core::terminal_text::for_terminal_line(&at.name),
            thousands(at.size.bytes),
            thousands(at.size.tokens),
            at.gate.verdict(),
            // With its header and fence lines, as `preview` and the console say it (tester
            // 34 F1: the figure before them was printed here under the same words).
            thousands(at.sent_tokens)
        ));
    }
    if let Some(note) = t.untouched_note() {
        out.push_str(&note);
        out.push('\n');
    }
    if !t.dropped.is_empty() {
        let rows: Vec<Vec<String>> = t
            .dropped
            .iter()
            .map(|d| {
                vec![
                    d.step.number().to_string(),
                    d.step.explain().to_string(),
                    thousands(d.saved_bytes),
                ]
            })
            .collect();
        out.push_str(&render(&["STEP", "WHAT", ">SAVED B"], &rows));
    }
    if !t.cut.is_empty() {
        out.push_str(&format!(
            "cut {} ({}):\n",
            crate::format::counted(t.cut.len(), "entry", "entries"),
            t.cut_note()
        ));
        // Names that print alike (`café` composed and decomposed) are spelled apart, as the
        // duplicate-name note spells them (tester 34 F3).
        let names = p.compaction.names_shown();
        for c in &t.cut {
            let name = names.name(&c.name);
            out.push_str(&format!(
                "  {} {}, {}\n",
                crate::cli::table::padded(&name, 40),
                match c.kind {
                    EntryKind::Pack => "pack",
                    EntryKind::Pipeline => "pipeline",
                },
                t.cut_size(c)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_default_is_the_importer_default() {
        assert_eq!(mcp_timeout(DEFAULT_MCP_TIMEOUT), Ok(mcp::DEFAULT_TIMEOUT));
    }
}
