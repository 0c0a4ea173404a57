//! `ctxconsole budgets`: the layered budgets table, or how one model resolves.

use std::path::PathBuf;

use crate::cli::table::render;
use crate::cli::{emit, print_json};
use crate::core::budget::{BudgetRow, MatchKind, MatchedBy};
use crate::format::thousands;
use crate::workspace::{Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Resolve one model id: exact, then longest prefix, then the fallback.
    #[arg(long, value_name = "ID", value_parser = crate::cli::parse_model_id)]
    pub model: Option<String>,
    /// A LiteLLM model_prices_and_context_window.json to layer over the sample table.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: args.registry,
    })?;
    if let Some(model) = &args.model {
        let lookup = ws.budget_lookup(model);
        if args.json {
            return print_json(&lookup);
        }
        emit(&describe_row(model, lookup.matched_by, lookup.row))?;
        for note in lookup.notes {
            emit(&format!("note: {note}\n"))?;
        }
        return Ok(());
    }
    if args.json {
        return print_json(&ws.budgets_report());
    }
    let mut rows: Vec<Vec<String>> = ws.budgets.rows().iter().map(table_row).collect();
    rows.push(table_row(ws.budgets.fallback()));
    emit(&render(
        &[
            "ID",
            "MATCH",
            "TIER",
            ">IN",
            ">OUT",
            ">CATALOG B",
            "FLAGS",
            "$ IN/CACHED/OUT",
            "TOKENIZER",
            "LAYER",
            "LINT",
        ],
        &rows,
    ))?;
    emit(
        "flags: R hybrid reasoning, J strict JSON, P prefix cache, F two-pass filter allowed; * tier derived by rule\n",
    )?;
    for note in &ws.notes {
        emit(&format!("note: {note}\n"))?;
    }
    Ok(())
}

fn table_row(row: &BudgetRow) -> Vec<String> {
    vec![
        row.id.clone(),
        match row.match_kind {
            MatchKind::Exact => "exact".into(),
            MatchKind::Prefix => "prefix".into(),
        },
        format!("{}{}", row.tier, if row.tier_derived { "*" } else { "" }),
        thousands(row.input_tokens),
        thousands(row.output_tokens),
        row.max_catalog_bytes
            .map(thousands)
            .unwrap_or_else(|| "none".into()),
        row.flags(),
        row.price_label(),
        row.tokenizer.name().into(),
        row.layer.to_string(),
        if row.lint.is_empty() {
            String::new()
        } else {
            format!("{} issue(s)", row.lint.len())
        },
    ]
}

fn describe_row(model: &str, matched_by: MatchedBy, row: &BudgetRow) -> String {
    use crate::core::terminal_text::{for_terminal_line, name};
    let how = match matched_by {
        MatchedBy::Exact => "exact match".to_string(),
        MatchedBy::Prefix => format!("prefix row {}", name(&row.shown_id())),
        MatchedBy::Fallback => "no row matched: fallback".to_string(),
    };
    let mut out = format!("{}\n  resolved by   {how}\n", for_terminal_line(model));
    let lines = [
        (
            "tier",
            format!(
                "{}{}",
                row.tier,
                if row.tier_derived { " (derived)" } else { "" }
            ),
        ),
        ("input tokens", thousands(row.input_tokens)),
        ("output tokens", thousands(row.output_tokens)),
        // What every request on the row carries (tester 19 F15: only --json said it).
        (
            "max_tokens",
            match row.max_tokens {
                Some(n) => format!("{} (sent instead of the output reserve)", thousands(n)),
                None => format!("{} (the output reserve)", thousands(row.output_tokens)),
            },
        ),
        ("sampling", row.sampling.label()),
        (
            "catalog cap",
            row.max_catalog_bytes
                .map(|b| format!("{} bytes", thousands(b)))
                .unwrap_or_else(|| "none".into()),
        ),
        ("flags", row.flags()),
        ("prices $/M", row.price_label()),
        ("tokenizer", row.tokenizer.name().into()),
        ("prompt", row.prompt_variant.to_string()),
        ("layer", row.layer.to_string()),
        ("source", row.source.clone()),
    ];
    // Each value on its one line: a budgets.toml `source` holding a line feed had written a
    // line of its own (tester 50 F7); the console shows these values so too.
    for (k, v) in lines {
        out.push_str(&format!("  {k:<13} {}\n", for_terminal_line(&v)));
    }
    for l in &row.lint {
        out.push_str(&format!("  lint          {}\n", for_terminal_line(l)));
    }
    out
}
