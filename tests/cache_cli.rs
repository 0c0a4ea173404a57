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

/// `cache gc` and `cache get` only read or clean: where there is no cache they say so and
/// create nothing, neither the cache nor the workspace directory.
#[test]
fn gc_and_get_without_a_cache_create_nothing_and_say_so() {
    let root = tempfile::tempdir().unwrap();
    // A workspace directory that does not exist yet, and one that exists but is empty.
    let missing = root.path().join("not-yet");
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for home in [&missing, &empty] {
        let cache = home.join("cache.sqlite");
        let out = ctx(home).args(["cache", "gc"]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("nothing to collect") && stdout.contains(&cache.display().to_string()),
            "{stdout}"
        );
        let gc = json_of(ctx(home).args(["cache", "gc", "--json"]));
        assert_eq!(gc["exists"], false, "{gc}");
        assert_eq!(gc["path"], cache.display().to_string());
        assert_eq!((&gc["removed"], &gc["bytes_freed"]), (&0.into(), &0.into()));

        let get = ctx(home)
            .args(["cache", "get", "0123456789abcdef"])
            .output()
            .unwrap();
        assert_eq!(get.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&get.stderr);
        assert!(stderr.contains("no output cache"), "{stderr}");
        assert!(!cache.exists(), "{} was created", cache.display());
    }
    assert!(!missing.exists(), "the workspace directory was created");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

/// `cache get --lines A:B` on an entry of three lines: a range starting after the end is
/// said (exit 2), one running past the end prints what exists, and a bound too large for a
/// line number is called that, not "not a number".
#[test]
fn a_line_range_past_the_end_is_said_and_one_running_past_it_prints_what_exists() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let r = {
        let mut cache = ctxconsole::store::cache::OutputCache::open_in(h).unwrap();
        cache.store("one\ntwo\nthree\n").unwrap().cache_ref
    };
    let get = |lines: &str| {
        let out = ctx(h)
            .args(["cache", "get", &r, "--lines", lines])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = get("4:10");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains(&format!(
            "{r} has 3 lines; --lines 4:10 starts after the end"
        )),
        "{stderr}"
    );
    let (code, stdout, stderr) = get("3:3");
    assert_eq!((code, stdout.as_str()), (Some(0), "three\n"), "{stderr}");
    let (code, stdout, stderr) = get("2:99");
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "two\nthree\n"),
        "{stderr}"
    );

    for (lines, which) in [
        ("1:99999999999999999999", "B"),
        ("99999999999999999999:1", "A"),
    ] {
        let (code, _, stderr) = get(lines);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("{which} is too large (at most {})", usize::MAX)),
            "{stderr}"
        );
        assert!(!stderr.contains("not a number"), "{stderr}");
    }
    let (code, _, stderr) = get("1:x");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("B is not a number"), "{stderr}");
}
