//! Logs: `tracing` events to one file in the workspace, off unless asked for.
//!
//! `--log LEVEL` or `CTXCONSOLE_LOG=LEVEL` turns them on (`error`, `warn`, `info`, `debug`,
//! `trace`, `off`). They go to `logs/ctxconsole.log` in the workspace — never to the terminal,
//! where they would tear the console's screen. What is logged: request ids, timings, retries,
//! statuses, failure classes, counts. Never a key (keys live only in the Authorization header,
//! which is never logged, everything received passes the client's redactor first, and every
//! line written passes the configured keys' redactor, whatever it quotes), and
//! never a message body unless `--log-bodies`.
//!
//! The file is appended to, not written whole and renamed like every other file: a log is a
//! stream that must survive a crash mid-run. It is private (0600, its directory 0700) because
//! with `--log-bodies` it holds prompts; a file grown past [`ROTATE_BYTES`] is moved to
//! `ctxconsole.log.1` when logging starts, so the log never grows without bound. Each event
//! goes to the file the path names then, under a shared lock a rewrite (`scrub`) waits for
//! (`LogFile::follow_the_path`).

use crate::core::terminal_text::ShownPath;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing_subscriber::filter::LevelFilter;

use crate::exit::bad_input;

/// The environment variable read when `--log` is not given.
pub const LOG_ENV: &str = "CTXCONSOLE_LOG";
/// The log's directory inside the workspace, and its file name.
pub const LOG_DIR: &str = "logs";
pub const LOG_FILE: &str = "ctxconsole.log";
/// A log past this size at start is moved aside (one generation kept): 16 MiB is weeks of
/// `info` and still opens in any pager.
pub const ROTATE_BYTES: u64 = 16 * 1024 * 1024;
/// Bodies in the log are cut to this many bytes each: a 20 MB paste must not become a
/// 20 MB log line.
pub const BODY_LOG_MAX_BYTES: usize = 64 * 1024;

static BODIES: AtomicBool = AtomicBool::new(false);

/// Whether request and answer bodies may be logged (`--log-bodies`).
pub fn bodies() -> bool {
    BODIES.load(Ordering::Relaxed)
}

/// A body for the log when `--log-bodies` is on: cut to [`BODY_LOG_MAX_BYTES`] at a
/// character boundary. `None` when bodies are off, so a call site cannot forget to ask.
pub fn body_for_log(text: &str) -> Option<String> {
    bodies().then(|| cut_for_log(text))
}

/// A JSON body for the log, as [`body_for_log`]: written with every character outside
/// printable ASCII as a JSON `\uXXXX` escape, so the line is inert in a terminal and still
/// the JSON sent (tester 19 F13: the log's own escaping wrote `\u{202e}`, which no JSON
/// reader takes, into the only whole copy of the request).
pub fn json_for_log(value: &serde_json::Value) -> Option<String> {
    bodies().then(|| cut_for_log(&crate::core::terminal_text::ascii_json(&value.to_string())))
}

fn cut_for_log(text: &str) -> String {
    if text.len() <= BODY_LOG_MAX_BYTES {
        return text.to_string();
    }
    let mut end = BODY_LOG_MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// What the command line and environment asked for.
#[derive(Debug, Clone, Default)]
pub struct LogRequest {
    /// `--log LEVEL`.
    pub flag: Option<String>,
    /// `--log-bodies`.
    pub bodies: bool,
}

/// A level name → a filter; anything else is a bad-input error naming where it came from.
pub fn parse_level(text: &str, origin: &str) -> anyhow::Result<LevelFilter> {
    match text.trim().to_ascii_lowercase().as_str() {
        "off" | "none" => Ok(LevelFilter::OFF),
        "error" => Ok(LevelFilter::ERROR),
        "warn" | "warning" => Ok(LevelFilter::WARN),
        "info" => Ok(LevelFilter::INFO),
        "debug" => Ok(LevelFilter::DEBUG),
        "trace" => Ok(LevelFilter::TRACE),
        _ => Err(bad_input(format!(
            "{origin}: {} is not a log level (error, warn, info, debug, trace, off)",
            crate::core::terminal_text::quoted(text)
        ))),
    }
}

/// The level asked for: `--log`, else `CTXCONSOLE_LOG`, else off. `--log-bodies` alone
/// means `debug` (bodies are logged at that level).
pub fn level(request: &LogRequest) -> anyhow::Result<LevelFilter> {
    if let Some(flag) = &request.flag {
        return parse_level(flag, "--log");
    }
    match std::env::var(LOG_ENV) {
        Ok(v) if !v.trim().is_empty() => parse_level(&v, LOG_ENV),
        Err(std::env::VarError::NotUnicode(_)) => Err(bad_input(format!(
            "{LOG_ENV}: is not valid UTF-8, so not a log level"
        ))),
        _ if request.bodies => Ok(LevelFilter::DEBUG),
        _ => Ok(LevelFilter::OFF),
    }
}

/// Where the log goes in a workspace directory.
pub fn log_path(workspace_dir: &Path) -> PathBuf {
    workspace_dir.join(LOG_DIR).join(LOG_FILE)
}

/// Start logging into `workspace_dir` when asked; returns the log's path when on.
pub fn init(workspace_dir: &Path, request: &LogRequest) -> anyhow::Result<Option<PathBuf>> {
    let level = level(request)?;
    if level == LevelFilter::OFF {
        return Ok(None);
    }
    let path = log_path(workspace_dir);
    let file = open_log(&path)?;
    BODIES.store(request.bodies, Ordering::Relaxed);
    let writer = SharedFile(Arc::new(Mutex::new(LogFile {
        file,
        path: path.clone(),
        broken: false,
    })));
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_target(true)
        .with_writer(move || writer.clone())
        .finish();
    // A second init in one process (tests calling `run` twice) keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(subscriber);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        bodies = request.bodies,
        "logging started"
    );
    Ok(Some(path))
}

/// Open the log for appending, private, moving a file that grew too large aside first.
fn open_log(path: &Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        crate::fsio::private_dir(dir, LOG_FILE)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(bad_input(format!(
                "{}: is {}, not a log file",
                path.shown(),
                crate::fsio::kind_of(&meta.file_type())
            )));
        }
        Ok(meta) if meta.len() > ROTATE_BYTES => {
            // The full log keeps what it held (prompts, with --log-bodies) under its new
            // name: it is made private before it moves, as the log itself is (tester 6 F14:
            // a 0644 log over the bound went to ctxconsole.log.1 readable by others).
            let full = OpenOptions::new()
                .read(true)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .map_err(|e| anyhow::anyhow!("{}: cannot open the log: {e}", path.shown()))?;
            let old = path.with_extension("log.1");
            make_private(&full, path, &format!("before it moved to {}", old.shown()))?;
            std::fs::rename(path, &old).map_err(|e| {
                anyhow::anyhow!("{}: cannot move the full log aside: {e}", path.shown())
            })?;
        }
        _ => {}
    }
    // A rotated log an older version left readable by others is made private too (tester 7
    // T7-10: it was never tightened nor said).
    let rotated = path.with_extension("log.1");
    if let Ok(old) = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&rotated)
        && old.metadata().is_ok_and(|m| m.is_file())
    {
        make_private(&old, &rotated, "(the log before the last one)")?;
    }
    let mut file = open_append(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot open the log: {e}", path.shown()))?;
    make_private(&file, path, "before logging")?;
    // A line a full disk cut short last run is ended, so this run's first event is a line of
    // its own (tester 29 L2: it was appended onto the cut one). A failure here shows at the
    // first write, which says it.
    let _ = end_a_cut_line(&mut file);
    Ok(file)
}

/// The log at `path` opened for appending: created private (0600) when there is none, never
/// through a symbolic link.
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Write a line break after the last byte unless it is one (or the file is empty).
fn end_a_cut_line(file: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    if last[0] != b'\n' {
        file.write_all(b"\n")?;
    }
    Ok(())
}

/// The log holds request ids, errors and, with --log-bodies, prompts and answers: a file
/// left readable by others (a logrotate `create 0644`) is made private, and said so, not
/// merely reported. `when` ends the notice.
fn make_private(file: &std::fs::File, path: &Path, when: &str) -> anyhow::Result<()> {
    crate::fsio::make_private(file, path, "log", when)
}

/// The one open log file, shared by every thread's events. Everything written to it has
/// every configured key taken out ([`crate::llm::redact::for_output`]) and is made safe for a
/// terminal on the way in — one place for every event and field, bodies from servers and
/// catalogs included — since the log is read with `tail` and `less`.
#[derive(Clone)]
struct SharedFile(Arc<Mutex<LogFile>>);

/// The log file, and whether a write to it has failed this run.
struct LogFile {
    file: std::fs::File,
    path: std::path::PathBuf,
    broken: bool,
}

impl LogFile {
    /// Write `bytes`, or, once a write has failed (a full disk), say so once — one line
    /// naming the file — and drop the rest of the run's events. An error given back to the
    /// subscriber had it print two lines of its own on stderr for every event, not naming
    /// the file, while the command went on (tester 21 F4).
    fn write_event(&mut self, bytes: &[u8]) {
        if self.broken {
            return;
        }
        let written = self.follow_the_path().and_then(|locked| {
            let written = self.file.write_all(bytes);
            if locked {
                let _ = self.file.unlock();
            }
            written
        });
        if let Err(e) = written {
            self.broken = true;
            crate::fsio::notice(format!(
                "{}: cannot write the log ({e}): the rest of this run's log is dropped",
                self.path.shown()
            ));
        }
    }
}

impl LogFile {
    /// Make the open file the one the log's path names now, under the shared lock a rewrite
    /// waits for (`crate::fsio::open_for_rewrite`), as Python's `WatchedFileHandler` does: a
    /// `scrub` renames a rewritten log over the path, `open_log` moves a full one aside, an
    /// operator deletes it; each event goes to the file at the path, reopened (appending,
    /// 0600) when it is another (tester 50 F1: a running process wrote on into the unlinked
    /// file, and every line after a scrub was lost). True when the lock is held.
    fn follow_the_path(&mut self) -> std::io::Result<bool> {
        // A path given a new file between the lock and the look (a rewrite) is looked at
        // again under the new file's lock; a path replaced again and again is written to as
        // it last stood.
        for _ in 0..3 {
            let locked = crate::fsio::lock_for_append(&self.file);
            if crate::fsio::is_file_at(&self.file, &self.path) {
                return Ok(locked);
            }
            if locked {
                let _ = self.file.unlock();
            }
            let mut file = open_append(&self.path)?;
            // Ours, but a file someone else put there may be loose: made private, or not
            // written at all, as at the start (review 50 L4: it was written to anyway).
            make_private(&file, &self.path, "before logging").map_err(std::io::Error::other)?;
            let _ = end_a_cut_line(&mut file);
            self.file = file;
        }
        Ok(crate::fsio::lock_for_append(&self.file))
    }
}

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // One event is one line: a line break inside it (a server's error page, a body) is
        // written as `\n`, so nothing read from outside can forge a line of its own.
        // Whatever the event quotes (an error naming a value a file held) goes through the
        // configured keys' redactor (tester 23 F2).
        let text = String::from_utf8_lossy(buf);
        let text = crate::llm::redact::for_output(&text);
        let (event, end) = match text.strip_suffix('\n') {
            Some(event) => (event, "\n"),
            None => (text.as_ref(), ""),
        };
        let safe = format!(
            "{}{end}",
            crate::core::terminal_text::for_terminal_line(event)
        );
        match self.0.lock() {
            Ok(mut f) => f.write_event(safe.as_bytes()),
            // A thread that panicked mid-line poisons nothing worth refusing the next line.
            Err(poisoned) => poisoned.into_inner().write_event(safe.as_bytes()),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // A file's writes are not buffered here; a failed one was said by `write_event`.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_anything_else_names_its_origin() {
        assert_eq!(parse_level("DEBUG", "--log").unwrap(), LevelFilter::DEBUG);
        assert_eq!(parse_level(" warn ", "--log").unwrap(), LevelFilter::WARN);
        assert_eq!(parse_level("off", "--log").unwrap(), LevelFilter::OFF);
        let err = parse_level("loud", LOG_ENV).unwrap_err().to_string();
        assert!(err.contains(LOG_ENV) && err.contains("loud"), "{err}");
    }

    /// A log over the bound moves to `ctxconsole.log.1` private, whatever its mode was, and
    /// the new log is private too.
    #[test]
    fn a_full_log_readable_by_others_is_made_private_before_it_moves_aside() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join(LOG_DIR);
        std::fs::create_dir(&logs).unwrap();
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = logs.join(LOG_FILE);
        let full = std::fs::File::create(&path).unwrap();
        full.set_len(ROTATE_BYTES + 1).unwrap();
        full.set_permissions(std::fs::Permissions::from_mode(0o644))
            .unwrap();
        drop(full);
        let _log = open_log(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let old = path.with_extension("log.1");
        assert_eq!(std::fs::metadata(&old).unwrap().len(), ROTATE_BYTES + 1);
        assert_eq!(mode(&old), 0o600);
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        // A rotated log left loose (by an older version) is made private at the next start.
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let _log = open_log(&path).unwrap();
        assert_eq!(mode(&old), 0o600);
    }

    /// Tester 50 F1: a line logged while `scrub` holds the log to rewrite it waits, then goes
    /// to the rewritten file; the lines after it too, and a log deleted is made again (0600).
    #[test]
    fn a_line_logged_during_a_rewrite_waits_and_goes_to_the_file_at_the_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_DIR).join(LOG_FILE);
        let log = Arc::new(Mutex::new(LogFile {
            file: open_log(&path).unwrap(),
            path: path.clone(),
            broken: false,
        }));
        let write = |log: &Arc<Mutex<LogFile>>, line: &str| {
            log.lock().unwrap().write_event(line.as_bytes());
        };
        write(&log, "before\n");
        let held = crate::fsio::open_for_rewrite(&path).unwrap().unwrap();
        let writer = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || write(&log, "during\n"))
        };
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!writer.is_finished(), "the line waits for the rewrite");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "before\n");
        crate::fsio::write_file(&path, b"rewritten\n", true).unwrap();
        drop(held);
        writer.join().unwrap();
        write(&log, "after\n");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "rewritten\nduring\nafter\n"
        );
        std::fs::remove_file(&path).unwrap();
        write(&log, "again\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "again\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!log.lock().unwrap().broken);
    }

    #[test]
    fn bodies_are_cut_at_a_character_boundary() {
        let long = "é".repeat(BODY_LOG_MAX_BYTES);
        let cut = cut_for_log(&long);
        assert!(cut.len() < long.len());
        assert!(cut.ends_with(&format!("({} bytes in all)", long.len())));
        assert_eq!(cut_for_log("x"), "x");
    }
}
