//! A gateway's real traffic imported as a user runs it: OpenTelemetry GenAI spans
//! (`import traces`) and LiteLLM spend logs (`import litellm`) become plans and executions
//! that `history` shows, measures and filters by source; a second import adds nothing; a
//! broken record is named by its position and nothing is kept. The sample files were
//! written from each format's published spec (tests/data/README.md).

use std::path::Path;

mod common;
use common::{counts, ctx, json_of};

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
    assert_eq!(row["drift"], "followed", "{row}");
    assert_eq!(
        row["executed"],
        serde_json::json!(["get_weather", "memory.store"])
    );

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
    assert_eq!(gpt["followed"], 1);

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
