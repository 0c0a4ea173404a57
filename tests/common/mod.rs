//! What the integration tests share: running the binary on a workspace and reading its JSON.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// The binary with `home` as its workspace (and colour left to the tests).
pub fn ctx(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxconsole"));
    cmd.env("CTXCONSOLE_HOME", home)
        .env_remove("NO_COLOR")
        .env_remove("CTXCONSOLE_LOG")
        .env_remove("CTXCONSOLE_MCP_TOKEN");
    cmd
}

/// As [`ctx`], with every file the run writes capped at `kib` KiB: a shell sets the cap and
/// becomes ctxconsole, SIGXFSZ left at its default (which ends the process), as under a real
/// `ulimit -f` or systemd's `LimitFSIZE`. ctxconsole handles the signal itself, so a write
/// past the cap fails with EFBIG as a write to a full disk fails with ENOSPC (tester 8 F18:
/// the helper used to ignore the signal for it, and a real limit killed `send` after the
/// answer was paid for).
#[cfg(unix)]
pub fn ctx_with_files_capped(home: &Path, kib: u64) -> Command {
    let mut cmd = Command::new("sh");
    cmd.env("CTXCONSOLE_HOME", home)
        .env_remove("NO_COLOR")
        .env_remove("CTXCONSOLE_LOG")
        .arg("-c")
        .arg(format!("ulimit -f {} && exec \"$0\" \"$@\"", kib * 2))
        .arg(env!("CARGO_BIN_EXE_ctxconsole"));
    cmd
}

/// The binary as a user that read-only files bind: root ignores permissions, so as root it
/// runs as `nobody` through setpriv (util-linux).
#[cfg(unix)]
pub fn unprivileged(home: &Path) -> Command {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata(home).unwrap().uid() != 0 {
        return ctx(home);
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home)
        .env_remove("NO_COLOR");
    cmd
}

/// Hold the SQLite file at `path` as another process in exclusive locking mode does
/// (tester 22's holdex2.py): no other connection reads it until the one returned is dropped.
pub fn hold_exclusively(path: &Path) -> rusqlite::Connection {
    let holder = rusqlite::Connection::open(path).unwrap();
    holder
        .execute_batch("PRAGMA locking_mode=exclusive; BEGIN EXCLUSIVE;")
        .unwrap();
    let _: i64 = holder
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    holder
}

/// Run it and expect success (the failure shows its stderr).
pub fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run it, expect success, and parse stdout as JSON.
pub fn json_of(cmd: &mut Command) -> Value {
    serde_json::from_slice(&succeeded(cmd).stdout).unwrap()
}
/// The names in a directory, sorted: what a command left behind.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub mod console;
pub mod llm_server;
pub mod prompts;

/// (plans, executions) in the store of workspace `home`, read through the commands
/// themselves.
pub fn counts(home: &Path) -> (u64, usize) {
    let plans = json_of(ctx(home).args(["history", "--json", "--limit", "0"]))["total"]
        .as_u64()
        .unwrap();
    let out = ctx(home)
        .args(["history", "export", "--executions"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let executions = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    (plans, executions)
}

/// xorshift64*: small, seeded, good enough to spread the fuzz harnesses' mutations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// A workspace whose one provider, `gw/`, reads its key from `key_env` (its endpoint, port
/// 9, is never reached): what a key to keep out of the store and the output is configured by.
pub fn keyed_workspace(key_env: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.gw]\nprefix = \"gw/\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkey_env = \"{key_env}\"\n"
        ),
    )
    .unwrap();
    home
}

/// A tester's three-tool catalog (OpenAI tools), for `eval rank --labels … --catalog …`.
pub const TESTER_CATALOG: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{}}},{"type":"function","function":{"name":"web_search","description":"Search the web.","parameters":{}}},{"type":"function","function":{"name":"book_hotel","description":"Book a hotel room.","parameters":{}}}]"#;

/// `eval rank --labels L --catalog C` in `home`, the two files written there first; a caller
/// adds its flags and runs it.
pub fn eval_labels_command(home: &Path, labels: &str, catalog: &str) -> Command {
    let (l, c) = (home.join("l.jsonl"), home.join("c.json"));
    std::fs::write(&l, labels).unwrap();
    std::fs::write(&c, catalog).unwrap();
    let mut cmd = ctx(home);
    cmd.args(["eval", "rank", "--labels"])
        .arg(&l)
        .arg("--catalog")
        .arg(&c);
    cmd
}

/// The text of every message a `preview --json` (or MCP `preview`) request sends, joined.
pub fn sent_text(preview: &Value) -> String {
    preview["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A LiteLLM spend-log row (request id `many`) whose answer calls `fs.search` `n` times.
pub fn litellm_row_with_calls(n: usize) -> Value {
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("c{i}"), "type": "function",
            "function": {"name": "fs.search", "arguments": "{\"q\": 1}"}})
        })
        .collect();
    serde_json::json!({
        "request_id": "many", "model": "gpt-4o-mini", "startTime": "2026-10-03T12:05:00",
        "messages": [{"role": "user", "content": "search everything"}],
        "response": {"choices": [{"finish_reason": "tool_calls", "message": {"content": null,
            "tool_calls": calls}}]}
    })
}
