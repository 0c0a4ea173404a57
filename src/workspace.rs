//! The workspace: budgets (sample → registry → user), the catalog, and where the user's
//! files live. The one object both front ends share.

use crate::core::terminal_text::ShownPath;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::core::assemble::PartTotals;
use crate::core::budget::{BudgetRow, BudgetTable, Layer, MatchedBy, Tier, parse_budgets_toml};
use crate::core::compact::PreparedCatalog;
use crate::core::compact::TrimRecord;
pub use crate::core::config::Config;
use crate::core::past_steps::PastStepsIndex;
use crate::core::planner::{Planner, RulesFile};
use crate::core::prompt::AllowanceBreakdown;
use crate::core::rank::{HistoryPrior, LearnedWords, RankIndex};
use crate::core::request::CatalogTokens;
use crate::exit::bad_input;
use crate::fsio::notice;
use crate::import::catalog::{CatalogFormat, parse_catalog};
use crate::import::litellm::parse_registry;
use crate::import::{read_optional_text, read_text};
use crate::llm::redact::Secrets;
use crate::preview::{AttachmentView, EntryFate, PlannedRequest, PreviewContext};
use crate::sample::{
    SAMPLE_BUDGETS, SAMPLE_CATALOG, SAMPLE_CONFIG, SAMPLE_EXECUTIONS, SAMPLE_PLANNER, SAMPLE_PLANS,
};
use crate::store::history::{HISTORY_FILE, HistoryStore};
use std::collections::HashSet;

/// The model a request is planned for when none is named (CLI and MCP alike): the free
/// tier the seeds' failures were measured on.
pub const DEFAULT_MODEL: &str = "openrouter/openrouter/free";

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
/// data directory. It need not exist yet, but a path naming something that is not a
/// directory is bad input (exit 2) saying where the path came from, before any file
/// inside it is looked for.
pub fn resolve_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let (dir, from) = if let Some(dir) = flag {
        (dir.to_path_buf(), "--workspace")
    } else if let Some(home) = std::env::var_os("CTXCONSOLE_HOME").filter(|v| !v.is_empty()) {
        (PathBuf::from(home), "$CTXCONSOLE_HOME")
    } else {
        let data = dirs::data_dir().unwrap_or_else(std::env::temp_dir);
        (data.join("ctxconsole"), "the platform data directory")
    };
    let what = match std::fs::metadata(&dir) {
        Ok(m) if m.is_file() => "is a file, not a directory",
        Ok(m) if !m.is_dir() => "is not a directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            "is not a directory: a part of its path is a file"
        }
        _ => return Ok(dir),
    };
    Err(bad_input(format!(
        "workspace {} (from {from}) {what}",
        dir.shown()
    )))
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
        let dir = resolve_dir(opts.dir.as_deref())?;
        let mut notes = Vec::new();
        // Each id a registry left out, with its note: a lookup of the id says it.
        let mut left_out: Vec<(String, String)> = Vec::new();
        let mut layers = vec![parse_budgets_toml(
            SAMPLE_BUDGETS,
            "sample budgets",
            Layer::Sample,
        )?];
        let workspace_registry = dir.join(REGISTRY_FILE);
        let registries = [
            read_optional_text(&workspace_registry)?.map(|t| (workspace_registry, t)),
            match &opts.registry {
                Some(p) => Some((p.clone(), read_text(p)?)),
                None => None,
            },
        ];
        for (path, text) in registries.into_iter().flatten() {
            let imported = parse_registry(&text, path.shown().as_ref())?;
            notes.push(format!(
                "{}: {} rows; skipped {} non-chat, {} without a window, {} whose id breaks the name rule or ends in '*' and {} with a value out of bounds or of the wrong type",
                path.shown(),
                imported.rows.len(),
                imported.skipped_not_chat,
                imported.skipped_no_window,
                imported.skipped_bad_id,
                imported.skipped_bad_value
            ));
            left_out.extend(
                imported
                    .left_out
                    .into_iter()
                    .filter_map(|(id, at)| imported.notes.get(at).map(|note| (id, note.clone()))),
            );
            notes.extend(imported.notes);
            layers.push(imported.rows);
        }
        let user_budgets = dir.join(BUDGETS_FILE);
        if let Some(text) = read_optional_text(&user_budgets)? {
            layers.push(parse_budgets_toml(
                &text,
                user_budgets.shown().as_ref(),
                Layer::User,
            )?);
        }
        let mut budgets = BudgetTable::layered(layers);
        for (id, note) in left_out {
            budgets.note_left_out(&id, note);
        }

        let user_catalog = dir.join(CATALOG_FILE);
        let (imported, name) = if let Some(text) = read_optional_text(&user_catalog)? {
            let origin = user_catalog.shown().to_string();
            (parse_catalog(&text, &origin)?, origin)
        } else {
            (
                parse_catalog(SAMPLE_CATALOG, "sample catalog")?,
                "sample catalog".to_string(),
            )
        };
        // Said on every screen with the catalog too (the console's notes, `compact`), and
        // carried by it into every request (`preview`, `--json`, the MCP tools).
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
            catalog: Arc::new(
                PreparedCatalog::new(imported.guide).with_warnings(imported.warnings),
            ),
            catalog_origin,
            planner: Arc::new(planner),
            planner_origin,
            notes,
        })
    }

    /// Replace the catalog with one read from a file.
    pub fn load_catalog_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = read_text(path)?;
        let origin = path.shown().to_string();
        let imported = parse_catalog(&text, &origin)?;
        self.set_catalog(imported.guide, origin, imported.format, imported.warnings);
        Ok(())
    }

    /// The workspace's notes with `warnings` (another catalog's) in place of its own
    /// catalog's: what it says once that catalog replaces its own.
    pub fn notes_with(&self, warnings: &[String]) -> Vec<String> {
        let own = self.catalog.warnings();
        self.notes
            .iter()
            .filter(|n| !own.contains(n))
            .chain(warnings)
            .cloned()
            .collect()
    }

    pub fn set_catalog(
        &mut self,
        guide: crate::core::catalog::RoutingGuide,
        name: String,
        format: CatalogFormat,
        warnings: Vec<String>,
    ) {
        // The replaced catalog's notes go with it (tester 8 F8: `compact --catalog FILE`
        // still said the workspace catalog's repeats).
        self.notes = self.notes_with(&warnings);
        self.index = Arc::new(RankIndex::new(&guide));
        self.catalog = Arc::new(PreparedCatalog::new(guide).with_warnings(warnings));
        self.catalog_origin = CatalogOrigin {
            name,
            format: format.to_string(),
        };
    }
}

impl Workspace {
    /// What a preview needs, shareable with a worker thread. `store_briefings` decides
    /// whether briefed pastes are written to the output cache in the data directory.
    /// The briefed pastes are kept with the configured keys taken out; when the config
    /// cannot be read (so the keys are not known) none is kept — the command reading the
    /// config next says what is wrong with it.
    pub fn preview_context(&self, store_briefings: bool) -> PreviewContext {
        let config = self.config().ok();
        let secrets = config.as_ref().map(secrets_of);
        let cache_max_bytes = config.as_ref().map_or(
            crate::core::bounds::CACHE_BYTES_DEFAULT,
            Config::cache_max_bytes,
        );
        // The routes previews show; a config that cannot be read shows none (the command
        // reading it next says why).
        let providers = config.and_then(|c| {
            crate::llm::provider::Providers::from_config(&c, &self.config_origin())
                .ok()
                .map(Arc::new)
        });
        PreviewContext {
            providers,
            cache_dir: (store_briefings && secrets.is_some()).then(|| self.dir.clone()),
            cache_max_bytes,
            secrets: Arc::new(secrets.unwrap_or_default()),
            budgets: Arc::new(self.budgets.clone()),
            catalog: Arc::clone(&self.catalog),
            index: Arc::clone(&self.index),
            planner: Arc::clone(&self.planner),
            prior: None,
            past_steps: None,
            semantic: None,
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
    /// Why the model's own entry has no row, when a registry left it out (skipped, or a
    /// spelling that prints like the one read): the full table's note, said here too.
    pub notes: &'a [String],
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
            notes: resolved.notes,
        }
    }
}

impl Workspace {
    /// The workspace's `config.toml`, or the defaults.
    pub fn config(&self) -> anyhow::Result<Config> {
        config_in(&self.dir)
    }

    /// The configured provider keys as set now: what is kept and printed never holds one
    /// (see [`Secrets`]).
    pub fn secrets(&self) -> anyhow::Result<Secrets> {
        Ok(secrets_of(&self.config()?))
    }

    /// The name the config is known by in errors: the workspace's file.
    pub fn config_origin(&self) -> String {
        self.dir.join(CONFIG_FILE).shown().to_string()
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

    /// Open the history store, creating it when missing. The workspace's own store is
    /// seeded with the sample history when new; a `--store` path only with `--sample`, else
    /// it starts empty. A new store is announced once. An existing store is never reseeded
    /// or overwritten.
    pub fn open_history(&self, store: &StoreChoice) -> anyhow::Result<HistoryStore> {
        self.open_history_with(store, &self.config()?)
    }

    /// [`Workspace::open_history`] with the workspace's config already read (the console
    /// reads it once at start and passes it on).
    pub fn open_history_with(
        &self,
        store: &StoreChoice,
        config: &Config,
    ) -> anyhow::Result<HistoryStore> {
        self.open_history_waiting(store, config, crate::store::sqlite::BUSY_TIMEOUT)
    }

    /// [`Workspace::open_history_with`], waiting at most `wait` for another process's lock
    /// on the store (the console's, which tests shorten).
    pub fn open_history_waiting(
        &self,
        store: &StoreChoice,
        config: &Config,
        wait: std::time::Duration,
    ) -> anyhow::Result<HistoryStore> {
        let path = self.history_path(store.path.as_deref());
        let own = store.path.is_none();
        if own {
            crate::fsio::private_dir(&self.dir, HISTORY_FILE)?;
        }
        let (mut history, created) = HistoryStore::open_created_waiting(&path, wait)?;
        history.set_secrets(Arc::new(secrets_of(config)));
        // Checked when the config was read: at most 30 days, so the seconds fit an i64.
        if let Some(window) = config.history.drift_window(&self.config_origin())? {
            history.set_drift_window(i64::try_from(window.as_secs()).unwrap_or(i64::MAX))?;
        }
        let name = path.shown();
        if own || store.sample {
            if let Some(plans) =
                history.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &self.pipeline_ids())?
            {
                // What this process added: another's imports are theirs to report.
                let done = if created { "created" } else { "seeded" };
                notice(format!(
                    "{done} history store {name} with the sample history ({plans} plans)"
                ));
            } else if store.sample {
                let plans = history.counts()?.plans;
                notice(format!(
                    "--sample: {name} already holds {plans} plans; the sample history was not added"
                ));
            }
        } else if created {
            notice(format!(
                "created empty history store {name} (with --sample a new store starts with the sample history)"
            ));
        }
        Ok(history)
    }
}

/// The `config.toml` in the workspace directory `dir` laid over the sample, or the sample
/// when there is none: what [`Workspace::config`] reads, for a command that needs no more
/// of the workspace.
pub fn config_in(dir: &Path) -> anyhow::Result<Config> {
    let sample = Config::parse(SAMPLE_CONFIG, "sample config")?;
    let path = dir.join(CONFIG_FILE);
    let Some(text) = read_optional_text(&path)? else {
        return Ok(sample);
    };
    let origin = path.shown();
    let config = sample.overlay(Config::parse(&text, origin.as_ref())?);
    // The providers are checked wherever the config is read, not first at a send: a base
    // URL that is not http(s) passed `preview` and the console (tester 16 F7).
    crate::llm::provider::Providers::from_config(&config, origin.as_ref())?;
    Ok(config)
}

/// The configured provider keys of the workspace `--workspace` (or its default) names, as
/// set now, without loading the rest of it: what a command that prints the operator's own
/// text (`eval rank`'s intents) takes out of it.
pub fn secrets_in(workspace: Option<&Path>) -> anyhow::Result<Secrets> {
    Ok(secrets_of(&config_in(&resolve_dir(workspace)?)?))
}

/// The keys held now by the variables the config's providers name in `key_env`, and the MCP
/// server's bearer token when it comes from its variable: taken out of every output, store
/// and log alike (review 50 L9: a bridge's `--mcp "… Bearer $CTXCONSOLE_MCP_TOKEN"` printed
/// it on stdout and stderr).
pub fn secrets_of(config: &crate::core::config::Config) -> Secrets {
    let mut variables = config.key_variables();
    variables.push(crate::core::config::MCP_TOKEN_ENV.to_string());
    Secrets::from_env(&variables)
}

/// The history a server that must not write serves (see
/// [`Workspace::open_history_read_only`]).
pub enum ReadOnlyHistory {
    /// The store file, opened read-only: a server opens it again per request, so another
    /// process's imports are seen.
    File(HistoryStore),
    /// No store file: the history a new one would start with, held in memory.
    Memory(HistoryStore),
}

impl Workspace {
    /// The history store for a server that must not write (`mcp --read-only`). An existing
    /// store is opened read-only: never seeded, migrated or given the config's drift window
    /// (a different one is said, and the store's is used). Where there is none, the history
    /// a new store would start with — the sample for the workspace's own store or with
    /// `--sample`, else none — is built in memory, and no file or directory is created.
    pub fn open_history_read_only(&self, store: &StoreChoice) -> anyhow::Result<ReadOnlyHistory> {
        let path = self.history_path(store.path.as_deref());
        let config = self.config()?;
        let window = config
            .history
            .drift_window(&self.config_origin())?
            // Checked when the config was read: at most 30 days, so the seconds fit an i64.
            .map(|w| i64::try_from(w.as_secs()).unwrap_or(i64::MAX));
        let name = path.shown();
        if let Some(history) = HistoryStore::open_read_only(&path)? {
            if let Some(w) = window.filter(|w| *w != history.drift_window()) {
                let secs = |s: i64| {
                    crate::core::duration::describe(std::time::Duration::from_secs(
                        u64::try_from(s).unwrap_or(0),
                    ))
                };
                notice(format!(
                    "{name}: opened read-only, so its drift window stays {} (config.toml's \
                     history.drift_window {} is applied by the next command that writes it)",
                    secs(history.drift_window()),
                    secs(w)
                ));
            }
            return Ok(ReadOnlyHistory::File(history));
        }
        let mut history = HistoryStore::in_memory(&path)?;
        if let Some(w) = window {
            history.set_drift_window(w)?;
        }
        if (store.path.is_none() || store.sample)
            && let Some(plans) =
                history.seed_if_new(SAMPLE_PLANS, SAMPLE_EXECUTIONS, &self.pipeline_ids())?
        {
            notice(format!(
                "no history store at {name}: serving the sample history ({plans} plans) from \
                 memory; read-only, nothing is created"
            ));
        } else {
            notice(format!(
                "no history store at {name}: serving an empty history from memory; read-only, \
                 nothing is created"
            ));
        }
        Ok(ReadOnlyHistory::Memory(history))
    }
}

/// Which history store a command uses: `--store FILE`, else the workspace's own
/// `history.sqlite`; and whether a new one gets the sample history (`--sample`; the
/// workspace's own always does).
#[derive(Debug, Clone, Default)]
pub struct StoreChoice {
    pub path: Option<PathBuf>,
    pub sample: bool,
}

/// The history's part in ranking (see [`Workspace::history_ranking`]).
#[derive(Clone)]
pub struct HistoryRanking {
    pub prior: Arc<HistoryPrior>,
    /// The catalog's index, its entries carrying their learned words.
    pub index: Arc<RankIndex>,
}

impl HistoryRanking {
    /// Rank a request's catalog with it: the prior, and the index with learned words.
    pub fn apply(self, ctx: &mut PreviewContext) {
        ctx.prior = Some(self.prior);
        ctx.index = self.index;
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

    /// What the history store gives the ranking, from one read of its most recent plans
    /// ([`PRIOR_PLANS`]): the prior, and the catalog's index with each tool's learned words
    /// (the words of past intents whose followed plans used it, [`LearnedWords`]). Without
    /// such plans the index is the workspace's own.
    pub fn history_ranking(&self, history: &HistoryStore) -> anyhow::Result<HistoryRanking> {
        let past = history.past_plans(None, PRIOR_PLANS)?;
        let learned = LearnedWords::from_plans(&past);
        let index = if learned.is_empty() {
            Arc::clone(&self.index)
        } else {
            Arc::new(RankIndex::build(
                self.catalog.guide(),
                *self.index.params(),
                Some(&learned),
            ))
        };
        Ok(HistoryRanking {
            prior: Arc::new(HistoryPrior::new(&past)),
            index,
        })
    }

    /// The followed plans' steps by intent shape, from the store's most recent
    /// [`PAST_STEPS_PLANS`] followed plans: what the request's past-plans part is mined from.
    pub fn past_steps(&self, history: &HistoryStore) -> anyhow::Result<PastStepsIndex> {
        Ok(PastStepsIndex::new(
            history.followed_steps(PAST_STEPS_PLANS)?,
        ))
    }
}

/// How many recent followed plans the past-plans part is mined from: the same reach as the
/// ranking prior ([`PRIOR_PLANS`]), so both read the same weeks of history.
pub const PAST_STEPS_PLANS: usize = PRIOR_PLANS;

/// The shipped planner rules with the workspace's `planner.toml` laid over them.
fn load_planner(dir: &Path) -> anyhow::Result<(Planner, String)> {
    let mut rules = RulesFile::parse(SAMPLE_PLANNER, "sample planner rules")?;
    let mut origin = "sample rules".to_string();
    let user = dir.join(PLANNER_FILE);
    if let Some(text) = read_optional_text(&user)? {
        let name = user.shown().to_string();
        rules = rules.overlay(RulesFile::parse(&text, &name)?);
        origin = format!("sample rules + {name}");
        return Ok((Planner::new(&rules, &name)?, origin));
    }
    Ok((Planner::new(&rules, &origin)?, origin))
}

/// A compaction as `compact --json` prints it and the MCP tool `compact_catalog` returns it:
/// the planned request's catalog side.
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
    /// The catalog's tokens as the model receives it, header line included: as sent (the
    /// request's catalog part) and in full. `trim` counts the catalog text alone.
    pub catalog_tokens: CatalogTokens,
    /// The request's input by part, adding up to its input tokens: `preview --json`'s
    /// `request.totals`.
    pub parts: &'a PartTotals,
    pub trim: &'a TrimRecord,
    /// Entries sent, in catalog order: the same list `preview --json` gives as
    /// `compaction.kept` for the same model, tier, instruction and attachments.
    pub kept: &'a [String],
    /// Every entry with its fate: kept (and which trim steps changed it), removed by the
    /// planner, cut by the budget.
    pub entries: &'a [EntryFate],
    /// The planner's fired categories for the instruction.
    pub categories: &'a [String],
    pub attachments: &'a [AttachmentView],
    /// The catalog as sent, parsed back into JSON.
    pub catalog: serde_json::Value,
    /// What the model's lookup and reading the catalog noted (`preview --json` says the
    /// same).
    pub warnings: &'a [String],
    /// What loading the workspace noted (the registry's summary and what it left out, the
    /// catalog's repeats): the lines `compact`'s text prints after its summary, and
    /// `budgets --json`'s `notes`.
    pub notes: &'a [String],
}

impl<'a> CompactReport<'a> {
    pub fn of(
        p: &'a PlannedRequest,
        origin: &'a CatalogOrigin,
        notes: &'a [String],
    ) -> anyhow::Result<Self> {
        Ok(CompactReport {
            model: &p.model,
            matched_by: p.matched_by,
            row_id: &p.row_id,
            tier: p.tier,
            tier_overridden: p.tier_overridden,
            tokenizer: p.tokenizer,
            catalog_source: origin,
            allowance: &p.compaction.allowance,
            catalog_tokens: p.catalog_tokens(),
            parts: &p.request.totals,
            trim: &p.compaction.trim,
            kept: &p.compaction.kept,
            entries: &p.compaction.entries,
            categories: &p.planner.categories,
            attachments: &p.attachments,
            catalog: serde_json::from_str(&p.compaction.text)?,
            warnings: &p.warnings,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed limits the sample config.toml states are the ones the code keeps.
    #[test]
    fn the_sample_config_states_the_fixed_limits() {
        let says = [
            format!("a word over {} bytes", crate::core::rank::MAX_RELATED_LEN),
            format!("run over {} bytes", crate::core::text::MAX_SPLIT_LEN),
            format!(
                "the first {} KiB of an instruction",
                crate::core::request::CLASSIFY_MAX_BYTES / 1024
            ),
            format!("first {} KiB", crate::llm::client::OPENING_MAX / 1024),
            format!(
                "up to {} MB is integrity-checked",
                crate::store::sqlite::QUICK_CHECK_ON_OPEN_MAX_BYTES / (1024 * 1024)
            ),
            format!(
                "at most {} MiB",
                crate::mcp_server::params::TEXT_MAX / (1024 * 1024)
            ),
            format!(
                "a message of {} MiB",
                crate::mcp_server::stdio::MESSAGE_MAX / (1024 * 1024)
            ),
        ];
        let text = SAMPLE_CONFIG.replace("\n# ", " ");
        for s in says {
            assert!(text.contains(&s), "sample config.toml does not say '{s}'");
        }
    }
    use crate::core::budget::Tier;

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
