//! `ctxconsole scrub` as an operator meets it: a key kept before it was configured (a plan,
//! a briefed paste, a log line) is found by `--dry-run` without a change, then taken out of
//! each; an old key is named with `--env`; what cannot be a key's variable is refused
//! without being shown.

use serde_json::Value;
use std::path::Path;

mod common;
use common::{ctx, json_of, succeeded};

const KEY_ENV: &str = "CTXCONSOLE_SCRUB_TEST_KEY";
const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
const OLD_ENV: &str = "CTXCONSOLE_SCRUB_OLD_KEY";
const OLD: &str = "sk-old-SECRET-7788-rotated-out";

/// Every file of the workspace that ctxconsole keeps, whole, as bytes.
fn kept_bytes(home: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for f in [
        "history.sqlite",
        "history.sqlite-wal",
        "cache.sqlite",
        "cache.sqlite-wal",
        "logs/ctxconsole.log",
        "logs/ctxconsole.log.1",
    ] {
        all.extend(std::fs::read(home.join(f)).unwrap_or_default());
    }
    all
}

fn holds(home: &Path, key: &str) -> bool {
    kept_bytes(home)
        .windows(key.len())
        .any(|w| w == key.as_bytes())
}

/// A workspace whose provider reads its key from `KEY_ENV`, holding `key` (unset when it
/// was kept) in a plan, a briefed paste and a log line.
fn workspace_holding(key: &str) -> tempfile::TempDir {
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    let plan = format!(
        "{{\"id\":\"leaky\",\"at\":\"2026-11-20T10:00:00Z\",\"caller\":\"ops\",\"model\":\"gw/m\",\
         \"intent\":\"call the billing api with {key} and blog the result\",\
         \"steps\":[{{\"order\":1,\"tool\":\"blog.draft\",\"args\":{{\"auth\":\"Bearer {key}\"}}}}]}}\n"
    );
    std::fs::write(h.join("plans.jsonl"), plan).unwrap();
    succeeded(ctx(h).args(["import", "plans"]).arg(h.join("plans.jsonl")));
    let paste: String = (0..60_000)
        .map(|i| format!("2026-11-22T10:00:00Z INFO request {i} ok\n"))
        .chain(std::iter::once(format!("Authorization: Bearer {key}\n")))
        .collect();
    let v: Value = json_of(ctx(h).args(["preview", "-", "--json"]).write_stdin(paste));
    assert_eq!(v["gate"]["admission"], "briefing");
    std::fs::create_dir_all(h.join("logs")).unwrap();
    std::fs::write(
        h.join("logs/ctxconsole.log"),
        format!("2026-11-20T10:00:00Z DEBUG request body: {{\"note\":\"{key}\"}}\n"),
    )
    .unwrap();
    assert!(holds(h, key));
    home
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_dry_run_names_what_holds_the_key_then_scrub_takes_it_out_of_everything_kept() {
    let home = workspace_holding(KEY);
    let h = home.path();
    let before = kept_bytes(h);
    let dry = json_of(
        ctx(h)
            .env(KEY_ENV, KEY)
            .args(["scrub", "--dry-run", "--json"]),
    );
    assert_eq!(dry["plans"], serde_json::json!(["leaky"]), "{dry}");
    assert_eq!(dry["cached_pastes"].as_array().unwrap().len(), 1, "{dry}");
    assert_eq!(dry["logs"].as_array().unwrap().len(), 1, "{dry}");
    assert_eq!(kept_bytes(h), before, "a dry run changes nothing");

    let out = succeeded(ctx(h).env(KEY_ENV, KEY).arg("scrub"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("1 plan in "), "{said}");
    assert!(said.contains("held a key: 'leaky'"), "{said}");
    assert!(
        said.contains("1 cached paste in the output cache held a key"),
        "{said}"
    );
    assert!(said.contains("1 log file held a key"), "{said}");
    assert!(!said.contains(KEY) && !stderr_of(&out).contains(KEY));
    assert!(!holds(h, KEY), "no byte of the key is left in what is kept");

    let plan = json_of(ctx(h).args(["history", "show", "leaky", "--json"]));
    assert_eq!(
        plan["intent"], "call the billing api with [REDACTED] and blog the result",
        "{plan}"
    );
    assert_eq!(plan["steps"][0]["args"]["auth"], "Bearer [REDACTED]");
    let cache_ref = dry["cached_pastes"][0].as_str().unwrap();
    let paste = succeeded(ctx(h).args(["cache", "get", cache_ref]));
    assert!(String::from_utf8_lossy(&paste.stdout).ends_with("Authorization: Bearer [REDACTED]\n"));
    let log = h.join("logs/ctxconsole.log");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "2026-11-20T10:00:00Z DEBUG request body: {\"note\":\"[REDACTED]\"}\n"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Once is enough, and the history still reads whole.
    let again = json_of(ctx(h).env(KEY_ENV, KEY).args(["scrub", "--json"]));
    assert_eq!(again["plans"], serde_json::json!([]), "{again}");
    assert_eq!(again["cached_pastes"], serde_json::json!([]), "{again}");
    let counts = json_of(ctx(h).args(["history", "--plans", "--json", "--limit", "1"]));
    assert!(
        counts.to_string().contains("669"),
        "the sample's 668 and the one imported"
    );
}

#[test]
fn an_old_key_is_named_by_its_variable_and_the_configured_one_is_taken_out_too() {
    let home = workspace_holding(OLD);
    let h = home.path();
    // The config's variable now holds a new key: the old one is not found without --env.
    let without = json_of(
        ctx(h)
            .env(KEY_ENV, KEY)
            .args(["scrub", "--dry-run", "--json"]),
    );
    assert_eq!(without["plans"], serde_json::json!([]), "{without}");
    let with = json_of(
        ctx(h)
            .env(KEY_ENV, KEY)
            .env(OLD_ENV, OLD)
            .args(["scrub", "--env", OLD_ENV, "--json"]),
    );
    assert_eq!(with["plans"], serde_json::json!(["leaky"]), "{with}");
    assert!(!holds(h, OLD));
}

#[test]
fn without_a_key_to_take_out_or_with_a_key_for_a_name_scrub_refuses_and_changes_nothing() {
    let home = workspace_holding(KEY);
    let h = home.path();
    let before = kept_bytes(h);
    let refused = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = ctx(h);
        cmd.env_remove(KEY_ENV).arg("scrub").args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        stderr_of(&out)
    };
    let none = refused(&[], &[]);
    assert!(none.contains("no key to take out"), "{none}");
    assert!(none.contains("config.toml"), "{none}");
    let unset = refused(&["--env", "CTXCONSOLE_SCRUB_UNSET"], &[]);
    assert!(
        unset.contains("--env CTXCONSOLE_SCRUB_UNSET: the variable is not set"),
        "{unset}"
    );
    let hex_key = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4";
    let keyish = refused(&["--env", hex_key], &[]);
    assert!(keyish.contains("looks like a key"), "{keyish}");
    assert!(!keyish.contains(hex_key), "{keyish}");
    assert_eq!(kept_bytes(h), before);
}

/// Tester 14 F4: a damaged output cache stopped the scrub after the history store had been
/// rewritten, and the error said the cache "was left untouched" as if nothing had changed.
/// Each place is scrubbed on its own: what could be is, the report says which were and
/// which could not be, and the run fails naming the one that could not.
#[test]
fn a_damaged_cache_does_not_stop_the_rest_and_the_report_says_what_was_scrubbed() {
    let home = workspace_holding(KEY);
    let h = home.path();
    let cache = h.join("cache.sqlite");
    let len = std::fs::metadata(&cache).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&cache)
        .unwrap();
    f.set_len(len / 3).unwrap();
    drop(f);
    let damaged = std::fs::read(&cache).unwrap();
    // A dry run says what the history and the logs hold, and that the cache cannot be read.
    let dry = ctx(h)
        .env(KEY_ENV, KEY)
        .args(["scrub", "--dry-run"])
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&dry.stdout), stderr_of(&dry));
    assert_eq!(dry.status.code(), Some(2), "{out}\n{err}");
    assert!(out.contains("1 plan in "), "{out}");
    // The verb agrees with the count (tester 48 nit: "1 plan in … hold a key").
    assert!(out.contains("history.sqlite holds a key: 'leaky'"), "{out}");
    assert!(out.contains("0 executions in "), "{out}");
    assert!(out.contains("history.sqlite hold a key\n"), "{out}");
    assert!(out.contains("1 log file holds a key"), "{out}");
    assert!(out.contains("the output cache: not read"), "{out}");
    assert!(
        err.contains("scrub incomplete: the output cache was not read")
            && err.contains("cache.sqlite"),
        "{err}"
    );
    let scrub = ctx(h).env(KEY_ENV, KEY).arg("scrub").output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&scrub.stdout), stderr_of(&scrub));
    assert_eq!(scrub.status.code(), Some(2), "{out}\n{err}");
    assert!(out.contains("1 plan in "), "{out}");
    assert!(out.contains("1 log file held a key"), "{out}");
    assert!(out.contains("the output cache: not scrubbed"), "{out}");
    assert!(!err.contains("left untouched: nothing"), "{err}");
    // The history and the log no longer hold the key; the damaged cache is as it was.
    let history_and_log: Vec<u8> = [
        "history.sqlite",
        "history.sqlite-wal",
        "logs/ctxconsole.log",
    ]
    .iter()
    .flat_map(|f| std::fs::read(h.join(f)).unwrap_or_default())
    .collect();
    assert!(
        !history_and_log
            .windows(KEY.len())
            .any(|w| w == KEY.as_bytes())
    );
    assert_eq!(std::fs::read(&cache).unwrap(), damaged);
    let json = ctx(h)
        .env(KEY_ENV, KEY)
        .args(["scrub", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["cached_pastes"], Value::Null, "{v}");
    assert_eq!(v["not_scrubbed"][0]["place"], "the output cache", "{v}");
    assert!(
        v["not_scrubbed"][0]["error"]
            .as_str()
            .unwrap()
            .contains("cache.sqlite")
    );
    assert_eq!(v["plans"], serde_json::json!([]), "{v}");
}

/// Review 50 L1: a log whose lock another process holds (a scrub stopped with ctrl+z) made
/// the next scrub wait forever with nothing on screen. It waits as a writer does, then names
/// the file, leaves it as it was and scrubs the rest.
#[test]
fn a_log_locked_by_another_process_is_named_and_the_rest_is_scrubbed() {
    let home = workspace_holding(KEY);
    let h = home.path();
    let log = h.join("logs/ctxconsole.log");
    let before = std::fs::read(&log).unwrap();
    let held = std::fs::File::open(&log).unwrap();
    held.lock().unwrap();
    let scrub = ctx(h).env(KEY_ENV, KEY).arg("scrub").output().unwrap();
    drop(held);
    let (out, err) = (String::from_utf8_lossy(&scrub.stdout), stderr_of(&scrub));
    assert_eq!(scrub.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("locked by another process"), "{err}");
    assert!(err.contains("ctxconsole.log"), "{err}");
    assert!(out.contains("1 plan in "), "{out}");
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

/// Tester 15 F2: a key in an execution (its id, caller, session, tool) or in a plan's id,
/// caller or model was kept by `import executions` and `import plans` even with the key
/// configured, and `scrub --dry-run` said "nothing to take out". Imported with the key
/// configured, none of it is kept; kept before, the scrub finds each row, names it as it is
/// kept (never with the key), and takes it out, the execution still counting for its plan.
#[test]
fn a_key_in_executions_and_in_a_plans_caller_model_or_id_is_kept_out_and_scrubbed() {
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    let plans = h.join("plans.jsonl");
    std::fs::write(
        &plans,
        format!(
            "{{\"id\":\"p-{KEY}\",\"at\":\"2026-11-20T10:00:00Z\",\"caller\":\"u-{KEY}\",\
             \"model\":\"gw/{KEY}\",\"intent\":\"remember the launch note and blog it\",\
             \"steps\":[{{\"order\":1,\"tool\":\"blog.draft\"}}]}}\n"
        ),
    )
    .unwrap();
    let execs = h.join("executions.jsonl");
    std::fs::write(
        &execs,
        format!(
            "{{\"id\":\"ex-{KEY}\",\"at\":\"2026-11-20T10:01:00Z\",\"caller\":\"u-{KEY}\",\
             \"session\":\"sess-{KEY}\",\"plan_id\":\"p-{KEY}\",\"tool\":\"blog.draft\",\"ok\":true}}\n\
             {{\"at\":\"2026-11-20T10:02:00Z\",\"caller\":\"x-{KEY}\",\"tool\":\"tool-{KEY}\",\"ok\":true}}\n"
        ),
    )
    .unwrap();
    let import = |key: Option<&str>| {
        for (kind, file) in [("plans", &plans), ("executions", &execs)] {
            let mut cmd = ctx(h);
            match key {
                Some(k) => cmd.env(KEY_ENV, k),
                None => cmd.env_remove(KEY_ENV),
            };
            succeeded(cmd.args(["import", kind]).arg(file));
        }
    };
    let exported = || {
        let p = succeeded(ctx(h).args(["history", "export"]));
        let e = succeeded(ctx(h).args(["history", "export", "--executions"]));
        format!(
            "{}{}",
            String::from_utf8_lossy(&p.stdout),
            String::from_utf8_lossy(&e.stdout)
        )
    };

    // Kept before the key was configured.
    import(None);
    assert!(holds(h, KEY));
    let dry = json_of(
        ctx(h)
            .env(KEY_ENV, KEY)
            .args(["scrub", "--dry-run", "--json"]),
    );
    assert!(!dry.to_string().contains(KEY), "{dry}");
    let plans_held = dry["plans"].as_array().unwrap();
    assert_eq!(plans_held.len(), 1, "{dry}");
    let id = plans_held[0].as_str().unwrap();
    assert!(id.starts_with("p-[REDACTED]~"), "{dry}");
    assert_eq!(dry["executions"].as_array().unwrap().len(), 2, "{dry}");
    let said = succeeded(ctx(h).env(KEY_ENV, KEY).args(["scrub", "--dry-run"]));
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("2 executions in "), "{said}");
    assert!(
        !said.contains("nothing to take out") && !said.contains(KEY),
        "{said}"
    );
    assert!(holds(h, KEY), "a dry run changes nothing");

    let out = succeeded(ctx(h).env(KEY_ENV, KEY).arg("scrub"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("2 executions in ") && said.contains("held a key"),
        "{said}"
    );
    assert!(
        !said.contains(KEY) && !stderr_of(&out).contains(KEY),
        "{said}"
    );
    assert!(!holds(h, KEY), "no byte of the key is left in what is kept");
    let scrubbed = exported();
    assert!(
        scrubbed.contains("\"caller\":\"u-[REDACTED]\""),
        "{scrubbed}"
    );
    assert!(
        scrubbed.contains("\"model\":\"gw/[REDACTED]\""),
        "{scrubbed}"
    );
    // The execution still counts for its plan, under the id as kept.
    let plan = json_of(ctx(h).args(["history", "show", id, "--json"]));
    assert_eq!(
        plan["executed"],
        serde_json::json!(["blog.draft"]),
        "{plan}"
    );
    let again = json_of(ctx(h).env(KEY_ENV, KEY).args(["scrub", "--json"]));
    assert_eq!(again["plans"], serde_json::json!([]), "{again}");
    assert_eq!(again["executions"], serde_json::json!([]), "{again}");

    // Imported again with the key configured: already there, as scrubbed; nothing added.
    import(Some(KEY));
    assert_eq!(exported(), scrubbed);
    assert!(!holds(h, KEY));
}

/// Tester 21 F1: a keyless local server's stand-in key (`ollama`, `x`) is no secret. Taken
/// for one, it was cut out of every model id and word kept (`[REDACTED]/llama3.2:3b`,
/// `e[REDACTED]plain`), the plan then replayed to another provider, and `scrub` rewrote the
/// whole history for good.
#[test]
fn a_placeholder_key_is_neither_redacted_nor_scrubbed() {
    for stand_in in ["ollama", "x"] {
        let home = common::keyed_workspace(KEY_ENV);
        let h = home.path();
        let plan = "{\"id\":\"local\",\"at\":\"2026-11-20T10:00:00Z\",\"caller\":\"ops\",\
                    \"model\":\"ollama/llama3.2:3b\",\
                    \"intent\":\"remember the ollama setup notes and explain the next example\",\
                    \"steps\":[{\"order\":1,\"tool\":\"memory.save\",\"args\":{}}]}\n";
        std::fs::write(h.join("plans.jsonl"), plan).unwrap();
        succeeded(
            ctx(h)
                .env(KEY_ENV, stand_in)
                .args(["import", "plans"])
                .arg(h.join("plans.jsonl")),
        );
        let shown = json_of(
            ctx(h)
                .env(KEY_ENV, stand_in)
                .args(["history", "show", "local", "--json"]),
        );
        assert_eq!(shown["model"], "ollama/llama3.2:3b", "{stand_in}: {shown}");
        assert_eq!(
            shown["intent"], "remember the ollama setup notes and explain the next example",
            "{stand_in}"
        );
        let before = kept_bytes(h);
        let out = ctx(h)
            .env(KEY_ENV, stand_in)
            .args(["scrub", "--dry-run"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{stand_in}");
        let said = stderr_of(&out);
        assert!(
            said.contains(&format!(
                "no key to take out: ${KEY_ENV} holds a placeholder"
            )),
            "{said}"
        );
        assert!(
            !said.contains(&format!("'{stand_in}'")),
            "the value is not echoed: {said}"
        );
        assert_eq!(kept_bytes(h), before, "nothing kept changed");
    }
    // Beside a real key, a placeholder named with --env is refused, and one a provider's
    // variable holds is said to be left.
    let home = workspace_holding(KEY);
    let h = home.path();
    let out = ctx(h)
        .env(KEY_ENV, KEY)
        .env(OLD_ENV, "EMPTY")
        .args(["scrub", "--dry-run", "--env", OLD_ENV])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains(&format!("--env {OLD_ENV}: the value is a placeholder")));
}

/// `ctxconsole --log debug mcp` on `home` (stdio), its key variable unset: a process that
/// keeps the log open while another scrubs it.
struct LoggingServer {
    child: std::process::Child,
    answers: std::io::BufReader<std::process::ChildStdout>,
}

impl LoggingServer {
    fn start(home: &Path) -> LoggingServer {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
            .env("CTXCONSOLE_HOME", home)
            .env_remove("CTXCONSOLE_LOG")
            .env_remove("CTXCONSOLE_MCP_TOKEN")
            .env_remove(KEY_ENV)
            .args(["--log", "debug", "mcp"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let answers = std::io::BufReader::new(child.stdout.take().unwrap());
        LoggingServer { child, answers }
    }

    /// Send one JSON-RPC message; with an id, read its answer.
    fn send(&mut self, message: Value) {
        use std::io::{BufRead, Write};
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_some() {
            let mut line = String::new();
            self.answers.read_line(&mut line).unwrap();
            assert!(line.contains("\"jsonrpc\""), "{line}");
        }
    }

    /// Close its input and wait for it to end (it logs its shutdown).
    fn finish(mut self) {
        drop(self.child.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

/// The log at `log` once it holds `text` (a server logs a message after answering it).
fn log_holding(log: &Path, text: &str) -> Vec<u8> {
    let started = std::time::Instant::now();
    loop {
        let bytes = std::fs::read(log).unwrap();
        if bytes.windows(text.len()).any(|w| w == text.as_bytes()) {
            return bytes;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{text} not in the log: {}",
            String::from_utf8_lossy(&bytes)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Tester 50 F1: `scrub` renames a rewritten log over the path while a process that logs
/// (`mcp --log`, the console) has it open. What that process logs afterwards, its shutdown
/// included, goes to the file at the path, not to the replaced one; and the rewrite keeps
/// a byte that is not UTF-8 as it was (it became U+FFFD).
#[test]
fn a_running_process_logs_on_into_the_scrubbed_log_and_stray_bytes_are_kept() {
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    std::fs::create_dir_all(h.join("logs")).unwrap();
    let log = h.join("logs/ctxconsole.log");
    let mut before =
        format!("2026-11-20T10:00:00Z DEBUG request body: {{\"note\":\"{KEY}\"}}\n").into_bytes();
    before.extend_from_slice(b"2026-11-20T10:00:01Z WARN a line cut short \xe2\x82\n");
    std::fs::write(&log, &before).unwrap();

    let mut server = LoggingServer::start(h);
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "client-before-scrub", "version": "1"}}});
    server.send(init);
    server.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    log_holding(&log, "client-before-scrub");

    let out = succeeded(ctx(h).env(KEY_ENV, KEY).arg("scrub"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 log file held a key"), "{said}");

    server.send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
        "params": {"uri": "ctxconsole://read-after-scrub"}}),
    );
    log_holding(&log, "read-after-scrub");
    server.finish();

    let kept = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&kept);
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains("\"note\":\"[REDACTED]\""), "{text}");
    assert!(text.contains("client-before-scrub"), "{text}");
    assert!(text.contains("read-after-scrub"), "{text}");
    assert!(
        text.contains("serve finished"),
        "its shutdown is logged too: {text}"
    );
    assert!(
        kept.windows(5).any(|w| w == b"t \xe2\x82\n"),
        "the cut character's bytes are kept as they were: {text}"
    );
    assert!(
        !kept.windows(3).any(|w| w == "\u{fffd}".as_bytes()),
        "no U+FFFD was written: {text}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// Tester 50 F16: the files of answers a store write refused (`unstored-plans-*.jsonl`) hold
/// whole plan lines; scrub names and rewrites them as it does the logs (0600), and the plan
/// lines still import.
#[test]
fn unstored_plan_files_are_scrubbed_and_named_and_still_import() {
    use std::os::unix::fs::PermissionsExt;
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    let file = h.join("unstored-plans-20261126T061500Z.jsonl");
    let plan = format!(
        "{{\"id\":\"unstored-1\",\"at\":\"2026-11-26T06:15:00Z\",\"caller\":\"console\",\
         \"model\":\"gw/m\",\"intent\":\"summarise the log holding {KEY}\",\
         \"steps\":[{{\"order\":1,\"tool\":\"blog.draft\",\"args\":{{\"auth\":\"Bearer {KEY}\"}}}}]}}\n"
    );
    std::fs::write(&file, &plan).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A file of another name is none of scrub's.
    let other = h.join("notes.jsonl");
    std::fs::write(&other, &plan).unwrap();

    let dry = json_of(
        ctx(h)
            .env(KEY_ENV, KEY)
            .args(["scrub", "--dry-run", "--json"]),
    );
    let named = dry["unstored_plans"].as_array().unwrap();
    assert_eq!(named.len(), 1, "{dry}");
    assert!(
        named[0]
            .as_str()
            .unwrap()
            .ends_with("unstored-plans-20261126T061500Z.jsonl"),
        "{dry}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), plan);

    let out = succeeded(ctx(h).env(KEY_ENV, KEY).arg("scrub"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("1 unstored plan file held a key: '")
            && said.contains("unstored-plans-20261126T061500Z.jsonl'"),
        "{said}"
    );
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(!kept.contains(KEY), "{kept}");
    assert!(kept.contains("Bearer [REDACTED]"), "{kept}");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&other).unwrap(), plan);
    succeeded(ctx(h).args(["import", "plans"]).arg(&file));
    let shown = json_of(ctx(h).args(["history", "show", "unstored-1", "--json"]));
    assert_eq!(
        shown["intent"], "summarise the log holding [REDACTED]",
        "{shown}"
    );
}
