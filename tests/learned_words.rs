//! Issue 19 item 4 through the binary: the words of past intents whose followed plans used
//! a tool (its learned words) rank that tool in `preview`, `compact` and `send`, through
//! the same store read as the history prior; `--no-history` turns them off with the prior.

mod common;

use common::llm_server::LlmServer;
use common::{ctx, json_of, succeeded};
use serde_json::Value;
use std::path::Path;

/// A word no catalog entry says: only past intents teach it — two different intents, since
/// one request sent again is one intent and teaches nothing.
const TAUGHT: &str = "zorbify the quarterly deck outline";
const TAUGHT_TOO: &str = "zorbify the board review talk";
/// Shares only the taught word with the past intents (Jaccard below the prior's 0.3), so
/// the prior does not reach it: what lifts the tool is the learned word alone.
const ASKED: &str = "zorbify it for me";
const TOOL: &str = "slides.outline";

/// `n` plans of `intent` using `tool`, each followed by an execution of it, imported into
/// `store`.
fn followed(home: &Path, store: &str, n: usize, intent: &str, tool: &str) {
    let (mut plans, mut execs) = (String::new(), String::new());
    // Ids (and times) of their own per intent, so intents can be imported one after another.
    let slug = intent.replace(' ', "-");
    let base = 1_791_000_000 + intent.len() as i64 * 100_000;
    for k in 0..n {
        let at = base + k as i64 * 600;
        plans.push_str(
            &serde_json::json!({"id": format!("l-{slug}-{k}"), "at": at, "caller": "agent",
                "model": "m", "intent": intent, "steps": [{"order": 1, "tool": tool}]})
            .to_string(),
        );
        plans.push('\n');
        execs.push_str(
            &serde_json::json!({"at": at + 10, "caller": "agent",
                "plan_id": format!("l-{slug}-{k}"), "tool": tool})
            .to_string(),
        );
        execs.push('\n');
    }
    for (kind, text) in [("plans", plans), ("executions", execs)] {
        let file = home.join(format!("{kind}.jsonl"));
        std::fs::write(&file, text).unwrap();
        succeeded(ctx(home).args(["import", kind, file.to_str().unwrap(), "--store", store]));
    }
}

fn top(v: &Value) -> &Value {
    &v["ranking"]["top"]
}

fn learned_points(entry: &Value) -> f64 {
    entry["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["field"] == "learned")
        .map(|m| m["points"].as_f64().unwrap())
        .sum()
}

#[test]
fn a_word_only_past_intents_used_lifts_their_tool_and_no_history_turns_it_off() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("own.sqlite");
    let store = store.to_str().unwrap();
    let preview = |extra: &[&str]| {
        json_of(
            ctx(home.path())
                .args([
                    "preview", ASKED, "--model", "test/ok", "--json", "--store", store,
                ])
                .args(extra),
        )
    };
    // An empty store teaches nothing: the word matches no entry.
    let before = preview(&[]);
    assert!(
        top(&before)
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != TOOL),
        "{:#}",
        top(&before)
    );
    followed(home.path(), store, 2, TAUGHT, TOOL);
    followed(home.path(), store, 1, TAUGHT_TOO, TOOL);
    let after = preview(&[]);
    let first = &top(&after)[0];
    assert_eq!(first["name"], TOOL, "{:#}", top(&after));
    assert!(learned_points(first) > 0.0, "{first:#}");
    assert!(
        first["prior"].is_null(),
        "the prior does not reach it: {first:#}"
    );
    // --no-prior is about the past-plans part of the request, not the ranking.
    assert_eq!(top(&preview(&["--no-prior"]))[0]["name"], TOOL);
    // --no-history reads nothing from the store: no learned words either.
    let off = preview(&["--no-history"]);
    assert!(
        top(&off)
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["name"] != TOOL),
        "{:#}",
        top(&off)
    );
    // compact ranks the same way: the tool is kept first in its cut order.
    let compact = json_of(ctx(home.path()).args([
        "compact", "--model", "test/ok", "--prompt", ASKED, "--json", "--store", store,
    ]));
    let rank = compact["entries"]
        .as_array()
        .or_else(|| compact["compaction"]["entries"].as_array())
        .and_then(|es| es.iter().find(|e| e["name"] == TOOL))
        .map(|e| e["rank"].clone());
    assert_eq!(rank, Some(Value::from(1)), "{compact:#}");
}

#[test]
fn send_sends_the_request_preview_shows_with_learned_words() {
    let server = LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    let store = home.path().join("own.sqlite");
    let store = store.to_str().unwrap();
    followed(home.path(), store, 2, TAUGHT, TOOL);
    followed(home.path(), store, 1, TAUGHT_TOO, TOOL);
    let preview = json_of(ctx(home.path()).args([
        "preview",
        ASKED,
        "--model",
        "test/ok-json",
        "--json",
        "--store",
        store,
    ]));
    assert_eq!(top(&preview)[0]["name"], TOOL);
    json_of(ctx(home.path()).env(KEY_ENV, "sk-test").args([
        "send",
        ASKED,
        "--model",
        "test/ok-json",
        "--json",
        "--store",
        store,
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0].body["messages"].to_string(),
        preview["request"]["messages"].to_string()
    );
}
