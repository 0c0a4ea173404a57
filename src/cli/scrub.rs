//! `ctxconsole scrub`: take provider keys out of what the workspace already keeps.
//!
//! Since tester 12 T12-6 every configured key is taken out of what is kept as it is kept;
//! what was kept before (or before a key was configured, or under a key since rotated)
//! still holds it. This finds it in the history store, the output cache and the logs, and
//! rewrites each without it.

use std::path::{Path, PathBuf};

use crate::cli::{emit, print_json};
use crate::core::config::{Config, key_env_problem};
use crate::exit::bad_input;
use crate::format::counted;
use crate::llm::redact::Secrets;
use crate::store::cache::OutputCache;
use crate::workspace::{StoreChoice, Workspace, WorkspaceOptions};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also take out the key this variable holds (an old key, rotated out of the config);
    /// repeatable. The configured providers' `key_env` variables are always read.
    #[arg(long = "env", value_name = "VAR")]
    pub env: Vec<String>,
    /// Say what holds a key; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

/// The log files `--log` writes, the current one and the one moved aside.
fn log_files(dir: &Path) -> [PathBuf; 2] {
    let logs = dir.join(crate::logging::LOG_DIR);
    let file = crate::logging::LOG_FILE;
    [logs.join(file), logs.join(format!("{file}.1"))]
}

/// The keys to take out: those the configured providers' variables hold, and those of the
/// variables `--env` names, each of which must be set (a name that reads as a key itself is
/// refused without being shown).
fn secrets(ws: &Workspace, config: &Config, env: &[String]) -> anyhow::Result<Secrets> {
    let mut vars = config.key_variables();
    for var in env {
        if let Some(problem) = key_env_problem(var) {
            return Err(bad_input(format!("the --env value {problem}")));
        }
        if std::env::var(var).map_or(true, |v| v.trim().is_empty()) {
            return Err(bad_input(format!(
                "--env {var}: the variable is not set (or is empty): no key to take out"
            )));
        }
        vars.push(var.clone());
    }
    let secrets = Secrets::from_env(&vars);
    if !secrets.is_active() {
        return Err(bad_input(format!(
            "no key to take out: no provider in {} names a key_env variable that is set, and \
             no --env VAR was given",
            ws.config_origin()
        )));
    }
    Ok(secrets)
}

/// Whether the log file at `path` held a key: then it is rewritten whole without it (0600,
/// a new file renamed over it). False when there is no such file.
fn scrub_log(path: &Path, secrets: &Secrets, dry_run: bool) -> anyhow::Result<bool> {
    let Some(bytes) = crate::fsio::read_optional(path)? else {
        return Ok(false);
    };
    let text = String::from_utf8_lossy(&bytes);
    let kept = secrets.text(&text);
    if kept == text {
        return Ok(false);
    }
    if !dry_run {
        crate::fsio::write_file(path, kept.as_bytes(), true)
            .map_err(|e| anyhow::anyhow!("{}: rewriting without the keys: {e}", path.display()))?;
    }
    Ok(true)
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    // Read once: for the keys, and for the store's settings.
    let config = ws.config()?;
    let secrets = secrets(&ws, &config, &args.env)?;
    let mut history = ws.open_history_with(&store, &config)?;
    let plans = history.scrub(&secrets, &ws.pipeline_ids(), args.dry_run)?;
    let pastes = match OutputCache::open_existing_in(&ws.dir)? {
        Some(mut cache) => cache.scrub(&secrets, args.dry_run)?,
        None => Vec::new(),
    };
    let mut logs = Vec::new();
    for path in log_files(&ws.dir) {
        if scrub_log(&path, &secrets, args.dry_run)? {
            logs.push(path);
        }
    }
    if args.json {
        return print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "store": history.path(),
            "plans": plans,
            "cached_pastes": pastes,
            "logs": logs,
        }));
    }
    let verb = if args.dry_run { "hold" } else { "held" };
    let mut out = format!(
        "{} in {} {verb} a key{}\n",
        counted(plans.len(), "plan", "plans"),
        history.path().display(),
        listed(&plans)
    );
    out.push_str(&format!(
        "{} in the output cache {verb} a key{}\n",
        counted(pastes.len(), "cached paste", "cached pastes"),
        listed(&pastes)
    ));
    out.push_str(&format!(
        "{} {verb} a key{}\n",
        counted(logs.len(), "log file", "log files"),
        listed(
            &logs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        )
    ));
    let any = !(plans.is_empty() && pastes.is_empty() && logs.is_empty());
    out.push_str(match (args.dry_run, any) {
        (true, true) => "nothing was changed (--dry-run); run without it to take the keys out\n",
        (false, true) => {
            "each was rewritten without the keys; no free page of the files holds them either\n"
        }
        (_, false) => "nothing to take out\n",
    });
    emit(&out)
}

/// `: a, b, c, …` naming the first few, or nothing for none.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 5;
    if names.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = names
        .iter()
        .take(SHOWN)
        .map(|n| crate::core::terminal_text::quoted(n))
        .collect();
    let more = if names.len() > SHOWN { ", …" } else { "" };
    format!(": {}{more}", shown.join(", "))
}
