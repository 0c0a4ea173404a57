//! `ctxconsole send` against the in-process OpenAI-compatible server: the request the
//! server receives is the one `preview --json` shows, several models run side by side,
//! each stored as a plan, and Ctrl-C cancels what is in flight.

mod common;

use common::llm_server::LlmServer;
use common::{ctx, json_of};
use serde_json::{Value, json};
use std::path::Path;

const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";
const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
const INSTRUCTION: &str =
    "remember this launch note, draft a blog from it and make an illustration";

fn workspace(server: &LlmServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    home
}

fn show(home: &Path, id: &str) -> Value {
    json_of(ctx(home).args(["history", "show", id, "--json"]))
}

#[test]
fn send_sends_exactly_the_previewed_request_to_each_model_and_stores_each_plan() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let notes = home.path().join("notes.md");
    std::fs::write(
        &notes,
        "# Launch\n\nWe ship the planner on Monday.\n- memory\n- blog\n",
    )
    .unwrap();
    let notes = notes.to_str().unwrap();
    let mut previews = Vec::new();
    for model in ["test/ok-json", "test/tool-calls"] {
        previews.push(json_of(ctx(home.path()).args([
            "preview",
            INSTRUCTION,
            "--attach",
            notes,
            "--model",
            model,
            "--json",
        ])));
    }
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        INSTRUCTION,
        "--attach",
        notes,
        "--model",
        "test/ok-json",
        "--model",
        "test/tool-calls",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "one request per model, no filter pass");
    for (preview, upstream) in previews.iter().zip(["ok-json", "tool-calls"]) {
        let body = &received
            .iter()
            .find(|r| r.body["model"] == upstream)
            .unwrap_or_else(|| panic!("nothing received for {upstream}"))
            .body;
        let shown = &preview["request"];
        // Byte for byte: the messages as JSON text, not just equal values.
        assert_eq!(
            body["messages"].to_string(),
            shown["messages"].to_string(),
            "{upstream}"
        );
        assert!(
            body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("We ship the planner on Monday."),
            "the attachment rides along"
        );
        assert_eq!(body["max_tokens"], shown["max_tokens"]);
        match shown["response_format"].as_str() {
            Some(f) => assert_eq!(body["response_format"], json!({ "type": f })),
            None => assert!(body.get("response_format").is_none()),
        }
        assert!(body.get("tools").is_none() && shown.get("tools").is_none());
    }
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(v["caller"], "console");
    for (r, model) in results.iter().zip(["test/ok-json", "test/tool-calls"]) {
        assert_eq!(r["model"], model);
        assert_eq!(r["outcome"], "ok", "{r:#}");
        let id = r["stored_id"].as_str().unwrap();
        let row = show(home.path(), id);
        assert_eq!(row["caller"], "console");
        assert_eq!(row["intent"], INSTRUCTION);
        assert_eq!(row["model"], model);
        assert_eq!(row["outcome"], "ok");
        assert!(row["replay_of"].is_null());
        assert_eq!(row["steps"][0]["tool"], "builtin.remember-and-blog");
    }
    assert_eq!(results[1]["usage"]["cached_tokens"], 512);

    // The table: one column per model.
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args([
            "send",
            INSTRUCTION,
            "--model",
            "test/ok-json",
            "--model",
            "test/hallucinated",
            "--caller",
            "ops",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "test/ok-json",
        "test/hallucinated",
        "valid plan",
        "yes (ok)",
        "yes (guarded)",
        "unknown tools",
        "tokens in/out",
        "cached tokens",
        "latency",
        "cost",
        "stored as",
        "send-",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let plans = json_of(ctx(home.path()).args(["history", "--plans", "--json", "--caller", "ops"]));
    assert_eq!(plans["total"], 2, "{plans:#}");
}

#[test]
fn several_models_run_at_once_but_never_more_than_four() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let mut cmd = ctx(home.path());
    cmd.env(KEY_ENV, KEY).args(["send", INSTRUCTION, "--json"]);
    for n in 1..=6 {
        cmd.args(["--model", &format!("test/slow-{n}")]);
    }
    let v = json_of(&mut cmd);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for (n, r) in results.iter().enumerate() {
        assert_eq!(
            r["model"],
            format!("test/slow-{}", n + 1),
            "in the order asked"
        );
        assert_eq!(r["outcome"], "ok");
    }
    let most = server
        .max_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!((2..=4).contains(&most), "{most} answered at once");
}

#[test]
fn a_model_that_cannot_run_never_stops_the_others_and_the_exit_says_so() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args([
            "send",
            INSTRUCTION,
            "--model",
            "test/server-error",
            "--model",
            "nowhere/model",
            "--model",
            "test/refusal",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 of 3 models could not run"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = v["results"].as_array().unwrap();
    assert_eq!(r[0]["failure"]["class"], "http_error");
    assert!(r[1]["not_sent"].is_string(), "{:#}", r[1]);
    assert!(r[1]["stored_id"].is_null());
    assert_eq!(r[2]["failure"]["class"], "refused");
    assert_eq!(r[2]["ran"], true);
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_the_calls_in_flight() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .env(KEY_ENV, KEY)
        .args(["send", INSTRUCTION, "--model", "test/hang", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the request to reach the server, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "nothing was sent");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "cancelled before the 2 s timeout"
    );
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["cancelled"], true);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cancelled"));
}

/// Issue 18 item 5: sampling set for a model in budgets.toml reaches the request body,
/// shows in the preview, and is stored with the plan; a value out of bounds is refused
/// naming the file and the field.
#[test]
fn sampling_set_for_a_model_reaches_the_request_body_the_preview_and_the_store() {
    let server = LlmServer::start();
    let home = workspace(&server);
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"test/ok-json\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n\
         temperature = 0.2\ntop_p = 0.9\nseed = 7\nstop = [\"\\n\\nUser:\"]\nmax_tokens = 900\n",
    )
    .unwrap();
    let preview = json_of(ctx(home.path()).args([
        "preview",
        INSTRUCTION,
        "--model",
        "test/ok-json",
        "--json",
    ]));
    assert_eq!(
        preview["request"]["sampling"],
        json!({"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\nUser:"]})
    );
    assert_eq!(preview["request"]["max_tokens"], 900);
    let text = ctx(home.path())
        .args(["preview", INSTRUCTION, "--model", "test/ok-json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("sampling: temperature 0.2, top_p 0.9, seed 7"),
        "{text}"
    );
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        INSTRUCTION,
        "--model",
        "test/ok-json",
        "--model",
        "test/ok",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    let body = |m: &str| {
        received
            .iter()
            .find(|r| r.body["model"] == m)
            .unwrap()
            .body
            .clone()
    };
    let tuned = body("ok-json");
    assert_eq!(tuned["temperature"], 0.2);
    assert_eq!(tuned["top_p"], 0.9);
    assert_eq!(tuned["seed"], 7);
    assert_eq!(tuned["stop"], json!(["\n\nUser:"]));
    assert_eq!(tuned["max_tokens"], 900);
    let plain = body("ok");
    for unset in ["temperature", "top_p", "seed", "stop"] {
        assert!(plain.get(unset).is_none(), "{unset} not sent: {plain}");
    }
    let stored = v["results"][0]["stored_id"].as_str().unwrap();
    let sent = &show(home.path(), stored)["answer"]["sent"];
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["seed"], 7);
    assert_eq!(sent["max_tokens"], 900);

    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"test/ok-json\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\ntemperature = nan\n",
    )
    .unwrap();
    let out = ctx(home.path())
        .args(["preview", INSTRUCTION, "--model", "test/ok-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("budgets.toml") && err.contains("model[\"test/ok-json\"].temperature"),
        "{err}"
    );
}
