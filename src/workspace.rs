//! The workspace: budgets (sample → registry → user), the catalog, and where the user's
//! files live. The one object both front ends share.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::core::budget::{BudgetRow, BudgetTable, Layer, MatchedBy, Tier, parse_budgets_toml};
use crate::core::compact::{Compacted, PreparedCatalog};
use crate::core::error::CoreError;
use crate::core::planner::{Planner, RulesFile};
use crate::core::prompt::{AllowanceBreakdown, catalog_allowance};
use crate::core::rank::{HistoryPrior, RankIndex};
use crate::exit::bad_input;
use crate::import::catalog::{CatalogFormat, parse_catalog};
use crate::import::litellm::parse_registry;
use crate::import::read_text;
use crate::preview::{PreviewContext, cut_order_for};
use crate::store::cache::parse_duration;
use crate::store::history::{HISTORY_FILE, HistoryStore};
use std::collections::{BTreeMap, HashSet};

pub const SAMPLE_BUDGETS: &str = include_str!("../sample-data/budgets.toml");
pub const SAMPLE_CATALOG: &str = include_str!("../sample-data/catalog.json");
pub const SAMPLE_PLANNER: &str = include_str!("../sample-data/planner.toml");
/// The defaults the workspace's `config.toml` is laid over: drift window, client settings,
/// sample providers.
pub const SAMPLE_CONFIG: &str = include_str!("../sample-data/config.toml");
/// Seven weeks of plan history the store is seeded with on first run.
pub const SAMPLE_PLANS: &str = include_str!("../sample-data/history-plans.jsonl");
pub const SAMPLE_EXECUTIONS: &str = include_str!("../sample-data/history-executions.jsonl");
/// The labelled messages `eval planner` measures the rules on.
pub const SAMPLE_PLANNER_EVAL: &str = include_str!("../sample-data/planner-eval.jsonl");
/// Messages written after the rules were tuned, and never tuned on.
pub const SAMPLE_PLANNER_HOLDOUT: &str = include_str!("../sample-data/planner-holdout.jsonl");

/// File names looked for in a workspace directory.
pub const BUDGETS_FILE: &str = "budgets.toml";
pub const CATALOG_FILE: &str = "catalog.json";
pub const REGISTRY_FILE: &str = "registry.json";
pub const PLANNER_FILE: &str = "planner.toml";
pub const KEYMAP_FILE: &str = "keymap.toml";
pub const THEME_FILE: &str = "theme.toml";
/// Settings that are not budgets, catalog, rules, keys or colours.
pub const CONFIG_FILE: &str = "config.toml";

/// Where the workspace lives: `--workspace`, else `CTXCONSOLE_HOME`, else the platform's
/// data directory.
pub fn resolve_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(dir) = flag {
        return dir.to_path_buf();
    }
    if let Some(home) = std::env::var_os("CTXCONSOLE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("ctxconsole")
}

/// Where the catalog came from.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogOrigin {
    pub name: String,
    pub format: String,
}

#[derive(Debug, Default, Clone)]
pub struct WorkspaceOptions {
    pub dir: Option<PathBuf>,
    /// A LiteLLM registry to layer over the sample table (besides one in the workspace).
    pub registry: Option<PathBuf>,
}

pub struct Workspace {
    pub dir: PathBuf,
    pub budgets: BudgetTable,
    pub catalog: Arc<PreparedCatalog>,
    /// The catalog's ranking index, rebuilt with the catalog.
    pub index: Arc<RankIndex>,
    pub catalog_origin: CatalogOrigin,
    pub planner: Arc<Planner>,
    /// "sample rules", or the sample with the user's file laid over it.
    pub planner_origin: String,
    /// Non-fatal notes from loading (dangling step references, skipped registry entries).
    pub notes: Vec<String>,
}

impl Workspace {
    /// Load budgets and catalog. A broken user file is an error naming it: the sample is
    /// never silently substituted for a file the user wrote.
    pub fn open(opts: &WorkspaceOptions) -> anyhow::Result<Workspace> {
        let dir = resolve_dir(opts.dir.as_deref());
        let mut notes = Vec::new();
        let mut layers = vec![parse_budgets_toml(
            SAMPLE_BUDGETS,
            "sample budgets",
            Layer::Sample,
        )?];
        let registries = [
            Some(dir.join(REGISTRY_FILE)).filter(|p| p.is_file()),
            opts.registry.clone(),
        ];
        for path in registries.into_iter().flatten() {
            let text = read_text(&path)?;
            let imported = parse_registry(&text, &path.display().to_string())?;
            notes.push(format!(
                "{}: {} rows; skipped {} non-chat and {} without a window",
                path.display(),
                imported.rows.len(),
                imported.skipped_not_chat,
                imported.skipped_no_window
            ));
            layers.push(imported.rows);
        }
        let user_budgets = dir.join(BUDGETS_FILE);
        if user_budgets.is_file() {
            let text = read_text(&user_budgets)?;
            layers.push(parse_budgets_toml(
                &text,
                &user_budgets.display().to_string(),
                Layer::User,
            )?);
        }
        let budgets = BudgetTable::layered(layers);

        let user_catalog = dir.join(CATALOG_FILE);
        let (imported, name) = if user_catalog.is_file() {
            let text = read_text(&user_catalog)?;
            let origin = user_catalog.display().to_string();
            (parse_catalog(&text, &origin)?, origin)
        } else {
            (
                parse_catalog(SAMPLE_CATALOG, "sample catalog")?,
                "sample catalog".to_string(),
            )
        };
        notes.extend(imported.warnings.iter().cloned());
        let catalog_origin = CatalogOrigin {
            name,
            format: imported.format.to_string(),
        };
        let (planner, planner_origin) = load_planner(&dir)?;
        Ok(Workspace {
            dir,
            budgets,
            index: Arc::new(RankIndex::new(&imported.guide)),
            catalog: Arc::new(PreparedCatalog::new(imported.guide)),
            catalog_origin,
            planner: Arc::new(planner),
            planner_origin,
            notes,
        })
    }

    /// Replace the catalog with one read from a file.
    pub fn load_catalog_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = read_text(path)?;
        let origin = path.display().to_string();
        let imported = parse_catalog(&text, &origin)?;
        self.set_catalog(imported.guide, origin, imported.format, imported.warnings);
        Ok(())
    }

    pub fn set_catalog(
        &mut self,
        guide: crate::core::catalog::RoutingGuide,
        name: String,
        format: CatalogFormat,
        warnings: Vec<String>,
    ) {
        self.notes.extend(warnings);
        self.index = Arc::new(RankIndex::new(&guide));
        self.catalog = Arc::new(PreparedCatalog::new(guide));
        self.catalog_origin = CatalogOrigin {
            name,
            format: format.to_string(),
        };
    }
}

impl Workspace {
    /// What a preview needs, shareable with a worker thread. `store_briefings` decides
    /// whether briefed pastes are written to the output cache in the data directory.
    pub fn preview_context(&self, store_briefings: bool) -> PreviewContext {
        PreviewContext {
            budgets: Arc::new(self.budgets.clone()),
            catalog: Arc::clone(&self.catalog),
            index: Arc::clone(&self.index),
            planner: Arc::clone(&self.planner),
            cache_dir: store_briefings.then(|| self.dir.clone()),
            prior: None,
        }
    }
}

/// The budgets table as `budgets --json` prints it and the MCP resource
/// `ctxconsole://context-budgets` serves it: one shape, so the two agree.
#[derive(Debug, Serialize)]
pub struct BudgetsReport<'a> {
    pub rows: &'a [BudgetRow],
    pub fallback: &'a BudgetRow,
    pub notes: &'a [String],
}

/// How one model resolves, as `budgets --model M --json` prints it and
/// `ctxconsole://budgets/{model}` serves it.
#[derive(Debug, Serialize)]
pub struct BudgetLookup<'a> {
    pub model: &'a str,
    pub matched_by: MatchedBy,
    pub row: &'a BudgetRow,
}

impl Workspace {
    pub fn budgets_report(&self) -> BudgetsReport<'_> {
        BudgetsReport {
            rows: self.budgets.rows(),
            fallback: self.budgets.fallback(),
            notes: &self.notes,
        }
    }

    /// An unknown model is not an error: it resolves to the fallback row, and says so.
    pub fn budget_lookup<'a>(&'a self, model: &'a str) -> BudgetLookup<'a> {
        let resolved = self.budgets.lookup(model);
        BudgetLookup {
            model,
            matched_by: resolved.matched_by,
            row: resolved.row,
        }
    }
}

/// `config.toml`: settings with defaults in code.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub history: HistoryConfig,
    #[serde(default)]
    pub llm: LlmConfig,
    /// Model-id prefix → endpoint; a user's entry replaces the sample's of the same name.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// How the client talks to endpoints. Durations as `10s`, `500ms`, `5m`.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub connect_timeout: Option<String>,
    /// From sending the request to the last byte of the reply.
    pub timeout: Option<String>,
    /// Retries after a 429, a 5xx or a refused connection.
    pub retries: Option<u32>,
    /// First backoff; it doubles per retry.
    pub retry_base: Option<String>,
    /// A retry-after longer than this is not waited for.
    pub retry_max_wait: Option<String>,
    pub stream: Option<bool>,
    /// The provider for model ids no prefix matches (sent unchanged).
    pub default_provider: Option<String>,
    /// Names the planner answers to; a plan calling one is demoted by the guard.
    pub self_names: Option<Vec<String>>,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Model ids starting with this go here, with the prefix removed.
    pub prefix: String,
    /// The OpenAI-compatible base, e.g. `https://openrouter.ai/api/v1`.
    pub base_url: String,
    /// The *name* of the environment variable holding the key; the key itself is never
    /// read from or written to any file.
    pub key_env: Option<String>,
    pub stream: Option<bool>,
}

impl Config {
    /// `over`'s settings laid on top of these: set fields win, providers replace by name.
    fn overlay(mut self, over: Config) -> Config {
        let (a, b) = (&mut self.llm, over.llm);
        a.connect_timeout = b.connect_timeout.or(a.connect_timeout.take());
        a.timeout = b.timeout.or(a.timeout.take());
        a.retries = b.retries.or(a.retries);
        a.retry_base = b.retry_base.or(a.retry_base.take());
        a.retry_max_wait = b.retry_max_wait.or(a.retry_max_wait.take());
        a.stream = b.stream.or(a.stream);
        a.default_provider = b.default_provider.or(a.default_provider.take());
        a.self_names = b.self_names.or(a.self_names.take());
        self.history.drift_window = over.history.drift_window.or(self.history.drift_window);
        self.providers.extend(over.providers);
        self
    }
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// How long after a plan an execution without a plan id still counts for it (`15m`).
    pub drift_window: Option<String>,
}

impl Workspace {
    /// The workspace's `config.toml`, or the defaults.
    pub fn config(&self) -> anyhow::Result<Config> {
        let sample: Config = toml::from_str(SAMPLE_CONFIG)
            .map_err(|e| CoreError::toml("sample config", SAMPLE_CONFIG, &e))?;
        let path = self.dir.join(CONFIG_FILE);
        if !path.is_file() {
            return Ok(sample);
        }
        let text = read_text(&path)?;
        let origin = path.display().to_string();
        let user: Config =
            toml::from_str(&text).map_err(|e| CoreError::toml(&origin, &text, &e))?;
        Ok(sample.overlay(user))
    }

    /// Pipeline ids of the catalog: a one-step plan naming one is `pipeline-direct`.
    pub fn pipeline_ids(&self) -> HashSet<String> {
        self.catalog
            .guide()
            .pipelines
            .iter()
            .map(|p| p.id.clone())
            .collect()
    }

    /// Where the history store lives: `--store`, else `history.sqlite` in the workspace.
    pub fn history_path(&self, store: Option<&Path>) -> PathBuf {
        store.map_or_else(|| self.dir.join(HISTORY_FILE), Path::to_path_buf)
    }

    /// Open the history store, creating and seeding it with the sample history when it is
    /// new. An existing store is never reseeded or overwritten.
    pub fn open_history(&self, store: Option<&Path>) -> anyhow::Result<HistoryStore> {
        let path = self.history_path(store);
        let mut history = HistoryStore::open(&path)?;
        let config = self.config()?;
        if let Some(w) = config.history.drift_window {
            let secs = parse_duration(&w).map_err(|e| {
                bad_input(format!(
                    "{}: history.drift_window: {e}",
                    self.dir.join(CONFIG_FILE).display()
                ))
            })?;
            history.set_drift_window(secs.as_secs() as i64)?;
        }
        history.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &self.pipeline_ids())?;
        Ok(history)
    }
}

/// How many recent plans the ranking prior reads: enough to cover weeks of a busy
/// gateway, few enough that building it stays in milliseconds.
pub const PRIOR_PLANS: usize = 5_000;

impl Workspace {
    /// The ranking prior from the history store's most recent plans.
    pub fn history_prior(&self, history: &HistoryStore) -> anyhow::Result<HistoryPrior> {
        Ok(HistoryPrior::new(&history.past_plans(None, PRIOR_PLANS)?))
    }
}

/// The shipped planner rules with the workspace's `planner.toml` laid over them.
fn load_planner(dir: &Path) -> anyhow::Result<(Planner, String)> {
    let mut rules = RulesFile::parse(SAMPLE_PLANNER, "sample planner rules")?;
    let mut origin = "sample rules".to_string();
    let user = dir.join(PLANNER_FILE);
    if user.is_file() {
        let text = read_text(&user)?;
        let name = user.display().to_string();
        rules = rules.overlay(RulesFile::parse(&text, &name)?);
        origin = format!("sample rules + {name}");
        return Ok((Planner::new(&rules, &name)?, origin));
    }
    Ok((Planner::new(&rules, &origin)?, origin))
}

/// A model's effective row: looked up, then the operator's tier override applied.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveRow {
    pub model: String,
    pub matched_by: MatchedBy,
    pub row: BudgetRow,
    pub tier_override: Option<Tier>,
}

pub fn effective_row(
    budgets: &BudgetTable,
    model: &str,
    tier_override: Option<Tier>,
) -> EffectiveRow {
    let resolved = budgets.lookup(model);
    let row = match tier_override {
        Some(t) => resolved.row.with_tier(t),
        None => resolved.row.clone(),
    };
    EffectiveRow {
        model: model.to_string(),
        matched_by: resolved.matched_by,
        row,
        tier_override,
    }
}

/// Everything the catalog pane and `compact` show for one model.
#[derive(Debug, Clone)]
pub struct CompactionView {
    pub effective: EffectiveRow,
    pub allowance: AllowanceBreakdown,
    pub compacted: Compacted,
}

/// Compact `catalog` for a model's effective row with `prompt` counted against it. With an
/// index and a prompt, the final cut follows the prompt's ranking (lowest relevance first).
pub fn compact_for(
    catalog: &PreparedCatalog,
    index: Option<&RankIndex>,
    effective: EffectiveRow,
    prompt: &str,
) -> CompactionView {
    let allowance = catalog_allowance(&effective.row, "", prompt);
    let ranking = index.filter(|_| !prompt.trim().is_empty()).map(|ix| {
        ix.rank(
            crate::preview::opening(prompt, crate::preview::CLASSIFY_MAX_BYTES),
            None,
        )
    });
    let order = cut_order_for(catalog, ranking.as_ref());
    let compacted = catalog.compact(allowance.allowance(), effective.row.tokenizer, &order);
    CompactionView {
        effective,
        allowance,
        compacted,
    }
}

/// A compaction as `compact --json` prints it and the MCP tool `compact_catalog` returns it.
#[derive(Debug, Serialize)]
pub struct CompactReport<'a> {
    pub model: &'a str,
    pub matched_by: MatchedBy,
    pub row_id: &'a str,
    pub tier: Tier,
    pub tier_overridden: bool,
    pub tokenizer: &'static str,
    pub catalog_source: &'a CatalogOrigin,
    pub allowance: &'a AllowanceBreakdown,
    pub trim: &'a crate::core::compact::TrimRecord,
    /// The catalog as sent, parsed back into JSON.
    pub catalog: serde_json::Value,
}

impl CompactionView {
    pub fn report<'a>(&'a self, origin: &'a CatalogOrigin) -> anyhow::Result<CompactReport<'a>> {
        Ok(CompactReport {
            model: &self.effective.model,
            matched_by: self.effective.matched_by,
            row_id: &self.effective.row.id,
            tier: self.effective.row.tier,
            tier_overridden: self.effective.tier_override.is_some(),
            tokenizer: self.effective.row.tokenizer.name(),
            catalog_source: origin,
            allowance: &self.allowance,
            trim: &self.compacted.trim,
            catalog: serde_json::from_str(&self.compacted.text)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_workspace_loads_with_enough_rows_and_entries() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().into()),
            registry: None,
        })
        .unwrap();
        assert!(ws.budgets.rows().len() >= 20);
        for t in Tier::ALL {
            assert!(ws.budgets.rows().iter().any(|r| r.tier == t));
        }
        let rows = ws.budgets.rows();
        assert!(
            rows.iter().any(|r| r.hybrid_reasoning)
                && rows.iter().any(|r| r.strict_json)
                && rows.iter().any(|r| r.prefix_cache)
        );
        assert!(
            rows.iter().all(|r| r.lint.is_empty()),
            "sample rows should lint clean"
        );
        assert!(ws.catalog.guide().packs.len() >= 45 && ws.catalog.guide().pipelines.len() >= 18);
        assert!(ws.notes.is_empty(), "{:?}", ws.notes);
        // Nothing is written just by opening.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn user_files_overlay_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(BUDGETS_FILE),
            "[[model]]\nid = \"openrouter/openrouter/free\"\ninput_tokens = 50000\noutput_tokens = 2000\ntier = \"B\"\nsource = \"measured\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(CATALOG_FILE),
            r#"{"tools":[{"name":"only_tool","description":"x","inputSchema":{}}]}"#,
        )
        .unwrap();
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().into()),
            registry: None,
        })
        .unwrap();
        let r = ws.budgets.lookup("openrouter/openrouter/free");
        assert_eq!(r.row.layer, Layer::User);
        assert_eq!(r.row.input_tokens, 50_000);
        assert_eq!(ws.catalog.len(), 1);
        assert_eq!(ws.catalog_origin.format, "MCP tools/list");
    }

    #[test]
    fn a_broken_user_file_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(BUDGETS_FILE), "[[model]\nid=1").unwrap();
        let err = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().into()),
            registry: None,
        })
        .err()
        .unwrap();
        assert!(err.to_string().contains("budgets.toml"), "{err}");
        assert_eq!(crate::exit::code_for(&err), 2);
    }
}
