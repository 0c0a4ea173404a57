//! Files as a user (and an attacker) meets them, through the real binary: an export never
//! destroys a store or an existing file; stores, cache, exports and the workspace are
//! private; a directory, FIFO or device named like a workspace file is an error naming it,
//! and never a hang; a UTF-8 BOM is read the same way in every text file; a new `--store`
//! is empty unless `--sample` is asked for, and the first run says which.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::{ctx, file_names, json_of, succeeded};

/// Longer than any command here takes; a FIFO opened blocking would hang past it.
const HANG: Duration = Duration::from_secs(60);

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// `stat -c %a`, the way an operator checks it.
fn stat_mode(path: &Path) -> String {
    let out = std::process::Command::new("stat")
        .args(["-c", "%a"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "stat {}", path.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// The output cache made the way a user makes it: a paste big enough to be briefed is kept
/// there by `preview` (`cache gc` only cleans a cache that exists).
fn make_cache(home: &Path) {
    let paste: String = (0..3000)
        .map(|i| {
            format!(
                "2026-11-22T10:00:00Z INFO request {i} served in {}ms ok\n",
                i % 97
            )
        })
        .collect();
    let out = succeeded(
        ctx(home)
            .args(["preview", "-", "--json"])
            .write_stdin(paste)
            .timeout(HANG),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["gate"]["admission"], "briefing",
        "the paste is kept in the cache"
    );
}

/// Run, expect bad input (exit 2), return stderr.
fn refused(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.timeout(HANG).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    err
}

/// Run, expect success, return stderr.
fn stderr_of(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.timeout(HANG).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "stderr: {err}");
    err
}

fn plan_total(home: &Path, store: Option<&Path>) -> u64 {
    let mut cmd = ctx(home);
    if let Some(s) = store {
        cmd.arg("--store").arg(s);
    }
    json_of(cmd.args(["history", "--json", "--limit", "0"]))["total"]
        .as_u64()
        .unwrap()
}

// ---- 1. Writes never destroy -------------------------------------------------------------

#[test]
fn export_never_writes_over_the_open_store_in_any_spelling() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("history.sqlite");
    assert_eq!(plan_total(home.path(), None), 668);
    let before = std::fs::read(&store).unwrap();
    std::os::unix::fs::symlink(&store, home.path().join("link.jsonl")).unwrap();
    std::fs::hard_link(&store, home.path().join("hard.jsonl")).unwrap();
    std::fs::create_dir(home.path().join("sub")).unwrap();
    for (out, force) in [
        (store.display().to_string(), false),
        (store.display().to_string(), true),
        ("./history.sqlite".to_string(), true),
        ("sub/../history.sqlite".to_string(), true),
        ("link.jsonl".to_string(), true),
        ("hard.jsonl".to_string(), true),
        ("history.sqlite-wal".to_string(), true),
        ("history.sqlite-shm".to_string(), true),
        ("history.sqlite-journal".to_string(), true),
    ] {
        let mut cmd = ctx(home.path());
        cmd.current_dir(home.path())
            .args(["history", "export", "--out", &out]);
        if force {
            cmd.arg("--force");
        }
        let err = refused(&mut cmd);
        assert!(err.contains("history store"), "{out}: {err}");
        assert_eq!(plan_total(home.path(), None), 668, "{out}");
    }
    assert_eq!(std::fs::read(&store).unwrap(), before);
    assert!(
        std::fs::symlink_metadata(home.path().join("link.jsonl"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // An explicit --store is protected the same way.
    let other = home.path().join("mine.sqlite");
    ctx(home.path())
        .args(["--store"])
        .arg(&other)
        .args(["--sample", "history", "--limit", "0"])
        .assert()
        .success();
    let err = refused(
        ctx(home.path())
            .current_dir(home.path())
            .args(["--store", "mine.sqlite", "history", "export", "--force"])
            .args(["--out", "./sub/../mine.sqlite"]),
    );
    assert!(err.contains("history store"), "{err}");
    assert_eq!(plan_total(home.path(), Some(&other)), 668);
}

#[test]
fn export_never_writes_over_the_cache_or_any_sqlite_database() {
    let home = tempfile::tempdir().unwrap();
    make_cache(home.path());
    let cache = home.path().join("cache.sqlite");
    assert!(cache.is_file());
    let err = refused(
        ctx(home.path())
            .args(["history", "export", "--force", "--out"])
            .arg(&cache),
    );
    assert!(err.contains("cache"), "{err}");
    // Somebody else's database, under a name that looks like an export.
    let db = home.path().join("notes.jsonl");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (42);")
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    for force in [false, true] {
        let mut cmd = ctx(home.path());
        cmd.args(["history", "export", "--out"]).arg(&db);
        if force {
            cmd.arg("--force");
        }
        let err = refused(&mut cmd);
        assert!(err.contains("SQLite database"), "{err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn export_replaces_an_existing_file_only_with_force_and_leaves_no_temporary_file() {
    let home = tempfile::tempdir().unwrap();
    let outdir = tempfile::tempdir().unwrap();
    let out = outdir.path().join("plans.jsonl");
    std::fs::write(&out, "precious\n").unwrap();
    let err = refused(
        ctx(home.path())
            .args(["history", "export", "--out"])
            .arg(&out),
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
    stderr_of(
        ctx(home.path())
            .args(["history", "export", "--force", "--out"])
            .arg(&out),
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 668);
    assert_eq!(file_names(outdir.path()), ["plans.jsonl"]);
    // A new file: private, and nothing else left beside it.
    let fresh = outdir.path().join("executions.jsonl");
    stderr_of(
        ctx(home.path())
            .args(["history", "export", "--executions", "--out"])
            .arg(&fresh),
    );
    assert_eq!(stat_mode(&fresh), "600");
    assert_eq!(stat_mode(&out), "600");
    assert_eq!(
        file_names(outdir.path()),
        ["executions.jsonl", "plans.jsonl"]
    );
    // Through a symbolic link the file it points to is replaced; the link stays a link.
    let link = outdir.path().join("latest.jsonl");
    std::os::unix::fs::symlink(&fresh, &link).unwrap();
    stderr_of(
        ctx(home.path())
            .args(["history", "export", "--force", "--out"])
            .arg(&link),
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&fresh).unwrap().lines().count(),
        668
    );
    std::fs::remove_file(&link).unwrap();
    // A directory or a FIFO is not a file to write an export into.
    let err = refused(
        ctx(home.path())
            .args(["history", "export", "--force", "--out"])
            .arg(outdir.path()),
    );
    assert!(err.contains("is a directory"), "{err}");
    let fifo = outdir.path().join("pipe");
    mkfifo(&fifo);
    let err = refused(
        ctx(home.path())
            .args(["history", "export", "--force", "--out"])
            .arg(&fifo),
    );
    assert!(err.contains("is a FIFO"), "{err}");
}

// ---- 5. Private files --------------------------------------------------------------------

/// Tester 21 F7: `--out -` is standard output (it wrote a file named `-`); a dangling link
/// at `--out` is refused for what it is (it was said to have "appeared while writing"); a
/// write the machine refuses (here the file-size cap, as a full disk) is a runtime failure,
/// exit 1 (it exited 2, bad input).
#[test]
fn export_out_dash_is_stdout_a_dangling_link_is_named_and_a_failed_write_exits_1() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let total = plan_total(h, None);
    let out = ctx(h)
        .current_dir(h)
        .args(["history", "export", "--out", "-"])
        .timeout(HANG)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count() as u64,
        total
    );
    assert!(!h.join("-").exists(), "no file named -");

    let link = h.join("dangle.jsonl");
    std::os::unix::fs::symlink(h.join("nowhere/x.jsonl"), &link).unwrap();
    for force in [false, true] {
        let mut cmd = ctx(h);
        cmd.args(["history", "export", "--out"]).arg(&link);
        if force {
            cmd.arg("--force");
        }
        let err = refused(&mut cmd);
        assert!(
            err.contains("dangle.jsonl: is a symbolic link to ")
                && err.contains(
                    "which does not exist; an export writes through a link only to an existing file"
                ),
            "{err}"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    let capped = common::ctx_with_files_capped(h, 256)
        .args(["history", "export", "--out"])
        .arg(h.join("big.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&capped.stderr);
    assert_eq!(capped.status.code(), Some(1), "{err}");
    assert!(err.contains("big.jsonl: cannot write: "), "{err}");
    assert!(!h.join("big.jsonl").exists());
    assert_eq!(
        file_names(h).iter().filter(|n| n.ends_with(".tmp")).count(),
        0,
        "{:?}",
        file_names(h)
    );
}

/// Tester 21 F7: a process killed while the first run built the store left its temporary
/// files (and their -wal/-shm) beside it for good. The next run that builds the store
/// removes those of a process that is gone, and nothing else.
#[test]
fn a_dead_process_s_temporary_store_files_are_removed() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = std::process::id();
    let left = [
        format!(".history.sqlite.{dead}.0.tmp"),
        format!(".history.sqlite.{dead}.0.tmp-wal"),
        format!(".history.sqlite.{dead}.0.tmp-shm"),
    ];
    let kept = [
        format!(".history.sqlite.{live}.0.tmp"),
        ".history.sqlite.notes.tmp".to_string(),
        "history.sqlite.bak".to_string(),
    ];
    for name in left.iter().chain(&kept) {
        std::fs::write(h.join(name), "x").unwrap();
    }
    succeeded(ctx(h).args(["history", "--limit", "1"]));
    for name in &left {
        assert!(!h.join(name).exists(), "{name} removed");
    }
    for name in &kept {
        assert!(h.join(name).exists(), "{name} kept");
    }
}

#[test]
fn a_new_workspace_its_store_cache_and_explicit_stores_are_private() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("data").join("ctxconsole");
    stderr_of(ctx(&home).args(["history", "--json", "--limit", "0"]));
    make_cache(&home);
    assert_eq!(stat_mode(&home), "700");
    assert_eq!(stat_mode(&root.path().join("data")), "700");
    assert_eq!(stat_mode(&home.join("history.sqlite")), "600");
    assert_eq!(stat_mode(&home.join("cache.sqlite")), "600");
    let explicit = root.path().join("stores").join("team.sqlite");
    stderr_of(
        ctx(&home)
            .arg("--store")
            .arg(&explicit)
            .args(["history", "--limit", "0"]),
    );
    assert_eq!(stat_mode(&explicit), "600");
    assert_eq!(stat_mode(&root.path().join("stores")), "700");
    // Made under a temporary name and linked into place: nothing else is left behind.
    assert_eq!(file_names(&home), ["cache.sqlite", "history.sqlite"]);
    assert_eq!(file_names(&root.path().join("stores")), ["team.sqlite"]);
}

#[test]
fn a_new_store_raced_by_several_processes_is_made_once_and_whole() {
    for _ in 0..8 {
        let home = tempfile::tempdir().unwrap();
        let children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_ctxconsole"))
                    .env("CTXCONSOLE_HOME", home.path())
                    .args(["history", "--json", "--limit", "0"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["total"], 668, "{err}");
        }
        // Two last connections closing at the same moment may each leave the -wal and
        // -shm to the other (SQLite's own race, harmless); the next close takes them away.
        // No temporary file of the creation is ever left.
        json_of(ctx(home.path()).args(["history", "--json", "--limit", "0"]));
        assert_eq!(file_names(home.path()), ["history.sqlite"]);
    }
}

#[test]
fn the_write_ahead_log_and_shared_memory_files_are_private_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.sqlite");
    let mut store = ctxconsole::store::history::HistoryStore::open(&path).unwrap();
    store.set_drift_window(1234).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    let mut cache = ctxconsole::store::cache::OutputCache::open_in(dir.path()).unwrap();
    cache.store("some pasted secret").unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", cache.path().display()));
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
}

#[test]
fn a_looser_existing_store_is_reported_once_per_run_and_left_alone() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(plan_total(home.path(), None), 668);
    let store = home.path().join("history.sqlite");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    for _ in 0..2 {
        // Every run says it, once, and changes nothing.
        let err = stderr_of(ctx(home.path()).args(["replay", "--failed", "--offline"]));
        let notes: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("history.sqlite"))
            .collect();
        assert_eq!(notes.len(), 1, "reported once: {err}");
        assert!(
            notes[0].contains("readable by other users (644)")
                && notes[0].contains(&format!("chmod 600 {}", store.display())),
            "{err}"
        );
        assert_eq!(stat_mode(&store), "644");
    }
}

#[test]
fn a_looser_existing_workspace_is_reported_when_a_store_is_put_in_it_and_left_alone() {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = stderr_of(ctx(home.path()).args(["history", "--limit", "0"]));
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("chmod 700")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("(755)"), "{err}");
    assert_eq!(stat_mode(home.path()), "755");
    assert_eq!(stat_mode(&home.path().join("history.sqlite")), "600");
    let again = stderr_of(ctx(home.path()).args(["history", "--limit", "0"]));
    assert!(again.is_empty(), "{again}");
}

// ---- 12. Workspace files -----------------------------------------------------------------

/// A command that reads the named workspace file.
fn reader_of(home: &Path, name: &str) -> assert_cmd::Command {
    let mut cmd = ctx(home);
    if name == "config.toml" {
        cmd.args(["history", "--limit", "0"]);
    } else {
        cmd.args(["budgets", "--json"]);
    }
    cmd
}

const READ_BY_CLI: [&str; 5] = [
    "catalog.json",
    "budgets.toml",
    "registry.json",
    "planner.toml",
    "config.toml",
];

#[test]
fn a_directory_fifo_or_device_named_like_a_workspace_file_is_an_error_naming_it() {
    for name in READ_BY_CLI {
        for kind in ["directory", "FIFO", "character device"] {
            let home = tempfile::tempdir().unwrap();
            let path = home.path().join(name);
            match kind {
                "directory" => std::fs::create_dir(&path).unwrap(),
                "FIFO" => mkfifo(&path),
                _ => std::os::unix::fs::symlink("/dev/null", &path).unwrap(),
            }
            let err = refused(&mut reader_of(home.path(), name));
            assert!(
                err.contains(&format!("{name}: is a {kind}, not a file")),
                "{name} as {kind}: {err}"
            );
        }
    }
    // The request commands read config.toml too (for the history prior): a broken one is an
    // error there as well, not a warning and a request planned without it.
    for args in [&["compact", "--prompt", "hi"][..], &["preview", "hi"][..]] {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config.toml")).unwrap();
        let err = refused(ctx(home.path()).args(args));
        assert!(
            err.contains("config.toml: is a directory, not a file"),
            "{args:?}: {err}"
        );
    }
    for name in ["keymap.toml", "theme.toml"] {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(name);
        mkfifo(&path);
        let err = if name == "keymap.toml" {
            ctxconsole::tui::load_keymap(home.path()).err().unwrap()
        } else if std::env::var_os("NO_COLOR").is_none() {
            ctxconsole::tui::load_theme(home.path()).err().unwrap()
        } else {
            continue;
        };
        assert!(
            err.to_string().contains(&format!("{name}: is a FIFO")),
            "{err}"
        );
        assert_eq!(ctxconsole::exit::code_for(&err), 2);
    }
}

#[test]
fn a_store_that_is_a_fifo_or_device_is_an_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let fifo = home.path().join("h.sqlite");
    mkfifo(&fifo);
    for store in [fifo.as_path(), Path::new("/dev/null")] {
        let err = refused(
            ctx(home.path())
                .arg("--store")
                .arg(store)
                .args(["history", "--limit", "0"]),
        );
        assert!(err.contains("not a file"), "{err}");
    }
}

#[test]
fn named_files_that_are_fifos_are_refused_without_hanging() {
    let home = tempfile::tempdir().unwrap();
    let fifo = home.path().join("input");
    mkfifo(&fifo);
    for args in [
        &["compact", "--json", "--catalog"][..],
        &["budgets", "--json", "--registry"][..],
        &["import", "plans"][..],
        &["eval", "planner", "--json", "--labels"][..],
    ] {
        let err = refused(ctx(home.path()).args(args).arg(&fifo));
        assert!(
            err.contains("input: is a FIFO, not a file"),
            "{args:?}: {err}"
        );
    }
}

const BOM: &str = "\u{feff}";

#[test]
fn a_utf8_bom_is_read_the_same_way_in_every_text_file() {
    let home = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| {
        std::fs::write(home.path().join(name), format!("{BOM}{text}")).unwrap();
    };
    w(
        "budgets.toml",
        "[[model]]\nid = \"bom/budget-model\"\ninput_tokens = 50000\noutput_tokens = 2000\ntier = \"B\"\nsource = \"measured\"\n",
    );
    w(
        "registry.json",
        r#"{"bom/registry-model": {"max_input_tokens": 64000, "max_output_tokens": 4000, "input_cost_per_token": 0.000002, "output_cost_per_token": 0.000004, "mode": "chat", "supports_function_calling": true}}"#,
    );
    w(
        "catalog.json",
        r#"{"tools":[{"name":"bom_tool","description":"x","inputSchema":{}}]}"#,
    );
    w("planner.toml", "complex_threshold = 400\n");
    w("config.toml", "[history]\ndrift_window = \"20m\"\n");
    w("keymap.toml", "[keys]\n\"x\" = \"quit\"\n");
    w("theme.toml", "name = \"light\"\n");
    let b = json_of(ctx(home.path()).args(["budgets", "--model", "bom/budget-model", "--json"]));
    assert_eq!(b["row"]["layer"], "user", "{b}");
    let r = json_of(ctx(home.path()).args(["budgets", "--model", "bom/registry-model", "--json"]));
    assert_eq!(r["row"]["layer"], "registry", "{r}");
    let c = json_of(ctx(home.path()).args(["compact", "--json"]));
    assert!(c.to_string().contains("bom_tool"), "{c}");
    // The config's window is applied (the store remembers it).
    stderr_of(ctx(home.path()).args(["history", "--limit", "0"]));
    ctxconsole::tui::load_keymap(home.path()).unwrap();
    ctxconsole::tui::load_theme(home.path()).unwrap();
    // Files named on the command line and imports go through the same reader.
    let reg = home.path().join("named-registry.json");
    std::fs::write(
        &reg,
        format!(
            "{BOM}{}",
            r#"{"bom/named-model": {"max_input_tokens": 64000, "max_output_tokens": 4000, "mode": "chat"}}"#
        ),
    )
    .unwrap();
    let n = json_of(
        ctx(home.path())
            .args([
                "budgets",
                "--model",
                "bom/named-model",
                "--json",
                "--registry",
            ])
            .arg(&reg),
    );
    assert_eq!(n["row"]["layer"], "registry", "{n}");
    let plans = home.path().join("plans.jsonl");
    std::fs::write(
        &plans,
        format!(
            "{BOM}{}\n",
            r#"{"id":"bom-1","at":"2026-11-20T10:00:00Z","caller":"bom","model":"openai/gpt-4o","intent":"summarise this page","steps":[{"order":1,"tool":"builtin.page-digest"}]}"#
        ),
    )
    .unwrap();
    let i = json_of(
        ctx(home.path())
            .args(["import", "plans", "--json"])
            .arg(&plans),
    );
    assert_eq!(i["added"], 1, "{i}");
    let i = json_of(
        ctx(home.path())
            .args(["import", "plans", "--json", "-"])
            .write_stdin(std::fs::read(&plans).unwrap()),
    );
    assert_eq!(i["already_present"], 1, "{i}");
}

/// A value of the wrong type in any workspace file is said in a user's words, naming the file
/// and the key: never serde's name for an internal type (`struct RoleSpec`, `enum Tier`) nor
/// its "map"/"sequence" for what TOML calls a table and an array.
#[test]
fn a_wrong_type_in_a_workspace_file_names_no_internal_type() {
    const ROW: &str = "[[model]]\nid = \"x\"\ninput_tokens = 1\noutput_tokens = 1\ntier = \"A\"\n";
    let row = |extra: &str| format!("{ROW}{extra}\n");
    let cases: Vec<(&str, String, &[&str], &str)> = vec![
        (
            "budgets.toml",
            "model = 5".into(),
            &["budgets", "--json"],
            "model",
        ),
        (
            "budgets.toml",
            "model = [5]".into(),
            &["budgets", "--json"],
            "model",
        ),
        (
            "budgets.toml",
            row("prices = 5"),
            &["budgets", "--json"],
            "prices",
        ),
        (
            "budgets.toml",
            row("stop = \"x\""),
            &["budgets", "--json"],
            "stop",
        ),
        (
            "budgets.toml",
            row("match = 5"),
            &["budgets", "--json"],
            "match",
        ),
        (
            "budgets.toml",
            row("tokenizer = 5"),
            &["budgets", "--json"],
            "tokenizer",
        ),
        (
            "budgets.toml",
            ROW.replace("tier = \"A\"", "tier = 5"),
            &["budgets", "--json"],
            "tier",
        ),
        (
            "config.toml",
            "llm = 5".into(),
            &["history", "--limit", "0"],
            "llm",
        ),
        (
            "config.toml",
            "providers = 5".into(),
            &["history", "--limit", "0"],
            "providers",
        ),
        (
            "config.toml",
            "[providers]\nx = 5".into(),
            &["history", "--limit", "0"],
            "providers.x",
        ),
        (
            "config.toml",
            "[llm]\nself_names = \"x\"".into(),
            &["history", "--limit", "0"],
            "llm.self_names",
        ),
        (
            "planner.toml",
            "default_memory = 5".into(),
            &["eval", "planner"],
            "default_memory",
        ),
        (
            "planner.toml",
            "default_thinking = 5".into(),
            &["eval", "planner"],
            "default_thinking",
        ),
        (
            "planner.toml",
            "[categories]\nx = 5".into(),
            &["eval", "planner"],
            "categories.x",
        ),
        (
            "planner.toml",
            "[categories.x]\npatterns = [5]".into(),
            &["eval", "planner"],
            "categories.x.patterns",
        ),
        ("keymap.toml", "keys = 5".into(), &[], "keys"),
        ("theme.toml", "roles = 5".into(), &[], "roles"),
        (
            "theme.toml",
            "[roles]\naccent = 5".into(),
            &[],
            "roles.accent",
        ),
    ];
    for (name, text, args, key) in cases {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(name), &text).unwrap();
        let err = refused(ctx(home.path()).args(args));
        assert!(
            err.contains(&format!("{name}: line ")) && err.contains(&format!("field '{key}'")),
            "{name} {text:?}: {err}"
        );
        for internal in ["struct ", "enum ", "a map", "a sequence", "wanted "] {
            assert!(!err.contains(internal), "{name} {text:?}: {err}");
        }
    }
}

/// A theme role is a colour or a table of fg, bg and modifiers; anything else is said so.
#[test]
fn a_theme_role_of_the_wrong_kind_says_what_a_role_takes() {
    let home = tempfile::tempdir().unwrap();
    let theme = home.path().join("theme.toml");
    std::fs::write(&theme, "[roles]\naccent = 5\n").unwrap();
    let err = refused(&mut ctx(home.path()));
    assert!(
        err.contains(&format!(
            "{}: line 2, column 10: field 'roles.accent' is 5; expected a colour name, #rrggbb, or a table with fg, bg and modifiers",
            theme.display()
        )),
        "{err}"
    );
    // A colour name alone is the role's foreground: the theme is read, and only the missing
    // terminal stops the console.
    std::fs::write(&theme, "[roles]\naccent = \"#ff8800\"\n").unwrap();
    let err = refused(&mut ctx(home.path()));
    assert!(err.contains("the console needs a terminal"), "{err}");
    std::fs::write(&theme, "[roles]\naccent = \"plaid\"\n").unwrap();
    let err = refused(&mut ctx(home.path()));
    assert!(
        err.contains("roles.accent") && err.contains("'plaid' is not a colour"),
        "{err}"
    );
}

/// A 100,000-character key or value in a workspace file is named in an error by its opening
/// and how much was left out (`core::terminal_text::quoted`), never echoed whole.
#[test]
fn an_error_quotes_a_huge_key_or_value_by_its_opening() {
    let huge = "k".repeat(100_000);
    const ROW: &str = "[[model]]\ninput_tokens = 1\noutput_tokens = 1\ntier = \"A\"\n";
    let cases: Vec<(&str, String, &[&str])> = vec![
        ("keymap.toml", format!("[keys]\n\"{huge}\" = \"quit\""), &[]),
        ("keymap.toml", format!("[keys]\n\"x\" = \"{huge}\""), &[]),
        ("theme.toml", format!("name = \"{huge}\""), &[]),
        ("theme.toml", format!("[roles]\n{huge} = \"red\""), &[]),
        ("theme.toml", format!("[roles]\naccent = \"{huge}\""), &[]),
        (
            "theme.toml",
            format!("[roles]\naccent = {{ modifiers = [\"{huge}\"] }}"),
            &[],
        ),
        ("theme.toml", format!("{huge} = 1"), &[]),
        (
            "budgets.toml",
            format!("{ROW}id = \"{huge}*\""),
            &["budgets", "--json"],
        ),
        (
            "budgets.toml",
            format!("{ROW}id = \"x\"\ntokenizer = \"{huge}\""),
            &["budgets", "--json"],
        ),
        (
            "budgets.toml",
            format!("{ROW}id = \"{huge}\"\ntemperature = 9.0"),
            &["budgets", "--json"],
        ),
        (
            "config.toml",
            format!("[llm]\ntimeout = \"{huge}\""),
            &["history", "--limit", "0"],
        ),
        (
            "config.toml",
            format!("[llm]\nretries = \"{huge}\""),
            &["history", "--limit", "0"],
        ),
        (
            "config.toml",
            format!("[llm]\n{huge} = 1"),
            &["history", "--limit", "0"],
        ),
        (
            "config.toml",
            format!("[llm]\ndefault_provider = \"{huge}\""),
            &[],
        ),
        (
            "planner.toml",
            format!("[categories.{huge}]\nthreshold = -1.0"),
            &["eval", "planner"],
        ),
        (
            "planner.toml",
            format!("[[categories.x.patterns]]\npattern = \"({huge}\"\nweight = 1.0"),
            &["eval", "planner"],
        ),
    ];
    let mut echoed = Vec::new();
    for (name, text, args) in cases {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(name), &text).unwrap();
        let err = refused(ctx(home.path()).args(args));
        // A name over the one bound is refused without being quoted at all.
        let said = err.contains("more bytes)") || err.contains("is longer than 512 bytes");
        if !(err.len() < 800 && err.contains(name) && said) {
            echoed.push(format!(
                "{name} {:?}: {} bytes: {}",
                text.chars().take(40).collect::<String>(),
                err.len(),
                err.chars().take(300).collect::<String>()
            ));
        }
    }
    assert!(echoed.is_empty(), "{}", echoed.join("\n"));
}

// ---- 13. New stores ----------------------------------------------------------------------

#[test]
fn a_new_explicit_store_is_empty_unless_sample_is_asked_and_the_first_run_says_which() {
    let home = tempfile::tempdir().unwrap();
    let empty = home.path().join("empty.sqlite");
    let err = stderr_of(
        ctx(home.path())
            .arg("--store")
            .arg(&empty)
            .args(["history", "--limit", "0"]),
    );
    assert!(
        err.contains(&format!("created empty history store {}", empty.display())),
        "{err}"
    );
    assert_eq!(plan_total(home.path(), Some(&empty)), 0);
    let again = stderr_of(
        ctx(home.path())
            .arg("--store")
            .arg(&empty)
            .args(["history", "--limit", "0"]),
    );
    assert!(!again.contains("created"), "said once: {again}");

    let sampled = home.path().join("sampled.sqlite");
    let err = stderr_of(
        ctx(home.path())
            .arg("--store")
            .arg(&sampled)
            .args(["--sample", "history", "--limit", "0"]),
    );
    assert!(
        err.contains(&format!(
            "created history store {} with the sample history (668 plans)",
            sampled.display()
        )),
        "{err}"
    );
    assert_eq!(plan_total(home.path(), Some(&sampled)), 668);

    // The workspace's own store is seeded, and says so once.
    let err = stderr_of(ctx(home.path()).args(["history", "--limit", "0"]));
    assert!(err.contains("with the sample history (668 plans)"), "{err}");
    let again = stderr_of(ctx(home.path()).args(["history", "--limit", "0"]));
    assert!(again.is_empty(), "{again}");
}

#[test]
fn the_console_opens_a_new_explicit_store_empty_and_notes_it() {
    use ctxconsole::workspace::{StoreChoice, Workspace, WorkspaceOptions};
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let path = home.path().join("console.sqlite");
    let choice = StoreChoice {
        path: Some(path.clone()),
        sample: false,
    };
    ctxconsole::fsio::hold_notices();
    let (ctx, state) = ctxconsole::tui::start(&ws, &ws.config().unwrap(), &choice, false);
    assert_eq!(ctx.history.as_deref(), Some(path.as_path()));
    let store = ctxconsole::store::history::HistoryStore::open(&path).unwrap();
    assert_eq!(store.counts().unwrap().plans, 0);
    assert!(
        state
            .notes
            .iter()
            .any(|n| n.contains("created empty history store")),
        "{:?}",
        state.notes
    );
}

/// A file read whole has a stated limit: a 3 GB `budgets.toml` (sparse: no disk spent) is
/// refused by its size, naming it, instead of being read into memory to be found broken;
/// a catalog one byte over the limit too.
#[test]
fn a_file_too_big_to_read_whole_is_refused_before_it_is_read() {
    let home = tempfile::tempdir().unwrap();
    let budgets = home.path().join("budgets.toml");
    let file = std::fs::File::create(&budgets).unwrap();
    file.set_len(3 << 30).unwrap();
    let err = refused(ctx(home.path()).args(["budgets"]));
    assert!(
        err.contains("budgets.toml") && err.contains("MiB a file read whole may hold"),
        "{err}"
    );
    std::fs::remove_file(&budgets).unwrap();

    let catalog = home.path().join("big.json");
    std::fs::File::create(&catalog)
        .unwrap()
        .set_len((256 << 20) + 1)
        .unwrap();
    let err = refused(
        ctx(home.path())
            .arg("compact")
            .arg("--catalog")
            .arg(&catalog),
    );
    assert!(err.contains("big.json") && err.contains("256 MiB"), "{err}");
}

/// `--store` through a file is said as such, exit 2, and nothing is created.
#[test]
fn a_store_path_through_a_file_is_said_as_such() {
    let home = tempfile::tempdir().unwrap();
    let afile = home.path().join("afile");
    std::fs::write(&afile, "x").unwrap();
    let out = ctx(home.path())
        .arg("--store")
        .arg(afile.join("x.sqlite"))
        .arg("history")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: is a file, not a directory", afile.display())),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&afile).unwrap(), "x");
}

/// Tester 11 T11-9: an attachment that starts with two byte-order marks lost both on the
/// command line (the file reader dropped one, the attachment another) and one over MCP. One
/// mark is not text, however it comes; a second is the file's own.
#[test]
fn an_attachment_loses_one_byte_order_mark_from_a_file_and_from_stdin() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("bom2.txt");
    std::fs::write(&file, format!("{BOM}{BOM}x\n")).unwrap();
    let from_file = json_of(
        ctx(home.path())
            .args(["preview", "read this", "--json", "--attach"])
            .arg(&file),
    );
    let from_stdin = json_of(
        ctx(home.path())
            .args(["preview", "read this", "--json", "--attach", "-"])
            .write_stdin(std::fs::read(&file).unwrap()),
    );
    for v in [&from_file, &from_stdin] {
        let request = v["request"].to_string();
        assert!(
            request.contains("\\ufeffx") || request.contains("\u{feff}x"),
            "one mark kept: {request}"
        );
        assert!(
            !request.contains("\\ufeff\\ufeffx") && !request.contains("\u{feff}\u{feff}x"),
            "only one: {request}"
        );
    }
}

/// Tester 16 F7: two providers taking one prefix were both accepted (the one whose name
/// sorted last took every model, so renaming one rerouted its models), an empty prefix
/// was accepted and never matched, and a base URL that is not http(s) passed `preview` and
/// the console, refused only at `send`. Each is refused wherever the config is read.
#[test]
fn providers_that_clash_or_cannot_be_reached_are_refused_when_the_config_is_read() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let preview = |home: &Path| {
        let mut cmd = ctx(home);
        cmd.args(["preview", "hello", "--model", "a/m"]);
        cmd
    };
    let cases = [
        (
            "[providers.zz]\nprefix = \"a/\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
             [providers.bb]\nprefix = \"a/\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
            "providers.bb.prefix and providers.zz.prefix are both 'a/'",
        ),
        (
            "[providers.mine]\nprefix = \"ollama/\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
            "providers.mine.prefix and providers.ollama.prefix are both 'ollama/'",
        ),
        (
            "[providers.x]\nprefix = \"\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
            "providers.x.prefix is empty",
        ),
        (
            "[providers.x]\nprefix = \"x/\"\nbase_url = \"ftp://example\"\n",
            "providers.x.base_url must start with http:// or https://",
        ),
    ];
    for (text, said) in cases {
        std::fs::write(&config, text).unwrap();
        let err = refused(&mut preview(home.path()));
        assert!(err.contains(said), "{text}\n{err}");
        assert!(err.contains("config.toml"), "{err}");
    }
    // The default provider may go without a prefix: it takes what no prefix matches.
    std::fs::write(
        &config,
        "[llm]\ndefault_provider = \"x\"\n[providers.x]\nprefix = \"\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
    )
    .unwrap();
    stderr_of(&mut preview(home.path()));
    // A provider named as the sample's replaces it, prefix and all.
    std::fs::write(
        &config,
        "[providers.ollama]\nprefix = \"ollama/\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
    )
    .unwrap();
    stderr_of(&mut preview(home.path()));
}

/// Tester 21 F7: a store's -wal that is a symbolic link is named for what it is; SQLite never
/// opens one, and the error had sent the operator to chmod ("read-only or not accessible").
#[test]
fn a_symlinked_write_ahead_log_is_named_as_a_link() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    succeeded(ctx(h).args(["history", "--limit", "1"]));
    for f in ["history.sqlite-wal", "history.sqlite-shm"] {
        let _ = std::fs::remove_file(h.join(f));
    }
    let target = h.join("elsewhere");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, h.join("history.sqlite-wal")).unwrap();
    let out = ctx(h)
        .args(["history", "--limit", "1"])
        .timeout(HANG)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("history.sqlite-wal beside it is a symbolic link, which SQLite never opens")
            && err.contains("remove the link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
}
