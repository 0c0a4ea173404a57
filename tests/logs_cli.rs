//! Logs: off unless asked; with `--log LEVEL` or `CTXCONSOLE_LOG` they go to a private file in
//! the workspace with request ids, timings, retries and classes; never a key, never a body
//! unless `--log-bodies`, never a terminal control sequence from a server.

mod common;

use common::ctx;
use common::llm_server::LlmServer;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";
const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
const INSTRUCTION: &str = "remember this launch note and draft a blog from it";

fn workspace(server: &LlmServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    home
}

fn log_file(home: &Path) -> PathBuf {
    home.join("logs").join("ctxconsole.log")
}

fn send(home: &Path, model: &str, extra: &[&str]) -> std::process::Output {
    let store = home.join("plans.sqlite");
    ctx(home)
        .env(KEY_ENV, KEY)
        .args(["send", INSTRUCTION, "--model", model, "--json", "--store"])
        .arg(&store)
        .args(extra)
        .output()
        .unwrap()
}

/// The workspace's log, made beforehand (in a private logs directory) holding `text`, with
/// `mode`.
fn log_holding(home: &Path, text: &str, mode: u32) -> PathBuf {
    let log = log_file(home);
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        log.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(&log, text).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(mode)).unwrap();
    log
}

/// Every piece of the key at least 12 bytes long: a log holding any of them leaks it.
fn assert_no_key(text: &str) {
    for start in 0..=KEY.len() - 12 {
        let piece = &KEY[start..start + 12];
        assert!(!text.contains(piece), "the log holds {piece:?}:\n{text}");
    }
}

#[test]
fn nothing_is_logged_unless_asked() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/tool-calls", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.path().join("logs").exists(), "a log without --log");
}

#[test]
fn a_logged_send_keeps_request_ids_timings_and_classes_in_a_private_file_and_no_body_or_key() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/tool-calls", &["--log", "debug"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("INFO"));
    let path = log_file(home.path());
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let dir = std::fs::metadata(home.path().join("logs")).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    let log = std::fs::read_to_string(&path).unwrap();
    for needle in [
        "command=\"send\"",
        "sending a chat completion",
        "chat completion finished",
        "request_id=\"req-tools-0001\"",
        "latency_ms=",
        "answer read as a plan",
        "outcome=",
    ] {
        assert!(log.contains(needle), "no {needle:?} in:\n{log}");
    }
    assert!(
        !log.contains(INSTRUCTION),
        "a body without --log-bodies:\n{log}"
    );
    assert!(!log.contains("request body"), "{log}");
    assert_no_key(&log);
}

#[test]
fn log_bodies_adds_the_bodies_with_the_key_redacted_even_when_the_server_echoes_it() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/echo-200", &["--log-bodies"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(log_file(home.path())).unwrap();
    assert!(log.contains("request body"), "{log}");
    assert!(log.contains("answer body"), "{log}");
    assert!(
        log.contains("launch note"),
        "the instruction is in the body:\n{log}"
    );
    assert!(log.contains("Authorised by the header"), "{log}");
    assert_no_key(&log);
}

#[test]
fn retries_are_logged_with_their_wait_and_reason() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/server-error", &["--log", "info"]);
    assert_eq!(out.status.code(), Some(1), "a model that could not run");
    let log = std::fs::read_to_string(log_file(home.path())).unwrap();
    let retries = log.matches("retrying").count();
    assert_eq!(retries, 2, "retries = 2 in the config:\n{log}");
    assert!(log.contains("wait_ms="), "{log}");
    assert!(log.contains("HTTP 500"), "{log}");
    assert!(log.contains("answer=\"http_error\""), "{log}");
}

#[test]
fn control_sequences_from_a_server_never_reach_the_log() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/escape-error", &["--log", "debug"]);
    assert_eq!(out.status.code(), Some(1));
    let log = std::fs::read(log_file(home.path())).unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains("failed: HTTP 400"),
        "the detail is logged:\n{text}"
    );
    assert!(text.contains("pwned"), "{text}");
    assert!(!log.contains(&0x1b), "{}", String::from_utf8_lossy(&log));
    assert!(!log.contains(&0x07), "{}", String::from_utf8_lossy(&log));
}

/// With `--log-bodies` the answer body and the request body are logged too, and neither
/// carries a control or bidi character raw: a server's answer (ESC, OSC 52, OSC 8, BEL, an
/// 8-bit CSI, U+202E) and a catalog's tool names reach the file as visible escapes.
#[test]
fn bodies_in_the_log_carry_no_control_or_bidi_character() {
    let server = LlmServer::start();
    let home = workspace(&server);
    std::fs::write(
        home.path().join("catalog.json"),
        serde_json::json!({"tools": [
            {"name": "clone\u{9b}31m\u{202e}repo", "description": "Clone a git repository.",
             "inputSchema": {"type": "object", "properties": {}}},
            {"name": "repo.test", "description": "Run a repository's tests.",
             "inputSchema": {"type": "object", "properties": {}}}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = send(home.path(), "test/escape-answer", &["--log-bodies"]);
    assert!(matches!(out.status.code(), Some(0 | 1)));
    let log = std::fs::read(log_file(home.path())).unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("answer body"), "{text}");
    assert!(text.contains("request body"), "{text}");
    assert!(text.contains("EVIL"), "the body is logged: {text}");
    for c in [
        '\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\u{2028}', '\u{200b}',
    ] {
        assert!(!text.contains(c), "{c:?} raw in the log:\n{text}");
    }
    // Tester 19 F13: the request body is still the JSON sent (non-ASCII as JSON escapes,
    // not the log's `\u{202e}`): it parses, and names the tool as the catalog spells it.
    let line = text
        .lines()
        .find(|l| l.contains("request body"))
        .expect("a request body line");
    let json = &line[line.find("body=").expect("a body field") + "body=".len()..];
    let sent: serde_json::Value = serde_json::Deserializer::from_str(json)
        .into_iter::<serde_json::Value>()
        .next()
        .expect("a JSON value")
        .unwrap_or_else(|e| panic!("the logged body is not JSON: {e}: {json}"));
    assert!(
        sent.to_string().contains("clone\u{9b}31m\u{202e}repo"),
        "{sent}"
    );
    // A line break in a body cannot forge a log line: every line is an event of ours.
    assert!(text.contains("FORGED line"), "the body is logged: {text}");
    for line in text.lines() {
        assert!(
            !line.starts_with("2026-11-25T18:00:00Z  INFO ctxconsole::live: FORGED"),
            "a body forged a line: {line:?}"
        );
    }
}

#[test]
fn a_bad_level_is_refused_naming_where_it_came_from() {
    let home = tempfile::tempdir().unwrap();
    let out = ctx(home.path())
        .env("CTXCONSOLE_LOG", "loud")
        .args(["budgets", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("CTXCONSOLE_LOG") && err.contains("loud"),
        "{err}"
    );
    let out = ctx(home.path())
        .args(["--log", "chatty", "budgets", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log"));
}

#[test]
fn the_environment_variable_turns_logging_on_and_a_large_log_is_moved_aside() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let big = vec![b'x'; 16 * 1024 * 1024 + 1];
    std::fs::write(log_file(home.path()), &big).unwrap();
    std::fs::set_permissions(
        log_file(home.path()),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let out = ctx(home.path())
        .env("CTXCONSOLE_LOG", "info")
        .args(["budgets", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let log = std::fs::read_to_string(log_file(home.path())).unwrap();
    assert!(log.contains("command=\"budgets\""), "{log}");
    assert!(log.len() < 4096, "the old log was moved aside");
    let old = std::fs::metadata(dir.join("ctxconsole.log.1")).unwrap();
    assert_eq!(old.len(), big.len() as u64);
}

/// A log left readable by others (a logrotate `create 0644`) is made private before any
/// line — with --log-bodies, a prompt — goes into it, and the run says so.
#[test]
fn a_loose_log_is_made_private_before_anything_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let server = LlmServer::start();
    let home = workspace(&server);
    let log = log_holding(home.path(), "", 0o644);
    let out = send(home.path(), "test/ok-json", &["--log-bodies"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("made private"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("answer body")
    );
}

/// Tester 5 C6: with no `x-request-id` header the plan stores the body's `id` as its request
/// id, but the log said `request_id=""`. The log names the id the plan stores, and a call
/// with none says none rather than an empty one.
#[test]
fn the_log_names_the_request_id_the_plan_stores() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/fenced", &["--log", "info"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = sent.to_string();
    assert!(text.contains("cmpl-test"), "the plan's request id: {text}");
    let log = std::fs::read_to_string(log_file(home.path())).unwrap();
    let finished = log
        .lines()
        .find(|l| l.contains("chat completion finished"))
        .unwrap_or_else(|| panic!("no finished line:\n{log}"));
    assert!(finished.contains("request_id=\"cmpl-test\""), "{finished}");
    assert!(!log.contains("request_id=\"\""), "{log}");
}

/// Tester 5 C6: a tool-call answer (no text) logged `answer body body=` with `--log-bodies`;
/// it logs the reply it stored, its tool calls.
#[test]
fn log_bodies_of_a_tool_call_answer_holds_its_calls() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = send(home.path(), "test/tool-calls", &["--log-bodies"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(log_file(home.path())).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("answer body"))
        .unwrap_or_else(|| panic!("no answer body:\n{log}"));
    assert!(line.contains("call_a"), "{line}");
    assert_no_key(&log);
}

/// Tester 12 T12-13: the key itself written as `key_env` (pasted where the variable's name
/// goes) was echoed on stdout, on stderr and into the log by the error naming the variable
/// that is not set. Such a value is refused when the config is read, and not quoted.
#[test]
fn a_key_written_as_key_env_is_refused_and_said_nowhere() {
    let server = LlmServer::start();
    for written in [
        "sk-proj-Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy",
        // A key that is a valid variable name: said by its length only.
        "Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy",
    ] {
        let home = tempfile::tempdir().unwrap();
        let config = server.config(KEY_ENV).replace(KEY_ENV, written);
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let out = ctx(home.path())
            .env(KEY_ENV, KEY)
            .args(["--log", "debug", "send", INSTRUCTION])
            .args(["--model", "test/ok-json", "--json"])
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let log = std::fs::read_to_string(log_file(home.path())).unwrap_or_default();
        assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
        for (what, text) in [("stdout", &*stdout), ("stderr", &*stderr), ("log", &*log)] {
            assert!(!text.contains(written), "{what} holds the key: {text}");
        }
        assert!(
            stderr.contains("field 'providers.test.key_env'")
                && stderr.contains("write the name of the variable holding the key"),
            "{stderr}"
        );
        assert!(
            server.requests.lock().unwrap().is_empty(),
            "nothing is sent"
        );
    }
}

/// Tester 12 T12-6, the log: a prompt holding another configured provider's key was sent as
/// written, with the `--log-bodies` log of the request redacting it as the endpoint's own.
/// Since tester 13 such a request is not sent at all (provider A's key would go to provider
/// B); the log, which says so, holds neither key.
#[test]
fn log_bodies_redact_every_configured_key_in_the_prompt() {
    const OTHER_ENV: &str = "CTXCONSOLE_TEST_OTHER_KEY";
    const OTHER: &str = "sk-or-v1-0123456789abcdefOTHERKEY";
    let server = LlmServer::start();
    let home = workspace(&server);
    let config = home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[providers.other]\nprefix = \"other/\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkey_env = \"{OTHER_ENV}\"\n"
        ),
    )
    .unwrap();
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .env(OTHER_ENV, OTHER)
        .args(["--log-bodies", "send"])
        .arg(format!("deploy with OPENROUTER_API_KEY={OTHER} and {KEY}"))
        .args(["--model", "test/ok-json", "--no-baseline", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.requests.lock().unwrap().is_empty(), "not sent");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("another provider's"), "{stdout}");
    let log = std::fs::read_to_string(log_file(home.path())).unwrap_or_default();
    for text in [&*stdout, &*String::from_utf8_lossy(&out.stderr), &*log] {
        assert_no_key(text);
        assert!(!text.contains(OTHER), "the other key:\n{text}");
    }
}

/// Tester 21 F4: a log that cannot be written (a full disk; here the file-size cap, which
/// fails a write as a full disk does) is said once, naming the file, and the command goes
/// on; the logging library had printed two lines of its own per event, naming nothing.
#[cfg(unix)]
#[test]
fn a_log_that_cannot_be_written_is_said_once() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    common::succeeded(ctx(h).args(["budgets"]));
    let logs = h.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let log = logs.join("ctxconsole.log");
    // At the cap already: every event's write fails.
    std::fs::write(&log, vec![b'.'; 64 * 1024]).unwrap();
    let out = common::ctx_with_files_capped(h, 64)
        .args(["--log", "debug", "budgets"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("tracing-subscriber"), "{said}");
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("cannot write the log"))
        .collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].contains("logs/ctxconsole.log: cannot write the log (")
            && lines[0].ends_with("the rest of this run's log is dropped"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(&log).unwrap().len(),
        64 * 1024,
        "the log is not changed"
    );
}

/// Tester 23 F2: a configured key quoted in an error — an import file holding it in the
/// wrong column (`spend`, `outcome`) — went raw to stderr and into the log's "ended with an
/// error". Every line ctxconsole writes on stderr or into the log passes the configured
/// keys' redactor, whatever made it.
#[test]
fn a_key_quoted_in_an_error_is_redacted_on_stderr_and_in_the_log() {
    const SECRET: &str = "sk-proj-LOGKEY1234567890abcdefABCDEF";
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    let litellm = h.join("spend.jsonl");
    std::fs::write(
        &litellm,
        format!(
            "{{\"request_id\":\"r1\",\"model\":\"m\",\"startTime\":\"2026-10-03T12:00:00\",\"spend\":\"{SECRET}\"}}\n"
        ),
    )
    .unwrap();
    let plans = h.join("plans.jsonl");
    std::fs::write(
        &plans,
        format!(
            "{{\"at\":\"2026-10-03T12:00:00Z\",\"caller\":\"c\",\"model\":\"m\",\"intent\":\"i\",\"steps\":[],\"outcome\":\"{SECRET}\"}}\n"
        ),
    )
    .unwrap();
    let store = h.join("s.sqlite");
    for (kind, file) in [("litellm", &litellm), ("plans", &plans)] {
        let out = ctx(h)
            .env(KEY_ENV, SECRET)
            .args(["--log", "trace", "--store"])
            .arg(&store)
            .args(["import", kind])
            .arg(file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            !stderr.contains("LOGKEY1234"),
            "stderr holds the key: {stderr}"
        );
        assert!(stderr.contains("[REDACTED]"), "{stderr}");
    }
    let log = std::fs::read_to_string(log_file(h)).unwrap();
    assert!(!log.contains("LOGKEY1234"), "the log holds the key:\n{log}");
    let ended: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("ended with an error"))
        .collect();
    assert_eq!(ended.len(), 2, "{log}");
    assert!(ended.iter().all(|l| l.contains("[REDACTED]")), "{log}");
    let dry = common::json_of(
        ctx(h)
            .env(KEY_ENV, SECRET)
            .args(["scrub", "--dry-run", "--json", "--store"])
            .arg(&store),
    );
    assert_eq!(dry["logs"], serde_json::json!([]), "{dry}");
}

/// Tester 29 L2: a write a full disk cut short left the log ending mid-line, and the next
/// run's first event was appended onto it. The next run ends that line first.
#[test]
fn a_log_ending_in_a_cut_line_gets_its_next_event_on_a_line_of_its_own() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let log = log_holding(home.path(), "2026-11-27T10:00:00Z  INFO a cut ev", 0o600);
    let out = send(home.path(), "test/ok-json", &["--log", "info"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("2026-11-27T10:00:00Z  INFO a cut ev"));
    assert!(
        lines.next().is_some_and(|l| l.contains("logging started")),
        "{text}"
    );
}
