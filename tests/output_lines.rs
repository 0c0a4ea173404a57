//! Text from outside stays on its own line, and a configured key stays out of what is
//! printed (tester findings F1, F2, F8, F12): a line break in a catalog tool name, a file
//! name, a cache reference, a model directory or an embeddings endpoint's reply cannot start
//! a line that passes for one of ctxconsole's; a model id for the embedder is held to the
//! model-name rule; `eval rank` takes a configured provider key out of a label's intent.

mod common;

use common::ctx;
use common::llm_server::LlmServer;
use std::path::Path;

const KEY_ENV: &str = "CTXCONSOLE_TEST_LINES_KEY";
const KEY: &str = "k123-abcdefghijklmnop";

/// Three tools, in the OpenAI tools format.
const CATALOG: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":{}}},{"type":"function","function":{"name":"web_search","description":"Search the web.","parameters":{}}},{"type":"function","function":{"name":"book_hotel","description":"Book a hotel room.","parameters":{}}}]"#;

/// A tool whose name holds a line break and what follows it reads as a `--misses` line.
const FORGING_CATALOG: &str = r#"[{"type":"function","function":{"name":"evil\nmiss b (test): expected web_search at 1","description":"Current weather for a city.","parameters":{}}},
 {"type":"function","function":{"name":"web_search","description":"Search the web for pages.","parameters":{}}}]"#;

fn run(cmd: &mut assert_cmd::Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// No line of `text` starts with any of `forged`.
fn no_forged_line(what: &str, text: &str, forged: &[&str]) {
    for line in text.lines() {
        for f in forged {
            assert!(
                !line.trim_start_matches('\r').starts_with(f),
                "{what}: a forged line {line:?} in:\n{text}"
            );
        }
    }
}

#[test]
fn a_line_break_in_a_tool_name_stays_on_its_line_in_preview_and_eval_rank() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    std::fs::write(dir.join("forging.json"), FORGING_CATALOG).unwrap();
    std::fs::write(
        dir.join("one.jsonl"),
        "{\"id\":\"a\",\"intent\":\"weather in paris\",\"expected\":[\"web_search\"]}\n",
    )
    .unwrap();
    let (code, out, err) = run(ctx(dir).arg("eval").arg("rank").args([
        "--labels".as_ref(),
        dir.join("one.jsonl").as_os_str(),
        "--catalog".as_ref(),
        dir.join("forging.json").as_os_str(),
        "--misses".as_ref(),
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("miss ")).count(),
        1,
        "{out}"
    );
    no_forged_line("eval rank --misses", &out, &["miss b"]);
    assert!(out.contains("'evil\\nmiss b (test)"), "{out}");

    // The workspace's own catalog in preview: RANKING's lines and `kept:`.
    std::fs::write(dir.join("catalog.json"), FORGING_CATALOG).unwrap();
    let (code, out, err) = run(ctx(dir).args(["preview", "weather in paris", "--no-history"]));
    assert_eq!(code, Some(0), "{err}");
    no_forged_line("preview", &out, &["miss b"]);
    assert!(out.contains("'evil\\nmiss b (test)"), "{out}");
}

#[test]
fn a_line_break_in_a_file_name_a_reference_or_a_model_directory_stays_on_its_line() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    std::fs::write(dir.join("cat.json"), CATALOG).unwrap();
    let labels = dir.join("lab\x1b[31m\nFAKE.jsonl");
    std::fs::write(
        &labels,
        "{\"id\":\"a\",\"intent\":\"what is the weather in Paris\",\"expected\":[\"get_weather\"]}\n",
    )
    .unwrap();
    let (code, out, err) = run(ctx(dir).arg("eval").arg("rank").args([
        "--labels".as_ref(),
        labels.as_os_str(),
        "--catalog".as_ref(),
        dir.join("cat.json").as_os_str(),
    ]));
    assert_eq!(code, Some(0), "{err}");
    no_forged_line("eval rank's header", &out, &["FAKE"]);
    // A parse error naming the file.
    std::fs::write(&labels, "{not json\n").unwrap();
    let (code, _, err) = run(ctx(dir).arg("eval").arg("rank").args([
        "--labels".as_ref(),
        labels.as_os_str(),
        "--catalog".as_ref(),
        dir.join("cat.json").as_os_str(),
    ]));
    assert_eq!(code, Some(2), "{err}");
    no_forged_line("a labels parse error", &err, &["FAKE"]);
    // A file that is not there, named in the error of the one read path.
    let (code, _, err) = run(ctx(dir).arg("eval").arg("rank").args([
        "--labels".as_ref(),
        dir.join("none\nFAKE.jsonl").as_os_str(),
        "--catalog".as_ref(),
        dir.join("cat.json").as_os_str(),
    ]));
    assert_eq!(code, Some(2), "{err}");
    no_forged_line("a missing labels file", &err, &["FAKE"]);
    assert!(err.contains("none\\nFAKE.jsonl'"), "{err}");

    let (code, _, err) = run(ctx(dir).args(["cache", "get", "x\x1b[2J\nFAKE"]));
    assert_ne!(code, Some(0), "{err}");
    no_forged_line("cache get", &err, &["FAKE"]);

    let (code, _, err) = run(ctx(dir).args([
        "preview",
        "weather in paris",
        "--no-history",
        "--embedder",
        "local:/nonexist\x1b[31m\nFAKE",
    ]));
    assert_eq!(code, Some(2), "{err}");
    no_forged_line("--embedder local:", &err, &["FAKE"]);
}

/// The last note left two: a labels file's name in `eval rank --suite` became a set name
/// printed raw in the suite table, and the workspace's and stores' paths reached messages
/// through `Path::display`, which keeps a line feed. Every path now goes through
/// `ShownPath::shown`, and a set name through the name rule.
#[test]
fn a_line_break_in_a_suites_labels_file_or_the_workspaces_path_stays_on_its_line() {
    let home = tempfile::tempdir().unwrap();
    let suite = home.path().join("suite");
    let labels = suite.join("labels");
    std::fs::create_dir_all(&labels).unwrap();
    std::fs::write(
        labels.join("lab\nFAKE row.jsonl"),
        "{\"id\":\"a\",\"intent\":\"what is the weather in Paris\",\"expected\":[\"get_weather\"]}\n",
    )
    .unwrap();
    std::fs::write(labels.join("lab\nFAKE row-catalog.json"), CATALOG).unwrap();
    let (code, out, err) = run(ctx(home.path())
        .arg("eval")
        .arg("rank")
        .arg("--suite")
        .arg(&suite));
    assert_eq!(code, Some(0), "{err}");
    no_forged_line("the suite table", &out, &["FAKE"]);
    assert!(out.contains("lab\\nFAKE row"), "{out}");

    // A workspace whose directory's name holds a line feed: the notices naming its files.
    let ws = home.path().join("ws\nFAKE notice");
    std::fs::create_dir(&ws).unwrap();
    let (code, out, err) = run(ctx(&ws).args(["history", "--json"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("created history store"), "{err}");
    no_forged_line("the store's notice", &err, &["FAKE"]);
    serde_json::from_str::<serde_json::Value>(&out).unwrap();
}

/// The one way a path reaches text: no source file calls `Path::display` outside its
/// tests (it keeps a line feed in a file name; `ShownPath::shown` quotes it).
#[test]
fn no_source_file_shows_a_path_with_display() {
    let mut found = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // The code before the file's test module.
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap();
            for (i, line) in code.lines().enumerate() {
                if line.contains(".display()") {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "Path::display outside tests:\n{}",
        found.join("\n")
    );
}

fn semantic_workspace(server: &LlmServer) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), server.config(KEY_ENV)).unwrap();
    std::fs::write(home.path().join("cat.json"), CATALOG).unwrap();
    std::fs::write(
        home.path().join("l.jsonl"),
        "{\"id\":\"a\",\"intent\":\"what is the weather in Paris\",\"expected\":[\"get_weather\"]}\n",
    )
    .unwrap();
    home
}

fn eval_rank(home: &Path) -> assert_cmd::Command {
    let mut cmd = ctx(home);
    cmd.env(KEY_ENV, KEY).arg("eval").arg("rank").args([
        "--labels".as_ref(),
        home.join("l.jsonl").as_os_str(),
        "--catalog".as_ref(),
        home.join("cat.json").as_os_str(),
    ]);
    cmd
}

#[test]
fn an_embeddings_reply_quoted_in_an_error_stays_on_its_line() {
    let server = LlmServer::start();
    let home = semantic_workspace(&server);
    for model in ["embed-forged", "embed-forged-500"] {
        let embedder = format!("endpoint:test/{model}");
        let (code, _, err) = run(ctx(home.path()).env(KEY_ENV, KEY).args([
            "preview",
            "weather in paris",
            "--no-history",
            "--embedder",
            &embedder,
        ]));
        assert_eq!(code, Some(1), "{model}: {err}");
        no_forged_line(model, &err, &["ctxconsole: FAKE"]);
        assert!(err.contains("\\nctxconsole: FAKE"), "{model}: {err}");
        let (code, _, err) = run(eval_rank(home.path()).args(["--embedder", &embedder]));
        assert_eq!(code, Some(1), "{model}: {err}");
        no_forged_line(model, &err, &["ctxconsole: FAKE"]);
    }
}

#[test]
fn an_embedder_model_id_with_a_control_character_is_refused_before_anything_is_sent() {
    let server = LlmServer::start();
    let home = semantic_workspace(&server);
    let (code, _, err) =
        run(eval_rank(home.path()).args(["--embedder", "endpoint:test/a\x1b[31m\nFAKE"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("holds a control, bidi or invisible character"),
        "{err}"
    );
    no_forged_line("--embedder endpoint:", &err, &["FAKE"]);
    assert!(server.requests.lock().unwrap().is_empty());
    // The config's `[rank] semantic` is held to the same rule.
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "{}\n[rank]\nsemantic = \"endpoint:test/a\\u001b[31m\"\n",
            server.config(KEY_ENV)
        ),
    )
    .unwrap();
    let (code, _, err) = run(ctx(home.path()).env(KEY_ENV, KEY).args([
        "preview",
        "weather in paris",
        "--no-history",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("holds a control, bidi or invisible character"),
        "{err}"
    );
    assert!(server.requests.lock().unwrap().is_empty());
}

#[test]
fn eval_rank_takes_a_configured_key_out_of_a_labels_intent() {
    let home = common::keyed_workspace(KEY_ENV);
    let dir = home.path();
    std::fs::write(dir.join("cat.json"), CATALOG).unwrap();
    std::fs::write(
        dir.join("k.jsonl"),
        format!(
            "{{\"id\":\"a\",\"intent\":\"weather in paris {KEY}\",\"expected\":[\"book_hotel\"]}}\n"
        ),
    )
    .unwrap();
    for flags in [
        &["--misses"][..],
        &["--misses", "--json"],
        &["--per-question"],
    ] {
        let (code, out, err) = run(ctx(dir)
            .env(KEY_ENV, KEY)
            .arg("--workspace")
            .arg(dir)
            .arg("eval")
            .arg("rank")
            .args([
                "--labels".as_ref(),
                dir.join("k.jsonl").as_os_str(),
                "--catalog".as_ref(),
                dir.join("cat.json").as_os_str(),
            ])
            .args(flags));
        assert_eq!(code, Some(0), "{flags:?}: {err}");
        assert!(!out.contains(KEY), "{flags:?}: the key is printed:\n{out}");
        assert!(out.contains("[REDACTED]"), "{flags:?}:\n{out}");
    }
}
