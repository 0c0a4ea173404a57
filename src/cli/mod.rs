//! Headless front end: one module per subcommand, each with its `run`.

pub mod budgets;
pub mod cache;
pub mod compact;
pub mod dev;
pub mod eval;
pub mod eval_planner;
pub mod history;
pub mod import;
pub mod out;
pub mod preview;
pub mod replay;
pub mod scrub;
pub mod semantic;
pub mod send;
pub mod table;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

use crate::core::budget::Tier;
use crate::workspace::StoreChoice;

#[derive(Debug, Parser)]
#[command(
    name = "ctxconsole",
    version,
    about = "What a model will really be given, before anything is sent."
)]
pub struct Cli {
    /// Workspace directory (default: $CTXCONSOLE_HOME, else the platform data directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The history store (default: history.sqlite in the workspace, seeded with the sample
    /// history on first use; a new FILE starts empty unless --sample).
    #[arg(long, global = true, value_name = "FILE")]
    pub store: Option<PathBuf>,
    /// Seed a new --store FILE with the sample history (668 plans).
    #[arg(long, global = true)]
    pub sample: bool,
    /// Log to logs/ctxconsole.log in the workspace at LEVEL (error, warn, info, debug,
    /// trace, off); default: $CTXCONSOLE_LOG, else off. Never keys; bodies only with
    /// --log-bodies.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log: Option<String>,
    /// Also log request and answer bodies (prompts included; the log is private, 0600).
    #[arg(long, global = true)]
    pub log_bodies: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The budgets table, or how one model resolves.
    Budgets(budgets::Args),
    /// Compact the catalog for a model and show the Trim record.
    Compact(compact::Args),
    /// What every stage before the model does with one prompt.
    Preview(preview::Args),
    /// The output cache where briefed pastes are kept in full.
    Cache(cache::Args),
    /// Measure the ranker or the planner on labelled data.
    Eval(eval::Args),
    /// What past plans did: groups, plans, drift, per-model outcomes, unused tools.
    History(history::Args),
    /// Import plans or executions (JSON Lines), OpenTelemetry GenAI spans or LiteLLM spend
    /// logs into the history store.
    Import(import::Args),
    /// Replay a plan: offline with today's decoder, or live against its model or others.
    Replay(replay::Args),
    /// Serve budgets, plans and model outcomes as MCP resources, and preview, compaction,
    /// ranking and execution reports as MCP tools (stdio, or streamable HTTP).
    Mcp(crate::mcp_server::Args),
    /// Send the request `preview` shows to one or more models; store each answer as a plan.
    Send(send::Args),
    /// Take provider keys out of what the workspace already keeps: the history store, the
    /// output cache and the logs.
    Scrub(scrub::Args),
    /// Developer tools: generate large history stores.
    #[command(hide = true)]
    Dev(dev::Args),
    /// Open the terminal console (the default).
    Tui,
}

/// A usage error as it is printed: clap's own words, except that a value it refused is
/// quoted as every error quotes what was typed ([`quoted`](crate::core::terminal_text::quoted):
/// one line, escaped, cut at 80 characters). Clap echoes the value whole — a 100,000-byte
/// `--model` was 100 KB on stderr — and its plain rendering drops an escape sequence rather
/// than showing it (tester 8 F17).
pub fn usage_error_text(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let refused = matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    );
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v)) if refused => v,
        _ => return e.to_string().trim_end().to_string(),
    };
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(a)) => format!(" for '{a}'"),
        _ => String::new(),
    };
    let quoted = crate::core::terminal_text::quoted(value);
    // A parser's own words may repeat the value (`unknown tier 'X': …`): said as quoted, on
    // one line (tester 9 T9-11: the value came again whole, with its tabs and line breaks).
    let why = std::error::Error::source(e).map_or_else(
        || match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => {
                format!(": expected one of {}", valid.join(", "))
            }
            _ => String::new(),
        },
        |s| {
            let said = s.to_string();
            let said = if value.is_empty() {
                said
            } else {
                said.replace(&format!("'{value}'"), &quoted)
            };
            format!(": {}", crate::core::terminal_text::for_terminal_line(&said))
        },
    );
    format!("error: invalid value {quoted}{arg}{why}\n\nFor more information, try '--help'.")
}

/// A model id as [`model_id_problem`](crate::core::budget::model_id_problem) allows it;
/// anything else is a usage error (exit 2).
pub fn parse_model_id(s: &str) -> Result<String, String> {
    match crate::core::budget::model_id_problem(s) {
        None => Ok(s.to_string()),
        Some(problem) => Err(format!("a model id {problem}")),
    }
}

/// A name (a caller) as [`name_problem`](crate::core::budget::name_problem) allows it: the
/// rule every name a plan is stored under follows; anything else is a usage error (exit 2).
pub fn parse_name(s: &str) -> Result<String, String> {
    match crate::core::budget::name_problem(s) {
        None => Ok(s.to_string()),
        Some(problem) => Err(format!("a name {problem}")),
    }
}

/// `A`, `b`, … → a tier; anything else is a usage error (exit 2).
pub fn parse_tier(s: &str) -> Result<Tier, String> {
    s.parse::<Tier>().map_err(|e| e.to_string())
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let log = crate::logging::LogRequest {
        flag: cli.log,
        bodies: cli.log_bodies,
    };
    let dir = crate::workspace::resolve_dir(cli.workspace.as_deref())?;
    // Every line written on stderr, into the log, to an MCP client or as a console note from
    // now on has the configured keys taken out (tester 23 F2: an import error quoting a key
    // in a file's `spend` column printed and logged it). A config that cannot be read
    // configures no key: the command says why itself.
    crate::llm::redact::set_output_keys(
        crate::workspace::config_in(&dir)
            .map(|config| crate::workspace::secrets_of(&config))
            .unwrap_or_default(),
    );
    crate::logging::init(&dir, &log)?;
    tracing::info!(command = command_name(cli.command.as_ref()), "start");
    let store = StoreChoice {
        path: cli.store,
        sample: cli.sample,
    };
    let result = match cli.command {
        Some(Command::Budgets(args)) => budgets::run(cli.workspace, args),
        Some(Command::Compact(args)) => compact::run(cli.workspace, store, args),
        Some(Command::Preview(args)) => preview::run(cli.workspace, store, args),
        Some(Command::Cache(args)) => cache::run(cli.workspace, args),
        Some(Command::Eval(args)) => eval::run(cli.workspace, store, args),
        Some(Command::History(args)) => history::run(cli.workspace, store, args),
        Some(Command::Import(args)) => import::run(cli.workspace, store, args),
        Some(Command::Replay(args)) => replay::run(cli.workspace, store, args),
        Some(Command::Mcp(args)) => crate::mcp_server::run(cli.workspace, store, args),
        Some(Command::Scrub(args)) => scrub::run(cli.workspace, store, args),
        Some(Command::Send(args)) => send::run(cli.workspace, store, args),
        Some(Command::Dev(args)) => dev::run(cli.workspace, args),
        Some(Command::Tui) | None => crate::tui::run(cli.workspace, store),
    };
    if let Err(err) = &result {
        tracing::warn!(
            exit = crate::exit::code_for(err),
            "ended with an error: {}",
            crate::exit::Said(err)
        );
    }
    result
}

/// The subcommand's name for the log.
fn command_name(command: Option<&Command>) -> &'static str {
    match command {
        Some(Command::Budgets(_)) => "budgets",
        Some(Command::Compact(_)) => "compact",
        Some(Command::Preview(_)) => "preview",
        Some(Command::Cache(_)) => "cache",
        Some(Command::Eval(_)) => "eval",
        Some(Command::History(_)) => "history",
        Some(Command::Import(_)) => "import",
        Some(Command::Replay(_)) => "replay",
        Some(Command::Mcp(_)) => "mcp",
        Some(Command::Scrub(_)) => "scrub",
        Some(Command::Send(_)) => "send",
        Some(Command::Dev(_)) => "dev",
        Some(Command::Tui) | None => "tui",
    }
}

/// The output sink every subcommand writes through (text sanitised, JSON exact).
pub use out::{emit, print_json};
