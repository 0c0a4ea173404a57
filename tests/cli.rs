//! The headless commands, run as a user runs them, on the sample workspace and the real
//! third-party data copied into tests/data (see its README for sources and licences).

use assert_cmd::Command;
use ctxconsole::core::catalog::RoutingGuide;
use serde_json::Value;
use std::path::PathBuf;

mod common;
use common::{TESTER_CATALOG, ctx, eval_labels_command, json_of, succeeded};

const EVAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// Runs a command expected to fail with bad input; returns its stderr.
fn bad_input(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    err
}

fn mcp_server() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_ctxconsole"));
    let dir = bin.parent().unwrap();
    let path = dir.join("examples").join("mcp_test_server");
    assert!(
        path.exists(),
        "build the example first: cargo build --examples"
    );
    path
}

#[test]
fn budgets_json_lists_all_three_tiers() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args(["budgets", "--json"]));
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() >= 20, "{}", rows.len());
    for tier in ["A", "B", "C"] {
        assert!(rows.iter().any(|r| r["tier"] == tier), "tier {tier}");
    }
    for key in [
        "id",
        "match",
        "input_tokens",
        "output_tokens",
        "tier",
        "max_catalog_bytes",
        "hybrid_reasoning",
        "strict_json",
        "prefix_cache",
        "allows_llm_filter",
        "prices",
        "tokenizer",
        "layer",
        "source",
        "lint",
    ] {
        assert!(rows[0].get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["fallback"]["input_tokens"], 16000);
    assert_eq!(v["fallback"]["tier"], "C");
}

#[test]
fn unknown_model_resolves_to_the_fallback() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args(["budgets", "--model", "no/such-model", "--json"]));
    assert_eq!(v["matched_by"], "fallback");
    assert_eq!(v["row"]["tier"], "C");
    assert_eq!(v["row"]["output_tokens"], 1500);
    assert_eq!(v["row"]["max_catalog_bytes"], 10000);
    let v = json_of(ctx(home.path()).args([
        "budgets",
        "--model",
        "openrouter/moonshotai/kimi-k2.6",
        "--json",
    ]));
    assert_eq!(v["matched_by"], "prefix");
    assert_eq!(v["row"]["id"], "openrouter/moonshotai/kimi-");
}

#[test]
fn litellm_registry_layers_over_the_sample() {
    let home = tempfile::tempdir().unwrap();
    let registry = format!("{EVAL}/litellm/model_prices_and_context_window.json");
    let v = json_of(ctx(home.path()).args([
        "budgets",
        "--registry",
        &registry,
        "--model",
        "claude-sonnet-4-5",
        "--json",
    ]));
    assert_eq!(v["matched_by"], "exact");
    assert_eq!(v["row"]["input_tokens"], 200000);
    assert_eq!(v["row"]["layer"], "registry");
    assert_eq!(v["row"]["tier"], "A");
    assert_eq!(v["row"]["tier_derived"], true);
    let table = json_of(ctx(home.path()).args(["budgets", "--registry", &registry, "--json"]));
    let rows = table["rows"].as_array().unwrap();
    assert!(rows.len() > 3000, "{}", rows.len());
    assert!(
        rows.iter()
            .any(|r| !r["lint"].as_array().unwrap().is_empty()),
        "some registry rows are flagged"
    );
    let free = rows
        .iter()
        .find(|r| r["id"] == "openrouter/openrouter/free")
        .unwrap();
    assert_eq!(free["tier"], "C");
    // LiteLLM writes a window of 0 for one it does not know: no row budgets a model as
    // taking no tokens (four vercel_ai_gateway embedding models are listed as chat so).
    assert!(
        !rows.iter().any(|r| r["input_tokens"] == 0),
        "a row with an input window of 0"
    );
    assert!(
        !rows
            .iter()
            .any(|r| r["id"] == "vercel_ai_gateway/mistral/mistral-embed"),
        "a window of 0 is no window"
    );
    // Tester 18 F4: a price break is a cut only where the price above it is higher:
    // gemini-exp-1206 costs 0 below and above 128k and keeps its 2,097,152 tokens, while
    // gemini-2.5-pro ($1.25/M, $2.50/M above 200k) is budgeted at 200,000.
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(row("gemini/gemini-exp-1206")["input_tokens"], 2_097_152);
    assert_eq!(row("gemini/gemini-2.5-pro")["input_tokens"], 200_000);
}

#[test]
fn tier_c_compaction_fits_ten_kilobytes_and_keeps_every_supersedes() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--model",
        "openrouter/openrouter/free",
        "--json",
    ]));
    let trim = &v["trim"];
    assert!(trim["after_bytes"].as_u64().unwrap() <= 10_000, "{trim}");
    assert_eq!(trim["fits"], true);
    assert_eq!(v["allowance"]["bytes"], 10000);
    let sample: Value = serde_json::from_str(include_str!("../sample-data/catalog.json")).unwrap();
    let compacted = v["catalog"]["pipelines"].as_array().unwrap();
    for pipeline in sample["pipelines"].as_array().unwrap() {
        let sup = &pipeline["metadata"]["supersedes"];
        if sup.as_array().is_none_or(|s| s.is_empty()) {
            continue;
        }
        let kept = compacted
            .iter()
            .find(|p| p["id"] == pipeline["id"])
            .unwrap_or_else(|| panic!("{} cut", pipeline["id"]));
        assert_eq!(&kept["metadata"]["supersedes"], sup);
    }
    let steps: Vec<&str> = trim["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "intent_keywords",
            "typical_use",
            "limitations",
            "step_bodies",
            "schemas",
            "descriptions"
        ]
    );
}

#[test]
fn tier_a_passes_the_catalog_through_untouched() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--json",
    ]));
    let trim = &v["trim"];
    assert_eq!(trim["before_bytes"], trim["after_bytes"]);
    assert_eq!(trim["dropped"].as_array().unwrap().len(), 0);
    assert_eq!(trim["cut"].as_array().unwrap().len(), 0);
    let sample: RoutingGuide =
        serde_json::from_str(include_str!("../sample-data/catalog.json")).unwrap();
    let sent: RoutingGuide = serde_json::from_value(v["catalog"].clone()).unwrap();
    assert_eq!(sent, sample);
}

#[test]
fn exact_tokens_for_openai_models_and_labelled_estimates_otherwise() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args(["compact", "--model", "openai/gpt-4o-mini", "--json"]));
    assert_eq!(v["trim"]["exact_tokens"], true);
    assert_eq!(v["allowance"]["exact"], true);
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--model",
        "openrouter/openrouter/free",
        "--json",
    ]));
    assert_eq!(v["trim"]["exact_tokens"], false);
}

#[test]
fn prompt_tokens_come_out_of_the_allowance() {
    let home = tempfile::tempdir().unwrap();
    let without =
        json_of(ctx(home.path()).args(["compact", "--model", "llamacpp/nanbeige4.1-3b", "--json"]));
    let prompt = "Summarise this launch note for the team. ".repeat(100);
    let with = json_of(ctx(home.path()).args([
        "compact",
        "--model",
        "llamacpp/nanbeige4.1-3b",
        "--prompt",
        &prompt,
        "--json",
    ]));
    let a0 = without["allowance"]["tokens"].as_u64().unwrap();
    let a1 = with["allowance"]["tokens"].as_u64().unwrap();
    // What the prompt adds to the request (its header line is sent either way, and the
    // hint with it has a blank line before it).
    let grew = |field: &str| {
        with["allowance"][field].as_u64().unwrap() - without["allowance"][field].as_u64().unwrap()
    };
    assert_eq!(a0 - a1, grew("prompt_tokens") + grew("framing_tokens"));
    assert_eq!(grew("attachments_tokens"), 0);
    assert!(with["trim"]["after_tokens"].as_u64().unwrap() <= a1);
    // With an intent the final cut follows its ranking; without one it runs from the end.
    assert!(
        with["trim"]["cut_policy"]
            .as_str()
            .unwrap()
            .contains("ranked")
    );
    assert!(
        without["trim"]["cut_policy"]
            .as_str()
            .unwrap()
            .contains("no intent")
    );
}

#[test]
fn every_real_mcp_catalog_compacts_under_tier_c() {
    let home = tempfile::tempdir().unwrap();
    let mut total = 0;
    for entry in std::fs::read_dir(format!("{EVAL}/mcp")).unwrap() {
        let path = entry.unwrap().path();
        let v = json_of(
            ctx(home.path())
                .args(["compact", "--tier", "C", "--json", "--catalog"])
                .arg(&path),
        );
        let trim = &v["trim"];
        assert_eq!(trim["fits"], true, "{}", path.display());
        assert!(
            trim["after_bytes"].as_u64().unwrap() <= 10_000,
            "{}",
            path.display()
        );
        assert_eq!(v["catalog_source"]["format"], "MCP tools/list");
        total += trim["total"].as_u64().unwrap();
    }
    assert_eq!(total, 159, "the ten servers list 159 tools");
}

/// Tester 6 F1: trimming schemas to field names told the model a pydantic tool (top-level
/// `$ref`) took no parameters and that `anyOf`/`allOf` tools took one named `anyOf`/`allOf`.
#[test]
fn trimmed_schemas_name_the_parameters_a_tool_really_takes() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shapes.json");
    let filler = "x".repeat(12_000);
    let catalog = serde_json::json!({"tools": [
        {"name": "filler_tool", "description": "Filler.",
         "inputSchema": {"type": "object", "properties": {"p": {"type": "string", "description": filler}}}},
        {"name": "ref_top", "description": "Create a ticket.",
         "inputSchema": {"$ref": "#/$defs/Args", "$defs": {"Args": {"type": "object",
            "properties": {"title": {"type": "string"}, "priority": {"type": "integer"}},
            "required": ["title", "priority"]}}}},
        {"name": "anyof_top", "description": "Delete a ticket.",
         "inputSchema": {"anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]}]}},
        {"name": "allof_top", "description": "Move a ticket.",
         "inputSchema": {"allOf": [
            {"type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]},
            {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}]}},
        {"name": "remote_ref", "description": "Close a ticket.",
         "inputSchema": {"$ref": "https://example.com/close.json"}}
    ]});
    std::fs::write(&path, catalog.to_string()).unwrap();
    let v = json_of(
        ctx(home.path())
            .args(["compact", "--tier", "C", "--json", "--catalog"])
            .arg(&path),
    );
    let steps: Vec<&str> = v["trim"]["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["step"].as_str().unwrap())
        .collect();
    assert!(steps.contains(&"schemas"), "{steps:?}");
    let schema_of = |name: &str| -> Value {
        v["catalog"]["packs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} kept: {}", v["catalog"]))["metadata"]["input_schema"]
            .clone()
    };
    assert_eq!(
        schema_of("ref_top"),
        serde_json::json!(["priority", "title"])
    );
    assert_eq!(schema_of("anyof_top"), serde_json::json!(["id", "slug"]));
    assert_eq!(schema_of("allof_top"), serde_json::json!(["from", "to"]));
    // Names that cannot be read are not guessed: the schema goes whole.
    assert_eq!(
        schema_of("remote_ref"),
        serde_json::json!({"$ref": "https://example.com/close.json"})
    );
}

/// Tester 6 F3: one entry that can never fit emptied the catalog when it came first with no
/// prompt, or ranked first with one.
#[test]
fn an_entry_alone_over_the_allowance_is_cut_by_itself_and_the_rest_kept() {
    let home = tempfile::tempdir().unwrap();
    let small = |i: usize| serde_json::json!({"name": format!("search_notes_{i}"), "description": format!("Search notes number {i}.")});
    let big = serde_json::json!({"name": "search_notes_big", "description": format!("search notes quickly {}", "A".repeat(30_000))});
    let mut tools = vec![big];
    tools.extend((0..20).map(small));
    let path = home.path().join("catalog.json");
    std::fs::write(&path, serde_json::json!({ "tools": tools }).to_string()).unwrap();
    let out = common::succeeded(ctx(home.path()).args(["compact", "--tier", "C"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(20 of 21 entries kept)"), "{stdout}");
    assert!(
        stdout.contains("; 1 entry alone over the allowance cut first):"),
        "{stdout}"
    );
    assert!(stdout.contains(", alone over the allowance\n"), "{stdout}");
    for args in [
        &["compact", "--tier", "C", "--json"][..],
        &[
            "compact",
            "--tier",
            "C",
            "--json",
            "--prompt",
            "search notes quickly",
        ],
    ] {
        let v = json_of(ctx(home.path()).args(args));
        assert_eq!(v["trim"]["kept"], 20, "{args:?}");
        assert_eq!(v["trim"]["cut"][0]["name"], "search_notes_big");
        assert_eq!(v["trim"]["cut"][0]["alone_over"], true);
    }
    let out = common::succeeded(ctx(home.path()).args([
        "preview",
        "search notes quickly",
        "--tier",
        "C",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "cut by itself, over the allowance alone even fully trimmed: search_notes_big"
        ),
        "{stdout}"
    );
}

/// Tester 7 T7-3: an entry just under the allowance (98.8 %) at the head kept 1 of 21; with
/// a prompt the 97 % entry survived while 18 of the 20 equally relevant small tools went.
/// The tester's shapes (py/mkf3.py): big = "search notes " + N × 'A', small = "Search notes
/// number i.".
/// `compact --tier C --json` of `catalog` (with `prompt`, if any): it keeps `kept` of `total`
/// entries and cuts exactly one by the crowding rule, which is returned.
fn the_crowded_cut(
    home: &std::path::Path,
    catalog: &str,
    prompt: Option<&str>,
    kept: usize,
    total: usize,
) -> Value {
    let mut args = vec!["compact", "--tier", "C", "--json", "--catalog", catalog];
    args.extend(prompt.map(|p| ["--prompt", p]).into_iter().flatten());
    let v = json_of(ctx(home).args(&args));
    assert_eq!(v["trim"]["kept"], kept, "{args:?}: {}", v["trim"]);
    assert_eq!(v["trim"]["total"], total);
    let crowded: Vec<&Value> = v["trim"]["cut"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("crowds_out").is_some())
        .collect();
    assert_eq!(crowded.len(), 1, "{args:?}: {}", v["trim"]);
    crowded[0].clone()
}

#[test]
fn an_entry_taking_most_of_the_allowance_is_cut_when_keeping_it_would_cut_more() {
    let home = tempfile::tempdir().unwrap();
    let write = |file: &str, spec: &[(&str, usize)]| {
        let mut tools: Vec<Value> = Vec::new();
        for &(kind, n) in spec {
            let schema =
                serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
            if kind == "big" {
                tools.push(serde_json::json!({"name": format!("big{}", tools.len()),
                    "description": format!("search notes {}", "A".repeat(n)), "inputSchema": schema}));
            } else {
                for i in 0..n {
                    tools.push(serde_json::json!({"name": format!("small{}", tools.len()),
                        "description": format!("Search notes number {i}."), "inputSchema": schema}));
                }
            }
        }
        let path = home.path().join(file);
        std::fs::write(&path, serde_json::json!({ "tools": tools }).to_string()).unwrap();
        path.to_string_lossy().into_owned()
    };
    let b = write("b.json", &[("big", 9_880), ("small", 20)]);
    let out = common::succeeded(ctx(home.path()).args(["compact", "--tier", "C", "--catalog", &b]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(20 of 21 entries kept)"), "{stdout}");
    assert!(
        stdout
            .contains("; 1 entry cut as it takes 99 % of the allowance fully trimmed; keeping it would cut 20):"),
        "{stdout}"
    );
    assert!(
        stdout.contains(", takes 99 % of the allowance fully trimmed; keeping it would cut 20\n"),
        "{stdout}"
    );
    let mix = write(
        "mix.json",
        &[
            ("big", 20_000),
            ("big", 9_700),
            ("small", 10),
            ("big", 50_000),
            ("small", 10),
            ("big", 30_000),
        ],
    );
    for (catalog, kept, total, big) in [(&b, 20, 21, "big0"), (&mix, 20, 24, "big1")] {
        for prompt in [None, Some("search notes")] {
            let crowded = the_crowded_cut(home.path(), catalog, prompt, kept, total);
            assert_eq!(crowded["name"], big);
            assert!(crowded["crowds_out"]["share_percent"].as_u64().unwrap() >= 97);
            assert!(crowded["crowds_out"]["would_cut"].as_u64().unwrap() >= 18);
        }
    }
    // preview and compact --prompt read one plan: the same fate, said in preview's words.
    std::fs::copy(&mix, home.path().join("catalog.json")).unwrap();
    let out = common::succeeded(ctx(home.path()).args(["preview", "search notes", "--tier", "C"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("kept 20/24"), "{stdout}");
    assert!(
        stdout.contains(
            "  cut big1: takes 98 % of the allowance fully trimmed; keeping it would cut 18\n"
        ),
        "{stdout}"
    );

    // Tester 9 T9-2: two entries of 49 % (three of 33 %), none over half, kept 4 of 22 (4 of
    // 33). Together they crowd the rest out: the largest (of equal ones, the first the order
    // cuts) goes, named with the others, and every small entry is kept.
    let two49 = write(
        "two49.json",
        &[("big", 4_770), ("big", 4_770), ("small", 20)],
    );
    let three33 = write(
        "three33.json",
        &[
            ("big", 3_200),
            ("big", 3_200),
            ("big", 3_200),
            ("small", 30),
        ],
    );
    for (catalog, kept, total, big, others) in
        [(&two49, 21, 22, "big1", 1), (&three33, 32, 33, "big2", 2)]
    {
        for prompt in [None, Some("search notes")] {
            let crowded = the_crowded_cut(home.path(), catalog, prompt, kept, total);
            assert_eq!(crowded["name"], big);
            let crowds = &crowded["crowds_out"];
            assert!(crowds["share_percent"].as_u64().unwrap() <= 50, "{crowds}");
            assert!(
                crowds["together_percent"].as_u64().unwrap() > 90,
                "{crowds}"
            );
            assert_eq!(crowds["with_others"], others);
            assert_eq!(crowds["would_cut"], total - 4, "{crowds}");
        }
    }
    let out =
        common::succeeded(ctx(home.path()).args(["compact", "--tier", "C", "--catalog", &two49]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(21 of 22 entries kept)"), "{stdout}");
    assert!(
        stdout.contains(
            "; 1 entry cut as it takes 48 % of the allowance fully trimmed (with 1 other, 97 %); keeping it would cut 18):"
        ),
        "{stdout}"
    );
    // Tester 10 T10-6: with a prompt of two requests the big entry, listed first, tied a
    // small one for the first request's best place; as "a request's best entry" it was
    // spared and 8 small ones cut (37 of 45 kept). Another entry first for the same request
    // and scoring as much answers it as well: the big one goes (44 of 45).
    let schema = serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let mut tools = vec![serde_json::json!({"name": "big0",
        "description": format!("search notes {}", "A".repeat(6_500)), "inputSchema": schema})];
    tools.extend((0..40).map(|i| {
        serde_json::json!({"name": format!("small{i}"),
        "description": format!("Search notes number {i}."), "inputSchema": schema})
    }));
    for w in ["email.send", "calendar.add", "files.read", "team.post"] {
        let (a, b) = w.split_once('.').unwrap();
        tools.push(
            serde_json::json!({"name": w, "description": format!("{a} {b} for the team"),
            "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}}}),
        );
    }
    let tie = home.path().join("tie-first.json");
    std::fs::write(&tie, serde_json::json!({ "tools": tools }).to_string()).unwrap();
    let v = json_of(
        ctx(home.path())
            .args(["compact", "--tier", "C", "--json", "--catalog"])
            .arg(&tie)
            .args(["--prompt", "search notes and email the summary to the team"]),
    );
    assert_eq!(v["trim"]["kept"], 44, "{}", v["trim"]);
    let cut = &v["trim"]["cut"][0];
    assert_eq!(
        (&cut["name"], cut.get("crowds_out").is_some()),
        (&serde_json::json!("big0"), true),
        "{}",
        v["trim"]
    );
    std::fs::copy(&three33, home.path().join("catalog.json")).unwrap();
    let out = common::succeeded(ctx(home.path()).args(["preview", "search notes", "--tier", "C"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("kept 32/33"), "{stdout}");
    assert!(
        stdout.contains(
            "  cut big2: takes 33 % of the allowance fully trimmed (with 2 others, 98 %); keeping it would cut 29\n"
        ),
        "{stdout}"
    );
}

/// Task Q4: 20 small tools, then one of 9,880 bytes. With a prompt that ranks the big one
/// among the smalls, the cut by rank took the smalls below it, then the big one, and kept 10
/// of 21 though all 20 smalls fit once it was gone; those cut only for room are put back.
#[test]
fn entries_cut_before_a_late_big_cut_are_put_back_when_they_fit() {
    let home = tempfile::tempdir().unwrap();
    let schema = serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let mut tools: Vec<Value> = (0..20)
        .map(|i| {
            serde_json::json!({"name": format!("small{i}"),
                "description": format!("Search notes number {i}."), "inputSchema": schema})
        })
        .collect();
    tools.push(serde_json::json!({"name": "big",
        "description": format!("search notes {}", "A".repeat(9_880)), "inputSchema": schema}));
    let path = home.path().join("late-big.json");
    std::fs::write(&path, serde_json::json!({ "tools": tools }).to_string()).unwrap();
    let catalog = path.to_string_lossy().into_owned();
    let prompt = "search notes and then email the team";
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--tier",
        "C",
        "--json",
        "--catalog",
        &catalog,
        "--prompt",
        prompt,
    ]));
    assert_eq!(v["trim"]["kept"], 20, "{}", v["trim"]);
    assert_eq!(v["trim"]["total"], 21);
    assert!(v["trim"]["fits"].as_bool().unwrap());
    let cut = v["trim"]["cut"].as_array().unwrap();
    assert_eq!(cut.len(), 1, "{}", v["trim"]);
    assert_eq!(cut[0]["name"], "big");
    assert!(cut[0].get("crowds_out").is_none() && cut[0].get("alone_over").is_none());
    let out = common::succeeded(ctx(home.path()).args([
        "compact",
        "--tier",
        "C",
        "--catalog",
        &catalog,
        "--prompt",
        prompt,
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(20 of 21 entries kept)"), "{stdout}");
    // preview reads the same plan.
    std::fs::copy(&path, home.path().join("catalog.json")).unwrap();
    let v = json_of(ctx(home.path()).args(["preview", prompt, "--tier", "C", "--json"]));
    assert_eq!(
        v["compaction"]["trim"]["kept"], 20,
        "{}",
        v["compaction"]["trim"]
    );
    let fates: Vec<(&Value, &Value)> = v["compaction"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fate"] != "kept")
        .map(|e| (&e["name"], &e["fate"]))
        .collect();
    assert_eq!(
        fates,
        [(
            &serde_json::json!("big"),
            &serde_json::json!("cut_by_budget")
        )]
    );
}

/// Tester 6 F2: two tools with one name were warned of by human `compact` and MCP
/// `compact_catalog` only; `compact --json`, `preview` and `preview --json` said nothing.
#[test]
fn a_name_given_twice_is_warned_of_on_every_screen_once() {
    let home = tempfile::tempdir().unwrap();
    let mut tools = vec![
        serde_json::json!({"name": "dup", "description": "First dup searches."}),
        serde_json::json!({"name": "dup", "description": "Second dup deletes everything."}),
        serde_json::json!({"name": "other", "description": "Something else."}),
    ];
    tools.extend(
        (0..5).map(|i| serde_json::json!({"name": "dup", "description": format!("Copy {i}.")})),
    );
    let text = serde_json::json!({ "tools": tools }).to_string();
    let path = home.path().join("catalog.json");
    std::fs::write(&path, &text).unwrap();
    let said = format!(
        "{}: 'dup' appears 7 times (each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
        path.display()
    );
    let v = json_of(ctx(home.path()).args(["compact", "--json"]));
    assert_eq!(
        v["warnings"],
        serde_json::json!([said]),
        "{}",
        v["warnings"]
    );
    let v = json_of(
        ctx(home.path())
            .args(["compact", "--json", "--catalog"])
            .arg(&path),
    );
    assert_eq!(v["warnings"], serde_json::json!([said]));
    let v = json_of(ctx(home.path()).args(["preview", "search", "--json"]));
    assert_eq!(v["warnings"], serde_json::json!([said]));
    let out = ctx(home.path())
        .args(["preview", "search"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches(&format!("note: {said}")).count(),
        1,
        "{stdout}"
    );
    let out = ctx(home.path()).args(["compact"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("appears").count(), 1, "{stdout}");
    assert!(stdout.contains(&format!("note: {said}")), "{stdout}");
}

/// Tester 8 F8: `compact --catalog FILE` replaces the workspace's catalog, yet its text
/// still said the workspace catalog's notes (and said a repeat twice when FILE held it too),
/// while `--json` rightly had none.
#[test]
fn a_catalog_given_on_the_command_line_says_only_its_own_notes() {
    let home = tempfile::tempdir().unwrap();
    let dup = serde_json::json!({"tools": [
        {"name": "dup", "description": "First."},
        {"name": "dup", "description": "Second."},
    ]});
    let workspace_catalog = home.path().join("catalog.json");
    std::fs::write(&workspace_catalog, dup.to_string()).unwrap();
    let clean = home.path().join("clean.json");
    std::fs::write(
        &clean,
        serde_json::json!({"tools": [{"name": "only", "description": "One."}]}).to_string(),
    )
    .unwrap();
    let text = |catalog: &std::path::Path| {
        let out = ctx(home.path())
            .args(["compact", "--catalog"])
            .arg(catalog)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stdout = text(&clean);
    assert!(!stdout.contains("appears"), "{stdout}");
    let again = home.path().join("again.json");
    std::fs::write(&again, dup.to_string()).unwrap();
    let stdout = text(&again);
    assert_eq!(stdout.matches("appears").count(), 1, "{stdout}");
    assert!(
        stdout.contains(&format!("note: {}: 'dup'", again.display())),
        "{stdout}"
    );
}

#[test]
fn bfcl_function_lists_import() {
    let home = tempfile::tempdir().unwrap();
    for (file, distinct) in [
        ("BFCL_v4_multiple.json", 462),
        ("BFCL_v4_live_multiple.json", 956),
    ] {
        let path = format!("{EVAL}/bfcl/{file}");
        let v = json_of(ctx(home.path()).args([
            "compact",
            "--model",
            "openai/gpt-5",
            "--json",
            "--catalog",
            &path,
        ]));
        assert_eq!(v["trim"]["total"], distinct, "{file}");
        assert!(
            v["catalog_source"]["format"]
                .as_str()
                .unwrap()
                .starts_with("BFCL")
        );
    }
}

#[test]
fn live_mcp_import_over_stdio() {
    let home = tempfile::tempdir().unwrap();
    let server = mcp_server();
    let v = json_of(
        ctx(home.path())
            .args(["compact", "--tier", "C", "--json", "--mcp"])
            .arg(&server),
    );
    let names: Vec<&str> = v["catalog"]["packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes_add", "notes_search", "weather_get"]);
    assert_eq!(v["trim"]["total"], 3);
}

/// Runs a command expected to fail at run time (exit 1, one clear line); returns its stderr.
fn runtime_failure(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    err
}

#[test]
fn mcp_servers_that_fail_are_runtime_failures_and_a_bad_command_line_is_bad_input() {
    let home = tempfile::tempdir().unwrap();
    let err =
        runtime_failure(ctx(home.path()).args(["compact", "--mcp", "/no/such/server --stdio"]));
    assert!(
        err.contains("/no/such/server") && err.contains("did not start"),
        "{err}"
    );
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp",
        "sh -c 'echo this is not json-rpc'",
    ]));
    assert!(
        err.contains("not JSON-RPC on its stdout (line 1): \"this is not json-rpc\""),
        "{err}"
    );
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp",
        "sleep 30",
        "--mcp-timeout",
        "1s",
    ]));
    assert!(err.contains("did not answer within 1s"), "{err}");
    let err = bad_input(ctx(home.path()).args(["compact", "--mcp", "broken 'quote"]));
    assert!(err.contains("unclosed"), "{err}");
}

#[test]
fn garbage_on_an_mcp_servers_stdout_is_quoted_escaped() {
    let home = tempfile::tempdir().unwrap();
    let server = mcp_server();
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp-timeout",
        "2s",
        "--mcp",
        &format!("{} --garbage", server.display()),
    ]));
    assert!(err.contains("not JSON-RPC"), "{err}");
    assert!(
        err.contains(r#"(line 1): "\x1b]0;pwned\x07this is not json-rpc, it is a banner""#),
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
    assert!(!err.contains("did not answer"), "{err}");
}

#[test]
fn an_empty_next_cursor_ends_an_mcp_servers_tool_list() {
    let home = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--tier",
        "C",
        "--json",
        "--mcp-timeout",
        "10s",
        "--mcp",
        &format!("{} --empty-cursor", mcp_server().display()),
    ]));
    assert_eq!(v["trim"]["total"], 3, "the one page's tools, read once");
    assert!(started.elapsed().as_secs() < 8, "{:?}", started.elapsed());
}

#[test]
fn an_mcp_server_in_a_pagination_loop_is_reported_at_once_naming_it() {
    let home = tempfile::tempdir().unwrap();
    for (mode, says) in [
        ("--same-cursor", "gave the cursor \"page-2\" again"),
        (
            "--endless-cursors",
            "still gave a next cursor after 1000 pages",
        ),
    ] {
        let command = format!("{} {mode}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(
            err.contains(&format!("MCP server `{command}` is in a pagination loop")),
            "{err}"
        );
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn an_mcp_answer_over_the_transports_message_limit_is_reported_at_once() {
    let home = tempfile::tempdir().unwrap();
    let command = format!("{} --big-page", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(err.contains(&format!("MCP server `{command}`")), "{err}");
    assert!(
        err.contains("answered tools/list with a message of 17.0 MB, over the 16 MiB"),
        "{err}"
    );
}

/// Tester 6 F7/F11: one cause, one message, at once. A tools/list answer nested past the
/// JSON reader's limit was "not JSON-RPC" quoting the (good) initialize answer, or "did not
/// answer" after the whole timeout; the same nesting in a file was serde's "recursion limit
/// exceeded".
#[test]
fn nesting_past_the_json_readers_limit_is_one_message_at_once() {
    let home = tempfile::tempdir().unwrap();
    let said = "nested deeper than 127 levels, the JSON reader's limit";
    for levels in [64, 100, 200] {
        let command = format!("{} --deep {levels}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(
            err.contains(&format!(
                "MCP server `{command}` answered tools/list with a message {said} (line 2, column "
            )),
            "{err}"
        );
        assert!(!err.contains("not JSON-RPC"), "{err}");
    }
    // Just inside the limit (5 levels of envelope, 2 per schema level): read. (Not parsed
    // back here: `--json` nests the catalog a level deeper than the server did.)
    let out = common::succeeded(ctx(home.path()).args([
        "compact",
        "--json",
        "--mcp",
        &format!("{} --deep 61", mcp_server().display()),
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"total\": 1,"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep200.json");
    let mut schema = serde_json::json!({"type": "string"});
    for _ in 0..200 {
        schema = serde_json::json!({"type": "object", "properties": {"p": schema}});
    }
    let catalog = serde_json::json!({"tools": [{"name": "deep", "inputSchema": schema}]});
    std::fs::write(&path, catalog.to_string()).unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--catalog"]).arg(&path));
    assert!(
        err.contains("deep200.json: line 1, column ") && err.contains(said),
        "{err}"
    );
    assert!(!err.contains("recursion"), "{err}");
}

/// Tester 7 T7-12: a deep notification, or a reply to an id never asked, failed `compact
/// --mcp` as "answered tools/list with a message nested deeper…". Skipped now, and said once;
/// the answer itself so nested still fails, when its id comes only after the deep part too.
#[test]
fn only_the_answer_awaited_nested_too_deep_fails_an_mcp_listing() {
    let home = tempfile::tempdir().unwrap();
    for (what, said) in [
        (
            "note",
            "skipped a message the transport cannot read, not the answer awaited: a notification, nested deeper than 127 levels",
        ),
        (
            "other-id",
            "skipped a message the transport cannot read, not the answer awaited: a reply to an id it was not asked, nested deeper than 127 levels",
        ),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        let out = common::succeeded(ctx(home.path()).args([
            "compact",
            "--mcp-timeout",
            "60s",
            "--mcp",
            &command,
        ]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let all = format!("{stdout}{stderr}");
        assert!(
            all.contains("1 entries") || all.contains("1 entry"),
            "{all}"
        );
        assert_eq!(all.matches(said).count(), 1, "{all}");
        let v = json_of(ctx(home.path()).args(["compact", "--json", "--mcp", &command]));
        assert_eq!(v["trim"]["total"], 1, "{v}");
        assert!(
            v["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains(said)),
            "{v}"
        );
    }
    let command = format!("{} --chatty answer-id-last", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(
        err.contains(&format!(
            "MCP server `{command}` answered tools/list with a message nested deeper than 127 levels"
        )),
        "{err}"
    );
}

/// Tester 48 F4: a server answering tools/list with a stray line that is no JSON-RPC was
/// said to have written "something that is not JSON-RPC", quoting the first bytes of its
/// whole stdout (the good initialize answer), not the line; and a JSON object that is no
/// JSON-RPC message was only "did not answer" once the whole timeout had passed. The line
/// is quoted now, where it is on the server's stdout, and the object is said at once.
#[test]
fn a_stray_line_on_an_mcp_servers_stdout_is_the_one_quoted() {
    let home = tempfile::tempdir().unwrap();
    let command = format!("{} --chatty stray-text", mcp_server().display());
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp-timeout",
        "2s",
        "--mcp",
        &command,
    ]));
    assert!(
        err.contains(&format!(
            "MCP server `{command}` wrote something that is not JSON-RPC on its stdout \
             (line 2): \"PLAIN GARBAGE LINE\""
        )),
        "{err}"
    );
    assert!(!err.contains("protocolVersion"), "{err}");
    // Its answer without "jsonrpc": "2.0" (the id asked): said at once, that line quoted.
    let command = format!("{} --chatty stray-answer", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(
        err.contains(&format!(
            "MCP server `{command}` wrote something that is not JSON-RPC on its stdout \
             (line 2, a JSON object without \"jsonrpc\": \"2.0\"): \"{{\\\"id\\\":1,\\\"result\\\":{{\\\"tools\\\":[]}}}}\""
        )),
        "{err}"
    );
    // An object that says nothing of what it is may be a log line (review 49 M1): skipped,
    // and quoted as the likely cause once the import times out.
    let command = format!("{} --chatty stray-object", mcp_server().display());
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp-timeout",
        "2s",
        "--mcp",
        &command,
    ]));
    assert!(
        err.contains(&format!(
            "MCP server `{command}` wrote something that is not JSON-RPC on its stdout \
             (line 2, a JSON object without \"jsonrpc\": \"2.0\"): \"{{\\\"not\\\":\\\"jsonrpc\\\"}}\""
        )),
        "{err}"
    );
}

/// Review 49 M1: since tester 48 F4's fix any JSON object without `"jsonrpc": "2.0"` on the
/// server's stdout failed the import at once, a pino log line (`{"level":30,…}`) or a
/// notification lacking only `jsonrpc` too, which the transport skips: imported before, and
/// now again, said once in a note. So is such an object right after the last answer (the
/// listing is complete; it had raced the answer).
#[test]
fn an_mcp_servers_json_log_line_on_stdout_is_skipped_not_a_failure() {
    let home = tempfile::tempdir().unwrap();
    for (what, said) in [
        (
            "log-line",
            "skipped a message the transport cannot read, not the answer awaited: neither request, notification nor reply (line 1 of its stdout, a JSON object without \"jsonrpc\": \"2.0\"): \"{\\\"level\\\":30,\\\"time\\\":1,\\\"msg\\\":\\\"server listening\\\"}\"",
        ),
        (
            "bare-note",
            "skipped a message the transport cannot read, not the answer awaited: a notification (line 1 of its stdout, a JSON object without \"jsonrpc\": \"2.0\")",
        ),
        ("late-object", ""),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        for _ in 0..3 {
            let v = json_of(ctx(home.path()).args([
                "compact",
                "--json",
                "--mcp-timeout",
                "60s",
                "--mcp",
                &command,
            ]));
            assert_eq!(v["trim"]["total"], 1, "{what}: {v}");
            let warnings = v["warnings"].as_array().unwrap();
            if !said.is_empty() {
                assert!(
                    warnings.iter().any(|w| w.as_str().unwrap().contains(said)),
                    "{what}: {v}"
                );
            }
        }
    }
}

/// Review 49 L1: a banner on the server's stdout (which the transport skips) replaced every
/// failure, so a real `tools/list` error was lost. Only a silence (a timeout, a server gone)
/// is explained by it now; a failure of the server's own is said, the banner beside it.
#[test]
fn an_mcp_servers_own_error_is_said_beside_a_banner_on_its_stdout() {
    let home = tempfile::tempdir().unwrap();
    let command = format!("{} --chatty banner-error", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(
        err.contains(&format!("MCP server `{command}` failed tools/list: ")),
        "{err}"
    );
    assert!(
        err.contains(
            "error -32603 \"db down\" (it also wrote something that is not JSON-RPC on its stdout, line 1: \"Server ready\")"
        ),
        "{err}"
    );
}

/// Tester 49 F3: an error answer under `"id": null`, an answer with neither result nor error
/// and an answer under an id never asked were "did not answer within Ns" after the whole
/// timeout; a whole answer without its final newline, then EOF, was "Transport closed".
#[test]
fn mcp_answers_the_import_cannot_use_are_said_as_they_are() {
    let home = tempfile::tempdir().unwrap();
    for (what, said) in [
        (
            "null-id-error",
            "answered tools/list with an error under no id (line 2 of its stdout): -32600 \"Invalid Request\"",
        ),
        (
            "no-result",
            "answered tools/list (id 1) with neither result nor error (line 2 of its stdout)",
        ),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(
            err.contains(&format!("MCP server `{command}` {said}")),
            "{what}: {err}"
        );
    }
    let command = format!("{} --chatty null-id-error", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(err.contains("Invalid Request"), "{err}");
    let command = format!("{} --chatty wrong-id", mcp_server().display());
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp-timeout",
        "2s",
        "--mcp",
        &command,
    ]));
    assert!(
        err.contains(&format!(
            "MCP server `{command}` did not answer within 2s (it answered id 999, which was never asked, line 2 of its stdout)"
        )),
        "{err}"
    );
    let command = format!("{} --chatty no-newline", mcp_server().display());
    let v = json_of(ctx(home.path()).args(["compact", "--json", "--mcp", &command]));
    assert_eq!(v["trim"]["total"], 1, "{v}");
}

/// Tester 49 F2: a tools/list answer rmcp's typed listing does not take (a tool without
/// `inputSchema`, `"result": null`, `"tools": "nope"`) failed as rmcp's bare "Unexpected
/// response type", though the same list in a file is read (a tool without a schema as
/// taking no parameters) and a bad field named by its path.
#[test]
fn an_mcp_tools_list_is_read_as_a_catalog_file_is() {
    let home = tempfile::tempdir().unwrap();
    let command = format!("{} --chatty no-schema", mcp_server().display());
    let v = json_of(ctx(home.path()).args(["compact", "--json", "--mcp", &command]));
    assert_eq!(v["trim"]["total"], 1, "{v}");
    for (what, said) in [
        (
            "result-null",
            "answered tools/list with no tools list: its result is null",
        ),
        (
            "tools-not-list",
            "answered tools/list with no tools list: its 'tools' is a string, not an array",
        ),
        ("bad-schema", "tools[0].inputSchema"),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(err.contains(said), "{what}: {err}");
        assert!(!err.contains("Unexpected response type"), "{what}: {err}");
    }
    // The handshake too: which fields its answer lacks, not rmcp's Rust debug text.
    let command = format!("{} --chatty init-empty", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(
        err.contains(&format!(
            "MCP server `{command}` did not complete the MCP handshake: its initialize result has no 'protocolVersion', 'capabilities' or 'serverInfo'"
        )),
        "{err}"
    );
}

/// Tester 50 F2: an answer rmcp's typed reader drops (text that is not UTF-8, a raw tab in a
/// string, a lone surrogate, a key given twice, an error's code that is a string, an error
/// without its message, a result and an error both) was waited out to the timeout, then said
/// as "did not answer". Each fails at once, saying why.
#[test]
fn an_mcp_answer_the_transport_cannot_read_fails_at_once_saying_why() {
    let home = tempfile::tempdir().unwrap();
    for (what, said) in [
        (
            "bad-utf8",
            "(line 2, column 57 of its stdout): invalid UTF-8 (byte offset 56)",
        ),
        (
            "raw-tab",
            "(line 2, column 75 of its stdout): control character (\\u0000-\\u001F) found while parsing a string",
        ),
        (
            "lone-surrogate",
            "(line 2, column 60 of its stdout): a lone UTF-16 surrogate (\\ud800) is not a character",
        ),
        ("dup-key", "(line 2 of its stdout): `result` is given twice"),
        (
            "string-code",
            "(line 2 of its stdout): its error's code is a string, not an integer",
        ),
        (
            "no-message",
            "(line 2 of its stdout): its error has no message",
        ),
        (
            "both",
            "(line 2 of its stdout): it has both a result and an error",
        ),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(
            err.contains(&format!(
                "MCP server `{command}` answered tools/list (id 1) with a message the transport cannot read {said}"
            )),
            "{what}: {err}"
        );
    }
    let command = format!("{} --chatty init-bad-utf8", mcp_server().display());
    let err = compact_mcp_fails_at_once(home.path(), &command);
    assert!(
        err.contains(&format!(
            "MCP server `{command}` answered initialize (id 0) with a message the transport cannot read (line 1, column "
        )) && err.contains("of its stdout): invalid UTF-8 (byte offset"),
        "{err}"
    );
}

/// Tester 50 F11: a 2 MB error message from the server (to `initialize` or `tools/list`) was
/// a 2 MB line on stderr, and the last line of its stderr was printed whole (64 KB). Both are
/// quoted as all outside text is: escaped, on one line, cut.
#[test]
fn an_mcp_servers_error_and_stderr_are_quoted_short() {
    let home = tempfile::tempdir().unwrap();
    for (what, said) in [
        ("big-error", "failed tools/list: error -32000 \"XXXX"),
        (
            "init-big-error",
            "did not complete the MCP handshake: error -32000 \"XXXX",
        ),
        ("big-stderr", "(its stderr: \"ZZZZ"),
    ] {
        let command = format!("{} --chatty {what}", mcp_server().display());
        let err = compact_mcp_fails_at_once(home.path(), &command);
        assert!(err.len() < 600, "{what}: {} bytes: {err:.600}", err.len());
        assert!(
            err.contains(said) && err.contains(" more bytes)"),
            "{what}: {err}"
        );
    }
}

/// Tester 50 F4 and F12: a provider key typed into the `--mcp` command line was printed whole
/// on stdout (the catalog line, each note, `--json`'s `catalog_source.name`), though stderr
/// showed it as `[REDACTED]`; a line feed in it wrote a line of its own (`ctxconsole: …`)
/// on stdout, on stderr and in the split error. The command line is named one way
/// everywhere: the keys taken out, on one line.
#[test]
fn an_mcp_command_line_is_shown_on_one_line_without_the_keys() {
    const MCP_TOKEN: &str = "mcp-tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    let home = tempfile::tempdir().unwrap();
    let key = "sk-or-v1-0123456789abcdefSECRET";
    // The server found on PATH, so that a command line is short enough to show whole.
    let dir = mcp_server().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        let mut cmd = ctx(home.path());
        cmd.env("OPENROUTER_API_KEY", key)
            .env("CTXCONSOLE_MCP_TOKEN", MCP_TOKEN)
            .env("PATH", &path)
            .args(args);
        cmd
    };
    for (command, shown) in [
        (
            format!("mcp_test_server --chatty log-line --token {key}"),
            "MCP server `mcp_test_server --chatty log-line --token [REDACTED]`",
        ),
        // Review 50 L9: a bridge's command line holding ctxconsole's own MCP token.
        (
            format!(
                "mcp_test_server --chatty log-line --header 'Authorization: Bearer {MCP_TOKEN}'"
            ),
            "MCP server `mcp_test_server --chatty log-line --header 'Authorization: Bearer [REDACTED]'`",
        ),
        (
            "mcp_test_server --chatty log-line 'x\nctxconsole: forged'".to_string(),
            r"MCP server `mcp_test_server --chatty log-line 'x\nctxconsole: forged'`",
        ),
    ] {
        let out = succeeded(&mut run(&["compact", "--mcp", &command]));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("ctxconsole")), "{text}");
        assert!(text.contains(&format!("catalog    {shown} (")), "{text}");
        assert!(
            text.contains(&format!("note: {shown}: skipped a message")),
            "{text}"
        );
        let v = json_of(&mut run(&["compact", "--json", "--mcp", &command]));
        assert_eq!(v["catalog_source"]["name"], shown, "{v}");
        assert!(!v.to_string().contains("SECRET"), "{v}");
    }
    // A failure (one line: runtime_failure checks) and the split error (bad_input checks).
    let err = runtime_failure(&mut run(&[
        "compact",
        "--mcp",
        &format!("mcp_test_server --chatty banner-error {key} 'x\nctxconsole: forged'"),
    ]));
    assert!(
        err.contains(r"MCP server `mcp_test_server --chatty banner-error [REDACTED] 'x\nctxconsole: forged'` failed tools/list"),
        "{err}"
    );
    let err = bad_input(&mut run(&[
        "compact",
        "--mcp",
        &format!("srv {key} \"x\nctxconsole: forged 'x"),
    ]));
    assert!(
        err.contains(
            r#"--mcp "srv [REDACTED] \"x\nctxconsole: forged 'x" has an unclosed " quote"#
        ),
        "{err}"
    );
}

/// `compact --mcp COMMAND` with a 60 s timeout fails for what the server did, not by
/// waiting the timeout out: its stderr.
fn compact_mcp_fails_at_once(home: &std::path::Path, command: &str) -> String {
    let started = std::time::Instant::now();
    let err =
        runtime_failure(ctx(home).args(["compact", "--mcp-timeout", "60s", "--mcp", command]));
    assert!(!err.contains("did not answer"), "{err}");
    assert!(
        started.elapsed().as_secs() < 30,
        "{:?}: {err}",
        started.elapsed()
    );
    err
}

/// Whether a process is still running (a zombie waiting to be reaped is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name.
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The server's and its grandchild's ids, once the server has written them.
fn pids_in(pidfile: &std::path::Path) -> (u32, u32) {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(pidfile) {
            let ids: Vec<u32> = text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
            return (ids[0], ids[1]);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the server never wrote {}", pidfile.display());
}

fn gone_soon(pid: u32) -> bool {
    (0..100).any(|_| {
        let gone = !running(pid);
        if !gone {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        gone
    })
}

#[test]
fn an_mcp_server_that_hangs_is_killed_with_its_children_after_the_timeout() {
    let home = tempfile::tempdir().unwrap();
    let pidfile = home.path().join("pids");
    let server = mcp_server();
    let err = runtime_failure(ctx(home.path()).args([
        "compact",
        "--mcp-timeout",
        "1s",
        "--mcp",
        &format!("{} --hang {}", server.display(), pidfile.display()),
    ]));
    assert!(err.contains("did not answer within 1s"), "{err}");
    let (child, grandchild) = pids_in(&pidfile);
    assert!(gone_soon(child), "the server {child} still runs");
    assert!(gone_soon(grandchild), "its child {grandchild} still runs");
}

#[test]
fn an_mcp_servers_children_end_with_it_after_a_good_import() {
    let home = tempfile::tempdir().unwrap();
    let pidfile = home.path().join("pids");
    let server = mcp_server();
    let v = json_of(ctx(home.path()).args([
        "compact",
        "--json",
        "--mcp",
        &format!("{} --spawn {}", server.display(), pidfile.display()),
    ]));
    assert_eq!(v["trim"]["total"], 3);
    let (child, grandchild) = pids_in(&pidfile);
    assert!(gone_soon(child), "the server {child} still runs");
    assert!(gone_soon(grandchild), "its child {grandchild} still runs");
}

#[test]
fn ctrl_c_during_an_mcp_import_kills_the_servers_group() {
    let home = tempfile::tempdir().unwrap();
    let pidfile = home.path().join("pids");
    let server = mcp_server();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .args([
            "compact",
            "--mcp-timeout",
            "60s",
            "--mcp",
            &format!("{} --hang {}", server.display(), pidfile.display()),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (child, grandchild) = pids_in(&pidfile);
    // What the terminal does on Ctrl-C, to the console only: the server is in its own group.
    let sent = std::process::Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = run.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(gone_soon(child), "the server {child} still runs");
    assert!(gone_soon(grandchild), "its child {grandchild} still runs");
}

#[test]
fn broken_catalog_files_name_file_and_position() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let truncated = dir.path().join("truncated.json");
    let full = std::fs::read_to_string(format!("{EVAL}/mcp/memory.json")).unwrap();
    std::fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let err = bad_input(
        ctx(home.path())
            .args(["compact", "--catalog"])
            .arg(&truncated),
    );
    assert!(
        err.contains("truncated.json: line ") && err.contains("column"),
        "{err}"
    );

    let latin1 = dir.path().join("latin1.json");
    std::fs::write(&latin1, b"{\"tools\": [\n {\"name\": \"caf\xe9\"}]}").unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--catalog"]).arg(&latin1));
    assert!(
        err.contains("latin1.json: line 2, column") && err.contains("UTF-8"),
        "{err}"
    );

    let wrong = dir.path().join("wrong.json");
    std::fs::write(
        &wrong,
        "{\"packs\": [\n  {\"name\": \"a\", \"metadata\": [1, 2]}\n]}",
    )
    .unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--catalog"]).arg(&wrong));
    assert!(err.contains("wrong.json: line 2"), "{err}");
    // A description of the wrong type is named by its path (tester 36 F5).
    std::fs::write(
        &wrong,
        "{\"packs\": [\n  {\"name\": \"a\", \"description\": [1, 2]}\n]}",
    )
    .unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--catalog"]).arg(&wrong));
    assert!(
        err.contains("wrong.json: field 'packs[0].description' is an array; expected a string"),
        "{err}"
    );
    // A name of the wrong type is named by its path (tester 7 T7-13).
    std::fs::write(&wrong, "{\"packs\": [\n  {\"name\": [1, 2]}\n]}").unwrap();
    let err = bad_input(ctx(home.path()).args(["compact", "--catalog"]).arg(&wrong));
    assert!(
        err.contains("wrong.json: field 'packs[0].name' is an array; expected a string"),
        "{err}"
    );

    let err = bad_input(ctx(home.path()).args(["compact", "--catalog", "/no/such/catalog.json"]));
    assert!(err.contains("/no/such/catalog.json"), "{err}");
}

#[test]
fn broken_workspace_files_name_file_and_position_and_change_nothing() {
    let home = tempfile::tempdir().unwrap();
    let budgets = home.path().join("budgets.toml");
    let text = "[[model]]\nid = \"x\"\ninput_tokens = \"lots\"\noutput_tokens = 10\ntier = \"B\"\n";
    std::fs::write(&budgets, text).unwrap();
    let err = bad_input(ctx(home.path()).args(["budgets", "--json"]));
    assert!(err.contains("budgets.toml: line 3"), "{err}");
    assert_eq!(std::fs::read_to_string(&budgets).unwrap(), text);

    std::fs::write(
        &budgets,
        "[[model]]\nid = \"x\"\ninput_tokens = 1000\noutput_tokens = 10\ntier = \"Z\"\n",
    )
    .unwrap();
    let err = bad_input(ctx(home.path()).args(["budgets"]));
    assert!(err.contains("budgets.toml: line 5"), "{err}");
}

#[test]
fn broken_registry_and_unknown_tier_are_bad_input() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("registry.json");
    std::fs::write(&reg, "{\n  \"gpt-x\": {\"max_input_tokens\": 1000,\n").unwrap();
    let err = bad_input(ctx(home.path()).args(["budgets", "--registry"]).arg(&reg));
    assert!(err.contains("registry.json: line 3"), "{err}");
    let out = ctx(home.path())
        .args(["compact", "--tier", "D"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tier 'D'"));
}

#[test]
fn human_output_is_readable() {
    let home = tempfile::tempdir().unwrap();
    let out = ctx(home.path())
        .args(["compact", "--model", "openrouter/openrouter/free"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("STEP") && text.contains("schemas reduced to sorted field names"),
        "{text}"
    );
    assert!(text.contains("(estimated)"));
    let out = ctx(home.path())
        .args(["budgets", "--model", "openai/gpt-4o"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("exact match") && text.contains("o200k"),
        "{text}"
    );
    // Tester 19 F15: what every request on a row carries is said in text as in --json.
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"t/samp\"\ninput_tokens = 3000\noutput_tokens = 1000\ntier = \"B\"\n\
         max_tokens = 700\ntemperature = 0.2\nseed = 7\n",
    )
    .unwrap();
    let out = ctx(home.path())
        .args(["budgets", "--model", "t/samp"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("max_tokens    700 (sent instead of the output reserve)")
            && text.contains("sampling      temperature 0.2, seed 7"),
        "{text}"
    );
    // Tester 50 F7: a `source` holding a line feed wrote a line of its own; F15: a prefix row
    // is named as the Budgets table names it (`t/*`), in `budgets`, `preview` and `compact`.
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"t/\"\nmatch = \"prefix\"\ninput_tokens = 3000\noutput_tokens = 1000\n\
         tier = \"B\"\nsource = \"src line\\nforged: line\"\n",
    )
    .unwrap();
    let out = ctx(home.path())
        .args(["budgets", "--model", "t/m"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  source        src line\\nforged: line\n")
            && !text.lines().any(|l| l.starts_with("forged"))
            && text.contains("resolved by   prefix row t/*\n"),
        "{text}"
    );
    for (args, says) in [
        (
            &["preview", "hi", "--model", "t/m"][..],
            "t/m → row t/* (Tier B",
        ),
        (&["compact", "--model", "t/m"][..], "→ row t/* (prefix)"),
    ] {
        let out = ctx(home.path()).args(args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

#[test]
fn the_console_refuses_to_start_without_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let err = bad_input(&mut ctx(home.path()));
    assert!(err.contains("needs a terminal"), "{err}");
}

/// Floors on the test halves (never tuned on), each a margin below what was measured
/// (README, Quality): losing a question or two passes, a real regression fails.
#[test]
fn eval_rank_suite_holds_its_floors_on_the_test_halves() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args([
        "eval",
        "rank",
        "--suite",
        EVAL,
        "--only",
        "multiple,multiple×2,multiple×3,nestful glaive,nestful executable,mcp159",
        "--json",
    ]));
    assert!(v["protocol"].as_str().unwrap().contains("tune halves only"));
    let sets = v["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 6);
    let set = |name: &str| sets.iter().find(|s| s["set"] == name).unwrap();
    let m = |s: &Value, half: &str, who: &str, k: &str| s[half][who][k].as_f64().unwrap();
    for s in sets {
        // The halves partition the set, and both are there.
        let cases = |half: &str| s[half]["ranker"]["cases"].as_u64().unwrap();
        assert_eq!(cases("tune") + cases("test"), cases("all"), "{}", s["set"]);
        assert!(cases("tune") > 0 && cases("test") > 0, "{}", s["set"]);
        assert_eq!(s["bm25"]["k1"], 1.2);
    }
    let multiple = set("multiple");
    assert_eq!(multiple["all"]["ranker"]["cases"], 200);
    assert!(
        m(multiple, "test", "ranker", "recall_at_1") >= 0.85,
        "{multiple}"
    );
    assert!(
        m(multiple, "test", "ranker", "recall_at_5") >= 0.95,
        "{multiple}"
    );
    // Multi-request questions: every request's tool near the top, well ahead of BM25.
    let two = set("multiple×2");
    assert!(m(two, "test", "ranker", "recall_at_5") >= 0.93, "{two}");
    assert!(m(two, "test", "ranker", "all_at_10") >= 0.93, "{two}");
    assert!(
        m(two, "test", "ranker", "recall_at_5") >= m(two, "test", "bm25", "recall_at_5") + 0.03
    );
    assert!(m(two, "test", "ranker", "all_at_10") >= m(two, "test", "bm25", "all_at_10"));
    let three = set("multiple×3");
    assert!(m(three, "test", "ranker", "recall_at_5") >= 0.89, "{three}");
    assert!(m(three, "test", "ranker", "all_at_10") >= 0.86, "{three}");
    assert!(
        m(three, "test", "ranker", "recall_at_5") >= m(three, "test", "bm25", "recall_at_5") + 0.05
    );
    assert!(m(three, "test", "ranker", "all_at_10") >= m(three, "test", "bm25", "all_at_10") + 0.1);
    let glaive = set("nestful glaive");
    assert!(
        m(glaive, "test", "ranker", "recall_at_5") >= 0.93,
        "{glaive}"
    );
    assert!(m(glaive, "test", "ranker", "all_at_10") >= 0.95, "{glaive}");
    // What loading settled is reported, not hidden.
    let notes = glaive["notes"].to_string();
    assert!(
        notes.contains("word for word") && notes.contains("the spec lacks"),
        "{notes}"
    );
    // API-style names whose questions leave lookup steps unsaid (an artist's id before
    // their albums): placing the steps lifts all@10 past BM25 (0.795 vs 0.692 when
    // measured); floors with a margin, not the figures.
    // Ten real MCP servers' tools, pooled, with requests written by someone who had not
    // seen the ranker and never tuned on (0.760 / 0.821 against BM25's 0.704 / 0.774 when
    // measured): floors a couple of questions below.
    let mcp = set("mcp159");
    assert_eq!(mcp["catalog_entries"], 159, "{mcp}");
    assert_eq!(mcp["all"]["ranker"]["cases"], 166, "{mcp}");
    assert!(m(mcp, "test", "ranker", "recall_at_5") >= 0.72, "{mcp}");
    assert!(
        m(mcp, "test", "ranker", "recall_at_5") >= m(mcp, "test", "bm25", "recall_at_5") + 0.03,
        "{mcp}"
    );
    assert!(
        m(mcp, "test", "ranker", "all_at_10") >= m(mcp, "test", "bm25", "all_at_10"),
        "{mcp}"
    );
    let exe = set("nestful executable");
    assert!(m(exe, "test", "ranker", "recall_at_5") >= 0.78, "{exe}");
    assert!(m(exe, "test", "ranker", "all_at_10") >= 0.72, "{exe}");
    assert!(
        m(exe, "test", "ranker", "all_at_10") > m(exe, "test", "bm25", "all_at_10"),
        "{exe}"
    );
}

#[test]
fn eval_rank_explains_misses_and_writes_one_line_per_question() {
    let home = tempfile::tempdir().unwrap();
    let bfcl = format!("{EVAL}/bfcl");
    let multiple = json_of(ctx(home.path()).args([
        "eval",
        "rank",
        "--bfcl",
        &bfcl,
        "--category",
        "multiple",
        "--misses",
        "--json",
    ]));
    let r1 = multiple["all"]["ranker"]["recall_at_1"].as_f64().unwrap();
    assert!(
        r1 > multiple["all"]["word_overlap"]["recall_at_1"]
            .as_f64()
            .unwrap()
    );
    // Every miss explains both the entry that won and the one that should have.
    let misses = multiple["misses"].as_array().unwrap();
    assert_eq!(misses.len() as f64, ((1.0 - r1) * 200.0).round());
    for m in misses {
        let first = m["ranked_first"].as_str().unwrap();
        assert!(m["first_why"].as_str().unwrap().starts_with(first), "{m}");
        let expected = m["expected"][0].as_str().unwrap();
        assert!(
            m["expected_why"].as_str().unwrap().starts_with(expected),
            "{m}"
        );
        assert!(m["half"] == "tune" || m["half"] == "test");
    }
    // Per question: one JSON line each, with both rankers' ranks; composed questions carry
    // their requests and the union of their tools.
    let out = ctx(home.path())
        .args([
            "eval",
            "rank",
            "--bfcl",
            &bfcl,
            "--category",
            "multiple",
            "--compose",
            "2",
            "--per-question",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 200);
    for l in &lines {
        let expected = l["expected"].as_array().unwrap();
        assert!(!expected.is_empty() && expected.len() <= 2, "{l}");
        assert_eq!(
            l["ranker"]["ranks"].as_array().unwrap().len(),
            expected.len()
        );
        assert_eq!(l["bm25"]["ranks"].as_array().unwrap().len(), expected.len());
        assert_eq!(l["ranker"]["top"].as_array().unwrap().len(), 5);
    }
    assert!(
        lines
            .iter()
            .filter(|l| l["requests"].as_array().is_some_and(|r| r.len() >= 2))
            .count()
            > 150
    );
    // A category that does not exist is named with the ones that do.
    ctx(home.path())
        .args(["eval", "rank", "--bfcl", &bfcl, "--category", "sql"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("live_parallel_multiple"));
}

#[test]
fn eval_rank_with_operator_labels_and_a_bad_label() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"intent\":\"take a screenshot of the page\",\"expected\":[\"browser.screenshot\"]}\n{\"id\":\"q2\",\"query\":\"remember this for later\",\"expected\":[\"memory.store\"]}\n",
    )
    .unwrap();
    let v = json_of(ctx(home.path()).args([
        "eval",
        "rank",
        "--labels",
        labels.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["all"]["ranker"]["cases"], 2);
    assert!(v["all"]["ranker"]["recall_at_5"].as_f64().unwrap() >= 0.5);
    // Against a catalog file instead of the workspace's.
    let mcp = format!("{EVAL}/mcp/memory.json");
    std::fs::write(
        &labels,
        "{\"intent\":\"create entities in the knowledge graph\",\"expected\":[\"create_entities\"]}\n",
    )
    .unwrap();
    let v = json_of(ctx(home.path()).args([
        "eval",
        "rank",
        "--labels",
        labels.to_str().unwrap(),
        "--catalog",
        &mcp,
        "--json",
    ]));
    assert_eq!(v["all"]["ranker"]["recall_at_1"], 1.0, "{v}");
    std::fs::write(
        &labels,
        "{\"intent\":\"search files\",\"expected\":[\"no.such.tool\"]}\n",
    )
    .unwrap();
    ctx(home.path())
        .args(["eval", "rank", "--labels", labels.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no question names an expected tool in the sample catalog (the workspace",
        ))
        .stderr(predicates::str::contains(
            "(the first, line 1, expects 'no.such.tool')",
        ));
}

/// Tester's F6: one labelled intent of megabytes (262 MB took 9 GB and 160 s, and
/// `--per-question` echoed it whole). Every ranker — ctxconsole's and the baselines — reads
/// the 16 KiB opening the classifier reads, and the line says what was ranked.
#[test]
fn eval_rank_reads_the_opening_of_a_huge_labelled_intent() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    let head = "take a screenshot of the page";
    // The filler tells of another tool: read whole, it would outweigh the opening.
    let filler = " remember this for later".repeat(200_000);
    let line = |intent: &str| {
        format!(
            "{}\n",
            serde_json::json!({"id": "q1", "intent": intent, "expected": ["browser.screenshot"]})
        )
    };
    let run = |intent: &str| {
        std::fs::write(&labels, line(intent)).unwrap();
        let out = ctx(home.path())
            .args([
                "eval",
                "rank",
                "--labels",
                labels.to_str().unwrap(),
                "--per-question",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v
    };
    let huge = format!("{head}{filler}");
    let v = run(&huge);
    let echoed = v["intent"].as_str().unwrap();
    assert!(
        echoed.len() <= 16 * 1024 && huge.starts_with(echoed),
        "{}",
        echoed.len()
    );
    // Ranked as its opening is: the same ranks and tops for every ranker.
    let opening = run(echoed);
    assert_eq!(v["ranker"], opening["ranker"]);
    assert_eq!(v["bm25"], opening["bm25"]);
}

/// Tester's F7, F8: two labelled intents with one id are refused naming both lines (the split
/// hashes the id, so they were one question twice, in one half); `--compose` on too small a
/// set says so in a sentence.
#[test]
fn eval_rank_labels_refuse_a_shared_id_and_compose_says_too_few() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"id\":\"same\",\"intent\":\"take a screenshot of the page\",\"expected\":[\"browser.screenshot\"]}\n\n{\"id\":\"other\",\"intent\":\"remember this\",\"expected\":[\"memory.store\"]}\n{\"id\":\"same\",\"intent\":\"search the web\",\"expected\":[\"web.search\"]}\n",
    )
    .unwrap();
    ctx(home.path())
        .args(["eval", "rank", "--labels", labels.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "labels.jsonl: lines 1 and 4 share the id 'same'",
        ));
    // Tester 4's N3: an id that prints like another (a zero-width space) is refused by the
    // name rule, and an explicit id may not take the name a line without one gets.
    for (text, says) in [
        (
            "{\"id\":\"a\\u200b\",\"intent\":\"take a screenshot\",\"expected\":[\"browser.screenshot\"]}\n",
            "line 1: the id 'a\\u{200b}'",
        ),
        (
            "{\"intent\":\"take a screenshot\",\"expected\":[\"browser.screenshot\"]}\n{\"id\":\"line 1\",\"intent\":\"search the web\",\"expected\":[\"web.search\"]}\n",
            "lines 1 and 2 share the id 'line 1'",
        ),
    ] {
        std::fs::write(&labels, text).unwrap();
        ctx(home.path())
            .args(["eval", "rank", "--labels", labels.to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    std::fs::write(
        &labels,
        "{\"intent\":\"take a screenshot of the page\",\"expected\":[\"browser.screenshot\"]}\n",
    )
    .unwrap();
    ctx(home.path())
        .args(["eval", "rank", "--labels", labels.to_str().unwrap(), "--compose", "5"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--compose 5: labels has too few questions (1 in all) to join 5 at a time within each half",
        ));
}

/// Tester 16 F5: a suite passed over a labels file whose catalog was misnamed and a NESTFUL
/// data file without its spec (the set was missing from the table, and `--only` said there
/// was no such set), and a labels set named like a BFCL category made two sets of one name.
/// F6: `--compose` with a half too small to join blamed the split's hash.
#[test]
fn eval_rank_suite_says_what_it_cannot_read_and_compose_names_a_half_too_small() {
    let home = tempfile::tempdir().unwrap();
    let catalog = "{\"tools\":[{\"name\":\"alpha_weather\",\"description\":\"Get the weather forecast for a city\"},{\"name\":\"beta_mail\",\"description\":\"Send an email message\"},{\"name\":\"delta_files\",\"description\":\"Read a file from disk\"}]}";
    // Ids q1 (test) and q2, q4, q6 (tune) by the split's hash.
    let labels = "{\"id\":\"q1\",\"intent\":\"what is the weather forecast in Paris\",\"expected\":[\"alpha_weather\"]}\n\
        {\"id\":\"q2\",\"intent\":\"email the meeting notes to Bob\",\"expected\":[\"beta_mail\"]}\n\
        {\"id\":\"q4\",\"intent\":\"send an email\",\"expected\":[\"beta_mail\"]}\n\
        {\"id\":\"q6\",\"intent\":\"read the file on disk\",\"expected\":[\"delta_files\"]}\n";
    let suite = home.path().join("suite");
    let put = |path: &str, text: &str| {
        let path = suite.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let run = || {
        let mut cmd = ctx(home.path());
        cmd.args(["eval", "rank", "--suite"]).arg(&suite);
        cmd
    };
    put("labels/x.jsonl", labels);
    put("labels/x-catalog.json", catalog);
    put("labels/y.jsonl", labels);
    put("labels/Y-catalog.json", catalog);
    run().assert().code(2).stderr(predicates::str::contains(
        "y.jsonl: no y-catalog.json beside it",
    ));
    std::fs::remove_file(suite.join("labels/y.jsonl")).unwrap();
    put("nestful/mine-data.json", "[]");
    run().assert().code(2).stderr(predicates::str::contains(
        "mine-data.json: no mine-spec.json beside it",
    ));
    std::fs::remove_file(suite.join("nestful/mine-data.json")).unwrap();
    run().assert().success();
    // A labels set named like a BFCL category.
    put(
        "bfcl/BFCL_v4_simple_javascript.json",
        &std::fs::read_to_string("tests/data/bfcl/BFCL_v4_simple_javascript.json").unwrap(),
    );
    put(
        "bfcl/possible_answer/BFCL_v4_simple_javascript.json",
        &std::fs::read_to_string("tests/data/bfcl/possible_answer/BFCL_v4_simple_javascript.json")
            .unwrap(),
    );
    put("labels/simple_javascript.jsonl", labels);
    put("labels/simple_javascript-catalog.json", catalog);
    run().assert().code(2).stderr(predicates::str::contains(
        "two sets are named 'simple_javascript': BFCL simple_javascript and labels simple_javascript",
    ));

    // --compose 2 on a set whose test half holds one question: that half is named too small.
    let out = succeeded(eval_labels_command(home.path(), labels, catalog).args(["--compose", "2"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the test half of l has 1 question, too few to join 2 at a time, so l×2 has no test question"),
        "{text}"
    );
    assert!(!text.contains("FNV-1a"), "{text}");
}

/// Labels that expect no tool at all give nothing to score: said like an empty file (exit 2,
/// the file named), not a table of 0.000.
#[test]
fn eval_rank_with_labels_that_expect_no_tool_is_an_error_like_an_empty_file() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    for (text, says) in [
        ("\n", "has no labelled intents"),
        (
            "{\"intent\":\"search files\",\"expected\":[]}\n{\"intent\":\"read mail\",\"expected\":[]}\n",
            "no line names an expected tool",
        ),
    ] {
        std::fs::write(&labels, text).unwrap();
        let out = ctx(home.path())
            .args(["eval", "rank", "--labels", labels.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr.contains(&format!("{}: ", labels.display())) && stderr.contains(says),
            "{text:?}: {stderr}"
        );
    }
}

/// Tester 11 T11-6: one rule for every labelled set. `--labels`: a line expecting no tool
/// is left out of every figure (the table, the confidence line, `--per-question`) with a
/// note; an expected tool the catalog lacks is dropped with a note naming the catalog (the
/// sample one when no --catalog); ids that print alike are one id; an empty intent is
/// refused naming its line; a side of the confidence line with no question says n/a.
#[test]
fn eval_rank_labels_keep_the_one_rule_for_expected_tools_ids_and_intents() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    let catalog = home.path().join("cat.json");
    std::fs::write(
        &catalog,
        r#"[{"type": "function", "function": {"name": "alpha_tool", "description": "Convert alpha widgets.", "parameters": {"type": "object", "properties": {}}}}, {"type": "function", "function": {"name": "bravo_tool", "description": "Delete bravo records.", "parameters": {"type": "object", "properties": {}}}}, {"type": "function", "function": {"name": "charlie_tool", "description": "Print charlie reports.", "parameters": {"type": "object", "properties": {}}}}]"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["eval", "rank", "--labels", labels.to_str().unwrap()];
        args.extend(extra);
        ctx(home.path()).args(args).output().unwrap()
    };
    let cat = catalog.to_str().unwrap();
    // A line expecting no tool: out of the table, the confidence line and --per-question.
    std::fs::write(
        &labels,
        "{\"id\":\"x\",\"intent\":\"convert the alpha widgets\",\"expected\":[]}\n{\"id\":\"y\",\"intent\":\"delete bravo records\",\"expected\":[\"bravo_tool\"]}\n",
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["--catalog", cat, "--json"]).stdout).unwrap();
    assert_eq!(v["all"]["ranker"]["cases"], 1, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("1 questions name no expected tool ('x')")
            && notes.contains("left out of every figure"),
        "{v}"
    );
    let per_question = run(&["--catalog", cat, "--per-question"]);
    let lines = String::from_utf8_lossy(&per_question.stdout);
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"id\":\"y\""), "{lines}");
    // One question: one side of the confidence line has none, and says n/a.
    let text = String::from_utf8_lossy(&run(&["--catalog", cat]).stdout).into_owned();
    let share = v["confident_share"].as_f64().unwrap();
    let says = if share == 1.0 {
        "n/a when not"
    } else {
        "top-1 n/a when confident"
    };
    assert!(text.contains(says), "{share}: {text}");
    assert!(!text.contains("0.000 when not") || share < 1.0, "{text}");
    // And in --json: the side with no question is null, not 0.0 (Q8: both read 0.0).
    let (none, some) = if share == 1.0 {
        ("top1_when_unsure", "top1_when_confident")
    } else {
        ("top1_when_confident", "top1_when_unsure")
    };
    assert!(v[none].is_null(), "{none}: {v}");
    assert!(v[some].is_f64(), "{some}: {v}");
    // An expected tool the catalog lacks is dropped with a note naming the catalog: the
    // sample one without --catalog, the file with it.
    std::fs::write(
        &labels,
        "{\"id\":\"a\",\"intent\":\"delete bravo records\",\"expected\":[\"bravo_tool\",\"missing_tool\"]}\n{\"id\":\"b\",\"intent\":\"book a flight\",\"expected\":[\"missing_tool\"]}\n{\"id\":\"c\",\"intent\":\"print charlie reports\",\"expected\":[\"charlie_tool\"]}\n",
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["--catalog", cat, "--json"]).stdout).unwrap();
    assert_eq!(v["all"]["ranker"]["cases"], 2, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "2 expected tools name a tool the catalog {cat} lacks (missing_tool); dropped from the expected tools, 1 questions left with none skipped"
        )),
        "{v}"
    );
    std::fs::write(
        &labels,
        "{\"intent\":\"take a screenshot of the page\",\"expected\":[\"browser.screenshot\"]}\n{\"intent\":\"book a flight\",\"expected\":[\"missing_tool\"]}\n",
    )
    .unwrap();
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("name a tool the sample catalog (the workspace")
            && text.contains(
                "has no catalog.json; --catalog FILE names another) lacks (missing_tool)"
            ),
        "{text}"
    );
    // Ids that print alike are one id; an empty intent has nothing to rank.
    for (text, says) in [
        (
            "{\"id\":\"caf\\u00e9\",\"intent\":\"convert alpha\",\"expected\":[\"alpha_tool\"]}\n{\"id\":\"cafe\\u0301\",\"intent\":\"delete bravo\",\"expected\":[\"bravo_tool\"]}\n",
            "lines 1 and 2 share the id 'café' (spelled two ways that print alike: caf\\u{e9}, cafe\\u{301})",
        ),
        (
            "{\"id\":\"y\",\"intent\":\"delete bravo\",\"expected\":[\"bravo_tool\"]}\n{\"id\":\"x\",\"intent\":\"  \",\"expected\":[\"alpha_tool\"]}\n",
            "line 2: the intent of 'x' is empty",
        ),
        // Tester 12 T12-11: invisible characters or function words only, nothing to rank.
        (
            "{\"id\":\"y\",\"intent\":\"delete bravo\",\"expected\":[\"bravo_tool\"]}\n{\"id\":\"x\",\"intent\":\"\\u200b\\u2060\\ufeff\",\"expected\":[\"alpha_tool\"]}\n",
            "line 2: the intent of 'x' ('\\u{200b}\\u{2060}\\u{feff}') has no word the ranker reads",
        ),
        (
            "{\"id\":\"y\",\"intent\":\"delete bravo\",\"expected\":[\"bravo_tool\"]}\n{\"id\":\"x\",\"intent\":\"the and of to\",\"expected\":[\"alpha_tool\"]}\n",
            "line 2: the intent of 'x' ('the and of to') has no word the ranker reads",
        ),
    ] {
        std::fs::write(&labels, text).unwrap();
        let out = run(&["--catalog", cat]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(&format!("{}: {says}", labels.display())),
            "{text}: {stderr}"
        );
    }
}

/// Tester 11 T11-6: `--bfcl` keeps the rule `--nestful` and `--labels` keep. A ground truth
/// naming a function the pool lacks is dropped with a note (a question left with none is
/// left out); a question id repeated is refused naming both lines, and so is an answer
/// given twice; a question without an answer and an answer without a question are noted.
#[test]
fn eval_rank_bfcl_keeps_the_one_rule_for_expected_tools_and_ids() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("bf");
    std::fs::create_dir_all(dir.join("possible_answer")).unwrap();
    let functions = r#"[{"name": "alpha.conv", "description": "Convert alpha widgets", "parameters": {"type": "dict", "properties": {}}}, {"name": "bravo.del", "description": "Delete bravo records", "parameters": {"type": "dict", "properties": {}}}]"#;
    let question = |id: &str, text: &str| {
        format!(
            "{{\"id\": \"{id}\", \"question\": [[{{\"role\": \"user\", \"content\": \"{text}\"}}]], \"function\": {functions}}}\n"
        )
    };
    let answer = |id: &str, tool: &str| {
        format!("{{\"id\": \"{id}\", \"ground_truth\": [{{\"{tool}\": {{}}}}]}}\n")
    };
    let write = |questions: &[(&str, &str)], answers: &[(&str, &str)]| {
        let q: String = questions.iter().map(|(i, t)| question(i, t)).collect();
        let a: String = answers.iter().map(|(i, t)| answer(i, t)).collect();
        std::fs::write(dir.join("BFCL_v4_multiple.json"), q).unwrap();
        std::fs::write(dir.join("possible_answer/BFCL_v4_multiple.json"), a).unwrap();
    };
    let run = |json: bool| {
        let mut args = vec![
            "eval",
            "rank",
            "--bfcl",
            dir.to_str().unwrap(),
            "--category",
            "multiple",
        ];
        if json {
            args.push("--json");
        }
        ctx(home.path()).args(args).output().unwrap()
    };
    write(
        &[
            ("multiple_0", "convert the alpha widgets"),
            ("multiple_1", "delete bravo records"),
            ("multiple_4", "print charlie"),
            ("multiple_5", "no answer for me"),
        ],
        &[
            ("multiple_0", "alpha.conv"),
            ("multiple_1", "bravo.del"),
            ("multiple_4", "nothere.x"),
            ("multiple_9", "alpha.conv"),
        ],
    );
    let out = run(true);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["all"]["ranker"]["cases"], 2, "{v}");
    let notes = v["notes"].to_string();
    for part in [
        "1 expected calls name a tool the pool lacks",
        "(nothere.x); dropped from the expected tools, 1 questions left with none skipped",
        "1 questions have no answer in",
        "('multiple_5'); left out of every figure",
        "1 answers name no question of",
        "('multiple_9'); ignored",
    ] {
        assert!(notes.contains(part), "{part}: {v}");
    }
    // A repeated question id, a repeated answer, an empty question: refused, named.
    for (questions, answers, says) in [
        (
            &[
                ("multiple_0", "convert the alpha widgets"),
                ("multiple_1", "delete bravo records"),
                ("multiple_0", "dup"),
            ][..],
            &[("multiple_0", "alpha.conv"), ("multiple_1", "bravo.del")][..],
            "BFCL_v4_multiple.json: lines 1 and 3 share the id 'multiple_0'",
        ),
        (
            &[("multiple_0", "convert the alpha widgets")][..],
            &[("multiple_0", "alpha.conv"), ("multiple_0", "bravo.del")][..],
            "BFCL_v4_multiple.json: lines 1 and 2 both answer 'multiple_0'",
        ),
        (
            &[
                ("multiple_0", "convert the alpha widgets"),
                ("multiple_1", ""),
            ][..],
            &[("multiple_0", "alpha.conv"), ("multiple_1", "bravo.del")][..],
            "BFCL_v4_multiple.json: line 2: the intent of 'multiple_1' is empty",
        ),
    ] {
        write(questions, answers);
        let out = run(false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says}: {stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}

/// Tester 11 T11-5: the split is the parity of the id's FNV-1a hash — the parity of how
/// many of its bytes are odd — so `case-0, case-2, …` all land in tune. The split stays
/// (every weight was tuned on its tune halves); a half with no question, or under 10 % of
/// the set's, is said in a note naming the set, the counts and the rule.
#[test]
fn eval_rank_says_when_a_half_is_empty_or_nearly_and_why() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("evenids.jsonl");
    let catalog = home.path().join("cat.json");
    std::fs::write(
        &catalog,
        r#"[{"type": "function", "function": {"name": "alpha_tool", "description": "Convert alpha widgets.", "parameters": {"type": "object", "properties": {}}}}, {"type": "function", "function": {"name": "bravo_tool", "description": "Delete bravo records.", "parameters": {"type": "object", "properties": {}}}}]"#,
    )
    .unwrap();
    let ids = [
        0, 2, 4, 6, 8, 20, 22, 24, 26, 28, 40, 42, 44, 46, 48, 60, 62, 64, 66, 68,
    ];
    let write = |ids: &[String]| {
        let text: String = ids
            .iter()
            .map(|id| {
                format!("{{\"id\":\"{id}\",\"intent\":\"convert the alpha widgets\",\"expected\":[\"alpha_tool\"]}}\n")
            })
            .collect();
        std::fs::write(&labels, text).unwrap();
    };
    let run = || {
        let out = ctx(home.path())
            .args([
                "eval",
                "rank",
                "--labels",
                labels.to_str().unwrap(),
                "--catalog",
                catalog.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let even: Vec<String> = ids.iter().map(|n| format!("case-{n}")).collect();
    write(&even);
    let text = run();
    assert!(
        text.contains("note: evenids: the test half has no question (tune 20, test 0 of 20)")
            && text.contains("parity of each id's FNV-1a hash"),
        "{text}"
    );
    // One odd id among them: test holds 1 of 21, under 10 %.
    let mut nearly = even.clone();
    nearly.push("case-1".into());
    write(&nearly);
    let text = run();
    assert!(
        text.contains("note: evenids: the test half holds 1 of 21 questions (tune 20)"),
        "{text}"
    );
    // An even split says nothing of it.
    let mixed: Vec<String> = (0..20).map(|n| format!("q{n}")).collect();
    write(&mixed);
    let text = run();
    assert!(!text.contains("FNV-1a"), "{text}");
}

#[test]
fn eval_planner_reports_per_category_and_gets_the_traps_right() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args(["eval", "planner", "--json"]));
    assert!(v["cases"].as_u64().unwrap() >= 100);
    assert_eq!(v["traps"], v["traps_right"], "{}", v["trap_results"]);
    assert!(v["exact_set_accuracy"].as_f64().unwrap() >= 0.9);
    let cats: Vec<&str> = v["per_class"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    for want in [
        "casual",
        "research",
        "coding",
        "crypto",
        "media",
        "monitoring",
        "memory",
        "complex",
    ] {
        assert!(cats.contains(&want), "{want}");
    }
    assert!(v["held_out"]["cases"].as_u64().unwrap() >= 40);
}

/// Tester 18 F6: `eval planner` classified the whole labelled message, while every real
/// path classifies its first 16 KiB: a long message was measured by a classifier the product
/// never runs. F7: a labels file's trap text and categories were printed with their line
/// breaks (a forged `ok trap` or `wrong:` line), and a misspelt category was measured
/// without a word.
#[test]
fn eval_planner_classifies_as_the_product_does_and_keeps_labels_on_their_lines() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("l.jsonl");
    let long = format!(
        "{}remember this note",
        "the quarterly numbers look stable across regions. ".repeat(400)
    );
    std::fs::write(
        &labels,
        serde_json::json!({"message": long, "expected": ["complex"]}).to_string() + "\n",
    )
    .unwrap();
    let v = json_of(
        ctx(home.path())
            .args(["eval", "planner", "--json", "--labels"])
            .arg(&labels),
    );
    let preview = json_of(ctx(home.path()).args(["preview", &long, "--json"]));
    assert_eq!(
        preview["planner"]["categories"],
        serde_json::json!(["complex"])
    );
    assert_eq!(v["exact_set_accuracy"], 1.0, "{v}");

    let lines = [
        serde_json::json!({"message": "remember this note", "expected": ["memroy"],
            "trap": "greeting\nok   trap (fake): \"all good\" → memory (expected memory)"}),
        serde_json::json!({"message": "hi", "expected": ["casual\nwrong: forged line"]}),
    ];
    std::fs::write(
        &labels,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let out = succeeded(
        ctx(home.path())
            .args(["eval", "planner", "--labels"])
            .arg(&labels),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.lines().any(|l| l.starts_with("ok   trap (fake)")),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("wrong: forged")),
        "{text}"
    );
    assert!(
        text.contains("note: 'memroy' is not a category of sample rules: no rule can predict it"),
        "{text}"
    );
    assert!(text.contains("trap ('greeting\\nok"), "{text}");
}

#[test]
fn preview_keeps_memory_blog_and_image_tools_and_fits_tier_c_minus_the_prompt() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args([
        "preview",
        "remember this launch note, draft a blog from it and make an illustration",
        "--model",
        "openrouter/openrouter/free",
        "--json",
    ]));
    let kept: Vec<&str> = v["compaction"]["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for family in ["memory.", "blog.", "image."] {
        assert!(
            kept.iter().any(|k| k.starts_with(family)),
            "{family} in {kept:?}"
        );
    }
    assert!(
        v["planner"]["hint"]
            .as_str()
            .unwrap()
            .starts_with("[Context: ")
    );
    let a = &v["compaction"]["allowance"];
    let t = &v["compaction"]["trim"];
    assert!(t["fits"].as_bool().unwrap());
    assert!(a["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(t["after_tokens"].as_u64().unwrap() <= a["tokens"].as_u64().unwrap());
    assert!(t["after_bytes"].as_u64().unwrap() <= 10_000);
    assert_eq!(v["gate"]["admission"], "raw");
    assert!(v["request"]["parts"].as_array().unwrap().len() >= 4);
}

#[test]
fn a_huge_paste_becomes_a_briefing_retrievable_from_the_cache() {
    let home = tempfile::tempdir().unwrap();
    // 6 MB of log lines with one error in the middle (the 50 MB run is in the README).
    let mut paste = String::new();
    for i in 0..120_000 {
        if i == 60_000 {
            paste.push_str("2026-11-22T10:00:00Z ERROR upstream timed out after 30s\n");
        } else {
            paste.push_str(&format!(
                "2026-11-22T10:00:00Z INFO request {i} served in 12ms ok\n"
            ));
        }
    }
    let v: Value = json_of(
        ctx(home.path())
            .args(["preview", "-", "--json"])
            .write_stdin(paste.clone()),
    );
    assert_eq!(v["gate"]["admission"], "briefing");
    assert_eq!(v["prompt"]["exact"], false);
    let b = &v["gate"]["briefing"];
    assert!(b["text"].as_str().unwrap().contains("line 60001: error:"));
    let r = b["cache_ref"].as_str().unwrap();
    let whole = ctx(home.path()).args(["cache", "get", r]).output().unwrap();
    assert_eq!(whole.stdout, paste.as_bytes());
    let part = ctx(home.path())
        .args(["cache", "get", r, "--lines", "60001:60001"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&part.stdout),
        "2026-11-22T10:00:00Z ERROR upstream timed out after 30s\n"
    );
    ctx(home.path())
        .args(["cache", "get", "ffffffffffffffff"])
        .assert()
        .code(2);
    ctx(home.path())
        .args(["cache", "get", r, "--lines", "9:3"])
        .assert()
        .code(2);
    // Invalid UTF-8 on stdin is named, not a panic.
    ctx(home.path())
        .args(["preview", "-"])
        .write_stdin(vec![b'a', 0xff, b'\n'])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("stdin: line 1, column 2"));
}

/// An MCP server is outside code: the providers' key variables and ctxconsole's own MCP
/// token are not in its environment, while the rest of the environment is.
#[test]
fn an_mcp_server_never_sees_the_provider_keys() {
    let home = tempfile::tempdir().unwrap();
    let seen = home.path().join("env.txt");
    let out = ctx(home.path())
        .env("OPENROUTER_API_KEY", "sk-or-v1-secret-that-must-not-leak")
        .env(
            "CTXCONSOLE_MCP_TOKEN",
            "0123456789abcdef-mcp-token-must-not-leak",
        )
        .env("CTXCONSOLE_TEST_CANARY", "passed-through")
        .args([
            "compact",
            "--mcp-timeout",
            "5s",
            "--mcp",
            &format!("sh -c 'env > {}'", seen.display()),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(
        env.contains("CTXCONSOLE_TEST_CANARY=passed-through"),
        "{env}"
    );
    assert!(!env.contains("OPENROUTER_API_KEY"), "{env}");
    assert!(!env.contains("secret-that-must-not-leak"), "{env}");
    // Tester 50 F5: nor is ctxconsole's own MCP bearer token.
    assert!(!env.contains("CTXCONSOLE_MCP_TOKEN"), "{env}");
    assert!(!env.contains("mcp-token-must-not-leak"), "{env}");
}

/// A question of several requests says what they are in `preview --json`, so the
/// `coverage_request` / `best_for_request` indices of its explanations can be read; one
/// request says none.
#[test]
fn preview_json_names_the_requests_its_explanations_index() {
    let home = tempfile::tempdir().unwrap();
    let v = json_of(ctx(home.path()).args([
        "preview",
        "summarise the top results. Then open the signup page in a browser",
        "--no-history",
        "--json",
    ]));
    let requests = v["ranking"]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2, "{:#}", v["ranking"]);
    assert!(requests[1].as_str().unwrap().contains("signup"));
    for e in v["ranking"]["top"].as_array().unwrap() {
        if let Some(r) = e["coverage_request"].as_u64() {
            assert!((r as usize) < requests.len(), "{e}");
        }
    }
    let one = json_of(ctx(home.path()).args(["preview", "draft a blog post", "--json"]));
    assert!(
        one["ranking"].get("requests").is_none(),
        "{:#}",
        one["ranking"]
    );
}

/// An MCP catalog whose tools declare their outputs: the step the question leaves unsaid
/// (the artist's id before the albums) is placed right after the tool it feeds in `preview
/// --json`, ahead of higher scores, and says so.
#[test]
fn a_lookup_step_the_question_leaves_unsaid_is_placed_and_kept() {
    let home = tempfile::tempdir().unwrap();
    let tool = |name: &str, description: &str, input: &str, output: &str| {
        serde_json::json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {input: {"type": "string"}}},
            "outputSchema": {"type": "object", "properties": {output: {"type": "string"}}},
        })
    };
    let mut tools = vec![
        tool(
            "list_artist_albums",
            "List an artist's albums with their track counts",
            "artistId",
            "trackCount",
        ),
        tool(
            "get_artist_id_by_name",
            "Look up a Spotify id",
            "name",
            "artist_id",
        ),
    ];
    tools.push(tool(
        "album_reviews",
        "Names and reviews of albums",
        "q",
        "text",
    ));
    tools.push(tool(
        "track_lyrics",
        "Lyrics of the tracks on albums",
        "q",
        "text",
    ));
    tools.push(tool(
        "album_charts",
        "How many weeks albums charted",
        "q",
        "text",
    ));
    for i in 0..30 {
        let name = format!("weather_{i}");
        tools.push(tool(&name, "Current weather for a city", "city", "temp"));
    }
    std::fs::write(
        home.path().join("catalog.json"),
        serde_json::json!({ "tools": tools }).to_string(),
    )
    .unwrap();
    let intent = "Find the names of the Weeknd's albums and how many tracks are on each";
    let v = json_of(ctx(home.path()).args(["preview", intent, "--json", "--no-history"]));
    let top = v["ranking"]["top"].as_array().unwrap();
    assert_eq!(top[0]["name"], "list_artist_albums", "{top:?}");
    assert_eq!(top[1]["name"], "get_artist_id_by_name", "{top:?}");
    assert_eq!(top[1]["lookup_for"], "list_artist_albums", "{top:#?}");
}

/// One labelled question lands in one half: the other half measured nothing, and its rows say
/// `n/a`, not a table of 0.000 that reads as a measured total failure.
#[test]
fn a_half_with_no_questions_reads_n_a_not_zero() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"intent\":\"clone the repo\",\"expected\":[\"repo.clone\"]}\n",
    )
    .unwrap();
    let out = common::succeeded(ctx(home.path()).args([
        "eval",
        "rank",
        "--labels",
        labels.to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let empty: Vec<&str> = text
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("0"))
        .collect();
    assert_eq!(empty.len(), 2, "one empty half, both rankers:\n{text}");
    for row in empty {
        assert!(row.contains("n/a") && !row.contains("0.000"), "{row}");
    }
}

/// A category the planner never predicted has no precision (0/0), and one never expected has
/// no recall: both read `n/a` in the table and `null` in JSON, not 1.000 (read as perfect).
#[test]
fn eval_planner_says_n_a_for_a_ratio_with_nothing_to_divide() {
    let home = tempfile::tempdir().unwrap();
    let labels = home.path().join("labels.jsonl");
    // "hi there" is casual to the planner: coding is expected and never predicted, casual is
    // predicted and never expected.
    std::fs::write(
        &labels,
        "{\"message\":\"hi there\",\"expected\":[\"coding\"]}\n",
    )
    .unwrap();
    let out = common::succeeded(ctx(home.path()).args([
        "eval",
        "planner",
        "--labels",
        labels.to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |class: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(class))
            .unwrap_or_else(|| panic!("no {class} row:\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("coding"),
        ["coding", "1", "0", "n/a", "0.000"],
        "{text}"
    );
    assert_eq!(
        row("casual"),
        ["casual", "0", "1", "0.000", "n/a"],
        "{text}"
    );

    let v = json_of(ctx(home.path()).args([
        "eval",
        "planner",
        "--labels",
        labels.to_str().unwrap(),
        "--json",
    ]));
    let class = |name: &str| {
        v["per_class"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(class("coding")["precision"], Value::Null, "{v}");
    assert_eq!(class("coding")["recall"], 0.0, "{v}");
    assert_eq!(class("casual")["precision"], 0.0, "{v}");
    assert_eq!(class("casual")["recall"], Value::Null, "{v}");
}

/// Tester 4's N5: a byte that is not UTF-8 inside a streamed spend-log array was "invalid
/// unicode code point"; it reads as the line readers say it.
#[test]
fn a_byte_that_is_not_utf8_in_a_streamed_array_is_said_as_such() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("l.json");
    std::fs::write(&file, b"[{\"request_id\": \"r\xff\"}]").unwrap();
    let out = ctx(home.path())
        .args(["import", "litellm", "--store"])
        .arg(home.path().join("s.sqlite"))
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("l.json: line 1, column ") && err.contains("invalid UTF-8"),
        "{err}"
    );
}

/// A lone UTF-16 surrogate escape (`"\ud800"`) in an imported line is said as what it is,
/// with the file, line and column, by every importer: serde's "unexpected end of hex escape"
/// sent the reader looking for a cut-off escape.
#[test]
fn a_lone_surrogate_in_an_import_is_named_as_one() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("s.sqlite");
    let plan = r#"{"id": "pl-9001", "at": "2026-10-01T08:43:00Z", "caller": "c", "model": "m", "intent": "a \ud800 b", "steps": [], "outcome": "ok"}"#;
    let cases: [(&str, &str, String, &str); 7] = [
        ("plans", "p.jsonl", format!("{plan}\n"), "\\ud800"),
        (
            "plans",
            "q.jsonl",
            "{\"intent\": \"x \\udc00 y\"}\n".into(),
            "\\udc00",
        ),
        (
            "plans",
            "r.jsonl",
            "{\"intent\": \"é \\ud83d\\u0041\"}\n".into(),
            "\\ud83d",
        ),
        (
            "executions",
            "e.jsonl",
            "\n{\"caller\": \"\\ud800\"}\n".into(),
            "\\ud800",
        ),
        (
            "traces",
            "t.jsonl",
            "{\"resourceSpans\": [{\"x\": \"\\ud800\"}]}\n".into(),
            "\\ud800",
        ),
        (
            "litellm",
            "l.json",
            "[{\"a\": \"\\ud800\"}]".into(),
            "\\ud800",
        ),
        (
            "litellm",
            "l.jsonl",
            "{\"a\": \"\\uDBFF\"}\n".into(),
            "\\uDBFF",
        ),
    ];
    for (kind, name, text, escape) in cases {
        let file = home.path().join(name);
        std::fs::write(&file, &text).unwrap();
        let out = ctx(home.path())
            .args(["import", kind, "--store"])
            .arg(&store)
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{kind} {text:?}: {err}");
        let line = if kind == "executions" { 2 } else { 1 };
        assert!(
            err.contains(&format!("{name}: line {line}, column "))
                && err.contains(&format!(
                    "a lone UTF-16 surrogate ({escape}) is not a character"
                )),
            "{kind} {text:?}: {err}"
        );
    }
}

/// Tester 8 F17: a value clap refuses (a name past the name rule) was echoed whole in the
/// usage error — 100 KB on stderr — and an escape in it was dropped rather than shown.
/// It is quoted as every other error quotes what was typed: one line, escaped, cut.
#[test]
fn a_refused_value_is_quoted_in_the_usage_error_not_echoed() {
    let home = tempfile::tempdir().unwrap();
    let long = "a".repeat(100_000);
    for args in [
        vec!["budgets", "--model", long.as_str()],
        vec!["preview", "x", "--model", long.as_str()],
        vec!["send", "x", "--model", "m", "--caller", long.as_str()],
    ] {
        let out = ctx(home.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.len() < 600,
            "{} bytes: {}",
            stderr.len(),
            &stderr[..300]
        );
        assert!(stderr.contains("more bytes)"), "{stderr}");
        assert!(stderr.contains("longer than 512 bytes"), "{stderr}");
    }
    let out = ctx(home.path())
        .args(["budgets", "--model", "x\u{1b}[31mRED\u{202e}"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains(r"x\x1b[31mRED\u{202e}"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    // A parser that names the value in its own words (tester 9 T9-11): one line, the value
    // quoted and cut there too.
    let odd = format!("bad\ttab\nnl{}", "z".repeat(300));
    let out = ctx(home.path())
        .args(["send", "x", "--model", "m", "--tier", &odd])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    let first = stderr.lines().next().unwrap();
    assert!(first.contains("unknown tier"), "{stderr}");
    assert!(first.len() < 400, "{} bytes: {first}", first.len());
    assert!(
        !stderr.contains('\t') && first.contains(r"bad\ttab\nnl"),
        "{stderr}"
    );
}

/// Tester 9 T9-11: `history --since` quoted a refused value twice in its own words, whole,
/// with its tab and line break; `--log` quoted it a third way (Rust's debug quoting, doubled
/// backslashes). Both quote it as every error does ([`quoted`]: once, one line, escaped, cut).
#[test]
fn since_and_log_quote_a_refused_value_as_every_error_does() {
    let home = tempfile::tempdir().unwrap();
    let odd = "bad\u{1b}[31mred\u{7}\ttab\nnl\u{202e}RTL";
    let as_quoted = r"'bad\x1b[31mred\x07\ttab\nnl\u{202e}RTL'";
    let long = format!("{odd}{}", "A".repeat(300));
    for (args, said) in [
        (vec!["history", "--since", odd], "not an RFC 3339 timestamp"),
        (vec!["--log", odd, "history"], "is not a log level"),
    ] {
        let out = ctx(home.path()).args(&args).output().unwrap();
        let all = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        // The error is the last thing said (after any note on the workspace), on one line.
        let stderr = &all[all.find("ctxconsole: --").expect("the error")..];
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert_eq!(
            stderr.matches(as_quoted).count(),
            1,
            "{args:?}: once: {stderr}"
        );
        assert!(!stderr.contains(r"\\"), "no doubled backslashes: {stderr}");
        assert!(!stderr.contains(['\t', '\u{1b}', '\u{202e}']), "{stderr}");
    }
    for args in [
        vec!["history", "--since", long.as_str()],
        vec!["--log", long.as_str(), "history"],
    ] {
        let out = ctx(home.path()).args(&args).output().unwrap();
        let all = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all}");
        let stderr = &all[all.find("ctxconsole: --").expect("the error")..];
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.len() < 400, "{} bytes: {stderr}", stderr.len());
        assert_eq!(stderr.matches("more bytes)").count(), 1, "{stderr}");
    }
}

/// Tester 8 F13: a flag the chosen `eval rank` mode does not read (`--compose` with the
/// suite, which composes its own ×2/×3 sets; `--split` beside the suite; `--category` or
/// `--catalog` without their mode) was accepted and ignored, exit 0. It is refused.
#[test]
fn eval_rank_refuses_a_flag_its_mode_does_not_read() {
    let home = tempfile::tempdir().unwrap();
    for (extra, named) in [
        (
            &["--suite", "tests/data", "--compose", "4"][..],
            "--compose",
        ),
        (&["--suite", "tests/data", "--split", "0.3"][..], "--split"),
        (
            &["--suite", "tests/data", "--category", "multiple"][..],
            "--category",
        ),
        (
            &["--suite", "tests/data", "--catalog", "x.json"][..],
            "--catalog",
        ),
        (&["--history", "--compose", "3"][..], "--compose"),
        (&["--history", "--only", "bfcl"][..], "--only"),
        (&["--history", "--spec", "x.json"][..], "--spec"),
        // Tester 10 T10-13: the history mode lists no questions.
        (&["--history", "--misses"][..], "--misses"),
        (
            &["--history", "--per-question", "--json"][..],
            "--per-question",
        ),
    ] {
        let out = ctx(home.path())
            .args(["eval", "rank"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("cannot be used with") && stderr.contains(named),
            "{stderr}"
        );
    }
}

/// Tester 11 T11-14: `preview --json` wrote the tag characters of a prompt as `\ue0041`
/// (five digits), which a JSON reader takes for U+E004 and a `1`: the request it showed was
/// not the one `send` sends. Every character comes back as itself.
#[test]
fn json_output_keeps_characters_beyond_the_bmp() {
    let home = tempfile::tempdir().unwrap();
    let prompt = "remember this note \u{E0041}\u{E0042} and x\u{1D173}y \u{2066}iso\u{2069} done";
    let out = succeeded(ctx(home.path()).args(["preview", prompt, "--json"]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\u{E0041}'), "escaped on stdout");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let user = v["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.contains("remember this note"))
        .expect("the prompt is in the request");
    assert!(user.contains(prompt), "{user:?}");
}

/// `eval rank --labels L --catalog C` in `home` with `extra` flags: the run's output.
fn eval_labels(
    home: &std::path::Path,
    labels: &str,
    catalog: &str,
    extra: &[&str],
) -> std::process::Output {
    eval_labels_command(home, labels, catalog)
        .args(extra)
        .output()
        .unwrap()
}

/// Tester's F3: 20,000 expected tools the catalog lacks were checked each against every
/// other (quadratic: 200,000 took 1 min 48 s), and the note named every one of them on one
/// line. The note names the first few and counts the rest.
#[test]
fn eval_rank_bounds_the_note_of_expected_tools_the_catalog_lacks() {
    let home = tempfile::tempdir().unwrap();
    let missing: Vec<String> = (0..20_000).map(|i| format!("\"x{i}\"")).collect();
    let labels = format!(
        "{{\"id\":\"b\",\"intent\":\"search the web\",\"expected\":[\"web_search\",{}]}}\n",
        missing.join(",")
    );
    let out = eval_labels(home.path(), &labels, TESTER_CATALOG, &[]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let note = text
        .lines()
        .find(|l| l.contains("name a tool the catalog"))
        .unwrap_or_else(|| panic!("no note: {text}"));
    assert!(note.len() < 400, "{} bytes: {}", note.len(), &note[..400]);
    assert!(
        note.contains("20000 expected tools name a tool the catalog")
            && note.contains("(x0, x1, x2, x3, x4, x5, x6, x7 and 19992 more)"),
        "{note}"
    );
}

/// Tester's F5: a half with no question read n/a on screen but 0.0 (`cases: 0`) in
/// `--json`, which reads as every question missed.
#[test]
fn eval_rank_gives_an_empty_half_no_figure_in_json() {
    let home = tempfile::tempdir().unwrap();
    // Id 'a' falls in tune: the test half is empty.
    let labels = "{\"id\":\"a\",\"intent\":\"weather in paris\",\"expected\":[\"get_weather\"]}\n";
    let out = eval_labels(home.path(), labels, TESTER_CATALOG, &["--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for who in ["ranker", "bm25", "word_overlap"] {
        let m = &v["test"][who];
        assert_eq!(m["cases"], 0, "{m}");
        for f in [
            "recall_at_1",
            "recall_at_5",
            "recall_at_10",
            "all_at_5",
            "all_at_10",
            "mrr",
            "ndcg_at_10",
        ] {
            assert!(m[f].is_null(), "test {who} {f}: {m}");
        }
        assert_eq!(v["tune"][who]["recall_at_1"], 1.0, "{v}");
    }
}

/// Tester's F7: names that print alike (`dup` and `dup ` with a trailing space) and entries
/// repeated word for word were passed over without a note, though `compact` and `preview`
/// warn of them; and `dup ` ranked first for an expected `dup` counted as a miss.
#[test]
fn eval_rank_warns_of_names_that_print_alike_and_counts_them_as_one() {
    let home = tempfile::tempdir().unwrap();
    let catalog = r#"[{"type":"function","function":{"name":"dup","description":"Weather for a city.","parameters":{}}},
 {"type":"function","function":{"name":"dup ","description":"Search the web.","parameters":{}}},
 {"type":"function","function":{"name":"dup","description":"Weather for a city.","parameters":{}}},
 {"type":"function","function":{"name":"other","description":"Book hotel","parameters":{}}}]"#;
    let labels = "{\"id\":\"a\",\"intent\":\"weather in paris\",\"expected\":[\"dup\"]}\n\
                  {\"id\":\"b\",\"intent\":\"search web\",\"expected\":[\"dup\"]}\n";
    let out = eval_labels(home.path(), labels, catalog, &["--misses"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("'dup' appears 2 times (spelled 2 ways that print alike: dup, dup\\u{20};"),
        "{text}"
    );
    assert!(
        text.contains("'dup' is listed 2 times word for word"),
        "{text}"
    );
    assert!(!text.contains("miss b"), "{text}");
    let v = json_of(ctx(home.path()).args([
        "eval",
        "rank",
        "--labels",
        home.path().join("l.jsonl").to_str().unwrap(),
        "--catalog",
        home.path().join("c.json").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["all"]["ranker"]["recall_at_1"], 1.0, "{v}");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("word for word")),
        "{v}"
    );
}

/// Tester's F10: a labels line holding a JSON array was told `found an object; expected a
/// string`.
#[test]
fn eval_rank_says_a_labels_line_is_an_array_where_an_object_was_expected() {
    let home = tempfile::tempdir().unwrap();
    let labels = "[{\"id\":\"a\",\"intent\":\"weather\",\"expected\":[\"get_weather\"]}]\n";
    let out = eval_labels(home.path(), labels, TESTER_CATALOG, &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let file = home.path().join("l.jsonl");
    assert!(
        err.contains(&format!(
            "{}: line 1: a JSON array where an object {{\"intent\": …, \"expected\": […]}} was expected",
            file.display()
        )),
        "{err}"
    );
    // An array in the shape of a label's fields is no label either (serde would read it
    // positionally).
    let out = eval_labels(
        home.path(),
        "[\"a\",\"weather\",[\"get_weather\"]]\n",
        TESTER_CATALOG,
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Tester 32 F4: beside an attachment, a white-space instruction was still sent (`REQUEST:`
/// then the blanks) and counted; it is no instruction, as `preview ""` with the file.
#[test]
fn a_blank_instruction_beside_an_attachment_is_none() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("notes.txt");
    std::fs::write(&file, "line one\nline two\n").unwrap();
    let totals = |instruction: &str| {
        let v = json_of(
            ctx(home.path())
                .args(["preview", instruction, "--no-cache", "--json", "--attach"])
                .arg(&file),
        );
        (
            v["request"]["totals"].clone(),
            v["request"]["messages"].clone(),
        )
    };
    let none = totals("");
    assert!(none.0.is_object(), "{none:?}");
    for blank in ["   ", "\t\n "] {
        assert_eq!(totals(blank), none, "{blank:?}");
    }
}

/// Tester 34 F3: two entries whose names print alike (`café` composed and decomposed), both
/// cut, read `café` twice in `compact`'s cut list while the note spelled them apart. The
/// cut list spells them apart as the note does.
#[test]
fn compact_spells_apart_cut_names_that_print_alike() {
    let home = tempfile::tempdir().unwrap();
    // Large however far they are trimmed: many parameters, each a long name.
    let properties: serde_json::Map<String, serde_json::Value> = (0..120)
        .map(|i| {
            (
                format!("menu_section_number_{i}_of_the_cafe_listing"),
                serde_json::json!({"type": "string"}),
            )
        })
        .collect();
    let entry = |name: &str| {
        serde_json::json!({"type": "function", "function": {
            "name": name, "description": "Looks up a cafe and its menu.",
            "parameters": {"type": "object", "properties": properties}}})
    };
    let catalog = serde_json::Value::Array(vec![
        entry("caf\u{e9}"),
        entry("cafe\u{301}"),
        entry("flight.search"),
    ]);
    let file = home.path().join("c.json");
    std::fs::write(&file, catalog.to_string()).unwrap();
    let out = ctx(home.path())
        .args([
            "compact",
            "--model",
            "llamacpp/nanbeige4.1-3b",
            "--catalog",
            file.to_str().unwrap(),
            "--prompt",
            "find flights to Lisbon",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let cut: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("cut "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(cut.iter().any(|l| l.contains("caf\\u{e9} ")), "{text}");
    assert!(cut.iter().any(|l| l.contains("cafe\\u{301} ")), "{text}");
}

/// Tester 35 F5/F10: two entries whose names print alike (`café` composed and decomposed),
/// with one description, scored 13.91 and 3.09 for "order a coffee at the cafe" (only the
/// decomposed one met "cafe" in its name) and read `café, café` in `preview`'s ranking and
/// kept lists. Both now read "cafe" alike, so they score alike, and every list spells them
/// apart as `compact`'s cut list does.
#[test]
fn preview_ranks_names_that_print_alike_alike_and_spells_them_apart() {
    let home = tempfile::tempdir().unwrap();
    let entry = |name: &str| {
        serde_json::json!({"type": "function", "function": {
            "name": name, "description": "Order a coffee to take away.",
            "parameters": {"type": "object", "properties": {}}}})
    };
    let catalog = serde_json::Value::Array(vec![
        entry("caf\u{e9}"),
        entry("cafe\u{301}"),
        entry("flight.search"),
    ]);
    std::fs::write(home.path().join("catalog.json"), catalog.to_string()).unwrap();
    let out = ctx(home.path())
        .args([
            "preview",
            "order a coffee at the cafe",
            "--model",
            "openai/gpt-4o-mini",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let ranked = |spelled: &str| -> f64 {
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with("RANKING"))
            .find(|l| l.contains(&format!(". {spelled} ")))
            .unwrap_or_else(|| panic!("{spelled} not ranked:\n{text}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let (composed, decomposed) = (ranked("caf\\u{e9}"), ranked("cafe\\u{301}"));
    assert!(
        (composed - decomposed).abs() < 1e-9 && composed > 1.0,
        "{composed} vs {decomposed}:\n{text}"
    );
    let kept = text.lines().find(|l| l.starts_with("  kept: ")).unwrap();
    assert!(
        kept.contains("caf\\u{e9}") && kept.contains("cafe\\u{301}"),
        "{kept}"
    );
}

/// Tester 48 nit: a row whose catalog allowance is 0 tokens printed an empty `kept: ` line.
/// It says nothing was kept and why, as `--json` says it (`kept: []`, allowance 0 tokens).
#[test]
fn a_preview_that_keeps_nothing_says_so_and_why() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"tiny/m\"\ninput_tokens = 200\noutput_tokens = 50\ntier = \"C\"\n",
    )
    .unwrap();
    let prompt = "remember the launch note and draft a blog";
    let v = json_of(ctx(home.path()).args(["preview", prompt, "--model", "tiny/m", "--json"]));
    assert_eq!(v["compaction"]["kept"], serde_json::json!([]), "{v}");
    assert_eq!(v["compaction"]["allowance"]["tokens"], 0, "{v}");
    let out = succeeded(ctx(home.path()).args(["preview", prompt, "--model", "tiny/m"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "\n  kept: nothing (the allowance is 0 tokens: every entry the planner left was cut)\n"
        ),
        "{text}"
    );
}
