//! `ctxconsole mcp`: an MCP server, a front end like the CLI and the console. Over stdio by
//! default, or streamable HTTP. It calls services and core; nothing calls back into it.

pub mod commits;
pub mod handler;
pub mod http;
pub mod jsonrpc;
pub mod notes;
pub mod params;
pub mod read_cached;
pub mod sessions;
pub mod stdio;
pub mod unproven;

use crate::core::terminal_text::ShownPath;
use clap::builder::TypedValueParser as _;
use rmcp::ServiceExt;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::core::duration::{DurationError, parse_duration};
use crate::exit::bad_input;
use crate::workspace::{ReadOnlyHistory, Workspace, WorkspaceOptions};
use handler::{Console, HistorySource, State};
use http::{CONNECTIONS_MAX, ConnectionLimits};
use sessions::{SESSIONS_MAX, Sessions};
use stdio::{BoundedStdio, MESSAGE_MAX};

/// The shortest bearer token taken.
pub const TOKEN_MIN: usize = 16;

pub use crate::core::config::MCP_TOKEN_ENV as TOKEN_ENV;

/// The file in the workspace holding the token `--http` uses when none was given (made
/// there when there is none, reused after).
pub const GENERATED_TOKEN_FILE: &str = "mcp-token";

/// The most a `--token-file` may hold.
const TOKEN_FILE_MAX: u64 = 4096;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio. ADDR must be loopback
    /// (127.0.0.1:8765, [::1]:8765); port 0 picks a free one, printed on stderr.
    #[arg(long, value_name = "ADDR", conflicts_with = "bind")]
    pub http: Option<SocketAddr>,
    /// Serve streamable HTTP on any address (e.g. 0.0.0.0:8765). Requires a token.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// The bearer token every HTTP request must carry (`Authorization: Bearer TOKEN`), at
    /// least 16 characters. Required with --bind; with --http, one is made when none is given
    /// (see --no-token). On the command line
    /// every local user sees it in `ps`: prefer $CTXCONSOLE_MCP_TOKEN or --token-file.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    pub token: Option<String>,
    /// Read the bearer token from FILE (the owner's alone, e.g. 0600; a final newline is
    /// dropped). Without --token or --token-file, HTTP takes $CTXCONSOLE_MCP_TOKEN.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// With --http and no token given, serve without one instead of using (or making) the
    /// one in <workspace>/mcp-token: any local user can then connect.
    #[arg(long, conflicts_with_all = ["token", "token_file", "bind"])]
    pub no_token: bool,
    /// Over HTTP, the most MCP sessions held at once; an initialize beyond them closes the
    /// least recently used.
    #[arg(long, value_name = "N", default_value_t = SESSIONS_MAX,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub max_sessions: usize,
    /// Over HTTP, close a session after this long without a request (100ms to 1d).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_SESSION_IDLE, value_parser = session_idle)]
    pub session_idle: Duration,
    /// Over HTTP, the most connections served at once (1 to 4096); one more closes the
    /// oldest that has sent no authorised request, or waits until one ends.
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS_MAX,
          value_parser = clap::value_parser!(u16).range(1..=4096).map(usize::from))]
    pub max_connections: usize,
    /// Over HTTP, how long a connection may take to send a request's headers, and then its
    /// body (100ms to 10m); it is closed after.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_READ_TIMEOUT, value_parser = read_timeout)]
    pub read_timeout: Duration,
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

/// [`http::READ_TIMEOUT`] as the flag writes it.
const DEFAULT_READ_TIMEOUT: &str = "30s";

fn read_timeout(s: &str) -> Result<Duration, DurationError> {
    parse_duration(s, Duration::from_millis(100)..=Duration::from_secs(10 * 60))
}

/// Where to listen, checked before anything is opened.
enum Listen {
    Stdio,
    Http {
        addr: SocketAddr,
        token: Option<String>,
        open: bool,
        /// No token was given and none refused with --no-token: make one (see
        /// [`workspace_token`]).
        generate: bool,
    },
}

/// How many random bytes a token made for `--http` holds; it is written as twice as many
/// lowercase hex digits.
const GENERATED_TOKEN_BYTES: usize = 32;

/// What to do about a workspace token file that is refused.
const WORKSPACE_TOKEN_FIX: &str = "delete it to have a new one made at the next start, or give a token with $CTXCONSOLE_MCP_TOKEN or --token-file FILE";

/// Whether `text` is a token as [`new_token`] makes them: [`GENERATED_TOKEN_BYTES`] in
/// lowercase hex.
fn is_generated_token(text: &str) -> bool {
    text.len() == 2 * GENERATED_TOKEN_BYTES
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The token in `dir`/[`GENERATED_TOKEN_FILE`] for `--http` given none: the one there when
/// it can be trusted (see [`workspace_token_problem`]), else a new one made into it when
/// there is none ([`new_token`]). Which of the two is said on stderr. Anything else under
/// the name is refused, naming what is wrong: never replaced (deleting it is how to make a
/// new one) and never shown.
///
/// `may_make` is false under `--read-only`, which writes nothing: a token already there is
/// used all the same (reading it writes nothing; tester 8 F3 found it refused), and none
/// there is an error saying where one may come from.
fn workspace_token(dir: &Path, may_make: bool) -> anyhow::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = dir.join(GENERATED_TOKEN_FILE);
    let shown = path.shown().to_string();
    let shown = crate::core::terminal_text::for_terminal_line(&shown);
    let none_to_read = || {
        bad_input(format!(
            "--read-only writes nothing, so no token file is made, and {shown} does not exist; give one with ${TOKEN_ENV} or --token-file FILE, listen with --no-token, or start once without --read-only to have one made"
        ))
    };
    if !may_make && std::fs::symlink_metadata(&path).is_err() {
        return Err(none_to_read());
    }
    crate::fsio::private_dir(dir, GENERATED_TOKEN_FILE)?;
    let refuse = |what: String| bad_input(format!("{what}; {WORKSPACE_TOKEN_FIX}"));
    // Two servers started at once both find no file; the one whose link comes second reads
    // the first one's token (tester 6 F15: it exited with "File exists").
    let mut tries = 0;
    let file = loop {
        tries += 1;
        match crate::fsio::open_own_secret(&path).map_err(|e| refuse(crate::exit::said(&e)))? {
            Some(file) => break file,
            None if !may_make => return Err(none_to_read()),
            None => {
                if let Some(token) = new_token(&path, &shown, tries < 2)? {
                    return Ok(token);
                }
            }
        }
    };
    let cannot = |e: std::io::Error| refuse(format!("{shown}: cannot read: {e}"));
    let meta = file.metadata().map_err(cannot)?;
    // One byte past the longest good file is enough to tell it is not one.
    let mut bytes = Vec::new();
    file.take(2 * GENERATED_TOKEN_BYTES as u64 + 2)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    let me = nix::unistd::geteuid().as_raw();
    if let Some(problem) =
        workspace_token_problem(meta.uid(), me, meta.permissions().mode(), &bytes)
    {
        return Err(refuse(format!("{shown}: {problem}")));
    }
    let token = String::from_utf8_lossy(&bytes).trim_end().to_string();
    crate::cli::out::eprint_line(&format!(
        "ctxconsole mcp: token: using the token in {shown} (delete it to have a new one made at the next start); clients send Authorization: Bearer TOKEN"
    ));
    Ok(token)
}

/// What is wrong with a workspace token file owned by `owner` (this process runs as `me`)
/// with `mode`, holding `bytes`; `None` when it is one to use: the owner's, no group or
/// other bits, one token as [`new_token`] writes it (a final line break or none).
fn workspace_token_problem(owner: u32, me: u32, mode: u32, bytes: &[u8]) -> Option<String> {
    if owner != me {
        return Some(format!(
            "owned by user {owner}, not by this user ({me}), who could not have made it"
        ));
    }
    let mode = mode & 0o777;
    if mode & 0o077 != 0 {
        return Some(format!(
            "mode {mode:o}: others than its owner may read or write it, so the token may be known to them"
        ));
    }
    if bytes.is_empty() {
        return Some("is empty".into());
    }
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    match std::str::from_utf8(line) {
        Ok(text) if is_generated_token(text) => None,
        _ => Some(format!(
            "is not one token as made for --http ({} lowercase hex digits on one line)",
            2 * GENERATED_TOKEN_BYTES
        )),
    }
}

/// A new random token ([`GENERATED_TOKEN_BYTES`] from /dev/urandom, in hex), written to
/// `path` as a new private file (0600, written beside it and linked into place, so a reader
/// never sees half of it and a file that appeared meanwhile is not replaced), said on
/// stderr as `shown`. `None` when a file appeared meanwhile and `yield_to_another` is set:
/// another start made it, and it is read instead.
fn new_token(path: &Path, shown: &str, yield_to_another: bool) -> anyhow::Result<Option<String>> {
    use std::io::Read;
    let mut random = [0u8; GENERATED_TOKEN_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut random))
        .map_err(|e| anyhow::anyhow!("making a token for --http: reading /dev/urandom: {e}"))?;
    let token: String = random.iter().map(|b| format!("{b:02x}")).collect();
    match crate::fsio::write_file(path, format!("{token}\n").as_bytes(), false) {
        Err(e) if yield_to_another && e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Ok(None);
        }
        Err(e) => {
            return Err(anyhow::anyhow!(
                "{shown}: cannot write the token made for --http: {e} (give one with ${TOKEN_ENV} or --token-file FILE, or --no-token)"
            ));
        }
        Ok(()) => {}
    }
    crate::cli::out::eprint_line(&format!(
        "ctxconsole mcp: token: made a new token into {shown} (the owner's alone; delete it to have another made at the next start); clients send Authorization: Bearer TOKEN"
    ));
    Ok(Some(token))
}

/// The token `--token-file` names: a regular file no one but its owner may read or write,
/// at most [`TOKEN_FILE_MAX`] bytes, without its final line break.
fn token_from_file(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let shown = path.shown();
    let file = crate::fsio::open_regular(path)?;
    let meta = file
        .metadata()
        .map_err(|e| bad_input(format!("--token-file {shown}: cannot read: {e}")))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(bad_input(format!(
            "--token-file {shown}: others than its owner may read or write it (mode {mode:o}); a token file must be the owner's alone: chmod 600 {shown}"
        )));
    }
    let mut bytes = Vec::new();
    file.take(TOKEN_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad_input(format!("--token-file {shown}: cannot read: {e}")))?;
    if bytes.len() as u64 > TOKEN_FILE_MAX {
        return Err(bad_input(format!(
            "--token-file {shown}: more than {TOKEN_FILE_MAX} bytes; it holds the token alone"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        bad_input(format!(
            "--token-file {shown}: not UTF-8; the token is visible ASCII"
        ))
    })?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// The bearer token for HTTP and where it came from: `--token`, `--token-file`, else the
/// environment's [`TOKEN_ENV`] (`env`; one that is set but empty is refused rather than
/// served without a token). It travels in a header: visible ASCII, no spaces.
fn http_token(args: &Args, env: Option<OsString>) -> anyhow::Result<Option<String>> {
    let (token, origin) = if let Some(t) = &args.token {
        (t.clone(), "--token".to_string())
    } else if let Some(path) = &args.token_file {
        (
            token_from_file(path)?,
            format!("--token-file {}", path.shown()),
        )
    } else if let Some(t) = env {
        let t = t
            .into_string()
            .map_err(|_| bad_input(format!("${TOKEN_ENV} is not UTF-8")))?;
        (t, format!("${TOKEN_ENV}"))
    } else {
        return Ok(None);
    };
    if token.len() < TOKEN_MIN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad_input(format!(
            "{origin}: the token must be at least {TOKEN_MIN} characters of visible ASCII (no spaces)"
        )));
    }
    Ok(Some(token))
}

/// `env`: the environment's [`TOKEN_ENV`], read by the caller.
fn listen(args: &Args, env: Option<OsString>) -> anyhow::Result<Listen> {
    match (args.http, args.bind) {
        (Some(addr), _) if !addr.ip().is_loopback() => Err(bad_input(format!(
            "--http {addr}: not a loopback address; to listen on it use --bind {addr} with a token (${TOKEN_ENV} or --token-file FILE)"
        ))),
        // --no-token: the environment's token is not read either; the server says at start
        // that anyone on the machine can connect.
        (Some(addr), _) if args.no_token => Ok(Listen::Http {
            addr,
            token: None,
            open: false,
            generate: false,
        }),
        (Some(addr), _) => {
            let token = http_token(args, env)?;
            Ok(Listen::Http {
                addr,
                generate: token.is_none(),
                token,
                open: false,
            })
        }
        (None, Some(addr)) => match http_token(args, env)? {
            None => Err(bad_input(format!(
                "--bind {addr} needs a token (${TOKEN_ENV}, --token-file FILE or --token TOKEN): a server reachable from elsewhere must check who calls it"
            ))),
            Some(t) => Ok(Listen::Http {
                addr,
                token: Some(t),
                open: true,
                generate: false,
            }),
        },
        // Over stdio the client started this process: there is no one else to keep out,
        // and a $CTXCONSOLE_MCP_TOKEN exported for an HTTP server is no mistake here.
        (None, None) if args.token.is_some() || args.token_file.is_some() || args.no_token => {
            Err(bad_input(
                "--token, --token-file and --no-token are for HTTP: give --http ADDR or --bind ADDR with them",
            ))
        }
        (None, None) => Ok(Listen::Stdio),
    }
}

/// A message as it goes out on either transport: JSON with every character a terminal would
/// act on or that would disguise the text around it written as a `\u` escape
/// ([`crate::core::terminal_text::json_for_terminal`], as the CLI's `--json`): clients log
/// and print what they are sent, and an answer often quotes the client's own input (tester
/// 41 F1: a `rank_tools` answer carried U+202E and U+009B raw). The HTTP transport escapes
/// rmcp's streamed answers with the same function, in pieces.
pub fn wire_json(message: &impl serde::Serialize) -> serde_json::Result<String> {
    let text = serde_json::to_string(message)?;
    Ok(crate::core::terminal_text::json_string_for_terminal(text))
}

/// How long calls in flight get to answer once a stop signal comes, as rmcp gives them when
/// stdin closes.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// The first SIGTERM or SIGINT, by name; never, if they cannot be listened for (said on
/// stderr). Before, either ended the server at once, mid-call: a `record_execution` could
/// be stored with no answer sent, and nothing was said (tester 20 F9).
pub fn stop_signal() -> impl std::future::Future<Output = &'static str> {
    nth_stop_signal(1)
}

/// The `n`th SIGTERM or SIGINT from now, by name; never, if they cannot be listened for
/// (said on stderr by the first only). The second one ends the server without waiting out
/// the grace, as a second ctrl+c ends the console's quit: an operator who presses it again
/// will not wait (two signals that come before this task runs are read as one). Listened
/// for from the call, not from the first poll: a signal in between is counted. Called
/// within the runtime.
pub fn nth_stop_signal(n: usize) -> impl std::future::Future<Output = &'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let listening = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match listening {
            (Ok(mut term), Ok(mut int)) => {
                let mut heard = 0;
                loop {
                    let name = tokio::select! {
                        _ = term.recv() => "SIGTERM",
                        _ = int.recv() => "SIGINT",
                    };
                    heard += 1;
                    if heard >= n {
                        return name;
                    }
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                if n == 1 {
                    crate::cli::out::eprint_line(&format!(
                        "ctxconsole mcp: cannot listen for SIGTERM/SIGINT ({e}); a stop signal ends the server at once"
                    ));
                }
                std::future::pending().await
            }
        }
    }
}

pub fn run(
    workspace: Option<PathBuf>,
    store: crate::workspace::StoreChoice,
    args: Args,
) -> anyhow::Result<()> {
    let mut how = listen(&args, std::env::var_os(TOKEN_ENV))?;
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: args.registry.clone(),
    })?;
    if let Listen::Http {
        token,
        generate: true,
        ..
    } = &mut how
    {
        *token = Some(workspace_token(&ws.dir, !args.read_only)?);
    }
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
    // Calls run at once here, and two may write the same store.
    crate::store::sqlite::writers_in_this_process();
    let state = Arc::new(State::new(ws, store, args.read_only));
    // The semantic layer (when configured) is built now, beside the handshake: opening a
    // local model and embedding a catalog the first time can take a minute, which the
    // first call to rank would otherwise wait for. A failure is said here and again by
    // the first call that needs it, at once (see State::semantic).
    let warm = Arc::clone(&state);
    std::thread::spawn(move || {
        if let Err(e) = warm.warm_semantic() {
            crate::cli::out::eprint_line(&format!(
                "ctxconsole mcp: semantic layer: {}",
                crate::exit::Said(&e)
            ));
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = rt.block_on(async move {
        match how {
            Listen::Stdio => {
                // The handler and the transport settle each recorded call's fate together:
                // stored and answered, or cancelled and not stored (tester 12 T12-8).
                let commits = Arc::new(commits::Commits::default());
                // A stop signal is read as stdin closing: no more requests are read, and
                // calls in flight get rmcp's 5 s to answer.
                let stopped = Arc::new(Mutex::new(None));
                // Listened for from the start, as the first is: the second signal of two.
                let second = nth_stop_signal(2);
                let transport = commits::Settled::new(
                    BoundedStdio::new(tokio::io::stdin(), tokio::io::stdout(), MESSAGE_MAX)
                        .stopped_by(Box::pin(stop_signal()), Arc::clone(&stopped)),
                    Arc::clone(&commits),
                );
                let unanswered = transport.unanswered();
                let running = Console::with_commits(state, commits)
                    .serve(transport)
                    .await
                    .map_err(|e| anyhow::anyhow!("MCP handshake on stdio: {e}"))?;
                // A client that reads nothing holds the answers' writes, and so the server,
                // forever (tester 28 N1: a stop signal then never stopped it). Once a signal
                // came, the calls get their grace and their answers as long again to go out.
                tokio::select! {
                    done = running.waiting() => {
                        done?;
                    }
                    signal = second => {
                        let cut = unanswered.load(std::sync::atomic::Ordering::SeqCst);
                        say_stopped_at_once(signal, cut);
                        return Ok(());
                    }
                    signal = answers_deadline(Arc::clone(&stopped)) => {
                        crate::cli::out::eprint_line(&format!(
                            "ctxconsole mcp: {signal}: the client read no answer in the {} after it; stopped without writing the rest",
                            crate::core::duration::describe(STOP_GRACE * 2)
                        ));
                        return Ok(());
                    }
                }
                let signal = *stopped.lock().unwrap_or_else(|p| p.into_inner());
                let cut = unanswered.load(std::sync::atomic::Ordering::SeqCst);
                match signal {
                    Some(signal) => say_stopped(signal, cut),
                    // The client closed stdin with calls still at work: said as a signal's
                    // cut is (tester 27 F4: silent). A clean close says nothing.
                    None if cut > 0 => say_stopped("stdin closed", cut),
                    None => {}
                }
                Ok(())
            }
            Listen::Http {
                addr, token, open, ..
            } => {
                let sessions = Sessions::new(args.max_sessions, args.session_idle);
                let commits = Arc::new(commits::Commits::default());
                let limits = ConnectionLimits {
                    max: args.max_connections,
                    read_timeout: args.read_timeout,
                };
                http::serve(state, addr, token, open, sessions, commits, limits).await
            }
        }
    });
    // The client has gone: a call still at work on a blocking thread (a rank waiting on an
    // embeddings endpoint) is not waited for, as dropping the runtime would; its answer
    // has nobody to go to.
    rt.shutdown_background();
    served
}

/// The signal's name, [`STOP_GRACE`] twice after it came: the calls' grace, then as long for
/// their answers to be written.
async fn answers_deadline(stopped: Arc<Mutex<Option<&'static str>>>) -> &'static str {
    loop {
        let came = *stopped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(signal) = came {
            tokio::time::sleep(STOP_GRACE * 2).await;
            return signal;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a stop signal left: every call answered, or how many were cut without an answer.
pub fn say_stopped(signal: &str, cut: usize) {
    let line = match cut {
        0 => format!("ctxconsole mcp: {signal}: every call in flight was answered; stopped"),
        n => format!(
            "ctxconsole mcp: {signal}: {} after {} and got no answer{CUT_RECORD}",
            calls_still_running(n),
            crate::core::duration::describe(STOP_GRACE)
        ),
    };
    crate::cli::out::eprint_line(&line);
}

/// A second stop signal ended the server before the grace was out: what it cut.
pub fn say_stopped_at_once(signal: &str, cut: usize) {
    let line = match cut {
        0 => format!("ctxconsole mcp: {signal} again: stopped at once; no call was running"),
        n => format!(
            "ctxconsole mcp: {signal} again: stopped at once; {} and got no answer{CUT_RECORD}",
            calls_still_running(n)
        ),
    };
    crate::cli::out::eprint_line(&line);
}

/// What an operator should know of a cut call that records.
const CUT_RECORD: &str = " (a record_execution may have been stored all the same: retry it under the same `id` to store it once)";

fn calls_still_running(n: usize) -> String {
    let calls = if n == 1 { "call was" } else { "calls were" };
    format!("{n} {calls} still running")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessions::SESSION_IDLE;

    /// Two starts at once both find no token file: the one whose link comes second yields
    /// and reads the first one's token (tester 6 F15), and only then is an existing file an
    /// error.
    #[test]
    fn a_token_made_meanwhile_by_another_start_is_read_not_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let path = dir.path().join(GENERATED_TOKEN_FILE);
        let first = new_token(&path, "t", true).unwrap().unwrap();
        assert_eq!(new_token(&path, "t", true).unwrap(), None);
        let err = new_token(&path, "t", false).unwrap_err().to_string();
        assert!(err.contains("cannot write the token"), "{err}");
        assert_eq!(workspace_token(dir.path(), true).unwrap(), first);
        // Started together, every start ends with the one token written.
        let other = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            other.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let tokens: Vec<String> = std::thread::scope(|s| {
            let starts: Vec<_> = (0..8)
                .map(|_| s.spawn(|| workspace_token(other.path(), true).unwrap()))
                .collect();
            starts.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
    }

    #[test]
    fn the_default_idle_is_the_named_one() {
        assert_eq!(session_idle(DEFAULT_SESSION_IDLE), Ok(SESSION_IDLE));
        assert_eq!(read_timeout(DEFAULT_READ_TIMEOUT), Ok(http::READ_TIMEOUT));
    }

    #[derive(Debug, clap::Parser)]
    struct Command {
        #[command(flatten)]
        args: Args,
    }

    fn listen_to(argv: &[&str], env: Option<&str>) -> anyhow::Result<Listen> {
        use clap::Parser;
        let argv = std::iter::once("mcp").chain(argv.iter().copied());
        let args = Command::try_parse_from(argv)?.args;
        listen(&args, env.map(OsString::from))
    }

    fn refusal(argv: &[&str], env: Option<&str>) -> String {
        match listen_to(argv, env) {
            Ok(_) => panic!("{argv:?} was taken"),
            Err(e) => e.to_string(),
        }
    }

    fn token_of(listen: &Listen) -> Option<&str> {
        match listen {
            Listen::Http { token, .. } => token.as_deref(),
            Listen::Stdio => None,
        }
    }

    const TOKEN: &str = "a-token-from-the-environment";

    /// A workspace token file is used only when it is this user's, private and one token
    /// as made here; each refusal says which of those it is not.
    #[test]
    fn a_workspace_token_file_is_used_only_when_private_and_well_formed() {
        let good = "0123456789abcdef".repeat(4);
        assert!(is_generated_token(&good));
        for (bytes, mode) in [(format!("{good}\n"), 0o600), (good.clone(), 0o400)] {
            assert_eq!(
                workspace_token_problem(7, 7, 0o100000 | mode, bytes.as_bytes()),
                None
            );
        }
        let problem = |owner, mode, bytes: &str| {
            workspace_token_problem(owner, 7, mode, bytes.as_bytes()).unwrap_or_default()
        };
        let line = format!("{good}\n");
        assert!(problem(0, 0o600, &line).contains("owned by user 0, not by this user (7)"));
        for (mode, shown) in [
            (0o640, "mode 640"),
            (0o602, "mode 602"),
            (0o660, "mode 660"),
        ] {
            assert!(problem(7, mode, &line).starts_with(shown), "{mode:o}");
        }
        assert_eq!(problem(7, 0o600, ""), "is empty");
        for bad in [
            "\n".to_string(),
            good[2..].to_string(),
            format!("{good}0"),
            good.to_uppercase(),
            format!("{good}\n\n"),
            format!("{good}\r\n"),
            format!("{good}\n{good}"),
            "g".repeat(64),
        ] {
            assert!(
                problem(7, 0o600, &bad).starts_with("is not one token"),
                "{bad:?}"
            );
        }
        assert!(
            workspace_token_problem(7, 7, 0o600, &[0xff; 64])
                .unwrap_or_default()
                .starts_with("is not one token")
        );
    }

    #[test]
    fn read_only_over_http_makes_no_token_file_and_asks_for_one() {
        // Without a token given, the workspace's is read, never made.
        let l = listen_to(&["--http", "127.0.0.1:0", "--read-only"], None).unwrap();
        assert!(matches!(l, Listen::Http { generate: true, .. }));
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let err = format!("{:#}", workspace_token(&ws, false).unwrap_err());
        assert!(err.contains("--read-only writes nothing"), "{err}");
        assert!(err.contains("mcp-token does not exist"), "{err}");
        assert!(!ws.exists(), "nothing made");
        // Tester 8 F3: one made by an earlier start is used under --read-only too.
        let made = workspace_token(&ws, true).unwrap();
        assert_eq!(workspace_token(&ws, false).unwrap(), made);
        let l = listen_to(&["--http", "127.0.0.1:0", "--read-only"], Some(TOKEN)).unwrap();
        assert_eq!(token_of(&l), Some(TOKEN));
        let l = listen_to(
            &["--http", "127.0.0.1:0", "--read-only", "--no-token"],
            None,
        )
        .unwrap();
        assert!(matches!(
            l,
            Listen::Http {
                token: None,
                generate: false,
                ..
            }
        ));
    }

    #[test]
    fn the_token_comes_from_the_environment_or_a_private_file() {
        // The environment serves --bind and --http alike; a flag goes before it.
        let l = listen_to(&["--bind", "0.0.0.0:0"], Some(TOKEN)).unwrap();
        assert!(matches!(l, Listen::Http { open: true, .. }));
        assert_eq!(token_of(&l), Some(TOKEN));
        let l = listen_to(&["--http", "127.0.0.1:0"], Some(TOKEN)).unwrap();
        assert_eq!(token_of(&l), Some(TOKEN));
        let l = listen_to(
            &["--http", "127.0.0.1:0", "--token", "a-token-from-the-flag"],
            Some(TOKEN),
        )
        .unwrap();
        assert_eq!(token_of(&l), Some("a-token-from-the-flag"));
        // Without any, --http makes one, unless --no-token, which reads no variable either.
        let l = listen_to(&["--http", "127.0.0.1:0"], None).unwrap();
        assert!(matches!(l, Listen::Http { generate: true, .. }));
        let l = listen_to(&["--http", "127.0.0.1:0", "--no-token"], Some(TOKEN)).unwrap();
        assert!(matches!(
            l,
            Listen::Http {
                generate: false,
                ..
            }
        ));
        assert_eq!(token_of(&l), None);
        assert!(listen_to(&["--bind", "0.0.0.0:0", "--no-token"], Some(TOKEN)).is_err());
        assert!(listen_to(&["--no-token"], None).is_err());
        // Without any, --bind is refused and says where a token may come from.
        let e = refusal(&["--bind", "0.0.0.0:0"], None);
        assert!(e.contains(TOKEN_ENV), "{e}");
        // A set but empty or short variable is refused, not taken as no token.
        for bad in ["", "short"] {
            let e = refusal(&["--http", "127.0.0.1:0"], Some(bad));
            assert!(e.contains(&format!("${TOKEN_ENV}")), "{e}");
        }
        // Over stdio the variable is not used; the flags are refused.
        assert!(matches!(
            listen_to(&[], Some(TOKEN)).unwrap(),
            Listen::Stdio
        ));

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
        let path = file.to_str().unwrap();
        assert!(listen_to(&["--token-file", path], None).is_err());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = refusal(&["--http", "127.0.0.1:0", "--token-file", path], None);
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let l = listen_to(&["--http", "127.0.0.1:0", "--token-file", path], Some("")).unwrap();
        assert_eq!(token_of(&l), Some(TOKEN));
        assert!(listen_to(&["--token", TOKEN, "--token-file", path], None).is_err());
        let e = refusal(
            &["--http", "127.0.0.1:0", "--token-file", "/nonexistent/t"],
            None,
        );
        assert!(e.contains("/nonexistent/t"), "{e}");
    }
}
