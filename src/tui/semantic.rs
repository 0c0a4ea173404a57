//! The semantic layer in the console (issue 19 item 5): with `[rank] semantic` in the
//! workspace's config.toml the console ranks as `ctxconsole preview` does with the same
//! config. Opening the embedder and embedding the catalog the first time can take a minute
//! (a local model), so it runs off the UI thread; until it is ready the console ranks
//! lexically and the status line says so, then the current request is planned again. An
//! embedder that fails is one status line naming what and where; the console goes on
//! lexically.

use std::path::PathBuf;
use std::sync::Arc;

use crate::core::compact::PreparedCatalog;
use crate::core::config::Config;
use crate::embed::{Semantic, SemanticSpec, open_embedder};
use crate::preview::QuestionVectors;
use crate::workspace::Workspace;

/// Where the layer stands, for the status line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SemanticStatus {
    /// Not configured: lexical ranking, nothing said.
    #[default]
    Off,
    /// Opening the embedder and embedding the catalog (entries not yet kept in the cache).
    Embedding { embedder: String, entries: usize },
    /// Ranking with the layer: the embedder as configured, and how many entries were
    /// embedded now (the rest came from the cache).
    On {
        embedder: String,
        embedded_now: usize,
        entries: usize,
        /// Why the vectors are not kept in the cache, when they could not be: every start
        /// embeds the catalog again, and the operator is told.
        not_cached: Option<String>,
    },
    /// Configured but unavailable: the one line saying what and where.
    Failed(String),
}

impl SemanticStatus {
    /// Whether questions are (or are about to be) embedded: the layer is on or being built.
    pub fn embeds_questions(&self) -> bool {
        matches!(
            self,
            SemanticStatus::On { .. } | SemanticStatus::Embedding { .. }
        )
    }

    /// The status line's words, or `None` when the layer is off.
    /// `help_key` is the key that opens help, where the reason can be read whole (the
    /// status line cuts it at the terminal's edge): named in a failure, when bound.
    pub fn line(&self, help_key: Option<&str>) -> Option<String> {
        match self {
            SemanticStatus::Off => None,
            SemanticStatus::Embedding { embedder, entries } => Some(format!(
                "semantic layer: embedding {entries} entries with {embedder}… (ranking lexically until then)"
            )),
            // Short: it stays on the status line beside the key hints.
            SemanticStatus::On {
                embedder,
                not_cached,
                ..
            } => Some(match not_cached {
                Some(note) => format!("semantic layer on: {embedder} · {note}"),
                None => format!("semantic layer on: {embedder}"),
            }),
            SemanticStatus::Failed(why) => Some(match help_key {
                Some(key) => {
                    format!("semantic layer off (ranking lexically; {key} shows why): {why}")
                }
                None => format!("semantic layer off (ranking lexically): {why}"),
            }),
        }
    }
}

/// Which plan may call the embedder for the instruction (tester 16 F10: a plan per key,
/// each embedding its text, sent 27 requests for 30 characters typed, all in flight at
/// once). Every plan ranks with the vectors the layer remembers; the instruction is embedded
/// only once it has been still for `QUESTION_SETTLE_MS` (in the console's app), by one plan at
/// a time. Text that settles while that plan is out waits for it (its answer is then stale
/// and dropped) and goes next: the newest text only, never a queue of older ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuestionEmbedding {
    /// The last version of the instruction that stayed still long enough.
    pub settled: u64,
    /// The plan (its generation) that may be calling the embedder now.
    pub in_flight: Option<u64>,
    /// A settled version to plan, embedding, once the plan in flight is back.
    pub waiting: Option<u64>,
}

impl QuestionEmbedding {
    /// How plan `generation` of instruction `version` gets the question's vectors: it
    /// embeds them when the text has settled and no other plan is embedding; otherwise it
    /// reads only what the layer remembers, and a settled text waits its turn.
    pub fn vectors_for(&mut self, generation: u64, version: u64) -> QuestionVectors {
        if self.settled != version {
            return QuestionVectors::Remembered;
        }
        if self.in_flight.is_some() {
            self.waiting = Some(version);
            return QuestionVectors::Remembered;
        }
        self.in_flight = Some(generation);
        QuestionVectors::Embed
    }

    /// Plan `generation` came back; the instruction is at `version` now. True when the
    /// settled text that waited for it is still the instruction and is to be planned now.
    pub fn came_back(&mut self, generation: u64, version: u64) -> bool {
        if self.in_flight != Some(generation) {
            return false;
        }
        self.in_flight = None;
        self.waiting.take() == Some(version)
    }
}

/// The layer `[rank] semantic` asks for, to build off the UI thread.
pub struct SemanticJob {
    /// The embedder as configured (`endpoint:MODEL`, `local:DIR`).
    pub configured: String,
    spec: SemanticSpec,
    config: Config,
    origin: String,
    catalog: Arc<PreparedCatalog>,
    cache_dir: PathBuf,
}

impl SemanticJob {
    /// The job the workspace's `config` (read once, at start) asks for: `Ok(None)` when
    /// `[rank] semantic` is not set; an error (the spec unreadable) is the status line's
    /// text.
    pub fn for_config(ws: &Workspace, config: &Config) -> Result<Option<SemanticJob>, String> {
        let origin = ws.config_origin();
        let Some(configured) = config.rank.semantic.clone() else {
            return Ok(None);
        };
        let spec = SemanticSpec::parse(&configured, &format!("{origin}: rank.semantic"))
            .map_err(|e| crate::exit::said(&e))?
            .relative_to(&ws.dir);
        Ok(Some(SemanticJob {
            configured: configured.trim().to_string(),
            spec,
            config: config.clone(),
            origin,
            catalog: Arc::clone(&ws.catalog),
            cache_dir: ws.dir.clone(),
        }))
    }

    /// What the status line says while this runs.
    pub fn status(&self) -> SemanticStatus {
        SemanticStatus::Embedding {
            embedder: self.configured.clone(),
            entries: self.catalog.guide().entry_count(),
        }
    }

    /// Open the embedder and embed the catalog, its vectors kept in the workspace's
    /// cache (a cache that cannot be opened or written costs the keeping, not the layer,
    /// and the layer says why: [`Semantic::not_cached_note`]). Blocks: run it off the UI
    /// thread.
    pub fn run(self) -> Result<Arc<Semantic>, String> {
        let named = |e: anyhow::Error| {
            format!(
                "{} ({}): {}",
                self.configured,
                self.origin,
                crate::exit::Said(&e)
            )
        };
        let embedder = open_embedder(&self.spec, &self.config, &self.origin).map_err(named)?;
        Semantic::for_catalog_in(embedder, self.catalog.guide(), Some(&self.cache_dir))
            .map(Arc::new)
            .map_err(named)
    }
}
