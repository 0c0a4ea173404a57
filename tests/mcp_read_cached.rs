//! `read_cached` over MCP, as an agent following a briefing meets it: the real binary
//! started as a subprocess and driven with rmcp's client. The text it gives is the text
//! `ctxconsole cache get` gives, byte for byte (testers 19 F8, 20 F15, F16).

use rmcp::model::{CallToolRequestParams, ErrorCode, ErrorData};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::{ServiceExt, transport::TokioChildProcess};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;

mod common;
use common::ctx;

type Client = RunningService<RoleClient, ()>;

async fn start(home: &Path, extra: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"));
    cmd.env("CTXCONSOLE_HOME", home).arg("mcp").args(extra);
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
        Ok(r) => Ok(r.structured_content.unwrap()),
        Err(ServiceError::McpError(e)) => Err(e),
        Err(e) => panic!("{tool}: {e}"),
    }
}

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
fn sent_text(preview: &Value) -> String {
    preview["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

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
        sent_text(&p).contains(&format!("read_cached(\"{r}\"")),
        "{}",
        sent_text(&p)
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
    let text = sent_text(&p);
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

/// More than one answer carries is cut at a line end, and the note says where to go on.
#[tokio::test]
async fn a_read_over_the_bound_is_cut_at_a_line_and_says_where_to_go_on() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let line = format!("{}\n", "x".repeat(99));
    let paste = line.repeat(20_000); // 2,000,000 bytes
    let r = {
        let mut cache = ctxconsole::store::cache::OutputCache::open_in(h).unwrap();
        cache.store(&paste).unwrap().cache_ref
    };
    let c = start(h, &["--read-only"]).await;
    let got = call(&c, "read_cached", json!({"ref": r})).await.unwrap();
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
    c.cancel().await.unwrap();
}
