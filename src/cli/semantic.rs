//! `--semantic` / `--embedder` on `preview`, `compact`, `send` and `eval rank`: whether the
//! semantic layer is on and which embedder it uses.

use crate::core::terminal_text::ShownPath;
use std::sync::Arc;

use crate::cli::out::eprint_line;
use crate::core::catalog::RoutingGuide;
use crate::embed::{Embedder, Semantic, VectorKeeping, open_named};
use crate::exit::bad_input;
use crate::workspace::{CONFIG_FILE, Workspace};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct SemanticArgs {
    /// Rank with the semantic layer: each entry's score gains its best similarity to the
    /// question's requests, from the embedder `[rank] semantic` in config.toml names (on
    /// without this flag when that key is set).
    #[arg(long)]
    pub semantic: bool,
    /// The semantic layer's embedder for this run (implies --semantic): `local:DIR` (a
    /// sentence-embedding model directory, e.g. all-MiniLM-L6-v2; needs the semantic-local
    /// build) or `endpoint:MODEL` (a provider's OpenAI-compatible /embeddings).
    #[arg(long, value_name = "local:DIR | endpoint:MODEL")]
    pub embedder: Option<String>,
}

impl SemanticArgs {
    /// The embedder asked for, or `None` when the layer is off: `--embedder`, else the
    /// config's `[rank] semantic`; `--semantic` with neither is an error saying where to set
    /// one.
    pub fn embedder(&self, ws: &Workspace) -> anyhow::Result<Option<Box<dyn Embedder>>> {
        let config = ws.config()?;
        let origin = ws.dir.join(CONFIG_FILE).shown().to_string();
        let (text, from, base) = match (&self.embedder, &config.rank.semantic) {
            (Some(text), _) => (text, "--embedder".to_string(), None),
            (None, Some(text)) => (text, format!("{origin}: rank.semantic"), Some(&ws.dir)),
            (None, None) if self.semantic => {
                return Err(bad_input(format!(
                    "--semantic: no embedder configured: set [rank] semantic = \"local:DIR\" or \"endpoint:MODEL\" in {origin}, or give --embedder"
                )));
            }
            (None, None) => return Ok(None),
        };
        open_named(text, &from, base.map(|b| b.as_path()), &config, &origin).map(Some)
    }

    /// The semantic layer over `guide`, its entry vectors kept in the workspace's cache;
    /// says on stderr how many entries it embedded now, and once when the vectors cannot be
    /// kept (the cache could not be opened or written), saying why.
    pub fn layer(
        &self,
        ws: &Workspace,
        guide: &RoutingGuide,
    ) -> anyhow::Result<Option<Arc<Semantic>>> {
        let Some(embedder) = self.embedder(ws)? else {
            return Ok(None);
        };
        let layer = Semantic::for_catalog_in(embedder, guide, Some(&ws.dir))?;
        if let Some(note) = layer.not_cached_note() {
            eprint_line(&format!("ctxconsole: semantic layer: {note}"));
        }
        if layer.embedded_now > 0 {
            let kept = match &layer.keeping {
                VectorKeeping::Kept(path) => format!("kept in {}", path.shown()),
                _ => "not kept".to_string(),
            };
            eprint_line(&format!(
                "ctxconsole: semantic layer: embedded {} of {} catalog entries with {} ({kept})",
                layer.embedded_now,
                guide.entry_count(),
                layer.embedder_id(),
            ));
        }
        Ok(Some(Arc::new(layer)))
    }
}
