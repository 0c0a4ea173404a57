//! Issue 18 items 7 and 2 through the binary: the past-plans part of the request (only
//! where the store has the evidence, off with `--no-prior`, counted against the window,
//! sent as previewed), and `send --compare` (the arms the in-process server receives,
//! stored linked, kept through export and import).

mod common;

use common::llm_server::LlmServer;
use common::{ctx, json_of, succeeded};
use serde_json::Value;
use std::path::Path;

const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";
const KEY: &str = "sk-test-SECRET-0451-do-not-leak";
const HEADING: &str = "Steps produced for similar intents; refine if needed:";
/// An intent the sample history has no followed plans for.
const BLOG: &str = "remember this launch note, draft a blog from it and make an illustration";
/// One it has nine followed plans for, all `repo.clone → repo.test`.
const CLONE: &str = "clone the docs site and run its tests";

fn workspace(server: &LlmServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    home
}

/// `n` plans of `intent` planning `tools`, each followed by executions of those tools in
/// order, as two JSON Lines files in `dir`.
fn followed(dir: &Path, first: usize, n: usize, intent: &str, tools: &[&str]) -> (String, String) {
    let (mut plans, mut execs) = (String::new(), String::new());
    for k in first..first + n {
        let at = 1_791_000_000 + k as i64 * 600;
        let steps: Vec<Value> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"order": i + 1, "tool": t}))
            .collect();
        plans.push_str(
            &serde_json::json!({"id": format!("f-{k}"), "at": at, "caller": "agent",
                "model": "m", "intent": intent, "steps": steps})
            .to_string(),
        );
        plans.push('\n');
        for (i, t) in tools.iter().enumerate() {
            execs.push_str(
                &serde_json::json!({"at": at + 10 + i as i64, "caller": "agent",
                    "plan_id": format!("f-{k}"), "tool": t})
                .to_string(),
            );
            execs.push('\n');
        }
    }
    let p = dir.join(format!("plans-{first}.jsonl"));
    let e = dir.join(format!("execs-{first}.jsonl"));
    std::fs::write(&p, plans).unwrap();
    std::fs::write(&e, execs).unwrap();
    (p.display().to_string(), e.display().to_string())
}

fn import(home: &Path, store: &str, (plans, execs): (String, String)) {
    import_file(home, "plans", &plans, store);
    import_file(home, "executions", &execs, store);
}

/// `import KIND FILE --store STORE`, which must succeed.
fn import_file(home: &Path, kind: &str, file: &str, store: &str) {
    succeeded(ctx(home).args(["import", kind, file, "--store", store]));
}

fn part<'a>(p: &'a Value, name: &str) -> Option<&'a Value> {
    p["request"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["part"] == name)
}

#[test]
fn the_prior_appears_only_where_the_store_has_the_evidence_and_no_prior_removes_it() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("own.sqlite");
    let store = store.to_str().unwrap();
    let preview = |extra: &[&str]| {
        let mut cmd = ctx(home.path());
        cmd.args([
            "preview", CLONE, "--model", "test/ok", "--json", "--store", store,
        ])
        .args(extra);
        json_of(&mut cmd)
    };
    // An empty store: no evidence, no part.
    let none = preview(&[]);
    assert!(none["past_steps"].is_null());
    assert!(part(&none, "prior").is_none());
    // One followed plan is not evidence.
    import(
        home.path(),
        store,
        followed(home.path(), 0, 1, CLONE, &["repo.clone", "repo.test"]),
    );
    assert!(preview(&[])["past_steps"].is_null());
    // A second that agrees step for step is; a different decomposition followed once is
    // not sent.
    import(
        home.path(),
        store,
        followed(
            home.path(),
            1,
            1,
            "Clone the docs site, run its tests",
            &["repo.clone", "repo.test"],
        ),
    );
    import(
        home.path(),
        store,
        followed(home.path(), 2, 1, CLONE, &["repo.clone", "cmd.run"]),
    );
    let with = preview(&[]);
    let prior = &with["past_steps"];
    assert_eq!(prior["followed"], 3, "{prior:#}");
    assert_eq!(prior["sent"].as_array().unwrap().len(), 1);
    assert_eq!(
        prior["sent"][0]["tools"],
        serde_json::json!(["repo.clone", "repo.test"])
    );
    assert_eq!(
        prior["sent"][0]["plan_ids"],
        serde_json::json!(["f-1", "f-0"])
    );
    let p = part(&with, "prior").expect("its own part");
    assert_eq!(p["tokens"], prior["tokens"]);
    assert!(
        with["request"]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "{HEADING}\n- repo.clone → repo.test (followed in 2 past plans)"
            ))
    );
    // Counted against the window before the catalog's allowance.
    let off = preview(&["--no-prior"]);
    assert!(off["past_steps"].is_null() && part(&off, "prior").is_none());
    // The part among the prompt's, and the blank line before it in the framing.
    let tokens = prior["tokens"].as_u64().unwrap();
    let allowance = |v: &Value, k: &str| v["compaction"]["allowance"][k].as_u64().unwrap();
    assert_eq!(
        allowance(&with, "prompt_tokens"),
        allowance(&off, "prompt_tokens") + tokens
    );
    let blank_line = allowance(&with, "framing_tokens") - allowance(&off, "framing_tokens");
    assert!(blank_line <= 1);
    assert_eq!(
        allowance(&with, "tokens") + tokens + blank_line,
        allowance(&off, "tokens")
    );
    // --no-history reads nothing from the store: no prior either.
    assert!(preview(&["--no-history"])["past_steps"].is_null());
    // The text names the part, its tokens and the plans it came from.
    let out = ctx(home.path())
        .args(["preview", CLONE, "--model", "test/ok", "--store", store])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PRIOR  ") && text.contains("repo.clone → repo.test — 2 plans: f-1, f-0"),
        "{text}"
    );
    assert!(
        text.contains("\n  prior "),
        "a row of the parts table: {text}"
    );
}

#[test]
fn send_sends_the_prior_exactly_as_previewed() {
    let server = LlmServer::start();
    let home = workspace(&server);
    // The workspace's own store holds the sample history: nine followed plans of CLONE.
    let preview =
        json_of(ctx(home.path()).args(["preview", CLONE, "--model", "test/ok-json", "--json"]));
    assert!(
        part(&preview, "prior").is_some(),
        "{:#}",
        preview["past_steps"]
    );
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        CLONE,
        "--model",
        "test/ok-json",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let body = &received[0].body;
    assert_eq!(
        body["messages"].to_string(),
        preview["request"]["messages"].to_string()
    );
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(HEADING)
    );
    assert_eq!(
        v["results"][0]["prior_tokens"],
        preview["past_steps"]["tokens"]
    );
    // The stored plan keeps which past plans its prior came from.
    let id = v["results"][0]["stored_id"].as_str().unwrap();
    let row = json_of(ctx(home.path()).args(["history", "show", id, "--json"]));
    assert_eq!(
        row["trim_record"]["past_steps"]["sent"],
        preview["past_steps"]["sent"]
    );
    assert!(row["arm"].is_null(), "no comparison, no arm");

    // --no-prior sends without it.
    json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        CLONE,
        "--model",
        "test/ok-json",
        "--no-prior",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert!(
        !received[1].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(HEADING)
    );
}

/// The done-when of item 2: `--compare full` sends two requests, and only the full one
/// carries the entries the planner removed.
#[test]
fn compare_full_sends_two_requests_and_only_the_full_one_carries_what_the_planner_removed() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let preview = |arm: &str| {
        json_of(ctx(home.path()).args([
            "preview",
            BLOG,
            "--model",
            "test/ok-json",
            "--arm",
            arm,
            "--json",
        ]))
    };
    let (compacted, full) = (preview("compacted"), preview("full"));
    assert_eq!(full["arm"], "full");
    let removed: Vec<String> = compacted["compaction"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fate"] == "removed_by_planner")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert!(removed.len() > 5, "{removed:?}");
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        BLOG,
        "--model",
        "test/ok-json",
        "--compare",
        "full",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "one request per arm");
    let text = |b: &Value| b["messages"].to_string();
    // An entry is sent when the catalog has a line opening with it.
    let sends = |b: &Value, name: &str| {
        b["messages"].as_array().unwrap().iter().any(|m| {
            let c = m["content"].as_str().unwrap();
            c.contains(&format!("\n{{\"name\":\"{name}\""))
                || c.contains(&format!("\n{{\"id\":\"{name}\""))
        })
    };
    let full_body = received
        .iter()
        .find(|r| text(&r.body) == text(&full["request"]))
        .expect("the full arm, as `preview --arm full` shows it");
    let compacted_body = received
        .iter()
        .find(|r| text(&r.body) == text(&compacted["request"]))
        .expect("the compacted arm, as `preview` shows it");
    for name in &removed {
        assert!(sends(&full_body.body, name), "{name} in full");
        assert!(
            !sends(&compacted_body.body, name),
            "{name} not in compacted"
        );
    }
    // The check sees what is sent: the compacted arm's kept entries are found in it.
    for name in compacted["compaction"]["kept"].as_array().unwrap() {
        assert!(
            sends(&compacted_body.body, name.as_str().unwrap()),
            "{name}"
        );
    }
    // Every entry of the catalog goes in the full arm.
    for e in full["compaction"]["entries"].as_array().unwrap() {
        assert!(sends(&full_body.body, e["name"].as_str().unwrap()), "{e}");
    }
    let results = v["results"].as_array().unwrap();
    assert_eq!(v["arms"], serde_json::json!(["compacted", "full"]));
    assert_eq!(results[0]["arm"], "compacted");
    assert_eq!(results[1]["arm"], "full");
    assert!(
        results[1]["request"]["input_tokens"].as_u64()
            > results[0]["request"]["input_tokens"].as_u64()
    );
    // Stored linked.
    let group = v["compare_group"].as_str().unwrap();
    for r in results {
        let row = json_of(ctx(home.path()).args([
            "history",
            "show",
            r["stored_id"].as_str().unwrap(),
            "--json",
        ]));
        assert_eq!(row["arm"], r["arm"]);
        assert_eq!(row["compare_group"], group);
        let arms: Vec<&str> = row["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["arm"].as_str().unwrap())
            .collect();
        assert_eq!(arms, ["compacted", "full"]);
    }
}

#[test]
fn arms_side_by_side_per_model_stored_linked_and_kept_through_export_and_import() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let out = ctx(home.path())
        .env(KEY_ENV, KEY)
        .args([
            "send",
            CLONE,
            "--model",
            "test/ok-json",
            "--model",
            "test/hallucinated",
            "--compare",
            "no-prior",
            "--compare",
            "no-hint",
            "--compare",
            "no-prior",
            "--caller",
            "ab",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        6,
        "2 models × 3 arms"
    );
    for needle in [
        "test/ok-json [compacted]",
        "test/ok-json [no-prior]",
        "test/hallucinated [no-hint]",
        "catalog sent",
        "prior",
        "A/B on test/ok-json, against compacted:",
        "A/B on test/hallucinated, against compacted:",
        "no-prior   both valid, same steps",
        "stored linked as comparison cmp-",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    // Which request carried what.
    let received = server.requests.lock().unwrap().clone();
    let with_prior = received
        .iter()
        .filter(|r| r.body["messages"].to_string().contains(HEADING))
        .count();
    let with_hint = received
        .iter()
        .filter(|r| r.body["messages"].to_string().contains("[Context: "))
        .count();
    assert_eq!(with_prior, 4, "compacted and no-hint carry the prior");
    assert_eq!(with_hint, 4, "compacted and no-prior carry the hint");

    // `history` shows the arm.
    let listed = ctx(home.path())
        .args(["history", "--plans", "--caller", "ab"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(" arm ") && listed.contains("no-hint"),
        "{listed}"
    );
    let plans = json_of(ctx(home.path()).args(["history", "--plans", "--caller", "ab", "--json"]));
    let ids: Vec<String> = plans["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 6);
    let shown = ctx(home.path())
        .args(["history", "show", &ids[0]])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("arms of this comparison (6)") && shown.contains("(this)"),
        "{shown}"
    );

    // Export, import into a new store: the arms and their link survive, and a second
    // import finds them already present.
    let exported = home.path().join("plans.jsonl");
    let out = ctx(home.path())
        .args(["history", "export", "--out", exported.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines = std::fs::read_to_string(&exported).unwrap();
    assert_eq!(lines.matches("\"compare_group\":\"cmp-").count(), 6);
    let other = home.path().join("other.sqlite");
    let other = other.to_str().unwrap();
    for _ in 0..2 {
        import_file(home.path(), "plans", exported.to_str().unwrap(), other);
    }
    let before = json_of(ctx(home.path()).args(["history", "show", &ids[0], "--json"]));
    let after =
        json_of(ctx(home.path()).args(["history", "show", &ids[0], "--json", "--store", other]));
    assert_eq!(after["arm"], before["arm"]);
    assert_eq!(after["compare_group"], before["compare_group"]);
    assert_eq!(after["arms"], before["arms"]);
    assert_eq!(after["arms"].as_array().unwrap().len(), 6);
}

#[test]
fn an_arm_that_is_not_one_is_refused_naming_the_arms() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["send", BLOG, "--model", "m", "--compare", "compacted"][..],
        &["send", BLOG, "--model", "m", "--compare", "half"][..],
        &["preview", BLOG, "--arm", "no_prior"][..],
    ] {
        let out = ctx(home.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("compacted") || err.contains("no-hint"),
            "{err}"
        );
    }
    // An imported plan naming no arm is refused at its line.
    let file = home.path().join("bad.jsonl");
    std::fs::write(
        &file,
        r#"{"at":1,"caller":"c","model":"m","intent":"x","steps":[{"order":1,"tool":"t"}],"arm":"half","compare_group":"g"}"#,
    )
    .unwrap();
    let out = ctx(home.path())
        .args(["import", "plans", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1") && err.contains("half"), "{err}");
}

/// Tester 50 F13: a comparison none of whose arms ran stored nothing, yet said "stored
/// linked as comparison cmp-…" and gave a `compare_group`.
#[test]
fn a_comparison_that_stored_nothing_names_no_group() {
    let server = LlmServer::start();
    let home = workspace(&server);
    // The key's variable is unset: no arm can be sent.
    let args = ["send", BLOG, "--model", "test/ok-json", "--compare", "full"];
    let out = ctx(home.path())
        .env_remove(KEY_ENV)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("stored linked"), "{text}");
    let out = ctx(home.path())
        .env_remove(KEY_ENV)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["compare_group"], Value::Null, "{v}");
    assert_eq!(server.requests.lock().unwrap().len(), 0);
}

/// A comparison with a baseline: the baseline is asked once, unaided and without the
/// past-plans part, in no comparison; every arm's plan is stored with its gap signal.
#[test]
fn a_baseline_beside_a_comparison_is_in_no_arm_and_every_arm_gets_its_gap() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        CLONE,
        "--model",
        "test/ok-json",
        "--compare",
        "no-prior",
        "--baseline",
        "test/ok",
        "--json",
    ]));
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 3, "two arms and the baseline");
    let to_baseline = received.iter().find(|r| r.body["model"] == "ok").unwrap();
    assert!(!to_baseline.body["messages"].to_string().contains(HEADING));
    let baseline = json_of(ctx(home.path()).args([
        "history",
        "show",
        v["baseline"]["stored_id"].as_str().unwrap(),
        "--json",
    ]));
    assert!(baseline["arm"].is_null() && baseline["compare_group"].is_null());
    assert!(baseline["arms"].is_null());
    let gaps = v["gaps"].as_array().unwrap();
    let labels: Vec<&str> = gaps.iter().map(|g| g["model"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["test/ok-json [compacted]", "test/ok-json [no-prior]"]
    );
    for r in v["results"].as_array().unwrap() {
        let row = json_of(ctx(home.path()).args([
            "history",
            "show",
            r["stored_id"].as_str().unwrap(),
            "--json",
        ]));
        assert_eq!(
            row["arms"].as_array().unwrap().len(),
            2,
            "the baseline is not an arm"
        );
        assert!(row["gap_signal"].is_object(), "{row:#}");
    }
}

/// A plan ctxconsole sent itself is a trial no agent was handed: stored with source `sent`,
/// and its `ignored` drift (nothing executed it) is no evidence against its tools — the
/// ranking for the same intent is what it was before the sends. Once an agent records
/// executions against it, it counts like any plan.
#[test]
fn plans_sent_from_here_do_not_sink_their_tools_until_an_agent_runs_them() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let store = home.path().join("own.sqlite");
    let store = store.to_str().unwrap();
    let preview = || {
        json_of(ctx(home.path()).args([
            "preview",
            BLOG,
            "--model",
            "test/ok-json",
            "--json",
            "--store",
            store,
        ]))
    };
    let before = preview();
    for _ in 0..3 {
        json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
            "send",
            BLOG,
            "--model",
            "test/ok-json",
            "--json",
            "--store",
            store,
        ]));
    }
    let sent =
        json_of(ctx(home.path()).args(["history", "--source", "sent", "--json", "--store", store]));
    let rows = sent["plans"].as_array().expect("plans");
    assert_eq!(rows.len(), 3, "{sent:#}");
    assert!(rows.iter().all(|r| r["drift"] == "ignored"), "{sent:#}");
    let after = preview();
    assert_eq!(before["ranking"], after["ranking"]);
    // An agent runs one of them: now it is evidence, and its tools are lifted.
    let id = rows[0]["id"].as_str().unwrap();
    let execs = home.path().join("execs.jsonl");
    std::fs::write(
        &execs,
        format!(
            "{{\"at\":{at},\"caller\":\"console\",\"plan_id\":\"{id}\",\"tool\":\"builtin.remember-and-blog\"}}\n\
             {{\"at\":{at2},\"caller\":\"console\",\"plan_id\":\"{id}\",\"tool\":\"image.generate\"}}\n",
            at = rows[0]["at"].as_i64().unwrap() + 5,
            at2 = rows[0]["at"].as_i64().unwrap() + 6,
        ),
    )
    .unwrap();
    import_file(home.path(), "executions", execs.to_str().unwrap(), store);
    let run = preview();
    let prior_of = |v: &Value, name: &str| {
        v["ranking"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| e["prior"].clone())
    };
    assert!(
        prior_of(&run, "image.generate").is_some_and(|p| !p.is_null()),
        "{:#}",
        run["ranking"]
    );
}

/// Tester 6 F8 (repro B): six plans whose only step was executed and failed every time were
/// `followed`, so the prior lifted the failing tool and the past-plans part told the model
/// to use it. Now they lift nothing and send nothing; the same plans run well still do.
#[test]
fn failed_executions_neither_lift_a_tool_nor_reach_the_prior_part() {
    const ROTATE: &str = "rotate the api keys for staging";
    let prior_of = |ok: bool| {
        let home = tempfile::tempdir().unwrap();
        let store = home.path().join("p.sqlite");
        let store = store.to_str().unwrap();
        let (mut plans, mut execs) = (String::new(), String::new());
        for k in 0..6 {
            let at = 1_791_000_000 + k * 86_400;
            plans.push_str(&format!(
                "{}\n",
                serde_json::json!({"id": format!("pr-{k}"), "at": at, "caller": "agent",
                    "model": "m", "intent": ROTATE,
                    "steps": [{"order": 1, "tool": "cmd.process_list"}]})
            ));
            execs.push_str(&format!(
                "{}\n",
                serde_json::json!({"at": at + 30, "caller": "agent", "ok": ok,
                    "plan_id": format!("pr-{k}"), "tool": "cmd.process_list"})
            ));
        }
        let (p, e) = (home.path().join("p.jsonl"), home.path().join("e.jsonl"));
        std::fs::write(&p, plans).unwrap();
        std::fs::write(&e, execs).unwrap();
        import(
            home.path(),
            store,
            (p.display().to_string(), e.display().to_string()),
        );
        let v = json_of(ctx(home.path()).args([
            "preview", ROTATE, "--model", "test/ok", "--json", "--store", store,
        ]));
        let lift = v["ranking"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "cmd.process_list")
            .and_then(|e| e["prior"]["points"].as_f64())
            .unwrap_or(0.0);
        (lift, v["past_steps"].clone())
    };
    let (lift, past) = prior_of(true);
    assert!(lift > 0.0 && !past.is_null(), "{lift} {past}");
    let (lift, past) = prior_of(false);
    assert!(lift <= 0.0, "six failures lifted the tool by {lift}");
    assert!(past.is_null(), "{past}");
}

/// Tester 8 F10: replaying the `full` arm of a comparison sent the compacted request, and no
/// line said so. A replay now rebuilds the arm its original was (as `preview --arm` builds
/// it) and says so; the compacted arm replays as before.
#[test]
fn a_replayed_arm_is_rebuilt_as_that_arm_and_says_so() {
    let server = LlmServer::start();
    let home = workspace(&server);
    let v = json_of(ctx(home.path()).env(KEY_ENV, KEY).args([
        "send",
        BLOG,
        "--model",
        "test/ok-json",
        "--compare",
        "full",
        "--json",
    ]));
    let results = v["results"].as_array().unwrap();
    let full_arm = json_of(ctx(home.path()).args([
        "preview",
        BLOG,
        "--model",
        "test/ok-json",
        "--arm",
        "full",
        "--json",
    ]));
    for r in results {
        // Given for every arm, false included (tester 8 F16).
        assert_eq!(r["same_as_compacted"], false, "{r:#}");
        let id = r["stored_id"].as_str().unwrap();
        let replay = json_of(
            ctx(home.path())
                .env(KEY_ENV, KEY)
                .args(["replay", id, "--json"]),
        );
        let again = &replay["replays"][0];
        let notes = again["rebuild_notes"].to_string();
        if r["arm"] == "full" {
            let previewed = full_arm["compaction"]["kept"].as_array().unwrap().len();
            for entries in [&r["request"]["catalog_entries"], &previewed.into()] {
                assert_eq!(&again["request"]["catalog_entries"], entries, "{again:#}");
            }
            assert!(
                notes.contains("the A/B arm 'full'") && notes.contains("replayed as that arm"),
                "{notes}"
            );
            // A replay of that replay sends the same arm (tester 9 T9-15).
            let replay_id = again["stored_id"].as_str().unwrap();
            let twice = json_of(
                ctx(home.path())
                    .env(KEY_ENV, KEY)
                    .args(["replay", replay_id, "--json"]),
            );
            let twice = &twice["replays"][0];
            assert_eq!(
                twice["request"]["catalog_entries"], again["request"]["catalog_entries"],
                "{twice:#}"
            );
            assert!(
                twice["rebuild_notes"]
                    .to_string()
                    .contains("the A/B arm 'full'")
            );
        } else {
            assert!(!notes.contains("A/B arm"), "{notes}");
        }
    }
}
