//! `ctxconsole cache`: the output cache where briefed pastes are kept in full.

use crate::core::terminal_text::ShownPath;
use std::path::PathBuf;

use crate::cli::{emit, print_json};
use crate::core::duration::{self, DurationError, parse_duration};
use crate::exit::bad_input;
use crate::format::counted;
use crate::store::cache::{CACHE_FILE, OutputCache, read_cached};
use crate::workspace::resolve_dir;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Print cached content, whole or a line range.
    Get {
        /// The reference a briefing names (16 hex digits).
        #[arg(value_name = "REF")]
        cache_ref: String,
        /// 1-based inclusive line range, `A:B`.
        #[arg(long, value_name = "A:B", value_parser = parse_range)]
        lines: Option<(usize, usize)>,
    },
    /// Remove entries older than a duration, and the semantic layer's sentence vectors not
    /// used within it.
    Gc {
        #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = older_than)]
        older_than: std::time::Duration,
        #[arg(long)]
        json: bool,
    },
}

fn older_than(s: &str) -> Result<std::time::Duration, DurationError> {
    parse_duration(s, duration::AGE)
}

fn parse_range(s: &str) -> Result<(usize, usize), String> {
    crate::core::gate::parse_line_range(s)
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
    let dir = resolve_dir(workspace.as_deref())?;
    match args.what {
        What::Get { cache_ref, lines } => match read_cached(&dir, &cache_ref, lines)? {
            Ok(text) => crate::cli::out::emit_content(&text),
            Err(not) => Err(bad_input(not.message(&cache_ref, lines, "--lines"))),
        },
        What::Gc { older_than, json } => {
            // The bound it holds the cache to, as storing does.
            let max_bytes = crate::workspace::config_in(&dir)?.cache_max_bytes();
            // Only cleans: a missing cache is said, never created.
            let cache = OutputCache::open_existing_in(&dir)?;
            let path = dir.join(CACHE_FILE);
            let Some(cache) = cache else {
                if json {
                    return print_json(&serde_json::json!({
                        "path": path,
                        "exists": false,
                        "removed": 0,
                        "removed_over_bound": 0,
                        "entries": 0,
                        "bytes": 0,
                        "held_bytes": 0,
                        "max_bytes": max_bytes,
                        "vectors_removed": 0,
                        "vectors": 0,
                        "file_bytes_before": 0,
                        "file_bytes_after": 0,
                        "bytes_freed": 0,
                    }));
                }
                return emit(&format!(
                    "nothing to collect: there is no output cache at {}\n",
                    path.shown()
                ));
            };
            let mut cache = cache.with_max_bytes(max_bytes);
            let done = cache.gc(older_than)?;
            let (entries, bytes) = cache.stats()?;
            let vectors = cache.vector_total()?;
            if json {
                return print_json(&serde_json::json!({
                    "path": cache.path(),
                    "exists": true,
                    "removed": done.removed,
                    "removed_over_bound": done.removed_over_bound,
                    "entries": entries,
                    "bytes": bytes,
                    "held_bytes": done.held_bytes,
                    "max_bytes": done.max_bytes,
                    "vectors_removed": done.vectors_removed,
                    "vectors": vectors,
                    "file_bytes_before": done.file_bytes_before,
                    "file_bytes_after": done.file_bytes_after,
                    "bytes_freed": done.bytes_freed(),
                }));
            }
            let over_bound = match done.removed_over_bound {
                0 => String::new(),
                n => format!(" ({n} of them to stay within the bound)"),
            };
            emit(&format!(
                "removed {}{over_bound} and {}; {} ({bytes} bytes) and {} remain in {}; the file went from {} to {} bytes ({} freed); the pastes take {} of the {} bytes [cache] max_bytes allows\n",
                counted(done.removed, "entry", "entries"),
                counted(done.vectors_removed, "sentence vector", "sentence vectors"),
                counted(entries, "entry", "entries"),
                counted(vectors, "vector", "vectors"),
                cache.path().shown(),
                done.file_bytes_before,
                done.file_bytes_after,
                done.bytes_freed(),
                done.held_bytes,
                done.max_bytes
            ))
        }
    }
}
