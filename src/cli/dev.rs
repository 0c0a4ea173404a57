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
        #[arg(long, default_value_t = 100_000)]
        plans: usize,
        /// A new file to write (an existing one is refused).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
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
