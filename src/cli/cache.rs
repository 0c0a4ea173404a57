//! `ctxconsole cache`: the output cache where briefed pastes are kept in full.

use crate::core::terminal_text::ShownPath;
use std::path::PathBuf;

use crate::cli::{emit, print_json};
use crate::core::duration::{self, DurationError, parse_duration};
use crate::core::gate::line_range;
use crate::exit::bad_input;
use crate::format::counted;
use crate::store::cache::{CACHE_FILE, OutputCache};
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
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}': expected A:B, like 46:200"))?;
    let bound = |text: &str, name: &str| {
        text.trim().parse::<usize>().map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow => {
                format!("'{s}': {name} is too large (at most {})", usize::MAX)
            }
            _ => format!("'{s}': {name} is not a number"),
        })
    };
    let (a, b) = (bound(a, "A")?, bound(b, "B")?);
    if a == 0 || b < a {
        return Err(format!("'{s}': expected 1 ≤ A ≤ B"));
    }
    Ok((a, b))
}

pub fn run(workspace: Option<PathBuf>, args: Args) -> anyhow::Result<()> {
    let dir = resolve_dir(workspace.as_deref())?;
    // Both subcommands only read or clean: a missing cache is said, never created.
    let cache = OutputCache::open_existing_in(&dir)?;
    let path = dir.join(CACHE_FILE);
    match args.what {
        What::Get { cache_ref, lines } => {
            // What was typed, quoted as every error quotes it: on one line (tester F1).
            let asked = crate::core::terminal_text::quoted(&cache_ref);
            let Some(cache) = cache else {
                return Err(bad_input(format!(
                    "no cached content {asked}: there is no output cache at {} (briefed pastes are kept there by preview and the console)",
                    crate::core::terminal_text::path(&path)
                )));
            };
            let Some(text) = cache.get(&cache_ref)? else {
                return Err(bad_input(format!(
                    "no cached content {asked} in {}",
                    crate::core::terminal_text::path(cache.path())
                )));
            };
            match lines {
                None => crate::cli::out::emit_content(&text),
                Some((a, b)) => match line_range(&text, a, b) {
                    Ok(part) => crate::cli::out::emit_content(&part),
                    Err(count) => Err(bad_input(format!(
                        "{cache_ref} has {}; --lines {a}:{b} starts after the end",
                        counted(count, "line", "lines")
                    ))),
                },
            }
        }
        What::Gc { older_than, json } => {
            let Some(mut cache) = cache else {
                if json {
                    return print_json(&serde_json::json!({
                        "path": path,
                        "exists": false,
                        "removed": 0,
                        "entries": 0,
                        "bytes": 0,
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
            let done = cache.gc(older_than)?;
            let (entries, bytes) = cache.stats()?;
            let vectors = cache.vector_total()?;
            if json {
                return print_json(&serde_json::json!({
                    "path": cache.path(),
                    "exists": true,
                    "removed": done.removed,
                    "entries": entries,
                    "bytes": bytes,
                    "vectors_removed": done.vectors_removed,
                    "vectors": vectors,
                    "file_bytes_before": done.file_bytes_before,
                    "file_bytes_after": done.file_bytes_after,
                    "bytes_freed": done.bytes_freed(),
                }));
            }
            emit(&format!(
                "removed {} and {}; {} ({bytes} bytes) and {} remain in {}; the file went from {} to {} bytes ({} freed)\n",
                counted(done.removed, "entry", "entries"),
                counted(done.vectors_removed, "sentence vector", "sentence vectors"),
                counted(entries, "entry", "entries"),
                counted(vectors, "vector", "vectors"),
                cache.path().shown(),
                done.file_bytes_before,
                done.file_bytes_after,
                done.bytes_freed()
            ))
        }
    }
}
