//! `ctxconsole import plans|executions FILE`: JSON Lines into the history store, one
//! transaction per file.

use std::path::PathBuf;

use crate::cli::{emit, print_json};
use crate::import::open_text;
use crate::store::history::ImportReport;
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
}

#[derive(Debug, clap::Args)]
pub struct FileArgs {
    /// The JSONL file, or `-` for stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[arg(long)]
    pub json: bool,
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let (ws, mut history) = crate::cli::history::open(workspace, &store)?;
    let (file, json, plans) = match args.what {
        What::Plans(f) => (f.file, f.json, true),
        What::Executions(f) => (f.file, f.json, false),
    };
    let source = file.display().to_string();
    let reader = open_text(&file)?;
    // Big files say how far they are; the rows only become visible at the commit.
    let progress =
        |lines: usize| crate::cli::out::eprint_line(&format!("{source}: {lines} lines read…"));
    let report: ImportReport = if plans {
        history.import_plans(&source, reader, &ws.pipeline_ids(), progress)?
    } else {
        history.import_executions(&source, reader, progress)?
    };
    if json {
        return print_json(&report);
    }
    emit(&format!(
        "{}: {} {} read, {} added, {} already present; drift updated on {} plans ({})\n",
        report.source,
        report.lines,
        report.kind,
        report.added,
        report.already_present,
        report.drift_updated,
        history.path().display()
    ))
}
