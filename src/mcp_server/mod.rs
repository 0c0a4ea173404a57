//! `ctxconsole mcp`: an MCP server, a front end like the CLI and the console. Over stdio by
//! default, or streamable HTTP. It calls services and core; nothing calls back into it.

pub mod handler;
pub mod http;
pub mod jsonrpc;
pub mod params;
pub mod sessions;
pub mod stdio;

use clap::builder::TypedValueParser as _;
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::core::duration::{DurationError, parse_duration};
use crate::exit::bad_input;
use crate::workspace::{ReadOnlyHistory, Workspace, WorkspaceOptions};
use handler::{Console, HistorySource, State};
use sessions::{SESSIONS_MAX, Sessions};
use stdio::{BoundedStdio, MESSAGE_MAX};

/// The shortest bearer token `--token` takes.
pub const TOKEN_MIN: usize = 16;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio. ADDR must be loopback
    /// (127.0.0.1:8765, [::1]:8765); port 0 picks a free one, printed on stderr.
    #[arg(long, value_name = "ADDR", conflicts_with = "bind")]
    pub http: Option<SocketAddr>,
    /// Serve streamable HTTP on any address (e.g. 0.0.0.0:8765). Requires --token.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// The bearer token every HTTP request must carry (`Authorization: Bearer TOKEN`), at
    /// least 16 characters. Required with --bind, optional with --http.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Over HTTP, the most MCP sessions held at once; an initialize beyond them gets 503.
    #[arg(long, value_name = "N", default_value_t = SESSIONS_MAX,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub max_sessions: usize,
    /// Over HTTP, close a session after this long without a request (100ms to 1d).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_SESSION_IDLE, value_parser = session_idle)]
    pub session_idle: Duration,
    /// No tool writes: record_execution is not listed and a call to it is refused, and
    /// briefed pastes are not written to the output cache.
    #[arg(long)]
    pub read_only: bool,
    /// A LiteLLM registry to layer over the sample budgets.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
}

/// [`SESSION_IDLE`] as the flag writes it.
const DEFAULT_SESSION_IDLE: &str = "5m";

fn session_idle(s: &str) -> Result<Duration, DurationError> {
    parse_duration(
        s,
        Duration::from_millis(100)..=Duration::from_secs(24 * 60 * 60),
    )
}

/// Where to listen, checked before anything is opened.
enum Listen {
    Stdio,
    Http {
        addr: SocketAddr,
        token: Option<String>,
        open: bool,
    },
}

fn listen(args: &Args) -> anyhow::Result<Listen> {
    if let Some(t) = &args.token
        && (t.len() < TOKEN_MIN || !t.bytes().all(|b| b.is_ascii_graphic()))
    {
        // It travels in a header: visible ASCII, no spaces.
        return Err(bad_input(format!(
            "--token must be at least {TOKEN_MIN} characters of visible ASCII (no spaces)"
        )));
    }
    match (args.http, args.bind) {
        (Some(addr), _) if !addr.ip().is_loopback() => Err(bad_input(format!(
            "--http {addr}: not a loopback address; to listen on it use --bind {addr} --token TOKEN"
        ))),
        (Some(addr), _) => Ok(Listen::Http {
            addr,
            token: args.token.clone(),
            open: false,
        }),
        (None, Some(addr)) => match &args.token {
            None => Err(bad_input(format!(
                "--bind {addr} needs --token: a server reachable from elsewhere must check who calls it"
            ))),
            Some(t) => Ok(Listen::Http {
                addr,
                token: Some(t.clone()),
                open: true,
            }),
        },
        (None, None) if args.token.is_some() => Err(bad_input(
            "--token is for HTTP: give --http ADDR or --bind ADDR with it",
        )),
        (None, None) => Ok(Listen::Stdio),
    }
}

pub fn run(
    workspace: Option<PathBuf>,
    store: crate::workspace::StoreChoice,
    args: Args,
) -> anyhow::Result<()> {
    let how = listen(&args)?;
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: args.registry.clone(),
    })?;
    // Opened once before serving: a store that is not one is refused at start, not at the
    // first read; a new one is seeded, as for every command. Read-only, nothing is created,
    // seeded or migrated: with no store the history a new one would start with is kept in
    // memory.
    let store = if args.read_only {
        match ws.open_history_read_only(&store)? {
            ReadOnlyHistory::File(history) => HistorySource::File(history.path().to_path_buf()),
            ReadOnlyHistory::Memory(history) => HistorySource::Memory(Mutex::new(history)),
        }
    } else {
        HistorySource::File(ws.open_history(&store)?.path().to_path_buf())
    };
    let state = Arc::new(State::new(ws, store, args.read_only));
    // The semantic layer (when configured) is built now, beside the handshake: opening a
    // local model and embedding a catalog the first time can take a minute, which the
    // first call to rank would otherwise wait for. A failure is said here and again by
    // the first call that needs it, at once (see State::semantic).
    let warm = Arc::clone(&state);
    std::thread::spawn(move || {
        if let Err(e) = warm.warm_semantic() {
            crate::cli::out::eprint_line(&format!("ctxconsole mcp: semantic layer: {e:#}"));
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = rt.block_on(async move {
        match how {
            Listen::Stdio => {
                let transport =
                    BoundedStdio::new(tokio::io::stdin(), tokio::io::stdout(), MESSAGE_MAX);
                let running = Console::new(state)
                    .serve(transport)
                    .await
                    .map_err(|e| anyhow::anyhow!("MCP handshake on stdio: {e}"))?;
                running.waiting().await?;
                Ok(())
            }
            Listen::Http { addr, token, open } => {
                let sessions = Sessions::new(args.max_sessions, args.session_idle);
                http::serve(state, addr, token, open, sessions).await
            }
        }
    });
    // The client has gone: a call still at work on a blocking thread (a rank waiting on an
    // embeddings endpoint) is not waited for, as dropping the runtime would; its answer
    // has nobody to go to.
    rt.shutdown_background();
    served
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessions::SESSION_IDLE;

    #[test]
    fn the_default_idle_is_the_named_one() {
        assert_eq!(session_idle(DEFAULT_SESSION_IDLE), Ok(SESSION_IDLE));
    }
}
