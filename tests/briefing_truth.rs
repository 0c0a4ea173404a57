//! A briefed paste tells the truth about where its full content is (tester 19 F14): the
//! briefing sent names the output cache and `read_cached` only when the content was really
//! stored there; otherwise it says the rest is not kept, and the request warns.

mod common;

use common::prompts::big_log;
use common::{ctx, json_of};
use ctxconsole::core::budget::effective_row;
use ctxconsole::preview::{Ask, Attachment, QuestionVectors, plan_resilient};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use serde_json::Value;
use std::path::Path;

const TIER_C: &str = "openrouter/openrouter/free";

fn preview(home: &Path, big: &Path, extra: &[&str]) -> Value {
    let mut cmd = ctx(home);
    cmd.args(["preview", "--model", TIER_C, "--json", "--attach"])
        .arg(big)
        .args(extra)
        .arg("summarise the errors in the attached log");
    json_of(&mut cmd)
}

/// The text `preview` writes for the log attached, under the instruction [`preview`] uses.
fn preview_text(home: &Path, big: &Path, extra: &[&str]) -> String {
    let out = ctx(home)
        .args(["preview", "--model", TIER_C])
        .args(extra)
        .arg("--attach")
        .arg(big)
        .arg("summarise the errors in the attached log")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn not_kept_warnings(p: &Value) -> usize {
    p["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w.as_str().unwrap().contains("is not kept"))
        .count()
}

#[test]
fn with_no_cache_the_briefing_claims_no_cache_and_the_preview_warns() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let big = big_log(files.path());

    let kept = preview(home.path(), &big, &[]);
    let a = &kept["attachments"][0];
    assert_eq!(a["admission"], "briefing");
    assert_eq!(a["cached"], true);
    let r = a["briefing"]["cache_ref"].as_str().unwrap();
    assert!(common::sent_text(&kept).contains(&format!(
        "The full content is cached as {r}. To read a part: read_cached(\"{r}\""
    )));
    assert_eq!(not_kept_warnings(&kept), 0, "{}", kept["warnings"]);
    // The text view names the ref `cache get` reads it back by, under the attachment, as
    // the console does (tester 48 F3: only `--json` had it).
    let text = preview_text(home.path(), &big, &[]);
    let attachment_line = text.find("attachment big.log:").expect("attachment line");
    let under = &text[attachment_line..];
    assert!(
        under.contains(&format!(
            "full paste in the output cache; read it back: ctxconsole cache get {r}"
        )),
        "{text}"
    );
    let map_line = a["briefing"]["text"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap();
    assert!(under.contains(&format!("  | {map_line}")), "{text}");

    let other = tempfile::tempdir().unwrap();
    let p = preview(other.path(), &big, &["--no-cache"]);
    let a = &p["attachments"][0];
    assert_eq!(a["admission"], "briefing");
    assert_eq!(a["cached"], false);
    let text = common::sent_text(&p);
    assert!(
        !text.contains("read_cached") && !text.contains("cached as"),
        "{text}"
    );
    assert!(
        text.contains("Only this map was sent; the rest of the content is not kept"),
        "{text}"
    );
    assert_eq!(not_kept_warnings(&p), 1, "{}", p["warnings"]);
    assert!(!other.path().join("cache.sqlite").exists());

    // The text view says it too.
    let text = preview_text(other.path(), &big, &["--no-cache"]);
    assert!(
        text.contains(
            "note: attachment big.log was briefed and is not kept: the model sees only its map"
        ),
        "{text}"
    );
    assert!(
        text.contains("— not kept: the model sees only the map"),
        "{text}"
    );
}

/// A cache that cannot be written (the console goes on): the request is planned again and
/// its briefing says the rest is not kept, beside the cache's error.
#[test]
fn a_cache_that_cannot_be_written_makes_the_briefing_say_not_kept() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let mut ctx = ws.preview_context(true);
    // A file where the cache's directory should be.
    let blocker = home.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    ctx.cache_dir = Some(blocker);
    let files = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(big_log(files.path())).unwrap();
    let attachments = [Attachment::new("big.log".into(), text)];
    let effective = effective_row(&ctx.budgets, TIER_C, None);
    let ask = Ask {
        attachments: &attachments,
        ..Ask::new(&effective, "summarise the errors in the attached log")
    };
    let r = plan_resilient(&ctx, &ask, QuestionVectors::Embed);
    assert!(r.cache_error.is_some());
    let a = &r.planned.attachments[0];
    let b = a.gate.briefing.as_ref().expect("briefed");
    assert!(!a.gate.cached);
    assert!(!b.text.contains("read_cached"), "{}", b.text);
    assert!(b.text.contains("not kept"), "{}", b.text);
    assert_eq!(r.planned.not_kept().len(), 1);
    assert!(!r.planned.offers_read_cached());
    let body = serde_json::to_string(&r.planned.request).unwrap();
    assert!(!body.contains("read_cached"));
}

/// Tester 21 F2: a cache that cannot keep the paste (here a cache.sqlite that is no
/// database; a full disk or a read-only file the same) costs the paste's ref, not the
/// request: `preview` plans it again with the briefing saying the rest is not kept, and
/// warns why, as the console did. It had failed outright. The file is left as it was.
#[test]
fn preview_goes_on_without_a_cache_that_cannot_keep_the_paste() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let big = big_log(files.path());
    let cache = home.path().join("cache.sqlite");
    std::fs::write(&cache, "not a database, and not to be overwritten\n").unwrap();
    let p = preview(home.path(), &big, &[]);
    let a = &p["attachments"][0];
    assert_eq!(a["admission"], "briefing");
    assert_eq!(a["cached"], false, "{a}");
    assert!(!common::sent_text(&p).contains("read_cached"));
    let warnings: Vec<&str> = p["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "the output cache could not keep a briefed part, so the request is planned without it: "
        ) && w.contains("cache.sqlite")
            && w.ends_with("(--no-cache plans without the cache from the start)")),
        "{warnings:?}"
    );
    assert_eq!(not_kept_warnings(&p), 1, "{warnings:?}");
    assert_eq!(
        std::fs::read_to_string(&cache).unwrap(),
        "not a database, and not to be overwritten\n"
    );
}

const KEY_ENV: &str = "CTXCONSOLE_TEST_KEY";

/// Tester 19 F12 and F11: two attachments with the same file name go out under two names
/// (preview, the request sent, what is stored, with a warning), and `history show` says
/// what the plan was sent with — each attachment, its size, raw or briefing, its cache ref
/// and whether the cache holds it.
#[test]
fn same_named_attachments_are_told_apart_and_history_show_says_what_was_sent() {
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::write(h.join("config.toml"), server.config(KEY_ENV)).unwrap();
    let files = tempfile::tempdir().unwrap();
    for (d, text) in [("d1", "first notes\n"), ("d2", "second notes\n")] {
        std::fs::create_dir(files.path().join(d)).unwrap();
        std::fs::write(files.path().join(d).join("notes.txt"), text).unwrap();
    }
    let big = big_log(files.path());
    let args = |cmd: &str| -> Vec<String> {
        [
            cmd,
            "compare the two notes and the log",
            "--model",
            "test/ok-json",
            "--json",
            "--attach",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([files.path().join("d1/notes.txt").display().to_string()])
        .chain([
            "--attach".into(),
            files.path().join("d2/notes.txt").display().to_string(),
        ])
        .chain(["--attach".into(), big.display().to_string()])
        .collect()
    };
    let p = json_of(ctx(h).args(args("preview")));
    let names: Vec<&str> = p["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes.txt", "notes.txt (2)", "big.log"]);
    let text = common::sent_text(&p);
    assert!(
        text.contains("ATTACHMENT notes.txt (") && text.contains("ATTACHMENT notes.txt (2) ("),
        "{text}"
    );
    assert!(
        p["warnings"].to_string().contains(
            "two attachments are named 'notes.txt': the later one is sent as 'notes.txt (2)'"
        ),
        "{}",
        p["warnings"]
    );

    let v = json_of(ctx(h).env(KEY_ENV, "k").args(args("send")));
    // Send warns of what preview warns of, in --json too (it had said only a part not kept,
    // and on stderr alone).
    assert_eq!(v["warnings"], p["warnings"], "{v}");
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(
        received[0].body["messages"].to_string(),
        p["request"]["messages"].to_string()
    );
    let id = v["results"][0]["stored_id"].as_str().unwrap().to_string();
    let shown = json_of(ctx(h).args(["history", "show", &id, "--json"]));
    let stored = &shown["trim_record"]["sent_with"]["attachments"];
    assert_eq!(stored[1]["name"], "notes.txt (2)");
    assert_eq!(stored[2]["admission"], "briefing");
    assert_eq!(stored[2]["cached"], true);
    assert_eq!(stored[0]["cached"], false);
    let r = stored[2]["content_ref"].as_str().unwrap();

    let out = ctx(h).args(["history", "show", &id]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sent with: 'big.log' (") && text.contains(&format!("briefing, cache {r})")),
        "{text}"
    );
    assert!(
        text.contains("sent with: 'notes.txt (2)' (13 bytes, raw, ref ")
            && text.contains("not cached: an attachment sent whole is not kept)"),
        "{text}"
    );
}

/// Tester 19 F3: the tokens an attachment is said to take when sent are the request
/// table's `attachment` part, its header line and fence included.
#[test]
fn an_attachments_tokens_sent_are_the_request_tables() {
    let home = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let big = big_log(files.path());
    let p = preview(home.path(), &big, &[]);
    let a = &p["attachments"][0];
    let part = p["request"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["part"] == "attachment")
        .unwrap()["tokens"]
        .as_u64()
        .unwrap();
    assert_eq!(a["sent_tokens"], part);
    assert!(part > a["admitted_tokens"].as_u64().unwrap());
    let text = preview_text(home.path(), &big, &[]);
    assert!(
        text.contains(&format!("→ briefing ({part} tokens sent)")),
        "{text}"
    );
    // Tester 34 F1: `compact` said the figure before the header and fence under the same
    // words.
    let out = ctx(home.path())
        .args(["compact", "--model", TIER_C, "--attach"])
        .arg(&big)
        .args(["--prompt", "summarise the errors in the attached log"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("→ briefing, {part} tokens sent")),
        "{text}"
    );
}
