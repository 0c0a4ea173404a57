//! `ctxconsole replay` against a real OpenAI-compatible server on 127.0.0.1: every failure
//! scenario ends classified, the replay rows link to the original (which does not change),
//! and the key appears in nothing written.

mod common;

use common::llm_server::{LlmServer, SCENARIOS};
use common::{ctx, json_of};
use serde_json::Value;
use std::path::Path;

const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";
const KEY: &str = "sk-test-SECRET-0451-do-not-leak";

fn workspace(server: &LlmServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    home
}

/// The first failed plan of the sample history.
fn a_failed_plan(home: &Path) -> String {
    let v = json_of(ctx(home).args(["replay", "--failed", "--offline", "--json"]));
    v["plans"][0]["plan_id"].as_str().unwrap().to_string()
}

fn show(home: &Path, id: &str) -> Value {
    json_of(ctx(home).args(["history", "show", id, "--json"]))
}

fn files_contain(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                hits.push(path.display().to_string());
            }
        } else if path.is_dir() {
            hits.extend(files_contain(&path, needle));
        }
    }
    hits
}

#[test]
fn every_scenario_ends_classified_stored_and_linked_and_the_key_is_written_nowhere() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let before = show(home.path(), &id);

    let mut cmd = ctx(home.path());
    cmd.env(KEY_ENV, KEY).args(["replay", &id, "--json"]);
    for (scenario, _) in SCENARIOS {
        cmd.args(["--model", &format!("test/{scenario}")]);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // Four endpoints gave no answer (a 500, an HTML page, a cut stream, a hang): exit 1,
    // the JSON complete all the same.
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("4 of 18 replays could not run"),
        "stderr: {stderr}"
    );
    for s in ["server-error", "not-json", "stream-cut", "hang"] {
        assert!(stderr.contains(&format!("test/{s}")), "{s}: {stderr}");
    }
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["original"]["id"], id.as_str());
    let replays = v["replays"].as_array().unwrap();
    assert_eq!(replays.len(), SCENARIOS.len());

    for ((scenario, expected), r) in SCENARIOS.iter().zip(replays) {
        assert_eq!(r["model"], format!("test/{scenario}"));
        let answered = !["server-error", "not-json", "stream-cut", "hang"].contains(scenario);
        assert_eq!(r["ran"], answered, "{scenario}");
        let got = r["failure"]["class"]
            .as_str()
            .unwrap_or_else(|| r["outcome"].as_str().unwrap());
        assert_eq!(got, *expected, "{scenario}: {r:#}");
        let stored = r["stored_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{scenario} not stored"));
        let row = show(home.path(), stored);
        assert_eq!(row["replay_of"], id.as_str(), "{scenario}");
        assert_eq!(row["drift"], "replay");
        assert_eq!(row["model"], format!("test/{scenario}"));
        let outcome = row["outcome"].as_str().unwrap();
        if *expected == "ok" || *expected == "guarded" {
            assert_eq!(outcome, *expected, "{scenario}");
            assert!(
                r["stage"].is_string(),
                "{scenario}: a recovered plan names its stage"
            );
        } else {
            assert_eq!(outcome, "failed");
            assert_eq!(row["failure_class"], *expected, "{scenario}");
            assert!(r["failure"]["action"].as_str().unwrap().len() > 20);
        }
    }
    let by = |s: &str| &replays[SCENARIOS.iter().position(|(n, _)| *n == s).unwrap()];
    assert_eq!(by("prose-after")["stage"], "trailing_prose");
    assert_eq!(by("fenced")["stage"], "fence");
    assert_eq!(by("ok")["finish"]["raw"], "stop");
    assert!(by("ok")["reasoning_bytes"].as_u64().unwrap() > 0);
    assert!(by("rate-limited")["attempts"].as_u64().unwrap() >= 2);
    assert_eq!(by("server-error")["status"], 500);
    assert_eq!(
        by("server-error")["attempts"],
        3,
        "two retries after the first 500"
    );
    let hallucinated = &by("hallucinated")["plan"];
    assert_eq!(hallucinated["steps"][0]["tool"], "unknown");
    assert!(
        hallucinated["steps"][0]["rationale"]
            .as_str()
            .unwrap()
            .starts_with("gap:")
    );
    assert!(
        by("hang")["failure"]["detail"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );

    // The original is exactly as it was, and now lists its replays, newest first.
    let mut after = show(home.path(), &id);
    let listed = after
        .as_object_mut()
        .unwrap()
        .insert("replays".into(), Value::Array(vec![]))
        .unwrap();
    assert_eq!(after, before);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), SCENARIOS.len());
    for r in replays {
        let stored = r["stored_id"].as_str().unwrap();
        let row = listed.iter().find(|l| l["id"] == stored).unwrap();
        assert_eq!(row["model"], r["model"]);
    }
    let text = ctx(home.path())
        .args(["history", "show", &id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("replays ({}, newest first)", SCENARIOS.len())),
        "{text}"
    );
    assert!(text.contains("test/server-error"), "{text}");
    let replay_text = ctx(home.path())
        .args(["history", "show", &format!("{id}.r1")])
        .output()
        .unwrap();
    let replay_text = String::from_utf8_lossy(&replay_text.stdout);
    assert!(
        replay_text.contains(&format!("replay of {id}")),
        "{replay_text}"
    );
    // The key reached the server, and nothing written.
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests.len() >= SCENARIOS.len());
    let bearer = format!("Bearer {KEY}");
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some(bearer.as_str()))
    );
    assert_eq!(files_contain(home.path(), KEY), Vec::<String>::new());
    // The replays do not count as production evidence: a model seen only in replays has
    // replays and no plans, and the original's model keeps its counts.
    let models = json_of(ctx(home.path()).args(["history", "--models", "--json"]));
    let row = |m: &str| {
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == m)
            .cloned()
            .unwrap_or_else(|| panic!("no row for {m}: {models:#}"))
    };
    assert_eq!(row("test/ok")["plans"], 0);
    assert_eq!(row("test/ok")["replays"], 1);
}

/// Issue 18: a refusal field is `refused`, live and again offline from the stored row; a
/// provider's filter stays `safety_filtered`; prose with a bash fence is `no_plan`.
#[test]
fn refusals_filters_and_shell_fences_keep_their_class_live_and_offline() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let cases = [
        ("refusal", "refused"),
        ("prose-refusal", "refused"),
        ("content-filter", "safety_filtered"),
        ("bash-fence", "no_plan"),
    ];
    let mut cmd = ctx(home.path());
    cmd.env(KEY_ENV, KEY).args(["replay", &id, "--json"]);
    for (scenario, _) in cases {
        cmd.args(["--model", &format!("test/{scenario}")]);
    }
    let v = json_of(&mut cmd);
    for ((scenario, class), r) in cases.iter().zip(v["replays"].as_array().unwrap()) {
        assert_eq!(r["failure"]["class"], *class, "{scenario} live: {r:#}");
        let stored = r["stored_id"].as_str().unwrap();
        assert_eq!(show(home.path(), stored)["failure_class"], *class);
        let offline = json_of(ctx(home.path()).args(["replay", stored, "--offline", "--json"]));
        assert_eq!(
            offline["offline"]["failure"]["class"], *class,
            "{scenario}: offline replay of the stored answer agrees: {offline:#}"
        );
        assert!(offline["offline"]["class_note"].is_null(), "{offline:#}");
    }
}

/// Issue 18: a plan that comes as native tool calls (whole, or streamed in deltas) is
/// decoded, guarded and stored with those steps; the whole answer is kept (tool calls with
/// ids in order, usage with cached and reasoning tokens, request id, status, what was sent)
/// and offline replay of the stored row gives the same result.
#[test]
fn tool_call_answers_become_plans_and_the_whole_answer_is_stored() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "replay",
        &id,
        "--model",
        "test/tool-calls",
        "--model",
        "test/tool-calls-stream",
        "--json",
    ]));
    let replays = v["replays"].as_array().unwrap();
    for (r, request_id, prompt, cached) in [
        (&replays[0], "req-tools-0001", 812, 512),
        (&replays[1], "chatcmpl-stream-7", 800, 256),
    ] {
        assert_eq!(r["outcome"], "ok", "{r:#}");
        assert_eq!(r["from_tool_calls"], true);
        let tools: Vec<&str> = r["plan"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tool"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["builtin.remember-and-blog", "image.generate"]);
        assert_eq!(r["usage"]["prompt_tokens"], prompt);
        assert_eq!(r["usage"]["cached_tokens"], cached);
        assert_eq!(r["request_id"], request_id);
        let stored = r["stored_id"].as_str().unwrap();
        let row = show(home.path(), stored);
        assert_eq!(row["outcome"], "ok");
        assert_eq!(row["steps"][1]["tool"], "image.generate");
        assert_eq!(row["steps"][0]["args"]["input"], "launch note");
        let answer = &row["answer"];
        let calls = answer["reply"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{answer:#}");
        assert_eq!(calls[0]["name"], "builtin.remember-and-blog");
        assert_eq!(calls[0]["arguments"], "{\"input\": \"launch note\"}");
        assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(answer["reply"]["finish_reason"], "tool_calls");
        assert_eq!(answer["finish"], "tool_calls");
        assert_eq!(answer["status"], 200);
        assert_eq!(answer["request_id"], request_id);
        assert_eq!(
            answer["sent"]["model"],
            r["model"].as_str().unwrap().trim_start_matches("test/")
        );
        assert!(answer["sent"]["max_tokens"].as_u64().unwrap() > 0);
        let offline = json_of(ctx(home.path()).args(["replay", stored, "--offline", "--json"]));
        assert_eq!(offline["offline"]["verdict"], "recovered", "{offline:#}");
        assert_eq!(
            offline["offline"]["plan"]["steps"][1]["tool"],
            "image.generate"
        );
    }
    assert_eq!(replays[0]["usage"]["reasoning_tokens"], 7);
    // The streamed request asked for usage in its last event.
    let bodies = server.requests.lock().unwrap().clone();
    let streamed = bodies
        .iter()
        .find(|r| r.body["model"] == "tool-calls-stream")
        .unwrap();
    assert_eq!(streamed.body["stream_options"]["include_usage"], true);
}

#[test]
fn a_replay_shows_the_answer_decoded_and_guarded_beside_the_original() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args([
            "replay",
            &id,
            "--model",
            "test/hallucinated",
            "--model",
            "test/fenced",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("original {id}")), "{text}");
    assert!(text.contains("replay on test/hallucinated"), "{text}");
    assert!(text.contains("replay on test/fenced"), "{text}");
    assert!(text.contains("guarded"), "{text}");
    assert!(
        text.contains("step 1 demoted: gap: the model named 'blog.write'"),
        "{text}"
    );
    assert!(
        text.contains(
            "Run builtin.remember-and-blog with input=\"launch note\", then run image.generate"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("{id}.r1")) && text.contains(&format!("{id}.r2")),
        "{text}"
    );

    // Tester 15 F9: replaying a plan sent from here, its column showed `-` for how it was
    // decoded, its request and its time, though the store keeps them.
    let again = format!("{id}.r2");
    let stored = show(home.path(), &again);
    let kept = &stored["trim_record"]["replay"];
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args(["replay", &again, "--model", "test/ok-json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let original_cell = |label: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row: {text}"));
        line[label.len()..]
            .trim_start()
            .split("  ")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        original_cell("decoded by"),
        kept["stage"].as_str().unwrap(),
        "{text}"
    );
    assert_eq!(
        original_cell("request"),
        format!(
            "{} tok in, {} entries, max {}",
            kept["input_tokens"], kept["catalog_entries"], kept["max_tokens"]
        ),
        "{text}"
    );
    assert_eq!(
        original_cell("time"),
        format!(
            "{} ms, {} attempt(s)",
            stored["duration_ms"], kept["attempts"]
        ),
        "{text}"
    );
}

#[test]
fn a_missing_key_variable_is_named_and_nothing_is_stored() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let count = |h: &Path| {
        json_of(ctx(h).args(["history", "--plans", "--json", "--limit", "1"]))["total"].clone()
    };
    let before = count(home.path());
    let out = ctx(home.path())
        .env_remove(KEY_ENV)
        .args(["replay", &id, "--model", "test/ok"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a replay that could not run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("$CTXCONSOLE_TEST_KEY"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("replay on test/ok"),
        "the table is printed: {text}"
    );
    assert_eq!(count(home.path()), before);
    assert!(
        server.requests.lock().unwrap().is_empty(),
        "nothing is sent without a key"
    );

    let out = ctx(home.path())
        .args(["replay", "pl-nope", "--offline"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no plan 'pl-nope'"));
}

#[test]
fn offline_replay_of_every_failed_plan_sums_up_per_class_with_the_stage() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args(["replay", "--failed", "--offline", "--json"]));
    let summary = v["summary"].as_array().unwrap();
    let classes: Vec<&str> = summary
        .iter()
        .map(|s| s["class"].as_str().unwrap())
        .collect();
    for c in [
        "safety_filtered",
        "length_truncated",
        "constrained_deadlock",
        "likely_timeout",
        "reasoning_only",
        "http_error",
        "transport",
        "protocol",
    ] {
        assert!(classes.contains(&c), "{c} missing from {classes:?}");
    }
    let recovered: u64 = summary
        .iter()
        .map(|s| s["recovered"].as_u64().unwrap())
        .sum();
    assert_eq!(v["totals"]["recovered"].as_u64().unwrap(), recovered);
    assert!(recovered > 0);
    for p in v["plans"].as_array().unwrap() {
        if p["verdict"] == "recovered" {
            assert!(p["stage"].is_string(), "{p}");
            assert!(
                p["plan"]["rewritten_prompt"]
                    .as_str()
                    .unwrap()
                    .starts_with("Run ")
            );
        } else {
            assert!(p["failure"]["class"].is_string(), "{p}");
        }
    }
    // Offline replays store nothing.
    let plans = json_of(ctx(home.path()).args(["history", "--plans", "--json", "--limit", "1"]));
    assert_eq!(plans["total"], 668);
}

#[test]
fn low_confidence_escalates_to_the_two_pass_filter_and_a_failed_pass_one_leaves_the_lexical_cut() {
    let server = LlmServer::start();
    let home = workspace(&server);
    // A sample intent the ranker is unsure of (confidence under the escalation threshold),
    // with the history prior and the learned words of the sample history.
    let id = "pl-0666";
    let preview = json_of(ctx(home.path()).args([
        "preview",
        show(home.path(), id)["intent"].as_str().unwrap(),
        "--model",
        "test/ok",
        "--json",
    ]));
    assert_eq!(
        preview["ranking"]["escalate"], true,
        "{:#}",
        preview["ranking"]
    );
    // The same replay, in JSON and on the screen.
    let replay = [
        "replay",
        id,
        "--model",
        "test/ok-json",
        "--model",
        "test/filter-garbage",
    ];
    let v = json_of(
        ctx(home.path())
            .env(KEY_ENV, KEY)
            .args(replay)
            .arg("--json"),
    );
    let picked = &v["replays"][0];
    assert_eq!(picked["outcome"], "ok", "{picked:#}");
    let two = &picked["two_pass"];
    // The server names three ids; only those the planner offered for this intent count.
    let n = two["picked"].as_array().unwrap().len();
    assert!((1..=3).contains(&n), "{two:#}");
    assert!(two["kept"].as_u64().unwrap() <= n as u64);
    assert!(two["offered"].as_u64().unwrap() > 3);
    assert_eq!(picked["request"]["catalog_entries"], two["kept"]);
    assert!(
        two["note"]
            .as_str()
            .unwrap()
            .starts_with(&format!("pass 1 picked {n} of"))
    );

    let fallback = &v["replays"][1];
    assert_eq!(
        fallback["outcome"], "ok",
        "pass 2 still plans: {fallback:#}"
    );
    let two = &fallback["two_pass"];
    assert_eq!(two["failure"]["class"], "no_plan", "{two:#}");
    assert!(
        two["note"]
            .as_str()
            .unwrap()
            .contains("the lexical selection stands")
    );
    assert!(fallback["request"]["catalog_entries"].as_u64().unwrap() > 3);
    // The stored record says so too.
    let stored = show(home.path(), fallback["stored_id"].as_str().unwrap());
    assert!(
        stored["trim_record"]["replay"]["two_pass"]["note"]
            .as_str()
            .unwrap()
            .contains("lexical selection stands")
    );
    // Pass 1 went out as `id — first sentence` lines asking for ids.
    let requests = server.requests.lock().unwrap().clone();
    let pass1 = requests
        .iter()
        .find(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .contains("Pick the ids")
        })
        .expect("a pass-1 request");
    assert!(
        pass1.body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(" — ")
    );
    // On the screen each pass is whole in its cell and its note a line under the table
    // (tester 32 F8: the note in the cell was cut in the middle, `pass 1 failed (cons…`).
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args(replay)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("two-pass"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(&format!("pass 1 picked {n} of"))
            && row.contains("pass 1 failed (no_plan)")
            && !row.contains('…'),
        "{row}"
    );
    assert!(
        text.contains("two-pass: pass 1 failed (no_plan): the lexical selection stands"),
        "{text}"
    );
}

/// Exit code, stdout and stderr of a run.
fn run(cmd: &mut assert_cmd::Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The first piece of the key of 12 bytes or more found in `text` (the redaction rule:
/// shorter pieces are not the key).
fn leaked(text: &[u8]) -> Option<String> {
    KEY.as_bytes()
        .windows(12)
        .find(|k| text.windows(12).any(|t| t == *k))
        .map(|k| String::from_utf8_lossy(k).into_owned())
}

/// Files under `dir` holding a 12-byte piece of the key.
fn files_leaking(dir: &Path) -> Vec<String> {
    KEY.as_bytes()
        .windows(12)
        .flat_map(|k| files_contain(dir, std::str::from_utf8(k).unwrap()))
        .collect()
}

/// Every way an endpoint echoes the Authorization header back (tests/common/llm_server.rs).
const ECHOES: [&str; 9] = [
    "echo-401",
    "echo-tools",
    "echo-200",
    "echo-html",
    "echo-escaped",
    "echo-truncated",
    "echo-stream",
    "echo-stream-error",
    "echo-stream-edges",
];

#[test]
fn a_key_echoed_back_is_redacted_from_everything_shown_and_stored() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    let mut replays = Vec::new();
    for json in [true, false] {
        let mut cmd = ctx(home.path());
        cmd.env(KEY_ENV, KEY).args(["replay", &id]);
        if json {
            cmd.arg("--json");
        }
        for e in ECHOES {
            cmd.args(["--model", &format!("test/{e}")]);
        }
        let (code, stdout, stderr) = run(&mut cmd);
        assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
        assert_eq!(leaked(stdout.as_bytes()), None, "stdout: {stdout}");
        assert_eq!(leaked(stderr.as_bytes()), None, "stderr: {stderr}");
        assert!(stdout.contains("Bearer [REDACTED]"), "{stdout}");
        if json {
            let v: Value = serde_json::from_str(&stdout).unwrap();
            replays = v["replays"].as_array().unwrap().clone();
        }
    }
    assert_eq!(replays.len(), ECHOES.len());
    let by = |s: &str| &replays[ECHOES.iter().position(|e| *e == s).unwrap()];
    for (e, class) in [
        ("echo-401", "http_error"),
        ("echo-truncated", "http_error"),
        ("echo-stream-error", "http_error"),
        ("echo-html", "protocol"),
    ] {
        let r = by(e);
        assert_eq!(r["failure"]["class"], class, "{e}: {r:#}");
        let detail = r["failure"]["detail"].as_str().unwrap();
        assert!(detail.contains("[REDACTED]"), "{e}: {detail}");
    }
    // The answers still decode: only the key's bytes changed.
    for e in ["echo-200", "echo-escaped", "echo-stream", "echo-tools"] {
        assert_eq!(by(e)["outcome"], "ok", "{e}: {:#}", by(e));
    }
    let tools = &by("echo-tools");
    assert_eq!(tools["request_id"], "Bearer [REDACTED]", "{tools:#}");
    assert_eq!(
        tools["plan"]["steps"][0]["args"]["input"], "Bearer [REDACTED]",
        "{tools:#}"
    );
    for e in ["echo-200", "echo-escaped"] {
        let answer = by(e)["answer"].as_str().unwrap();
        assert!(answer.contains("Bearer [REDACTED]"), "{e}: {answer}");
    }
    // Each stored row, raw response and record alike.
    for (e, r) in ECHOES.iter().zip(&replays) {
        let row = show(home.path(), r["stored_id"].as_str().unwrap()).to_string();
        assert_eq!(leaked(row.as_bytes()), None, "{e}: {row}");
        assert!(row.contains("[REDACTED]"), "{e}: {row}");
    }
    let raw = show(
        home.path(),
        by("echo-stream")["stored_id"].as_str().unwrap(),
    );
    let raw = raw["raw_response"].as_str().unwrap();
    assert_eq!(
        raw.matches("[REDACTED]").count(),
        2,
        "split across chunks, then across four deltas: {raw}"
    );
    // Split across deltas with only the middle redacted as it arrived, the key's edges
    // (each shorter than 12 bytes) go with it (tester 8 F7), but for its public prefix
    // `sk-test-`, which every key of the kind shares (tester 10 T10-2).
    let edge = (KEY.len() - 12).min(22) / 2;
    let (head, tail) = (&KEY[..edge], &KEY[KEY.len() - edge..]);
    let edges = by("echo-stream-edges");
    assert_eq!(edges["outcome"], "ok", "{edges:#}");
    let row = show(home.path(), edges["stored_id"].as_str().unwrap()).to_string();
    for text in [edges.to_string(), row] {
        assert!(
            text.contains("auth was Bearer sk-test-[REDACTED]"),
            "{text}"
        );
        assert!(!text.contains(head) && !text.contains(tail), "{text}");
    }
    // Every byte written under the workspace: the store, its -wal, the cache.
    assert_eq!(files_leaking(home.path()), Vec::<String>::new());
    assert!(!files_contain(home.path(), "[REDACTED]").is_empty());
    let text = run(ctx(home.path()).args(["history", "show", &format!("{id}.r1")]));
    assert_eq!(leaked(text.1.as_bytes()), None, "{}", text.1);
    // The key did reach the server.
    let bearer = format!("Bearer {KEY}");
    assert!(
        server
            .requests
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.authorization.as_deref() == Some(bearer.as_str()))
    );
}

/// A workspace whose `config.toml` has `extra` lines added to `[llm]`.
fn workspace_with(server: &LlmServer, extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let config = server
        .config(KEY_ENV)
        .replacen("[llm]\n", &format!("[llm]\n{extra}\n"), 1);
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

#[test]
fn a_reply_over_the_cap_fails_as_protocol_and_keeps_its_opening() {
    let server = LlmServer::start();
    let home = workspace_with(&server, "max_reply_bytes = 200000");
    let id = a_failed_plan(home.path());
    let (code, stdout, stderr) = run(ctx(home.path()).env(KEY_ENV, KEY).args([
        "replay",
        &id,
        "--model",
        "test/huge-body",
        "--model",
        "test/huge-stream",
        "--model",
        "test/ok",
        "--json",
    ]));
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    for (r, opening) in v["replays"].as_array().unwrap()[..2]
        .iter()
        .zip(["{\"choices\":[{", "data: {\"choices\""])
    {
        assert_eq!(r["failure"]["class"], "protocol", "{r:#}");
        let detail = r["failure"]["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("reply too large") && detail.contains("200000"),
            "{detail}"
        );
        let row = show(home.path(), r["stored_id"].as_str().unwrap());
        let raw = row["raw_response"].as_str().unwrap();
        assert_eq!(raw.len(), 64 * 1024, "the first 64 KiB are kept");
        assert!(raw.starts_with(opening), "{}", &raw[..80]);
        assert_eq!(row["failure_class"], "protocol");
        // Tester 33 F2: a stream's answer read so far is kept too, and the detail says so.
        let partial = row["answer"]["reply"]["content"].as_str().unwrap_or("");
        assert_eq!(
            detail.contains("of answer read from it as a partial answer"),
            !partial.is_empty(),
            "{detail}"
        );
    }
    assert_eq!(
        v["replays"][2]["outcome"], "ok",
        "a reply under the cap reads"
    );
}

#[test]
fn a_reply_over_the_cap_keeps_the_opening_from_the_chunk_that_crossed_it_cut_at_a_character() {
    use common::llm_server::{CJK_CROSSING, CJK_FIRST, CJK_OPENING};
    let server = LlmServer::start();
    // Above 64 KiB, so the chunk that crosses it (bytes 60,000..68,000) holds the opening's end.
    let cap = 66_000;
    assert!(CJK_FIRST < CJK_OPENING && CJK_OPENING < cap && cap < CJK_CROSSING);
    let home = workspace_with(&server, &format!("max_reply_bytes = {cap}"));
    let id = a_failed_plan(home.path());
    let (code, stdout, stderr) = run(ctx(home.path()).env(KEY_ENV, KEY).args([
        "replay",
        &id,
        "--model",
        "test/huge-cjk",
        "--json",
    ]));
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let r = &v["replays"][0];
    assert_eq!(r["failure"]["class"], "protocol", "{r:#}");
    let row = show(home.path(), r["stored_id"].as_str().unwrap());
    let raw = row["raw_response"].as_str().unwrap();
    // The body's 64 KiB end inside a 3-byte character: the opening stops before it.
    assert!(
        (CJK_OPENING - 2..CJK_OPENING).contains(&raw.len()),
        "kept {} bytes, not the first 64 KiB less the character cut",
        raw.len()
    );
    assert!(!raw.contains('\u{FFFD}'), "{}", &raw[raw.len() - 20..]);
    assert!(raw.ends_with("日日日"), "{}", &raw[raw.len() - 20..]);
    let detail = r["failure"]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "kept: its first {} bytes as the raw response",
            raw.len()
        )),
        "{detail}"
    );
}

#[test]
fn retry_waits_are_capped_and_a_retry_after_no_duration_holds_is_not_waited_for() {
    let server = LlmServer::start();
    // The longest base config.toml allows (1m), doubled: without the cap the first retry
    // waits a minute and the test's 60 s timeout ends it.
    let dir = workspace_with(&server, "");
    let home = dir.path();
    let config = std::fs::read_to_string(home.join("config.toml"))
        .unwrap()
        .replace(
            "retry_base = \"50ms\"",
            "retry_base = \"1m\"\nretry_max_wait = \"100ms\"",
        );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let id = a_failed_plan(home);
    let (code, stdout, stderr) = run(ctx(home)
        .env(KEY_ENV, KEY)
        .args([
            "replay",
            &id,
            "--model",
            "test/server-error",
            "--model",
            "test/retry-after-huge",
            "--json",
        ])
        .timeout(std::time::Duration::from_secs(60)));
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let r = &v["replays"][0];
    assert_eq!(r["failure"]["class"], "http_error", "{r:#}");
    assert_eq!(r["attempts"], 3, "two retries, each after at most 100 ms");
    let r = &v["replays"][1];
    assert_eq!(r["failure"]["class"], "http_error", "{r:#}");
    assert_eq!(
        r["attempts"], 1,
        "a retry-after over retry_max_wait is not waited for"
    );
    let detail = r["failure"]["detail"].as_str().unwrap();
    // Too large for a wait: named as the endpoint wrote it, as any too-long retry-after.
    assert!(
        detail.contains(
            "(retry-after 1e300 s, too long to wait for: over retry_max_wait 0.1 s, so not retried)"
        ),
        "{detail}"
    );
}

#[test]
fn a_retry_after_http_date_is_waited_until_and_one_too_far_is_not_waited_for() {
    let server = LlmServer::start();
    let dir = workspace_with(&server, "retry_max_wait = \"10s\"");
    let home = dir.path();
    let id = a_failed_plan(home);
    let (code, stdout, stderr) = run(ctx(home)
        .env(KEY_ENV, KEY)
        .args([
            "--log",
            "info",
            "replay",
            &id,
            "--model",
            "test/retry-after-date-far",
            "--model",
            "test/retry-after-digits",
            "--model",
            "test/retry-after-date",
            "--json",
        ])
        .timeout(std::time::Duration::from_secs(60)));
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    // A date decades away and a number of seconds no integer holds: past retry_max_wait,
    // so one attempt, as any too-long retry-after.
    for r in &v["replays"].as_array().unwrap()[..2] {
        assert_eq!(r["failure"]["class"], "http_error", "{r:#}");
        assert_eq!(r["attempts"], 1, "not retried on the backoff: {r:#}");
        let detail = r["failure"]["detail"].as_str().unwrap();
        assert!(
            detail.contains("s, too long to wait for: over retry_max_wait 10 s"),
            "{detail}"
        );
    }
    // The number no integer holds is named as written, not as "too long" alone.
    let detail = v["replays"][1]["failure"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("(retry-after 99999999999999999999999 s, too long"),
        "{detail}"
    );
    // A date two seconds on is waited for (not the 50 ms backoff), then answered.
    let r = &v["replays"][2];
    assert_eq!(r["outcome"], "ok", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    let log = std::fs::read_to_string(home.join("logs/ctxconsole.log")).unwrap();
    let waits: Vec<u64> = log
        .lines()
        .filter(|l| l.contains("retrying"))
        .filter_map(|l| l.split("wait_ms=").nth(1))
        .filter_map(|w| w.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(waits.len(), 1, "only the near date is retried:\n{log}");
    assert!(
        (1000..=2000).contains(&waits[0]),
        "waited until the date, not the backoff: {waits:?}\n{log}"
    );
}

/// A workspace whose endpoints are the test server (keyed), the test server under a key
/// variable that is not set, and a port nothing listens on.
fn workspace_with_broken_providers(server: &LlmServer) -> tempfile::TempDir {
    let home = workspace(server);
    let mut config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    config.push_str(&format!(
        "\n[providers.nokey]\nprefix = \"nokey/\"\nbase_url = \"{}\"\nkey_env = \"{UNSET_KEY_ENV}\"\n\
         \n[providers.dead]\nprefix = \"dead/\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
        server.base_url()
    ));
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

const UNSET_KEY_ENV: &str = "CTXCONSOLE_TEST_UNSET_KEY";

/// The binary with the test key set, the other key variables surely not.
fn keyed(home: &Path) -> assert_cmd::Command {
    let mut cmd = ctx(home);
    cmd.env(KEY_ENV, KEY)
        .env_remove(UNSET_KEY_ENV)
        .env_remove("OPENROUTER_API_KEY");
    cmd
}

#[test]
fn one_models_missing_key_or_dead_endpoint_never_stops_the_others_and_the_exit_says_so() {
    let server = LlmServer::start();
    let home = workspace_with_broken_providers(&server);
    let id = a_failed_plan(home.path());
    // Not sent (no key; only a provider's prefix), sent but no answer (nothing listening),
    // and two that answer, interleaved.
    let models = ["nokey/ok", "test/ok", "dead/ok", "ollama/", "test/fenced"];
    let mut args = vec!["replay", id.as_str()];
    for m in &models {
        args.extend(["--model", m]);
    }
    let (code, stdout, stderr) = run(keyed(home.path()).args(&args));
    assert_eq!(code, Some(1), "stdout: {stdout}\nstderr: {stderr}");
    for m in &models {
        assert!(stdout.contains(&format!("replay on {m}")), "{m}: {stdout}");
    }
    assert!(
        stdout.contains(&format!("{id}.r1")) && stdout.contains(&format!("{id}.r2")),
        "the two that answered are stored: {stdout}"
    );
    assert!(
        stdout.contains(&format!("${UNSET_KEY_ENV}, which is not set")),
        "{stdout}"
    );
    // Set, but to nothing: said as it is.
    let (_, empty_out, _) = run(keyed(home.path()).env(UNSET_KEY_ENV, "").args([
        "replay",
        id.as_str(),
        "--model",
        "nokey/ok",
    ]));
    assert!(
        empty_out.contains(&format!("${UNSET_KEY_ENV}, which is set but empty")),
        "{empty_out}"
    );
    assert!(
        stderr.contains("3 of 5 replays could not run"),
        "stderr: {stderr}"
    );
    for m in ["nokey/ok", "dead/ok", "ollama/"] {
        assert!(stderr.contains(m), "{m}: {stderr}");
    }

    args.push("--json");
    let (code, stdout, stderr) = run(keyed(home.path()).args(&args));
    assert_eq!(code, Some(1), "stderr: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let replays = v["replays"].as_array().unwrap();
    let ran: Vec<bool> = replays
        .iter()
        .map(|r| r["ran"].as_bool().unwrap())
        .collect();
    assert_eq!(ran, [false, true, false, false, true]);
    assert!(
        replays[0]["not_sent"]
            .as_str()
            .unwrap()
            .contains(UNSET_KEY_ENV)
    );
    assert!(replays[0]["stored_id"].is_null());
    assert!(
        replays[3]["not_sent"]
            .as_str()
            .unwrap()
            .contains("only the prefix")
    );
    assert_eq!(replays[2]["failure"]["class"], "transport");
    assert!(replays[2]["not_sent"].is_null(), "it was sent");
    assert_eq!(replays[1]["outcome"], "ok");
    assert_eq!(replays[4]["outcome"], "ok");
    assert!(replays[4]["stored_id"].is_string());
    // Nothing was sent for the model without its key.
    assert!(
        server
            .requests
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.body["model"] != "ok" || r.authorization.is_some())
    );

    // Every replay failing to run is a failure, not a success with a sad table.
    let (code, stdout, stderr) =
        run(keyed(home.path()).args(["replay", &id, "--model", "dead/ok"]));
    assert_eq!(code, Some(1), "stderr: {stderr}");
    assert!(stdout.contains("replay on dead/ok"), "{stdout}");
    assert!(stderr.contains("1 of 1 replay could not run"), "{stderr}");
    // And every replay running is exit 0, a bad answer included: it is a result.
    let (code, _, stderr) = run(keyed(home.path()).args([
        "replay",
        &id,
        "--model",
        "test/deadlock",
        "--model",
        "test/content-filter",
    ]));
    assert_eq!(code, Some(0), "stderr: {stderr}");
    // --help says so.
    let (_, help, _) = run(ctx(home.path()).args(["replay", "--help"]));
    assert!(help.contains("1 when any could not run"), "{help}");
    assert!(help.contains("A live replay could not run when"), "{help}");
}

#[test]
fn a_failed_sweep_runs_every_plan_past_a_provider_without_its_key() {
    let server = LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    // Every sample model goes to the test server; ollama's provider wants a key not set.
    let config = server.config_routing_everything().replace(
        "[providers.ollama]\nprefix = \"ollama/\"\n",
        &format!("[providers.ollama]\nprefix = \"ollama/\"\nkey_env = \"{UNSET_KEY_ENV}\"\n"),
    );
    assert!(config.contains(UNSET_KEY_ENV));
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let (code, stdout, stderr) =
        run(keyed(home.path()).args(["replay", "--failed", "--limit", "40", "--json"]));
    assert_eq!(code, Some(1), "stderr: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let plans = v["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 40);
    let (mut sent, mut not_sent) = (0, 0);
    for p in plans {
        let r = &p["replays"][0];
        if p["original"]["model"]
            .as_str()
            .unwrap()
            .starts_with("ollama/")
        {
            assert!(
                r["not_sent"].as_str().unwrap().contains(UNSET_KEY_ENV),
                "{r:#}"
            );
            assert_eq!(r["ran"], false);
            not_sent += 1;
        } else {
            assert_eq!(r["ran"], true, "{r:#}");
            assert!(r["stored_id"].is_string());
            sent += 1;
        }
    }
    assert!(sent > 0 && not_sent > 0, "{sent} sent, {not_sent} not");
    let tallied: u64 = v["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["today"]["not_sent"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(tallied, not_sent);
    assert!(
        stderr.contains(&format!("{not_sent} of 40 replays could not run")),
        "{stderr}"
    );
}

/// Tester 22 F6: offline replay of a plan whose stream broke off said "the stored body is not
/// a chat completion: …" — the partial answer's opening judged as a body — where the plan
/// was stored with why it failed. It now repeats the stored failure, in the text and JSON.
#[test]
fn offline_replay_of_a_stream_that_broke_off_says_the_stored_failure() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let id = a_failed_plan(home.path());
    // The stream broke off: the replay could not run (exit 1), and is stored all the same.
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args(["replay", &id, "--model", "test/stream-cut", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cut = v["replays"][0]["stored_id"].as_str().unwrap().to_string();
    let row = show(home.path(), &cut);
    assert_eq!(row["failure_class"], "transport");
    assert_eq!(row["answer"]["partial"], true, "{row:#}");
    let stored = row["trim_record"]["replay"]["failure"]["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(stored.contains("bytes of answer"), "{stored}");
    let offline = json_of(ctx(home.path()).args(["replay", &cut, "--offline", "--json"]));
    let said = serde_json::to_string(&offline).unwrap();
    assert!(!said.contains("not a chat completion"), "{said}");
    let replay = &offline["offline"];
    assert_eq!(replay["verdict"], "not_an_answer", "{said}");
    assert_eq!(replay["failure"]["class"], "transport", "{said}");
    assert_eq!(replay["failure"]["detail"], stored.as_str(), "{said}");
    let text = ctx(home.path())
        .args(["replay", &cut, "--offline"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("today: nothing to decode — transport: {stored}")),
        "{text}"
    );
}

/// Tester 23 F3: offline replay of an imported tool-call answer (LiteLLM, OpenTelemetry) read
/// the kept answer only as a live call's and fell back to the raw text, none for a tool-call
/// answer: a plan stored ok with steps read "still failing — no_plan: an empty answer". The
/// kept tool calls are decoded today, so it reads the plan it was stored with; an answer
/// whose calls were read past (more than a plan holds steps) is still no plan.
#[test]
fn offline_replay_decodes_the_tool_calls_an_imported_answer_keeps() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    common::succeeded(ctx(h).args([
        "import",
        "litellm",
        "tests/data/litellm-logs/spend-logs.jsonl",
    ]));
    common::succeeded(ctx(h).args(["import", "traces", "tests/data/otel/genai-spans.jsonl"]));
    for id in [
        "litellm-chatcmpl-A2",
        "otel-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174",
    ] {
        let stored = show(h, id);
        assert_eq!(stored["outcome"], "ok", "{stored:#}");
        assert!(
            stored["raw_response"].is_null(),
            "a tool-call answer: {stored:#}"
        );
        let replay = json_of(ctx(h).args(["replay", id, "--offline", "--json"]));
        let offline = &replay["offline"];
        assert_eq!(offline["verdict"], "recovered", "{id}: {replay:#}");
        assert!(offline["failure"].is_null(), "{id}: {replay:#}");
        // The tools the model named, in order: a step's, or the one the guard demoted to
        // `unknown` (a name no pack registers).
        let plan = &offline["plan"];
        let named: Vec<&str> = plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| match s["tool"].as_str().unwrap() {
                "unknown" => plan["demoted"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|d| d["order"] == s["order"])
                    .and_then(|d| d["named"].as_str())
                    .unwrap(),
                tool => tool,
            })
            .collect();
        let stored_tools: Vec<&str> = stored["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tool"].as_str().unwrap())
            .collect();
        assert!(!stored_tools.is_empty(), "{stored:#}");
        assert_eq!(
            named, stored_tools,
            "{id}: the plan it was stored with: {replay:#}"
        );
        let text = ctx(h).args(["replay", id, "--offline"]).output().unwrap();
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(!text.contains("still failing"), "{id}: {text}");
    }

    // More calls than a plan holds steps: the first kept, the rest counted; still no plan.
    let bound = ctxconsole::core::bounds::PLAN_STEPS;
    let row = common::litellm_row_with_calls(bound + 3);
    let logs = h.join("many.jsonl");
    std::fs::write(&logs, format!("{row}\n")).unwrap();
    common::succeeded(ctx(h).args(["import", "litellm"]).arg(&logs));
    let replay = json_of(ctx(h).args(["replay", "litellm-many", "--offline", "--json"]));
    assert_eq!(replay["offline"]["verdict"], "still_failing", "{replay:#}");
    assert_eq!(
        replay["offline"]["failure"]["class"], "no_plan",
        "{replay:#}"
    );
    assert!(
        replay["offline"]["failure"]["detail"]
            .as_str()
            .unwrap()
            .contains(&bound.to_string()),
        "{replay:#}"
    );
}

/// Tester 31 F3: `replay --failed` cut by a signal ended silent, though the replays already
/// answered were stored. The signal cancels the call in flight and sends no more; the
/// summary of what came back is printed and a line says what the cut left.
#[cfg(unix)]
#[test]
fn a_replay_sweep_cut_by_a_signal_says_what_it_stored_and_what_it_left() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .env(KEY_ENV, KEY)
        .args(["replay", "--failed", "--limit", "3"])
        .args(["--model", "test/ok-json", "--model", "test/hang"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first plan's answer from ok-json, then its call to the hanging model.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.requests.lock().unwrap().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second call was not sent"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 128 + 15, one line on stderr (tester 33 F7: a second named the cancelled call
    // as one that could not run); the call in flight counts with the replays not made, not
    // as a failure of its class.
    assert_eq!(out.status.code(), Some(143), "{stdout}\n{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("chmod 700") && !l.contains("created history store"))
        .collect();
    assert_eq!(
        said,
        [
            "ctxconsole: interrupted by SIGTERM: 1 of 6 replays stored, each linked to its \
          original; 5 not made (the call in flight was cancelled, nothing of it stored; the \
          rest never sent)"
        ]
    );
    assert!(!stdout.contains("cancelled"), "{stdout}");
    assert!(
        stdout.contains("1 replay(s) of 1 failed plan(s) stored"),
        "{stdout}"
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        2,
        "nothing sent after"
    );
    let sent = json_of(ctx(home.path()).args(["history", "--plans", "--json", "--source", "sent"]));
    assert_eq!(sent["total"], 1, "{sent:#}");
}

/// Tester 48 nit: a plan id the store does not hold was said two ways (`history show`: "no
/// plan 'x' in STORE", `replay --offline`: "STORE: no plan 'x'"). Every surface that looks a
/// plan up by id says it one way: the CLI's two and the console's replay.
#[test]
fn a_plan_the_store_does_not_hold_is_said_one_way_everywhere() {
    use ctxconsole::llm::client::Cancel;
    use ctxconsole::tui::action::Action;
    use ctxconsole::tui::app::Effect;
    use ctxconsole::tui::panes::history::ReplayRequest;
    use ctxconsole::workspace::{Workspace, WorkspaceOptions};
    let home = tempfile::tempdir().unwrap();
    let said = |args: &[&str]| {
        let out = ctx(home.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        // The last line: the first run also says the store was made.
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.lines().last().unwrap_or_default().to_string()
    };
    let shown = said(&["history", "show", "pl-nope"]);
    let replayed = said(&["replay", "pl-nope", "--offline"]);
    assert!(
        shown.starts_with("ctxconsole: no plan 'pl-nope' in "),
        "{shown}"
    );
    assert_eq!(replayed, shown);
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let (ctx, _state) =
        ctxconsole::tui::start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let answer = ctxconsole::tui::run_effect_now(
        &ctx,
        Effect::Replay(ReplayRequest {
            request: 1,
            plan_id: "pl-nope".into(),
            model: None,
            cancel: Cancel::default(),
        }),
    );
    let Action::Replayed(_, Err(console)) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(format!("ctxconsole: {console}"), shown);
}
