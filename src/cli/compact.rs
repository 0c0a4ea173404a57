//! `ctxconsole compact`: the catalog as one model would receive it, with the Trim record.

use std::path::PathBuf;

use crate::cli::table::render;
use crate::cli::{emit, parse_tier, print_json};
use crate::core::budget::Tier;
use crate::format::thousands;
use crate::import::mcp;
use crate::workspace::{
    CatalogOrigin, CompactionView, Workspace, WorkspaceOptions, compact_for, effective_row,
};

/// The model the seeds' failures were measured on.
pub const DEFAULT_MODEL: &str = "openrouter/openrouter/free";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model id to compact for.
    #[arg(long, value_name = "ID", default_value = DEFAULT_MODEL)]
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
    /// Seconds the MCP server gets to start and list its tools.
    #[arg(long, value_name = "SECS", default_value_t = mcp::DEFAULT_TIMEOUT.as_secs())]
    pub mcp_timeout: u64,
    /// The prompt that will be sent with the catalog: its tokens come out of the allowance.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub prompt: String,
    /// A LiteLLM registry to layer over the sample budgets.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Print the compacted catalog itself (human output).
    #[arg(long)]
    pub show_catalog: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
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
        let imported = rt.block_on(mcp::import_tools(
            command,
            std::time::Duration::from_secs(args.mcp_timeout),
        ))?;
        ws.set_catalog(
            imported.guide,
            format!("MCP server `{command}`"),
            imported.format,
            imported.warnings,
        );
    }
    let effective = effective_row(&ws.budgets, &args.model, args.tier);
    let view = compact_for(&ws.catalog, Some(&ws.index), effective, &args.prompt);
    if args.json {
        return print_json(&view.report(&ws.catalog_origin)?);
    }
    emit(&describe(&view, &ws.catalog_origin))?;
    if args.show_catalog {
        emit(&format!("{}\n", view.compacted.text))?;
    }
    for note in &ws.notes {
        emit(&format!("note: {note}\n"))?;
    }
    Ok(())
}

/// The human summary; the TUI's Catalog pane shows the same figures.
pub fn describe(view: &CompactionView, origin: &CatalogOrigin) -> String {
    let t = &view.compacted.trim;
    let a = &view.allowance;
    let row = &view.effective.row;
    let est = if t.exact_tokens { "" } else { " (estimated)" };
    let mut out = String::new();
    out.push_str(&format!(
        "model      {}  → row '{}' ({:?}), tier {}{}\n",
        view.effective.model,
        row.id,
        view.effective.matched_by,
        row.tier,
        if view.effective.tier_override.is_some() {
            " (override)"
        } else {
            ""
        }
    ));
    out.push_str(&format!(
        "catalog    {} ({}), {} entries\n",
        origin.name, origin.format, t.total
    ));
    out.push_str(&format!(
        "allowance  {} tokens{est} = {} input − {} system − {} prompt − {} framing − {} margin; byte cap {}\n",
        thousands(a.tokens),
        thousands(a.input_tokens),
        a.system_prompt_tokens,
        thousands(a.prompt_tokens),
        a.framing_tokens,
        thousands(a.margin_tokens),
        a.bytes.map(thousands).unwrap_or_else(|| "none".into())
    ));
    out.push_str(&format!(
        "before     {} bytes, {} tokens{est}\nafter      {} bytes, {} tokens{est}  ({} of {} entries kept){}\n",
        thousands(t.before_bytes),
        thousands(t.before_tokens),
        thousands(t.after_bytes),
        thousands(t.after_tokens),
        t.kept,
        t.total,
        if t.fits { "" } else { "  DOES NOT FIT: even an empty catalog is over the allowance" }
    ));
    if t.dropped.is_empty() && t.cut.is_empty() {
        out.push_str("untouched: the full catalog fits\n");
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
            "cut {} entries ({}):\n",
            t.cut.len(),
            t.cut_policy
        ));
        for c in &t.cut {
            out.push_str(&format!(
                "  {:<40} {:?}, {} bytes\n",
                c.name, c.kind, c.bytes
            ));
        }
    }
    out
}
