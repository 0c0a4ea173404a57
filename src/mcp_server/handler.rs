//! The MCP server's handler: three resources, two resource templates and five tools, each
//! answered by the same code the matching CLI command runs.

use crate::core::history::EXECUTION_CLOCK_SKEW_SECS;
use crate::core::terminal_text::{ShownPath, json_string_for_terminal, quoted};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Cursor;
use std::sync::{Arc, Mutex, PoisonError};

use crate::core::budget::Tier;
use crate::core::budget::effective_row;
use crate::core::compact::PreparedCatalog;
use crate::core::past_steps::PastStepsIndex;
use crate::core::rank::{Confidence, Explanation, RankIndex, SEMANTIC_WEIGHT};
use crate::core::time::format_timestamp_nanos;
use crate::embed::{Semantic, open_named};
use crate::import::catalog::parse_catalog;
use crate::mcp_server::commits::{Call, Commits};
use crate::mcp_server::jsonrpc;
use crate::mcp_server::params::{
    K_MAX, NAME_MAX, Params, TEXT_MAX, bad, max_chars, schema, size_label,
};
use crate::preview::{Ask, CLASSIFY_MAX_BYTES, opening, plan_and_keep};
use crate::store::history::{HistoryStore, ImportReport, PlanFilter};
use crate::store::now_secs;
use crate::store::view::{models_report, my_plans};
use crate::workspace::DEFAULT_MODEL;
use crate::workspace::{CatalogOrigin, CompactReport, HistoryRanking, Workspace};

pub const URI_BUDGETS: &str = "ctxconsole://context-budgets";
pub const URI_BUDGET_PREFIX: &str = "ctxconsole://budgets/";
pub const URI_MY_PLANS: &str = "ctxconsole://my-plans";
pub const URI_MODELS: &str = "ctxconsole://models";

pub const TOOL_PREVIEW: &str = "preview";
pub const TOOL_COMPACT: &str = "compact_catalog";
pub const TOOL_RANK: &str = "rank_tools";
pub const TOOL_RECORD: &str = "record_execution";

/// The most one answer may take as JSON, a tool's result or a resource's text (checked by
/// [`within_result_max`] for both). A tool result travels twice (as structured content and
/// as its text), a resource's text escaped once, and rmcp's clients read at most 16 MiB a
/// message.
pub const RESULT_MAX: usize = 6 * 1024 * 1024;

/// What every request reads: the workspace as it was at start, and where the store is.
pub struct State {
    pub ws: Workspace,
    pub store: HistorySource,
    pub read_only: bool,
    /// The history's part in ranking (the prior and the index with learned words) and
    /// what it was built from (see [`history_ranking`]).
    prior: Mutex<Option<(PriorKey, HistoryRanking)>>,
    /// The followed plans' steps and what they were read from (see [`past_steps`]).
    past_steps: Mutex<Option<(PriorKey, Arc<PastStepsIndex>)>>,
    /// The semantic layer over the workspace's catalog, as far as it got (see
    /// [`State::semantic`]).
    semantic: Mutex<LayerState>,
    /// Places for the calls that compute (preview, compaction, ranking): at most
    /// [`COMPUTING_MAX`] run at once, whoever sends them.
    computing: Arc<tokio::sync::Semaphore>,
}

/// The most compute calls that run at once. A running call cannot be stopped (it runs on
/// a blocking thread), but one still waiting for its place is ended by its cancel and
/// costs nothing: a client sending many heavy calls and cancelling them no longer keeps a
/// core busy for each (tester 15 F3: cancelled compactions ran on to their end).
pub const COMPUTING_MAX: usize = 2;

/// The semantic layer as far as it got.
enum LayerState {
    NotBuilt,
    Ready(Arc<Semantic>),
    /// The last attempt failed: its error, when it ended, and whether a call has been told
    /// (an attempt made at start, beside the handshake, is told to the first call).
    Failed {
        error: String,
        ended: std::time::Instant,
        told: bool,
    },
}

/// Rows are only ever added to the store (imports, replays, `record_execution`), and drift
/// moves only with them or with the drift window: the newest rows and the window identify
/// the history a prior was built from.
type PriorKey = ((i64, i64), i64);

/// Where the server's history is read.
pub enum HistorySource {
    /// A store file, opened per request (read-only when the server is).
    File(std::path::PathBuf),
    /// No store file and a server that must not create one: the history it starts with,
    /// in memory (see [`Workspace::open_history_read_only`]).
    Memory(Mutex<HistoryStore>),
}

/// The store one request reads: its own connection, or the one kept in memory.
pub enum History<'a> {
    Own(HistoryStore),
    Shared(std::sync::MutexGuard<'a, HistoryStore>),
}

impl std::ops::Deref for History<'_> {
    type Target = HistoryStore;
    fn deref(&self) -> &HistoryStore {
        match self {
            History::Own(h) => h,
            History::Shared(h) => h,
        }
    }
}

impl std::ops::DerefMut for History<'_> {
    fn deref_mut(&mut self) -> &mut HistoryStore {
        match self {
            History::Own(h) => h,
            History::Shared(h) => h,
        }
    }
}

impl State {
    pub fn new(ws: Workspace, store: HistorySource, read_only: bool) -> State {
        State {
            ws,
            store,
            read_only,
            prior: Mutex::new(None),
            past_steps: Mutex::new(None),
            semantic: Mutex::new(LayerState::NotBuilt),
            computing: Arc::new(tokio::sync::Semaphore::new(COMPUTING_MAX)),
        }
    }

    /// The semantic layer over the workspace's catalog when `[rank] semantic` in its
    /// config.toml names an embedder (as `ctxconsole preview` reads it: the key alone turns
    /// it on), built once and kept; `None` when the key is not set. Held while building: a
    /// second caller waits for this one. An embedder that fails is an error naming what
    /// and where. A failed attempt is remembered: a call that waited for it, or the first
    /// call after the attempt made at start ([`State::warm_semantic`]), gets its error at
    /// once instead of spending the same retries again; a later call tries again. Vectors
    /// are kept in the workspace's cache.sqlite unless the server is read-only.
    pub fn semantic(&self) -> anyhow::Result<Option<Arc<Semantic>>> {
        self.layer(true)
    }

    /// The attempt made at start, beside the handshake: a failure is kept for the first
    /// call to be told.
    pub fn warm_semantic(&self) -> anyhow::Result<Option<Arc<Semantic>>> {
        self.layer(false)
    }

    fn layer(&self, by_call: bool) -> anyhow::Result<Option<Arc<Semantic>>> {
        let asked = std::time::Instant::now();
        let mut kept = self.semantic.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *kept {
            LayerState::Ready(layer) => return Ok(Some(Arc::clone(layer))),
            LayerState::Failed { error, ended, told } if !*told || *ended >= asked => {
                *told |= by_call;
                return Err(anyhow::anyhow!(
                    "{error} (the attempt that ended {:.1} s ago; the next call tries again)",
                    ended.elapsed().as_secs_f64()
                ));
            }
            _ => {}
        }
        match self.build_semantic() {
            Ok(Some(layer)) => {
                *kept = LayerState::Ready(Arc::clone(&layer));
                Ok(Some(layer))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                *kept = LayerState::Failed {
                    error: crate::exit::said(&e),
                    ended: std::time::Instant::now(),
                    told: by_call,
                };
                Err(e)
            }
        }
    }

    /// Whether a ranking call may reach outside this machine: the semantic layer configured
    /// is an embeddings endpoint.
    fn reaches_out(&self) -> bool {
        self.ws.config().ok().is_some_and(|config| {
            config.rank.semantic.as_deref().is_some_and(|text| {
                matches!(
                    crate::embed::SemanticSpec::parse(text, ""),
                    Ok(crate::embed::SemanticSpec::Endpoint(_))
                )
            })
        })
    }

    fn build_semantic(&self) -> anyhow::Result<Option<Arc<Semantic>>> {
        let config = self.ws.config()?;
        let origin = self.ws.config_origin();
        let Some(text) = &config.rank.semantic else {
            return Ok(None);
        };
        let embedder = open_named(
            text,
            &format!("{origin}: rank.semantic"),
            Some(&self.ws.dir),
            &config,
            &origin,
        )?;
        let layer = Arc::new(Semantic::for_catalog_in(
            embedder,
            self.ws.catalog.guide(),
            (!self.read_only).then_some(self.ws.dir.as_path()),
        )?);
        if let Some(note) = layer.not_cached_note() {
            crate::cli::out::eprint_line(&format!("ctxconsole mcp: semantic layer: {note}"));
        }
        if layer.embedded_now > 0 {
            crate::cli::out::eprint_line(&format!(
                "ctxconsole mcp: semantic layer: embedded {} of {} catalog entries with {}",
                layer.embedded_now,
                self.ws.catalog.len(),
                layer.embedder_id()
            ));
        }
        Ok(Some(layer))
    }
}

impl State {
    /// `text` as a client is told it: a client, which may be remote under `--bind`, is not
    /// told the server's paths, so the workspace's directory is named in words
    /// (`the workspace's history.sqlite`; tester 49 F10: the full-disk groups note named the
    /// store's path, home directory included).
    fn for_client(&self, text: &str) -> String {
        let dir = self.ws.dir.shown().to_string();
        if dir.is_empty() {
            return text.to_string();
        }
        text.replace(&format!("{dir}/"), "the workspace's ")
            .replace(&dir, "the workspace")
    }

    /// A connection of its own per request: WAL lets readers run beside a writer, and an
    /// import by another process is seen at once.
    fn history(&self) -> anyhow::Result<History<'_>> {
        let path = match &self.store {
            HistorySource::Memory(kept) => {
                return Ok(History::Shared(
                    kept.lock().unwrap_or_else(PoisonError::into_inner),
                ));
            }
            HistorySource::File(path) => path,
        };
        if self.read_only {
            return HistoryStore::open_read_only(path)?
                .map(History::Own)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: the history store is gone since the server started",
                        path.shown()
                    )
                });
        }
        // The store was made (and seeded or not) when the server started: this opens it.
        Ok(History::Own(self.ws.open_history(
            &crate::workspace::StoreChoice {
                path: Some(path.clone()),
                sample: false,
            },
        )?))
    }
}

#[derive(Clone)]
pub struct Console {
    state: Arc<State>,
    /// The fates of this connection's `record_execution` calls, shared with a transport
    /// that consults them ([`crate::mcp_server::commits::Settled`]).
    commits: Arc<Commits>,
}

impl Console {
    /// A handler sharing `commits` with its transport (see [`crate::mcp_server::commits`]).
    pub fn with_commits(state: Arc<State>, commits: Arc<Commits>) -> Console {
        Console { state, commits }
    }
}

/// A failure that is not the caller's: the store could not be read, and the like.
fn internal(e: anyhow::Error) -> ErrorData {
    ErrorData::internal_error(crate::exit::said(&e), None)
}

/// Run blocking work (SQLite, ranking, compaction) off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ErrorData> + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ErrorData::internal_error(format!("the request's worker stopped: {e}"), None)
    })?
}

fn to_json(value: &impl Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(value).map_err(|e| internal(e.into()))
}

/// The tools this server lists: `read_only` as `--read-only`; `open_world` when a call may
/// reach outside this machine (the semantic layer asks an embeddings endpoint).
fn tools(read_only: bool, open_world: bool) -> Vec<Tool> {
    let text = |what: &str| {
        json!({"type": "string", "maxLength": max_chars(TEXT_MAX), "description":
            format!("{what} At most {} of UTF-8.", size_label(TEXT_MAX))})
    };
    let name = |what: &str| {
        json!({"type": "string", "maxLength": max_chars(NAME_MAX), "description":
            format!("{what} At most {NAME_MAX} bytes of UTF-8.")})
    };
    let model = name(
        "Model id, e.g. openrouter/openrouter/free (default). An unknown id gets the Tier C fallback row.",
    );
    let tier = json!({"type": "string", "enum": ["A", "B", "C"], "description": "Override the model's tier."});
    let catalog = text(
        "A catalog in any supported format (routing guide, MCP tools/list result, OpenAI tools array, BFCL functions); default: the workspace's.",
    );
    // Ranking and compaction write nothing and give the same answer for the same store:
    // read-only and idempotent (tester 20 F12: compaction said it wrote, ranking said
    // nothing of idempotence). None reaches outside this machine unless the semantic layer
    // asks an embeddings endpoint (`open_world`).
    let reads = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(open_world);
    // Preview keeps a briefed paste in the output cache (once per paste) unless the server
    // is read-only: not a read-only tool then (tester 13: the hint said it was while a big
    // attachment wrote cache.sqlite).
    let briefs = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(false)
        .idempotent(true)
        .open_world(open_world);
    let attachments = json!({
        "type": "array",
        "maxItems": crate::mcp_server::params::ATTACHMENTS_MAX,
        "description": "Texts sent beside the instruction, as `ctxconsole preview --attach`: each goes through the context gate on its own (raw, tight, briefing or over); planner and ranker read only its outline.",
        "items": {
            "type": "object",
            "properties": {"name": name("What the attachment is called."), "text": text("Its text.")},
            "required": ["name", "text"],
            "additionalProperties": false
        }
    });
    let mut list = vec![
        Tool::new(
            TOOL_PREVIEW,
            "What every stage before the model does with one ask: the request summary, the catalog as sent, the planner's verdict and the ranking's top entries with explanations. The same result as `ctxconsole preview --json`.",
            schema(json!({
                "type": "object",
                "properties": {
                    "instruction": text("The ask, as the planner would receive it."),
                    "model": model,
                    "tier": tier,
                    "attachments": attachments,
                    "defaults": text("The caller's defaults block sent with the intent."),
                    "no_history": {"type": "boolean", "description": "Rank without the history prior and send no past plans."},
                    "no_prior": {"type": "boolean", "description": "Send no past-plans part (the steps followed plans produced for intents of the same shape)."}
                },
                "required": ["instruction"],
                "additionalProperties": false
            })),
        )
        .with_annotations(briefs),
        Tool::new(
            TOOL_COMPACT,
            "The catalog as one model receives it, with the Trim record (steps applied, entries cut). The same result as `ctxconsole compact --json`.",
            schema(json!({
                "type": "object",
                "properties": {
                    "model": model,
                    "tier": tier,
                    "catalog": catalog,
                    "prompt": text("The prompt sent with the catalog: its tokens come out of the allowance, and the cut follows its ranking."),
                    "attachments": attachments.clone(),
                    "defaults": text("The caller's defaults block sent with the intent, as `preview` takes it."),
                    "no_history": {"type": "boolean", "description": "Rank without the history (prior, learned words) and send no past plans, as `compact --no-history`."}
                },
                "additionalProperties": false
            })),
        )
        .with_annotations(reads.clone()),
        Tool::new(
            TOOL_RANK,
            "Catalog entries ranked for a query, each with the explanation of its score (term · field · points, pairs, coverage, name, action, prior).",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": text("What the agent wants done."),
                    "catalog": catalog,
                    "k": {"type": "integer", "minimum": 1, "maximum": K_MAX, "description": "How many entries (default 10)."},
                    "no_history": {"type": "boolean", "description": "Rank without the history prior."}
                },
                "required": ["query"],
                "additionalProperties": false
            })),
        )
        .with_annotations(reads),
    ];
    if !read_only {
        list.push(
            Tool::new(
                TOOL_RECORD,
                "Report a tool the agent ran, stored as `ctxconsole import executions` stores it; the drift of the plan it belongs to is updated at once.",
                schema(json!({
                    "type": "object",
                    "properties": {
                        "caller": name("Who ran it (usually the plan's caller; a run naming another caller's plan counts for it beside that caller's own runs, and the answer says so)."),
                        "tool": name("The catalog entry that ran."),
                        "ok": {"type": "boolean", "description": "Whether it succeeded."},
                        "plan_id": name("The plan it follows; one not stored counts for no plan until it is imported, a replay for none; without one it counts for the caller's latest plan within the drift window."),
                        "session": name("The agent's session."),
                        "at": {"type": "string", "description": "When it ran, RFC 3339, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z (default: now)."},
                        "id": name("An id for the execution (default: derived from the rest, `at` included, so the same record sent twice is stored once; `at` defaults to now, so a retry without `at` or `id` is another execution: give one of them to make a retry safe). One already stored with other content is refused.")
                    },
                    "required": ["caller", "tool", "ok"],
                    "additionalProperties": false
                })),
            )
            // A retry without `at` or `id` is another execution: not idempotent (tester 13
            // T13-8: the hint said it was, which tells a client it may retry freely).
            .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false)),
        );
    }
    // Reads only: served by a read-only server too.
    list.push(crate::mcp_server::read_cached::tool());
    list
}

/// The part of `uri` after `prefix`, decoded; an empty or undecodable one is a bad `uri`.
fn template_value(uri: &str, prefix: &str, what: &str) -> Result<String, ErrorData> {
    let raw = &uri[prefix.len()..];
    // A model or caller follows the one name rule every front end applies, and the refusal
    // says which part of it the decoded name broke (tester 20 F19: one generic sentence for
    // a bidi character, a space around the name and bytes that are not UTF-8).
    let decoded = crate::core::text::percent_decoded(raw);
    let problem = if !decoded.every_escape_whole {
        // Tester 50 F14: `%4` and `%+1` had read "not percent-encoded UTF-8".
        "holds a % that begins no escape (an escape is % and two hex digits: %2F)".to_string()
    } else {
        match String::from_utf8(decoded.bytes) {
            Ok(v) => match crate::core::budget::name_problem(&v) {
                None if v.len() <= NAME_MAX => return Ok(v),
                None => format!("is {} bytes; the limit is {NAME_MAX}", v.len()),
                Some(problem) => problem.to_string(),
            },
            Err(_) => "is not percent-encoded UTF-8".to_string(),
        }
    };
    Err(ErrorData::invalid_params(
        format!(
            "resources/read: argument `uri` must name a {what} after {prefix} (percent-encoded, at most {NAME_MAX} bytes): the {what} {problem}"
        ),
        Some(json!({"argument": "uri"})),
    ))
}

/// `tier`: exactly `A`, `B` or `C`, as the schema's `enum` says (tester 20 F11: `"c"` and
/// `" b"` were taken, as the CLI's `--tier` takes them, while the schema refused them).
fn tier_arg(p: &Params<'_>) -> Result<Option<Tier>, ErrorData> {
    p.opt_str("tier", NAME_MAX)?
        .map(|t| {
            ["A", "B", "C"]
                .contains(&t)
                .then(|| t.parse::<Tier>().ok())
                .flatten()
                .ok_or_else(|| {
                    p.error(
                        "tier",
                        format!(
                            "must be A, B or C, not {}",
                            crate::core::terminal_text::quoted(t)
                        ),
                    )
                })
        })
        .transpose()
}

/// The workspace catalog's origin as a client is told it: a file by its name, not the
/// server's path to it (tester 33 F10: a remote client under `--bind` read the server's home
/// directory in `catalog_source.name`).
fn origin_for_client(origin: &CatalogOrigin) -> CatalogOrigin {
    let path = std::path::Path::new(&origin.name);
    let name = match path.file_name() {
        Some(file) if path.is_absolute() => {
            format!("the workspace's {}", file.to_string_lossy())
        }
        _ => origin.name.clone(),
    };
    CatalogOrigin {
        name,
        format: origin.format.clone(),
    }
}

/// A catalog given as an argument, ready to compact and rank.
struct GivenCatalog {
    catalog: Arc<PreparedCatalog>,
    index: Arc<RankIndex>,
    origin: CatalogOrigin,
    /// Given as the `catalog` argument (not the workspace's).
    is_argument: bool,
}

fn catalog_arg(tool: &str, text: Option<&str>, ws: &Workspace) -> Result<GivenCatalog, ErrorData> {
    let Some(text) = text else {
        return Ok(GivenCatalog {
            catalog: Arc::clone(&ws.catalog),
            index: Arc::clone(&ws.index),
            origin: origin_for_client(&ws.catalog_origin),
            is_argument: false,
        });
    };
    let imported = parse_catalog(text, "catalog")
        .map_err(|e| bad(tool, "catalog", format!("is not a catalog: {e}")))?;
    Ok(GivenCatalog {
        index: Arc::new(RankIndex::new(&imported.guide)),
        catalog: Arc::new(PreparedCatalog::new(imported.guide).with_warnings(imported.warnings)),
        origin: CatalogOrigin {
            name: "the `catalog` argument".into(),
            format: imported.format.to_string(),
        },
        is_argument: true,
    })
}

/// The semantic layer is configured but could not rank: the error names the embedder and
/// where it is configured (as `preview` exits with it).
fn semantic_failed(e: anyhow::Error) -> ErrorData {
    ErrorData::internal_error(crate::exit::said(&e), None)
}

/// The history's part in ranking, as `preview` builds it (the prior, and the workspace
/// catalog's index with the tools' learned words), kept until the store changes: building
/// it reads thousands of plans, and an agent ranks again and again. A store that cannot be
/// read costs the prior, not the call.
fn history_ranking(state: &State, no_history: bool) -> Option<HistoryRanking> {
    if no_history {
        return None;
    }
    let current = || -> anyhow::Result<HistoryRanking> {
        let history = state.history()?;
        let key = (history.version()?, history.drift_window());
        // Held while building: a second caller waits for this one instead of building
        // its own.
        let mut kept = state.prior.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, h)) = kept.as_ref()
            && *k == key
        {
            return Ok(h.clone());
        }
        let h = state.ws.history_ranking(&history)?;
        *kept = Some((key, h.clone()));
        Ok(h)
    };
    match current() {
        Ok(h) => Some(h),
        Err(e) => {
            crate::cli::out::eprint_line(&format!(
                "ctxconsole mcp: ranking without the history prior: {}",
                crate::exit::Said(&e)
            ));
            None
        }
    }
}

/// The followed plans' steps the past-plans part is mined from, as `preview` reads them,
/// kept until the store changes like [`prior`]. A store that cannot be read costs the part,
/// not the call.
fn past_steps(state: &State, no_history: bool) -> Option<Arc<PastStepsIndex>> {
    if no_history {
        return None;
    }
    let current = || -> anyhow::Result<Arc<PastStepsIndex>> {
        let history = state.history()?;
        let key = (history.version()?, history.drift_window());
        let mut kept = state
            .past_steps
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((k, p)) = kept.as_ref()
            && *k == key
        {
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(state.ws.past_steps(&history)?);
        *kept = Some((key, Arc::clone(&p)));
        Ok(p)
    };
    match current() {
        Ok(p) => Some(p),
        Err(e) => {
            crate::cli::out::eprint_line(&format!(
                "ctxconsole mcp: sending no past plans: {}",
                crate::exit::Said(&e)
            ));
            None
        }
    }
}

#[derive(Serialize)]
struct RankAnswer<'a> {
    catalog_source: &'a CatalogOrigin,
    entries: usize,
    terms: &'a [String],
    /// The requests the query was read as, when more than one (what `coverage_request`
    /// and `best_for_request` index).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    requests: &'a [String],
    confidence: Confidence,
    history_prior: bool,
    /// The words learned from the history's followed plans took part: the workspace's
    /// catalog only (a catalog given as text has none; tester 20 F18: the answer said
    /// nothing of it and ranked differently).
    learned_words: bool,
    /// The semantic layer took part (`[rank] semantic` set, the workspace's catalog).
    semantic_layer: bool,
    /// Entries with a positive score, best first, at most `k`.
    ranked: Vec<Explanation>,
    /// The catalog's warnings (a name given twice), as `preview` and `compact_catalog`
    /// carry them: a ranking listing one name several times says why (tester 8 F9).
    warnings: &'a [String],
}

#[derive(Serialize)]
struct RecordAnswer {
    #[serde(flatten)]
    report: ImportReport,
    execution: Value,
    /// The plan the execution counted for, as it stands now (None when it counts for none).
    plan: Option<Value>,
    /// Why a run naming a plan counted for none, or that it counted for another caller's
    /// plan (tester 20 F2, F10, F14): what the report's counts say of this one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl State {
    fn preview_tool(&self, args: &JsonObject) -> Result<Value, ErrorData> {
        let p = Params::new(
            TOOL_PREVIEW,
            args,
            &[
                "instruction",
                "model",
                "tier",
                "attachments",
                "defaults",
                "no_history",
                "no_prior",
            ],
        )?;
        let instruction = p.str("instruction", TEXT_MAX)?;
        let model = p.opt_model("model")?.unwrap_or(DEFAULT_MODEL);
        let tier = tier_arg(&p)?;
        let attachments = p.attachments("attachments")?;
        // An empty instruction only with attachments, as `ctxconsole preview "" --attach`
        // (tester 30 F8: refused here alone).
        if instruction.trim().is_empty() && attachments.is_empty() {
            return Err(p.empty("instruction"));
        }
        let defaults = p.opt_str("defaults", TEXT_MAX)?.unwrap_or("");
        let no_history = p.opt_bool("no_history")?.unwrap_or(false);
        let no_prior = p.opt_bool("no_prior")?.unwrap_or(false);
        // As `ctxconsole preview` does: briefed parts go to the output cache, unless this
        // server may not write.
        let mut ctx = self.ws.preview_context(!self.read_only);
        if let Some(h) = history_ranking(self, no_history) {
            h.apply(&mut ctx);
        }
        ctx.past_steps = past_steps(self, no_history || no_prior);
        ctx.semantic = self.semantic().map_err(semantic_failed)?;
        let effective = effective_row(&ctx.budgets, model, tier);
        let ask = Ask {
            attachments: &attachments,
            defaults,
            ..Ask::new(&effective, instruction)
        };
        let result = plan_and_keep(&ctx, &ask).map_err(internal)?;
        to_json(&result)
    }

    fn compact_tool(&self, args: &JsonObject) -> Result<Value, ErrorData> {
        let p = Params::new(
            TOOL_COMPACT,
            args,
            &[
                "model",
                "tier",
                "catalog",
                "prompt",
                "attachments",
                "defaults",
                "no_history",
            ],
        )?;
        let model = p.opt_model("model")?.unwrap_or(DEFAULT_MODEL);
        let tier = tier_arg(&p)?;
        let prompt = p.opt_str("prompt", TEXT_MAX)?.unwrap_or("");
        let attachments = p.attachments("attachments")?;
        let defaults = p.opt_str("defaults", TEXT_MAX)?.unwrap_or("");
        let asked = !prompt.trim().is_empty() || !attachments.is_empty();
        let no_history = p.opt_bool("no_history")?.unwrap_or(false);
        let given = catalog_arg(TOOL_COMPACT, p.opt_str("catalog", TEXT_MAX)?, &self.ws)?;
        // The same request `compact --prompt` plans, over the catalog given (or the
        // workspace's); nothing is written.
        let mut ctx = self.ws.preview_context(false);
        ctx.catalog = Arc::clone(&given.catalog);
        ctx.index = Arc::clone(&given.index);
        // The workspace's catalog ranks as `compact --prompt` does: with the history (the
        // prior, learned words, past plans) and the semantic layer; a catalog given as an
        // argument is ranked lexically, with neither.
        if asked && !given.is_argument {
            if let Some(h) = history_ranking(self, no_history) {
                h.apply(&mut ctx);
            }
            ctx.past_steps = past_steps(self, no_history);
            ctx.semantic = self.semantic().map_err(semantic_failed)?;
        }
        let effective = effective_row(&ctx.budgets, model, tier);
        // The catalog this server's `preview` of the same ask sends: its briefed parts
        // planned as kept unless the server may not write, and nothing written here.
        let ask = Ask {
            attachments: &attachments,
            defaults,
            ..Ask::new(&effective, prompt)
        };
        let planned =
            crate::preview::plan_unwritten(&ctx, &ask, !self.read_only).map_err(semantic_failed)?;
        // The workspace's notes as `compact --json` gives them, a catalog given in place of
        // its own as `compact --catalog FILE` puts it.
        let notes = self.ws.notes_with(given.catalog.warnings());
        let report = CompactReport::of(&planned, &given.origin, &notes).map_err(internal)?;
        // The catalog's warnings come with the report, as `compact --json` gives them; and
        // what ranked the cut, as `rank_tools` says it (tester 20 F18: a catalog given as
        // text is ranked lexically, with neither the prior nor the learned words, and
        // nothing said so).
        let mut answer = to_json(&report)?;
        let ranked_with_history = asked && !given.is_argument;
        if let Value::Object(fields) = &mut answer {
            let history = ranked_with_history && ctx.prior.is_some();
            fields.insert("history_prior".into(), json!(history));
            fields.insert("learned_words".into(), json!(history));
            fields.insert(
                "semantic_layer".into(),
                json!(ranked_with_history && ctx.semantic.is_some()),
            );
        }
        Ok(answer)
    }

    fn rank_tool(&self, args: &JsonObject) -> Result<Value, ErrorData> {
        let p = Params::new(TOOL_RANK, args, &["query", "catalog", "k", "no_history"])?;
        let query = p.non_empty("query", TEXT_MAX)?;
        let k = p.opt_u64("k", 1, K_MAX)?.unwrap_or(10) as usize;
        let no_history = p.opt_bool("no_history")?.unwrap_or(false);
        let catalog = p.opt_str("catalog", TEXT_MAX)?;
        let given = catalog_arg(TOOL_RANK, catalog, &self.ws)?;
        let history = history_ranking(self, no_history);
        let prior = history.as_ref().map(|h| Arc::clone(&h.prior));
        // The workspace's catalog ranks with its learned words, as `preview` does; a
        // catalog given as an argument has none.
        let index = match (&history, catalog) {
            (Some(h), None) => &h.index,
            _ => &given.index,
        };
        // The semantic layer ranks the workspace's catalog as `preview` does, every entry
        // with its similarity to each request. Otherwise only the first k
        // are shown and explained: select them, never sort the rest.
        let asked = opening(query, CLASSIFY_MAX_BYTES);
        let semantic = if given.is_argument {
            None
        } else {
            self.semantic().map_err(semantic_failed)?
        };
        let ranking = match &semantic {
            Some(layer) => {
                let similarity = layer.similarities(asked).map_err(semantic_failed)?;
                let mut ranked =
                    index.rank_semantic(asked, prior.as_deref(), &similarity, SEMANTIC_WEIGHT);
                ranked.order.truncate(k);
                ranked
            }
            None => index.rank_top(asked, prior.as_deref(), k),
        };
        let top: Vec<usize> = ranking
            .order
            .iter()
            .filter(|s| s.score > 0.0)
            .map(|s| s.index)
            .collect();
        to_json(&RankAnswer {
            catalog_source: &given.origin,
            entries: given.catalog.len(),
            terms: &ranking.terms,
            requests: &ranking.requests,
            confidence: ranking.confidence,
            history_prior: prior.is_some(),
            learned_words: history.is_some() && catalog.is_none(),
            semantic_layer: semantic.is_some(),
            ranked: index.explain_top(&ranking, &top, prior.as_deref()),
            warnings: given.catalog.warnings(),
        })
    }

    /// `call` is committed once the store's write lock is held, before anything is written
    /// (`cancelled`: rmcp's word that the client cancelled it): a call the client cancelled
    /// while it waited for the lock stores nothing (tester 11 T11-11: it was stored without
    /// an answer, and the agent's retry stored it again), and a committed one is answered
    /// whatever cancel comes after (tester 12 T12-8: one cancelled a few ms after its commit
    /// was stored without an answer).
    fn record_tool(
        &self,
        args: &JsonObject,
        call: &Call,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Value, ErrorData> {
        let go_ahead = || call.commit(cancelled());
        let p = Params::new(
            TOOL_RECORD,
            args,
            &["caller", "tool", "ok", "plan_id", "session", "at", "id"],
        )?;
        let caller = p.name("caller")?;
        let tool = p.name("tool")?;
        let ok = p.bool("ok")?;
        let plan_id = p.opt_ruled_name("plan_id")?;
        let session = p.opt_name("session")?;
        let id = p.opt_name("id")?;
        let at = p.opt_time("at")?.unwrap_or_else(now_secs);
        // The part of a second the caller gave is kept, as an imported line's is.
        let nanos = args
            .get("at")
            .and_then(Value::as_str)
            .map_or(0, crate::core::time::subsecond_nanos);
        let mut execution = json!({
            "id": id,
            "at": format_timestamp_nanos(at, nanos),
            "caller": caller,
            "session": session,
            "plan_id": plan_id,
            "tool": tool,
            "ok": ok,
        });
        // One JSON line through the importer: the same checks, the same transaction, the
        // same drift update as `ctxconsole import executions`. Every argument was checked
        // above, so what the importer can still refuse is the store's doing.
        let line = execution.to_string();
        let mut history = self.history().map_err(internal)?;
        // The id it is stored under — given, or derived from its fields as the importer
        // derives it — is said in the answer, so a client can tell a retry stored once; it
        // and the names are said as stored, without a configured key.
        if let Ok(mut record) = crate::core::history::parse_execution_line(TOOL_RECORD, 1, &line) {
            history.secrets().execution(&mut record);
            execution["id"] = json!(record.id);
            execution["caller"] = json!(record.caller);
            execution["session"] = json!(record.session);
            execution["plan_id"] = json!(record.plan_id);
            execution["tool"] = json!(record.tool);
        }
        let report = history
            .import_executions(
                TOOL_RECORD,
                // Read once the write lock is held: the last moment to call it off.
                UnlessCancelled {
                    inner: Cursor::new(line.into_bytes()),
                    go_ahead: &go_ahead,
                },
                // An execution without an id gets one from its fields: a repeat is the
                // same record, stored once. One whose id is stored with other content is
                // kept as stored and counted as skipped, and refused below by its argument:
                // the importer's own refusal speaks of files and --on-conflict.
                crate::store::history::OnConflict::Skip,
                |_| {},
            )
            .map_err(internal)?;
        #[cfg(test)]
        call.stored();
        if report.skipped > 0 {
            return Err(p.error(
                "id",
                format!(
                    "{} is already stored with different content; nothing was recorded (a repeat with the same fields and `at` is stored once; another execution needs another id)",
                    id.map_or("the id made from these fields".to_string(), |id| format!("'{id}'"))
                ),
            ));
        }
        // The plan the run counted for: the one it names (unless dated before it, a replay,
        // or not stored yet: then none), or, naming none, the caller's plan whose window
        // holds it.
        let counted = history
            .plan_counted_for(plan_id, caller, (at, nanos))
            .map_err(internal)?;
        let named = execution["plan_id"]
            .as_str()
            .map(quoted)
            .unwrap_or_default();
        let mut note = if report.before_plan > 0 {
            Some(format!(
                "the run is dated more than {EXECUTION_CLOCK_SKEW_SECS} s before plan {named}: drift leaves it out, and it changes nothing"
            ))
        } else if report.replay_plan > 0 {
            Some(format!(
                "plan {named} is a replay: no agent runs a replay, so the run counts for no plan"
            ))
        } else if report.unknown_plan > 0 {
            Some(self.for_client(&format!(
                "{}: the run counts for no plan until that plan is imported",
                crate::store::history::no_such_plan(
                    execution["plan_id"].as_str().unwrap_or_default(),
                    history.path()
                )
            )))
        } else if let crate::store::history::CountedFor::JudgedByNamedRuns(id) = &counted {
            Some(format!(
                "the run names no plan and falls in the window of {}'s plan {}, which the runs naming it judge alone: it counts for no plan (give `plan_id` to count it)",
                quoted(caller),
                quoted(id)
            ))
        } else {
            None
        };
        let plan = match counted.plan() {
            Some(id) => history.plan(id).map_err(internal)?.map(|d| {
                if report.other_caller_plan > 0 {
                    note = Some(format!(
                        "plan {named} is another caller's plan ({}'s): the run counts for it beside that caller's own runs",
                        quoted(&d.record.caller)
                    ));
                }
                json!({
                    "id": d.record.id,
                    "caller": d.record.caller,
                    "drift": d.drift,
                    "planned": d.record.steps.iter().map(|s| s.tool.as_str()).collect::<Vec<_>>(),
                    "executed": d.executed,
                    "executed_ok": d.executed_ok,
                })
            }),
            None => None,
        };
        to_json(&RecordAnswer {
            report,
            execution,
            plan,
            note,
        })
    }

    fn read(&self, uri: &str) -> Result<Value, ErrorData> {
        if uri == URI_BUDGETS {
            return to_json(&self.ws.budgets_report());
        }
        if uri.starts_with(URI_BUDGET_PREFIX) {
            let model = template_value(uri, URI_BUDGET_PREFIX, "model id")?;
            return to_json(&self.ws.budget_lookup(&model));
        }
        if uri == URI_MODELS {
            let history = self.history().map_err(internal)?;
            let report = models_report(&history, &PlanFilter::default(), &self.ws.budgets)
                .map_err(internal)?;
            return to_json(&report);
        }
        let caller_prefix = format!("{URI_MY_PLANS}/");
        let caller = if uri == URI_MY_PLANS {
            None
        } else if uri.starts_with(&caller_prefix) {
            Some(template_value(uri, &caller_prefix, "caller")?)
        } else {
            // Quoted and cut as every error quotes a client's text (tester 42 F2: a 28 MB
            // URI came back whole, 48 MB escaped, past what a client reads).
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}: the resources are {URI_BUDGETS}, {URI_BUDGET_PREFIX}{{model}}, {URI_MY_PLANS}, {URI_MY_PLANS}/{{caller}} and {URI_MODELS}",
                    quoted(uri)
                ),
                Some(
                    json!({"uri": crate::core::text::opening(uri, NAME_MAX), "uri_bytes": uri.len()}),
                ),
            ));
        };
        let history = self.history().map_err(internal)?;
        let mut report = my_plans(&history, caller.as_deref()).map_err(internal)?;
        report.groups_note = report.groups_note.map(|note| self.for_client(&note));
        to_json(&report)
    }
}

/// The one bound on what an answer carries, tools and resources alike: `bytes` of JSON
/// within [`RESULT_MAX`], or an `invalid_params` error saying what `what` (a tool, a
/// resource's URI) would have taken and `narrow`, what to ask for instead. `data` names it
/// (`{"tool": …}`, `{"uri": …}`) and gains `result_bytes`.
fn within_result_max(
    what: &str,
    bytes: usize,
    narrow: &str,
    mut data: JsonObject,
) -> Result<(), ErrorData> {
    if bytes <= RESULT_MAX {
        return Ok(());
    }
    data.insert("result_bytes".into(), json!(bytes));
    Err(ErrorData::invalid_params(
        format!(
            "{what}: the result would be {} bytes, over the {} one answer may take; {narrow}",
            crate::format::thousands(bytes),
            size_label(RESULT_MAX)
        ),
        Some(Value::Object(data)),
    ))
}

/// A tool's answer: structured, and the same JSON as text for clients that read only text.
/// A client may print that text as it is once it has read the message, so it is escaped as
/// the message itself is ([`crate::mcp_server::wire_json`]): a U+202E in a question is
/// `\u202e` there too (tester 41 F1). So is a resource's.
fn tool_result(tool: &str, value: Value) -> Result<CallToolResult, ErrorData> {
    let text = json_string_for_terminal(value.to_string());
    let mut data = JsonObject::new();
    data.insert("tool".into(), json!(tool));
    within_result_max(tool, text.len(), "send a smaller catalog or text", data)?;
    // As `CallToolResult::structured` builds it, less its own unescaped text of the value.
    let mut result = CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]);
    result.structured_content = Some(value);
    Ok(result)
}

/// What to read instead of a resource over [`RESULT_MAX`]: the per-caller view of the
/// plans, the console's history for one caller's (their intents are what grows), one
/// model's budget row.
fn narrower(uri: &str) -> String {
    if uri == URI_MY_PLANS {
        format!(
            "read {URI_MY_PLANS}/{{caller}} for one caller's plans, or see them with `ctxconsole history`"
        )
    } else if uri.starts_with(&format!("{URI_MY_PLANS}/")) {
        "the latest plans' intents take most of it; see this caller's plans with `ctxconsole history --caller` and its name".to_string()
    } else if uri == URI_BUDGETS {
        format!("read {URI_BUDGET_PREFIX}{{model}} for one model's row")
    } else if uri == URI_MODELS {
        "see it with `ctxconsole history --models`".to_string()
    } else {
        "see it with `ctxconsole budgets --model`".to_string()
    }
}

/// A resource's answer: its JSON as text, within [`RESULT_MAX`].
fn resource_result(uri: String, value: &Value) -> Result<ReadResourceResult, ErrorData> {
    let text = json_string_for_terminal(
        serde_json::to_string_pretty(value).map_err(|e| internal(e.into()))?,
    );
    let mut data = JsonObject::new();
    data.insert("uri".into(), json!(uri));
    within_result_max(&uri, text.len(), &narrower(&uri), data)?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ]))
}

/// A standard method whose params do not parse reaches the handler as a custom request
/// (rmcp falls back to one), and would be answered "method not found: tools/call". Say
/// instead which field is wrong.
fn malformed(method: &str, params: Option<&Value>) -> ErrorData {
    let expected: &[jsonrpc::Field] = match method {
        "tools/call" => &[
            ("name", "a string", true, Value::is_string),
            ("arguments", "an object", false, Value::is_object),
        ],
        "resources/read" => &[("uri", "a string", true, Value::is_string)],
        _ => {
            return jsonrpc::no_method(method);
        }
    };
    jsonrpc::unfit_field(method, params, expected).unwrap_or_else(|| {
        ErrorData::invalid_params(format!("{method}: its params do not fit the method"), None)
    })
}

impl ServerHandler for Console {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("ctxconsole", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "ctxconsole: what a model will be given before anything is sent. Resources: the budgets table (ctxconsole://context-budgets, ctxconsole://budgets/{model}), recent plans by intent shape (ctxconsole://my-plans, ctxconsole://my-plans/{caller}), per-model outcomes (ctxconsole://models). Tools: preview, compact_catalog, rank_tools, record_execution, read_cached (a briefed paste's full text by lines).",
        )
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(jsonrpc::for_client(malformed(
            &request.method,
            request.params.as_ref(),
        )))
    }

    // Methods this server does not serve (their capabilities are not advertised) are
    // refused in the one wording unknown methods get ([`jsonrpc::no_method`]): rmcp's
    // message was the bare method name, and `prompts/list` answered an empty list
    // (tester 20 F5).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Err(jsonrpc::no_method("prompts/list"))
    }

    async fn get_prompt(
        &self,
        _request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        Err(jsonrpc::no_method("prompts/get"))
    }

    async fn complete(
        &self,
        _request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        Err(jsonrpc::no_method("completion/complete"))
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(jsonrpc::no_method("logging/setLevel"))
    }

    async fn subscribe(
        &self,
        _request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(jsonrpc::no_method("resources/subscribe"))
    }

    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(jsonrpc::no_method("resources/unsubscribe"))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let json = |r: Resource| r.with_mime_type("application/json");
        Ok(ListResourcesResult {
            resources: vec![
                json(Resource::new(URI_BUDGETS, "context-budgets")
                    .with_description("Every budget row: id, tier, input/output tokens, catalog bytes, flags, prices (input, cached input, output), layer, source, lints; and the fallback. As `ctxconsole budgets --json`.")),
                json(Resource::new(URI_MY_PLANS, "my-plans")
                    .with_description("Plans grouped by intent shape, largest groups first: most-used decompositions, steps planned together, drift and outcomes per group, the latest plans with what ran after them, where the plans came from (native, otel, litellm, sent), and per group the gaps against a stronger model's unaided steps when any plan has a baseline.")),
                json(Resource::new(URI_MODELS, "models")
                    .with_description("Per-model outcomes, failure causes and the suggested tier with its evidence count. As `ctxconsole history --models --json`.")),
            ],
            ..ListResourcesResult::default()
        })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult {
            resource_templates: vec![
                ResourceTemplate::new(format!("{URI_BUDGET_PREFIX}{{model}}"), "budget")
                    .with_description("How one model id resolves (exact, longest prefix, or the Tier C fallback) and its row. As `ctxconsole budgets --model M --json`. Slashes in the id may stay as they are or be sent as %2F.")
                    .with_mime_type("application/json"),
                ResourceTemplate::new(format!("{URI_MY_PLANS}/{{caller}}"), "my-plans-of-caller")
                    .with_description("my-plans for one caller's plans only.")
                    .with_mime_type("application/json"),
            ],
            ..ListResourceTemplatesResult::default()
        })
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read_resource_as_asked(request)
            .await
            .map_err(jsonrpc::for_client)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: tools(self.state.read_only, self.state.reaches_out()),
            ..ListToolsResult::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call_tool_as_asked(request, context)
            .await
            .map_err(jsonrpc::for_client)
    }
}

impl Console {
    async fn read_resource_as_asked(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let state = Arc::clone(&self.state);
        let uri = request.uri;
        let (uri, value) = blocking(move || {
            let value = state.read(&uri)?;
            Ok((uri, value))
        })
        .await?;
        Ok(resource_result(uri, &value)?.into())
    }

    async fn call_tool_as_asked(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let state = Arc::clone(&self.state);
        let call: fn(&State, &JsonObject) -> Result<Value, ErrorData> = match tool.as_str() {
            TOOL_PREVIEW => State::preview_tool,
            TOOL_COMPACT => State::compact_tool,
            TOOL_RANK => State::rank_tool,
            crate::core::gate::READ_CACHED_TOOL => {
                |state, args| crate::mcp_server::read_cached::call(&state.ws.dir, args)
            }
            TOOL_RECORD if state.read_only => {
                return Err(ErrorData::invalid_request(
                    "record_execution is disabled: this server was started with --read-only",
                    Some(json!({"tool": TOOL_RECORD})),
                ));
            }
            TOOL_RECORD => {
                let ct = context.ct.clone();
                // Over HTTP a call is known by its session and id (stdio: one connection).
                let session = context
                    .extensions
                    .get::<hyper::http::request::Parts>()
                    .and_then(|p| p.headers.get(crate::mcp_server::commits::SESSION_HEADER))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(crate::mcp_server::commits::STDIO)
                    .to_string();
                let call = self.commits.begin(&session, context.id.clone());
                let value =
                    blocking(move || state.record_tool(&args, &call, &|| ct.is_cancelled()))
                        .await?;
                return Ok(tool_result(&tool, value)?.into());
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "argument `name`: no tool '{other}'; the tools are {}",
                        tools(state.read_only, false)
                            .iter()
                            .map(|t| t.name.as_ref())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Some(json!({"argument": "name"})),
                ));
            }
        };
        let name = tool.clone();
        // Waiting here, a call its client cancels never starts (rmcp marks the call's
        // token; the handler is not dropped). The cancel is looked at first, so one already
        // in wins over a place freed at the same moment.
        let ct = context.ct.clone();
        let place = tokio::select! {
            biased;
            () = ct.cancelled() => {
                return Err(ErrorData::invalid_request("the call was cancelled before it started", None));
            }
            place = Arc::clone(&state.computing).acquire_owned() => {
                place.map_err(|e| internal(anyhow::anyhow!("the compute places: {e}")))?
            }
        };
        let value = blocking(move || {
            let _place = place;
            call(&state, &args)
        })
        .await?;
        Ok(tool_result(&name, value)?.into())
    }
}

/// A reader that fails, before giving anything, unless `go_ahead` says so.
struct UnlessCancelled<'a, R> {
    inner: R,
    go_ahead: &'a (dyn Fn() -> bool + Sync),
}

impl<R: std::io::Read> std::io::Read for UnlessCancelled<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.check()?;
        self.inner.read(buf)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for UnlessCancelled<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.check()?;
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

impl<R> UnlessCancelled<'_, R> {
    fn check(&self) -> std::io::Result<()> {
        if !(self.go_ahead)() {
            return Err(std::io::Error::other(
                "the client cancelled the call; nothing was recorded",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorCode;

    #[test]
    fn tools_and_resources_are_held_to_the_one_result_bound() {
        let big = json!("x".repeat(RESULT_MAX));
        let e = tool_result(TOOL_RANK, big.clone()).unwrap_err();
        assert!(
            e.message.contains("rank_tools: the result would be"),
            "{}",
            e.message
        );
        assert!(e.message.contains("6 MiB"), "{}", e.message);
        let uri = format!("{URI_MY_PLANS}/c");
        let e = resource_result(uri.clone(), &big).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(
            e.message
                .starts_with(&format!("{uri}: the result would be")),
            "{}",
            e.message
        );
        assert!(e.message.contains("6 MiB"), "{}", e.message);
        let data = e.data.unwrap();
        assert_eq!(data["uri"], uri);
        assert_eq!(data["result_bytes"], RESULT_MAX + 2);
        let e = resource_result(URI_MY_PLANS.to_string(), &big).unwrap_err();
        assert!(e.message.contains("my-plans/{caller}"), "{}", e.message);
        // At the bound, served.
        let fits = json!("x".repeat(RESULT_MAX - 2));
        assert!(tool_result(TOOL_RANK, fits.clone()).is_ok());
        assert!(resource_result(uri, &fits).is_ok());
    }

    #[test]
    fn template_values_decode_and_empty_ones_are_refused() {
        assert_eq!(
            template_value(
                "ctxconsole://budgets/openrouter%2Fx/y",
                URI_BUDGET_PREFIX,
                "m"
            )
            .unwrap(),
            "openrouter/x/y"
        );
        assert!(template_value("ctxconsole://budgets/", URI_BUDGET_PREFIX, "m").is_err());
        assert!(
            template_value("ctxconsole://budgets/%20local%2Fx", URI_BUDGET_PREFIX, "m").is_err()
        );
        assert!(template_value("ctxconsole://budgets/a%0Ab", URI_BUDGET_PREFIX, "m").is_err());
        assert!(template_value("ctxconsole://budgets/%zz", URI_BUDGET_PREFIX, "m").is_err());
    }
}
