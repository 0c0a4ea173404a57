//! `ctxconsole scrub`: take provider keys out of what the workspace already keeps.
//!
//! Since tester 12 T12-6 every configured key is taken out of what is kept as it is kept;
//! what was kept before (or before a key was configured, or under a key since rotated)
//! still holds it. This finds it in the history store, the output cache, the logs and the
//! files of unstored plans, and rewrites each without it.

use crate::core::terminal_text::ShownPath;
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
        if let Some((_, why)) = Secrets::placeholders_in(std::slice::from_ref(var)).first() {
            return Err(bad_input(format!(
                "--env {var}: the value is a placeholder ({why}), not a secret: nothing is taken \
                 out for it"
            )));
        }
        vars.push(var.clone());
    }
    // A placeholder (a keyless server's `ollama`, `EMPTY`) is no secret: taking it out of
    // the history would rewrite model ids and ordinary words for good (tester 21 F1).
    let placeholders: Vec<String> = Secrets::placeholders_in(&vars)
        .into_iter()
        .map(|(var, why)| format!("${var} holds a placeholder ({why})"))
        .collect();
    let secrets = Secrets::from_env(&vars);
    if !secrets.is_active() {
        let why = if placeholders.is_empty() {
            format!(
                "no provider in {} names a key_env variable that is set, and no --env VAR was \
                 given",
                ws.config_origin()
            )
        } else {
            format!("{}, not a secret", placeholders.join("; "))
        };
        return Err(bad_input(format!("no key to take out: {why}")));
    }
    for note in &placeholders {
        crate::cli::out::eprint_line(&format!("note: {note}, not a secret: left as it is"));
    }
    Ok(secrets)
}

/// Whether the file at `path` (a log, a file of unstored plans) held a key: then it is
/// rewritten whole without it (0600, a new file renamed over it), every other byte kept as
/// it was, UTF-8 or not (tester 50 F1: it was read lossily, a stray byte becoming U+FFFD).
/// Read and replaced under the lock the log's writers append under
/// ([`crate::fsio::open_for_rewrite`]): a line a running process logs meanwhile waits, then
/// goes to the new file. False when there is no such file.
fn scrub_file(path: &Path, secrets: &Secrets, dry_run: bool) -> anyhow::Result<bool> {
    let Some(locked) = crate::fsio::open_for_rewrite(path)? else {
        return Ok(false);
    };
    let bytes = crate::fsio::read_whole(&locked, &crate::core::terminal_text::path(path))?;
    let kept = secrets.bytes(&bytes);
    if kept == bytes {
        return Ok(false);
    }
    if !dry_run {
        crate::fsio::write_file(path, &kept, true)
            .map_err(|e| anyhow::anyhow!("{}: rewriting without the keys: {e}", path.shown()))?;
    }
    // The lock goes once the new file has the name.
    drop(locked);
    Ok(true)
}

/// The files of `paths` [`scrub_file`] found a key in, by the names shown.
fn scrub_files(paths: &[PathBuf], secrets: &Secrets, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let mut held = Vec::new();
    for path in paths {
        if scrub_file(path, secrets, dry_run)? {
            held.push(path.shown().to_string());
        }
    }
    Ok(held)
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice, args: Args) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    // Read once: for the keys, and for the store's settings.
    let config = ws.config()?;
    let secrets = secrets(&ws, &config, &args.env)?;
    // Each place on its own: one that cannot be read or written (damaged, locked) does
    // not keep the key in the others, and the report says which were scrubbed and which
    // not (tester 14 F4: a damaged cache had stopped the run after the history store was
    // rewritten, with an error that read as if nothing had changed).
    let history_path = ws.history_path(store.path.as_deref());
    let history = (|| {
        let mut history = ws.open_history_with(&store, &config)?;
        let held = history.scrub(&secrets, &ws.pipeline_ids(), args.dry_run)?;
        Ok(vec![held.plans, held.executions])
    })();
    let pastes = (|| match OutputCache::open_existing_in(&ws.dir)? {
        Some(mut cache) => Ok(vec![cache.scrub(&secrets, args.dry_run)?]),
        None => Ok(vec![Vec::new()]),
    })();
    let logs = scrub_files(&log_files(&ws.dir), &secrets, args.dry_run).map(|held| vec![held]);
    // Answers a store write refused, kept as whole plan lines (tester 50 F16: a key found
    // later stayed in them).
    let unstored = crate::live::kept_file::unstored_files(&ws.dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot list its files: {e}", ws.dir.shown()))
        .and_then(|files| scrub_files(&files, &secrets, args.dry_run))
        .map(|held| vec![held]);
    let in_store = format!(" in {}", history_path.shown());
    let places = [
        Place {
            what: "the history store",
            found: history,
            lines: vec![
                ("plan", "plans", in_store.clone()),
                ("execution", "executions", in_store),
            ],
        },
        Place {
            what: "the output cache",
            found: pastes,
            lines: vec![(
                "cached paste",
                "cached pastes",
                " in the output cache".into(),
            )],
        },
        Place {
            what: "the logs",
            found: logs,
            lines: vec![("log file", "log files", String::new())],
        },
        Place {
            what: "the unstored plan files",
            found: unstored,
            lines: vec![("unstored plan file", "unstored plan files", String::new())],
        },
    ];
    let failed: Vec<&str> = places
        .iter()
        .filter(|p| p.found.is_err())
        .map(|p| p.what)
        .collect();
    if args.json {
        let not_scrubbed: Vec<serde_json::Value> = places
            .iter()
            .filter_map(|p| {
                let e = p.found.as_ref().err()?;
                Some(serde_json::json!({"place": p.what, "error": crate::exit::said(e)}))
            })
            .collect();
        let held =
            |place: usize, line: usize| places[place].found.as_ref().ok().and_then(|h| h.get(line));
        print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "store": history_path,
            "plans": held(0, 0),
            "executions": held(0, 1),
            "cached_pastes": held(1, 0),
            "logs": held(2, 0),
            "unstored_plans": held(3, 0),
            "not_scrubbed": not_scrubbed,
        }))?;
    } else {
        // The verb agrees with the count, as the noun does (tester 48 nit: "1 plan … hold").
        let (holds, hold) = if args.dry_run {
            ("holds", "hold")
        } else {
            ("held", "held")
        };
        let undone = if args.dry_run {
            "not read"
        } else {
            "not scrubbed"
        };
        let mut out = String::new();
        for place in &places {
            match &place.found {
                Ok(held) => {
                    for ((one, many, where_), held) in place.lines.iter().zip(held) {
                        out.push_str(&format!(
                            "{} a key{}\n",
                            counted(
                                held.len(),
                                &format!("{one}{where_} {holds}"),
                                &format!("{many}{where_} {hold}")
                            ),
                            listed(held)
                        ));
                    }
                }
                Err(_) => out.push_str(&format!("{}: {undone} (the error follows)\n", place.what)),
            }
        }
        let any = places.iter().any(|p| {
            p.found
                .as_ref()
                .is_ok_and(|h| h.iter().any(|h| !h.is_empty()))
        });
        out.push_str(match (args.dry_run, any) {
            (_, false) if !failed.is_empty() => "nothing to take out in the rest\n",
            (true, true) => {
                "nothing was changed (--dry-run); run without it to take the keys out\n"
            }
            (false, true) => {
                "each was rewritten without the keys; no free page of the files holds them either\n"
            }
            (_, false) => "nothing to take out\n",
        });
        emit(&out)?;
    }
    // The run fails with the first place's error (its exit code: 2 for a damaged file, 1
    // for a lock), naming every place left as it was.
    match places.into_iter().find_map(|p| p.found.err()) {
        Some(first) => Err(first.context(format!(
            "scrub incomplete: {} {} not {} (what is said above was done)",
            failed.join(" and "),
            if failed.len() == 1 { "was" } else { "were" },
            if args.dry_run { "read" } else { "scrubbed" }
        ))),
        None => Ok(()),
    }
}

/// One place a key may be kept, and what of it held one (refs, plan or execution ids, or
/// files: one list per line of the report), or why it could not be read or rewritten.
struct Place {
    what: &'static str,
    found: anyhow::Result<Vec<Vec<String>>>,
    /// Each list's line: what one and many of it are called, and where it is.
    lines: Vec<(&'static str, &'static str, String)>,
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
