//! The output cache as a user meets it: a big paste previewed again and again — alone or
//! with words typed around it — is written once, and `cache gc` gives the space back and
//! says how much.

use serde_json::Value;
use std::path::Path;

mod common;
use common::{ctx, json_of, succeeded};

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

/// A log of `lines` lines, each naming `tag`: content no other tag's log shares.
fn log_file(dir: &Path, tag: &str, lines: usize) -> std::path::PathBuf {
    let path = dir.join(format!("{tag}.log"));
    let text: String = (0..lines)
        .map(|i| {
            format!(
                "2026-11-22T10:00:00Z INFO {tag} request {i} served in {}ms ok\n",
                i % 97
            )
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `preview --attach` of `files` (JSON), and its stderr.
fn preview_attached(home: &Path, files: &[&Path], extra: &[&str]) -> (Value, String) {
    let mut cmd = ctx(home);
    cmd.args(["preview", "--model", "openrouter/openrouter/free", "--json"])
        .args(extra);
    for f in files {
        cmd.arg("--attach").arg(f);
    }
    let out = cmd
        .arg("summarise the errors in the attached logs")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

/// The ref an attachment's briefing names, after checking it was kept.
fn kept_ref(p: &Value, i: usize) -> String {
    let a = &p["attachments"][i];
    assert_eq!(a["admission"], "briefing", "{a}");
    assert_eq!(a["cached"], true, "{a}");
    a["briefing"]["cache_ref"].as_str().unwrap().to_string()
}

/// `cache get REF`: the bytes, or `None` when the cache no longer holds it.
fn cached(home: &Path, r: &str) -> Option<Vec<u8>> {
    let out = ctx(home).args(["cache", "get", r]).output().unwrap();
    match out.status.code() {
        Some(0) => Some(out.stdout),
        Some(2) => {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("no cached content"), "{err}");
            None
        }
        other => panic!("{other:?}: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// The paste content `cache.sqlite` holds, each chunk once, read from the file itself.
fn held(home: &Path) -> u64 {
    let db = rusqlite::Connection::open(home.join("cache.sqlite")).unwrap();
    db.query_row("SELECT SUM(length(content)) FROM chunks", [], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap() as u64
}

/// Tester 21 F5: nothing bounded the output cache, and an MCP client holding the token
/// filled the workspace's disk with three previews of a 6.5 MB attachment (the history
/// store, on the same disk, then failed too). `[cache] max_bytes` bounds it: storing evicts
/// the least recently stored entries, in the store's write transaction, never a part of
/// the request being kept, and says so (stderr and the log); a paste larger than the bound
/// is refused, naming it, and the preview is planned without it, with a warning; `cache gc`
/// shows the bound and applies a lowered one.
#[test]
fn the_cache_stays_within_its_bound_evicting_the_least_recently_stored() {
    const BOUND: u64 = 1 << 20;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::write(
        h.join("config.toml"),
        format!("[cache]\nmax_bytes = {BOUND}\n"),
    )
    .unwrap();
    let files = tempfile::tempdir().unwrap();
    let f = files.path();
    // About 470 KB each: two fit in 1 MiB, three do not.
    let [a, b, c] = ["a", "b", "c"].map(|t| log_file(f, t, 8_000));
    let ra = kept_ref(&preview_attached(h, &[&a], &[]).0, 0);
    let rb = kept_ref(&preview_attached(h, &[&b], &[]).0, 0);
    assert!(cached(h, &ra).is_some() && cached(h, &rb).is_some());
    let (p, stderr) = preview_attached(h, &[&c], &["--log", "info"]);
    let rc = kept_ref(&p, 0);
    assert!(
        stderr.contains(&format!(
            "evicted 1 entry stored least recently (470060 bytes: {ra}) to stay within [cache] \
             max_bytes = {BOUND}"
        )),
        "{stderr}"
    );
    let log = std::fs::read_to_string(h.join("logs").join("ctxconsole.log")).unwrap();
    assert!(
        log.contains("evicted 1 entry") && log.contains(&ra),
        "{log}"
    );
    assert_eq!(cached(h, &ra), None, "the oldest is evicted");
    assert_eq!(cached(h, &rb).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(cached(h, &rc).unwrap(), std::fs::read(&c).unwrap());
    assert!(held(h) <= BOUND, "{}", held(h));

    // Two new parts of one request: each is kept, the older entries make room for them.
    let [d, e] = ["d", "e"].map(|t| log_file(f, t, 8_000));
    let p = preview_attached(h, &[&d, &e], &[]).0;
    let (rd, re) = (kept_ref(&p, 0), kept_ref(&p, 1));
    assert_eq!(cached(h, &rb), None);
    assert_eq!(cached(h, &rc), None);
    assert_eq!(cached(h, &rd).unwrap(), std::fs::read(&d).unwrap());
    assert_eq!(cached(h, &re).unwrap(), std::fs::read(&e).unwrap());
    assert!(held(h) <= BOUND, "{}", held(h));

    // A paste larger than the whole bound: refused, nothing evicted, the preview planned
    // without it and warned of.
    let big = log_file(f, "big", 30_000);
    let (p, _) = preview_attached(h, &[&big], &[]);
    let a = &p["attachments"][0];
    assert_eq!(
        (&a["admission"], &a["cached"]),
        (&"briefing".into(), &false.into())
    );
    let warnings = p["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "the output cache could not keep a briefed part, so the request is planned without \
             it: {}: a paste of {} bytes is larger than the whole output cache may hold, {BOUND} \
             bytes ([cache] max_bytes in config.toml); not stored",
            h.join("cache.sqlite").display(),
            std::fs::metadata(&big).unwrap().len()
        )),
        "{warnings}"
    );
    assert!(!common::sent_text(&p).contains("read_cached"));
    assert!(cached(h, &rd).is_some() && cached(h, &re).is_some());

    // `cache gc` shows the bound, and applies one lowered since the last store, least
    // recently stored first.
    let gc = json_of(ctx(h).args(["cache", "gc", "--json"]));
    assert_eq!(
        (&gc["max_bytes"], &gc["removed"]),
        (&BOUND.into(), &0.into()),
        "{gc}"
    );
    assert_eq!(gc["held_bytes"], held(h));
    std::fs::write(
        h.join("config.toml"),
        format!("[cache]\nmax_bytes = {}\n", 2 * BOUND),
    )
    .unwrap();
    let [g, k] = ["g", "k"].map(|t| log_file(f, t, 8_000));
    let p = preview_attached(h, &[&g], &[]).0;
    let rg = kept_ref(&p, 0);
    let (p, stderr) = preview_attached(h, &[&k], &[]);
    let rk = kept_ref(&p, 0);
    assert!(!stderr.contains("evicted"), "{stderr}");
    assert!(held(h) > BOUND);
    std::fs::write(
        h.join("config.toml"),
        format!("[cache]\nmax_bytes = {BOUND}\n"),
    )
    .unwrap();
    let out = succeeded(ctx(h).args(["cache", "gc"]));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(
            "removed 2 entries (2 of them to stay within the bound) and 0 sentence vectors;"
        ) && said.contains(&format!(
            "the pastes take {} of the {BOUND} bytes [cache] max_bytes allows",
            held(h)
        )),
        "{said}"
    );
    assert_eq!(cached(h, &rd), None);
    assert_eq!(cached(h, &re), None);
    assert_eq!(cached(h, &rg).unwrap(), std::fs::read(&g).unwrap());
    assert_eq!(cached(h, &rk).unwrap(), std::fs::read(&k).unwrap());
    assert!(held(h) <= BOUND, "{}", held(h));

    // The bound is checked where the config is read.
    std::fs::write(h.join("config.toml"), "[cache]\nmax_bytes = 600000\n").unwrap();
    let out = ctx(h).args(["cache", "gc"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "field 'cache.max_bytes' is 600000; expected a whole number from 1048576 to 1099511627776"
        ),
        "{err}"
    );
}
