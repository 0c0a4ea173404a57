//! The output cache as a user meets it: a big paste previewed again and again — alone or
//! with words typed around it — is written once, and `cache gc` gives the space back and
//! says how much.

use serde_json::Value;
use std::path::Path;

mod common;
use common::{ctx, json_of};

/// The cache file and its write-ahead log, in bytes.
fn on_disk(home: &Path) -> u64 {
    ["cache.sqlite", "cache.sqlite-wal"]
        .iter()
        .map(|f| std::fs::metadata(home.join(f)).map_or(0, |m| m.len()))
        .sum()
}

fn preview(home: &Path, prompt: &str) -> Value {
    let v: Value = json_of(
        ctx(home)
            .args(["preview", "-", "--json"])
            .write_stdin(prompt.to_string()),
    );
    assert_eq!(v["gate"]["admission"], "briefing");
    v
}

#[test]
fn a_paste_is_stored_once_however_often_it_is_previewed_and_gc_gives_the_space_back() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let paste: String = (0..60_000)
        .map(|i| {
            format!(
                "2026-11-22T10:00:00Z INFO request {i} served in {}ms ok\n",
                i % 97
            )
        })
        .collect();
    preview(h, &paste);
    let once = on_disk(h);
    assert!(once > paste.len() as u64, "{once}");
    // The same paste again, then with words typed after and before it: what the console
    // previews at each pause.
    preview(h, &paste);
    preview(h, &format!("{paste}summarise the errors"));
    let typed = preview(
        h,
        &format!("from the gateway:\n{paste}summarise the errors"),
    );
    let grew = on_disk(h) - once;
    assert!(
        grew < paste.len() as u64 / 5,
        "the cache grew by {grew} bytes for a {}-byte paste it already held",
        paste.len()
    );
    let r = typed["gate"]["briefing"]["cache_ref"].as_str().unwrap();
    let whole = ctx(h).args(["cache", "get", r]).output().unwrap();
    assert_eq!(
        whole.stdout,
        format!("from the gateway:\n{paste}summarise the errors").as_bytes()
    );

    // Nothing is old enough yet: nothing goes, nothing is freed.
    let none = json_of(ctx(h).args(["cache", "gc", "--json"]));
    assert_eq!(
        (&none["removed"], &none["bytes_freed"]),
        (&0.into(), &0.into())
    );
    // Age every entry (as a week would), then collect.
    let db = rusqlite::Connection::open(h.join("cache.sqlite")).unwrap();
    db.execute("UPDATE entries SET created_at = 0", []).unwrap();
    drop(db);
    let before = on_disk(h);
    let gc = json_of(ctx(h).args(["cache", "gc", "--json"]));
    assert_eq!(gc["removed"], 3, "{gc}");
    assert_eq!(gc["file_bytes_before"], before);
    assert_eq!(gc["file_bytes_after"], on_disk(h));
    let freed = gc["bytes_freed"].as_u64().unwrap();
    assert!(freed > paste.len() as u64 * 9 / 10, "{gc}");
    assert_eq!(freed, before - on_disk(h));
    let text = ctx(h).args(["cache", "gc"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("0 freed"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}
