//! Text from outside never drives the operator's terminal: a stored plan, a catalog and an
//! error quoting a file carry ESC/OSC/CSI/C1 sequences and bidi overrides; the CLI's text
//! output shows them escaped, its `--json` output keeps them exactly.

mod common;

use assert_cmd::Command;
use common::{ctx, json_of};
use serde_json::{Value, json};
use std::path::Path;

/// Window title, screen clear, clipboard write (OSC 52), an 8-bit CSI, a right-to-left override.
const HOSTILE: &[&str] = &[
    "\x1b]0;pwned\x07",
    "\x1b[2J",
    "\x1b]52;c;SGVsbG8=\x07",
    "\u{9b}31m",
    "\u{202e}txt.exe",
];

fn hostile(tag: &str) -> String {
    format!("{tag} {}", HOSTILE.concat())
}

/// What a terminal would act on: any control character but newline and tab, and bidi controls.
fn dangerous(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Run, and check neither stream carries anything a terminal would act on.
fn clean_run(cmd: &mut Command, what: &str) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        if let Some((at, c)) = text.char_indices().find(|&(_, c)| dangerous(c)) {
            panic!(
                "{what}: {name} has U+{:04X} at byte {at}: {:?}",
                c as u32,
                &text[at.saturating_sub(40)..(at + 40).min(text.len())]
            );
        }
    }
    (out.status.code(), stdout, stderr)
}

fn plan(id: &str) -> Value {
    json!({
        "id": id,
        "at": "2026-11-20T10:00:00Z",
        "caller": hostile("caller"),
        "model": "openai/gpt-4o",
        "intent": hostile("intent"),
        "steps": [
            {"order": 1, "tool": hostile("tool"), "args": {"q": hostile("arg")},
             "rationale": hostile("why")},
            {"order": 2, "tool": "builtin.page-digest", "rationale": hostile("why2")}
        ],
        "outcome": "failed",
        "failure_class": "no_plan",
        "finish_reason": "stop",
        "raw_response": hostile("raw"),
        "duration_ms": 1200
    })
}

/// A fresh store holding one hostile plan and one hostile execution. An import refuses
/// a caller or tool holding a control (the one name rule), so the names come in as another
/// writer of the store would put them (an older ctxconsole, a script): through the store's
/// own insert. Every view must still show them escaped.
fn store_with_hostile_plan(home: &Path) -> std::path::PathBuf {
    use ctxconsole::core::history::{ExecutionRecord, parse_plan_line};
    use ctxconsole::store::history::HistoryStore;
    let store = home.join("hostile.sqlite");
    let plans = home.join("plans.jsonl");
    std::fs::write(&plans, format!("{}\n", plan("evil-1"))).unwrap();
    let (code, _, err) = clean_run(
        ctx(home)
            .arg("--store")
            .arg(&store)
            .args(["import", "plans"])
            .arg(&plans),
        "import plans",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("field 'caller'"), "{err}");
    let mut clean = plan("evil-1");
    clean["caller"] = json!("caller");
    clean["steps"][0]["tool"] = json!("tool");
    let mut record = parse_plan_line("test", 1, &clean.to_string()).unwrap();
    record.caller = hostile("caller");
    record.steps[0].tool = hostile("tool");
    let execution = ExecutionRecord {
        id: "e-evil".into(),
        at: record.at + 60,
        at_nanos: 0,
        caller: hostile("caller"),
        session: None,
        plan_id: Some("evil-1".into()),
        tool: hostile("ran"),
        ok: false,
    };
    HistoryStore::open(&store)
        .unwrap()
        .insert_records(&[record], &[execution], &Default::default())
        .unwrap();
    store
}

#[test]
fn stored_plan_text_is_shown_escaped_in_every_history_view() {
    let home = tempfile::tempdir().unwrap();
    let store = store_with_hostile_plan(home.path());
    let views: &[&[&str]] = &[
        &["history", "--plans"],
        &["history", "--groups"],
        &["history", "--drift"],
        &["history", "--models"],
        &["history", "--plans", "--caller", &hostile("caller")],
        &["history", "show", "evil-1"],
        &["replay", "evil-1", "--offline"],
        &["replay", "--failed", "--offline"],
    ];
    let mut shown = String::new();
    for args in views {
        let (code, out, err) = clean_run(
            ctx(home.path()).arg("--store").arg(&store).args(*args),
            &format!("{args:?}"),
        );
        assert_eq!(code, Some(0), "{args:?}: {err}");
        shown.push_str(&out);
    }
    // The operator sees what was there, escaped.
    assert!(shown.contains("intent \\x1b]0;pwned\\x07"), "{shown}");
    assert!(shown.contains("\\x1b]52;c;SGVsbG8=\\x07"), "{shown}");
    assert!(shown.contains("\\u{9b}31m"), "{shown}");
    assert!(shown.contains("\\u{202e}txt.exe"), "{shown}");
}

/// Run a `--json` command: clean for a terminal (serde_json leaves C1 and bidi controls raw
/// inside strings; the sink writes them as `\u` escapes) and parsed.
fn clean_json(cmd: &mut Command, what: &str) -> String {
    let (code, out, err) = clean_run(cmd, what);
    assert_eq!(code, Some(0), "{what}: {err}");
    out
}

#[test]
fn json_output_keeps_the_original_strings_exactly() {
    let home = tempfile::tempdir().unwrap();
    let store = store_with_hostile_plan(home.path());
    let run = |args: &[&str]| {
        clean_json(
            ctx(home.path()).arg("--store").arg(&store).args(args),
            &format!("{args:?}"),
        )
    };
    let d: Value = serde_json::from_str(&run(&["history", "show", "evil-1", "--json"])).unwrap();
    assert_eq!(d["intent"], hostile("intent"));
    assert_eq!(d["raw_response"], hostile("raw"));
    assert_eq!(d["caller"], hostile("caller"));
    let listed: Value = serde_json::from_str(&run(&["history", "--plans", "--json"])).unwrap();
    let plans = listed.to_string();
    assert!(
        plans.contains(&json!(hostile("intent")).to_string()),
        "{plans}"
    );
    // JSON Lines export keeps every string as it was stored.
    let exported: Value = run(&["history", "export"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|p| p["id"] == "evil-1")
        .unwrap();
    assert_eq!(exported["intent"], hostile("intent"));
    assert_eq!(exported["steps"][0]["tool"], hostile("tool"));
    // Tester 23 F8: `--out FILE` wrote the bidi override raw (`cat` showed reordered text)
    // while `--out -` wrote `\u202e`; a file holds the same bytes as standard output.
    let to_stdout = run(&["history", "export", "--out", "-"]);
    let file = home.path().join("export.jsonl");
    let (code, _, err) = clean_run(
        ctx(home.path())
            .arg("--store")
            .arg(&store)
            .args(["history", "export", "--out"])
            .arg(&file),
        "export --out FILE",
    );
    assert_eq!(code, Some(0), "{err}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(!written.chars().any(dangerous), "{written}");
    assert!(written.contains("\\u202e"), "{written}");
    assert_eq!(written, to_stdout);
}

#[test]
fn catalog_names_and_descriptions_are_shown_escaped() {
    let home = tempfile::tempdir().unwrap();
    let catalog = home.path().join("evil-catalog.json");
    let tools: Vec<Value> = (0..40)
        .map(|i| {
            json!({"name": format!("tool{i}{}", HOSTILE.concat()),
                   "description": format!("{} {}", hostile("describes"), "padding ".repeat(60)),
                   "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
        })
        .collect();
    std::fs::write(&catalog, json!({"tools": tools}).to_string()).unwrap();
    let mut shown = String::new();
    for tier in ["A", "C"] {
        let (code, out, err) = clean_run(
            ctx(home.path())
                .args(["compact", "--tier", tier, "--show-catalog", "--catalog"])
                .arg(&catalog),
            &format!("compact tier {tier}"),
        );
        assert_eq!(code, Some(0), "{err}");
        // Tester 19 F4: the catalog shown is the JSON sent, escaped as JSON: each entry's
        // line parses, and tool3's name reads back whole.
        let names: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with("{\"name\""))
            .filter_map(|l| serde_json::from_str::<Value>(l.trim_end_matches(',')).ok())
            .filter_map(|v| v["name"].as_str().map(str::to_owned))
            .collect();
        assert!(
            names.contains(&format!("tool3{}", HOSTILE.concat())),
            "tier {tier}: {names:?}\n{out}"
        );
        shown.push_str(&out);
    }
    // The same catalog as the workspace's: the preview ranks and lists its names.
    std::fs::copy(&catalog, home.path().join("catalog.json")).unwrap();
    let (code, out, err) = clean_run(
        ctx(home.path()).args(["preview", "use tool3 to describe things"]),
        "preview",
    );
    assert_eq!(code, Some(0), "{err}");
    shown.push_str(&out);
    assert!(shown.contains("tool3\\x1b]0;pwned\\x07"), "{shown}");
    assert!(shown.contains("\\u{9b}31m\\u{202e}"), "{shown}");
    let v = json_of(
        ctx(home.path())
            .args(["compact", "--tier", "A", "--json", "--catalog"])
            .arg(&catalog),
    );
    assert!(
        v.to_string()
            .contains(&json!(format!("tool3{}", HOSTILE.concat())).to_string()),
        "{v}"
    );
}

#[test]
fn errors_quoting_file_content_are_shown_escaped() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("s.sqlite");
    // A value the importer rejects, quoted back in the error.
    let mut bad = plan("evil-2");
    bad["outcome"] = json!(hostile("outcome"));
    let file = home.path().join(format!("bad{}.jsonl", "\x1b]0;name\x07"));
    std::fs::write(&file, format!("{bad}\n")).unwrap();
    let (code, _, err) = clean_run(
        ctx(home.path())
            .arg("--store")
            .arg(&store)
            .args(["import", "plans"])
            .arg(&file),
        "import of a bad plan",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\\x1b"), "{err}");
    // A budgets file with an escape in a key, and a missing plan id with an escape.
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"x\"\n\"\\u001b]0;pwned\\u0007\" = 3\n",
    )
    .unwrap();
    clean_run(
        ctx(home.path()).args(["budgets"]),
        "budgets with a hostile key",
    );
    clean_run(
        ctx(home.path())
            .arg("--store")
            .arg(&store)
            .args(["history", "show", "\x1b]0;pwned\x07"]),
        "history show of a hostile id",
    );
}

#[test]
fn a_cached_paste_reads_back_exactly_into_a_pipe() {
    let home = tempfile::tempdir().unwrap();
    // Big enough to be briefed and cached, with escapes and CRLF lines in it.
    let mut paste = String::new();
    for i in 0..40_000 {
        paste.push_str(&format!("line {i} {}\r\n", HOSTILE.concat()));
    }
    let (code, out, err) = clean_run(
        ctx(home.path())
            .args(["preview", "-", "--json"])
            .write_stdin(paste.clone()),
        "preview of a hostile paste",
    );
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let r = v["gate"]["briefing"]["cache_ref"].as_str().unwrap();
    let whole = ctx(home.path()).args(["cache", "get", r]).output().unwrap();
    assert!(whole.status.success());
    assert_eq!(whole.stdout, paste.as_bytes());
    // The text preview shows the briefing's lines escaped.
    let (code, out, err) = clean_run(
        ctx(home.path())
            .args(["preview", "-"])
            .write_stdin(paste.clone()),
        "text preview of a hostile paste",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\\x1b]0;pwned\\x07"), "{out}");
}

mod console {
    //! The console: the same hostile plan, catalog and budget row drawn through every pane.

    use super::*;
    use ctxconsole::tui::action::Action;
    use ctxconsole::tui::app::{State, update};
    use ctxconsole::tui::keymap::Keymap;
    use ctxconsole::tui::theme::Theme;
    use ctxconsole::tui::{EffectContext, run_effect_now, start, ui};
    use ctxconsole::workspace::{Workspace, WorkspaceOptions};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn apply(ctx: &EffectContext, state: &mut State, actions: impl IntoIterator<Item = Action>) {
        for action in actions {
            let mut queue = vec![action];
            while let Some(a) = queue.pop() {
                for effect in update(state, a) {
                    queue.push(run_effect_now(ctx, effect));
                }
            }
        }
    }

    /// The screen as text, after checking no cell holds anything a terminal would act on.
    fn screen(state: &State, what: &str) -> String {
        let mut terminal = Terminal::new(TestBackend::new(160, 44)).unwrap();
        terminal
            .draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
            .unwrap();
        let buffer = terminal.backend().buffer();
        for (i, cell) in buffer.content.iter().enumerate() {
            assert!(
                !cell.symbol().contains(dangerous),
                "{what}: cell {i} holds {:?}",
                cell.symbol()
            );
        }
        let text = terminal.backend().to_string();
        // `�` is the frame's last guard firing: some pane drew outside text unescaped.
        assert!(
            !text.contains('\u{fffd}'),
            "{what}: a cell was neutralised:\n{text}"
        );
        text
    }

    #[test]
    fn every_pane_shows_outside_text_escaped_and_no_cell_holds_a_control() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path();
        // The catalog: hostile names and descriptions, enough of them for Tier C to cut.
        let tools: Vec<Value> = (0..40)
            .map(|i| {
                json!({"name": format!("tool{i}{}", HOSTILE.concat()),
                       "description": format!("{} {}", hostile("describes"), "padding ".repeat(60)),
                       "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
            })
            .collect();
        std::fs::write(
            dir.join("catalog.json"),
            json!({"tools": tools}).to_string(),
        )
        .unwrap();
        // A budget row with a hostile id, Tier C. Every file refuses such an id (budgets.toml,
        // and a registry skips it: outside tester F11), so it comes in as another writer of
        // the table would put it, below, after the workspace is opened.
        // The plan, newest of all, in the workspace's own store.
        // Hostile names come in as another writer of the store would put them (an import
        // refuses them); free text (intent, rationale, raw answer) through an import.
        {
            use ctxconsole::core::history::parse_plan_line;
            use ctxconsole::store::history::HistoryStore;
            let mut p = plan("evil-1");
            p["at"] = json!("2027-01-01T00:00:00Z");
            p["caller"] = json!("caller");
            p["steps"][0]["tool"] = json!("tool");
            let mut record = parse_plan_line("test", 1, &p.to_string()).unwrap();
            record.caller = hostile("caller");
            record.steps[0].tool = hostile("tool");
            let (code, _, err) = clean_run(ctx(dir).args(["history", "--limit", "0"]), "seed");
            assert_eq!(code, Some(0), "{err}");
            HistoryStore::open(&dir.join("history.sqlite"))
                .unwrap()
                .insert_records(&[record], &[], &Default::default())
                .unwrap();
        }

        let mut ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.into()),
            registry: None,
        })
        .unwrap();
        let mut evil = ws.budgets.fallback().clone();
        evil.id = format!("evil/{}:free", HOSTILE.concat());
        evil.match_kind = ctxconsole::core::budget::MatchKind::Exact;
        evil.layer = ctxconsole::core::budget::Layer::Registry;
        ws.budgets = ctxconsole::core::budget::BudgetTable::layered([
            ws.budgets.rows().to_vec(),
            vec![evil],
        ]);
        let (effects, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
        let first = state.replan();
        for e in first {
            let a = run_effect_now(&effects, e);
            update(&mut state, a);
        }
        let mut screens = Vec::new();
        // Budgets and Catalog on the hostile row (filtered to it), compacted and in full.
        apply(&effects, &mut state, [Action::Filter]);
        apply(&effects, &mut state, "evil".chars().map(Action::Char));
        apply(&effects, &mut state, [Action::Confirm]);
        screens.push(screen(&state, "budgets and catalog"));
        apply(&effects, &mut state, [Action::ToggleFullView]);
        screens.push(screen(&state, "full catalog"));
        // The Prompt pane: a paste with escapes, previewed against the hostile catalog.
        apply(
            &effects,
            &mut state,
            [
                Action::FocusPrompt,
                Action::Paste(format!("use tool3 {}\nplease", HOSTILE.concat())),
            ],
        );
        screens.push(screen(&state, "prompt and preview"));
        // History: the plan listed, opened, replayed offline.
        apply(&effects, &mut state, [Action::Back, Action::FocusHistory]);
        screens.push(screen(&state, "history lists"));
        apply(&effects, &mut state, [Action::Open]);
        let opened = screen(&state, "the plan opened");
        assert!(opened.contains("Plan evil-1"), "{opened}");
        screens.push(opened);
        apply(&effects, &mut state, [Action::Replay, Action::Open]);
        screens.push(screen(&state, "its offline replay"));

        let all = screens.join("\n");
        for visible in [
            "evil/\\x1b]0;pwned\\x07",
            "tool3\\x1b]0;pwned\\x07",
            "intent \\x1b]0;pwned\\x07",
            "raw \\x1b]0;pwned\\x07",
            "\\u{9b}31m",
            "\\u{202e}txt.exe",
        ] {
            assert!(all.contains(visible), "{visible} not shown:\n{all}");
        }
        for (n, s) in screens.iter().enumerate() {
            assert!(s.contains("\\x1b"), "screen {n} shows no escape:\n{s}");
        }
    }
}
