//! `ctxconsole dev`: tools for developing ctxconsole itself (hidden from the main help).

use crate::core::terminal_text::ShownPath;
use std::path::PathBuf;

use crate::cli::emit;
use crate::store::generate::generate_store;
use crate::workspace::{Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Generate a large history store, deterministically, from the sample history.
    GenHistory {
        /// How many plans, at most 10,000,000 (`core::bounds::GENERATED_PLANS`).
        #[arg(long, default_value_t = 100_000, value_parser = generated_plans)]
        plans: usize,
        /// A new file to write (an existing one is refused).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// `--plans` within [`crate::core::bounds::GENERATED_PLANS`]: a count past it (or past what
/// a number holds) is refused with the bound, as clap says which flag.
fn generated_plans(s: &str) -> Result<usize, String> {
    let bound = &crate::core::bounds::GENERATED_PLANS;
    match s.parse::<usize>() {
        Ok(n) if bound.contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number from {} to {} (the most plans a generated store holds)",
            bound.start(),
            bound.end()
        )),
    }
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
    match args.what {
        What::GenHistory { plans, out, seed } => {
            let ws = Workspace::open(&WorkspaceOptions {
                dir: workspace,
                registry: None,
            })?;
            let started = std::time::Instant::now();
            let (n, e) = generate_store(&out, plans, seed, &ws.pipeline_ids(), |done| {
                crate::cli::out::eprint_line(&format!("{done} plans…"));
            })?;
            emit(&format!(
                "{}: {n} plans, {e} executions in {:.1}s\n",
                out.shown(),
                started.elapsed().as_secs_f64()
            ))
        }
    }
}
