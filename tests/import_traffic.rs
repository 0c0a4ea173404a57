//! A gateway's real traffic imported as a user runs it: OpenTelemetry GenAI spans
//! (`import traces`) and LiteLLM spend logs (`import litellm`) become plans and executions
//! that `history` shows, measures and filters by source; a second import adds nothing; a
//! broken record is named by its position and nothing is kept. The sample files were
//! written from each format's published spec (tests/data/README.md).

use std::path::Path;

mod common;
use common::{counts, ctx, json_of};

/// `import KIND FILE`, which must be refused (exit 2): what it said on stderr.
fn import_refused(home: &Path, kind: &str, file: &Path) -> String {
    let out = ctx(home).args(["import", kind]).arg(file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

const SPANS: &str = "tests/data/otel/genai-spans.jsonl";
const SPEND_ARRAY: &str = "tests/data/litellm-logs/spend-logs.json";
const SPEND_LINES: &str = "tests/data/litellm-logs/spend-logs.jsonl";
const CHAT_PLAN: &str = "otel-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174";

fn plans_from(home: &Path, source: &str) -> Vec<serde_json::Value> {
    json_of(ctx(home).args(["history", "--plans", "--json", "--source", source]))["plans"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn otel_spans_become_plans_and_executions_with_drift_and_a_second_import_adds_nothing() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let report = json_of(ctx(home.path()).args(["import", "traces", SPANS, "--json"]));
    // Three chat spans, two execute_tool spans; the HTTP span is read and left.
    assert_eq!(report["lines"], 6);
    assert_eq!(report["added"], 5);
    let after = counts(home.path());
    assert_eq!(after, (before.0 + 3, before.1 + 2));

    let plans = plans_from(home.path(), "otel");
    assert_eq!(plans.len(), 3);
    assert!(plans.iter().all(|p| p["source"] == "otel"));
    let chat = plans.iter().find(|p| p["id"] == CHAT_PLAN).unwrap();
    assert_eq!(chat["model"], "gpt-4o");
    assert_eq!(chat["caller"], "trip-agent");
    assert_eq!(chat["intent"], "Weather in Paris, then remember it");
    assert_eq!(chat["outcome"], "ok");
    assert_eq!(chat["steps"], 2);
    // A text answer holding a JSON plan decodes; one cut at the token limit fails as such.
    let blog: Vec<_> = plans
        .iter()
        .filter(|p| p["model"] == "llama-3.1-8b")
        .collect();
    assert!(blog.iter().any(|p| p["outcome"] == "ok" && p["steps"] == 2));
    assert!(
        blog.iter()
            .any(|p| p["outcome"] == "failed" && p["failure_class"] == "length_truncated")
    );
    // Native rows are not otel.
    assert!(
        plans_from(home.path(), "native")
            .iter()
            .all(|p| p["source"] == "native")
    );

    // Drift from the execute_tool spans, matched by the plan id.
    let drift =
        json_of(ctx(home.path()).args(["history", "--drift", "--json", "--source", "otel"]));
    let row = drift["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == CHAT_PLAN)
        .unwrap()
        .clone();
    // memory.store's span has status ERROR: a run, not a step done (tester 6 F8: the plan
    // was `followed`), so the plan is partial and says which run failed.
    assert_eq!(row["drift"], "partial", "{row}");
    assert_eq!(
        row["executed"],
        serde_json::json!(["get_weather", "memory.store"])
    );
    assert_eq!(row["executed_ok"], serde_json::json!([true, false]));

    // The model's outcomes reflect it.
    let models =
        json_of(ctx(home.path()).args(["history", "--models", "--json", "--source", "otel"]));
    let gpt = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "gpt-4o")
        .unwrap()
        .clone();
    assert_eq!(gpt["plans"], 1);
    assert_eq!(gpt["followed"], 0);
    assert_eq!(gpt["partial"], 1);

    // The usage is kept with the plan.
    let show = json_of(ctx(home.path()).args(["history", "show", CHAT_PLAN, "--json"]));
    assert_eq!(show["answer"]["usage"]["prompt_tokens"], 97, "{show}");

    // Again: nothing added.
    let again = json_of(ctx(home.path()).args(["import", "traces", SPANS, "--json"]));
    assert_eq!(again["added"], 0);
    assert_eq!(again["already_present"], 5);
    assert_eq!(counts(home.path()), after);
}

#[test]
fn litellm_spend_logs_become_plans_with_usage_and_spend() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let report = json_of(ctx(home.path()).args(["import", "litellm", SPEND_ARRAY, "--json"]));
    assert_eq!(report["added"], 3);
    assert_eq!(counts(home.path()).0, before.0 + 3);
    let plans = plans_from(home.path(), "litellm");
    assert_eq!(plans.len(), 3);
    let a1 = plans
        .iter()
        .find(|p| p["id"] == "litellm-chatcmpl-A1")
        .unwrap();
    assert_eq!(a1["model"], "gpt-4o-mini");
    assert_eq!(a1["caller"], "alice");
    assert_eq!(a1["outcome"], "ok");
    assert_eq!(a1["steps"], 2);
    // Native tool calls are the plan; a row from the database export (JSON as text) reads.
    let a2 = plans
        .iter()
        .find(|p| p["id"] == "litellm-chatcmpl-A2")
        .unwrap();
    assert_eq!(a2["caller"], "bob");
    assert_eq!(a2["steps"], 1);
    assert_eq!(a2["intent"], "Put the launch on my calendar");
    let a3 = plans
        .iter()
        .find(|p| p["id"] == "litellm-chatcmpl-A3")
        .unwrap();
    assert_eq!(a3["outcome"], "failed");

    let show = json_of(ctx(home.path()).args(["history", "show", "litellm-chatcmpl-A1", "--json"]));
    let answer = &show["answer"];
    assert_eq!(answer["usage"]["total_tokens"], 158, "{show}");
    assert!((answer["spend"].as_f64().unwrap() - 0.0000408).abs() < 1e-12);

    let models =
        json_of(ctx(home.path()).args(["history", "--models", "--json", "--source", "litellm"]));
    assert!(
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["model"] == "claude-3-5-haiku" && m["failed"] == 1)
    );

    // The same rows as JSON Lines: already present.
    let again = json_of(ctx(home.path()).args(["import", "litellm", SPEND_LINES, "--json"]));
    assert_eq!(again["added"], 0);
    assert_eq!(again["already_present"], 2);
    assert_eq!(counts(home.path()).0, before.0 + 3);
}

#[test]
fn a_changed_row_is_a_conflict_settled_by_on_conflict() {
    let home = tempfile::tempdir().unwrap();
    ctx(home.path())
        .args(["import", "litellm", SPEND_LINES])
        .assert()
        .success();
    let changed = home.path().join("changed.jsonl");
    let text = std::fs::read_to_string(SPEND_LINES)
        .unwrap()
        .replace("Find the launch notes", "Find the old notes");
    std::fs::write(&changed, text).unwrap();
    let out = ctx(home.path())
        .args(["import", "litellm"])
        .arg(&changed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("litellm-chatcmpl-A1"), "{err}");
    let replaced = json_of(
        ctx(home.path())
            .args(["import", "litellm", "--on-conflict", "replace", "--json"])
            .arg(&changed),
    );
    assert_eq!(replaced["replaced"], 1);
    let plans = plans_from(home.path(), "litellm");
    assert!(
        plans
            .iter()
            .any(|p| p["intent"] == "Find the old notes and email them to the team")
    );
}

#[test]
fn a_broken_record_is_named_by_its_position_and_nothing_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    for (what, file, position) in [
        ("traces", "tests/data/otel/bad-json-line3.jsonl", "line 3"),
        (
            "traces",
            "tests/data/otel/no-trace-id.jsonl",
            "line 2, span 2",
        ),
        (
            "litellm",
            "tests/data/litellm-logs/bad-json-line3.jsonl",
            "line 3",
        ),
    ] {
        let out = ctx(home.path())
            .args(["import", what, file])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{file}: {position}")), "{err}");
        assert_eq!(counts(home.path()), before, "{file}");
    }
    let out = ctx(home.path())
        .args(["history", "--source", "elsewhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn export_to(home: &Path, out: &Path, executions: bool) {
    let mut cmd = ctx(home);
    cmd.args(["history", "export", "--out"]).arg(out);
    if executions {
        cmd.arg("--executions");
    }
    let done = cmd.output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

fn view(home: &Path, flag: &str, source: &str) -> serde_json::Value {
    json_of(ctx(home).args([
        "history", flag, "--json", "--source", source, "--limit", "1000",
    ]))
}

/// `history export` writes each plan's source and `import plans` reads it back: a copy of a
/// store holding imported traffic says where each plan came from, and measures it alike.
#[test]
fn imported_traffic_keeps_its_source_through_export_and_import() {
    let first = tempfile::tempdir().unwrap();
    for (what, file) in [("traces", SPANS), ("litellm", SPEND_ARRAY)] {
        ctx(first.path())
            .args(["import", what, file])
            .assert()
            .success();
    }
    // `history --models` reflects both files, unfiltered.
    let models = json_of(ctx(first.path()).args(["history", "--models", "--json"]));
    let plans_of = |m: &str| {
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["model"] == m)
            .unwrap_or_else(|| panic!("{m} not in history --models"))["plans"]
            .clone()
    };
    assert_eq!(plans_of("gpt-4o-mini"), 2);
    assert_eq!(plans_of("llama-3.1-8b"), 2);
    assert_eq!(plans_of("claude-3-5-haiku"), 1);

    let files = tempfile::tempdir().unwrap();
    let (plans, executions) = (
        files.path().join("plans.jsonl"),
        files.path().join("executions.jsonl"),
    );
    export_to(first.path(), &plans, false);
    export_to(first.path(), &executions, true);
    let text = std::fs::read_to_string(&plans).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(CHAT_PLAN))
        .expect("the chat span's plan is exported");
    assert!(line.contains(r#""source":"otel""#), "{line}");

    let copy = tempfile::tempdir().unwrap();
    let report = json_of(
        ctx(copy.path())
            .args(["import", "plans", "--json"])
            .arg(&plans),
    );
    // The sample's plans are the same on both sides; the imported traffic is new.
    assert_eq!(report["added"], 6, "{report}");
    ctx(copy.path())
        .args(["import", "executions"])
        .arg(&executions)
        .assert()
        .success();
    for source in ["otel", "litellm", "native"] {
        for flag in ["--plans", "--drift", "--models"] {
            assert_eq!(
                view(copy.path(), flag, source),
                view(first.path(), flag, source),
                "{flag} --source {source}"
            );
        }
    }
    assert_eq!(view(copy.path(), "--plans", "otel")["total"], 3);
    // Read back again: every line already present, the source included in what is compared.
    let again = json_of(
        ctx(copy.path())
            .args(["import", "plans", "--json"])
            .arg(&plans),
    );
    assert_eq!(again["added"], 0);
    assert_eq!(again["already_present"], 674, "{again}");
}

/// A LiteLLM spend log of `n` rows by one caller and model, each answered with native tool
/// calls (the last row's call failed), as the proxy writes them.
fn spend_log(n: usize, model: &str) -> String {
    let mut out = String::new();
    for i in 0..n {
        let calls = serde_json::json!([
            {"id": format!("call_{i}a"), "type": "function", "function": {
                "name": "memory.store", "arguments": "{\"text\":\"the launch moved\"}"}},
            {"id": format!("call_{i}b"), "type": "function", "function": {
                "name": "blog.draft", "arguments": {"topic": "launch"}}},
        ]);
        let failed = i + 1 == n;
        let row = serde_json::json!({
            "request_id": format!("req-{i:02}"),
            "model": model,
            "startTime": format!("2026-10-04T10:{i:02}:00"),
            "endTime": format!("2026-10-04T10:{i:02}:02"),
            "user": "agent-7",
            "prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340, "spend": 0.0002,
            "status": if failed { "failure" } else { "success" },
            "messages": [{"role": "user", "content": format!("remember that launch {i} moved and blog it")}],
            "response": if failed { serde_json::Value::Null } else { serde_json::json!({
                "id": format!("req-{i:02}"), "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": calls}}]}) },
        });
        out.push_str(&format!("{row}\n"));
    }
    out
}

/// Drift, outcomes, the tier suggestion and the gap signal on imported traffic are what
/// the same plans give as native plans: the traffic is imported, then copied as native
/// plans of another model name, and every view of one is the other's.
#[test]
fn drift_outcomes_tiers_and_gaps_work_on_imported_traffic_as_on_native_plans() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("spend.jsonl");
    std::fs::write(&log, spend_log(24, "weak-x")).unwrap();
    ctx(home.path())
        .args(["import", "litellm"])
        .arg(&log)
        .assert()
        .success();
    // Tool calls in the responses are the plans' steps.
    let show = json_of(ctx(home.path()).args(["history", "show", "litellm-req-03", "--json"]));
    let tools: Vec<&str> = show["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["memory.store", "blog.draft"]);
    assert_eq!(show["steps"][1]["args"]["topic"], "launch");
    assert_eq!(show["source"], "litellm");

    // The agent ran 20 plans as planned, one in part, and left two.
    let mut executions = String::new();
    for i in 0..21 {
        let ran: &[&str] = if i == 20 {
            &["memory.store"]
        } else {
            &["memory.store", "blog.draft"]
        };
        for (k, tool) in ran.iter().enumerate() {
            executions.push_str(&format!(
                "{{\"at\":\"2026-10-04T10:{i:02}:{:02}Z\",\"caller\":\"agent-7\",\"plan_id\":\"litellm-req-{i:02}\",\"tool\":\"{tool}\"}}\n",
                10 + k
            ));
        }
    }
    let exec_file = files.path().join("executions.jsonl");
    std::fs::write(&exec_file, &executions).unwrap();
    ctx(home.path())
        .args(["import", "executions"])
        .arg(&exec_file)
        .assert()
        .success();

    // A baseline for every plan: the frontier also searched the web first.
    let exported = files.path().join("all.jsonl");
    export_to(home.path(), &exported, false);
    let baseline = r#","expert_baseline":{"model":"frontier","steps":[{"order":1,"tool":"web.search"},{"order":2,"tool":"memory.store"},{"order":3,"tool":"blog.draft"}]}}"#;
    let traffic: Vec<String> = std::fs::read_to_string(&exported)
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""source":"litellm""#))
        .map(|l| format!("{}{baseline}", &l[..l.len() - 1]))
        .collect();
    assert_eq!(traffic.len(), 24);
    let with_baseline = files.path().join("with-baseline.jsonl");
    std::fs::write(&with_baseline, traffic.join("\n")).unwrap();
    ctx(home.path())
        .args(["import", "plans", "--on-conflict", "replace"])
        .arg(&with_baseline)
        .assert()
        .success();
    // The same plans and executions as native plans of another model name.
    let native = files.path().join("native.jsonl");
    std::fs::write(
        &native,
        traffic
            .join("\n")
            .replace(r#""source":"litellm""#, r#""source":"native""#)
            .replace("litellm-req-", "native-req-")
            .replace(r#""model":"weak-x""#, r#""model":"weak-y""#),
    )
    .unwrap();
    let native_exec = files.path().join("native-executions.jsonl");
    std::fs::write(
        &native_exec,
        executions.replace("litellm-req-", "native-req-"),
    )
    .unwrap();
    for (what, file) in [("plans", &native), ("executions", &native_exec)] {
        ctx(home.path())
            .args(["import", what])
            .arg(file)
            .assert()
            .success();
    }

    let only = |flag: &str, model: &str| {
        json_of(ctx(home.path()).args([
            "history", flag, "--json", "--model", model, "--limit", "1000",
        ]))
    };
    // Models: the same counts and the same suggested tier, with its evidence.
    let x = only("--models", "weak-x");
    let y = only("--models", "weak-y");
    let row = &x["models"][0];
    assert_eq!(row["plans"], 24);
    assert_eq!(row["failed"], 1);
    assert_eq!(row["followed"], 20);
    assert_eq!(row["partial"], 1);
    assert_eq!(row["suggested_tier"], "A", "{row}");
    assert_eq!(row["evidence"], 24);
    let mut renamed = y.clone();
    renamed["models"][0]["model"] = "weak-x".into();
    assert_eq!(renamed, x);
    // Drift: the same classes and evidence, plan by plan.
    let drift = |model: &str| {
        let mut d = only("--drift", model);
        for p in d["plans"].as_array_mut().unwrap() {
            let id = p["id"].as_str().unwrap().replace("native-", "litellm-");
            p["id"] = id.into();
            p["model"] = "m".into();
            p["source"] = "s".into();
        }
        d
    };
    assert_eq!(drift("weak-x"), drift("weak-y"));
    assert_eq!(
        drift("weak-x")["counts"][0],
        serde_json::json!(["followed", 20])
    );
    // Gaps: every plan that ran skipped web.search; the failed one missed it all.
    let gx = json_of(ctx(home.path()).args(["history", "--gaps", "--json", "--source", "litellm"]));
    let gy = json_of(ctx(home.path()).args(["history", "--gaps", "--json", "--model", "weak-y"]));
    assert_eq!(gx, gy);
    assert_eq!(gx["plans"], 24);
    assert_eq!(
        gx["plan_missed"][0],
        serde_json::json!({"tool": "web.search", "plans": 24})
    );
    assert_eq!(
        gx["groups"].as_array().unwrap().len(),
        1,
        "one intent shape: {gx:#}"
    );
    let text = ctx(home.path())
        .args(["history", "--gaps", "--source", "litellm"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("plan skipped web.search in 24 of 24 'remember that launch"),
        "{text}"
    );
    assert!(text.contains("the plan failed in 1 of 24"), "{text}");
}

/// The history prior (the ranking's lift from followed plans) and the past-plans part of the
/// request read imported traffic as they read native plans: two workspaces holding the same
/// plans and executions, one imported from a LiteLLM spend log and one as native JSON Lines,
/// preview the same intent identically.
#[test]
fn the_history_prior_and_past_plans_read_imported_traffic_as_native_plans() {
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("spend.jsonl");
    std::fs::write(&log, spend_log(24, "weak-x")).unwrap();
    let mut executions = String::new();
    for i in 0..24 {
        for (k, tool) in ["memory.store", "blog.draft"].iter().enumerate() {
            executions.push_str(&format!(
                "{{\"at\":\"2026-10-04T10:{i:02}:{:02}Z\",\"caller\":\"agent-7\",\"plan_id\":\"litellm-req-{i:02}\",\"tool\":\"{tool}\"}}\n",
                10 + k
            ));
        }
    }
    let exec_file = files.path().join("executions.jsonl");
    std::fs::write(&exec_file, &executions).unwrap();

    let imported = tempfile::tempdir().unwrap();
    ctx(imported.path())
        .args(["import", "litellm"])
        .arg(&log)
        .assert()
        .success();
    ctx(imported.path())
        .args(["import", "executions"])
        .arg(&exec_file)
        .assert()
        .success();

    // The same plans as native JSON Lines in a second workspace.
    let exported = files.path().join("all.jsonl");
    export_to(imported.path(), &exported, false);
    let native_plans: Vec<String> = std::fs::read_to_string(&exported)
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""source":"litellm""#))
        .map(|l| l.replace(r#""source":"litellm""#, r#""source":"native""#))
        .collect();
    assert_eq!(native_plans.len(), 24);
    let native_file = files.path().join("native.jsonl");
    std::fs::write(&native_file, native_plans.join("\n")).unwrap();
    let native = tempfile::tempdir().unwrap();
    for (what, file) in [("plans", &native_file), ("executions", &exec_file)] {
        ctx(native.path())
            .args(["import", what])
            .arg(file)
            .assert()
            .success();
    }

    let intent = "remember that launch 7 moved and blog it";
    let preview =
        |home: &Path| json_of(ctx(home).args(["preview", intent, "--model", "weak-x", "--json"]));
    let (a, b) = (preview(imported.path()), preview(native.path()));
    // The ranking's prior lifted the tools the followed plans used, the same in both.
    let lifted = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["ranking"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| !e["prior"].is_null())
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["prior"].to_string(),
                )
            })
            .collect()
    };
    let from_imported = lifted(&a);
    assert!(
        from_imported.iter().any(|(n, _)| n == "memory.store"),
        "the followed plans lift memory.store: {from_imported:?}"
    );
    assert_eq!(from_imported, lifted(&b));
    assert_eq!(a["ranking"], b["ranking"]);
    assert_eq!(a["past_steps"], b["past_steps"]);
    assert_eq!(a["request"]["messages"], b["request"]["messages"]);
}

/// A tool call's arguments keep their numbers as written through `import litellm` and
/// `import traces`: an id rounded to a double is a different call.
#[test]
fn numbers_in_imported_tool_call_arguments_are_kept_exactly() {
    let home = tempfile::tempdir().unwrap();
    let arguments = r#"{"id": 12345678901234567891, "below": -9223372036854775809, "wide": 123456789012345678901234567890}"#;
    let row = serde_json::json!({
        "request_id": "big-args", "model": "gpt-4o-mini", "startTime": "2026-10-03T12:05:00",
        "messages": [{"role": "user", "content": "look the record up"}],
        "response": {"choices": [{"finish_reason": "tool_calls", "message": {"content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "fs.read", "arguments": arguments}}]}}]}
    });
    let logs = home.path().join("spend.jsonl");
    std::fs::write(&logs, format!("{row}\n")).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&logs));
    let output = serde_json::json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": "fs.read", "arguments": "ARGS"}]}])
    .to_string()
    .replace("\"ARGS\"", arguments);
    let span = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "aa", "spanId": "01", "startTimeUnixNano": "1791028800000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": output}}]}]}]}]});
    let spans = home.path().join("spans.jsonl");
    std::fs::write(&spans, format!("{span}\n")).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "traces"]).arg(&spans));
    for id in ["litellm-big-args", "otel-aa-01"] {
        let show = common::succeeded(ctx(home.path()).args(["history", "show", id, "--json"]));
        let show = String::from_utf8(show.stdout).unwrap();
        for (key, d) in [
            ("id", "12345678901234567891"),
            ("below", "-9223372036854775809"),
            ("wide", "123456789012345678901234567890"),
        ] {
            // The step's args (the answer's copy of the arguments text reads `\"id\": …`).
            assert!(
                show.contains(&format!("\"{key}\": {d}")),
                "{id}: {key} {d} in {show}"
            );
        }
    }
}

/// A spend log row whose `messages` column cannot be read (text that is not JSON, a value
/// that is not a list of messages) is an error naming the file, the row and the column, and
/// nothing is kept, as for any other bad field. A column that is absent, null or LiteLLM's
/// empty placeholder (prompts not stored) is the input not recorded.
#[test]
fn an_unreadable_messages_column_is_named_and_an_absent_one_is_not_recorded() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let row = |id: &str, messages: serde_json::Value| {
        let mut row = serde_json::json!({"request_id": id, "model": "gpt-4o-mini",
            "startTime": "2026-10-03T12:05:00"});
        if !messages.is_null() {
            row["messages"] = messages;
        }
        row
    };
    let good = row(
        "ok-1",
        serde_json::json!([{"role": "user", "content": "hello"}]),
    );
    for (messages, says) in [
        (
            serde_json::json!("[{\"role\": \"user\", \"content\": \"cut off"),
            "field 'messages' is not JSON",
        ),
        (
            // The column's text holds a lone surrogate escape: named as one, with where in
            // the column's text, as every importer names it in a file.
            serde_json::json!("[{\"role\": \"user\", \"content\": \"a \\ud800 b\"}]"),
            "field 'messages' is not JSON (line 1, column 39 of its text: a lone UTF-16 \
             surrogate (\\ud800) is not a character)",
        ),
        (
            serde_json::json!(42),
            "field 'messages' is 42, not a list of messages",
        ),
        (
            serde_json::json!("{\"role\": \"user\"}"),
            "field 'messages' is an object, not a list of messages",
        ),
        (
            serde_json::json!(["hello"]),
            "field 'messages' item 1 is \"hello\", not a message",
        ),
    ] {
        let bad = row("bad-2", messages);
        let lines = home.path().join("bad.jsonl");
        std::fs::write(&lines, format!("{good}\n{bad}\n")).unwrap();
        let array = home.path().join("bad.json");
        std::fs::write(&array, serde_json::json!([good, bad]).to_string()).unwrap();
        for (file, position) in [(&lines, "line 2"), (&array, "row 2")] {
            let out = ctx(home.path())
                .args(["import", "litellm"])
                .arg(file)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            let want = format!("{}: {position}: {says}", file.display());
            assert!(err.contains(&want), "{want} in {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert_eq!(counts(home.path()), before);
        }
    }
    let rows: Vec<String> = [
        row("none-1", serde_json::Value::Null),
        row("none-2", serde_json::json!("{}")),
        row("none-3", serde_json::json!({})),
        row("none-4", serde_json::json!("")),
        row("none-5", serde_json::json!([])),
    ]
    .iter()
    .map(|r| r.to_string())
    .collect();
    let absent = home.path().join("absent.jsonl");
    std::fs::write(&absent, rows.join("\n")).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&absent));
    let plans = plans_from(home.path(), "litellm");
    assert_eq!(plans.len(), 5);
    assert!(
        plans.iter().all(|p| p["intent"] == "(input not recorded)"),
        "{plans:?}"
    );
}

/// The same rule for a chat span: input or output messages recorded as text that is not
/// JSON, or input that is not a list of messages, is an error naming the file, the span and
/// the attribute, and nothing is kept; a span that recorded none is the input (or output)
/// not recorded.
#[test]
fn an_unreadable_messages_attribute_is_named_and_nothing_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let span = |key: &str, value: &str| {
        serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "aa", "spanId": "01", "startTimeUnixNano": "1791028800000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                {"key": key, "value": {"stringValue": value}}]}]}]}]})
    };
    let file = home.path().join("spans.jsonl");
    for (key, value, says) in [
        (
            "gen_ai.input.messages",
            "[{\"role\": \"user\", \"parts\": [",
            "attribute 'gen_ai.input.messages' is not JSON",
        ),
        (
            "gen_ai.output.messages",
            "[{\"role\": \"assistant\"",
            "attribute 'gen_ai.output.messages' is not JSON",
        ),
        (
            "gen_ai.input.messages",
            "\"hello\"",
            "attribute 'gen_ai.input.messages' is \"hello\", not a list of messages",
        ),
    ] {
        std::fs::write(&file, format!("{}\n", span(key, value))).unwrap();
        let out = ctx(home.path())
            .args(["import", "traces"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let want = format!("{}: line 1, span 1: {says}", file.display());
        assert!(err.contains(&want), "{want} in {err}");
        assert_eq!(counts(home.path()), before);
    }
    std::fs::write(&file, format!("{}\n", span("other", "x"))).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "traces"]).arg(&file));
    let plans = plans_from(home.path(), "otel");
    assert_eq!(plans[0]["intent"], "(input not recorded)");
    assert_eq!(plans[0]["failure_class"], "output_not_recorded");
}

/// Tester 9 T9-14: an answer with more tool calls than a plan holds steps was built whole
/// (600,000 calls: 1.2 GB) and stored whole in the plan's answer before the plan was refused.
/// Through both importers alike: no plan, the answer keeps the first `PLAN_STEPS` calls and
/// counts the rest, and the import says so.
#[test]
fn an_answer_past_the_bound_of_steps_keeps_the_first_calls_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let bound = ctxconsole::core::bounds::PLAN_STEPS;
    let n = bound + 3;
    let row = common::litellm_row_with_calls(n);
    let logs = home.path().join("spend.jsonl");
    std::fs::write(&logs, format!("{row}\n")).unwrap();
    let parts: Vec<_> = (0..n)
        .map(|i| {
            serde_json::json!({"type": "tool_call", "id": format!("c{i}"),
            "name": "fs.search", "arguments": {"q": 1}})
        })
        .collect();
    let output = serde_json::json!([{"role": "assistant", "parts": parts}]).to_string();
    let span = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "aa", "spanId": "01", "startTimeUnixNano": "1791028800000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": output}}]}]}]}]});
    let spans = home.path().join("spans.jsonl");
    std::fs::write(&spans, format!("{span}\n")).unwrap();
    // The arguments as a live reply carries them: LiteLLM's text as written, the span's
    // value written out.
    for (kind, file, id, arguments) in [
        ("litellm", &logs, "litellm-many", "{\"q\": 1}"),
        ("traces", &spans, "otel-aa-01", "{\"q\":1}"),
    ] {
        let out = common::succeeded(ctx(home.path()).args(["import", kind]).arg(file));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(&format!(
                "1 answer held more tool calls than a plan holds steps ({bound}): no plan; the \
                 first {bound} kept in its answer, the rest read past and counted there \
                 (tool_calls_not_kept)"
            )),
            "{kind}: {text}"
        );
        let plan = json_of(ctx(home.path()).args(["history", "show", id, "--json"]));
        assert_eq!(plan["failure_class"], "no_plan", "{kind}: {plan}");
        let answer = &plan["answer"];
        assert_eq!(
            answer["tool_calls"].as_array().unwrap().len(),
            bound,
            "{kind}"
        );
        assert_eq!(answer["tool_calls"][0]["arguments"], arguments, "{kind}");
        assert_eq!(answer["tool_calls_not_kept"], 3, "{kind}");
    }
    // The report counts it too.
    let again = json_of(
        ctx(home.path())
            .args(["import", "litellm", "--json"])
            .arg(&logs),
    );
    assert_eq!(again["tool_calls_cut"], 1);
    assert_eq!(again["already_present"], 1);
}

/// Left open by tester 13 T13-10: a spend log's answer whose `content` is a list of parts
/// (as OpenAI-compatible servers may send) was read by line breaks between its parts and
/// with any part's text, and a legacy `function_call` as nothing. Now both are read as a
/// live answer reads them: the text parts joined in order (a plan split inside a string is
/// the plan), a part that is not text named in the answer's `not_read` and in the import's
/// notes, the `function_call` one call and so one step.
#[test]
fn an_answer_in_parts_or_a_function_call_is_imported_as_a_live_answer_is_read() {
    let home = tempfile::tempdir().unwrap();
    let plan = r#"{"steps":[{"order":1,"tool":"fs.search"},{"order":2,"tool":"mail.send"}]}"#;
    let (head, tail) = plan.split_at(plan.find("sea").unwrap() + 3);
    let row = |id: &str, finish: &str, message: serde_json::Value| {
        serde_json::json!({
            "request_id": id, "model": "gpt-4o-mini", "startTime": "2026-10-03T12:05:00",
            "status": "success",
            "messages": [{"role": "user", "content": "find the notes and mail them"}],
            "response": {"choices": [{"index": 0, "finish_reason": finish, "message": message}]}
        })
    };
    let parts = row(
        "parts",
        "stop",
        serde_json::json!({"role": "assistant", "content": [
            {"type": "text", "text": head},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "text", "text": tail}]}),
    );
    let legacy = row(
        "legacy",
        "function_call",
        serde_json::json!({"role": "assistant", "content": null,
            "function_call": {"name": "fs.search", "arguments": "{\"q\": \"notes\"}"}}),
    );
    let logs = home.path().join("spend.jsonl");
    std::fs::write(&logs, format!("{parts}\n{legacy}\n")).unwrap();
    let out = common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&logs));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "1 answer held content not read (a part that is not text, content of another \
             type): named in its answer (not_read)"
        ),
        "{text}"
    );

    let shown = json_of(ctx(home.path()).args(["history", "show", "litellm-parts", "--json"]));
    assert_eq!(shown["raw_response"], plan, "{shown}");
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"].as_array().unwrap().len(), 2, "{shown}");
    assert_eq!(
        shown["answer"]["not_read"],
        serde_json::json!(["a content part of type image_url"]),
        "{shown}"
    );

    let shown = json_of(ctx(home.path()).args(["history", "show", "litellm-legacy", "--json"]));
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"][0]["tool"], "fs.search", "{shown}");
    assert_eq!(
        shown["answer"]["tool_calls"][0]["name"], "fs.search",
        "{shown}"
    );
    assert!(shown["answer"].get("not_read").is_none(), "{shown}");

    let again = json_of(
        ctx(home.path())
            .args(["import", "litellm", "--json"])
            .arg(&logs),
    );
    assert_eq!(again["answers_not_read"], 1, "{again}");
    assert_eq!(again["already_present"], 2, "{again}");
}

/// Left open by the change that read a spend log's answer as a live one is: a span's
/// `gen_ai.output.messages` dropped the parts that are not text (reasoning, blob, uri, …)
/// without a word and joined a message's text parts by line breaks, so a plan split across
/// two text parts (as a streamed answer may be recorded) broke inside a string. Now one
/// message's text parts are joined in order by the same core rule
/// (`core::failure::content_part`), a reasoning part is the answer's reasoning (as a live
/// answer's `reasoning_content` is), a part that is neither text, reasoning nor a tool call
/// is named in the answer's `not_read` and counted in the import's notes and `--json`, and
/// a tool call part is still one step.
#[test]
fn a_span_answer_in_parts_is_read_whole_and_what_is_not_text_is_named() {
    let home = tempfile::tempdir().unwrap();
    let plan = r#"{"steps":[{"order":1,"tool":"fs.search"},{"order":2,"tool":"mail.send"}]}"#;
    let (head, tail) = plan.split_at(plan.find("sea").unwrap() + 3);
    let span = |id: &str, parts: serde_json::Value| {
        let output = serde_json::json!([{"role": "assistant", "parts": parts,
            "finish_reason": "stop"}])
        .to_string();
        serde_json::json!({"traceId": "aa", "spanId": id,
            "startTimeUnixNano": "1791028800000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": output}}]})
    };
    let text = span(
        "01",
        serde_json::json!([
            {"type": "reasoning", "content": "first search, then mail"},
            {"type": "text", "content": head},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"},
            {"type": "text", "content": tail},
            {"type": "uri", "modality": "image", "uri": "https://example.com/a.png"}]),
    );
    let calls = span(
        "02",
        serde_json::json!([
            {"type": "reasoning", "content": "search first"},
            {"type": "tool_call", "id": "c1", "name": "fs.search", "arguments": {"q": "notes"}}]),
    );
    let line = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [text, calls]}]}]});
    let spans = home.path().join("spans.jsonl");
    std::fs::write(&spans, format!("{line}\n")).unwrap();
    let out = common::succeeded(ctx(home.path()).args(["import", "traces"]).arg(&spans));
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.contains(
            "1 answer held content not read (a part that is not text, content of another \
             type): named in its answer (not_read)"
        ),
        "{out}"
    );

    let shown = json_of(ctx(home.path()).args(["history", "show", "otel-aa-01", "--json"]));
    assert_eq!(
        shown["raw_response"],
        format!("<think>first search, then mail</think>{plan}"),
        "{shown}"
    );
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"].as_array().unwrap().len(), 2, "{shown}");
    assert_eq!(
        shown["answer"]["reasoning"], "first search, then mail",
        "{shown}"
    );
    assert_eq!(
        shown["answer"]["not_read"],
        serde_json::json!(["a content part of type blob", "a content part of type uri"]),
        "{shown}"
    );

    let shown = json_of(ctx(home.path()).args(["history", "show", "otel-aa-02", "--json"]));
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"][0]["tool"], "fs.search", "{shown}");
    assert_eq!(
        shown["answer"]["tool_calls"][0]["name"], "fs.search",
        "{shown}"
    );
    assert_eq!(shown["answer"]["reasoning"], "search first", "{shown}");
    assert!(shown["answer"].get("not_read").is_none(), "{shown}");

    let again = json_of(
        ctx(home.path())
            .args(["import", "traces", "--json"])
            .arg(&spans),
    );
    assert_eq!(again["answers_not_read"], 1, "{again}");
    assert_eq!(again["already_present"], 2, "{again}");
}

/// `history show` (text) describes an imported answer as it describes a live one, by the
/// one core function (`core::failure::kept_answer_lines`): where it came from and the
/// record's ids, its tool calls, its reasoning, what it held and was not read, its usage. It
/// read only a live answer's `reply`, so an imported answer's `not_read` showed only in
/// `--json`.
#[test]
fn history_show_describes_an_imported_answer_as_a_live_one() {
    let home = tempfile::tempdir().unwrap();
    let output = serde_json::json!([{"role": "assistant", "finish_reason": "tool_calls",
        "parts": [
            {"type": "reasoning", "content": "search first"},
            {"type": "tool_call", "id": "c1", "name": "fs.search", "arguments": {"q": "notes"}},
            {"type": "blob", "modality": "image", "content": "iVBO"}]}])
    .to_string();
    let span = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "aa", "spanId": "01", "startTimeUnixNano": "1791028800000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": output}}]}]}]}]});
    let spans = home.path().join("spans.jsonl");
    std::fs::write(&spans, format!("{span}\n")).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "traces"]).arg(&spans));
    let out = common::succeeded(ctx(home.path()).args(["history", "show", "otel-aa-01"]));
    let text = String::from_utf8(out.stdout).unwrap();
    let kept = text
        .split_once("the answer as kept (history show --json: answer):\n")
        .map(|(_, kept)| kept)
        .unwrap_or_else(|| panic!("no kept answer in {text}"));
    assert_eq!(
        kept,
        "imported from otel\n  span_id: 01\n  trace_id: aa\ntool calls (1):\n  \
         fs.search {\"q\":\"notes\"}\nreasoning: 12 characters (in the raw response between \
         <think> tags)\nnot read: a content part of type blob\n\
         usage: prompt 12, completion -, cached -, reasoning -\n",
        "{text}"
    );
}

/// Left open after a span's answer parts were read by the live rule: an imported answer
/// was not yet the same truth as a live one in three ways, each now read by the live rule
/// (tests/data/otel/genai-choices-reasoning.jsonl, three chat spans as an instrumentation
/// records them). Several output messages (a request sent with `n=2`) were all read, their
/// texts joined by line breaks into one answer that was no plan: the first is the answer,
/// as a live reply keeps choice 0, and the others are counted (`other_choices`), said by
/// `history show` as a live answer's are and counted in the import's notes. A `reasoning`
/// part was named in `not_read`: it is the answer's reasoning, kept and shown as a live
/// answer's `reasoning_content` is (folded into the raw response as a `<think>` block). A
/// user message in two text parts was read with a line break between them: its parts are
/// joined as an answer's are.
#[test]
fn a_span_answer_is_its_first_choice_with_its_reasoning_and_the_intent_is_read_whole() {
    const FILE: &str = "tests/data/otel/genai-choices-reasoning.jsonl";
    const CHOICES: &str = "otel-7a1c9e0b5d2f4a6c8e0b1d3f5a7c9e1b-1f2e3d4c5b6a7980";
    const REASONING: &str = "otel-0c4b8a2e6d1f3b5a7c9e2d4f6b8a0c1e-a0b1c2d3e4f50617";
    const PARTS: &str = "otel-5e7d9c1b3a2f4e6d8c0b2a4f6e8d0c2b-b1c2d3e4f5061728";
    let home = tempfile::tempdir().unwrap();
    let out = common::succeeded(ctx(home.path()).args(["import", "traces", FILE]));
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.contains(
            "1 answer held more than one choice: the first is the answer, the others counted \
             in its answer (other_choices)"
        ),
        "{out}"
    );
    assert!(!out.contains("not read"), "{out}");

    let shown = json_of(ctx(home.path()).args(["history", "show", CHOICES, "--json"]));
    let plan = "{\"steps\": [{\"order\": 1, \"tool\": \"fs.search\", \"args\": {\"query\": \
                \"Q3 report\"}}, {\"order\": 2, \"tool\": \"mail.send\", \"args\": {\"to\": \
                \"ana@example.com\"}}]}";
    assert_eq!(shown["raw_response"], plan, "{shown}");
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"].as_array().unwrap().len(), 2, "{shown}");
    assert_eq!(shown["answer"]["other_choices"], 1, "{shown}");
    let out = common::succeeded(ctx(home.path()).args(["history", "show", CHOICES]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nother choices sent and not kept: 1 (only index 0 is the answer)\n"),
        "{text}"
    );

    let shown = json_of(ctx(home.path()).args(["history", "show", REASONING, "--json"]));
    let reasoning = "The user asks about Friday. calendar.list takes a day.";
    assert_eq!(shown["answer"]["reasoning"], reasoning, "{shown}");
    assert!(shown["answer"].get("not_read").is_none(), "{shown}");
    assert_eq!(shown["outcome"], "ok", "{shown}");
    assert_eq!(shown["steps"][0]["tool"], "calendar.list", "{shown}");
    let raw = shown["raw_response"].as_str().unwrap();
    assert!(
        raw.starts_with(&format!("<think>{reasoning}</think>{{\"steps\"")),
        "{raw}"
    );
    let out = common::succeeded(ctx(home.path()).args(["history", "show", REASONING]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nreasoning: 54 characters (in the raw response between <think> tags)\n"),
        "{text}"
    );
    // Offline replay reads the kept raw response as the import read the answer.
    let replay = json_of(ctx(home.path()).args(["replay", REASONING, "--offline", "--json"]));
    assert!(replay["offline"]["failure"].is_null(), "{replay:#}");
    assert!(replay["offline"]["class_note"].is_null(), "{replay:#}");

    let shown = json_of(ctx(home.path()).args(["history", "show", PARTS, "--json"]));
    assert_eq!(
        shown["intent"], "Summarise the meeting notes from Tuesday",
        "{shown}"
    );

    let again = json_of(ctx(home.path()).args(["import", "traces", FILE, "--json"]));
    assert_eq!(again["answers_other_choices"], 1, "{again}");
    assert_eq!(again["answers_not_read"], 0, "{again}");
    assert_eq!(again["already_present"], 3, "{again}");
}

/// Tester 15 F2: a traces file's `service.name` and a spend log's `end_user` become a plan's
/// caller, and the trace id goes into every plan's and execution's id; a configured key in
/// any of them was stored as given. Here the key is the trace id: no id, caller or link
/// keeps it, every execution still counts for its plan, and a second import adds nothing.
#[test]
fn a_configured_key_in_a_traces_ids_or_a_spend_logs_end_user_is_not_stored() {
    const KEY_ENV: &str = "CTXCONSOLE_TRAFFIC_TEST_KEY";
    let trace_id = "5b8efff798038103d269b633813fc60c";
    let home = common::keyed_workspace(KEY_ENV);
    let h = home.path();
    let exported = || {
        let mut all = String::new();
        for args in [
            &["history", "export"][..],
            &["history", "export", "--executions"],
        ] {
            let out = ctx(h).env(KEY_ENV, trace_id).args(args).output().unwrap();
            all.push_str(&String::from_utf8_lossy(&out.stdout));
        }
        all
    };
    let import = |kind: &str, file: &str| {
        json_of(
            ctx(h)
                .env(KEY_ENV, trace_id)
                .args(["import", kind, file, "--json"]),
        )
    };
    assert_eq!(import("traces", SPANS)["added"], 5);
    let kept = exported();
    assert!(!kept.contains(trace_id), "{kept}");
    assert_eq!(
        import("traces", SPANS)["added"],
        0,
        "a second import adds nothing"
    );
    // The chat plan's tool runs still count for it, under its id as kept.
    let drift = json_of(
        ctx(h)
            .env(KEY_ENV, trace_id)
            .args(["history", "--drift", "--json", "--source", "otel"]),
    );
    let row = drift["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["caller"] == "trip-agent" && p["model"] == "gpt-4o")
        .unwrap()
        .clone();
    assert!(
        row["id"].as_str().unwrap().starts_with("otel-[REDACTED]-"),
        "{row}"
    );
    assert_eq!(
        row["executed"],
        serde_json::json!(["get_weather", "memory.store"]),
        "{row}"
    );

    // A spend log whose end_user holds the key: the caller is kept without it.
    let line = serde_json::json!({
        "request_id": "r1", "model": "gpt-4o", "startTime": "2026-11-20T10:00:00",
        "endTime": "2026-11-20T10:00:01", "status": "success",
        "messages": [{"role": "user", "content": format!("key {trace_id}")}],
        "response": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]},
        "end_user": format!("u-{trace_id}"),
    });
    let file = h.join("spend.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    assert_eq!(import("litellm", file.to_str().unwrap())["added"], 1);
    let kept = exported();
    assert!(!kept.contains(trace_id), "{kept}");
    assert!(kept.contains("\"caller\":\"u-[REDACTED]\""), "{kept}");
}

/// An OTLP JSON traces line of `spans`, from service `agent`.
fn otel_line(spans: Vec<serde_json::Value>) -> String {
    serde_json::json!({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "agent"}}]},
        "scopeSpans": [{"spans": spans}]}]})
    .to_string()
}

/// A chat span of `trace` at `second`s past 12:00 planning `tool`.
fn otel_chat(trace: &str, span: &str, second: u64, tool: &str) -> serde_json::Value {
    let out = serde_json::json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": tool, "arguments": {}}]}]);
    serde_json::json!({"traceId": trace, "spanId": span,
        "startTimeUnixNano": ((1_791_028_800 + second) * 1_000_000_000).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": out.to_string()}}]})
}

/// An `execute_tool` span of `trace` at `second`s past 12:00 running `tool`.
fn otel_tool(trace: &str, span: &str, second: u64, tool: &str) -> serde_json::Value {
    serde_json::json!({"traceId": trace, "spanId": span,
        "startTimeUnixNano": ((1_791_028_800 + second) * 1_000_000_000).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": tool}}]})
}

/// What a store says of its plans and runs: drift, groups, and every execution's link.
fn figures(home: &Path) -> (serde_json::Value, serde_json::Value, String) {
    let out = home.join("runs.jsonl");
    export_to(home, &out, true);
    let runs = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(out).unwrap();
    (
        view(home, "--drift", "otel"),
        view(home, "--groups", "otel"),
        runs,
    )
}

/// Tester 23 F1: chat and `execute_tool` spans split across two files (a Collector's
/// rotation between them) were never linked by trace: the runs were stored linked to no
/// plan and counted for whichever plan the caller made last, in either order, and the
/// import said nothing (or that the run started before every chat of its trace, with one
/// stored). Now a run is linked among every chat of its trace the store holds, and one
/// stored before its chat is linked when the chat arrives: either order ends as one file.
#[test]
fn otel_spans_split_across_files_link_by_trace_as_one_file_does() {
    let (a, b) = ("a1".repeat(16), "b2".repeat(16));
    // Trace A plans fs.search; trace B, a second later, mail.send; then A's tool runs.
    // Trace A's second chat (mail.send) comes after the run, in the second file.
    let chats = otel_line(vec![
        otel_chat(&a, &"0a".repeat(8), 0, "fs.search"),
        otel_chat(&b, &"0b".repeat(8), 1, "mail.send"),
    ]);
    let tools = otel_line(vec![
        otel_tool(&a, &"1a".repeat(8), 2, "fs.search"),
        otel_chat(&a, &"0c".repeat(8), 10, "mail.send"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (first, second, whole) = (
        dir.path().join("rot1.jsonl"),
        dir.path().join("rot2.jsonl"),
        dir.path().join("whole.jsonl"),
    );
    std::fs::write(&first, format!("{chats}\n")).unwrap();
    std::fs::write(&second, format!("{tools}\n")).unwrap();
    std::fs::write(&whole, format!("{chats}\n{tools}\n")).unwrap();
    let import = |home: &Path, file: &Path| {
        json_of(ctx(home).args(["import", "traces", "--json"]).arg(file))
    };

    let one = tempfile::tempdir().unwrap();
    import(one.path(), &whole);
    let want = figures(one.path());
    let linked = format!("\"plan_id\":\"otel-{a}-{}\"", "0a".repeat(8));
    assert!(want.2.contains(&linked), "{}", want.2);

    // Chats first, then the run: linked to the chat the store holds.
    let split = tempfile::tempdir().unwrap();
    import(split.path(), &first);
    let report = import(split.path(), &second);
    assert_eq!(report["before_every_chat"], 0, "{report}");
    assert_eq!(report["no_chat_span"], 0, "{report}");
    assert_eq!(figures(split.path()), want);
    // The whole set again is already present, not a conflict.
    let again = import(split.path(), &whole);
    assert_eq!(again["already_present"], 4, "{again}");
    assert_eq!(figures(split.path()), want);

    // The run first: kept unlinked, said so, and linked when its chat arrives.
    let rev = tempfile::tempdir().unwrap();
    let only_run = dir.path().join("run.jsonl");
    std::fs::write(
        &only_run,
        format!(
            "{}\n",
            otel_line(vec![otel_tool(&a, &"1a".repeat(8), 2, "fs.search")])
        ),
    )
    .unwrap();
    let out = common::succeeded(ctx(rev.path()).args(["import", "traces"]).arg(&only_run));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("1 execute_tool span's trace has no chat span in the store"),
        "{said}"
    );
    let out = common::succeeded(ctx(rev.path()).args(["import", "traces"]).arg(&first));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("1 execute_tool span stored before now linked to a chat span"),
        "{said}"
    );
    import(rev.path(), &second);
    assert_eq!(figures(rev.path()), want);
    assert_eq!(import(rev.path(), &whole)["already_present"], 4);

    // A run whose trace's every stored chat started after it is said so, truly.
    let late = tempfile::tempdir().unwrap();
    let late_chat = dir.path().join("late.jsonl");
    std::fs::write(
        &late_chat,
        format!(
            "{}\n",
            otel_line(vec![otel_chat(&a, &"0c".repeat(8), 10, "mail.send")])
        ),
    )
    .unwrap();
    import(late.path(), &late_chat);
    let report = import(late.path(), &only_run);
    assert_eq!(report["before_every_chat"], 1, "{report}");
}

/// Tester 23 F4: a LiteLLM row whose status is `failure` but whose response still decodes
/// (a post-call guardrail or callback failed), and an OTel chat span whose status is ERROR,
/// were stored `ok` and counted as successes for their model. They are failed calls:
/// `http_error`, in the plan, its drift and the model's row alike.
#[test]
fn a_call_logged_as_failed_counts_as_failed_whatever_answer_it_logged() {
    let home = tempfile::tempdir().unwrap();
    let answer = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant",
                    "content": "{\"steps\":[{\"order\":1,\"tool\":\"fs.search\"}]}"}}]});
    let row = |id: &str, status: &str| {
        serde_json::json!({"request_id": id, "model": "f4-mini", "startTime": "2026-10-03T12:05:00",
            "status": status, "user": "alice",
            "messages": [{"role": "user", "content": "find the notes"}], "response": answer})
    };
    let spend = home.path().join("spend.jsonl");
    std::fs::write(
        &spend,
        // Tester 24 N7: a status is read in any case: "Success" is a success.
        format!(
            "{}\n{}\n{}\n",
            row("ok-1", "success"),
            row("fail-1", "failure"),
            row("ok-2", "Success")
        ),
    )
    .unwrap();
    common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&spend));
    let mut chat = otel_chat(&"ee".repeat(16), &"ff".repeat(8), 0, "fs.search");
    chat["attributes"][1]["value"]["stringValue"] = "f4-otel".into();
    chat["status"] = serde_json::json!({"code": 2, "message": "429 rate limited"});
    let spans = home.path().join("spans.jsonl");
    std::fs::write(&spans, format!("{}\n", otel_line(vec![chat]))).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "traces"]).arg(&spans));

    let listed = view(home.path(), "--plans", "litellm");
    let plans = listed["plans"].as_array().unwrap();
    let of = |id: &str| plans.iter().find(|p| p["id"] == id).unwrap().clone();
    assert_eq!(of("litellm-ok-1")["outcome"], "ok");
    assert_eq!(of("litellm-ok-2")["outcome"], "ok");
    let failed = of("litellm-fail-1");
    assert_eq!(failed["outcome"], "failed", "{failed}");
    assert_eq!(failed["failure_class"], "http_error", "{failed}");
    assert_eq!(failed["drift"], "failed", "{failed}");
    let otel = view(home.path(), "--plans", "otel");
    let span = &otel["plans"][0];
    assert_eq!(
        (&span["outcome"], &span["failure_class"]),
        (&"failed".into(), &"http_error".into()),
        "{span}"
    );
    let models = json_of(ctx(home.path()).args(["history", "--models", "--json"]));
    let row = |model: &str| {
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == model)
            .unwrap()
            .clone()
    };
    let mini = row("f4-mini");
    assert_eq!(
        (&mini["ok"], &mini["failed"]),
        (&2.into(), &1.into()),
        "{mini}"
    );
    assert_eq!(
        mini["failure_causes"],
        serde_json::json!([["http_error", 1]])
    );
    let otel = row("f4-otel");
    assert_eq!(
        (&otel["ok"], &otel["failed"]),
        (&0.into(), &1.into()),
        "{otel}"
    );
}

/// Tester 23 F5: an `intValue` that is not a 64-bit integer (`"1e3"`, `" 97"`, one past
/// i64) became null, the token count dropped without a word, where `-5` was refused naming
/// the span. Refused the same way: the line, the span, the attribute and what it holds.
#[test]
fn an_unreadable_int_value_is_refused_naming_its_attribute() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let file = home.path().join("spans.jsonl");
    for v in ["18446744073709551615", "1e3", " 97", "0x61"] {
        let mut chat = otel_chat(&"ab".repeat(16), &"cd".repeat(8), 0, "fs.search");
        chat["attributes"].as_array_mut().unwrap().push(
            serde_json::json!({"key": "gen_ai.usage.input_tokens", "value": {"intValue": v}}),
        );
        std::fs::write(&file, format!("{}\n", otel_line(vec![chat]))).unwrap();
        let err = import_refused(home.path(), "traces", &file);
        let want = format!(
            "{}: line 1, span 1: attribute 'gen_ai.usage.input_tokens': intValue \"{v}\" is \
             not a whole number",
            file.display()
        );
        assert!(err.contains(&want), "{want} in {err}");
        assert_eq!(counts(home.path()), before);
    }
}

/// Tester 23 F7: an `execute_tool` span whose status code was spelled otherwise than OTLP's
/// (`"ERROR"`, `"2"`, an unknown name, code 7) was read as a success, the plan `followed`.
/// Refused naming the span and quoting the code; OTLP's own spellings still read.
#[test]
fn an_unknown_span_status_code_is_refused_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("spans.jsonl");
    let (trace, chat_id) = ("44".repeat(16), "a4".repeat(8));
    let write = |code: serde_json::Value| {
        let mut run = otel_tool(&trace, &"b4".repeat(8), 2, "fs.search");
        run["status"] = serde_json::json!({ "code": code });
        let chat = otel_chat(&trace, &chat_id, 0, "fs.search");
        std::fs::write(&file, format!("{}\n", otel_line(vec![chat, run]))).unwrap();
    };
    let before = counts(home.path());
    for (code, shown) in [
        (serde_json::json!("ERROR"), "\"ERROR\""),
        (serde_json::json!("2"), "\"2\""),
        (
            serde_json::json!("STATUS_CODE_BOGUS"),
            "\"STATUS_CODE_BOGUS\"",
        ),
        (serde_json::json!(7), "7"),
    ] {
        write(code);
        let err = import_refused(home.path(), "traces", &file);
        let want = format!(
            "{}: line 1, span 2: field 'status.code' is {shown}; expected 0, 1 or 2",
            file.display()
        );
        assert!(err.contains(&want), "{want} in {err}");
        assert_eq!(counts(home.path()), before);
    }
    for (code, drift) in [
        (serde_json::json!("STATUS_CODE_OK"), "followed"),
        (serde_json::json!(1), "followed"),
        (serde_json::json!("STATUS_CODE_ERROR"), "partial"),
    ] {
        write(code.clone());
        let store = home.path().join(format!("s{code}.sqlite").replace('"', ""));
        common::succeeded(
            ctx(home.path())
                .arg("--store")
                .arg(&store)
                .args(["import", "traces"])
                .arg(&file),
        );
        let seen = json_of(
            ctx(home.path())
                .arg("--store")
                .arg(&store)
                .args(["history", "--drift", "--json", "--source", "otel"]),
        );
        assert_eq!(seen["plans"][0]["drift"], drift, "{code}: {seen}");
    }
}

/// Tester 23 F10: import errors that misstated what the file holds — `1e308` said as
/// 18446744073709551615, a time before 1970 as Unix seconds -1, a span's duration as its
/// end time, a numeric `request_id` as missing, a BOM in mid-file as "expected value".
/// Each says what the file holds, under the field that holds it.
#[test]
fn an_import_error_says_what_the_file_holds_under_its_own_field() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let file = home.path().join("in.jsonl");
    let row = |extra: serde_json::Value| {
        let mut row = serde_json::json!({"request_id": "r1", "model": "m",
            "startTime": "2026-10-03T12:05:00"});
        for (k, v) in extra.as_object().unwrap() {
            row[k] = v.clone();
        }
        row.to_string()
    };
    let refused = |kind: &str, text: String, says: &str| {
        std::fs::write(&file, text).unwrap();
        let err = import_refused(home.path(), kind, &file);
        let want = format!("{}: {says}", file.display());
        assert!(err.contains(&want), "{want} in {err}");
        assert_eq!(counts(home.path()), before);
    };
    refused(
        "litellm",
        format!(
            "{}\n",
            row(serde_json::json!({})).replace("\"model\"", "\"prompt_tokens\":1e308,\"model\"")
        ),
        "line 1: field 'prompt_tokens' is 1e+308; expected a whole number from 0 to 100000000",
    );
    refused(
        "litellm",
        format!(
            "{}\n",
            row(serde_json::json!({"startTime": "1969-12-31T23:59:59Z"}))
        ),
        "line 1: field 'startTime' is '1969-12-31T23:59:59Z'; expected a time from \
         1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z",
    );
    refused(
        "litellm",
        format!("{}\n", row(serde_json::json!({"request_id": 123}))),
        "line 1: field 'request_id' is 123, not a string",
    );
    refused(
        "litellm",
        format!(
            "{}\n\u{feff}{}\n",
            row(serde_json::json!({})),
            row(serde_json::json!({"request_id": "r2"}))
        ),
        "line 2: starts with a byte order mark (U+FEFF), which only a file's first line may hold",
    );
    let mut chat = otel_chat(&"ab".repeat(16), &"cd".repeat(8), 0, "fs.search");
    chat["startTimeUnixNano"] = "0".into();
    chat["endTimeUnixNano"] = "1791028801000000000".into();
    refused(
        "traces",
        format!("{}\n", otel_line(vec![chat])),
        "line 1, span 1: field 'endTimeUnixNano' is 1791028801000 ms after \
         'startTimeUnixNano'; a call lasts at most 604800000 ms (7 days)",
    );
}

/// Tester 23 F9 (white space): a model or request id with spaces around it was trimmed
/// without a word, so `" gpt-4o"` joined `gpt-4o`'s row and request ids `" abc"` and
/// `"abc"` collided. Refused naming the line and field, as `import plans` refuses such a
/// name, in both importers.
#[test]
fn a_name_with_spaces_around_it_is_refused_by_every_traffic_importer() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let file = home.path().join("in.jsonl");
    let refused = |kind: &str, text: String, says: &str| {
        std::fs::write(&file, text).unwrap();
        let err = import_refused(home.path(), kind, &file);
        let want = format!("{}: {says}", file.display());
        assert!(err.contains(&want), "{want} in {err}");
        assert_eq!(counts(home.path()), before);
    };
    let row = |id: &str, model: &str| serde_json::json!({"request_id": id, "model": model, "startTime": "2026-10-03T12:05:00"});
    refused(
        "litellm",
        format!("{}\n{}\n", row("abc", "m"), row(" abc", "m")),
        "line 2: field 'request_id' is ' abc', with spaces around it",
    );
    refused(
        "litellm",
        format!("{}\n", row("abc", "gpt-4o ")),
        "line 1: field 'model' is 'gpt-4o ', with spaces around it",
    );
    let mut chat = otel_chat(&"ab".repeat(16), &"cd".repeat(8), 0, "fs.search");
    chat["attributes"][1]["value"]["stringValue"] = " gpt-4o".into();
    refused(
        "traces",
        format!("{}\n", otel_line(vec![chat])),
        "line 1, span 1: attribute 'gen_ai.request.model' is ' gpt-4o', with spaces around it",
    );
    let run = otel_tool(&"ab".repeat(16), &"ce".repeat(8), 1, "fs.search ");
    refused(
        "traces",
        format!("{}\n", otel_line(vec![run])),
        "line 1, span 1: attribute 'gen_ai.tool.name' is 'fs.search ', with spaces around it",
    );
    // Without the spaces, each is taken.
    std::fs::write(&file, format!("{}\n", row("abc", "gpt-4o"))).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&file));
}

/// Tester 24 N3: an import error quoted a field's value whole: a 50 MB `spend` string made a
/// 50 MB line on stderr (and in the log). Every value an error quotes is cut as `quoted` cuts
/// it, with the bytes left out counted.
#[test]
fn an_import_error_quotes_a_huge_value_cut_and_counted() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("big.jsonl");
    let spend = "9".repeat(1_000_000);
    let row = serde_json::json!({"request_id": "a", "model": "m",
        "startTime": "2026-10-03T12:00:00", "spend": spend});
    std::fs::write(&file, format!("{row}\n")).unwrap();
    let err = import_refused(home.path(), "litellm", &file);
    assert!(err.len() < 2_000, "{} bytes on stderr", err.len());
    assert!(err.contains("more bytes), not a number"), "{err}");
    let plan = serde_json::json!({"id": "p", "at": "2026-10-03T12:00:00Z", "caller": "c",
        "model": "m", "intent": "i", "steps": [], "outcome": "o".repeat(1_000_000)});
    std::fs::write(&file, format!("{plan}\n")).unwrap();
    let err = import_refused(home.path(), "plans", &file);
    assert!(err.len() < 2_000, "{} bytes on stderr", err.len());
    assert!(
        err.contains("more bytes) is not ok, guarded or failed"),
        "{err}"
    );
}

/// Tester 31 F3: Ctrl-C during an import ended on its last progress line ("50000 rows
/// read…"), as if those rows were in. It says nothing was imported, exits 128 + 2, and
/// nothing was.
#[test]
fn an_interrupted_import_says_nothing_was_imported() {
    use std::io::{BufRead, Write};
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let file = home.path().join("spend.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for i in 0..300_000 {
        writeln!(
            out,
            r#"{{"request_id": "cut-{i}", "model": "m", "startTime": "2026-10-03T12:05:00", "messages": [{{"role": "user", "content": "find notes {i}"}}]}}"#
        )
        .unwrap();
    }
    out.flush().unwrap();
    drop(out);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .args(["import", "litellm"])
        .arg(&file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    // Past the first progress line: the import is under way.
    while !said.contains("rows read") {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        said.push_str(&line);
    }
    assert!(said.contains("rows read"), "{said}");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    assert!(
        rest.contains("ctxconsole: interrupted by SIGINT: nothing from")
            && rest.contains("spend.jsonl was imported"),
        "{said}{rest}"
    );
    assert_eq!(counts(home.path()), before);
}

/// `json` with `extra` (`"key": value` text) written in before the key `at` (in its
/// object), or first in the outermost object when `at` is empty: JSON values cannot hold a
/// key twice, so it is added as text.
fn with_key_at(json: &str, at: &str, extra: &str) -> String {
    let place = if at.is_empty() {
        json.find('{').unwrap() + 1
    } else {
        json.find(at).unwrap_or_else(|| panic!("{at} in {json}"))
    };
    format!("{}{extra},{}", &json[..place], &json[place..])
}

/// Tester 31 F1: a key given twice in a spend log row or a span — or an attribute listed
/// twice — was read last-wins without a word, so the store held another model or id than a
/// first-wins reader (jq, a log viewer) shows. Every traffic reader refuses it, naming the
/// record and the key, and nothing is kept; a key no reader uses may repeat.
#[test]
fn a_key_given_twice_in_traffic_is_refused_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let before = counts(home.path());
    let file = home.path().join("dup.jsonl");
    // The first of two rows: a success, with an answer.
    let rows = spend_log(2, "gpt-4o-mini");
    let row = rows.lines().next().unwrap();
    let span = otel_line(vec![otel_chat(
        &"ab".repeat(16),
        &"cd".repeat(8),
        0,
        "fs.search",
    )]);
    let mut twice_listed = otel_chat(&"ab".repeat(16), &"cd".repeat(8), 0, "fs.search");
    twice_listed["attributes"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"key": "gen_ai.request.model", "value": {"stringValue": "evil"}}));
    let twice_listed = otel_line(vec![twice_listed]);
    let spans_answer = serde_json::json!([{"role": "assistant", "parts": [
        {"type": "tool_call", "name": "fs.search", "arguments": {}}]}])
    .to_string();
    let doubled_answer = with_key_at(&spans_answer, "", r#""parts":[]"#);
    let span_doubled_answer = span.replace(
        &serde_json::to_string(&spans_answer).unwrap(),
        &serde_json::to_string(&doubled_answer).unwrap(),
    );
    assert_ne!(span_doubled_answer, span);
    for (kind, line, said) in [
        (
            "litellm",
            with_key_at(row, "", r#""model":"evil-model""#),
            "duplicate field `model`",
        ),
        (
            "litellm",
            with_key_at(row, "", r#""request_id":"r-dup""#),
            "duplicate field `request_id`",
        ),
        (
            "litellm",
            with_key_at(row, r#""role":"assistant""#, r#""tool_calls":[]"#),
            "duplicate field `tool_calls`",
        ),
        (
            "traces",
            with_key_at(
                &span,
                "\"traceId\"",
                &format!(r#""traceId":"{}""#, "ef".repeat(16)),
            ),
            "duplicate field `traceId`",
        ),
        (
            "traces",
            twice_listed,
            "duplicate attribute `gen_ai.request.model`",
        ),
        (
            "traces",
            with_key_at(&span, "", r#""resourceSpans":[]"#),
            "duplicate field `resourceSpans`",
        ),
        ("traces", span_doubled_answer, "duplicate field `parts`"),
        // Tester 33 F5: inside an attribute's value, and a value of two kinds.
        (
            "traces",
            span.replace(
                r#"{"stringValue":"m"}"#,
                r#"{"stringValue":"m","stringValue":"evil"}"#,
            ),
            "duplicate field `stringValue`",
        ),
        (
            "traces",
            span.replace(
                r#"{"stringValue":"m"}"#,
                r#"{"stringValue":"m","intValue":"5"}"#,
            ),
            "attribute `gen_ai.request.model`: its value holds 2 kinds (stringValue, intValue)",
        ),
        // A tool call's arguments given as a value.
        (
            "litellm",
            row.replace(
                r#""arguments":{"topic":"launch"}"#,
                r#""arguments":{"topic":"launch","topic":"rm"}"#,
            ),
            "duplicate field `topic`",
        ),
    ] {
        assert!(
            line != span && line != row,
            "{said}: the case changed nothing"
        );
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let err = import_refused(home.path(), kind, &file);
        let at = format!("{}: line 1", file.display());
        assert!(err.contains(&at) && err.contains(said), "{said} in {err}");
        // Tester 33 F6: JSON text holding a key twice is JSON that does not read.
        assert!(!err.contains("is not JSON"), "{err}");
        assert_eq!(counts(home.path()), before, "{line}");
    }
    // A key nothing reads may be given twice: it changes nothing stored.
    for (kind, line) in [
        (
            "litellm",
            with_key_at(row, "", r#""api_base":"x","api_base":"y""#),
        ),
        (
            "traces",
            with_key_at(&span, "\"traceId\"", r#""kind":1,"kind":2"#),
        ),
    ] {
        std::fs::write(&file, format!("{line}\n")).unwrap();
        common::succeeded(ctx(home.path()).args(["import", kind]).arg(&file));
    }
}

/// Tester 34 F10: `history show` cut a tool call's 200 KB arguments at 400 characters with
/// a bare `…`, where the console said how much was left and where it is whole. Both cut a
/// section by one rule.
#[test]
fn history_show_says_what_it_cut_of_the_answer_and_where_it_is_whole() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("big.jsonl");
    let rows = spend_log(2, "gpt-4o-mini");
    let big = "A".repeat(5_000);
    let row = rows
        .lines()
        .next()
        .unwrap()
        .replace(r#"{"topic":"launch"}"#, &format!(r#"{{"topic":"{big}"}}"#));
    std::fs::write(&file, format!("{row}\n")).unwrap();
    common::succeeded(ctx(home.path()).args(["import", "litellm"]).arg(&file));
    let id = "litellm-req-00";
    let out = common::succeeded(ctx(home.path()).args(["history", "show", id]));
    let text = String::from_utf8(out.stdout).unwrap();
    let call = text
        .lines()
        .find(|l| l.starts_with("  blog.draft "))
        .unwrap_or_else(|| panic!("{text}"));
    // 400 characters of its 5,025 kept, as the console keeps them.
    assert!(call.ends_with('…') && call.chars().count() == 401, "{call}");
    assert!(
        text.contains(&format!(
            "… 4,625 more bytes: ctxconsole history show {id} --json (answer)"
        )),
        "{text}"
    );
}
