//! `ctxconsole mcp` as an MCP client meets it: the real binary started as a subprocess and
//! driven with rmcp's client, over stdio and over streamable HTTP.

use rmcp::model::{CallToolRequestParams, ErrorCode, ErrorData, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

mod common;
use common::{ctx, file_names, json_of};

type Client = RunningService<RoleClient, ()>;

const INTENT: &str = "remember this launch note, draft a blog from it and make an illustration";
const TIER_C_MODEL: &str = "openrouter/openrouter/free";
/// Set as the provider key in the server's environment: it must never appear in an answer.
const KEY_SENTINEL: &str = "sk-or-v1-mcp-test-sentinel-0123456789";

async fn start(home: &Path, extra: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"));
    cmd.env("CTXCONSOLE_HOME", home)
        .env("OPENROUTER_API_KEY", KEY_SENTINEL)
        .arg("mcp")
        .args(extra);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
        .0;
    ().serve(transport).await.unwrap()
}

async fn call(c: &Client, tool: &str, args: Value) -> Result<Value, ErrorData> {
    let params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    match c.call_tool(params).await {
        Ok(r) => {
            assert_eq!(r.is_error, Some(false), "{r:?}");
            let v = r.structured_content.unwrap();
            // The text content carries the same JSON for clients that read only text.
            let text = r.content[0].as_text().unwrap().text.clone();
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
            Ok(v)
        }
        Err(ServiceError::McpError(e)) => Err(e),
        Err(e) => panic!("{tool}: {e}"),
    }
}

/// A call that must fail with invalid_params naming `argument`.
async fn refused(c: &Client, tool: &str, args: Value, argument: &str) -> String {
    let e = call(c, tool, args.clone())
        .await
        .expect_err(&format!("{tool} {args} should be refused"));
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
    assert!(
        e.message.contains(&format!("`{argument}`")),
        "{tool} {args}: {}",
        e.message
    );
    e.message.to_string()
}

async fn read(c: &Client, uri: &str) -> Value {
    let r = c
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    assert_eq!(r.contents.len(), 1);
    let v = serde_json::to_value(&r.contents[0]).unwrap();
    assert_eq!(v["uri"], uri);
    assert_eq!(v["mimeType"], "application/json");
    serde_json::from_str(v["text"].as_str().unwrap()).unwrap()
}

fn tool_names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn initialize_lists_and_reads_every_resource_and_template() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let info = c.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "ctxconsole");
    assert!(info.capabilities.resources.is_some() && info.capabilities.tools.is_some());

    let mut uris: Vec<String> = c
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    uris.sort();
    assert_eq!(
        uris,
        [
            "ctxconsole://context-budgets",
            "ctxconsole://models",
            "ctxconsole://my-plans"
        ]
    );
    let mut templates: Vec<String> = c
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template)
        .collect();
    templates.sort();
    assert_eq!(
        templates,
        [
            "ctxconsole://budgets/{model}",
            "ctxconsole://my-plans/{caller}"
        ]
    );

    // Every budget row with its layer, exactly as `budgets --json` has it.
    let budgets = read(&c, "ctxconsole://context-budgets").await;
    let rows = budgets["rows"].as_array().unwrap();
    assert!(rows.len() >= 20);
    for r in rows {
        for key in [
            "id",
            "tier",
            "input_tokens",
            "output_tokens",
            "max_catalog_bytes",
            "prices",
            "layer",
            "source",
            "lint",
            "strict_json",
            "prefix_cache",
        ] {
            assert!(r.get(key).is_some(), "{key} in {r}");
        }
    }
    assert_eq!(
        budgets,
        json_of(ctx(home.path()).args(["budgets", "--json"]))
    );

    // One model, as `budgets --model M --json`; slashes as they are or encoded.
    let one = read(&c, &format!("ctxconsole://budgets/{TIER_C_MODEL}")).await;
    assert_eq!(
        one,
        json_of(ctx(home.path()).args(["budgets", "--model", TIER_C_MODEL, "--json"]))
    );
    assert_eq!(one["row"]["tier"], "C");
    let encoded = read(&c, "ctxconsole://budgets/openrouter%2Fopenrouter%2Ffree").await;
    assert_eq!(encoded["row"], one["row"]);
    // An unknown model is not an error: it gets the fallback row, and says so.
    let unknown = read(&c, "ctxconsole://budgets/nobody/knows-this-model").await;
    assert_eq!(unknown["matched_by"], "fallback");
    assert_eq!(unknown["row"]["tier"], "C");

    // Plans by intent shape, with decompositions, pairs, drift and outcomes per group.
    let plans = read(&c, "ctxconsole://my-plans").await;
    assert_eq!(plans["total_plans"], 668);
    let groups = plans["groups"].as_array().unwrap();
    assert!(!groups.is_empty() && groups.len() <= 20);
    let total_in = |g: &Value, key: &str| -> u64 {
        g[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d[1].as_u64().unwrap())
            .sum()
    };
    for g in groups {
        let n = g["plans"].as_u64().unwrap();
        assert_eq!(total_in(g, "drift"), n, "{g}");
        let o = &g["outcomes"];
        let outcomes = ["ok", "guarded", "failed", "replays"]
            .iter()
            .map(|k| o[k].as_u64().unwrap())
            .sum::<u64>();
        assert_eq!(outcomes, n, "{g}");
        assert!(!g["latest"].as_array().unwrap().is_empty());
    }
    assert!(
        groups
            .iter()
            .any(|g| !g["decompositions"].as_array().unwrap().is_empty())
    );
    assert!(
        groups
            .iter()
            .any(|g| !g["step_pairs"].as_array().unwrap().is_empty())
    );
    assert!(!plans["step_pairs"].as_array().unwrap().is_empty());

    // One caller's plans only.
    let mine = read(&c, "ctxconsole://my-plans/research-agent").await;
    assert_eq!(mine["caller"], "research-agent");
    let n = mine["total_plans"].as_u64().unwrap();
    assert!(n > 0 && n < 668, "{n}");
    for g in mine["groups"].as_array().unwrap() {
        for p in g["latest"].as_array().unwrap() {
            assert_eq!(p["caller"], "research-agent");
        }
    }
    let nobody = read(&c, "ctxconsole://my-plans/nobody").await;
    assert_eq!(nobody["total_plans"], 0);

    // Per-model outcomes and suggested tiers, as `history --models --json`.
    let models = read(&c, "ctxconsole://models").await;
    assert_eq!(
        models,
        json_of(ctx(home.path()).args(["history", "--models", "--json"]))
    );
    assert!(
        models["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["suggested_tier"].is_string())
    );

    // A resource that is not there, and a template with nothing in it.
    let e = c
        .read_resource(ReadResourceRequestParams::new("ctxconsole://nothing"))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("no resource 'ctxconsole://nothing'"),
        "{e}"
    );
    // Tester 42 F2: a long one is quoted cut, as every error quotes a client's text.
    let long = format!("ctxconsole://{}", "x\u{1}".repeat(500_000));
    let e = c
        .read_resource(ReadResourceRequestParams::new(long.clone()))
        .await
        .unwrap_err();
    let said = e.to_string();
    assert!(said.len() < 4_000, "{} bytes", said.len());
    assert!(said.contains("more bytes)"), "{said}");
    let e = c
        .read_resource(ReadResourceRequestParams::new("ctxconsole://budgets/"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("`uri`"), "{e}");
    // Tester 20 F19: the refusal says which rule the decoded name broke.
    for (uri, says) in [
        (
            "ctxconsole://my-plans/%E2%80%AEx",
            "control, bidi or invisible",
        ),
        ("ctxconsole://budgets/openai/gpt-4o%20", "spaces around it"),
        ("ctxconsole://my-plans/%C0%AF", "not percent-encoded UTF-8"),
        // An escape is `%` and two hex digits: `%+1` is none (it read as byte 1), nor `%4`.
        (
            "ctxconsole://my-plans/a%+1b",
            "holds a % that begins no escape",
        ),
        (
            "ctxconsole://my-plans/cut%4",
            "holds a % that begins no escape",
        ),
        ("ctxconsole://budgets/", "is empty"),
    ] {
        let e = c
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_err();
        assert!(e.to_string().contains(says), "{uri}: {e}");
    }
    let long = format!("ctxconsole://my-plans/{}", "c".repeat(600));
    let e = c
        .read_resource(ReadResourceRequestParams::new(long.as_str()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("longer than 512 bytes"), "{e}");

    // Nothing from the environment in any resource: the provider key never shows.
    let one_model = format!("ctxconsole://budgets/{TIER_C_MODEL}");
    for uri in [
        "ctxconsole://context-budgets",
        "ctxconsole://my-plans",
        "ctxconsole://models",
        "ctxconsole://my-plans/research-agent",
        one_model.as_str(),
    ] {
        let text = read(&c, uri).await.to_string();
        assert!(
            !text.contains(KEY_SENTINEL) && !text.contains("sk-or-"),
            "{uri}"
        );
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn preview_keeps_the_same_entries_as_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let mcp = call(
        &c,
        "preview",
        json!({"model": TIER_C_MODEL, "instruction": INTENT}),
    )
    .await
    .unwrap();
    let cli =
        json_of(ctx(home.path()).args(["preview", INTENT, "--model", TIER_C_MODEL, "--json"]));
    assert_eq!(mcp["tier"], "C");
    let kept = mcp["compaction"]["kept"].as_array().unwrap();
    assert!(!kept.is_empty());
    assert_eq!(mcp["compaction"]["kept"], cli["compaction"]["kept"]);
    assert_eq!(mcp["compaction"]["trim"], cli["compaction"]["trim"]);
    assert_eq!(mcp["planner"], cli["planner"]);
    assert_eq!(mcp["ranking"], cli["ranking"]);
    assert_eq!(mcp["request"], cli["request"]);
    assert_eq!(
        mcp["compaction"]["allowance"],
        cli["compaction"]["allowance"]
    );
    // One set of request parts (Q8): they add up to the request, the catalog with its header
    // line, and the allowance's framing is the request's, the header being the catalog's.
    let totals = &mcp["request"]["totals"];
    let n = |k: &str| {
        totals[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {totals}"))
    };
    assert_eq!(
        n("system") + n("prompt") + n("attachments") + n("catalog") + n("framing"),
        n("total")
    );
    assert_eq!(totals["total"], mcp["request"]["input_tokens"]);
    let catalog_part = mcp["request"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["part"] == "catalog")
        .map(|p| p["tokens"].clone());
    assert_eq!(Some(totals["catalog"].clone()), catalog_part);
    // The allowance names the request's parts with the request's figures (tester 34 F2).
    let allowance = &mcp["compaction"]["allowance"];
    for (field, part) in [
        ("system_prompt_tokens", "system"),
        ("prompt_tokens", "prompt"),
        ("attachments_tokens", "attachments"),
    ] {
        assert_eq!(allowance[field], totals[part], "{field}");
    }
    let framing = allowance["framing_tokens"].as_u64().unwrap();
    assert!(framing.abs_diff(n("framing")) <= 2);
    assert!(!mcp.to_string().contains(KEY_SENTINEL));
    // The ranking top explains itself.
    let top = mcp["ranking"]["top"].as_array().unwrap();
    assert!(!top.is_empty() && top[0]["matches"].as_array().is_some_and(|m| !m.is_empty()));
    // The catalog as sent rides in the request.
    let system = mcp["request"]["messages"].to_string();
    assert!(system.contains(kept[0].as_str().unwrap()));

    // Attachments follow the instruction and are counted.
    let with = call(
        &c,
        "preview",
        json!({"model": TIER_C_MODEL, "instruction": INTENT,
               "attachments": [{"name": "launch.md", "text": "# Launch\nWe ship on Monday."}]}),
    )
    .await
    .unwrap();
    // Attachments are parts of their own, as `preview --attach` makes them: gated
    // alone, named in the request, never read by the planner.
    assert_eq!(with["attachments"][0]["name"], "launch.md");
    assert!(
        with["request"]["messages"]
            .to_string()
            .contains("launch.md")
    );
    assert_eq!(with["planner"], mcp["planner"]);
    // An empty instruction only with attachments, as `preview "" --attach` (tester 30 F8:
    // the CLI took it, the tool refused it); white space alone is no instruction, and
    // without attachments it is refused.
    let attached = json!([{"name": "launch.md", "text": "# Launch\nWe ship on Monday."}]);
    for blank in ["", "  \n\t "] {
        let alone = call(
            &c,
            "preview",
            json!({"model": TIER_C_MODEL, "instruction": blank, "attachments": attached}),
        )
        .await
        .unwrap();
        assert_eq!(alone["attachments"][0]["name"], "launch.md");
        let e = call(
            &c,
            "preview",
            json!({"model": TIER_C_MODEL, "instruction": blank}),
        )
        .await
        .unwrap_err();
        assert!(
            e.message.contains("`instruction` is empty"),
            "{}",
            e.message
        );
    }
    let blank = call(
        &c,
        "compact_catalog",
        json!({"model": TIER_C_MODEL, "prompt": "   "}),
    )
    .await
    .unwrap();
    let none = call(
        &c,
        "compact_catalog",
        json!({"model": TIER_C_MODEL, "prompt": ""}),
    )
    .await
    .unwrap();
    assert!(blank["parts"].is_object(), "{blank}");
    assert_eq!(
        blank["parts"], none["parts"],
        "white space is no prompt (F7)"
    );

    // An unknown model is a fallback row, not an error.
    let unknown = call(
        &c,
        "preview",
        json!({"model": "nobody/knows", "instruction": INTENT}),
    )
    .await
    .unwrap();
    assert_eq!(unknown["row_id"], "*");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn every_tool_answers_and_bad_arguments_are_named() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    assert_eq!(
        tool_names(&c.list_all_tools().await.unwrap()),
        [
            "compact_catalog",
            "preview",
            "rank_tools",
            "read_cached",
            "record_execution"
        ]
    );

    // compact_catalog: the workspace catalog for a tier, as `compact --json`.
    let compact = call(&c, "compact_catalog", json!({"model": TIER_C_MODEL}))
        .await
        .unwrap();
    let cli = json_of(ctx(home.path()).args(["compact", "--model", TIER_C_MODEL, "--json"]));
    assert_eq!(compact["trim"], cli["trim"]);
    assert_eq!(compact["catalog"], cli["catalog"]);
    // The same request parts, catalog figures and allowance as `compact --json` (Q8).
    assert_eq!(compact["parts"], cli["parts"]);
    assert_eq!(compact["catalog_tokens"], cli["catalog_tokens"]);
    assert_eq!(compact["allowance"], cli["allowance"]);
    assert!(compact["parts"]["catalog"].as_u64().is_some());
    assert_eq!(
        compact["parts"]["catalog"],
        compact["catalog_tokens"]["sent"]
    );
    assert!(
        compact["trim"]["cut"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    // With a prompt, the cut follows the ranking `compact --prompt` makes: with the history
    // (its prior and learned words), or without it when asked.
    let prompt = "summarise the results. Then get me a cab to the airport";
    for no_history in [false, true] {
        let mut args = json!({"model": TIER_C_MODEL, "prompt": prompt});
        let mut cli_args = vec![
            "compact",
            "--model",
            TIER_C_MODEL,
            "--prompt",
            prompt,
            "--json",
        ];
        if no_history {
            args["no_history"] = json!(true);
            cli_args.push("--no-history");
        }
        let mcp = call(&c, "compact_catalog", args).await.unwrap();
        let cli = json_of(ctx(home.path()).args(&cli_args));
        assert_eq!(mcp["trim"], cli["trim"], "no_history {no_history}");
        assert_eq!(mcp["catalog"], cli["catalog"], "no_history {no_history}");
    }
    let tier_a = call(&c, "compact_catalog", json!({"tier": "A"}))
        .await
        .unwrap();
    assert_eq!(tier_a["tier"], "A");
    assert_eq!(tier_a["tier_overridden"], true);
    // A catalog of its own, in MCP tools/list form.
    let own = json!({"tools": [
        {"name": "notes_add", "description": "Add a note.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {"name": "weather_get", "description": "Get the weather for a city.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    ]});
    let compact = call(&c, "compact_catalog", json!({"catalog": own.to_string()}))
        .await
        .unwrap();
    assert_eq!(compact["catalog_source"]["format"], "MCP tools/list");
    assert_eq!(compact["trim"]["total"], 2);
    assert_eq!(compact["warnings"], json!([]));

    // Tester 6 F2/F3: a name given twice is warned of once, with its count, as `compact
    // --json` says it; a head entry that alone is over the allowance is cut by itself.
    let hostile = json!({"tools": [
        {"name": "huge", "description": "A".repeat(40_000)},
        {"name": "dup", "description": "First."},
        {"name": "dup", "description": "Second."},
        {"name": "weather_get", "description": "Get the weather for a city."}
    ]});
    let compact = call(
        &c,
        "compact_catalog",
        json!({"catalog": hostile.to_string(), "tier": "C"}),
    )
    .await
    .unwrap();
    assert_eq!(
        compact["warnings"],
        json!([
            "catalog: 'dup' appears 2 times (each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)"
        ])
    );
    // Tester 8 F9: `rank_tools` carries the same warning beside a ranking listing `dup` twice.
    let ranked = call(
        &c,
        "rank_tools",
        json!({"catalog": hostile.to_string(), "query": "dup"}),
    )
    .await
    .unwrap();
    assert_eq!(ranked["warnings"], compact["warnings"], "{ranked:#}");
    assert_eq!(compact["kept"], json!(["dup", "dup", "weather_get"]));
    assert_eq!(compact["trim"]["cut"][0]["name"], "huge");
    assert_eq!(compact["trim"]["cut"][0]["alone_over"], true);
    // Tester 7 T7-3: one just under the allowance is cut rather than the 20 behind it, as
    // `compact --json` does (the crowding rule, `crowds_out`); names that print alike
    // (T7-11) are one repeated name.
    let mut tools =
        vec![json!({"name": "big0", "description": format!("search notes {}", "A".repeat(9_880))})];
    tools.extend((0..20).map(|i| json!({"name": format!("small{i}"), "description": format!("Search notes number {i}.")})));
    tools.push(json!({"name": "caf\u{e9}"}));
    tools.push(json!({"name": "cafe\u{301} "}));
    let compact = call(
        &c,
        "compact_catalog",
        json!({"catalog": json!({"tools": tools}).to_string(), "tier": "C"}),
    )
    .await
    .unwrap();
    assert_eq!(compact["trim"]["kept"], 22, "{}", compact["trim"]);
    assert_eq!(compact["trim"]["cut"][0]["name"], "big0");
    assert_eq!(compact["trim"]["cut"][0]["crowds_out"]["would_cut"], 22);
    // Tester 9 T9-2: two of 49 % crowd the rest out together; one goes, as `compact` has it.
    let q = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let mut two49: Vec<Value> = (0..2)
        .map(|i| json!({"name": format!("big{i}"), "description": format!("search notes {}", "A".repeat(4_770)), "inputSchema": q}))
        .collect();
    two49.extend((0..20).map(|i| json!({"name": format!("small{i}"), "description": format!("Search notes number {i}."), "inputSchema": q})));
    let crowded = call(
        &c,
        "compact_catalog",
        json!({"catalog": json!({"tools": two49}).to_string(), "tier": "C"}),
    )
    .await
    .unwrap();
    assert_eq!(crowded["trim"]["kept"], 21, "{}", crowded["trim"]);
    assert_eq!(crowded["trim"]["cut"][0]["name"], "big1");
    assert_eq!(crowded["trim"]["cut"][0]["crowds_out"]["with_others"], 1);
    assert_eq!(crowded["trim"]["cut"][0]["crowds_out"]["would_cut"], 18);
    assert_eq!(
        compact["warnings"],
        json!([
            "catalog: 'caf\u{e9}' appears 2 times (spelled 2 ways that print alike: caf\\u{e9}, cafe\\u{301}\\u{20}; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)"
        ])
    );
    // Tester 6 F7: a catalog nested past the JSON reader's limit is said as such.
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "object", "properties": {"p": deep}});
    }
    let deep = json!({"tools": [{"name": "deep", "inputSchema": deep}]}).to_string();
    let msg = refused(&c, "compact_catalog", json!({"catalog": deep}), "catalog").await;
    assert!(
        msg.contains("catalog: line 1, column ")
            && msg.contains("nested deeper than 127 levels, the JSON reader's limit"),
        "{msg}"
    );

    // rank_tools: at most k, best first, each explained.
    let ranked = call(
        &c,
        "rank_tools",
        json!({"query": "draft a blog post", "k": 3}),
    )
    .await
    .unwrap();
    let list = ranked["ranked"].as_array().unwrap();
    assert!(!list.is_empty() && list.len() <= 3);
    assert!(
        list.windows(2)
            .all(|w| w[0]["score"].as_f64() >= w[1]["score"].as_f64())
    );
    assert!(list[0]["matches"].as_array().is_some_and(|m| !m.is_empty()));
    let ranked = call(
        &c,
        "rank_tools",
        json!({"query": "what is the weather in Paris", "catalog": own.to_string()}),
    )
    .await
    .unwrap();
    assert_eq!(ranked["ranked"][0]["name"], "weather_get");

    // Bad arguments: each one named, never a crash.
    refused(&c, "preview", json!({}), "instruction").await;
    refused(&c, "preview", json!({"instruction": "  "}), "instruction").await;
    refused(&c, "preview", json!({"instruction": 5}), "instruction").await;
    refused(
        &c,
        "preview",
        json!({"instruction": "x", "tier": "D"}),
        "tier",
    )
    .await;
    refused(
        &c,
        "preview",
        json!({"instruction": "x", "attachments": "a.txt"}),
        "attachments",
    )
    .await;
    refused(
        &c,
        "preview",
        json!({"instruction": "x", "attachments": [{"name": "a"}]}),
        "attachments[0].text",
    )
    .await;
    refused(
        &c,
        "preview",
        json!({"instruction": "x", "temperature": 1}),
        "temperature",
    )
    .await;
    refused(
        &c,
        "compact_catalog",
        json!({"catalog": "not json at all"}),
        "catalog",
    )
    .await;
    refused(&c, "compact_catalog", json!({"model": ["a"]}), "model").await;
    refused(&c, "rank_tools", json!({"query": "x", "k": "3"}), "k").await;
    refused(&c, "rank_tools", json!({"query": "x", "k": 0}), "k").await;
    refused(&c, "rank_tools", json!({"k": 3}), "query").await;
    refused(
        &c,
        "record_execution",
        json!({"caller": "a", "tool": "t"}),
        "ok",
    )
    .await;
    refused(
        &c,
        "record_execution",
        json!({"caller": "a", "tool": "t", "ok": "yes"}),
        "ok",
    )
    .await;
    refused(
        &c,
        "record_execution",
        json!({"caller": "a", "tool": "t", "ok": true, "at": "yesterday"}),
        "at",
    )
    .await;
    refused(
        &c,
        "record_execution",
        json!({"caller": "", "tool": "t", "ok": true}),
        "caller",
    )
    .await;
    // Outside tester C11: a caller or tool the one name rule refuses is a bad argument
    // (invalid_params naming it, in the message and in data), not the importer's "line 1".
    for (args, argument) in [
        (
            json!({"caller": "a\u{202e}b", "tool": "t", "ok": true}),
            "caller",
        ),
        (
            json!({"caller": "a", "tool": "web\u{200b}.search", "ok": true}),
            "tool",
        ),
        (json!({"caller": "a", "tool": " t", "ok": true}), "tool"),
        // The plan it links to is named under the same rule as an imported execution's
        // (an imported plan's id follows it too).
        (
            json!({"caller": "a", "tool": "t", "ok": true, "plan_id": "p\u{202e}1"}),
            "plan_id",
        ),
    ] {
        let m = refused(&c, "record_execution", args.clone(), argument).await;
        assert!(!m.contains("line 1"), "{m}");
        let e = call(&c, "record_execution", args).await.unwrap_err();
        assert_eq!(e.data.as_ref().unwrap()["argument"], argument, "{e:?}");
    }
    let e = call(&c, "no_such_tool", json!({})).await.unwrap_err();
    assert!(
        e.message.contains("no tool 'no_such_tool'"),
        "{}",
        e.message
    );
    // Still serving.
    assert_eq!(c.list_all_tools().await.unwrap().len(), 5);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_50_mb_argument_is_refused_with_its_name_and_the_server_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    // Over the 32 MiB message limit: answered by the transport, which never holds more.
    let huge = "a".repeat(50_000_000);
    // rmcp's own stdio transport drops such a line without a word and the client waits
    // forever; the bound here is a hang guard, not a speed target.
    let answer = refused(&c, "preview", json!({"instruction": huge}), "instruction");
    let msg = tokio::time::timeout(std::time::Duration::from_secs(120), answer)
        .await
        .expect("no answer to a 50 MB message within 120 s");
    assert!(msg.contains("32 MiB"), "{msg}");
    drop(huge);
    // Under the message limit, over the 8 MiB an argument may hold: answered by the tool.
    let big = "word ".repeat(2_000_000);
    let msg = refused(&c, "rank_tools", json!({"query": big}), "query").await;
    assert!(msg.contains("the limit is 8 MiB"), "{msg}");
    let msg = refused(&c, "compact_catalog", json!({"catalog": big}), "catalog").await;
    assert!(msg.contains("8 MiB"), "{msg}");
    // And the next call is served as usual.
    let ranked = call(&c, "rank_tools", json!({"query": "draft a blog post"}))
        .await
        .unwrap();
    assert!(!ranked["ranked"].as_array().unwrap().is_empty());
    c.cancel().await.unwrap();
}

fn drift_of(home: &Path, id: &str) -> Value {
    let report = json_of(ctx(home).args(["history", "--drift", "--json", "--limit", "100000"]));
    report["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("plan {id} not in history --drift"))
}

#[tokio::test]
async fn record_execution_moves_the_drift_that_history_shows() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let ignored = json_of(ctx(home.path()).args([
        "history",
        "--drift",
        "--drift-class",
        "ignored",
        "--json",
        "--limit",
        "1000",
    ]));
    let plan = ignored["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            let planned = p["planned"].as_array().unwrap();
            !planned.is_empty() && planned.iter().all(|t| t != "unknown")
        })
        .cloned()
        .expect("an ignored plan with runnable steps");
    let id = plan["id"].as_str().unwrap();
    let before = drift_of(home.path(), id);
    assert_eq!(before["drift"], "ignored");
    let first = plan["planned"][0].as_str().unwrap();
    let at = ctxconsole::core::time::format_timestamp(plan["at"].as_i64().unwrap() + 60);
    let args = json!({"caller": plan["caller"], "tool": first, "ok": true, "plan_id": id, "session": "mcp-test", "at": at});
    // Ranking for the plan's own intent reads the prior this plan is part of.
    let intent = plan["intent"].as_str().unwrap();
    let ask = json!({"model": TIER_C_MODEL, "instruction": intent});
    let ranked_before = call(&c, "preview", ask.clone()).await.unwrap()["ranking"].clone();
    let answer = call(&c, "record_execution", args.clone()).await.unwrap();
    assert_eq!(answer["added"], 1);
    assert!(answer["drift_updated"].as_u64().unwrap() >= 1);
    assert_ne!(answer["plan"]["drift"], "ignored");

    let after = drift_of(home.path(), id);
    assert_ne!(after["drift"], "ignored", "{after}");
    assert_eq!(after["drift"], answer["plan"]["drift"]);
    assert_eq!(after["executed"], json!([first]));
    // The server's prior follows the store: its ranking now is a fresh CLI preview's, and
    // the plan's new drift moved it.
    let ranked_after = call(&c, "preview", ask).await.unwrap()["ranking"].clone();
    let cli =
        json_of(ctx(home.path()).args(["preview", intent, "--model", TIER_C_MODEL, "--json"]));
    assert_eq!(ranked_after, cli["ranking"]);
    assert_ne!(ranked_after, ranked_before);
    // The same report again is stored once, as a second import would be, and both answers
    // name the id it is stored under (tester 13 T13-8: `null`, so a client could not tell).
    let again = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(again["added"], 0);
    assert_eq!(again["already_present"], 1);
    let stored = answer["execution"]["id"].as_str().unwrap();
    assert!(stored.starts_with("e-"), "{answer}");
    assert_eq!(again["execution"]["id"], stored);
    let exported = ctx(home.path())
        .args(["history", "export", "--executions"])
        .output()
        .unwrap();
    let exported = String::from_utf8(exported.stdout).unwrap();
    assert_eq!(
        exported.matches(&format!("\"id\":\"{stored}\"")).count(),
        1,
        "{exported}"
    );
    // A retry without `at` or `id` is another execution: the tool says it is not idempotent
    // (it had said `idempotentHint: true`, which lets a client retry freely).
    let record = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "record_execution")
        .unwrap();
    let hints = record.annotations.unwrap();
    assert_eq!(hints.idempotent_hint, Some(false));
    assert_eq!(hints.read_only_hint, Some(false));
    // Preview keeps a briefed paste in the output cache: not read-only here (tester 13: the
    // hint said it was). Compaction and ranking write nothing, and answer the same twice
    // (tester 20 F12: compaction said it wrote, ranking said nothing of idempotence);
    // nothing reaches outside without an embeddings endpoint.
    for t in c.list_all_tools().await.unwrap() {
        let hints = t.annotations.unwrap();
        let writes = ["preview", "record_execution"].contains(&&*t.name);
        assert_eq!(hints.read_only_hint, Some(!writes), "{}", t.name);
        assert_eq!(hints.destructive_hint, Some(false), "{}", t.name);
        assert_eq!(
            hints.idempotent_hint,
            Some(t.name != "record_execution"),
            "{}",
            t.name
        );
        assert_eq!(hints.open_world_hint, Some(false), "{}", t.name);
    }
    // Compaction with a pasted prompt the size that makes preview brief it writes no cache.
    let pasted = "a line of a pasted log that goes on\n".repeat(100_000);
    call(&c, "compact_catalog", json!({"prompt": pasted}))
        .await
        .unwrap();
    assert!(!home.path().join("cache.sqlite").exists());
    c.cancel().await.unwrap();
}

/// Outside tester F8: record_execution's refusals spoke of files, lines and CLI flags, said
/// "record_execution:" twice and gave a time as epoch seconds. They name the argument (`id`,
/// `at`), say the time as a time, and nothing is stored.
#[tokio::test]
async fn record_execution_refusals_name_id_and_at_as_arguments() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let first =
        json!({"caller": "a", "tool": "t", "ok": true, "id": "e1", "at": "2026-10-03T12:00:00Z"});
    assert_eq!(
        call(&c, "record_execution", first.clone()).await.unwrap()["added"],
        1
    );
    let exported = || {
        ctx(home.path())
            .args(["history", "export", "--executions"])
            .output()
            .unwrap()
            .stdout
    };
    let stored = exported();
    let mut other = first.clone();
    other["tool"] = json!("u");
    let mut refusals = vec![refused(&c, "record_execution", other, "id").await];
    for (at, says) in [
        (
            "0001-01-01T00:00:00Z",
            "0001-01-01T00:00:00Z is before 1970-01-01T00:00:00Z",
        ),
        (
            "1970-01-01T00:30:00+01:00",
            "1970-01-01T00:30:00+01:00 is before 1970-01-01T00:00:00Z",
        ),
        (
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T23:59:59-01:00 is after 9999-12-31T23:59:59Z",
        ),
    ] {
        let args = json!({"caller": "a", "tool": "t", "ok": true, "at": at});
        let m = refused(&c, "record_execution", args, "at").await;
        assert!(m.contains(says), "{m}");
        refusals.push(m);
    }
    assert!(refusals[0].contains("'e1'"), "{}", refusals[0]);
    for m in &refusals {
        for wrong in [
            "file",
            "line 1",
            "--on-conflict",
            "-62135596800",
            "arguments",
        ] {
            assert!(!m.contains(wrong), "{wrong}: {m}");
        }
        assert_eq!(m.matches("record_execution").count(), 1, "{m}");
    }
    // Nothing was stored by them, and the same record again is still the one stored.
    assert_eq!(exported(), stored);
    let again = call(&c, "record_execution", first).await.unwrap();
    assert_eq!(again["already_present"], 1);
    c.cancel().await.unwrap();
}

/// Imported traffic is measured as native plans are: an agent reporting over MCP what it
/// ran after a LiteLLM plan moves that plan's drift in `history --drift`, and `my-plans`
/// says where each group's plans came from and counts their gaps against a baseline.
#[tokio::test]
async fn record_execution_on_imported_traffic_moves_its_drift_and_my_plans_shows_source_and_gaps() {
    let home = tempfile::tempdir().unwrap();
    ctx(home.path())
        .args([
            "import",
            "litellm",
            "tests/data/litellm-logs/spend-logs.json",
        ])
        .assert()
        .success();
    // A native plan of the same intent shape, compared with a baseline.
    let plans = home.path().join("baseline.jsonl");
    std::fs::write(
        &plans,
        r#"{"id":"alice-native-1","at":"2026-10-03T13:00:00Z","caller":"alice","model":"weak","intent":"find the launch notes and email them to the team","steps":[{"order":1,"tool":"fs.search"}],"expert_baseline":[{"order":1,"tool":"fs.search"},{"order":2,"tool":"message.send"}]}"#,
    )
    .unwrap();
    ctx(home.path())
        .args(["import", "plans"])
        .arg(&plans)
        .assert()
        .success();
    let id = "litellm-chatcmpl-A1";
    let litellm_drift = || {
        let report =
            json_of(ctx(home.path()).args(["history", "--drift", "--json", "--source", "litellm"]));
        report["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(litellm_drift()["drift"], "ignored");
    assert_eq!(litellm_drift()["source"], "litellm");

    let c = start(home.path(), &[]).await;
    for (tool, at, drift) in [
        ("fs.search", "2026-10-03T12:05:30Z", "partial"),
        ("mail.send", "2026-10-03T12:05:40Z", "followed"),
    ] {
        let answer = call(
            &c,
            "record_execution",
            json!({"caller": "alice", "tool": tool, "ok": true, "plan_id": id, "at": at}),
        )
        .await
        .unwrap();
        assert_eq!(answer["plan"]["drift"], drift, "{answer}");
        let shown = litellm_drift();
        assert_eq!(shown["drift"], drift, "{shown}");
    }
    assert_eq!(
        litellm_drift()["executed"],
        json!(["fs.search", "mail.send"])
    );

    let mine = read(&c, "ctxconsole://my-plans/alice").await;
    assert_eq!(mine["total_plans"], 3);
    assert_eq!(mine["sources"], json!([["litellm", 2], ["native", 1]]));
    let group = &mine["groups"][0];
    assert_eq!(group["plans"], 2);
    assert_eq!(group["sources"], json!([["litellm", 1], ["native", 1]]));
    let latest: Vec<&str> = group["latest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source"].as_str().unwrap())
        .collect();
    assert_eq!(latest, ["native", "litellm"]);
    let gaps = &group["gaps"];
    assert_eq!(gaps["plans"], 1, "{group:#}");
    assert_eq!(
        gaps["plan_missed"],
        json!([{"tool": "message.send", "plans": 1}])
    );
    // A group without a baseline has no gaps entry.
    let all = read(&c, "ctxconsole://my-plans").await;
    assert!(
        all["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g.get("gaps").is_none())
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn read_only_leaves_record_execution_out_and_refuses_it() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &["--read-only"]).await;
    let tools = c.list_all_tools().await.unwrap();
    assert_eq!(
        tool_names(&tools),
        ["compact_catalog", "preview", "rank_tools", "read_cached"]
    );
    // Read-only, every tool is: preview and compaction keep no paste here.
    for t in &tools {
        let hints = t.annotations.clone().unwrap();
        assert_eq!(hints.read_only_hint, Some(true), "{}", t.name);
    }
    let before = ctx(home.path())
        .args(["history", "export", "--executions"])
        .output()
        .unwrap()
        .stdout;
    let e = call(
        &c,
        "record_execution",
        json!({"caller": "a", "tool": "fs.read", "ok": true}),
    )
    .await
    .unwrap_err();
    assert!(e.message.contains("--read-only"), "{}", e.message);
    let after = ctx(home.path())
        .args(["history", "export", "--executions"])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(before, after);
    // Reading still works.
    let v = call(&c, "rank_tools", json!({"query": "draft a blog post"}))
        .await
        .unwrap();
    assert!(!v["ranked"].as_array().unwrap().is_empty());
    c.cancel().await.unwrap();
}

const RAW_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const RAW_INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `ctxconsole mcp` on stdio fed raw bytes: the handshake, then each of `lines` and a
/// newline. Returns the replies after the handshake's, read until `wanted` have come (one
/// that never comes fails the test after 20 s rather than hanging it), and stderr once
/// stdin is closed and the server has exited.
/// `ctxconsole mcp` over stdio on `home`, spoken to line by line: the server, its stdin and
/// each line it answers, as it comes.
fn raw_server(
    home: &Path,
    stderr: Stdio,
) -> (
    Server,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Server(child), stdin, rx)
}

fn raw_stdio(lines: &[&[u8]], wanted: usize) -> (Vec<Value>, String) {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let home = tempfile::tempdir().unwrap();
    let (mut server, mut stdin, rx) = raw_server(home.path(), Stdio::piped());
    let mut stderr = server.0.stderr.take().unwrap();
    let handshake = [RAW_INITIALIZE.as_bytes(), RAW_INITIALIZED.as_bytes()];
    for l in handshake.iter().chain(lines) {
        stdin.write_all(l).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    stdin.flush().unwrap();
    let mut replies = Vec::new();
    while replies.len() < wanted + 1 {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => replies.push(
                serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{line}: {e}")),
            ),
            Err(_) => panic!(
                "{} of {} replies came in 20 s: {replies:#?}",
                replies.len(),
                wanted + 1
            ),
        }
    }
    assert_eq!(replies[0]["id"], 1, "{:#?}", replies[0]);
    assert!(replies[0]["result"].is_object(), "{:#?}", replies[0]);
    drop(stdin);
    let since = Instant::now();
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    replies.remove(0);
    (replies, err)
}

/// The reply with this id.
fn reply_to(replies: &[Value], id: Value) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reply with id {id}: {replies:#?}"))
}

#[test]
fn a_raw_client_gets_named_errors_for_malformed_requests() {
    let (replies, _) = raw_stdio(
        &[
            b"this is not JSON",
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rank_tools","arguments":"draft a blog"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":7}}"#,
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
        ],
        5,
    );
    let error = |id: i64| reply_to(&replies, json!(id))["error"].clone();
    assert_eq!(error(2)["code"], -32602);
    assert!(
        error(2)["message"]
            .as_str()
            .unwrap()
            .ends_with("`arguments` must be an object, not a string"),
        "{}",
        error(2)
    );
    // Named by kind, never echoed (tester 50 F9: a 21 MB `uri` array came back whole).
    assert!(
        error(3)["message"]
            .as_str()
            .unwrap()
            .ends_with("`uri` must be a string, not the number 7"),
        "{}",
        error(3)
    );
    assert!(
        error(4)["message"]
            .as_str()
            .unwrap()
            .contains("`name` must be a string, it is missing"),
        "{}",
        error(4)
    );
    assert_eq!(reply_to(&replies, json!(5))["result"], json!({}));
    // Text that is not JSON is answered too, under a null id: JSON-RPC's Parse error.
    let garbage = reply_to(&replies, Value::Null);
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
}

/// Outside tester F6: a line the server cannot read got no answer at all (an invalid UTF-8
/// byte, a batch, an id that is an object, text that is not JSON), and the client waited
/// forever. Each gets a JSON-RPC error: Parse error (-32700) under the request's id when it
/// can be read before the fault, Invalid Request (-32600) for a bad id or a batch. A
/// notification is still never answered.
#[test]
fn every_unreadable_request_gets_a_json_rpc_error() {
    let (replies, err) = raw_stdio(
        &[
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"rank_tools\",\"arguments\":{\"query\":\"caf\xe9 clone\"}}}",
            br#"[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]"#,
            br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"#,
            b"not json at all",
            br#"{"jsonrpc":"2.0","method":7}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"not an object"}"#,
            br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"rank_tools","arguments":{"query":"\ud800"}}}"#,
            br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        ],
        9,
    );
    // Each is one a client reads as an error message: rmcp's own reading of it.
    for r in &replies {
        let m = serde_json::from_value::<rmcp::model::ServerJsonRpcMessage>(r.clone())
            .unwrap_or_else(|e| panic!("{r}: {e}"));
        assert!(
            r["id"] == 9 || matches!(m, rmcp::model::JsonRpcMessage::Error(_)),
            "{r}"
        );
    }
    let message = |r: &Value| r["error"]["message"].as_str().unwrap().to_string();
    // The invalid byte: a Parse error under the id read before it.
    let utf8 = reply_to(&replies, json!(2));
    assert_eq!(utf8["error"]["code"], -32700, "{utf8}");
    assert!(message(utf8).contains("UTF-8"), "{utf8}");
    // A lone surrogate escape, in the words every JSON reader uses (tester 15 F6: serde's
    // "unexpected end of hex escape" sent the reader looking for a cut-off `\u12`).
    let surrogate = reply_to(&replies, json!(10));
    assert_eq!(surrogate["error"]["code"], -32700, "{surrogate}");
    assert!(
        message(surrogate).contains(r"a lone UTF-16 surrogate (\ud800) is not a character"),
        "{surrogate}"
    );
    // A message cut short: a Parse error under its id.
    let cut = reply_to(&replies, json!(6));
    assert_eq!(cut["error"]["code"], -32700, "{cut}");
    // The rest have no id that can be read: answered in order, under a null id.
    let unnamed: Vec<&Value> = replies.iter().filter(|r| r["id"].is_null()).collect();
    assert_eq!(unnamed.len(), 5, "{replies:#?}");
    for r in &unnamed {
        assert_eq!(r.as_object().unwrap()["id"], Value::Null, "{r}");
    }
    let codes: Vec<i64> = unnamed
        .iter()
        .map(|r| r["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(
        codes,
        [-32600, -32600, -32700, -32600, -32600],
        "{unnamed:#?}"
    );
    assert!(message(unnamed[0]).contains("batch"), "{}", unnamed[0]);
    assert!(message(unnamed[1]).contains("`id`"), "{}", unnamed[1]);
    assert!(message(unnamed[1]).contains("an object"), "{}", unnamed[1]);
    assert!(message(unnamed[3]).contains("`method`"), "{}", unnamed[3]);
    assert!(message(unnamed[4]).contains("`id`"), "{}", unnamed[4]);
    // Still serving.
    assert_eq!(reply_to(&replies, json!(9))["result"], json!({}));
    // The notification got no answer (9 replies above, none for it); it is noted.
    assert!(err.contains("notification"), "{err}");
}

/// Tester 48: a refusal the server builds itself (a key given twice, a lone surrogate, a
/// line cut short) was sometimes never written when other answers were going out at the same
/// moment: rmcp drops the transport's read whenever an answer is ready, and the refusal,
/// waiting for stdout there, went with it. Pings and such lines, interleaved, the last one
/// refused at EOF; stdin closed at once, or held open until every answer came. Each id
/// gets exactly one answer, the right one. Before, about half the refusals went unwritten.
#[test]
fn every_refusal_is_written_while_other_answers_go_out() {
    use std::collections::BTreeMap;
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    const PAIRS: i64 = 100;
    let refused: [(&str, i64); 3] = [
        (
            r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"rank_tools","arguments":{"query":"x","query":"y"}}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"rank_tools","arguments":{"query":"\u0000\ud83d"}}}"#,
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"#,
            -32700,
        ),
    ];
    let mut input = format!("{RAW_INITIALIZE}\n{RAW_INITIALIZED}\n");
    // Each id's answer: None for a ping's result, else the error's code.
    let mut expected: BTreeMap<i64, Option<i64>> = BTreeMap::from([(1, None)]);
    for k in 0..PAIRS {
        let ping = 2 + 2 * k;
        input.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{ping},\"method\":\"ping\"}}\n"
        ));
        expected.insert(ping, None);
        let (line, code) = refused[(k % 3) as usize];
        input.push_str(&line.replace("ID", &(ping + 1).to_string()));
        input.push('\n');
        expected.insert(ping + 1, Some(code));
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut lost = Vec::new();
    for run in 0..6 {
        let held_open = run % 2 == 1;
        let (mut server, mut stdin, rx) = raw_server(home.path(), Stdio::piped());
        let mut stderr = server.0.stderr.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut stdin = Some(stdin);
        if !held_open {
            stdin = None;
        }
        let mut answers: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
        let mut count = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // Held open, stdin is closed once every answer came: the server exits then.
            if count == expected.len() {
                stdin = None;
            }
            // Held open and idle for 5 s, an answer is not coming: stdin is closed then.
            let wait = match &stdin {
                Some(_) => Duration::from_secs(5),
                None => deadline.saturating_duration_since(Instant::now()),
            };
            match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(line) => {
                    let v: Value =
                        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
                    let id = v["id"]
                        .as_i64()
                        .unwrap_or_else(|| panic!("an answer without an id it was sent: {v}"));
                    answers.entry(id).or_default().push(v);
                    count += 1;
                }
                // stdout closed: the server has exited.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if stdin.is_some() => stdin = None,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        drop(stdin);
        let since = Instant::now();
        let status = loop {
            if let Some(status) = server.0.try_wait().unwrap() {
                break Some(status);
            }
            if since.elapsed() > Duration::from_secs(10) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if status.is_some() {
            stderr.read_to_string(&mut err).unwrap();
        }
        assert!(
            status.is_some_and(|s| s.success()),
            "run {run} (stdin held open: {held_open}): {status:?}; stderr: {err}"
        );
        let mut missing = Vec::new();
        for (id, code) in &expected {
            match answers.get(id).map(Vec::as_slice) {
                None | Some([]) => missing.push(*id),
                Some([answer]) => match code {
                    None => assert!(answer["result"].is_object(), "{answer}"),
                    Some(code) => assert_eq!(answer["error"]["code"], *code, "{answer}"),
                },
                Some(more) => panic!(
                    "run {run}: id {id} answered {} times: {more:#?}",
                    more.len()
                ),
            }
        }
        assert!(
            answers.keys().all(|id| expected.contains_key(id)),
            "run {run}: an answer to an id never sent: {answers:#?}"
        );
        if !missing.is_empty() {
            lost.push(format!(
                "run {run} (stdin held open: {held_open}): {} of {} ids never answered: {missing:?}; stderr: {err}",
                missing.len(),
                expected.len()
            ));
        }
    }
    assert!(lost.is_empty(), "{lost:#?}");
}

/// Tester 33 F3/F4: a key given twice in a request was read last-wins — `record_execution`
/// with `"ok":true,"ok":false` stored a failure a first-wins proxy shows as a success, an
/// attachment's second `text` was previewed — and one inside `params` read "its params do
/// not fit the method". Each is refused naming the key by its path; nothing runs.
#[test]
fn a_key_given_twice_in_a_request_is_refused_naming_it() {
    let (replies, err) = raw_stdio(
        &[
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record_execution","arguments":{"caller":"agentA","tool":"fs.read","ok":true,"ok":false,"at":"2026-11-28T05:00:00Z","id":"dupok1"}}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rank_tools","name":"preview","arguments":{"query":"x"}}}"#,
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"preview","arguments":{"instruction":"x","attachments":[{"name":"a","text":"safe","text":"evil"}]}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"record_execution","arguments":{"caller":"agentA","tool":"fs.read","ok":true,"at":"2026-11-28T05:00:00Z","id":"once"}}}"#,
        ],
        4,
    );
    let error = |id: i64| reply_to(&replies, json!(id))["error"].clone();
    assert_eq!(error(2)["code"], -32602, "{}", error(2));
    assert_eq!(error(2)["message"], "argument `ok` is given twice");
    assert_eq!(error(2)["data"]["argument"], "ok");
    assert_eq!(error(3)["code"], -32600, "{}", error(3));
    assert!(
        error(3)["message"]
            .as_str()
            .unwrap()
            .contains("`params.name` is given twice"),
        "{}",
        error(3)
    );
    assert_eq!(error(4)["data"]["argument"], "attachments[0].text");
    // The same call with each key once is taken.
    let once = reply_to(&replies, json!(5));
    assert!(once["result"].is_object(), "{once}");
    assert!(err.contains("`params.requestId` is given twice"), "{err}");
}

/// Kills the server it holds when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ctxconsole mcp --http 127.0.0.1:0` with `extra` arguments, and the URL it listens on.
fn start_http(home: &Path, extra: &[&str]) -> (Server, String) {
    let (server, url, _) = start_http_with(home, extra, None);
    (server, url)
}

/// [`start_http`] with `token` as $CTXCONSOLE_MCP_TOKEN (none: the variable is unset), and
/// what the server said on stderr before the address.
fn start_http_with(home: &Path, extra: &[&str], token: Option<&str>) -> (Server, String, String) {
    let (server, url, notes, _) = start_http_reading(home, extra, token, &[]);
    (server, url, notes)
}

/// [`start_http_with`] with `env` set too, also keeping the server's stderr after the
/// address, to read what it says while serving.
fn start_http_reading(
    home: &Path,
    extra: &[&str],
    token: Option<&str>,
    env: &[(&str, &str)],
) -> (Server, String, String, BufReader<std::process::ChildStderr>) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"));
    cmd.env("CTXCONSOLE_HOME", home)
        .env_remove("CTXCONSOLE_MCP_TOKEN")
        .env_remove("CTXCONSOLE_LOG")
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(t) = token {
        cmd.env("CTXCONSOLE_MCP_TOKEN", t);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let server = Server(child);
    // Notes (a loose temporary directory) may come first: the address is on its own line.
    let mut notes = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 && !line.contains("listening on ") {
        notes.push_str(&line);
        line.clear();
    }
    let url = line
        .trim()
        .strip_prefix("ctxconsole mcp: listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    (server, url, notes, stderr)
}

#[tokio::test]
async fn http_needs_its_token_and_bind_without_one_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let token = "a-test-token-of-some-length";
    let (server, url) = start_http(home.path(), &["--token", token]);

    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.clone(),
        )
        .auth_header(token);
    let c = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    assert_eq!(
        tool_names(&c.list_all_tools().await.unwrap()),
        [
            "compact_catalog",
            "preview",
            "rank_tools",
            "read_cached",
            "record_execution"
        ]
    );
    let v = call(
        &c,
        "rank_tools",
        json!({"query": "draft a blog post", "k": 2}),
    )
    .await
    .unwrap();
    assert!(!v["ranked"].as_array().unwrap().is_empty());
    let budgets = read(&c, "ctxconsole://context-budgets").await;
    assert!(budgets["rows"].as_array().unwrap().len() >= 20);
    c.cancel().await.unwrap();

    // Without the token, or with another, nothing is served.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let http = reqwest::Client::new();
    for auth in [None, Some("Bearer wrong-token-of-some-length")] {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401, "{auth:?}");
    }
    // The scheme is read in any case (RFC 9110; tester 15 F8: `bearer` got 401); the token
    // is compared whole.
    for (auth, status) in [
        (format!("bearer {token}"), 200),
        (format!("BEARER {token}"), 200),
        (format!("bearer {token}x"), 401),
        (format!("Basic {token}"), 401),
    ] {
        let r = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", &auth)
            .json(&init)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{auth}");
    }
    // A page from another origin is refused even with the token (DNS rebinding); this
    // machine's own origin is served.
    for (origin, status) in [("http://evil.example", 403), ("http://127.0.0.1:9", 200)] {
        let r = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .header("origin", origin)
            .json(&init)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{origin}");
    }
    // A body over the 32 MiB message limit is refused before it is read whole.
    let mut body = init.clone();
    body["params"]["clientInfo"]["name"] = json!("n".repeat(40_000_000));
    let r = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .json(&body)
        .send()
        .await;
    // Refused with 413, or the connection closed while the rest was still being sent.
    if let Ok(r) = r {
        assert_eq!(r.status(), 413);
    }
    drop(server);

    // Off loopback only with --bind and a token.
    // Not even from the environment (where a token would start a server here).
    let out = ctx(home.path())
        .env_remove("CTXCONSOLE_MCP_TOKEN")
        .args(["mcp", "--bind", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
    let out = ctx(home.path())
        .args(["mcp", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind"));
    let out = ctx(home.path())
        .args(["mcp", "--bind", "0.0.0.0:0", "--token", "short"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Outside tester F6 over HTTP: a body that is not a JSON-RPC message this server reads got
/// 415 "fail to deserialize request body". It gets 400 with the same JSON-RPC error as over
/// stdio, and the server keeps serving.
#[tokio::test]
async fn http_answers_an_unreadable_body_with_400_and_a_json_rpc_error() {
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(home.path(), &["--no-token"]);
    let http = reqwest::Client::new();
    let post = |body: Vec<u8>| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, code, id, says) in [
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"rank_tools\",\"arguments\":{\"query\":\"caf\xe9 clone\"}}}".to_vec(),
            -32700,
            json!(2),
            "UTF-8",
        ),
        (
            br#"[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]"#.to_vec(),
            -32600,
            Value::Null,
            "batch",
        ),
        (
            br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.to_vec(),
            -32600,
            Value::Null,
            "`id`",
        ),
        (b"not json".to_vec(), -32700, Value::Null, "Parse error"),
        // Over HTTP a notification that cannot be read is refused too: there is a response
        // to say it in.
        (
            br#"{"jsonrpc":"2.0","method":7}"#.to_vec(),
            -32600,
            Value::Null,
            "`method`",
        ),
    ] {
        let r = post(body.clone()).await.unwrap();
        let shown = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(r.status(), 400, "{shown}");
        assert_eq!(
            r.headers()["content-type"].to_str().unwrap(),
            "application/json",
            "{shown}"
        );
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v.as_object().unwrap()["id"], id, "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{shown}: {v}");
    }
    // A message opening with a byte-order mark is read, as over stdio (tester 49 F8: 400).
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    let r = post(body).await.unwrap();
    assert_eq!(r.status(), 200);
    let answer = r.text().await.unwrap();
    assert!(answer.contains("\"protocolVersion\""), "{answer}");
    // A good request after them is served.
    let c = ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
    assert_eq!(c.list_all_tools().await.unwrap().len(), 5);
    c.cancel().await.unwrap();
}

/// Issue 18 item 7: the MCP preview carries the past-plans part as the CLI's does, and
/// `no_prior` leaves it out.
#[tokio::test]
async fn preview_carries_the_past_plans_prior_like_the_cli() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    // Nine followed plans of this shape in the sample history.
    let intent = "clone the docs site and run its tests";
    let ask = json!({"model": TIER_C_MODEL, "instruction": intent});
    let mcp = call(&c, "preview", ask).await.unwrap();
    let cli =
        json_of(ctx(home.path()).args(["preview", intent, "--model", TIER_C_MODEL, "--json"]));
    assert!(
        mcp["past_steps"]["sent"][0]["plans"].as_u64() >= Some(2),
        "{mcp:#}"
    );
    assert_eq!(mcp["past_steps"], cli["past_steps"]);
    assert_eq!(mcp["request"], cli["request"]);
    let off = call(
        &c,
        "preview",
        json!({"model": TIER_C_MODEL, "instruction": intent, "no_prior": true}),
    )
    .await
    .unwrap();
    assert!(off["past_steps"].is_null());
    let cli_off = json_of(ctx(home.path()).args([
        "preview",
        intent,
        "--model",
        TIER_C_MODEL,
        "--no-prior",
        "--json",
    ]));
    assert_eq!(off["request"], cli_off["request"]);
    c.cancel().await.unwrap();
}

/// Issue 19 item 5: with `[rank] semantic` in the workspace's config.toml, the MCP tools
/// that rank or preview give the ids `preview --json` gives under the same config (the
/// embedder: the in-process server's `/v1/embeddings`); a catalog given as an argument is
/// ranked lexically and says so; an embedder that fails is an error naming it.
#[tokio::test]
async fn ranking_tools_use_the_configured_semantic_layer_like_the_cli() {
    let server = common::llm_server::LlmServer::start();
    let config = |embedder: &str| {
        format!(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"2s\"\nretries = 1\nretry_base = \"50ms\"\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n\n[rank]\nsemantic = \"{embedder}\"\n",
            server.base_url()
        )
    };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        config("endpoint:test/embed-ok"),
    )
    .unwrap();
    let plain = tempfile::tempdir().unwrap();
    // A prompt whose Tier C catalog the layer changes.
    let intent = "open the dashboard in the browser and fill in the signup form";
    let cli_of = |home: &Path| {
        json_of(ctx(home).args([
            "preview",
            intent,
            "--model",
            TIER_C_MODEL,
            "--no-history",
            "--json",
        ]))
    };
    let cli = cli_of(home.path());
    let lexical = cli_of(plain.path());
    assert_ne!(cli["compaction"]["kept"], lexical["compaction"]["kept"]);
    let c = start(home.path(), &[]).await;
    let mcp = call(
        &c,
        "preview",
        json!({"model": TIER_C_MODEL, "instruction": intent, "no_history": true}),
    )
    .await
    .unwrap();
    assert_eq!(mcp["compaction"]["kept"], cli["compaction"]["kept"]);
    assert_eq!(mcp["ranking"], cli["ranking"]);
    assert!(mcp["ranking"]["top"][0]["semantic"].is_object(), "{mcp:#}");

    // rank_tools: the same order as the preview's explained top, each with its semantic part.
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    let top = names(&cli["ranking"]["top"]);
    let ranked = call(
        &c,
        "rank_tools",
        json!({"query": intent, "k": top.len(), "no_history": true}),
    )
    .await
    .unwrap();
    assert_eq!(ranked["semantic_layer"], true);
    assert_eq!(names(&ranked["ranked"]), top);
    assert_ne!(
        top,
        names(&lexical["ranking"]["top"]),
        "the layer changes the order"
    );

    // compact_catalog with the prompt: the same catalog as sent.
    let compact = call(
        &c,
        "compact_catalog",
        json!({"model": TIER_C_MODEL, "prompt": intent}),
    )
    .await
    .unwrap();
    let cli_compact = json_of(ctx(home.path()).args([
        "compact",
        "--prompt",
        intent,
        "--model",
        TIER_C_MODEL,
        "--no-history",
        "--json",
    ]));
    assert_eq!(compact["kept"], cli_compact["kept"], "{compact:#}");
    // A catalog given as an argument is ranked lexically, and says so.
    let given = call(
        &c,
        "rank_tools",
        json!({"query": "draft a blog post", "no_history": true,
               "catalog": ctxconsole::sample::SAMPLE_CATALOG}),
    )
    .await
    .unwrap();
    assert_eq!(given["semantic_layer"], false);
    c.cancel().await.unwrap();

    // An embedder that fails: the ranking tools answer with an error naming it and where.
    std::fs::write(
        home.path().join("config.toml"),
        config("endpoint:test/embed-500"),
    )
    .unwrap();
    let c = start(home.path(), &[]).await;
    let e = call(&c, "rank_tools", json!({"query": intent}))
        .await
        .expect_err("the embedder fails");
    let url = format!("{}/embeddings", server.base_url());
    assert!(
        e.message.contains(&url) && e.message.contains("HTTP 500"),
        "{}",
        e.message
    );
    c.cancel().await.unwrap();
}

/// A file's bytes and modification time.
fn bytes_and_mtime(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
    )
}

/// `mcp --read-only` writes nothing. With no store it serves the history a new one would
/// start with (the sample) from memory and creates no file; an existing store is opened
/// read-only and comes out byte for byte, its modification time unchanged; a store that
/// needs migrating is refused, saying so, not migrated.
#[tokio::test]
async fn read_only_creates_no_store_and_leaves_an_existing_one_untouched() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("history.sqlite");
    let c = start(home.path(), &["--read-only"]).await;
    let plans = read(&c, "ctxconsole://my-plans").await;
    assert_eq!(plans["total_plans"], 668, "the sample history, from memory");
    let ranked = call(&c, "rank_tools", json!({"query": "draft a blog post"}))
        .await
        .unwrap();
    assert!(!ranked["ranked"].as_array().unwrap().is_empty());
    c.cancel().await.unwrap();
    assert!(!store.exists(), "--read-only created {}", store.display());
    assert_eq!(file_names(home.path()), Vec::<String>::new());

    // An existing store (made and seeded by a command that writes), then read-only.
    let cli = json_of(ctx(home.path()).args(["history", "--models", "--json"]));
    // A drift window other than the store's: applying it would rewrite every plan's drift.
    std::fs::write(
        home.path().join("config.toml"),
        "[history]\ndrift_window = \"2h\"\n",
    )
    .unwrap();
    let files = file_names(home.path());
    let before = bytes_and_mtime(&store);
    let c = start(home.path(), &["--read-only"]).await;
    assert_eq!(read(&c, "ctxconsole://models").await, cli);
    assert_eq!(read(&c, "ctxconsole://my-plans").await["total_plans"], 668);
    call(&c, "preview", json!({"instruction": "draft a blog post"}))
        .await
        .unwrap();
    c.cancel().await.unwrap();
    assert!(before == bytes_and_mtime(&store), "the store was written");
    assert_eq!(file_names(home.path()), files);

    // A store at an older schema: read-only refuses it rather than migrating it.
    let db = rusqlite::Connection::open(&store).unwrap();
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    db.pragma_update(None, "user_version", version - 1).unwrap();
    drop(db);
    let before = bytes_and_mtime(&store);
    let out = ctx(home.path())
        .args(["mcp", "--read-only"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs migrating") && stderr.contains("--read-only"),
        "{stderr}"
    );
    assert!(before == bytes_and_mtime(&store), "the store was migrated");
}

/// A workspace config whose semantic layer embeds with the in-process server's `model`,
/// each request waiting at most `timeout`, with `retries`.
fn with_embedder(
    home: &Path,
    server: &common::llm_server::LlmServer,
    timeout: &str,
    retries: u32,
    model: &str,
) {
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"{timeout}\"\nretries = {retries}\nretry_base = \"50ms\"\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n\n[rank]\nsemantic = \"endpoint:test/{model}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
}

/// The semantic layer's embedder fails at start (HTTP 500 after its retries): the first
/// call that needs the layer is told at once what the start-up attempt found, instead of
/// waiting for that attempt and then spending the same retries again; the call after it
/// tries again. Counted by the requests the embeddings endpoint received.
#[tokio::test]
async fn a_layer_that_failed_at_start_is_reported_to_the_first_call_without_a_second_attempt() {
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    // One retry: each attempt is two requests.
    with_embedder(home.path(), &server, "2s", 1, "embed-500");
    let embeddings = || server.embedded_inputs().len();
    let c = start(home.path(), &[]).await;
    let url = format!("{}/embeddings", server.base_url());
    let e = call(&c, "rank_tools", json!({"query": "draft a blog post"}))
        .await
        .expect_err("the embedder fails");
    assert!(
        e.message.contains(&url) && e.message.contains("HTTP 500"),
        "{}",
        e.message
    );
    assert_eq!(
        embeddings(),
        2,
        "one attempt (a request and its retry), not two"
    );
    // The next call tries again.
    call(&c, "rank_tools", json!({"query": "draft a blog post"}))
        .await
        .expect_err("the embedder still fails");
    assert_eq!(embeddings(), 4);
    c.cancel().await.unwrap();
}

/// An agent that hangs up (closes stdin) while a call is still running ends the server: it
/// gives the call rmcp's 5 s to answer (a client that pipes its requests in and reads on
/// still gets its answers) and then goes, instead of staying behind until the call gives
/// up. The call here waits on an embeddings endpoint that answers nothing for 10 s; before,
/// the server stayed 9.6 s.
#[test]
fn closing_stdin_mid_call_ends_the_server() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    with_embedder(home.path(), &server, "30s", 2, "embed-hang");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "rank_tools", "arguments": {"query": "draft a blog post"}}}),
    );
    // The call is under way: the endpoint holds it for 10 s.
    std::thread::sleep(Duration::from_millis(500));
    drop(stdin);
    let hung_up = Instant::now();
    let exited = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if hung_up.elapsed() > Duration::from_secs(25) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let waited = hung_up.elapsed();
    if exited.is_none() {
        child.kill().unwrap();
    }
    assert!(
        waited < Duration::from_secs(8),
        "the server stayed {waited:?} after stdin closed (exited: {exited:?})"
    );
}

/// Tester 15 F5: two requests with one id in flight over stdio: rmcp kept one call per id,
/// so the second's answer was dropped and its client waited for nothing. The second is
/// refused at once (-32600, naming the id); the first is answered as ever, and the id is
/// free again after. The first call is held by an embeddings endpoint that answers nothing
/// for 10 s, so it is surely in flight when the second comes.
#[test]
fn a_request_reusing_an_id_in_flight_is_refused_and_the_first_answered() {
    use std::io::Write;
    use std::time::Duration;
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    with_embedder(home.path(), &server, "30s", 0, "embed-hang");
    let (_server, mut stdin, rx) = raw_server(home.path(), Stdio::null());
    let rank = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "rank_tools", "arguments": {"query": "draft a blog post"}}})
    };
    for line in [
        RAW_INITIALIZE.to_string(),
        RAW_INITIALIZED.to_string(),
        rank(7).to_string(),
        rank(7).to_string(),
        json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}).to_string(),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let next = || -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer within 60 s");
        serde_json::from_str(&line).unwrap()
    };
    assert_eq!(next()["id"], 1);
    // The second 7 at once, then the ping, while the first 7 is still held.
    let refused = next();
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("id 7 is already in flight"), "{message}");
    assert_eq!(next()["id"], 8);
    let first = next();
    assert_eq!(first["id"], 7, "{first}");
    assert!(
        first.get("result").is_some() || first.get("error").is_some(),
        "{first}"
    );
    // Answered: the id may be used again.
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    )
    .unwrap();
    stdin.flush().unwrap();
    let again = next();
    assert_eq!(again, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
}

/// Tester 15 F3 (left by its helper): a compute call cancelled by its client ran on to its
/// end on a blocking thread, so a client could queue heavy calls, cancel them and leave a
/// core busy for each. At most two compute at once; a third waits for a place, and its
/// cancel drops it before it starts. Two rankings are held by an embeddings endpoint that
/// answers a question after 10 s; the third, cancelled while it waits, never asks for its
/// question's vector.
#[test]
fn a_compute_call_cancelled_while_it_waits_for_a_place_never_runs() {
    use std::io::Write;
    use std::time::Duration;
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    with_embedder(home.path(), &server, "30s", 0, "embed-hang-single");
    let (_server, mut stdin, rx) = raw_server(home.path(), Stdio::null());
    let rank = |id: u32, query: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "rank_tools", "arguments": {"query": query}}})
        .to_string()
    };
    let questions = || {
        server
            .embedded_inputs()
            .into_iter()
            .filter(|inputs| inputs.len() == 1)
            .count()
    };
    let next = || -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer within 60 s");
        serde_json::from_str(&line).unwrap()
    };
    for line in [RAW_INITIALIZE.to_string(), RAW_INITIALIZED.to_string()] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    assert_eq!(next()["id"], 1);
    for line in [
        rank(11, "draft a blog post"),
        rank(12, "take a screenshot of the page"),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    // Both are held at the endpoint: the two places are taken.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while questions() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the two calls never asked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for line in [
        rank(13, "store a memory about the launch"),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 13, "reason": "gave up"}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 14, "method": "ping"}).to_string(),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    assert_eq!(
        next()["id"],
        14,
        "a ping is no compute call: answered at once"
    );
    let mut answered: Vec<Value> = vec![next()["id"].clone(), next()["id"].clone()];
    answered.sort_by_key(|v| v.as_u64());
    assert_eq!(answered, [json!(11), json!(12)]);
    // Places free again: the cancelled call, had it only been waiting, would start now.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        questions(),
        2,
        "the cancelled call ran: {:?}",
        server.embedded_inputs()
    );
    assert!(rx.try_recv().is_err(), "no answer for the cancelled call");
}

/// Tester 15 F5 over HTTP: in one session, of two requests with one id the first's answer
/// was lost (its stream only kept alive). The second is refused at once with 400 and the
/// JSON-RPC error; the first is answered, and the id is free again after.
#[tokio::test]
async fn over_http_a_request_reusing_an_id_in_flight_is_refused() {
    let llm = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    with_embedder(home.path(), &llm, "30s", 0, "embed-hang");
    let (_server, url) = start_http(home.path(), &["--no-token"]);
    let http = reqwest::Client::new();
    let r = raw_initialize(&http, &url).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(in_session(&http, &url, &session, &initialized).await, 202);
    let post = |body: Value| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .json(&body)
            .send()
    };
    let rank = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "rank_tools", "arguments": {"query": "draft a blog post"}}});
    // Its stream is open (the endpoint holds the call for 10 s): the call is in flight.
    let first = post(rank.clone()).await.unwrap();
    assert_eq!(first.status(), 200);
    let second = post(rank).await.unwrap();
    assert_eq!(second.status(), 400);
    let refused: Value = second.json().await.unwrap();
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("id 7 is already in flight"), "{message}");
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), first.text())
        .await
        .expect("the first call answered within 60 s")
        .unwrap();
    assert!(answer.contains("\"id\":7"), "{answer}");
    let again = post(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("\"id\":7"));
}

/// An `initialize` over raw HTTP, as the outside tester's script sends it (no DELETE after).
async fn raw_initialize(http: &reqwest::Client, url: &str) -> reqwest::Response {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap()
}

/// Outside tester F5: every `initialize` over HTTP left a session (about 50 KB) until its
/// client sent DELETE, which none did: 15,000 of them held 771 MB, nothing freed when idle.
/// The sessions are capped (an `initialize` beyond closes the least recently used), DELETE
/// frees a place, and an idle session expires.
#[tokio::test]
async fn http_sessions_are_capped_and_idle_ones_expire() {
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(
        home.path(),
        &["--max-sessions", "3", "--session-idle", "3s", "--no-token"],
    );
    let http = reqwest::Client::new();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut ids = Vec::new();
    for _ in 0..8 {
        let r = raw_initialize(&http, &url).await;
        assert_eq!(r.status(), 200);
        ids.push(r.headers()["mcp-session-id"].to_str().unwrap().to_string());
        assert!(r.text().await.unwrap().contains("serverInfo"));
    }
    // Never more than 3: the first 5, each least recently used in its turn, were closed.
    for (i, id) in ids.iter().enumerate() {
        let wanted = if i < 5 { 404 } else { 202 };
        assert_eq!(
            in_session(&http, &url, id, &initialized).await,
            wanted,
            "{i}"
        );
    }
    // DELETE gives a place back at once: the next session closes none.
    let r = http
        .delete(&url)
        .header("mcp-session-id", &ids[5])
        .send()
        .await
        .unwrap();
    // 204, which the MCP SDKs take as a session ended (tester 13 T13-5: 202 made the Python
    // client warn "Session termination failed: 202" at every clean exit).
    assert_eq!(r.status(), 204);
    // A session this server does not hold (closed, never made) is 404 to DELETE as to any
    // other request (tester 20 F4: 204 whatever the id).
    for id in [ids[5].as_str(), ids[0].as_str(), "made-up", "../../etc"] {
        let r = http
            .delete(&url)
            .header("mcp-session-id", id)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{id}");
    }
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    let newest = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    for id in [&ids[6], &ids[7], &newest] {
        assert_eq!(in_session(&http, &url, id, &initialized).await, 202, "{id}");
    }

    // Nobody uses them: they expire. A session that expired is unknown to the server.
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    for id in [&ids[6], &ids[7], &newest] {
        assert_eq!(in_session(&http, &url, id, &initialized).await, 404, "{id}");
    }
    assert_eq!(raw_initialize(&http, &url).await.status(), 200);
}

/// Tester 20 F17: a session closed at the cap, or as idle, while its `record_execution` was
/// waiting for the store's write lock: the call was stored and its client got an empty
/// stream (or a 500 on its next request). A session with a request in flight is neither
/// idle nor closed for a newcomer, who is told 503 when every session is busy; the call is
/// answered, and the session goes at the cap once it is not.
#[tokio::test]
async fn http_a_session_with_a_call_in_flight_is_neither_idle_nor_closed_at_the_cap() {
    let home = tempfile::tempdir().unwrap();
    json_of(ctx(home.path()).args(["history", "--limit", "0", "--json"]));
    let store = home.path().join("history.sqlite");
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (_server, url) = start_http(
        home.path(),
        &[
            "--max-sessions",
            "1",
            "--session-idle",
            "300ms",
            "--no-token",
        ],
    );
    let http = reqwest::Client::new();
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    let a = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    r.text().await.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(in_session(&http, &url, &a, &initialized).await, 202);
    let record = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_execution",
        "arguments": {"caller": "busy-agent", "tool": "web.search", "ok": true, "id": "e-f17"}}});
    let call = {
        let (http, url, a) = (http.clone(), url.clone(), a.clone());
        tokio::spawn(async move {
            let r = http
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &a)
                .json(&record)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    };
    // Four idle times with the call waiting for the lock: the session is not idle, and a
    // newcomer at the cap of 1 cannot close it.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 503);
    let refused = r.text().await.unwrap();
    assert!(refused.contains("busy at once"), "{refused}");
    assert!(!call.is_finished(), "the call did not wait for the lock");
    holder.execute_batch("ROLLBACK").unwrap();
    let (status, answer) = call.await.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("\"id\":2") && answer.contains("\"result\"") && answer.contains("e-f17"),
        "the call was not answered: {answer}"
    );
    let conn = rusqlite::Connection::open(&store).unwrap();
    let stored: i64 = conn
        .query_row(
            "SELECT count(*) FROM executions WHERE caller = 'busy-agent'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 1);
    // Not busy now: the newcomer is let in, and the session closed for it is 404 to its
    // client, never a 500.
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    assert_eq!(in_session(&http, &url, &a, &ping).await, 404);
}

/// A POST of `message` in session `id`, its status.
/// The answer is read to its end, as a client does: a session is in use until its answer
/// has been sent whole, and an answer left unread would leave the order of last use to
/// when the server finished writing it (it had failed CI once: ids[0] still busy, another
/// session closed in its place).
async fn in_session(http: &reqwest::Client, url: &str, id: &str, message: &Value) -> u16 {
    let r = post_in_session(http, url, id, message).await;
    let status = r.status().as_u16();
    r.bytes().await.unwrap();
    status
}

/// `message` POSTed in session `id`, its answer unread.
async fn post_in_session(
    http: &reqwest::Client,
    url: &str,
    id: &str,
    message: &Value,
) -> reqwest::Response {
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", id)
        .json(message)
        .send()
        .await
        .unwrap()
}

/// Second tester F: sessions kept alive by pings held every place under the cap, and every
/// other client got 503 for as long as the pings went on. A new `initialize` now closes the
/// least recently used session instead; that session's client gets 404 and starts again.
#[tokio::test]
async fn http_sessions_kept_alive_by_pings_give_way_to_a_new_client() {
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(
        home.path(),
        // An idle limit well above one round of pings (800 ms and three pings), so a loaded
        // machine does not let a pinged session expire; five rounds still outlast it.
        &["--max-sessions", "3", "--session-idle", "3s", "--no-token"],
    );
    let http = reqwest::Client::new();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = raw_initialize(&http, &url).await;
        assert_eq!(r.status(), 200);
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        r.text().await.unwrap();
        assert_eq!(in_session(&http, &url, &id, &initialized).await, 202);
        ids.push(id);
    }
    // Pinged past the idle limit, oldest first each round: none expires, and ids[0] ends
    // as the least recently used.
    for _ in 0..5 {
        for id in &ids {
            assert_eq!(in_session(&http, &url, id, &ping).await, 200);
        }
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    }
    // ids[0] was used last of all this round, ids[1] now least recently.
    assert_eq!(in_session(&http, &url, &ids[0], &ping).await, 200);
    let r = raw_initialize(&http, &url).await;
    assert_eq!(
        r.status(),
        200,
        "a new client was refused while pings held the cap"
    );
    let newcomer = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    assert!(r.text().await.unwrap().contains("serverInfo"));
    assert_eq!(in_session(&http, &url, &ids[1], &ping).await, 404);
    for id in [&ids[0], &ids[2], &newcomer] {
        assert_eq!(in_session(&http, &url, id, &ping).await, 200, "{id}");
    }
    // The evicted client starts again, as after idle expiry; the least recently used
    // (ids[0], pinged first just now) gives way to it.
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    assert_eq!(in_session(&http, &url, &ids[0], &ping).await, 404);
    assert_eq!(in_session(&http, &url, &ids[2], &ping).await, 200);
}

/// Left task N2: at the cap a new `initialize` closed the least recently used session and
/// nothing said so. Each eviction is now a line on stderr and in the log (the session's
/// short id, its idle time, the cap); a burst is said at most once a second, with a count.
#[tokio::test]
async fn http_sessions_closed_at_the_cap_are_said_once_a_second_at_most() {
    let home = tempfile::tempdir().unwrap();
    let (server, url, _, stderr) = start_http_reading(
        home.path(),
        &["--max-sessions", "2", "--no-token"],
        None,
        &[("CTXCONSOLE_LOG", "info")],
    );
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let lines = std::sync::Arc::clone(&said);
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    let closing = |said: &[String]| -> Vec<String> {
        said.iter()
            .filter(|l| l.contains("closed at the cap"))
            .cloned()
            .collect()
    };
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let r = raw_initialize(&http, &url).await;
        ids.push(r.headers()["mcp-session-id"].to_str().unwrap().to_string());
    }
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(raw_initialize(&http, &url).await.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let first = closing(&said.lock().unwrap());
    let short: String = ids[0].chars().take(8).collect();
    assert_eq!(
        first,
        [format!(
            "ctxconsole mcp: session {short}… closed at the cap of 2 (idle 1 s) to admit a new one"
        )]
    );

    // A burst of 30 more: not a line each, and every one counted.
    for _ in 0..30 {
        assert_eq!(raw_initialize(&http, &url).await.status(), 200);
    }
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let all = closing(&said.lock().unwrap());
    assert!(all.len() <= 4, "{all:#?}");
    let counted: usize = all[1..]
        .iter()
        .map(|l| {
            match l
                .split_once(" and ")
                .and_then(|(_, n)| n.split_once(" more"))
            {
                Some((n, _)) => 1 + n.parse::<usize>().unwrap(),
                None => 1,
            }
        })
        .sum();
    assert_eq!(counted, 30, "{all:#?}");
    drop(server);
    let log = std::fs::read_to_string(home.path().join("logs/ctxconsole.log")).unwrap();
    assert!(
        log.contains(&format!("session {short}… closed at the cap of 2")),
        "{log}"
    );
}

/// Tester 15 F4: connections were unbounded and a half-sent request was held for good,
/// before any token was checked: ~20,000 of them ran the process out of descriptors, an
/// authorised client could not connect, and each said "a connection ended" on stderr when
/// it went (41,517 lines). Now at most `--max-connections` are served at once, a request's
/// headers and then its body must come within `--read-timeout`, and the line is said at
/// most once a second, counting the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_connections_are_capped_and_half_sent_requests_time_out() {
    use std::io::{Read, Write};
    use std::time::Duration;
    let home = tempfile::tempdir().unwrap();
    let token = "a-test-token-of-some-length";
    let (server, url, addr, said) = start_http_listened(
        home.path(),
        &["--max-connections", "4", "--read-timeout", "1s"],
        token,
    );
    let pid = server.0.id();
    let descriptors = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count()
    };
    let before = descriptors();

    // An authorised POST whose body stops short of its Content-Length: 408 once the
    // timeout is up.
    let mut short_body = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        short_body,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
    )
    .unwrap();
    // Its headers read (it has sent an authorised request), it is not one closed to make
    // room for the newer ones below.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Four times the cap of connections that send half their headers and wait.
    let half_sent: Vec<std::net::TcpStream> = (0..16)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            s
        })
        .collect();
    // Past the cap they wait in the kernel's backlog, not in the process.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = descriptors();
    assert!(held <= before + 4 + 2, "{before} descriptors, then {held}");

    // An authorised client gets through once the others have timed out.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    assert_eq!(initialize_with(&http, &url, token).await, 200);

    let mut answer = String::new();
    short_body
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = short_body.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("the body did not arrive within 1s"),
        "{answer}"
    );
    // Each half-sent one was closed by the server.
    for mut s in half_sent {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut rest = Vec::new();
        // End of stream or a reset: closed. A read that timed out: still open.
        if let Err(e) = s.read_to_end(&mut rest) {
            assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "a half-sent connection was still open after 30 s"
            );
        }
    }

    // Every one is counted, in fewer lines than connections: as ended on its timeout, or
    // as closed to make room for a newer one.
    let ended = |said: &[String]| -> (usize, usize) {
        let lines: Vec<&String> = said
            .iter()
            .filter(|l| {
                l.starts_with("ctxconsole mcp: a connection ended: ") || l.contains("make room")
            })
            .collect();
        let counted = lines.iter().map(|l| closed_in(l)).sum();
        (lines.len(), counted)
    };
    let (lines, counted) = said_until(&said, 30, |said| ended(said), |&(_, n)| n >= 16).await;
    let all = said.lock().unwrap().join("\n");
    assert!(counted >= 16, "{all}");
    assert!(lines <= 10, "{all}");
    drop(server);
}

/// Lines the server writes to stderr, as they come.
type Said = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// An HTTP server with `token` (see [`start_http_reading`]), its URL, its address
/// (`HOST:PORT`, for raw connections) and its stderr lines as they come.
fn start_http_listened(home: &Path, extra: &[&str], token: &str) -> (Server, String, String, Said) {
    let (server, url, _, stderr) = start_http_reading(home, extra, Some(token), &[]);
    let said = Said::default();
    let lines = std::sync::Arc::clone(&said);
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    let addr = url
        .strip_prefix("http://")
        .and_then(|a| a.strip_suffix("/mcp"))
        .unwrap()
        .to_string();
    (server, url, addr, said)
}

/// `read` of the lines said so far, once `enough` holds of it or after `seconds`.
async fn said_until<T>(
    said: &Said,
    seconds: u64,
    read: impl Fn(&[String]) -> T,
    enough: impl Fn(&T) -> bool,
) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let now = read(&said.lock().unwrap());
        if enough(&now) || std::time::Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// How many connections one of the server's rate-limited lines says ended or were closed.
fn closed_in(line: &str) -> usize {
    if let Some((_, rest)) = line.split_once("): closed ") {
        return match rest.split_once(" connections") {
            Some((n, _)) => n.parse().unwrap(),
            None => 1,
        };
    }
    match line
        .split_once(", and ")
        .and_then(|(_, n)| n.split_once(" more connection"))
    {
        Some((n, _)) => 1 + n.parse::<usize>().unwrap(),
        None => 1,
    }
}

/// One HTTP/1.1 answer read off `stream` (headers and a Content-Length body), as text;
/// what came before the stream ended, if it ended first.
fn read_answer(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    let whole = |got: &[u8]| -> bool {
        let text = String::from_utf8_lossy(got);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_string)
            })
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        body.len() >= length
    };
    while !whole(&got) {
        match stream.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Tester 15 F4's leftover: with every slot taken by connections that sent nothing (or
/// never a valid token), an authorised client waited until they timed out, one read
/// timeout per slot's turn (7.2 s behind 1,200 of them). Now the oldest connection that
/// has sent no authorised request is closed to make room for a new one; one that has sent
/// an authorised request stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_makes_room_for_an_authorised_client() {
    use std::io::{Read, Write};
    use std::time::Duration;
    let home = tempfile::tempdir().unwrap();
    let token = "a-test-token-of-some-length";
    // A read timeout far past the client's: a slot freed by it would come too late.
    let (server, url, addr, said) = start_http_listened(
        home.path(),
        &["--max-connections", "3", "--read-timeout", "120s"],
        token,
    );
    let get = |bearer: &str| {
        format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\n\r\n")
    };
    let connect = || {
        let s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    };
    // One connection that sent an authorised request (rmcp answers 406: no Accept) and
    // one that sent a wrong token; both stay open.
    let mut proven = connect();
    proven.write_all(get(token).as_bytes()).unwrap();
    let first = read_answer(&mut proven);
    assert!(first.starts_with("HTTP/1.1 406"), "{first}");
    let mut wrong = connect();
    wrong.write_all(get("not-the-token").as_bytes()).unwrap();
    let refused = read_answer(&mut wrong);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    // Four times the cap of connections that send nothing.
    let silent: Vec<std::net::TcpStream> = (0..12).map(|_| connect()).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The authorised client is served long before any read timeout.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    assert_eq!(initialize_with(&http, &url, token).await, 200);

    // The wrong-token one was closed (the oldest unproven), the authorised one was not.
    let mut rest = Vec::new();
    let read = wrong.read_to_end(&mut rest);
    assert!(
        read.is_ok()
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the wrong-token connection was still open: {read:?}"
    );
    proven.write_all(get(token).as_bytes()).unwrap();
    let again = read_answer(&mut proven);
    assert!(again.starts_with("HTTP/1.1 406"), "{again}");
    // The earliest silent ones were closed too; the number is said, in a line or a few.
    let mut first_silent = silent.into_iter().next().unwrap();
    assert!(matches!(first_silent.read(&mut [0u8; 1]), Ok(0) | Err(_)));
    let closed: usize = said_until(
        &said,
        10,
        |said| {
            said.iter()
                .filter(|l| l.contains("make room"))
                .map(|l| closed_in(l))
                .sum()
        },
        |&n| n >= 11,
    )
    .await;
    let all = said.lock().unwrap().join("\n");
    assert!(closed >= 11, "{all}");
    assert!(
        all.contains("all 3 connection slots were taken (--max-connections)"),
        "{all}"
    );
    drop(server);
}

/// Outside tester F4: `mcp --http 127.0.0.1:PORT` without a token served every local
/// account, and the README steered shared hosts there, as the only way to keep the token
/// out of `ps` was no token. The token now comes from $CTXCONSOLE_MCP_TOKEN or a private
/// --token-file, and a server without one says at start that anyone on the machine can
/// connect.
#[tokio::test]
async fn http_takes_its_token_outside_argv_and_says_when_it_has_none() {
    let home = tempfile::tempdir().unwrap();
    let (server, _url, notes) = start_http_with(home.path(), &["--no-token"], None);
    assert!(notes.contains("any local user can connect"), "{notes}");
    assert!(notes.contains("CTXCONSOLE_MCP_TOKEN"), "{notes}");
    drop(server);

    let token = "a-token-kept-out-of-ps-0123";
    let file = home.path().join("mcp-token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let by_file = ["--token-file", file.to_str().unwrap()];
    let http = reqwest::Client::new();
    for (extra, env) in [(&[][..], Some(token)), (&by_file[..], None)] {
        let (_server, url, notes) = start_http_with(home.path(), extra, env);
        assert!(!notes.contains("any local user"), "{notes}");
        assert_eq!(raw_initialize(&http, &url).await.status(), 401);
        let config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.clone(),
            )
            .auth_header(token);
        let c = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        assert_eq!(c.list_all_tools().await.unwrap().len(), 5);
        c.cancel().await.unwrap();
    }

    // A token file others may read is refused, naming the fix.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = ctx(home.path())
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(by_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("chmod 600"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An `initialize` over raw HTTP carrying `token`, its status.
async fn initialize_with(http: &reqwest::Client, url: &str, token: &str) -> u16 {
    http.post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Second tester F: with no token `--http` served every local user by default (with a
/// warning). Now a token is made for it into the workspace's `mcp-token`, a new 0600 file,
/// its path said on stderr. Left task N1: every start made a new one, so every client had
/// to read the file again after each restart; a private, well-formed one is now reused
/// (said so), and deleting it is how to rotate. --no-token keeps the old way.
#[tokio::test]
async fn http_without_a_token_makes_one_into_the_workspace_and_reuses_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("mcp-token");
    let http = reqwest::Client::new();
    let read_token = || {
        std::fs::read_to_string(&file)
            .unwrap()
            .trim_end()
            .to_string()
    };
    let (server, url, notes) = start_http_with(home.path(), &[], None);
    assert!(!notes.contains("any local user"), "{notes}");
    assert!(
        notes.contains(&format!("made a new token into {}", file.display())),
        "{notes}"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let first = read_token();
    assert_eq!(first.len(), 64, "{first}");
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit()), "{first}");
    assert_eq!(raw_initialize(&http, &url).await.status(), 401);
    assert_eq!(initialize_with(&http, &url, &first).await, 200);
    drop(server);

    // A restart reuses it: the client's token still works.
    let (server, url, notes) = start_http_with(home.path(), &[], None);
    assert!(
        notes.contains(&format!("using the token in {}", file.display())),
        "{notes}"
    );
    assert!(!notes.contains("made a new token"), "{notes}");
    assert_eq!(read_token(), first);
    assert_eq!(initialize_with(&http, &url, &first).await, 200);
    drop(server);

    // Deleting it rotates it.
    std::fs::remove_file(&file).unwrap();
    let (server, url, notes) = start_http_with(home.path(), &[], None);
    assert!(notes.contains("made a new token into"), "{notes}");
    let second = read_token();
    assert_ne!(second, first);
    assert_eq!(initialize_with(&http, &url, &first).await, 401);
    assert_eq!(initialize_with(&http, &url, &second).await, 200);
    drop(server);
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("mcp-token.")), "{names:?}");

    // --no-token: none made, none checked, and the server says so.
    std::fs::remove_file(&file).unwrap();
    let (_server, url, notes) = start_http_with(home.path(), &["--no-token"], None);
    assert!(notes.contains("any local user can connect"), "{notes}");
    assert!(!file.exists());
    assert_eq!(raw_initialize(&http, &url).await.status(), 200);
}

/// Left task N1: an `mcp-token` that is not a private, well-formed token of ours is refused
/// at start with one line naming the file and what is wrong, never replaced and never
/// echoed.
#[test]
fn http_refuses_a_workspace_token_file_it_cannot_trust() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    // Private, so the only line on stderr is the refusal (no note about a loose directory).
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let file = home.path().join("mcp-token");
    let good = "0123456789abcdef".repeat(4);
    let secret = "a-secret-that-must-not-be-shown";
    let refusal = |why: &str| {
        let before = std::fs::symlink_metadata(&file).ok().map(|m| m.len());
        let out = ctx(home.path())
            .args(["mcp", "--http", "127.0.0.1:0"])
            // Taken, it would serve until killed.
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap_or_else(|e| panic!("{why}: not refused at start: {e}"));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{why}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{why}: {err}");
        assert!(err.contains(&file.display().to_string()), "{why}: {err}");
        assert!(err.contains(why), "{why}: {err}");
        assert!(err.contains("delete it"), "{why}: {err}");
        assert!(
            !err.contains(secret) && !err.contains(&good),
            "{why}: {err}"
        );
        assert_eq!(
            std::fs::symlink_metadata(&file).ok().map(|m| m.len()),
            before,
            "{why}: the file was touched"
        );
    };
    let private = |bytes: &str| {
        let _ = std::fs::remove_file(&file);
        std::fs::write(&file, bytes).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    };

    // Others may read it: whoever did may hold the token.
    private(&format!("{good}\n"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    refusal("mode 640");
    // Empty, or not one token as made here.
    private("");
    refusal("is empty");
    for bad in [
        format!("{secret}\n"),
        format!("{}\n", &good[1..]),
        format!("{}\n", good.to_uppercase()),
        format!("{good}\n{good}\n"),
        format!(" {good}\n"),
    ] {
        private(&bad);
        refusal("not one token");
    }
    // A symbolic link, even to a good private token.
    let target = home.path().join("elsewhere");
    std::fs::write(&target, format!("{good}\n")).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _ = std::fs::remove_file(&file);
    std::os::unix::fs::symlink(&target, &file).unwrap();
    refusal("symbolic link");
    std::fs::remove_file(&file).unwrap();
    // A directory.
    std::fs::create_dir(&file).unwrap();
    refusal("a directory");
    std::fs::remove_dir(&file).unwrap();
    // Another user's (only root can give a file away).
    private(&format!("{good}\n"));
    if std::os::unix::fs::chown(&file, Some(65534), None).is_ok() {
        refusal("owned by user 65534");
    }
}

/// A caller whose plans hold pasted intents (5 of 1 MB) still reads `my-plans/{caller}`:
/// each intent it lists is its opening, at most 1 KiB, and how many bytes follow (tester 8
/// F19: the resource was refused as over the 6 MiB bound, and `my-plans`' advice pointed
/// back at it). The bound itself is tested in the handler's unit tests.
#[tokio::test]
async fn a_caller_with_pasted_intents_reads_its_plans_each_intent_cut_to_its_opening() {
    let home = tempfile::tempdir().unwrap();
    let plans = home.path().join("long-intents.jsonl");
    let mut lines = String::new();
    for (i, topic) in ["alpha", "bravo", "charlie", "delta", "echo"]
        .iter()
        .enumerate()
    {
        let intent = format!("clone the {topic} repo {}", "word ".repeat(200_000));
        let plan = json!({"id": format!("long-{i}"), "at": "2026-11-24T10:00:00Z", "caller": "c", "model": "m/x", "intent": intent, "outcome": "ok", "steps": [{"order": 1, "tool": "repo.clone"}]});
        lines.push_str(&format!("{plan}\n"));
    }
    std::fs::write(&plans, lines).unwrap();
    let out = ctx(home.path())
        .args(["import", "plans"])
        .arg(&plans)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let c = start(home.path(), &[]).await;
    let mine = read(&c, "ctxconsole://my-plans/c").await;
    assert!(
        mine.to_string().len() < 64 * 1024,
        "{} bytes",
        mine.to_string().len()
    );
    assert_eq!(mine["total_plans"], 5);
    let mut listed = 0;
    for g in mine["groups"].as_array().unwrap() {
        let rows = g["latest"].as_array().unwrap();
        for intent in std::iter::once(&g["intent"]).chain(rows.iter().map(|r| &r["intent"])) {
            let intent = intent.as_str().unwrap();
            assert!(intent.starts_with("clone the "), "{intent}");
            assert!(intent.len() < 1200, "{} bytes", intent.len());
            assert!(
                intent.contains("more bytes; `history show"),
                "{}",
                &intent[900..]
            );
            listed += 1;
        }
    }
    assert!(listed >= 6, "{listed}");
    assert!(read(&c, "ctxconsole://my-plans").await["groups"].is_array());
    c.cancel().await.unwrap();
}

/// Tester 6 F8 over MCP: `record_execution` of a failed run (`ok: false`) of a plan's only
/// step answered `"drift": "followed"`. A failed run is not a step done: the plan is
/// partial, and the answer, `history --drift --json` and `my-plans` carry `executed_ok`.
#[tokio::test]
async fn a_failed_run_recorded_over_mcp_does_not_follow_the_plan() {
    let home = tempfile::tempdir().unwrap();
    let plans = home.path().join("p.jsonl");
    std::fs::write(
        &plans,
        json!({"id": "d-fail", "at": "2026-11-20T10:03:00Z", "caller": "c1", "model": "m",
            "intent": "clone the repo", "steps": [{"order": 1, "tool": "repo.clone"}]})
        .to_string(),
    )
    .unwrap();
    ctx(home.path())
        .args(["import", "plans"])
        .arg(&plans)
        .assert()
        .success();
    let c = start(home.path(), &[]).await;
    let run = |ok: bool, at: &str| json!({"caller": "c1", "tool": "repo.clone", "ok": ok, "plan_id": "d-fail", "at": at});
    let answer = call(&c, "record_execution", run(false, "2026-11-20T10:03:10Z"))
        .await
        .unwrap();
    assert_eq!(answer["plan"]["drift"], "partial", "{answer}");
    assert_eq!(answer["plan"]["executed_ok"], json!([false]), "{answer}");
    assert_eq!(
        drift_of(home.path(), "d-fail")["executed_ok"],
        json!([false])
    );
    let mine = read(&c, "ctxconsole://my-plans/c1").await;
    assert_eq!(
        mine["groups"][0]["latest"][0]["executed_ok"],
        json!([false]),
        "{mine:#}"
    );
    // A second run that succeeds does the step.
    let answer = call(&c, "record_execution", run(true, "2026-11-20T10:03:20Z"))
        .await
        .unwrap();
    assert_eq!(answer["plan"]["drift"], "followed", "{answer}");
    assert_eq!(answer["plan"]["executed_ok"], json!([false, true]));
    c.cancel().await.unwrap();
}

/// Import into `home`'s store plan `id` of `caller` at 2026-11-20T10:00:00Z, one step
/// (`fs.search`), as the `record_execution` tests read it.
fn imported_retry_plan(home: &Path, id: &str, caller: &str) {
    let plans = home.join(format!("{id}.jsonl"));
    let line = json!({"id": id, "at": "2026-11-20T10:00:00Z", "caller": caller, "model": "m",
        "intent": "find the retry policy", "steps": [{"order": 1, "tool": "fs.search", "args": {}}]});
    std::fs::write(&plans, format!("{line}\n")).unwrap();
    common::succeeded(ctx(home).args(["import", "plans"]).arg(&plans));
}

/// Tester 7 T7-14: `record_execution` without `plan_id` linked the run to the caller's plan
/// by its window and changed its drift, yet answered `"plan": null`. It answers the plan
/// the run counted for, as with a `plan_id` (the same drift `history --drift` shows), and
/// null only when it counted for none.
#[tokio::test]
async fn record_execution_without_a_plan_id_answers_the_plan_its_window_linked() {
    let home = tempfile::tempdir().unwrap();
    imported_retry_plan(home.path(), "w1", "c9");
    let c = start(home.path(), &[]).await;
    let args =
        json!({"caller": "c9", "tool": "fs.search", "ok": true, "at": "2026-11-20T10:01:00Z"});
    let answer = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(answer["added"], 1, "{answer}");
    assert_eq!(answer["drift_updated"], 1, "{answer}");
    let plan = &answer["plan"];
    assert_eq!(plan["id"], "w1", "{answer}");
    assert_eq!(plan["drift"], "followed", "{answer}");
    assert_eq!(plan["executed"], json!(["fs.search"]));
    assert_eq!(plan["executed_ok"], json!([true]));
    let shown = drift_of(home.path(), "w1");
    assert_eq!(shown["drift"], plan["drift"]);
    // A run no plan of its caller's window holds counts for none: null, as before.
    let args =
        json!({"caller": "c-none", "tool": "fs.search", "ok": true, "at": "2026-11-20T10:01:00Z"});
    let answer = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(answer["added"], 1, "{answer}");
    assert!(answer["plan"].is_null(), "{answer}");
    c.cancel().await.unwrap();
}

/// A run that names a stored plan but is dated before it (beyond the clock skew) never
/// counts for it: drift leaves it out, so the answer's `plan` is null, not the named plan
/// shown as if the run had counted.
#[tokio::test]
async fn record_execution_dated_before_its_named_plan_counts_for_none() {
    let home = tempfile::tempdir().unwrap();
    imported_retry_plan(home.path(), "w2", "c8");
    let c = start(home.path(), &[]).await;
    let args = json!({"caller": "c8", "plan_id": "w2", "tool": "fs.search", "ok": true,
        "at": "2026-11-20T09:00:00Z"});
    let answer = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(answer["added"], 1, "{answer}");
    assert!(answer["plan"].is_null(), "{answer}");
    assert_ne!(drift_of(home.path(), "w2")["drift"], "followed");
    // At the plan's time it counts, as before.
    let args = json!({"caller": "c8", "plan_id": "w2", "tool": "fs.search", "ok": true,
        "at": "2026-11-20T10:00:01Z"});
    let answer = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(answer["plan"]["id"], "w2", "{answer}");
    assert_eq!(answer["plan"]["drift"], "followed", "{answer}");
    c.cancel().await.unwrap();
}

/// Tester 27 F1: once a run names the caller's plan, that plan is judged by the runs naming
/// it alone, so a later run naming no plan, inside the plan's window, counts for none — and
/// the answer said `plan: null` with no note, where every other such case says why.
#[tokio::test]
async fn a_run_naming_no_plan_beside_runs_naming_it_says_why_it_counts_for_none() {
    let home = tempfile::tempdir().unwrap();
    imported_retry_plan(home.path(), "w3", "c7");
    let c = start(home.path(), &[]).await;
    let named = json!({"caller": "c7", "plan_id": "w3", "tool": "fs.search", "ok": true,
        "at": "2026-11-20T10:00:30Z"});
    let answer = call(&c, "record_execution", named).await.unwrap();
    assert_eq!(answer["plan"]["id"], "w3", "{answer}");
    assert!(answer.get("note").is_none(), "{answer}");
    let loose = json!({"caller": "c7", "tool": "fs.read", "ok": false,
        "at": "2026-11-20T10:01:00Z"});
    let answer = call(&c, "record_execution", loose).await.unwrap();
    assert_eq!(answer["added"], 1, "{answer}");
    assert!(answer["plan"].is_null(), "{answer}");
    let note = answer["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("'w3', which the runs naming it judge alone") && note.contains("plan_id"),
        "{answer}"
    );
    assert_eq!(
        drift_of(home.path(), "w3")["executed"],
        json!(["fs.search"])
    );
    c.cancel().await.unwrap();
}

/// Tester 20 F2, F10, F14: the answer's `plan` is what drift stores. A run dated before the
/// plan it names changes nothing (the plan stays `followed` on its caller's run naming no
/// plan) and the answer says why in `note`; another caller's run naming a plan counts for it
/// beside the owner's run and the answer says it is another caller's plan; a run naming a
/// replay counts for none: `plan: null`, with a note.
#[tokio::test]
async fn record_execution_answers_what_drift_stores_for_early_foreign_and_replay_runs() {
    let home = tempfile::tempdir().unwrap();
    let plans = home.path().join("w3.jsonl");
    std::fs::write(
        &plans,
        "{\"id\":\"w3\",\"at\":\"2026-11-20T10:00:00Z\",\"caller\":\"c7\",\"model\":\"m\",\
         \"intent\":\"find the retry policy\",\"steps\":[{\"order\":1,\"tool\":\"fs.search\",\"args\":{}},\
         {\"order\":2,\"tool\":\"fs.read\",\"args\":{}}]}\n\
         {\"id\":\"w3r\",\"at\":\"2026-11-20T11:00:00Z\",\"caller\":\"c7\",\"model\":\"m\",\"replay_of\":\"w3\",\
         \"intent\":\"find the retry policy\",\"steps\":[{\"order\":1,\"tool\":\"fs.search\",\"args\":{}}]}\n",
    )
    .unwrap();
    common::succeeded(ctx(home.path()).args(["import", "plans"]).arg(&plans));
    let c = start(home.path(), &[]).await;
    let own =
        json!({"caller": "c7", "tool": "fs.search", "ok": true, "at": "2026-11-20T10:00:30Z"});
    let answer = call(&c, "record_execution", own).await.unwrap();
    assert_eq!(answer["plan"]["id"], "w3", "{answer}");
    let early = json!({"caller": "c7", "plan_id": "w3", "tool": "web.search", "ok": true,
        "at": "2026-11-20T09:59:00Z"});
    let answer = call(&c, "record_execution", early).await.unwrap();
    assert!(answer["plan"].is_null(), "{answer}");
    assert_eq!(answer["drift_updated"], 0, "{answer}");
    assert!(
        answer["note"].as_str().unwrap().contains("changes nothing"),
        "{answer}"
    );
    assert_eq!(
        drift_of(home.path(), "w3")["executed"],
        json!(["fs.search"])
    );
    let foreign = json!({"caller": "helper", "plan_id": "w3", "tool": "fs.read", "ok": true,
        "at": "2026-11-20T10:01:00Z"});
    let answer = call(&c, "record_execution", foreign).await.unwrap();
    assert_eq!(answer["plan"]["id"], "w3", "{answer}");
    assert_eq!(answer["plan"]["drift"], "followed", "{answer}");
    assert_eq!(
        answer["plan"]["executed"],
        json!(["fs.search", "fs.read"]),
        "{answer}"
    );
    assert_eq!(answer["other_caller_plan"], 1, "{answer}");
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .contains("another caller's plan"),
        "{answer}"
    );
    let replay = json!({"caller": "c7", "plan_id": "w3r", "tool": "fs.search", "ok": true,
        "at": "2026-11-20T11:00:05Z"});
    let answer = call(&c, "record_execution", replay).await.unwrap();
    assert!(answer["plan"].is_null(), "{answer}");
    assert_eq!(answer["replay_plan"], 1, "{answer}");
    assert!(
        answer["note"].as_str().unwrap().contains("replay"),
        "{answer}"
    );
    assert_eq!(drift_of(home.path(), "w3r")["executed"], json!([]));
    // Tester 20 F3: a plan the store does not hold: no fallback to the caller's latest plan.
    let unknown = json!({"caller": "c7", "plan_id": "w-nope", "tool": "fs.search", "ok": true,
        "at": "2026-11-20T10:00:40Z"});
    let answer = call(&c, "record_execution", unknown).await.unwrap();
    assert!(answer["plan"].is_null(), "{answer}");
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .contains("until that plan is imported"),
        "{answer}"
    );
    // Said as every surface says a plan the store does not hold (tester 48 nit).
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .starts_with("no plan 'w-nope' in the workspace's history.sqlite"),
        "{answer}"
    );
    // The server's paths are not the client's to know (tester 49 F10).
    assert!(!answer["note"].as_str().unwrap().contains('/'), "{answer}");
    c.cancel().await.unwrap();
}

/// Tester 11 T11-11: a `record_execution` the client cancelled while it waited for the
/// store's write lock was still stored once the lock went — no answer came, so the agent's
/// retry stored it again. The call is given up once the lock is held, before anything is
/// written; a call not cancelled is stored as ever.
#[test]
fn a_record_execution_cancelled_while_waiting_for_the_store_stores_nothing() {
    use std::io::Write;
    use std::time::Duration;
    let home = tempfile::tempdir().unwrap();
    json_of(ctx(home.path()).args(["history", "--limit", "0", "--json"]));
    let store = home.path().join("history.sqlite");
    let rows = |caller: &str| -> i64 {
        let conn = rusqlite::Connection::open(&store).unwrap();
        conn.query_row(
            "SELECT count(*) FROM executions WHERE caller = ?1",
            [caller],
            |r| r.get(0),
        )
        .unwrap()
    };
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (server, mut stdin, rx) = raw_server(home.path(), Stdio::null());
    let mut send = |line: String| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(RAW_INITIALIZE.to_string());
    let init = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("initialized");
    assert!(init.contains("\"id\":1"), "{init}");
    send(RAW_INITIALIZED.to_string());
    let record = |id: u32, caller: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "record_execution",
            "arguments": {"caller": caller, "tool": "web.search", "ok": true}}})
        .to_string()
    };
    send(record(2, "cancel-agent"));
    // Long enough for the call to be waiting on the lock, not queued.
    std::thread::sleep(Duration::from_millis(1500));
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timeout"}})
            .to_string(),
    );
    std::thread::sleep(Duration::from_millis(500));
    holder.execute_batch("ROLLBACK").unwrap();
    // A call after it, not cancelled, is stored; its answer comes after the first call's
    // fate is settled (one writer at a time).
    send(record(3, "kept-agent"));
    let mut answered = None;
    while answered.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the second call is answered");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_ne!(v["id"], 2, "a cancelled call gets no answer: {v}");
        if v["id"] == 3 {
            answered = Some(v);
        }
    }
    let answered = answered.unwrap();
    assert_eq!(
        answered["result"]["structuredContent"]["added"], 1,
        "{answered}"
    );
    // The cancelled call's worker may still be finishing: give it the time it would take.
    let since = std::time::Instant::now();
    while rows("cancel-agent") == 0 && since.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
    assert_eq!(rows("kept-agent"), 1);
    assert_eq!(rows("cancel-agent"), 0, "the cancelled call was stored");
}

/// Tester 15 F2: `record_execution` stored a configured key given in its names (caller,
/// tool, session, id, the plan it names) as given, and `ctxconsole://my-plans` served a plan's
/// caller holding one. Nothing stored, answered or served holds it; the execution still
/// counts for the plan it names.
#[tokio::test]
async fn record_execution_keeps_a_configured_key_out_of_what_it_stores_and_answers() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let k = KEY_SENTINEL;
    let plans = h.join("plans.jsonl");
    std::fs::write(
        &plans,
        format!(
            "{{\"id\":\"p-{k}\",\"at\":\"2026-11-20T10:00:00Z\",\"caller\":\"agent-{k}\",\
             \"model\":\"m\",\"intent\":\"remember the launch note and blog it\",\
             \"steps\":[{{\"order\":1,\"tool\":\"blog.draft\"}}]}}\n"
        ),
    )
    .unwrap();
    // A store of its own, so the plan is the one `my-plans` shows.
    let store = h.join("own.sqlite");
    let store = store.to_str().unwrap();
    let c = start(h, &["--store", store]).await;
    json_of(
        ctx(h)
            .env("OPENROUTER_API_KEY", k)
            .args(["--store", store, "import", "plans", "--json"])
            .arg(&plans),
    );
    let args = json!({"caller": format!("agent-{k}"), "tool": "blog.draft", "ok": true,
        "plan_id": format!("p-{k}"), "session": format!("s-{k}"), "id": format!("e-{k}"),
        "at": "2026-11-20T10:01:00Z"});
    let answer = call(&c, "record_execution", args.clone()).await.unwrap();
    assert!(!answer.to_string().contains(k), "{answer}");
    assert_eq!(answer["added"], 1, "{answer}");
    assert_eq!(
        answer["plan"]["executed"],
        json!(["blog.draft"]),
        "{answer}"
    );
    assert_eq!(
        answer["execution"]["plan_id"], answer["plan"]["id"],
        "{answer}"
    );
    assert_eq!(
        answer["execution"]["caller"], "agent-[REDACTED]",
        "{answer}"
    );
    let again = call(&c, "record_execution", args).await.unwrap();
    assert_eq!(again["already_present"], 1, "{again}");
    c.cancel().await.unwrap();
    // Served read-only, as any client reads it.
    let r = start(h, &["--store", store, "--read-only"]).await;
    let mine = read(&r, "ctxconsole://my-plans").await;
    assert!(mine.to_string().contains("agent-[REDACTED]"), "{mine}");
    assert!(!mine.to_string().contains(k), "{mine}");
    r.cancel().await.unwrap();
    for args in [&["export"][..], &["export", "--executions"]] {
        let out = ctx(h)
            .args(["--store", store, "history"])
            .args(args)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&out.stdout);
        assert!(out.contains("[REDACTED]") && !out.contains(k), "{out}");
    }
}

/// Sends `signal` to the server.
fn signal(server: &Server, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.0.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// Waits up to `seconds` for the server to exit, and how.
fn exited_within(server: &mut Server, seconds: u64) -> Option<std::process::ExitStatus> {
    let since = std::time::Instant::now();
    while since.elapsed() < std::time::Duration::from_secs(seconds) {
        if let Some(status) = server.0.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    None
}

/// Tester 20 F9: SIGTERM (or SIGINT) ended `mcp --http` at once, mid-call: a
/// `record_execution` could be stored with no answer sent, and nothing was said. Now no more
/// connections are taken, the call in flight (here waiting for the store's write lock) is
/// answered, and the server exits saying so.
/// An HTTP server past `initialize` with a `record_execution` (id `e-f9`) in flight that
/// the store's write lock holds: `holder` keeps the lock until rolled back or dropped.
struct HeldHttpCall {
    server: Server,
    said: Said,
    holder: rusqlite::Connection,
    call: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
}

impl HeldHttpCall {
    async fn start(home: &Path) -> HeldHttpCall {
        json_of(ctx(home).args(["history", "--limit", "0", "--json"]));
        let holder = rusqlite::Connection::open(home.join("history.sqlite")).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (server, url, _, said) = start_http_listened(home, &[], "f9-token-0123456789");
        let http = reqwest::Client::new();
        let post = |session: Option<String>, message: Value| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let mut r = http
                    .post(&url)
                    .bearer_auth("f9-token-0123456789")
                    .header("accept", "application/json, text/event-stream");
                if let Some(s) = session {
                    r = r.header("mcp-session-id", s);
                }
                r.json(&message).send().await
            }
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let r = post(None, init).await.unwrap();
        let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        r.text().await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            post(Some(session.clone()), initialized)
                .await
                .unwrap()
                .status(),
            202
        );
        let record = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_execution",
            "arguments": {"caller": "stopped-agent", "tool": "web.search", "ok": true, "id": "e-f9"}}});
        let call = tokio::spawn(post(Some(session), record));
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        HeldHttpCall {
            server,
            said,
            holder,
            call,
        }
    }

    /// Sends `sig` and waits for the server to say it stopped accepting connections.
    async fn stopping(&self, sig: nix::sys::signal::Signal) -> String {
        signal(&self.server, sig);
        said_until(
            &self.said,
            10,
            |l| l.join("\n"),
            |l| l.contains("accepting no more"),
        )
        .await
    }
}

/// Tester 20 F9: SIGTERM (or SIGINT) ended `mcp --http` at once, mid-call: a
/// `record_execution` could be stored with no answer sent, and nothing was said. Now no more
/// connections are taken, the call in flight (here waiting for the store's write lock) is
/// answered, and the server exits saying so.
#[tokio::test]
async fn a_stop_signal_lets_an_http_call_in_flight_answer_then_exits() {
    let home = tempfile::tempdir().unwrap();
    let mut held = HeldHttpCall::start(home.path()).await;
    let stopping = held.stopping(nix::sys::signal::Signal::SIGTERM).await;
    assert!(
        stopping.contains(
            "SIGTERM: accepting no more connections; 1 call in flight gets up to 5s to answer"
        ),
        "{stopping}"
    );
    assert!(
        held.server.0.try_wait().unwrap().is_none(),
        "it ended at once"
    );
    held.holder.execute_batch("ROLLBACK").unwrap();
    let answer = held.call.await.unwrap().unwrap();
    assert_eq!(answer.status(), 200);
    let answer = answer.text().await.unwrap();
    assert!(
        answer.contains("\"result\"") && answer.contains("e-f9"),
        "not answered: {answer}"
    );
    let status = exited_within(&mut held.server, 10).expect("the server did not exit");
    assert!(status.success(), "{status:?}");
    let all = said_until(&held.said, 5, |l| l.join("\n"), |l| l.contains("stopped")).await;
    assert!(
        all.contains("SIGTERM: every call in flight was answered; stopped"),
        "{all}"
    );
}

/// A second stop signal does not wait out the calls' 5 s grace: an operator who presses
/// ctrl+c again means now, as the console's quit reads it. Over HTTP, the call the store's
/// lock holds is cut and said; before, the second signal did nothing.
#[tokio::test]
async fn a_second_stop_signal_over_http_stops_at_once() {
    let home = tempfile::tempdir().unwrap();
    let mut held = HeldHttpCall::start(home.path()).await;
    held.stopping(nix::sys::signal::Signal::SIGINT).await;
    signal(&held.server, nix::sys::signal::Signal::SIGINT);
    let status = exited_within(&mut held.server, 15).expect("the server did not exit");
    assert!(status.success(), "{status:?}");
    let all = said_until(&held.said, 5, |l| l.join("\n"), |l| l.contains("again")).await;
    assert!(
        all.contains("SIGINT again: stopped at once; 1 call was still running and got no answer"),
        "{all}"
    );
    assert!(!all.contains("after 5s"), "{all}");
    drop(held.holder);
}

/// A stdio server past `initialize`, its stderr piped: what the stop tests drive.
struct StdioSession {
    server: Server,
    stdin: Option<std::process::ChildStdin>,
    answers: std::sync::mpsc::Receiver<String>,
    stderr: std::process::ChildStderr,
}

impl StdioSession {
    fn start(home: &Path) -> StdioSession {
        let (mut server, stdin, answers) = raw_server(home, Stdio::piped());
        let stderr = server.0.stderr.take().unwrap();
        let mut s = StdioSession {
            server,
            stdin: Some(stdin),
            answers,
            stderr,
        };
        s.send(RAW_INITIALIZE);
        s.answer();
        s.send(RAW_INITIALIZED);
        s
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&self) -> String {
        self.answers
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("an answer")
    }

    /// A `record_execution` the store's write lock holds past the 5 s grace: `holder` keeps
    /// the lock until dropped.
    fn held_record_execution(home: &Path) -> (StdioSession, rusqlite::Connection) {
        json_of(ctx(home).args(["history", "--limit", "0", "--json"]));
        let holder = rusqlite::Connection::open(home.join("history.sqlite")).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut s = StdioSession::start(home);
        s.send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record_execution",
                "arguments": {"caller": "stopped-agent", "tool": "web.search", "ok": true, "id": "e-f9"}}})
            .to_string(),
        );
        std::thread::sleep(std::time::Duration::from_millis(700));
        (s, holder)
    }

    /// Its exit (within 15 s, successful) and all it said on stderr.
    fn exited_saying(mut self) -> String {
        use std::io::Read;
        let status = exited_within(&mut self.server, 15).expect("the server did not exit");
        assert!(status.success(), "{status:?}");
        let mut said = String::new();
        self.stderr.read_to_string(&mut said).unwrap();
        said
    }
}

/// Tester 20 F9, over stdio: a stop signal is read as stdin closing — nothing more is read,
/// the call in flight gets 5 s to answer — and what it cut is said: here a call held past
/// that by the store's write lock, not answered.
#[test]
fn a_stop_signal_over_stdio_answers_what_it_can_and_says_what_it_cut() {
    let home = tempfile::tempdir().unwrap();
    let (s, holder) = StdioSession::held_record_execution(home.path());
    signal(&s.server, nix::sys::signal::Signal::SIGINT);
    let said = s.exited_saying();
    drop(holder);
    assert!(
        said.contains("SIGINT: reading no more requests; calls in flight get 5s to answer"),
        "{said}"
    );
    assert!(
        said.contains("SIGINT: 1 call was still running after 5s and got no answer"),
        "{said}"
    );
}

/// A second stop signal over stdio ends the server at once, saying what it cut, where the
/// first gives calls 5 s (and their answers as long again); before, it did nothing.
#[test]
fn a_second_stop_signal_over_stdio_stops_at_once() {
    let home = tempfile::tempdir().unwrap();
    let (s, holder) = StdioSession::held_record_execution(home.path());
    signal(&s.server, nix::sys::signal::Signal::SIGTERM);
    std::thread::sleep(std::time::Duration::from_millis(500));
    signal(&s.server, nix::sys::signal::Signal::SIGINT);
    let said = s.exited_saying();
    drop(holder);
    assert!(
        said.contains("SIGINT again: stopped at once; 1 call was still running and got no answer"),
        "{said}"
    );
    assert!(!said.contains("after 5s"), "{said}");
}

/// Tester 27 F4: a client that closed stdin with a call still waiting for the store was
/// left without a word on why it got no answer; a signal in the same state said it. Closing
/// stdin says it the same way.
#[test]
fn closing_stdin_with_a_call_still_running_says_what_it_cut() {
    let home = tempfile::tempdir().unwrap();
    let (mut s, holder) = StdioSession::held_record_execution(home.path());
    drop(s.stdin.take());
    let said = s.exited_saying();
    drop(holder);
    assert!(
        said.contains("stdin closed: 1 call was still running after 5s and got no answer"),
        "{said}"
    );
}

/// Tester 27 F2: over stdio a stop signal was heard only until the first answer went out:
/// after a `ping`, SIGTERM and SIGINT did nothing (no line, requests still answered) and the
/// server ran until stdin closed, so `systemctl stop` waited out its timeout and killed it.
/// Each signal is heard after any number of answers.
#[test]
fn a_stop_signal_over_stdio_is_heard_after_answers_went_out() {
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let home = tempfile::tempdir().unwrap();
        let mut s = StdioSession::start(home.path());
        for id in 2..5 {
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
            let answer = s.answer();
            assert!(answer.contains(&format!("\"id\":{id}")), "{answer}");
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // stdin stays open: only the signal can end it.
        signal(&s.server, sig);
        let said = s.exited_saying();
        assert!(
            said.contains(&format!(
                "{sig}: every call in flight was answered; stopped"
            )),
            "{said}"
        );
    }
}

/// Tester 28 N1: a client that stopped reading held the answers' writes, and a stop signal
/// never stopped the server (the 5 s grace covers calls, not writing their answers). It
/// stops once the answers had as long again to go out, and says so.
#[test]
fn a_stop_signal_stops_a_server_whose_client_reads_nothing() {
    use std::io::{Read, Write};
    let home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
        .env("CTXCONSOLE_HOME", home.path())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // stdout is held open and never read.
    let _stdout = child.stdout.take().unwrap();
    let mut server = Server(child);
    writeln!(stdin, "{RAW_INITIALIZE}").unwrap();
    writeln!(stdin, "{RAW_INITIALIZED}").unwrap();
    // Answers far past what a pipe holds.
    for id in 2..200 {
        let read = json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": {"uri": "ctxconsole://context-budgets"}});
        writeln!(stdin, "{read}").unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    signal(&server, nix::sys::signal::Signal::SIGTERM);
    let status = exited_within(&mut server, 30).expect("the server did not exit");
    assert!(status.success(), "{status:?}");
    let mut said = String::new();
    stderr.read_to_string(&mut said).unwrap();
    assert!(
        said.contains("SIGTERM: the client read no answer in the 10s after it; stopped"),
        "{said}"
    );
    drop(stdin);
}

/// Tester 20 F13: MCP error messages and their data put the client's control characters
/// back raw (an OSC title and a screen clear, a line break), where the CLI escapes the same
/// values. Every error goes out escaped as the CLI escapes: the same text, no control.
#[tokio::test]
async fn error_messages_escape_the_clients_control_characters() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let raw = |s: &str| s.chars().any(|ch| ch.is_control());
    let e = call(
        &c,
        "preview",
        json!({"instruction": "x", "tier": "\u{1b}[31mD"}),
    )
    .await
    .unwrap_err();
    assert!(
        !raw(&e.message) && e.message.contains("'\\x1b[31mD'"),
        "{}",
        e.message
    );
    let e = call(&c, "rank_tools", json!({"query": "q", "k\u{1b}[2J": 1}))
        .await
        .unwrap_err();
    assert!(
        !raw(&e.message) && e.message.contains("`k\\x1b[2J`"),
        "{}",
        e.message
    );
    // The data names the key sent, exactly (tester 42 F6); the wire escapes it.
    assert_eq!(e.data.unwrap()["argument"], "k\u{1b}[2J");
    // A long one by its opening (review 42).
    let long = "k".repeat(100_000);
    let e = call(&c, "rank_tools", json!({"query": "q", long.as_str(): 1}))
        .await
        .unwrap_err();
    assert!(e.message.len() < 2_000, "{} bytes", e.message.len());
    assert_eq!(
        e.data.unwrap()["argument"].as_str().map(str::len),
        Some(512)
    );
    let e = call(&c, "no\u{1b}[31mtool", json!({})).await.unwrap_err();
    assert!(
        !raw(&e.message) && e.message.contains("no\\x1b[31mtool"),
        "{}",
        e.message
    );
    let uri = "ctxconsole://\u{1b}]0;PWNED\u{7}\u{1b}[2J\nnext";
    let Err(ServiceError::McpError(e)) = c.read_resource(ReadResourceRequestParams::new(uri)).await
    else {
        panic!("{uri} was read");
    };
    assert!(
        !raw(&e.message) && e.message.contains("\\x1b]0;PWNED\\x07\\x1b[2J\\nnext"),
        "{}",
        e.message
    );
    // The data holds the URI sent, exactly (tester 42 F6); the wire escapes it.
    assert_eq!(e.data.unwrap()["uri"], uri);
    c.cancel().await.unwrap();
}

/// Tester 20 F5: a request before `initialize`, or an `initialize` without
/// `protocolVersion`, was answered about `_meta` fields the client never heard of (and over
/// stdio the server then exited); methods it does not serve were refused in two wordings.
/// Now: "not initialized" with the method in the data, the argument named, the server
/// still waiting for a good `initialize`; one wording for every method not served.
#[tokio::test]
async fn requests_before_initialize_are_told_so_and_unserved_methods_share_one_message() {
    use std::io::Write;
    use std::time::Duration;
    let home = tempfile::tempdir().unwrap();
    let (_server, mut stdin, rx) = raw_server(home.path(), Stdio::null());
    let mut ask = |line: Value| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        if line.get("id").is_none() {
            return Value::Null;
        }
        serde_json::from_str(&rx.recv_timeout(Duration::from_secs(30)).expect("an answer")).unwrap()
    };
    let early = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let message = early["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'tools/list' before initialize: this session is not initialized"),
        "{message}"
    );
    assert_eq!(early["error"]["data"]["method"], "tools/list");
    let unversioned = ask(
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(unversioned["error"]["code"], -32602, "{unversioned}");
    assert_eq!(
        unversioned["error"]["message"],
        "initialize: argument `protocolVersion` must be a string, it is missing"
    );
    assert_eq!(unversioned["error"]["data"]["argument"], "protocolVersion");
    // Still serving: a good initialize is answered.
    let init: Value = ask(serde_json::from_str(RAW_INITIALIZE).unwrap());
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    ask(serde_json::from_str(RAW_INITIALIZED).unwrap());
    for (id, method) in [
        (4, "prompts/get"),
        (5, "prompts/list"),
        (6, "unknown/method"),
    ] {
        let params = if method == "prompts/get" {
            json!({"name": "p"})
        } else {
            json!({})
        };
        let r = ask(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(r["error"]["code"], -32601, "{r}");
        assert_eq!(
            r["error"]["message"],
            format!("no method '{method}' on this server"),
            "{r}"
        );
        assert_eq!(r["error"]["data"]["method"], method, "{r}");
    }
    // Tester 28 N4: a 1 MiB method name was echoed whole, twice. Named by its opening.
    let long = "m".repeat(1 << 20);
    let r = ask(json!({"jsonrpc": "2.0", "id": 7, "method": long, "params": {}}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let said = r.to_string();
    assert!(said.len() < 1_000, "{} bytes", said.len());
    assert!(
        r["error"]["message"].as_str().unwrap().ends_with(&format!(
            "…' ({} more bytes) on this server",
            (1 << 20) - 80
        )),
        "{r}"
    );
    // Over HTTP, an initialize without its version is told the same, with 400.
    let (_http_server, url) = start_http(home.path(), &["--no-token"]);
    let r = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["data"]["argument"], "protocolVersion",
        "{body}"
    );
}

/// Tester 20 F8: the server's own calls writing the output cache at once were said on
/// stderr as "another process is writing …", and the operator went looking for a process
/// that did not exist. The server says what it knows: another call of this server, or
/// another process.
#[test]
fn a_write_lock_held_while_the_server_writes_is_not_blamed_on_another_process_alone() {
    use std::io::{BufRead, Write};
    use std::time::Duration;
    let home = tempfile::tempdir().unwrap();
    let (server, mut stdin, rx) = raw_server(home.path(), Stdio::piped());
    let mut server = server;
    let stderr = server.0.stderr.take().unwrap();
    let (said_tx, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = said_tx.send(line);
        }
    });
    let mut send = |line: String| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(RAW_INITIALIZE.to_string());
    rx.recv_timeout(Duration::from_secs(30))
        .expect("initialized");
    send(RAW_INITIALIZED.to_string());
    let preview = |id: u32, line: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "preview",
            "arguments": {"instruction": "summarize the attached log",
                "attachments": [{"name": "log", "text": format!("{line}\n").repeat(40_000)}]}}})
        .to_string()
    };
    send(preview(2, "first log line of the kept paste"));
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("answered");
    assert!(first.contains("\"id\":2"), "{first}");
    let cache = home.path().join("cache.sqlite");
    assert!(cache.exists(), "the paste was not kept");
    let holder = rusqlite::Connection::open(&cache).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    send(preview(3, "another log line, another paste"));
    let line = loop {
        let line = said
            .recv_timeout(Duration::from_secs(30))
            .expect("the wait is said");
        if line.contains("is writing") {
            break line;
        }
    };
    assert!(
        line.contains("another call of this server or another process is writing")
            && line.contains("cache.sqlite"),
        "{line}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    let second = rx.recv_timeout(Duration::from_secs(60)).expect("answered");
    assert!(second.contains("\"id\":3"), "{second}");
}

/// Tester 20 F18: the workspace's own catalog given as text ranked differently (no learned
/// words) while the answer still said `history_prior: true` and nothing else; compaction
/// of a given catalog drops the prior too, unsaid. Each answer says what ranked it.
#[tokio::test]
async fn ranking_a_catalog_given_as_text_says_what_ranked_it() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-data/catalog.json"
    ))
    .unwrap();
    let query = "summarize the standup recording";
    let own = call(&c, "rank_tools", json!({"query": query}))
        .await
        .unwrap();
    assert_eq!(own["history_prior"], true, "{own}");
    assert_eq!(own["learned_words"], true, "{own}");
    let given = call(&c, "rank_tools", json!({"query": query, "catalog": text}))
        .await
        .unwrap();
    assert_eq!(given["history_prior"], true, "{given}");
    assert_eq!(given["learned_words"], false, "{given}");
    let unhistoried = call(
        &c,
        "rank_tools",
        json!({"query": query, "no_history": true}),
    )
    .await
    .unwrap();
    assert_eq!(unhistoried["history_prior"], false);
    assert_eq!(unhistoried["learned_words"], false);
    let own = call(&c, "compact_catalog", json!({"prompt": query}))
        .await
        .unwrap();
    assert_eq!(own["history_prior"], true, "{}", own["history_prior"]);
    assert_eq!(own["learned_words"], true);
    let given = call(
        &c,
        "compact_catalog",
        json!({"prompt": query, "catalog": text}),
    )
    .await
    .unwrap();
    assert_eq!(given["history_prior"], false);
    assert_eq!(given["learned_words"], false);
    assert_eq!(given["semantic_layer"], false);
    c.cancel().await.unwrap();
}

/// Tester 20 F1, F11: the advertised schemas said less or more than the server takes —
/// `maxLength` counted characters where the server counts bytes, `null` was taken for
/// every optional argument the schema typed as plain string/boolean/integer, and `tier`
/// took `"c"` and `" b"` beside its enum. Every tool's schema is held to real calls: each
/// optional argument takes `null`, each bounded string takes `maxLength` characters of
/// the widest UTF-8 (4 bytes each), each enum value is taken and nothing else is.
#[tokio::test]
async fn every_advertised_schema_matches_what_the_server_takes() {
    let home = tempfile::tempdir().unwrap();
    let c = start(home.path(), &[]).await;
    // A briefed paste, for read_cached to read.
    let big = "2026-11-22T10:00:00Z INFO request served in 12ms\n".repeat(20_000);
    let briefed = call(&c, "preview", json!({"instruction": big}))
        .await
        .unwrap();
    let cache_ref = briefed["gate"]["briefing"]["cache_ref"]
        .as_str()
        .unwrap_or_else(|| panic!("briefed: {}", briefed["gate"]))
        .to_string();
    let base = |tool: &str| -> Value {
        match tool {
            "preview" => json!({"instruction": "x"}),
            "rank_tools" => json!({"query": "q"}),
            "read_cached" => json!({"ref": cache_ref}),
            "record_execution" => {
                json!({"caller": "schema-agent", "tool": "web.search", "ok": true})
            }
            _ => json!({}),
        }
    };
    let tools = c.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 5);
    for t in &tools {
        let name = t.name.to_string();
        let schema = Value::Object((*t.input_schema).clone());
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        for (arg, property) in schema["properties"].as_object().unwrap() {
            let mut args = base(&name);
            let optional = !required.contains(&arg.as_str());
            if optional {
                let types = property["type"].as_array();
                assert!(
                    types.is_some_and(|t| t.contains(&json!("null"))),
                    "{name}.{arg}: optional but null not advertised: {property}"
                );
                args[arg] = Value::Null;
                let answer = call(&c, &name, args.clone()).await;
                assert!(answer.is_ok(), "{name}.{arg} = null refused: {answer:?}");
            }
            if let Some(values) = property["enum"].as_array() {
                for v in values {
                    args[arg] = v.clone();
                    assert!(
                        call(&c, &name, args.clone()).await.is_ok(),
                        "{name}.{arg} = {v}"
                    );
                }
                for v in ["c", " A", "D"] {
                    args[arg] = json!(v);
                    let e = call(&c, &name, args.clone()).await.unwrap_err();
                    assert!(
                        e.message.contains(&format!("`{arg}`")),
                        "{name}.{arg} = {v:?}: {}",
                        e.message
                    );
                }
            }
            // A bounded name at its advertised length, in 4-byte characters, is not refused
            // for its length; a text, once (rank_tools' query), the same.
            if let Some(max) = property["maxLength"].as_u64() {
                let max = max as usize;
                if max > 1024 && !(name == "rank_tools" && arg == "query") {
                    continue;
                }
                args[arg] = json!("😀".repeat(max));
                if let Err(e) = call(&c, &name, args.clone()).await {
                    assert!(
                        !e.message.contains("the limit is"),
                        "{name}.{arg}: {max} characters refused for their length: {}",
                        e.message
                    );
                }
            }
        }
    }
    c.cancel().await.unwrap();
}

/// Tester 20 F20: one session opened any number of standalone GET streams, each holding a
/// connection slot while the session lived: 256 locked every other client out. A session
/// has one; a second is refused with 409 while the first is open, and taken once it ends.
#[tokio::test]
async fn http_a_session_has_one_standalone_stream() {
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(home.path(), &["--max-connections", "4", "--no-token"]);
    let http = reqwest::Client::new();
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(in_session(&http, &url, &id, &initialized).await, 202);
    let open_stream = || {
        http.get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .send()
    };
    let first = open_stream().await.unwrap();
    assert_eq!(first.status(), 200);
    for _ in 0..6 {
        let again = open_stream().await.unwrap();
        assert_eq!(again.status(), 409);
        assert!(again.text().await.unwrap().contains("already open"));
    }
    // The session is still served beside its stream, from another connection.
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    assert_eq!(in_session(&http, &url, &id, &ping).await, 200);
    drop(first);
    let mut reopened = 0;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let r = open_stream().await.unwrap();
        if r.status() == 200 {
            reopened += 1;
            break;
        }
    }
    assert_eq!(
        reopened, 1,
        "the stream's place was given back when it ended"
    );
}

/// Tester 19 F7: compaction planned without the defaults block (CLI and MCP) and without the
/// attachments (MCP), so on a tight model it listed entries the request does not carry.
/// `compact --defaults` and `compact_catalog {defaults, attachments}` keep what `preview`
/// keeps for the same ask, and compaction still writes nothing.
#[tokio::test]
async fn compaction_keeps_what_preview_sends_with_defaults_and_attachments() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"t/tiny\"\ninput_tokens = 3000\noutput_tokens = 500\ntier = \"B\"\n",
    )
    .unwrap();
    let c = start(home.path(), &[]).await;
    let prompt = "compare postgres versus mysql for a blog backend and write a draft post";
    let defaults = "Always answer in British English. Prefer open-source tools. ".repeat(30);
    let log = "2026-11-22T10:00:00Z ERROR upstream timed out after 30s\n".repeat(2_000);
    let attachments = json!([{"name": "gateway.log", "text": log}]);
    let preview = call(
        &c,
        "preview",
        json!({"model": "t/tiny", "instruction": prompt, "defaults": defaults, "attachments": attachments}),
    )
    .await
    .unwrap();
    let cache = home.path().join("cache.sqlite");
    let cache_before = std::fs::read(&cache).ok();
    let compact = call(
        &c,
        "compact_catalog",
        json!({"model": "t/tiny", "prompt": prompt, "defaults": defaults, "attachments": attachments}),
    )
    .await
    .unwrap();
    assert_eq!(compact["kept"], preview["compaction"]["kept"]);
    assert_eq!(
        std::fs::read(&cache).ok(),
        cache_before,
        "compaction wrote nothing"
    );
    // Without them the catalog differs: they are what made the difference.
    let bare = call(
        &c,
        "compact_catalog",
        json!({"model": "t/tiny", "prompt": prompt}),
    )
    .await
    .unwrap();
    assert_ne!(bare["kept"], preview["compaction"]["kept"]);
    // The CLI: compact --defaults keeps what preview --defaults keeps.
    let cli_preview = json_of(ctx(home.path()).args([
        "preview",
        prompt,
        "--model",
        "t/tiny",
        "--defaults",
        &defaults,
        "--json",
    ]));
    let cli_compact = json_of(ctx(home.path()).args([
        "compact",
        "--prompt",
        prompt,
        "--model",
        "t/tiny",
        "--defaults",
        &defaults,
        "--json",
    ]));
    assert_eq!(cli_compact["kept"], cli_preview["compaction"]["kept"]);
    c.cancel().await.unwrap();
}

// `read_cached` over MCP, as an agent following a briefing meets it (testers 19 F8,
// 20 F15, F16): the text it gives is the text `ctxconsole cache get` gives, byte for byte.

fn cache_get(home: &Path, r: &str, lines: Option<&str>) -> Vec<u8> {
    let mut cmd = ctx(home);
    cmd.args(["cache", "get", r]);
    if let Some(l) = lines {
        cmd.args(["--lines", l]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The last user message of a previewed request: what the model reads.
#[tokio::test]
async fn a_briefing_names_read_cached_and_read_cached_gives_what_cache_get_gives() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let c = start(h, &[]).await;
    let paste: String = (0..30_000)
        .map(|i| format!("line {i} of the gateway log\r\n"))
        .collect();
    let p = call(
        &c,
        "preview",
        json!({"instruction": "summarise the attached log", "attachments": [{"name": "gw.log", "text": paste}]}),
    )
    .await
    .unwrap();
    let a = &p["attachments"][0];
    assert_eq!(a["admission"], "briefing", "{a}");
    assert_eq!(a["cached"], true);
    let r = a["briefing"]["cache_ref"].as_str().unwrap().to_string();
    assert!(
        common::sent_text(&p).contains(&format!("read_cached(\"{r}\"")),
        "{}",
        common::sent_text(&p)
    );

    // Listed, read-only, and served.
    let tool = c
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "read_cached")
        .expect("read_cached is listed");
    let hints = tool.annotations.unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));

    let whole = call(&c, "read_cached", json!({"ref": r})).await.unwrap();
    assert_eq!(whole["text"].as_str().unwrap(), paste);
    assert_eq!(whole["truncated"], false);
    assert_eq!(cache_get(h, &r, None), paste.as_bytes());

    // By lines: CRLF kept, and the same bytes `cache get --lines` prints.
    let part = call(&c, "read_cached", json!({"ref": r, "lines": "2:3"}))
        .await
        .unwrap();
    let want = "line 1 of the gateway log\r\nline 2 of the gateway log\r\n";
    assert_eq!(part["text"], want);
    assert_eq!(part["first_line"], 2);
    assert_eq!(part["lines"], 2);
    assert_eq!(cache_get(h, &r, Some("2:3")), want.as_bytes());

    // Errors name the argument and the ref, in `cache get`'s words.
    let e = call(&c, "read_cached", json!({"ref": "0123456789abcdef"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    assert!(
        e.message.contains("`ref`") && e.message.contains("no cached content '0123456789abcdef'"),
        "{}",
        e.message
    );
    // The cache by what it is, never the server's path to it (tester 33 F10).
    assert!(
        e.message.contains("in the workspace's output cache") && !e.message.contains('/'),
        "{}",
        e.message
    );
    let e = call(&c, "read_cached", json!({"ref": r, "lines": "40000:40001"}))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("`lines`")
            && e.message.contains(&format!(
                "{r} has 30000 lines; lines 40000:40001 starts after the end"
            )),
        "{}",
        e.message
    );
    let e = call(&c, "read_cached", json!({"ref": r, "lines": "3:2"}))
        .await
        .unwrap_err();
    assert!(e.message.contains("`lines`"), "{}", e.message);
    c.cancel().await.unwrap();

    // A read-only server serves it too: it only reads.
    let c = start(h, &["--read-only"]).await;
    let part = call(&c, "read_cached", json!({"ref": r, "lines": "1:1"}))
        .await
        .unwrap();
    assert_eq!(part["text"], "line 0 of the gateway log\r\n");
    // It keeps no paste: a briefing it returns claims no cache and names no tool, and the
    // preview warns (tester 19 F14, tester 20 F15).
    let other: String = (0..30_000).map(|i| format!("other {i}\n")).collect();
    let p = call(
        &c,
        "preview",
        json!({"instruction": "summarise the attached log", "attachments": [{"name": "o.log", "text": other}]}),
    )
    .await
    .unwrap();
    assert_eq!(p["attachments"][0]["admission"], "briefing");
    assert_eq!(p["attachments"][0]["cached"], false);
    let text = common::sent_text(&p);
    assert!(
        !text.contains("read_cached") && !text.contains("cached as"),
        "{text}"
    );
    assert!(
        p["warnings"]
            .to_string()
            .contains("attachment o.log was briefed and is not kept"),
        "{}",
        p["warnings"]
    );
    c.cancel().await.unwrap();
}

/// `paste` kept in a new workspace's output cache, then read whole with `read_cached` from a
/// `--read-only` server.
async fn read_cached_whole(paste: &str) -> Value {
    read_cached_lines(paste, None).await
}

/// [`read_cached_whole`], by `lines` when given.
async fn read_cached_lines(paste: &str, lines: Option<&str>) -> Value {
    let home = tempfile::tempdir().unwrap();
    let r = {
        let mut cache = ctxconsole::store::cache::OutputCache::open_in(home.path()).unwrap();
        cache.store(paste).unwrap().cache_ref
    };
    let c = start(home.path(), &["--read-only"]).await;
    let mut args = json!({"ref": r});
    if let Some(lines) = lines {
        args["lines"] = json!(lines);
    }
    let got = call(&c, "read_cached", args).await.unwrap();
    c.cancel().await.unwrap();
    got
}

/// More than one answer carries is cut at a line end, and the note says where to go on.
#[tokio::test]
async fn a_read_over_the_bound_is_cut_at_a_line_and_says_where_to_go_on() {
    let line = format!("{}\n", "x".repeat(99));
    let got = read_cached_whole(&line.repeat(20_000)).await; // 2,000,000 bytes
    assert_eq!(got["truncated"], true);
    let text = got["text"].as_str().unwrap();
    assert!(
        text.len() <= 1024 * 1024 && text.ends_with('\n'),
        "{}",
        text.len()
    );
    let given = got["lines"].as_u64().unwrap();
    assert_eq!(text.len() as u64, given * 100);
    let note = got["note"].as_str().unwrap();
    assert!(
        note.contains(&format!("lines=\"{}:the end\"", given + 1)),
        "{note}"
    );
}

/// Review 42 (Low): a line longer than one answer holds was given in part, and the note
/// said that line was given and to go on from the next, so the rest of it was never said to
/// be missing. The note says the line is given in part, how much of it, and how to read it
/// whole.
#[tokio::test]
async fn a_line_longer_than_an_answer_is_said_to_be_given_in_part() {
    let paste = format!("{}\ntail\n", "y".repeat(1_500_000));
    let got = read_cached_whole(&paste).await;
    assert_eq!(got["truncated"], true);
    let text = got["text"].as_str().unwrap();
    assert!(
        text.starts_with('y') && !text.ends_with('\n') && text.len() <= 1024 * 1024,
        "{}",
        text.len()
    );
    assert_eq!(got["lines"], 1);
    let note = got["note"].as_str().unwrap();
    assert!(
        note.contains(&format!(
            "line 1 is given in part (its first {} of 1,500,000 bytes",
            ctxconsole::core::text::thousands(text.len())
        )),
        "{note}"
    );
    assert!(note.contains("cache get"), "{note}");
    assert!(note.contains("lines=\"2:the end\""), "{note}");
    // No line after it in what was asked (review 43 M1: the note named a range refused as
    // past the end, or "2:1"): it says so rather than name one.
    let one_line = "z".repeat(1_500_000);
    for (paste, lines) in [(one_line.as_str(), None), (paste.as_str(), Some("1:1"))] {
        let got = read_cached_lines(paste, lines).await;
        let note = got["note"].as_str().unwrap();
        assert!(note.contains("line 1 is given in part"), "{note}");
        assert!(
            note.contains("no line after it was asked for") && !note.contains("lines=\""),
            "{note}"
        );
    }
}

/// Tester 42 F1: a megabyte of DEL is six escaped (`\u007f`), over what one answer may
/// take, and `read_cached` was refused. It is cut sooner, at a line end, and says why.
#[tokio::test]
async fn a_read_of_control_characters_is_cut_by_its_escaped_size_not_refused() {
    let line = format!("{}\n", "\u{7f}".repeat(99));
    // 1,100,000 bytes, 6.5 MB escaped
    let got = read_cached_whole(&line.repeat(11_000)).await;
    assert_eq!(got["truncated"], true);
    let text = got["text"].as_str().unwrap();
    let given = got["lines"].as_u64().unwrap();
    assert!(
        text.ends_with('\n') && text.len() as u64 == given * 100,
        "{}",
        text.len()
    );
    assert!(
        given * 596 <= 4 * 1024 * 1024 && given > 7_000,
        "{given} lines"
    );
    let note = got["note"].as_str().unwrap();
    assert!(note.contains("escaped"), "{note}");
    assert!(
        note.contains(&format!("lines=\"{}:the end\"", given + 1)),
        "{note}"
    );
}

/// Tester 33 F10: the workspace catalog's `catalog_source.name` was the server's path to it
/// (its home directory, to a remote client under `--bind`). A client is told its file name.
#[tokio::test]
async fn a_client_is_told_the_workspace_catalog_by_its_name_not_the_servers_path() {
    let home = tempfile::tempdir().unwrap();
    let tools = json!({"tools": [
        {"name": "notes_add", "description": "Add a note.", "inputSchema": {"type": "object"}}
    ]});
    std::fs::write(home.path().join("catalog.json"), tools.to_string()).unwrap();
    let c = start(home.path(), &[]).await;
    let ranked = call(&c, "rank_tools", json!({"query": "add a note"}))
        .await
        .unwrap();
    assert_eq!(
        ranked["catalog_source"]["name"], "the workspace's catalog.json",
        "{ranked:#}"
    );
    c.cancel().await.unwrap();
}

/// Characters a terminal acts on or that disguise the text around them, as a question may
/// hold them: each must reach the client as a `\u` escape, never raw.
const HOSTILE: [char; 9] = [
    '\u{202e}',
    '\u{9b}',
    '\u{200b}',
    '\u{2066}',
    '\u{e0041}',
    '\u{7f}',
    '\u{feff}',
    '\u{1b}',
    '\u{85}',
];

fn hostile_query() -> String {
    let mut q = String::from("Show my orders. My booking reference is X1 ");
    q.extend(HOSTILE);
    q.push_str("evil 31m.");
    q
}

/// Every string in `value`, one after another.
fn strings_of(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// `text` holds none of [`HOSTILE`] raw, and the strings of the JSON it is hold them all:
/// escaped, not dropped.
fn escaped_not_dropped(text: &str) {
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let mut strings = String::new();
    strings_of(&value, &mut strings);
    for c in HOSTILE {
        assert!(!text.contains(c), "U+{:04X} raw in: {text}", c as u32);
        assert!(strings.contains(c), "U+{:04X} lost from: {text}", c as u32);
    }
}

/// An answer to `rank_tools` is escaped on the wire, and so is the JSON its text content
/// carries, which a client may print once it has read the message.
fn rank_answer_escaped(raw: &str) {
    escaped_not_dropped(raw);
    let value: Value = serde_json::from_str(raw).unwrap();
    let text = value["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {value}"));
    escaped_not_dropped(text);
    assert!(text.contains("\\u202e"), "{text}");
}

/// Tester 41 F1: `ctxconsole mcp` wrote U+202E, U+009B, U+200B, U+2066, tag characters, DEL
/// and the BOM raw inside its JSON-RPC replies (an MCP client's log viewer or a terminal
/// showed them as they act), where the CLI's `--json` escapes them.
#[test]
fn stdio_answers_escape_what_a_terminal_would_act_on() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let (_server, mut stdin, rx) = raw_server(home.path(), Stdio::null());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rank_tools", "arguments": {"query": hostile_query(), "no_history": true, "k": 1}}});
    for line in [
        RAW_INITIALIZE.to_string(),
        RAW_INITIALIZED.to_string(),
        call.to_string(),
    ] {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    stdin.flush().unwrap();
    let wait = std::time::Duration::from_secs(20);
    rx.recv_timeout(wait).expect("the initialize answer");
    let raw = rx.recv_timeout(wait).expect("the rank_tools answer");
    let value: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(value["id"], 2, "{value}");
    rank_answer_escaped(&raw);
}

/// Tester 41 F1 over HTTP: the answer streamed by rmcp's service is escaped on its way out.
#[tokio::test]
async fn http_answers_escape_what_a_terminal_would_act_on() {
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(home.path(), &["--no-token"]);
    let http = reqwest::Client::new();
    let init = raw_initialize(&http, &url).await;
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    init.bytes().await.unwrap();
    assert_eq!(
        in_session(
            &http,
            &url,
            &session,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .await,
        202
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rank_tools", "arguments": {"query": hostile_query(), "no_history": true, "k": 1}}});
    let r = post_in_session(&http, &url, &session, &call).await;
    assert_eq!(r.status(), 200);
    let raw = String::from_utf8(r.bytes().await.unwrap().to_vec()).unwrap();
    let data = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| d.contains("\"id\":2"))
        .unwrap_or_else(|| panic!("no answer to id 2 in {raw}"));
    assert!(!raw.contains(HOSTILE), "{raw}");
    rank_answer_escaped(data);
}

/// Tester 42 F4 read a session's standalone (GET) stream as left open after DELETE: its
/// reader waited for the connection to close, which HTTP/1.1 keeps for the next request
/// (until the read timeout). The stream itself ends, with its last chunk, however the session
/// is closed: DELETE, at the cap, idle.
#[tokio::test]
async fn http_a_closed_session_ends_its_standalone_stream() {
    let http = reqwest::Client::new();
    // Whether the body comes to its end within `wait` (its last chunk, not a connection cut).
    async fn ends(mut stream: reqwest::Response, wait: std::time::Duration) -> bool {
        let end = tokio::time::timeout(wait, async {
            loop {
                match stream.chunk().await {
                    Ok(Some(_)) => continue,
                    Ok(None) => break true,
                    Err(_) => break false,
                }
            }
        });
        end.await.unwrap_or(false)
    }
    // DELETE and the cap on a server whose sessions idle for 5 minutes: a stream that ends
    // within 10 s was ended by them, not by the idle closing (review 43 L2).
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(
        home.path(),
        &[
            "--max-sessions",
            "1",
            "--session-idle",
            "300s",
            "--no-token",
        ],
    );
    let soon = std::time::Duration::from_secs(10);
    let (id, stream) = session_with_stream(&http, &url).await;
    let deleted = http
        .delete(&url)
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    assert!(
        ends(stream, soon).await,
        "DELETE ended the session's stream"
    );
    // The one place taken by a session with its stream open; a newcomer closes it.
    let (_, stream) = session_with_stream(&http, &url).await;
    let r = raw_initialize(&http, &url).await;
    assert_eq!(r.status(), 200);
    assert!(
        ends(stream, soon).await,
        "closing at the cap ended the stream"
    );

    // Idle: nothing sent for 2 s closes the session, and its stream with it.
    let home = tempfile::tempdir().unwrap();
    let (_server, url) = start_http(home.path(), &["--session-idle", "2s", "--no-token"]);
    let (_, stream) = session_with_stream(&http, &url).await;
    assert!(
        ends(stream, std::time::Duration::from_secs(20)).await,
        "closing an idle session ended its stream"
    );
}

/// A new session, initialized, with its standalone (GET) stream open.
async fn session_with_stream(http: &reqwest::Client, url: &str) -> (String, reqwest::Response) {
    let r = raw_initialize(http, url).await;
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    r.bytes().await.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(in_session(http, url, &id, &initialized).await, 202);
    let stream = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    (id, stream)
}

/// Tester 45 F8: `mcp --read-only` serves a store's groups as they were grouped; grouped by
/// an older build's word rules, `my-plans` says so in a `groups_note` field (absent
/// otherwise), and the store is not written.
#[tokio::test]
async fn read_only_groups_by_an_older_builds_word_rules_are_said_so() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("history.sqlite");
    // Made and seeded by a command that writes.
    json_of(ctx(home.path()).args(["history", "--json", "--limit", "1"]));
    let c = start(home.path(), &["--read-only"]).await;
    let plans = read(&c, "ctxconsole://my-plans").await;
    assert!(plans.get("groups_note").is_none(), "{plans}");
    c.cancel().await.unwrap();
    let db = rusqlite::Connection::open(&store).unwrap();
    db.execute("UPDATE meta SET value = '0' WHERE key = 'shape_rules'", [])
        .unwrap();
    drop(db);
    let before = bytes_and_mtime(&store);
    let c = start(home.path(), &["--read-only"]).await;
    let plans = read(&c, "ctxconsole://my-plans").await;
    assert!(
        plans["groups_note"]
            .as_str()
            .is_some_and(|n| n.starts_with("groups are by an older build's word rules")),
        "{plans}"
    );
    assert_eq!(plans["total_plans"], 668);
    c.cancel().await.unwrap();
    assert!(before == bytes_and_mtime(&store), "the store was written");
}
